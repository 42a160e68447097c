/* `Tree`, the compiled base of grammarc.tokens.tree.Tree (a node of a token tree: its
 * parts keyed by terminal, made on first read by Python), and `Core.walk`, the walk of a
 * tree from a set of LR states that engine.walk_summary records (pure shifts followed,
 * the rest left to the frontier). The contracts are tokens/tree.py's and engine.py's; the
 * walk's Python oracle is tests/tree_walk_reference.py.
 *
 * A mask on a never-seen schema walks thousands of tree nodes: in Python every node cost
 * a set intersection, a sort, a dict lookup per part and a call per shift. Here a node is a
 * sorted array of candidate terminals and a parallel array of parts; the interpreter runs
 * only to make a part not made yet (the index's scans, under its lock).
 *
 * Threads: everything runs with the GIL held. Making a part calls Python, which may let
 * another thread in, walking or making parts of the same trees; so a tree's arrays are
 * allocated once (with its candidates) and never moved, a slot is written once (the first
 * part published stays), and a part is only ever added, never dropped: the trees a walk
 * holds borrowed stay alive while the tree it was given does. */
#include "_gss.h"
#include "../tokens/_source.h"
#include <string.h>
#include <structmember.h>

static unsigned long long tree_serials; /* the next serial (under the GIL) */
static PyObject *str_part, *str_candidates;
/* frozenset of candidates -> their sorted ints (bytes): a source gives the trees of one level
 * kind the same set (the index's `_starting` memo), so each is read and sorted once. Cleared
 * past CAND_CACHE_LIMIT entries (the trees keep their bytes). */
static PyObject *cand_cache;
#define CAND_CACHE_LIMIT 4096
PyObject *tree_no_part; /* (None, None): the part of a terminal without one */

static int tree_take_candidates(Tree *t, PyObject *set);

/* -- the tree --------------------------------------------------------------------------- */

/* A tree of `type` over `source` (None: no parts) with `candidates` (a frozenset, or
 * None: read from the source on first use); a new reference, or NULL with an error set. */
static PyObject *tree_make(PyTypeObject *type, PyObject *source, PyObject *candidates) {
    Tree *t = (Tree *)type->tp_alloc(type, 0); /* zeroed */
    if (!t) return NULL;
    if (PyType_IS_GC(type)) PyObject_GC_UnTrack(t); /* a Python subclass is a GC type: nothing to track (below) */
    t->serial = tree_serials++;
    if (source == Py_None) { /* no parts at all */
        t->n = 0;
        if (!(t->cand_set = PyFrozenSet_New(NULL))) { Py_DECREF(t); return NULL; }
        return (PyObject *)t;
    }
    t->n = -1; /* candidates read on first use, unless given */
    t->source = Py_NewRef(source);
    if (candidates != Py_None && tree_take_candidates(t, Py_NewRef(candidates))) { Py_DECREF(t); return NULL; }
    return (PyObject *)t;
}

/* Tree(source=None, candidates=None): with `candidates` (a frozenset), the tree has them at
 * once and never asks its source (which knows them as it makes the tree: no call back). */
static PyObject *tree_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"source", "candidates", NULL};
    PyObject *source = Py_None, *candidates = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", kwlist, &source, &candidates)) return NULL;
    return tree_make(type, source, candidates);
}

static void tree_dealloc(Tree *t) {
    /* parts are tuples: a deep chain of subtrees is freed through the interpreter's bounded
     * tuple deallocation, not a deep C recursion */
    if (t->parts)
        for (Py_ssize_t i = 0; i < t->n; i++) Py_XDECREF(t->parts[i]);
    PyMem_Free(t->parts);
    Py_XDECREF(t->cand_ints);
    Py_XDECREF(t->source);
    Py_XDECREF(t->cand_set);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* The sorted ints of a frozenset of terminals, as bytes (new reference; NULL: error); kept
 * in `cand_cache` for an exact frozenset (hashing and comparing one of ints runs no Python). */
static PyObject *sorted_terminals(PyObject *set) {
    int exact = PyFrozenSet_CheckExact(set);
    PyObject *found = exact ? PyDict_GetItemWithError(cand_cache, set) : NULL;
    if (found) return Py_NewRef(found);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = PySet_GET_SIZE(set), k = 0;
    PyObject *ints = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int)); /* n = 0: shared, unwritten */
    if (!ints) return NULL;
    int *cand = (int *)PyBytes_AS_STRING(ints);
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    PyObject *key;
    while (_PySet_NextEntry(set, &pos, &key, &hash)) { /* borrowed; no Python code runs */
        long u = PyLong_AsLong(key);
        if (u == -1 && PyErr_Occurred()) break;
        if (u < 0 || u > INT_MAX || k == n) { PyErr_SetString(PyExc_ValueError, "a candidate terminal out of range"); break; }
        cand[k++] = (int)u;
    }
    if (PyErr_Occurred() || k != n) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a tree's candidates changed while read");
        Py_DECREF(ints);
        return NULL;
    }
    qsort(cand, (size_t)n, sizeof(int), cmp_int);
    if (!exact) return ints;
    if (PyDict_GET_SIZE(cand_cache) >= CAND_CACHE_LIMIT) PyDict_Clear(cand_cache);
    if (PyDict_SetItem(cand_cache, set, ints)) { Py_DECREF(ints); return NULL; }
    return ints;
}

