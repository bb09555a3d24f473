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
        mask = ctx.needs_input_grad
        if not any(mask):
            return None, None, None
        grads = ConvolutionGrads.apply(g, x, w, geo=ctx.geo, mask=mask)
        return tuple(t if need else None for t, need in zip(grads, mask, strict=True))

    def jvp(ctx, ts, xs, r):
        # bilinear: C(tx, w) + C(x, tw) + tb
        (tx, tw, tb), (x, w, _) = ts, xs
        out = _sum(
            None if tx is None else Convolution.apply(tx, w, None, geo=ctx.geo),
            None if tw is None else Convolution.apply(x, tw, None, geo=ctx.geo),
        )
        if tb is not None:
            bias = ops.reshape(tb, (-1,) + (1,) * (r.data_.ndim - 2))
            out = bias + ops.zeros_like(r) if out is None else out + bias
        return out


def _sum(*terms: Tensor | None) -> Tensor | None:
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _input_grad(gy: Tensor, x: Tensor, w: Tensor, geo: Geometry) -> Tensor:
    """C's adjoint in x: the input's gradient for an output gradient gy."""
    return ConvolutionGrads.apply(gy, x, w, geo=geo, mask=(True, False, False))[0]


def _weight_grad(gy: Tensor, x: Tensor, w: Tensor, geo: Geometry) -> Tensor:
    """C's adjoint in w: the weight's gradient for an output gradient gy."""
    return ConvolutionGrads.apply(gy, x, w, geo=geo, mask=(False, True, False))[1]


class ConvolutionGrads(Function):
    """a convolution's input, weight and bias gradients from the output's gradient
    (PyTorch's convolution_backward: outputs 0, 1, 2 of one node; the ones `mask`
    leaves out are zeros no one reads)"""

    grad_fn_name = "ConvolutionBackwardBackward0"
    multi_output = True

    def forward(ctx, gy, x, w, geo, mask):
        ctx.geo, ctx.mask = geo, mask
        ctx.save(gy, x, w)  # (as PyTorch's node: a second backward through it fails)
        g4, x4, w4 = _to4(gy.data_, geo), _to4(x.data_, geo), _to4(w.data_, geo)
        d = gy.data_
        if mask[0]:
            gx = _from4(_conv_input_adjoint(g4, w4, x4.shape, geo), geo)
        else:
            gx = np.broadcast_to(np.zeros((), d.dtype), x.data_.shape)
        if mask[1]:
            gw = _from4(_conv_weight_adjoint(x4, g4, w4.shape, geo), geo)
        else:
            gw = np.broadcast_to(np.zeros((), d.dtype), w.data_.shape)
        if len(mask) > 2 and mask[2]:
            gb = np.ascontiguousarray(torch_sum(d, (0, *range(2, d.ndim))))
        else:
            gb = np.broadcast_to(np.zeros((), d.dtype), (w.data_.shape[0],))
        return gx, gw, gb

    def backward(ctx, hx, hw, hb):
        gy, x, w = ctx.saved_tensors
        need_g, need_x, need_w = ctx.needs_input_grad
        geo = ctx.geo
        dg = dx = dw = None
        if need_g:
            spread = None
            if hb is not None:
                shape = gy.data_.shape
                spread = ops.expand(
                    ops.reshape(hb, (1, shape[1]) + (1,) * (len(shape) - 2)), *shape
                )
            dg = _sum(
                None if hx is None else Convolution.apply(hx, w, None, geo=geo),
                None if hw is None else Convolution.apply(x, hw, None, geo=geo),
                spread,
            )
        if need_x and hw is not None:
            dx = _input_grad(gy, x, hw, geo)
        if need_w and hx is not None:
            dw = _weight_grad(gy, hx, w, geo)
        return dg, dx, dw

    def jvp(ctx, ts, xs, r):
        (tg, tx, tw), (gy, x, w) = ts, xs
        geo = ctx.geo
        gx = _sum(
            None if tg is None else _input_grad(tg, x, w, geo),
            None if tw is None else _input_grad(gy, x, tw, geo),
        )
        gw = _sum(
            None if tg is None else _weight_grad(tg, x, w, geo),
            None if tx is None else _weight_grad(gy, tx, w, geo),
        )
        gb = None if tg is None else ops.sum_dims(tg, (0, *range(2, tg.data_.ndim)), False)
        return (
            gx if gx is not None else ops.zeros_like(r[0]),
            gw if gw is not None else ops.zeros_like(r[1]),
            gb if gb is not None else ops.zeros_like(r[2]),
        )


class ConstantPad(Function):
    """x padded with zeros after its spatial dims (PyTorch pads a copy so for a
    'same' convolution whose total padding is odd); a negative amount crops instead,
    as PyTorch's constant_pad_nd (its own backward) does"""

    grad_fn_name = "ConstantPadNdBackward0"

    def forward(ctx, x, after):
        ctx.after = after
        d = x.data_
        lead = d.ndim - len(after)
        crop = tuple(
            slice(None, d.shape[lead + i] + a if a < 0 else None) for i, a in enumerate(after)
        )
        d = d[(slice(None),) * lead + crop]
        if all(a <= 0 for a in after):
            return d.copy()
        return np.pad(d, [(0, 0)] * lead + [(0, max(a, 0)) for a in after])

    def backward(ctx, g):
        return (ConstantPad.apply(g, after=tuple(-a for a in ctx.after)),)

    def jvp(ctx, ts, xs, r):
        return ConstantPad.apply(ts[0], after=ctx.after)


def pad_after(x: Tensor, after: tuple[int, ...]) -> Tensor:
    """x with `after[i]` zeros after each of its last len(after) dims."""
    return ConstantPad.apply(x, after=after)


def convolution(x: Tensor, w: Tensor, b: Tensor | None, geo: Geometry) -> Tensor:
    """Run the Convolution row on checked operands (see convops.py)."""
    return Convolution.apply(x, w, b, geo=geo)
