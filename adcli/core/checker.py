"""Gradients checked against finite differences.

`adcli check FILE` runs a script and checks every gradient its `backward()` and
`autograd.grad()` calls compute. (The builtins `torch.autograd.gradcheck` and
`gradgradcheck` are adcli.autograd.gradcheck.)

How `adcli check` gets its numbers (the method is in its help text too):
while the script runs, every graph node also keeps what it takes to run its
forward again (the operation's parameters and the values of its inputs that do
not come from another node: constants and leaves, copied when the node is
made). After each backward/grad call, the graph behind the call's roots is
re-evaluated in float64, once as it was and then twice per element of each
differentiated tensor (the leaves a backward() reached, or grad()'s inputs),
with that element moved by +eps and -eps. The scalar differentiated is
sum(root * gradient given to the root), so a vector-Jacobian product is checked
as it was asked. The central difference is compared with what the engine
computed; a value that left the graph (`detach()`, `.item()`, a comparison)
stays fixed, as it does for the analytic gradient, and a training loop is
checked at each step's own parameter values. Where the one-sided differences
disagree with each other (relu at 0, abs at 0, clamp at a bound, a tie in max)
a mismatch is a "kink", not a failure. For a `create_graph=True` call, second
derivatives are checked too: the gradient graph the engine built is
differentiated once more and compared with central differences of the
first-order gradient, recomputed (forward and backward, in float64) at each
perturbed point.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from adcli.autograd import custom, dtypes, engine, grad_mode, ops
from adcli.autograd.gradcheck import muted
from adcli.autograd.node import AccumulateGrad, Function, Node
from adcli.autograd.tensor import Tensor

__all__ = [
    "CheckOptions",
    "check_path",
    "check_text",
]


# ====================================================================== replay

_REC = "_adcli_replay"  # key in a Function node's __dict__ while `adcli check` runs


class _Rec:
    """What re-running one node's forward needs."""

    __slots__ = ("args", "params")

    def __init__(self, args: tuple[np.ndarray | None, ...], params: dict[str, Any]) -> None:
        self.args = args  # constants' and leaves' values as float64 (None: from a node)
        self.params = params  # keyword parameters, float dtypes widened to float64


