/* grammarc.lowering._lalr, part 3: the BNF normalisation of grammarc.lowering.bnf, over the
 * lowering's productions flattened as the tables take them (lhs [p], starts [p + 1], rhs:
 * int32; a symbol t >= 0 is a terminal, ~j < 0 the nonterminal j).
 *
 * sccs      - Tarjan's strongly connected components, iteratively, sinks first: the same
 *             components in the same order as the recursive definition visits them, roots in
 *             the order given, successors in their order.
 * derivers  - the nonterminals that derive some string whose terminals are all usable (the
 *             least fixed point, by a worklist: linear in the grammar however long its chains).
 * normalize - ε removal (each nullable occurrence made optional, a production with more than
 *             two first cut into a right-nested chain through a new "#rest" nonterminal),
 *             cycles of unit productions collapsed (their rules derive the same language),
 *             and what the start reaches renumbered, terminals first.
 *
 * In Python these were a tenth of compiling a never-seen JSON Schema; the Python versions are
 * the oracle (tests/bnf_reference.py, tests/test_bnf.py).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t i32;

/* ------------------------------------------------------------------ growable arrays */

typedef struct { i32 *at; Py_ssize_t n, cap; } Ints;

static int ints_push(Ints *a, i32 x)
{
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 64;
        i32 *more = realloc(a->at, (size_t)cap * sizeof(i32));
        if (!more) { PyErr_NoMemory(); return -1; }
        a->at = more;
        a->cap = cap;
    }
    a->at[a->n++] = x;
    return 0;
}

/* Productions: production i is lhs.at[i] -> sym.at[start.at[i] .. start.at[i + 1]). */
typedef struct { Ints lhs, start, sym; } Prods;

static void prods_free(Prods *p) { free(p->lhs.at); free(p->start.at); free(p->sym.at); }

static Py_ssize_t prod_len(const Prods *p, Py_ssize_t i) { return p->start.at[i + 1] - p->start.at[i]; }

static const i32 *prod_rhs(const Prods *p, Py_ssize_t i) { return p->sym.at + p->start.at[i]; }

/* Append lhs -> rhs[0 .. len) (rhs must not point into p). */
static int prods_push(Prods *p, i32 lhs, const i32 *rhs, Py_ssize_t len)
{
    if (!p->start.n && ints_push(&p->start, 0) < 0) return -1;
    if (ints_push(&p->lhs, lhs) < 0) return -1;
    for (Py_ssize_t k = 0; k < len; k++)
        if (ints_push(&p->sym, rhs[k]) < 0) return -1;
    return ints_push(&p->start, (i32)p->sym.n);
}

/* A set of productions by value, for the ones a Prods holds: open addressing over indices. */
typedef struct { Py_ssize_t *slot, size, count; } ProdSet;

static uint64_t prod_hash(i32 lhs, const i32 *rhs, Py_ssize_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint32_t)lhs;
    for (Py_ssize_t k = 0; k < len; k++) h = (h ^ (uint32_t)rhs[k]) * 0x100000001b3ull;
    return (h ^ (uint64_t)len) * 0x9E3779B97F4A7C15ull;
}

/* Append lhs -> rhs to `p` unless `p` holds it already (through `set`, which indexes p). */
static int add_new(ProdSet *s, Prods *p, i32 lhs, const i32 *rhs, Py_ssize_t len)
{
    if (2 * (s->count + 1) > s->size) {  /* grow, and index what p holds again */
        Py_ssize_t size = s->size ? 2 * s->size : 256;
        Py_ssize_t *slot = calloc((size_t)size, sizeof(Py_ssize_t));
        if (!slot) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < p->lhs.n; i++) {
            uint64_t h = prod_hash(p->lhs.at[i], prod_rhs(p, i), prod_len(p, i));
            Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(size - 1));
            while (slot[j]) j = (j + 1) & (size - 1);
            slot[j] = i + 1;
        }
        free(s->slot);
        s->slot = slot;
        s->size = size;
    }
    uint64_t h = prod_hash(lhs, rhs, len);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(s->size - 1));
    for (; s->slot[j]; j = (j + 1) & (s->size - 1)) {
        Py_ssize_t i = s->slot[j] - 1;
        if (p->lhs.at[i] == lhs && prod_len(p, i) == len && !memcmp(prod_rhs(p, i), rhs, (size_t)len * sizeof(i32)))
            return 0;
    }
    s->slot[j] = p->lhs.n + 1;
    s->count++;
    return prods_push(p, lhs, rhs, len);
}

