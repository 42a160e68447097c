/* Walking vocabulary tokens through a terminal's DFA: the inner loop of the token index,
 * and beside it the index's other per-mask loops (each's contract is at its definition):
 * scan_part (a token tree's part: walk some suffixes, pack the ids of those that end inside),
 * row_kinds (each row's byte groups), reaches_more (whether a state's language is too big to
 * key its scans by); in _pairs.c, agree_depth, agree_bytes and parting_rows (how far, on
 * which bytes, or on which rows two states' scans may differ, so one's scan can stand for
 * the other's);
 * and, in _sets.c, pack_rows
 * (a scan's inside rows as a mask over token ids), next_bytes and order_by_byte (a token
 * tree level's suffixes by their next byte), the PackedSet type (a TokenSet's storage, OR-ed
 * into a mask), pack_ids, pack_words and union_sets (a TokenSet made from ids, a packed mask
 * or other sets), rows_by_byte (the rows holding each byte), bucket_prefixes (the rows of
 * some first bytes longer than a depth).
 *
 * grammarc.tokens.index builds, for a lexer item (terminal t in DFA state q), the tokens
 * that stay inside t and the places where t can end strictly inside a token. Token trees
 * call this walk once per (tree node, next terminal): tens of thousands of small walks on a
 * schema the engine has never seen, where NumPy's per-call overhead, not the bytes, was the
 * cost. Each row is walked to its end before the next (its bytes stay in cache), so the
 * outputs come in input order: a row's split points by position, then its end. The
 * tokens are packed end to end (Llama-3: 0.8 MB, not a 16 MB zero-padded matrix).
 *
 * scan(table, tokens, rows, pos, q[, split_at_start])
 *   table  a `Table` (_tables.c): the DFA's transitions, dense or comb, and accepting states
 *   tokens a `Tokens` (_tables.c): data uint8, every token's bytes end to end; offsets int64
 *          and lengths int32 [rows_total]: row r is data[offsets[r] : offsets[r] + lengths[r]];
 *          sets uint64 [rows_total * 4]: bit b of row r's words = the token contains byte b
 *          (or empty: none given; see `table_loop`); kinds uint16 [rows_total] (`row_kinds`,
 *          or empty): the groups of bytes each row holds, read before its set (`loops_only`)
 *   rows int32, pos int32: the token rows to walk and the byte each starts at; q the state.
 *   split_at_start (default 0): also report the start itself as a split when q accepts and
 *   the row goes on (a walk entered mid-token, as if its first bytes had led to q).
 * returns (end_rows, end_states, split_rows, split_pos) as bytes of native int32:
 *   rows whose every byte is taken, with the state they end in; and each (row, position)
 *   strictly after the start (at it, with split_at_start) and strictly before the token's
 *   end where the DFA accepts.
 *
 * scan_ranges(table, tokens, lo, hi, start, q, split_at_start, inside)
 *   the same walk over every row of the ranges [lo[i], hi[i]) (int64), each from byte
 *   `start`: a scan from a DFA state walks the rows of the first bytes it takes, a few
 *   runs of the sorted vocabulary, without a 100k-row index array made for it. With
 *   `inside` (a writable byte per row, or None) the rows that stay inside are flagged there
 *   and end_rows and end_states come back empty.
 *   The tokens' shared uint8 [rows_total] (or empty: nothing shared): at most as many leading bytes as
 *   row r has in common with row r - 1. A row resumes from the states of the row before it
 *   where the two part (`walk_shared`), and a row that has the byte which ended the row
 *   before, at the same depth, ends there too without a step: sorted tokens share most of
 *   their prefixes (Llama-3 scans step ~14x fewer bytes so). skip int32 [rows_total] (or
 *   empty), `next_smaller` of `shared`: such rows are stepped over all at once.
 */
#include "_scan.h"

/* What a walk needs besides its rows: the table, the tokens, the state and its loop test. */
typedef struct {
    Table t;
    const uint8_t *accept, *data;
    Py_ssize_t data_len;
    const int64_t *offsets;
    const int32_t *lengths;
    const uint64_t *sets;  /* NULL: every row is stepped */
    const uint16_t *kinds; /* NULL: the sets alone decide (see `loops_only`) */
    const LoopTest *loop;  /* q's (`table_loop`) */
    int32_t q;
    int split_at_start;
    int split_start; /* a range walk's: split_at_start, and q accepts, and the start is past byte 0 */
    uint8_t *inside;  /* NULL: end rows and states are pushed; else end rows are flagged here */
    Vec out[4];       /* end_rows, end_states, split_rows, split_pos */
    Py_ssize_t limit, walked; /* walk_ranges: at most `limit` rows walked (0: no limit; rows stepped over: free) */
} Walk;

/* The byte groups of a row's kinds (`row_kinds`): bit g of a row's kinds = the token holds
 * a byte of group g. Groups follow the bytes JSON and most grammars treat alike, so that the
 * bytes a state leaves on are mostly whole groups (see `loops_only`). */
uint8_t byte_group[256];

static void fill_byte_groups(void) {
    for (int b = 0; b < 256; b++) {
        uint8_t g;
        if (b == '\t') g = 1;
        else if (b == '\n') g = 2;
        else if (b == '\r') g = 3;
        else if (b < 0x20) g = 0;
        else if (b == ' ') g = 4;
        else if (b == '"') g = 5;
        else if (b == '\\') g = 6;
        else if (b >= '0' && b <= '9') g = 7;
        else if (b == 0x7f) g = 8;
        else if (b >= 0x80 && b < 0xc0) g = 9;
        else if (b >= 0xc0 && b < 0xe0) g = 10;
        else if (b >= 0xe0 && b < 0xf0) g = 11;
        else if (b >= 0xf0) g = 12;
        else if (strchr("+-.eE", b)) g = 13;
        else if (strchr("{}[],:", b)) g = 14;
        else g = 15;
        byte_group[b] = g;
    }
}

