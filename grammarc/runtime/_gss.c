/* The graph-structured stack (GSS) of the GLR runtime and the parser core that builds it:
 * vertices (`Node`), levels (`Level`), and `Core`, the base of grammarc.runtime.gss.ParserCore
 * (levels, shifts, reductions, closures, all memoized per grammar). The contracts, the
 * algorithms and why they are linear are in gss.py's docstrings; this is their one
 * implementation, and tests/gss_reference.py (the Python it was ported from) its oracle.
 *
 * Memory: vertices are not tracked by the cyclic collector (they can form no cycle: see
 * _gss.h), levels neither; the core is (a ParserCore sits on its grammar and refers to it).
 * Kept vertices and levels are hash-consed in two open-addressing tables, cleared with the
 * level memo past `memo_limit` levels. Threads: the GIL is held throughout; an allocation may
 * let another thread run (a collection may run Python code), so a table is searched again
 * after each allocation before anything is inserted, and a memo is filled by setdefault. */
#include "_gss.h"
#include <stddef.h>
#include <string.h>

/* ---- small vectors and pointer sets ------------------------------------------------------ */

/* Room for `need` items of `size` bytes in *p (PyMem, capacity *cap, doubled from 16); -1 with
 * MemoryError set, *p left as it was. */
int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t cap2 = *cap ? *cap : 16;
    while (cap2 < need) cap2 *= 2;
    void *q = PyMem_Realloc(*p, (size_t)cap2 * size);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q, *cap = cap2;
    return 0;
}

int vec_push(Vec *v, void *x) {
    if (grow((void **)&v->p, &v->cap, v->n + 1, sizeof(void *))) return -1;
    v->p[v->n++] = x;
    return 0;
}

typedef struct {
    void **slots;
    size_t cap, used;
} PtrSet;

static inline size_t mix(uintptr_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x;
}

