"""PyTorch's legacy and compatibility API, as torch 2.13 still runs it.

Pre-2019 tutorials write `Variable(x, requires_grad=True)`, `torch.Tensor(2, 3)`,
`dtype = torch.FloatTensor`, `x.type(dtype)` and `.cuda()`; this module gives
each of them PyTorch 2.13's behaviour, printed text and errors:

- the typed tensor classes (`FloatTensor`, `LongTensor`...): calling one is the
  legacy constructor, `isinstance(x, torch.FloatTensor)` checks the dtype;
- `torch.Tensor(...)` (the legacy constructor at the default dtype);
- `Variable(...)`: a new leaf sharing the data, as in PyTorch >= 0.4;
- `Tensor.to`, `Tensor.type`, `Tensor.cuda`, `Tensor.cpu` with devices.

Uninitialised storage (`torch.Tensor(2, 3)`, `torch.empty`) is filled with
zeros: PyTorch's values there are whatever memory held, so only the shape and
dtype of such a tensor are meaningful.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import dtypes, ops
from . import tensor as _tensor_module
from .config import config
from .device import Device, check_device, parse_device, unavailable
from .dtypes import DType
from .tensor import Size, Tensor

# torch.Tensor(...), x.device, x.to(), x.type(), x.cuda() call this module, which is
# above tensor.py and ops.py (it imports them): it binds itself into their slots.
_tensor_module.legacy = ops.legacy = sys.modules[__name__]

__all__ = [
    "CUDA_TYPES",
    "TENSOR_TYPES",
    "Variable",
    "is_floating_point",
    "is_tensor",
    "legacy_new",
    "numel",
    "tensor_cpu",
    "tensor_cuda",
    "tensor_to",
    "tensor_type",
]

_NEW_SIGNATURES = (
    " * (*, torch.device device = None)\n{why}"
    " * (torch.Storage storage)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, torch.device device = None)\n"
    " * (object data, *, torch.device device = None)\n"
)

_CUDA_LIBRARY_MISSING = (
    "Cannot initialize CUDA without ATen_cuda library. PyTorch splits its backend into two "
    "shared libraries: a CPU library and a CUDA library; this error has occurred because you "
    "are trying to use some CUDA functionality, but the CUDA library has not been loaded by "
    "the dynamic linker for some reason.  The CUDA library MUST be loaded, EVEN IF you don't "
    "directly use any symbols from the CUDA library! One common culprit is a lack of "
    "-Wl,--no-as-needed in your link arguments; many dynamic linkers will delete dynamic "
    "library dependencies if you don't depend on any of their symbols.  You can check if this "
    "has occurred by using ldd on your binary to see if there is a dependency on *_cuda.so "
    "library."
)


def _type_name(v: Any) -> str:
    if v is None:
        return "NoneType"
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, DType):
        return "torch.dtype"
    if isinstance(v, Device):
        return "torch.device"
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


# ---------------------------------------------------------------- constructors


def legacy_new(
    dt: DType, args: tuple[Any, ...], kwargs: dict[str, Any], generic: bool = False
) -> Tensor:
    """The legacy constructor `torch.FloatTensor(...)` at dtype `dt` (`torch.Tensor(...)`
    with `generic`, which takes a tensor of any dtype): no argument (an empty tensor),
    a tensor, sizes (ints or a torch.Size) or data."""
    device = kwargs.pop("device", None)
    size = kwargs.pop("size", None)
    if kwargs:
        got = ", ".join(
            [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
        )
        why = (
            "      didn't match because some of the keywords were incorrect: "
            + ", ".join(kwargs)
            + "\n"
        )
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({got}), but expected "
            "one of:\n" + _NEW_SIGNATURES.format(why=why)
        )
    if device is not None:
        d = parse_device(device)
        if d.type != "cpu":
            raise RuntimeError(
                f"legacy constructor expects device type: cpu but device type: {d.type} was passed"
            )
    if size is not None:
        args = (*args, *tuple(size))
    if not args:
        return ops._finish(np.zeros((0,), dt.np), False)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if first.dtype is not dt and not generic:
            raise TypeError(_options_mismatch(dt, first.dtype))
        return first[...]  # an alias (AliasBackward0 when it requires grad)
    if len(args) == 1 and isinstance(first, Size):
        args = tuple(first)
    if all(_is_int(a) for a in args):
        return ops._finish(np.zeros(ops._factory_shape(tuple(int(a) for a in args)), dt.np), False)
    if len(args) > 1:
        if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
            bad = next(a for a in args if not _is_int(a))
            raise TypeError(
                f"new(): argument 'size' failed to unpack the object at pos {args.index(bad) + 1} "
                f'with error "type must be tuple of ints,but got {_type_name(bad)}"'
            )
        got = ", ".join(_type_name(a) for a in args)
        bad = ", ".join(f"!{_type_name(a)}!" for a in args)
        why = f"      didn't match because some of the arguments have invalid types: ({bad})\n"
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({got}), but expected "
            "one of:\n" + _NEW_SIGNATURES.format(why=why)
        )
    if isinstance(first, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(first, (list, tuple, np.ndarray)):
        raise TypeError(f"new(): data must be a sequence (got {_type_name(first)})")
    data = ops.tensor(first).data_
    if dt is dtypes.uint8 and data.dtype.kind in "iuf" and data.size:
        if data.min() < 0 or data.max() > 255:
            raise RuntimeError("value cannot be converted to type uint8 without overflow")
    return ops._finish(data.astype(dt.np), False)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _options(dt: DType) -> str:
    return (
        f"TensorOptions(dtype={dtypes.CPP_TYPE_NAMES[dt.name]}, device=cpu, layout=Strided, "
        "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))"
    )


def _options_mismatch(want: DType, got: DType) -> str:
    return f"expected {_options(want)} (got {_options(got)})"


class _TensorTypeMeta(type):
    """The class of `torch.FloatTensor` and friends: callable (the legacy constructor),
    an `isinstance` check on the dtype, printed as `<class 'torch.FloatTensor'>`."""

    __ad_attrs__ = frozenset({"dtype", "is_cuda"})

    dtype: DType | None
    is_cuda: bool

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        if cls.is_cuda:
            raise TypeError(
                f"type {cls.full_name} not available. Torch not compiled with CUDA enabled."
            )
        return legacy_new(cls.dtype, args, kwargs)

    def __instancecheck__(cls, obj: object) -> bool:
        return not cls.is_cuda and isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class '{cls.full_name}'>"

    @property
    def full_name(cls) -> str:
        """`torch.FloatTensor` / `torch.cuda.FloatTensor`."""
        return ("torch.cuda." if cls.is_cuda else "torch.") + cls.__name__


def _tensor_type(dt: DType, cuda: bool) -> type:
    cls = _TensorTypeMeta(dt.legacy, (), {"dtype": dt, "is_cuda": cuda, "__slots__": ()})
    cls.__module__ = "torch.cuda" if cuda else "torch"
    return cls


#: torch.FloatTensor ... torch.BoolTensor, by name.
TENSOR_TYPES: dict[str, type] = {dt.legacy: _tensor_type(dt, False) for dt in dtypes.ALL}
#: torch.cuda.FloatTensor ...: they exist, but a CPU build cannot make them.
CUDA_TYPES: dict[str, type] = {dt.legacy: _tensor_type(dt, True) for dt in dtypes.ALL}


def new_default(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor:
    """`torch.Tensor(...)`: the legacy constructor at the default dtype."""
    return legacy_new(dtypes.DEFAULT_FLOAT, args, kwargs, generic=True)


# ---------------------------------------------------------------- Variable


class _VariableMeta(type):
    """`Variable` is a class only for `isinstance` (every tensor is a Variable);
    calling it makes a tensor."""

    def __call__(
        cls, data: Any = None, requires_grad: Any = False, volatile: Any = False, **kwargs: Any
    ) -> Tensor:
        if kwargs:
            raise TypeError(
                f"'{next(iter(kwargs))}' is an invalid keyword argument for this function"
            )
        if requires_grad is None or volatile is None:
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        if volatile:
            config.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."
            )
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            return ops._finish(np.zeros((0,), dtypes.DEFAULT_FLOAT.np), bool(requires_grad))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {_type_name(data)}")
        out = data.detach()  # a new leaf sharing the data and its version counter
        if requires_grad:
            if not data.dtype.is_floating_point:
                raise RuntimeError(
                    "Only Tensors of floating point and complex dtype can require gradients"
                )
            out.requires_grad_(True)
        return out

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor)

    def __repr__(cls) -> str:
        return "<class 'torch.autograd.variable.Variable'>"


class Variable(metaclass=_VariableMeta):
    """`torch.autograd.Variable(data, requires_grad=False, volatile=False)`."""

    __slots__ = ()
    __ad_attrs__ = frozenset()


Variable.__module__ = "torch.autograd.variable"


# ---------------------------------------------------------------- predicates


def is_tensor(obj: Any) -> bool:
    """`torch.is_tensor(obj)`."""
    return isinstance(obj, Tensor)


def _need_tensor(fn: str, obj: Any) -> Tensor:
    if not isinstance(obj, Tensor):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {_type_name(obj)}"
        )
    return obj


def is_floating_point(input: Any) -> bool:  # noqa: A002 - torch's name
    """`torch.is_floating_point(t)`."""
    return _need_tensor("is_floating_point", input).dtype.is_floating_point


def numel(input: Any) -> int:  # noqa: A002 - torch's name
    """`torch.numel(t)`."""
    return int(_need_tensor("numel", input).data_.size)


# ---------------------------------------------------------------- conversions

_TO_SIGNATURES = (
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
)


def _bad_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TypeError:
    got = ", ".join(_type_name(a) for a in args)
    if kwargs:
        got += (", " if got else "") + ", ".join(f"{k}={_type_name(v)}" for k, v in kwargs.items())
        got += ", "
    return TypeError(
        f"to() received an invalid combination of arguments - got ({got}), but expected one "
        "of:\n" + _TO_SIGNATURES
    )


def _is_device(v: Any) -> bool:
    return isinstance(v, (str, Device)) or (isinstance(v, int) and not isinstance(v, bool))


def tensor_to(a: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """`x.to(device)`, `x.to(dtype)`, `x.to(device, dtype)`, `x.to(other)` (and the
    keywords dtype, device, copy, non_blocking, memory_format)."""
    extra = set(kwargs) - {"dtype", "device", "copy", "non_blocking", "memory_format"}
    if extra:
        raise _bad_to(args, {k: kwargs[k] for k in extra})
    device = kwargs.get("device")
    dt = kwargs.get("dtype")
    copy = bool(kwargs.get("copy", False))
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        other = rest.pop(0)
        dt = other.dtype
    elif rest and isinstance(rest[0], DType):
        dt = rest.pop(0)
    elif rest and (rest[0] is None or _is_device(rest[0])):
        device = rest.pop(0)
        if rest and (rest[0] is None or isinstance(rest[0], DType)):
            dt = rest.pop(0)
    # the remaining positionals are non_blocking and copy
    if len(rest) > 2 or any(not isinstance(v, bool) for v in rest):
        raise _bad_to(args, {})
    if len(rest) == 2:
        copy = rest[1]
    if dt is not None and not isinstance(dt, DType):
        raise _bad_to(args, kwargs)
    if device is not None:
        check_device(device)
    out = a if dt is None else ops.to_dtype(a, dt)
    if copy and out is a:
        out = ops.clone(a)
    return out


def tensor_cpu(a: Tensor, memory_format: Any = None) -> Tensor:
    """`x.cpu()`: the tensor itself (it is already on the CPU)."""
    return a


def tensor_cuda(a: Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Tensor:
    """`x.cuda()`: fails as on a CPU-only PyTorch build."""
    if isinstance(device, int) and not isinstance(device, bool):
        raise RuntimeError("Cannot access accelerator device when none is available.")
    raise AssertionError("Torch not compiled with CUDA enabled")


def type_name(a: Tensor) -> str:
    """`x.type()`: the legacy type name, `torch.FloatTensor`."""
    return "torch." + a.dtype.legacy


def tensor_type(a: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """`x.type()` (its legacy type name) or `x.type(t)`: x converted to the legacy type,
    type name or dtype `t`."""
    if dtype is None:
        return type_name(a)
    if isinstance(dtype, DType):
        return ops.to_dtype(a, dtype)
    if dtype is Tensor:
        return a
    if isinstance(dtype, _TensorTypeMeta):
        if dtype.is_cuda:
            raise RuntimeError(_CUDA_LIBRARY_MISSING)
        return ops.to_dtype(a, dtype.dtype)
    if isinstance(dtype, str):
        if dtype == "torch.Tensor":
            return a
        if dtype.startswith("torch.cuda.") and dtype[11:] in CUDA_TYPES:
            raise RuntimeError(_CUDA_LIBRARY_MISSING)
        if dtype.startswith("torch.") and dtype[6:] in TENSOR_TYPES:
            return ops.to_dtype(a, TENSOR_TYPES[dtype[6:]].dtype)
        raise ValueError(f"invalid type: '{dtype}'")
    raise TypeError("dtype must be a type, str, or dtype object")


def tensor_device(a: Tensor) -> Device:
    """`x.device`: always the CPU."""
    return _CPU


_CPU = Device("cpu")


def unavailable_device(device: Any) -> BaseException:
    """The error for moving data to a device this build does not have."""
    return unavailable(parse_device(device))
