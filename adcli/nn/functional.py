"""`torch.nn.functional` names whose PyTorch signature differs from the engine op's:
the same parameters, order and defaults as PyTorch 2.13 (`inplace=`, the pre-1.0
`size_average`/`reduce` of the losses, softmax's `_stacklevel`), each calling the op
of adcli.autograd.ops. The other functional names are the ops themselves, renamed to
PyTorch's keywords by adcli.autograd.signatures.
"""

from __future__ import annotations

from typing import Any

from ..autograd import ops
from ..autograd.signatures import conform
from ..autograd.tensor import Tensor
from .loss import legacy_reduction

__all__ = ["members"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0); in place (torch.relu_) when `inplace`."""
    return input.relu_() if inplace else ops.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input if input > 0 else negative_slope * input (in place when `inplace`)."""
    if inplace:
        return input._inplace(lambda t: ops.leaky_relu(t, negative_slope))
    return ops.leaky_relu(input, negative_slope)


def softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """exp(input) / sum(exp(input)) along dim."""
    return ops.softmax(input, dim, dtype)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """input - logsumexp(input) along dim."""
    return ops.log_softmax(input, dim, dtype)


def _no_weight(name: str, weight: Any) -> None:
    if weight is not None:
        raise NotImplementedError(
            f"adcli's {name} has no weight= yet: multiply its reduction='none' result by the "
            "weights, then take the mean"
        )


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error."""
    _no_weight("mse_loss", weight)
    return ops.mse_loss(input, target, legacy_reduction(size_average, reduce, reduction))


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error."""
    _no_weight("l1_loss", weight)
    return ops.l1_loss(input, target, legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Squared error within beta of the target (over beta), absolute error beyond."""
    return ops.smooth_l1_loss(
        input, target, legacy_reduction(size_average, reduce, reduction), beta
    )


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """Squared error within delta of the target, delta times the absolute error beyond."""
    _no_weight("huber_loss", weight)
    return ops.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """-(t log p + (1 - t) log(1 - p))"""
    r = legacy_reduction(size_average, reduce, reduction)
    return ops.binary_cross_entropy(input, target, weight, r)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class indices."""
    r = legacy_reduction(size_average, reduce, reduction)
    return ops.nll_loss(input, target, weight, ignore_index, r)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """nll_loss(log_softmax(input, 1), target), or against class probabilities."""
    r = legacy_reduction(size_average, reduce, reduction)
    return ops.cross_entropy(input, target, weight, ignore_index, r, label_smoothing)


def one_hot(input: Any, num_classes: Any = -1) -> Tensor:  # noqa: A002 - PyTorch's name
    """int64 one-hot rows: a last dimension of `num_classes` (max + 1 when -1), 1 at
    each value's index (no gradient: the result is an integer tensor)."""
    import numpy as np

    if not isinstance(input, Tensor):
        raise TypeError(
            f"one_hot(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(
            f"one_hot(): argument 'num_classes' must be int, not {type(num_classes).__name__}"
        )
    x = input.data_
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = int(num_classes)
    if x.size == 0:
        if n <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(np.zeros((*x.shape, n), dtype=np.int64))
    if int(x.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if n == -1:
        n = int(x.max()) + 1
    elif not n > int(x.max()):
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (x[..., None] == np.arange(n, dtype=np.int64)).astype(np.int64)
    return Tensor._make(out)


_OWN = (
    one_hot,
    relu,
    leaky_relu,
    softmax,
    log_softmax,
    mse_loss,
    l1_loss,
    smooth_l1_loss,
    huber_loss,
    binary_cross_entropy,
    nll_loss,
    cross_entropy,
)

# The ops used as they are, with PyTorch's name for their first parameter.
_RENAMED = "softplus sigmoid tanh linear dropout dropout2d gelu elu silu hardtanh".split()


def members() -> dict[str, Any]:
    """The torch.nn.functional entries this module provides, by name."""
    table: dict[str, Any] = {f.__name__: f for f in _OWN}
    for name in _RENAMED:
        table[name] = _CONFORMED.get(name) or _CONFORMED.setdefault(
            name, conform(getattr(ops, name), name, "input")
        )
    return table


_CONFORMED: dict[str, Any] = {}
