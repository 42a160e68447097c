/* grammarc.lowering._lalr: LALR(1) parse tables that keep every conflict (the algorithm of
 * grammarc.lowering.lr.build_tables, which flattens a Bnf and calls `tables`).
 *
 * tables(n_terminals, n_nonterminals, lhs, rhs_start, rhs) -> seven bytes: `lhs` (one per
 * production), `rhs_start` (one more: production p's right-hand side is
 * rhs[rhs_start[p]:rhs_start[p + 1]]) and `rhs` are int32 buffers; symbols below n_terminals
 * are terminals, symbol n_terminals + k is nonterminal k; production 0 is the augmented start
 * S' -> S and the only production of nonterminal 0. Every input is checked (a ValueError
 * says what is wrong). The result is lr.LRTables' seven int32 arrays (_lrtables.h says their
 * shape): each state's transitions as found (terminals, then nonterminals, ascending), and
 * the reductions of its completed items in ascending item order (so by production), each
 * with its lookaheads ascending (EOF, -1, last: it sorts as terminal n_terminals); a
 * completed item without lookaheads has no reduction. lr.py's ACTION and GOTO views read
 * their canonical orders straight off these. check(...) refuses malformed arrays.
 *
 * The LR(0) automaton. Items are integers: production p's items are base[p] + dot. A
 * state's kernel is a sorted array of items; a hash table over the kernels finds a state
 * again. States are numbered in the order they are found: state 0 (the kernel {S' -> .S}),
 * then each state's successors by ascending symbol. A state's closure is the productions of
 * the nonterminals it predicts, found by a walk over "B's productions begin with C" with a
 * per-state stamp per nonterminal, so a nonterminal's productions are read once per state
 * that predicts it. The successors are the closure's items grouped by the symbol after their
 * dot (a counting sort by symbol, each group sorted and made unique). A state's transitions
 * are stored by ascending symbol, terminals first.
 *
 * Lookaheads: DeRemer and Pennello's (1982), with no ε-productions. For each nonterminal
 * transition (p, A): DR(p, A) = the terminals goto(p, A) shifts (a prefix of that state's
 * transitions, read in place, never copied); Read = DR, as nothing is nullable; (p, A)
 * includes (p', B) when B -> β A and p' --β--> p; Follow(p, A) = DR(p, A) and the Follow
 * of what it includes, found by the DIGRAPH traversal (Tarjan's strongly connected
 * components, iterative: a stack of frames, no recursion); the lookaheads of a completed item
 * B -> ω in state q are the union of Follow(p', B) over the transitions with p' --ω--> q
 * (lookback). EOF: a transition (0, S') holds it (the real one when S' is predicted in state
 * 0, otherwise a start node of its own), as the lookahead of S' -> .S seeded in state 0; since
 * S' has only production 0, that is exactly the lookahead the propagation algorithm gives it.
 * These are the LALR(1) sets: the same as lookaheads propagated to a fixed point (the
 * oracle in tests/lalr_reference.py, and the Python version this replaced). DeRemer-Pennello
 * over propagation: each relation is built once by walking productions from the transitions,
 * and each Follow set is made by one union, when the traversal has visited everything its
 * transition includes, with no worklist of deltas passed around.
 *
 * Sets of terminals are sorted int32 arrays shared by reference count, never bitsets: a
 * grammar with 100k terminals has small lookahead sets, and memory follows their sizes, never
 * states x terminals. A union of two sets is a merge; of more, each terminal gathered once
 * (a stamp per terminal) and sorted, so a union of k sets costs their sizes (plus the sort),
 * never k times the result's (100k one-terminal Follow sets meet in one state of the tests).
 * A union equal to its largest set is that set (chains of unit "includes" share one array),
 * and the members of a component share their root's. Memory: the grammar's items, the
 * automaton (kernels and transitions), the relations (one entry per production walked from a
 * nonterminal transition), the distinct Follow sets, and per-symbol scratch arrays; time: the
 * closures' sizes for the automaton, the walks for the relations (a binary search per step),
 * the unions' inputs for the sets, and the tables' cells. Arrays are bounded by INT32_MAX - 1
 * entries, so every index fits an int32 (a ValueError past that). Everything is freed on
 * every path.
 *
 * The tables are copied out of the builder's own arrays (the transitions as they are, the
 * reductions gathered per state): no Python object per cell, row or state. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_lrtables.h"

#define LIMIT ((size_t)INT32_MAX - 1)

static int too_large(void) {
    PyErr_SetString(PyExc_ValueError, "lalr: the grammar's automaton is too large");
    return -1;
}

/* A growing int32 array of at most LIMIT entries. */
typedef struct {
    int32_t *data;
    size_t len, cap;
} Buf;

