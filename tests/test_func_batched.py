"""torch.func's batched paths (adcli/autograd/batched.py, vmapping.py): jacrev, jacfwd,
hessian and vmap run once with every basis vector (or slice), give what the one at a
time paths give, and fall back to them where an op has no batched rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from adcli.autograd import func, ops, random
from adcli.autograd.tensor import Tensor


def randn(*shape: int) -> Tensor:
    return Tensor._make(random.randn(shape))


def layer(w: Tensor, b: Tensor, v: Tensor) -> Tensor:
    return ops.tanh(ops.linear(v, w, b))


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail when a transform leaves its batched path."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("one basis vector at a time")

    monkeypatch.setattr(func, "_jacrev_rows", refuse)
    real_vmap = func._vmap_batched

    def vmap_batched(*a: Any, **k: Any) -> Any:
        out = real_vmap(*a, **k)
        assert out is not func._NOT_BATCHED, "vmap went slice by slice"
        return out

    monkeypatch.setattr(func, "_vmap_batched", vmap_batched)
    real_fwd = func._jacfwd_batched

    def jacfwd_batched(*a: Any, **k: Any) -> Any:
        out = real_fwd(*a, **k)
        assert out is not None, "jacfwd went column by column"
        return out

    monkeypatch.setattr(func, "_jacfwd_batched", jacfwd_batched)
    yield


REAL_ROWS = func._jacrev_rows


def one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(func, "_jacrev_rows", REAL_ROWS)
    monkeypatch.setattr(func, "_jacrev_batched", lambda *a: None)
    monkeypatch.setattr(func, "_jacfwd_batched", lambda *a: None)
    monkeypatch.setattr(func, "_vmap_batched", lambda *a: func._NOT_BATCHED)


def both_ways(
    monkeypatch: pytest.MonkeyPatch, compute: Callable[[], Tensor]
) -> tuple[np.ndarray, np.ndarray]:
    fast = compute().data_.copy()
    with monkeypatch.context() as m:
        one_at_a_time(m)
        slow = compute().data_.copy()
    return fast, slow


W, B, V = randn(7, 5), randn(7), randn(5)
VS = randn(6, 5)

CASES: dict[str, Callable[[], Tensor]] = {
    "jacrev": lambda: func.jacrev(layer, argnums=2)(W, B, V),
    "jacrev_weight": lambda: func.jacrev(layer, argnums=0)(W, B, V),
    "jacfwd": lambda: func.jacfwd(layer, argnums=2)(W, B, V),
    "hessian": lambda: func.hessian(layer, argnums=2)(W, B, V),
    "jacfwd_jacfwd": lambda: func.jacfwd(func.jacfwd(layer, argnums=2), argnums=2)(W, B, V),
    "jacrev_jacrev": lambda: func.jacrev(func.jacrev(layer, argnums=2), argnums=2)(W, B, V),
    "vmap_jacrev": lambda: func.vmap(func.jacrev(layer, argnums=2), in_dims=(None, None, 0))(
        W, B, VS
    ),
    "vmap_hessian": lambda: func.vmap(func.hessian(layer, argnums=2), in_dims=(None, None, 0))(
        W, B, VS
    ),
    "vmap_sum": lambda: func.vmap(lambda r: ops.sum(ops.sin(r * 2.0 + 1.0), -1))(VS),
    "vmap_inverse_trig": lambda: func.vmap(
        lambda r: ops.asin(ops.tanh(r)) + ops.acos(ops.tanh(r)) * ops.atan(r) + ops.rsqrt(r * r + 1)
    )(VS),
    "hessian_inverse_trig": lambda: func.hessian(
        lambda v: ops.sum(ops.asin(ops.tanh(v)) * ops.atan(v) + ops.rsqrt(v * v + 1))
    )(V),
}


@pytest.mark.parametrize("name", list(CASES))
def test_batched_paths_agree_with_one_at_a_time(
    name: str, monkeypatch: pytest.MonkeyPatch, no_fallback: None
) -> None:
    fast, slow = both_ways(monkeypatch, CASES[name])
    assert fast.shape == slow.shape
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)


def test_a_wide_hessian_is_one_pass(no_fallback: None) -> None:
    """The tutorial's size: 512 inputs, 32 outputs (16,384 backward passes one at a time)."""
    w, b, v = randn(32, 512), randn(32), randn(512)
    h = func.hessian(layer, argnums=2)(w, b, v)
    assert h.shape == (32, 512, 512)
    rr = func.jacrev(func.jacrev(layer, argnums=2), argnums=2)(w, b, v)
    np.testing.assert_allclose(h.data_, rr.data_, rtol=1e-4, atol=1e-6)


def test_ops_without_a_rule_go_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def clamped(r: Tensor) -> Tensor:
        return ops.exp(ops.clamp(r, -0.5, 0.5))

    for compute in (
        lambda: func.jacrev(clamped)(V),
        lambda: func.jacfwd(clamped)(V),
        lambda: func.vmap(clamped)(VS),
    ):
        fast, slow = both_ways(monkeypatch, compute)
        np.testing.assert_array_equal(fast, slow)


def test_a_hook_in_the_graph_sees_one_row_at_a_time() -> None:
    seen: list[tuple[int, ...]] = []

    def hooked(r: Tensor) -> Tensor:
        y = ops.exp(r)
        y.register_hook(lambda g: seen.append(g.data_.shape))
        return y

    func.jacrev(hooked)(V)
    assert seen == [(5,)] * 5


def test_vmap_does_not_run_a_rule_it_lacks_on_the_stack() -> None:
    """`==` has no batched rule: Python's identity test must not answer it."""
    out = func.vmap(lambda r: ops.mul(r == r, r))(VS)
    np.testing.assert_array_equal(out.data_, VS.data_)


def test_random_numbers_are_drawn_per_slice_and_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function drawing random numbers runs one slice (column) at a time, drawing for
    each as before: the batched try leaves the generator where it was."""

    def noisy(r: Tensor) -> Tensor:
        return r + Tensor._make(random.randn((5,)))

    for compute in (lambda: func.vmap(noisy)(VS), lambda: func.jacfwd(noisy)(V)):
        state = random.default_generator.get_state()
        fast = compute().data_.copy()
        random.default_generator.set_state(state)
        with monkeypatch.context() as m:
            one_at_a_time(m)
            slow = compute().data_.copy()
        np.testing.assert_array_equal(fast, slow)
