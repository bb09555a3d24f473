"""Float32 (and float64) results bit for bit against PyTorch 2.13, over many random inputs.

For each operation the test measures the mismatch rate: the fraction of result
elements that are not bit-equal to torch's (NaN equals NaN).  Each rate must stay
at or below the bound recorded in BOUNDS, so a change that makes adcli drift from
PyTorch's rounding fails here.  Zero bounds are exact models of PyTorch's kernels
(its cascade sum, arange, linspace, SLEEF's exp inside sigmoid/silu/softmax); the
others are MKL's vector math functions, which adcli approximates by rounding a
float64 result once (see adcli/autograd/kernels32.py).  README.md quotes these
rates; `python tests/conformance/test_float32_fidelity_vs_torch.py` prints them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_threads_as_adcli")]

from adcli.autograd import ops  # noqa: E402
from adcli.autograd.summation import threads  # noqa: E402
from adcli.autograd.tensor import Tensor  # noqa: E402

F = torch.nn.functional
SIZES = (1, 3, 7, 8, 15, 16, 17, 31, 33, 100, 1000, 2000, 4099)


def _vectors(rng: np.random.Generator, kind: str, dt: type) -> Iterator[np.ndarray]:
    """1-D inputs of many lengths (SIMD bodies and scalar tails) of one kind."""
    for n in SIZES:
        if kind == "normal":
            v = rng.standard_normal(n) * 2
        elif kind == "wide":  # magnitudes from 1e-6 to 1e3, both signs
            v = rng.standard_normal(n) * 10 ** rng.uniform(-6, 3, n)
        elif kind == "unit":  # asin's and acos's domain, [-1, 1]
            v = rng.uniform(-1, 1, n)
        else:  # "pos": positive, 1e-6 to 1e4
            v = np.abs(rng.standard_normal(n)) * 10 ** rng.uniform(-6, 4, n)
        yield v.astype(dt)


def _a(v: np.ndarray) -> Tensor:
    return Tensor._make(np.array(v))


UNARY: dict[str, tuple[Callable, Callable, tuple[str, ...]]] = {
    "exp": (torch.exp, ops.exp, ("normal", "wide")),
    "log": (torch.log, ops.log, ("pos",)),
    "log1p": (torch.log1p, ops.log1p, ("pos",)),
    "sqrt": (torch.sqrt, ops.sqrt, ("pos",)),
    "sin": (torch.sin, ops.sin, ("normal", "wide")),
    "cos": (torch.cos, ops.cos, ("normal", "wide")),
    "tan": (torch.tan, ops.tan, ("normal",)),
    "asin": (torch.asin, ops.asin, ("unit",)),
    "acos": (torch.acos, ops.acos, ("unit",)),
    "atan": (torch.atan, ops.atan, ("normal", "wide")),
    "rsqrt": (torch.rsqrt, ops.rsqrt, ("pos",)),
    "tanh": (torch.tanh, ops.tanh, ("normal", "wide")),
    "sigmoid": (torch.sigmoid, ops.sigmoid, ("normal", "wide")),
    "silu": (F.silu, ops.silu, ("normal", "wide")),
    "pow(x, 2)": (lambda t: t.pow(2), lambda a: ops.pow(a, 2), ("normal", "wide")),
    "pow(x, 3)": (lambda t: t.pow(3), lambda a: ops.pow(a, 3), ("normal", "wide")),
    "pow(x, 1.7)": (lambda t: t.pow(1.7), lambda a: ops.pow(a, 1.7), ("pos",)),
    "gelu": (F.gelu, ops.gelu, ("normal",)),
    "softplus": (F.softplus, ops.softplus, ("normal",)),
    "elu": (F.elu, ops.elu, ("normal",)),
}

# The largest mismatch rate allowed per op (measured rate, rounded up with headroom).
BOUNDS_F32: dict[str, float] = {
    "exp": 0.012,
    "log": 0.04,
    "log1p": 0.015,
    "sqrt": 0.2,  # MKL's float32 sqrt is not correctly rounded; NumPy's is
    "sin": 0.045,
    "cos": 0.055,
    "tan": 0.2,
    "asin": 0.08,
    "acos": 0.12,
    "atan": 0.06,
    "rsqrt": 0.0,  # 1 / sqrt, both correctly rounded, as PyTorch's kernel
    "tanh": 0.002,
    "sigmoid": 0.001,
    "silu": 0.001,
    "pow(x, 2)": 0.0,
    "pow(x, 3)": 0.0,
    "pow(x, 1.7)": 0.0,  # SLEEF's powf and the C library's, see test_pow_vs_torch.py
    "gelu": 0.76,  # oneDNN's erf-based kernel: not reproduced
    "softplus": 0.35,
    "elu": 0.06,
    "softmax(last dim)": 0.0,
    "softmax(dim 0)": 0.001,  # the scalar tail's expf, approximated
    "log_softmax(last dim)": 0.0,
    "softmax backward(last dim)": 0.0,
    "log_softmax backward(last dim)": 0.0,
    "nll_loss(mean, sum)": 0.0,
    "sum": 0.0,
    "sum(dim)": 0.0,
    "mean": 0.0,
    "mean(dim)": 0.0,
    "arange": 0.0,
    "linspace": 0.0,
    "dot": 1.0,  # without the mkl package (NumPy); with it 0, see test_mkl_vs_torch.py
    "mm": 1.0,  # without the mkl package (NumPy); with it 0, see test_mkl_vs_torch.py
}
BOUNDS_F64: dict[str, float] = {
    # SLEEF's double exp, PyTorch's lane order and thread chunks (adcli/autograd/softmax64.py)
    "softmax(last dim)": 0.0,
    "softmax(dim 0)": 0.0,
    "softmax(middle dim)": 0.0,
    "softmax backward(last dim)": 0.0,
    "softmax backward(dim 0)": 0.0,
    # exact on torch's log_softmax (see below); adcli's own float64 log_softmax is not
    # (its log is NumPy's, not SLEEF's), and the gradient inherits that
    "log_softmax backward(last dim)": 0.05,
    "log_softmax backward(dim 0)": 0.01,
    "sum": 0.0,
    "sum(dim)": 0.0,
    "mean": 0.0,
    "mean(dim)": 0.0,
    "arange": 0.0,
    "linspace": 0.0,
}


def _count(t: np.ndarray, a: np.ndarray) -> tuple[int, int]:
    assert t.shape == a.shape and t.dtype == a.dtype
    same = (t == a) & (np.signbit(t) == np.signbit(a)) | (np.isnan(t) & np.isnan(a))
    return int((~same).sum()), max(1, t.size)


def _unary_rate(name: str, seed: int = 0) -> float:
    tf, af, kinds = UNARY[name]
    rng = np.random.default_rng(seed)
    bad = total = 0
    for kind in kinds:
        for v in _vectors(rng, kind, np.float32):
            b, n = _count(tf(torch.from_numpy(v.copy())).numpy(), af(_a(v)).data_)
            bad, total = bad + b, total + n
    return bad / total


def _layouts(rng: np.random.Generator, dt: type) -> Iterator[tuple[np.ndarray, str, tuple]]:
    """Random tensors, a view to take of them in both libraries (none, a transpose,
    every other column) and dims to reduce over."""
    for trial in range(120):
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(1, 24)) for _ in range(nd)]
        if trial % 4 == 0:
            shape[int(rng.integers(nd))] = int(rng.integers(100, 5000))
        x = (rng.standard_normal(shape) * 10 ** rng.uniform(-2, 3)).astype(dt)
        view = ("t" if nd > 1 else "") if trial % 3 == 1 else ("s" if trial % 3 == 2 else "")
        k = int(rng.integers(1, nd + 1))
        yield x, view, tuple(sorted(int(d) for d in rng.choice(nd, k, replace=False)))
    big = rng.standard_normal((300, 200)).astype(dt)  # 60,000: the threaded paths
    yield big, "", (0,)
    yield big, "t", (1,)
    yield rng.standard_normal(70001).astype(dt), "", (0,)


def _view(t, view: str):  # noqa: ANN001, ANN202 - a torch or an adcli tensor
    if view == "t":
        return t.transpose(0, -1)
    if view == "s":
        return t[..., ::2]
    return t


def _reduction_rate(name: str, dt: type, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    bad = total = 0
    for x, view, dims in _layouts(rng, dt):
        t, a = _view(torch.from_numpy(x), view), _view(_a(x), view)
        assert a.data_.strides == tuple(s * x.itemsize for s in t.stride()) or a.data_.size < 2
        if name == "sum":
            pair = (t.sum(), a.sum())
        elif name == "mean":
            pair = (t.mean(), a.mean())
        elif name == "sum(dim)":
            pair = (t.sum(dim=dims), a.sum(dim=dims))
        else:
            pair = (t.mean(dim=dims), a.mean(dim=dims))
        b, n = _count(pair[0].numpy(), pair[1].data_)
        bad, total = bad + b, total + n
    return bad / total


def _range_rate(name: str, dt: type, seed: int = 0) -> float:
    from adcli.scriptlib.torchapi import module_table

    api = module_table()["torch"]
    tdt, adt = (
        (torch.float32, api["float32"]) if dt is np.float32 else (torch.float64, api["float64"])
    )
    rng = np.random.default_rng(seed)
    bad = total = 0
    for _ in range(150):
        s = float(
            rng.choice([rng.uniform(-10, 10), rng.integers(-100, 100), rng.uniform(-1e4, 1e4)])
        )
        count = int(
            rng.choice([rng.integers(1, 40), rng.integers(1, 3000), rng.integers(30000, 70000)])
        )
        if name == "linspace":
            e = float(
                rng.choice(
                    [rng.uniform(-10, 10), rng.uniform(-1e4, 1e4), s + rng.standard_normal()]
                )
            )
            pair = (torch.linspace(s, e, count, dtype=tdt), api["linspace"](s, e, count, dtype=adt))
        else:
            step = float(
                rng.choice([rng.uniform(0.001, 3), -rng.uniform(0.001, 3), 0.1, -0.25, 2.0])
            )
            e = s + step * count
            t = torch.arange(s, e, step, dtype=tdt)
            a = api["arange"](s, e, step, dtype=adt)
            if tuple(t.shape) != a.data_.shape:
                bad, total = bad + 1, total + 1
                continue
            pair = (t, a)
        b, n = _count(pair[0].numpy(), pair[1].data_)
        bad, total = bad + b, total + n
    return bad / total


def _softmax_backward(fn: Callable, x: np.ndarray, g: np.ndarray, dim: int = -1) -> tuple[Any, Any]:
    """The gradient of fn(x, dim) for the incoming g, by torch and by adcli."""
    from adcli.autograd.engine import grad

    t = torch.from_numpy(x).requires_grad_()
    a = _a(x).requires_grad_()
    (tg,) = torch.autograd.grad(getattr(torch, fn)(t, dim), t, torch.from_numpy(g))
    (ag,) = grad(getattr(ops, fn)(a, dim), a, _a(g))
    return tg, ag


def _softmax_rate(name: str, seed: int = 0, dt: type = np.float32) -> float:
    rng = np.random.default_rng(seed)
    bad = total = 0
    for rows, n in ((50, 1), (50, 3), (50, 8), (50, 9), (50, 17), (20, 100), (4, 1000), (64, 10)):
        x = (rng.standard_normal((rows, n)) * 3).astype(dt)
        t = torch.from_numpy(x)
        if name == "softmax(last dim)":
            pair = (torch.softmax(t, -1), ops.softmax(_a(x), -1))
        elif name == "softmax(dim 0)":
            pair = (torch.softmax(t, 0), ops.softmax(_a(x), 0))
        elif name == "softmax(middle dim)":  # positions cut in chunks, one per thread
            x3 = np.stack([x, x * 2, -x])
            pair = (torch.softmax(torch.from_numpy(x3), 1), ops.softmax(_a(x3), 1))
        elif name.endswith("backward(last dim)"):
            g = rng.standard_normal((rows, n)).astype(dt)
            pair = _softmax_backward(name.split()[0], x, g)
        elif name.endswith("backward(dim 0)"):
            g = rng.standard_normal((rows, n)).astype(dt)
            pair = _softmax_backward(name.split()[0], x, g, 0)
        elif name.startswith("nll_loss"):  # a reduction: one number per case and kind
            y = rng.integers(0, n, rows)
            w = (rng.random(n) * 2).astype(np.float32)
            for red, weight in (("mean", None), ("sum", None), ("mean", w)):
                tw, aw = (None, None) if weight is None else (torch.from_numpy(w), _a(w))
                tl = F.nll_loss(t, torch.from_numpy(y), weight=tw, reduction=red)
                al = ops.nll_loss(_a(x), _a(y), weight=aw, reduction=red)
                b, n_ = _count(tl.numpy(), al.data_)
                bad, total = bad + b, total + n_
            continue
        else:
            pair = (torch.log_softmax(t, -1), ops.log_softmax(_a(x), -1))
        b, n_ = _count(pair[0].numpy(), pair[1].data_)
        bad, total = bad + b, total + n_
    return bad / total


def _linalg_rate(name: str, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    bad = total = 0
    for n in (3, 8, 17, 100, 2000):
        if name == "dot":
            x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
            pair = (torch.dot(torch.from_numpy(x), torch.from_numpy(y)), ops.dot(_a(x), _a(y)))
        else:
            m = max(1, n // 10)
            x, y = (
                rng.standard_normal((m, n)).astype(np.float32),
                rng.standard_normal((n, 7)).astype(np.float32),
            )
            pair = (torch.from_numpy(x) @ torch.from_numpy(y), ops.matmul(_a(x), _a(y)))
        b, n_ = _count(pair[0].numpy(), pair[1].data_)
        bad, total = bad + b, total + n_
    return bad / total


def rate(name: str, dt: type = np.float32) -> float:
    """The mismatch rate of op `name` in dtype dt over the fixed random inputs."""
    if name in UNARY:
        return _unary_rate(name)
    if name in ("sum", "sum(dim)", "mean", "mean(dim)"):
        return _reduction_rate(name, dt)
    if name in ("arange", "linspace"):
        return _range_rate(name, dt)
    if name in ("dot", "mm"):
        return _linalg_rate(name)
    return _softmax_rate(name, dt=dt)


#: PyTorch picks its CPU kernels by instruction set at run time. The bounds above
#: were measured where it runs AVX2 kernels; its AVX512 kernels round these ops
#: differently (measured on an AVX512 development machine, with some margin).
AVX512_BOUNDS_F32: dict[str, float] = {
    "elu": 0.12,
    "exp": 0.016,
    "tan": 0.3,
    "tanh": 0.008,
}
CAPABILITY = torch.backends.cpu.get_cpu_capability()
if CAPABILITY == "AVX512":
    BOUNDS_F32 = {**BOUNDS_F32, **AVX512_BOUNDS_F32}


@pytest.mark.skipif(
    CAPABILITY not in ("AVX2", "AVX512"),
    reason=f"bounds measured against PyTorch's AVX2/AVX512 kernels; here: {CAPABILITY}",
)
@pytest.mark.parametrize("name", sorted(BOUNDS_F32))
def test_float32_mismatch_rate_within_bound(name: str) -> None:
    r = rate(name, np.float32)
    assert r <= BOUNDS_F32[name], f"{name}: {r:.4%} of float32 elements differ from torch"


@pytest.mark.parametrize("name", sorted(BOUNDS_F64))
def test_float64_mismatch_rate_within_bound(name: str) -> None:
    r = rate(name, np.float64)
    assert r <= BOUNDS_F64[name], f"{name}: {r:.4%} of float64 elements differ from torch"


@pytest.mark.skipif(
    CAPABILITY not in ("AVX2", "AVX512"),
    reason=f"measured against PyTorch's AVX2/AVX512 kernels; here: {CAPABILITY}",
)
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_float64_softmax_backward_kernels_bit_equal(fn: str) -> None:
    """The float64 backward kernels of softmax and log_softmax, given torch's own
    forward result, reproduce torch's gradient bit for bit (fuzz s22final:11231)."""
    from adcli.autograd import functions

    node = functions.SoftmaxBackwardData if fn == "softmax" else functions.LogSoftmaxBackwardData
    back = getattr(torch, f"_{fn}_backward_data")
    rng = np.random.default_rng(11)
    for shape in ((3,), (7,), (9,), (17,), (5, 19), (4, 1000), (3, 9, 2), (2, 17, 33), (40, 3)):
        for dim in range(len(shape)):
            x = rng.standard_normal(shape) * 3
            g = rng.standard_normal(shape)
            y = getattr(torch, fn)(torch.from_numpy(x), dim)
            want = back(torch.from_numpy(g), y, dim, torch.float64).numpy()
            got = node.apply(_a(g), _a(y.numpy()), dim=dim).data_
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (shape, dim)


