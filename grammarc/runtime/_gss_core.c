/* `Core`, the compiled base of grammarc.runtime.gss.ParserCore: its tables (read once from the
 * builder's flat LR arrays, lr.LRTables), its memos, its methods, and the module. The algorithms
 * are in _gss.c; the contracts in gss.py. */
#include "_gss.h"
#include "../lowering/_lrtables.h"
#include <string.h>

int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static int as_int(PyObject *o, int *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT_MIN || v > INT_MAX) { PyErr_SetString(PyExc_OverflowError, "a table entry out of range"); return -1; }
    *out = (int)v;
    return 0;
}

/* The tables, read once from the builder's flat arrays (grammarc.lowering.lr.LRTables, checked
 * by _lrtables.h first), with no Python rows in between: a new schema pays this before its first
 * mask. Per state: its shifts (terminal -> state, ascending), its GOTO (nonterminal -> state,
 * ascending), its reductions by ascending production (production 0, reduced on EOF, is the
 * accept, not a reduction) each with its (lhs, rhs length) and its lookaheads ascending (EOF,
 * -1, first), and `own`: the terminals it shifts, plus EOF in the accepting state, ascending.
 * The Python oracle is tests/lalr_reference.py's runtime_rows, compared through `_rows`. */
static int setup(Core *c, const LrArray x[LR_ARRAYS], Py_ssize_t T, const LrArray *lhs, const LrArray *rhs_start) {
    const char *error = lr_tables_error(x, T, lhs->n);
    if (!error && rhs_start->n != lhs->n + 1) error = "lhs and rhs_start must describe the same productions";
    if (error) { PyErr_SetString(PyExc_ValueError, error); return -1; }
    int n = (int)(x[LR_TRANS_START].n - 1);
    const int32_t *ts = x[LR_TRANS_START].a, *sym = x[LR_TRANS_SYM].a, *to = x[LR_TRANS_TO].a;
    const int32_t *rs = x[LR_RED_START].a, *prod = x[LR_RED_PROD].a, *ls = x[LR_LA_START].a, *la = x[LR_LA].a;
    Py_ssize_t n_trans = x[LR_TRANS_SYM].n, n_red = x[LR_RED_PROD].n, n_la = x[LR_LA].n;
    c->n_states = n;
    c->accept_state = -1; /* goto(0, S) for the augmented S' -> S: nonterminal 1 */
    for (int32_t j = ts[0]; j < ts[1]; j++)
        if (sym[j] == T + 1) c->accept_state = to[j];
    c->shift_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->goto_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->red_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->own_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->has_reduce = PyMem_Malloc((size_t)n);
    c->shift = PyMem_Malloc((size_t)(n_trans + 1) * sizeof(Pair));
    c->gotos = PyMem_Malloc((size_t)(n_trans + 1) * sizeof(Pair));
    c->own = PyMem_Malloc((size_t)(n_trans + 2) * sizeof(int));
    c->red = PyMem_Malloc((size_t)(n_red + 1) * sizeof(Red));
    c->las = PyMem_Malloc((size_t)(n_la + 1) * sizeof(int));
    if (!c->shift_off || !c->goto_off || !c->red_off || !c->own_off || !c->has_reduce || !c->shift || !c->gotos ||
        !c->own || !c->red || !c->las) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t n_shift = 0, n_goto = 0, n_own = 0, n_reds = 0, n_las = 0;
    int maxt = 0;
    for (int s = 0; s < n; s++) {
        c->shift_off[s] = n_shift, c->goto_off[s] = n_goto, c->own_off[s] = n_own, c->red_off[s] = n_reds;
        if (s == c->accept_state) c->own[n_own++] = -1;
        for (int32_t j = ts[s]; j < ts[s + 1]; j++) {
            if (sym[j] < T) {
                c->shift[n_shift++] = (Pair){sym[j], to[j]}, c->own[n_own++] = sym[j];
                if (sym[j] > maxt) maxt = sym[j];
            } else
                c->gotos[n_goto++] = (Pair){(int)(sym[j] - T), to[j]};
        }
        for (int32_t r = rs[s]; r < rs[s + 1]; r++) {
            int32_t last = la[ls[r + 1] - 1]; /* the largest terminal, unless EOF: then the one before */
            int32_t top = last >= 0 ? last : ls[r + 1] - ls[r] > 1 ? la[ls[r + 1] - 2] : -1;
            if (top > maxt) maxt = top;
            if (prod[r] == 0) continue; /* reduced on EOF: the accept */
            int32_t len = rhs_start->a[prod[r] + 1] - rhs_start->a[prod[r]];
            if (len < 1) { PyErr_SetString(PyExc_ValueError, "a reduction pops at least one vertex"); return -1; }
            c->red[n_reds++] = (Red){lhs->a[prod[r]], len, n_las, ls[r + 1] - ls[r]};
            if (last == -1) c->las[n_las++] = -1; /* EOF, last in the tables, first here */
            for (int32_t i = ls[r]; i < ls[r + 1] - (last == -1); i++) c->las[n_las++] = la[i];
        }
        c->has_reduce[s] = n_reds > c->red_off[s];
    }
    c->shift_off[n] = n_shift, c->goto_off[n] = n_goto, c->own_off[n] = n_own, c->red_off[n] = n_reds;
    c->n_terms = maxt + 1;
    return 0;
}

