/* grammarc.ir._canon: a grammar's canonical bytes, which the compiled-grammar cache hashes
 * into a file name (grammarc.lowering.compiled_cache.grammar_key).
 *
 * encode(value, classes, fields) -> bytes
 *
 * The bytes are a prefix-free code of `value` (the grammar's start rule and rules), so two
 * values have equal bytes exactly when they are equal in every field the IR compares:
 *
 *   'E' k  f1 f2 ...  a node of classes[k] (exact class), then its fields[k] attributes in order
 *   'T' n  v1 ... vn  a tuple of n values
 *   'S' w n  data     a str: its n code units of w bytes (1, 2, 4: PEP 393's narrowest, so
 *                     canonical), little-endian
 *   'I' i64           an int that fits 64 bits (little-endian)
 *   'N'               None
 *   'R' n  utf-8      anything else (a subclass of a node class, a bool, a huge int): its repr,
 *                     UTF-8 with surrogates passed through, as the key hashed before this code
 *
 * Counts and lengths are 8 bytes little-endian. `repr` of the same value (what the key used to
 * hash) cost ~0.34 ms for a MaskBench schema's grammar, ~13% of compiling it; this is one pass
 * in C. The Python version of the code is the test oracle (tests/test_grammar_key.py).
 * Nodes nest at most MAX_NESTING deep (check_depth refuses grammars past 200 first). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NESTING 4096

typedef struct { unsigned char *data; size_t n, cap; } Buffer;

/* Room for `more` bytes; 0, or -1 with MemoryError set. */
static int room(Buffer *b, size_t more)
{
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more) {
        if (cap > SIZE_MAX / 2) { PyErr_NoMemory(); return -1; }
        cap *= 2;
    }
    unsigned char *data = realloc(b->data, cap);
    if (!data) { PyErr_NoMemory(); return -1; }
    b->data = data, b->cap = cap;
    return 0;
}

static int put_byte(Buffer *b, unsigned char c)
{
    if (room(b, 1) < 0) return -1;
    b->data[b->n++] = c;
    return 0;
}

static int put_u64(Buffer *b, uint64_t v)
{
    if (room(b, 8) < 0) return -1;
    for (int i = 0; i < 8; i++) b->data[b->n++] = (unsigned char)(v >> (8 * i));
    return 0;
}

