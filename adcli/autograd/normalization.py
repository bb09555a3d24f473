"""Layer and batch normalisation: the operation rows and their public functions.

Each row's forward runs the kernel of normkernels.py (PyTorch's roundings) and its
backward gives PyTorch's kernel values too. With create_graph the gradient is a
node of its own, as in PyTorch (NativeLayerNormBackwardBackward0,
NativeBatchNormBackwardBackward0): the kernel's values forward, PyTorch's double
backward formula in Tensor operations backward (so Hessians and third derivatives
go on through ordinary ops). group_norm's create_graph gradient is, as PyTorch's,
built from Tensor operations directly.

This module sits above functions.py (it runs the ops and its rows' backwards call
them); adcli/autograd/__init__.py loads it so the rows are registered.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import grad_mode, normkernels, ops
from .functions import _lin
from .node import Function
from .tensor import Tensor


def _values(values: tuple[Any, ...], keep: bool = False) -> tuple[Tensor | None, ...]:
    """The kernel's gradients as plain tensors (no graph: create_graph is off),
    contiguous unless `keep` (batch_norm's kernels lay theirs out as PyTorch's)."""
    return tuple(
        None if v is None else Tensor._make(v if keep else np.ascontiguousarray(v)) for v in values
    )


def _data(t: Tensor | None) -> np.ndarray | None:
    return None if t is None else t.data_


# ************************************************************ layer norm


def _ln_parts(x: Tensor, k: int, eps: float) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """(xhat, rstd, dims) of x over its last k dims, in Tensor operations."""
    dims = tuple(range(x.data_.ndim - k, x.data_.ndim))
    xc = x - ops.mean_dims(x, dims, True)
    rstd = ops.reciprocal(ops.sqrt(ops.mean_dims(xc * xc, dims, True) + eps))
    return xc * rstd, rstd, dims


def _project(t: Tensor, xhat: Tensor, scale: Tensor, dims: tuple[int, ...]) -> Tensor:
    """scale * (t - mean(t) - xhat * mean(t * xhat)) over dims: the normalisation's
    Jacobian (symmetric) applied to t."""
    return scale * (t - ops.mean_dims(t, dims, True) - xhat * ops.mean_dims(t * xhat, dims, True))


class NativeLayerNorm(Function):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dims"""

    grad_fn_name = "NativeLayerNormBackward0"

    def forward(ctx, x, w, b, k, eps):
        xd = x.data_
        n = math.prod(xd.shape[xd.ndim - k :])
        y, mean, rstd = normkernels.layer_norm(xd, n, _data(w), _data(b), eps)
        ctx.k, ctx.n, ctx.eps, ctx.mean, ctx.rstd = k, n, eps, mean, rstd
        ctx.save(x, w, b)
        return y

    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        if grad_mode.state.enabled:  # create_graph: a node of its own, as PyTorch's
            # with PyTorch's inputs (grad_out, input, mean, rstd, weight, bias): mean and
            # rstd constants, bias only an edge (its gradient is never defined), so the
            # gradients require grad when the bias does and a backward through them
            # reaches the bias's graph
            mean, rstd = Tensor._make(ctx.mean), Tensor._make(ctx.rstd)
            outs = NativeLayerNormBackward.apply(
                g, x, mean, rstd, w, b, k=ctx.k, n=ctx.n, need=need
            )
            return tuple(o if want else None for o, want in zip(outs, need, strict=True))
        dx, dw, db = normkernels.layer_norm_backward(
            g.data_, x.data_, ctx.mean, ctx.rstd, _data(w), ctx.n, need
        )
        wshape = x.data_.shape[x.data_.ndim - ctx.k :]
        return _values(
            (
                dx,
                None if dw is None else dw.reshape(wshape),
                None if db is None else db.reshape(wshape),
            )
        )

    def jvp(ctx, ts, xs, r):
        (tx, tw, tb), (x, w, _) = ts, xs
        xhat, rstd, dims = _ln_parts(x, ctx.k, ctx.eps)
        dx = None
        if tx is not None:
            dx = _project(tx, xhat, rstd, dims)
            dx = dx if w is None else dx * w
        return _lin(dx, None if tw is None else xhat * tw, tb)


