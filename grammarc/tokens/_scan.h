/* grammarc.tokens._scan: what its C files share (the buffer checks, a growing array, a DFA's
 * table, the objects that hold a vocabulary's rows and a DFA's table) and the functions
 * that _sets.c, _pairs.c and _tables.c give to the module in _scan.c. */

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

/* A growing array of int32 (a walk's outputs, a pair walk's queue). */
typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Vec;

static inline int vec_push(Vec *v, int32_t x) {
    if (v->len == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *data = realloc(v->data, (size_t)cap * sizeof(int32_t));
        if (!data) return -1;
        v->data = data;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

static inline PyObject *vec_bytes(Vec *v) {
    return PyBytes_FromStringAndSize((const char *)v->data, v->len * (Py_ssize_t)sizeof(int32_t));
}

typedef struct {
    const int32_t *trans;  /* dense, or NULL */
    const int64_t *base;
    const int32_t *check, *next;
    Py_ssize_t n_states, comb_size;
} Table;

static inline int32_t step(const Table *t, int32_t s, uint8_t b) {
    if (t->trans) return t->trans[(Py_ssize_t)s * 256 + b];
    Py_ssize_t i = (Py_ssize_t)t->base[s] + b;
    return t->check[i] == s ? t->next[i] : -1;
}

/* A vocabulary's token rows (`_scan.Tokens`, _tables.c): row r is data[offsets[r] :
 * offsets[r] + lengths[r]], each checked to lie within the data when made. sets (4 uint64
 * per row), kinds (uint16), shared (uint8), skip (int32), ids (int32) and starts (int64
 * [257]) may be empty: not given. */
typedef struct {
    PyObject_HEAD
    Py_buffer data, offsets, lengths, sets, kinds, shared, skip, ids, starts;
    Py_ssize_t n_rows;
    int sorted; /* whether the rows are in ascending byte order (checked when made; `parting_rows`) */
} TokensObject;

/* A state's loop test (`table_loop`). */
typedef struct {
    uint64_t leaves[4];      /* the bytes that take the state elsewhere (or nowhere) */
    uint16_t exact, partial; /* the byte groups all / only some of whose bytes are in `leaves` */
    uint8_t made, loops_nowhere;
} LoopTest;

/* A DFA's transitions (`_scan.Table`, _tables.c), checked when made: every target below
 * the state count, every comb row inside the comb arrays. */
typedef struct {
    PyObject_HEAD
    Py_buffer trans, base, check, next, accept;
    Table t;
    LoopTest *loops; /* per state, each made on its first walk */
    uint64_t (*cuts)[4]; /* per state, made on its first pair walk (`table_cuts`); NULL before any */
    uint8_t *cuts_made;
} TableObject;

/* A token set's storage (`_scan.PackedSet`, _sets.c): bits (bytes of uint32 words), words
 * (bytes of intp word numbers; NULL: dense) and the number of tokens. */
typedef struct {
    PyObject_HEAD
    PyObject *bits, *words;
    Py_ssize_t count;
} SetObject;

extern PyTypeObject TokensType, TableType, SetType;
extern uint8_t byte_group[256]; /* _scan.c: the groups of bytes a row's kinds record */
const LoopTest *table_loop(TableObject *self, int32_t q);
const uint64_t *table_cuts(TableObject *self, int32_t q);

/* A set of byte values (bit b % 8 of bits[b / 8] = byte b) as a Python int (bit b = byte
 * b), as `TokenIndex._starting` tests terminals' first bytes against it. */
static inline PyObject *byte_set_int(const unsigned char bits[32]) {
    return _PyLong_FromByteArray(bits, 32, 1, 0);
}

/* _sets.c (each's contract is at its definition) */
PyObject *pack_rows(PyObject *self, PyObject *args);
PyObject *next_bytes(PyObject *self, PyObject *args);
PyObject *order_by_byte(PyObject *self, PyObject *args);
PyObject *pack_words(PyObject *self, PyObject *args);
PyObject *union_sets(PyObject *self, PyObject *args);
PyObject *pack_ids(PyObject *self, PyObject *args);
PyObject *rows_by_byte(PyObject *self, PyObject *args);
PyObject *bucket_prefixes(PyObject *self, PyObject *args);
PyObject *packed_ids(const int64_t *id, Py_ssize_t n, Py_ssize_t n_words);
PyObject *set_of_dense(const uint32_t *dense, Py_ssize_t n_words);
int or_set(uint32_t *a, Py_ssize_t n_acc, const SetObject *set, const char *who);

/* _scan.c: a token tree part's walk (`part_walk`; its contract is at its definition) */
typedef struct {
    PyObject *packed;          /* (bits, words, count) of the ends' token ids, or None */
    Vec split_rows, split_pos; /* the splits, by row as the walk met them */
    unsigned char next[32];    /* the bytes right after the splits (bit b % 8 of next[b / 8]) */
} PartWalk;
int part_walk(TableObject *table, TokensObject *tokens, const int32_t *r, const int32_t *p, Py_ssize_t n_suffixes,
              const int64_t *pick, Py_ssize_t n, Py_ssize_t n_words, int release, const uint8_t *next,
              PartWalk *out);
void part_walk_free(PartWalk *out);

/* _small.c: a small token tree level made in C (`PartMaker`, `SmallLevel`) */
int small_module_init(PyObject *m);

/* _pairs.c */
PyObject *agree_depth(PyObject *self, PyObject *args);
PyObject *agree_bytes(PyObject *self, PyObject *args);
PyObject *parting_rows(PyObject *self, PyObject *args);

#endif
