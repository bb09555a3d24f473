"""The sign of a zero max/min against PyTorch: `max()`/`min()` of a whole tensor and
`amax`/`amin` (all dims or some) on plain, transposed and flipped tensors of +0., -0.
and other values, float32 and float64, bit for bit. PyTorch's kernels break a tie
between zeros by their loop structure (SIMD lanes, TensorIterator's memory order),
which adcli.autograd.extremes replays."""

from __future__ import annotations

import random

import numpy as np
import pytest

from adcli.autograd import ops as T

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

_OPS = ["max", "min", "amax", "amin", "max_dim", "min_dim", "amax_dim", "amin_dim"]


def _cases(n: int) -> list[tuple[list[list[float]], str, str, str, int]]:
    rng = random.Random(777)
    out = []
    for _ in range(n):
        rows, cols = rng.randint(1, 12), rng.randint(1, 40)
        pool = [0.0, -0.0] + ([1.0, -1.0, float("nan")] if rng.random() < 0.3 else [])
        data = [[rng.choice(pool) for _ in range(cols)] for _ in range(rows)]
        out.append(
            (
                data,
                rng.choice(["float32", "float64"]),
                rng.choice(["plain", "T", "flipT"]),
                rng.choice(_OPS),
                rng.choice([0, 1]),
            )
        )
    return out


def _run(m, data, dt, view, op, d):  # noqa: ANN001, ANN202
    x = m.tensor(data, dtype=getattr(torch, dt) if m is torch else getattr(T.dtypes, dt))
    if view == "T":
        x = x.T
    elif view == "flipT":
        x = x.flip(1).T
    name = op.removesuffix("_dim")
    if op == name:
        r = getattr(x, name)()
    elif name in ("max", "min"):
        r = getattr(x, name)(d)[0]
    else:
        r = getattr(x, name)(d)
    return np.array(r.tolist() if m is torch else r.data_, np.float64)


@pytest.mark.parametrize("case", _cases(600))
def test_zero_signs(case) -> None:  # noqa: ANN001
    want, got = _run(torch, *case), _run(T, *case)
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got)), case
    assert np.array_equal(np.signbit(want) & ~nan, np.signbit(got) & ~nan), case
    assert np.array_equal(np.nan_to_num(want), np.nan_to_num(got)), case