static int put_str(Buffer *b, PyObject *s)
{
    int width = PyUnicode_KIND(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (put_byte(b, 'S') < 0 || put_byte(b, (unsigned char)width) < 0 || put_u64(b, (uint64_t)n) < 0) return -1;
    if (room(b, (size_t)n * (size_t)width) < 0) return -1;
    const void *data = PyUnicode_DATA(s);
    if (width == 1) {
        memcpy(b->data + b->n, data, (size_t)n);
        b->n += (size_t)n;
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(width, data, i);
        for (int j = 0; j < width; j++) b->data[b->n++] = (unsigned char)(c >> (8 * j));
    }
    return 0;
}

static int put_repr(Buffer *b, PyObject *value)
{
    PyObject *text = PyObject_Repr(value);
    PyObject *utf8 = text ? PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass") : NULL;
    Py_XDECREF(text);
    if (!utf8) return -1;
    Py_ssize_t n = PyBytes_GET_SIZE(utf8);
    int failed = put_byte(b, 'R') < 0 || put_u64(b, (uint64_t)n) < 0 || room(b, (size_t)n) < 0;
    if (!failed) {
        memcpy(b->data + b->n, PyBytes_AS_STRING(utf8), (size_t)n);
        b->n += (size_t)n;
    }
    Py_DECREF(utf8);
    return failed ? -1 : 0;
}

/* The node classes, each one's field names, and where each field lives: `at[k]` points at
 * class k's offsets, one per field, of the object slot that holds it (-1: read through
 * getattr instead). */
typedef struct {
    PyObject *const *classes; PyObject *const *fields; Py_ssize_t n_classes;
    Py_ssize_t **at;
    struct Located *held;  /* the kept pair `at` belongs to (released by shapes_done), or NULL: `at` is its own */
} Shapes;

/* Where class `cls` keeps attribute `name`: the offset of its object slot when the class's
 * attribute is a plain member descriptor of one (what ``__slots__`` and slotted dataclasses
 * make), else -1. A node's fields are read straight from its slots: getattr through the type's
 * lookup was a third of `encode` and `tree_hash`. The node must be of exactly `cls` (both
 * functions dispatch on the exact class), whose layout fixes the offset. */
static Py_ssize_t slot_offset(PyObject *cls, PyObject *name)
{
    PyObject *descr = _PyType_Lookup((PyTypeObject *)cls, name);  /* borrowed; no error set */
    if (!descr || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if ((member->type != T_OBJECT_EX && member->type != T_OBJECT) || (member->flags & PY_AUDIT_READ)) return -1;
    if (!PyType_IsSubtype((PyTypeObject *)cls, PyDescr_TYPE(descr))) return -1;
    return member->offset;
}

/* The located offsets of one (classes, fields) pair, kept between calls: both functions are
 * called with the same module-level tuples (grammarc.ir.nodes._HASHING,
 * grammarc.lowering.compiled_cache._SHAPES) thousands of times per grammar, most on a small
 * tree, so locating every field anew would cost more than it saves. A pair is located again
 * when a tuple differs or a class's type version changed (an attribute reassigned). */
typedef struct Located {
    PyObject *classes, *fields;   /* strong references; NULL: empty */
    unsigned int *tags;            /* each class's tp_version_tag when located */
    Py_ssize_t **at;
    int busy;                      /* calls reading `at` now (a field's hash or repr may run Python code) */
} Located;

static Located located[2];  /* the pairs of the last calls (the GIL guards them) */

static void located_clear(Located *l)
{
    Py_CLEAR(l->classes); Py_CLEAR(l->fields);
    free(l->tags); free(l->at);
    l->tags = NULL; l->at = NULL;
}

/* shapes->at for every class and field, from `located` or located now (the classes are
 * types, checked by the caller); 0, or -1 with MemoryError set. */
static int shapes_locate(Shapes *shapes, PyObject *classes, PyObject *fields)
{
    Py_ssize_t total = 0, n = shapes->n_classes;
    for (int j = 0; j < 2; j++) {
        Located *l = &located[j];
        if (l->classes != classes || l->fields != fields) continue;
        Py_ssize_t k = 0;
        for (; k < n; k++) {
            PyTypeObject *cls = (PyTypeObject *)shapes->classes[k];
            if (!(cls->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || cls->tp_version_tag != l->tags[k]) break;
        }
        if (k == n) { shapes->at = l->at; shapes->held = l; l->busy++; return 0; }
        if (!l->busy) located_clear(l);
    }
    for (Py_ssize_t k = 0; k < n; k++) total += PyTuple_GET_SIZE(shapes->fields[k]);
    Py_ssize_t **at = malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t *) + (size_t)(total ? total : 1) * sizeof(Py_ssize_t));
    unsigned int *tags = malloc((size_t)(n ? n : 1) * sizeof(unsigned int));
    if (!at || !tags) { free(at); free(tags); PyErr_NoMemory(); return -1; }
    Py_ssize_t *cells = (Py_ssize_t *)(at + (n ? n : 1));
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *names = shapes->fields[k];
        at[k] = cells;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++)
            *cells++ = slot_offset(shapes->classes[k], PyTuple_GET_ITEM(names, i));
        /* _PyType_Lookup above gave each class a valid version tag where it could */
        PyTypeObject *cls = (PyTypeObject *)shapes->classes[k];
        tags[k] = cls->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG ? cls->tp_version_tag : 0;
    }
    shapes->at = at;
    shapes->held = NULL;
    static int evict;  /* both taken: replace them in turn */
    Located *l = !located[0].classes ? &located[0] : !located[1].classes ? &located[1] : &located[evict ^= 1];
    if (l->busy) {  /* in use further up the stack: this call keeps its own */
        free(tags);
        return 0;
    }
    located_clear(l);
    l->classes = Py_NewRef(classes); l->fields = Py_NewRef(fields);
    l->tags = tags; l->at = at; l->busy = 1;
    shapes->held = l;
    return 0;
}

