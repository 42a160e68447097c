/* grammarc.tokens._scan, continued: what every walk reads, held and checked once when made:
 * a vocabulary's token rows (`Tokens`) and a DFA's transitions (`Table`, with each state's
 * loop test made on its first walk). The walks took a dozen arrays per call and checked
 * them each time; a new schema makes thousands of small walks (a token tree part of a few
 * suffixes), where that parsing and checking cost more than the walk itself. */

#include "_scan.h"
#include "../automata/_bounds.h"

/* The buffer of `obj` (C-contiguous) into `view`, checked to hold whole `itemsize`-byte
 * items, `count` of them unless `count` is -1 (any) or the buffer is empty and `empty_ok`;
 * 0, or -1 with a ValueError naming `who` and `what`. */
static int take(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, int empty_ok,
                const char *who, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % itemsize || (count >= 0 && view->len != count * itemsize && !(empty_ok && !view->len))) {
        if (count >= 0) PyErr_Format(PyExc_ValueError, "%s: %s is not one %zd-byte item per row", who, what, itemsize);
        else PyErr_Format(PyExc_ValueError, "%s: %s is not an array of %zd-byte items", who, what, itemsize);
        return -1;
    }
    return 0;
}

/* -- Tokens ---------------------------------------------------------------------------- */

