/* grammarc.ir._walk's rewriting walks (the module table is _walk.c's): the JSON Schema
 * front end's passes that rebuild rule bodies, in C (in Python, a call per node was a fifth
 * of translating a schema).
 *
 * inline_rules - the rules with single-use helpers inlined (builder._inline_single_use).
 * substituted  - an expression with references and terminals replaced (sharing.py).
 *
 * Both recurse as the Python walks did (Py_EnterRecursiveCall: the front ends' bodies nest a
 * few hundred levels at most). The Python versions are the oracle (tests/check_reference.py,
 * tests/test_inline_rules.py).
 */

#include "_walk.h"

/* ------------------------------------------------------------------ inlining */

/* What inlining reads: the rules (a dict name -> body), the names to inline (a set), how
 * deep a chain of them is inlined, the names where a chain was cut (a list, filled), and
 * `refs`, an opaque node's references. */
typedef struct {
    PyObject *const *cls;
    PyObject *rules, *inline_names, *cut, *refs;
    int max_nesting;
} Inliner;

/* The leaves inlining never changes (builder._KEPT_LEAVES: their exact classes). */
static int kept_leaf(int kind)
{
    return kind == LITERAL || kind == REGEX || kind == JSON_EXCEPT || kind == SUBSTRINGS || kind == ANY_TOKEN;
}

/* 1 when the reference `node` names a rule to inline, 0 when not, -1 on error. */
static int names_inlined(Inliner *x, PyObject *node)
{
    PyObject *name = PyObject_GetAttr(node, s_name);
    if (!name) return -1;
    int found = PySet_Contains(x->inline_names, name);
    Py_DECREF(name);
    return found;
}

/* 1 when `node` (of class `kind`) is kept as it is with no walk: a kept leaf, or a reference
 * to a rule not inlined; 0 when it is walked; -1 on error. */
static int kept(Inliner *x, PyObject *node, int kind)
{
    if (kept_leaf(kind)) return 1;
    if (kind != REF) return 0;
    int found = names_inlined(x, node);
    return found < 0 ? -1 : !found;
}

static PyObject *inlined(Inliner *x, PyObject *expr, int level);

/* A Seq's or Alt's items inlined, a nested one of the same class flattened into its parent;
 * the node itself when nothing changed. */
static PyObject *inlined_items(Inliner *x, PyObject *expr, int kind, int level)
{
    PyObject *items = PyObject_GetAttr(expr, s_items), *out = NULL, *result = NULL;
    if (!items) return NULL;
    if (!PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "inline: an IR node's items are not a tuple");
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int changed = kind == SEQ && n == 1;  /* a sequence of one item becomes the item */
    if (!(out = PyList_New(0))) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i), *fresh;
        int sub = kind_of(item, x->cls), keep;
        if (sub == REPEAT) {  /* most repeat a leaf (optional whitespace: everywhere) */
            PyObject *inner = PyObject_GetAttr(item, s_item);
            if (!inner) goto done;
            keep = kept(x, inner, kind_of(inner, x->cls));
            Py_DECREF(inner);
        } else {
            keep = kept(x, item, sub);
        }
        if (keep < 0) goto done;
        if (keep) {
            if (PyList_Append(out, item) < 0) goto done;
            continue;
        }
        if (!(fresh = inlined(x, item, level))) goto done;
        int bad;
        if (kind_of(fresh, x->cls) == kind) {  /* flattened */
            PyObject *inner = PyObject_GetAttr(fresh, s_items);
            bad = !inner || !PyTuple_Check(inner)
                  || PyList_SetSlice(out, PyList_GET_SIZE(out), PyList_GET_SIZE(out), inner) < 0;
            if (inner && !PyTuple_Check(inner))
                PyErr_SetString(PyExc_TypeError, "inline: an IR node's items are not a tuple");
            Py_XDECREF(inner);
            changed = 1;
        } else {
            bad = PyList_Append(out, fresh) < 0;
            changed = changed || fresh != item;
        }
        Py_DECREF(fresh);
        if (bad) goto done;
    }
    if (!changed) {
        result = Py_NewRef(expr);
    } else if (kind == SEQ && PyList_GET_SIZE(out) == 1) {
        result = Py_NewRef(PyList_GET_ITEM(out, 0));
    } else {
        PyObject *tuple = PyList_AsTuple(out);
        result = tuple ? PyObject_CallOneArg(x->cls[kind], tuple) : NULL;
        Py_XDECREF(tuple);
    }
