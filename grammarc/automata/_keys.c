/* grammarc.automata._core, part 4: the decoded texts other than some words (a JSON object's
 * keys other than its named properties), as a character automaton.
 *
 * except_runs - the runs of the minimal automaton over code points of the texts that are none
 *               of some words (grammarc.automata.json_strings.except_runs, which feeds them
 *               to json_string).
 *
 * The words come sorted and distinct. Their trie is built one word at a time along the path of
 * the previous one (in sorted order a new word can only branch off that path, after its last
 * child), then equal subtrees are shared: children are numbered after their parents, so one
 * pass from the last node finds every node's equal among those already registered. A last
 * state, the sink, stands for "left the trie", where every character loops; no trie state can
 * equal it once a word is kept, so the result is the minimal automaton. Its oracle is the
 * Python trie it replaced (tests/automata_reference.py, tests/test_json_strings.py).
 */

#include "_core.h"

#define MAX_CODE_POINT 0x10FFFF

typedef struct { i32 ch, first, last, next; uint8_t end; } Node;  /* ch: the character leading to it */
typedef struct { Node *at; i64 n; size_t cap; } Trie;

/* A new node, the last child of `parent` (none for the root); -1 with an exception set. */
static i32 trie_node(Trie *t, i32 parent, i32 ch)
{
    if ((size_t)t->n == t->cap && grow((void **)&t->at, &t->cap, (size_t)t->n + 1, sizeof(Node)) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    i32 q = (i32)t->n++;
    t->at[q] = (Node){ch, -1, -1, -1, 0};
    if (parent >= 0) {
        Node *p = &t->at[parent];
        if (p->last < 0) p->first = q;
        else t->at[p->last].next = q;
        p->last = q;
    }
    return q;
}

static int has_surrogate(PyObject *word)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    int kind = PyUnicode_KIND(word);
    const void *data = PyUnicode_DATA(word);
    if (kind == PyUnicode_1BYTE_KIND) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xD800 && c <= 0xDFFF) return 1;
    }
    return 0;
}

/* Insert the words (sorted, distinct; those with a surrogate skipped) into a trie rooted at
 * node 0; -1 with an exception set on error. */
static int trie_words(Trie *t, PyObject *words)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(words);
    PyObject **items = PySequence_Fast_ITEMS(words), *prev = NULL;
    i32 *path = NULL;  /* path[i]: the node after the previous word's first i characters */
    size_t path_cap = 0;
    Py_ssize_t depth = 0;
    if (trie_node(t, -1, -1) < 0) return -1;
    for (Py_ssize_t w = 0; w < count; w++) {
        PyObject *word = items[w];
        if (!PyUnicode_Check(word)) { PyErr_SetString(PyExc_TypeError, "except_runs: words must be str"); goto fail; }
        if (has_surrogate(word)) continue;  /* decodes to no text: excludes nothing */
        Py_ssize_t n = PyUnicode_GET_LENGTH(word), common = 0;
        int kind = PyUnicode_KIND(word);
        const void *data = PyUnicode_DATA(word);
        if (prev) {
            int pkind = PyUnicode_KIND(prev);
            const void *pdata = PyUnicode_DATA(prev);
            while (common < depth && common < n
                   && PyUnicode_READ(kind, data, common) == PyUnicode_READ(pkind, pdata, common))
                common++;
            if (common == n || (common < depth && PyUnicode_READ(kind, data, common)
                                                  < PyUnicode_READ(pkind, pdata, common))) {
                PyErr_SetString(PyExc_ValueError, "except_runs: words must be sorted and distinct");
                goto fail;
            }
        }
        if ((size_t)n + 1 > path_cap && grow((void **)&path, &path_cap, (size_t)n + 1, sizeof(i32)) < 0) {
            PyErr_NoMemory();
            goto fail;
        }
        path[0] = 0;
        for (Py_ssize_t i = common; i < n; i++)
            if ((path[i + 1] = trie_node(t, path[i], (i32)PyUnicode_READ(kind, data, i))) < 0) goto fail;
        t->at[path[n]].end = 1;
        depth = n;
        prev = word;
    }
    free(path);
    return 0;
fail:
    free(path);
    return -1;
}

