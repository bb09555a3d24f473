"""Folding the reports of a call repeated in a loop.

A training loop calls `backward()` at the same line hundreds of times, each time on a
graph of the same shape. Printing every report buries the script's own output (the
polynomial tutorial would print 120,000 lines), so a call site prints its first
report in full, one line for the run of reports after it, and its last report in
full when the script ends (its values table only, when the first showed its graph):

    … line 16, steps 2–1999: same graph, loss 2.2e+04 → 8.82

A report whose graph has a shape the site has not shown yet prints in full (up to
`MAX_SHAPES` shapes per site: a dynamic net keeps changing shape). `every=N` also
prints every Nth report of a site in full; `fold=False` prints them all.

`ReportFolder` decides only what is printed and when; it reads the reports it is
given and never looks at tensors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from .report import Report, Row

__all__ = ["MAX_SHAPES", "FoldedRun", "ReportFolder", "graph_shape"]

_STEP_SUFFIX = re.compile(r"@\d+$")
_STEP_NAMES = re.compile(r"@\d+\b")

#: graph shapes a call site shows in full before folding every further report
MAX_SHAPES = 3


def graph_shape(report: Report) -> Hashable:
    """What must match for two reports to count as the same graph: the call, its
    options and, for every row, its name, grad_fn, shape and dtype."""
    rows = tuple(
        (_base(r.name), r.grad_fn, tuple(r.shape), r.dtype) if isinstance(r, Row) else r.count
        for r in report.rows
    )
    return (report.kind, report.call, tuple(report.options), rows)


def _base(name: str) -> str:
    """`loss@7` is `loss` again: the name of each step's new value counts up."""
    return _STEP_SUFFIX.sub("", name)


@dataclass(frozen=True)
class FoldedRun:
    """One fold line as data (for `--json`): steps `first_step`..`last_step` of the call
    at `line` were not printed; `text` is the line the text output prints for them."""

    line: int | None
    root: str
    first_step: int
    last_step: int
    same_graph: bool
    first_value: float | None
    last_value: float | None
    next_in_full: bool  # the step after `last_step` (the call's last) prints in full
    text: str


@dataclass
class _Site:
    """One call site (a script line): its count and the run being folded."""

    shapes: list[Hashable] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)  # notes printed at this site
    count: int = 0
    run_from: int = 0  # step of the first folded report, 0 when nothing is folded
    run_keys: set[Hashable] = field(default_factory=set)
    first_value: float | None = None
    last: Report | None = None  # the latest folded report (printed if it stays the last)
    last_value: float | None = None
    value_before_last: float | None = None


class ReportFolder:
    """Prints reports through `show` and fold lines through `say`, folding repeats."""

    def __init__(
        self,
        show: Callable[[Report], None],
        say: Callable[[str], None],
        *,
        fold: bool = True,
        every: int | None = None,
        runs: Callable[[FoldedRun], None] | None = None,
        prepare: Callable[[Report], None] | None = None,
    ) -> None:
        self._show = show
        # called once before a report is printed (and its notes read): work only
        # printed reports need (--symbolic formulas) is left until then
        self._prepare = prepare
        self._say = say
        self._runs = runs  # also told each fold line as data
        self._fold = fold
        self._every = every
        self._sites: dict[Hashable, _Site] = {}

    def add(self, report: Report, value: float | None = None) -> None:
        """One more report; `value` is its root's value when that is one number."""
        if not self._fold:
            self._ready(report)
            self._show(report)
            return
        site = self._sites.setdefault((report.line, report.call), _Site())
        site.count += 1
        shape = graph_shape(report)
        new_shape = shape not in site.shapes and len(site.shapes) < MAX_SHAPES
        periodic = self._every is not None and (site.count - 1) % self._every == 0
        if site.count == 1 or new_shape or periodic:
            self._close_run(site, show_last=False)
            if new_shape:
                site.shapes.append(shape)
            self._ready(report)
            site.notes.update(_steps_out(n) for n in report.notes)
            self._show(report)
            return
        if not site.run_from:
            site.run_from = site.count
            site.first_value = value
            site.last_value = None
            site.run_keys = set()
        site.run_keys.add(shape)
        site.last = report
        site.value_before_last = site.last_value
        site.last_value = value

    def _ready(self, report: Report) -> None:
        if self._prepare is not None:
            self._prepare(report)

    def finish(self) -> None:
        """The script ended: close every site's run, printing its last report."""
        for site in self._sites.values():
            self._close_run(site, show_last=True)

    def _close_run(self, site: _Site, *, show_last: bool) -> None:
        if not site.run_from or site.last is None:
            return
        last = site.last
        end = site.count if show_last else site.count - 1
        # the folded steps are run_from..end; with show_last the last of them prints in full
        folded_to = end - 1 if show_last else end
        if folded_to >= site.run_from:
            run = self._run(site, last, folded_to, show_last)
            self._say(run.text)
            if self._runs is not None:
                self._runs(run)
        if show_last:
            self._ready(last)
            if graph_shape(last) in site.shapes:  # its graph table and notes were printed
                last.graph_shown = True
                last.notes = [n for n in last.notes if _steps_out(n) not in site.notes]
            self._show(last)
        site.run_from = 0
        site.last = None

    @staticmethod
    def _run(site: _Site, last: Report, folded_to: int, show_last: bool) -> FoldedRun:
        steps = (
            f"step {site.run_from}"
            if folded_to == site.run_from
            else f"steps {site.run_from}–{folded_to}"
        )
        where = f"line {last.line}, " if last.line is not None else ""
        same = len(site.run_keys) == 1 and next(iter(site.run_keys)) in site.shapes
        what = "same graph" if same else "graphs of other shapes"
        text = f"… {where}{steps}: {what}"
        to_value = site.value_before_last if show_last else site.last_value
        if site.first_value is not None and to_value is not None:
            text += f", {_base(last.root)} {_num(site.first_value)} → {_num(to_value)}"
        if show_last:
            text += f"; step {folded_to + 1} below"
        return FoldedRun(
            line=last.line,
            root=_base(last.root),
            first_step=site.run_from,
            last_step=folded_to,
            same_graph=same,
            first_value=site.first_value,
            last_value=to_value,
            next_in_full=show_last,
            text=text,
        )


def _steps_out(note: str) -> str:
    return _STEP_NAMES.sub("", note)


def _num(x: float) -> str:
    return f"{x:.4g}"
