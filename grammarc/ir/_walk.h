/* grammarc.ir._walk: what its C files share (_walk.c: the checks' walks and the module
 * table; _rewrite.c: the rewriting walks). */

#ifndef GRAMMARC_IR_WALK_H
#define GRAMMARC_IR_WALK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

/* The IR's ten classes, in the order grammarc.ir.nodes.WALK_CLASSES gives them. */
enum { SEQ, ALT, REPEAT, EXCEPT, LITERAL, SUBSTRINGS, REF, REGEX, JSON_EXCEPT, ANY_TOKEN, N_CLASSES };

/* Attribute names, interned once (PyInit__walk). */
extern PyObject *s_items, *s_item, *s_text, *s_name, *s_min, *s_max, *s_mode, *s_pattern, *s_words, *s_limit, *s_span;

/* The index of the node's exact class among `classes`, or -1 (a class of its own). */
static inline int kind_of(PyObject *node, PyObject *const *classes)
{
    PyTypeObject *type = Py_TYPE(node);
    for (int k = 0; k < N_CLASSES; k++)
        if ((PyObject *)type == classes[k]) return k;
    return -1;
}

/* The items of `classes` (a tuple: the IR's ten classes), or NULL with the error that
 * names `who`. */
static inline PyObject *const *ir_classes(PyObject *classes, const char *who)
{
    if (PyTuple_GET_SIZE(classes) != N_CLASSES) {
        PyErr_Format(PyExc_ValueError, "%s: the IR's ten classes are needed", who);
        return NULL;
    }
    return &PyTuple_GET_ITEM(classes, 0);
}

/* A new tuple of `n` new references (each NULL-checked: a NULL fails the whole, the others released). */
static inline PyObject *pack_new(Py_ssize_t n, PyObject **parts)
{
    PyObject *t = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!parts[i]) goto fail;
    if (!(t = PyTuple_New(n))) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, parts[i]);
    return t;
fail:
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(parts[i]);
    return NULL;
}

/* _rewrite.c's functions, in _walk.c's module table. */
PyObject *inline_rules(PyObject *self, PyObject *args);
PyObject *substituted(PyObject *self, PyObject *args);

#endif
