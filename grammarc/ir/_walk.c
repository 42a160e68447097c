/* grammarc.ir._walk: the walks over every node of every rule that grammarc.ir.check makes
 * before a grammar is compiled, in C (in Python, with the tree hashed for the compile cache,
 * they were a fifth of compiling a never-seen JSON Schema).
 *
 * too_deep - the first rule nesting expressions deeper than the limit (check_depth).
 * passing  - each rule's references in order of first use (depth first, left to right) and the
 *            rules holding any! themselves, when every node passes every check of
 *            check._check_rule; None when one may not (check._passing_refs).
 * references - the names one expression refers to (grammarc.ir.nodes.references: the front
 *            ends' passes ask it of every rule).
 * shape    - an expression's shape: equal exactly for trees equal up to the names their
 *            references carry (the JSON Schema front end's sharing._Shapes, which compares
 *            rule bodies by it).
 *
 * inline_rules, substituted - the JSON Schema front end's rewriting walks (_rewrite.c).
 *
 * Nodes are read by their exact class (the IR's ten classes, given in this order: Seq, Alt,
 * Repeat, Except, Literal, Substrings, Ref, Regex, JsonStringExcept, AnyToken); a node of a
 * class of its own is `too_deep`'s `children` callable's to open, and makes `passing` answer
 * None. The Python versions are the oracle (tests/check_reference.py, tests/test_grammar_errors.py).
 */

#include "_walk.h"

/* A stack of (node, depth): borrowed nodes (the rule's tree holds them, or `keep` does). */
typedef struct { PyObject **node; int *depth; Py_ssize_t n, cap; } Stack;

static int stack_push(Stack *s, PyObject *node, int depth)
{
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap ? 2 * s->cap : 256;
        PyObject **nodes = realloc(s->node, (size_t)cap * sizeof(PyObject *));
        if (nodes) s->node = nodes;
        int *depths = nodes ? realloc(s->depth, (size_t)cap * sizeof(int)) : NULL;
        if (!depths) { PyErr_NoMemory(); return -1; }
        s->depth = depths;
        s->cap = cap;
    }
    s->node[s->n] = node;
    s->depth[s->n++] = depth;
    return 0;
}

/* Push `children` (a tuple or list), last first, at `depth`; 1 if there were any, -1 on error. */
static int push_children(Stack *s, PyObject *children, int depth)
{
    if (!PyTuple_Check(children) && !PyList_Check(children)) {
        PyErr_SetString(PyExc_TypeError, "an IR node's children are not a tuple");
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(children);
    PyObject **items = PySequence_Fast_ITEMS(children);
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        if (stack_push(s, items[i], depth) < 0) return -1;
    return n > 0;
}

/* too_deep(rules, classes, children, max_depth) -> the index of the first rule nesting deeper, or -1. */
static PyObject *too_deep(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *rules, *classes, *children, *keep = NULL;
    int max_depth;
    if (!PyArg_ParseTuple(args, "O!O!Oi", &PyTuple_Type, &rules, &PyTuple_Type, &classes, &children, &max_depth))
        return NULL;
    PyObject *const *cls = ir_classes(classes, "too_deep");
    if (!cls) return NULL;
    Stack s = {0};
    Py_ssize_t found = -1;
    if (!(keep = PyList_New(0))) return NULL;  /* what `children` made for nodes of other classes */
    for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(rules) && found < 0; r++) {
        PyObject *rule = PyTuple_GET_ITEM(rules, r);
        if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) != 2) {
            PyErr_SetString(PyExc_TypeError, "too_deep: rules are (name, expression) pairs");
            goto fail;
        }
        s.n = 0;
        if (stack_push(&s, PyTuple_GET_ITEM(rule, 1), 1) < 0) goto fail;
        while (s.n && found < 0) {
            PyObject *node = s.node[--s.n];
            int depth = s.depth[s.n], kind = kind_of(node, cls), more = 0;
            if (kind == SEQ || kind == ALT || kind == REPEAT || kind == EXCEPT || kind < 0) {
                PyObject *below = kind == SEQ || kind == ALT ? PyObject_GetAttr(node, s_items)
                                : kind >= 0 ? PyObject_GetAttr(node, s_item)
                                : PyObject_CallOneArg(children, node);
                if (!below) goto fail;
                if (kind == REPEAT || kind == EXCEPT) {
                    Py_SETREF(below, PyTuple_Pack(1, below));
                    if (!below) goto fail;
                }
                int pushed = PyList_Append(keep, below) < 0 ? -1 : push_children(&s, below, depth + 1);
                Py_DECREF(below);
                if (pushed < 0) goto fail;
                more = pushed;
            }
            if (more && depth == max_depth) found = r;
        }
        if (PyList_GET_SIZE(keep) > 4096 && PyList_SetSlice(keep, 0, PyList_GET_SIZE(keep), NULL) < 0) goto fail;
    }
    free(s.node); free(s.depth);
    Py_DECREF(keep);
    return PyLong_FromSsize_t(found);
