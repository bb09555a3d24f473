"""A tensor's storage as PyTorch sees it, read from the NumPy memory adcli keeps.

adcli holds no storage object: a tensor that owns its memory (no `_base`) keeps a
NumPy array, and views are NumPy views into it. PyTorch's storage of such a tensor
is its elements in memory order, which is what `as_strided` indexes; this module
finds that order, and where elements of one array sit in another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

__all__ = [
    "converted",
    "dense_order",
    "element_positions",
    "empty_like_iterator",
    "flat_storage",
    "iterator_order",
    "iterator_result",
    "iterator_sort",
    "torch_strides",
]

_T = TypeVar("_T")


def iterator_sort(items: list[_T], should_swap: Callable[[_T, _T], int]) -> None:
    """TensorIterator's reorder of its dims, in place, index 0 innermost: an insertion
    sort where `should_swap(a, b)` > 0 moves b inside a, < 0 stops, and 0 (ambiguous,
    a broadcast dim) passes over a. Sums' and extremes' last bits, and the layout of
    results, follow the order this gives."""
    for i in range(1, len(items)):
        j = i
        for k in range(i - 1, -1, -1):
            c = should_swap(items[k], items[j])
            if c > 0:
                items[k], items[j] = items[j], items[k]
                j = k
            elif c < 0:
                break


def iterator_order(shape: tuple[int, ...], strides: Sequence[Sequence[int]]) -> list[int]:
    """The dims, slowest first, TensorIterator orders an op's result by
    (reorder_dimensions): each operand's strides (broadcast dims 0) in turn decide a
    pair of dims, a 0 stride passing the decision on to the next operand, equal strides
    putting the smaller size inner; a pair no operand decides keeps its order."""
    operands = range(len(strides))

    def should_swap(d0: int, d1: int) -> int:
        for k in operands:
            st = strides[k]
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(len(shape) - 1, -1, -1))
    iterator_sort(perm, should_swap)
    return perm[::-1]


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The dims, slowest first, of the dense layout PyTorch gives a result shaped and
    strided so (infer_dense_strides): by stride, stride-0 dims staying where they are,
    equal strides putting the smaller size inner."""
    return iterator_order(shape, (strides,))


