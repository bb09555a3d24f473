"""torch.autograd.functional: jacobian and hessian, built on engine.grad."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import engine, ops
from .tensor import Tensor


def _tupled(x: Any) -> tuple[tuple[Tensor, ...], bool]:
    if isinstance(x, Tensor):
        return (x,), False
    return tuple(x), True


def _prepare(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """d func(inputs) / d inputs: for one input and one output a tensor of shape
    output.shape + input.shape; tuples of tuples otherwise, as torch returns."""
    ins, ins_tuple = _tupled(inputs)
    ins = _prepare(ins, create_graph)
    outs_raw = func(*ins)
    outs, outs_tuple = _tupled(outs_raw)
    saved = engine.listeners[:]
    engine.listeners.clear()
    try:
        blocks: list[list[Tensor]] = []
        for out in outs:
            flat = out.reshape(-1) if out.data_.ndim else out.reshape(1)
            rows: list[list[Tensor]] = [[] for _ in ins]
            for k in range(flat.data_.shape[0]):
                if out.requires_grad:
                    gs = engine.grad(
                        flat[k],
                        ins,
                        retain_graph=True,
                        create_graph=create_graph,
                        allow_unused=True,
                    )
                else:
                    gs = (None,) * len(ins)
                for j, (g, inp) in enumerate(zip(gs, ins, strict=False)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {len(blocks)} of the user-provided function is "
                                f"independent of input {j}. This is not allowed in strict mode."
                            )
                        g = ops.zeros_like(inp)
                    rows[j].append(g)
            block = []
            for j, inp in enumerate(ins):
                st = ops.stack(rows[j]) if rows[j] else ops.zeros(0, *inp.shape)
                block.append(st.reshape(tuple(out.shape) + tuple(inp.shape)))
            blocks.append(block)
    finally:
        engine.listeners[:] = saved
    if not create_graph:
        blocks = [[b.detach() for b in row] for row in blocks]
    if not outs_tuple and not ins_tuple:
        return blocks[0][0]
    if not outs_tuple:
        return tuple(blocks[0])
    if not ins_tuple:
        return tuple(row[0] for row in blocks)
    return tuple(tuple(row) for row in blocks)


def hessian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """Second derivatives of a scalar function: the jacobian of its gradient."""
    ins, ins_tuple = _tupled(inputs)

    def grad_fn(*xs: Tensor) -> Any:
        out = func(*xs)
        if not isinstance(out, Tensor) or out.data_.size != 1:
            raise RuntimeError(
                "The function given to hessian should return a single element Tensor"
            )
        saved = engine.listeners[:]
        engine.listeners.clear()
        try:
            gs = engine.grad(out, xs, create_graph=True, allow_unused=True)
        finally:
            engine.listeners[:] = saved
        gs = tuple(ops.zeros_like(x) if g is None else g for g, x in zip(gs, xs, strict=False))
        return gs if ins_tuple else gs[0]

    return jacobian(
        grad_fn, inputs if ins_tuple else ins[0], create_graph=create_graph, strict=strict
    )


def vjp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Any:
    """(func(inputs), v^T J)"""
    ins, ins_tuple = _tupled(inputs)
    ins = _prepare(ins, create_graph)
    out = func(*ins)
    gs = engine.grad(out, ins, grad_outputs=v, create_graph=create_graph, allow_unused=True)
    gs = tuple(ops.zeros_like(x) if g is None else g for g, x in zip(gs, ins, strict=False))
    return out.detach(), (gs if ins_tuple else gs[0])


def hvp(
    func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool = False, strict: bool = False
) -> Any:
    """(func(inputs), H v) for a scalar function."""
    ins, ins_tuple = _tupled(inputs)
    vs, _ = _tupled(v)
    ins = _prepare(ins, True)
    out = func(*ins)
    gs = engine.grad(out, ins, create_graph=True, allow_unused=True)
    dot = None
    for g, vv in zip(gs, vs, strict=False):
        if g is not None:
            term = ops.sum(g * vv)
            dot = term if dot is None else dot + term
    hv = engine.grad(dot, ins, create_graph=create_graph, allow_unused=True)
    hv = tuple(ops.zeros_like(x) if h is None else h for h, x in zip(hv, ins, strict=False))
    return out.detach(), (hv if ins_tuple else hv[0])