class NativeLayerNormBackward(Function):
    """layer_norm's gradients (input, weight, bias) from the incoming gradient

    Its inputs are PyTorch's native_layer_norm_backward's: (grad_out, input, mean,
    rstd, weight, bias); mean and rstd are constants and the bias gets no gradient,
    but its edge is there (a double backward reaches the bias's node, as PyTorch's).
    Its own backward is PyTorch's layer_norm_double_backward, in Tensor operations
    with the forward's mean and rstd as constants (as PyTorch's are), so second
    derivatives come out as PyTorch's do, signs of zeros included."""

    grad_fn_name = "NativeLayerNormBackwardBackward0"
    multi_output = True

    def forward(ctx, g, x, mean, rstd, w, b, k, n, need):
        ctx.k, ctx.n, ctx.mean, ctx.rstd, ctx.need = k, n, mean.data_, rstd.data_, need
        ctx.save(g, x, w)
        dx, dw, db = normkernels.layer_norm_backward(
            g.data_, x.data_, ctx.mean, ctx.rstd, _data(w), n, need
        )
        xd = x.data_
        wshape = xd.shape[xd.ndim - k :]
        empty = np.zeros(0, xd.dtype)  # an output nobody asked for (PyTorch's undefined)
        return (
            empty if dx is None else dx,
            empty if dw is None else dw.reshape(wshape),
            empty if db is None else db.reshape(wshape),
        )

    def backward(ctx, ggx, ggw, ggb):
        g, x, w = ctx.saved_tensors
        d_g, d_x, d_w = _layer_norm_double_backward(ctx, g, x, w, ggx, ggw, ggb)
        return d_g, d_x, None, None, d_w, None

    def jvp(ctx, ts, xs, r):
        (tg, tx, _, _, tw, _), (g, x, mean, rstd, w, b) = ts, xs
        again = None
        if tg is not None:  # linear in g: the same gradients of the tangent
            again = NativeLayerNormBackward.apply(
                tg, x, mean, rstd, w, b, k=ctx.k, n=ctx.n, need=ctx.need
            )
        return _second_order_tangents(ctx, _layer_norm_double_backward, g, x, w, tx, tw, again)


