/* grammarc.automata._core, part 5: the subset construction (determinize) of
 * grammarc.automata.nfa._determinize, over byte classes, with ^ / $ edges and absorbing
 * states; the NFA comes as nfa._NFA holds it (see py_determinize). Its oracle is
 * tests/automata_reference.py (tests/test_automata_core.py). The loop runs without the GIL;
 * every index read from the caller is range-checked before it is used.
 */

#include "_core.h"

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

PyObject *py_determinize(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *edges, *eps, *bol, *eol, *embedded, *absorbing, *result = NULL;
    Py_ssize_t start, final, cap;
    Csr ep = {0}, bp = {0}, lp = {0};
    i64 *edge_ptr = NULL, *lo = NULL, *hi = NULL, *dst = NULL, *b2c = NULL, *shift = NULL;
    uint8_t *cut = NULL, *owned = NULL;  /* owned: a state in an embedded range */
    const i32 **runs_of = NULL;  /* a state of embedded run arrays: its first run there, else NULL */
    i64 *runs_n = NULL;          /* and how many runs it has */
    Py_buffer *views = NULL;     /* the embedded run arrays, held until they are read */
    Py_ssize_t n_views = 0;
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
    runs_of = calloc((size_t)n, sizeof *runs_of);
    runs_n = calloc((size_t)n, sizeof *runs_n);
    views = calloc(2 * (size_t)PyList_GET_SIZE(embedded) + 1, sizeof *views);
    owned = calloc((size_t)n, 1);
    if (!edge_ptr || !b2c || !shift || !runs_of || !runs_n || !views || !owned) { PyErr_NoMemory(); goto fail; }
    /* embedded DFAs: their states' targets are relative to the first one; a DFA given by its
     * run arrays (DFA._run_arrays: int64 ptr [past - first + 1], int32 runs [m, 3] of lo, hi,
     * target) has its states' edges read from those, not from Python lists */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(embedded); i++) {
        PyObject *range = PyList_GET_ITEM(embedded, i);
        i64 first, past;
        if (!PyTuple_Check(range) || (PyTuple_GET_SIZE(range) != 2 && PyTuple_GET_SIZE(range) != 4)) {
            PyErr_SetString(PyExc_TypeError, "determinize: an embedded range must be a tuple (first, past) or "
                                             "(first, past, ptr, runs)");
            goto fail;
        }
        if (read_int(PyTuple_GET_ITEM(range, 0), 0, (long)n, &first) < 0
            || read_int(PyTuple_GET_ITEM(range, 1), (long)first, (long)n, &past) < 0)
            goto fail;
        for (i64 q = first; q < past; q++) {
            if (owned[q]) {
                PyErr_SetString(PyExc_ValueError, "determinize: embedded ranges overlap");
                goto fail;
            }
            owned[q] = 1;
            shift[q] = first;
        }
        if (PyTuple_GET_SIZE(range) == 2)
            continue;
        if (get_buf(PyTuple_GET_ITEM(range, 2), &views[n_views], 8, 0, "determinize: embedded ptr") < 0)
            goto fail;
        const i64 *ptr = views[n_views++].buf;
        if (get_buf(PyTuple_GET_ITEM(range, 3), &views[n_views], 4, 0, "determinize: embedded runs") < 0)
            goto fail;
        const i32 *runs = views[n_views++].buf;
        i64 m = buf_len(&views[n_views - 1]) / 3, bad = buf_len(&views[n_views - 2]) != past - first + 1
            || buf_len(&views[n_views - 1]) != 3 * m || ptr[0] != 0 || ptr[past - first] != m;
        for (i64 q = first; q < past && !bad; q++) {
            bad = ptr[q - first + 1] < ptr[q - first];
            runs_of[q] = runs + 3 * ptr[q - first];
            runs_n[q] = ptr[q - first + 1] - ptr[q - first];
        }
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "determinize: embedded runs must be int64 ptr [past - first + 1], "
                                              "ascending from 0 to m, and int32 runs [m, 3]");
            goto fail;
        }
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PyList_GET_ITEM(edges, s);
        if (!PyList_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "determinize: edges of a state must be a list");
            goto fail;
        }
        i64 count = PyList_GET_SIZE(row);
        if (runs_of[s]) {
            if (count) {
                PyErr_SetString(PyExc_ValueError, "determinize: a state with embedded runs has edges of its own");
                goto fail;
            }
            count = runs_n[s];
        }
        edge_ptr[s + 1] = edge_ptr[s] + count;
    }
    size_t ne = (size_t)edge_ptr[n];
    lo = malloc((ne + 1) * sizeof(i64)); hi = malloc((ne + 1) * sizeof(i64)); dst = malloc((ne + 1) * sizeof(i64));
    if (!lo || !hi || !dst) { PyErr_NoMemory(); goto fail; }
    memset(b2c, 0, 257 * sizeof(i64));
    b2c[0] = 1;
    for (Py_ssize_t s = 0; s < n; s++) {
        if (runs_of[s]) {
            const i32 *r = runs_of[s];
            for (i64 e = edge_ptr[s]; e < edge_ptr[s + 1]; e++, r += 3) {
                if (r[0] < 0 || r[0] > r[1] || r[1] > 255 || r[2] < 0 || r[2] > n - 1 - shift[s]) {
                    PyErr_Format(PyExc_ValueError, "determinize: malformed NFA (an embedded run (%ld, %ld, %ld): not "
                                 "bytes lo <= hi to a target in 0..%ld)", (long)r[0], (long)r[1], (long)r[2],
                                 (long)(n - 1 - shift[s]));
                    goto fail;
                }
                lo[e] = r[0]; hi[e] = r[1]; dst[e] = r[2] + shift[s];
                b2c[r[0]] = b2c[r[1] + 1] = 1;
            }
            continue;
        }
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
    for (Py_ssize_t i = 0; i < n_views; i++) PyBuffer_Release(&views[i]);
    free(views); free(runs_of); free(runs_n); free(owned);
    free(edge_ptr); free(lo); free(hi); free(dst); free(b2c); free(cut); free(shift);
    free(ep.ptr); free(ep.dst); free(bp.ptr); free(bp.dst); free(lp.ptr); free(lp.dst);
    return result;
}

