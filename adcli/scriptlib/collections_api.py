"""`import collections` in a script: OrderedDict, defaultdict and Counter.

Each is a subclass of Python's own class, so it prints, compares and counts as
Python's does and `type(x)` shows `<class 'collections.Counter'>`. The subclasses
only add what the sandbox needs: the methods a script may read (`__ad_attrs__`)
and a bound on what one call may take in (`Counter(range(10**12))` is refused at
once, where Python would count until the run's time budget ends it).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from adcli.lang.errors import LimitError
from adcli.nn.module import OrderedDict

__all__ = ["Counter", "OrderedDict", "defaultdict", "collections_table"]

# Same default as adcli.lang.host.Limits.
_MAX_ITEMS = 10_000_000

_DICT_METHODS = "keys values items get pop update copy setdefault popitem clear fromkeys"


def _bounded(items: Any, what: str) -> Any:
    """`items`, or an iterator over it that stops the run past the item limit."""
    if items is None or isinstance(items, Mapping):
        return items
    if not isinstance(items, Iterable):
        return items  # Python's own TypeError follows

    def walk(it: Iterator[Any]) -> Iterator[Any]:
        for i, x in enumerate(itertools.chain(it)):
            if i >= _MAX_ITEMS:
                raise LimitError(f"{what} of more than {_MAX_ITEMS:,} items")
            yield x

    return walk(iter(items))


class Counter(collections.Counter):
    """Python's Counter, taking in at most the item limit per call."""

    __ad_attrs__ = frozenset((_DICT_METHODS + " most_common elements subtract total").split())

    def __init__(self, iterable: Any = None, /, **kwds: Any) -> None:
        super().__init__(_bounded(iterable, "Counter"), **kwds)

    def update(self, iterable: Any = None, /, **kwds: Any) -> None:
        """Count the items of `iterable` (or add a mapping's counts)."""
        super().update(_bounded(iterable, "Counter.update"), **kwds)

    def subtract(self, iterable: Any = None, /, **kwds: Any) -> None:
        """Subtract the items of `iterable` (or a mapping's counts)."""
        super().subtract(_bounded(iterable, "Counter.subtract"), **kwds)


class defaultdict(collections.defaultdict):  # noqa: N801 (Python's name)
    """Python's defaultdict (its factory is any script callable, `int` or `list`)."""

    __ad_attrs__ = frozenset((_DICT_METHODS + " default_factory").split())

    def __init__(self, default_factory: Any = None, *args: Any, **kwds: Any) -> None:
        if args:
            args = (_bounded(args[0], "defaultdict"), *args[1:])
        super().__init__(default_factory, *args, **kwds)


for _cls in (Counter, defaultdict, OrderedDict):
    _cls.__module__ = "collections"  # printed as Python's classes


def collections_table() -> dict[str, Any]:
    """The members of `collections` a script may use."""
    return {"OrderedDict": OrderedDict, "defaultdict": defaultdict, "Counter": Counter}