/* same[q]: the first node registered (from the last one down) whose subtree equals q's. */
static i32 *share_subtrees(const Trie *t)
{
    i64 size = 16;
    while (size < 2 * t->n) size *= 2;
    i32 *same = malloc((size_t)t->n * sizeof(i32)), *table = malloc((size_t)size * sizeof(i32));
    uint64_t *hashes = malloc((size_t)t->n * sizeof(uint64_t));
    if (!same || !table || !hashes) {
        free(same); free(table); free(hashes);
        PyErr_NoMemory();
        return NULL;
    }
    for (i64 i = 0; i < size; i++) table[i] = -1;
    for (i64 q = t->n - 1; q >= 0; q--) {
        const Node *node = &t->at[q];
        uint64_t h = 0x9E3779B97F4A7C15ull ^ node->end;
        for (i32 c = node->first; c >= 0; c = t->at[c].next)
            h = (h ^ (uint64_t)(uint32_t)t->at[c].ch ^ ((uint64_t)(uint32_t)same[c] << 32)) * 0x100000001B3ull;
        hashes[q] = h;
        for (i64 slot = (i64)(h & (uint64_t)(size - 1));; slot = (slot + 1) & (size - 1)) {
            i32 r = table[slot];
            if (r < 0) { table[slot] = (i32)q; same[q] = (i32)q; break; }
            if (hashes[r] != h || t->at[r].end != node->end) continue;
            i32 a = node->first, b = t->at[r].first;
            while (a >= 0 && b >= 0 && t->at[a].ch == t->at[b].ch && same[a] == same[b]) {
                a = t->at[a].next;
                b = t->at[b].next;
            }
            if (a < 0 && b < 0) { same[q] = r; break; }
        }
    }
    free(table); free(hashes);
    return same;
}

static PyObject *runs_result(const i64 *ptr, i64 states, const i64 *lo, const i64 *hi, const i64 *dst, i64 runs,
                             const uint8_t *acc)
{
    return Py_BuildValue("(y#y#y#y#y#)", (const char *)ptr, (Py_ssize_t)((states + 1) * 8), (const char *)lo,
                         (Py_ssize_t)(runs * 8), (const char *)hi, (Py_ssize_t)(runs * 8), (const char *)dst,
                         (Py_ssize_t)(runs * 8), (const char *)acc, (Py_ssize_t)states);
}

/* The kept trie nodes (ascending: the root first), then the sink, as runs: per node, the gaps
 * between its children's characters to the sink, each child's character to its kept equal. */
static PyObject *trie_runs(const Trie *t, const i32 *same)
{
    i32 *number = malloc((size_t)t->n * sizeof(i32));
    i64 kept = 0, edges = 0;
    if (!number) return PyErr_NoMemory();
    for (i64 q = 0; q < t->n; q++)
        if (same[q] == q) {
            number[q] = (i32)kept++;
            for (i32 c = t->at[q].first; c >= 0; c = t->at[c].next) edges++;
        }
    i64 states = kept + 1, cap = 2 * edges + kept + 1, runs = 0, at = 0;
    i64 *ptr = malloc((size_t)(states + 1) * sizeof(i64)), *lo = malloc((size_t)cap * sizeof(i64));
    i64 *hi = malloc((size_t)cap * sizeof(i64)), *dst = malloc((size_t)cap * sizeof(i64));
    uint8_t *acc = malloc((size_t)states);
    PyObject *result = NULL;
    if (!ptr || !lo || !hi || !dst || !acc) { PyErr_NoMemory(); goto done; }
    for (i64 q = 0; q < t->n; q++) {
        if (same[q] != q) continue;
        ptr[at] = runs;
        acc[at++] = !t->at[q].end;
        i64 next = 0;
        for (i32 c = t->at[q].first; c >= 0; c = t->at[c].next) {
            i32 ch = t->at[c].ch;
            if (next < ch) { lo[runs] = next; hi[runs] = ch - 1; dst[runs++] = kept; }
            lo[runs] = hi[runs] = ch;
            dst[runs++] = number[same[c]];
            next = ch + 1;
        }
        if (next <= MAX_CODE_POINT) { lo[runs] = next; hi[runs] = MAX_CODE_POINT; dst[runs++] = kept; }
    }
    ptr[at] = runs;
    acc[at] = 1;  /* the sink: every character loops */
    lo[runs] = 0; hi[runs] = MAX_CODE_POINT; dst[runs++] = kept;
    ptr[states] = runs;
    result = runs_result(ptr, states, lo, hi, dst, runs, acc);
done:
    free(number); free(ptr); free(lo); free(hi); free(dst); free(acc);
    return result;
}

/* except_runs(words) -> (ptr, lo, hi, dst, accept): see the module table in _core.c. */
PyObject *py_except_runs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *arg, *words, *result = NULL;
    if (!PyArg_ParseTuple(args, "O", &arg)) return NULL;
    if (!(words = PySequence_Fast(arg, "except_runs: words must be a sequence"))) return NULL;
    Trie t = {0};
    i32 *same = NULL;
    if (trie_words(&t, words) < 0) goto done;
    int any = 0;
    for (i64 q = 0; q < t.n && !any; q++) any = t.at[q].end;
    if (!any) {  /* no word: every text, one state (the trie's root would equal the sink) */
        static const i64 ptr[2] = {0, 1}, lo[1] = {0}, hi[1] = {MAX_CODE_POINT}, dst[1] = {0};
        static const uint8_t acc[1] = {1};
        result = runs_result(ptr, 1, lo, hi, dst, 1, acc);
        goto done;
    }
    if ((same = share_subtrees(&t))) result = trie_runs(&t, same);
done:
    free(same);
    free(t.at);
    Py_DECREF(words);
    return result;
}
