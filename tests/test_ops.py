"""The operation table, checked without PyTorch: finite differences and long chains.

`CASES` is THE table of operation cases, keyed by the registry of Function
classes (`adcli.autograd.node.Function.registry`): every registered class is
named by at least one case.  This file checks each case against central finite
differences in float64 (first derivatives, and second derivatives as the
finite difference of the first), at a few random points; the conformance test
(tests/conformance/test_ops_vs_torch.py) runs the same table against PyTorch.

A case is `fn(m, *inputs)`, usable with either library: `m` is adcli's ops
module here (`m.F` for torch.nn.functional names) and torch there.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from adcli.autograd import engine, grad_mode
from adcli.autograd import ops as T
from adcli.autograd.node import Function
from adcli.autograd.tensor import Tensor

DTYPES = ("float32", "float64")


class _Functional:
    """`m.F` for adcli: the ops module, then the script library's torch.nn.functional
    (conv and pooling live in their own modules)."""

    def __getattr__(self, item: str) -> Any:
        if hasattr(T, item):
            return getattr(T, item)
        from adcli.scriptlib.torchapi import module_table

        return module_table()["torch.nn.functional"][item]


class AdcliNamespace:
    """`m` for adcli: the ops module, `m.F` = the ops module too."""

    F = _Functional()
    name = "adcli"
    float32 = T.dtypes.float32
    float64 = T.dtypes.float64
    int64 = T.dtypes.int64
    int32 = T.dtypes.int32
    bool = T.dtypes.bool_

    def __getattr__(self, item: str) -> Any:
        if item in ("trace", "std_mean", "var_mean", "cdist", "einsum"):
            from adcli.autograd import einsum, statsops  # ops of their own modules

            return getattr(statsops, item, None) or einsum.einsum
        if item in ("normal", "Generator"):  # the script library's (adcli/scriptlib)
            from adcli.scriptlib.torchapi import module_table

            return module_table()["torch"][item]
        return getattr(T, item)


AM = AdcliNamespace()


# ************************************************************ inputs


@dataclass(frozen=True)
class In:
    """One input: a shape and a value domain, or fixed values."""

    shape: tuple[int, ...] = ()
    domain: str = "any"  # any | pos | unit | nonzero | int
    rg: bool = True  # requires_grad
    values: Any = None  # fixed values instead of random ones
    dtype: str | None = None  # fixed dtype instead of the case's dtype


def draw_input(spec: In, rng: np.random.Generator) -> np.ndarray:
    if spec.values is not None:
        return np.asarray(spec.values, dtype=np.float64)
    n = spec.shape
    if spec.domain == "any":
        return rng.standard_normal(n)
    if spec.domain == "pos":
        return rng.uniform(0.5, 2.0, n)
    if spec.domain == "unit":
        return rng.uniform(0.05, 0.95, n)
    if spec.domain == "nonzero":
        return rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    if spec.domain == "int":  # integral floats, halves excluded (round ties differ)
        return rng.integers(-4, 5, n).astype(np.float64)
    raise ValueError(spec.domain)


# ************************************************************ the table


@dataclass
class Case:
    id: str
    fn: Callable[..., Any]
    inputs: tuple[In, ...]
    covers: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = DTYPES
    second: bool = True
    marks: tuple[Any, ...] = field(default_factory=tuple)


def S(*shape: int, **kw: Any) -> In:
    return In(tuple(shape), **kw)


def V(values: Any, **kw: Any) -> In:
    return In(np.shape(values), values=values, **kw)


def _setitem(y: Any, index: Any, v: Any) -> Any:
    y[index] = v
    return y


def _setitem_case(m: Any, x: Any, v: Any) -> Any:
    return _setitem(x * 1, 0, v)


def _setitem_number(m: Any, x: Any) -> Any:
    return _setitem(x * 1, (slice(None), 1), 5.0)


def _inplace_view(m: Any, x: Any) -> Any:
    y = x * 1
    v = y[1]
    v.mul_(2)
    return y, v


def _expanded_0d_rederived(m: Any, x: Any) -> Any:
    """An expand of a 0-d tensor changed in place under no_grad: its node is re-derived
    (AsStridedBackward0 in PyTorch, an expand into the 0-d base here)."""
    v = (x * 1).expand(3)
    no_grad = m.no_grad if m.name == "torch" else m.grad_mode.no_grad
    with no_grad():
        v.fill_(x.item())  # the same values: finite differences still apply
    return v * x


def _nf(m: Any) -> Any:
    """torch.nn.functional, or adcli's normalisation ops (outside its ops module)."""
    if m.name == "torch":
        return m.nn.functional
    from adcli.autograd import normalization

    return normalization


def _inplace_view_cols(m: Any, x: Any) -> Any:
    y = x.exp()
    v = y[:, 0]
    v.add_(1)
    return v, y


