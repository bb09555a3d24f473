"""Every operation of the op table compared with PyTorch, case by case.

The table `CASES` is keyed by the registry (`Function.registry`): each case
names the Function classes it exercises (`covers`), a test checks that every
registered class is covered (a new op without a case fails) and each case
checks that the classes it names really ran.  A case is a function usable with
both libraries, `fn(m, *inputs)`, where `m` is torch or adcli (`m.F` is
`torch.nn.functional` or adcli's ops), run in float32 and float64, comparing:

- forward values (rtol 1e-5 float32, 1e-10 float64), shape, dtype;
- `grad_fn.name()`, `requires_grad`, `is_leaf` and `repr()` of every output;
- first gradients: `grad((y * v).sum(), inputs, create_graph=True)` for a random v;
- second derivatives: `grad((g * u).sum(), inputs)` for a random u (grad of grad);
- whether each first gradient itself requires grad (PyTorch's AG10 behaviour).

Hypothesis varies shapes (incl. broadcasting and empty) and values for the
elementwise ops.  Type promotion and shape-mismatch error texts have their own
small tables at the end.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adcli.autograd import engine
from adcli.autograd import ops as T
from adcli.autograd.node import Function
from adcli.autograd.tensor import Tensor

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

torch.set_num_threads(1)


# ************************************************************ the two libraries


class _Torch:
    """`m` for PyTorch: torch names, `m.F` = torch.nn.functional."""

    F = torch.nn.functional
    name = "torch"

    def __getattr__(self, item: str) -> Any:
        return getattr(torch, item)


class _Ad:
    """`m` for adcli: the ops module, `m.F` = the ops module too."""

    F = T
    name = "adcli"
    float32 = T.dtypes.float32
    float64 = T.dtypes.float64
    int64 = T.dtypes.int64
    int32 = T.dtypes.int32
    bool = T.dtypes.bool_

    def __getattr__(self, item: str) -> Any:
        return getattr(T, item)


TM, AM = _Torch(), _Ad()
DTYPES = ("float32", "float64")


def _tol(dtype: str, grad: bool = False) -> dict[str, float]:
    if dtype == "float32":
        return {"rtol": 1e-4, "atol": 1e-5} if grad else {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-9, "atol": 1e-11} if grad else {"rtol": 1e-10, "atol": 1e-12}


# ************************************************************ inputs


@dataclass(frozen=True)
class In:
    """One input: a shape and a value domain, or fixed values."""

    shape: tuple[int, ...] = ()
    domain: str = "any"  # any | pos | unit | nonzero | int
    rg: bool = True  # requires_grad
    values: Any = None  # fixed values instead of random ones
    dtype: str | None = None  # fixed dtype instead of the case's dtype


def _draw(spec: In, rng: np.random.Generator) -> np.ndarray:
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


def _make_pair(arr: np.ndarray, dtype: str, rg: bool) -> tuple[Any, Tensor]:
    a = arr.astype(dtype)
    tt = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=rg and a.dtype.kind == "f")
    at = Tensor._make(a.copy())
    if rg and a.dtype.kind == "f":
        at.requires_grad_()
    return tt, at


# ************************************************************ comparing


def _outputs(y: Any) -> list[Any]:
    if hasattr(y, "values") and hasattr(y, "indices") and not callable(y.values):
        return [y.values, y.indices]
    if isinstance(y, (tuple, list)):
        return list(y)
    return [y]


def _np(t: Any) -> np.ndarray:
    if isinstance(t, Tensor):
        return np.asarray(t.data_)
    return t.detach().numpy(force=True)


def _close(a: np.ndarray, b: np.ndarray, what: str, tol: dict[str, float]) -> None:
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    np.testing.assert_allclose(a, b, equal_nan=True, err_msg=what, **tol)


def _fn_name(t: Any) -> str | None:
    return None if t.grad_fn is None else t.grad_fn.name()


def graph_signature(node: Any, depth: int = 8) -> Any:
    """The graph under a grad_fn as nested (name, children...) tuples, None for a
    missing edge; AccumulateGrad leaves are named by position only."""
    if node is None:
        return None
    if depth == 0:
        return "..."
    return (node.name(),) + tuple(
        (graph_signature(n, depth - 1), nr) for n, nr in node.next_functions
    )


def compare_tensor(a: Tensor, t: Any, what: str, dtype: str, grad: bool = False,
                   meta: bool = True) -> None:
    """Values, dtype and (with meta) grad_fn/requires_grad/is_leaf/repr."""
    assert str(a.dtype) == str(t.dtype), f"{what}: dtype {a.dtype} != torch {t.dtype}"
    _close(_np(a), _np(t), what, _tol(dtype, grad))
    if meta:
        assert _fn_name(a) == _fn_name(t), f"{what}: grad_fn {_fn_name(a)} != {_fn_name(t)}"
        assert a.requires_grad == t.requires_grad, f"{what}: requires_grad"
        ga, gt = graph_signature(a.grad_fn), graph_signature(t.grad_fn)
        assert ga == gt, f"{what}: graph (next_functions)\n{ga}\n!=\n{gt}"
        assert a.is_leaf == t.is_leaf, f"{what}: is_leaf"
        if np.array_equal(_np(a), _np(t), equal_nan=True) or dtype == "float64":
            assert repr(a) == repr(t), f"{what}: repr\n{a!r}\n!=\n{t!r}"


@contextlib.contextmanager
def track_functions() -> Iterator[set[str]]:
    """The names of the Function classes applied inside the block."""
    seen: set[str] = set()
    orig = Function.__dict__["apply"]

    def apply(cls: type[Function], *args: Any, **kwargs: Any) -> Any:
        seen.add(cls.__name__)
        return orig.__func__(cls, *args, **kwargs)

    Function.apply = classmethod(apply)  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Function.apply = orig  # type: ignore[method-assign]


def _weighted_sum(ys: list[Any], ws: list[Any]) -> Any:
    total = None
    for y, w in zip(ys, ws):
        term = (y * w).sum()
        total = term if total is None else total + term
    return total


class _BothRaised(Exception):
    """Both libraries raised the same error at the same step."""


def _both(tcall: Callable[[], Any], acall: Callable[[], Any], step: str) -> tuple[Any, Any]:
    """Run a step in torch and in adcli; when torch raises, adcli must raise the same."""
    try:
        tr = tcall()
    except Exception as e:  # noqa: BLE001
        with pytest.raises(Exception) as ae:
            acall()
        assert isinstance(ae.value, type(e)), f"{step}: {ae.value!r} != {e!r}"
        assert str(ae.value) == str(e), f"{step}: error text"
        raise _BothRaised from None
    return tr, acall()


def run_case(fn: Callable[..., Any], specs: tuple[In, ...], dtype: str, seed: int = 0,
             second: bool = True, arrays: list[np.ndarray] | None = None) -> set[str]:
    """Run `fn` in both libraries on the same inputs and compare everything."""
    rng = np.random.default_rng(seed)
    if arrays is None:
        arrays = [_draw(s, rng) for s in specs]
    t_in, a_in = [], []
    for s, arr in zip(specs, arrays):
        tt, at = _make_pair(arr, s.dtype or dtype, s.rg)
        t_in.append(tt)
        a_in.append(at)
    with track_functions() as seen:
        try:
            _compare_run(fn, t_in, a_in, dtype, rng, second)
        except _BothRaised:
            pass
    return seen


def _compare_run(fn: Callable[..., Any], t_in: list[Any], a_in: list[Tensor], dtype: str,
                 rng: np.random.Generator, second: bool) -> None:
    ty, ay = _both(lambda: _outputs(fn(TM, *t_in)), lambda: _outputs(fn(AM, *a_in)), "forward")
    assert len(ay) == len(ty), "number of outputs"
    for i, (a, t) in enumerate(zip(ay, ty)):
        compare_tensor(a, t, f"output {i}", dtype, meta=True)
    # first gradients
    t_diff = [t for t in t_in if t.requires_grad]
    a_diff = [a for a in a_in if a.requires_grad]
    pairs = [(a, t) for a, t in zip(ay, ty) if t.requires_grad and t.dtype.is_floating_point]
    if not pairs or not t_diff:
        return
    vs = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    tv = [torch.tensor(v, dtype=t.dtype) for v, (_, t) in zip(vs, pairs)]
    av = [Tensor._make(v.astype(_np(a).dtype)) for v, (a, _) in zip(vs, pairs)]
    tl = _weighted_sum([t for _, t in pairs], tv)
    al = _weighted_sum([a for a, _ in pairs], av)
    tg, ag = _both(
        lambda: torch.autograd.grad(tl, t_diff, create_graph=True, allow_unused=True),
        lambda: engine.grad(al, a_diff, create_graph=True, allow_unused=True),
        "first gradients",
    )
    for i, (a, t) in enumerate(zip(ag, tg)):
        if t is None:
            assert a is None or not np.any(_np(a)), f"grad {i}: torch None"
            continue
        assert a is not None, f"grad {i}: adcli None, torch {t}"
        compare_tensor(a, t, f"grad {i}", dtype, grad=True, meta=False)
        assert a.requires_grad == t.requires_grad, f"grad {i}: requires_grad (create_graph)"
        assert _fn_name(a) == _fn_name(t), f"grad {i}: grad_fn {_fn_name(a)} != {_fn_name(t)}"
    if not second:
        return
    # second derivatives (grad of grad)
    gpairs = [(a, t) for a, t in zip(ag, tg) if t is not None and t.requires_grad]
    if not gpairs:
        return
    us = [rng.standard_normal(tuple(t.shape)) for _, t in gpairs]
    tu = [torch.tensor(u, dtype=t.dtype) for u, (_, t) in zip(us, gpairs)]
    au = [Tensor._make(u.astype(_np(a).dtype)) for u, (a, _) in zip(us, gpairs)]
    ts = _weighted_sum([t for _, t in gpairs], tu)
    as_ = _weighted_sum([a for a, _ in gpairs], au)
    tgg, agg = _both(
        lambda: torch.autograd.grad(ts, t_diff, allow_unused=True),
        lambda: engine.grad(as_, a_diff, allow_unused=True),
        "second derivatives",
    )
    for i, (a, t) in enumerate(zip(agg, tgg)):
        tn = np.zeros(tuple(t_diff[i].shape)) if t is None else _np(t)
        an = np.zeros(a_diff[i].data_.shape) if a is None else _np(a)
        _close(an.astype(np.float64), tn.astype(np.float64), f"grad of grad {i}",
               _tol(dtype, grad=True))


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
    Case("div", lambda m, x, w: x / w, (S(3), S(3, domain="nonzero")), ("Div",)),
    Case("div_scalar", lambda m, x: x / 2, (S(3),), ("Div",)),
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
    Case("pow_tensor_bcast", lambda m, x, w: m.pow(x, w), (S(2, 3, domain="pos"), S(3)),
         ("PowTensor",)),
    Case("pow_scalar_base", lambda m, x: 2**x, (S(3),), ("PowScalarBase",)),
    Case("pow_scalar_base_fn", lambda m, x: m.pow(1.5, x), (S(2, 2),), ("PowScalarBase",)),
    Case("neg", lambda m, x: -x, (S(3),), ("Neg",)),
    Case("neg_method", lambda m, x: x.neg(), (S(2, 2),), ("Neg",)),
    Case("maximum", lambda m, x, w: m.maximum(x, w), (S(4), S(4)), ("Maximum",)),
    Case("maximum_bcast", lambda m, x, w: m.maximum(x, w), (S(2, 3), S(3)), ("Maximum",)),
    Case("maximum_ties", lambda m, x, w: m.maximum(x, w),
         (V([1.0, 2.0, 3.0]), V([1.0, 0.0, 3.0])), ("Maximum",)),
    Case("max_binary", lambda m, x, w: m.max(x, w), (S(3), S(3)), ("Maximum",)),
    Case("minimum", lambda m, x, w: m.minimum(x, w), (S(4), S(4)), ("Minimum",)),
    Case("minimum_ties", lambda m, x, w: m.minimum(x, w),
         (V([1.0, 2.0, -3.0]), V([1.0, 0.0, -3.0])), ("Minimum",)),
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
    Case("tanh", lambda m, x: x.tanh(), (S(3),), ("Tanh", "TanhBackward")),
    Case("sigmoid", lambda m, x: x.sigmoid(), (S(3),), ("Sigmoid", "SigmoidBackward")),
    Case("sigmoid_fn", lambda m, x: m.sigmoid(x), (S(2, 2),), ("Sigmoid",)),
    Case("relu", lambda m, x: x.relu(), (S(5),), ("Relu", "ThresholdBackward")),
    Case("relu_at_0", lambda m, x: m.F.relu(x), (V([-1.0, 0.0, 2.0]),), ("Relu",)),
    Case("leaky_relu", lambda m, x: m.F.leaky_relu(x), (S(5),),
         ("LeakyRelu", "LeakyReluBackward")),
    Case("leaky_relu_slope", lambda m, x: m.F.leaky_relu(x, 0.2), (V([-1.0, 0.0, 2.0]),),
         ("LeakyRelu",)),
    Case("softplus", lambda m, x: m.F.softplus(x), (S(5),), ("Softplus", "SoftplusBackward")),
    Case("softplus_beta", lambda m, x: m.F.softplus(x, beta=2.0, threshold=1.0),
         (V([-1.0, 0.2, 0.4, 0.6, 2.0]),), ("Softplus",)),
    Case("clamp", lambda m, x: x.clamp(-0.5, 0.5), (S(6),), ("Clamp",)),
    Case("clamp_min", lambda m, x: x.clamp(min=0), (S(6),), ("Clamp",)),
    Case("clamp_max", lambda m, x: m.clamp(x, max=1), (S(6),), ("Clamp",)),
    Case("clamp_bounds", lambda m, x: x.clamp(0.0, 2.0), (V([-1.0, 0.0, 1.0, 2.0, 3.0]),),
         ("Clamp",)),
    Case("clamp_tensor_min", lambda m, x, lo: x.clamp(min=lo), (S(6), S()), ("ClampTensor",)),
    Case("clamp_tensors", lambda m, x, lo, hi: m.clamp(x, lo, hi),
         (S(2, 3), V([-0.5, 0.0, 0.2]), V([0.5, -0.1, 1.0])), ("ClampTensor",)),
    Case("clamp_tensor_max_const", lambda m, x, hi: x.clamp(max=hi), (S(2, 3), S(3, rg=False)),
         ("ClampTensor",)),
    Case("sign", lambda m, x: x.sign(), (V([-1.5, 0.0, 2.0]),), ("Sign",)),
    Case("floor", lambda m, x: x.floor(), (S(4),), ("Floor",)),
    Case("ceil", lambda m, x: x.ceil(), (S(4),), ("Ceil",)),
    Case("round", lambda m, x: x.round(), (V([-1.4, 0.3, 2.6, 2.5, -0.5]),), ("Round",)),
    Case("round_decimals", lambda m, x: x.round(decimals=1), (V([-1.44, 0.36, 2.61]),),
         ("RoundDecimals",)),
    Case("clone", lambda m, x: x.clone(), (S(3),), ("Clone",)),
    Case("clone_strided", lambda m, x: x.t().clone().reshape(3, 2), (S(2, 3),),
         ("Clone", "ReshapeAlias")),
    Case("to_float64", lambda m, x: x.to(m.float64), (S(3),), ("ToCopy",), ("float32",)),
    Case("double", lambda m, x: x.double() * x.double(), (S(3),), ("ToCopy", "Mul"),
         ("float32",)),
    Case("to_float32", lambda m, x: x.float(), (S(3),), ("ToCopy",), ("float64",)),
    Case("to_same", lambda m, x: x.to(m.float32), (S(3),), (), ("float32",)),
    # ---------------------------------------------------------- reductions
    Case("sum", lambda m, x: x.sum(), (S(2, 3),), ("Sum",)),
    Case("sum_0d", lambda m, x: x.sum(), (S(),), ("Sum",)),
    Case("sum_empty", lambda m, x: x.sum(), (S(0),), ("Sum",)),
    Case("sum_dim", lambda m, x: x.sum(dim=1), (S(2, 3),), ("SumDim",)),
    Case("sum_dim_keep", lambda m, x: x.sum(dim=1, keepdim=True), (S(2, 3),), ("SumDim",)),
    Case("sum_dim_neg", lambda m, x: x.sum(-1), (S(2, 3, 4),), ("SumDim",)),
    Case("sum_dims", lambda m, x: x.sum(dim=(0, 2)), (S(2, 3, 4),), ("SumDim",)),
    Case("sum_dim_1d", lambda m, x: x.sum(dim=0), (S(3),), ("SumDim",)),
    Case("mean", lambda m, x: x.mean(), (S(2, 3),), ("Mean",)),
    Case("mean_dim", lambda m, x: x.mean(dim=0), (S(2, 3),), ("MeanDim",)),
    Case("mean_dim_keep_neg", lambda m, x: x.mean(-2, keepdim=True), (S(2, 3, 2),),
         ("MeanDim",)),
    Case("mean_dims", lambda m, x: m.mean(x, (0, 1)), (S(2, 3, 2),), ("MeanDim",)),
    Case("prod", lambda m, x: x.prod(), (S(4, domain="nonzero"),), ("Prod",)),
    Case("prod_0d", lambda m, x: x.prod(), (S(),), ("Prod",)),
    Case("prod_one_zero", lambda m, x: x.prod(), (V([2.0, 0.0, 3.0, -1.0]),),
         ("Prod", "ProdOthers")),
    Case("prod_two_zeros", lambda m, x: x.prod(), (V([2.0, 0.0, 3.0, 0.0]),),
         ("Prod", "ProdOthers")),
    Case("prod_dim", lambda m, x: x.prod(1), (S(2, 3, domain="nonzero"),), ("ProdDim",)),
    Case("prod_dim_zero", lambda m, x: x.prod(0, keepdim=True),
         (V([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]),), ("ProdDim", "ProdOthers")),
    Case("max", lambda m, x: x.max(), (S(5),), ("Max",)),
    Case("max_ties", lambda m, x: x.max(), (V([1.0, 3.0, 3.0, -2.0, 3.0]),), ("Max",)),
    Case("min", lambda m, x: x.min(), (S(2, 3),), ("Min",)),
    Case("min_ties", lambda m, x: m.min(x), (V([[1.0, -3.0], [-3.0, 0.0]]),), ("Min",)),
    Case("max_dim", lambda m, x: x.max(dim=1), (S(3, 4),), ("MaxDim",)),
    Case("max_dim_keep", lambda m, x: m.max(x, 0, keepdim=True), (S(3, 4),), ("MaxDim",)),
    Case("max_dim_values", lambda m, x: x.max(dim=-1).values, (S(2, 3),), ("MaxDim",)),
    Case("min_dim", lambda m, x: x.min(dim=0), (S(3, 4),), ("MinDim",)),
    Case("min_dim_indices", lambda m, x: x.min(1)[1], (S(3, 4),), ("MinDim",)),
    Case("amax", lambda m, x: x.amax(), (S(3, 4),), ("Amax",)),
    Case("amax_dim", lambda m, x: m.amax(x, dim=1, keepdim=True), (S(3, 4),), ("Amax",)),
    Case("amax_ties", lambda m, x: x.amax(0), (V([[1.0, 2.0], [1.0, 0.0], [1.0, 2.0]]),),
         ("Amax",)),
    Case("amin", lambda m, x: x.amin(-1), (S(3, 4),), ("Amin",)),
    Case("amin_ties", lambda m, x: x.amin(), (V([[1.0, 0.0], [0.0, 5.0]]),), ("Amin",)),
    Case("norm", lambda m, x: x.norm(), (S(4),), ("Norm",)),
    Case("norm_fn", lambda m, x: m.norm(x), (S(2, 3),), ("Norm",)),
    Case("norm_p1", lambda m, x: x.norm(p=1), (S(4, domain="nonzero"),), ("Norm",)),
    Case("norm_inf", lambda m, x: x.norm(p=float("inf")), (S(4),), ("Norm",)),
    Case("norm_inf_ties", lambda m, x: x.norm(p=float("inf")), (V([1.0, -3.0, 3.0, 2.0]),),
         ("Norm",)),
    Case("norm_p3", lambda m, x: x.norm(p=3), (S(4),), ("Norm",)),
    Case("norm_dim", lambda m, x: x.norm(dim=1), (S(2, 3),), ("Norm",)),
    Case("norm_dim_keep", lambda m, x: x.norm(2, -1, keepdim=True), (S(2, 3),), ("Norm",)),
    Case("norm_at_0", lambda m, x: x.norm(), (V([0.0, 0.0, 0.0]),), ("Norm",), second=False),
    Case("norm_p1_at_0", lambda m, x: x.norm(p=1), (V([0.0, 1.0, -2.0]),), ("Norm",)),
    Case("logsumexp", lambda m, x: x.logsumexp(1), (S(2, 3),), ("Logsumexp",)),
    Case("logsumexp_keep", lambda m, x: m.logsumexp(x, 0, keepdim=True), (S(2, 3),),
         ("Logsumexp",)),
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
    Case("matmul_1d_2d", lambda m, v, a: v @ a, (S(3), S(3, 2)),
         ("Mm", "Unsqueeze", "SqueezeDimInplace")),
    Case("matmul_batched", lambda m, a, b: a @ b, (S(2, 2, 3), S(2, 3, 4)),
         ("Bmm", "Expand", "View", "UnsafeView")),
    Case("matmul_batched_bcast", lambda m, a, b: a @ b, (S(2, 1, 2, 3), S(3, 3, 4)),
         ("Bmm", "Expand", "Clone", "UnsafeView")),
    Case("matmul_batched_const", lambda m, a, b: a @ b, (S(2, 2, 3, rg=False), S(3, 4)),
         ("Mm",)),
    Case("matmul_fold", lambda m, a, b: m.matmul(a, b), (S(2, 2, 3), S(3, 4)),
         ("Mm", "View", "UnsafeView")),
    Case("matmul_fold_vec", lambda m, a, v: a @ v, (S(2, 2, 3), S(3)), ("Mv", "UnsafeView")),
    Case("matmul_2d_3d", lambda m, a, b: a @ b, (S(4, 3), S(2, 3, 5)),
         ("Mm", "T", "Transpose", "Clone", "UnsafeView")),
    Case("matmul_1d_3d", lambda m, v, b: v @ b, (S(3), S(2, 3, 5)), ("Mv",)),
    Case("matmul_1d_3d_const", lambda m, v, b: v @ b, (S(3, rg=False), S(2, 3, 5)),
         ("Bmm",)),
    Case("matmul_4d_1d", lambda m, a, v: a.transpose(0, 1) @ v, (S(2, 3, 2, 3), S(3, rg=False)),
         ("Bmm", "SqueezeDim")),
    Case("matmul_batch_of_one", lambda m, a, b: a @ b, (S(1, 4, 3), S(2, 3, 5)), ()),
    Case("bmm", lambda m, a, b: m.bmm(a, b), (S(2, 2, 3), S(2, 3, 4)), ("Bmm",)),
    Case("addmm", lambda m, c, a, b: m.addmm(c, a, b), (S(4), S(2, 3), S(3, 4)), ("Addmm",)),
    Case("outer", lambda m, x, w: m.outer(x, w), (S(3), S(2)), ("Mul", "View")),
    Case("linear", lambda m, x, w, b: m.F.linear(x, w, b), (S(4, 3), S(2, 3), S(2)),
         ("Addmm", "T", "SumDim")),
    Case("linear_nobias", lambda m, x, w: m.F.linear(x, w), (S(4, 3), S(2, 3)), ("Mm", "T")),
    Case("linear_1d", lambda m, x, w, b: m.F.linear(x, w, b), (S(3), S(2, 3), S(2)), ()),
    Case("linear_3d", lambda m, x, w, b: m.F.linear(x, w, b), (S(2, 4, 3), S(2, 3), S(2)), ()),
    Case("linear_4d", lambda m, x, w, b: m.F.linear(x, w, b), (S(2, 2, 4, 3), S(2, 3), S(2)),
         ()),
    Case("linear_3d_noncontig", lambda m, x, w, b: m.F.linear(x.transpose(0, 1), w, b),
         (S(4, 2, 3), S(2, 3), S(2)), ()),
    Case("linear_3d_bias3d", lambda m, x, w, b: m.F.linear(x, w, b),
         (S(2, 4, 3), S(2, 3), S(2, 4, 2)), ()),
    Case("linear_1d_nobias", lambda m, x, w: m.F.linear(x, w), (S(3), S(2, 3)), ()),
    Case("linear_3d_nobias", lambda m, x, w: m.F.linear(x, w), (S(2, 4, 3), S(2, 3)), ()),
    Case("linear_bias_0d", lambda m, x, w, b: m.F.linear(x, w, b), (S(4, 3), S(2, 3), S()),
         ()),
    # ---------------------------------------------------------- shapes and views
    Case("transpose", lambda m, x: x.transpose(0, 1), (S(2, 3),), ("Transpose",)),
    Case("transpose_neg", lambda m, x: m.transpose(x, -1, 0), (S(2, 3, 4),), ("Transpose",)),
    Case("t", lambda m, x: x.t(), (S(2, 3),), ("T",)),
    Case("T", lambda m, x: x.T, (S(2, 3),), ("Permute",)),
    Case("permute", lambda m, x: x.permute(2, 0, 1), (S(2, 3, 4),), ("Permute",)),
    Case("reshape", lambda m, x: x.reshape(3, 2), (S(2, 3),), ("View",)),
    Case("reshape_infer", lambda m, x: x.reshape(-1), (S(2, 3),), ("View",)),
    Case("reshape_noncontig", lambda m, x: x.t().reshape(6), (S(2, 3),),
         ("UnsafeView", "T")),
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
    Case("expand_as", lambda m, x, y: x.expand_as(y), (S(1, 3), S(2, 3, rg=False)),
         ("Expand",)),
    Case("repeat", lambda m, x: x.repeat(2), (S(3),), ("Repeat",)),
    Case("repeat_2d", lambda m, x: x.repeat(2, 1, 3), (S(2, 2),), ("Repeat",)),
    Case("flip", lambda m, x: x.flip(0), (S(3),), ("Flip",)),
    Case("flip_dims", lambda m, x: m.flip(x, (0, -1)), (S(2, 3),), ("Flip",)),
    Case("cat", lambda m, x, w: m.cat([x, w]), (S(3), S(2)), ("Cat",)),
    Case("cat_dim1", lambda m, x, w: m.cat([x, w], dim=1), (S(2, 3), S(2, 1)), ("Cat",)),
    Case("cat_const", lambda m, x, c: m.cat((c, x, c), -1), (S(2, 2), S(2, 1, rg=False)),
         ("Cat",)),
    Case("stack", lambda m, x, w: m.stack([x, w]), (S(3), S(3)), ("Stack",)),
    Case("stack_dim", lambda m, x, w: m.stack([x, w], dim=1), (S(2, 3), S(2, 3)), ("Stack",)),
    Case("split", lambda m, x: x.split(2), (S(5),), ("Split",)),
    Case("split_sizes", lambda m, x: m.split(x, [1, 2], dim=1), (S(2, 3),),
         ("SplitWithSizes",)),
    Case("split_one_used", lambda m, x: x.split(2)[1], (S(5),), ("Split",)),
    Case("chunk", lambda m, x: x.chunk(2), (S(5),), ("Split",)),
    Case("chunk_dim", lambda m, x: m.chunk(x, 3, dim=1), (S(2, 6),), ("Split",)),
    Case("unbind", lambda m, x: x.unbind(), (S(3, 2),), ("Unbind",)),
    Case("unbind_one_used", lambda m, x: m.unbind(x, 1)[0], (S(3, 2),), ("Unbind",)),
    # ---------------------------------------------------------- indexing
    Case("select", lambda m, x: x[0], (S(3),), ("Select", "Embed")),
    Case("select_2d", lambda m, x: x[1], (S(3, 2),), ("Select", "Embed")),
    Case("select_col", lambda m, x: x[:, 1], (S(2, 3),), ("Select", "Embed")),
    Case("select_elem", lambda m, x: x[0, 1], (S(2, 3),), ("Select", "Embed")),
    Case("select_neg", lambda m, x: x[-1], (S(3),), ("Select",)),
    Case("slice", lambda m, x: x[1:3], (S(4),), ("Slice", "Embed")),
    Case("slice_step", lambda m, x: x[::2], (S(5),), ("Slice", "Embed")),
    Case("slice_2d", lambda m, x: x[:, 1:], (S(2, 3),), ("Slice",)),
    Case("slice_neg", lambda m, x: x[-2:], (S(4),), ("Slice",)),
    Case("slice_empty", lambda m, x: x[2:2], (S(4),), ("Slice",)),
    Case("index_none", lambda m, x: x[None], (S(3),), ("Unsqueeze",)),
    Case("index_list", lambda m, x: x[[0, 2]], (S(3),), ("Index", "Embed")),
    Case("index_list_repeat", lambda m, x: x[[0, 0, 2]], (S(3),), ("Index", "Embed")),
    Case("index_mask", lambda m, x: x[x > 0], (S(5),), ("Index",)),
    Case("index_select_list", lambda m, x: x[0, [0, 2]], (S(2, 3),), ("Index",)),
    Case("index_tensor", lambda m, x: x[m.tensor([1, 0])], (S(2, 3),), ("Index",)),
    Case("index_ellipsis", lambda m, x: x[..., 0], (S(2, 3),), ("Select",)),
    Case("index_alias", lambda m, x: x[...], (S(2, 3),), ("Alias",)),
    Case("index_all", lambda m, x: x[:], (S(2, 3),), ("Slice",)),
    Case("index_mixed", lambda m, x: x[1:, [0, 2]], (S(2, 3),), ("Index", "Slice")),
    Case("index_two_lists", lambda m, x: x[[0, 1], [1, 2]], (S(2, 3),), ("Index",)),
    Case("index_chain", lambda m, x: x[0][1], (S(2, 3),), ("Select",)),
    Case("narrow", lambda m, x: x.narrow(1, 0, 2), (S(2, 3),), ("Slice",)),
    Case("select_fn", lambda m, x: m.select(x, 1, 0), (S(2, 3),), ("Select",)),
    Case("gather", lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [1, 0]])), (S(2, 3),),
         ("Gather", "ScatterAdd")),
    Case("gather_method", lambda m, x: x.gather(0, m.tensor([[1, 0, 1]])), (S(2, 3),),
         ("Gather", "ScatterAdd")),
    Case("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.5), (S(5),), ("MaskedFill",)),
    Case("masked_fill_bcast", lambda m, x: m.masked_fill(x, m.tensor([True, False, True]),
                                                         -1.0), (S(2, 3),), ("MaskedFill",)),
    Case("masked_fill_tensor", lambda m, x, v: x.masked_fill(x > 0, v), (S(2, 3), S()),
         ("MaskedFillTensor",)),
    Case("masked_fill_bcast_mask", lambda m, x: x.masked_fill(m.tensor([[True], [False]]), 2.0),
         (S(3),), ("MaskedFill",)),
    Case("masked_fill_", lambda m, x, v: (x * 1).masked_fill_(x > 0, v), (S(4), S()),
         ("MaskedFillTensor",)),
    Case("where", lambda m, x, w: m.where(x > 0, x, w), (S(4), S(4)), ("Where",)),
    Case("where_scalar", lambda m, x: m.where(x > 0, x, 0.0), (S(4),), ("Where",)),
    Case("where_bcast", lambda m, x, w: m.where(x > 0, x, w), (S(2, 3), S(3)), ("Where",)),
    Case("setitem", _setitem_case, (S(3), S()), ("CopySlices",)),
    Case("setitem_number", _setitem_number, (S(2, 3),), ("CopySlices",)),
    Case("setitem_mask", lambda m, x: _setitem(x * 1, x > 0, 0.0), (S(5),), ("IndexPut",)),
    Case("setitem_list", lambda m, x, v: _setitem(x * 2, [0, 2], v), (S(3, 2), S(2)),
         ("IndexPut",)),
    Case("setitem_on_view", lambda m, x, v: _setitem((x * 1)[1:], 0, v), (S(3, 2), S(2)),
         ("CopySlicesOp", "CopySlices", "AsStrided")),
    Case("inplace_view", _inplace_view, (S(2, 3),), ("CopySlicesOp", "AsStrided")),
    Case("inplace_view_cols", _inplace_view_cols, (S(2, 3),), ("CopySlicesOp", "AsStrided")),
    # ---------------------------------------------------------- in place on a non-leaf
    Case("zero_", lambda m, x: (x * 2).zero_(), (S(3),), ("ZeroFill",)),
    Case("fill_", lambda m, x: (x * 2).fill_(1.5), (S(3),), ("FillScalar",)),
    Case("fill_tensor", lambda m, x, v: (x * 2).fill_(v), (S(3), S()), ("FillTensor",)),
    Case("copy_", lambda m, x, w: (x * 2).copy_(w), (S(3), S(3)), ("CopyFrom",)),
    Case("copy_bcast", lambda m, x, w: (x * 2).copy_(w), (S(2, 3), S(3)), ("CopyFrom",)),
    Case("add_", lambda m, x, w: (x * 2).add_(w), (S(3), S(3)), ("Add",)),
    Case("mul_", lambda m, x: (x + 1).mul_(x), (S(3),), ("Mul",)),
    Case("exp_", lambda m, x: (x * 1).exp_(), (S(3),), ("Exp",)),
    Case("sub_div_pow_", lambda m, x: (x * 1).sub_(1).div_(2).pow_(2), (S(3),),
         ("Sub", "Div", "Pow")),
    # ---------------------------------------------------------- nn functions
    Case("softmax", lambda m, x: x.softmax(0), (S(4),), ("Softmax", "SoftmaxBackwardData")),
    Case("softmax_dim", lambda m, x: m.F.softmax(x, dim=1), (S(2, 3),), ("Softmax",)),
    Case("softmax_neg", lambda m, x: m.softmax(x, -1), (S(2, 3),), ("Softmax",)),
    Case("log_softmax", lambda m, x: x.log_softmax(0), (S(4),),
         ("LogSoftmax", "LogSoftmaxBackwardData")),
    Case("log_softmax_dim", lambda m, x: m.F.log_softmax(x, dim=1), (S(2, 3),),
         ("LogSoftmax",)),
    Case("mse_loss", lambda m, x, t: m.F.mse_loss(x, t), (S(3), S(3)),
         ("MseLoss", "MseLossBackward")),
    Case("mse_loss_sum", lambda m, x, t: m.F.mse_loss(x, t, reduction="sum"),
         (S(2, 3), S(2, 3, rg=False)), ("MseLoss",)),
    Case("mse_loss_none", lambda m, x, t: m.F.mse_loss(x, t, reduction="none"),
         (S(2, 3), S(2, 3)), ("MseLoss",)),
    Case("l1_loss", lambda m, x, t: m.F.l1_loss(x, t), (S(3), S(3)), ("Sub", "Abs", "Mean")),
    Case("l1_loss_sum", lambda m, x, t: m.F.l1_loss(x, t, reduction="sum"),
         (S(2, 3), S(2, 3, rg=False)), ()),
    Case("l1_loss_none", lambda m, x, t: m.F.l1_loss(x, t, reduction="none"),
         (S(2, 3), S(2, 3)), ()),
    Case("bce", lambda m, p, t: m.F.binary_cross_entropy(p, t),
         (S(4, domain="unit"), S(4, domain="unit", rg=False)),
         ("BinaryCrossEntropy", "BceBackward")),
    Case("bce_target_grad", lambda m, p, t: m.F.binary_cross_entropy(p, t, reduction="sum"),
         (S(2, 2, domain="unit"), S(2, 2, domain="unit")), ("BinaryCrossEntropy",)),
    Case("bce_none_weight", lambda m, p, t, w: m.F.binary_cross_entropy(
        p, t, weight=w, reduction="none"),
         (S(3, domain="unit"), S(3, domain="unit", rg=False), S(3, domain="pos", rg=False)),
         ("BinaryCrossEntropy",)),
    Case("bce_sigmoid", lambda m, x, t: m.F.binary_cross_entropy(x.sigmoid(), t),
         (S(4), V([0.0, 1.0, 1.0, 0.0], rg=False)), ("BinaryCrossEntropy", "Sigmoid")),
    Case("cross_entropy", lambda m, x: m.F.cross_entropy(x, m.tensor([0, 2])), (S(2, 3),),
         ("LogSoftmax", "NllLoss")),
    Case("cross_entropy_sum", lambda m, x: m.F.cross_entropy(x, m.tensor([1, 1, 0]),
                                                             reduction="sum"), (S(3, 2),),
         ("NllLoss",)),
    Case("cross_entropy_1d", lambda m, x: m.F.cross_entropy(x, m.tensor(1)), (S(3),),
         ("NllLoss",)),
    Case("cross_entropy_weight", lambda m, x, w: m.F.cross_entropy(x, m.tensor([0, 2, 2]),
                                                                   weight=w),
         (S(3, 3), S(3, domain="pos", rg=False)), ("NllLoss",)),
    Case("cross_entropy_probs", lambda m, x, p: m.F.cross_entropy(x, p.softmax(1)),
         (S(2, 3), S(2, 3, rg=False)), ("DivScalar",)),
    Case("cross_entropy_probs_1d", lambda m, x, p: m.F.cross_entropy(x, p.softmax(0)),
         (S(3), S(3)), ("DivScalar",)),
    Case("cross_entropy_probs_none", lambda m, x, p: m.F.cross_entropy(
        x, p.softmax(1), reduction="none"), (S(2, 3), S(2, 3, rg=False)), ()),
    Case("cross_entropy_probs_sum_weight", lambda m, x, p, w: m.F.cross_entropy(
        x, p.softmax(1), weight=w, reduction="sum"),
         (S(2, 3), S(2, 3, rg=False), S(3, domain="pos", rg=False)), ()),
    Case("nll_loss", lambda m, x: m.F.nll_loss(x.log_softmax(1), m.tensor([1, 0])),
         (S(2, 3),), ("NllLoss", "NllLossBackward")),
    Case("nll_loss_none", lambda m, x: m.F.nll_loss(x, m.tensor([1, 0, 2]), reduction="none"),
         (S(3, 3),), ("NllLoss",)),
    Case("nll_loss_ignore", lambda m, x: m.F.nll_loss(x, m.tensor([1, -100, 2])), (S(3, 3),),
         ("NllLoss",)),
    # ---------------------------------------------------------- compositions
    Case("tutorial", lambda m, x: ((x + 2) * (x + 2) * 3).mean(), (S(2, 2),), ()),
    Case("mlp", lambda m, x, w, b: (m.F.linear(x, w, b).tanh() ** 2).sum(),
         (S(3, 2), S(4, 2), S(4)), ()),
    Case("sigmoid_of_sum", lambda m, x, w: (x * w).sum().sigmoid(), (S(3), S(3)), ()),
]

CASE_IDS = [c.id for c in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS), "duplicate case ids"


def test_table_covers_the_registry() -> None:
    covered = {name for c in CASES for name in c.covers}
    missing = sorted(set(Function.registry) - covered)
    assert not missing, f"Function classes without a case in CASES: {missing}"
    unknown = sorted(covered - set(Function.registry))
    assert not unknown, f"CASES name unknown Function classes: {unknown}"


def _params() -> list[Any]:
    out = []
    for c in CASES:
        for dt in c.dtypes:
            out.append(pytest.param(c, dt, id=f"{c.id}-{dt}", marks=c.marks))
    return out


@pytest.mark.parametrize(("case", "dtype"), _params())
def test_case(case: Case, dtype: str) -> None:
    seen = run_case(case.fn, case.inputs, dtype, second=case.second)
    missing = set(case.covers) - seen
    assert not missing, f"case {case.id} names {sorted(missing)} but they did not run"


# ************************************************************ hypothesis: elementwise ops

UNARY = {
    "exp": (lambda m, x: x.exp(), "any"),
    "log": (lambda m, x: x.log(), "pos"),
    "log1p": (lambda m, x: x.log1p(), "pos"),
    "sqrt": (lambda m, x: x.sqrt(), "pos"),
    "abs": (lambda m, x: x.abs(), "nonzero"),
    "neg": (lambda m, x: -x, "any"),
    "sin": (lambda m, x: x.sin(), "any"),
    "cos": (lambda m, x: x.cos(), "any"),
    "tan": (lambda m, x: x.tan(), "unit"),
    "tanh": (lambda m, x: x.tanh(), "any"),
    "sigmoid": (lambda m, x: x.sigmoid(), "any"),
    "relu": (lambda m, x: x.relu(), "nonzero"),
    "leaky_relu": (lambda m, x: m.F.leaky_relu(x, 0.1), "nonzero"),
    "softplus": (lambda m, x: m.F.softplus(x), "any"),
    "reciprocal": (lambda m, x: x.reciprocal(), "nonzero"),
    "pow3": (lambda m, x: x**3, "any"),
    "pow_frac": (lambda m, x: x**1.5, "pos"),
    "rpow": (lambda m, x: 3**x, "any"),
    "rsub": (lambda m, x: 1 - x, "any"),
    "rdiv": (lambda m, x: 2 / x, "nonzero"),
    "clamp": (lambda m, x: x.clamp(-0.3, 0.4), "any"),
}

BINARY = {
    "add": (lambda m, x, w: x + w, "any", "any"),
    "sub": (lambda m, x, w: x - w, "any", "any"),
    "mul": (lambda m, x, w: x * w, "any", "any"),
    "div": (lambda m, x, w: x / w, "any", "nonzero"),
    "pow": (lambda m, x, w: x**w, "pos", "any"),
    "maximum": (lambda m, x, w: m.maximum(x, w), "any", "any"),
    "minimum": (lambda m, x, w: m.minimum(x, w), "any", "any"),
    "where": (lambda m, x, w: m.where(x > w, x, w), "any", "any"),
}

_dims = st.lists(st.integers(0, 3), min_size=0, max_size=3)


@st.composite
def broadcast_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together (size-1 and missing dims, sometimes empty)."""
    base = draw(_dims)
    a, b = [], []
    for n in base:
        choice = draw(st.integers(0, 2))
        a.append(1 if choice == 1 else n)
        b.append(1 if choice == 2 else n)
    drop_a = draw(st.integers(0, len(a)))
    drop_b = draw(st.integers(0, len(b)))
    return tuple(a[drop_a:]) if draw(st.booleans()) else tuple(a), tuple(b[drop_b:])


