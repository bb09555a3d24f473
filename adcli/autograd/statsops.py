"""`trace`, `std_mean`, `var_mean` and `cdist`, as PyTorch 2.13 has them: their rows
(TraceBackward0; StdMeanBackward0 and VarMeanBackward0, one node behind both results;
CdistBackward0 with its once-only CdistBackwardBackward0, and EuclideanDistBackward0 for
cdist's matrix-product path) and the public functions with PyTorch's checks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import functions, grad_mode, moments, ops, saved_attrs
from .node import Function
from .tensor import Tensor

# ************************************************************ trace


class Trace(Function):
    """the sum of a matrix's main diagonal"""

    grad_fn_name = "TraceBackward0"
    any_dtype = True  # an integer trace is int64, not differentiable (no node is kept)

    def forward(ctx, a):
        x = a.data_
        ctx.shape = x.shape
        diag = np.diagonal(x).copy()
        if x.dtype.kind in "biu":
            return np.asarray(diag.astype(np.int64).sum(), np.int64)
        # PyTorch's loop: from +0., one element at a time, in double (its CPU
        # accumulate type for float32 as well)
        acc = np.cumsum(np.concatenate([np.zeros(1), diag.astype(np.float64)]))[-1]
        return np.asarray(acc, x.dtype)

    def backward(ctx, g):
        # PyTorch's trace_backward: g written on the diagonal of flat zeros, viewed back
        # (an index_fill, not a product with an identity: the off-diagonal stays +0 for
        # a negative, infinite or nan g)
        n, m = ctx.shape
        flat = Tensor._make(np.zeros(n * m, g.data_.dtype))
        # min(n, m) places: for a tall matrix arange(0, n*m, m+1) would run past the diagonal
        idx = Tensor._make(np.arange(min(n, m), dtype=np.int64) * (m + 1))
        return (ops.view(ops.index_fill(flat, 0, idx, g), (n, m)),)

    def jvp(ctx, ts, xs, r):
        return trace(ts[0])


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-d tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"trace(): argument 'input' (position 1) must be Tensor, not {ops._type_name(input)}"
        )
    nd = input.data_.ndim
    if nd != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {nd}")
    if input.data_.dtype == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return Trace.apply(input)


# ************************************************************ std_mean, var_mean


