/* grammarc.tokens._memo: `Memo`, the bounded least-recently-used memo of grammarc.tokens.memo
 * (its contract is there; its Python oracle is tests/memo_reference.py). A new schema's
 * masks read and fill the three memos of its index some 20,000 times per 30 responses: as
 * Python methods, a lock and three dictionary operations each, they cost ~10,000 instructions
 * a get-and-put, as C calls a tenth of that.
 *
 * Entries live in an OrderedDict (key -> value, least recently used first) and their counted
 * bytes in a dict beside it (key -> int). Each call is atomic under the GIL as long as the
 * keys hash and compare without running Python code (ints, tuples, frozensets and the
 * runtime's compiled objects: what the memos are keyed by), so no lock is taken. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define ENTRY_OVERHEAD 100 /* an entry: hash slots, the ordered list's node, the key tuple */

typedef struct {
    PyObject_HEAD
    Py_ssize_t budget, nbytes, evictions;
    PyObject *entries; /* OrderedDict: key -> value, least recently used first */
    PyObject *sizes;   /* dict: key -> the bytes it is counted at */
} Memo;

static PyObject *ordered_dict; /* collections.OrderedDict */
static PyObject *str_move_to_end, *str_popitem, *str_values;

static PyObject *memo_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"budget", NULL};
    Py_ssize_t budget;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", names, &budget)) return NULL;
    Memo *m = (Memo *)type->tp_alloc(type, 0);
    if (!m) return NULL;
    m->budget = budget;
    if (!(m->entries = PyObject_CallNoArgs(ordered_dict)) || !(m->sizes = PyDict_New())) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}

static int memo_traverse(Memo *m, visitproc visit, void *arg) {
    Py_VISIT(m->entries);
    Py_VISIT(m->sizes);
    return 0;
}

static int memo_clear_refs(Memo *m) {
    Py_CLEAR(m->entries);
    Py_CLEAR(m->sizes);
    return 0;
}

static void memo_dealloc(Memo *m) {
    PyObject_GC_UnTrack(m);
    memo_clear_refs(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* get(key): the value, or None; once the memo is past half its budget the entry becomes the
 * most recently used (below that nothing is near eviction, and a hit is one lookup). */
static PyObject *memo_get(Memo *m, PyObject *key) {
    PyObject *value = PyDict_GetItemWithError(m->entries, key); /* borrowed */
    if (!value) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_INCREF(value);
    if (m->nbytes > m->budget >> 1) {
        PyObject *done = PyObject_CallMethodOneArg(m->entries, str_move_to_end, key);
        if (!done) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) { Py_DECREF(value); return NULL; }
            PyErr_Clear(); /* evicted meanwhile: the value is still right */
        }
        Py_XDECREF(done);
    }
    return value;
}

/* Evict the least recently used entries while over budget, keeping at least one. */
static int evict(Memo *m) {
    while (m->nbytes > m->budget && PyDict_GET_SIZE(m->entries) > 1) {
        PyObject *pair = PyObject_CallMethodOneArg(m->entries, str_popitem, Py_False);
        if (!pair) return -1;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_RuntimeError, "Memo: OrderedDict.popitem gave no pair");
            return -1;
        }
        PyObject *size = PyDict_GetItemWithError(m->sizes, PyTuple_GET_ITEM(pair, 0)); /* borrowed */
        Py_ssize_t n = size ? PyLong_AsSsize_t(size) : 0;
        int bad = (n == -1 && PyErr_Occurred()) || (!size && PyErr_Occurred()) ||
                  (size && PyDict_DelItem(m->sizes, PyTuple_GET_ITEM(pair, 0)) < 0);
        Py_DECREF(pair); /* the value may go here */
        if (bad) return -1;
        m->nbytes -= n;
        m->evictions++;
    }
    return 0;
}

/* put(key, value, size): keep `value`, counted at `size` bytes plus the entry, unless a value
 * is kept under `key` already; returns the value kept (the first published stays). */
