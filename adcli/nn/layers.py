"""Layers with weights or shapes: Linear, Bilinear, Embedding, Flatten, Unflatten,
Identity and Dropout, initialised and printed as PyTorch 2.13 does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import dtypes, grad_mode, ops
from ..autograd.tensor import Tensor
from . import init
from .module import Module, attrs
from .parameter import Parameter


def _empty(*shape: int, dtype: Any = None) -> Tensor:
    dt = ops._dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    return Tensor._make(np.zeros(shape, dt.np))


class Identity(Module):
    """Returns its input unchanged (any arguments are ignored)."""

    __ad_attrs__ = attrs()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


def _weight_and_bias(module: Module, shape: tuple[int, ...], bias: bool, dtype: Any) -> None:
    """Linear-style parameters: a weight of `shape`, a bias of shape[0] elements (or a
    None bias), both then initialised by the module's reset_parameters()."""
    module.weight = Parameter(_empty(*shape, dtype=dtype))
    if bias:
        module.bias = Parameter(_empty(shape[0], dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features)."""

    __ad_attrs__ = attrs("in_features", "out_features", "weight", "bias", "reset_parameters")
    __ad_settable__ = Module.__ad_settable__ | {"weight", "bias"}

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight (a = sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        _check_linear(input, self.weight)
        return ops.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def _check_linear(x: Any, w: Tensor) -> None:
    """PyTorch's errors for a non-tensor input (ops.linear checks the shapes)."""
    if not isinstance(x, Tensor) and type(x) is not ops.BATCHED:  # (inside vmap)
        raise TypeError(
            f"linear(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}"
        )


class Bilinear(Module):
    """y = x1^T A x2 + b, A of shape (out_features, in1_features, in2_features)."""

    __ad_attrs__ = attrs(
        "in1_features", "in2_features", "out_features", "weight", "bias", "reset_parameters"
    )
    __ad_settable__ = Module.__ad_settable__ | {"weight", "bias"}

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, dtype)

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1), 1/sqrt(in1)) for the weight, then the bias."""
        bound = 1 / math.sqrt(self.weight.data_.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return ops.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Embedding(Module):
    """A lookup table: row i of the weight for index i (N(0, 1) initialised)."""

    __ad_attrs__ = attrs(
        "num_embeddings",
        "embedding_dim",
        "padding_idx",
        "max_norm",
        "norm_type",
        "scale_grad_by_freq",
        "sparse",
        "weight",
        "reset_parameters",
    )
    __ad_settable__ = Module.__ad_settable__ | {"weight"}

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                if padding_idx >= num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
            elif padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(
                _empty(num_embeddings, embedding_dim, dtype=dtype), requires_grad=not _freeze
            )
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """N(0, 1) weights, the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with grad_mode.no_grad():
                self.weight.data_[self.padding_idx] = 0
                self.weight._vc[0] += 1

    def forward(self, input: Tensor) -> Tensor:
        return ops.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding holding `embeddings` (frozen by default)."""
        if embeddings.data_.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.data_.shape
        return cls(
            rows,
            cols,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            _weight=embeddings,
            _freeze=freeze,
        )


Embedding.__ad_attrs__ = Embedding.__ad_attrs__ | {"from_pretrained"}
Embedding.__ad_class_attrs__ = frozenset({"from_pretrained"})  # nn.Embedding.from_pretrained


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one."""

    __ad_attrs__ = attrs("start_dim", "end_dim")

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return ops.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim into the shape unflattened_size."""

    __ad_attrs__ = attrs("dim", "unflattened_size")

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                "unflattened_size must be tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        shape = list(input.data_.shape)
        d = self.dim if self.dim >= 0 else self.dim + len(shape)
        sizes = list(self.unflattened_size)
        if -1 in sizes:
            known = math.prod(s for s in sizes if s != -1)
            sizes[sizes.index(-1)] = shape[d] // known if known else 0
        if math.prod(sizes) != shape[d]:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(self.unflattened_size)} don't multiply up to "
                f"the size of dim {self.dim} ({shape[d]}) in the input tensor"
            )
        return ops.view(input, tuple(shape[:d] + sizes + shape[d + 1 :]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout(Module):
    """Zeroes elements with probability p while training (PyTorch's random mask)."""

    __ad_attrs__ = attrs("p", "inplace")

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return ops.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    """Zeroes whole channels with probability p while training (PyTorch's random mask)."""

    def forward(self, input: Tensor) -> Tensor:
        return ops.dropout2d(input, self.p, self.training, self.inplace)
