"""var, std and the 2-norm against PyTorch bit for bit (float64, and float32 where
its kernels are modelled exactly): whole tensors (PyTorch's two-pass double
algorithm), dims (Welford in double, in memory order), transposed inputs; and
log_softmax's backward, whose kernel is SIMD code (AVX2 modelled)."""

from __future__ import annotations

import numpy as np
import pytest

from adcli.autograd import engine
from adcli.autograd import functions as F
from adcli.autograd import ops as T

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

AVX2 = torch.backends.cpu.get_cpu_capability() == "AVX2"


def _inputs(dt: str, n: int = 120):  # noqa: ANN202
    rng = np.random.default_rng(11)
    for _ in range(n):
        shape = (int(rng.integers(1, 6)), int(rng.integers(1, 40)))
        yield (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3)).astype(dt)


def _pair(x: np.ndarray, transpose: bool):  # noqa: ANN202
    t = torch.tensor(x)
    a = T.tensor(x.tolist(), dtype=getattr(T.dtypes, str(x.dtype)))
    return (t.T, a.T) if transpose else (t, a)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("how", ["all", "dim0", "dim1", "T-all", "T-dim1", "keepdim"])
def test_var_std_bit_for_bit(dt: str, op: str, how: str) -> None:
    for x in _inputs(dt):
        t, a = _pair(x, how.startswith("T"))
        if how.endswith("all"):
            want, got = getattr(t, op)(), getattr(a, op)()
        elif how == "keepdim":
            want, got = getattr(t, op)(0, keepdim=True), getattr(a, op)(0, keepdim=True)
        else:
            d = int(how[-1])
            want, got = getattr(t, op)(d), getattr(a, op)(d)
        w = want.numpy()
        assert w.shape == got.data_.shape
        assert np.array_equal(w, got.data_, equal_nan=True), (op, how, x)


@pytest.mark.parametrize("how", ["all", "dim0", "dim1", "T-dim1"])
def test_norm2_float64_bit_for_bit(how: str) -> None:
    for x in _inputs("float64"):
        t, a = _pair(x, how.startswith("T"))
        if how == "all":
            want, got = t.norm(), a.norm()
        else:
            d = int(how[-1])
            want, got = t.norm(dim=d), a.norm(dim=d)
        assert np.array_equal(want.numpy(), got.data_), (how, x)


@pytest.mark.skipif(not AVX2, reason="PyTorch runs non-AVX2 kernels here")
@pytest.mark.parametrize("dim", [-1, 0])
def test_log_softmax_backward_float32_bit_for_bit(dim: int) -> None:
    rng = np.random.default_rng(5)
    bad = total = 0
    for x in _inputs("float32"):
        g = rng.standard_normal(x.shape).astype(np.float32)
        t = torch.tensor(x, requires_grad=True)
        y = torch.log_softmax(t, dim)
        (want,) = torch.autograd.grad(y, t, torch.tensor(g))
        # from PyTorch's own forward result, so only the backward kernel is compared
        ya = T.tensor(y.detach().numpy().tolist())
        got = F.LogSoftmaxBackwardData.apply(T.tensor(g.tolist()), ya, dim=dim % 2)
        bad += int((want.numpy() != got.data_).sum())
        total += want.numel()
    assert bad <= total * 0.001


def test_log_softmax_gradient_through_engine() -> None:
    x = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], np.float32)
    t = torch.tensor(x, requires_grad=True)
    a = T.tensor(x.tolist(), requires_grad=True)
    g = torch.tensor([[1.0, -2.0, 0.5], [-0.0, 0.0, -0.0]])
    (want,) = torch.autograd.grad(torch.log_softmax(t, 1), t, g)
    (got,) = engine.grad(T.log_softmax(a, 1), a, T.tensor(g.tolist()))
    w = want.numpy()
    assert np.array_equal(w, got.data_) and np.array_equal(np.signbit(w), np.signbit(got.data_))