/* ------------------------------------------------------------------ sccs */

/* Components of the graph over nodes 0..n-1 (successors of v: succ[first[v] .. first[v + 1])),
 * from the roots in order: members in `members` (each component in the order it is popped),
 * `ends` the end of each in it. */
static int tarjan(Py_ssize_t n, const i32 *first, const i32 *succ, const i32 *roots, Py_ssize_t n_roots,
                  Ints *members, Ints *ends)
{
    i32 *index = malloc((size_t)n * sizeof(i32) + 1), *low = malloc((size_t)n * sizeof(i32) + 1);
    i32 *stack = malloc((size_t)n * sizeof(i32) + 1), *work = malloc((size_t)n * sizeof(i32) + 1);
    i32 *next = malloc((size_t)n * sizeof(i32) + 1);  /* per node on `work`: its next successor's position */
    char *on_stack = calloc((size_t)n + 1, 1);
    int failed = -1;
    if (!index || !low || !stack || !work || !next || !on_stack) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t v = 0; v < n; v++) index[v] = -1;
    i32 counter = 0;
    Py_ssize_t sp = 0, wp = 0;
    for (Py_ssize_t r = 0; r < n_roots; r++) {
        i32 root = roots[r];
        if (index[root] >= 0) continue;
        index[root] = low[root] = counter++;
        stack[sp++] = root;
        on_stack[root] = 1;
        work[wp++] = root;
        next[root] = first[root];
        while (wp) {
            i32 v = work[wp - 1];
            int advanced = 0;
            while (next[v] < first[v + 1]) {
                i32 w = succ[next[v]++];
                if (index[w] < 0) {
                    index[w] = low[w] = counter++;
                    stack[sp++] = w;
                    on_stack[w] = 1;
                    work[wp++] = w;
                    next[w] = first[w];
                    advanced = 1;
                    break;
                }
                if (on_stack[w] && index[w] < low[v]) low[v] = index[w];
            }
            if (advanced) continue;
            wp--;
            if (wp && low[v] < low[work[wp - 1]]) low[work[wp - 1]] = low[v];
            if (low[v] == index[v]) {
                i32 w;
                do {
                    w = stack[--sp];
                    on_stack[w] = 0;
                    if (ints_push(members, w) < 0) goto done;
                } while (w != v);
                if (ints_push(ends, (i32)members->n) < 0) goto done;
            }
        }
    }
    failed = 0;
done:
    free(index); free(low); free(stack); free(work); free(next); free(on_stack);
    return failed;
}

/* ------------------------------------------------------------------ derivers */

/* found[j] for nonterminals j < n_nt: j derives a string of usable terminals (t < n_usable
 * with usable[t]); NULL with an exception set on error. */
static uint8_t *derive(const Prods *p, Py_ssize_t n_nt, const uint8_t *usable, Py_ssize_t n_usable)
{
    Py_ssize_t np = p->lhs.n;
    uint8_t *found = calloc((size_t)n_nt + 1, 1);
    i32 *unknown = malloc((size_t)np * sizeof(i32) + 1), *first = calloc((size_t)n_nt + 2, sizeof(i32));
    i32 *uses = malloc((size_t)p->sym.n * sizeof(i32) + 1), *queue = malloc((size_t)(np + n_nt) * sizeof(i32) + 1);
    Py_ssize_t nq = 0;
    if (!found || !unknown || !first || !uses || !queue) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t i = 0; i < np; i++) {  /* per production, its nonterminal occurrences not found yet */
        i32 count = 0;
        for (const i32 *s = prod_rhs(p, i), *end = s + prod_len(p, i); s < end; s++) {
            if (*s < 0) count++;
            else if (*s >= n_usable || !usable[*s]) { count = -1; break; }
        }
        unknown[i] = count;
        if (count == 0) queue[nq++] = p->lhs.at[i];
        for (const i32 *s = prod_rhs(p, i), *end = s + prod_len(p, i); s < end && count > 0; s++)
            if (*s < 0) first[~*s + 1]++;
    }
    for (Py_ssize_t j = 0; j < n_nt; j++) first[j + 1] += first[j];
    for (Py_ssize_t i = 0; i < np; i++) {  /* uses[first[j] ..]: the productions using j, once per use */
        if (unknown[i] <= 0) continue;
        for (const i32 *s = prod_rhs(p, i), *end = s + prod_len(p, i); s < end; s++)
            if (*s < 0) uses[first[~*s]++] = (i32)i;
    }
    for (Py_ssize_t j = n_nt; j > 0; j--) first[j] = first[j - 1];
    first[0] = 0;
    while (nq) {
        i32 nt = queue[--nq];
        if (found[nt]) continue;
        found[nt] = 1;
        for (i32 k = first[nt]; k < first[nt + 1]; k++) {
            i32 i = uses[k];
            if (unknown[i] > 0 && --unknown[i] == 0) queue[nq++] = p->lhs.at[i];
        }
    }
    free(unknown); free(first); free(uses); free(queue);
    return found;
