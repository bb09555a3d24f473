"""The report of one backward pass, as plain data (no rich here).

`build_report(event, ...)` turns the engine's `BackwardEvent` into a `Report`:
a header (the call, its line and options), one `Row` per node the pass went
through in topological order from the leaves to the root (long runs of similar
nodes folded), the notes learners need (a tensor that stopped being a leaf,
saved values freed, gradients summed over broadcast dimensions, hooks that
changed a gradient) and, with `create_graph=True`, the second derivatives.
`render.tables` draws it with rich and `render.jsonout` writes it as JSON.

Everything here walks the graph with loops, never recursion, so a chain of
100,000 nodes reports as quickly as a short one: only the rows that are shown
are fully built.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcli.autograd import engine
from adcli.autograd.custom import user_backward_name
from adcli.autograd.engine import BackwardEvent, TraceEntry
from adcli.autograd.node import AccumulateGrad, Node
from adcli.autograd.printing import PrintOptions, format_tensor
from adcli.autograd.tensor import Tensor
from adcli.provenance import Label, label_of

#: More rows than this and the table is folded (unless `full=True`).
FOLD_LIMIT = 40
#: When folding still leaves too many rows: this many from each end are shown.
FOLD_EDGE = 10
#: A run of similar nodes keeps this many periods at each end.
RUN_KEEP = 2
#: Repeating patterns of up to this many nodes are recognised as "similar".
MAX_PERIOD = 4
#: A second-derivative block with at most this many entries is shown whole.
BLOCK_LIMIT = 64
#: Second derivatives are computed for gradients with at most this many elements.
SECOND_ORDER_MAX_NUMEL = 256
#: At most this many notes of one kind; the rest are counted.
NOTES_PER_KIND = 5

NONLEAF_REASON = "non-leaf; call .retain_grad() to keep it"
GRAD_CALL_REASON = "autograd.grad() does not fill .grad"
NOT_INPUT_REASON = "not in inputs=, so not accumulated"
NO_GRAD_REASON = "does not require grad"

_CELL = PrintOptions(threshold=6, edgeitems=2, linewidth=60)
_CELL_FULL = PrintOptions(threshold=math.inf, linewidth=60)
_SUFFIX = re.compile(r",\s*(?:size=\([^)]*\)|dtype=torch\.\w+|requires_grad=True|grad_fn=<\w+>)$")
_MADE_AS_LEAF = re.compile(r"requires_grad\s*=\s*True|\.requires_grad_\(\s*(?:True)?\s*\)")


# --------------------------------------------------------------------------- data


@dataclass
class Row:
    """One node of the pass: the tensor it produced and the gradients around it."""

    name: str
    expr: str | None
    line: int | None
    shape: list[int]
    dtype: str
    value: np.ndarray | None
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    flowed_grad: np.ndarray | None
    grad: np.ndarray | None
    grad_reason: str | None = None
    hook_changed: bool = False
    released: bool = False
    # --symbolic (filled by adcli.symbolic): the node's formula, the formula of the
    # gradient that flowed into it, its grad_fn's local rule; the node itself
    formula: str | None = None
    grad_formula: str | None = None
    rule: str | None = None
    node: Any = field(default=None, repr=False, compare=False)
    output_nr: int = 0
    # a custom autograd.Function's node: the script's method that computes its gradient
    user_backward: str | None = None

    @property
    def kind(self) -> str:
        """`"leaf"` or `"op"` (how renderers style the row)."""
        return "leaf" if self.is_leaf else "op"


@dataclass
class Fold:
    """Rows left out of a long table: `… 996 similar nodes`."""

    count: int
    similar: bool = True

    @property
    def text(self) -> str:
        """The text of the folded row."""
        what = "similar nodes" if self.similar else "more nodes"
        if self.count == 1:
            what = "similar node" if self.similar else "more node"
        return f"… {self.count} {what}"


@dataclass
class Block:
    """∂²root/∂u∂v for one pair of tensors: whole, or summarised when large."""

    u: str
    v: str
    shape: list[int]
    value: np.ndarray | None = None  # the block when it has <= BLOCK_LIMIT entries
    norm: float | None = None  # Frobenius norm (large blocks)
    diagonal: np.ndarray | None = None  # ∂²root/∂u_i∂v_i when u and v have one shape
    error: str | None = None
    dtype: str = "float32"
    formula: str | None = None  # --symbolic: the block's formula (adcli.symbolic)


@dataclass
class FirstOrder:
    """A first-order gradient as a graph-carrying tensor (what the 2nd table differentiates)."""

    name: str
    grad_fn: str | None


@dataclass
class SecondOrder:
    """The second table: ∂²root/∂u∂v for each pair of leaves."""

    root: str
    first_order: list[FirstOrder] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Report:
    """Everything a renderer needs about one backward()/grad()/show() call."""

    kind: str  # "backward" | "grad" | "show"
    call: str
    line: int | None
    options: list[str]
    root: str
    rows: list[Row | Fold]
    node_count: int
    notes: list[str] = field(default_factory=list)
    second_order: SecondOrder | None = None
    full: bool = False
    symbolic: bool = False  # --symbolic: rows carry formulas (render a formula table)
    # a repeat of a report already printed in full (adcli.render.folding): only
    # the values table, and the notes that report did not have
    graph_shown: bool = False

    @property
    def shown_rows(self) -> list[Row]:
        """The rows that are shown (fold markers left out)."""
        return [r for r in self.rows if isinstance(r, Row)]


def legend_lines(report: Report) -> list[str]:
    """The legend under the node table, one line per mark to explain: for now one
    per kind of `None (reason)` in the .grad column, with the whole reason.

    The text (`render.tables`) and `--json` (`render.jsonout`) both print these,
    so a new kind of legend line goes here to reach both."""
    reasons: dict[str, None] = {}
    for row in report.shown_rows:
        if row.grad is None and row.grad_reason:
            reasons[row.grad_reason] = None
    return [f".grad None: {reason}" for reason in reasons] + _mark_lines(report)


# ------------------------------------------------------------------ formatting


def format_value(a: np.ndarray | None, dtype: str, *, full: bool = False) -> str:
    """PyTorch's text for the values, without the `tensor(`…`)` wrapper.

    More than 6 elements are summarised as PyTorch does (first and last two
    entries of each long axis around `...`) unless `full`.
    """
    if a is None:
        return "None"
    try:
        text = format_tensor(a, dtype, options=_CELL_FULL if full else _CELL)
    except ValueError:
        return str(a.tolist())
    body = text[len("tensor(") : -1]
    while True:
        stripped = _SUFFIX.sub("", body)
        if stripped == body:
            break
        body = stripped
    lines = body.split("\n")
    pad = " " * len("tensor(")
    return "\n".join(
        [lines[0]] + [ln[len(pad) :] if ln.startswith(pad) else ln for ln in lines[1:]]
    )


def inline_value(a: np.ndarray | None, dtype: str) -> str:
    """`format_value` on one line (for headers and notes)."""
    return re.sub(r"\s*\n\s*", " ", format_value(a, dtype))


def format_shape(shape: Any) -> str:
    """`[4, 3]` (a scalar is `[]`)."""
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


# ------------------------------------------------------------------ the graph


@dataclass(slots=True)
class _Item:
    """A row before it is built: cheap to make for every node of a long graph."""

    node: Node | None
    index: int
    entry: TraceEntry | None
    tensor: Tensor | None
    label: Label | None
    name: str = ""
    first: bool = True  # the first row of its node (multi-output nodes have several)
    meta: Any = None  # (shape, dtype) recorded by a user of the output, when it is gone
    key: Any = None  # what makes rows "similar" when folding: grad_fn, shape, dtype


def _tensor_of(node: Node, index: int) -> Tensor | None:
    if isinstance(node, AccumulateGrad):
        return node.variable
    t = node.output_tensor(index)
    if t is None or t._node is not node:
        return None  # gone, or changed in place since (it now belongs to a later node)
    return t


def _order(entries: list[TraceEntry]) -> list[tuple[Node, TraceEntry]]:
    """Leaves first (by line, else in order of first use), then operations in creation order.

    Creation order is a topological order from the leaves to the root: every
    node is created after the nodes of its inputs.
    """
    op_entries = [e for e in entries if not isinstance(e.node, AccumulateGrad)]
    op_entries.sort(key=lambda e: e.node.seq)
    leaf_entries = {e.node: e for e in entries if isinstance(e.node, AccumulateGrad)}
    leaves: list[tuple[Node, TraceEntry]] = []
    seen: set[Node] = set()
    for e in op_entries:
        for nxt, _ in e.node.next_functions:
            if nxt is not None and nxt not in seen and nxt in leaf_entries:
                seen.add(nxt)
                leaves.append((nxt, leaf_entries[nxt]))
    for e in reversed(entries):
        if e.node in leaf_entries and e.node not in seen:
            seen.add(e.node)
            leaves.append((e.node, e))
    leaves = [leaf for _, leaf in sorted(enumerate(leaves), key=_leaf_key)]
    return leaves + [(e.node, e) for e in op_entries]


def _leaf_key(item: tuple[int, tuple[Node, TraceEntry]]) -> tuple[float, int]:
    """Leaves in the order the script made them (their line), else of first use."""
    first_use, (node, _) = item
    var = node.variable  # type: ignore[attr-defined]
    lab = label_of(var) if var is not None else None
    line = lab.line if lab is not None and lab.line else math.inf
    return (line, first_use)


def _items(entries: list[TraceEntry], first: list[_Item] | None = None) -> list[_Item]:
    items: list[_Item] = list(first or ())
    missing = False
    for node, entry in _order(entries):
        indices: Any = (0,)
        if node.multi_output:
            indices = [i for i, g in enumerate(entry.grads) if g is not None] or (0,)
        is_leaf = isinstance(node, AccumulateGrad)
        kind = "leaf" if is_leaf else node.grad_fn_name
        grads = entry.grads
        for k, i in enumerate(indices):
            t = _tensor_of(node, i)
            lab = label_of(t) if t is not None else None
            if lab is None and i == 0:
                lab = label_of(node)  # a label kept on the node outlives the tensor
            it = _Item(node, i, entry, t, lab, "", k == 0)
            if t is not None:
                it.key = (kind, t.data_.shape, t.data_.dtype)
            else:
                g = grads[i] if i < len(grads) else None
                if g is not None:
                    it.key = (kind, g.data_.shape, g.data_.dtype)
                else:
                    missing = True
            items.append(it)
    _name_items(items)
    if missing:
        _fill_metas(items)
    for it in items:
        if it.key is None:
            shape, dtype = _shape_dtype(it)
            kind = "leaf" if it.node is None or isinstance(it.node, AccumulateGrad) else None
            it.key = (kind or it.node.grad_fn_name, shape, dtype)
    return items


def _fill_metas(items: list[_Item]) -> None:
    """Shape and dtype of outputs no longer alive, from what their users recorded."""
    metas: dict[tuple[int, int], Any] = {}
    for it in items:
        node = it.node
        if node is None or not it.first:
            continue
        for (nxt, nr), meta in zip(node.next_functions, getattr(node, "in_meta", ()), strict=False):
            if nxt is not None and meta is not None:
                metas.setdefault((id(nxt), nr), meta)
    for it in items:
        if it.tensor is None and it.node is not None:
            it.meta = metas.get((id(it.node), it.index))


def _name_items(items: list[_Item]) -> None:
    counters: dict[str, int] = {}
    for it in items:
        lab = it.label
        if lab is not None and lab.name:
            it.name = lab.name
        elif lab is not None and lab.expr:
            it.name = lab.expr
        else:
            base = "leaf" if it.node is None or isinstance(it.node, AccumulateGrad) else None
            base = base or it.node.grad_fn_name
            n = counters[base] = counters.get(base, 0) + 1
            it.name = f"{base}#{n}"


def _shape_dtype(it: _Item) -> tuple[tuple[int, ...], str]:
    if it.tensor is not None:
        return tuple(it.tensor.data_.shape), it.tensor.dtype.name
    if it.entry is not None and it.index < len(it.entry.grads):
        g = it.entry.grads[it.index]
        if g is not None:
            return tuple(g.data_.shape), g.dtype.name
    if it.meta is not None:
        return tuple(it.meta[0]), it.meta[1].name
    return (), "float32"


# ------------------------------------------------------------------ folding


def fold_plan(keys: list[Any], *, limit: int = FOLD_LIMIT) -> list[int | tuple[int, int, bool]]:
    """Which rows to show: indices, and `(start, count, similar)` for folded stretches.

    Runs of repeating keys (period 1 to MAX_PERIOD) keep RUN_KEEP periods at each
    end; if that still leaves more than `limit` units, the first and last
    FOLD_EDGE units stay and the middle is folded as well.
    """
    n = len(keys)
    if n <= limit:
        return list(range(n))
    units: list[int | tuple[int, int, bool]] = []
    i = 0
    while i < n:
        best_fold, best_p, best_len = 0, 1, 1
        for p in range(1, MAX_PERIOD + 1):
            j = i + p
            while j < n and keys[j] == keys[j - p]:
                j += 1
            folded = (j - i) - 2 * RUN_KEEP * p
            if folded > best_fold:
                best_fold, best_p, best_len = folded, p, j - i
        if best_fold >= 2:
            keep = RUN_KEEP * best_p
            units.extend(range(i, i + keep))
            units.append((i + keep, best_fold, True))
            units.extend(range(i + best_len - keep, i + best_len))
            i += best_len
        else:
            units.append(i)
            i += 1
    if len(units) <= limit:
        return units
    head, tail = units[:FOLD_EDGE], units[-FOLD_EDGE:]
    middle = units[FOLD_EDGE:-FOLD_EDGE]
    count = sum(u[1] if isinstance(u, tuple) else 1 for u in middle)
    first = middle[0][0] if isinstance(middle[0], tuple) else middle[0]
    return head + [(first, count, False)] + tail


# ------------------------------------------------------------------ building


def _value_of(t: Tensor | None, lab: Label | None) -> np.ndarray | None:
    """The tensor's values now, or those its label kept when the tensor is gone."""
    if t is not None:
        return np.array(t.data_, copy=True)
    if lab is not None and lab.value is not None:
        return np.array(lab.value, copy=True)
    return None