/* 1: added, 0: there already, -1: no memory */
static int ps_add(PtrSet *s, void *x) {
    if (2 * (s->used + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        void **slots = PyMem_Calloc(cap, sizeof(void *));
        if (!slots) { PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t j = mix((uintptr_t)s->slots[i]) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        PyMem_Free(s->slots);
        s->slots = slots, s->cap = cap;
    }
    size_t j = mix((uintptr_t)x) & (s->cap - 1);
    while (s->slots[j]) {
        if (s->slots[j] == x) return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->slots[j] = x, s->used++;
    return 1;
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- closures ------------------------------------------------------------------------------ */

static Closure EMPTY = {PY_SSIZE_T_MAX / 2, 0};

void cl_decref(Closure *c) {
    if (!c || c == &EMPTY || --c->refs > 0) return;
    for (Py_ssize_t i = 0; i < c->n; i++) Py_DECREF(c->e[i].ws);
    PyMem_Free(c);
}

/* ---- vertices and levels -------------------------------------------------------------------- */

static void node_dealloc(Node *self) {
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    Closure *c = self->closure;
    PyObject *parents = self->parents;
    PyObject_Free(self);
    cl_decref(c);
    Py_XDECREF(parents);
}

static PyObject *node_repr(Node *self) { return PyUnicode_FromFormat("Node(%d)", self->state); }

static PyObject *node_get_parents(Node *self, void *closure) { return Py_NewRef(self->parents); }
static PyObject *node_get_kept(Node *self, void *closure) { return PyBool_FromLong(self->kept); }
static PyObject *node_get_state(Node *self, void *closure) { return PyLong_FromLong(self->state); }

static PyGetSetDef node_getset[] = {
    {"state", (getter)node_get_state, NULL, "its LR state", NULL},
    {"parents", (getter)node_get_parents, NULL, "the vertices below it (a tuple)", NULL},
    {"kept", (getter)node_get_kept, NULL, "hash-consed by its core (its identity may key memos)", NULL},
    {NULL},
};

PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.runtime._gss.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = (destructor)node_dealloc,
    .tp_repr = (reprfunc)node_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A GSS vertex: an LR state above every stack that reaches it (see gss.py).",
    .tp_weaklistoffset = offsetof(Node, weakrefs),
    .tp_getset = node_getset,
};

/* steals `parents` (a tuple); NULL and an exception when out of memory */
Node *node_new(int state, PyObject *parents, char kept) {
    Node *n = PyObject_New(Node, &NodeType);
    if (!n) { Py_DECREF(parents); return NULL; }
    n->state = state, n->kept = kept, n->parents = parents, n->closure = NULL, n->weakrefs = NULL;
    return n;
}

static void level_dealloc(Level *self) {
    Py_XDECREF(self->vertices);
    Py_XDECREF(self->states);
    Py_XDECREF(self->openings);
    PyObject_Free(self);
}

static PyObject *level_get_vertices(Level *self, void *c) { return Py_NewRef(self->vertices); }
static PyObject *level_get_states(Level *self, void *c) { return Py_NewRef(self->states); }
static PyObject *level_get_accepting(Level *self, void *c) { return PyBool_FromLong(self->accepting); }
static PyObject *level_get_openings(Level *self, void *c) {
    return Py_NewRef(self->openings ? self->openings : Py_None);
}

static PyGetSetDef level_getset[] = {
    {"vertices", (getter)level_get_vertices, NULL, "its vertices (a tuple, by ascending state)", NULL},
    {"states", (getter)level_get_states, NULL, "the vertices' LR states (ascending)", NULL},
    {"accepting", (getter)level_get_accepting, NULL, "whether the text up to here is complete", NULL},
    {"openings", (getter)level_get_openings, NULL, "ParserCore.openings' memo (None: not made)", NULL},
    {NULL},
};

PyTypeObject LevelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.runtime._gss.Level",
    .tp_basicsize = sizeof(Level),
    .tp_dealloc = (destructor)level_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The GSS vertices of one text position after its shifts and reductions (see gss.py).",
    .tp_getset = level_getset,
};

/* ---- hash-consing tables: kind 0 vertices by (state, parents), kind 1 levels by vertices --- */

static size_t key_hash(int tag, PyObject *const *arr, Py_ssize_t n) {
    size_t h = mix((uintptr_t)tag + 0x9e3779b97f4a7c15ULL);
    for (Py_ssize_t i = 0; i < n; i++) h = mix(h * 31 + (uintptr_t)arr[i]);
    return h;
}

static size_t entry_hash(int kind, PyObject *o) {
    if (kind == 0) {
        Node *v = (Node *)o;
        return key_hash(v->state, &PyTuple_GET_ITEM(v->parents, 0), PyTuple_GET_SIZE(v->parents));
    }
    PyObject *vs = ((Level *)o)->vertices;
    return key_hash(-7, &PyTuple_GET_ITEM(vs, 0), PyTuple_GET_SIZE(vs));
}

static int entry_is(int kind, PyObject *o, int tag, PyObject *const *arr, Py_ssize_t n) {
    PyObject *t;
    if (kind == 0) {
        if (((Node *)o)->state != tag) return 0;
        t = ((Node *)o)->parents;
    } else {
        t = ((Level *)o)->vertices;
    }
    return PyTuple_GET_SIZE(t) == n && !memcmp(&PyTuple_GET_ITEM(t, 0), arr, (size_t)n * sizeof(PyObject *));
}

/* room for one more entry (no Python allocation: cannot let another thread in) */
static int table_reserve(Table *t, int kind) {
    if (2 * (t->used + 1) <= t->cap) return 0;
    size_t cap = t->cap ? 2 * t->cap : 1024;
    PyObject **slots = PyMem_Calloc(cap, sizeof(PyObject *));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = entry_hash(kind, t->slots[i]) & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = slots, t->cap = cap;
    return 0;
}

/* the slot holding the entry of the key, or the empty slot where it goes (t->cap > 0) */
static PyObject **table_find(Table *t, int kind, int tag, PyObject *const *arr, Py_ssize_t n) {
    size_t j = key_hash(tag, arr, n) & (t->cap - 1);
    while (t->slots[j] && !entry_is(kind, t->slots[j], tag, arr, n)) j = (j + 1) & (t->cap - 1);
    return &t->slots[j];
}

void table_clear(Table *t) {
    PyObject **slots = t->slots;
    size_t cap = t->cap;
    t->slots = NULL, t->cap = t->used = 0;
    for (size_t i = 0; i < cap; i++) Py_XDECREF(slots[i]);
    PyMem_Free(slots);
}

/* ---- the core's tables ----------------------------------------------------------------------- */

int core_shift_of(Core *c, int state, int t) {
    Py_ssize_t lo = c->shift_off[state], hi = c->shift_off[state + 1];
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (c->shift[mid].t < t) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->shift_off[state + 1] && c->shift[lo].t == t ? c->shift[lo].to : -1;
}

static int goto_of(Core *c, int state, int lhs) {
    Py_ssize_t lo = c->goto_off[state], hi = c->goto_off[state + 1];
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (c->gotos[mid].t < lhs) lo = mid + 1;
        else hi = mid;
    }
    if (lo < c->goto_off[state + 1] && c->gotos[lo].t == lhs) return c->gotos[lo].to;
    PyErr_Format(PyExc_KeyError, "no goto from state %d on nonterminal %d", state, lhs);
    return -1;
}

/* ---- vertices, levels ------------------------------------------------------------------------ */

/* The vertex of `state` over distinct `parents` (new reference): hash-consed when `keep` and
 * every parent is kept (gss.py `_vertex`). */
static Node *make_vertex(Core *c, int state, PyObject **parents, Py_ssize_t n, int keep) {
    for (Py_ssize_t i = 0; keep && i < n; i++) keep = ((Node *)parents[i])->kept;
    PyObject *tuple = PyTuple_New(n);
    if (!tuple) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(tuple, i, Py_NewRef(parents[i]));
    if (!keep) {
        c->work_vertices++;
        return node_new(state, tuple, 0);
    }
    PyObject **items = &PyTuple_GET_ITEM(tuple, 0);
    if (n > 1) qsort(items, (size_t)n, sizeof(PyObject *), cmp_ptr);
    if (table_reserve(&c->vertices, 0)) { Py_DECREF(tuple); return NULL; }
    PyObject **slot = table_find(&c->vertices, 0, state, items, n);
    if (*slot) { Py_DECREF(tuple); return (Node *)Py_NewRef(*slot); }
    Node *node = node_new(state, tuple, 1);
    if (!node) return NULL;
    /* the allocation may have let another thread in: look again */
    if (table_reserve(&c->vertices, 0)) { Py_DECREF(node); return NULL; }
    slot = table_find(&c->vertices, 0, state, items, n);
    if (*slot) { Py_DECREF(node); return (Node *)Py_NewRef(*slot); }
    *slot = Py_NewRef(node);
    c->vertices.used++;
    c->work_vertices++;
    return node;
}

/* A level of `nodes` (distinct states, ascending), not hash-consed. */
static Level *new_level(Core *c, PyObject **nodes, Py_ssize_t n) {
    Level *level = PyObject_New(Level, &LevelType);
    if (!level) return NULL;
    level->vertices = level->states = level->openings = NULL, level->accepting = 0;
    if (!(level->vertices = PyTuple_New(n)) || !(level->states = PyTuple_New(n))) { Py_DECREF(level); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        int s = ((Node *)nodes[i])->state;
        PyObject *v = PyLong_FromLong(s);
        if (!v) { Py_DECREF(level); return NULL; }
        PyTuple_SET_ITEM(level->states, i, v);
        PyTuple_SET_ITEM(level->vertices, i, Py_NewRef(nodes[i]));
        if (s == c->accept_state) level->accepting = 1;
    }
    return level;
}

Level *level_of(Core *c, PyObject **nodes, Py_ssize_t n) {
    if (table_reserve(&c->by_vertices, 1)) return NULL;
    PyObject **slot = table_find(&c->by_vertices, 1, -7, nodes, n);
    if (*slot) return (Level *)Py_NewRef(*slot);
    Level *level = new_level(c, nodes, n);
    if (!level) return NULL;
    if (table_reserve(&c->by_vertices, 1)) { Py_DECREF(level); return NULL; }
    slot = table_find(&c->by_vertices, 1, -7, nodes, n);
    if (*slot) { Py_DECREF(level); return (Level *)Py_NewRef(*slot); }
    *slot = Py_NewRef(level);
    c->by_vertices.used++;
    return level;
}

/* ---- reductions and closures ------------------------------------------------------------------ */

/* The vertices exactly `depth` edges below `v` (each once), borrowed (v keeps them alive). */
static int ancestors(Node *v, int depth, Vec *out) {
    out->n = 0;
    if (depth == 1) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v->parents); i++)
            if (vec_push(out, PyTuple_GET_ITEM(v->parents, i))) return -1;
        return 0;
    }
    Vec cur = {0}, nxt = {0};
    int rc = -1;
    if (vec_push(&cur, v)) goto done;
    for (int d = 0; d < depth; d++) {
        PtrSet seen = {0};
        nxt.n = 0;
        for (Py_ssize_t i = 0; i < cur.n; i++) {
            PyObject *ps = ((Node *)cur.p[i])->parents;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(ps); j++) {
                int added = ps_add(&seen, PyTuple_GET_ITEM(ps, j));
                if (added < 0 || (added && vec_push(&nxt, PyTuple_GET_ITEM(ps, j)))) {
                    PyMem_Free(seen.slots);
                    goto done;
                }
            }
        }
        PyMem_Free(seen.slots);
        Vec tmp = cur; cur = nxt; nxt = tmp;
    }
    for (Py_ssize_t i = 0; i < cur.n; i++)
        if (vec_push(out, cur.p[i])) goto done;
    rc = 0;
