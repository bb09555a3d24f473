"""`torch.multinomial` and `Tensor.exponential_`, drawing PyTorch 2.13's CPU numbers.

`multinomial` follows PyTorch's two CPU algorithms (checked by experiment against
torch; tests/conformance/test_random_vs_torch.py):

- without replacement, and with it when one sample is asked for: the exponential
  race. `q = empty_like(p).exponential_(1)`, then `p / q` in p's dtype; one sample
  is its `argmax` (the first maximum), more are its `topk`, whose ties (the zeros
  of p) come out in the order libstdc++'s `nth_element`/`sort`/`partial_sort` leave
  them, reproduced here step for step;
- with replacement and several samples: per row, the cumulative sum in p's dtype
  (float for float16), divided by the total, its last entry set to 1, and per sample
  one double uniform (53 bits) located by binary search (the first entry >= it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import random as rng
from .generator import check_generator, pick
from .tensor import Tensor

__all__ = ["exponential_", "fill_in_memory_order", "multinomial"]

#: torch refuses more categories than float32 counts exactly
_MAX_CATEGORIES = 1 << 24


def fill_in_memory_order(dst: np.ndarray, values: np.ndarray) -> None:
    """Write `values` (flat, in fill order) into `dst` in the order PyTorch's
    TensorIterator walks memory: the dimension with the largest stride outermost."""
    order = sorted(range(dst.ndim), key=lambda d: -abs(dst.strides[d]))
    view = dst.transpose(order)
    view[...] = values.reshape(view.shape)


def exponential_(a: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """`x.exponential_(lambd=1, generator=None)`: Exp(lambd) samples written in place."""
    gen = pick("exponential_", generator)
    a._check_inplace()
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(
            f"exponential_ expects lambda > 0.0, but found lambda={rng._fmt_scalar(lambd)}"
        )
    if not a.data_.size:
        return a
    if a.data_.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must "
            f"be a floating point but you specified {a.dtype.legacy[:-6]}"
        )
    if a.requires_grad:
        raise NotImplementedError(
            "adcli does not support exponential_ on a tensor that requires grad yet"
        )
    fill_in_memory_order(a.data_, gen.exponential(a.data_.size, lambd, a.dtype.name))
    a._vc[0] += 1
    return a


def _type_name(value: Any) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def multinomial(
    input: Any,  # noqa: A002 - PyTorch's name
    num_samples: Any = None,
    replacement: Any = False,
    *,
    generator: Any = None,
    out: Any = None,
    _method: bool = False,
) -> Tensor:
    """`torch.multinomial(input, num_samples, replacement=False, *, generator=None)`:
    indices drawn from each row of `input` (non-negative weights), int64."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"multinomial(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    if num_samples is None:
        raise TypeError('multinomial() missing 1 required positional arguments: "num_samples"')
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(
            f"multinomial(): argument 'num_samples' (position {1 if _method else 2}) must be "
            "int, not "
            f"{_type_name(num_samples)}"
        )
    if not isinstance(replacement, (bool, np.bool_)):
        raise TypeError(
            f"multinomial(): argument 'replacement' must be bool, not {_type_name(replacement)}"
        )
    check_generator("multinomial", generator)
    if out is not None:
        raise NotImplementedError("adcli's torch.multinomial does not take out= yet")
    p = input.data_
    n_sample = int(num_samples)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if p.dtype.kind != "f":
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{input.dtype.legacy[:-6]}"
        )
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_categories = p.shape[-1]
    if not replacement and n_sample > n_categories:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    if n_categories > _MAX_CATEGORIES:
        raise RuntimeError("number of categories cannot exceed 2^24")
    shape = (n_sample,) if p.ndim == 1 else (p.shape[0], n_sample)
    if math.prod(shape) == 0:
        return Tensor._make(np.zeros(shape, dtype=np.int64))
    gen = pick("multinomial", generator)
    rows = p.reshape(-1, n_categories) if p.ndim == 2 else p.reshape(1, n_categories)
    if not replacement or n_sample == 1:
        result = _exponential_race(p, rows, n_sample, gen, input.dtype.name)
    else:
        result = _with_replacement(rows, n_sample, gen)
    return Tensor._make(result.reshape(shape))


