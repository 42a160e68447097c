"""The ``grammarc`` command line: check text against a grammar, format and compile grammars.

Exit status: 0 success, 1 the text is not in the language, 2 bad input (grammar errors,
missing files) — with the error printed, never a traceback. Warnings (an unreachable rule,
keywords ``--lenient`` ignored) are printed once each as ``warning: ...`` lines on standard
error; slow steps show progress there when it is a terminal (``--progress``/``--no-progress``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from grammarc.errors import GrammarcError
from grammarc.grammar import Grammar
from grammarc.integrations import progress
from grammarc.integrations.progress import stage


def load_grammar(spec: str, start: str = "start", fmt: str | None = None) -> Grammar:
    """GRAMMAR on the command line: an .ebnf, .gbnf or .lark file, or a stdlib grammar name.

    A file's syntax is `fmt` when given, else its extension's (anything else is .ebnf).
    GBNF grammars start at ``root``; `start` does not apply to them.
    """
    from grammarc import stdlib_grammars

    path = Path(spec)
    if path.is_file():
        fmt = fmt or {".gbnf": "gbnf", ".lark": "lark"}.get(path.suffix.lower(), "ebnf")
        if fmt == "gbnf":
            return Grammar.from_gbnf(path.read_text(encoding="utf-8"), name=str(path))
        if fmt == "lark":
            return Grammar.from_lark(path.read_text(encoding="utf-8"), start=start, name=str(path))
        return Grammar.from_file(path, start=start)
    if spec in stdlib_grammars.names():
        return stdlib_grammars.load(spec, start=start)
    raise GrammarcError(
        f"no grammar file {spec!r} and no stdlib grammar of that name "
        f"(stdlib: {', '.join(stdlib_grammars.names())})"
    )


def _read_text(spec: str | None) -> bytes:
    if spec is None or spec == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(spec).read_bytes()
    except OSError as error:
        raise GrammarcError(f"cannot read {spec}: {error.strerror}") from None


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    before = data[:offset].decode("utf-8", errors="replace")
    line = before.count("\n") + 1
    return line, len(before) - (before.rfind("\n") + 1) + 1


def _context(data: bytes, offset: int) -> str:
    """The line holding `offset`, with a caret under it."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    line = data[start:end].decode("utf-8", errors="replace")
    col = len(data[start:offset].decode("utf-8", errors="replace"))
    return f"  {line}\n  {' ' * col}^"


def describe_bytes(byte_set) -> str:
    """A short, readable rendering of a set of bytes: ``',' or ']'``, ``'0'-'9'``, ..."""
    if not byte_set:
        return "end of text"
    if len(byte_set) > 96:
        return f"one of {len(byte_set)} bytes"

    def show(b: int) -> str:
        return repr(chr(b)) if 0x20 <= b < 0x7F else f"\\x{b:02x}"

    ranges: list[tuple[int, int]] = []
    for b in sorted(byte_set):
        if ranges and b == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((b, b))
    parts = [show(lo) if lo == hi else f"{show(lo)}-{show(hi)}" for lo, hi in ranges]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def cmd_check(args) -> int:
    from grammarc.runtime.recognizer import Recognizer

    grammar = load_grammar(args.grammar, args.start, args.format)
    data = _read_text(args.file)
    with stage("grammarc: compiling the grammar"):
        recognizer = Recognizer(grammar.compile())
    failure = recognizer.first_failure(data)
    name = args.file if args.file not in (None, "-") else "<stdin>"
    if failure is not None:
        line, col = _line_col(data, failure.offset)
        byte = data[failure.offset : failure.offset + 1]
        print(f"{name}:{line}:{col}: unexpected {byte!r} (byte {failure.offset})", file=sys.stderr)
        print(_context(data, failure.offset), file=sys.stderr)
        print(f"expected: {describe_bytes(failure.next_bytes)} (in {', '.join(failure.expected)})", file=sys.stderr)
        return 1
    recognizer.feed(data)
    if not recognizer.is_complete():
        line, col = _line_col(data, len(data))
        print(f"{name}:{line}:{col}: the text ends too early", file=sys.stderr)
        print(
            f"expected: {describe_bytes(recognizer.next_bytes())} (in {', '.join(recognizer.expected())})",
            file=sys.stderr,
        )
        return 1
    print(f"{name}: ok")
    return 0


def cmd_fmt(args) -> int:
    sys.stdout.write(load_grammar(args.grammar, args.start, args.format).to_ebnf())
    return 0


