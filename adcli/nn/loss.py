"""Loss modules: each holds its reduction (and class weights) and calls the functional
loss of adcli.autograd.ops."""

from __future__ import annotations

from typing import Any

from ..autograd import ops
from ..autograd.config import config
from ..autograd.tensor import Tensor
from .module import Module, attrs


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """The reduction the pre-1.0 `size_average`/`reduce` arguments stand for (warned)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    config.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead."
    )
    return ret


class _Loss(Module):
    __ad_attrs__ = attrs("reduction")

    def __init__(
        self, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
    ) -> None:
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    __ad_attrs__ = attrs("reduction", "weight")

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error."""

    __ad_attrs__ = _Loss.__ad_attrs__

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    __ad_attrs__ = _Loss.__ad_attrs__

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error within beta of the target, absolute error beyond (divided by beta)."""

    __ad_attrs__ = attrs("reduction", "beta")

    def __init__(
        self,
        size_average: Any = None,
        reduce: Any = None,
        reduction: str = "mean",
        beta: float = 1.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error within delta of the target, delta times the absolute error beyond."""

    __ad_attrs__ = attrs("reduction", "delta")

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities."""

    __ad_attrs__ = _WeightedLoss.__ad_attrs__

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits (a sigmoid and BCELoss in one stable step)."""

    __ad_attrs__ = attrs("reduction", "weight", "pos_weight")

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        reduce: Any = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices (input holds log-probabilities)."""

    __ad_attrs__ = attrs("reduction", "weight", "ignore_index")

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax and NLLLoss in one (class indices or probabilities as target)."""

    __ad_attrs__ = attrs("reduction", "weight", "ignore_index", "label_smoothing")

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return ops.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )
