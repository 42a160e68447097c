/* grammarc.automata._core, part 3: JSON string literals over a character automaton.
 *
 * json_string - the byte table of every JSON spelling ('"', the characters raw or escaped,
 *               '"') of the strings a DFA over code points accepts
 *               (grammarc.automata.json_strings.json_string).
 *
 * A character may be written raw (its UTF-8 bytes; controls, '"' and '\' excepted), as a short
 * escape (\" \\ \/ \b \f \n \r \t), as \uXXXX in either hex case, or, above U+FFFF, as a
 * surrogate pair \uD8XX\uDCXX; a lone surrogate escape decodes to no character and is never
 * accepted. Reading part of a character (a UTF-8 lead byte and some continuation bytes, or
 * some hex digits) narrows the code point to an interval; the state there is a reader: "so
 * many digits left, and what each value of the interval leads to". Readers are hash-consed
 * by exactly that, and so are the escape states (by what each escape leads to), so the table
 * comes out minimal when the character automaton is (the readers of every character state
 * that sends all of non-ASCII to the same place are one set of states). The caller then asks
 * for it numbered canonically (the keys of an object, bounded strings: minimal character
 * automata by construction); any other table is trimmed, minimized and numbered by the
 * caller (dfa.byte_classes and dfa._finalize). Its oracle is the regex route of the JSON
 * Schema front end, and the minimized table for the canonical one (tests/test_json_strings.py).
 */

#include "_core.h"

enum { START = 0, FINAL = 1, FIRST_CHAR = 2 };
enum { HEX = 0, UTF8 = 1, PAIR = 2, ESCAPE = 3 };  /* kinds of hash-consed states */

/* An outcome function: values -> byte states (-1 dead), as sorted disjoint runs of
 * live outcomes; values outside [clip_lo, clip_hi] are dead; a value v is looked up
 * at v + offset. */
typedef struct { const i64 *lo, *hi; const i32 *out; i64 n, clip_lo, clip_hi, offset; } Fn;

/* A state's transitions as runs of one target over bytes lo..hi (ascending, maximal: no two
 * adjacent runs of one target; a byte in no run has no transition). */
typedef struct { i32 t; uint8_t lo, hi; } Run;

typedef struct {
    uint8_t *acc;   /* [cap] */
    i32 *off, *cnt; /* [cap]: each state's runs, pool[off .. off + cnt) */
    Run *pool;      /* every state's runs, each state's together, written once its targets are known */
    size_t pool_n, pool_cap;
    i64 n, max_states;
    size_t cap;
    i64 runs;       /* runs of the states made: the canonical code's size is 3 bytes per state and 6 per run */
    uint64_t *sig_hashes;  /* states by signature (sig_slot): open addressing, 0 = empty */
    i64 *sig_at;           /* where each one's signature starts in sig_data: its length, then it */
    i32 *sig_vals;
    i64 sig_cap, sig_count;
    Vec64 sig_data;        /* the signatures, each its length and then it */
    Vec64 scratch;         /* the signature being built (reader) */
    uint64_t *whole_keys;  /* readers of an interval whole inside one run, by kind, digits and */
    i32 *whole_vals;       /* outcome (whole_reader): open addressing, 0 = empty */
    i64 whole_cap, whole_count;
    int overflow;   /* set when more than max_states states were needed */
    i64 escapes;    /* escape states made (shared ones once; see py_json_string's budget) */
    i32 leads_outcome;     /* when every character past ASCII leads to leads_outcome, the runs of */
    int leads_n;           /* the UTF-8 leads C2..F4 (leads[0 .. leads_n)) */
    Run leads[0xF5 - 0xC2];
} Ctx;

/* base**k values that k more digits read: 16**k (hex), 64**k (UTF-8 continuation bytes),
 * k <= 4 */
static const i64 widths[2][5] = {{1, 16, 256, 4096, 65536}, {1, 64, 4096, 262144, 16777216}};
#define WIDTH(kind, k) widths[(kind) == UTF8][(k)]

/* A new state, with no transition yet (-2: past the budget, or no memory): its runs are
 * written once, when their targets are known (set_runs). No row of 256 is kept while
 * building: the table is written once, in its final order, from the runs (canonical). */
static i32 new_state(Ctx *x)
{
    if (x->n >= x->max_states) { x->overflow = 1; return -2; }
    if ((size_t)x->n == x->cap) {
        size_t c1 = x->cap, c2 = x->cap, c3 = x->cap, need = (size_t)x->n + 1;
        if (grow((void **)&x->acc, &c1, need, 1) < 0 || grow((void **)&x->off, &c2, need, sizeof(i32)) < 0
            || grow((void **)&x->cnt, &c3, need, sizeof(i32)) < 0) {
            PyErr_NoMemory();
            return -2;
        }
        x->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    i32 s = (i32)x->n++;
    x->acc[s] = 0;
    x->off[s] = x->cnt[s] = 0;
    return s;
}

/* Room for the states, runs and signatures that a character automaton of nc states is
 * expected to need (6 to 10 states per character state for the keys of an object: 8 made
 * room for; ~4 runs and a signature of ~12 numbers per state), so that they are seldom
 * grown (each growth a copy). -1 on error. */
static int sig_resize(Ctx *x, i64 cap);

static int ctx_reserve(Ctx *x, i64 nc)
{
    i64 states = 8 * nc + 16, sigs = 64;
    if (states > x->max_states + 1) states = x->max_states + 1;
    while (sigs < 2 * states) sigs *= 2;
    size_t c1 = 0, c2 = 0, c3 = 0;
    if (grow((void **)&x->acc, &c1, (size_t)states, 1) < 0 || grow((void **)&x->off, &c2, (size_t)states, sizeof(i32)) < 0
        || grow((void **)&x->cnt, &c3, (size_t)states, sizeof(i32)) < 0
        || grow((void **)&x->pool, &x->pool_cap, 4 * (size_t)states, sizeof(Run)) < 0
        || vec64_reserve(&x->sig_data, 12 * (size_t)states) < 0 || vec64_reserve(&x->scratch, 256) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    x->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    x->whole_cap = 64;
    x->whole_keys = calloc((size_t)x->whole_cap, sizeof(uint64_t));
    x->whole_vals = malloc((size_t)x->whole_cap * sizeof(i32));
    if (!x->whole_keys || !x->whole_vals) { PyErr_NoMemory(); return -1; }
    return sig_resize(x, sigs);
}

/* State s's runs: r[0 .. n) (ascending, maximal). -1 on error. */
static int set_runs(Ctx *x, i32 s, const Run *r, int n)
{
    if (x->pool_n + (size_t)n > INT32_MAX  /* off[] holds where each state's runs start */
        || (x->pool_n + (size_t)n > x->pool_cap
            && grow((void **)&x->pool, &x->pool_cap, x->pool_n + (size_t)n, sizeof(Run)) < 0)) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(x->pool + x->pool_n, r, (size_t)n * sizeof(Run));
    x->off[s] = (i32)x->pool_n;
    x->cnt[s] = n;
    x->pool_n += (size_t)n;
    x->runs += n;
    return 0;
}

/* A row's runs being written in ascending byte order: bytes lo..hi to t (none if t < 0),
 * joined to the last run where it goes on with the same target, so that the runs come out
 * maximal, as a scan of the row would find them. */
typedef struct { Run *r; int n; } Runs;

static inline void emit(Runs *o, int lo, int hi, i32 t)
{
    if (t < 0 || lo > hi) return;
    if (o->n && o->r[o->n - 1].t == t && o->r[o->n - 1].hi + 1 == lo) { o->r[o->n - 1].hi = (uint8_t)hi; return; }
    o->r[o->n++] = (Run){t, (uint8_t)lo, (uint8_t)hi};
}

/* The outcome of value a (with clip [0, max] and no offset: a character state's function)
 * and the last value up to which it stays the same. */
static i32 same_until(const Fn *f, i64 a, i64 *end)
{
    i64 lo = 0, hi = f->n;  /* first run with hi >= a */
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (f->hi[mid] < a) lo = mid + 1; else hi = mid;
    }
    if (lo < f->n && f->lo[lo] <= a) { *end = f->hi[lo]; return f->out[lo]; }
    *end = lo < f->n ? f->lo[lo] - 1 : f->clip_hi;
    return -1;
}

/* The outcome of value v (a character state's function: no clip, no offset). */
static i32 outcome(const Fn *f, i64 v)
{
    i64 end;
    return same_until(f, v, &end);
}

/* States other than a character state's own are hash-consed by a signature that fixes
 * their language: a reader's is its kind, the digits it has left and the outcome of each
 * value of its interval, relative to the interval's start; the state after a high
 * surrogate's is PAIR and the reader of its low surrogate. Equal ones are one state,
 * whichever character state asked for them. */
static uint64_t sig_hash(const i64 *sig, i64 n)
{
    uint64_t h = 1469598103934665603ull;
    for (i64 i = 0; i < n; i++) h = (h ^ (uint64_t)sig[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* The signatures' table with room for `cap` (a power of two), its entries moved there. -1
 * on error. */
static int sig_resize(Ctx *x, i64 cap)
{
    uint64_t *hashes = calloc((size_t)cap, sizeof(uint64_t));
    i64 *at = malloc((size_t)cap * sizeof(i64));
    i32 *vals = malloc((size_t)cap * sizeof(i32));
    if (!hashes || !at || !vals) { free(hashes); free(at); free(vals); PyErr_NoMemory(); return -1; }
    for (i64 i = 0; i < x->sig_cap; i++) {
        if (!x->sig_hashes[i]) continue;
        uint64_t j = x->sig_hashes[i] & (uint64_t)(cap - 1);
        while (hashes[j]) j = (j + 1) & (uint64_t)(cap - 1);
        hashes[j] = x->sig_hashes[i]; at[j] = x->sig_at[i]; vals[j] = x->sig_vals[i];
    }
    free(x->sig_hashes); free(x->sig_at); free(x->sig_vals);
    x->sig_hashes = hashes; x->sig_at = at; x->sig_vals = vals; x->sig_cap = cap;
    return 0;
}

/* The state of signature sig[0:n]: *found says whether it was there; if not, it is added
 * with the value `s`. NULL on error. */
static i32 *sig_slot(Ctx *x, const i64 *sig, i64 n, i32 s, int *found)
{
    if (2 * (x->sig_count + 1) > x->sig_cap && sig_resize(x, x->sig_cap ? 2 * x->sig_cap : 64) < 0) return NULL;
    uint64_t h = sig_hash(sig, n), j = h & (uint64_t)(x->sig_cap - 1);
    for (; x->sig_hashes[j]; j = (j + 1) & (uint64_t)(x->sig_cap - 1)) {
        const i64 *other = x->sig_data.v + x->sig_at[j];
        if (x->sig_hashes[j] == h && other[0] == n && !memcmp(other + 1, sig, (size_t)n * sizeof(i64))) {
            *found = 1;
            return &x->sig_vals[j];
        }
    }
    Vec64 *data = &x->sig_data;
    if (vec64_reserve(data, (size_t)n + 1) < 0) { PyErr_NoMemory(); return NULL; }
    data->v[data->n] = n;
    memcpy(data->v + data->n + 1, sig, (size_t)n * sizeof(i64));
    x->sig_hashes[j] = h; x->sig_at[j] = (i64)data->n; x->sig_vals[j] = s;
    data->n += (size_t)n + 1;
    x->sig_count++;
    *found = 0;
    return &x->sig_vals[j];
}

/* The run of an outcome function that the last interval of a loop lay whole inside of
 * (-1: none), and the state read there (see reader_inside). */
typedef struct { i64 run; i32 state; i64 cursor; } Inside;  /* cursor: no run before it reaches lo */

static int read_digits(Ctx *x, i32 s, int kind, int k, i64 lo, const Fn *f, i64 cursor);
static i32 whole_reader(Ctx *x, int kind, int k, i64 lo, const Fn *f, i64 run);

/* The state reading k more digits (hex, or UTF-8 continuation bytes) of a value in
 * [lo, lo + base**k - 1] that leads through f to the next state; -1 where every value is
 * dead, -2 on error. `hint`: a run of f that no run before it reaches the interval (its
 * first value past the clip) from, so the runs are walked from there (a loop over
 * ascending intervals knows it), or -1 (looked for by bisection). */
static i32 reader(Ctx *x, int kind, int k, i64 lo, const Fn *f, i64 hint)
{
    int base = kind == UTF8 ? 64 : 16;
    i64 width = WIDTH(kind, k);
    i64 a = lo < f->clip_lo ? f->clip_lo : lo, b = lo + width - 1 > f->clip_hi ? f->clip_hi : lo + width - 1;
    if (a > b) return -1;
    i64 first = hint < 0 ? 0 : hint, last = f->n;  /* the first run that reaches a */
    if (hint >= 0)
        while (first < last && f->hi[first] - f->offset < a) first++;
    else
        while (first < last) {
            i64 mid = (first + last) / 2;
            if (f->hi[mid] - f->offset < a) first = mid + 1; else last = mid;
        }
    if (first == f->n || f->lo[first] - f->offset > b) return -1;
    if (k == 0) return f->out[first];
    /* the scratch is shared by every call: used up before the digits */
    i64 *sig = x->scratch.v, n = 2;  /* kind, k, then (from | to << 32, outcome) relative to lo */
    sig[0] = kind; sig[1] = k;
    for (i64 i = first; i < f->n && f->lo[i] - f->offset <= b; i++) {
        if ((size_t)n + 2 > x->scratch.cap) {
            x->scratch.n = (size_t)n;
            if (vec64_reserve(&x->scratch, 2) < 0) { PyErr_NoMemory(); return -2; }
            sig = x->scratch.v;
        }
        i64 from = f->lo[i] - f->offset < a ? a : f->lo[i] - f->offset;
        i64 to = f->hi[i] - f->offset > b ? b : f->hi[i] - f->offset;
        sig[n++] = (from - lo) | (to - lo) << 32; sig[n++] = f->out[i];
    }
    int found;
    i32 *slot = sig_slot(x, sig, n, -1, &found);
    if (!slot) return -2;
    if (found) return *slot;
    i32 s = new_state(x);
    if (s == -2) return -2;
    *slot = s;  /* now: the digits below may grow (and move) the signatures' table */
    return read_digits(x, s, kind, k, lo, f, first) < 0 ? -2 : s;
}

/* Reader s's runs, from its digits' (runs of digits d0..d1 to t, ascending): a UTF-8
 * continuation byte is 0x80 + d; a hex digit is '0' + d below ten, and above it both
 * 'A' + d - 10 and 'a' + d - 10, so its runs come in three passes, in byte order. */
static int digit_runs(Ctx *x, i32 s, int kind, const int (*digits)[3], int n)
{
    Run buf[64];
    Runs o = {buf, 0};
    if (kind == UTF8) {
        for (int i = 0; i < n; i++) emit(&o, 0x80 + digits[i][0], 0x80 + digits[i][1], digits[i][2]);
    } else {
        for (int i = 0; i < n && digits[i][0] < 10; i++)
            emit(&o, '0' + digits[i][0], '0' + (digits[i][1] < 10 ? digits[i][1] : 9), digits[i][2]);
        for (int pass = 0; pass < 2; pass++) {
            int letter = pass ? 'a' : 'A';
            for (int i = 0; i < n; i++)
                if (digits[i][1] >= 10)
                    emit(&o, letter + (digits[i][0] > 10 ? digits[i][0] : 10) - 10, letter + digits[i][1] - 10,
                         digits[i][2]);
        }
    }
    return set_runs(x, s, buf, o.n);
}

/* Reader s's digits: what each of its base sub-intervals of [lo, lo + base**k - 1] leads
 * to, walking f's runs from `cursor` (the first that reaches lo) rather than each digit
 * alone: a digit no live run meets stays dead (no run holds it), and the digits whose
 * intervals lie whole inside one run share one reader (see reader_inside), looked up
 * once. -1 on error. */
static int read_digits(Ctx *x, i32 s, int kind, int k, i64 lo, const Fn *f, i64 cursor)
{
    int base = kind == UTF8 ? 64 : 16;
    i64 w = WIDTH(kind, k - 1), last_run = -1;
    i32 last_state = -1;
    int digits[64][3], n = 0;  /* runs of digits: first, last, target */
    for (int d = 0; d < base;) {
        i64 dlo = lo + d * w, dhi = dlo + w - 1, from = dlo < f->clip_lo ? f->clip_lo : dlo;
        if (dlo > f->clip_hi) break;
        while (cursor < f->n && f->hi[cursor] - f->offset < from) cursor++;
        if (cursor == f->n) break;
        i64 rlo = f->lo[cursor] - f->offset, rhi = f->hi[cursor] - f->offset;
        if (rlo < f->clip_lo) rlo = f->clip_lo;
        if (rlo > dhi) {  /* dead up to the digit of the next run */
            d = (int)((rlo - lo) / w < base ? (rlo - lo) / w : base);
            continue;
        }
        i32 t;
        int past = d + 1;
        if (dlo >= f->clip_lo && dhi <= f->clip_hi && rlo <= dlo && rhi >= dhi) {  /* whole inside */
            i64 top = rhi < f->clip_hi ? rhi : f->clip_hi, whole = (top - lo + 1) / w;
            past = (int)(whole < base ? whole : base);
            t = cursor == last_run ? last_state : whole_reader(x, kind, k - 1, dlo, f, cursor);
            last_run = cursor; last_state = t;
        } else {
            t = reader(x, kind, k - 1, dlo, f, cursor);
            last_run = -1;
        }
        if (t == -2) return -1;
        if (t >= 0) { digits[n][0] = d; digits[n][1] = past - 1; digits[n][2] = t; n++; }
        d = past;
    }
    return digit_runs(x, s, kind, (const int (*)[3])digits, n);
}

/* States remembered by a key of a few small numbers, where what they are is a function of
 * those alone (whole_reader, pair_state): open addressing, 0 = empty; the value of `key`,
 * or -3 when it is not there. */
static uint64_t memo_slot(const Ctx *x, uint64_t key)
{
    uint64_t mask = (uint64_t)x->whole_cap - 1, j = ((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (x->whole_keys[j] && x->whole_keys[j] != key) j = (j + 1) & mask;
    return j;
}

static i32 memo_get(const Ctx *x, uint64_t key)
{
    uint64_t j = memo_slot(x, key);
    return x->whole_keys[j] ? x->whole_vals[j] : -3;
}

/* Remember `key` (not there) as t, the table doubled first where it would be over half
 * full. -1 on error. */
static int memo_put(Ctx *x, uint64_t key, i32 t)
{
    if (2 * (x->whole_count + 1) > x->whole_cap) {
        Ctx old = *x;
        x->whole_cap *= 2;
        x->whole_keys = calloc((size_t)x->whole_cap, sizeof(uint64_t));
        x->whole_vals = malloc((size_t)x->whole_cap * sizeof(i32));
        if (!x->whole_keys || !x->whole_vals) {
            free(x->whole_keys); free(x->whole_vals);
            x->whole_keys = old.whole_keys; x->whole_vals = old.whole_vals; x->whole_cap = old.whole_cap;
            PyErr_NoMemory();
            return -1;
        }
        for (i64 i = 0; i < old.whole_cap; i++)
            if (old.whole_keys[i]) {
                uint64_t j = memo_slot(x, old.whole_keys[i]);
                x->whole_keys[j] = old.whole_keys[i]; x->whole_vals[j] = old.whole_vals[i];
            }
        free(old.whole_keys); free(old.whole_vals);
    }
    uint64_t j = memo_slot(x, key);
    x->whole_keys[j] = key; x->whole_vals[j] = t;
    x->whole_count++;
    return 0;
}

/* A memo key: what is remembered (kind: HEX or UTF8 readers, PAIR states), digits, value. */
#define MEMO_KEY(kind, k, v) ((((uint64_t)((kind) * 8 + (k)) << 32) | (uint32_t)(v)) + 1)

/* `reader` of an interval [lo, lo + base**k - 1] that lies whole inside f's run `run`:
 * its signature is (kind, k, 0, base**k - 1, outcome) wherever the interval lies, so the
 * state is remembered by kind, k and outcome alone, and found again without a signature
 * (the commonest reader: a character state sends most values to one place, the sink for
 * the keys of an object). No digit left (k = 0): the outcome itself. -2 on error. */
static i32 whole_reader(Ctx *x, int kind, int k, i64 lo, const Fn *f, i64 run)
{
    i32 o = f->out[run];
    if (k == 0) return o;
    i32 t = memo_get(x, MEMO_KEY(kind, k, o));
    if (t != -3) return t;
    if ((t = reader(x, kind, k, lo, f, run)) < 0) return t;
    return memo_put(x, MEMO_KEY(kind, k, o), t) < 0 ? -2 : t;
}

/* `reader`, but where the interval [lo, lo + base**k - 1] lies whole inside the run of f
 * that the previous call of the same loop (`last`) found it inside of, that call's state:
 * both have the signature (kind, k, 0, base**k - 1, outcome), so they are one state. A
 * character state sends most of its values to one place (the sink, for the other keys of
 * an object), so most of its UTF-8 leads are looked up once, not each (a reader's digits
 * go the same way by runs: read_digits). */
static i32 reader_inside(Ctx *x, int kind, int k, i64 lo, const Fn *f, Inside *last)
{
    i64 hi = lo + WIDTH(kind, k) - 1, run = -1;
    if (lo >= f->clip_lo && hi <= f->clip_hi) {
        i64 first = last->cursor;  /* the first run that reaches lo: a loop's intervals ascend */
        while (first < f->n && f->hi[first] - f->offset < lo) first++;
        last->cursor = first;
        if (first < f->n && f->lo[first] - f->offset <= lo && f->hi[first] - f->offset >= hi) run = first;
    }
    if (run >= 0 && run == last->run) return last->state;
    i32 t = run >= 0 ? whole_reader(x, kind, k, lo, f, run) : reader(x, kind, k, lo, f, last->cursor);
    last->run = run;
    last->state = t;
    return t;
}

/* The state after a high surrogate escape: "\u" and a low surrogate, whose value leads
 * (through f, over DC00..DFFF) to the next state; one per low-surrogate reader. */
static i32 pair_state(Ctx *x, const Fn *f)
{
    i32 t = reader(x, HEX, 4, 0, f, -1);
    if (t < 0) return t;
    const i64 sig[2] = {PAIR, t};
    int found;
    i32 *slot = sig_slot(x, sig, 2, -1, &found);
    if (!slot) return -2;
    if (found) return *slot;
    i32 p = new_state(x), p2 = new_state(x);
    if (p == -2 || p2 == -2) return -2;
    *slot = p;
    const Run backslash = {p2, '\\', '\\'}, u = {t, 'u', 'u'};
    if (set_runs(x, p, &backslash, 1) < 0 || set_runs(x, p2, &u, 1) < 0) return -2;
    return p;
}

/* Runs of an outcome function being built: lo, hi and out side by side, as Fn reads them
 * (the three always hold the same number of runs). */
typedef struct { Vec64 lo, hi; Vec out; } RunBuf;

static int push_run(RunBuf *r, i64 lo, i64 hi, i32 out)
{
    if (out < 0 || lo > hi) return 0;
    size_t n = r->out.n;
    if (n && r->out.v[n - 1] == out && r->hi.v[n - 1] + 1 == lo) { r->hi.v[n - 1] = hi; return 0; }
    if (vec64_reserve(&r->lo, 1) < 0 || vec64_reserve(&r->hi, 1) < 0 || vec_reserve(&r->out, 1) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    r->lo.v[n] = lo; r->hi.v[n] = hi; r->out.v[n] = out;
    r->lo.n = r->hi.n = r->out.n = n + 1;
    return 0;
}

static void runs_clear(RunBuf *r) { r->lo.n = r->hi.n = r->out.n = 0; }

static void runs_free(RunBuf *r) { free(r->lo.v); free(r->hi.v); free(r->out.v); }

/* The outcomes of a state's characters, M(target), over [a, b], minus the surrogates. */
static int push_chars(RunBuf *r, const i64 *lo, const i64 *hi, const i64 *dst, i64 m, i64 a, i64 b)
{
    for (i64 i = 0; i < m; i++) {
        i64 l = lo[i] < a ? a : lo[i], h = hi[i] > b ? b : hi[i];
        if (l > h) continue;
        i32 out = FIRST_CHAR + (i32)dst[i];
        if (l < 0xD800 && h > 0xDFFF) {
            if (push_run(r, l, 0xD7FF, out) < 0 || push_run(r, 0xE000, h, out) < 0) return -1;
        } else if (!(l >= 0xD800 && h <= 0xDFFF)) {
            if (l >= 0xD800 && l <= 0xDFFF) l = 0xE000;
            if (h >= 0xD800 && h <= 0xDFFF) h = 0xD7FF;
            if (push_run(r, l, h, out) < 0) return -1;
        }
    }
    return 0;
}

/* Character state s's runs: the printable ASCII characters raw, run by run, but for '"' (the
 * end of the string, to FINAL where s accepts) and '\\' (to the escape state, -1: none),
 * then the UTF-8 leads' runs. */
static int char_runs(Ctx *x, i32 s, const Fn *all, int accept, i32 escape, const Run *leads, int leads_n)
{
    Run buf[256];
    Runs o = {buf, 0};
    const int special[2][2] = {{'"', accept ? FINAL : -1}, {'\\', escape}};
    int sp = 0;
    for (i64 r = 0; r < all->n && all->lo[r] < 0x80; r++) {
        int from = all->lo[r] < 0x20 ? 0x20 : (int)all->lo[r], to = all->hi[r] > 0x7F ? 0x7F : (int)all->hi[r];
        if (from > to) continue;
        for (; sp < 2 && special[sp][0] <= to; sp++) {  /* the specials up to this run's end, in order */
            if (special[sp][0] >= from) {  /* inside the run: cut it there */
                emit(&o, from, special[sp][0] - 1, all->out[r]);
                from = special[sp][0] + 1;
            }
            emit(&o, special[sp][0], special[sp][0], special[sp][1]);
        }
        emit(&o, from, to, all->out[r]);
    }
    for (; sp < 2; sp++) emit(&o, special[sp][0], special[sp][0], special[sp][1]);
    for (int i = 0; i < leads_n; i++) emit(&o, leads[i].lo, leads[i].hi, leads[i].t);
    return set_runs(x, s, buf, o.n);
}

/* The runs of `all` (a character state's function) over [a, b], cut there. */
static int push_within(RunBuf *r, const Fn *all, i64 a, i64 b)
{
    for (i64 i = 0; i < all->n && all->lo[i] <= b; i++)
        if (all->hi[i] >= a && push_run(r, all->lo[i] < a ? a : all->lo[i], all->hi[i] > b ? b : all->hi[i],
                                        all->out[i]) < 0)
            return -1;
    return 0;
}

/* One character state's runs: M(q), its escape state and the readers below them. */
static int build_char(Ctx *x, i64 q, const i64 *lo, const i64 *hi, const i64 *dst, i64 m, int accept,
                      RunBuf *chars, RunBuf *hex)
{
    i32 s = FIRST_CHAR + (i32)q;
    runs_clear(chars);
    runs_clear(hex);
    if (push_chars(chars, lo, hi, dst, m, 0, 0x10FFFF) < 0) return -1;
    Fn all = {chars->lo.v, chars->hi.v, chars->out.v, (i64)chars->out.n, 0, 0x10FFFF, 0};
    Run lead_buf[0xF5 - 0xC2];
    Runs leads_out = {lead_buf, 0};
    const Run *lead_runs = lead_buf;
    static const int leads[3][5] = {  /* first lead, last lead, continuations, min, max code point */
        {0xC2, 0xDF, 1, 0x80, 0x7FF}, {0xE0, 0xEF, 2, 0x800, 0xFFFF}, {0xF0, 0xF4, 3, 0x10000, 0x10FFFF}};
    /* One outcome for every character past ASCII (the sink, for most states of the keys' trie):
     * the leads read what they read for the last state with that outcome, the same states */
    i32 beyond = all.n >= 2 && all.lo[all.n - 2] <= 0x80 && all.hi[all.n - 2] == 0xD7FF
        && all.lo[all.n - 1] == 0xE000 && all.hi[all.n - 1] == 0x10FFFF
        && all.out[all.n - 2] == all.out[all.n - 1] ? all.out[all.n - 1] : -1;
    if (beyond >= 0 && beyond == x->leads_outcome) {
        lead_runs = x->leads;
        leads_out.n = x->leads_n;
        goto escapes;
    }
    for (int i = 0; i < 3; i++) {
        Fn f = all;
        f.clip_lo = leads[i][3]; f.clip_hi = leads[i][4];
        Inside inside = {-1, -1, 0};
        for (int b = leads[i][0]; b <= leads[i][1]; b++) {
            i64 first = (i64)(b & (0x3F >> leads[i][2])) << (6 * leads[i][2]);
            i32 t = reader_inside(x, UTF8, leads[i][2], first, &f, &inside);
            if (t == -2) return -1;
            emit(&leads_out, b, b, t);
        }
    }
    if (beyond >= 0) {
        x->leads_outcome = beyond;
        x->leads_n = leads_out.n;
        memcpy(x->leads, lead_buf, (size_t)leads_out.n * sizeof(Run));
    }
escapes:
    /* escapes: \uXXXX (BMP characters, and high surrogates leading to the pair's second half)
     * read first, so that the escape state is looked up by what it leads to */
    if (push_within(hex, &all, 0, 0xD7FF) < 0) return -1;
    for (i64 h = 0xD800; h <= 0xDBFF;) {  /* blocks of 1024 astral characters, one per high surrogate */
        i64 base = 0x10000 + ((h - 0xD800) << 10), end, last = h;
        i32 c = same_until(&all, base, &end), p;
        if (end >= base + 0x3FF) {  /* one outcome for this block and the next ones up to `end` */
            last = 0xD800 + (end + 1 - 0x10000) / 0x400 - 1;
            i64 from = 0xDC00, to = 0xDFFF;
            Fn one = {&from, &to, &c, c >= 0, 0xDC00, 0xDFFF, 0};
            /* a function of c alone, remembered: most character states send every astral
             * character to one place, the sink for the keys of an object */
            if (c < 0 || (p = memo_get(x, MEMO_KEY(PAIR, 4, c))) == -3) {
                p = pair_state(x, &one);
                if (p >= 0 && memo_put(x, MEMO_KEY(PAIR, 4, c), p) < 0) return -1;
            }
        } else {
            Fn low = all;
            low.clip_lo = 0xDC00; low.clip_hi = 0xDFFF; low.offset = base - 0xDC00;
            p = pair_state(x, &low);
        }
        if (p == -2 || push_run(hex, h, last, p) < 0) return -1;
        h = last + 1;
    }
    if (push_within(hex, &all, 0xE000, 0xFFFF) < 0) return -1;
    Fn bmp = {hex->lo.v, hex->hi.v, hex->out.v, (i64)hex->out.n, 0, 0xFFFF, 0};
    i32 t = reader(x, HEX, 4, 0, &bmp, 0);
    if (t == -2) return -1;
    static const int shorts[8][2] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 8},
                                     {'f', 12}, {'n', 10}, {'r', 13}, {'t', 9}};
    i64 sig[10] = {ESCAPE, t};
    int live = t >= 0;
    for (int i = 0; i < 8; i++) {
        sig[2 + i] = outcome(&all, shorts[i][1]);
        live |= sig[2 + i] >= 0;
    }
    if (!live)
        return char_runs(x, s, &all, accept, -1, lead_runs, leads_out.n);
    int found;
    i32 *slot = sig_slot(x, sig, 10, -1, &found);
    if (!slot) return -1;
    i32 e = *slot;
    if (!found) {
        if ((e = new_state(x)) == -2) return -1;
        *slot = e;
        x->escapes++;
        static const int order[8] = {0, 2, 1, 3, 4, 5, 6, 7};  /* the escapes in byte order: " / \\ b f n r t */
        Run buf[9];
        Runs o = {buf, 0};
        for (int i = 0; i < 8; i++) emit(&o, shorts[order[i]][0], shorts[order[i]][0], (i32)sig[2 + order[i]]);
        emit(&o, 'u', 'u', t);
        if (set_runs(x, e, buf, o.n) < 0) return -1;
    }
    return char_runs(x, s, &all, accept, e, lead_runs, leads_out.n);
}

/* The table's states reachable from START, numbered breadth first with the bytes taken in
 * ascending order (the canonical numbering of grammarc.automata.dfa), as the (trans, accept,
 * code) bytes py_json_string returns; NULL on error. The construction's states are all
 * distinct languages when the character automaton is minimal with every state live (see
 * py_json_string), so this is the minimal DFA, as dfa._finalize would number it, without
 * the minimization. Each state's row is written once, in its final place, from its runs,
 * and the runs, renumbered, are the canonical code DFA.key digests (code_head, code_run):
 * the runs are maximal, so runs of one target stay runs of one number. */
static PyObject *canonical(const Ctx *x)
{
    /* the code's size is known: 3 bytes per state, 6 per run (less if some are unreachable) */
    PyObject *trans = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)x->n * 256 * sizeof(i32));
    PyObject *acc = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)x->n), *result = NULL;
    PyObject *code = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(3 * x->n + 6 * x->runs));
    i32 *id = malloc((size_t)x->n * sizeof(i32)), *queue = malloc((size_t)x->n * sizeof(i32));
    if (!trans || !acc || !code || !id || !queue) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    i32 *out = (i32 *)PyBytes_AS_STRING(trans);
    char *out_acc = PyBytes_AS_STRING(acc);
    unsigned char *c = (unsigned char *)PyBytes_AS_STRING(code), *start = c;
    for (i64 q = 0; q < x->n; q++) id[q] = -1;
    i64 n = 0;
    id[START] = 0;
    queue[n++] = START;
    for (i64 i = 0; i < n; i++) {
        i32 s = queue[i];
        const Run *r = x->pool + x->off[s];
        int runs = x->cnt[s];
        i32 *row = out + i * 256;
        out_acc[i] = (char)x->acc[s];
        c = code_head(c, x->acc[s], runs);
        memset(row, 0xff, 256 * sizeof *row);  /* no transition: all bits set */
        for (int j = 0; j < runs; j++) {  /* the targets first met here numbered in byte order */
            i32 t = r[j].t;
            if (id[t] < 0) { id[t] = (i32)n; queue[n++] = t; }
            fill_i32(row + r[j].lo, r[j].hi - r[j].lo + 1, id[t]);
            c = code_run(c, r[j].lo, r[j].hi, id[t]);
        }
    }
    if (n < x->n && (_PyBytes_Resize(&trans, (Py_ssize_t)n * 256 * sizeof(i32)) < 0
                     || _PyBytes_Resize(&acc, (Py_ssize_t)n) < 0))
        goto done;
    if (c - start != PyBytes_GET_SIZE(code) && _PyBytes_Resize(&code, (Py_ssize_t)(c - start)) < 0) goto done;
    result = PyTuple_Pack(3, trans, acc, code);
done:
    Py_XDECREF(trans); Py_XDECREF(acc); Py_XDECREF(code);
    free(id); free(queue);
    return result;
}

