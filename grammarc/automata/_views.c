/* grammarc.automata._core, part 2: read-only views of a finished DFA for Python.
 *
 * runs        - a DFA's transitions as byte runs per state (grammarc.automata.dfa.DFA._runs);
 * suffix_code - the canonical code of the language accepted from one state
 *               (grammarc.automata.suffix.suffix_key).
 *
 * Their Python oracles live in tests/ (tests/test_automata_core.py, tests/test_suffix_scans.py).
 */

#include "_core.h"

/* ------------------------------------------------------------------- runs */

/* Per state, the maximal byte runs (lo, hi, target) of a byte table int32 [n, 256] that
 * share a live target: the edge lists an NFA embeds a DFA with (nfa._NFA.embed). */
PyObject *py_runs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_trans, *out = NULL;
    Py_buffer trans = {0};
    if (!PyArg_ParseTuple(args, "O", &o_trans))
        return NULL;
    if (get_buf(o_trans, &trans, 4, 0, "trans") < 0) return NULL;
    Py_ssize_t n = buf_len(&trans) / 256;
    if (buf_len(&trans) != n * 256) {
        PyErr_SetString(PyExc_ValueError, "runs: the table is not [n, 256]");
        goto done;
    }
    const i32 *t = trans.buf;
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *row = PyList_New(0);
        if (!row) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, q, row);
        const i32 *r = t + q * 256;
        for (int b = 0; b < 256;) {
            i32 target = r[b];
            int lo = b;
            while (b < 256 && r[b] == target) b++;
            if (target < 0) continue;
            if (target >= n) {
                PyErr_SetString(PyExc_ValueError, "runs: a target out of range");
                Py_CLEAR(out);
                goto done;
            }
            PyObject *run = Py_BuildValue("(iii)", lo, b - 1, (int)target);
            if (!run || PyList_Append(row, run) < 0) { Py_XDECREF(run); Py_CLEAR(out); goto done; }
            Py_DECREF(run);
        }
    }
done:
    PyBuffer_Release(&trans);
    return out;
}

/* ------------------------------------------------------------ suffix_code */

static int put_bytes(unsigned char **buf, Py_ssize_t *len, Py_ssize_t *cap, const void *src, Py_ssize_t n)
{
    if (*len + n > *cap) {
        Py_ssize_t grown = *cap * 2 > *len + n ? *cap * 2 : *len + n;
        unsigned char *bigger = realloc(*buf, grown);
        if (!bigger) { PyErr_NoMemory(); return -1; }
        *buf = bigger; *cap = grown;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    return 0;
}

/* The canonical code of the sub-automaton reachable from `state`, given a DFA's byte runs
 * (DFA._runs: per state a list of (lo, hi, target)) and accept flags: states numbered
 * breadth first, runs in byte order; per state its flag, its run count (2 bytes) and each
 * run as lo, hi (1 byte each) and the target's number (4 bytes, little-endian). */
PyObject *py_suffix_code(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *runs, *o_acc, *out = NULL;
    Py_ssize_t state;
    Py_buffer acc = {0};
    if (!PyArg_ParseTuple(args, "O!On", &PyList_Type, &runs, &o_acc, &state))
        return NULL;
    if (get_buf(o_acc, &acc, 1, 0, "accept") < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(runs);
    i32 *number = NULL, *order = NULL;
    unsigned char *buf = NULL;
    Py_ssize_t len = 0, cap = 256;
    if (buf_len(&acc) != n || state < 0 || state >= n) {
        PyErr_SetString(PyExc_ValueError, "suffix_code: state or accept out of range");
        goto done;
    }
    number = malloc(n * sizeof *number);
    order = malloc(n * sizeof *order);
    buf = malloc(cap);
    if (!number || !order || !buf) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) number[i] = -1;
    const unsigned char *accept = acc.buf;
    Py_ssize_t count = 1;
    order[0] = (i32)state; number[state] = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *row = PyList_GET_ITEM(runs, order[k]);
        if (!PyList_Check(row) || PyList_GET_SIZE(row) > 256) {
            PyErr_SetString(PyExc_ValueError, "suffix_code: a state's runs are not a list of at most 256");
            goto done;
        }
        unsigned char head[3] = {accept[order[k]] ? 'A' : 'N', 0, 0};
        Py_ssize_t m = PyList_GET_SIZE(row);
        head[1] = (unsigned char)(m & 0xff); head[2] = (unsigned char)(m >> 8);
        if (put_bytes(&buf, &len, &cap, head, 3) < 0) goto done;
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *run = PyList_GET_ITEM(row, j);
            if (!PyTuple_Check(run) || PyTuple_GET_SIZE(run) != 3) {
                PyErr_SetString(PyExc_ValueError, "suffix_code: a run is not (lo, hi, target)");
                goto done;
            }
            long lo = PyLong_AsLong(PyTuple_GET_ITEM(run, 0));
            long hi = PyLong_AsLong(PyTuple_GET_ITEM(run, 1));
            long target = PyLong_AsLong(PyTuple_GET_ITEM(run, 2));
            if (PyErr_Occurred()) goto done;
            if (lo < 0 || hi > 255 || lo > hi || target < 0 || target >= n) {
                PyErr_SetString(PyExc_ValueError, "suffix_code: a run out of range");
                goto done;
            }
            if (number[target] < 0) { number[target] = (i32)count; order[count++] = (i32)target; }
            i32 t = number[target];
            unsigned char item[6] = {(unsigned char)lo, (unsigned char)hi, (unsigned char)(t & 0xff),
                                     (unsigned char)((t >> 8) & 0xff), (unsigned char)((t >> 16) & 0xff),
                                     (unsigned char)((t >> 24) & 0xff)};
            if (put_bytes(&buf, &len, &cap, item, 6) < 0) goto done;
        }
    }
    out = PyBytes_FromStringAndSize((const char *)buf, len);
done:
    free(number); free(order); free(buf);
    PyBuffer_Release(&acc);
    return out;
}