static int grow(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    if (extra > LIMIT || b->len > LIMIT - extra) return too_large();
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    int32_t *data = realloc(b->data, cap * sizeof(int32_t));
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data, b->cap = cap;
    return 0;
}

static inline int push(Buf *b, int32_t x) {
    if (b->len == b->cap && grow(b, 1)) return -1;
    b->data[b->len++] = x;
    return 0;
}

/* n int32 (zeroed when `zero`), NULL with MemoryError. */
static int32_t *ints(size_t n, int zero) {
    size_t m = n ? n : 1;
    int32_t *p = n > SIZE_MAX / sizeof(int32_t) ? NULL : zero ? calloc(m, sizeof(int32_t))
                                                              : malloc(m * sizeof(int32_t));
    if (!p) PyErr_NoMemory();
    return p;
}

static int compare_ints(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void sort_ints(int32_t *a, size_t n) {
    if (n > 24) {
        qsort(a, n, sizeof(int32_t), compare_ints);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        int32_t x = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

/* The first index in a[lo, hi) holding a value >= x. */
static inline size_t lower_bound(const int32_t *a, size_t lo, size_t hi, int32_t x) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* A set of terminals: a sorted array, owned (freed with its last reference) or a view into
 * the transition table. */
typedef struct {
    int32_t *a;
    int32_t n, refs, owned;
} Set;

typedef struct {
    /* the grammar: T terminals, N nonterminals, P productions, I items */
    int32_t T, N, P, I;
    const int32_t *lhs, *rstart, *rhs;
    int32_t *base, *after, *prod; /* base[p]; the symbol after item i's dot (-1: complete), its production */
    int32_t *pstart, *prods;      /* nonterminal b's productions: prods[pstart[b]:pstart[b + 1]], ascending */
    /* the LR(0) automaton: S states, kernel s = kernel[kstart[s]:kstart[s + 1]], transitions
     * of s at [tstart[s], tstart[s + 1]) of tsym (ascending) and ttarget */
    int32_t S;
    Buf kernel, kstart, hashes, tsym, ttarget, tstart;
    int32_t *slots;
    size_t n_slots;
    /* scratch for the automaton */
    int32_t *mark, *symstamp, *symcount;
    Buf msym, mitem, todo, syms, grouped;
    /* lookaheads: a node per transition position (nonterminal ones used) and a start node */
    size_t nodes;
    int32_t start;
    Buf esrc, edst, lkpos, lnode;  /* includes edges (src includes dst); lookback (kernel position, node) */
    int32_t *estart, *edges, *lstart, *lnodes;
    int32_t *follow;               /* per node: a set index, or -1 (empty) */
    Set *sets;
    size_t n_sets, cap_sets;
    int32_t *low;                  /* DIGRAPH's N */
    Buf frames, stack, ids;        /* ids: the sets a union reads */
    int32_t *seen, stamp;          /* per terminal: the union that last took it */
    /* the tables' reductions: per state red_start, per reduction its production and la_start */
    Buf tmp, red_start, red_prod, la_start, las;
} Ctx;

static void ctx_free(Ctx *c) {
    free(c->base), free(c->after), free(c->prod), free(c->pstart), free(c->prods);
    Buf *bufs[] = {&c->kernel, &c->kstart, &c->hashes, &c->tsym, &c->ttarget, &c->tstart, &c->msym, &c->mitem,
                   &c->todo, &c->syms, &c->grouped, &c->esrc, &c->edst, &c->lkpos, &c->lnode, &c->frames,
                   &c->stack, &c->ids, &c->tmp, &c->red_start, &c->red_prod, &c->la_start, &c->las};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]->data);
    free(c->slots), free(c->mark), free(c->symstamp), free(c->symcount);
    free(c->estart), free(c->edges), free(c->lstart), free(c->lnodes), free(c->follow), free(c->low), free(c->seen);
    for (size_t i = 0; i < c->n_sets; i++)
        if (c->sets[i].owned) free(c->sets[i].a);
    free(c->sets);
}

/* ---- the grammar ---- */

static int grammar(Ctx *c) {
    size_t P = (size_t)c->P, I = (size_t)c->I, N = (size_t)c->N;
    if (!(c->base = ints(P, 0)) || !(c->after = ints(I, 0)) || !(c->prod = ints(I, 0)) ||
        !(c->pstart = ints(N + 1, 1)) || !(c->prods = ints(P, 0)))
        return -1;
    int32_t i = 0;
    for (int32_t p = 0; p < c->P; p++) {
        c->base[p] = i;
        for (int32_t r = c->rstart[p]; r < c->rstart[p + 1]; r++) c->prod[i] = p, c->after[i++] = c->rhs[r];
        c->prod[i] = p, c->after[i++] = -1;
        c->pstart[c->lhs[p] + 1]++;
    }
    for (size_t b = 0; b < N; b++) c->pstart[b + 1] += c->pstart[b];
    int32_t *fill = ints(N, 0);
    if (!fill) return -1;
    memcpy(fill, c->pstart, N * sizeof(int32_t));
    for (int32_t p = 0; p < c->P; p++) c->prods[fill[c->lhs[p]]++] = p;
    free(fill);
    return 0;
}

/* ---- the LR(0) automaton ---- */

static uint32_t hash_items(const int32_t *a, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint32_t)a[i]) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    return (uint32_t)h;
}