/* Read the candidates from the source (once): 0, or -1 with an exception set. */
/* Take `set` (a new reference, stolen) as the tree's candidates unless it has them: 0, or -1
 * with an exception set. */
static int tree_take_candidates(Tree *t, PyObject *set) {
    if (!PyFrozenSet_Check(set)) {
        PyErr_Format(PyExc_TypeError, "a tree's candidates must be a frozenset, got %.80s", Py_TYPE(set)->tp_name);
        Py_DECREF(set);
        return -1;
    }
    PyObject *ints = sorted_terminals(set);
    Py_ssize_t n = PySet_GET_SIZE(set);
    PyObject **parts = ints ? PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *)) : NULL;
    if (ints && !parts) PyErr_NoMemory();
    if (!parts || t->n >= 0) { /* failed, or read by another thread meanwhile */
        PyMem_Free(parts), Py_XDECREF(ints), Py_DECREF(set);
        return parts ? 0 : -1;
    }
    t->cand = (int *)PyBytes_AS_STRING(ints), t->cand_ints = ints;
    t->parts = parts, t->cand_set = set, t->n = n;
    if (!n) Py_CLEAR(t->source); /* nothing to make */
    return 0;
}

int tree_candidates(Tree *t) {
    if (t->n >= 0) return 0;
    PyObject *source = Py_NewRef(t->source); /* set while n < 0 */
    PyObject *set = PyObject_CallMethodNoArgs(source, str_candidates);
    Py_DECREF(source);
    if (!set) return -1;
    if (t->n >= 0) { Py_DECREF(set); return 0; } /* another thread read them meanwhile */
    return tree_take_candidates(t, set);
}

