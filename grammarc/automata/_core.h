/* grammarc.automata._core: what its C files share (the buffer and array helpers, the byte
 * rows and canonical codes) and the functions the other files give to the module table in
 * _core.c. */

#ifndef GRAMMARC_CORE_H
#define GRAMMARC_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* What a construction returns: done, out of memory (no exception set yet: the loops run
 * without the GIL), past its state budget, or given an index out of range. */
enum { OK = 0, NOMEM = -1, BUDGET = -2, BAD_INDEX = -3 };

/* Growable arrays: room for `need` items of `item` bytes at *v (capacity *cap, doubled from
 * 64), or -1 (nothing changed) when the memory is not there or the size would overflow. */
static inline int grow(void **v, size_t *cap, size_t need, size_t item)
{
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2) return -1;
        c *= 2;
    }
    if (c > SIZE_MAX / item) return -1;
    void *more = realloc(*v, c * item);
    if (!more) return -1;
    *v = more; *cap = c;
    return 0;
}

/* Arrays of i32 (Vec) and i64 (Vec64) that grow: room for `extra` more items, or -1. */
typedef struct { i32 *v; size_t n, cap; } Vec;
typedef struct { i64 *v; size_t n, cap; } Vec64;

static inline int vec_reserve(Vec *a, size_t extra)
{
    return a->n + extra <= a->cap ? 0 : grow((void **)&a->v, &a->cap, a->n + extra, sizeof *a->v);
}

static inline int vec64_reserve(Vec64 *a, size_t extra)
{
    return a->n + extra <= a->cap ? 0 : grow((void **)&a->v, &a->cap, a->n + extra, sizeof *a->v);
}

/* ------------------------------------------------------------------ byte rows */

/* The end of the run of row[b]'s value that starts at b, cut at `past` (<= 256; row[past..]
 * may be unwritten: a row's window, or a row of fewer than 256 cells): the first b' > b
 * holding another value, or `past`. Where SSE2 is there (every x86-64), eight entries are
 * compared at a time (then four) and the first other one found by its bit: most of a row is
 * one or two long runs (mostly of -1), and the byte-by-byte loop alone was most of the cost
 * of a DFA's key. */
static inline int run_end_within(const i32 *row, int b, int past)
{
    i32 target = row[b++];
#ifdef __SSE2__
    __m128i t = _mm_set1_epi32(target);
    for (; b + 8 <= past; b += 8) {
        __m128i lo = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(row + b)), t);
        __m128i hi = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(row + b + 4)), t);
        unsigned same = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(lo))
                        | (unsigned)_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4;
        if (same != 0xFF) return b + __builtin_ctz(~same);
    }
    if (b + 4 <= past) {
        unsigned same = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(
            _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(row + b)), t)));
        if (same != 0xF) return b + __builtin_ctz(~same);
        b += 4;
    }
#endif
    while (b < past && row[b] == target) b++;
    return b;
}

/* run_end_within a whole row of 256. */
static inline int run_end(const i32 *row, int b) { return run_end_within(row, b, 256); }

/* dst[0..n) = v. */
static inline void fill_i32(i32 *dst, int n, i32 v)
{
    int c = 0;
#ifdef __SSE2__
    __m128i w = _mm_set1_epi32(v);
    for (; c + 4 <= n; c += 4) _mm_storeu_si128((__m128i *)(dst + c), w);
#endif
    for (; c < n; c++) dst[c] = v;
}

/* The canonical code of a DFA (what DFA.key digests; suffix_code reads it off any DFA): per
 * state, in breadth-first order, its flag ('A' accepting, 'N' not) and run count (2 bytes,
 * little-endian), then per maximal run of one live target its bytes lo, hi and the target's
 * number (4 bytes, little-endian). Each writer returns the end of what it wrote. */
static inline unsigned char *code_head(unsigned char *c, int accepting, int runs)
{
    c[0] = accepting ? 'A' : 'N';
    c[1] = (unsigned char)(runs & 0xff); c[2] = (unsigned char)(runs >> 8);
    return c + 3;
}

static inline unsigned char *code_run(unsigned char *c, int lo, int hi, i32 target)
{
    c[0] = (unsigned char)lo; c[1] = (unsigned char)hi;
    c[2] = (unsigned char)(target & 0xff); c[3] = (unsigned char)((target >> 8) & 0xff);
    c[4] = (unsigned char)((target >> 16) & 0xff); c[5] = (unsigned char)((target >> 24) & 0xff);
    return c + 6;
}

PyObject *py_runs(PyObject *self, PyObject *args);
PyObject *py_run_arrays(PyObject *self, PyObject *args);
PyObject *py_suffix_code(PyObject *self, PyObject *args);
PyObject *py_literal(PyObject *self, PyObject *args);
PyObject *py_byte_classes(PyObject *self, PyObject *args);
PyObject *py_byte_runs(PyObject *self, PyObject *args);
PyObject *py_json_string(PyObject *self, PyObject *args);
PyObject *py_except_runs(PyObject *self, PyObject *args); /* _keys.c */
PyObject *py_determinize(PyObject *self, PyObject *args); /* _determinize.c */
extern PyTypeObject WalkerType; /* _views.c */

#endif
