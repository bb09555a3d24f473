"""`F.max_pool2d` and `F.avg_pool2d`: PyTorch's CPU pooling kernels, declared as
operation rows (forward on NumPy arrays, backward in Tensor operations).

Max pooling keeps, per window, the first largest element (row-major, a strict `>`
as PyTorch's loop has it), the last NaN when there is one, and the first element
inside the input when all are -inf; its backward adds each output's gradient at
that element, in the order of the outputs. Average pooling sums a window in
PyTorch's order (rows, then columns) in the input's dtype and divides once; its
backward adds each output's share in the order of the outputs too, so float32
results are PyTorch's bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import ops
from .node import Function
from .tensor import Tensor

__all__ = ["avg_pool2d", "max_pool2d", "max_pool2d_torch"]


@dataclass(frozen=True)
class Pool:
    """A 2-d pooling's layout: kernel, stride, padding, dilation, output size."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    out: tuple[int, int]


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling_output_shape: a last window may start in the padding after
    the input only in ceil mode, and never past it."""
    n = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = n // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pair(fn: str, name: str, value: Any, default: tuple[int, int] | None = None) -> Any:
    """A pooling size argument: one int for both dims, or one or two ints (stride:
    None or [] for the kernel's), else PyTorch's sentence."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if default is not None and (value is None or value == [] or value == ()):
        return default
    if isinstance(value, (list, tuple)):
        if len(value) in (1, 2):
            return (int(value[0]), int(value[-1]))
        omitted = "omitted, " if name == "stride" else ""
        raise RuntimeError(
            f"{fn}: {name} must either be {omitted}a single int, or a tuple of two ints"
        )
    return (int(value), int(value))


def _check_pad(p: int, k: int, d: int) -> None:
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={p}, "
            f"kernel_size={k} and dilation={d}"
        )


def _layout(
    fn: str,
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    divisor_override: Any = None,
) -> Pool:
    """PyTorch's argument parsing, output size and pool2d_shape_check, in its order."""
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {ops._type_name(x)}"
        )
    k = _pair(fn, "kernel_size", kernel_size)
    s = _pair(fn, "stride", stride, k)
    p = _pair(fn, "padding", padding)
    d = _pair(fn, "dilation", dilation)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    shape = x.data_.shape
    nd = len(shape)
    # PyTorch reads size(-3) first: avg_pool2d of any smaller input fails there, and
    # max_pool2d of a 1-d one (a 2-d one reaches the rank check below)
    if nd < (2 if fn == "max_pool2d" else 3):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
            f"{max(nd, 1) - 1}], but got -3)"
        )
    h, w = shape[-2:] if nd >= 2 else (0, 0)
    for i in range(2):
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        _check_pad(p[i], k[i], d[i])
    out = (
        _out_size(h, k[0], s[0], p[0], d[0], ceil_mode),
        _out_size(w, k[1], s[1], p[1], d[1], ceil_mode),
    )
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}"
        )
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(
            f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}"
        )
    if fn == "max_pool2d" and nd not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if not ((nd == 3 and 0 not in shape) or (nd == 4 and 0 not in shape[1:])):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{list(shape)}"
        )
    if k[1] // 2 < p[1] or k[0] // 2 < p[0]:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}"
        )
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(
            f"Given input size: ({shape[-3]}x{h}x{w}). Calculated output size: "
            f"({shape[-3]}x{out[0]}x{out[1]}). Output size is too small"
        )
    if x.data_.dtype == np.bool_:
        raise NotImplementedError(f"\"{fn}\" not implemented for 'Bool'")
    return Pool(k, s, p, d, out)


