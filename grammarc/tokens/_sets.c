/* grammarc.tokens._scan, continued: token sets (made from a scan's rows, from ids or from a
 * packed mask, and OR-ed into a mask) and a token tree level's next bytes. The walks, which
 * build on these, and the module's table are in _scan.c; what both share is in _scan.h. */

#include "_scan.h"

/* pack_rows(flags, ids, words): OR bit ids[r] % 32 of word ids[r] / 32 into `words` (uint32,
 * writable) for every row r flagged in `flags` (a byte per row): a scan's inside rows as a
 * packed mask over token ids, in one pass over the rows (NumPy took five over the
 * vocabulary: gather, flags, pack, copy, count). */
PyObject *pack_rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer flags = {0}, ids = {0}, words = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*", &flags, &ids, &words)) return NULL;
    if (need(&ids, sizeof(int32_t), "ids") || need(&words, sizeof(uint32_t), "words")) goto done;
    Py_ssize_t n = flags.len;
    if (ids.len != n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "pack_rows: inconsistent array sizes");
        goto done;
    }
    const uint8_t *f = flags.buf;
    const int32_t *id = ids.buf;
    uint32_t *w = words.buf;
    const uint64_t limit = (uint64_t)(words.len / (Py_ssize_t)sizeof(uint32_t)) * 32;
    for (Py_ssize_t r = 0; r < n; r++) { /* no branch on the flag: sets mix long and short runs */
        if ((uint64_t)(uint32_t)id[r] >= limit) { /* `words` may be partly written */
            PyErr_SetString(PyExc_ValueError, "pack_rows: a token id is out of range");
            goto done;
        }
        w[id[r] >> 5] |= (uint32_t)(f[r] != 0) << (id[r] & 31);
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
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

/* The (bits, words, count) of a TokenSet whose packed mask is `dense` (n_words words): its
 * non-zero words and their numbers when they are at most an eighth of all (sparse), else
 * every word and None (dense). */
static PyObject *set_of_dense(const uint32_t *dense, Py_ssize_t n_words) {
    Py_ssize_t k = 0, count = 0;
    for (Py_ssize_t w = 0; w < n_words; w++)
        if (dense[w]) k++, count += __builtin_popcount(dense[w]);
    if (k * 8 > n_words) return Py_BuildValue("(y#On)", (const char *)dense, n_words * 4, Py_None, count);
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

/* acc[words[j]] |= bits[j] for each j (words: intp, as a sparse TokenSet keeps them), or
 * acc[j] |= bits[j] for every word when words is None (dense); 0, or -1 with an error set
 * (`who` names the caller). */
static int or_set(uint32_t *a, Py_ssize_t n_acc, PyObject *bits_obj, PyObject *words_obj, const char *who) {
    Py_buffer bits = {0}, words = {0};
    int failed = -1;
    if (PyObject_GetBuffer(bits_obj, &bits, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (need(&bits, sizeof(uint32_t), "bits")) goto done;
    const uint32_t *b = bits.buf;
    Py_ssize_t n = bits.len / 4;
    if (words_obj == Py_None) {
        if (n != n_acc) {
            PyErr_Format(PyExc_ValueError, "%s: a dense set is not as long as the mask", who);
            goto done;
        }
        for (Py_ssize_t j = 0; j < n; j++) a[j] |= b[j];
    } else {
        if (PyObject_GetBuffer(words_obj, &words, PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (words.len != n * (Py_ssize_t)sizeof(Py_ssize_t)) {
            PyErr_Format(PyExc_ValueError, "%s: inconsistent array sizes", who);
            goto done;
        }
        const Py_ssize_t *w = words.buf;
        for (Py_ssize_t j = 0; j < n; j++)
            if (w[j] < 0 || w[j] >= n_acc) {
                PyErr_Format(PyExc_ValueError, "%s: a word is out of range", who);
                goto done;
            }
        for (Py_ssize_t j = 0; j < n; j++) a[w[j]] |= b[j];
    }
    failed = 0;
done:
    PyBuffer_Release(&bits);
    if (words.obj) PyBuffer_Release(&words);
    return failed;
}

/* or_into(acc, bits, words): OR a TokenSet's words into `acc` (uint32, writable; see
 * `or_set`). The engine ORs a handful of sets per mask; NumPy's fancy-indexed OR cost a
 * microsecond each. */
PyObject *or_into(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer acc = {0};
    PyObject *bits_obj, *words_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "w*OO", &acc, &bits_obj, &words_obj)) return NULL;
    if (!need(&acc, sizeof(uint32_t), "acc") && !or_set(acc.buf, acc.len / 4, bits_obj, words_obj, "or_into")) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyBuffer_Release(&acc);
    return result;
}

/* union_sets(sets, n_words): the (bits, words, count) of the union of `sets` (a sequence of
 * TokenSets: objects with `bits` and `words`), as `pack_words` gives them. A token tree walk
 * merges its parts into one set per summary: one call, where an array, a call per set and
 * a pack from Python cost ~15 us a union. */
PyObject *union_sets(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *sets, *seq, *result = NULL;
    Py_ssize_t n_words;
    if (!PyArg_ParseTuple(args, "On", &sets, &n_words)) return NULL;
    if (n_words < 0) {
        PyErr_SetString(PyExc_ValueError, "union_sets: n_words is negative");
        return NULL;
    }
    if (!(seq = PySequence_Fast(sets, "union_sets: sets is not a sequence"))) return NULL;
    uint32_t *acc = PyMem_Calloc(n_words ? n_words : 1, sizeof(uint32_t));
    if (!acc) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *set = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *bits = PyObject_GetAttrString(set, "bits");
        PyObject *words = bits ? PyObject_GetAttrString(set, "words") : NULL;
        int failed = !words || or_set(acc, n_words, bits, words, "union_sets");
        Py_XDECREF(bits), Py_XDECREF(words);
        if (failed) goto done;
    }
    result = set_of_dense(acc, n_words);
done:
    PyMem_Free(acc);
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
