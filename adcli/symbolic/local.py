"""The local rule of one node: the derivative its grad_fn applies, in its inputs' names.

`MulBackward0: ∂(a*b)/∂a = b, ∂(a*b)/∂b = a`.  Derived, like every formula here,
by calling the row's own `backward` on a symbolic incoming gradient `grad` and
reading the graph it builds, with the node's inputs standing as symbols.  When
the result is `grad` times something, that something is the local derivative;
otherwise (matmul, broadcast sums, indexing) the rule is shown as the
vector-Jacobian product the row computes, PyTorch-style: `W: x.T @ grad`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from adcli.autograd import engine, grad_mode
from adcli.autograd.config import config
from adcli.autograd.node import Freed, Function, Node
from adcli.autograd.tensor import Tensor

from . import sym
from .formula import Converter

#: A node's own expression longer than this is named instead (`∂l4/∂l2`).
EXPR_CHARS = 28


@contextmanager
def _restored(node: Function) -> Iterator[None]:
    undo = None
    if node.saved.__class__ is Freed and "sym_saved" in node.__dict__:
        undo = node.saved
        node.saved = node.__dict__["sym_saved"]
    prev_record, prev_mode = config.record_inputs, grad_mode.state.enabled
    config.record_inputs = True
    grad_mode.state.enabled = True
    try:
        yield
    finally:
        config.record_inputs, grad_mode.state.enabled = prev_record, prev_mode
        if undo is not None:
            node.saved = undo


def _letters() -> Iterator[str]:
    """a, b, ..., z, a1, b1, ... (names for inputs that have none)."""
    k = 0
    while True:
        for c in "abcdefghijklmnopqrstuvwxyz":
            yield c + (str(k) if k else "")
        k += 1


def local_rule(
    node: Node, names: dict[tuple[int, int], str], forward: Converter, own_name: str
) -> str | None:
    """The text of the node's local rule, or None for nodes without one."""
    return local_rule_later(node, names, forward, own_name)()


def local_rule_later(
    node: Node, names: dict[tuple[int, int], str], forward: Converter, own_name: str
) -> Callable[[], str | None]:
    """`local_rule` in two steps: the node's backward runs now (it reads the values
    saved for it, which the script may change in place later); the returned function
    simplifies and prints the rule, whenever it is called."""
    if not isinstance(node, Function):
        return lambda: None
    letters = _letters()
    stops: dict[tuple[int, int], Any] = {}
    inputs: list[tuple[int, tuple[int, int], Any]] = []
    metas = node.in_meta
    used: set[str] = set()
    for i, (nx, nr) in enumerate(node.next_functions):
        if nx is None:
            continue
        key = (id(nx), nr)
        if key not in stops:
            name = names.get(key)
            if not name or not name.isidentifier():
                name = next(letters)
            while name in used:
                name = next(letters)
            used.add(name)
            value = sym.fit(sym.evaluate(forward.of_edge(nx, nr)), metas[i][0])
            stops[key] = sym.tensor_symbol(name, np.array(value), "leaf")
        inputs.append((i, key, stops[key]))
    if not inputs:
        return lambda: None
    outs = node.outputs
    n_out = len(outs) if isinstance(outs, tuple) else 1
    shapes = []
    for k in range(n_out):
        t = node.output_tensor(k)
        if t is not None:
            shapes.append((t.data_.shape, t.data_.dtype))
        else:
            lab = getattr(node, "_label", None)
            if k == 0 and lab is not None and lab.value is not None:
                shapes.append((np.shape(lab.value), np.asarray(lab.value).dtype))
            else:
                return lambda: None
    gleaves = [Tensor._make(np.ones(s, d), True) for s, d in shapes]
    gsyms = [
        sym.tensor_symbol("grad" if n_out == 1 else f"grad{k}", np.ones(s), "grad")
        for k, (s, _) in enumerate(shapes)
    ]
    accs = [gl._accumulator() for gl in gleaves]  # held: their ids are keys below
    for acc, gs in zip(accs, gsyms, strict=True):
        stops[(id(acc), 0)] = gs
    listeners = list(engine.listeners)
    engine.listeners.clear()
    try:
        with _restored(node):
            if node.multi_output:
                grads = node.backward(node, *gleaves)
            else:
                grads = node.backward(node, gleaves[0])
            grads = [None if g is None else engine._fit(g, metas[i]) for i, g in enumerate(grads)]
    finally:
        engine.listeners[:] = listeners
    conv = Converter(stops=stops)
    own = sym.to_text(conv.of_edge(node, 0)) if n_out == 1 else None
    if own is None or len(own) > EXPR_CHARS:
        what = own_name if own_name.isidentifier() else "out"
    else:
        what = own if sym._atomic_name(own) else f"({own})"
    by_input: dict[tuple[int, int], Any] = {}
    for i, key, _ in inputs:
        g = grads[i] if i < len(grads) else None
        if g is None:
            continue
        e = conv.of_tensor(g)
        by_input[key] = by_input.get(key, 0) + e
    terms = [(stops[key], sym.sympy.sympify(total)) for key, total in by_input.items()]

    def text() -> str | None:
        parts = [_one(what, s, total, gsyms) for s, total in terms]
        return "; ".join(parts) if parts else None

    return text


def _one(what: str, s: Any, total: Any, gsyms: list[Any]) -> str:
    name = sym.atomic_text(s)
    if len(gsyms) == 1:
        g = gsyms[0]
        candidates = [(total, "")]
        if sym.is_sum(total):  # a broadcast operand: its gradient is summed back to its shape
            candidates.insert(0, (sym.sum_argument(total), ", summed over the broadcast"))
        for expr, summed in candidates:
            q = sym.tidy(expr / g)
            if g in q.free_symbols or not sym.is_closed(q)[0]:
                continue
            text = f"∂{what}/∂{name} = {sym.to_text(q)}"
            try:
                v = sym.evaluate(q)
                if v.size and np.all(v == v.flat[0]) and not q.is_number:
                    text += f" = {_num(v.flat[0])}"
            except Exception:  # a value is a nicety
                pass
            return text + summed
    total = sym.tidy(total)
    closed, via = sym.is_closed(total)
    rule = sym.to_text(total) if closed else f"through {via}"
    return f"{sym.to_text(s)}: {rule}"


def _num(v: Any) -> str:
    return np.format_float_positional(np.float32(v), unique=True, trim="-")
