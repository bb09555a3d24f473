"""Draw a `Report` with rich: a header line, the node table, notes, second derivatives.

User text (names, expressions, values) always goes in as `rich.text.Text`, never
as markup, so `[x]` or `:warning:` in a script prints as written. Without colour
(a pipe, a file, NO_COLOR) the output is plain and deterministic: golden text.
"""

from __future__ import annotations

import os
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .report import (
    Block,
    Fold,
    Report,
    Row,
    format_shape,
    format_value,
    inline_value,
    legend_lines,
)

#: Width when the output is not a terminal (pipes, files, golden tests).
PIPE_WIDTH = 100

_LEAF = "bold cyan"
_OP = "bold magenta"
_DIM = "dim"
_NOTE = "yellow"
_HEADER = "bold"


def make_console(file: IO[str], *, width: int | None = None, color: bool | None = None) -> Console:
    """A console for reports on `file`.

    `color` None means: colour only when `file` is a terminal and the `NO_COLOR`
    environment variable is empty or unset. `width` None means: the terminal's
    width on a terminal, else a fixed 100 columns (rich would otherwise take the
    width of whatever terminal stdin or stderr is attached to).
    """
    tty = _isatty(file)
    if color is None:
        color = tty and not os.environ.get("NO_COLOR", "")
    if width is None and not tty:
        width = PIPE_WIDTH
    common = dict(
        file=file,
        width=width,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    if color:
        return Console(
            force_terminal=True,
            color_system="auto" if tty else "standard",
            no_color=False,
            **common,
        )
    return Console(force_terminal=False, color_system=None, no_color=True, **common)


def _isatty(file: IO[str]) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError, OSError):
        return False


# ------------------------------------------------------------------ the report


def render_report(report: Report, console: Console) -> None:
    """Print the report: header, node table, notes and (create_graph) second derivatives.

    Lines carry no trailing spaces (rich pads table cells), so that the text
    compares cleanly as golden output.
    """
    with console.capture() as capture:
        for part in report_renderables(report, console.width):
            console.print(part)
        console.print()
    text = capture.get()
    console.file.write("\n".join(line.rstrip() for line in text.split("\n")))
    console.file.flush()


def report_to_text(report: Report, *, width: int = PIPE_WIDTH) -> str:
    """The plain text of the report, as printed into a pipe."""
    import io

    buf = io.StringIO()
    render_report(report, make_console(buf, width=width, color=False))
    return buf.getvalue()


def report_renderables(report: Report, width: int) -> list[Any]:
    """The parts of the report, in order, for a console `width` columns wide."""
    parts: list[Any] = [_header(report)]
    parts += node_tables(report, width)
    if report.symbolic:  # --symbolic: formulas beside the numbers (adcli.symbolic fills them)
        parts.append(formula_table(report))
    legend = _legend(report)
    if legend is not None:
        parts.append(legend)
    if report.notes:
        parts.append(_notes(report.notes))
    if report.second_order is not None:
        parts.append(Text(f"second derivatives of {report.second_order.root}", style=_HEADER))
        table = second_order_table(report)
        fits = _natural_width(table, 1) <= width and width >= BLOCKS_BELOW
        parts += [table] if fits else second_order_blocks(report)
    return parts


def _header(report: Report) -> Text:
    text = Text()
    text.append(report.call, style=_HEADER)
    if report.line is not None:
        text.append(f" at line {report.line}")
    if report.options:
        text.append("  ")
        text.append(", ".join(report.options), style=_DIM)
    if report.kind == "show":
        text.append(f"  ({report.node_count} nodes)" if report.node_count != 1 else "  (1 node)")
    if report.graph_shown:
        text.append("  (graph as above)", style=_DIM)
    return text


def _cell(s: str | None, style: str = "") -> Text:
    return Text("" if s is None else s, style=style)


def _grad_cell(row: Row, full: bool) -> Text:
    if row.grad is not None:
        return Text(format_value(row.grad, row.dtype, full=full))
    return Text("None", style=_DIM if row.grad_reason else "")


