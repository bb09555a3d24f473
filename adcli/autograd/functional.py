"""torch.autograd.functional: vjp, jvp, vhp, hvp, jacobian and hessian, built on
engine.grad with PyTorch's keywords, checks and error sentences.

Every function works on tuples: a single tensor (input, output or v) is wrapped
into a 1-tuple and unwrapped at the end. Inputs are replaced by fresh tensors
that require grad (a differentiable `view_as` when `create_graph` keeps the link
to the caller's graph, a detached copy otherwise), so the user function's result
can be differentiated with respect to exactly them. Results are detached unless
`create_graph` is set. jvp and hvp use the "double backward" trick (the
gradient of a vjp with respect to its vector), as PyTorch does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from . import engine, grad_mode, ops
from .config import check_numel
from .tensor import Tensor

Tensors = tuple[Tensor, ...]


@contextmanager
def _grad_mode(enabled: bool) -> Iterator[None]:
    prev = grad_mode.state.enabled
    grad_mode.state.enabled = enabled
    try:
        yield
    finally:
        grad_mode.state.enabled = prev


def _tupled(x: Any, what: str, fn: str) -> tuple[bool, Tensors]:
    """(was it a tuple, the tensors as a tuple), refusing anything but tensors."""
    was_tuple = isinstance(x, tuple)
    items = x if was_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if was_tuple else f"given {what}"
            raise TypeError(
                f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors "
                f"but the {where} has type {type(el)}."
            )
    return was_tuple, items


def _untuple(res: Any, was_tuple: bool) -> Any:
    return res if was_tuple else res[0]


def _fresh(ts: Tensors, create_graph: bool, need_graph: bool) -> Tensors:
    """New tensor objects for the inputs (see the module docstring)."""
    out = []
    for t in ts:
        if create_graph and t.requires_grad:
            out.append(ops.view(t, t.data_.shape))  # a differentiable alias (view_as)
        else:
            out.append(t.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(res: Any, create_graph: bool) -> Any:
    """Detach results (nested tuples too) unless the caller asked for a graph."""
    if create_graph:
        return res
    if isinstance(res, tuple):
        return tuple(_finish(r, False) for r in res)
    return res if res is None else res.detach()


def _check_v(v: Tensors, other: Tensors, other_tuple: bool) -> None:
    if len(v) != len(other):
        if other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other, strict=True)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if other_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.shape} but got {a.shape}.")


_STRICT_NO_GRAD = {
    "outputs": (
        "Output {i} of the user-provided function does not require gradients. The outputs "
        "must be computed in a differentiable manner from the input when running in strict "
        "mode."
    ),
    "grad_inputs": (
        "The gradient with respect to input {i} is independent of the inputs of the "
        "user-provided function. This is not allowed in strict mode."
    ),
    "jacobian": (
        "While computing the hessian, found that the jacobian of the user-provided function "
        "with respect to input {i} is independent of the input. This is not allowed in strict "
        "mode. You should ensure that your function is twice differentiable and that the "
        "jacobian depends on the inputs (this would be violated by a linear function for "
        "example)."
    ),
    "hessian": (
        "The hessian of the user-provided function with respect to input {i} is independent "
        "of the input. This is not allowed in strict mode. You should ensure that your "
        "function is thrice differentiable and that the hessian depends on the inputs."
    ),
}


def _strict_requires_grad(ts: Sequence[Tensor | None], kind: str, strict: bool) -> None:
    """strict=True: every tensor must exist and require grad."""
    if not strict:
        return
    for i, t in enumerate(ts):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[kind].format(i=i))


_STRICT_NONE = {
    "back": (
        "The output of the user-provided function is independent of input {i}. This is not "
        "allowed in strict mode."
    ),
    "back_trick": (
        "The gradient with respect to the input is independent of entry {i} in the "
        "grad_outputs when using the double backward trick to compute forward mode "
        "gradients. This is not allowed in strict mode."
    ),
    "double_back": (
        "The jacobian of the user-provided function is independent of input {i}. This is "
        "not allowed in strict mode."
    ),
    "double_back_trick": (
        "The hessian of the user-provided function is independent of entry {i} in the "
        "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
        "double backward trick to replace forward mode AD."
    ),
}


def _zeros_for_none(
    grads: Sequence[Tensor | None], refs: Tensors, strict: bool, create_graph: bool, stage: str
) -> Tensors:
    """Zeros where a gradient is None (an error in strict mode)."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            g = ops.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        out.append(g)
    return tuple(out)