/* The table as built (its states in the order made), as the (trans, accept) bytes
 * py_json_string returns for dfa._finalize; NULL on error. */
static PyObject *as_built(const Ctx *x)
{
    PyObject *trans = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)x->n * 256 * sizeof(i32));
    PyObject *acc = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)x->n), *result = NULL;
    if (trans && acc) {
        i32 *out = (i32 *)PyBytes_AS_STRING(trans);
        memcpy(PyBytes_AS_STRING(acc), x->acc, (size_t)x->n);
        for (i64 q = 0; q < x->n; q++) {
            const Run *r = x->pool + x->off[q];
            memset(out + q * 256, 0xff, 256 * sizeof *out);
            for (int j = 0; j < x->cnt[q]; j++) fill_i32(out + q * 256 + r[j].lo, r[j].hi - r[j].lo + 1, r[j].t);
        }
        result = PyTuple_Pack(2, trans, acc);
    }
    Py_XDECREF(trans); Py_XDECREF(acc);
    return result;
}

/* json_string(ptr, lo, hi, dst, accept, max_states, canonical) -> (trans, accept[, code]) | None
 * With `canonical`, the caller vouches that the character automaton is minimal and every
 * state of it live (reaches acceptance): the table then comes back minimal and numbered
 * canonically, with its canonical code (`canonical`), else as built, for dfa._finalize. */