def _row(it: _Item, event_kind: str, inputs: list[Tensor] | None) -> Row:
    node, t, lab = it.node, it.tensor, it.label
    shape, dtype = _shape_dtype(it)
    is_leaf = node is None or isinstance(node, AccumulateGrad)
    flowed = None
    if it.entry is not None and it.index < len(it.entry.grads):
        g = it.entry.grads[it.index]
        if g is not None:
            flowed = np.array(g.data_, copy=True)
    grad = None
    reason = None
    if t is not None and t._grad is not None:
        grad = np.array(t._grad.data_, copy=True)
    elif not is_leaf and (t is None or not t._retains_grad):
        reason = NONLEAF_REASON
    elif t is not None and not t._requires_grad:
        reason = NO_GRAD_REASON
    elif is_leaf and event_kind == "grad":
        reason = GRAD_CALL_REASON
    elif is_leaf and inputs is not None and not any(x is t for x in inputs):
        reason = NOT_INPUT_REASON
    return Row(
        name=it.name,
        expr=lab.expr if lab is not None else None,
        line=lab.line if lab is not None else None,
        shape=list(shape),
        dtype=dtype,
        value=_value_of(t, lab),
        requires_grad=t.requires_grad if t is not None else True,
        is_leaf=is_leaf,
        grad_fn=None if is_leaf else node.grad_fn_name,
        flowed_grad=flowed,
        grad=grad,
        grad_reason=reason,
        hook_changed=bool(it.entry is not None and it.entry.hook_changed),
        released=bool(it.entry is not None and it.entry.released),
        node=it.node,  # for adcli.symbolic
        output_nr=it.index,
        user_backward=None if is_leaf else user_backward_name(node),
    )


