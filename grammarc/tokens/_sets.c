/* grammarc.tokens._scan, continued: token sets (made from a scan's rows, from ids or from a
 * packed mask, and OR-ed into a mask) and a token tree level's next bytes. The walks, which
 * build on these, and the module's table are in _scan.c; what both share is in _scan.h. */

#include "_scan.h"
#include <structmember.h>

/* Eight bytes (little-endian) as eight bits, byte k -> bit k set when byte k is not zero:
 * each byte becomes 0 or 0x80, then 0 or 1, whose product with the constant lands on its
 * own bit of the top byte (no two products share a bit, so nothing carries). */
static inline uint32_t pack8(uint64_t x) {
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
    x = (((x & low7) + low7) | x) & ~low7; /* 0x80 where the byte is not zero */
    return (uint32_t)(((x >> 7) * 0x0102040810204080ULL) >> 56);
}

/* pack_rows(flags, ids, words): OR bit ids[r] % 32 of word ids[r] / 32 into `words` (uint32,
 * writable) for every row r flagged in `flags` (a byte per row, any non-zero one flags): a
 * scan's inside rows as a packed mask over token ids (NumPy took five passes over the
 * vocabulary: gather, flags, pack, copy, count). The flags are scattered into a byte per
 * token id, then packed eight at a time: OR-ing bits into words row by row chained each
 * row's store to the last one's load of a shared word. */
PyObject *pack_rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer flags = {0}, ids = {0}, words = {0};
    PyObject *result = NULL;
    uint8_t *by_id = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*", &flags, &ids, &words)) return NULL;
    if (need(&ids, sizeof(int32_t), "ids") || need(&words, sizeof(uint32_t), "words")) goto done;
    Py_ssize_t n = flags.len, n_words = words.len / (Py_ssize_t)sizeof(uint32_t);
    if (ids.len != n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "pack_rows: inconsistent array sizes");
        goto done;
    }
    const uint8_t *f = flags.buf;
    const int32_t *id = ids.buf;
    uint32_t *w = words.buf;
    const uint64_t limit = (uint64_t)n_words * 32;
    if (!(by_id = PyMem_Calloc((size_t)limit + 1, 1))) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t r = 0; r < n; r++) {
        uint32_t i = (uint32_t)id[r]; /* a negative id wraps past the limit */
        if (i >= limit) { /* `words` is not written yet */
            PyErr_SetString(PyExc_ValueError, "pack_rows: a token id is out of range");
            goto done;
        }
        by_id[i] |= f[r]; /* a repeated id: either row flags it */
    }
    for (Py_ssize_t i = 0; i < n_words; i++) {
        const uint8_t *b = by_id + (size_t)i * 32;
        uint64_t q[4];
        memcpy(q, b, sizeof q);
        w[i] |= pack8(q[0]) | pack8(q[1]) << 8 | pack8(q[2]) << 16 | pack8(q[3]) << 24;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(by_id);
    PyBuffer_Release(&flags), PyBuffer_Release(&ids), PyBuffer_Release(&words);
    return result;
}

/* next_bytes(tokens, rows, pos): the byte at position pos[i] of row rows[i] for each i
 * (bytes), how many times each byte value comes (int64 [256], as bytes), and the byte
 * values that come (an int: bit b = byte b): a token tree level's suffixes by their next
 * byte, which picks the terminals that can take them, in one pass (NumPy took two gathers,
 * a scatter and a pack). */
