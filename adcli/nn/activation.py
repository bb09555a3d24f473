"""Activation modules: ReLU, LeakyReLU, PReLU, Sigmoid, Tanh, Softmax, LogSoftmax, GELU,
ELU, Softplus, Hardtanh and SiLU, each calling its functional form and printed as PyTorch."""

from __future__ import annotations

from typing import Any

from ..autograd import ops
from ..autograd.config import config
from ..autograd.tensor import Tensor
from . import init
from .layers import _empty
from .module import Module, attrs
from .parameter import Parameter

IMPLICIT_DIM_WARNING = (
    "Implicit dimension choice for {0} has been deprecated. Change the call to include "
    "dim=X as an argument."
)


def _inplace_suffix(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class ReLU(Module):
    """max(x, 0)."""

    __ad_attrs__ = attrs("inplace")

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return input._inplace(ops.relu) if self.inplace else ops.relu(input)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, first=True)


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x."""

    __ad_attrs__ = attrs("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:
            return input._inplace(lambda t: ops.leaky_relu(t, self.negative_slope))
        return ops.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + _inplace_suffix(self.inplace)


class PReLU(Module):
    """x if x > 0 else a * x, with a learnable slope a: one for all channels or one per
    channel (dim 1 of the input)."""

    __ad_attrs__ = attrs("num_parameters", "init", "weight", "reset_parameters")
    __ad_settable__ = Module.__ad_settable__ | {"weight"}

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope set to `init`."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return ops.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    __ad_attrs__ = attrs()

    def forward(self, input: Tensor) -> Tensor:
        return ops.sigmoid(input)


class Tanh(Module):
    """tanh(x)."""

    __ad_attrs__ = attrs()

    def forward(self, input: Tensor) -> Tensor:
        return ops.tanh(input)


class _SoftmaxBase(Module):
    __ad_attrs__ = attrs("dim")
    fn: Any = None
    label = "softmax"

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        if self.dim is None:
            config.warn(IMPLICIT_DIM_WARNING.format(self.label))
        return type(self).fn(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along dim."""

    __ad_attrs__ = _SoftmaxBase.__ad_attrs__
    fn = staticmethod(ops.softmax)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along dim."""

    __ad_attrs__ = _SoftmaxBase.__ad_attrs__
    fn = staticmethod(ops.log_softmax)
    label = "log_softmax"


class GELU(Module):
    """x * Phi(x), or its tanh approximation."""

    __ad_attrs__ = attrs("approximate")

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return ops.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    __ad_attrs__ = attrs("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_suffix(self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta."""

    __ad_attrs__ = attrs("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return ops.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    __ad_attrs__ = attrs("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise AssertionError
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_suffix(self.inplace)


class SiLU(Module):
    """x * sigmoid(x)."""

    __ad_attrs__ = attrs("inplace")

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, first=True)
