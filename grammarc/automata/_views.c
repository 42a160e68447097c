/* grammarc.automata._core, part 2: read-only views of a finished DFA for Python.
 *
 * runs        - a DFA's transitions as byte runs per state (grammarc.automata.dfa.DFA._runs),
 *               as lists or as arrays (run_arrays: DFA._run_arrays);
 * suffix_code - the canonical code of the language accepted from one state
 *               (grammarc.automata.suffix.suffix_key);
 * byte_classes - a byte table's columns merged into classes (grammarc.automata.dfa.byte_classes);
 * literal     - the table and canonical code of one byte string's DFA (operations.literal);
 * walk        - a DFA's walk over some bytes (grammarc.automata.dfa.DFA.walk).
 *
 * Their Python oracles live in tests/ (tests/test_automata_core.py, tests/test_suffix_scans.py).
 */

#include "_core.h"
#include "_bounds.h"
#include <stddef.h> /* offsetof */
#include <string.h> /* memset */

/* An int32 [n, 256] byte table: its number of rows, or -1 with an exception set and the
 * buffer released (`who` names the function in the error). */
static Py_ssize_t get_byte_table(PyObject *obj, Py_buffer *view, const char *who)
{
    if (get_buf(obj, view, 4, 0, "trans") < 0) return -1;
    Py_ssize_t n = buf_len(view) / 256;
    if (buf_len(view) != n * 256) {
        PyErr_Format(PyExc_ValueError, "%s: the table is not [n, 256]", who);
        PyBuffer_Release(view);
        return -1;
    }
    return n;
}

/* ------------------------------------------------------------------- runs */

/* One state's runs, read from a list of (lo, hi, target) tuples (DFA._runs) or from a row
 * of an int32 [n, 256] byte table; -1 with an exception set when they are malformed. */
typedef struct { unsigned char lo[256], hi[256]; i32 target[256]; int m; } Runs;

static int runs_of_row(const i32 *row, Py_ssize_t n, Runs *r, const char *who)
{
    r->m = 0;
    for (int b = 0; b < 256;) {
        i32 target = row[b];
        int lo = b;
        b = run_end(row, b);
        if (target < 0) continue;
        if (target >= n) {
            PyErr_Format(PyExc_ValueError, "%s: a target out of range", who);
            return -1;
        }
        r->lo[r->m] = (unsigned char)lo; r->hi[r->m] = (unsigned char)(b - 1); r->target[r->m++] = target;
    }
    return 0;
}

/* Per state, the maximal byte runs (lo, hi, target) of a byte table int32 [n, 256] that
 * share a live target: the edge lists an NFA embeds a DFA with (nfa._NFA.embed). */
PyObject *py_runs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans, *out = NULL;
    Py_buffer trans = {0};
    Runs *r = NULL;
    if (!PyArg_ParseTuple(args, "O", &o_trans))
        return NULL;
    Py_ssize_t n = get_byte_table(o_trans, &trans, "runs");
    if (n < 0) return NULL;
    if (!(r = malloc(sizeof *r))) { PyErr_NoMemory(); goto done; }
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        if (runs_of_row((const i32 *)trans.buf + q * 256, n, r, "runs") < 0) { Py_CLEAR(out); goto done; }
        PyObject *row = PyList_New(r->m);
        if (!row) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, q, row);
        for (int j = 0; j < r->m; j++) {
            PyObject *run = Py_BuildValue("(iii)", (int)r->lo[j], (int)r->hi[j], (int)r->target[j]);
            if (!run) { Py_CLEAR(out); goto done; }
            PyList_SET_ITEM(row, j, run);
        }
    }
done:
    free(r);
    PyBuffer_Release(&trans);
    return out;
}

/* The same runs as arrays: (ptr, runs), bytes of int64 [n + 1] and int32 [m, 3] (lo, hi,
 * target), state q's runs runs[ptr[q]:ptr[q + 1]] (DFA._run_arrays: what nfa._NFA.embed
 * gives determinize, read there without a Python object per run). */
