"""logsumexp bit for bit: PyTorch's steps (max, exp of the difference, sum, log, plus
the max) through the same kernels, so its gradient exp(x - result) agrees too."""

from __future__ import annotations

import numpy as np
import pytest

from adcli.autograd import ops
from adcli.autograd.tensor import Tensor

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

SHAPES = [((3,), 0), ((5, 7), 1), ((5, 7), 0), ((4, 3, 6), (0, 2)), ((2, 40), -1), ((1,), 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "dim"), SHAPES)
def test_values_and_gradients_are_torchs(shape: tuple[int, ...], dim: object, dtype: str) -> None:
    rng = np.random.default_rng(7)
    for scale in (0.5, 3.0, 40.0):
        x = (rng.standard_normal(shape) * scale).astype(dtype)
        if x.size > 2:
            x.flat[1] = np.inf if scale == 40.0 else x.flat[1]
        t = torch.tensor(x, requires_grad=True)
        a = Tensor._make(x.copy()).requires_grad_()
        tr = torch.logsumexp(t, dim)
        ar = ops.logsumexp(a, dim)
        np.testing.assert_array_equal(ar.data_, tr.detach().numpy())
        (tg,) = torch.autograd.grad(tr.sum(), t)
        ar.sum().backward()
        np.testing.assert_array_equal(a.grad.data_, tg.numpy())
