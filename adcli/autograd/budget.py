"""The size limit and the memory budget of tensors, checked before NumPy allocates.

Both are set by the host (adcli.core.session) in `config`:

- `config.max_numel` (`--max-numel`): no tensor has more elements. Operations whose
  result can be larger than their operands (broadcasting, matrix products, `cat`,
  `stack`, `repeat`, Jacobians...) check the result's shape with `check_shape` or
  `check_broadcast` before computing it. `Tensor._make` checks every large array
  it wraps (`watch`) as the last line of defence; that also refuses a broadcast
  view (`expand`) beyond the limit before any operation can read it whole (a sum of
  `ones(1).expand(10**6, 10**6)` would otherwise loop 10**12 times in C).
- `config.max_tensor_bytes` (`--max-tensor-memory`): the memory live tensors hold
  together. Arrays of `WATCH_BYTES` or more are counted from the moment a tensor
  wraps them until the array that owns their memory is freed (a weakref callback).
  Smaller arrays are not counted, so the common small operation pays one
  comparison; what escapes the count is bounded by the process's own memory budget
  (`--max-memory`, adcli.core.isolation).
"""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Iterable

import numpy as np

from .config import check_numel, config

__all__ = [
    "WATCH_BYTES",
    "check_broadcast",
    "check_shape",
    "live_bytes",
    "watch",
]

# Arrays at least this large are checked and counted by `watch` (Tensor._make).
WATCH_BYTES = 1 << 16

# id(array owning the memory) -> (weakref to it, bytes); ids are removed by the
# weakref's callback before the array's memory (and so its id) can be reused.
_live: dict[int, tuple[weakref.ref, int]] = {}
_total = [0]


def live_bytes() -> int:
    """Bytes held by the live tensor arrays being counted."""
    return _total[0]


def check_shape(shape: Iterable[int]) -> None:
    """Refuse a result of `shape` beyond the element limit (before allocating it)."""
    if config.max_numel is not None:
        check_numel(math.prod(shape))


def check_broadcast(*shapes: tuple[int, ...]) -> None:
    """Refuse a broadcast of `shapes` beyond the element limit (shapes must broadcast)."""
    limit = config.max_numel
    if limit is None:
        return
    bound = 1
    for s in shapes:
        bound *= math.prod(s)
    if bound > limit:  # cheap test first: the result is never larger than the product
        check_numel(math.prod(np.broadcast_shapes(*shapes)))


def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns `a`'s memory (the end of its chain of views; an
    `as_strided` view's base is a NumPy helper object holding the array)."""
    while True:
        b = a.base
        if not isinstance(b, np.ndarray):
            b = getattr(b, "base", None)
            if not isinstance(b, np.ndarray):
                return a
        a = b


def watch(data: np.ndarray) -> None:
    """Check an array of `WATCH_BYTES` or more a tensor is about to wrap: its elements
    against `max_numel`, and the memory it holds against `max_tensor_bytes`."""
    limit = config.max_numel
    if limit is not None and data.size > limit:
        check_numel(data.size)
    root = _root(data)
    key = id(root)
    if key in _live:
        return
    n = root.nbytes
    if n < WATCH_BYTES:  # a view that only looks big (a broadcast of a small array)
        return
    budget = config.max_tensor_bytes
    if budget is not None and _total[0] + n > budget:
        gc.collect()  # first free tensors only a reference cycle keeps (an old error's frames)
    if budget is not None and _total[0] + n > budget:
        raise MemoryError(
            f"tensors would hold {_size(_total[0] + n)}, more than the tensor memory budget"
            f" of {_size(budget)} (raise it with --max-tensor-memory)"
        )
    _live[key] = (weakref.ref(root, _freed_callback(key, n)), n)
    _total[0] += n


def _freed_callback(key: int, n: int) -> weakref.CallbackType:
    def freed(_ref: weakref.ref) -> None:
        if _live.pop(key, None) is not None:
            _total[0] -= n

    return freed


def _size(n: int) -> str:
    """Bytes as people read them: `1.5 GiB`, `640 MiB`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