def _welford_mean(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """The mean var_mean returns: its Welford update's running mean, in double."""
    kept = [d for d in range(x.ndim) if d not in dims]
    k = math.prod(x.shape[d] for d in dims)
    order = kept + sorted(dims, key=lambda d: -abs(x.strides[d]))
    if k == 0:  # nothing to average: NaN (no Welford step ran)
        mean = np.full(math.prod(x.shape[d] for d in kept), np.nan)
    elif k <= 1 << 14:
        data = np.transpose(x, order).reshape(-1, k).astype(np.float64)
        mean = np.zeros(data.shape[0])
        with np.errstate(invalid="ignore", over="ignore"):
            for i in range(k):
                mean = mean + (data[:, i] - mean) / float(i + 1)
    else:
        mean = np.transpose(x, order).reshape(-1, k).astype(np.float64).mean(axis=1)
    out = mean.astype(x.dtype)
    shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    out = out.reshape(shape)
    return out if keepdim else out.reshape(tuple(x.shape[d] for d in kept))


class _Moments(Function):
    """the variance (or standard deviation) and the mean, from one node"""

    multi_output = True
    contiguous_result = True
    take_sqrt = False

    def forward(ctx, a, dims, correction, keepdim, whole=False):
        x = ops.float_data(a)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.shape = dims, correction, keepdim, x.shape
        ctx.whole = whole
        if ctx.take_sqrt:
            ctx.save_output(a)  # std_mean_backward reads self and result0 (the std)
        else:
            ctx.save(a)  # var_mean_backward reads self only
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = moments.torch_var(x, dims, correction, keepdim, take_sqrt=ctx.take_sqrt)
            mean = _welford_mean(x, dims, keepdim)
        return spread, mean

    def backward(ctx, g_spread, g_mean):
        a, *rest = ctx.saved_tensors
        grad = None
        if g_spread is not None:
            if ctx.take_sqrt:  # std_backward: grad / (2 std), 0 where std is 0
                r = rest[0]  # the saved std: a double backward goes through this node
                g_spread = ops.masked_fill(g_spread / (r * 2), r == 0, 0.0)
            grad = functions._var_backward(ctx, g_spread, a)
        if g_mean is not None:
            n = math.prod(ctx.shape[d] for d in ctx.dims) if ctx.dims else 1
            if not ctx.keepdim:
                for d in sorted(ctx.dims):
                    g_mean = ops.unsqueeze(g_mean, d)
            # PyTorch's mean_backward divides by the count as a C++ number: DivBackward1
            part = functions.DivScalar.apply(ops.expand(g_mean, ctx.shape), other=n)
            grad = part if grad is None else ops.add(grad, part)
        return (grad,)

    def jvp(ctx, ts, xs, r):
        (t,), (a,) = ts, xs
        spread = r[0]
        if ctx.take_sqrt:
            g = ops.where(spread == 0, 0.0, functions._ones_like(spread) / (spread * 2))
        else:
            g = functions._ones_like(spread)
        spread_t = ops.sum_dims(t * functions._var_backward(ctx, g, a), ctx.dims, ctx.keepdim)
        n = math.prod(ctx.shape[d] for d in ctx.dims) if ctx.dims else 1
        return spread_t, ops.div(ops.sum_dims(t, ctx.dims, ctx.keepdim), n)


class StdMean(_Moments):
    """std_mean: the standard deviation and the mean"""

    grad_fn_name = "StdMeanBackward0"
    take_sqrt = True


class VarMean(_Moments):
    """var_mean: the variance and the mean"""

    grad_fn_name = "VarMeanBackward0"


def _moments(
    row: type[_Moments],
    name: str,
    input: Tensor,
    dim: Any,
    unbiased: Any,
    keepdim: Any,
    correction: Any,
) -> tuple[Tensor, Tensor]:
    if isinstance(dim, bool) and unbiased is None:  # std_mean(x, False): the unbiased flag
        dim, unbiased = None, dim
    corr = (0 if unbiased is False else 1) if correction is None else correction
    dims = ops._dims(dim, input.data_.ndim)
    ops._check_dof(name, input, dims, corr)
    outs = row.apply(input, dims=dims, correction=corr, keepdim=bool(keepdim), whole=dim is None)
    return (outs[0], outs[1])


def std_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """(std, mean) over dim, from one StdMeanBackward0 node."""
    return _moments(StdMean, "std_mean", input, dim, unbiased, keepdim, correction)


def var_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """(var, mean) over dim, from one VarMeanBackward0 node."""
    return _moments(VarMean, "var_mean", input, dim, unbiased, keepdim, correction)


# ************************************************************ cdist

_MODES = {
    None: 0,
    "use_mm_for_euclid_dist_if_necessary": 0,
    "use_mm_for_euclid_dist": 1,
    "donot_use_mm_for_euclid_dist": 2,
}


def _pnorm(diff: np.ndarray, p: float) -> np.ndarray:
    """The p-norm over the last dim (p = 0 counts the non-zero differences)."""
    a = np.abs(diff)
    if p == 0:
        return np.sum(a != 0, axis=-1).astype(diff.dtype)
    if p == 1:
        return np.add.reduce(a, axis=-1)
    if p == 2:
        return np.sqrt(np.add.reduce(a * a, axis=-1))
    if math.isinf(p):
        return np.max(a, axis=-1, initial=0).astype(diff.dtype)
    with np.errstate(over="ignore"):
        # PyTorch's kernel takes the root in double (std::pow(agg, 1.0 / p))
        agg = np.add.reduce(np.power(a, p), axis=-1)
        return np.power(agg.astype(np.float64), 1.0 / p).astype(diff.dtype)


def _cdist_grad(g: np.ndarray, x1: np.ndarray, x2: np.ndarray, r: np.ndarray, p: float):
    """PyTorch's _cdist_backward: the gradient to x1 of sum(g * cdist(x1, x2))."""
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    gg, rr = g[..., None], r[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            part = np.zeros_like(diff)
        elif p == 1:
            part = gg * np.sign(diff)
        elif p == 2:
            part = np.where(rr == 0, 0, gg * diff / rr)
        elif math.isinf(p):
            part = gg * np.sign(diff) * (np.abs(diff) == rr)
        elif p < 2:
            part = np.where(
                rr == 0, 0, gg * np.sign(diff) * np.abs(diff) ** (p - 1) / rr ** (p - 1)
            )
        else:
            part = np.where(rr == 0, 0, gg * diff * np.abs(diff) ** (p - 2) / rr ** (p - 1))
    return np.add.reduce(part, axis=-2).astype(x1.dtype)


class CdistBackward(Function):
    """cdist's gradient to one operand (PyTorch gives it no derivative of its own)"""

    grad_fn_name = "CdistBackwardBackward0"

    def forward(ctx, g, x1, x2, r, p):
        return _cdist_grad(g.data_, x1.data_, x2.data_, r.data_, p)

    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for '_cdist_backward' is not implemented.")


class Cdist(Function):
    """the p-norm distance between each row of x1 and each row of x2"""

    grad_fn_name = "CdistBackward0"
    jvp_name, jvp_not_yet = "_cdist_forward", True

    def forward(ctx, x1, x2, p):
        ctx.p = p
        ctx.save_output(x1, x2)
        return _pnorm(x1.data_[..., :, None, :] - x2.data_[..., None, :, :], p)

    def backward(ctx, g):
        x1, x2, r = ctx.saved_tensors
        g1 = CdistBackward.apply(g, x1, x2, r, p=ctx.p)
        gt, rt = ops.transpose(g, -1, -2), ops.transpose(r, -1, -2)
        g2 = CdistBackward.apply(gt, x2, x1, rt, p=ctx.p)
        return (g1, g2)


class EuclideanDist(Function):
    """cdist's matrix-product path for p = 2: sqrt(|x1|² - 2 x1·x2 + |x2|²)"""

    grad_fn_name = "EuclideanDistBackward0"
    jvp_name, jvp_not_yet = "_euclidean_dist", True

    def forward(ctx, x1, x2):
        # PyTorch's _euclidean_dist: [-2 x1, |x1|², 1] @ [x2, 1, |x2|²]ᵀ, clamped at 0, then
        # sqrt; the norms and the product through adcli's own sum and matmul kernels,
        # which round as PyTorch's do
        a, b = x1.data_, x2.data_
        with grad_mode.no_grad():
            n1 = ops.sum(ops.pow(Tensor._make(a), 2), -1, True).data_
            n2 = ops.sum(ops.pow(Tensor._make(b), 2), -1, True).data_
            left = np.concatenate([a * -2, n1, np.ones_like(n1)], axis=-1)
            right = np.concatenate([b, np.ones_like(n2), n2], axis=-1)
            # x2_.mT(): a transposed view, which the product kernel rounds differently
            # from a contiguous copy
            rt = ops.transpose(Tensor._make(right), -1, -2)
            sq = ops.matmul(Tensor._make(left), rt).data_
        ctx.save_output(x1, x2)
        # clamp_min_(0).sqrt_(): PyTorch's vectorized sqrt, which vml.h sends to MKL
        # (not correctly rounded on every CPU: MKL picks its code path by CPU)
        return functions._sqrt(np.maximum(sq, np.asarray(0, a.dtype)).astype(a.dtype))

    def backward(ctx, g):
        x1, x2, r = ctx.saved_tensors
        ratio = ops.masked_fill(g / r, r == 0, 0.0)
        # PyTorch's formula is `x1 * ratio.sum(-1, true) - ratio.matmul(x2)`, and GCC
        # builds the right operand first: each product's node before the sum's, which
        # decides the order a create_graph backward meets them (s26a:42041)
        m1 = ops.matmul(ratio, x2)
        g1 = x1 * ops.sum(ratio, -1, True) - m1
        m2 = ops.matmul(ops.transpose(ratio, -1, -2), x1)
        g2 = x2 * ops.unsqueeze(ops.sum(ratio, -2), -1) - m2
        return (ops.sum_to(g1, x1.shape), ops.sum_to(g2, x2.shape))


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """The p-norm distance between each pair of rows of x1 and x2 (batched over the
    leading dims, which broadcast)."""
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    a, b = x1.data_, x2.data_
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}"
        )
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(
            f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}"
            if a.dtype.kind != "f"
            else f"cdist only supports floating-point dtypes, X2 got: {x2.dtype}"
        )
    if a.dtype != b.dtype:
        n1 = x1.dtype.legacy.replace("Tensor", "")
        n2 = x2.dtype.legacy.replace("Tensor", "")
        raise RuntimeError(f"expected scalar type {n1} but found {n2}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    r1, r2 = a.shape[-2], b.shape[-2]
    mode = _MODES[compute_mode]
    # an empty operand always takes the _cdist_forward row (PyTorch's special case)
    if p == 2 and a.size and b.size and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        e1, e2 = x1, x2
        # a batch of one keeps the operands as given (PyTorch's expand_batch_product
        # == 1 case), so a 2-d operand's product stays a plain matrix product
        if math.prod(batch) != 1:
            m = a.shape[-1]
            e1 = ops.reshape(ops.expand(x1, batch + (r1, m)), (-1, r1, m))
            e2 = ops.reshape(ops.expand(x2, batch + (r2, m)), (-1, r2, m))
        return ops.view(EuclideanDist.apply(e1, e2), batch + (r1, r2))
    if a.shape[:-2] != batch:
        x1 = ops.expand(x1, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        x2 = ops.expand(x2, batch + b.shape[-2:])
    return Cdist.apply(x1, x2, p=float(p))


saved_attrs.TABLE.update(
    {
        "TraceBackward0": {"_saved_self_sym_sizes": lambda n: tuple(n.shape)},
        "StdMeanBackward0": {
            "_saved_correction": "correction",
            "_saved_dim": lambda n: None if n.whole else tuple(n.dims),
            "_saved_keepdim": "keepdim",
            "_saved_self": 0,
            "_saved_result0": 1,
        },
        "VarMeanBackward0": {
            "_saved_correction": "correction",
            "_saved_dim": lambda n: None if n.whole else tuple(n.dims),
            "_saved_keepdim": "keepdim",
            "_saved_self": 0,
        },
        "CdistBackward0": {"_saved_p": "p", "_saved_x1": 0, "_saved_x2": 1, "_saved_result": 2},
    }
)
saved_attrs.install()

Tensor.trace = trace  # type: ignore[attr-defined]
Tensor.__ad_attrs__ = frozenset(Tensor.__ad_attrs__ | {"trace"})