/* follows(n) -> list of n tuples: per terminal u < n, the terminals that can come right after
 * it in some sentence, ascending (EOF left out). Read off the tables in one pass over their
 * cells: a state entered by shifting u (each state has one entering symbol) has a non-error
 * action exactly on the terminals that can follow u there. Such a terminal follows u (its
 * shifts start what comes after u; its reductions complete items that end with u, under
 * lookaheads that follow their left side), and every terminal that follows u in a sentence
 * has an action there, or the parser would refuse that sentence. The union over the states u
 * enters is FOLLOW(u) of the grammar; its oracle is tests/test_follows.py's fixpoint. */
static PyObject *core_follows_m(Core *c, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (!c->ready || n < 0 || n > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "follows: a terminal count out of range, or the core is not set up");
        return NULL;
    }
    int ns = c->n_states;
    Py_ssize_t n_shift = c->shift_off[ns];
    int *entering = PyMem_Malloc((size_t)(n_shift + 1) * sizeof(int)); /* states, grouped by entering terminal */
    Py_ssize_t *start = PyMem_Calloc((size_t)n + 2, sizeof(Py_ssize_t));
    int *mark = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int)), *found = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int));
    char *seen = PyMem_Calloc((size_t)ns, 1); /* a state counted once, under the one terminal entering it */
    PyObject *out = NULL;
    if (!entering || !start || !mark || !found || !seen) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n_shift; i++) {
        int t = c->shift[i].t, to = c->shift[i].to;
        if (t < n && !seen[to]) seen[to] = 1, start[t + 2]++;
    }
    for (Py_ssize_t t = 0; t < n; t++) start[t + 2] += start[t + 1];
    memset(seen, 0, (size_t)ns);
    for (Py_ssize_t i = 0; i < n_shift; i++) {
        int t = c->shift[i].t, to = c->shift[i].to;
        if (t < n && !seen[to]) seen[to] = 1, entering[start[t + 1]++] = to;
    }
    for (Py_ssize_t t = 0; t < n; t++) mark[t] = -1;
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t t = 0; t < n; t++) {
        Py_ssize_t k = 0;
        for (Py_ssize_t e = start[t]; e < start[t + 1]; e++) {
            int s = entering[e];
            for (Py_ssize_t i = c->shift_off[s]; i < c->shift_off[s + 1]; i++) {
                int u = c->shift[i].t;
                if (u >= 0 && u < n && mark[u] != t) mark[u] = (int)t, found[k++] = u;
            }
            for (Py_ssize_t r = c->red_off[s]; r < c->red_off[s + 1]; r++)
                for (Py_ssize_t j = 0; j < c->red[r].la_n; j++) {
                    int u = c->las[c->red[r].la_off + j];
                    if (u >= 0 && u < n && mark[u] != t) mark[u] = (int)t, found[k++] = u;
                }
        }
        qsort(found, (size_t)k, sizeof(int), cmp_int);
        PyObject *row = PyTuple_New(k);
        if (!row) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, t, row);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *u = PyLong_FromLong(found[i]);
            if (!u) { Py_CLEAR(out); goto done; }
            PyTuple_SET_ITEM(row, i, u);
        }
    }
done:
    PyMem_Free(entering), PyMem_Free(start), PyMem_Free(mark), PyMem_Free(found), PyMem_Free(seen);
    return out;
}

/* _rows(state) -> (shifts, reducing, own): what the core read of one ACTION row, as
 * tests/lalr_reference.py's runtime_rows spells it: {terminal: state}, ((lhs, length,
 * frozenset of lookaheads), ...) by ascending production, and the ascending terminals `own`.
 * For tests and for ParserCore.shift_to (read by grammarc.integrations.steering). */