CASES: list[Case] = [
    # ---------------------------------------------------------- arithmetic
    Case("add", lambda m, x, w: m.add(x, w), (S(3), S(3)), ("Add",)),
    Case("add_op", lambda m, x, w: x + w, (S(2, 3), S(2, 3)), ("Add",)),
    Case("add_broadcast", lambda m, x, w: x + w, (S(3, 1), S(1, 4)), ("Add", "SumDim")),
    Case("add_bcast_lead", lambda m, x, w: x + w, (S(2, 3), S(3)), ("Add", "SumDim")),
    Case("add_0d", lambda m, x, s: x + s, (S(3), S()), ("Add", "Sum")),
    Case("add_scalar", lambda m, x: x + 1, (S(3),), ("Add",)),
    Case("radd_scalar", lambda m, x: 1 + x, (S(3),), ("Add",)),
    Case("add_alpha", lambda m, x, w: m.add(x, w, alpha=2), (S(3), S(3)), ("Add",)),
    Case("add_const", lambda m, x, c: x + c, (S(3), S(3, rg=False)), ("Add",)),
    Case("add_empty", lambda m, x, w: x + w, (S(0), S(0)), ("Add",)),
    Case("add_empty_bcast", lambda m, x, w: x + w, (S(0, 3), S(3)), ("Add", "SumDim")),
    Case("sub", lambda m, x, w: x - w, (S(3), S(3)), ("Sub",)),
    Case("sub_scalar", lambda m, x: x - 1, (S(3),), ("Sub",)),
    Case("sub_alpha", lambda m, x, w: m.sub(x, w, alpha=3), (S(2, 2), S(2)), ("Sub", "SumDim")),
    Case("rsub", lambda m, x: 1 - x, (S(3),), ("Rsub",)),
    Case("rsub_float", lambda m, x: 2.5 - x, (S(2, 2),), ("Rsub",)),
    Case("mul", lambda m, x, w: x * w, (S(3), S(3)), ("Mul",)),
    Case("mul_self", lambda m, x: x * x, (S(3),), ("Mul",)),
    Case("mul_scalar", lambda m, x: x * 2, (S(3),), ("Mul",)),
    Case("rmul_scalar", lambda m, x: 2 * x, (S(3),), ("Mul",)),
    Case("mul_bcast", lambda m, x, w: m.mul(x, w), (S(2, 1, 3), S(4, 1)), ("Mul", "SumDim")),
    Case("mul_0d", lambda m, s, x: s * x, (S(), S(2, 2)), ("Mul", "Sum")),
    # x % y: away from the jumps (x / y not near an integer) so differences are smooth
    Case("remainder_scalar", lambda m, x: x % 5, (S(3, domain="pos"),), ("Remainder",)),
    Case(
        "remainder_tensor",
        lambda m, x, w: x % (w + 10),
        (S(3, domain="pos"), S(3, domain="pos")),
        ("RemainderTensor", "Add"),
    ),
    Case("div", lambda m, x, w: x / w, (S(3), S(3, domain="nonzero")), ("Div",)),
    Case("div_scalar", lambda m, x: x / 2, (S(3),), ("Div",)),
    Case("div_floor", lambda m, x: m.div(x, 0.7, rounding_mode="floor"), (S(4),), ("DivRounding",)),
    Case(
        "div_trunc_tensors",
        lambda m, x, w: x.div(w, rounding_mode="trunc"),
        (S(2, 3), S(3, domain="nonzero")),
        ("DivRounding",),
    ),
    # a sample's gradient to mean and std is zero, as PyTorch defines it
    Case(
        "normal_mean",
        lambda m, x: m.normal(x, 1.0, generator=m.Generator().manual_seed(0)),
        (S(4),),
        ("Normal",),
    ),
    Case(
        "normal_std",
        lambda m, s: m.normal(0.5, s.abs(), generator=m.Generator().manual_seed(1)),
        (S(2, 3),),
        ("NormalStd",),
    ),
    Case(
        "normal_both",
        lambda m, x, s: m.normal(x, s.abs(), generator=m.Generator().manual_seed(2)),
        (S(2, 1), S(3)),
        ("NormalBoth",),
    ),
    Case("floordiv", lambda m, x: x // 0.7, (S(4),), ("NotImplementedOp",)),
    Case("rfloordiv", lambda m, x, w: 3.0 // x + m.floor_divide(w, x), (S(3), S(3)), ()),
    Case("rremainder", lambda m, x: 5.0 % x, (S(3, domain="pos"),), ("NotImplementedOp",)),
    Case("div_bcast", lambda m, x, w: m.div(x, w), (S(2, 3), S(3, domain="pos")), ("Div",)),
    Case("rdiv_scalar", lambda m, x: 2 / x, (S(3, domain="nonzero"),), ("Mul", "Reciprocal")),
    Case("reciprocal", lambda m, x: x.reciprocal(), (S(3, domain="nonzero"),), ("Reciprocal",)),
    Case("pow_2", lambda m, x: x**2, (S(3),), ("Pow",)),
    Case("pow_3", lambda m, x: x.pow(3), (S(2, 2),), ("Pow",)),
    Case("pow_half", lambda m, x: x**0.5, (S(3, domain="pos"),), ("Pow",)),
    Case("pow_neg", lambda m, x: m.pow(x, -1.5), (S(3, domain="pos"),), ("Pow",)),
    Case("pow_0", lambda m, x: x**0, (S(3),), ("Pow",)),
    Case("pow_1", lambda m, x: x**1, (S(3),), ("Pow",)),
    Case("square", lambda m, x: m.square(x), (S(3),), ("Pow",)),
    Case("pow_tensor", lambda m, x, w: x**w, (S(3, domain="pos"), S(3)), ("PowTensor",)),
    Case(
        "pow_tensor_bcast",
        lambda m, x, w: m.pow(x, w),
        (S(2, 3, domain="pos"), S(3)),
        ("PowTensor",),
    ),
    Case("pow_scalar_base", lambda m, x: 2**x, (S(3),), ("PowScalarBase",)),
    Case("pow_scalar_base_fn", lambda m, x: m.pow(1.5, x), (S(2, 2),), ("PowScalarBase",)),
    Case("neg", lambda m, x: -x, (S(3),), ("Neg",)),
    Case("neg_method", lambda m, x: x.neg(), (S(2, 2),), ("Neg",)),
    Case("maximum", lambda m, x, w: m.maximum(x, w), (S(4), S(4)), ("Maximum",)),
    Case("maximum_bcast", lambda m, x, w: m.maximum(x, w), (S(2, 3), S(3)), ("Maximum",)),
    Case(
        "maximum_ties",
        lambda m, x, w: m.maximum(x, w),
        (V([1.0, 2.0, 3.0]), V([1.0, 0.0, 3.0])),
        ("Maximum",),
    ),
    Case("max_binary", lambda m, x, w: m.max(x, w), (S(3), S(3)), ("Maximum",)),
    Case("minimum", lambda m, x, w: m.minimum(x, w), (S(4), S(4)), ("Minimum",)),
    Case(
        "minimum_ties",
        lambda m, x, w: m.minimum(x, w),
        (V([1.0, 2.0, -3.0]), V([1.0, 0.0, -3.0])),
        ("Minimum",),
    ),
    # ---------------------------------------------------------- unary
    Case("exp", lambda m, x: x.exp(), (S(3),), ("Exp",)),
    Case("exp_fn", lambda m, x: m.exp(x), (S(2, 2),), ("Exp",)),
    Case("log", lambda m, x: x.log(), (S(3, domain="pos"),), ("Log",)),
    Case("log1p", lambda m, x: x.log1p(), (S(3, domain="pos"),), ("Log1p",)),
    Case("sqrt", lambda m, x: x.sqrt(), (S(3, domain="pos"),), ("Sqrt",)),
    Case("abs", lambda m, x: x.abs(), (S(3, domain="nonzero"),), ("Abs",)),
    Case("abs_at_0", lambda m, x: x.abs(), (V([-1.0, 0.0, 2.0]),), ("Abs",)),
    Case("sin", lambda m, x: x.sin(), (S(3),), ("Sin",)),
    Case("cos", lambda m, x: x.cos(), (S(3),), ("Cos",)),
    Case("tan", lambda m, x: x.tan(), (S(3, domain="unit"),), ("Tan",)),
    Case("asin", lambda m, x: x.asin(), (S(3, domain="unit"),), ("Asin",)),
    Case("asin_neg", lambda m, x: m.arcsin(-x), (S(2, 2, domain="unit"),), ("Asin",)),
    Case("acos", lambda m, x: x.acos(), (S(3, domain="unit"),), ("Acos",)),
    Case("acos_fn", lambda m, x: m.arccos(-x), (S(2, 2, domain="unit"),), ("Acos",)),
    Case("atan", lambda m, x: x.atan(), (S(3),), ("Atan",)),
    Case("atan_fn", lambda m, x: m.arctan(x), (S(2, 2),), ("Atan",)),
    Case("rsqrt", lambda m, x: x.rsqrt(), (S(3, domain="pos"),), ("Rsqrt",)),
    Case("rsqrt_fn", lambda m, x: m.rsqrt(x), (S(2, 2, domain="pos"),), ("Rsqrt",)),
    Case(
        "inverse_trig_edges",
        lambda m, x: (m.asin(x), m.acos(x), m.atan(x), m.rsqrt(x)),
        (V([1.0, -1.0, 0.0, 1.5, 4.0]),),
        ("Asin", "Acos", "Atan", "Rsqrt"),
        second=False,
    ),
    Case("tanh", lambda m, x: x.tanh(), (S(3),), ("Tanh", "TanhBackward")),
    Case("sigmoid", lambda m, x: x.sigmoid(), (S(3),), ("Sigmoid", "SigmoidBackward")),
    Case("sigmoid_fn", lambda m, x: m.sigmoid(x), (S(2, 2),), ("Sigmoid",)),
    Case("relu", lambda m, x: x.relu(), (S(5),), ("Relu", "ThresholdBackward")),
    Case("relu_at_0", lambda m, x: m.F.relu(x), (V([-1.0, 0.0, 2.0]),), ("Relu",)),
    Case("leaky_relu", lambda m, x: m.F.leaky_relu(x), (S(5),), ("LeakyRelu", "LeakyReluBackward")),
    Case(
        "leaky_relu_slope",
        lambda m, x: m.F.leaky_relu(x, 0.2),
        (V([-1.0, 0.0, 2.0]),),
        ("LeakyRelu",),
    ),
    Case("softplus", lambda m, x: m.F.softplus(x), (S(5),), ("Softplus", "SoftplusBackward")),
    Case(
        "prelu_channels",
        lambda m, x, w: m.F.prelu(x, w),
        (S(2, 3, 4), S(3)),
        ("PreluKernel", "PreluKernelBackward", "View"),
    ),
    Case("prelu_one", lambda m, x, w: m.F.prelu(x, w), (S(5), S(1)), ("PreluKernel",)),
    Case("prelu_0d_weight", lambda m, x, w: m.prelu(x, w) ** 2, (S(2, 3), S()), ("PreluKernel",)),
    Case(
        "prelu_at_0",
        lambda m, x, w: m.F.prelu(x, w),
        (V([[-1.0, 0.0, 2.0], [3.0, 0.0, -4.0]]), V([0.1, 0.2, 0.3])),
        ("PreluKernel", "PreluKernelBackward"),
    ),
    Case(
        "prelu_const_weight",
        lambda m, x, w: x.prelu(w).exp(),
        (S(3, 2), S(2, rg=False)),
        ("PreluKernel",),
    ),
    Case(
        "softplus_beta",
        lambda m, x: m.F.softplus(x, beta=2.0, threshold=1.0),
        (V([-1.0, 0.2, 0.4, 0.6, 2.0]),),
        ("Softplus",),
    ),
    Case("gelu", lambda m, x: m.F.gelu(x), (S(5),), ("Gelu", "GeluBackward")),
    Case(
        "gelu_tanh", lambda m, x: m.F.gelu(x, approximate="tanh"), (S(5),), ("Gelu", "GeluBackward")
    ),
    Case("elu", lambda m, x: m.F.elu(x), (S(5),), ("Elu", "EluBackward")),
    Case("elu_alpha", lambda m, x: m.F.elu(x, alpha=0.5), (S(2, 3),), ("Elu", "EluBackward")),
    Case("silu", lambda m, x: m.F.silu(x), (S(5),), ("Silu",)),
    Case(
        "hardtanh",
        lambda m, x: m.F.hardtanh(x, -1.0, 0.5) * x,
        (V([-2.0, -0.5, 0.3, 0.8, 1.7]),),
        ("Hardtanh", "HardtanhBackward"),
    ),
    Case("clamp", lambda m, x: x.clamp(-0.5, 0.5), (S(6),), ("Clamp",)),
    Case("clamp_min", lambda m, x: x.clamp(min=0), (S(6),), ("Clamp",)),
    Case("clamp_max", lambda m, x: m.clamp(x, max=1), (S(6),), ("Clamp",)),
    Case(
        "clamp_bounds", lambda m, x: x.clamp(0.0, 2.0), (V([-1.0, 0.0, 1.0, 2.0, 3.0]),), ("Clamp",)
    ),
    Case("clamp_tensor_min", lambda m, x, lo: x.clamp(min=lo), (S(6), S()), ("ClampTensor",)),
    Case(
        "clamp_tensors",
        lambda m, x, lo, hi: m.clamp(x, lo, hi),
        (S(2, 3), V([-0.5, 0.0, 0.2]), V([0.5, -0.1, 1.0])),
        ("ClampTensor",),
    ),
    Case(
        "clamp_tensor_max_const",
        lambda m, x, hi: x.clamp(max=hi),
        (S(2, 3), S(3, rg=False)),
        ("ClampTensor",),
    ),
    Case("sign", lambda m, x: x.sign(), (V([-1.5, 0.0, 2.0]),), ("Sign",)),
    Case("sign_nonzero", lambda m, x: x.sign(), (S(4, domain="nonzero"),), ("Sign",)),
    Case("sgn", lambda m, x: x.sgn(), (V([-1.5, 0.0, 2.0]),), ("Sgn",)),
    Case("sgn_function", lambda m, x: m.sgn(x), (S(2, 3, domain="nonzero"),), ("Sgn",)),
    Case("floor", lambda m, x: x.floor(), (S(4),), ("Floor",)),
    Case("ceil", lambda m, x: x.ceil(), (S(4),), ("Ceil",)),
    Case("round", lambda m, x: x.round(), (V([-1.4, 0.3, 2.6, 2.5, -0.5]),), ("Round",)),
    Case("round_random", lambda m, x: x.round(), (S(2, 3),), ("Round",)),
    Case(
        "round_decimals",
        lambda m, x: x.round(decimals=1),
        (V([-1.44, 0.36, 2.61]),),
        ("RoundDecimals",),
    ),
    Case("clone", lambda m, x: x.clone(), (S(3),), ("Clone",)),
    Case(
        "clone_strided",
        lambda m, x: x.t().clone().reshape(3, 2),
        (S(2, 3),),
        ("Clone", "ReshapeAlias"),
    ),
    Case("to_float64", lambda m, x: x.to(m.float64), (S(3),), ("ToCopy",), ("float32",)),
    Case("double", lambda m, x: x.double() * x.double(), (S(3),), ("ToCopy", "Mul"), ("float32",)),
    Case("to_float32", lambda m, x: x.float(), (S(3),), ("ToCopy",), ("float64",)),
    Case("to_same", lambda m, x: x.to(m.float32), (S(3),), (), ("float32",)),
    # ---------------------------------------------------------- reductions
    Case("sum", lambda m, x: x.sum(), (S(2, 3),), ("Sum",)),
    Case("sum_0d", lambda m, x: x.sum(), (S(),), ("Sum",)),
    Case("sum_empty", lambda m, x: x.sum(), (S(0),), ("Sum",)),
    Case("sum_dim_empty", lambda m, x: x.sum(1), (S(0, 3),), ("SumDim",)),
    Case("mean_empty", lambda m, x: x.mean(), (S(0),), ("Mean",)),
    Case("mean_dim_empty", lambda m, x: x.mean(0), (S(0, 2),), ("MeanDim",)),
    Case("prod_empty", lambda m, x: x.prod(), (S(0),), ("Prod",)),
    Case("exp_empty", lambda m, x: x.exp(), (S(2, 0),), ("Exp",)),
    Case("mm_empty_inner", lambda m, a, b: a @ b, (S(2, 0), S(0, 3)), ("Mm",)),
    Case("mm_empty_rows", lambda m, a, b: a @ b, (S(0, 2), S(2, 3)), ("Mm",)),
    Case("cat_empty", lambda m, x, w: m.cat([x, w]), (S(0), S(3)), ("Cat",)),
    Case("softmax_empty", lambda m, x: x.softmax(1), (S(0, 3),), ("Softmax",)),
    Case("reshape_empty", lambda m, x: x.reshape(3, 0), (S(0, 3),), ("View",)),
    Case("norm_empty", lambda m, x: x.norm(), (S(0),), ("Norm",), second=False),
    Case("amax_dim_empty_rows", lambda m, x: x.amax(1), (S(0, 3),), ("Amax",)),
    Case(
        "mse_loss_empty",
        lambda m, x, t: m.F.mse_loss(x, t, reduction="sum"),
        (S(0), S(0)),
        ("MseLoss",),
    ),
    Case("sum_dim", lambda m, x: x.sum(dim=1), (S(2, 3),), ("SumDim",)),
    Case("sum_dim_keep", lambda m, x: x.sum(dim=1, keepdim=True), (S(2, 3),), ("SumDim",)),
    Case("sum_dim_neg", lambda m, x: x.sum(-1), (S(2, 3, 4),), ("SumDim",)),
    Case("sum_dims", lambda m, x: x.sum(dim=(0, 2)), (S(2, 3, 4),), ("SumDim",)),
    Case("sum_dim_1d", lambda m, x: x.sum(dim=0), (S(3),), ("SumDim",)),
    Case("mean", lambda m, x: x.mean(), (S(2, 3),), ("Mean",)),
    Case("mean_dim", lambda m, x: x.mean(dim=0), (S(2, 3),), ("MeanDim",)),
    Case("mean_dim_keep_neg", lambda m, x: x.mean(-2, keepdim=True), (S(2, 3, 2),), ("MeanDim",)),
    Case("mean_dims", lambda m, x: m.mean(x, (0, 1)), (S(2, 3, 2),), ("MeanDim",)),
    Case("prod", lambda m, x: x.prod(), (S(4, domain="nonzero"),), ("Prod",)),
    Case("prod_0d", lambda m, x: x.prod(), (S(),), ("Prod",)),
    Case("prod_one_zero", lambda m, x: x.prod(), (V([2.0, 0.0, 3.0, -1.0]),), ("Prod", "Cumprod")),
    Case("prod_two_zeros", lambda m, x: x.prod(), (V([2.0, 0.0, 3.0, 0.0]),), ("Prod", "Cumprod")),
    Case("prod_dim", lambda m, x: x.prod(1), (S(2, 3, domain="nonzero"),), ("ProdDim",)),
    Case(
        "prod_dim_zero",
        lambda m, x: x.prod(0, keepdim=True),
        (V([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]),),
        ("ProdDim", "Cumprod"),
    ),
    Case("max", lambda m, x: x.max(), (S(5),), ("Max",)),
    Case("max_ties", lambda m, x: x.max(), (V([1.0, 3.0, 3.0, -2.0, 3.0]),), ("Max",)),
    Case("min", lambda m, x: x.min(), (S(2, 3),), ("Min",)),
    Case("min_ties", lambda m, x: m.min(x), (V([[1.0, -3.0], [-3.0, 0.0]]),), ("Min",)),
    Case("max_dim", lambda m, x: x.max(dim=1), (S(3, 4),), ("MaxDim", "ScatterPut")),
    Case("max_dim_keep", lambda m, x: m.max(x, 0, keepdim=True), (S(3, 4),), ("MaxDim",)),
    Case("max_dim_values", lambda m, x: x.max(dim=-1).values, (S(2, 3),), ("MaxDim",)),
    Case("min_dim", lambda m, x: x.min(dim=0), (S(3, 4),), ("MinDim", "ScatterPut")),
    Case("min_dim_indices", lambda m, x: x.min(1)[1], (S(3, 4),), ("MinDim",)),
    Case("topk", lambda m, x: x.topk(2), (S(3, 4),), ("TopK", "ScatterPut")),
    Case("topk_dim0_smallest", lambda m, x: m.topk(x, 2, 0, False).values, (S(3, 4),), ("TopK",)),
    Case("topk_ties", lambda m, x: x.topk(3)[0], (V([1.0, 3.0, 3.0, 2.0, 3.0]),), ("TopK",)),
    Case("sort", lambda m, x: x.sort(0, True), (S(3, 4),), ("Sort", "ScatterPut")),
    Case("sort_values", lambda m, x: m.sort(x).values, (S(2, 5),), ("Sort",)),
    Case("sort_stable", lambda m, x: x.sort(stable=True)[0], (S(2, 5),), ("SortStable",)),
    Case("argsort", lambda m, x: m.argsort(x, descending=True), (S(2, 5),)),
    Case("amax", lambda m, x: x.amax(), (S(3, 4),), ("Amax",)),
    Case("amax_dim", lambda m, x: m.amax(x, dim=1, keepdim=True), (S(3, 4),), ("Amax",)),
    Case(
        "amax_ties", lambda m, x: x.amax(0), (V([[1.0, 2.0], [1.0, 0.0], [1.0, 2.0]]),), ("Amax",)
    ),
    Case("amin", lambda m, x: x.amin(-1), (S(3, 4),), ("Amin",)),
    Case("amin_ties", lambda m, x: x.amin(), (V([[1.0, 0.0], [0.0, 5.0]]),), ("Amin",)),
    Case("norm", lambda m, x: x.norm(), (S(4),), ("Norm",)),
    Case("norm_fn", lambda m, x: m.norm(x), (S(2, 3),), ("Norm",)),
    Case("norm_p1", lambda m, x: x.norm(p=1), (S(4, domain="nonzero"),), ("Norm",)),
    Case("norm_inf", lambda m, x: x.norm(p=float("inf")), (S(4),), ("Norm",)),
    Case(
        "norm_inf_ties", lambda m, x: x.norm(p=float("inf")), (V([1.0, -3.0, 3.0, 2.0]),), ("Norm",)
    ),
    Case("norm_p3", lambda m, x: x.norm(p=3), (S(4),), ("Norm",)),
    Case("norm_dim", lambda m, x: x.norm(dim=1), (S(2, 3),), ("Norm",)),
    Case("norm_dim_keep", lambda m, x: x.norm(2, -1, keepdim=True), (S(2, 3),), ("Norm",)),
    Case("norm_at_0", lambda m, x: x.norm(), (V([0.0, 0.0, 0.0]),), ("Norm",), second=False),
    Case("norm_p1_at_0", lambda m, x: x.norm(p=1), (V([0.0, 1.0, -2.0]),), ("Norm",)),
    Case("logsumexp", lambda m, x: x.logsumexp(1), (S(2, 3),), ("Logsumexp",)),
    Case(
        "logsumexp_keep", lambda m, x: m.logsumexp(x, 0, keepdim=True), (S(2, 3),), ("Logsumexp",)
    ),
    Case("var", lambda m, x: x.var(), (S(5),), ("Var",)),
    Case("var_dim", lambda m, x: x.var(1, keepdim=True), (S(2, 4),), ("Var",)),
    Case("var_biased", lambda m, x: x.var(0, unbiased=False), (S(3, 2),), ("Var",)),
    Case("std", lambda m, x: x.std(), (S(5),), ("Std",)),
    Case("std_dim", lambda m, x: x.std(dim=0), (S(3, 2),), ("Std",)),
    Case("cumsum", lambda m, x: x.cumsum(0), (S(4),), ("Cumsum",)),
    Case("cumsum_dim", lambda m, x: m.cumsum(x, dim=-1), (S(2, 3),), ("Cumsum",)),
    # ---------------------------------------------------------- linear algebra
    Case("dot", lambda m, x, w: m.dot(x, w), (S(3), S(3)), ("Dot",)),
    Case("dot_matmul", lambda m, x, w: x @ w, (S(3), S(3)), ("Dot",)),
    Case("mv", lambda m, a, v: m.mv(a, v), (S(2, 3), S(3)), ("Mv",)),
    Case("mv_matmul", lambda m, a, v: a @ v, (S(2, 3), S(3)), ("Mv",)),
    Case("mm", lambda m, a, b: m.mm(a, b), (S(2, 3), S(3, 4)), ("Mm",)),
    Case("mm_matmul", lambda m, a, b: m.matmul(a, b), (S(2, 3), S(3, 2)), ("Mm",)),
    Case("mm_const", lambda m, a, b: a @ b, (S(2, 3), S(3, 2, rg=False)), ("Mm",)),
    Case(
        "matmul_1d_2d",
        lambda m, v, a: v @ a,
        (S(3), S(3, 2)),
        ("Mm", "Unsqueeze", "SqueezeDimInplace"),
    ),
    Case(
        "matmul_batched",
        lambda m, a, b: a @ b,
        (S(2, 2, 3), S(2, 3, 4)),
        ("Bmm", "Expand", "View", "UnsafeView"),
    ),
    Case(
        "matmul_batched_bcast",
        lambda m, a, b: a @ b,
        (S(2, 1, 2, 3), S(3, 3, 4)),
        ("Bmm", "Expand", "Clone", "UnsafeView"),
    ),
    Case("matmul_batched_const", lambda m, a, b: a @ b, (S(2, 2, 3, rg=False), S(3, 4)), ("Mm",)),
    Case(
        "matmul_fold",
        lambda m, a, b: m.matmul(a, b),
        (S(2, 2, 3), S(3, 4)),
        ("Mm", "View", "UnsafeView"),
    ),
    Case("matmul_fold_vec", lambda m, a, v: a @ v, (S(2, 2, 3), S(3)), ("Mv", "UnsafeView")),
    Case(
        "matmul_2d_3d",
        lambda m, a, b: a @ b,
        (S(4, 3), S(2, 3, 5)),
        ("Mm", "T", "Transpose", "Clone", "UnsafeView"),
    ),
    Case("matmul_1d_3d", lambda m, v, b: v @ b, (S(3), S(2, 3, 5)), ("Mv",)),
    Case("matmul_1d_3d_const", lambda m, v, b: v @ b, (S(3, rg=False), S(2, 3, 5)), ("Bmm",)),
    Case(
        "matmul_4d_1d",
        lambda m, a, v: a.transpose(0, 1) @ v,
        (S(2, 3, 2, 3), S(3, rg=False)),
        ("Bmm", "SqueezeDim"),
    ),
    Case("matmul_batch_of_one", lambda m, a, b: a @ b, (S(1, 4, 3), S(2, 3, 5)), ()),
    Case("bmm", lambda m, a, b: m.bmm(a, b), (S(2, 2, 3), S(2, 3, 4)), ("Bmm",)),
    Case("addmm", lambda m, c, a, b: m.addmm(c, a, b), (S(4), S(2, 3), S(3, 4)), ("Addmm",)),
    Case(
        "addmm_beta_alpha",
        lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=-2.0),
        (S(2, 4), S(2, 3), S(3, 4)),
        ("Addmm", "MulScalar"),
    ),
    Case(
        "addmm_beta_0",
        lambda m, c, a, b: c.addmm(a, b, beta=0, alpha=3),
        (S(1, 4), S(2, 3), S(3, 4)),
        ("Addmm", "MulScalar"),
    ),
    Case("bmm_fn", lambda m, a, b: m.bmm(a, b), (S(3, 1, 2), S(3, 2, 2)), ("Bmm",)),
    Case("outer", lambda m, x, w: m.outer(x, w), (S(3), S(2)), ("Mul", "View")),
    Case(
        "linear",
        lambda m, x, w, b: m.F.linear(x, w, b),
        (S(4, 3), S(2, 3), S(2)),
        ("Addmm", "T", "SumDim"),
    ),
    Case("linear_nobias", lambda m, x, w: m.F.linear(x, w), (S(4, 3), S(2, 3)), ("Mm", "T")),
    Case("linear_1d", lambda m, x, w, b: m.F.linear(x, w, b), (S(3), S(2, 3), S(2)), ()),
    Case("linear_3d", lambda m, x, w, b: m.F.linear(x, w, b), (S(2, 4, 3), S(2, 3), S(2)), ()),
    Case("linear_4d", lambda m, x, w, b: m.F.linear(x, w, b), (S(2, 2, 4, 3), S(2, 3), S(2)), ()),
    Case(
        "linear_3d_noncontig",
        lambda m, x, w, b: m.F.linear(x.transpose(0, 1), w, b),
        (S(4, 2, 3), S(2, 3), S(2)),
        (),
    ),
    Case(
        "linear_3d_bias3d",
        lambda m, x, w, b: m.F.linear(x, w, b),
        (S(2, 4, 3), S(2, 3), S(2, 4, 2)),
        (),
    ),
    Case("linear_1d_nobias", lambda m, x, w: m.F.linear(x, w), (S(3), S(2, 3)), ()),
    Case("linear_3d_nobias", lambda m, x, w: m.F.linear(x, w), (S(2, 4, 3), S(2, 3)), ()),
    Case("linear_bias_0d", lambda m, x, w, b: m.F.linear(x, w, b), (S(4, 3), S(2, 3), S()), ()),
    # ---------------------------------------------------------- shapes and views
    Case("transpose", lambda m, x: x.transpose(0, 1), (S(2, 3),), ("Transpose",)),
    Case("transpose_neg", lambda m, x: m.transpose(x, -1, 0), (S(2, 3, 4),), ("Transpose",)),
    Case("t", lambda m, x: x.t(), (S(2, 3),), ("T",)),
    Case("T", lambda m, x: x.T, (S(2, 3),), ("Permute",)),
    Case("permute", lambda m, x: x.permute(2, 0, 1), (S(2, 3, 4),), ("Permute",)),
    Case("reshape", lambda m, x: x.reshape(3, 2), (S(2, 3),), ("View",)),
    Case("reshape_infer", lambda m, x: x.reshape(-1), (S(2, 3),), ("View",)),
    Case("reshape_noncontig", lambda m, x: x.t().reshape(6), (S(2, 3),), ("UnsafeView", "T")),
    Case("reshape_same", lambda m, x: x.reshape(2, 3), (S(2, 3),), ("View",)),
    Case("reshape_alias", lambda m, x: x.t().reshape(3, 2), (S(2, 3),), ("ReshapeAlias",)),
    Case("reshape_slice", lambda m, x: x[::2].reshape(1, -1), (S(6),), ("ReshapeAlias",)),
    Case("reshape_copy", lambda m, x: x[:, :2].reshape(4), (S(2, 3),), ("UnsafeView", "Clone")),
    Case("contiguous", lambda m, x: x.t().contiguous(), (S(2, 3),), ("Clone",)),
    Case("view", lambda m, x: x.view(6), (S(2, 3),), ("View",)),
    Case("view_strided", lambda m, x: x.t().view(3, 2), (S(2, 3),), ("View",)),
    Case("view_tuple", lambda m, x: x.view((3, -1)), (S(2, 3),), ("View",)),
    Case("flatten", lambda m, x: x.flatten(), (S(2, 3),), ("View",)),
    Case("flatten_start", lambda m, x: m.flatten(x, 1), (S(2, 3, 4),), ("View",)),
    Case("squeeze", lambda m, x: x.squeeze(), (S(1, 3, 1),), ("Squeeze",)),
    Case("squeeze_dim", lambda m, x: x.squeeze(0), (S(1, 3),), ("SqueezeDim",)),
    Case("squeeze_dim_noop", lambda m, x: x.squeeze(1), (S(2, 3),), ("SqueezeDim",)),
    Case("squeeze_dims", lambda m, x: x.squeeze((0, 2)), (S(1, 3, 1),), ("SqueezeDims",)),
    Case("unsqueeze", lambda m, x: x.unsqueeze(0), (S(3),), ("Unsqueeze",)),
    Case("unsqueeze_neg", lambda m, x: x.unsqueeze(-1), (S(2, 3),), ("Unsqueeze",)),
    Case("expand", lambda m, x: x.expand(2, 3), (S(3),), ("Expand", "SumDim")),
    Case("expand_0d", lambda m, s: s.expand(3), (S(),), ("Expand", "Sum")),
    Case("expand_keep", lambda m, x: x.expand(-1, 4), (S(3, 1),), ("Expand", "SumDim")),
    Case("expand_as", lambda m, x, y: x.expand_as(y), (S(1, 3), S(2, 3, rg=False)), ("Expand",)),
    Case("repeat", lambda m, x: x.repeat(2), (S(3),), ("Repeat",)),
    Case("repeat_2d", lambda m, x: x.repeat(2, 1, 3), (S(2, 2),), ("Repeat",)),
    Case("flip", lambda m, x: x.flip(0), (S(3),), ("Flip",)),
    Case("flip_dims", lambda m, x: m.flip(x, (0, -1)), (S(2, 3),), ("Flip",)),
    Case("flip_varargs", lambda m, x: x.flip(0, 2), (S(2, 3, 2),), ("Flip",)),
    Case("flip_method_list", lambda m, x: x.flip([-1]), (S(2, 3),), ("Flip",)),
    Case("cat", lambda m, x, w: m.cat([x, w]), (S(3), S(2)), ("Cat",)),
    Case("cat_dim1", lambda m, x, w: m.cat([x, w], dim=1), (S(2, 3), S(2, 1)), ("Cat",)),
    Case("cat_const", lambda m, x, c: m.cat((c, x, c), -1), (S(2, 2), S(2, 1, rg=False)), ("Cat",)),
    Case("stack", lambda m, x, w: m.stack([x, w]), (S(3), S(3)), ("Stack",)),
    Case("stack_dim", lambda m, x, w: m.stack([x, w], dim=1), (S(2, 3), S(2, 3)), ("Stack",)),
    Case("split", lambda m, x: x.split(2), (S(5),), ("Split",)),
    Case("split_sizes", lambda m, x: m.split(x, [1, 2], dim=1), (S(2, 3),), ("SplitWithSizes",)),
    Case("split_one_used", lambda m, x: x.split(2)[1], (S(5),), ("Split",)),
    Case("chunk", lambda m, x: x.chunk(2), (S(5),), ("Split",)),
    Case("chunk_dim", lambda m, x: m.chunk(x, 3, dim=1), (S(2, 6),), ("Split",)),
    Case("unbind", lambda m, x: x.unbind(), (S(3, 2),), ("Unbind",)),
    Case("unbind_one_used", lambda m, x: m.unbind(x, 1)[0], (S(3, 2),), ("Unbind",)),
    # ---------------------------------------------------------- indexing
    Case("select", lambda m, x: x[0], (S(3),), ("Select", "SelectBackward")),
    Case("select_2d", lambda m, x: x[1], (S(3, 2),), ("Select", "SelectBackward")),
    Case("select_col", lambda m, x: x[:, 1], (S(2, 3),), ("Select", "SelectBackward")),
    Case("select_elem", lambda m, x: x[0, 1], (S(2, 3),), ("Select", "SelectBackward")),
    Case("select_neg", lambda m, x: x[-1], (S(3),), ("Select",)),
    Case("slice", lambda m, x: x[1:3], (S(4),), ("Slice", "SliceBackward")),
    Case("slice_step", lambda m, x: x[::2], (S(5),), ("Slice", "SliceBackward")),
    Case("slice_2d", lambda m, x: x[:, 1:], (S(2, 3),), ("Slice",)),
    Case("slice_neg", lambda m, x: x[-2:], (S(4),), ("Slice",)),
    Case("slice_empty", lambda m, x: x[2:2], (S(4),), ("Slice",)),
    Case("index_none", lambda m, x: x[None], (S(3),), ("Unsqueeze",)),
    Case("index_list", lambda m, x: x[[0, 2]], (S(3),), ("Index", "Embed")),
    Case("index_list_repeat", lambda m, x: x[[0, 0, 2]], (S(3),), ("Index", "Embed")),
    Case("index_mask", lambda m, x: x[x > 0], (S(5),), ("Index",)),
    Case(
        "embedding",
        lambda m, w: m.F.embedding(m.tensor([[0, 2], [2, 2]]), w) ** 2,
        (S(3, 2),),
        ("Embedding", "EmbeddingDenseBackward"),
    ),
    Case(
        "embedding_padding",
        lambda m, w: m.F.embedding(m.tensor([1, 0, 1, 2]), w, padding_idx=1) ** 2,
        (S(3, 2),),
        ("Embedding", "EmbeddingDenseBackward"),
    ),
    Case(
        "bilinear",
        lambda m, a, b, w, c: m.F.bilinear(a, b, w, c),
        (S(4, 2), S(4, 3), S(2, 2, 3), S(2)),
        ("Trilinear", "View", "Add"),
    ),
    Case(
        "conv2d",
        lambda m, x, w, b: m.F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2) ** 2,
        (S(1, 2, 5, 4), S(4, 1, 3, 2), S(4)),
        ("Convolution", "ConvolutionGrads"),
    ),
    Case(
        "conv1d_same_even",
        lambda m, x, w: m.F.conv1d(x, w, padding="same") ** 2,
        (S(2, 6), S(3, 2, 2)),
        ("ConstantPad", "Convolution", "ConvolutionGrads"),
    ),
    Case(
        "max_pool2d",
        lambda m, x: m.F.max_pool2d(x * x, 2, ceil_mode=True),
        (S(2, 5, 4),),
        ("MaxPool2d", "MaxPool2dAdjoint"),
    ),
    Case(
        "avg_pool2d",
        lambda m, x: m.F.avg_pool2d(x * x, 3, 2, 1, count_include_pad=False),
        (S(1, 2, 5, 4),),
        ("AvgPool2d", "AvgPool2dAdjoint"),
    ),
    Case(
        "bilinear_squared",
        lambda m, a, b, w: m.F.bilinear(a, b, w) ** 2,
        (S(2, 1, 2), S(2, 1, 3), S(2, 2, 3)),
        ("Trilinear",),
    ),
    Case("index_select_list", lambda m, x: x[0, [0, 2]], (S(2, 3),), ("Index",)),
    Case("index_tensor", lambda m, x: x[m.tensor([1, 0])], (S(2, 3),), ("Index",)),
    Case("index_ellipsis", lambda m, x: x[..., 0], (S(2, 3),), ("Select",)),
    Case("index_alias", lambda m, x: x[...], (S(2, 3),), ("Alias",)),
    Case("index_all", lambda m, x: x[:], (S(2, 3),), ("Slice",)),
    Case("index_mixed", lambda m, x: x[1:, [0, 2]], (S(2, 3),), ("Index", "Slice")),
    Case("index_two_lists", lambda m, x: x[[0, 1], [1, 2]], (S(2, 3),), ("Index",)),
    Case("index_chain", lambda m, x: x[0][1], (S(2, 3),), ("Select",)),
    Case("narrow", lambda m, x: x.narrow(1, 0, 2), (S(2, 3),), ("Slice",)),
    Case("diagonal", lambda m, x: x.diagonal(), (S(3, 3),), ("Diagonal", "DiagonalGrad")),
    Case(
        "diagonal_offset_dims",
        lambda m, x: m.diagonal(x, -1, 2, 0),
        (S(3, 2, 4),),
        ("Diagonal", "DiagonalGrad"),
    ),
    Case(
        "as_strided",
        lambda m, x: m.as_strided(x, (2, 2), (1, 2), 1),
        (S(6),),
        ("AsStrided", "AsStridedGrad"),
    ),
    Case("select_fn", lambda m, x: m.select(x, 1, 0), (S(2, 3),), ("Select",)),
    Case(
        "gather",
        lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [1, 0]])),
        (S(2, 3),),
        ("Gather", "ScatterAdd"),
    ),
    Case(
        "gather_method",
        lambda m, x: x.gather(0, m.tensor([[1, 0, 1]])),
        (S(2, 3),),
        ("Gather", "ScatterAdd"),
    ),
    Case(
        "gather_smaller_index",
        lambda m, x: m.gather(x, 0, m.tensor([[0, 2], [1, 1]])),
        (S(3, 4),),
        ("Gather", "ScatterAdd"),
    ),
    Case("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.5), (S(5),), ("MaskedFill",)),
    Case(
        "masked_fill_bcast",
        lambda m, x: m.masked_fill(x, m.tensor([True, False, True]), -1.0),
        (S(2, 3),),
        ("MaskedFill",),
    ),
    Case(
        "masked_fill_tensor",
        lambda m, x, v: x.masked_fill(x > 0, v),
        (S(2, 3), S()),
        ("MaskedFillTensor",),
    ),
    Case(
        "masked_fill_bcast_mask",
        lambda m, x: x.masked_fill(m.tensor([[True], [False]]), 2.0),
        (S(3),),
        ("MaskedFill",),
    ),
    Case(
        "masked_fill_",
        lambda m, x, v: (x * 1).masked_fill_(x > 0, v),
        (S(4), S()),
        ("MaskedFillTensor",),
    ),
    Case("where", lambda m, x, w: m.where(x > 0, x, w), (S(4), S(4)), ("Where",)),
    Case("where_scalar", lambda m, x: m.where(x > 0, x, 0.0), (S(4),), ("Where",)),
    Case("where_bcast", lambda m, x, w: m.where(x > 0, x, w), (S(2, 3), S(3)), ("Where",)),
    Case("setitem", _setitem_case, (S(3), S()), ("CopySlices",)),
    Case("setitem_number", _setitem_number, (S(2, 3),), ("CopySlices",)),
    Case("setitem_mask", lambda m, x: _setitem(x * 1, x > 0, 0.0), (S(5),), ("IndexPut",)),
    Case(
        "setitem_list", lambda m, x, v: _setitem(x * 2, [0, 2], v), (S(3, 2), S(2)), ("IndexPut",)
    ),
    Case(
        "setitem_on_view",
        lambda m, x, v: _setitem((x * 1)[1:], 0, v),
        (S(3, 2), S(2)),
        # PyTorch's setitem copies into the view (x * 1)[1:][0]: copy_ inside CopySlices
        ("CopySlicesOp", "CopyFrom", "AsStrided"),
    ),
    Case("inplace_view", _inplace_view, (S(2, 3),), ("CopySlicesOp", "AsStrided")),
    Case("inplace_view_cols", _inplace_view_cols, (S(2, 3),), ("CopySlicesOp", "AsStrided")),
    Case("expanded_0d_rederived", _expanded_0d_rederived, (S(),), ("AsStridedExpand",)),
    # ---------------------------------------------------------- in place on a non-leaf
    Case("zero_", lambda m, x: (x * 2).zero_(), (S(3),), ("ZeroFill",)),
    Case("fill_", lambda m, x: (x * 2).fill_(1.5), (S(3),), ("FillScalar",)),
    Case("fill_tensor", lambda m, x, v: (x * 2).fill_(v), (S(3), S()), ("FillTensor",)),
    Case("copy_", lambda m, x, w: (x * 2).copy_(w), (S(3), S(3)), ("CopyFrom",)),
    Case("copy_bcast", lambda m, x, w: (x * 2).copy_(w), (S(2, 3), S(3)), ("CopyFrom",)),
    Case("add_", lambda m, x, w: (x * 2).add_(w), (S(3), S(3)), ("Add",)),
    Case("mul_", lambda m, x: (x + 1).mul_(x), (S(3),), ("Mul",)),
    Case("exp_", lambda m, x: (x * 1).exp_(), (S(3),), ("Exp",)),
    Case(
        "sub_div_pow_", lambda m, x: (x * 1).sub_(1).div_(2).pow_(2), (S(3),), ("Sub", "Div", "Pow")
    ),
    # ---------------------------------------------------------- nn functions
    Case("softmax", lambda m, x: x.softmax(0), (S(4),), ("Softmax", "SoftmaxBackwardData")),
    Case("softmax_dim", lambda m, x: m.F.softmax(x, dim=1), (S(2, 3),), ("Softmax",)),
    Case("softmax_neg", lambda m, x: m.softmax(x, -1), (S(2, 3),), ("Softmax",)),
    Case(
        "log_softmax",
        lambda m, x: x.log_softmax(0),
        (S(4),),
        ("LogSoftmax", "LogSoftmaxBackwardData"),
    ),
    Case("log_softmax_dim", lambda m, x: m.F.log_softmax(x, dim=1), (S(2, 3),), ("LogSoftmax",)),
    Case(
        "mse_loss", lambda m, x, t: m.F.mse_loss(x, t), (S(3), S(3)), ("MseLoss", "MseLossBackward")
    ),
    Case(
        "mse_loss_sum",
        lambda m, x, t: m.F.mse_loss(x, t, reduction="sum"),
        (S(2, 3), S(2, 3, rg=False)),
        ("MseLoss",),
    ),
    Case(
        "mse_loss_none",
        lambda m, x, t: m.F.mse_loss(x, t, reduction="none"),
        (S(2, 3), S(2, 3)),
        ("MseLoss",),
    ),
    Case("l1_loss", lambda m, x, t: m.F.l1_loss(x, t), (S(3), S(3)), ("Sub", "Abs", "Mean")),
    Case(
        "l1_loss_sum",
        lambda m, x, t: m.F.l1_loss(x, t, reduction="sum"),
        (S(2, 3), S(2, 3, rg=False)),
        (),
    ),
    Case(
        "l1_loss_none", lambda m, x, t: m.F.l1_loss(x, t, reduction="none"), (S(2, 3), S(2, 3)), ()
    ),
    Case(
        "bce",
        lambda m, p, t: m.F.binary_cross_entropy(p, t),
        (S(4, domain="unit"), S(4, domain="unit", rg=False)),
        ("BinaryCrossEntropy", "BceBackward"),
    ),
    Case(
        "bce_target_grad",
        lambda m, p, t: m.F.binary_cross_entropy(p, t, reduction="sum"),
        (S(2, 2, domain="unit"), S(2, 2, domain="unit")),
        ("BinaryCrossEntropy",),
    ),
    Case(
        "bce_none_weight",
        lambda m, p, t, w: m.F.binary_cross_entropy(p, t, weight=w, reduction="none"),
        (S(3, domain="unit"), S(3, domain="unit", rg=False), S(3, domain="pos", rg=False)),
        ("BinaryCrossEntropy",),
    ),
    Case(
        "bce_sigmoid",
        lambda m, x, t: m.F.binary_cross_entropy(x.sigmoid(), t),
        (S(4), V([0.0, 1.0, 1.0, 0.0], rg=False)),
        ("BinaryCrossEntropy", "Sigmoid"),
    ),
    Case(
        "bce_with_logits",
        lambda m, x, t: m.F.binary_cross_entropy_with_logits(x, t),
        (S(4), S(4, domain="unit", rg=False)),
        ("BinaryCrossEntropyWithLogits", "Sigmoid", "Sub", "DivScalar"),
    ),
    Case(
        "bce_with_logits_weights",
        lambda m, x, t, w, pw: m.F.binary_cross_entropy_with_logits(
            x, t, weight=w, pos_weight=pw, reduction="sum"
        ),
        (
            S(2, 3),
            S(2, 3, domain="unit"),
            S(3, domain="pos", rg=False),
            S(3, domain="pos", rg=False),
        ),
        ("BinaryCrossEntropyWithLogits", "Softplus"),
    ),
    Case(
        "bce_with_logits_none",
        lambda m, x, t: m.F.binary_cross_entropy_with_logits(x, t, reduction="none"),
        (S(3), S(3, domain="unit")),
        ("BinaryCrossEntropyWithLogits",),
    ),
    Case(
        "cross_entropy",
        lambda m, x: m.F.cross_entropy(x, m.tensor([0, 2])),
        (S(2, 3),),
        ("LogSoftmax", "NllLoss"),
    ),
    Case(
        "cross_entropy_sum",
        lambda m, x: m.F.cross_entropy(x, m.tensor([1, 1, 0]), reduction="sum"),
        (S(3, 2),),
        ("NllLoss",),
    ),
    Case("cross_entropy_1d", lambda m, x: m.F.cross_entropy(x, m.tensor(1)), (S(3),), ("NllLoss",)),
    Case(
        "cross_entropy_weight",
        lambda m, x, w: m.F.cross_entropy(x, m.tensor([0, 2, 2]), weight=w),
        (S(3, 3), S(3, domain="pos", rg=False)),
        ("NllLoss",),
    ),
    Case(
        "cross_entropy_smoothing",
        lambda m, x: m.F.cross_entropy(x, m.tensor([0, 2, 1]), label_smoothing=0.1),
        (S(3, 3),),
        ("NllLoss", "MaskedFill", "MulScalar", "Div"),
    ),
    Case(
        "cross_entropy_smoothing_weight_ignore",
        lambda m, x, w: m.F.cross_entropy(x, m.tensor([0, -100, 1]), weight=w, label_smoothing=0.3),
        (S(3, 3), S(3, domain="pos", rg=False)),
        ("NllLoss", "MaskedFill", "MulScalar", "Div"),
    ),
    Case(
        "cross_entropy_smoothing_none",
        lambda m, x: m.F.cross_entropy(x, m.tensor(2), label_smoothing=0.5, reduction="none"),
        (S(3),),
        ("NllLoss", "MulScalar"),
    ),
    Case(
        "cross_entropy_probs_smoothing",
        lambda m, x, p: m.F.cross_entropy(x, p.softmax(1), label_smoothing=0.2),
        (S(2, 3), S(2, 3)),
        ("DivScalar", "MulScalar", "AddScalar"),
    ),
    Case(
        "cross_entropy_probs",
        lambda m, x, p: m.F.cross_entropy(x, p.softmax(1)),
        (S(2, 3), S(2, 3, rg=False)),
        ("DivScalar",),
    ),
    Case(
        "cross_entropy_probs_1d",
        lambda m, x, p: m.F.cross_entropy(x, p.softmax(0)),
        (S(3), S(3)),
        ("DivScalar",),
    ),
    Case(
        "cross_entropy_probs_none",
        lambda m, x, p: m.F.cross_entropy(x, p.softmax(1), reduction="none"),
        (S(2, 3), S(2, 3, rg=False)),
        (),
    ),
    Case(
        "cross_entropy_probs_sum_weight",
        lambda m, x, p, w: m.F.cross_entropy(x, p.softmax(1), weight=w, reduction="sum"),
        (S(2, 3), S(2, 3, rg=False), S(3, domain="pos", rg=False)),
        (),
    ),
    Case(
        "nll_loss",
        lambda m, x: m.F.nll_loss(x.log_softmax(1), m.tensor([1, 0])),
        (S(2, 3),),
        ("NllLoss", "NllLossBackward"),
    ),
    Case(
        "nll_loss_none",
        lambda m, x: m.F.nll_loss(x, m.tensor([1, 0, 2]), reduction="none"),
        (S(3, 3),),
        ("NllLoss",),
    ),
    Case(
        "nll_loss_ignore",
        lambda m, x: m.F.nll_loss(x, m.tensor([1, -100, 2])),
        (S(3, 3),),
        ("NllLoss",),
    ),
    # ---------------------------------------------------------- compositions
    Case("tutorial", lambda m, x: ((x + 2) * (x + 2) * 3).mean(), (S(2, 2),), ()),
    Case(
        "mlp",
        lambda m, x, w, b: (m.F.linear(x, w, b).tanh() ** 2).sum(),
        (S(3, 2), S(4, 2), S(4)),
        (),
    ),
    Case("sigmoid_of_sum", lambda m, x, w: (x * w).sum().sigmoid(), (S(3), S(3)), ()),
]

