"""THE operation table: one Function per PyTorch `grad_fn` class.

Each row is a class named like the op, with its PyTorch `grad_fn` name, a
`forward` on NumPy arrays and a `backward` written in Tensor operations (so it
is itself differentiable: double backward, Hessians and symbolic formulas all
come from these same rows).  Argument parsing, scalars and dtype promotion live
in ops.py; reducing gradients over broadcast dimensions and casting them back to
each input's dtype is done once, by the engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ops
from .node import Function
from .tensor import Tensor

# Binary operands arrive already promoted by ops.py; `_d` reads an operand's
# array cast to the op's computation dtype.


def _d(t: Tensor, dt: np.dtype) -> np.ndarray:
    a = t.data_
    return a if a.dtype == dt else a.astype(dt)


def _ones_like(t: Tensor) -> Tensor:
    return Tensor._make(np.ones(t.data_.shape, t.data_.dtype))


# ************************************************************ arithmetic


class Add(Function):
    """a + alpha * b"""

    grad_fn_name = "AddBackward0"

    def forward(ctx, a, b, dtype, alpha=1):
        ctx.alpha = alpha
        if alpha == 1:
            return _d(a, dtype) + _d(b, dtype)
        return _d(a, dtype) + _d(b, dtype) * np.asarray(alpha, dtype)

    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)


class Sub(Function):
    """a - alpha * b"""

    grad_fn_name = "SubBackward0"

    def forward(ctx, a, b, dtype, alpha=1):
        ctx.alpha = alpha
        if alpha == 1:
            return _d(a, dtype) - _d(b, dtype)
        return _d(a, dtype) - _d(b, dtype) * np.asarray(alpha, dtype)

    def backward(ctx, g):
        return g, (-g if ctx.alpha == 1 else g * -ctx.alpha)


class Rsub(Function):
    """other - a, for a Python number `other` (`1 - x`)."""

    grad_fn_name = "RsubBackward1"

    def forward(ctx, a, other, dtype):
        return np.asarray(other, dtype) - _d(a, dtype)

    def backward(ctx, g):
        return (-g,)


class Mul(Function):
    """a * b"""

    grad_fn_name = "MulBackward0"

    def forward(ctx, a, b, dtype):
        need_a, need_b = ctx.needs_input_grad
        ctx.save(b if need_a else None, a if need_b else None)
        return _d(a, dtype) * _d(b, dtype)

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class Div(Function):
    """a / b"""

    grad_fn_name = "DivBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a if ctx.needs_input_grad[1] else None, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _d(a, dtype) / _d(b, dtype)

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g / b if ctx.needs_input_grad[0] else None
        gb = -g * a / (b * b) if a is not None else None
        return ga, gb


class Pow(Function):
    """a ** exponent, for a Python number exponent."""

    grad_fn_name = "PowBackward0"

    def forward(ctx, a, exponent, dtype):
        ctx.exponent = exponent
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(_d(a, dtype), np.asarray(exponent, dtype))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return (g * 0,)
        return (g * (e * a ** (e - 1)),)


class PowTensor(Function):
    """a ** b, both tensors."""

    grad_fn_name = "PowBackward1"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        ctx.save_result = None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * b * a ** (b - 1) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            # d(a**b)/db = a**b * log(a), taken as 0 where a == 0 and b >= 0
            gb = ops.where((a == 0) & (b >= 0), 0.0, g * a**b * ops.log(a))
        return ga, gb


class PowScalarBase(Function):
    """base ** b, for a Python number base (`2 ** x`)."""

    grad_fn_name = "PowBackward2"

    def forward(ctx, b, base, dtype):
        ctx.base = base
        ctx.save_output()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(np.asarray(base, dtype), _d(b, dtype))

    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        if ctx.base == 0:
            return (ops.where(result == 0, 0.0, g * result * float("-inf")),)
        return (g * result * float(np.log(ctx.base)),)


class Neg(Function):
    """-a"""

    grad_fn_name = "NegBackward0"

    def forward(ctx, a):
        return -a.data_

    def backward(ctx, g):
        return (-g,)


class Reciprocal(Function):
    """1 / a"""

    grad_fn_name = "ReciprocalBackward0"

    def forward(ctx, a):
        ctx.save_output()
        with np.errstate(divide="ignore"):
            return np.reciprocal(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (-g * r * r,)


class Maximum(Function):
    """elementwise max of two tensors; ties share the gradient equally."""

    grad_fn_name = "MaximumBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        return np.maximum(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        half = g / 2
        ga = ops.where(a > b, g, ops.where(a == b, half, 0.0))
        gb = ops.where(b > a, g, ops.where(a == b, half, 0.0))
        return ga, gb


class Minimum(Function):
    """elementwise min of two tensors; ties share the gradient equally."""

    grad_fn_name = "MinimumBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        return np.minimum(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        half = g / 2
        ga = ops.where(a < b, g, ops.where(a == b, half, 0.0))
        gb = ops.where(b < a, g, ops.where(a == b, half, 0.0))
        return ga, gb


# ************************************************************ unary


class Exp(Function):
    """exp(a)"""

    grad_fn_name = "ExpBackward0"

    def forward(ctx, a):
        ctx.save_output()
        with np.errstate(over="ignore"):
            return np.exp(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g * r,)


class Log(Function):
    """log(a)"""

    grad_fn_name = "LogBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g / a,)


class Log1p(Function):
    """log(1 + a)"""

    grad_fn_name = "Log1PBackward0"

    def forward(ctx, a):
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g / (a + 1),)


class Sqrt(Function):
    """sqrt(a)"""

    grad_fn_name = "SqrtBackward0"

    def forward(ctx, a):
        ctx.save_output()
        with np.errstate(invalid="ignore"):
            return np.sqrt(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g / (r * 2),)


class Abs(Function):
    """|a|; the gradient at 0 is 0 (sign(0))."""

    grad_fn_name = "AbsBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return np.abs(a.data_)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * ops.sign(a),)


class Sin(Function):
    """sin(a)"""

    grad_fn_name = "SinBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return np.sin(ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * ops.cos(a),)


class Cos(Function):
    """cos(a)"""

    grad_fn_name = "CosBackward0"

    def forward(ctx, a):
        ctx.save(a)
        return np.cos(ops.float_data(a))

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * -ops.sin(a),)


class Tan(Function):
    """tan(a)"""

    grad_fn_name = "TanBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return np.tan(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g * (r * r + 1),)


class Tanh(Function):
    """tanh(a)"""

    grad_fn_name = "TanhBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return np.tanh(ops.float_data(a))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g * (1 - r * r),)


class Sigmoid(Function):
    """1 / (1 + exp(-a))"""

    grad_fn_name = "SigmoidBackward0"

    def forward(ctx, a):
        ctx.save_output()
        x = ops.float_data(a)
        with np.errstate(over="ignore"):
            return (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (g * (r * (1 - r)),)


class Relu(Function):
    """max(a, 0); the gradient at 0 is 0."""

    grad_fn_name = "ReluBackward0"

    def forward(ctx, a):
        ctx.save_output()
        return np.maximum(a.data_, np.zeros((), a.data_.dtype))

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return (ops.where(r > 0, g, 0.0),)


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
        return (ops.where(a > 0, g, g * ctx.slope),)


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
        bx = a * ctx.beta
        return (ops.where(bx > ctx.threshold, g, g * ops.sigmoid(bx)),)


class Clamp(Function):
    """min(max(a, lo), hi); the gradient passes at the bounds themselves."""

    grad_fn_name = "ClampBackward1"

    def forward(ctx, a, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        ctx.save(a)
        x = a.data_
        if lo is not None:
            x = np.maximum(x, np.asarray(lo, x.dtype))
        if hi is not None:
            x = np.minimum(x, np.asarray(hi, x.dtype))
        return x

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        keep = None
        if ctx.lo is not None:
            keep = a >= ctx.lo
        if ctx.hi is not None:
            keep = (a <= ctx.hi) if keep is None else keep & (a <= ctx.hi)
        return (g if keep is None else ops.where(keep, g, 0.0),)


class _ZeroGrad(Function):
    """Piecewise-constant ops: a grad_fn exists, the gradient is zero."""

    def backward(ctx, g):
        return (g * 0,)


class Sign(_ZeroGrad):
    """sign(a)"""

    grad_fn_name = "SignBackward0"

    def forward(ctx, a):
        return np.sign(a.data_)


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


class Clone(Function):
    """a copy"""

    grad_fn_name = "CloneBackward0"

    def forward(ctx, a):
        return a.data_.copy()

    def backward(ctx, g):
        return (g,)


class ToCopy(Function):
    """a converted to another dtype"""

    grad_fn_name = "ToCopyBackward0"

    def forward(ctx, a, dtype):
        ctx.in_dtype = a.data_.dtype
        return a.data_.astype(dtype)

    def backward(ctx, g):
        return (ops.to_dtype(g, ctx.in_dtype),)


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
        return np.sum(a.data_, dtype=dtype)

    def backward(ctx, g):
        return (ops.expand(g, ctx.shape),)


class SumDim(Function):
    """sum over `dims`"""

    grad_fn_name = "SumBackward1"

    def forward(ctx, a, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = a.data_.shape, dims, keepdim
        return np.sum(a.data_, axis=dims, keepdims=keepdim, dtype=dtype)

    def backward(ctx, g):
        return (ops.expand(_unreduce(g, ctx.shape, ctx.dims, ctx.keepdim), ctx.shape),)


class Mean(Function):
    """mean of all elements"""

    grad_fn_name = "MeanBackward0"

    def forward(ctx, a):
        ctx.shape = a.data_.shape
        x = a.data_
        return np.mean(x, dtype=x.dtype) if x.size else np.asarray(np.nan, x.dtype)

    def backward(ctx, g):
        n = max(1, int(np.prod(ctx.shape)))
        return (ops.expand(g, ctx.shape) / n,)


class MeanDim(Function):
    """mean over `dims`"""

    grad_fn_name = "MeanBackward1"

    def forward(ctx, a, dims, keepdim):
        x = a.data_
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.mean(x, axis=dims, keepdims=keepdim, dtype=x.dtype)

    def backward(ctx, g):
        n = int(np.prod([ctx.shape[d] for d in ctx.dims]))
        return (ops.expand(_unreduce(g, ctx.shape, ctx.dims, ctx.keepdim), ctx.shape) / n,)


class Prod(Function):
    """product of all elements"""

    grad_fn_name = "ProdBackward0"

    def forward(ctx, a, dtype):
        ctx.save(a)
        ctx.save_result_data = None
        return np.prod(a.data_, dtype=dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (ops.expand(g, a.data_.shape) * ops.prod_others(a, None),)


class ProdDim(Function):
    """product over one dim"""

    grad_fn_name = "ProdBackward1"

    def forward(ctx, a, dim, keepdim, dtype):
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save(a)
        return np.prod(a.data_, axis=dim, keepdims=keepdim, dtype=dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        g = _unreduce(g, a.data_.shape, (ctx.dim,), ctx.keepdim)
        return (ops.expand(g, a.data_.shape) * ops.prod_others(a, ctx.dim),)


class ProdOthers(Function):
    """For each element, the product of the others along `dim` (all when None).
    Exact with zeros, where result / a would divide by zero."""

    grad_fn_name = "ProdBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save(a)
        x = a.data_
        flat = x.reshape(-1) if dim is None else np.moveaxis(x, dim, -1)
        n = flat.shape[-1]
        ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
        left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1) if n else flat
        right = np.cumprod(np.concatenate([ones, flat[..., ::-1][..., :-1]], -1), -1)[..., ::-1]
        out = left * right if n else flat
        return out.reshape(x.shape) if dim is None else np.moveaxis(out, -1, dim)

    def backward(ctx, g):
        # d/da_j prod_{k != i} a_k = prod_{k != i, j} a_k; summed with g_i
        (a,) = ctx.saved_tensors
        x = a.data_
        dim = ctx.dim
        flat = x.reshape(-1) if dim is None else np.moveaxis(x, dim, -1)
        n = flat.shape[-1]
        # second-order term built in NumPy: this row is only reached in double backward
        pairs = np.ones(flat.shape + (n,), x.dtype)
        for i in range(n):
            for j in range(n):
                if i != j:
                    m = np.ones(n, bool)
                    m[[i, j]] = False
                    pairs[..., i, j] = np.prod(flat[..., m], -1)
        gd = g.data_.reshape(-1) if dim is None else np.moveaxis(g.data_, dim, -1)
        res = np.einsum("...i,...ij->...j", gd, pairs)
        res = res.reshape(x.shape) if dim is None else np.moveaxis(res, -1, dim)
        return (Tensor._make(res.astype(x.dtype)),)


class _EvenlyDistributed(Function):
    """Full max/min: the gradient is shared equally among tied extreme elements."""

    def backward(ctx, g):
        a, r = ctx.saved_tensors
        mask = ops.to_dtype(a == r, a.data_.dtype)
        return (mask * (g / ops.sum(mask)),)


class Max(_EvenlyDistributed):
    """max of all elements"""

    grad_fn_name = "MaxBackward1"

    def forward(ctx, a):
        ops.check_nonempty(a, "max")
        out = np.max(a.data_)
        ctx.save(a, Tensor._make(out))
        return out


class Min(_EvenlyDistributed):
    """min of all elements"""

    grad_fn_name = "MinBackward1"

    def forward(ctx, a):
        ops.check_nonempty(a, "min")
        out = np.min(a.data_)
        ctx.save(a, Tensor._make(out))
        return out


class _SelectingReduction(Function):
    """max/min along a dim: the gradient goes to the chosen index only."""

    def backward(ctx, g):
        g = _unreduce(g, ctx.shape, (ctx.dim,), ctx.keepdim)
        return (ops.scatter_into(g, ctx.dim, ctx.indices, ctx.shape),)


class MaxDim(_SelectingReduction):
    """max along `dim` (values; indices kept on the node)"""

    grad_fn_name = "MaxBackward0"

    def forward(ctx, a, dim, keepdim):
        x = a.data_
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        idx = np.expand_dims(np.argmax(x, axis=dim), dim)
        ctx.indices = idx
        vals = np.take_along_axis(x, idx, dim)
        return vals if keepdim else np.squeeze(vals, dim)


class MinDim(_SelectingReduction):
    """min along `dim` (values; indices kept on the node)"""

    grad_fn_name = "MinBackward0"

    def forward(ctx, a, dim, keepdim):
        x = a.data_
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        idx = np.expand_dims(np.argmin(x, axis=dim), dim)
        ctx.indices = idx
        vals = np.take_along_axis(x, idx, dim)
        return vals if keepdim else np.squeeze(vals, dim)


class _AmaxAmin(Function):
    def backward(ctx, g):
        a, r = ctx.saved_tensors
        r = _unreduce(r, ctx.shape, ctx.dims, ctx.keepdim)
        g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        mask = ops.to_dtype(a == r, a.data_.dtype)
        return (mask * g / ops.sum_dims(mask, ctx.dims, True),)


class Amax(_AmaxAmin):
    """max over dims; ties share the gradient"""

    grad_fn_name = "AmaxBackward0"

    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.data_.shape, dims, keepdim
        out = np.max(a.data_, axis=dims, keepdims=keepdim)
        ctx.save(a, Tensor._make(out))
        return out


class Amin(_AmaxAmin):
    """min over dims; ties share the gradient"""

    grad_fn_name = "AminBackward0"

    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.data_.shape, dims, keepdim
        out = np.min(a.data_, axis=dims, keepdims=keepdim)
        ctx.save(a, Tensor._make(out))
        return out


class Norm(Function):
    """vector p-norm over `dims` (all when None)"""

    grad_fn_name = "LinalgVectorNormBackward0"

    def forward(ctx, a, p, dims, keepdim):
        x = ops.float_data(a)
        ctx.p, ctx.dims, ctx.keepdim, ctx.shape = p, dims, keepdim, x.shape
        ctx.save(a)
        ax = np.abs(x)
        if p == float("inf"):
            out = np.max(ax, axis=dims, keepdims=keepdim)
        elif p == 0:
            out = np.sum(ax != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            out = np.sum(ax, axis=dims, keepdims=keepdim)
        elif p == 2:
            out = np.sqrt(np.sum(ax * ax, axis=dims, keepdims=keepdim))
        else:
            out = np.sum(ax**p, axis=dims, keepdims=keepdim) ** (1.0 / p)
        out = np.asarray(out, x.dtype)
        ctx.out = out
        return out

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        dims = ctx.dims if ctx.dims is not None else tuple(range(a.data_.ndim))
        p = ctx.p
        g = _unreduce(g, ctx.shape, dims, ctx.keepdim)
        if p == 0:
            return (a * 0,)
        if p == 1:
            return (ops.sign(a) * g,)
        r = _unreduce(ops.norm(a, p, ctx.dims, ctx.keepdim), ctx.shape, dims, ctx.keepdim)
        if p == 2:
            # 0 where the norm is 0 (PyTorch's subgradient)
            return (ops.where(r == 0, 0.0, a * (g / r)),)
        if p == float("inf"):
            mask = ops.to_dtype(ops.abs(a) == r, a.data_.dtype)
            return (ops.sign(a) * mask * g / ops.sum_dims(mask, dims, True),)
        scale = ops.abs(a) ** (p - 2) * a / r ** (p - 1)
        return (ops.where(r == 0, 0.0, scale * g),)


class Logsumexp(Function):
    """log(sum(exp(a))) over dims, computed stably"""

    grad_fn_name = "LogsumexpBackward0"

    def forward(ctx, a, dims, keepdim):
        x = ops.float_data(a)
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape
        ctx.save(a)
        m = np.max(x, axis=dims, keepdims=True) if x.size else np.zeros((), x.dtype)
        m = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
        if not keepdim:
            out = np.squeeze(out, axis=dims)
        return out.astype(x.dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        r = _unreduce(ops.logsumexp(a, ctx.dims, ctx.keepdim), ctx.shape, ctx.dims, ctx.keepdim)
        g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        return (g * ops.exp(a - r),)


class Var(Function):
    """variance over dims with Bessel's correction"""

    grad_fn_name = "VarBackward0"

    def forward(ctx, a, dims, correction, keepdim):
        x = ops.float_data(a)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.shape = dims, correction, keepdim, x.shape
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.var(x, axis=dims, ddof=correction, keepdims=keepdim), x.dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = int(np.prod([ctx.shape[d] for d in ctx.dims]))
        g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        centred = a - ops.mean_dims(a, ctx.dims, True)
        return (g * centred * (2.0 / (n - ctx.correction)),)


