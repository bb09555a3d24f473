"""The index orders of `sort` and `topk` as PyTorch 2.13's CPU kernels produce them.

Facts checked against torch (tests/conformance/scripts/topk_sort.ad):

- `sort` compares values with NaN the largest and -0. equal to 0.; with
  `stable=True` it is a stable sort, otherwise libstdc++'s `std::sort` on (value,
  index) pairs (an insertion sort, so stable, up to 16 elements; introsort above,
  where equal values come out in its order), except the stable radix sort PyTorch
  takes for 1-d ascending integer sorts of 32768 elements or more;
- `topk` runs libstdc++'s `partial_sort` (when `k * 64 <= n`) or `nth_element`
  followed by `sort` of the first k - 1 on (value, index) pairs, which are not
  stable: equal values come out in the order those algorithms leave them, and with
  `sorted=False` the k picked elements keep nth_element's arrangement. The steps
  are reproduced by sampling.py's copy of those algorithms.
"""

from __future__ import annotations

import numpy as np

from .sampling import _nth_element, _partial_sort, _sort

__all__ = ["sort_order", "topk_order"]


def sort_order(x: np.ndarray, dim: int, descending: bool, stable: bool) -> np.ndarray:
    """The int64 indices `sort` returns along `dim` (NaN the largest value)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if x.dtype == np.bool_:  # (a uint8 view orders the same)
        x = x.view(np.uint8)
    order = _stable_order(x, dim, descending)
    if stable or x.shape[dim] <= 16 or _radix(x, descending):
        return order  # (std::sort of up to 16 elements is an insertion sort: stable)
    moved = np.moveaxis(x, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    out = np.moveaxis(order, dim, -1).reshape(rows.shape)
    for r, row in enumerate(rows):
        keys = _ranks(row, descending)
        if len(set(keys)) < len(keys):  # ties: std::sort's order, not the stable one
            items = [(key, i) for i, key in enumerate(keys)]
            _sort(items, 0, len(items))
            out[r] = [i for _, i in items]
    return np.moveaxis(out.reshape(moved.shape), -1, dim)


def _radix(x: np.ndarray, descending: bool) -> bool:
    """Whether PyTorch takes its (stable) radix sort: a 1-d ascending integer sort
    of at least 32768 elements."""
    return x.ndim == 1 and not descending and x.dtype.kind in "iu" and x.size >= 32768


def _stable_order(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """The indices of a stable sort along `dim`, ties in their original order."""
    if not descending:
        return np.argsort(x, axis=dim, kind="stable").astype(np.int64)
    # A stable ascending sort of the reversed row, reversed again, puts ties (NaNs
    # included) in their original order while ordering values from the largest.
    n = x.shape[dim]
    order = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
    return (n - 1 - np.flip(order, dim)).astype(np.int64)


def _ranks(row: np.ndarray, largest: bool) -> list[int]:
    """Integer keys whose `a > b` is topk's comparator: equal values share a key,
    NaN is the largest value; for `largest=False` the keys are negated."""
    _, inverse = np.unique(row, return_inverse=True)  # (NaNs collapse to one, last)
    keys = inverse.reshape(-1).astype(np.int64)
    return (keys if largest else -keys).tolist()


def _row_topk(row: np.ndarray, k: int, largest: bool, ordered: bool) -> list[int]:
    """The indices topk picks from one row, in the order PyTorch's kernel leaves them."""
    keys = _ranks(row, largest)
    n = len(keys)
    partial = k * 64 <= n
    if (ordered or partial) and len(set(keys)) == n:
        # no ties and a sorted result: the order is the values' order, whatever the
        # algorithm (sorted by key, largest key first)
        return np.argsort(-np.asarray(keys), kind="stable")[:k].tolist()
    items = [(key, i) for i, key in enumerate(keys)]
    if partial:
        _partial_sort(items, 0, k, n)
    else:
        _nth_element(items, 0, k - 1, n)
        if ordered:
            _sort(items, 0, k - 1)
    return [i for _, i in items[:k]]


def topk_order(x: np.ndarray, dim: int, k: int, largest: bool, ordered: bool) -> np.ndarray:
    """The int64 indices `topk` returns along `dim` (k of them; `x` at least 1-d)."""
    moved = np.moveaxis(x, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else None
    out = np.zeros((*moved.shape[:-1], k), np.int64)
    if k and rows is not None:
        picked = [_row_topk(row, k, largest, ordered) for row in rows]
        out = np.asarray(picked, np.int64).reshape(out.shape)
    return np.moveaxis(out, -1, dim)
