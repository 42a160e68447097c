/* A small token tree level, made in C (the contract is grammarc/tokens/tree.py's and
 * index.py's): fewer than `big` token suffixes (rows[i], pos[i]) after terminal
 * `previous`, and their next bytes. A new schema's walks make thousands of such parts, each
 * a walk of a few suffixes: their Python glue (a lock, a method call, a TokenSet and a
 * child tree made in Python) cost more than the walks.
 *
 * PartMaker(tables, tokens, n_words, limits, follows, opening, token_set, index, big)
 *   what every small level of one token index reads: tables, the index's list of
 *   `Table`s by terminal (None until read: then the index's `_table(u)` makes it);
 *   tokens, the vocabulary's `Tokens`; n_words, its mask's uint32 words; limits, per
 *   terminal its token budget or None (`except!`); follows, per terminal the terminals
 *   that may come right after it, ascending (`ParserCore.follows`); opening, 32 bytes per
 *   terminal, its first bytes (bit b % 8 of byte b / 8); token_set, the TokenSet type;
 *   index, a weak reference to the index (for the rare parts left to Python); big, the
 *   number of splits from which a child is a big level (the index's BUCKETED_ROWS).
 *   starting(previous, present) -> frozenset: the terminals after `previous` that can
 *   start with a byte of `present` (an int, bit b = byte b), memoized (a level's next bytes
 *   are mostly those of another level after the same terminal). `made`: parts made.
 *
 * SmallLevel(maker, previous, rows, pos): a tree's source (int32 buffers, copied unless
 *   bytes; each suffix checked to lie strictly inside its token, and its next byte kept:
 *   each part's walk picks its suffixes by it). candidates() ->
 *   `starting(previous, its next bytes)`. The compiled tree makes its parts through
 *   `small_make` (the capsule `SOURCE_API`, _source.h): one walk over all the suffixes,
 *   picking those whose next byte opens the terminal; the ends packed into a TokenSet and
 *   the splits kept as a child level, its candidates read now. All of it with the GIL held
 *   and no Python code run, so a part is made and published with no other thread in
 *   between: threads sharing the index share one object per part, made once. A
 *   token-limited terminal's part and a big child are left to the index's Python
 *   (`_small_limited`, `_child`), under its build lock. */
#include "_scan.h"
#include "_source.h"
#include <structmember.h>

/* `starting` answers kept per maker (each a frozenset of terminals: at most a few kilobytes
 * on a big schema); cleared past this many. */
#define STARTING_MEMO_LIMIT 4096

typedef struct {
    PyObject_HEAD
    PyObject *tables;    /* list: terminal -> Table or None (the index's own list) */
    TokensObject *tokens;
    Py_ssize_t n_words, n_terms, big, made;
    char *limited;       /* per terminal: 1 when token-limited */
    PyObject *follows;   /* tuple of tuples of int */
    PyObject *opening;   /* bytes, 32 per terminal */
    PyObject *token_set; /* the TokenSet type */
    PyObject *index;     /* weakref to the index */
    PyObject *memo;      /* dict: bytes (int32 previous, 32 bytes present) -> frozenset */
} MakerObject;

typedef struct {
    PyObject_HEAD
    MakerObject *maker;
    int32_t previous;
    PyObject *rows, *pos; /* bytes of int32 */
    uint8_t *next;        /* each suffix's next byte (owned) */
    unsigned char after[32];
} SmallObject;

static PyTypeObject MakerType, SmallType;

/* -- the maker ------------------------------------------------------------------------- */