PyObject *py_run_arrays(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans, *out = NULL;
    Py_buffer trans = {0};
    Runs *r = NULL;
    Vec runs = {0};
    i64 *ptr = NULL;
    if (!PyArg_ParseTuple(args, "O", &o_trans))
        return NULL;
    Py_ssize_t n = get_byte_table(o_trans, &trans, "run_arrays");
    if (n < 0) return NULL;
    if (!(r = malloc(sizeof *r)) || !(ptr = malloc(((size_t)n + 1) * sizeof *ptr))) { PyErr_NoMemory(); goto done; }
    ptr[0] = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        if (runs_of_row((const i32 *)trans.buf + q * 256, n, r, "run_arrays") < 0) goto done;
        if (vec_reserve(&runs, 3 * (size_t)r->m) < 0) { PyErr_NoMemory(); goto done; }
        for (int j = 0; j < r->m; j++) {
            runs.v[runs.n++] = r->lo[j]; runs.v[runs.n++] = r->hi[j]; runs.v[runs.n++] = r->target[j];
        }
        ptr[q + 1] = (i64)runs.n / 3;
    }
    out = Py_BuildValue("(y#y#)", (const char *)ptr, (Py_ssize_t)(n + 1) * 8, runs.v ? (const char *)runs.v : "",
                        (Py_ssize_t)runs.n * 4);
done:
    free(r); free(ptr); free(runs.v);
    PyBuffer_Release(&trans);
    return out;
}

/* ------------------------------------------------------------ suffix_code */