class Std(Function):
    """standard deviation over dims with Bessel's correction"""

    grad_fn_name = "StdBackward0"

    def forward(ctx, a, dims, correction, keepdim):
        x = ops.float_data(a)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.shape = dims, correction, keepdim, x.shape
        ctx.save(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.std(x, axis=dims, ddof=correction, keepdims=keepdim), x.dtype)

    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = int(np.prod([ctx.shape[d] for d in ctx.dims]))
        r = _unreduce(ops.std(a, ctx.dims, ctx.correction, ctx.keepdim), ctx.shape, ctx.dims,
                      ctx.keepdim)
        g = _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)
        centred = a - ops.mean_dims(a, ctx.dims, True)
        return (g * centred / (r * (n - ctx.correction)),)


class Cumsum(Function):
    """running sum along dim"""

    grad_fn_name = "CumsumBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        return np.cumsum(a.data_, axis=dim)

    def backward(ctx, g):
        return (ops.flip(ops.cumsum(ops.flip(g, (ctx.dim,)), ctx.dim), (ctx.dim,)),)


# ************************************************************ linear algebra


class Mm(Function):
    """matrix @ matrix"""

    grad_fn_name = "MmBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return _d(a, dtype) @ _d(b, dtype)

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        ga = ops.mm(g, ops.t(b)) if b is not None else None
        gb = ops.mm(ops.t(a), g) if a is not None else None
        return ga, gb