static PyObject *maker_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tables", "tokens", "n_words", "limits", "follows", "opening", "token_set", "index",
                             "big", NULL};
    PyObject *tables, *limits, *follows, *opening, *token_set, *index;
    TokensObject *tokens;
    Py_ssize_t n_words, big;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!nOOO!O!O!n:PartMaker", kwlist, &PyList_Type, &tables,
                                     &TokensType, &tokens, &n_words, &limits, &follows, &PyBytes_Type, &opening,
                                     &PyType_Type, &token_set, &_PyWeakref_RefType, &index, &big))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)token_set, &SetType) || n_words < 0 || big < 0) {
        PyErr_SetString(PyExc_ValueError, "PartMaker: token_set must be a PackedSet type, n_words >= 0, big >= 0");
        return NULL;
    }
    if (n_words * 32 < tokens->ids.len / (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "PartMaker: fewer mask words than token rows");
        return NULL;
    }
    MakerObject *m = (MakerObject *)type->tp_alloc(type, 0);
    if (!m) return NULL;
    m->tables = Py_NewRef(tables), m->tokens = (TokensObject *)Py_NewRef(tokens);
    m->opening = Py_NewRef(opening), m->token_set = Py_NewRef(token_set), m->index = Py_NewRef(index);
    m->n_words = n_words, m->big = big;
    if (!(m->memo = PyDict_New()) || !(m->follows = PySequence_Tuple(follows))) goto fail;
    PyObject *fast = PySequence_Fast(limits, "PartMaker: limits must be a sequence");
    if (!fast) goto fail;
    m->n_terms = PySequence_Fast_GET_SIZE(fast);
    m->limited = PyMem_Calloc((size_t)(m->n_terms ? m->n_terms : 1), 1);
    for (Py_ssize_t u = 0; m->limited && u < m->n_terms; u++) m->limited[u] = PySequence_Fast_GET_ITEM(fast, u) != Py_None;
    Py_DECREF(fast);
    if (!m->limited) { PyErr_NoMemory(); goto fail; }
    if (PyTuple_GET_SIZE(m->follows) != m->n_terms || PyBytes_GET_SIZE(opening) != 32 * m->n_terms) {
        PyErr_SetString(PyExc_ValueError, "PartMaker: limits, follows and opening must cover the same terminals");
        goto fail;
    }
    for (Py_ssize_t u = 0; u < m->n_terms; u++)
        if (!PyTuple_Check(PyTuple_GET_ITEM(m->follows, u))) {
            PyErr_SetString(PyExc_TypeError, "PartMaker: each terminal's follows must be a tuple");
            goto fail;
        }
    return (PyObject *)m;
fail:
    Py_DECREF(m);
    return NULL;
}