# the tutorial ops of issue 12
CASES += [
    Case("unflatten", lambda m, x: x.unflatten(1, (2, 3)) * 2, (S(2, 6),), ("View",)),
    Case("unflatten_fn", lambda m, x: m.unflatten(x.t(), 0, (-1, 2)) * 2, (S(2, 4),), ("View",)),
    Case("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3)), (S(3),), ("Expand",)),
    Case("broadcast_to_method", lambda m, x: x.broadcast_to(2, -1, 3), (S(1, 3),), ("Expand",)),
    Case("tril", lambda m, x: x.tril(), (S(3, 4),), ("Tril",)),
    Case("tril_diag", lambda m, x: m.tril(x, diagonal=-1), (S(2, 3, 3),), ("Tril",)),
    Case("triu", lambda m, x: m.triu(x, 1), (S(4, 3),), ("Triu",)),
    Case("tril_inplace", lambda m, x: (x * 1).tril_(1), (S(3, 3),), ("Tril",)),
    Case("triu_inplace", lambda m, x: (x * 1).triu_(), (S(3, 3),), ("Triu",)),
    Case("hstack", lambda m, x, w: m.hstack([x, w]), (S(3), S(2)), ("Cat",)),
    Case("hstack_2d", lambda m, x, w: m.hstack((x, w)), (S(2, 3), S(2, 1)), ("Cat",)),
    Case("vstack", lambda m, x, w: m.vstack([x, w]), (S(3), S(2, 3)), ("Cat", "Unsqueeze")),
    Case("row_stack", lambda m, x, s: m.row_stack([s, s * 2]), (S(2), S()), ("Cat", "View")),
    Case("column_stack", lambda m, x, w: m.column_stack([x, w]), (S(3), S(3, 2)), ("Cat",)),
    Case("cumprod", lambda m, x: x.cumprod(1), (S(2, 4),), ("Cumprod",)),
    Case("cumprod_fn", lambda m, x: m.cumprod(x, dim=0), (S(4),), ("Cumprod",)),
    Case(
        "cumprod_zeros",
        lambda m, x: m.cumprod(x, -1) * m.arange(1.0, 6.0, dtype=x.dtype),
        (V([[0.5, 0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 0.0, 4.0, 0.25]]),),
        ("Cumprod",),
    ),
    Case("roll", lambda m, x: x.roll(1, 1) * m.arange(6.0, dtype=x.dtype), (S(2, 6),), ("Roll",)),
    Case(
        "roll_flat",
        lambda m, x: m.roll(x, -3) * m.arange(6.0, dtype=x.dtype).view(2, 3),
        (S(2, 3),),
        ("Roll",),
    ),
    Case("roll_dims", lambda m, x: m.roll(x, (1, -2), (0, 1)) ** 2, (S(3, 4),), ("Roll",)),
    Case(
        "layer_norm",
        lambda m, x, w, b: _nf(m).layer_norm(x, (3,), w, b),
        (S(2, 3), S(3), S(3)),
        ("NativeLayerNorm", "NativeLayerNormBackward"),
    ),
    Case(
        "layer_norm_2d",
        lambda m, x: _nf(m).layer_norm(x, (2, 3)) ** 2,
        (S(2, 2, 3),),
        ("NativeLayerNorm",),
    ),
    Case(
        "batch_norm_train",
        lambda m, x, w, b: _nf(m).batch_norm(x, None, None, w, b, True) ** 2,
        (S(4, 3), S(3), S(3)),
        ("NativeBatchNorm", "NativeBatchNormBackward"),
    ),
    Case(
        "batch_norm_eval",
        lambda m, x, w: (
            _nf(m).batch_norm(
                x, m.zeros(2, dtype=x.dtype), m.ones(2, dtype=x.dtype) * 2, w, None, False
            )
            ** 2
        ),
        (S(3, 2, 2), S(2)),
        ("NativeBatchNorm", "NativeBatchNormBackward"),
    ),
    Case(
        "group_norm",
        lambda m, x, w, b: _nf(m).group_norm(x, 2, w, b) ** 2,
        (S(2, 4, 3), S(4), S(4)),
        ("NativeGroupNorm",),
    ),
    Case("atan2", lambda m, x, w: m.atan2(x, w), (S(2, 3), S(3, domain="nonzero")), ("Atan2",)),
    Case("arctan2", lambda m, x, w: x.arctan2(w), (S(3, domain="nonzero"), S(3)), ("Atan2",)),
    Case(
        "atan2_inplace",
        lambda m, x, w: (x * 1).atan2_(w),
        (S(3), S(3, domain="nonzero")),
        ("Atan2",),
    ),
]

# trace, std_mean / var_mean, cdist (adcli/autograd/statsops.py)
CASES += [
    Case("trace", lambda m, x: m.trace(x), (S(3, 4),), ("Trace",)),
    Case("trace_method", lambda m, x: x.trace() * 2, (S(3, 3),), ("Trace",)),
    Case("std_mean", lambda m, x: m.std_mean(x, 1), (S(2, 4),), ("StdMean",)),
    Case("std_mean_all", lambda m, x: m.std_mean(x), (S(3, 2),), ("StdMean",)),
    Case("var_mean", lambda m, x: m.var_mean(x, 0, keepdim=True), (S(3, 2),), ("VarMean",)),
    Case(
        "var_mean_correction",
        lambda m, x: m.var_mean(x, [0, 1], correction=0),
        (S(2, 3),),
        ("VarMean",),
    ),
    Case(
        "cdist",
        lambda m, a, b: m.cdist(a, b),
        (S(3, 2), S(4, 2)),
        ("Cdist", "CdistBackward"),
        second=False,
    ),
    Case(
        "cdist_p1", lambda m, a, b: m.cdist(a, b, p=1), (S(3, 2), S(2, 2)), ("Cdist",), second=False
    ),
    Case(
        "cdist_p3", lambda m, a, b: m.cdist(a, b, 3), (S(2, 3), S(2, 3)), ("Cdist",), second=False
    ),
    Case(
        "cdist_mm",
        lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        (S(3, 2), S(4, 2)),
        ("EuclideanDist",),
    ),
]

# scatter and index_* writes, kink losses, logcumsumexp, fmod, clamp_min/clamp_max
_LOSS_X = V([[0.3, -1.7, 2.2], [0.05, 1.2, -0.6]])
_LOSS_T = V([[-0.1, 0.4, 0.5], [1.5, 0.9, -2.5]])
CASES += [
    Case(
        "scatter_src",
        lambda m, x, s: x.scatter(1, m.tensor([[2, 0], [1, 2]]), s),
        (S(2, 3), S(2, 2)),
        ("ScatterSrc", "ScatterValue", "Gather"),
    ),
    Case(
        "scatter_value_inplace",
        lambda m, x: (x * 1).scatter_(0, m.tensor([[1, 0, 1]]), 2.5),
        (S(2, 3),),
        ("ScatterValue",),
    ),
    Case(
        "scatter_add",
        lambda m, x, s: m.scatter_add(x, 1, m.tensor([[0, 0, 1]]), s),
        (S(2, 3), S(1, 3)),
        ("ScatterAddSrc", "Gather"),
    ),
    Case(
        "index_fill",
        lambda m, x: x.index_fill(1, m.tensor([0, 2]), -1.0),
        (S(2, 3),),
        ("IndexFill",),
    ),
    Case(
        "index_fill_tensor",
        lambda m, x, v: (x * 1).index_fill_(0, m.tensor([1]), v * 2),
        (S(2, 3), S()),
        ("IndexFillTensor", "IndexFill"),
    ),
    Case(
        "index_add",
        lambda m, x, s: m.index_add(x, 1, m.tensor([2, 2]), s, alpha=1.5),
        (S(2, 3), S(2, 2)),
        ("IndexAdd",),
    ),
    Case(
        "index_copy",
        lambda m, x, s: x.index_copy(0, m.tensor([1]), s * s),
        (S(2, 3), S(1, 3)),
        ("IndexCopy", "IndexFill"),
    ),
    Case(
        "index_select",
        lambda m, x: x.index_select(1, m.tensor([2, 0, 2])) * x.index_select(1, m.tensor([1])),
        (S(2, 3),),
        ("IndexSelect", "IndexAdd"),
    ),
    Case(
        "index_put_accumulate",
        lambda m, x, v: x.index_put((m.tensor([0, 0]),), v * v, accumulate=True),
        (S(2, 3), S(3)),
        ("IndexPutAccumulate",),
    ),
    Case(
        "smooth_l1_loss",
        lambda m, x, t: m.F.smooth_l1_loss(x, t, reduction="sum", beta=0.8),
        (_LOSS_X, _LOSS_T),
        ("SmoothL1Loss", "SmoothL1LossBackward"),
    ),
    Case(
        "huber_loss",
        lambda m, x, t: m.F.huber_loss(x * x, t, delta=0.7),
        (_LOSS_X, _LOSS_T),
        ("HuberLoss", "HuberLossBackward"),
    ),
    Case("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), (S(2, 4),), ("Logcumsumexp",)),
    Case("fmod", lambda m, x: m.fmod(x, 0.7), (S(3),), ("Fmod",)),
    Case(
        "fmod_tensor",
        lambda m, x, w: (x * 3).fmod_(w),
        (S(3), S(3, domain="nonzero")),
        ("FmodTensor",),
    ),
    Case("clamp_min_method", lambda m, x: x.clamp_min(0.1), (S(4),), ("ClampMin",)),
    Case("clamp_max_inplace", lambda m, x: (x * 1).clamp_max_(-0.1), (S(4),), ("ClampMax",)),
    Case("clamp_min_tensor", lambda m, x, w: m.clamp_min(x, w), (S(4), S(4)), ("ClampMinTensor",)),
    Case("clamp_max_tensor", lambda m, x, w: x.clamp_max(w), (S(2, 4), S(4)), ("ClampMaxTensor",)),
]

CASE_IDS = [c.id for c in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS), "duplicate case ids"


def test_table_covers_the_registry() -> None:
    covered = {name for c in CASES for name in c.covers}
    missing = sorted(set(Function.registry) - covered)
    assert not missing, f"Function classes without a case in CASES: {missing}"
    unknown = sorted(covered - set(Function.registry))
    assert not unknown, f"CASES name unknown Function classes: {unknown}"


# ************************************************************ finite differences

# Cases whose points are kinks or ties (a subgradient, not a derivative, is the
# answer there) or that raise by design: the torch comparison checks them.
NO_FD = {
    # finite differences see the sample move with mean; PyTorch's gradient is zero
    "normal_mean",
    "normal_std",
    "normal_both",
    "maximum_ties",
    "minimum_ties",
    "abs_at_0",
    "relu_at_0",
    "leaky_relu_slope",
    "prelu_at_0",
    "clamp_bounds",
    "sign",
    "sgn",
    "round",
    "max_ties",
    "min_ties",
    "amax_ties",
    "amin_ties",
    "topk_ties",
    "norm_inf_ties",
    "norm_at_0",
    "norm_p1_at_0",
    "inplace_view_cols",
    "clamp_tensors",
    "floordiv",  # no derivative by design: backward raises, as in PyTorch
    "rfloordiv",
    "rremainder",
    "embedding_padding",  # the padding row gets no gradient by design, as in PyTorch
    "inverse_trig_edges",  # the ends of asin's domain: infinite slopes, NaN beyond
}
# Functions whose backward raises by design (PyTorch's NotImplemented grad_fn)
# NotImplementedOp raises; a normal sample's gradient is zero by PyTorch's definition
NO_DERIVATIVE = {"NotImplementedOp", "Normal", "NormalStd", "NormalBoth", "CdistBackward"}
# dtype-changing cases: float32 rounding needs a larger step
LOOSE = {"to_float64", "double", "to_float32", "to_same"}


def _float_outputs(y: Any) -> list[Tensor]:
    if hasattr(y, "values") and hasattr(y, "indices") and not callable(y.values):
        y = [y.values, y.indices]
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    return [t for t in ys if t.data_.dtype.kind == "f"]


def _leaves(case: Case, arrays: list[np.ndarray], dtype: str) -> list[Tensor]:
    out = []
    for spec, arr in zip(case.inputs, arrays, strict=False):
        t = Tensor._make(arr.astype(spec.dtype or dtype))
        if spec.rg:
            t.requires_grad_()
        out.append(t)
    return out


def _loss(case: Case, arrays: list[np.ndarray], dtype: str, vs: list[np.ndarray]) -> float:
    with grad_mode.no_grad():
        ys = _float_outputs(case.fn(AM, *_leaves(case, arrays, dtype)))
    return float(sum(np.sum(y.data_.astype(np.float64) * v) for y, v in zip(ys, vs, strict=False)))


def _first(
    case: Case, arrays: list[np.ndarray], dtype: str, vs: list[np.ndarray], create_graph: bool
) -> tuple[list[Tensor], list[Tensor | None]]:
    leaves = _leaves(case, arrays, dtype)
    ys = [y for y in _float_outputs(case.fn(AM, *leaves)) if y.requires_grad]
    diff = [t for t in leaves if t.requires_grad]
    total = None
    for y, v in zip(ys, vs, strict=False):
        term = (y * Tensor._make(v.astype(y.data_.dtype))).sum()
        total = term if total is None else total + term
    if total is None:
        return diff, [None] * len(diff)
    return diff, list(engine.grad(total, diff, create_graph=create_graph, allow_unused=True))


def _as_array(g: Tensor | None, like: Tensor) -> np.ndarray:
    return np.zeros(like.data_.shape) if g is None else g.data_.astype(np.float64)


def check_finite_differences(case: Case, seed: int) -> None:
    """First and second derivatives of sum(y * v) against central differences."""
    rng = np.random.default_rng(seed)
    arrays = [draw_input(spec, rng) for spec in case.inputs]
    dtype = "float64" if "float64" in case.dtypes else case.dtypes[0]
    loose = case.id in LOOSE
    eps, tol = (
        (1e-2, {"rtol": 1e-3, "atol": 1e-4}) if loose else (1e-6, {"rtol": 1e-5, "atol": 1e-6})
    )
    with grad_mode.no_grad():
        ys = _float_outputs(case.fn(AM, *_leaves(case, arrays, dtype)))
    vs = [rng.standard_normal(y.data_.shape) for y in ys]
    diff_idx = [i for i, spec in enumerate(case.inputs) if spec.rg]
    if not diff_idx:
        return
    diff, grads = _first(case, arrays, dtype, vs, create_graph=True)
    # first derivatives
    for k, i in enumerate(diff_idx):
        numeric = np.zeros(arrays[i].shape)
        for j in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][j] += eps
            minus[i][j] -= eps
            numeric[j] = (_loss(case, plus, dtype, vs) - _loss(case, minus, dtype, vs)) / (2 * eps)
        np.testing.assert_allclose(
            _as_array(grads[k], diff[k]), numeric, err_msg=f"{case.id}: d/d input {i}", **tol
        )
    if loose or not case.second:
        return
    # second derivatives: grad of (g . u) against differences of g
    us = [rng.standard_normal(t.data_.shape) for t in diff]
    live = [(g, u) for g, u in zip(grads, us, strict=False) if g is not None and g.requires_grad]
    if live:
        s = None
        for g, u in live:
            term = (g * Tensor._make(u)).sum()
            s = term if s is None else s + term
        hu = engine.grad(s, diff, allow_unused=True)
    else:
        hu = [None] * len(diff)
    for k, i in enumerate(diff_idx):
        numeric = np.zeros(arrays[i].shape)
        for j in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][j] += eps
            minus[i][j] -= eps
            _, gp = _first(case, plus, dtype, vs, create_graph=False)
            _, gm = _first(case, minus, dtype, vs, create_graph=False)
            numeric[j] = sum(
                float(np.sum((_as_array(a, t) - _as_array(b, t)) * u))
                for a, b, t, u in zip(gp, gm, diff, us, strict=False)
            ) / (2 * eps)
        np.testing.assert_allclose(
            _as_array(hu[k], diff[k]),
            numeric,
            err_msg=f"{case.id}: second derivative, input {i}",
            rtol=1e-4,
            atol=1e-5,
        )


