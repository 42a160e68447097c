/* Reading bytes into parser configurations: grammarc.runtime.stepping's `step` and
 * `initial` (their contracts are there). An item is a tuple (vertex, terminal, dfa state,
 * tokens spent); each item reads its bytes in one call of its terminal's DFA walker
 * (grammarc.automata._core.Walker: the state after them and where the terminal may end). */
#include "_gss.h"
#include <string.h>

/* The terminals' walkers, any! flags and token limits, read on first use into `info`: the
 * core's own array for the terminals it first stepped with (compiled.terminals, kept until the
 * core goes: never reallocated, so no pointer into it goes stale when another thread steps
 * meanwhile), or a call's own array for any other sequence. */
static int term_infos(Core *c, PyObject *terminals, TermInfo **info, Py_ssize_t *n_info) {
    if (!c->terms_seq) {
        Py_ssize_t n = PySequence_Length(terminals);
        if (n < 0) return -1;
        TermInfo *made = PyMem_Calloc((size_t)(n ? n : 1), sizeof(TermInfo));
        if (!made) { PyErr_NoMemory(); return -1; }
        c->info = made, c->n_info = n, c->terms_seq = Py_NewRef(terminals);
    }
    if (c->terms_seq == terminals) {
        *info = c->info, *n_info = c->n_info;
        return 0;
    }
    Py_ssize_t n = PySequence_Length(terminals);
    if (n < 0) return -1;
    if (!(*info = PyMem_Calloc((size_t)(n ? n : 1), sizeof(TermInfo)))) { PyErr_NoMemory(); return -1; }
    *n_info = n;
    return 0;
}

void free_term_info(TermInfo *info, Py_ssize_t n) {
    for (Py_ssize_t i = 0; info && i < n; i++) Py_XDECREF(info[i].walker), PyMem_Free(info[i].accept);
    PyMem_Free(info);
}

static void free_infos(Core *c, TermInfo *info, Py_ssize_t n) {
    if (info != c->info) free_term_info(info, n);
}

/* a copy of a DFA's accepting flags (one byte each: NumPy bool) */
static char *read_accept(PyObject *dfa, Py_ssize_t *n) {
    PyObject *accept = PyObject_GetAttrString(dfa, "accept");
    if (!accept) return NULL;
    Py_buffer view;
    char *out = NULL;
    if (PyObject_GetBuffer(accept, &view, PyBUF_C_CONTIGUOUS) == 0) {
        if (view.itemsize != 1) PyErr_SetString(PyExc_TypeError, "a DFA's accept must hold one byte per state");
        else if ((out = PyMem_Malloc((size_t)(view.len ? view.len : 1)))) memcpy(out, view.buf, (size_t)view.len);
        else PyErr_NoMemory();
        *n = view.len;
        PyBuffer_Release(&view);
    }
    Py_DECREF(accept);
    return out;
}

static TermInfo *term_info(PyObject *terminals, TermInfo *info, Py_ssize_t n_info, int t) {
    if (t < 0 || t >= n_info) { PyErr_Format(PyExc_IndexError, "no terminal %d", t); return NULL; }
    TermInfo *ti = &info[t];
    if (ti->loaded) return ti;
    PyObject *term = PySequence_GetItem(terminals, t);
    if (!term) return NULL;
    PyObject *any = PyObject_GetAttrString(term, "any_token");
    PyObject *limit = any ? PyObject_GetAttrString(term, "token_limit") : NULL;
    PyObject *dfa = limit ? PyObject_GetAttrString(term, "dfa") : NULL;
    PyObject *walker = dfa ? PyObject_GetAttrString(dfa, "_walker") : NULL; /* may run Python code */
    Py_ssize_t n_accept = 0;
    char *accept = walker ? read_accept(dfa, &n_accept) : NULL;
    Py_DECREF(term);
    int ok = accept != NULL;
    if (ok) {
        int a = PyObject_IsTrue(any);
        long l = limit == Py_None ? -1 : PyLong_AsLong(limit);
        if (a < 0 || (l == -1 && PyErr_Occurred())) ok = 0;
        else if (!ti->loaded) { /* else another thread read it meanwhile */
            ti->walker = Py_NewRef(walker), ti->any_token = (char)a, ti->limit = l, ti->loaded = 1;
            ti->accept = accept, ti->n_accept = n_accept, accept = NULL;
        }
    }
    PyMem_Free(accept);
    Py_XDECREF(any), Py_XDECREF(limit), Py_XDECREF(dfa), Py_XDECREF(walker);
    return ok ? ti : NULL;
}