static int rehash(Ctx *c) {
    size_t cap = c->n_slots ? 2 * c->n_slots : 256;
    if (cap > SIZE_MAX / sizeof(int32_t)) return too_large();
    int32_t *slots = malloc(cap * sizeof(int32_t));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slots, 0xFF, cap * sizeof(int32_t));
    for (int32_t s = 0; s < c->S; s++) {
        size_t j = (uint32_t)c->hashes.data[s] & (cap - 1);
        while (slots[j] >= 0) j = (j + 1) & (cap - 1);
        slots[j] = s;
    }
    free(c->slots);
    c->slots = slots, c->n_slots = cap;
    return 0;
}

/* The state whose kernel is items[0:n] (sorted, unique), made if new; -1 with an error. */
static int32_t state_of(Ctx *c, const int32_t *items, size_t n) {
    uint32_t h = hash_items(items, n);
    if (2 * ((size_t)c->S + 1) > c->n_slots && rehash(c)) return -1;
    size_t j = h & (c->n_slots - 1);
    for (int32_t s; (s = c->slots[j]) >= 0; j = (j + 1) & (c->n_slots - 1)) {
        size_t at = (size_t)c->kstart.data[s], len = (size_t)c->kstart.data[s + 1] - at;
        if ((uint32_t)c->hashes.data[s] == h && len == n && !memcmp(c->kernel.data + at, items, n * sizeof(int32_t)))
            return s;
    }
    if ((size_t)c->S >= LIMIT - 1) return too_large();
    if (grow(&c->kernel, n) || push(&c->kstart, 0) || push(&c->hashes, (int32_t)h)) return -1;
    memcpy(c->kernel.data + c->kernel.len, items, n * sizeof(int32_t));
    c->kernel.len += n;
    c->kstart.data[c->kstart.len - 1] = (int32_t)c->kernel.len;
    c->slots[j] = c->S;
    return c->S++;
}

/* One move of state `stamp - 1`'s closure: item - 1 has `sym` after its dot; a nonterminal
 * not yet predicted is queued. */
static inline int move(Ctx *c, int32_t sym, int32_t item, int32_t stamp) {
    if (push(&c->msym, sym) || push(&c->mitem, item)) return -1;
    if (sym >= c->T && c->mark[sym - c->T] != stamp) {
        c->mark[sym - c->T] = stamp;
        if (push(&c->todo, sym - c->T)) return -1;
    }
    return 0;
}

