"""The public operations: argument handling, Python scalars, dtype promotion,
then one call into the operation table (functions.py).

This module is above tensor.py (it binds itself into tensor.py's `ops` slot, and the
operation methods onto Tensor) and below functions.py, which fills the `F` slot here.
"""

from __future__ import annotations

import builtins as _py
import inspect
import math
import operator
import sys
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes, grad_mode, ranges
from . import node as _node
from . import profiler as _profiler
from . import profiler_names as _names
from . import sampling as _sampling
from . import sorting as _sorting
from . import tensor as _tensor_module
from .budget import check_broadcast, check_shape
from .config import check_numel
from .config import config as _config
from .dtypes import DType
from .generator import pick as _pick_generator
from .node import dtype_refusal, recording_in_place, short_name
from .storage import (
    converted,
    dense_order,
    element_positions,
    flat_storage,
    iterator_result,
    torch_strides,
)
from .tensor import (
    Tensor,
    ZeroCounter,
    _norm_dim,
    check_no_overlap,
    check_no_partial_overlap,
)

_tensor_module.ops = sys.modules[__name__]  # Tensor's methods and operators call the ops here

# The modules above this one that the ops call into, bound by each as it loads (they
# import this module; adcli/autograd/__init__.py loads them all).
F: Any = None  # functions.py: the operation table (the Function rows)
# vmapping.py: vmap's batched values, and what runs a torch function given one
BATCHED: Any = None
batched_call: Any = None
legacy: Any = None  # legacy.py: x.to(), x.type(), x.cuda()

_INT_KINDS = "iub"


# ************************************************************ helpers


def _is_tensor(v: Any) -> bool:
    return isinstance(v, Tensor)


def float_data(t: Tensor) -> np.ndarray:
    """t's array, converted to the default float dtype when it is integral."""
    a = t.data_
    return a if a.dtype.kind in "fc" else a.astype(dtypes.DEFAULT_FLOAT.np)


def _scalar_tensor(v: Any, dt: DType) -> Tensor:
    return Tensor._make(np.asarray(v, dt.np))


def as_tensor_like(v: Any, like: Tensor) -> Tensor:
    """A Python number as a tensor of the dtype it would combine with `like` to."""
    if isinstance(v, Tensor):
        return v
    return _scalar_tensor(v, dtypes.result_type(like, v))


def _check_number(v: Any, what: str = "other") -> None:
    if not isinstance(v, (int, float, bool, np.number, np.bool_)):
        raise TypeError(
            f"unsupported operand type: expected a Tensor or a number for '{what}', "
            f"got {_type_name(v)}"
        )


def _type_name(v: Any) -> str:
    return {list: "list", tuple: "tuple", str: "str", type(None): "None"}.get(
        type(v), type(v).__name__
    )


def _broadcast_check(a: np.ndarray, b: np.ndarray) -> None:
    sa, sb = a.shape, b.shape
    if sa == sb:
        return
    for i in range(1, _py.min(len(sa), len(sb)) + 1):
        x, y = sa[-i], sb[-i]
        if x != y and x != 1 and y != 1:
            dim = _py.max(len(sa), len(sb)) - i
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {dim}"
            )
    limit = _config.max_numel
    if limit is not None and a.size * b.size > limit:  # the result may be over the limit
        check_broadcast(sa, sb)


def check_output_shape(out: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """An in-place result must keep the written-to tensor's shape, as in PyTorch."""
    if shape == out:
        return
    try:
        full = np.broadcast_shapes(out, shape)
    except ValueError:
        full = shape
    if full != out:
        raise RuntimeError(
            f"output with shape {list(out)} doesn't match the broadcast shape {list(full)}"
        )


def _binary(
    a: Any, b: Any, check: bool = True, const: bool = False
) -> tuple[Tensor, Any, np.dtype]:
    """Operands as tensors (numbers wrapped) and the promoted computation dtype.

    With `const`, a Python number `b` next to a float tensor `a` is returned as the
    number itself (the caller's row takes it as a constant operand: no wrapped
    tensor is built or saved); the dtype is then `a`'s, as a number of a category
    not above the tensor's never promotes it."""
    if isinstance(a, Tensor):
        # fast paths: two tensors of one dtype; a float tensor and a Python number
        ad = a.data_
        if isinstance(b, Tensor):
            bd = b.data_
            if ad.dtype is bd.dtype or ad.dtype == bd.dtype:
                if check and ad.shape != bd.shape:
                    _broadcast_check(ad, bd)
                return a, b, ad.dtype
        elif (type(b) is float or type(b) is int) and ad.dtype.kind == "f":
            # adcli.symbolic's recording reads constant operands as saved tensors
            if const and not _config.record_inputs:
                return a, b, ad.dtype
            return a, Tensor._make(np.asarray(b, ad.dtype)), ad.dtype
    if not isinstance(a, Tensor):
        _check_number(a, "input")
    if not isinstance(b, Tensor):
        _check_number(b)
    rt = dtypes.result_type(a, b)
    ta = a if isinstance(a, Tensor) else _scalar_tensor(a, rt)
    tb = b if isinstance(b, Tensor) else _scalar_tensor(b, rt)
    if check:
        _broadcast_check(ta.data_, tb.data_)
    return ta, tb, rt.np


def _dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """The NumPy axes for `dim` (one dim or a list), normalised and checked as torch does.

    A 0-d tensor accepts dim 0 and -1 (torch treats it as one element), but NumPy has
    no axis to reduce over: the axes are then empty, which reduces nothing."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        dims = _unique_dims(dim, ndim)
        return dims if ndim else ()
    d = _norm_dim(int(dim), ndim)
    return (d,) if ndim else ()


def _sum_dtype(t: Tensor, dtype: Any) -> np.dtype:
    if dtype is not None:
        return dtype.np
    k = t.data_.dtype.kind
    return np.dtype(np.int64) if k in _INT_KINDS else t.data_.dtype


def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"shape must be a sequence of ints, not {_type_name(s)}")
        out.append(int(s))
    return tuple(out)


def check_nonempty(t: Tensor, name: str) -> None:
    """Refuse reductions without identity on empty tensors, as PyTorch does."""
    if t.data_.size == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )


def check_reduce_dims(t: Tensor, name: str, dims: tuple[int, ...]) -> None:
    """Refuse reducing an empty dim without identity (max, argmax...), as PyTorch does."""
    shape = t.data_.shape
    for d in dims:
        if d < len(shape) and shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


# ************************************************************ arithmetic


def add(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    """a + alpha * b"""
    ta, tb, dt = _binary(a, b, const=True)
    out = F.Add.apply(ta, tb, dtype=dt, alpha=alpha)
    if type(ta._vc) is ZeroCounter or type(tb) is Tensor and type(tb._vc) is ZeroCounter:
        _add_zero(out, ta, tb, alpha)
    return out


def _add_zero(out: Tensor, ta: Tensor, tb: Any, alpha: Any) -> None:
    """`out = ta + alpha * tb` where an operand is an efficient zero: as PyTorch, the
    other operand's values themselves (a -0 is kept), or an efficient zero for two."""
    za = type(ta._vc) is ZeroCounter
    zb = type(tb) is Tensor and type(tb._vc) is ZeroCounter
    dt = out.data_.dtype
    if za and zb:
        _as_zero(out)
        return
    if za:
        v = np.asarray(tb.data_ if isinstance(tb, Tensor) else tb, dt)
        if alpha != 1:
            v = v * np.asarray(alpha, dt)
    else:
        v = ta.data_.astype(dt, copy=False)
    out.data_ = np.array(np.broadcast_to(v, out.data_.shape), dt)


def _as_zero(out: Tensor) -> Tensor:
    """Make the fresh result `out` an efficient zero (`z * x`, `z / x`: +0 whatever x,
    NaN included)."""
    out.data_ = np.zeros(out.data_.shape, out.data_.dtype)
    out._vc = ZeroCounter((0,))
    return out


def check_sub_operands(a: Any, b: Any) -> None:
    """PyTorch's refusal of bool operands to `-`: before it broadcasts (bool[2] -
    float[3] names the bool), and before `sub_` checks the memory it writes."""
    bools = [
        isinstance(v, bool) or isinstance(v, Tensor) and v.data_.dtype == np.bool_ for v in (a, b)
    ]
    operands = (Tensor, int, float, bool, np.number, np.bool_)
    if _py.any(bools) and _py.all(isinstance(v, operands) for v in (a, b)):
        if _py.all(bools):
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead."
            )
        raise RuntimeError(_SUB_BOOL)


def sub(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    """a - alpha * b"""
    check_sub_operands(a, b)
    ta, tb, dt = _binary(a, b, const=True)
    out = F.Sub.apply(ta, tb, dtype=dt, alpha=alpha)
    if type(ta._vc) is ZeroCounter or type(tb) is Tensor and type(tb._vc) is ZeroCounter:
        _add_zero(out, ta, tb, -alpha)
    return out


_SUB_BOOL = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
    "to invert a mask, use the `~` or `logical_not()` operator instead."
)


def rsub(a: Tensor, other: Any) -> Tensor:
    """other - a (other a number)"""
    if isinstance(other, Tensor):
        return sub(other, a)
    _check_number(other)
    if a.data_.dtype == np.bool_ or isinstance(other, bool):
        raise RuntimeError(_SUB_BOOL)
    return F.Rsub.apply(a, other=other, dtype=dtypes.result_type(a, other).np)


def mul(a: Any, b: Any) -> Tensor:
    """a * b"""
    ta, tb, dt = _binary(a, b, const=True)
    out = F.Mul.apply(ta, tb, dtype=dt)
    if type(ta._vc) is ZeroCounter or type(tb) is Tensor and type(tb._vc) is ZeroCounter:
        return _as_zero(out)
    return out


def div(a: Any, b: Any, rounding_mode: str | None = None) -> Tensor:
    """a / b (true division: integers give floats); rounding_mode "trunc" or "floor"
    rounds the quotient, with a zero gradient (DivBackward2)."""
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                f"'{rounding_mode}'"
            )
        ta, tb, dt = _binary(a, b, const=True)
        if dt.kind in _INT_KINDS:
            _check_int_divisor(ta, tb, dt)
        return F.DivRounding.apply(ta, tb, dtype=dt, mode=rounding_mode)
    ta, tb, dt = _binary(a, b, const=True)
    if dt.kind in _INT_KINDS:
        dt = dtypes.DEFAULT_FLOAT.np
    out = F.Div.apply(ta, tb, dtype=dt)
    if type(ta._vc) is ZeroCounter:
        return _as_zero(out)
    return out


true_divide = div


def rdiv(a: Tensor, other: Any) -> Tensor:
    """other / a for a number `other`: PyTorch computes reciprocal(a) * other."""
    if isinstance(other, Tensor):
        return div(other, a)
    _check_number(other)
    return mul(reciprocal(a), other)


def reciprocal(a: Tensor) -> Tensor:
    """1 / a"""
    return F.Reciprocal.apply(a)


def pow(a: Any, exponent: Any) -> Tensor:
    """a ** exponent; grad_fn PowBackward0/1/2 depending on which side is a tensor."""
    if not isinstance(a, Tensor):
        return rpow(exponent, a)
    if isinstance(exponent, Tensor):
        ta, tb, dt = _binary(a, exponent)
        return F.PowTensor.apply(ta, tb, dtype=dt)
    _check_number(exponent, "exponent")
    if (type(exponent) is int or type(exponent) is float) and a.data_.dtype.kind == "f":
        dt = a.data_.dtype  # fast path: a number never promotes a float tensor
    else:
        dt = dtypes.result_type(a, exponent).np
    if dt.kind in _INT_KINDS and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return F.Pow.apply(a, exponent=exponent, dtype=dt)


def rpow(a: Tensor, base: Any) -> Tensor:
    """base ** a for a number `base`."""
    if isinstance(base, Tensor):
        return pow(base, a)
    _check_number(base, "base")
    return F.PowScalarBase.apply(a, base=base, dtype=dtypes.result_type(a, base).np)


def square(a: Tensor) -> Tensor:
    """a ** 2"""
    if _node.prof_hook is not None:  # a profile is open: aten::square around the pow
        return _profiler.within("aten::square", pow, a, 2)
    return pow(a, 2)


def neg(a: Tensor) -> Tensor:
    """-a"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("neg", a)
    if a.data_.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return F.Neg.apply(a)


negative = neg


def _check_int_divisor(ta: Tensor, tb: Tensor, dt: np.dtype) -> None:
    """Integer division by zero is PyTorch's RuntimeError (NumPy would give 0), raised by
    its kernel at a zero it divides by: none when the result is empty."""
    if dt.kind in "iu" and not tb.data_.all():
        if 0 not in np.broadcast_shapes(ta.data_.shape, tb.data_.shape):
            raise RuntimeError("ZeroDivisionError")


def floor_divide(a: Any, b: Any) -> Tensor:
    """a // b: PyTorch records it without a derivative (backward through it raises)"""
    ta, tb, dt = _binary(a, b)
    _check_int_divisor(ta, tb, dt)
    value = F.rounded_div(ta.data_.astype(dt), tb.data_.astype(dt), "floor")
    value = iterator_result(value, (ta.data_, tb.data_), dt)
    return not_implemented("aten::floor_divide", value, ta, tb)


def not_implemented(op: str, value: np.ndarray, *operands: Tensor) -> Tensor:
    """`value` with PyTorch's NotImplemented grad_fn when an operand requires grad: an
    edge to each such operand only, and a backward that raises."""
    needy = [t for t in operands if t.requires_grad]
    return F.NotImplementedOp.apply(*needy, value=value, op=op)


def remainder(a: Any, b: Any) -> Tensor:
    """a % b (Python's sign convention); differentiable in a (and in b when a tensor)."""
    ta, tb, dt = _binary(a, b)
    if not isinstance(a, Tensor) or dt.kind in _INT_KINDS:
        _check_int_divisor(ta, tb, dt)
        # a number % tensor has no derivative in PyTorch (NotImplemented grad_fn)
        value = F._remainder(ta.data_.astype(dt), tb.data_.astype(dt))
        value = iterator_result(value, (ta.data_, tb.data_), dt)
        return not_implemented("aten::remainder", value, ta, tb)
    if isinstance(b, Tensor):
        return F.RemainderTensor.apply(ta, tb, dtype=dt)
    return F.Remainder.apply(ta, other=b, dtype=dt)


def maximum(a: Tensor, b: Tensor, _method: bool = False) -> Tensor:
    """Elementwise max of two tensors (numbers are refused, as by PyTorch)."""
    _tensor_operands("maximum", a, b, _method)
    ta, tb, dt = _binary(a, b)
    return F.Maximum.apply(ta, tb, dtype=dt)


def minimum(a: Tensor, b: Tensor, _method: bool = False) -> Tensor:
    """Elementwise min of two tensors (numbers are refused, as by PyTorch)."""
    _tensor_operands("minimum", a, b, _method)
    ta, tb, dt = _binary(a, b)
    return F.Minimum.apply(ta, tb, dtype=dt)


def _tensor_operands(name: str, a: Any, b: Any, method: bool) -> None:
    """PyTorch's argument parser error for an operand that is not a tensor."""
    for arg, pos, v in (("input", 1, a), ("other", 1 if method else 2, b)):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                f"{type(v).__name__}"
            )


# ************************************************************ unary


def exp(a: Tensor) -> Tensor:
    """e ** a"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("exp", a)
    return F.Exp.apply(a)


def log(a: Tensor) -> Tensor:
    """Natural logarithm."""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("log", a)
    return F.Log.apply(a)


def log1p(a: Tensor) -> Tensor:
    """log(1 + a), accurate near 0."""
    return F.Log1p.apply(a)


def sqrt(a: Tensor) -> Tensor:
    """Square root."""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("sqrt", a)
    return F.Sqrt.apply(a)


def abs(a: Tensor) -> Tensor:
    """|a|"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("abs", a)
    _no_bool(a, "abs_cpu")
    return F.Abs.apply(a)


def _no_bool(a: Tensor, kernel: str) -> None:
    """PyTorch has no kernel for some ops on bool tensors."""
    if a.data_.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def sin(a: Tensor) -> Tensor:
    """sine"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("sin", a)
    return F.Sin.apply(a)


def cos(a: Tensor) -> Tensor:
    """cosine"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("cos", a)
    return F.Cos.apply(a)


def tan(a: Tensor) -> Tensor:
    """tangent"""
    return F.Tan.apply(a)


def asin(a: Tensor) -> Tensor:
    """arcsine (NaN outside [-1, 1])"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("asin", a)
    return F.Asin.apply(a)


def acos(a: Tensor) -> Tensor:
    """arccosine (NaN outside [-1, 1])"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("acos", a)
    return F.Acos.apply(a)


def atan(a: Tensor) -> Tensor:
    """arctangent"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("atan", a)
    return F.Atan.apply(a)


def rsqrt(a: Tensor) -> Tensor:
    """1 / sqrt(a)"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("rsqrt", a)
    return F.Rsqrt.apply(a)


arcsin, arccos, arctan = asin, acos, atan  # PyTorch's NumPy-style aliases


def tanh(a: Tensor) -> Tensor:
    """hyperbolic tangent"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("tanh", a)
    return F.Tanh.apply(a)


def sigmoid(a: Tensor) -> Tensor:
    """logistic sigmoid"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("sigmoid", a)
    return F.Sigmoid.apply(a)


def relu(a: Tensor) -> Tensor:
    """max(a, 0)"""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("relu", a)
    if a.data_.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return F.Relu.apply(a)


def leaky_relu(a: Tensor, negative_slope: float = 0.01) -> Tensor:
    """a if a > 0 else negative_slope * a"""
    _no_bool(a, "leaky_relu_cpu")
    return F.LeakyRelu.apply(a, negative_slope=negative_slope)


def prelu(input: Tensor, weight: Tensor, _method: bool = False) -> Tensor:
    """input if input > 0 else weight * input: one weight for all, or one per channel
    (dim 1), viewed as [1, C, 1, ...] first, as PyTorch's prelu does."""
    for arg, pos, v in (("input", 1, input), ("weight", 1 if _method else 2, weight)):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"prelu(): argument '{arg}' (position {pos}) must be Tensor, not {_type_name(v)}"
            )
    x, w = input.data_, weight.data_
    if x.dtype != w.dtype:
        raise RuntimeError(
            "prelu: Type promoting not supported. Got "
            f"{_scalar_type(input)} and {_scalar_type(weight)}"
        )
    if w.size != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = x.shape[1] if x.ndim > 1 else 1
        if channels != w.size:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {w.size} and channel size = {channels}."
            )
    if w.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}"
        )
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{_scalar_type(input)}'")
    if x.ndim != w.ndim:
        shape = [1] * x.ndim
        if x.ndim > 1:
            shape[1] = w.size
        weight = reshape(weight, shape)
    return F.PreluKernel.apply(input, weight)


def _scalar_type(t: Tensor) -> str:
    """PyTorch's ScalarType name of t's dtype (Float, Double, Long, Bool...)."""
    return t.dtype.legacy.replace("Tensor", "")


def softplus(a: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * a)) / beta"""
    _no_bool(a, "softplus_cpu")
    return F.Softplus.apply(a, beta=beta, threshold=threshold)


def gelu(a: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (Phi the normal CDF); approximate='tanh' uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _no_bool(a, "GeluKernelImpl")
    return F.Gelu.apply(a, approximate=approximate)


def elu(a: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """a if a > 0 else alpha * (exp(a) - 1)"""
    _no_bool(a, "elu_cpu")
    if inplace:
        return a._inplace(lambda t: F.Elu.apply(t, alpha=alpha))
    return F.Elu.apply(a, alpha=alpha)


def silu(a: Tensor, inplace: bool = False) -> Tensor:
    """a * sigmoid(a)"""
    _no_bool(a, "silu_cpu")
    if inplace:
        return a._inplace(lambda t: F.Silu.apply(t))
    return F.Silu.apply(a)


def hardtanh(
    a: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """a clamped to [min_val, max_val]"""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return a._inplace(lambda t: F.Hardtanh.apply(t, lo=min_val, hi=max_val))
    return F.Hardtanh.apply(a, lo=min_val, hi=max_val)


def clamp(a: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """a limited to [min, max] (either may be None)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = min if min is None or isinstance(min, Tensor) else _scalar_tensor(min, a.dtype)
        hi = max if max is None or isinstance(max, Tensor) else _scalar_tensor(max, a.dtype)
        dt = dtypes.result_type(*[x for x in (a, lo, hi) if x is not None]).np
        check_broadcast(*[x.data_.shape for x in (a, lo, hi) if x is not None])
        cur = a.data_
        for x in (lo, hi):  # PyTorch's sentence names the shape so far and the next operand
            if x is not None:
                _broadcast_check(cur, x.data_)
                cur = np.broadcast_to(cur, np.broadcast_shapes(cur.shape, x.data_.shape))
        return F.ClampTensor.apply(a, lo, hi, dtype=dt)
    dt = _clamp_scalar_dtype(a, min, max)
    if dt != a.dtype:  # an int or bool tensor (no graph) with a wider bound: promote first
        a = Tensor._make(a.data_.astype(dt.np))
    return F.Clamp.apply(a, lo=min, hi=max)