typedef struct {
    PyObject *node; /* borrowed: the items or a level's openings hold it */
    int t;
    long q, k;
} BItem;

static PyObject *make_item(PyObject *node, int t, long q, long k) {
    PyObject *item = PyTuple_New(4);
    if (!item) return NULL;
    PyObject *a = PyLong_FromLong(t), *b = a ? PyLong_FromLong(q) : NULL, *d = b ? PyLong_FromLong(k) : NULL;
    if (!d) { Py_XDECREF(a), Py_XDECREF(b), Py_DECREF(item); return NULL; }
    PyTuple_SET_ITEM(item, 0, Py_NewRef(node));
    PyTuple_SET_ITEM(item, 1, a), PyTuple_SET_ITEM(item, 2, b), PyTuple_SET_ITEM(item, 3, d);
    return item;
}

/* (node, t): a completion, as GSS levels are keyed (no format string parsed per pair) */
static PyObject *make_pair(PyObject *node, int t) {
    PyObject *u = PyLong_FromLong(t);
    if (!u) return NULL;
    PyObject *pair = PyTuple_Pack(2, node, u);
    Py_DECREF(u);
    return pair;
}

static int add_new(PyObject *set, PyObject *item) {
    if (!item) return -1;
    int rc = PySet_Add(set, item);
    Py_DECREF(item);
    return rc;
}

/* the openings of `level` as batch items (state 0, nothing spent), into *batch */
static int open_batch(Core *c, Level *level, BItem **batch, Py_ssize_t *n, Py_ssize_t *cap) {
    PyObject *open = core_openings(c, level);
    if (!open) return -1;
    Py_ssize_t m = PyTuple_GET_SIZE(open);
    if (m > *cap) {
        BItem *b = PyMem_Realloc(*batch, (size_t)m * sizeof(BItem));
        if (!b) { PyErr_NoMemory(); return -1; }
        *batch = b, *cap = m;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *pair = PyTuple_GET_ITEM(open, i);
        (*batch)[i].node = PyTuple_GET_ITEM(pair, 0);
        (*batch)[i].t = (int)PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
        (*batch)[i].q = (*batch)[i].k = 0;
    }
    *n = m;
    return 0;
}

