/* Walking vocabulary tokens through a terminal's DFA: the inner loop of the token index.
 *
 * grammarc.tokens.index builds, for a lexer item (terminal t in DFA state q), the tokens
 * that stay inside t and the places where t can end strictly inside a token. Token trees
 * call this walk once per (tree node, next terminal): tens of thousands of small walks on a
 * schema the engine has never seen, where NumPy's per-call overhead, not the bytes, was the
 * cost. Each row is walked to its end before the next (its bytes stay in cache), so the
 * outputs come in input order: a row's split points by position, then its end. The
 * tokens are packed end to end (Llama-3: 0.8 MB, not a 16 MB zero-padded matrix).
 *
 * scan(trans, base, check, next, accept, data, offsets, lengths, sets, rows, pos, q[, split_at_start])
 *   trans  int32 [n * 256] dense transitions, or None with the comb table (base int64,
 *          check int32, next int32: next[base[s] + b] is the target when check[...] == s)
 *   accept uint8 [n]; data uint8: every token's bytes, end to end; offsets int64 and
 *          lengths int32 [rows_total]: row r is data[offsets[r] : offsets[r] + lengths[r]];
 *          sets uint64 [rows_total * 4]: bit b of row r's words = the token contains byte b
 *          (or empty: none given; see `sweep`)
 *   rows int32, pos int32: the token rows to walk and the byte each starts at; q the state.
 *   split_at_start (default 0): also report the start itself as a split when q accepts and
 *   the row goes on (a walk entered mid-token, as if its first bytes had led to q).
 * returns (end_rows, end_states, split_rows, split_pos) as bytes of native int32:
 *   rows whose every byte is taken, with the state they end in; and each (row, position)
 *   strictly after the start (at it, with split_at_start) and strictly before the token's
 *   end where the DFA accepts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Vec;

static int vec_push(Vec *v, int32_t x) {
    if (v->len == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *data = realloc(v->data, (size_t)cap * sizeof(int32_t));
        if (!data) return -1;
        v->data = data;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

static PyObject *vec_bytes(Vec *v) {
    return PyBytes_FromStringAndSize((const char *)v->data, v->len * (Py_ssize_t)sizeof(int32_t));
}

typedef struct {
    const int32_t *trans;  /* dense, or NULL */
    const int64_t *base;
    const int32_t *check, *next;
    Py_ssize_t n_states, comb_size;
} Table;

static inline int32_t step(const Table *t, int32_t s, uint8_t b) {
    if (t->trans) return t->trans[(Py_ssize_t)s * 256 + b];
    Py_ssize_t i = (Py_ssize_t)t->base[s] + b;
    return t->check[i] == s ? t->next[i] : -1;
}

/* The walk, one row at a time to its end (the row's bytes stay in cache); 0 on success,
 * -1 when out of memory.
 *
 * A row made only of bytes on which `q` loops to itself never leaves `q`: it ends there,
 * with a split at every position when `q` accepts, and is not stepped. `sets` (four
 * 64-bit words per row: the bytes the token contains) decides that in four operations,
 * so a state inside a JSON string, which loops on every byte of most tokens, costs a test
 * per token instead of a DFA step per byte (NULL: no sets, every row is stepped). */
static int sweep(const Table *t, const uint8_t *accept, const uint8_t *data, const int64_t *offsets,
                 const int32_t *lengths, const uint64_t *sets, const int32_t *rows, const int32_t *pos, int32_t q,
                 int split_at_start, Py_ssize_t n, Vec *end_rows, Vec *end_states, Vec *split_rows, Vec *split_pos) {
    uint64_t leaves[4] = {0, 0, 0, 0};  /* the bytes that take q elsewhere (or nowhere) */
    for (int b = 0; b < 256; b++)
        if (step(t, q, (uint8_t)b) != q) leaves[b >> 6] |= (uint64_t)1 << (b & 63);
    if (leaves[0] == UINT64_MAX && leaves[1] == UINT64_MAX && leaves[2] == UINT64_MAX && leaves[3] == UINT64_MAX)
        sets = NULL;  /* q loops on nothing */
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t row = rows[i], length = lengths[row];
        const uint8_t *bytes = data + offsets[row];
        int32_t p = pos[i], s = q;
        if (split_at_start && accept[q] && p > 0 && p < length && (vec_push(split_rows, row) || vec_push(split_pos, p))) return -1;
        if (sets) {
            const uint64_t *w = sets + 4 * (Py_ssize_t)row;
            if (!((w[0] & leaves[0]) | (w[1] & leaves[1]) | (w[2] & leaves[2]) | (w[3] & leaves[3]))) {
                if (accept[q])
                    for (int32_t k = p + 1; k < length; k++)
                        if (vec_push(split_rows, row) || vec_push(split_pos, k)) return -1;
                if (vec_push(end_rows, row) || vec_push(end_states, q)) return -1;
                continue;
            }
        }
        if (p < length) {
            s = step(t, s, bytes[p++]);
            while (s >= 0 && p < length) {
                if (accept[s] && (vec_push(split_rows, row) || vec_push(split_pos, p))) return -1;
                s = step(t, s, bytes[p++]);
            }
        }
        if (s >= 0 && (vec_push(end_rows, row) || vec_push(end_states, s))) return -1;
    }
    return 0;
}