/* where u is among the candidates (read), or -1 */
static Py_ssize_t tree_find(Tree *t, long u) {
    Py_ssize_t lo = 0, hi = t->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (t->cand[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->n && t->cand[lo] == u ? lo : -1;
}

/* Publish `part` as the part of candidate i, unless one is there (the first stays): a
 * tuple (TokenSet or None, Tree or None). Every part made, the source goes (its arrays
 * would outweigh nothing left to make). */
static int tree_publish_at(Tree *t, Py_ssize_t i, PyObject *part) {
    if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 2 ||
        (PyTuple_GET_ITEM(part, 1) != Py_None && !PyObject_TypeCheck(PyTuple_GET_ITEM(part, 1), &TreeType))) {
        PyErr_SetString(PyExc_TypeError, "a tree's part is a pair (tokens or None, Tree or None)");
        return -1;
    }
    if (t->parts[i]) return 0;
    t->parts[i] = Py_NewRef(part);
    if (++t->n_made == t->n) Py_CLEAR(t->source);
    return 0;
}

/* A compiled source's type and its `make` (grammarc/tokens/_source.h), handed over once by
 * tokens/tree.py (`_compiled_source`); NULL before. */
static const SourceApi *source_api;

/* The part a compiled source made (`SourceApi.make`; its references stolen), as a part
 * tuple (new reference): a child source becomes a tree of t's type with its candidates. */
static PyObject *compiled_part(Tree *t, SourcePart *made) {
    PyObject *part = NULL;
    if (made->candidates) {
        PyObject *child = tree_make(Py_TYPE(t), made->child, made->candidates);
        Py_SETREF(made->child, child);
    }
    if (made->child)
        part = made->tokens == Py_None && made->child == Py_None ? Py_NewRef(tree_no_part)
                                                                  : PyTuple_Pack(2, made->tokens, made->child);
    Py_XDECREF(made->tokens), Py_XDECREF(made->child), Py_XDECREF(made->candidates);
    return part;
}

/* The part of candidate i (borrowed: the tree keeps it), made by the source if it is not
 * yet: a compiled source's with one C call, another's with its Python `part(tree, u)`;
 * NULL with an exception set. */
static PyObject *tree_part_at(Tree *t, Py_ssize_t i) {
    if (t->parts[i]) return t->parts[i];
    PyObject *source = t->source; /* set while some part is not made */
    if (!source) { PyErr_SetString(PyExc_RuntimeError, "a tree without a source lacks a part"); return NULL; }
    PyObject *found;
    Py_INCREF(source), Py_INCREF(t);
    if (source_api && Py_TYPE(source) == source_api->type) {
        SourcePart made;
        found = source_api->make(source, t->cand[i], &made) ? NULL : compiled_part(t, &made);
    } else {
        PyObject *u = PyLong_FromLong(t->cand[i]);
        found = u ? PyObject_CallMethodObjArgs(source, str_part, (PyObject *)t, u, NULL) : NULL;
        Py_XDECREF(u);
    }
    Py_DECREF(source);
    int bad = !found || tree_publish_at(t, i, found); /* a source may have published one: the first stays */
    Py_XDECREF(found);
    Py_DECREF(t); /* the caller holds the tree */
    return bad ? NULL : t->parts[i];
}

/* The part of terminal u (borrowed; the shared (None, None) for a terminal that is not a
 * candidate); NULL with an exception set. */
static PyObject *tree_part(Tree *t, long u) {
    if (tree_candidates(t)) return NULL;
    Py_ssize_t i = tree_find(t, u);
    return i < 0 ? tree_no_part : tree_part_at(t, i);
}

/* Whether no part holds anything: parts are made in turn until one does. 1, 0, -1: error */
static int tree_is_empty(Tree *t) {
    if (tree_candidates(t)) return -1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        PyObject *part = tree_part_at(t, i);
        if (!part) return -1;
        if (PyTuple_GET_ITEM(part, 0) != Py_None || PyTuple_GET_ITEM(part, 1) != Py_None) return 0;
    }
    return 1;
}

static int as_terminal(PyObject *o, long *u) {
    int overflow;
    *u = PyLong_AsLongAndOverflow(o, &overflow);
    if (*u == -1 && PyErr_Occurred()) return -1;
    if (overflow) *u = -1; /* no terminal: not a candidate */
    return 0;
}

static PyObject *tree_part_m(Tree *t, PyObject *arg) {
    long u;
    if (as_terminal(arg, &u)) return NULL;
    return Py_XNewRef(tree_part(t, u));
}

static PyObject *tree_made_m(Tree *t, PyObject *arg) {
    long u;
    if (as_terminal(arg, &u) || tree_candidates(t)) return NULL;
    Py_ssize_t i = tree_find(t, u);
    return Py_NewRef(i >= 0 && t->parts[i] ? t->parts[i] : Py_None);
}

static PyObject *tree_publish_m(Tree *t, PyObject *const *args, Py_ssize_t nargs) {
    long u;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "_publish(terminal, part)"); return NULL; }
    if (as_terminal(args[0], &u) || tree_candidates(t)) return NULL;
    Py_ssize_t i = tree_find(t, u);
    if (i < 0) { PyErr_Format(PyExc_KeyError, "terminal %ld is not a candidate of this tree", u); return NULL; }
    if (tree_publish_at(t, i, args[1])) return NULL;
    Py_RETURN_NONE;
}

static PyObject *tree_is_empty_m(Tree *t, PyObject *unused) {
    int empty = tree_is_empty(t);
    return empty < 0 ? NULL : PyBool_FromLong(empty);
}

static PyObject *tree_get_candidates(Tree *t, void *unused) {
    return tree_candidates(t) ? NULL : Py_NewRef(t->cand_set);
}

static PyObject *tree_get_serial(Tree *t, void *unused) { return PyLong_FromUnsignedLongLong(t->serial); }

/* {terminal: part} of the parts made (a new dict: for reports and benchmarks) */
static PyObject *tree_get_parts(Tree *t, void *unused) {
    PyObject *out = PyDict_New();
    for (Py_ssize_t i = 0; out && t->parts && i < t->n; i++) {
        if (!t->parts[i]) continue;
        PyObject *u = PyLong_FromLong(t->cand[i]);
        if (!u || PyDict_SetItem(out, u, t->parts[i])) Py_CLEAR(out);
        Py_XDECREF(u);
    }
    return out;
}