def _layer_norm_double_backward(
    ctx: Function,
    g: Tensor,
    x: Tensor,
    w: Tensor | None,
    ggx: Tensor | None,
    ggw: Tensor | None,
    ggb: Tensor | None,
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """(d/dg, d/dx, d/dw) of <ggx, dx> + <ggw, dw> + <ggb, db>, by PyTorch's formula:
    rows of n elements, mean and rstd constants, x - mean the only path to x."""
    xd = x.data_
    n = ctx.n
    rows = xd.size // n if n else 0
    dt = xd.dtype
    x2 = ops.reshape(x, (rows, n))
    g2 = ops.reshape(g, (rows, n))
    xc = x2 - Tensor._make(ctx.mean.reshape(rows, 1).astype(dt))
    r1 = Tensor._make(ctx.rstd.reshape(rows, 1).astype(dt))
    r2, r3 = ops.pow(r1, 2), ops.pow(r1, 3)
    gamma = ops.reshape(w, (1, n)) if w is not None else Tensor._make(np.ones(1, dt))
    ggx2 = None if ggx is None else ops.reshape(ggx, (rows, n))
    ggw2 = None if ggw is None or w is None else ops.reshape(ggw, (1, n))
    ggb2 = None if ggb is None or w is None else ops.reshape(ggb, (1, n))

    def rowsum(t: Tensor) -> Tensor:
        return ops.sum_dims(t, (1,), True)

    xc_r3 = xc * r3
    d_x = None
    if ggx2 is not None:
        gxhat = g2 * gamma
        s_gx_xc, s_gx = rowsum(gxhat * xc), rowsum(gxhat)
        s_gg, s_gg_xc = rowsum(ggx2), rowsum(ggx2 * xc)
        inner = (s_gg * s_gx) / n - rowsum(ggx2 * gxhat) + (r2 * s_gx_xc * s_gg_xc) * (3.0 / n)
        d_x = (
            (xc_r3 * inner) / n
            + (s_gg_xc * r3) / n * (s_gx / n - gxhat)
            + (s_gx_xc * r3) / n * (s_gg / n - ggx2)
        )
    if ggw2 is not None:
        u = g2 * ggw2
        term = u * r1 + (r1 * rowsum(u)) / (-n) + (xc_r3 * rowsum(u * xc)) / (-n)
        d_x = term if d_x is None else d_x + term

    def first_grad(t: Tensor, scale: Tensor) -> Tensor:
        # layer_norm's input gradient for an incoming gradient t and weight `scale`
        return (scale * r1) / n * (n * t - rowsum(t) - (xc * r2) * rowsum(t * xc))

    d_w = None
    if w is not None and ggx2 is not None:
        ones = Tensor._make(np.ones((), dt))
        d_w = ops.reshape(ops.sum_dims(g2 * first_grad(ggx2, ones), (0,), False), w.data_.shape)
    d_g = None
    if ggx2 is not None:
        d_g = first_grad(ggx2, gamma)
    if ggw2 is not None:
        term = ggw2 * xc * r1
        d_g = term if d_g is None else d_g + term
    if ggb2 is not None:
        d_g = ggb2 if d_g is None else d_g + ggb2
    if d_g is not None:
        d_g = ops.reshape(ops.expand(d_g, rows, n), xd.shape)
    return d_g, None if d_x is None else ops.reshape(d_x, xd.shape), d_w


def _second_order_tangents(
    ctx: Function,
    double_backward: Any,
    g: Tensor,
    x: Tensor,
    w: Tensor | None,
    tx: Tensor | None,
    tw: Tensor | None,
    again: tuple[Tensor, ...] | None,
) -> tuple[Tensor | None, ...]:
    """The tangents of a normalisation's (input, weight, bias) gradients: the second
    derivatives are symmetric, so the double backward applied to the input's and the
    weight's tangents gives their part; `again` (the gradients of g's tangent) the rest."""
    hx = hw = None
    if tx is not None or tw is not None:
        _, hx, hw = double_backward(ctx, g, x, w, tx, tw, None)
    parts = (hx, hw, None)
    out: list[Tensor | None] = []
    for i, want in enumerate(ctx.need):
        if not want:
            out.append(None)  # an output nobody asked for
            continue
        out.append(_lin(parts[i], None if again is None else again[i]))
    return tuple(out)


def _sum_lead(t: Tensor, lead: tuple[int, ...]) -> Tensor:
    """t summed over the leading dims (t itself when there are none)."""
    return ops.sum_dims(t, lead, False) if lead else t


def _shape_list(shape: Any) -> list[int]:
    return [int(s) for s in shape]


def _check_float(x: Tensor, kernel: str) -> None:
    if x.data_.dtype.kind != "f":
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{x.dtype.legacy.replace('Tensor', '')}'"
        )