_GRAPH_COLUMNS = ("name", "expression", "shape", "dtype", "requires_grad", "is_leaf", "grad_fn")
_VALUE_COLUMNS = ("value", "flowed grad", ".grad")
_NARROW = {"shape", "dtype", "requires_grad", "is_leaf", "grad_fn"}
#: The one-table layout is used when it fits with names and expressions wrapped
#: at these widths (rich then shares out whatever room there is).
_WRAP_AT = {"name": 14, "expression": 20}
#: Below this many columns each node gets a block of lines instead of a table row.
BLOCKS_BELOW = 90
#: The flag columns' short headers, used when the full ones do not fit.
_SHORT = {"requires_grad": "rg", "is_leaf": "leaf"}
_SHORT_LEGEND = "rg: requires_grad, leaf: is_leaf, T/F: True/False"


def node_tables(report: Report, width: int) -> list[Any]:
    """The node table: one line per node, leaves first, root last.

    One table when it fits in `width`; otherwise two with the same rows, the
    graph (name, expression, shape, dtype, flags, grad_fn) and then the values
    and gradients, so that matrices keep their shape instead of wrapping; with
    short flag columns (explained under the table) when even that is too wide;
    below `BLOCKS_BELOW` columns, one block of lines per node. A cell wraps only
    between words: no layout is chosen that would have to split a name, a
    number or `True`.
    """
    values = ("name",) + _VALUE_COLUMNS
    if width >= BLOCKS_BELOW or report.graph_shown:
        if not report.graph_shown:
            for gap in (2, 1):
                both = _GRAPH_COLUMNS + _VALUE_COLUMNS
                widths = _layout(report, both, gap, width, rigid=_NARROW | set(_VALUE_COLUMNS))
                if widths is not None:
                    return [_table(report, both, gap, widths)]
        value_widths = _layout(report, values, 2, width)
        if value_widths is not None:
            if report.graph_shown:
                return [_table(report, values, 2, value_widths)]
            for short in (False, True):
                widths = _layout(report, _GRAPH_COLUMNS, 2, width, short=short)
                if widths is not None:
                    parts: list[Any] = [_table(report, _GRAPH_COLUMNS, 2, widths, short=short)]
                    if short:
                        parts.append(Text(_SHORT_LEGEND, style=_DIM))
                    return parts + [_table(report, values, 2, value_widths)]
    return node_blocks(report, width)


def _layout(
    report: Report,
    columns: tuple[str, ...],
    gap: int,
    width: int,
    *,
    rigid: set[str] = _NARROW,
    short: bool = False,
) -> list[int] | None:
    """Column widths that fit `width` without splitting a token, or None.

    A rigid column gets its widest line; the others get at least their longest
    word (and the `_WRAP_AT` room when the table has rigid value columns), at
    most their widest line; what is left goes first to the columns that want
    least (water-filling)."""
    lows: list[int] = []
    highs: list[int] = []
    for col in columns:
        header = _SHORT.get(col, col) if short else col
        widest, word = len(header), len(header)
        for row in report.rows:
            if isinstance(row, Fold):  # its "996 similar nodes" sits whole in the 2nd column
                if col == columns[1]:
                    rest = row.text.partition(" ")[2]
                    widest, word = max(widest, len(rest)), max(word, len(rest))
                continue
            plain = _column_cell(row, col, report.full, short=short).plain
            widest = max(widest, max(len(line) for line in plain.split("\n")))
            word = max(word, max((len(w) for w in plain.split()), default=0))
        if col in rigid:
            lows.append(widest)
        else:
            room = _WRAP_AT.get(col, 0) if rigid is not _NARROW else 0
            lows.append(max(word, min(widest, room)))
        highs.append(widest)
    avail = width - gap * (len(columns) - 1)
    if sum(lows) > avail:
        return None
    extra = avail - sum(lows)
    want = [h - lo for lo, h in zip(lows, highs, strict=True)]
    if sum(want) <= extra:
        return highs
    # the smallest wants are met in full first, so short names stay on one line
    widths = list(lows)
    order = sorted(range(len(columns)), key=lambda i: want[i])
    for k, i in enumerate(order):
        share = extra // (len(order) - k)
        give = min(want[i], share)
        widths[i] += give
        extra -= give
    return widths


