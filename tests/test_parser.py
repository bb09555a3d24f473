"""The grammar, the AST builder, syntax errors and their text; Source and errors."""

# ruff: noqa: E501 - tables of source snippets read best one per line

from __future__ import annotations

import pytest

from adcli.lang import ast, errors
from adcli.lang.ast import dump, walk
from adcli.lang.errors import ScriptSyntaxError, format_diagnostic
from adcli.lang.parser import _grammar_text, parse
from adcli.lang.source import Source, Span, caret_line, render_caret


def body(code: str) -> str:
    return dump(parse(Source("t.ad", code)).body)


def expr(code: str) -> str:
    """The dump of the single expression statement `code`."""
    (stmt,) = parse(Source("t.ad", code)).body
    assert isinstance(stmt, ast.ExprStmt)
    return dump(stmt.value)


# ------------------------------------------------------------ constructs

EXPRESSIONS = [
    ("1", "Constant(1)"),
    ("1.5", "Constant(1.5)"),
    ("1e-3", "Constant(0.001)"),
    ("1.", "Constant(1.0)"),
    (".5", "Constant(0.5)"),
    ("1_000", "Constant(1000)"),
    ("0x1f", "Constant(31)"),
    ("0o17", "Constant(15)"),
    ("0b101", "Constant(5)"),
    ("'a'", "Constant('a')"),
    ('"a\\nb"', "Constant('a\\nb')"),
    ("r'a\\n'", "Constant('a\\\\n')"),
    ("'a' \"b\" '''c'''", "Constant('abc')"),
    ('"""doc\nstring"""', "Constant('doc\\nstring')"),
    ("True", "Constant(True)"),
    ("False", "Constant(False)"),
    ("None", "Constant(None)"),
    ("...", "Constant(Ellipsis)"),
    ("x", "Name('x')"),
    ("[]", "ListExpr(())"),
    ("[1, 2,]", "ListExpr((Constant(1), Constant(2)))"),
    ("()", "TupleExpr(())"),
    ("(1,)", "TupleExpr((Constant(1),))"),
    ("(1, 2)", "TupleExpr((Constant(1), Constant(2)))"),
    ("(1)", "Constant(1)"),
    ("{}", "DictExpr((), ())"),
    ("{'a': 1, 2: x}", "DictExpr((Constant('a'), Constant(2)), (Constant(1), Name('x')))"),
    ("a + b * c", "BinOp(Name('a'), '+', BinOp(Name('b'), '*', Name('c')))"),
    ("a - b - c", "BinOp(BinOp(Name('a'), '-', Name('b')), '-', Name('c'))"),
    ("a ** b ** c", "BinOp(Name('a'), '**', BinOp(Name('b'), '**', Name('c')))"),
    ("-a ** b", "UnaryOp('-', BinOp(Name('a'), '**', Name('b')))"),
    (
        "a @ b // c % d / e",
        "BinOp(BinOp(BinOp(BinOp(Name('a'), '@', Name('b')), '//', Name('c')), '%', Name('d')), '/', Name('e'))",
    ),
    (
        "a & b | c ^ d",
        "BinOp(BinOp(Name('a'), '&', Name('b')), '|', BinOp(Name('c'), '^', Name('d')))",
    ),
    ("~a", "UnaryOp('~', Name('a'))"),
    ("+a", "UnaryOp('+', Name('a'))"),
    ("not a", "UnaryOp('not', Name('a'))"),
    ("a and b or c", "BoolOp('or', (BoolOp('and', (Name('a'), Name('b'))), Name('c')))"),
    ("a or b or c", "BoolOp('or', (Name('a'), Name('b'), Name('c')))"),
    ("0 < x < 1", "Compare(Constant(0), ('<', '<'), (Name('x'), Constant(1)))"),
    ("a is not b", "Compare(Name('a'), ('is not',), (Name('b'),))"),
    ("a not in b", "Compare(Name('a'), ('not in',), (Name('b'),))"),
    ("a in b", "Compare(Name('a'), ('in',), (Name('b'),))"),
    (
        "a == b != c >= d <= e > f",
        "Compare(Name('a'), ('==', '!=', '>=', '<=', '>'), (Name('b'), Name('c'), Name('d'), Name('e'), Name('f')))",
    ),
    ("a if b else c", "IfExp(Name('b'), Name('a'), Name('c'))"),
    ("lambda: 0", "Lambda((), Constant(0))"),
    (
        "lambda x, y=1, *a, k, **kw: x",
        "Lambda((Param('x', 'pos', None), Param('y', 'pos', Constant(1)), Param('a', 'vararg', None), Param('k', 'kwonly', None), Param('kw', 'kwarg', None)), Name('x'))",
    ),
    ("f()", "Call(Name('f'), ())"),
    (
        "f(a, b=1, *c, **d)",
        "Call(Name('f'), (Arg('pos', None, Name('a')), Arg('kw', 'b', Constant(1)), Arg('star', None, Name('c')), Arg('dstar', None, Name('d'))))",
    ),
    (
        "f(x for x in y)",
        "Call(Name('f'), (Arg('pos', None, GeneratorExp(Name('x'), (Comprehension(Name('x'), Name('y'), ()),))),))",
    ),
    ("a.b.c", "Attribute(Attribute(Name('a'), 'b'), 'c')"),
    ("x[0]", "Subscript(Name('x'), Constant(0))"),
    ("x[:, 1]", "Subscript(Name('x'), TupleExpr((Slice(None, None, None), Constant(1))))"),
    ("x[1:3]", "Subscript(Name('x'), Slice(Constant(1), Constant(3), None))"),
    ("x[::2]", "Subscript(Name('x'), Slice(None, None, Constant(2)))"),
    ("x[1:2:3]", "Subscript(Name('x'), Slice(Constant(1), Constant(2), Constant(3)))"),
    ("x[..., 0]", "Subscript(Name('x'), TupleExpr((Constant(Ellipsis), Constant(0))))"),
    ("x[None]", "Subscript(Name('x'), Constant(None))"),
    ("x[idx]", "Subscript(Name('x'), Name('idx'))"),
    ("x[0,]", "Subscript(Name('x'), TupleExpr((Constant(0),)))"),
    (
        "[f(x) for x in xs if c]",
        "ListComp(Call(Name('f'), (Arg('pos', None, Name('x')),)), (Comprehension(Name('x'), Name('xs'), (Name('c'),)),))",
    ),
    (
        "[y for x in a if p if q for y in x]",
        "ListComp(Name('y'), (Comprehension(Name('x'), Name('a'), (Name('p'), Name('q'))), Comprehension(Name('y'), Name('x'), ())))",
    ),
    (
        "[a for a, b in z]",
        "ListComp(Name('a'), (Comprehension(TupleExpr((Name('a'), Name('b'))), Name('z'), ()),))",
    ),
    (
        "{k: v for k, v in z}",
        "DictComp(Name('k'), Name('v'), (Comprehension(TupleExpr((Name('k'), Name('v'))), Name('z'), ()),))",
    ),
    ("(x for x in y)", "GeneratorExp(Name('x'), (Comprehension(Name('x'), Name('y'), ()),))"),
    ("f'a{x}b'", "FString(('a', FormattedValue(Name('x'), None, None), 'b'))"),
    ("f'{x:.4f}'", "FString((FormattedValue(Name('x'), None, FString(('.4f',))),))"),
    ("f'{x!r}'", "FString((FormattedValue(Name('x'), 'r', None),))"),
    (
        "f'{x!s:>{w}}'",
        "FString((FormattedValue(Name('x'), 's', FString(('>', FormattedValue(Name('w'), None, None)))),))",
    ),
    ("f'{x=}'", "FString(('x=', FormattedValue(Name('x'), 'r', None)))"),
    (
        "f'{{}}{a + b}'",
        "FString(('{}', FormattedValue(BinOp(Name('a'), '+', Name('b')), None, None)))",
    ),
    (
        "f'{d[\"k\"]}'",
        "FString((FormattedValue(Subscript(Name('d'), Constant('k')), None, None),))",
    ),
    (
        "f'{x:{w}.{p}f}'",
        "FString((FormattedValue(Name('x'), None, FString((FormattedValue(Name('w'), None, None), '.', FormattedValue(Name('p'), None, None), 'f'))),))",
    ),
    ("'a' f'{x}'", "FString(('a', FormattedValue(Name('x'), None, None)))"),
    ("f'\\n{x}'", "FString(('\\n', FormattedValue(Name('x'), None, None)))"),
    ("f'''{\nx\n}'''", "FString((FormattedValue(Name('x'), None, None),))"),
]


