"""torch.optim.SGD and Adam, updating parameters exactly as PyTorch's single-tensor code."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import mkl
from .config import config
from .kernels32 import fma
from .tensor import Tensor

DUPLICATE_WARNING = (
    "optimizer contains a parameter group with duplicate parameters; in future, this will "
    "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information"
)


def _zero_in_place(g: Tensor) -> None:
    """zero_grad(set_to_none=False) as PyTorch: the same .grad tensor, detached (or no
    longer requiring grad) and zeroed in place, so earlier references see the zeros."""
    if g._grad_fn is not None:
        g.grad_fn = None
        g._output_nr = 0
    g._requires_grad = False
    if g.data_.flags.writeable:
        g.data_[...] = 0
        g._vc[0] += 1
    else:  # a broadcast view cannot be written: a fresh buffer
        g.data_ = np.zeros_like(g.data_)


def _sqrt(x: np.ndarray) -> np.ndarray:
    """The optimizers' `Tensor.sqrt()`: MKL's, as PyTorch's, where it is installed."""
    r = mkl.vml("sqrt", x)
    return np.sqrt(x) if r is None else r


class Optimizer:
    """Holds parameter groups; `zero_grad()` and `step()`."""

    __ad_attrs__ = frozenset({"zero_grad", "step", "param_groups", "state"})
    defaults: dict[str, Any] = {}

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {params.type()}"
            )
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups: list[dict[str, Any]] = []
        for g in groups:
            group = dict(defaults)
            group.update(g)
            ps = group["params"]
            # a group's "params" may be one tensor (d2l's weight-decay groups)
            group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
            for p in group["params"]:
                if not isinstance(p, Tensor):
                    raise TypeError(
                        "optimizer can only optimize Tensors, but one of the params is "
                        + type(p).__name__
                    )
                if not (p.is_leaf or p.retains_grad):  # PyTorch takes one retaining its grad
                    raise ValueError("can't optimize a non-leaf Tensor")
            if len({id(p) for p in group["params"]}) != len(group["params"]):
                config.warn(DUPLICATE_WARNING)
            self.param_groups.append(group)
        self.state: dict[int, dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient (to None by default, as PyTorch 2)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    _zero_in_place(p._grad)

    def _params_with_grad(self, group: dict[str, Any]) -> list[Tensor]:
        return [p for p in group["params"] if p._grad is not None]

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            if i:
                lines.append("")  # PyTorch separates the groups by an empty line
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in g if k != "params"):
                lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _f(x: float, like: np.ndarray) -> Any:
    """A Python number as a scalar of the parameter's dtype (how torch applies it)."""
    return like.dtype.type(x)


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: Any = None,
        differentiable: bool = False,
        fused: Any = None,
    ) -> None:
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                foreach=foreach,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            params = self._params_with_grad(group)
            # the buffers are read for the whole group first and stored after, as
            # PyTorch does (a parameter listed twice starts both times afresh at step 1)
            bufs = [self.state.get(id(p), {}).get("momentum_buffer") for p in params]
            for i, p in enumerate(params):
                x = p.data_
                d = p._grad.data_
                if maximize:
                    d = -d
                # each `add(..., alpha=)` of PyTorch's step is one fused multiply-add
                if wd != 0:
                    d = fma(x, _f(wd, x), d)
                if mom != 0:
                    buf = bufs[i]
                    if buf is None:
                        buf = np.array(d, copy=True)
                    else:  # in place: a parameter listed twice updates the one buffer twice
                        buf *= _f(mom, x)
                        buf[...] = fma(d, _f(1 - damp, x), buf)
                    bufs[i] = buf
                    d = fma(buf, _f(mom, x), d) if nesterov else buf
                x[...] = fma(d, _f(-lr, x), x)
                p._vc[0] += 1
            if mom != 0:
                for p, buf in zip(params, bufs, strict=True):
                    self.state.setdefault(id(p), {})["momentum_buffer"] = buf
        return loss