def _clamp_scalar_dtype(a: Tensor, lo: Any, hi: Any) -> DType:
    """The result dtype of clamp with number bounds; PyTorch has no bool kernel."""
    dt = dtypes.result_type(a, *[b for b in (lo, hi) if b is not None])
    if dt == dtypes.bool_:
        which = (
            "clamp"
            if lo is not None and hi is not None
            else "clamp_min"
            if hi is None
            else "clamp_max"
        )
        raise NotImplementedError(f"\"{which}_scalar_cpu\" not implemented for 'Bool'")
    for b in (lo, hi):
        if b is not None:
            _check_scalar_fits(b, dt)
    return dt


_FIXED_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def _check_scalar_fits(v: Any, dt: DType) -> None:
    """PyTorch refuses a number its kernel's type cannot hold (unsigned ones wrap once)."""
    if dt.is_floating_point:
        big = np.finfo(dt.np).max
        bad = math.isfinite(v) and not -big <= v <= big
    else:
        info = np.iinfo(dt.np)
        low = -int(info.max) if info.min == 0 else info.min
        bad = not low <= v <= info.max
    if bad:
        name = _FIXED_NAMES.get(dt.name, "uint8_t" if dt.name == "uint8" else None)
        name = name or dtypes.CPP_TYPE_NAMES[dt.name]
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def check_clamp_inplace(a: Tensor, lo: Any, hi: Any) -> None:
    """`clamp_` with number bounds refuses a wider result, naming C++ types as PyTorch does."""
    if lo is None and hi is None or isinstance(lo, Tensor) or isinstance(hi, Tensor):
        return
    dt = dtypes.result_type(a, *[b for b in (lo, hi) if b is not None])
    if dt != a.dtype and not np.can_cast(dt.np, a.data_.dtype, "same_kind"):
        src, dst = dt.legacy.removesuffix("Tensor"), dtypes.CPP_TYPE_NAMES[a.dtype.name]
        raise RuntimeError(f"result type {src} can't be cast to the desired output type {dst}")
    _clamp_scalar_dtype(a, lo, hi)


def logcumsumexp(input: Tensor, dim: Any) -> Tensor:
    """log(cumsum(exp(input))) along dim, without overflow (floating dtypes only)."""
    d = _norm_dim(_int_arg("logcumsumexp", "dim", 2, dim), input.data_.ndim)
    if input.data_.dtype.kind not in "fc":
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{_legacy_name(input)}'"
        )
    return F.Logcumsumexp.apply(input, dim=d)


