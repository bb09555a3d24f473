"""einsum, trace, std_mean/var_mean, cdist and torch.utils.data compared with PyTorch
2.13. Each scenario runs against torch and against the `torch` module an adcli script
sees; the results must agree: values, dtype, shape, the grad_fn chain (the first few
nodes, following the first edge), gradients and second derivatives, and the error's
type and sentence for wrong arguments. The data scenarios compare the batches and the
random numbers drawn after them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcli.core.session import build_modules  # noqa: E402

pytestmark = pytest.mark.torch

AD = build_modules()["torch"]
DATA = build_modules()["torch.utils.data"]


def _chain(fn: Any, depth: int = 6) -> list[str]:
    names = []
    while fn is not None and len(names) < depth:
        names.append(fn.name())
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return names


def _error(e: BaseException) -> tuple[str, str, str]:
    kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    return ("error", kind, str(e).split("\nException raised from")[0])


def _inputs(m: Any, shapes: tuple[tuple[int, ...], ...], dtype: Any) -> list[Any]:
    rng = np.random.default_rng(7)
    return [
        m.tensor(rng.standard_normal(s).tolist(), dtype=dtype, requires_grad=True) for s in shapes
    ]


def _describe(m: Any, fn: Callable[..., Any], shapes: Any, double: bool) -> Any:
    dtype = m.float64 if double else m.float32
    xs = _inputs(m, shapes, dtype)
    try:
        y = fn(m, *xs)
    except Exception as e:  # noqa: BLE001
        return _error(e)
    ys = y if isinstance(y, tuple) else (y,)
    out: list[Any] = [type(y).__name__]
    for r in ys:
        out += [tuple(r.shape), str(r.dtype), _chain(r.grad_fn), r.detach().tolist()]
    total = sum((r * r).sum() for r in ys)
    grads = m.autograd.grad(total, xs, create_graph=True, allow_unused=True)
    out.append([None if g is None else g.tolist() for g in grads])
    # second derivatives (where the op has them)
    try:
        first = sum((g * g).sum() for g in grads if g is not None)
        gg = m.autograd.grad(first, xs, allow_unused=True)
        out.append([None if g is None else g.tolist() for g in gg])
    except Exception as e:  # noqa: BLE001
        out.append(_error(e))
    return out


EINSUM = {
    "matmul": ("ij,jk->ik", (2, 3), (3, 4)),
    "matmul_implicit": ("ij,jk", (2, 3), (3, 4)),
    "batch_matmul": ("bij,bjk->bik", (5, 2, 3), (5, 3, 4)),
    "outer": ("i,j->ij", (2,), (3,)),
    "dot": ("i,i->", (3,), (3,)),
    "dot_implicit": ("i,i", (3,), (3,)),
    "trace": ("ii->", (3, 3)),
    "trace_implicit": ("ii", (3, 3)),
    "diagonal": ("ii->i", (3, 3)),
    "sum": ("ij->", (2, 3)),
    "column_sum": ("ij->j", (2, 3)),
    "transpose": ("ij->ji", (2, 3)),
    "transpose_implicit": ("ji", (2, 3)),
    "identity": ("ij", (2, 3)),
    "bilinear": ("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5)),
    "ellipsis": ("...ij,...jk->...ik", (5, 2, 3), (5, 3, 4)),
    "ellipsis_broadcast": ("...ij,jk->...ik", (2, 5, 2, 3), (3, 4)),
    "attention": ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
    "hadamard": ("ij,ij->ij", (2, 3), (2, 3)),
    "frobenius": ("ij,ij->", (2, 3), (2, 3)),
    "matvec": ("ij,j->i", (2, 3), (3,)),
    "chain3": ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    "three_dots": ("i,i,i->", (3,), (3,)),
    "unique_sums": ("ij,k->i", (2, 3), (4,)),
    "size_one": ("ij,jk->ik", (2, 1), (1, 4)),
    "upper_case": ("Ij,jK->IK", (2, 3), (3, 4)),
    "spaces": (" i j , j k -> i k ", (2, 3), (3, 4)),
    "repeated_with_batch": ("bii->b", (2, 3, 3)),
    "empty": ("ij,jk->ik", (2, 0), (0, 3)),
    "err_size": ("ij,jk->ik", (2, 3), (2, 3)),
    "err_fewer": ("ij,jk->ik", (2, 3)),
    "err_more": ("ij->ij", (2, 3), (2, 3)),
    "err_output_missing": ("ij->ik", (2, 3)),
    "err_output_twice": ("ij->ii", (2, 3)),
    "err_subscript": ("i1->i", (2, 3)),
    "err_ndim": ("ijk->i", (2, 3)),
    "err_ndim_ellipsis": ("...ijk->i", (2, 3)),
    "err_diag_sizes": ("ii->i", (2, 3)),
    "err_ellipsis_broadcast": ("...i,...j->ij", (2, 3), (3, 4)),
    "err_stray_dot": ("ij.->i", (2, 3)),
    "err_two_ellipses": ("...ij->...ij...", (2, 3)),
}


@pytest.mark.parametrize("double", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_matches_torch(name: str, double: bool) -> None:
    eq, *shapes = EINSUM[name]
    fn = lambda m, *xs: m.einsum(eq, *xs)  # noqa: E731
    _same(_describe(torch, fn, shapes, double), _describe(AD, fn, shapes, double))


def test_einsum_operands_as_a_list() -> None:
    fn = lambda m, a, b: m.einsum("ij,jk->ik", [a, b])  # noqa: E731
    shapes = ((2, 3), (3, 4))
    _same(_describe(torch, fn, shapes, False), _describe(AD, fn, shapes, False))


@pytest.mark.parametrize(
    "args",
    [(), ("ij",), ("ij", 1.0), ("ij,jk->ik", "x"), ("ij->ij", [])],
    ids=["nothing", "no_operand", "number", "string", "empty_list"],
)
def test_einsum_argument_errors(args: tuple[Any, ...]) -> None:
    results = []
    for m in (torch, AD):
        try:
            m.einsum(*args)
            results.append("ok")
        except Exception as e:  # noqa: BLE001
            results.append(_error(e))
    assert results[0] == results[1]


STATS: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "trace": (lambda m, x: x.trace(), ((3, 4),)),
    "trace_fn": (lambda m, x: m.trace(x), ((4, 3),)),
    "trace_1d": (lambda m, x: m.trace(x), ((3,),)),
    "trace_3d": (lambda m, x: m.trace(x), ((2, 2, 2),)),
    "std_mean": (lambda m, x: m.std_mean(x), ((3, 5),)),
    "std_mean_dim": (lambda m, x: m.std_mean(x, 1), ((3, 5),)),
    "std_mean_keepdim": (lambda m, x: m.std_mean(x, dim=0, keepdim=True), ((3, 5),)),
    "std_mean_unbiased": (lambda m, x: m.std_mean(x, 0, False), ((3, 5),)),
    "std_mean_flag": (lambda m, x: m.std_mean(x, False), ((3, 5),)),
    "std_mean_correction": (lambda m, x: m.std_mean(x, [0, 1], correction=0), ((3, 5),)),
    "var_mean": (lambda m, x: m.var_mean(x), ((3, 5),)),
    "var_mean_dim": (lambda m, x: m.var_mean(x, -1, keepdim=True), ((2, 3, 4),)),
    "var_mean_correction": (lambda m, x: m.var_mean(x, 1, correction=2), ((3, 5),)),
    "var_mean_long": (lambda m, x: m.var_mean(x, 0), ((200, 3),)),
    "cdist": (lambda m, a, b: m.cdist(a, b), ((4, 3), (5, 3))),
    "cdist_p1": (lambda m, a, b: m.cdist(a, b, p=1), ((4, 3), (5, 3))),
    "cdist_p3": (lambda m, a, b: m.cdist(a, b, 3), ((4, 3), (5, 3))),
    "cdist_inf": (lambda m, a, b: m.cdist(a, b, float("inf")), ((4, 3), (5, 3))),
    "cdist_batch": (lambda m, a, b: m.cdist(a, b), ((2, 4, 3), (5, 3))),
    "cdist_mm": (lambda m, a, b: m.cdist(a, b), ((30, 3), (5, 3))),
    "cdist_mm_batch": (lambda m, a, b: m.cdist(a, b), ((2, 30, 3), (5, 3))),
    "cdist_forced_mm": (
        lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        ((4, 3), (5, 3)),
    ),
    "cdist_no_mm": (
        lambda m, a, b: m.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
        ((30, 3), (5, 3)),
    ),
    # fuzz misc1: an empty operand takes the CdistBackward0 row even on the mm path
    "cdist_empty_columns": (
        lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        ((2, 0), (3, 0)),
    ),
    "cdist_empty_rows": (lambda m, a, b: m.cdist(a, b), ((0, 3), (30, 3))),
    "std_mean_empty": (lambda m, x: m.std_mean(x), ((0,),)),
    "var_mean_empty_dim": (lambda m, x: m.var_mean(x, 0), ((0, 3),)),
    "cdist_bad_mode": (lambda m, a, b: m.cdist(a, b, compute_mode="x"), ((4, 3), (5, 3))),
    "cdist_columns": (lambda m, a, b: m.cdist(a, b), ((4, 3), (5, 2))),
    "cdist_1d": (lambda m, a, b: m.cdist(a, b), ((3,), (5, 3))),
    "cdist_negative_p": (lambda m, a, b: m.cdist(a, b, -1), ((4, 3), (5, 3))),
}


@pytest.mark.parametrize("double", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(STATS))
def test_stats_ops_match_torch(name: str, double: bool) -> None:
    fn, shapes = STATS[name]
    _same(_describe(torch, fn, shapes, double), _describe(AD, fn, shapes, double))


def test_cdist_mm_path_is_exactly_zero_for_equal_rows() -> None:
    """The matrix-product path clamps at 0 before its sqrt, with PyTorch's sum and
    matmul rounding: equal rows are exactly 0 apart (fuzz ci:35)."""
    out = []
    for m in (torch, AD):
        m.manual_seed(3)
        t = m.tensor([[2.5, -1.6]])
        a = m.randn(30, 3)
        d = m.cdist(a, a[:4])
        zeros = d.diagonal().tolist()
        out.append((m.cdist(t, t, compute_mode="use_mm_for_euclid_dist").item(), zeros, d))
    assert out[0][:2] == out[1][:2]
    np.testing.assert_allclose(out[1][2].tolist(), out[0][2].tolist(), rtol=2e-6)


def test_trace_gradient_graph() -> None:
    """trace's gradient, when it needs a graph, ends in a view (fuzz misc1:357)."""
    out = []
    for m in (torch, AD):
        t = m.ones(2, 3, requires_grad=True)
        (g,) = m.autograd.grad(m.norm(m.trace(t)) * m.trace(t), t, create_graph=True)
        out.append((g.grad_fn.name(), g.tolist()))
    assert out[0] == out[1]


