"""Which zero PyTorch's CPU max/min reductions return when the extreme is 0 and both
+0. and -0. are among the elements.

A tie between zeros goes to the first operand in PyTorch's scalar `max_impl` /
`min_impl` (std::max, std::min) and to the second in its SIMD `maximum` / `minimum`,
so the sign depends on the kernel's loop structure:

- `max()` / `min()` of a whole tensor (`reduce_all_kernel_vec`, on a contiguous
  copy): one vector accumulator over the elements in logical order, then the lanes
  combined (AVX2's shuffle tree for float32, else lane after lane);
- `amax` / `amin` (`binary_kernel_reduce_vec` through a TensorIterator): the
  iterator's own dimension order (memory order, reduced dims innermost), a
  vectorized inner reduction (four vectors at a time) or outer reduction (columns of
  four vectors), and scalar loops elsewhere.

Here each element is a code: -1 for one that cannot be the result (not a zero; the
accumulator's starting value), 0 for +0., 1 for -0.; the loops are replayed on codes.
"""

from __future__ import annotations

import itertools

import numpy as np

from .kernels32 import cpu_capability
from .storage import iterator_sort

__all__ = ["fix_reduce_all", "fix_reduction", "iterator_layout"]

#: at most this many elements are replayed (beyond, NumPy's sign stands)
_LIMIT = 1 << 16


def _lanes(dtype: np.dtype) -> int:
    # 256-bit vectors: PyTorch registers AVX2 kernels for these reductions, which an
    # AVX512 machine also runs (measured: 8 float32 or 4 float64 lanes there)
    return 32 // dtype.itemsize