PyObject *next_bytes(PyObject *self, PyObject *args) {
    (void)self;
    TokensObject *tokens;
    Py_buffer rows = {0}, pos = {0};
    PyObject *result = NULL, *out = NULL, *present = NULL;
    if (!PyArg_ParseTuple(args, "O!y*y*", &TokensType, &tokens, &rows, &pos)) return NULL;
    if (need(&rows, sizeof(int32_t), "rows") || need(&pos, sizeof(int32_t), "pos")) goto done;
    Py_ssize_t n = rows.len / (Py_ssize_t)sizeof(int32_t);
    if (pos.len != rows.len) {
        PyErr_SetString(PyExc_ValueError, "next_bytes: inconsistent array sizes");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n);
    if (!out) goto done;
    uint8_t *next = (uint8_t *)PyBytes_AS_STRING(out);
    int64_t counts[256] = {0};
    const uint8_t *d = tokens->data.buf;
    const int64_t *off = tokens->offsets.buf;
    const int32_t *len = tokens->lengths.buf, *r = rows.buf, *p = pos.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!row_ok(&tokens->lengths, &tokens->offsets, &tokens->data, r[i], p[i]) || p[i] == len[r[i]]) {
            PyErr_SetString(PyExc_ValueError, "next_bytes: a row or position is out of range"); /* the end has none */
            goto done;
        }
        counts[next[i] = d[off[r[i]] + p[i]]]++;
    }
    unsigned char bits[32] = {0};
    for (int b = 0; b < 256; b++)
        if (counts[b]) bits[b >> 3] |= (unsigned char)(1u << (b & 7));
    if (!(present = byte_set_int(bits))) goto done;
    result = Py_BuildValue("(Oy#O)", out, (const char *)counts, (Py_ssize_t)sizeof counts, present);
done:
    Py_XDECREF(out), Py_XDECREF(present);
    PyBuffer_Release(&rows), PyBuffer_Release(&pos);
    return result;
}

/* order_by_byte(next_byte, counts): the positions of `next_byte` (uint8) grouped by byte value,
 * ascending within a group (int32, as bytes): a stable counting sort, given how many times
 * each byte value comes (int64 [256], from `next_bytes`). A big token tree level picks each
 * terminal's suffixes by their next byte from it. */
PyObject *order_by_byte(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer next = {0}, counts = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*", &next, &counts)) return NULL;
    if (counts.len != 256 * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "order_by_byte: counts is not 256 int64");
        goto done;
    }
    const uint8_t *b = next.buf;
    const int64_t *c = counts.buf;
    Py_ssize_t n = next.len, at[256], total = 0;
    for (int v = 0; v < 256; v++) at[v] = total, total += c[v];
    int64_t seen[256] = {0};
    for (Py_ssize_t i = 0; i < n; i++) seen[b[i]]++;
    if (total != n || memcmp(seen, c, sizeof seen)) {
        PyErr_SetString(PyExc_ValueError, "order_by_byte: counts do not count next_byte");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) out[at[b[i]]++] = (int32_t)i;
done:
    PyBuffer_Release(&next), PyBuffer_Release(&counts);
    return result;
}

/* The tokens in 64 bits (two words). __builtin_popcount is a call into libgcc where the build
 * does not target the popcnt instruction (x86-64's default): several times these operations. */