def _hyp_settings(n: int) -> Any:
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(UNARY))
@_hyp_settings(12)
@given(shape=_dims.map(tuple), seed=st.integers(0, 2**16), dtype=st.sampled_from(DTYPES))
def test_unary_hypothesis(name: str, shape: tuple[int, ...], seed: int, dtype: str) -> None:
    fn, dom = UNARY[name]
    run_case(fn, (In(shape, dom),), dtype, seed=seed)


@pytest.mark.parametrize("name", sorted(BINARY))
@_hyp_settings(15)
@given(shapes=broadcast_shapes(), seed=st.integers(0, 2**16), dtype=st.sampled_from(DTYPES))
def test_binary_hypothesis(name: str, shapes: Any, seed: int, dtype: str) -> None:
    fn, da, db = BINARY[name]
    run_case(fn, (In(shapes[0], da), In(shapes[1], db)), dtype, seed=seed)


@_hyp_settings(25)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
)
def test_reductions_hypothesis(shape: tuple[int, ...], data: Any, dtype: str) -> None:
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    keep = data.draw(st.booleans())
    op = data.draw(st.sampled_from(["sum", "mean", "amax", "logsumexp", "softmax", "norm",
                                    "var", "max"]))
    if op == "var" and shape[dim % nd] < 2:
        op = "sum"

    def fn(m: Any, x: Any) -> Any:
        if op == "softmax":
            return x.softmax(dim)
        if op == "norm":
            return x.norm(dim=dim, keepdim=keep)
        if op == "max":
            return x.max(dim, keepdim=keep)
        return getattr(x, op)(dim, keepdim=keep)

    run_case(fn, (In(shape),), dtype, seed=data.draw(st.integers(0, 1000)))


