"""Convolution (`F.conv1d`, `F.conv2d`) as PyTorch's `at::convolution` computes it,
declared as operation rows like those of functions.py: forward on NumPy arrays,
backward in Tensor operations, so gradients of gradients work.

A convolution y = C(x, w) is bilinear, and so are its two adjoints, the gradient
with respect to the input (a transposed convolution of the output gradient with
the weight) and the one with respect to the weight (a correlation of the input
with the output gradient). Each row's backward is made of the three, so double
backward never leaves them. The kernels gather every window at once through
`as_strided` (no copy) and multiply by the weight with one matrix product per
group; float32 is computed in float64 and rounded once (PyTorch's oneDNN kernel
sums in its own order, so its last bit may differ from any fixed order).

One-dimensional convolutions run as two-dimensional ones of height 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import ops
from .node import Function
from .summation import torch_sum
from .tensor import Tensor

__all__ = ["Geometry", "conv_output_size", "convolution", "pad_after"]


@dataclass(frozen=True)
class Geometry:
    """A 2-d convolution's layout: per spatial dim the stride, the padding before and
    after, and the dilation; the groups; and how many spatial dims the caller's
    tensors have (1: conv1d, run with a height of 1)."""

    stride: tuple[int, int]
    pads: tuple[tuple[int, int], tuple[int, int]]
    dilation: tuple[int, int]
    groups: int
    spatial: int


def conv_output_size(size: int, k: int, geo: Geometry, d: int) -> int:
    """The output length along spatial dim d (may be < 1 when the kernel does not fit)."""
    lo, hi = geo.pads[d]
    return (size + lo + hi - geo.dilation[d] * (k - 1) - 1) // geo.stride[d] + 1


def _to4(a: np.ndarray, geo: Geometry) -> np.ndarray:
    return a[:, :, None, :] if geo.spatial == 1 else a


def _from4(a: np.ndarray, geo: Geometry) -> np.ndarray:
    return a[:, :, 0, :] if geo.spatial == 1 else a


def _wide(a: np.ndarray) -> np.ndarray:
    """float32 and float16 widened to float64 (rounded once at the end); others as
    they are."""
    return a.astype(np.float64) if a.dtype in (np.float32, np.float16) else a


def _windows(x: np.ndarray, k: tuple[int, int], out: tuple[int, int], geo: Geometry) -> Any:
    """Every window of the padded x: (N, C, OH, OW, kh, kw), a view."""
    (t, b), (left, r) = geo.pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r))) if t or b or left or r else x
    xp = np.ascontiguousarray(xp)
    n, c = xp.shape[:2]
    s0, s1, s2, s3 = xp.strides
    (sh, sw), (dh, dw) = geo.stride, geo.dilation
    return as_strided(xp, (n, c, *out, *k), (s0, s1, s2 * sh, s3 * sw, s2 * dh, s3 * dw))


def _columns(x: np.ndarray, k: tuple[int, int], out: tuple[int, int], geo: Geometry) -> Any:
    """The windows per group as matrices: (groups, N * OH * OW, C/groups * kh * kw)."""
    win = _windows(x, k, out, geo)
    n, c = x.shape[:2]
    g = geo.groups
    win = win.reshape(n, g, c // g, *out, *k).transpose(1, 0, 3, 4, 2, 5, 6)
    return win.reshape(g, n * out[0] * out[1], (c // g) * k[0] * k[1])


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, geo: Geometry) -> np.ndarray:
    """y = C(x, w) + b on 4-d arrays of one dtype."""
    dt = x.dtype
    x, w = _wide(x), _wide(w)
    n = x.shape[0]
    o, _, kh, kw = w.shape
    g = geo.groups
    out = (conv_output_size(x.shape[2], kh, geo, 0), conv_output_size(x.shape[3], kw, geo, 1))
    cols = _columns(x, (kh, kw), out, geo)
    wm = w.reshape(g, o // g, -1).transpose(0, 2, 1)  # (g, C/g*kh*kw, O/g)
    y = np.matmul(cols, wm)  # (g, N*OH*OW, O/g)
    y = y.reshape(g, n, *out, o // g).transpose(1, 0, 4, 2, 3).reshape(n, o, *out)
    if b is not None:
        y = y + _wide(b)[:, None, None]
    return np.ascontiguousarray(y, dtype=dt)


def _conv_input_adjoint(
    gy: np.ndarray, w: np.ndarray, shape: tuple[int, ...], geo: Geometry
) -> np.ndarray:
    """The gradient with respect to an input of 4-d `shape`: each output position's
    gradient spread back over its window through the weight."""
    dt = gy.dtype
    gy, w = _wide(gy), _wide(w)
    n, oc, oh, ow = gy.shape
    _, cg, kh, kw = w.shape
    g = geo.groups
    (t, b), (left, r) = geo.pads
    (sh, sw), (dh, dw) = geo.stride, geo.dilation
    # (g, N*OH*OW, O/g) @ (g, O/g, C/g*kh*kw): each window's share, then scattered
    gm = gy.reshape(n, g, oc // g, oh, ow).transpose(1, 0, 3, 4, 2)
    gm = gm.reshape(g, n * oh * ow, oc // g)
    cols = np.matmul(gm, w.reshape(g, oc // g, -1))
    cols = cols.reshape(g, n, oh, ow, cg, kh, kw).transpose(1, 0, 4, 5, 6, 2, 3)
    cols = cols.reshape(n, g * cg, kh, kw, oh, ow)
    hp, wp = shape[2] + t + b, shape[3] + left + r
    gx = np.zeros((n, shape[1], hp, wp), gy.dtype)
    for i in range(kh):
        for j in range(kw):
            hs, ws = i * dh, j * dw
            gx[:, :, hs : hs + sh * (oh - 1) + 1 : sh, ws : ws + sw * (ow - 1) + 1 : sw] += cols[
                :, :, i, j
            ]
    return np.ascontiguousarray(gx[:, :, t : t + shape[2], left : left + shape[3]], dtype=dt)


def _conv_weight_adjoint(
    x: np.ndarray, gy: np.ndarray, shape: tuple[int, ...], geo: Geometry
) -> np.ndarray:
    """The gradient with respect to a weight of 4-d `shape`: each window of x weighed
    by the output gradient there, summed over the batch and the positions."""
    dt = x.dtype
    x, gy = _wide(x), _wide(gy)
    n, oc, oh, ow = gy.shape
    g = geo.groups
    cols = _columns(x, tuple(shape[2:]), (oh, ow), geo)  # (g, N*OH*OW, C/g*kh*kw)
    gm = gy.reshape(n, g, oc // g, oh, ow).transpose(1, 2, 0, 3, 4)
    gm = gm.reshape(g, oc // g, n * oh * ow)
    gw = np.matmul(gm, cols)  # (g, O/g, C/g*kh*kw)
    return np.ascontiguousarray(gw.reshape(shape), dtype=dt)


class Convolution(Function):
    """y = C(x, w) (+ bias per output channel), PyTorch's `convolution`."""

    grad_fn_name = "ConvolutionBackward0"

    def forward(ctx, x, w, b, geo):
        ctx.geo = geo
        ctx.save(x, w)
        y = _conv(_to4(x.data_, geo), _to4(w.data_, geo), None if b is None else b.data_, geo)
        return _from4(y, geo)

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        geo = ctx.geo
        need_x, need_w, need_b = ctx.needs_input_grad
        # PyTorch's convolution_backward node takes (grad_output, input, weight)
        gx = ConvInputAdjoint.apply(g, x, w, geo=geo) if need_x else None
        gw = ConvWeightAdjoint.apply(g, x, w, geo=geo) if need_w else None
        gb = ConvBiasGrad.apply(g, x, w) if need_b else None
        return gx, gw, gb

    def jvp(ctx, ts, xs, r):
        # bilinear: C(tx, w) + C(x, tw) + tb
        (tx, tw, tb), (x, w, _) = ts, xs
        out = None
        for term in (
            None if tx is None else Convolution.apply(tx, w, None, geo=ctx.geo),
            None if tw is None else Convolution.apply(x, tw, None, geo=ctx.geo),
        ):
            if term is not None:
                out = term if out is None else out + term
        if tb is not None:
            bias = ops.reshape(tb, (-1,) + (1,) * (r.data_.ndim - 2))
            out = bias + ops.zeros_like(r) if out is None else out + bias
        return out


