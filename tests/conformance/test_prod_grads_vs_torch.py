"""prod's first, second and third derivatives against PyTorch, bit for bit, on inputs
with zeros, NaN and signed zeros: PyTorch's second derivative runs through cumprod's
backward, whose formulas (one for inputs with zeros, another in grad mode) decide
where NaN and zeros land."""

from __future__ import annotations

import random

import numpy as np
import pytest

from adcli.autograd import engine
from adcli.autograd import ops as T

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

_VALUES = [0.0, -0.0, float("nan"), 2.0, -1.5, 0.5, 3.0, 1.25]


def _cases(n: int) -> list[tuple[list[list[float]], str, int | None, bool]]:
    rng = random.Random(20261127)
    out = []
    for _ in range(n):
        rows, cols = rng.randint(1, 3), rng.randint(1, 4)
        data = [[rng.choice(_VALUES) for _ in range(cols)] for _ in range(rows)]
        dt = rng.choice(["float32", "float64"])
        dim = rng.choice([None, 0, 1])
        out.append((data, dt, dim, rng.random() < 0.5))
    return out


def _run(m, grad, data, dt, dim, graph):  # noqa: ANN001, ANN202
    x = m.tensor(data, dtype=getattr(m, dt) if m is torch else getattr(T.dtypes, dt))
    x.requires_grad_()
    y = x.prod() if dim is None else x.prod(dim)
    w = m.tensor(
        np.linspace(0.25, 2.0, y.numel() or 1)[: y.numel()].reshape(tuple(y.shape)).tolist()
    )
    (g,) = grad(
        (y * w.to(y.dtype) if m is torch else y * T.to_dtype(w, y.data_.dtype)).sum(),
        x,
        create_graph=True,
    )
    v = m.tensor(np.linspace(-1.0, 1.5, x.numel()).reshape(tuple(x.shape)).tolist())
    v = v.to(x.dtype) if m is torch else T.to_dtype(v, x.data_.dtype)
    try:
        (gg,) = grad((g * v).sum(), x, create_graph=graph)
    except RuntimeError as e:  # the first derivative is constant (a dim of size 1)
        return [np.array(g.tolist() if m is torch else g.data_), str(e)]
    out = [g.detach(), gg.detach()]
    if graph and gg.requires_grad:
        (ggg,) = grad((gg * v).sum(), x, allow_unused=True)
        out.append(ggg)
    return [None if t is None else np.array(t.tolist() if m is torch else t.data_) for t in out]


@pytest.mark.parametrize("case", _cases(150))
def test_prod_derivatives_bit_for_bit(case) -> None:  # noqa: ANN001
    data, dt, dim, graph = case
    want = _run(torch, torch.autograd.grad, data, dt, dim, graph)
    got = _run(T, engine.grad, data, dt, dim, graph)
    for order, (w, g) in enumerate(zip(want, got, strict=True)):
        if w is None or g is None or isinstance(w, str) or isinstance(g, str):
            assert w == g if isinstance(w, str) or isinstance(g, str) else w is g
            continue
        w = w.astype(g.dtype)
        assert w.shape == g.shape
        if order == 2:  # the third derivative: the same NaN, values to rounding
            assert np.array_equal(np.isnan(w), np.isnan(g)), (case, want, got)
            assert np.allclose(w, g, rtol=1e-5, atol=1e-5, equal_nan=True), (case, want, got)
            continue
        same = (w == g) & (np.signbit(w) == np.signbit(g)) | (np.isnan(w) & np.isnan(g))
        assert same.all(), (case, want, got)