def _edge_of(t: Tensor) -> tuple[Node | None, int]:
    if t._node is not None:
        return t._node, t._output_nr
    return t._acc, 0


def _name_of(t: Tensor, names: dict[tuple[int, int], str]) -> str:
    node, nr = _edge_of(t)
    if node is not None and (id(node), nr) in names:
        return names[(id(node), nr)]
    lab = label_of(t)
    if lab is not None:
        return lab.name or lab.expr
    if t._node is not None:
        return t._node.grad_fn_name
    return "tensor"


def _options(event: BackwardEvent, names: dict[tuple[int, int], str]) -> list[str]:
    opts = [f"retain_graph={event.retain_graph}", f"create_graph={event.create_graph}"]
    if event.gradient_given:
        vals = [inline_value(g.data_, g.dtype.name) for g in event.root_grads]
        word = "gradient" if event.kind == "backward" else "grad_outputs"
        opts.append(f"{word}={vals[0] if len(vals) == 1 else '(' + ', '.join(vals) + ')'}")
    if event.inputs is not None:
        word = "inputs" if event.kind == "backward" else "inputs"
        opts.append(f"{word}=[{', '.join(_name_of(t, names) for t in event.inputs)}]")
    return opts


def _default_call(kind: str, root: str, event: BackwardEvent, names: dict) -> str:
    if kind == "grad":
        ins = ", ".join(_name_of(t, names) for t in event.inputs or [])
        return f"torch.autograd.grad({root}, [{ins}])"
    if kind == "show":
        return f"show({root})"
    return f"{root}.backward()"


