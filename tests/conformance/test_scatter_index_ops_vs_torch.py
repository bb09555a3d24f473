"""scatter/scatter_add, index_fill/index_add/index_copy/index_put (+ in place),
smooth_l1_loss/huber_loss (F and nn), logcumsumexp, fmod, remainder_, clamp_min/clamp_max
(+ in place), compared with PyTorch 2.13. Each scenario runs against torch and against
the `torch` module an adcli script sees: values, dtype, shape, `grad_fn` names,
gradients, second derivatives (a gradient built with create_graph, differentiated
again), and the error's type and sentence for wrong arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcli.core.session import build_modules  # noqa: E402

pytestmark = pytest.mark.torch

AD = build_modules()
ADT = AD["torch"]
ADNN = AD["torch.nn"]
ADF = AD["torch.nn.functional"]
MODS = {"torch": (torch, torch.nn, torch.nn.functional), "adcli": (ADT, ADNN, ADF)}


class M:
    """One library's torch, torch.nn and torch.nn.functional."""

    def __init__(self, lib: str) -> None:
        self.t, self.nn, self.F = MODS[lib]


def _x(t: Any, dtype: Any = None) -> Any:
    return t.tensor(
        [[0.5, -1.25, 2.0, 0.0], [1.5, 0.25, -2.0, 4.0], [-0.5, 3.0, 0.75, -3.5]],
        dtype=dtype or t.float32,
        requires_grad=True,
    )


def _first_line(e: BaseException) -> str:
    return str(e).split("\nException raised from")[0].rstrip("\n")


def _error(e: BaseException) -> tuple[str, str, str]:
    kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    return ("error", kind, _first_line(e))


def _describe(lib: str, fn: Callable[[M, Any], Any]) -> Any:
    m = M(lib)
    x = _x(m.t)
    try:
        y = fn(m, x)
    except Exception as e:  # noqa: BLE001
        return _error(e)
    out = [
        tuple(y.shape),
        str(y.dtype),
        None if y.grad_fn is None else y.grad_fn.name(),
        np.asarray(y.detach().tolist()).tolist(),
    ]
    if y.requires_grad:
        w = m.t.arange(y.numel(), dtype=y.dtype).reshape(y.shape) * 0.25 - 1
        try:
            (g,) = m.t.autograd.grad((y * w).sum(), x, allow_unused=True)
        except Exception as e:  # noqa: BLE001
            return [*out, _error(e)]
        out.append(None if g is None else g.tolist())
    return out


I = [[0, 2, 1, 3], [1, 0, 3, 2]]  # noqa: E741 (a scatter index, unique per row)


def _i(m: M, rows: Any = None) -> Any:
    return m.t.tensor(I if rows is None else rows)


