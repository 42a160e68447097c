/* grammarc.automata._core: the two inner loops of automaton construction, in C, and the
 * module table of every part.
 *
 * finalize    - trim, minimize and canonically number a DFA given over byte classes
 *               (the work behind grammarc.automata.dfa._finalize), here;
 * determinize - the subset construction of grammarc.automata.nfa._determinize, in
 *               _determinize.c;
 * runs, suffix_code, byte_runs - read-only views of a finished DFA, in _views.c (helpers in _core.h);
 * json_string, except_runs - JSON string literals and the keys' trie, in _json.c and _keys.c.
 *
 * Why C: all are tight loops over integers that dominate grammar compilation in Python.
 * The Python versions live on as test oracles (tests/automata_reference.py), and
 * tests/test_automata_core.py checks both give identical arrays.
 *
 * Only the CPython C API and the buffer protocol are used (no numpy headers), and the
 * loops run without the GIL, since grammars are compiled in threads. Every index read
 * from a caller's buffer is range-checked before it is used.
 */

#include "_core.h"

/* ------------------------------------------------------ refinable partition */

/* Sets of the elements 0..n-1, stored contiguously in `elems`; marking an element moves it
 * to the front of its set, splitting cuts every touched set into marked and unmarked parts
 * and gives the smaller part a new number (so each element changes set O(log n) times). */
typedef struct {
    i32 n, z, nt;
    i32 *elems, *loc, *set, *first, *past, *marked, *touched;
} Part;

static void part_free(Part *p)
{
    free(p->elems); free(p->loc); free(p->set); free(p->first);
    free(p->past); free(p->marked); free(p->touched);
    memset(p, 0, sizeof *p);
}

static int part_init(Part *p, i32 n)
{
    size_t cells = (size_t)(n > 0 ? n : 1);
    memset(p, 0, sizeof *p);
    p->elems = malloc(cells * sizeof(i32)); p->loc = malloc(cells * sizeof(i32));
    p->set = malloc(cells * sizeof(i32)); p->first = malloc(cells * sizeof(i32));
    p->past = malloc(cells * sizeof(i32)); p->marked = malloc(cells * sizeof(i32));
    p->touched = malloc(cells * sizeof(i32));
    if (!p->elems || !p->loc || !p->set || !p->first || !p->past || !p->marked || !p->touched) {
        part_free(p);
        return -1;
    }
    p->n = n;
    p->z = n > 0;
    for (i32 i = 0; i < n; i++) { p->elems[i] = p->loc[i] = i; p->set[i] = 0; }
    p->first[0] = 0; p->past[0] = n; p->marked[0] = 0;
    return 0;
}

static void part_mark(Part *p, i32 e)
{
    i32 s = p->set[e], i = p->loc[e], j = p->first[s] + p->marked[s];
    if (i < j)
        return; /* marked already */
    p->elems[i] = p->elems[j]; p->loc[p->elems[i]] = i;
    p->elems[j] = e; p->loc[e] = j;
    if (!p->marked[s]++)
        p->touched[p->nt++] = s;
}

static void part_split(Part *p)
{
    while (p->nt) {
        i32 s = p->touched[--p->nt], j = p->first[s] + p->marked[s];
        if (j == p->past[s]) { p->marked[s] = 0; continue; }
        i32 z = p->z++;
        if (p->marked[s] <= p->past[s] - j) { p->first[z] = p->first[s]; p->past[z] = p->first[s] = j; }
        else { p->past[z] = p->past[s]; p->first[z] = p->past[s] = j; }
        for (i32 i = p->first[z]; i < p->past[z]; i++) p->set[p->elems[i]] = z;
        p->marked[s] = p->marked[z] = 0;
    }
}

/* ----------------------------------------------------------------- finalize */

/* The live cells of a class table, row by row (columns ascending): state s's edges are
 * cls/dst[ptr[s]:ptr[s + 1]]. Most cells of a table are -1 (a few classes live per state),
 * so every later pass of finalize goes over these, not over the n * k cells. */
