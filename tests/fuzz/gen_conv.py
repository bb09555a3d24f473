"""Candidate convolutions and poolings for the generator (gen_ops.FAMILIES): F.conv1d /
F.conv2d / torch.conv2d / nn.Conv1d / nn.Conv2d with strides, paddings (numbers,
pairs, 'same', 'valid'), dilations, groups and biases; F.max_pool2d / nn.MaxPool2d
and F.avg_pool2d / nn.AvgPool2d with their options. Small shapes; combinations
PyTorch refuses are kept, as errors, like any failing plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .gen import MOVE, ORDER, Plan

if TYPE_CHECKING:
    from .gen import Gen


def _signed_zero(outs: list[Any]) -> bool:
    """A -0. in a convolution's output: PyTorch's sign of an output whose products are
    all zero depends on the kernel it picks (by dtype, batch, channels: a gemm over
    one-term sums keeps a -0. product, oneDNN and the depthwise and one-channel paths
    start their sums at +0.); adcli's is always +0. Such results are not generated."""
    return any(
        isinstance(o, torch.Tensor)
        and o.is_floating_point()
        and bool(((o == 0) & torch.signbit(o)).any())
        for o in outs
    )


def _finite(g: Gen, *names: str) -> bool:
    """No NaN or infinity in the operands. PyTorch's float32 convolution runs oneDNN
    for some batch sizes and shapes, which does not carry a NaN or infinity through
    as IEEE products do (a NaN weight can leave every output finite); adcli computes
    IEEE products, as PyTorch's other kernels. Such float32 cases are not generated."""
    return all(bool(torch.isfinite(g.ns[n].detach()).all()) for n in names)


def _pick(g: Gen, *options: Any) -> Any:
    return g.rng.choice(options)


def _conv(g: Gen) -> Plan | None:
    rng = g.rng
    one_d = rng.random() < 0.25
    groups = _pick(g, 1, 1, 1, 2)
    cin = groups * rng.randint(1, 2)
    cout = groups * rng.randint(1, 2)
    spatial = (rng.randint(3, 6),) if one_d else (rng.randint(3, 5), rng.randint(3, 5))
    kernel = tuple(rng.randint(1, 3) for _ in spatial)
    dtype = torch.float64 if g.f64_mode else _pick(g, torch.float32, None)
    batched = rng.random() < 0.8
    shape = ((rng.randint(1, 2), cin) if batched else (cin,)) + spatial
    x = g.need(shape, dtype=dtype)
    if not x:
        return None
    dt = g.ns[x].dtype
    kw = []
    if rng.random() < 0.4:
        kw.append(f"stride={_pick(g, 1, 2, (1, 2) if not one_d else 2)}")
    if rng.random() < 0.5:
        pad = _pick(g, 1, 0, repr("same"), repr("valid"), (1, 0) if not one_d else 2)
        kw.append(f"padding={pad}")
    if rng.random() < 0.25:
        kw.append(f"dilation={_pick(g, 2, 1, (2, 1) if not one_d else 1)}")
    if groups > 1:
        kw.append(f"groups={groups}")
    name = "conv1d" if one_d else "conv2d"
    if rng.random() < 0.3:  # the layer: its weights come from the generator too
        cls = "Conv1d" if one_d else "Conv2d"
        k = kernel[0] if rng.random() < 0.5 else kernel
        bias = ", bias=False" if rng.random() < 0.3 else ""
        cast = ".double()" if dt == torch.float64 else ""
        extra = "".join(", " + a for a in kw)
        expr = f"torch.nn.{cls}({cin}, {cout}, {k}{extra}{bias}){cast}({x})"
        return Plan(expr, [x], ORDER, [], name, reject=_signed_zero)
    w = g.need((cout, cin // groups) + kernel, dtype=dt)
    if not w or (dt != torch.float64 and not _finite(g, x, w)):
        return None
    inputs = [x, w]
    args = [x, w]
    if rng.random() < 0.6:
        b = g.need((cout,), dtype=dt)
        if not b:
            return None
        inputs.append(b)
        args.append(b if rng.random() < 0.5 else f"bias={b}")
    fn = _pick(g, f"F.{name}", f"F.{name}", f"torch.{name}")
    return Plan(f"{fn}({', '.join(args + kw)})", inputs, ORDER, [], name, reject=_signed_zero)


def _pool(g: Gen) -> Plan | None:
    rng = g.rng
    kind = _pick(g, "max", "avg")
    dtype = torch.float64 if g.f64_mode else _pick(g, torch.float32, None)
    x = g.any_tensor("f", lambda t: t.ndim in (3, 4) and min(t.shape[-2:]) >= 2)
    if not x or rng.random() < 0.5:
        lead: tuple[int, ...] = (rng.randint(1, 2),)
        if rng.random() < 0.7:
            lead = (rng.randint(1, 2), *lead)
        x = g.need(lead + (rng.randint(2, 5), rng.randint(2, 5)), dtype=dtype)
    if not x:
        return None
    k = _pick(g, 2, 2, 3, (2, 1), (1, 3))
    kw = []
    if rng.random() < 0.4:
        kw.append(f"stride={_pick(g, 1, 2, (2, 1))}")
    if rng.random() < 0.3:
        kw.append(f"padding={_pick(g, 1, (1, 0))}")
    if rng.random() < 0.3:
        kw.append(f"ceil_mode={_pick(g, True, False)}")
    if kind == "max" and rng.random() < 0.2:
        kw.append(f"dilation={_pick(g, 2, (1, 2))}")
    if kind == "avg" and rng.random() < 0.3:
        kw.append(_pick(g, "count_include_pad=False", "divisor_override=3"))
    extra = "".join(", " + a for a in kw)
    name = f"{kind}_pool2d"
    if rng.random() < 0.3:
        cls = "MaxPool2d" if kind == "max" else "AvgPool2d"
        expr = f"torch.nn.{cls}({k}{extra})({x})"
    elif kind == "max" and rng.random() < 0.15:
        expr = f"F.max_pool2d({x}, {k}{extra}, return_indices=True)[{rng.randint(0, 1)}]"
    else:
        expr = f"F.{name}({x}, {k}{extra})"
    return Plan(expr, [x], MOVE if kind == "max" else ORDER, [], name)


def conv_pool(g: Gen) -> Plan | None:
    """One convolution (conv1d/conv2d, F., torch. or nn. form) or pooling."""
    return _conv(g) if g.rng.random() < 0.55 else _pool(g)