def layer_norm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """input normalised over its last len(normalized_shape) dims, then scaled by weight
    and shifted by bias (each of normalized_shape's shape, or None)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "layer_norm(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    if not isinstance(normalized_shape, (tuple, list)) and not _is_size(normalized_shape):
        raise TypeError(
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, "
            f"not {type(normalized_shape).__name__}"
        )
    ns = _shape_list(normalized_shape)
    if not ns:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
            "least one element, but got normalized_shape = []"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.data_.shape) != ns:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.data_.shape)} and normalized_shape = {ns}"
            )
    shape = list(input.data_.shape)
    if len(shape) < len(ns) or shape[len(shape) - len(ns) :] != ns:
        star = ", ".join(["*"] + [str(s) for s in ns])
        raise RuntimeError(
            f"Given normalized_shape={ns}, expected input with shape [{star}], but got input "
            f"of size{shape}"
        )
    _check_float(input, "LayerNormKernelImpl")
    for t in (weight, bias):
        if t is not None and t.data_.dtype != input.data_.dtype:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return NativeLayerNorm.apply(input, weight, bias, k=len(ns), eps=float(eps))


def _is_size(v: Any) -> bool:
    return type(v).__name__ == "Size" and isinstance(v, tuple)


# ************************************************************ batch norm


def _channel_shape(x: np.ndarray) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


class NativeBatchNorm(Function):
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1)

    The batch's statistics when training (updating the running ones), else the
    running ones."""

    grad_fn_name = "NativeBatchNormBackward0"

    def forward(ctx, x, w, b, running_mean, running_var, training, momentum, eps):
        xd = x.data_
        dt = xd.dtype.type
        rm, rv = _data(running_mean), _data(running_var)
        if training:
            mean, invstd, var_sum, rows = normkernels.batch_norm_train(xd, eps)
            # PyTorch's kernel writes the running statistics in place, leaving their
            # version counters alone
            normkernels.update_running(rm, rv, mean, var_sum, int(rows), momentum)
            back_invstd = invstd
        else:
            mean = rm.astype(dt)
            invstd = normkernels.eval_invstd(rv, eps, dt)
            back_invstd = normkernels.backward_eval_invstd(rv, eps, dt)
        ctx.training, ctx.eps = training, eps
        ctx.mean, ctx.invstd = mean, back_invstd
        ctx.running_var = None if training else rv.astype(dt)
        ctx.save(x, w)
        return normkernels.batch_norm_apply(xd, mean, invstd, _data(w), _data(b))

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        if grad_mode.state.enabled:  # create_graph: a node of its own, as PyTorch's
            outs = NativeBatchNormBackward.apply(g, x, w, *_bn_stats(ctx), fwd=ctx, need=need)
            return tuple(o if want else None for o, want in zip(outs, need, strict=True))
        return _values(
            normkernels.batch_norm_backward(
                g.data_, x.data_, _data(w), ctx.mean, ctx.invstd, ctx.training, need
            ),
            keep=True,
        )

    def jvp(ctx, ts, xs, r):
        (tx, tw, tb), (x, w, _) = ts, xs
        xhat, invstd, dims = _bn_parts(ctx, x)
        sh = _channel_shape(x.data_)
        dx = None
        if tx is not None:
            dx = _project(tx, xhat, invstd, dims) if ctx.training else tx * invstd
            dx = dx if w is None else dx * ops.reshape(w, sh)
        return _lin(
            dx,
            None if tw is None else xhat * ops.reshape(tw, sh),
            None if tb is None else ops.reshape(tb, sh),
        )


def _bn_stats(ctx: Function) -> tuple[Tensor, Tensor]:
    """The forward's statistics as the constant operands of PyTorch's
    native_batch_norm_backward node (two edges that never lead anywhere: PyTorch
    refuses running statistics that require grad)."""
    return Tensor._make(np.asarray(ctx.mean)), Tensor._make(np.asarray(ctx.invstd))