class ConvInputAdjoint(Function):
    """a convolution's input gradient, from the output's gradient and the weight

    (PyTorch's convolution_backward, whose node is ConvolutionBackwardBackward0: its
    inputs are the output's gradient, the input, only for its shape, and the weight)"""

    grad_fn_name = "ConvolutionBackwardBackward0"

    def forward(ctx, gy, x, w, geo):
        ctx.geo = geo
        ctx.save(gy, w)
        shape = x.data_.shape
        s4 = shape if geo.spatial == 2 else (shape[0], shape[1], 1, shape[2])
        return _from4(_conv_input_adjoint(_to4(gy.data_, geo), _to4(w.data_, geo), s4, geo), geo)

    def backward(ctx, h):
        gy, w = ctx.saved_tensors
        need_g, _, need_w = ctx.needs_input_grad
        geo = ctx.geo
        dg = Convolution.apply(h, w, None, geo=geo) if need_g else None
        dw = ConvWeightAdjoint.apply(gy, h, w, geo=geo) if need_w else None
        return dg, None, dw

    def jvp(ctx, ts, xs, r):
        (tg, _, tw), (gy, x, w) = ts, xs
        a = None if tg is None else ConvInputAdjoint.apply(tg, x, w, geo=ctx.geo)
        b = None if tw is None else ConvInputAdjoint.apply(gy, x, tw, geo=ctx.geo)
        return b if a is None else (a if b is None else a + b)