done:
    PyMem_Free(cur.p), PyMem_Free(nxt.p);
    return rc;
}

typedef struct {
    Node *k; /* owned */
    const Red *red;
} Kid;

typedef struct {
    Node *v; /* owned */
    Kid *kids;
    Py_ssize_t nk;
    char reduced;
} Frame;

static void free_kids(Kid *kids, Py_ssize_t nk) {
    for (Py_ssize_t i = 0; i < nk; i++) Py_DECREF(kids[i].k);
    PyMem_Free(kids);
}

/* The vertices one reduction makes from `v`, with the lookaheads it is made under (gss.py `_reduce`). */
static int reduce(Core *c, Node *v, Kid **out, Py_ssize_t *nout) {
    Kid *kids = NULL;
    Py_ssize_t nk = 0, cap = 0;
    Vec bases = {0};
    for (Py_ssize_t r = c->red_off[v->state]; r < c->red_off[v->state + 1]; r++) {
        const Red *red = &c->red[r];
        if (ancestors(v, red->len, &bases)) goto fail;
        for (Py_ssize_t i = 0; i < bases.n; i++) {
            Node *base = (Node *)bases.p[i];
            int to = goto_of(c, base->state, red->lhs);
            if (to < 0) goto fail;
            Node *made = make_vertex(c, to, (PyObject **)&bases.p[i], 1, 1);
            if (!made) goto fail;
            if (nk == cap) {
                cap = cap ? 2 * cap : 8;
                Kid *k = PyMem_Realloc(kids, (size_t)cap * sizeof(Kid));
                if (!k) { Py_DECREF(made); PyErr_NoMemory(); goto fail; }
                kids = k;
            }
            kids[nk].k = made, kids[nk].red = red, nk++;
        }
    }
    PyMem_Free(bases.p);
    c->work_reductions += (unsigned long long)nk;
    *out = kids, *nout = nk;
    return 0;
fail:
    PyMem_Free(bases.p);
    free_kids(kids, nk);
    return -1;
}

