"""The names PyTorch's profiler gives what adcli runs: for each Function row, the
tree of ranges PyTorch records for that op (`aten::sum(aten::as_strided,aten::fill_)`),
in a small notation read here; and the trees of the factories, mse_loss's reductions,
keepdim reductions and in-place kernels. Measured on PyTorch 2.13's CPU build."""

from __future__ import annotations

import re
from typing import Any

# Function rows whose PyTorch op is not `aten::` + the snake-case stem of the grad_fn
# name, or inside which PyTorch records more ops of its own: a tree in a small notation,
# `outer(child,child(grandchild))`. The row's work is timed in the outermost range; the
# inner ranges are PyTorch's bookkeeping, recorded (empty) so the rows and counts match.
AS_STRIDED = "aten::as_strided"
TO = "aten::to(aten::_to_copy(aten::empty_strided,aten::copy_))"
_SPECS: dict[str, str] = {
    "Log1PBackward0": "aten::log1p",
    "ToCopyBackward0": TO,
    "UnsafeViewBackward0": "aten::_unsafe_view",
    "ReshapeAliasBackward0": "aten::view",
    "SoftmaxBackward0": "aten::softmax(aten::_softmax)",
    "LogSoftmaxBackward0": "aten::log_softmax(aten::_log_softmax)",
    "SoftmaxBackwardDataBackward0": "aten::_softmax_backward_data",
    "LogSoftmaxBackwardDataBackward0": "aten::_log_softmax_backward_data",
    "PreluKernelBackward0": "aten::prelu(aten::_prelu_kernel)",
    "PreluKernelBackwardBackward0": "aten::_prelu_kernel_backward",
    "TrilinearBackward0": "aten::_trilinear",
    "IndexPutImplBackward0": "aten::_index_put_impl_",
    "IndexPutBackward0": "aten::index_put_",
    "CopyBackwards": "aten::copy_",
    "CopySlices": "aten::copy_",
    "ZeroBackward0": "aten::zero_",
    "FillBackward2": "aten::fill_",
    "FillBackward3": "aten::fill_",
    "NllLossBackward0": "aten::nll_loss(aten::nll_loss_forward)",
    "NllLossBackwardBackward0": "aten::nll_loss_backward(aten::zero_)",
    "NotImplemented": "aten::floor_divide",
    "Identity": "aten::alias",
    "NormalBackward1": "aten::normal",
    "NormalBackward2": "aten::normal",
    "NormalBackward3": "aten::normal",
    # (measured on PyTorch 2.13's CPU build)
    "SumBackward0": f"aten::sum({AS_STRIDED},aten::fill_)",
    "SumBackward1": f"aten::sum({AS_STRIDED},aten::fill_)",
    "MeanBackward0": f"aten::mean(aten::sum({AS_STRIDED},aten::fill_),aten::div_({TO}))",
    "MaxBackward1": "aten::max(aten::empty,aten::fill_)",
    "MinBackward1": "aten::min(aten::empty,aten::fill_)",
    "TBackward0": f"aten::t(aten::transpose({AS_STRIDED}))",
    "TransposeBackward0": f"aten::transpose({AS_STRIDED})",
    "ExpandBackward0": f"aten::expand({AS_STRIDED})",
    "SelectBackward0": f"aten::select({AS_STRIDED})",
    "SliceBackward0": f"aten::slice({AS_STRIDED})",
    "ReluBackward0": "aten::relu(aten::clamp_min)",
    "CloneBackward0": "aten::clone(aten::empty_strided,aten::copy_)",
    "PowBackward0": "aten::pow(aten::result_type,aten::to)",
    "MeanBackward1": f"aten::mean(aten::sum({AS_STRIDED},aten::fill_),aten::div_({TO}))",
    "AbsBackward0": "aten::abs(aten::empty,aten::abs)",
    "AmaxBackward0": f"aten::amax({AS_STRIDED},aten::fill_)",
    "AminBackward0": f"aten::amin({AS_STRIDED},aten::fill_)",
    "ProdBackward0": f"aten::prod(aten::empty,{AS_STRIDED},aten::fill_)",
    "PermuteBackward0": f"aten::permute({AS_STRIDED})",
    "UnsqueezeBackward0": f"aten::unsqueeze({AS_STRIDED})",
    "SqueezeBackward0": f"aten::squeeze({AS_STRIDED})",
    "SqueezeBackward1": f"aten::squeeze({AS_STRIDED})",
    "SqueezeBackward2": f"aten::squeeze({AS_STRIDED})",
    "ClampBackward1": "aten::clamp(aten::to)",
    "CumsumBackward0": "aten::cumsum(aten::to)",
    "CumprodBackward0": "aten::cumprod(aten::to)",
    "FlipBackward0": f"aten::flip(aten::empty_like(aten::empty_strided),{AS_STRIDED})",
    "StackBackward0": "aten::stack(aten::cat,aten::view)",
    "RsubBackward1": f"aten::rsub(aten::sub({TO}))",
    "MvBackward0": "aten::mv(aten::empty,aten::addmv_)",
    "DotBackward0": "aten::dot(aten::empty,aten::fill_)",
    "BmmBackward0": "aten::bmm(aten::resolve_conj,aten::resolve_conj)",
    "WhereBackward0": "aten::where(aten::empty)",
    "MaskedFillBackward0": (
        "aten::masked_fill(aten::clone(aten::empty_like(aten::empty),aten::copy_),"
        "aten::masked_fill_)"
    ),
    "GatherBackward0": "aten::gather(aten::to)",
    "HardtanhBackward0": (
        "aten::hardtanh(aten::empty_like(aten::empty_strided),aten::hardtanh(aten::clamp(aten::to)))"
    ),
    "MseLossBackwardBackward0": (
        "aten::mse_loss_backward(aten::zeros_like(aten::empty_like(aten::empty),aten::zero_),"
        "aten::mse_loss_backward)"
    ),
    "SelectBackwardBackward0": (
        f"aten::select_backward(aten::zeros(aten::empty,aten::zero_),"
        f"aten::select({AS_STRIDED}),aten::copy_)"
    ),
    "SliceBackwardBackward0": (
        f"aten::slice_backward(aten::zeros(aten::empty,aten::zero_),"
        f"aten::slice({AS_STRIDED}),aten::copy_)"
    ),
    "DivBackward1": f"aten::div({TO})",  # (a C++ number divisor: mean's backward)
    "MmBackward0": "aten::mm(aten::resolve_conj,aten::resolve_conj)",
    "AddmmBackward0": (
        f"aten::addmm(aten::expand({AS_STRIDED}),aten::copy_,aten::resolve_conj,aten::resolve_conj)"
    ),
    "LinalgVectorNormBackward0": f"aten::linalg_vector_norm({AS_STRIDED})",
}
# Reductions with keepdim=True (PyTorch squeezes no result, so records no as_strided)
KEEPDIM_SPECS = {
    "SumBackward1": "aten::sum(aten::fill_)",
    "MeanBackward1": f"aten::mean(aten::sum(aten::fill_),aten::div_({TO}))",
}
# In place, where PyTorch's inner kernel is in place too
INPLACE_SPECS = {"ReluBackward0": "aten::relu_(aten::clamp_min_)"}
_STEM = re.compile(r"Backward\d*$")
_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# A parsed spec: (name, children), each child the same.
Spec = tuple[str, tuple[Any, ...]]
_cache: dict[type, Spec] = {}


