"""Records built and hashed in the compiled core (grammarc.allocation._slots).

`slot_init`'s ``__init__`` must bind its arguments exactly as the Python function it
replaced (its oracle, `_oracle_init`, below): the same fields for every call that binds, the
same TypeError (same message) for every call that does not. `remember_hash` must hash as the
Python ``__hash__`` it replaced: the int kept in the slot, else the computation's."""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import gc
import inspect
import pickle
import weakref
from dataclasses import MISSING, dataclass, field, fields

import pytest
from hypothesis import given, settings, strategies as st

from grammarc.allocation import _slots, remember_hash, slot_init
from grammarc.frontends.jsonschema.documents import Node
from grammarc.ir import EXPR_TYPES, Alt, Literal, Ref, Repeat, Seq, nodes
from grammarc.ir import _canon
from grammarc.lowering.lr import Production


def _oracle_init(cls: type):
    """The Python ``__init__`` slot_init made before it was compiled: each field set through its
    slot's member descriptor, the arguments bound by the interpreter."""
    params, lines, env = [], [], {}
    for f in fields(cls):
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        params.append(f.name if f.default is MISSING else f"{f.name}={f.default!r}")
        lines.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines or ["    pass"]), env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@slot_init
@dataclass(frozen=True, slots=True)
class Wide:
    """Four fields, two of them with defaults (the missing-argument lists of three names)."""

    a: object
    b: object
    c: object
    d: object = 4
    e: object = "e"


@slot_init
@dataclass(frozen=True, slots=True)
class Empty:
    pass


@slot_init
@dataclass(frozen=True, slots=True)
class AllDefaults:
    x: object = None
    y: object = 0


CLASSES = (*EXPR_TYPES, Node, Production, Wide, Empty, AllDefaults)
ORACLES = {cls: _oracle_init(cls) for cls in CLASSES}


def _outcome(make):
    """("ok", fields) or ("error", type, message) of building a record with `make`."""
    try:
        made = make()
    except TypeError as error:
        return ("error", type(error), str(error))
    return ("ok", made)


def _values(obj, cls) -> list:
    return [getattr(obj, f.name, "<unset>") for f in fields(cls)]


_ARG = st.one_of(st.none(), st.integers(-2, 2), st.text(max_size=2), st.tuples())


@st.composite
def _calls(draw):
    """A class and a call of it: some positional arguments (too many, too few), keywords
    named after fields, ``self``, an unknown name or no str at all."""
    cls = draw(st.sampled_from(CLASSES))
    names = [f.name for f in fields(cls)]
    args = draw(st.lists(_ARG, max_size=len(names) + 2))
    keys = st.sampled_from([*names, "self", "bogus", 1] if draw(st.integers(0, 9)) == 0 else [*names, *names, "self", "bogus"])
    kwargs = draw(st.dictionaries(keys, _ARG, max_size=len(names) + 1))
    return cls, args, kwargs


@given(_calls())
@settings(max_examples=600, deadline=None)
def test_building_binds_as_the_python_init(call) -> None:
    cls, args, kwargs = call
    oracle = ORACLES[cls]

    def by_oracle():
        obj = object.__new__(cls)
        oracle(obj, *args, **kwargs)
        return obj

    theirs = _outcome(by_oracle)
    # called (the class's vectorcall), and through type.__call__ (tp_init, keywords in a dict)
    for mine in (_outcome(lambda: cls(*args, **kwargs)), _outcome(lambda: type.__call__(cls, *args, **kwargs))):
        if mine[0] == "ok" and theirs[0] == "ok":
            assert _values(mine[1], cls) == _values(theirs[1], cls)
        else:
            assert mine == theirs


