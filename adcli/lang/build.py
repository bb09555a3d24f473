"""Parse tree (Lark) -> Python's own `ast` nodes, without recursion.

The tree this builds is the script as Python would parse it (`ast.Module`),
every node placed at the script's line and column (columns count characters).
`adcli.lang.compiler` then turns it into the guarded module CPython runs.
Where the grammar cannot refuse something Python's parser does (assigning to
a call, a keyword argument repeated, a bad f-string...), this module refuses
it with Python's wording.

`Builder.build` walks the Lark tree with an explicit stack (post-order), so
trees of any depth convert; left-associative operator chains arrive flat from
the grammar and become left-deep `BinOp`s in a loop. f-string fields are
parsed here too, through the `parse_expr` callback the parser supplies.

`validate` then checks what the grammar cannot: `return`/`break`/`continue`
placement and how deeply expressions nest (the compiler recurses over
nesting, so it is bounded here with a clear error instead of a crash).
"""

from __future__ import annotations

import ast as py
import re
import unicodedata
import warnings
from collections.abc import Callable
from typing import Any

from lark import Token, Tree

from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.source import Source, Span

__all__ = ["Builder", "validate", "span_of", "place", "is_elif", "children", "MAX_NESTING"]

# Deepest nesting of expressions/blocks a script may have. Flat chains
# (a + b + c, x.f().g[0], if/elif) do not count, parentheses alone do not count.
MAX_NESTING = 1500

# What Python's compiler adds to the digit-limit error for an integer literal.
_HEX_HINT = " - Consider hexadecimal for huge integer literals to avoid decimal conversion limits."

ParseExpr = Callable[[str, int, int], py.expr]

# The operators by their source text.
BINOPS: dict[str, type[py.operator]] = dict(
    zip(
        "+ - * / // % ** @ & | ^".split(),
        (py.Add, py.Sub, py.Mult, py.Div, py.FloorDiv, py.Mod, py.Pow, py.MatMult)
        + (py.BitAnd, py.BitOr, py.BitXor),
        strict=True,
    )
)
UNARY: dict[str, type[py.unaryop]] = {"-": py.USub, "+": py.UAdd, "~": py.Invert, "not": py.Not}
COMPARE: dict[str, type[py.cmpop]] = dict(
    zip(
        ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"),
        (py.Lt, py.LtE, py.Gt, py.GtE, py.Eq, py.NotEq, py.In, py.NotIn, py.Is, py.IsNot),
        strict=True,
    )
)
# ... and the source text of each operator class (the compiler's vocabulary).
TEXT: dict[type, str] = {
    cls: text for table in (BINOPS, UNARY, COMPARE) for text, cls in table.items()
}


def span_of(node: Any) -> Span:
    """The script span of a positioned node."""
    return Span(node.lineno, node.col_offset + 1, node.end_lineno, node.end_col_offset + 1)


def place(node: Any, span: Span) -> Any:
    """Position `node` at `span` (columns are 0-based in Python's nodes); return it."""
    node.lineno = span.line
    node.col_offset = span.column - 1
    node.end_lineno = span.end_line
    node.end_col_offset = span.end_column - 1
    return node


def children(node: py.AST) -> list[py.AST]:
    """The child nodes of `node` but its operators and contexts (``Load()``...): as
    `ast.iter_child_nodes`, several times faster (no generators)."""
    out: list[py.AST] = []
    for name in node._fields:
        v = getattr(node, name, None)
        if type(v) is list:
            if name != "ops":
                out.extend(x for x in v if isinstance(x, py.AST))
        elif isinstance(v, py.AST) and name != "ctx" and name != "op":
            out.append(v)
    return out


def is_elif(node: py.AST) -> bool:
    """Is `node` the `If` of an ``elif`` (placed at its test: see `Builder.r_if_stmt`)?"""
    if type(node) is not py.If:
        return False
    test = node.test
    return (node.lineno, node.col_offset) == (test.lineno, test.col_offset)  # type: ignore[attr-defined]


class _Suite:
    """A block of statements (for header spans)."""

    __slots__ = ("stmts",)

    def __init__(self, stmts: list) -> None:
        self.stmts = stmts


class _Else(_Suite):
    __slots__ = ()


class _Finally(_Suite):
    __slots__ = ()


class _CompIf:
    __slots__ = ("cond", "rest")

    def __init__(self, cond: py.expr, rest: object) -> None:
        self.cond = cond
        self.rest = rest


class _Param:
    """A parameter before its kind is known from its place (see `Builder._params`)."""

    __slots__ = ("name", "kind", "default", "span")

    def __init__(self, name: str, kind: str, default: py.expr | None, span: Span) -> None:
        self.name = name
        self.kind = kind  # "pos", "vararg" (a bare * has no name), "kwarg"
        self.default = default
        self.span = span