def build_report(
    event: BackwardEvent,
    *,
    line: int | None,
    call_text: str | None,
    full: bool = False,
    fold_limit: int = FOLD_LIMIT,
) -> Report:
    """The report of one backward()/autograd.grad() call, from the engine's event."""
    with _no_gc():
        return _build_report(event, line, call_text, full, fold_limit)


def _build_report(
    event: BackwardEvent, line: int | None, call_text: str | None, full: bool, fold_limit: int
) -> Report:
    items = _items(event.entries)
    names = {(id(it.node), it.index): it.name for it in items if it.node is not None}
    root = ", ".join(_name_of(r, names) for r in event.roots)
    report = _assemble(items, event.kind, event.inputs, full, fold_limit)
    report.call = call_text or _default_call(event.kind, root, event, names)
    report.line = line
    report.options = _options(event, names)
    report.root = root
    report.notes = _notes(items, event, names)
    if event.create_graph:
        report.second_order = _second_order(event, items, root)
    return report


def build_show_report(
    tensors: list[Tensor],
    *,
    line: int | None,
    call_text: str | None,
    full: bool = False,
    fold_limit: int = FOLD_LIMIT,
) -> Report:
    """The node table of the graphs behind `tensors` now (for `show(...)`): no gradients flow."""
    with _no_gc():
        return _build_show_report(tensors, line, call_text, full, fold_limit)


