/* grammarc.automata._core: the two inner loops of automaton construction, in C.
 *
 * finalize    - trim, minimize and canonically number a DFA given over byte classes
 *               (the work behind grammarc.automata.dfa._finalize);
 * determinize - the subset construction of grammarc.automata.nfa._determinize;
 * runs, suffix_code - read-only views of a finished DFA, in _views.c (helpers in _core.h).
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

enum { OK = 0, NOMEM = -1, BUDGET = -2 };

/* Trim, minimize, number canonically. trans [n, k] (-1 = none, checked < n), acc [n],
 * order [k] (columns in ascending order of their first byte). Allocates *out [m, k] and
 * *out_acc [m]; *m = 0 (nothing allocated) for the empty language. */
static int finalize_c(const i64 *trans, const uint8_t *acc, i32 n, i32 k, const i32 *order,
                      i32 **out_rows, uint8_t **out_accept, i32 *m)
{
    i32 *out = NULL;
    uint8_t *out_acc = NULL;
    int rc = NOMEM;
    size_t nk = (size_t)n * (size_t)k;
    i32 *rev_ptr = calloc((size_t)n + 1, sizeof(i32)), *rev_src = NULL, *stack = NULL;
    i32 *remap = NULL, *old_of = NULL, *tail = NULL, *label = NULL, *head = NULL;
    i32 *in_ptr = NULL, *in_tr = NULL, *newid = NULL, *queue = NULL, *cnt = NULL;
    uint8_t *live = calloc((size_t)n + 1, 1);
    Part B = {0}, C = {0};
    *m = 0;
    if (!rev_ptr || !live) goto done;
    /* coreachable states: backwards from the accepting ones */
    size_t edges = 0;
    for (size_t i = 0; i < nk; i++)
        if (trans[i] >= 0) { rev_ptr[trans[i] + 1]++; edges++; }
    for (i32 q = 0; q < n; q++) rev_ptr[q + 1] += rev_ptr[q];
    rev_src = malloc((edges ? edges : 1) * sizeof(i32));
    stack = malloc(((size_t)n + 1) * sizeof(i32));
    if (!rev_src || !stack) goto done;
    {
        i32 *fill = malloc(((size_t)n + 1) * sizeof(i32));
        if (!fill) goto done;
        memcpy(fill, rev_ptr, ((size_t)n + 1) * sizeof(i32));
        for (i32 s = 0; s < n; s++)
            for (i32 c = 0; c < k; c++) {
                i64 t = trans[(size_t)s * k + c];
                if (t >= 0) rev_src[fill[t]++] = s;
            }
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
    if (edges > (size_t)INT32_MAX) goto done;
    size_t T, tcells = edges ? edges : 1;  /* the live transitions are among the edges */
    tail = malloc(tcells * sizeof(i32)); label = malloc(tcells * sizeof(i32));
    head = malloc(tcells * sizeof(i32));
    in_ptr = calloc((size_t)L + 1, sizeof(i32)); in_tr = malloc(tcells * sizeof(i32));
    cnt = calloc((size_t)k + 1, sizeof(i32));
    if (!tail || !label || !head || !in_ptr || !in_tr || !cnt) goto done;
    T = 0;
    for (i32 s = 0; s < L; s++)
        for (i32 c = 0; c < k; c++) {
            i64 t = trans[(size_t)old_of[s] * k + c];
            if (t >= 0 && live[t]) {
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
    /* canonical numbering: breadth first from the start block, columns in `order` */
    newid = malloc((size_t)B.z * sizeof(i32));
    queue = malloc((size_t)B.z * sizeof(i32));
    out = malloc((size_t)B.z * (size_t)k * sizeof(i32));
    out_acc = malloc((size_t)B.z);
    if (!newid || !queue || !out || !out_acc) goto done;
    for (i32 b = 0; b < B.z; b++) newid[b] = -1;
    i32 qn = 0;
    newid[B.set[0]] = 0;
    queue[qn++] = B.set[0];
    for (i32 qi = 0; qi < qn; qi++) {
        i32 blk = queue[qi], rep = old_of[B.elems[B.first[blk]]];
        const i64 *row = trans + (size_t)rep * k;
        i32 *orow = out + (size_t)qi * k;
        out_acc[qi] = acc[rep] ? 1 : 0;
        for (i32 ci = 0; ci < k; ci++) {
            i32 c = order[ci];
            i64 t = row[c];
            if (t < 0 || !live[t]) { orow[c] = -1; continue; }
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
    part_free(&B); part_free(&C);
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
            for (; r < R && row[cls[r]] == v; r++) {}
            if (v < 0) {  /* no transition: all bits set */
                memset(d + first, 0xff, (size_t)(hi[r - 1] - first + 1) * sizeof *d);
                continue;
            }
            for (int b = first, to = hi[r - 1]; b <= to; b++) d[b] = v;
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
    int bad = 0;
    for (Py_ssize_t i = 0; i < n * k && !bad; i++) bad = t[i] >= n;
    for (int b = 0; b < 256 && !bad; b++) bad = classes[b] < 0 || classes[b] >= k;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "finalize: a target or a byte class out of range");
        goto fail;
    }
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
    if (m == 0) { result = Py_NewRef(Py_None); goto fail; }
    result = expand(rows, out_acc, m, (i32)k, classes);
fail:
    free(rows); free(out_acc);
    if (trans.obj) PyBuffer_Release(&trans);
    if (acc.obj) PyBuffer_Release(&acc);
    if (b2c.obj) PyBuffer_Release(&b2c);
    return result;
}

/* ------------------------------------------------------------ determinize */

/* Growable arrays of i32 (Vec) and i64 (Vec64): room for `extra` more items, or -1. */
typedef struct { i32 *v; size_t n, cap; } Vec;
typedef struct { i64 *v; size_t n, cap; } Vec64;

static int grow(void **v, size_t *cap, size_t need, size_t item)
{
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *more = realloc(*v, c * item);
    if (!more) return -1;
    *v = more; *cap = c;
    return 0;
}

static int vec_reserve(Vec *a, size_t extra)
{
    return a->n + extra <= a->cap ? 0 : grow((void **)&a->v, &a->cap, a->n + extra, sizeof *a->v);
}

static int vec64_reserve(Vec64 *a, size_t extra)
{
    return a->n + extra <= a->cap ? 0 : grow((void **)&a->v, &a->cap, a->n + extra, sizeof *a->v);
}

/* Sets of NFA states (sorted arrays in one pool), each with a value, found by content. */
typedef struct {
    Vec pool;
    size_t *off; i32 *len, *val; uint64_t *hash;
    i32 n, cap, unindexed; /* entries below `unindexed` are not in slots */
    i32 *slots; size_t nslots; /* open addressing, -1 = empty; load at most 1/2 */
} SetTab;

static uint64_t set_hash(const i32 *a, i32 n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (i32 i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)a[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return h;
}

static void tab_free(SetTab *t)
{
    free(t->pool.v); free(t->off); free(t->len); free(t->val); free(t->hash); free(t->slots);
    memset(t, 0, sizeof *t);
}

static i32 tab_find(const SetTab *t, const i32 *a, i32 n, uint64_t h)
{
    if (!t->nslots) return -1;
    for (size_t i = h & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
        i32 e = t->slots[i];
        if (e < 0) return -1;
        if (t->hash[e] == h && t->len[e] == n && !memcmp(t->pool.v + t->off[e], a, (size_t)n * sizeof(i32)))
            return e;
    }
}

static int tab_rehash(SetTab *t, size_t nslots)
{
    i32 *slots = malloc(nslots * sizeof(i32));
    if (!slots) return -1;
    for (size_t i = 0; i < nslots; i++) slots[i] = -1;
    for (i32 e = t->unindexed; e < t->n; e++) {
        size_t i = t->hash[e] & (nslots - 1);
        while (slots[i] >= 0) i = (i + 1) & (nslots - 1);
        slots[i] = e;
    }
    free(t->slots);
    t->slots = slots; t->nslots = nslots;
    return 0;
}

/* Adds a set (indexed for tab_find when `indexed`); returns its entry number or -1. */
static i32 tab_add(SetTab *t, const i32 *a, i32 n, uint64_t h, i32 val, int indexed)
{
    if (t->n == t->cap) {
        i32 cap = t->cap ? 2 * t->cap : 256;
        size_t *off = realloc(t->off, (size_t)cap * sizeof(size_t));
        if (!off) return -1;
        t->off = off;
        i32 *len = realloc(t->len, (size_t)cap * sizeof(i32));
        if (!len) return -1;
        t->len = len;
        i32 *v = realloc(t->val, (size_t)cap * sizeof(i32));
        if (!v) return -1;
        t->val = v;
        uint64_t *hs = realloc(t->hash, (size_t)cap * sizeof(uint64_t));
        if (!hs) return -1;
        t->hash = hs;
        t->cap = cap;
    }
    if (vec_reserve(&t->pool, (size_t)n) < 0) return -1;
    i32 e = t->n;
    memcpy(t->pool.v + t->pool.n, a, (size_t)n * sizeof(i32));
    t->off[e] = t->pool.n; t->len[e] = n; t->val[e] = val; t->hash[e] = h;
    t->pool.n += (size_t)n;
    t->n++;
    if (!indexed) {
        if (t->unindexed == e) t->unindexed = e + 1;
        return e;
    }
    if (2 * (size_t)t->n > t->nslots) {
        if (tab_rehash(t, t->nslots ? 2 * t->nslots : 1024) < 0) return -1;
    } else {
        size_t i = h & (t->nslots - 1);
        while (t->slots[i] >= 0) i = (i + 1) & (t->nslots - 1);
        t->slots[i] = e;
    }
    return e;
}

static int cmp_i32(const void *a, const void *b)
{
    i32 x = *(const i32 *)a, y = *(const i32 *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

/* Sort v[0..m) ascending. The sets of the subset construction are mostly a few states, a
 * few moves: insertion sort for those (qsort's call per comparison cost more than the
 * sorting). */
#define SORT_SMALL(type, cmp)                                              \
    static void sort_##type(type *v, size_t m)                             \
    {                                                                      \
        if (m > 16) { qsort(v, m, sizeof(type), cmp); return; }           \
        for (size_t i = 1; i < m; i++) {                                   \
            type x = v[i];                                                 \
            size_t j = i;                                                  \
            for (; j && v[j - 1] > x; j--) v[j] = v[j - 1];                \
            v[j] = x;                                                      \
        }                                                                  \
    }
SORT_SMALL(i32, cmp_i32)
SORT_SMALL(i64, cmp_i64)

/* Sort a set's moves, keys (class << 32 | target) over k classes, ascending. Few of them:
 * insertion sort; many (a member's range edge moves on each class it spans, so hundreds
 * happen): a counting sort by class into `spare` (then copied back), each class's targets
 * then sorted, with no comparison across classes. `cnt` has room for k + 1 counts. */
static void sort_moves(i64 *v, size_t m, i32 k, i32 *cnt, i64 *spare)
{
    if (m <= 16) { sort_i64(v, m); return; }
    memset(cnt, 0, ((size_t)k + 1) * sizeof *cnt);
    for (size_t p = 0; p < m; p++) cnt[(v[p] >> 32) + 1]++;
    for (i32 c = 0; c < k; c++) cnt[c + 1] += cnt[c];
    for (size_t p = 0; p < m; p++) spare[cnt[v[p] >> 32]++] = v[p];
    memcpy(v, spare, m * sizeof *v);
    for (size_t p = 0, q; p < m; p = q) {
        for (q = p + 1; q < m && v[q] >> 32 == v[p] >> 32; q++) {}
        sort_i64(v + p, q - p);
    }
}

typedef struct {
    i32 n, k, start, final;
    const i64 *b2c;
    const i64 *eps_ptr, *eps_dst, *bol_ptr, *bol_dst, *eol_ptr, *eol_dst;
    int has_bol, has_eol;
    const uint8_t *absorbing; /* NULL: none */
    i32 *mv_ptr, *mv_cls, *mv_dst; /* moves by class, per NFA state */
    i32 *stamp; i32 clock;
    Vec stack, buf;
} Nfa;

/* The closure of seeds[0..ns) over epsilon edges (and ^ / $ edges when asked), into
 * nfa->buf, sorted; returns whether `final` is in it. */
static int closure(Nfa *a, const i32 *seeds, i32 ns, int use_bol, int use_eol)
{
    if (a->clock == INT32_MAX) { memset(a->stamp, 0, ((size_t)a->n + 1) * sizeof(i32)); a->clock = 0; }
    i32 mark = ++a->clock;
    int hit = 0;
    a->buf.n = 0; a->stack.n = 0;
    if (vec_reserve(&a->buf, (size_t)ns) < 0 || vec_reserve(&a->stack, (size_t)ns) < 0) return -1;
    for (i32 i = 0; i < ns; i++)
        if (a->stamp[seeds[i]] != mark) {
            a->stamp[seeds[i]] = mark;
            a->buf.v[a->buf.n++] = seeds[i];
            a->stack.v[a->stack.n++] = seeds[i];
        }
    while (a->stack.n) {
        i32 s = a->stack.v[--a->stack.n];
        for (int kind = 0; kind < 3; kind++) {
            const i64 *ptr = kind == 0 ? a->eps_ptr : kind == 1 ? a->bol_ptr : a->eol_ptr;
            const i64 *dst = kind == 0 ? a->eps_dst : kind == 1 ? a->bol_dst : a->eol_dst;
            if ((kind == 1 && !use_bol) || (kind == 2 && !use_eol)) continue;
            for (i64 e = ptr[s]; e < ptr[s + 1]; e++) {
                i32 t = (i32)dst[e];
                if (a->stamp[t] == mark) continue;
                a->stamp[t] = mark;
                if (vec_reserve(&a->buf, 1) < 0 || vec_reserve(&a->stack, 1) < 0) return -1;
                a->buf.v[a->buf.n++] = t;
                a->stack.v[a->stack.n++] = t;
            }
        }
    }
    sort_i32(a->buf.v, a->buf.n);
    for (size_t i = 0; i < a->buf.n && !hit; i++) hit = a->buf.v[i] == a->final;
    return hit;
}

/* Cuts the set in buf down to its absorbing states, if it has any. */
static void cut(Nfa *a)
{
    if (!a->absorbing) return;
    size_t j = 0;
    for (size_t i = 0; i < a->buf.n; i++) j += a->absorbing[a->buf.v[i]];
    if (!j || j == a->buf.n) return;
    j = 0;
    for (size_t i = 0; i < a->buf.n; i++)
        if (a->absorbing[a->buf.v[i]]) a->buf.v[j++] = a->buf.v[i];
    a->buf.n = j;
}

/* The rows and acceptance of the DFA being built. */
typedef struct { i64 *rows; size_t rows_cap; uint8_t *acc; i32 count; } Out;

static int determinize_c(Nfa *a, const i64 *edge_ptr, const i64 *edge_lo, const i64 *edge_hi,
                         const i64 *edge_dst, i32 cap, Out *out)
{
    int rc = NOMEM;
    i32 n = a->n, k = a->k;
    SetTab dsets = {0}, seeds = {0};
    Vec bucket = {0}, tmp = {0};
    Vec64 moves = {0}, spare = {0};
    i32 *cnt = malloc(((size_t)k + 1) * sizeof(i32));
    a->mv_ptr = calloc((size_t)n + 1, sizeof(i32));
    a->stamp = calloc((size_t)n + 1, sizeof(i32));
    if (!cnt || !a->mv_ptr || !a->stamp) goto done;
    /* moves over byte classes, per state */
    size_t total = 0;
    for (i32 s = 0; s < n; s++)
        for (i64 e = edge_ptr[s]; e < edge_ptr[s + 1]; e++) {
            size_t w = (size_t)(a->b2c[edge_hi[e]] - a->b2c[edge_lo[e]] + 1);
            total += w;
            a->mv_ptr[s + 1] += (i32)w;
        }
    if (total > (size_t)INT32_MAX) goto done;
    a->mv_cls = malloc((total ? total : 1) * sizeof(i32));
    a->mv_dst = malloc((total ? total : 1) * sizeof(i32));
    if (!a->mv_cls || !a->mv_dst) goto done;
    total = 0;
    for (i32 s = 0; s < n; s++) {
        a->mv_ptr[s + 1] += a->mv_ptr[s];
        for (i64 e = edge_ptr[s]; e < edge_ptr[s + 1]; e++)
            for (i64 c = a->b2c[edge_lo[e]]; c <= a->b2c[edge_hi[e]]; c++) {
                a->mv_cls[total] = (i32)c; a->mv_dst[total] = (i32)edge_dst[e]; total++;
            }
    }
    /* the start state: never merged with a later one */
    i32 st = a->start;
    if (closure(a, &st, 1, a->has_bol, 0) < 0) goto done;
    cut(a);
    if (tab_add(&dsets, a->buf.v, (i32)a->buf.n, 0, 0, 0) < 0) goto done;
    for (i32 i = 0; i < dsets.n; i++) {
        /* acceptance */
        size_t off = dsets.off[i];
        i32 len = dsets.len[i];
        int acc = 0;
        for (i32 j = 0; j < len && !acc; j++) acc = dsets.pool.v[off + j] == a->final;
        if (!acc && (a->has_eol || (i == 0 && a->has_bol))) {
            if (vec_reserve(&tmp, (size_t)len) < 0) goto done;
            memcpy(tmp.v, dsets.pool.v + off, (size_t)len * sizeof(i32));
            acc = closure(a, tmp.v, len, i == 0, 1);
            if (acc < 0) goto done;
        }
        /* the row: moves of the members, grouped by class */
        if ((size_t)(i + 1) * k > out->rows_cap) {
            size_t c2 = out->rows_cap ? 2 * out->rows_cap : (size_t)k * 256;
            while (c2 < (size_t)(i + 1) * k) c2 *= 2;
            i64 *r = realloc(out->rows, c2 * sizeof(i64));
            if (!r) goto done;
            out->rows = r; out->rows_cap = c2;
            uint8_t *ac = realloc(out->acc, c2 / k + 1);
            if (!ac) goto done;
            out->acc = ac;
        }
        out->acc[i] = (uint8_t)acc;
        i64 *row = out->rows + (size_t)i * k;
        memset(row, 0xff, (size_t)k * sizeof *row);  /* -1: no move on the class */
        /* the members' moves as (class << 32 | target), sorted: each class's targets are then
         * one ascending run, the classes in order, and no pass goes over every class (most
         * sets have a few moves, while k may be large) */
        moves.n = 0;
        for (i32 j = 0; j < len; j++) {
            i32 s = dsets.pool.v[dsets.off[i] + j];
            if (vec64_reserve(&moves, (size_t)(a->mv_ptr[s + 1] - a->mv_ptr[s])) < 0) goto done;
            for (i32 e = a->mv_ptr[s]; e < a->mv_ptr[s + 1]; e++)
                moves.v[moves.n++] = (i64)a->mv_cls[e] << 32 | (uint32_t)a->mv_dst[e];
        }
        if (vec64_reserve(&spare, moves.n) < 0 || vec_reserve(&bucket, moves.n) < 0) goto done;
        sort_moves(moves.v, moves.n, k, cnt, spare.v);
        for (size_t p = 0; p < moves.n;) {
            i32 c = (i32)(moves.v[p] >> 32), u = 0, *ts = bucket.v;
            for (; p < moves.n && (i32)(moves.v[p] >> 32) == c; p++) {
                i32 t = (i32)(uint32_t)moves.v[p];
                if (!u || ts[u - 1] != t) ts[u++] = t;
            }
            uint64_t h = set_hash(ts, u);
            i32 e = tab_find(&seeds, ts, u, h), id;
            if (e >= 0) {
                id = seeds.val[e];
            } else {
                if (closure(a, ts, u, 0, 0) < 0) goto done;
                cut(a);
                uint64_t h2 = set_hash(a->buf.v, (i32)a->buf.n);
                i32 d = tab_find(&dsets, a->buf.v, (i32)a->buf.n, h2);
                if (d < 0) {
                    if (dsets.n >= cap) { rc = BUDGET; goto done; }
                    d = tab_add(&dsets, a->buf.v, (i32)a->buf.n, h2, 0, 1);
                    if (d < 0) goto done;
                }
                id = d;
                if (tab_add(&seeds, ts, u, h, id, 1) < 0) goto done;
            }
            row[c] = id;
        }
    }
    out->count = dsets.n;
    rc = OK;
done:
    free(cnt); free(a->mv_ptr); free(a->mv_cls); free(a->mv_dst); free(a->stamp);
    a->mv_ptr = a->mv_cls = a->mv_dst = a->stamp = NULL;
    free(a->stack.v); free(a->buf.v); free(moves.v); free(spare.v); free(bucket.v); free(tmp.v);
    tab_free(&dsets); tab_free(&seeds);
    return rc;
}

/* An int in [lo, hi] from a Python object, or -1 with ValueError / TypeError set. */
static int read_int(PyObject *o, long lo, long hi, i64 *out)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "determinize: malformed NFA (%ld is not in %ld..%ld)", v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A CSR adjacency (offsets [n + 1], targets) read from per-state lists of ints: a list of
 * n lists, or a dict {state: list} (states absent have none). */
typedef struct { i64 *ptr, *dst; } Csr;

static int read_lists(PyObject *lists, Py_ssize_t n, Csr *out, const char *name)
{
    int is_dict = PyDict_Check(lists);
    out->ptr = calloc((size_t)n + 1, sizeof(i64));
    if (!out->ptr) { PyErr_NoMemory(); return -1; }
    PyObject **per = calloc((size_t)n + 1, sizeof(PyObject *)); /* borrowed */
    if (!per) { PyErr_NoMemory(); return -1; }
    if (is_dict) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        i64 s;
        while (PyDict_Next(lists, &pos, &key, &value)) {
            if (read_int(key, 0, (long)n - 1, &s) < 0) goto fail;
            per[s] = value;
        }
    } else if (!PyList_Check(lists) || PyList_GET_SIZE(lists) != n) {
        PyErr_Format(PyExc_ValueError, "determinize: %s must be a list of %zd lists", name, n);
        goto fail;
    } else {
        for (Py_ssize_t s = 0; s < n; s++) per[s] = PyList_GET_ITEM(lists, s);
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        if (per[s] && !PyList_Check(per[s])) {
            PyErr_Format(PyExc_TypeError, "determinize: %s of a state must be a list", name);
            goto fail;
        }
        out->ptr[s + 1] = out->ptr[s] + (per[s] ? PyList_GET_SIZE(per[s]) : 0);
    }
    out->dst = malloc(((size_t)out->ptr[n] + 1) * sizeof(i64));
    if (!out->dst) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t s = 0; s < n; s++)
        for (i64 i = out->ptr[s]; i < out->ptr[s + 1]; i++)
            if (read_int(PyList_GET_ITEM(per[s], i - out->ptr[s]), 0, (long)n - 1, &out->dst[i]) < 0) goto fail;
    free(per);
    return 0;
fail:
    free(per);
    return -1;
}

static PyObject *py_determinize(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *edges, *eps, *bol, *eol, *embedded, *absorbing, *result = NULL;
    Py_ssize_t start, final, cap;
    Csr ep = {0}, bp = {0}, lp = {0};
    i64 *edge_ptr = NULL, *lo = NULL, *hi = NULL, *dst = NULL, *b2c = NULL, *shift = NULL;
    uint8_t *cut = NULL;
    Out out = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!Onnn", &PyList_Type, &edges, &PyList_Type, &eps, &PyDict_Type, &bol,
                          &PyDict_Type, &eol, &PyList_Type, &embedded, &absorbing, &start, &final, &cap))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(edges);
    if (n < 1 || n > INT32_MAX / 2 || start < 0 || start >= n || final < 0 || final >= n || cap < 1
        || cap > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "determinize: malformed NFA (sizes or states out of range)");
        return NULL;
    }
    /* byte-range edges */
    edge_ptr = calloc((size_t)n + 1, sizeof(i64));
    b2c = malloc(257 * sizeof(i64));
    shift = calloc((size_t)n, sizeof(i64));
    if (!edge_ptr || !b2c || !shift) { PyErr_NoMemory(); goto fail; }
    /* embedded DFAs: their states' targets are relative to the first one */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(embedded); i++) {
        PyObject *range = PyList_GET_ITEM(embedded, i);
        i64 first, past;
        if (!PyTuple_Check(range) || PyTuple_GET_SIZE(range) != 2) {
            PyErr_SetString(PyExc_TypeError, "determinize: an embedded range must be a tuple (first, past)");
            goto fail;
        }
        if (read_int(PyTuple_GET_ITEM(range, 0), 0, (long)n, &first) < 0
            || read_int(PyTuple_GET_ITEM(range, 1), (long)first, (long)n, &past) < 0)
            goto fail;
        for (i64 q = first; q < past; q++) shift[q] = first;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PyList_GET_ITEM(edges, s);
        if (!PyList_Check(row)) { PyErr_SetString(PyExc_TypeError, "determinize: edges of a state must be a list"); goto fail; }
        edge_ptr[s + 1] = edge_ptr[s] + PyList_GET_SIZE(row);
    }
    size_t ne = (size_t)edge_ptr[n];
    lo = malloc((ne + 1) * sizeof(i64)); hi = malloc((ne + 1) * sizeof(i64)); dst = malloc((ne + 1) * sizeof(i64));
    if (!lo || !hi || !dst) { PyErr_NoMemory(); goto fail; }
    memset(b2c, 0, 257 * sizeof(i64));
    b2c[0] = 1;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PyList_GET_ITEM(edges, s);
        for (i64 e = edge_ptr[s]; e < edge_ptr[s + 1]; e++) {
            PyObject *edge = PyList_GET_ITEM(row, e - edge_ptr[s]);
            if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 3) {
                PyErr_SetString(PyExc_TypeError, "determinize: an edge must be a tuple (lo, hi, target)");
                goto fail;
            }
            if (read_int(PyTuple_GET_ITEM(edge, 0), 0, 255, &lo[e]) < 0
                || read_int(PyTuple_GET_ITEM(edge, 1), (long)lo[e], 255, &hi[e]) < 0
                || read_int(PyTuple_GET_ITEM(edge, 2), -(long)shift[s], (long)(n - 1 - shift[s]), &dst[e]) < 0)
                goto fail;
            dst[e] += shift[s];
            b2c[lo[e]] = b2c[hi[e] + 1] = 1; /* a class starts at every range bound */
        }
    }
    for (int b = 0, c = -1; b < 256; b++) { c += (int)b2c[b]; b2c[b] = c; }
    if (read_lists(eps, n, &ep, "eps") < 0 || read_lists(bol, n, &bp, "bol") < 0 || read_lists(eol, n, &lp, "eol") < 0)
        goto fail;
    cut = calloc((size_t)n, 1);
    if (!cut) { PyErr_NoMemory(); goto fail; }
    int any_cut = 0;
    PyObject *it = PyObject_GetIter(absorbing), *item;
    if (!it) goto fail;
    while ((item = PyIter_Next(it))) {
        i64 s;
        int bad = read_int(item, 0, (long)n - 1, &s);
        Py_DECREF(item);
        if (bad < 0) { Py_DECREF(it); goto fail; }
        cut[s] = 1; any_cut = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) goto fail;
    Nfa a;
    memset(&a, 0, sizeof a);
    a.n = (i32)n; a.k = (i32)b2c[255] + 1; a.start = (i32)start; a.final = (i32)final; a.b2c = b2c;
    a.eps_ptr = ep.ptr; a.eps_dst = ep.dst; a.bol_ptr = bp.ptr; a.bol_dst = bp.dst;
    a.eol_ptr = lp.ptr; a.eol_dst = lp.dst;
    a.has_bol = bp.ptr[n] > 0; a.has_eol = lp.ptr[n] > 0;
    a.absorbing = any_cut ? cut : NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = determinize_c(&a, edge_ptr, lo, hi, dst, (i32)cap, &out);
    Py_END_ALLOW_THREADS
    if (rc == NOMEM) {
        PyErr_NoMemory();
    } else if (rc == BUDGET) {
        result = Py_NewRef(Py_None);
    } else {
        Py_ssize_t k = a.k;
        result = Py_BuildValue("(y#y#y#n)", (const char *)out.rows, (Py_ssize_t)out.count * k * 8,
                               (const char *)out.acc, (Py_ssize_t)out.count, (const char *)b2c,
                               (Py_ssize_t)256 * 8, k);
    }
fail:
    free(out.rows); free(out.acc);
    free(edge_ptr); free(lo); free(hi); free(dst); free(b2c); free(cut); free(shift);
    free(ep.ptr); free(ep.dst); free(bp.ptr); free(bp.dst); free(lp.ptr); free(lp.dst);
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
     "targets are relative to `first`; `absorbing` an iterable of states."},
    {"runs", py_runs, METH_VARARGS,
     "runs(trans) -> list of [(lo, hi, target), ...] per state: the maximal byte runs with one live "
     "target of an int32 [n, 256] byte table."},
    {"suffix_code", py_suffix_code, METH_VARARGS,
     "suffix_code(runs, accept, state) -> bytes: the canonical code (breadth-first numbering, runs "
     "in byte order) of the automaton reachable from `state`, given DFA._runs (or the int32 [n, 256] "
     "byte table) and bool accept [n]."},
    {"byte_classes", py_byte_classes, METH_VARARGS,
     "byte_classes(trans) -> (table, b2c, k): an int32 [n, 256] byte table's columns merged into "
     "classes, numbered by their first byte: bytes of int32 [n, k] and uint8 [256] with "
     "table[:, b2c] == trans."},
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