def test_polynomial_training_prints_torch_digits() -> None:
    """The polynomial fit of PyTorch's tutorial (without its sin and dot, whose MKL
    rounding is not reproduced): 2000 points, the loss printed every 100 steps."""
    from adcli.scriptlib.torchapi import module_table

    api = module_table()["torch"]
    x_t = torch.linspace(-math.pi, math.pi, 2000)
    y_t = x_t * 0.5 - x_t.pow(3) * 0.1
    x_a = api["linspace"](-math.pi, math.pi, 2000)
    y_a = x_a * 0.5 - x_a.pow(3) * 0.1
    assert np.array_equal(x_t.numpy(), x_a.data_)
    w_t = [torch.tensor(v) for v in (0.3, -0.2, 0.1, 0.05)]
    w_a = [api["tensor"](v) for v in (0.3, -0.2, 0.1, 0.05)]
    lr = 1e-6
    for step in range(600):
        outs = []
        for w, x, y in ((w_t, x_t, y_t), (w_a, x_a, y_a)):
            y_pred = w[0] + w[1] * x + w[2] * x.pow(2) + w[3] * x.pow(3)
            g = -2.0 * (y - y_pred)
            grads = (g.sum(), (g * x).sum(), (g * x.pow(2)).sum(), (g * x.pow(3)).sum())
            for i, gi in enumerate(grads):
                w[i] = w[i] - lr * gi
            outs.append((y_pred - y).pow(2).sum().item())
        if step % 100 == 99:
            assert repr(outs[0]) == repr(outs[1]), step