/* The end of a call: its pair released, or its own offsets freed. */
static void shapes_done(Shapes *shapes)
{
    if (shapes->held) shapes->held->busy--;
    else free(shapes->at);
    shapes->at = NULL;
}

/* Field i of `node`, of classes[k] or (tree_hash's top node) a subclass of it: a new
 * reference, or NULL with an error set. A node of exactly classes[k] is read from its slot;
 * a subclass's (which may override the field), or a slot never set (getattr raises as it
 * would), through getattr. */
static PyObject *field_of(PyObject *node, Py_ssize_t k, Py_ssize_t i, const Shapes *shapes)
{
    Py_ssize_t offset = shapes->at[k][i];
    if (offset >= 0 && (PyObject *)Py_TYPE(node) == shapes->classes[k]) {
        PyObject *value = *(PyObject **)((char *)node + offset);
        if (value) return Py_NewRef(value);
    }
    return PyObject_GetAttr(node, PyTuple_GET_ITEM(shapes->fields[k], i));
}

static int put_value(Buffer *b, PyObject *value, const Shapes *shapes, int depth);

static int put_node(Buffer *b, PyObject *node, Py_ssize_t k, const Shapes *shapes, int depth)
{
    PyObject *names = shapes->fields[k];
    if (put_byte(b, 'E') < 0 || put_byte(b, (unsigned char)k) < 0) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *field = field_of(node, k, i, shapes);
        if (!field) return -1;
        int failed = put_value(b, field, shapes, depth + 1);
        Py_DECREF(field);
        if (failed < 0) return -1;
    }
    return 0;
}

static int put_value(Buffer *b, PyObject *value, const Shapes *shapes, int depth)
{
    if (depth > MAX_NESTING) {
        PyErr_Format(PyExc_ValueError, "encode: the grammar nests deeper than %d levels", MAX_NESTING);
        return -1;
    }
    if (PyUnicode_CheckExact(value)) return put_str(b, value);
    if (PyTuple_CheckExact(value)) {
        Py_ssize_t n = PyTuple_GET_SIZE(value);
        if (put_byte(b, 'T') < 0 || put_u64(b, (uint64_t)n) < 0) return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (put_value(b, PyTuple_GET_ITEM(value, i), shapes, depth + 1) < 0) return -1;
        return 0;
    }
    if (value == Py_None) return put_byte(b, 'N');
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (!overflow) return put_byte(b, 'I') < 0 ? -1 : put_u64(b, (uint64_t)v);
        return put_repr(b, value);
    }
    PyTypeObject *type = Py_TYPE(value);
    for (Py_ssize_t k = 0; k < shapes->n_classes; k++)
        if ((PyObject *)type == shapes->classes[k]) return put_node(b, value, k, shapes, depth);
    return put_repr(b, value);
}

/* 0 when every item of `fields` (one per class) is a tuple of str, else -1 with a TypeError
 * naming `who`. */
static int check_fields(PyObject *fields, const char *who)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fields); k++) {
        PyObject *names = PyTuple_GET_ITEM(fields, k);
        if (!PyTuple_Check(names)) {
            PyErr_Format(PyExc_TypeError, "%s: a class's field names are not a tuple", who);
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++)
            if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
                PyErr_Format(PyExc_TypeError, "%s: a field name is not a str", who);
                return -1;
            }
    }
    return 0;
}

