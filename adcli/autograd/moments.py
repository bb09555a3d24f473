"""var, std and the 2-norm as PyTorch 2.13's CPU kernels compute them, to the last bit.

One output element (a whole-tensor variance): two passes in double, PyTorch's
`std_var_all_cpu`: the mean as `mean()` gives it, then the squared deviations summed
one after the other in memory order. Several outputs: Welford's update in double per
output (`WelfordOps`), over the reduced elements in memory order. The result is
rounded to the input's dtype once, after the square root for std.
"""

from __future__ import annotations

import math

import numpy as np

from .extremes import iterator_layout
from .kernels32 import fma
from .summation import torch_mean

__all__ = ["torch_norm2", "torch_var"]

#: reductions longer than this keep NumPy's two-pass result (the update loop is Python)
_LIMIT = 1 << 14


def _memory_order(x: np.ndarray, axes: list[int]) -> list[int]:
    """`axes` sorted slowest first, so C order over them walks memory forwards."""
    return sorted(axes, key=lambda d: -abs(x.strides[d]))


def torch_var(
    x: np.ndarray, dims: tuple[int, ...], correction: float, keepdim: bool, take_sqrt: bool
) -> np.ndarray:
    """PyTorch's var (or std) of float32/float64 `x` over `dims`."""
    dims = tuple(sorted(dims))
    kept = [d for d in range(x.ndim) if d not in dims]
    k = math.prod(x.shape[d] for d in dims)
    outputs = math.prod(x.shape[d] for d in kept)
    out_shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    if outputs == 1 and x.size:
        r = np.asarray(_all(x, correction, take_sqrt)).astype(x.dtype).reshape(out_shape)
    elif k == 0 or outputs == 0 or k > _LIMIT:
        r = _numpy(x, dims, correction, take_sqrt)
    else:
        r = _welford(x, dims, kept, k, correction, take_sqrt).reshape(out_shape)
    return r if keepdim else r.reshape(tuple(x.shape[d] for d in kept))


def _numpy(x: np.ndarray, dims: tuple[int, ...], correction: float, take_sqrt: bool) -> np.ndarray:
    fn = np.std if take_sqrt else np.var
    return np.asarray(fn(x, axis=dims, ddof=correction, keepdims=True), x.dtype)


def _all(x: np.ndarray, correction: float, take_sqrt: bool) -> np.float64:
    """std_var_all_cpu: the mean, then sum((x - mean)**2) in double, in memory order."""
    mean = float(torch_mean(x, None))
    flat = np.transpose(x, _memory_order(x, list(range(x.ndim)))).reshape(-1)
    dx = flat.astype(np.float64) - mean
    total = np.cumsum(dx * dx)[-1]  # one after the other, as its loop adds
    with np.errstate(divide="ignore", invalid="ignore"):
        var = total / np.float64(max(0.0, x.size - correction))
        return np.sqrt(var) if take_sqrt else var


def _welford(
    x: np.ndarray,
    dims: tuple[int, ...],
    kept: list[int],
    k: int,
    correction: float,
    take_sqrt: bool,
) -> np.ndarray:
    """WelfordOps in double per output, the reduced elements in memory order."""
    order = kept + _memory_order(x, list(dims))
    data = np.transpose(x, order).reshape(-1, k).astype(np.float64)
    mean = np.zeros(data.shape[0])
    m2 = np.zeros(data.shape[0])
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(k):
            v = data[:, i]
            delta = v - mean
            mean = mean + delta / float(i + 1)
            m2 = m2 + delta * (v - mean)
    divisor = np.float64(k - correction if k > correction else 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = m2 / divisor
        out = np.sqrt(var) if take_sqrt else var
    return out.astype(x.dtype)  # (the outputs in the order of the kept dims)


def torch_norm2(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """PyTorch's 2-norm of float32/float64 `x` over `dims`: where its TensorIterator
    leaves one contiguous reduced dim innermost, the vectorized kernel (lanes of
    x*x sums, folded in order, the tail added one by one with a fused multiply-add);
    elsewhere each output's squares added in memory order. (Measured: float64
    bit-equal; float32 nearly.)"""
    dims = tuple(sorted(dims))
    out_shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    kept = [d for d in range(x.ndim) if d not in dims]
    k = math.prod(x.shape[d] for d in dims)
    if x.size == 0 or k > _LIMIT:
        r = np.sqrt(np.sum(x * x, axis=dims, keepdims=True))
    else:
        order = kept + _memory_order(x, list(dims))
        data = np.transpose(x, order).reshape(-1, k)
        r = (_lastdim(data) if _reduces_lastdim(x, dims) else _in_order(data)).reshape(out_shape)
    r = np.asarray(r, x.dtype)
    return r if keepdim else r.reshape(tuple(x.shape[d] for d in kept))


def _reduces_lastdim(x: np.ndarray, dims: tuple[int, ...]) -> bool:
    out = np.empty(tuple(1 if d in dims else n for d, n in enumerate(x.shape)), np.int8)
    out_st = [0 if (d in dims and x.shape[d] != 1) else s for d, s in enumerate(out.strides)]
    in_st = [s // x.itemsize for s in x.strides]
    shape, (o, i) = iterator_layout(list(x.shape), [out_st, in_st])
    reduced = [d for d in range(len(shape)) if o[d] == 0 and shape[d] != 1]
    return reduced == [0] and i[0] == 1


def _lastdim(data: np.ndarray) -> np.ndarray:
    v = 32 // data.itemsize
    n = data.shape[1]
    full = n - n % v
    with np.errstate(over="ignore", invalid="ignore"):
        acc = np.zeros((data.shape[0], v), data.dtype)
        for d in range(0, full, v):
            block = data[:, d : d + v]
            acc = acc + block * block
        total = acc[:, 0]
        for j in range(1, v):
            total = total + acc[:, j]
        for d in range(full, n):
            total = fma(data[:, d], data[:, d], total)
        return np.sqrt(total)


def _in_order(data: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.zeros(data.shape[0], data.dtype)
        for d in range(data.shape[1]):
            total = total + data[:, d] * data[:, d]
        return np.sqrt(total)