def _wide(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return a.astype(np.float64)  # always a copy
    return np.array(a, copy=True)


def _wide_param(v: Any) -> Any:
    if isinstance(v, np.dtype) and v.kind == "f":
        return np.dtype(np.float64)
    if isinstance(v, dtypes.DType) and v.is_floating_point:
        return dtypes.float64
    if isinstance(v, type) and issubclass(v, np.floating):
        return np.float64
    return v


@contextmanager
def recording() -> Iterator[None]:
    """While active, every node `Function.apply` records keeps a `_Rec`."""
    original = Function.__dict__["apply"]
    apply = original.__func__

    def recording_apply(cls: type[Function], *inputs: Any, **params: Any) -> Any:
        out = apply(cls, *inputs, **params)
        first = out[0] if type(out) is tuple else out
        node = first.grad_fn if isinstance(first, Tensor) else None
        if node is not None and type(node) is cls and _REC not in node.__dict__:
            args = []
            for t, (nxt, _) in zip(inputs, node.next_functions, strict=True):
                if t is None or (nxt is not None and not isinstance(nxt, AccumulateGrad)):
                    args.append(None)
                else:  # a tensor, or a Python number the op takes as a constant operand
                    args.append(_wide(t.data_ if isinstance(t, Tensor) else np.asarray(t)))
            node.__dict__[_REC] = _Rec(tuple(args), {k: _wide_param(v) for k, v in params.items()})
        return out

    custom_original = custom.Function.__dict__["apply"]
    custom_apply = custom_original.__func__

    def recording_custom_apply(cls: type[custom.Function], *args: Any, **kwargs: Any) -> Any:
        out = custom_apply(cls, *args, **kwargs)
        outs = out if type(out) is tuple else (out,)
        node = next(
            (o._grad_fn for o in outs if isinstance(o, Tensor) and o._grad_fn is not None), None
        )
        if isinstance(node, custom.BackwardCFunction) and _REC not in node.__dict__:
            inputs, _ = custom.bind_inputs(cls, args, kwargs)
            edge_args: list[np.ndarray | None] = []
            template = []
            edges = iter(node.next_functions)
            for a in inputs:
                if isinstance(a, Tensor):
                    nxt = next(edges)[0]
                    from_node = nxt is not None and not isinstance(nxt, AccumulateGrad)
                    edge_args.append(None if from_node else _wide(a.data_))
                    template.append(_TENSOR)
                else:
                    template.append(a)
            node.__dict__[_REC] = _Rec(tuple(edge_args), {_CUSTOM: (cls, tuple(template))})
        return out

    Function.apply = classmethod(recording_apply)  # type: ignore[method-assign,assignment]
    custom.Function.apply = classmethod(recording_custom_apply)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Function.apply = original  # type: ignore[method-assign]
        custom.Function.apply = custom_original  # type: ignore[method-assign]


# A custom autograd.Function's node keeps its class and its forward's arguments (tensor
# positions marked) under this key of its _Rec params, and runs again through `apply`.
_CUSTOM = "\0custom"
_TENSOR = object()


def _custom_call(rec: _Rec, tensors: list[Tensor]) -> tuple[Any, ...]:
    """Run a custom Function again (its `apply`) on new values of its tensor inputs."""
    cls, template = rec.params[_CUSTOM]
    it = iter(tensors)
    out = cls.apply(*[next(it) if a is _TENSOR else a for a in template])
    return out if type(out) is tuple else (out,)


class Unreplayable(Exception):
    """The graph cannot be evaluated again (the reason is the message)."""


Edge = tuple[Node, int]


class Replay:
    """The graph behind some roots, evaluated again in float64 with one tensor moved."""

    def __init__(self, roots: Sequence[Tensor], root_grads: Sequence[Tensor]) -> None:
        self.root_edges: list[Edge] = [engine._edge_of(r) for r in roots]
        self.root_grads = [np.asarray(g.data_, np.float64) for g in root_grads]
        self.leaf_roots = {
            id(edge[0]): _wide(r.data_)
            for r, edge in zip(roots, self.root_edges, strict=True)
            if isinstance(edge[0], AccumulateGrad)
        }
        seen: set[Node] = set()
        stack = [n for n, _ in self.root_edges]
        funcs: list[Node] = []
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if not isinstance(node, AccumulateGrad):
                if getattr(node, "__dict__", {}).get(_REC) is None:
                    raise Unreplayable(f"{node.name()} was made before checking started")
                funcs.append(node)
            for nxt, _ in node.next_functions:
                if nxt is not None and nxt not in seen:
                    stack.append(nxt)
            inner = _inner_node(node)
            if inner is not None and _REC not in inner.__dict__:
                raise Unreplayable(f"{inner.name()} was not recorded")
        funcs.sort(key=lambda n: n.seq)
        self.order = funcs
        self.nodes = seen
        self.consumers: dict[Node, list[Node]] = {}
        for node in funcs:
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    users = self.consumers.setdefault(nxt, [])
                    if not users or users[-1] is not node:
                        users.append(node)
        self.base: dict[Node, tuple[np.ndarray, ...]] = {}
        for node in funcs:
            self.base[node] = self._forward(node, self.base, None, None)
        self._dirty: dict[Node, list[Node]] = {}

    def first_use(self, node: Node) -> int:
        """Creation number of the first node that uses `node` (leaves sort by it)."""
        users = self.consumers.get(node)
        return users[0].seq if users else 1 << 62

    # ------------------------------------------------------------ evaluating
    def _read(
        self,
        node: Node,
        pos: int,
        rec: _Rec,
        vals: dict[Node, tuple[np.ndarray, ...]],
        target: Edge | None,
        delta: np.ndarray | None,
    ) -> np.ndarray | None:
        nxt, nr = node.next_functions[pos]
        if nxt is None:
            return rec.args[pos]
        if isinstance(nxt, AccumulateGrad):
            v = rec.args[pos]
            nr = 0
        else:
            got = vals.get(nxt)
            if got is None:
                raise Unreplayable(f"{node.name()} uses a value outside the graph")
            v = got[nr]
        if target is not None and nxt is target[0] and nr == target[1]:
            v = v + delta
        return v

    def _forward(
        self,
        node: Node,
        vals: dict[Node, tuple[np.ndarray, ...]],
        target: Edge | None,
        delta: np.ndarray | None,
    ) -> tuple[np.ndarray, ...]:
        rec: _Rec = node.__dict__[_REC]
        args = [
            self._read(node, i, rec, vals, target, delta) for i in range(len(node.next_functions))
        ]
        inner = _inner_node(node)
        if inner is not None:  # CopySlicesOp: an in-place op on a view, run on the slice
            base = args[0]
            index = rec.params["index"]
            irec: _Rec = inner.__dict__[_REC]
            iargs = [
                self._read(inner, i, irec, vals, target, delta)
                for i in range(len(inner.next_functions))
            ]
            iargs[0] = np.array(base[index], copy=True)
            value = _call_forward(inner, irec, iargs)[0]
            out = np.array(base, copy=True)
            out[index] = value
            return (out,)
        return _call_forward(node, rec, args)

    def dirty(self, target: Edge) -> list[Node]:
        """The nodes whose value depends on `target`, in creation order."""
        key = target[0]
        got = self._dirty.get(key)
        if got is not None:
            return got
        seen: set[Node] = set()
        stack = list(self.consumers.get(key, ()))
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(self.consumers.get(node, ()))
        got = sorted(seen, key=lambda n: n.seq)
        self._dirty[key] = got
        return got

    def value(self, target: Edge | None = None, delta: np.ndarray | None = None) -> float:
        """sum(root * gradient given to the root), with `target` moved by `delta`."""
        vals = self.base
        if target is not None:
            vals = dict(self.base)
            for node in self.dirty(target):
                vals[node] = self._forward(node, vals, target, delta)
        total = 0.0
        for (node, nr), g in zip(self.root_edges, self.root_grads, strict=True):
            if isinstance(node, AccumulateGrad):
                v = self.leaf_roots[id(node)]
                nr = 0
            else:
                v = vals[node][nr]
            if target is not None and node is target[0] and nr == target[1]:
                v = v + delta
            with np.errstate(all="ignore"):
                total += float(np.sum(v * g))
        return total

    def root_values(self) -> list[np.ndarray]:
        out = []
        for node, nr in self.root_edges:
            if isinstance(node, AccumulateGrad):
                out.append(self.leaf_roots[id(node)])
            else:
                out.append(self.base[node][nr])
        return out

    # ------------------------------------------------------------ rebuilding
    def gradients_at(
        self,
        targets: list[Edge],
        shapes: list[tuple[int, ...]],
        moved: int | None,
        delta: np.ndarray | None,
    ) -> list[np.ndarray]:
        """First-order gradients of value() w.r.t. each target, recomputed (a new graph
        in float64, then the engine's backward) with targets[moved] moved by delta."""
        deltas = []
        for i, shape in enumerate(shapes):
            d = delta if i == moved and delta is not None else np.zeros(shape, np.float64)
            deltas.append(Tensor._make(np.array(d, np.float64), True))
        index = {(id(n), nr): i for i, (n, nr) in enumerate(targets)}

        def shifted(t: Tensor, edge_key: tuple[int, int]) -> Tensor:
            i = index.get(edge_key)
            return t if i is None else ops.add(t, deltas[i])

        prev = grad_mode.state.enabled
        grad_mode.state.enabled = True
        try:
            with muted(), np.errstate(all="ignore"):
                tens: dict[Node, tuple[Tensor, ...]] = {}
                for node in self.order:
                    if _inner_node(node) is not None:
                        raise Unreplayable("an in-place operation on a view")
                    rec: _Rec = node.__dict__[_REC]
                    args: list[Tensor | None] = []
                    for pos, (nxt, nr) in enumerate(node.next_functions):
                        snap = rec.args[pos]
                        if nxt is None:
                            args.append(None if snap is None else Tensor._make(snap))
                        elif isinstance(nxt, AccumulateGrad):
                            args.append(shifted(Tensor._make(snap), (id(nxt), 0)))
                        else:
                            args.append(shifted(tens[nxt][nr], (id(nxt), nr)))
                    if _CUSTOM in rec.params:  # copies: its forward may change them in place
                        tens[node] = _custom_call(rec, [ops.clone(a) for a in args])
                        continue
                    out = type(node).apply(*args, **rec.params)
                    tens[node] = tuple(out) if type(node).multi_output else (out,)
                roots: list[Tensor] = []
                grads: list[Tensor] = []
                for (node, nr), g in zip(self.root_edges, self.root_grads, strict=True):
                    if isinstance(node, AccumulateGrad):
                        r = shifted(Tensor._make(self.leaf_roots[id(node)]), (id(node), 0))
                    else:
                        r = shifted(tens[node][nr], (id(node), nr))
                    if r._requires_grad:
                        roots.append(r)
                        grads.append(Tensor._make(g))
                if not roots:
                    return [np.zeros(s, np.float64) for s in shapes]
                gs = engine.grad(roots, deltas, grads, allow_unused=True)
        finally:
            grad_mode.state.enabled = prev
        return [
            np.zeros(s, np.float64) if g is None else np.asarray(g.data_, np.float64)
            for g, s in zip(gs, shapes, strict=True)
        ]


def _inner_node(node: Node) -> Node | None:
    if type(node).__name__ == "CopySlicesOp":
        return node.__dict__[_REC].params.get("node") if _REC in node.__dict__ else None
    return None


def _call_forward(node: Node, rec: _Rec, args: list[np.ndarray | None]) -> tuple[np.ndarray, ...]:
    if _CUSTOM in rec.params:
        prev = grad_mode.state.enabled
        grad_mode.state.enabled = False
        try:
            with np.errstate(all="ignore"):
                outs = _custom_call(rec, [Tensor._make(np.array(a, copy=True)) for a in args])
        except Exception as exc:
            raise Unreplayable(f"{node.name()} could not run again: {exc}") from exc
        finally:
            grad_mode.state.enabled = prev
        return tuple(_as_f64(o) if isinstance(o, Tensor) else None for o in outs)
    cls = type(node)
    ctx = cls.__new__(cls)
    ctx.saved = ()
    ctx.needs_input_grad = getattr(node, "needs_input_grad", (True,) * len(args))
    tensors = [None if a is None else Tensor._make(a) for a in args]
    prev = grad_mode.state.enabled
    grad_mode.state.enabled = False
    try:
        with np.errstate(all="ignore"):
            out = cls.forward(ctx, *tensors, **rec.params)
    except Exception as exc:
        raise Unreplayable(f"{node.name()} could not run again: {exc}") from exc
    finally:
        grad_mode.state.enabled = prev
    if cls.multi_output:
        return tuple(_as_f64(o) for o in out)
    return (_as_f64(out),)


def _as_f64(a: Any) -> np.ndarray:
    a = np.asarray(a.data_ if isinstance(a, Tensor) else a)
    return a.astype(np.float64) if a.dtype.kind == "f" and a.dtype != np.float64 else a


# ====================================================================== checking


@dataclass
class Stat:
    """How one differentiated tensor (or one second-derivative block) compared."""

    names: tuple[str, ...]  # (tensor,) or, for a second-derivative block, (u, v)
    shape: tuple[int, ...]
    checked: int = 0  # elements compared (over all merged calls)
    per_call: int = 0  # elements compared in one call
    total: int = 0  # elements it has
    fails: int = 0
    kinks: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    hook: bool = False  # a hook changed the gradient that flowed into it
    calls: int = 1

    def merge(self, other: Stat) -> None:
        self.checked += other.checked
        self.per_call = max(self.per_call, other.per_call)
        self.total = max(self.total, other.total)
        self.fails += other.fails
        self.kinks += other.kinks
        self.max_abs = _nanmax(self.max_abs, other.max_abs)
        self.max_rel = _nanmax(self.max_rel, other.max_rel)
        self.hook = self.hook or other.hook
        self.calls += other.calls


def _nanmax(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


@dataclass
class CallCheck:
    """The checks of one backward()/grad() call (or of a run of them from one line)."""

    kind: str
    line: int | None
    call_text: str | None
    first: list[Stat] = field(default_factory=list)
    second: list[Stat] = field(default_factory=list)
    skipped: str | None = None  # why the call could not be checked
    second_skipped: str | None = None
    notes: list[str] = field(default_factory=list)
    calls: int = 1

    def key(self) -> tuple[Any, ...]:
        """Calls with equal keys share a table (a loop making `w`, `w@2`, ... merges too)."""
        return (
            self.kind,
            self.line,
            self.call_text,
            tuple((_base_names(s.names), s.shape) for s in self.first),
            tuple((_base_names(s.names), s.shape) for s in self.second),
            self.skipped,
            self.second_skipped,
        )

    def merge(self, other: CallCheck) -> None:
        for s in self.first + self.second:
            s.names = _base_names(s.names)
        for a, b in zip(self.first, other.first, strict=True):
            a.merge(b)
        for a, b in zip(self.second, other.second, strict=True):
            a.merge(b)
        for n in other.notes:
            if n not in self.notes:
                self.notes.append(n)
        self.calls += other.calls


def _base_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """`w@3` -> `w`: the variable, whichever binding of it."""
    return tuple(re.sub(r"@\d+$", "", n) for n in names)


@dataclass
class CheckOptions:
    """How `adcli check` compares."""

    eps: float = 1e-6
    rtol: float = 1e-3
    atol: float = 1e-5
    max_elements: int = 1000
    full: bool = False  # one table per call, even in loops
    width: int | None = None
    color: bool | None = None
    debug: bool = False
    display_name: str | None = None
    call: int | None = None  # check only the backward()/grad() call at this script line
    # `check_path` runs the script in a child process with the budgets of `adcli run`
    # (wall-clock seconds, bytes of memory; 0 or None: no limit), or here with `in_process`
    timeout: float | None = 60.0
    max_memory: int | None = 4 * 1024**3
    in_process: bool = False


def _compare(
    analytic: np.ndarray,
    f0: np.ndarray,
    fp: np.ndarray,
    fm: np.ndarray,
    opts: CheckOptions,
    stat: Stat,
) -> None:
    """Fold the comparison of analytic values with central differences into `stat`."""
    eps, rtol, atol = opts.eps, opts.rtol, opts.atol
    a = np.asarray(analytic, np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        c = (fp - fm) / (2 * eps)
        r = (fp - f0) / eps
        left = (f0 - fm) / eps
        err = np.abs(a - c)
        ok = err <= atol + rtol * np.abs(c)
        ok |= (a == c) | (np.isnan(a) & np.isnan(c))
        finite_f = np.isfinite(f0) & np.isfinite(fp) & np.isfinite(fm)
        sided = ~(np.abs(r - left) <= atol + rtol * np.maximum(np.abs(r), np.abs(left)))
        near_r = np.abs(a - r) <= atol + rtol * np.abs(r)
        near_l = np.abs(a - left) <= atol + rtol * np.abs(left)
        tol = atol + rtol * np.abs(c)
        between = (a >= np.minimum(r, left) - tol) & (a <= np.maximum(r, left) + tol)
        kink = ~ok & ((sided & (near_r | near_l | between)) | ~finite_f)
        fail = ~ok & ~kink
        counted = ~kink
        # relative to the larger value, and to no less than atol/rtol (near zero a
        # relative error says nothing)
        floor = atol / rtol if rtol > 0 else atol
        scale = np.maximum(np.maximum(np.abs(a), np.abs(c)), floor)
        rel = np.where(err == 0, 0.0, err / np.where(scale == 0, 1.0, scale))
    stat.checked += int(a.size)
    stat.per_call += int(a.size)
    stat.fails += int(fail.sum())
    stat.kinks += int(kink.sum())
    if counted.any():
        e, q = err[counted], rel[counted]
        stat.max_abs = _nanmax(stat.max_abs, float(np.nan if np.isnan(e).any() else e.max()))
        stat.max_rel = _nanmax(stat.max_rel, float(np.nan if np.isnan(q).any() else q.max()))


def _picked(n: int, limit: int) -> np.ndarray:
    """Which elements of an n-element tensor are checked (all, or evenly spread)."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def _label_name(obj: Any) -> str | None:
    from adcli.provenance import label_of

    lab = label_of(obj)
    if lab is None:
        return None
    return lab.name or lab.expr


class _Target:
    """One tensor the call differentiated: its edge, name, analytic gradient."""

    def __init__(
        self,
        edge: Edge,
        tensor: Tensor | None,
        name: str,
        grad: Tensor | None,
        shape: tuple[int, ...],
        hook: bool,
    ) -> None:
        self.edge = edge
        self.tensor = tensor
        self.name = name
        self.grad = grad
        self.shape = shape
        self.hook = hook


def _targets(event: engine.BackwardEvent) -> list[_Target]:
    entries = {id(e.node): e for e in event.entries}
    out: list[_Target] = []
    leaf_n = 0

    def name_for(tensor: Tensor | None, node: Node) -> str:
        nonlocal leaf_n
        name = _label_name(tensor) if tensor is not None else None
        if name is None:
            name = _label_name(node)
        if name is None:
            if isinstance(node, AccumulateGrad):
                leaf_n += 1
                name = f"leaf#{leaf_n}"
            else:
                name = node.name()
        return name

    if event.kind == "grad" or event.inputs is not None:
        results = event.results if event.kind == "grad" else None
        for i, t in enumerate(event.inputs or []):
            node, nr = engine._edge_of(t)
            e = entries.get(id(node))
            if results is not None:
                g = results[i]
            else:
                g = e.grads[nr] if e is not None and nr < len(e.grads) else None
            hook = bool(e is not None and e.hook_changed)
            out.append(_Target((node, nr), t, name_for(t, node), g, tuple(t.data_.shape), hook))
        return out
    for e in event.entries:
        node = e.node
        if not isinstance(node, AccumulateGrad):
            continue
        var = node.variable  # None when the script no longer holds the leaf
        g = e.grads[0] if e.grads else None
        if var is None and g is None:
            continue
        shape = tuple((var if var is not None else g).data_.shape)
        out.append(_Target((node, 0), var, name_for(var, node), g, shape, e.hook_changed))
    return out


class Checker:
    """Checks each event of a running script; collects CallChecks."""

    def __init__(self, opts: CheckOptions, progress: Any = None) -> None:
        self.opts = opts
        self.progress = progress  # adcli.render.progress.Progress, or None
        self.checks: list[CallCheck] = []
        self._by_key: dict[tuple[Any, ...], CallCheck] = {}

    def on_event(self, event: engine.BackwardEvent, span: Any, call_text: str | None) -> None:
        line = span.line if span is not None else None
        if self.opts.call is not None and line != self.opts.call:
            return  # --call LINE: only that line's call is checked
        cc = CallCheck(event.kind, line, call_text)
        if self.progress is not None:
            where = f" at line {line}" if line is not None else ""
            self.progress.update(f"checking {call_text or event.kind + '()'}{where}")
        try:
            self._check(event, cc)
        except Unreplayable as exc:
            cc.skipped = str(exc)
            cc.first = []
            cc.second = []
        except Exception as exc:  # an adcli bug: report it, go on with the script
            if self.opts.debug:
                raise
            cc.skipped = f"internal error: {type(exc).__name__}: {exc}"
            cc.first = []
            cc.second = []
        if self.progress is not None:
            self.progress.update("running the script")
        self._add(cc)

    def _add(self, cc: CallCheck) -> None:
        """Calls from one line with the same tensors (a loop) share one table."""
        if not self.opts.full:
            key = cc.key()
            first = self._by_key.get(key)
            if first is not None:
                first.merge(cc)
                return
            self._by_key[key] = cc
        self.checks.append(cc)

    def _check(self, event: engine.BackwardEvent, cc: CallCheck) -> None:
        opts = self.opts
        targets = _targets(event)
        hooked = [e for e in event.entries if e.hook_changed]
        for e in hooked:
            node = e.node
            if isinstance(node, AccumulateGrad):
                var = node.variable
                name = (_label_name(var) if var is not None else None) or _label_name(node)
                what = f"a hook on {name or 'a leaf'} changed its gradient"
            else:
                tensor = node.output_tensor(0)
                name = (_label_name(tensor) if tensor is not None else None) or _label_name(node)
                what = f"a hook on {name or node.name()} changed the gradient that flowed into it"
            cc.notes.append(f"{what}: the result is no longer the derivative")
        if not targets:
            return
        replay = Replay(event.roots, event.root_grads)
        for got, root in zip(replay.root_values(), event.roots, strict=True):
            want = np.asarray(root.data_, np.float64)
            tol = 1e-9 if root.data_.dtype == np.float64 else 1e-4
            with np.errstate(all="ignore"):
                same = np.allclose(
                    got,
                    want,
                    rtol=tol,
                    atol=tol
                    * max(
                        1.0,
                        float(np.nanmax(np.abs(want)))
                        if want.size and np.isfinite(want).any()
                        else 1.0,
                    ),
                    equal_nan=True,
                )
            if got.shape != want.shape or not same:
                raise Unreplayable("evaluating the graph again gave different values")
        if event.kind == "backward" and event.inputs is None:
            targets.sort(key=lambda t: replay.first_use(t.edge[0]))
        f0 = replay.value()
        if self.progress is not None:  # one unit per element moved (twice each)
            sizes = [int(np.prod(t.shape, dtype=np.int64)) for t in targets]
            total = sum(min(n, opts.max_elements) for n in sizes)
            self.progress.update(self.progress.description, total)
        for t in targets:
            stat = Stat(
                (t.name,), t.shape, total=int(np.prod(t.shape, dtype=np.int64)), hook=t.hook
            )
            cc.first.append(stat)
            if t.edge[0] not in replay.nodes:
                # not reached from the roots: d root / d t is zero
                analytic = np.zeros(t.shape) if t.grad is None else t.grad.data_
                zeros = np.zeros(stat.total)
                idx = _picked(stat.total, opts.max_elements)
                _compare(
                    np.asarray(analytic).reshape(-1)[idx],
                    zeros[idx] + f0,
                    zeros[idx] + f0,
                    zeros[idx] + f0,
                    opts,
                    stat,
                )
                continue
            analytic = (
                np.zeros(t.shape, np.float64)
                if t.grad is None
                else np.asarray(t.grad.data_, np.float64)
            )
            if analytic.shape != t.shape:
                analytic = np.broadcast_to(analytic, t.shape)
            idx = _picked(stat.total, opts.max_elements)
            fp = np.empty(idx.size)
            fm = np.empty(idx.size)
            delta = np.zeros(t.shape, np.float64)
            flat = delta.reshape(-1)
            for n, k in enumerate(idx):
                flat[k] = opts.eps
                fp[n] = replay.value(t.edge, delta)
                flat[k] = -opts.eps
                fm[n] = replay.value(t.edge, delta)
                flat[k] = 0.0
                if self.progress is not None:
                    self.progress.advance()
            _compare(analytic.reshape(-1)[idx], np.full(idx.size, f0), fp, fm, opts, stat)
        if event.create_graph:
            try:
                self._second_order(replay, targets, cc)
            except Unreplayable as exc:
                cc.second = []
                cc.second_skipped = str(exc)

    def _second_order(self, replay: Replay, targets: list[_Target], cc: CallCheck) -> None:
        opts = self.opts
        usable = [t for t in targets if t.tensor is not None and t.tensor._requires_grad]
        if not usable:
            return
        for t in usable:
            n = int(np.prod(t.shape, dtype=np.int64))
            if n > opts.max_elements:
                cc.second_skipped = (
                    f"{t.name} has {n} elements (more than --max-elements {opts.max_elements})"
                )
                return
        analytic = _analytic_hessians(usable)
        edges = [t.edge for t in usable]
        shapes = [t.shape for t in usable]
        g0 = replay.gradients_at(edges, shapes, None, None)
        blocks: dict[tuple[int, int], Stat] = {}
        if self.progress is not None:
            n_all = sum(int(np.prod(t.shape, dtype=np.int64)) for t in usable)
            self.progress.update(self.progress.description + ": second derivatives", n_all)
        for vi, v in enumerate(usable):
            nv = int(np.prod(v.shape, dtype=np.int64))
            cols_p = [np.empty((int(np.prod(u.shape, dtype=np.int64)), nv)) for u in usable]
            cols_m = [np.empty_like(c) for c in cols_p]
            delta = np.zeros(v.shape, np.float64)
            flat = delta.reshape(-1)
            for k in range(nv):
                flat[k] = opts.eps
                gp = replay.gradients_at(edges, shapes, vi, delta)
                flat[k] = -opts.eps
                gm = replay.gradients_at(edges, shapes, vi, delta)
                flat[k] = 0.0
                for ui in range(len(usable)):
                    cols_p[ui][:, k] = gp[ui].reshape(-1)
                    cols_m[ui][:, k] = gm[ui].reshape(-1)
                if self.progress is not None:
                    self.progress.advance()
            for ui, u in enumerate(usable):
                stat = Stat((u.name, v.name), tuple(u.shape) + tuple(v.shape))
                stat.total = cols_p[ui].size
                base = np.repeat(g0[ui].reshape(-1, 1), nv, axis=1)
                _compare(
                    analytic[ui][vi].reshape(-1),
                    base.reshape(-1),
                    cols_p[ui].reshape(-1),
                    cols_m[ui].reshape(-1),
                    opts,
                    stat,
                )
                blocks[(ui, vi)] = stat
        cc.second.extend(blocks[key] for key in sorted(blocks))


def _analytic_hessians(targets: list[_Target]) -> list[list[np.ndarray]]:
    """[u][v]: d(grad u)/d v as a (u.numel(), v.numel()) matrix, differentiating the
    gradient graph the engine built (hooks and retain_grad switched off meanwhile)."""
    variables = [t.tensor for t in targets]
    graphs = [t.grad for t in targets if t.grad is not None and t.grad.grad_fn is not None]
    out: list[list[np.ndarray]] = []
    restore = _silence_hooks(graphs)
    try:
        with muted():
            for u in targets:
                nu = int(np.prod(u.shape, dtype=np.int64))
                rows = [np.zeros((nu, int(np.prod(v.shape, dtype=np.int64)))) for v in targets]
                g = u.grad
                if g is not None and g.grad_fn is not None and g._requires_grad:
                    for k in range(nu):
                        onehot = np.zeros(g.data_.shape, g.data_.dtype)
                        onehot.reshape(-1)[k] = 1
                        try:
                            res = engine.grad(
                                [g],
                                variables,
                                [Tensor._make(onehot)],
                                retain_graph=True,
                                allow_unused=True,
                            )
                        except RuntimeError as exc:
                            raise Unreplayable(
                                "the gradient graph cannot be differentiated again: "
                                + str(exc).split(". ")[0]
                            ) from exc
                        for vi, r in enumerate(res):
                            if r is not None:
                                rows[vi][k] = np.asarray(r.data_, np.float64).reshape(-1)
                out.append(list(rows))
    finally:
        restore()
    return out


def _silence_hooks(graphs: list[Tensor]) -> Callable[[], None]:
    """Hooks and retain_grad off on the gradient graphs while they are differentiated."""
    return engine.silence_hooks([g.grad_fn for g in graphs])


# ====================================================================== the command


def check_path(path: str, opts: CheckOptions) -> int:
    """`adcli check FILE` (`-` reads stdin): print the checks, return the exit status."""
    from adcli.core.runner import ScriptUnreadable, read_script

    try:
        text, name = read_script(path)
    except ScriptUnreadable as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    name = opts.display_name or name
    from adcli.core import isolation

    if opts.in_process or not isolation.available():
        return check_text(text, name, opts, sys.stdout, sys.stderr)
    from adcli.core.runner import run_in_child

    def body(out: IO[str], err: IO[str]) -> int:
        code, out_of_memory = _check_text(text, name, opts, out, err)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    timeout, memory = opts.timeout or 0, opts.max_memory or 0
    return run_in_child(body, timeout, memory, sys.stdout, sys.stderr, debug=opts.debug)


def check_text(text: str, name: str, opts: CheckOptions, out: IO[str], err: IO[str]) -> int:
    """Run script `text` quietly, check every gradient it computes, print the tables."""
    return _check_text(text, name, opts, out, err)[0]


def _check_text(
    text: str, name: str, opts: CheckOptions, out: IO[str], err: IO[str]
) -> tuple[int, bool]:
    """`check_text`, and whether the script failed for lack of memory (the budget)."""
    from adcli.core.isolation import deep_stack
    from adcli.core.runner import out_of_memory
    from adcli.core.session import Hooks, Output, Session, SessionOptions
    from adcli.lang.errors import format_diagnostic
    from adcli.render.progress import Progress

    progress = Progress(err)  # on a terminal, after a second: the script's output is muted
    checker = Checker(opts, progress)
    hooks = Hooks(on_event=checker.on_event)
    session = Session(
        Output(lambda s: None, lambda s: None), hooks, SessionOptions(debug=opts.debug)
    )
    try:
        # room for values nested millions deep, as `adcli run`
        with deep_stack(), recording(), progress.phase("running the script"):
            error, internal = session.run_guarded(text, name, debug=opts.debug)
    finally:
        session.close()
    stopped = error is not None or internal is not None
    failed = render_checks(checker.checks, opts, out, stopped=stopped)
    if error is not None:
        err.write(format_diagnostic(error).rstrip("\n") + "\n")
    if internal is not None:
        err.write(f"adcli: internal error: {internal} (run with --debug for the traceback)\n")
    missed = opts.call is not None and not checker.checks  # --call LINE: no call there
    code = 1 if failed or missed or error is not None or internal is not None else 0
    return code, out_of_memory(error, internal)


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if v == 0:
        return "0"
    return f"{v:.1e}"


def _result(s: Stat) -> str:
    if s.checked == 0:
        return "-"
    if s.fails:
        word = "FAIL" if s.fails == s.checked else f"FAIL ({s.fails} of {s.checked})"
        return word + (" (hook)" if s.hook else "")
    if s.kinks:
        return "kink" if s.kinks == s.checked else f"ok ({s.kinks} at a kink)"
    return "ok"


def render_checks(
    checks: list[CallCheck], opts: CheckOptions, out: IO[str], *, stopped: bool = False
) -> bool:
    """Print the tables; True when some gradient failed. `stopped`: the script
    ended in an error (which the caller reports)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from adcli.render.report import format_shape
    from adcli.render.tables import make_console

    color = opts.color
    width = opts.width
    if width is None and not _isatty(out):
        width = 100
    console = make_console(out, width=width, color=color)
    parts: list[Any] = [
        Text(
            f"gradients vs central differences in float64 (eps={opts.eps:g}, "
            f"rtol={opts.rtol:g}, atol={opts.atol:g})",
            style="dim",
        ),
        Text(""),
    ]
    n_calls = n_ok = n_fail = n_kink = n_skip = 0
    for cc in checks:
        n_calls += cc.calls
        head = Text()
        head.append(cc.call_text or f"{cc.kind}()", style="bold")
        if cc.line is not None:
            head.append(f" at line {cc.line}")
        if cc.calls > 1:
            head.append(f"  ({cc.calls} calls)", style="dim")
        parts.append(head)
        if cc.skipped is not None:
            n_skip += cc.calls
            parts.append(Text(f"not checked: {cc.skipped}", style="yellow"))
            parts.append(Text(""))
            continue
        if not cc.first:
            parts.append(Text("nothing to check: no tensor was differentiated", style="dim"))
        else:
            parts.append(_stat_table(cc.first, ("tensor", "shape"), Table, box, Text, format_shape))
        if cc.second:
            parts.append(
                Text("second derivatives (finite differences of the gradient)", style="bold")
            )
            parts.append(
                _stat_table(cc.second, ("u", "v", "shape"), Table, box, Text, format_shape)
            )
        if cc.second_skipped:
            parts.append(
                Text(f"second derivatives not checked: {cc.second_skipped}", style="yellow")
            )
        for s in cc.first + cc.second:
            if s.checked == 0:
                continue
            if s.fails:
                n_fail += 1
            elif s.kinks:
                n_kink += 1
            else:
                n_ok += 1
        if any(s.fails for s in cc.first + cc.second):
            for note in cc.notes:
                grid = Table.grid(padding=(0, 1, 0, 0))
                grid.add_column(no_wrap=True)
                grid.add_column()
                grid.add_row(Text("note:", style="yellow"), Text(note))
                parts.append(grid)
        parts.append(Text(""))
    if not checks and opts.call is not None:
        parts.append(
            Text(f"no backward() or autograd.grad() call ran at line {opts.call}: nothing to check")
        )
    elif not checks and stopped:
        parts.append(
            Text(
                "the script stopped before any backward() or autograd.grad() call: nothing to check"
            )
        )
    elif not checks:
        parts.append(
            Text("the script made no backward() or autograd.grad() call: nothing to check")
        )
    else:
        rows = n_ok + n_kink + n_fail
        summary = (
            f"{n_calls} call{'s' if n_calls != 1 else ''} checked, "
            f"{rows} gradient{'s' if rows != 1 else ''}: {n_ok + n_kink} ok"
        )
        if n_kink:
            summary += f" ({n_kink} with kinks)"
        summary += f", {n_fail} failed"
        if n_skip:
            summary += f"; {n_skip} call{'s' if n_skip != 1 else ''} not checked"
        parts.append(Text(summary, style="bold red" if n_fail else "bold green"))
    with console.capture() as capture:
        for p in parts:
            console.print(p)
    text = capture.get()
    out.write("\n".join(line.rstrip() for line in text.split("\n")))
    if hasattr(out, "flush"):
        out.flush()
    return n_fail > 0


def _stat_table(
    stats: list[Stat],
    heads: tuple[str, ...],
    Table: Any,
    box: Any,
    Text: Any,
    format_shape: Callable[[Any], str],
) -> Any:
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
    )
    for h in heads:
        table.add_column(h, overflow="fold")
    for h in ("checked", "max abs error", "max rel error", "result"):
        table.add_column(h, no_wrap=True)
    for s in stats:
        names = s.names
        checked = str(s.per_call) if s.per_call >= s.total else f"{s.per_call} of {s.total}"
        res = _result(s)
        style = "bold red" if s.fails else ("yellow" if s.kinks else "green")
        table.add_row(
            *[Text(n, style="bold cyan") for n in names],
            Text(format_shape(s.shape)),
            Text(checked),
            Text(_fmt(s.max_abs)),
            Text(_fmt(s.max_rel)),
            Text(res, style=style),
        )
    return table


def _isatty(f: IO[str]) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError, OSError):
        return False