static inline Py_ssize_t tokens_in(uint64_t v) {
    v = v - ((v >> 1) & 0x5555555555555555ull);
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    return (Py_ssize_t)((((v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full) * 0x0101010101010101ull) >> 56);
}

/* How many of `dense`'s n_words words are non-zero (*k) and how many tokens they hold. */
static void mask_facts(const uint32_t *dense, Py_ssize_t n_words, Py_ssize_t *k, Py_ssize_t *count) {
    Py_ssize_t nonzero = 0, tokens = 0, w = 0;
    for (; w + 1 < n_words; w += 2) {
        uint32_t a = dense[w], b = dense[w + 1];
        nonzero += (a != 0) + (b != 0);
        tokens += tokens_in((uint64_t)a | (uint64_t)b << 32);
    }
    if (w < n_words) nonzero += dense[w] != 0, tokens += tokens_in(dense[w]);
    *k = nonzero, *count = tokens;
}

/* The (bits, words, count) of a TokenSet whose packed mask is `dense` (n_words words): its
 * non-zero words and their numbers when they are at most an eighth of all (sparse), else
 * every word and None (dense). `owner`: NULL, or a bytes object holding `dense` (its
 * n_words words) that becomes the dense set's bits instead of a copy (a reference taken). */
static PyObject *set_of_words(const uint32_t *dense, Py_ssize_t n_words, PyObject *owner) {
    Py_ssize_t k, count;
    mask_facts(dense, n_words, &k, &count);
    if (k * 8 > n_words)
        return owner ? Py_BuildValue("(OOn)", owner, Py_None, count)
                     : Py_BuildValue("(y#On)", (const char *)dense, n_words * 4, Py_None, count);
    PyObject *bits = PyBytes_FromStringAndSize(NULL, k * 4);
    PyObject *words = PyBytes_FromStringAndSize(NULL, k * (Py_ssize_t)sizeof(Py_ssize_t));
    if (!bits || !words) {
        Py_XDECREF(bits), Py_XDECREF(words);
        return NULL;
    }
    uint32_t *b = (uint32_t *)PyBytes_AS_STRING(bits);
    Py_ssize_t *n = (Py_ssize_t *)PyBytes_AS_STRING(words);
    for (Py_ssize_t w = 0, j = 0; w < n_words; w++)
        if (dense[w]) n[j] = w, b[j++] = dense[w];
    return Py_BuildValue("(NNn)", bits, words, count);
}

PyObject *set_of_dense(const uint32_t *dense, Py_ssize_t n_words) {
    return set_of_words(dense, n_words, NULL);
}

/* pack_words(words): `set_of_dense` of a packed mask (uint32): what a union of sets ORed
 * together is made into, without NumPy's passes (non-zero words, their bits, a count). */
PyObject *pack_words(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer words = {0};
    if (!PyArg_ParseTuple(args, "y*", &words)) return NULL;
    Py_ssize_t n_words = words.len / (Py_ssize_t)sizeof(uint32_t);
    PyObject *result = need(&words, sizeof(uint32_t), "words") ? NULL : set_of_dense(words.buf, n_words);
    PyBuffer_Release(&words);
    return result;
}

/* Whether `set` fits a mask of `n_acc` words (a dense set: exactly as long; a sparse one: its
 * word numbers in range); 0, or -1 with an error set (`who` names the caller). */
static int set_fits(const SetObject *set, Py_ssize_t n_acc, const char *who) {
    Py_ssize_t n = PyBytes_GET_SIZE(set->bits) / 4;
    if (!set->words) {
        if (n == n_acc) return 0;
        PyErr_Format(PyExc_ValueError, "%s: a dense set is not as long as the mask", who);
        return -1;
    }
    if (PyBytes_GET_SIZE(set->words) != n * (Py_ssize_t)sizeof(Py_ssize_t)) {
        PyErr_Format(PyExc_ValueError, "%s: inconsistent array sizes", who);
        return -1;
    }
    const Py_ssize_t *w = (const Py_ssize_t *)PyBytes_AS_STRING(set->words);
    for (Py_ssize_t j = 0; j < n; j++)
        if (w[j] < 0 || w[j] >= n_acc) {
            PyErr_Format(PyExc_ValueError, "%s: a word is out of range", who);
            return -1;
        }
    return 0;
}

/* acc[words[j]] |= bits[j] for each j (words: intp, as a sparse set keeps them), or
 * acc[j] |= bits[j] for every word when words is NULL (dense), of a set known to fit the
 * mask (`set_fits`). */
static void or_fitted(uint32_t *a, const SetObject *set) {
    const uint32_t *b = (const uint32_t *)PyBytes_AS_STRING(set->bits);
    Py_ssize_t n = PyBytes_GET_SIZE(set->bits) / 4;
    if (!set->words) {
        for (Py_ssize_t j = 0; j < n; j++) a[j] |= b[j];
        return;
    }
    const Py_ssize_t *w = (const Py_ssize_t *)PyBytes_AS_STRING(set->words);
    for (Py_ssize_t j = 0; j < n; j++) a[w[j]] |= b[j];
}

/* `or_fitted` once the set is checked to fit a mask of n_acc words (nothing is written
 * otherwise); 0, or -1 with an error set (`who` names the caller). */
int or_set(uint32_t *a, Py_ssize_t n_acc, const SetObject *set, const char *who) {
    if (set_fits(set, n_acc, who)) return -1;
    or_fitted(a, set);
    return 0;
}

/* PackedSet(bits, words, count): the storage of a TokenSet (grammarc/tokens/token_set.py,
 * its subclass): `bits` the uint32 words of the set (every word: dense; or only its
 * non-zero ones), `words` None (dense) or the intp numbers of those words, both as bytes
 * (any buffer is copied into bytes), `count` its tokens. Immutable; it holds bytes only, so
 * it is in no cycle and needs no part in garbage collection: an instance of a Python
 * subclass (TokenSet, whose `__slots__` is empty) is untracked when made. Made and OR-ed
 * without NumPy: a new schema's walks make thousands. Sizes are checked where the set is
 * used (`or_into`, `union_sets`). */
static PyObject *as_bytes(PyObject *value, const char *what) {
    if (PyBytes_CheckExact(value)) return Py_NewRef(value);
    PyObject *out = PyBytes_FromObject(value);
    if (!out) PyErr_Format(PyExc_TypeError, "PackedSet: %s is not a buffer", what);
    else if (PyBytes_GET_SIZE(out) % 4) {
        PyErr_Format(PyExc_ValueError, "PackedSet: %s is not a whole number of words", what);
        Py_CLEAR(out);
    }
    return out;
}

static PyObject *set_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"bits", "words", "count", NULL};
    PyObject *bits, *words;
    Py_ssize_t count;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOn", names, &bits, &words, &count)) return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "PackedSet: count is negative");
        return NULL;
    }
    SetObject *self = (SetObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    /* TokenSet, a Python subclass, is a GC type, yet holds nothing but this (no __dict__, no
     * slots): nothing to track. A subclass that adds attributes stays tracked. */
    if (PyType_IS_GC(type) && type->tp_basicsize == (Py_ssize_t)sizeof(SetObject) && !type->tp_dictoffset)
        PyObject_GC_UnTrack(self);
    self->count = count;
    if (!(self->bits = as_bytes(bits, "bits")) || (words != Py_None && !(self->words = as_bytes(words, "words")))) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void set_dealloc(SetObject *self) {
    Py_XDECREF(self->bits);
    Py_XDECREF(self->words);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* or_into(acc): OR the set into `acc` (uint32, writable). The engine ORs a handful of sets
 * per mask; NumPy's fancy-indexed OR cost a microsecond each. */
static PyObject *set_or_into(SetObject *self, PyObject *arg) {
    Py_buffer acc = {0};
    if (PyObject_GetBuffer(arg, &acc, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    int failed = need(&acc, sizeof(uint32_t), "acc") || or_set(acc.buf, acc.len / 4, self, "or_into");
    PyBuffer_Release(&acc);
    return failed ? NULL : Py_NewRef(Py_None);
}

/* write_into(target, n_words): the set, as a packed mask of `n_words` words, into `target` (a
 * writable 1-D buffer of 4-byte items, any stride: a row of a batch, a strided view), the
 * rest of `target` zeroed (Engine.fill_bitmask, which checks the target's type first). A
 * memo keeps a mask as a set: most masks of a schema touch a few dozen words of a
 * 4,000-word vocabulary, so they are zeroed and scattered here instead of kept whole. */
static PyObject *set_write_into(SetObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n_words;
    if (nargs != 2 || (n_words = PyLong_AsSsize_t(args[1])) < 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "write_into(target, n_words): n_words a non-negative int");
        }
        return NULL;
    }
    Py_buffer dst = {0};
    if (PyObject_GetBuffer(args[0], &dst, PyBUF_STRIDES | PyBUF_WRITABLE) < 0) return NULL;
    PyObject *result = NULL;
    uint32_t *words = NULL;
    if (dst.ndim != 1 || dst.itemsize != 4) {
        PyErr_SetString(PyExc_ValueError, "write_into: the target must be 1-D with 4-byte items");
        goto done;
    }
    Py_ssize_t size = dst.shape[0], step = dst.strides[0];
    if (size < n_words) {
        PyErr_Format(PyExc_ValueError, "bitmask buffer has %zd words; %zd needed", size, n_words);
        goto done;
    }
    if (set_fits(self, n_words, "write_into")) goto done; /* the target untouched */
    if (step == 4 && !self->words) { /* dense: one copy, the rest zeroed */
        memcpy(dst.buf, PyBytes_AS_STRING(self->bits), (size_t)n_words * 4);
        memset((char *)dst.buf + n_words * 4, 0, (size_t)(size - n_words) * 4);
    } else if (step == 4) { /* sparse: zeroed, then its words */
        memset(dst.buf, 0, (size_t)size * 4);
        or_fitted(dst.buf, self);
    } else { /* strided: made whole first, then written word by word */
        if (!(words = PyMem_Calloc((size_t)(n_words ? n_words : 1), sizeof(uint32_t)))) {
            PyErr_NoMemory();
            goto done;
        }
        or_fitted(words, self);
        char *out = dst.buf;
        for (Py_ssize_t i = 0; i < size; i++) {
            uint32_t word = i < n_words ? words[i] : 0;
            memcpy(out + i * step, &word, 4);
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(words);
    PyBuffer_Release(&dst);
    return result;
}

static PyObject *set_words(SetObject *self, void *closure) {
    (void)closure;
    return Py_NewRef(self->words ? self->words : Py_None);
}

static PyMemberDef set_members[] = {
    {"packed_bits", T_OBJECT_EX, offsetof(SetObject, bits), READONLY, "the set's uint32 words, as bytes"},
    {"count", T_PYSSIZET, offsetof(SetObject, count), READONLY, "how many tokens the set holds"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef set_getset[] = {
    {"packed_words", (getter)set_words, NULL, "None (dense), or the numbers of the words kept (intp, as bytes)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef set_methods[] = {
    {"or_into", (PyCFunction)set_or_into, METH_O, "OR the set into a packed mask (uint32, writable)."},
    {"write_into", (PyCFunction)(void (*)(void))set_write_into, METH_FASTCALL,
     "write_into(target, n_words): the set as a mask of n_words words into a 1-D buffer of 4-byte items, the rest zeroed."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grammarc.tokens._scan.PackedSet",
    .tp_basicsize = sizeof(SetObject),
    .tp_dealloc = (destructor)set_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A token set's packed words (see TokenSet).",
    .tp_methods = set_methods,
    .tp_members = set_members,
    .tp_getset = set_getset,
    .tp_new = set_new,
};

/* The union of `n` sparse sets (their words checked in range): each word OR-ed into `acc`
 * (n_words words, not zeroed: a word is written on its first touch, which `touched`, a bit
 * per word, zeroed, records), then read back in ascending order off `touched`. What
 * `set_of_dense` gives for the same mask, without zeroing and scanning every word: a walk's
 * parts touch a few dozen words of a 4,000-word vocabulary. */
static PyObject *union_sparse(PyObject *const *sets, Py_ssize_t n, Py_ssize_t n_words) {
    uint32_t *acc = PyMem_Malloc((size_t)(n_words ? n_words : 1) * sizeof(uint32_t));
    Py_ssize_t n_marks = (n_words + 63) / 64;
    uint64_t *touched = PyMem_Calloc((size_t)(n_marks ? n_marks : 1), sizeof(uint64_t));
    PyObject *result = NULL, *bits = NULL, *words = NULL;
    if (!acc || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const SetObject *set = (const SetObject *)sets[i];
        const uint32_t *b = (const uint32_t *)PyBytes_AS_STRING(set->bits);
        const Py_ssize_t *w = (const Py_ssize_t *)PyBytes_AS_STRING(set->words);
        Py_ssize_t m = PyBytes_GET_SIZE(set->bits) / 4;
        for (Py_ssize_t j = 0; j < m; j++) {
            Py_ssize_t x = w[j];
            uint64_t bit = (uint64_t)1 << (x & 63);
            if (touched[x >> 6] & bit) acc[x] |= b[j];
            else touched[x >> 6] |= bit, acc[x] = b[j];
        }
    }
    Py_ssize_t k = 0, count = 0;
    for (Py_ssize_t i = 0; i < n_marks; i++)
        for (uint64_t m = touched[i]; m; m &= m - 1) {
            uint32_t v = acc[i * 64 + __builtin_ctzll(m)];
            if (v) k++, count += tokens_in(v);  /* a word at a time: few are touched */
        }
    if (k * 8 > n_words) { /* dense, as set_of_dense makes it */
        if (!(bits = PyBytes_FromStringAndSize(NULL, n_words * 4))) goto done;
        uint32_t *d = (uint32_t *)PyBytes_AS_STRING(bits);
        memset(d, 0, (size_t)n_words * 4);
        for (Py_ssize_t i = 0; i < n_marks; i++)
            for (uint64_t m = touched[i]; m; m &= m - 1) {
                Py_ssize_t x = i * 64 + __builtin_ctzll(m);
                d[x] = acc[x];
            }
        result = Py_BuildValue("(NOn)", bits, Py_None, count);
        bits = NULL;
        goto done;
    }
    bits = PyBytes_FromStringAndSize(NULL, k * 4);
    words = PyBytes_FromStringAndSize(NULL, k * (Py_ssize_t)sizeof(Py_ssize_t));
    if (!bits || !words) goto done;
    uint32_t *ob = (uint32_t *)PyBytes_AS_STRING(bits);
    Py_ssize_t *ow = (Py_ssize_t *)PyBytes_AS_STRING(words), j = 0;
    for (Py_ssize_t i = 0; i < n_marks; i++)
        for (uint64_t m = touched[i]; m; m &= m - 1) {
            Py_ssize_t x = i * 64 + __builtin_ctzll(m);
            if (acc[x]) ow[j] = x, ob[j++] = acc[x];
        }
    result = Py_BuildValue("(NNn)", bits, words, count);
    bits = words = NULL;
done:
    Py_XDECREF(bits), Py_XDECREF(words);
    PyMem_Free(acc), PyMem_Free(touched);
    return result;
}

/* union_sets(sets, n_words): the (bits, words, count) of the union of `sets` (a sequence of
 * PackedSets), as `pack_words` gives them. A token tree walk merges its parts into one set
 * per summary: one call, where an array, a call per set and a pack from Python cost ~15 us
 * a union. Sparse sets only (the common case: a walk's parts) are merged word by word
 * (`union_sparse`); with a dense one every word is OR-ed and scanned. */
PyObject *union_sets(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *sets, *seq, *result = NULL;
    Py_ssize_t n_words;
    uint32_t *acc = NULL;
    if (!PyArg_ParseTuple(args, "On", &sets, &n_words)) return NULL;
    if (n_words < 0) {
        PyErr_SetString(PyExc_ValueError, "union_sets: n_words is negative");
        return NULL;
    }
    if (!(seq = PySequence_Fast(sets, "union_sets: sets is not a sequence"))) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int all_sparse = 1;
    for (Py_ssize_t i = 0; i < n; i++) { /* every set checked before any is read */
        if (!PyObject_TypeCheck(items[i], &SetType)) {
            PyErr_SetString(PyExc_TypeError, "union_sets: a set is not a TokenSet");
            goto done;
        }
        const SetObject *set = (const SetObject *)items[i];
        if (!set->words) {
            all_sparse = 0;
            continue;
        }
        Py_ssize_t m = PyBytes_GET_SIZE(set->bits) / 4;
        const Py_ssize_t *w = (const Py_ssize_t *)PyBytes_AS_STRING(set->words);
        if (PyBytes_GET_SIZE(set->words) != m * (Py_ssize_t)sizeof(Py_ssize_t)) {
            PyErr_SetString(PyExc_ValueError, "union_sets: inconsistent array sizes");
            goto done;
        }
        for (Py_ssize_t j = 0; j < m; j++)
            if (w[j] < 0 || w[j] >= n_words) {
                PyErr_SetString(PyExc_ValueError, "union_sets: a word is out of range");
                goto done;
            }
    }
    if (all_sparse) {
        result = union_sparse(items, n, n_words);
        goto done;
    }
    /* OR-ed in the bytes that become a dense result's bits (a union with a dense set is
     * dense but for a set made dense with few words): no copy made */
    PyObject *bits = PyBytes_FromStringAndSize(NULL, n_words * 4);
    if (!bits) goto done;
    acc = (uint32_t *)PyBytes_AS_STRING(bits);
    memset(acc, 0, (size_t)n_words * 4);
    for (Py_ssize_t i = 0; i < n; i++)
        if (or_set(acc, n_words, (SetObject *)items[i], "union_sets")) {
            Py_DECREF(bits);
            goto done;
        }
    result = set_of_words(acc, n_words, bits);
    Py_DECREF(bits);
done:
    Py_DECREF(seq);
    return result;
}

static int compare_ids(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* pack_ids(ids, n_words): the TokenSet of token ids `ids` (int64, any order, repeats allowed)
 * over a vocabulary of n_words uint32 words, as (bits, words, count): bits uint32 and words
 * intp (as bytes) of the non-zero words when they are at most an eighth of the vocabulary's
 * (sparse: OR-ing a few tokens touches a few words), else (every word, None, count)
 * (dense). A few ids (under one per eight words: measured, sorting them is cheaper up to
 * there) are sorted; more are flagged in a dense mask. A token tree makes
 * thousands of small sets on a new schema, where NumPy's per-call costs were the time. */
/* The TokenSet of token ids `id` (n of them, any order, repeats allowed, each checked to be
 * below n_words * 32) as (bits, words, count): see `pack_ids`. NULL with an error set. */
PyObject *packed_ids(const int64_t *id, Py_ssize_t n, Py_ssize_t n_words) {
    PyObject *result = NULL;
    int64_t *sorted = NULL;
    uint32_t *dense = NULL, *bits = NULL;
    Py_ssize_t *words = NULL, k = 0, count = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (id[i] < 0 || id[i] >= (int64_t)n_words * 32) {
            PyErr_SetString(PyExc_ValueError, "pack_ids: a token id is out of range");
            return NULL;
        }
    if (n * 8 < n_words) { /* few: sort, then one (word, bits) per run of ids in one word */
        if (!(sorted = malloc((size_t)(n ? n : 1) * sizeof(int64_t))) || !(bits = malloc((size_t)(n ? n : 1) * 4)) ||
            !(words = malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t))))
            goto nomem;
        memcpy(sorted, id, (size_t)n * sizeof(int64_t));
        qsort(sorted, (size_t)n, sizeof(int64_t), compare_ids);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && sorted[i] == sorted[i - 1]) continue;
            count++;
            Py_ssize_t w = (Py_ssize_t)(sorted[i] >> 5);
            if (!k || words[k - 1] != w) words[k] = w, bits[k++] = 0;
            bits[k - 1] |= (uint32_t)1 << (sorted[i] & 31);
        }
        /* sparse: k <= n words, and n * 8 < n_words */
        result = Py_BuildValue("(y#y#n)", (const char *)bits, k * 4, (const char *)words,
                               k * (Py_ssize_t)sizeof(Py_ssize_t), count);
    } else { /* many: flag them in a dense mask, then keep its non-zero words if they are few */
        if (!(dense = calloc((size_t)(n_words ? n_words : 1), 4))) goto nomem;
        for (Py_ssize_t i = 0; i < n; i++) dense[id[i] >> 5] |= (uint32_t)1 << (id[i] & 31);
        result = set_of_dense(dense, n_words);
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(sorted), free(dense), free(bits), free(words);
    return result;
}

/* pack_ids(ids, n_words): the TokenSet of token ids `ids` (int64, any order, repeats allowed)
 * over a vocabulary of n_words uint32 words, as (bits, words, count): bits uint32 and words
 * intp (as bytes) of the non-zero words when they are at most an eighth of the vocabulary's
 * (sparse: OR-ing a few tokens touches a few words), else (every word, None, count)
 * (dense). A few ids (under one per eight words: measured, sorting them is cheaper up to
 * there) are sorted; more are flagged in a dense mask. A token tree makes
 * thousands of small sets on a new schema, where NumPy's per-call costs were the time. */
PyObject *pack_ids(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer ids = {0};
    Py_ssize_t n_words;
    if (!PyArg_ParseTuple(args, "y*n", &ids, &n_words)) return NULL;
    Py_ssize_t n = ids.len / (Py_ssize_t)sizeof(int64_t);
    PyObject *result = need(&ids, sizeof(int64_t), "ids") ? NULL : packed_ids(ids.buf, n, n_words);
    PyBuffer_Release(&ids);
    return result;
}

/* rows_by_byte(data, offsets, lengths): (rows int32, starts int64 [257]) with the rows that
 * hold byte b, each once and ascending, at rows[starts[b]:starts[b + 1]]: a counting sort
 * over the tokens' bytes, two passes (NumPy's sort of every byte took ~25 ms on Llama-3). */
PyObject *rows_by_byte(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data = {0}, offsets = {0}, lengths = {0};
    PyObject *result = NULL;
    int32_t *rows = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*", &data, &offsets, &lengths)) return NULL;
    Py_ssize_t n = rows_checked(&data, &offsets, &lengths, "rows_by_byte");
    if (n < 0) goto done;
    const uint8_t *bytes = data.buf;
    const int64_t *off = offsets.buf;
    const int32_t *len = lengths.buf;
    int64_t starts[257] = {0}, fill[256];
    Py_ssize_t last[256]; /* the last row counted under each byte */
    for (int b = 0; b < 256; b++) last[b] = -1;
    for (Py_ssize_t r = 0; r < n; r++)
        for (int32_t i = 0; i < len[r]; i++) {
            uint8_t b = bytes[off[r] + i];
            if (last[b] != r) last[b] = r, starts[b + 1]++;
        }
    for (int b = 0; b < 256; b++) starts[b + 1] += starts[b], fill[b] = starts[b], last[b] = -1;
    rows = malloc((size_t)(starts[256] ? starts[256] : 1) * sizeof(int32_t));
    if (!rows) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < n; r++)
        for (int32_t i = 0; i < len[r]; i++) {
            uint8_t b = bytes[off[r] + i];
            if (last[b] != r) last[b] = r, rows[fill[b]++] = (int32_t)r;
        }
    result = Py_BuildValue("(y#y#)", (const char *)rows, (Py_ssize_t)(starts[256] * (int64_t)sizeof(int32_t)),
                           (const char *)starts, (Py_ssize_t)sizeof starts);
done:
    free(rows);
    PyBuffer_Release(&data), PyBuffer_Release(&offsets), PyBuffer_Release(&lengths);
    return result;
}

/* bucket_prefixes(order, starts, longer, d, live, most): the rows of the first bytes `live`
 * flags (256 bytes, nonzero: flagged) longer than `d` bytes, as int32 bytes, or None when
 * they are more than `most`. `order` (int32) holds the rows by first byte, longest first
 * within each: byte b's rows longer than d are order[starts[b] .. starts[b] +
 * longer[b * width + d]) (starts int64 [257], longer int32 [256 * width], d < width): a
 * copy per flagged byte (the NumPy of it, a dozen calls, cost more than the walk it saved). */
PyObject *bucket_prefixes(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer order = {0}, starts = {0}, longer = {0}, live = {0};
    Py_ssize_t d, most;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*n", &order, &starts, &longer, &d, &live, &most)) return NULL;
    if (need(&order, sizeof(int32_t), "order") || need(&starts, sizeof(int64_t), "starts") ||
        need(&longer, sizeof(int32_t), "longer"))
        goto done;
    const Py_ssize_t n = order.len / (Py_ssize_t)sizeof(int32_t);
    const Py_ssize_t width = longer.len / (256 * (Py_ssize_t)sizeof(int32_t));
    const int64_t *start = starts.buf;
    const int32_t *count = longer.buf, *rows = order.buf;
    const uint8_t *flag = live.buf;
    if (starts.len != 257 * (Py_ssize_t)sizeof(int64_t) || longer.len != 256 * width * (Py_ssize_t)sizeof(int32_t) ||
        live.len != 256 || d < 0 || d >= width || start[256] != n) {
        PyErr_SetString(PyExc_ValueError, "bucket_prefixes: inconsistent array sizes");
        goto done;
    }
    Py_ssize_t total = 0;
    for (int b = 0; b < 256; b++) {
        if (!flag[b]) continue;
        int32_t k = count[b * width + d];
        if (k < 0 || start[b] < 0 || start[b] + k > start[b + 1]) {
            PyErr_SetString(PyExc_ValueError, "bucket_prefixes: a count is out of its bucket");
            goto done;
        }
        total += k;
    }
    if (total > most) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(int32_t));
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    for (int b = 0; b < 256; b++)
        if (flag[b]) {
            int32_t k = count[b * width + d];
            memcpy(out, rows + start[b], (size_t)k * sizeof(int32_t));
            out += k;
        }
done:
    PyBuffer_Release(&order), PyBuffer_Release(&starts), PyBuffer_Release(&longer), PyBuffer_Release(&live);
    return result;
}