def _padded(x: np.ndarray, pool: Pool, fill: Any) -> np.ndarray:
    """x (..., H, W) in a frame wide enough for every window, `fill` outside."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = pool.kernel, pool.stride, pool.padding, pool.dilation
    h, w = x.shape[-2:]
    hp = max(h + 2 * ph, (pool.out[0] - 1) * sh + (kh - 1) * dh + 1)
    wp = max(w + 2 * pw, (pool.out[1] - 1) * sw + (kw - 1) * dw + 1)
    xp = np.full((*x.shape[:-2], hp, wp), fill, x.dtype)
    xp[..., ph : ph + h, pw : pw + w] = x
    return xp


def _windows(xp: np.ndarray, pool: Pool) -> Any:
    """(..., OH, OW, kh, kw): every window of the padded frame, a view."""
    lead = xp.shape[:-2]
    st = xp.strides
    (sh, sw), (dh, dw) = pool.stride, pool.dilation
    return as_strided(
        xp,
        (*lead, *pool.out, *pool.kernel),
        (*st[:-2], st[-2] * sh, st[-1] * sw, st[-2] * dh, st[-1] * dw),
    )


def _argmax(x: np.ndarray, pool: Pool) -> np.ndarray:
    """Each window's chosen element as a flat index into its (H, W) plane."""
    h, w = x.shape[-2:]
    k = pool.kernel[0] * pool.kernel[1]
    lead = x.shape[:-2]
    inside = _windows(_padded(np.ones((h, w), bool), pool, False), pool).reshape(*pool.out, k)
    vals = _windows(_padded(x, pool, 0), pool).reshape(*lead, *pool.out, k)
    if x.dtype.kind == "f":
        nan = np.isnan(vals) & inside
        low = np.where(inside, vals, -np.inf)
        top = low.max(axis=-1, keepdims=True)
        first = np.argmax((vals == top) & inside, axis=-1)
        last_nan = k - 1 - np.argmax(nan[..., ::-1], axis=-1)
        pick = np.where(nan.any(axis=-1), last_nan, first)
    else:
        low = np.where(inside, vals, np.iinfo(x.dtype).min if x.dtype.kind in "iu" else False)
        top = low.max(axis=-1, keepdims=True)
        pick = np.argmax((vals == top) & inside, axis=-1)
    (sh, sw), (ph, pw), (dh, dw) = pool.stride, pool.padding, pool.dilation
    oh = np.arange(pool.out[0])[:, None]
    ow = np.arange(pool.out[1])[None, :]
    row = oh * sh - ph + (pick // pool.kernel[1]) * dh
    col = ow * sw - pw + (pick % pool.kernel[1]) * dw
    return (row * w + col).astype(np.int64)


def _planes(index: np.ndarray) -> np.ndarray:
    """(..., OH, OW) indices as (..., OH * OW)."""
    return index.reshape(*index.shape[:-2], pool_size(index))


def pool_size(index: np.ndarray) -> int:
    """The outputs per plane."""
    return int(index.shape[-2] * index.shape[-1])


def _zeros_of(ctx: Function) -> Tensor:
    """zeros_like(self): PyTorch's gradient for the input of a pooling's backward."""
    (a,) = ctx.saved_tensors
    return Tensor._make(np.zeros(a.data_.shape, a.data_.dtype))


class MaxPool2d(Function):
    """the largest element of each window (PyTorch's max_pool2d_with_indices)"""

    grad_fn_name = "MaxPool2DWithIndicesBackward0"

    def forward(ctx, a, pool):
        x = a.data_
        idx = _argmax(x, pool)
        ctx.save(a)
        ctx.index, ctx.shape = idx, x.shape
        flat = x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])
        out = np.take_along_axis(flat, _planes(idx), axis=-1)
        return np.ascontiguousarray(out.reshape(idx.shape))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (MaxPool2dAdjoint.apply(g, a, index=ctx.index),)

    def jvp(ctx, ts, xs, r):
        idx = ctx.index
        sh = ts[0].data_.shape
        flat = ops.reshape(ts[0], (*sh[:-2], sh[-2] * sh[-1]))
        picked = ops.gather(flat, -1, Tensor._make(_planes(idx)))
        return ops.reshape(picked, idx.shape)


class MaxPool2dAdjoint(Function):
    """max pooling's input gradient: each output's gradient added at its element"""

    grad_fn_name = "MaxPool2DWithIndicesBackwardBackward0"

    def forward(ctx, g, a, index):
        # `a`, the pooled input, is an operand as in PyTorch (its gradient is zero)
        ctx.index = index
        ctx.save(a)
        shape = a.data_.shape
        lead = shape[:-2]
        n = math.prod(lead)
        out = np.zeros((n, shape[-2] * shape[-1]), g.data_.dtype)
        plane = out.shape[1]
        idx = index.reshape(n, pool_size(index))
        idx = idx + (np.arange(n, dtype=np.int64) * plane)[:, None]
        # np.add.at adds one by one in the outputs' order, as PyTorch's loop does
        np.add.at(out.reshape(-1), idx.reshape(-1), g.data_.reshape(idx.size))
        return out.reshape(shape)

    def backward(ctx, gg):
        idx = ctx.index
        sh = gg.data_.shape
        flat = ops.reshape(gg, (*sh[:-2], sh[-2] * sh[-1]))
        picked = ops.gather(flat, -1, Tensor._make(_planes(idx)))
        zero = _zeros_of(ctx) if ctx.needs_input_grad[1] else None
        return ops.reshape(picked, idx.shape), zero

    def jvp(ctx, ts, xs, r):
        if ts[0] is None:
            return None
        return MaxPool2dAdjoint.apply(ts[0], xs[1], index=ctx.index)