class ConvWeightAdjoint(Function):
    """a convolution's weight gradient, from the input and the output's gradient

    (PyTorch's convolution_backward, whose node is ConvolutionBackwardBackward0: its
    inputs are the output's gradient, the input, and the weight, only for its shape)"""

    grad_fn_name = "ConvolutionBackwardBackward0"

    def forward(ctx, gy, x, w, geo):
        ctx.geo = geo
        ctx.save(gy, x)
        shape = w.data_.shape
        s4 = shape if geo.spatial == 2 else (shape[0], shape[1], 1, shape[2])
        return _from4(_conv_weight_adjoint(_to4(x.data_, geo), _to4(gy.data_, geo), s4, geo), geo)

    def backward(ctx, k):
        gy, x = ctx.saved_tensors
        need_g, need_x, _ = ctx.needs_input_grad
        geo = ctx.geo
        dg = Convolution.apply(x, k, None, geo=geo) if need_g else None
        dx = ConvInputAdjoint.apply(gy, x, k, geo=geo) if need_x else None
        return dg, dx, None

    def jvp(ctx, ts, xs, r):
        (tg, tx, _), (gy, x, w) = ts, xs
        a = None if tg is None else ConvWeightAdjoint.apply(tg, x, w, geo=ctx.geo)
        b = None if tx is None else ConvWeightAdjoint.apply(gy, tx, w, geo=ctx.geo)
        return b if a is None else (a if b is None else a + b)


class ConvBiasGrad(Function):
    """a convolution's bias gradient: the output's gradient summed per channel

    (PyTorch's convolution_backward, whose node is ConvolutionBackwardBackward0: it is
    recorded when the output's gradient, the input or the weight requires grad)"""

    grad_fn_name = "ConvolutionBackwardBackward0"

    def forward(ctx, gy, x, w):
        ctx.shape = gy.data_.shape
        ctx.save(gy, x, w)  # (PyTorch's node saves them: a second backward fails)
        d = gy.data_
        return np.ascontiguousarray(torch_sum(d, (0, *range(2, d.ndim))))

    def backward(ctx, h):
        ctx.saved_tensors  # noqa: B018 (the check that they were not freed)
        shape = ctx.shape
        spread = ops.reshape(h, (1, shape[1]) + (1,) * (len(shape) - 2))
        return (ops.expand(spread, *shape) if ctx.needs_input_grad[0] else None), None, None

    def jvp(ctx, ts, xs, r):
        tg = ts[0]
        return None if tg is None else ops.sum_dims(tg, (0, *range(2, tg.data_.ndim)), False)


class ConstantPad(Function):
    """x padded with zeros after its spatial dims (PyTorch pads a copy so for a
    'same' convolution whose total padding is odd)"""

    grad_fn_name = "ConstantPadNdBackward0"

    def forward(ctx, x, after):
        ctx.after = after
        d = x.data_
        return np.pad(d, [(0, 0)] * (d.ndim - len(after)) + [(0, a) for a in after])

    def backward(ctx, g):
        out = g
        nd = g.data_.ndim
        for i, a in enumerate(ctx.after):
            if a:
                dim = nd - len(ctx.after) + i
                out = ops.narrow(out, dim, 0, g.data_.shape[dim] - a)
        return (out,)

    def jvp(ctx, ts, xs, r):
        return ConstantPad.apply(ts[0], after=ctx.after)


def pad_after(x: Tensor, after: tuple[int, ...]) -> Tensor:
    """x with `after[i]` zeros after each of its last len(after) dims."""
    return ConstantPad.apply(x, after=after)


def convolution(x: Tensor, w: Tensor, b: Tensor | None, geo: Geometry) -> Tensor:
    """Run the Convolution row on checked operands (see convops.py)."""
    return Convolution.apply(x, w, b, geo=geo)
