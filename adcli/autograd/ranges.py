"""The values of `arange` and `linspace`, bit for bit as PyTorch's CPU kernels make them.

PyTorch computes element i of `linspace` as `start + step * i` (first half) or
`end - step * (steps - 1 - i)` (second half) in the output dtype, and element i of a
float `arange` as `start + step * i` in double precision.  The compiler contracts
these into fused multiply-adds (one rounding), and `arange` runs SIMD blocks whose
lanes are `base + k * step` from a rounded block base.  NumPy has no fused
multiply-add, so `fma` below computes one exactly from error-free transformations.

Modelled: AVX2 kernels (PyTorch's default CPU capability).  From 32768 elements
PyTorch splits an arange between its threads, each with its own SIMD blocks: the
thread count is `summation.threads()`.  Half-precision results are not modelled
bit for bit.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import kernels32
from .summation import GRAIN, thread_chunks, threads

# AVX2 lanes per vector (PyTorch's default CPU capability): 8 floats, 4 doubles
_VECTOR_BYTES = 32
_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's constant for float64
_EXACT_MULTIPLIER = 2**26  # |b| below this: both halves of a * b are exact
_EXACT_FLOAT32_MULTIPLIER = 2**29  # |b| below this: a float32 a times b is exact


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s, e with s = fl(a + b) and a + b == s + e exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """hi + lo == a, each with at most 26 significant bits (Veltkamp)."""
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """r = a * b + c rounded once to float64, and the sign of the exact remainder
    (a * b + c - r); b holds integers below 2**26 (the products are then exact)."""
    hi, lo = _split(a)
    s1, e1 = _two_sum(hi * b, c)
    s2, e2 = _two_sum(s1, lo * b)
    t, e3 = _two_sum(e2, e1)  # exact value: s2 + t + e3
    r, e4 = _two_sum(s2, t)  # exact value: r + e4 + e3, |e3| far below |e4|'s grain
    # r + e4 is correctly rounded; only a tie (e4 half a gap) is decided by e3
    gap = np.where(e4 > 0, np.nextafter(r, np.inf) - r, r - np.nextafter(r, -np.inf))
    moved = (e3 != 0) & (np.abs(e4) * 2 == gap) & (np.sign(e3) == np.sign(e4))
    r = np.where(moved, r + 2 * e4, r)
    return r, np.where(moved, -np.sign(e4), np.sign(e4 + e3))


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """a * b + c with a single rounding to `dtype` (float32 or float64), as a fused
    multiply-add gives; a and c are values of `dtype`, b integers."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        if np.dtype(dtype) == np.float32 and np.all(np.abs(b) < _EXACT_FLOAT32_MULTIPLIER):
            # a float32 a times an integer b below 2**29 is exact in float64
            r = kernels32.float32_once(a * b, c)
            if r is not None:
                return r
        plain = a * b + c
        ok = np.isfinite(plain) & (np.abs(b) < _EXACT_MULTIPLIER) & (np.abs(a) < 1e290)
        r, rest = _fma64(np.where(ok, a, 0.0), np.where(ok, b, 0.0), np.where(ok, c, 0.0))
        if np.dtype(dtype) == np.float32:
            r = _round_to_float32(r, rest)
        out = np.where(ok, r, plain).astype(dtype)
    if not ok.all() and np.isfinite(plain[~ok]).any():
        out = _fma_exact(a, b, c, out, ~ok & np.isfinite(plain), np.dtype(dtype))
    return out


def _round_to_float32(r: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """Round r (the exact value rounded to float64, `rest` the sign of what was left)
    to float32 as the exact value would round: only an r exactly halfway between two
    floats needs `rest`."""
    down = r.astype(np.float32)
    down = np.where(down.astype(np.float64) > r, np.nextafter(down, np.float32(-np.inf)), down)
    up = np.nextafter(down, np.float32(np.inf))
    half = (r - down.astype(np.float64)) == (up.astype(np.float64) - r)
    nearest = r.astype(np.float32)
    return np.where(half & (rest > 0), up, np.where(half & (rest < 0), down, nearest))


def _fma_exact(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray, where: np.ndarray, dt: np.dtype
) -> np.ndarray:
    """The rare elements `fma` cannot split exactly, with rational arithmetic."""
    out = out.copy()
    for i in zip(*np.nonzero(where), strict=True):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        out[i] = _round_fraction(exact, dt)
    return out


def _round_fraction(x: Fraction, dt: np.dtype) -> np.floating:
    """x rounded once to float32 or float64 (round half to even)."""
    f = np.float64(float(x))  # correctly rounded to float64
    if dt == np.float64:
        return f
    lo = np.float32(f)
    cands = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - x), int(v.view(np.uint32)) & 1))


def linspace_values(start: float, end: float, steps: int, dt: np.dtype) -> np.ndarray:
    """PyTorch's linspace: from start for the first half, from end for the second,
    one fused multiply-add per element in the output dtype (double for integers)."""
    dt = np.dtype(dt)
    if steps == 1:
        return np.asarray([start], dt)
    integral = dt.kind in "iub"
    # integer linspace: integer start and end, a double step, truncated results
    calc = np.dtype(np.float64) if integral or dt.itemsize < 4 else dt
    s, e = (float(int(v)) for v in (start, end)) if integral else (start, end)
    s, e = calc.type(s), calc.type(e)
    with np.errstate(all="ignore"):
        step = (e - s) / calc.type(steps - 1)
    i = np.arange(steps, dtype=np.float64)
    first = i < steps // 2
    a = np.where(first, step, -step)
    b = np.where(first, i, steps - 1 - i)
    c = np.where(first, s, e)
    if dt.kind == "f" and dt.itemsize < 4:  # half precision: not modelled bit for bit
        return np.asarray(c + a * b, dt)
    out = fma(a, b, c, calc)
    return np.trunc(out).astype(dt) if integral else out.astype(dt)


def arange_values(start: float, step: float, n: int, dt: np.dtype) -> np.ndarray:
    """PyTorch's float arange: `start + step * i` in double, cast to the output dtype;
    blocks of two SIMD vectors compute lane k as `base + k * step` from the block's
    base (itself cast to the output dtype first), the tail one element at a time.
    From 32768 elements each thread runs its own chunk, with its own blocks."""
    dt = np.dtype(dt)
    i = np.arange(n, dtype=np.float64)
    scalar = fma(np.full(n, step), i, np.full(n, float(start)), np.dtype(np.float64)).astype(dt)
    lanes = _VECTOR_BYTES // dt.itemsize
    if dt.itemsize < 4:
        return scalar
    nthreads = threads()
    chunks = [(0, n)] if n < GRAIN or nthreads == 1 else thread_chunks(n, nthreads, GRAIN)
    for begin, end in chunks:
        blocked = ((end - begin) // (2 * lanes)) * 2 * lanes
        if blocked == 0:
            continue
        base = scalar[begin : begin + blocked : lanes].astype(np.float64)  # each vector's first
        k = np.tile(np.arange(lanes, dtype=np.float64), len(base))
        lane = fma(np.full(blocked, step), k, np.repeat(base, lanes), np.dtype(np.float64))
        scalar[begin : begin + blocked] = lane.astype(dt)
    return scalar
