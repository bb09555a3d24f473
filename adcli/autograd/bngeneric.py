"""batch_norm's backward on PyTorch's generic path, rounded as PyTorch 2.13's CPU.

PyTorch runs its vectorised backward kernels only when the input and the incoming
gradient are both contiguous (or both channels-last); otherwise (a gradient
expanded from `sum()` or `mean()`, a strided input) it walks each channel with
TensorIterator: the gradient's sum by at::sum, the dot product of (x - mean) and
the gradient added one element after another in double, in the iterator's order,
and the input gradient unfused in the input's dtype:
k = dotp * invstd * invstd / n, dx = (dy - sum / n - (x - mean) * k) * invstd * w.
"""

from __future__ import annotations

import numpy as np

from .storage import iterator_order, torch_strides
from .summation import torch_sum

_CL_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def _dense_in(x: np.ndarray, order: tuple[int, ...]) -> bool:
    """is_contiguous for the memory format whose dims, fastest first, are `order`."""
    expect = 1
    for d in order:
        if x.shape[d] != 1:
            if x.strides[d] != expect * x.itemsize:
                return False
            expect *= x.shape[d]
    return True


def channels_last_dense(x: np.ndarray) -> bool:
    """PyTorch's is_contiguous(channels_last) (4 dims) or (channels_last_3d) (5)."""
    order = _CL_ORDER.get(x.ndim)
    return order is not None and _dense_in(x, order)


def _is_contiguous(x: np.ndarray) -> bool:
    """PyTorch's is_contiguous in any of the contiguous and channels-last formats."""
    return bool(x.flags.c_contiguous) or channels_last_dense(x)


def suggest_channels_last(x: np.ndarray) -> bool:
    """suggest_memory_format() is channels-last: is_channels_last_strides_2d / _3d,
    ambiguous layouts (a 0 channel stride, N111) counting as contiguous."""
    order = _CL_ORDER.get(x.ndim)
    st = torch_strides(x)
    if order is None or st[1] == 0:
        return False
    least = 0
    for d in order:
        if x.shape[d] == 0 or st[d] < least:
            return False
        if d == 0 and least == st[1]:
            return False
        least = st[d] * (x.shape[d] if x.shape[d] > 1 else 1)
    return True


def laid_out(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """v (x's shape) in the memory format PyTorch gives a result allocated
    empty_like(x, x.suggest_memory_format()): channels-last or contiguous."""
    if not suggest_channels_last(x):
        # a fresh C-order array: size-1 dims get PyTorch's strides too
        return v if v.strides == np.empty(v.shape, v.dtype).strides else v.copy(order="C")
    last = (0, *range(2, x.ndim), 1)
    back = (0, x.ndim - 1, *range(1, x.ndim - 1))
    return np.ascontiguousarray(np.transpose(v, last)).transpose(back)


def kernel_layouts(x: np.ndarray, g: np.ndarray) -> bool:
    """Whether PyTorch's backward takes its vectorised kernels (all_contiguous)."""
    return (
        _is_contiguous(x)
        and _is_contiguous(g)
        and suggest_channels_last(x) == suggest_channels_last(g)
    )


def _channel_walk(v: np.ndarray, order: list[int]) -> np.ndarray:
    """v as (channels, elements), each channel's elements in the iterator's order."""
    return np.transpose(v, [1, *order]).reshape(v.shape[1], -1)


def generic_backward(
    g: np.ndarray,
    x: np.ndarray,
    w: np.ndarray | None,
    mean: np.ndarray,
    invstd: np.ndarray,
    train: bool,
    need: tuple[bool, bool, bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(dx, dweight, dbias) as batch_norm_backward_cpu_template's generic path; g has
    x's shape (any strides, a broadcast 0)."""
    dt = x.dtype.type
    c = x.shape[1]
    n = x.size // c
    dims = (0, *range(2, x.ndim))
    sh = (1, c) + (1,) * (x.ndim - 2)
    squashed = x.shape[:1] + (1,) + x.shape[2:]
    order = [d for d in iterator_order(squashed, (torch_strides(x), torch_strides(g))) if d != 1]
    mean = mean.astype(dt)
    invstd = invstd.astype(dt)
    wv = np.ones(c, dt) if w is None else w.astype(dt)
    with np.errstate(all="ignore"):
        total = torch_sum(g, dims)
        terms = (_channel_walk(x, order) - mean[:, None]) * _channel_walk(g, order)
        # one double accumulator per channel, from +0, one term after another
        walk = np.concatenate([np.zeros((c, 1)), terms.astype(np.float64)], axis=1)
        dotp = np.add.accumulate(walk, axis=1)[:, -1]
        dx = None
        if need[0]:
            if train:
                k = dotp.astype(dt) * invstd * invstd / dt(n)
                gi = (x - mean.reshape(sh)) * k.reshape(sh)
                dx = (g - (total / dt(n)).reshape(sh) - gi) * invstd.reshape(sh) * wv.reshape(sh)
            else:
                dx = g * invstd.reshape(sh) * wv.reshape(sh)
            dx = laid_out(dx.astype(dt, copy=False), x)
        grad_w = (dotp * invstd.astype(np.float64)).astype(dt) if need[1] else None
    return dx, grad_w, (total.astype(dt) if need[2] else None)
