/* The one check of a DFA's transition table that both compiled cores make before they step
 * through it unchecked: the automata core's Walker (_views.c) and the token walks' Table
 * (grammarc/tokens/_tables.c), each made once per automaton. */

#ifndef GRAMMARC_BOUNDS_H
#define GRAMMARC_BOUNDS_H

#include <Python.h>
#include <stdint.h>

/* The largest of `count` targets (-1 when none). A maximum, not an early exit: GCC
 * vectorizes it, and a new schema's tables hold millions of cells, each checked when a
 * walker and a token table are made. On x86-64 (GCC, glibc: an ifunc) a second copy for AVX2 is
 * picked at load time where the CPU has it: 8 cells an instruction instead of SSE2's
 * emulated 4-cell maximum (~5x fewer instructions on a 1 MB table). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__) /* ifunc: glibc, not musl */
__attribute__((target_clones("avx2", "default")))
#endif
static int32_t largest_target(const int32_t *targets, Py_ssize_t count) {
    int32_t most = -1;
    for (Py_ssize_t i = 0; i < count; i++) most = targets[i] > most ? targets[i] : most;
    return most;
}

/* Whether every target of a table of `n` states is below n (negative: dead) and, for a
 * comb table, every row lies inside its `cells` cells. `dense`: int32 [n * 256], or NULL
 * with `base` (int64 [n]) and `next` (int32 [cells]). */
static inline int table_in_bounds(const int32_t *dense, const int64_t *base, const int32_t *next, Py_ssize_t n,
                                  Py_ssize_t cells) {
    if (largest_target(dense ? dense : next, dense ? n * 256 : cells) >= n) return 0;
    for (Py_ssize_t s = 0; !dense && s < n; s++)
        if (base[s] < 0 || base[s] > cells - 256) return 0;
    return 1;
}

#endif
