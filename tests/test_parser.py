"""The grammar, the tree builder, syntax errors and their text; Source and errors.

The parser's result is Python's own `ast.Module`: for every construct the tests
check its text (`ast.unparse`) and that it is the very tree CPython's parser makes
of the same code (`same_as_python`), which pins precedence, chains and unpacking.
"""

# ruff: noqa: E501 - tables of source snippets read best one per line

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from adcli.lang import errors
from adcli.lang.build import span_of
from adcli.lang.errors import ScriptSyntaxError, format_diagnostic
from adcli.lang.parser import _grammar_text, parse
from adcli.lang.source import Source, Span, caret_line, render_caret


def module(code: str) -> ast.Module:
    return parse(Source("t.ad", code))


def same_as_python(ours: ast.AST, code: str, *, expression: bool = False) -> bool:
    """Is `ours` the tree CPython parses `code` into (positions aside)?"""
    theirs: ast.AST = ast.parse(code)
    if expression:
        theirs = theirs.body[0].value  # type: ignore[attr-defined]
    return ast.dump(ours) == ast.dump(theirs)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node`, in source order (depth first, without recursion)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


# ------------------------------------------------------------ constructs

EXPRESSIONS = [
    ("1", "1"),
    ("1.5", "1.5"),
    ("1e-3", "0.001"),
    ("1.", "1.0"),
    (".5", "0.5"),
    ("1_000", "1000"),
    ("0x1f", "31"),
    ("0o17", "15"),
    ("0b101", "5"),
    ("'a'", "'a'"),
    ('"a\\nb"', "'a\\nb'"),
    ("r'a\\n'", "'a\\\\n'"),
    ("'a' \"b\" '''c'''", "'abc'"),
    ('"""doc\nstring"""', "'doc\\nstring'"),
    ("True", "True"),
    ("False", "False"),
    ("None", "None"),
    ("...", "..."),
    ("x", "x"),
    ("[]", "[]"),
    ("[1, 2,]", "[1, 2]"),
    ("()", "()"),
    ("(1,)", "(1,)"),
    ("(1, 2)", "(1, 2)"),
    ("(1)", "1"),
    ("{}", "{}"),
    ("{'a': 1, 2: x}", "{'a': 1, 2: x}"),
    ("a + b * c", "a + b * c"),
    ("a - b - c", "a - b - c"),
    ("a ** b ** c", "a ** b ** c"),
    ("-a ** b", "-a ** b"),
    ("a @ b // c % d / e", "a @ b // c % d / e"),
    ("a & b | c ^ d", "a & b | c ^ d"),
    ("~a", "~a"),
    ("+a", "+a"),
    ("not a", "not a"),
    ("a and b or c", "a and b or c"),
    ("a or b or c", "a or b or c"),
    ("0 < x < 1", "0 < x < 1"),
    ("a is not b", "a is not b"),
    ("a not in b", "a not in b"),
    ("a in b", "a in b"),
    ("a == b != c >= d <= e > f", "a == b != c >= d <= e > f"),
    ("a if b else c", "a if b else c"),
    ("lambda: 0", "lambda: 0"),
    ("lambda x, y=1, *a, k, **kw: x", "lambda x, y=1, *a, k, **kw: x"),
    ("f()", "f()"),
    ("f(a, b=1, *c, **d)", "f(a, *c, b=1, **d)"),
    ("f(x for x in y)", "f((x for x in y))"),
    ("a.b.c", "a.b.c"),
    ("x[0]", "x[0]"),
    ("x[:, 1]", "x[:, 1]"),
    ("x[1:3]", "x[1:3]"),
    ("x[::2]", "x[::2]"),
    ("x[1:2:3]", "x[1:2:3]"),
    ("x[..., 0]", "x[..., 0]"),
    ("x[None]", "x[None]"),
    ("x[idx]", "x[idx]"),
    ("x[0,]", "x[0,]"),
    ("[f(x) for x in xs if c]", "[f(x) for x in xs if c]"),
    ("[y for x in a if p if q for y in x]", "[y for x in a if p if q for y in x]"),
    ("[a for a, b in z]", "[a for a, b in z]"),
    ("{k: v for k, v in z}", "{k: v for k, v in z}"),
    ("(x for x in y)", "(x for x in y)"),
    ("f'a{x}b'", "f'a{x}b'"),
    ("f'{x:.4f}'", "f'{x:.4f}'"),
    ("f'{x!r}'", "f'{x!r}'"),
    ("f'{x!s:>{w}}'", "f'{x!s:>{w}}'"),
    ("f'{x=}'", "f'x={x!r}'"),
    ("f'{{}}{a + b}'", "f'{{}}{a + b}'"),
    ("f'{d[\"k\"]}'", "f\"{d['k']}\""),
    ("f'{x:{w}.{p}f}'", "f'{x:{w}.{p}f}'"),
    ("'a' f'{x}'", "f'a{x}'"),
    ("f'\\n{x}'", "f'\\n{x}'"),
    ("f'''{\nx\n}'''", "f'{x}'"),
]


@pytest.mark.parametrize("code, expected", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_expressions(code: str, expected: str) -> None:
    (stmt,) = module(code + "\n").body
    assert isinstance(stmt, ast.Expr)
    assert ast.unparse(stmt.value) == expected
    assert same_as_python(stmt.value, code + "\n", expression=True)


# Precedence and associativity, spelled out.
STRUCTURES = [
    (
        "a + b * c",
        "BinOp(left=Name(id='a', ctx=Load()), op=Add(), right=BinOp(left=Name(id='b', ctx=Load()), op=Mult(), right=Name(id='c', ctx=Load())))",
    ),
    (
        "a - b - c",
        "BinOp(left=BinOp(left=Name(id='a', ctx=Load()), op=Sub(), right=Name(id='b', ctx=Load())), op=Sub(), right=Name(id='c', ctx=Load()))",
    ),
    (
        "a ** b ** c",
        "BinOp(left=Name(id='a', ctx=Load()), op=Pow(), right=BinOp(left=Name(id='b', ctx=Load()), op=Pow(), right=Name(id='c', ctx=Load())))",
    ),
    (
        "-a ** b",
        "UnaryOp(op=USub(), operand=BinOp(left=Name(id='a', ctx=Load()), op=Pow(), right=Name(id='b', ctx=Load())))",
    ),
    (
        "a and b or c",
        "BoolOp(op=Or(), values=[BoolOp(op=And(), values=[Name(id='a', ctx=Load()), Name(id='b', ctx=Load())]), Name(id='c', ctx=Load())])",
    ),
    (
        "0 < x < 1",
        "Compare(left=Constant(value=0), ops=[Lt(), Lt()], comparators=[Name(id='x', ctx=Load()), Constant(value=1)])",
    ),
    (
        "a is not b",
        "Compare(left=Name(id='a', ctx=Load()), ops=[IsNot()], comparators=[Name(id='b', ctx=Load())])",
    ),
    (
        "a.b.c",
        "Attribute(value=Attribute(value=Name(id='a', ctx=Load()), attr='b', ctx=Load()), attr='c', ctx=Load())",
    ),
]


@pytest.mark.parametrize("code, expected", STRUCTURES, ids=[e[0] for e in STRUCTURES])
def test_structure(code: str, expected: str) -> None:
    (stmt,) = module(code + "\n").body
    assert ast.dump(stmt.value) == expected  # type: ignore[attr-defined]


STATEMENTS = [
    ("x = 1", "x = 1"),
    ("a = b = 1", "a = b = 1"),
    ("a, b = 1, 2", "a, b = (1, 2)"),
    ("g, = f()", "g, = f()"),
    ("(a, b) = c", "a, b = c"),
    ("[a, b] = c", "[a, b] = c"),
    ("x[0] = 5", "x[0] = 5"),
    ("x.grad = None", "x.grad = None"),
    ("x += 1", "x += 1"),
    ("x[0] -= 1", "x[0] -= 1"),
    ("x.a *= 2", "x.a *= 2"),
    ("x /= 2; x //= 2; x %= 2; x **= 2; x @= y", "x /= 2\nx //= 2\nx %= 2\nx **= 2\nx @= y"),
    ("x &= 1; x |= 1; x ^= 1", "x &= 1\nx |= 1\nx ^= 1"),
    ("pass", "pass"),
    ("while x:\n    break\n    continue", "while x:\n    break\n    continue"),
    ("def f():\n    return", "def f():\n    return"),
    (
        "def f(a, b=2, *args, c, d=4, **kw):\n    return a",
        "def f(a, b=2, *args, c, d=4, **kw):\n    return a",
    ),
    ("def f(x: float, *, k: int = 1) -> float: return x", "def f(x, *, k=1):\n    return x"),
    ("def f():\n    '''doc'''\n    pass", 'def f():\n    """doc"""\n    pass'),
    ("@torch.no_grad()\n@d\ndef f():\n    pass", "@torch.no_grad()\n@d\ndef f():\n    pass"),
    ("raise", "raise"),
    ("raise E('m') from None", "raise E('m') from None"),
    ("global a, b", "global a, b"),
    (
        "def f():\n    nonlocal_x = 1\n    def g():\n        nonlocal nonlocal_x",
        "def f():\n    nonlocal_x = 1\n\n    def g():\n        nonlocal nonlocal_x",
    ),
    ("del a, b[0]", "del a, b[0]"),
    ("assert x", "assert x"),
    ("assert x, 'm'", "assert x, 'm'"),
    ("import torch", "import torch"),
    ("import torch as t, math", "import torch as t, math"),
    ("import torch.nn.functional as F", "import torch.nn.functional as F"),
    ("from torch import tensor, ones as o", "from torch import tensor, ones as o"),
    (
        "from torch.autograd import (grad,\n    backward)",
        "from torch.autograd import grad, backward",
    ),
    ("from m import *", "from m import *"),
    (
        "if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w",
        "if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w",
    ),
    ("if a: x", "if a:\n    x"),
    ("while a:\n    pass\nelse:\n    x", "while a:\n    pass\nelse:\n    x"),
    (
        "for i, (a, b) in z:\n    pass\nelse:\n    pass",
        "for i, (a, b) in z:\n    pass\nelse:\n    pass",
    ),
    ("for x in 1, 2:\n    pass", "for x in (1, 2):\n    pass"),
    (
        "try:\n    a\nexcept E as e:\n    b\nexcept (F, G):\n    c\nexcept:\n    d\nelse:\n    e\nfinally:\n    f",
        "try:\n    a\nexcept E as e:\n    b\nexcept (F, G):\n    c\nexcept:\n    d\nelse:\n    e\nfinally:\n    f",
    ),
    ("try:\n    a\nfinally:\n    b", "try:\n    a\nfinally:\n    b"),
    ("with a as b, c:\n    pass", "with a as b, c:\n    pass"),
    ("with torch.no_grad():\n    pass", "with torch.no_grad():\n    pass"),
    ("x = 1; y = 2;", "x = 1\ny = 2"),
    ("x = (1 +\n     2)", "x = 1 + 2"),
    ("x = 1 + \\\n    2", "x = 1 + 2"),
    ("# only a comment", ""),
    ("", ""),
    ("\n\n  # indented comment\nx = 1  # trailing\n\n", "x = 1"),
    ("if a:\n    # comment\n\n    x\n  # odd comment\n", "if a:\n    x"),
    ("if a:\n\tx\n", "if a:\n    x"),
]


@pytest.mark.parametrize("code, expected", STATEMENTS, ids=[s[0][:30] for s in STATEMENTS])
def test_statements(code: str, expected: str) -> None:
    tree = module(code + "\n")
    assert ast.unparse(tree) == expected
    if "->" not in code:  # (annotations of functions are left out: they never run)
        assert same_as_python(tree, code + "\n")


def test_no_final_newline_crlf_and_bom() -> None:
    assert ast.unparse(module("x = 1")) == "x = 1"
    assert ast.unparse(module("if a:\n    x = 1")) == "if a:\n    x = 1"
    assert ast.unparse(module("\ufeffx = 1\r\ny = 2\r\n")) == "x = 1\ny = 2"
    assert ast.unparse(module("x = 1  # no newline")) == "x = 1"


def test_keywords_are_not_names() -> None:
    for code in ("if = 1\n", "x = else\n", "lambda = 2\n", "x.if\n", "def for(): pass\n"):
        with pytest.raises(ScriptSyntaxError):
            parse(Source("t.ad", code))


# ------------------------------------------------------------------ spans


def spans_of(code: str) -> dict[str, str]:
    """type name -> snippet of the first node of that type (in source order)."""
    source = Source("t.ad", code)
    out: dict[str, str] = {}
    for node in walk(parse(source)):
        if hasattr(node, "lineno"):
            out.setdefault(type(node).__name__, source.snippet(span_of(node)))
    return out


def test_expression_spans() -> None:
    s = spans_of("y = (a + b) * f(x, k=2)[0].grad\n")
    assert s["Assign"] == "y = (a + b) * f(x, k=2)[0].grad"
    assert s["BinOp"] == "(a + b) * f(x, k=2)[0].grad"
    assert s["Attribute"] == "f(x, k=2)[0].grad"
    assert s["Subscript"] == "f(x, k=2)[0]"
    assert s["Call"] == "f(x, k=2)"
    assert s["keyword"] == "k=2"
    s = spans_of("f(*a, **k)\n")
    assert (s["Starred"], s["keyword"]) == ("*a", "**k")


def test_chain_spans_are_each_prefix() -> None:
    source = Source("t.ad", "z = a + b - c\n")
    (stmt,) = parse(source).body
    outer = stmt.value  # type: ignore[attr-defined]
    assert source.snippet(span_of(outer)) == "a + b - c"
    assert source.snippet(span_of(outer.left)) == "a + b"


def test_statement_spans() -> None:
    code = "if x:\n    y = 1\nelse:\n    y = 2\nfor i in r:\n    pass\ndef f(a):\n    return a\nz = [i for i in r]\n"
    source = Source("t.ad", code)
    stmts = parse(source).body
    assert [(s.lineno, s.end_lineno) for s in stmts] == [(1, 4), (5, 6), (7, 8), (9, 9)]
    assert source.snippet(span_of(stmts[1])) == "for i in r:\n    pass"
    assert source.snippet(span_of(stmts[2].body[0])) == "return a"  # type: ignore[attr-defined]
    assert stmts[0].col_offset == 0


def test_elif_is_placed_at_its_test() -> None:
    # The chain is one statement (the `if`'s); each `elif` is an If at its test.
    source = Source("t.ad", "if a:\n    x\nelif b:\n    y\nelse:\n    if c:\n        z\n")
    (stmt,) = parse(source).body
    elif_ = stmt.orelse[0]  # type: ignore[attr-defined]
    assert source.snippet(span_of(elif_)) == "b"
    nested = elif_.orelse[0]
    assert source.snippet(span_of(nested)) == "if c:\n        z"


def test_fstring_field_spans_point_into_the_script() -> None:
    source = Source("t.ad", "s = f'ab{x + y:>{w}}' + f'''\n{  z }'''\n")
    names = [n for n in walk(parse(source)) if isinstance(n, ast.Name)]
    spans = [span_of(n) for n in names]
    assert [
        (n.id, s.line, s.column, source.snippet(s)) for n, s in zip(names, spans, strict=True)
    ] == [
        ("s", 1, 1, "s"),
        ("x", 1, 10, "x"),
        ("y", 1, 14, "y"),
        ("w", 1, 18, "w"),
        ("z", 2, 4, "z"),
    ]


def test_paren_spans_include_parentheses() -> None:
    s = spans_of("x = (a + b).sum()\n")
    assert s["BinOp"] == "(a + b)"


# ------------------------------------------------------------ syntax errors

ERRORS = [
    # code, kind, message, line, column
    ("x = \n", "SyntaxError", "expected an expression", 1, 5),
    ("x = 1 +\n", "SyntaxError", "expected an expression", 1, 8),
    ("x = 3 +* 4\n", "SyntaxError", "expected an expression", 1, 8),
    ("if x\n    pass\n", "SyntaxError", "expected ':'", 1, 5),
    ("while True\n    pass\n", "SyntaxError", "expected ':'", 1, 11),
    ("def f()\n    pass\n", "SyntaxError", "expected ':'", 1, 8),
    ("x = (1,\ny = 2\n", "SyntaxError", "'(' was never closed", 1, 5),
    ("f(a,\n  b\n", "SyntaxError", "'(' was never closed", 1, 2),
    ("x = [1, 2", "SyntaxError", "'[' was never closed", 1, 5),
    (
        "d = {'a': [1,\n 2}\n",
        "SyntaxError",
        "closing parenthesis '}' does not match opening parenthesis '[' on line 1",
        2,
        3,
    ),
    ("x = [1, 2\ny = 3\n", "SyntaxError", "'[' was never closed", 1, 5),
    ("x = 1 if y\n", "SyntaxError", "expected 'else' after 'if' expression", 1, 11),
    (
        "x = (1]\n",
        "SyntaxError",
        "closing parenthesis ']' does not match opening parenthesis '('",
        1,
        7,
    ),
    ("x = 1)\n", "SyntaxError", "unmatched ')'", 1, 6),
    ("x = )\n", "SyntaxError", "unmatched ')'", 1, 5),
    ("  x = 1\n", "IndentationError", "unexpected indent", 1, 1),
    ("x = 1\n    y = 2\n", "IndentationError", "unexpected indent", 2, 1),
    (
        "if x:\n    a = 1\n  b = 2\n",
        "IndentationError",
        "unindent does not match any outer indentation level",
        3,
        3,
    ),
    (
        "def f():\n        a = 1\n    b = 2\n",
        "IndentationError",
        "unindent does not match any outer indentation level",
        3,
        5,
    ),
    (
        "if x:\npass\n",
        "IndentationError",
        "expected an indented block after 'if' statement on line 1",
        2,
        1,
    ),
    (
        "for i in x:\n\nprint(i)\n",
        "IndentationError",
        "expected an indented block after 'for' statement on line 1",
        3,
        1,
    ),
    (
        "def f():\nreturn 1\n",
        "IndentationError",
        "expected an indented block after function definition on line 1",
        2,
        1,
    ),
    (
        "if x:\n    pass\nelse:\n",
        "IndentationError",
        "expected an indented block after 'else' statement on line 3",
        3,
        6,
    ),
    (
        "try:\n",
        "IndentationError",
        "expected an indented block after 'try' statement on line 1",
        1,
        5,
    ),
    ("x = 'abc\n", "SyntaxError", "unterminated string literal (detected at line 1)", 1, 5),
    (
        'x = """abc\n\n',
        "SyntaxError",
        "unterminated triple-quoted string literal (detected at line 1)",
        1,
        5,
    ),
    ("x = $\n", "SyntaxError", "invalid character '$' (U+0024)", 1, 5),
    ("x = 1 \\ 2\n", "SyntaxError", "unexpected character after line continuation character", 1, 7),
    ("x = 1 2\n", "SyntaxError", "invalid syntax", 1, 7),
    ("f(a b)\n", "SyntaxError", "invalid syntax. Perhaps you forgot a comma?", 1, 3),
    ("[1 2]\n", "SyntaxError", "invalid syntax. Perhaps you forgot a comma?", 1, 2),
    (
        "if x = 1:\n    pass\n",
        "SyntaxError",
        "invalid syntax. Maybe you meant '==' instead of '='?",
        1,
        6,
    ),
    (
        "print 'hi'\n",
        "SyntaxError",
        "Missing parentheses in call to 'print'. Did you mean print(...)?",
        1,
        1,
    ),
    ("else:\n    pass\n", "SyntaxError", "invalid syntax", 1, 1),
    ("await x\n", "SyntaxError", "'await' is not supported in adcli scripts", 1, 1),
    ("x = await\n", "SyntaxError", "'await' is not supported in adcli scripts", 1, 5),
    ("yield 1\n", "SyntaxError", "'yield' outside function", 1, 1),
    ("class A(x=1): pass\n", "SyntaxError", "class keywords and *bases are not supported", 1, 9),
    ("return 1\n", "SyntaxError", "'return' outside function", 1, 1),
    ("break\n", "SyntaxError", "'break' outside loop", 1, 1),
    ("def f():\n    continue\n", "SyntaxError", "'continue' not properly in loop", 2, 5),
    ("nonlocal x\n", "SyntaxError", "nonlocal declaration not allowed at module level", 1, 1),
    (
        "f() = 1\n",
        "SyntaxError",
        "cannot assign to function call here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    (
        "1 = x\n",
        "SyntaxError",
        "cannot assign to literal here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    (
        "a + b = 1\n",
        "SyntaxError",
        "cannot assign to expression here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    ("None = 1\n", "SyntaxError", "cannot assign to None", 1, 1),
    ("(a, 1) = 2\n", "SyntaxError", "cannot assign to literal", 1, 5),
    ("for f() in x: pass\n", "SyntaxError", "cannot assign to function call", 1, 5),
    (
        "f() += 1\n",
        "SyntaxError",
        "'function call' is an illegal expression for augmented assignment",
        1,
        1,
    ),
    (
        "a, b += 1\n",
        "SyntaxError",
        "'tuple' is an illegal expression for augmented assignment",
        1,
        1,
    ),
    ("del f()\n", "SyntaxError", "cannot delete function call", 1, 5),
    ("f(a=1, 2)\n", "SyntaxError", "positional argument follows keyword argument", 1, 8),
    ("f(**a, 2)\n", "SyntaxError", "positional argument follows keyword argument unpacking", 1, 8),
    (
        "f(**a, *b)\n",
        "SyntaxError",
        "iterable argument unpacking follows keyword argument unpacking",
        1,
        8,
    ),
    ("f(a=1, a=2)\n", "SyntaxError", "keyword argument repeated: a", 1, 8),
    (
        "f(a + 1=2)\n",
        "SyntaxError",
        'expression cannot contain assignment, perhaps you meant "=="?',
        1,
        3,
    ),
    ("f(x for x in y, 1)\n", "SyntaxError", "Generator expression must be parenthesized", 1, 3),
    (
        "def f(a=1, b): pass\n",
        "SyntaxError",
        "non-default argument follows default argument",
        1,
        12,
    ),
    ("def f(a, a): pass\n", "SyntaxError", "duplicate argument 'a' in function definition", 1, 10),
    ("def f(*): pass\n", "SyntaxError", "named arguments must follow bare *", 1, 7),
    ("def f(**k, a): pass\n", "SyntaxError", "arguments cannot follow var-keyword argument", 1, 12),
    ("s = f'{}'\n", "SyntaxError", "f-string: empty expression not allowed", 1, 7),
    ("s = f'{x'\n", "SyntaxError", "f-string: expecting '}'", 1, 7),
    ("s = f'}'\n", "SyntaxError", "f-string: single '}' is not allowed", 1, 7),
    ("s = f'{1 +}'\n", "SyntaxError", "f-string: expected an expression", 1, 11),
    (
        "s = f'{x!z}'\n",
        "SyntaxError",
        "f-string: invalid conversion character: expected 's', 'r', or 'a'",
        1,
        9,
    ),
    ("s = f'{x # c}'\n", "SyntaxError", "f-string expression part cannot include '#'", 1, 7),
    ("s = b'bytes'\n", "SyntaxError", "bytes literals are not supported", 1, 5),
    (
        "from m import *\ndef f():\n    from m import *\n",
        "SyntaxError",
        "import * only allowed at module level",
        3,
        5,
    ),
]


@pytest.mark.parametrize(
    "code, kind, message, line, column", ERRORS, ids=[e[0][:25] for e in ERRORS]
)
def test_syntax_errors(code: str, kind: str, message: str, line: int, column: int) -> None:
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("t.ad", code))
    err = info.value
    assert (err.kind, err.message) == (kind, message)
    assert (err.span.line, err.span.column) == (line, column)
    assert err.source is not None and err.source.path == "t.ad"


def test_diagnostic_text_for_syntax_error() -> None:
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("x.ad", "y = 2\nif y > 1\n    print(y)\n"))
    assert format_diagnostic(info.value) == (
        "x.ad:2:9: error: SyntaxError: expected ':'\n  2 | if y > 1\n    |         ^"
    )


def test_diagnostic_text_for_unclosed_paren() -> None:
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("x.ad", "total = sum([1, 2,\n             3]\nprint(total)\n"))
    assert format_diagnostic(info.value) == (
        "x.ad:1:12: error: SyntaxError: '(' was never closed\n"
        "  1 | total = sum([1, 2,\n"
        "    |            ^"
    )


def test_diagnostic_text_for_bad_dedent() -> None:
    code = "def f(x):\n    if x:\n        return 1\n      return 2\n"
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("x.ad", code))
    text = format_diagnostic(info.value)
    assert text.splitlines()[0] == (
        "x.ad:4:7: error: IndentationError: unindent does not match any outer indentation level"
    )
    assert text.splitlines()[1] == "  4 |       return 2"


def test_error_in_later_line_of_multiline_statement() -> None:
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("t.ad", "x = f(1,\n      2 3)\n"))
    assert (info.value.span.line, info.value.span.column) == (2, 7)
    assert info.value.message == "invalid syntax. Perhaps you forgot a comma?"


# ---------------------------------------------------------- source, errors


def test_source_lines_and_snippets() -> None:
    src = Source("a.ad", "ab\ncd ef\n\nlast")
    assert src.line_text(1) == "ab"
    assert src.line_text(2) == "cd ef"
    assert src.line_text(4) == "last"
    assert src.line_text(9) == ""
    assert src.line_count == 4
    assert src.snippet(Span(2, 4, 2, 6)) == "ef"
    assert src.snippet(Span(1, 2, 2, 3)) == "b\ncd"
    assert Source("b.ad", "x\n").line_count == 1


def test_render_caret_python_style() -> None:
    src = Source("x.ad", "a = 1\n    y.backward()\n")
    assert render_caret(src, Span(2, 5, 2, 17)) == (
        '  File "x.ad", line 2, column 5\n    y.backward()\n    ^~~~~~~~~~~~'
    )


def test_caret_with_tabs_and_multiline_spans() -> None:
    src = Source("x.ad", "if a:\n\tx = (1 +\n\t     2)\n")
    line, marks = caret_line(src, Span(2, 6, 3, 8))
    assert line == "        x = (1 +"
    assert marks == "            ^~~~"


def test_caret_on_very_long_line_is_windowed() -> None:
    text = "x = " + " + ".join(["1"] * 200) + " + y\n"
    src = Source("x.ad", text)
    col = text.index("y") + 1
    line, marks = caret_line(src, Span(1, col, 1, col + 1))
    assert len(line) < 120
    assert line[marks.index("^")] == "y"


def test_format_diagnostic_without_position() -> None:
    err = errors.ScriptRuntimeError("boom", kind="ValueError")
    assert format_diagnostic(err) == "<script>: error: ValueError: boom"
    err2 = errors.ScriptRuntimeError(
        "", Span(1, 1, 1, 2), Source("q.ad", "x\n"), kind="AssertionError"
    )
    assert format_diagnostic(err2).splitlines()[0] == "q.ad:1:1: error: AssertionError"


def test_exit_codes() -> None:
    assert (errors.OK, errors.SCRIPT_ERROR, errors.USAGE_ERROR) == (0, 1, 2)


def test_error_classes() -> None:
    assert issubclass(ScriptSyntaxError, errors.AdError)
    assert issubclass(errors.ScriptRuntimeError, errors.AdError)
    err = errors.ScriptRuntimeError("m", kind="TypeError")
    assert (err.kind, str(err), err.traceback, err.catchable) == ("TypeError", "m", [], True)
    assert errors.LimitError("x").kind == "LimitError"


def test_grammar_is_found() -> None:
    text = _grammar_text()
    assert "start:" in text and "%declare _INDENT _DEDENT" in text


def test_hundred_thousand_term_sum_parses_flat() -> None:
    tree = parse(Source("t.ad", "x = " + " + ".join(["1"] * 20_000) + "\n"))
    assert ast.dump(tree.body[0].value.right) == "Constant(value=1)"  # type: ignore[attr-defined]


def test_deeply_nested_parentheses_parse() -> None:
    # 1,000 levels parse (flat); over 1,500 is refused before parsing (adcli.lang.limits)
    tree = parse(Source("t.ad", "x = " + "(" * 1_000 + "1" + ")" * 1_000 + "\n"))
    assert ast.unparse(tree) == "x = 1"
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("t.ad", "x = " + "(" * 50_000 + "1" + ")" * 50_000 + "\n"))
    assert info.value.kind == "LimitError"