static void maker_dealloc(MakerObject *m) {
    Py_XDECREF(m->tables), Py_XDECREF(m->tokens), Py_XDECREF(m->follows), Py_XDECREF(m->opening);
    Py_XDECREF(m->token_set), Py_XDECREF(m->index), Py_XDECREF(m->memo);
    PyMem_Free(m->limited);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* The frozenset of terminals after `previous` whose first bytes meet `present` (new
 * reference; NULL with an error set), memoized. */
static PyObject *maker_starting(MakerObject *m, int32_t previous, const unsigned char present[32]) {
    if (previous < 0 || previous >= m->n_terms) {
        PyErr_SetString(PyExc_ValueError, "starting: no such terminal");
        return NULL;
    }
    char buf[36];
    memcpy(buf, &previous, 4), memcpy(buf + 4, present, 32);
    PyObject *key = PyBytes_FromStringAndSize(buf, 36);
    if (!key) return NULL;
    PyObject *found = PyDict_GetItemWithError(m->memo, key);
    if (found || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(found);
    }
    PyObject *follow = PyTuple_GET_ITEM(m->follows, previous), *picked = PyList_New(0);
    const unsigned char *opening = (const unsigned char *)PyBytes_AS_STRING(m->opening);
    for (Py_ssize_t i = 0; picked && i < PyTuple_GET_SIZE(follow); i++) {
        PyObject *item = PyTuple_GET_ITEM(follow, i);
        long u = PyLong_AsLong(item);
        if (u == -1 && PyErr_Occurred()) Py_CLEAR(picked);
        else if (u < 0 || u >= m->n_terms) {
            PyErr_SetString(PyExc_ValueError, "starting: a following terminal out of range");
            Py_CLEAR(picked);
        } else {
            const unsigned char *first = opening + 32 * u;
            int meets = 0;
            for (int j = 0; j < 32; j++) meets |= first[j] & present[j];
            if (meets && PyList_Append(picked, item)) Py_CLEAR(picked);
        }
    }
    found = picked ? PyFrozenSet_New(picked) : NULL;
    Py_XDECREF(picked);
    if (found) {
        if (PyDict_GET_SIZE(m->memo) >= STARTING_MEMO_LIMIT) PyDict_Clear(m->memo);
        if (PyDict_SetItem(m->memo, key, found)) Py_CLEAR(found);
    }
    Py_DECREF(key);
    return found;
}

static PyObject *maker_starting_m(MakerObject *m, PyObject *args) {
    int previous;
    PyObject *present;
    unsigned char bits[32];
    if (!PyArg_ParseTuple(args, "iO!:starting", &previous, &PyLong_Type, &present)) return NULL;
    if (_PyLong_AsByteArray((PyLongObject *)present, bits, 32, 1, 0) < 0) return NULL;
    return maker_starting(m, previous, bits);
}

static PyMemberDef maker_members[] = {
    {"made", T_PYSSIZET, offsetof(MakerObject, made), READONLY, "how many small parts were made here"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef maker_methods[] = {
    {"starting", (PyCFunction)maker_starting_m, METH_VARARGS,
     "starting(previous, present): the terminals after previous that can start with a byte of present."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.tokens._scan.PartMaker",
    .tp_basicsize = sizeof(MakerObject),
    .tp_dealloc = (destructor)maker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What a token index's small tree levels read (see _small.c).",
    .tp_methods = maker_methods,
    .tp_members = maker_members,
    .tp_new = maker_new,
};

/* -- a small level ----------------------------------------------------------------------- */

/* A level over the suffixes (rows, pos) (bytes of int32, stolen: NULL fails), each strictly
 * inside its token, whose next bytes are `next` (n of them, stolen, PyMem) and, as a set,
 * `after`; nothing checked (the caller did, or its walk gave them). */
static PyObject *small_of(MakerObject *m, int32_t previous, PyObject *rows, PyObject *pos, uint8_t *next,
                          const unsigned char after[32]) {
    SmallObject *s = rows && pos && next ? PyObject_New(SmallObject, &SmallType) : NULL;
    if (!s) {
        Py_XDECREF(rows), Py_XDECREF(pos), PyMem_Free(next);
        return rows && pos && !next ? PyErr_NoMemory() : NULL;
    }
    s->maker = (MakerObject *)Py_NewRef(m), s->previous = previous, s->rows = rows, s->pos = pos, s->next = next;
    memcpy(s->after, after, 32);
    return (PyObject *)s;
}

/* The next byte of each of n suffixes (r[i], p[i]) (each strictly inside its token), in a
 * new PyMem buffer (NULL: out of memory). */
static uint8_t *next_bytes_of(const TokensObject *tokens, const int32_t *r, const int32_t *p, Py_ssize_t n) {
    uint8_t *next = PyMem_Malloc((size_t)(n ? n : 1));
    const int64_t *off = tokens->offsets.buf;
    const uint8_t *data = tokens->data.buf;
    for (Py_ssize_t i = 0; next && i < n; i++) next[i] = data[off[r[i]] + p[i]];
    return next;
}

static PyObject *small_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"maker", "previous", "rows", "pos", NULL};
    MakerObject *m;
    int previous;
    PyObject *rows_in, *pos_in;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!iOO:SmallLevel", kwlist, &MakerType, &m, &previous, &rows_in,
                                     &pos_in))
        return NULL;
    if (previous < 0 || previous >= m->n_terms) {
        PyErr_SetString(PyExc_ValueError, "SmallLevel: no such terminal");
        return NULL;
    }
    PyObject *rows = PyBytes_FromObject(rows_in), *pos = rows ? PyBytes_FromObject(pos_in) : NULL;
    if (!pos) goto fail;
    Py_ssize_t n = PyBytes_GET_SIZE(rows) / 4;
    if (PyBytes_GET_SIZE(rows) % 4 || PyBytes_GET_SIZE(pos) != PyBytes_GET_SIZE(rows)) {
        PyErr_SetString(PyExc_ValueError, "SmallLevel: rows and pos must be int32 arrays of one size");
        goto fail;
    }
    const int32_t *r = (const int32_t *)PyBytes_AS_STRING(rows), *p = (const int32_t *)PyBytes_AS_STRING(pos);
    TokensObject *tokens = m->tokens;
    const int32_t *len = tokens->lengths.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!row_ok(&tokens->lengths, &tokens->offsets, &tokens->data, r[i], p[i]) || p[i] >= len[r[i]]) {
            PyErr_SetString(PyExc_ValueError, "SmallLevel: a suffix does not lie inside its token");
            goto fail;
        }
    uint8_t *next = next_bytes_of(tokens, r, p, n);
    unsigned char after[32] = {0};
    for (Py_ssize_t i = 0; next && i < n; i++) after[next[i] >> 3] |= (unsigned char)(1u << (next[i] & 7));
    return small_of(m, previous, rows, pos, next, after);