static int put_bytes(unsigned char **buf, Py_ssize_t *len, Py_ssize_t *cap, const void *src, Py_ssize_t n)
{
    if (*len + n > *cap) {
        Py_ssize_t grown = *cap * 2 > *len + n ? *cap * 2 : *len + n;
        unsigned char *bigger = realloc(*buf, grown);
        if (!bigger) { PyErr_NoMemory(); return -1; }
        *buf = bigger; *cap = grown;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    return 0;
}


static int runs_of_list(PyObject *row, Py_ssize_t n, Runs *r)
{
    if (!PyList_Check(row) || PyList_GET_SIZE(row) > 256) {
        PyErr_SetString(PyExc_ValueError, "suffix_code: a state's runs are not a list of at most 256");
        return -1;
    }
    r->m = (int)PyList_GET_SIZE(row);
    for (int j = 0; j < r->m; j++) {
        PyObject *run = PyList_GET_ITEM(row, j);
        if (!PyTuple_Check(run) || PyTuple_GET_SIZE(run) != 3) {
            PyErr_SetString(PyExc_ValueError, "suffix_code: a run is not (lo, hi, target)");
            return -1;
        }
        long lo = PyLong_AsLong(PyTuple_GET_ITEM(run, 0));
        long hi = PyLong_AsLong(PyTuple_GET_ITEM(run, 1));
        long target = PyLong_AsLong(PyTuple_GET_ITEM(run, 2));
        if (PyErr_Occurred()) return -1;
        if (lo < 0 || hi > 255 || lo > hi || target < 0 || target >= n) {
            PyErr_SetString(PyExc_ValueError, "suffix_code: a run out of range");
            return -1;
        }
        r->lo[j] = (unsigned char)lo; r->hi[j] = (unsigned char)hi; r->target[j] = (i32)target;
    }
    return 0;
}

/* A table row's runs read at the first byte of each of the DFA's byte runs (`starts`, k of
 * them, ascending from 0: DFA.byte_runs, inside which every state treats all bytes alike),
 * neighbouring ones with one target joined: runs_of_row's runs, in k reads, not 256. */
static int runs_of_row_by(const i32 *row, const unsigned char *starts, int k, Py_ssize_t n, Runs *r)
{
    r->m = 0;
    for (int j = 0; j < k;) {
        i32 target = row[starts[j]];
        int lo = starts[j];
        while (++j < k && row[starts[j]] == target) {}
        if (target < 0) continue;
        if (target >= n) {
            PyErr_SetString(PyExc_ValueError, "suffix_code: a target out of range");
            return -1;
        }
        r->lo[r->m] = (unsigned char)lo; r->hi[r->m] = (unsigned char)((j < k ? starts[j] : 256) - 1);
        r->target[r->m++] = target;
    }
    return 0;
}

/* The canonical code of the sub-automaton reachable from `state`, given a DFA's byte runs
 * (DFA._runs: per state a list of (lo, hi, target)) or its int32 [n, 256] byte table, and its
 * accept flags: states numbered breadth first, runs in byte order; per state its flag, its
 * run count (2 bytes) and each run as lo, hi (1 byte each) and the target's number (4 bytes,
 * little-endian). Both storages of one DFA give the same code. With a table, `byte_runs`
 * (DFA.byte_runs: 256 run numbers, trusted to be runs every state treats alike, or None)
 * lets each row be read once per run. */
PyObject *py_suffix_code(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *runs, *o_acc, *o_byte_runs = Py_None, *out = NULL;
    Py_ssize_t state;
    Py_buffer acc = {0}, table = {0}, byte_runs = {0};
    i32 *number = NULL, *order = NULL;
    unsigned char *buf = NULL, starts[256];
    int k = 0;
    Runs *r = NULL;
    Py_ssize_t len = 0, cap = 256;
    if (!PyArg_ParseTuple(args, "OOn|O", &runs, &o_acc, &state, &o_byte_runs))
        return NULL;
    int listed = PyList_Check(runs);
    Py_ssize_t n = listed ? PyList_GET_SIZE(runs) : get_byte_table(runs, &table, "suffix_code");
    if (n < 0) return NULL;
    if (get_buf(o_acc, &acc, 1, 0, "accept") < 0) goto done;
    if (buf_len(&acc) != n || state < 0 || state >= n) {
        PyErr_SetString(PyExc_ValueError, "suffix_code: state or accept out of range");
        goto done;
    }
    if (o_byte_runs != Py_None) {
        if (get_buf(o_byte_runs, &byte_runs, 1, 0, "byte_runs") < 0) goto done;
        if (buf_len(&byte_runs) != 256 || listed) {
            PyErr_SetString(PyExc_ValueError, "suffix_code: byte runs are 256 bytes, beside a table");
            goto done;
        }
        const unsigned char *b = byte_runs.buf;
        for (int v = 0; v < 256; v++)
            if (v == 0 || b[v] != b[v - 1]) starts[k++] = (unsigned char)v;
    }
    number = malloc(n * sizeof *number);
    order = malloc(n * sizeof *order);
    buf = malloc(cap);
    r = malloc(sizeof *r);
    if (!number || !order || !buf || !r) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) number[i] = -1;
    const unsigned char *accept = acc.buf;
    Py_ssize_t count = 1;
    order[0] = (i32)state; number[state] = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const i32 *row = listed ? NULL : (const i32 *)table.buf + (size_t)order[i] * 256;
        int bad = listed ? runs_of_list(PyList_GET_ITEM(runs, order[i]), n, r)
                         : k ? runs_of_row_by(row, starts, k, n, r) : runs_of_row(row, n, r, "suffix_code");
        if (bad) goto done;
        unsigned char head[3], item[6];
        code_head(head, accept[order[i]], r->m);
        if (put_bytes(&buf, &len, &cap, head, 3) < 0) goto done;
        for (int j = 0; j < r->m; j++) {
            i32 target = r->target[j];
            if (number[target] < 0) { number[target] = (i32)count; order[count++] = target; }
            code_run(item, r->lo[j], r->hi[j], number[target]);
            if (put_bytes(&buf, &len, &cap, item, 6) < 0) goto done;
        }
    }
    out = PyBytes_FromStringAndSize((const char *)buf, len);
