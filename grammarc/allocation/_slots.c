/* grammarc.allocation._slots: building and hashing slotted records without a Python frame.
 *
 * slot_init(cls, names, defaults, members) -> init
 *   Installs `init` as cls.__init__: it binds its arguments as the Python function
 *   ``def __init__(self, name0, ..., nameK=default, ...)`` would (positional, keywords,
 *   defaults; the same TypeError messages for a missing, an extra, a duplicate or an unknown
 *   argument) and sets each field straight into its slot (the member descriptors in
 *   `members` give the offsets). The class's tp_init is set to the compiled binder too, so
 *   that building a record costs no Python frame and no call through `__init__`:
 *   ``slot_tp_init`` (look up ``__init__``, a frame, a bound setter call per field) was a
 *   sixth of translating a JSON schema. The binder looks ``__init__`` up on the instance's
 *   type on every call (the type's method cache answers): where it is not an `init` of this
 *   module (a class attribute reassigned, a subclass with an ``__init__`` of its own) it
 *   calls what it found, as ``slot_tp_init`` does. CPython resets tp_init itself whenever
 *   ``__init__`` is assigned on the class or a base, so tp_init never outlives its init.
 *   The class's vectorcall (which CPython leaves alone) makes the object and binds the call
 *   without the tuple and dict of a call through type_call, after checking that tp_new and
 *   tp_init are still object.__new__'s and the binder's; it calls type_call where not.
 *
 * remember_hash(cls, slot, compute, *args)
 *   Makes cls.__hash__ return what `slot` (an object slot's member descriptor) keeps and,
 *   where it keeps nothing, ``compute(self, *args)`` (which keeps it: grammarc.ir.nodes
 *   passes _canon.tree_hash), as the Python ``__hash__`` it replaces did. Installed as a
 *   slot wrapper of the compiled function, so the type (and every subclass that inherits
 *   it) hashes without a Python frame: a frame per
 *   hash of a memo key was a sixteenth of compiling a schema's grammar. One slot and one
 *   computation per process (a second call must name the same ones).
 *
 * The binder's oracle is the exec'd Python function in tests/test_slots.py. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_FIELDS 64
#define MAX_HASH_ARGS 8

static PyObject *str_init, *str_self;  /* "__init__", "self", interned */

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;     /* the class it binds for (its fields are `cls`'s slots) */
    PyObject *qualname;    /* "Cls.__init__": the Python function's, for error messages */
    PyObject *params;      /* ("self", *names) */
    PyObject *defaults;    /* the last len(defaults) fields' defaults */
    PyObject *members;     /* the fields' member descriptors */
    Py_ssize_t n_fields;
    Py_ssize_t offsets[MAX_FIELDS];
    PyObject *dict;        /* __signature__, __doc__, __qualname__, ... (set from Python) */
    vectorcallfunc vectorcall;
} SlotInit;

static PyTypeObject SlotInit_Type;

/* -------------------------------------------------------------------- argument binding */

/* Index of parameter `key` (a str), -1 when there is none, -2 with an error set. As
 * CPython's own binding: by identity first, then by equality. */
static Py_ssize_t param_index(const SlotInit *init, PyObject *key)
{
    PyObject *const *params = &PyTuple_GET_ITEM(init->params, 0);
    Py_ssize_t n = PyTuple_GET_SIZE(init->params);
    for (Py_ssize_t i = 0; i < n; i++)
        if (params[i] == key) return i;
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyObject_RichCompareBool(params[i], key, Py_EQ);
        if (eq < 0) return -2;
        if (eq) return i;
    }
    return -1;
}

/* values[i] = value for the parameter named `key`; 0, or -1 with TypeError set. */
static int take_keyword(const SlotInit *init, PyObject **values, PyObject *key, PyObject *value)
{
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "%U() keywords must be strings", init->qualname);
        return -1;
    }
    Py_ssize_t i = param_index(init, key);
    if (i == -2) return -1;
    if (i < 0) {
        PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%S'", init->qualname, key);
        return -1;
    }
    if (values[i]) {
        PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%S'", init->qualname, key);
        return -1;
    }
    values[i] = value;
    return 0;
}