@given(_calls(), st.integers(0, 3))
@settings(max_examples=400, deadline=None)
def test_calling_init_itself_binds_as_the_python_init(call, where) -> None:
    """``Cls.__init__(...)`` with the object first, passed by name, missing, or of another
    class (each field's descriptor refuses it as the Python setters did)."""
    cls, args, kwargs = call
    target = [object.__new__(cls), object.__new__(cls)]
    if where == 0:
        args = [target, *args]
    elif where == 1:
        kwargs = {**kwargs, "self": target}
    elif where == 2:
        args = [Literal("x") if cls is not Literal else Ref("x"), *args]

    def run(init, obj):
        real_args = [obj if a is target else a for a in args]
        real_kwargs = {k: obj if v is target else v for k, v in kwargs.items()}
        init(*real_args, **real_kwargs)
        return obj

    mine = _outcome(lambda: run(cls.__init__, target[0]))
    theirs = _outcome(lambda: run(ORACLES[cls], target[1]))
    if mine[0] == "ok" and theirs[0] == "ok":
        assert _values(mine[1], cls) == _values(theirs[1], cls)
    else:
        assert mine == theirs


def test_the_messages_python_gives() -> None:
    """A few by hand (the oracle could share a mistake with the test's reading of it)."""
    cases = [
        (lambda: Seq(), "Seq.__init__() missing 1 required positional argument: 'items'"),
        (lambda: Wide(), "Wide.__init__() missing 3 required positional arguments: 'a', 'b', and 'c'"),
        (lambda: Wide(1, c=2), "Wide.__init__() missing 1 required positional argument: 'b'"),
        (lambda: Wide(b=1), "Wide.__init__() missing 2 required positional arguments: 'a' and 'c'"),
        (lambda: Seq((), None, 3), "Seq.__init__() takes from 2 to 3 positional arguments but 4 were given"),
        (lambda: Empty(1), "Empty.__init__() takes 1 positional argument but 2 were given"),
        (lambda: Seq((), items=()), "Seq.__init__() got multiple values for argument 'items'"),
        (lambda: Seq((), self=1), "Seq.__init__() got multiple values for argument 'self'"),
        (lambda: Seq((), itemz=()), "Seq.__init__() got an unexpected keyword argument 'itemz'"),
        (lambda: Seq((), **{1: 2}), "keywords must be strings"),  # as the call through a dict said
        (lambda: Seq.__init__(), "Seq.__init__() missing 2 required positional arguments: 'self' and 'items'"),
        (lambda: Seq.__init__(Literal("a"), ()), "descriptor 'items' for 'Seq' objects doesn't apply to a 'Literal' object"),
    ]
    for make, message in cases:
        with pytest.raises(TypeError) as caught:
            make()
        assert str(caught.value) == message


def test_records_stay_dataclasses() -> None:
    """fields, replace, repr, eq, copy and pickling see the same records; the signature is the
    dataclass's."""
    node = Repeat(Literal("a"), max=3)
    assert [f.name for f in fields(node)] == ["item", "min", "max", "span"]
    assert dataclasses.replace(node, min=1) == Repeat(Literal("a"), 1, 3)
    assert repr(node) == "Repeat(item=Literal(text='a'), min=0, max=3)"
    assert pickle.loads(pickle.dumps(node)) == node == copy.deepcopy(node) == copy.copy(node)
    assert str(inspect.signature(Wide)) == "(a: 'object', b: 'object', c: 'object', d: 'object' = 4, e: 'object' = 'e') -> None"
    assert Wide.__init__.__qualname__ == "Wide.__init__" and Wide.__init__.__name__ == "__init__"
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.min = 2
    again = object.__new__(Repeat)
    Repeat.__init__(again, Literal("b"), 2)
    node.__init__(Literal("b"), 2)  # a second __init__ replaces the fields, as the setters did
    assert node == again == Repeat(Literal("b"), 2)


