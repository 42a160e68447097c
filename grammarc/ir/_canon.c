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

typedef struct { PyObject *const *classes; PyObject *const *fields; Py_ssize_t n_classes; } Shapes;

static int put_value(Buffer *b, PyObject *value, const Shapes *shapes, int depth);

static int put_node(Buffer *b, PyObject *node, Py_ssize_t k, const Shapes *shapes, int depth)
{
    PyObject *names = shapes->fields[k];
    if (put_byte(b, 'E') < 0 || put_byte(b, (unsigned char)k) < 0) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *field = PyObject_GetAttr(node, PyTuple_GET_ITEM(names, i));
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
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *names = PyTuple_GET_ITEM(fields, k);
        if (!PyTuple_Check(names)) {
            PyErr_SetString(PyExc_TypeError, "encode: a class's field names are not a tuple");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++)
            if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
                PyErr_SetString(PyExc_TypeError, "encode: a field name is not a str");
                return NULL;
            }
    }
    Shapes shapes = {&PyTuple_GET_ITEM(classes, 0), &PyTuple_GET_ITEM(fields, 0), n};
    Buffer b = {0};
    PyObject *result = NULL;
    if (put_value(&b, value, &shapes, 0) == 0)
        result = PyBytes_FromStringAndSize((const char *)b.data, (Py_ssize_t)b.n);
    free(b.data);
    return result;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "encode(value, classes, fields) -> the canonical bytes of a grammar's rules"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_canon", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__canon(void) { return PyModule_Create(&module); }
