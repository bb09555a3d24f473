"""The abstract syntax tree of an `.ad` script.

Small frozen dataclasses, each with a `span` (its last field). Nodes compare
by identity (``eq=False``): structural equality would recurse, and a
100,000-term sum is a 100,000-deep tree. Use `dump` to compare trees in
tests; it walks iteratively.

Operators are kept as their source text ("+", "//", "not in", "is not", ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

from adcli.source import Source, Span

# ------------------------------------------------------------------ base class


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """Base of all nodes; every concrete node has a `span: Span` field."""

    def children(self) -> list[Node]:
        """Direct child nodes, in source order."""
        names = _CHILD_FIELDS.get(type(self))
        if names is None:
            names = _child_fields(type(self))
        out: list[Node] = []
        for name in names:
            value = getattr(self, name)
            if isinstance(value, Node):
                out.append(value)
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        out.append(item)
                    elif isinstance(item, tuple):
                        out.extend(x for x in item if isinstance(x, Node))
        return out


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIP_FIELDS = frozenset({"span", "source", "op", "ops", "id", "attr", "name", "kind"})


def _child_fields(cls: type) -> tuple[str, ...]:
    names = tuple(f.name for f in fields(cls) if f.name not in _SKIP_FIELDS)  # type: ignore[arg-type]
    _CHILD_FIELDS[cls] = names
    return names


# ------------------------------------------------------------------ expressions


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Node):
    """A literal: int, float, str, bool, None or Ellipsis."""

    value: object
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Name(Node):
    """A variable reference (or assignment target)."""

    id: str
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class FormattedValue(Node):
    """One ``{value!conversion:spec}`` field of an f-string."""

    value: Expr
    conversion: str | None  # "r", "s", "a" or None
    spec: FString | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class FString(Node):
    """An f-string: literal text pieces and formatted fields, in order."""

    parts: tuple[str | FormattedValue, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class ListExpr(Node):
    """``[a, b, c]``."""

    elts: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class TupleExpr(Node):
    """``(a, b)`` or ``a, b``."""

    elts: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class DictExpr(Node):
    """``{k: v, ...}``."""

    keys: tuple[Expr, ...]
    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class BinOp(Node):
    """``left op right`` for + - * / // % ** @ & | ^."""

    left: Expr
    op: str
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class UnaryOp(Node):
    """``op operand`` for - + ~ not."""

    op: str
    operand: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class BoolOp(Node):
    """``a and b and c`` / ``a or b``: short-circuit, returns an operand."""

    op: str  # "and" | "or"
    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Compare(Node):
    """``a < b <= c``: a chained comparison."""

    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class IfExp(Node):
    """``body if test else orelse``."""

    test: Expr
    body: Expr
    orelse: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Param(Node):
    """A function parameter. kind: "pos", "vararg" (*a), "kwonly", "kwarg" (**k).

    A bare ``*`` is a "vararg" with an empty name.
    """

    name: str
    kind: str
    default: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Lambda(Node):
    """``lambda params: body``."""

    params: tuple[Param, ...]
    body: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Arg(Node):
    """A call argument. kind: "pos", "star" (*x), "kw" (name=x), "dstar" (**x)."""

    kind: str
    name: str | None
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Call(Node):
    """``func(args...)``."""

    func: Expr
    args: tuple[Arg, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Attribute(Node):
    """``value.attr``."""

    value: Expr
    attr: str
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Subscript(Node):
    """``value[index]``; several indices make `index` a TupleExpr."""

    value: Expr
    index: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Slice(Node):
    """``lower:upper:step`` inside a subscript; missing parts are None."""

    lower: Expr | None
    upper: Expr | None
    step: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Comprehension(Node):
    """One ``for target in iter if cond...`` clause."""

    target: Expr
    iter: Expr
    ifs: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class ListComp(Node):
    """``[elt for ... in ... if ...]``."""

    elt: Expr
    generators: tuple[Comprehension, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class DictComp(Node):
    """``{key: value for ... in ...}``."""

    key: Expr
    value: Expr
    generators: tuple[Comprehension, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class GeneratorExp(Node):
    """``(elt for ... in ...)``: a lazy generator."""

    elt: Expr
    generators: tuple[Comprehension, ...]
    span: Span


Expr = (
    Constant
    | Name
    | FString
    | ListExpr
    | TupleExpr
    | DictExpr
    | BinOp
    | UnaryOp
    | BoolOp
    | Compare
    | IfExp
    | Lambda
    | Call
    | Attribute
    | Subscript
    | Slice
    | ListComp
    | DictComp
    | GeneratorExp
)

# ------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True, eq=False)
class ExprStmt(Node):
    """An expression evaluated for its effect (or a docstring)."""

    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Assign(Node):
    """``t1 = t2 = value``."""

    targets: tuple[Expr, ...]
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class AugAssign(Node):
    """``target op= value`` (op without the "=")."""

    target: Expr
    op: str
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Pass(Node):
    """``pass``."""

    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Break(Node):
    """``break``."""

    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Continue(Node):
    """``continue``."""

    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Return(Node):
    """``return [value]``."""

    value: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Raise(Node):
    """``raise [exc [from cause]]``."""

    exc: Expr | None
    cause: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Global(Node):
    """``global a, b``."""

    names: tuple[str, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Nonlocal(Node):
    """``nonlocal a, b``."""

    names: tuple[str, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Delete(Node):
    """``del a, b[0]``."""

    targets: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Assert(Node):
    """``assert test[, msg]``."""

    test: Expr
    msg: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Alias(Node):
    """``name [as asname]`` in an import; `name` may be dotted."""

    name: str
    asname: str | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Import(Node):
    """``import a.b as c, d``."""

    names: tuple[Alias, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class ImportFrom(Node):
    """``from module import a, b as c`` (or ``*`` when `star`)."""

    module: str
    names: tuple[Alias, ...]
    star: bool
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class If(Node):
    """``if/elif/else``: `tests[i]` guards `bodies[i]`; `orelse` may be empty."""

    tests: tuple[Expr, ...]
    bodies: tuple[tuple[Stmt, ...], ...]
    orelse: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class While(Node):
    """``while test: body [else: orelse]``."""

    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class For(Node):
    """``for target in iter: body [else: orelse]``."""

    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class ExceptHandler(Node):
    """``except [type [as name]]: body``."""

    type: Expr | None
    name: str | None
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Try(Node):
    """``try/except/else/finally``."""

    body: tuple[Stmt, ...]
    handlers: tuple[ExceptHandler, ...]
    orelse: tuple[Stmt, ...]
    finalbody: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class WithItem(Node):
    """``context [as target]``."""

    context: Expr
    target: Expr | None
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class With(Node):
    """``with a as x, b: body``."""

    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class FunctionDef(Node):
    """``def name(params): body``."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True, slots=True, eq=False)
class Module(Node):
    """A whole script (or one REPL input)."""

    body: tuple[Stmt, ...]
    source: Source
    span: Span


Stmt = (
    ExprStmt
    | Assign
    | AugAssign
    | Pass
    | Break
    | Continue
    | Return
    | Raise
    | Global
    | Nonlocal
    | Delete
    | Assert
    | Import
    | ImportFrom
    | If
    | While
    | For
    | Try
    | With
    | FunctionDef
)


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), pre-order, without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = n.children()
        kids.reverse()
        stack.extend(kids)


def dump(node: object, *, spans: bool = False) -> str:
    """A compact one-line text of a tree, for tests: ``BinOp(Name('x'), '+', Constant(1))``.

    Spans are left out unless `spans`; works on trees of any depth.
    """
    out: list[str] = []
    # Stack of pending work: a node/value to render, or a literal string.
    stack: list[tuple[bool, object]] = [(False, node)]
    while stack:
        is_text, item = stack.pop()
        if is_text:
            out.append(item)  # type: ignore[arg-type]
            continue
        if isinstance(item, Node):
            names = [f.name for f in fields(item) if spans or f.name != "span"]
            if isinstance(item, Module):
                names = [n for n in names if n != "source"]
            todo: list[tuple[bool, object]] = [(True, type(item).__name__ + "(")]
            for i, name in enumerate(names):
                if i:
                    todo.append((True, ", "))
                todo.append((False, getattr(item, name)))
            todo.append((True, ")"))
            stack.extend(reversed(todo))
        elif isinstance(item, tuple):
            todo = [(True, "(")]
            for i, x in enumerate(item):
                if i:
                    todo.append((True, ", "))
                todo.append((False, x))
            if len(item) == 1:
                todo.append((True, ","))
            todo.append((True, ")"))
            stack.extend(reversed(todo))
        elif isinstance(item, Span):
            out.append(f"{item.line}:{item.column}-{item.end_line}:{item.end_column}")
        else:
            out.append(repr(item))
    return "".join(out)
