"""torch.optim bit for bit: every optimizer and option, float32 and float64, many steps.

adcli's optimizers (adcli/autograd/optim.py) follow PyTorch 2.13's single-tensor code
(the one CPU tensors run) op by op, each op rounded as its CPU kernel rounds.  Here
both libraries take the same parameters and the same gradients (random, over a wide
range of magnitudes) for many steps, and every parameter must stay bit-equal.

The optimizers that take a square root need MKL's `vsSqrt`/`vdSqrt` (PyTorch's,
not correctly rounded in every case); without the mkl package they are skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from adcli.autograd import dtypes, mkl  # noqa: E402
from adcli.autograd import optim as aoptim  # noqa: E402
from adcli.autograd.tensor import Tensor  # noqa: E402

#: (optimizer, options); each runs in float32 and float64 over several seeds
CASES: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.01}),
    ("SGD", {"lr": 0.01, "momentum": 0.9}),
    ("SGD", {"lr": 0.01, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.003, "momentum": 0.8, "nesterov": True, "weight_decay": 1e-3}),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.003, "betas": (0.8, 0.99), "eps": 1e-6, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.01, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.01, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.001, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.001, "centered": True}),
    ("RMSprop", {"lr": 0.001, "centered": True, "momentum": 0.5, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.001, "alpha": 0.9, "eps": 1e-6, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1, "eps": 1e-8}),
]

_SQRT_FREE = {"SGD"}
SHAPES = ((37,), (3, 50))  # two parameters: a SIMD tail, and several vectors
STEPS = 60


def _grads(rng: np.random.Generator, dt: type) -> list[np.ndarray]:
    """Gradients from about 1e-4 to 1e3, both signs (some exactly zero)."""
    out = []
    for shape in SHAPES:
        g = rng.standard_normal(shape) * 10 ** rng.uniform(-4, 3, shape)
        g[rng.random(shape) < 0.05] = 0
        out.append(g.astype(dt))
    return out


def _run(name: str, kw: dict[str, Any], dt: type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(s).astype(dt) for s in SHAPES]
    tps = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in p0]
    aps = [Tensor._make(p.copy()).requires_grad_(True) for p in p0]
    topt = getattr(torch.optim, name)(tps, **kw)
    aopt = getattr(aoptim, name)(aps, **kw)
    for step in range(STEPS):
        for tp, ap, g in zip(tps, aps, _grads(rng, dt), strict=True):
            tp.grad = torch.from_numpy(g.copy())
            ap.grad = Tensor._make(g.copy())
        topt.step()
        aopt.step()
        for i, (tp, ap) in enumerate(zip(tps, aps, strict=True)):
            want = tp.detach().numpy()
            got = ap.detach().numpy()
            assert got.dtype == want.dtype
            bad = int(np.sum(got.view(np.uint8) != want.view(np.uint8)))
            assert np.array_equal(got, want, equal_nan=True), (
                f"{name}{kw} {np.dtype(dt).name} seed {seed}: parameter {i} differs "
                f"after step {step + 1} ({bad} bytes)"
            )


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize(("name", "kw"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_optimizer_is_bit_equal_to_torch(name: str, kw: dict[str, Any], dt: type) -> None:
    if name not in _SQRT_FREE and not mkl.available():
        pytest.skip("PyTorch's square root is MKL's: needs the mkl package")
    torch.set_num_threads(1)
    for seed in range(3):
        _run(name, kw, dt, seed)


@pytest.mark.parametrize("name", ["Adam", "NAdam", "Adagrad"])
def test_step_state_in_float64_when_that_is_the_default_dtype(name: str) -> None:
    """`step` (and NAdam's `mu_product`) are tensors of the default dtype's precision."""
    if not mkl.available():
        pytest.skip("PyTorch's square root is MKL's: needs the mkl package")
    before, tbefore = dtypes.DEFAULT_FLOAT, torch.get_default_dtype()
    dtypes.DEFAULT_FLOAT = dtypes.float64
    torch.set_default_dtype(torch.float64)
    try:
        _run(name, {"lr": 0.01}, np.float32, 7)
    finally:
        dtypes.DEFAULT_FLOAT = before
        torch.set_default_dtype(tbefore)
