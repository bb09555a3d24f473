"""Bounds on single C-level steps a script's builtins could take (used by guard.py).

Python's own C code loops without checking anything when it prints, sorts or
searches. Three shapes of value make such a step run for hours or exhaust memory
from a small script, and each gets a cheap measurement here:

- nested containers that share their items: ``l = [l, l]`` doubled 40 times is
  41 lists in memory, yet its text has 2**40 parts. `nested_size` counts what
  printing (or comparing) would visit, in one pass over the distinct containers;
- huge ranges: ``0.5 in range(10**18)`` and ``{}.keys() & range(10**18)`` iterate
  in C. `BigRange` stands for a range longer than the sequence limit: it answers
  ``in`` by arithmetic and stops any iteration past the step limit;
- integer text: ``int('1' * 10**7, 2)`` builds a 10-million-bit int whose
  divisions are quadratic; `int_text_bits` estimates the result's size first.

Steps no builtin wrapper can reach (``==`` and ``in`` on nested lists, ``hash`` of a
tuple nested a million deep used as a dict key) are left to the child process's
time and memory budgets (adcli.core.isolation), which stop them with a clear error.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Any

__all__ = ["BigRange", "int_text_bits", "nested_size", "NESTED"]

_ATOMS = frozenset({int, float, bool, complex, type(None)})
#: The container types whose text and comparisons visit their items.
NESTED = frozenset({list, tuple, dict, set, frozenset})


def _items(obj: Any) -> Iterable[Any]:
    return chain(obj.keys(), obj.values()) if type(obj) is dict else obj


#: Items nested_size reads in Python loops before it gives up (None): a structure
#: needing more is broad, not deeply shared, and holds about as much memory as its
#: text would (the process's memory budget bounds it).
MAX_SCAN = 100_000


def _parts(obj: Any, budget: list[int]) -> tuple[int, list[tuple[Any, int]]] | None:
    """(len(obj) plus the lengths of its strings, [(item that is a container, how
    often it occurs)]), or None once `budget` (items left to read in Python) runs
    out. A long container is first read by passes in C: one of numbers only needs
    nothing more, and one repeating a few items (``[row] * 10**7``) is counted."""
    n = len(obj)
    if n > 16:
        if set(map(type, _items(obj))) <= _ATOMS:
            return n, []
        distinct = dict(zip(map(id, _items(obj)), _items(obj), strict=False))
        if len(distinct) < n // 2:
            budget[0] -= len(distinct)
            if budget[0] < 0:
                return None
            counts = Counter(map(id, _items(obj)))
            return _tally(n, [(x, counts[k]) for k, x in distinct.items()])
    budget[0] -= n
    if budget[0] < 0:
        return None
    return _tally(n, [(x, 1) for x in _items(obj)])


def _tally(n: int, items: list[tuple[Any, int]]) -> tuple[int, list[tuple[Any, int]]]:
    flat = n
    nested = []
    for x, k in items:
        t = type(x)
        if t is str:
            flat += len(x) * k
        elif t in NESTED:
            nested.append((x, k))
    return flat, nested


def nested_size(root: Any) -> int | None:
    """How many items (and string characters) str(root) or a comparison of `root`
    would visit, counting an item shared k times k times; None when measuring would
    read more than `MAX_SCAN` items. Each distinct container is read once
    (iteratively; a cycle counts once, as repr prints it as `[...]`)."""
    if type(root) not in NESTED:
        return len(root) if type(root) is str else 1
    budget = [MAX_SCAN]
    sizes: dict[int, int] = {}
    parts: dict[int, tuple[int, list[Any]]] = {}
    stack = [root]
    while stack:
        obj = stack[-1]
        key = id(obj)
        if key in sizes:
            stack.pop()
            continue
        if key not in parts:
            p = _parts(obj, budget)
            if p is None:
                return None
            parts[key] = p
            pending = [x for x, _ in p[1] if id(x) not in sizes and id(x) not in parts]
            if pending:
                stack.extend(pending)
                continue
        stack.pop()  # its items are measured (one still open is an ancestor: a cycle)
        flat, nested = parts[key]
        sizes[key] = flat + sum([sizes.get(id(x), 0) * k for x, k in nested])
    return sizes[id(root)]


def int_text_bits(text: str, base: int) -> float:
    """About how many bits ``int(text, base)`` has (an upper bound)."""
    b = base if 2 <= base <= 36 else 16  # base 0 reads a prefix: at most hexadecimal
    return len(text) * math.log2(b)


class BigRange:
    """A `range` longer than the sequence limit, as scripts see it.

    It prints, indexes, compares and measures as the range does, and iterates as
    it does in a ``for`` loop; but membership of a non-integer is answered by
    arithmetic (Python would compare it with every item in C), and iterating past
    `max_items` items (the step limit: no loop could go further) raises
    `refuse(count)`, so C code consuming it (``set & range``, ``zip`` into
    ``torch.Size``) stops too."""

    __slots__ = ("_r", "_max_items", "_refuse")

    def __init__(self, r: range, max_items: int, refuse: Callable[[int], BaseException]) -> None:
        self._r = r
        self._max_items = max_items
        self._refuse = refuse

    @property
    def __class__(self) -> type:  # type: ignore[override]
        return range  # isinstance(r, range) holds, as for a real range

    def __iter__(self) -> Iterator[int]:
        return self._bounded(iter(self._r))

    def __reversed__(self) -> Iterator[int]:
        return self._bounded(reversed(self._r))

    def _bounded(self, it: Iterator[int]) -> Iterator[int]:
        yield from islice(it, self._max_items)
        for _ in it:  # one item more than any loop could take
            raise self._refuse(self._max_items + 1)

    def __contains__(self, x: Any) -> bool:
        if type(x) is int or type(x) is bool:
            return x in self._r
        if isinstance(x, float):
            return math.isfinite(x) and x == int(x) and int(x) in self._r
        try:
            return int(x) == x and int(x) in self._r  # NumPy numbers, one-element tensors
        except Exception:
            raise self._refuse(len(self._r)) from None

    def __len__(self) -> int:
        return len(self._r)

    def __getitem__(self, i: Any) -> Any:
        r = self._r[i]
        return BigRange(r, self._max_items, self._refuse) if type(r) is range else r

    def __eq__(self, other: object) -> bool:
        return self._r == (other._r if type(other) is BigRange else other)

    def __hash__(self) -> int:
        return hash(self._r)

    def __bool__(self) -> bool:
        return bool(self._r)

    def __repr__(self) -> str:
        return repr(self._r)


BigRange.__name__ = BigRange.__qualname__ = "range"
