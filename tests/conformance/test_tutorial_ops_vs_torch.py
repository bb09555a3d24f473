"""The ops real tutorials use (issue 12) compared with PyTorch 2.13: unflatten,
broadcast_to, tril/triu (+ in place), hstack/vstack/row_stack/column_stack, cumprod,
roll, atan2/arctan2 (+ in place). Each scenario runs against torch and against the
`torch` module an adcli script sees; the results must agree: values (bit for bit),
dtype, shape, `grad_fn` names, whether the result is a view of its input, gradients,
and the error's type and sentence for wrong arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcli.core.session import build_modules  # noqa: E402

pytestmark = pytest.mark.torch

AD = build_modules()["torch"]


def _x(m: Any) -> Any:
    return m.tensor(
        [[0.5, -1.25, 2.0, 0.0, 3.5, -0.75], [1.5, 0.25, -2.0, 4.0, 0.125, 1.0]],
        requires_grad=True,
    )


def _first_line(e: BaseException) -> str:
    # PyTorch appends a C++ stack trace to some "unexpected error" sentences
    return str(e).split("\nException raised from")[0].rstrip("\n")


def _describe(m: Any, fn: Callable[[Any], Any]) -> Any:
    x = _x(m)
    try:
        y = fn(m, x)
    except Exception as e:  # noqa: BLE001
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return ("error", kind, _first_line(e))
    out = [
        tuple(y.shape),
        str(y.dtype),
        None if y.grad_fn is None else y.grad_fn.name(),
        y._base is not None,
        np.asarray(y.detach().tolist()).tolist(),
    ]
    if y.requires_grad:
        (g,) = (m.autograd.grad((y * y).sum(), x, allow_unused=True),)
        out.append(None if g[0] is None else g[0].tolist())
    return out


SCENARIOS: dict[str, Callable[[Any, Any], Any]] = {
    "unflatten": lambda m, x: x.unflatten(1, (2, 3)),
    "unflatten_fn_infer": lambda m, x: m.unflatten(x, -1, (-1, 3)),
    "unflatten_transposed": lambda m, x: x.t().unflatten(0, (3, 2)),
    "unflatten_keywords": lambda m, x: m.unflatten(x, dim=1, sizes=(3, 2)),
    "unflatten_bad_product": lambda m, x: x.unflatten(1, (4, 3)),
    "unflatten_bad_infer": lambda m, x: x.unflatten(1, (-1, 4)),
    "unflatten_two_infer": lambda m, x: x.unflatten(1, (-1, -1)),
    "unflatten_negative": lambda m, x: x.unflatten(1, [-2, 3]),
    "unflatten_empty": lambda m, x: x.unflatten(1, ()),
    "unflatten_int": lambda m, x: x.unflatten(1, 3),
    "unflatten_dim": lambda m, x: x.unflatten(2, (2, 3)),
    "broadcast_to": lambda m, x: m.broadcast_to(x, (3, 2, 6)),
    "broadcast_to_keep": lambda m, x: x.broadcast_to(2, -1, 6),
    "broadcast_to_bad": lambda m, x: m.broadcast_to(x, (3, 3, 6)),
    "broadcast_to_short": lambda m, x: m.broadcast_to(x, (6,)),
    "tril": lambda m, x: x.tril(),
    "tril_kw": lambda m, x: m.tril(x, diagonal=1),
    "triu": lambda m, x: m.triu(x, -1),
    "triu_batch": lambda m, x: x.view(2, 2, 3).triu(1),
    "tril_1d": lambda m, x: m.tril(x[0]),
    "triu_float": lambda m, x: x.triu(1.5),
    "tril_": lambda m, x: (x * 1).tril_(2),
    "triu_": lambda m, x: (x * 1).triu_(),
    "tril_int": lambda m, x: m.tril(m.arange(12).view(3, 4), -1),
    "hstack_1d": lambda m, x: m.hstack([x[0], x[1, :2]]),
    "hstack_2d": lambda m, x: m.hstack((x, x[:, :1])),
    "hstack_0d": lambda m, x: m.hstack([x.sum(), x[0]]),
    "hstack_empty": lambda m, x: m.hstack([]),
    "hstack_tensor": lambda m, x: m.hstack(x),
    "hstack_mixed": lambda m, x: m.hstack([x[0], x[1, 0]]),
    "vstack_1d": lambda m, x: m.vstack([x[0], x[1]]),
    "vstack_0d": lambda m, x: m.vstack([x[0, 0], x[1, 1]]),
    "vstack_bad": lambda m, x: m.vstack([x[0], x[1, :2]]),
    "row_stack": lambda m, x: m.row_stack((x, x[0])),
    "column_stack": lambda m, x: m.column_stack([x[0], x.t()]),
    "column_stack_0d": lambda m, x: m.column_stack([x.sum(), x[0, 0]]),
    "column_stack_empty": lambda m, x: m.column_stack([]),
    "cumprod": lambda m, x: x.cumprod(1),
    "cumprod_fn": lambda m, x: m.cumprod(x, dim=0),
    "cumprod_zeros": lambda m, x: m.cumprod(x * m.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 1.0]), -1),
    "cumprod_dtype": lambda m, x: m.cumprod(x, 1, dtype=m.float64),
    "cumprod_int": lambda m, x: m.cumprod(m.tensor([1, 2, 3], dtype=m.int32), 0),
    "cumprod_bool": lambda m, x: m.cumprod(m.tensor([True, False, True]), 0),
    "cumprod_0d": lambda m, x: m.cumprod(x.sum(), 0),
    "cumprod_nodim": lambda m, x: m.cumprod(x),
    "roll": lambda m, x: x.roll(1, 1),
    "roll_flat": lambda m, x: m.roll(x, 2),
    "roll_tuple": lambda m, x: m.roll(x, (1, -2), (0, 1)),
    "roll_kw": lambda m, x: m.roll(x, shifts=-1, dims=0),
    "roll_list": lambda m, x: m.roll(x, [1], [0]),
    "roll_misaligned": lambda m, x: m.roll(x, (1, 2), (0,)),
    "roll_nodims": lambda m, x: m.roll(x, (1, 2)),
    "roll_empty": lambda m, x: m.roll(x, (), ()),
    "roll_float": lambda m, x: m.roll(x, 1.5),
    "roll_dim": lambda m, x: m.roll(x, 1, 5),
    "roll_0d": lambda m, x: m.roll(x.sum(), 1),
    "roll_0d_dim": lambda m, x: m.roll(x.sum(), 1, -1),
    "atan2_origin": lambda m, x: m.atan2(x * 0, x * 0 - 0.0),
    "atan2_underflow": lambda m, x: m.atan2(x * 1e-30, x * 1e-30),
    # float64: float32 atan2 is SLEEF's (within an ulp, see test_atan2_float32_within_an_ulp)
    "atan2": lambda m, x: m.atan2(x.double(), x.flip(1).double()),
    "arctan2": lambda m, x: m.arctan2(x[0], x),
    "atan2_method": lambda m, x: x.atan2(x * 2),
    "atan2_int": lambda m, x: m.atan2(m.tensor([1, -2, 0]), m.tensor([0, 3, -1])),
    "atan2_number": lambda m, x: m.atan2(x, 2.0),
    "atan2_": lambda m, x: (x * 1).atan2_(x.flip(0)),
    "arctan2_": lambda m, x: (x * 1).arctan2_(x),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_matches_torch(name: str) -> None:
    fn = SCENARIOS[name]
    assert _describe(AD, fn) == _describe(torch, fn)


def test_cumprod_zeros_second_derivative() -> None:
    """PyTorch's grad-mode cumprod_backward (its O(n^2) formula, CopySlices) for zeros."""

    def run(m: Any) -> Any:
        v = m.tensor(
            [[0.5, 0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 0.0, 4.0, 0.25]],
            dtype=m.float64,
            requires_grad=True,
        )
        w = m.arange(5.0, dtype=m.float64)
        (g,) = m.autograd.grad((v.cumprod(1) * w).sum(), v, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), v)
        return g.grad_fn.name(), g.tolist(), gg.tolist()

    assert run(AD) == run(torch)


def test_atan2_float32_within_an_ulp() -> None:
    """PyTorch's float32 atan2 is SLEEF's vector kernel (1-ulp accurate): adcli rounds
    the double result once, so the two may differ in the last bit, never more."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 2000)).astype(np.float32)
    want = torch.atan2(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    got = np.asarray(AD.atan2(AD.tensor(a.tolist()), AD.tensor(b.tolist())).tolist(), np.float32)
    assert np.all(np.abs(got.view(np.int32) - want.view(np.int32)) <= 1)