def test_saved_attributes() -> None:
    out = []
    for m in (torch, AD):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]], requires_grad=True)
        t = x.trace()
        s, _ = m.std_mean(x, 1, keepdim=True)
        v, _ = m.var_mean(x)
        c = m.cdist(x, x, p=3)
        out.append(
            (
                t.grad_fn._saved_self_sym_sizes,
                s.grad_fn._saved_dim,
                s.grad_fn._saved_correction,
                s.grad_fn._saved_keepdim,
                v.grad_fn._saved_dim,
                c.grad_fn._saved_p,
                c.grad_fn._saved_x1.tolist(),
                int(m.trace(m.arange(9).view(3, 3))),
                str(m.trace(m.arange(9).view(3, 3)).dtype),
            )
        )
    assert out[0] == out[1]


def _same(want: Any, got: Any) -> None:
    """Equal structure and strings; numbers within float32's last bits."""
    w, g = _leaves(want), _leaves(got)
    assert [type(v) for v in g] == [type(v) for v in w], f"\ntorch: {want}\nadcli: {got}"
    for a, b in zip(w, g, strict=True):
        if isinstance(a, float):
            assert b == pytest.approx(a, rel=2e-6, abs=1e-6, nan_ok=True), (
                f"\ntorch: {want}\nadcli: {got}"
            )
        else:
            assert a == b, f"\ntorch: {want}\nadcli: {got}"