fail:
    free(s.node); free(s.depth);
    Py_DECREF(keep);
    return NULL;
}

/* A str with no surrogate code point (those have no UTF-8 encoding). */
static int plain_text(PyObject *text)
{
    if (!PyUnicode_CheckExact(text)) return 0;
    int kind = PyUnicode_KIND(text);
    if (kind == PyUnicode_1BYTE_KIND) return 1;
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text); i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xD800 && c <= 0xDFFF) return 0;
    }
    return 1;
}

/* 1 when the attribute `name` of `node` passes `test`, 0 when not, -1 on error. */
static int attr_is(PyObject *node, PyObject *name, int (*test)(PyObject *))
{
    PyObject *value = PyObject_GetAttr(node, name);
    if (!value) return -1;
    int ok = test(value);
    Py_DECREF(value);
    return ok;
}

/* Repeat bounds: min an int >= 0, max None or an int >= min (bools are not ints here). */
static int good_bounds(PyObject *node)
{
    PyObject *low = PyObject_GetAttr(node, s_min), *high = low ? PyObject_GetAttr(node, s_max) : NULL;
    int ok = -1;
    if (high) {
        ok = PyLong_CheckExact(low) && _PyLong_Sign(low) >= 0;
        if (ok && high != Py_None) ok = PyLong_CheckExact(high) ? PyObject_RichCompareBool(high, low, Py_GE) : 0;
    }
    Py_XDECREF(low); Py_XDECREF(high);
    return ok;
}

/* One rule's walk for `passing`: 1 when every node passes, 0 when one may not, -1 on error. */
static int pass_rule(PyObject *expr, PyObject *const *cls, PyObject *modes, int max_depth, PyObject *names,
                     PyObject *seen, int *token_level, Stack *s)
{
    s->n = 0;
    if (stack_push(s, expr, 1) < 0) return -1;
    while (s->n) {
        PyObject *node = s->node[--s->n];
        int depth = s->depth[s->n], ok = 1;
        switch (kind_of(node, cls)) {
        case SEQ: case ALT: case REPEAT: {
            int kind = kind_of(node, cls);
            if (kind == REPEAT && (ok = good_bounds(node)) <= 0) return ok;
            PyObject *below = PyObject_GetAttr(node, kind == REPEAT ? s_item : s_items);
            if (!below) return -1;
            if (kind == REPEAT) {
                ok = depth < max_depth;
                if (ok && stack_push(s, below, depth + 1) < 0) ok = -1;
            } else if (!PyTuple_CheckExact(below)) {
                ok = 0;
            } else if (PyTuple_GET_SIZE(below)) {
                ok = depth < max_depth;
                if (ok && push_children(s, below, depth + 1) < 0) ok = -1;
            } else {
                ok = kind == SEQ;  /* an alternation of nothing is an error */
            }
            Py_DECREF(below);  /* its items stay alive: the node holds them */
            break;
        }
        case LITERAL: case SUBSTRINGS: ok = attr_is(node, s_text, plain_text); break;
        case REF: {
            PyObject *name = PyObject_GetAttr(node, s_name);
            ok = !name ? -1 : PySet_Contains(seen, name);  /* each name once, where first used */
            if (ok == 0) ok = PySet_Add(seen, name) < 0 || PyList_Append(names, name) < 0 ? -1 : 1;
            else if (ok > 0) ok = 1;
            Py_XDECREF(name);
            break;
        }
        case REGEX: {
            PyObject *mode = PyObject_GetAttr(node, s_mode);
            ok = mode ? PySequence_Contains(modes, mode) : -1;
            Py_XDECREF(mode);
            if (ok > 0) ok = attr_is(node, s_pattern, plain_text);
            break;
        }
        case JSON_EXCEPT: {
            PyObject *words = PyObject_GetAttr(node, s_words);
            if (!words) return -1;
            ok = PyTuple_CheckExact(words);
            for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(words); i++) ok = plain_text(PyTuple_GET_ITEM(words, i));
            Py_DECREF(words);
            break;
        }
        case ANY_TOKEN: *token_level = 1; break;
        default: ok = 0;  /* except! (its own checks raise), or a class of its own */
        }
        if (ok <= 0) return ok;
    }
    return 1;
}