static PyObject *tree_sizeof(Tree *t, PyObject *unused) {
    Py_ssize_t arrays = t->n > 0 ? t->n * (Py_ssize_t)(sizeof(int) + sizeof(PyObject *)) : 0;
    return PyLong_FromSsize_t(Py_TYPE(t)->tp_basicsize + arrays);
}

static PyObject *tree_get_source(Tree *t, void *unused) { return Py_NewRef(t->source ? t->source : Py_None); }

static PyMethodDef tree_methods[] = {
    {"part", (PyCFunction)tree_part_m, METH_O,
     "(tokens, child) of terminal u, made on first read (published once: see tokens/tree.py)."},
    {"__sizeof__", (PyCFunction)tree_sizeof, METH_NOARGS, "Bytes of the tree and its arrays (not its parts)."},
    {"is_empty", (PyCFunction)tree_is_empty_m, METH_NOARGS,
     "Whether no part holds anything (parts made in turn until one does)."},
    {"_made", (PyCFunction)tree_made_m, METH_O, "The part of u if it was made, else None (nothing made)."},
    {"_publish", (PyCFunction)(void (*)(void))tree_publish_m, METH_FASTCALL,
     "_publish(u, part): keep part as u's (the first one published stays)."},
    {NULL},
};

static PyGetSetDef tree_getset[] = {
    {"candidates", (getter)tree_get_candidates, NULL,
     "The terminals part may find tokens for (a frozenset; a superset of those it does).", NULL},
    {"keys", (getter)tree_get_candidates, NULL,
     "The terminals a walk may go on with after this tree's parent: the candidates.", NULL},
    {"serial", (getter)tree_get_serial, NULL, "A number no other tree of the process has (memos key on it).", NULL},
    {"_parts", (getter)tree_get_parts, NULL, "{terminal: part} of the parts made (a new dict).", NULL},
    {"_source", (getter)tree_get_source, NULL, "What parts are made from; None once every one is made.", NULL},
    {NULL},
};

/* Not tracked by the cyclic collector (nor its Python subclass's instances): a tree refers
 * to its parts (token sets, subtrees) and to its source, which refers to its index only
 * weakly; none refers back to a tree, so no cycle passes through one. */
PyTypeObject TreeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.runtime._gss.Tree",
    .tp_basicsize = sizeof(Tree),
    .tp_dealloc = (destructor)tree_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Tree(source=None, candidates=None): the compiled base of grammarc.tokens.tree.Tree.",
    .tp_methods = tree_methods,
    .tp_getset = tree_getset,
    .tp_new = tree_new,
};

/* -- a walk's summary ------------------------------------------------------------------- */

/* engine.WalkSummary: (tokens, frontier, nbytes), read-only. Not tracked by the cyclic
 * collector (a new schema's walks keep thousands in the summaries' memo, which the collector
 * would otherwise go over at every full collection): it holds two tuples, of token sets and
 * of (path, Tree) pairs, none of which refers to a summary, so no cycle passes through one. */
typedef struct {
    PyObject_HEAD
    PyObject *tokens, *frontier; /* tuples */
    Py_ssize_t nbytes;
} Summary;

static PyObject *summary_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tokens", "frontier", "nbytes", NULL};
    PyObject *tokens, *frontier;
    Py_ssize_t nbytes;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!n:WalkSummary", kwlist, &PyTuple_Type, &tokens, &PyTuple_Type,
                                     &frontier, &nbytes))
        return NULL;
    Summary *out = (Summary *)type->tp_alloc(type, 0);
    if (!out) return NULL;
    out->tokens = Py_NewRef(tokens), out->frontier = Py_NewRef(frontier), out->nbytes = nbytes;
    return (PyObject *)out;
}

