"""The Python modules a script may import besides torch: `math`, `random`, `numpy`,
and the parts of `functools`, `collections` and `time` tutorials use.

Each is a table of curated members (adcli.lang.host.Namespace is built from it).
`math` is Python's own, with the functions whose cost grows with their
arguments (`factorial`, `comb`, `perm`, `prod`, `lcm`) bounded; `random` is a
fresh `random.Random` per run, so `random.seed(s)` gives Python's numbers for
that seed; `numpy` is adcli/scriptlib/numpy_api.py.

`UNSUPPORTED_MODULES` words the error for a module scripts cannot import.
"""

from __future__ import annotations

import functools
import math
import random as _random
import time as _time
from collections.abc import Iterable
from typing import Any

from adcli.lang import guard
from adcli.lang.errors import LimitError
from adcli.lang.host import MODULE_HINTS
from adcli.scriptlib import numpy_api
from adcli.scriptlib.collections_api import collections_table

__all__ = ["UNSUPPORTED_MODULES", "module_tables", "unsupported_module"]

# Same defaults as adcli.lang.host.Limits.
_MAX_INT_BITS = 100_000
_MAX_ITEMS = 10_000_000

_MATH_NAMES = (
    "pi e tau inf nan acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh "
    "degrees dist erf erfc exp exp2 expm1 fabs floor fmod frexp fsum gamma gcd hypot isclose "
    "isfinite isinf isnan isqrt ldexp lgamma log log10 log1p log2 modf nextafter pow radians "
    "remainder sin sinh sqrt tan tanh trunc ulp"
).split()


def _bits_limit(bits: float, what: str) -> None:
    if bits > _MAX_INT_BITS:
        raise LimitError(
            f"{what} of about {int(bits):,} bits is larger than the limit of {_MAX_INT_BITS:,} bits"
        )


def _factorial(n: Any) -> int:
    if isinstance(n, int) and n > 2:
        _bits_limit(n * math.log2(n), "factorial")
    return math.factorial(n)


def _comb(n: Any, k: Any) -> int:
    if isinstance(n, int) and isinstance(k, int) and 0 < k < n:
        _bits_limit(min(k, n - k) * math.log2(n), "comb")
    return math.comb(n, k)


def _perm(n: Any, k: Any = None) -> int:
    if isinstance(n, int) and n > 2:
        _bits_limit((n if k is None else min(int(k), n)) * math.log2(n), "perm")
    return math.perm(n, k)


def _prod(iterable: Iterable[Any], *, start: Any = 1) -> Any:
    total = start
    for i, x in enumerate(iterable):
        if i >= _MAX_ITEMS:
            raise LimitError(f"math.prod over more than {_MAX_ITEMS:,} items")
        total = total * x
        if type(total) is int:
            _bits_limit(total.bit_length(), "integer result")
    return total


def _lcm(*integers: int) -> int:
    result = math.lcm(*integers[:2]) if integers else 1
    for n in integers[2:]:
        result = math.lcm(result, n)
        _bits_limit(result.bit_length(), "integer result")
    return result


def math_table() -> dict[str, Any]:
    """`math`: Python's functions and constants, the costly ones bounded."""
    table: dict[str, Any] = {name: getattr(math, name) for name in _MATH_NAMES}
    table.update(factorial=_factorial, comb=_comb, perm=_perm, prod=_prod, lcm=_lcm)
    for name in ("factorial", "comb", "perm", "prod", "lcm"):
        table[name].__name__ = table[name].__qualname__ = name
    return table


def random_table() -> dict[str, Any]:
    """`random`: one `random.Random` per run (seeded from the OS until `random.seed`)."""
    rng = _random.Random()

    def choices(
        population: Any, weights: Any = None, *, cum_weights: Any = None, k: int = 1
    ) -> list:
        if isinstance(k, int) and k > _MAX_ITEMS:
            raise LimitError(f"random.choices of {k:,} items is longer than the limit")
        return rng.choices(population, weights, cum_weights=cum_weights, k=k)

    def getrandbits(k: int) -> int:
        _bits_limit(k, "random.getrandbits")
        return rng.getrandbits(k)

    table: dict[str, Any] = {
        name: getattr(rng, name)
        for name in (
            "seed random randint randrange uniform choice shuffle sample gauss normalvariate "
            "expovariate triangular betavariate lognormvariate vonmisesvariate gammavariate"
        ).split()
    }
    table.update(choices=choices, getrandbits=getrandbits)
    return table


class _Hint:
    """A name from `typing` (List, Optional...): annotations only need it to exist and
    to accept subscripts (`List[int]`)."""

    __slots__ = ("_name",)
    __ad_attrs__ = frozenset()

    def __init__(self, name: str) -> None:
        self._name = name

    def __getitem__(self, item: Any) -> _Hint:
        return self

    def __repr__(self) -> str:
        return f"typing.{self._name}"


def typing_table() -> dict[str, Any]:
    """`typing`: the names type hints use, as placeholders."""
    names = (
        "Any Callable Dict Iterable Iterator List Literal Mapping Optional Sequence Set "
        "Tuple Type Union"
    ).split()
    return {name: _Hint(name) for name in names}