done:
    free(number); free(order); free(buf); free(r);
    if (table.obj) PyBuffer_Release(&table);
    if (acc.obj) PyBuffer_Release(&acc);
    if (byte_runs.obj) PyBuffer_Release(&byte_runs);
    return out;
}

/* ----------------------------------------------------------- byte_classes */

/* starts[b]: whether byte b starts a run of neighbouring bytes that every state of the
 * int32 [n, 256] table `t` treats alike (same target, or none); starts[0] is set. */
static void run_starts(const i32 *t, Py_ssize_t n, unsigned char starts[256])
{
    memset(starts, 0, 256);
    starts[0] = 1;
    for (Py_ssize_t q = 0; q < n; q++) {
        const i32 *row = t + q * 256;
        for (int b = 1; b < 256; b++) starts[b] |= row[b] != row[b - 1];
    }
}

/* DFA.byte_runs of a dense table: 256 run numbers, ascending from 0, a new one at each byte
 * some state treats apart from the byte before. */
PyObject *py_byte_runs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans;
    Py_buffer trans = {0};
    if (!PyArg_ParseTuple(args, "O", &o_trans))
        return NULL;
    Py_ssize_t n = get_byte_table(o_trans, &trans, "byte_runs");
    if (n < 0) return NULL;
    unsigned char starts[256], runs[256];
    Py_BEGIN_ALLOW_THREADS
    run_starts(trans.buf, n, starts);
    runs[0] = 0;
    for (int b = 1; b < 256; b++) runs[b] = (unsigned char)(runs[b - 1] + starts[b]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&trans);
    return PyBytes_FromStringAndSize((const char *)runs, 256);
}

/* An int32 [n, 256] byte table as (table int32 [n, k], b2c uint8 [256]) with
 * table[:, b2c] == trans: bytes whose columns are equal share a class, classes numbered by
 * their first byte. Neighbouring bytes usually have equal columns, so only the first column
 * of each run of equal ones is hashed and compared. */
PyObject *py_byte_classes(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans, *table = NULL, *out = NULL;
    Py_buffer trans = {0};
    if (!PyArg_ParseTuple(args, "O", &o_trans))
        return NULL;
    Py_ssize_t n = get_byte_table(o_trans, &trans, "byte_classes");
    if (n < 0) return NULL;
    const i32 *t = trans.buf;
    unsigned char starts[256], b2c[256];
    int run_start[256], run_class[256], first_run[256], k = 0, m = 0;
    uint64_t hash[256];
    Py_BEGIN_ALLOW_THREADS
    run_starts(t, n, starts);
    for (int b = 0; b < 256; b++)
        if (starts[b]) run_start[m++] = b;
    for (int i = 0; i < m; i++) {  /* a run joins the first earlier class with its column */
        const i32 *col = t + run_start[i];
        uint64_t h = 1469598103934665603ull;
        for (Py_ssize_t q = 0; q < n; q++) h = (h ^ (uint32_t)col[q * 256]) * 1099511628211ull;
        hash[i] = h;
        run_class[i] = -1;
        for (int c = 0; c < k && run_class[i] < 0; c++) {
            int j = first_run[c];
            if (hash[j] != h) continue;
            const i32 *other = t + run_start[j];
            Py_ssize_t q = 0;
            while (q < n && other[q * 256] == col[q * 256]) q++;
            if (q == n) run_class[i] = c;
        }
        if (run_class[i] < 0) { first_run[k] = i; run_class[i] = k++; }
    }
    for (int i = 0, b = 0; i < m; i++)
        for (int end = i + 1 < m ? run_start[i + 1] : 256; b < end; b++) b2c[b] = (unsigned char)run_class[i];
    Py_END_ALLOW_THREADS
    table = PyBytes_FromStringAndSize(NULL, n * k * 4);
    if (!table) goto done;
    i32 *dst = (i32 *)PyBytes_AS_STRING(table);
    for (Py_ssize_t q = 0; q < n; q++)
        for (int c = 0; c < k; c++) dst[q * k + c] = t[q * 256 + run_start[first_run[c]]];
    out = Py_BuildValue("(Oy#i)", table, (const char *)b2c, (Py_ssize_t)256, k);
done:
    Py_XDECREF(table);
    PyBuffer_Release(&trans);
    return out;
}