/* passing(rules, classes, modes, defined, max_depth) -> (refs, token_level) | None: see the
 * module's comment; `defined` holds the rule names (a reference to another fails). */
static PyObject *passing(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *rules, *classes, *modes, *defined, *refs = NULL, *token_level = NULL, *result = NULL;
    int max_depth;
    if (!PyArg_ParseTuple(args, "O!O!OOi", &PyTuple_Type, &rules, &PyTuple_Type, &classes, &modes, &defined,
                          &max_depth))
        return NULL;
    PyObject *const *cls = ir_classes(classes, "passing");
    if (!cls) return NULL;
    Stack s = {0};
    int ok = 1;
    if (!(refs = PyDict_New()) || !(token_level = PyList_New(0))) goto done;
    for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(rules) && ok > 0; r++) {
        PyObject *rule = PyTuple_GET_ITEM(rules, r), *names;
        if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) != 2) { ok = 0; break; }
        if (!(names = PyList_New(0)) || PyDict_SetItem(refs, PyTuple_GET_ITEM(rule, 0), names) < 0) {
            Py_XDECREF(names);
            goto done;
        }
        Py_DECREF(names);  /* refs holds it */
        int vocabulary = 0;
        PyObject *seen = PySet_New(NULL);
        if (!seen) goto done;
        ok = pass_rule(PyTuple_GET_ITEM(rule, 1), cls, modes, max_depth, names, seen, &vocabulary, &s);
        Py_DECREF(seen);
        for (Py_ssize_t i = 0; ok > 0 && i < PyList_GET_SIZE(names); i++)
            ok = PySequence_Contains(defined, PyList_GET_ITEM(names, i));
        if (ok > 0 && vocabulary && PyList_Append(token_level, PyTuple_GET_ITEM(rule, 0)) < 0) goto done;
    }
    if (ok > 0) result = PyTuple_Pack(2, refs, token_level);
    else if (ok == 0) result = Py_NewRef(Py_None);
done:
    free(s.node); free(s.depth);
    Py_XDECREF(refs); Py_XDECREF(token_level);
    return result;
}

/* references(expr, classes, children) -> the names `expr` refers to, once per reference, in
 * the order of a stack walk that pushes a node's items first to last (the Python oracle's,
 * tests/check_reference.py). A node of another class is opened by `children`, and is a
 * reference itself when it is an instance of Ref. */
static PyObject *references(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *expr, *classes, *children, *keep = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "OO!O", &expr, &PyTuple_Type, &classes, &children))
        return NULL;
    PyObject *const *cls = ir_classes(classes, "references");
    if (!cls) return NULL;
    Stack s = {0};
    /* keep: every node's children, alive until the walk ends (a children callable may run
     * Python code that replaces another node's fields) */
    if (!(out = PyList_New(0)) || !(keep = PyList_New(0)) || stack_push(&s, expr, 0) < 0) goto fail;
    while (s.n) {
        PyObject *node = s.node[--s.n], *below;
        int kind = kind_of(node, cls);
        if (kind == REF || (kind < 0 && PyObject_IsInstance(node, cls[REF]) > 0)) {
            PyObject *name = PyObject_GetAttr(node, s_name);
            int bad = !name || PyList_Append(out, name) < 0;
            Py_XDECREF(name);
            if (bad) goto fail;
        }
        if (PyErr_Occurred()) goto fail;  /* from PyObject_IsInstance */
        if (kind == SEQ || kind == ALT) below = PyObject_GetAttr(node, s_items);
        else if (kind == REPEAT || kind == EXCEPT) below = PyObject_GetAttr(node, s_item);
        else if (kind < 0) below = PyObject_CallOneArg(children, node);
        else continue;  /* a leaf */
        if (below && PyList_Check(below)) Py_SETREF(below, PyList_AsTuple(below));  /* a copy no code can change */
        if (!below) goto fail;
        int bad = PyList_Append(keep, below) < 0;
        if (!bad && (kind == REPEAT || kind == EXCEPT)) {
            bad = stack_push(&s, below, 0) < 0;
        } else if (!bad && !PyTuple_Check(below)) {
            PyErr_SetString(PyExc_TypeError, "references: an IR node's children are not a tuple");
            bad = 1;
        } else if (!bad) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(below) && !bad; i++)
                bad = stack_push(&s, PyTuple_GET_ITEM(below, i), 0) < 0;
        }
        Py_DECREF(below);
        if (bad) goto fail;
    }
    free(s.node); free(s.depth);
    Py_DECREF(keep);
    return out;
