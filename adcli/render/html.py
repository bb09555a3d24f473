"""`adcli run --html FILE`: one self-contained page with every report of the run.

Each report is a section: its graph drawn as inline SVG (laid out by `render.layout`,
so Graphviz is not needed), whose nodes can be clicked to see the report row (value,
gradient, flags, grad_fn), the formulas (with --symbolic) and the notes about that
node; a slider that replays the backward pass edge by edge; and the report's table
and notes. Reports of a call repeated in a loop are folded as on the terminal
(`render.folding`), so the page holds what the terminal shows, each report whole.
The page needs no network: its CSS, JavaScript and SVG are all inline.

`HtmlCollector` gathers the reports while the script runs (the runner calls it);
`render_page` turns them into the page. Neither changes the graph.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from typing import Any

from .layout import layout
from .passgraph import PassGraph, build_pass_graph
from .report import Fold, Report, Row, format_shape, format_value, inline_value

__all__ = ["GRAPH_LIMIT", "HtmlCollector", "render_page"]

#: reports with up to this many nodes draw every node; longer ones fold as their table
GRAPH_LIMIT = 150
#: the script's printed output kept for the page, in characters
OUTPUT_LIMIT = 200_000
#: sections after this many start collapsed (a long --all-reports run stays quick to open)
OPEN_SECTIONS = 12

_TITLE = ' class="title"'
_CHAR_W = 7.3  # width of one character of the 12px monospace font, in pixels
_LINE_H = 15


@dataclass
class _Item:
    """One entry of the page: a report with its graph, or a fold line."""

    report: Report | None = None
    graph: PassGraph | None = None
    fold: str | None = None


@dataclass
class HtmlCollector:
    """Gathers the reports of a run for the page, folded as the terminal folds them."""

    name: str
    source: str
    fold: bool = True
    every: int | None = None
    full: bool = False
    items: list[_Item] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    _size: int = 0
    _current: Any = None
    _latest: dict[Any, tuple[Report, PassGraph]] = field(default_factory=dict)
    _folder: Any = None

    def __post_init__(self) -> None:
        from .folding import ReportFolder

        self._folder = ReportFolder(
            self._show,
            lambda text: self.items.append(_Item(fold=text)),
            fold=self.fold,
            every=self.every,
        )

    def event(self, event: Any, line: int | None, call_text: str | None, tracker: Any) -> None:
        """A backward()/grad() call; `tracker` (adcli.symbolic) fills the formulas."""
        from .report import build_report

        report = build_report(
            event, line=line, call_text=call_text, full=self.full, fold_limit=GRAPH_LIMIT
        )
        graph = build_pass_graph(report, event)
        roots = event.roots
        value = float(roots[0].data_.flat[0]) if len(roots) == 1 and roots[0].numel() == 1 else None
        self._current = (report, graph, event, tracker)
        self._latest[(report.line, report.call)] = (report, graph)
        try:
            self._folder.add(report, value)
        finally:
            self._current = None

    def show(self, tensors: list[Any], line: int | None, call_text: str | None) -> None:
        """A show(...) call: its graph, no gradients."""
        from .report import build_show_report

        report = build_show_report(
            tensors, line=line, call_text=call_text, full=self.full, fold_limit=GRAPH_LIMIT
        )
        self.items.append(_Item(report, build_pass_graph(report)))

    def write_output(self, text: str) -> None:
        """The script's own printed output (kept up to OUTPUT_LIMIT characters)."""
        if self._size < OUTPUT_LIMIT:
            self.output.append(text[: OUTPUT_LIMIT - self._size])
            self._size += len(text)

    def _show(self, report: Report) -> None:
        cur = self._current
        if cur is not None and cur[0] is report:
            graph = cur[1]
            if cur[3] is not None:  # the pass just ran: its formulas can be read now
                try:
                    cur[3].annotate(report, cur[2])
                except Exception:  # formulas are extra: the page goes on without them
                    pass
        else:  # the last report of a folded run, shown when the script ends
            latest = self._latest.get((report.line, report.call))
            graph = latest[1] if latest is not None and latest[0] is report else None
        self.items.append(_Item(report, graph))

    def finish(self, path: str, error: str | None = None) -> str | None:
        """Write the page to `path`; the reason when it cannot be written, else None."""
        self._folder.finish()
        page = render_page(self.name, self.source, self.items, "".join(self.output), error)
        from ..safefiles import Refused, write_file

        try:  # a page from an earlier run is replaced; a symbolic link never followed
            write_file(path, page, overwrite=True)
        except Refused as e:
            return str(e)
        except OSError as e:
            return f"cannot write '{path}': {e.strerror or e}"
        return None


