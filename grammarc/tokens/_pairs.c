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
/* Pairs of states (x << 32 | y) by their index, in order of arrival: open addressing. */
typedef struct {
    uint64_t *keys; /* UINT64_MAX = empty */
    int32_t *vals;
    size_t cap, len;
} PairMap;

/* The slot of a pair (x << 32 | y) in a table of `cap` slots (a power of two): both halves
 * mixed into the product's high bits, which depend on every bit of the key (its low bits
 * alone would depend on y alone, and all the pairs of one y would collide). */
static inline size_t pair_slot(uint64_t key, size_t cap) {
    return (size_t)(((key ^ (key >> 32)) * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* The index of `key` (x << 32 | y), added as `fresh` when absent (*added set); -1 when out
 * of memory. */
static int32_t pairmap_get(PairMap *m, uint64_t key, int32_t fresh, int *added) {
    *added = 0;
    if (2 * (m->len + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        uint64_t *keys = malloc(cap * sizeof(uint64_t));
        int32_t *vals = malloc(cap * sizeof(int32_t));
        if (!keys || !vals) { free(keys), free(vals); return -1; }
        memset(keys, 0xFF, cap * sizeof(uint64_t));
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != UINT64_MAX) {
                size_t j = pair_slot(m->keys[i], cap);
                while (keys[j] != UINT64_MAX) j = (j + 1) & (cap - 1);
                keys[j] = m->keys[i], vals[j] = m->vals[i];
            }
        free(m->keys), free(m->vals);
        m->keys = keys, m->vals = vals, m->cap = cap;
    }
    size_t j = pair_slot(key, m->cap);
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key) return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key, m->vals[j] = fresh, m->len++;
    *added = 1;
    return fresh;
}

/* Add a pair to a map used as a set: 1 added, 0 present, -1 out of memory. */
static int pairs_add(PairMap *set, uint64_t key) {
    int added;
    return pairmap_get(set, key, (int32_t)set->len, &added) < 0 ? -1 : added;
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
    PairMap seen = {0};
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
    free(seen.keys), free(seen.vals), free(level.data), free(next.data);
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
    PairMap seen = {0};
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
    free(seen.keys), free(seen.vals), free(todo.data);
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

/* parting_rows(table, q, table2, p, tokens, max_pairs, max_parting, max_rows):
 * the token rows (int32, ascending) on which walks from q (first DFA) and from p (second)
 * part: a row is one when, walking its bytes from the two states side by side, some byte
 * kills one walk and not the other or leaves one accepting and the other not (as
 * agree_bytes parts). Every other row scans alike from q and p (dies at the same byte,
 * splits at the same positions, stays inside alike), so q's scan is p's but for these rows
 * (`TokenIndex._parting`). None when q and p differ on acceptance, the pairs of states
 * reached exceed max_pairs, the runs of bytes on which some pair parts exceed max_parting and
 * a sixteenth of the pairs reached (a key trie and a string body part at the end of each key,
 * a run per key; two unrelated automata almost everywhere: given up early), or the rows found (or
 * the prefixes of rows followed) exceed max_rows; a ValueError when the rows are not sorted
 * by their bytes.
 *
 * Where agree_bytes gives the bytes on which the two may part, anywhere in a token, this
 * follows the tokens' bytes from the start: the state of a key trie (an object's other keys,
 * ``json_string_except!``) and a string body part only at the quote after a key, so their
 * rows are those that spell the rest of a key and then the quote (a handful), not every row
 * that holds a quote (~3% of a vocabulary). First the pairs reachable from (q, p) and which
 * of them can still part (live: a parting byte is reachable from them); then the rows, as
 * a walk down the sorted rows, one prefix at a time, that follows only live pairs: the rows
 * sharing a prefix are a range, and those going on with a run of bytes a sub-range found by
 * two binary searches. Iterative and bounded (max_pairs, max_rows). */
enum { PARTS = -1 }; /* an edge's target: the run parts the two walks */

static int ascending(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The first row of [lo, hi) whose byte at `d` is at least `v` (every row there is longer
 * than d, shares its first d bytes with the others and they are sorted). */
static Py_ssize_t first_at_least(const uint8_t *data, const int64_t *off, Py_ssize_t lo, Py_ssize_t hi, int32_t d,
                                 int v) {
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (data[off[mid] + d] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

PyObject *parting_rows(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *ta, *tb;
    TokensObject *tokens;
    Py_ssize_t q, p, max_pairs, max_parting, max_rows, n_parting = 0;
    if (!PyArg_ParseTuple(args, "O!nO!nO!nnn", &TableType, &ta, &q, &TableType, &tb, &p, &TokensType, &tokens,
                          &max_pairs, &max_parting, &max_rows))
        return NULL;
    if (q < 0 || q >= ta->t.n_states || p < 0 || p >= tb->t.n_states || max_pairs < 1 || max_parting < 0 ||
        max_rows < 0) {
        PyErr_SetString(PyExc_ValueError, "parting_rows: a state or a limit is out of range");
        return NULL;
    }
    if (!tokens->sorted) {
        PyErr_SetString(PyExc_ValueError, "parting_rows: the rows are not sorted by their bytes");
        return NULL;
    }
    const Table *t = &ta->t, *u = &tb->t;
    const uint8_t *accept = ta->accept.buf, *accept_u = tb->accept.buf;
    if (accept[q] != accept_u[p]) return Py_NewRef(Py_None);
    const int same = ta == tb;
    PyObject *result = NULL;
    PairMap map = {0};
    Vec pairs = {0};                  /* (x, y) of each pair, by index */
    Vec first = {0};                  /* each pair's first edge; then one past the last */
    Vec e_lo = {0}, e_hi = {0}, e_to = {0}; /* edges: a run of bytes and its target pair (or PARTS) */
    Vec todo = {0}, stack = {0}, out = {0};
    int32_t *rev_first = NULL, *rev = NULL, *fill = NULL; /* the edges backwards, by target pair */
    uint8_t *live = NULL;
    int added, over = 0;
    Runs runs;
    /* 1. the pairs reachable from (q, p), breadth first, and their edges */
    if (pairmap_get(&map, ((uint64_t)(uint32_t)q << 32) | (uint32_t)p, 0, &added) < 0 || vec_push(&pairs, (int32_t)q) ||
        vec_push(&pairs, (int32_t)p))
        goto nomem;
    for (Py_ssize_t i = 0; i < pairs.len / 2; i++) {
        int32_t x = pairs.data[2 * i], y = pairs.data[2 * i + 1];
        if (vec_push(&first, (int32_t)e_to.len) || pair_runs(&runs, ta, x, tb, y)) goto nomem;
        for (int j = 0; j < runs.n; j++) {
            int lo = runs.start[j], hi = runs.start[j + 1] - 1;
            int32_t a = step(t, x, (uint8_t)lo), c = step(u, y, (uint8_t)lo), to;
            if (a < 0 && c < 0) continue;
            if ((a < 0) != (c < 0) || accept[a] != accept_u[c]) {
                if (++n_parting > max_parting + (Py_ssize_t)(pairs.len / 2) / 16) { over = 1; goto done; }
                to = PARTS;
            } else if (same && a == c) continue; /* one state of one DFA: alike on everything */
            else {
                to = pairmap_get(&map, ((uint64_t)(uint32_t)a << 32) | (uint32_t)c, (int32_t)(pairs.len / 2), &added);
                if (to < 0) goto nomem;
                if (added) {
                    if (pairs.len / 2 >= max_pairs) { over = 1; goto done; }
                    if (vec_push(&pairs, a) || vec_push(&pairs, c)) goto nomem;
                }
            }
            if (vec_push(&e_lo, lo) || vec_push(&e_hi, hi) || vec_push(&e_to, to)) goto nomem;
        }
    }
    Py_ssize_t n_pairs = pairs.len / 2, n_edges = e_to.len;
    if (vec_push(&first, (int32_t)n_edges)) goto nomem;
    /* 2. live pairs: those with a parting edge, and back along the edges from them */
    if (!(live = calloc((size_t)n_pairs, 1)) || !(rev_first = calloc((size_t)n_pairs + 1, sizeof(int32_t))) ||
        !(rev = malloc(((size_t)n_edges + 1) * sizeof(int32_t))) || !(fill = malloc(((size_t)n_pairs + 1) * sizeof(int32_t))))
        goto nomem;
    for (Py_ssize_t k = 0; k < n_edges; k++)
        if (e_to.data[k] >= 0) rev_first[e_to.data[k] + 1]++;
    for (Py_ssize_t i = 0; i < n_pairs; i++) rev_first[i + 1] += rev_first[i];
    memcpy(fill, rev_first, ((size_t)n_pairs + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < n_pairs; i++)
        for (int32_t k = first.data[i]; k < first.data[i + 1]; k++)
            if (e_to.data[k] >= 0) rev[fill[e_to.data[k]]++] = (int32_t)i;
    for (Py_ssize_t i = 0; i < n_pairs; i++)
        for (int32_t k = first.data[i]; k < first.data[i + 1] && !live[i]; k++)
            if (e_to.data[k] == PARTS) {
                live[i] = 1;
                if (vec_push(&todo, (int32_t)i)) goto nomem;
            }
    while (todo.len) {
        int32_t i = todo.data[--todo.len];
        for (int32_t k = rev_first[i]; k < rev_first[i + 1]; k++)
            if (!live[rev[k]]) {
                live[rev[k]] = 1;
                if (vec_push(&todo, rev[k])) goto nomem;
            }
    }
    /* 3. the rows, down the sorted rows along live pairs: (pair, depth, lo, hi) on the stack,
     * the rows [lo, hi) sharing their first `depth` bytes, which lead (q, p) to the pair */
    const uint8_t *data = tokens->data.buf;
    const int64_t *off = tokens->offsets.buf;
    const int32_t *len = tokens->lengths.buf;
    Py_ssize_t looked = 0;
    if (live[0] && tokens->n_rows &&
        (vec_push(&stack, 0) || vec_push(&stack, 0) || vec_push(&stack, 0) || vec_push(&stack, (int32_t)tokens->n_rows)))
        goto nomem;
    while (stack.len) {
        int32_t hi = stack.data[--stack.len], lo = stack.data[--stack.len], d = stack.data[--stack.len],
                i = stack.data[--stack.len];
        while (lo < hi && len[lo] == d) lo++; /* rows that end here: nothing more to part them */
        for (int32_t k = first.data[i]; k < first.data[i + 1] && lo < hi; k++) {
            int32_t to = e_to.data[k];
            if (to != PARTS && !live[to]) continue;
            Py_ssize_t a = first_at_least(data, off, lo, hi, d, e_lo.data[k]);
            Py_ssize_t b = e_hi.data[k] == 255 ? hi : first_at_least(data, off, a, hi, d, e_hi.data[k] + 1);
            if (to == PARTS) {
                if (out.len + (b - a) > max_rows) { over = 1; goto done; }
                for (Py_ssize_t r = a; r < b; r++)
                    if (vec_push(&out, (int32_t)r)) goto nomem;
                continue;
            }
            for (Py_ssize_t s = a; s < b;) { /* one prefix per byte of the run */
                int v = data[off[s] + d];
                Py_ssize_t e = v == 255 ? b : first_at_least(data, off, s, b, d, v + 1);
                if (++looked > max_rows) { over = 1; goto done; }
                if (vec_push(&stack, to) || vec_push(&stack, d + 1) || vec_push(&stack, (int32_t)s) ||
                    vec_push(&stack, (int32_t)e))
                    goto nomem;
                s = e;
            }
        }
    }
    /* ascending: each prefix's rows come as one range, but the stack visits them out of order */
    if (out.len > 1) qsort(out.data, (size_t)out.len, sizeof(int32_t), ascending);
    result = vec_bytes(&out);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (over && !PyErr_Occurred()) result = Py_NewRef(Py_None);
    free(map.keys), free(map.vals), free(live);
    free(pairs.data), free(first.data), free(e_lo.data), free(e_hi.data), free(e_to.data);
    free(todo.data), free(rev_first), free(rev), free(fill), free(stack.data), free(out.data);
    return result;
}