def parse_spec(text: str) -> Spec:
    """`a(b,c(d))` as ("a", (("b", ()), ("c", (("d", ()),)))), read without recursion."""
    return parse_roots(text)[0]


def parse_roots(text: str) -> tuple[Spec, ...]:
    """Every tree of `a(b),c`, in order."""
    root: list[Any] = ["", []]
    stack = [root]
    name = ""
    for ch in text + ",":
        if ch in "(),":
            if name:
                stack[-1][1].append([name, []])
                name = ""
            if ch == "(":
                stack.append(stack[-1][1][-1])
            elif ch == ")":
                stack.pop()
        else:
            name += ch
    # freeze the lists into tuples, innermost first
    order: list[list[Any]] = []
    todo = [root]
    while todo:
        n = todo.pop()
        order.append(n)
        todo.extend(n[1])
    for n in reversed(order):
        n[1] = tuple((c[0], c[1]) for c in n[1])
    return tuple(root[1])


def op_spec(cls: type) -> Spec:
    """The ranges PyTorch records for one application of Function row `cls`: `aten::`
    and the snake-case stem of its grad_fn name (MseLossBackward0 -> aten::mse_loss,
    TanhBackwardBackward0 -> aten::tanh_backward), or `_SPECS`' tree."""
    spec = _cache.get(cls)
    if spec is None:
        gname = getattr(cls, "grad_fn_name", cls.__name__)
        text = _SPECS.get(gname)
        if text is None:
            stem = _STEM.sub("", gname) or gname
            text = "aten::" + _WORD.sub("_", stem).lower()
        spec = _cache[cls] = parse_spec(text)
    return spec


def aten_name(cls: type) -> str:
    """The name PyTorch's profiler gives an application of Function row `cls`."""
    return op_spec(cls)[0]


# mse_loss's ranges by reduction (its Function row does not know which it is given)
MSE_SPECS = {
    "mean": (
        f"aten::mse_loss(aten::resize_,aten::empty,aten::mean(aten::sum({AS_STRIDED},"
        f"aten::fill_),aten::div_({TO})))"
    ),
    "sum": f"aten::mse_loss(aten::resize_,aten::empty,aten::sum({AS_STRIDED},aten::fill_))",
}


# What PyTorch records for the factories a script calls (torch.tensor: four ranges
# side by side, no outer one).
FACTORY_SPECS = {
    "zeros": "aten::zeros(aten::empty,aten::zero_)",
    "ones": "aten::ones(aten::empty,aten::fill_)",
    "randn": "aten::randn(aten::empty,aten::normal_)",
    "rand": "aten::rand(aten::empty,aten::uniform_)",
    "empty": "aten::empty",
    "full": "aten::full(aten::empty,aten::fill_)",
    "arange": "aten::arange(aten::empty,aten::arange(aten::resize_))",
    "linspace": "aten::linspace(aten::empty,aten::linspace)",
    "eye": "aten::eye(aten::empty,aten::eye(aten::resize_,aten::zero_))",
    "zeros_like": "aten::zeros_like(aten::empty_like(aten::empty_strided),aten::zero_)",
    "ones_like": "aten::ones_like(aten::empty_like(aten::empty_strided),aten::fill_)",
    "rand_like": "aten::rand_like(aten::empty_like(aten::empty_strided),aten::uniform_)",
    "randn_like": "aten::randn_like(aten::empty_like(aten::empty_strided),aten::normal_)",
    "tensor": "aten::empty,aten::to,aten::lift_fresh,aten::detach_(detach_)",
}


_text_roots: dict[str, tuple[Spec, ...]] = {}


def roots_of_text(text: str) -> tuple[Spec, ...]:
    roots = _text_roots.get(text)
    if roots is None:
        roots = _text_roots[text] = parse_roots(text)
    return roots


_text_specs: dict[str, Spec] = {}


def spec_of_text(text: str) -> Spec:
    spec = _text_specs.get(text)
    if spec is None:
        spec = _text_specs[text] = parse_spec(text)
    return spec