static void too_many_positional(const SlotInit *init, Py_ssize_t given)
{
    Py_ssize_t n = PyTuple_GET_SIZE(init->params), n_defaults = PyTuple_GET_SIZE(init->defaults);
    PyObject *sig = n_defaults ? PyUnicode_FromFormat("from %zd to %zd", n - n_defaults, n)
                               : PyUnicode_FromFormat("%zd", n);
    if (!sig) return;
    PyErr_Format(PyExc_TypeError, "%U() takes %U positional argument%s but %zd %s given", init->qualname, sig,
                 n_defaults || n != 1 ? "s" : "", given, given == 1 ? "was" : "were");
    Py_DECREF(sig);
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'": the missing names as CPython lists them. */
static PyObject *listed(PyObject *names)
{
    Py_ssize_t n = PyList_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *repr = PyObject_Repr(PyList_GET_ITEM(names, i));
        if (!repr) return NULL;
        PyList_SetItem(names, i, repr);  /* steals repr, releases the name */
    }
    if (n == 1) return Py_NewRef(PyList_GET_ITEM(names, 0));
    if (n == 2) return PyUnicode_FromFormat("%U and %U", PyList_GET_ITEM(names, 0), PyList_GET_ITEM(names, 1));
    PyObject *tail = PyUnicode_FromFormat("%U, and %U", PyList_GET_ITEM(names, n - 2), PyList_GET_ITEM(names, n - 1));
    if (!tail) return NULL;
    int failed = PyList_SetSlice(names, n - 2, n, NULL) < 0 || PyList_Append(names, tail) < 0;
    Py_DECREF(tail);
    if (failed) return NULL;
    PyObject *sep = PyUnicode_FromString(", ");
    if (!sep) return NULL;
    PyObject *joined = PyUnicode_Join(sep, names);
    Py_DECREF(sep);
    return joined;
}

static void missing_positional(const SlotInit *init, PyObject *const *values, Py_ssize_t required)
{
    PyObject *names = PyList_New(0);
    if (!names) return;
    for (Py_ssize_t i = 0; i < required; i++)
        if (!values[i] && PyList_Append(names, PyTuple_GET_ITEM(init->params, i)) < 0) {
            Py_DECREF(names);
            return;
        }
    Py_ssize_t n = PyList_GET_SIZE(names);
    PyObject *text = listed(names);
    if (text) {
        PyErr_Format(PyExc_TypeError, "%U() missing %zd required positional argument%s: %U", init->qualname, n,
                     n == 1 ? "" : "s", text);
        Py_DECREF(text);
    }
    Py_DECREF(names);
}

/* Set the fields of values[0] to values[1:]: straight into the slots when values[0] is an
 * instance of the class, else field by field as the member descriptors would (each refusing
 * an object that is not an instance of its class, after the fields before it were set). */
static int set_fields(const SlotInit *init, PyObject *const *values)
{
    PyObject *self = values[0], *old[MAX_FIELDS];
    int whole = PyObject_TypeCheck(self, init->cls), r = 0;
    Py_ssize_t i = 0;
    for (; i < init->n_fields; i++) {
        if (!whole) {
            PyObject *member = PyTuple_GET_ITEM(init->members, i);
            PyTypeObject *owner = PyDescr_TYPE(member);
            if (!PyObject_TypeCheck(self, owner)) {
                PyErr_Format(PyExc_TypeError, "descriptor '%U' for '%.100s' objects doesn't apply to a '%.100s' object",
                             PyDescr_NAME(member), owner->tp_name, Py_TYPE(self)->tp_name);
                r = -1;
                break;
            }
        }
        PyObject **slot = (PyObject **)((char *)self + init->offsets[i]);
        old[i] = *slot;
        *slot = Py_NewRef(values[i + 1]);
    }
    /* the values replaced (a second __init__ call) go last: releasing one may run Python code */
    while (i--) Py_XDECREF(old[i]);
    return r;
}

/* After the keywords: too many positional arguments, or a missing one, is an error (in this
 * order, as CPython checks); the fields not given take their defaults. 0, or -1. */
static int complete(const SlotInit *init, PyObject **values, Py_ssize_t given)
{
    Py_ssize_t n = init->n_fields + 1, required = n - PyTuple_GET_SIZE(init->defaults);
    if (given > n) {
        too_many_positional(init, given);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!values[i]) {
            if (i < required) {
                missing_positional(init, values, required);
                return -1;
            }
            values[i] = PyTuple_GET_ITEM(init->defaults, i - required);
        }
    return 0;
}