typedef struct { i32 *ptr; Vec cls, dst; } Edges;

static void edges_free(Edges *e) { free(e->ptr); free(e->cls.v); free(e->dst.v); memset(e, 0, sizeof *e); }

/* Reads `trans` [n, k] into `e`, checking every target (< n; any negative one is no edge):
 * OK, NOMEM, or BAD_INDEX for a target out of range. Where SSE2 is there, four cells are
 * tested for "all negative" at once by their sign bits. */
static int edges_read(const i64 *trans, i32 n, i32 k, Edges *e)
{
    e->ptr = malloc(((size_t)n + 1) * sizeof(i32));
    if (!e->ptr) return NOMEM;
    e->ptr[0] = 0;
    for (i32 s = 0; s < n; s++) {
        const i64 *row = trans + (size_t)s * k;
        i32 c = 0;
        if (vec_reserve(&e->cls, (size_t)k) < 0 || vec_reserve(&e->dst, (size_t)k) < 0) return NOMEM;
        i32 *cls = e->cls.v, *dst = e->dst.v;
        size_t w = e->cls.n;
#ifdef __SSE2__
        for (; c + 4 <= k; c += 4) {
            __m128i a = _mm_loadu_si128((const __m128i *)(row + c));
            __m128i b = _mm_loadu_si128((const __m128i *)(row + c + 2));
            int dead = _mm_movemask_pd(_mm_castsi128_pd(a)) | _mm_movemask_pd(_mm_castsi128_pd(b)) << 2;
            if (dead == 0xF) continue;
            for (i32 j = c; j < c + 4; j++) {
                if (row[j] < 0) continue;
                if (row[j] >= n) return BAD_INDEX;
                cls[w] = j; dst[w++] = (i32)row[j];
            }
        }
#endif
        for (; c < k; c++) {
            if (row[c] < 0) continue;
            if (row[c] >= n) return BAD_INDEX;
            cls[w] = c; dst[w++] = (i32)row[c];
        }
        if (w > (size_t)INT32_MAX) return NOMEM;
        e->cls.n = e->dst.n = w;
        e->ptr[s + 1] = (i32)w;
    }
    return OK;
}

/* Trim, minimize, number canonically. trans [n, k] (-1 = none), acc [n], order [k]
 * (columns in ascending order of their first byte). Allocates *out [m, k] and *out_acc [m];
 * *m = 0 (nothing allocated) for the empty language; BAD_INDEX: a target >= n. */