class Adam(Optimizer):
    """Adam (optionally with L2 weight decay and AMSGrad)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: Any = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Any = None,
    ) -> None:
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=tuple(betas),
                eps=eps,
                weight_decay=weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One Adam update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            wd, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
            for p in self._params_with_grad(group):
                x = p.data_
                g = p._grad.data_
                if maximize:
                    g = -g
                st = self.state.setdefault(id(p), {})
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = np.zeros_like(x)
                    st["exp_avg_sq"] = np.zeros_like(x)
                    if amsgrad:
                        st["max_exp_avg_sq"] = np.zeros_like(x)
                st["step"] += 1
                step = st["step"]
                if wd != 0:
                    g = g + _f(wd, x) * x
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m += _f(1 - b1, x) * (g - m)  # lerp towards g
                v *= _f(b2, x)
                v += _f(1 - b2, x) * (g * g)
                bc1 = 1 - b1**step
                bc2 = 1 - b2**step
                step_size = lr / bc1
                bc2_sqrt = math.sqrt(bc2)
                if amsgrad:
                    np.maximum(st["max_exp_avg_sq"], v, out=st["max_exp_avg_sq"])
                    denom = _sqrt(st["max_exp_avg_sq"]) / _f(bc2_sqrt, x) + _f(eps, x)
                else:
                    denom = _sqrt(v) / _f(bc2_sqrt, x) + _f(eps, x)
                x += _f(-step_size, x) * (m / denom)
                p._vc[0] += 1
        return loss


class RMSprop(Optimizer):
    """RMSprop (optionally centered, with momentum and weight decay)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: Any = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if momentum < 0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if alpha < 0:
            raise ValueError(f"Invalid alpha value: {alpha}")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                alpha=alpha,
                eps=eps,
                centered=centered,
                weight_decay=weight_decay,
                capturable=capturable,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One RMSprop update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, mom, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in self._params_with_grad(group):
                x = p.data_
                g = p._grad.data_
                if group["maximize"]:
                    g = -g
                st = self.state.setdefault(id(p), {})
                if not st:
                    st["step"] = 0
                    st["square_avg"] = np.zeros_like(x)
                    if mom > 0:
                        st["momentum_buffer"] = np.zeros_like(x)
                    if centered:
                        st["grad_avg"] = np.zeros_like(x)
                st["step"] += 1
                if wd != 0:
                    g = g + _f(wd, x) * x
                sq = st["square_avg"]
                sq *= _f(alpha, x)
                sq += _f(1 - alpha, x) * g * g  # addcmul_: value * t1 * t2
                if centered:
                    ga = st["grad_avg"]
                    ga += _f(1 - alpha, x) * (g - ga)  # lerp_
                    avg = _sqrt(sq + _f(-1, x) * ga * ga)
                else:
                    avg = _sqrt(sq)
                avg = avg + _f(eps, x)
                if mom > 0:
                    buf = st["momentum_buffer"]
                    buf *= _f(mom, x)
                    buf += g / avg  # addcdiv_ with value 1
                    x += _f(-lr, x) * buf
                else:
                    x += _f(-lr, x) * g / avg  # addcdiv_: value * t1 / t2
                p._vc[0] += 1
        return loss


class Adagrad(Optimizer):
    """Adagrad (with learning-rate decay and weight decay)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: Any = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: Any = None,
    ) -> None:
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if lr_decay < 0:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if initial_accumulator_value < 0:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if eps < 0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        super().__init__(
            params,
            dict(
                lr=lr,
                lr_decay=lr_decay,
                eps=eps,
                weight_decay=weight_decay,
                initial_accumulator_value=initial_accumulator_value,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        # PyTorch fills the state at construction (sum = initial_accumulator_value)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[id(p)] = {
                    "step": 0,
                    "sum": np.full_like(p.data_, group["initial_accumulator_value"]),
                }

    def step(self, closure: Any = None) -> Any:
        """One Adagrad update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            wd = group["weight_decay"]
            for p in self._params_with_grad(group):
                x = p.data_
                g = p._grad.data_
                if group["maximize"]:
                    g = -g
                st = self.state[id(p)]
                st["step"] += 1
                if wd != 0:
                    g = g + _f(wd, x) * x
                clr = lr / (1 + (st["step"] - 1) * lr_decay)
                st["sum"] += g * g  # addcmul_ with value 1
                std = _sqrt(st["sum"]) + _f(eps, x)
                x += _f(-clr, x) * g / std  # addcdiv_: value * t1 / t2
                p._vc[0] += 1
        return loss