class Mv(Function):
    """matrix @ vector"""

    grad_fn_name = "MvBackward0"

    def forward(ctx, m, v, dtype):
        ctx.save(v if ctx.needs_input_grad[0] else None, m if ctx.needs_input_grad[1] else None)
        return _d(m, dtype) @ _d(v, dtype)

    def backward(ctx, g):
        v, m = ctx.saved_tensors
        gm = ops.outer(g, v) if v is not None else None
        gv = ops.mv(ops.t(m), g) if m is not None else None
        return gm, gv


class Dot(Function):
    """vector . vector"""

    grad_fn_name = "DotBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return np.dot(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class Bmm(Function):
    """batched matrix product with broadcasting of batch dims (matmul of >2-d)"""

    grad_fn_name = "BmmBackward0"

    def forward(ctx, a, b, dtype):
        ctx.save(a, b)
        return np.matmul(_d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = ops.matmul(g, ops.transpose(b, -1, -2)) if ctx.needs_input_grad[0] else None
        gb = ops.matmul(ops.transpose(a, -1, -2), g) if ctx.needs_input_grad[1] else None
        return ga, gb


class Addmm(Function):
    """bias + x @ w (F.linear with a bias)"""

    grad_fn_name = "AddmmBackward0"

    def forward(ctx, bias, x, w, dtype):
        n = ctx.needs_input_grad
        ctx.save(w if n[1] else None, x if n[2] else None)
        return _d(bias, dtype) + _d(x, dtype) @ _d(w, dtype)

    def backward(ctx, g):
        w, x = ctx.saved_tensors
        gx = ops.mm(g, ops.t(w)) if w is not None else None
        gw = ops.mm(ops.t(x), g) if x is not None else None
        return g, gx, gw


# ************************************************************ shapes and views


class View(Function):
    """a viewed with another shape"""

    grad_fn_name = "ViewBackward0"

    def forward(ctx, a, shape):
        ctx.shape = a.data_.shape
        return a.data_.reshape(shape)

    def backward(ctx, g):
        return (ops.reshape(g, ctx.shape),)


class UnsafeView(View):
    """reshape of a non-contiguous tensor (a copy)"""

    grad_fn_name = "UnsafeViewBackward0"


class Transpose(Function):
    """two dims swapped"""

    grad_fn_name = "TransposeBackward0"

    def forward(ctx, a, d0, d1):
        ctx.d0, ctx.d1 = d0, d1
        return np.swapaxes(a.data_, d0, d1)

    def backward(ctx, g):
        return (ops.transpose(g, ctx.d0, ctx.d1),)


class T(Function):
    """2-d transpose (`t()`)"""

    grad_fn_name = "TBackward0"

    def forward(ctx, a):
        return a.data_.T

    def backward(ctx, g):
        return (ops.t(g),)


class Permute(Function):
    """dims reordered"""

    grad_fn_name = "PermuteBackward0"

    def forward(ctx, a, dims):
        ctx.dims = dims
        return np.transpose(a.data_, dims)

    def backward(ctx, g):
        inverse = tuple(int(i) for i in np.argsort(ctx.dims))
        return (ops.permute(g, inverse),)


class Squeeze(Function):
    """all size-1 dims removed"""

    grad_fn_name = "SqueezeBackward0"

    def forward(ctx, a):
        ctx.shape = a.data_.shape
        return np.squeeze(a.data_)

    def backward(ctx, g):
        return (ops.reshape(g, ctx.shape),)


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


class Unsqueeze(Function):
    """a size-1 dim inserted"""

    grad_fn_name = "UnsqueezeBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        return np.expand_dims(a.data_, dim)

    def backward(ctx, g):
        return (ops.squeeze(g, ctx.dim),)


class Expand(Function):
    """a broadcast to a larger shape (a view)"""

    grad_fn_name = "ExpandBackward0"

    def forward(ctx, a, shape):
        ctx.shape = a.data_.shape
        return np.broadcast_to(a.data_, shape)

    def backward(ctx, g):
        return (ops.sum_to(g, ctx.shape),)


class Repeat(Function):
    """a tiled"""

    grad_fn_name = "RepeatBackward0"

    def forward(ctx, a, reps):
        x = a.data_
        ctx.shape = x.shape
        ctx.reps = reps
        x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
        return np.tile(x, reps)

    def backward(ctx, g):
        # split every repeated dim into (repeat, size) and sum the repeats away
        shape = (1,) * (len(ctx.reps) - len(ctx.shape)) + ctx.shape
        split: list[int] = []
        for r, s in zip(ctx.reps, shape):
            split += [r, s]
        g = ops.reshape(g, tuple(split))
        g = ops.sum_dims(g, tuple(range(0, len(split), 2)), False)
        return (ops.reshape(g, ctx.shape),)


class Flip(Function):
    """a reversed along dims"""

    grad_fn_name = "FlipBackward0"

    def forward(ctx, a, dims):
        ctx.dims = dims
        return np.flip(a.data_, dims).copy()

    def backward(ctx, g):
        return (ops.flip(g, ctx.dims),)


class SumTo(Function):
    """gradient reduced over broadcast dims back to an input's shape"""

    grad_fn_name = "SumBackward1"

    def forward(ctx, g, shape):
        ctx.shape = g.data_.shape
        x = g.data_
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1
        )
        out = np.sum(x, axis=axes, keepdims=True) if axes else x
        return out.reshape(shape)

    def backward(ctx, g):
        return (ops.expand(g, ctx.shape),)


