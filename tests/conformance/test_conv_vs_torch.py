"""Convolution and pooling compared with PyTorch 2.13: F.conv1d / F.conv2d (stride,
padding incl. 'same'/'valid', dilation, groups, bias, unbatched input),
F.max_pool2d / F.avg_pool2d (padding, ceil_mode, dilation, count_include_pad,
divisor_override), through the `torch` module an adcli script sees. Compared:
values, the gradients of input, weight and bias, second derivatives, grad_fn
names, the layers' initial weights after manual_seed and their reprs, and the
error type and sentence for wrong arguments.

float64 agrees to 1e-12; float32 convolutions to 1e-5 relative (PyTorch's oneDNN
kernel sums in its own order; adcli rounds the float64 sum once); pooling is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcli.core.session import build_modules  # noqa: E402

pytestmark = pytest.mark.torch

AD = build_modules()["torch"]
TORCH_F = torch.nn.functional
AD_F = AD.nn.functional


def _tensor(m: Any, a: np.ndarray, rg: bool = True) -> Any:
    return m.tensor(a.copy(), requires_grad=rg)


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.data_)


def _close(a: Any, b: Any, dtype: Any, exact: bool = False) -> None:
    x, y = _np(a), _np(b)
    assert x.shape == y.shape and x.dtype == y.dtype
    if exact:
        assert np.array_equal(x, y, equal_nan=True)
    elif dtype == np.float64:
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


CONV_CASES: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("conv2d", (1, 1, 8, 8), (3, 1, 5, 5), {}),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), {"stride": (2, 1), "padding": (1, 2), "groups": 2}),
    ("conv2d", (2, 3, 9, 8), (4, 3, 3, 3), {"dilation": 2, "padding": 1}),
    ("conv2d", (3, 6, 5), (2, 3, 2, 2), {"padding": "same"}),
    ("conv2d", (1, 2, 6, 6), (4, 2, 3, 4), {"padding": "same", "dilation": (2, 1)}),
    ("conv2d", (1, 2, 6, 6), (4, 2, 3, 3), {"padding": "valid", "stride": 3}),
    ("conv1d", (2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv1d", (4, 10), (2, 2, 4), {"groups": 2, "padding": "same"}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_conv_values_and_gradients(case: Any, bias: bool, dtype: Any) -> None:
    fn, xs, ws, kw = case
    r = np.random.default_rng(len(xs) * 100 + sum(ws))
    x, w = r.standard_normal(xs).astype(dtype), r.standard_normal(ws).astype(dtype)
    b = r.standard_normal(ws[0]).astype(dtype)
    gy = None
    results = []
    for m, f in ((torch, TORCH_F), (AD, AD_F)):
        tx, tw = _tensor(m, x), _tensor(m, w)
        tb = _tensor(m, b) if bias else None
        y = getattr(f, fn)(tx, tw, tb, **kw)
        if gy is None:
            gy = r.standard_normal(tuple(y.shape)).astype(dtype)
        inputs = (tx, tw, tb) if bias else (tx, tw)
        grads = m.autograd.grad(y, inputs, m.tensor(gy))
        results.append((y, grads, y.grad_fn.name()))
    (ty, tg, tname), (ay, ag, aname) = results
    assert tname == aname
    _close(ty, ay, dtype)
    for a, b_ in zip(tg, ag, strict=True):
        _close(a, b_, dtype)


def test_conv_double_backward() -> None:
    r = np.random.default_rng(3)
    x = r.standard_normal((2, 4, 6, 5))
    w = r.standard_normal((4, 2, 3, 2))
    b = r.standard_normal(4)
    out = []
    for m, f in ((torch, TORCH_F), (AD, AD_F)):
        tx, tw, tb = _tensor(m, x), _tensor(m, w), _tensor(m, b)
        y = f.conv2d(tx, tw, tb, stride=(1, 2), padding=1, groups=2)
        gx, gw = m.autograd.grad((y * y).sum(), (tx, tw), create_graph=True)
        names = (gx.grad_fn.name(), gw.grad_fn.name())
        hx, hw = m.autograd.grad((gx * gx).sum() + (gw**3).sum(), (tx, tw))
        out.append((names, gx, gw, hx, hw))
    (tn, *tv), (an, *av) = out
    assert tn == an == ("ConvolutionBackwardBackward0", "ConvolutionBackwardBackward0")
    for a, b_ in zip(tv, av, strict=True):
        _close(a, b_, np.float64)


POOL_CASES: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
    ("max_pool2d", (2, 3, 7, 6), {"kernel_size": 2}),
    ("max_pool2d", (1, 2, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d", (3, 5, 5), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 0)}),
    ("max_pool2d", (1, 1, 8, 7), {"kernel_size": 2, "dilation": 2, "stride": 1}),
    ("avg_pool2d", (2, 3, 7, 6), {"kernel_size": 2}),
    ("avg_pool2d", (1, 2, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("avg_pool2d", (1, 2, 7, 7), {"kernel_size": 3, "padding": 1, "count_include_pad": False}),
    ("avg_pool2d", (3, 5, 5), {"kernel_size": (2, 3), "stride": 1, "divisor_override": 4}),
    ("avg_pool2d", (1, 1, 6, 6), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_pool_values_and_gradients_bit_for_bit(case: Any, dtype: Any) -> None:
    fn, xs, kw = case
    r = np.random.default_rng(5)
    x = r.standard_normal(xs).astype(dtype)
    x[..., 0, :3] = 1.0  # ties: the first largest element wins
    gy = None
    out = []
    for m, f in ((torch, TORCH_F), (AD, AD_F)):
        tx = _tensor(m, x)
        y = getattr(f, fn)(tx, **kw)
        if gy is None:
            gy = r.standard_normal(tuple(y.shape)).astype(dtype)
        (g,) = m.autograd.grad(y, tx, m.tensor(gy), create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), tx, allow_unused=True, materialize_grads=True)
        out.append((y.grad_fn.name(), g.grad_fn.name(), y, g, h))
    (tn1, tn2, *tv), (an1, an2, *av) = out
    assert (tn1, tn2) == (an1, an2)
    for a, b_ in zip(tv, av, strict=True):
        _close(a, b_, dtype, exact=True)


def test_max_pool_nan_and_indices() -> None:
    x = np.array([[[1.0, np.nan, 0.5], [np.nan, 2.0, -np.inf], [0.0, -0.0, 3.0]]])
    for kw in ({"kernel_size": 2, "stride": 1}, {"kernel_size": 2, "padding": 1}):
        t = TORCH_F.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        a = AD_F.max_pool2d(AD.tensor(x), return_indices=True, **kw)
        _close(t[0], a[0], np.float64, exact=True)
        assert np.array_equal(_np(t[1]), _np(a[1]))
    inf = np.full((1, 1, 3, 3), -np.inf)
    t = TORCH_F.max_pool2d(torch.tensor(inf), 2, padding=1, return_indices=True)[1]
    a = AD_F.max_pool2d(AD.tensor(inf), 2, padding=1, return_indices=True)[1]
    assert np.array_equal(_np(t), _np(a))


def _layers(m: Any) -> list[Any]:
    nn = m.nn
    m.manual_seed(0)
    return [
        nn.Conv2d(1, 6, 5),
        nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2, bias=False),
        nn.Conv2d(2, 3, 3, padding="same"),
        nn.Conv2d(2, 4, 3, padding="valid", groups=2),
        nn.Conv1d(3, 5, 4, stride=2, padding=1),
        nn.MaxPool2d(2),
        nn.MaxPool2d((2, 3), stride=1, padding=1, dilation=(1, 2), ceil_mode=True),
        nn.AvgPool2d(3, 2, 1, True, False, 2),
        nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 0)),
        nn.Flatten(),
    ]


def test_layer_init_and_repr() -> None:
    for t, a in zip(_layers(torch), _layers(AD), strict=True):
        assert repr(t) == repr(a)
        for (tn, tp), (an, ap) in zip(t.named_parameters(), a.named_parameters(), strict=True):
            assert tn == an
            assert np.array_equal(_np(tp), _np(ap))
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation"):
        assert getattr(torch.nn.Conv2d(3, 4, (2, 3)), attr) == getattr(
            AD.nn.Conv2d(3, 4, (2, 3)), attr
        )


def _err(fn: Callable[[Any], Any], m: Any) -> tuple[str, str]:
    try:
        fn(m)
    except Exception as e:  # noqa: BLE001
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        text = str(e).split("\nException raised from")[0]
        # PyTorch prints a Python set here: its order changes with the string hash seed
        return kind, text.replace("{'valid', 'same'}", "{'same', 'valid'}")
    return "ok", ""


ERRORS: dict[str, Callable[[Any], Any]] = {
    "rank": lambda m: m.nn.functional.conv2d(m.randn(5, 5), m.randn(6, 1, 3, 3)),
    "rank1d": lambda m: m.nn.functional.conv1d(m.randn(1, 4, 5, 5), m.randn(6, 4, 3)),
    "channels": lambda m: m.nn.functional.conv2d(m.randn(1, 1, 5, 5), m.randn(6, 3, 3, 3)),
    "channels_unbatched": lambda m: m.nn.Conv2d(3, 6, 5)(m.randn(1, 32, 32)),
    "groups_channels": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 3, 3, 3), groups=2
    ),
    "groups_divisible": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(5, 2, 3, 3), groups=2
    ),
    "bias": lambda m: m.nn.functional.conv2d(m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), m.randn(5)),
    "kernel_too_big": lambda m: m.nn.functional.conv2d(m.randn(1, 1, 2, 2), m.randn(6, 1, 3, 3)),
    "stride_list": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), stride=(1, 2, 3)
    ),
    "weight_rank": lambda m: m.nn.functional.conv2d(m.randn(1, 4, 5, 5), m.randn(6, 2, 3)),
    "stride_zero": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), stride=0
    ),
    "padding_negative": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), padding=-1
    ),
    "same_strided": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), padding="same", stride=2
    ),
    "bad_padding_string": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), padding="foo"
    ),
    "dtype": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3, dtype=m.float64)
    ),
    "bias_dtype": lambda m: m.nn.functional.conv2d(
        m.randn(1, 4, 5, 5), m.randn(6, 4, 3, 3), m.randn(6, dtype=m.float64)
    ),
    "layer_groups": lambda m: m.nn.Conv2d(3, 2, 3, groups=2),
    "layer_out_groups": lambda m: m.nn.Conv2d(4, 3, 3, groups=2),
    "layer_same_strided": lambda m: m.nn.Conv2d(1, 2, 3, padding="same", stride=2),
    "layer_bad_padding": lambda m: m.nn.Conv2d(1, 2, 3, padding="bad"),
    "pool_rank": lambda m: m.nn.functional.max_pool2d(m.randn(5, 5), 2),
    "pool_pad": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 5, 5), 2, padding=2),
    "pool_small": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 1, 1), 2),
    "pool_kernel_len": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 5, 5), (2, 2, 2)),
    "pool_stride_zero": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 5, 5), 2, stride=0),
    "pool_dilation": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 5, 5), 2, dilation=0),
    "avg_rank": lambda m: m.nn.functional.avg_pool2d(m.randn(5), 2),
    "avg_divisor": lambda m: m.nn.functional.avg_pool2d(m.randn(1, 1, 5, 5), 2, divisor_override=0),
    "max_empty": lambda m: m.nn.functional.max_pool2d(m.randn(0, 4, 3), 2),
    "avg_empty_channels": lambda m: m.nn.functional.avg_pool2d(m.randn(2, 0, 4, 3), 2),
    "max_5d": lambda m: m.nn.functional.max_pool2d(m.randn(1, 1, 1, 4, 4), 2),
    "avg_5d": lambda m: m.nn.functional.avg_pool2d(m.randn(1, 1, 1, 4, 4), 2),
    "conv_bool": lambda m: m.nn.functional.conv1d(
        m.ones(1, 1, 4, dtype=m.bool), m.ones(1, 1, 2, dtype=m.bool)
    ),
    "max_bool": lambda m: m.nn.functional.max_pool2d(m.ones(1, 1, 4, 4, dtype=m.bool), 2),
    "avg_bool": lambda m: m.nn.functional.avg_pool2d(m.ones(1, 1, 4, 4, dtype=m.bool), 2),
    "avg_small": lambda m: m.nn.functional.avg_pool2d(m.randn(1, 1, 1, 1), 2),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name: str) -> None:
    fn = ERRORS[name]
    assert _err(fn, AD) == _err(fn, torch)


def test_unbatched_graph_names() -> None:
    for m in (torch, AD):
        x = m.randn(1, 8, 8, requires_grad=True)
        y = m.nn.Conv2d(1, 2, 3)(x)
        assert y.grad_fn.name() == "SqueezeBackward1"
        assert y.grad_fn.next_functions[0][0].name() == "ConvolutionBackward0"
        p = m.nn.functional.max_pool2d(x, 2)
        assert p.grad_fn.name() == "MaxPool2DWithIndicesBackward0"


def _second_order(m: Any, f: Any, x: Any, w: Any, b: Any, tx: Any) -> list[Any]:
    res: list[Any] = []
    ax, aw, ab = _tensor(m, x, False), _tensor(m, w), _tensor(m, b)
    (gb,) = m.autograd.grad(f.conv2d(ax, aw, ab, groups=2).sum(), ab, create_graph=True)
    res += [gb.grad_fn.name(), gb]
    ax = _tensor(m, x)
    (gx,) = m.autograd.grad(f.conv2d(ax, m.tensor(w), groups=2).sum(), ax, create_graph=True)
    res.append(_err(lambda _: m.autograd.grad((gx * gx).sum(), ax), m))
    fw = m.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(m.tensor(x), m.tensor(tx))
        y = f.conv2d(dual, m.tensor(w), m.tensor(b), padding=1, groups=2)
        y = f.max_pool2d(y, 2) + f.avg_pool2d(y, 3, 2, 1)
        res.append(fw.unpack_dual(y).tangent)
    for pool in (f.max_pool2d, f.avg_pool2d):
        res.append(m.func.hessian(lambda t, p=pool: p(t * t * t, 2).sum())(m.tensor(x[0])))
    image = m.tensor(x)
    res.append(m.func.hessian(lambda k: (f.conv2d(image, k, groups=2) ** 2).sum())(m.tensor(w)))
    return res


def test_second_order_and_forward_mode() -> None:
    """Bias gradients as nodes, an unused input's error, forward AD and Hessians."""
    r = np.random.default_rng(11)
    x, w = r.standard_normal((1, 2, 4, 4)), r.standard_normal((2, 1, 1, 3))
    b, tx = r.standard_normal(2), r.standard_normal((1, 2, 4, 4))
    (tn, *tv), (an, *av) = (
        _second_order(m, f, x, w, b, tx) for m, f in ((torch, TORCH_F), (AD, AD_F))
    )
    assert tn == an == "ConvolutionBackwardBackward0"
    for a, b_ in zip(tv, av, strict=True):
        if isinstance(a, tuple):
            assert a == b_
        else:
            _close(a, b_, np.float64)
