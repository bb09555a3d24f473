"""Every name a script reaches as `torch.X`, `torch.nn.functional.X`, `torch.linalg.X`
or a Tensor method, called through its keywords as PyTorch 2.13 names them, in adcli
and in PyTorch, with the results compared (values, dtype, shape; the error type and
sentence when both refuse).

- `CASES` holds the calls. A case's arguments are plain values or placeholders: `A(key)`
  an input tensor (made fresh for each call), `D(name)` a dtype, `Out(shape)` an `out=`
  tensor. A Tensor-method case passes `self` first.
- `test_every_name_is_audited` fails for an exposed name with no case and no entry in
  `ALLOWED` (the short list of what adcli cannot support, each with its reason).
- `test_schema_keywords_accepted` reads PyTorch's own operator schemas: each keyword
  they name must be accepted by adcli's signature (or be in `ALLOWED_KEYWORDS`).
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from adcli.autograd.dtypes import DType as ADType
from adcli.autograd.tensor import Tensor as ATensor
from adcli.scriptlib.torchapi import module_table

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TABLES = module_table()
MODULES = {"torch": "torch", "F": "torch.nn.functional", "linalg": "torch.linalg"}
TORCH_MODULES = {"torch": torch, "F": torch.nn.functional, "linalg": torch.linalg}


# ************************************************************ placeholders


@dataclass(frozen=True)
class A:
    """An input tensor by key (see `arrays()`)."""

    key: str
    requires_grad: bool = False


@dataclass(frozen=True)
class D:
    """A dtype by name."""

    name: str


@dataclass(frozen=True)
class Out:
    """A fresh `out=` tensor."""

    shape: tuple[int, ...]
    dtype: str = "float32"


def arrays() -> dict[str, np.ndarray]:
    """The inputs, small and fixed."""
    r = np.random.default_rng(7)
    f = np.float32
    x = r.standard_normal((2, 3)).astype(f)
    return {
        "x": x,
        "y": r.standard_normal((2, 3)).astype(f),
        "pos": (np.abs(x) + 0.5).astype(f),
        "x13": r.standard_normal((1, 3)).astype(f),
        "e03": np.zeros((0, 3), f),  # (empty_like's values are unset in PyTorch)
        "v": r.standard_normal(3).astype(f),
        "w": r.standard_normal(3).astype(f),
        "v4": r.standard_normal(4).astype(f),
        "m34": r.standard_normal((3, 4)).astype(f),
        "m24": r.standard_normal((2, 4)).astype(f),
        "sq": r.standard_normal((3, 3)).astype(f),
        "b234": r.standard_normal((2, 3, 4)).astype(f),
        "b245": r.standard_normal((2, 4, 5)).astype(f),
        "idx": np.array([[0, 2, 1], [1, 1, 0]], np.int64),
        "mask": np.array([[True, False, True], [False, False, True]]),
        "cls": np.array([2, 0], np.int64),
        "prob": r.uniform(0.1, 0.9, (2, 3)).astype(f),
        "t01": np.array([[1, 0, 1], [0, 1, 1]], f),
        "W": r.standard_normal((4, 3)).astype(f),
        "b4": r.standard_normal(4).astype(f),
        "WB": r.standard_normal((5, 3, 3)).astype(f),
        "b5": r.standard_normal(5).astype(f),
        "E": r.standard_normal((10, 3)).astype(f),
        "eidx": np.array([[1, 2], [9, 0]], np.int64),
        "pw": np.array([1.0, 2.0, 0.5], f),
        "one": np.array(2.5, f),
        "vi": np.array([1, 0], np.int64),
        "img": r.standard_normal((2, 4, 6, 5)).astype(f),
        "K": r.standard_normal((3, 2, 3, 2)).astype(f),
        "b3": r.standard_normal(3).astype(f),
        "seq": r.standard_normal((2, 4, 7)).astype(f),
        "K1": r.standard_normal((2, 4, 3)).astype(f),
        "b2": r.standard_normal(2).astype(f),
    }


ARRAYS = arrays()


class Lib:
    """How one library makes the placeholders and finds the names."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fn(self, qual: str) -> Any:
        mod, name = qual.split(".")
        if self.name == "torch":
            return getattr(TORCH_MODULES[mod], name)
        return TABLES[MODULES[mod]][name]

    def dtype(self, name: str) -> Any:
        return getattr(torch, name) if self.name == "torch" else TABLES["torch"][name]

    def make(self, v: Any) -> Any:
        if isinstance(v, A):
            data = ARRAYS[v.key].copy()
            if self.name == "torch":
                return torch.tensor(data, requires_grad=v.requires_grad)
            return TABLES["torch"]["tensor"](data, requires_grad=v.requires_grad)
        if isinstance(v, D):
            return self.dtype(v.name)
        if isinstance(v, Out):
            empty = torch.zeros if self.name == "torch" else TABLES["torch"]["zeros"]
            return empty(v.shape, dtype=self.dtype(v.dtype))
        if isinstance(v, list):
            return [self.make(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.make(x) for x in v)
        return v

    def seed(self) -> None:
        (torch.manual_seed if self.name == "torch" else TABLES["torch"]["manual_seed"])(0)


TORCH, ADCLI = Lib("torch"), Lib("adcli")


# ************************************************************ the cases


@dataclass
class Case:
    """`name(*args, **kwargs)`: `torch.X`, `F.X`, `linalg.X` or `Tensor.X` (self first)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    compare: bool = True  # False: results not comparable (a generator, a context manager)

    @property
    def id(self) -> str:
        kw = ",".join(self.kwargs)
        return f"{self.name}({kw})"


def c(name: str, *args: Any, **kwargs: Any) -> Case:
    return Case(name, args, kwargs)


X, Y, P = A("x"), A("y"), A("pos")
F64 = D("float64")

UNARY = (
    "abs exp sin cos tan tanh sigmoid relu sign sgn floor ceil square neg negative clone "
    "ravel t isnan isinf isfinite asin acos atan arcsin arccos arctan"
).split()
POSITIVE = "log log1p sqrt reciprocal rsqrt".split()
BINARY = "add sub mul eq ne gt ge lt le maximum minimum".split()
INPLACE = (
    "abs exp sin cos tan tanh sigmoid relu floor ceil square neg negative "
    "asin acos atan arcsin arccos arctan"
).split()
INPLACE_POSITIVE = "log log1p sqrt reciprocal rsqrt".split()

CASES: list[Case] = [
    *(c(f"torch.{n}", input=X) for n in UNARY),
    *(c(f"torch.{n}", input=P) for n in POSITIVE),
    *(c(f"torch.{n}", input=X, other=Y) for n in BINARY),
    *(c(f"torch.{n}_", input=X) for n in INPLACE),
    *(c(f"torch.{n}_", input=P) for n in INPLACE_POSITIVE),
    c("torch.logical_not", input=A("mask")),
    c("torch.add", input=X, other=Y, alpha=2),
    c("torch.sub", input=X, other=Y, alpha=0.5),
    c("torch.div", input=X, other=P, rounding_mode="floor"),
    c("torch.true_divide", input=X, other=P),  # (the docstring says dividend, divisor)
    c("torch.floor_divide", input=X, other=P),
    c("torch.remainder", input=X, other=P),
    c("torch.pow", input=P, exponent=2.5),
    c("torch.matmul", input=X, other=A("m34")),
    c("torch.mm", input=X, mat2=A("m34")),
    c("torch.bmm", input=A("b234"), mat2=A("b245")),
    c("torch.mv", input=A("m34"), vec=A("v4")),
    c("torch.dot", input=A("v"), tensor=A("w")),
    c("torch.outer", input=A("v"), vec2=A("w")),
    c("torch.ger", input=A("v"), vec2=A("w")),
    c("torch.addmm", input=A("m24"), mat1=X, mat2=A("m34"), beta=0.5, alpha=2),
    c("torch.equal", input=X, other=X),
    c("torch.allclose", input=X, other=Y, rtol=1e-3, atol=2.0, equal_nan=True),
    c("torch.where", condition=A("mask"), input=X, other=Y),
    c("torch.sum", input=X, dim=1, keepdim=True, dtype=F64),
    c("torch.mean", input=X, dim=(0, 1), keepdim=False, dtype=F64),
    c("torch.prod", input=P, dim=1, keepdim=True, dtype=F64),
    c("torch.max", input=X, dim=1, keepdim=True),
    c("torch.max", input=X, other=Y),
    c("torch.min", input=X, dim=0, keepdim=False),
    c("torch.min", input=X, other=Y),
    c("torch.amax", input=X, dim=1, keepdim=True),
    c("torch.amin", input=X, dim=(0, 1), keepdim=False),
    c("torch.argmax", input=X, dim=1, keepdim=True),
    c("torch.argmin", input=X, dim=0, keepdim=False),
    c("torch.topk", input=X, k=2, dim=1, largest=False, sorted=True),
    c("torch.sort", input=X, dim=0, descending=True),
    c("torch.sort", input=X, dim=1, descending=False, stable=True),
    c("torch.argsort", input=X, dim=1, descending=True),
    c("torch.all", input=A("mask"), dim=1, keepdim=True),
    c("torch.any", input=A("mask"), dim=0, keepdim=False),
    c("torch.norm", input=X, p=1, dim=1, keepdim=True, dtype=F64),
    c("torch.norm", input=X, p="fro"),
    c("torch.logsumexp", input=X, dim=1, keepdim=True),
    c("torch.var", input=X, dim=1, correction=0, keepdim=True),
    c("torch.var", input=X, dim=1, unbiased=False, keepdim=False),
    c("torch.std", input=X, dim=1, correction=2, keepdim=False),
    c("torch.std", input=X, dim=0, unbiased=True),
    c("torch.cumsum", input=X, dim=1, dtype=F64),
    c("torch.cumprod", input=X, dim=1, dtype=F64),
    c("torch.unflatten", input=A("b234"), dim=2, sizes=(2, 2)),
    c("torch.broadcast_to", input=A("x13"), size=(2, 3)),
    c("torch.tril", input=X, diagonal=1),
    c("torch.triu", input=X, diagonal=-1),
    c("torch.hstack", tensors=[X, Y]),
    c("torch.vstack", tensors=[X, Y]),
    c("torch.row_stack", tensors=[X, Y]),
    c("torch.column_stack", tensors=[X, Y]),
    c("torch.roll", input=X, shifts=(1, -1), dims=(0, 1)),
    c("torch.atan2", input=X, other=Y),
    c("torch.einsum", "ij,jk->ik", X, A("m34")),
    c("torch.einsum", "bij,bjk", [A("b234"), A("b245")]),
    c("torch.trace", input=A("sq")),
    c("torch.std_mean", input=X, dim=1, correction=0, keepdim=True),
    c("torch.std_mean", input=X, dim=0, unbiased=False, keepdim=False),
    c("torch.var_mean", input=X, dim=[0, 1], correction=2),
    c("torch.var_mean", input=X, unbiased=False),
    c("torch.cdist", x1=X, x2=Y, p=1.0, compute_mode="donot_use_mm_for_euclid_dist"),
    c("torch.cdist", x1=X, x2=A("x13"), p=2.0, compute_mode="use_mm_for_euclid_dist"),
    c("torch.arctan2", input=X, other=Y),
    c("torch.softmax", input=X, dim=1, dtype=F64),
    c("torch.log_softmax", input=X, dim=0, dtype=F64),
    c("torch.transpose", input=X, dim0=0, dim1=1),
    c("torch.swapaxes", input=X, axis0=0, axis1=1),
    c("torch.permute", input=X, dims=(1, 0)),
    c("torch.movedim", input=X, source=0, destination=1),
    c("torch.moveaxis", input=X, source=(0, 1), destination=(1, 0)),
    c("torch.reshape", input=X, shape=(3, 2)),
    c("torch.flatten", input=A("b234"), start_dim=1, end_dim=2),
    c("torch.squeeze", input=A("x13"), dim=0),
    c("torch.unsqueeze", input=X, dim=1),
    c("torch.narrow", input=X, dim=1, start=1, length=2),
    c("torch.select", input=X, dim=1, index=2),
    c("torch.diagonal", input=A("sq"), offset=1, dim1=0, dim2=1),
    c("torch.as_strided", input=X, size=(2, 2), stride=(1, 2), storage_offset=1),
    c("torch.gather", input=X, dim=1, index=A("idx"), sparse_grad=False),
    c("torch.masked_fill", input=X, mask=A("mask"), value=0.5),
    c("torch.chunk", input=X, chunks=2, dim=1),
    c("torch.unbind", input=X, dim=1),
    c("torch.split", tensor=X, split_size_or_sections=[1, 2], dim=1),
    c("torch.flip", input=X, dims=(0, 1)),
    c("torch.round", input=X, decimals=1),
    c("torch.round_", input=X, decimals=1),
    c("torch.clamp", input=X, min=-0.5, max=0.5),
    c("torch.clip", input=X, min=-0.5, max=0.5),
    c("torch.clamp_", input=X, min=-0.5, max=0.5),
    c("torch.clip_", input=X, min=-0.5),
    c("torch.cat", tensors=[X, Y], dim=1),
    c("torch.concat", tensors=[X, Y], dim=1),
    c("torch.concatenate", tensors=[X, Y], axis=1),
    c("torch.stack", tensors=[X, Y], dim=1),
    c("torch.dropout", input=X, p=0.5, train=True),
    c("torch.bilinear", input1=X, input2=Y, weight=A("WB"), bias=A("b5")),
    c("torch.tensor", data=[[1, 2]], dtype=F64, device="cpu", requires_grad=True),
    c("torch.as_tensor", data=[1.5, 2.0], dtype=F64, device="cpu"),
    c("torch.zeros", size=(2, 3), dtype=F64, device="cpu", requires_grad=True),
    c("torch.ones", size=(2,), dtype=F64, requires_grad=False),
    c("torch.empty", size=(0, 3), dtype=F64, device="cpu"),
    c("torch.full", size=(2, 2), fill_value=1.5, dtype=F64, device="cpu"),
    c("torch.eye", n=2, m=3, dtype=F64, device="cpu", requires_grad=True),
    c("torch.arange", start=0, end=5, step=2, dtype=F64, device="cpu"),
    c("torch.range", start=0, end=4, step=2, dtype=F64, device="cpu", requires_grad=True),
    c("torch.linspace", start=0, end=1, steps=5, dtype=F64, device="cpu"),
    c("torch.zeros_like", input=X, dtype=F64, device="cpu", requires_grad=True),
    c("torch.ones_like", input=X, dtype=F64, requires_grad=False),
    c("torch.empty_like", input=A("e03"), dtype=F64, device="cpu", requires_grad=True),
    c("torch.full_like", input=X, fill_value=2.0, dtype=F64),
    c("torch.randn_like", input=X, dtype=F64, generator=None),
    c("torch.rand_like", input=X, dtype=F64, requires_grad=True),
    c("torch.randn", size=(2, 3), generator=None, dtype=F64, requires_grad=True),
    c("torch.normal", mean=0.5, std=2.0, size=(2, 3), generator=None, dtype=F64),
    c("torch.normal", mean=X, std=0.5),
    c("torch.rand", size=(2, 3), dtype=F64, device="cpu"),
    c("torch.randint", low=0, high=5, size=(2, 3)),
    c("torch.randperm", n=5, dtype=D("int64")),
    c("torch.is_floating_point", input=X),
    c("torch.numel", input=X),
    c("torch.is_tensor", X),
    c("torch.initial_seed"),
    Case("torch.manual_seed", (), {"seed": 3}, compare=False),
    Case("torch.seed", (), {}, compare=False),
    c("torch.get_rng_state"),
    c("torch.multinomial", input=A("prob"), num_samples=2, replacement=True, generator=None),
    c("F.one_hot", input=A("idx"), num_classes=4),
    c("torch.get_default_dtype"),
    c("torch.is_grad_enabled"),
    c("torch.is_inference_mode_enabled"),
    # out=: written into the given tensor, which is returned (and resized, with a warning)
    c("torch.exp", input=X, out=Out((2, 3))),
    c("torch.asin", input=A("prob"), out=Out((2, 3), "float64")),
    c("torch.rsqrt", input=P, out=Out((5,))),
    c("torch.add", input=X, other=Y, alpha=2, out=Out((2, 3), "float64")),
    c("torch.matmul", input=X, other=A("m34"), out=Out((2, 4))),
    c("torch.sum", input=X, dim=1, keepdim=True, out=Out((2, 1))),
    c("torch.mean", input=X, dim=0, out=Out((3,))),
    c("torch.argmax", X, 1, out=Out((2,), "int64")),
    c("torch.eq", input=X, other=Y, out=Out((2, 3))),
    c("torch.cat", tensors=[X, Y], out=Out((0,))),
    c("torch.mul", input=X, other=Y, out=Out((5,))),
    c("torch.where", condition=A("mask"), input=X, other=Y, out=Out((2, 3))),
    c("torch.zeros", 2, 3, out=Out((2, 3))),
    c("torch.arange", 4, out=Out((4,), "int64")),
    c("torch.add", input=X, other=1.5, out=Out((2, 3), "int64")),  # can't cast: refused
    c("torch.add", input=A("x", True), other=Y, out=Out((2, 3))),  # records: refused
    c("torch.exp", input=X, out=[1]),
    # torch.nn.functional
    c("F.relu", input=X, inplace=False),
    c("F.relu", input=X, inplace=True),
    c("F.leaky_relu", input=X, negative_slope=0.2, inplace=False),
    c("F.leaky_relu", input=X, negative_slope=0.2, inplace=True),
    c("F.softplus", input=X, beta=2.0, threshold=1.0),
    c("F.sigmoid", input=X),
    c("F.tanh", input=X),
    c("F.softmax", input=X, dim=1, dtype=F64),
    c("F.log_softmax", input=X, dim=0, _stacklevel=5, dtype=F64),
    c("F.gelu", input=X, approximate="tanh"),
    c("F.elu", input=X, alpha=0.5, inplace=False),
    c("F.prelu", input=X, weight=A("w")),
    c("torch.prelu", input=X, weight=A("w")),
    c("Tensor.prelu", X, weight=A("w")),
    c("F.silu", input=X, inplace=False),
    c("F.hardtanh", input=X, min_val=-0.5, max_val=0.5, inplace=False),
    c("F.dropout", input=X, p=0.5, training=True, inplace=False),
    c("F.dropout2d", input=A("b234"), p=0.5, training=True, inplace=False),
    c("F.linear", input=X, weight=A("W"), bias=A("b4")),
    c("F.bilinear", input1=X, input2=Y, weight=A("WB"), bias=A("b5")),
    c("F.mse_loss", input=X, target=Y, reduction="sum"),
    c("F.mse_loss", input=X, target=Y, size_average=False),
    c("F.l1_loss", input=X, target=Y, reduce=False),
    c("F.l1_loss", input=X, target=Y, reduction="none", weight=None),
    c("F.binary_cross_entropy", input=A("prob"), target=A("t01"), weight=None, reduction="sum"),
    c("F.binary_cross_entropy", input=A("prob"), target=A("t01"), size_average=False),
    c(
        "F.binary_cross_entropy_with_logits",
        input=X,
        target=A("t01"),
        weight=None,
        size_average=None,
        reduce=None,
        reduction="mean",
        pos_weight=A("pw"),
    ),
    c("F.nll_loss", input=X, target=A("cls"), weight=None, ignore_index=1, reduction="sum"),
    c("F.nll_loss", input=X, target=A("cls"), size_average=True, reduce=True),
    c(
        "F.cross_entropy",
        input=X,
        target=A("cls"),
        weight=None,
        ignore_index=-100,
        reduction="mean",
        label_smoothing=0.1,
    ),
    c("F.cross_entropy", input=X, target=A("cls"), size_average=False),
    c("F.layer_norm", input=X, normalized_shape=[3], weight=A("w"), bias=A("v"), eps=1e-3),
    c("F.layer_norm", input=A("b234"), normalized_shape=(3, 4)),
    c(
        "F.batch_norm",
        input=X,
        running_mean=A("v"),
        running_var=A("pw"),
        weight=A("w"),
        bias=None,
        training=True,
        momentum=0.5,
        eps=1e-3,
    ),
    c("F.batch_norm", input=A("b234"), running_mean=A("v"), running_var=A("pw")),
    c("F.group_norm", input=A("m24"), num_groups=2, weight=A("v4"), bias=None, eps=1e-3),
    c(
        "F.instance_norm",
        input=A("b234"),
        running_mean=A("v"),
        running_var=A("pw"),
        weight=A("w"),
        bias=A("v"),
        use_input_stats=True,
        momentum=0.5,
        eps=1e-3,
    ),
    c(
        "F.embedding",
        input=A("eidx"),
        weight=A("E"),
        padding_idx=0,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ),
    # torch.linalg
    # (the docstring says A; PyTorch's parser takes input)
    c("linalg.norm", input=X, ord=None, dim=None, keepdim=False, dtype=F64),
    c("linalg.norm", input=A("v"), ord=1),
    c("linalg.norm", input=X, ord="fro", dim=(0, 1), keepdim=True),
    c("linalg.vector_norm", x=X, ord=3, dim=1, keepdim=True, dtype=F64),
    c("linalg.vector_norm", x=X, out=Out(())),
    # Tensor methods (self first)
    *(c(f"Tensor.{n}", X) for n in UNARY + ["sign_", "sgn_"]),
    *(c(f"Tensor.{n}", P) for n in POSITIVE),
    *(c(f"Tensor.{n}_", X) for n in INPLACE),
    *(c(f"Tensor.{n}_", P) for n in INPLACE_POSITIVE),
    *(c(f"Tensor.{n}", X, other=Y) for n in BINARY if n not in ("maximum", "minimum")),
    c("Tensor.maximum", X, other=Y),
    c("Tensor.minimum", X, other=Y),
    c("Tensor.logical_not", A("mask")),
    c("Tensor.add", X, other=Y, alpha=2),
    c("Tensor.sub", X, other=Y, alpha=2),
    c("Tensor.div", X, other=P, rounding_mode="trunc"),
    c("Tensor.true_divide", X, other=P),
    c("Tensor.floor_divide", X, other=P),
    c("Tensor.remainder", X, other=P),
    c("Tensor.pow", P, exponent=2),
    c("Tensor.matmul", X, other=A("m34")),
    c("Tensor.mm", X, mat2=A("m34")),
    c("Tensor.bmm", A("b234"), mat2=A("b245")),
    c("Tensor.mv", A("m34"), vec=A("v4")),
    c("Tensor.dot", A("v"), tensor=A("w")),
    c("Tensor.outer", A("v"), vec2=A("w")),
    c("Tensor.addmm", A("m24"), mat1=X, mat2=A("m34"), beta=0.5, alpha=2),
    c("Tensor.where", X, condition=A("mask"), other=Y),
    c("Tensor.equal", X, other=X),
    c("Tensor.allclose", X, other=Y, rtol=1e-3, atol=2.0, equal_nan=False),
    c("Tensor.add_", X, other=Y, alpha=2),
    c("Tensor.sub_", X, other=Y, alpha=2),
    c("Tensor.mul_", X, other=Y),
    c("Tensor.div_", X, other=P, rounding_mode="floor"),
    c("Tensor.floor_divide_", X, other=P),
    c("Tensor.pow_", P, exponent=2),
    c("Tensor.clamp", X, min=-0.5, max=0.5),
    c("Tensor.clamp_", X, min=-0.5, max=0.5),
    c("Tensor.clip", X, min=-0.5, max=0.5),
    c("Tensor.clip_", X, max=0.5),
    c("Tensor.round", X, decimals=1),
    c("Tensor.round_", X, decimals=1),
    c("Tensor.sum", X, dim=1, keepdim=True, dtype=F64),
    c("Tensor.mean", X, dim=1, keepdim=True, dtype=F64),
    c("Tensor.prod", P, dim=1, keepdim=False, dtype=F64),
    c("Tensor.std", X, dim=1, correction=0, keepdim=True),
    c("Tensor.var", X, dim=1, unbiased=True, keepdim=False),
    c("Tensor.norm", X, p=1, dim=1, keepdim=True, dtype=F64),
    c("Tensor.max", X, dim=1, keepdim=True),
    c("Tensor.max", X, other=Y),
    c("Tensor.min", X, dim=1, keepdim=False),
    c("Tensor.min", X, other=Y),
    c("Tensor.amax", X, dim=1, keepdim=True),
    c("Tensor.amin", X, dim=1, keepdim=True),
    c("Tensor.argmax", X, dim=1, keepdim=True),
    c("Tensor.argmin", X, dim=1, keepdim=False),
    c("Tensor.topk", X, k=1, dim=0, largest=True, sorted=False),
    c("Tensor.sort", X, dim=1, descending=True, stable=True),
    c("Tensor.argsort", X, dim=0, descending=False, stable=True),
    c("Tensor.all", A("mask"), dim=1, keepdim=True),
    c("Tensor.any", A("mask"), dim=1, keepdim=False),
    c("Tensor.logsumexp", X, dim=1, keepdim=True),
    c("Tensor.cumsum", X, dim=1, dtype=F64),
    c("Tensor.cumprod", X, dim=1, dtype=F64),
    c("Tensor.unflatten", A("b234"), dim=1, sizes=(3, 1)),
    c("Tensor.broadcast_to", A("x13"), size=(2, 3)),
    c("Tensor.tril", X, diagonal=1),
    c("Tensor.tril_", X, diagonal=0),
    c("Tensor.triu", X, diagonal=-1),
    c("Tensor.triu_", X, diagonal=2),
    c("Tensor.roll", X, shifts=1, dims=1),
    c("Tensor.trace", A("sq")),
    c("Tensor.atan2", X, other=Y),
    c("Tensor.atan2_", X, other=Y),
    c("Tensor.arctan2", X, other=Y),
    c("Tensor.arctan2_", X, other=Y),
    c("Tensor.stride", X, dim=1),
    c("Tensor.softmax", X, dim=1, dtype=F64),
    c("Tensor.log_softmax", X, dim=1, dtype=F64),
    c("Tensor.transpose", X, dim0=0, dim1=1),
    c("Tensor.swapaxes", X, axis0=0, axis1=1),
    c("Tensor.permute", X, dims=(1, 0)),
    c("Tensor.movedim", X, source=1, destination=0),
    c("Tensor.moveaxis", X, source=0, destination=-1),
    c("Tensor.reshape", X, shape=(3, 2)),
    c("Tensor.view", X, size=(3, 2)),
    c("Tensor.expand", A("x13"), size=(2, 3)),
    c("Tensor.repeat", X, repeats=(2, 1)),
    c("Tensor.flip", X, dims=(0,)),
    c("Tensor.squeeze", A("x13"), dim=0),
    c("Tensor.unsqueeze", X, dim=0),
    c("Tensor.unsqueeze_", X, dim=0),
    c("Tensor.squeeze_", A("x13"), dim=0),
    c("Tensor.transpose_", X, dim0=0, dim1=1),
    c("Tensor.t_", X),
    c("Tensor.flatten", A("b234"), start_dim=0, end_dim=1),
    c("Tensor.narrow", X, dim=1, start=0, length=2),
    c("Tensor.select", X, dim=0, index=1),
    c("Tensor.diagonal", A("sq"), offset=0, dim1=1, dim2=0),
    c("Tensor.as_strided", X, size=(2, 2), stride=(1, 2), storage_offset=0),
    c("Tensor.gather", X, dim=1, index=A("idx"), sparse_grad=False),
    c("Tensor.masked_fill", X, mask=A("mask"), value=1.0),
    c("Tensor.masked_fill_", X, mask=A("mask"), value=1.0),
    c("Tensor.chunk", X, chunks=3, dim=1),
    c("Tensor.unbind", X, dim=0),
    c("Tensor.split", X, split_size=1, dim=1),
    c("Tensor.expand_as", A("x13"), other=Y),
    c("Tensor.view_as", X, other=Y),
    c("Tensor.reshape_as", X, other=A("x")),
    c("Tensor.uniform_", X, **{"from": -1.0, "to": 2.0}),
    c("Tensor.normal_", X, mean=1.0, std=2.0, generator=None),
    c("Tensor.exponential_", X, lambd=2.0, generator=None),
    c("Tensor.multinomial", A("prob"), num_samples=3, replacement=False, generator=None),
    c("Tensor.fill_", X, value=2.0),
    c("Tensor.copy_", X, other=Y, non_blocking=False),  # (the docstring says src)
    c("Tensor.zero_", X),
    c("Tensor.requires_grad_", X, requires_grad=True),
    c("Tensor.size", X, dim=1),
    c("Tensor.to", X, dtype=F64),
    c("Tensor.to", X, device="cpu", dtype=F64, non_blocking=False, copy=False),
    c("Tensor.type", X, dtype="torch.DoubleTensor", non_blocking=False),
    c("Tensor.cuda", X, device=None, non_blocking=False),
    *(
        c(f"Tensor.{n}", X)
        for n in (
            "float double half long int bool cpu contiguous is_contiguous is_floating_point "
            "detach detach_ numel nelement dim tolist is_inference numpy"
        ).split()
    ),
    c("Tensor.item", A("one")),
    c("Tensor.retain_grad", A("x", True)),
    # scatter and index_* writes, their losses' neighbours, logcumsumexp, fmod, clamp_min/max
    c("torch.scatter", input=X, dim=1, index=A("idx"), src=Y),
    c("torch.scatter", input=X, dim=1, index=A("idx"), value=2.0),
    c("torch.scatter_add", input=X, dim=1, index=A("idx"), src=Y),
    c("torch.index_fill", input=X, dim=1, index=A("vi"), value=2.0),
    c("torch.index_add", input=X, dim=0, index=A("vi"), source=Y, alpha=2),
    c("torch.index_copy", input=X, dim=0, index=A("vi"), source=Y),
    c("torch.index_select", input=X, dim=1, index=A("vi")),
    c("torch.index_put", input=X, indices=(A("vi"),), values=A("w"), accumulate=True),
    c("torch.index_put_", input=X, indices=(A("vi"),), values=A("w"), accumulate=False),
    c("torch.logcumsumexp", input=X, dim=1),
    c("torch.fmod", input=X, other=P),
    c("torch.clamp_min", input=X, min=0.1),
    c("torch.clamp_max", input=X, max=0.1),
    c("torch.clamp_min_", input=X, min=0.1),
    c("torch.clamp_max_", input=X, max=0.1),
    c("F.smooth_l1_loss", input=X, target=Y, reduction="sum", beta=0.5),
    c("F.smooth_l1_loss", input=X, target=Y, size_average=False),
    c("F.huber_loss", input=X, target=Y, reduction="none", delta=0.5, weight=None),
    c("Tensor.scatter", X, dim=1, index=A("idx"), src=Y),
    c("Tensor.scatter", X, dim=1, index=A("idx"), value=2.0, reduce="add"),
    c("Tensor.scatter_", X, dim=1, index=A("idx"), value=2.0),
    c("Tensor.scatter_", X, dim=1, index=A("idx"), src=Y),
    c("Tensor.scatter_add", X, dim=1, index=A("idx"), src=Y),
    c("Tensor.scatter_add_", X, dim=1, index=A("idx"), src=Y),
    c("Tensor.index_fill", X, dim=1, index=A("vi"), value=2.0),
    c("Tensor.index_fill_", X, dim=1, index=A("vi"), value=A("one")),
    c("Tensor.index_add", X, dim=0, index=A("vi"), source=Y, alpha=-1),
    c("Tensor.index_add_", X, dim=0, index=A("vi"), source=Y),
    c("Tensor.index_copy", X, dim=0, index=A("vi"), source=Y),
    c("Tensor.index_copy_", X, dim=0, index=A("vi"), source=Y),
    c("Tensor.index_select", X, dim=0, index=A("vi")),
    c("Tensor.index_put", X, indices=(A("vi"),), values=A("w"), accumulate=True),
    c("Tensor.index_put_", X, indices=(A("vi"),), values=A("w"), accumulate=True),
    c("Tensor.logcumsumexp", X, dim=0),
    c("Tensor.fmod", X, other=1.5),
    c("Tensor.fmod_", X, other=P),
    c("Tensor.remainder_", X, other=P),
    c("Tensor.clamp_min", X, min=0.1),
    c("Tensor.clamp_max", X, max=Y),
    c("Tensor.clamp_min_", X, min=Y),
    c("Tensor.clamp_max_", X, max=0.1),
    # convolution and pooling
    c(
        "F.conv2d",
        input=A("img"),
        weight=A("K"),
        bias=A("b3"),
        stride=(2, 1),
        padding=1,
        dilation=(1, 2),
        groups=2,
    ),
    c("F.conv2d", input=A("img"), weight=A("K"), padding="same", groups=2),
    c(
        "torch.conv2d",
        input=A("img"),
        weight=A("K"),
        bias=A("b3"),
        stride=1,
        padding="valid",
        dilation=1,
        groups=2,
    ),
    c("F.conv1d", input=A("seq"), weight=A("K1"), bias=A("b2"), stride=2, padding=1, dilation=1),
    c(
        "torch.conv1d",
        input=A("seq"),
        weight=A("K1"),
        bias=None,
        stride=1,
        padding="same",
        dilation=2,
        groups=1,
    ),
    c(
        "F.max_pool2d",
        input=A("img"),
        kernel_size=3,
        stride=2,
        padding=1,
        dilation=1,
        ceil_mode=True,
        return_indices=True,
    ),
    c(
        "torch.max_pool2d",
        input=A("img"),
        kernel_size=(2, 3),
        stride=(1, 2),
        padding=(1, 0),
        dilation=1,
        ceil_mode=False,
    ),
    c(
        "F.avg_pool2d",
        input=A("img"),
        kernel_size=3,
        stride=2,
        padding=1,
        ceil_mode=True,
        count_include_pad=False,
        divisor_override=None,
    ),
    c("F.avg_pool2d", input=A("img"), kernel_size=2, divisor_override=3),
]


# ************************************************************ what stays unsupported

# Exposed names without a keyword case here, each with the reason.
ALLOWED: dict[str, str] = {
    "torch.expand_as": "not a torch function (torch has only Tensor.expand_as): an adcli extra",
    "torch.from_numpy": "PyTorch takes no keyword arguments (from_numpy(ndarray) positional)",
    "torch.set_default_dtype": "positional-only in PyTorch (d, /); global state, legacy tests",
    "torch.set_default_tensor_type": "positional-only in PyTorch (t, /); global state",
    "torch.set_rng_state": "needs a state: tests/conformance/test_random_vs_torch.py",
    "torch.set_default_device": "global state for the rest of the run: tests/test_legacy*",
    "torch.get_default_device": "no parameters; tests/conformance/scripts (legacy API)",
    "torch.set_printoptions": "global print state: tests/conformance/test_printing_vs_torch.py",
    "Tensor.backward": "needs a graph: tests/conformance/test_engine_vs_torch.py (keywords)",
    "Tensor.register_hook": "needs a graph: tests/conformance/scripts (hooks)",
    "Tensor.register_post_accumulate_grad_hook": (
        "needs a backward pass: tests/conformance/tutorials/optimizer_step_in_backward.ad"
    ),
}

# PyTorch keywords adcli does not take, each with the reason.
ALLOWED_KEYWORDS: dict[str, str] = {
    "out_dtype": "mm/bmm/addmm out_dtype (2.8+): reduced-precision outputs adcli has not",
    "sparse_grad": "accepted; True is refused (adcli has no sparse tensors)",
    **dict.fromkeys(
        ("max@max", "max_values@max", "min@min", "min_indices@min"),
        "max/min(dim, out=(values, indices)): a tuple out= is not supported",
    ),
    **dict.fromkeys(
        ("values@topk", "indices@topk", "values@sort", "indices@sort"),
        "topk/sort(..., out=(values, indices)): a tuple out= is not supported",
    ),
    "src@copy_": "the schema's name; PyTorch's Python binding takes other (src= fails)",
    "implicit": "internal to the tracer (Tensor.expand(size, *, implicit))",
    "dtype@view": "Tensor.view(dtype): reinterpreting bytes is not supported",
    "a@einsum": "einsum.sublist(Tensor a, ...): the sublist form; torch.einsum(*args) takes no "
    "keywords in Python",
}


# ************************************************************ running a case


def _result(r: Any) -> Any:
    """A comparable form: arrays with dtype and shape, tuples of those, plain values."""
    if isinstance(r, (torch.Tensor, ATensor)):
        data = r.detach().numpy() if isinstance(r, torch.Tensor) else r.data_
        return ("tensor", str(r.dtype), tuple(r.shape), bool(r.requires_grad), np.array(data))
    if isinstance(r, (tuple, list)):
        return [_result(x) for x in r]
    if isinstance(r, (torch.dtype, ADType)):
        return str(r)
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.shape, r.copy())
    return r


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and a and a[0] in ("tensor", "ndarray"):
        if a[:-1] != b[:-1]:
            return False
        x, y = a[-1], b[-1]
        if x.dtype.kind == "f":
            return bool(np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(np.array_equal(x, y))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _run(lib: Lib, case: Case) -> tuple[str, Any, list[str]]:
    """('ok', result, warnings) or ('error', (type, sentence), warnings)."""
    args, kwargs = lib.make(case.args), {k: lib.make(v) for k, v in case.kwargs.items()}
    kind, fname = case.name.split(".")
    if kind == "Tensor":
        fn = getattr(args[0], fname)
        args = args[1:]
    else:
        fn = lib.fn(case.name)
    lib.seed()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - compared between the two libraries
            return "error", (type(e).__name__, str(e)), [str(w.message) for w in caught]
    out = kwargs.get("out")
    if isinstance(out, (torch.Tensor, ATensor)):
        r = (r is out, _result(r))
    return "ok", _result(r), [str(w.message) for w in caught]


@pytest.mark.parametrize("case", CASES, ids=[cs.id for cs in CASES])
def test_keywords_as_torch_names_them(case: Case) -> None:
    want = _run(TORCH, case)
    got = _run(ADCLI, case)
    assert got[0] == want[0], f"torch: {want[1]}\nadcli: {got[1]}"
    if want[0] == "error":
        assert got[1] == want[1]
        return
    if case.compare:
        assert _same(got[1], want[1]), f"torch: {want[1]}\nadcli: {got[1]}"
    assert got[2] == want[2]


def test_out_resizes_with_a_warning() -> None:
    """A view cannot be resized (PyTorch would write past it into its base): refused."""
    z = TABLES["torch"]["zeros"](2, 3)
    with pytest.raises(NotImplementedError, match="cannot resize a view"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TABLES["torch"]["exp"](TABLES["torch"]["ones"](4), out=z[0])


def test_out_partial_overlap_refused_as_in_torch() -> None:
    def run(m: Any) -> str:
        x = m.ones(3)
        try:
            m.add(x[:2], x[1:], out=x[:2])
        except RuntimeError as e:
            return str(e)
        return ""

    class _Adcli:
        def __getattr__(self, name: str) -> Any:
            return TABLES["torch"][name]

    assert run(_Adcli()) == run(torch) != ""


# ************************************************************ coverage of the audit


def _exposed() -> list[str]:
    names = []
    for short, module in MODULES.items():
        for name, v in TABLES[module].items():
            if callable(v) and not isinstance(v, type) and not isinstance(v, str):
                names.append(f"{short}.{name}")
    for name in dir(ATensor):
        if not name.startswith("_") and callable(getattr(ATensor, name)):
            if not isinstance(getattr(ATensor, name), property):
                names.append(f"Tensor.{name}")
    return names


def test_every_name_is_audited() -> None:
    covered = {cs.name for cs in CASES}
    missing = [n for n in _exposed() if n not in covered and n not in ALLOWED]
    assert not missing, f"names with no keyword case and no ALLOWED reason: {missing}"
    stale = [n for n in ALLOWED if n in covered]
    assert not stale, f"ALLOWED names that now have a case: {stale}"


# ************************************************************ PyTorch's schemas

# Written in Python in PyTorch, with their own names (checked by the keyword cases).
PYTHON_LEVEL = {"split"}

_IGNORED = {"out", "layout", "memory_format", "pin_memory", "device", "size"}


def _schema_keywords(op: str, method: bool) -> set[str]:
    """The argument names of PyTorch's tensor overloads of `aten::op` (`self` is
    `input` for a function and bound for a method; the out= overloads left out)."""
    names: set[str] = set()
    for s in torch._C._jit_get_schemas_for_operator("aten::" + op):
        if s.overload_name.endswith("out") or not s.arguments:
            continue
        if str(s.arguments[0].type) != "Tensor":
            continue  # aten::eq.int(int a, int b) and the like: TorchScript's, not Python's
        for a in s.arguments:
            if a.name == "self":
                if not method:
                    names.add("input")
                continue
            names.add(a.name)
    return names


def _accepted(fn: Any, method: bool, varargs: str | None) -> set[str] | None:
    try:
        params = list(inspect.signature(fn).parameters.values())[1 if method else 0 :]
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None  # takes any keyword: nothing to check statically
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names | ({varargs} if varargs else set())


def test_schema_keywords_accepted() -> None:
    from adcli.autograd import signatures

    problems = []
    for qual in _exposed():
        kind, name = qual.split(".")
        if kind not in ("torch", "Tensor") or qual in ALLOWED or name in PYTHON_LEVEL:
            continue
        method = kind == "Tensor"
        fn = getattr(ATensor, name) if method else TABLES["torch"][name]
        table = signatures.METHOD_VARARGS if method else signatures.FUNCTION_VARARGS
        accepted = _accepted(fn, method, table.get(name))
        if accepted is None:
            continue
        for kw in sorted(_schema_keywords(name, method) - accepted - _IGNORED):
            if kw not in ALLOWED_KEYWORDS and f"{kw}@{name}" not in ALLOWED_KEYWORDS:
                problems.append(f"{qual}: {kw}")
    assert not problems, f"PyTorch keywords adcli does not take: {problems}"
