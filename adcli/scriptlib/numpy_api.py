"""`import numpy as np` in a script: a curated subset of NumPy, on NumPy itself.

Arrays are real `numpy.ndarray` objects, so they print, compute and draw random
numbers exactly as NumPy does. What keeps the sandbox tight:

- only the functions listed here are reachable (no file I/O, no `ctypes`, no
  functions taking callables, no `np.lib`); each call converts tensor arguments
  to copies, refuses dtypes other than bool, integer and float, and refuses a
  result larger than the tensor element limit;
- attribute reads on arrays, NumPy scalars and dtypes go through the allow-lists
  below (registered with the guard); `type(arr)` gives a stand-in class that
  checks `isinstance` but cannot construct arrays from raw memory;
- `x.numpy()`, `np.asarray(x)`, `torch.from_numpy(arr)` and `torch.as_tensor(arr)`
  share memory, as in PyTorch (the "bridge with NumPy" of its tutorials), and
  writes through an array change the tensor without a version bump, as there;
  `torch.tensor(arr)` and `np.array(x)` copy. A script gets a view of a tensor's
  array, never the array adcli holds.

`np.random` is a per-run `RandomState`, so `np.random.seed(s)` gives NumPy's own
numbers for that seed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adcli.autograd import ops
from adcli.autograd.config import check_numel
from adcli.autograd.tensor import Tensor

__all__ = ["ATTRIBUTE_READERS", "TYPE_PROXIES", "from_numpy", "module_tables"]

_KINDS = "biuf"
_SUPPORTED = "bool, integer and float"


def _check_array(a: Any) -> Any:
    """Refuse arrays of other dtypes (object, str...) and arrays over the size limit."""
    if isinstance(a, np.ndarray):
        if a.dtype.kind not in _KINDS:
            raise TypeError(f"adcli's numpy supports {_SUPPORTED} arrays only, not dtype {a.dtype}")
        check_numel(a.size)
    elif isinstance(a, np.generic) and a.dtype.kind not in _KINDS:
        raise TypeError(f"adcli's numpy supports {_SUPPORTED} values only, not dtype {a.dtype}")
    return a


def _dtype(d: Any) -> Any:
    """A dtype argument, refused unless bool, integer or float."""
    if d is None:
        return None
    d = getattr(d, "ad_type", d)  # a script's `int` is a size-checked stand-in for int
    if isinstance(d, np.dtype):
        dt = d
    elif (
        d in (float, int, bool)
        or isinstance(d, str)
        or (isinstance(d, type) and issubclass(d, np.generic))
    ):
        dt = np.dtype(d)
    else:
        raise TypeError(f"Cannot interpret '{d}' as a data type")
    if dt.kind not in _KINDS:
        raise TypeError(f"adcli's numpy supports {_SUPPORTED} dtypes only, not {dt}")
    return dt


def _arg(v: Any) -> Any:
    """A tensor argument becomes `t.numpy()`, which shares its memory, as NumPy reads a
    PyTorch tensor (so `np.asarray(t)` is a view and `np.array(t)` a copy, as there)."""
    if isinstance(v, Tensor):
        return v.numpy()
    if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
        return type(v)(_arg(x) for x in v)
    return v


def _wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Call NumPy's `fn` with checked arguments and a checked result."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if "dtype" in kwargs:
            kwargs["dtype"] = _dtype(kwargs["dtype"])
        result = fn(*[_arg(a) for a in args], **{k: _arg(v) for k, v in kwargs.items()})
        if isinstance(result, tuple):
            for r in result:
                _check_array(r)
            return result
        return _check_array(result)

    call.__name__ = call.__qualname__ = name
    return call


def _shape_numel(shape: Any) -> int:
    if isinstance(shape, (int, np.integer)):
        return int(shape)
    return math.prod(int(s) for s in shape)


def _sized(fn: Callable[..., Any], name: str, pos: int = 0, key: str = "shape") -> Callable:
    """A creation function whose shape argument (positional `pos` or keyword `key`) is
    checked against the size limit before anything is allocated."""
    inner = _wrap(fn, name)

    @functools.wraps(inner)
    def call(*args: Any, **kwargs: Any) -> Any:
        shape = args[pos] if len(args) > pos else kwargs.get(key)
        if shape is not None:
            check_numel(_shape_numel(shape))
        return inner(*args, **kwargs)

    return call


def _star_sized(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`np.random.rand(2, 3)`: the shape is all the positional arguments."""
    inner = _wrap(fn, name)

    @functools.wraps(inner)
    def call(*dims: Any) -> Any:
        check_numel(_shape_numel(dims) if dims else 1)
        return inner(*dims)

    return call