def test_finite_differences_cover_the_registry() -> None:
    covered = {name for c in CASES if c.id not in NO_FD for name in c.covers}
    missing = sorted(set(Function.registry) - covered - NO_DERIVATIVE)
    assert not missing, f"Function classes without a finite-difference case: {missing}"


def _fd_params() -> list[Any]:
    out = []
    for c in CASES:
        if c.id in NO_FD:
            continue
        fixed = all(spec.values is not None for spec in c.inputs)
        for seed in (0,) if fixed else (0, 1, 2):
            out.append(pytest.param(c, seed, id=f"{c.id}-{seed}", marks=c.marks))
    return out


@pytest.mark.parametrize(("case", "seed"), _fd_params())
def test_finite_differences(case: Case, seed: int) -> None:
    check_finite_differences(case, seed)


def test_finite_differences_catch_a_wrong_gradient() -> None:
    from adcli.autograd import functions as F

    bad = Case("bad", lambda m, x: m.sin(x), (S(3),), ())
    orig = F.Sin.__dict__["backward"]  # the staticmethod itself (restored as such below)
    F.Sin.backward = staticmethod(lambda ctx, g: (g * m_cos(ctx),))  # type: ignore
    try:
        with pytest.raises(AssertionError):
            check_finite_differences(bad, 0)
    finally:
        F.Sin.backward = orig  # type: ignore


