"""Property tests: generated expressions agree with Python; generated programs never crash.

1. Random expression programs (numbers, bools, None, strings, lists, calls,
   comparisons, boolean and conditional operators) print exactly what Python
   prints, errors included.
2. Random programs drawn from the grammar itself (hypothesis' from_lark, with
   the PITFALLS.md trick for the indenter's declared terminals) either parse,
   or fail with a ScriptSyntaxError; when they parse, running them either
   works or fails with a ScriptRuntimeError. Nothing else ever escapes.
"""

from __future__ import annotations

import contextlib
import io
import re

import hypothesis.strategies as st
from hypothesis import HealthCheck, assume, given, settings
from hypothesis.extra.lark import from_lark
from lark import Lark

from adcli.lang.errors import ScriptRuntimeError, ScriptSyntaxError
from adcli.lang.evaluator import Interpreter
from adcli.lang.guard import make_print
from adcli.lang.host import Host, Limits
from adcli.lang.parser import _grammar_text, parse
from adcli.lang.source import Source

PRELUDE = "a = 3\nb = 2.5\nc = 'xy'\nd = [1, 2, 3]\n"

# ------------------------------------------------------- expression programs

leaves = st.one_of(
    st.integers(-20, 20).map(lambda n: f"({n})"),
    st.sampled_from(["0.5", "1.25", "2.0", "1e-3", "3.", "0.0", "True", "False", "None"]),
    st.sampled_from(["'a'", "'bc'", "''", "a", "b", "c", "d"]),
)

BINOPS = [
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "<",
    "<=",
    "==",
    "!=",
    ">",
    ">=",
    "and",
    "or",
    "&",
    "|",
    "^",
    "in",
    "not in",
]


def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(BINOPS), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, st.sampled_from(["0", "1", "2"])).map(lambda t: f"({t[0]} ** {t[1]})"),
        st.tuples(st.sampled_from(["-", "+", "not ", "~"]), inner).map(lambda t: f"({t[0]}{t[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} < {t[1]} <= {t[2]})"),
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ",)"),
        st.tuples(st.lists(inner, min_size=1, max_size=3), st.integers(-4, 3)).map(
            lambda t: f"[{', '.join(t[0])}][{t[1]}]"
        ),
        st.tuples(
            st.sampled_from(["abs", "len", "bool", "str", "repr", "round", "int", "float"]), inner
        ).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(inner, inner).map(lambda t: f'f"{{{t[0]}}}-{{{t[1]}!r}}"'),
        st.tuples(inner, st.sampled_from(["x", "y"])).map(
            lambda t: f"[{t[1]} for {t[1]} in d if {t[0]}]"
        ),
        st.tuples(inner).map(lambda t: f"(lambda x=1: {t[0]})()"),
    )


expressions = st.recursive(leaves, extend, max_leaves=12)


def run_adcli(code: str) -> str:
    buf = io.StringIO()
    interp = Interpreter(Host(globals={"print": make_print(buf.write)}), Limits(max_steps=100_000))
    try:
        interp.run(parse(Source("fuzz.ad", code)))
    except ScriptRuntimeError as err:
        buf.write(f"{err.kind}: {err.message}\n")
    return buf.getvalue()


def run_python(code: str) -> str:
    try:
        compiled = compile(code, "fuzz.py", "exec")
    except SyntaxError:
        assume(False)  # e.g. nested f-strings with the same quotes (Python 3.11)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            exec(compiled, {})
        except Exception as exc:  # noqa: BLE001 - any error is compared
            print(f"{type(exc).__name__}: {exc}")
    return buf.getvalue()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions)
def test_expressions_agree_with_python(expr: str) -> None:
    code = PRELUDE + f"print(repr({expr}))\n"
    expected = run_python(code)
    assert run_adcli(code) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(expressions, min_size=1, max_size=4), st.sampled_from(["+=", "-=", "*=", "="]))
def test_statement_programs_agree_with_python(exprs: list[str], op: str) -> None:
    lines = [PRELUDE, "def g(p, q=2):\n    return p if q else q\n"]
    for i, e in enumerate(exprs):
        lines.append(f"v{i} = {e}\n")
        lines.append(f"a {op} g(v{i})\n" if op != "=" else f"a = g(v{i}, a)\n")
        lines.append(f"print(repr(v{i}), repr(a))\n")
    code = "".join(lines)
    expected = run_python(code)
    assert run_adcli(code) == expected


# ----------------------------------------------------- grammar-drawn programs

_MARKERS = re.compile(r"^[ \t\f\x01\x02]*")


def indent_markers(text: str) -> str:
    """Turn the \\x01/\\x02 INDENT/DEDENT markers at line starts into indentation."""
    out = []
    level = 0
    for line in text.split("\n"):
        m = _MARKERS.match(line)
        head = m.group(0) if m else ""
        level += head.count("\x01") - head.count("\x02")
        level = max(level, 0)
        rest = line[len(head) :].replace("\x01", "").replace("\x02", "")
        out.append("    " * level + rest if rest else "")
    return "\n".join(out)


_LARK = Lark(_grammar_text(), parser="lalr", start="start", maybe_placeholders=True)
_NAMES = st.sampled_from(["x", "y", "f", "g", "print", "len", "range", "d", "lst", "torch"])

programs = from_lark(
    _LARK,
    start="start",
    explicit={
        "_INDENT": st.just("\x01"),
        "_DEDENT": st.just("\x02"),
        "_NEWLINE": st.just("\n"),
        "NAME": _NAMES,
        "COMMENT": st.just("# c"),
    },
).map(indent_markers)

_parsed = {"ok": 0, "total": 0}


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs)
def test_grammar_programs_never_crash(text: str) -> None:
    _parsed["total"] += 1
    source = Source("gen.ad", text)
    try:
        module = parse(source)
    except ScriptSyntaxError as err:
        assert err.span is not None and err.source is source
        return
    _parsed["ok"] += 1
    buf = io.StringIO()
    limits = Limits(max_steps=2_000, max_depth=30, max_sequence=100_000, max_int_bits=10_000)
    interp = Interpreter(
        Host(globals={"print": make_print(buf.write), "lst": [1, 2], "d": {"k": 1}}), limits
    )
    try:
        interp.run(module)
    except (ScriptRuntimeError, ScriptSyntaxError) as err:
        assert err.span is not None


def test_grammar_programs_mostly_parse() -> None:
    # Runs after the property test in file order; a sanity check on the generator.
    if _parsed["total"] >= 50:
        assert _parsed["ok"] / _parsed["total"] > 0.2, _parsed
