"""`--json`: reports and script values as JSON (SPEC §5).

Arrays become nested lists; NaN and infinities become the strings "nan",
"inf" and "-inf" (bare `NaN` is not JSON), and `dumps` refuses anything that
slipped through (`allow_nan=False`). float32 values are written with the
shortest digits that give the float32 back (`0.1`, not `0.10000000149011612`).
"""

from __future__ import annotations

import json
import math
import types
from typing import Any

import numpy as np

from adcli.autograd.dtypes import DType
from adcli.autograd.node import Node, RemovableHandle
from adcli.autograd.tensor import Tensor

from .report import Block, Report, Row

#: Arrays larger than this are written with full float64 digits (shortening is per element).
_SHORTEN_LIMIT = 100_000
#: Nested lists deeper than this are cut (a list can contain itself in a script).
_MAX_DEPTH = 64


def _float(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def array_to_json(a: np.ndarray | None) -> Any:
    """Nested lists of plain numbers (non-finite floats as strings); None stays None."""
    if a is None:
        return None
    a = np.asarray(a)
    kind = a.dtype.kind
    if kind == "b" or kind in "iu":
        return a.tolist()
    if kind != "f":
        return a.astype(np.float64).tolist()
    if a.dtype.itemsize < 8 and a.size <= _SHORTEN_LIMIT:
        # shortest text that reads back as the same float32/float16 value
        flat = [float(np.format_float_positional(v, unique=True, trim="0")) for v in a.ravel()]
        values: Any = np.array(flat, dtype=object).reshape(a.shape).tolist() if a.ndim else flat[0]
        if not np.isfinite(a).all():
            values = _map_floats(values)
        return values
    values = a.tolist()
    if not np.isfinite(a).all():
        values = _map_floats(values)
    return values


def _map_floats(v: Any) -> Any:
    """Replace non-finite floats in nested lists (iteratively: no recursion limit)."""
    if isinstance(v, float):
        return _float(v)
    if not isinstance(v, list):
        return v
    stack = [v]
    while stack:
        lst = stack.pop()
        for i, x in enumerate(lst):
            if isinstance(x, float):
                lst[i] = _float(x)
            elif isinstance(x, list):
                stack.append(x)
    return v


def _row_to_json(row: Row) -> dict[str, Any]:
    return {
        "name": row.name,
        "expr": row.expr,
        "shape": list(row.shape),
        "dtype": row.dtype,
        "value": array_to_json(row.value),
        "requires_grad": row.requires_grad,
        "is_leaf": row.is_leaf,
        "grad_fn": row.grad_fn,
        "flowed_grad": array_to_json(row.flowed_grad),
        "grad": array_to_json(row.grad),
    }


def _block_to_json(b: Block) -> dict[str, Any]:
    if b.value is not None:
        value: Any = array_to_json(b.value)
    elif b.error is not None:
        value = {"error": b.error}
    else:
        value = {
            "shape": list(b.shape),
            "norm": _float(b.norm) if b.norm is not None else None,
            "diagonal": array_to_json(b.diagonal),
        }
    return {"u": b.u, "v": b.v, "value": value}


def report_to_json(report: Report) -> dict[str, Any]:
    """One event of SPEC §5: kind, line, root, nodes (the rows shown), second_order.

    The nodes are the rows the table shows: a folded graph leaves the folded
    nodes out (`--full` keeps them all).
    """
    so = report.second_order
    return {
        "kind": report.kind,
        "line": report.line,
        "root": report.root,
        "nodes": [_row_to_json(r) for r in report.shown_rows],
        "second_order": [_block_to_json(b) for b in so.blocks] if so is not None else [],
    }


def tensor_to_json(t: Tensor) -> dict[str, Any]:
    """A tensor variable: type, shape, dtype, value, requires_grad, is_leaf, grad_fn, grad."""
    g = t._grad
    return {
        "type": "tensor",
        "shape": [int(s) for s in t.data_.shape],
        "dtype": t.dtype.name,
        "value": array_to_json(t.data_),
        "requires_grad": t.requires_grad,
        "is_leaf": t._node is None,
        "grad_fn": t._node.grad_fn_name if t._node is not None else None,
        "grad": array_to_json(g.data_) if g is not None else None,
    }


def value_to_json(v: Any, _depth: int = 0) -> Any:
    """A script variable as SPEC §5 writes it.

    Tensors as objects, numbers/strings/bools/None plain, lists and tuples as
    arrays, anything else as `{"type": "<kind>"}` (function, optimizer, dtype,
    module, grad_fn, hook_handle, ...).
    """
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        # beyond Python's digit limit an int has no decimal text: JSON cannot hold it
        return v if v.bit_length() < _BIG_BITS or _has_decimal(v) else {"type": "int"}
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, Tensor):
        return tensor_to_json(v)
    if isinstance(v, np.generic):
        return value_to_json(v.item(), _depth)
    if isinstance(v, np.ndarray):
        return array_to_json(v)
    if isinstance(v, (list, tuple)):
        if _depth >= _MAX_DEPTH:
            return {"type": "list" if isinstance(v, list) else "tuple"}
        return [value_to_json(x, _depth + 1) for x in v]
    return {"type": kind_of(v)}


_BIG_BITS = 14_000  # below 4,215 decimal digits: always under Python's default limit


def _has_decimal(v: int) -> bool:
    """Can `v` be written in decimal (Python's int digit limit, sys.int_info)?"""
    try:
        str(v)
    except ValueError:
        return False
    return True


def kind_of(v: Any) -> str:
    """The `type` word for a value that JSON cannot hold."""
    if isinstance(v, DType):
        return "dtype"
    if isinstance(v, Node):
        return "grad_fn"
    if isinstance(v, RemovableHandle):
        return "hook_handle"
    if isinstance(v, types.ModuleType):
        return "module"
    if isinstance(v, dict):
        return "dict"
    name = type(v).__name__
    if hasattr(v, "step") and hasattr(v, "zero_grad"):
        return "optimizer"
    explicit = getattr(type(v), "__ad_kind__", None)  # an instance's kind, not a class's
    if isinstance(explicit, str):
        return explicit
    if "namespace" in name.lower() or "module" in name.lower():
        return "module"
    if callable(v):
        return "function"
    return name.lower()


def _sanitize(obj: Any) -> Any:
    """Make `obj` JSON-safe: non-finite floats as strings, NumPy values as Python ones."""
    root: list[Any] = [obj]
    stack: list[tuple[Any, Any, int]] = [(root, 0, 0)]
    while stack:
        container, key, depth = stack.pop()
        v = container[key]
        if depth > _MAX_DEPTH and isinstance(v, (dict, list, tuple)):
            container[key] = None  # too deep (or a list that contains itself)
        elif isinstance(v, float):
            container[key] = _float(v)
        elif isinstance(v, np.generic):
            item = v.item()
            container[key] = _float(item) if isinstance(item, float) else item
        elif isinstance(v, np.ndarray):
            container[key] = array_to_json(v)
        elif isinstance(v, dict):
            v = dict(v)
            container[key] = v
            stack.extend((v, k, depth + 1) for k in v)
        elif isinstance(v, (list, tuple)):
            v = list(v)
            container[key] = v
            stack.extend((v, i, depth + 1) for i in range(len(v)))
    return root[0]


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """JSON text of `obj`, with NaN/inf as "nan"/"inf"/"-inf" (never bare NaN)."""
    return json.dumps(_sanitize(obj), allow_nan=False, ensure_ascii=False, indent=indent)