def test_finite_differences_catch_a_wrong_second_derivative() -> None:
    from adcli.autograd import functions as F

    case = next(c for c in CASES if c.id == "tanh")
    orig = F.TanhBackward.__dict__["backward"]  # the staticmethod (restored as such below)

    def wrong(ctx: Any, gg: Tensor) -> tuple[Any, ...]:
        gg_g, gg_r = orig.__func__(ctx, gg)
        return gg_g, (gg_r * 1.01 if gg_r is not None else None)

    F.TanhBackward.backward = staticmethod(wrong)  # type: ignore[method-assign]
    try:
        with pytest.raises(AssertionError, match="second derivative"):
            check_finite_differences(case, 0)
    finally:
        F.TanhBackward.backward = orig  # type: ignore[method-assign]


def m_cos(ctx: Any) -> Tensor:
    (a,) = ctx.saved_tensors
    return T.cos(a) * 1.01


# ************************************************************ long chains


def test_million_node_chain_forward_and_backward() -> None:
    """No recursion anywhere: building, differentiating and freeing a 1,000,000-node
    chain works (the cyclic collector is paused: the graph has no cycles to find)."""
    x = T.tensor(1.0, requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()
    start = time.perf_counter()
    try:
        y = x
        for _ in range(1_000_000):
            y = y + x
        y.backward()
        assert x.grad.item() == 1_000_001.0
        del y
    finally:
        if enabled:
            gc.enable()
    del start  # no timing assertion: benchmarks/ measures speed


def test_long_chain_with_saved_tensors_and_second_order() -> None:
    x = T.tensor(1.0, dtype=T.dtypes.float64, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0000001
    (g,) = engine.grad(y, [x], create_graph=True)
    assert abs(g.item() - 1.0000001**20_000) < 1e-9
    (h,) = engine.grad(g * x, [x])
    assert abs(h.item() - 1.0000001**20_000) < 1e-9