static int parse_item(PyObject *item, BItem *out) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4 ||
        !PyObject_TypeCheck(PyTuple_GET_ITEM(item, 0), &NodeType)) {
        PyErr_SetString(PyExc_TypeError, "an item is (Node, terminal, dfa state, tokens spent)");
        return -1;
    }
    out->node = PyTuple_GET_ITEM(item, 0);
    long t = PyLong_AsLong(PyTuple_GET_ITEM(item, 1));
    out->q = PyLong_AsLong(PyTuple_GET_ITEM(item, 2));
    out->k = PyLong_AsLong(PyTuple_GET_ITEM(item, 3));
    out->t = (int)t;
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *py_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    /* step(core, terminals, items, data, *, tokens=None), parsed by hand: a call per token */
    PyObject *core, *terminals, *items, *data, *tokens = Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs != 4 || nkw > 1 || (nkw && !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0))) ||
        (nkw && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "tokens"))) {
        PyErr_SetString(PyExc_TypeError, "step(core, terminals, items, data, *, tokens=None)");
        return NULL;
    }
    core = args[0], terminals = args[1], items = args[2], data = args[3];
    if (nkw) tokens = args[4];
    if (!PyObject_TypeCheck(core, &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "step takes a parser core");
        return NULL;
    }
    if (!PyBytes_Check(data)) { /* a bytearray or memoryview: read as bytes */
        PyObject *copy = PyBytes_FromObject(data);
        if (!copy) return NULL;
        PyObject *again[5] = {core, terminals, items, copy, tokens};
        PyObject *out = py_step(self, again, 4, kwnames);
        Py_DECREF(copy);
        return out;
    }
    Core *c = (Core *)core;
    if (!c->ready) { PyErr_SetString(PyExc_RuntimeError, "the parser core is not set up"); return NULL; }
    int toks = tokens != Py_None, whole = tokens == Py_True;
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    PyObject *out = NULL, *after_any = NULL, *any_ended = NULL, *result = NULL, *fast = NULL;
    PyObject **ended = NULL;
    Level *level = NULL;
    BItem *batch = NULL;
    Py_ssize_t nb = 0, cb = 0, n_info = 0;
    TermInfo *info = NULL;
    if (term_infos(c, terminals, &info, &n_info)) return NULL;
    if (!(out = PyFrozenSet_New(NULL)) || !(after_any = PySet_New(NULL)) || !(any_ended = PyFrozenSet_New(NULL)))
        goto done;
    /* a set is read in place (it holds its items); anything else through a tuple */
    if (!PyAnySet_Check(items) && !(fast = PySequence_Tuple(items))) goto done;
    Py_ssize_t ni = fast ? PyTuple_GET_SIZE(fast) : PySet_GET_SIZE(items), set_pos = 0;
    if (!(batch = PyMem_Malloc((size_t)(ni ? ni : 1) * sizeof(BItem)))) { PyErr_NoMemory(); goto done; }
    cb = ni ? ni : 1;
    /* any! takes a whole token, so what follows it starts after the token: its items go
     * straight to the result and never see the token's bytes */
    for (Py_ssize_t i = 0; i < ni; i++) {
        BItem it;
        PyObject *item;
        Py_hash_t item_hash;
        if (fast) item = PyTuple_GET_ITEM(fast, i);
        else if (!_PySet_NextEntry(items, &set_pos, &item, &item_hash)) break;
        if (parse_item(item, &it)) goto done;
        if (toks) {
            TermInfo *ti = term_info(terminals, info, n_info, it.t);
            if (!ti) goto done;
            if (ti->any_token) {
                if (whole && it.q == 0 && len) {
                    PyObject *pair = make_pair(it.node, it.t);
                    if (add_new(after_any, make_item(it.node, it.t, 1, 1)) || add_new(any_ended, pair)) goto done;
                }
                continue;
            }
        }
        batch[nb++] = it;
    }
    if (PySet_GET_SIZE(any_ended)) {
        Level *l = core_level(c, any_ended);
        if (!l) goto done;
        PyObject *open = core_openings(c, l);
        for (Py_ssize_t i = 0; open && i < PyTuple_GET_SIZE(open); i++) {
            PyObject *pair = PyTuple_GET_ITEM(open, i);
            long u = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
            if (add_new(after_any, make_item(PyTuple_GET_ITEM(pair, 0), (int)u, 0, 0))) open = NULL;
        }
        Py_DECREF(l);
        if (!open) goto done;
    }
    if (!(ended = PyMem_Calloc((size_t)len + 1, sizeof(PyObject *)))) { PyErr_NoMemory(); goto done; }
    const char *bytes = PyBytes_AS_STRING(data);
    (void)bytes;
    Py_ssize_t position = 0;
    for (;;) {
        for (Py_ssize_t i = 0; i < nb; i++) {
            BItem *it = &batch[i];
            if (position == len) {
                if (add_new(out, make_item(it->node, it->t, it->q, it->k))) goto done;
                continue;
            }
            TermInfo *ti = term_info(terminals, info, n_info, it->t);
            if (!ti) goto done;
            if (toks && ti->any_token) continue; /* opened inside this token: any! starts only at a token boundary */
            long k = it->k;
            if (whole && ti->limit >= 0) { /* this token touches it: one more spent */
                if (k >= ti->limit) continue;
                k++;
            }
            PyObject *argv[3] = {PyLong_FromLong(it->q), data, PyLong_FromSsize_t(position)};
            PyObject *walked = argv[0] && argv[2] ? PyObject_Vectorcall(ti->walker, argv, 3, NULL) : NULL;
            Py_XDECREF(argv[0]), Py_XDECREF(argv[2]);
            if (!walked) goto done;
            PyObject *ends;
            long q;
            if (!PyTuple_Check(walked) || PyTuple_GET_SIZE(walked) != 2 ||
                !PyTuple_Check(ends = PyTuple_GET_ITEM(walked, 1))) {
                Py_DECREF(walked);
                PyErr_SetString(PyExc_TypeError, "a walker returns (state, ends)");
                goto done;
            }
            q = PyLong_AsLong(PyTuple_GET_ITEM(walked, 0));
            if ((q == -1 && PyErr_Occurred()) || (q >= 0 && add_new(out, make_item(it->node, it->t, q, k)))) {
                Py_DECREF(walked);
                goto done;
            }
            PyObject *pair = PyTuple_GET_SIZE(ends) ? make_pair(it->node, it->t) : NULL;
            if (PyTuple_GET_SIZE(ends) && !pair) { Py_DECREF(walked); goto done; }
            for (Py_ssize_t e = 0; e < PyTuple_GET_SIZE(ends); e++) {
                Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(ends, e));
                if (p <= position || p > len) {
                    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a walker's end out of range");
                    Py_DECREF(pair), Py_DECREF(walked);
                    goto done;
                }
                if (!ended[p] && !(ended[p] = PyFrozenSet_New(NULL))) { Py_DECREF(pair), Py_DECREF(walked); goto done; }
                if (PySet_Add(ended[p], pair)) { Py_DECREF(pair), Py_DECREF(walked); goto done; }
            }
            Py_XDECREF(pair);
            Py_DECREF(walked);
        }
        position++;
        while (position <= len && !ended[position]) position++;
        if (position > len) break;
        Level *next = core_level(c, ended[position]);
        if (!next) goto done;
        Py_XSETREF(level, next); /* holds the openings the batch borrows */
        if (open_batch(c, level, &batch, &nb, &cb)) goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *key;
    Py_hash_t hash;
    while (_PySet_NextEntry(after_any, &pos, &key, &hash))
        if (PySet_Add(out, key)) goto done;
    result = Py_NewRef(out);