_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\n": "",
}
_ESCAPE = re.compile(
    r"\\(N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.S
)

_TARGET_WORDS = {
    py.Call: "function call",
    py.BinOp: "expression",
    py.UnaryOp: "expression",
    py.BoolOp: "expression",
    py.Compare: "comparison",
    py.IfExp: "conditional expression",
    py.Lambda: "lambda",
    py.JoinedStr: "f-string expression",
    py.Dict: "dict literal",
    py.ListComp: "list comprehension",
    py.DictComp: "dict comprehension",
    py.GeneratorExp: "generator expression",
    py.Slice: "slice",
    py.Tuple: "tuple",  # (augmented assignment: other targets unpack tuples and lists)
    py.List: "list",
}
_STORABLE = (py.Name, py.Attribute, py.Subscript)


def _target_word(node: py.AST) -> str:
    if isinstance(node, py.Constant):
        if node.value is None or node.value is True or node.value is False:
            return repr(node.value)
        if node.value is Ellipsis:
            return "ellipsis"
        return "literal"
    return _TARGET_WORDS.get(type(node), "expression")


_LOAD = py.Load()

# Rules that are one Python node with nothing to check: the node made of the
# rule's children `c`, which `Builder.build` places from the first to the last.
_NODES: dict[str, Callable[[list], py.AST]] = {
    "expr_stmt": lambda c: py.Expr(value=c[0]),
    "yield_stmt": lambda c: py.Expr(value=c[0]),
    "pass_stmt": lambda c: py.Pass(),
    "break_stmt": lambda c: py.Break(),
    "continue_stmt": lambda c: py.Continue(),
    "return_stmt": lambda c: py.Return(value=c[1]),
    "raise_stmt": lambda c: py.Raise(exc=c[1], cause=c[2]),
    "assert_stmt": lambda c: py.Assert(test=c[1], msg=c[2]),
    "import_stmt": lambda c: py.Import(names=c[1:]),
    "dotted_as_name": lambda c: py.alias(name=c[0][0], asname=str(c[1]) if c[1] else None),
    "import_as_name": lambda c: py.alias(name=str(c[0]), asname=str(c[1]) if c[1] else None),
    "import_from": lambda c: py.ImportFrom(module=c[1][0], names=[a for a in c[2:] if a], level=0),
    "global_stmt": lambda c: py.Global(names=[str(t) for t in c[1:]]),
    "nonlocal_stmt": lambda c: py.Nonlocal(names=[str(t) for t in c[1:]]),
    "while_stmt": lambda c: py.While(test=c[1], body=c[2].stmts, orelse=c[3].stmts if c[3] else []),
    "except_clause": lambda c: py.ExceptHandler(
        type=c[1], name=str(c[2]) if c[2] else None, body=c[3].stmts
    ),
    "with_stmt": lambda c: py.With(items=c[1:-1], body=c[-1].stmts, type_comment=None),
    "yield_expr": lambda c: py.Yield(value=c[1]),
    "star_expr": lambda c: py.Starred(value=c[1], ctx=_LOAD),
    "star_arg": lambda c: py.Starred(value=c[1], ctx=_LOAD),
    "dstar_arg": lambda c: py.keyword(arg=None, value=c[1]),
    "ifexp": lambda c: py.IfExp(test=c[1], body=c[0], orelse=c[2]),
    "or_test": lambda c: py.BoolOp(op=py.Or(), values=c),
    "and_test": lambda c: py.BoolOp(op=py.And(), values=c),
    "not_op": lambda c: py.UnaryOp(op=py.Not(), operand=c[1]),
    "unary": lambda c: py.UnaryOp(op=UNARY[str(c[0])](), operand=c[1]),
    "power": lambda c: py.BinOp(left=c[0], op=py.Pow(), right=c[1]),
    "comparison": lambda c: py.Compare(left=c[0], ops=c[1::2], comparators=c[2::2]),
    "getitem": lambda c: py.Subscript(value=c[0], slice=c[1], ctx=_LOAD),
    "getattr": lambda c: py.Attribute(value=c[0], attr=str(c[1]), ctx=_LOAD),
    "slice": lambda c: py.Slice(lower=c[0], upper=c[2], step=c[4] if len(c) > 4 else None),
    "name": lambda c: py.Name(id=str(c[0]), ctx=_LOAD),
    "const": lambda c: py.Constant(value={"None": None, "True": True, "False": False}[str(c[0])]),
    "ellipsis": lambda c: py.Constant(value=Ellipsis),
    "tuple": lambda c: py.Tuple(elts=[], ctx=_LOAD),
    "tuple_items": lambda c: py.Tuple(elts=c, ctx=_LOAD),
    "expr_tuple": lambda c: py.Tuple(elts=c, ctx=_LOAD),
    "subscript_tuple": lambda c: py.Tuple(elts=c, ctx=_LOAD),
    "list": lambda c: py.List(elts=c[1:-1], ctx=_LOAD),
    "set": lambda c: py.Set(elts=c[1:-1]),
    "dict": lambda c: py.Dict(keys=[k for k, _ in c[1:-1]], values=[v for _, v in c[1:-1]]),
    "listcomp": lambda c: py.ListComp(elt=c[1], generators=c[2]),
    "setcomp": lambda c: py.SetComp(elt=c[1], generators=c[2]),
    "genexp": lambda c: py.GeneratorExp(elt=c[1], generators=c[2]),
    "dictcomp": lambda c: py.DictComp(key=c[1], value=c[2], generators=c[3]),
}