static void tokens_dealloc(TokensObject *self) {
    Py_buffer *views[] = {&self->data, &self->offsets, &self->lengths, &self->sets, &self->kinds,
                          &self->shared, &self->skip, &self->ids, &self->starts};
    for (size_t i = 0; i < sizeof views / sizeof *views; i++)
        if (views[i]->obj) PyBuffer_Release(views[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Tokens(data, offsets, lengths, sets, kinds, shared, skip, ids, starts): the rows as the
 * module's comment lays them out. Every row is checked to lie within the data here, so the
 * walks check only the rows and positions they are given. Each of sets, kinds, shared,
 * skip, ids and starts may be empty (not given); skip only beside shared; starts int64
 * [257], ascending within the rows. */
/* Whether the n rows are in ascending byte order (shorter first where one is the other's
 * prefix), as `TokenBytes` sorts them: what `parting_rows` needs to find a prefix's rows by
 * bisection (~1 ms for Llama-3, once per vocabulary, not on a first mask). */
static int rows_ascending(const Py_buffer *data, const Py_buffer *offsets, const Py_buffer *lengths, Py_ssize_t n) {
    const uint8_t *bytes = data->buf;
    const int64_t *off = offsets->buf;
    const int32_t *len = lengths->buf;
    for (Py_ssize_t r = 1; r < n; r++) {
        int32_t a = len[r - 1], b = len[r];
        int c = memcmp(bytes + off[r - 1], bytes + off[r], (size_t)(a < b ? a : b));
        if (c > 0 || (c == 0 && a > b)) return 0;
    }
    return 1;
}

static PyObject *tokens_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static const char *who = "Tokens";
    PyObject *data, *offsets, *lengths, *sets, *kinds, *shared, *skip, *ids, *starts;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Tokens takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &data, &offsets, &lengths, &sets, &kinds, &shared, &skip, &ids, &starts))
        return NULL;
    TokensObject *self = (TokensObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (take(data, &self->data, 1, -1, 0, who, "data") || take(offsets, &self->offsets, 8, -1, 0, who, "offsets") ||
        take(lengths, &self->lengths, 4, -1, 0, who, "lengths"))
        goto fail;
    Py_ssize_t n = rows_checked(&self->data, &self->offsets, &self->lengths, who);
    if (n < 0 || take(sets, &self->sets, 32, n, 1, who, "sets") || take(kinds, &self->kinds, 2, n, 1, who, "kinds") ||
        take(shared, &self->shared, 1, n, 1, who, "shared") || take(skip, &self->skip, 4, n, 1, who, "skip") ||
        take(ids, &self->ids, 4, n, 1, who, "ids") || take(starts, &self->starts, 8, -1, 0, who, "starts"))
        goto fail;
    if (self->skip.len && !self->shared.len) {
        PyErr_SetString(PyExc_ValueError, "Tokens: skip is given without shared");
        goto fail;
    }
    const int64_t *st = self->starts.buf;
    int ordered = !self->starts.len || (self->starts.len == 257 * 8 && st[0] >= 0 && st[256] <= n);
    for (int v = 0; ordered && self->starts.len && v < 256; v++) ordered = st[v] <= st[v + 1];
    if (!ordered) {
        PyErr_SetString(PyExc_ValueError, "Tokens: starts is not 257 ascending rows");
        goto fail;
    }
    self->n_rows = n;
    self->sorted = rows_ascending(&self->data, &self->offsets, &self->lengths, n);
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyObject *tokens_rows(TokensObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->n_rows);
}

static PyGetSetDef tokens_getset[] = {
    {"rows", (getter)tokens_rows, NULL, "The number of rows.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TokensType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammarc.tokens._scan.Tokens",
    .tp_basicsize = sizeof(TokensObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A vocabulary's token rows as the walks read them, checked once.",
    .tp_new = tokens_new,
    .tp_dealloc = (destructor)tokens_dealloc,
    .tp_getset = tokens_getset,
};

/* -- Table ----------------------------------------------------------------------------- */

static void table_dealloc(TableObject *self) {
    Py_buffer *views[] = {&self->trans, &self->base, &self->check, &self->next, &self->accept};
    for (size_t i = 0; i < sizeof views / sizeof *views; i++)
        if (views[i]->obj) PyBuffer_Release(views[i]);
    free(self->loops), free(self->cuts), free(self->cuts_made);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Table(trans, base, check, next, accept): trans int32 [n * 256], the dense table, or None
 * with the comb table (base int64 [n], check and next int32, one length: the target of
 * byte b from s is next[base[s] + b] when check[base[s] + b] == s); accept uint8 [n]. */
static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static const char *who = "Table";
    PyObject *trans, *base, *check, *next, *accept;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Table takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOO", &trans, &base, &check, &next, &accept)) return NULL;
    TableObject *self = (TableObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Table *t = &self->t;
    if (trans != Py_None) {
        if (take(trans, &self->trans, 256 * 4, -1, 0, who, "trans")) goto fail;
        t->trans = self->trans.buf;
        t->n_states = self->trans.len / (256 * 4);
    } else {
        if (take(base, &self->base, 8, -1, 0, who, "base") || take(check, &self->check, 4, -1, 0, who, "check") ||
            take(next, &self->next, 4, -1, 0, who, "next"))
            goto fail;
        if (self->check.len != self->next.len) {
            PyErr_SetString(PyExc_ValueError, "Table: check and next differ in length");
            goto fail;
        }
        t->base = self->base.buf, t->check = self->check.buf, t->next = self->next.buf;
        t->n_states = self->base.len / 8;
        t->comb_size = self->check.len / 4;
    }
    if (take(accept, &self->accept, 1, -1, 0, who, "accept")) goto fail;
    if (self->accept.len != t->n_states) {
        PyErr_SetString(PyExc_ValueError, "Table: accept is not a byte per state");
        goto fail;
    }
    if (!table_in_bounds(t->trans, t->base, t->next, t->n_states, t->comb_size)) {
        PyErr_SetString(PyExc_ValueError, "Table: a target or a comb row lies outside the table");
        goto fail;
    }
    if (!(self->loops = calloc(t->n_states ? (size_t)t->n_states : 1, sizeof(LoopTest)))) {
        PyErr_NoMemory();
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* The loop test of state q (made on its first walk, under the GIL): the bytes that take q
 * elsewhere, by byte and by group. A row made only of bytes on which q loops to itself
 * never leaves q, which a row's byte set (`Tokens` sets) or its groups (kinds) decide
 * without a step (`loops_only` in _scan.c): a state inside a JSON string loops on every
 * byte of most tokens. */
const LoopTest *table_loop(TableObject *self, int32_t q) {
    LoopTest *x = &self->loops[q];
    if (x->made) return x;
    int in_leaves[16] = {0}, in_group[16] = {0};
    memset(x->leaves, 0, sizeof x->leaves);
    for (int b = 0; b < 256; b++) {
        in_group[byte_group[b]]++;
        if (step(&self->t, q, (uint8_t)b) != q) {
            x->leaves[b >> 6] |= (uint64_t)1 << (b & 63);
            in_leaves[byte_group[b]]++;
        }
    }
    x->exact = x->partial = 0;
    for (int g = 0; g < 16; g++)
        if (in_leaves[g]) *(in_leaves[g] == in_group[g] ? &x->exact : &x->partial) |= (uint16_t)(1u << g);
    x->loops_nowhere = x->leaves[0] == UINT64_MAX && x->leaves[1] == UINT64_MAX && x->leaves[2] == UINT64_MAX &&
                       x->leaves[3] == UINT64_MAX;
    x->made = 1;
    return x;
}

/* The cuts of state q (made on its first pair walk, under the GIL; NULL when out of
 * memory): bit b set where byte b's target differs from byte b - 1's (bit 0 always), so each
 * run between two cuts is a run of bytes q treats alike. Two states treat alike each run
 * between the cuts of either, a few dozen for a string body where a DFA's byte runs
 * (`DFA.byte_runs`: the runs every state treats alike) number as many as its key trie
 * has letters. */
const uint64_t *table_cuts(TableObject *self, int32_t q) {
    if (!self->cuts) {
        size_t n = self->t.n_states ? (size_t)self->t.n_states : 1;
        self->cuts = malloc(n * sizeof *self->cuts);
        self->cuts_made = calloc(n, 1);
        if (!self->cuts || !self->cuts_made) {
            free(self->cuts), free(self->cuts_made);
            self->cuts = NULL, self->cuts_made = NULL;
            return NULL;
        }
    }
    uint64_t *cuts = self->cuts[q];
    if (!self->cuts_made[q]) {
        memset(cuts, 0, sizeof *self->cuts);
        cuts[0] = 1;
        int32_t before = step(&self->t, q, 0);
        for (int b = 1; b < 256; b++) {
            int32_t target = step(&self->t, q, (uint8_t)b);
            if (target != before) cuts[b >> 6] |= (uint64_t)1 << (b & 63);
            before = target;
        }
        self->cuts_made[q] = 1;
    }
    return cuts;
}

static PyObject *table_states(TableObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->t.n_states);
}

static PyGetSetDef table_getset[] = {
    {"n_states", (getter)table_states, NULL, "The number of states.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammarc.tokens._scan.Table",
    .tp_basicsize = sizeof(TableObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A DFA's transitions as the walks read them, checked once.",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_getset = table_getset,
};