def _build_show_report(
    tensors: list[Tensor], line: int | None, call_text: str | None, full: bool, fold_limit: int
) -> Report:
    entries: list[TraceEntry] = []
    loose: list[_Item] = []
    seen: set[Node] = set()
    stack: list[Node] = []
    for t in tensors:
        if t._node is not None:
            stack.append(t._node)
        elif t._requires_grad:
            stack.append(t._accumulator())
        else:
            loose.append(_Item(None, 0, None, t, label_of(t)))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        n_out = len(node.outputs) if isinstance(node.outputs, tuple) else 1
        entries.append(TraceEntry(node, (None,) * n_out))
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    items = _items(entries, loose)
    names = {(id(it.node), it.index): it.name for it in items if it.node is not None}
    loose_names = {id(it.tensor): it.name for it in loose}
    roots = ", ".join(loose_names.get(id(t)) or _name_of(t, names) for t in tensors)
    report = _assemble(items, "show", None, full, fold_limit)
    report.call = call_text or f"show({roots})"
    report.line = line
    report.options = []
    report.root = roots
    report.notes = _notes(items, None, names)
    return report


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic collector: making 100,000 small objects next to a large graph
    otherwise spends most of its time in collections that find nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _assemble(
    items: list[_Item], kind: str, inputs: list[Tensor] | None, full: bool, limit: int
) -> Report:
    if full:
        plan: list[Any] = list(range(len(items)))
    else:
        plan = fold_plan([it.key for it in items], limit=limit)
    rows: list[Row | Fold] = []
    for unit in plan:
        if isinstance(unit, tuple):
            rows.append(Fold(unit[1], unit[2]))
        else:
            rows.append(_row(items[unit], kind, inputs))
    return Report(kind, "", None, [], "", rows, len(items), full=full)


# ------------------------------------------------------------------ notes


def _where(lab: Label | None) -> str:
    return f" (line {lab.line})" if lab is not None and lab.line else ""


def _capped(notes: list[str], what: str) -> list[str]:
    if len(notes) <= NOTES_PER_KIND:
        return notes
    rest = len(notes) - NOTES_PER_KIND
    return notes[:NOTES_PER_KIND] + [f"… and {rest} more {what}"]


def _notes(
    items: list[_Item], event: BackwardEvent | None, names: dict[tuple[int, int], str]
) -> list[str]:
    notes: list[str] = []
    notes += _capped(_custom_notes(items), "custom Functions")
    notes += _capped(_nonleaf_notes(items), "tensors that are not leaves")
    if event is not None:
        notes += event.notes  # the session's (adcli.core.hints: gradients that accumulated)
        notes += _freed_notes(items, event)
        notes += _capped(_broadcast_notes(items, names), "gradients summed over broadcast dims")
        notes += _capped(_hook_notes(items), "hooks that changed a gradient")
    return notes


