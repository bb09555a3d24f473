"""Float32 elementwise functions rounded as PyTorch 2.13's CPU kernels round them.

NumPy's float32 `exp`, `sin`, `tanh`, ... are its own SIMD approximations; PyTorch
(x86, AVX2, MKL build) sends most float32 unary functions to MKL's vector math
library, whose results are correctly rounded except very near a rounding midpoint
(within about 0.05 ulp): computing in float64 and rounding once to float32
reproduces them far better than NumPy's float32 does (measured: exp 99.1% of
elements bit-equal, tanh 99.9%, sin and cos 95%, against 61%, 68%, 88% and 81%).
MKL's own algorithm is not public, so the rest is left.

Kernels that PyTorch writes itself with its `Vectorized` types differ between the
SIMD body of a loop (two AVX2 vectors at a time, computed with SLEEF's `expf_u10`)
and its scalar tail (the C library's `expf`): `sigmoid` and `silu` model both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .summation import GRAIN, threads

_F32 = np.float32
_LANES = 8  # float32 lanes in an AVX2 vector
_BLOCK = 2 * _LANES  # PyTorch's vectorized loop takes two vectors per step


def rounded(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """fn(x) for float32 x computed in float64 and rounded once to float32 (PyTorch's
    MKL results, nearly always); other dtypes go to `fn` unchanged."""
    if x.dtype != _F32:
        return fn(x)
    # a float64 result beyond float32's range overflows in the cast as NumPy's float32
    # function overflows: callers' errstate covers both
    return fn(x.astype(np.float64)).astype(_F32)


def powf(x: np.ndarray, e: float) -> np.ndarray:
    """x ** e for float32 x by the C library's powf, one element at a time (NumPy's
    scalar power; its array power rounds differently in the last bit)."""
    e32 = _F32(e)
    flat = np.fromiter((_F32(v) ** e32 for v in x.ravel()), _F32, count=x.size)
    return flat.reshape(x.shape)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once, for float32 or float64 operands (PyTorch's
    `Vectorized::fmadd`, and the fused multiply-add the compiler makes of a kernel's
    `c + alpha * b`: `add` and `sub` with an `alpha`, so `p.add_(g, alpha=-lr)` in SGD,
    `addcmul`, `lerp`). Other dtypes: two roundings.

    Float32: the float64 product is exact; the float64 sum is exact up to its error `e`
    (TwoSum), which decides the one case where rounding the sum to float32 rounds
    twice: a sum exactly halfway between two float32 numbers."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    if a.dtype == b.dtype == c.dtype == np.float64:
        return _fma64(a, b, c)
    if not (a.dtype == b.dtype == c.dtype == _F32):
        return a * b + c
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        c64 = c.astype(np.float64)
        t = p + c64
        bp = t - p
        e = (p - (t - bp)) + (c64 - bp)
        r = t.astype(_F32)
        r64 = r.astype(np.float64)
        tie = (t != r64) & (e != 0) & np.isfinite(t)
        if np.any(tie):
            other = np.nextafter(r, np.where(t > r64, _F32(np.inf), _F32(-np.inf)))
            half = (r64 + other.astype(np.float64)) * 0.5
            tie &= t == half
            # halfway in float64 but not exactly: e says which neighbour is nearer
            toward_other = (e > 0) == (other > r)
            r = np.where(tie & toward_other, other, r)
    return r


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's constant for float64


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once in float64 (Boldo and Melquiond's emulation): the product
    split exactly in two (Dekker), c added to its high part exactly (TwoSum), the two
    low parts added with rounding to odd, and one last rounding to nearest. Products
    too large to split, and non-finite operands, fall back to two roundings."""
    with np.errstate(all="ignore"):
        ph = a * b
        ca, cb = _SPLIT * a, _SPLIT * b
        ah = ca - (ca - a)
        bh = cb - (cb - b)
        al, bl = a - ah, b - bh
        pl = ((ah * bh - ph) + ah * bl + al * bh) + al * bl
        th = c + ph
        bp = th - c
        tl = (c - (th - bp)) + (ph - bp)
        v = tl + pl
        bp = v - tl
        ve = (tl - (v - bp)) + (pl - bp)
        # round to odd: an inexact v with an even last bit moves one step towards ve
        odd = (ve != 0) & ((v.view(np.int64) & 1) == 0)
        if np.any(odd):
            v = np.where(odd, np.nextafter(v, np.where(ve > 0, np.inf, -np.inf)), v)
        r = th + v
        bad = ~np.isfinite(r) | ~np.isfinite(pl)
        if np.any(bad):
            r = np.where(bad, ph + c, r)
    return r