/* a new tuple: the items of `a`, then those of `b` not in `a` (each tuple's items distinct) */
static PyObject *dedup_concat(PyObject *a, PyObject *const *b, Py_ssize_t nb) {
    Py_ssize_t na = PyTuple_GET_SIZE(a), n = na;
    PyObject **ai = &PyTuple_GET_ITEM(a, 0);
    PyObject *stackbuf[64];
    PyObject **out = na + nb <= 64 ? stackbuf : PyMem_Malloc((size_t)(na + nb) * sizeof(PyObject *));
    if (!out) return PyErr_NoMemory();
    memcpy(out, ai, (size_t)na * sizeof(PyObject *));
    PtrSet seen = {0};
    int big = na * nb > 256;
    for (Py_ssize_t i = 0; big && i < na; i++)
        if (ps_add(&seen, ai[i]) < 0) goto fail;
    for (Py_ssize_t j = 0; j < nb; j++) {
        int fresh = 1;
        if (big) {
            if ((fresh = ps_add(&seen, b[j])) < 0) goto fail;
        } else {
            for (Py_ssize_t i = 0; i < na && fresh; i++) fresh = ai[i] != b[j];
        }
        if (fresh) out[n++] = b[j];
    }
    PyMem_Free(seen.slots);
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(out[i]));
    if (out != stackbuf) PyMem_Free(out);
    return t;