static PyObject *core_rows_m(Core *c, PyObject *arg) {
    Py_ssize_t s = PyLong_AsSsize_t(arg);
    if (s == -1 && PyErr_Occurred()) return NULL;
    if (!c->ready || s < 0 || s >= c->n_states) {
        PyErr_SetString(PyExc_IndexError, "_rows: no such LR state");
        return NULL;
    }
    PyObject *shifts = PyDict_New(), *reducing = NULL, *own = NULL;
    if (!shifts) return NULL;
    for (Py_ssize_t i = c->shift_off[s]; i < c->shift_off[s + 1]; i++) {
        PyObject *t = PyLong_FromLong(c->shift[i].t), *to = t ? PyLong_FromLong(c->shift[i].to) : NULL;
        int bad = !to || PyDict_SetItem(shifts, t, to);
        Py_XDECREF(t), Py_XDECREF(to);
        if (bad) goto fail;
    }
    if (!(reducing = PyTuple_New(c->red_off[s + 1] - c->red_off[s]))) goto fail;
    for (Py_ssize_t r = c->red_off[s]; r < c->red_off[s + 1]; r++) {
        Red *red = &c->red[r];
        PyObject *las = PyFrozenSet_New(NULL);
        if (!las) goto fail;
        for (Py_ssize_t k = 0; k < red->la_n; k++) {
            PyObject *u = PyLong_FromLong(c->las[red->la_off + k]);
            if (!u || PySet_Add(las, u)) { Py_XDECREF(u); Py_DECREF(las); goto fail; }
            Py_DECREF(u);
        }
        PyObject *entry = Py_BuildValue("(iiN)", red->lhs, red->len, las);
        if (!entry) goto fail;
        PyTuple_SET_ITEM(reducing, r - c->red_off[s], entry);
    }
    if (!(own = PyTuple_New(c->own_off[s + 1] - c->own_off[s]))) goto fail;
    for (Py_ssize_t i = c->own_off[s]; i < c->own_off[s + 1]; i++) {
        PyObject *u = PyLong_FromLong(c->own[i]);
        if (!u) goto fail;
        PyTuple_SET_ITEM(own, i - c->own_off[s], u);
    }
    return Py_BuildValue("(NNN)", shifts, reducing, own);
fail:
    Py_XDECREF(shifts), Py_XDECREF(reducing), Py_XDECREF(own);
    return NULL;
}

static PyObject *core_setup(Core *c, PyObject *args) {
    Py_ssize_t T, limit;
    Py_buffer b[LR_ARRAYS + 2] = {{0}};
    LrArray x[LR_ARRAYS + 2];
    if (c->ready || c->shift_off) { PyErr_SetString(PyExc_RuntimeError, "the core is set up already"); return NULL; }
    if (!PyArg_ParseTuple(args, "ny*y*y*y*y*y*y*y*y*n", &T, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &limit))
        return NULL;
    PyObject *result = NULL;
    if (lr_arrays_of(b, x) || lr_arrays_of(b + 2, x + 2)) goto done; /* the last two: lhs, rhs_start */
    c->memo_limit = limit;
    if (setup(c, x, T, &x[LR_ARRAYS], &x[LR_ARRAYS + 1])) goto done;
    if (!(c->levels = PyDict_New()) || !(c->pure = PyDict_New()) || !(c->shiftable = PyDict_New())) goto done;
    PyObject *none = PyTuple_New(0);
    if (!none || !(c->root = node_new(0, none, 1))) goto done;
    PyObject *root = (PyObject *)c->root;
    if (!(c->root_level = level_of(c, &root, 1))) goto done;
    c->ready = 1;
    result = c->accept_state < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(c->accept_state);
done:
    for (int i = 0; i < LR_ARRAYS + 2; i++) PyBuffer_Release(&b[i]);
    return result;
}

#define READY(c, ret)                                                                     \
    if (!(c)->ready) {                                                                    \
        PyErr_SetString(PyExc_RuntimeError, "the parser core is not set up (_setup)");   \
        return ret;                                                                       \
    }

static PyObject *core_level_m(Core *c, PyObject *completions) {
    READY(c, NULL);
    return (PyObject *)core_level(c, completions);
}

