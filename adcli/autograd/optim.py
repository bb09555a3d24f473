"""torch.optim: SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adadelta, RMSprop and Adagrad,
updating parameters op by op as PyTorch 2.13's single-tensor (CPU) code, each op
rounded as its CPU kernel rounds."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from . import dtypes, mkl
from . import node as _node
from . import profiler as _profiler
from .config import config
from .kernels32 import fma
from .tensor import Tensor, check_no_overlap

DUPLICATE_WARNING = (
    "optimizer contains a parameter group with duplicate parameters; in future, this will "
    "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information"
)


def _zero_in_place(g: Tensor) -> None:
    """zero_grad(set_to_none=False) as PyTorch: the same .grad tensor, detached (or no
    longer requiring grad) and zeroed in place, so earlier references see the zeros."""
    if g.grad_fn is not None:
        # PyTorch's detach_(): refused for a view; a node that saved this grad refuses it
        g.detach_()
        g._output_nr = 0
    g._requires_grad = False
    if g.data_.flags.writeable:
        g.data_[...] = 0
        g._vc[0] += 1
    else:  # a broadcast view cannot be written: a fresh buffer
        g.data_ = np.zeros_like(g.data_)


_ADD_ = (("aten::add_", ()),)  # a parameter's update, as PyTorch's profiler names it


def _sqrt(x: np.ndarray) -> np.ndarray:
    """The optimizers' `Tensor.sqrt()`: MKL's, as PyTorch's, where it is installed."""
    r = mkl.vml("sqrt", x)
    return np.sqrt(x) if r is None else r