fail:
    Py_XDECREF(rows), Py_XDECREF(pos);
    return NULL;
}

static void small_dealloc(SmallObject *s) {
    Py_XDECREF(s->maker), Py_XDECREF(s->rows), Py_XDECREF(s->pos);
    PyMem_Free(s->next);
    PyObject_Free(s);
}

static PyObject *small_candidates(SmallObject *s, PyObject *unused) {
    (void)unused;
    return maker_starting(s->maker, s->previous, s->after);
}

/* The index (new reference), or NULL with an error set once it is gone. */
static PyObject *maker_index(MakerObject *m) {
    PyObject *index = PyWeakref_GetObject(m->index); /* borrowed */
    if (index == Py_None) {
        PyErr_SetString(PyExc_RuntimeError, "a small tree level outlived its token index");
        return NULL;
    }
    return Py_XNewRef(index);
}

/* terminal u's Table (borrowed: the list keeps it), made by the index on first read. */
static TableObject *maker_table(MakerObject *m, int u) {
    if (u >= PyList_GET_SIZE(m->tables)) {
        PyErr_SetString(PyExc_ValueError, "a small level's part: no table for the terminal");
        return NULL;
    }
    PyObject *table = PyList_GET_ITEM(m->tables, u);
    if (table == Py_None) {
        PyObject *index = maker_index(m);
        PyObject *made = index ? PyObject_CallMethod(index, "_table", "i", u) : NULL;
        Py_XDECREF(index);
        if (!made) return NULL;
        Py_DECREF(made); /* the index keeps it in the list */
        table = u < PyList_GET_SIZE(m->tables) ? PyList_GET_ITEM(m->tables, u) : Py_None;
    }
    if (!PyObject_TypeCheck(table, &TableType)) {
        PyErr_SetString(PyExc_TypeError, "a small level's part: the terminal's table is not a Table");
        return NULL;
    }
    return (TableObject *)table;
}

/* A part the index's Python makes (`_small_limited`): its (tokens, child) into `out`. */
static int small_limited(SmallObject *s, int u, SourcePart *out) {
    PyObject *index = maker_index(s->maker);
    PyObject *part = index ? PyObject_CallMethod(index, "_small_limited", "iOO", u, s->rows, s->pos) : NULL;
    Py_XDECREF(index);
    if (!part) return -1;
    if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 2) {
        PyErr_SetString(PyExc_TypeError, "_small_limited: a part is a pair (tokens, child)");
        Py_DECREF(part);
        return -1;
    }
    out->tokens = Py_NewRef(PyTuple_GET_ITEM(part, 0)), out->child = Py_NewRef(PyTuple_GET_ITEM(part, 1));
    Py_DECREF(part);
    return 0;
}

