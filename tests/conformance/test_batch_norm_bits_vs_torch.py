"""batch_norm and instance_norm compared bit for bit with PyTorch 2.13, signs of zero
included: first and second derivatives for gradients PyTorch's generic backward
takes (expanded from sum() or mean(), a strided input) and for its vectorised
kernels, float32 and float64 statistics (odd image sizes, channels of -0s) and the
running variance. The same script runs against torch and against the `torch`
module an adcli script sees."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcli.core.session import build_modules  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_threads_as_adcli")]

AD = build_modules()["torch"]


def _bits(t: Any) -> tuple[list[Any], list[bool]]:
    """Values and sign bits, so -0.0 and 0.0 differ."""
    a = np.ascontiguousarray(t.detach().numpy())
    return a.tolist(), np.signbit(a).tolist()


def _values(rng: np.random.Generator, shape: tuple[int, ...], kind: int) -> np.ndarray:
    if kind == 0:
        return rng.standard_normal(shape) * 2 + 0.5
    if kind == 1:  # exact small values, zeros of both signs
        return rng.choice([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -1.138, 3.0], shape)
    if kind == 2:  # constant channels (a zero variance), some of -0s
        per = rng.choice([0.0, -0.0, 1.5, -2.0], (1, shape[1]) + (1,) * (len(shape) - 2))
        return np.ones(shape) * per
    return np.round(rng.standard_normal(shape), 1)


def _run(m: Any, seed: int, spec: tuple[Any, ...]) -> list[Any]:
    """batch_norm (or instance_norm) of an input laid out as `layout`, a loss whose
    gradient is expanded (sum, mean) or dense (weighted, squared), its gradients,
    then (second > 0) the gradients of a function of those."""
    shape, dtype, training, affine, layout, loss_kind, second, kind, inst = spec
    dt = getattr(m, dtype)
    rng = np.random.default_rng(seed)
    c = shape[1]
    x0 = _values(rng, shape, kind)
    w0, b0 = _values(rng, (c,), 3), _values(rng, (c,), 3)
    g0, r0 = _values(rng, shape, 3), _values(rng, shape, 3)
    leaf = m.tensor(x0.tolist(), dtype=dt, requires_grad=True)
    w = m.tensor(w0.tolist(), dtype=dt, requires_grad=True) if affine else None
    b = m.tensor(b0.tolist(), dtype=dt, requires_grad=True) if affine == "wb" else None
    x = leaf
    if layout == "transposed":
        x = leaf.transpose(0, -1).contiguous().transpose(0, -1)
    elif layout == "sliced":
        x = m.cat([leaf, leaf], -1)[..., ::2]
    elif layout == "channels_last":  # channels-last strides, reached by permutes
        x = leaf.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    rm, rv = m.zeros(c, dtype=dt), m.ones(c, dtype=dt) * 1.5
    if inst:
        y = m.nn.functional.instance_norm(x, None, None, w, b)
    else:
        y = m.nn.functional.batch_norm(x, rm, rv, w, b, training)
    if loss_kind == "sum":
        loss = y.sum()
    elif loss_kind == "mean":
        loss = y.mean()
    elif loss_kind == "weighted":
        loss = (y * m.tensor(g0.tolist(), dtype=dt)).sum()
    else:
        loss = (y * y).sum()
    ins = [t for t in (leaf, w, b) if t is not None]
    grads = m.autograd.grad(loss, ins, create_graph=bool(second))
    out = [y, rm, rv, *grads]
    if second:
        gx = grads[0]
        if second == 1:
            l2 = (gx * gx).sum()
        else:
            l2 = (gx * m.tensor(r0.tolist(), dtype=dt)).sum()
        if len(grads) > 1:
            l2 = l2 + (grads[1] * grads[1]).sum()
        out += list(m.autograd.grad(l2, ins, allow_unused=True))
    return [None if t is None else _bits(t) for t in out]


def _check(seed: int, spec: tuple[Any, ...]) -> None:
    assert _run(AD, seed, spec) == _run(torch, seed, spec), spec


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("loss_kind", ["sum", "mean", "weighted", "squared"])
def test_batch_norm_gradients_bit_for_bit(dtype: str, layout: str, loss_kind: str) -> None:
    """An expanded gradient or a strided input takes PyTorch's generic backward (a
    serial double dot product in iterator order); dense ones its vector kernels."""
    shapes = [(4, 3), (5, 3, 7), (2, 3, 4, 4), (2, 4, 9), (3, 3, 1, 5), (17, 3, 5)]
    for i, shape in enumerate(shapes):
        for training in (True, False):
            spec = (shape, dtype, training, "wb", layout, loss_kind, 0, i % 4, False)
            _check(10 * i + training, spec)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loss_kind", ["sum", "weighted", "squared"])
def test_batch_norm_channels_last_bit_for_bit(dtype: str, loss_kind: str) -> None:
    """A channels-last input runs PyTorch's channels-last kernels (rows of channels)
    when its gradient is channels-last too, else the generic backward."""
    for i, shape in enumerate([(2, 3, 4, 4), (2, 5, 3, 2), (3, 9, 2, 3), (4, 6, 7, 9)]):
        for training in (True, False):
            for second in (0, 1):
                spec = (shape, dtype, training, "wb", "channels_last", loss_kind, second)
                _check(20 * i + 2 * training + second, (*spec, i % 4, False))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("second", [1, 2])
@pytest.mark.parametrize("affine", ["", "w", "wb"])
def test_batch_norm_second_derivatives_bit_for_bit(dtype: str, second: int, affine: str) -> None:
    """batchnorm_double_backward's zeros keep PyTorch's signs (fuzz s24final:26627)."""
    shapes = [(4, 3), (2, 3, 2), (5, 3, 7), (2, 5, 3, 2), (2, 40)]
    layouts = ["contiguous", "transposed", "sliced"]
    for i, shape in enumerate(shapes):
        for kind in range(4):
            loss_kind = ["sum", "mean", "weighted", "squared"][(i + kind) % 4]
            spec = (shape, dtype, (i + kind) % 3 != 0, affine, layouts[kind % 3], loss_kind)
            _check(100 * i + kind, (*spec, second, kind, False))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_instance_norm_derivatives_bit_for_bit(dtype: str) -> None:
    """instance_norm's gradient is a view of an expanded one: the generic backward
    (fuzz s24final:29313)."""
    for i, shape in enumerate([(1, 3, 6), (2, 4, 9), (2, 5, 3, 2), (3, 3, 1, 5)]):
        for second in (0, 1, 2):
            for affine in ("", "wb"):
                spec = (shape, dtype, True, affine, "contiguous", "sum", second, i % 4, True)
                _check(7 * i + second, spec)


@pytest.mark.filterwarnings("ignore:input's size at dim=0")
def test_finding_reproducers() -> None:
    """The fuzzer's two cases: an InstanceNorm1d and a float64 batch_norm second
    derivative whose zeros were +0 where PyTorch's are -0."""
    out = []
    for m in (torch, AD):
        x = m.tensor([[-1.0, 0.0, -2.0]], requires_grad=True)
        with m.no_grad():
            x.neg_()
            x.mul_(m.tensor([[-0.851, 0.0, -1.0]]))
        y = m.nn.InstanceNorm1d(3)(x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        d = m.float64
        x2 = m.tensor(
            [[[0.9989, -1.0009], [-1.0009, 0.9989], [-1.1388862, 0.9989]],
             [[0.9989, -1.0009], [-1.0009, 0.9989], [-3.0007, 2.49875]]],
            dtype=d, requires_grad=True,
        )  # fmt: skip
        w, b = m.tensor([0.0, -1.0, -1.0], dtype=d), m.tensor([-1.0, -1.0, 1.0], dtype=d)
        y2 = m.nn.functional.batch_norm(
            x2, m.zeros(3, dtype=d), m.ones(3, dtype=d), w, b, training=True
        )
        (g2,) = m.autograd.grad(y2.sum(), x2, create_graph=True)
        (gg2,) = m.autograd.grad((g2 * g2).sum(), x2)
        out.append([_bits(gg), _bits(g2), _bits(gg2)])
    assert out[1] == out[0]
    assert out[0][0][1] == [[False, False, True]]  # PyTorch's -0s
    assert out[0][2][1][0][2] == [True, True]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_statistics_bit_for_bit(dtype: str) -> None:
    """Training statistics: a double input's variance loop adds an odd image's last
    square fused, its running variance update unfused, channels of -0s average to
    +0; the 2-d (channels-last) kernels' sums start at +0 too."""
    rng = np.random.default_rng(3)
    shapes = [(2, 1, 3), (3, 2, 5), (2, 5, 1, 5), (4, 4, 3, 3), (2, 6, 9), (6, 2, 4), (2, 40)]
    for shape in shapes:
        for kind in range(4):
            x0 = _values(rng, shape, kind)
            out = []
            for m in (torch, AD):
                dt = getattr(m, dtype)
                rm, rv = m.zeros(shape[1], dtype=dt), m.ones(shape[1], dtype=dt) * 0.7
                x = m.tensor(x0.tolist(), dtype=dt)
                y = m.nn.functional.batch_norm(x, rm, rv, None, None, True, 0.3)
                out.append([_bits(y), _bits(rm), _bits(rv)])
            assert out[1] == out[0], (shape, kind)


@pytest.mark.parametrize(
    ("kind", "shape", "arg"),
    [
        ("layer", (3, 7), (7,)),
        ("layer", (2, 5, 6), (5, 6)),
        ("layer", (4, 13), (13,)),
        ("layer", (2, 3, 17), (17,)),
        ("group", (3, 3, 3, 2), 3),
        ("group", (2, 9, 6, 5), 3),
        ("group", (1, 2, 6), 1),
        ("group", (2, 6, 7), 3),
    ],
)
def test_layer_group_norm_double_gradients_bit_for_bit(kind: str, shape: Any, arg: Any) -> None:
    """float64 layer and group norm gradients: a double vector's lanes fold one after
    another (PyTorch's generic vec_reduce_all), group norm's tail products fused."""
    rng = np.random.default_rng(5)
    x0, g0 = rng.standard_normal(shape), rng.standard_normal(shape)
    out = []
    for m in (torch, AD):
        x = m.tensor(x0.tolist(), dtype=m.float64, requires_grad=True)
        if kind == "layer":
            w = m.linspace(-1.0, 2.0, int(np.prod(arg)), dtype=m.float64).reshape(arg)
            w.requires_grad_()
            y = m.nn.functional.layer_norm(x, arg, w, None)
        else:
            w = m.linspace(-1.0, 2.0, shape[1], dtype=m.float64).requires_grad_()
            y = m.nn.functional.group_norm(x, arg, w, None)
        gx, gw = m.autograd.grad(y, (x, w), m.tensor(g0.tolist(), dtype=m.float64))
        out.append([_bits(y), _bits(gx), _bits(gw)])
    assert out[1] == out[0]