class NativeBatchNormBackward(Function):
    """batch_norm's gradients (input, weight, bias) from the incoming gradient,
    its inputs (grad_out, input, weight) and two statistics, as PyTorch's node

    Its own backward is PyTorch's batchnorm_double_backward in Tensor operations, the
    statistics constants (as PyTorch's are)."""

    grad_fn_name = "NativeBatchNormBackwardBackward0"
    multi_output = True

    def forward(ctx, g, x, w, _mean, _invstd, fwd, need):
        ctx.training, ctx.eps, ctx.mean, ctx.need = fwd.training, fwd.eps, fwd.mean, need
        ctx.invstd, ctx.running_var = fwd.invstd, fwd.running_var
        ctx.save(g, x, w)
        values = normkernels.batch_norm_backward(
            g.data_, x.data_, _data(w), fwd.mean, fwd.invstd, fwd.training, need
        )
        empty = np.zeros(0, x.data_.dtype)  # an output nobody asked for
        return tuple(empty if v is None else v for v in values)

    def backward(ctx, ggx, ggw, ggb):
        g, x, w = ctx.saved_tensors
        return _batch_norm_double_backward(ctx, g, x, w, ggx, ggw, ggb) + (None, None)

    def jvp(ctx, ts, xs, r):
        (tg, tx, tw, _, _), (g, x, w, mean_t, invstd_t) = ts, xs
        again = None
        if tg is not None:  # linear in g: the same gradients of the tangent
            again = NativeBatchNormBackward.apply(
                tg, x, w, mean_t, invstd_t, fwd=ctx, need=ctx.need
            )
        return _second_order_tangents(ctx, _batch_norm_double_backward, g, x, w, tx, tw, again)


def _batch_norm_double_backward(
    ctx: Function,
    g: Tensor,
    x: Tensor,
    w: Tensor | None,
    ggx: Tensor | None,
    ggw: Tensor | None,
    ggb: Tensor | None,
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """(d/dg, d/dx, d/dw) of <ggx, dx> + <ggw, dw> + <ggb, db>, by PyTorch's formula:
    per channel over m = numel / channels values, the statistics constants."""
    xd = x.data_
    dt = xd.dtype
    sh = _channel_shape(xd)
    m = xd.size // xd.shape[1]
    training = ctx.training

    def chsum(t: Tensor, keep: bool = True) -> Tensor:
        # over every dim but the channels: dim 0 first, then the others from the last
        t = ops.sum_dims(t, (0,), keep)
        if keep:
            for d in range(t.data_.ndim - 1, 1, -1):
                t = ops.sum_dims(t, (d,), True)
        else:
            for d in range(t.data_.ndim - 1, 0, -1):
                t = ops.sum_dims(t, (d,), False)
        return t

    def per_channel(t: Tensor) -> Tensor:
        return ops.reshape(t, sh)

    def expanded(t: Tensor) -> Tensor:
        # expand_as(input): full-size, so a product's layout is contiguous, as PyTorch's
        return ops.expand(per_channel(t), xd.shape)

    affine = w is not None
    gamma = expanded(w) if affine else Tensor._make(np.ones((), dt))
    ggw_b = expanded(ggw) if affine and ggw is not None else None
    ggb_b = expanded(ggb) if affine and ggb is not None else None
    mu = Tensor._make(ctx.mean.reshape(sh).astype(dt))
    if training:
        r1 = Tensor._make(ctx.invstd.reshape(sh).astype(dt))
    else:
        r1 = ops.pow(Tensor._make(ctx.running_var.reshape(sh)) + ctx.eps, -0.5)
    xc = x - mu
    r2, r3 = ops.pow(r1, 2), ops.pow(r1, 3)
    xc_r3 = xc * r3
    s_g_xc = chsum(g * xc)
    s_g = chsum(g)
    d_x = None
    if ggx is not None and training:
        s_gg, s_gg_xc = chsum(ggx), chsum(ggx * xc)
        inner = (s_gg * s_g) / m - chsum(g * ggx) + (r2 * s_g_xc * s_gg_xc) * (3.0 / m)
        d_x = gamma * (
            (xc_r3 * inner) / m
            + (s_gg_xc * r3) / m * (s_g / m - g)
            + (s_g_xc * r3) / m * (s_gg / m - ggx)
        )
    if ggw_b is not None:
        if training:
            term = ggw_b * (g * r1 + (r1 * s_g) / (-m) + (xc_r3 * chsum(g * xc)) / (-m))
        else:
            term = ggw_b * r1 * g
        d_x = term if d_x is None else d_x + term

    def first_grad(t: Tensor, scale: Tensor) -> Tensor:
        # batch_norm's training input gradient for an incoming gradient t
        return (scale * r1) / m * (m * t - chsum(t) - (xc * r2) * chsum(t * xc))

    d_w = None
    if affine and ggx is not None:
        if training:
            d_w = chsum(ggx * first_grad(g, Tensor._make(np.ones((), dt))), False)
        else:
            d_w = chsum(ggx * g * r1, False)
    d_g = None
    if ggx is not None:
        d_g = first_grad(ggx, gamma) if training else ggx * r1 * gamma
    if ggw_b is not None:
        term = ggw_b * xc * r1
        d_g = term if d_g is None else d_g + term
    if ggb_b is not None:
        d_g = ggb_b if d_g is None else d_g + ggb_b
    return d_g, d_x, d_w


def _bn_parts(ctx: Function, x: Tensor) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """(xhat, invstd, reduced dims) in Tensor operations: the batch's statistics
    (differentiable) when training, the running ones (constants) otherwise."""
    xd = x.data_
    dims = (0,) + tuple(range(2, xd.ndim))
    sh = _channel_shape(xd)
    if ctx.training:
        xc = x - ops.mean_dims(x, dims, True)
        invstd = ops.reciprocal(ops.sqrt(ops.mean_dims(xc * xc, dims, True) + ctx.eps))
        return xc * invstd, invstd, dims
    invstd = Tensor._make(ctx.invstd.reshape(sh))
    return (x - Tensor._make(ctx.mean.reshape(sh))) * invstd, invstd, dims


def batch_norm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float | None = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Per-channel (dim 1) normalisation: with the batch's mean and biased variance
    when training (running_mean and running_var, if given, move towards the batch's
    mean and unbiased variance by `momentum`), else with the running statistics."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "batch_norm(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    size = input.shape
    if training:
        _verify_batch_size(size)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    xd = input.data_
    if xd.ndim < 2:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [-{max(xd.ndim, 1)}, "
            f"{max(xd.ndim, 1) - 1}], but got 1)"
        )
    c = xd.shape[1]
    if xd.size == 0:  # PyTorch: a clone, scaled and shifted by the first weight and bias
        out = ops.clone(input)
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None:
            if t.data_.size != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.data_.size}")
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.data_.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.data_.size}")
    _check_float(input, "batch_norm")
    return NativeBatchNorm.apply(
        input,
        None if weight is None else ops.reshape(weight, (c,)) if weight.data_.ndim != 1 else weight,
        None if bias is None else ops.reshape(bias, (c,)) if bias.data_.ndim != 1 else bias,
        running_mean=running_mean,
        running_var=running_var,
        training=bool(training),
        momentum=0.0 if momentum is None else float(momentum),
        eps=float(eps),
    )