def _custom_notes(items: list[_Item]) -> list[str]:
    """One note per custom autograd.Function class: its backward is the script's."""
    seen: dict[str, str] = {}
    for it in items:
        if it.node is not None and it.first:
            method = user_backward_name(it.node)
            if method is not None:
                seen.setdefault(it.node.grad_fn_name, method)
    return [
        f"{name} is a custom autograd.Function: its gradients come from {method}, "
        "written in the script"
        for name, method in seen.items()
    ]


def _nonleaf_notes(items: list[_Item]) -> list[str]:
    out = []
    for it in items:
        lab, t = it.label, it.tensor
        if lab is None or not lab.name or t is None or t._node is None:
            continue
        if t._retains_grad or t._grad is not None or not _MADE_AS_LEAF.search(lab.expr or ""):
            continue
        op = t._node.grad_fn_name
        out.append(
            f"{lab.name}{_where(lab)} is not a leaf: it is the result of {op}, so "
            f"{lab.name}.grad stays None; make the finished value the leaf (compute it, then "
            f"call .requires_grad_()) or call {lab.name}.retain_grad()"
        )
    return out


def _mark_lines(report: Report) -> list[str]:
    """One line saying what the report's marks mean, for those that appear in it:
    `(gone)`, `name@2` (a name bound again) and `MulBackward0#1` (an unnamed result)."""
    rows = report.shown_rows
    marks = []
    rebound = next((r.name for r in rows if re.search(r"@\d+$", r.name)), None)
    if rebound is not None:
        base, _, n = rebound.rpartition("@")
        marks.append(f"{rebound} = the {_ordinal(int(n))} tensor bound to {base}")
    numbered = next((r.name for r in rows if re.search(r"#\d+$", r.name)), None)
    if numbered is not None:
        marks.append(f"{numbered} = an unnamed result, numbered per grad_fn")
    if any(r.value is None for r in rows):
        marks.append("(gone) = the tensor no longer exists")
    return ["marks: " + "; ".join(marks)] if marks else []


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _freed_notes(items: list[_Item], event: BackwardEvent) -> list[str]:
    if event.retain_graph:
        return []
    counts: dict[tuple[str, int | None], int] = {}
    for it in items:
        e = it.entry
        if e is None or not e.released or not it.first:
            continue
        lab = it.label
        key = (it.node.grad_fn_name, lab.line if lab is not None else None)
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return []
    parts = []
    for (name, line), n in counts.items():
        where = f" (line {line})" if line else ""
        parts.append(f"{n} × {name}{where}" if n > 1 else f"{name}{where}")
    shown = ", ".join(parts[:NOTES_PER_KIND])
    if len(parts) > NOTES_PER_KIND:
        rest = sum(list(counts.values())[NOTES_PER_KIND:])
        shown += f" and {rest} more"
    return [
        f"this pass freed the values saved by {shown}: a second backward through this graph "
        "will fail; pass retain_graph=True to keep them"
    ]


def _broadcast_notes(items: list[_Item], names: dict[tuple[int, int], str]) -> list[str]:
    out = []
    for it in items:
        node, e = it.node, it.entry
        if node is None or e is None or not it.first:
            continue
        metas = getattr(node, "in_meta", None)
        if not metas or len(metas) < 2 or node.multi_output or not e.grads:
            continue
        g = e.grads[0]
        if g is None:
            continue
        out_shape = g.data_.shape
        summed = [
            (nxt, nr, tuple(meta[0]))
            for (nxt, nr), meta in zip(node.next_functions, metas, strict=False)
            if nxt is not None and meta[0] != out_shape
        ]
        if not summed:
            continue
        try:
            shapes = [tuple(m[0]) for m in metas if m is not None]
            if tuple(np.broadcast_shapes(*shapes)) != out_shape:
                continue  # not an elementwise op (matmul, reductions, views...)
        except ValueError:
            continue
        for nxt, nr, in_shape in summed:
            pad = len(out_shape) - len(in_shape)
            dims = list(range(pad)) + [
                pad + k for k, s in enumerate(in_shape) if s == 1 and out_shape[pad + k] != 1
            ]
            in_name = names.get((id(nxt), nr))
            if in_name is None:
                t = _tensor_of(nxt, nr)
                in_name = _name_of(t, names) if t is not None else nxt.grad_fn_name
            word = "dimension" if len(dims) == 1 else "dimensions"
            out.append(
                f"the gradient of {in_name} (shape {format_shape(in_shape)}) was summed over "
                f"the broadcast {word} {', '.join(map(str, dims))} of {it.name} "
                f"(shape {format_shape(out_shape)}){_at(it.label)}"
            )
    return out