static PyObject *core_openings_m(Core *c, PyObject *level) {
    READY(c, NULL);
    if (!PyObject_TypeCheck(level, &LevelType)) {
        PyErr_SetString(PyExc_TypeError, "openings takes a Level");
        return NULL;
    }
    PyObject *out = core_openings(c, (Level *)level);
    return Py_XNewRef(out);
}

/* terminals (an iterable of ints) as a byte per terminal + 1 (EOF is -1) */
static char *upcoming_bitmap(Core *c, PyObject *terminals) {
    char *upcoming = PyMem_Calloc((size_t)c->n_terms + 1, 1);
    if (!upcoming) return (char *)PyErr_NoMemory();
    PyObject *it = PyObject_GetIter(terminals), *key;
    if (!it) { PyMem_Free(upcoming); return NULL; }
    while ((key = PyIter_Next(it))) {
        long u = PyLong_AsLong(key);
        Py_DECREF(key);
        if (u == -1 && PyErr_Occurred()) break;
        if (u >= -1 && u < c->n_terms) upcoming[u + 1] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) { PyMem_Free(upcoming); return NULL; }
    return upcoming;
}

/* _build(completions, *, keep=True, upcoming=None): gss_reference's `_build`, for tests that
 * walk with every reduction (a level of `completions` neither memoized nor, unless `keep`,
 * hash-consed) */
static PyObject *core_build_m(Core *c, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"completions", "keep", "upcoming", NULL};
    PyObject *completions, *terms_up = Py_None;
    int keep = 1;
    READY(c, NULL);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pO", kwlist, &completions, &keep, &terms_up)) return NULL;
    char *upcoming = terms_up == Py_None ? NULL : upcoming_bitmap(c, terms_up);
    if (terms_up != Py_None && !upcoming) return NULL;
    Vec nodes = {0};
    int *terms = NULL;
    PyObject *out = NULL;
    if (!read_completions(completions, &nodes, &terms)) {
        out = (PyObject *)build(c, (PyObject **)nodes.p, terms, nodes.n, keep, upcoming);
        for (Py_ssize_t i = 0; i < nodes.n; i++) Py_DECREF(nodes.p[i]);
    }
    PyMem_Free(nodes.p), PyMem_Free(terms), PyMem_Free(upcoming);
    return out;
}

static PyObject *core_shift_m(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    READY(c, NULL);
    int t;
    if (nargs != 3 || !PyObject_TypeCheck(args[0], &LevelType)) {
        PyErr_SetString(PyExc_TypeError, "shift(level, terminal, upcoming)");
        return NULL;
    }
    if (as_int(args[1], &t)) return NULL;
    char *upcoming = upcoming_bitmap(c, args[2]);
    if (!upcoming) return NULL;
    Level *level = (Level *)args[0];
    Py_INCREF(level); /* keeps its vertices alive */
    Py_ssize_t nv = PyTuple_GET_SIZE(level->vertices), n = 0;
    PyObject **parents = PyMem_Malloc((size_t)(nv + 1) * sizeof(PyObject *));
    int *terms = PyMem_Malloc((size_t)(nv + 1) * sizeof(int));
    PyObject *out = NULL;
    if (!parents || !terms) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *v = PyTuple_GET_ITEM(level->vertices, i);
        if (core_shift_of(c, ((Node *)v)->state, t) >= 0) parents[n] = v, terms[n++] = t;
    }
    out = (PyObject *)build(c, parents, terms, n, 0, upcoming);
done:
    Py_DECREF(level);
    PyMem_Free(parents), PyMem_Free(terms), PyMem_Free(upcoming);
    return out;
}

/* The distinct states that `from` (n states) shift t to, ascending, written to `to` (room
 * for n): their number, and in *reduces whether one of them completes an item (a reduction
 * can follow). Shared by `pure_shift` and the tree walk (_tree.c). */
Py_ssize_t core_shift_states(Core *c, const int *from, Py_ssize_t n, int t, int *to, int *reduces) {
    Py_ssize_t m = 0, k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int x = core_shift_of(c, from[i], t);
        if (x >= 0) to[m++] = x;
    }
    qsort(to, (size_t)m, sizeof(int), cmp_int);
    *reduces = 0;
    for (Py_ssize_t i = 0; i < m; i++)
        if (!k || to[k - 1] != to[i]) to[k++] = to[i], *reduces |= c->has_reduce[to[i]];
    return k;
}

/* the distinct states of `states` (a tuple of ints) shift `t` to, ascending, when no
 * reduction can follow, else None; NULL: error */
