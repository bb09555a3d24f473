"""`torch.conv1d` / `torch.conv2d` (also `F.`): PyTorch's arguments, its checks in its
order and with its sentences, then the Convolution row of conv.py. An unbatched
input is given a batch dim of 1 and the result squeezed (UnsqueezeBackward0 and
SqueezeBackward1 around the convolution, as in PyTorch)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes, ops
from .config import config as _config
from .conv import Geometry, convolution, pad_after
from .tensor import SAME_PADDING_WARNING, Tensor

__all__ = ["conv1d", "conv2d", "int_list"]


def int_list(value: Any, n: int) -> list[int]:
    """An int-list argument (`int[2] stride`) as PyTorch's parser takes it: one int
    repeated n times, or a sequence as it is."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(value)] * n


def _spatial(name: str, values: list[int], k: int) -> list[int]:
    """A per-spatial-dim parameter fitted to the weight's k spatial dims."""
    if len(values) == 1:
        return values * k
    if len(values) != k:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {k} values to match "
            f"the convolution dimensions, but got {name}={values}"
        )
    return values


def _dtype_name(t: Tensor) -> str:
    return t.dtype.legacy.replace("Tensor", "")


def _conv(
    fn: str,
    n: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
) -> Tensor:
    for arg, v in (("input", input), ("weight", weight)):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"{fn}(): argument '{arg}' (position {1 if arg == 'input' else 2}) must be "
                f"Tensor, not {ops._type_name(v)}"
            )
    nd = input.data_.ndim
    if nd not in (n + 1, n + 2):
        raise RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {fn}, but got input "
            f"of size: {list(input.data_.shape)}"
        )
    batched = nd == n + 2
    x = input if batched else ops.unsqueeze(input, 0)
    k = weight.data_.ndim - 2
    strides = _spatial("stride", int_list(stride, n), k)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(s != 1 for s in strides):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        dil = _spatial("dilation", int_list(dilation, n), k)
        pads = [(0, 0)] * k
        if padding == "same":
            # the total d * (k - 1) split with the odd one after (PyTorch pads a copy)
            totals = [d * (s - 1) for d, s in zip(dil, weight.data_.shape[2:], strict=False)]
            pads = [(t // 2, t - t // 2) for t in totals]
            if any(lo != hi for lo, hi in pads):  # an odd total: PyTorch pads a copy
                _config.warn(SAME_PADDING_WARNING)
                x = pad_after(x, tuple(hi - lo for lo, hi in pads))
                pads = [(lo, lo) for lo, _ in pads]
    else:
        pad_list = _spatial("padding", int_list(padding, n), k)
        dil = _spatial("dilation", int_list(dilation, n), k)
        pads = [(p, p) for p in pad_list]
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in strides):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got {dil}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    ws = list(weight.data_.shape)
    xs = list(x.data_.shape)
    if weight.data_.ndim != x.data_.ndim:
        raise RuntimeError(
            f"Expected {weight.data_.ndim}-dimensional input for {weight.data_.ndim}-dimensional "
            f"weight {ws}, but got {x.data_.ndim}-dimensional input of size {xs} instead"
        )
    if ws[0] < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {ws} instead"
        )
    if ws[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size [{ws}] instead"
        )
    if xs[1] != ws[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {ws}, expected input{xs} to have "
            f"{ws[1] * groups} channels, but got {xs[1]} channels instead"
        )
    if bias is not None and (bias.data_.ndim != 1 or bias.data_.shape[0] != ws[0]):
        raise RuntimeError(
            f"Given weight of size {ws}, expected bias to be 1-dimensional with {ws[0]} "
            f"elements, but got bias of size {list(bias.data_.shape)} instead"
        )
    padded = [xs[2 + i] + pads[i][0] + pads[i][1] for i in range(k)]
    kernel = [(ws[2 + i] - 1) * dil[i] + 1 for i in range(k)]
    if any(p < q for p, q in zip(padded, kernel, strict=True)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater "
            "than actual input size"
        )
    if weight.data_.dtype != x.data_.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(x)} but found {_dtype_name(weight)}")
    if bias is not None and bias.data_.dtype != x.data_.dtype:
        raise RuntimeError(
            f"Input type ({dtypes.CPP_TYPE_NAMES[x.dtype.name]}) and bias type "
            f"({dtypes.CPP_TYPE_NAMES[bias.dtype.name]}) should be the same"
        )
    if x.data_.dtype == np.bool_:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    if n == 1:
        strides, dil, pads = [1, *strides], [1, *dil], [(0, 0), *pads]
    geo = Geometry(
        stride=(strides[0], strides[1]),
        pads=(pads[0], pads[1]),
        dilation=(dil[0], dil[1]),
        groups=int(groups),
        spatial=n,
    )
    y = convolution(x, weight, bias, geo)
    return y if batched else ops.squeeze(y, 0)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """A 2-d convolution (cross-correlation) of (N, C, H, W) or (C, H, W) input."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """A 1-d convolution (cross-correlation) of (N, C, L) or (C, L) input."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)