def fmod(input: Tensor, other: Any) -> Tensor:
    """C's fmod: the remainder of a truncated division (the dividend's sign)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"fmod(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    ta, tb, dt = _binary(input, other)
    if dt.kind in _INT_KINDS:
        _check_int_divisor(ta, tb, dt)
        value = np.fmod(ta.data_.astype(dt), tb.data_.astype(dt))
        return not_implemented("aten::fmod", value, ta, tb)
    if isinstance(other, Tensor):
        return F.FmodTensor.apply(ta, tb, dtype=dt)
    return F.Fmod.apply(ta, other=other, dtype=dt)


def _check_inplace_result(self: Tensor, other: Any) -> None:
    """An in-place binary op refuses a result dtype self cannot hold, and a shape that
    is not self's, in PyTorch's words (the shapes checked first, as its TensorIterator)."""
    if isinstance(other, Tensor):
        _broadcast_check(self.data_, other.data_)
        check_output_shape(self.data_.shape, other.data_.shape)
    dt = dtypes.result_type(self, other)
    if dt != self.dtype and not np.can_cast(dt.np, self.data_.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {_legacy_name_of(dt)} can't be cast to the desired output type "
            f"{_legacy_name(self)}"
        )


def _legacy_name_of(dt: DType) -> str:
    return dt.legacy.replace("Tensor", "")


def _fmod_(self: Tensor, other: Any) -> Tensor:
    _check_inplace_result(self, other)
    return self._inplace(fmod, other)


def _remainder_(self: Tensor, other: Any) -> Tensor:
    _check_inplace_result(self, other)
    return self._inplace(remainder, other)


def _clamp_one(input: Tensor, bound: Any, low: bool) -> Tensor:
    """clamp_min / clamp_max: clamp with one bound, under their own grad_fn names."""
    if bound is None:
        which = "clamp_min" if low else "clamp_max"
        raise TypeError(f'{which}() missing 1 required positional argument: "{which[6:]}"')
    if isinstance(bound, Tensor):
        row = F.ClampMinTensor if low else F.ClampMaxTensor
        check_broadcast(input.data_.shape, bound.data_.shape)
        _broadcast_check(input.data_, bound.data_)
        dt = dtypes.result_type(input, bound).np
        return row.apply(input, bound, dtype=dt)
    lo, hi = (bound, None) if low else (None, bound)
    dt = _clamp_scalar_dtype(input, lo, hi)
    if dt != input.dtype:  # an int or bool tensor (no graph) with a wider bound
        input = Tensor._make(input.data_.astype(dt.np))
    return (F.ClampMin if low else F.ClampMax).apply(input, lo=lo, hi=hi)


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """max(input, min), elementwise (min a number or a tensor)."""
    return _clamp_one(input, min, True)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """min(input, max), elementwise (max a number or a tensor)."""
    return _clamp_one(input, max, False)


def _clamp_min_(self: Tensor, min: Any) -> Tensor:
    check_clamp_inplace(self, min, None)
    return self._inplace(clamp_min, min)


def _clamp_max_(self: Tensor, max: Any) -> Tensor:
    check_clamp_inplace(self, None, max)
    return self._inplace(clamp_max, max)


clip = clamp


def sign(a: Tensor) -> Tensor:
    """-1, 0 or 1"""
    return F.Sign.apply(a)


def sgn(a: Tensor) -> Tensor:
    """-1, 0 or 1 (sign's twin for real numbers; abs and the norms differentiate through it)"""
    return F.Sgn.apply(a)


def floor(a: Tensor) -> Tensor:
    """round down"""
    _no_bool(a, "floor_vml_cpu")
    return F.Floor.apply(a)


def ceil(a: Tensor) -> Tensor:
    """round up"""
    _no_bool(a, "ceil_vml_cpu")
    return F.Ceil.apply(a)


def round(a: Tensor, decimals: int = 0) -> Tensor:
    """round half to even"""
    _no_bool(a, "round_cpu" if decimals else "round_vml_cpu")
    if decimals:
        return F.RoundDecimals.apply(a, decimals=decimals)
    return F.Round.apply(a)


def clone(a: Tensor) -> Tensor:
    """A copy that stays in the graph."""
    return F.Clone.apply(a)


def to_dtype(a: Tensor, dt: Any) -> Tensor:
    """a converted to dtype `dt` (a DType or NumPy dtype); the same tensor if unchanged."""
    npdt = dt.np if isinstance(dt, DType) else np.dtype(dt)
    if a.data_.dtype == npdt:
        return a
    if npdt.kind not in "fc":
        # integer and bool results are not differentiable: no grad_fn, as in PyTorch
        return Tensor._make(converted(a.data_, npdt))
    return F.ToCopy.apply(a, dtype=npdt)


# ************************************************************ comparisons and logic


_CMP = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def compare(kind: str, a: Any, b: Any) -> Tensor:
    """Elementwise comparison; a bool tensor without grad_fn."""
    if not isinstance(b, (Tensor, int, float, bool)):
        if kind == "eq":
            return False  # type: ignore[return-value]
        if kind == "ne":
            return True  # type: ignore[return-value]
    if _node.prof_hook is not None:  # a profile is open: aten::gt (+ a wrapped number's to)
        spec = f"aten::{kind}(aten::to(aten::_to_copy(aten::empty_strided,aten::copy_)))"
        return _profiler.within_spec(
            spec if not isinstance(b, Tensor) else f"aten::{kind}", _compare, kind, a, b
        )
    return _compare(kind, a, b)


def _compare(kind: str, a: Any, b: Any) -> Tensor:
    ta, tb, dt = _binary(a, b)
    # (no copy when the dtype is already right: astype's copy of an expanded operand
    # has a scrambled layout, which the result would inherit)
    x, y = ta.data_, tb.data_
    out = _CMP[kind](x.astype(dt, copy=False), y.astype(dt, copy=False))
    return Tensor._make(iterator_result(out, (x, y), dt))


def bitwise(kind: str, a: Any, b: Any) -> Tensor:
    """& | ^ on bool or integer tensors."""
    ta, tb, dt = _binary(a, b)
    if dt.kind not in _INT_KINDS:
        name = dtypes.of_array(np.empty(0, dt)).legacy.removesuffix("Tensor")
        raise NotImplementedError(f"\"bitwise_{kind}_cpu\" not implemented for '{name}'")
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    x, y = ta.data_, tb.data_
    return Tensor._make(
        iterator_result(f(x.astype(dt, copy=False), y.astype(dt, copy=False)), (x, y), dt)
    )


def logical_not(a: Tensor) -> Tensor:
    """not a (bool result: True where a is zero)"""
    return _unary_result(np.logical_not, a)


def bitwise_not(a: Tensor) -> Tensor:
    """~a: logical not of bools, bitwise not of integers"""
    if a.data_.dtype == np.bool_:
        return _unary_result(np.logical_not, a)
    if a.data_.dtype.kind in "iu":
        return _unary_result(np.invert, a)
    raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")


def _unary_result(fn: Any, a: Tensor) -> Tensor:
    """fn(a) for a NumPy ufunc `fn`, laid out as PyTorch's unary kernels lay it out."""
    return Tensor._make(iterator_result(fn(a.data_), (a.data_,)))


def eq(a: Any, b: Any) -> Tensor:
    """a == b elementwise"""
    return compare("eq", a, b)


def ne(a: Any, b: Any) -> Tensor:
    """a != b elementwise"""
    return compare("ne", a, b)


def gt(a: Any, b: Any) -> Tensor:
    """a > b elementwise"""
    return compare("gt", a, b)


def ge(a: Any, b: Any) -> Tensor:
    """a >= b elementwise"""
    return compare("ge", a, b)


def lt(a: Any, b: Any) -> Tensor:
    """a < b elementwise"""
    return compare("lt", a, b)


def le(a: Any, b: Any) -> Tensor:
    """a <= b elementwise"""
    return compare("le", a, b)


def equal(a: Tensor, b: Tensor, _method: bool = False) -> bool:
    """True when shapes and all values are equal."""
    _tensor_operands("equal", a, b, _method)
    return a.data_.shape == b.data_.shape and bool(np.all(a.data_ == b.data_))


def allclose(
    a: Tensor,
    b: Tensor,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    equal_nan: bool = False,
    _method: bool = False,
) -> bool:
    """True when all values are close (NaNs equal to each other when `equal_nan`)."""
    _tensor_operands("allclose", a, b, _method)
    if a.data_.dtype != b.data_.dtype:
        raise RuntimeError(f"{_legacy_name(a)} did not match {_legacy_name(b)}")
    _broadcast_check(a.data_, b.data_)
    return bool(np.allclose(a.data_, b.data_, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isnan(a: Tensor) -> Tensor:
    """NaN mask"""
    return _unary_result(np.isnan, a)


def isinf(a: Tensor) -> Tensor:
    """infinity mask"""
    return _unary_result(np.isinf, a)


def isfinite(a: Tensor) -> Tensor:
    """finite mask"""
    if grad_mode.state.enabled and a.data_.dtype.kind in "fc" and a.requires_grad:
        # PyTorch's isfinite is composite (a == a and a.abs() != inf): the abs records,
        # which derives a view's node (or raises where that view can no longer have one)
        a.grad_fn  # noqa: B018
    return _unary_result(np.isfinite, a)


def all(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """True when all elements (along dim) are non-zero."""
    return _logical_reduce(np.all, a, dim, keepdim)


def _logical_reduce(fn: Any, a: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """all/any: a bool result (uint8 for uint8 input, as PyTorch keeps it)."""
    x = a.data_
    if dim is None:
        axis = None
    else:
        dims = dim if isinstance(dim, (list, tuple)) else (dim,)
        axis = _unique_dims(dims, x.ndim)  # checked even for a 0-d tensor,
        axis = axis if x.ndim else None  # which stays 0-d
    out = np.asarray(fn(x, axis=axis, keepdims=keepdim and dim is not None))
    # (PyTorch's result is contiguous, whatever x's layout)
    return Tensor._make(out.astype(np.uint8 if x.dtype == np.uint8 else bool, order="C"))


def any(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """True when some element (along dim) is non-zero."""
    return _logical_reduce(np.any, a, dim, keepdim)


def where(cond: Any, a: Any = None, b: Any = None) -> Tensor:
    """a where cond else b (either may be a number)."""
    if a is None and b is None:
        return tuple(Tensor._make(i) for i in np.nonzero(_as_array(cond)))  # type: ignore
    c = _as_array(cond)
    if c.dtype != np.bool_ and c.dtype != np.uint8:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{dtypes.of_array(c).legacy.replace('Tensor', '')}"
        )
    c = c.astype(bool)
    ta, tb, dt = _binary(a, b, check=False)
    _broadcast_check(c, ta.data_)
    both = np.broadcast_to(
        c[(0,) * c.ndim] if c.size else False, np.broadcast_shapes(c.shape, ta.data_.shape)
    )
    _broadcast_check(both, tb.data_)
    return F.Where.apply(ta, tb, cond=c, dtype=dt, kept=_kept(cond))


def _kept(*sources: Any) -> tuple[Tensor, ...]:
    """The script's tensors among an op's index/mask arguments, for the op to save (so
    their version counters are checked, as PyTorch checks them)."""
    return tuple([t for t in sources if isinstance(t, Tensor)])


def _as_array(v: Any) -> np.ndarray:
    return v.data_ if isinstance(v, Tensor) else np.asarray(v)


# ************************************************************ reductions


def sum(a: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Sum of all elements, or over `dim`."""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("sum", a, dim, keepdim, dtype)
    if dim is None:
        return F.Sum.apply(a, dtype=_sum_dtype(a, dtype))
    return F.SumDim.apply(
        a, dims=_dims(dim, a.data_.ndim), keepdim=keepdim, dtype=_sum_dtype(a, dtype)
    )


def sum_dims(a: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Sum over already-normalised dims."""
    return F.SumDim.apply(a, dims=dims, keepdim=keepdim, dtype=a.data_.dtype)


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """g summed over the dims a broadcast added, back to `shape`."""
    shape = tuple(shape)
    x = g.data_
    if x.shape == shape:
        return g
    # PyTorch's at::sum_to: sum() to a 0-d shape; else sum(dims, keepdim=True) over the
    # leading dims and the broadcast size-1 dims, then view() when dims were added
    if not shape:
        return F.Sum.apply(g, dtype=x.dtype)
    lead = x.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        i for i in range(lead, x.ndim) if shape[i - lead] == 1 and x.shape[i] != 1
    )
    if dims:
        g = F.SumDim.apply(g, dims=dims, keepdim=True, dtype=x.dtype)
    # (the dropped leading dims make it a view of the sum, as in PyTorch)
    return _view_of(g, F.View.apply(g, shape=shape)) if lead > 0 else g


def mean(a: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Mean of all elements, or over `dim`."""
    if type(a) is BATCHED:  # inside vmap
        return batched_call("mean", a, dim, keepdim, dtype)
    if dtype is not None:
        a = to_dtype(a, dtype)
    if a.data_.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {a.dtype.legacy.replace('Tensor', '')}"
        )
    if dim is None:
        return F.Mean.apply(a)
    return F.MeanDim.apply(a, dims=_dims(dim, a.data_.ndim), keepdim=keepdim)


def mean_dims(a: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Mean over already-normalised dims."""
    return F.MeanDim.apply(a, dims=dims, keepdim=keepdim)


def prod(a: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Product of all elements, or along one dim."""
    if dim is None:
        return F.Prod.apply(a, dtype=_sum_dtype(a, dtype))
    return F.ProdDim.apply(
        a, dim=_norm_dim(int(dim), a.data_.ndim), keepdim=keepdim, dtype=_sum_dtype(a, dtype)
    )


def prod_others(a: Tensor, dim: int) -> Tensor:
    """Per element, the product of the other elements along `dim` (prod's gradient
    where the input has zeros), built as PyTorch's prod_safe_zeros_backward builds it:
    the running products before and after each element (cat, cumprod, flip), so its
    values, NaN placement and create_graph nodes are PyTorch's."""
    n = a.data_.shape[dim]
    ones_shape = list(a.data_.shape)
    ones_shape[dim] = 1
    ones = Tensor._make(np.ones(ones_shape, a.data_.dtype))
    before = cumprod(cat([ones, narrow(a, dim, 0, n - 1)], dim), dim)
    after = cat([ones, flip(narrow(a, dim, 1, n - 1), (dim,))], dim)
    return before * flip(cumprod(after, dim), (dim,))


class _ReturnTypes(tuple):
    """`torch.return_types.max(values=..., indices=...)`"""

    __ad_attrs__ = frozenset({"values", "indices"})
    _kind = "max"

    def __new__(cls, kind: str, values: Tensor, indices: Tensor) -> _ReturnTypes:
        obj = super().__new__(cls, (values, indices))
        obj._kind = kind
        return obj

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{self._kind}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    __str__ = __repr__


_EXTREME_FUNCTION = (
    " * (Tensor input, *, Tensor out = None)\n"
    " * (Tensor input, Tensor other, *, Tensor out = None)\n"
    " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)\n"
)
_EXTREME_METHOD = (
    " * ()\n      didn't match because some of the arguments have invalid types: (!{t}!)\n"
    " * (Tensor other)\n      didn't match because some of the arguments have invalid types: "
    "(!{t}!)\n * (int dim, bool keepdim = False)\n"
)


def _check_extreme_dim(kind: str, dim: Any, method: bool) -> None:
    """PyTorch's overload error for max/min given a dim that is neither int nor tensor."""
    if dim is None or isinstance(dim, Tensor):
        return
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return
    t = type(dim).__name__
    got, expected = (
        (t, _EXTREME_METHOD.format(t=t)) if method else (f"Tensor, {t}", _EXTREME_FUNCTION)
    )
    raise TypeError(
        f"{kind}() received an invalid combination of arguments - got ({got}), but expected "
        f"one of:\n{expected}"
    )


def _extreme(
    kind: str, a: Tensor, dim: Any, keepdim: bool, other: Any, method: bool = False
) -> Any:
    _check_extreme_dim(kind, dim, method)
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return maximum(a, other) if kind == "max" else minimum(a, other)
    if dim is None:
        return (F.Max if kind == "max" else F.Min).apply(a)
    d = _norm_dim(int(dim), a.data_.ndim)
    check_reduce_dims(a, kind, (d,))
    fn = F.MaxDim if kind == "max" else F.MinDim
    values = fn.apply(a, dim=d, keepdim=keepdim)
    node = values._grad_fn
    if node is not None:  # the indices the node saved (an in-place change is caught)
        return _ReturnTypes(kind, values, node.index_output)
    if a.data_.ndim == 0:  # dim 0 of a 0-d tensor: the value itself, at index 0
        return _ReturnTypes(kind, values, Tensor._make(np.zeros((), np.int64)))
    idx = (np.argmax if kind == "max" else np.argmin)(a.data_, axis=d)
    if keepdim:
        idx = np.expand_dims(idx, d)
    return _ReturnTypes(kind, values, Tensor._make(idx.astype(np.int64)))


def max(
    a: Tensor, dim: Any = None, keepdim: bool = False, other: Any = None, _method: bool = False
) -> Any:
    """Max of all elements; `(values, indices)` along dim; elementwise with a tensor."""
    return _extreme("max", a, dim, keepdim, other, _method)


def min(
    a: Tensor, dim: Any = None, keepdim: bool = False, other: Any = None, _method: bool = False
) -> Any:
    """Min of all elements; `(values, indices)` along dim; elementwise with a tensor."""
    return _extreme("min", a, dim, keepdim, other, _method)


def _selected(kind: str, fn: Any, a: Tensor, dim: int, index: np.ndarray) -> _ReturnTypes:
    """topk/sort's `(values, indices)`: the indices are the tensor the node saved
    (so changing them in place fails the backward, as in PyTorch)."""
    values = fn.apply(a, dim=dim, index=index)
    node = values._grad_fn
    if node is not None:
        return _ReturnTypes(kind, values, node.index_output)
    return _ReturnTypes(kind, values, Tensor._make(index))


def topk(
    a: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> _ReturnTypes:
    """The k largest (or smallest) along dim, with their indices; PyTorch's CPU order."""
    d = _norm_dim(int(dim), a.data_.ndim)
    if a.data_.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    size = a.data_.shape[d] if a.data_.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if a.data_.ndim == 0:
        index = np.zeros((), np.int64)
    else:
        index = _sorting.topk_order(a.data_, d, int(k), bool(largest), bool(sorted))
    return _selected("topk", F.TopK, a, d, index)


#: `stable` not given: PyTorch's `sort` overload (SortBackward0); given, even as
#: None, it is the `sort.stable` overload (SortBackward1), the same stable sort.
_NO_STABLE: Any = object()


def sort(
    a: Tensor, dim: int = -1, descending: bool = False, stable: Any = _NO_STABLE
) -> _ReturnTypes:
    """Sorted along dim, with the indices; always stable on the CPU, as in PyTorch."""
    d = _norm_dim(int(dim), a.data_.ndim)
    index = _sorting.sort_order(a.data_, d, bool(descending), stable is True)
    return _selected("sort", F.Sort if stable is _NO_STABLE else F.SortStable, a, d, index)


def argsort(a: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort along dim (int64)."""
    d = _norm_dim(int(dim), a.data_.ndim)
    return Tensor._make(_sorting.sort_order(a.data_, d, bool(descending), bool(stable)))


def _amax_dims(name: str, a: Tensor, dim: Any) -> tuple[int, ...]:
    """The dims amax/amin reduce, refusing empty ones as PyTorch does."""
    if dim == () or dim == []:
        check_nonempty(a, name)
        return _dims(None, a.data_.ndim)
    dims = _dims(dim, a.data_.ndim)
    given = [int(d) for d in dim] if isinstance(dim, (list, tuple)) else [int(dim)]
    shape = a.data_.shape
    for d, g in zip(dims, sorted(given, key=lambda g: g % _py.max(len(shape), 1)), strict=False):
        if d < len(shape) and shape[d] == 0:  # (PyTorch names the dim as it was given)
            raise IndexError(f"{name}(): Expected reduction dim {g} to have non-zero size.")
    return dims


def _named_dims(dim: Any) -> int:
    """How many dims a reduction names (its backward restores that many on a 0-d input)."""
    if dim is None:
        return 0
    return len(dim) if isinstance(dim, (list, tuple)) else 1


def amax(a: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Max over dims (all when empty); ties share the gradient."""
    dims = _amax_dims("amax", a, dim)
    return F.Amax.apply(a, dims=dims, keepdim=keepdim, named=_named_dims(dim))


def amin(a: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Min over dims (all when empty); ties share the gradient."""
    dims = _amax_dims("amin", a, dim)
    return F.Amin.apply(a, dims=dims, keepdim=keepdim, named=_named_dims(dim))


def _arg_extreme(name: str, fn: Any, a: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """argmax/argmin: flattened when dim is None; empty dims refused as PyTorch does."""
    if dim is None:
        if a.data_.size == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        return Tensor._make(np.asarray(fn(a.data_), np.int64))
    d = _norm_dim(dim, a.data_.ndim)
    check_reduce_dims(a, name, (d,))
    out = fn(a.data_, axis=d if a.data_.ndim else None, keepdims=keepdim)
    return Tensor._make(out.astype(np.int64, order="C"))  # contiguous, as PyTorch's


def argmax(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the max (flattened when dim is None)."""
    return _arg_extreme("argmax", np.argmax, a, dim, keepdim)


def argmin(a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the min (flattened when dim is None)."""
    return _arg_extreme("argmin", np.argmin, a, dim, keepdim)


def norm(
    a: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """Vector p-norm (Frobenius for matrices; `dtype`: the input cast first)."""
    if dtype is not None:
        a = to_dtype(a, dtype)
    if p == "fro" or p is None:
        p = 2
    dims = None if dim is None else _dims(dim, a.data_.ndim)
    if a.data_.dtype.kind not in "fc":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. "
            f"Got {a.dtype.legacy.replace('Tensor', '')}"
        )
    _check_norm_identity(a, float(p), dims)
    return F.Norm.apply(a, p=float(p), dims=dims, keepdim=keepdim)


def _check_norm_identity(a: Tensor, p: float, dims: tuple[int, ...] | None) -> None:
    """Norms with no identity (p = inf or p < 0) refuse empty reductions, as PyTorch does."""
    if not (p < 0 or p == math.inf) or a.data_.size:
        return
    if dims is None or not dims:
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor because "
            "the operation does not have an identity"
        )
    for d in dims:
        if a.data_.shape[d] == 0:
            # sic: PyTorch's sentence lacks the space after the dim
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {d}because "
                "this dimension is empty and the operation does not have an identity"
            )


def logsumexp(a: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(a))) over dim."""
    return F.Logsumexp.apply(a, dims=_dims(dim, a.data_.ndim), keepdim=keepdim)


def var(
    a: Tensor, dim: Any = None, unbiased: bool = True, keepdim: bool = False, correction: Any = None
) -> Tensor:
    """Variance (Bessel-corrected by default)."""
    corr = (1 if unbiased else 0) if correction is None else correction
    dims = _dims(dim, a.data_.ndim)
    _check_dof("var", a, dims, corr)
    return F.Var.apply(a, dims=dims, correction=corr, keepdim=keepdim, whole=dim is None)


def std(
    a: Tensor, dim: Any = None, unbiased: Any = True, keepdim: bool = False, correction: Any = None
) -> Tensor:
    """Standard deviation (Bessel-corrected by default)."""
    if isinstance(unbiased, int) and not isinstance(unbiased, bool) and correction is None:
        correction, unbiased = unbiased, True
    corr = (1 if unbiased else 0) if correction is None else correction
    dims = _dims(dim, a.data_.ndim)
    _check_dof("std", a, dims, corr)
    return F.Std.apply(a, dims=dims, correction=corr, keepdim=keepdim, whole=dim is None)


DOF_WARNING = (
    "{}(): degrees of freedom is <= 0. Correction should be strictly less than the "
    "reduction factor (input numel divided by output numel). (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/ReduceOps.cpp:1861.)"
)


def _check_dof(name: str, a: Tensor, dims: tuple[int, ...], correction: Any) -> None:
    """PyTorch's warning when a var/std has no degrees of freedom left (its value is NaN)."""
    x = a.data_
    factor = math.prod(x.shape[d] for d in dims) if x.size else 0  # numel in / numel out
    if factor - correction <= 0:
        _config.warn(DOF_WARNING.format(name))


def cumsum(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """Running sum along dim (`dtype`: the input cast first)."""
    if dtype is not None:
        a = to_dtype(a, dtype)
    return F.Cumsum.apply(a, dim=_norm_dim(dim, a.data_.ndim))


# ************************************************************ linear algebra


def _matmul_dtype(a: Tensor, b: Tensor, name: str) -> np.dtype:
    """The common dtype of a matrix product's operands; PyTorch's error (each kernel
    words it its own way) when they differ."""
    if a.data_.dtype != b.data_.dtype:
        n1 = a.dtype.legacy.replace("Tensor", "")
        n2 = b.dtype.legacy.replace("Tensor", "")
        if name == "dot":
            raise RuntimeError(
                f"dot : expected both vectors to have same dtype, but found {n1} and {n2}"
            )
        if name == "mv":  # addmv(self=vec-typed result, mat, vec)
            raise RuntimeError(
                f"addmv input tensors must have the same dtype, but got {n2}, {n1}, and {n2}"
            )
        if name == "bmm":
            raise RuntimeError(f"expected scalar type {n1} but found {n2}")
        c1, c2 = dtypes.CPP_TYPE_NAMES[a.dtype.name], dtypes.CPP_TYPE_NAMES[b.dtype.name]
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c1} != {c2}")
    return a.data_.dtype


def mm(a: Tensor, b: Tensor) -> Tensor:
    """matrix @ matrix"""
    if a.data_.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.data_.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    (n, k), (k2, m) = a.data_.shape, b.data_.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    check_shape((n, m))
    return F.Mm.apply(a, b, dtype=_matmul_dtype(a, b, "mm"))


def mv(m: Tensor, v: Tensor) -> Tensor:
    """matrix @ vector"""
    if m.data_.ndim != 2 or v.data_.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {m.data_.ndim}, {v.data_.ndim}"
        )
    if m.data_.shape[1] != v.data_.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({m.data_.shape[0]}), mat ({m.data_.shape[0]}x"
            f"{m.data_.shape[1]}), vec ({v.data_.shape[0]})"
        )
    return F.Mv.apply(m, v, dtype=_matmul_dtype(m, v, "mv"))


def dot(a: Tensor, b: Tensor) -> Tensor:
    """vector . vector"""
    if a.data_.ndim != 1 or b.data_.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.data_.ndim}D and {b.data_.ndim}D tensors"
        )
    dt = _matmul_dtype(a, b, "dot")  # PyTorch checks dtypes before sizes here
    if a.data_.shape != b.data_.shape:
        n1, n2 = a.data_.shape[0], b.data_.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the "
            f"same number of elements, but got {n1} and {n2} elements respectively"
        )
    return F.Dot.apply(a, b, dtype=dt)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """batch of matrices @ batch of matrices (both 3-d, same batch size)"""
    if a.data_.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.data_.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    (n, _, k), (n2, k2, _) = a.data_.shape, b.data_.shape
    if n2 != n or k2 != k:
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{n}, {k}] but got: [{n2}, {k2}]."
        )
    check_shape((n, a.data_.shape[1], b.data_.shape[2]))
    return F.Bmm.apply(a, b, dtype=_matmul_dtype(a, b, "bmm"))


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """PyTorch's test for computing a matmul with mm/mv on a folded tensor (no bmm)."""
    a_larger = a.data_.ndim >= b.data_.ndim
    big = a.data_ if a_larger else np.swapaxes(b.data_, -1, -2)
    small_dim = b.data_.ndim if a_larger else a.data_.ndim
    if not (big.ndim >= 3 and small_dim <= 2):
        return False
    if (b if a_larger else a).requires_grad:
        return True
    if a.data_.ndim == 2:
        return False
    if big.size == 0:
        return True
    st = _strides(big)
    return _py.all(st[i] == st[i + 1] * big.shape[i + 1] for i in range(big.ndim - 2))


def _broadcast_batch(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    n = _py.max(len(sa), len(sb))
    out = []
    for i in range(n):
        x = sa[i - n + len(sa)] if i - n + len(sa) >= 0 else 1
        y = sb[i - n + len(sb)] if i - n + len(sb) >= 0 else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product dispatched on dimensions with PyTorch's own steps (so the
    grad_fns match: Dot, Mv, Mm, folded Mm/Mv + UnsafeView, or Bmm + UnsafeView)."""
    if type(a) is BATCHED or type(b) is BATCHED:  # inside vmap
        return batched_call("matmul", a, b)
    if _node.prof_hook is not None:  # a profile is open: one aten::matmul range around
        return _profiler.within("aten::matmul", _matmul, a, b)
    return _matmul(a, b)


def _matmul(a: Any, b: Any) -> Tensor:
    """matmul's steps."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(
            f"matmul(): argument 'other' (position 2) must be Tensor, not {_type_name(b)}"
        )
    da, db = a.data_.ndim, b.data_.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        out = F.SqueezeDimInplace.apply(mm(unsqueeze(a, 0), b), dim=0)
        out._vc[0] += 1  # PyTorch's squeeze_ here is in place: the result is at version 1
        return out
    if da == 2 and db == 2:
        return mm(a, b)
    if da == 3 and db == 3 and a.data_.shape[0] != b.data_.shape[0]:
        # a batch of one that requires grad is squeezed, then folded
        if a.data_.shape[0] == 1 and a.requires_grad:
            return matmul(squeeze(a, 0), b)
        if b.data_.shape[0] == 1 and b.requires_grad:
            return matmul(a, squeeze(b, 0))
    if _should_fold(a, b):
        transpose_ = db > da
        t1 = transpose(b, -1, -2) if transpose_ else a
        t2 = (t(a) if da == 2 else a) if transpose_ else b
        out_shape = t1.data_.shape[:-1]
        folded = reshape(t1, (math.prod(out_shape), t1.data_.shape[-1]))
        if t2.data_.ndim == 2:
            out = _unsafe_view(mm(folded, t2), out_shape + (t2.data_.shape[1],))
            if transpose_:
                return contiguous(transpose(out, -1, -2))
            return out
        return _unsafe_view(mv(folded, t2), out_shape)
    sa, sb = a.data_.shape, b.data_.shape
    n = sa[-2] if da > 1 else 1
    m1 = sa[-1]
    m2 = sb[-2] if db > 1 else sb[0]
    p = sb[-1] if db > 1 else 1
    batch = _broadcast_batch(sa[:-2] if da > 1 else (), sb[:-2] if db > 1 else ())
    nb = math.prod(batch)
    a3 = reshape(expand(a, batch + (n, m1)), (nb, n, m1))
    if db == 1:
        b3 = unsqueeze(reshape(expand(b, batch + (m2,)), (nb, m2)), 2)
    else:
        b3 = reshape(expand(b, batch + (m2, p)), (nb, m2, p))
    out_shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    out = bmm(a3, b3)
    if db == 1:
        out = squeeze(out, -1)
    return _unsafe_view(out, out_shape)


def contiguous(a: Tensor) -> Tensor:
    """a itself when contiguous, else a contiguous copy (CloneBackward0)."""
    if _is_contiguous(a.data_):
        return a
    return F.Clone.apply(a, contiguous=True)


def outer(a: Tensor, b: Tensor) -> Tensor:
    """a[:, None] * b[None, :] (PyTorch's grad_fn is MulBackward0)."""
    if _node.prof_hook is not None:  # a profile is open: aten::outer around the steps
        return _profiler.within("aten::outer", _outer, a, b)
    return _outer(a, b)


def _outer(a: Tensor, b: Tensor) -> Tensor:
    return mul(reshape(a, (-1, 1)), b)


ger = outer


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with PyTorch's dispatch (addmm for 2-d input with a bias,
    flattened addmm for other contiguous inputs with a contiguous bias that is 1-d or
    has one element per output feature, else matmul + add_), as PyTorch 2.13 does."""
    if BATCHED is not None and BATCHED in (type(x), type(weight), type(bias)):  # inside vmap
        return batched_call("linear", x, weight, bias)
    if _node.prof_hook is not None:  # a profile is open: one aten::linear range around
        return _profiler.within("aten::linear", _linear, x, weight, bias)
    return _linear(x, weight, bias)


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    dx, dw = x.data_.ndim, weight.data_.ndim
    if dx == 0 or dw == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {dx}D and {dw}D"
        )
    if bias is not None and dx == 2:
        return addmm(bias, x, t(weight))
    b = bias.data_ if bias is not None else None
    if (
        b is not None
        and _is_contiguous(x.data_)
        and _is_contiguous(b)
        and (b.ndim == 1 or b.size == weight.data_.shape[0])
    ):
        k = x.data_.shape[-1]
        lead = x.data_.shape[:-1]
        out = addmm(bias, reshape(x, (math.prod(lead), k)), t(weight))
        return view(out, lead + (out.data_.shape[1],))
    out = matmul(x, t(weight))
    if bias is not None:
        out.add_(bias)
    return out


def addmm(bias: Tensor, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * bias + alpha * (a @ b) (bias broadcast to the product; ignored, NaNs
    included, when beta is 0)"""
    dt = _addmm_dtype(bias, a, b)
    if a.data_.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got " + f"{a.data_.ndim}-D tensor")
    if b.data_.ndim != 2:
        raise RuntimeError("mat2 must be a matrix, got " + f"{b.data_.ndim}-D tensor")
    (n, k), (k2, m) = a.data_.shape, b.data_.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if bias.data_.ndim > 2:  # the bias is expanded to the product's 2 dims
        raise RuntimeError(
            f"expand(torch.{bias.dtype.legacy}{{{list(bias.data_.shape)}}}, size=[{n}, {m}]): "
            "the number of sizes provided (2) must be greater or equal to the number of "
            f"dimensions in the tensor ({bias.data_.ndim})"
        )
    bs = bias.data_.shape
    for i in (1, 0):  # PyTorch's expand checks the last dim first
        j = i - 2 + len(bs)
        if j >= 0 and bs[j] != 1 and bs[j] != (n, m)[i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({(n, m)[i]}) must match the existing size "
                f"({bs[j]}) at non-singleton dimension {i}.  Target sizes: [{n}, {m}]."
                f"  Tensor sizes: {list(bs)}"
            )
    check_shape((n, m))
    return F.Addmm.apply(bias, a, b, dtype=dt, beta=beta, alpha=alpha)


def _addmm_dtype(bias: Tensor, a: Tensor, b: Tensor) -> np.dtype:
    """addmm's operands share one dtype; PyTorch checks that before any shape."""
    for name, x in (("self", bias), ("mat1", a)):
        if x.data_.dtype != b.data_.dtype:
            n1 = x.dtype.legacy.replace("Tensor", "")
            n2 = b.dtype.legacy.replace("Tensor", "")
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {n1} and {n2}")
    return a.data_.dtype


# ************************************************************ shapes


def _resolve_shape(shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 and n == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous"
            )
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        shape = tuple(n // known if s == -1 else s for s in shape)
    elif known != n:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape


def _strides(a: np.ndarray) -> tuple[int, ...]:
    """Strides in elements (what PyTorch calls strides)."""
    size = a.itemsize
    return tuple(st // size for st in a.strides)


def _view_strides(
    old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The strides `new` would have as a view of a tensor with shape `old` and these
    strides, or None when no view is possible (PyTorch's computeStride)."""
    if not old:
        return (1,) * len(new)
    numel = math.prod(old)
    if numel == 0 and old == new:
        return strides
    out = [0] * len(new)
    if numel == 0:
        for d in range(len(new) - 1, -1, -1):
            out[d] = 1 if d == len(new) - 1 else _py.max(new[d + 1], 1) * out[d + 1]
        return tuple(out)
    view_d = len(new) - 1
    base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(out)


def reshaped(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`x` with another shape, a view when PyTorch's view would be one, with the strides
    PyTorch gives it: NumPy's differ only for size-1 dims and empty arrays, which
    PyTorch's overlap check and `stride()` see."""
    out = x.reshape(shape)
    if 1 not in shape and out.size:
        return out
    st = _view_strides(x.shape, _strides(x), tuple(shape))
    want = None if st is None else tuple(s * x.itemsize for s in st)
    if want is None or out.strides == want:
        return out
    return np.lib.stride_tricks.as_strided(x, shape, want, writeable=x.flags.writeable)


def expand_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...], unit: int = 1
) -> tuple[int, ...]:
    """The strides of an expand of (shape, strides) to `new` (PyTorch's
    inferExpandGeometry): a broadcast dim gets 0, a new leading dim of size 1 the next
    dim's size times its stride (`unit`, one element, when last); a 0-d tensor's
    expand has zero strides throughout."""
    if not shape:
        return (0,) * len(new)
    lead = len(new) - len(shape)
    out = [0] * len(new)
    for i in range(len(new) - 1, -1, -1):
        if i >= lead:
            n, st = shape[i - lead], strides[i - lead]
            out[i] = st if n == new[i] else 0
        elif new[i] == 1:
            out[i] = new[i + 1] * out[i + 1] if i + 1 < len(new) else unit
    return tuple(out)


def copy_to_strides(src: np.ndarray, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides setitem's value has once PyTorch's copy_to has made it the
    target's `shape` (when the shapes differ): viewed to its own shape (computeStride
    gives its size-1 dims new strides), then expanded."""
    own = torch_strides(src)
    if src.shape == shape:
        return own
    viewed = _view_strides(src.shape, own, src.shape) if src.size else None
    return expand_strides(src.shape, own if viewed is None else viewed, shape)


def unsqueeze_stride(x: np.ndarray, dim: int) -> int:
    """The byte stride PyTorch's unsqueeze gives the new dim at `dim`: the size times
    the stride of the dim it goes before (one item at the end)."""
    return x.shape[dim] * x.strides[dim] if dim < x.ndim else x.itemsize


def with_strides(x: np.ndarray, strides: tuple[int, ...]) -> np.ndarray:
    """`x` with these byte strides, which differ from its own only at size-1 dims (the
    memory reached is the same): a view, writable when x is."""
    if x.strides == tuple(strides):
        return x
    return np.lib.stride_tricks.as_strided(x, x.shape, strides, writeable=x.flags.writeable)


def subscript_view(x: np.ndarray, idx: Any) -> np.ndarray:
    """`x[idx]` for a basic subscript (ints, slices, None, `...`) with PyTorch's
    strides: each None is an unsqueeze where it stands (NumPy's new axis has stride 0),
    a slice multiplies the stride by its step even when it keeps no element."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    out = x[(*parts, Ellipsis)] if Ellipsis not in parts else x[parts]
    if out.size and not _py.any(p is None for p in parts):
        return out  # (NumPy's empty slice keeps the stride, PyTorch's takes the step)
    if not _py.all(_is_basic(p) for p in parts):
        return out
    dims = list(zip(x.shape, x.strides, strict=True))
    n_real = _py.sum(1 for p in parts if p is not None and p is not Ellipsis)
    d = 0
    for p in parts:
        if p is None:
            st = dims[d][0] * dims[d][1] if d < len(dims) else x.itemsize
            dims.insert(d, (1, st))
            d += 1
        elif p is Ellipsis:
            d += x.ndim - n_real
        elif isinstance(p, slice):
            n, st = dims[d]
            dims[d] = (len(range(*p.indices(n))), st * (p.step or 1))
            d += 1
        else:
            del dims[d]
    return with_strides(out, tuple(st for _, st in dims))


def _stride_method(a: Tensor, dim: Any = None) -> Any:
    """`x.stride()`: every dim's stride; `x.stride(d)`: one."""
    st = torch_strides(a.data_)
    if dim is None:
        return st
    if not st:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return st[_norm_dim(int(dim), len(st))]


def _is_contiguous(a: np.ndarray) -> bool:
    """PyTorch's is_contiguous (size-1 dims and empty tensors do not count)."""
    return bool(a.flags.c_contiguous)


def view(a: Tensor, *shape: Any) -> Tensor:
    """Same data, another shape (when the strides allow it)."""
    if len(shape) == 1 and isinstance(shape[0], DType):
        raise TypeError("view(dtype) is not supported")
    x = a.data_
    s = _resolve_shape(_shape_arg(shape), x.size)
    if _view_strides(x.shape, _strides(x), s) is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return _view_of(a, F.View.apply(a, shape=s))


def reshape(a: Tensor, *shape: Any) -> Tensor:
    """Another shape: a view (ViewBackward0, or ReshapeAliasBackward0 when the input is
    not contiguous) when the strides allow it, else a contiguous copy (CloneBackward0)
    viewed (UnsafeViewBackward0), as PyTorch does."""
    if _node.prof_hook is not None:  # a profile is open: aten::reshape around the steps
        return _profiler.within("aten::reshape", _reshape, a, shape)
    return _reshape(a, shape)


def _reshape(a: Tensor, shape: tuple[Any, ...]) -> Tensor:
    """reshape's steps (flatten's too: PyTorch records no aten::reshape inside it)."""
    x = a.data_
    s = _resolve_shape(_shape_arg(shape), x.size)
    if _is_contiguous(x):
        if _node.prof_hook is not None and not (grad_mode.state.enabled and a.requires_grad):
            _profiler.rename_next("aten::_reshape_alias")  # PyTorch's kernel without autograd
        return _view_of(a, F.View.apply(a, shape=s))
    if _view_strides(x.shape, _strides(x), s) is not None:
        if _node.prof_hook is not None and not (grad_mode.state.enabled and a.requires_grad):
            _profiler.rename_next("aten::_reshape_alias")
        return _view_of(a, F.ReshapeAlias.apply(a, shape=s))
    return F.UnsafeView.apply(clone(a), shape=s)


def _unsafe_view(a: Tensor, shape: tuple[int, ...]) -> Tensor:
    """`_unsafe_view`: reshape a fresh result without making it a view."""
    return F.UnsafeView.apply(a, shape=tuple(shape))


def flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims start..end merged into one."""
    if _node.prof_hook is not None:  # a profile is open: aten::flatten around the steps
        return _profiler.within("aten::flatten", _flatten, a, start_dim, end_dim)
    return _flatten(a, start_dim, end_dim)


def _flatten(a: Tensor, start_dim: int, end_dim: int) -> Tensor:
    nd = a.data_.ndim
    if nd == 0:
        return _reshape(a, (1,))
    s, e = _norm_dim(start_dim, nd), _norm_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    shape = a.data_.shape[:s] + (math.prod(a.data_.shape[s : e + 1]),) + a.data_.shape[e + 1 :]
    return _reshape(a, (shape,))


def ravel(a: Tensor) -> Tensor:
    """All dims merged into one: PyTorch's `contiguous().view(-1)`."""
    return view(contiguous(a), -1)


# How a view was made, when that restricts in-place changes (PyTorch's CreationMeta)
VIEW_NO_GRAD = 1  # under no_grad
VIEW_MULTI_OUTPUT = 2  # by split/chunk/unbind, which return several views at once


def _view_of(base: Tensor, out: Tensor, creation: int = 0) -> Tensor:
    """Mark `out` as a view of `base`: it shares base's storage and version counter,
    and its `_base` is the tensor that owns the storage."""
    out._vc = base._vc
    out._base = base._base if base._base is not None else base
    out._view_version = base._vc[0]
    if not grad_mode.state.enabled:
        out._creation = VIEW_NO_GRAD
    else:  # a view of a restricted view is restricted the same way
        out._creation = creation or base._creation
    return out


def _views_of(base: Tensor, outs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """The outputs of split/chunk/unbind: views that may not be changed in place."""
    for o in outs:
        _view_of(base, o, VIEW_MULTI_OUTPUT)
    return outs


def transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    """Two dims swapped."""
    nd = a.data_.ndim
    return _view_of(a, F.Transpose.apply(a, d0=_norm_dim(dim0, nd), d1=_norm_dim(dim1, nd)))


swapaxes = transpose


def t(a: Tensor) -> Tensor:
    """Transpose of a matrix (vectors unchanged)."""
    if a.data_.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {a.data_.ndim}D"
        )
    return _view_of(a, F.T.apply(a))


def permute(a: Tensor, *dims: Any) -> Tensor:
    """Dims reordered."""
    d = _shape_arg(dims)
    nd = a.data_.ndim
    if len(d) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
            f"to len(dims) = {len(d)}"
        )
    return _view_of(a, F.Permute.apply(a, dims=tuple(_norm_dim(x, nd) for x in d)))


def movedim(a: Tensor, source: Any, destination: Any) -> Tensor:
    """The `source` dims moved to the `destination` positions, the others keeping their
    order: a permute (PyTorch's grad_fn is PermuteBackward0 too)."""
    nd = a.data_.ndim
    src = list(source) if isinstance(source, (list, tuple)) else [source]
    dst = list(destination) if isinstance(destination, (list, tuple)) else [destination]
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should "
            f"contain the same number of dims as destination ({dst} dims)"
        )
    src = [_norm_dim(operator.index(d), nd) for d in src]
    dst = [_norm_dim(operator.index(d), nd) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if not nd:  # PyTorch's movedim of a 0-d tensor is an alias
        return _view_of(a, F.Alias.apply(a))
    order = [d for d in range(nd) if d not in src]
    for to, frm in sorted(zip(dst, src, strict=True)):
        order.insert(to, frm)
    return _view_of(a, F.Permute.apply(a, dims=tuple(order)))


moveaxis = movedim


def squeeze(a: Tensor, dim: Any = None) -> Tensor:
    """Size-1 dims removed (all, the given one, or the given ones)."""
    if dim is None:
        return _view_of(a, F.Squeeze.apply(a))
    if isinstance(dim, (list, tuple)):
        nd = a.data_.ndim
        return _view_of(a, F.SqueezeDims.apply(a, dims=_unique_dims(dim, nd)))
    return _view_of(a, F.SqueezeDim.apply(a, dim=_norm_dim(dim, a.data_.ndim)))


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    """A size-1 dim inserted at `dim`."""
    return _view_of(a, F.Unsqueeze.apply(a, dim=_norm_dim(dim, a.data_.ndim + 1)))


def expand(a: Tensor, *shape: Any) -> Tensor:
    """Broadcast to `shape` (-1 keeps a size)."""
    shape_t = _expanded_shape(a, list(_shape_arg(shape)))
    return _view_of(a, F.Expand.apply(a, shape=shape_t))


def _check_copy_shape(v: Tensor, shape: tuple[int, ...]) -> None:
    """`target[...] = v` broadcasts v as PyTorch's copy does: its leading 1s dropped,
    then expanded to the target's shape (with expand's errors)."""
    src = v.data_.shape
    k = 0
    while k < len(src) and src[k] == 1:
        k += 1
    _expanded_shape(v, list(shape), src[k:])


def _type_string(a: Tensor) -> str:
    """A tensor's type in PyTorch's messages: `torch.FloatTensor`, but `CPUBoolType`
    (bool has no legacy tensor type)."""
    return "CPUBoolType" if a.data_.dtype == np.bool_ else f"torch.{a.dtype.legacy}"


def _expanded_shape(a: Tensor, s: list[int], src: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The shape `a` (of shape `src`, by default its own) expands to; expand's errors."""
    src = a.data_.shape if src is None else src
    if len(s) < len(src):
        raise RuntimeError(
            f"expand({_type_string(a)}{{[{', '.join(map(str, src))}]}}, "
            f"size=[{', '.join(map(str, s))}]): "
            "the number of sizes provided "
            f"({len(s)}) must be greater or equal to the number of dimensions in the tensor "
            f"({len(src)})"
        )
    lead = len(s) - len(src)
    given = list(s)
    for i in reversed(range(len(src))):  # PyTorch checks from the last dim
        n = src[i]
        if s[lead + i] == -1:
            s[lead + i] = n
        elif n != 1 and s[lead + i] != n:
            raise RuntimeError(
                f"The expanded size of the tensor ({s[lead + i]}) must match the existing size "
                f"({n}) at non-singleton dimension {lead + i}.  Target sizes: {given}.  Tensor "
                f"sizes: {list(src)}"
            )
    return tuple(s)


def expand_as(a: Tensor, other: Tensor) -> Tensor:
    """Broadcast to other's shape."""
    return expand(a, other.data_.shape)


def repeat(a: Tensor, *reps: Any) -> Tensor:
    """Tiled `reps` times along each dim."""
    r = _shape_arg(reps)
    check_numel(a.data_.size * math.prod(r))
    return F.Repeat.apply(a, reps=r)


def flip(a: Tensor, dims: Any) -> Tensor:
    """Reversed along dims (a tuple or list of dims)."""
    if not isinstance(dims, (list, tuple)):
        raise TypeError(
            f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}"
        )
    return F.Flip.apply(a, dims=_unique_dims(dims, a.data_.ndim))


def _flip_method(a: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """`x.flip(0, 1)`, `x.flip((0, 1))`, `x.flip(0)` or `x.flip(dims=...)`."""
    if "dims" in kwargs:
        dims = kwargs.pop("dims")
    elif not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    elif len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    if kwargs:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return flip(a, tuple(dims))


def _unique_dims(dims: Sequence[Any], ndim: int) -> tuple[int, ...]:
    """Normalised dims, refusing a dim named twice as PyTorch does."""
    out = [_norm_dim(int(d), ndim) for d in dims]
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return tuple(sorted(out))


def cat(tensors: Sequence[Tensor], dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """Tensors joined along an existing dim (`axis` is NumPy's name for it)."""
    if axis is not None:
        if dim is not None:
            raise TypeError("cat() got an unexpected keyword argument 'axis'")
        dim = axis
    dim = 0 if dim is None else dim
    ts = list(tensors)
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(ts):
        if x.data_.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    rt = dtypes.result_type(*[_as_dim_tensor(x) for x in ts])
    # legacy 1-d empty tensors are skipped in the shape checks (they still promote)
    real = [(i, x) for i, x in enumerate(ts) if x.data_.shape != (0,)]
    if not real:
        return F.Cat.apply(*ts, dim=0, dtype=rt.np)
    first = real[0][1]
    nd = first.data_.ndim
    d = _norm_dim(dim, nd)
    ref = first.data_.shape
    for i, x in real[1:]:  # PyTorch checks each tensor in turn: its dims, then its sizes
        if x.data_.ndim != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {x.data_.ndim}"
            )
        for k, (p, q) in enumerate(zip(ref, x.data_.shape, strict=False)):
            if k != d and p != q:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {p} "
                    f"but got size {q} for tensor number {i} in the list."
                )
    check_numel(_py.sum([x.data_.size for x in ts]))
    return F.Cat.apply(*ts, dim=d, dtype=rt.np)


concat = cat
concatenate = cat


class _DimProxy:
    """cat promotes all inputs as dimensioned tensors."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, t: Tensor) -> None:
        self.dtype = t.dtype
        self.ndim = 1


def _as_dim_tensor(t: Tensor) -> Any:
    return _DimProxy(t)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Tensors stacked along a new dim."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = ts[0].data_.shape
    for i, x in enumerate(ts[1:], 1):
        if x.data_.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                f"and {list(x.data_.shape)} at entry {i}"
            )
    d = _norm_dim(dim, len(ref) + 1)
    check_numel(len(ts) * math.prod(ref))
    rt = dtypes.result_type(*[_as_dim_tensor(x) for x in ts])
    return F.Stack.apply(*ts, dim=d, dtype=rt.np)


def split(a: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of a given size (or list of sizes) along dim."""
    d = _norm_dim(dim, a.data_.ndim)
    n = a.data_.shape[d]
    if isinstance(split_size_or_sections, int):
        k = split_size_or_sections
        sizes = [k] * (n // k) + ([n % k] if n % k else [])
        if not sizes:
            sizes = [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if _py.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
        return _views_of(a, F.SplitWithSizes.apply(a, sizes=sizes, dim=d))
    return _views_of(a, F.Split.apply(a, sizes=sizes, dim=d))


def chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """`chunks` nearly equal pieces along dim."""
    d = _norm_dim(dim, a.data_.ndim)
    n = a.data_.shape[d]
    if n == 0:  # PyTorch keeps the number of (empty) chunks: split_with_sizes
        return split(a, [0] * chunks, d)
    return split(a, -(-n // chunks), d)


def unbind(a: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along dim."""
    return _views_of(a, F.Unbind.apply(a, dim=_norm_dim(dim, a.data_.ndim)))


def diagonal(a: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a view, in a last dim."""
    nd = a.data_.ndim
    d1, d2 = _norm_dim(dim1, nd), _norm_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _view_of(a, F.Diagonal.apply(a, offset=int(offset), d1=d1, d2=d2))


def as_strided(a: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A view of a's storage with the given sizes and strides (in elements), from a's
    storage offset unless one is given; its gradient reaches a's own elements only."""
    root = a._base if a._base is not None else a
    store = flat_storage(root.data_)
    if store is None:  # (a layout PyTorch's kernels do not make)
        raise RuntimeError("as_strided: adcli needs a tensor whose elements are one dense block")
    size_t, stride_t = tuple(int(n) for n in size), tuple(int(n) for n in stride)
    if len(size_t) != len(stride_t):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(stride_t)} != {len(size_t)}"
        )
    item = store.itemsize
    if storage_offset is None:
        first = a.data_.__array_interface__["data"][0] - store.__array_interface__["data"][0]
        storage_offset = first // item
    need = (
        storage_offset + 1 + _py.sum((n - 1) * st for n, st in zip(size_t, stride_t, strict=True))
    )
    if 0 not in size_t and need > store.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size_t)}, strides {list(stride_t)}, storage offset "
            f"{storage_offset}, and itemsize {item} requiring a storage size of "
            f"{need * item} are out of bounds for storage of size {store.size * item}"
        )
    strided = np.lib.stride_tricks.as_strided(
        store[storage_offset:], size_t, tuple(st * item for st in stride_t)
    )
    # the view's elements found among a's get their gradient there; others none
    idx, inside = element_positions(a.data_, strided)
    mask = None if inside.all() and a.data_.ndim else inside
    return _view_of(a, F.AsStrided.apply(a, index=idx, strided=strided, inside=mask))


def narrow(a: Tensor, dim: int, start: int, length: int) -> Tensor:
    """a[..., start:start+length, ...] along dim."""
    idx = [slice(None)] * a.data_.ndim
    idx[dim] = slice(start, start + length)
    return _view_of(a, F.Slice.apply(a, index=tuple(idx)))


def select(a: Tensor, dim: int, index: int, _subscript: bool = False) -> Tensor:
    """a[..., index, ...] along dim."""
    nd = a.data_.ndim
    d = _norm_dim(dim, nd)
    size = a.data_.shape[d]
    if not -size <= index < size:
        if _subscript:
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"{list(a.data_.shape)} at dimension {d}"
        )
    idx: list[Any] = [slice(None)] * nd
    idx[d] = index % size
    return _view_of(a, F.Select.apply(a, index=tuple(idx)))


def gather(a: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values picked along dim by an int64 index tensor."""
    if sparse_grad:
        raise NotImplementedError("adcli has no sparse tensors: use gather(sparse_grad=False)")
    if index.data_.dtype not in (np.int64, np.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    d = _norm_dim(dim, a.data_.ndim)
    _check_gather_index(a.data_.shape, d, index.data_)
    return F.Gather.apply(a, dim=d, index=index.data_, kept=index)


def _check_gather_index(shape: tuple[int, ...], dim: int, index: np.ndarray) -> None:
    """PyTorch's checks: as many dims (0-d counting as 1-d), an index no larger than
    the input apart from `dim`, every value within the size of `dim`."""
    if _py.max(len(shape), 1) != _py.max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d in range(index.ndim):
        if d != dim and d < len(shape) and index.shape[d] > shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to "
                f"be no larger than self {list(shape)} apart from dimension {dim}"
            )
    size = shape[dim] if shape else 1
    bad = (index < 0) | (index >= size)
    if bad.any():
        raise RuntimeError(
            f"index {int(index[bad].flat[0])} is out of bounds for dimension {dim} with size {size}"
        )


def scatter_into(g: Tensor, dim: int, index: np.ndarray, shape: tuple[int, ...]) -> Tensor:
    """Zeros of `shape` with g added at `index` along dim (gather's backward)."""
    return F.ScatterAdd.apply(g, dim=dim, index=index, shape=shape)


def embed(g: Tensor, index: Any, shape: tuple[int, ...]) -> Tensor:
    """Zeros of `shape` with g added at `index` (indexing's backward)."""
    return F.Embed.apply(None, g, index=index, shape=shape)


def masked_fill(a: Tensor, mask: Tensor, value: Any) -> Tensor:
    """a with `value` where mask is True."""
    # out of place, PyTorch broadcasts mask and a before it looks at mask's dtype
    _broadcast_check(_as_array(mask), a.data_)
    return _masked_fill(a, mask, value)


def _masked_fill(a: Tensor, mask: Tensor, value: Any) -> Tensor:
    m = _as_array(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{dtypes.CPP_TYPE_NAMES.get(dtypes.of_array(m).name, dtypes.of_array(m).name)}"
        )
    shape = np.broadcast_shapes(a.data_.shape, m.shape)
    if shape != a.data_.shape:
        check_shape(shape)
        m = np.broadcast_to(m, shape)
    if isinstance(value, Tensor):
        if value.data_.ndim:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                f"with {value.data_.ndim} dimension(s)."
            )
        return F.MaskedFillTensor.apply(a, value, mask=m, kept=_kept(mask))
    _check_number(value, "value")
    return F.MaskedFill.apply(a, mask=m, value=value, kept=_kept(mask))


# ************************************************************ scatter and index_* writes

_SCATTER_OVERLOADS = (
    " * (int dim, Tensor index, Tensor src)\n"
    " * (int dim, Tensor index, Tensor src, *, str reduce)\n"
    " * (int dim, Tensor index, Number value)\n"
    " * (int dim, Tensor index, Number value, *, str reduce)\n"
)


def _check_scatter_index(
    name: str, shape: tuple[int, ...], dim: int, index: Tensor, src: Tensor | None
) -> np.ndarray:
    """PyTorch's scatter checks, in its order: the index dtype, the src dtype, as many
    dims (0-d counting as 1-d), sizes no larger than self's (apart from dim) and src's,
    every value within dim's size."""
    i = index.data_
    if i.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if _py.max(len(shape), 1) != _py.max(i.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    big = _py.any(d != dim and i.shape[d] > shape[d] for d in range(i.ndim) if d < len(shape))
    tail = ""
    if src is not None:
        s = src.data_.shape
        tail = f" and to be no larger size than src {list(s)}"
        big = big or _py.any(i.shape[d] > s[d] for d in range(_py.min(i.ndim, len(s))))
    if big:
        raise RuntimeError(
            f"Expected index {list(i.shape)} to be no larger than self {list(shape)} apart "
            f"from dimension {dim}{tail}"
        )
    size = shape[dim] if shape else 1
    bad = (i < 0) | (i >= size)
    if bad.any():
        raise RuntimeError(
            f"index {int(i[bad].flat[0])} is out of bounds for dimension {dim} with size {size}"
        )
    return i


def scatter(
    input: Tensor,
    dim: Any,
    index: Tensor,
    src: Any = None,
    value: Any = None,
    *,
    reduce: str | None = None,
    _op: str = "aten::scatter",
) -> Tensor:
    """input with src's values (or one number, `value`) written at index along dim;
    `reduce='add'/'multiply'` combines them instead (no derivative, as in PyTorch)."""
    if (src is None) == (value is None) or not isinstance(index, Tensor):
        got = ", ".join(
            _type_name(v) if not isinstance(v, Tensor) else "Tensor"
            for v in (dim, index, *(v for v in (src, value) if v is not None))
        )
        raise TypeError(
            f"scatter() received an invalid combination of arguments - got ({got}), but "
            "expected one of:\n" + _SCATTER_OVERLOADS
        )
    number = src if not isinstance(src, Tensor) and src is not None else value
    d = _norm_dim(dim, input.data_.ndim)
    if isinstance(src, Tensor):
        if index.data_.dtype in (np.int64, np.int32) and src.data_.dtype != input.data_.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        _norm_dim(dim, src.data_.ndim)
        i = _check_scatter_index("scatter", input.data_.shape, d, index, src)
    else:
        _check_number(number, "value")
        i = _check_scatter_index("scatter", input.data_.shape, d, index, None)
    if reduce is not None:
        src_or_number = src if isinstance(src, Tensor) else number
        return _scatter_reduce(input, d, i, src_or_number, reduce, _op)
    if isinstance(src, Tensor):
        return F.ScatterSrc.apply(input, src, dim=d, index=i, kept=_kept(index))
    return F.ScatterValue.apply(input, dim=d, index=i, value=number, kept=_kept(index))


def _scatter_reduce(
    input: Tensor, dim: int, index: np.ndarray, src: Any, reduce: str, op: str
) -> Tensor:
    """scatter's deprecated `reduce=`: no derivative (PyTorch's NotImplemented node)."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        _config.warn(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be "
            "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
            "reduction options. (Triggered internally at "
            "/__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:225.)"
        )
        values: Any = F._head(src.data_, F._as_1d(index).shape)
    else:
        values = F._scalar_of(src, input.data_.dtype)
    out = np.array(input.data_, order="C")
    where = F._along(F._as_1d(index), dim)
    ufunc = np.add if reduce == "add" else np.multiply
    ufunc.at(F._as_1d(out), where, values)
    operands = [input] + ([src] if isinstance(src, Tensor) else [])
    return not_implemented(op, out, *operands)


def scatter_add(input: Tensor, dim: Any, index: Tensor, src: Tensor) -> Tensor:
    """input with src's values added at index along dim (in index order)."""
    if not isinstance(src, Tensor):
        raise TypeError(
            f"scatter_add(): argument 'src' (position 3) must be Tensor, not {_type_name(src)}"
        )
    d = _norm_dim(dim, input.data_.ndim)
    if index.data_.dtype in (np.int64, np.int32) and src.data_.dtype != input.data_.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _norm_dim(dim, src.data_.ndim)
    i = _check_scatter_index("scatter", input.data_.shape, d, index, src)
    return F.ScatterAddSrc.apply(input, src, dim=d, index=i, kept=_kept(index))


def _check_vector_index(
    name: str, index: Tensor, shape: tuple[int, ...], dim: int, negatives: bool = True
) -> np.ndarray:
    """index_*'s index: a vector (or 0-d) of values within dim's size (from its end too
    when `negatives`), refused in the kernel's words."""
    i = index.data_
    size = shape[dim] if shape else 1
    bad = (i < (-size if negatives else 0)) | (i >= size)
    if bad.any():
        raise IndexError(
            f"{name}index {int(i[bad].flat[0])} is out of bounds for dimension {dim} "
            f"with size {size}"
        )
    return np.where(i < 0, i + size, i)


def _check_add_index(index: Tensor, shape: tuple[int, ...], dim: int, alpha: Any) -> np.ndarray:
    """index_add's bounds: its scatter_add path (alpha 1, the first or last dim of a 2-d
    or larger input) names the index, its slice loop does not."""
    i = index.data_
    size = shape[dim] if shape else 1
    bad = (i < 0) | (i >= size)
    if bad.any() and len(shape) >= 2 and dim in (0, len(shape) - 1) and alpha == 1:
        raise RuntimeError(
            f"index {int(i[bad].flat[0])} is out of bounds for dimension {dim} with size {size}"
        )
    if bad.any():
        raise IndexError("index out of range in self")
    return i


def index_fill(input: Tensor, dim: Any, index: Tensor, value: Any) -> Tensor:
    """input with `value` (a number or a 0-d tensor) over the slices at index along dim."""
    d = _norm_dim(dim, input.data_.ndim)
    if index.data_.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.data_.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.data_.ndim:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.data_.ndim} dimension(s)."
        )
    i = _check_vector_index("", index, input.data_.shape, d)
    if isinstance(value, Tensor):
        return F.IndexFillTensor.apply(
            input, value, dim=d, index=i, kept=_kept(index), given=index.data_
        )
    _check_number(value, "value")
    return F.IndexFill.apply(input, dim=d, index=i, value=value, kept=_kept(index))


def index_select(input: Tensor, dim: Any, index: Tensor) -> Tensor:
    """The slices of input at index (a vector, or one index) along dim."""
    i = index.data_ if isinstance(index, Tensor) else np.asarray(index)
    if i.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if i.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d = _norm_dim(dim, input.data_.ndim)
    if input.data_.ndim == 0 and i.size != 1:
        raise RuntimeError(
            f"index_select(): Index to scalar can have only 1 value, got {i.size} value(s)"
        )
    F.index_bounds(input.data_, d, i)
    return F.IndexSelect.apply(input, dim=d, index=i.astype(np.int64), kept=_kept(index))


def index_add(input: Tensor, dim: Any, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """input with alpha * source's slices added to the slices at index along dim."""
    d = _norm_dim(dim, input.data_.ndim)
    i, s = index.data_, source.data_
    if i.ndim > 1:
        raise IndexError(
            "index_add_(): Index is supposed to be a vector, but got dim: "
            f"{i.ndim} with type: {_legacy_name(index)} and size: {list(i.shape)}"
        )
    if i.dtype not in (np.int64, np.int32):
        raise RuntimeError(
            "index_add_(): Expected dtype int32/int64 for index but got: " + _legacy_name(index)
        )
    if s.dtype != input.data_.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_legacy_name(input)}) and source ({_legacy_name(source)}) "
            "must have the same scalar type"
        )
    if s.ndim and d >= s.ndim or not s.ndim and d > 0:
        raise RuntimeError(
            f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
            f"{s.ndim}"
        )
    n = s.shape[d] if s.ndim else 1
    if i.size != n:
        raise RuntimeError(
            f"index_add_(): Number of indices ({i.size}) should be equal to source.size(dim): "
            f"({n}), for dim: {d}"
        )
    shape = input.data_.shape
    # the shapes without dim, or whole when either is 0-d (as PyTorch compares them)
    whole = not s.ndim or not shape
    mine = list(shape) if whole else [n for k, n in enumerate(shape) if k != d]
    theirs = list(s.shape) if whole else [n for k, n in enumerate(s.shape) if k != d]
    if mine != theirs:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(shape)} source.shape = {list(s.shape)}"
        )
    i = _check_add_index(index, shape, d, alpha)
    return F.IndexAdd.apply(input, source, dim=d, index=i, alpha=alpha, kept=_kept(index))


def index_copy(input: Tensor, dim: Any, index: Tensor, source: Tensor) -> Tensor:
    """input with source's slices copied over the slices at index along dim."""
    d = _norm_dim(dim, input.data_.ndim)
    i, s, shape = index.data_, source.data_, input.data_.shape
    # PyTorch's checks, in its order
    if i.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {i.ndim})")
    if not s.ndim and i.size != 1:
        raise IndexError(
            f"index_copy_(): When source is scalar, index should have one element (got {i.size})"
        )
    if s.ndim and len(shape) and s.ndim != len(shape):
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their "
            f"dimensionality must match. Source dimensionality ({s.ndim}), destination "
            f"dimensionality ({len(shape)})"
        )
    if i.dtype != np.int64:
        raise RuntimeError(
            "index_copy_(): Expected a long tensor for index, but got " + _legacy_name(index)
        )
    if s.dtype != input.data_.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{_legacy_name(input)} and (source) {_legacy_name(source)}"
        )
    dest = [n for k, n in enumerate(shape) if k != d]
    part = [n for k, n in enumerate(s.shape) if k != d]
    if dest != part:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. "
            f"Destination slice shape: {' '.join(map(str, dest))} at dimension {d} and source "
            f"slice shape: {' '.join(map(str, part))} at dimension 0."
        )
    if s.ndim and i.size != s.shape[d]:
        raise IndexError(
            f"index_copy_(): Number of indices ({i.size}) should be equal to source.size(dim) "
            f"({s.shape[d]})"
        )
    i = _check_vector_index("index_copy_(): ", index, shape, d, negatives=False)
    return F.IndexCopy.apply(input, source, dim=d, index=i, kept=_kept(index))