class Cat(Function):
    """tensors joined along dim"""

    grad_fn_name = "CatBackward0"

    def forward(ctx, *tensors, dim, dtype):
        ctx.dim = dim
        ctx.sizes = [t.data_.shape[dim] for t in tensors]
        return np.concatenate([_d(t, dtype) for t in tensors], axis=dim)

    def backward(ctx, g):
        out, start = [], 0
        for n in ctx.sizes:
            out.append(ops.narrow(g, ctx.dim, start, n))
            start += n
        return tuple(out)


class Stack(Function):
    """tensors stacked along a new dim"""

    grad_fn_name = "StackBackward0"

    def forward(ctx, *tensors, dim, dtype):
        ctx.dim = dim
        return np.stack([_d(t, dtype) for t in tensors], axis=dim)

    def backward(ctx, g):
        return tuple(ops.select(g, ctx.dim, i) for i in range(g.data_.shape[ctx.dim]))


class Split(Function):
    """a cut into pieces along dim (several outputs)"""

    grad_fn_name = "SplitBackward0"
    multi_output = True

    def forward(ctx, a, sizes, dim):
        ctx.dim, ctx.shape = dim, a.data_.shape
        bounds = np.cumsum(sizes)[:-1]
        return tuple(np.split(a.data_, bounds, axis=dim))

    def backward(ctx, *grads):
        parts = []
        for g, ref in zip(grads, ctx.outputs):
            if g is None:
                out = ref()
                shape = list(ctx.shape)
                shape[ctx.dim] = out.data_.shape[ctx.dim] if out is not None else 0
                g = Tensor._make(np.zeros(shape, ctx.in_meta[0][1]))
            parts.append(g)
        return (ops.cat(parts, ctx.dim),)