def _natural_width(table: Table, gap: int) -> int:
    """The width `table` takes with no cell wrapped."""
    total = 0
    for col in table.columns:
        widest = Text(str(col.header)).cell_len
        for cell in col.cells:
            if isinstance(cell, Text):
                widest = max(widest, max(Text(ln).cell_len for ln in cell.plain.split("\n")))
        total += widest + gap
    return total - gap


def _table(
    report: Report, columns: tuple[str, ...], gap: int, widths: list[int], *, short: bool = False
) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, gap - 1, 0, 0),
        header_style="bold",
        expand=False,
    )
    full = report.full
    for col, w in zip(columns, widths, strict=True):
        header = _SHORT.get(col, col) if short else col
        table.add_column(header, width=w, no_wrap=col in _NARROW, overflow="fold")
    for row in report.rows:
        if isinstance(row, Fold):  # "…" under the names, "996 similar nodes" beside it
            mark, _, rest = row.text.partition(" ")
            cells = [Text(mark, style=_DIM), Text(rest, style=_DIM)]
            table.add_row(*cells, *[Text("")] * (len(columns) - 2))
            continue
        table.add_row(*[_column_cell(row, col, full, short=short) for col in columns])
    return table


def _column_cell(row: Row, col: str, full: bool, *, short: bool = False) -> Text:
    if col == "name":
        text = Text(row.name, style=_LEAF if row.is_leaf else _OP)
        if row.hook_changed:
            text.append(" (hook)", style=_NOTE)
        return text
    if col == "expression":
        return Text("" if row.expr is None or row.expr == row.name else row.expr)
    if col == "shape":
        return Text(format_shape(row.shape))
    if col == "dtype":
        return Text(row.dtype)
    if col == "requires_grad":
        return Text(_flag(row.requires_grad, short))
    if col == "is_leaf":
        return Text(_flag(row.is_leaf, short))
    if col == "grad_fn":
        text = Text(row.grad_fn or "None", style="" if row.is_leaf else _OP)
        if row.user_backward:  # a custom autograd.Function (a note names its backward)
            text.append(" (custom)", style=_NOTE)
        return text
    if col == "value":
        return _value_cell(row.value, row.dtype, full)
    if col == "flowed grad":
        return _value_cell(row.flowed_grad, row.dtype, full, "-")
    return _grad_cell(row, full)


def _flag(value: bool, short: bool) -> str:
    return ("T" if value else "F") if short else str(value)


def node_blocks(report: Report, width: int) -> list[Any]:
    """One block per node for narrow terminals: a title line (name, grad_fn or
    `leaf`, shape, dtype, requires_grad), then the expression, value, flowed
    gradient and .grad, each under a label and wrapped between words."""
    parts: list[Any] = []
    full = report.full
    for row in report.rows:
        if isinstance(row, Fold):
            parts.append(Text(row.text, style=_DIM))
            continue
        title = _column_cell(row, "name", full)
        title.append("  ")
        title.append(row.grad_fn or "leaf", style=_OP if row.grad_fn else _LEAF)
        facts = [format_shape(row.shape), row.dtype, f"requires_grad={row.requires_grad}"]
        title.append("  " + "  ".join(facts), style=_DIM)
        parts.append(title)
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        if row.expr is not None and row.expr != row.name:
            grid.add_row(Text("  expression"), Text(row.expr))
        for label, col in (("  value", "value"), ("  flowed grad", "flowed grad")):
            grid.add_row(Text(label), _column_cell(row, col, full))
        grid.add_row(Text("  .grad"), _column_cell(row, ".grad", full))
        parts.append(grid)
    return parts


def _value_cell(a: object, dtype: str, full: bool, missing: str = "(gone)") -> Text:
    if a is None:
        return Text(missing, style=_DIM)
    return Text(format_value(a, dtype, full=full))


def _legend(report: Report) -> Text | None:
    """The legend lines (`report.legend_lines`, shared with --json), dimmed."""
    lines = legend_lines(report)
    if not lines:
        return None
    return Text("\n".join(lines), style=_DIM)