PyObject *py_json_string(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[5], *result = NULL;
    Py_buffer b[5] = {{0}};
    Py_ssize_t max_states;
    int numbered = 0;
    if (!PyArg_ParseTuple(args, "OOOOOn|p", &o[0], &o[1], &o[2], &o[3], &o[4], &max_states, &numbered))
        return NULL;
    const Py_ssize_t size[5] = {8, 8, 8, 8, 1};
    static const char *names[5] = {"ptr", "lo", "hi", "dst", "accept"};
    for (int i = 0; i < 5; i++)
        if (get_buf(o[i], &b[i], size[i], 0, names[i]) < 0) goto release;
    i64 nc = buf_len(&b[4]), runs = buf_len(&b[1]);
    const i64 *ptr = b[0].buf, *lo = b[1].buf, *hi = b[2].buf, *dst = b[3].buf;
    const uint8_t *acc = b[4].buf;
    if (buf_len(&b[0]) != nc + 1 || buf_len(&b[2]) != runs || buf_len(&b[3]) != runs || nc < 1 || ptr[0] != 0
        || ptr[nc] != runs) {
        PyErr_SetString(PyExc_ValueError, "json_string: malformed runs");
        goto release;
    }
    for (i64 q = 0; q < nc; q++) {
        if (ptr[q + 1] < ptr[q]) { PyErr_SetString(PyExc_ValueError, "json_string: malformed runs"); goto release; }
        for (i64 i = ptr[q]; i < ptr[q + 1]; i++)
            if (lo[i] < 0 || lo[i] > hi[i] || hi[i] > 0x10FFFF || dst[i] < 0 || dst[i] >= nc
                || (i > ptr[q] && lo[i] <= hi[i - 1])) {
                PyErr_SetString(PyExc_ValueError, "json_string: runs must be sorted, disjoint code point ranges "
                                                  "with targets in range");
                goto release;
            }
    }
    Ctx x = {0};
    x.max_states = max_states;
    x.leads_outcome = -1;
    RunBuf chars = {0}, hex = {0};
    int ok = ctx_reserve(&x, nc) == 0;
    for (i64 i = 0; i < FIRST_CHAR + nc && ok; i++)
        ok = new_state(&x) >= 0;
    const Run quote = {FIRST_CHAR, '"', '"'};
    if (ok && (ok = set_runs(&x, START, &quote, 1) == 0)) {
        x.acc[FINAL] = 1;
        for (i64 q = 0; q < nc && ok; q++)
            ok = build_char(&x, q, lo + ptr[q], hi + ptr[q], dst + ptr[q], ptr[q + 1] - ptr[q], acc[q], &chars,
                            &hex) == 0;
    }
    /* The budget counts the table as built before escape states were shared: one escape
     * state per character state. Sharing them must not let a table through that was refused
     * before (the error, and where the limit falls, stay as they were). */
    if (ok && x.n + nc - x.escapes > x.max_states) {
        ok = 0;
        x.overflow = 1;
    }
    if (ok && numbered)
        result = canonical(&x);
    else if (ok)
        result = as_built(&x);
    else if (x.overflow && !PyErr_Occurred())
        result = Py_NewRef(Py_None);
    free(x.acc); free(x.off); free(x.cnt); free(x.pool);
    free(x.sig_hashes); free(x.sig_at); free(x.sig_vals); free(x.sig_data.v); free(x.scratch.v);
    free(x.whole_keys); free(x.whole_vals);
    runs_free(&chars);
    runs_free(&hex);
release:
    for (int i = 0; i < 5; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
    return result;
}