/* Bind a call of `init` and set the fields. `self`, when given, is the first positional
 * argument (tp_init's object) and `args` the rest; keywords come as vectorcall names and
 * values, or as a dict. 0, or -1 with an error set. */
static int bind(SlotInit *init, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                PyObject *const *kwvalues, PyObject *kwdict)
{
    if (!init->cls) {
        PyErr_SetString(PyExc_TypeError, "slot_init: the initializer was cleared");
        return -1;
    }
    Py_ssize_t n = init->n_fields + 1, given = nargs + (self != NULL), i = 0;
    PyObject *values[MAX_FIELDS + 1];
    if (self) values[i++] = self;
    for (Py_ssize_t j = 0; i < n && j < nargs;) values[i++] = args[j++];
    for (; i < n; i++) values[i] = NULL;
    int r = 0;
    PyObject *copy = NULL, *key, *value;
    if (kwnames) {
        for (Py_ssize_t k = 0; !r && k < PyTuple_GET_SIZE(kwnames); k++)
            r = take_keyword(init, values, PyTuple_GET_ITEM(kwnames, k), kwvalues[k]);
    } else if (kwdict && PyDict_GET_SIZE(kwdict)) {
        /* every key a str first, as a call through a dict checks (_PyStack_UnpackDict); the
         * values are borrowed: where a key is a subclass of str (whose __eq__ may run Python
         * code), a copy of the dict holds them */
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwdict, &pos, &key, &value)) {
            if (PyUnicode_CheckExact(key)) continue;
            if (!PyUnicode_Check(key)) {
                PyErr_SetString(PyExc_TypeError, "keywords must be strings");
                return -1;
            }
            if (!copy && !(copy = PyDict_Copy(kwdict))) return -1;
        }
        pos = 0;
        while (!r && PyDict_Next(copy ? copy : kwdict, &pos, &key, &value)) r = take_keyword(init, values, key, value);
    }
    if (!r) r = complete(init, values, given);
    if (!r) r = set_fields(init, values);
    Py_XDECREF(copy);
    return r;
}

/* ---------------------------------------------------------------------- the init object */

static PyObject *init_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *const *kwvalues = kwnames ? args + nargs : NULL;
    if (bind((SlotInit *)callable, NULL, args, nargs, kwnames, kwvalues, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

/* tp_init of the classes given an init: the instance's type's ``__init__``, bound here when it
 * is one of ours, else called as slot_tp_init calls it. */
static int record_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *found = _PyType_Lookup(Py_TYPE(self), str_init);  /* borrowed */
    if (!found) {
        PyErr_SetObject(PyExc_AttributeError, str_init);
        return -1;
    }
    Py_INCREF(found);
    int r;
    if (Py_IS_TYPE(found, &SlotInit_Type)) {
        r = bind((SlotInit *)found, self, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), NULL, NULL, kwds);
    } else {
        PyObject *result;
        if (PyType_HasFeature(Py_TYPE(found), Py_TPFLAGS_METHOD_DESCRIPTOR)) {
            PyObject *with_self = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
            if (!with_self) { Py_DECREF(found); return -1; }
            PyTuple_SET_ITEM(with_self, 0, Py_NewRef(self));
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
                PyTuple_SET_ITEM(with_self, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
            result = PyObject_Call(found, with_self, kwds);
            Py_DECREF(with_self);
        } else {
            descrgetfunc get = Py_TYPE(found)->tp_descr_get;
            PyObject *bound = get ? get(found, self, (PyObject *)Py_TYPE(self)) : Py_NewRef(found);
            result = bound ? PyObject_Call(bound, args, kwds) : NULL;
            Py_XDECREF(bound);
        }
        r = result ? 0 : -1;
        if (result && result != Py_None) {
            PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%.200s'", Py_TYPE(result)->tp_name);
            r = -1;
        }
        Py_XDECREF(result);
    }
    Py_DECREF(found);
    return r;
}

static newfunc object_new;  /* object.__new__'s tp_new */

/* A call of the class through tuple and dict, as CPython makes one where a type has no
 * vectorcall: type_call, then tp_new and tp_init. */
static PyObject *call_by_tuple(PyObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs), *dict = NULL, *result = NULL;
    if (!tuple) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        if (!(dict = PyDict_New())) goto done;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++)
            if (PyDict_SetItem(dict, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) goto done;
    }
    result = PyType_Type.tp_call(cls, tuple, dict);
