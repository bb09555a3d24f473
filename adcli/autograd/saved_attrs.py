"""The `grad_fn._saved_*` attributes PyTorch exposes on its nodes: the tensors and
arguments a node keeps for backward (`MulBackward0._saved_self`, `_saved_other`;
`ExpBackward0._saved_result`; `SumBackward0._saved_self_sym_sizes`; ...).

One table, grad_fn name -> {attribute: where adcli keeps the value}: an int is a
slot of the node's saved tensors (read through `saved_tensors`, so version-checked
and refused once a backward freed them, as PyTorch does); a string names an
attribute the node's forward set; a callable computes the value from the node.
`install()` turns each entry into a read-only property of the node classes and
lists the names in their `__ad_attrs__`, the only way scripts may read a name that
starts with an underscore (see adcli/lang/guard.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .node import Function
from .tensor import Tensor

Source = int | str | Callable[[Function], Any]


def _sizes(node: Function) -> tuple[int, ...]:
    return tuple(node.in_meta[0][0])


def _numel(node: Function) -> int:
    return math.prod(node.in_meta[0][0])


def _alpha(node: Function) -> Any:
    return getattr(node, "alpha", 1)


def _dims(node: Function) -> Any:
    dims = getattr(node, "dims", None)
    return tuple(dims) if isinstance(dims, (list, tuple)) else dims


_RESULT_ONLY = {"_saved_result": 0}
_SELF_ONLY = {"_saved_self": 0}

TABLE: dict[str, dict[str, Source]] = {
    "AddBackward0": {"_saved_alpha": _alpha},
    "SubBackward0": {"_saved_alpha": _alpha},
    "RsubBackward1": {"_saved_alpha": _alpha},
    "MulBackward0": {"_saved_other": 0, "_saved_self": 1},
    "DivBackward0": {"_saved_other": 1, "_saved_self": 0},
    "PowBackward0": {"_saved_exponent": "exponent", "_saved_self": 0},
    "PowBackward1": {"_saved_exponent": 1, "_saved_result": 2, "_saved_self": 0},
    "PowBackward2": {"_saved_exponent": 0, "_saved_result": 1, "_saved_self": "base"},
    "ExpBackward0": _RESULT_ONLY,
    "TanhBackward0": _RESULT_ONLY,
    "SigmoidBackward0": _RESULT_ONLY,
    "ReluBackward0": _RESULT_ONLY,
    "SqrtBackward0": _RESULT_ONLY,
    "ReciprocalBackward0": _RESULT_ONLY,
    "TanBackward0": _RESULT_ONLY,
    "RsqrtBackward0": _RESULT_ONLY,
    "LogBackward0": _SELF_ONLY,
    "Log1PBackward0": _SELF_ONLY,
    "SinBackward0": _SELF_ONLY,
    "CosBackward0": _SELF_ONLY,
    "AsinBackward0": _SELF_ONLY,
    "AcosBackward0": _SELF_ONLY,
    "AtanBackward0": _SELF_ONLY,
    "AbsBackward0": _SELF_ONLY,
    "MaximumBackward0": {"_saved_other": 1, "_saved_self": 0},
    "MinimumBackward0": {"_saved_other": 1, "_saved_self": 0},
    "SumBackward0": {"_saved_self_sym_sizes": _sizes},
    "SumBackward1": {"_saved_dim": _dims, "_saved_keepdim": "keepdim"}
    | {"_saved_self_sym_sizes": _sizes},
    "MeanBackward0": {"_saved_self_sym_numel": _numel, "_saved_self_sym_sizes": _sizes},
    "MeanBackward1": {
        "_saved_dim": _dims,
        "_saved_keepdim": "keepdim",
        "_saved_self_sym_numel": _numel,
        "_saved_self_sym_sizes": _sizes,
    },
    "MvBackward0": {"_saved_self": 1, "_saved_vec": 0},
    "DotBackward0": {"_saved_self": 1, "_saved_tensor": 0},
    "BmmBackward0": {"_saved_mat2": 0, "_saved_self": 1},
    "MaxBackward1": {"_saved_result": 1, "_saved_self": 0},
    "MinBackward1": {"_saved_result": 1, "_saved_self": 0},
    "ProdBackward0": {"_saved_result": 1, "_saved_self": 0},
    "ClampBackward1": {"_saved_max": "hi", "_saved_min": "lo", "_saved_self": 0},
    "LeakyReluBackward0": {"_saved_negative_slope": "slope", "_saved_self": 0},
    "PreluKernelBackward0": {"_saved_self": 0, "_saved_weight": 1},
    "PreluKernelBackwardBackward0": {"_saved_grad_output": 0, "_saved_self": 1, "_saved_weight": 2},
    "SoftplusBackward0": {"_saved_beta": "beta", "_saved_self": 0, "_saved_threshold": "threshold"},
    "SoftmaxBackward0": {"_saved_dim": "dim", "_saved_result": 0},
    "LogSoftmaxBackward0": {"_saved_dim": "dim", "_saved_result": 0},
    "ViewBackward0": {"_saved_self_sym_sizes": _sizes},
    "TransposeBackward0": {"_saved_dim0": "d0", "_saved_dim1": "d1"},
    "PermuteBackward0": {"_saved_dims": _dims},
    "UnsqueezeBackward0": {"_saved_dim": "dim"},
    "SqueezeBackward0": {"_saved_self_sym_sizes": _sizes},
    "ExpandBackward0": {"_saved_self_sym_sizes": _sizes},
    "CatBackward0": {"_saved_dim": "dim"},
    "StackBackward0": {"_saved_dim": "dim"},
    "CumsumBackward0": {"_saved_dim": "dim"},
}
# the tutorial ops of issue 12
TABLE.update(
    {
        "TrilBackward0": {"_saved_diagonal": "diagonal"},
        "TriuBackward0": {"_saved_diagonal": "diagonal"},
        "CumprodBackward0": {"_saved_dim": "dim", "_saved_result": 1, "_saved_self": 0},
        "RollBackward0": {"_saved_dims": _dims, "_saved_shifts": "shifts"},
        "Atan2Backward0": {"_saved_other": 1, "_saved_self": 0},
    }
)


def _getter(source: Source) -> Callable[[Function], Any]:
    if isinstance(source, int):
        return lambda node: _saved_value(node.saved_tensors[source])
    if isinstance(source, str):
        return lambda node: getattr(node, source)
    return source


def _saved_value(v: Any) -> Any:
    """A saved Python number reads as PyTorch's wrapped-number tensor (`tensor(3)`)."""
    if v is None or isinstance(v, Tensor):
        return v
    from . import ops

    return ops.tensor(v)


def install() -> None:
    """Give each node class of the table its `_saved_*` properties."""
    for cls in list(Function.registry.values()):
        names = TABLE.get(cls.__dict__.get("grad_fn_name", ""))
        if not names:
            continue
        for attr, source in names.items():
            setattr(cls, attr, property(_getter(source)))
        cls.__ad_attrs__ = frozenset(cls.__ad_attrs__ | set(names))


install()
