/* grammarc.tokens._scan, continued: walks over pairs of states of two DFAs (or of one), which
 * say how far, or on which bytes, two states' scans of the vocabulary may differ, so that
 * one's scan stands for the other's (`TokenIndex._scan_near`). The module's table is in
 * _scan.c; what the files share is in _scan.h. */

#include "_scan.h"

/* agree_depth(table, q, table2, p, limit):
 * the largest d <= limit such that state q of the first DFA and state p of the second (the
 * same one, given twice, or another) accept the same strings of up to d bytes and die on
 * the same strings of up to d bytes (-1: one of them accepts the empty string and the
 * other does not). A token of at most d bytes then scans from q exactly as from p: a walk
 * sees only where it dies and where it accepts, so the token dies at the same byte, has its
 * splits at the same positions and stays inside alike. A string's length counter (state k
 * of `"` char{0,n} `"`) agrees with its neighbour up to the characters it has left, and
 * with any string body as far, so its scan is theirs but for the tokens longer than that
 * (`TokenIndex._scan_near`). A breadth-first walk over pairs of states, one depth at a
 * time; within one DFA (one `Table` given twice), equal pairs agree on everything and are
 * not followed. From each pair the walks read one byte of each run of bytes that both states
 * treat alike (between the cuts of either, `table_cuts`): a handful for two string bodies,
 * where the runs every state of a DFA treats alike number as many as its key trie has
 * letters. The cuts are made as the walks reach the states and kept on the tables, so the
 * walks hold the GIL (they stop within `max_pairs` pairs). */
typedef struct {
    uint64_t *keys;
    size_t cap, len;
} PairSet;