def _leaves(v: Any) -> list[Any]:
    """Nested lists and tuples flattened, with brackets marking the structure."""
    out: list[Any] = []
    stack = [v]
    while stack:
        e = stack.pop()
        if isinstance(e, (list, tuple)):
            out.append("[")
            stack.append("]")
            stack.extend(reversed(e))
        else:
            out.append(float(e) if isinstance(e, (int, float)) and not isinstance(e, bool) else e)
    return out


# ---------------------------------------------------------------- torch.utils.data


def _epochs(m: Any, d: Any, **kw: Any) -> list[Any]:
    """Two epochs of a loader over a small TensorDataset, then the next randn."""
    m.manual_seed(5)
    x = m.arange(14.0).view(7, 2)
    y = m.arange(7)
    loader = d.DataLoader(d.TensorDataset(x, y), **kw)
    out: list[Any] = [len(loader)]
    for _ in range(2):
        for batch in loader:
            out.append([type(batch).__name__] + [b.tolist() for b in batch])
    out.append(m.randn(2).tolist())
    return out


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"batch_size": 3},
        {"batch_size": 3, "drop_last": True},
        {"batch_size": 2, "shuffle": True},
        {"batch_size": 4, "shuffle": True, "drop_last": True},
        {"batch_size": 10, "shuffle": True},
    ],
    ids=["defaults", "batches", "drop_last", "shuffle", "shuffle_drop_last", "one_batch"],
)
def test_dataloader_matches_torch(kw: dict[str, Any]) -> None:
    assert _epochs(AD, DATA, **kw) == _epochs(torch, torch.utils.data, **kw)