class Unbind(Function):
    """a cut into slices along dim (several outputs)"""

    grad_fn_name = "UnbindBackward0"
    multi_output = True

    def forward(ctx, a, dim):
        ctx.dim, ctx.shape = dim, a.data_.shape
        return tuple(np.take(a.data_, i, axis=dim) for i in range(a.data_.shape[dim]))

    def backward(ctx, *grads):
        shape = list(ctx.shape)
        del shape[ctx.dim]
        zeros = np.zeros(shape, ctx.in_meta[0][1])
        parts = [g if g is not None else Tensor._make(zeros) for g in grads]
        return (ops.stack(parts, ctx.dim),)


# ************************************************************ indexing


class _Getitem(Function):
    """Basic and advanced indexing; the gradient is embedded back in zeros."""

    def forward(ctx, a, index):
        ctx.index, ctx.shape = index, a.data_.shape
        return a.data_[index]

    def backward(ctx, g):
        return (ops.embed(g, ctx.index, ctx.shape),)


class Select(_Getitem):
    """one index along a dim"""

    grad_fn_name = "SelectBackward0"


class Slice(_Getitem):
    """a slice along a dim"""

    grad_fn_name = "SliceBackward0"


class Index(_Getitem):
    """integer-array or boolean-mask indexing (a copy)"""

    grad_fn_name = "IndexBackward0"


