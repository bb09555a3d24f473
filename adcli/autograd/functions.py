"""THE operation table: one Function per PyTorch `grad_fn` class.

Each row is a class named like the op, with its PyTorch `grad_fn` name, a
`forward` on NumPy arrays and a `backward` written in Tensor operations (so it
is itself differentiable: double backward, Hessians and symbolic formulas all
come from these same rows).  Argument parsing, scalars and dtype promotion live
in ops.py; reducing gradients over broadcast dimensions and casting them back to
each input's dtype is done once, by the engine.

This module is above ops.py: the backward formulas call the ops, and the ops reach
these rows through ops.py's `F` slot, which this module fills as it loads.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from . import extremes, grad_mode, kernels32, mkl, moments, ops, prodgrad, softmax64
from . import node as node_module
from .node import FREED_MESSAGE, Function, SavedTensorError
from .storage import clone_preserving, converted, iterator_result
from .summation import nll_cascade_sum, torch_mean, torch_sum
from .tensor import OVERLAP_MESSAGE, Tensor, efficient_zero, is_efficient_zero

ops.F = sys.modules[__name__]  # the ops run these rows (ops.py cannot import this module)

# Binary operands arrive already promoted by ops.py; `_d` reads an operand's
# array cast to the op's computation dtype.  Add, Sub, Mul and Div may also get a
# Python number as their second operand (ops.py's `_binary(..., const=True)`): a
# constant, which they save as the number itself.


def _d(t: Tensor | float, dt: np.dtype) -> np.ndarray:
    if not isinstance(t, Tensor):
        return np.asarray(t, dt)
    a = t.data_
    return a if a.dtype == dt else a.astype(dt)


def _operand(t: Tensor | float) -> np.ndarray:
    """An operand's array for `iterator_result` (a number: a 0-d array)."""
    return t.data_ if isinstance(t, Tensor) else np.asarray(t)


def _c_order(x: np.ndarray) -> np.ndarray:
    """x in C order (a copy only when it is not; 0-d stays 0-d, unlike ascontiguousarray)."""
    return x if x.flags.c_contiguous else x.copy(order="C")


def _ones_like(t: Tensor) -> Tensor:
    return Tensor._make(np.ones(t.data_.shape, t.data_.dtype))


def _keep(
    ctx: Function, *arrays: Any, kept: tuple[Tensor, ...] = (), also: tuple[Tensor, ...] = ()
) -> None:
    """Save index/mask arrays the way PyTorch saves them: as saved tensors, freed by a
    backward without retain_graph (so a second backward fails as in PyTorch). `kept`:
    the script's tensors the arrays came from, saved instead, so that changing one in
    place makes the backward fail as in PyTorch. `also`: input tensors saved after."""
    if kept:
        ctx.save(*kept, *also)
        return
    ctx.save(*[Tensor._make(np.asarray(a)) for a in arrays if isinstance(a, np.ndarray)], *also)


