"""The graph of one report, as the HTML page draws it: boxes, edges and backward steps.

Each box is a node of the report's table (a multi-output node's rows share one box),
labelled as `adcli graph` labels it (name, shape, `data ...`, `grad ...`). Edges point
from an input to its user. When the table folded a long run of nodes, an edge that
went through the left-out nodes joins the shown nodes on each side and says how many
it skips. The steps replay the backward pass edge by edge, in the order the engine ran
the nodes. Everything here reads the report and the graph; nothing is changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .labels import data_line, grad_line, shape_line
from .report import Report, Row

#: nodes looked at when an edge is followed through left-out nodes
WALK_BUDGET = 20_000


@dataclass
class GNode:
    """One box: the report rows it stands for and the lines drawn in it."""

    rows: list[int]
    lines: list[str]
    kind: str  # "leaf" | "op" | "root"
    name: str


@dataclass
class GEdge:
    """Input `src` feeds `dst`; `skipped` nodes of a folded run lie between them."""

    src: int
    dst: int
    skipped: int = 0


@dataclass
class Step:
    """One move of the backward pass: `dst`'s backward sends a gradient along `edge`."""

    edge: int
    text: str


@dataclass
class PassGraph:
    """What the page draws for one report."""

    nodes: list[GNode] = field(default_factory=list)
    edges: list[GEdge] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def _lines(row: Row, has_pass: bool) -> list[str]:
    title = row.name if row.is_leaf else (row.grad_fn or row.name)
    lines = [title]
    if not row.is_leaf and row.name != title:
        lines.append(row.name)
    if row.shape or row.dtype != "float32":
        lines.append(shape_line(row.shape, row.dtype))
    data = data_line(row.value)
    if data:
        lines.append(data)
    grad = row.grad if row.is_leaf or row.grad is not None else row.flowed_grad
    known = row.is_leaf or row.grad is not None or has_pass
    g = grad_line(grad, known=known)
    if g:
        lines.append(g)
    return lines


def build_pass_graph(report: Report, event: Any = None) -> PassGraph:
    """The boxes, edges and backward steps of `report` (`event`: its BackwardEvent, if any)."""
    graph = PassGraph()
    index: dict[Any, int] = {}
    for ri, r in enumerate(report.rows):
        if not isinstance(r, Row):
            continue
        if r.node is not None and r.node in index:
            graph.nodes[index[r.node]].rows.append(ri)
            continue
        if r.node is not None:
            index[r.node] = len(graph.nodes)
        kind = "leaf" if r.is_leaf else "op"
        graph.nodes.append(GNode([ri], _lines(r, event is not None), kind, r.name))
    in_pass = {e.node for e in event.entries} if event is not None else None
    seen_edges: set[tuple[int, int, int]] = set()
    into: dict[int, list[int]] = {}  # node -> edges that feed it
    for node, dst in index.items():
        for k, (nxt, _) in enumerate(node.next_functions):
            if nxt is None:
                continue
            if nxt in index:
                found = [(index[nxt], 0)]
            else:
                found = _through_hidden(nxt, index, in_pass)
            for src, skipped in found:
                key = (src, dst, k if skipped == 0 else -1)
                if skipped and key in seen_edges:
                    continue
                seen_edges.add(key)
                into.setdefault(dst, []).append(len(graph.edges))
                graph.edges.append(GEdge(src, dst, skipped))
    users = {e.src for e in graph.edges}
    for i, gn in enumerate(graph.nodes):
        if gn.kind == "op" and i not in users:
            gn.kind = "root"
    if event is not None:
        for entry in event.entries:
            dst = index.get(entry.node)
            if dst is None:
                continue
            for ei in into.get(dst, ()):
                e = graph.edges[ei]
                a, b = graph.nodes[e.dst].name, graph.nodes[e.src].name
                via = f" (through {e.skipped} folded nodes)" if e.skipped else ""
                graph.steps.append(Step(ei, f"{a} sends its gradient back to {b}{via}"))
    return graph


def _through_hidden(
    start: Any, index: dict[Any, int], in_pass: set[Any] | None
) -> list[tuple[int, int]]:
    """The shown nodes reached from `start` through nodes the table left out, with the
    number of left-out nodes on the way (a bounded walk: graphs can be long)."""
    found: dict[int, int] = {}
    stack = [(start, 1)]
    seen = {start}
    budget = WALK_BUDGET
    while stack and budget > 0:
        node, depth = stack.pop()
        budget -= 1
        for nxt, _ in node.next_functions:
            if nxt is None or nxt in seen:
                continue
            if in_pass is not None and nxt not in in_pass:
                continue
            seen.add(nxt)
            if nxt in index:
                found.setdefault(index[nxt], depth)
            else:
                stack.append((nxt, depth + 1))
    return sorted(found.items())
