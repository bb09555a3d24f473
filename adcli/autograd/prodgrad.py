"""cumprod's kernel and its gradient's values without grad mode, as PyTorch 2.13's.

prod's gradient where the input has zeros runs through cumprod too (see
`ops.prod_others`), so its NaN and signed zeros land where cumprod's masked formula
puts them. Everything here works along the last axis on NumPy arrays; the caller
moves the reduced dim there.
"""

from __future__ import annotations

import numpy as np

from .summation import torch_sum

__all__ = ["cumprod"]


def cumprod(x: np.ndarray) -> np.ndarray:
    """Running product along the last axis, as PyTorch's CPU kernel: accumulated in
    double for float32 (each step rounded to float32 only in the output)."""
    if x.dtype == np.float32:
        return np.cumprod(x, -1, dtype=np.float64).astype(np.float32)
    return np.cumprod(x, -1)


def _rev_cumsum(w: np.ndarray) -> np.ndarray:
    """PyTorch's `reversed_cumsum`: flip, cumsum (in double for float32), flip."""
    acc = np.float64 if w.dtype == np.float32 else None
    out = np.cumsum(w[..., ::-1], -1, dtype=acc)[..., ::-1]
    return out.astype(w.dtype, copy=False) + w.dtype.type(0)


def _cumprod_backward(g: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PyTorch's `cumprod_backward` without grad mode (y = cumprod(x))."""
    if x.size <= 1 or x.shape[-1] == 1:
        return g
    w = y * g
    zero = x == 0
    if not zero.any():
        return _rev_cumsum(w) / x
    res = np.zeros_like(x)
    count = np.cumsum(zero, -1)
    before = count == 0  # before the first zero
    part = _rev_cumsum(np.where(before, w, x.dtype.type(0))) / x
    res[before] = part[before]
    span = count == 1  # from the first zero to the second
    first = np.argmax(span, -1)[..., None]
    at_first = np.zeros_like(span)
    np.put_along_axis(at_first, first, True, -1)
    at_first &= span
    after = span & ~at_first  # strictly between the first zero and the second
    prods = cumprod(np.where(after, x, x.dtype.type(1)))
    prods = prods * np.where(count != 1, x.dtype.type(0), g)
    total = torch_sum(prods, (prods.ndim - 1,), True)
    prev = np.take_along_axis(y, np.maximum(first - 1, 0), -1)
    prev = np.where(first == 0, x.dtype.type(1), prev)
    val = np.broadcast_to(total * prev, x.shape)
    res[at_first] = val[at_first]
    return res