static PyObject *core_pure_shift_m(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    READY(c, NULL);
    if (nargs != 2 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "pure_shift(states, terminal)");
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, args[0], args[1]);
    if (!key) return NULL;
    PyObject *found = PyDict_GetItemWithError(c->pure, key);
    if (found || PyErr_Occurred()) { Py_DECREF(key); return Py_XNewRef(found); }
    int t, reduces;
    PyObject *out = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
    int *from = PyMem_Malloc((size_t)(2 * n + 1) * sizeof(int)), *to = from + n;
    if (!from) { PyErr_NoMemory(); goto done; }
    if (as_int(args[1], &t)) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (as_int(PyTuple_GET_ITEM(args[0], i), &from[i])) goto done;
        if (from[i] < 0 || from[i] >= c->n_states) { PyErr_SetString(PyExc_IndexError, "no such LR state"); goto done; }
    }
    Py_ssize_t k = core_shift_states(c, from, n, t, to, &reduces);
    if (reduces) {
        out = Py_NewRef(Py_None);
    } else {
        if (!(out = PyTuple_New(k))) goto done;
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *v = PyLong_FromLong(to[i]);
            if (!v) { Py_CLEAR(out); goto done; }
            PyTuple_SET_ITEM(out, i, v);
        }
    }
    found = PyDict_SetDefault(c->pure, key, out);
    Py_DECREF(out);
    out = Py_XNewRef(found);
done:
    PyMem_Free(from);
    Py_DECREF(key);
    return out;
}

static PyObject *core_shiftable_m(Core *c, PyObject *states) {
    READY(c, NULL);
    if (!PyTuple_Check(states)) { PyErr_SetString(PyExc_TypeError, "shiftable takes a tuple of states"); return NULL; }
    PyObject *found = PyDict_GetItemWithError(c->shiftable, states);
    if (found || PyErr_Occurred()) return Py_XNewRef(found);
    PyObject *out = PyFrozenSet_New(NULL);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(states); i++) {
        int s;
        if (as_int(PyTuple_GET_ITEM(states, i), &s)) goto fail;
        if (s < 0 || s >= c->n_states) { PyErr_SetString(PyExc_IndexError, "no such LR state"); goto fail; }
        for (Py_ssize_t j = c->shift_off[s]; j < c->shift_off[s + 1]; j++) {
            PyObject *v = PyLong_FromLong(c->shift[j].t);
            if (!v || PySet_Add(out, v)) { Py_XDECREF(v); goto fail; }
            Py_DECREF(v);
        }
    }
    found = PyDict_SetDefault(c->shiftable, states, out);
    Py_DECREF(out);
    return Py_XNewRef(found);
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *core_forget_m(Core *c, PyObject *unused) {
    READY(c, NULL);
    forget(c);
    Py_RETURN_NONE;
}

static PyObject *core_get_work(Core *c, void *unused) {
    return Py_BuildValue("{sKsK}", "vertices", c->work_vertices, "reductions", c->work_reductions);
}

static PyObject *core_get_root(Core *c, void *unused) { return Py_NewRef(c->root ? (PyObject *)c->root : Py_None); }

static PyObject *core_get_root_level(Core *c, void *unused) {
    return Py_NewRef(c->root_level ? (PyObject *)c->root_level : Py_None);
}

static PyObject *core_get_memo_sizes(Core *c, void *unused) {
    return Py_BuildValue("{snsnsn}", "levels", c->levels ? PyDict_GET_SIZE(c->levels) : 0, "vertices",
                         (Py_ssize_t)c->vertices.used, "by_vertices", (Py_ssize_t)c->by_vertices.used);
}

