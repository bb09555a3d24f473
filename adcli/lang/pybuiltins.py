"""The pure Python builtins a script may use (print, len, range, ...).

`make_builtins(guards)` returns a fresh table; the evaluator layers the
host's globals over it, so a host can override any entry (``print`` above
all). Functions that consume an iterable refuse more than
`Limits.max_sequence` items instead of looping in C for ever
(``sum(range(10**12))``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from adcli.lang.sandbox import Guards

__all__ = ["make_builtins", "make_print", "EXCEPTIONS"]

# Exception classes scripts can name in ``except`` and ``raise``.
EXCEPTIONS: dict[str, type[BaseException]] = {
    cls.__name__: cls
    for cls in (
        Exception,
        ArithmeticError,
        AssertionError,
        AttributeError,
        ImportError,
        IndexError,
        KeyError,
        LookupError,
        ModuleNotFoundError,
        NameError,
        NotImplementedError,
        OverflowError,
        RuntimeError,
        TypeError,
        UnboundLocalError,
        ValueError,
        ZeroDivisionError,
    )
}

_MISSING: Any = object()


def make_print(write: Callable[[str], object] | None = None) -> Callable[..., None]:
    """A ``print(*values, sep=' ', end='\\n')`` writing through `write` (default: stdout)."""

    def print(
        *values: object, sep: str | None = " ", end: str | None = "\n", flush: bool = False
    ) -> None:  # noqa: A001
        if sep is None:
            sep = " "
        if end is None:
            end = "\n"
        if type(sep) is not str:
            raise TypeError(f"sep must be None or a string, not {type(sep).__name__}")
        if type(end) is not str:
            raise TypeError(f"end must be None or a string, not {type(end).__name__}")
        text = sep.join(str(v) for v in values) + end
        if write is None:
            sys.stdout.write(text)
        else:
            write(text)

    return print


def make_builtins(
    guards: Guards, write: Callable[[str], object] | None = None
) -> dict[str, object]:
    """A fresh table of the pure builtins, with `print` writing through `write`."""
    materialize = guards.materialize

    def list_(iterable: Iterable[Any] = ()) -> list:
        return materialize(iterable, "list")

    def tuple_(iterable: Iterable[Any] = ()) -> tuple:
        return tuple(materialize(iterable, "tuple"))

    def dict_(*args: Any, **kwargs: Any) -> dict:
        if len(args) > 1:
            raise TypeError(f"dict expected at most 1 argument, got {len(args)}")
        if args:
            src = args[0]
            result = dict(src) if isinstance(src, dict) else dict(materialize(src, "dict"))
        else:
            result = {}
        result.update(kwargs)
        return result

    def sum_(iterable: Iterable[Any], /, start: Any = 0) -> Any:
        items = materialize(iterable)
        if type(start) not in (list, tuple):
            return sum(items, start)  # numbers (and tensors) never grow in length
        # sum(lists, []) is quadratic in Python; extend a copy instead, with
        # the same result and the same TypeError for mismatched types.
        total = list(start)
        for x in items:
            if type(x) is not type(start):
                return guards.add(start if not total else type(start)(total), x)
            guards.check_len(len(total) + len(x))
            total.extend(x)
        return type(start)(total)

    def _minmax(name: str, pick: Callable, args: tuple, key: Any, default: Any) -> Any:
        if not args:
            raise TypeError(f"{name} expected at least 1 argument, got 0")
        if len(args) == 1:
            items = materialize(args[0])
            if not items:
                if default is not _MISSING:
                    return default
                raise ValueError(f"{name}() arg is an empty sequence")
        else:
            if default is not _MISSING:
                raise TypeError(
                    f"Cannot specify a default for {name}() with multiple positional arguments"
                )
            items = list(args)
        return pick(items, key=key)

    def min_(*args: Any, key: Any = None, default: Any = _MISSING) -> Any:
        return _minmax("min", min, args, key, default)

    def max_(*args: Any, key: Any = None, default: Any = _MISSING) -> Any:
        return _minmax("max", max, args, key, default)

    def sorted_(iterable: Iterable[Any], /, *, key: Any = None, reverse: bool = False) -> list:
        return sorted(materialize(iterable), key=key, reverse=reverse)

    def any_(iterable: Iterable[Any], /) -> bool:
        for x in _bounded(iterable):
            if x:
                return True
        return False

    def all_(iterable: Iterable[Any], /) -> bool:
        for x in _bounded(iterable):
            if not x:
                return False
        return True

    def _bounded(iterable: Iterable[Any]) -> Iterable[Any]:
        # Lazy, so any()/all() stop early, yet never loop for ever in C.
        limit = guards.max_seq
        for i, x in enumerate(iterable):
            if i >= limit:
                raise guards.too_long(i + 1)
            yield x

    def round_(number: Any, ndigits: Any = None) -> Any:
        if ndigits is None:
            return round(number)
        if type(number) is int and type(ndigits) is int and ndigits < 0:
            # round(5, -10**9) would compute 10**(10**9): answer directly.
            if -ndigits > number.bit_length() * 0.302 + 2:
                return 0
        return round(number, ndigits)

    table: dict[str, object] = {
        "print": make_print(write),
        "len": len,
        "range": range,
        "float": float,
        "int": int,
        "bool": bool,
        "str": str,
        "abs": abs,
        "round": round_,
        "min": min_,
        "max": max_,
        "sum": sum_,
        "list": list_,
        "tuple": tuple_,
        "dict": dict_,
        "zip": zip,
        "enumerate": enumerate,
        "reversed": reversed,
        "sorted": sorted_,
        "any": any_,
        "all": all_,
        "repr": repr,
    }
    for name, fn in list(table.items()):
        if callable(fn) and getattr(fn, "__name__", "").endswith("_"):
            fn.__name__ = fn.__qualname__ = name  # type: ignore[union-attr]
    table.update(EXCEPTIONS)
    return table
