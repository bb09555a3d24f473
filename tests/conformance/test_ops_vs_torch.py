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
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adcli.autograd import engine
from adcli.autograd.config import _default_warn, config
from adcli.autograd.node import Function
from adcli.autograd.tensor import Tensor
from tests.test_ops import AM, CASES, DTYPES, Case, In, S, V, draw_input

_ = V  # the table's helpers are shared with tests/test_ops.py

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


TM = _Torch()


def _tol(dtype: str, grad: bool = False) -> dict[str, float]:
    if dtype == "float32":
        return {"rtol": 1e-4, "atol": 1e-5} if grad else {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-9, "atol": 1e-11} if grad else {"rtol": 1e-10, "atol": 1e-12}


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


def compare_tensor(
    a: Tensor, t: Any, what: str, dtype: str, grad: bool = False, meta: bool = True
) -> None:
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
    for y, w in zip(ys, ws, strict=False):
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


def run_case(
    fn: Callable[..., Any],
    specs: tuple[In, ...],
    dtype: str,
    seed: int = 0,
    second: bool = True,
    arrays: list[np.ndarray] | None = None,
) -> set[str]:
    """Run `fn` in both libraries on the same inputs and compare everything."""
    rng = np.random.default_rng(seed)
    if arrays is None:
        arrays = [draw_input(s, rng) for s in specs]
    t_in, a_in = [], []
    for s, arr in zip(specs, arrays, strict=False):
        tt, at = _make_pair(arr, s.dtype or dtype, s.rg)
        t_in.append(tt)
        a_in.append(at)
    with track_functions() as seen:
        try:
            _compare_run(fn, t_in, a_in, dtype, rng, second)
        except _BothRaised:
            pass
    return seen


def _compare_run(
    fn: Callable[..., Any],
    t_in: list[Any],
    a_in: list[Tensor],
    dtype: str,
    rng: np.random.Generator,
    second: bool,
) -> None:
    ty, ay = _both(lambda: _outputs(fn(TM, *t_in)), lambda: _outputs(fn(AM, *a_in)), "forward")
    assert len(ay) == len(ty), "number of outputs"
    for i, (a, t) in enumerate(zip(ay, ty, strict=False)):
        compare_tensor(a, t, f"output {i}", dtype, meta=True)
    # first gradients
    t_diff = [t for t in t_in if t.requires_grad]
    a_diff = [a for a in a_in if a.requires_grad]
    pairs = [
        (a, t)
        for a, t in zip(ay, ty, strict=False)
        if t.requires_grad and t.dtype.is_floating_point
    ]
    if not pairs or not t_diff:
        return
    vs = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    tv = [torch.tensor(v, dtype=t.dtype) for v, (_, t) in zip(vs, pairs, strict=False)]
    av = [Tensor._make(v.astype(_np(a).dtype)) for v, (a, _) in zip(vs, pairs, strict=False)]
    tl = _weighted_sum([t for _, t in pairs], tv)
    al = _weighted_sum([a for a, _ in pairs], av)
    tg, ag = _both(
        lambda: torch.autograd.grad(tl, t_diff, create_graph=True, allow_unused=True),
        lambda: engine.grad(al, a_diff, create_graph=True, allow_unused=True),
        "first gradients",
    )
    for i, (a, t) in enumerate(zip(ag, tg, strict=False)):
        if t is None:
            assert a is None or not np.any(_np(a)), f"grad {i}: torch None"
            continue
        assert a is not None, f"grad {i}: adcli None, torch {t}"
        compare_tensor(a, t, f"grad {i}", dtype, grad=True, meta=False)
        assert a.requires_grad == t.requires_grad, f"grad {i}: requires_grad (create_graph)"
        assert _fn_name(a) == _fn_name(t), f"grad {i}: grad_fn {_fn_name(a)} != {_fn_name(t)}"
    assert _creation_order(ag, lambda n: n.seq) == _creation_order(
        tg, lambda n: n._sequence_nr()
    ), "order in which the inputs' gradients were made (a double backward sums in it)"
    if not second:
        return
    # second derivatives (grad of grad)
    gpairs = [(a, t) for a, t in zip(ag, tg, strict=False) if t is not None and t.requires_grad]
    if not gpairs:
        return
    us = [rng.standard_normal(tuple(t.shape)) for _, t in gpairs]
    tu = [torch.tensor(u, dtype=t.dtype) for u, (_, t) in zip(us, gpairs, strict=False)]
    au = [Tensor._make(u.astype(_np(a).dtype)) for u, (a, _) in zip(us, gpairs, strict=False)]
    ts = _weighted_sum([t for _, t in gpairs], tu)
    as_ = _weighted_sum([a for a, _ in gpairs], au)
    tgg, agg = _both(
        lambda: torch.autograd.grad(ts, t_diff, allow_unused=True),
        lambda: engine.grad(as_, a_diff, allow_unused=True),
        "second derivatives",
    )
    for i, (a, t) in enumerate(zip(agg, tgg, strict=False)):
        tn = np.zeros(tuple(t_diff[i].shape)) if t is None else _np(t)
        an = np.zeros(a_diff[i].data_.shape) if a is None else _np(a)
        _close(
            an.astype(np.float64),
            tn.astype(np.float64),
            f"grad of grad {i}",
            _tol(dtype, grad=True),
        )