static void summary_dealloc(Summary *self) {
    Py_XDECREF(self->tokens), Py_XDECREF(self->frontier);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *summary_repr(Summary *self) {
    return PyUnicode_FromFormat("WalkSummary(tokens=%R, frontier=%R, nbytes=%zd)", self->tokens, self->frontier,
                                self->nbytes);
}

static PyMemberDef summary_members[] = {
    {"tokens", T_OBJECT_EX, offsetof(Summary, tokens), READONLY, "the token sets the states alone allow (a tuple)"},
    {"frontier", T_OBJECT_EX, offsetof(Summary, frontier), READONLY, "(path, subtree) pairs left to real stacks"},
    {"nbytes", T_PYSSIZET, offsetof(Summary, nbytes), READONLY, "what a memo counts for `tokens`"},
    {NULL},
};

PyTypeObject SummaryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.runtime._gss.WalkSummary",
    .tp_basicsize = sizeof(Summary),
    .tp_dealloc = (destructor)summary_dealloc,
    .tp_repr = (reprfunc)summary_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WalkSummary(tokens, frontier, nbytes): see grammarc.engine.WalkSummary.",
    .tp_members = summary_members,
    .tp_new = summary_new,
};

/* -- the walk --------------------------------------------------------------------------- */

typedef struct {
    Tree *node;            /* borrowed: the walk's root, or held by its parent's part */
    Py_ssize_t s_off, s_n; /* its LR states: states[s_off : s_off + s_n], ascending */
    Py_ssize_t i;          /* the next candidate to try */
} Frame;

typedef struct {
    Frame *f;
    Py_ssize_t nf, cf;
    int *s; /* the frames' states, a stack */
    Py_ssize_t ns, cs;
    int *path; /* path[d]: the terminal frame d went on with to frame d + 1 */
} Walk;

/* push a frame for `node` over the last s_n states of the stack */
static int push(Walk *w, Tree *node, Py_ssize_t s_n) {
    if (tree_candidates(node)) return -1; /* read here: the walk reads them without a call */
    Py_ssize_t cp = w->cf;
    if (grow((void **)&w->f, &w->cf, w->nf + 1, sizeof(Frame))) return -1;
    if (cp != w->cf) {
        int *path = PyMem_Realloc(w->path, (size_t)w->cf * sizeof(int));
        if (!path) { PyErr_NoMemory(); return -1; }
        w->path = path;
    }
    w->f[w->nf++] = (Frame){node, w->ns - s_n, s_n, 0};
    return 0;
}

/* whether some state of the frame can shift u */
static int shiftable(Core *c, const int *states, Py_ssize_t n, int u) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (core_shift_of(c, states[k], u) >= 0) return 1;
    return 0;
}

/* The LR states after shifting u from the frame's states, pushed onto the stack: their
 * number (-1: error), and whether a reduction can follow (*reduces). */
static Py_ssize_t shift_states(Core *c, Walk *w, Py_ssize_t s_off, Py_ssize_t s_n, int u, int *reduces) {
    if (grow((void **)&w->s, &w->cs, w->ns + s_n, sizeof(int))) return -1;
    Py_ssize_t k = core_shift_states(c, w->s + s_off, s_n, u, w->s + w->ns, reduces);
    w->ns += k;
    return k;
}

/* The frontier entry (path of frames 0..d-1, then u; child) */
static PyObject *frontier_entry(Walk *w, Py_ssize_t d, int u, PyObject *child) {
    PyObject *path = PyTuple_New(d + 1);
    if (!path) return NULL;
    for (Py_ssize_t j = 0; j <= d; j++) {
        PyObject *x = PyLong_FromLong(j < d ? w->path[j] : u);
        if (!x) { Py_DECREF(path); return NULL; }
        PyTuple_SET_ITEM(path, j, x);
    }
    PyObject *entry = PyTuple_Pack(2, path, child);
    Py_DECREF(path);
    return entry;
}

/* engine.walk_summary's walk (the oracle: tests/tree_walk_reference.py): from a level whose
 * vertices have LR `states`, visit every candidate of a node some state can shift, in
 * ascending order, depth first; collect its part's tokens; follow its child on a pure shift
 * (no reduction can follow: the states decide the next ones), else leave it to the frontier
 * (unless empty). Iterative: a token can cross as many terminals as it has bytes. */