static int automaton(Ctx *c) {
    size_t n_symbols = (size_t)c->T + (size_t)c->N;
    if (!(c->mark = ints((size_t)c->N, 1)) || !(c->symstamp = ints(n_symbols, 1)) ||
        !(c->symcount = ints(n_symbols, 0)))
        return -1;
    if (push(&c->kstart, 0) || push(&c->tstart, 0) || state_of(c, c->base, 1) < 0) return -1;
    for (int32_t s = 0; s < c->S; s++) {
        int32_t stamp = s + 1;
        c->msym.len = c->mitem.len = c->todo.len = c->syms.len = 0;
        for (int32_t k = c->kstart.data[s]; k < c->kstart.data[s + 1]; k++) {
            int32_t i = c->kernel.data[k];
            if (c->after[i] >= 0 && move(c, c->after[i], i + 1, stamp)) return -1;
        }
        while (c->todo.len) {
            int32_t b = c->todo.data[--c->todo.len];
            for (int32_t q = c->pstart[b]; q < c->pstart[b + 1]; q++) {
                int32_t i = c->base[c->prods[q]];
                if (move(c, c->after[i], i + 1, stamp)) return -1;
            }
        }
        /* group the moved items by symbol: a counting sort over the symbols seen */
        for (size_t m = 0; m < c->msym.len; m++) {
            int32_t sym = c->msym.data[m];
            if (c->symstamp[sym] != stamp) {
                c->symstamp[sym] = stamp, c->symcount[sym] = 0;
                if (push(&c->syms, sym)) return -1;
            }
            c->symcount[sym]++;
        }
        sort_ints(c->syms.data, c->syms.len);
        int32_t at = 0;
        for (size_t k = 0; k < c->syms.len; k++) {
            int32_t sym = c->syms.data[k], n = c->symcount[sym];
            c->symcount[sym] = at, at += n;
        }
        c->grouped.len = 0;
        if (grow(&c->grouped, c->msym.len)) return -1;
        for (size_t m = 0; m < c->msym.len; m++) c->grouped.data[c->symcount[c->msym.data[m]]++] = c->mitem.data[m];
        size_t from = 0;
        for (size_t k = 0; k < c->syms.len; k++) {
            int32_t sym = c->syms.data[k], *g = c->grouped.data + from;
            size_t to = (size_t)c->symcount[sym], n = 0;
            sort_ints(g, to - from);
            for (size_t m = 0; m < to - from; m++)
                if (!n || g[m] != g[n - 1]) g[n++] = g[m];
            int32_t target = state_of(c, g, n);
            if (target < 0 || push(&c->tsym, sym) || push(&c->ttarget, target)) return -1;
            from = to;
        }
        if (push(&c->tstart, (int32_t)c->tsym.len)) return -1;
    }
    return 0;
}

/* The position of state s's transition on `sym`, or -1. */
static inline int32_t transition(const Ctx *c, int32_t s, int32_t sym) {
    size_t hi = (size_t)c->tstart.data[s + 1], j = lower_bound(c->tsym.data, (size_t)c->tstart.data[s], hi, sym);
    return j < hi && c->tsym.data[j] == sym ? (int32_t)j : -1;
}

static int broken(void) {
    PyErr_SetString(PyExc_SystemError, "lalr: a walk left the automaton");
    return -1;
}

/* ---- the relations: includes and lookback, by walking each production from each
 * nonterminal transition ---- */

/* Nonterminal b's productions walked from state `from`, whose transition on b is `node`: B ->
 * β A with p --β--> q makes (q, A) include the node; the state each walk ends in looks back
 * to the node for the completed item. */
static int walk(Ctx *c, int32_t from, int32_t b, int32_t node) {
    for (int32_t q = c->pstart[b]; q < c->pstart[b + 1]; q++) {
        int32_t p = c->prods[q], state = from, r1 = c->rstart[p + 1];
        for (int32_t r = c->rstart[p]; r < r1; r++) {
            int32_t t = transition(c, state, c->rhs[r]);
            if (t < 0) return broken();
            if (r == r1 - 1 && c->rhs[r] >= c->T && (push(&c->esrc, t) || push(&c->edst, node))) return -1;
            state = c->ttarget.data[t];
        }
        size_t k0 = (size_t)c->kstart.data[state], k1 = (size_t)c->kstart.data[state + 1];
        int32_t done = c->base[p] + (r1 - c->rstart[p]);
        size_t k = lower_bound(c->kernel.data, k0, k1, done);
        if (k == k1 || c->kernel.data[k] != done) return broken();
        if (push(&c->lkpos, (int32_t)k) || push(&c->lnode, node)) return -1;
    }
    return 0;
}

/* Nodes: one per transition position (the nonterminal ones are used), and one more for (0, S')
 * when S' is not predicted in state 0 (S' -> .S is state 0's kernel, not a prediction). */
static int relations(Ctx *c) {
    size_t n_trans = c->tsym.len;
    int32_t real = transition(c, 0, c->T);
    c->nodes = n_trans + 1;
    c->start = real >= 0 ? real : (int32_t)n_trans;
    for (int32_t s = 0; s < c->S; s++) {
        int32_t j = (int32_t)lower_bound(c->tsym.data, (size_t)c->tstart.data[s], (size_t)c->tstart.data[s + 1], c->T);
        for (; j < c->tstart.data[s + 1]; j++)
            if (walk(c, s, c->tsym.data[j] - c->T, j)) return -1;
    }
    return real < 0 ? walk(c, 0, 0, c->start) : 0;
}