fail:
    free(s.node); free(s.depth);
    Py_XDECREF(keep); Py_XDECREF(out);
    return NULL;
}

/* What a shape walk fills: the table numbering composite shapes, the references in walk
 * order (`used`), the names inside opaque nodes (a set), the terminals in order; `refs`
 * gives an opaque node's references; `too_deep` (an exception class) is raised past
 * `max_depth` nested Seq, Alt and Repeat nodes. */
typedef struct {
    PyObject *const *cls;
    PyObject *table, *used, *opaque, *terminals, *refs, *ref, *too_deep;
    int max_depth;
} Shaper;

static int append_attr(PyObject *list, PyObject *node, PyObject *attr)
{
    PyObject *value = PyObject_GetAttr(node, attr);
    int rc = value ? PyList_Append(list, value) : -1;
    Py_XDECREF(value);
    return rc;
}

/* The number of a composite shape's `key` (stolen) in the table: the one it has, or the next. */
static PyObject *numbered(Shaper *x, PyObject *key)
{
    if (!key) return NULL;
    PyObject *found = PyDict_GetItemWithError(x->table, key);
    if (found) { Py_DECREF(key); return Py_NewRef(found); }
    if (PyErr_Occurred() || !(found = PyLong_FromSsize_t(PyDict_GET_SIZE(x->table)))
        || PyDict_SetItem(x->table, key, found) < 0) {
        Py_DECREF(key); Py_XDECREF(found);
        return NULL;
    }
    Py_DECREF(key);
    return found;
}