def _put_parts(name: str, input: Tensor, indices: Any, values: Any) -> Any:
    """index_put's arguments checked as PyTorch's parser and kernel check them; the
    NumPy index."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
            f"{_type_name(indices) if not isinstance(indices, Tensor) else 'Tensor'}"
        )
    for k, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument 0, but got {_type_name(t)}"
            )
    if not isinstance(values, Tensor):
        raise TypeError(
            f"{name}(): argument 'values' (position 2) must be Tensor, not {_type_name(values)}"
        )
    parts = _convert_index(tuple(t.data_ for t in indices))
    _fancy_index(input, parts)
    if values.data_.dtype != input.data_.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{_legacy_name(input)} for the destination and {_legacy_name(values)} for the "
            "source."
        )
    idx = parts if len(parts) != 1 else parts[0]
    target = input.data_[idx].shape
    try:
        np.broadcast_shapes(values.data_.shape, target)
        fits = np.broadcast_shapes(values.data_.shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values.data_.shape)} cannot be "
            f"broadcast to indexing result of shape {list(target)}"
        )
    return idx


def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """input with values written (or, with `accumulate`, added) at array indices."""
    idx = _put_parts("index_put", input, indices, values)
    dt = input.data_.dtype
    if accumulate:
        return F.IndexPutAccumulate.apply(input, values, index=idx, dtype=dt)
    return F.IndexPut.apply(input, values, index=idx, dtype=dt)


def _scatter_in_place(
    input: Tensor,
    dim: Any,
    index: Tensor,
    src: Any = None,
    value: Any = None,
    *,
    reduce: str | None = None,
) -> Tensor:
    """scatter as scatter_ runs it (its reduce= node names aten::scatter_)."""
    return scatter(input, dim, index, src, value, reduce=reduce, _op="aten::scatter_")


def _inplace_of(op: Any, name: str, src: str | None) -> Any:
    """The in-place method of a scatter/index op (`x.scatter_(1, i, 1.0)`): the op on
    self's value written back, the source tensor (parameter `src`) among the operands
    whose requires_grad makes it record."""
    sig = inspect.signature(op)
    first = next(iter(sig.parameters))

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}(): {e}") from None
        given = dict(bound.arguments)
        source = given.get(src) if src else None

        def run(t: Tensor, *s: Tensor) -> Tensor:
            call = dict(given, **{first: t})
            if s:
                call[src] = s[0]  # type: ignore[index]
            return op(**call)

        if isinstance(source, Tensor):
            return self._inplace(run, source)
        return self._inplace(run)

    method.__name__ = name
    return method


# ************************************************************ indexing


def _index_parts(index: Any) -> tuple[Any, ...]:
    return index if isinstance(index, tuple) else (index,)


def _is_basic(part: Any) -> bool:
    return (
        part is None
        or part is Ellipsis
        or isinstance(part, slice)
        or (isinstance(part, (int, np.integer)) and not isinstance(part, bool))
    )


def _convert_index(index: Any) -> Any:
    """Script index values to NumPy ones (tensors → arrays, validated types)."""
    parts = []
    for p in _index_parts(index):
        if isinstance(p, Tensor):
            if p.data_.dtype.kind in "iu" and p.data_.ndim == 0:
                p = int(p.data_)
            else:
                p = p.data_
        elif isinstance(p, (list, tuple, range)):
            # any sequence inside an index (a list, `range(n)`, a tuple within the
            # tuple) is one advanced index, as PyTorch converts it to a tensor
            items = [x.item() if isinstance(x, Tensor) else x for x in p]
            p = np.asarray(items) if items else np.zeros(0, np.int64)
        elif isinstance(p, slice):
            p = slice(*(_slice_int(v) for v in (p.start, p.stop, p.step)))
        elif isinstance(p, bool):
            p = np.asarray(p)
        elif isinstance(p, np.ndarray):
            pass  # internal callers (view positions) index with arrays directly
        elif not _is_basic(p):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                "Variables are valid indices (got " + _type_name(p) + ")"
            )
        if isinstance(p, np.ndarray) and p.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        parts.append(p)
    return tuple(parts)


def _check_subscript(shape: tuple[int, ...], parts: tuple[Any, ...]) -> bool:
    """Check the integers and slices of an index as PyTorch's slicing does, with its
    messages (an index names its position in the subscript, `None`, `...` and a 0-d
    mask counting one each); return
    whether the subscript selects the whole tensor (no int, no None, only slices that
    span their dim), where PyTorch indexes the tensor itself rather than a view."""
    nd = len(shape)
    used = 0
    for p in parts:
        if p is not None and p is not Ellipsis:
            used += p.ndim if type(p) is np.ndarray and p.dtype == np.bool_ else 1
    if used > nd:
        if nd == 0 and len(parts) == 1:
            _check_0d_subscript(parts[0])
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    whole = True
    pos = dim = 0  # position in the subscript (ellipsis expanded), dim of the tensor
    for p in parts:
        t = type(p)
        if t is int or isinstance(p, np.integer):
            size = shape[dim]
            if not -size <= p < size:
                raise IndexError(f"index {p} is out of bounds for dimension {pos} with size {size}")
            whole = False
        elif t is slice:
            step = p.step
            if step is not None and step <= 0:
                raise ValueError(
                    "slice step cannot be zero" if step == 0 else "step must be greater than zero"
                )
            if whole and not (
                p.start in (None, 0)
                and step in (None, 1)
                and (p.stop is None or p.stop >= shape[dim])
            ):
                whole = False
        elif p is None:
            pos += 1
            whole = False
            continue
        elif p is Ellipsis:  # (one position in PyTorch's count, however many dims)
            pos += 1
            dim += nd - used
            continue
        else:  # an array index (checked by _fancy_index); a 0-d mask is one position
            n = p.ndim if p.dtype == np.bool_ else 1
            pos += n or 1
            dim += n
            whole = False
            continue
        pos += 1
        dim += 1
    return whole


def _is_mask(p: Any) -> bool:
    return type(p) is np.ndarray and p.dtype == np.bool_


def _legacy_name(t: Tensor) -> str:
    """`Float`, `Long`: the name PyTorch's messages give a tensor's dtype."""
    return t.dtype.legacy.replace("Tensor", "")


def _is_0d_mask(p: Any) -> bool:
    return type(p) is np.ndarray and p.ndim == 0 and p.dtype == np.bool_


def _check_0d_subscript(p: Any) -> None:
    """PyTorch's own words for `s[0]`, `s[-1]` and `s[:]` on a 0-d tensor."""
    if type(p) is slice:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if type(p) is int:
        if p == 0:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        raise IndexError(f"index {p} is out of bounds for dimension 0 with size 0")