# Rules that are parts of a node, handed up as they are to the rule holding them.
_PARTS: dict[str, Callable[[list], Any]] = {
    "eval_input": lambda c: c[0],
    "suite": _Suite,
    "elif_clause": lambda c: (c[0], c[1].stmts),
    "else_clause": lambda c: _Else(c[0].stmts),
    "finally_clause": lambda c: _Finally(c[0].stmts),
    "augop": lambda c: str(c[0])[:-1],
    "parameters": lambda c: c,
    "lambda_params": lambda c: c,
    "arguments": lambda c: c,
    "decorator": lambda c: c[-1],
    "dict_item": lambda c: (c[0], c[1]),
    "comp_op": lambda c: COMPARE[" ".join(str(t) for t in c)](),
    # An optional inlined rule ([_comp_iter]) leaves no placeholder.
    "comp_if": lambda c: _CompIf(c[0], c[1] if len(c) > 1 else None),
    # (unplaced: the statement ends at its module)
    "import_star": lambda c: py.alias(name="*", asname=None),
}


class Builder:
    """Converts one Lark parse tree into Python `ast` nodes placed in the script.

    `line_base`/`column_base` place a sub-parse (an f-string field, parsed as
    ``(expr)``) back at its position in the real script.
    """

    def __init__(
        self,
        source: Source,
        parse_expr: ParseExpr,
        line_base: int = 0,
        column_base: int = 0,
    ) -> None:
        self.source = source
        self.parse_expr = parse_expr
        self.line_base = line_base
        self.column_base = column_base
        self._bare: set[int] = set()  # generator expressions written without parentheses
        self._handlers: dict[str, Callable[[list], Any]] = dict(_PARTS)
        for name in dir(self):
            if name.startswith("r_"):
                self._handlers[name[2:]] = getattr(self, name)

    # ------------------------------------------------------------ positions

    def pos(self, line: int, column: int) -> tuple[int, int]:
        """Where (`line`, `column`) of the parsed text is in the script."""
        if not self.line_base:
            return line, column
        if line == 1:
            return self.line_base, self.column_base + column - 2
        return self.line_base + line - 1, column

    def span(self, tok: Token) -> Span:
        """Span of a token."""
        return Span(*self.pos(tok.line, tok.column), *self.pos(tok.end_line, tok.end_column))

    def _edge(self, x: object, end: bool) -> tuple[int, int] | None:
        """Where `x` (a token, node, block, span or list of them) starts, or ends."""
        if type(x) is Token:
            return self.pos(x.end_line, x.end_column) if end else self.pos(x.line, x.column)  # type: ignore[attr-defined]
        if isinstance(x, _Param):
            x = x.span
        if type(x) is Span:
            return (x.end_line, x.end_column) if end else (x.line, x.column)  # type: ignore[attr-defined]
        if isinstance(x, py.AST) and hasattr(x, "lineno"):
            return (x.end_lineno, x.end_col_offset + 1) if end else (x.lineno, x.col_offset + 1)  # type: ignore[attr-defined, operator]
        if isinstance(x, _Suite):
            x = x.stmts
        if isinstance(x, (list, tuple)):
            for y in reversed(x) if end else x:
                p = self._edge(y, end) if y is not None else None
                if p is not None:
                    return p
        return None

    def cspan(self, c: list) -> Span:
        """Span from the first to the last positioned child (token, node, block)."""
        start, end = self._edge(c, False), self._edge(c, True)
        if start is None or end is None:  # pragma: no cover - every rule has a token
            return Span(1, 1, 1, 2)
        return Span(start[0], start[1], end[0], end[1])

    def at(self, node: Any, c: list) -> Any:
        """`node` placed from the first to the last positioned item of `c`."""
        return place(node, self.cspan(c))

    def error(self, message: str, where: Any) -> ScriptSyntaxError:
        """A syntax error at `where` (a span or a node) of this builder's source."""
        span = where if type(where) is Span else span_of(where)
        return ScriptSyntaxError(message, span, self.source)

    # ------------------------------------------------------------- the walk

    def build(self, tree: Tree) -> Any:
        """Convert `tree` bottom-up with an explicit stack (no recursion)."""
        handlers = self._handlers
        out: list[Any] = []
        stack: list[tuple[Any, bool]] = [(tree, False)]
        while stack:
            node, ready = stack.pop()
            if not isinstance(node, Tree):
                out.append(node)
            elif ready:
                n = len(node.children)
                args = out[len(out) - n :]
                del out[len(out) - n :]
                make = _NODES.get(node.data)
                out.append(self.at(make(args), args) if make else handlers[node.data](args))
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children))
        return out[0]

    # ----------------------------------------------------------- statements

    def r_start(self, c: list) -> py.Module:
        module = py.Module(body=c, type_ignores=[])
        module.source = self.source  # type: ignore[attr-defined]
        return module

    def r_assign_stmt(self, c: list) -> py.Assign:
        *targets, value = c
        for t in targets:
            self._check_target(t, "assign", direct=len(targets) == 1)
        return self.at(py.Assign(targets=targets, value=value, type_comment=None), c)

    def r_augassign_stmt(self, c: list) -> py.AugAssign:
        target, op, value = c
        if not isinstance(target, _STORABLE):
            raise self.error(
                f"'{_target_word(target)}' is an illegal expression for augmented assignment",
                target,
            )
        target.ctx = py.Store()
        return self.at(py.AugAssign(target=target, op=BINOPS[op](), value=value), c)

    def r_del_stmt(self, c: list) -> py.Delete:
        target = c[1]
        targets = target.elts if type(target) is py.Tuple else [target]
        for t in targets:
            self._check_target(t, "delete")
        return self.at(py.Delete(targets=targets), c)

    def r_dotted_name(self, c: list) -> tuple[str, Span]:
        return ".".join(str(t) for t in c), self.cspan(c)

    def r_if_stmt(self, c: list) -> py.If:
        # An `elif` is an If in the orelse of the one before, placed at its test:
        # the whole chain is one statement, as the `if` keyword's (see is_elif).
        keyword, test, body, *rest = c
        clauses = [(test, body.stmts)] + [x for x in rest if type(x) is tuple]
        orelse = next((x.stmts for x in rest if isinstance(x, _Else)), [])
        for test, stmts in reversed(clauses[1:]):
            orelse = [place(py.If(test=test, body=stmts, orelse=orelse), span_of(test))]
        node = py.If(test=clauses[0][0], body=clauses[0][1], orelse=orelse)
        return self.at(node, c)

    def r_for_stmt(self, c: list) -> py.For:
        _, target, it, body, orelse = c
        self._check_target(target, "for")
        stmts = orelse.stmts if orelse is not None else []
        node = py.For(target=target, iter=it, body=body.stmts, orelse=stmts, type_comment=None)
        return self.at(node, c)

    def r_try_stmt(self, c: list) -> py.Try:
        _, body, *rest = c
        handlers = [x for x in rest if type(x) is py.ExceptHandler]
        orelse = next((x.stmts for x in rest if type(x) is _Else), [])
        final = next((x.stmts for x in rest if type(x) is _Finally), [])
        node = py.Try(body=body.stmts, handlers=handlers, orelse=orelse, finalbody=final)
        return self.at(node, c)

    def r_with_item(self, c: list) -> py.withitem:
        context, target = c
        if target is not None:
            self._check_target(target, "with")
        return py.withitem(context_expr=context, optional_vars=target)

    def r_param(self, c: list) -> _Param:
        # def: NAME [":" ann] ["=" default]; lambda: NAME ["=" default]
        return _Param(str(c[0]), "pos", c[-1] if len(c) > 1 else None, self.cspan(c))

    def r_star_param(self, c: list) -> _Param:
        name = str(c[1]) if len(c) > 1 and c[1] is not None else ""
        return _Param(name, "vararg", None, self.cspan(c))

    def r_dstar_param(self, c: list) -> _Param:
        return _Param(str(c[1]), "kwarg", None, self.cspan(c))

    def _params(self, raw: list | None) -> py.arguments:
        """Python's `arguments` for a parameter list, checking Python's ordering rules."""
        args: list[py.arg] = []
        defaults: list[py.expr] = []
        kwonly: list[py.arg] = []
        kw_defaults: list[py.expr | None] = []
        vararg = kwarg = star = None
        seen: set[str] = set()
        for p in raw or ():
            if kwarg is not None:
                raise self.error("arguments cannot follow var-keyword argument", p.span)
            if p.name and p.name in seen:
                raise self.error(f"duplicate argument '{p.name}' in function definition", p.span)
            seen.add(p.name)
            arg = place(py.arg(arg=p.name, annotation=None, type_comment=None), p.span)
            if p.kind == "vararg":
                if star is not None:
                    raise self.error("* argument may appear only once", p.span)
                star, vararg = p, arg if p.name else None
            elif p.kind == "kwarg":
                kwarg = arg
            elif star is not None:
                kwonly.append(arg)
                kw_defaults.append(p.default)
            elif p.default is not None:
                args.append(arg)
                defaults.append(p.default)
            elif defaults:
                raise self.error("non-default argument follows default argument", p.span)
            else:
                args.append(arg)
        if star is not None and not star.name and not kwonly:
            raise self.error("named arguments must follow bare *", star.span)
        return py.arguments([], args, vararg, kwonly, kw_defaults, kwarg, defaults)

    def r_funcdef(self, c: list) -> py.FunctionDef:
        keyword, name, params, _returns, body = c
        node = py.FunctionDef(
            name=str(name),
            args=self._params(params),
            body=body.stmts,
            decorator_list=[],
            returns=None,
            type_comment=None,
        )
        return self.at(node, [keyword, body])

    def r_decorated(self, c: list) -> py.FunctionDef | py.ClassDef:
        # `@dec` lines above a def: applied bottom-up when the def runs, as in Python
        *decorators, definition = c
        definition.decorator_list = decorators
        return definition

    def r_classdef(self, c: list) -> py.ClassDef:
        keyword, name, *middle, body = c
        bases = next((m for m in middle if isinstance(m, list)), [])
        for arg in bases:
            if type(arg) in (py.keyword, py.Starred) or id(arg) in self._bare:
                raise self.error("class keywords and *bases are not supported", arg)
        node = py.ClassDef(
            name=str(name), bases=bases, keywords=[], body=body.stmts, decorator_list=[]
        )
        return self.at(node, [keyword, body])

    def r_annassign_stmt(self, c: list) -> py.AnnAssign:
        target, annotation, value = c
        if not isinstance(target, _STORABLE):
            raise self.error("illegal target for annotation", target)
        target.ctx = py.Store()
        simple = int(type(target) is py.Name)
        node = py.AnnAssign(target=target, annotation=annotation, value=value, simple=simple)
        return self.at(node, [target, value or annotation])

    def r_lambdef(self, c: list) -> py.Lambda:
        _, params, body = c
        return self.at(py.Lambda(args=self._params(params), body=body), c)

    # ---------------------------------------------------------- expressions

    def r_expr(self, c: list) -> py.BinOp:
        # [a, op, b, op, c, ...] -> ((a op b) op c) ..., built in a loop.
        left = c[0]
        for i in range(1, len(c), 2):
            node = py.BinOp(left=left, op=BINOPS[str(c[i])](), right=c[i + 1])
            left = self.at(node, [left, c[i + 1]])
        return left

    r_xor_expr = r_and_expr = r_arith_expr = r_term = r_expr

    def r_call(self, c: list) -> py.Call:
        func, args, _ = c
        args = args or []
        seen_kw = seen_dstar = False
        names: set[str] = set()
        for a in args:
            if id(a) in self._bare and len(args) > 1:
                raise self.error("Generator expression must be parenthesized", a)
            if type(a) is py.Starred:
                if seen_dstar:
                    raise self.error(
                        "iterable argument unpacking follows keyword argument unpacking", a
                    )
            elif type(a) is not py.keyword:
                if seen_dstar:
                    raise self.error("positional argument follows keyword argument unpacking", a)
                if seen_kw:
                    raise self.error("positional argument follows keyword argument", a)
            elif a.arg is None:
                seen_dstar = True
            else:
                if a.arg in names:
                    raise self.error(f"keyword argument repeated: {a.arg}", a)
                names.add(a.arg)
                seen_kw = True
        keywords = [a for a in args if type(a) is py.keyword]
        positional = [a for a in args if type(a) is not py.keyword]
        return self.at(py.Call(func=func, args=positional, keywords=keywords), c)

    def r_kwarg(self, c: list) -> py.keyword:
        name, value = c
        if type(name) is not py.Name:
            raise self.error(
                'expression cannot contain assignment, perhaps you meant "=="?', self.cspan(c)
            )
        return self.at(py.keyword(arg=name.id, value=value), c)

    def r_genexp_arg(self, c: list) -> py.GeneratorExp:
        node = self.at(py.GeneratorExp(elt=c[0], generators=c[1]), c)
        self._bare.add(id(node))
        return node

    def r_number(self, c: list) -> py.Constant:
        tok = c[0]
        text = str(tok)
        try:
            value: object = float(text) if tok.type == "FLOAT_NUMBER" else int(text, 0)
        except ValueError as exc:
            if tok.type == "DEC_NUMBER" and not text.strip("0_"):
                value = 0  # zeros only: no conversion, so no digit limit (as in Python)
            elif str(exc).startswith("Exceeds the limit"):
                # Python's limit on decimal digits (sys.int_info), with its compiler's hint
                raise self.error(f"{exc}{_HEX_HINT}", self.cspan(c)) from None
            elif tok.type == "DEC_NUMBER":  # "007" style is refused by int(x, 0)
                value = int(text)
            else:
                raise self.error("invalid number literal", self.cspan(c)) from None
        return self.at(py.Constant(value=value), c)

    def r_paren(self, c: list) -> py.expr:
        # The parenthesised node spans the parentheses, so error carets and
        # on_value labels cover "(a + b)".
        lpar = c[0]
        if self.line_base and lpar.line == 1 and lpar.column == 1:
            return c[1]  # the parentheses parse_expression wrapped around an f-string field
        return self.at(c[1], c)

    def r_comp_for(self, c: list) -> list:
        target, it = c[0], c[1]
        rest = c[2] if len(c) > 2 else None
        self._check_target(target, "for")
        ifs = []
        while isinstance(rest, _CompIf):
            ifs.append(rest.cond)
            rest = rest.rest
        first = py.comprehension(target=target, iter=it, ifs=ifs, is_async=0)
        return [first] + (rest or [])

    # -------------------------------------------------------------- targets

    def _check_target(self, node: py.expr, ctx: str, direct: bool = False) -> None:
        """Refuse what cannot be assigned to (or deleted), with Python's wording;
        mark what can as stored (or deleted), as Python's parser does."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, _STORABLE):
                n.ctx = py.Del() if ctx == "delete" else py.Store()
                continue
            if type(n) in (py.Tuple, py.List):
                n.ctx = py.Del() if ctx == "delete" else py.Store()  # type: ignore[attr-defined]
                stack.extend(n.elts)  # type: ignore[attr-defined]
                continue
            if type(n) is py.Starred and ctx != "delete":
                n.ctx = py.Store()
                stack.append(n.value)
                continue
            word = _target_word(n)
            if ctx == "delete":
                raise self.error(f"cannot delete {word}", n)
            if direct and n is node and word not in ("None", "True", "False"):
                raise self.error(
                    f"cannot assign to {word} here. Maybe you meant '==' instead of '='?", n
                )
            raise self.error(f"cannot assign to {word}", n)

    # -------------------------------------------------------------- strings

    def r_strings(self, c: list) -> py.Constant | py.JoinedStr:
        pieces: list[str | py.FormattedValue] = []
        is_f = False
        for tok in c:
            text = str(tok)
            prefix_len = 0
            while text[prefix_len] not in "'\"":
                prefix_len += 1
            prefix = text[:prefix_len].lower()
            if "b" in prefix:
                raise self.error("bytes literals are not supported", self.span(tok))
            if "f" not in prefix:
                pieces.append(self._plain_string(tok, text))
                continue
            is_f = True
            quote = 3 if text[prefix_len : prefix_len + 3] in ('"""', "'''") else 1
            body_start = prefix_len + quote
            body = text[body_start : len(text) - quote]
            pieces.extend(self._fstring_parts(tok, body, body_start, "r" in prefix, 0))
        span = self.cspan(c)
        if not is_f:
            return place(py.Constant(value="".join(pieces)), span)  # type: ignore[arg-type]
        return _joined(pieces, span)

    def _plain_string(self, tok: Token, text: str) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return py.literal_eval(text)
            except (SyntaxError, ValueError) as exc:
                # a lone surrogate (text read with surrogateescape) is a UnicodeEncodeError
                why = exc.msg if isinstance(exc, SyntaxError) else getattr(exc, "reason", str(exc))
                raise self.error(f"invalid string literal: {why}", self.span(tok)) from None

    def _token_pos(self, tok: Token, offset: int) -> tuple[int, int]:
        """Real (line, column) of character `offset` inside token `tok`."""
        text = str(tok)
        nl = text.count("\n", 0, offset)
        if nl == 0:
            line, col = tok.line, tok.column + offset
        else:
            line, col = tok.line + nl, offset - text.rindex("\n", 0, offset)
        return self.pos(line, col)

    def _token_span(self, tok: Token, start: int, end: int) -> Span:
        """Real span of characters `start` to `end` (offsets) inside token `tok`."""
        return Span(*self._token_pos(tok, start), *self._token_pos(tok, end))

    def _decode(self, tok: Token, raw_text: str, raw: bool, offset: int) -> str:
        if raw:
            return raw_text

        def unescape(m: re.Match) -> str:
            s = m.group(1)
            if s in _SIMPLE_ESCAPES:
                return _SIMPLE_ESCAPES[s]
            if s[0] == "N" and len(s) > 1:
                try:
                    return unicodedata.lookup(s[2:-1])
                except KeyError:
                    line, col = self._token_pos(tok, offset + m.start())
                    raise self.error(
                        "(unicode error) unknown Unicode character name",
                        Span(line, col, line, col + len(m.group(0))),
                    ) from None
            if s[0] in "xuU" and len(s) > 1:
                return chr(int(s[1:], 16))
            if s[0] in "01234567":
                return chr(int(s, 8))
            return "\\" + s

        return _ESCAPE.sub(unescape, raw_text)

    def _fstring_parts(
        self, tok: Token, body: str, base: int, raw: bool, depth: int
    ) -> list[str | py.FormattedValue]:
        """Split an f-string body (source text) into literals and parsed fields."""
        parts: list[str | py.FormattedValue] = []
        lit: list[str] = []
        lit_start = 0
        i = 0
        n = len(body)

        def flush() -> None:
            if lit:
                parts.append(self._decode(tok, "".join(lit), raw, base + lit_start))
                lit.clear()

        def fail(message: str, at: int, length: int = 1) -> ScriptSyntaxError:
            line, col = self._token_pos(tok, base + at)
            return self.error(message, Span(line, col, line, col + length))

        while i < n:
            ch = body[i]
            text: str | None = None  # literal text starting at i (a field: None)
            if ch == "\\" and not raw and i + 1 < n:
                end = i + 2
                if body[i + 1] == "N" and body[i + 2 : i + 3] == "{":
                    close = body.find("}", i)
                    end = close + 1 if close >= 0 else n
                text = body[i:end]
            elif ch == "}":
                if body[i + 1 : i + 2] != "}":
                    raise fail("f-string: single '}' is not allowed", i)
                text, end = "}", i + 2
            elif ch != "{":
                text, end = ch, i + 1
            elif body[i + 1 : i + 2] == "{":
                text, end = "{", i + 2
            if text is not None:
                if not lit:
                    lit_start = i
                lit.append(text)
                i = end
                continue
            # A replacement field: {expr[=][!conv][:spec]}
            flush()
            if depth >= 2:
                raise fail("f-string: expressions nested too deeply", i)
            field_start = i
            j = _scan_expression(body, i + 1)
            expr_text = body[i + 1 : j]
            if j >= n:
                raise fail("f-string: expecting '}'", field_start)
            if not expr_text.strip():
                raise fail("f-string: empty expression not allowed", field_start, j - i + 1)
            if "#" in _strip_strings(expr_text):
                raise fail("f-string expression part cannot include '#'", field_start)
            debug_text = None
            if body[j] == "=":
                j += 1
                while j < n and body[j] in " \t":
                    j += 1
                debug_text = body[i + 1 : j]
            conversion = None
            if j < n and body[j] == "!":
                conversion = body[j + 1 : j + 2]
                if conversion not in ("r", "s", "a"):
                    raise fail(
                        "f-string: invalid conversion character: expected 's', 'r', or 'a'", j
                    )
                j += 2
            spec = None
            if j < n and body[j] == ":":
                spec_end = _scan_spec(body, j + 1)
                if spec_end >= n:
                    raise fail("f-string: expecting '}'", field_start)
                spec_parts = self._fstring_parts(
                    tok, body[j + 1 : spec_end], base + j + 1, True, depth + 1
                )
                spec = _joined(spec_parts, self._token_span(tok, base + j + 1, base + spec_end))
                j = spec_end
            if j >= n or body[j] != "}":
                raise fail("f-string: expecting '}'", field_start)
            line, col = self._token_pos(tok, base + i + 1)
            value = self.parse_expr(expr_text, line, col)
            if debug_text is not None:
                parts.append(debug_text)
                if conversion is None and spec is None:
                    conversion = "r"
            field = py.FormattedValue(
                value=value, conversion=ord(conversion) if conversion else -1, format_spec=spec
            )
            parts.append(place(field, self._token_span(tok, base + field_start, base + j + 1)))
            i = j + 1
        flush()
        return parts