/* CSR of pairs (key[i], value[i]) by key in [0, n_keys): start (n_keys + 1) and values. */
static int csr(const Buf *key, const Buf *value, size_t n_keys, int32_t **start, int32_t **out) {
    if (!(*start = ints(n_keys + 1, 1)) || !(*out = ints(key->len, 0))) return -1;
    for (size_t i = 0; i < key->len; i++) (*start)[key->data[i] + 1]++;
    for (size_t k = 0; k < n_keys; k++) (*start)[k + 1] += (*start)[k];
    for (size_t i = 0; i < key->len; i++) (*out)[(*start)[key->data[i]]++] = value->data[i];
    for (size_t k = n_keys; k > 0; k--) (*start)[k] = (*start)[k - 1];
    (*start)[0] = 0;
    return 0;
}

/* ---- sets ---- */

static int32_t new_set(Ctx *c, int32_t *a, int32_t n, int32_t owned) {
    if (c->n_sets == c->cap_sets) {
        size_t cap = c->cap_sets ? 2 * c->cap_sets : 256;
        if (cap > LIMIT || cap > SIZE_MAX / sizeof(Set)) return too_large();
        Set *sets = realloc(c->sets, cap * sizeof(Set));
        if (!sets) {
            PyErr_NoMemory();
            return -1;
        }
        c->sets = sets, c->cap_sets = cap;
    }
    c->sets[c->n_sets] = (Set){a, n, 1, owned};
    return (int32_t)c->n_sets++;
}

static void release(Ctx *c, int32_t set) {
    if (set >= 0 && --c->sets[set].refs == 0 && c->sets[set].owned) free(c->sets[set].a), c->sets[set].a = NULL;
}

static void share(Ctx *c, int32_t x, int32_t set) { /* follow[x] = set */
    if (set >= 0) c->sets[set].refs++;
    release(c, c->follow[x]);
    c->follow[x] = set;
}

/* The union of the sets c->ids holds (set indices, -1: empty): the index of a set equal to it
 * (-1: empty), or -2 with the union in c->tmp; -3 with an error. Two sets are merged; more
 * are gathered (each terminal once, by a stamp) and sorted, so a union of k sets costs their
 * sizes, never k times the result's. A union equal to its largest set is that set. */
static int32_t unite(Ctx *c) {
    int32_t *ids = c->ids.data, big = -1;
    size_t k = 0;
    sort_ints(ids, c->ids.len);
    for (size_t i = 0; i < c->ids.len; i++)
        if (ids[i] >= 0 && (!k || ids[i] != ids[k - 1])) {
            ids[k++] = ids[i];
            if (big < 0 || c->sets[ids[i]].n > c->sets[big].n) big = ids[i];
        }
    if (k < 2) return big;
    size_t total = 0;
    for (size_t i = 0; i < k; i++) total += (size_t)c->sets[ids[i]].n;
    c->tmp.len = 0;
    if (grow(&c->tmp, total)) return -3;
    int32_t *m = c->tmp.data;
    size_t n = 0;
    if (k == 2) {
        const int32_t *a = c->sets[ids[0]].a, *b = c->sets[ids[1]].a;
        size_t na = (size_t)c->sets[ids[0]].n, nb = (size_t)c->sets[ids[1]].n, i = 0, j = 0;
        while (i < na || j < nb) {
            if (j == nb || (i < na && a[i] < b[j])) m[n++] = a[i++];
            else if (i == na || b[j] < a[i]) m[n++] = b[j++];
            else m[n++] = a[i++], j++;
        }
    } else {
        if (c->stamp == INT32_MAX) memset(c->seen, 0, ((size_t)c->T + 1) * sizeof(int32_t)), c->stamp = 0;
        int32_t stamp = ++c->stamp;
        for (size_t i = 0; i < k; i++)
            for (int32_t j = 0; j < c->sets[ids[i]].n; j++) {
                int32_t t = c->sets[ids[i]].a[j];
                if (c->seen[t] != stamp) c->seen[t] = stamp, m[n++] = t;
            }
        sort_ints(m, n);
    }
    c->tmp.len = n;
    return n == (size_t)c->sets[big].n ? big : -2;
}