def _creation_order(grads: Any, seq: Callable[[Any], int]) -> list[int]:
    """The inputs whose gradient has a grad_fn, in the order those nodes were made."""
    made = [(seq(g.grad_fn), i) for i, g in enumerate(grads) if g is not None and g.grad_fn]
    return [i for _, i in sorted(made)]


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
    "asin": (lambda m, x: x.asin(), "unit"),
    "acos": (lambda m, x: x.acos(), "unit"),
    "atan": (lambda m, x: x.atan(), "any"),
    "rsqrt": (lambda m, x: x.rsqrt(), "pos"),
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
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )


@pytest.mark.parametrize("name", sorted(UNARY))
@_hyp_settings(25)
@given(shape=_dims.map(tuple), seed=st.integers(0, 2**16), dtype=st.sampled_from(DTYPES))
def test_unary_hypothesis(name: str, shape: tuple[int, ...], seed: int, dtype: str) -> None:
    fn, dom = UNARY[name]
    run_case(fn, (In(shape, dom),), dtype, seed=seed)


@pytest.mark.parametrize("name", sorted(BINARY))
@_hyp_settings(30)
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
    op = data.draw(
        st.sampled_from(["sum", "mean", "amax", "logsumexp", "softmax", "norm", "var", "max"])
    )
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


