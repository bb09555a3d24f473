"""What each .ad construct becomes in Python: the parsed script -> the module CPython runs.

The parser (`adcli.lang.build`) gives the script as Python's own `ast.Module`;
this module turns it into a guarded one, which CPython then compiles and runs
(see `adcli.lang.evaluator`). Every generated node carries the script node's
position (columns are the script's character columns), so a code object's
positions map straight back to spans.

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
from typing import Any, NamedTuple

from adcli.lang.build import TEXT, children, is_elif, place, span_of
from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.guard import DEFINABLE_DUNDERS
from adcli.lang.source import Source, Span

__all__ = ["Options", "translate", "stmt_span"]

_GUARDED = frozenset({"+", "*", "**", "%"})
_COMPOUND = (py.If, py.While, py.For, py.Try, py.With, py.FunctionDef, py.ClassDef)
_VALUE_NODES = (py.Call, py.BinOp, py.UnaryOp, py.Compare, py.Subscript)
# Values that are never of a watched type (a host's tensor): no hook after `x = ...`.
_NEVER_WATCHED = (py.Constant, py.List, py.Dict, py.Tuple, py.Set, py.JoinedStr, py.Lambda)
_NEVER_WATCHED += (py.ListComp, py.DictComp, py.SetComp, py.GeneratorExp)
_LONG_CHAIN = 64  # operator chains longer than this become a flat tuple of steps


class Options(NamedTuple):
    """What the generated code must report: hooks present, watched types, display."""

    values: bool
    assigns: bool
    statements: bool
    watch: str  # "one" (ad$T), "set" (ad$TS) or "all"
    interactive: bool
    spans: list[Span]  # the interpreter's span table: hooks get spans[k]


def stmt_span(node: py.AST, src: Source) -> Span:
    """A statement's span; for compound statements only its first line."""
    sp = span_of(node)
    if isinstance(node, _COMPOUND):
        line = src.line_text(sp.line).rstrip()
        return Span(sp.line, sp.column, sp.line, max(sp.column + 1, len(line) + 1))
    return sp


def _at(node: Any, where: Any) -> Any:
    """Position `node` at `where`, a span or a script node (its children without a
    position inherit it: `_fill`)."""
    if "lineno" in node._attributes:
        place(node, where if type(where) is Span else span_of(where))
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


def _is_number(node: py.AST, kinds: tuple = (int, float)) -> bool:
    return type(node) is py.Constant and type(node.value) in kinds


def _step() -> py.expr:
    """``ad$next(ad$B)``: one step from the run's budget (True; raises when spent)."""
    return _call("ad$next", _name("ad$B"))


def _depth(op: py.operator) -> py.stmt:
    """``ad$S.d += 1`` (a function's entry) or ``-= 1`` (its exit)."""
    target = py.Attribute(value=_name("ad$S"), attr="d", ctx=py.Store())
    return py.AugAssign(target=target, op=op, value=_const(1))


def _makes_calls(body: list) -> bool:
    """Does a function body call anything? A body that does not cannot recurse by
    itself, so it needs no depth count (CPython's own limit still bounds it)."""
    return any(type(n) is py.Call for n in _nodes(body))


def _locate(nodes: list[py.AST], span: Span) -> list[py.AST]:
    """Position each of `nodes` that has no position yet at `span`."""
    for n in nodes:
        if getattr(n, "lineno", None) is None:
            _at(n, span)
    return nodes


class _Ctx(NamedTuple):
    """Where the translator is: in a function? a class body? a comprehension iterable?
    Which names hold an int for certain here (`ints`: see `Translator.int_loop`)?"""

    function: bool
    klass: bool
    no_walrus: bool
    ints: frozenset[str] = frozenset()


_INT_OPS = frozenset({"+", "-", "*", "//", "%"})  # int op int: an int no bigger than a product
_INT_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})
_INT_SOURCES = ("range", "enumerate")  # builtins whose loop variable (first) is an int


def _binders(node: py.AST) -> Iterator[str]:
    """Names one node binds in its own scope (not those bound in a nested scope)."""
    kind = type(node)
    targets: list = []
    if kind in (py.Assign, py.Delete):
        targets = node.targets  # type: ignore[attr-defined]
    elif kind in (py.AugAssign, py.AnnAssign, py.For, py.comprehension):
        targets = [node.target]  # type: ignore[attr-defined]
    elif kind is py.withitem:
        targets = [node.optional_vars]  # type: ignore[attr-defined]
    elif kind in (py.FunctionDef, py.ClassDef, py.ExceptHandler):
        if node.name:  # type: ignore[attr-defined]
            yield node.name  # type: ignore[attr-defined]
    elif kind in (py.Import, py.ImportFrom):
        for a in node.names:  # type: ignore[attr-defined]
            yield a.asname or a.name.split(".")[0]
    for t in targets:
        if t is not None:
            for name, _ in Translator.bound_names(t):
                yield name