fail:
    PyMem_Free(seen.slots);
    if (out != stackbuf) PyMem_Free(out);
    return NULL;
}

/* a + (b filtered to lookaheads `la`), both by ascending u, into a new closure; where both have u,
 * the union of their vertices (b's kept as it is where a has none, shared) */
static Closure *merge(const CEntry *a, Py_ssize_t na, const CEntry *b, Py_ssize_t nb, const int *la, Py_ssize_t nla) {
    Closure *out = PyMem_Malloc(sizeof(Closure) + (size_t)(na + nb) * sizeof(CEntry));
    if (!out) { PyErr_NoMemory(); return NULL; }
    out->refs = 1, out->n = 0;
    Py_ssize_t i = 0, j = 0, l = 0;
    while (i < na || j < nb) {
        if (j < nb) { /* skip b's entries outside the lookaheads */
            while (l < nla && la[l] < b[j].u) l++;
            if (l == nla || la[l] != b[j].u) { j++; continue; }
        }
        CEntry *e = &out->e[out->n];
        if (j == nb || (i < na && a[i].u < b[j].u)) {
            e->u = a[i].u, e->ws = Py_NewRef(a[i].ws), i++;
        } else if (i == na || b[j].u < a[i].u) {
            e->u = b[j].u, e->ws = Py_NewRef(b[j].ws), j++;
        } else {
            e->u = a[i].u;
            PyObject *bw = b[j].ws;
            e->ws = a[i].ws == bw ? Py_NewRef(bw)
                                  : dedup_concat(a[i].ws, &PyTuple_GET_ITEM(bw, 0), PyTuple_GET_SIZE(bw));
            i++, j++;
            if (!e->ws) { cl_decref(out); return NULL; }
        }
        out->n++;
    }
    return out;
}

/* whether every u of `cl` is in `la` */
static int covers(const int *la, Py_ssize_t nla, const Closure *cl) {
    Py_ssize_t l = 0;
    for (Py_ssize_t i = 0; i < cl->n; i++) {
        while (l < nla && la[l] < cl->e[i].u) l++;
        if (l == nla || la[l] != cl->e[i].u) return 0;
    }
    return 1;
}