/* The shape of a node that holds no node to walk (every class but Seq, Alt and Repeat). */
static PyObject *shape_leaf(Shaper *x, PyObject *expr, int kind)
{
    PyObject *const *cls = x->cls;
    switch (kind) {
    case EXCEPT: {  /* of a reference: (Except, -1, limit), numbered; of anything else: opaque */
        PyObject *item = PyObject_GetAttr(expr, s_item);
        if (!item) return NULL;
        int of_ref = kind_of(item, cls) == REF;
        int bad = of_ref && append_attr(x->used, item, s_name) < 0;
        Py_DECREF(item);
        if (bad) return NULL;
        if (!of_ref) break;
        PyObject *parts[3] = {Py_NewRef(cls[EXCEPT]), Py_NewRef(x->ref), PyObject_GetAttr(expr, s_limit)};
        return numbered(x, pack_new(3, parts));
    }
    case REF:
        return append_attr(x->used, expr, s_name) < 0 ? NULL : Py_NewRef(x->ref);
    case LITERAL: case SUBSTRINGS: {
        PyObject *parts[2] = {Py_NewRef(cls[kind]), PyObject_GetAttr(expr, s_text)};
        return pack_new(2, parts);
    }
    case REGEX: {
        if (PyList_Append(x->terminals, expr) < 0) return NULL;
        PyObject *parts[3] = {Py_NewRef(cls[REGEX]), PyObject_GetAttr(expr, s_pattern), NULL};
        if (parts[1]) parts[2] = PyObject_GetAttr(expr, s_mode);
        return pack_new(3, parts);
    }
    case JSON_EXCEPT: {
        if (PyList_Append(x->terminals, expr) < 0) return NULL;
        PyObject *parts[2] = {Py_NewRef(cls[JSON_EXCEPT]), PyObject_GetAttr(expr, s_words)};
        return pack_new(2, parts);
    }
    case ANY_TOKEN:
        return PyTuple_Pack(1, cls[ANY_TOKEN]);
    default:
        break;
    }
    /* opaque (a class of its own, an except! of something but a reference): (None, expr),
     * its references kept apart */
    PyObject *names = PyObject_CallOneArg(x->refs, expr), *it = names ? PyObject_GetIter(names) : NULL, *name;
    Py_XDECREF(names);
    if (!it) return NULL;
    while ((name = PyIter_Next(it))) {
        int bad = PySet_Add(x->opaque, name) < 0;
        Py_DECREF(name);
        if (bad) break;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? NULL : PyTuple_Pack(2, Py_None, expr);
}

/* A Seq, Alt or Repeat whose parts are being shaped: `below` its items (a Repeat's: its
 * item), `key` the shape being filled (Seq, Alt: (class, the items' shapes...); Repeat:
 * (Repeat, the item's shape, min, max)), `done` the parts shaped so far. */
typedef struct { PyObject *node, *below, *key; Py_ssize_t done; int kind; } Frame;
typedef struct { Frame *v; size_t n, cap; } Frames;

/* Start shaping `expr`: a Seq, Alt or Repeat becomes a frame on `st`; any other node is
 * shaped at once, into *out. -1 on error. */
static int shape_open(Shaper *x, Frames *st, PyObject *expr, PyObject **out)
{
    int kind = kind_of(expr, x->cls);
    if (kind != SEQ && kind != ALT && kind != REPEAT) {
        *out = shape_leaf(x, expr, kind);
        return *out ? 0 : -1;
    }
    if (st->n >= (size_t)x->max_depth) {  /* a shape nests its tuples as deep: hashing one recurses in C */
        PyErr_Format(x->too_deep, "an expression nests deeper than %d levels", x->max_depth);
        return -1;
    }
    if (st->n == st->cap) {  /* doubled from 64 */
        size_t cap = st->cap ? 2 * st->cap : 64;
        Frame *more = cap <= SIZE_MAX / sizeof(Frame) ? realloc(st->v, cap * sizeof(Frame)) : NULL;
        if (!more) { PyErr_NoMemory(); return -1; }
        st->v = more; st->cap = cap;
    }
    PyObject *below = PyObject_GetAttr(expr, kind == REPEAT ? s_item : s_items), *key;
    if (!below) return -1;
    if (kind != REPEAT && !PyTuple_Check(below)) {
        PyErr_SetString(PyExc_TypeError, "shape: an IR node's items are not a tuple");
        Py_DECREF(below);
        return -1;
    }
    if (!(key = PyTuple_New(kind == REPEAT ? 4 : PyTuple_GET_SIZE(below) + 1))) { Py_DECREF(below); return -1; }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(x->cls[kind]));
    st->v[st->n++] = (Frame){expr, below, key, 0, kind};
    return 0;
}

/* The shape of `expr`, depth first and left to right (the order of `used`, `terminals` and
 * of the table's numbers), with a stack of its own: never a RecursionError, and past
 * `max_depth` levels the precise error. */
static PyObject *shape_of(Shaper *x, PyObject *expr)
{
    Frames st = {0};
    PyObject *result = NULL;
    if (shape_open(x, &st, expr, &result) < 0) goto fail;
    while (st.n) {
        Frame *f = &st.v[st.n - 1];
        if (result) {  /* a part's shape, finished: into its place in the key */
            PyTuple_SET_ITEM(f->key, ++f->done, result);
            result = NULL;
        }
        Py_ssize_t parts = f->kind == REPEAT ? 1 : PyTuple_GET_SIZE(f->below);
        if (f->done < parts) {
            PyObject *next = f->kind == REPEAT ? f->below : PyTuple_GET_ITEM(f->below, f->done);
            if (shape_open(x, &st, next, &result) < 0) goto fail;
            continue;
        }
        PyObject *key = f->key, *node = f->node;
        int kind = f->kind;
        Py_DECREF(f->below);
        st.n--;
        if (kind == REPEAT) {  /* not numbered: a tuple as a leaf's is */
            PyObject *low = PyObject_GetAttr(node, s_min), *high = low ? PyObject_GetAttr(node, s_max) : NULL;
            if (!high) { Py_XDECREF(low); Py_DECREF(key); goto fail; }
            PyTuple_SET_ITEM(key, 2, low);
            PyTuple_SET_ITEM(key, 3, high);
            result = key;
        } else if (!(result = numbered(x, key))) {
            goto fail;
        }
    }
    free(st.v);
    return result;
fail:
    Py_XDECREF(result);
    for (size_t i = 0; i < st.n; i++) {  /* a key's unfilled slots are NULL: its dealloc skips them */
        Py_DECREF(st.v[i].below);
        Py_DECREF(st.v[i].key);
    }
    free(st.v);
    return NULL;
}