static PyObject *encode(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *value, *classes, *fields;
    if (!PyArg_ParseTuple(args, "OO!O!", &value, &PyTuple_Type, &classes, &PyTuple_Type, &fields)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(classes);
    if (n != PyTuple_GET_SIZE(fields) || n > 255) {
        PyErr_SetString(PyExc_ValueError, "encode: one tuple of field names per class (at most 255 classes)");
        return NULL;
    }
    if (check_fields(fields, "encode") < 0) return NULL;
    for (Py_ssize_t k = 0; k < n; k++)
        if (!PyType_Check(PyTuple_GET_ITEM(classes, k))) {
            PyErr_SetString(PyExc_TypeError, "encode: a class is not a type");
            return NULL;
        }
    Shapes shapes = {&PyTuple_GET_ITEM(classes, 0), &PyTuple_GET_ITEM(fields, 0), n, NULL, NULL};
    if (shapes_locate(&shapes, classes, fields) < 0) return NULL;
    Buffer b = {0};
    PyObject *result = NULL;
    if (put_value(&b, value, &shapes, 0) == 0)
        result = PyBytes_FromStringAndSize((const char *)b.data, (Py_ssize_t)b.n);
    free(b.data);
    shapes_done(&shapes);
    return result;
}

/* tree_hash(value, classes, fields, remember, slot) -> int
 *
 * The hash of `value` (an IR node, or a tuple such as a grammar's (start, rules)) as the
 * nodes' dataclasses define it: a node of classes[k], the tuple hash of its fields[k]
 * attributes; a tuple, the tuple hash of its items; anything else, its own hash. The tuple
 * hash is CPython's (tuplehash: xxHash's lanes over the items' hashes), so a node hashes as
 * ``hash(tuple(its fields))``; each node of a class whose `remember` byte is set keeps its
 * hash in `slot` (the ``_hash`` slot's member descriptor), and one already kept is read, not
 * recomputed. The IR's composite nodes hash here (grammarc.ir.nodes._remembers_its_hash):
 * in Python, the first hash of a grammar made a frame, a tuple and a failed slot read (an
 * AttributeError) per node, ~4% of compiling a MaskBench schema. Recursive like put_value,
 * at most MAX_NESTING deep (RecursionError past it, as Python's own hash recursion gave). */

#if SIZEOF_PY_UHASH_T > 4
#define XXPRIME_1 ((Py_uhash_t)11400714785074694791ULL)
#define XXPRIME_2 ((Py_uhash_t)14029467366897019727ULL)
#define XXPRIME_5 ((Py_uhash_t)2870177450012600261ULL)
#define XXROTATE(x) ((x << 31) | (x >> 33))
#else
#define XXPRIME_1 ((Py_uhash_t)2654435761UL)
#define XXPRIME_2 ((Py_uhash_t)2246822519UL)
#define XXPRIME_5 ((Py_uhash_t)374761393UL)
#define XXROTATE(x) ((x << 13) | (x >> 19))
#endif

typedef struct { Shapes shapes; const char *remember; Py_ssize_t offset; } Hashing;

static Py_uhash_t lane_in(Py_uhash_t acc, Py_uhash_t lane)
{
    acc += lane * XXPRIME_2;
    acc = XXROTATE(acc);
    return acc * XXPRIME_1;
}

static Py_hash_t lanes_done(Py_uhash_t acc, Py_ssize_t n)
{
    acc += (Py_uhash_t)n ^ (XXPRIME_5 ^ 3527539UL);  /* as tuplehash: hash(()) keeps its historical value */
    return acc == (Py_uhash_t)-1 ? 1546275796 : (Py_hash_t)acc;
}

static Py_hash_t value_hash(PyObject *value, const Hashing *h, int depth);

static Py_hash_t node_hash(PyObject *node, Py_ssize_t k, const Hashing *h, int depth)
{
    PyObject **slot = h->remember[k] ? (PyObject **)((char *)node + h->offset) : NULL;
    if (slot && *slot && PyLong_CheckExact(*slot)) {
        Py_hash_t kept = PyLong_AsSsize_t(*slot);
        if (kept != -1) return kept;
        if (PyErr_Occurred()) return -1;
    }
    PyObject *names = h->shapes.fields[k];
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    Py_uhash_t acc = XXPRIME_5;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *field = field_of(node, k, i, &h->shapes);
        if (!field) return -1;
        Py_hash_t lane = value_hash(field, h, depth + 1);
        Py_DECREF(field);
        if (lane == -1) return -1;
        acc = lane_in(acc, (Py_uhash_t)lane);
    }
    Py_hash_t result = lanes_done(acc, n);
    if (slot) {
        PyObject *kept = PyLong_FromSsize_t(result), *old = *slot;
        if (!kept) return -1;
        *slot = kept;
        Py_XDECREF(old);  /* another thread's equal value, set while a field's hash ran Python code */
    }
    return result;
}