/* gss.py `_combine` */
static Closure *combine(Core *c, Kid *kids, Py_ssize_t nk) {
    Closure *result = NULL;
    for (Py_ssize_t i = 0; i < nk; i++) {
        Node *k = kids[i].k;
        Closure *below = k->closure;
        const int *la = c->las + kids[i].red->la_off;
        Py_ssize_t nla = kids[i].red->la_n;
        const int *own = c->own + c->own_off[k->state];
        Py_ssize_t nown = c->own_off[k->state + 1] - c->own_off[k->state];
        if (!nown) {
            if ((!result || !result->n) && covers(la, nla, below)) {
                cl_decref(result);
                result = below, below->refs++;
                continue;
            }
            if (result == below) continue;
        }
        Closure *merged = result ? result : &EMPTY;
        merged->refs++;
        if (nown) {
            PyObject *single = PyTuple_Pack(1, (PyObject *)k);
            CEntry *mine = single ? PyMem_Malloc((size_t)nown * sizeof(CEntry)) : NULL;
            if (!mine) {
                if (single) PyErr_NoMemory();
                Py_XDECREF(single), cl_decref(merged), cl_decref(result);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < nown; j++) mine[j].u = own[j], mine[j].ws = single;
            Closure *m = merge(merged->e, merged->n, mine, nown, la, nla);
            PyMem_Free(mine), Py_DECREF(single), cl_decref(merged);
            if (!(merged = m)) { cl_decref(result); return NULL; }
        }
        Closure *m = merge(merged->e, merged->n, below->e, below->n, la, nla);
        cl_decref(merged), cl_decref(result);
        if (!(result = m)) return NULL;
    }
    if (!result) { result = &EMPTY; EMPTY.refs++; }
    return result;
}

/* gss.py `_closure`: iterative (stacks can be deep), memoized on each vertex reached */
static int closure(Core *c, Node *top) {
    if (top->closure) return 0;
    Frame *stack = NULL;
    Py_ssize_t sp = 0, cap = 0;
    int rc = -1;
#define PUSH(node)                                                                          \
    do {                                                                                    \
        if (sp == cap) {                                                                    \
            cap = cap ? 2 * cap : 64;                                                       \
            Frame *s_ = PyMem_Realloc(stack, (size_t)cap * sizeof(Frame));                  \
            if (!s_) { PyErr_NoMemory(); goto done; }                                       \
            stack = s_;                                                                     \
        }                                                                                   \
        stack[sp].v = (Node *)Py_NewRef(node), stack[sp].kids = NULL, stack[sp].nk = 0;    \
        stack[sp].reduced = 0, sp++;                                                        \
    } while (0)
    PUSH(top);
    while (sp) {
        Frame *f = &stack[sp - 1];
        if (!f->reduced && f->v->closure) { /* reached twice (a DAG) and done meanwhile: not reduced again, */
            Py_DECREF(f->v);                /* so each vertex is reduced once whatever the walk's order */
            sp--;
            continue;
        }
        if (!f->reduced) {
            if (reduce(c, f->v, &f->kids, &f->nk)) goto done;
            f->reduced = 1;
            Py_ssize_t nk = f->nk, base = sp;
            Kid *kids = f->kids;
            for (Py_ssize_t i = 0; i < nk; i++)
                if (!kids[i].k->closure) PUSH(kids[i].k);
            if (sp > base) continue;
        }
        f = &stack[sp - 1];
        if (!f->v->closure) { /* else reached twice (a DAG) and done meanwhile */
            Closure *made = combine(c, f->kids, f->nk);
            if (!made) goto done;
            if (f->v->closure) cl_decref(made);
            else f->v->closure = made;
        }
        free_kids(f->kids, f->nk);
        Py_DECREF(f->v);
        sp--;
    }
    rc = 0;
done:
    while (sp) {
        sp--;
        free_kids(stack[sp].kids, stack[sp].nk);
        Py_DECREF(stack[sp].v);
    }
    PyMem_Free(stack);
    return rc;
#undef PUSH
}

/* ---- building levels -------------------------------------------------------------------------- */

typedef struct {
    int s;
    PyObject *v; /* Node */
} SV;