def _first(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The scalar op: a tie keeps the first operand."""
    return np.where(a >= 0, a, b)


def _second(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The SIMD op: a tie takes the second operand."""
    return np.where(b >= 0, b, a)


def _codes(x: np.ndarray) -> np.ndarray:
    return np.where(x == 0, np.signbit(x).astype(np.int8), np.int8(-1)).astype(np.int8)


def _signed_zero(code: int, dtype: np.dtype) -> np.ndarray:
    return np.asarray(-0.0 if code == 1 else 0.0, dtype)


def fix_reduce_all(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """`r`, the max or min of all of x, with the sign of zero PyTorch's `max()` /
    `min()` gives."""
    if x.dtype.kind != "f" or r != 0 or x.size > _LIMIT:
        return r
    c = _codes(np.ascontiguousarray(x).reshape(-1))
    n, v = c.size, _lanes(x.dtype)
    if n < v:  # one partial vector, combined lane after lane
        return _signed_zero(_fold(c, _second), x.dtype)
    full = n - n % v
    lanes = c[:v].copy()
    for i in range(v, full, v):
        lanes = _second(lanes, c[i : i + v])
    rem = n - full
    if rem:
        lanes[:rem] = _second(lanes[:rem], c[full:])
    if x.dtype == np.float32 and cpu_capability() != "DEFAULT":
        m = v // 2
        while m:  # the shuffle tree: each lane with the one `m` lanes away
            lanes = _second(lanes, lanes[np.arange(v) ^ m])
            m //= 2
        return _signed_zero(int(lanes[0]), x.dtype)
    return _signed_zero(_fold(lanes, _second), x.dtype)


def _fold(c: np.ndarray, op: object) -> int:
    acc = c[:1]
    for i in range(1, c.size):
        acc = op(acc, c[i : i + 1])  # type: ignore[operator]
    return int(acc[0])


def fix_reduction(x: np.ndarray, r: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """`r` (dims kept), the amax or amin of x over `dims`, with the signs of zero
    PyTorch's TensorIterator reduction gives."""
    if x.dtype.kind != "f" or x.size == 0 or x.size > _LIMIT or not (r == 0).any():
        return r
    item = x.itemsize
    if any(s < 0 for s in x.strides):
        return r
    shape = list(x.shape)
    in_st = [s // item for s in x.strides]
    out_shape = [1 if d in dims else n for d, n in enumerate(shape)]
    out_c = np.empty(out_shape, np.int8)
    out_st = [0 if (d in dims and shape[d] != 1) else s // 1 for d, s in enumerate(out_c.strides)]
    # the input's codes by element offset, the output's (contiguous) likewise
    off = np.zeros(x.shape, np.int64)
    for d, n in enumerate(shape):
        idx = [1] * len(shape)
        idx[d] = n
        off = off + (np.arange(n) * in_st[d]).reshape(idx)
    mem = np.full(int(off.max()) + 1, -1, np.int8)
    mem[off] = _codes(x)
    out = np.full(out_c.size, -1, np.int8)
    shape, strides = iterator_layout(shape, [out_st, in_st])
    _replay(mem, out, shape, strides[0], strides[1], _lanes(x.dtype))
    fixed = out.reshape(out_shape)
    signed = np.where(fixed == 1, np.asarray(-0.0, r.dtype), np.asarray(0.0, r.dtype))
    return np.where((r == 0) & (fixed >= 0), signed, r)


def iterator_layout(
    shape: list[int], strides: list[list[int]]
) -> tuple[list[int], list[list[int]]]:
    """TensorIterator's reduction geometry: dims sorted fastest first (reduced dims,
    stride 0 in the output, innermost), then adjacent dims coalesced."""
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))

    def should_swap(d0: int, d1: int) -> int:
        for k, st in enumerate(strides):
            s0, s1 = st[d0], st[d1]
            if k == 0 and (s0 == 0) != (s1 == 0):  # the output: reduced dims first
                return 1 if s1 == 0 else -1
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    iterator_sort(perm, should_swap)
    sh = [shape[p] for p in perm]
    st = [[s[p] for p in perm] for s in strides]
    if len(sh) <= 1:
        return sh, st
    prev = 0
    for d in range(1, len(sh)):
        if sh[prev] == 1 or sh[d] == 1 or all(sh[prev] * s[prev] == s[d] for s in st):
            if sh[prev] == 1:
                for s in st:
                    s[prev] = s[d]
            sh[prev] *= sh[d]
        else:
            prev += 1
            if prev != d:
                for s in st:
                    s[prev] = s[d]
                sh[prev] = sh[d]
    return sh[: prev + 1], [s[: prev + 1] for s in st]


def _replay(
    mem: np.ndarray, out: np.ndarray, shape: list[int], o: list[int], i: list[int], v: int
) -> None:
    """binary_kernel_reduce_vec's loops, on codes."""
    size0 = shape[0] if shape else 1
    size1 = shape[1] if len(shape) > 1 else 1
    o0, i0 = (o[0], i[0]) if shape else (0, 0)
    o1, i1 = (o[1], i[1]) if len(shape) > 1 else (0, 0)
    outer = [range(n) for n in shape[2:]]
    for idx in itertools.product(*reversed(outer)):  # the last outer dim slowest
        pos = tuple(reversed(idx))
        bo = sum(k * s for k, s in zip(pos, o[2:], strict=True))
        bi = sum(k * s for k, s in zip(pos, i[2:], strict=True))
        if o0 == 0 and i0 == 1:  # a contiguous inner reduction, per output
            for j in range(size1):
                _inner(mem, out, bi + j * i1, size0, bo + j * o1, v)
        elif o0 == 0 and o1 == 1 and i1 == 1:  # an outer reduction over columns
            _outer(mem, out, bi, bo, i0, size0, size1, v)
        else:  # scalar loops: element by element into the outputs
            steps = np.arange(size0)
            for j in range(size1):
                vals = mem[bi + j * i1 + steps * i0]
                if o0:  # one output per step
                    at = bo + j * o1 + steps * o0
                    out[at] = _first(out[at], vals)
                else:  # one output folded over the steps: its first candidate
                    out[bo + j * o1] = _first(out[bo + j * o1], _first_of(vals))


def _inner(mem: np.ndarray, out: np.ndarray, bi: int, n: int, po: int, v: int) -> None:
    """vectorized_reduction: four vectors at a time, then the rest one by one."""
    count = n // (4 * v)
    acc_out = out[po]
    if count:
        acc = mem[bi : bi + 4 * v].reshape(4, v)
        for k in range(1, count):
            acc = _second(acc, mem[bi + k * 4 * v : bi + (k + 1) * 4 * v].reshape(4, v))
        lanes = _second(_second(acc[0], acc[1]), _second(acc[2], acc[3]))
        acc_out = _first(acc_out, _fold(lanes, _first))
    out[po] = _first(acc_out, _first_of(mem[bi + count * 4 * v : bi + n]))


def _outer(
    mem: np.ndarray, out: np.ndarray, bi: int, bo: int, step: int, rows: int, cols: int, v: int
) -> None:
    """vectorized_outer_reduction: columns four vectors wide down the rows (added to the
    output by the SIMD op), the remaining columns one by one."""
    w = 4 * v
    blocks = cols // w
    for b in range(blocks):
        acc = mem[bi + b * w : bi + (b + 1) * w].copy()
        for r in range(1, rows):
            start = bi + r * step + b * w
            acc = _second(acc, mem[start : start + w])
        out[bo + b * w : bo + (b + 1) * w] = _second(acc, out[bo + b * w : bo + (b + 1) * w])
    steps = np.arange(rows) * step
    for c in range(blocks * w, cols):
        out[bo + c] = _first(out[bo + c], _first_of(mem[bi + c + steps]))


def _first_of(vals: np.ndarray) -> np.ndarray:
    """The scalar op folded over `vals`: the first candidate (or none)."""
    hit = vals >= 0
    return vals[np.argmax(hit)] if hit.any() else np.int8(-1)