/* Follow of every nonterminal transition: DR, then DIGRAPH over includes. */
static int follows(Ctx *c) {
    size_t nodes = c->nodes;
    if (!(c->follow = ints(nodes, 0)) || !(c->low = ints(nodes, 1)) || !(c->seen = ints((size_t)c->T + 1, 1)))
        return -1;
    for (size_t x = 0; x < nodes; x++) c->follow[x] = -1;
    for (int32_t s = 0; s < c->S; s++) {
        int32_t j = (int32_t)lower_bound(c->tsym.data, (size_t)c->tstart.data[s], (size_t)c->tstart.data[s + 1], c->T);
        for (; j < c->tstart.data[s + 1]; j++) {
            int32_t t = c->ttarget.data[j], from = c->tstart.data[t];
            int32_t n = (int32_t)lower_bound(c->tsym.data, (size_t)from, (size_t)c->tstart.data[t + 1], c->T) - from;
            if (n && (c->follow[j] = new_set(c, c->tsym.data + from, n, 0)) < 0) return -1;
        }
    }
    /* the start node's: its DR and EOF */
    int32_t old = c->follow[c->start], n = old < 0 ? 0 : c->sets[old].n;
    int32_t *a = ints((size_t)n + 1, 0);
    if (!a) return -1;
    if (n) memcpy(a, c->sets[old].a, (size_t)n * sizeof(int32_t));
    a[n] = c->T;
    int32_t set = new_set(c, a, n + 1, 1);
    if (set < 0) {
        free(a);
        return -1;
    }
    release(c, old);
    c->follow[c->start] = set;
    /* DIGRAPH: frames of (node, next edge, depth); a node's unions wait until all it
     * includes are traversed, then happen at once */
    for (size_t root = 0; root < nodes; root++) {
        if (c->low[root] || (root < c->tsym.len && c->tsym.data[root] < c->T)) continue;
        c->stack.len = c->frames.len = 0;
        if (push(&c->stack, (int32_t)root) || push(&c->frames, (int32_t)root) || push(&c->frames, c->estart[root]) ||
            push(&c->frames, 1))
            return -1;
        c->low[root] = 1;
        while (c->frames.len) {
            int32_t *f = c->frames.data + c->frames.len - 3, v = f[0];
            while (f[1] < c->estart[v + 1] && c->low[c->edges[f[1]]]) f[1]++;
            if (f[1] < c->estart[v + 1]) { /* traverse an unvisited node v includes */
                int32_t y = c->edges[f[1]++], depth = (int32_t)c->stack.len + 1;
                c->low[y] = depth;
                if (push(&c->stack, y) || push(&c->frames, y) || push(&c->frames, c->estart[y]) ||
                    push(&c->frames, depth))
                    return -1;
                continue;
            }
            int32_t depth = f[2];
            c->frames.len -= 3;
            c->ids.len = 0;
            if (push(&c->ids, c->follow[v])) return -1;
            for (int32_t e = c->estart[v]; e < c->estart[v + 1]; e++) {
                int32_t y = c->edges[e];
                if (c->low[y] < c->low[v]) c->low[v] = c->low[y];
                if (push(&c->ids, c->follow[y])) return -1;
            }
            int32_t same = unite(c);
            if (same == -3) return -1;
            if (same == -2) {
                int32_t *u = ints(c->tmp.len, 0), made;
                if (!u) return -1;
                memcpy(u, c->tmp.data, c->tmp.len * sizeof(int32_t));
                if ((made = new_set(c, u, (int32_t)c->tmp.len, 1)) < 0) {
                    free(u);
                    return -1;
                }
                release(c, c->follow[v]);
                c->follow[v] = made;
            } else if (same != c->follow[v])
                share(c, (int32_t)v, same);
            if (c->low[v] == depth) { /* v roots a component: its members take its set */
                int32_t w;
                do {
                    w = c->stack.data[--c->stack.len];
                    c->low[w] = INT32_MAX;
                    if (w != v) share(c, w, c->follow[v]);
                } while (w != v);
            }
        }
    }
    return 0;
}

/* ---- the tables ---- */

/* The lookaheads of kernel position k's completed item (the union of the Follow sets of its
 * lookback transitions), appended to c->las, EOF (terminal T, the last) as -1. */
static int lookaheads(Ctx *c, int32_t k) {
    c->ids.len = 0;
    for (int32_t e = c->lstart[k]; e < c->lstart[k + 1]; e++)
        if (push(&c->ids, c->follow[c->lnodes[e]])) return -1;
    int32_t same = unite(c);
    if (same == -3) return -1;
    const int32_t *a = same >= 0 ? c->sets[same].a : c->tmp.data;
    size_t n = same >= 0 ? (size_t)c->sets[same].n : same == -2 ? c->tmp.len : 0;
    if (grow(&c->las, n)) return -1;
    if (n) memcpy(c->las.data + c->las.len, a, n * sizeof(int32_t));
    c->las.len += n;
    if (n && c->las.data[c->las.len - 1] == c->T) c->las.data[c->las.len - 1] = -1;
    return 0;
}

/* The reductions of every state: its completed kernel items by ascending item (so by
 * production), each with its lookaheads (none: no reduction). */
static int reductions(Ctx *c) {
    if (push(&c->red_start, 0) || push(&c->la_start, 0)) return -1;
    for (int32_t q = 0; q < c->S; q++) {
        for (int32_t k = c->kstart.data[q]; k < c->kstart.data[q + 1]; k++) {
            int32_t item = c->kernel.data[k];
            if (c->after[item] >= 0) continue;
            size_t at = c->las.len;
            if (lookaheads(c, k)) return -1;
            if (c->las.len > at && (push(&c->red_prod, c->prod[item]) || push(&c->la_start, (int32_t)c->las.len)))
                return -1;
        }
        if (push(&c->red_start, (int32_t)c->red_prod.len)) return -1;
    }
    return 0;
}

/* A new bytes object holding a[0:n] (made empty, then filled: never a shared one written). */
static PyObject *bytes_of(const int32_t *a, size_t n) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int32_t)));
    if (b && n) memcpy(PyBytes_AS_STRING(b), a, n * sizeof(int32_t));
    return b;
}

static PyObject *build(Ctx *c) {
    if (grammar(c) || automaton(c) || relations(c)) return NULL;
    if (csr(&c->esrc, &c->edst, c->nodes, &c->estart, &c->edges) ||
        csr(&c->lkpos, &c->lnode, c->kernel.len, &c->lstart, &c->lnodes))
        return NULL;
    Buf *pairs[] = {&c->esrc, &c->edst, &c->lkpos, &c->lnode}; /* in the CSR arrays now */
    for (int k = 0; k < 4; k++) free(pairs[k]->data), *pairs[k] = (Buf){0};
    if (follows(c) || reductions(c)) return NULL;
    const Buf *out[] = {&c->tstart, &c->tsym, &c->ttarget, &c->red_start, &c->red_prod, &c->la_start, &c->las};
    PyObject *result = PyTuple_New(7);
    for (Py_ssize_t i = 0; result && i < 7; i++) {
        PyObject *b = bytes_of(out[i]->data, out[i]->len);
        if (!b) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, i, b);
    }
    return result;
}

/* ---- the entry point: the inputs checked ---- */

static const int32_t *int32s(Py_buffer *b, const char *name, Py_ssize_t *n) {
    if (b->len % (Py_ssize_t)sizeof(int32_t)) {
        PyErr_Format(PyExc_ValueError, "lalr: %s is not an array of 4-byte items", name);
        return NULL;
    }
    *n = b->len / (Py_ssize_t)sizeof(int32_t);
    return b->buf;
}

