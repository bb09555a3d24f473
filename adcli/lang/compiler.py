"""What each .ad construct becomes in Python: the .ad AST -> a Python `ast.Module`.

CPython then compiles and runs it (see `adcli.lang.evaluator`). Every
generated node carries the .ad node's position (columns are the script's
character columns), so a code object's positions map straight back to spans.

The generated code refers to hidden runtime names spelled with a "$" (no
script identifier can spell one); they live in the builtins dict of the
script's globals (see `adcli.lang.evaluator`). What each construct becomes:

- ``obj.name``: ``ad$ga(obj, 'name')``, the guard (stores ``ad$sa``, deletes
  ``ad$da``); other subscripts, calls, comparisons and operators are Python's.
- ``a + b``, ``*``, ``**``, ``%``: native when a literal operand keeps the
  result small, or at run time when the left operand is a number
  (``ad$N+``); else ``ad$+(a, b)``, which checks sizes first.
- a call, operator or subscript value that may be a watched (tensor) value,
  when the host has value hooks: ``t if (t := v).__class__ is not ad$T else
  ad$v(t, k)``; after binding a name, the same test calls ``ad$a``.
- a loop body starts with a step (``ad$S.n += 1``, checked against
  ``ad$S.cap``); a ``def`` body counts a step and a depth level (restored in
  ``finally``); a lambda and each comprehension item call ``ad$go``.
- ``except E as e``: ``except BaseException`` then ``ad$match`` (limits and
  interrupts are never caught, host errors match by kind) and ``e =
  ad$shown(...)``; ``finally`` bodies are skipped for limits (``ad$fin()``).
- ``import m``: ``m = ad$import('m', True)``; ``with c``: ``with ad$cm(c)``;
  ``f'{x:{w}}'``: ``ad$fmt(x, None, spec)`` (bounded widths); ``f'{x}'``:
  ``ad$fv(x)`` (the text of a nested container is bounded, as ``str(x)``).
- ``def``/``lambda`` are decorated with ``ad$fn`` and ``class C(B)`` with
  ``ad$class`` (first), its bases checked by ``ad$bases``; a class body may
  define only the dunder methods the guard allows, and bind no other dunder.

Names of the form ``__x__`` in a script are renamed ``ad$__x__`` so a script
can never reach Python's own (``__builtins__``, ``__class__``...).
"""

from __future__ import annotations

import ast as py
import contextlib
from collections.abc import Iterator
from typing import Any

from adcli.lang import ast
from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.guard import DEFINABLE_DUNDERS
from adcli.lang.source import Source, Span

__all__ = ["Options", "translate", "stmt_span"]

_GUARDED = frozenset({"+", "*", "**", "%"})
_BINOPS = dict(
    zip(
        "+ - * / // % ** @ & | ^".split(),
        (py.Add, py.Sub, py.Mult, py.Div, py.FloorDiv, py.Mod, py.Pow, py.MatMult)
        + (py.BitAnd, py.BitOr, py.BitXor),
        strict=True,
    )
)
_UNARY = {"-": py.USub, "+": py.UAdd, "~": py.Invert, "not": py.Not}
_CMP = dict(
    zip(
        ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"),
        (py.Lt, py.LtE, py.Gt, py.GtE, py.Eq, py.NotEq, py.In, py.NotIn, py.Is, py.IsNot),
        strict=True,
    )
)
_COMPOUND = (ast.If, ast.While, ast.For, ast.Try, ast.With, ast.FunctionDef, ast.ClassDef)
_VALUE_NODES = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript)
_COMPREHENSIONS = {
    "ListComp": (py.ListComp, ("elt",)),
    "SetComp": (py.SetComp, ("elt",)),
    "GeneratorExp": (py.GeneratorExp, ("elt",)),
    "DictComp": (py.DictComp, ("key", "value")),
}
# Values that are never of a watched type (a host's tensor): no hook after `x = ...`.
_NEVER_WATCHED = frozenset(
    "Constant ListExpr DictExpr TupleExpr SetExpr FString Lambda ListComp DictComp SetComp"
    " GeneratorExp".split()
)
_LONG_CHAIN = 64  # operator chains longer than this become a flat tuple of steps


class Options:
    """What the generated code must report: hooks present, watched types, display."""

    __slots__ = ("values", "assigns", "statements", "watch", "interactive", "spans")

    def __init__(
        self,
        *,
        values: bool,
        assigns: bool,
        statements: bool,
        watch: str,
        interactive: bool,
        spans: list[Span],
    ) -> None:
        self.values = values
        self.assigns = assigns
        self.statements = statements
        self.watch = watch  # "one" (ad$T), "set" (ad$TS) or "all"
        self.interactive = interactive
        self.spans = spans  # the interpreter's span table: hooks get spans[k]


def stmt_span(node: ast.Node, src: Source) -> Span:
    """A statement's span; for compound statements only its first line."""
    sp = node.span
    if isinstance(node, _COMPOUND):
        line = src.line_text(sp.line).rstrip()
        return Span(sp.line, sp.column, sp.line, max(sp.column + 1, len(line) + 1))
    return sp


def _at(node: Any, span: Span) -> Any:
    """Position `node` at `span` (its children without a position inherit it: `_fill`)."""
    if "lineno" in node._attributes:
        node.lineno = span.line
        node.col_offset = span.column - 1
        node.end_lineno = span.end_line
        node.end_col_offset = span.end_column - 1
    return node


_SCOPES = (
    py.FunctionDef,
    py.Lambda,
    py.ClassDef,
    py.ListComp,
    py.SetComp,
    py.DictComp,
    py.GeneratorExp,
)