/* ----------------------------------------------------------------- Walker */

/* Walker(trans, base, check, next, accept): a DFA's tables held, and checked once: a dense
 * int32 [n, 256] table, or None and its comb table (base int64 [n], check and next int32:
 * next[base[s] + b] is the target when check[...] == s), every target below n and every
 * comb row inside the arrays. walker(state, data, start) reads data[start:] from `state`:
 * (the state after the bytes, or -1 once one has no transition; the tuple of the positions
 * p, start < p <= len(data), after which the state accepts). The engine reads every token
 * so, once per lexer item (`DFA.walk`): parsing and checking five arrays per call cost
 * more than most walks, which end at the first byte. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc call;
    Py_buffer trans, base, check, next, accept;
    const i32 *dense, *chk, *nxt;
    const i64 *bases;
    const uint8_t *acc;
    Py_ssize_t n;
} Walker;

static void walker_dealloc(Walker *self)
{
    Py_buffer *views[] = {&self->trans, &self->base, &self->check, &self->next, &self->accept};
    for (size_t i = 0; i < sizeof views / sizeof *views; i++)
        if (views[i]->obj) PyBuffer_Release(views[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *walker_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Walker *w = (Walker *)callable;
    if (PyVectorcall_NARGS(nargsf) != 3 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a walker takes (state, data, start)");
        return NULL;
    }
    Py_ssize_t state = PyLong_AsSsize_t(args[0]), start = PyLong_AsSsize_t(args[2]);
    if ((state == -1 || start == -1) && PyErr_Occurred()) return NULL;
    Py_buffer data;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    Py_ssize_t len = data.len, count = 0, cap = 0, *ends = NULL;
    if (state < 0 || state >= w->n || start < 0 || start > len) {
        PyErr_SetString(PyExc_ValueError, "walk: the state or the start is out of range");
        goto done;
    }
    const unsigned char *bytes = data.buf;
    i64 s = state;
    for (Py_ssize_t i = start; i < len && s >= 0; i++) {
        if (w->dense) {
            s = w->dense[s * 256 + bytes[i]];
        } else {
            i64 cell = w->bases[s] + bytes[i];
            s = w->chk[cell] == s ? w->nxt[cell] : -1;
        }
        if (s >= 0 && w->acc[s]) {
            if (count == cap) {
                Py_ssize_t *grown = realloc(ends, (size_t)(cap = cap ? 2 * cap : 8) * sizeof *ends);
                if (!grown) { PyErr_NoMemory(); goto done; }
                ends = grown;
            }
            ends[count++] = i + 1;
        }
    }
    PyObject *positions = PyTuple_New(count);
    if (!positions) goto done;
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *p = PyLong_FromSsize_t(ends[j]);
        if (!p) { Py_DECREF(positions); goto done; }
        PyTuple_SET_ITEM(positions, j, p);
    }
    PyObject *last = PyLong_FromSsize_t((Py_ssize_t)s); /* a pair without a format parsed: a call per item and token */
    out = last ? PyTuple_Pack(2, last, positions) : NULL;
    Py_XDECREF(last);
    Py_DECREF(positions);
done:
    free(ends);
    PyBuffer_Release(&data);
    return out;
}