def _verify_batch_size(size: Any, plain: bool = False) -> None:
    """PyTorch's refusal to train on one value per channel (`size` printed as a list
    when `plain`: group_norm passes one)."""
    n = size[0] if len(size) else 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{list(size) if plain else size}"
        )


# ************************************************************ group norm


def _gn_parts(x: Tensor, groups: int, eps: float) -> tuple[Tensor, Tensor]:
    """(xhat, rstd) of x normalised per (sample, group), in x's shape, as Tensor ops."""
    xd = x.data_
    blocks = ops.reshape(x, (xd.shape[0], groups, -1))
    xhat, rstd, _ = _ln_parts(blocks, 1, eps)
    return ops.reshape(xhat, xd.shape), rstd


def _per_group(t: Tensor, xhat: Tensor, rstd: Tensor, groups: int) -> Tensor:
    """The normalisation's Jacobian applied to t, per (sample, group) block."""
    shape = t.data_.shape
    block = (shape[0], groups, -1)
    r = _project(ops.reshape(t, block), ops.reshape(xhat, block), rstd, (2,))
    return ops.reshape(r, shape)


class NativeGroupNorm(Function):
    """(x - mean) / sqrt(var + eps) per (sample, group of channels), then weight * . + bias
    per channel"""

    grad_fn_name = "NativeGroupNormBackward0"

    def forward(ctx, x, w, b, groups, eps):
        y, mean, rstd = normkernels.group_norm(x.data_, groups, _data(w), _data(b), eps)
        ctx.groups, ctx.eps, ctx.mean, ctx.rstd = groups, eps, mean, rstd
        ctx.save(x, w)
        return y

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        values = normkernels.group_norm_backward(
            g.data_, x.data_, ctx.mean, ctx.rstd, _data(w), ctx.groups, need
        )
        if grad_mode.state.enabled:
            # create_graph: PyTorch then computes the gradient from Tensor operations
            # (its infinitely differentiable group_norm backward), ending in a view
            xd = x.data_
            xhat, rstd = _gn_parts(x, ctx.groups, ctx.eps)
            dims = (0,) + tuple(range(2, xd.ndim))
            wb = None if w is None else ops.reshape(w, _channel_shape(xd))
            c = (xd.shape[1],)
            return (
                _per_group(g if wb is None else g * wb, xhat, rstd, ctx.groups)
                if need[0]
                else None,
                ops.view(ops.sum_dims(g * xhat, dims, False), c) if need[1] else None,
                ops.view(ops.sum_dims(g, dims, False), c) if need[2] else None,
            )
        return _values(values)

    def jvp(ctx, ts, xs, r):
        (tx, tw, tb), (x, w, _) = ts, xs
        xhat, rstd = _gn_parts(x, ctx.groups, ctx.eps)
        sh = _channel_shape(x.data_)
        dx = None
        if tx is not None:
            dx = _per_group(tx, xhat, rstd, ctx.groups)
            dx = dx if w is None else dx * ops.reshape(w, sh)
        return _lin(
            dx,
            None if tw is None else xhat * ops.reshape(tw, sh),
            None if tb is None else ops.reshape(tb, sh),
        )


