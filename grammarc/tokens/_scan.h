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

/* The number of rows of a vocabulary's tokens (offsets int64 and lengths int32, one per row,
 * into `data`), each checked to lie within the data; -1 with a ValueError naming `who`. */
static inline Py_ssize_t rows_checked(Py_buffer *data, Py_buffer *offsets, Py_buffer *lengths, const char *who) {
    if (need(offsets, sizeof(int64_t), "offsets") || need(lengths, sizeof(int32_t), "lengths")) return -1;
    Py_ssize_t n = lengths->len / (Py_ssize_t)sizeof(int32_t);
    if (offsets->len != n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "%s: inconsistent array sizes", who);
        return -1;
    }
    for (Py_ssize_t r = 0; r < n; r++)
        if (!row_ok(lengths, offsets, data, r, 0)) {
            PyErr_Format(PyExc_ValueError, "%s: a row lies outside the data", who);
            return -1;
        }
    return n;
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