done:
    Py_DECREF(tuple);
    Py_XDECREF(dict);
    return result;
}

/* The class's vectorcall: what type_call does for it (object.__new__, then the init bound
 * here) without the argument tuple and keyword dict it would build. CPython knows nothing of
 * this field when a class attribute changes (it resets tp_new and tp_init, not it), so each
 * call first checks that the class still makes its objects with object.__new__ and
 * record_init, and calls through type_call where it does not. */
static PyObject *record_new(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyTypeObject *type = (PyTypeObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *found = type->tp_init == record_init && type->tp_new == object_new
                      && !PyType_HasFeature(type, Py_TPFLAGS_IS_ABSTRACT) ? _PyType_Lookup(type, str_init) : NULL;
    if (!found || !Py_IS_TYPE(found, &SlotInit_Type)) return call_by_tuple(callable, args, nargs, kwnames);
    PyObject *self = type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(found);
    int r = bind((SlotInit *)found, self, args, nargs, kwnames, kwnames ? args + nargs : NULL, NULL);
    Py_DECREF(found);
    if (r < 0) Py_CLEAR(self);
    return self;
}

static PyObject *init_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int init_traverse(SlotInit *self, visitproc visit, void *arg)
{
    Py_VISIT(self->cls); Py_VISIT(self->qualname); Py_VISIT(self->params);
    Py_VISIT(self->defaults); Py_VISIT(self->members); Py_VISIT(self->dict);
    return 0;
}

static int init_clear(SlotInit *self)
{
    Py_CLEAR(self->cls); Py_CLEAR(self->qualname); Py_CLEAR(self->params);
    Py_CLEAR(self->defaults); Py_CLEAR(self->members); Py_CLEAR(self->dict);
    return 0;
}

static void init_dealloc(SlotInit *self)
{
    PyObject_GC_UnTrack(self);
    init_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *init_repr(SlotInit *self)
{
    return PyUnicode_FromFormat("<slot_init %R>", self->qualname ? self->qualname : Py_None);
}

static PyGetSetDef init_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SlotInit_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammarc.allocation._slots.SlotInit",
    .tp_doc = "A record class's __init__, bound and applied in C (grammarc.allocation.slot_init).",
    .tp_basicsize = sizeof(SlotInit),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(SlotInit, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = init_get,
    .tp_dictoffset = offsetof(SlotInit, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_getset = init_getset,
    .tp_traverse = (traverseproc)init_traverse,
    .tp_clear = (inquiry)init_clear,
    .tp_dealloc = (destructor)init_dealloc,
    .tp_repr = (reprfunc)init_repr,
};

/* The offset of a member descriptor's writable object slot that instances of `cls` have, or
 * -1 with TypeError set. */
static Py_ssize_t object_slot(PyTypeObject *cls, PyObject *member, const char *who)
{
    if (!Py_IS_TYPE(member, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s: %R is not a slot's member descriptor", who, member);
        return -1;
    }
    PyMemberDef *def = ((PyMemberDescrObject *)member)->d_member;
    if (def->type != T_OBJECT_EX || (def->flags & READONLY) || !PyType_IsSubtype(cls, PyDescr_TYPE(member))) {
        PyErr_Format(PyExc_TypeError, "%s: %R is not a writable object slot of %R", who, member, (PyObject *)cls);
        return -1;
    }
    return def->offset;
}

/* A class of Python's own making (heap, mutable): the only kind whose slots are ours to set. */
static int check_record_class(PyObject *cls, const char *who)
{
    if (!PyType_Check(cls) || !PyType_HasFeature((PyTypeObject *)cls, Py_TPFLAGS_HEAPTYPE)
#ifdef Py_TPFLAGS_IMMUTABLETYPE
        || PyType_HasFeature((PyTypeObject *)cls, Py_TPFLAGS_IMMUTABLETYPE)
#endif
    ) {
        PyErr_Format(PyExc_TypeError, "%s: %R is not a class defined in Python", who, cls);
        return -1;
    }
    return 0;
}

static PyObject *slot_init(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cls, *names, *defaults, *members;
    if (!PyArg_ParseTuple(args, "OO!O!O!:slot_init", &cls, &PyTuple_Type, &names, &PyTuple_Type, &defaults,
                          &PyTuple_Type, &members))
        return NULL;
    if (check_record_class(cls, "slot_init") < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > MAX_FIELDS || PyTuple_GET_SIZE(members) != n || PyTuple_GET_SIZE(defaults) > n) {
        PyErr_Format(PyExc_ValueError, "slot_init: at most %d fields, one member each, at most one default each",
                     MAX_FIELDS);
        return NULL;
    }
    PyObject *params = PyTuple_New(n + 1);
    if (!params) return NULL;
    PyTuple_SET_ITEM(params, 0, Py_NewRef(str_self));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(name)) {
            PyErr_SetString(PyExc_TypeError, "slot_init: a field name is not a str");
            Py_DECREF(params);
            return NULL;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        PyTuple_SET_ITEM(params, i + 1, name);
    }
    for (Py_ssize_t i = 0; i <= n; i++)
        for (Py_ssize_t j = 0; j < i; j++) {
            int eq = PyUnicode_Compare(PyTuple_GET_ITEM(params, i), PyTuple_GET_ITEM(params, j));
            if (eq == 0 || (eq == -1 && PyErr_Occurred())) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "slot_init: two parameters share a name");
                Py_DECREF(params);
                return NULL;
            }
        }
    SlotInit *init = PyObject_GC_New(SlotInit, &SlotInit_Type);
    if (!init) { Py_DECREF(params); return NULL; }
    init->cls = NULL; init->qualname = NULL; init->params = params; init->defaults = Py_NewRef(defaults);
    init->members = Py_NewRef(members); init->n_fields = n; init->dict = NULL; init->vectorcall = init_vectorcall;
    PyObject_GC_Track(init);
    for (Py_ssize_t i = 0; i < n; i++)
        if ((init->offsets[i] = object_slot((PyTypeObject *)cls, PyTuple_GET_ITEM(members, i), "slot_init")) < 0) {
            Py_DECREF(init);
            return NULL;
        }
    PyObject *qualname = PyObject_GetAttrString(cls, "__qualname__");
    init->qualname = qualname ? PyUnicode_FromFormat("%S.__init__", qualname) : NULL;
    Py_XDECREF(qualname);
    if (!init->qualname) { Py_DECREF(init); return NULL; }
    init->cls = (PyTypeObject *)Py_NewRef(cls);
    if (PyObject_SetAttr(cls, str_init, (PyObject *)init) < 0) { Py_DECREF(init); return NULL; }
    ((PyTypeObject *)cls)->tp_init = record_init;  /* reset by CPython if __init__ is ever reassigned */
    if (Py_IS_TYPE(cls, &PyType_Type) && ((PyTypeObject *)cls)->tp_new == object_new)
        ((PyTypeObject *)cls)->tp_vectorcall = record_new;  /* checked on each call (record_new) */
    return (PyObject *)init;
}

/* ---------------------------------------------------------------------- remembered hashes */

static struct {
    PyTypeObject *owner;        /* the class whose slot keeps the hash (a strong reference) */
    PyObject *slot;             /* its member descriptor */
    Py_ssize_t offset;
    PyObject *compute;          /* compute(self, *args) */
    PyObject *args[MAX_HASH_ARGS];
    Py_ssize_t n_args;
} remembering;

/* A __hash__'s result as slot_tp_hash reads it: an int (one past Py_ssize_t hashed as an int
 * is), -1 made -2; anything else a TypeError. */
static Py_hash_t hash_result(PyObject *result)
{
    if (!PyLong_Check(result)) {
        PyErr_SetString(PyExc_TypeError, "__hash__ method should return an integer");
        return -1;
    }
    Py_hash_t h = PyLong_AsSsize_t(result);
    if (h == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return PyLong_Type.tp_hash(result);
    }
    return h == -1 ? -2 : h;
}

/* What ``try: return self._hash except AttributeError: return compute(self, *args)`` returns. */
static Py_hash_t remembered_hash(PyObject *self)
{
    if (!remembering.owner || !PyObject_TypeCheck(self, remembering.owner)) {  /* installed on subclasses only */
        PyErr_Format(PyExc_TypeError, "remember_hash: a '%.100s' object has no slot for its hash", Py_TYPE(self)->tp_name);
        return -1;
    }
    PyObject *kept = *(PyObject **)((char *)self + remembering.offset);
    if (kept) {
        if (PyLong_CheckExact(kept)) {
            Py_hash_t h = PyLong_AsSsize_t(kept);
            if (h != -1) return h;
        }
        Py_INCREF(kept);
        Py_hash_t h = hash_result(kept);
        Py_DECREF(kept);
        return h;
    }
    PyObject *stack[MAX_HASH_ARGS + 1];
    stack[0] = self;
    for (Py_ssize_t i = 0; i < remembering.n_args; i++) stack[i + 1] = remembering.args[i];
    PyObject *result = PyObject_Vectorcall(remembering.compute, stack, (size_t)remembering.n_args + 1, NULL);
    if (!result) return -1;
    Py_hash_t h = hash_result(result);
    Py_DECREF(result);
    return h;
}

static int same_remembering(PyObject *slot, PyObject *compute, PyObject *const *args, Py_ssize_t n_args)
{
    if (remembering.slot != slot || remembering.compute != compute || remembering.n_args != n_args) return 0;
    for (Py_ssize_t i = 0; i < n_args; i++)
        if (remembering.args[i] != args[i]) return 0;
    return 1;
}

static PyObject *remember_hash(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 3 || nargs > 3 + MAX_HASH_ARGS) {
        PyErr_Format(PyExc_TypeError, "remember_hash(cls, slot, compute, *args): at most %d args", MAX_HASH_ARGS);
        return NULL;
    }
    PyObject *cls = args[0], *slot = args[1], *compute = args[2];
    if (check_record_class(cls, "remember_hash") < 0) return NULL;
    Py_ssize_t offset = object_slot((PyTypeObject *)cls, slot, "remember_hash");
    if (offset < 0) return NULL;
    if (!PyCallable_Check(compute)) {
        PyErr_SetString(PyExc_TypeError, "remember_hash: compute is not callable");
        return NULL;
    }
    if (!remembering.owner) {
        remembering.owner = (PyTypeObject *)Py_NewRef(PyDescr_TYPE(slot));
        remembering.slot = Py_NewRef(slot);
        remembering.offset = offset;
        remembering.compute = Py_NewRef(compute);
        remembering.n_args = nargs - 3;
        for (Py_ssize_t i = 3; i < nargs; i++) remembering.args[i - 3] = Py_NewRef(args[i]);
    } else if (!same_remembering(slot, compute, args + 3, nargs - 3)) {
        PyErr_SetString(PyExc_ValueError, "remember_hash: one slot and one computation per process");
        return NULL;
    }
    /* a slot wrapper of object.__hash__'s kind around the compiled function: assigning it,
     * CPython makes the function the type's tp_hash (and its subclasses') */
    PyObject *base = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__hash__");
    if (!base) return NULL;
    if (!Py_IS_TYPE(base, &PyWrapperDescr_Type)) {
        Py_DECREF(base);
        PyErr_SetString(PyExc_TypeError, "remember_hash: object.__hash__ is not a slot wrapper");
        return NULL;
    }
    PyObject *wrapper = PyDescr_NewWrapper((PyTypeObject *)cls, ((PyWrapperDescrObject *)base)->d_base,
                                           (void *)remembered_hash);
    Py_DECREF(base);
    if (!wrapper) return NULL;
    int r = PyObject_SetAttrString(cls, "__hash__", wrapper);
    Py_DECREF(wrapper);
    if (r < 0) return NULL;
    return PyBool_FromLong(((PyTypeObject *)cls)->tp_hash == remembered_hash);
}

static PyMethodDef methods[] = {
    {"slot_init", slot_init, METH_VARARGS,
     "slot_init(cls, names, defaults, members) -> the __init__ installed on cls (binds in C, sets the slots)"},
    {"remember_hash", (PyCFunction)(void (*)(void))remember_hash, METH_FASTCALL,
     "remember_hash(cls, slot, compute, *args) -> whether cls hashes in C now (the int kept in slot, else compute)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_slots", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__slots(void)
{
    str_init = PyUnicode_InternFromString("__init__");
    str_self = PyUnicode_InternFromString("self");
    object_new = PyBaseObject_Type.tp_new;
    if (!str_init || !str_self || PyType_Ready(&SlotInit_Type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "SlotInit", (PyObject *)&SlotInit_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
