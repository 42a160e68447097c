/* A token tree source made in C (grammarc.tokens._scan's `SmallLevel`, _small.c), as the
 * compiled tree (grammarc.runtime._gss `Tree`, _tree.c) calls it: the two are separate
 * extensions, so the tree learns the source's type and its `make` from a capsule
 * (`_scan.SOURCE_API`) that tokens/tree.py hands it once (`_gss._compiled_source`). A
 * tree whose source is of that type makes a part not made yet with one C call instead of
 * the source's Python `part(tree, u)`: a new schema's walks make thousands of small parts. */
#ifndef GRAMMARC_SOURCE_H
#define GRAMMARC_SOURCE_H

#include <Python.h>

#define SOURCE_API_NAME "grammarc.tokens._scan.SOURCE_API"

/* What `make` gives for a terminal's part (each a new reference):
 *   tokens      a TokenSet, or None;
 *   child       None, a Tree, or, with `candidates` set, the source of a new child tree;
 *   candidates  NULL, or that source's candidates (a frozenset): the tree makes the child
 *               (of its own type) with them. */
typedef struct {
    PyObject *tokens, *child, *candidates;
} SourcePart;

typedef struct {
    PyTypeObject *type;
    /* The part of terminal u (a candidate of the tree) from `source` (of `type`): 0, or -1
     * with an error set (nothing in `out` to release). Runs no Python code on its common
     * path; a rare one (a token-limited terminal, a big child) calls the index. */
    int (*make)(PyObject *source, int u, SourcePart *out);
} SourceApi;

#endif
