"""A tensor's storage as PyTorch sees it, read from the NumPy memory adcli keeps.

adcli holds no storage object: a tensor that owns its memory (no `_base`) keeps a
NumPy array, and views are NumPy views into it. PyTorch's storage of such a tensor
is its elements in memory order, which is what `as_strided` indexes; this module
finds that order, and where elements of one array sit in another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

__all__ = [
    "converted",
    "dense_order",
    "element_positions",
    "empty_like_iterator",
    "flat_storage",
    "iterator_sort",
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


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The dims, slowest first, of the dense layout PyTorch gives a result shaped and
    strided so (infer_dense_strides): by stride, stride-0 dims staying where they are,
    equal strides putting the smaller size inner."""

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    perm = list(range(len(shape) - 1, -1, -1))
    iterator_sort(perm, should_swap)
    return perm[::-1]


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
    if flat_storage(x) is not None:
        return np.empty_like(x)
    order = dense_order(x.shape, x.strides)
    buf = np.empty(tuple(x.shape[d] for d in order), x.dtype)
    return buf.transpose(np.argsort(order))


def converted(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`x` cast to `dtype` in the layout PyTorch's `to` gives (empty_like): a dense
    layout kept, an expanded one ordered by its strides with its stride-0 dims in place
    (NumPy's astype would put those innermost, which `as_strided` then sees)."""
    if x.flags.c_contiguous:
        return x.astype(dtype)
    out = np.empty_like(empty_like_iterator(x), dtype=dtype)
    np.copyto(out, x, casting="unsafe")
    return out