if __name__ == "__main__":  # print the table README.md quotes
    for label, bounds, dt in (
        ("float32", BOUNDS_F32, np.float32),
        ("float64", BOUNDS_F64, np.float64),
    ):
        torch.set_num_threads(threads())
        for op in sorted(bounds):
            print(f"{label:8s} {op:22s} {rate(op, dt):8.4%}")


def test_add_with_alpha_and_sgd_step_are_one_fused_multiply_add() -> None:
    """`torch.add(a, b, alpha=)` and SGD's `p.add_(g, alpha=-lr)` round once (FMA):
    bit-equal on every element, ties of the float64 sum included."""
    from adcli.autograd.optim import SGD

    rng = np.random.default_rng(12)
    for size in (1, 7, 16, 2000, 40000):
        a = rng.standard_normal(size).astype(np.float32)
        b = (rng.standard_normal(size) * 1e5).astype(np.float32)
        for alpha in (-1e-6, 0.3, -2.5):
            want = torch.add(torch.from_numpy(a), torch.from_numpy(b), alpha=alpha).numpy()
            got = ops.add(Tensor(a), Tensor(b), alpha=alpha).numpy()
            assert np.array_equal(got, want), (size, alpha)
            want = torch.sub(torch.from_numpy(a), torch.from_numpy(b), alpha=alpha).numpy()
            got = ops.sub(Tensor(a), Tensor(b), alpha=alpha).numpy()
            assert np.array_equal(got, want), (size, alpha)
    # a float64 sum exactly halfway between two float32 numbers
    x = np.full(16, 2**-12 * (1 + 2**-23), np.float32)
    c = np.full(16, 1 + 2**-23, np.float32)
    alpha = float(np.float32(2**-12 * (1 - 2**-23)))
    want = torch.add(torch.from_numpy(c), torch.from_numpy(x), alpha=alpha).numpy()
    assert np.array_equal(ops.add(Tensor(c), Tensor(x), alpha=alpha).numpy(), want)
    # momentum SGD, several steps
    p0 = rng.standard_normal(100).astype(np.float32)
    tp = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    ap = Tensor(p0.copy()).requires_grad_(True)
    topt = torch.optim.SGD([tp], lr=1e-3, momentum=0.9, weight_decay=0.01)
    aopt = SGD([ap], lr=1e-3, momentum=0.9, weight_decay=0.01)
    for _ in range(5):
        g = (rng.standard_normal(100) * 100).astype(np.float32)
        tp.grad = torch.from_numpy(g.copy())
        ap.grad = Tensor(g.copy())
        topt.step()
        aopt.step()
        assert np.array_equal(ap.detach().numpy(), tp.detach().numpy())


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_rsqrt_is_torchs_bit_for_bit(dt: type) -> None:
    """rsqrt is PyTorch's 1 / sqrt (vml.h sends it to no MKL function), in every dtype and
    layout: float16's one-at-a-time tail rounds the sqrt first, its SIMD blocks do not."""
    rng = np.random.default_rng(13)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 1e-38, 1.0, -1.0, 4.0])
    inputs = [special]
    for n in SIZES:
        inputs.append(np.abs(rng.standard_normal(n)) * 10 ** rng.uniform(-8, 4, n))
        inputs.append(rng.standard_normal(n))
    bad = total = 0
    with np.errstate(all="ignore"):
        for v in inputs:
            x = v.astype(dt)
            b, n_ = _count(torch.rsqrt(torch.from_numpy(x.copy())).numpy(), ops.rsqrt(_a(x)).data_)
            bad, total = bad + b, total + n_
        for shape, view in (((40, 33), "t"), ((40, 33), "s"), ((3, 70, 5), "t")):
            x = np.abs(rng.standard_normal(shape)).astype(dt)
            t, a = _view(torch.from_numpy(x), view), _view(Tensor._make(x), view)
            b, n_ = _count(torch.rsqrt(t).numpy(), ops.rsqrt(a).data_)
            bad, total = bad + b, total + n_
    assert bad == 0, f"{bad} of {total} elements differ from torch"
