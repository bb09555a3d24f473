"""prod's gradient where the input has zeros, computed as PyTorch 2.13 computes it.

PyTorch's `prod_safe_zeros_backward` multiplies two exclusive running products
(`cumprod` of the input shifted by one, from each end); its second derivative runs
through `cumprod`'s own backward, whose formula (a masked one when its input holds
zeros) decides where NaN and signed zeros land. Everything here works along the last
axis on NumPy arrays; the caller moves the reduced dim there.
"""

from __future__ import annotations

import numpy as np

from .summation import torch_sum

__all__ = ["cumprod", "exclusive_products", "exclusive_products_vjp"]


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


def _cumprod_backward_graph(g: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The values of PyTorch's `cumprod_backward` in grad mode: for an x with zeros,
    its differentiable O(n^2) formula (products before and after each element)."""
    n = x.shape[-1]
    if x.size <= 1 or n == 1:
        return g
    if not (x == 0).any():  # the same formula in both modes
        return _rev_cumsum(y * g) / x
    out = np.empty_like(x)
    for k in range(n):
        if k == 0:
            omitted = np.concatenate([_ones(x), cumprod(x[..., 1:])], -1)
        else:
            before = np.prod(x[..., :k], -1, keepdims=True)
            if k == n - 1:
                omitted = before
            else:
                omitted = np.concatenate([before, before * cumprod(x[..., k + 1 :])], -1)
        prods = g[..., k:] * omitted
        out[..., k] = torch_sum(prods, (prods.ndim - 1,))
    return out


def _ones(x: np.ndarray) -> np.ndarray:
    return np.ones(x.shape[:-1] + (1,), x.dtype)


def exclusive_products(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """The inputs and results of the two running products: (left input, left, right
    input, right running), right running being in reversed order along the axis."""
    ones = _ones(x)
    left_in = np.concatenate([ones, x[..., :-1]], -1)
    right_in = np.concatenate([ones, x[..., :0:-1]], -1)
    return left_in, cumprod(left_in), right_in, cumprod(right_in)


def exclusive_products_vjp(x: np.ndarray, v: np.ndarray, graph: bool = False) -> np.ndarray:
    """The gradient, for the last axis of x, of sum(v * left * right) where left and
    right are the products of the elements before and after each one, as PyTorch's
    autograd computes it through its graph (mul, cumprod, cat, narrow, index_select);
    `graph`: in grad mode (create_graph), where cumprod's backward takes another formula."""
    left_in, left, right_in, right_run = exclusive_products(x)
    right = right_run[..., ::-1]
    back = _cumprod_backward_graph if graph else _cumprod_backward
    g_left = back(v * right, left_in, left)
    g_right = back((v * left)[..., ::-1], right_in, right_run)
    a = np.zeros_like(x)
    a[..., :-1] = g_left[..., 1:]
    b = np.zeros_like(x)
    b[..., 1:] = g_right[..., 1:][..., ::-1]
    return a + b