def group_norm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """input normalised per sample over each group of num_groups groups of channels
    (dim 1), then scaled by weight and shifted by bias per channel."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "group_norm(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    xd = input.data_
    if xd.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {xd.ndim}"
        )
    n, c = xd.shape[0], xd.shape[1]
    _verify_batch_size([n * c // num_groups, num_groups] + list(xd.shape[2:]), plain=True)
    shape = list(xd.shape)
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {shape} and num_groups={num_groups}"
        )
    # (PyTorch's bias sentence shows the weight's shape: [0] for no weight)
    wshape = [0] if weight is None else list(weight.data_.shape)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.data_.ndim != 1 or t.data_.size != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {wshape} and input of shape {shape}"
            )
    _check_float(input, "GroupNormKernelImpl")
    return NativeGroupNorm.apply(input, weight, bias, groups=int(num_groups), eps=float(eps))


# ************************************************************ instance norm


def instance_norm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Each sample's channels normalised over their own positions: PyTorch's batch_norm
    of the input viewed as one sample of batch * channels channels (weight, bias and
    running statistics repeated per sample; the running ones then averaged back)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "instance_norm(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    size = input.shape
    if use_input_stats:
        spatial = 1
        for s in size[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {size}"
            )
    xd = input.data_
    b, c = xd.shape[0], xd.shape[1]

    def rep(t: Tensor | None) -> Tensor | None:
        return None if t is None else ops.repeat(t, b)

    rm, rv = rep(running_mean), rep(running_var)
    flat = ops.view(ops.contiguous(input), (1, b * c) + tuple(xd.shape[2:]))
    out = batch_norm(flat, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    with grad_mode.no_grad():
        for stat, tiled in ((running_mean, rm), (running_var, rv)):
            if stat is not None:
                stat.copy_(ops.mean(ops.view(tiled, (b, c)), 0))
    return ops.view(out, tuple(xd.shape))