# ------------------------------------------------------------------ the page


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _json(data: Any) -> str:
    """JSON safe inside <script>: no `</script>`, no line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _value(a: Any, dtype: str) -> str | None:
    return None if a is None else format_value(a, dtype)


def _row_data(r: Row) -> dict[str, Any]:
    grad = _value(r.grad, r.dtype) if r.grad is not None else None
    return {
        "name": r.name,
        "expr": r.expr,
        "line": r.line,
        "shape": format_shape(r.shape),
        "dtype": r.dtype,
        "value": _value(r.value, r.dtype),
        "flowed": _value(r.flowed_grad, r.dtype),
        "grad": grad,
        "grad_reason": r.grad_reason,
        "requires_grad": r.requires_grad,
        "is_leaf": r.is_leaf,
        "grad_fn": r.grad_fn,
        "user_backward": r.user_backward,
        "hook_changed": r.hook_changed,
        "released": r.released,
        "formula": r.formula,
        "grad_formula": r.grad_formula,
        "rule": r.rule,
    }


def _svg(graph: PassGraph, k: int) -> str:
    sizes = [
        (max(len(s) for s in n.lines) * _CHAR_W + 16, len(n.lines) * _LINE_H + 10)
        for n in graph.nodes
    ]
    placed = layout(sizes, [(e.src, e.dst) for e in graph.edges])
    w, h = max(placed.width, 40), max(placed.height, 40)
    out = [
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" '
        f'height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" role="img" '
        f'aria-label="graph of report {k + 1}">',
        f'<defs><marker id="arrow{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L10,5 L0,10 z" '
        'fill="context-stroke"/></marker></defs>',
    ]
    for i, (e, d) in enumerate(zip(graph.edges, placed.paths, strict=True)):
        cls = "edge skip" if e.skipped else "edge"
        title = f"<title>{e.skipped} folded nodes</title>" if e.skipped else ""
        out.append(
            f'<path class="{cls}" data-edge="{i}" d="{d}" marker-end="url(#arrow{k})">'
            f"{title}</path>"
        )
    for i, n in enumerate(graph.nodes):
        x, y = placed.x[i], placed.y[i]
        bw, bh = sizes[i]
        spans = "".join(
            f'<tspan x="{x + 8:.1f}" y="{y + 2 + _LINE_H * (j + 1):.1f}"'
            f"{_TITLE if j == 0 else ''}>{_e(s)}</tspan>"
            for j, s in enumerate(n.lines)
        )
        out.append(
            f'<g class="node {n.kind}" data-node="{i}" tabindex="0" role="button">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{bh:.1f}" rx="7"/>'
            f"<text>{spans}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)


def _table(report: Report, node_of_row: dict[int, int]) -> str:
    head = "<tr><th>name</th><th>grad_fn</th><th>shape</th><th>value</th><th>gradient</th>"
    head += "<th>.grad</th><th>requires_grad</th><th>is_leaf</th></tr>"
    body = []
    for ri, r in enumerate(report.rows):
        if isinstance(r, Fold):
            body.append(f'<tr class="fold"><td colspan="8">{_e(r.text)}</td></tr>')
            continue
        grad = inline_value(r.grad, r.dtype) if r.grad is not None else (r.grad_reason or "None")
        flowed = inline_value(r.flowed_grad, r.dtype) if r.flowed_grad is not None else ""
        node = node_of_row.get(ri)
        attr = f' data-node="{node}"' if node is not None else ""
        body.append(
            f"<tr{attr}><td>{_e(r.name)}</td><td>{_e(r.grad_fn or 'leaf')}</td>"
            f"<td>{_e(format_shape(r.shape))}</td><td>{_e(inline_value(r.value, r.dtype))}</td>"
            f"<td>{_e(flowed)}</td><td>{_e(grad)}</td><td>{r.requires_grad}</td>"
            f"<td>{r.is_leaf}</td></tr>"
        )
    return f'<table class="rows">{head}{"".join(body)}</table>'


def _section(k: int, report: Report, graph: PassGraph | None) -> str:
    if graph is None:
        graph = build_pass_graph(report)
    node_of_row = {ri: i for i, n in enumerate(graph.nodes) for ri in n.rows}
    data = {
        "rows": [_row_data(r) if isinstance(r, Row) else None for r in report.rows],
        "nodes": [n.rows for n in graph.nodes],
        "edges": [[e.src, e.dst] for e in graph.edges],
        "steps": [[s.edge, s.text] for s in graph.steps],
        "notes": report.notes,
        "root": report.root,
        "symbolic": report.symbolic,
    }
    where = f"line {report.line}: " if report.line is not None else ""
    opts = f" ({', '.join(report.options)})" if report.options else ""
    n_steps = len(graph.steps)
    slider = (
        f'<div class="player"><button class="prev" aria-label="step back">◀</button>'
        f'<input class="slider" type="range" min="0" max="{n_steps}" value="0" step="1" '
        f'aria-label="backward pass step"><button class="next" aria-label="step on">▶</button>'
        f'<span class="steptext">Before the backward pass: {n_steps} edges to go. '
        "Move the slider to follow the gradient edge by edge.</span></div>"
        if n_steps
        else '<div class="player"><span class="steptext">No backward pass: '
        "this report shows the graph only.</span></div>"
    )
    notes = "".join(f"<li>{_e(n)}</li>" for n in report.notes)
    opened = " open" if k < OPEN_SECTIONS else ""
    return (
        f'<details class="report" id="report-{k + 1}"{opened}>'
        f'<summary><span class="num">#{k + 1}</span> {_e(where)}<code>{_e(report.call)}</code>'
        f"{_e(opts)} — {report.node_count} nodes</summary>"
        f'<script type="application/json" class="data">{_json(data)}</script>'
        f'<div class="canvas">{_svg(graph, k)}</div>{slider}'
        '<div class="panel" aria-live="polite"><p class="hint">Click a node to see its row, '
        "formulas and notes.</p></div>"
        f"{_table(report, node_of_row)}"
        + (f'<ul class="notes">{notes}</ul>' if notes else "")
        + "</details>"
    )


def render_page(
    name: str, source: str, items: list[Any], output: str = "", error: str | None = None
) -> str:
    """The whole page: script, output, every report (fold lines between), any error."""
    parts: list[str] = []
    k = 0
    for it in items:
        if it.fold is not None:
            parts.append(f'<p class="foldline">{_e(it.fold)}</p>')
        else:
            parts.append(_section(k, it.report, it.graph))
            k += 1
    lines = source.splitlines()
    code = "".join(
        f'<span class="ln" id="L{i}">{i:>{len(str(len(lines)))}}</span> {_e(t)}\n'
        for i, t in enumerate(lines, 1)
    )
    title = os.path.basename(name) or name
    body = [
        f"<header><h1>adcli: {_e(title)}</h1><p>{k} report{'s' if k != 1 else ''}"
        f"{' · the script failed' if error else ''}</p></header>",
        f'<details class="source"><summary>script</summary><pre>{code}</pre></details>',
    ]
    if output:
        body.append(
            f'<details class="output"><summary>output</summary><pre>{_e(output)}</pre></details>'
        )
    body += parts or ['<p class="none">The script made no backward() or grad() call.</p>']
    if error:
        body.append(f'<pre class="error">{_e(error)}</pre>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>adcli: {_e(title)}</title><style>{_asset('page.css')}</style></head>"
        f"<body>{''.join(body)}<script>{_asset('page.js')}</script></body></html>\n"
    )


def _asset(name: str) -> str:
    """The page's CSS or JavaScript, shipped beside this module."""
    from importlib.resources import files

    return files("adcli.render").joinpath(name).read_text(encoding="utf-8")