# SLEEF's expf_u10: exp(d) = 2**q * exp(s), s = d - q * ln 2 with ln 2 split in two,
# exp(s) by a degree-6 polynomial, every step a fused multiply-add.
_LOG2E = _F32(1.442695040888963407359924681001892137426645954152985934135449406931)
_LN2_HI = _F32(0.693145751953125)
_LN2_LO = _F32(1.428606765330187045e-06)
_EXP_POLY = tuple(
    _F32(c)
    for c in (
        0.000198527617612853646278381,
        0.00139304355252534151077271,
        0.833336077630519866943359e-2,
        0.416664853692054748535156e-1,
        0.166666671633720397949219,
        0.5,
    )
)
_POLY64 = tuple(np.float64(c) for c in _EXP_POLY)


def sleef_expf(d: np.ndarray) -> np.ndarray:
    """exp of float32 d as SLEEF's `expf_u10` (PyTorch's `Vectorized<float>::exp`).
    Each fused multiply-add is a float64 product and sum rounded to float32 (all
    operands same-dtype: NumPy's mixed-dtype loops are several times slower)."""
    with np.errstate(all="ignore"):
        q = np.rint(d * _LOG2E)
        q64 = q.astype(np.float64)
        s64 = d.astype(np.float64)
        s64 -= q64 * np.float64(_LN2_HI)  # exact (Cody-Waite)
        s64 -= q64 * np.float64(_LN2_LO)
        s = s64.astype(_F32)
        s64 = s.astype(np.float64)
        u = _POLY64[0] * s64
        for c in _POLY64[1:-1]:
            u += c
            u = u.astype(_F32).astype(np.float64)
            u *= s64
        u += _POLY64[-1]
        u = u.astype(_F32).astype(np.float64)
        u *= (s * s).astype(np.float64)  # fma(s * s, u, s)
        u += s64
        u = u.astype(_F32)
        u += _F32(1)
        # 2**q: one rounding, as SLEEF's two exact-then-rounding scalings give
        out = np.ldexp(u, np.minimum(np.maximum(q, -300), 300).astype(np.int32))
        if not (d.min() >= -103 and d.max() <= 88):  # SLEEF's limits, NaN, infinities
            out = np.where(d < -104, _F32(0), out)
            out = np.where(d > 100, _F32(np.inf), out)
            out = np.where(np.isnan(d), d, out)
        return out.astype(_F32, copy=False)