def _reduce(function: Any, iterable: Iterable[Any], *initial: Any) -> Any:
    """functools.reduce, as a bounded loop (a C-level reduce over an endless iterable
    would never reach the step budget)."""
    if len(initial) > 1:
        raise TypeError(f"reduce expected at most 3 arguments, got {2 + len(initial)}")
    items = iter(iterable)
    if initial:
        total = initial[0]
    else:
        try:
            total = next(items)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    for i, x in enumerate(items):
        if i >= _MAX_ITEMS:
            raise LimitError(f"functools.reduce over more than {_MAX_ITEMS:,} items")
        total = function(total, x)
    return total


_reduce.__name__ = _reduce.__qualname__ = "reduce"


def functools_table() -> dict[str, Any]:
    """`functools`: partial (its attributes stay unreadable) and reduce."""
    return {"partial": functools.partial, "reduce": _reduce}


def time_table() -> dict[str, Any]:
    """`time`: the clocks training scripts read to print how long a loop took, and
    `sleep` (the run's wall-clock budget is enforced outside the script)."""
    names = "time time_ns perf_counter perf_counter_ns monotonic monotonic_ns process_time sleep"
    return {name: getattr(_time, name) for name in names.split()}


#: modules adcli has in part -> what the members it lacks should use instead
PARTIAL_MODULE_HINTS = {
    "functools": "adcli has functools.partial and functools.reduce; use def and lambda",
    "collections": "adcli has collections.OrderedDict, defaultdict and Counter; use dict "
    "and dict.setdefault",
    "time": "adcli has the clocks (time.time, time.perf_counter, time.monotonic, "
    "time.process_time) and time.sleep",
}


def module_tables() -> dict[str, dict[str, Any]]:
    """Each module's members, by dotted name (merged into torchapi.module_table()),
    without the random generators (`per_run_tables`)."""
    guard.ATTRIBUTE_READERS.update(numpy_api.ATTRIBUTE_READERS)
    guard.TYPE_PROXIES.update(numpy_api.TYPE_PROXIES)
    tables = numpy_api.module_tables()
    tables.update(
        math=math_table(),
        random={},  # per run: per_run_tables()
        typing=typing_table(),
        functools=functools_table(),
        collections=collections_table(),
        time=time_table(),
    )
    MODULE_HINTS.update(PARTIAL_MODULE_HINTS)
    tables["torch"] = {"from_numpy": numpy_api.from_numpy}
    return tables


def per_run_tables() -> dict[str, dict[str, Any]]:
    """The members that hold state, made anew for each run: `random` and
    `numpy.random`, each with its own generator seeded from the OS."""
    return {"random": random_table(), "numpy.random": numpy_api.random_table()}


# ------------------------------------------------------------------ unsupported modules

_PLOTTING = "plotting is not available in adcli: print the values instead"
_FILES = "adcli scripts cannot read or write files"

#: module -> why it is missing and what to use instead.
UNSUPPORTED_MODULES: dict[str, str] = {
    "matplotlib": _PLOTTING,
    "seaborn": _PLOTTING,
    "plotly": _PLOTTING,
    "pandas": "use Python lists and dicts, numpy arrays or torch tensors for tables of data",
    "scipy": "use the numpy subset (import numpy as np) or torch functions",
    "sklearn": "write the model with torch (see torch.nn and torch.optim)",
    "torchvision": "datasets and image models are not available: make data with torch.randn",
    "torchaudio": "datasets and audio models are not available: make data with torch.randn",
    "torchtext": "datasets are not available: make data with torch tensors",
    "tensorflow": "adcli runs PyTorch code: use torch",
    "jax": "adcli runs PyTorch code: use torch (torch.func gives grad, jacrev, jvp)",
    "os": _FILES,
    "sys": "scripts cannot reach the Python interpreter",
    "pathlib": _FILES,
    "io": _FILES,
    "pickle": _FILES,
    "json": _FILES,
    "csv": _FILES,
    "subprocess": "scripts cannot run programs",
    "datetime": "timing is not available: adcli scripts print the same output on every run",
    "tqdm": "progress bars are not available: print the loss every few steps instead",
    "itertools": "use for loops, zip, enumerate and range",
    "functorch": "functorch is torch.func now: use torch.func.jvp, grad, vmap or functional_call",
    "copy": "use tensor.clone() for tensors and list(x) or dict(x) for containers",
    "IPython": "notebook tools and the debugger are not available: print the values instead",
    "pdb": "the debugger is not available: print the values instead",
}

_IMPORTABLE = "torch (with torch.nn, torch.optim, torch.autograd...), numpy, math and random"


def unsupported_module(dotted: str) -> str:
    """The sentence for `import dotted` when adcli has no such module."""
    top = dotted.split(".")[0]
    hint = UNSUPPORTED_MODULES.get(top)
    if top == "numpy":
        return (
            f"adcli does not support {dotted}: its numpy subset is numpy, numpy.random and "
            "numpy.linalg"
        )
    if hint is not None:
        return f"adcli does not support the module '{top}': {hint}"
    return f"No module named '{dotted}' (adcli scripts can import {_IMPORTABLE})"
