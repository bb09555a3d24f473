"""`torch.nn.init`: fill a tensor in place (under no_grad) from PyTorch's random stream.

Each function draws exactly the numbers torch draws after the same `manual_seed`
(`uniform_` and `normal_` of the generator in adcli.autograd.random), with the
bounds computed by the same float arithmetic, so layers start from identical
weights.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import ops
from ..autograd import random as rng
from ..autograd.generator import pick
from ..autograd.tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

_LINEAR_LIKE = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def _write(t: Tensor, values: np.ndarray) -> Tensor:
    """Store `values` into t's buffer, as an in-place op under no_grad does."""
    np.copyto(t.data_, values.reshape(t.data_.shape), casting="unsafe")
    t._vc[0] += 1
    return t


def _float_name(t: Tensor) -> str:
    name = t.dtype.name
    if name not in ("float32", "float64", "float16"):
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{name}'")
    return name


def _gen(generator: Any, kernel: str) -> rng.Generator:
    """The generator to draw from, or PyTorch's TypeError naming the tensor method."""
    return pick(kernel, generator)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b) samples."""
    x, name = tensor.data_, _float_name(tensor)
    gen = _gen(generator, "uniform_")
    if ops._is_contiguous(x):
        return _write(tensor, gen.uniform(x.shape, a, b, name))
    # PyTorch's uniform_ fills a non-contiguous tensor in memory order
    return _write(tensor, ops.in_memory_order(gen.uniform((x.size,), a, b, name), x))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std**2) samples."""
    x, name = tensor.data_, _float_name(tensor)
    gen = _gen(generator, "normal_")
    if ops._is_contiguous(x):
        return _write(tensor, gen.normal(x.shape, mean, std, name))
    # PyTorch's normal_ fills a non-contiguous tensor in memory order, one by one
    values = gen.normal((x.size,), mean, std, name, serial=True)
    return _write(tensor, ops.in_memory_order(values, x))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return _write(tensor, np.full(tensor.data_.shape, val, tensor.data_.dtype))


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.data_.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.data_.shape, dtype=tensor.data_.dtype))


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR_LIKE or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): input and output feature maps times the receptive field."""
    shape = tensor.data_.shape
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = math.prod(shape[2:]) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _empty_warning(tensor: Tensor) -> bool:
    if 0 in tensor.data_.shape:
        from ..autograd.config import config

        config.warn("Initializing zero-element tensors is a no-op")
        return True
    return False


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    """He initialisation's standard deviation, gain / sqrt(fan) (the fan checked first)."""
    fan = _fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He initialisation)."""
    if _empty_warning(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """N(0, std**2) with std = gain / sqrt(fan) (He initialisation)."""
    if _empty_warning(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight tensor (`_calculate_fan_in_and_fan_out`)."""
    return _fans(tensor)