fail:
    free(found); free(unknown); free(first); free(uses); free(queue);
    return NULL;
}

/* ------------------------------------------------------------------ normalize */

/* ε removal: the productions of `in` without ε (new "#rest" nonterminals numbered from
 * *n_names on, each one's owner appended to `rest_of`); `nullable` grows with them. */
static int remove_epsilon(const Prods *in, uint8_t **nullable, Py_ssize_t *n_names, Ints *rest_of, Prods *out)
{
    Prods pending = {0};
    ProdSet seen = {0};
    Ints cur = {0}, variant = {0};
    i32 optional[3];
    int failed = -1;
    for (Py_ssize_t i = 0; i < in->lhs.n; i++)
        if (prods_push(&pending, in->lhs.at[i], prod_rhs(in, i), prod_len(in, i)) < 0) goto done;
    for (Py_ssize_t head = 0; head < pending.lhs.n; head++) {
        i32 lhs = pending.lhs.at[head];
        Py_ssize_t len = prod_len(&pending, head), n_opt = 0;
        cur.n = 0;  /* a copy: pushing to pending may move its symbols */
        for (Py_ssize_t k = 0; k < len; k++)
            if (ints_push(&cur, prod_rhs(&pending, head)[k]) < 0) goto done;
        const i32 *rhs = cur.at;
        for (Py_ssize_t k = 0; k < len && n_opt < 3; k++)
            if (rhs[k] < 0 && (*nullable)[~rhs[k]]) optional[n_opt++] = (i32)k;
        if (n_opt > 2 && len > 2) {  /* lhs -> rhs[0] rest; rest -> rhs[1:] */
            i32 nt = (i32)(*n_names)++;
            uint8_t *grown = realloc(*nullable, (size_t)*n_names);
            if (!grown) { PyErr_NoMemory(); goto done; }
            *nullable = grown;
            int all = 1;
            for (Py_ssize_t k = 1; k < len && all; k++) all = rhs[k] < 0 && grown[~rhs[k]];
            grown[nt] = (uint8_t)all;
            i32 head_pair[2] = {rhs[0], ~nt};
            if (ints_push(rest_of, lhs) < 0 || prods_push(&pending, lhs, head_pair, 2) < 0
                || prods_push(&pending, nt, rhs + 1, len - 1) < 0)
                goto done;
            continue;
        }
        if (!n_opt) {  /* most productions: the one variant is the production itself (none if empty) */
            if (len && add_new(&seen, out, lhs, rhs, len) < 0) goto done;
            continue;
        }
        for (i32 mask = 0; mask < (1 << n_opt); mask++) {  /* at most 2 optional here: 3 would have been cut */
            variant.n = 0;
            for (Py_ssize_t k = 0, o = 0; k < len; k++) {
                int dropped = o < n_opt && optional[o] == k && (mask >> o & 1);
                o += o < n_opt && optional[o] == k;
                if (!dropped && ints_push(&variant, rhs[k]) < 0) goto done;
            }
            if (variant.n && add_new(&seen, out, lhs, variant.at, variant.n) < 0) goto done;
        }
    }
    failed = 0;
done:
    prods_free(&pending);
    free(seen.slot); free(cur.at); free(variant.at);
    return failed;
}

/* The productions of `in` with each cycle of unit productions merged into its smallest
 * nonterminal, duplicates and self-units dropped, in `res`. */