SCENARIOS: dict[str, Callable[[M, Any], Any]] = {
    # scatter: src, value, in place, one-hot, keywords, reduce, errors
    "scatter_src": lambda m, x: x.scatter(1, _i(m), x[:2] * 2),
    "scatter_src_bigger": lambda m, x: x.scatter(0, _i(m, [[2, 0]]), x * 3),
    "scatter_value": lambda m, x: x.scatter(1, _i(m), 1.5),
    "scatter_value_kw": lambda m, x: m.t.scatter(x, 1, index=_i(m), value=-2.0),
    "scatter_src_kw": lambda m, x: m.t.scatter(x, dim=1, index=_i(m), src=x[:2]),
    "scatter_int32_index": lambda m, x: x.scatter(1, _i(m).int(), 0.5),
    "scatter_": lambda m, x: (x * 1).scatter_(1, _i(m), x[1:] * x[1:]),
    "scatter_value_": lambda m, x: (x * 1).scatter_(0, _i(m, [[2, 1, 0, 1]]), 7.0),
    "scatter_one_hot": lambda m, x: m.t.zeros(3, 4).scatter_(
        1, m.t.tensor([0, 3, 1]).unsqueeze(1), 1.0
    ),
    "scatter_long_value": lambda m, x: m.t.zeros(2, 4, dtype=m.t.long).scatter(1, _i(m), 2.5),
    "scatter_0d": lambda m, x: x[0, 0].scatter(0, m.t.tensor(0), x[1, 1] * 2),
    "scatter_reduce_add": lambda m, x: m.t.ones(3, 4).scatter(1, _i(m), 2.0, reduce="add"),
    "scatter_reduce_mul": lambda m, x: m.t.ones(3, 4).scatter_(1, _i(m), 3.0, reduce="multiply"),
    "scatter_reduce_grad": lambda m, x: x.scatter(1, _i(m), 2.0, reduce="add"),
    "scatter_reduce_grad_": lambda m, x: (x * 1).scatter_(1, _i(m), 2.0, reduce="multiply"),
    "scatter_reduce_bad": lambda m, x: x.scatter(1, _i(m), 2.0, reduce="max"),
    "scatter_float_index": lambda m, x: x.scatter(1, _i(m).float(), 1.0),
    "scatter_src_dtype": lambda m, x: x.scatter(1, _i(m), x.double()),
    "scatter_ndim": lambda m, x: x.scatter(1, _i(m)[0], 1.0),
    "scatter_too_big": lambda m, x: x.scatter(1, m.t.zeros(4, 1, dtype=m.t.long), x),
    "scatter_value_too_big": lambda m, x: x.scatter(1, m.t.zeros(4, 1, dtype=m.t.long), 1.0),
    "scatter_out_of_bounds": lambda m, x: x.scatter(1, _i(m) + 2, 1.0),
    "scatter_negative": lambda m, x: x.scatter(1, _i(m) - 1, 1.0),
    "scatter_dim": lambda m, x: x.scatter(2, _i(m), 1.0),
    "scatter_leaf_": lambda m, x: x.scatter_(1, _i(m), 1.0),
    # scatter_add
    "scatter_add": lambda m, x: x.scatter_add(1, _i(m, [[0, 0, 1], [3, 3, 3]]), x[1:, :3] * 2),
    "scatter_add_fn": lambda m, x: m.t.scatter_add(x, 0, _i(m), x[:2]),
    "scatter_add_": lambda m, x: (x * 1).scatter_add_(1, _i(m), x[:2].exp()),
    "scatter_add_number": lambda m, x: x.scatter_add(1, _i(m), 2.0),
    "scatter_add_dtype": lambda m, x: x.scatter_add(1, _i(m), x.double()),
    # index_fill
    "index_fill": lambda m, x: x.index_fill(1, m.t.tensor([0, 2]), -1.0),
    "index_fill_neg": lambda m, x: m.t.index_fill(x, 0, m.t.tensor([-1]), 9.0),
    "index_fill_0d_index": lambda m, x: x.index_fill(1, m.t.tensor(3), 2.0),
    "index_fill_tensor": lambda m, x: x.index_fill(
        1, m.t.tensor([1, 3]), m.t.tensor(2.0, requires_grad=True)
    ),
    "index_fill_tensor_value_grad": lambda m, x: (x * 0).index_fill(1, m.t.tensor([1]), x[0, 0]),
    "index_fill_": lambda m, x: (x * 1).index_fill_(0, m.t.tensor([0, 2]), 0.5),
    "index_fill_int32": lambda m, x: x.index_fill(1, m.t.tensor([0]).int(), 1.0),
    "index_fill_2d": lambda m, x: x.index_fill(1, m.t.tensor([[0]]), 1.0),
    "index_fill_bounds": lambda m, x: x.index_fill(1, m.t.tensor([0, 4]), 1.0),
    "index_fill_value_1d": lambda m, x: x.index_fill(1, m.t.tensor([0]), m.t.ones(1)),
    # index_add
    "index_add": lambda m, x: x.index_add(1, m.t.tensor([0, 2]), x[:, 1:3] * 2),
    "index_add_dup": lambda m, x: x.index_add(0, m.t.tensor([1, 1]), x[:2] * x[1:]),
    "index_add_alpha": lambda m, x: m.t.index_add(x, 1, m.t.tensor([3]), x[:, :1], alpha=-2),
    "index_add_": lambda m, x: (x * 1).index_add_(0, m.t.tensor([2, 0]), x[1:]),
    "index_add_int32": lambda m, x: x.index_add(0, m.t.tensor([0]).int(), x[:1]),
    "index_add_count": lambda m, x: x.index_add(1, m.t.tensor([0, 1]), x),
    "index_add_float": lambda m, x: x.index_add(1, m.t.tensor([0.0]), x[:, :1]),
    "index_add_dtype": lambda m, x: x.index_add(1, m.t.tensor([0]), x[:, :1].double()),
    "index_add_shape": lambda m, x: x.index_add(1, m.t.tensor([0, 1]), x[:2, :2]),
    "index_add_2d": lambda m, x: x.index_add(1, m.t.tensor([[0, 1]]), x[:, :2]),
    "index_add_bounds": lambda m, x: x.index_add(1, m.t.tensor([0, 7]), x[:, :2]),
    "index_add_negative_1d": lambda m, x: x[0].index_add(0, m.t.tensor([-1]), x[1, :1]),
    "index_add_negative_2d": lambda m, x: x.index_add(0, m.t.tensor([-1]), x[:1]),
    "index_add_negative_alpha": lambda m, x: x.index_add(1, m.t.tensor([-1]), x[:, :1], alpha=2),
    "index_add_3d": lambda m, x: x.view(3, 2, 2).index_add(1, m.t.tensor([2]), x[:, :2]),
    # index_copy
    "index_copy_negative": lambda m, x: x.index_copy(1, m.t.tensor([-1]), x[:, :1]),
    "index_copy": lambda m, x: x.index_copy(1, m.t.tensor([3, 0]), x[:, :2] * 3),
    "index_copy_": lambda m, x: (x * 1).index_copy_(0, m.t.tensor([1]), x[2:] + 1),
    "index_copy_fn": lambda m, x: m.t.index_copy(x, 0, m.t.tensor([0, 2]), x[1:] * x[1:]),
    "index_copy_int32": lambda m, x: x.index_copy(1, m.t.tensor([0]).int(), x[:, :1]),
    "index_copy_count": lambda m, x: x.index_copy(1, m.t.tensor([0, 1]), x),
    "index_copy_dtype": lambda m, x: x.index_copy(1, m.t.tensor([0]), x[:, :1].double()),
    "index_copy_bounds": lambda m, x: x.index_copy(1, m.t.tensor([5]), x[:, :1]),
    "index_copy_slices": lambda m, x: x.index_copy(1, m.t.tensor([0, 1]), x[:2, :2]),
    # index_put
    "index_put": lambda m, x: x.index_put((m.t.tensor([0, 2]),), x[1] * 2),
    "index_put_pairs": lambda m, x: x.index_put(
        (m.t.tensor([0, 2]), m.t.tensor([1, 3])), x[1, :2] * 3
    ),
    "index_put_accumulate": lambda m, x: x.index_put(
        (m.t.tensor([0, 0, 2]),), x[1] * x[1], accumulate=True
    ),
    "index_put_mask": lambda m, x: x.index_put((x.detach() > 1,), m.t.tensor(-1.0)),
    "index_put_": lambda m, x: (x * 1).index_put_([m.t.tensor([1])], x[2] * 5),
    "index_put_acc_": lambda m, x: (x * 1).index_put_(
        (m.t.tensor([1, 1]), m.t.tensor([0, 0])), x[0, 3], accumulate=True
    ),
    "torch_index_put_": lambda m, x: m.t.index_put_(
        m.t.zeros(3, 4), (m.t.tensor([2]),), m.t.tensor(2.0)
    ),
    "index_put_bounds": lambda m, x: x.index_put((m.t.tensor([0, 5]),), x[0]),
    "index_put_dtype": lambda m, x: x.index_put((m.t.tensor([0]),), x[0].double()),
    "index_put_float_index": lambda m, x: x.index_put((m.t.tensor([0.0]),), x[0]),
    "index_put_shape": lambda m, x: x.index_put((m.t.tensor([0, 1]),), m.t.ones(3)),
    "index_put_not_tuple": lambda m, x: x.index_put(m.t.tensor([0]), x[0]),
    "index_put_number": lambda m, x: x.index_put((m.t.tensor([0]),), 1.0),
    # losses
    "smooth_l1": lambda m, x: m.F.smooth_l1_loss(x, x.detach().flip(0)),
    "smooth_l1_beta": lambda m, x: m.F.smooth_l1_loss(x, m.t.zeros(3, 4), beta=0.6),
    "smooth_l1_sum": lambda m, x: m.F.smooth_l1_loss(x * 2, x.flip(1), reduction="sum"),
    "smooth_l1_none": lambda m, x: m.F.smooth_l1_loss(x, m.t.ones(4), reduction="none", beta=2),
    "smooth_l1_beta0": lambda m, x: m.F.smooth_l1_loss(x, m.t.zeros(3, 4), beta=0.0),
    "smooth_l1_legacy": lambda m, x: m.F.smooth_l1_loss(x, m.t.zeros(3, 4), size_average=False),
    "smooth_l1_module": lambda m, x: m.nn.SmoothL1Loss(beta=0.5)(x, m.t.ones(3, 4)),
    "smooth_l1_neg_beta": lambda m, x: m.F.smooth_l1_loss(x, x, beta=-1.0),
    "smooth_l1_reduction": lambda m, x: m.F.smooth_l1_loss(x, x, reduction="avg"),
    "smooth_l1_long": lambda m, x: m.F.smooth_l1_loss(x.long(), x.long()),
    "smooth_l1_double_target": lambda m, x: m.F.smooth_l1_loss(x, m.t.ones(3, 4).double()),
    "smooth_l1_shape": lambda m, x: m.F.smooth_l1_loss(x, m.t.ones(5)),
    "huber": lambda m, x: m.F.huber_loss(x, x.detach().flip(0)),
    "huber_delta": lambda m, x: m.F.huber_loss(x, m.t.zeros(3, 4), delta=0.6),
    "huber_sum": lambda m, x: m.F.huber_loss(x * 2, x.flip(1), reduction="sum", delta=3),
    "huber_none": lambda m, x: m.F.huber_loss(x, m.t.ones(4), reduction="none"),
    "huber_module": lambda m, x: m.nn.HuberLoss(reduction="sum", delta=2.0)(x, m.t.ones(3, 4)),
    "huber_zero_delta": lambda m, x: m.F.huber_loss(x, x, delta=0.0),
    "huber_long": lambda m, x: m.F.huber_loss(x.long(), x.long()),
    "huber_long_input": lambda m, x: m.F.huber_loss(x.long(), x),
    "huber_double_target": lambda m, x: m.F.huber_loss(x, m.t.ones(3, 4).double()),
    # logcumsumexp
    "logcumsumexp": lambda m, x: m.t.logcumsumexp(x, 1),
    "logcumsumexp_method": lambda m, x: (x * 30).logcumsumexp(dim=0),
    "logcumsumexp_inf": lambda m, x: m.t.logcumsumexp(
        x.masked_fill(x.detach() > 1, float("-inf")), 1
    ),
    "logcumsumexp_0d": lambda m, x: m.t.logcumsumexp(x[1, 1], 0),
    "logcumsumexp_0d_grad_of_grad": lambda m, x: m.t.autograd.grad(
        m.t.logcumsumexp(x.sum(), 0), x, create_graph=True
    )[0],
    "logcumsumexp_long": lambda m, x: m.t.logcumsumexp(x.long(), 0),
    "logcumsumexp_dim": lambda m, x: m.t.logcumsumexp(x, 2),
    # fmod / remainder_ / clamp_min / clamp_max
    "fmod": lambda m, x: m.t.fmod(x, 1.5),
    "fmod_tensor": lambda m, x: x.fmod(x.detach().flip(0).abs() + 0.5),
    "fmod_tensor_grad": lambda m, x: m.t.fmod(x * 3, x[0].abs() + 0.5),
    "fmod_int": lambda m, x: m.t.fmod(m.t.tensor([-7, 5, 3]), 2),
    "fmod_int_zero": lambda m, x: m.t.fmod(m.t.tensor([-7, 5, 3]), 0),
    "fmod_": lambda m, x: (x * 1).fmod_(0.7),
    "fmod_tensor_": lambda m, x: (x * 1).fmod_(x[0].detach().abs() + 0.25),
    "fmod_int_": lambda m, x: m.t.tensor([5, 3]).fmod_(2.5),
    "fmod_shape_": lambda m, x: (x[0] * 1).fmod_(x[:2]),
    "remainder_": lambda m, x: (x * 1).remainder_(0.7),
    "remainder_tensor_": lambda m, x: (x * 1).remainder_(x[1] * 0 - 1.5),
    "remainder_int_": lambda m, x: m.t.tensor([5, 3]).remainder_(2.5),
    "clamp_min": lambda m, x: x.clamp_min(0.25),
    "clamp_max_fn": lambda m, x: m.t.clamp_max(x, 0.5),
    "clamp_min_tensor": lambda m, x: m.t.clamp_min(x, x[0] * 0.5),
    "clamp_max_tensor": lambda m, x: x.clamp_max(m.t.zeros(4, requires_grad=True)),
    "clamp_min_int": lambda m, x: m.t.clamp_min(m.t.tensor([1, 2]), 1.5),
    "clamp_min_bool": lambda m, x: m.t.tensor([True]).clamp_min(False),
    "clamp_min_": lambda m, x: (x * 1).clamp_min_(0.0),
    "clamp_max_": lambda m, x: (x * 1).clamp_max_(1.0),
    "torch_clamp_min_": lambda m, x: m.t.clamp_min_(x * 1, -0.5),
    "clamp_min_int_": lambda m, x: m.t.tensor([5, 3]).clamp_min_(2.5),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_as_torch(name: str) -> None:
    want = _describe("torch", SCENARIOS[name])
    got = _describe("adcli", SCENARIOS[name])
    assert got == want


# second derivatives, in float64 (a gradient with create_graph, then its own gradient)
SECOND: dict[str, Callable[[M, Any], Any]] = {
    "scatter_src": lambda m, x: x.scatter(1, _i(m), (x[:2] * x[1:]).sin()),
    "scatter_value": lambda m, x: (x * x).scatter(1, _i(m), 0.5),
    "scatter_add": lambda m, x: (x * x).scatter_add(1, _i(m), x[1:] * x[:2]),
    "index_fill": lambda m, x: (x * x).index_fill(1, m.t.tensor([1, 2]), 2.0),
    "index_fill_tensor": lambda m, x: (x * x).index_fill(1, m.t.tensor([1]), x[0, 0] * x[1, 1]),
    "index_add": lambda m, x: (x * x).index_add(1, m.t.tensor([0, 0]), x[:, 2:] ** 3, alpha=2),
    "index_copy": lambda m, x: (x * x).index_copy(0, m.t.tensor([2]), x[:1] ** 3),
    "index_put": lambda m, x: (x * x).index_put((m.t.tensor([0, 2]),), x[1] ** 3),
    "index_put_acc": lambda m, x: (x * x).index_put((m.t.tensor([0, 0]),), x[1] ** 3, True),
    "smooth_l1": lambda m, x: m.F.smooth_l1_loss(x * x, x.flip(0), beta=1.5),
    "smooth_l1_none": lambda m, x: m.F.smooth_l1_loss(x, x.flip(1) ** 2, reduction="none"),
    "huber": lambda m, x: m.F.huber_loss(x * x, x.flip(0) * 0.5, delta=2.0),
    "huber_sum": lambda m, x: m.F.huber_loss(x.exp(), x.flip(1), reduction="sum"),
    "logcumsumexp": lambda m, x: m.t.logcumsumexp(x * x, 1),
    "logcumsumexp_0": lambda m, x: m.t.logcumsumexp(x.sin(), 0),
    "fmod_tensor": lambda m, x: m.t.fmod(x * x, x[0].abs() + 0.5),
    "clamp_min": lambda m, x: (x * x).clamp_min(1.0),
    "clamp_max_tensor": lambda m, x: (x * x).clamp_max(x[1].abs()),
}


def _second(lib: str, fn: Callable[[M, Any], Any]) -> Any:
    m = M(lib)
    x = _x(m.t, m.t.float64)
    y = fn(m, x)
    w = m.t.arange(y.numel(), dtype=y.dtype).reshape(y.shape) * 0.25 - 1
    (g,) = m.t.autograd.grad((y * w).sum(), x, create_graph=True)
    (h,) = m.t.autograd.grad((g * g).sum(), x, allow_unused=True)
    name = None if g.grad_fn is None else g.grad_fn.name()
    return name, np.asarray(g.tolist()), None if h is None else np.asarray(h.tolist())


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative_as_torch(name: str) -> None:
    wn, wg, wh = _second("torch", SECOND[name])
    gn, gg, gh = _second("adcli", SECOND[name])
    np.testing.assert_allclose(gg, wg, rtol=1e-12, atol=1e-12)
    assert (gh is None) == (wh is None)
    if wh is not None:
        np.testing.assert_allclose(gh, wh, rtol=1e-10, atol=1e-12)
    if name.startswith(("smooth_l1", "huber")):  # their gradient is its own node
        assert gn == wn


def _bigger_source(lib: str) -> Any:
    """A scatter source larger than its index: refused only when its gradient is needed."""
    m = M(lib)
    t1 = m.t.tensor([[-1.0, 2.0]], requires_grad=True)
    t2 = m.t.tensor([[1.0, 1.0, 3.0]], requires_grad=True)
    out = []
    for y in (t1.scatter_add(0, m.t.tensor([[0]]), t2), t1.scatter(1, m.t.tensor([[1]]), t2)):
        out.append(m.t.autograd.grad(y.sum(), t1, retain_graph=True)[0].tolist())
        try:
            y.sum().backward()
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_larger_source_refused_only_when_its_gradient_is_needed() -> None:
    assert _bigger_source("adcli") == _bigger_source("torch")


def _clamp_min_version(lib: str) -> str:
    """clamp_min with a tensor bound checks the bound's version first, as PyTorch."""
    m = M(lib)
    a = m.t.ones(1, 2, requires_grad=True) * 1
    b = m.t.tensor(0.5, requires_grad=True) * 1
    y = m.t.clamp_min(a, b)
    with m.t.no_grad():
        a.mul_(1.0)
        b.mul_(1.0)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return str(e)
    return "no error"


def test_clamp_min_tensor_version_error_names_the_bound() -> None:
    assert _clamp_min_version("adcli") == _clamp_min_version("torch")


def _signed_zero_second(lib: str, fn: str) -> Any:
    """The second derivative outside the kink is gg * g * 0: a signed zero."""
    m = M(lib)
    x = m.t.tensor([[-1.0, 3.0]], requires_grad=True)
    loss = getattr(m.F, fn)(x, m.t.tensor([[1.0, 0.5]]), reduction="sum")
    (g,) = m.t.autograd.grad(loss, x, create_graph=True)
    (h,) = m.t.autograd.grad((g * g).sum(), x)
    return [str(v) for v in h.flatten().tolist()]


@pytest.mark.parametrize("fn", ["smooth_l1_loss", "huber_loss"])
def test_second_derivative_zero_signs(fn: str) -> None:
    assert _signed_zero_second("adcli", fn) == _signed_zero_second("torch", fn)