def torch_strides(x: np.ndarray) -> tuple[int, ...]:
    """`x`'s strides in elements as PyTorch has them: NumPy's, which adcli keeps equal
    to PyTorch's (size-1 dims, views of expanded dims, empty arrays: see Tensor._make)."""
    size = x.itemsize
    return tuple(st // size for st in x.strides)


def flat_storage(arr: np.ndarray) -> np.ndarray | None:
    """The array's elements in memory order, as a flat view sharing its memory (a
    write to it reaches `arr`), or None when its elements are not one dense block
    (overlapping, gapped or reversed strides)."""
    if arr.flags.c_contiguous:
        return arr.reshape(-1)
    dims = [d for d in range(arr.ndim) if arr.shape[d] != 1]
    if any(arr.strides[d] <= 0 for d in dims):
        return None
    order = sorted(range(arr.ndim), key=lambda d: -arr.strides[d] if d in dims else 0)
    moved = arr.transpose(order)
    if not moved.flags.c_contiguous:
        return None
    flat = moved.reshape(-1)
    return flat if np.shares_memory(flat, arr) else None


def _byte_offsets(a: np.ndarray, first: int) -> np.ndarray:
    """Each element's byte offset in memory, `first` being the first element's."""
    off = np.full(a.shape, first, np.int64)
    for dim, (n, stride) in enumerate(zip(a.shape, a.strides, strict=True)):
        shape = [1] * a.ndim
        shape[dim] = n
        off += (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return off


def element_positions(
    base: np.ndarray, view: np.ndarray
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Where each element of `view` sits in `base` (both reading one memory): an index
    into `base` of `view`'s shape (`()` for a 0-d base), and a mask of the elements
    found there (the others get position 0)."""
    start = base.__array_interface__["data"][0]
    view_off = _byte_offsets(view, view.__array_interface__["data"][0] - start)
    if base.ndim == 0:
        return (), view_off == 0
    if base.size == 0:
        return tuple(np.zeros(view.shape, np.intp) for _ in base.shape), np.zeros(view.shape, bool)
    base_off = _byte_offsets(base, 0).ravel()
    view_off = view_off.ravel()
    order = np.argsort(base_off, kind="stable")
    ranked = base_off[order]
    k = np.minimum(np.searchsorted(ranked, view_off), ranked.size - 1)
    found = ranked[k] == view_off
    pos = np.where(found, order[k], 0).reshape(view.shape)
    return np.unravel_index(pos, base.shape), found.reshape(view.shape)


def empty_like_iterator(x: np.ndarray) -> np.ndarray:
    """An uninitialised array of x's shape and dtype laid out as PyTorch's
    TensorIterator lays out a unary op's result: contiguous for a contiguous x, x's
    own strides for a dense x, else dense in the order of x's strides (broadcast
    dims keeping their place)."""
    if x.flags.c_contiguous:
        return np.empty(x.shape, x.dtype)
    return _empty_in_layout(x, x.dtype)


def clone_preserving(x: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """A copy of x (cast to `dtype`) laid out as PyTorch's empty_like(preserve_format)
    lays out clone's and `to`'s results: x's own strides, a size-1 dim's included, when
    x is dense, else dense in the order of x's strides, stride-0 dims keeping their
    place (NumPy's astype would put those innermost, which `as_strided` then sees).
    Unlike TensorIterator, a contiguous x with odd size-1 strides keeps them."""
    dtype = x.dtype if dtype is None else dtype
    if x.flags.c_contiguous and (x.ndim < 2 or x.strides == _c_strides(x.shape, x.itemsize)):
        return x.astype(dtype)
    out = _empty_in_layout(x, dtype)
    np.copyto(out, x, casting="unsafe")
    return out


def _empty_in_layout(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An uninitialised `dtype` array of x's shape: x's strides exactly (a size-1 dim's
    too) when x is dense, else dense in the order of x's strides."""
    if flat_storage(x) is not None:
        strides = [st // x.itemsize * dtype.itemsize for st in x.strides]
        return np.lib.stride_tricks.as_strided(np.empty(x.size, dtype), x.shape, strides)
    order = dense_order(x.shape, x.strides)
    return np.empty(tuple(x.shape[d] for d in order), dtype).transpose(np.argsort(order))


def converted(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`x` cast to `dtype` in the layout PyTorch's `to` gives (see clone_preserving)."""
    return clone_preserving(x, np.dtype(dtype))


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out = []
    step = itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """PyTorch's is_non_overlapping_and_dense: the dims of size 2 or more, by stride,
    tile one block."""
    expect = 1
    for d in sorted([d for d in range(len(shape)) if shape[d] > 1], key=strides.__getitem__):
        if strides[d] != expect:
            return False
        expect *= shape[d]
    return True


def _channels_last(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """PyTorch's is_contiguous(memory_format=torch.channels_last), for 4 dims."""
    expect = 1
    for d in (1, 3, 2, 0):
        if shape[d] != 1:
            if strides[d] != expect:
                return False
            expect *= shape[d]
    return True


def _result_strides(
    shape: tuple[int, ...], operands: Sequence[np.ndarray]
) -> tuple[list[int], tuple[int, ...] | None]:
    """The dims, slowest first, and strides of an elementwise result as PyTorch's
    TensorIterator allocates it (None: contiguous)."""
    n = len(shape)
    strides = [torch_strides(x) for x in operands]
    if all(x.shape == shape for x in operands):  # its fast set-up
        if all(x.flags.c_contiguous for x in operands):
            return list(range(n)), None
        if n == 4 and all(_channels_last(shape, st) for st in strides):
            c = shape[1]
            w = c * shape[3]
            return [0, 2, 3, 1], (w * shape[2], 1, w, c)
        first = strides[0]
        if all(st == first for st in strides) and _dense(shape, first):
            return dense_order(shape, first), first
    wide = []
    for x, st in zip(operands, strides, strict=True):
        lead = n - x.ndim
        wide.append(
            (0,) * lead
            + tuple(0 if x.shape[i] == 1 and shape[lead + i] != 1 else st[i] for i in range(x.ndim))
        )
    perm = iterator_order(shape, wide)
    if perm == list(range(n)):
        return perm, None
    out = [0] * n
    step = 1
    for d in reversed(perm):
        out[d] = step
        step *= shape[d]
    return perm, tuple(out)


def iterator_result(
    out: np.ndarray, operands: Sequence[np.ndarray], common: np.dtype | None = None
) -> np.ndarray:
    """`out`, an elementwise op's result computed by NumPy from `operands` (the op's
    inputs in PyTorch's operand order, a number as a 0-d array), in the layout PyTorch's
    TensorIterator gives it: contiguous when every operand is, else by the operands'
    strides (see `iterator_order`), an operand not of the `common` dtype the op computes
    in counting as converted first (as PyTorch's CPU kernels convert it, with `to`). A
    copy only when NumPy's layout differs."""
    if out.ndim < 2 or out.size == 0:
        return out if out.flags.c_contiguous else out.copy(order="C")
    shape = out.shape
    if all(x.flags.c_contiguous for x in operands) and (
        all(x.shape == shape for x in operands) or all(1 not in x.shape for x in operands)
    ):
        # contiguous operands: so is the result (a size-1 dim's stride, which can be
        # anything in a contiguous tensor, can order a broadcast result otherwise)
        return out if out.flags.c_contiguous else out.copy(order="C")
    if common is not None:
        operands = [
            x if x.dtype == common or x.ndim == 0 else empty_like_iterator(x) for x in operands
        ]
    perm, strides = _result_strides(shape, operands)
    if strides is None:
        return out if out.flags.c_contiguous else out.copy(order="C")
    if torch_strides(out) == strides:
        return out
    item = out.dtype.itemsize
    buf = np.lib.stride_tricks.as_strided(
        np.empty(out.size, out.dtype), out.shape, tuple(s * item for s in strides)
    )
    buf[...] = out
    return buf