/* Whether row `row` holds no byte that takes q elsewhere (so it is not stepped). Its kinds
 * (two bytes: the groups its bytes fall in) answer when q's leaving bytes make up whole
 * groups, as a string body's do (quote, backslash, controls, non-ASCII): a big scan then
 * reads 2 bytes a row instead of its 32-byte set. Only where a group is partly leaving
 * is the set read. */
static inline int loops_only(const Walk *w, int32_t row) {
    if (w->kinds) {
        uint16_t k = w->kinds[row];
        if (k & w->loop->exact) return 0;
        if (!(k & w->loop->partial)) return 1;
    }
    const uint64_t *x = w->sets + 4 * (Py_ssize_t)row;
    const uint64_t *leaves = w->loop->leaves;
    return !((x[0] & leaves[0]) | (x[1] & leaves[1]) | (x[2] & leaves[2]) | (x[3] & leaves[3]));
}

static inline int ended(Walk *w, int32_t row, int32_t s) {
    if (w->inside) {
        w->inside[row] = 1;
        return 0;
    }
    return vec_push(&w->out[0], row) || vec_push(&w->out[1], s);
}

/* One row walked from byte `p` to its end (its bytes stay in cache); 0, or -1 when out of
 * memory. */
static inline int walk_row(Walk *w, int32_t row, int32_t p) {
    const int32_t length = w->lengths[row];
    const uint8_t *bytes = w->data + w->offsets[row];
    const uint8_t *accept = w->accept;
    Vec *split_rows = &w->out[2], *split_pos = &w->out[3];
    int32_t s = w->q;
    if (w->split_at_start && accept[s] && p > 0 && p < length && (vec_push(split_rows, row) || vec_push(split_pos, p)))
        return -1;
    if (w->sets && loops_only(w, row)) {
        if (accept[s])
            for (int32_t k = p + 1; k < length; k++)
                if (vec_push(split_rows, row) || vec_push(split_pos, k)) return -1;
        return ended(w, row, s);
    }
    if (p < length) {
        s = step(&w->t, s, bytes[p++]);
        while (s >= 0 && p < length) {
            if (accept[s] && (vec_push(split_rows, row) || vec_push(split_pos, p))) return -1;
            s = step(&w->t, s, bytes[p++]);
        }
    }
    return s >= 0 ? ended(w, row, s) : 0;
}

/* The states along the last row a range walk took (`walk_shared`): state[d] after d bytes
 * past the start (state[0] = q) for d <= valid, the depths d >= 1 whose state accepts
 * (ascending), and dead >= 0 when that row's byte after depth `dead` (= valid) left the DFA. */
typedef struct {
    int32_t *state, *accepting;
    int32_t valid, n_accepting, dead, depth; /* depth: the deepest d the arrays hold */
} Path;

enum { OUT_OF_MEMORY = -1, OUT_OF_RANGE = -2, OVER_LIMIT = -3 };

/* Room for `depth` bytes past the start (the arrays keep what they hold); 0 or OUT_OF_MEMORY. */
static int path_room(Path *h, int32_t depth) {
    if (depth <= h->depth) return 0;
    int32_t *state = realloc(h->state, ((size_t)depth + 1) * sizeof(int32_t));
    if (state) h->state = state;
    int32_t *accepting = realloc(h->accepting, ((size_t)depth + 1) * sizeof(int32_t));
    if (accepting) h->accepting = accepting;
    if (!state || !accepting) return OUT_OF_MEMORY;
    h->depth = depth;
    return 0;
}

static void path_reset(Path *h) {
    h->valid = 0, h->n_accepting = 0, h->dead = -1;
}

/* `walk_row` for the row after the one `h` holds, whose first `common` bytes it shares
 * (a lower bound is enough): the same outputs, stepping only the bytes past what the two
 * rows share. Checks the row before it reads its bytes (`row_ok`, for a row already known
 * to be one of the rows): OUT_OF_RANGE when `start` is past its end or its bytes past the
 * data. A row that ends where the row before ended reads none of its bytes. */
static inline __attribute__((always_inline)) int walk_shared(Walk *w, Path *h, int32_t row, int32_t start,
                                                            int32_t common) {
    const int32_t length = w->lengths[row];
    Vec *split_rows = &w->out[2], *split_pos = &w->out[3];
    if (w->split_start && start < length && (vec_push(split_rows, row) || vec_push(split_pos, start))) return -1;
    int32_t same = common > start ? common - start : 0;
    if (h->dead >= 0 && same > h->dead) { /* it has the byte that ended the last row, there: none read */
        for (int32_t i = 0; i < h->n_accepting; i++)
            if (vec_push(split_rows, row) || vec_push(split_pos, start + h->accepting[i])) return -1;
        return 0;
    }
    const int64_t offset = w->offsets[row];
    /* one unsigned test: a negative offset or length wraps past the data */
    if (length < start || (uint64_t)offset + (uint64_t)(uint32_t)length > (uint64_t)w->data_len) return OUT_OF_RANGE;
    if (length - start > h->depth && path_room(h, length - start)) return OUT_OF_MEMORY;
    const uint8_t *bytes = w->data + offset;
    const uint8_t *accept = w->accept;
    if (w->sets && loops_only(w, row)) {
        path_reset(h); /* not stepped: nothing to resume from */
        if (accept[w->q])
            for (int32_t k = start + 1; k < length; k++)
                if (vec_push(split_rows, row) || vec_push(split_pos, k)) return -1;
        return ended(w, row, w->q);
    }
    int32_t d = same < h->valid ? same : h->valid;
    while (h->n_accepting && h->accepting[h->n_accepting - 1] > d) h->n_accepting--;
    for (int32_t i = 0; i < h->n_accepting; i++)
        if (start + h->accepting[i] < length &&
            (vec_push(split_rows, row) || vec_push(split_pos, start + h->accepting[i])))
            return -1;
    h->dead = -1;
    int32_t s = h->state[d];
    while (start + d < length) {
        int32_t next = step(&w->t, s, bytes[start + d]);
        if (next < 0) {
            h->valid = h->dead = d;
            return 0;
        }
        s = h->state[++d] = next;
        if (accept[s]) {
            h->accepting[h->n_accepting++] = d;
            if (start + d < length && (vec_push(split_rows, row) || vec_push(split_pos, start + d))) return -1;
        }
    }
    h->valid = d;
    return ended(w, row, s);
}