def test_dataloader_generator_and_next_iter() -> None:
    out = []
    for m, d in ((torch, torch.utils.data), (AD, DATA)):
        m.manual_seed(1)
        g = m.Generator()
        g.manual_seed(9)
        loader = d.DataLoader(d.TensorDataset(m.arange(6)), batch_size=4, shuffle=True, generator=g)
        first = next(iter(loader))
        out.append((first[0].tolist(), [b[0].tolist() for b in loader], m.rand(1).tolist()))
    assert out[0] == out[1]


def test_random_split_and_subset() -> None:
    out = []
    for m, d in ((torch, torch.utils.data), (AD, DATA)):
        m.manual_seed(2)
        ds = d.TensorDataset(m.arange(10.0), m.arange(10))
        a, b = d.random_split(ds, [7, 3])
        c, e = d.random_split(ds, [0.25, 0.75])
        try:
            d.random_split(ds, [3, 3])
        except ValueError as exc:
            error = str(exc)
        out.append((len(a), len(b), a[0][0].item(), b[2][1].item(), c.indices, e.indices, error))
    assert out[0] == out[1]


def test_collation_of_numbers_and_tuples() -> None:
    out = []
    for m, d in ((torch, torch.utils.data), (AD, DATA)):
        batch = [(m.tensor([1.0, 2.0]), 3, 0.5), (m.tensor([4.0, 5.0]), 6, 1.5)]
        r = d.default_collate(batch)
        res: list[Any] = [type(r).__name__] + [(v.tolist(), str(v.dtype)) for v in r]
        try:
            d.default_collate([m.ones(2), m.ones(3)])
        except RuntimeError as exc:
            res.append(str(exc))
        try:
            d.TensorDataset(m.ones(2), m.ones(3))
        except AssertionError as exc:
            res.append(str(exc))
        out.append(res)
    assert out[0] == out[1]
