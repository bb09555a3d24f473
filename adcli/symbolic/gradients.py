"""Gradient formulas, derived from the engine's own backward definitions.

No derivative table lives here.  `SymbolicBackward` runs the engine's backward
pass again with `create_graph=True`, starting from a leaf `grad` that stands
for the root's incoming gradient, so every backward formula of every row
(`g * b`, `expand(g) / n`, `mm(g, b.t())`) is recorded as a graph of the same
Function rows; formula.py then reads that graph like any other.  The pass
changes nothing the script can see: hooks, retained gradients and listeners are
switched off while it runs, nothing is accumulated into `.grad`, and saved
values that the script's own backward freed are put back only for the pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from adcli.autograd import engine, grad_mode
from adcli.autograd.config import config
from adcli.autograd.node import AccumulateGrad, Freed, Function, Node
from adcli.autograd.tensor import Tensor
from adcli.provenance import label_of

Edge = tuple[int, int]


def graph_nodes(roots: Iterable[Node | None], limit: int | None = None) -> list[Node]:
    """Every node reachable from `roots` (iteratively; stops after `limit` nodes)."""
    seen: set[int] = set()
    out: list[Node] = []
    stack = [n for n in roots if n is not None]
    while stack and (limit is None or len(out) < limit):
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        for nx, _ in n.next_functions:
            if nx is not None and id(nx) not in seen:
                stack.append(nx)
    return out


def edge_of(t: Tensor) -> tuple[Node, int]:
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    return t._accumulator(), 0


@contextmanager
def quiet_graph(roots: Iterable[Node | None]) -> Iterator[None]:
    """While the block runs: saved values restored, hooks/retain_grad/listeners off,
    the engine recording operands (so the gradient graph can be read)."""
    undo: list[tuple[Any, str, Any]] = []
    for n in graph_nodes(roots):
        # named constants (data such as `x`) take part as leaves, so that backward
        # formulas computing on them (`x.t()`) are recorded and keep their names
        for st in getattr(n, "sym_inputs", None) or ():
            t = None if st is None else st.tensor
            if t is not None and not t._requires_grad and t.data_.dtype.kind == "f":
                lab = label_of(t)
                if lab is not None and lab.name:
                    undo.append((t, "_acc", t._acc))
                    undo.append((t, "_requires_grad", False))
                    t._requires_grad = True
        if isinstance(n, Function) and n.saved.__class__ is Freed and "sym_saved" in n.__dict__:
            undo.append((n, "saved", n.saved))
            n.saved = n.__dict__["sym_saved"]
        for attr in ("pre_hooks", "retained"):
            val = getattr(n, attr, None)
            if val:
                undo.append((n, attr, val))
                setattr(n, attr, None)
        if isinstance(n, AccumulateGrad):
            var = n.variable
            if var is not None and var._hooks:
                undo.append((var, "_hooks", var._hooks))
                var._hooks = None
    listeners = list(engine.listeners)
    engine.listeners.clear()
    prev_record = config.record_inputs
    prev_mode = grad_mode.state.enabled
    config.record_inputs = True
    try:
        yield
    finally:
        grad_mode.state.enabled = prev_mode
        config.record_inputs = prev_record
        engine.listeners[:] = listeners
        for obj, attr, val in reversed(undo):
            setattr(obj, attr, val)


def run_backward(
    roots: list[Tensor], root_grads: list[Tensor], targets: list[tuple[Node, int]]
) -> dict[Edge, Tensor]:
    """The gradients flowing into each target edge, as graph-carrying tensors
    (the engine's own pass with create_graph=True; nothing is accumulated)."""
    captured: dict[Edge, Tensor] = {}
    event = engine.BackwardEvent("grad", roots, root_grads, None, True, True, False)
    engine._run(roots, root_grads, True, True, list(targets), captured, event)
    return captured


def grad_leaves(root_grads: list[Tensor]) -> list[Tensor]:
    """Leaves standing for the roots' incoming gradients (so backward records them)."""
    out = []
    for g in root_grads:
        leaf = Tensor._make(np.array(g.data_, copy=True), True)
        out.append(leaf)
    return out


def grad_symbol_for(root_grad: Tensor, given: bool, index: int, count: int) -> Any:
    """What the incoming gradient is called in formulas: its value when every element is
    the same (1 for a scalar root), else the script's name for it, else `grad`."""
    from . import sym

    a = root_grad.data_
    if a.size and np.all(a == a.flat[0]):
        return sym.number(a.flat[0])
    lab = label_of(root_grad) if given else None
    name = lab.name if lab is not None and lab.name else ("grad" if count == 1 else f"grad{index}")
    return sym.tensor_symbol(name, a, "grad")


def leaf_snapshot(nodes: Iterable[Node]) -> dict[int, np.ndarray]:
    """The values of the leaves now (gradient formulas are checked at these values)."""
    out: dict[int, np.ndarray] = {}
    for n in nodes:
        if isinstance(n, AccumulateGrad):
            var = n.variable
            if var is not None:
                out[id(var)] = np.array(var.data_, copy=True)
    return out