def test_subclasses_build_with_their_own_fields_or_their_base_ones() -> None:
    class Mine(Seq):  # not a dataclass: binds through Seq's init
        __slots__ = ()

    @dataclass(frozen=True, slots=True)
    class Labelled(Alt):  # a dataclass of its own: its own generated __init__
        label: str = "x"

    @slot_init
    @dataclass(frozen=True, slots=True)
    class Tagged(Seq):  # and with slot_init too
        tag: int = 0

    assert Mine((Literal("a"),)).items == (Literal("a"),) and type(Mine(items=())) is Mine
    with pytest.raises(TypeError, match=r"Seq.__init__\(\) missing 1 required"):
        Mine()
    assert Labelled((), None, "y").label == "y"
    tagged = Tagged((Ref("r"),), tag=3)
    assert (tagged.items, tagged.tag, tagged.span) == ((Ref("r"),), 3, None)
    with pytest.raises(TypeError, match=r"Tagged.__init__\(\) got an unexpected keyword argument 'label'"):
        Tagged((), label=1)
    assert hash(Mine((Literal("a"),))) == hash(Seq((Literal("a"),)))


def test_a_reassigned_init_is_the_one_called() -> None:
    """CPython resets the class's tp_init when ``__init__`` is assigned; the compiled binder
    also looks ``__init__`` up on every call, so what the class says is what runs."""

    @slot_init
    @dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0

    @slot_init
    @dataclass(frozen=True, slots=True)
    class Point3(Point):
        z: int = 0

    class Loose(Point):
        __slots__ = ()

    compiled = Point.__init__
    calls = []

    def logged(self, *args, **kwargs):
        calls.append((args, kwargs))
        compiled(self, *args, **kwargs)

    Point.__init__ = logged
    assert Point(1, y=2) == Point(1, 2) and Loose(5).x == 5
    assert calls == [((1,), {"y": 2}), ((1, 2), {}), ((5,), {})]
    assert Point3(1, 2, 3).z == 3 and len(calls) == 3  # its own init
    Point.__init__ = compiled
    assert Point(7).x == 7 and len(calls) == 3
    Point.__init__ = lambda self, x: compiled(self, x, x)
    assert Point(4).y == 4

    class Other:  # a class the binder does not know: given the binder as its tp_init
        def __init__(self, x):
            calls.append(x)

    _TP_INIT = 37 * ctypes.sizeof(ctypes.c_void_p)  # PyTypeObject.tp_init (CPython 3.8 to 3.13)

    def tp_init(cls):
        return ctypes.c_void_p.from_address(id(cls) + _TP_INIT)

    Point.__init__ = compiled  # CPython's slot_tp_init again (it calls the compiled init)
    assert tp_init(Seq).value == tp_init(Wide).value != tp_init(Point).value == tp_init(Loose).value == tp_init(Other).value
    saved = tp_init(Other).value
    tp_init(Other).value = tp_init(Wide).value
    try:
        Other(9)
        assert calls[-1] == 9  # the class's own __init__, called as slot_tp_init would
        Other.__init__ = lambda self, x: 1
        tp_init(Other).value = tp_init(Wide).value
        with pytest.raises(TypeError, match="should return None"):
            Other(1)
    finally:
        tp_init(Other).value = saved


def test_a_class_called_directly_checks_how_it_makes_objects() -> None:
    """The class's vectorcall (object.__new__ and the binder, without type_call) stands only
    while ``__new__`` and ``__init__`` are what it replaces: CPython does not reset it when they
    change, so each call checks, and goes through type_call where they changed."""

    @slot_init
    @dataclass(frozen=True, slots=True)
    class Pair:
        a: object
        b: object = None

    made = []

    def new(cls, *args, **kwargs):
        made.append((args, kwargs))
        return object.__new__(cls)

    _TP_VECTORCALL = 50 * ctypes.sizeof(ctypes.c_void_p)  # PyTypeObject.tp_vectorcall (CPython 3.8 to 3.13)
    assert ctypes.c_void_p.from_address(id(Pair) + _TP_VECTORCALL).value  # the compiled one
    assert Pair(1, b=2) == Pair(a=1, b=2) and made == []
    Pair.__new__ = new
    assert Pair(1, b=2).b == 2 and made == [((1,), {"b": 2})]
    with pytest.raises(TypeError, match=r"Pair.__init__\(\) got an unexpected keyword argument 'c'"):
        Pair(1, c=3)
    assert len(made) == 2
    del Pair.__init__  # object.__init__ now: nothing set
    unset = Pair(5)
    assert len(made) == 3 and not hasattr(unset, "a")