# ************************************************************ type promotion

PROMOTION = [
    ("int_plus_float", lambda m: m.tensor([1, 2]) + 1.5),
    ("int_times_float_tensor", lambda m: m.tensor([1, 2]) * m.tensor([0.5, 0.25])),
    ("f32_plus_f64", lambda m: m.ones(2) + m.ones(2, dtype=m.float64)),
    ("f32_vec_plus_f64_0d", lambda m: m.ones(2) + m.tensor(2.5, dtype=m.float64)),
    ("f32_0d_plus_f64_0d", lambda m: m.tensor(1.0) + m.tensor(2.5, dtype=m.float64)),
    ("f64_plus_python_float", lambda m: m.ones(2, dtype=m.float64) + 0.1),
    ("f32_plus_python_float", lambda m: m.ones(2) + 0.1),
    ("int_div_int", lambda m: m.tensor([1, 2]) / m.tensor([2, 4])),
    ("int_div_python_int", lambda m: m.tensor([3, 4]) / 2),
    ("int_0d_plus_float_vec", lambda m: m.tensor(3) + m.ones(2)),
    ("int_vec_plus_float_0d", lambda m: m.tensor([1, 2]) + m.tensor(0.5, dtype=m.float64)),
    ("bool_plus_int", lambda m: m.tensor([True, False]) + 1),
    ("bool_plus_float", lambda m: m.tensor([True, False]) * 2.5),
    ("int_pow_float", lambda m: m.tensor([1, 2]) ** 0.5),
    ("python_float_pow_int", lambda m: 2.0 ** m.tensor([1, 2])),
    ("int_sum", lambda m: m.tensor([1, 2]).sum()),
    ("bool_sum", lambda m: m.tensor([True, True]).sum()),
    ("int_mul_int", lambda m: m.tensor([1, 2]) * 3),
    ("int_where_float", lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 0.5)),
    ("cat_mixed", lambda m: m.cat([m.ones(2), m.ones(1, dtype=m.float64)])),
    ("f32_grad_plus_f64", lambda m: m.ones(2, requires_grad=True) * m.ones(2, dtype=m.float64)),
    ("f32_grad_plus_f64_0d",
     lambda m: m.ones(2, requires_grad=True) * m.tensor(3.0, dtype=m.float64)),
    ("int_tensor_mean_float", lambda m: m.tensor([1.0, 2.0]).mean()),
    ("float_div_int", lambda m: m.ones(2, requires_grad=True) / m.tensor([2, 4])),
    ("maximum_mixed", lambda m: m.maximum(m.ones(2), m.tensor([0, 3]))),
]


