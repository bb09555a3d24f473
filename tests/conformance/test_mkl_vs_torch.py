"""Where adcli calls MKL (adcli/autograd/mkl.py), its results are PyTorch's, bit for bit.

PyTorch 2.13 computes these with MKL 2024.2; adcli, with the optional `mkl` package
installed, calls the same functions the same way. Every element must be equal
(NaN equals NaN, signs of zero count): the unary functions over random and
special inputs of many lengths, the matrix products over many shapes and layouts
(row- and column-major, transposed, padded and offset views), and the gradients
of nn.Linear. Skipped without torch or without MKL.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_threads_as_mkl")]

from adcli.autograd import mkl, ops  # noqa: E402
from adcli.autograd.tensor import Tensor  # noqa: E402

if not mkl.available():
    pytest.skip("MKL is not installed (pip install 'adcli[mkl]')", allow_module_level=True)


def _aligned(x: np.ndarray) -> np.ndarray:
    """x copied to a 64-byte boundary, as PyTorch allocates a tensor (MKL's matrix-vector
    kernels round differently at another alignment)."""
    buf = np.empty(x.nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    y = buf[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    y[...] = x
    return y


def _differ(t: np.ndarray, a: np.ndarray) -> int:
    assert t.shape == a.shape and t.dtype == a.dtype, (t.shape, a.shape, t.dtype, a.dtype)
    same = (t == a) & (np.signbit(t) == np.signbit(a)) | (np.isnan(t) & np.isnan(a))
    return int((~same).sum())


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38, 1.0, -1.0]
SPECIAL += [0.5, 2.0, 1e-7, 88.7, 89.0, -103.0, -104.0, 3.14159265, 1e4, 1e6, 1e20, 0.9999999]


def _unary_inputs(dt: type) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(0)
    for n in (1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 2000, 4099, 40000):
        yield (rng.standard_normal(n) * 2).astype(dt)
        yield (rng.standard_normal(n) * 10 ** rng.uniform(-8, 4, n)).astype(dt)
    yield np.array(SPECIAL, dt)
    bits = rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32)  # any float32
    yield bits.view(np.float32).astype(dt)


UNARY: dict[str, tuple[Callable, Callable]] = {
    "exp": (torch.exp, ops.exp),
    "log": (torch.log, ops.log),
    "sqrt": (torch.sqrt, ops.sqrt),
    "sin": (torch.sin, ops.sin),
    "cos": (torch.cos, ops.cos),
    "tan": (torch.tan, ops.tan),
    "asin": (torch.asin, ops.asin),
    "acos": (torch.acos, ops.acos),
    "atan": (torch.atan, ops.atan),
    "tanh": (torch.tanh, ops.tanh),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_is_torchs_bit_for_bit(name: str, dt: type) -> None:
    tf, af = UNARY[name]
    bad = total = 0
    with np.errstate(all="ignore"):
        for x in _unary_inputs(dt):
            want = tf(torch.from_numpy(x.copy())).numpy()
            bad += _differ(want, af(Tensor._make(x.copy())).data_)
            total += x.size
    assert bad == 0, f"{name}: {bad} of {total} elements differ from torch"


@pytest.mark.parametrize("name", sorted(mkl.VML_FUNCTIONS))
def test_every_vml_function_is_torchs(name: str) -> None:
    """The whole table, for the ops adcli gets next (asin, erf, ...)."""
    tf = torch.special.erfinv if name == "erfinv" else getattr(torch, name)
    for dt in (np.float32, np.float64):
        with np.errstate(all="ignore"):
            for x in _unary_inputs(dt):
                want = tf(torch.from_numpy(x.copy())).numpy()
                got = mkl.vml(name, x)
                assert got is not None and _differ(want, got) == 0, (name, dt, x.size)


def _matrix(rng: np.random.Generator, shape: tuple[int, int], layout: str) -> np.ndarray:
    if layout == "row":
        return _aligned(rng.standard_normal(shape).astype(np.float32))
    if layout == "col":
        return _aligned(rng.standard_normal(shape[::-1]).astype(np.float32)).T
    # a padded view one column in: leading dimension cols + 2, offset 4 bytes
    wide = _aligned(rng.standard_normal((shape[0], shape[1] + 2)).astype(np.float32))
    return wide[:, 1 : shape[1] + 1]


DIMS = (1, 2, 3, 8, 17, 64, 257, 2000)
LAYOUTS = ("row", "col", "view")


def _mm_cases() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    rng = np.random.default_rng(1)
    for i, (m, k, n) in enumerate(itertools.product(DIMS, DIMS, DIMS)):
        if m * k * n > 4e6:
            continue
        la, lb = LAYOUTS[i % 3], LAYOUTS[(i // 3) % 3]
        bias = _aligned(rng.standard_normal(n).astype(np.float32)) if i % 2 else None
        yield _matrix(rng, (m, k), la), _matrix(rng, (k, n), lb), bias


def test_mm_and_addmm_are_torchs_bit_for_bit() -> None:
    bad = []
    for a, b, bias in _mm_cases():
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if bias is None:
            want, got = torch.mm(ta, tb), ops.mm(Tensor._make(a), Tensor._make(b))
        else:
            want = torch.addmm(torch.from_numpy(bias), ta, tb)
            got = ops.addmm(Tensor._make(bias), Tensor._make(a), Tensor._make(b))
        if _differ(want.numpy(), got.data_):
            bad.append((a.shape, a.strides, b.shape, b.strides, bias is not None))
    assert not bad, f"{len(bad)} products differ from torch, e.g. {bad[:5]}"


def test_addmm_with_alpha_and_beta_is_torchs() -> None:
    rng = np.random.default_rng(2)
    for m, k, n in ((5, 7, 3), (100, 33, 1), (1, 257, 64), (64, 64, 64)):
        a, b = _matrix(rng, (m, k), "row"), _matrix(rng, (k, n), "col")
        bias = _aligned(rng.standard_normal((m, n)).astype(np.float32))
        for beta, alpha in ((0.5, 2.0), (0, -1.5), (1, 0.3)):
            want = torch.addmm(
                torch.from_numpy(bias),
                torch.from_numpy(a),
                torch.from_numpy(b),
                beta=beta,
                alpha=alpha,
            )
            got = ops.addmm(
                Tensor._make(bias), Tensor._make(a), Tensor._make(b), beta=beta, alpha=alpha
            )
            assert _differ(want.numpy(), got.data_) == 0, (m, k, n, beta, alpha)


def test_mv_dot_and_matmul_of_vectors_are_torchs() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 8, 17, 33, 100, 257, 1000, 2000, 4099, 70000):
        for _ in range(3):
            x, y = (_aligned(rng.standard_normal(n).astype(np.float32)) for _ in range(2))
            want = torch.matmul(torch.from_numpy(x), torch.from_numpy(y))
            assert _differ(want.numpy(), ops.matmul(Tensor._make(x), Tensor._make(y)).data_) == 0
        strided = _aligned(rng.standard_normal(2 * n).astype(np.float32))[::2]
        want = torch.dot(torch.from_numpy(strided), torch.from_numpy(y))
        assert _differ(want.numpy(), ops.dot(Tensor._make(strided), Tensor._make(y)).data_) == 0
    for i, (r, c) in enumerate(itertools.product(DIMS, DIMS)):
        m = _matrix(rng, (r, c), LAYOUTS[i % 3])
        v = _aligned(rng.standard_normal(c).astype(np.float32))
        want = torch.mv(torch.from_numpy(m), torch.from_numpy(v))
        assert _differ(want.numpy(), ops.mv(Tensor._make(m), Tensor._make(v)).data_) == 0, (r, c)


def test_bmm_is_torchs_small_and_large() -> None:
    """Under 400 multiply-adds per matrix PyTorch's own loop, else MKL's batched gemm."""
    rng = np.random.default_rng(4)
    sizes = (1, 2, 3, 4, 7, 10, 17, 40, 100)
    for _ in range(200):
        nb, m, k, n = (int(v) for v in rng.choice(sizes, 4))
        a = _aligned(rng.standard_normal((nb, m, k)).astype(np.float32))
        if rng.random() < 0.5:
            a = _aligned(rng.standard_normal((nb, k, m)).astype(np.float32)).transpose(0, 2, 1)
        b = _aligned(rng.standard_normal((nb, k, n)).astype(np.float32))
        want = torch.bmm(torch.from_numpy(a), torch.from_numpy(b))
        got = ops.bmm(Tensor._make(a), Tensor._make(b))
        assert _differ(want.numpy(), got.data_) == 0, (nb, m, k, n, a.strides)


@pytest.mark.parametrize("shape", [(2000, 3, 1), (64, 10, 5), (7, 300, 20), (1, 50, 2000)])
def test_linear_forward_and_gradients_are_torchs(shape: tuple[int, int, int]) -> None:
    """nn.Linear as addmm, its gradients as PyTorch's mm_mat1/mm_mat2_backward: for the
    column-major weight.T, (grad.T @ x).T."""
    rows, fan_in, fan_out = shape
    rng = np.random.default_rng(5)
    x = _aligned(rng.standard_normal((rows, fan_in)).astype(np.float32))
    w = _aligned((rng.standard_normal((fan_out, fan_in)) * 0.3).astype(np.float32))
    b = _aligned(rng.standard_normal(fan_out).astype(np.float32))
    tx, tw, tb = (torch.from_numpy(_aligned(v)).requires_grad_(True) for v in (x, w, b))
    ax, aw, ab = (Tensor._make(_aligned(v)).requires_grad_(True) for v in (x, w, b))
    tout = torch.nn.functional.linear(tx, tw, tb)
    aout = ops.linear(ax, aw, ab)
    assert _differ(tout.detach().numpy(), aout.data_) == 0
    tout.sin().sum().backward()
    aout.sin().sum().backward()
    for t, a in ((tx, ax), (tw, aw), (tb, ab)):
        assert _differ(t.grad.numpy(), a.grad.data_) == 0