def test_inits_of_dropped_classes_are_collected() -> None:
    def make():
        @slot_init
        @dataclass(frozen=True, slots=True)
        class Gone:
            a: int

        Gone(1)
        return weakref.ref(Gone)

    ref = make()
    gc.collect()
    assert ref() is None


def test_slot_init_refuses_what_it_cannot_bind() -> None:
    with pytest.raises(TypeError, match="default factory"):
        @slot_init
        @dataclass(frozen=True, slots=True)
        class Factory:
            a: list = field(default_factory=list)
    with pytest.raises(TypeError, match="keyword-only"):
        @slot_init
        @dataclass(frozen=True, slots=True, kw_only=True)
        class KwOnly:
            a: int

    class Plain:
        a = property(lambda self: 1)

    with pytest.raises(TypeError, match="member descriptor"):
        _slots.slot_init(Plain, ("a",), (), (Plain.__dict__["a"],))
    with pytest.raises(TypeError, match="not a writable object slot"):
        _slots.slot_init(Plain, ("a",), (), (Seq.__dict__["items"],))  # a slot of another class
    with pytest.raises(TypeError, match="not a class defined in Python"):
        _slots.slot_init(int, (), (), ())
    with pytest.raises(ValueError, match="share a name"):
        _slots.slot_init(Plain, ("self",), (), (Seq.__dict__["items"],))
    with pytest.raises(ValueError, match="at most"):
        _slots.slot_init(Plain, ("a",), (1, 2), (Plain.__dict__["a"],))


def _mirror(value):
    if isinstance(value, tuple):
        return tuple(_mirror(item) for item in value)
    if type(value) in EXPR_TYPES:
        return tuple(_mirror(getattr(value, f.name)) for f in fields(value) if f.compare)
    return value


def test_composite_nodes_hash_in_c_from_the_kept_slot() -> None:
    kept = nodes._Node.__dict__["_hash"]
    for cls in nodes._REMEMBERING:
        assert type(cls.__dict__["__hash__"]).__name__ == "wrapper_descriptor"
        # the same call again: answers whether the class's tp_hash is the compiled function
        assert _slots.remember_hash(cls, kept, _canon.tree_hash, *nodes._HASHING) is True
    node = Alt((Seq((Literal("a"), Repeat(Ref("x"), 1))), Literal("b")))
    assert hash(node) == hash(_mirror(node)) == Alt.__hash__(node)
    kept.__set__(node, 12345)  # what is kept is what is read (the Python __hash__'s `self._hash`)
    assert hash(node) == 12345
    for junk, value in ((-1, -2), (2**80, hash(2**80)), (True, 1)):  # read as a __hash__'s result is
        kept.__set__(node, junk)
        assert hash(node) == value
    for junk in ("text", None, 1.5):
        kept.__set__(node, junk)
        with pytest.raises(TypeError, match="should return an integer"):
            hash(node)
    kept.__delete__(node)
    assert hash(node) == hash(_mirror(node)) and kept.__get__(node) == hash(node)


def test_remember_hash_refuses_a_second_computation_or_a_class_without_the_slot() -> None:
    kept = nodes._Node.__dict__["_hash"]
    with pytest.raises(ValueError, match="one slot and one computation"):
        remember_hash(Seq, kept, hash)
    with pytest.raises(TypeError, match="not a writable object slot"):
        remember_hash(Wide, kept, _canon.tree_hash, *nodes._HASHING)
    with pytest.raises(TypeError, match="not a class defined in Python"):
        remember_hash(int, kept, _canon.tree_hash, *nodes._HASHING)
    with pytest.raises(TypeError, match="not callable"):
        remember_hash(Seq, kept, 1)
    with pytest.raises(TypeError):
        Seq.__hash__(Literal("a"))  # the slot wrapper checks its object's class