@_hyp_settings(40)
@given(
    da=st.integers(1, 4),
    db=st.integers(1, 4),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
)
def test_matmul_hypothesis(da: int, db: int, data: Any, dtype: str) -> None:
    """matmul's dispatch (dot, mv, mm, folding, bmm with broadcast batches) and the
    graph it builds, for random ranks, sizes and requires_grad flags."""
    n, k, p = (data.draw(st.integers(1, 3)) for _ in range(3))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=2, max_size=2)))
    ba = tuple(1 if data.draw(st.booleans()) else b for b in batch)[4 - da :] if da > 2 else ()
    bb = tuple(1 if data.draw(st.booleans()) else b for b in batch)[4 - db :] if db > 2 else ()
    sa = ba + ((n, k) if da > 1 else (k,))
    sb = bb + ((k, p) if db > 1 else (k,))
    ra, rb = data.draw(st.booleans()), data.draw(st.booleans())
    if not (ra or rb):
        ra = True
    if data.draw(st.booleans()) and da > 1:
        # a non-contiguous first operand (its last two dims swapped back)
        specs = (In(sa[:-2] + (sa[-1], sa[-2]), rg=ra), In(sb, rg=rb))

        def fn(m: Any, a: Any, b: Any) -> Any:
            return a.transpose(-1, -2) @ b

    else:
        specs = (In(sa, rg=ra), In(sb, rg=rb))

        def fn(m: Any, a: Any, b: Any) -> Any:
            return a @ b

    run_case(fn, specs, dtype, seed=data.draw(st.integers(0, 1000)))


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
    ("int_asin", lambda m: m.asin(m.tensor([1, 0, -1, 2]))),
    ("int_acos", lambda m: m.acos(m.tensor([1, 0]))),
    ("int_atan", lambda m: m.atan(m.tensor([3, -2]))),
    ("int_rsqrt", lambda m: m.rsqrt(m.tensor([4, 0, -1]))),
    ("python_float_pow_int", lambda m: 2.0 ** m.tensor([1, 2])),
    ("int_sum", lambda m: m.tensor([1, 2]).sum()),
    ("bool_sum", lambda m: m.tensor([True, True]).sum()),
    ("int_mul_int", lambda m: m.tensor([1, 2]) * 3),
    ("int_where_float", lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 0.5)),
    ("cat_mixed", lambda m: m.cat([m.ones(2), m.ones(1, dtype=m.float64)])),
    ("f32_grad_plus_f64", lambda m: m.ones(2, requires_grad=True) * m.ones(2, dtype=m.float64)),
    (
        "f32_grad_plus_f64_0d",
        lambda m: m.ones(2, requires_grad=True) * m.tensor(3.0, dtype=m.float64),
    ),
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
    ("index_list_bounds", lambda m: m.ones(3, 4)[[0, 5]]),
    ("index_list_bounds_neg", lambda m: m.ones(3, 4)[[-4]]),
    ("index_list_bounds_dim1", lambda m: m.ones(3, 4, 5)[[0, 1], [0, 5]]),
    ("index_list_bounds_after_slice", lambda m: m.ones(3, 4, 5)[:, :, [7]]),
    ("index_list_bounds_after_int", lambda m: m.ones(3, 4, 5)[0, [9]]),
    ("index_list_bounds_after_mask", lambda m: m.ones(3, 4, 5)[m.ones(3, 4, dtype=m.bool), [9]]),
    ("index_mask_shape", lambda m: m.ones(3, 4)[m.tensor([True, False])]),
    ("index_mask_shape_dim1", lambda m: m.ones(3, 4)[:, m.tensor([True, False, True])]),
    ("index_mask_2d_shape", lambda m: m.ones(3, 4)[m.ones(3, 3, dtype=m.bool)]),
    ("index_broadcast", lambda m: m.ones(3, 4)[[0, 1], [0, 1, 2]]),
    ("index_too_many", lambda m: m.ones(3, 4)[[0], [0], [0]]),
    ("index_float", lambda m: m.ones(3, 4)[1.5]),
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
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        with pytest.raises(Exception) as te:
            fn(TM)
    saved = config.warn
    config.warn = _default_warn  # a host may have routed adcli's warnings elsewhere
    try:
        with warnings.catch_warnings(record=True) as aw:
            warnings.simplefilter("always")
            with pytest.raises(Exception) as ae:
                fn(AM)
    finally:
        config.warn = saved
    assert isinstance(ae.value, type(te.value)), (
        f"{type(ae.value).__name__}: {ae.value} != {type(te.value).__name__}: {te.value}"
    )
    assert str(ae.value) == str(te.value)
    assert [str(w.message) for w in aw] == [str(w.message) for w in tw]


# ************************************************************ a few sanity checks of the harness


def test_harness_detects_a_wrong_gradient() -> None:
    with pytest.raises(AssertionError):
        run_case(lambda m, x: x.exp() if m is TM else x.exp() * 1.0001, (S(3),), "float64")


def test_values_at_special_points_match() -> None:
    # nan/inf propagate the same way through forward and backward
    run_case(lambda m, x: x.sqrt(), (V([0.0, 1.0, 4.0]),), "float32", second=False)
    run_case(lambda m, x: x.log(), (V([0.0, 1.0, -1.0]),), "float64", second=False)
    run_case(lambda m, x: x**0.5, (V([0.0, 1.0, -1.0]),), "float64", second=False)
    edges = V([1.0, -1.0, 0.0, -0.0, 1.5, float("inf"), float("nan")])
    for fn in (lambda m, x: x.asin(), lambda m, x: x.acos(), lambda m, x: x.atan()):
        for dt in ("float32", "float64"):
            run_case(fn, (edges,), dt, second=False)
    run_case(lambda m, x: x.rsqrt(), (edges,), "float32", second=False)
    assert math.isinf(float("inf"))