def _slice_int(v: Any) -> Any:
    if isinstance(v, Tensor):
        return int(v.item())
    return v


def getitem(a: Tensor, index: Any) -> Tensor:
    """a[index] with PyTorch's grad_fns: SelectBackward0 per integer, SliceBackward0 per
    slice, UnsqueezeBackward0 per None, IndexBackward0 for array/mask indices."""
    parts = _convert_index(index)
    if not _py.all(_is_basic(p) for p in parts):
        arrays = _kept(*_index_parts(index))
        return _advanced_getitem(a, parts, tuple([t for t in arrays if t.data_.ndim]))
    _check_subscript(a.data_.shape, parts)
    if parts == (Ellipsis,):
        return _view_of(a, F.Alias.apply(a))
    nd = a.data_.ndim
    n_real = _py.sum(1 for p in parts if p is not None and p is not Ellipsis)
    if n_real > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    # expand the ellipsis
    if Ellipsis in parts:
        k = parts.index(Ellipsis)
        parts = parts[:k] + (slice(None),) * (nd - n_real) + parts[k + 1 :]
    # PyTorch skips a slice that keeps a whole dim inside a tuple subscript (`x[0, :]`
    # is one SelectBackward0), but not a lone one (`x[:]` is a SliceBackward0)
    lone = not isinstance(index, tuple)
    out = a
    dim = 0
    applied = False
    for p in parts:
        if p is None:
            out = unsqueeze(out, dim)
            dim += 1
            applied = True
        elif isinstance(p, slice):
            if p.step is not None and p.step <= 0:
                raise ValueError("step must be greater than zero")
            size = out.data_.shape[dim]
            # PyTorch compares the slice as written, before wrapping it: `0:`, `:5` on
            # 3 elements keep the dim, `-3:` and (on 0 elements) `:-1` do not
            whole = (
                p.step in (None, 1)
                and (p.start is None or p.start == 0)
                and (p.stop is None or p.stop >= size)
            )
            if lone or not whole:
                idx = [slice(None)] * out.data_.ndim
                idx[dim] = p
                out = _view_of(out, F.Slice.apply(out, index=tuple(idx)))
                applied = True
            dim += 1
        else:
            out = select(out, dim, int(p), _subscript=True)
            applied = True
    if not applied:  # `x[()]`, `x[:, :]`: a new view of the whole tensor
        return _view_of(a, F.Alias.apply(a))
    return out


def _advanced_getitem(a: Tensor, parts: tuple[Any, ...], kept: tuple[Tensor, ...]) -> Tensor:
    """Array/mask indexing as PyTorch does it: integers, slices and None first (as
    views: Select, Slice, Unsqueeze), then one IndexBackward0 with the arrays."""
    basic: list[Any] = []
    adv: list[Any] = []
    for p in parts:
        if _is_basic(p):
            basic.append(p)
            if p is Ellipsis:
                adv.append(Ellipsis)
            elif not isinstance(p, (int, np.integer)):
                adv.append(slice(None))
        elif isinstance(p, np.ndarray) and p.dtype == np.bool_ and p.ndim == 0:
            # `x[True]`: a new dim of size 1 (0 for False), picked by an index array
            basic.append(None)
            adv.append(np.arange(int(p), dtype=np.int64))
        else:
            basic.append(Ellipsis if p is Ellipsis else slice(None))
            adv.append(p)
            if isinstance(p, np.ndarray) and p.dtype == np.bool_ and p.ndim > 1:
                basic.extend([slice(None)] * (p.ndim - 1))
    trivial = _py.all(p is Ellipsis or (isinstance(p, slice) and p == slice(None)) for p in basic)
    out = a if trivial else getitem(a, tuple(basic))
    return F.Index.apply(out, index=_fancy_index(out, tuple(adv)), kept=kept)