done:
    Py_DECREF(items);
    Py_XDECREF(out);
    return result;
}

/* The names among `expr`'s references that are to be inlined, added to the cut ones: a node
 * inlining does not enter (an except!, a class of its own) keeps its references as rules. */
static int cut_inside(Inliner *x, PyObject *expr)
{
    PyObject *names = PyObject_CallOneArg(x->refs, expr), *it = names ? PyObject_GetIter(names) : NULL, *name;
    Py_XDECREF(names);
    if (!it) return -1;
    while ((name = PyIter_Next(it))) {
        int found = PySet_Contains(x->inline_names, name);
        int bad = found < 0 || (found && PyList_Append(x->cut, name) < 0);
        Py_DECREF(name);
        if (bad) break;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *inlined_body(Inliner *x, PyObject *expr, int level)
{
    int kind = kind_of(expr, x->cls);
    switch (kind) {
    case REF: {
        PyObject *name = PyObject_GetAttr(expr, s_name), *body;
        if (!name) return NULL;
        int found = PySet_Contains(x->inline_names, name);
        if (found > 0 && level < x->max_nesting) {
            body = PyDict_GetItemWithError(x->rules, name);  /* borrowed */
            if (!body && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, name);
            Py_DECREF(name);
            return body ? inlined(x, body, level + 1) : NULL;
        }
        if (found > 0 && PyList_Append(x->cut, name) < 0) found = -1;  /* the chain is cut here */
        Py_DECREF(name);
        return found < 0 ? NULL : Py_NewRef(expr);
    }
    case SEQ: case ALT:
        return inlined_items(x, expr, kind, level);
    case REPEAT: {
        PyObject *item = PyObject_GetAttr(expr, s_item), *fresh, *result = NULL;
        if (!item) return NULL;
        int keep = kept(x, item, kind_of(item, x->cls));
        if (keep != 0) {
            Py_DECREF(item);
            return keep < 0 ? NULL : Py_NewRef(expr);
        }
        if ((fresh = inlined(x, item, level))) {
            if (fresh == item) {
                result = Py_NewRef(expr);
            } else {
                PyObject *low = PyObject_GetAttr(expr, s_min), *high = low ? PyObject_GetAttr(expr, s_max) : NULL;
                if (high) result = PyObject_CallFunctionObjArgs(x->cls[REPEAT], fresh, low, high, NULL);
                Py_XDECREF(low); Py_XDECREF(high);
            }
            Py_DECREF(fresh);
        }
        Py_DECREF(item);
        return result;
    }
    default:
        if (!kept_leaf(kind) && cut_inside(x, expr) < 0) return NULL;
        return Py_NewRef(expr);
    }
}

static PyObject *inlined(Inliner *x, PyObject *expr, int level)
{
    if (Py_EnterRecursiveCall(" while inlining rules")) return NULL;  /* as deep as the Python walk went */
    PyObject *result = inlined_body(x, expr, level);
    Py_LeaveRecursiveCall();
    return result;
}

/* inline_rules(rules, inline, max_nesting, classes, references) -> the rules, in their order,
 * with each reference to a rule of `inline` replaced by that rule's body (chains of them at
 * most max_nesting levels deep; where one is cut, that rule stays, walked in turn) and
 * sequences and alternations flattened; the rules of `inline` that nothing cut are left out.
 * Unchanged bodies are the same objects. The Python version is the oracle
 * (tests/check_reference.py's inline_rules). */
PyObject *inline_rules(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *classes, *out = NULL, *result = NULL, *name, *body;
    Inliner x;
    if (!PyArg_ParseTuple(args, "O!O!iO!O", &PyDict_Type, &x.rules, &PySet_Type, &x.inline_names, &x.max_nesting,
                          &PyTuple_Type, &classes, &x.refs))
        return NULL;
    if (!(x.cls = ir_classes(classes, "inline_rules"))) return NULL;
    if (!(x.cut = PyList_New(0)) || !(out = PyDict_New())) goto done;
    Py_ssize_t pos = 0;
    while (PyDict_Next(x.rules, &pos, &name, &body)) {
        int skip = PySet_Contains(x.inline_names, name);
        if (skip < 0) goto done;
        if (skip) continue;
        Py_INCREF(name); Py_INCREF(body);  /* the walk runs Python code (constructors) */
        PyObject *fresh = inlined(&x, body, 0);
        int bad = !fresh || PyDict_SetItem(out, name, fresh) < 0;
        Py_DECREF(name); Py_DECREF(body); Py_XDECREF(fresh);
        if (bad) goto done;
    }
    while (PyList_GET_SIZE(x.cut)) {  /* helpers where a chain was cut: rules of their own */
        Py_ssize_t last = PyList_GET_SIZE(x.cut) - 1;
        name = Py_NewRef(PyList_GET_ITEM(x.cut, last));
        int bad = PyList_SetSlice(x.cut, last, last + 1, NULL) < 0, has = bad ? -1 : PyDict_Contains(out, name);
        if (has == 0) {
            body = PyDict_GetItemWithError(x.rules, name);
            if (!body && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, name);
            PyObject *fresh = body ? inlined(&x, body, 0) : NULL;
            has = !fresh || PyDict_SetItem(out, name, fresh) < 0 ? -1 : 1;
            Py_XDECREF(fresh);
        }
        Py_DECREF(name);
        if (has < 0) goto done;
    }
    if (!(result = PyDict_New())) goto done;
    pos = 0;
    while (PyDict_Next(x.rules, &pos, &name, &body)) {  /* in the rules' order */
        PyObject *fresh = PyDict_GetItemWithError(out, name);
        if ((!fresh && PyErr_Occurred()) || (fresh && PyDict_SetItem(result, name, fresh) < 0)) {
            Py_CLEAR(result);
            goto done;
        }
    }
done:
    Py_XDECREF(x.cut);
    Py_XDECREF(out);
    return result;
}

/* ------------------------------------------------------------------ substitution */


/* What a substitution replaces: references by name (`refs`, a dict name -> node; also the
 * operand of an except!), terminals by their key (`terminals`, a dict key -> node, the key
 * (Regex, pattern, mode) or (JsonStringExcept, words)). */
typedef struct { PyObject *const *cls; PyObject *refs, *terminals; } Substituter;

static PyObject *substituted_of(Substituter *x, PyObject *expr);

/* refs.get(node.name, node) for the reference `node` (a new reference). */
static PyObject *renamed(Substituter *x, PyObject *node)
{
    PyObject *name = PyObject_GetAttr(node, s_name);
    if (!name) return NULL;
    PyObject *found = PyDict_GetItemWithError(x->refs, name);
    Py_DECREF(name);
    if (!found && PyErr_Occurred()) return NULL;
    return Py_NewRef(found ? found : node);
}

/* The node's class called with (first, the node's fields named in `names`..., its span). */
static PyObject *rebuilt(PyObject *cls, PyObject *first, PyObject *node, PyObject *const *names, int n)
{
    PyObject *args[4] = {first, NULL, NULL, NULL}, *result = NULL;
    int got = 1;
    for (int i = 0; i < n; i++, got++)
        if (!(args[got] = PyObject_GetAttr(node, names[i]))) goto done;
    if (!(args[got] = PyObject_GetAttr(node, s_span))) goto done;
    got++;
    result = PyObject_Vectorcall(cls, args, (size_t)got, NULL);
done:
    for (int i = 1; i < got; i++) Py_XDECREF(args[i]);
    return result;
}

static PyObject *substituted_body(Substituter *x, PyObject *expr)
{
    PyObject *const *cls = x->cls;
    int kind = kind_of(expr, cls);
    switch (kind) {
    case REF:
        return renamed(x, expr);
    case SEQ: case ALT: {
        PyObject *items = PyObject_GetAttr(expr, s_items), *result = NULL;
        if (!items) return NULL;
        if (!PyTuple_Check(items)) {
            PyErr_SetString(PyExc_TypeError, "substituted: an IR node's items are not a tuple");
            Py_DECREF(items);
            return NULL;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(items), i;
        int plain_regex = PyDict_GET_SIZE(x->terminals) == 0;  /* no terminal to replace */
        for (i = 0; i < n; i++) {
            PyObject *item = PyTuple_GET_ITEM(items, i), *fresh;
            int sub = kind_of(item, cls);
            if (sub == LITERAL || (sub == REGEX && plain_regex)) continue;  /* most items */
            if (!(fresh = sub == REF ? renamed(x, item) : substituted_of(x, item))) goto done;
            if (fresh == item) { Py_DECREF(fresh); continue; }
            /* the first item that changed: the ones before it as they are, the rest substituted */
            PyObject *parts = PyTuple_New(n);
            if (!parts) { Py_DECREF(fresh); goto done; }
            for (Py_ssize_t j = 0; j < i; j++) PyTuple_SET_ITEM(parts, j, Py_NewRef(PyTuple_GET_ITEM(items, j)));
            PyTuple_SET_ITEM(parts, i, fresh);
            for (Py_ssize_t j = i + 1; j < n; j++) {
                PyObject *later = substituted_of(x, PyTuple_GET_ITEM(items, j));
                if (!later) { Py_DECREF(parts); goto done; }
                PyTuple_SET_ITEM(parts, j, later);
            }
            result = rebuilt(cls[kind], parts, expr, NULL, 0);
            Py_DECREF(parts);
            goto done;
        }
        result = Py_NewRef(expr);
    done:
        Py_DECREF(items);
        return result;
    }
    case REGEX: case JSON_EXCEPT: {
        if (PyDict_GET_SIZE(x->terminals) == 0) return Py_NewRef(expr);
        PyObject *parts[3] = {Py_NewRef(cls[kind]), NULL, NULL};
        if ((parts[1] = PyObject_GetAttr(expr, kind == REGEX ? s_pattern : s_words)) && kind == REGEX)
            parts[2] = PyObject_GetAttr(expr, s_mode);
        PyObject *key = pack_new(kind == REGEX ? 3 : 2, parts);
        if (!key) return NULL;
        PyObject *found = PyDict_GetItemWithError(x->terminals, key);
        Py_DECREF(key);
        if (!found && PyErr_Occurred()) return NULL;
        return Py_NewRef(found ? found : expr);
    }
    case REPEAT: {
        PyObject *item = PyObject_GetAttr(expr, s_item), *fresh, *result = NULL;
        if (!item) return NULL;
        fresh = kind_of(item, cls) == REF ? renamed(x, item) : substituted_of(x, item);
        Py_DECREF(item);
        if (!fresh) return NULL;
        if (fresh == item) {
            result = Py_NewRef(expr);
        } else {
            PyObject *const names[2] = {s_min, s_max};
            result = rebuilt(cls[REPEAT], fresh, expr, names, 2);
        }
        Py_DECREF(fresh);
        return result;
    }
    case EXCEPT: {
        PyObject *item = PyObject_GetAttr(expr, s_item), *found = NULL;
        if (!item) return NULL;
        if (kind_of(item, cls) == REF) {
            PyObject *name = PyObject_GetAttr(item, s_name);
            found = name ? PyDict_GetItemWithError(x->refs, name) : NULL;
            Py_XDECREF(name);
            if (!found && PyErr_Occurred()) { Py_DECREF(item); return NULL; }
        }
        Py_DECREF(item);
        if (!found) return Py_NewRef(expr);
        PyObject *const names[1] = {s_limit};
        return rebuilt(cls[EXCEPT], found, expr, names, 1);
    }
    default:  /* the other leaves, and nodes of classes of their own: as they are */
        return Py_NewRef(expr);
    }
}

static PyObject *substituted_of(Substituter *x, PyObject *expr)
{
    if (Py_EnterRecursiveCall(" while substituting in a rule")) return NULL;  /* as deep as the Python walk went */
    PyObject *result = substituted_body(x, expr);
    Py_LeaveRecursiveCall();
    return result;
}

/* substituted(expr, refs, terminals, classes) -> `expr` with references and terminals
 * replaced (see Substituter); unchanged subtrees are the same objects. The Python version
 * is the oracle (tests/check_reference.py's substituted). */
PyObject *substituted(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *expr, *classes;
    Substituter x;
    if (!PyArg_ParseTuple(args, "OO!O!O!", &expr, &PyDict_Type, &x.refs, &PyDict_Type, &x.terminals, &PyTuple_Type,
                          &classes))
        return NULL;
    if (!(x.cls = ir_classes(classes, "substituted"))) return NULL;
    return substituted_of(&x, expr);
}