def _scan(module: py.Module) -> tuple[set[str], set[str]]:
    """(every name bound anywhere in the script, names any `global`/`nonlocal` names)."""
    bound: set[str] = set()
    shared: set[str] = set()
    for n in _nodes(module.body):
        if type(n) in (py.Global, py.Nonlocal):
            shared.update(n.names)
        elif type(n) is py.arg:
            bound.add(n.arg)
        bound.update(_binders(n))
    return bound, shared


def _nodes(body: list, nested: bool = True) -> Iterator[py.AST]:
    """The nodes of a block (without recursion); without `nested`, those of its own
    scope only: a nested function, lambda or class is one of them, not its insides."""
    stack: list[Any] = list(body)
    while stack:
        n = stack.pop()
        yield n
        if nested or not isinstance(n, (py.FunctionDef, py.Lambda, py.ClassDef)):
            stack.extend(children(n))


def _rebound(body: list) -> set[str]:
    """Names a block binds in its own scope."""
    return {name for n in _nodes(body, nested=False) for name in _binders(n)}


def _contains_yield(body: list) -> bool:
    return any(type(n) is py.Yield for n in _nodes(body, nested=False))


class Translator:
    """Turns one parsed script (see `adcli.lang.build`) into the Python module that
    runs it (see the module table)."""

    def __init__(self, module: py.Module, options: Options) -> None:
        self.src: Source = module.source  # type: ignore[attr-defined]
        self.opt = options
        self.ctx = _Ctx(False, False, False)
        self.tmp = 0
        self.unwatched: py.AST | None = None  # the assigned value (see assign_watched)
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
        if "function" in changes or "klass" in changes:
            changes.setdefault("ints", frozenset())
        self.ctx = saved._replace(**changes)
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

    def watched(self, value: py.expr, n: py.AST) -> py.expr:
        """`value`, the translation of `n`, passed through the value hook if it has a
        watched type."""
        if not self.opt.values or n is self.unwatched:
            return value
        span = span_of(n)
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

    def is_int(self, n: py.AST) -> bool:
        """Is `n` an int for certain: int literals and known-int names under + - * // %
        and unary - + ~ (walked without recursion)?"""
        ints = self.ctx.ints
        if not ints:
            return False
        stack = [n]
        while stack:
            n = stack.pop()
            kind = type(n)
            if kind is py.Name:
                if n.id not in ints:  # type: ignore[attr-defined]
                    return False
            elif kind is py.Constant:
                if type(n.value) is not int:  # type: ignore[attr-defined]
                    return False
            elif kind is py.BinOp and TEXT[type(n.op)] in _INT_OPS:  # type: ignore[attr-defined]
                stack += (n.left, n.right)  # type: ignore[attr-defined]
            elif kind is py.UnaryOp and type(n.op) is not py.Not:  # type: ignore[attr-defined]
                stack.append(n.operand)  # type: ignore[attr-defined]
            else:
                return False
        return True

    def int_loop(self, s: py.For) -> str | None:
        """The loop variable of ``for i in range(...)`` (or ``for i, x in
        enumerate(...)``) when it is an int everywhere in the body: the builtin is
        not shadowed in the script, the body does not rebind the name, and no
        ``global``/``nonlocal`` anywhere could rebind it from a call."""
        it, target = s.iter, s.target
        if type(it) is not py.Call or type(it.func) is not py.Name:
            return None
        source = it.func.id
        if source not in self.int_sources or self.ctx.klass and not self.ctx.function:
            return None
        if source == "enumerate":
            if type(target) not in (py.Tuple, py.List) or len(target.elts) != 2:  # type: ignore[attr-defined]
                return None
            target = target.elts[0]  # type: ignore[attr-defined]
        if type(target) is not py.Name:
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

    def expr(self, n: py.AST) -> py.expr:
        """Translate one expression."""
        return getattr(self, "e_" + type(n).__name__, self.same)(n)

    def same(self, n: Any) -> Any:
        """A node that means in a script what it means in Python (a display, a
        conditional, a slice, `yield`, `and`/`or`, `pass`, `return`...): the same
        node, its expressions translated."""
        fields = {}
        for name in n._fields:
            v = getattr(n, name)
            if isinstance(v, py.expr):
                v = self.expr(v)
            elif type(v) is list:
                v = [self.expr(x) if isinstance(x, py.expr) else x for x in v]
            fields[name] = v
        return _at(type(n)(**fields), n)

    def e_Constant(self, n: py.Constant) -> py.expr:
        return _at(_const(n.value), n)

    def e_Name(self, n: py.Name) -> py.expr:
        return _at(_name(_script_name(n.id)), n)

    def e_JoinedStr(self, n: py.JoinedStr) -> py.expr:
        values = [
            _at(_const(part.value), n) if type(part) is py.Constant else self.formatted(part)
            for part in n.values
        ]
        joined = _at(py.JoinedStr(values=values), n)
        if sum(type(p) is py.FormattedValue for p in n.values) < 2:
            return joined
        return _at(_call("ad$fs", joined), n)  # several fields: check the total length

    def formatted(self, f: Any) -> py.expr:
        value = self.expr(f.value)
        if f.format_spec is None:
            if not isinstance(f.value, py.Constant):  # `str(l)`'s check of nested text
                value = _at(_call("ad$fv", value), f)
            node = py.FormattedValue(value=value, conversion=f.conversion, format_spec=None)
            return _at(node, f)
        spec = self.e_JoinedStr(f.format_spec)
        conversion = chr(f.conversion) if f.conversion != -1 else None
        call = _at(_call("ad$fmt", value, _const(conversion), spec), f)
        return _at(py.FormattedValue(value=call, conversion=-1, format_spec=None), f)

    def binop(self, n: py.BinOp, left: py.expr, right: py.expr, ints: bool = False) -> py.expr:
        """`left op right`; with `ints` both are known ints: native, nothing to watch."""
        op = TEXT[type(n.op)]
        if ints:
            return _at(py.BinOp(left=left, op=n.op, right=right), n)
        if op in _GUARDED and not self.small(n):
            if _is_number(n.right) and (not self.ctx.no_walrus or type(left) is py.Name):
                # `i % 7`: a plain number on the left gives a plain number, no hook needed
                return self.checked(op, left, right, n, plain=True)
            return self.watched(self.checked(op, left, right, n), n)
        node = _at(py.BinOp(left=left, op=n.op, right=right), n)
        return self.watched(node, n)

    def checked(
        self, op: str, left: py.expr, right: py.expr, n: py.BinOp, plain: bool = False
    ) -> py.expr:
        """A size-checked operator: native when the left operand's type cannot grow
        (``ad$N+`` holds int, float...), else the checking function ``ad$+``.
        With `plain` (a numeric literal on the right) the native branch is taken for
        plain numbers only (``ad$P+``), and only the other branch is watched."""
        if (self.ctx.no_walrus and type(left) is not py.Name) or type(right) not in (
            py.Name,
            py.Constant,
        ):
            return _at(_call(f"ad${op}", left, right), n)
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
        native = py.BinOp(left=again, op=n.op, right=right)
        slow: py.expr = _at(_call(f"ad${op}", _name(again.id), _copy(right)), n)
        if plain:
            slow = self.watched(slow, n)
        return _at(py.IfExp(test=test, body=native, orelse=slow), n)

    @staticmethod
    def small(n: py.BinOp) -> bool:
        """Can this guarded operator skip its size check (a numeric literal operand)?"""
        left, right, op = n.left, n.right, TEXT[type(n.op)]
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

    def e_BinOp(self, n: py.BinOp) -> py.expr:
        # Left-deep chains (a + b + c ...) are walked in a loop, never recursively.
        chain = [n]
        while type(chain[-1].left) is py.BinOp:
            chain.append(chain[-1].left)  # type: ignore[arg-type]
        chain.reverse()
        acc = self.expr(chain[0].left)
        ints = self.is_int(chain[0].left)  # so far an int for certain (each step once)
        if len(chain) <= _LONG_CHAIN:
            for b in chain:
                ints = ints and TEXT[type(b.op)] in _INT_OPS and self.is_int(b.right)
                acc = self.binop(b, acc, self.expr(b.right), ints)
            return acc
        # A long chain: (t := first, t := t + x1, t := t + x2, ...)[-1], shallow for CPython.
        t = self.temp()
        steps: list[py.expr] = [_walrus(t, acc)]
        for b in chain:
            step = self.binop(b, _name(t), self.expr(b.right))
            steps.append(_at(_walrus(t, step), b))
        tup = _at(py.Tuple(elts=steps, ctx=py.Load()), n)
        return _at(py.Subscript(value=tup, slice=_const(-1), ctx=py.Load()), n)

    def e_UnaryOp(self, n: py.UnaryOp) -> py.expr:
        op = type(n.op)
        if op in (py.USub, py.UAdd) and _is_number(n.operand):  # a negative literal: no hook
            value = n.operand.value  # type: ignore[attr-defined]
            return _at(_const(-value if op is py.USub else +value), n)
        node = _at(py.UnaryOp(op=n.op, operand=self.expr(n.operand)), n)
        if op is py.Not or self.is_int(n.operand):
            return node
        return self.watched(node, n)

    def e_Compare(self, n: py.Compare, watch: bool = True) -> py.expr:
        if len(n.ops) > 1 and not self.ctx.no_walrus:
            node = self.chain(n)
            return self.watched(node, n) if watch else node
        node = py.Compare(
            left=self.expr(n.left),
            ops=list(n.ops),
            comparators=[self.expr(c) for c in n.comparators],
        )
        node = _at(node, n)
        if len(n.ops) == 1 and TEXT[type(n.ops[0])] in _INT_COMPARE:  # int against int: a bool
            watch = watch and not (self.is_int(n.left) and self.is_int(n.comparators[0]))
        return self.watched(node, n) if watch else node

    def chain(self, n: py.Compare) -> py.expr:
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
            pair = py.Compare(left=left, ops=[op], comparators=[right])
            sp = span_of(left_node)
            end = span_of(right_node)
            values.append(_at(pair, Span(sp.line, sp.column, end.end_line, end.end_column)))
            left_node, left = right_node, _name(t) if t else left
        return _at(py.BoolOp(op=py.And(), values=values), n)

    def test(self, n: py.AST) -> py.expr:
        """An if/while test: a comparison's value is only tested, never labelled."""
        if type(n) is py.Compare:
            return self.e_Compare(n, watch=False)  # type: ignore[arg-type]
        return self.expr(n)

    def arguments(self, a: py.arguments) -> py.arguments:
        """Parameters renamed as script names, defaults translated."""

        def renamed(p: py.arg | None) -> py.arg | None:
            return p and _at(py.arg(arg=_script_name(p.arg), annotation=None), p)

        return py.arguments(
            [],
            [renamed(p) for p in a.args],
            renamed(a.vararg),
            [renamed(p) for p in a.kwonlyargs],
            [self.expr(d) if d is not None else None for d in a.kw_defaults],
            renamed(a.kwarg),
            [self.expr(d) for d in a.defaults],
        )

    def e_Lambda(self, n: py.Lambda) -> py.expr:
        args = self.arguments(n.args)
        with self.inside(function=True, klass=False, no_walrus=False):
            body = self.expr(n.body)
        ticked = _at(py.BoolOp(op=py.And(), values=[_step(), body]), n)
        lam = _at(py.Lambda(args=args, body=ticked), n)
        return _at(_call("ad$fn", lam), n)

    def e_Call(self, n: py.Call) -> py.expr:
        args: list[py.expr] = []
        keywords: list[py.keyword] = []
        name = n.func.id if type(n.func) is py.Name else getattr(n.func, "attr", "function")
        # in source order (keywords and *args may interleave)
        for a in sorted(n.args + n.keywords, key=lambda a: (a.lineno, a.col_offset)):  # type: ignore[operator]
            if type(a) is py.Starred:  # *args (bounded), checked where it is written
                v = _at(_call("ad$args", self.expr(a.value), _const(name)), a)
                args.append(_at(py.Starred(value=v, ctx=py.Load()), a))
            elif type(a) is not py.keyword:
                args.append(self.expr(a))
            elif a.arg is None:  # **kwargs (a dict), likewise
                v = _at(_call("ad$kwargs", self.expr(a.value), _const(name)), a)
                keywords.append(_at(py.keyword(arg=None, value=v), a))
            else:
                keywords.append(_at(py.keyword(arg=a.arg, value=self.expr(a.value)), a))
        node = _at(py.Call(func=self.expr(n.func), args=args, keywords=keywords), n)
        return self.watched(node, n)

    def e_Attribute(self, n: py.Attribute) -> py.expr:
        return _at(_call("ad$ga", self.expr(n.value), _const(n.attr)), n)

    def e_Subscript(self, n: py.Subscript) -> py.expr:
        node = py.Subscript(value=self.expr(n.value), slice=self.expr(n.slice), ctx=py.Load())
        return self.watched(_at(node, n), n)

    def comprehension(self, gens: list[py.comprehension]) -> list[py.comprehension]:
        """The loops of a comprehension, each counting a step per item (``ad$next``)."""
        out = []
        for g in gens:
            with self.inside(no_walrus=True):  # no := in a comprehension's iterable
                it = self.expr(g.iter)
            start, end = span_of(g.target), span_of(g.ifs[-1] if g.ifs else g.iter)
            where = Span(start.line, start.column, end.end_line, end.end_column)
            ifs = [_at(_step(), where)] + [self.expr(c) for c in g.ifs]
            out.append(py.comprehension(target=self.target(g.target), iter=it, ifs=ifs, is_async=0))
        return out

    def e_comp(self, n: Any) -> py.expr:
        """List, set, dict comprehensions and generator expressions: Python's own."""
        in_class_body = self.ctx.klass and not self.ctx.function
        # a generator runs later, when a loop's int variable may hold anything
        ints = frozenset() if type(n) is py.GeneratorExp else self.ctx.ints
        with self.inside(no_walrus=self.ctx.no_walrus or in_class_body, ints=ints):
            parts = {f: self.expr(getattr(n, f)) for f in n._fields if f != "generators"}
            node = type(n)(**parts, generators=self.comprehension(n.generators))
            return _at(node, n.generators[0].iter)  # `[i for i in 5]` fails there

    e_ListComp = e_SetComp = e_DictComp = e_GeneratorExp = e_comp

    # ------------------------------------------------------------ targets

    def target(self, t: py.AST) -> py.expr:
        """A store target that Python can store natively (names, tuples, subscripts)."""
        kind = type(t)
        if kind is py.Name:
            return _at(_name(_script_name(t.id), py.Store()), t)
        if kind in (py.Tuple, py.List):
            elts = [self.target(e) for e in t.elts]  # type: ignore[attr-defined]
            return _at(py.Tuple(elts=elts, ctx=py.Store()), t)
        if kind is py.Starred:
            return _at(py.Starred(value=self.target(t.value), ctx=py.Store()), t)  # type: ignore[attr-defined]
        # a subscript: build.py refused other targets, and store() handles attributes
        node = py.Subscript(value=self.expr(t.value), slice=self.expr(t.slice), ctx=py.Store())  # type: ignore[attr-defined]
        return _at(node, t)

    @staticmethod
    def has_attribute(t: py.AST) -> bool:
        if type(t) is py.Attribute:
            return True
        if type(t) in (py.Tuple, py.List):
            return any(Translator.has_attribute(e) for e in t.elts)  # type: ignore[attr-defined]
        if type(t) is py.Starred:
            return Translator.has_attribute(t.value)  # type: ignore[attr-defined]
        return False

    def bound_target(self, t: py.AST, where: Span) -> tuple[py.expr, list[py.stmt]]:
        """A `for` or `with` target Python can store natively, and the statements to
        run after the binding: a target with an attribute binds a temporary, which
        they store through the guard at `where`."""
        if not self.has_attribute(t):
            return self.target(t), []
        tmp = self.temp()
        return _at(_name(tmp, py.Store()), t), self.store(t, _name(tmp), where)

    def store(self, t: py.AST, value: py.expr, span: Span) -> list[py.stmt]:
        """Statements storing `value` into target `t` (attributes through the guard)."""
        if type(t) is py.Attribute:
            call = _call("ad$sa", self.expr(t.value), _const(t.attr), value)
            return [_at(py.Expr(_at(call, t)), span)]
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
            if type(e) is py.Starred:
                store_elts.append(py.Starred(value=_name(tmp, py.Store()), ctx=py.Store()))
            else:
                store_elts.append(_name(tmp, py.Store()))
        out.append(py.Assign(targets=[py.Tuple(elts=store_elts, ctx=py.Store())], value=value))
        _locate(out, span)
        for e, tmp in temps:
            inner = e.value if type(e) is py.Starred else e  # type: ignore[attr-defined]
            out.extend(self.store(inner, _at(_name(tmp), span), span))
        return out

    @staticmethod
    def bound_names(t: py.AST, nested: bool = False) -> list[tuple[str, Span | None]]:
        """The names a target binds; a name inside a tuple reports its own span."""
        kind = type(t)
        if kind is py.Name:
            return [(t.id, span_of(t) if nested else None)]  # type: ignore[attr-defined]
        if kind in (py.Tuple, py.List):
            return [n for e in t.elts for n in Translator.bound_names(e, True)]  # type: ignore[attr-defined]
        if kind is py.Starred:
            return Translator.bound_names(t.value, True)  # type: ignore[attr-defined]
        return []

    # --------------------------------------------------------- statements

    def block(self, body: tuple) -> list[py.stmt]:
        out: list[py.stmt] = []
        for s in body:
            out.extend(self.stmt(s))
        return out or [_at(py.Pass(), span_of(body[0]) if body else Span(1, 1, 1, 2))]

    def stmt(self, s: py.AST) -> list[py.stmt]:
        method = getattr(self, "s_" + type(s).__name__, None)
        out = method(s) if method is not None else [self.same(s)]
        if self.opt.statements:
            header = stmt_span(s, self.src)
            hook = _at(py.Expr(_call("ad$st", _const(self.span_index(header)))), header)
            out = [hook] + out
        return out

    def s_Expr(self, s: py.Expr) -> list[py.stmt]:
        value = self.expr(s.value)
        if self.opt.interactive and not self.ctx.function and not self.ctx.klass:
            value = _at(_call("ad$show", value), s)
        return [_at(py.Expr(value), s)]

    def s_Assign(self, s: py.Assign) -> list[py.stmt]:
        if (
            len(s.targets) == 1
            and type(s.targets[0]) is py.Name
            and isinstance(s.value, _VALUE_NODES)
            and self.opt.values
            and self.opt.assigns
            and self.opt.watch == "one"
        ):
            return self.assign_watched(s)
        value = self.expr(s.value)
        names = [n for t in s.targets for n in self.bound_names(t)]
        if self.opt.watch != "all" and type(s.value) in _NEVER_WATCHED:
            names = [n for n in names if n[1] is not None]  # `x = 0.5`: never a tensor
        if self.ctx.klass and not self.ctx.function:
            self.check_class_names([n for n, _ in names], span_of(s))
        if not any(self.has_attribute(t) for t in s.targets):
            node = py.Assign(targets=[self.target(t) for t in s.targets], value=value)
            return [_at(node, s)] + self.assigned(names, span_of(s))
        if len(s.targets) == 1:
            return self.store(s.targets[0], value, span_of(s)) + self.assigned(names, span_of(s))
        tmp = self.temp()
        out: list[py.stmt] = [_at(_bind(tmp, value), s)]
        for t in s.targets:
            out.extend(self.store(t, _at(_name(tmp), s), span_of(s)))
        return out + self.assigned(names, span_of(s))

    def assign_watched(self, s: py.Assign) -> list[py.stmt]:
        """``name = value``: one type test serves both hooks (value, then assignment)."""
        target = s.targets[0]
        self.unwatched = s.value
        try:
            value = self.expr(s.value)
        finally:
            self.unwatched = None
        ident = _script_name(target.id)  # type: ignore[attr-defined]
        if self.ctx.klass and not self.ctx.function:
            self.check_class_names([target.id], span_of(s))  # type: ignore[attr-defined]
        kv = _const(self.span_index(span_of(s.value)))
        ka = _const(self.span_index(span_of(s)))
        hooks = py.If(
            test=self.of_watched_type(_name(ident)),
            body=[
                py.Expr(_call("ad$v", _name(ident), kv)),
                py.Expr(_call("ad$a", _const(target.id), _name(ident), ka)),  # type: ignore[attr-defined]
            ],
            orelse=[],
        )
        store = py.Assign(targets=[self.target(target)], value=value)
        return [_at(store, s), _at(hooks, s)]

    def s_AnnAssign(self, s: Any) -> list[py.stmt]:
        if s.value is None:
            return [_at(py.Pass(), s)]
        return self.s_Assign(_at(py.Assign(targets=[s.target], value=s.value), s))

    def s_AugAssign(self, s: py.AugAssign) -> list[py.stmt]:
        t = s.target
        value = self.expr(s.value)
        names = self.bound_names(t)
        op = TEXT[type(s.op)]
        guarded = op in _GUARDED and not self.small(py.BinOp(left=t, op=s.op, right=s.value))
        func = f"ad${op}=" if guarded else f"ad$i{op}"
        if type(t) is py.Name:
            if not guarded:
                node = py.AugAssign(target=self.target(t), op=s.op, value=value)
                seen = []
                if self.opt.values:  # the in-place result, as the hook would see it
                    seen = [_at(py.Expr(self.watched(self.e_Name(t), s)), s)]  # type: ignore[arg-type]
                return [_at(node, s)] + seen + self.assigned(names, span_of(s))
            result = self.watched(_at(_call(func, self.expr(t), value), s), s)
            return [_at(py.Assign(targets=[self.target(t)], value=result), s)] + self.assigned(
                names, span_of(s)
            )
        obj = self.temp()
        out: list[py.stmt] = [
            _at(_bind(obj, self.expr(t.value)), s)  # type: ignore[attr-defined]
        ]
        if type(t) is py.Attribute:
            current = _at(_call("ad$ga", _name(obj), _const(t.attr)), t)
            result = self.watched(_at(_call(func, current, value), s), s)
            out.append(_at(py.Expr(_at(_call("ad$sa", _name(obj), _const(t.attr), result), t)), s))
        else:  # a subscript (build.py refused other targets)
            key = self.temp()
            out.append(_at(_bind(key, self.expr(t.slice)), s))
            current = _at(py.Subscript(value=_name(obj), slice=_name(key), ctx=py.Load()), t)
            result = self.watched(_at(_call(func, current, value), s), s)
            store = py.Subscript(value=_name(obj), slice=_name(key), ctx=py.Store())
            out.append(_at(py.Assign(targets=[_at(store, t)], value=result), s))
        return out

    def s_Global(self, s: py.Global | py.Nonlocal) -> list[py.stmt]:
        return [_at(type(s)(names=[_script_name(n) for n in s.names]), s)]

    s_Nonlocal = s_Global

    def s_Delete(self, s: py.Delete) -> list[py.stmt]:
        out: list[py.stmt] = []
        for t in s.targets:
            if type(t) is py.Attribute:
                call = _at(_call("ad$da", self.expr(t.value), _const(t.attr)), t)
                out.append(_at(py.Expr(call), s))
            elif type(t) is py.Name:
                target = _at(_name(_script_name(t.id), py.Del()), s)
                out.append(_at(py.Delete(targets=[target]), s))
            elif type(t) is py.Subscript:
                node = py.Subscript(
                    value=self.expr(t.value), slice=self.expr(t.slice), ctx=py.Del()
                )
                out.append(_at(py.Delete(targets=[_at(node, t)]), s))
            elif type(t) is py.Tuple:
                out.extend(self.s_Delete(_at(py.Delete(targets=t.elts), s)))
            else:
                raise self.error(f"cannot delete {type(t).__name__}", span_of(t))
        return out

    def s_Assert(self, s: py.Assert) -> list[py.stmt]:
        # `if not test: raise AssertionError(msg)`: the error is at the statement
        exc: py.expr = _name("ad$AE")
        if s.msg is not None:
            exc = py.Call(func=exc, args=[self.expr(s.msg)], keywords=[])
        fail = _at(py.Raise(exc=exc, cause=None), s)
        test = _at(py.UnaryOp(op=py.Not(), operand=self.expr(s.test)), s.test)
        return [_at(py.If(test=test, body=[fail], orelse=[]), s)]

    def s_Import(self, s: py.Import) -> list[py.stmt]:
        out: list[py.stmt] = []
        names = []
        for a in s.names:
            bound = a.asname or a.name.split(".")[0]
            call = _call("ad$import", _const(a.name), _const(a.asname is None))
            out.append(_at(_bind(_script_name(bound), call), s))
            names.append(bound)
        return out + self.assigned(names, span_of(s))

    def s_ImportFrom(self, s: py.ImportFrom) -> list[py.stmt]:
        if s.module == "__future__":
            # Python 2 compatibility lines in old tutorials: accepted, no effect
            for a in s.names:
                if a.name not in _FUTURE_FEATURES and a.name != "*":
                    raise self.error(f"future feature {a.name} is not defined", span_of(a))
            return [_at(py.Pass(), s)]
        mod = self.temp()
        out: list[py.stmt] = [_bind(mod, _call("ad$import", _const(s.module), _const(False)))]
        if s.names[0].name == "*":  # at module level: see build.validate
            out.append(py.Expr(_call("ad$star", _name(mod), _const(s.module))))
            return _locate(out, s)  # type: ignore[return-value]
        names = []
        for a in s.names:
            bound = a.asname or a.name
            call = _call("ad$from", _name(mod), _const(s.module), _const(a.name))
            out.append(_bind(_script_name(bound), call))
            names.append(bound)
        return _locate(out, s) + self.assigned(names, span_of(s))  # type: ignore[operator]

    def s_If(self, s: py.If) -> list[py.stmt]:
        clauses = [(s.test, s.body)]  # the `if` and its `elif`s (see build.is_elif)
        last = s
        while last.orelse and is_elif(last.orelse[0]):
            last = last.orelse[0]  # type: ignore[assignment]
            clauses.append((last.test, last.body))
        orelse = self.block(last.orelse) if last.orelse else []
        for test, body in reversed(clauses):
            orelse = [_at(py.If(test=self.test(test), body=self.block(body), orelse=orelse), test)]
        return [_at(orelse[0], stmt_span(s, self.src))]

    def loop_body(self, body: tuple, header: Span) -> list[py.stmt]:
        return _locate([py.Expr(_step())], header) + self.block(body)  # type: ignore[operator]

    def s_While(self, s: py.While) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        node = py.While(
            test=self.test(s.test),
            body=self.loop_body(s.body, header),
            orelse=self.block(s.orelse) if s.orelse else [],
        )
        return [_at(node, s.test)]  # a test that fails (a tensor's truth) is its own

    def s_For(self, s: py.For) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        names = self.bound_names(s.target)
        known = self.int_loop(s)
        if known is None:
            body = self.loop_body(s.body, header)
        else:  # an int is never watched: no hook after binding it, none on `i % 7`
            names = [n for n in names if n[0] != known]
            with self.inside(ints=self.ctx.ints | {known}):
                body = self.loop_body(s.body, header)
        target, pre = self.bound_target(s.target, span_of(s.target))
        body = body[:1] + pre + self.assigned(names, span_of(s.target)) + body[1:]
        node = py.For(
            target=target,
            iter=self.expr(s.iter),
            body=body,
            orelse=self.block(s.orelse) if s.orelse else [],
            type_comment=None,
        )
        return [_at(node, s.iter)]  # `for x in 5` fails at the iterable

    def s_Try(self, s: py.Try) -> list[py.stmt]:
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
                    body += self.assigned([h.name], span_of(h))
                    body.append(
                        py.Try(body=self.block(h.body), handlers=[], orelse=[], finalbody=clear)
                    )
                    _locate(body, h)
                kind = self.expr(h.type) if h.type is not None else _const(None)
                test = _at(
                    _call("ad$match", _name(exc), kind), span_of(h.type) if h.type else span_of(h)
                )
                chain = [_at(py.If(test=test, body=body, orelse=chain), h)]
            handlers.append(
                _at(py.ExceptHandler(type=_name("ad$BE"), name=exc, body=chain), s.handlers[0])
            )
        final = self.block(s.finalbody) if s.finalbody else []
        if final:
            final = [_at(py.If(test=_call("ad$fin"), body=final, orelse=[]), s.finalbody[0])]
        node = py.Try(
            body=self.block(s.body),
            handlers=handlers,
            orelse=self.block(s.orelse) if s.orelse else [],
            finalbody=final,
        )
        return [_at(node, header)]

    def s_With(self, s: py.With) -> list[py.stmt]:
        items = []
        pre: list[py.stmt] = []
        names = []
        for item in s.items:
            context, stored = item.context_expr, item.optional_vars
            ctx = _at(_call("ad$cm", self.expr(context)), context)
            target = None
            if stored is not None:
                names.extend(self.bound_names(stored))
                start, end = span_of(context), span_of(stored)  # the item's span
                where = Span(start.line, start.column, end.end_line, end.end_column)
                target, stores = self.bound_target(stored, where)
                pre.extend(stores)
            items.append(py.withitem(context_expr=ctx, optional_vars=target))
        body = pre + self.assigned(names, span_of(s)) + self.block(s.body)
        return [_at(py.With(items=items, body=body), stmt_span(s, self.src))]

    def s_FunctionDef(self, s: py.FunctionDef) -> list[py.stmt]:
        header = stmt_span(s, self.src)
        in_class = self.ctx.klass and not self.ctx.function
        if in_class and s.name.startswith("__") and s.name.endswith("__"):
            if s.name not in DEFINABLE_DUNDERS:
                raise self.error(
                    f"defining '{s.name}' is not available in adcli scripts",
                    span_of(s),
                    "SandboxError",
                )
            name = s.name
        else:
            name = _script_name(s.name)
        decorators = [self.expr(d) for d in s.decorator_list]
        args = self.arguments(s.args)
        with self.inside(function=True, klass=False, no_walrus=False):
            body = self.block(s.body)
        prologue: list[py.stmt] = [py.Expr(_step())]
        # (a generator's frame is resumed, not nested)
        if not _contains_yield(s.body) and _makes_calls(s.body):
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
        return [_at(node, s)] + (self.assigned([s.name], span_of(s)) if hooked else [])

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
        node = py.ClassDef(
            name=_script_name(s.name),
            bases=[checked],
            keywords=[],
            body=body,
            decorator_list=[self.expr(d) for d in s.decorator_list]
            + [_at(_name("ad$class"), header)],
        )
        return [_at(node, s)] + self.assigned([s.name], header)

    # ------------------------------------------------------------- module

    def module(self, m: py.Module) -> py.Module:
        body = []
        for s in m.body:
            body.extend(self.stmt(s))
        return py.Module(body=body, type_ignores=[])


def translate(module: py.Module, options: Options) -> py.Module:
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