def _joined(parts: list, span: Span) -> py.JoinedStr:
    """An f-string's node: adjacent literal pieces merged, empty ones dropped."""
    values: list = []
    for p in parts:
        if isinstance(p, str) and values and isinstance(values[-1], str):
            values[-1] += p
        elif not (isinstance(p, str) and p == ""):
            values.append(p)
    for i, p in enumerate(values):
        if isinstance(p, str):
            values[i] = place(py.Constant(value=p), span)
    return place(py.JoinedStr(values=values), span)


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal starting at text[i] (a quote)."""
    q = text[i]
    triple = text[i : i + 3] == q * 3
    end_quote = q * 3 if triple else q
    j = i + len(end_quote)
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text.startswith(end_quote, j):
            return j + len(end_quote)
        j += 1
    return len(text)


def _scan_expression(body: str, i: int) -> int:
    """End of an f-string field's expression: index of '}', '!', ':' or '=' at depth 0."""
    depth = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch in "'\"":
            i = _skip_string(body, i)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0:
            if ch == "!" and body[i + 1 : i + 2] != "=":
                return i
            if ch == ":":
                return i
            if ch == "=":
                prev = body[i - 1] if i else ""
                nxt = body[i + 1 : i + 2]
                if nxt != "=" and prev not in "=!<>":
                    return i
                if nxt == "=":
                    i += 2
                    continue
        i += 1
    return n


