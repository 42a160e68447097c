/* The graph-structured stack of the GLR runtime in the compiled core: shared declarations
 * of _gss.c (vertices, levels, the parser core) and _step.c (reading bytes into items).
 * The contracts are grammarc/runtime/gss.py's and stepping.py's docstrings; their Python
 * oracle is tests/gss_reference.py. */
#ifndef GRAMMARC_GSS_H
#define GRAMMARC_GSS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A closure (gss.py `_closure`): lookahead u -> the vertices (a tuple) that reductions under u
 * reach, sorted by u. Shared by reference between vertices (a chain shares the one below), so
 * counted by hand; never mutated once made. */
typedef struct {
    int u;
    PyObject *ws; /* tuple of Node, owned */
} CEntry;

typedef struct {
    Py_ssize_t refs;
    Py_ssize_t n;
    CEntry e[];
} Closure;

/* A vertex. Not tracked by the cyclic collector: a vertex refers only to vertices below it
 * (its parents) and to what reductions make over those (its closure), never to itself, so
 * no cycle can pass through one. Every reference between vertices goes through a tuple,
 * whose deallocation the interpreter bounds (the trashcan): a 100k-deep stack is freed
 * without a deep C recursion. */
typedef struct {
    PyObject_HEAD
    int state;
    char kept;
    PyObject *parents; /* tuple of Node (kept vertices: sorted by address) */
    Closure *closure;  /* NULL until made */
    PyObject *weakrefs;
} Node;

typedef struct {
    PyObject_HEAD
    PyObject *vertices; /* tuple of Node, by ascending state (one per state) */
    PyObject *states;   /* tuple of int, ascending */
    PyObject *openings; /* tuple of (Node, int), or NULL until made */
    char accepting;
} Level;

/* open addressing over owned objects (Node or Level), keyed by (tag, pointer array) */
typedef struct {
    PyObject **slots;
    size_t cap, used;
} Table;

typedef struct {
    int t, to;
} Pair;

typedef struct {
    int lhs, len;
    Py_ssize_t la_off, la_n; /* lookaheads: las[la_off : la_off + la_n], ascending */
} Red;

typedef struct {
    PyObject *walker; /* terminal.dfa._walker, or NULL until read */
    char *accept;     /* terminal.dfa.accept, a byte per DFA state (owned) */
    Py_ssize_t n_accept;
    long limit;       /* token_limit, -1: none */
    char any_token, loaded;
} TermInfo;

typedef struct {
    PyObject_HEAD
    int ready;
    int n_states;
    int accept_state; /* -1: none */
    int n_terms;      /* terminal ids (EOF -1 included) lie in [-1, n_terms) */
    Py_ssize_t *shift_off; Pair *shift;  /* per state, by ascending terminal */
    Py_ssize_t *goto_off; Pair *gotos;   /* per state, by ascending nonterminal */
    Py_ssize_t *red_off; Red *red; int *las;
    Py_ssize_t *own_off; int *own;       /* ascending */
    char *has_reduce;
    Table vertices, by_vertices;
    PyObject *levels;    /* dict: completions -> Level */
    PyObject *pure;      /* dict: (states, t) -> tuple or None */
    PyObject *shiftable; /* dict: states -> frozenset */
    unsigned long long work_vertices, work_reductions;
    Node *root;
    Level *root_level;
    PyObject *terms_seq; /* the terminals `info` was read from */
    TermInfo *info;
    Py_ssize_t n_info;
    Py_ssize_t memo_limit;
} Core;

/* A node of a token tree (_tree.c; grammarc.tokens.tree.Tree): candidate terminals and
 * their parts, made by `source` on first read. */
typedef struct {
    PyObject_HEAD
    unsigned long long serial;
    PyObject *source;   /* candidates(), part(tree, u); NULL once every part is made */
    Py_ssize_t n;       /* how many candidates; -1 until read */
    int *cand;          /* the candidates, ascending: the buffer of cand_ints */
    PyObject *cand_set; /* the same, as the frozenset read */
    PyObject *cand_ints; /* bytes holding `cand` (shared by the trees of equal candidates) */
    PyObject **parts;   /* per candidate: its part (tokens or None, Tree or None), NULL until made */
    Py_ssize_t n_made;
} Tree;

extern PyTypeObject NodeType, LevelType, CoreType, TreeType;

typedef struct {
    void **p;
    Py_ssize_t n, cap;
} Vec;

/* _gss.c */
int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size); /* PyMem, doubling */
int vec_push(Vec *v, void *x);
int read_completions(PyObject *completions, Vec *nodes, int **terms); /* nodes: new references */
void cl_decref(Closure *c);
Node *node_new(int state, PyObject *parents, char kept);
void table_clear(Table *t);
Level *level_of(Core *c, PyObject **nodes, Py_ssize_t n);
Level *build(Core *c, PyObject **parents, const int *terms, Py_ssize_t n, int keep, const char *upcoming);
void forget(Core *c);
Level *core_level(Core *c, PyObject *completions);     /* new reference */
PyObject *core_openings(Core *c, Level *level);         /* borrowed (kept on the level) */
int core_shift_of(Core *c, int state, int t);           /* -1: none */

/* _gss_core.c */
int cmp_int(const void *a, const void *b);
Py_ssize_t core_shift_states(Core *c, const int *from, Py_ssize_t n, int t, int *to, int *reduces);

/* _tree.c */
PyObject *core_walk(Core *c, PyObject *const *args, Py_ssize_t nargs);
int tree_module_init(PyObject *m);

/* _step.c */
PyObject *py_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *py_initial(PyObject *self, PyObject *arg);
PyObject *py_complete(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
void free_term_info(TermInfo *info, Py_ssize_t n);

#endif