static int walk(Core *c, Walk *w, Tree *root, PyObject *parts, PyObject *frontier) {
    if (push(w, root, w->ns)) return -1;
    while (w->nf) {
        Frame *f = &w->f[w->nf - 1];
        Tree *node = f->node;
        if (f->i >= node->n) {
            w->ns = f->s_off;
            w->nf--;
            continue;
        }
        int u = node->cand[f->i++];
        if (!shiftable(c, w->s + f->s_off, f->s_n, u)) continue;
        PyObject *part = tree_part_at(node, f->i - 1); /* may call Python: f stays valid */
        if (!part) return -1;
        PyObject *tokens = PyTuple_GET_ITEM(part, 0), *child = PyTuple_GET_ITEM(part, 1);
        if (tokens != Py_None && PyList_Append(parts, tokens)) return -1;
        if (child == Py_None) continue;
        Py_ssize_t d = w->nf - 1, s_off = f->s_off, s_n = f->s_n;
        int reduces;
        Py_ssize_t k = shift_states(c, w, s_off, s_n, u, &reduces);
        if (k < 0) return -1;
        if (reduces) {
            w->ns -= k; /* the real stacks decide: a walk on real levels costs a shift, not for nothing */
            int empty = tree_is_empty((Tree *)child);
            if (empty < 0) return -1;
            if (!empty) {
                PyObject *entry = frontier_entry(w, d, u, child);
                if (!entry || PyList_Append(frontier, entry)) { Py_XDECREF(entry); return -1; }
                Py_DECREF(entry);
            }
        } else {
            w->path[d] = u;
            if (push(w, (Tree *)child, k)) return -1;
        }
    }
    return 0;
}

/* Core.walk(tree, states) -> (token sets, frontier): see `walk` */
PyObject *core_walk(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (!c->ready) { PyErr_SetString(PyExc_RuntimeError, "the parser core is not set up (_setup)"); return NULL; }
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &TreeType) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "walk(tree, states): a Tree and a tuple of LR states");
        return NULL;
    }
    PyObject *states = args[1], *parts = NULL, *frontier = NULL, *out = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(states);
    Walk w = {0};
    if (grow((void **)&w.s, &w.cs, n + 1, sizeof(int))) return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        long s = PyLong_AsLong(PyTuple_GET_ITEM(states, j));
        if (s == -1 && PyErr_Occurred()) goto done;
        if (s < 0 || s >= c->n_states) { PyErr_SetString(PyExc_IndexError, "no such LR state"); goto done; }
        w.s[w.ns++] = (int)s;
    }
    Py_INCREF(args[0]); /* the root holds every tree the walk reaches */
    if ((parts = PyList_New(0)) && (frontier = PyList_New(0)) && !walk(c, &w, (Tree *)args[0], parts, frontier)) {
        PyObject *f = PyList_AsTuple(frontier);
        if (f) out = PyTuple_Pack(2, parts, f);
        Py_XDECREF(f);
    }
    Py_DECREF(args[0]);
done:
    Py_XDECREF(parts), Py_XDECREF(frontier);
    PyMem_Free(w.f), PyMem_Free(w.s), PyMem_Free(w.path);
    return out;
}

/* _compiled_source(capsule): the compiled source type whose parts trees make with one C
 * call (`SOURCE_API_NAME`, handed over by tokens/tree.py); the last one handed over stays. */
static PyObject *compiled_source_m(PyObject *self, PyObject *capsule) {
    (void)self;
    const SourceApi *api = PyCapsule_GetPointer(capsule, SOURCE_API_NAME);
    if (!api) return NULL;
    if (!api->type || !api->make) { PyErr_SetString(PyExc_ValueError, "_compiled_source: an empty API"); return NULL; }
    Py_INCREF(api->type); /* kept while the module lives */
    source_api = api;
    Py_RETURN_NONE;
}

static PyMethodDef tree_functions[] = {
    {"_compiled_source", compiled_source_m, METH_O,
     "_compiled_source(capsule): trees make parts of sources of the capsule's type in C (tokens/_source.h)."},
    {NULL},
};

int tree_module_init(PyObject *m) {
    if (PyType_Ready(&TreeType) < 0 || PyType_Ready(&SummaryType) < 0) return -1;
    if (!(str_part = PyUnicode_InternFromString("part")) ||
        !(str_candidates = PyUnicode_InternFromString("candidates")) ||
        !(tree_no_part = PyTuple_Pack(2, Py_None, Py_None)) || !(cand_cache = PyDict_New()))
        return -1;
    if (PyModule_AddObjectRef(m, "Tree", (PyObject *)&TreeType) < 0 ||
        PyModule_AddObjectRef(m, "WalkSummary", (PyObject *)&SummaryType) < 0 ||
        PyModule_AddObjectRef(m, "NO_PART", tree_no_part) < 0 || PyModule_AddFunctions(m, tree_functions) < 0)
        return -1;
    return 0;
}