def _fill(tree: py.Module) -> list[str]:
    """Give every node without a position its nearest positioned ancestor's (one
    pass); return the names the module scope itself reads or binds."""
    names: dict[str, None] = {}
    stack: list[tuple[Any, tuple, bool]] = [(tree, (1, 0, 1, 1), True)]
    while stack:
        n, pos, module = stack.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is None:
                n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = pos
            else:
                pos = (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
        if module:
            if type(n) is py.Name:
                names[n.id] = None
            elif isinstance(n, _SCOPES):
                module = False  # a nested scope: only these parts run in the module's
                outer = n.decorator_list + n.bases if type(n) is py.ClassDef else []
                if type(n) in (py.FunctionDef, py.Lambda):
                    outer = n.args.defaults + [d for d in n.args.kw_defaults if d is not None]
                    outer += getattr(n, "decorator_list", [])
                elif type(n) is not py.ClassDef:
                    outer = [n.generators[0].iter]
                stack.extend((k, pos, True) for k in outer)
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                stack.extend((k, pos, module) for k in v if isinstance(k, py.AST))
            elif isinstance(v, py.AST):
                stack.append((v, pos, module))
    return list(names)


# `from __future__ import X`: the features Python 3 knows (all already in effect here).
_FUTURE_FEATURES = frozenset(
    "nested_scopes generators division absolute_import with_statement print_function"
    " unicode_literals barry_as_FLUFL generator_stop annotations".split()
)


def _name(ident: str, ctx: Any = None) -> py.Name:
    return py.Name(id=ident, ctx=ctx or py.Load())


def _script_name(ident: str) -> str:
    if ident.startswith("__") and ident.endswith("__"):
        return "ad$" + ident
    return ident


def _bind(ident: str, value: py.expr) -> py.Assign:
    """``ident = value``."""
    return py.Assign(targets=[_name(ident, py.Store())], value=value)


def _walrus(ident: str, value: py.expr) -> py.NamedExpr:
    """``(ident := value)``."""
    return py.NamedExpr(target=_name(ident, py.Store()), value=value)


def _call(func: str, *args: py.expr) -> py.Call:
    return py.Call(func=_name(func), args=list(args), keywords=[])


def _copy(node: py.expr) -> py.expr:
    """A second copy of a name or constant operand (each branch has its own node)."""
    if type(node) is py.Name:
        return py.Name(id=node.id, ctx=py.Load())
    return py.Constant(value=node.value)  # type: ignore[attr-defined]


def _const(value: object) -> py.Constant:
    return py.Constant(value=value)


def _is_number(node: ast.Node, kinds: tuple = (int, float)) -> bool:
    return type(node) is ast.Constant and type(node.value) in kinds


def _step() -> py.expr:
    """``ad$next(ad$B)``: one step from the run's budget (True; raises when spent)."""
    return _call("ad$next", _name("ad$B"))


def _depth(op: py.operator) -> py.stmt:
    """``ad$S.d += 1`` (a function's entry) or ``-= 1`` (its exit)."""
    target = py.Attribute(value=_name("ad$S"), attr="d", ctx=py.Store())
    return py.AugAssign(target=target, op=op, value=_const(1))


def _makes_calls(body: tuple) -> bool:
    """Does a function body call anything? A body that does not cannot recurse by
    itself, so it needs no depth count (CPython's own limit still bounds it)."""
    stack: list[Any] = list(body)
    while stack:
        n = stack.pop()
        if type(n) is ast.Call:
            return True
        stack.extend(n.children())
    return False


def _locate(nodes: list[py.AST], span: Span) -> list[py.AST]:
    """Position each of `nodes` that has no position yet at `span`."""
    for n in nodes:
        if getattr(n, "lineno", None) is None:
            _at(n, span)
    return nodes


class _Ctx:
    """Where the translator is: in a function? a class body? a comprehension iterable?
    Which names hold an int for certain here (`ints`: see `Translator.int_loop`)?"""

    __slots__ = ("function", "klass", "no_walrus", "ints")

    def __init__(
        self,
        function: bool,
        klass: bool,
        no_walrus: bool,
        ints: frozenset[str] = frozenset(),
    ) -> None:
        self.function = function
        self.klass = klass
        self.no_walrus = no_walrus
        self.ints = ints


_INT_OPS = frozenset({"+", "-", "*", "//", "%"})  # int op int: an int no bigger than a product
_INT_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})
_INT_SOURCES = ("range", "enumerate")  # builtins whose loop variable (first) is an int


def _binders(node: ast.Node) -> Iterator[str]:
    """Names one node binds in its own scope (not those bound in a nested scope)."""
    kind = type(node).__name__
    targets: tuple = ()
    if kind in ("Assign", "Delete"):
        targets = node.targets  # type: ignore[attr-defined]
    elif kind in ("AugAssign", "AnnAssign", "For", "Comprehension", "WithItem"):
        targets = (node.target,)  # type: ignore[attr-defined]
    elif kind in ("FunctionDef", "ClassDef", "ExceptHandler"):
        if node.name:  # type: ignore[attr-defined]
            yield node.name  # type: ignore[attr-defined]
    elif kind in ("Import", "ImportFrom"):
        for a in node.names:  # type: ignore[attr-defined]
            yield a.asname or a.name.split(".")[0]
    for t in targets:
        if t is not None:
            for name, _ in Translator.bound_names(t):
                yield name


def _scan(module: ast.Module) -> tuple[set[str], set[str]]:
    """(every name bound anywhere in the script, names any `global`/`nonlocal` names)."""
    bound: set[str] = set()
    shared: set[str] = set()
    stack: list[Any] = list(module.body)
    while stack:
        n = stack.pop()
        if type(n) in (ast.Global, ast.Nonlocal):
            shared.update(n.names)
        elif type(n) is ast.Param:
            bound.add(n.name)
        bound.update(_binders(n))
        stack.extend(n.children())
    return bound, shared


def _own_scope(body: tuple) -> Iterator[ast.Node]:
    """The nodes of a block in its own scope: a nested function, lambda or class is
    one of them, but not its insides."""
    stack: list[Any] = list(body)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(n.children())


def _rebound(body: tuple) -> set[str]:
    """Names a block binds in its own scope."""
    return {name for n in _own_scope(body) for name in _binders(n)}


def _contains_yield(body: tuple) -> bool:
    return any(type(n) is ast.Yield for n in _own_scope(body))