static PyMethodDef core_methods[] = {
    {"_setup", (PyCFunction)core_setup, METH_VARARGS,
     "_setup(n_terminals, *the seven LR arrays, lhs, rhs_start, memo_limit) -> the accepting state: read the tables once."},
    {"follows", (PyCFunction)core_follows_m, METH_O,
     "follows(n) -> per terminal below n, the terminals that can come right after it (ascending)."},
    {"_rows", (PyCFunction)core_rows_m, METH_O, "_rows(state) -> (shifts, reducing, own): what the core read of a row."},
    {"level", (PyCFunction)core_level_m, METH_O, "The level after shifting each (node, terminal) of completions."},
    {"shift", (PyCFunction)(void (*)(void))core_shift_m, METH_FASTCALL,
     "The hypothetical level after shifting t from every vertex of level that can (see gss.py)."},
    {"pure_shift", (PyCFunction)(void (*)(void))core_pure_shift_m, METH_FASTCALL,
     "The LR states after shifting t from states when no reduction can follow; None otherwise."},
    {"walk", (PyCFunction)(void (*)(void))core_walk, METH_FASTCALL,
     "walk(tree, states) -> (token sets, frontier): a token tree walked from LR states (engine.walk_summary)."},
    {"shiftable", (PyCFunction)core_shiftable_m, METH_O, "The terminals some state of states can shift."},
    {"openings", (PyCFunction)core_openings_m, METH_O, "Every (vertex, terminal) pair a new terminal may start from."},
    {"_build", (PyCFunction)(void (*)(void))core_build_m, METH_VARARGS | METH_KEYWORDS,
     "_build(completions, *, keep=True, upcoming=None): a level, not memoized (tests walk with it)."},
    {"_forget", (PyCFunction)core_forget_m, METH_NOARGS, "Drop the memos of levels and vertices (bounded memory)."},
    {NULL},
};

static PyGetSetDef core_getset[] = {
    {"work", (getter)core_get_work, NULL, "{'vertices': made, 'reductions': steps} so far", NULL},
    {"root", (getter)core_get_root, NULL, "the bottom vertex (state 0)", NULL},
    {"root_level", (getter)core_get_root_level, NULL, "the level before any text", NULL},
    {"_memo_sizes", (getter)core_get_memo_sizes, NULL, "how many levels and vertices the memos hold", NULL},
    {NULL},
};

static PyObject *core_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Core *c = (Core *)type->tp_alloc(type, 0); /* zeroed */
    return (PyObject *)c;
}

static int core_traverse(Core *c, visitproc visit, void *arg) {
    Py_VISIT(c->levels);
    Py_VISIT(c->pure);
    Py_VISIT(c->shiftable);
    Py_VISIT(c->terms_seq);
    for (Py_ssize_t i = 0; i < c->n_info; i++) Py_VISIT(c->info[i].walker);
    return 0;
}

static int core_clear(Core *c) {
    Py_CLEAR(c->levels);
    Py_CLEAR(c->pure);
    Py_CLEAR(c->shiftable);
    Py_CLEAR(c->terms_seq);
    TermInfo *info = c->info;
    Py_ssize_t n = c->n_info;
    c->info = NULL, c->n_info = 0;
    free_term_info(info, n);
    return 0;
}

static void core_dealloc(Core *c) {
    PyObject_GC_UnTrack(c);
    core_clear(c);
    table_clear(&c->vertices);
    table_clear(&c->by_vertices);
    Py_CLEAR(c->root_level);
    Py_CLEAR(c->root);
    PyMem_Free(c->shift_off), PyMem_Free(c->shift), PyMem_Free(c->goto_off), PyMem_Free(c->gotos);
    PyMem_Free(c->red_off), PyMem_Free(c->red), PyMem_Free(c->las), PyMem_Free(c->own_off), PyMem_Free(c->own);
    PyMem_Free(c->has_reduce);
    PyTypeObject *type = Py_TYPE(c);
    type->tp_free((PyObject *)c);
}

PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.runtime._gss.Core",
    .tp_basicsize = sizeof(Core),
    .tp_dealloc = (destructor)core_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The compiled base of grammarc.runtime.gss.ParserCore.",
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_methods = core_methods,
    .tp_getset = core_getset,
    .tp_new = core_new,
};

static PyMethodDef module_methods[] = {
    {"step", (PyCFunction)(void (*)(void))py_step, METH_FASTCALL | METH_KEYWORDS,
     "step(core, terminals, items, data, *, tokens=None): the items after data (see stepping.py)."},
    {"initial", (PyCFunction)py_initial, METH_O, "initial(core): the items before any text (see stepping.py)."},
    {"complete", (PyCFunction)(void (*)(void))py_complete, METH_FASTCALL,
     "complete(core, terminals, items): whether the text of items is complete (see stepping.py)."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gss", "The graph-structured stack of the GLR runtime.",
                                    -1, module_methods};

PyMODINIT_FUNC PyInit__gss(void) {
    if (PyType_Ready(&NodeType) < 0 || PyType_Ready(&LevelType) < 0 || PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Node", (PyObject *)&NodeType) < 0 ||
        PyModule_AddObjectRef(m, "Level", (PyObject *)&LevelType) < 0 ||
        PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0 || tree_module_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
