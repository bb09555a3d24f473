"""Floating-point sums added up in the order PyTorch's CPU kernel adds them.

Float32 addition is not associative, so a sum's last bits depend on the order of
its additions; NumPy's pairwise order and PyTorch's differ, and a training loop
that prints `loss.item()` drifts apart within a few steps.  PyTorch 2.13's CPU
`sum` (the "cascade sum"), measured bit for bit against torch on this machine:

- TensorIterator puts the reduced dimensions innermost (ordered by input stride),
  the kept ones outside in the output's order, merges dimensions that are laid out
  contiguously, and calls a 2-D loop per outer index; each call adds its results
  into the output (which starts at 0) in order.
- A column of the 2-D loop is summed by one of two primitives, applied lane-wise:
  `_levels` keeps four accumulators, the first summing blocks of 2**p rows in
  order, each next one summing 2**p blocks of the previous one, the last one
  everything else (p = max(4, ceil(log2(rows)) // 4)); `_row` splits a column into
  4 interleaved accumulators, each summed by `_levels`, and adds them up.
- A contiguous row is read as AVX2 vectors (8 floats, 4 doubles) and 4 vectors
  at a time, so 32 (16) lanes are summed by `_levels` at once; what is left over
  is added one by one, then the lanes in order.
- From 32768 elements PyTorch splits the work between its threads: a full sum
  into one contiguous chunk per thread whose partial sums are added at the end,
  a sum over dims by output columns (rounded to 128 bytes) - which changes which
  columns each call sees.  `threads()` gives the count modelled.

Everything is done with NumPy array operations: the only Python loops run over
a constant number of steps (lanes, levels) or over 2-D loop calls, never elements.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .storage import iterator_sort

_VECTOR_BYTES = 32  # AVX2
GRAIN = 32768  # PyTorch's internal::GRAIN_SIZE
_ILP = 4  # accumulators per row (and vectors per block)
_ZERO = {"f": np.float32(0), "d": np.float64(0)}


@functools.cache
def threads() -> int:
    """PyTorch's intra-op thread count as its default would be here: the CPUs this
    process may run on, fewer if OMP_NUM_THREADS says so."""
    try:
        cpus = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = max(1, os.cpu_count() or 1)
    env = os.environ.get("OMP_NUM_THREADS", "")
    # measured: torch 2.13 takes OMP_NUM_THREADS=1 but not more threads than CPUs
    return min(cpus, int(env)) if env.isdigit() and int(env) > 0 else cpus


def _seq(a: np.ndarray, axis: int = 0) -> np.ndarray:
    """Left-to-right sum along `axis` (PyTorch's accumulators start at +0: `cascade_sum`
    adds +0 once at the end, which is all the difference that makes)."""
    axis %= a.ndim
    n = a.shape[axis]
    if n <= 1:
        return a[(slice(None),) * axis + (0,)] if n else np.zeros(_drop(a.shape, axis), a.dtype)
    if a.ndim > 1:
        step = a.strides[axis]
        last = a.ndim - 1  # usually the lanes or columns: the quick test first
        if (axis != last and a.shape[last] > 1 and 0 <= a.strides[last] < step) or any(
            m > 1 and 0 <= st < step for m, st in zip(a.shape, a.strides, strict=True)
        ):
            # NumPy's reduce then runs its inner loop over that other axis: whole rows
            # added in order (its pairwise summation only applies along the inner axis)
            return np.add.reduce(a, axis=axis)
    return np.add.accumulate(a, axis=axis)[(slice(None),) * axis + (-1,)]


def _drop(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1 :]


def _levels(x: np.ndarray) -> np.ndarray:
    """Sum over axis 0 (R rows) with PyTorch's four-level accumulators, lane-wise:
    acc0 sums 2**p rows at a time, acc1 2**p of acc0's sums, acc2 2**p of acc1's,
    acc3 all of acc2's; rows left over go to acc0; then acc0 + acc1 + acc2 + acc3."""
    rows, rest = x.shape[0], x.shape[1:]
    p = max(4, (rows - 1).bit_length() // 4) if rows else 4
    step = 1 << p
    blocks = rows // step
    acc0 = _seq(x[blocks * step :])
    if not blocks:
        return acc0
    s0 = _seq(x[: blocks * step].reshape((blocks, step) + rest), 1)
    n1 = blocks // step
    if not n1:
        return acc0 + _seq(s0)
    s1 = _seq(s0[: n1 * step].reshape((n1, step) + rest), 1)
    acc = acc0 + _seq(s0[n1 * step :])
    n2 = n1 // step
    if not n2:
        return acc + _seq(s1)
    s2 = _seq(s1[: n2 * step].reshape((n2, step) + rest), 1)
    return (acc + _seq(s1[n2 * step :])) + _seq(s2)


def _row(x: np.ndarray) -> np.ndarray:
    """Sum over axis 0 with 4 interleaved accumulators (PyTorch's `row_sum`): the
    first also takes the rows left over, then the others are added to it."""
    n, rest = x.shape[0], x.shape[1:]
    r = n // _ILP
    part = _levels(x[: r * _ILP].reshape((r, _ILP) + rest))
    return _seq(np.concatenate([part[:1], x[r * _ILP :], part[1:]]))


def _vector_row(x: np.ndarray, lanes: int) -> np.ndarray:
    """Sum over axis 0 of contiguous rows read as vectors of `lanes` elements: `_row`
    over vectors, then the scalars left over and the vector's lanes, in order."""
    n, rest = x.shape[0], x.shape[1:]
    nvec = n // lanes
    r = nvec // _ILP
    part = _levels(x[: r * _ILP * lanes].reshape((r, _ILP, lanes) + rest))
    extra = x[r * _ILP * lanes : nvec * lanes].reshape((-1, lanes) + rest)
    acc = _seq(np.concatenate([part[:1], extra, part[1:]]))
    return _seq(np.concatenate([x[nvec * lanes :], acc]))


def _loop2d(v: np.ndarray, st0: int, st1: int) -> np.ndarray:
    """One 2-D loop call per leading index of v (shape (..., size1, size0)): the sum
    over size0 of each (..., j), by the kernel PyTorch picks from sizes and strides."""
    size1, size0 = v.shape[-2], v.shape[-1]
    lanes = _VECTOR_BYTES // v.dtype.itemsize
    x = np.moveaxis(v, -1, 0)  # (size0, ..., size1)
    if st0 == 1 and size0 >= lanes:
        return _vector_row(x, lanes)
    if st1 == 1 and size1 >= lanes:
        split = size1 // (_ILP * lanes) * _ILP * lanes
    elif st0 < st1:
        split = 0
    else:
        split = size1 // _ILP * _ILP
    return _split_columns(x, split)


def _split_columns(x: np.ndarray, split: int) -> np.ndarray:
    """Columns before `split` summed in groups (`_levels`), the rest one by one (`_row`)."""
    if split == 0:
        return _row(x)
    if split == x.shape[-1]:
        return _levels(x)
    return np.concatenate([_levels(x[..., :split]), _row(x[..., split:])], axis=-1)


def _contiguous_block(x: np.ndarray, axes: set[int]) -> np.ndarray | None:
    """The sum of a C-contiguous x over leading or trailing axes, one thread: the
    TensorIterator then has just two dims (rows of the reduced block, and the rest).
    None for other axes."""
    k = len(axes)
    n = math.prod(x.shape[a] for a in axes)
    w = x.size // n
    lanes = _VECTOR_BYTES // x.itemsize
    if n == 1:
        return x
    if w == 1 or axes == set(range(x.ndim - k, x.ndim)):  # reduced rows, contiguous
        rows = x.reshape(w, n).T
        return _vector_row(rows, lanes) if n >= lanes else _row(rows)
    if axes == set(range(k)):  # reduced columns: each output's inputs n apart
        cols = x.reshape(n, w)
        if w >= lanes:
            return _split_columns(cols, w // (_ILP * lanes) * _ILP * lanes)
        return _split_columns(cols, w // _ILP * _ILP)
    return None


class _Iter:
    """The reduction's dimensions as PyTorch's TensorIterator orders and merges them:
    index 0 innermost.  `sizes`, input `strides` (elements) and `reduced` flags."""

    def __init__(self, x: np.ndarray, reduced_axes: set[int]) -> None:
        out_strides, acc = {}, 1
        for ax in reversed(range(x.ndim)):  # the output: contiguous, reduced dims stride 0
            if ax not in reduced_axes:
                out_strides[ax] = acc
                acc *= x.shape[ax]
        item = x.itemsize
        dims = [
            (x.shape[ax], x.strides[ax] // item, out_strides.get(ax, 0))
            for ax in reversed(range(x.ndim))
            if x.shape[ax] != 1
        ]
        _insertion_sort(dims)
        merged: list[list[int]] = []
        for size, st, ost in dims:
            if merged and all(
                merged[-1][0] * prev == cur
                for prev, cur in ((merged[-1][1], st), (merged[-1][2], ost))
            ):
                merged[-1][0] *= size
            else:
                merged.append([size, st, ost])
        self.sizes = [m[0] for m in merged]
        self.strides = [m[1] for m in merged]
        self.reduced = [m[2] == 0 for m in merged]

    def view(self, x: np.ndarray) -> np.ndarray:
        """x seen with the iterator's dims, outermost first (innermost last)."""
        item = x.itemsize
        return as_strided(
            x, tuple(reversed(self.sizes)), tuple(s * item for s in reversed(self.strides))
        )


def _insertion_sort(dims: list[tuple[int, int, int]]) -> None:
    """TensorIterator's reorder: reduced dims first, then by input stride (ties:
    the smaller size first); kept dims by output stride.  In place, index 0 inner."""

    def should_swap(a: tuple[int, int, int], b: tuple[int, int, int]) -> int:
        (sa, ia, oa), (sb, ib, ob) = a, b
        if (oa == 0) != (ob == 0):
            return 1 if ob == 0 else -1
        for s0, s1 in ((oa, ob), (ia, ib)):
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if sa > sb:
                return 1
        return 0

    iterator_sort(dims, should_swap)


def _serial(v: np.ndarray, it: _Iter) -> np.ndarray:
    """The sum of the whole view v (iterator dims, outermost first) in one thread:
    an array over the kept dims (outermost first)."""
    k = len(it.sizes)
    if k == 0 or not it.reduced[0]:
        return v  # nothing summed: 0 + x
    st1 = it.strides[1] if k > 1 else 0
    c = _loop2d(v if k > 1 else v[np.newaxis], it.strides[0], st1)  # (dim k-1 .. dim 1)
    if k == 1:
        return _seq(c)
    axes = list(reversed(range(1, k)))  # c's axes, outermost first
    kept = [i for i, d in enumerate(axes) if not it.reduced[d]]
    summed = [i for i, d in enumerate(axes) if it.reduced[d]]
    c = np.transpose(c, kept + summed)
    c = c.reshape(c.shape[: len(kept)] + (-1,))
    return _seq(c, -1)


def _calls(v: np.ndarray, it: _Iter, begin: int, end: int) -> np.ndarray:
    """What a thread given elements [begin, end) of a full sum adds, in order: the
    2-D loop calls of PyTorch's DimCounter (a partial row, rows, whole 2-D slices)."""
    size0 = it.sizes[0]
    size1 = it.sizes[1] if len(it.sizes) > 1 else 1
    st0, st1 = it.strides[0], it.strides[1] if len(it.sizes) > 1 else 0
    plane = size0 * size1
    flat = v.reshape(-1, size1, size0)
    parts = []
    pos = begin
    while pos < end:
        s, rem = divmod(pos, plane)
        j, i = divmod(rem, size0)
        if i or end - pos < size0:
            n = min(size0 - i, end - pos)
            parts.append(_loop2d(flat[s, j : j + 1, i : i + n], st0, st1).ravel())
            pos += n
        elif j or end - pos < plane:
            m = min(size1 - j, (end - pos) // size0)
            parts.append(_loop2d(flat[s, j : j + m], st0, st1).ravel())
            pos += m * size0
        else:
            m = (end - pos) // plane
            parts.append(_loop2d(flat[s : s + m], st0, st1).ravel())
            pos += m * plane
    return _seq(np.concatenate(parts))


def thread_chunks(n: int, nthreads: int, grain: int) -> list[tuple[int, int]]:
    """OpenMP parallel_for's split of [0, n): one contiguous chunk per thread used."""
    used = min(nthreads, -(-n // grain))
    size = -(-n // used)
    return [(b, min(n, b + size)) for b in range(0, n, size)]


def cascade_sum(x: np.ndarray, dims: tuple[int, ...] | None, keepdim: bool = False) -> np.ndarray:
    """x summed over `dims` (None: all) as PyTorch's CPU sum adds it up; x is a
    float32 or float64 array (any strides), the result has x's dtype."""
    if dims is None or len(set(dims)) >= x.ndim:
        if 0 < x.size < GRAIN and x.flags.c_contiguous:
            # the common case: a whole contiguous tensor, summed by one thread
            flat = x.reshape(-1)
            lanes = _VECTOR_BYTES // x.itemsize
            out = _vector_row(flat, lanes) if x.size >= lanes else _row(flat)
            return (out + _ZERO[x.dtype.char]).reshape((1,) * x.ndim if keepdim else ())
        dims = tuple(range(x.ndim))
    axes = {d % x.ndim for d in dims} if x.ndim else set()
    kept = tuple(n for a, n in enumerate(x.shape) if a not in axes)
    final = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) if keepdim else kept
    if x.size == 0 or x.ndim == 0:
        return (x + _ZERO[x.dtype.char]) if x.size else np.zeros(final, x.dtype)
    # +0: PyTorch's accumulators start at +0, so they never end at -0
    return (_sum(x, axes, math.prod(kept)) + _ZERO[x.dtype.char]).reshape(final)


def _sum(x: np.ndarray, axes: set[int], out_numel: int) -> np.ndarray:
    """The sums in the order PyTorch's threads and kernels add them."""
    if any(s < 0 for s in x.strides):
        x = np.ascontiguousarray(x)
    nthreads = threads()
    serial = x.size < GRAIN or nthreads == 1
    if serial and x.flags.c_contiguous:
        out = _contiguous_block(x, axes)
        if out is not None:
            return out
    it = _Iter(x, axes)
    v = it.view(x)
    if serial:
        return _serial(v, it)
    if out_numel == 1:
        buf = np.zeros(nthreads, x.dtype)  # one partial sum per thread, then their sum
        for t, (b, e) in enumerate(thread_chunks(x.size, nthreads, GRAIN)):
            buf[t] = _calls(v, it, b, e)
        return _loop2d(buf[np.newaxis], 1, 0)[0]
    return _split_dims(v, it, nthreads)


def _split_dims(v: np.ndarray, it: _Iter, nthreads: int) -> np.ndarray:
    """A sum over dims split between threads by the outermost kept dim that has
    enough columns (columns rounded to 128 bytes when the input is contiguous in it)."""
    k = len(it.sizes)
    best = k - 1
    dim = None
    for d in range(k - 1, -1, -1):
        if it.reduced[d]:
            break
        if it.sizes[d] >= nthreads:
            dim = d
            break
        if it.sizes[d] > it.sizes[best]:
            best = d
    dim = best if dim is None else dim
    cols = it.sizes[dim]
    axis = k - 1 - dim  # in v (outermost first)
    kept_axis = sum(1 for d in range(dim + 1, k) if not it.reduced[d])
    per = 128 // v.itemsize if it.strides[dim] == 1 else 1
    pieces = []
    for b, e in thread_chunks(cols, nthreads, 1):
        b -= b % per
        if e != cols:
            e -= e % per
        if b == e:
            continue
        sub = _Iter.__new__(_Iter)
        sub.sizes = it.sizes[:dim] + [e - b] + it.sizes[dim + 1 :]
        sub.strides, sub.reduced = it.strides, it.reduced
        pieces.append(_serial(v[(slice(None),) * axis + (slice(b, e),)], sub))
    return np.concatenate(pieces, axis=kept_axis)


def torch_sum(
    x: np.ndarray, dims: tuple[int, ...] | None, keepdim: bool = False, dtype: object = None
) -> np.ndarray:
    """`np.sum` in PyTorch's order for float32 and float64 results (NumPy's for the
    other dtypes, whose sums are exact or not modelled); `dtype` casts first."""
    dt = x.dtype if dtype is None else np.dtype(dtype)  # type: ignore[call-overload]
    if dt.char not in _ZERO:
        return np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype)  # type: ignore[call-overload]
    return cascade_sum(x if x.dtype == dt else x.astype(dt), dims, keepdim)


def torch_mean(x: np.ndarray, dims: tuple[int, ...] | None, keepdim: bool = False) -> np.ndarray:
    """PyTorch's CPU mean: its sum divided by the count, in x's float dtype."""
    if x.dtype.char not in _ZERO:
        return np.mean(x, axis=dims, keepdims=keepdim, dtype=x.dtype)
    n = (
        x.size
        if dims is None
        else math.prod(x.shape[d] for d in {d % max(x.ndim, 1) for d in dims})
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return cascade_sum(x, dims, keepdim) / x.dtype.type(n)


# --- nll_loss's own cascade ------------------------------------------------------
#
# nll_loss (and nll_loss2d) add their reduced losses, and their class weights, with
# their own loop: every valid element is added to level 0 in order, then, at an
# element whose index is a multiple of 2**p, level 0 is added into level 1 (and
# cleared), at a multiple of 2**(2p) level 1 into level 2, ... up to 8 levels, which
# are finally added up from +0 (p = max(4, ceil(log2(n)) // 8)). An ignored element
# is skipped before that check, so it carries nothing.

_NLL_LEVELS = 8


def _runs_sums(v: np.ndarray, closes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left-to-right sums of the runs of v that end where `closes` is True (each run
    starting at +0), and the sum of what follows the last of them."""
    ends = np.flatnonzero(closes)
    bounds = np.concatenate([[0], ends + 1, [v.size]])
    lengths = np.diff(bounds)
    width = int(lengths.max()) if lengths.size else 0
    zero = np.zeros((), v.dtype)
    if width == 0:
        return np.zeros(ends.size, v.dtype), zero
    if lengths.size * width <= 8 * v.size + 1024:
        # runs as rows padded with +0 after their end: an added +0 changes no sum
        row = np.repeat(np.arange(lengths.size), lengths)
        grid = np.zeros((lengths.size, width), v.dtype)
        grid[row, np.arange(v.size) - bounds[row]] = v
        sums = zero + np.add.accumulate(grid, axis=1)[:, -1]
    else:  # a few very long runs (most multiples of 2**p ignored): one at a time
        sums = np.array(
            [
                zero + (np.add.accumulate(v[a:b])[-1] if b > a else zero)
                for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            ],
            v.dtype,
        )
    return sums[:-1], sums[-1]


_NLL_SERIAL = 300  # up to about this many values the loop is faster than the runs


def _nll_serial(values: np.ndarray, index: np.ndarray, p: int) -> np.ndarray:
    """`nll_cascade_sum` as nll_loss's loop runs it, one value at a time (NumPy
    scalars round each sum as the arrays do)."""
    zero = values.dtype.type(0)
    levels = [zero] * _NLL_LEVELS
    for v, i in zip(values.tolist(), index.tolist(), strict=True):
        levels[0] = levels[0] + values.dtype.type(v)
        j = 0
        while j < _NLL_LEVELS - 1 and i % (1 << (p * (j + 1))) == 0:
            levels[j + 1] = levels[j + 1] + levels[j]
            levels[j] = zero
            j += 1
    total = zero
    for level in levels:
        total = total + level
    return np.asarray(total)


def nll_cascade_sum(values: np.ndarray, index: np.ndarray, count: int) -> np.ndarray:
    """Sum of `values` (one per valid element, at linear position `index`, ascending,
    out of `count` elements) in the order of nll_loss's cascade."""
    p = max(4, max(count - 1, 1).bit_length() // _NLL_LEVELS)
    if values.size <= _NLL_SERIAL:
        return _nll_serial(values, index, p)
    levels = []
    for j in range(_NLL_LEVELS - 1):
        closes = index % (1 << (p * (j + 1))) == 0
        carried, rest = _runs_sums(values, closes)
        levels.append(rest)
        values, index = carried, index[closes]
    levels.append(_runs_sums(values, np.zeros(values.size, bool))[1])
    total = np.zeros((), values.dtype)
    for level in levels:
        total = total + level
    return total