@pytest.mark.parametrize("code, expected", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_expressions(code: str, expected: str) -> None:
    assert expr(code + "\n") == expected


STATEMENTS = [
    ("x = 1", "(Assign((Name('x'),), Constant(1)),)"),
    ("a = b = 1", "(Assign((Name('a'), Name('b')), Constant(1)),)"),
    (
        "a, b = 1, 2",
        "(Assign((TupleExpr((Name('a'), Name('b'))),), TupleExpr((Constant(1), Constant(2)))),)",
    ),
    ("g, = f()", "(Assign((TupleExpr((Name('g'),)),), Call(Name('f'), ())),)"),
    ("(a, b) = c", "(Assign((TupleExpr((Name('a'), Name('b'))),), Name('c')),)"),
    ("[a, b] = c", "(Assign((ListExpr((Name('a'), Name('b'))),), Name('c')),)"),
    ("x[0] = 5", "(Assign((Subscript(Name('x'), Constant(0)),), Constant(5)),)"),
    ("x.grad = None", "(Assign((Attribute(Name('x'), 'grad'),), Constant(None)),)"),
    ("x += 1", "(AugAssign(Name('x'), '+', Constant(1)),)"),
    ("x[0] -= 1", "(AugAssign(Subscript(Name('x'), Constant(0)), '-', Constant(1)),)"),
    ("x.a *= 2", "(AugAssign(Attribute(Name('x'), 'a'), '*', Constant(2)),)"),
    (
        "x /= 2; x //= 2; x %= 2; x **= 2; x @= y",
        "(AugAssign(Name('x'), '/', Constant(2)), AugAssign(Name('x'), '//', Constant(2)), AugAssign(Name('x'), '%', Constant(2)), AugAssign(Name('x'), '**', Constant(2)), AugAssign(Name('x'), '@', Name('y')))",
    ),
    (
        "x &= 1; x |= 1; x ^= 1",
        "(AugAssign(Name('x'), '&', Constant(1)), AugAssign(Name('x'), '|', Constant(1)), AugAssign(Name('x'), '^', Constant(1)))",
    ),
    ("pass", "(Pass(),)"),
    ("while x:\n    break\n    continue", "(While(Name('x'), (Break(), Continue()), ()),)"),
    ("def f():\n    return", "(FunctionDef('f', (), (Return(None),), ()),)"),
    (
        "def f(a, b=2, *args, c, d=4, **kw):\n    return a",
        "(FunctionDef('f', (Param('a', 'pos', None), Param('b', 'pos', Constant(2)), Param('args', 'vararg', None), Param('c', 'kwonly', None), Param('d', 'kwonly', Constant(4)), Param('kw', 'kwarg', None)), (Return(Name('a')),), ()),)",
    ),
    (
        "def f(x: float, *, k: int = 1) -> float: return x",
        "(FunctionDef('f', (Param('x', 'pos', None), Param('', 'vararg', None), Param('k', 'kwonly', Constant(1))), (Return(Name('x')),), ()),)",
    ),
    (
        "def f():\n    '''doc'''\n    pass",
        "(FunctionDef('f', (), (ExprStmt(Constant('doc')), Pass()), ()),)",
    ),
    (
        "@torch.no_grad()\n@d\ndef f():\n    pass",
        "(FunctionDef('f', (), (Pass(),), (Call(Attribute(Name('torch'), 'no_grad'), ()), Name('d'))),)",
    ),
    ("raise", "(Raise(None, None),)"),
    (
        "raise E('m') from None",
        "(Raise(Call(Name('E'), (Arg('pos', None, Constant('m')),)), Constant(None)),)",
    ),
    ("global a, b", "(Global(('a', 'b')),)"),
    (
        "def f():\n    nonlocal_x = 1\n    def g():\n        nonlocal nonlocal_x",
        "(FunctionDef('f', (), (Assign((Name('nonlocal_x'),), Constant(1)), FunctionDef('g', (), (Nonlocal(('nonlocal_x',)),), ())), ()),)",
    ),
    ("del a, b[0]", "(Delete((Name('a'), Subscript(Name('b'), Constant(0)))),)"),
    ("assert x", "(Assert(Name('x'), None),)"),
    ("assert x, 'm'", "(Assert(Name('x'), Constant('m')),)"),
    ("import torch", "(Import((Alias('torch', None),)),)"),
    ("import torch as t, math", "(Import((Alias('torch', 't'), Alias('math', None))),)"),
    ("import torch.nn.functional as F", "(Import((Alias('torch.nn.functional', 'F'),)),)"),
    (
        "from torch import tensor, ones as o",
        "(ImportFrom('torch', (Alias('tensor', None), Alias('ones', 'o')), False),)",
    ),
    (
        "from torch.autograd import (grad,\n    backward)",
        "(ImportFrom('torch.autograd', (Alias('grad', None), Alias('backward', None)), False),)",
    ),
    ("from m import *", "(ImportFrom('m', (), True),)"),
    (
        "if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w",
        "(If((Name('a'), Name('b'), Name('c')), ((ExprStmt(Name('x')),), (ExprStmt(Name('y')),), (ExprStmt(Name('z')),)), (ExprStmt(Name('w')),)),)",
    ),
    ("if a: x", "(If((Name('a'),), ((ExprStmt(Name('x')),),), ()),)"),
    ("while a:\n    pass\nelse:\n    x", "(While(Name('a'), (Pass(),), (ExprStmt(Name('x')),)),)"),
    (
        "for i, (a, b) in z:\n    pass\nelse:\n    pass",
        "(For(TupleExpr((Name('i'), TupleExpr((Name('a'), Name('b'))))), Name('z'), (Pass(),), (Pass(),)),)",
    ),
    (
        "for x in 1, 2:\n    pass",
        "(For(Name('x'), TupleExpr((Constant(1), Constant(2))), (Pass(),), ()),)",
    ),
    (
        "try:\n    a\nexcept E as e:\n    b\nexcept (F, G):\n    c\nexcept:\n    d\nelse:\n    e\nfinally:\n    f",
        "(Try((ExprStmt(Name('a')),), (ExceptHandler(Name('E'), 'e', (ExprStmt(Name('b')),)), ExceptHandler(TupleExpr((Name('F'), Name('G'))), None, (ExprStmt(Name('c')),)), ExceptHandler(None, None, (ExprStmt(Name('d')),))), (ExprStmt(Name('e')),), (ExprStmt(Name('f')),)),)",
    ),
    (
        "try:\n    a\nfinally:\n    b",
        "(Try((ExprStmt(Name('a')),), (), (), (ExprStmt(Name('b')),)),)",
    ),
    (
        "with a as b, c:\n    pass",
        "(With((WithItem(Name('a'), Name('b')), WithItem(Name('c'), None)), (Pass(),)),)",
    ),
    (
        "with torch.no_grad():\n    pass",
        "(With((WithItem(Call(Attribute(Name('torch'), 'no_grad'), ()), None),), (Pass(),)),)",
    ),
    ("x = 1; y = 2;", "(Assign((Name('x'),), Constant(1)), Assign((Name('y'),), Constant(2)))"),
    ("x = (1 +\n     2)", "(Assign((Name('x'),), BinOp(Constant(1), '+', Constant(2))),)"),
    ("x = 1 + \\\n    2", "(Assign((Name('x'),), BinOp(Constant(1), '+', Constant(2))),)"),
    ("# only a comment", "()"),
    ("", "()"),
    ("\n\n  # indented comment\nx = 1  # trailing\n\n", "(Assign((Name('x'),), Constant(1)),)"),
    (
        "if a:\n    # comment\n\n    x\n  # odd comment\n",
        "(If((Name('a'),), ((ExprStmt(Name('x')),),), ()),)",
    ),
    ("if a:\n\tx\n", "(If((Name('a'),), ((ExprStmt(Name('x')),),), ()),)"),
]


@pytest.mark.parametrize("code, expected", STATEMENTS, ids=[s[0][:30] for s in STATEMENTS])
def test_statements(code: str, expected: str) -> None:
    assert body(code + "\n") == expected


def test_no_final_newline_crlf_and_bom() -> None:
    assert body("x = 1") == "(Assign((Name('x'),), Constant(1)),)"
    assert (
        body("if a:\n    x = 1")
        == "(If((Name('a'),), ((Assign((Name('x'),), Constant(1)),),), ()),)"
    )
    assert (
        body("\ufeffx = 1\r\ny = 2\r\n")
        == "(Assign((Name('x'),), Constant(1)), Assign((Name('y'),), Constant(2)))"
    )
    assert body("x = 1  # no newline") == "(Assign((Name('x'),), Constant(1)),)"


def test_keywords_are_not_names() -> None:
    for code in ("if = 1\n", "x = else\n", "lambda = 2\n", "x.if\n", "def for(): pass\n"):
        with pytest.raises(ScriptSyntaxError):
            parse(Source("t.ad", code))


# ------------------------------------------------------------------ spans


def spans_of(code: str) -> dict[str, str]:
    """type name -> snippet of the first node of that type."""
    source = Source("t.ad", code)
    out: dict[str, str] = {}
    for node in walk(parse(source)):
        out.setdefault(type(node).__name__, source.snippet(node.span))
    return out


def test_expression_spans() -> None:
    s = spans_of("y = (a + b) * f(x, k=2)[0].grad\n")
    assert s["Assign"] == "y = (a + b) * f(x, k=2)[0].grad"
    assert s["BinOp"] == "(a + b) * f(x, k=2)[0].grad"
    assert s["Attribute"] == "f(x, k=2)[0].grad"
    assert s["Subscript"] == "f(x, k=2)[0]"
    assert s["Call"] == "f(x, k=2)"
    assert s["Arg"] == "x"


def test_chain_spans_are_each_prefix() -> None:
    source = Source("t.ad", "z = a + b - c\n")
    (stmt,) = parse(source).body
    outer = stmt.value
    assert source.snippet(outer.span) == "a + b - c"
    assert source.snippet(outer.left.span) == "a + b"


def test_statement_spans() -> None:
    code = "if x:\n    y = 1\nelse:\n    y = 2\nfor i in r:\n    pass\ndef f(a):\n    return a\nz = [i for i in r]\n"
    source = Source("t.ad", code)
    stmts = parse(source).body
    assert [(s.span.line, s.span.end_line) for s in stmts] == [(1, 4), (5, 6), (7, 8), (9, 9)]
    assert source.snippet(stmts[1].span) == "for i in r:\n    pass"
    assert source.snippet(stmts[2].body[0].span) == "return a"
    assert stmts[0].span.column == 1


def test_fstring_field_spans_point_into_the_script() -> None:
    source = Source("t.ad", "s = f'ab{x + y:>{w}}' + f'''\n{  z }'''\n")
    names = [n for n in walk(parse(source)) if isinstance(n, ast.Name)]
    assert [(n.id, n.span.line, n.span.column, source.snippet(n.span)) for n in names] == [
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
    module = parse(Source("t.ad", "x = " + " + ".join(["1"] * 20_000) + "\n"))
    assert dump(module.body[0].value.right) == "Constant(1)"


def test_deeply_nested_parentheses_parse() -> None:
    # 1,000 levels parse (flat); over 1,500 is refused before parsing (adcli.lang.limits)
    module = parse(Source("t.ad", "x = " + "(" * 1_000 + "1" + ")" * 1_000 + "\n"))
    assert dump(module.body) == "(Assign((Name('x'),), Constant(1)),)"
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("t.ad", "x = " + "(" * 50_000 + "1" + ")" * 50_000 + "\n"))
    assert info.value.kind == "LimitError"