class Optimizer:
    """Holds parameter groups; `zero_grad()` and `step()`. A script may derive its own
    optimizer from it (`super().__init__(params, defaults)`, a `step` that reads
    `self.param_groups` and keeps per-parameter buffers in `self.state[p]`)."""

    __ad_subclass__ = True
    __ad_attrs__ = frozenset(
        {"zero_grad", "step", "param_groups", "state", "state_dict", "defaults"}
    )
    defaults: dict[str, Any] = {}
    _opt_called = False  # has step() run (a scheduler's warning asks)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None:

            def counted(self: Optimizer, closure: Any = None) -> Any:
                self._opt_called = True
                if _node.prof is not None:  # a profile is open: PyTorch's range around it
                    name = type(self).__name__
                    return _profiler.within(f"Optimizer.step#{name}.step", step, self, closure)
                return step(self, closure)

            counted.__doc__ = step.__doc__
            cls.step = counted  # type: ignore[method-assign]

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
        self.defaults = defaults
        for g in groups:
            group = dict(g)  # PyTorch's key order: the group's own, then the defaults
            for k, v in defaults.items():
                group.setdefault(k, v)
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
        # per parameter (by id): NumPy arrays, and the step counters as NumPy scalars
        self._state: dict[int, dict[str, Any]] = {}
        # a script optimizer's own `self.state`: a dict per parameter, made on first use
        self._ad_script_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)

    @property
    def state(self) -> dict[Tensor, dict[str, Any]]:
        """`optimizer.state`: each parameter's buffers as tensors (sharing the memory the
        optimizer updates), keyed by the parameter, in the order they were created; for
        an optimizer a script defines, the dicts its `step` keeps there."""
        if type(self) not in _HOST_OPTIMIZERS:
            return self._ad_script_state
        by_id = {id(p): p for g in self.param_groups for p in g["params"]}
        return {
            by_id[i]: {k: Tensor._make(v) for k, v in st.items()}
            for i, st in self._state.items()
            if i in by_id
        }

    def state_dict(self) -> dict[str, Any]:
        """`optimizer.state_dict()`: the state keyed by each parameter's index (counted
        over the groups in order), and the groups with `params` as those indices."""
        index: dict[int, int] = {}
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for i, p in enumerate(g["params"], start):  # a repeated parameter keeps its first
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in g["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {
            index[i]: {k: Tensor._make(v) for k, v in st.items()}
            for i, st in self._state.items()
            if i in index
        }
        return {"state": state, "param_groups": groups}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient (to None by default, as PyTorch 2)."""
        if _node.prof is not None:  # a profile is open: PyTorch's range around it
            name = f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"
            _profiler.within(name, self._zero_grad, set_to_none)
            return
        self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
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


# PyTorch's in-place kernels, each rounded as its CPU kernel rounds (measured against
# torch 2.13 over random float32 and float64 tensors, every element bit-equal): a
# Python scalar is first converted to the tensor's dtype.


def _add(x: np.ndarray, t: np.ndarray, alpha: float) -> np.ndarray:
    """`x.add(t, alpha=alpha)`: one fused multiply-add."""
    return fma(t, np.asarray(_f(alpha, x)), x)


def _addcmul(x: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> np.ndarray:
    """`x.addcmul(t1, t2, value=v)`: v * t1 rounded, then fused: fma(v * t1, t2, x)."""
    return fma(_f(value, x) * t1, t2, x)


def _addcdiv(x: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: float) -> np.ndarray:
    """`x.addcdiv(t1, t2, value=v)`: x + (v * t1) / t2, three roundings."""
    return x + (_f(value, x) * t1) / t2


def _lerp(x: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """`x.lerp(end, w)` with a scalar weight: fma(w, end - x, x) for |w| < 0.5, else
    fma(w - 1, end - x, end) (the weight and w - 1 in the tensor's dtype)."""
    w = _f(weight, x)
    if abs(w) < 0.5:
        return fma(np.full_like(x, w), end - x, x)
    return fma(np.full_like(x, w - _f(1, x)), end - x, end)


def _step_dtype() -> Any:
    """The dtype of the `step` tensor in an optimizer's state: float32, or float64
    when that is the default dtype (PyTorch's `_get_scalar_dtype`)."""
    return np.float64 if dtypes.DEFAULT_FLOAT.np == np.float64 else np.float32


def _count(st: dict[str, Any]) -> float:
    """`step_t += 1; step = _get_value(step_t)`: the step tensor counts in its dtype."""
    st["step"] = st["step"] + st["step"].dtype.type(1)
    return float(st["step"])


def _new_step() -> Any:
    return _step_dtype()(0.0)


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
            bufs = [self._state.get(id(p), {}).get("momentum_buffer") for p in params]
            for i, p in enumerate(params):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
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
                if _node.prof is not None and mom == 0 and wd == 0:  # PyTorch's param.add_
                    _node.prof.emit(_ADD_)
            if mom != 0:
                for p, buf in zip(params, bufs, strict=True):
                    self._state.setdefault(id(p), {})["momentum_buffer"] = buf
        return loss


def _check(lr: float, eps: float | None = None, weight_decay: float = 0, betas: Any = ()) -> None:
    """PyTorch's argument checks, in its order: lr, eps, betas, weight_decay."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _grad(p: Tensor, maximize: bool) -> np.ndarray:
    g = p._grad.data_
    return -g if maximize else g


class Adam(Optimizer):
    """Adam (optionally with L2 or decoupled weight decay, and AMSGrad)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: Any = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Any = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check(lr, eps, weight_decay, betas)
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
                decoupled_weight_decay=decoupled_weight_decay,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One Adam update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            wd, amsgrad = group["weight_decay"], group["amsgrad"]
            for p in self._params_with_grad(group):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                g = _grad(p, group["maximize"])
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["exp_avg"] = np.zeros_like(x)
                    st["exp_avg_sq"] = np.zeros_like(x)
                    if amsgrad:
                        st["max_exp_avg_sq"] = np.zeros_like(x)
                step = _count(st)
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        x[...] = x * _f(1 - lr * wd, x)
                    else:
                        g = _add(g, x, wd)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m[...] = _lerp(m, g, 1 - b1)
                v[...] = _addcmul(v * _f(b2, x), g, g, 1 - b2)
                step_size = lr / (1 - b1**step)
                bc2_sqrt = (1 - b2**step) ** 0.5
                if amsgrad:
                    np.maximum(st["max_exp_avg_sq"], v, out=st["max_exp_avg_sq"])
                    v = st["max_exp_avg_sq"]
                denom = _sqrt(v) / _f(bc2_sqrt, x) + _f(eps, x)
                x[...] = _addcdiv(x, m, denom, -step_size)
                p._vc[0] += 1
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (`p *= 1 - lr * weight_decay` first)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: Any = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Any = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm."""

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: Any = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check(lr, eps, weight_decay, betas)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One Adamax update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                g = _grad(p, group["maximize"])
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["exp_avg"] = np.zeros_like(x)
                    st["exp_inf"] = np.zeros_like(x)
                step = _count(st)
                if wd != 0:
                    g = _add(g, x, wd)
                m, u = st["exp_avg"], st["exp_inf"]
                m[...] = _lerp(m, g, 1 - b1)
                np.maximum(u * _f(b2, x), np.abs(g) + _f(eps, x), out=u)
                clr = lr / (1 - b1**step)
                x[...] = _addcdiv(x, m, u, -clr)
                p._vc[0] += 1
        return loss


class NAdam(Optimizer):
    """NAdam: Adam with Nesterov momentum (momentum decay, optional decoupled decay)."""

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: Any = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check(lr, eps, weight_decay, betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                momentum_decay=momentum_decay,
                decoupled_weight_decay=decoupled_weight_decay,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One NAdam update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            md = group["momentum_decay"]
            for p in self._params_with_grad(group):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                g = _grad(p, group["maximize"])
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["mu_product"] = _step_dtype()(1.0)
                    st["exp_avg"] = np.zeros_like(x)
                    st["exp_avg_sq"] = np.zeros_like(x)
                step = _count(st)
                bc2 = 1 - b2**step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        x[...] = x * _f(1 - lr * wd, x)
                    else:
                        g = _add(g, x, wd)
                mu = b1 * (1.0 - 0.5 * (0.96 ** (step * md)))
                mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
                # mu_product is a tensor of the step's dtype: multiplied in that dtype
                mp = st["mu_product"] = st["mu_product"] * _f(mu, st["mu_product"])
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m[...] = _lerp(m, g, 1 - b1)
                v[...] = _addcmul(v * _f(b2, x), g, g, 1 - b2)
                denom = _sqrt(v / _f(bc2, x)) + _f(eps, x)
                mp_next = float(mp) * mu_next
                x[...] = _addcdiv(x, g, denom, -lr * (1.0 - mu) / (1.0 - float(mp)))
                x[...] = _addcdiv(x, m, denom, (-lr * mu_next) / (1.0 - mp_next))
                p._vc[0] += 1
        return loss


class RAdam(Optimizer):
    """RAdam: Adam with the variance of the adaptive learning rate rectified."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: Any = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check(lr, eps, weight_decay, betas)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                decoupled_weight_decay=decoupled_weight_decay,
                differentiable=differentiable,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One RAdam update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                g = _grad(p, group["maximize"])
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["exp_avg"] = np.zeros_like(x)
                    st["exp_avg_sq"] = np.zeros_like(x)
                step = _count(st)
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        x[...] = x * _f(1 - lr * wd, x)
                    else:
                        g = _add(g, x, wd)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m[...] = _lerp(m, g, 1 - b1)
                v[...] = _addcmul(v * _f(b2, x), g, g, 1 - b2)
                bc1 = 1 - b1**step
                bc2 = 1 - b2**step
                corrected = m / _f(bc1, x)
                rho_inf = 2 / (1 - b2) - 1
                rho_t = rho_inf - 2 * step * (b2**step) / bc2
                if rho_t > 5.0:
                    num = (rho_t - 4) * (rho_t - 2) * rho_inf
                    rect = (num / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    # `scalar / tensor` is PyTorch's `reciprocal() * scalar`
                    adaptive = np.reciprocal(_sqrt(v) + _f(eps, x)) * _f(bc2**0.5, x)
                    update = corrected * _f(lr, x) * adaptive * _f(rect, x)
                else:
                    update = corrected * _f(lr, x)
                x[...] = _add(x, update, -1.0)
                p._vc[0] += 1
        return loss


class Adadelta(Optimizer):
    """Adadelta."""

    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: Any = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check(lr, eps, weight_decay)
        super().__init__(
            params,
            dict(
                lr=lr,
                rho=rho,
                eps=eps,
                weight_decay=weight_decay,
                maximize=maximize,
                capturable=capturable,
                foreach=foreach,
                differentiable=differentiable,
            ),
        )

    def step(self, closure: Any = None) -> Any:
        """One Adadelta update of every parameter that has a gradient."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                x = p.data_
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["square_avg"] = np.zeros_like(x)
                    st["acc_delta"] = np.zeros_like(x)
                _count(st)
                g = _grad(p, group["maximize"])
                if wd != 0:
                    g = _add(g, x, wd)
                sq, acc = st["square_avg"], st["acc_delta"]
                sq[...] = _addcmul(sq * _f(rho, x), g, g, 1 - rho)
                std = _sqrt(sq + _f(eps, x))
                delta = _sqrt(acc + _f(eps, x)) / std * g
                acc[...] = _addcmul(acc * _f(rho, x), delta, delta, 1 - rho)
                x[...] = _add(x, delta, -lr)
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
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                st = self._state.setdefault(id(p), {})
                if not st:
                    st["step"] = _new_step()
                    st["square_avg"] = np.zeros_like(x)
                    if mom > 0:
                        st["momentum_buffer"] = np.zeros_like(x)
                    if centered:
                        st["grad_avg"] = np.zeros_like(x)
                g = _grad(p, group["maximize"])
                _count(st)
                if wd != 0:
                    g = _add(g, x, wd)
                sq = st["square_avg"]
                sq[...] = _addcmul(sq * _f(alpha, x), g, g, 1 - alpha)
                if centered:
                    ga = st["grad_avg"]
                    ga[...] = _lerp(ga, g, 1 - alpha)
                    avg = _sqrt(_addcmul(sq, ga, ga, -1))
                else:
                    avg = _sqrt(sq)
                avg = avg + _f(eps, x)
                if mom > 0:
                    buf = st["momentum_buffer"]
                    buf[...] = _addcdiv(buf * _f(mom, x), g, avg, 1)
                    x[...] = _add(x, buf, -lr)
                else:
                    x[...] = _addcdiv(x, g, avg, -lr)
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
                self._state[id(p)] = {
                    "step": _new_step(),
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
                check_no_overlap(x)  # PyTorch's in-place update refuses an expanded parameter
                st = self._state[id(p)]
                step = _count(st)
                g = _grad(p, group["maximize"])
                if wd != 0:
                    g = _add(g, x, wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                st["sum"][...] = _addcmul(st["sum"], g, g, 1)
                std = _sqrt(st["sum"]) + _f(eps, x)
                x[...] = _addcdiv(x, g, std, -clr)
                p._vc[0] += 1
        return loss


# PyTorch's modules, so `print(type(opt))` shows `<class 'torch.optim.sgd.SGD'>` as there
# (the `state` property tells a script's optimizer by its class's own module, "__main__").
for _cls in (SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adadelta, RMSprop, Adagrad):
    _cls.__module__ = "torch.optim." + _cls.__name__.lower()
Optimizer.__module__ = "torch.optim.optimizer"
_HOST_OPTIMIZERS = frozenset(
    (Optimizer, SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adadelta, RMSprop, Adagrad)
)