static int collapse_unit_cycles(const Prods *in, Py_ssize_t n, Prods *res)
{
    i32 *first = calloc((size_t)n + 2, sizeof(i32)), *succ = malloc((size_t)in->lhs.n * sizeof(i32) + 1);
    i32 *rep = malloc((size_t)n * sizeof(i32) + 1), *roots = malloc((size_t)n * sizeof(i32) + 1);
    Ints members = {0}, ends = {0}, renamed = {0};
    ProdSet seen = {0};
    int failed = -1, merged = 0;
    if (!first || !succ || !rep || !roots) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < in->lhs.n; i++)
        if (prod_len(in, i) == 1 && prod_rhs(in, i)[0] < 0) first[in->lhs.at[i] + 2]++;
    for (Py_ssize_t v = 0; v < n; v++) first[v + 2] += first[v + 1];
    for (Py_ssize_t i = 0; i < in->lhs.n; i++)
        if (prod_len(in, i) == 1 && prod_rhs(in, i)[0] < 0) succ[first[in->lhs.at[i] + 1]++] = ~prod_rhs(in, i)[0];
    for (Py_ssize_t v = 0; v < n; v++) { rep[v] = (i32)v; roots[v] = (i32)v; }
    if (tarjan(n, first, succ, roots, n, &members, &ends) < 0) goto done;
    for (Py_ssize_t c = 0, at = 0; c < ends.n; at = ends.at[c++]) {
        if (ends.at[c] - at < 2) continue;
        merged = 1;
        i32 head = members.at[at];
        for (Py_ssize_t k = at; k < ends.at[c]; k++) if (members.at[k] < head) head = members.at[k];
        for (Py_ssize_t k = at; k < ends.at[c]; k++) rep[members.at[k]] = head;
    }
    for (Py_ssize_t i = 0; i < in->lhs.n; i++) {
        i32 lhs = rep[in->lhs.at[i]];
        const i32 *rhs = prod_rhs(in, i);
        Py_ssize_t len = prod_len(in, i);
        if (!merged) {  /* nothing renamed: the productions stay (ε removal left no duplicates) */
            if (!(len == 1 && rhs[0] == ~lhs) && prods_push(res, lhs, rhs, len) < 0) goto done;
            continue;
        }
        renamed.n = 0;
        for (Py_ssize_t k = 0; k < len; k++)
            if (ints_push(&renamed, rhs[k] < 0 ? ~rep[~rhs[k]] : rhs[k]) < 0) goto done;
        if (len == 1 && renamed.at[0] == ~lhs) continue;
        if (add_new(&seen, res, lhs, renamed.at, len) < 0) goto done;
    }
    failed = 0;
done:
    free(first); free(succ); free(rep); free(roots);
    free(members.at); free(ends.at); free(renamed.at); free(seen.slot);
    return failed;
}

static PyObject *int32_bytes(const Ints *a)
{
    return PyBytes_FromStringAndSize((const char *)a->at, a->n * (Py_ssize_t)sizeof(i32));
}

/* What `start` reaches, renumbered: terminals first in order of first use, then nonterminal
 * 0 for the augmented start S' -> S and S = `start` first, the others in order of first use;
 * as the tuple py_normalize returns after accepts_empty and rest_of. */
static PyObject *renumber(const Prods *p, Py_ssize_t n, i32 start)
{
    i32 max_t = -1;
    for (Py_ssize_t k = 0; k < p->sym.n; k++) if (p->sym.at[k] > max_t) max_t = p->sym.at[k];
    i32 *first = calloc((size_t)n + 2, sizeof(i32)), *order = malloc((size_t)p->lhs.n * sizeof(i32) + 1);
    i32 *nt_index = malloc((size_t)n * sizeof(i32) + 1), *t_index = malloc((size_t)(max_t + 1) * sizeof(i32) + 1);
    Ints nts = {0}, ts = {0};
    Prods out = {0};
    PyObject *result = NULL;
    if (!first || !order || !nt_index || !t_index) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < p->lhs.n; i++) first[p->lhs.at[i] + 2]++;  /* productions by lhs, in order */
    for (Py_ssize_t v = 0; v < n; v++) first[v + 2] += first[v + 1];
    for (Py_ssize_t i = 0; i < p->lhs.n; i++) order[first[p->lhs.at[i] + 1]++] = (i32)i;
    for (Py_ssize_t v = 0; v < n; v++) nt_index[v] = -1;
    for (i32 t = 0; t <= max_t; t++) t_index[t] = -1;
    nt_index[start] = 0;
    if (ints_push(&nts, start) < 0) goto done;
    for (Py_ssize_t q = 0; q < nts.n; q++) {  /* grows while iterating */
        i32 nt = nts.at[q];
        for (i32 k = first[nt]; k < first[nt + 1]; k++)
            for (const i32 *s = prod_rhs(p, order[k]), *end = s + prod_len(p, order[k]); s < end; s++) {
                if (*s < 0 && nt_index[~*s] < 0) {
                    nt_index[~*s] = (i32)nts.n;
                    if (ints_push(&nts, ~*s) < 0) goto done;
                } else if (*s >= 0 && t_index[*s] < 0) {
                    t_index[*s] = (i32)ts.n;
                    if (ints_push(&ts, *s) < 0) goto done;
                }
            }
    }
    i32 n_t = (i32)ts.n, augmented = n_t + 1;
    if (prods_push(&out, 0, &augmented, 1) < 0) goto done;
    Ints rhs = {0};
    for (Py_ssize_t q = 0; q < nts.n; q++) {
        i32 nt = nts.at[q];
        for (i32 k = first[nt]; k < first[nt + 1]; k++) {
            rhs.n = 0;
            for (const i32 *s = prod_rhs(p, order[k]), *end = s + prod_len(p, order[k]); s < end; s++)
                if (ints_push(&rhs, *s < 0 ? n_t + 1 + nt_index[~*s] : t_index[*s]) < 0) { free(rhs.at); goto done; }
            if (prods_push(&out, (i32)q + 1, rhs.at, rhs.n) < 0) { free(rhs.at); goto done; }
        }
    }
    free(rhs.at);
    result = Py_BuildValue("(NNNNN)", int32_bytes(&ts), int32_bytes(&nts), int32_bytes(&out.lhs),
                           int32_bytes(&out.start), int32_bytes(&out.sym));