class AsStrided(_Getitem):
    """a view re-derived from its base after an in-place op on the view"""

    grad_fn_name = "AsStridedBackward0"


class Embed(Function):
    """g placed at `index` of a zero tensor of `shape` (indexing's backward)."""

    grad_fn_name = "IndexPutBackward0"

    def forward(ctx, g, index, shape):
        ctx.index = index
        out = np.zeros(shape, g.data_.dtype)
        np.add.at(out, index, g.data_)
        return out

    def backward(ctx, gg):
        return (ops.getitem(gg, ctx.index),)


class CopySlices(Function):
    """base with `index` overwritten by value (`x[i] = v` on a recorded tensor)."""

    grad_fn_name = "CopySlices"

    def forward(ctx, base, value, index, dtype):
        ctx.index = index
        out = base.data_.copy()
        out[index] = _d(value, dtype)
        ctx.value_shape = value.data_.shape
        ctx.mask = np.ones(base.data_.shape, bool)
        ctx.mask[index] = False
        return out

    def backward(ctx, g):
        gb = ops.where(Tensor._make(ctx.mask), g, 0.0) if ctx.needs_input_grad[0] else None
        gv = None
        if ctx.needs_input_grad[1]:
            gv = ops.sum_to(ops.getitem(g, ctx.index), ctx.value_shape)
        return gb, gv