static int cmp_sv(const void *a, const void *b) {
    const SV *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

static int sv_push(SV **a, Py_ssize_t *n, Py_ssize_t *cap, int s, PyObject *v) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        SV *p = PyMem_Realloc(*a, (size_t)*cap * sizeof(SV));
        if (!p) { PyErr_NoMemory(); return -1; }
        *a = p;
    }
    (*a)[*n].s = s, (*a)[*n].v = Py_NewRef(v), (*n)++;
    return 0;
}

static void sv_free(SV *a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(a[i].v);
    PyMem_Free(a);
}

/* gss.py `_build` over `n` completions (parents[i], terms[i]), borrowed. `upcoming`: NULL, or a
 * bitmap over terminals + 1 (a token tree walk: not kept, reductions filtered). */
Level *build(Core *c, PyObject **parents, const int *terms, Py_ssize_t n, int keep, const char *upcoming) {
    SV *sh = NULL, *reached = NULL;
    Py_ssize_t nsh = 0, csh = 0, nr = 0, cr = 0;
    Level *level = NULL;
    Vec group = {0};
    PyObject **nodes = NULL;
    Py_ssize_t nn = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int to = core_shift_of(c, ((Node *)parents[i])->state, terms[i]);
        if (to < 0) {
            PyErr_Format(PyExc_KeyError, "state %d cannot shift terminal %d", ((Node *)parents[i])->state, terms[i]);
            goto done;
        }
        if (sv_push(&sh, &nsh, &csh, to, parents[i])) goto done;
    }
    qsort(sh, (size_t)nsh, sizeof(SV), cmp_sv);
    for (Py_ssize_t i = 0; i < nsh;) {
        int state = sh[i].s;
        group.n = 0;
        for (; i < nsh && sh[i].s == state; i++)
            if ((!group.n || group.p[group.n - 1] != sh[i].v) && vec_push(&group, sh[i].v)) goto done;
        Node *top = make_vertex(c, state, (PyObject **)group.p, group.n, keep);
        if (!top) goto done;
        int failed = ((upcoming || c->own_off[state + 1] > c->own_off[state]) &&
                      sv_push(&reached, &nr, &cr, state, (PyObject *)top)) ||
                     closure(c, top);
        for (Py_ssize_t e = 0; !failed && e < top->closure->n; e++) {
            CEntry *ce = &top->closure->e[e];
            if (upcoming && (ce->u + 1 >= c->n_terms + 1 || !upcoming[ce->u + 1])) continue;
            for (Py_ssize_t w = 0; !failed && w < PyTuple_GET_SIZE(ce->ws); w++) {
                PyObject *v = PyTuple_GET_ITEM(ce->ws, w);
                failed = sv_push(&reached, &nr, &cr, ((Node *)v)->state, v);
            }
        }
        Py_DECREF(top);
        if (failed) goto done;
    }
    qsort(reached, (size_t)nr, sizeof(SV), cmp_sv);
    if (nr && !(nodes = PyMem_Malloc((size_t)nr * sizeof(PyObject *)))) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nr;) {
        int state = reached[i].s;
        Py_ssize_t j = i + 1;
        while (j < nr && reached[j].s == state) j++;
        if (j == i + 1 || reached[j - 1].v == reached[i].v) { /* one vertex */
            nodes[nn++] = Py_NewRef(reached[i].v);
            i = j;
            continue;
        }
        /* gss.py `_merged`: one vertex over the union of their parents */
        PtrSet seen = {0};
        group.n = 0;
        for (Py_ssize_t k = i; k < j; k++) {
            if (k > i && reached[k].v == reached[k - 1].v) continue;
            PyObject *ps = ((Node *)reached[k].v)->parents;
            for (Py_ssize_t p = 0; p < PyTuple_GET_SIZE(ps); p++) {
                int added = ps_add(&seen, PyTuple_GET_ITEM(ps, p));
                if (added < 0 || (added && vec_push(&group, PyTuple_GET_ITEM(ps, p)))) {
                    PyMem_Free(seen.slots);
                    goto done;
                }
            }
        }
        PyMem_Free(seen.slots);
        Node *m = make_vertex(c, state, (PyObject **)group.p, group.n, keep);
        if (!m) goto done;
        nodes[nn++] = (PyObject *)m;
        i = j;
    }
    level = keep ? level_of(c, nodes, nn) : new_level(c, nodes, nn);