static int pairs_add(PairSet *set, uint64_t key) { /* 1: added, 0: present, -1: out of memory */
    if (2 * (set->len + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 256;
        uint64_t *keys = malloc(cap * sizeof(uint64_t));
        if (!keys) return -1;
        memset(keys, 0xFF, cap * sizeof(uint64_t));
        for (size_t i = 0; i < set->cap; i++)
            if (set->keys[i] != UINT64_MAX) {
                size_t j = (size_t)((set->keys[i] * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
                while (keys[j] != UINT64_MAX) j = (j + 1) & (cap - 1);
                keys[j] = set->keys[i];
            }
        free(set->keys);
        set->keys = keys, set->cap = cap;
    }
    size_t j = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & (set->cap - 1);
    while (set->keys[j] != UINT64_MAX) {
        if (set->keys[j] == key) return 0;
        j = (j + 1) & (set->cap - 1);
    }
    set->keys[j] = key;
    set->len++;
    return 1;
}

/* The runs of bytes that two states treat alike: start[j] .. start[j + 1] - 1 for j < n, in
 * order (start[n] = 256). */
typedef struct {
    uint16_t start[257];
    int n;
} Runs;

/* The runs state x of `a` and state y of `b` both treat alike; -1 when out of memory. */
static int pair_runs(Runs *r, TableObject *a, int32_t x, TableObject *b, int32_t y) {
    const uint64_t *cx = table_cuts(a, x), *cy = table_cuts(b, y);
    if (!cx || !cy) return -1;
    r->n = 0;
    for (int w = 0; w < 4; w++)
        for (uint64_t bits = cx[w] | cy[w]; bits; bits &= bits - 1)
            r->start[r->n++] = (uint16_t)(w * 64 + __builtin_ctzll(bits));
    r->start[r->n] = 256;
    return 0;
}

static Py_ssize_t agree_walk(TableObject *ta, int32_t q, TableObject *tb, int32_t p, Py_ssize_t limit, int same) {
    const Table *t = &ta->t, *u = &tb->t;
    const uint8_t *accept = ta->accept.buf, *accept_u = tb->accept.buf;
    Runs runs;
    PairSet seen = {0};
    Vec level = {0}, next = {0}; /* pairs as consecutive (x, y) */
    Py_ssize_t depth = 0, result = -2;
    if ((!same || q != p) && (pairs_add(&seen, ((uint64_t)(uint32_t)q << 32) | (uint32_t)p) < 0 || vec_push(&level, q) ||
                   vec_push(&level, p)))
        goto done;
    for (;; depth++) {
        for (Py_ssize_t i = 0; i < level.len; i += 2)
            if (accept[level.data[i]] != accept_u[level.data[i + 1]]) {
                result = depth - 1;
                goto done;
            }
        if (depth == limit || level.len == 0) {
            result = limit;
            goto done;
        }
        next.len = 0;
        for (Py_ssize_t i = 0; i < level.len; i += 2) {
            int32_t x = level.data[i], y = level.data[i + 1];
            if (pair_runs(&runs, ta, x, tb, y)) goto done;
            for (int j = 0; j < runs.n; j++) { /* one byte stands for its run */
                int32_t a = step(t, x, (uint8_t)runs.start[j]), c = step(u, y, (uint8_t)runs.start[j]);
                if ((a < 0) != (c < 0)) {
                    result = depth;
                    goto done;
                }
                if (a < 0 || (same && a == c)) continue;
                int added = pairs_add(&seen, ((uint64_t)(uint32_t)a << 32) | (uint32_t)c);
                if (added < 0 || (added && (vec_push(&next, a) || vec_push(&next, c)))) goto done;
            }
        }
        Vec swap = level;
        level = next, next = swap;
    }
done:
    free(seen.keys), free(level.data), free(next.data);
    return result; /* -2: out of memory */
}

/* What agree_depth and agree_bytes take: two DFAs' tables (one given twice, or two), a
 * state of each, and a bound. */
typedef struct {
    TableObject *a, *b;
    Py_ssize_t q, p, bound;
    int same; /* one table given twice: a pair of equal states agrees on everything */
} Pair;

/* Parse and check a Pair's arguments; 0, or -1 with an error set (its messages name `who`
 * and the bound, `what`, which must be at least `least`). */
static int parse_pair(PyObject *args, Pair *x, const char *who, const char *what, Py_ssize_t least) {
    if (!PyArg_ParseTuple(args, "O!nO!nn", &TableType, &x->a, &x->q, &TableType, &x->b, &x->p, &x->bound))
        return -1;
    if (x->q < 0 || x->q >= x->a->t.n_states || x->p < 0 || x->p >= x->b->t.n_states || x->bound < least) {
        PyErr_Format(PyExc_ValueError, "%s: a state or the %s is out of range", who, what);
        return -1;
    }
    x->same = x->a == x->b;
    return 0;
}

PyObject *agree_depth(PyObject *self, PyObject *args) {
    (void)self;
    Pair x = {0};
    if (parse_pair(args, &x, "agree_depth", "limit", 0)) return NULL;
    Py_ssize_t depth = agree_walk(x.a, (int32_t)x.q, x.b, (int32_t)x.p, x.bound, x.same);
    return depth == -2 ? PyErr_NoMemory() : PyLong_FromSsize_t(depth);
}

/* The bits of word w (bytes 64w .. 64w + 63) that lie in [lo, hi]. */
static inline uint64_t word_span(int w, int lo, int hi) {
    int a = lo - 64 * w, z = hi - 64 * w;
    if (a < 0) a = 0;
    if (z > 63) z = 63;
    if (a > z) return 0;
    return (z == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (z + 1)) - 1) & (~(uint64_t)0 << a);
}

/* agree_bytes(table, q, table2, p, max_pairs, max_parting):
 * the bytes on which walks from q (first DFA) and from p (second) may part, as 32 bytes (bit
 * b % 8 of byte b / 8): b is one when, from some pair of states the two reach on one string
 * of other bytes, reading b kills one walk and not the other, or leaves one accepting and the
 * other not. A token holding none of them walks alike from q and p however long it is: it
 * dies at the same byte, splits at the same positions and stays inside alike. None when q
 * and p differ on acceptance, the pairs reached exceed max_pairs or more than max_parting
 * bytes part them (so many part the two almost everywhere: a string body from a key trie's
 * state, which parts at every byte the trie goes on with). A string body inside a
 * terminal that goes on after the closing quote (``ws? ":" ws? string ws? "}"``) parts from
 * any string body only at the quote, so its scan is theirs but for the tokens that hold one
 * (`TokenIndex._scan_near`). A byte found parting is not followed further: the tokens that
 * hold it are walked anyway. */
static int agree_bytes_walk(TableObject *ta, int32_t q, TableObject *tb, int32_t p, Py_ssize_t max_pairs,
                            Py_ssize_t max_parting, int same, uint64_t parting[4]) {
    const Table *t = &ta->t, *u = &tb->t;
    const uint8_t *accept = ta->accept.buf, *accept_u = tb->accept.buf;
    Runs runs;
    PairSet seen = {0};
    Vec todo = {0};
    Py_ssize_t n_parting = 0;
    int rc = -1; /* -1: out of memory, 1: too many pairs or parting bytes, 0: done */
    if (pairs_add(&seen, ((uint64_t)(uint32_t)q << 32) | (uint32_t)p) < 0 || vec_push(&todo, q) || vec_push(&todo, p))
        goto done;
    while (todo.len) {
        int32_t y = todo.data[--todo.len], x = todo.data[--todo.len];
        if (pair_runs(&runs, ta, x, tb, y)) goto done;
        for (int j = 0; j < runs.n; j++) { /* one byte stands for its run, which parts whole */
            int lo = runs.start[j], hi = runs.start[j + 1] - 1, known = 1;
            for (int w = lo >> 6; w <= hi >> 6; w++) {
                uint64_t span = word_span(w, lo, hi);
                known &= (parting[w] & span) == span;
            }
            if (known) continue; /* every byte of the run parts the two already */
            int32_t a = step(t, x, (uint8_t)lo), c = step(u, y, (uint8_t)lo);
            if (a < 0 && c < 0) continue;
            if ((a < 0) != (c < 0) || accept[a] != accept_u[c]) {
                for (int w = lo >> 6; w <= hi >> 6; w++) {
                    uint64_t span = word_span(w, lo, hi);
                    n_parting += __builtin_popcountll(span & ~parting[w]);
                    parting[w] |= span;
                }
                if (n_parting > max_parting) { rc = 1; goto done; }
                continue;
            }
            if (same && a == c) continue; /* one state of one DFA: alike on everything */
            int added = pairs_add(&seen, ((uint64_t)(uint32_t)a << 32) | (uint32_t)c);
            if (added < 0) goto done;
            if (added) {
                if ((Py_ssize_t)seen.len > max_pairs) { rc = 1; goto done; }
                if (vec_push(&todo, a) || vec_push(&todo, c)) goto done;
            }
        }
    }
    rc = 0;
done:
    free(seen.keys), free(todo.data);
    return rc;
}

PyObject *agree_bytes(PyObject *self, PyObject *args) {
    (void)self;
    Pair x = {0};
    PyObject *result = NULL, *pair_args = NULL;
    Py_ssize_t max_parting;
    if (PyTuple_GET_SIZE(args) != 6) {
        PyErr_SetString(PyExc_TypeError, "agree_bytes takes 6 arguments");
        return NULL;
    }
    max_parting = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 5));
    if (max_parting == -1 && PyErr_Occurred()) return NULL;
    if (max_parting < 0) {
        PyErr_SetString(PyExc_ValueError, "agree_bytes: the parting limit is out of range");
        return NULL;
    }
    if (!(pair_args = PyTuple_GetSlice(args, 0, 5))) return NULL;
    if (parse_pair(pair_args, &x, "agree_bytes", "pair limit", 1) < 0) goto done;
    const uint8_t *accept = x.a->accept.buf, *accept_u = x.b->accept.buf;
    if (accept[x.q] != accept_u[x.p]) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    uint64_t parting[4] = {0, 0, 0, 0};
    int rc = agree_bytes_walk(x.a, (int32_t)x.q, x.b, (int32_t)x.p, x.bound, max_parting, x.same, parting);
    if (rc < 0) result = PyErr_NoMemory();
    else if (rc > 0) result = Py_NewRef(Py_None);
    else {
        unsigned char out[32] = {0};
        for (int b = 0; b < 256; b++)
            if (parting[b >> 6] >> (b & 63) & 1) out[b >> 3] |= (unsigned char)(1u << (b & 7));
        result = PyBytes_FromStringAndSize((const char *)out, 32);
    }
done:
    Py_XDECREF(pair_args);
    return result;
}
