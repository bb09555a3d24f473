"""Parse tree (Lark) -> AST (adcli.lang.ast), without recursion.

`Builder.build` walks the Lark tree with an explicit stack (post-order), so
trees of any depth convert; left-associative operator chains arrive flat from
the grammar and become left-deep `BinOp`s in a loop. f-string fields are
parsed here too, through the `parse_expr` callback the parser supplies.

`validate` then checks what the grammar cannot: `return`/`break`/`continue`
placement and how deeply expressions nest (the evaluator recurses over
nesting, so it is bounded here with a clear error instead of a crash).
"""

from __future__ import annotations

import ast as pyast
import re
import unicodedata
import warnings
from collections.abc import Callable
from typing import Any

from lark import Token, Tree

from adcli.lang import ast
from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.source import Source, Span

__all__ = ["Builder", "validate", "MAX_NESTING"]

# Deepest nesting of expressions/blocks a script may have. Flat chains
# (a + b + c, x.f().g[0], if/elif) do not count, parentheses alone do not count.
MAX_NESTING = 1500

# What Python's compiler adds to the digit-limit error for an integer literal.
_HEX_HINT = " - Consider hexadecimal for huge integer literals to avoid decimal conversion limits."

ParseExpr = Callable[[str, int, int], ast.Node]


class _Suite:
    """A block of statements plus where it started (for header spans)."""

    __slots__ = ("stmts", "line", "column")

    def __init__(self, stmts: tuple, line: int, column: int) -> None:
        self.stmts = stmts
        self.line = line
        self.column = column


class _Else:
    __slots__ = ("stmts",)

    def __init__(self, stmts: tuple) -> None:
        self.stmts = stmts


class _Finally(_Else):
    __slots__ = ()


class _CompIf:
    __slots__ = ("cond", "rest")

    def __init__(self, cond: ast.Node, rest: object) -> None:
        self.cond = cond
        self.rest = rest


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
    ast.Call: "function call",
    ast.BinOp: "expression",
    ast.UnaryOp: "expression",
    ast.BoolOp: "expression",
    ast.Compare: "comparison",
    ast.IfExp: "conditional expression",
    ast.Lambda: "lambda",
    ast.FString: "f-string expression",
    ast.DictExpr: "dict literal",
    ast.ListComp: "list comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Slice: "slice",
    ast.TupleExpr: "tuple",  # (augmented assignment: other targets unpack tuples and lists)
    ast.ListExpr: "list",
}


def _target_word(node: ast.Node) -> str:
    if isinstance(node, ast.Constant):
        if node.value is None or node.value is True or node.value is False:
            return repr(node.value)
        if node.value is Ellipsis:
            return "ellipsis"
        return "literal"
    return _TARGET_WORDS.get(type(node), "expression")