def _fancy_index(a: Tensor, parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """Check array/mask indices with PyTorch's messages (masks, count, broadcast, bounds)."""
    shape = a.data_.shape
    used = _py.sum(
        p.ndim if isinstance(p, np.ndarray) and p.dtype == np.bool_ else 1
        for p in parts
        if p is not Ellipsis and p is not None
    )
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    placed: list[tuple[int, int, np.ndarray]] = []  # (tensor dim, index number, array)
    dim = k = 0
    for p in parts:
        if p is Ellipsis:
            dim += len(shape) - used
        elif isinstance(p, np.ndarray) and p.dtype == np.bool_:
            for i, n in enumerate(p.shape):
                if shape[dim + i] != n:
                    raise IndexError(
                        f"The shape of the mask {list(p.shape)} at index {i} does not match the "
                        f"shape of the indexed tensor {list(shape)} at index {dim + i}"
                    )
            for j, idx in enumerate(np.nonzero(p)):
                placed.append((dim + j, k + j, idx))
            dim += p.ndim
            k += p.ndim
        elif isinstance(p, np.ndarray):
            placed.append((dim, k, p))
            dim += 1
            k += 1
        else:
            dim += 1
    try:
        indexed = np.broadcast_shapes(*[arr.shape for _, _, arr in placed])
    except ValueError:
        shapes = ", ".join(str(list(arr.shape)) for _, _, arr in placed)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    # the result: the broadcast index shape, with the dims no array indexes
    consumed = {d for d, _, _ in placed}
    check_numel(math.prod(indexed) * math.prod(n for i, n in enumerate(shape) if i not in consumed))
    for d, j, arr in placed:
        size = shape[d]
        bad = arr[(arr >= size) | (arr < -size)]
        if bad.size and size == 0:  # PyTorch's sentence names neither index nor dim then
            raise IndexError("index is out of bounds for dimension with size 0")
        if bad.size:
            raise IndexError(
                f"index {int(bad.flat[0])} is out of bounds for dimension {j} with size {size}"
            )
    return parts


# view_position's stand-in for an expand of a 0-d base (no NumPy index of a 0-d array
# repeats its element): the view's every element is the base's one
SPREAD: Any = object()


def spread_value(value: np.ndarray, old: np.ndarray) -> Any:
    """What a 0-d base holds after an in-place op wrote `value` through an expanded view
    of it: the element the op wrote last, in memory order (a masked_fill_ writes only
    the masked ones: the last element that changed, else the old value)."""
    same = value == old
    if value.dtype.kind in "fc":
        same |= np.isnan(value) & np.isnan(old)
    changed = np.flatnonzero(~same)
    return value.flat[changed[-1]] if changed.size else old[()]


def view_position(view: Tensor) -> tuple[np.ndarray, ...] | None:
    """Where a view's elements sit in its base, as an index into the base (arrays of
    positions, read from the memory the two share), or None when that cannot be told."""
    base = view._base
    if base is None:
        return None
    b, v = base.data_, view.data_
    if v.size == 0:
        if b.ndim == 0:  # NumPy's 0-d False mask picks nothing from a 0-d base
            return (np.zeros((), bool),)
        return tuple(np.zeros(v.shape, np.intp) for _ in b.shape)
    if b.size == 0:
        return None
    if b.ndim == 0:  # a 0-d base has no dims to index: its views are 1-element reshapes
        return (None,) * v.ndim if v.size == 1 else None
    found = element_positions(b, v)
    if not found[1].all():
        return None  # the view is not inside the base's memory (its data was replaced)
    return found[0]


def view_rebase_message(view: Tensor, indirect: bool) -> str:
    """PyTorch's error for changing in place a view that must not be (made under
    no_grad, or one of several outputs), or whose base was changed in place."""
    done = "its base or another view of its base has been" if indirect else "is being"
    node = view._grad_fn
    if node is not None and view._creation == VIEW_NO_GRAD:  # a view of a no_grad view
        msg = (
            f"Output {view._output_nr} of {short_name(node)} is a view of a view which was "
            f"created in no_grad mode and {done} modified inplace with grad mode enabled."
        )
    elif node is not None:
        name = short_name(node)
        msg = f"Output {view._output_nr} of {name} is a view and {done} modified inplace."
    else:
        msg = (
            f"A view was created in no_grad mode and {done} modified inplace with grad mode "
            "enabled."
        )
    if view._creation == VIEW_MULTI_OUTPUT:
        return msg + (
            " This view is the output of a function that returns multiple views. Such "
            "functions do not allow the output views to be modified inplace. You should "
            "replace the inplace operation by an out-of-place one."
        )
    return msg + (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can "
        "clarify your code by moving both the view and the inplace either both inside the "
        "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
        "want the inplace to be tracked)."
    )


def rebase_view(view: Tensor) -> None:
    """Re-derive a view's grad_fn from its base after an in-place change to the base or
    to another view of it: an AsStridedBackward0 into the base's current node."""
    base = view._base
    version = view._vc[0]
    if view._grad_fn is None and not base._requires_grad:
        return  # (still to re-derive should the base come to require grad, as in PyTorch)
    if view._creation:
        raise RuntimeError(view_rebase_message(view, indirect=True))
    idx = None if base.data_.ndim == 0 else view_position(view)
    view._view_version = version
    if idx is not None:
        params: dict[str, Any] = {"index": idx}
        make = F.AsStridedRebase
    elif base.data_.ndim == 0:  # every view of a 0-d base reads its one element
        params, make = {"shape": view.data_.shape}, F.AsStridedExpand
    else:
        return
    with grad_mode.enable_grad():
        if base._requires_grad:
            node = make.apply(base, **params).grad_fn
        else:  # the view had a node: PyTorch re-derives one that leads nowhere
            stand_in = Tensor._make(base.data_, True)
            node = make.apply(stand_in, **params).grad_fn
            node.next_functions = ((None, 0),)
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = node is not None
    if node is not None:
        node.outputs = weakref.ref(view)
        if view._retains_grad:
            from .tensor import _register_retain

            _register_retain(view)


def inplace_on_view(
    view: Tensor, fn: Any, args: Any, kwargs: Any, store: Any = None
) -> Tensor | None:
    """An in-place op on a view of a tensor, when it records: the base takes a
    CopySlices node wrapping the op's node (so its next_functions are the base's old
    node and the op's other inputs, as in PyTorch) and the view an AsStridedBackward0
    re-derived from the base. `store(memory)`, when given, writes the view's memory
    as the op does (else the op's result is copied into the base)."""
    from .tensor import _adopt_node, check_saved_self, check_write

    base = view._base
    idx = view_position(view)
    if idx is None and base.data_.ndim == 0 and view.data_.size > 1:
        idx = SPREAD  # an expand of a 0-d base: every element is the base's one
    elif idx is None:  # the view's place in its base cannot be told: update the view alone
        return None
    # the view's old value, for fn's node (requiring grad as the view does: a value
    # saved from it then requires grad only when the base does)
    stand_in = Tensor._make(view.data_.copy(), view.requires_grad)
    if view.requires_grad:  # (its graph: a double backward reaches the base through it)
        stand_in._grad_fn, stand_in._output_nr = view.grad_fn, view._output_nr
        stand_in._acc = view._acc
    with recording_in_place():
        result = fn(stand_in, *args, **kwargs)
    node = result.grad_fn
    if node is not None and node.next_functions and stand_in._grad_fn is not None:
        # CopySlices stands for fn's edge to the view: only a saved self keeps its graph.
        # The view's old node stays alive with fn all the same (PyTorch's fn keeps that
        # edge), so an earlier in-place op's saved output still names it in errors.
        node.view_node = node.next_functions[0][0]
        node.next_functions = ((None, 0),) + tuple(node.next_functions[1:])
    check_saved_self(node, stand_in)
    value = result.data_
    check_write(view.data_, value)
    snapshot = Tensor._make(
        base.data_.copy(), base._requires_grad, base.grad_fn, [base._vc[0]], base._output_nr
    )
    snapshot._acc = base._acc
    with recording_in_place():  # (PyTorch makes the base's CopySlices node directly)
        if node is None and idx is SPREAD:
            return None
        if node is None:
            value_t = Tensor._make(value)
            out = F.CopySlices.apply(snapshot, value_t, index=idx, dtype=base.data_.dtype)
        else:
            out = F.CopySlicesOp.wrap(snapshot, node, idx, value)
    d = view.data_
    if d.size and _py.any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape, strict=True)):
        # PyTorch's backward writes the view's gradient through the same overlapping
        # view, which it then refuses: so does this node's backward
        out.grad_fn.overlapping = True
    if store is not None:  # (the view's memory is the base's)
        store(view.data_)
    elif idx is SPREAD:  # (the op wrote one value: fill_, masked_fill_)
        base.data_[()] = spread_value(value, base.data_)
    elif value.size:  # (an empty view of a 0-d base, picked by a False mask: nothing)
        base.data_[idx] = value.astype(base.data_.dtype, copy=False)
    base._vc[0] += 1
    _adopt_node(base, out)
    if node is not None and type(node.saved) is tuple:
        # the op's saved output is the view itself now (PyTorch's sqrt_ saves it): a
        # later in-place change of the view or its base must fail its backward, and a
        # double backward goes from it through the view's re-derived node (to the base),
        # held weakly as PyTorch does: once it is gone, the op's own node stands there
        outputs = [s for s in node.saved if s is not None and getattr(s, "is_output", False)]
        view_fn = weakref.ref(view.grad_fn) if outputs else None
        for saved in outputs:
            saved.counter, saved.version = base._vc, base._vc[0]
            saved.view_fn = view_fn
            if saved.data is not None and saved.data.shape == view.data_.shape:
                saved.data = view.data_  # the view's memory (`.data` writes show)
    # the view (sharing the base's version counter) re-derives its node now, as
    # PyTorch's rebase_history does (its other views when next read)
    view.grad_fn  # noqa: B018
    return view


def _with_values(t: Tensor, index: Any, v: Tensor, dtype: np.dtype) -> Tensor:
    """t with `index` overwritten by v, out of place (setitem's op on a view)."""
    parts = index if isinstance(index, tuple) else (index,)
    node = F.CopySlices if _py.all(_is_basic(p) for p in parts) else F.IndexPut
    return node.apply(t, v, index=index, dtype=dtype)


def _refuse_zero_write(a: Tensor, idx: Any, v: Tensor | None, sliced: bool, whole: bool) -> None:
    """PyTorch's error for `a[idx] = value` on an efficient zero, in the wording of the
    op it writes with: copy_ for values of the target's shape, fill_ for one value into
    several elements, index_put_ (fill_'s wording) for array indices."""
    from .tensor import ZERO_IMMUTABLE, ZERO_IMMUTABLE_COPY

    if sliced:
        target = a.data_[idx if isinstance(idx, tuple) else (idx,)]
        one_value = v is None or v.data_.ndim == 0
        if not (one_value and (whole or target.ndim > 0)):
            raise RuntimeError(ZERO_IMMUTABLE_COPY)
    raise RuntimeError(ZERO_IMMUTABLE)


def setitem(a: Tensor, index: Any, value: Any) -> None:
    """a[index] = value, in place (CopySlices when recorded)."""
    parts = _convert_index(index)
    idx = parts if len(parts) != 1 else parts[0]
    advanced = not _py.all(_is_basic(p) for p in parts)
    v = value if isinstance(value, Tensor) else None
    # PyTorch's order: the value, the slicing, the value's shape, then the in-place checks
    if v is None and not isinstance(value, (int, float, bool)):  # a list too, as in torch
        raise TypeError(f"can't assign a {type(value).__name__} to a torch.{a.dtype.legacy}")
    if index is False:
        return  # PyTorch assigns nothing, and checks nothing more
    whole = _check_subscript(a.data_.shape, parts)
    # a 0-d bool index is slicing to PyTorch (an unsqueeze), not an array index; a
    # Python bool even has the value's shape checked first, as for basic slicing
    sliced = not advanced or _py.all(_is_basic(p) or _is_0d_mask(p) for p in parts)
    raw = _index_parts(index)
    shape_first = sliced and _py.all(
        _is_basic(p) or type(r) is bool for p, r in zip(parts, raw, strict=True)
    )
    if sliced and not whole and grad_mode.state.enabled and a.data_.dtype.kind not in "fc":
        if a.requires_grad:  # (by a fill_ of a float that does) PyTorch's view `a[index]`
            raise RuntimeError(dtype_refusal(a.data_))  # records, and refuses that
    if v is not None and shape_first:
        _check_copy_shape(v, a.data_[idx if isinstance(idx, tuple) else (idx,)].shape)
    if type(a._vc) is ZeroCounter:
        _refuse_zero_write(a, idx, v, sliced, whole)
    # a copy_ of a tensor into a non-float tensor that does not require grad records
    # nothing, so PyTorch checks nothing; a 0-d value is a fill_ (which records) unless
    # the place written has its shape, which is a copy_ again
    untracked = sliced and a.data_.dtype.kind not in "fc" and not a.requires_grad
    copies = (
        untracked
        and v is not None
        and (v.data_.ndim or a.data_[idx if isinstance(idx, tuple) else (idx,)].ndim == 0)
    )
    if grad_mode.state.enabled and not (untracked and copies):
        # PyTorch's check_inplace: a restricted view's error first, then the leaf's
        if a._creation and sliced and not whole:
            # PyTorch writes through a view `a[index]`, which is the one it names (a 0-d
            # mask being an unsqueeze there, as None is); a whole subscript is `a` itself
            view_idx = tuple(None if _is_0d_mask(p) else p for p in parts)
            getitem(a, view_idx if len(view_idx) != 1 else view_idx[0])._check_inplace((v,))
        elif a._creation:
            a._check_inplace((v,))
        if sliced and not whole:
            a.grad_fn  # noqa: B018 - PyTorch takes the view a[index] first: it derives a's node
        if a._grad_fn is None and a._requires_grad:
            # PyTorch writes into the leaf itself for a whole-tensor subscript and for
            # array indices, else through a view of it; a leaf that is itself a view
            # (made to require grad) is named as one
            itself = (whole or not sliced) and a._base is None
            raise RuntimeError(
                ("a leaf Variable" if itself else "a view of a leaf Variable")
                + " that requires grad is being used in an in-place operation."
            )
        a._check_inplace((v,))
    if not sliced:
        _fancy_index(a, parts)  # PyTorch's index errors (bounds, masks)
        mask_fill = len(parts) == 1 and _is_mask(parts[0]) and v is not None and not v.data_.ndim
        if v is not None and v.data_.dtype != a.data_.dtype and not mask_fill:
            raise RuntimeError(
                "Index put requires the source and destination dtypes match, got "
                f"{_legacy_name(a)} for the destination and {_legacy_name(v)} for the source."
            )
        _warn_expanded(a, parts, v)
    elif advanced:
        # 0-d masks: True adds a dim of size 1 (as None does), False one of size 0, which
        # PyTorch still writes through (a CopySlices that changes nothing; NumPy's own
        # 0-d mask makes that empty selection)
        parts = tuple(None if _is_0d_mask(p) and bool(p) else p for p in parts)
        idx = parts if len(parts) != 1 else parts[0]
        advanced = whole = False
    record = grad_mode.state.enabled and (a.requires_grad or (v is not None and v.requires_grad))
    # PyTorch writes `value` into the slice with copy_ when the shapes are equal and with
    # fill_ when it is a 0-d tensor; a copy_ into a non-float tensor records nothing
    fills = False
    if not advanced and v is not None and not v.data_.ndim:
        fills = a.data_[idx if isinstance(idx, tuple) else (idx,)].ndim > 0
    record = record and (advanced or fills or a.dtype.is_floating_point)
    if v is not None and not advanced and v.data_.ndim and v.data_.shape[0] == 1:
        # PyTorch drops the value's leading size-1 dims when the shapes differ
        target_shape = a.data_[idx if isinstance(idx, tuple) else (idx,)].shape
        if v.data_.shape != target_shape:
            shape = v.data_.shape
            k = next((i for i, n in enumerate(shape) if n != 1), len(shape))
            v = reshape(v, shape[k:])
    if record and whole and not advanced:
        # a subscript that keeps every element is no view to PyTorch: `a[:] = 2` is
        # a.fill_(2) (FillBackward3), `a[...] = t` is a.copy_(t) (CopyBackwards), and so
        # is a number into a 0-d tensor (the shapes are equal)
        if v is None and not a.data_.ndim:
            a.copy_(_scalar_tensor(value, a.dtype))
        elif v is None:  # the number arrives as a 0-d tensor, as PyTorch wraps it
            a.fill_(_scalar_tensor(value, a.dtype))
        elif fills:
            a.fill_(v)
        else:  # (the value expanded to the target's shape first, as PyTorch's copy_to)
            a.copy_(v if v.data_.shape == a.data_.shape else expand(v, a.data_.shape))
        return
    if v is a and whole and not advanced:  # PyTorch's copy_ of a tensor into itself
        a._vc[0] += 1
        return
    if not advanced:
        target = subscript_view(a.data_, idx)
        if v is not None and not fills and not record and _same_memory(target, v.data_, True):
            # PyTorch's copy_ kernel leaves a view of the same data alone (its autograd
            # layer, before it, still records CopySlices)
            a._vc[0] += 1
            return
        check_no_overlap(target)
        if not fills:  # (a 0-d value is a fill_, which reads it once: no overlap check)
            check_no_partial_overlap(target, (v,), expanded=True)
    if not record:
        a.data_[idx] = v.data_ if v is not None else value
        a._vc[0] += 1
        return
    from .tensor import _adopt_node

    vt = v if v is not None else _scalar_tensor(value, a.dtype)
    if a._base is not None and not advanced:
        # PyTorch writes through the view a[idx] (copy_, or fill_ for a 0-d value), so
        # an expanded `a` changes only where that view points (a False 0-d mask's is an
        # empty view, which NumPy's selection, a copy, is not)
        sub = getitem(getitem(a, None), slice(0, 0)) if _is_0d_mask(idx) else getitem(a, idx)
        if v is None or fills:
            sub.fill_(vt)
        else:  # (the value expanded to the target's shape first, as PyTorch's copy_to)
            sub.copy_(vt if vt.data_.shape == sub.data_.shape else expand(vt, sub.data_.shape))
        return
    if a._base is not None:
        dt = a.data_.dtype
        # (index_put_ only warns of expanded memory, which _warn_expanded did)
        a._inplace(
            lambda t_, v_: _with_values(t_, idx, v_, dt),
            vt,
            _overlap_ok=True,
            _store=lambda memory: memory.__setitem__(idx, vt.data_),  # in index order
        )
        return
    if not advanced and v is not None and not fills and v.data_.shape != target.shape:
        vt = expand(vt, target.shape)  # PyTorch's copy_to expands the value first
    snapshot = Tensor._make(a.data_.copy(), a._requires_grad, a.grad_fn, a._vc, a._output_nr)
    snapshot._acc = a._acc
    if advanced:  # index_put_, an in-place kernel (no dtype check, as in PyTorch)
        with recording_in_place():
            out = F.IndexPut.apply(snapshot, vt, index=idx, dtype=a.data_.dtype)
    else:  # (PyTorch's basic subscript is a view first, refused for an integer a)
        out = F.CopySlices.apply(snapshot, vt, index=idx, dtype=a.data_.dtype)
    a.data_[...] = out.data_
    a._vc[0] += 1
    _adopt_node(a, out)


def _same_memory(x: np.ndarray, y: np.ndarray, expanded: bool = False) -> bool:
    """Whether two arrays are the same elements of the same memory (copy_'s early exit);
    `expanded`: y first expanded to x's shape (setitem's value, as PyTorch's copy_to)."""
    if expanded and y.shape != x.shape:
        if y.ndim > x.ndim:
            return False
        y_strides = copy_to_strides(y, x.shape)
    else:
        y_strides = torch_strides(y) if x.shape == y.shape else None
    return (
        x.__array_interface__["data"][0] == y.__array_interface__["data"][0]
        and torch_strides(x) == y_strides
        and x.dtype == y.dtype
    )


# ************************************************************ nn functions


def softmax(a: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """exp(a) / sum(exp(a)) along dim."""
    if dtype is not None:
        a = to_dtype(a, dtype)
    d = _implicit_dim(a, dim)
    return F.Softmax.apply(a, dim=d)


def log_softmax(a: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """a - logsumexp(a) along dim."""
    if dtype is not None:
        a = to_dtype(a, dtype)
    d = _implicit_dim(a, dim)
    return F.LogSoftmax.apply(a, dim=d)


def _implicit_dim(a: Tensor, dim: int | None) -> int:
    if dim is None:
        nd = a.data_.ndim
        dim = 0 if nd in (0, 1, 3) else 1
    return _norm_dim(dim, a.data_.ndim)


def _reduction(reduction: str, size_average: Any = None, reduce: Any = None) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error."""
    _warn_target_size(input, target)
    ta, tb, dt = _binary(input, target)
    r = _reduction(reduction)
    if _node.prof_hook is not None:  # a profile is open: PyTorch's ranges for this reduction
        _node.prof.emit(_names.parse_roots("aten::broadcast_tensors"))
        _profiler.rename_next(_names.MSE_SPECS.get(r, "aten::mse_loss"))
    return F.MseLoss.apply(ta, tb, reduction=r, dtype=dt)


def _warn_target_size(input: Tensor, target: Tensor) -> None:
    """PyTorch's warning for a loss whose target broadcasts against the input."""
    if input.data_.shape != target.data_.shape:
        from .config import config

        config.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size."
        )


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error (PyTorch composes it from abs and mean)."""
    _warn_target_size(input, target)
    d = abs(sub(input, target))
    r = _reduction(reduction)
    if r == "mean":
        return mean(d)
    if r == "sum":
        return sum(d)
    return d


def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """0.5 d²/beta where |d| < beta, |d| - beta/2 elsewhere (d = input - target)."""
    _warn_target_size(input, target)
    ta, tb, dt = _binary(input, target)
    r = _reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:  # PyTorch's l1_loss then
        return l1_loss(input, target, r)
    if np.dtype(dt).kind not in "fc":
        raise NotImplementedError(f"\"smooth_l1_cpu\" not implemented for '{_legacy_name(ta)}'")
    return F.SmoothL1Loss.apply(ta, tb, reduction=r, k=float(beta), dtype=dt)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0
) -> Tensor:
    """0.5 d² where |d| < delta, delta (|d| - delta/2) elsewhere (d = input - target);
    the result has the input's dtype, as PyTorch's kernel writes it."""
    _warn_target_size(input, target)
    ta, tb, dt = _binary(input, target)
    r = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    own = input.data_.dtype
    if dt != own:
        if not np.can_cast(dt, own, "same_kind"):
            raise RuntimeError(
                f"result type {_legacy_name_of(dtypes.of_array(np.empty(0, dt)))} can't be "
                f"cast to the desired output type {_legacy_name(input)}"
            )
        dt = own  # computed in the input's dtype (the backward then refuses the target)
    if np.dtype(dt).kind not in "fc":
        raise NotImplementedError(f"\"huber_cpu\" not implemented for '{_legacy_name(ta)}'")
    return F.HuberLoss.apply(ta, tb, reduction=r, k=float(delta), dtype=dt)


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """-(t log p + (1 - t) log(1 - p))"""
    if input.data_.shape != target.data_.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if isinstance(weight, Tensor):
        _check_weight_broadcasts(target.data_.shape, weight.data_.shape)
    _check_no_requires_grad(weight, "weight", "binary_cross_entropy")
    if isinstance(weight, Tensor):
        wide = np.broadcast_shapes(target.data_.shape, weight.data_.shape)
        if wide != input.data_.shape:  # the weight may not widen the loss
            raise RuntimeError(
                f"output with shape {list(input.data_.shape)} doesn't match the broadcast "
                f"shape {list(wide)}"
            )
    dt = input.data_.dtype
    if target.data_.dtype != dt:  # PyTorch refuses to convert the target
        raise RuntimeError(
            f"Found dtype {target.dtype.legacy.replace('Tensor', '')} but expected "
            f"{input.dtype.legacy.replace('Tensor', '')}"
        )
    return F.BinaryCrossEntropy.apply(
        input, target, weight=weight, reduction=_reduction(reduction), dtype=dt
    )


def _check_weight_broadcasts(target: tuple[int, ...], weight: tuple[int, ...]) -> None:
    """PyTorch's binary_cross_entropy first infers the size target and weight broadcast
    to (dims from the last), refusing sizes that cannot meet, before it checks more."""
    nd = _py.max(len(target), len(weight))
    padded = (1,) * (nd - len(target)) + tuple(target)
    w = (1,) * (nd - len(weight)) + tuple(weight)
    for i in range(nd - 1, -1, -1):
        if padded[i] != w[i] and padded[i] != 1 and w[i] != 1:
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {w[i]} at {i - nd}! "
                f"Mismatching argument at index 1 had torch.Size({list(weight)}); but "
                f"expected shape should be broadcastable to {list(padded)}"
            )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class indices."""
    if target.data_.dtype not in (np.int64, np.uint8):
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got "
            + target.dtype.legacy.replace("Tensor", "")
        )
    if input.data_.ndim >= 2 and input.data_.shape[0] != target.data_.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.data_.shape[0]}) to match target batch_size "
            f"({target.data_.shape[0]})."
        )
    if weight is not None:
        fn = "nll_loss2d_forward" if input.data_.ndim >= 3 else "nll_loss_forward"
        _check_no_requires_grad(weight, "weight", fn)
        _check_nll_weight(input, weight)
    if _node.prof_hook is not None:  # a profile is open: aten::nll_loss_nd around it
        return _profiler.within(
            "aten::nll_loss_nd", _nll_loss, input, target, weight, ignore_index, reduction
        )
    return _nll_loss(input, target, weight, ignore_index, reduction)


