/* The flat LR tables of grammarc.lowering.lr.LRTables, checked: one check, read by the builder's
 * module (_lalr.check, for tables loaded from disk) and by the parser core (_gss, before it reads
 * them), so that no reader walks past an array or trusts an order the tables do not have.
 *
 * Seven int32 arrays. Transitions: state s's are trans_sym/trans_to[trans_start[s] :
 * trans_start[s + 1]], by strictly ascending symbol (terminals t < T, then nonterminal k as
 * T + k), each to a state. Reductions: state s's are red_prod[red_start[s] : red_start[s + 1]],
 * by strictly ascending production (< P); reduction r's lookaheads are la[la_start[r] :
 * la_start[r + 1]], not empty: terminals strictly ascending, then EOF (-1) if it is one. */
#ifndef GRAMMARC_LRTABLES_H
#define GRAMMARC_LRTABLES_H

#include <Python.h>
#include <stdint.h>

enum { LR_TRANS_START, LR_TRANS_SYM, LR_TRANS_TO, LR_RED_START, LR_RED_PROD, LR_LA_START, LR_LA, LR_ARRAYS };

typedef struct {
    const int32_t *a;
    Py_ssize_t n;
} LrArray;

/* Whether `start` (n entries) runs from 0 to `end`, never decreasing (strictly: increasing). */
static inline int lr_offsets_ok(const LrArray *start, Py_ssize_t end, int strictly) {
    if (start->n < 1 || start->a[0] != 0 || start->a[start->n - 1] != end) return 0;
    for (Py_ssize_t i = 1; i < start->n; i++)
        if (start->a[i] < start->a[i - 1] + strictly) return 0;
    return 1;
}

/* NULL when the tables are well-formed, else what is wrong. T: terminals, P: productions. */
static inline const char *lr_tables_error(const LrArray x[LR_ARRAYS], Py_ssize_t T, Py_ssize_t P) {
    Py_ssize_t S = x[LR_TRANS_START].n - 1;
    if (S < 1 || S >= INT32_MAX) return "the tables must have at least one LR state";
    if (T < 0 || T >= INT32_MAX || P < 1) return "the tables' terminal or production count is out of range";
    if (x[LR_TRANS_SYM].n != x[LR_TRANS_TO].n || !lr_offsets_ok(&x[LR_TRANS_START], x[LR_TRANS_SYM].n, 0))
        return "the transitions' offsets do not match their arrays";
    if (x[LR_RED_START].n != S + 1 || !lr_offsets_ok(&x[LR_RED_START], x[LR_RED_PROD].n, 0))
        return "the reductions' offsets do not match their arrays";
    if (x[LR_LA_START].n != x[LR_RED_PROD].n + 1 || !lr_offsets_ok(&x[LR_LA_START], x[LR_LA].n, 1))
        return "the lookaheads' offsets do not match their arrays";
    const int32_t *ts = x[LR_TRANS_START].a, *sym = x[LR_TRANS_SYM].a, *to = x[LR_TRANS_TO].a;
    const int32_t *rs = x[LR_RED_START].a, *prod = x[LR_RED_PROD].a, *ls = x[LR_LA_START].a, *la = x[LR_LA].a;
    for (Py_ssize_t s = 0; s < S; s++) {
        for (int32_t j = ts[s]; j < ts[s + 1]; j++) {
            if (sym[j] < 0 || (j > ts[s] && sym[j] <= sym[j - 1])) return "a state's transitions are not by ascending symbol";
            if (to[j] < 0 || to[j] >= S) return "a transition to a state out of range";
        }
        for (int32_t r = rs[s]; r < rs[s + 1]; r++) {
            if (prod[r] < 0 || prod[r] >= P || (r > rs[s] && prod[r] <= prod[r - 1]))
                return "a state's reductions are not by ascending production";
            for (int32_t i = ls[r]; i < ls[r + 1]; i++) {
                int eof = la[i] == -1 && i == ls[r + 1] - 1;
                if (!eof && (la[i] < 0 || la[i] >= T || (i > ls[r] && la[i] <= la[i - 1])))
                    return "a reduction's lookaheads are not ascending terminals (then EOF)";
            }
        }
    }
    return NULL;
}

/* The Py_buffers of the seven arrays as LrArrays (a ValueError if one is not of 4-byte items). */
static inline int lr_arrays_of(Py_buffer b[LR_ARRAYS], LrArray x[LR_ARRAYS]) {
    for (int i = 0; i < LR_ARRAYS; i++) {
        if (b[i].len % (Py_ssize_t)sizeof(int32_t)) {
            PyErr_SetString(PyExc_ValueError, "an LR table is not an array of 4-byte items");
            return -1;
        }
        x[i].a = b[i].buf, x[i].n = b[i].len / (Py_ssize_t)sizeof(int32_t);
    }
    return 0;
}

#endif
