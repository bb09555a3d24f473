"""The fast paths of the exactly rounded kernels give what their exact paths give.

The kernels that reproduce PyTorch's rounding (adcli/autograd/kernels32.py,
summation.py, mkl.py) each have a fast path for the common case; these tests hold
each fast path to the slow, general one on the inputs where they could part.
"""

from __future__ import annotations

import numpy as np
import pytest

from adcli.autograd import kernels32, mkl, summation
from adcli.core.allocator import keep_freed_memory


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _fma_cases(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    n = 2000
    f32 = np.float32
    normal = [rng.standard_normal(n).astype(f32) for _ in range(3)]
    # c + a * b just off a float32 midpoint, which the float64 sum rounds onto:
    # a * b = 2**-24 * (1 - 2**-46) after c = 1 + odd * 2**-23 (and a few exact ones)
    mid_c = (1 + (2 * rng.integers(0, 2**20, n) + 1) * 2.0**-23).astype(f32)
    mid_a = np.full(n, 2.0**-12 * (1 + 2.0**-23), f32)
    mid_b = (2.0**-12 * (1 - rng.integers(0, 2, n) * 2.0**-23)).astype(f32)
    # results below float32's normal range, on and near its subnormal midpoints
    sub_c = (rng.integers(-(2**20), 2**20, n) * 2.0**-149).astype(f32)
    sub_a = np.full(n, 2.0**-75, f32)
    sub_b = (2.0**-75 * (1 + rng.integers(0, 2, n) * 2.0**-20)).astype(f32)
    # exact cancellation (signed zeros) and overflow
    ints = rng.integers(-3, 3, n).astype(f32)
    half = np.full(n, 0.5, f32)
    big = [(rng.standard_normal(n) * 1e19).astype(f32) for _ in range(2)]
    return [
        (normal[0], normal[1], normal[2]),
        (mid_a, mid_b, mid_c),
        (sub_a, sub_b, sub_c),
        (ints, half, -ints * half),
        (big[0], big[1], normal[2]),
        (normal[0], np.asarray(f32(-0.1)), normal[1]),
    ]


def test_fma_fast_path_rounds_as_the_exact_path() -> None:
    rng = np.random.default_rng(3)
    for a, b, c in _fma_cases(rng):
        want = kernels32._fma32_exact(a, b, c)
        assert _bits_equal(kernels32.fma(a, b, c), want)


def test_fma_ties_need_the_exact_path() -> None:
    """The midpoint cases are real: rounding the float64 sum alone gets some wrong."""
    a, b, c = _fma_cases(np.random.default_rng(3))[1]
    naive = (a.astype(np.float64) * b + c).astype(np.float32)
    assert not _bits_equal(naive, kernels32._fma32_exact(a, b, c))


def test_fma_keeps_scalar_results_scalar() -> None:
    r = kernels32.fma(np.float32(1.5), np.float32(2), np.float32(3))
    assert isinstance(r, np.float32) and r == 6


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_nll_sum_loop_matches_the_runs(dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    serial = summation._NLL_SERIAL
    monkeypatch.setattr(summation, "_NLL_SERIAL", -1)  # nll_cascade_sum: always the runs
    for trial in range(300):
        count = int(rng.integers(1, 5000))
        n = int(rng.integers(0, min(count, serial) + 1))
        index = np.sort(rng.choice(count, size=n, replace=False))
        values = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)
        if trial % 7 == 0:
            values[:] = -0.0
        p = max(4, max(count - 1, 1).bit_length() // summation._NLL_LEVELS)
        loop = summation._nll_serial(values, index, p)
        assert _bits_equal(loop, summation.nll_cascade_sum(values, index, count)), (count, n)


@pytest.mark.skipif(mkl.library() is None, reason="MKL is not installed")
def test_large_addmm_does_not_depend_on_operand_alignment() -> None:
    """The premise of skipping the aligned copies for large products."""
    rng = np.random.default_rng(5)

    def at_offset(x: np.ndarray, off: int) -> np.ndarray:
        buf = np.empty(x.nbytes + 128, np.uint8)
        start = (off - buf.ctypes.data) % 64
        y = buf[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
        y[...] = x
        return y

    for dtype in (np.float32, np.float64):
        for m, k, n in ((64, 784, 128), (33, 100, 47), (128, 32, 32)):
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            want = mkl.addmm(None, at_offset(a, 0), at_offset(b, 0))
            for off in (4, 8, 16, 40):
                got = mkl.addmm(None, at_offset(a, off), at_offset(b, 64 - off))
                assert want is not None and got is not None
                assert _bits_equal(got, want), (dtype, m, k, n, off)


def test_allocator_tuning_is_idempotent() -> None:
    first = keep_freed_memory()
    assert keep_freed_memory() is first