/* The child of a part's splits `w` into `out` (child, and candidates for a small one). */
static int small_child(MakerObject *m, int u, PartWalk *w, SourcePart *out) {
    Py_ssize_t n = w->split_rows.len;
    if (!n) {
        out->child = Py_NewRef(Py_None);
        return 0;
    }
    PyObject *rows = vec_bytes(&w->split_rows), *pos = rows ? vec_bytes(&w->split_pos) : NULL;
    if (n < m->big) {
        if (!(out->candidates = maker_starting(m, u, w->next))) {
            Py_XDECREF(rows), Py_XDECREF(pos);
            return -1;
        }
        out->child = small_of(m, u, rows, pos, next_bytes_of(m->tokens, w->split_rows.data, w->split_pos.data, n),
                              w->next);
        return out->child ? 0 : -1;
    }
    PyObject *index = rows && pos ? maker_index(m) : NULL, *after = index ? byte_set_int(w->next) : NULL;
    out->child = after ? PyObject_CallMethod(index, "_small_big_child", "iOOO", u, rows, pos, after) : NULL;
    Py_XDECREF(index), Py_XDECREF(rows), Py_XDECREF(pos), Py_XDECREF(after);
    return out->child ? 0 : -1;
}

/* SOURCE_API's make (_source.h): the part of terminal u over the level's suffixes. */
static int small_make(PyObject *source, int u, SourcePart *out) {
    SmallObject *s = (SmallObject *)source;
    MakerObject *m = s->maker;
    memset(out, 0, sizeof *out);
    if (u < 0 || u >= m->n_terms) {
        PyErr_SetString(PyExc_ValueError, "a small level's part: no such terminal");
        return -1;
    }
    if (m->limited[u]) return small_limited(s, u, out);
    TableObject *table = maker_table(m, u);
    if (!table) return -1;
    PartWalk w;
    Py_ssize_t n = PyBytes_GET_SIZE(s->rows) / 4;
    int failed = part_walk(table, m->tokens, (const int32_t *)PyBytes_AS_STRING(s->rows),
                           (const int32_t *)PyBytes_AS_STRING(s->pos), n, NULL, n, m->n_words, 0, s->next, &w);
    if (!failed)
        out->tokens = w.packed == Py_None ? Py_NewRef(Py_None) : PyObject_Call(m->token_set, w.packed, NULL);
    failed = failed || !out->tokens || small_child(m, u, &w, out);
    part_walk_free(&w);
    if (failed) {
        Py_CLEAR(out->tokens);
        Py_CLEAR(out->child);
        Py_CLEAR(out->candidates);
        return -1;
    }
    m->made++;
    return 0;
}

/* (None, None), the part of a terminal without one (grammarc.runtime._gss.NO_PART, read once:
 * trees compare parts to it by identity). Borrowed; NULL with an error set. */
static PyObject *no_part(void) {
    static PyObject *found;
    if (!found) {
        PyObject *gss = PyImport_ImportModule("grammarc.runtime._gss");
        found = gss ? PyObject_GetAttrString(gss, "NO_PART") : NULL; /* kept for good */
        Py_XDECREF(gss);
    }
    return found;
}

/* part(tree, u): the source API of tokens/tree.py for a tree not compiled (the tests' Python
 * oracle): the part made as `small_make` makes it, a child of the tree's type, published
 * with ``tree._publish(u, part)`` unless one was (the first published is returned). The
 * compiled tree never calls it. */