def _nll_loss(
    input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str
) -> Tensor:
    return F.NllLoss.apply(
        input,
        weight=weight,
        target=target.data_,
        reduction=_reduction(reduction),
        ignore_index=ignore_index,
        kept=(target,) if weight is None else (target, weight),
    )


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably from logits."""
    r = _reduction(reduction, size_average, reduce)
    if input.data_.shape != target.data_.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    dt = dtypes.result_type(input, target)
    if weight is not None:
        _broadcast_check(np.empty(input.data_.shape, bool), weight.data_)
    if pos_weight is not None:
        _broadcast_check(np.empty(input.data_.shape, bool), pos_weight.data_)
    return F.BinaryCrossEntropyWithLogits.apply(
        input, target, weight=weight, pos_weight=pos_weight, reduction=r, dtype=dt.np
    )


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of `weight` at the integer indices `input` (EmbeddingBackward0)."""
    if padding_idx is not None:
        n = weight.data_.shape[0]
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += n
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "adcli does not support embedding with max_norm, scale_grad_by_freq or sparse yet"
        )
    idx = input.data_
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{input.dtype.legacy} instead (while checking "
            "arguments for embedding)"
        )
    n = weight.data_.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    check_numel(idx.size * math.prod(weight.data_.shape[1:]))
    return F.Embedding.apply(weight, indices=idx.astype(np.int64), padding_idx=padding_idx)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x1^T W x2 (+ bias) over the last dims (TrilinearBackward0, ViewBackward0, Add)."""
    s1, s2 = input1.data_.shape, input2.data_.shape
    if input1.data_.ndim != input2.data_.ndim:
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.data_.ndim} and "
            f"{input2.data_.ndim}"
        )
    if s1[:-1] != s2[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match")
    o, i, j = weight.data_.shape
    if s1[-1] != i:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {s1[-1]} but expected {i}"
        )
    if s2[-1] != j:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {s2[-1]} but expected {j}"
        )
    lead = s1[:-1]
    n = math.prod(lead)
    check_numel(n * o)
    dt = dtypes.result_type(input1, weight, input2).np
    core = F.Trilinear.apply(
        reshape(input1, (n, i)), weight, reshape(input2, (n, j)), spec="ni,oij,nj->no", dtype=dt
    )
    out = view(core, lead + (o,))
    return out if bias is None else add(out, bias)


def _check_no_requires_grad(t: Tensor | None, arg: str, fn: str) -> None:
    """PyTorch refuses, while recording, an argument it has no derivative for."""
    if t is not None and grad_mode.state.enabled and t.requires_grad:
        raise RuntimeError(
            f"The function '{fn}' is not differentiable with respect to argument '{arg}'. "
            "This input cannot have requires_grad True."
        )


def _check_nll_weight(input: Tensor, weight: Tensor) -> None:
    """One weight per class, of the input's dtype (PyTorch's nll_loss checks)."""
    n_classes = input.data_.shape[1 if input.data_.ndim >= 2 else 0] if input.data_.ndim else 1
    if weight.data_.ndim != 1 or weight.data_.size != n_classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.data_.shape)}"
        )
    if weight.data_.dtype != input.data_.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype.legacy.replace('Tensor', '')} but found "
            f"{weight.dtype.legacy.replace('Tensor', '')}"
        )


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """nll_loss(log_softmax(input, 1), target); a target of input's shape holds class
    probabilities; label_smoothing mixes in the uniform distribution (PyTorch's
    composite, node for node)."""
    r = _reduction(reduction)
    dim = 1 if input.data_.ndim >= 2 else 0
    if input.data_.shape == target.data_.shape:
        if target.data_.dtype.kind != "f":
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                + target.dtype.legacy.replace("Tensor", "")
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, r, label_smoothing, dim)
    if label_smoothing > 0.0:
        _check_label_smoothing(label_smoothing)
        return _cross_entropy_smoothed(input, target, weight, ignore_index, r, label_smoothing, dim)
    if _node.prof_hook is not None:  # a profile is open: PyTorch's composite's ranges
        return _profiler.within(
            "aten::cross_entropy_loss",
            _profiled_cross_entropy,
            input,
            target,
            weight,
            ignore_index,
            r,
            dim,
        )
    return nll_loss(log_softmax(input, dim), target, weight, ignore_index, r)


def _profiled_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, r: str, dim: int
) -> Tensor:
    # (log_softmax with a dtype argument inside the composite: a `to` first)
    _profiler.rename_next("aten::log_softmax(aten::to,aten::_log_softmax)")
    return nll_loss(log_softmax(input, dim), target, weight, ignore_index, r)


def _check_label_smoothing(ls: float) -> None:
    if ls > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {ls:g}")


def _class_weight(weight: Tensor, ndim: int, dim: int) -> Tensor:
    """The weights viewed to broadcast along the class dim."""
    shape = [1] * ndim
    shape[dim] = weight.data_.shape[0]
    return view(weight, tuple(shape)) if ndim > 1 else weight


def _cross_entropy_probs(
    input: Tensor, target: Tensor, weight: Tensor | None, r: str, ls: float, dim: int
) -> Tensor:
    """PyTorch's cross_entropy_loss_prob_target: -sum(log_softmax * target * weight)."""
    n_classes = input.data_.shape[dim]
    if weight is not None and (weight.data_.ndim != 1 or weight.data_.size != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes "
            f"or no classes but got weight tensor of shape: {list(weight.data_.shape)}"
        )
    logp = log_softmax(input, dim)
    if ls > 0.0:
        _check_label_smoothing(ls)
        target = F.AddScalar.apply(F.MulScalar.apply(target, other=1 - ls), other=ls / n_classes)
    prod_ = mul(logp, target)
    if weight is not None:
        prod_ = mul(prod_, _class_weight(weight, input.data_.ndim, dim))
    if r == "none":
        return neg(sum_dims(prod_, (dim,), False))
    total = sum(prod_)
    if r == "sum":
        return neg(total)
    if not input.data_.size:
        return neg(total.fill_(math.nan))
    return F.DivScalar.apply(neg(total), other=input.data_.size // n_classes)


def _cross_entropy_smoothed(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    r: str,
    ls: float,
    dim: int,
) -> Tensor:
    """PyTorch's cross_entropy_loss_label_smoothing: (1 - ls) * nll_loss + ls / C times
    the loss against the uniform distribution (ignored targets left out)."""
    logp = log_softmax(input, dim)
    nll = nll_loss(logp, target, weight, ignore_index, r)
    n_classes = logp.data_.shape[dim]
    scaled = logp if weight is None else mul(logp, _class_weight(weight, input.data_.ndim, dim))
    ignored = target.data_ == ignore_index
    smooth = masked_fill(neg(sum_dims(scaled, (dim,), False)), Tensor._make(ignored), 0.0)
    if r == "mean":
        kept = target.data_[~ignored].reshape(-1)
        # normalised as nll_loss is: by the kept targets' weights, or their count
        denom = (
            sum(Tensor._make(weight.data_[kept]))
            if weight is not None
            else Tensor._make(np.asarray(kept.size, np.int64))
        )
        smooth = div(sum(smooth), denom)
    elif r == "sum":
        smooth = sum(smooth)
    return add(
        F.MulScalar.apply(nll, other=1 - ls), F.MulScalar.apply(smooth, other=ls / n_classes)
    )


def dropout(a: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p), with
    PyTorch's random numbers: a mask from bernoulli_(1 - p), i.e. a float64 uniform draw
    per element below 1 - p (MulBackward0).  The input itself when not training."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or a.data_.size == 0:
        return a
    dt = a.data_.dtype
    if p == 1:
        noise = np.zeros((), dt)
    else:
        from . import random as _rng

        keep = _rng.default_generator._uniform01(a.data_.size, "float64") < (1 - p)
        noise = in_memory_order(keep.astype(dt) / np.asarray(1 - p, dt), a.data_)
    if inplace:
        return a._inplace(lambda t: mul(t, Tensor._make(noise)))
    return mul(a, Tensor._make(noise))


def dropout2d(a: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels with probability p and scale the rest by 1 / (1 - p): one
    bernoulli_(1 - p) draw per (sample, channel), PyTorch's feature noise shaped
    (N, C, 1, 1), multiplied in (MulBackward0). A 3-D input is taken as (N, C, L), with
    PyTorch's warning; other ranks warn and drop the same way."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    nd = a.data_.ndim
    if nd not in (3, 4):
        _config.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs)."
        )
    elif nd == 3:
        _config.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead."
        )
    if nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0 or a.data_.size == 0:
        return a
    dt = a.data_.dtype
    if p == 1:
        noise = np.zeros((), dt)
    else:
        from . import random as _rng

        shape = a.data_.shape[:2] + (1,) * (nd - 2)
        keep = _rng.default_generator._uniform01(math.prod(shape), "float64") < (1 - p)
        noise = (keep.astype(dt) / np.asarray(1 - p, dt)).reshape(shape)
    if inplace:
        return a._inplace(lambda t: mul(t, Tensor._make(noise)))
    return mul(a, Tensor._make(noise))


def in_memory_order(flat: np.ndarray, like: np.ndarray) -> np.ndarray:
    """`flat` laid out as PyTorch's empty_like(like) is filled in memory order: its dims
    ordered by like's strides (infer_dense_strides: a stable insertion sort, stride-0
    dims staying where they are, equal strides putting the smaller size inner)."""
    outer = dense_order(like.shape, like.strides)
    out = flat.reshape([like.shape[d] for d in outer])
    return np.transpose(out, np.argsort(outer))


# ************************************************************ in-place helpers


def zero_like(t: Tensor) -> Tensor:
    """Zeros shaped like t (the value of `t.zero_()`), recorded as ZeroBackward0."""
    return F.ZeroFill.apply(t)


def fill_like(t: Tensor, v: Any) -> Tensor:
    """`v` everywhere, shaped like t (the value of `t.fill_(v)`)."""
    if isinstance(v, Tensor):
        return F.FillTensor.apply(t, v)
    return F.FillScalar.apply(t, value=v)


def copy_from(t: Tensor, src: Tensor) -> Tensor:
    """src broadcast to t's shape and dtype (the value of `t.copy_(src)`)."""
    if isinstance(src, (bool, int, float, np.number)):  # a number is a 0-d source
        src = Tensor._make(np.asarray(src))
    if not isinstance(src, Tensor):
        raise TypeError(
            f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}"
        )
    _broadcast_check(t.data_, src.data_)
    check_output_shape(t.data_.shape, src.data_.shape)
    return F.CopyFrom.apply(t, src)


# ************************************************************ factories


def _infer_dtype(values: Any) -> DType:
    kinds = set()
    stack_ = [values]
    while stack_:
        v = stack_.pop()
        if isinstance(v, (list, tuple)):
            stack_.extend(v)
        elif isinstance(v, Tensor):
            kinds.add(v.dtype.category)
        elif isinstance(v, bool):
            kinds.add(0)
        elif isinstance(v, int):
            kinds.add(1)
        elif isinstance(v, float):
            kinds.add(2)
        else:
            raise TypeError(f"new(): invalid data type '{_type_name(v)}'")
    if not kinds:
        return dtypes.DEFAULT_FLOAT
    return dtypes.default_for_category(_py.max(kinds))


def _to_nested(values: Any) -> Any:
    if isinstance(values, Tensor):
        return values.data_.tolist() if values.data_.ndim else values.data_.item()
    if isinstance(values, (list, tuple)):
        return [_to_nested(v) for v in values]
    return values


def _dtype_arg(dtype: Any) -> DType | None:
    if dtype is None or isinstance(dtype, DType):
        return dtype
    # PyTorch takes Python's types too (dtype=int); `ad_type` is the real type behind a
    # host's stand-in for it
    py = {float: dtypes.float64, int: dtypes.int64, bool: dtypes.bool_}.get(
        getattr(dtype, "ad_type", dtype)
    )
    if py is not None:
        return py
    raise TypeError(f"dtype must be a torch.dtype, not {_type_name(dtype)}")


def _finish(data: np.ndarray, requires_grad: bool) -> Tensor:
    check_numel(data.size)
    out = Tensor._make(data)
    if requires_grad:
        if data.dtype.kind not in "fc":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        out._requires_grad = True
    return out


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """A new leaf tensor from nested lists (or a tensor, copied)."""
    dt = _dtype_arg(dtype)
    if isinstance(data, Tensor):
        from .config import config

        config.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True), "
            "rather than torch.tensor(sourceTensor)."
        )
        arr = data.data_.astype(dt.np if dt else data.data_.dtype, copy=True)
        return _finish(arr, requires_grad)
    if isinstance(data, (np.ndarray, np.generic)):  # a NumPy array keeps its dtype (copied)
        arr = np.array(data, copy=True)
        return _finish(arr.astype((dt or dtypes.of_array(arr)).np), requires_grad)
    if isinstance(data, (list, tuple)):
        check_numel(_first_path_numel(data))  # before walking lists that repeat one list
        _check_ragged(data)
    inferred = dt or _infer_dtype(data)
    try:
        arr = np.array(_to_nested(data), dtype=inferred.np)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not build a tensor from the given data: {e}") from None
    return _finish(arr, requires_grad)


def _first_path_numel(data: Any) -> int:
    """The element count of nested lists as their first items say (`_check_ragged`
    then holds every other list to those lengths, so no walk goes further)."""
    n = 1
    v = data
    while isinstance(v, (list, tuple)) and v:
        n *= len(v)
        v = v[0]
    if isinstance(v, Tensor):
        n *= v.data_.size
    return n


def _check_ragged(data: Any) -> None:
    stack_ = [(data, 0)]
    lens: dict[int, int] = {}
    while stack_:
        v, depth = stack_.pop()
        if isinstance(v, (list, tuple)):
            n = len(v)
            if lens.setdefault(depth, n) != n:
                raise ValueError(
                    f"expected sequence of length {lens[depth]} at dim {depth} (got {n})"
                )
            stack_.extend((x, depth + 1) for x in reversed(v))  # first item first, as torch


def from_array(arr: np.ndarray) -> Tensor:
    """A tensor sharing a NumPy array's memory, as PyTorch's `from_numpy` makes one."""
    if _py.any(st < 0 for st in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().) "
        )
    if _py.any(st % arr.itemsize for st in arr.strides):
        raise ValueError(
            "given numpy array strides not a multiple of the element byte size. Copy the "
            "numpy array to reallocate the memory."
        )
    if not arr.flags.writeable:
        _config.warn(NOT_WRITABLE_WARNING)
    # A view of the array, not the array: the tensor keeps its own ndarray object, so
    # nothing done to `arr` itself (resize, a new shape) reaches the tensor.
    return _finish(arr.view(), False)


NOT_WRITABLE_WARNING = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable "
    "tensors. This means writing to this tensor will result in undefined behavior. You may "
    "want to copy the array to protect its data or make it writable before converting it to "
    "a tensor. This type of warning will be suppressed for the rest of this program. "
    "(Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:213.)"
)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`torch.as_tensor`: the tensor itself, or one sharing a NumPy array's memory, where
    no conversion is needed; otherwise a converted tensor (differentiable from a tensor)
    or a new one."""
    dt = _dtype_arg(dtype)
    if isinstance(data, Tensor):
        return data if dt is None else to_dtype(data, dt)
    if isinstance(data, np.ndarray) and (data.dtype.kind in "bif" or data.dtype == np.uint8):
        shared = from_array(data)  # PyTorch refuses negative strides even when converting
        return shared if dt is None else to_dtype(shared, dt)
    return tensor(data, dt)


def _factory_shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    s = _shape_arg(size)
    for n in s:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
    check_numel(math.prod(s))
    return s


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Zeros of the given shape."""
    dt = _dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    return _finish(np.zeros(_factory_shape(size), dt.np), requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Ones of the given shape."""
    dt = _dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    return _finish(np.ones(_factory_shape(size), dt.np), requires_grad)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """Uninitialised in PyTorch; zeros here (deterministic)."""
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def full(
    size: Any, fill_value: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    """`fill_value` everywhere (dtype inferred from the value)."""
    dt = _dtype_arg(dtype) or dtypes.default_for_category(dtypes.scalar_category(fill_value))
    shape = _factory_shape((size,) if isinstance(size, int) else tuple(size))
    return _finish(np.full(shape, fill_value, dt.np), requires_grad)


def _like(t: Tensor, dtype: Any, name: str) -> DType:
    if not isinstance(t, Tensor):  # (a hook's None gradient, say)
        raise TypeError(
            f"{name}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}"
        )
    return _dtype_arg(dtype) or t.dtype


def zeros_like(t: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros shaped like t."""
    dt = _like(t, dtype, "zeros_like")
    return _finish(_filled_like(t.data_, 0, dt.np), requires_grad)


def empty_like(t: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Shaped like t; uninitialised in PyTorch, zeros here (deterministic, as `empty`)."""
    dt = _like(t, dtype, "empty_like")
    return _finish(_filled_like(t.data_, 0, dt.np), requires_grad)


def ones_like(t: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones shaped like t."""
    dt = _like(t, dtype, "ones_like")
    return _finish(_filled_like(t.data_, 1, dt.np), requires_grad)


def full_like(t: Tensor, fill_value: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """`fill_value` shaped like t."""
    dt = _like(t, dtype, "full_like")
    return _finish(_filled_like(t.data_, fill_value, dt.np), requires_grad)


def _filled_like(x: np.ndarray, value: Any, dt: np.dtype) -> np.ndarray:
    """`value` in x's shape, laid out as PyTorch's *_like functions lay it out (they
    preserve the input's memory format: a transposed input gives a transposed result,
    which a later reshape then copies rather than views)."""
    if x.ndim < 2 or x.flags.c_contiguous or not x.size:
        return np.full(x.shape, value, dt)
    return in_memory_order(np.full(x.size, value, dt), x)


def eye(n: int, m: int | None = None, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Identity matrix."""
    dt = _dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    check_numel(n * (m if m is not None else n))
    return _finish(np.eye(n, m, dtype=dt.np), requires_grad)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    """Evenly spaced values in [start, end)."""
    if end is None:
        start, end = 0, start
    vals = [_num(start), _num(end), _num(step)]
    dt = _dtype_arg(dtype)
    if dt is not None and dt.np == np.bool_:  # PyTorch's kernel has no bool version
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    a, b, s = vals
    if not (s > 0 or s < 0):  # a NaN step too, as PyTorch checks it
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(a) and math.isfinite(b)):
        raise RuntimeError(f"unsupported range: {a:g} -> {b:g}")
    if (s > 0 and b < a) or (s < 0 and b > a):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt is None:
        dt = dtypes.DEFAULT_FLOAT if builtins_any_float(vals) else dtypes.int64
    n = _py.max(0, math.ceil((b - a) / s))
    check_numel(n)
    data = (
        ranges.arange_values(float(a), float(s), n, dt.np)
        if dt.is_floating_point
        else (np.arange(a, b, s, dtype=np.int64))
    )
    return _finish(np.asarray(data, dt.np), requires_grad)


def range_inclusive(
    start: Any,
    end: Any,
    step: Any = 1,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    """`torch.range`, deprecated: values from start to end inclusive, in the default
    float dtype unless `dtype` says otherwise, each `start + i * step` in double."""
    _config.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end)."
    )
    a, b, s = (_num(v) for v in (start, end, step))
    if s == 0:
        raise RuntimeError("step must be nonzero")
    if (s > 0 and b < a) or (s < 0 and b > a):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dt = _dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    n = int(math.floor((b - a) / s)) + 1
    check_numel(n)
    if dt.is_floating_point:
        data = (float(a) + np.arange(n, dtype=np.float64) * float(s)).astype(dt.np)
    else:
        data = (int(a) + np.arange(n, dtype=np.int64) * int(s)).astype(dt.np)
    return _finish(data, requires_grad)


range_inclusive.__name__ = range_inclusive.__qualname__ = "range"


def builtins_any_float(vals: list[Any]) -> bool:
    """True when some value is a Python float."""
    return _py.sum(1 for v in vals if isinstance(v, float)) > 0


def _num(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) else v


def linspace(
    start: Any, end: Any, steps: int, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive."""
    dt = _dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    if dt.np == np.bool_ and steps > 1:  # PyTorch's kernel (run for 2+ steps) has no bool
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    check_numel(steps)
    s, e = float(_num(start)), float(_num(end))
    return _finish(ranges.linspace_values(s, e, steps, dt.np), requires_grad)


# ************************************************************ Tensor methods

# Methods that are the ops above with the tensor as first argument.
# ************************************************************ tutorial ops (issue 12)
# unflatten, broadcast_to, tril/triu, hstack/vstack/row_stack/column_stack, cumprod,
# roll, atan2: each as PyTorch 2.13 has it (values, grad_fn, views, error sentences).


def _int_arg(fn: str, arg: str, pos: int, v: Any) -> int:
    """An int argument, or PyTorch's argument parser error."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be int, not {_type_name(v)}"
        )
    return int(v)


def _int_tuple(fn: str, arg: str, pos: int, v: Any, one_ok: bool = True) -> tuple[int, ...]:
    """A tuple-of-ints argument (a lone int allowed when `one_ok`), or PyTorch's error."""
    if one_ok and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    ok = isinstance(v, (list, tuple)) and _py.all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v
    )
    if not ok:
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not {_type_name(v)}"
        )
    return tuple(int(e) for e in v)


def unflatten(input: Tensor, dim: int, sizes: Any, _method: bool = False) -> Tensor:
    """Dim `dim` split into `sizes` (one -1 inferred): a view (ViewBackward0)."""
    sizes_t = _int_tuple("unflatten", "sizes", 2 if _method else 3, sizes, one_ok=False)
    if not sizes_t:
        raise RuntimeError("unflatten: sizes must be non-empty")
    x = input.data_
    d = _norm_dim(_int_arg("unflatten", "dim", 1 if _method else 2, dim), x.ndim)
    if x.ndim == 0:
        raise RuntimeError(
            "unflatten got an unexpected error:\nDimension specified as 0 but tensor has no "
            "dimensions"
        )
    n = x.shape[d]
    unexpected = "unflatten got an unexpected error:\n"
    for i, s in enumerate(sizes_t):
        if s < -1:
            raise RuntimeError(
                f"{unexpected}invalid shape dimension {s} at index {i} of shape {list(sizes_t)}"
            )
    try:
        resolved = _resolve_shape(sizes_t, n)
    except RuntimeError as e:
        if str(e).startswith("shape '"):  # infer_size's std::runtime_error, reworded
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes_t)} don't multiply up to the size of "
                f"dim {d} ({n}) in the input tensor"
            ) from None
        raise RuntimeError(unexpected + str(e)) from None
    shape = x.shape[:d] + resolved + x.shape[d + 1 :]
    return _view_of(input, F.View.apply(input, shape=shape))