class Gather(Function):
    """values picked along dim by an index tensor"""

    grad_fn_name = "GatherBackward0"

    def forward(ctx, a, dim, index):
        ctx.dim, ctx.index, ctx.shape = dim, index, a.data_.shape
        return np.take_along_axis(a.data_, index, dim)

    def backward(ctx, g):
        return (ops.scatter_into(g, ctx.dim, ctx.index, ctx.shape),)


class ScatterAdd(Function):
    """g added into zeros of `shape` at an index tensor along dim (gather's backward)."""

    grad_fn_name = "ScatterAddBackward0"

    def forward(ctx, g, dim, index, shape):
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, g.data_.dtype)
        idx = list(np.indices(index.shape, sparse=True))
        idx[dim] = index
        np.add.at(out, tuple(idx), g.data_)
        return out

    def backward(ctx, gg):
        return (ops.gather(gg, ctx.dim, Tensor._make(ctx.index)),)


class MaskedFill(Function):
    """a with `value` where mask is True"""

    grad_fn_name = "MaskedFillBackward0"

    def forward(ctx, a, value, mask):
        ctx.mask = mask
        x = a.data_
        v = value.data_.astype(x.dtype)
        return np.where(np.broadcast_to(mask, np.broadcast_shapes(x.shape, mask.shape)), v, x)

    def backward(ctx, g):
        m = Tensor._make(ctx.mask)
        ga = ops.where(m, 0.0, g) if ctx.needs_input_grad[0] else None
        gv = ops.sum(ops.where(m, g, 0.0)) if ctx.needs_input_grad[1] else None
        return ga, gv


class Where(Function):
    """a where cond else b"""

    grad_fn_name = "WhereBackward0"

    def forward(ctx, a, b, cond, dtype):
        ctx.cond = cond
        return np.where(cond, _d(a, dtype), _d(b, dtype))

    def backward(ctx, g):
        c = Tensor._make(ctx.cond)
        ga = ops.where(c, g, 0.0) if ctx.needs_input_grad[0] else None
        gb = ops.where(c, 0.0, g) if ctx.needs_input_grad[1] else None
        return ga, gb


# ************************************************************ neural-network functions


class Softmax(Function):
    """exp(a) / sum(exp(a)) along dim"""

    grad_fn_name = "SoftmaxBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output()
        x = ops.float_data(a)
        e = np.exp(x - np.max(x, axis=dim, keepdims=True))
        return (e / np.sum(e, axis=dim, keepdims=True)).astype(x.dtype)

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return (y * (g - ops.sum_dims(g * y, (ctx.dim,), True)),)


class LogSoftmax(Function):
    """a - logsumexp(a) along dim"""

    grad_fn_name = "LogSoftmaxBackward0"

    def forward(ctx, a, dim):
        ctx.dim = dim
        ctx.save_output()
        x = ops.float_data(a)
        m = np.max(x, axis=dim, keepdims=True)
        return (x - m - np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))).astype(x.dtype)

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return (g - ops.exp(y) * ops.sum_dims(g, (ctx.dim,), True),)


