/* grammarc.lowering._lalr, continued: what the GLR runtime reads of the tables it builds
 * (grammarc.runtime.gss.ParserCore), derived from lr.LRTables' ACTION rows, so that tables
 * loaded from the disk cache give the same. The tables themselves are built in _lalr.c. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

typedef struct {
    long prod, lookahead, order;
} Reduced;

static int compare_reduced(const void *a, const void *b) {
    const Reduced *x = a, *y = b;
    if (x->prod != y->prod) return (x->prod > y->prod) - (x->prod < y->prod);
    return (x->order > y->order) - (x->order < y->order);
}

static int compare_longs(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* One ACTION row's runtime rows (see `runtime_rows`), appended to the four lists. */
static int runtime_row(PyObject *row, PyObject *lhs, PyObject *rhs_len, int accepting, Reduced **red, size_t *cap,
                       long **keys, size_t *kcap, PyObject *out[4]) {
    if (!PyDict_Check(row)) {
        PyErr_SetString(PyExc_TypeError, "runtime_rows: an ACTION row is not a dict");
        return -1;
    }
    PyObject *shifts = PyDict_New(), *reducing = NULL, *reduces = NULL, *own = NULL;
    size_t n = 0, nk = 0, need = (size_t)PyDict_GET_SIZE(row) + 1;
    int failed = -1;
    if (!shifts) return -1;
    PyObject *key, *cell;
    Py_ssize_t pos = 0;
    while (PyDict_Next(row, &pos, &key, &cell)) {
        long la = PyLong_AsLong(key);
        if (la == -1 && PyErr_Occurred()) goto done;
        if (!PyTuple_Check(cell)) {
            PyErr_SetString(PyExc_TypeError, "runtime_rows: an ACTION cell is not a tuple");
            goto done;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cell); i++) {
            PyObject *item = PyTuple_GET_ITEM(cell, i);
            long a = PyLong_AsLong(item);
            if (a == -1 && PyErr_Occurred()) goto done;
            if (a >= 0) {
                if (la == -1) continue; /* EOF is never shifted */
                if (nk + 1 >= *kcap) {
                    long *grown = PyMem_Realloc(*keys, (*kcap = 2 * (nk + 1) + need) * sizeof(long));
                    if (!grown) { PyErr_NoMemory(); goto done; }
                    *keys = grown;
                }
                if (PyDict_SetItem(shifts, key, item)) goto done;
                (*keys)[nk++] = la;
            } else if (a < -1) { /* -1 reduces production 0 on EOF: accepting, not a reduction */
                if (n >= *cap) {
                    Reduced *grown = PyMem_Realloc(*red, (*cap = 2 * n + need) * sizeof(Reduced));
                    if (!grown) { PyErr_NoMemory(); goto done; }
                    *red = grown;
                }
                (*red)[n] = (Reduced){~a, la, (long)n};
                n++;
            }
        }
    }
    qsort(*red, n, sizeof(Reduced), compare_reduced); /* by production, lookaheads as they came */
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) groups += i == 0 || (*red)[i].prod != (*red)[i - 1].prod;
    if (!(reducing = PyTuple_New((Py_ssize_t)groups)) || !(reduces = PyTuple_New((Py_ssize_t)groups))) goto done;
    for (size_t i = 0, g = 0; i < n; g++) {
        size_t j = i;
        while (j < n && (*red)[j].prod == (*red)[i].prod) j++;
        long p = (*red)[i].prod;
        if (p >= PySequence_Fast_GET_SIZE(lhs) || p >= PySequence_Fast_GET_SIZE(rhs_len)) {
            PyErr_SetString(PyExc_ValueError, "runtime_rows: a reduction's production is out of range");
            goto done;
        }
        PyObject *las = PyFrozenSet_New(NULL);
        if (!las) goto done;
        for (size_t k = i; k < j; k++) {
            PyObject *v = PyLong_FromLong((*red)[k].lookahead);
            if (!v || PySet_Add(las, v)) { Py_XDECREF(v); Py_DECREF(las); goto done; }
            Py_DECREF(v);
        }
        PyObject *entry =
            Py_BuildValue("(OON)", PySequence_Fast_GET_ITEM(lhs, p), PySequence_Fast_GET_ITEM(rhs_len, p), las);
        PyObject *prod = entry ? PyLong_FromLong(p) : NULL;
        if (!prod) { Py_XDECREF(entry); goto done; }
        PyTuple_SET_ITEM(reducing, (Py_ssize_t)g, entry);
        PyTuple_SET_ITEM(reduces, (Py_ssize_t)g, prod);
        i = j;
    }
    if (accepting) (*keys)[nk++] = -1; /* room: kcap > nk after every push */
    qsort(*keys, nk, sizeof(long), compare_longs);
    if (!(own = PyTuple_New((Py_ssize_t)nk))) goto done;
    for (size_t i = 0; i < nk; i++) {
        PyObject *v = PyLong_FromLong((*keys)[i]);
        if (!v) goto done;
        PyTuple_SET_ITEM(own, (Py_ssize_t)i, v);
    }
    PyObject *made[4] = {shifts, reducing, reduces, own};
    for (int i = 0; i < 4; i++)
        if (PyList_Append(out[i], made[i])) goto done;
    failed = 0;
