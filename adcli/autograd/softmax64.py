"""Float64 softmax and its backward rounded as PyTorch 2.13's CPU kernels round them.

PyTorch's float64 softmax (aten/src/ATen/native/cpu/SoftMaxKernel.cpp) is written
with its `Vectorized<double>` types, whose `exp` is SLEEF's `expd_u10` (not the
MKL exp that `torch.exp` uses, nor NumPy's): the last bit of a float64 softmax, and
so of its gradient, depends on which exp, which order of additions, and whether it
multiplies by 1 / sum or divides. Measured here (AVX512, 2 threads) on thousands of
random rows, each function below gives PyTorch's bits for every element:

- along the last dim: SLEEF's exp of x - max, a sum as `vec::reduce_all` adds
  (one accumulator per lane, the lanes added one after the other), then a multiply
  by 1 / sum; the backward `(g - sum(g * y)) * y`, the products summed the same way;
- along another dim: the positions (outer x inner) cut in equal chunks, one per
  thread; in a chunk, 8 inner positions at a time where that many are left in both
  the chunk and the row (SLEEF's exp), else one at a time (the C library's exp),
  each position's sum from 0 in order, then a division; the backward's sum of
  g * y is a fused multiply-add per step, from 0.

log_softmax's backward `g - exp(y) * sum(g)` is one fused multiply-add, with the
sum as above (along another dim: in order from 0) and SLEEF's exp (along another
dim: for the inner positions in whole vectors, the C library's for the rest).
"""

from __future__ import annotations

import math

import numpy as np

from .kernels32 import _fma64, cpu_capability, vector_lanes, vector_positions

# SLEEF's expd_u10 (FMA build): exp(d) = 2**q * exp(s), s = d - q * ln 2 with ln 2
# split in two; exp(s) by a degree-10 polynomial in Estrin's scheme, then three
# Horner steps, every step a fused multiply-add.
_R_LN2 = 1.442695040888963407359924681001892137426645954152985934135449406931
_L2U = 0.69314718055966295651160180568695068359375
_L2L = 0.28235290563031577122588448175013436025525412068e-12
_POLY = (
    0.2081276378237164457e-8,
    0.2511210703042288022e-7,
    0.2755762628169491192e-6,
    0.2755723402025388239e-5,
    0.2480158687479686264e-4,
    0.1984126989855865850e-3,
    0.1388888888914497797e-2,
    0.8333333333314938210e-2,
    0.4166666666666602598e-1,
    0.1666666666666669072,
)
_EXP_MAX = 709.78271289338397  # SLEEF's overflow bound (0x1.62e42fefa39efp+9)


def sleef_exp(d: np.ndarray) -> np.ndarray:
    """exp of float64 d as SLEEF's `expd_u10` (PyTorch's `Vectorized<double>::exp`)."""
    d = np.asarray(d, np.float64)
    with np.errstate(all="ignore"):
        q = np.rint(d * _R_LN2)
        s = _fma64(q, np.full_like(d, -_L2U), d)
        s = _fma64(q, np.full_like(d, -_L2L), s)
        s2 = s * s
        s4 = s2 * s2
        s8 = s4 * s4

        def pair(i: int) -> np.ndarray:  # c[i] * s + c[i + 1]
            return _fma64(s, np.full_like(d, _POLY[i]), np.full_like(d, _POLY[i + 1]))

        low = _fma64(s2, pair(6), pair(8))
        mid = _fma64(s2, pair(2), pair(4))
        u = _fma64(s8, pair(0), _fma64(s4, mid, low))
        u = _fma64(u, s, np.full_like(d, 0.5))
        u = _fma64(u, s, np.ones_like(d))
        u = _fma64(u, s, np.ones_like(d))
        # 2**q in two exact halves, as SLEEF scales (one rounding, at a subnormal end)
        k = np.clip(np.nan_to_num(q), -2100, 2100).astype(np.int64)
        half = k >> 1
        u = u * np.ldexp(1.0, half) * np.ldexp(1.0, k - half)
        u = np.where(d > _EXP_MAX, np.inf, u)
        u = np.where(d < -1000, 0.0, u)
        return np.where(np.isnan(d), d, u)


def _libm_exp(d: np.ndarray) -> np.ndarray:
    """exp of float64 d by the C library, element by element (PyTorch's scalar tails)."""
    if not d.size:
        return d.copy()
    out = np.frompyfunc(_exp_or_inf, 1, 1)(d)
    return np.asarray(out, np.float64).reshape(d.shape)