static int finalize_c(const i64 *trans, const uint8_t *acc, i32 n, i32 k, const i32 *order,
                      i32 **out_rows, uint8_t **out_accept, i32 *m)
{
    i32 *out = NULL;
    uint8_t *out_acc = NULL;
    int rc = NOMEM;
    i32 *rev_ptr = calloc((size_t)n + 1, sizeof(i32)), *rev_src = NULL, *stack = NULL;
    i32 *remap = NULL, *old_of = NULL, *tail = NULL, *label = NULL, *head = NULL;
    i32 *in_ptr = NULL, *in_tr = NULL, *newid = NULL, *queue = NULL, *cnt = NULL;
    uint8_t *live = calloc((size_t)n + 1, 1);
    Part B = {0}, C = {0};
    Edges E = {0};
    *m = 0;
    if (!rev_ptr || !live) goto done;
    if ((rc = edges_read(trans, n, k, &E)) != OK) goto done;
    rc = NOMEM;
    const i32 *ecls = E.cls.v, *edst = E.dst.v;
    /* coreachable states: backwards from the accepting ones */
    size_t edges = E.cls.n;
    for (size_t i = 0; i < edges; i++) rev_ptr[edst[i] + 1]++;
    for (i32 q = 0; q < n; q++) rev_ptr[q + 1] += rev_ptr[q];
    rev_src = malloc((edges ? edges : 1) * sizeof(i32));
    stack = malloc(((size_t)n + 1) * sizeof(i32));
    if (!rev_src || !stack) goto done;
    {
        i32 *fill = malloc(((size_t)n + 1) * sizeof(i32));
        if (!fill) goto done;
        memcpy(fill, rev_ptr, ((size_t)n + 1) * sizeof(i32));
        for (i32 s = 0; s < n; s++)
            for (i32 e = E.ptr[s]; e < E.ptr[s + 1]; e++) rev_src[fill[edst[e]]++] = s;
        free(fill);
    }
    i32 sp = 0;
    for (i32 q = 0; q < n; q++)
        if (acc[q]) { live[q] = 1; stack[sp++] = q; }
    while (sp) {
        i32 q = stack[--sp];
        for (i32 e = rev_ptr[q]; e < rev_ptr[q + 1]; e++) {
            i32 s = rev_src[e];
            if (!live[s]) { live[s] = 1; stack[sp++] = s; }
        }
    }
    if (n == 0 || !live[0]) { rc = OK; goto done; }
    /* the trimmed DFA: live states renumbered, its transitions as (tail, label, head) */
    remap = malloc((size_t)n * sizeof(i32));
    old_of = malloc((size_t)n * sizeof(i32));
    if (!remap || !old_of) goto done;
    i32 L = 0;
    for (i32 q = 0; q < n; q++) {
        remap[q] = live[q] ? L : -1;
        if (live[q]) old_of[L++] = q;
    }
    size_t T, tcells = edges ? edges : 1;  /* the live transitions are among the edges */
    tail = malloc(tcells * sizeof(i32)); label = malloc(tcells * sizeof(i32));
    head = malloc(tcells * sizeof(i32));
    in_ptr = calloc((size_t)L + 1, sizeof(i32)); in_tr = malloc(tcells * sizeof(i32));
    cnt = calloc((size_t)k + 1, sizeof(i32));
    if (!tail || !label || !head || !in_ptr || !in_tr || !cnt) goto done;
    T = 0;
    for (i32 s = 0; s < L; s++)
        for (i32 e = E.ptr[old_of[s]]; e < E.ptr[old_of[s] + 1]; e++) {
            i32 t = edst[e], c = ecls[e];
            if (live[t]) {
                tail[T] = s; label[T] = c; head[T] = remap[t];
                in_ptr[remap[t] + 1]++; cnt[c + 1]++;
                T++;
            }
        }
    for (i32 q = 0; q < L; q++) in_ptr[q + 1] += in_ptr[q];
    for (size_t t = 0; t < T; t++) in_tr[in_ptr[head[t]]++] = (i32)t;
    for (i32 q = L; q > 0; q--) in_ptr[q] = in_ptr[q - 1];
    in_ptr[0] = 0;
    /* blocks of states, first split by acceptance */
    if (part_init(&B, L) < 0 || part_init(&C, (i32)T) < 0) goto done;
    for (i32 s = 0; s < L; s++)
        if (acc[old_of[s]]) part_mark(&B, s);
    part_split(&B);
    /* cords of transitions, first grouped by label */
    if (T) {
        for (i32 c = 0; c < k; c++) cnt[c + 1] += cnt[c];
        for (size_t t = 0; t < T; t++) {
            i32 pos = cnt[label[t]]++;
            C.elems[pos] = (i32)t; C.loc[t] = pos;
        }
        C.z = 0;
        for (size_t pos = 0; pos < T; pos++) {
            i32 t = C.elems[pos];
            if (pos == 0 || label[t] != label[C.elems[pos - 1]]) {
                if (pos) C.past[C.z - 1] = (i32)pos;
                C.first[C.z] = (i32)pos; C.marked[C.z] = 0; C.z++;
            }
            C.set[t] = C.z - 1;
        }
        C.past[C.z - 1] = (i32)T;
    }
    /* refine: a cord splits the blocks of its tails; a block splits the cords entering it.
     * Block 0 is never a splitter: the cords stand for the whole state set, of which block
     * 0 and the others are the parts, and all parts but one suffice. */
    for (i32 b = 1, c = 0; c < C.z;) {
        for (i32 i = C.first[c]; i < C.past[c]; i++) part_mark(&B, tail[C.elems[i]]);
        part_split(&B);
        c++;
        for (; b < B.z; b++) {
            for (i32 i = B.first[b]; i < B.past[b]; i++) {
                i32 q = B.elems[i];
                for (i32 e = in_ptr[q]; e < in_ptr[q + 1]; e++) part_mark(&C, in_tr[e]);
            }
            part_split(&C);
        }
    }
    /* canonical numbering: breadth first from the start block, columns in `order` (when
     * that is column order, as byte_classes and determinize number them, a state's edges) */
    newid = malloc((size_t)B.z * sizeof(i32));
    queue = malloc((size_t)B.z * sizeof(i32));
    out = malloc((size_t)B.z * (size_t)k * sizeof(i32));
    out_acc = malloc((size_t)B.z);
    if (!newid || !queue || !out || !out_acc) goto done;
    int ordered = 1;
    for (i32 ci = 0; ci < k; ci++) ordered &= order[ci] == ci;
    for (i32 b = 0; b < B.z; b++) newid[b] = -1;
    i32 qn = 0;
    newid[B.set[0]] = 0;
    queue[qn++] = B.set[0];
    for (i32 qi = 0; qi < qn; qi++) {
        i32 blk = queue[qi], rep = old_of[B.elems[B.first[blk]]];
        i32 *orow = out + (size_t)qi * k;
        out_acc[qi] = acc[rep] ? 1 : 0;
        memset(orow, 0xff, (size_t)k * sizeof *orow);
        if (ordered) {
            for (i32 e = E.ptr[rep]; e < E.ptr[rep + 1]; e++) {
                i32 t = edst[e];
                if (!live[t]) continue;
                i32 tb = B.set[remap[t]];
                if (newid[tb] < 0) { newid[tb] = qn; queue[qn++] = tb; }
                orow[ecls[e]] = newid[tb];
            }
            continue;
        }
        for (i32 ci = 0; ci < k; ci++) {
            i32 c = order[ci];
            i64 t = trans[(size_t)rep * k + c];
            if (t < 0 || !live[t]) continue;
            i32 tb = B.set[remap[t]];
            if (newid[tb] < 0) { newid[tb] = qn; queue[qn++] = tb; }
            orow[c] = newid[tb];
        }
    }
    *m = qn;
    *out_rows = out; *out_accept = out_acc;
    out = NULL; out_acc = NULL;
    rc = OK;
done:
    free(out); free(out_acc);
    free(rev_ptr); free(rev_src); free(stack); free(live); free(remap); free(old_of);
    free(tail); free(label); free(head); free(in_ptr); free(in_tr); free(newid); free(queue);
    free(cnt);
    part_free(&B); part_free(&C); edges_free(&E);
    return rc;
}