done:
    Py_XDECREF(shifts), Py_XDECREF(reducing), Py_XDECREF(reduces), Py_XDECREF(own);
    return failed;
}

/* runtime_rows(action, lhs, rhs_len, accept_state) -> (shift_to, reducing, reduces, own): per
 * ACTION row (lr.LRTables.action), what grammarc.runtime.gss.ParserCore reads of it, in one
 * pass over its cells: terminal -> the state it shifts to (a dict); the (lhs[p], rhs_len[p],
 * frozenset of lookaheads) of each production p it reduces, by ascending p (reducing
 * production 0, the accepting action, is not a reduction); those productions; and the
 * terminals it shifts, with EOF (-1) in state `accept_state` (None: none), ascending. In
 * Python a grammar's ~200 rows of ~100 cells each took a millisecond: a new schema pays it
 * before its first mask. (Its oracle is tests/lalr_reference.py's runtime_rows.) */
PyObject *runtime_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *action, *lhs_obj, *rhs_len_obj, *accept_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &action, &lhs_obj, &rhs_len_obj, &accept_obj)) return NULL;
    long accept = -1;
    if (accept_obj != Py_None && (accept = PyLong_AsLong(accept_obj)) == -1 && PyErr_Occurred()) return NULL;
    PyObject *rows = PySequence_Fast(action, "runtime_rows: action is not a sequence");
    PyObject *lhs = rows ? PySequence_Fast(lhs_obj, "runtime_rows: lhs is not a sequence") : NULL;
    PyObject *rhs_len = lhs ? PySequence_Fast(rhs_len_obj, "runtime_rows: rhs_len is not a sequence") : NULL;
    PyObject *out[4] = {NULL, NULL, NULL, NULL};
    Reduced *red = NULL;
    long *keys = NULL;
    size_t cap = 0, kcap = 0;
    if (!rhs_len) goto done;
    for (int i = 0; i < 4; i++)
        if (!(out[i] = PyList_New(0))) goto done;
    for (Py_ssize_t s = 0; s < PySequence_Fast_GET_SIZE(rows); s++) {
        if (!keys && !(keys = PyMem_Malloc((kcap = 64) * sizeof(long)))) { PyErr_NoMemory(); goto done; }
        if (runtime_row(PySequence_Fast_GET_ITEM(rows, s), lhs, rhs_len, s == accept, &red, &cap, &keys, &kcap, out))
            goto done;
    }
    result = PyTuple_Pack(4, out[0], out[1], out[2], out[3]);
done:
    PyMem_Free(red), PyMem_Free(keys);
    for (int i = 0; i < 4; i++) Py_XDECREF(out[i]);
    Py_XDECREF(rows), Py_XDECREF(lhs), Py_XDECREF(rhs_len);
    return result;
}