static Py_hash_t value_hash(PyObject *value, const Hashing *h, int depth)
{
    if (depth > MAX_NESTING) {
        PyErr_Format(PyExc_RecursionError, "tree_hash: the value nests deeper than %d levels", MAX_NESTING);
        return -1;
    }
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(value);
        Py_uhash_t acc = XXPRIME_5;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_hash_t lane = value_hash(PyTuple_GET_ITEM(value, i), h, depth + 1);
            if (lane == -1) return -1;
            acc = lane_in(acc, (Py_uhash_t)lane);
        }
        return lanes_done(acc, n);
    }
    for (Py_ssize_t k = 0; k < h->shapes.n_classes; k++)
        if ((PyObject *)type == h->shapes.classes[k]) return node_hash(value, k, h, depth);
    return PyObject_Hash(value);
}

static PyObject *tree_hash(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *value, *classes, *fields, *remember, *slot;
    if (!PyArg_ParseTuple(args, "OO!O!O!O", &value, &PyTuple_Type, &classes, &PyTuple_Type, &fields, &PyBytes_Type,
                          &remember, &slot))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(classes);
    if (n != PyTuple_GET_SIZE(fields) || n != PyBytes_GET_SIZE(remember)) {
        PyErr_SetString(PyExc_ValueError, "tree_hash: one tuple of field names and one remember byte per class");
        return NULL;
    }
    if (!Py_IS_TYPE(slot, &PyMemberDescr_Type) || ((PyMemberDescrObject *)slot)->d_member->type != T_OBJECT_EX
        || (((PyMemberDescrObject *)slot)->d_member->flags & READONLY)) {
        PyErr_SetString(PyExc_TypeError, "tree_hash: the slot is not a writable object slot's member descriptor");
        return NULL;
    }
    PyTypeObject *owner = PyDescr_TYPE(slot);
    const char *flags = PyBytes_AS_STRING(remember);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *cls = PyTuple_GET_ITEM(classes, k);
        if (!PyType_Check(cls) || (flags[k] && !PyType_IsSubtype((PyTypeObject *)cls, owner))) {
            PyErr_SetString(PyExc_TypeError, "tree_hash: a class is not a type, or cannot hold the slot");
            return NULL;
        }
    }
    if (check_fields(fields, "tree_hash") < 0) return NULL;
    Hashing h = {{&PyTuple_GET_ITEM(classes, 0), &PyTuple_GET_ITEM(fields, 0), n, NULL, NULL}, flags,
                 ((PyMemberDescrObject *)slot)->d_member->offset};
    if (shapes_locate(&h.shapes, classes, fields) < 0) return NULL;
    Py_hash_t result;
    PyTypeObject *type = Py_TYPE(value);
    Py_ssize_t k = 0;
    for (; k < n && (PyObject *)type != h.shapes.classes[k]; k++) {}
    if (k == n)  /* a subclass of a node class that inherits its hash: hashed as its base */
        for (k = 0; k < n && !PyObject_TypeCheck(value, (PyTypeObject *)h.shapes.classes[k]); k++) {}
    result = k < n ? node_hash(value, k, &h, 0) : value_hash(value, &h, 0);
    shapes_done(&h.shapes);
    return result == -1 ? NULL : PyLong_FromSsize_t(result);
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "encode(value, classes, fields) -> the canonical bytes of a grammar's rules"},
    {"tree_hash", tree_hash, METH_VARARGS,
     "tree_hash(value, classes, fields, remember, slot) -> the hash of an IR value, kept by the nodes that remember"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_canon", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__canon(void) { return PyModule_Create(&module); }