def _expand_as(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """PyTorch's `t.expand_as(source)` closing a gradient formula: an ExpandBackward0 node
    even to the same shape; for a 0-d source, t as it is (the engine sums it down)."""
    return ops.expand(t, shape) if shape else t


def _check_kept(ctx: Function) -> None:
    """Raise PyTorch's error when the kept arrays were freed."""
    ctx.saved_tensors  # noqa: B018


# A `jvp(ctx, ts, xs, r)` row (forward-mode AD, see forward_ad.py) gets the inputs'
# tangents `ts` (None: zero), the inputs `xs` and the result `r`, and returns the
# result's tangent (None: zero), in Tensor operations as backward does.


def _lin(*terms: Tensor | None) -> Tensor | None:
    """The sum of the tangent terms that are not None (zero), or None."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _fz(t: Tensor | None, x: Any, r: Tensor) -> Tensor:
    """An input's tangent in a formula of several tangents, as PyTorch's generated code
    has it: an undefined one is an efficient zero of the input's shape. The terms it
    enters are computed (recording their node when the other operand requires grad,
    so `lin(dual)` with weights that require grad gets AddBackward0 on top) and are
    efficient zeros, which add as nothing."""
    if t is not None:
        return t
    dt = r.data_.dtype
    if isinstance(x, Tensor):
        return efficient_zero(x.data_.shape, x.data_.dtype if x.data_.dtype.kind in "fc" else dt)
    return efficient_zero((), dt)


def _zprod(fn: Any, a: Tensor, b: Tensor) -> Tensor:
    """fn(a, b), a product (mm, mv, dot, bmm): an efficient zero when an operand is one,
    as PyTorch's ZeroTensor kernels give it (after recording the node)."""
    if not (is_efficient_zero(a) or is_efficient_zero(b)):
        return fn(a, b)
    if not (a.requires_grad or b.requires_grad):  # no node to record: no product either
        sa, sb = a.data_.shape, b.data_.shape
        shape = sa[:-1] + sb[:-2] + sb[-1:] if len(sb) == 2 else sa[:-1]
        if len(sa) == 3:  # bmm
            shape = sa[:2] + sb[-1:]
        return efficient_zero(shape, a.data_.dtype)
    return ops._as_zero(fn(a, b))


# ************************************************************ arithmetic


class Add(Function):
    """a + alpha * b"""

    grad_fn_name = "AddBackward0"

    def forward(ctx, a, b, dtype, alpha=1):
        ctx.alpha = alpha
        if alpha == 1:
            return _d(a, dtype) + _d(b, dtype)
        # PyTorch's kernel is one fused multiply-add: alpha * b + a, rounded once
        return kernels32.fma(_d(b, dtype), np.asarray(alpha, dtype), _d(a, dtype))

    def backward(ctx, g):
        return g, _times(g, ctx.alpha)  # PyTorch's maybe_multiply(grad, alpha)

    def jvp(ctx, ts, xs, r):
        # PyTorch's self_t + maybe_multiply(other_t, alpha)
        (ta, tb), (a, b) = ts, xs
        return _fz(ta, a, r) + _times(_fz(tb, b, r), ctx.alpha)


class Sub(Function):
    """a - alpha * b"""

    grad_fn_name = "SubBackward0"

    def forward(ctx, a, b, dtype, alpha=1):
        ctx.alpha = alpha
        if alpha == 1:
            return _d(a, dtype) - _d(b, dtype)
        # PyTorch adds with -alpha: one fused multiply-add, -alpha * b + a
        return kernels32.fma(_d(b, dtype), np.asarray(-alpha, dtype), _d(a, dtype))

    def backward(ctx, g):
        return g, _times(-g, ctx.alpha)  # PyTorch's maybe_multiply(-grad, alpha)

    def jvp(ctx, ts, xs, r):
        # PyTorch's self_t - maybe_multiply(other_t, alpha)
        (ta, tb), (a, b) = ts, xs
        return _fz(ta, a, r) - _times(_fz(tb, b, r), ctx.alpha)


class Rsub(Function):
    """other - a, for a Python number `other` (`1 - x`)."""

    grad_fn_name = "RsubBackward1"

    def forward(ctx, a, other, dtype):
        return np.asarray(other, dtype) - _d(a, dtype)

    def backward(ctx, g):
        return (-g,)

    def jvp(ctx, ts, xs, r):
        return -ts[0]


class Mul(Function):
    """a * b"""

    grad_fn_name = "MulBackward0"

    def forward(ctx, a, b, dtype):
        need_a, need_b = ctx.needs_input_grad
        ctx.save(b if need_a else None, a if need_b else None)
        return _d(a, dtype) * _d(b, dtype)

    def backward(ctx, g):
        # other's gradient first, as PyTorch's MulBackward0 makes them: with create_graph
        # the order of the nodes is the order a double backward sums in
        b, a = ctx.saved_tensors
        gb = g * a if a is not None else None
        return (g * b if b is not None else None), gb

    def jvp(ctx, ts, xs, r):
        # PyTorch's other_t * self_p + self_t * other_p
        (ta, tb), (a, b) = ts, xs
        return _fz(tb, b, r) * a + _fz(ta, a, r) * b


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """PyTorch's float remainder: fmod, moved into b's sign when they differ (so an
    exact zero keeps a's sign: -3. % 1.5 is -0.); integers as Python does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.result_type(a, b).kind != "f":
            return np.mod(a, b)
        m = np.fmod(a, b)
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


class Remainder(Function):
    """a % number (Python's sign convention); d/da = 1"""

    grad_fn_name = "RemainderBackward0"

    def forward(ctx, a, other, dtype):
        return _remainder(_d(a, dtype), np.asarray(other, dtype))

    def backward(ctx, g):
        return (g,)

    def jvp(ctx, ts, xs, r):
        return ts[0]


class RemainderTensor(Function):
    """a % b for two tensors; d/da = 1, d/db = -floor(a / b)"""

    grad_fn_name = "RemainderBackward1"

    def forward(ctx, a, b, dtype):
        if ctx.needs_input_grad[1]:  # only b's gradient reads them: PyTorch saves them then
            ctx.save(a, b)
        return _remainder(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        if not ctx.needs_input_grad[1]:
            return g, None
        a, b = ctx.saved_tensors
        return g, -g * ops.div(a, b, rounding_mode="floor")

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        return _lin(ta, None if tb is None else -tb * ops.div(a, b, rounding_mode="floor"))


class Div(Function):
    """a / b"""

    grad_fn_name = "DivBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a if ctx.needs_input_grad[1] else None, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _d(a, dtype) / _d(b, dtype)

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        gb = -g * ((a / b) / b) if a is not None else None  # other's first, as PyTorch
        ga = g / b if ctx.needs_input_grad[0] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        # PyTorch's (self_t - other_t * result) / other_p
        (ta, tb), (a, b) = ts, xs
        return (_fz(ta, a, r) - _fz(tb, b, r) * r) / b


def rounded_div(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    """a / b rounded toward zero ("trunc") or down ("floor", Python's `//`: NumPy's
    floor_divide is the same algorithm); integers truncate as C does."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if mode == "floor":
            return np.floor_divide(a, b)
        if np.result_type(a, b).kind in "iub":
            q = np.abs(a) // np.abs(b)
            return np.where((a < 0) != (b < 0), -q, q)
        return np.trunc(a / b)


class DivRounding(Function):
    """a / b rounded (`rounding_mode="trunc"` or `"floor"`): the gradient is zero"""

    grad_fn_name = "DivBackward2"

    def forward(ctx, a, b, dtype, mode):
        # the gradient is zero, but PyTorch saves what its formulas name (other for
        # self's, both for other's): an in-place change to them still raises
        ctx.save(b, a if ctx.needs_input_grad[1] else None)
        return rounded_div(_d(a, dtype), _d(b, dtype), mode)

    def backward(ctx, g):
        ctx.saved_tensors  # noqa: B018 (the version check)
        need_a, need_b = ctx.needs_input_grad
        return (_zeros_like(g) if need_a else None), (_zeros_like(g) if need_b else None)

    def jvp(ctx, ts, xs, r):
        return _zeros_like(r)


class NotImplementedOp(Function):
    """an operation PyTorch gives no derivative (`x // y`, a number % x): backward raises"""

    grad_fn_name = "NotImplemented"
    runs_first = True  # PyTorch's Error nodes run before the other ready nodes
    runs_undefined = True  # and raise whatever gradient reached them

    def name(self) -> str:
        """`torch::autograd::NotImplemented`, as PyTorch's `name()` spells it."""
        return "torch::autograd::NotImplemented"

    def forward(ctx, *operands, value, op):
        ctx.op = op
        return value

    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for {ctx.op} is not implemented")

    def jvp(ctx, ts, xs, r):
        raise NotImplementedError(f"derivative for {ctx.op} is not implemented")


class DivScalar(Function):
    """a / number, as PyTorch's C++ code calls it (`DivBackward1`; Python's `x / 2`
    wraps the number in a tensor and is DivBackward0)"""

    grad_fn_name = "DivBackward1"

    def forward(ctx, a, other):
        ctx.other = other
        x = a.data_
        with np.errstate(divide="ignore", invalid="ignore"):
            return (x / np.asarray(other, x.dtype)).astype(x.dtype, copy=False)

    def backward(ctx, g):
        return (DivScalar.apply(g, other=ctx.other),)

    def jvp(ctx, ts, xs, r):
        return DivScalar.apply(ts[0], other=ctx.other)


class MulScalar(Function):
    """a * number, as PyTorch's C++ code calls it (`MulBackward1`; Python's `x * 2`
    wraps the number in a tensor and is MulBackward0)"""

    grad_fn_name = "MulBackward1"

    def forward(ctx, a, other):
        ctx.other = other
        x = a.data_
        return x * np.asarray(other, x.dtype)

    def backward(ctx, g):
        return (MulScalar.apply(g, other=ctx.other),)

    def jvp(ctx, ts, xs, r):
        return MulScalar.apply(ts[0], other=ctx.other)


class AddScalar(Function):
    """a + number, as PyTorch's C++ code calls it (`AddBackward1`)"""

    grad_fn_name = "AddBackward1"

    def forward(ctx, a, other):
        x = a.data_
        return x + np.asarray(other, x.dtype)

    def backward(ctx, g):
        return (g,)

    def jvp(ctx, ts, xs, r):
        return ts[0]


class Pow(Function):
    """a ** exponent, for a Python number exponent."""

    grad_fn_name = "PowBackward0"

    def forward(ctx, a, exponent, dtype):
        ctx.exponent = exponent
        ctx.save(a)
        return _pow_scalar(_d(a, dtype), exponent)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return (_zeros_like(a),)
        # PyTorch's grad * (exponent * self.pow(exponent - 1)): C++'s product by a
        # number (MulBackward1)
        return (g * MulScalar.apply(a ** (e - 1), other=e),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        e = ctx.exponent
        return _zeros_like(r) if e == 0 else t * (e * a ** (e - 1))


def _pow_scalar(x: np.ndarray, e: Any) -> np.ndarray:
    """x ** e as PyTorch's kernel computes it: ones for 0 and a copy for 1 (ATen's
    pow_out), products for 2, 3 and -2, its sqrt kernel for 0.5 (MKL's, where
    PyTorch's is), 1 / sqrt for -0.5, 1 / x for -1 (so (-0.) ** -0.5 is -inf, as
    1 / -0.), otherwise its vectorized pow loop."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if x.dtype.kind == "f":
            one = x.dtype.type(1)
            special = {
                0: lambda: np.ones_like(x),
                1: lambda: x.copy(),
                2: lambda: x * x,
                3: lambda: x * x * x,
                -2: lambda: one / (x * x),
                0.5: lambda: _sqrt(x),
                -0.5: lambda: one / np.sqrt(x),
                -1: lambda: one / x,
            }.get(e)
            if special is not None and not isinstance(e, bool):
                return special()
            if x.dtype in (np.float32, np.float64) and x.size:
                return kernels32.pow_float(x, e)
        return np.power(x, np.asarray(e, x.dtype))


def _sqrt(x: np.ndarray) -> np.ndarray:
    r = mkl.vml("sqrt", x)
    return np.sqrt(x) if r is None else r


def _pow_arrays(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x ** e for arrays of one dtype, through PyTorch's vectorized pow loop where
    the dtype is float32 or float64."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if x.dtype in (np.float32, np.float64) and x.size and e.size:
            return kernels32.pow_float(x, e)
        return np.power(x, e)


class PowTensor(Function):
    """a ** b, both tensors."""

    grad_fn_name = "PowBackward1"

    def forward(ctx, a, b, dtype):
        ctx.save_output(a, b)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _pow_arrays(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        # PyTorch's pow_backward_self / pow_backward_exponent
        a, b, r = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[1]:  # the exponent's first, as PyTorch
            # d(a**b)/db = a**b * log(a), taken as 0 where a == 0 and b >= 0
            gb = g * ops.where((a == 0) & (b >= 0), 0.0, r * ops.log(a))
        if ctx.needs_input_grad[0]:
            ga = ops.where(b == 0, 0.0, g * (b * a ** (b - 1)))
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        da = None if ta is None else ops.where(b == 0, 0.0, ta * (b * a ** (b - 1)))
        db = None if tb is None else tb * ops.where((a == 0) & (b >= 0), 0.0, r * ops.log(a))
        return _lin(da, db)


class PowScalarBase(Function):
    """base ** b, for a Python number base (`2 ** x`)."""

    grad_fn_name = "PowBackward2"

    def forward(ctx, b, base, dtype):
        ctx.base = base
        ctx.save_output(b)  # PyTorch saves the exponent too (version-checked)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _pow_arrays(np.asarray(base, dtype), _d(b, dtype))

    def backward(ctx, g):
        # PyTorch's pow_backward_exponent: grad * (result * log(base)), the inner product
        # by a number (MulBackward1), the log taken in double; for base 0, 0 where the
        # exponent is >= 0
        exponent, result = ctx.saved_tensors
        if ctx.base == 0:
            zero = Tensor._make(np.zeros((), result.data_.dtype))
            inner = ops.where(exponent >= 0, zero, MulScalar.apply(result, other=float("-inf")))
            return (g * inner,)
        return (g * MulScalar.apply(result, other=_log_number(ctx.base)),)

    def jvp(ctx, ts, xs, r):
        t = ts[0]
        if ctx.base == 0:
            return ops.where(r == 0, 0.0, t * r * float("-inf"))
        return t * (r * _log_number(ctx.base))


def _log_number(v: Any) -> float:
    """log of a real number as C's log (NaN below 0)."""
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


class Neg(Function):
    """-a"""

    grad_fn_name = "NegBackward0"

    def forward(ctx, a):
        return -a.data_

    def backward(ctx, g):
        return (-g,)

    def jvp(ctx, ts, xs, r):
        return -ts[0]


class Reciprocal(Function):
    """1 / a"""

    grad_fn_name = "ReciprocalBackward0"

    def forward(ctx, a):
        ctx.save_output()
        with np.errstate(divide="ignore"):
            return np.reciprocal(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (-g * (r * r),)  # PyTorch's -grad * (result * result)

    def jvp(ctx, ts, xs, r):
        return -ts[0] * r * r


class Maximum(Function):
    """elementwise max of two tensors; ties share the gradient equally."""

    grad_fn_name = "MaximumBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        x, y = _d(a, dtype), _d(b, dtype)
        return _zero_ties(np.maximum(x, y), x, y)

    def backward(ctx, g):
        # PyTorch: where(a == b, g / 2, g) masked to 0 where the other operand wins
        # (so both operands get g where one is NaN)
        a, b = ctx.saved_tensors
        shared = ops.where(a == b, DivScalar.apply(g, other=2), g)
        ga = ops.masked_fill(shared, a < b, 0.0) if ctx.needs_input_grad[0] else None
        gb = ops.masked_fill(shared, a > b, 0.0) if ctx.needs_input_grad[1] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        # the tangent of the operand that wins; half of each on a tie
        (ta, tb), (a, b) = ts, xs
        w = ops.where(a == b, 0.5, ops.to_dtype(a > b, r.data_.dtype))
        return _lin(None if ta is None else ta * w, None if tb is None else tb * (1 - w))


class Minimum(Function):
    """elementwise min of two tensors; ties share the gradient equally."""

    grad_fn_name = "MinimumBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        x, y = _d(a, dtype), _d(b, dtype)
        return _zero_ties(np.minimum(x, y), x, y)

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        shared = ops.where(a == b, DivScalar.apply(g, other=2), g)
        ga = ops.masked_fill(shared, a > b, 0.0) if ctx.needs_input_grad[0] else None
        gb = ops.masked_fill(shared, a < b, 0.0) if ctx.needs_input_grad[1] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        # the tangent of the operand that wins; half of each on a tie
        (ta, tb), (a, b) = ts, xs
        w = ops.where(a == b, 0.5, ops.to_dtype(a < b, r.data_.dtype))
        return _lin(None if ta is None else ta * w, None if tb is None else tb * (1 - w))


def _zero_ties(out: np.ndarray, x: np.ndarray, y: np.ndarray, simd: Any = None) -> np.ndarray:
    """Settle the sign of a tie between -0. and 0. as PyTorch's elementwise loop does:
    its SIMD blocks return the later operand y, its one-at-a-time tail the earlier x
    (`simd`: the positions of the blocks, when the loop had more operands).  NaN and
    every other tie look the same either way."""
    ties = (x == 0) & (y == 0) & (np.signbit(x) != np.signbit(y))
    if not ties.any():
        return out
    if simd is None:
        simd = _simd_positions(out.shape, (x, y), out.dtype)
    pick = np.where(simd, np.broadcast_to(y, out.shape), np.broadcast_to(x, out.shape))
    return np.where(ties, pick, out)


def _simd_positions(shape: tuple[int, ...], operands: tuple[np.ndarray, ...], dt: Any) -> Any:
    """True where PyTorch's CPU loop computes an element in a SIMD block: the loop
    runs over the innermost dims (merged while every operand is laid out contiguously
    or broadcast across them), two AVX2 vectors at a time, the remainder one by one."""
    if not shape or 0 in shape:
        return False
    lanes = 32 // np.dtype(dt).itemsize
    strides = [[s // o.itemsize for s in np.broadcast_to(o, shape).strides] for o in operands]
    dims = [d for d in range(len(shape)) if shape[d] != 1] or [len(shape) - 1]
    inner = shape[dims[-1]]
    last = dims[-1]
    inner_strides = [st[last] for st in strides]
    if any(v not in (0, 1) for v in inner_strides) or inner_strides.count(0) > 1:
        return False  # strided, or more than one broadcast operand: the scalar loop only
    for d in reversed(dims[:-1]):
        if not all(st[d] == st[last] * inner for st in strides):
            break
        inner *= shape[d]
    blocked = inner // (2 * lanes) * 2 * lanes
    return (np.arange(int(np.prod(shape))) % inner < blocked).reshape(shape)


# ************************************************************ unary


def _vml(name: str, fn: Any, x: np.ndarray) -> np.ndarray:
    """fn(x) as PyTorch computes it: for float32 and float64 x MKL's vector function,
    which PyTorch calls (bit-equal); without MKL, NumPy's, for float32 computed in
    float64 and rounded once (nearly always equal)."""
    r = mkl.vml(name, x)
    return kernels32.rounded(fn, x) if r is None else r


class Exp(Function):
    """exp(a)"""

    grad_fn_name = "ExpBackward0"

    def forward(ctx, a):
        ctx.save_output()
        with np.errstate(over="ignore"):
            return _vml("exp", np.exp, ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g * r,)

    def jvp(ctx, ts, xs, r):
        return ts[0] * r


class Log(Function):
    """log(a)"""

    grad_fn_name = "LogBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _vml("log", np.log, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g / a,)

    def jvp(ctx, ts, xs, r):
        return ts[0] / xs[0]


class Log1p(Function):
    """log(1 + a)"""

    grad_fn_name = "Log1PBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return kernels32.rounded(np.log1p, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g / (a + 1),)

    def jvp(ctx, ts, xs, r):
        return ts[0] / (xs[0] + 1)


class Sqrt(Function):
    """sqrt(a)"""

    grad_fn_name = "SqrtBackward0"

    def forward(ctx, a):
        ctx.save_output()
        x = ops.float_data(a)
        r = mkl.vml("sqrt", x)
        if r is not None:
            return r
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g / MulScalar.apply(r, other=2),)  # C++'s result * 2: MulBackward1

    def jvp(ctx, ts, xs, r):
        return ts[0] / (r * 2)


class Abs(Function):
    """|a|; the gradient at 0 is 0 (sign(0))."""

    grad_fn_name = "AbsBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return np.abs(a.data_)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * ops.sgn(a),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * ops.sgn(xs[0])


class Sin(Function):
    """sin(a)"""

    grad_fn_name = "SinBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return _vml("sin", np.sin, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * ops.cos(a),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * ops.cos(xs[0])


class Cos(Function):
    """cos(a)"""

    grad_fn_name = "CosBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return _vml("cos", np.cos, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * -ops.sin(a),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * -ops.sin(xs[0])


class Tan(Function):
    """tan(a)"""

    grad_fn_name = "TanBackward0"

    def forward(ctx, a):
        ctx.save_output()
        x = ops.float_data(a)
        r = mkl.vml("tan", x)
        return np.tan(x) if r is None else r

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        # PyTorch's grad * (1 + result.pow(2)): PowBackward0, AddBackward1, MulBackward0
        return (g * AddScalar.apply(Pow.apply(r, exponent=2, dtype=r.data_.dtype), other=1),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * (r * r + 1)


def _rsqrt_one_minus_square(a: Tensor) -> Tensor:
    """PyTorch's `(-self * self + 1).rsqrt()` of asin's and acos's derivatives, node for
    node: NegBackward0, MulBackward0, AddBackward1, RsqrtBackward0."""
    return Rsqrt.apply(AddScalar.apply(-a * a, other=1))


class Asin(Function):
    """asin(a)"""

    grad_fn_name = "AsinBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(invalid="ignore"):
            return _vml("asin", np.arcsin, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # PyTorch's grad * (-self * self + 1).rsqrt(): NegBackward0, MulBackward0,
        # AddBackward1, RsqrtBackward0, MulBackward0
        return (g * _rsqrt_one_minus_square(a),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * _rsqrt_one_minus_square(xs[0])


class Acos(Function):
    """acos(a)"""

    grad_fn_name = "AcosBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(invalid="ignore"):
            return _vml("acos", np.arccos, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # PyTorch's grad * -((-self * self + 1).rsqrt()): the rsqrt's NegBackward0 too
        return (g * -_rsqrt_one_minus_square(a),)

    def jvp(ctx, ts, xs, r):
        return ts[0] * -_rsqrt_one_minus_square(xs[0])


class Atan(Function):
    """atan(a)"""

    grad_fn_name = "AtanBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return _vml("atan", np.arctan, ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        # PyTorch's grad / (self * self + 1): MulBackward0, AddBackward1, DivBackward0
        return (g / AddScalar.apply(a * a, other=1),)

    def jvp(ctx, ts, xs, r):
        return ts[0] / AddScalar.apply(xs[0] * xs[0], other=1)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x), as PyTorch's rsqrt kernel divides (its sqrt correctly rounded, not
    MKL's: vml.h has no rsqrt). Float16: its SIMD blocks compute in float32 and round
    once, its one-at-a-time tail rounds the sqrt to float16 first."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if x.dtype != np.float16:
            return x.dtype.type(1) / np.sqrt(x)
        root = np.sqrt(x.astype(np.float32))
        block = (np.float32(1) / root).astype(np.float16)
        tail = (np.float32(1) / root.astype(np.float16).astype(np.float32)).astype(np.float16)
        # the loop runs in memory order (a transposed x's dims taken innermost first)
        order = np.argsort([-st for st in x.strides], kind="stable")
        xm = x.transpose(order)
        simd = _simd_positions(xm.shape, (xm,), x.dtype)
        if simd is not False:
            simd = simd.transpose(np.argsort(order))
        return np.where(simd, block, tail)


class Rsqrt(Function):
    """1 / sqrt(a)"""

    grad_fn_name = "RsqrtBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return _rsqrt(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        # PyTorch's -0.5 * grad * result.pow(3): C++'s number times grad (MulBackward1),
        # PowBackward0, MulBackward0
        cube = Pow.apply(r, exponent=3, dtype=r.data_.dtype)
        return (MulScalar.apply(g, other=-0.5) * cube,)

    def jvp(ctx, ts, xs, r):
        return MulScalar.apply(ts[0], other=-0.5) * Pow.apply(r, exponent=3, dtype=r.data_.dtype)


def _zeros_like(t: Tensor) -> Tensor:
    """A constant zero gradient (PyTorch's `zeros_like`: it flows, unlike None)."""
    return Tensor._make(np.zeros(t.data_.shape, t.data_.dtype))


class Tanh(Function):
    """tanh(a)"""

    grad_fn_name = "TanhBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return _vml("tanh", np.tanh, ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (TanhBackward.apply(g, r),)

    def jvp(ctx, ts, xs, r):
        return TanhBackward.apply(ts[0], r)


class TanhBackward(Function):
    """tanh's gradient g * (1 - r**2), a node of its own as in PyTorch"""

    grad_fn_name = "TanhBackwardBackward0"

    def forward(ctx, g, r):
        ctx.save(g if ctx.needs_input_grad[1] else None, r)
        rd = r.data_
        if rd.dtype == np.float32:
            # PyTorch's kernel fuses 1 - r*r into one multiply-add (rounded once): near
            # |r| = 1 the float32 product would lose the digits the difference keeps
            return g.data_ * (1 - np.square(rd, dtype=np.float64)).astype(np.float32)
        return g.data_ * (1 - rd * rd)

    def backward(ctx, gg):
        g, r = ctx.saved_tensors
        gg_g = TanhBackward.apply(gg, r) if ctx.needs_input_grad[0] else None
        gg_r = gg * (r * -2 * g) if g is not None else None
        return gg_g, gg_r

    def jvp(ctx, ts, xs, r):
        (tg, tr), (g, y) = ts, xs
        return _lin(
            None if tg is None else TanhBackward.apply(tg, y),
            None if tr is None else tr * (y * -2 * g),
        )


class Sigmoid(Function):
    """1 / (1 + exp(-a))"""

    grad_fn_name = "SigmoidBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return kernels32.sigmoid(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (SigmoidBackward.apply(g, r),)

    def jvp(ctx, ts, xs, r):
        return SigmoidBackward.apply(ts[0], r)


class SigmoidBackward(Function):
    """sigmoid's gradient g * (1 - r) * r, a node of its own as in PyTorch"""

    grad_fn_name = "SigmoidBackwardBackward0"

    def forward(ctx, g, r):
        ctx.save(g if ctx.needs_input_grad[1] else None, r)
        rd = r.data_
        return g.data_ * (1 - rd) * rd

    def backward(ctx, gg):
        g, r = ctx.saved_tensors
        gg_g = SigmoidBackward.apply(gg, r) if ctx.needs_input_grad[0] else None
        gg_r = gg * g * (r * -2 + 1) if g is not None else None
        return gg_g, gg_r

    def jvp(ctx, ts, xs, r):
        (tg, tr), (g, y) = ts, xs
        return _lin(
            None if tg is None else SigmoidBackward.apply(tg, y),
            None if tr is None else tr * g * (y * -2 + 1),
        )


class Relu(Function):
    """max(a, 0); the gradient at 0 is 0."""

    grad_fn_name = "ReluBackward0"

    def forward(ctx, a):
        ctx.save_output()
        x = a.data_
        # x < 0 ? 0 : x, as PyTorch's clamp_min: -0. stays -0., NaN stays NaN
        return np.where(x < 0, np.zeros((), x.dtype), x)

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (ThresholdBackward.apply(g, r),)

    def jvp(ctx, ts, xs, r):
        return ThresholdBackward.apply(ts[0], r)


class ThresholdBackward(Function):
    """relu's gradient: g where r > 0, else 0 (zero gradient for r itself)"""

    grad_fn_name = "ThresholdBackwardBackward0"

    def forward(ctx, g, r):
        ctx.save(r)
        # PyTorch's threshold_backward: 0 where r <= 0 (a NaN lets g through)
        return np.where(r.data_ <= 0, np.zeros((), g.data_.dtype), g.data_)

    def backward(ctx, gg):
        (r,) = ctx.saved_tensors
        return ThresholdBackward.apply(gg, r), _zeros_like(r)

    def jvp(ctx, ts, xs, r):
        (tg, _), (_, y) = ts, xs
        return _zeros_like(r) if tg is None else ThresholdBackward.apply(tg, y)


class LeakyRelu(Function):
    """a if a > 0 else slope * a"""

    grad_fn_name = "LeakyReluBackward0"

    def forward(ctx, a, negative_slope):
        ctx.slope = negative_slope
        ctx.save(a)
        x = a.data_
        return np.where(x > 0, x, x * np.asarray(negative_slope, x.dtype))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (LeakyReluBackward.apply(g, a, slope=ctx.slope),)

    def jvp(ctx, ts, xs, r):
        return LeakyReluBackward.apply(ts[0], xs[0], slope=ctx.slope)


class LeakyReluBackward(Function):
    """leaky_relu's gradient: g where a > 0, else slope * g"""

    grad_fn_name = "LeakyReluBackwardBackward0"

    def forward(ctx, g, a, slope):
        ctx.slope = slope
        ctx.save(a)
        gd = g.data_
        return np.where(a.data_ > 0, gd, gd * np.asarray(slope, gd.dtype))

    def backward(ctx, gg):
        (a,) = ctx.saved_tensors
        return LeakyReluBackward.apply(gg, a, slope=ctx.slope), _zeros_like(a)

    def jvp(ctx, ts, xs, r):
        (tg, _), (_, a) = ts, xs
        return _zeros_like(r) if tg is None else LeakyReluBackward.apply(tg, a, slope=ctx.slope)


class PreluKernel(Function):
    """a if a > 0 else w * a, w broadcast against a (F.prelu's kernel)

    F.prelu first views a per-channel weight as [1, C, 1, ...], as PyTorch's does."""

    grad_fn_name = "PreluKernelBackward0"

    def forward(ctx, a, w):
        ctx.save(a, w)
        x = a.data_
        return np.where(x > 0, x, w.data_ * x)

    def backward(ctx, g):
        a, w = ctx.saved_tensors
        # the weight's gradient comes at a's shape: the engine sums it to w's
        return PreluKernelBackward.apply(g, a, w)

    def jvp(ctx, ts, xs, r):
        # PyTorch's rule tests a >= 0 where its kernels test a > 0 (as in double backward)
        (ta, tw), (a, w) = ts, xs
        rest = _lin(None if ta is None else w * ta, None if tw is None else tw * a)
        return ops.where(_nonneg(a), 0.0 if ta is None else ta, 0.0 if rest is None else rest)


def _nonneg(a: Tensor) -> Tensor:
    """a >= 0 as a mask (no graph), the test of prelu's derivative formulas."""
    return Tensor._make(a.data_ >= 0)


class PreluKernelBackward(Function):
    """prelu's gradients: g if a > 0 else w * g, and 0 if a > 0 else a * g

    Both come at a's shape; their own derivatives test a >= 0, as PyTorch's formulas do."""

    grad_fn_name = "PreluKernelBackwardBackward0"
    multi_output = True

    def forward(ctx, g, a, w):
        ctx.save(g, a, w)
        gd, x = g.data_, a.data_
        pos = x > 0
        return np.where(pos, gd, w.data_ * gd), np.where(pos, np.zeros((), gd.dtype), x * gd)

    def backward(ctx, gg, gw):
        if gg is None and gw is None:
            return None, None, None
        g, a, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        nonneg = _nonneg(a)
        dg = da = dw = None
        if need[0]:
            if gg is None:
                dg = ops.where(nonneg, 0.0, gw * a)
            else:
                other = gg * w if gw is None else gg * w + gw * a
                dg = ops.where(nonneg, gg, other)
        if need[1]:
            da = _zeros_like(a) if gw is None else ops.where(nonneg, 0.0, g * gw)
        if need[2]:
            dw = _zeros_like(a) if gg is None else ops.where(nonneg, 0.0, g * gg)
        return dg, da, dw

    def jvp(ctx, ts, xs, r):
        (tg, ta, tw), (g, a, w) = ts, xs
        nonneg = _nonneg(a)
        rest0 = _lin(None if tg is None else tg * w, None if tw is None else g * tw)
        rest1 = _lin(None if ta is None else g * ta, None if tg is None else tg * a)
        return (
            ops.where(nonneg, 0.0 if tg is None else tg, 0.0 if rest0 is None else rest0),
            ops.where(nonneg, 0.0, 0.0 if rest1 is None else rest1),
        )


class Softplus(Function):
    """log(1 + exp(beta * a)) / beta, linear above the threshold."""

    grad_fn_name = "SoftplusBackward0"

    def forward(ctx, a, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        ctx.save(a)
        x = ops.float_data(a)
        bx = x * np.asarray(beta, x.dtype)
        with np.errstate(over="ignore"):
            soft = (np.log1p(np.exp(bx)) / np.asarray(beta, x.dtype)).astype(x.dtype)
        return np.where(bx > threshold, x, soft)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (SoftplusBackward.apply(g, a, beta=ctx.beta, threshold=ctx.threshold),)

    def jvp(ctx, ts, xs, r):
        return SoftplusBackward.apply(ts[0], xs[0], beta=ctx.beta, threshold=ctx.threshold)


class SoftplusBackward(Function):
    """softplus's gradient: g * sigmoid(beta * a), g itself above the threshold"""

    grad_fn_name = "SoftplusBackwardBackward0"

    def forward(ctx, g, a, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        ctx.save(g if ctx.needs_input_grad[1] else None, a)
        x, gd = a.data_, g.data_
        bx = x * np.asarray(beta, x.dtype)
        with np.errstate(over="ignore"):
            z = np.exp(bx)
            soft = (gd * z / (z + 1)).astype(gd.dtype)
        return np.where(bx > threshold, gd, np.where(np.isinf(z), gd, soft))

    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        b, th = ctx.beta, ctx.threshold
        gg_g = (
            SoftplusBackward.apply(gg, a, beta=b, threshold=th) if ctx.needs_input_grad[0] else None
        )
        gg_a = None
        if g is not None:
            # PyTorch's softplus_double_backward: zero from the threshold itself on
            # (strictly below it counts), as a product (so -0. and NaN as there)
            bx = a * b
            s = ops.sigmoid(bx)
            # (the last product, by beta, C++'s by a number: MulBackward1)
            gg_a = MulScalar.apply(gg * g * (1 - s) * s * (bx < th), other=b)
        return gg_g, gg_a

    def jvp(ctx, ts, xs, r):
        (tg, ta), (g, a) = ts, xs
        b, th = ctx.beta, ctx.threshold
        dg = None if tg is None else SoftplusBackward.apply(tg, a, beta=b, threshold=th)
        da = None
        if ta is not None:
            bx = a * b
            s = ops.sigmoid(bx)
            da = ta * g * (1 - s) * s * (bx < th) * b
        return _lin(dg, da)


_SQRT1_2 = 0.7071067811865476  # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi), the normal density's factor
_GELU_BETA = 0.7978845608028654  # sqrt(2 / pi), gelu's tanh approximation
_GELU_KAPPA = 0.044715
_erf = np.frompyfunc(math.erf, 1, 1)


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf elementwise in float64 (NumPy has none; math.erf is the C library's)."""
    return np.asarray(_erf(x.astype(np.float64)), np.float64)


def _gelu_parts(x: np.ndarray, approximate: str) -> tuple[np.ndarray, np.ndarray]:
    """(gelu(x), gelu'(x)) in float64."""
    x = x.astype(np.float64)
    if approximate == "tanh":
        inner = _GELU_BETA * (x + _GELU_KAPPA * x * x * x)
        th = np.tanh(inner)
        value = 0.5 * x * (1 + th)
        slope = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * _GELU_BETA * (
            1 + 3 * _GELU_KAPPA * x * x
        )
        return value, slope
    cdf = 0.5 * (1 + _erf64(x * _SQRT1_2))
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * x * x)
    return x * cdf, cdf + x * pdf


class Gelu(Function):
    """x * Phi(x) (Phi the normal CDF), or its tanh approximation"""

    grad_fn_name = "GeluBackward0"

    def forward(ctx, a, approximate):
        ctx.approximate = approximate
        ctx.save(a)
        x = ops.float_data(a)
        return _gelu_parts(x, approximate)[0].astype(x.dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (GeluBackward.apply(g, a, approximate=ctx.approximate),)


class GeluBackward(Function):
    """gelu's gradient g * gelu'(x)"""

    grad_fn_name = "GeluBackwardBackward0"

    def forward(ctx, g, a, approximate):
        ctx.approximate = approximate
        ctx.save(g if ctx.needs_input_grad[1] else None, a)
        gd = g.data_
        return (gd * _gelu_parts(a.data_, approximate)[1]).astype(gd.dtype)

    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        approx = ctx.approximate
        gg_g = GeluBackward.apply(gg, a, approximate=approx) if ctx.needs_input_grad[0] else None
        gg_a = None
        if g is not None:
            if approx == "tanh":
                x2 = a * a
                du = (x2 * (3 * _GELU_KAPPA) + 1) * _GELU_BETA
                ddu = a * (6 * _GELU_KAPPA * _GELU_BETA)
                th = ops.tanh((a + a * x2 * _GELU_KAPPA) * _GELU_BETA)
                sech2 = 1 - th * th
                second = sech2 * (du + a * 0.5 * (ddu - th * du * du * 2))
            else:  # d/dx (Phi(x) + x phi(x)) = phi(x) (2 - x^2)
                second = ops.exp(a * a * -0.5) * _INV_SQRT_2PI * (2 - a * a)
            gg_a = gg * g * second
        return gg_g, gg_a


class Elu(Function):
    """x if x > 0 else alpha * (exp(x) - 1)"""

    grad_fn_name = "EluBackward0"

    def forward(ctx, a, alpha):
        ctx.alpha = alpha
        ctx.save(a)
        x = ops.float_data(a)
        with np.errstate(over="ignore"):
            neg = np.expm1(x) * np.asarray(alpha, x.dtype)
        return np.where(x > 0, x, neg).astype(x.dtype, copy=False)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (EluBackward.apply(g, a, alpha=ctx.alpha),)


class EluBackward(Function):
    """elu's gradient: g where x > 0, else g * alpha * exp(x)"""

    grad_fn_name = "EluBackwardBackward0"

    def forward(ctx, g, a, alpha):
        ctx.alpha = alpha
        ctx.save(g if ctx.needs_input_grad[1] else None, a)
        x, gd = a.data_, g.data_
        with np.errstate(over="ignore"):
            neg = gd * np.asarray(alpha, gd.dtype) * np.exp(x)
        return np.where(x <= 0, neg, gd).astype(gd.dtype, copy=False)

    def backward(ctx, gg):
        g, a = ctx.saved_tensors
        gg_g = EluBackward.apply(gg, a, alpha=ctx.alpha) if ctx.needs_input_grad[0] else None
        gg_a = None
        if g is not None:
            gg_a = ops.where(a <= 0, gg * g * ops.exp(a) * ctx.alpha, 0.0)
        return gg_g, gg_a


class Silu(Function):
    """x * sigmoid(x)"""

    grad_fn_name = "SiluBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return kernels32.silu(ops.float_data(a))

    def backward(ctx, g):
        # PyTorch's differentiable form: g * s * (1 + x * (1 - s))
        (a,) = ctx.saved_tensors
        s = ops.sigmoid(a)
        return (g * s * (1 + a * (1 - s)),)


class Hardtanh(Function):
    """x clamped to [min_val, max_val]"""

    grad_fn_name = "HardtanhBackward0"

    def forward(ctx, a, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        ctx.save(a)
        x = a.data_
        return np.minimum(np.maximum(x, np.asarray(lo, x.dtype)), np.asarray(hi, x.dtype))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (HardtanhBackward.apply(g, a, lo=ctx.lo, hi=ctx.hi),)


class HardtanhBackward(Function):
    """hardtanh's gradient: g strictly inside (min_val, max_val), else 0"""

    grad_fn_name = "HardtanhBackwardBackward0"

    def forward(ctx, g, a, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        ctx.save(a)
        x, gd = a.data_, g.data_
        return np.where((x <= lo) | (x >= hi), np.zeros((), gd.dtype), gd)

    def backward(ctx, gg):
        (a,) = ctx.saved_tensors
        return HardtanhBackward.apply(gg, a, lo=ctx.lo, hi=ctx.hi), _zeros_like(a)


class Clamp(Function):
    """min(max(a, lo), hi); the gradient passes at the bounds themselves."""

    grad_fn_name = "ClampBackward1"

    def forward(ctx, a, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        ctx.save(a)
        x = a.data_
        # PyTorch's min(max(x, lo), hi) keeps x on ties (-0. against 0.) and turns a
        # NaN bound into NaN
        if lo is not None:
            lo_ = np.asarray(lo).astype(x.dtype)  # an unsigned kernel wraps -1
            x = np.where((x < lo_) | np.isnan(lo_), lo_, x)
        if hi is not None:
            hi_ = np.asarray(hi).astype(x.dtype)
            x = np.where((x > hi_) | np.isnan(hi_), hi_, x)
        return x

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        keep = None
        if ctx.lo is not None:
            keep = a >= ctx.lo
        if ctx.hi is not None:
            keep = (a <= ctx.hi) if keep is None else keep & (a <= ctx.hi)
        return (g if keep is None else ops.where(keep, g, 0.0),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        keep = None
        if ctx.lo is not None:
            keep = a >= ctx.lo
        if ctx.hi is not None:
            keep = (a <= ctx.hi) if keep is None else keep & (a <= ctx.hi)
        return t if keep is None else ops.where(keep, t, 0.0)


class ClampTensor(Function):
    """clamp with tensor bounds (`clamp(x, min=t)`): the bounds get gradients too"""

    grad_fn_name = "ClampBackward0"

    def forward(ctx, a, lo, hi, dtype):
        ctx.save(a, lo, hi)
        x = _d(a, dtype)
        bounds = [_d(t, dtype) for t in (lo, hi) if t is not None]
        shape = np.broadcast_shapes(x.shape, *(b.shape for b in bounds))
        simd = _simd_positions(shape, (x, *bounds), x.dtype)
        # minimum(maximum(x, lo), hi), each settling its zero ties like maximum does
        if lo is not None:
            x = _zero_ties(np.maximum(x, bounds[0]), x, bounds[0], simd)
        if hi is not None:
            x = _zero_ties(np.minimum(x, bounds[-1]), x, bounds[-1], simd)
        return x

    def backward(ctx, g):
        # PyTorch's clamp_backward and clamp_backward_min_max
        a, lo, hi = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = glo = ghi = None
        if need[0]:
            keep = None if lo is None else a >= lo
            if hi is not None:
                keep = (a <= hi) if keep is None else keep & (a <= hi)
            ga = ops.where(keep, g, 0.0)
        if lo is not None and need[1]:
            pick = a < lo if hi is None else (a < lo) & (lo < hi)
            glo = ops.where(pick, g, 0.0)
        if hi is not None and need[2]:
            pick = a > hi if lo is None else (a > hi) | (hi < lo)
            ghi = ops.where(pick, g, 0.0)
        return ga, glo, ghi

    def jvp(ctx, ts, xs, r):
        # the tangent of whichever of a, lo, hi the result is
        (ta, tlo, thi), (a, lo, hi) = ts, xs
        keep = None if lo is None else a >= lo
        if hi is not None:
            keep = (a <= hi) if keep is None else keep & (a <= hi)
        terms = [None if ta is None else ops.where(keep, ta, 0.0)]
        if tlo is not None:
            pick = a < lo if hi is None else (a < lo) & (lo < hi)
            terms.append(ops.where(pick, tlo, 0.0))
        if thi is not None:
            pick = a > hi if lo is None else (a > hi) | (hi < lo)
            terms.append(ops.where(pick, thi, 0.0))
        return _lin(*terms)


class _ZeroGrad(Function):
    """Piecewise-constant ops: a grad_fn exists, the gradient is zero (PyTorch's
    `zeros_like(grad)`: +0 everywhere, whatever the sign or NaNs of `g`)."""

    def backward(ctx, g):
        return (_zeros_like(g),)

    def jvp(ctx, ts, xs, r):
        return _zeros_like(r)


def _sign_values(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.copy()
    # PyTorch's sign is (0 < x) - (x < 0): 0 for NaN, +0 for -0
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


class Sign(_ZeroGrad):
    """sign(a)"""

    grad_fn_name = "SignBackward0"

    def forward(ctx, a):
        return _sign_values(a.data_)


class Sgn(Function):
    """sgn(a): sign(a) for real numbers, with an efficient zero as gradient"""

    grad_fn_name = "SgnBackward0"

    def forward(ctx, a):
        # PyTorch's node saves self and result for complex inputs' formula, and checks
        # them for real ones too (a changed input fails a backward: s26b:2725)
        ctx.save_output(a)
        return _sign_values(a.data_)

    def backward(ctx, g):
        ctx.saved_tensors  # noqa: B018 - unpacked (version-checked) as PyTorch's node does
        # PyTorch's sgn_backward for real inputs: a ZeroTensor, which the engine skips
        # when it adds gradients and which `*` and views pass on (see tensor.ZeroCounter)
        return (efficient_zero(g.data_.shape, g.data_.dtype),)

    def jvp(ctx, ts, xs, r):
        return efficient_zero(r.data_.shape, r.data_.dtype)


class Floor(_ZeroGrad):
    """floor(a)"""

    grad_fn_name = "FloorBackward0"

    def forward(ctx, a):
        return np.floor(a.data_)


class Ceil(_ZeroGrad):
    """ceil(a)"""

    grad_fn_name = "CeilBackward0"

    def forward(ctx, a):
        return np.ceil(a.data_)


class Round(_ZeroGrad):
    """round half to even"""

    grad_fn_name = "RoundBackward0"

    def forward(ctx, a):
        return np.round(a.data_)


class RoundDecimals(_ZeroGrad):
    """round half to even at `decimals` digits"""

    grad_fn_name = "RoundBackward1"

    def forward(ctx, a, decimals):
        return np.round(a.data_, decimals)


class Clone(Function):
    """a copy"""

    grad_fn_name = "CloneBackward0"

    def forward(ctx, a, contiguous=False):
        # clone() keeps the memory layout (preserve_format); contiguous() does not
        return a.data_.copy(order="C") if contiguous else clone_preserving(a.data_)

    def backward(ctx, g):
        return (g,)

    def jvp(ctx, ts, xs, r):
        return ops.clone(ts[0])


class ToCopy(Function):
    """a converted to another dtype"""

    grad_fn_name = "ToCopyBackward0"

    def forward(ctx, a, dtype):
        ctx.in_dtype = a.data_.dtype
        return converted(a.data_, dtype)

    def backward(ctx, g):
        return (ops.to_dtype(g, ctx.in_dtype),)

    def jvp(ctx, ts, xs, r):
        return ToCopy.apply(ts[0], dtype=r.data_.dtype)


# ************************************************************ reductions


def _unreduce(g: Tensor, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Put back the reduced dims (size 1) so `g` broadcasts against the input."""
    if not keepdim:
        for d in sorted(dims):
            g = ops.unsqueeze(g, d)
    return g


class Sum(Function):
    """sum of all elements"""

    grad_fn_name = "SumBackward0"

    def forward(ctx, a, dtype):
        ctx.shape = a.data_.shape
        return torch_sum(a.data_, None, dtype=dtype)

    def backward(ctx, g):
        return (ops.expand(g, ctx.shape),)

    def jvp(ctx, ts, xs, r):
        return ops.sum(ts[0])


class SumDim(Function):
    """sum over `dims`"""

    contiguous_result = True

    grad_fn_name = "SumBackward1"

    def forward(ctx, a, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = a.data_.shape, dims, keepdim
        return torch_sum(a.data_, dims, keepdim, dtype=dtype)

    def backward(ctx, g):
        return (ops.expand(_unreduce(g, ctx.shape, ctx.dims, ctx.keepdim), ctx.shape),)

    def jvp(ctx, ts, xs, r):
        return ops.sum_dims(ts[0], ctx.dims, ctx.keepdim)


class Mean(Function):
    """mean of all elements"""

    grad_fn_name = "MeanBackward0"

    def forward(ctx, a):
        ctx.shape = a.data_.shape
        x = a.data_
        return torch_mean(x, None) if x.size else np.asarray(np.nan, x.dtype)

    def backward(ctx, g):
        n = max(1, int(np.prod(ctx.shape)))
        # PyTorch divides by the count as a C++ number: DivBackward1
        return (DivScalar.apply(ops.expand(g, ctx.shape), other=n),)

    def jvp(ctx, ts, xs, r):
        return ops.mean(ts[0])


class MeanDim(Function):
    """mean over `dims`"""

    contiguous_result = True

    grad_fn_name = "MeanBackward1"

    def forward(ctx, a, dims, keepdim):
        x = a.data_
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if x.size == 0:  # NaN where nothing was averaged (without NumPy's warning)
            total = np.sum(x, axis=dims, keepdims=keepdim, dtype=x.dtype)
            n = int(np.prod([x.shape[d] for d in dims]))
            return np.full_like(total, np.nan) if n == 0 else total
        return torch_mean(x, dims, keepdim)

    def backward(ctx, g):
        n = int(np.prod([ctx.shape[d] for d in ctx.dims]))
        g = ops.expand(_unreduce(g, ctx.shape, ctx.dims, ctx.keepdim), ctx.shape)
        return (DivScalar.apply(g, other=n),)

    def jvp(ctx, ts, xs, r):
        return ops.mean_dims(ts[0], ctx.dims, ctx.keepdim)


class Prod(Function):
    """product of all elements"""

    grad_fn_name = "ProdBackward0"

    def forward(ctx, a, dtype):
        ctx.save_output(a)
        return np.prod(a.data_, dtype=dtype)

    def backward(ctx, g):
        # PyTorch's prod_backward: result / a without zeros, else the exact product of
        # the others
        a, r = ctx.saved_tensors
        x = a.data_
        if x.ndim == 0:
            return (g,)
        zeros = np.count_nonzero(x == 0)
        if not zeros:
            return (g * (r / a),)
        if zeros > 1 and not grad_mode.state.enabled:  # PyTorch's shortcut: +0. throughout
            return (_zeros_like(a),)
        if x.size == 1:  # PyTorch: the gradient itself (a view), product of nothing else
            return (ops.reshape(g, x.shape),)
        flat = ops.reshape(a, (-1,))
        return (ops.reshape(g * ops.prod_others(flat, 0), x.shape),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        x = a.data_
        if x.ndim == 0:
            return t
        if not np.any(x == 0):
            return ops.sum(t * (r / a))
        flat = ops.reshape(a, (-1,))
        return ops.sum(ops.reshape(t, (-1,)) * ops.prod_others(flat, 0))


class ProdDim(Function):
    """product over one dim"""

    contiguous_result = True

    grad_fn_name = "ProdBackward1"

    def forward(ctx, a, dim, keepdim, dtype):
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save_output(a)
        axis = dim if a.data_.ndim else None  # a 0-d tensor: dim 0 is the tensor itself
        return np.prod(a.data_, axis=axis, keepdims=keepdim, dtype=dtype)

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        x = a.data_
        if x.ndim == 0:
            return (g,)
        g = _unreduce(g, x.shape, (ctx.dim,), ctx.keepdim)
        if not np.any(x == 0):
            return (g * (_unreduce(r, x.shape, (ctx.dim,), ctx.keepdim) / a),)
        if x.shape[ctx.dim] == 1:  # PyTorch: the gradient itself, product of nothing else
            return (g,)
        return (g * ops.prod_others(a, ctx.dim),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        x = a.data_
        if x.ndim == 0:
            return t
        if not np.any(x == 0):
            w = _unreduce(r, x.shape, (ctx.dim,), ctx.keepdim) / a
        else:
            w = ops.prod_others(a, ctx.dim)
        return ops.sum_dims(t * w, (ctx.dim,), ctx.keepdim)


class _EvenlyDistributed(Function):
    """Full max/min: the gradient is shared equally among tied extreme elements (the
    NaNs when the result is NaN); the others get exact zeros, not g * 0."""

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        mask = ops.isnan(a) if np.isnan(r.data_) else a == r
        share = g / ops.sum(mask)
        # PyTorch fills its new zeros in place (masked_fill_): version 1
        return (_written(ops.masked_fill(_zeros_like(a), mask, share)),)

    def jvp(ctx, ts, xs, r):
        # the mean of the tangents of the tied extreme elements
        (t,), (a,) = ts, xs
        mask = ops.isnan(a) if np.isnan(r.data_) else a == r
        return ops.sum(ops.where(mask, t, 0.0)) / ops.sum(mask)


class Max(_EvenlyDistributed):
    """max of all elements"""

    grad_fn_name = "MaxBackward1"

    def forward(ctx, a):
        ops.check_nonempty(a, "max")
        ctx.save_output(a)
        return extremes.fix_reduce_all(a.data_, np.max(a.data_))


class Min(_EvenlyDistributed):
    """min of all elements"""

    grad_fn_name = "MinBackward1"

    def forward(ctx, a):
        ops.check_nonempty(a, "min")
        ctx.save_output(a)
        return extremes.fix_reduce_all(a.data_, np.min(a.data_))


class _SelectingReduction(Function):
    """max/min along a dim: the gradient goes to the chosen index only."""

    contiguous_result = True

    def backward(ctx, g):
        _check_kept(ctx)
        if not ctx.shape:  # PyTorch's zeros.scatter of a 0-d tensor: a new tensor, not g
            index = np.zeros((), np.int64)
            return (_written(ScatterPut.apply(g, dim=0, index=index, shape=()), 2),)
        g = _unreduce(g, ctx.shape, (ctx.dim,), ctx.keepdim)
        # PyTorch's value_selecting_reduction_backward leaves its result at version 2
        r = ScatterPut.apply(g, dim=ctx.dim, index=ctx.indices, shape=ctx.shape)
        return (_written(r, 2),)

    def jvp(ctx, ts, xs, r):
        t = ts[0]
        if not ctx.shape:
            return ops.clone(t)
        picked = ops.gather(t, ctx.dim, Tensor._make(ctx.indices))
        return picked if ctx.keepdim else ops.squeeze(picked, ctx.dim)


def _select_0d(ctx: Function, x: np.ndarray) -> np.ndarray:
    """max/min along dim 0 of a 0-d tensor: its value, index 0 kept for backward."""
    ctx.indices = np.zeros((), np.int64)
    _keep_indices(ctx, ctx.indices)
    return x.copy()


def _keep_indices(ctx: Function, out: np.ndarray) -> None:
    """Save the indices max/min(dim) returns as PyTorch does: the very tensor the
    script gets (`ctx.index_output`), so changing it in place fails the backward."""
    ctx.index_output = Tensor._make(out.astype(np.int64))
    _keep(ctx, kept=(ctx.index_output,))


def _select_dim(ctx: Function, a: Tensor, dim: int, keepdim: bool, pick: Any) -> np.ndarray:
    """max/min along `dim`: the values, the chosen indices kept for backward."""
    x = a.data_
    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
    if x.ndim == 0:  # dim 0 of a 0-d tensor: the tensor itself, at index 0
        return _select_0d(ctx, x)
    idx = np.expand_dims(pick(x, axis=dim), dim)
    ctx.indices = idx
    _keep_indices(ctx, idx if keepdim else np.squeeze(idx, dim))
    vals = np.take_along_axis(x, idx, dim)
    return vals if keepdim else np.squeeze(vals, dim)


class MaxDim(_SelectingReduction):
    """max along `dim` (values; indices kept on the node)"""

    grad_fn_name = "MaxBackward0"

    def forward(ctx, a, dim, keepdim):
        return _select_dim(ctx, a, dim, keepdim, np.argmax)


class MinDim(_SelectingReduction):
    """min along `dim` (values; indices kept on the node)"""

    grad_fn_name = "MinBackward0"

    def forward(ctx, a, dim, keepdim):
        return _select_dim(ctx, a, dim, keepdim, np.argmin)


def _select_at(ctx: Function, a: Tensor, dim: int, index: np.ndarray) -> np.ndarray:
    """topk/sort: the values at `index` along `dim`, the indices kept for backward
    (their shape is the result's, so the backward scatters as keepdim=True)."""
    x = a.data_
    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, True
    if x.ndim == 0:  # a 0-d tensor sorts to itself, at index 0
        return _select_0d(ctx, x)
    ctx.indices = index
    _keep_indices(ctx, index)
    return np.take_along_axis(x, index, dim)


class TopK(_SelectingReduction):
    """the k largest/smallest along `dim` (values; indices kept on the node)"""

    grad_fn_name = "TopkBackward0"

    def forward(ctx, a, dim, index):
        return _select_at(ctx, a, dim, index)


class Sort(_SelectingReduction):
    """sorted along `dim` (values; indices kept on the node)"""

    grad_fn_name = "SortBackward0"

    def forward(ctx, a, dim, index):
        return _select_at(ctx, a, dim, index)


class SortStable(Sort):
    """sort called with `stable=` (PyTorch's sort.stable overload)"""

    grad_fn_name = "SortBackward1"


class _AmaxAmin(Function):
    contiguous_result = True

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        # PyTorch's restore_reduced_dims reshapes (ViewBackward0, even to the same shape);
        # a 0-d input's named dims come back as size-1 dims, summed away at the end
        shape = r.data_.shape
        if not ctx.keepdim:
            if ctx.shape:
                shape = tuple(1 if d in ctx.dims else n for d, n in enumerate(ctx.shape))
            else:
                shape = (1,) * ctx.named
            r, g = ops.reshape(r, shape), ops.reshape(g, shape)
        mask = ops.to_dtype(a == r, a.data_.dtype)
        # PyTorch's scale_grad_by_count: (g / count) * mask
        dims = ctx.dims if ctx.shape or not shape else tuple(range(len(shape)))
        out = (g / ops.sum_dims(mask, dims, True)) * mask
        return (ops.sum_to(out, ctx.shape) if out.data_.shape != ctx.shape else out,)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        mask = ops.to_dtype(a == _unreduce(r, ctx.shape, ctx.dims, ctx.keepdim), t.data_.dtype)
        return ops.sum_dims(t * mask, ctx.dims, ctx.keepdim) / ops.sum_dims(
            mask, ctx.dims, ctx.keepdim
        )


class Amax(_AmaxAmin):
    """max over dims; ties share the gradient"""

    grad_fn_name = "AmaxBackward0"

    def forward(ctx, a, dims, keepdim, named=0):
        ctx.shape, ctx.dims, ctx.keepdim, ctx.named = a.data_.shape, dims, keepdim, named
        ctx.save_output(a)
        r = extremes.fix_reduction(a.data_, np.max(a.data_, axis=dims, keepdims=True), dims)
        return r if keepdim else np.squeeze(r, dims)


class Amin(_AmaxAmin):
    """min over dims; ties share the gradient"""

    grad_fn_name = "AminBackward0"

    def forward(ctx, a, dims, keepdim, named=0):
        ctx.shape, ctx.dims, ctx.keepdim, ctx.named = a.data_.shape, dims, keepdim, named
        ctx.save_output(a)
        r = extremes.fix_reduction(a.data_, np.min(a.data_, axis=dims, keepdims=True), dims)
        return r if keepdim else np.squeeze(r, dims)


def _serial_sum(x: np.ndarray, dims: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """x summed over dims one element after another in memory order, rounding each step
    (PyTorch's serial binary_kernel_reduce, which its p-norm kernels use for p != 2)."""
    red = tuple(range(x.ndim)) if dims is None else tuple(d % x.ndim for d in dims)
    if not red or x.size == 0:
        return np.sum(x, axis=red, keepdims=keepdim)
    keep = [d for d in range(x.ndim) if d not in red]
    flat = np.transpose(x, keep + sorted(red)).reshape([x.shape[d] for d in keep] + [-1])
    # np.add.accumulate adds serially (np.sum would add pairwise)
    out = np.add.accumulate(flat, axis=-1)[..., -1]
    if keepdim:
        out = out.reshape([1 if d in red else x.shape[d] for d in range(x.ndim)])
    return out


class Norm(Function):
    """vector p-norm over `dims` (all when None)"""

    contiguous_result = True

    grad_fn_name = "LinalgVectorNormBackward0"

    def forward(ctx, a, p, dims, keepdim):
        x = ops.float_data(a)
        ctx.p, ctx.dims, ctx.keepdim, ctx.shape = p, dims, keepdim, x.shape
        ctx.save_output(a)
        ax = np.abs(x)
        n = x.size if dims is None else math.prod(x.shape[d] for d in dims)
        if n == 1 and p != 0 and (x.ndim or dims is None):
            # PyTorch reduces one element to its absolute value (not a 0-d tensor given
            # a dim, whose power it takes and undoes)
            out = np.sum(ax, axis=dims, keepdims=keepdim)
        elif p == float("inf"):
            out = np.max(ax, axis=dims, keepdims=keepdim)
        elif p == 0:
            out = np.sum(ax != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            out = _serial_sum(ax, dims, keepdim)
        elif p == 2 and x.dtype in (np.float32, np.float64):
            out = moments.torch_norm2(x, tuple(range(x.ndim)) if dims is None else dims, keepdim)
        elif p == 2:
            out = np.sqrt(np.sum(ax * ax, axis=dims, keepdims=keepdim))
        elif x.dtype == np.float32:
            # nearest PyTorch's float32 kernel: |x|^p rounded once, then powf
            acc = _serial_sum(kernels32.rounded(lambda v: v**p, ax), dims, keepdim)
            out = kernels32.powf(np.asarray(acc, x.dtype), 1.0 / p)
        else:  # PyTorch's kernel calls the C library's pow (NumPy's rounds otherwise)
            acc = _serial_sum(_libm_pow(ax, p), dims, keepdim)
            out = _libm_pow(np.asarray(acc, x.dtype), 1.0 / p)
        return np.asarray(out, x.dtype)

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        if ctx.p == 0:
            return (None,)  # PyTorch gives no gradient at all (an undefined tensor)
        return (_norm_backward(ctx, g, a, r),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        dims = ctx.dims if ctx.dims is not None else tuple(range(a.data_.ndim))
        if ctx.p == 0:
            return _zeros_like(r)
        w = _norm_backward(ctx, _ones_like(r), a, r)
        return ops.sum_dims(t * w, dims, ctx.keepdim)


def _libm_pow(x: np.ndarray, e: float) -> np.ndarray:
    """x ** e element by element with the C library's pow, as PyTorch's scalar kernels
    (NumPy's own pow can differ in the last bit: 27 ** (1/3) is 2.9999999999999996)."""

    def one(b: float) -> float:
        try:
            return math.pow(b, e)
        except (ValueError, OverflowError):  # 0 ** -p, overflow: NumPy's inf (or nan)
            with np.errstate(all="ignore"):
                return float(np.power(b, e))

    return np.asarray(np.frompyfunc(one, 1, 1)(x), dtype=x.dtype)


def _norm_backward(ctx: Function, g: Tensor, a: Tensor, r: Tensor) -> Tensor:
    """The p-norm's gradient for the incoming g (p != 0): PyTorch's
    linalg_vector_norm_backward (0 where the norm is 0)."""
    dims = ctx.dims if ctx.dims is not None else tuple(range(a.data_.ndim))
    p = ctx.p
    # PyTorch unsqueezes the named dims only: a whole reduction's 0-d g and norm
    # broadcast as they are (a changed g names its own shape: s26c:35320)
    if ctx.dims is not None:
        g = _unreduce(g, ctx.shape, dims, ctx.keepdim)
    if p == 1:
        return ops.sgn(a) * g
    if ctx.dims is not None:
        r = _unreduce(r, ctx.shape, dims, ctx.keepdim)
    if p == 2:
        # PyTorch: g * (a / r).masked_fill_(r == 0, 0) (the sign is g's)
        return g * ops.masked_fill(a / r, r == 0, 0.0)
    if p == float("inf"):
        # the extreme elements, or the NaNs (a NaN's sign is 0: its share vanishes)
        absolute = ops.abs(a)
        mask = ops.to_dtype((absolute == r) | ops.isnan(absolute), a.data_.dtype)
        return ops.sgn(a) * ((g / ops.sum_dims(mask, dims, True)) * mask)
    if p < 1:
        scaled = ops.sgn(a) * ops.masked_fill(ops.abs(a) ** (p - 1), a == 0, 0.0)
        return scaled * g * r ** (1 - p)
    scaled = ops.sgn(a) * ops.abs(a) ** (p - 1) if p < 2 else a * ops.abs(a) ** (p - 2)
    return scaled * ops.masked_fill(g / r ** (p - 1), r == 0, 0.0)


class Logsumexp(Function):
    """log(sum(exp(a))) over dims, computed stably"""

    contiguous_result = True

    grad_fn_name = "LogsumexpBackward0"

    def forward(ctx, a, dims, keepdim):
        x = ops.float_data(a)
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape
        ctx.save_output(a)
        if not x.size:
            with np.errstate(divide="ignore"):
                out = np.log(np.sum(np.exp(x), axis=dims, keepdims=True))
        else:
            # PyTorch's steps and kernels: the max (an infinite one as 0, NaN kept),
            # exp of the difference, its sum, log, plus the max
            m = np.max(x, axis=dims, keepdims=True)
            m = np.where(np.abs(m) == np.inf, np.zeros((), x.dtype), m)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                e = _vml("exp", np.exp, np.asarray(x - m))
                s = torch_sum(e, tuple(range(x.ndim)) if dims is None else dims, keepdim=True)
                out = _vml("log", np.log, np.asarray(s)) + m
        if not keepdim:
            out = np.squeeze(out, axis=dims)
        return out.astype(x.dtype)

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        r = _unreduce(r, ctx.shape, ctx.dims, ctx.keepdim)
        g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        return (g * ops.exp(a - r),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        w = ops.exp(a - _unreduce(r, ctx.shape, ctx.dims, ctx.keepdim))
        return ops.sum_dims(t * w, ctx.dims, ctx.keepdim)


class Var(Function):
    """variance over dims with Bessel's correction"""

    contiguous_result = True

    grad_fn_name = "VarBackward0"

    def forward(ctx, a, dims, correction, keepdim, whole=False):
        x = ops.float_data(a)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.shape = dims, correction, keepdim, x.shape
        ctx.whole = whole  # dim=None: PyTorch's backward differs when no dof is left
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return moments.torch_var(x, dims, correction, keepdim, take_sqrt=False)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (_var_backward(ctx, g, a),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        return ops.sum_dims(t * _var_backward(ctx, _ones_like(r), a), ctx.dims, ctx.keepdim)


class Std(Function):
    """standard deviation over dims with Bessel's correction"""

    contiguous_result = True

    grad_fn_name = "StdBackward0"

    def forward(ctx, a, dims, correction, keepdim, whole=False):
        x = ops.float_data(a)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.shape = dims, correction, keepdim, x.shape
        ctx.whole = whole  # dim=None: PyTorch's backward differs when no dof is left
        ctx.save_output(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return moments.torch_var(x, dims, correction, keepdim, take_sqrt=True)

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        # PyTorch's std_backward: grad / (result * 2), masked_fill_ to 0 where result is 0
        half = g / MulScalar.apply(r, other=2)  # C++'s result * 2: MulBackward1
        return (_var_backward(ctx, ops.masked_fill(half, r == 0, 0.0), a),)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        g = ops.where(r == 0, 0.0, _ones_like(r) / (r * 2))
        return ops.sum_dims(t * _var_backward(ctx, g, a), ctx.dims, ctx.keepdim)


def _var_backward(ctx: Function, g: Tensor, a: Tensor) -> Tensor:
    """PyTorch's var_backward: 2 / (n - correction) * g * (a - mean). With no degrees of
    freedom left, 2 / 0 is infinite (NaN where a equals its mean, as 0 * inf); for
    `dim=None` or a 0-d tensor PyTorch writes that as a constant mask times g."""
    dof = int(np.prod([ctx.shape[d] for d in ctx.dims])) - ctx.correction
    if dof <= 0 and (ctx.whole or not ctx.shape):
        return g * ops.where(a == ops.mean(a), float("nan"), float("inf"))
    if ctx.whole:  # PyTorch's full reduction: a 0-d grad, self - self.mean()
        centred = a - ops.mean(a)
    else:
        if len(ctx.shape) > 1:  # PyTorch unsqueezes only then (a 0-d g broadcasts)
            g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        centred = a - ops.mean_dims(a, ctx.dims, True)
    # PyTorch's (2.0 / dof) * grad * (self - mean): the number first (MulBackward1)
    return MulScalar.apply(g, other=2.0 / dof if dof else float("inf")) * centred


class Cumsum(Function):
    """running sum along dim"""

    contiguous_result = True

    grad_fn_name = "CumsumBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        x = a.data_
        if x.ndim == 0:  # dim 0 of a 0-d tensor: the tensor itself, still 0-d
            return np.cumsum(x).reshape(())
        # PyTorch adds from +0. in double for float32 (so -0. sums to 0.)
        acc = np.float64 if x.dtype.kind == "f" and x.dtype.itemsize < 8 else None
        out = np.cumsum(x, axis=dim, dtype=acc).astype(x.dtype, copy=False)
        return out + x.dtype.type(0) if x.dtype.kind == "f" else out

    def backward(ctx, g):
        # PyTorch's trivial case returns the incoming gradient itself (the same tensor)
        if g.data_.ndim == 0 or g.data_.size <= 1 or g.data_.shape[ctx.dim] == 1:
            return (g,)
        return (ops.flip(ops.cumsum(ops.flip(g, (ctx.dim,)), ctx.dim), (ctx.dim,)),)

    def jvp(ctx, ts, xs, r):
        t = ts[0]
        return ops.clone(t) if t.data_.ndim == 0 else ops.cumsum(t, ctx.dim)


# ************************************************************ linear algebra


def _plus_zero(r: Any) -> Any:
    """A BLAS sum of products starts from +0, so an exact zero is +0, never -0."""
    if r.dtype.kind == "f":
        r = r + r.dtype.type(0)  # -0 + 0 == +0; nothing else changes
    return r


def _blas_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b: float32 by MKL's sgemm as PyTorch calls it, where MKL is installed;
    otherwise NumPy's, with PyTorch's signs of zero: gemm with an inner size of 1
    (both outer sizes above 1) stores the products themselves (-0. * 1. stays -0.)."""
    r = mkl.addmm(None, a, b)
    if r is not None:
        return r
    n, k = a.shape
    if k == 1 and n > 1 and b.shape[1] > 1:
        return a * b
    return _plus_zero(a @ b)


def _column_major(t: Tensor) -> bool:
    """Whether matrix t is laid out column by column (PyTorch's test in
    mm_mat1_backward / mm_mat2_backward: strides (1, rows))."""
    x = t.data_
    if x.ndim != 2 or not x.itemsize:
        return False
    s0, s1 = (st // x.itemsize for st in x.strides)
    return s0 == 1 and s1 == x.shape[0]


def _mm_mat1_backward(g: Tensor, mat2: Tensor, column_major: bool) -> Tensor:
    """The gradient of mat1 in mat1 @ mat2, by PyTorch's formula: for a column-major
    mat1, (mat2 @ g.T).T, so the gradient has mat1's layout; else g @ mat2.T."""
    if column_major:
        return ops.t(ops.mm(mat2, ops.t(g)))
    return ops.mm(g, ops.t(mat2))


def _mm_mat2_backward(g: Tensor, mat1: Tensor, column_major: bool) -> Tensor:
    """The gradient of mat2 in mat1 @ mat2: for a column-major mat2 (nn.Linear's
    weight.T), (g.T @ mat1).T; else mat1.T @ g."""
    if column_major:
        return ops.t(ops.mm(ops.t(g), mat1))
    return ops.mm(ops.t(mat1), g)


class Mm(Function):
    """matrix @ matrix"""

    grad_fn_name = "MmBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        ctx.layouts = (_column_major(a), _column_major(b))
        return _blas_mm(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        gb = _mm_mat2_backward(g, a, ctx.layouts[1]) if a is not None else None  # as PyTorch
        ga = _mm_mat1_backward(g, b, ctx.layouts[0]) if b is not None else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        return _zprod(ops.mm, _fz(ta, a, r), b) + _zprod(ops.mm, a, _fz(tb, b, r))


class Mv(Function):
    """matrix @ vector"""

    grad_fn_name = "MvBackward0"

    def forward(ctx, m, v, dtype):
        ctx.save(v if ctx.needs_input_grad[0] else None, m if ctx.needs_input_grad[1] else None)
        m_, v_ = _d(m, dtype), _d(v, dtype)
        r = mkl.mv(m_, v_)
        return _plus_zero(m_ @ v_) if r is None else r

    def backward(ctx, g):
        v, m = ctx.saved_tensors
        gm = ops.outer(g, v) if v is not None else None
        gv = ops.mv(ops.t(m), g) if m is not None else None
        return gm, gv

    def jvp(ctx, ts, xs, r):
        (tm, tv), (m, v) = ts, xs
        return _zprod(ops.mv, _fz(tm, m, r), v) + _zprod(ops.mv, m, _fz(tv, v, r))


class Dot(Function):
    """vector . vector"""

    grad_fn_name = "DotBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        a_, b_ = _d(a, dtype), _d(b, dtype)
        r = mkl.dot(a_, b_)
        return _plus_zero(np.dot(a_, b_)) if r is None else r

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        return _zprod(ops.dot, _fz(ta, a, r), b) + _zprod(ops.dot, a, _fz(tb, b, r))


def _bmm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for batches of matrices, as PyTorch computes it: under 400 multiply-adds
    per matrix its own loop (each element summed from +0, one product at a time, in
    order, float32 or float64), else MKL's batched sgemm where MKL is installed."""
    if a.dtype in (np.float32, np.float64) and a.shape[1] * a.shape[2] * b.shape[2] < 400:
        acc = np.zeros((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
        for k in range(a.shape[2]):
            acc += a[:, :, k : k + 1] * b[:, k : k + 1, :]
        return acc
    if a.dtype == np.float32:
        r = mkl.bmm(a, b)
        if r is not None:
            return r
    return _plus_zero(np.matmul(a, b))


class Bmm(Function):
    """batch of matrices @ batch of matrices (3-d, same batch size)"""

    grad_fn_name = "BmmBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return _bmm(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        gb = ops.bmm(ops.transpose(a, 1, 2), g) if a is not None else None  # as PyTorch
        ga = ops.bmm(g, ops.transpose(b, 1, 2)) if b is not None else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        return _zprod(ops.bmm, _fz(ta, a, r), b) + _zprod(ops.bmm, a, _fz(tb, b, r))


def _gemm_zero_signs(out: np.ndarray, b: np.ndarray, x: np.ndarray, w: np.ndarray) -> None:
    """PyTorch's gemm adds the products onto the bias one by one, so a -0. bias stays
    -0. where every product is -0. too (or there are none); NumPy's sum of the
    products starts from +0. Fixes those elements of `out` in place."""
    bb = np.broadcast_to(b, out.shape)
    cand = np.argwhere((out == 0) & np.signbit(bb))
    for i, j in cand:
        p = x[i, :] * w[:, j]
        if np.all((p == 0) & np.signbit(p)):
            out[i, j] = -0.0


class Addmm(Function):
    """bias + x @ w (F.linear with a bias)"""

    grad_fn_name = "AddmmBackward0"

    def forward(ctx, bias, x, w, dtype, beta=1, alpha=1):
        n = ctx.needs_input_grad
        ctx.beta, ctx.alpha = beta, alpha
        ctx.save(w if n[1] else None, x if n[2] else None)
        ctx.layouts = (_column_major(x), _column_major(w))
        x_, w_ = _d(x, dtype), _d(w, dtype)
        b_ = None if beta == 0 else _d(bias, dtype)
        r = mkl.addmm(b_, x_, w_, beta=float(beta), alpha=float(alpha))
        if r is not None:  # by MKL: PyTorch's one sgemm or dgemm call
            return r
        prod = _blas_mm(x_, w_)
        if alpha != 1:
            prod = prod * np.asarray(alpha, dtype)
        if beta == 0:  # the bias is not read at all: its NaNs do not propagate
            return prod
        b = _d(bias, dtype)
        out = (b if beta == 1 else b * np.asarray(beta, dtype)) + prod
        if beta == 1 and alpha == 1:
            _gemm_zero_signs(out, b, x_, w_)
        return out

    def backward(ctx, g):
        # PyTorch's maybe_multiply: a factor of 1 is not applied (no node)
        w, x = ctx.saved_tensors
        gx = _mm_mat1_backward(g, w, ctx.layouts[0]) if w is not None else None
        gw = _mm_mat2_backward(g, x, ctx.layouts[1]) if x is not None else None
        return tuple(_times(t, f) for t, f in ((g, ctx.beta), (gx, ctx.alpha), (gw, ctx.alpha)))

    def jvp(ctx, ts, xs, r):
        # PyTorch's maybe_multiply(self_t, beta) + maybe_multiply(mat1_t.mm(mat2_p), alpha)
        # + maybe_multiply(mat1_p.mm(mat2_t), alpha)
        (tbias, tx, tw), (bias, x, w) = ts, xs
        out = _times(_zprod(ops.mm, _fz(tx, x, r), w), ctx.alpha)
        if ctx.beta != 0:
            out = _times(_fz(tbias, bias, r), ctx.beta) + out
        return out + _times(_zprod(ops.mm, x, _fz(tw, w, r)), ctx.alpha)


def _times(t: Tensor | None, factor: Any) -> Tensor | None:
    """t * factor as PyTorch's C++ code multiplies by a number (MulBackward1), or t
    itself when the factor is 1 (or t is an efficient zero)."""
    if t is None or factor == 1 or is_efficient_zero(t):
        return t
    return MulScalar.apply(t, other=factor)


class Trilinear(Function):
    """a three-operand product-sum given as an einsum spec: nn.Bilinear's core
    "ni,oij,nj->no" (PyTorch's _trilinear); each gradient is again one (so its
    grad_fn is TrilinearBackward0, as in PyTorch)"""

    grad_fn_name = "TrilinearBackward0"

    def forward(ctx, a, b, c, spec, dtype):
        ctx.spec = spec
        ctx.save(a, b, c)
        return np.einsum(spec, _d(a, dtype), _d(b, dtype), _d(c, dtype))

    def backward(ctx, g):
        ops_in, out = ctx.spec.split("->")
        subs = ops_in.split(",")
        saved = ctx.saved_tensors
        grads = []
        for k in range(3):
            if not ctx.needs_input_grad[k]:
                grads.append(None)
                continue
            others = [i for i in range(3) if i != k]
            spec = f"{out},{subs[others[0]]},{subs[others[1]]}->{subs[k]}"
            x, y = saved[others[0]], saved[others[1]]
            grads.append(Trilinear.apply(g, x, y, spec=spec, dtype=g.data_.dtype))
        return tuple(grads)


# ************************************************************ shapes and views


class View(Function):
    """a viewed with another shape"""

    grad_fn_name = "ViewBackward0"

    def forward(ctx, a, shape):
        ctx.shape = a.data_.shape
        return ops.reshaped(a.data_, shape)

    def backward(ctx, g):
        return (ops.reshape(g, ctx.shape),)

    def jvp(ctx, ts, xs, r):
        return ops.reshape(ts[0], r.data_.shape)


class UnsafeView(View):
    """`_unsafe_view`: a fresh result reshaped (reshape of a copy, matmul's output)"""

    grad_fn_name = "UnsafeViewBackward0"


class ReshapeAlias(View):
    """reshape of a non-contiguous tensor that is still a view"""

    grad_fn_name = "ReshapeAliasBackward0"


class Alias(Function):
    """the same values as a new view (`x[...]`)"""

    grad_fn_name = "AliasBackward0"

    def forward(ctx, a):
        return a.data_.view()

    def backward(ctx, g):
        return (g,)

    def jvp(ctx, ts, xs, r):
        return ops._view_of(ts[0], Alias.apply(ts[0]))


class Transpose(Function):
    """two dims swapped"""

    grad_fn_name = "TransposeBackward0"

    def forward(ctx, a, d0, d1):
        ctx.d0, ctx.d1 = d0, d1
        x = a.data_
        return np.swapaxes(x, d0, d1) if x.ndim else x.view()  # dims 0/-1 of a 0-d

    def backward(ctx, g):
        return (ops.transpose(g, ctx.d0, ctx.d1),)

    def jvp(ctx, ts, xs, r):
        return ops.transpose(ts[0], ctx.d0, ctx.d1)


class T(Function):
    """2-d transpose (`t()`)"""

    grad_fn_name = "TBackward0"

    def forward(ctx, a):
        return a.data_.T

    def backward(ctx, g):
        return (ops.t(g),)

    def jvp(ctx, ts, xs, r):
        return ops.t(ts[0])


class Permute(Function):
    """dims reordered"""

    grad_fn_name = "PermuteBackward0"

    def forward(ctx, a, dims):
        ctx.dims = dims
        return np.transpose(a.data_, dims)

    def backward(ctx, g):
        inverse = tuple(int(i) for i in np.argsort(ctx.dims))
        return (ops.permute(g, inverse),)

    def jvp(ctx, ts, xs, r):
        return ops.permute(ts[0], ctx.dims)


def _unsqueeze_to(g: Tensor, shape: tuple[int, ...], dims: Any) -> Tensor:
    """g with the size-1 dims among `dims` of `shape` put back, one unsqueeze each in
    ascending order (g itself when there are none), as PyTorch's squeeze backward."""
    for d in sorted(dims):
        if shape[d] == 1:
            g = ops.unsqueeze(g, d)
    return g


class Squeeze(Function):
    """all size-1 dims removed"""

    grad_fn_name = "SqueezeBackward0"

    def forward(ctx, a):
        ctx.shape = a.data_.shape
        return np.squeeze(a.data_)

    def backward(ctx, g):
        return (_unsqueeze_to(g, ctx.shape, range(len(ctx.shape))),)

    def jvp(ctx, ts, xs, r):
        return ops.reshape(ts[0], r.data_.shape)


class SqueezeDim(Function):
    """one size-1 dim removed"""

    grad_fn_name = "SqueezeBackward1"

    def forward(ctx, a, dim):
        ctx.dim = dim
        x = a.data_
        ctx.squeezed = x.shape[dim] == 1 if x.ndim else False
        return np.squeeze(x, dim) if ctx.squeezed else x

    def backward(ctx, g):
        return (ops.unsqueeze(g, ctx.dim) if ctx.squeezed else g,)

    def jvp(ctx, ts, xs, r):
        return ops.squeeze(ts[0], ctx.dim) if ctx.squeezed else ts[0]


class SqueezeDims(Function):
    """the listed size-1 dims removed (`squeeze((0, 2))`)"""

    grad_fn_name = "SqueezeBackward2"

    def forward(ctx, a, dims):
        x = a.data_
        ctx.shape = x.shape
        drop = tuple(d for d in dims if x.ndim and x.shape[d] == 1)
        ctx.dims = drop
        return np.squeeze(x, drop) if drop else x.view()

    def backward(ctx, g):
        return (_unsqueeze_to(g, ctx.shape, ctx.dims),)

    def jvp(ctx, ts, xs, r):
        return ops.reshape(ts[0], r.data_.shape)


class SqueezeDimInplace(SqueezeDim):
    """`squeeze_(dim)`, as matmul applies it to a vector @ matrix product"""

    grad_fn_name = "SqueezeBackward4"


class Unsqueeze(Function):
    """a size-1 dim inserted"""

    grad_fn_name = "UnsqueezeBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        x = a.data_
        out = np.expand_dims(x, dim)
        # PyTorch's stride for the new dim (NumPy's reshape may pick another)
        strides = x.strides[:dim] + (ops.unsqueeze_stride(x, dim),) + x.strides[dim:]
        return ops.with_strides(out, strides)

    def backward(ctx, g):
        return (ops.squeeze(g, ctx.dim),)

    def jvp(ctx, ts, xs, r):
        return ops.unsqueeze(ts[0], ctx.dim)


class Expand(Function):
    """a broadcast to a larger shape (a view)"""

    grad_fn_name = "ExpandBackward0"

    def forward(ctx, a, shape):
        x = a.data_
        ctx.shape = x.shape
        # as_strided, not broadcast_to: the view must stay writable, as PyTorch's is
        strides = ops.expand_strides(x.shape, x.strides, shape, x.itemsize)
        return np.lib.stride_tricks.as_strided(x, shape, strides)

    def backward(ctx, g):
        if not ctx.shape:  # PyTorch's sum_to sums to a 0-d shape even from 0-d (-0. -> 0.)
            return (ops.sum(g),)
        return (ops.sum_to(g, ctx.shape),)

    def jvp(ctx, ts, xs, r):
        return ops.expand(ts[0], r.data_.shape)


class Repeat(Function):
    """a tiled"""

    contiguous_result = True

    grad_fn_name = "RepeatBackward0"

    def forward(ctx, a, reps):
        x = a.data_
        ctx.shape = x.shape
        ctx.reps = reps
        x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
        return np.tile(x, reps)

    def backward(ctx, g):
        # PyTorch's repeat_backward, step for step (its nodes, and a gradient that
        # stays expanded when nothing is summed)
        if 0 in ctx.reps:
            return (Tensor._make(np.zeros(ctx.shape, g.data_.dtype)),)
        extra = len(ctx.reps) - len(ctx.shape)
        for _ in range(extra):  # the leading dims repeat added
            g = ops.sum_dims(g, (0,), False)
        split: list[int] = []
        dims: list[int] = []
        for r, s in zip(ctx.reps[extra:], ctx.shape, strict=True):
            if r != 1:  # split (repeat * size) into (repeat, size), to sum the repeats away
                split.append(r)
                dims.append(len(split) - 1)
            split.append(s)
        if tuple(split) != g.data_.shape:
            g = ops.reshape(g, tuple(split))
        return (ops.sum_dims(g, tuple(dims), False) if dims else g,)

    def jvp(ctx, ts, xs, r):
        return ops.repeat(ts[0], ctx.reps)


class Flip(Function):
    """a reversed along dims"""

    grad_fn_name = "FlipBackward0"

    def forward(ctx, a, dims):
        ctx.dims = dims
        x = a.data_
        # PyTorch's result keeps x's layout
        return np.flip(x, dims).copy(order="K") if x.ndim else x.copy()

    def backward(ctx, g):
        return (ops.flip(g, ctx.dims),)

    def jvp(ctx, ts, xs, r):
        return ops.flip(ts[0], ctx.dims)


class Cat(Function):
    """tensors joined along dim"""

    grad_fn_name = "CatBackward0"

    def forward(ctx, *tensors, dim, dtype):
        ctx.dim = dim
        # PyTorch skips legacy 1-d empty tensors (size None) unless all are such
        every = all(t.data_.shape == (0,) for t in tensors)
        ctx.sizes = [
            None if t.data_.shape == (0,) and not every else t.data_.shape[dim] for t in tensors
        ]
        # PyTorch's backward hands every 1-d empty input new zeros, not a slice of g
        ctx.legacy = [t.data_.shape == (0,) for t in tensors]
        kept = [t for t, n in zip(tensors, ctx.sizes, strict=True) if n is not None]
        return np.ascontiguousarray(np.concatenate([_d(t, dtype) for t in kept], axis=dim))

    def backward(ctx, g):
        out, start = [], 0
        for n, legacy in zip(ctx.sizes, ctx.legacy, strict=True):
            if legacy:
                out.append(Tensor._make(np.zeros((0,), g.data_.dtype)))
                start += n or 0
                continue
            out.append(ops.narrow(g, ctx.dim, start, n))
            start += n
        return tuple(out)

    def jvp(ctx, ts, xs, r):
        parts = [_zeros_like(x) if t is None else t for t, x in zip(ts, xs, strict=True)]
        return ops.cat(parts, ctx.dim)


class Stack(Function):
    """tensors stacked along a new dim"""

    grad_fn_name = "StackBackward0"

    def forward(ctx, *tensors, dim, dtype):
        ctx.dim = dim
        # contiguous, as PyTorch's (NumPy may keep its inputs' transposed layout)
        return np.ascontiguousarray(np.stack([_d(t, dtype) for t in tensors], axis=dim))

    def backward(ctx, g):
        return tuple(ops.select(g, ctx.dim, i) for i in range(g.data_.shape[ctx.dim]))

    def jvp(ctx, ts, xs, r):
        parts = [_zeros_like(x) if t is None else t for t, x in zip(ts, xs, strict=True)]
        return ops.stack(parts, ctx.dim)


class Split(Function):
    """a cut into pieces along dim (several outputs)"""

    grad_fn_name = "SplitBackward0"
    multi_output = True

    def forward(ctx, a, sizes, dim):
        ctx.dim, ctx.shape, ctx.sizes = dim, a.data_.shape, tuple(sizes)
        bounds = np.cumsum(sizes)[:-1]
        return tuple(np.split(a.data_, bounds, axis=dim))

    def backward(ctx, *grads):
        parts = []
        for g, n in zip(grads, ctx.sizes, strict=False):
            if g is None:
                shape = list(ctx.shape)
                shape[ctx.dim] = n
                g = Tensor._make(np.zeros(shape, ctx.in_meta[0][1]))
            parts.append(g)
        return (ops.cat(parts, ctx.dim),)

    def jvp(ctx, ts, xs, r):
        return ops._views_of(ts[0], type(ctx).apply(ts[0], sizes=ctx.sizes, dim=ctx.dim))


class SplitWithSizes(Split):
    """a cut into pieces of the listed sizes along dim (several outputs)"""

    grad_fn_name = "SplitWithSizesBackward0"


class Unbind(Function):
    """a cut into slices along dim (several outputs)"""

    grad_fn_name = "UnbindBackward0"
    multi_output = True

    def forward(ctx, a, dim):
        ctx.dim, ctx.shape = dim, a.data_.shape
        lead = (slice(None),) * dim
        return tuple(a.data_[(*lead, i, Ellipsis)] for i in range(a.data_.shape[dim]))

    def backward(ctx, *grads):
        shape = list(ctx.shape)
        del shape[ctx.dim]
        zeros = np.zeros(shape, ctx.in_meta[0][1])
        parts = [g if g is not None else Tensor._make(zeros) for g in grads]
        return (ops.stack(parts, ctx.dim),)

    def jvp(ctx, ts, xs, r):
        return ops.unbind(ts[0], ctx.dim)


# ************************************************************ indexing


class _Getitem(Function):
    """Basic and advanced indexing; the gradient is embedded back in zeros."""

    def forward(ctx, a, index):
        ctx.index, ctx.shape = index, a.data_.shape
        return a.data_[index]

    def backward(ctx, g):
        return (ops.embed(g, ctx.index, ctx.shape),)

    def jvp(ctx, ts, xs, r):
        return type(ctx).apply(ts[0], index=ctx.index)


class _BasicGetitem(_Getitem):
    """Integers and slices only: the result is a view of the input's memory."""

    def forward(ctx, a, index):
        ctx.index, ctx.shape = index, a.data_.shape
        # (a fully indexed result is a 0-d view, not a copied scalar)
        return ops.subscript_view(a.data_, index)

    def jvp(ctx, ts, xs, r):
        return ops._view_of(ts[0], type(ctx).apply(ts[0], index=ctx.index))


class Select(_BasicGetitem):
    """one index along a dim"""

    grad_fn_name = "SelectBackward0"

    def backward(ctx, g):
        return (SelectBackward.apply(g, index=ctx.index, shape=ctx.shape),)


class Slice(_BasicGetitem):
    """a slice along a dim"""

    grad_fn_name = "SliceBackward0"

    def backward(ctx, g):
        return (SliceBackward.apply(g, index=ctx.index, shape=ctx.shape),)


class _BasicEmbed(Function):
    """g placed at a basic index of zeros of `shape` (a view's backward, a node of its
    own as in PyTorch); its backward takes that view of the incoming gradient."""

    view: type[_BasicGetitem]

    def forward(ctx, g, index, shape):
        ctx.index = index
        out = np.zeros(shape, g.data_.dtype)
        out[(*index, Ellipsis)] = g.data_
        return out

    def backward(ctx, gg):
        return (ops._view_of(gg, ctx.view.apply(gg, index=ctx.index)),)

    def jvp(ctx, ts, xs, r):
        return type(ctx).apply(ts[0], index=ctx.index, shape=r.data_.shape)


class SelectBackward(_BasicEmbed):
    """select's gradient g placed in zeros of the input's shape"""

    grad_fn_name = "SelectBackwardBackward0"
    view = Select


class SliceBackward(_BasicEmbed):
    """a slice's gradient g placed in zeros of the input's shape"""

    grad_fn_name = "SliceBackwardBackward0"
    view = Slice


class Index(_Getitem):
    """integer-array or boolean-mask indexing (a copy)"""

    grad_fn_name = "IndexBackward0"

    def forward(ctx, a, index, kept=()):
        _keep(ctx, *(index if isinstance(index, tuple) else (index,)), kept=kept)
        ctx.index, ctx.shape = index, a.data_.shape
        # PyTorch's result is contiguous (NumPy's is not after a slice): views of it work
        return _c_order(a.data_[index])

    def backward(ctx, g):
        _check_kept(ctx)
        # PyTorch puts g into new zeros in place (index_put_): version 1
        return (_written(ops.embed(g, ctx.index, ctx.shape)),)


class AsStrided(_Getitem):
    """`as_strided`, and a view re-derived from its base after an in-place change:
    `index` holds where each element sits in the input; `strided` is the view itself
    when the caller made one (`as_strided`), else the elements are gathered."""

    grad_fn_name = "AsStridedBackward0"

    def forward(ctx, a, index, strided=None, inside=None):
        # `inside`: which elements of the view are elements of the input (as_strided
        # may read beyond them, in the storage they share); None for all
        ctx.index, ctx.shape, ctx.inside = index, a.data_.shape, inside
        if strided is not None:
            return strided
        if inside is None:
            return a.data_[index]
        out = np.zeros(inside.shape, a.data_.dtype)
        out[inside] = a.data_[_masked(index, inside)]
        return out

    def jvp(ctx, ts, xs, r):
        return AsStrided.apply(ts[0], index=ctx.index, inside=ctx.inside)

    def backward(ctx, g):
        if g.data_.size == 0:  # an empty view: PyTorch's formula gives plain new zeros
            return (Tensor._make(np.zeros(ctx.shape, g.data_.dtype)),)
        if not ctx.shape and (ctx.inside is None or ctx.inside.all()):  # a 0-d input
            # whose view reads only its element: g reduced into it
            return (_expand_storage_grad(g),)
        r = AsStridedGrad.apply(g, index=ctx.index, shape=ctx.shape, inside=ctx.inside)
        r._vc[0] += 1  # PyTorch wrote g into its fresh zeros in place (copy_, index_add_)
        # PyTorch returns a view (of the fresh storage it scattered g into): an in-place
        # change of the gradient then records on that storage, and views' rules apply
        strides = tuple(st // r.data_.itemsize for st in r.data_.strides)
        return (ops.as_strided(r, r.data_.shape, strides, 0),)


class AsStridedRebase(AsStrided):
    """A view's node re-derived from its base after an in-place change: as_strided's,
    for a view of any dtype (an integer or bool view of a base that a fill_ or copy_ of
    a float requiring grad made require grad gets one too, as in PyTorch)."""

    any_dtype = True


class AsStridedExpand(Function):
    """a 0-d base's value at each element of `shape` (an expanded view's re-derived node)

    After an in-place change, where PyTorch re-derives an as_strided of the 0-d base."""

    grad_fn_name = "AsStridedBackward0"
    any_dtype = True

    def forward(ctx, a, shape):
        return np.broadcast_to(a.data_, shape)

    def backward(ctx, g):
        return (_expand_storage_grad(g),)

    def jvp(ctx, ts, xs, r):
        return ops.expand(ts[0], r.data_.shape)


def _expand_storage_grad(g: Tensor) -> Tensor:
    """The gradient of a 0-d base from its expanded view's re-derived node, made as
    PyTorch's as_strided backward makes it: g reduced dim by dim from the last (a size-1
    dim squeezed, a broadcast one summed), copied into a fresh one-element storage, and
    returned as a 0-d view of it at version 1. So it is a view (an in-place op after
    requires_grad_() names "a view of a leaf Variable") and its graph is PyTorch's."""
    if not g.data_.size:  # PyTorch returns plain zeros written in place, without history
        r = Tensor._make(np.zeros((), g.data_.dtype))
        r._vc[0] += 1
        return r
    src = g
    for d in range(g.data_.ndim - 1, -1, -1):
        src = ops.squeeze(src, d) if g.data_.shape[d] == 1 else ops.sum_dims(src, (d,), False)
    storage = Tensor._make(np.zeros((1,), g.data_.dtype))
    ops.as_strided(storage, (), (), 0).copy_(src)
    return ops.as_strided(storage, (), (), 0)


class AsStridedGrad(Function):
    """g added at `index` of a zero tensor of `shape` (as_strided's backward, which
    PyTorch also computes through an as_strided view: hence its name)"""

    grad_fn_name = "AsStridedBackward0"

    def forward(ctx, g, index, shape, inside=None):
        ctx.index, ctx.inside = index, inside
        out = np.zeros(shape, g.data_.dtype)
        vals = g.data_
        if inside is not None:  # only the view's elements that are the input's
            index, vals = _masked(index, inside), vals[inside]
            if not shape:  # a 0-d input: the elements that are it, summed
                out[()] = vals[0] if vals.size == 1 else vals.sum()
                return out
        if not vals.size:  # an empty view: nothing to place
            return out
        if _distinct(index, shape):  # PyTorch copies g into the view (a -0. stays)
            out[index] = vals
        else:  # elements the view repeats sum their gradients
            np.add.at(out, index, vals)
        return out

    def backward(ctx, gg):
        return (AsStrided.apply(gg, index=ctx.index, inside=ctx.inside),)

    def jvp(ctx, ts, xs, r):
        return AsStridedGrad.apply(ts[0], index=ctx.index, shape=r.data_.shape, inside=ctx.inside)


def _written(r: Tensor, times: int = 1) -> Tensor:
    """`r`, a new gradient, at the version PyTorch's backward leaves on its own: the
    number of in-place writes that built it (into fresh zeros)."""
    if type(r._vc) is list:  # (not an efficient zero's or an inference counter)
        r._vc[0] += times
    return r


def _masked(index: Any, inside: np.ndarray) -> tuple[Any, ...]:
    """The positions of an element index at the elements `inside` marks."""
    return tuple(i[inside] for i in index)


def _distinct(index: Any, shape: tuple[int, ...]) -> bool:
    """Whether an index of position arrays names no element twice."""
    if not isinstance(index, tuple) or not all(isinstance(i, np.ndarray) for i in index):
        return False
    if not index or not index[0].size or index[0].dtype == bool:
        return True  # (a boolean mask, the 0-d base's empty view, names nothing twice)
    flat = np.ravel_multi_index(index, shape).ravel()
    return np.unique(flat).size == flat.size


class Diagonal(Function):
    """the diagonal of the (d1, d2) planes, moved to a last dim (a writable view)"""

    grad_fn_name = "DiagonalBackward0"

    def forward(ctx, a, offset, d1, d2):
        x = a.data_
        ctx.shape = x.shape
        n1, n2 = x.shape[d1], x.shape[d2]
        length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
        # start the plane at the diagonal's first element, then walk both dims at once
        lead = [slice(None)] * x.ndim
        if length:
            if offset >= 0:
                lead[d2] = slice(offset, None)
            else:
                lead[d1] = slice(-offset, None)
        start = x[tuple(lead)]
        rest = [i for i in range(x.ndim) if i not in (d1, d2)]
        shape = tuple(x.shape[i] for i in rest) + (length,)
        strides = tuple(x.strides[i] for i in rest) + (x.strides[d1] + x.strides[d2],)
        out = np.lib.stride_tricks.as_strided(start, shape, strides)
        # positions of the diagonal in the input, for the backward
        grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
        index: list[Any] = [None] * x.ndim
        for k, i in enumerate(rest):
            index[i] = grids[k]
        index[d1] = grids[-1] + max(0, -offset)
        index[d2] = grids[-1] + max(0, offset)
        ctx.index = tuple(index)
        ctx.offset, ctx.d1, ctx.d2 = offset, d1, d2
        return out

    def backward(ctx, g):
        return (
            DiagonalGrad.apply(
                g, index=ctx.index, shape=ctx.shape, offset=ctx.offset, d1=ctx.d1, d2=ctx.d2
            ),
        )

    def jvp(ctx, ts, xs, r):
        return ops.diagonal(ts[0], ctx.offset, ctx.d1, ctx.d2)


class DiagonalGrad(Function):
    """zeros of the input's shape with g on the diagonal (diagonal's backward)"""

    grad_fn_name = "DiagonalBackwardBackward0"

    def forward(ctx, g, index, shape, offset, d1, d2):
        ctx.offset, ctx.d1, ctx.d2 = offset, d1, d2
        ctx.index = index
        out = np.zeros(shape, g.data_.dtype)
        out[index] = g.data_
        return out

    def backward(ctx, gg):
        return (ops.diagonal(gg, ctx.offset, ctx.d1, ctx.d2),)

    def jvp(ctx, ts, xs, r):
        return DiagonalGrad.apply(
            ts[0], index=ctx.index, shape=r.data_.shape, offset=ctx.offset, d1=ctx.d1, d2=ctx.d2
        )


class Embedding(Function):
    """rows of the weight picked by integer indices (a copy)"""

    grad_fn_name = "EmbeddingBackward0"

    def forward(ctx, weight, indices, padding_idx):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        ctx.num_weights = weight.data_.shape[0]
        return weight.data_[indices]

    def backward(ctx, g):
        return (
            EmbeddingDenseBackward.apply(
                g, indices=ctx.indices, num_weights=ctx.num_weights, padding_idx=ctx.padding_idx
            ),
        )


class EmbeddingDenseBackward(Function):
    """embedding's gradient: each row of g added into its index's row (none into the
    padding row)"""

    grad_fn_name = "EmbeddingDenseBackwardBackward0"

    def forward(ctx, g, indices, num_weights, padding_idx):
        ctx.indices, ctx.padding_idx = indices, padding_idx
        gd = g.data_
        dim = gd.shape[-1]
        out = np.zeros((num_weights, dim), gd.dtype)
        np.add.at(out, indices.reshape(-1), gd.reshape(-1, dim))
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    def backward(ctx, gg):
        rows = Embedding.apply(gg, indices=ctx.indices, padding_idx=None)
        if ctx.padding_idx is not None:
            keep = (ctx.indices != ctx.padding_idx)[..., None].astype(gg.data_.dtype)
            rows = rows * Tensor._make(keep)
        return (rows,)


class Embed(Function):
    """g added at `index` of zeros of `shape` (indexing's backward, index_put_ accumulating)

    PyTorch's `_index_put_impl_` into zeros, which are its constant first operand."""

    grad_fn_name = "IndexPutImplBackward0"

    def forward(ctx, zeros, g, index, shape):
        _keep(ctx, *(index if isinstance(index, tuple) else (index,)))
        ctx.index = index
        out = np.zeros(shape, g.data_.dtype)
        np.add.at(out, index, g.data_)
        return out

    def backward(ctx, gg):
        _check_kept(ctx)
        return None, ops.getitem(gg, ctx.index)

    def jvp(ctx, ts, xs, r):
        t = ts[1]
        return None if t is None else Embed.apply(None, t, index=ctx.index, shape=r.data_.shape)


class _CopyInto(Function):
    """base with `index` overwritten by value (broadcast)."""

    def forward(ctx, base, value, index, dtype):
        ctx.index = index
        out = clone_preserving(base.data_)  # PyTorch clones self, then writes into it
        if value.data_.size:  # (an empty value at a 0-d base's False mask: nothing)
            out[index] = _d(value, dtype)
        ctx.value_shape = value.data_.shape
        ctx.mask = np.ones(base.data_.shape, bool)
        ctx.mask[index] = False
        return out

    def backward(ctx, g):
        if getattr(ctx, "overlapping", False):
            raise RuntimeError(OVERLAP_MESSAGE)
        gb = ops.where(Tensor._make(ctx.mask), g, 0.0) if ctx.needs_input_grad[0] else None
        gv = None
        if ctx.needs_input_grad[1]:
            gv = ops.sum_to(ops.getitem(g, ctx.index), ctx.value_shape)
        return gb, gv

    def jvp(ctx, ts, xs, r):
        # the base's tangent with the value's written at the index
        (tb, tv), (base, value) = ts, xs
        tb = _zeros_like(base) if tb is None else tb
        tv = _zeros_like(value) if tv is None else tv
        dt = np.result_type(tb.data_.dtype, tv.data_.dtype)
        return type(ctx).apply(tb, tv, index=ctx.index, dtype=dt)


class CopySlices(_CopyInto):
    """`x[i] = v` with a basic index (integers, slices) on a recorded tensor"""

    grad_fn_name = "CopySlices"

    def name(self) -> str:
        """PyTorch's `name()` of this C++ node is namespaced (the repr is not)."""
        return "torch::autograd::CopySlices"

    def backward(ctx, g):
        if getattr(ctx, "freed", False):  # PyTorch drops the wrapped copy after one pass
            raise SavedTensorError(FREED_MESSAGE, ctx)
        if getattr(ctx, "overlapping", False):
            raise RuntimeError(OVERLAP_MESSAGE)
        gb = gv = None
        if ctx.needs_input_grad[0]:
            # PyTorch's CopySlices: a copy of g, the wrapped fill_/copy_'s gradient for
            # the view (zeros) written into it through the view: under create_graph the
            # base's gradient is a CopySlices itself
            result = ops.copy_from(Tensor._make(np.empty_like(g.data_)), g)
            zeros = Tensor._make(np.zeros(g.data_[ctx.index].shape, g.data_.dtype))
            gb = CopySlices.apply(result, zeros, index=ctx.index, dtype=g.data_.dtype)
        if ctx.needs_input_grad[1]:
            gv = ops.sum_to(ops.getitem(g, ctx.index), ctx.value_shape)
        if gv is not None and gv._base is not None:
            # PyTorch's CopySlices hands the wrapped copy_ a clone of g's slice: the
            # value's gradient is no view (detach_() on it works)
            gv = ops.clone(gv)
        return gb, gv

    def release(self, marker: Any = None) -> None:
        super().release(marker)
        self.freed = True


class IndexPut(_CopyInto):
    """`x[idx] = v` with an array or mask index (`index_put_`) on a recorded tensor"""

    grad_fn_name = "IndexPutBackward0"

    def forward(ctx, base, value, index, dtype):
        out = _CopyInto.forward(ctx, base, value, index, dtype)
        # PyTorch saves the indices (a mask's as positions), freed by a backward
        _keep(ctx, *(index if isinstance(index, tuple) else (index,)))
        return out

    def backward(ctx, g):
        _check_kept(ctx)
        if getattr(ctx, "overlapping", False):
            raise RuntimeError(OVERLAP_MESSAGE)
        gv = None
        if ctx.needs_input_grad[1]:
            gv = ops.sum_to(ops.getitem(g, ctx.index), ctx.value_shape)
        gb = None
        if ctx.needs_input_grad[0]:
            # PyTorch's formula: g.index_put(indices, zeros_like(values)), so the base's
            # gradient under create_graph is an IndexPutBackward0 with a constant value
            zeros = Tensor._make(np.zeros(ctx.value_shape, g.data_.dtype))
            gb = IndexPut.apply(g, zeros, index=ctx.index, dtype=g.data_.dtype)
        return gb, gv


def _dead_operand(meta: tuple[Any, Any]) -> Tensor:
    """A stand-in that requires grad but leads nowhere: a view, taken without grad, of a
    leaf that requires grad."""
    shape, dtype = meta
    proxy = Tensor._make(np.broadcast_to(np.zeros((), dtype), shape))
    proxy._base = Tensor._make(np.zeros((), dtype), True)
    return proxy


class CopySlicesOp(Function):
    """base with `index` overwritten by an in-place op's result on the view there
    (`y[0].mul_(2)`): wraps that op's node, whose other inputs become this node's
    next_functions after the base, and whose backward runs on the view's slice."""

    grad_fn_name = "CopySlices"

    def name(self) -> str:
        """PyTorch's `name()` of this C++ node is namespaced (the repr is not)."""
        return "torch::autograd::CopySlices"

    @classmethod
    def wrap(cls, base: Tensor, node: Function, index: Any, value: np.ndarray) -> Tensor:
        """Apply with the wrapped node's other edges (stand-ins carry them)."""
        others: list[Tensor | None] = []
        needs = node.needs_input_grad[1:]
        for k, ((nxt, nr), meta) in enumerate(
            zip(node.next_functions[1:], node.in_meta[1:], strict=False)
        ):
            if meta is not None and nxt is None and k < len(needs) and needs[k]:
                # an operand that requires grad but leads nowhere (a view made under
                # no_grad): the base's CopySlices still records, as PyTorch's does
                others.append(_dead_operand(meta))
                continue
            if nxt is None or meta is None:
                others.append(None)
                continue
            shape, dtype = meta
            proxy = Tensor._make(np.broadcast_to(np.zeros((), dtype), shape), True)
            if nxt.name() == "torch::autograd::AccumulateGrad":
                proxy._acc = nxt
            else:
                proxy.grad_fn, proxy._output_nr = nxt, nr
            others.append(proxy)
        return cls.apply(base, *others, index=index, node=node, value=value)

    def forward(ctx, base, *others, index, node, value):
        ctx.index, ctx.node = index, node
        out = base.data_.copy()
        ctx.view_meta = node.in_meta[0]
        if index is ops.SPREAD:  # an expand of a 0-d base: it holds the value written
            out[()] = ops.spread_value(value, out)
            ctx.mask = np.zeros((), bool)
            return out
        if value.size:  # (an empty view of a 0-d base, picked by a False mask: nothing)
            out[index] = value
        ctx.mask = np.ones(base.data_.shape, bool)
        ctx.mask[index] = False
        return out

    def backward(ctx, g):
        if getattr(ctx, "freed", False):  # PyTorch drops the wrapped node after one pass
            raise SavedTensorError(FREED_MESSAGE, ctx)
        overlapping = getattr(ctx, "overlapping", False)
        if overlapping and ctx.needs_input_grad[0]:
            # PyTorch writes the view's gradient into the base's through the view
            raise RuntimeError(OVERLAP_MESSAGE)
        node = ctx.node
        shape, dtype = ctx.view_meta
        if ctx.index is ops.SPREAD:  # (the base's gradient, as_strided to the view's shape)
            result, g_slice = g, ops.expand(g, shape)
        else:
            # PyTorch's CopySlices: a copy of g, whose part under the view (as_strided,
            # cloned) goes to the op's backward
            result = ops.copy_from(Tensor._make(np.empty_like(g.data_)), g)
            g_slice = ops.clone(AsStridedRebase.apply(result, index=ctx.index))
        if not g_slice.data_.size and g_slice.data_.shape != shape:
            g_slice = ops.reshape(g_slice, shape)  # an empty view of a 0-d base
        grads = node.backward(node, g_slice)
        if overlapping:  # (the base needs no gradient)
            return (None,) + tuple(grads[1:])
        g_view = grads[0]
        if g_view is not None:
            # the view's gradient copied into the copy of g under the view, exactly (a
            # -0. stays -0.), as PyTorch's copy_ through the view
            g_view = ops.to_dtype(ops.sum_to(g_view, shape), dtype)
            gb = CopySlices.apply(result, g_view, index=ctx.index, dtype=result.data_.dtype)
        else:
            gb = ops.where(Tensor._make(ctx.mask), g, 0.0)
        return (gb,) + tuple(grads[1:])

    def release(self, marker: Any = None) -> None:
        super().release(marker)
        self.node.release(marker)
        # PyTorch drops the wrapped node itself, and with it the view's old node
        self.node.__dict__.pop("view_node", None)
        self.freed = True


def _along(index: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """The NumPy index picking `index` along `dim`, at the index's own position in
    every other dim (gather/scatter addressing)."""
    idx = list(np.indices(index.shape, sparse=True))
    idx[dim] = index
    return tuple(idx)


class Gather(Function):
    """values picked along dim by an index tensor"""

    grad_fn_name = "GatherBackward0"

    def forward(ctx, a, dim, index, kept=None):
        # PyTorch saves self and the index tensor (both version-checked)
        ctx.save(a, kept if kept is not None else Tensor._make(np.asarray(index)))
        ctx.dim, ctx.index, ctx.shape = dim, index, a.data_.shape
        x = a.data_
        if x.ndim == 0 or index.ndim == 0:  # a 0-d operand counts as 1-d
            return x.reshape(-1)[index.reshape(-1)].reshape(index.shape)
        # output[i][j] = a[index[i][j]][j] (dim 0): the index's shape, not a's
        return x[_along(index, dim)]

    def backward(ctx, g):
        _check_kept(ctx)
        # PyTorch adds g into new zeros in place (scatter_add_): version 1
        return (_written(ops.scatter_into(g, ctx.dim, ctx.index, ctx.shape)),)

    def jvp(ctx, ts, xs, r):
        return ops.gather(ts[0], ctx.dim, Tensor._make(np.asarray(ctx.index)))


class ScatterAdd(Function):
    """g added into zeros of `shape` at an index tensor along dim (gather's backward)."""

    grad_fn_name = "ScatterAddBackward0"

    def forward(ctx, g, dim, index, shape):
        _keep(ctx, index)
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, g.data_.dtype)
        if out.ndim == 0 or index.ndim == 0:  # a 0-d operand counts as 1-d
            np.add.at(out.reshape(-1), index.reshape(-1), g.data_.reshape(-1))
        else:
            np.add.at(out, _along(index, dim), g.data_)
        return out

    def backward(ctx, gg):
        _check_kept(ctx)
        return (ops.gather(gg, ctx.dim, Tensor._make(ctx.index)),)

    def jvp(ctx, ts, xs, r):
        return ScatterAdd.apply(ts[0], dim=ctx.dim, index=ctx.index, shape=r.data_.shape)


class ScatterPut(ScatterAdd):
    """g written into zeros of `shape` at an index tensor along dim (max/min's backward)

    PyTorch's zeros.scatter along the dim max or min reduced, so a -0. stays."""

    grad_fn_name = "ScatterBackward0"

    def forward(ctx, g, dim, index, shape):
        _keep(ctx, index)
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, g.data_.dtype)
        if out.ndim == 0 or index.ndim == 0:  # a 0-d operand counts as 1-d
            out.reshape(-1)[index.reshape(-1)] = g.data_.reshape(-1)
        else:
            out[_along(index, dim)] = g.data_
        return out

    def jvp(ctx, ts, xs, r):
        return ScatterPut.apply(ts[0], dim=ctx.dim, index=ctx.index, shape=r.data_.shape)


class MaskedFill(Function):
    """a with a number where mask is True"""

    grad_fn_name = "MaskedFillBackward0"

    def forward(ctx, a, value, mask, kept=()):
        _keep(ctx, mask, kept=kept)
        ctx.mask = mask
        x = a.data_
        # contiguous, as PyTorch's out-of-place masked_fill clones (Contiguous) first
        return _c_order(np.where(mask, np.asarray(value, x.dtype), x))

    def backward(ctx, g):
        _check_kept(ctx)
        return (ops.masked_fill(g, Tensor._make(ctx.mask), 0.0),)

    def jvp(ctx, ts, xs, r):
        return ops.masked_fill(ts[0], Tensor._make(ctx.mask), 0.0)


class MaskedFillTensor(Function):
    """a with a 0-d tensor's value where mask is True (the value gets a gradient)"""

    grad_fn_name = "MaskedFillBackward1"

    def forward(ctx, a, value, mask, kept=()):
        _keep(ctx, mask, kept=kept)
        ctx.mask = mask
        x = a.data_
        return _c_order(np.where(mask, value.data_.astype(x.dtype), x))

    def backward(ctx, g):
        _check_kept(ctx)
        m = Tensor._make(ctx.mask)
        ga = ops.masked_fill(g, m, 0.0) if ctx.needs_input_grad[0] else None
        gv = ops.sum(ops.where(m, g, 0.0)) if ctx.needs_input_grad[1] else None
        return ga, gv

    def jvp(ctx, ts, xs, r):
        ta, tv = ts
        m = Tensor._make(ctx.mask)
        return ops.where(m, 0.0 if tv is None else tv, 0.0 if ta is None else ta)


class Where(Function):
    """a where cond else b"""

    grad_fn_name = "WhereBackward0"

    def forward(ctx, a, b, cond, dtype, kept=()):
        _keep(ctx, cond, kept=kept)
        ctx.cond = cond
        out = np.where(cond, _d(a, dtype), _d(b, dtype))
        # laid out from the condition's strides first, then a's and b's (PyTorch's
        # operand order, which Function.elementwise cannot name: cond is no input)
        return iterator_result(out, (cond, _operand(a), _operand(b)), dtype)

    def backward(ctx, g):
        _check_kept(ctx)
        c = Tensor._make(ctx.cond)
        ga = ops.where(c, g, 0.0) if ctx.needs_input_grad[0] else None
        gb = ops.where(c, 0.0, g) if ctx.needs_input_grad[1] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), c = ts, Tensor._make(ctx.cond)
        return ops.where(c, 0.0 if ta is None else ta, 0.0 if tb is None else tb)


# ************************************************************ scatter and index_* writes
# PyTorch's derivative formulas: what a write overwrote gets no gradient (scatter or
# index_fill of zeros there), what it added passes; the written source gets g picked
# where it went (gather, index_select).


def _as_1d(x: np.ndarray) -> np.ndarray:
    """A 0-d operand counts as 1-d in PyTorch's scatter and index kernels."""
    return x.reshape(-1) if x.ndim == 0 else x


def _head(src: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """src's leading block of `shape` (scatter reads only where the index reaches)."""
    return _as_1d(src)[tuple(slice(0, n) for n in shape)]


def _scatter_np(x: np.ndarray, dim: int, index: np.ndarray, values: Any, add: bool) -> np.ndarray:
    """A C-ordered copy of x with values written (or added, in index order) at index."""
    out = np.array(x, order="C")
    flat, idx = _as_1d(out), _as_1d(index)
    where = _along(idx, dim)
    if isinstance(values, np.ndarray):
        values = _head(values, idx.shape)
    if add:
        np.add.at(flat, where, values)
    else:
        flat[where] = values
    return out


def _scalar_of(value: Any, dt: np.dtype) -> Any:
    """A number as the kernel's scalar of dtype dt (a float into an integer truncates)."""
    return np.asarray(value).astype(dt)[()]


def _index_tuple(ndim: int, dim: int, index: np.ndarray) -> tuple[Any, ...]:
    """The NumPy index of the slices index_* address along dim (0-d as 1-d)."""
    idx: list[Any] = [slice(None)] * max(ndim, 1)
    idx[dim] = index.reshape(-1)
    return tuple(idx)


def _index_write(x: np.ndarray, dim: int, index: np.ndarray, values: Any, add: bool) -> np.ndarray:
    out = np.array(x, order="C")
    where = _index_tuple(x.ndim, dim, index)
    if isinstance(values, np.ndarray):
        values = _as_1d(values) if x.ndim == 0 else values
    if add:
        np.add.at(_as_1d(out), where, values)
    else:
        _as_1d(out)[where] = values
    return out


def _zero_or(t: Tensor | None, x: Tensor) -> Tensor:
    return _zeros_like(x) if t is None else t


class ScatterSrc(Function):
    """self with src's values written at an index tensor along dim"""

    grad_fn_name = "ScatterBackward0"

    def forward(ctx, a, src, dim, index, kept=()):
        _keep(ctx, index, kept=kept)
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.data_.shape
        return _scatter_np(a.data_, dim, index, src.data_, False)

    def backward(ctx, g):
        _check_kept(ctx)
        i = Tensor._make(ctx.index)
        ga = ops.scatter(g, ctx.dim, i, 0.0) if ctx.needs_input_grad[0] else None
        gs = None
        if ctx.needs_input_grad[1]:
            # (a source larger than the index: the engine refuses it, as PyTorch's does)
            gs = ops.gather(g, ctx.dim, i)
        return ga, gs

    def jvp(ctx, ts, xs, r):
        i = Tensor._make(ctx.index)
        return ops.scatter(_zero_or(ts[0], xs[0]), ctx.dim, i, _zero_or(ts[1], xs[1]))


class ScatterValue(Function):
    """self with a number written at an index tensor along dim"""

    grad_fn_name = "ScatterBackward1"

    def forward(ctx, a, dim, index, value, kept=()):
        _keep(ctx, index, kept=kept)
        ctx.dim, ctx.index = dim, index
        return _scatter_np(a.data_, dim, index, _scalar_of(value, a.data_.dtype), False)

    def backward(ctx, g):
        _check_kept(ctx)
        return (ops.scatter(g, ctx.dim, Tensor._make(ctx.index), 0.0),)

    def jvp(ctx, ts, xs, r):
        return ops.scatter(ts[0], ctx.dim, Tensor._make(ctx.index), 0.0)


class ScatterAddSrc(Function):
    """self with src's values added at an index tensor along dim"""

    grad_fn_name = "ScatterAddBackward0"

    def forward(ctx, a, src, dim, index, kept=()):
        if ctx.needs_input_grad[1]:  # only src's gradient reads the index: PyTorch
            _keep(ctx, index, kept=kept)  # saves it only then (so only then is it freed)
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.data_.shape
        return _scatter_np(a.data_, dim, index, src.data_, True)

    def backward(ctx, g):
        if ctx.needs_input_grad[1]:
            _check_kept(ctx)
            return g, ops.gather(g, ctx.dim, Tensor._make(ctx.index))
        return g, None

    def jvp(ctx, ts, xs, r):
        i = Tensor._make(ctx.index)
        return ops.scatter_add(_zero_or(ts[0], xs[0]), ctx.dim, i, _zero_or(ts[1], xs[1]))


def index_bounds(x: np.ndarray, dim: int, index: np.ndarray) -> None:
    """index_select's kernel's bounds check: it takes no negative index; along dim 1 of
    a 2-d or larger tensor it names the first one out of range, elsewhere it says only
    that one is."""
    n = x.shape[dim] if x.ndim else 1
    flat = index.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size and x.ndim > 1 and dim == 1:
        raise RuntimeError(
            f"INDICES element is out of DATA bounds, id={int(flat[bad[0]])} axis_dim={n}"
        )
    if bad.size:
        raise IndexError("index out of range in self")


class IndexSelect(Function):
    """the slices of a at index along dim"""

    grad_fn_name = "IndexSelectBackward0"
    contiguous_result = True

    def forward(ctx, a, dim, index, kept=()):
        _keep(ctx, index, kept=kept)
        ctx.dim, ctx.index, ctx.shape = dim, index.reshape(-1), a.data_.shape
        x = a.data_
        return x.copy() if x.ndim == 0 else np.take(x, ctx.index, axis=dim)

    def backward(ctx, g):
        # PyTorch's index_select_backward: zeros of self's shape, index_add_ of g
        _check_kept(ctx)
        zeros = Tensor._make(np.zeros(ctx.shape, g.data_.dtype))
        return (ops.index_add(zeros, ctx.dim, Tensor._make(ctx.index), g),)

    def jvp(ctx, ts, xs, r):
        return IndexSelect.apply(ts[0], dim=ctx.dim, index=ctx.index)


def _index_select(g: Tensor, dim: int, index: np.ndarray) -> Tensor:
    """g.index_select(dim, index) inside a gradient formula (IndexSelectBackward0)."""
    index_bounds(g.data_, dim, index)
    return IndexSelect.apply(g, dim=dim, index=index)


class IndexFill(Function):
    """self with a number written over the slices at index along dim"""

    grad_fn_name = "IndexFillBackward0"

    def forward(ctx, a, dim, index, value, kept=()):
        _keep(ctx, index, kept=kept)
        ctx.dim, ctx.index = dim, index
        return _index_write(a.data_, dim, index, np.asarray(value).astype(a.data_.dtype), False)

    def backward(ctx, g):
        _check_kept(ctx)
        return (ops.index_fill(g, ctx.dim, Tensor._make(ctx.index), 0.0),)

    def jvp(ctx, ts, xs, r):
        return ops.index_fill(ts[0], ctx.dim, Tensor._make(ctx.index), 0.0)


class IndexFillTensor(Function):
    """self with a 0-d tensor's value written over the slices at index (it gets g's sum there)"""

    grad_fn_name = "IndexFillBackward1"

    def forward(ctx, a, value, dim, index, kept=(), given=None):
        _keep(ctx, index, kept=kept)
        # (`given`: the index as the script gave it, negatives included: the value's
        # gradient is an index_select, whose kernel refuses them)
        ctx.dim, ctx.index, ctx.given = dim, index, index if given is None else given
        return _index_write(a.data_, dim, index, value.data_.astype(a.data_.dtype), False)

    def backward(ctx, g):
        _check_kept(ctx)
        i = Tensor._make(ctx.index)
        ga = ops.index_fill(g, ctx.dim, i, 0.0) if ctx.needs_input_grad[0] else None
        gv = None
        if node_module.computes(ctx, 1):  # (only then its index_select can refuse)
            # (PyTorch selects the index's distinct values, sorted: each slice counts once)
            gv = ops.sum(_index_select(g, ctx.dim, np.unique(ctx.given)))
        return ga, gv

    def jvp(ctx, ts, xs, r):
        i = Tensor._make(ctx.index)
        base = ops.index_fill(_zero_or(ts[0], xs[0]), ctx.dim, i, 0.0)
        return base if ts[1] is None else ops.index_fill(base, ctx.dim, i, ts[1])


class IndexAdd(Function):
    """self with alpha * source added to the slices at index along dim"""

    grad_fn_name = "IndexAddBackward0"

    def forward(ctx, a, src, dim, index, alpha, kept=()):
        ctx.dim, ctx.index, ctx.alpha, ctx.src_shape = dim, index, alpha, src.data_.shape
        if ctx.needs_input_grad[1]:
            # only source's gradient reads the index and source (its expand_as(source)):
            # PyTorch saves them only then (so only then are they freed, or checked)
            _keep(ctx, index, kept=kept, also=(src,))
        s = src.data_ if alpha == 1 else src.data_ * np.asarray(alpha, src.data_.dtype)
        return _index_write(a.data_, dim, index, s, True)

    def backward(ctx, g):
        if ctx.needs_input_grad[1]:  # what was saved is unpacked first, as PyTorch's node
            _check_kept(ctx)
            ctx.saved_tensors  # noqa: B018
            gs = _expand_as(_index_select(g, ctx.dim, ctx.index), ctx.src_shape)
            gs = gs if ctx.alpha == 1 else _times(gs, ctx.alpha)
            return g, gs
        return g, None

    def jvp(ctx, ts, xs, r):
        i = Tensor._make(ctx.index)
        base = _zero_or(ts[0], xs[0])
        if ts[1] is None:
            return base
        return ops.index_add(base, ctx.dim, i, ts[1], alpha=ctx.alpha)


class IndexCopy(Function):
    """self with source's slices copied over the slices at index along dim"""

    grad_fn_name = "IndexCopyBackward0"

    def forward(ctx, a, src, dim, index, kept=()):
        # the index (both formulas read it), and source for its own gradient's
        # expand_as(source) only when it needs one, as PyTorch saves them
        _keep(ctx, index, kept=kept, also=(src,) if ctx.needs_input_grad[1] else ())
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.data_.shape
        return _index_write(a.data_, dim, index, src.data_, False)

    def backward(ctx, g):
        _check_kept(ctx)
        i = Tensor._make(ctx.index)
        ga = ops.index_fill(g, ctx.dim, i, 0.0) if ctx.needs_input_grad[0] else None
        gs = None
        if ctx.needs_input_grad[1]:
            gs = _expand_as(_index_select(g, ctx.dim, ctx.index), ctx.src_shape)
        return ga, gs

    def jvp(ctx, ts, xs, r):
        i = Tensor._make(ctx.index)
        return ops.index_copy(_zero_or(ts[0], xs[0]), ctx.dim, i, _zero_or(ts[1], xs[1]))


class IndexPutAccumulate(Function):
    """`index_put(indices, values, accumulate=True)`: values added at array indices"""

    grad_fn_name = "IndexPutBackward0"

    def forward(ctx, base, value, index, dtype):
        _keep(ctx, *(index if isinstance(index, tuple) else (index,)))
        ctx.index, ctx.value_shape = index, value.data_.shape
        out = clone_preserving(base.data_)
        np.add.at(out, index, np.broadcast_to(_d(value, dtype), out[index].shape))
        return out

    def backward(ctx, g):
        _check_kept(ctx)
        gv = None
        if ctx.needs_input_grad[1]:
            gv = ops.sum_to(ops.getitem(g, ctx.index), ctx.value_shape)
        return g, gv

    def jvp(ctx, ts, xs, r):
        (tb, tv), (base, value) = ts, xs
        tb, tv = _zero_or(tb, base), _zero_or(tv, value)
        return IndexPutAccumulate.apply(tb, tv, index=ctx.index, dtype=tb.data_.dtype)


# ************************************************************ logcumsumexp and fmod


def _log_add_exp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PyTorch's _log_add_exp_helper: max + log1p(exp(min - max)), x itself where both
    are the same infinity."""
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    nan = np.isnan(y)
    lo, hi = np.where(nan, y, lo), np.where(nan, y, hi)
    with np.errstate(invalid="ignore", over="ignore"):
        out = hi + np.log1p(np.exp(lo - hi))
    return np.where((lo != hi) | np.isfinite(lo), out, x)


class Logcumsumexp(Function):
    """log(cumsum(exp(a))) along dim, accumulated in double as PyTorch's CPU kernel"""

    contiguous_result = True

    grad_fn_name = "LogcumsumexpBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output(a)
        if a.data_.ndim == 0:  # PyTorch copies a 0-d tensor (so -0. stays -0.)
            return a.data_.copy()
        x = _as_1d(a.data_)
        acc = np.moveaxis(x, dim, 0).astype(np.float64)
        out = np.empty_like(acc)
        run = np.full(acc.shape[1:], -np.inf)
        for k in range(acc.shape[0]):
            run = _log_add_exp(acc[k], run)
            out[k] = run
        return _c_order(np.moveaxis(out.astype(x.dtype), 0, dim).reshape(a.data_.shape))

    def backward(ctx, g):
        # PyTorch's logcumsumexp_backward: the positive and negative parts of g as logs,
        # each through a reversed logcumsumexp (both differentiable)
        a, r = ctx.saved_tensors
        if g.data_.size == 0 or g.data_.ndim == 0:  # PyTorch passes g itself on
            return (g,)
        d = ctx.dim

        def reverse(t: Tensor) -> Tensor:
            return ops.flip(ops.logcumsumexp(ops.flip(t, (d,)), d), (d,))

        lowest = float(np.finfo(g.data_.dtype).min)
        log_abs = ops.log(ops.abs(g))
        pos = ops.where(g > 0, log_abs, lowest)
        neg = ops.where(g < 0, log_abs, lowest)
        return (ops.exp(reverse(pos - r) + a) - ops.exp(reverse(neg - r) + a),)

    def jvp(ctx, ts, xs, r):
        # PyTorch's logcumsumexp_jvp: cumsum(e * t) / (cumsum(e) + 1e-13), e = exp(a - max)
        (t,), (a,) = ts, xs
        if a.data_.ndim == 0:
            return t
        d = ctx.dim
        e = ops.exp(a - ops.amax(a, d, True))
        return ops.cumsum(e * t, d) / (ops.cumsum(e, d) + 1e-13)


class Fmod(Function):
    """C's fmod(a, number) (the dividend's sign); d/da = 1"""

    grad_fn_name = "FmodBackward0"

    def forward(ctx, a, other, dtype):
        return np.fmod(_d(a, dtype), np.asarray(other, dtype))

    def backward(ctx, g):
        return (g,)

    def jvp(ctx, ts, xs, r):
        return ts[0]


class FmodTensor(Function):
    """fmod(a, b) of two tensors; d/da = 1, d/db = -trunc(a / b)"""

    grad_fn_name = "FmodBackward1"

    def forward(ctx, a, b, dtype):
        if ctx.needs_input_grad[1]:
            ctx.save(a, b)
        return np.fmod(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        if not ctx.needs_input_grad[1]:
            return g, None
        a, b = ctx.saved_tensors
        return g, -g * ops.div(a, b, rounding_mode="trunc")

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        return _lin(ta, None if tb is None else -tb * ops.div(a, b, rounding_mode="trunc"))


class ClampMin(Clamp):
    """max(a, lo) with a number bound"""

    grad_fn_name = "ClampMinBackward0"


class ClampMax(Clamp):
    """min(a, hi) with a number bound"""

    grad_fn_name = "ClampMaxBackward0"


class ClampMinTensor(ClampTensor):
    """max(a, lo) with a tensor bound (which gets a gradient too)"""

    grad_fn_name = "ClampMinBackward1"
    elementwise = (0, 1)  # (two inputs: the tensor and its bound)
    low = True

    def forward(ctx, a, bound, dtype):
        lo, hi = (bound, None) if ctx.low else (None, bound)
        out = ClampTensor.forward(ctx, a, lo, hi, dtype)
        ctx.save(bound, a)  # PyTorch unpacks the bound first (its version error names it)
        return out

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = ops.where(a >= b if ctx.low else a <= b, g, 0.0) if need[0] else None
        gb = ops.where(a < b if ctx.low else a > b, g, 0.0) if need[1] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        if ctx.low:
            return ClampTensor.jvp(ctx, (ta, tb, None), (a, b, None), r)
        return ClampTensor.jvp(ctx, (ta, None, tb), (a, None, b), r)


class ClampMaxTensor(ClampMinTensor):
    """min(a, hi) with a tensor bound (which gets a gradient too)"""

    grad_fn_name = "ClampMaxBackward1"
    low = False


# ************************************************************ neural-network functions


class Softmax(Function):
    """exp(a) / sum(exp(a)) along dim"""

    grad_fn_name = "SoftmaxBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output()
        x = _c_order(ops.float_data(a))  # PyTorch's kernel: a contiguous result
        dim = dim if x.ndim else None  # a 0-d tensor: dim 0 is the tensor itself
        if x.dtype == np.float32 and x.ndim and x.size:
            return kernels32.softmax(x, dim)
        if x.dtype == np.float64 and x.ndim and x.size:
            return softmax64.softmax(x, dim)
        e = np.exp(x - np.max(x, axis=dim, keepdims=True)) if x.size else x
        return (e / np.sum(e, axis=dim, keepdims=True)).astype(x.dtype) if x.size else x.copy()

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return (SoftmaxBackwardData.apply(g, y, dim=ctx.dim),)

    def jvp(ctx, ts, xs, r):
        # result * (t - sum(result * t)) along dim
        t = ts[0]
        d = (ctx.dim,) if r.data_.ndim else ()
        return r * (t - ops.sum_dims(r * t, d, True))


def _row_sum(x: np.ndarray, dim: int) -> np.ndarray:
    """Sum along dim (kept) as PyTorch's softmax backward kernels add: along the last
    dim from the first element (a row of -0. sums to -0.), along another from +0."""
    if not x.ndim:
        return x.copy()
    last = dim % x.ndim == x.ndim - 1
    return np.sum(x, axis=dim, keepdims=True, initial=-0.0 if last else 0.0)


def _float32_lastdim(g: np.ndarray, y: np.ndarray, dim: int) -> bool:
    """Whether a softmax backward runs PyTorch's float32 last-dim kernel."""
    return (
        g.dtype == y.dtype == np.float32
        and g.ndim > 0
        and g.size > 0
        and dim % g.ndim == g.ndim - 1
    )


class SoftmaxBackwardData(Function):
    """softmax's gradient y * (g - sum(g * y)) along dim"""

    grad_fn_name = "SoftmaxBackwardDataBackward0"

    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save(g if ctx.needs_input_grad[1] else None, y)
        gd, yd = g.data_, y.data_
        if _float32_lastdim(gd, yd, dim):
            return kernels32.softmax_backward_lastdim(gd, yd)
        if gd.dtype == yd.dtype == np.float64 and gd.ndim and gd.size:
            return softmax64.softmax_backward(gd, yd, dim)
        return yd * (gd - _row_sum(gd * yd, dim))

    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        d = (ctx.dim,) if y.data_.ndim else ()
        gg_g = SoftmaxBackwardData.apply(gg, y, dim=ctx.dim) if ctx.needs_input_grad[0] else None
        gg_y = None
        if g is not None:
            gg_y = gg * g - gg * ops.sum_dims(g * y, d, True) - ops.sum_dims(gg * y, d, True) * g
        return gg_g, gg_y

    def jvp(ctx, ts, xs, r):
        (tg, ty), (g, y) = ts, xs
        d = (ctx.dim,) if y.data_.ndim else ()
        dg = None if tg is None else SoftmaxBackwardData.apply(tg, y, dim=ctx.dim)
        dy = None
        if ty is not None:
            dy = ty * (g - ops.sum_dims(g * y, d, True)) - y * ops.sum_dims(g * ty, d, True)
        return _lin(dg, dy)


class LogSoftmax(Function):
    """a - logsumexp(a) along dim"""

    grad_fn_name = "LogSoftmaxBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output()
        x = _c_order(ops.float_data(a))  # PyTorch's kernel: a contiguous result
        if not x.size:
            return x.copy()
        dim = dim if x.ndim else None  # a 0-d tensor: dim 0 is the tensor itself
        if x.dtype == np.float32 and x.ndim:
            if dim % x.ndim == x.ndim - 1:
                return kernels32.log_softmax_lastdim(x)
            return kernels32.log_softmax_dim(x, dim)
        # array methods, not np.max/np.sum: those add a Python-level wrapper per call
        m = x.max(axis=dim, keepdims=True)
        return (x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))).astype(x.dtype)

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return (LogSoftmaxBackwardData.apply(g, y, dim=ctx.dim),)

    def jvp(ctx, ts, xs, r):
        # t - sum(softmax * t) along dim
        t = ts[0]
        d = (ctx.dim,) if r.data_.ndim else ()
        return t - ops.sum_dims(ops.exp(r) * t, d, True)


class LogSoftmaxBackwardData(Function):
    """log_softmax's gradient g - exp(y) * sum(g) along dim"""

    grad_fn_name = "LogSoftmaxBackwardDataBackward0"

    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save(g if ctx.needs_input_grad[1] else None, y)
        gd, yd = g.data_, y.data_
        if _float32_lastdim(gd, yd, dim):
            return kernels32.log_softmax_backward_lastdim(gd, yd)
        if gd.ndim and gd.size and gd.dtype == yd.dtype == np.float64:
            return softmax64.log_softmax_backward(gd, np.broadcast_to(yd, gd.shape), dim)
        if gd.ndim and gd.size and gd.dtype == yd.dtype == np.float32:
            return kernels32.log_softmax_backward(gd, np.broadcast_to(yd, gd.shape), dim)
        return gd - np.exp(yd) * _row_sum(gd, dim)

    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        d = (ctx.dim,) if y.data_.ndim else ()
        gg_g = gg - ops.sum_dims(gg * ops.exp(y), d, True) if ctx.needs_input_grad[0] else None
        gg_y = -ops.sum_dims(g, d, True) * ops.exp(y) * gg if g is not None else None
        return gg_g, gg_y

    def jvp(ctx, ts, xs, r):
        (tg, ty), (g, y) = ts, xs
        d = (ctx.dim,) if y.data_.ndim else ()
        dg = None if tg is None else tg - ops.exp(y) * ops.sum_dims(tg, d, True)
        dy = None if ty is None else -(ops.exp(y) * ty * ops.sum_dims(g, d, True))
        return _lin(dg, dy)


def _reduce_loss(x: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "mean":
        return torch_mean(x, None) if x.size else np.asarray(np.nan, x.dtype)
    if reduction == "sum":
        return torch_sum(x, None)
    return x


def _loss_scale(g: np.ndarray, shape: tuple[int, ...], reduction: str) -> np.ndarray:
    """The incoming loss gradient spread over the elements (divided by n for mean)."""
    if reduction == "none":
        return g
    g = np.broadcast_to(g, shape)
    if reduction == "mean":
        return g / np.asarray(max(1, int(np.prod(shape))), g.dtype)
    return g


def _loss_scale_t(g: Tensor, shape: tuple[int, ...], reduction: str) -> Tensor:
    if reduction == "none":
        return g
    if reduction == "mean":
        return ops.expand(g, shape) / max(1, int(np.prod(shape)))
    return ops.expand(g, shape)


def _loss_apply_t(t: Tensor, reduction: str) -> Tensor:
    """A loss's elementwise tangent reduced as the loss is (mean, sum or none)."""
    if reduction == "mean":
        return ops.mean(t)
    return ops.sum(t) if reduction == "sum" else t


def _loss_reduce_t(t: Tensor, reduction: str) -> Tensor:
    """The gradient for the loss's own incoming gradient: summed unless reduction='none'."""
    return t if reduction == "none" else ops.sum(t)


class MseLoss(Function):
    """mean((input - target)**2)"""

    grad_fn_name = "MseLossBackward0"

    def forward(ctx, a, t, reduction, dtype):
        ctx.reduction = reduction
        ctx.save(a, t)
        d = _d(a, dtype) - _d(t, dtype)
        ctx.shape = d.shape
        return _reduce_loss(d * d, reduction)

    def backward(ctx, g):
        a, t = ctx.saved_tensors
        r = ctx.reduction
        ga = MseLossBackward.apply(g, a, t, reduction=r) if ctx.needs_input_grad[0] else None
        gt = MseLossBackward.apply(g, t, a, reduction=r) if ctx.needs_input_grad[1] else None
        return ga, gt

    def jvp(ctx, ts, xs, r):
        (ta, tt), (a, t) = ts, xs
        dd = _lin(ta, None if tt is None else -tt)
        return _loss_apply_t((a - t) * dd * 2, ctx.reduction)


class MseLossBackward(Function):
    """mse_loss's gradient 2 (a - t) g (divided by n for mean)"""

    grad_fn_name = "MseLossBackwardBackward0"

    def forward(ctx, g, a, t, reduction):
        ctx.reduction = reduction
        ctx.save(g, a, t)
        d = a.data_ - t.data_
        ctx.shape = d.shape
        return (_loss_scale(g.data_, d.shape, reduction) * d * 2).astype(d.dtype, copy=False)

    def backward(ctx, gg):
        g, a, t = ctx.saved_tensors
        r = ctx.reduction
        gg_g = None
        if ctx.needs_input_grad[0]:
            gg_g = (a - t) * gg * 2
            if r == "mean":
                gg_g = gg_g / max(1, int(np.prod(ctx.shape)))
            gg_g = _loss_reduce_t(gg_g, r)
        scaled = _loss_scale_t(g, ctx.shape, r) * gg * 2
        return gg_g, scaled, -scaled

    def jvp(ctx, ts, xs, r):
        (tg, ta, tt), (g, a, t) = ts, xs
        red = ctx.reduction
        dd = _lin(ta, None if tt is None else -tt)
        return _lin(
            None if tg is None else _loss_scale_t(tg, ctx.shape, red) * (a - t) * 2,
            None if dd is None else _loss_scale_t(g, ctx.shape, red) * dd * 2,
        )


class _KinkLoss(Function):
    """smooth_l1_loss and huber_loss: quadratic within `k` of the target, linear beyond.

    `huber`: 0.5 d² inside, k (|d| - k/2) outside; else (smooth L1) 0.5 d²/k inside,
    |d| - k/2 outside. Their gradients are one row each (`_KinkLossBackward`)."""

    huber = False

    def forward(ctx, a, t, reduction, k, dtype):
        ctx.reduction, ctx.k = reduction, k
        ctx.save(a, t)
        d = _d(a, dtype) - _d(t, dtype)
        ctx.shape = d.shape
        z, kk = np.abs(d), np.asarray(k, d.dtype)
        half = np.asarray(0.5, d.dtype)
        if ctx.huber:
            loss = np.where(z < kk, half * z * z, kk * (z - half * kk))
        else:
            loss = np.where(z < kk, half * z * z / kk, z - half * kk)
        return _reduce_loss(loss.astype(d.dtype, copy=False), reduction)

    def backward(ctx, g):
        a, t = ctx.saved_tensors
        if ctx.huber and a.data_.dtype != t.data_.dtype:  # (a target of another dtype)
            raise RuntimeError(
                f"Found dtype {t.dtype.legacy[:-6]} but expected {a.dtype.legacy[:-6]}"
            )
        row = HuberLossBackward if ctx.huber else SmoothL1LossBackward
        kw = {"reduction": ctx.reduction, "k": ctx.k}
        ga = row.apply(g, a, t, **kw) if ctx.needs_input_grad[0] else None
        gt = row.apply(g, t, a, **kw) if ctx.needs_input_grad[1] else None
        return ga, gt

    def jvp(ctx, ts, xs, r):
        (ta, tt), (a, t) = ts, xs
        dd = _lin(ta, None if tt is None else -tt)
        return _loss_apply_t(_kink_slope(a - t, ctx.k, ctx.huber) * dd, ctx.reduction)


def _kink_slope(d: Tensor, k: float, huber: bool) -> Tensor:
    """The loss's derivative in d: d (or d/k) clamped at ±k (±1)."""
    return ops.clamp(d, -k, k) if huber else ops.clamp(d / k, -1.0, 1.0)


class SmoothL1Loss(_KinkLoss):
    """0.5 d²/beta where |d| < beta, |d| - beta/2 elsewhere (d = input - target)"""

    grad_fn_name = "SmoothL1LossBackward0"


class HuberLoss(_KinkLoss):
    """0.5 d² where |d| < delta, delta (|d| - delta/2) elsewhere (d = input - target)"""

    grad_fn_name = "HuberLossBackward0"
    huber = True


class _KinkLossBackward(Function):
    """the kink losses' gradient, as PyTorch's kernels compute it, for a - t"""

    huber = False

    def forward(ctx, g, a, t, reduction, k):
        ctx.reduction, ctx.k = reduction, k
        ctx.save(g, a, t)
        x = a.data_ - t.data_
        ctx.shape = x.shape
        dt = x.dtype
        n = max(1, int(np.prod(x.shape))) if reduction == "mean" else 1
        norm = np.asarray(1.0 / n, dt)
        go = np.broadcast_to(g.data_, x.shape)
        with np.errstate(all="ignore"):
            # PyTorch's scalar loop: k a double (compared and multiplied as one)
            if ctx.huber:
                edge = ((norm * go).astype(np.float64) * k).astype(dt)
                inside = norm * x * go
            else:
                edge = norm * go
                inside = ((norm * x * go).astype(np.float64) / k).astype(dt)
            wide = x.astype(np.float64)
            out = np.where(wide <= -k, -edge, np.where(wide >= k, edge, inside))
            simd = _simd_positions(x.shape, (a.data_, t.data_, go), dt)
            if simd is not False and np.any(simd):
                # its SIMD blocks: k rounded to the dtype, norm * (clamped slope) * g
                kk = np.asarray(k, dt)
                one = np.where(x > 0, dt.type(1), dt.type(-1))
                big = np.abs(x) >= kk
                slope = np.where(big, one * kk, x) if ctx.huber else np.where(big, one, x / kk)
                out = np.where(simd, norm * slope * go, out)
        return out.astype(dt, copy=False)

    def backward(ctx, gg):
        # PyTorch's smooth_l1/huber_loss_double_backward and their _grad_output twins:
        # the kernel again for g's gradient, gg * g masked inside the kink for a's and t's
        g, a, t = ctx.saved_tensors
        r, k = ctx.reduction, ctx.k
        row = type(ctx)
        gg_g = None
        if ctx.needs_input_grad[0]:
            if r == "none":
                gg_g = row.apply(gg, a, t, reduction=r, k=k)
            else:
                ones = Tensor._make(np.ones(g.data_.shape, g.data_.dtype))
                gg_g = ops.sum(row.apply(ones, a, t, reduction=r, k=k) * gg)
        d = a - t
        inside = ops.to_dtype(ops.abs(d) < k, gg.dtype)
        scaled = gg * g * inside
        if not ctx.huber:
            scaled = scaled / k
        if r == "mean":
            scaled = scaled / max(1, int(np.prod(ctx.shape)))
        return gg_g, scaled, -scaled

    def jvp(ctx, ts, xs, r):
        (tg, ta, tt), (g, a, t) = ts, xs
        red, k = ctx.reduction, ctx.k
        d = a - t
        dd = _lin(ta, None if tt is None else -tt)
        slope = _kink_slope(d, k, ctx.huber)
        curved = None
        if dd is not None:
            curved = _loss_scale_t(g, ctx.shape, red) * dd
            curved = ops.where(ops.abs(d) < k, curved if ctx.huber else curved / k, 0.0)
        return _lin(None if tg is None else _loss_scale_t(tg, ctx.shape, red) * slope, curved)


class SmoothL1LossBackward(_KinkLossBackward):
    """smooth_l1_loss's gradient: clamp(d / beta, -1, 1) g (divided by n for mean)"""

    grad_fn_name = "SmoothL1LossBackwardBackward0"


class HuberLossBackward(_KinkLossBackward):
    """huber_loss's gradient: clamp(d, -delta, delta) g (divided by n for mean)"""

    grad_fn_name = "HuberLossBackwardBackward0"
    huber = True
    jvp = None  # PyTorch has no forward-mode rule for huber_loss_backward
    jvp_not_yet = True


class BinaryCrossEntropy(Function):
    """-(t log p + (1 - t) log(1 - p)), logs clamped at -100 as PyTorch does"""

    grad_fn_name = "BinaryCrossEntropyBackward0"

    def forward(ctx, p, t, weight, reduction, dtype):
        # weight is a constant (PyTorch gives it no gradient and no edge)
        ctx.reduction = reduction
        ctx.weight = weight.detach() if weight is not None else None
        ctx.save(p, t)
        pd, td = _d(p, dtype), _d(t, dtype)
        if np.any((pd < 0) | (pd > 1)):
            raise RuntimeError("all elements of input should be between 0 and 1")
        with np.errstate(divide="ignore"):
            lp = np.maximum(np.log(pd), -100)
            l1p = np.maximum(np.log1p(-pd), -100)
        loss = -(td * lp + (1 - td) * l1p)
        if weight is not None:
            loss = loss * _d(weight, dtype)
        ctx.shape = loss.shape
        return _reduce_loss(loss.astype(dtype), reduction)

    def backward(ctx, g):
        p, t = ctx.saved_tensors
        r, w = ctx.reduction, ctx.weight
        gp = BceBackward.apply(g, p, t, weight=w, reduction=r) if ctx.needs_input_grad[0] else None
        gt = None
        if ctx.needs_input_grad[1]:
            # -logit(p): log(1 - p) - log(p)
            gt = _loss_scale_t(g, ctx.shape, r) * (ops.log(1 - p) - ops.log(p))
            if w is not None:
                gt = gt * w
        return gp, gt

    def jvp(ctx, ts, xs, r):
        (tp, tt), (p, t) = ts, xs
        w = ctx.weight
        dp = None if tp is None else tp * (p - t) / ops.clamp((1 - p) * p, _BCE_EPS)
        dt = None if tt is None else tt * (ops.log(1 - p) - ops.log(p))
        d = _lin(dp, dt)
        return _loss_apply_t(d if w is None else d * w, ctx.reduction)


_BCE_EPS = 1e-12


class BceBackward(Function):
    """binary_cross_entropy's gradient g (p - t) / max(p (1 - p), eps) (times weight)"""

    grad_fn_name = "BinaryCrossEntropyBackwardBackward0"

    def forward(ctx, g, p, t, weight, reduction):
        ctx.reduction, ctx.weight = reduction, weight
        w = weight
        ctx.save(g, p, t)
        pd, td = p.data_, t.data_
        ctx.shape = np.broadcast_shapes(pd.shape, td.shape)
        out = (
            _loss_scale(g.data_, ctx.shape, reduction)
            * (pd - td)
            / np.maximum((1 - pd) * pd, _BCE_EPS)
        )
        if w is not None:
            out = out * w.data_
        return out.astype(pd.dtype, copy=False)

    def backward(ctx, gg):
        g, p, t = ctx.saved_tensors
        r, w = ctx.reduction, ctx.weight
        scale = _loss_scale_t(g, ctx.shape, r)
        gg_g = gg_p = gg_t = None
        if ctx.needs_input_grad[0]:
            d = (p - t) / ops.clamp((1 - p) * p, _BCE_EPS) * gg
            if w is not None:
                d = d * w
            if r == "mean":
                d = d / max(1, int(np.prod(ctx.shape)))
            gg_g = _loss_reduce_t(d, r)
        if ctx.needs_input_grad[1]:
            # PyTorch's binary_cross_entropy_double_backward, its nodes in the order GCC
            # builds them (an operator's right operand first); the mean's division last
            inp_eps = p + _BCE_EPS
            one_m = 1 - p + _BCE_EPS
            b2 = one_m**2
            den = inp_eps**2 * b2
            cross = MulScalar.apply(p, other=2) * t
            num = p * p - cross + t
            gg_p = num / den * (g * gg)
            if w is not None:
                gg_p = gg_p * w
            if r == "mean":
                gg_p = DivScalar.apply(gg_p, other=max(1, int(np.prod(ctx.shape))))
        if ctx.needs_input_grad[2]:
            gg_t = -(scale * gg) / ops.clamp((1 - p) * p, _BCE_EPS)
            if w is not None:
                gg_t = gg_t * w
        return gg_g, gg_p, gg_t

    def jvp(ctx, ts, xs, r):
        (tg, tp, tt), (g, p, t) = ts, xs
        red, w = ctx.reduction, ctx.weight
        scale = _loss_scale_t(g, ctx.shape, red)
        terms = []
        if tg is not None:
            terms.append(
                _loss_scale_t(tg, ctx.shape, red) * (p - t) / ops.clamp((1 - p) * p, _BCE_EPS)
            )
        if tp is not None:
            num = p * p - p * t * 2 + t
            den = (p + _BCE_EPS) ** 2 * (1 - p + _BCE_EPS) ** 2
            terms.append(num / den * scale * tp)
        if tt is not None:
            terms.append(-(scale * tt) / ops.clamp((1 - p) * p, _BCE_EPS))
        d = _lin(*terms)
        return d if w is None or d is None else d * w


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), as PyTorch's kernel."""
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


class BinaryCrossEntropyWithLogits(Function):
    """(1 - t) x - log_sigmoid(x) (1 + (pos_weight - 1) t), times weight"""

    grad_fn_name = "BinaryCrossEntropyWithLogitsBackward0"

    def forward(ctx, x, t, weight, pos_weight, reduction, dtype):
        # weight and pos_weight are constants (PyTorch has no formula for them)
        ctx.reduction = reduction
        ctx.weight = weight.detach() if weight is not None else None
        ctx.pos_weight = pos_weight.detach() if pos_weight is not None else None
        ctx.save(x, t)
        xd, td = _d(x, dtype), _d(t, dtype)
        ls = _log_sigmoid(xd)
        if pos_weight is not None:
            ls = ls * ((_d(pos_weight, dtype) - 1) * td + 1)
        loss = (1 - td) * xd - ls
        if weight is not None:
            loss = loss * _d(weight, dtype)
        loss = loss.astype(dtype, copy=False)
        ctx.numel = loss.size
        return _reduce_loss(loss, reduction)

    def backward(ctx, g):
        # PyTorch's composite formulas, node for node (mean ends in DivBackward1)
        x, t = ctx.saved_tensors
        w, pw = ctx.weight, ctx.pos_weight
        gx = gt = None
        if ctx.needs_input_grad[0]:
            if pw is not None:
                tt = pw * t
                gx = (tt + 1 - t) * ops.sigmoid(x) - tt
            else:
                gx = ops.sigmoid(x) - t
            gx = _bce_logits_finish(gx * g, w, ctx.reduction, ctx.numel)
        if ctx.needs_input_grad[1]:
            gt = ops.softplus(-x) * pw - ops.softplus(x) if pw is not None else -x
            gt = _bce_logits_finish(gt * g, w, ctx.reduction, ctx.numel)
        return gx, gt


def _bce_logits_finish(grad: Tensor, w: Tensor | None, reduction: str, n: int) -> Tensor:
    if w is not None:
        grad = grad * w
    if reduction == "mean":
        grad = DivScalar.apply(grad, other=n)
    return grad


def _nll_weights(weight: Tensor | None, valid: np.ndarray, safe: np.ndarray, dt: Any) -> Any:
    """Each target's class weight (0 where the target is ignored)."""
    if weight is None:  # all classes weigh 1: the weights are the valid mask
        return valid.astype(dt)
    return np.where(valid, weight.data_[safe], 0).astype(dt)


def _nll_total_weight(weight: Tensor | None, wt: np.ndarray, valid: np.ndarray) -> Any:
    """nll_loss's divisor for "mean": the count of valid targets, or their class
    weights added in the kernel's cascade order."""
    if weight is None:
        return np.asarray(np.count_nonzero(valid), wt.dtype)
    at = np.flatnonzero(valid)
    return nll_cascade_sum(wt.ravel()[at], at, valid.size)


def _pick(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """x[n, idx[n], ...] along dim 1 (nll_loss's picked log-probabilities)."""
    if x.ndim == 2:  # (batch, classes): plain fancy indexing is much cheaper
        return x[np.arange(x.shape[0]), idx]
    return np.take_along_axis(x, np.expand_dims(idx, 1), 1).squeeze(1)


class NllLoss(Function):
    """-logp[target] averaged (weighted) over the batch"""

    grad_fn_name = "NllLossBackward0"

    def forward(ctx, logp, weight, target, reduction, ignore_index, kept=()):
        # weight is a constant (PyTorch gives it no gradient and no edge); `kept`: the
        # target and weight tensors, saved (version-checked) as PyTorch saves them
        x = logp.data_
        tgt = target.astype(np.int64)
        batched = x.ndim >= 2
        xx = x if batched else x[None]
        tt = tgt if batched else tgt[None]
        n_cls = xx.shape[1]
        valid = tt != ignore_index
        safe = np.where(valid, tt, 0)
        if ((safe < 0) | (safe >= n_cls)).any():
            bad = int(safe[(safe < 0) | (safe >= n_cls)].flat[0])
            raise IndexError(f"Target {bad} is out of bounds.")
        wt = _nll_weights(weight, valid, safe, x.dtype)
        picked = _pick(xx, safe)
        # an ignored target contributes an exact +0 (not -logp * 0: NaN for -inf)
        losses = np.where(valid, -picked * wt, np.zeros((), x.dtype))
        ctx.params = (weight, target, reduction, ignore_index)
        ctx.save(logp, *kept)
        if reduction == "none" and batched:
            return losses
        # PyTorch's kernel sums into a +0 here (one sample, or a reduction): a -0 loss is +0
        at = np.flatnonzero(valid)
        total = nll_cascade_sum(losses.ravel()[at], at, valid.size)
        if reduction != "mean":
            return total
        with np.errstate(invalid="ignore", divide="ignore"):
            return (total / _nll_total_weight(weight, wt, valid)).astype(x.dtype)

    def backward(ctx, g):
        logp = ctx.saved_tensors[0]
        weight, target, reduction, ignore_index = ctx.params
        gx = NllLossBackward.apply(
            g, logp, weight=weight, target=target, reduction=reduction, ignore_index=ignore_index
        )
        return (gx,)

    def jvp(ctx, ts, xs, r):
        weight, target, reduction, ignore_index = ctx.params
        return NllLoss.apply(
            ts[0], weight=weight, target=target, reduction=reduction, ignore_index=ignore_index
        )


class NllLossBackward(Function):
    """nll_loss's gradient: -weight[target] * g at each target (divided by the total
    weight for mean); linear in g, so its own gradient is nll_loss of the incoming one"""

    grad_fn_name = "NllLossBackwardBackward0"

    def forward(ctx, g, logp, weight, target, reduction, ignore_index):
        ctx.params = (weight, target, reduction, ignore_index)
        ctx.save(logp)
        x = logp.data_
        batched = x.ndim >= 2
        tt = target.astype(np.int64) if batched else target.astype(np.int64)[None]
        valid = tt != ignore_index
        safe = np.where(valid, tt, 0)
        wt = _nll_weights(weight, valid, safe, x.dtype)
        if reduction == "none":  # -w * g, per element (K-dim losses too)
            vals = -wt * g.data_.reshape(wt.shape)
        else:  # w * -(g / total weight): PyTorch divides the one incoming number first
            gd = g.data_.reshape(())
            with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: 0 / 0
                if reduction == "mean":
                    gd = gd / _nll_total_weight(weight, wt, valid)
                vals = np.broadcast_to(-gd, wt.shape) if weight is None else wt * -gd
        out = np.zeros(x.shape if batched else (1,) + x.shape, x.dtype)
        # nothing is written for an ignored target: its row stays +0
        vals = np.where(valid, vals, np.zeros((), x.dtype))
        if out.ndim == 2:  # (batch, classes): plain fancy indexing, one entry per row
            out[np.arange(out.shape[0]), safe] = vals
        else:
            np.put_along_axis(out, np.expand_dims(safe, 1), np.expand_dims(vals, 1), 1)
        return out if batched else out[0]

    def backward(ctx, gg):
        (logp,) = ctx.saved_tensors
        weight, target, reduction, ignore_index = ctx.params
        gg_g = None
        if ctx.needs_input_grad[0]:
            gg_g = NllLoss.apply(
                gg, weight=weight, target=target, reduction=reduction, ignore_index=ignore_index
            )
        return gg_g, _zeros_like(logp)

    def jvp(ctx, ts, xs, r):
        (tg, _), (_, logp) = ts, xs
        if tg is None:
            return _zeros_like(r)
        weight, target, reduction, ignore_index = ctx.params
        return NllLossBackward.apply(
            tg, logp, weight=weight, target=target, reduction=reduction, ignore_index=ignore_index
        )


class ZeroFill(Function):
    """the value of `t.zero_()`"""

    grad_fn_name = "ZeroBackward0"

    def forward(ctx, t):
        return np.zeros_like(t.data_)

    def backward(ctx, g):
        return (_zeros_like(g),)  # PyTorch's zeros_like(grad): +0, whatever g's signs

    def jvp(ctx, ts, xs, r):
        return _zeros_like(r)


class FillScalar(Function):
    """the value of `t.fill_(number)`"""

    grad_fn_name = "FillBackward2"

    def forward(ctx, t, value):
        return np.full_like(t.data_, value)

    def backward(ctx, g):
        return (_zeros_like(g),)

    def jvp(ctx, ts, xs, r):
        return _zeros_like(r)


class FillTensor(Function):
    """the value of `t.fill_(0-d tensor)`"""

    grad_fn_name = "FillBackward3"

    def forward(ctx, t, v):
        return np.full_like(t.data_, v.data_)

    def backward(ctx, g):
        return _zeros_like(g), ops.sum(g)

    def jvp(ctx, ts, xs, r):
        tv = ts[1]
        return _zeros_like(r) if tv is None else ops.expand(tv, r.data_.shape)


class CopyFrom(Function):
    """the value of `t.copy_(src)`"""

    grad_fn_name = "CopyBackwards"

    def name(self) -> str:
        """PyTorch's `name()` of this C++ node is namespaced (the repr is not)."""
        return "torch::autograd::CopyBackwards"

    def forward(ctx, t, src):
        ctx.src_dtype = src.data_.dtype
        return np.broadcast_to(src.data_, t.data_.shape).astype(t.data_.dtype)

    def backward(ctx, g):
        # PyTorch's CopyBackwards casts to src's dtype itself; the engine then sums a
        # broadcast gradient down to src's shape (so Sum comes after ToCopy)
        gs = g if g.data_.dtype == ctx.src_dtype else ops.to_dtype(g, ctx.src_dtype)
        return _zeros_like(g), gs

    def jvp(ctx, ts, xs, r):
        ts_ = ts[1]
        return _zeros_like(r) if ts_ is None else ops.expand(ts_, r.data_.shape)


class Normal(Function):
    """`torch.normal(mean, std)` with a tensor mean (a sample: zero gradient, as PyTorch's)"""

    grad_fn_name = "NormalBackward1"

    def forward(ctx, *tensors, sample):
        ctx.shapes = [t.data_.shape for t in tensors]
        return sample

    def backward(ctx, g):
        return tuple(Tensor._make(np.zeros(shape, g.data_.dtype)) for shape in ctx.shapes)

    def jvp(ctx, ts, xs, r):
        return _zeros_like(r)


class NormalStd(Normal):
    """`torch.normal(mean, std)` with a number mean and a tensor std"""

    grad_fn_name = "NormalBackward2"


class NormalBoth(Normal):
    """`torch.normal(mean, std)` with tensors for both"""

    grad_fn_name = "NormalBackward3"


# ************************************************************ tutorial ops (issue 12)


class Tril(Function):
    """the lower triangle of the last two dims, zeros above `diagonal`"""

    contiguous_result = True

    grad_fn_name = "TrilBackward0"

    def forward(ctx, a, diagonal):
        ctx.diagonal = diagonal
        return np.tril(a.data_, diagonal)

    def backward(ctx, g):
        return (ops.tril(g, ctx.diagonal),)

    def jvp(ctx, ts, xs, r):
        return ops.tril(ts[0], ctx.diagonal)


class Triu(Function):
    """the upper triangle of the last two dims, zeros below `diagonal`"""

    contiguous_result = True

    grad_fn_name = "TriuBackward0"

    def forward(ctx, a, diagonal):
        ctx.diagonal = diagonal
        return np.triu(a.data_, diagonal)

    def backward(ctx, g):
        return (ops.triu(g, ctx.diagonal),)

    def jvp(ctx, ts, xs, r):
        return ops.triu(ts[0], ctx.diagonal)


class Cumprod(Function):
    """running product along dim"""

    contiguous_result = True

    grad_fn_name = "CumprodBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output(a)
        x = a.data_
        if x.ndim == 0:
            return x.copy()
        # PyTorch's CPU kernel accumulates float32 in double, rounding each output
        return np.moveaxis(prodgrad.cumprod(np.moveaxis(x, dim, -1)), -1, dim)

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        x, d = a.data_, ctx.dim
        if x.size <= 1 or x.shape[d] == 1:  # PyTorch returns the gradient itself
            return (g,)
        w = r * g
        if not (x == 0).any():  # reversed_cumsum(output * grad) / input
            return (ops.flip(ops.cumsum(ops.flip(w, (d,)), d), (d,)) / a,)
        if not grad_mode.state.enabled:  # PyTorch's O(n) masked formula, values only
            with np.errstate(all="ignore"):
                back = prodgrad._cumprod_backward(
                    np.moveaxis(np.broadcast_to(g.data_, x.shape), d, -1),
                    np.moveaxis(x, d, -1),
                    np.moveaxis(r.data_, d, -1),
                )
            return (Tensor._make(_c_order(np.moveaxis(back, -1, d))),)
        return (_cumprod_backward_graph(g, a, d),)

    def jvp(ctx, ts, xs, r):
        t, a, d = ts[0], xs[0], ctx.dim
        x = a.data_
        if x.ndim == 0 or x.shape[d] <= 1:
            return ops.clone(t)
        if not (x == 0).any():  # PyTorch's generic formula
            return ops.cumsum(t / a, d) * r
        n = x.shape[d]
        parts = [
            ops.sum(ops.prod_others(ops.narrow(a, d, 0, k + 1), d) * ops.narrow(t, d, 0, k + 1), d)
            for k in range(n)
        ]
        return ops.stack(parts, d)


def _cumprod_backward_graph(g: Tensor, a: Tensor, d: int) -> Tensor:
    """PyTorch's differentiable O(n^2) cumprod_backward, for an input with zeros in
    grad mode: each element's gradient from the products before and after it."""
    x = a.data_
    n = x.shape[d]
    ones_shape = list(x.shape)
    ones_shape[d] = 1
    ones = ops.expand(Tensor._make(np.ones((1,), x.dtype)), *ones_shape)
    # written into a zero tensor slice by slice (the gradient's grad_fn: CopySlices)
    out = Tensor._make(np.zeros(x.shape, g.data_.dtype))
    for k in range(n):
        if k == 0:
            omitted = ops.cat([ones, ops.cumprod(ops.narrow(a, d, 1, n - 1), d)], d)
        else:
            before = ops.prod(ops.narrow(a, d, 0, k), d, keepdim=True)
            if k == n - 1:
                omitted = before
            else:
                after = ops.cumprod(ops.narrow(a, d, k + 1, n - k - 1), d)
                omitted = ops.cat([before, ops.expand(before, *after.data_.shape) * after], d)
        ops.setitem(
            out, (slice(None),) * d + (k,), ops.sum(ops.narrow(g, d, k, n - k) * omitted, d)
        )
    return out


class Roll(Function):
    """elements shifted circularly along dims (the flattened tensor without dims)"""

    contiguous_result = True

    grad_fn_name = "RollBackward0"

    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        x = a.data_
        if not dims:
            return np.roll(x, shifts[0]) if x.ndim else x.copy()
        return np.roll(x, shifts, dims) if x.ndim else x.copy()

    def backward(ctx, g):
        return (ops.roll(g, tuple(-s for s in ctx.shifts), ctx.dims or None),)

    def jvp(ctx, ts, xs, r):
        return ops.roll(ts[0], ctx.shifts, ctx.dims or None)


class Atan2(Function):
    """atan2(a, b): the angle of the point (b, a)"""

    grad_fn_name = "Atan2Backward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        x, y = _d(a, dtype), _d(b, dtype)
        if dtype == np.float32:  # computed in double, rounded once (SLEEF's u10 is within an ulp)
            return np.arctan2(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
        return np.arctan2(x, y)

    def backward(ctx, g):
        # PyTorch's atan2_backward: recip = 1 / (a * a + b * b), 0 where that is 0
        # (at the origin, or where the squares underflow)
        a, b = ctx.saved_tensors
        # (self * self + other * other: GCC computes an operator's right operand first,
        # so other * other is the older node, which orders the double backward's leaves)
        bb = b * b
        denom = a * a + bb
        recip = ops.masked_fill(ops.reciprocal(denom), denom == 0, 0.0)
        ga = g * b * recip if ctx.needs_input_grad[0] else None
        gb = g * -a * recip if ctx.needs_input_grad[1] else None
        return ga, gb

    def jvp(ctx, ts, xs, r):
        (ta, tb), (a, b) = ts, xs
        recip = ops.reciprocal(a * a + b * b)
        return _lin(None if ta is None else ta * b * recip, None if tb is None else -tb * a * recip)


def _all_functions() -> dict[str, type[Function]]:
    """Every registered operation row, by class name (for tests and docs)."""
    return dict(Function.registry)


# TensorIterator's elementwise ops (see Function.elementwise): where each finds its
# operands among its inputs, in PyTorch's operand order (a number given as a keyword
# parameter, as rsub's, is left out: it could only reorder size-1 dims' strides).
# Backward kernels count too:
# threshold_backward and leaky_relu_backward take self before the gradient.
_UNARY = (Neg, Reciprocal, Exp, Log, Log1p, Sqrt, Abs, Sin, Cos, Tan, Tanh, Sigmoid, Relu)
_UNARY += (Asin, Acos, Atan, Rsqrt)
_UNARY += (LeakyRelu, Softplus, Gelu, Elu, Silu, Hardtanh, Clamp, Sign, Sgn, Floor, Ceil)
_UNARY += (Round, RoundDecimals, Pow, DivScalar, MulScalar, AddScalar, Rsub, Remainder, Fmod)
_BINARY = (Add, Sub, Mul, Div, DivRounding, RemainderTensor, FmodTensor, PowTensor)
_BINARY += (Maximum, Minimum, Atan2, PreluKernel, TanhBackward, SigmoidBackward)
_BINARY += (GeluBackward, EluBackward, SoftplusBackward, HardtanhBackward)
for _row in _UNARY:
    _row.elementwise = (0,)
for _row in _BINARY:
    _row.elementwise = (0, 1)
for _row in (ThresholdBackward, LeakyReluBackward):
    _row.elementwise = (1, 0)
ClampTensor.elementwise = (0, 1, 2)
# pow(number, tensor) allocates its result contiguous, whatever the exponent's layout
PowScalarBase.contiguous_result = True


__all__ = [name for name, v in globals().items() if isinstance(v, type) and issubclass(v, Function)]
_unused: Any = None