@pytest.mark.parametrize(("name", "fn"), PROMOTION, ids=[p[0] for p in PROMOTION])
def test_type_promotion(name: str, fn: Callable[[Any], Any]) -> None:
    t, a = fn(TM), fn(AM)
    assert str(a.dtype) == str(t.dtype)
    _close(_np(a), _np(t), name, _tol("float32"))
    assert repr(a) == repr(t)
    assert _fn_name(a) == _fn_name(t)


def test_promotion_gradients_keep_input_dtype() -> None:
    # a float32 leaf combined with a float64 tensor gets a float32 gradient
    for m in (TM, AM):
        x = m.ones(2, requires_grad=True)
        y = (x * m.tensor([1.5, 2.0], dtype=m.float64)).sum()
        y.backward()
        assert str(x.grad.dtype) == "torch.float32"
        assert x.grad.tolist() == [1.5, 2.0]


# ************************************************************ error messages

ERRORS = [
    ("add_shapes", lambda m: m.ones(2) + m.ones(3)),
    ("add_shapes_2d", lambda m: m.ones(2, 3) + m.ones(3, 2)),
    ("mul_shapes", lambda m: m.ones(4, 2) * m.ones(3, 1, 3)),
    ("where_shapes_other", lambda m: m.where(m.ones(2, 1) > 0, m.ones(3), m.ones(4))),
    ("select_neg_out_of_range", lambda m: m.ones(2, 3).select(0, -3)),
    ("index_col_out_of_range", lambda m: m.ones(2, 3)[:, 5]),
    ("flatten_args", lambda m: m.ones(2, 3).flatten(1, 0)),
    ("nll_target_int32", lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1], dtype=m.int32))),
    ("masked_fill_float_mask", lambda m: m.ones(2).masked_fill(m.tensor([1.0, 0.0]), 0.0)),
    ("bmm_dims", lambda m: m.bmm(m.ones(2, 2), m.ones(2, 2, 2))),
    ("bmm_sizes", lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 2, 2))),
    ("matmul_fold_sizes", lambda m: m.ones(2, 2, 3) @ m.ones(4, 5)),
    ("matmul_fold_vec_sizes", lambda m: m.ones(2, 2, 3) @ m.ones(4)),
    ("matmul_batch_bcast", lambda m: m.ones(2, 2, 3) @ m.ones(3, 3, 5)),
    ("linear_3d_shapes", lambda m: m.F.linear(m.ones(2, 4, 3), m.ones(5, 2), m.ones(5))),
    ("squeeze_dim_range", lambda m: m.ones(2, 3).squeeze(2)),
    ("sub_shapes", lambda m: m.sub(m.ones(3), m.ones(2))),
    ("dot_sizes", lambda m: m.dot(m.ones(2), m.ones(3))),
    ("dot_dims", lambda m: m.dot(m.ones(2, 2), m.ones(2))),
    ("dot_dtypes", lambda m: m.dot(m.ones(2), m.ones(2, dtype=m.float64))),
    ("mm_shapes", lambda m: m.ones(2, 3) @ m.ones(2, 3)),
    ("mm_fn_shapes", lambda m: m.mm(m.ones(2, 3), m.ones(4, 2))),
    ("mm_not_matrix", lambda m: m.mm(m.ones(2), m.ones(2, 2))),
    ("mv_shapes", lambda m: m.mv(m.ones(2, 3), m.ones(2))),
    ("matmul_1d_2d", lambda m: m.ones(2) @ m.ones(3, 2)),
    ("matmul_2d_1d", lambda m: m.ones(2, 3) @ m.ones(2)),
    ("matmul_0d", lambda m: m.matmul(m.tensor(1.0), m.ones(2))),
    ("matmul_batched", lambda m: m.ones(2, 2, 3) @ m.ones(2, 2, 3)),
    ("linear_shapes", lambda m: m.F.linear(m.ones(2, 3), m.ones(2, 2), m.ones(2))),
    ("cat_dims", lambda m: m.cat([m.ones(2), m.ones(2, 2)])),
    ("cat_sizes", lambda m: m.cat([m.ones(2, 3), m.ones(2, 2)])),
    ("cat_0d", lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)])),
    ("stack_sizes", lambda m: m.stack([m.ones(2), m.ones(3)])),
    ("view_invalid", lambda m: m.ones(6).view(4, 2)),
    ("reshape_invalid", lambda m: m.ones(6).reshape(-1, 4)),
    ("reshape_two_infer", lambda m: m.ones(6).reshape(-1, -1)),
    ("expand_size", lambda m: m.ones(3).expand(2, 2)),
    ("expand_fewer", lambda m: m.ones(2, 3).expand(3)),
    ("dim_out_of_range", lambda m: m.ones(2, 3).sum(2)),
    ("dim_out_of_range_neg", lambda m: m.ones(2, 3).softmax(-3)),
    ("index_out_of_range", lambda m: m.ones(3)[3]),
    ("too_many_indices", lambda m: m.ones(3)[0, 0]),
    ("transpose_dim", lambda m: m.ones(3).transpose(0, 1)),
    ("t_3d", lambda m: m.ones(2, 2, 2).t()),
    ("permute_len", lambda m: m.ones(2, 3).permute(0)),
    ("max_empty", lambda m: m.ones(0).max()),
    ("where_shapes", lambda m: m.where(m.ones(2) > 0, m.ones(3), 0.0)),
    ("gather_dtype", lambda m: m.gather(m.ones(2, 2), 1, m.tensor([[0.0]]))),
    ("masked_fill_mask", lambda m: m.ones(2).masked_fill(m.tensor([1, 0]), 0.0)),
    ("mse_loss_shapes", lambda m: m.F.mse_loss(m.ones(2), m.ones(3))),
    ("nll_target_dtype", lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0.0, 1.0]))),
    ("nll_batch", lambda m: m.F.nll_loss(m.ones(2, 3), m.tensor([0, 1, 2]))),
    ("cross_entropy_target", lambda m: m.F.cross_entropy(m.ones(2, 3), m.tensor([0, 3]))),
    ("bce_range", lambda m: m.F.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.0]))),
    ("bce_shapes", lambda m: m.F.binary_cross_entropy(m.ones(2) * 0.5, m.ones(3))),
    ("mean_int", lambda m: m.tensor([1, 2]).mean()),
    ("norm_int", lambda m: m.tensor([1, 2]).norm()),
    ("pow_int_neg", lambda m: m.tensor([1, 2]) ** -1),
    ("neg_bool", lambda m: -m.tensor([True])),
    ("sub_bool", lambda m: m.tensor([True]) - m.tensor([False])),
    ("clamp_none", lambda m: m.clamp(m.ones(2))),
    ("split_sizes", lambda m: m.ones(5).split([2, 2])),
    ("item_many", lambda m: m.ones(2).item()),
    ("select_out_of_range", lambda m: m.select(m.ones(2, 3), 1, 3)),
]


@pytest.mark.parametrize(("name", "fn"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error_messages(name: str, fn: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as te:
        fn(TM)
    with pytest.raises(Exception) as ae:
        fn(AM)
    assert isinstance(ae.value, type(te.value)), (
        f"{type(ae.value).__name__}: {ae.value} != {type(te.value).__name__}: {te.value}"
    )
    assert str(ae.value) == str(te.value)


# ************************************************************ a few sanity checks of the harness


def test_harness_detects_a_wrong_gradient() -> None:
    with pytest.raises(AssertionError):
        run_case(lambda m, x: x.exp() if m is TM else x.exp() * 1.0001, (S(3),), "float64")


def test_values_at_special_points_match() -> None:
    # nan/inf propagate the same way through forward and backward
    run_case(lambda m, x: x.sqrt(), (V([0.0, 1.0, 4.0]),), "float32", second=False)
    run_case(lambda m, x: x.log(), (V([0.0, 1.0, -1.0]),), "float64", second=False)
    run_case(lambda m, x: x ** 0.5, (V([0.0, 1.0, -1.0]),), "float64", second=False)
    assert math.isinf(float("inf"))