/* The finished DFA for Python: (byte table [m, 256] int32, accept [m], its canonical code,
 * see code_head) from the class table `rows` [m, k]. Each maximal run of bytes of one class
 * takes its class's value at once, and the same runs, joined where neighbours agree, give
 * each state's byte runs: the code that `suffix_code` would read from the byte table (the
 * numbering is already canonical, so a target's number is itself), without reading 256
 * entries a row back. */
static PyObject *expand(const i32 *rows, const uint8_t *acc, i32 m, i32 k, const i64 *classes)
{
    int lo[256], hi[256], cls[256], R = 0;  /* the class runs, ascending */
    for (int b = 0; b < 256; b++) {
        if (b && classes[b] == classes[b - 1]) { hi[R - 1] = b; continue; }
        lo[R] = hi[R] = b; cls[R++] = (int)classes[b];
    }
    int plain = R == k;  /* each class one run, numbered in byte order (determinize's): row[r] is run r's */
    for (int r = 0; r < R && plain; r++) plain = cls[r] == r;
    PyObject *full = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)m * 256 * 4);
    unsigned char *code = malloc((size_t)m * (3 + 6 * (size_t)R));
    PyObject *result = NULL;
    if (!full || !code) { PyErr_NoMemory(); goto done; }
    i32 *dst = (i32 *)PyBytes_AS_STRING(full);
    size_t len = 0;
    for (i32 q = 0; q < m; q++) {
        const i32 *row = rows + (size_t)q * k;
        i32 *d = dst + (size_t)q * 256;
        size_t head = len;
        int count = 0;
        len += 3;  /* the head, once the runs are counted */
        for (int r = 0; r < R;) {
            i32 v = row[cls[r]];
            int first = lo[r];
            if (plain) r = run_end_within(row, r, R);
            else for (; r < R && row[cls[r]] == v; r++) {}
            if (v < 0) {  /* no transition: all bits set */
                memset(d + first, 0xff, (size_t)(hi[r - 1] - first + 1) * sizeof *d);
                continue;
            }
            fill_i32(d + first, hi[r - 1] - first + 1, v);
            code_run(code + len, first, hi[r - 1], v);
            len += 6; count++;
        }
        code_head(code + head, acc[q], count);
    }
    result = Py_BuildValue("(Oy#y#)", full, (const char *)acc, (Py_ssize_t)m, (const char *)code, (Py_ssize_t)len);