def _scan_spec(body: str, i: int) -> int:
    """Index of the '}' closing a format spec that starts at `i` (nested {} allowed)."""
    depth = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return n


def _strip_strings(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        if text[i] in "'\"":
            i = _skip_string(text, i)
            out.append("''")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


# ---------------------------------------------------------------- validation

# Parts of a node that add no run-time nesting of their own.
_WRAPPERS = (py.arguments, py.arg, py.keyword, py.comprehension, py.withitem)
_WRAPPERS += (py.ExceptHandler, py.alias)
_CHAIN_PARENTS = (py.Attribute, py.Subscript, py.Call)
_SCOPES = (py.FunctionDef, py.Lambda, py.ClassDef)


def _nests(parent: py.AST, child: py.AST) -> int:
    """How many levels `child` adds below `parent` (flat chains add none)."""
    t = type(parent)
    if isinstance(child, _WRAPPERS) or (t is py.Call and type(child) is py.Starred):
        return 0
    if (t is py.BinOp and child is parent.left and type(child) is py.BinOp) or is_elif(child):  # type: ignore[attr-defined]
        return 0
    if t is py.JoinedStr and type(child) is py.Constant:
        return 0  # a literal piece of an f-string
    if t in _CHAIN_PARENTS and isinstance(child, _CHAIN_PARENTS):
        return 0 if child is (parent.func if t is py.Call else parent.value) else 1  # type: ignore[attr-defined]
    return 1


def validate(module: py.Module) -> None:
    """Check statement placement and nesting depth (iteratively).

    Raises ScriptSyntaxError for 'return' outside function, 'break' outside
    loop, 'continue' not properly in loop, 'nonlocal' at module level, and
    nesting deeper than MAX_NESTING (kind "LimitError").
    """
    source = module.source  # type: ignore[attr-defined]
    # (node, depth, in_function, in_loop)
    stack: list[tuple[Any, int, bool, bool]] = [(s, 1, False, False) for s in module.body]
    while stack:
        node, depth, in_func, in_loop = stack.pop()
        if depth > MAX_NESTING and hasattr(node, "lineno"):  # (a part without a
            # position, such as a function's `arguments`, leaves it to its children)
            raise ScriptSyntaxError(
                f"too many nested expressions or blocks (the limit is {MAX_NESTING} levels)",
                span_of(node),
                source,
                kind="LimitError",
            )
        t = type(node)
        problem = None
        if t is py.Return and not in_func:
            problem = "'return' outside function"
        elif t is py.Break and not in_loop:
            problem = "'break' outside loop"
        elif t is py.Continue and not in_loop:
            problem = "'continue' not properly in loop"
        elif t is py.ImportFrom and node.names[0].name == "*" and in_func:
            problem = "import * only allowed at module level"
        elif t is py.Nonlocal and not in_func:
            problem = "nonlocal declaration not allowed at module level"
        elif t is py.Yield and not in_func:
            problem = "'yield' outside function"
        if problem is not None:
            raise ScriptSyntaxError(problem, span_of(node), source)
        if t in _SCOPES:
            in_func, in_loop = t is not py.ClassDef, False
        loop_body = {id(s) for s in node.body} if t in (py.While, py.For) else ()
        for child in children(node):
            step = 1 if t in _SCOPES else _nests(node, child)
            stack.append((child, depth + step, in_func, in_loop or id(child) in loop_body))