def _exp_or_inf(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _lanes() -> int:
    """Doubles in one vector of PyTorch's softmax kernels here (8 with AVX512, else 4)."""
    return vector_lanes() // 2 if cpu_capability() != "DEFAULT" else 4


def _fold(acc: np.ndarray) -> np.ndarray:
    """A double vector's lanes (last axis) added one after the other, as PyTorch's
    generic `vec_reduce_all` does (its halving shuffles exist for float only)."""
    total = acc[..., 0]
    for i in range(1, acc.shape[-1]):
        total = total + acc[..., i]
    return total


def _lanes_sum(e: np.ndarray) -> np.ndarray:
    """Sum along the last axis as `vec::reduce_all` adds: whole vectors lane by lane
    (the first one the start), the tail into the first lanes, then the lanes folded;
    a row shorter than a vector in order."""
    lanes = _lanes()
    n = e.shape[-1]
    if n < lanes:
        return np.add.accumulate(e, axis=-1)[..., -1]
    full = n - n % lanes
    vecs = e[..., :full].reshape(e.shape[:-1] + (full // lanes, lanes))
    acc = np.add.accumulate(vecs, axis=-2)[..., -1, :].copy()
    if n > full:
        acc[..., : n - full] += e[..., full:]
    return _fold(acc)


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """exp(x - max) / sum along `dim` of a float64 x with at least one element and one
    dim, as PyTorch's CPU kernels compute it (see the module's docstring)."""
    dim %= x.ndim
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        d = x - np.max(x, axis=dim, keepdims=True)
        if dim == x.ndim - 1:
            e = sleef_exp(d)
            return e * (1.0 / _lanes_sum(e))[..., np.newaxis]
        outer = math.prod(x.shape[:dim])
        inner = math.prod(x.shape[dim + 1 :])
        d3 = d.reshape(outer, x.shape[dim], inner)
        positions = vector_positions(outer, inner, _lanes())
        vec = np.broadcast_to(positions[:, np.newaxis, :], d3.shape)
        e = np.empty_like(d3)
        e[vec] = sleef_exp(d3[vec])
        e[~vec] = _libm_exp(d3[~vec])
        total = np.add.accumulate(e, axis=1)[:, -1:, :] + 0.0  # (from +0.)
        return (e / total).reshape(x.shape)


def softmax_backward(g: np.ndarray, y: np.ndarray, dim: int) -> np.ndarray:
    """softmax's gradient along `dim` for float64 g and y (y the softmax result) with
    at least one element and one dim, as PyTorch's CPU kernels compute it."""
    dim %= g.ndim
    with np.errstate(over="ignore", invalid="ignore"):
        if dim == g.ndim - 1:
            return (g - _lanes_dot(g, y)[..., np.newaxis]) * y
        total = np.zeros_like(np.take(g, [0], axis=dim))
        for i in range(g.shape[dim]):
            gi, yi = np.take(g, [i], axis=dim), np.take(y, [i], axis=dim)
            total = _fma64(gi, yi, total)
        return y * (g - total)


def _lanes_dot(g: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum(g * y) along the last axis as `vec::map2_reduce_all` adds the products:
    whole vectors multiplied, then added lane by lane; the tail's products added into
    the first lanes; then the lanes folded (no fused multiply-add, measured)."""
    lanes = _lanes()
    n = g.shape[-1]
    if n < lanes:
        return np.add.accumulate(g * y, axis=-1)[..., -1]
    full = n - n % lanes
    shape = g.shape[:-1] + (full // lanes, lanes)
    prods = g[..., :full].reshape(shape) * y[..., :full].reshape(shape)
    acc = np.add.accumulate(prods, axis=-2)[..., -1, :].copy()
    if n > full:
        acc[..., : n - full] += g[..., full:] * y[..., full:]
    return _fold(acc)


def log_softmax_backward(g: np.ndarray, y: np.ndarray, dim: int) -> np.ndarray:
    """log_softmax's gradient g - exp(y) * sum(g) along `dim` for float64 g and y of
    one shape, with at least one element and one dim, as PyTorch's CPU kernels."""
    dim %= g.ndim
    with np.errstate(over="ignore", invalid="ignore"):
        if dim == g.ndim - 1:
            total = _lanes_sum(g)[..., np.newaxis]
            e = sleef_exp(y)
        else:
            total = np.add.accumulate(g, axis=dim).take([-1], axis=dim) + 0.0
            inner = g.shape[dim + 1 :]
            n_inner = math.prod(inner)
            vec = np.broadcast_to(
                np.arange(n_inner).reshape(inner) < n_inner - n_inner % _lanes(), y.shape
            )
            e = np.empty_like(y)
            e[vec] = sleef_exp(y[vec])
            e[~vec] = _libm_exp(y[~vec])
        return _fma64(-e, np.ascontiguousarray(np.broadcast_to(total, e.shape)), g)