done:
    Py_XDECREF(full);
    free(code);
    return result;
}

static PyObject *py_finalize(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans, *o_acc, *o_b2c, *result = NULL;
    Py_ssize_t k;
    Py_buffer trans = {0}, acc = {0}, b2c = {0};
    i32 order[256], *rows = NULL;
    uint8_t *out_acc = NULL;
    if (!PyArg_ParseTuple(args, "OnOO", &o_trans, &k, &o_acc, &o_b2c))
        return NULL;
    if (get_buf(o_trans, &trans, 8, 0, "trans") < 0) return NULL;
    if (get_buf(o_acc, &acc, 1, 0, "accept") < 0) goto fail;
    if (get_buf(o_b2c, &b2c, 8, 0, "b2c") < 0) goto fail;
    Py_ssize_t n = buf_len(&acc);
    if (n < 1 || n > INT32_MAX / 256 || k < 1 || k > 256 || buf_len(&trans) != n * k || buf_len(&b2c) != 256) {
        PyErr_SetString(PyExc_ValueError, "finalize: inconsistent array sizes");
        goto fail;
    }
    const i64 *t = trans.buf, *classes = b2c.buf;
    for (int b = 0; b < 256; b++)  /* the targets: as finalize_c reads them (BAD_INDEX) */
        if (classes[b] < 0 || classes[b] >= k) goto out_of_range;
    /* columns in the order of their smallest byte (classes no byte maps to go last) */
    uint8_t placed[256] = {0};
    i32 no = 0;
    for (int b = 0; b < 256; b++)
        if (!placed[classes[b]]) { placed[classes[b]] = 1; order[no++] = (i32)classes[b]; }
    for (i32 c = 0; c < k; c++)
        if (!placed[c]) order[no++] = c;
    int rc;
    i32 m;
    Py_BEGIN_ALLOW_THREADS
    rc = finalize_c(t, acc.buf, (i32)n, (i32)k, order, &rows, &out_acc, &m);
    Py_END_ALLOW_THREADS
    if (rc == NOMEM) { PyErr_NoMemory(); goto fail; }
    if (rc == BAD_INDEX) goto out_of_range;
    if (m == 0) { result = Py_NewRef(Py_None); goto fail; }
    result = expand(rows, out_acc, m, (i32)k, classes);
    goto fail;
out_of_range:
    PyErr_SetString(PyExc_ValueError, "finalize: a target or a byte class out of range");
fail:
    free(rows); free(out_acc);
    if (trans.obj) PyBuffer_Release(&trans);
    if (acc.obj) PyBuffer_Release(&acc);
    if (b2c.obj) PyBuffer_Release(&b2c);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"finalize", py_finalize, METH_VARARGS,
     "finalize(trans, k, accept, b2c) -> (trans, accept, code) | None: trim, minimize and number "
     "canonically (breadth first, bytes ascending) a DFA over byte classes, int64 [n, k], bool [n], "
     "int64 [256]; bytes of int32 [m, 256], bool [m] and the canonical code of state 0 (as "
     "suffix_code), or None for the empty language."},
    {"determinize", py_determinize, METH_VARARGS,
     "determinize(edges, eps, bol, eol, embedded, absorbing, start, final, cap) -> (trans, accept, b2c, k) as "
     "bytes of int64 [n, k], bool [n], int64 [256], or None when more than `cap` states are needed. "
     "The NFA is given as nfa._NFA holds it: per state lists of (lo, hi, target) and of epsilon "
     "targets, dicts {state: targets} of ^ and $ edges, (first, past) ranges of states whose edge "
     "targets are relative to `first` (disjoint), or (first, past, ptr, runs): an embedded DFA's "
     "run_arrays, whose runs (targets relative to `first`) are those states' edges (their lists "
     "empty); `absorbing` an iterable of states."},
    {"runs", py_runs, METH_VARARGS,
     "runs(trans) -> list of [(lo, hi, target), ...] per state: the maximal byte runs with one live "
     "target of an int32 [n, 256] byte table."},
    {"run_arrays", py_run_arrays, METH_VARARGS,
     "run_arrays(trans) -> (ptr, runs): the runs of `runs` as bytes of int64 ptr [n + 1] and int32 runs "
     "[m, 3] (lo, hi, target), state q's runs[ptr[q]:ptr[q + 1]]."},
    {"suffix_code", py_suffix_code, METH_VARARGS,
     "suffix_code(runs, accept, state) -> bytes: the canonical code (breadth-first numbering, runs "
     "in byte order) of the automaton reachable from `state`, given DFA._runs (or the int32 [n, 256] "
     "byte table) and bool accept [n]."},
    {"literal", py_literal, METH_VARARGS,
     "literal(data) -> (trans, accept, code): the DFA of exactly the byte string `data`, a chain of "
     "len(data) + 1 states (minimal and canonical as built): bytes of int32 [n + 1, 256] and bool [n + 1], "
     "and its canonical code (as suffix_code)."},
    {"byte_classes", py_byte_classes, METH_VARARGS,
     "byte_classes(trans) -> (table, b2c, k): an int32 [n, 256] byte table's columns merged into "
     "classes, numbered by their first byte: bytes of int32 [n, k] and uint8 [256] with "
     "table[:, b2c] == trans."},
    {"byte_runs", py_byte_runs, METH_VARARGS,
     "byte_runs(trans) -> bytes: an int32 [n, 256] byte table's 256 run numbers (DFA.byte_runs), ascending from 0, a new "
     "one at each byte some state treats apart from the byte before."},
    {"json_string", py_json_string, METH_VARARGS,
     "json_string(ptr, lo, hi, dst, accept, max_states, canonical=False) -> (trans, accept[, code]) | None: the byte "
     "table of every JSON spelling of the strings a DFA over code points accepts, quotes included (per character "
     "state q, its runs lo[ptr[q]:ptr[q+1]] .. hi, to dst: int64 arrays, sorted and disjoint; accept uint8 [n]): "
     "bytes of int32 [m, 256] and bool [m], unminimized, state 0 the start; with `canonical` (for a minimal "
     "character DFA whose states all reach acceptance) minimal and numbered canonically, and its canonical code "
     "(as suffix_code) third; None past max_states states."},
    {"except_runs", py_except_runs, METH_VARARGS,
     "except_runs(words) -> (ptr, lo, hi, dst, accept): the minimal automaton over code points of the texts that are "
     "none of `words` (sorted, distinct str; a word with a surrogate excludes nothing), as json_string reads it: bytes "
     "of int64 ptr [n + 1], lo, hi, dst [runs] and uint8 accept [n]; state 0 the start."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "grammarc.automata._core",
    "The inner loops of automaton construction (see grammarc.automata.dfa and .nfa).", -1, methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&WalkerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "Walker", (PyObject *)&WalkerType) < 0) Py_CLEAR(m);
    return m;
}