static PyObject *memo_put(Memo *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "put(key, value, size)");
        return NULL;
    }
    PyObject *key = args[0], *value = args[1];
    Py_ssize_t size = PyLong_AsSsize_t(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (size < 0 || size > PY_SSIZE_T_MAX - ENTRY_OVERHEAD - m->nbytes) {
        PyErr_Format(size < 0 ? PyExc_ValueError : PyExc_OverflowError, "Memo.put: size %zd out of range", size);
        return NULL;
    }
    if (value == Py_None) {
        PyErr_SetString(PyExc_ValueError, "Memo.put: None cannot be kept (get answers None for a key not kept)");
        return NULL;
    }
    size += ENTRY_OVERHEAD;
    PyObject *found = PyDict_GetItemWithError(m->entries, key); /* borrowed */
    if (found) return Py_NewRef(found);
    if (PyErr_Occurred()) return NULL;
    PyObject *counted = PyLong_FromSsize_t(size);
    if (!counted) return NULL;
    if (PyObject_SetItem(m->entries, key, value) < 0) {
        Py_DECREF(counted);
        return NULL;
    }
    if (PyDict_SetItem(m->sizes, key, counted) < 0) { /* out of memory: take the entry back */
        Py_DECREF(counted);
        PyObject *type, *error, *trace;
        PyErr_Fetch(&type, &error, &trace);
        if (PyObject_DelItem(m->entries, key) < 0) PyErr_Clear();
        PyErr_Restore(type, error, trace);
        return NULL;
    }
    Py_DECREF(counted);
    m->nbytes += size;
    Py_INCREF(value); /* eviction may drop the memo's reference; the caller gets its own */
    if (evict(m) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

static PyObject *memo_clear_m(Memo *m, PyObject *unused) {
    (void)unused;
    PyObject *fresh = PyObject_CallNoArgs(ordered_dict), *sizes = PyDict_New();
    if (!fresh || !sizes) {
        Py_XDECREF(fresh), Py_XDECREF(sizes);
        return NULL;
    }
    PyObject *old_entries = m->entries, *old_sizes = m->sizes;
    m->entries = fresh, m->sizes = sizes, m->nbytes = 0;
    Py_DECREF(old_entries), Py_DECREF(old_sizes); /* values released once the memo is consistent */
    Py_RETURN_NONE;
}

static PyObject *memo_values(Memo *m, PyObject *unused) {
    (void)unused;
    PyObject *view = PyObject_CallMethodNoArgs(m->entries, str_values);
    if (!view) return NULL;
    PyObject *out = PySequence_List(view);
    Py_DECREF(view);
    return out;
}

static PyObject *memo_keys(Memo *m, PyObject *unused) {
    (void)unused;
    return PySequence_List(m->entries);
}

static Py_ssize_t memo_len(Memo *m) { return PyDict_GET_SIZE(m->entries); }

static int memo_contains(Memo *m, PyObject *key) { return PyDict_Contains(m->entries, key); }

static PyMethodDef memo_methods[] = {
    {"get", (PyCFunction)memo_get, METH_O, "get(key): the value kept, or None."},
    {"put", (PyCFunction)(void (*)(void))memo_put, METH_FASTCALL,
     "put(key, value, size): keep value (counted at size bytes plus the entry) unless one is kept; "
     "returns the value kept."},
    {"clear", (PyCFunction)memo_clear_m, METH_NOARGS, "Drop every entry."},
    {"values", (PyCFunction)memo_values, METH_NOARGS, "The values kept now (a list, least recently used first)."},
    {"keys", (PyCFunction)memo_keys, METH_NOARGS, "The keys kept now (a list, least recently used first)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef memo_members[] = {
    {"budget", T_PYSSIZET, offsetof(Memo, budget), 0, "the bytes the entries may be counted at"},
    {"nbytes", T_PYSSIZET, offsetof(Memo, nbytes), READONLY, "the bytes the entries are counted at"},
    {"evictions", T_PYSSIZET, offsetof(Memo, evictions), READONLY, "entries evicted so far"},
    {NULL, 0, 0, 0, NULL},
};

static PySequenceMethods memo_sequence = {
    .sq_length = (lenfunc)memo_len,
    .sq_contains = (objobjproc)memo_contains,
};

static PyTypeObject MemoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.tokens._memo.Memo",
    .tp_basicsize = sizeof(Memo),
    .tp_dealloc = (destructor)memo_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Memo(budget): a least-recently-used memo bounded by the bytes its entries are counted at "
              "(see grammarc.tokens.memo).",
    .tp_traverse = (traverseproc)memo_traverse,
    .tp_clear = (inquiry)memo_clear_refs,
    .tp_as_sequence = &memo_sequence,
    .tp_methods = memo_methods,
    .tp_members = memo_members,
    .tp_new = memo_new,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_memo", "The token index's bounded memos.", -1, NULL};

PyMODINIT_FUNC PyInit__memo(void) {
    PyObject *collections = PyImport_ImportModule("collections");
    if (!collections) return NULL;
    ordered_dict = PyObject_GetAttrString(collections, "OrderedDict");
    Py_DECREF(collections);
    if (!ordered_dict || !(str_move_to_end = PyUnicode_InternFromString("move_to_end")) ||
        !(str_popitem = PyUnicode_InternFromString("popitem")) ||
        !(str_values = PyUnicode_InternFromString("values")) || PyType_Ready(&MemoType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Memo", (PyObject *)&MemoType) < 0 ||
        PyModule_AddIntConstant(m, "ENTRY_OVERHEAD", ENTRY_OVERHEAD) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
