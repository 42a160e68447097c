/* grammarc.automata._core: what its C files share (the buffer helpers) and the functions
 * _views.c gives to the module table in _core.c. */

#ifndef GRAMMARC_CORE_H
#define GRAMMARC_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t i32;
typedef int64_t i64;

/* ------------------------------------------------------------------ buffers */

/* A C-contiguous buffer of `itemsize`-byte items (format not checked: the Python
 * wrappers pass numpy arrays of the right dtype). */
static inline int get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes, got %zd", name, itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static inline Py_ssize_t buf_len(const Py_buffer *view) { return view->len / view->itemsize; }

PyObject *py_runs(PyObject *self, PyObject *args);
PyObject *py_suffix_code(PyObject *self, PyObject *args);
PyObject *py_byte_classes(PyObject *self, PyObject *args);
PyObject *py_json_string(PyObject *self, PyObject *args);
extern PyTypeObject WalkerType; /* _views.c */

#endif
