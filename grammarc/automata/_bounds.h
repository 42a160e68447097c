/* The one check of a DFA's transition table that both compiled cores make before they step
 * through it unchecked: the automata core's Walker (_views.c) and the token walks' Table
 * (grammarc/tokens/_tables.c), each made once per automaton. */

#ifndef GRAMMARC_BOUNDS_H
#define GRAMMARC_BOUNDS_H

#include <Python.h>
#include <stdint.h>

/* Whether every target of a table of `n` states is below n (negative: dead) and, for a
 * comb table, every row lies inside its `cells` cells. `dense`: int32 [n * 256], or NULL
 * with `base` (int64 [n]) and `next` (int32 [cells]). Maxima, not early exits: GCC
 * vectorizes them, and a new schema's tables hold millions of cells. */
static inline int table_in_bounds(const int32_t *dense, const int64_t *base, const int32_t *next, Py_ssize_t n,
                                  Py_ssize_t cells) {
    const int32_t *targets = dense ? dense : next;
    Py_ssize_t count = dense ? n * 256 : cells;
    int32_t most = -1;
    for (Py_ssize_t i = 0; i < count; i++) most = targets[i] > most ? targets[i] : most;
    if (most >= n) return 0;
    for (Py_ssize_t s = 0; !dense && s < n; s++)
        if (base[s] < 0 || base[s] > cells - 256) return 0;
    return 1;
}

#endif