class Builder:
    """Converts one Lark parse tree into AST nodes.

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
        self._handlers: dict[str, Callable[[Any, list], Any]] = {}
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
        line, col = self.pos(tok.line, tok.column)
        end_line, end_col = self.pos(tok.end_line, tok.end_column)
        return Span(line, col, end_line, end_col)

    def _edge(self, x: object, end: bool) -> tuple[int, int] | None:
        """Where `x` (a token, node, block, span or list of them) starts, or ends."""
        if type(x) is Token:
            return self.pos(x.end_line, x.end_column) if end else self.pos(x.line, x.column)  # type: ignore[attr-defined]
        if isinstance(x, ast.Node):
            x = x.span
        if type(x) is Span:
            return (x.end_line, x.end_column) if end else (x.line, x.column)  # type: ignore[attr-defined]
        if isinstance(x, (_Suite, _Else)):
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

    def error(self, message: str, span: Span) -> ScriptSyntaxError:
        """A syntax error at `span` of this builder's source."""
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
                out.append(handlers[node.data](node.meta, args))
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children))
        return out[0]

    # ----------------------------------------------------------- statements

    def r_start(self, meta: Any, c: list) -> ast.Module:
        end = self.source.line_count or 1
        span = Span(1, 1, end, len(self.source.line_text(end)) + 1)
        return ast.Module(tuple(c), self.source, span)

    def r_eval_input(self, meta: Any, c: list) -> ast.Node:
        return c[0]

    def r_suite(self, meta: Any, c: list) -> _Suite:
        first = c[0].span
        return _Suite(tuple(c), first.line, first.column)

    def _block_span(self, keyword: Token, last: object) -> Span:
        """From the statement's keyword to the end of its last body statement."""
        return self.cspan([keyword, last])

    def r_expr_stmt(self, meta: Any, c: list) -> ast.ExprStmt:
        return ast.ExprStmt(c[0], self.cspan(c))

    def r_assign_stmt(self, meta: Any, c: list) -> ast.Assign:
        *targets, value = c
        for t in targets:
            self._check_target(t, "assign", direct=len(targets) == 1)
        return ast.Assign(tuple(targets), value, self.cspan(c))

    def r_augop(self, meta: Any, c: list) -> str:
        return str(c[0])[:-1]

    def r_augassign_stmt(self, meta: Any, c: list) -> ast.AugAssign:
        target, op, value = c
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            raise self.error(
                f"'{_target_word(target)}' is an illegal expression for augmented assignment",
                target.span,
            )
        return ast.AugAssign(target, op, value, self.cspan(c))

    def r_pass_stmt(self, meta: Any, c: list) -> ast.Pass:
        return ast.Pass(self.cspan(c))

    def r_break_stmt(self, meta: Any, c: list) -> ast.Break:
        return ast.Break(self.cspan(c))

    def r_continue_stmt(self, meta: Any, c: list) -> ast.Continue:
        return ast.Continue(self.cspan(c))

    def r_return_stmt(self, meta: Any, c: list) -> ast.Return:
        return ast.Return(c[1], self.cspan(c))

    def r_raise_stmt(self, meta: Any, c: list) -> ast.Raise:
        return ast.Raise(c[1], c[2], self.cspan(c))

    def r_global_stmt(self, meta: Any, c: list) -> ast.Global:
        return ast.Global(tuple(str(t) for t in c[1:]), self.cspan(c))

    def r_nonlocal_stmt(self, meta: Any, c: list) -> ast.Nonlocal:
        return ast.Nonlocal(tuple(str(t) for t in c[1:]), self.cspan(c))

    def r_del_stmt(self, meta: Any, c: list) -> ast.Delete:
        target = c[1]
        targets = target.elts if isinstance(target, ast.TupleExpr) else (target,)
        for t in targets:
            self._check_target(t, "delete")
        return ast.Delete(tuple(targets), self.cspan(c))

    def r_assert_stmt(self, meta: Any, c: list) -> ast.Assert:
        return ast.Assert(c[1], c[2], self.cspan(c))

    def r_dotted_name(self, meta: Any, c: list) -> tuple[str, Span]:
        return ".".join(str(t) for t in c), self.cspan(c)

    def r_dotted_as_name(self, meta: Any, c: list) -> ast.Alias:
        (name, _), asname = c
        return ast.Alias(name, str(asname) if asname is not None else None, self.cspan(c))

    def r_import_as_name(self, meta: Any, c: list) -> ast.Alias:
        name, asname = c
        return ast.Alias(str(name), str(asname) if asname is not None else None, self.cspan(c))

    def r_import_star(self, meta: Any, c: list) -> str:
        return "*"

    def r_import_stmt(self, meta: Any, c: list) -> ast.Import:
        return ast.Import(tuple(c[1:]), self.cspan(c))

    def r_import_from(self, meta: Any, c: list) -> ast.ImportFrom:
        module, _ = c[1]
        names = tuple(x for x in c[2:] if isinstance(x, ast.Alias))
        star = "*" in c[2:]
        return ast.ImportFrom(module, names, star, self.cspan(c))

    def r_elif_clause(self, meta: Any, c: list) -> tuple:
        return (c[0], c[1].stmts)

    def r_else_clause(self, meta: Any, c: list) -> _Else:
        return _Else(c[0].stmts)

    def r_finally_clause(self, meta: Any, c: list) -> _Finally:
        return _Finally(c[0].stmts)

    def r_if_stmt(self, meta: Any, c: list) -> ast.If:
        keyword = c[0]
        tests = [c[1]]
        bodies = [c[2].stmts]
        orelse: tuple = ()
        for item in c[3:]:
            if isinstance(item, tuple):
                tests.append(item[0])
                bodies.append(item[1])
            elif isinstance(item, _Else):
                orelse = item.stmts
        last = orelse[-1] if orelse else bodies[-1][-1]
        return ast.If(tuple(tests), tuple(bodies), orelse, self._block_span(keyword, last))

    def r_while_stmt(self, meta: Any, c: list) -> ast.While:
        keyword, test, body, orelse = c
        stmts = orelse.stmts if orelse is not None else ()
        span = self._block_span(keyword, orelse or body)
        return ast.While(test, body.stmts, stmts, span)

    def r_for_stmt(self, meta: Any, c: list) -> ast.For:
        keyword, target, it, body, orelse = c
        self._check_target(target, "for")
        stmts = orelse.stmts if orelse is not None else ()
        span = self._block_span(keyword, orelse or body)
        return ast.For(target, it, body.stmts, stmts, span)

    def r_except_clause(self, meta: Any, c: list) -> ast.ExceptHandler:
        keyword, typ, name, body = c
        return ast.ExceptHandler(
            typ,
            str(name) if name is not None else None,
            body.stmts,
            self._block_span(keyword, body),
        )

    def r_try_stmt(self, meta: Any, c: list) -> ast.Try:
        keyword = c[0]
        c = c[1:]
        body = c[0].stmts
        handlers = tuple(x for x in c[1:] if isinstance(x, ast.ExceptHandler))
        orelse: tuple = ()
        final: tuple = ()
        last: object = c[0]
        for x in c[1:]:
            if x is not None:
                last = x
            if isinstance(x, _Finally):
                final = x.stmts
            elif isinstance(x, _Else):
                orelse = x.stmts
        if isinstance(last, ast.ExceptHandler):
            last = last.body[-1]
        return ast.Try(body, handlers, orelse, final, self._block_span(keyword, last))

    def r_with_item(self, meta: Any, c: list) -> ast.WithItem:
        context, target = c
        if target is not None:
            self._check_target(target, "with")
        return ast.WithItem(context, target, self.cspan(c))

    def r_with_stmt(self, meta: Any, c: list) -> ast.With:
        keyword, *items, body = c
        return ast.With(tuple(items), body.stmts, self._block_span(keyword, body))

    def r_param(self, meta: Any, c: list) -> ast.Param:
        # def: NAME [":" ann] ["=" default]; lambda: NAME ["=" default]
        return ast.Param(str(c[0]), "pos", c[-1] if len(c) > 1 else None, self.cspan(c))

    def r_star_param(self, meta: Any, c: list) -> ast.Param:
        name = c[1] if len(c) > 1 else None
        return ast.Param(str(name) if name is not None else "", "vararg", None, self.cspan(c))

    def r_dstar_param(self, meta: Any, c: list) -> ast.Param:
        return ast.Param(str(c[1]), "kwarg", None, self.cspan(c))

    def r_parameters(self, meta: Any, c: list) -> list:
        return c

    r_lambda_params = r_parameters

    def _params(self, raw: list | None) -> tuple[ast.Param, ...]:
        """Give parameters their kinds and check Python's ordering rules."""
        if not raw:
            return ()
        out = []
        seen: set[str] = set()
        star = None
        kwarg = False
        seen_default = False
        for p in raw:
            if kwarg:
                raise self.error("arguments cannot follow var-keyword argument", p.span)
            if p.name and p.name in seen:
                raise self.error(f"duplicate argument '{p.name}' in function definition", p.span)
            seen.add(p.name)
            if p.kind == "vararg":
                if star is not None:
                    raise self.error("* argument may appear only once", p.span)
                star = p
            elif p.kind == "kwarg":
                kwarg = True
            elif star is not None:
                p = ast.replace(p, kind="kwonly")
            elif p.default is not None:
                seen_default = True
            elif seen_default:
                raise self.error("non-default argument follows default argument", p.span)
            out.append(p)
        if star is not None and not star.name:
            i = out.index(star)
            if i + 1 >= len(out) or out[i + 1].kind != "kwonly":
                raise self.error("named arguments must follow bare *", star.span)
        return tuple(out)

    def r_funcdef(self, meta: Any, c: list) -> ast.FunctionDef:
        keyword, name, params, _returns, body = c
        return ast.FunctionDef(
            str(name), self._params(params), body.stmts, (), self._block_span(keyword, body)
        )

    def r_decorator(self, meta: Any, c: list) -> ast.Expr:
        return c[-1]

    def r_decorated(self, meta: Any, c: list) -> ast.FunctionDef:
        # `@dec` lines above a def: applied bottom-up when the def runs, as in Python
        *decorators, fn = c
        return ast.replace(fn, decorators=tuple(decorators))

    def r_classdef(self, meta: Any, c: list) -> ast.ClassDef:
        keyword, name, *middle, body = c
        bases = []
        for arg in next((m for m in middle if isinstance(m, list)), []):
            if arg.kind != "pos":
                raise self.error("class keywords and *bases are not supported", arg.span)
            bases.append(arg.value)
        return ast.ClassDef(
            str(name), tuple(bases), body.stmts, (), self._block_span(keyword, body)
        )

    def r_annassign_stmt(self, meta: Any, c: list) -> ast.AnnAssign:
        target, annotation, value = c
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            raise self.error("illegal target for annotation", target.span)
        return ast.AnnAssign(target, annotation, value, self.cspan([target, value or annotation]))

    def r_yield_expr(self, meta: Any, c: list) -> ast.Yield:
        return ast.Yield(c[1], self.cspan([x for x in c if x is not None]))

    def r_yield_stmt(self, meta: Any, c: list) -> ast.ExprStmt:
        return ast.ExprStmt(c[0], c[0].span)

    def r_star_expr(self, meta: Any, c: list) -> ast.Starred:
        return ast.Starred(c[1], self.cspan(c))

    def r_set(self, meta: Any, c: list) -> ast.SetExpr:
        return ast.SetExpr(tuple(c[1:-1]), self.cspan(c))

    def r_setcomp(self, meta: Any, c: list) -> ast.SetComp:
        return ast.SetComp(c[1], tuple(c[2]), self.cspan(c))

    def r_lambdef(self, meta: Any, c: list) -> ast.Lambda:
        _, params, body = c
        return ast.Lambda(self._params(params), body, self.cspan(c))

    # ---------------------------------------------------------- expressions

    def r_tuple_items(self, meta: Any, c: list) -> ast.TupleExpr:
        return ast.TupleExpr(tuple(c), self.cspan(c))

    r_expr_tuple = r_tuple_items
    r_subscript_tuple = r_tuple_items

    def r_ifexp(self, meta: Any, c: list) -> ast.IfExp:
        body, test, orelse = c
        return ast.IfExp(test, body, orelse, self.cspan(c))

    def r_or_test(self, meta: Any, c: list) -> ast.BoolOp:
        return ast.BoolOp("or", tuple(c), self.cspan(c))

    def r_and_test(self, meta: Any, c: list) -> ast.BoolOp:
        return ast.BoolOp("and", tuple(c), self.cspan(c))

    def r_not_op(self, meta: Any, c: list) -> ast.UnaryOp:
        return ast.UnaryOp("not", c[1], self.cspan(c))

    def r_comp_op(self, meta: Any, c: list) -> str:
        return " ".join(str(t) for t in c)

    def r_comparison(self, meta: Any, c: list) -> ast.Compare:
        return ast.Compare(c[0], tuple(c[1::2]), tuple(c[2::2]), self.cspan(c))

    def _binchain(self, meta: Any, c: list) -> ast.BinOp:
        # [a, op, b, op, c, ...] -> ((a op b) op c) ..., built in a loop.
        left = c[0]
        for i in range(1, len(c), 2):
            right = c[i + 1]
            span = Span(
                left.span.line, left.span.column, right.span.end_line, right.span.end_column
            )
            left = ast.BinOp(left, str(c[i]), right, span)
        return left

    r_expr = r_xor_expr = r_and_expr = r_arith_expr = r_term = _binchain

    def r_unary(self, meta: Any, c: list) -> ast.UnaryOp:
        return ast.UnaryOp(str(c[0]), c[1], self.cspan(c))

    def r_power(self, meta: Any, c: list) -> ast.BinOp:
        return ast.BinOp(c[0], "**", c[1], self.cspan(c))

    def r_call(self, meta: Any, c: list) -> ast.Call:
        func, args, _ = c
        args = args or []
        span = self.cspan(c)
        seen_kw = seen_dstar = False
        names: set[str] = set()
        for a in args:
            if a.kind == "genexp" and len(args) > 1:
                raise self.error("Generator expression must be parenthesized", a.span)
            if a.kind in ("pos", "genexp"):
                if seen_dstar:
                    raise self.error(
                        "positional argument follows keyword argument unpacking", a.span
                    )
                if seen_kw:
                    raise self.error("positional argument follows keyword argument", a.span)
            elif a.kind == "star":
                if seen_dstar:
                    raise self.error(
                        "iterable argument unpacking follows keyword argument unpacking", a.span
                    )
            elif a.kind == "kw":
                if a.name in names:
                    raise self.error(f"keyword argument repeated: {a.name}", a.span)
                names.add(a.name)
                seen_kw = True
            else:
                seen_dstar = True
        args = [ast.replace(a, kind="pos") if a.kind == "genexp" else a for a in args]
        return ast.Call(func, tuple(args), span)

    def r_arguments(self, meta: Any, c: list) -> list:
        return [a if isinstance(a, ast.Arg) else ast.Arg("pos", None, a, a.span) for a in c]

    def r_kwarg(self, meta: Any, c: list) -> ast.Arg:
        name, value = c
        if not isinstance(name, ast.Name):
            raise self.error(
                'expression cannot contain assignment, perhaps you meant "=="?', self.cspan(c)
            )
        return ast.Arg("kw", name.id, value, self.cspan(c))

    def r_star_arg(self, meta: Any, c: list) -> ast.Arg:
        return ast.Arg("star", None, c[1], self.cspan(c))

    def r_dstar_arg(self, meta: Any, c: list) -> ast.Arg:
        return ast.Arg("dstar", None, c[1], self.cspan(c))

    def r_genexp_arg(self, meta: Any, c: list) -> ast.Arg:
        span = self.cspan(c)
        return ast.Arg("genexp", None, ast.GeneratorExp(c[0], tuple(c[1]), span), span)

    def r_getitem(self, meta: Any, c: list) -> ast.Subscript:
        return ast.Subscript(c[0], c[1], self.cspan(c))

    def r_getattr(self, meta: Any, c: list) -> ast.Attribute:
        return ast.Attribute(c[0], str(c[1]), self.cspan(c))

    def r_slice(self, meta: Any, c: list) -> ast.Slice:
        return ast.Slice(c[0], c[2], c[4] if len(c) > 4 else None, self.cspan(c))

    def r_name(self, meta: Any, c: list) -> ast.Name:
        return ast.Name(str(c[0]), self.cspan(c))

    def r_const(self, meta: Any, c: list) -> ast.Constant:
        value = {"None": None, "True": True, "False": False}[str(c[0])]
        return ast.Constant(value, self.cspan(c))

    def r_ellipsis(self, meta: Any, c: list) -> ast.Constant:
        return ast.Constant(Ellipsis, self.cspan(c))

    def r_number(self, meta: Any, c: list) -> ast.Constant:
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
        return ast.Constant(value, self.cspan(c))

    def r_tuple(self, meta: Any, c: list) -> ast.TupleExpr:
        return ast.TupleExpr((), self.cspan(c))

    def r_paren(self, meta: Any, c: list) -> ast.Node:
        # The parenthesised node keeps its identity but spans the parentheses,
        # so error carets and on_value labels cover "(a + b)".
        lpar = c[0]
        if self.line_base and lpar.line == 1 and lpar.column == 1:
            return c[1]  # the parentheses parse_expression wrapped around an f-string field
        return ast.replace(c[1], span=self.cspan(c))

    def r_list(self, meta: Any, c: list) -> ast.ListExpr:
        return ast.ListExpr(tuple(c[1:-1]), self.cspan(c))

    def r_dict_item(self, meta: Any, c: list) -> tuple:
        return (c[0], c[1])

    def r_dict(self, meta: Any, c: list) -> ast.DictExpr:
        pairs = c[1:-1]
        return ast.DictExpr(tuple(k for k, _ in pairs), tuple(v for _, v in pairs), self.cspan(c))

    def r_listcomp(self, meta: Any, c: list) -> ast.ListComp:
        return ast.ListComp(c[1], tuple(c[2]), self.cspan(c))

    def r_dictcomp(self, meta: Any, c: list) -> ast.DictComp:
        return ast.DictComp(c[1], c[2], tuple(c[3]), self.cspan(c))

    def r_genexp(self, meta: Any, c: list) -> ast.GeneratorExp:
        return ast.GeneratorExp(c[1], tuple(c[2]), self.cspan(c))

    def r_comp_if(self, meta: Any, c: list) -> _CompIf:
        # An optional inlined rule ([_comp_iter]) leaves no placeholder.
        return _CompIf(c[0], c[1] if len(c) > 1 else None)

    def r_comp_for(self, meta: Any, c: list) -> list:
        target, it = c[0], c[1]
        rest = c[2] if len(c) > 2 else None
        self._check_target(target, "for")
        ifs = []
        while isinstance(rest, _CompIf):
            ifs.append(rest.cond)
            rest = rest.rest
        span = self.cspan([target, ifs[-1] if ifs else it])
        first = ast.Comprehension(target, it, tuple(ifs), span)
        return [first] + (rest or [])

    # -------------------------------------------------------------- targets

    def _check_target(self, node: ast.Node, ctx: str, direct: bool = False) -> None:
        """Refuse what cannot be assigned to (or deleted), with Python's wording."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)):
                continue
            if isinstance(n, (ast.TupleExpr, ast.ListExpr)):
                stack.extend(n.elts)
                continue
            if isinstance(n, ast.Starred) and ctx != "delete":
                stack.append(n.value)
                continue
            word = _target_word(n)
            if ctx == "delete":
                raise self.error(f"cannot delete {word}", n.span)
            if direct and n is node and word not in ("None", "True", "False"):
                raise self.error(
                    f"cannot assign to {word} here. Maybe you meant '==' instead of '='?", n.span
                )
            raise self.error(f"cannot assign to {word}", n.span)

    # -------------------------------------------------------------- strings

    def r_strings(self, meta: Any, c: list) -> ast.Node:
        pieces: list[str | ast.FormattedValue] = []
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
            return ast.Constant("".join(pieces), span)  # type: ignore[arg-type]
        return ast.FString(tuple(_merge_literals(pieces)), span)

    def _plain_string(self, tok: Token, text: str) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return pyast.literal_eval(text)
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
    ) -> list[str | ast.FormattedValue]:
        """Split an f-string body (source text) into literals and parsed fields."""
        parts: list[str | ast.FormattedValue] = []
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
                debug_text = expr_text + "="
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
                line, col = self._token_pos(tok, base + j + 1)
                end_line, end_col = self._token_pos(tok, base + spec_end)
                spec = ast.FString(
                    tuple(_merge_literals(spec_parts)), Span(line, col, end_line, end_col)
                )
                j = spec_end
            if j >= n or body[j] != "}":
                raise fail("f-string: expecting '}'", field_start)
            line, col = self._token_pos(tok, base + i + 1)
            value = self.parse_expr(expr_text, line, col)
            if debug_text is not None:
                parts.append(debug_text)
                if conversion is None and spec is None:
                    conversion = "r"
            start = self._token_pos(tok, base + field_start)
            end = self._token_pos(tok, base + j + 1)
            parts.append(
                ast.FormattedValue(value, conversion, spec, Span(start[0], start[1], *end))
            )
            i = j + 1
        flush()
        return parts


def _merge_literals(parts: list) -> list:
    out: list = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        elif not (isinstance(p, str) and p == ""):
            out.append(p)
    return out


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

_CHAIN_PARENTS = (ast.Attribute, ast.Subscript, ast.Call)
# Wrapper nodes add no run-time nesting of their own.
_WRAPPERS = (ast.Arg, ast.Param, ast.Comprehension, ast.WithItem, ast.ExceptHandler, ast.Alias)


def validate(module: ast.Module) -> None:
    """Check statement placement and nesting depth (iteratively).

    Raises ScriptSyntaxError for 'return' outside function, 'break' outside
    loop, 'continue' not properly in loop, 'nonlocal' at module level, and
    nesting deeper than MAX_NESTING (kind "LimitError").
    """
    source = module.source
    # (node, depth, in_function, in_loop)
    stack: list[tuple[ast.Node, int, bool, bool]] = [(s, 1, False, False) for s in module.body]
    while stack:
        node, depth, in_func, in_loop = stack.pop()
        if depth > MAX_NESTING:
            raise ScriptSyntaxError(
                f"too many nested expressions or blocks (the limit is {MAX_NESTING} levels)",
                node.span,
                source,
                kind="LimitError",
            )
        t = type(node)
        if t is ast.Return and not in_func:
            raise ScriptSyntaxError("'return' outside function", node.span, source)
        if t is ast.Break and not in_loop:
            raise ScriptSyntaxError("'break' outside loop", node.span, source)
        if t is ast.Continue and not in_loop:
            raise ScriptSyntaxError("'continue' not properly in loop", node.span, source)
        if t is ast.ImportFrom and node.star and in_func:  # type: ignore[attr-defined]
            raise ScriptSyntaxError("import * only allowed at module level", node.span, source)
        if t is ast.Nonlocal and not in_func:
            raise ScriptSyntaxError(
                "nonlocal declaration not allowed at module level", node.span, source
            )
        if t is ast.Yield and not in_func:
            raise ScriptSyntaxError("'yield' outside function", node.span, source)
        if t is ast.FunctionDef or t is ast.Lambda or t is ast.ClassDef:
            for child in node.children():
                stack.append((child, depth + 1, t is not ast.ClassDef, False))
            continue
        if t is ast.While or t is ast.For:
            body_ids = {id(s) for s in node.body}  # type: ignore[attr-defined]
            for child in node.children():
                in_body = id(child) in body_ids
                stack.append((child, depth + 1, in_func, in_loop or in_body))
            continue
        for child in node.children():
            # Flat chains do not nest at run time (see the evaluator).
            if (t is ast.BinOp and child is node.left and type(child) is ast.BinOp) or (
                t in _CHAIN_PARENTS
                and isinstance(child, _CHAIN_PARENTS)
                and child is (node.func if t is ast.Call else node.value)  # type: ignore[attr-defined]
            ):
                stack.append((child, depth, in_func, in_loop))
            else:
                step = 0 if isinstance(child, _WRAPPERS) else 1
                stack.append((child, depth + step, in_func, in_loop))