def _exponential_race(
    p: np.ndarray, rows: np.ndarray, k: int, gen: rng.Generator, dtype: str
) -> np.ndarray:
    """PyTorch's fast path: argmax / topk of `p / q` with `q ~ Exp(1)`."""
    with np.errstate(invalid="ignore"):
        valid = bool(np.max(p) < np.inf) and bool(np.min(p) >= 0)
    if not valid:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((rows.sum(axis=1, dtype=np.float64) == 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    q = np.empty_like(p)  # filled in p's memory order, as empty_like(p) is
    fill_in_memory_order(q, gen.exponential(p.size, 1.0, dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (p / q).reshape(rows.shape)
    if k == 1:
        return np.argmax(ratio, axis=1).astype(np.int64).reshape(-1, 1)
    return np.array([_topk_indices(row, k) for row in ratio], dtype=np.int64)


def _with_replacement(rows: np.ndarray, k: int, gen: rng.Generator) -> np.ndarray:
    """PyTorch's CPU kernel: normalised cumulative sums and binary search."""
    work = np.float64 if rows.dtype == np.float64 else np.float32
    result = np.empty((rows.shape[0], k), dtype=np.int64)
    for i, row in enumerate(rows):
        bad = ~((row >= 0) & np.isfinite(row))
        if bad.any():
            first = row[int(np.argmax(bad))]
            if not first >= 0:
                raise RuntimeError(
                    "invalid multinomial distribution (encountering probability entry < 0)"
                )
            raise RuntimeError(
                "invalid multinomial distribution "
                "(encountering probability entry = infinity or NaN)"
            )
        cum = np.cumsum(row.astype(work), dtype=work)  # sequential, in the row's dtype
        total = cum[-1]
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum = cum / total
        cum[-1] = 1
        uniforms = gen._uniform01(k, "float64")
        result[i] = np.searchsorted(cum.astype(np.float64), uniforms, side="left")
    return result


# ------------------------------------------------ topk's order, as libstdc++ leaves it


def _topk_indices(row: np.ndarray, k: int) -> list[int]:
    """The indices `torch.topk(row, k)` returns (largest, sorted) on the CPU."""
    values = row.tolist()
    if len(set(values)) == len(values) and not any(v != v for v in values):
        # no ties: the order is the sorted order, whatever the algorithm
        return [int(i) for i in np.argsort(-row, kind="stable")[:k]]
    items = [(v, i) for i, v in enumerate(values)]
    if k * 64 <= len(items):
        _partial_sort(items, 0, k, len(items))
    else:
        _nth_element(items, 0, k - 1, len(items))
        _sort(items, 0, k - 1)
    return [i for _, i in items[:k]]


def _less(x: tuple[float, int], y: tuple[float, int]) -> bool:
    """topk's comparator for `largest`: NaN first, then larger values."""
    a, b = x[0], y[0]
    return (a != a and b == b) or a > b


def _lg(n: int) -> int:
    return n.bit_length() - 1


def _nth_element(v: list, first: int, nth: int, last: int) -> None:
    if first == last or nth == last:
        return
    depth = _lg(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(v, first, nth + 1, last)
            v[first], v[nth] = v[nth], v[first]
            return
        depth -= 1
        cut = _partition_pivot(v, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, first, last)


def _sort(v: list, first: int, last: int) -> None:
    if first == last:
        return
    _introsort_loop(v, first, last, _lg(last - first) * 2)
    if last - first > 16:
        _insertion_sort(v, first, first + 16)
        for i in range(first + 16, last):
            _linear_insert(v, i)
    else:
        _insertion_sort(v, first, last)


def _introsort_loop(v: list, first: int, last: int, depth: int) -> None:
    while last - first > 16:
        if depth == 0:
            _partial_sort(v, first, last, last)
            return
        depth -= 1
        cut = _partition_pivot(v, first, last)
        _introsort_loop(v, cut, last, depth)
        last = cut


def _partition_pivot(v: list, first: int, last: int) -> int:
    mid = first + (last - first) // 2
    _median_to_first(v, first, first + 1, mid, last - 1)
    return _partition(v, first + 1, last, first)


def _median_to_first(v: list, result: int, a: int, b: int, c: int) -> None:
    if _less(v[a], v[b]):
        if _less(v[b], v[c]):
            pick = b
        elif _less(v[a], v[c]):
            pick = c
        else:
            pick = a
    elif _less(v[a], v[c]):
        pick = a
    elif _less(v[b], v[c]):
        pick = c
    else:
        pick = b
    v[result], v[pick] = v[pick], v[result]


def _partition(v: list, first: int, last: int, pivot: int) -> int:
    while True:
        while _less(v[first], v[pivot]):
            first += 1
        last -= 1
        while _less(v[pivot], v[last]):
            last -= 1
        if not first < last:
            return first
        v[first], v[last] = v[last], v[first]
        first += 1


def _insertion_sort(v: list, first: int, last: int) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if _less(v[i], v[first]):
            val = v[i]
            v[first + 1 : i + 1] = v[first:i]
            v[first] = val
        else:
            _linear_insert(v, i)


def _linear_insert(v: list, last: int) -> None:
    val = v[last]
    nxt = last - 1
    while _less(val, v[nxt]):
        v[last] = v[nxt]
        last = nxt
        nxt -= 1
    v[last] = val


def _partial_sort(v: list, first: int, middle: int, last: int) -> None:
    _heap_select(v, first, middle, last)
    while middle - first > 1:  # sort_heap
        middle -= 1
        _pop_heap(v, first, middle, middle)


def _heap_select(v: list, first: int, middle: int, last: int) -> None:
    length = middle - first
    if length >= 2:  # make_heap
        parent = (length - 2) // 2
        while True:
            _adjust_heap(v, first, parent, length, v[first + parent])
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if _less(v[i], v[first]):
            _pop_heap(v, first, middle, i)


def _pop_heap(v: list, first: int, last: int, result: int) -> None:
    value = v[result]
    v[result] = v[first]
    _adjust_heap(v, first, 0, last - first, value)


def _adjust_heap(v: list, first: int, hole: int, length: int, value: Any) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(v[first + child], v[first + child - 1]):
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if length & 1 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # push_heap
    while hole > top and _less(v[first + parent], value):
        v[first + hole] = v[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = value