def _notes(notes: list[str]) -> Table:
    """`note:` lines; a long note wraps under its own text, not under `note:`."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for note in notes:
        grid.add_row(Text("note:", style=_NOTE), Text(note))
    return grid


def formula_table(report: Report) -> Table:
    """--symbolic: each node's formula in the leaves, the formula of the gradient that
    flowed into it (checked against the number), and the local rule of its grad_fn."""
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
    )
    table.add_column("name", overflow="fold", max_width=16)
    table.add_column("formula", overflow="fold", ratio=3)
    table.add_column(f"∂{report.root}/∂name (formula)", overflow="fold", ratio=3)
    table.add_column("local rule (grad_fn)", overflow="fold", ratio=4)
    for row in report.rows:
        if isinstance(row, Fold):
            table.add_row(Text(row.text, style=_DIM), Text(""), Text(""), Text(""))
            continue
        grad = row.grad_formula or ""
        table.add_row(
            Text(row.name, style=_LEAF if row.is_leaf else _OP),
            Text(row.formula or ("" if row.is_leaf else "-")),
            Text(grad, style="bold red" if "MISMATCH" in grad else ""),
            Text(row.rule or ""),
        )
    return table


# ------------------------------------------------------------------ second order


def second_order_table(report: Report) -> Table:
    """∂²root/∂u∂v for each pair (u, v), with the grad_fn of the first-order gradient ∂root/∂u."""
    so = report.second_order
    assert so is not None
    root = so.root
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        header_style="bold",
    )
    table.add_column("u", overflow="fold")
    table.add_column(f"∂{root}/∂u grad_fn", no_wrap=True)
    table.add_column("v", overflow="fold")
    table.add_column("shape", no_wrap=True)
    table.add_column(f"∂²{root}/∂u∂v", overflow="fold")
    if report.symbolic:  # --symbolic: the block's formula (adcli.symbolic)
        table.add_column("formula", overflow="fold")
    first = {f.name: f.grad_fn for f in so.first_order}
    prev_u = None
    for b in so.blocks:
        same = b.u == prev_u
        prev_u = b.u
        gf = first.get(b.u)
        cells = [
            Text("" if same else b.u, style=_LEAF),
            Text("" if same else (gf or "None (constant)"), style=_OP if gf else _DIM),
            Text(b.v, style=_LEAF),
            Text(format_shape(b.shape)),
            _block_cell(b, report.full),
        ]
        if report.symbolic:
            cells.append(Text(b.formula or ""))
        table.add_row(*cells)
    return table


def second_order_blocks(report: Report) -> list[Any]:
    """The second derivatives for narrow terminals: per u, the grad_fn of ∂root/∂u,
    then each block ∂²root/∂u∂v under its v and shape."""
    so = report.second_order
    assert so is not None
    first = {f.name: f.grad_fn for f in so.first_order}
    parts: list[Any] = []
    grid: Table | None = None
    prev_u = None
    for b in so.blocks:
        if b.u != prev_u:
            prev_u = b.u
            gf = first.get(b.u)
            title = Text("u = ")
            title.append(b.u, style=_LEAF)
            title.append(f"  ∂/∂u: {gf or 'None (constant)'}", style=_DIM)
            grid = Table.grid(padding=(0, 1, 0, 0))
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold")
            parts += [title, grid]
        assert grid is not None
        label = Text("  v = ")
        label.append(b.v, style=_LEAF)
        label.append(f"  {format_shape(b.shape)}")
        grid.add_row(label, _block_cell(b, report.full))
        if report.symbolic and b.formula:
            grid.add_row(Text("  formula"), Text(b.formula))
    return parts


def _block_cell(b: Block, full: bool) -> Text:
    if b.error is not None:
        return Text(b.error, style=_DIM)
    if b.value is not None:
        return Text(format_value(b.value, b.dtype, full=full))
    text = Text(f"norm {b.norm:.4f}")
    if b.diagonal is not None:
        text.append(", diagonal " + inline_value(b.diagonal, b.dtype))
    return text
