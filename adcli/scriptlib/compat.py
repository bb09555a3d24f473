"""The legacy and compatibility names of `torch` a script sees (issue 12, item 3).

Adds to `torchapi.module_table()`: the legacy tensor types and `torch.Tensor(...)`,
`torch.autograd.Variable`, `torch.device` and the CPU-only `torch.cuda`,
`torch.backends` and `torch.accelerator`, `size=`/`device=` on every factory,
`torch.__version__`, `torch.set_printoptions`, the default dtype and device.
The behaviour lives in the engine (`adcli.autograd.legacy`, `.device`); this
module only names it, and resets the process-wide settings for each run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from adcli.autograd import dtypes, legacy, printing, profiler
from adcli.autograd import node as _node
from adcli.autograd.device import Device, check_device
from adcli.autograd.dtypes import DType
from adcli.autograd.tensor import Tensor

__all__ = ["VERSION", "legacy_tables", "reset_state", "wrap_factories"]

#: `torch.__version__` of the PyTorch adcli follows (the CPU wheel's text).
VERSION = "2.13.0+cpu"


class _State:
    """`torch.set_default_device`: None or a device string."""

    default_device: Any = None


_state = _State()


def reset_state() -> None:
    """PyTorch's fresh-process defaults: float32, the CPU, default print options."""
    dtypes.DEFAULT_FLOAT = dtypes.float32
    printing.reset_print_state()
    _state.default_device = None


# ------------------------------------------------------------------ factories

# Factories whose shape is given as `*size` (so `size=` is a keyword alias).
_SIZE_FACTORIES = frozenset("zeros ones empty rand randn".split())
# Every other factory only gains `device=` (and PyTorch's ignored layout keywords).
_DEVICE_FACTORIES = frozenset(
    "tensor as_tensor full eye arange linspace zeros_like ones_like full_like empty_like "
    "randint randperm randn_like rand_like".split()
)
_IGNORED = ("layout", "pin_memory", "memory_format", "out")


def _factory(fn: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    takes_size = name in _SIZE_FACTORIES

    @functools.wraps(fn)
    def factory(*args: Any, **kwargs: Any) -> Tensor:
        device = kwargs.pop("device", None)
        for k in _IGNORED:
            if kwargs.get(k) is None:
                kwargs.pop(k, None)
        check_device(device if device is not None else _state.default_device)
        if takes_size and "size" in kwargs:
            if args:
                raise TypeError(f"{name}() got multiple values for argument 'size'")
            args = (kwargs.pop("size"),)
        if _node.prof is not None:  # a profile is open: PyTorch's ranges around it
            return profiler.factory(name, fn, args, kwargs)
        return fn(*args, **kwargs)

    return factory


def wrap_factories(torch: dict[str, Any]) -> None:
    """Give each factory in the `torch` table `device=` (and `size=`), in place."""
    for name in _SIZE_FACTORIES | _DEVICE_FACTORIES:
        fn = torch.get(name)
        if fn is not None and not hasattr(fn, "__wrapped__"):
            torch[name] = _factory(fn, name)


# ------------------------------------------------------------------ defaults


def set_default_dtype(d: Any) -> None:
    """`torch.set_default_dtype`: float32, float64 or float16."""
    if not isinstance(d, DType):
        raise TypeError(
            "invalid dtype object: only floating-point types are supported as the default type"
        )
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.DEFAULT_FLOAT = d
    printing.current.default_dtype = d.name


def get_default_dtype() -> DType:
    """`torch.get_default_dtype()`."""
    return dtypes.DEFAULT_FLOAT


def set_default_tensor_type(t: Any) -> None:
    """`torch.set_default_tensor_type` (deprecated in PyTorch 2.1, with its warning)."""
    from adcli.autograd.config import config

    config.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives. "
        "(Triggered internally at /__w/pytorch/pytorch/torch/csrc/tensor/python_tensor.cpp:434.)"
    )
    if isinstance(t, str):
        name = t.removeprefix("torch.")
        if name not in legacy.TENSOR_TYPES:
            raise TypeError(f"invalid type: '{t}'")
        t = legacy.TENSOR_TYPES[name]
    dt = getattr(t, "dtype", None)
    if not isinstance(dt, DType) or not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(dt)


