/* `Core`, the compiled base of grammarc.runtime.gss.ParserCore: its tables (read once from
 * the rows _lalr.runtime_rows makes), its memos, its methods, and the module. The algorithms
 * are in _gss.c; the contracts in gss.py. */
#include "_gss.h"
#include <string.h>

static int cmp_pair(const void *a, const void *b) {
    const Pair *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

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

/* rows: a sequence of n dicts int -> int; into *off (n + 1) and *pairs sorted per row */
static int read_dict_rows(PyObject *rows, Py_ssize_t n, Py_ssize_t **off, Pair **pairs, int *maxkey) {
    Py_ssize_t total = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, s);
        if (!PyDict_Check(row)) { PyErr_SetString(PyExc_TypeError, "a table row must be a dict"); return -1; }
        total += PyDict_GET_SIZE(row);
    }
    *off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    *pairs = PyMem_Malloc((size_t)(total ? total : 1) * sizeof(Pair));
    if (!*off || !*pairs) { PyErr_NoMemory(); return -1; }
    Py_ssize_t k = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, s), *key, *value;
        Py_ssize_t pos = 0;
        (*off)[s] = k;
        while (PyDict_Next(row, &pos, &key, &value)) {
            if (as_int(key, &(*pairs)[k].t) || as_int(value, &(*pairs)[k].to)) return -1;
            if (maxkey && (*pairs)[k].t > *maxkey) *maxkey = (*pairs)[k].t;
            if ((*pairs)[k].to < 0 || (*pairs)[k].to >= n) {
                PyErr_SetString(PyExc_ValueError, "a state out of range");
                return -1;
            }
            k++;
        }
        qsort(*pairs + (*off)[s], (size_t)(k - (*off)[s]), sizeof(Pair), cmp_pair);
    }
    (*off)[n] = k;
    return 0;
}

static int setup(Core *c, PyObject *shift_to, PyObject *reducing, PyObject *reduces, PyObject *own, PyObject *gotos) {
    Py_ssize_t n = c->n_states = (int)PySequence_Fast_GET_SIZE(shift_to);
    if (PySequence_Fast_GET_SIZE(reducing) != n || PySequence_Fast_GET_SIZE(reduces) != n ||
        PySequence_Fast_GET_SIZE(own) != n || PySequence_Fast_GET_SIZE(gotos) != n || n == 0) {
        PyErr_SetString(PyExc_ValueError, "the runtime rows must have one row per LR state");
        return -1;
    }
    int maxt = 0;
    if (read_dict_rows(shift_to, n, &c->shift_off, &c->shift, &maxt) ||
        read_dict_rows(gotos, n, &c->goto_off, &c->gotos, NULL))
        return -1;
    Py_ssize_t nred = 0, nla = 0, nown = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PySequence_Fast_GET_ITEM(reducing, s), *o = PySequence_Fast_GET_ITEM(own, s);
        if (!PyTuple_Check(row) || !PyTuple_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "rows must be tuples");
            return -1;
        }
        nred += PyTuple_GET_SIZE(row), nown += PyTuple_GET_SIZE(o);
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(row); r++) {
            PyObject *entry = PyTuple_GET_ITEM(row, r);
            if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyAnySet_Check(PyTuple_GET_ITEM(entry, 2))) {
                PyErr_SetString(PyExc_TypeError, "a reduction is (lhs, length, lookaheads)");
                return -1;
            }
            nla += PySet_GET_SIZE(PyTuple_GET_ITEM(entry, 2));
        }
    }
    c->red_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->own_off = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    c->red = PyMem_Malloc((size_t)(nred + 1) * sizeof(Red));
    c->las = PyMem_Malloc((size_t)(nla + 1) * sizeof(int));
    c->own = PyMem_Malloc((size_t)(nown + 1) * sizeof(int));
    c->has_reduce = PyMem_Malloc((size_t)n);
    if (!c->red_off || !c->own_off || !c->red || !c->las || !c->own || !c->has_reduce) { PyErr_NoMemory(); return -1; }
    Py_ssize_t r_at = 0, la_at = 0, own_at = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *row = PySequence_Fast_GET_ITEM(reducing, s), *o = PySequence_Fast_GET_ITEM(own, s);
        c->red_off[s] = r_at, c->own_off[s] = own_at;
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(row); r++) {
            PyObject *entry = PyTuple_GET_ITEM(row, r), *key, *it;
            Red *red = &c->red[r_at++];
            if (as_int(PyTuple_GET_ITEM(entry, 0), &red->lhs) || as_int(PyTuple_GET_ITEM(entry, 1), &red->len))
                return -1;
            if (red->len < 1) { PyErr_SetString(PyExc_ValueError, "a reduction pops at least one vertex"); return -1; }
            red->la_off = la_at;
            if (!(it = PyObject_GetIter(PyTuple_GET_ITEM(entry, 2)))) return -1;
            while ((key = PyIter_Next(it))) {
                int u, bad = as_int(key, &u);
                Py_DECREF(key);
                if (bad) { Py_DECREF(it); return -1; }
                c->las[la_at++] = u;
                if (u > maxt) maxt = u;
            }
            Py_DECREF(it);
            if (PyErr_Occurred()) return -1;
            red->la_n = la_at - red->la_off;
            qsort(c->las + red->la_off, (size_t)red->la_n, sizeof(int), cmp_int);
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
            if (as_int(PyTuple_GET_ITEM(o, i), &c->own[own_at])) return -1;
            if (c->own[own_at] > maxt) maxt = c->own[own_at];
            own_at++;
        }
        qsort(c->own + c->own_off[s], (size_t)(own_at - c->own_off[s]), sizeof(int), cmp_int);
        PyObject *prods = PySequence_Fast_GET_ITEM(reduces, s);
        Py_ssize_t np = PyObject_Length(prods);
        if (np < 0) return -1;
        c->has_reduce[s] = np > 0;
    }
    c->red_off[n] = r_at, c->own_off[n] = own_at;
    c->n_terms = maxt + 1;
    return 0;
}

static PyObject *core_setup(Core *c, PyObject *args) {
    PyObject *rows[5], *fast[5] = {0}, *accept;
    Py_ssize_t limit;
    if (c->ready) { PyErr_SetString(PyExc_RuntimeError, "the core is set up already"); return NULL; }
    if (!PyArg_ParseTuple(args, "OOOOOOn", &rows[0], &rows[1], &rows[2], &rows[3], &rows[4], &accept, &limit))
        return NULL;
    PyObject *result = NULL;
    for (int i = 0; i < 5; i++)
        if (!(fast[i] = PySequence_Fast(rows[i], "the runtime rows must be sequences"))) goto done;
    c->accept_state = -1;
    if (accept != Py_None && as_int(accept, &c->accept_state)) goto done;
    c->memo_limit = limit;
    if (setup(c, fast[0], fast[1], fast[2], fast[3], fast[4])) goto done;
    if (!(c->levels = PyDict_New()) || !(c->pure = PyDict_New()) || !(c->shiftable = PyDict_New())) goto done;
    PyObject *none = PyTuple_New(0);
    if (!none || !(c->root = node_new(0, none, 1))) goto done;
    PyObject *root = (PyObject *)c->root;
    if (!(c->root_level = level_of(c, &root, 1))) goto done;
    c->ready = 1;
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < 5; i++) Py_XDECREF(fast[i]);
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
     "_setup(shift_to, reducing, reduces, own, goto, accept_state, memo_limit): read the tables once."},
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
