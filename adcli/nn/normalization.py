"""Normalisation layers: LayerNorm, BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d
and InstanceNorm2d, with PyTorch 2.13's parameters, buffers (running statistics in
state_dict), checks and printed form."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..autograd import dtypes, grad_mode, normalization, ops
from ..autograd.config import config
from ..autograd.tensor import Tensor
from . import init
from .module import Module, attrs
from .parameter import Parameter


def _tensor(shape: tuple[int, ...], dtype: Any, fill: float) -> Tensor:
    dt = ops._dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    return Tensor._make(np.full(shape, fill, dt.np))


class LayerNorm(Module):
    """Normalises over the last dims (normalized_shape), then an elementwise affine map
    (weight of ones, bias of zeros)."""

    __ad_attrs__ = attrs(
        "normalized_shape", "eps", "elementwise_affine", "weight", "bias", "reset_parameters"
    )
    __ad_settable__ = Module.__ad_settable__ | {"weight", "bias", "eps"}

    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_tensor(self.normalized_shape, dtype, 0.0))
            if bias:
                self.bias = Parameter(_tensor(self.normalized_shape, dtype, 0.0))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return normalization.layer_norm(
            input, self.normalized_shape, self.weight, self.bias, self.eps
        )

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _BatchNorm(Module):
    """Shared by BatchNorm1d and BatchNorm2d: per-channel normalisation with the batch's
    statistics while training (tracked in running_mean and running_var), the running
    ones in eval mode."""

    __ad_attrs__ = attrs(
        "num_features",
        "eps",
        "momentum",
        "affine",
        "track_running_stats",
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
        "reset_parameters",
        "reset_running_stats",
    )
    __ad_settable__ = Module.__ad_settable__ | {
        "weight",
        "bias",
        "eps",
        "momentum",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    }

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_tensor((num_features,), dtype, 0.0))
            if bias:
                self.bias = Parameter(_tensor((num_features,), dtype, 0.0))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _tensor((num_features,), dtype, 0.0))
            self.register_buffer("running_var", _tensor((num_features,), dtype, 1.0))
            self.register_buffer("num_batches_tracked", Tensor._make(np.zeros((), np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean zeros, running variance ones, no batches counted."""
        if self.track_running_stats:
            with grad_mode.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight ones, bias zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with grad_mode.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return normalization.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input."""

    def _check_input_dim(self, input: Tensor) -> None:
        nd = input.data_.ndim
        if nd != 2 and nd != 3:
            raise ValueError(f"expected 2D or 3D input (got {nd}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input."""

    def _check_input_dim(self, input: Tensor) -> None:
        nd = input.data_.ndim
        if nd != 4:
            raise ValueError(f"expected 4D input (got {nd}D input)")


class GroupNorm(Module):
    """Normalises each sample over groups of channels, then a per-channel affine map."""

    __ad_attrs__ = attrs(
        "num_groups", "num_channels", "eps", "affine", "weight", "bias", "reset_parameters"
    )
    __ad_settable__ = Module.__ad_settable__ | {"weight", "bias", "eps"}

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_tensor((num_channels,), dtype, 0.0))
            if bias:
                self.bias = Parameter(_tensor((num_channels,), dtype, 0.0))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return normalization.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _InstanceNorm(_BatchNorm):
    """Shared by InstanceNorm1d and InstanceNorm2d: each sample's channels normalised over
    their positions (no affine map and no running statistics by default)."""

    _no_batch_dim = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        nd = input.data_.ndim
        feature_dim = nd - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features"
                    f" ({self.num_features}), but got: {input.shape[feature_dim]}."
                )
            config.warn(
                f"input's size at dim={feature_dim} does not match num_features. "
                "You can silence this warning by not passing in num_features, "
                "which is not used because affine=False"
            )
        if nd == self._no_batch_dim:
            return ops.squeeze(self._instance(ops.unsqueeze(input, 0)), 0)
        return self._instance(input)

    def _instance(self, input: Tensor) -> Tensor:
        return normalization.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) input."""

    def _check_input_dim(self, input: Tensor) -> None:
        nd = input.data_.ndim
        if nd not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {nd}D input)")


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input."""

    _no_batch_dim = 3

    def _check_input_dim(self, input: Tensor) -> None:
        nd = input.data_.ndim
        if nd not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {nd}D input)")


MODULES = (LayerNorm, BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d)
FUNCTIONS = {
    "layer_norm": normalization.layer_norm,
    "batch_norm": normalization.batch_norm,
    "group_norm": normalization.group_norm,
    "instance_norm": normalization.instance_norm,
}