def simd_mask(x: np.ndarray) -> np.ndarray | bool:
    """True where PyTorch's vectorized loop computes element i of a unary op on x in
    its SIMD body: contiguous x is one run per thread's chunk, whose last
    (length % 16) elements form the scalar tail; other layouts go element by element."""
    n = x.size
    if not x.flags.c_contiguous or n == 0:
        return False
    idx = np.arange(n)
    nthreads = threads()
    if n < GRAIN or nthreads == 1:
        return (idx < n - n % _BLOCK).reshape(x.shape)
    used = min(nthreads, -(-n // GRAIN))
    size = -(-n // used)
    start = idx - idx % size
    length = np.minimum(size, n - start)
    return (idx - start < length - length % _BLOCK).reshape(x.shape)


def _by_path(
    x: np.ndarray, vector: Callable[[], np.ndarray], scalar: Callable[[], np.ndarray]
) -> np.ndarray:
    mask = simd_mask(x)
    if mask is False or not np.any(mask):
        return scalar()
    if np.all(mask):
        return vector()
    return np.where(mask, vector(), scalar())


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)): SLEEF's exp in the SIMD body, the C library's in the tail."""
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        if x.dtype != _F32:
            return (one / (one + np.exp(-x))).astype(x.dtype, copy=False)
        return _by_path(
            x,
            lambda: one / (sleef_expf(_F32(0) - x) + one),
            lambda: one / (one + rounded(np.exp, -x)),
        )


def silu(x: np.ndarray) -> np.ndarray:
    """x / (1 + exp(-x)), with sigmoid's two paths."""
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        if x.dtype != _F32:
            return (x / (one + np.exp(-x))).astype(x.dtype, copy=False)
        return _by_path(
            x,
            lambda: x / (one + sleef_expf(-x)),
            lambda: x / (one + rounded(np.exp, -x)),
        )


def _lanes_sum(e: np.ndarray) -> np.ndarray:
    """Sum along the last axis as PyTorch's `vec::reduce_all` adds: 8 lane
    accumulators over whole vectors (the first vector is the start), the tail added
    into the first lanes, then lanes folded 4, 2, 1 apart; fewer than 8 in order."""
    n = e.shape[-1]
    if n < _LANES:
        return np.add.accumulate(e, axis=-1)[..., -1]
    full = n - n % _LANES
    vecs = e[..., :full].reshape(e.shape[:-1] + (full // _LANES, _LANES))
    acc = np.add.accumulate(vecs, axis=-2)[..., -1, :] if full > _LANES else vecs[..., 0, :].copy()
    if n > full:
        acc[..., : n - full] += e[..., full:]
    w = acc[..., :4] + acc[..., 4:]
    return (w[..., 0] + w[..., 2]) + (w[..., 1] + w[..., 3])


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """exp(x - max) / sum along `dim` for a float32 x with at least one element.
    Along the last dim (PyTorch's `_vec_softmax_lastdim`): SLEEF's exp for every
    element, `_lanes_sum`, then a multiply by 1 / sum.  Along another dim: each
    position's sum from 0 in order and a division, SLEEF's exp in whole vectors of
    the inner positions, the C library's for the rest (measured: 97% bit-equal)."""
    dim %= x.ndim
    with np.errstate(over="ignore", invalid="ignore"):
        d = x - np.max(x, axis=dim, keepdims=True)
        if dim == x.ndim - 1:
            e = sleef_expf(d)
            inv = _F32(1) / _lanes_sum(e)
            return e * inv[..., np.newaxis]
        inner = x.shape[dim + 1 :]
        n_inner = int(np.prod(inner))
        vec = np.arange(n_inner).reshape(inner) < n_inner - n_inner % _LANES
        e = np.where(vec, sleef_expf(d), rounded(np.exp, d))
        cols = np.moveaxis(e, dim, 0).reshape(x.shape[dim], -1)
        # whole rows added in order (a single column: accumulate, never pairwise)
        total = np.add.reduce(cols, axis=0) if cols.shape[1] > 1 else np.add.accumulate(cols)[-1]
        return e / total.reshape(x.shape[:dim] + (1,) + inner)


def log_softmax_lastdim(x: np.ndarray) -> np.ndarray:
    """(x - max) - log(sum(exp(x - max))) along the last dim of a float32 x, as
    PyTorch's `_vec_log_softmax_lastdim`: SLEEF's exp, `_lanes_sum`, the C
    library's log of the sum (measured: 99.9% bit-equal)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        d = x - np.max(x, axis=-1, keepdims=True)
        return d - rounded(np.log, _lanes_sum(sleef_expf(d)))[..., np.newaxis]
