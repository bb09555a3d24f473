"""`torch.nn.utils`: gradient clipping and flattening parameters to one vector."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import grad_mode, ops
from ..autograd.tensor import Tensor


def _param_list(parameters: Any) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Any,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: Any = None,
) -> Tensor:
    """Scale the gradients in place so that their joint norm is at most max_norm;
    returns the joint norm before clipping (a 0-d tensor), as PyTorch."""
    grads = [p._grad for p in _param_list(parameters) if p._grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return ops.tensor(0.0)
    with grad_mode.no_grad():
        norms = [ops.norm(g, norm_type) for g in grads]
        total = ops.norm(ops.stack(norms), norm_type)
        if error_if_nonfinite and not bool(np.isfinite(total.data_)):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        coef = ops.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters: Any, clip_value: float, foreach: Any = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    c = float(clip_value)
    with grad_mode.no_grad():
        for p in _param_list(parameters):
            if p._grad is not None:
                p._grad.clamp_(min=-c, max=c)


def parameters_to_vector(parameters: Any) -> Tensor:
    """All parameters flattened and concatenated into one vector."""
    return ops.cat([ops.reshape(p, (-1,)) for p in _param_list(parameters)])


def vector_to_parameters(vec: Tensor, parameters: Any) -> None:
    """Copy consecutive slices of `vec` into the parameters' data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for p in _param_list(parameters):
        n = p.data_.size
        p.data_ = vec.data_[pointer : pointer + n].reshape(p.data_.shape).astype(p.data_.dtype)
        pointer += n