done:
    free(first); free(order); free(nt_index); free(t_index); free(nts.at); free(ts.at);
    prods_free(&out);
    return result;
}

/* ------------------------------------------------------------------ the module's functions */

static int int32_view(PyObject *obj, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->itemsize != (Py_ssize_t)sizeof(i32) && view->len) {
        PyErr_Format(PyExc_TypeError, "%s: expected int32 items", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Flattened productions, checked (nonterminals below n_nt), copied into `p`. */
static int load(PyObject *lhs_o, PyObject *starts_o, PyObject *rhs_o, Py_ssize_t n_nt, Prods *p)
{
    Py_buffer b[3] = {{0}};
    int failed = -1;
    if (int32_view(lhs_o, &b[0], "lhs") < 0 || int32_view(starts_o, &b[1], "starts") < 0
        || int32_view(rhs_o, &b[2], "rhs") < 0)
        goto done;
    const i32 *lhs = b[0].buf, *starts = b[1].buf, *rhs = b[2].buf;
    Py_ssize_t np = b[0].len / 4, ns = b[2].len / 4;
    if (b[1].len / 4 != np + 1 || starts[0] != 0 || starts[np] != ns) goto bad;
    for (Py_ssize_t i = 0; i < np; i++) {
        if (lhs[i] < 0 || lhs[i] >= n_nt || starts[i + 1] < starts[i]) goto bad;
        for (i32 k = starts[i]; k < starts[i + 1]; k++)
            if (rhs[k] < 0 && ~rhs[k] >= n_nt) goto bad;
        if (prods_push(p, lhs[i], rhs + starts[i], starts[i + 1] - starts[i]) < 0) goto done;
    }
    if (!np && ints_push(&p->start, 0) < 0) goto done;
    failed = 0;
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "malformed productions");
done:
    for (int i = 0; i < 3; i++) if (b[i].obj) PyBuffer_Release(&b[i]);
    return failed;
}

/* derivers(lhs, starts, rhs, n_nonterminals, usable) -> bytes: see the module's comment;
 * usable is bytes, one per terminal (those past its end are not usable). */
PyObject *py_derivers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *lhs, *starts, *rhs, *result = NULL;
    Py_ssize_t n_nt;
    Py_buffer usable = {0};
    Prods p = {0};
    if (!PyArg_ParseTuple(args, "OOOny*", &lhs, &starts, &rhs, &n_nt, &usable)) return NULL;
    if (n_nt >= 0 && load(lhs, starts, rhs, n_nt, &p) == 0) {
        uint8_t *found = derive(&p, n_nt, usable.buf, usable.len);
        if (found) result = PyBytes_FromStringAndSize((const char *)found, n_nt);
        free(found);
    } else if (n_nt < 0) {
        PyErr_SetString(PyExc_ValueError, "derivers: a negative count of nonterminals");
    }
    prods_free(&p);
    PyBuffer_Release(&usable);
    return result;
}