def _at(lab: Label | None) -> str:
    return f" at line {lab.line}" if lab is not None and lab.line else ""


def _hook_notes(items: list[_Item]) -> list[str]:
    out = []
    for it in items:
        e = it.entry
        if e is None or not e.hook_changed or not it.first:
            continue
        out.append(
            f"a hook on {it.name}{_where(it.label)} changed the gradient that flowed into it; "
            "the table shows the gradient after the hook"
        )
    return out


# ------------------------------------------------------------------ second order


def _second_order(event: BackwardEvent, items: list[_Item], root: str) -> SecondOrder:
    """∂²root/∂u∂v by differentiating the first-order gradients again."""
    names = {(id(it.node), it.index): it.name for it in items if it.node is not None}
    pairs: list[tuple[str, Tensor, Tensor | None]] = []
    if event.kind == "grad":
        for t, g in zip(event.inputs or [], event.results or (), strict=False):
            pairs.append((_name_of(t, names), t, g))
    else:
        for it in items:
            t = it.tensor
            if not isinstance(it.node, AccumulateGrad) or t is None or not t._requires_grad:
                continue
            if event.inputs is not None and not any(x is t for x in event.inputs):
                continue
            pairs.append((it.name, t, t._grad))
    result = SecondOrder(root)
    pairs = [p for p in pairs if p[1]._requires_grad]
    variables = [t for _, t, _ in pairs]
    graphs = [g for _, _, g in pairs if g is not None and g.grad_fn is not None]
    saved_listeners = list(engine.listeners)
    engine.listeners.clear()
    restore = _silence_hooks(graphs)
    try:
        for uname, u, g in pairs:
            result.first_order.append(
                FirstOrder(uname, g.grad_fn.grad_fn_name if g is not None and g.grad_fn else None)
            )
            result.blocks.extend(_blocks(uname, u, g, pairs, variables))
    finally:
        restore()
        engine.listeners[:] = saved_listeners
    return result


def _blocks(
    uname: str,
    u: Tensor,
    g: Tensor | None,
    pairs: list[tuple[str, Tensor, Tensor | None]],
    variables: list[Tensor],
) -> list[Block]:
    shapes = [list(u.data_.shape) + list(v.data_.shape) for v in variables]
    dtypes = [v.dtype.name for v in variables]
    blocks = [
        Block(uname, vn, s, dtype=d) for (vn, _, _), s, d in zip(pairs, shapes, dtypes, strict=True)
    ]
    if g is None:
        for b in blocks:
            b.error = f"{uname} got no gradient"
        return blocks
    n = int(g.data_.size)
    rows = [np.zeros((n, int(v.data_.size)), dtype=np.float64) for v in variables]
    if g.grad_fn is not None and g._requires_grad:
        if n > SECOND_ORDER_MAX_NUMEL:
            for b in blocks:
                b.error = f"not computed: ∂root/∂{uname} has {n} elements"
            return blocks
        try:
            for k in range(n):
                onehot = np.zeros(g.data_.shape, dtype=g.data_.dtype)
                onehot.reshape(-1)[k] = 1
                res = engine.grad(
                    [g],
                    variables,
                    grad_outputs=[Tensor._make(onehot)],
                    retain_graph=True,
                    allow_unused=True,
                )
                for vi, r in enumerate(res):
                    if r is not None:
                        rows[vi][k] = r.data_.reshape(-1)
        except (RuntimeError, TypeError, ValueError) as exc:
            for b in blocks:
                b.error = str(exc).split(". ")[0]
            return blocks
    for b, m, v in zip(blocks, rows, variables, strict=True):
        block = m.reshape(b.shape).astype(v.data_.dtype)
        if m.size <= BLOCK_LIMIT:
            b.value = block
        else:
            b.norm = float(np.linalg.norm(m))
            if m.shape[0] == m.shape[1] and list(u.data_.shape) == list(v.data_.shape):
                b.diagonal = np.diagonal(m).reshape(u.data_.shape).astype(v.data_.dtype)
    return blocks


def _silence_hooks(graphs: list[Tensor]) -> Callable[[], None]:
    """Hooks and retain_grad off on the gradient graphs while they are differentiated."""
    return engine.silence_hooks([g.grad_fn for g in graphs])