def _grad(
    outputs: Sequence[Tensor | None],
    inputs: Tensors,
    grad_outputs: Sequence[Tensor | None] | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple[Tensor | None, ...]:
    """autograd.grad over the outputs that require grad (None for every input when
    none does), allowing unused inputs; hidden from reports (an internal pass)."""
    gos = grad_outputs if grad_outputs is not None else (None,) * len(outputs)
    outs, gs = [], []
    for o, g in zip(outputs, gos, strict=True):
        if o is not None and o.requires_grad:
            outs.append(o)
            gs.append(g)
    if not outs:
        return (None,) * len(inputs)
    saved = engine.listeners[:]
    engine.listeners.clear()
    try:
        return engine.grad(
            outs,
            inputs,
            gs,
            retain_graph=retain_graph,
            create_graph=create_graph,
            allow_unused=True,
        )
    finally:
        engine.listeners[:] = saved


def _call(func: Callable[..., Any], inputs: Tensors, fn: str) -> tuple[bool, Tensors]:
    return _tupled(func(*inputs), "outputs of the user-provided function", fn)


def _prepare_v(v: Any, ref: Tensors, ref_tuple: bool, fn: str, create_graph: bool) -> Any:
    _, vs = _tupled(v, "v", fn)
    vs = _fresh(vs, create_graph, False)
    _check_v(vs, ref, ref_tuple)
    return vs


def _fresh_inputs(inputs: Any, fn: str, create_graph: bool) -> tuple[bool, Tensors]:
    """(were the inputs a tuple, fresh tensors for them that require grad)."""
    ins_tuple, ins = _tupled(inputs, "inputs", fn)
    return ins_tuple, _fresh(ins, create_graph, True)


def _v_for_inputs(v: Any, ins: Tensors, ins_tuple: bool, fn: str, create_graph: bool) -> Any:
    """v checked against the inputs (jvp, vhp, hvp); None only for a single
    one-element input."""
    if v is not None:
        return _prepare_v(v, ins, ins_tuple, fn, create_graph)
    if len(ins) != 1 or ins[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element."
        )
    return None


def vjp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Any:
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    with _grad_mode(True):
        ins_tuple, ins = _fresh_inputs(inputs, "vjp", create_graph)
        outs_tuple, outs = _call(func, ins, "vjp")
        _strict_requires_grad(outs, "outputs", strict)
        if v is not None:
            v = _prepare_v(v, outs, outs_tuple, "vjp", create_graph)
        elif len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with _grad_mode(create_graph or grad_mode.state.enabled):
        res = _grad(outs, ins, v, create_graph=create_graph)
        res = _zeros_for_none(res, ins, strict, create_graph, "back")
    return (
        _untuple(_finish(outs, create_graph), outs_tuple),
        _untuple(_finish(res, create_graph), ins_tuple),
    )


def jvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Any:
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vjp with
    respect to its (zero) vector."""
    with _grad_mode(True):
        ins_tuple, ins = _fresh_inputs(inputs, "jvp", create_graph)
        v = _v_for_inputs(v, ins, ins_tuple, "jvp", create_graph)
        outs_tuple, outs = _call(func, ins, "jvp")
        _strict_requires_grad(outs, "outputs", strict)
        # any finite vector will do: the vjp is linear in it
        us = tuple(ops.zeros_like(o, requires_grad=True) for o in outs)
        grad_ins = _grad(outs, ins, us, create_graph=True)
        _strict_requires_grad(grad_ins, "grad_inputs", strict)
    with _grad_mode(True if create_graph else grad_mode.state.enabled):
        res = _grad(grad_ins, us, v, create_graph=create_graph)
        res = _zeros_for_none(res, outs, strict, create_graph, "back_trick")
    return (
        _untuple(_finish(outs, create_graph), outs_tuple),
        _untuple(_finish(res, create_graph), outs_tuple),
    )


def _scalar_output(func: Callable[..., Any], ins: Tensors, fn: str, strict: bool) -> Tensors:
    """func(*ins) as a 1-tuple, checked to be a single one-element tensor (vhp, hvp,
    hessian)."""
    outs_tuple, outs = _call(func, ins, fn)
    _strict_requires_grad(outs, "outputs", strict)
    if outs_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn} should contain a single element"
        )
    return outs


def vhp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Any:
    """(func(inputs), v^T H) for a scalar function."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Any:
    """(func(inputs), H v) for a scalar function (by the double backward trick)."""
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(
    fn: str, func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool
) -> Any:
    with _grad_mode(True):
        ins_tuple, ins = _fresh_inputs(inputs, fn, create_graph)
        v = _v_for_inputs(v, ins, ins_tuple, fn, create_graph)
        outs = _scalar_output(func, ins, fn, strict)
        jac = _grad(outs, ins, create_graph=True)
        _strict_requires_grad(jac, "jacobian", strict)
        if fn == "hvp":
            us = tuple(ops.zeros_like(t, requires_grad=True) for t in ins)
            wrt: Tensors = us
            first = _grad(jac, ins, us, create_graph=True)
            _strict_requires_grad(jac, "hessian", strict)  # PyTorch checks jac here
            stage = "double_back_trick"
        else:
            wrt, first, stage = ins, jac, "double_back"
    with _grad_mode(True if create_graph else grad_mode.state.enabled):
        res = _grad(first, wrt, v, create_graph=create_graph)
        res = _zeros_for_none(res, ins, strict, create_graph, stage)
    return _finish(outs, create_graph)[0], _untuple(_finish(res, create_graph), ins_tuple)


_STRATEGY_ERROR = (
    'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
    'function has more outputs than inputs, "forward-mode" tends to be more performant. '
    'Otherwise, prefer to use "reverse-mode".'
)


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """d func(inputs) / d inputs: one block of shape output.shape + input.shape per
    (output, input) pair, nested in tuples as the inputs and outputs were.

    `vectorize` gives the same numbers (rows are computed one by one here); the
    forward-mode strategy is computed in reverse mode too, after PyTorch's checks."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(_STRATEGY_ERROR)
    if strategy == "forward-mode":
        _check_forward_mode(create_graph, strict, vectorize)
        return _forward_mode(func, inputs, False)
    return _jacobian_rows(func, inputs, create_graph, strict, vectorize)


def _forward_mode(func: Callable[..., Any], inputs: Any, from_hessian: bool) -> Any:
    """The forward-mode jacobian's numbers, computed in reverse mode. PyTorch's result
    is not detached: it keeps a graph (ending in a reshape of the transposed tangents)
    when an input requires grad, and always inside hessian (which makes its inputs
    require grad)."""
    _, ins = _tupled(inputs, "inputs", "jacobian")
    keep = from_hessian or any(t.requires_grad for t in ins)
    return _jacobian_rows(func, inputs, keep, False, forward=keep)


def _check_forward_mode(create_graph: bool, strict: bool, vectorize: bool) -> None:
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`create_graph=False` or `strategy="reverse-mode"`.'
        )
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.'
        )
    if not vectorize:
        # (PyTorch's sentence, with its missing space)
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )


def _jacobian_rows(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool,
    strict: bool,
    vectorize: bool = False,
    forward: bool = False,
) -> Any:
    """Reverse mode: one autograd.grad call per output element (`forward`: laid out
    as forward mode returns it, see `_forward_mode`)."""
    with _grad_mode(True):
        ins_tuple, ins = _fresh_inputs(inputs, "jacobian", create_graph)
        outs_tuple, outs = _call(func, ins, "jacobian")
        _strict_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`."
            )
        for out in outs:  # each block's size, before one backward pass per output element
            for inp in ins:
                check_numel(out.numel() * inp.numel())
        blocks = []
        for i, out in enumerate(outs):
            rows: list[list[Tensor]] = [[] for _ in ins]
            flat = ops.reshape(out, (-1,))
            for k in range(out.numel()):
                gs = _grad((flat[k],), ins, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(gs, ins, strict=True)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        g = ops.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        # (PyTorch names the output's index here)
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of "
                            f"input {i}. This is not allowed in strict mode when "
                            "create_graph=True."
                        )
                    rows[j].append(g)
            layout = _forward_block if forward else _reverse_block
            blocks.append(
                tuple(layout(_stack(r, inp), out, inp) for r, inp in zip(rows, ins, strict=True))
            )
        res = _finish(tuple(blocks), create_graph)
    if not ins_tuple:
        res = tuple(row[0] for row in res)
    return res if outs_tuple else res[0]


def _reverse_block(rows: Tensor, out: Tensor, inp: Tensor) -> Tensor:
    return ops.view(rows, tuple(out.shape) + tuple(inp.shape))


def _forward_block(rows: Tensor, out: Tensor, inp: Tensor) -> Tensor:
    """Forward mode's layout: one tangent (shaped like the output) per input element,
    the input dim moved last by a permute, then reshaped (ReshapeAliasBackward0)."""
    if not rows.requires_grad:
        return _reverse_block(rows, out, inp).detach()
    m = ops.reshape(rows, (out.numel(), inp.numel()))
    tangents = ops.view(ops.contiguous(ops.t(m)), (inp.numel(), *out.shape))
    nd = tangents.ndim
    moved = ops.permute(tangents, (*range(1, nd), 0))
    return ops.reshape(moved, tuple(out.shape) + tuple(inp.shape))


def _stack(rows: list[Tensor], inp: Tensor) -> Tensor:
    if rows:
        return ops.stack(rows)
    return ops.zeros(0, *inp.shape, dtype=inp.dtype)  # an empty output: no rows


def hessian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """Second derivatives of a scalar function: the jacobian of its gradient, nested
    (input i, input j) when the inputs are a tuple."""
    ins_tuple, ins = _tupled(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs: Tensor) -> Tensor:
        return ops.squeeze(_scalar_output(func, xs, "hessian", strict)[0])

    def gradient(*xs: Tensor) -> Any:
        jac = jacobian(scalar_func, xs, create_graph=True)
        _strict_requires_grad(jac, "jacobian", strict)
        return jac

    if outer_jacobian_strategy == "forward-mode":
        _check_forward_mode(create_graph, strict, vectorize)
        res = _forward_mode(gradient, ins, True)
    else:
        res = jacobian(gradient, ins, create_graph=create_graph, strict=strict, vectorize=vectorize)
    if not ins_tuple:
        res = res[0][0]
    return res