def _reduce_loss(x: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "mean":
        return np.mean(x, dtype=x.dtype) if x.size else np.asarray(np.nan, x.dtype)
    if reduction == "sum":
        return np.sum(x, dtype=x.dtype)
    return x


def _loss_grad_scale(g: Tensor, shape: tuple[int, ...], reduction: str) -> Tensor:
    if reduction == "none":
        return g
    if reduction == "mean":
        return ops.expand(g, shape) / max(1, int(np.prod(shape)))
    return ops.expand(g, shape)


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
        gd = _loss_grad_scale(g, ctx.shape, ctx.reduction) * (a - t) * 2
        return (gd if ctx.needs_input_grad[0] else None), (
            -gd if ctx.needs_input_grad[1] else None
        )


class BinaryCrossEntropy(Function):
    """-(t log p + (1 - t) log(1 - p)), logs clamped at -100 as PyTorch does"""

    grad_fn_name = "BinaryCrossEntropyBackward0"

    def forward(ctx, p, t, weight, reduction, dtype):
        ctx.reduction = reduction
        ctx.save(p, t, weight)
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
        p, t, w = ctx.saved_tensors
        eps = 1e-12
        gs = _loss_grad_scale(g, ctx.shape, ctx.reduction)
        gp = gs * (p - t) / ops.clamp(p * (1 - p), eps, None)
        if w is not None:
            gp = gp * w
        gt = None
        if ctx.needs_input_grad[1]:
            gt = gs * (ops.log(1 - p) - ops.log(p))
            if w is not None:
                gt = gt * w
        return gp, gt, None


class NllLoss(Function):
    """-logp[target] averaged (weighted) over the batch"""

    grad_fn_name = "NllLossBackward0"

    def forward(ctx, logp, weight, target, reduction, ignore_index):
        x = logp.data_
        tgt = target.astype(np.int64)
        batched = x.ndim >= 2
        xx = x if batched else x[None]
        tt = tgt if batched else tgt[None]
        n_cls = xx.shape[1]
        valid = tt != ignore_index
        safe = np.where(valid, tt, 0)
        if np.any((safe < 0) | (safe >= n_cls)):
            bad = int(safe[(safe < 0) | (safe >= n_cls)].flat[0])
            raise IndexError(f"Target {bad} is out of bounds.")
        w = weight.data_ if weight is not None else np.ones(n_cls, x.dtype)
        wt = np.where(valid, w[safe], 0).astype(x.dtype)
        picked = np.take_along_axis(xx, np.expand_dims(safe, 1), 1).squeeze(1)
        losses = -picked * wt
        ctx.reduction, ctx.safe, ctx.wt, ctx.batched = reduction, safe, wt, batched
        ctx.shape = x.shape
        ctx.total = wt.sum(dtype=x.dtype)
        if reduction == "none":
            return losses if batched else losses[0]
        if reduction == "sum":
            return losses.sum(dtype=x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (losses.sum(dtype=x.dtype) / ctx.total).astype(x.dtype)

    def backward(ctx, g):
        shape = ctx.shape if ctx.batched else (1,) + ctx.shape
        coeff = -ctx.wt
        if ctx.reduction == "mean":
            coeff = coeff / ctx.total
        if ctx.reduction == "none":
            gl = ops.reshape(g, (shape[0],)) * Tensor._make(coeff.astype(ctx.wt.dtype))
        else:
            gl = ops.expand(ops.reshape(g, (1,)), (shape[0],)) * Tensor._make(
                np.asarray(coeff, ctx.wt.dtype)
            )
        idx = np.expand_dims(ctx.safe, 1)
        gx = ops.scatter_into(ops.unsqueeze(gl, 1), 1, idx, shape)
        if not ctx.batched:
            gx = ops.reshape(gx, ctx.shape)
        return gx, None


class ZeroFill(Function):
    """the value of `t.zero_()`"""

    grad_fn_name = "ZeroBackward0"

    def forward(ctx, t):
        return np.zeros_like(t.data_)

    def backward(ctx, g):
        return (g * 0,)


class FillScalar(Function):
    """the value of `t.fill_(number)`"""

    grad_fn_name = "FillBackward2"

    def forward(ctx, t, value):
        return np.full_like(t.data_, value)

    def backward(ctx, g):
        return (g * 0,)


class FillTensor(Function):
    """the value of `t.fill_(0-d tensor)`"""

    grad_fn_name = "FillBackward3"

    def forward(ctx, t, v):
        return np.full_like(t.data_, v.data_)

    def backward(ctx, g):
        return g * 0, ops.sum(g)


class CopyFrom(Function):
    """the value of `t.copy_(src)`"""

    grad_fn_name = "CopyBackwards"

    def forward(ctx, t, src):
        return np.broadcast_to(src.data_, t.data_.shape).astype(t.data_.dtype)

    def backward(ctx, g):
        return g * 0, g


def _all_functions() -> dict[str, type[Function]]:
    """Every registered operation row, by class name (for tests and docs)."""
    return dict(Function.registry)


__all__ = [name for name, v in globals().items() if isinstance(v, type) and issubclass(v, Function)]
_unused: Any = None