def cmd_compile(args) -> int:
    grammar = load_grammar(args.grammar, args.start, args.format)
    with stage("grammarc: compiling the grammar"):
        compiled = grammar.compile()
    for key, value in compiled.summary().items():
        print(f"{key:>13}: {value}")
    if args.verbose:
        print("terminals:")
        for index, terminal in enumerate(compiled.terminals):
            print(f"  {index:>4}  {terminal.dfa.n_states:>5} states  {terminal.name}")
    return 0


def _write_ebnf(grammar: Grammar, out: str | None, header: str = "") -> int:
    text = header + grammar.to_ebnf()
    if out is None or out == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as error:
            raise GrammarcError(f"cannot write {out}: {error.strerror}") from None
    return 0


def _layout_options(args) -> dict:
    options = {"whitespace": args.whitespace}
    if args.indent is not None:
        options["indent"] = args.indent
    return options


def cmd_from_schema(args) -> int:
    schema = _read_text(args.schema).decode("utf-8")
    with stage("grammarc: translating the schema"):
        grammar = Grammar.from_json_schema(schema, lenient=args.lenient, **_layout_options(args))
    return _write_ebnf(grammar, args.output)


def cmd_from_model(args) -> int:
    import importlib

    module_name, _, attribute = args.target.partition(":")
    if not module_name or not attribute:
        raise GrammarcError(f"expected module:Class, not {args.target!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules in the current directory are found
    try:
        target = importlib.import_module(module_name)
    except ImportError as error:
        raise GrammarcError(f"cannot import {module_name}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise GrammarcError(f"{module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    from grammarc.frontends.pydantic_model import description_comments

    with stage("grammarc: translating the model"):
        grammar = Grammar.from_model(target, **_layout_options(args))
    return _write_ebnf(grammar, args.output, description_comments(target))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grammarc", description=__doc__.splitlines()[0])
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show slow steps on standard error (default: when it is a terminal)")
    sub = parser.add_subparsers(dest="command", required=True)

    def grammar_command(name: str, help: str):
        command = sub.add_parser(name, help=help)
        command.add_argument("grammar", help="an .ebnf, .gbnf or .lark file, or a stdlib grammar name (see grammarc.stdlib_grammars.names())")
        command.add_argument("--start", default="start", help="the start rule (default: start; GBNF starts at root)")
        command.add_argument("--format", choices=("ebnf", "gbnf", "lark"), help="the grammar file's syntax (default: by its extension)")
        return command

    check = grammar_command("check", "check that a text is in the grammar's language")
    check.add_argument("file", nargs="?", help="the text to check (default or '-': standard input)")
    check.set_defaults(run=cmd_check)
    grammar_command("fmt", "print the grammar in canonical form").set_defaults(run=cmd_fmt)
    compile_ = grammar_command("compile", "compile and print sizes: rules, terminals, DFA and LR states")
    compile_.add_argument("-v", "--verbose", action="store_true", help="also list the terminals")
    compile_.set_defaults(run=cmd_compile)
    for name, what, run in (("from-schema", "schema", cmd_from_schema), ("from-model", "target", cmd_from_model)):
        command = sub.add_parser(name, help=f"print the .ebnf grammar of a {'JSON Schema file' if what == 'schema' else 'Pydantic model, dataclass or type'}")
        if what == "schema":
            command.add_argument("schema", help="a JSON Schema file ('-': standard input)")
            command.add_argument("--lenient", action="store_true", help="ignore keywords that cannot be expressed, with a warning")
        else:
            command.add_argument("target", help="module:Class (the module is imported; the current directory is searched)")
        command.add_argument("-o", "--output", help="write the grammar here instead of standard output")
        command.add_argument("--whitespace", choices=("bounded", "compact", "unbounded"), default="bounded",
                             help="whitespace the model may write between JSON tokens (default: bounded)")
        command.add_argument("--indent", type=int, help="the fixed layout of json.dumps(x, indent=N) instead")
        command.set_defaults(run=run)
    demo = sub.add_parser("demo", help="generate documents with a tiny random Llama (or --model DIR) under stdlib grammars")
    from grammarc.integrations import demo as demo_module

    demo_module.add_arguments(demo)
    demo.set_defaults(run=demo_module.command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress.enable(args.progress if args.progress is not None else sys.stderr.isatty())
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = args.run(args)
        except GrammarcError as exc:
            error, status = exc, 2
    shown = set()
    for warning in caught:  # once each, whichever stage raised it again
        text = str(warning.message)
        if text not in shown:
            shown.add(text)
            print(f"warning: {text}", file=sys.stderr)
    if error is not None:
        print(f"error: {error}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