static PyObject *walker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *o_trans, *o_base, *o_check, *o_next, *o_accept;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Walker takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOO", &o_trans, &o_base, &o_check, &o_next, &o_accept)) return NULL;
    Walker *w = (Walker *)type->tp_alloc(type, 0);
    if (!w) return NULL;
    w->call = walker_call;
    if (get_buf(o_accept, &w->accept, 1, 0, "accept") < 0) goto fail;
    w->n = buf_len(&w->accept);
    w->acc = w->accept.buf;
    Py_ssize_t cells = 0;
    if (o_trans != Py_None) {
        if (get_buf(o_trans, &w->trans, 4, 0, "trans") < 0) goto fail;
        if (buf_len(&w->trans) != w->n * 256) {
            PyErr_SetString(PyExc_ValueError, "walk: the table is not [len(accept), 256]");
            goto fail;
        }
        w->dense = w->trans.buf;
    } else {
        if (get_buf(o_base, &w->base, 8, 0, "base") < 0 || get_buf(o_check, &w->check, 4, 0, "check") < 0 ||
            get_buf(o_next, &w->next, 4, 0, "next") < 0)
            goto fail;
        cells = buf_len(&w->check);
        if (buf_len(&w->base) != w->n || buf_len(&w->next) != cells) {
            PyErr_SetString(PyExc_ValueError, "walk: inconsistent array sizes");
            goto fail;
        }
        w->bases = w->base.buf, w->chk = w->check.buf, w->nxt = w->next.buf;
    }
    if (!table_in_bounds(w->dense, w->bases, w->nxt, w->n, cells)) {
        PyErr_SetString(PyExc_ValueError, "walk: a target or a comb row is out of range");
        goto fail;
    }
    return (PyObject *)w;
fail:
    Py_DECREF(w);
    return NULL;
}

PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammarc.automata._core.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A DFA's tables, checked once; called as walker(state, data, start) -> (state, ends).",
    .tp_new = walker_new,
    .tp_dealloc = (destructor)walker_dealloc,
    .tp_vectorcall_offset = offsetof(Walker, call),
    .tp_call = PyVectorcall_Call,
};

/* literal(data) -> (trans, accept, code): the DFA of exactly the bytes `data`, n of them: a
 * chain of n + 1 states, state i reading data[i] to state i + 1 and only the last accepting,
 * which is minimal and canonically numbered as it stands; as bytes of int32 [n + 1, 256] and
 * bool [n + 1], and its canonical code (as suffix_code would read it off the table), written
 * on the way. grammarc.automata.operations.literal's dense tables: through numpy and
 * suffix_code, a 20-byte JSON property name cost ~100k instructions. */
PyObject *py_literal(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    Py_ssize_t n = data.len;
    PyObject *trans = NULL, *acc = NULL, *code = NULL, *result = NULL;
    if (n >= INT32_MAX || (size_t)n >= SIZE_MAX / (256 * sizeof(i32)) - 1) {
        PyErr_SetString(PyExc_ValueError, "literal: too long");
        goto done;
    }
    /* fresh objects, filled here (never a shared one-byte singleton) */
    trans = PyBytes_FromStringAndSize(NULL, (n + 1) * 256 * (Py_ssize_t)sizeof(i32));
    acc = PyBytes_FromStringAndSize(NULL, n + 1);
    code = PyBytes_FromStringAndSize(NULL, 9 * n + 3);
    if (!trans || !acc || !code) goto done;
    i32 *t = (i32 *)PyBytes_AS_STRING(trans);
    char *a = PyBytes_AS_STRING(acc);
    unsigned char *c = (unsigned char *)PyBytes_AS_STRING(code);
    const unsigned char *d = data.buf;
    memset(t, 0xff, (size_t)(n + 1) * 256 * sizeof(i32));  /* -1: no transition */
    for (Py_ssize_t i = 0; i < n; i++) {
        t[i * 256 + d[i]] = (i32)(i + 1);
        a[i] = 0;
        c = code_run(code_head(c, 0, 1), d[i], d[i], (i32)(i + 1));
    }
    a[n] = 1;
    code_head(c, 1, 0);
    result = PyTuple_Pack(3, trans, acc, code);
done:
    Py_XDECREF(trans); Py_XDECREF(acc); Py_XDECREF(code);
    PyBuffer_Release(&data);
    return result;
}