done:
    for (Py_ssize_t i = 0; i < nn; i++) Py_DECREF(nodes[i]);
    PyMem_Free(nodes), PyMem_Free(group.p);
    sv_free(sh, nsh), sv_free(reached, nr);
    return level;
}

void forget(Core *c) {
    PyDict_Clear(c->levels);
    table_clear(&c->vertices);
    table_clear(&c->by_vertices);
}

/* completions: an iterable of (Node, int) */
int read_completions(PyObject *completions, Vec *nodes, int **terms) {
    PyObject *fast = PySequence_Fast(completions, "completions must be iterable");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    *terms = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int));
    if (!*terms) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyObject_TypeCheck(PyTuple_GET_ITEM(pair, 0), &NodeType)) {
            PyErr_SetString(PyExc_TypeError, "a completion is a (Node, terminal) pair");
            goto fail;
        }
        long t = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
        if (t == -1 && PyErr_Occurred()) goto fail;
        (*terms)[i] = (int)t;
        if (vec_push(nodes, PyTuple_GET_ITEM(pair, 0))) goto fail;
    }
    /* the completions' container keeps the vertices alive; `fast` may be a fresh list */
    for (Py_ssize_t i = 0; i < n; i++) Py_INCREF(nodes->p[i]);
    Py_DECREF(fast);
    return 0;
fail:
    Py_DECREF(fast);
    PyMem_Free(*terms);
    *terms = NULL;
    return -1;
}

Level *core_level(Core *c, PyObject *completions) {
    PyObject *found = PyDict_GetItemWithError(c->levels, completions);
    if (found) return (Level *)Py_NewRef(found);
    if (PyErr_Occurred()) return NULL;
    if (PyDict_GET_SIZE(c->levels) > c->memo_limit) forget(c);
    Vec nodes = {0};
    int *terms = NULL;
    if (read_completions(completions, &nodes, &terms)) { PyMem_Free(nodes.p); return NULL; }
    Level *level = build(c, (PyObject **)nodes.p, terms, nodes.n, 1, NULL);
    for (Py_ssize_t i = 0; i < nodes.n; i++) Py_DECREF(nodes.p[i]);
    PyMem_Free(nodes.p), PyMem_Free(terms);
    if (!level) return NULL;
    found = PyDict_SetDefault(c->levels, completions, (PyObject *)level);
    Py_XINCREF(found);
    Py_DECREF(level);
    return (Level *)found;
}

PyObject *core_openings(Core *c, Level *level) {
    if (level->openings) return level->openings;
    Py_ssize_t n = 0, nv = PyTuple_GET_SIZE(level->vertices);
    for (Py_ssize_t i = 0; i < nv; i++) {
        int s = ((Node *)PyTuple_GET_ITEM(level->vertices, i))->state;
        n += c->shift_off[s + 1] - c->shift_off[s];
    }
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    n = 0;
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *v = PyTuple_GET_ITEM(level->vertices, i);
        int s = ((Node *)v)->state;
        for (Py_ssize_t j = c->shift_off[s]; j < c->shift_off[s + 1]; j++) {
            PyObject *t = PyLong_FromLong(c->shift[j].t);
            PyObject *pair = t ? PyTuple_Pack(2, v, t) : NULL;
            Py_XDECREF(t);
            if (!pair) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, n++, pair);
        }
    }
    if (level->openings) Py_DECREF(out); /* made meanwhile by another thread */
    else level->openings = out;
    return level->openings;
}