def _divisors(
    h: int, w: int, pool: Pool, count_include_pad: bool, divisor: int | None
) -> np.ndarray:
    """Each output's divisor (OH, OW), as PyTorch's avg_pool2d computes it."""

    def spans(size: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        start = np.arange(pool.out[d]) * pool.stride[d] - pool.padding[d]
        end = np.minimum(start + pool.kernel[d], size + pool.padding[d])
        full = end - start
        return full, np.maximum(start, 0), np.minimum(end, size)

    fh, h0, h1 = spans(h, 0)
    fw, w0, w1 = spans(w, 1)
    if divisor is not None:
        return np.full(pool.out, divisor, np.int64)
    if count_include_pad:
        return fh[:, None] * fw[None, :]
    return np.maximum(h1 - h0, 0)[:, None] * np.maximum(w1 - w0, 0)[None, :]


class AvgPool2d(Function):
    """the mean of each window (PyTorch's avg_pool2d)"""

    grad_fn_name = "AvgPool2DBackward0"

    def forward(ctx, a, pool, divisors):
        x = a.data_
        ctx.save(a)
        ctx.pool, ctx.divisors, ctx.shape = pool, divisors, x.shape
        win = _windows(_padded(x, pool, 0), pool)
        total = np.zeros((*x.shape[:-2], *pool.out), x.dtype)
        for i in range(pool.kernel[0]):  # PyTorch's order: rows, then columns
            for j in range(pool.kernel[1]):
                total += win[..., i, j]
        div = np.where(divisors == 0, 1, divisors)  # (an all-padding window: 0 / 1)
        if x.dtype.kind == "f":
            return total / div.astype(x.dtype)
        q = np.abs(total) // div  # C's integer division truncates
        return np.where(total < 0, -q, q).astype(x.dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (AvgPool2dAdjoint.apply(g, a, pool=ctx.pool, divisors=ctx.divisors),)

    def jvp(ctx, ts, xs, r):
        return AvgPool2d.apply(ts[0], pool=ctx.pool, divisors=ctx.divisors)


class AvgPool2dAdjoint(Function):
    """average pooling's input gradient: each output's share added over its window"""

    grad_fn_name = "AvgPool2DBackwardBackward0"

    def forward(ctx, g, a, pool, divisors):
        # `a`, the pooled input, is an operand as in PyTorch (its gradient is zero);
        # PyTorch saves nothing here, so a second backward through this node works
        ctx.pool, ctx.divisors = pool, divisors
        shape = a.data_.shape
        ctx.zeros = (shape, a.data_.dtype)
        dt = g.data_.dtype
        share = g.data_ / np.where(divisors == 0, 1, divisors).astype(dt)
        (ph, pw), h, w = pool.padding, shape[-2], shape[-1]
        frame = _padded(np.zeros(shape, dt), pool, 0)
        (sh, sw), (kh, kw) = pool.stride, pool.kernel
        oh, ow = pool.out
        # PyTorch adds output by output; for one input element the later outputs are
        # the earlier window offsets, so the offsets run backwards
        for i in reversed(range(kh)):
            for j in reversed(range(kw)):
                frame[..., i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw] += share
        return np.ascontiguousarray(frame[..., ph : ph + h, pw : pw + w])

    def backward(ctx, gg):
        zero = Tensor._make(np.zeros(*ctx.zeros)) if ctx.needs_input_grad[1] else None
        return AvgPool2d.apply(gg, pool=ctx.pool, divisors=ctx.divisors), zero

    def jvp(ctx, ts, xs, r):
        if ts[0] is None:
            return None
        return AvgPool2dAdjoint.apply(ts[0], xs[1], pool=ctx.pool, divisors=ctx.divisors)


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """The largest element of each window of (N, C, H, W) or (C, H, W) input; with
    `return_indices`, also each one's flat position in its (H, W) plane."""
    pool = _layout("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    out = MaxPool2d.apply(input, pool=pool)
    if not return_indices:
        return out
    idx = _argmax(input.data_, pool)
    return out, Tensor._make(idx)


def max_pool2d_torch(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """`torch.max_pool2d`: F.max_pool2d without return_indices (stride [] is the kernel)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window of (N, C, H, W) or (C, H, W) input."""
    pool = _layout(
        "avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode, divisor_override
    )
    h, w = input.data_.shape[-2:]
    div = _divisors(h, w, pool, count_include_pad, divisor_override)
    return AvgPool2d.apply(input, pool=pool, divisors=div)
