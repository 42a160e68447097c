/* grammarc.tokens._scan: what its C files share (the buffer check) and the functions
 * _sets.c gives to the module table in _scan.c. */

#ifndef GRAMMARC_SCAN_H
#define GRAMMARC_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 0, or -1 with a ValueError when `b` is not a whole number of `itemsize`-byte items. */
static inline int need(Py_buffer *b, Py_ssize_t itemsize, const char *what) {
    if (b->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "scan: %s is not an array of %zd-byte items", what, itemsize);
        return -1;
    }
    return 0;
}

/* Whether row `r` indexes the tokens (lengths int32 and offsets int64, one per row), `p`
 * lies within it (its end included) and it lies within the data (checked once, before a
 * loop, so the loop needs no bounds checks). */
static inline int row_ok(const Py_buffer *lengths, const Py_buffer *offsets, const Py_buffer *data, Py_ssize_t r,
                  Py_ssize_t p) {
    const int32_t *len = lengths->buf;
    const int64_t *off = offsets->buf;
    Py_ssize_t n_rows = lengths->len / (Py_ssize_t)sizeof(int32_t);
    return r >= 0 && r < n_rows && p >= 0 && p <= len[r] && off[r] >= 0 && off[r] + len[r] <= data->len;
}

/* _sets.c (each's contract is at its definition) */
PyObject *pack_rows(PyObject *self, PyObject *args);
PyObject *next_bytes(PyObject *self, PyObject *args);
PyObject *order_by_byte(PyObject *self, PyObject *args);
PyObject *pack_words(PyObject *self, PyObject *args);
PyObject *or_into(PyObject *self, PyObject *args);
PyObject *pack_ids(PyObject *self, PyObject *args);
PyObject *rows_by_byte(PyObject *self, PyObject *args);
PyObject *packed_ids(const int64_t *id, Py_ssize_t n, Py_ssize_t n_words);

#endif