static int need(Py_buffer *b, Py_ssize_t itemsize, const char *what) {
    if (b->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "scan: %s is not an array of %zd-byte items", what, itemsize);
        return -1;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *trans_obj;
    Py_buffer base = {0}, check = {0}, next = {0}, accept = {0}, data = {0}, offsets = {0}, lengths = {0},
              sets = {0}, rows = {0}, pos = {0}, trans = {0};
    Py_ssize_t q;
    int split_at_start = 0;
    if (!PyArg_ParseTuple(args, "Oy*y*y*y*y*y*y*y*y*y*n|p", &trans_obj, &base, &check, &next, &accept, &data,
                          &offsets, &lengths, &sets, &rows, &pos, &q, &split_at_start))
        return NULL;
    PyObject *result = NULL;
    Vec out[4] = {{0}};
    Table t = {0};
    if (trans_obj != Py_None) {
        if (PyObject_GetBuffer(trans_obj, &trans, PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (need(&trans, 256 * sizeof(int32_t), "trans")) goto done;
        t.trans = trans.buf;
        t.n_states = trans.len / (256 * (Py_ssize_t)sizeof(int32_t));
    } else {
        if (need(&base, sizeof(int64_t), "base") || need(&check, sizeof(int32_t), "check") ||
            need(&next, sizeof(int32_t), "next"))
            goto done;
        t.base = base.buf, t.check = check.buf, t.next = next.buf;
        t.n_states = base.len / (Py_ssize_t)sizeof(int64_t);
        t.comb_size = check.len / (Py_ssize_t)sizeof(int32_t);
    }
    if (need(&lengths, sizeof(int32_t), "lengths") || need(&offsets, sizeof(int64_t), "offsets") ||
        need(&sets, 4 * sizeof(uint64_t), "sets") || need(&rows, sizeof(int32_t), "rows") ||
        need(&pos, sizeof(int32_t), "pos"))
        goto done;
    Py_ssize_t n = rows.len / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t n_rows = lengths.len / (Py_ssize_t)sizeof(int32_t);
    if (pos.len != rows.len || accept.len != t.n_states || offsets.len / (Py_ssize_t)sizeof(int64_t) != n_rows ||
        (sets.len && sets.len / (4 * (Py_ssize_t)sizeof(uint64_t)) != n_rows) || q < 0 || q >= t.n_states) {
        PyErr_SetString(PyExc_ValueError, "scan: inconsistent array sizes");
        goto done;
    }
    /* Bounds are checked once here, so the sweep needs none: every row indexes the tokens,
     * starts within its token, and the token lies within the data. */
    const int32_t *r = rows.buf, *p = pos.buf, *len = lengths.buf;
    const int64_t *off = offsets.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (r[i] < 0 || r[i] >= n_rows || p[i] < 0 || p[i] > len[r[i]] || off[r[i]] < 0 ||
            off[r[i]] + len[r[i]] > data.len) {
            PyErr_SetString(PyExc_ValueError, "scan: a row or position is out of range");
            goto done;
        }
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = sweep(&t, accept.buf, data.buf, offsets.buf, lengths.buf, sets.len ? sets.buf : NULL, rows.buf,
                   pos.buf, (int32_t)q, split_at_start, n, &out[0], &out[1], &out[2], &out[3]);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(NNNN)", vec_bytes(&out[0]), vec_bytes(&out[1]), vec_bytes(&out[2]), vec_bytes(&out[3]));
done:
    for (int i = 0; i < 4; i++) free(out[i].data);
    PyBuffer_Release(&base), PyBuffer_Release(&check), PyBuffer_Release(&next), PyBuffer_Release(&accept);
    PyBuffer_Release(&data), PyBuffer_Release(&offsets), PyBuffer_Release(&lengths), PyBuffer_Release(&sets);
    PyBuffer_Release(&rows), PyBuffer_Release(&pos);
    if (trans.obj) PyBuffer_Release(&trans);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Walk token rows through a DFA (see the module's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "The token index's walk over a DFA.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