static PyObject *small_part_m(SmallObject *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "part(tree, u)");
        return NULL;
    }
    long wide = PyLong_AsLong(args[1]);
    if (wide == -1 && PyErr_Occurred()) return NULL;
    int u = wide < 0 || wide > INT_MAX ? -1 : (int)wide; /* -1: no such terminal (small_make says) */
    PyObject *tree = args[0], *found = PyObject_CallMethod(tree, "_made", "i", u);
    if (!found || found != Py_None) return found;
    Py_DECREF(found);
    SourcePart made;
    if (small_make((PyObject *)s, u, &made)) return NULL;
    if (made.candidates) {
        PyObject *kw = Py_BuildValue("{sO}", "candidates", made.candidates), *arg = PyTuple_Pack(1, made.child);
        PyObject *child = kw && arg ? PyObject_Call((PyObject *)Py_TYPE(tree), arg, kw) : NULL;
        Py_XDECREF(kw), Py_XDECREF(arg);
        Py_SETREF(made.child, child);
    }
    PyObject *part = NULL, *empty = made.child ? no_part() : NULL;
    if (empty) part = made.tokens == Py_None && made.child == Py_None ? Py_NewRef(empty)
                                                                      : PyTuple_Pack(2, made.tokens, made.child);
    Py_XDECREF(made.tokens), Py_XDECREF(made.child), Py_XDECREF(made.candidates);
    PyObject *done = part ? PyObject_CallMethod(tree, "_publish", "iO", u, part) : NULL;
    Py_XDECREF(part);
    if (!done) return NULL;
    Py_DECREF(done);
    return PyObject_CallMethod(tree, "_made", "i", u);
}

static PyObject *small_get_rows(SmallObject *s, void *unused) { (void)unused; return Py_NewRef(s->rows); }
static PyObject *small_get_pos(SmallObject *s, void *unused) { (void)unused; return Py_NewRef(s->pos); }
static PyObject *small_get_previous(SmallObject *s, void *unused) { (void)unused; return PyLong_FromLong(s->previous); }
static PyObject *small_get_byte_set(SmallObject *s, void *unused) { (void)unused; return byte_set_int(s->after); }

static PyGetSetDef small_getset[] = {
    {"rows", (getter)small_get_rows, NULL, "the suffixes' token rows (bytes of int32)", NULL},
    {"pos", (getter)small_get_pos, NULL, "where each suffix starts in its row (bytes of int32)", NULL},
    {"previous", (getter)small_get_previous, NULL, "the terminal the suffixes start right after", NULL},
    {"byte_set", (getter)small_get_byte_set, NULL, "the suffixes' next bytes, as an int (bit b = byte b)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef small_methods[] = {
    {"part", (PyCFunction)(void (*)(void))small_part_m, METH_FASTCALL,
     "part(tree, u): terminal u's part, published to a tree that is not compiled (tokens/tree.py)."},
    {"candidates", (PyCFunction)small_candidates, METH_NOARGS,
     "The terminals after `previous` that can start with one of the suffixes' next bytes."},
    {NULL, NULL, 0, NULL},
};

/* Not tracked by the cyclic collector: a level refers to its maker (which refers to its
 * index weakly) and to bytes; nothing refers back to a level but trees. */
static PyTypeObject SmallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.tokens._scan.SmallLevel",
    .tp_basicsize = sizeof(SmallObject),
    .tp_dealloc = (destructor)small_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SmallLevel(maker, previous, rows, pos): a small token tree level (see _small.c).",
    .tp_methods = small_methods,
    .tp_getset = small_getset,
    .tp_new = small_new,
};

static SourceApi source_api = {&SmallType, small_make};

int small_module_init(PyObject *m) {
    if (PyType_Ready(&MakerType) < 0 || PyType_Ready(&SmallType) < 0) return -1;
    PyObject *api = PyCapsule_New(&source_api, SOURCE_API_NAME, NULL);
    if (!api || PyModule_AddObject(m, "SOURCE_API", api) < 0) { /* steals `api` only on success */
        Py_XDECREF(api);
        return -1;
    }
    if (PyModule_AddObjectRef(m, "PartMaker", (PyObject *)&MakerType) < 0 ||
        PyModule_AddObjectRef(m, "SmallLevel", (PyObject *)&SmallType) < 0)
        return -1;
    return 0;
}