def set_default_device(device: Any) -> None:
    """`torch.set_default_device`: later factories fail for a device other than the CPU."""
    if device is not None and not isinstance(device, Device):
        Device(device)  # a malformed name fails now, as in PyTorch
    _state.default_device = device


def get_default_device() -> Device:
    """`torch.get_default_device()`."""
    return Device("cpu")


# ------------------------------------------------------------------ CUDA and friends


def _false(*args: Any, **kwargs: Any) -> bool:
    return False


def _zero(*args: Any, **kwargs: Any) -> int:
    return 0


def _none(*args: Any, **kwargs: Any) -> None:
    return None


def _no_cuda(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("Torch not compiled with CUDA enabled")


class CudnnFlags:
    """`torch.backends.cudnn`: flags tutorials set (`deterministic`, `benchmark`)."""

    __ad_attrs__ = frozenset({"enabled", "deterministic", "benchmark", "is_available"})
    __ad_settable__ = frozenset({"enabled", "deterministic", "benchmark"})

    def __init__(self) -> None:
        self.enabled = True
        self.deterministic = False
        self.benchmark = False

    @staticmethod
    def is_available() -> bool:
        """False: no cuDNN in a CPU build."""
        return False

    def __repr__(self) -> str:
        return "<module 'torch.backends.cudnn'>"


#: `torch.Tensor.tanh` and the other methods, read off the class (micrograd's tests
#: pass `torch.Tensor.tanh` as a function); a wrong first argument gets torch's error.
Tensor.__ad_class_attrs__ = frozenset(  # type: ignore[attr-defined]
    n for n in Tensor.__ad_attrs__ if callable(getattr(Tensor, n, None))
)
Tensor.__ad_descriptor_owner__ = "torch._C.TensorBase"  # type: ignore[attr-defined]


def legacy_tables() -> dict[str, dict[str, Any]]:
    """Module members to merge into `module_table()` (the same dotted names)."""
    torch: dict[str, Any] = {
        "Tensor": Tensor,
        "device": Device,
        "is_tensor": legacy.is_tensor,
        "is_floating_point": legacy.is_floating_point,
        "numel": legacy.numel,
        "set_printoptions": printing.set_printoptions,
        "set_default_dtype": set_default_dtype,
        "get_default_dtype": get_default_dtype,
        "set_default_tensor_type": set_default_tensor_type,
        "set_default_device": set_default_device,
        "get_default_device": get_default_device,
        "__version__": VERSION,
        "cuda": "module:torch.cuda",
        "backends": "module:torch.backends",
        "accelerator": "module:torch.accelerator",
    }
    torch.update(legacy.TENSOR_TYPES)
    cuda: dict[str, Any] = {
        "is_available": _false,
        "device_count": _zero,
        "is_initialized": _false,
        "manual_seed": _none,
        "manual_seed_all": _none,
        "empty_cache": _none,
        "current_device": _no_cuda,
        "get_device_name": _no_cuda,
        "synchronize": _no_cuda,
        "set_device": _no_cuda,
    }
    cuda.update(legacy.CUDA_TYPES)
    return {
        "torch": torch,
        "torch.autograd": {
            "Variable": legacy.Variable,
            "variable": "module:torch.autograd.variable",
        },
        "torch.autograd.variable": {"Variable": legacy.Variable},
        "torch.cuda": cuda,
        "torch.backends": {"mps": "module:torch.backends.mps", "cudnn": CudnnFlags()},
        "torch.backends.mps": {"is_available": _false, "is_built": _false},
        "torch.accelerator": {
            "is_available": _false,
            "current_accelerator": _none,
            "device_count": _zero,
        },
    }