def broadcast_to(input: Tensor, size: Any) -> Tensor:
    """`input` expanded to `size` (-1 keeps a size): expand's view (ExpandBackward0)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"broadcast_to(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    return expand(input, _int_tuple("broadcast_to", "size", 2, size))


def _broadcast_to_method(self: Tensor, *size: Any, **kw: Any) -> Tensor:
    """`x.broadcast_to(2, 3)`, `x.broadcast_to((2, 3))` or `x.broadcast_to(size=(2, 3))`."""
    if "size" in kw and not size:
        size = (kw.pop("size"),)
    if kw:
        name = next(iter(kw))
        raise TypeError(f"broadcast_to() got an unexpected keyword argument '{name}'")
    return expand(self, *size)


def _triangle(name: str, input: Tensor, diagonal: Any, method: bool) -> Tensor:
    k = _int_arg(name, "diagonal", 1 if method else 2, diagonal)
    if input.data_.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    row = F.Tril if name == "tril" else F.Triu
    return row.apply(input, diagonal=k)


def tril(input: Tensor, diagonal: int = 0, _method: bool = False) -> Tensor:
    """The lower triangle of the last two dims (on and below `diagonal`), zeros elsewhere."""
    return _triangle("tril", input, diagonal, _method)


def triu(input: Tensor, diagonal: int = 0, _method: bool = False) -> Tensor:
    """The upper triangle of the last two dims (on and above `diagonal`), zeros elsewhere."""
    return _triangle("triu", input, diagonal, _method)


def _tensor_list(name: str, tensors: Any) -> list[Tensor]:
    """hstack's `tensors`: a non-empty list or tuple of tensors, or PyTorch's errors."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
            f"{_type_name(tensors) if not isinstance(tensors, Tensor) else 'Tensor'}"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {_type_name(t)}"
            )
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def _atleast_1d(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t.data_.ndim == 0 else t


def _atleast_2d(t: Tensor) -> Tensor:
    nd = t.data_.ndim
    if nd == 0:
        return reshape(t, (1, 1))
    return unsqueeze(t, 0) if nd == 1 else t


def hstack(tensors: Any) -> Tensor:
    """Tensors joined column-wise: along dim 0 for 1-d ones, else dim 1 (0-d made 1-d)."""
    ts = [_atleast_1d(t) for t in _tensor_list("hstack", tensors)]
    return cat(ts, 0 if ts[0].data_.ndim == 1 else 1)


def vstack(tensors: Any) -> Tensor:
    """Tensors joined row-wise along dim 0 (1-d ones as rows)."""
    return cat([_atleast_2d(t) for t in _tensor_list("vstack", tensors)], 0)


def row_stack(tensors: Any) -> Tensor:
    """vstack's alias."""
    return cat([_atleast_2d(t) for t in _tensor_list("row_stack", tensors)], 0)


def column_stack(tensors: Any) -> Tensor:
    """Tensors joined as columns along dim 1 (0-d and 1-d ones made columns)."""
    ts = _tensor_list("column_stack", tensors)
    cols = [reshape(t, (t.data_.size, 1)) if t.data_.ndim <= 1 else t for t in ts]
    return cat(cols, 1)


def cumprod(input: Tensor, dim: Any = None, *, dtype: Any = None, _method: bool = False) -> Tensor:
    """Running product along dim (`dtype`: the input cast first; integers give int64)."""
    if dim is None:
        raise TypeError('cumprod() missing 1 required positional arguments: "dim"')
    d = _int_arg("cumprod", "dim", 1 if _method else 2, dim)
    if dtype is not None:
        input = to_dtype(input, dtype)
    elif input.data_.dtype.kind in "biu":  # as cumsum: integral inputs promote to int64
        input = to_dtype(input, dtypes.int64)
    return F.Cumprod.apply(input, dim=_norm_dim(d, input.data_.ndim))


def roll(input: Tensor, shifts: Any, dims: Any = None, _method: bool = False) -> Tensor:
    """Elements shifted circularly along dims (the flattened tensor when dims are none)."""
    base = 1 if _method else 2
    sh = _int_tuple("roll", "shifts", base, shifts)
    ds = () if dims is None else _int_tuple("roll", "dims", base + 1, dims)
    if not sh:
        raise RuntimeError("`shifts` required")
    if len(sh) != len(ds) and not (not ds and len(sh) == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
    nd = input.data_.ndim
    if nd == 0 and ds:  # a 0-d tensor has no dim to roll along, not even 0 or -1
        raise IndexError(f"Dimension specified as {ds[0]} but tensor has no dimensions")
    return F.Roll.apply(input, shifts=sh, dims=tuple(_norm_dim(d, nd) for d in ds))


def atan2(input: Tensor, other: Tensor, _method: bool = False) -> Tensor:
    """The angle of the point (other, input): arctan(input / other) in the right quadrant."""
    _tensor_operands("atan2", input, other, _method)
    ta, tb, dt = _binary(input, other)
    if np.dtype(dt).kind not in "fc":  # integers and bools give the default float
        dt = dtypes.DEFAULT_FLOAT.np
    return F.Atan2.apply(ta, tb, dtype=np.dtype(dt))


arctan2 = atan2


def _triangle_(name: str, self: Tensor, diagonal: Any) -> Tensor:
    """tril_/triu_: the argument checks first, then the op written into self."""
    _int_arg(name, "diagonal", 1, diagonal)
    if self.data_.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    op = tril if name == "tril" else triu
    return self._inplace(lambda t: op(t, diagonal, True))


def _tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle_("tril", self, diagonal)


def _triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle_("triu", self, diagonal)


def _atan2_(self: Tensor, other: Tensor) -> Tensor:
    _tensor_operands("atan2_", self, other, True)
    return self._inplace(lambda t, o: atan2(t, o, True), other)


TUTORIAL_METHODS: dict[str, Any] = {
    "unflatten": lambda self, dim, sizes: unflatten(self, dim, sizes, True),
    "broadcast_to": _broadcast_to_method,
    "tril": lambda self, diagonal=0: tril(self, diagonal, True),
    "triu": lambda self, diagonal=0: triu(self, diagonal, True),
    "tril_": _tril_,
    "triu_": _triu_,
    "cumprod": lambda self, dim=None, dtype=None: cumprod(self, dim, dtype=dtype, _method=True),
    "roll": lambda self, shifts, dims=None: roll(self, shifts, dims, True),
    "atan2": lambda self, other: atan2(self, other, True),
    "arctan2": lambda self, other: atan2(self, other, True),
    "atan2_": _atan2_,
    "arctan2_": _atan2_,
}
TUTORIAL_FUNCTIONS = (
    "unflatten broadcast_to tril triu hstack vstack row_stack column_stack cumprod roll "
    "atan2 arctan2"
).split()


TENSOR_METHODS = (
    "abs exp log log1p sqrt sin cos tan tanh sigmoid relu sign sgn floor ceil round clamp "
    "asin acos atan arcsin arccos arctan rsqrt "
    "clip neg negative reciprocal square pow add sub mul div true_divide matmul mm mv dot outer "
    "sum mean prod max min amax amin argmax argmin norm logsumexp var std cumsum view "
    "reshape flatten ravel transpose swapaxes t permute movedim moveaxis squeeze unsqueeze "
    "expand expand_as repeat flip split chunk unbind narrow select diagonal as_strided gather "
    "masked_fill softmax log_softmax "
    "clone eq ne gt ge lt le equal allclose isnan isinf isfinite all any maximum minimum "
    "logical_not bmm addmm floor_divide remainder "
    "scatter scatter_add index_fill index_add index_copy index_put logcumsumexp fmod "
    "clamp_min clamp_max index_select topk sort argsort"
).split()


def _to(a: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """`x.to(torch.float64)`, `x.to(device)`, `x.to(other)` (see legacy.tensor_to)."""
    return legacy.tensor_to(a, *args, **kwargs)


def _type_method(a: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """`x.type()` -> 'torch.FloatTensor'; `x.type(torch.DoubleTensor)` converts."""
    return legacy.tensor_type(a, dtype, non_blocking, **kwargs)


def _cuda_method(a: Tensor, device: Any = None, non_blocking: bool = False, **kw: Any) -> Any:
    """`x.cuda()` fails as on a CPU-only PyTorch build."""
    return legacy.tensor_cuda(a, device, non_blocking, **kw)


def _where_method(a: Tensor, cond: Any, other: Any) -> Tensor:
    return where(cond, a, other)


def _view_as(a: Tensor, other: Tensor) -> Tensor:
    return view(a, other.data_.shape)


def _reshape_as(a: Tensor, other: Tensor) -> Tensor:
    return reshape(a, other.data_.shape)


def _masked_fill_(a: Tensor, mask: Tensor, value: Any) -> Tensor:
    a._check_inplace((value,))  # autograd's checks come before the kernel's warning
    if a.data_.size and _expanded(a.data_):  # (an empty tensor overlaps nothing)
        _config.warn(EXPANDED_WARNING.format("masked_fill_", "[mask] = scalar", 2450))

    def store(memory: np.ndarray) -> None:  # only the masked elements are written
        v = value.data_ if isinstance(value, Tensor) else value
        where = np.broadcast_to(_as_array(mask), memory.shape)
        np.copyto(memory, np.asarray(v).astype(memory.dtype), where=where, casting="unsafe")

    return a._inplace(lambda t, v: _masked_fill(t, mask, v), value, _overlap_ok=True, _store=store)


def _expanded(a: np.ndarray) -> bool:
    return _py.any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape, strict=True))


def _warn_expanded(a: Tensor, parts: tuple[Any, ...], v: Tensor | None) -> None:
    """PyTorch's deprecation warnings for `a[indices] = value` into expanded memory (a
    lone mask with a scalar value goes on to masked_fill_, which warns too)."""
    if not a.data_.size or not _expanded(a.data_):
        return
    _config.warn(EXPANDED_WARNING.format("index_put_", "[indices] = tensor", 976))
    mask = len(parts) == 1 and type(parts[0]) is np.ndarray and parts[0].dtype == np.bool_
    if mask and (v is None or v.data_.ndim == 0):
        _config.warn(EXPANDED_WARNING.format("masked_fill_", "[mask] = scalar", 2450))


EXPANDED_WARNING = (
    "Use of {0} on expanded tensors is deprecated. Please clone() the tensor before "
    "performing this operation. This also applies to advanced indexing e.g. tensor{1} "
    "(Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:{2}.)"
)


def _inplace_unary(fn: Any) -> Any:
    def method(a: Tensor) -> Tensor:
        return a._inplace(fn)

    method.__name__ = fn.__name__ + "_"
    return method


def _relu_(a: Tensor) -> Tensor:
    """x.relu_(): PyTorch refuses a bool tensor before it checks the write (an
    expanded bool tensor names its dtype, not its overlapping memory)."""
    if a.data_.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return a._inplace(relu)


def _random_fill(a: Tensor, what: str, draw: Any) -> Tensor:
    """Write `draw(shape, dtype name)` into `a` in place (x.uniform_(), x.normal_():
    PyTorch's random numbers, as nn.init uses them)."""
    a._check_inplace()
    if grad_mode.state.enabled and a.requires_grad:
        raise NotImplementedError(
            f"adcli does not support {what} on a tensor that requires grad yet"
        )
    name = a.dtype.name
    if name not in ("float32", "float64", "float16"):
        kernel = "check_uniform_bounds" if what == "uniform_" else "normal_kernel_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{a.dtype.legacy[:-6]}'")
    x = a.data_
    if _is_contiguous(x):
        values = draw(x.shape, name, False)
    else:  # PyTorch fills the elements in memory order (normal_ one by one)
        values = in_memory_order(draw((x.size,), name, True), x)
    np.copyto(x, values, casting="unsafe")
    a._vc[0] += 1
    return a


def _uniform_(a: Tensor, low: float = 0.0, high: float = 1.0, *, generator: Any = None) -> Tensor:
    gen = _pick_generator("uniform_", generator)
    return _random_fill(a, "uniform_", lambda shape, dt, _: gen.uniform(shape, low, high, dt))


def _normal_(a: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    gen = _pick_generator("normal_", generator)
    return _random_fill(
        a, "normal_", lambda shape, dt, serial: gen.normal(shape, mean, std, dt, serial)
    )


def _multinomial_method(
    a: Tensor, num_samples: Any = None, replacement: Any = False, *, generator: Any = None
) -> Tensor:
    return _sampling.multinomial(a, num_samples, replacement, generator=generator, _method=True)


EXTRA_METHODS: dict[str, Any] = {
    "multinomial": _multinomial_method,
    "exponential_": _sampling.exponential_,
    "uniform_": _uniform_,
    "normal_": _normal_,
    "to": _to,
    "type": _type_method,
    "cuda": _cuda_method,
    "float": lambda a: to_dtype(a, dtypes.float32),
    "double": lambda a: to_dtype(a, dtypes.float64),
    "half": lambda a: to_dtype(a, dtypes.float16),
    "long": lambda a: to_dtype(a, dtypes.int64),
    "int": lambda a: to_dtype(a, dtypes.int32),
    "bool": lambda a: to_dtype(a, dtypes.bool_),
    "where": _where_method,
    "view_as": _view_as,
    "reshape_as": _reshape_as,
    "masked_fill_": _masked_fill_,
    "maximum": lambda a, other: maximum(a, other, _method=True),
    "flip": _flip_method,
    "minimum": lambda a, other: minimum(a, other, _method=True),
    "prelu": lambda a, weight: prelu(a, weight, _method=True),
    "max": lambda a, dim=None, keepdim=False, other=None: max(a, dim, keepdim, other, True),
    "min": lambda a, dim=None, keepdim=False, other=None: min(a, dim, keepdim, other, True),
    "equal": lambda a, other: equal(a, other, _method=True),
    "allclose": lambda a, other, rtol=1e-5, atol=1e-8, equal_nan=False: allclose(
        a, other, rtol, atol, equal_nan, True
    ),
    "relu_": _relu_,
    "sigmoid_": _inplace_unary(sigmoid),
    "tanh_": _inplace_unary(tanh),
    "abs_": _inplace_unary(abs),
    "sqrt_": _inplace_unary(sqrt),
    "log_": _inplace_unary(log),
    "cpu": lambda a, memory_format=None: a,
    "contiguous": contiguous,
    "is_contiguous": lambda a: bool(a.data_.flags.c_contiguous),
    "stride": _stride_method,
    "is_floating_point": lambda a: a.data_.dtype.kind == "f",
}
EXTRA_METHODS.update(TUTORIAL_METHODS)
EXTRA_METHODS.update(
    {
        "scatter_": _inplace_of(_scatter_in_place, "scatter_", "src"),
        "scatter_add_": _inplace_of(scatter_add, "scatter_add_", "src"),
        "index_fill_": _inplace_of(index_fill, "index_fill_", "value"),
        "index_add_": _inplace_of(index_add, "index_add_", "source"),
        "index_copy_": _inplace_of(index_copy, "index_copy_", "source"),
        "index_put_": _inplace_of(index_put, "index_put_", "values"),
        "fmod_": _fmod_,
        "remainder_": _remainder_,
        "clamp_min_": _clamp_min_,
        "clamp_max_": _clamp_max_,
    }
)


# In-place unary methods (`x.sin_()`) not written out in tensor.py or above, and the
# `torch.sin_(x)` functions, which call the method (PyTorch has no torch.sign_/pow_).
INPLACE_UNARY = (
    "abs neg negative exp log log1p sqrt sin cos tan tanh sigmoid relu sign sgn floor ceil "
    "square reciprocal asin acos atan arcsin arccos arctan rsqrt"
).split()


def _round_(a: Tensor, decimals: int = 0) -> Tensor:
    return a._inplace(lambda t: round(t, decimals=decimals))


def _torch_inplace(name: str) -> Any:
    def fn(a: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(a, name)(*args, **kwargs)

    fn.__name__ = name
    return fn


def inplace_functions() -> dict[str, Any]:
    """`torch.exp_` and friends, by name."""
    names = [n + "_" for n in INPLACE_UNARY if n not in ("sign", "sgn")]
    names += ["round_", "clamp_", "clip_", "clamp_min_", "clamp_max_", "index_put_"]
    return {n: _torch_inplace(n) for n in names}


def _add_inplace_methods() -> None:
    for name in INPLACE_UNARY:
        if name + "_" not in EXTRA_METHODS and not hasattr(Tensor, name + "_"):
            EXTRA_METHODS[name + "_"] = _inplace_unary(globals()[name])
    EXTRA_METHODS.setdefault("round_", _round_)
    EXTRA_METHODS.setdefault("clip_", lambda a, min=None, max=None: a.clamp_(min, max))


_add_inplace_methods()


def _bind_methods() -> None:
    g = globals()
    for name in TENSOR_METHODS:
        setattr(Tensor, name, g[name])
    for name, fn in EXTRA_METHODS.items():
        setattr(Tensor, name, fn)
    from .signatures import conform_methods

    conform_methods(Tensor)  # PyTorch's keyword names (x.add(other=y), x.view(size=...))
    # What scripts may read on a tensor (the sandbox refuses everything else).
    Tensor.__ad_attrs__ = frozenset(
        [n for n in dir(Tensor) if not n.startswith("_") and n != "data_"]
        + ["_version", "_base"]  # PyTorch's documented looks at in-place changes and views
    )


_bind_methods()
