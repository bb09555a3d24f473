"""`--json`: reports and script values as JSON (SPEC §5).

Arrays become nested lists; NaN and infinities become the strings "nan",
"inf" and "-inf" (bare `NaN` is not JSON), and `dumps` refuses anything that
slipped through (`allow_nan=False`). float32 values are written with the
shortest digits that give the float32 back (`0.1`, not `0.10000000149011612`).

A large array is summarised, as the text summarises it, unless `--full`: an
object `{"summarized": true, "shape", "numel", "min", "max", "mean", "head",
"tail"}` (head and tail: the first and last `EDGE` values in row-major order).
Report arrays are summarised beyond `REPORT_LIMIT` elements (a loop reports
the same graph again and again), variables beyond `VARIABLE_LIMIT`.

The output's shape is written down as a JSON Schema in `schema.json` beside
this module (`schema()` reads it).
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

from .folding import FoldedRun
from .report import Block, Fold, Report, Row, legend_lines

#: Arrays larger than this are written with full float64 digits (shortening is per element).
_SHORTEN_LIMIT = 100_000
#: Report arrays (values, gradients) with more elements are summarised (PyTorch's
#: print threshold); `--full` writes them whole.
REPORT_LIMIT = 1000
#: Variables with more elements are summarised; `--full` writes them whole.
VARIABLE_LIMIT = 100_000
#: A summary keeps this many values from each end.
EDGE = 3
#: Nested lists deeper than this are cut (a list can contain itself in a script).
_MAX_DEPTH = 64
#: Items the lists inside one variable may write in all (the variable limit, this
#: with `--full`): lists that share items (`l = [l, l]` doubled 40 times) would
#: write 2**40 of them.
_MAX_ITEMS = 10_000_000


def _float(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def array_to_json(a: np.ndarray | None, limit: int | None = None) -> Any:
    """Nested lists of plain numbers (non-finite floats as strings); None stays None.

    With more than `limit` elements, a summary object instead (see the module doc).
    """
    if a is None:
        return None
    a = np.asarray(a)
    if limit is not None and a.size > limit:
        return summarize(a)
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


def summarize(a: np.ndarray) -> dict[str, Any]:
    """The summary of a large array: shape, size, min/max/mean and the values at each end."""
    flat = a.reshape(-1)
    numeric = flat.real if flat.dtype.kind == "c" else flat
    if numeric.dtype.kind not in "biuf":
        numeric = numeric.astype(np.float64)
    with np.errstate(all="ignore"):
        lo = numeric.min() if flat.size else None
        hi = numeric.max() if flat.size else None
        mean = float(numeric.mean(dtype=np.float64)) if flat.size else None
    return {
        "summarized": True,
        "shape": [int(s) for s in a.shape],
        "numel": int(a.size),
        "min": _scalar(lo),
        "max": _scalar(hi),
        "mean": _float(mean) if mean is not None else None,
        "head": array_to_json(flat[:EDGE]),
        "tail": array_to_json(flat[-EDGE:] if flat.size > EDGE else flat[:0]),
    }


def _scalar(v: Any) -> Any:
    """A NumPy scalar (or None) as plain JSON, with float32 written shortest."""
    if v is None:
        return None
    return array_to_json(np.asarray(v))


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


def _row_to_json(row: Row, limit: int | None) -> dict[str, Any]:
    return {
        "name": row.name,
        "expr": row.expr,
        "shape": list(row.shape),
        "dtype": row.dtype,
        "value": array_to_json(row.value, limit),
        "requires_grad": row.requires_grad,
        "is_leaf": row.is_leaf,
        "grad_fn": row.grad_fn,
        "flowed_grad": array_to_json(row.flowed_grad, limit),
        "grad": array_to_json(row.grad, limit),
        "grad_reason": row.grad_reason if row.grad is None else None,
    }


def _block_to_json(b: Block, limit: int | None) -> dict[str, Any]:
    if b.value is not None:
        value: Any = array_to_json(b.value, limit)
    elif b.error is not None:
        value = {"error": b.error}
    else:
        value = {
            "shape": list(b.shape),
            "norm": _float(b.norm) if b.norm is not None else None,
            "diagonal": array_to_json(b.diagonal, limit),
        }
    return {"u": b.u, "v": b.v, "value": value}


def report_to_json(report: Report, *, full: bool | None = None) -> dict[str, Any]:
    """One event of SPEC §5: kind, line, root, nodes (the rows shown), second_order,
    and what the text prints around the table: the call and its options, the
    folded stretches of a long graph, the legend lines and the notes.

    The nodes are the rows the table shows: a folded graph leaves the folded
    nodes out (`--full` keeps them all), and `folded_nodes` says where: `count`
    nodes left out before `nodes[at]`. Arrays beyond `REPORT_LIMIT` elements are
    summarised unless `full` (default: the report's own `full`, set by `--full`).
    `graph_as_above` marks the last report of a folded loop, whose graph the
    text does not draw again.
    """
    if full is None:
        full = report.full
    limit = None if full else REPORT_LIMIT
    nodes: list[dict[str, Any]] = []
    folded: list[dict[str, Any]] = []
    for r in report.rows:
        if isinstance(r, Fold):
            folded.append({"at": len(nodes), "count": r.count, "similar": r.similar})
        else:
            nodes.append(_row_to_json(r, limit))
    so = report.second_order
    return {
        "kind": report.kind,
        "line": report.line,
        "root": report.root,
        "call": report.call,
        "options": list(report.options),
        "nodes": nodes,
        "folded_nodes": folded,
        "second_order": [_block_to_json(b, limit) for b in so.blocks] if so is not None else [],
        "legend": legend_lines(report),
        "notes": list(report.notes),
        "graph_as_above": report.graph_shown,
    }


def fold_to_json(run: FoldedRun) -> dict[str, Any]:
    """A fold event: the reports of steps `steps[0]..steps[1]` of one call, not written
    (`--all-reports` writes every report, `--report-every N` every Nth)."""
    return {
        "kind": "fold",
        "line": run.line,
        "root": run.root,
        "steps": [run.first_step, run.last_step],
        "same_graph": run.same_graph,
        "first_value": _float(run.first_value) if run.first_value is not None else None,
        "last_value": _float(run.last_value) if run.last_value is not None else None,
        "next_in_full": run.next_in_full,
        "text": run.text,
    }


def warning_to_json(
    message: str, line: int, code: str, notes: list[str] | None = None
) -> dict[str, Any]:
    """One of PyTorch's UserWarnings, as the text prints it to stderr: the message,
    the script line and its text, and the `note:` lines under it."""
    return {
        "category": "UserWarning",
        "message": message,
        "line": line or None,
        "source": code or None,
        "notes": list(notes or []),
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of `adcli run --json` output (the package's `schema.json`)."""
    from importlib.resources import files

    return json.loads(files("adcli.render").joinpath("schema.json").read_text("utf-8"))


def tensor_to_json(t: Tensor, limit: int | None = VARIABLE_LIMIT) -> dict[str, Any]:
    """A tensor variable: type, shape, dtype, value, requires_grad, is_leaf, grad_fn, grad
    (values and grad summarised beyond `limit` elements; None: never)."""
    g = t._grad
    node = t._node_read()
    return {
        "type": "tensor",
        "shape": [int(s) for s in t.data_.shape],
        "dtype": t.dtype.name,
        "value": array_to_json(t.data_, limit),
        "requires_grad": t.requires_grad,
        "is_leaf": node is None,
        "grad_fn": node.grad_fn_name if node is not None else None,
        "grad": array_to_json(g.data_, limit) if g is not None else None,
    }


def value_to_json(
    v: Any, _depth: int = 0, *, limit: int | None = VARIABLE_LIMIT, _left: list[int] | None = None
) -> Any:
    """A script variable as SPEC §5 writes it.

    Tensors as objects, numbers/strings/bools/None plain, lists and tuples as
    arrays, anything else as `{"type": "<kind>"}` (function, optimizer, dtype,
    module, grad_fn, hook_handle, ...). Arrays beyond `limit` elements are
    summarised (None: never, for `--full`).
    """
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        # beyond Python's digit limit an int has no decimal text: JSON cannot hold it
        return v if v.bit_length() < _BIG_BITS or _has_decimal(v) else {"type": "int"}
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, Tensor):
        return tensor_to_json(v, limit)
    if isinstance(v, np.generic):
        return value_to_json(v.item(), _depth, limit=limit)
    if isinstance(v, np.ndarray):
        return array_to_json(v, limit)
    if isinstance(v, (list, tuple)):
        if _left is None:  # nested items this variable may still write (tests/fuzz/robust.py)
            _left = [min(limit, _MAX_ITEMS) if limit is not None else _MAX_ITEMS]
        elif _depth:
            _left[0] -= len(v)
        if _depth >= _MAX_DEPTH or _left[0] < 0:
            return {"type": "list" if isinstance(v, list) else "tuple"}
        return [value_to_json(x, _depth + 1, limit=limit, _left=_left) for x in v]
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


class JsonCollector:
    """The events of one `--json` run, folded as the text folds them.

    `event` takes each backward/grad report (and its root's value, for the fold
    events), `show` each `show()` report; `finish` closes the runs of folded
    reports when the script ends.
    """

    def __init__(self, *, fold: bool = True, every: int | None = None, full: bool = False) -> None:
        from .folding import ReportFolder

        self.full = full
        self.events: list[dict[str, Any]] = []
        self._folder = ReportFolder(
            self.show,
            lambda text: None,
            fold=fold,
            every=every,
            runs=lambda run: self.events.append(fold_to_json(run)),
        )

    def event(self, report: Report, value: float | None = None) -> None:
        """A backward()/grad() report: written, or folded into a run of repeats."""
        self._folder.add(report, value)

    def show(self, report: Report) -> None:
        """A report written as it is."""
        self.events.append(report_to_json(report, full=self.full))

    def finish(self) -> None:
        """The script ended: write the last report of every folded call."""
        self._folder.finish()