static int check(Ctx *c, Py_ssize_t T, Py_ssize_t N, Py_buffer *lhs_b, Py_buffer *starts_b, Py_buffer *rhs_b) {
    Py_ssize_t P, n_starts, n_rhs;
    const int32_t *lhs = int32s(lhs_b, "lhs", &P), *starts, *rhs;
    if (!lhs || !(starts = int32s(starts_b, "rhs_start", &n_starts)) || !(rhs = int32s(rhs_b, "rhs", &n_rhs)))
        return -1;
    if (T < 0 || N < 1) {
        PyErr_Format(PyExc_ValueError, "lalr: %zd terminals and %zd nonterminals (at least 0 and 1)", T, N);
        return -1;
    }
    if (T > (Py_ssize_t)LIMIT - 1 - N) {
        PyErr_SetString(PyExc_ValueError, "lalr: too many symbols");
        return -1;
    }
    if (P < 1) {
        PyErr_SetString(PyExc_ValueError, "lalr: no productions (production 0 must be the start, S' -> S)");
        return -1;
    }
    if (n_starts != P + 1) {
        PyErr_Format(PyExc_ValueError, "lalr: %zd productions need %zd rhs_start entries, not %zd", P, P + 1, n_starts);
        return -1;
    }
    if (n_rhs > (Py_ssize_t)LIMIT - P) {
        PyErr_SetString(PyExc_ValueError, "lalr: too many items");
        return -1;
    }
    if (starts[0] != 0 || starts[P] != n_rhs) {
        PyErr_Format(PyExc_ValueError, "lalr: rhs_start runs from %d to %d, not from 0 to len(rhs) = %zd",
                     (int)starts[0],
                     (int)starts[P], n_rhs);
        return -1;
    }
    for (Py_ssize_t p = 0; p < P; p++) {
        if (starts[p + 1] <= starts[p]) {
            if (starts[p + 1] < starts[p])
                PyErr_Format(PyExc_ValueError, "lalr: rhs_start decreases after production %zd", p);
            else
                PyErr_Format(PyExc_ValueError, "lalr: production %zd has an empty right-hand side", p);
            return -1;
        }
        if (lhs[p] < 0 || lhs[p] >= N) {
            PyErr_Format(PyExc_ValueError, "lalr: production %zd has left-hand side %d, not one of 0..%zd", p,
                         (int)lhs[p],
                         N - 1);
            return -1;
        }
        if (p == 0 && lhs[0] != 0) {
            PyErr_Format(PyExc_ValueError, "lalr: production 0 has left-hand side %d, not 0 (the start, S')",
                         (int)lhs[0]);
            return -1;
        }
        if (p > 0 && lhs[p] == 0) {
            PyErr_Format(PyExc_ValueError,
                         "lalr: production %zd has left-hand side 0, the start's, which only production 0 may have", p);
            return -1;
        }
    }
    for (Py_ssize_t p = 0; p < P; p++) /* starts ascend from 0 to n_rhs: every r is within rhs */
        for (int32_t r = starts[p]; r < starts[p + 1]; r++)
            if (rhs[r] < 0 || rhs[r] >= T + N) {
                PyErr_Format(PyExc_ValueError, "lalr: production %zd has symbol %d, not one of 0..%zd", p, (int)rhs[r],
                             T + N - 1);
                return -1;
            }
    c->T = (int32_t)T, c->N = (int32_t)N, c->P = (int32_t)P, c->I = (int32_t)(n_rhs + P);
    c->lhs = lhs, c->rstart = starts, c->rhs = rhs;
    return 0;
}

static PyObject *tables(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t T, N;
    Py_buffer lhs = {0}, starts = {0}, rhs = {0};
    if (!PyArg_ParseTuple(args, "nny*y*y*", &T, &N, &lhs, &starts, &rhs)) return NULL;
    Ctx c = {0};
    PyObject *result = check(&c, T, N, &lhs, &starts, &rhs) ? NULL : build(&c);
    ctx_free(&c);
    PyBuffer_Release(&lhs), PyBuffer_Release(&starts), PyBuffer_Release(&rhs);
    return result;
}

/* check(n_terminals, n_productions, *seven int32 arrays) -> None, or a ValueError saying what is
 * wrong (_lrtables.h: the parser core runs the same check). */
static PyObject *check_tables(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t T, P;
    Py_buffer b[LR_ARRAYS] = {{0}};
    LrArray x[LR_ARRAYS];
    if (!PyArg_ParseTuple(args, "nny*y*y*y*y*y*y*", &T, &P, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6]))
        return NULL;
    PyObject *result = NULL;
    if (!lr_arrays_of(b, x)) {
        const char *error = lr_tables_error(x, T, P);
        if (error) PyErr_Format(PyExc_ValueError, "lalr: %s", error);
        else result = Py_NewRef(Py_None);
    }
    for (int i = 0; i < LR_ARRAYS; i++) PyBuffer_Release(&b[i]);
    return result;
}

PyObject *py_sccs(PyObject *self, PyObject *args);      /* _bnf.c */
PyObject *py_derivers(PyObject *self, PyObject *args);  /* _bnf.c */
PyObject *py_normalize(PyObject *self, PyObject *args); /* _bnf.c */

static PyMethodDef methods[] = {
    {"tables", tables, METH_VARARGS, "LALR(1) tables of a flattened grammar, as seven int32 arrays (see the module's comment)."},
    {"check", check_tables, METH_VARARGS, "Refuse malformed flat LR tables (see _lrtables.h)."},
    {"sccs", py_sccs, METH_VARARGS, "Strongly connected components, sinks first (see _bnf.c)."},
    {"derivers", py_derivers, METH_VARARGS, "The nonterminals deriving a string of usable terminals (see _bnf.c)."},
    {"normalize", py_normalize, METH_VARARGS, "The BNF made ε-free, cycle-free, trimmed, renumbered (see _bnf.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lalr", "LALR(1) parse tables.", -1, methods};

PyMODINIT_FUNC PyInit__lalr(void) { return PyModule_Create(&module); }