/* Fill `w` from `table` and `tokens` for a walk from state `q` (its loop test made on the
 * first walk from it); -1 with a ValueError naming `who` when q is not a state. */
static int setup(Walk *w, TableObject *table, TokensObject *tokens, Py_ssize_t q, const char *who) {
    if (q < 0 || q >= table->t.n_states) {
        PyErr_Format(PyExc_ValueError, "%s: the state is out of range", who);
        return -1;
    }
    w->t = table->t;
    w->accept = table->accept.buf, w->data = tokens->data.buf, w->data_len = tokens->data.len;
    w->offsets = tokens->offsets.buf, w->lengths = tokens->lengths.buf;
    w->kinds = tokens->kinds.len ? tokens->kinds.buf : NULL;
    w->q = (int32_t)q;
    w->loop = table_loop(table, w->q);
    w->sets = tokens->sets.len && !w->loop->loops_nowhere ? tokens->sets.buf : NULL;
    return 0;
}

static PyObject *finish(Walk *w, int failed, const char *who) {
    PyObject *result = NULL;
    if (failed == OUT_OF_RANGE)
        PyErr_Format(PyExc_ValueError, "%s: a row or position is out of range", who);
    else if (failed)
        PyErr_NoMemory();
    else
        result = Py_BuildValue("(NNNN)", vec_bytes(&w->out[0]), vec_bytes(&w->out[1]), vec_bytes(&w->out[2]),
                               vec_bytes(&w->out[3]));
    for (int i = 0; i < 4; i++) free(w->out[i].data);
    return result;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    TokensObject *tokens;
    PyObject *result = NULL;
    Py_buffer rows = {0}, pos = {0};
    Py_ssize_t q;
    Walk w = {0};
    if (!PyArg_ParseTuple(args, "O!O!y*y*n|p", &TableType, &table, &TokensType, &tokens, &rows, &pos, &q,
                          &w.split_at_start))
        return NULL;
    if (setup(&w, table, tokens, q, "scan") || need(&rows, sizeof(int32_t), "rows") ||
        need(&pos, sizeof(int32_t), "pos"))
        goto done;
    if (pos.len != rows.len) {
        PyErr_SetString(PyExc_ValueError, "scan: inconsistent array sizes");
        goto done;
    }
    Py_ssize_t n = rows.len / (Py_ssize_t)sizeof(int32_t);
    const int32_t *r = rows.buf, *p = pos.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!row_ok(&tokens->lengths, &tokens->offsets, &tokens->data, r[i], p[i])) {
            PyErr_SetString(PyExc_ValueError, "scan: a row or position is out of range");
            goto done;
        }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !failed; i++) failed = walk_row(&w, r[i], p[i]);
    Py_END_ALLOW_THREADS
    result = finish(&w, failed, "scan");
done:
    PyBuffer_Release(&rows), PyBuffer_Release(&pos);
    return result;
}

/* read_off(table, tokens, q, walked, inside, split_rows, split_pos, inside_set, n_words):
 * the scan from state q read off another state's scan (`TokenIndex._scan_near`), given that
 * every row but those of `walked` (int32, distinct rows, any order) scans from q as it does
 * in that scan: `inside` (a byte per row), `split_rows` and `split_pos` (int32, by row, each
 * row's positions ascending) and `inside_set` (its inside rows' token ids, a PackedSet of
 * `n_words` words). Only the walked rows are walked (from their first byte, as `scan` walks
 * them). Returns None when they too scan as in the other scan (which then stands for q's),
 * else (inside, split_rows, split_pos, the `pack_words` TokenSet of the new inside rows'
 * ids): one pass where NumPy took a dozen over the vocabulary (copy, two scatters, a mask, a
 * gather, a concatenation, a stable sort, three comparisons, an edited set). */