done:
    if (ended)
        for (Py_ssize_t p = 0; p <= len; p++) Py_XDECREF(ended[p]);
    PyMem_Free(ended);
    PyMem_Free(batch);
    free_infos(c, info, n_info);
    Py_XDECREF(level);
    Py_XDECREF(fast), Py_XDECREF(out), Py_XDECREF(after_any), Py_XDECREF(any_ended);
    return result;
}

PyObject *py_initial(PyObject *self, PyObject *core) {
    if (!PyObject_TypeCheck(core, &CoreType) || !((Core *)core)->ready) {
        PyErr_SetString(PyExc_TypeError, "initial takes a set-up parser core");
        return NULL;
    }
    Core *c = (Core *)core;
    PyObject *open = core_openings(c, c->root_level);
    if (!open) return NULL;
    PyObject *out = PyFrozenSet_New(NULL);
    for (Py_ssize_t i = 0; out && i < PyTuple_GET_SIZE(open); i++) {
        PyObject *pair = PyTuple_GET_ITEM(open, i);
        if (add_new(out, make_item(PyTuple_GET_ITEM(pair, 0), (int)PyLong_AsLong(PyTuple_GET_ITEM(pair, 1)), 0, 0)))
            Py_CLEAR(out);
    }
    return out;
}

/* complete(core, terminals, items): whether some item's terminal can end here and leave the
 * parser accepting (stepping.complete) */
PyObject *py_complete(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyObject_TypeCheck(args[0], &CoreType) || !((Core *)args[0])->ready) {
        PyErr_SetString(PyExc_TypeError, "complete(core, terminals, items) takes a set-up parser core");
        return NULL;
    }
    Core *c = (Core *)args[0];
    PyObject *terminals = args[1], *items = args[2], *fast = NULL, *ended = NULL, *result = NULL;
    TermInfo *info = NULL;
    Py_ssize_t n_info = 0;
    if (term_infos(c, terminals, &info, &n_info)) return NULL;
    if (!PyAnySet_Check(items) && !(fast = PySequence_Tuple(items))) goto done;
    if (!(ended = PyFrozenSet_New(NULL))) goto done;
    Py_ssize_t ni = fast ? PyTuple_GET_SIZE(fast) : PySet_GET_SIZE(items), set_pos = 0;
    for (Py_ssize_t i = 0; i < ni; i++) {
        PyObject *item;
        Py_hash_t item_hash;
        BItem it;
        if (fast) item = PyTuple_GET_ITEM(fast, i);
        else if (!_PySet_NextEntry(items, &set_pos, &item, &item_hash)) break;
        if (parse_item(item, &it)) goto done;
        TermInfo *ti = term_info(terminals, info, n_info, it.t);
        if (!ti) goto done;
        if (it.q < 0 || it.q >= ti->n_accept) {
            PyErr_Format(PyExc_IndexError, "no state %ld in terminal %d's DFA", it.q, it.t);
            goto done;
        }
        if (ti->accept[it.q] && add_new(ended, make_pair(it.node, it.t))) goto done;
    }
    if (!PySet_GET_SIZE(ended)) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    Level *level = core_level(c, ended);
    if (!level) goto done;
    result = PyBool_FromLong(level->accepting);
    Py_DECREF(level);
done:
    free_infos(c, info, n_info);
    Py_XDECREF(fast), Py_XDECREF(ended);
    return result;
}