/* shape(expr, classes, table, used, opaque, terminals, references, ref, too_deep, max_depth) -> the shape of `expr` */
static PyObject *shape(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *expr, *classes;
    Shaper x;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!O!OOOi", &expr, &PyTuple_Type, &classes, &PyDict_Type, &x.table,
                          &PyList_Type, &x.used, &PySet_Type, &x.opaque, &PyList_Type, &x.terminals, &x.refs, &x.ref,
                          &x.too_deep, &x.max_depth))
        return NULL;
    if (!PyExceptionClass_Check(x.too_deep) || x.max_depth < 1) {
        PyErr_SetString(PyExc_TypeError, "shape: too_deep is an exception class and max_depth at least 1");
        return NULL;
    }
    if (!(x.cls = ir_classes(classes, "shape"))) return NULL;
    return shape_of(&x, expr);
}

static PyMethodDef methods[] = {
    {"too_deep", too_deep, METH_VARARGS,
     "too_deep(rules, classes, children, max_depth) -> the index of the first rule nesting expressions deeper "
     "than max_depth levels, or -1 (rules: a tuple of (name, expression); classes: the IR's ten, see the "
     "module's comment; children: opens a node of any other class)."},
    {"passing", passing, METH_VARARGS,
     "passing(rules, classes, modes, defined, max_depth) -> (refs, token_level) | None: each rule's references "
     "in order of first use and the rules holding any!, when every node passes check._check_rule's checks; None "
     "when one may not."},
    {"references", references, METH_VARARGS,
     "references(expr, classes, children) -> list of the names `expr` refers to, once per reference (classes: the "
     "IR's ten, see the module's comment; children: opens a node of any other class)."},
    {"shape", shape, METH_VARARGS,
     "shape(expr, classes, table, used, opaque, terminals, references, ref, too_deep, max_depth) -> the shape of "
     "`expr` (see "
     "frontends/jsonschema/sharing.py's _Shapes): composite shapes numbered in `table` (a dict), references "
     "appended to `used` in walk order (each shaped as `ref`), an opaque node's `references(node)` added to the "
     "set `opaque`, Regex and JsonStringExcept terminals appended to `terminals` in order; too_deep(message) raised "
     "past max_depth nested Seq, Alt and Repeat nodes."},
    {"inline_rules", inline_rules, METH_VARARGS,
     "inline_rules(rules, inline, max_nesting, classes, references) -> the rules (a dict, in their order) with "
     "the references to the rules of `inline` replaced by their bodies, chains at most max_nesting deep, "
     "sequences and alternations flattened (the JSON Schema front end's single-use helpers)."},
    {"substituted", substituted, METH_VARARGS,
     "substituted(expr, refs, terminals, classes) -> `expr` with the references `refs` (a dict name -> node) has a "
     "replacement for (also as the operand of except!) and the terminals `terminals` (a dict (Regex, pattern, "
     "mode) or (JsonStringExcept, words) -> node) has one for replaced; unchanged subtrees are the same objects."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "grammarc.ir._walk", "The checks' walks over every node (see grammarc.ir.check).", -1,
    methods,
};

PyObject *s_items, *s_item, *s_text, *s_name, *s_min, *s_max, *s_mode, *s_pattern, *s_words, *s_limit, *s_span;

PyMODINIT_FUNC PyInit__walk(void)
{
    static const char *names[] = {"items", "item", "text", "name", "min", "max", "mode", "pattern", "words", "limit",
                                  "span"};
    PyObject **slots[] = {&s_items, &s_item, &s_text, &s_name, &s_min, &s_max, &s_mode, &s_pattern, &s_words,
                          &s_limit, &s_span};
    for (int i = 0; i < 11; i++)
        if (!*slots[i] && !(*slots[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    return PyModule_Create(&module);
}