static PyObject *read_off(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    TokensObject *tokens;
    SetObject *base_set;
    Py_buffer walked = {0}, base_inside = {0}, base_rows = {0}, base_pos = {0};
    Py_ssize_t q, n_words;
    PyObject *result = NULL, *inside = NULL;
    int32_t *order = NULL;
    uint32_t *words = NULL;
    uint64_t *walked_bits = NULL;
    Walk w = {0};
    Vec rows = {0}, pos = {0};
    if (!PyArg_ParseTuple(args, "O!O!ny*y*y*y*O!n", &TableType, &table, &TokensType, &tokens, &q, &walked,
                          &base_inside, &base_rows, &base_pos, &SetType, &base_set, &n_words))
        return NULL;
    if (setup(&w, table, tokens, q, "read_off") || need(&walked, sizeof(int32_t), "walked") ||
        need(&base_rows, sizeof(int32_t), "split_rows") || need(&base_pos, sizeof(int32_t), "split_pos"))
        goto done;
    const Py_ssize_t n_rows = tokens->n_rows, k = walked.len / (Py_ssize_t)sizeof(int32_t);
    const Py_ssize_t n_splits = base_rows.len / (Py_ssize_t)sizeof(int32_t);
    const int32_t *walk = walked.buf, *b_rows = base_rows.buf, *b_pos = base_pos.buf, *id = tokens->ids.buf;
    const uint8_t *b_inside = base_inside.buf;
    if (base_inside.len != n_rows || base_pos.len != base_rows.len || tokens->ids.len != n_rows * 4 || n_words < 0) {
        PyErr_SetString(PyExc_ValueError, "read_off: inconsistent array sizes");
        goto done;
    }
    Py_ssize_t n_bits = (n_rows + 63) / 64;
    if (!(order = malloc((k ? k : 1) * sizeof(int32_t))) || !(words = calloc(n_words ? n_words : 1, 4)) ||
        !(walked_bits = calloc(n_bits ? n_bits : 1, sizeof(uint64_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    /* The walked rows in ascending order, so that their splits come by row and merge with
     * the other rows' in one pass: a bit per row, read back a word at a time (the rows of
     * long tokens come longest first, up to a quarter of the vocabulary). */
    for (Py_ssize_t i = 0; i < k; i++) {
        int32_t r = walk[i];
        if (r < 0 || r >= n_rows || (walked_bits[r >> 6] >> (r & 63) & 1)) {
            PyErr_SetString(PyExc_ValueError, "read_off: a walked row is out of range or repeated");
            goto done;
        }
        walked_bits[r >> 6] |= (uint64_t)1 << (r & 63);
    }
    for (Py_ssize_t j = 0, i = 0; j < n_bits; j++)
        for (uint64_t x = walked_bits[j]; x; x &= x - 1) order[i++] = (int32_t)(j * 64 + __builtin_ctzll(x));
    for (Py_ssize_t j = 0; j < n_splits; j++)
        if (b_rows[j] < 0 || b_rows[j] >= n_rows || (j && b_rows[j] < b_rows[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "read_off: the splits are out of range or not by row");
            goto done;
        }
    for (Py_ssize_t i = 0; i < k; i++)
        if (id[walk[i]] < 0 || id[walk[i]] >= n_words * 32) {
            PyErr_SetString(PyExc_ValueError, "read_off: a token id is out of range");
            goto done;
        }
    /* made empty, then filled: bytes made from one byte of data would be CPython's shared
     * singleton of that byte, which the walk below would write into */
    if (!(inside = PyBytes_FromStringAndSize(NULL, n_rows))) goto done;
    uint8_t *in = (uint8_t *)PyBytes_AS_STRING(inside);
    memcpy(in, b_inside, n_rows);
    w.inside = in; /* the walked rows that stay inside are flagged there */
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < k && !failed; i++) {
        in[order[i]] = 0;
        failed = walk_row(&w, order[i], 0);
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    /* Merge: the other scan's splits of rows not walked, and the walked rows' (both by row). */
    const Vec *n_r = &w.out[2], *n_p = &w.out[3];
    Py_ssize_t a = 0, b = 0, c = 0; /* the next of the other scan's splits, of the new ones, of `order` */
    while (a < n_splits || b < n_r->len) {
        while (c < k && order[c] < (a < n_splits ? b_rows[a] : INT32_MAX)) c++;
        if (a < n_splits && c < k && order[c] == b_rows[a]) { a++; continue; } /* a walked row's: replaced */
        int take_base = b >= n_r->len || (a < n_splits && b_rows[a] < n_r->data[b]);
        int32_t row = take_base ? b_rows[a] : n_r->data[b], at = take_base ? b_pos[a++] : n_p->data[b++];
        if (vec_push(&rows, row) || vec_push(&pos, at)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int same = rows.len == n_splits && (!n_splits || (!memcmp(rows.data, b_rows, base_rows.len) &&
                                                      !memcmp(pos.data, b_pos, base_pos.len)));
    for (Py_ssize_t i = 0; i < k && same; i++) same = in[walk[i]] == b_inside[walk[i]];
    if (same) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* The other scan's set, less the walked rows' ids, plus those that stay inside. */
    if (or_set(words, n_words, base_set, "read_off")) goto done;
    for (Py_ssize_t i = 0; i < k; i++) words[id[walk[i]] >> 5] &= ~(1u << (id[walk[i]] & 31));
    for (Py_ssize_t i = 0; i < k; i++)
        if (in[walk[i]]) words[id[walk[i]] >> 5] |= 1u << (id[walk[i]] & 31);
    PyObject *packed = set_of_dense(words, n_words);
    if (packed) result = Py_BuildValue("(ONNN)", inside, vec_bytes(&rows), vec_bytes(&pos), packed);
done:
    Py_XDECREF(inside);
    free(order), free(words), free(walked_bits), free(rows.data), free(pos.data);
    for (int i = 0; i < 4; i++) free(w.out[i].data);
    PyBuffer_Release(&walked), PyBuffer_Release(&base_inside), PyBuffer_Release(&base_rows),
        PyBuffer_Release(&base_pos);
    return result;
}

/* The `pack_ids` TokenSet of ids[r] (int32 per row) for the rows a walk ended inside
 * (out[0]), or None when none did; NULL with an error set. */
static PyObject *packed_ends(const Walk *w, const int32_t *id, Py_ssize_t n_words) {
    Py_ssize_t n = w->out[0].len;
    if (!n) return Py_NewRef(Py_None);
    int64_t *ends = malloc((size_t)n * sizeof(int64_t));
    if (!ends) return PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < n; j++) ends[j] = id[w->out[0].data[j]];
    PyObject *packed = packed_ids(ends, n, n_words);
    free(ends);
    return packed;
}

/* Whether a walk with a limit (`Walk.limit`) has walked as many rows as it may; counts one
 * more row otherwise. */
static inline int over_limit(Walk *w) {
    return w->limit && w->walked++ >= w->limit;
}

/* The rows of the ranges [a[i], b[i]) (i < k, each checked to lie in the rows), each walked
 * from byte `start` (`walk_shared`, resuming from the row before where `common` says the two
 * share bytes, stepping over the rows `next` says end alike); 0, OUT_OF_MEMORY,
 * OUT_OF_RANGE, or OVER_LIMIT once it would walk more rows than `w->limit`. Called without
 * the GIL. */
static int walk_ranges(Walk *w, Path *h, const int64_t *a, const int64_t *b, Py_ssize_t k, int32_t start,
                       const uint8_t *common, const int32_t *next) {
    int failed = 0;
    for (Py_ssize_t i = 0; i < k && !failed; i++) {
        if (a[i] >= b[i]) continue;
        if (over_limit(w)) return OVER_LIMIT;
        failed = walk_shared(w, h, (int32_t)a[i], start, 0); /* shares nothing with the row before */
        int32_t from = start;
        if (!common)
            for (int64_t r = a[i] + 1; r < b[i] && !failed; r++) {
                if (over_limit(w)) return OVER_LIMIT;
                failed = walk_shared(w, h, (int32_t)r, from, 0);
            }
        else
            for (int64_t r = a[i] + 1; r < b[i] && !failed;) {
                /* rows that hold the byte which ended the row before, with no split to report
                 * (no accepting state on the dead prefix): all of them at once, down `next` */
                if (next && h->dead >= 0 && !h->n_accepting && !w->split_start && common[r] > from + h->dead) {
                    int32_t limit = from + h->dead;
                    while (r < b[i] && common[r] > limit) {
                        if (next[r] <= r) return OUT_OF_RANGE; /* not a row after it: refuse rather than loop */
                        r = next[r];
                    }
                    continue;
                }
                if (over_limit(w)) return OVER_LIMIT;
                failed = walk_shared(w, h, (int32_t)r, from, common[r]);
                r++;
            }
    }
    return failed;
}

static PyObject *scan_ranges(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    TokensObject *tokens;
    PyObject *inside_obj, *result = NULL;
    Py_buffer lo = {0}, hi = {0}, inside = {0};
    Py_ssize_t q, start;
    Walk w = {0};
    Path h = {0};
    if (!PyArg_ParseTuple(args, "O!O!y*y*nnpO", &TableType, &table, &TokensType, &tokens, &lo, &hi, &start, &q,
                          &w.split_at_start, &inside_obj))
        return NULL;
    if (setup(&w, table, tokens, q, "scan_ranges") || need(&lo, sizeof(int64_t), "lo") ||
        need(&hi, sizeof(int64_t), "hi"))
        goto done;
    Py_ssize_t n_rows = tokens->n_rows;
    if (inside_obj != Py_None) {
        if (PyObject_GetBuffer(inside_obj, &inside, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto done;
        if (inside.len != n_rows) {
            PyErr_SetString(PyExc_ValueError, "scan_ranges: inside is not one byte per row");
            goto done;
        }
        w.inside = inside.buf;
    }
    if (lo.len != hi.len) {
        PyErr_SetString(PyExc_ValueError, "scan_ranges: inconsistent array sizes");
        goto done;
    }
    Py_ssize_t k = lo.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *a = lo.buf, *b = hi.buf;
    for (Py_ssize_t i = 0; i < k; i++) /* the rows; each row's bytes are checked as it is walked */
        if (a[i] < b[i] && (a[i] < 0 || b[i] > n_rows || start < 0 || start > INT32_MAX)) {
            PyErr_SetString(PyExc_ValueError, "scan_ranges: a row or position is out of range");
            goto done;
        }
    if (path_room(&h, 64)) {
        PyErr_NoMemory();
        goto done;
    }
    h.state[0] = w.q;
    w.split_start = w.split_at_start && w.accept[w.q] && start > 0;
    path_reset(&h);
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = walk_ranges(&w, &h, a, b, k, (int32_t)start, tokens->shared.len ? tokens->shared.buf : NULL,
                         tokens->skip.len ? tokens->skip.buf : NULL);
    Py_END_ALLOW_THREADS
    result = finish(&w, failed, "scan_ranges");
done:
    free(h.state), free(h.accepting);
    PyBuffer_Release(&lo), PyBuffer_Release(&hi);
    if (inside.obj) PyBuffer_Release(&inside);
    return result;
}

/* scan_state(table, tokens, q, most, n_words, thin):
 * a narrow state's scan in one call: the rows whose first byte q takes (the tokens' starts:
 * the rows of first byte b are starts[b]:starts[b + 1] of the vocabulary sorted by bytes),
 * walked from their first byte as scan_ranges walks them. When they are `most` or more, the
 * walk stops once more than `thin` rows were walked (rows stepped over at once, ending alike
 * after the row before, are not counted; 0: at once), and the answer is None (a wide state,
 * which the caller reads off shared scans): a key's state that takes a common letter takes
 * thousands of rows, yet walks a few hundred, the others dying at a byte that ended the row
 * before. Else (the `pack_ids` TokenSet of the tokens' ids[r] for the rows that end
 * inside, or None; those rows; split_rows; split_pos). Most states of a new schema's
 * terminals take a few first bytes: their scans, ~700 rows on average, cost less than the
 * NumPy calls that picked the rows and packed the ids did. */
static PyObject *scan_state(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    TokensObject *tokens;
    PyObject *result = NULL, *packed = NULL;
    Py_ssize_t q, most, n_words, thin;
    Walk w = {0};
    Path h = {0};
    if (!PyArg_ParseTuple(args, "O!O!nnnn", &TableType, &table, &TokensType, &tokens, &q, &most, &n_words, &thin))
        return NULL;
    if (setup(&w, table, tokens, q, "scan_state")) goto done;
    if (!tokens->ids.len || !tokens->starts.len) {
        PyErr_SetString(PyExc_ValueError, "scan_state: the tokens have no ids or no starts");
        goto done;
    }
    const int64_t *st = tokens->starts.buf;
    int64_t lo[256], hi[256];
    Py_ssize_t k = 0, total = 0;
    for (int v = 0; v < 256; v++) /* the first bytes q takes, touching buckets joined */
        if (st[v] < st[v + 1] && step(&w.t, w.q, (uint8_t)v) >= 0) {
            if (k && hi[k - 1] == st[v]) hi[k - 1] = st[v + 1];
            else lo[k] = st[v], hi[k] = st[v + 1], k++;
            total += (Py_ssize_t)(st[v + 1] - st[v]);
        }
    if (total >= most) {
        if (thin <= 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        w.limit = thin;
    }
    if (path_room(&h, 64)) {
        PyErr_NoMemory();
        goto done;
    }
    h.state[0] = w.q;
    path_reset(&h);
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = walk_ranges(&w, &h, lo, hi, k, 0, tokens->shared.len ? tokens->shared.buf : NULL,
                         tokens->skip.len ? tokens->skip.buf : NULL);
    Py_END_ALLOW_THREADS
    if (failed == OVER_LIMIT) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (failed) {
        if (failed == OUT_OF_RANGE) PyErr_SetString(PyExc_ValueError, "scan_state: a row or position is out of range");
        else PyErr_NoMemory();
        goto done;
    }
    if (!(packed = packed_ends(&w, tokens->ids.buf, n_words))) goto done;
    result = Py_BuildValue("(NNNN)", packed, vec_bytes(&w.out[0]), vec_bytes(&w.out[2]), vec_bytes(&w.out[3]));
    packed = NULL;
done:
    Py_XDECREF(packed);
    for (int i = 0; i < 4; i++) free(w.out[i].data);
    free(h.state), free(h.accepting);
    return result;
}

/* A token tree's part for one terminal (`scan_part`'s walk, and a small tree level's in
 * _small.c): the suffixes (r[k], p[k]) of the n_suffixes for k in `pick` (n of them; NULL:
 * all n, each walked when its next byte opens the terminal) walked from the terminal's
 * start (state 0), as `scan` walks them, each checked first (`row_ok`). Fills `out`: the
 * `pack_ids` (bits, words, count) of the tokens' ids for the rows that end inside the
 * terminal, or None; the splits; the bytes right after them (what the next level's
 * terminals are picked by). With `next` (pick NULL), the suffixes' next bytes, one each:
 * the suffixes are a small level's, checked when it was made (each strictly inside its
 * token), and picked by those bytes. Without the GIL while walking when `release` (a small level's
 * walk keeps it: its part is made and published with no other thread in between). 0, or
 * -1 with an error set; `part_walk_free` after either. */
int part_walk(TableObject *table, TokensObject *tokens, const int32_t *r, const int32_t *p, Py_ssize_t n_suffixes,
              const int64_t *pick, Py_ssize_t n, Py_ssize_t n_words, int release, const uint8_t *next,
              PartWalk *out) {
    Walk w = {0};
    memset(out, 0, sizeof *out);
    if (setup(&w, table, tokens, 0, "scan_part")) return -1;
    if (!tokens->ids.len) {
        PyErr_SetString(PyExc_ValueError, "scan_part: inconsistent array sizes");
        return -1;
    }
    for (Py_ssize_t i = 0; !next && i < n; i++) {
        Py_ssize_t k = pick ? pick[i] : i;
        if (k < 0 || k >= n_suffixes || !row_ok(&tokens->lengths, &tokens->offsets, &tokens->data, r[k], p[k])) {
            PyErr_SetString(PyExc_ValueError, "scan_part: a pick, row or position is out of range");
            return -1;
        }
    }
    int failed = 0;
    PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
    if (next) /* a small level's suffixes (each checked when it was made), their next bytes known */
        for (Py_ssize_t i = 0; i < n && !failed; i++) {
            if (step(&w.t, 0, next[i]) >= 0) failed = walk_row(&w, r[i], p[i]);
        }
    else if (pick)
        for (Py_ssize_t i = 0; i < n && !failed; i++) failed = walk_row(&w, r[pick[i]], p[pick[i]]);
    else  /* the suffixes whose next byte opens the terminal: the others die at once */
        for (Py_ssize_t i = 0; i < n && !failed; i++)
            if (p[i] < w.lengths[r[i]] && step(&w.t, 0, w.data[w.offsets[r[i]] + p[i]]) >= 0)
                failed = walk_row(&w, r[i], p[i]);
    if (saved) PyEval_RestoreThread(saved);
    out->split_rows = w.out[2], out->split_pos = w.out[3];
    if (failed) PyErr_NoMemory();
    else out->packed = packed_ends(&w, tokens->ids.buf, n_words);
    free(w.out[0].data), free(w.out[1].data);
    if (!out->packed) return -1;
    for (Py_ssize_t i = 0; i < out->split_rows.len; i++) { /* a split lies strictly inside its token: a byte follows */
        uint8_t b = w.data[w.offsets[out->split_rows.data[i]] + out->split_pos.data[i]];
        out->next[b >> 3] |= (unsigned char)(1u << (b & 7));
    }
    return 0;
}

void part_walk_free(PartWalk *out) {
    Py_CLEAR(out->packed);
    free(out->split_rows.data), free(out->split_pos.data);
    out->split_rows = out->split_pos = (Vec){0};
}

/* scan_part(table, tokens, rows, pos, picks, n_words): `part_walk` over the suffixes
 * (rows[i], pos[i]) (int32 buffers) at `picks` (int64; None: those whose next byte opens
 * the terminal), without the GIL; returns (the ends' (bits, words, count) or None,
 * split_rows, split_pos, the bytes right after the splits as an int, as `next_bytes` gives
 * them). A big tree level's parts (index.py `_walked`); a small level's are made in C
 * (_small.c). */
static PyObject *scan_part(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    TokensObject *tokens;
    PyObject *picks_obj, *result = NULL;
    Py_buffer rows = {0}, pos = {0}, picks = {0};
    Py_ssize_t n_words;
    PartWalk part = {0};
    if (!PyArg_ParseTuple(args, "O!O!y*y*On", &TableType, &table, &TokensType, &tokens, &rows, &pos, &picks_obj,
                          &n_words))
        return NULL;
    if (picks_obj != Py_None && PyObject_GetBuffer(picks_obj, &picks, PyBUF_SIMPLE)) goto done;
    if (need(&rows, sizeof(int32_t), "rows") || need(&pos, sizeof(int32_t), "pos") ||
        need(&picks, sizeof(int64_t), "picks"))
        goto done;
    if (pos.len != rows.len) {
        PyErr_SetString(PyExc_ValueError, "scan_part: inconsistent array sizes");
        goto done;
    }
    Py_ssize_t n_suffixes = rows.len / (Py_ssize_t)sizeof(int32_t);
    const int64_t *pick = picks_obj == Py_None ? NULL : picks.buf;
    Py_ssize_t n = pick ? picks.len / (Py_ssize_t)sizeof(int64_t) : n_suffixes;
    if (part_walk(table, tokens, rows.buf, pos.buf, n_suffixes, pick, n, n_words, 1, NULL, &part)) goto done;
    result = Py_BuildValue("(ONNN)", part.packed, vec_bytes(&part.split_rows), vec_bytes(&part.split_pos),
                           byte_set_int(part.next));
done:
    part_walk_free(&part);
    PyBuffer_Release(&rows), PyBuffer_Release(&pos), PyBuffer_Release(&picks);
    return result;
}

/* next_smaller(shared): int32 per row, the first row after it whose shared count is smaller
 * (the row count when none is): the rows between a row and that one all share more than its
 * count with it, so a walk that saw a row die within that prefix steps over all of them at
 * once (`scan_ranges`' skip). A stack of the rows still waiting for a smaller one. */
static PyObject *next_smaller(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer shared = {0};
    PyObject *result = NULL;
    int32_t *waiting = NULL;
    if (!PyArg_ParseTuple(args, "y*", &shared)) return NULL;
    Py_ssize_t n = shared.len;
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "next_smaller: too many rows");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (!result || !(waiting = malloc((size_t)(n ? n : 1) * sizeof(int32_t)))) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    const uint8_t *count = shared.buf;
    Py_ssize_t top = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        while (top && count[waiting[top - 1]] > count[r]) out[waiting[--top]] = (int32_t)r;
        waiting[top++] = (int32_t)r;
    }
    while (top) out[waiting[--top]] = (int32_t)n;
done:
    free(waiting);
    PyBuffer_Release(&shared);
    return result;
}

/* row_kinds(data, offsets, lengths): uint16 per row, bit g set when the row holds a byte of
 * group g (`byte_group`); computed once per vocabulary (grammarc.tokens.rows). */
static PyObject *row_kinds(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data = {0}, offsets = {0}, lengths = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*", &data, &offsets, &lengths)) return NULL;
    Py_ssize_t n = rows_checked(&data, &offsets, &lengths, "row_kinds");
    if (n < 0) goto done;
    result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint16_t));
    if (!result) goto done;
    uint16_t *out = (uint16_t *)PyBytes_AS_STRING(result);
    const uint8_t *bytes = data.buf;
    const int64_t *off = offsets.buf;
    const int32_t *len = lengths.buf;
    for (Py_ssize_t r = 0; r < n; r++) {
        uint16_t k = 0;
        for (int32_t i = 0; i < len[r]; i++) k |= (uint16_t)(1u << byte_group[bytes[off[r] + i]]);
        out[r] = k;
    }
done:
    PyBuffer_Release(&data), PyBuffer_Release(&offsets), PyBuffer_Release(&lengths);
    return result;
}

/* reaches_more(table, q, limit, runs): whether more than `limit` states are reachable from
 * state q (q included), `runs` a run number per byte (256 bytes, ascending from 0 by steps
 * of at most one: `DFA.byte_runs`, bytes every state treats alike) or empty (each state's
 * own runs, its `table_cuts`: made once per state and kept on the table, where the runs of
 * every state read the automaton's whole table). A language that big (an object's other
 * keys after the quote, a length counter's state) is new to every grammar, and its
 * canonical code, which the shared store keys scans by, costs more to make than the store
 * saves (`TokenIndex._store`). A depth-first walk that stops at `limit` + 1 states: each
 * state steps one byte per run. */
static PyObject *reaches_more(PyObject *self, PyObject *args) {
    (void)self;
    TableObject *table;
    Py_ssize_t q, limit;
    Py_buffer runs = {0};
    PyObject *result = NULL;
    uint8_t *seen = NULL;
    int32_t *stack = NULL;
    if (!PyArg_ParseTuple(args, "O!nny*", &TableType, &table, &q, &limit, &runs)) return NULL;
    const Py_ssize_t n = table->t.n_states;
    if (q < 0 || q >= n || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "reaches_more: the state or the limit is out of range");
        goto done;
    }
    uint8_t firsts[256]; /* one byte of each run */
    int n_firsts = 0;
    if (runs.len == 0)
        for (int b = 0; b < 256; b++) firsts[n_firsts++] = (uint8_t)b;
    else {
        const uint8_t *r = runs.buf;
        if (runs.len != 256 || r[0] != 0) goto bad_runs;
        firsts[n_firsts++] = 0;
        for (int b = 1; b < 256; b++) {
            if (r[b] != r[b - 1] && r[b] != r[b - 1] + 1) goto bad_runs;
            if (r[b] != r[b - 1]) firsts[n_firsts++] = (uint8_t)b;
        }
    }
    if (limit >= n) { /* no DFA of n states reaches more than n */
        result = Py_NewRef(Py_False);
        goto done;
    }
    /* every state pushed is counted, and the walk stops past limit + 1 */
    if (!(seen = calloc((size_t)(n + 7) / 8, 1)) || !(stack = malloc(((size_t)limit + 1) * sizeof(int32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 1, top = 0;
    seen[q >> 3] |= (uint8_t)(1u << (q & 7));
    stack[top++] = (int32_t)q;
    while (top && count <= limit) {
        int32_t s = stack[--top];
        if (runs.len == 0) { /* s's own runs (`table_cuts`, kept on the table): one byte each */
            const uint64_t *cuts = table_cuts(table, s);
            if (!cuts) {
                PyErr_NoMemory();
                goto done;
            }
            n_firsts = 0;
            for (int w = 0; w < 4; w++)
                for (uint64_t bits = cuts[w]; bits; bits &= bits - 1)
                    firsts[n_firsts++] = (uint8_t)(w * 64 + __builtin_ctzll(bits));
        }
        for (int j = 0; j < n_firsts && count <= limit; j++) {
            int32_t t = step(&table->t, s, firsts[j]);
            if (t < 0 || (seen[t >> 3] >> (t & 7) & 1)) continue;
            seen[t >> 3] |= (uint8_t)(1u << (t & 7));
            if (++count <= limit) stack[top++] = t;
        }
    }
    result = PyBool_FromLong(count > limit);
    goto done;
bad_runs:
    PyErr_SetString(PyExc_ValueError, "reaches_more: runs are not 256 ascending run numbers");
done:
    free(seen), free(stack);
    PyBuffer_Release(&runs);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Walk token rows through a DFA (see the module's comment)."},
    {"read_off", read_off, METH_VARARGS, "A scan read off another's, its differing rows walked."},
    {"scan_ranges", scan_ranges, METH_VARARGS, "Walk ranges of token rows through a DFA (see the module's comment)."},
    {"agree_depth", agree_depth, METH_VARARGS, "How deep two DFA states accept and die alike."},
    {"agree_bytes", agree_bytes, METH_VARARGS, "The bytes on which walks from two DFA states may part."},
    {"parting_rows", parting_rows, METH_VARARGS, "The token rows on which walks from two DFA states part."},
    {"pack_rows", pack_rows, METH_VARARGS, "OR the flagged rows' token ids into a packed mask."},
    {"next_bytes", next_bytes, METH_VARARGS, "The byte at each (row, position), and their counts."},
    {"pack_ids", pack_ids, METH_VARARGS, "A TokenSet's arrays and count for some token ids."},
    {"row_kinds", row_kinds, METH_VARARGS, "Each row's byte groups, as 16 bits."},
    {"next_smaller", next_smaller, METH_VARARGS, "Each row's next row with a smaller shared count."},
    {"scan_state", scan_state, METH_VARARGS, "A narrow state's scan: its first bytes' rows walked, their ends packed."},
    {"scan_part", scan_part, METH_VARARGS, "A token tree part: picked suffixes walked, their ends packed."},
    {"order_by_byte", order_by_byte, METH_VARARGS, "Positions grouped by their byte (a counting sort)."},
    {"pack_words", pack_words, METH_VARARGS, "A TokenSet's arrays and count for a packed mask."},
    {"union_sets", union_sets, METH_VARARGS, "A TokenSet's arrays and count for the union of TokenSets."},
    {"rows_by_byte", rows_by_byte, METH_VARARGS, "The rows that hold each byte (a counting sort)."},
    {"bucket_prefixes", bucket_prefixes, METH_VARARGS, "The rows of some first bytes longer than a depth."},
    {"reaches_more", reaches_more, METH_VARARGS, "Whether more than a number of states are reachable from a state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "The token index's inner loops.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    fill_byte_groups();
    if (PyType_Ready(&TokensType) < 0 || PyType_Ready(&TableType) < 0 || PyType_Ready(&SetType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    PyObject *groups = m ? PyBytes_FromStringAndSize((const char *)byte_group, 256) : NULL;
    if (!groups || PyModule_AddObject(m, "BYTE_GROUPS", groups) < 0) { /* steals `groups` only on success */
        Py_XDECREF(groups), Py_XDECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Tokens", (PyObject *)&TokensType) < 0 ||
        PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 ||
        PyModule_AddObjectRef(m, "PackedSet", (PyObject *)&SetType) < 0 || small_module_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