def _eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float) -> np.ndarray:
    check_numel(int(N) * int(M if M is not None else N))
    return _check_array(np.eye(N, M, k, dtype=_dtype(dtype)))


def _identity(n: int, dtype: Any = None) -> np.ndarray:
    return _eye(n, dtype=dtype if dtype is not None else float)


def _arange(*args: Any, dtype: Any = None) -> np.ndarray:
    vals = [float(a) for a in args]
    start, stop, step = (0.0, vals[0], 1.0) if len(vals) == 1 else (*vals[:2], 1.0)
    if len(vals) >= 3:
        step = vals[2]
    if step != 0 and math.isfinite(start) and math.isfinite(stop):
        check_numel(max(0, math.ceil((stop - start) / step)))
    return _check_array(np.arange(*args, dtype=_dtype(dtype)))


def _linspace(start: Any, stop: Any, num: int = 50, **kwargs: Any) -> Any:
    check_numel(int(num))
    return _wrap(np.linspace, "linspace")(start, stop, num, **kwargs)


def _tile(a: Any, reps: Any) -> np.ndarray:
    a = np.asarray(_arg(a))
    check_numel(a.size * _shape_numel(reps))
    return _check_array(np.tile(a, reps))


def _repeat(a: Any, repeats: Any, axis: Any = None) -> np.ndarray:
    a = np.asarray(_arg(a))
    n = (
        int(np.sum(repeats))
        if np.ndim(repeats)
        else int(repeats) * (a.size if axis is None else a.shape[axis])
    )
    check_numel(n * (1 if axis is None else a.size // max(1, a.shape[axis])))
    return _check_array(np.repeat(a, repeats, axis))


def _outer(a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(_arg(a)), np.asarray(_arg(b))
    check_numel(a.size * b.size)
    return _check_array(np.outer(a, b))


def _astype(arr: Any) -> Callable[..., Any]:
    def astype(dtype: Any, copy: bool = True) -> Any:
        return arr.astype(_dtype(dtype), copy=copy)

    return astype


# Functions passed straight to NumPy (argument and result checks only).
_PLAIN = (
    "array asarray copy zeros_like ones_like full_like empty_like "
    "exp exp2 expm1 log log2 log10 log1p sqrt square abs absolute sign floor ceil round around "
    "rint trunc sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh "
    "degrees radians hypot maximum minimum fmax fmin clip power add subtract multiply divide "
    "true_divide floor_divide mod remainder negative reciprocal where isnan isinf isfinite "
    "sum mean std var max min amax amin argmax argmin prod cumsum cumprod median average "
    "all any count_nonzero dot matmul inner vdot transpose reshape ravel squeeze expand_dims "
    "concatenate stack vstack hstack column_stack split array_split flip sort argsort unique "
    "allclose isclose array_equal equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_not shape size ndim diag trace argwhere nonzero meshgrid "
    "einsum swapaxes moveaxis atleast_1d atleast_2d broadcast_to take take_along_axis "
    "outer cross tile repeat roll tril triu diff cumprod sinc heaviside signbit copysign "
    "nan_to_num nansum nanmean argpartition partition searchsorted interp polyfit polyval"
).split()

_DTYPES = {
    name: getattr(np, name)
    for name in (
        "float16 float32 float64 int8 int16 int32 int64 uint8 bool_ double single half int_ intc"
    ).split()
}
_DTYPES["bool"] = np.bool_


class _NDArrayMeta(type):
    """`np.ndarray` as scripts see it: `isinstance` and `type(a) is np.ndarray` work,
    constructing from raw memory does not."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, np.ndarray)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "np.ndarray(...) is not available in adcli scripts: use np.array or np.zeros"
        )

    def __repr__(cls) -> str:
        return "<class 'numpy.ndarray'>"


class ndarray(metaclass=_NDArrayMeta):  # noqa: N801 - NumPy's name
    """The stand-in for `numpy.ndarray` (see `_NDArrayMeta`)."""

    __slots__ = ()


#: real type -> the class `type(x)` returns to a script.
TYPE_PROXIES: dict[type, type] = {np.ndarray: ndarray}

# What a script may read on an array ("astype" is wrapped to check its dtype).
_ARRAY_ATTRS = frozenset(
    "shape dtype ndim size T itemsize nbytes copy reshape flatten ravel astype sum mean std var "
    "max min argmax argmin prod cumsum cumprod all any tolist item transpose squeeze clip round "
    "dot sort argsort fill nonzero swapaxes".split()
)
_SCALAR_ATTRS = frozenset("item tolist dtype shape ndim size astype real imag".split())
_DTYPE_ATTRS = frozenset("name kind itemsize char".split())


def _reader(allowed: frozenset[str], what: str | None) -> Callable[[Any, str], Any]:
    """An attribute reader allowing `allowed` (`what` names the class in errors)."""

    def read(obj: Any, name: str) -> Any:
        if name not in allowed:
            cls = what or f"numpy.{type(obj).__name__}"
            if hasattr(obj, name):
                raise AttributeError(f"adcli does not support {cls}.{name}")
            raise AttributeError(f"'{cls}' object has no attribute '{name}'")
        if name == "astype":
            return _astype(obj)
        return getattr(obj, name)

    return read


def _attribute_readers() -> dict[type, Callable[[Any, str], Any]]:
    readers: dict[type, Callable[[Any, str], Any]] = {
        np.ndarray: _reader(_ARRAY_ATTRS, "numpy.ndarray")
    }
    scalar = _reader(_SCALAR_ATTRS, None)
    for t in {*_DTYPES.values(), np.uint16, np.uint32, np.uint64, np.longlong}:
        readers[t] = scalar
    dtype_reader = _reader(_DTYPE_ATTRS, "numpy.dtype")
    for t in {type(np.dtype(t)) for t in _DTYPES.values()}:
        readers[t] = dtype_reader
    return readers


#: type -> function(obj, name) the guard calls for attribute reads on NumPy objects.
ATTRIBUTE_READERS = _attribute_readers()


def from_numpy(arr: Any) -> Tensor:
    """`torch.from_numpy(arr)`: a tensor with the array's dtype sharing its memory."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    if arr.dtype.kind not in _KINDS or arr.dtype.kind == "u" and arr.dtype != np.uint8:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The only "
            "supported types are: float64, float32, float16, complex64, complex128, int64, "
            "int32, int16, int8, uint64, uint32, uint16, uint8, and bool."
        )
    return ops.from_array(arr)


def _random_tables(rs: np.random.RandomState) -> dict[str, Any]:
    def seed(seed: Any = None) -> None:
        rs.seed(seed)

    table: dict[str, Any] = {"seed": seed}
    for name in ("rand", "randn"):
        table[name] = _star_sized(getattr(rs, name), name)
    for name in ("random", "random_sample", "sample", "ranf"):
        if hasattr(rs, name):
            table[name] = _sized(getattr(rs, name), name, 0, "size")
    for name, pos in (("randint", 2), ("uniform", 2), ("normal", 2), ("choice", 1)):
        table[name] = _sized(getattr(rs, name), name, pos, "size")
    table["permutation"] = _wrap(rs.permutation, "permutation")
    table["shuffle"] = _wrap(rs.shuffle, "shuffle")
    return table


def module_tables() -> dict[str, dict[str, Any]]:
    """`numpy` and `numpy.linalg` (`numpy.random` is `random_table()`, one per run)."""
    np_: dict[str, Any] = {name: _wrap(getattr(np, name), name) for name in _PLAIN}
    np_.update(
        zeros=_sized(np.zeros, "zeros"),
        ones=_sized(np.ones, "ones"),
        empty=_sized(np.zeros, "empty"),  # zeros: deterministic, like torch.empty here
        full=_sized(np.full, "full"),
        eye=_eye,
        identity=_identity,
        arange=_arange,
        linspace=_linspace,
        tile=_tile,
        repeat=_repeat,
        outer=_outer,
        ndarray=ndarray,
        pi=math.pi,
        e=math.e,
        inf=math.inf,
        nan=math.nan,
        newaxis=None,
        random="module:numpy.random",
        linalg="module:numpy.linalg",
    )
    np_.update(_DTYPES)
    linalg = {name: _wrap(getattr(np.linalg, name), name) for name in "norm inv det solve".split()}
    return {"numpy": np_, "numpy.random": {}, "numpy.linalg": linalg}  # random: per run


def random_table() -> dict[str, Any]:
    """`numpy.random` with a fresh random state (seeded from the OS until `seed`)."""
    return _random_tables(np.random.RandomState())