class Translator:
    """Turns one .ad `Module` into a Python `ast.Module` (see the module table)."""

    def __init__(self, module: ast.Module, options: Options) -> None:
        self.src = module.source
        self.opt = options
        self.ctx = _Ctx(False, False, False)
        self.tmp = 0
        self.unwatched: Span | None = None  # the assigned value's span (see assign_watched)
        # Loop variables of `for i in range(...)` are known ints (no hooks, no size
        # checks on `i % 7`) unless the script can rebind them behind the loop's back,
        # or shadows the builtins; a REPL entry cannot see the earlier ones, so never.
        self.int_sources: frozenset[str] = frozenset()
        self.shared: set[str] = set()
        if not options.interactive and options.watch != "all":  # "all": ints are watched too
            bound, self.shared = _scan(module)
            self.int_sources = frozenset(_INT_SOURCES) - bound

    # ------------------------------------------------------------ helpers

    @contextlib.contextmanager
    def inside(self, **changes: Any) -> Iterator[None]:
        """Translate a nested part (a function, class body, iterable) with `changes`;
        a new scope (`function` or `klass` given) knows no ints of the enclosing one."""
        saved = self.ctx
        fields = {k: getattr(saved, k) for k in _Ctx.__slots__}
        if "function" in changes or "klass" in changes:
            fields["ints"] = frozenset()
        fields.update(changes)
        self.ctx = _Ctx(**fields)
        try:
            yield
        finally:
            self.ctx = saved

    def error(self, message: str, span: Span, kind: str | None = None) -> ScriptSyntaxError:
        return ScriptSyntaxError(message, span, self.src, kind=kind)

    def span_index(self, span: Span) -> int:
        self.opt.spans.append(span)
        return len(self.opt.spans) - 1

    def temp(self) -> str:
        self.tmp += 1
        return f"ad$t{self.tmp}"

    def watched(self, value: py.expr, span: Span) -> py.expr:
        """`value`, passed through the value hook if it has a watched type."""
        if not self.opt.values or span is self.unwatched:
            return value
        k = _const(self.span_index(span))
        if self.opt.watch == "all" or self.ctx.no_walrus:
            return _at(_call("ad$v", value, k), span)
        t = self.temp()
        cond = self.of_watched_type(_walrus(t, value), False)
        return _at(py.IfExp(test=cond, body=_name(t), orelse=_call("ad$v", _name(t), k)), span)

    def of_watched_type(self, value: py.expr, yes: bool = True) -> py.expr:
        """``value.__class__ is ad$T`` (one watched type) or ``in ad$TS`` (several);
        without `yes`, ``is not`` or ``not in``."""
        test = py.Attribute(value=value, attr="__class__", ctx=py.Load())
        if self.opt.watch == "one":
            return py.Compare(test, [py.Is() if yes else py.IsNot()], [_name("ad$T")])
        return py.Compare(test, [py.In() if yes else py.NotIn()], [_name("ad$TS")])

    def is_int(self, n: ast.Node) -> bool:
        """Is `n` an int for certain: int literals and known-int names under + - * // %
        and unary - + ~ (walked without recursion)?"""
        ints = self.ctx.ints
        if not ints:
            return False
        stack = [n]
        while stack:
            n = stack.pop()
            kind = type(n)
            if kind is ast.Name:
                if n.id not in ints:  # type: ignore[attr-defined]
                    return False
            elif kind is ast.Constant:
                if type(n.value) is not int:  # type: ignore[attr-defined]
                    return False
            elif kind is ast.BinOp and n.op in _INT_OPS:  # type: ignore[attr-defined]
                stack += (n.left, n.right)  # type: ignore[attr-defined]
            elif kind is ast.UnaryOp and n.op in "-+~":  # type: ignore[attr-defined]
                stack.append(n.operand)  # type: ignore[attr-defined]
            else:
                return False
        return True

    def int_loop(self, s: ast.For) -> str | None:
        """The loop variable of ``for i in range(...)`` (or ``for i, x in
        enumerate(...)``) when it is an int everywhere in the body: the builtin is
        not shadowed in the script, the body does not rebind the name, and no
        ``global``/``nonlocal`` anywhere could rebind it from a call."""
        it, target = s.iter, s.target
        if type(it) is not ast.Call or type(it.func) is not ast.Name:
            return None
        source = it.func.id
        if source not in self.int_sources or self.ctx.klass and not self.ctx.function:
            return None
        if source == "enumerate":
            if type(target) not in (ast.TupleExpr, ast.ListExpr) or len(target.elts) != 2:  # type: ignore[attr-defined]
                return None
            target = target.elts[0]  # type: ignore[attr-defined]
        if type(target) is not ast.Name:
            return None
        name = target.id
        if name in self.shared or name in _rebound(s.body):
            return None
        return name

    def assigned(self, names: list, span: Span) -> list[py.stmt]:
        """The on_assign hook calls after binding `names` (a name, or (name, own span))."""
        if not self.opt.assigns or not names:
            return []
        out: list[py.stmt] = []
        for n in names:
            own = None
            if type(n) is tuple:
                n, own = n
            k = _const(self.span_index(own or span))
            ident = _script_name(n)
            call = py.Expr(_call("ad$a", _const(n), _name(ident), k))
            if self.opt.watch == "all":
                out.append(call)
                continue
            out.append(py.If(test=self.of_watched_type(_name(ident)), body=[call], orelse=[]))
        return _locate(out, span)  # type: ignore[return-value]

    # -------------------------------------------------------- expressions

    def expr(self, n: ast.Node) -> py.expr:
        """Translate one expression."""
        return getattr(self, "e_" + type(n).__name__)(n)

    def e_Constant(self, n: ast.Constant) -> py.expr:
        return _at(_const(n.value), n.span)

    def e_Name(self, n: ast.Name) -> py.expr:
        return _at(_name(_script_name(n.id)), n.span)

    def e_FString(self, n: ast.FString) -> py.expr:
        values: list[py.expr] = []
        for part in n.parts:
            if isinstance(part, str):
                values.append(_at(_const(part), n.span))
            else:
                values.append(self.formatted(part))
        joined = _at(py.JoinedStr(values=values), n.span)
        if sum(not isinstance(p, str) for p in n.parts) < 2:
            return joined
        return _at(_call("ad$fs", joined), n.span)  # several fields: check the total length

    def formatted(self, f: ast.FormattedValue) -> py.expr:
        value = self.expr(f.value)
        conv = {"r": 114, "s": 115, "a": 97}.get(f.conversion or "", -1)
        if f.spec is None:
            if not isinstance(f.value, ast.Constant):  # `str(l)`'s check of nested text
                value = _at(_call("ad$fv", value), f.span)
            return _at(py.FormattedValue(value=value, conversion=conv, format_spec=None), f.span)
        spec = self.e_FString(f.spec)
        call = _at(_call("ad$fmt", value, _const(f.conversion), spec), f.span)
        return _at(py.FormattedValue(value=call, conversion=-1, format_spec=None), f.span)

    def e_ListExpr(self, n: ast.ListExpr) -> py.expr:
        return _at(py.List(elts=[self.expr(e) for e in n.elts], ctx=py.Load()), n.span)

    def e_TupleExpr(self, n: ast.TupleExpr) -> py.expr:
        return _at(py.Tuple(elts=[self.expr(e) for e in n.elts], ctx=py.Load()), n.span)

    def e_SetExpr(self, n: Any) -> py.expr:
        return _at(py.Set(elts=[self.expr(e) for e in n.elts]), n.span)

    def e_DictExpr(self, n: ast.DictExpr) -> py.expr:
        keys = [self.expr(k) if k is not None else None for k in n.keys]
        return _at(py.Dict(keys=keys, values=[self.expr(v) for v in n.values]), n.span)

    def binop(self, n: ast.BinOp, left: py.expr, right: py.expr, ints: bool = False) -> py.expr:
        """`left op right`; with `ints` both are known ints: native, nothing to watch."""
        op = n.op
        if ints:
            return _at(py.BinOp(left=left, op=_BINOPS[op](), right=right), n.span)
        if op in _GUARDED and not self.small(n):
            if _is_number(n.right) and (not self.ctx.no_walrus or type(left) is py.Name):
                # `i % 7`: a plain number on the left gives a plain number, no hook needed
                return self.checked(op, left, right, n.span, plain=True)
            return self.watched(self.checked(op, left, right, n.span), n.span)
        node = _at(py.BinOp(left=left, op=_BINOPS[op](), right=right), n.span)
        return self.watched(node, n.span)

    def checked(
        self, op: str, left: py.expr, right: py.expr, span: Span, plain: bool = False
    ) -> py.expr:
        """A size-checked operator: native when the left operand's type cannot grow
        (``ad$N+`` holds int, float...), else the checking function ``ad$+``.
        With `plain` (a numeric literal on the right) the native branch is taken for
        plain numbers only (``ad$P+``), and only the other branch is watched."""
        if (self.ctx.no_walrus and type(left) is not py.Name) or type(right) not in (
            py.Name,
            py.Constant,
        ):
            return _at(_call(f"ad${op}", left, right), span)
        if type(left) is py.Name:
            first, again = left, _name(left.id)
        else:
            t = self.temp()
            first, again = _walrus(t, left), _name(t)
        test = py.Compare(
            left=py.Attribute(value=first, attr="__class__", ctx=py.Load()),
            ops=[py.In()],
            comparators=[_name(f"ad${'P' if plain else 'N'}{op}")],
        )
        native = py.BinOp(left=again, op=_BINOPS[op](), right=right)
        slow: py.expr = _at(_call(f"ad${op}", _name(again.id), _copy(right)), span)
        if plain:
            slow = self.watched(slow, span)
        return _at(py.IfExp(test=test, body=native, orelse=slow), span)

    @staticmethod
    def small(n: ast.BinOp) -> bool:
        """Can this guarded operator skip its size check (a numeric literal operand)?"""
        left, right, op = n.left, n.right, n.op
        if op == "+":
            return _is_number(left) or _is_number(right)
        if op == "*":
            return _is_number(left, (float,)) or _is_number(right, (float,))
        if op == "**":
            return _is_number(right, (float,)) or (
                _is_number(right, (int,)) and 0 <= right.value <= 4  # type: ignore[attr-defined]
            )
        if op == "%":
            return _is_number(left)
        return False

    def e_BinOp(self, n: ast.BinOp) -> py.expr:
        # Left-deep chains (a + b + c ...) are walked in a loop, never recursively.
        chain = [n]
        while type(chain[-1].left) is ast.BinOp:
            chain.append(chain[-1].left)  # type: ignore[arg-type]
        chain.reverse()
        acc = self.expr(chain[0].left)
        ints = self.is_int(chain[0].left)  # so far an int for certain (each step once)
        if len(chain) <= _LONG_CHAIN:
            for b in chain:
                ints = ints and b.op in _INT_OPS and self.is_int(b.right)
                acc = self.binop(b, acc, self.expr(b.right), ints)
            return acc
        # A long chain: (t := first, t := t + x1, t := t + x2, ...)[-1], shallow for CPython.
        t = self.temp()
        steps: list[py.expr] = [_walrus(t, acc)]
        for b in chain:
            step = self.binop(b, _name(t), self.expr(b.right))
            steps.append(_at(_walrus(t, step), b.span))
        tup = _at(py.Tuple(elts=steps, ctx=py.Load()), n.span)
        return _at(py.Subscript(value=tup, slice=_const(-1), ctx=py.Load()), n.span)

    def e_UnaryOp(self, n: ast.UnaryOp) -> py.expr:
        if n.op in "-+" and _is_number(n.operand):  # a negative literal: no hook needed
            value = n.operand.value  # type: ignore[attr-defined]
            return _at(_const(-value if n.op == "-" else +value), n.span)
        node = _at(py.UnaryOp(op=_UNARY[n.op](), operand=self.expr(n.operand)), n.span)
        if n.op == "not" or n.op in "-+~" and self.is_int(n.operand):
            return node
        return self.watched(node, n.span)

    def e_BoolOp(self, n: ast.BoolOp) -> py.expr:
        op = py.And() if n.op == "and" else py.Or()
        return _at(py.BoolOp(op=op, values=[self.expr(v) for v in n.values]), n.span)

    def e_Compare(self, n: ast.Compare, watch: bool = True) -> py.expr:
        if len(n.ops) > 1 and not self.ctx.no_walrus:
            node = self.chain(n)
            return self.watched(node, n.span) if watch else node
        node = py.Compare(
            left=self.expr(n.left),
            ops=[_CMP[o]() for o in n.ops],
            comparators=[self.expr(c) for c in n.comparators],
        )
        node = _at(node, n.span)
        if len(n.ops) == 1 and n.ops[0] in _INT_COMPARE:  # int against int: a bool
            watch = watch and not (self.is_int(n.left) and self.is_int(n.comparators[0]))
        return self.watched(node, n.span) if watch else node

    def chain(self, n: ast.Compare) -> py.expr:
        """``a < b < c`` as ``a < (t := b) and t < c``: each pair fails at its own span."""
        values: list[py.expr] = []
        left_node, left = n.left, self.expr(n.left)
        last = len(n.ops) - 1
        for i, (op, right_node) in enumerate(zip(n.ops, n.comparators, strict=True)):
            right = self.expr(right_node)
            t = None
            if i < last:
                t = self.temp()
                right = _walrus(t, right)
            pair = py.Compare(left=left, ops=[_CMP[op]()], comparators=[right])
            sp = left_node.span
            end = right_node.span
            values.append(_at(pair, Span(sp.line, sp.column, end.end_line, end.end_column)))
            left_node, left = right_node, _name(t) if t else left
        return _at(py.BoolOp(op=py.And(), values=values), n.span)

    def test(self, n: ast.Node) -> py.expr:
        """An if/while test: a comparison's value is only tested, never labelled."""
        if type(n) is ast.Compare:
            return self.e_Compare(n, watch=False)  # type: ignore[arg-type]
        return self.expr(n)

    def e_IfExp(self, n: ast.IfExp) -> py.expr:
        node = py.IfExp(test=self.expr(n.test), body=self.expr(n.body), orelse=self.expr(n.orelse))
        return _at(node, n.span)

    def arguments(self, params: tuple[ast.Param, ...]) -> py.arguments:
        args, defaults, kwonly, kw_defaults = [], [], [], []
        vararg = kwarg = None
        for p in params:
            a = _at(py.arg(arg=_script_name(p.name), annotation=None), p.span)
            if p.kind == "pos":
                args.append(a)
                if p.default is not None:
                    defaults.append(self.expr(p.default))
            elif p.kind == "vararg":
                vararg = a if p.name else None
            elif p.kind == "kwonly":
                kwonly.append(a)
                kw_defaults.append(self.expr(p.default) if p.default is not None else None)
            else:
                kwarg = a
        return py.arguments([], args, vararg, kwonly, kw_defaults, kwarg, defaults)

    def e_Lambda(self, n: ast.Lambda) -> py.expr:
        args = self.arguments(n.params)
        with self.inside(function=True, klass=False, no_walrus=False):
            body = self.expr(n.body)
        ticked = _at(py.BoolOp(op=py.And(), values=[_step(), body]), n.span)
        lam = _at(py.Lambda(args=args, body=ticked), n.span)
        return _at(_call("ad$fn", lam), n.span)

    def e_Call(self, n: ast.Call) -> py.expr:
        args: list[py.expr] = []
        keywords: list[py.keyword] = []
        for a in n.args:
            v = self.expr(a.value)
            if a.kind == "pos":
                args.append(v)
            elif a.kind == "kw":
                keywords.append(_at(py.keyword(arg=a.name, value=v), a.span))
            else:  # *args (bounded) and **kwargs (a dict), checked where they are written
                name = (
                    n.func.id if type(n.func) is ast.Name else getattr(n.func, "attr", "function")
                )
                helper = "ad$args" if a.kind == "star" else "ad$kwargs"
                v = _at(_call(helper, v, _const(name)), a.span)
                if a.kind == "star":
                    args.append(_at(py.Starred(value=v, ctx=py.Load()), a.span))
                else:
                    keywords.append(_at(py.keyword(arg=None, value=v), a.span))
        node = _at(py.Call(func=self.expr(n.func), args=args, keywords=keywords), n.span)
        return self.watched(node, n.span)

    def e_Attribute(self, n: ast.Attribute) -> py.expr:
        return _at(_call("ad$ga", self.expr(n.value), _const(n.attr)), n.span)

    def e_Subscript(self, n: ast.Subscript) -> py.expr:
        node = py.Subscript(value=self.expr(n.value), slice=self.expr(n.index), ctx=py.Load())
        return self.watched(_at(node, n.span), n.span)

    def e_Slice(self, n: ast.Slice) -> py.expr:
        node = py.Slice(
            lower=self.expr(n.lower) if n.lower is not None else None,
            upper=self.expr(n.upper) if n.upper is not None else None,
            step=self.expr(n.step) if n.step is not None else None,
        )
        return _at(node, n.span)

    def comprehension(self, gens: tuple[ast.Comprehension, ...]) -> list[py.comprehension]:
        """The loops of a comprehension, each counting a step per item (``ad$next``)."""
        out = []
        for g in gens:
            with self.inside(no_walrus=True):  # no := in a comprehension's iterable
                it = self.expr(g.iter)
            ifs = [_at(_step(), g.span)] + [self.expr(c) for c in g.ifs]
            out.append(py.comprehension(target=self.target(g.target), iter=it, ifs=ifs, is_async=0))
        return out

    def e_comp(self, n: Any) -> py.expr:
        """List, set, dict comprehensions and generator expressions: Python's own."""
        make, fields = _COMPREHENSIONS[type(n).__name__]
        in_class_body = self.ctx.klass and not self.ctx.function
        # a generator runs later, when a loop's int variable may hold anything
        ints = frozenset() if type(n) is ast.GeneratorExp else self.ctx.ints
        with self.inside(no_walrus=self.ctx.no_walrus or in_class_body, ints=ints):
            parts = {f: self.expr(getattr(n, f)) for f in fields}
            node = make(**parts, generators=self.comprehension(n.generators))
            return _at(node, n.generators[0].iter.span)  # `[i for i in 5]` fails there

    e_ListComp = e_SetComp = e_DictComp = e_GeneratorExp = e_comp

    def e_Yield(self, n: Any) -> py.expr:
        value = self.expr(n.value) if n.value is not None else None
        return _at(py.Yield(value=value), n.span)

    def e_Starred(self, n: Any) -> py.expr:
        return _at(py.Starred(value=self.expr(n.value), ctx=py.Load()), n.span)

    # ------------------------------------------------------------ targets

    def target(self, t: ast.Node) -> py.expr:
        """A store target that Python can store natively (names, tuples, subscripts)."""
        kind = type(t)
        if kind is ast.Name:
            return _at(_name(_script_name(t.id), py.Store()), t.span)
        if kind in (ast.TupleExpr, ast.ListExpr):
            elts = [self.target(e) for e in t.elts]  # type: ignore[attr-defined]
            return _at(py.Tuple(elts=elts, ctx=py.Store()), t.span)
        if kind is ast.Starred:
            return _at(py.Starred(value=self.target(t.value), ctx=py.Store()), t.span)  # type: ignore[attr-defined]
        # a subscript: build.py refused other targets, and store() handles attributes
        node = py.Subscript(value=self.expr(t.value), slice=self.expr(t.index), ctx=py.Store())  # type: ignore[attr-defined]
        return _at(node, t.span)

    @staticmethod
    def has_attribute(t: ast.Node) -> bool:
        if type(t) is ast.Attribute:
            return True
        if type(t) in (ast.TupleExpr, ast.ListExpr):
            return any(Translator.has_attribute(e) for e in t.elts)  # type: ignore[attr-defined]
        if type(t) is ast.Starred:
            return Translator.has_attribute(t.value)  # type: ignore[attr-defined]
        return False

    def store(self, t: ast.Node, value: py.expr, span: Span) -> list[py.stmt]:
        """Statements storing `value` into target `t` (attributes through the guard)."""
        if type(t) is ast.Attribute:
            call = _call("ad$sa", self.expr(t.value), _const(t.attr), value)
            return [_at(py.Expr(_at(call, t.span)), span)]
        if not self.has_attribute(t):
            return [_at(py.Assign(targets=[self.target(t)], value=value), span)]
        # a tuple target with attributes: unpack into temporaries, then store each
        temps = []
        out: list[py.stmt] = []
        elts = t.elts  # type: ignore[attr-defined]
        store_elts: list[py.expr] = []
        for e in elts:
            tmp = self.temp()
            temps.append((e, tmp))
            if type(e) is ast.Starred:
                store_elts.append(py.Starred(value=_name(tmp, py.Store()), ctx=py.Store()))
            else:
                store_elts.append(_name(tmp, py.Store()))
        out.append(py.Assign(targets=[py.Tuple(elts=store_elts, ctx=py.Store())], value=value))
        _locate(out, span)
        for e, tmp in temps:
            inner = e.value if type(e) is ast.Starred else e  # type: ignore[attr-defined]
            out.extend(self.store(inner, _at(_name(tmp), span), span))
        return out

    @staticmethod
    def bound_names(t: ast.Node, nested: bool = False) -> list[tuple[str, Span | None]]:
        """The names a target binds; a name inside a tuple reports its own span."""
        kind = type(t)
        if kind is ast.Name:
            return [(t.id, t.span if nested else None)]  # type: ignore[attr-defined]
        if kind in (ast.TupleExpr, ast.ListExpr):
            return [n for e in t.elts for n in Translator.bound_names(e, True)]  # type: ignore[attr-defined]
        if kind is ast.Starred:
            return Translator.bound_names(t.value, True)  # type: ignore[attr-defined]
        return []

    # --------------------------------------------------------- statements

    def block(self, body: tuple) -> list[py.stmt]:
        out: list[py.stmt] = []
        for s in body:
            out.extend(self.stmt(s))
        return out or [_at(py.Pass(), self.src_span_of(body))]

    @staticmethod
    def src_span_of(body: tuple) -> Span:
        return body[0].span if body else Span(1, 1, 1, 2)

    def stmt(self, s: ast.Node) -> list[py.stmt]:
        out = getattr(self, "s_" + type(s).__name__)(s)
        if self.opt.statements:
            k = _const(self.span_index(stmt_span(s, self.src)))
            hook = _at(py.Expr(_call("ad$st", k)), stmt_span(s, self.src))
            _locate([hook], stmt_span(s, self.src))
            out = [hook] + out
        return out

    def s_ExprStmt(self, s: ast.ExprStmt) -> list[py.stmt]:
        value = self.expr(s.value)
        if self.opt.interactive and not self.ctx.function and not self.ctx.klass:
            value = _at(_call("ad$show", value), s.span)
        return [_at(py.Expr(value), s.span)]

    def s_Assign(self, s: ast.Assign) -> list[py.stmt]:
        if (
            len(s.targets) == 1
            and type(s.targets[0]) is ast.Name
            and isinstance(s.value, _VALUE_NODES)
            and self.opt.values
            and self.opt.assigns
            and self.opt.watch == "one"
        ):
            return self.assign_watched(s)
        value = self.expr(s.value)
        names = [n for t in s.targets for n in self.bound_names(t)]
        if self.opt.watch != "all" and type(s.value).__name__ in _NEVER_WATCHED:
            names = [n for n in names if n[1] is not None]  # `x = 0.5`: never a tensor
        if self.ctx.klass and not self.ctx.function:
            self.check_class_names([n for n, _ in names], s.span)
        if not any(self.has_attribute(t) for t in s.targets):
            node = py.Assign(targets=[self.target(t) for t in s.targets], value=value)
            return [_at(node, s.span)] + self.assigned(names, s.span)
        if len(s.targets) == 1:
            return self.store(s.targets[0], value, s.span) + self.assigned(names, s.span)
        tmp = self.temp()
        out: list[py.stmt] = [_at(_bind(tmp, value), s.span)]
        for t in s.targets:
            out.extend(self.store(t, _at(_name(tmp), s.span), s.span))
        return out + self.assigned(names, s.span)

    def assign_watched(self, s: ast.Assign) -> list[py.stmt]:
        """``name = value``: one type test serves both hooks (value, then assignment)."""
        target = s.targets[0]
        self.unwatched = s.value.span
        try:
            value = self.expr(s.value)
        finally:
            self.unwatched = None
        ident = _script_name(target.id)  # type: ignore[attr-defined]
        if self.ctx.klass and not self.ctx.function:
            self.check_class_names([target.id], s.span)  # type: ignore[attr-defined]
        kv = _const(self.span_index(s.value.span))
        ka = _const(self.span_index(s.span))
        hooks = py.If(
            test=self.of_watched_type(_name(ident)),
            body=[
                py.Expr(_call("ad$v", _name(ident), kv)),
                py.Expr(_call("ad$a", _const(target.id), _name(ident), ka)),  # type: ignore[attr-defined]
            ],
            orelse=[],
        )
        store = py.Assign(targets=[self.target(target)], value=value)
        return [_at(store, s.span), _at(hooks, s.span)]

    def s_AnnAssign(self, s: Any) -> list[py.stmt]:
        if s.value is None:
            return [_at(py.Pass(), s.span)]
        return self.s_Assign(ast.Assign((s.target,), s.value, s.span))

    def s_AugAssign(self, s: ast.AugAssign) -> list[py.stmt]:
        t = s.target
        value = self.expr(s.value)
        names = self.bound_names(t)
        guarded = s.op in _GUARDED and not self.small(ast.BinOp(t, s.op, s.value, s.span))
        if type(t) is ast.Name:
            if not guarded:
                node = py.AugAssign(target=self.target(t), op=_BINOPS[s.op](), value=value)
                seen = []
                if self.opt.values:  # the in-place result, as the hook would see it
                    seen = [_at(py.Expr(self.watched(self.e_Name(t), s.span)), s.span)]  # type: ignore[arg-type]
                return [_at(node, s.span)] + seen + self.assigned(names, s.span)
            func = f"ad${s.op}=" if guarded else f"ad$i{s.op}"
            result = self.watched(_at(_call(func, self.expr(t), value), s.span), s.span)
            return [_at(py.Assign(targets=[self.target(t)], value=result), s.span)] + self.assigned(
                names, s.span
            )
        func = f"ad${s.op}=" if guarded else f"ad$i{s.op}"
        obj = self.temp()
        out: list[py.stmt] = [
            _at(_bind(obj, self.expr(t.value)), s.span)  # type: ignore[attr-defined]
        ]
        if type(t) is ast.Attribute:
            current = _at(_call("ad$ga", _name(obj), _const(t.attr)), t.span)
            result = self.watched(_at(_call(func, current, value), s.span), s.span)
            out.append(
                _at(
                    py.Expr(_at(_call("ad$sa", _name(obj), _const(t.attr), result), t.span)), s.span
                )
            )
        else:  # a subscript (build.py refused other targets)
            key = self.temp()
            out.append(_at(_bind(key, self.expr(t.index)), s.span))
            current = _at(py.Subscript(value=_name(obj), slice=_name(key), ctx=py.Load()), t.span)
            result = self.watched(_at(_call(func, current, value), s.span), s.span)
            store = py.Subscript(value=_name(obj), slice=_name(key), ctx=py.Store())
            out.append(_at(py.Assign(targets=[_at(store, t.span)], value=result), s.span))
        return _locate(out, s.span)  # type: ignore[return-value]

    def s_Pass(self, s: ast.Pass) -> list[py.stmt]:
        return [_at(py.Pass(), s.span)]

    def s_Break(self, s: ast.Break) -> list[py.stmt]:
        return [_at(py.Break(), s.span)]

    def s_Continue(self, s: ast.Continue) -> list[py.stmt]:
        return [_at(py.Continue(), s.span)]

    def s_Return(self, s: ast.Return) -> list[py.stmt]:
        value = self.expr(s.value) if s.value is not None else None
        return [_at(py.Return(value=value), s.span)]

    def s_Raise(self, s: ast.Raise) -> list[py.stmt]:
        if s.exc is None:
            return [_at(py.Raise(exc=None, cause=None), s.span)]
        cause = self.expr(s.cause) if s.cause is not None else None
        return [_at(py.Raise(exc=self.expr(s.exc), cause=cause), s.span)]

    def s_Global(self, s: ast.Global) -> list[py.stmt]:
        return [_at(py.Global(names=[_script_name(n) for n in s.names]), s.span)]

    def s_Nonlocal(self, s: ast.Nonlocal) -> list[py.stmt]:
        return [_at(py.Nonlocal(names=[_script_name(n) for n in s.names]), s.span)]

    def s_Delete(self, s: ast.Delete) -> list[py.stmt]:
        out: list[py.stmt] = []
        for t in s.targets:
            if type(t) is ast.Attribute:
                call = _at(_call("ad$da", self.expr(t.value), _const(t.attr)), t.span)
                out.append(_at(py.Expr(call), s.span))
            elif type(t) is ast.Name:
                out.append(
                    _at(
                        py.Delete(targets=[_at(_name(_script_name(t.id), py.Del()), s.span)]),
                        s.span,
                    )
                )
            elif type(t) is ast.Subscript:
                node = py.Subscript(
                    value=self.expr(t.value), slice=self.expr(t.index), ctx=py.Del()
                )
                out.append(_at(py.Delete(targets=[_at(node, t.span)]), s.span))
            elif type(t) is ast.TupleExpr:
                out.extend(self.s_Delete(ast.Delete(t.elts, s.span)))
            else:
                raise self.error(f"cannot delete {type(t).__name__}", t.span)
        return out

    def s_Assert(self, s: ast.Assert) -> list[py.stmt]:
        # `if not test: raise AssertionError(msg)`: the error is at the statement
        exc: py.expr = _name("ad$AE")
        if s.msg is not None:
            exc = py.Call(func=exc, args=[self.expr(s.msg)], keywords=[])
        fail = _at(py.Raise(exc=exc, cause=None), s.span)
        test = _at(py.UnaryOp(op=py.Not(), operand=self.expr(s.test)), s.test.span)
        return [_at(py.If(test=test, body=[fail], orelse=[]), s.span)]

    def s_Import(self, s: ast.Import) -> list[py.stmt]:
        out: list[py.stmt] = []
        names = []
        for a in s.names:
            bound = a.asname or a.name.split(".")[0]
            call = _call("ad$import", _const(a.name), _const(a.asname is None))
            out.append(_at(_bind(_script_name(bound), call), s.span))
            names.append(bound)
        return _locate(out, s.span) + self.assigned(names, s.span)  # type: ignore[operator]

    def s_ImportFrom(self, s: ast.ImportFrom) -> list[py.stmt]:
        if s.module == "__future__":
            # Python 2 compatibility lines in old tutorials: accepted, no effect
            for a in s.names:
                if a.name not in _FUTURE_FEATURES:
                    raise self.error(f"future feature {a.name} is not defined", a.span)
            return [_at(py.Pass(), s.span)]
        mod = self.temp()
        out: list[py.stmt] = [
            py.Assign(
                targets=[_name(mod, py.Store())],
                value=_call("ad$import", _const(s.module), _const(False)),
            )
        ]
        if s.star:  # at module level: see build.validate
            out.append(py.Expr(_call("ad$star", _name(mod), _const(s.module))))
            return _locate(out, s.span)  # type: ignore[return-value]
        names = []
        for a in s.names:
            bound = a.asname or a.name
            call = _call("ad$from", _name(mod), _const(s.module), _const(a.name))
            out.append(_bind(_script_name(bound), call))
            names.append(bound)
        return _locate(out, s.span) + self.assigned(names, s.span)  # type: ignore[operator]

    def s_If(self, s: ast.If) -> list[py.stmt]:
        orelse = self.block(s.orelse) if s.orelse else []
        for test, body in reversed(list(zip(s.tests, s.bodies, strict=True))):
            node = py.If(test=self.test(test), body=self.block(body), orelse=orelse)
            _at(node, test.span)
            orelse = [node]
        node = orelse[0]
        _at(node, stmt_span(s, self.src))
        return [node]

    def loop_body(self, body: tuple, header: Span) -> list[py.stmt]:
        return _locate([py.Expr(_step())], header) + self.block(body)  # type: ignore[operator]

    def s_While(self, s: ast.While) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        node = py.While(
            test=self.test(s.test),
            body=self.loop_body(s.body, header),
            orelse=self.block(s.orelse) if s.orelse else [],
        )
        return [_at(node, s.test.span)]  # a test that fails (a tensor's truth) is its own

    def s_For(self, s: ast.For) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        names = self.bound_names(s.target)
        known = self.int_loop(s)
        if known is None:
            body = self.loop_body(s.body, header)
        else:  # an int is never watched: no hook after binding it, none on `i % 7`
            names = [n for n in names if n[0] != known]
            with self.inside(ints=self.ctx.ints | {known}):
                body = self.loop_body(s.body, header)
        if self.has_attribute(s.target):
            tmp = self.temp()
            target: py.expr = _at(_name(tmp, py.Store()), s.target.span)
            pre = self.store(s.target, _at(_name(tmp), s.target.span), s.target.span)
        else:
            target = self.target(s.target)
            pre = []
        body = body[:1] + pre + self.assigned(names, s.target.span) + body[1:]
        node = py.For(
            target=target,
            iter=self.expr(s.iter),
            body=body,
            orelse=self.block(s.orelse) if s.orelse else [],
            type_comment=None,
        )
        return [_at(node, s.iter.span)]  # `for x in 5` fails at the iterable

    def s_Try(self, s: ast.Try) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        handlers: list[py.excepthandler] = []
        if s.handlers:
            exc = self.temp()
            chain: list[py.stmt] = [_at(py.Raise(exc=None, cause=None), header)]
            for h in reversed(s.handlers):
                body = self.block(h.body)
                if h.name:
                    ident = _script_name(h.name)
                    shown = _call("ad$shown", _name(exc))
                    clear = [
                        _bind(ident, _const(None)),
                        py.Delete(targets=[_name(ident, py.Del())]),
                    ]
                    body = [_bind(ident, shown)]
                    body += self.assigned([h.name], h.span)
                    body.append(
                        py.Try(body=self.block(h.body), handlers=[], orelse=[], finalbody=clear)
                    )
                    _locate(body, h.span)
                kind = self.expr(h.type) if h.type is not None else _const(None)
                test = _at(_call("ad$match", _name(exc), kind), h.type.span if h.type else h.span)
                chain = [_at(py.If(test=test, body=body, orelse=chain), h.span)]
            handlers.append(
                _at(py.ExceptHandler(type=_name("ad$BE"), name=exc, body=chain), s.handlers[0].span)
            )
        final = self.block(s.finalbody) if s.finalbody else []
        if final:
            final = [_at(py.If(test=_call("ad$fin"), body=final, orelse=[]), s.finalbody[0].span)]
            _locate(final, s.finalbody[0].span)
        node = py.Try(
            body=self.block(s.body),
            handlers=handlers,
            orelse=self.block(s.orelse) if s.orelse else [],
            finalbody=final,
        )
        return [_locate([_at(node, header)], header)[0]]

    def s_With(self, s: ast.With) -> list[py.stmt]:
        items = []
        pre: list[py.stmt] = []
        names = []
        for item in s.items:
            ctx = _at(_call("ad$cm", self.expr(item.context)), item.context.span)
            target = None
            if item.target is not None:
                names.extend(self.bound_names(item.target))
                if self.has_attribute(item.target):
                    tmp = self.temp()
                    target = _at(_name(tmp, py.Store()), item.target.span)
                    pre.extend(self.store(item.target, _name(tmp), item.span))
                else:
                    target = self.target(item.target)
            items.append(py.withitem(context_expr=ctx, optional_vars=target))
        body = pre + self.assigned(names, s.span) + self.block(s.body)
        return [_locate([_at(py.With(items=items, body=body), stmt_span(s, self.src))], s.span)[0]]

    def s_FunctionDef(self, s: ast.FunctionDef) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        in_class = self.ctx.klass and not self.ctx.function
        if in_class and s.name.startswith("__") and s.name.endswith("__"):
            if s.name not in DEFINABLE_DUNDERS:
                raise self.error(
                    f"defining '{s.name}' is not available in adcli scripts", s.span, "SandboxError"
                )
            name = s.name
        else:
            name = _script_name(s.name)
        decorators = [self.expr(d) for d in s.decorators]
        args = self.arguments(s.params)
        with self.inside(function=True, klass=False, no_walrus=False):
            body = self.block(s.body)
        prologue: list[py.stmt] = [py.Expr(_step())]
        if not _contains_yield(s.body) and _makes_calls(
            s.body
        ):  # a generator's frame is resumed, not nested
            over = py.Compare(
                left=py.Attribute(value=_name("ad$S"), attr="d", ctx=py.Load()),
                ops=[py.Gt()],
                comparators=[py.Attribute(value=_name("ad$S"), attr="maxd", ctx=py.Load())],
            )
            prologue += [
                _depth(py.Add()),
                py.If(test=over, body=[py.Expr(_call("ad$enter"))], orelse=[]),
            ]
            exit_ = _locate([_depth(py.Sub())], header)
            body = [_at(py.Try(body=body, handlers=[], orelse=[], finalbody=exit_), header)]
        _locate(prologue, header)
        node = py.FunctionDef(
            name=name,
            args=args,
            body=prologue + body,
            decorator_list=decorators + [_at(_name("ad$fn"), header)],
            returns=None,
            type_comment=None,
        )
        hooked = not in_class and self.opt.watch == "all"  # a function is never a tensor
        return [_at(node, s.span)] + (self.assigned([s.name], s.span) if hooked else [])

    def check_class_names(self, names: list[str], span: Span) -> None:
        for n in names:
            if n.startswith("__") and n.endswith("__"):
                raise self.error(
                    f"assigning '{n}' in a class body is not available in adcli scripts",
                    span,
                    "SandboxError",
                )

    def s_ClassDef(self, s: Any) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        bases = [self.expr(b) for b in s.bases]
        with self.inside(function=False, klass=True, no_walrus=True):
            body = self.block(s.body)
        checked = _at(py.Starred(value=_call("ad$bases", *bases), ctx=py.Load()), header)
        _locate([checked], header)
        node = py.ClassDef(
            name=_script_name(s.name),
            bases=[checked],
            keywords=[],
            body=body,
            decorator_list=[self.expr(d) for d in s.decorators] + [_at(_name("ad$class"), header)],
        )
        return [_at(node, s.span)] + self.assigned([s.name], header)

    # ------------------------------------------------------------- module

    def module(self, m: ast.Module) -> py.Module:
        body = []
        for s in m.body:
            body.extend(self.stmt(s))
        return py.Module(body=body, type_ignores=[])


def translate(module: ast.Module, options: Options) -> py.Module:
    """The Python module for `module` (positions set on every node).

    The module's own names are declared `global`: CPython then reads them (and
    the hidden helpers in the builtins) with its cached global lookups instead
    of the three dict probes of a plain module-level name.
    """
    tree = Translator(module, options).module(module)
    names = _fill(tree)
    if names:
        tree.body.insert(0, _at(py.Global(names=names), Span(1, 1, 1, 2)))
    return tree
