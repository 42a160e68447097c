"""Pydantic models, dataclasses and typing types as grammars, and ``@grammarc.constrain``.

The oracle is pydantic itself: random constrained walks through the engine with the Llama-3
vocabulary (see test_schema_walks.random_walk) must give texts that ``model_validate_json``
(or ``TypeAdapter.validate_json``) accepts. Unsupported types fail with exact messages.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Annotated, Any, Literal, NamedTuple, Optional, Union

import pytest

pydantic = pytest.importorskip("pydantic")
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

import grammarc  # noqa: E402
from grammarc import Engine, Grammar, UnsupportedSchemaError  # noqa: E402
from test_schema_walks import random_walk  # noqa: E402

WALKS = 2


# ------------------------------------------------------------------------------ models


class Color(str, enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 10


class Point(BaseModel):
    x: int
    y: int


class Flat(BaseModel):
    name: str
    age: int
    score: float
    active: bool


class Optionals(BaseModel):
    nickname: Optional[str] = None
    maybe: Optional[int]
    note: str = "n/a"


class Nested(BaseModel):
    origin: Point
    path: list[Point]
    label: Optional[Point] = None


class Tree(BaseModel):
    value: int
    children: list["Tree"] = []


class Employee(BaseModel):
    name: str
    reports: list["Employee"] = []
    manager: Optional["Employee"] = None


class Unions(BaseModel):
    value: Union[int, str, None]
    shape: Union[Point, list[int]]


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = Field(ge=1, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Lizard(BaseModel):
    kind: Literal["lizard", "gecko"]
    length_cm: float = Field(gt=0, lt=60)


class Pets(BaseModel):
    pet: Union[Cat, Dog, Lizard] = Field(discriminator="kind")
    others: list[Annotated[Union[Cat, Dog], Field(discriminator="kind")]] = []


class Choices(BaseModel):
    color: Color
    level: Level
    mode: Literal["fast", "slow", 3, None]


class Constrained(BaseModel):
    code: Annotated[str, Field(min_length=2, max_length=5)]
    slug: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    percent: int = Field(ge=0, le=100)
    temperature: float = Field(ge=-40.5, le=60.25)
    count: Annotated[int, Field(gt=7, lt=300, multiple_of=3)]
    tags: list[str] = Field(min_length=1, max_length=3)


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    first_name: str = Field(alias="firstName")
    last_name: str = Field(alias="lastName")
    age_years: int = Field(alias="age", ge=0, le=150)


class Temporal(BaseModel):
    at: datetime.datetime
    on: datetime.date
    clock: datetime.time
    span: datetime.timedelta
    naive: pydantic.NaiveDatetime
    aware: pydantic.AwareDatetime
    ident: uuid.UUID
    ident4: pydantic.UUID4


class Collections(BaseModel):
    ints: list[int]
    pair: tuple[int, str]
    var: tuple[float, ...]
    unique: set[str]
    frozen: frozenset[int]
    scores: dict[str, float]
    by_id: dict[int, str]
    blob: bytes


class Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int


class Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    tags: dict[str, list[bool]] = {}


@dataclasses.dataclass
class Item:
    name: str
    price: float = Field(ge=0)
    quantity: int = 1


class Movie(TypedDict, total=False):
    title: str
    year: int


class Required(TypedDict):
    movie: Movie
    rating: Literal[1, 2, 3, 4, 5]


class Coord(NamedTuple):
    lat: float
    lon: float
    label: str = ""


class Document(BaseModel):
    """Everything at once: what an extraction prompt would ask for."""

    title: str = Field(max_length=40)
    authors: list[Aliased]
    published: Optional[datetime.date] = None
    pets: list[Pets] = []
    meta: dict[str, Union[int, bool]] = {}
    where: Optional[Coord] = None


MODELS = [Flat, Optionals, Nested, Tree, Employee, Unions, Pets, Choices, Constrained, Aliased,
          Temporal, Collections, Extra, Forbid, Item, Required, Coord, Document]
TYPES = [list[int], dict[str, Optional[float]], Literal["a", "b"], Color, tuple[Point, Level],
         Annotated[str, Field(min_length=3)], Union[Item, Coord]]


def _validate(target, text: bytes):
    if isinstance(target, type) and issubclass(target, BaseModel):
        return target.model_validate_json(text)
    return TypeAdapter(target).validate_json(text)


@pytest.fixture(scope="module")
def vocab():
    from vocabularies import llama3

    return llama3()


# ------------------------------------------------------------------------------ walks


@pytest.mark.parametrize("target", MODELS + TYPES, ids=lambda t: getattr(t, "__name__", None) or repr(t))
def test_random_walks_validate(target, vocab):
    grammar = Grammar.from_model(target)
    engine = Engine(grammar.compile(), vocab)
    for seed in range(WALKS):
        text = random_walk(engine, seed)
        assert grammar.accepts(text)
        _validate(target, text)


@pytest.mark.parametrize("target", [Pets, Collections], ids=lambda t: t.__name__)
def test_random_walks_compact_layout(target, vocab):
    grammar = Grammar.from_model(target, whitespace="compact")
    engine = Engine(grammar.compile(), vocab)
    for seed in range(WALKS):
        text = random_walk(engine, 100 + seed)
        assert grammar.accepts(text)
        _validate(target, text)


# ------------------------------------------------------------------------------ the language


def test_examples_accepted_and_rejected():
    g = Grammar.from_model(Pets, whitespace="compact")
    assert g.accepts('{"pet":{"kind":"cat","lives":3}}')
    assert not g.accepts('{"pet":{"lives":3}}'), "pydantic needs the tag even where it has a default"
    assert Pets.model_validate_json('{"pet":{"kind":"dog","good":true},"others":[]}')
    assert g.accepts('{"pet":{"kind":"gecko","length_cm":12.5},"others":[{"kind":"dog","good":false}]}')
    assert not g.accepts('{"pet":{"kind":"cat","lives":10}}')


def test_optional_keys_are_omitted_entirely():
    g = Grammar.from_model(Optionals, whitespace="compact")
    assert g.accepts('{"maybe":null}')
    assert g.accepts('{"nickname":"x","maybe":1,"note":"y"}')
    assert not g.accepts('{"nickname":,"maybe":1}')
    assert not g.accepts('{"nickname":"x"}'), "maybe is required (Optional without a default)"


def test_aliases_are_the_keys():
    g = Grammar.from_model(Aliased, whitespace="compact")
    assert g.accepts('{"firstName":"Ada","lastName":"Lovelace","age":36}')
    assert not g.accepts('{"first_name":"Ada","last_name":"Lovelace","age_years":36}')
    assert not g.accepts('{"firstName":"Ada","lastName":"Lovelace","age":151}')


def test_objects_closed_unless_extra_allowed():
    assert not Grammar.from_model(Point, whitespace="compact").accepts('{"x":1,"y":2,"z":3}')
    assert not Grammar.from_model(Forbid, whitespace="compact").accepts('{"id":1,"z":3}')
    assert Grammar.from_model(Extra, whitespace="compact").accepts('{"id":1,"z":[3]}')


def test_temporal_texts_match_what_pydantic_accepts():
    g = Grammar.from_model(datetime.datetime)
    for good in ['"2024-02-29T23:59:59.123456Z"', '"0001-01-01T00:00:00+23:59"']:
        assert g.accepts(good)
        TypeAdapter(datetime.datetime).validate_json(good)
    for bad in ['"0000-01-01T00:00:00Z"', '"2023-02-29T00:00:00Z"', '"2024-01-01T23:59:60Z"']:
        assert not g.accepts(bad)
        with pytest.raises(pydantic.ValidationError):
            TypeAdapter(datetime.datetime).validate_json(bad)
    assert not Grammar.from_model(pydantic.NaiveDatetime).accepts('"2024-01-01T00:00:00Z"')
    assert Grammar.from_model(pydantic.NaiveDatetime).accepts('"2024-01-01T00:00:00"')
    assert Grammar.from_model(datetime.timedelta).accepts('"P3DT4H5M6.5S"')


def test_sets_allow_duplicates_as_pydantic_does():
    g = Grammar.from_model(set[int], whitespace="compact")
    assert g.accepts("[1,1]") and TypeAdapter(set[int]).validate_json("[1,1]") == {1}


def test_int_keys():
    g = Grammar.from_model(dict[int, bool], whitespace="compact")
    assert g.accepts('{"-12":true,"0":false}')
    assert not g.accepts('{"a":true}') and not g.accepts('{"01":true}')


def test_recursive_model_rules_are_named():
    text = Grammar.from_model(Tree).to_ebnf()
    assert "\nTree ::= " in text and "Tree_children ::= " in text


# ------------------------------------------------------------------------------ errors


class WithCallable(BaseModel):
    x: int
    cb: Any = Field(default=None)
    fn: "Callable[[], int]"  # noqa: F821 - resolved below


from typing import Callable  # noqa: E402

WithCallable.model_rebuild()


class StrictModel(BaseModel):
    model_config = ConfigDict(strict=True)
    n: int


class PastModel(BaseModel):
    when: pydantic.PastDate


class FloatKeys(BaseModel):
    weights: dict[float, int]


class Later(BaseModel):
    at: datetime.datetime = Field(gt=datetime.datetime(2020, 1, 1))


class Base64Model(BaseModel):
    model_config = ConfigDict(val_json_bytes="base64")
    data: bytes


def _by_tag(value):
    return value.get("kind") if isinstance(value, dict) else value.kind


class CallableTag(BaseModel):
    pet: Annotated[
        Union[Annotated[Cat, pydantic.Tag("cat")], Annotated[Dog, pydantic.Tag("dog")]], pydantic.Discriminator(_by_tag)
    ]


class Site(BaseModel):
    url: pydantic.AnyUrl


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (WithCallable, "#/properties/fn: WithCallable.fn (Callable[[], int]): not supported: "
                       "Cannot generate a JsonSchema for core_schema.CallableSchema"),
        (StrictModel, None),  # supported: integers are written without a fraction for pydantic
        (PastModel, "#/properties/when: PastModel.when (PastDate): date constraints (now_op) are not supported"),
        (FloatKeys, "#/properties/weights: FloatKeys.weights (dict[float, int]): dict keys of type 'float' are "
                    "not supported (only str and int)"),
        (Later, "#/properties/at: Later.at (datetime): datetime constraints (gt) are not supported"),
        (Base64Model, "#/properties/data: Base64Model.data (bytes): bytes read as base64 (val_json_bytes) are "
                      "not supported"),
        (CallableTag, "#/properties/pet: CallableTag.pet (Union[Annotated[test_pydantic.Cat, Tag(tag='cat')], "
                      "Annotated[test_pydantic.Dog, Tag(tag='dog')]]): only discriminators naming one field "
                      "are supported (not callables or paths)"),
        (Site, "#/properties/url: Site.url (AnyUrl): URL types are not supported (pydantic's URL parser is not "
               "RFC 3986)"),
        (complex, "#: complex: complex numbers are not supported (pydantic's schema says any string)"),
        (set[int], None),  # supported: control
    ],
    ids=lambda v: getattr(v, "__name__", None) or (v if isinstance(v, str) else repr(v))[:30],
)
def test_unsupported_types_are_exact_errors(target, message):
    if message is None:
        Grammar.from_model(target)
        return
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_model(target)
    assert str(info.value) == message


def test_arbitrary_objects_are_refused():
    with pytest.raises(UnsupportedSchemaError, match=r"^#: <object object at 0x[0-9a-f]+>: not supported: "
                                                     r"Unable to generate pydantic-core schema"):
        Grammar.from_model(object())


def test_constrain_fails_at_decoration_time():
    with pytest.raises(UnsupportedSchemaError, match="date constraints"):
        @grammarc.constrain
        class Bad(BaseModel):
            when: pydantic.PastDate


class Files(BaseModel):
    name: str
    path: "pathlib.Path"


class Secrets(BaseModel):
    files: list[Files]
    token: pydantic.SecretStr


class Lookahead(BaseModel):
    model_config = ConfigDict(regex_engine="python-re")  # pydantic's own engine refuses lookarounds
    code: str = Field(pattern=r"^(?=a)[a-z]+$")


import pathlib  # noqa: E402

Files.model_rebuild()


@pytest.mark.parametrize(
    "target, message",
    [
        (Files, "#/properties/path/format: Files.path (Path): keyword 'format' is not supported: unknown format 'path'"
                " (formats='strict')"),
        (Secrets, "#/$defs/Files/properties/path/format: Files.path (Path): keyword 'format' is not supported: "
                  "unknown format 'path' (formats='strict')"),
        (Lookahead, "#/properties/code/pattern: Lookahead.code (str): keyword 'pattern' is not supported: "
                    "lookahead (?=...) is not supported (at offset 1 in pattern '^(?=a)[a-z]+$')"),
        (Annotated[str, Field(pattern=r"^(?=a)[a-z]+$")],
         "#: Annotated[str, FieldInfo(annotation=NoneType, required=True, metadata=[_PydanticGeneralMetadata("
         "pattern='^(?=a)[a-z]+$')])]: pydantic cannot validate it: look-around, including look-ahead and "
         "look-behind, is not supported"),
    ],
    ids=["Path", "nested-Path", "lookahead-model", "lookahead-type"],
)
def test_refusals_name_the_python_field_and_type(target, message):
    # formats='strict': a format grammarc does not know is refused (the default reads it as
    # an annotation, below)
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_model(target, formats="strict")
    assert str(info.value) == message


def test_path_and_secret_str_are_any_string():
    # pydantic reads any JSON string as a Path or a SecretStr: format 'path' is an annotation
    # (default formats='known'), 'password' is OpenAPI's annotation in either policy
    class Login(BaseModel):
        user: str
        password: pydantic.SecretStr
        path: pathlib.Path

    text = '{"user":"u","password":"p \\u00e9","path":"/x y"}'
    assert Login.model_validate_json(text).path == pathlib.Path("/x y")
    assert Grammar.from_model(Login, whitespace="compact").accepts(text)
    assert not Grammar.from_model(Login, whitespace="compact").accepts('{"user":"u","password":1,"path":"x"}')
    assert Grammar.from_model(Login.model_fields["password"].annotation, formats="strict").accepts('"p"')


@grammarc.constrain
class Home(BaseModel):
    city: str = Field(description="the city (*not* the *) country)")
    zip: str


@dataclasses.dataclass
class Owner:
    home: Home
    name: str = dataclasses.field(default="", metadata={"description": "full\n name"})


def test_field_descriptions_become_ebnf_comments():
    c = grammarc.constraint_of(Owner)
    assert c.ebnf.splitlines()[:2] == [
        "(* Owner.name: full name *)",
        "(* Home.city: the city ( *not* the * ) country) *)",
    ]
    assert Grammar.from_ebnf(c.ebnf) == c.grammar
    assert grammarc.constraint_of(Home).ebnf.startswith("(* Home.city: the city")
    assert grammarc.constraint_of(Point).ebnf == grammarc.constraint_of(Point).grammar.to_ebnf()


def test_strict_integers_are_exact():
    grammar = Grammar.from_model(StrictModel)
    assert grammar.accepts('{"n":1}')
    assert grammar.accepts('{"n":123456789012345678901234567890}')
    assert not grammar.accepts('{"n":1.0}')


# ------------------------------------------------------------------------------ @constrain


def test_constrain_returns_the_class_unchanged():
    class Plain(BaseModel):
        grammar: str  # field names that a naive decorator would clobber
        ebnf: int
        parse: bool
        engine: list[int]
        generate: Optional[str] = None

    before = dict(vars(Plain))
    assert grammarc.constrain(Plain) is Plain
    assert dict(vars(Plain)) == before
    c = grammarc.constraint_of(Plain)
    assert grammarc.constraint_of(Plain) is c
    item = c.parse('{"grammar": "g", "ebnf": 1, "parse": true, "engine": [2]}')
    assert item == Plain(grammar="g", ebnf=1, parse=True, engine=[2])
    assert c.grammar == Grammar.from_model(Plain)
    assert c.ebnf == c.grammar.to_ebnf()
    assert Grammar.from_ebnf(c.ebnf) == c.grammar


def test_constrain_decorator_with_options():
    @grammarc.constrain(whitespace="compact")
    class Small(BaseModel):
        a: int
        b: list[bool]

    assert isinstance(Small, type) and issubclass(Small, BaseModel)
    c = grammarc.constraint_of(Small)
    assert c.options == (("whitespace", "compact"),)
    assert c.grammar.accepts('{"a":1,"b":[true]}') and not c.grammar.accepts('{"a": 1,"b":[true]}')
    loose = grammarc.constraint_of(Small, whitespace="bounded")
    assert loose is not c and loose.grammar.accepts('{"a": 1,"b":[true]}')
    assert grammarc.constraint_of(Small) is c


def test_constraint_is_frozen():
    c = grammarc.constraint_of(Point)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.grammar = None  # type: ignore[misc]


def test_constraint_of_typing_types_and_dataclasses():
    assert grammarc.constraint_of(list[int]).parse("[1, 2]") == [1, 2]
    assert grammarc.constraint_of(Item).parse('{"name": "pen", "price": 1.5}') == Item("pen", 1.5, 1)
    assert grammarc.constraint_of(Coord).parse("[1, 2]") == Coord(1.0, 2.0, "")
    with pytest.raises(pydantic.ValidationError):
        grammarc.constraint_of(Point).parse('{"x": 1}')


def test_constraint_engine_drives_generation(vocab):
    c = grammarc.constraint_of(Nested)
    engine = c.engine(vocab)
    text = random_walk(engine, 7)
    assert isinstance(c.parse(text), Nested)


def test_generate_with_a_causal_lm(vocab):
    """`generate` runs the model under the mask and parses the result (a stub model whose
    logits prefer a fixed text: the mask must steer it into the schema)."""
    torch = pytest.importorskip("torch")
    wanted = b'{"x": 12, "y": -3}'
    ids = [vocab.ids_for(bytes([b]))[0] for b in wanted]

    class Output:
        def __init__(self, logits):
            self.logits, self.past_key_values = logits, None

    class StubModel:
        device = torch.device("cpu")

        def __init__(self):
            self.step = 0

        def __call__(self, input_ids, past_key_values=None, use_cache=True):
            logits = torch.zeros(1, input_ids.shape[1], vocab.size)
            if self.step < len(ids):
                logits[0, -1, ids[self.step]] = 5.0
            logits[0, -1, vocab.ids_for(b"}")[0]] = 1.0  # a fallback that is often disallowed
            self.step += 1
            return Output(logits)

    def tokenizer(prompt, add_special_tokens=True):
        return {"input_ids": [1, 2, 3]}

    point = grammarc.constraint_of(Point).generate(StubModel(), tokenizer, "a point:", vocab=vocab)
    assert point == Point(x=12, y=-3)
    # the one-liner takes the same path, and runs out of tokens with a precise error
    assert grammarc.generate(StubModel(), tokenizer, Point, "a point:", vocab=vocab) == Point(x=12, y=-3)
    with pytest.raises(grammarc.GrammarcError) as info:
        grammarc.generate(StubModel(), tokenizer, Point, "a point:", vocab=vocab, max_new_tokens=3)
    assert str(info.value) == ("generation stopped after 3 tokens, before the text was complete: raise "
                               "max_new_tokens or set finish_after (got '{\"x')")


# ------------------------------------------------------------------------------ CLI


def test_cli_from_model_and_from_schema(tmp_path, capsys, monkeypatch):
    from grammarc.cli import main

    (tmp_path / "shapes.py").write_text(
        "from pydantic import BaseModel\nclass Box(BaseModel):\n    w: int\n    tags: list[str] = []\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["from-model", "shapes:Box", "-o", "box.ebnf", "--whitespace", "compact"]) == 0
    text = (tmp_path / "box.ebnf").read_text(encoding="utf-8")
    grammar = Grammar.from_ebnf(text)
    assert grammar.accepts('{"w":3,"tags":["a"]}') and not grammar.accepts('{"tags":[]}')
    assert 'Box ::= "{" "\\"w\\"" ":" Box_w ("," "\\"tags\\"" ":" Box_tags)? "}";' in text.splitlines()
    assert not text.startswith("(*")  # no descriptions: no comments

    (tmp_path / "s.json").write_text('{"type": "array", "items": {"enum": [1, "x"]}, "maxItems": 2}', encoding="utf-8")
    assert main(["from-schema", "s.json", "--whitespace", "compact"]) == 0
    assert Grammar.from_ebnf(capsys.readouterr().out).accepts('[1,"x"]')

    assert main(["from-model", "shapes:Nope"]) == 2
    assert capsys.readouterr().err == "error: shapes has no attribute 'Nope'\n"
    assert main(["from-model", "shapes"]) == 2
    assert capsys.readouterr().err == "error: expected module:Class, not 'shapes'\n"