/* sccs(first, succ, roots) -> (members, ends): see tarjan; int32 buffers in, bytes of int32 out. */
PyObject *py_sccs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[3], *result = NULL;
    Py_buffer b[3] = {{0}};
    Ints members = {0}, ends = {0};
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    static const char *names[3] = {"first", "succ", "roots"};
    for (int i = 0; i < 3; i++) if (int32_view(o[i], &b[i], names[i]) < 0) goto done;
    const i32 *first = b[0].buf, *succ = b[1].buf, *roots = b[2].buf;
    Py_ssize_t n = b[0].len / 4 - 1, ns = b[1].len / 4, nr = b[2].len / 4;
    int ok = n >= 0 && first[0] == 0 && first[n] == ns;
    for (Py_ssize_t v = 0; v < n && ok; v++) ok = first[v] <= first[v + 1];
    for (Py_ssize_t k = 0; k < ns && ok; k++) ok = succ[k] >= 0 && succ[k] < n;
    for (Py_ssize_t r = 0; r < nr && ok; r++) ok = roots[r] >= 0 && roots[r] < n;
    if (!ok) { PyErr_SetString(PyExc_ValueError, "sccs: malformed graph"); goto done; }
    if (tarjan(n, first, succ, roots, nr, &members, &ends) == 0)
        result = Py_BuildValue("(NN)", int32_bytes(&members), int32_bytes(&ends));
done:
    for (int i = 0; i < 3; i++) if (b[i].obj) PyBuffer_Release(&b[i]);
    free(members.at); free(ends.at);
    return result;
}

/* normalize(lhs, starts, rhs, n_names, start, productive) -> (accepts_empty, rest_of, terminals,
 * nonterminals, lhs, starts, rhs): see the module's comment. `productive`: bytes, one per
 * nonterminal (a production using another is dropped). rest_of: the nonterminal each new
 * "#rest" one (numbered from n_names on) continues; terminals, nonterminals: the old numbers in
 * the new order; then the renumbered productions, the augmented start production first. */
PyObject *py_normalize(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *lhs, *starts, *rhs, *result = NULL, *tail = NULL;
    Py_ssize_t n_names, start;
    Py_buffer productive = {0};
    Prods in = {0}, kept = {0}, free_of_eps = {0}, collapsed = {0};
    Ints rest_of = {0};
    uint8_t *nullable = NULL;
    if (!PyArg_ParseTuple(args, "OOOnny*", &lhs, &starts, &rhs, &n_names, &start, &productive)) return NULL;
    if (n_names < 1 || start < 0 || start >= n_names || productive.len < n_names) {
        PyErr_SetString(PyExc_ValueError, "normalize: bad start or productive flags");
        goto done;
    }
    if (load(lhs, starts, rhs, n_names, &in) < 0) goto done;
    const uint8_t *live = productive.buf;
    for (Py_ssize_t i = 0; i < in.lhs.n; i++) {  /* only productions over productive nonterminals */
        int ok = 1;
        for (const i32 *s = prod_rhs(&in, i), *end = s + prod_len(&in, i); s < end && ok; s++) ok = *s >= 0 || live[~*s];
        if (ok && prods_push(&kept, in.lhs.at[i], prod_rhs(&in, i), prod_len(&in, i)) < 0) goto done;
    }
    if (!kept.start.n && ints_push(&kept.start, 0) < 0) goto done;
    if (!(nullable = derive(&kept, n_names, NULL, 0))) goto done;
    int accepts_empty = nullable[start];
    Py_ssize_t n_all = n_names;
    if (remove_epsilon(&kept, &nullable, &n_all, &rest_of, &free_of_eps) < 0) goto done;
    if (!free_of_eps.start.n && ints_push(&free_of_eps.start, 0) < 0) goto done;
    if (collapse_unit_cycles(&free_of_eps, n_all, &collapsed) < 0) goto done;
    if (!collapsed.start.n && ints_push(&collapsed.start, 0) < 0) goto done;
    if (!(tail = renumber(&collapsed, n_all, (i32)start))) goto done;
    result = Py_BuildValue("(ON)", accepts_empty ? Py_True : Py_False, int32_bytes(&rest_of));
    if (result) {
        PyObject *all = PySequence_Concat(result, tail);
        Py_SETREF(result, all);
    }
done:
    Py_XDECREF(tail);
    PyBuffer_Release(&productive);
    prods_free(&in); prods_free(&kept); prods_free(&free_of_eps); prods_free(&collapsed);
    free(rest_of.at); free(nullable);
    return result;
}
