"""`adcli run`: run a script file, print its output and reports, or one JSON object.

`run_path` writes to the real stdout/stderr; `capture` returns what a pipe would
receive (stdout and stderr interleaved), for the golden tests.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

from adcli.core.allocator import keep_freed_memory
from adcli.core.options import RunOptions
from adcli.lang.errors import SCRIPT_ERROR, AdError, format_diagnostic

__all__ = [
    "RunOptions",
    "run_path",
    "capture",
    "run_text",
    "run_streams",
    "run_isolated",
    "run_in_child",
]


class _Streams:
    """The two output channels of a run, each a text stream."""

    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self.out = out
        self.err = err


class _OutputClosed(BaseException):
    """The reader of our output went away (`adcli run x.ad | head`). A BaseException
    so that no script `try`/`except Exception` and no error wrapping catches it."""


class _PipeGuard:
    """A text stream whose BrokenPipeError ends the run quietly, as Python tools do."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, s: str) -> int:
        try:
            return self._stream.write(s)
        except BrokenPipeError:
            raise _OutputClosed from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise _OutputClosed from None

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding ... for rich
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's own final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class ScriptUnreadable(Exception):
    """A script file (or stdin) that cannot be read as UTF-8 text; the message says why."""


def read_script(path: str) -> tuple[str, str]:
    """The script text at `path` (`-` for stdin) and the name messages use for it."""
    from adcli.lang.limits import MAX_SCRIPT_CHARS

    # No more than the parser accepts (plus one character, so it can say so).
    try:
        if path == "-":
            return sys.stdin.read(MAX_SCRIPT_CHARS + 1), "<stdin>"
        with open(path, encoding="utf-8") as f:
            return f.read(MAX_SCRIPT_CHARS + 1), path
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ScriptUnreadable(f"cannot read '{path}': {reason}") from None


def run_path(path: str, options: RunOptions) -> int:
    """Run the script at `path` (`-` for stdin); returns the exit status.

    The script runs in a child process under `options.timeout`/`options.max_memory`
    (see `adcli.core.isolation`), unless `options.in_process` or the platform cannot fork.
    """
    try:
        text, name = read_script(path)
    except ScriptUnreadable as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    name = options.display_name or name
    from adcli.core import isolation

    if options.in_process or not isolation.available():
        return _run_here(text, name, options, sys.stdout, sys.stderr)
    return run_isolated(text, name, options, sys.stdout, sys.stderr)


def run_isolated(text: str, name: str, options: RunOptions, out: IO[str], err: IO[str]) -> int:
    """Run script `text` in a child process with the options' budgets, writing to
    `out`/`err` (inherited by the child when they are real files, else relayed).
    A budget that runs out, or a crash, ends in one `adcli: error:` line and exit 1."""
    from dataclasses import replace

    from adcli.core import isolation

    # The parent's terminal decides colour and width; the child may not see it.
    width = options.width
    if width is None and _isatty(out):
        width = options.resolve_width(out)
    options = replace(options, color=options.use_color(out), width=width)

    def body(child_out: IO[str], child_err: IO[str]) -> int:
        code, out_of_memory = run_streams(text, name, options, child_out, child_err)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    def json_error(message: str) -> None:
        from adcli.render.jsonout import dumps

        error = {"kind": "LimitError", "message": message, "line": None, "column": None}
        error["notes"] = []
        obj = {"ok": False, "stdout": "", "variables": {}, "events": [], "warnings": []}
        obj["error"] = error
        _write_safely(out, dumps(obj) + "\n")

    return run_in_child(
        body,
        options.timeout,
        options.max_memory,
        out,
        err,
        debug=options.debug,
        before_stop=json_error if options.json else None,
    )


def run_in_child(
    body: Callable[[IO[str], IO[str]], int],
    timeout: float,
    max_memory: int,
    out: IO[str],
    err: IO[str],
    *,
    debug: bool = False,
    before_stop: Callable[[str], None] | None = None,
) -> int:
    """Run `body(out, err)` (returning an exit status, or `isolation.EXIT_OUT_OF_MEMORY`)
    in a child process with these budgets (0: none) and return its exit status; what
    `adcli run`, `graph` and `check` share. The child writes to `out`/`err` directly
    when they are this process's real stdout and stderr, else through the parent.
    A budget that runs out, or a crash, ends in one `adcli: error:` line and exit 1
    (`before_stop(message)` first, for --json's object)."""
    from adcli.core import isolation

    budget = isolation.Budget(timeout=timeout or None, max_memory=max_memory or None)
    direct = (
        out is sys.stdout and err is sys.stderr and isolation.has_fd(out) and isolation.has_fd(err)
    )
    result = isolation.run_isolated(
        body,
        budget,
        mode="inherit" if direct else "relay",
        out=out,
        err=err,
        debug=debug,
        prepare=_preload,
    )
    if result.reason is None or result.message is None:
        return result.code
    if before_stop is not None:
        before_stop(result.message)
    _write_safely(err, f"adcli: error: {result.message}\n")
    return result.code


def _write_safely(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _preload() -> None:
    """Import the engine before the child's memory budget is set (see isolation)."""
    from adcli.core import session  # noqa: F401 - NumPy, Lark, the engine


def _run_here(text: str, name: str, options: RunOptions, out: IO[str], err: IO[str]) -> int:
    """Run script `text` in this process (no budgets)."""
    return run_streams(text, name, options, out, err)[0]


def run_streams(
    text: str, name: str, options: RunOptions, out: IO[str], err: IO[str]
) -> tuple[int, bool]:
    """Run `text` to the given streams, ending quietly when the reader goes away;
    (exit status, whether it ran out of memory). The C stack gets room for values
    nested millions deep while it runs (`isolation.deep_stack`)."""
    from adcli.core.isolation import deep_stack

    streams = _Streams(_PipeGuard(out), _PipeGuard(err))  # type: ignore[arg-type]
    try:
        with deep_stack():
            return _run(text, name, options, streams)
    except _OutputClosed:
        _silence_stdout()
        return SCRIPT_ERROR, False


def capture(path: str, options: RunOptions) -> tuple[str, int]:
    """Run `path` and return (everything a pipe would receive, exit status)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    buf = io.StringIO()
    code = run_text(text, options.display_name or path, options, _Streams(buf, buf))
    return buf.getvalue(), code


def run_text(text: str, name: str, options: RunOptions, streams: _Streams) -> int:
    """Run script `text` (called `name` in messages) writing to `streams`, in this process."""
    return _run(text, name, options, streams)[0]


def _run(text: str, name: str, options: RunOptions, streams: _Streams) -> tuple[int, bool]:
    """`run_text`, and whether the script failed for lack of memory."""
    from adcli.autograd import engine
    from adcli.core.session import Hooks, Output, Session, SessionOptions

    json_mode = options.json
    stdout_parts: list[str] = []
    collected = _json_collector(options)  # --json: events and warnings, folded as the text
    reporter = _Reporter(options, streams) if not (options.quiet or json_mode) else None
    html = _html_collector(options, name, text)  # --html FILE: every report on one page
    # adcli.symbolic: formulas, for --symbolic and for scripts that call formula()
    tracker = None
    if options.symbolic or "formula" in text:
        from adcli.symbolic import Tracker

        tracker = Tracker(eager=options.symbolic and reporter is not None, call=options.call)

    def out(s: str) -> None:
        if html is not None:
            html.write_output(s)
        if json_mode:
            stdout_parts.append(s)
        else:
            streams.out.write(s)

    def err(s: str) -> None:
        if not json_mode:
            if streams.err is not streams.out:
                streams.out.flush()  # keep the order a terminal would show
            streams.err.write(s)

    def on_event(event: Any, span: Any, call_text: str | None) -> None:
        line = span.line if span is not None else None
        if tracker is not None:
            tracker.on_event(event)
        if collected is not None:
            from adcli.render.report import build_report

            report = build_report(event, line=line, call_text=call_text, full=options.full)
            collected.event(report, _root_value(event))
        elif reporter is not None:
            reporter.event(event, line, call_text, tracker if options.symbolic else None)
        if html is not None:
            html.event(event, line, call_text, tracker)

    def on_show(tensors: list[Any], span: Any) -> None:
        if reporter is not None:
            reporter.show(tensors, span, session)
        if collected is not None:
            collected.show(_show_report(tensors, span, session, options.full))
        if html is not None:
            line = span.line if span is not None else None
            source = session.source
            text = source.line_text(line).strip() if line and source is not None else None
            html.show(tensors, line, text)

    def on_graph(t: Any, span: Any) -> None:
        from adcli.provenance import label_of
        from adcli.render.tree import graph_tree

        out(graph_tree(t, label_of).rstrip("\n") + "\n")

    def on_formula(t: Any, span: Any) -> None:
        nonlocal tracker
        if tracker is None:  # formula() reached without the word in the text: record from now
            from adcli.symbolic import Tracker

            tracker = Tracker()
        out(tracker.formula_text(t) + "\n")

    hooks = Hooks(on_event=on_event, on_show=on_show, on_graph=on_graph, on_formula=on_formula)
    sess_opts = SessionOptions(
        max_steps=options.max_steps,
        max_depth=options.max_depth,
        max_numel=options.max_numel,
        max_tensor_memory=options.max_tensor_memory,
        debug=options.debug,
    )
    session = Session(Output(out, err), hooks, sess_opts)
    # A quiet run reads no per-node trace; graphs have no reference cycles, so the
    # cyclic collector only slows graph building down: run it rarely.
    engine.record_trace = not (options.quiet and not json_mode) or html is not None
    gc_thresholds = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    keep_freed_memory()
    try:
        error, internal = session.run_guarded(text, name, debug=options.debug)
        if internal is not None:  # an adcli bug, not a script error
            err(f"adcli: internal error: {internal} (run with --debug for the traceback)\n")
            if json_mode:
                _write_internal_error(session, internal, streams, stdout_parts, collected)
            session.dispose()
            return SCRIPT_ERROR, out_of_memory(None, internal)
    finally:
        gc.set_threshold(*gc_thresholds)
        engine.record_trace = True
        if reporter is not None:
            reporter.flush()
        if collected is not None:
            collected.finish()
        if tracker is not None:
            tracker.close()
    session.close()
    page_failed = False  # --html FILE could not be written: exit 1 after the output
    if html is not None:
        problem = html.finish(options.html, format_diagnostic(error) if error else None)
        if problem is not None:
            err(f"adcli: error: {problem}\n")
            page_failed = True
    try:
        code = _finish(session, error, options, streams, stdout_parts, collected)
        return (SCRIPT_ERROR if page_failed else code), out_of_memory(error, None)
    finally:
        session.dispose()


def out_of_memory(error: AdError | None, internal: str | None) -> bool:
    """Whether a run that ended with `error` (or adcli's own failure `internal`, the
    name and message of the exception) failed for lack of memory: the budget, not
    one of adcli's size limits."""
    if internal is not None:
        return internal == "MemoryError" or "_ArrayMemoryError" in internal
    return error is not None and _out_of_memory(getattr(error, "original", None))


def _out_of_memory(exc: BaseException | None) -> bool:
    """Whether `exc` is an allocation that failed (the memory budget), as opposed to
    one of adcli's own size limits, which raise a MemoryError that says which."""
    if not isinstance(exc, MemoryError):
        return False
    return type(exc) is not MemoryError or not exc.args  # NumPy's, or the interpreter's


def _finish(
    session: Any,
    error: AdError | None,
    options: RunOptions,
    streams: _Streams,
    stdout_parts: list[str],
    collected: Any,
) -> int:
    """Write the JSON object or the diagnostic; the exit status."""
    if collected is not None:
        notes = _error_notes(session, error) if error is not None else []
        obj = _json_object(session, collected, stdout_parts, options.full)
        obj["ok"] = error is None
        obj["error"] = _error_json(error, notes) if error is not None else None
        _write_json(streams, obj)
        return SCRIPT_ERROR if error is not None else 0
    if error is not None:
        if options.debug and getattr(error, "original", None) is not None:
            traceback.print_exception(error.original, file=streams.err)
        if hasattr(streams.out, "flush"):
            streams.out.flush()
        streams.err.write(format_diagnostic(error).rstrip("\n") + "\n")
        for note in error.notes or session.explain(getattr(error, "original", None)):
            streams.err.write(f"note: {note}\n")
        return SCRIPT_ERROR
    return 0


def _html_collector(options: RunOptions, name: str, text: str) -> Any:
    """The gatherer of reports for `--html FILE` (None without the option)."""
    if options.html is None:
        return None
    from adcli.render.html import HtmlCollector

    return HtmlCollector(
        name, text, fold=not options.all_reports, every=options.report_every, full=options.full
    )


def _error_json(e: AdError, notes: list[str] | None = None) -> dict[str, Any]:
    span = e.span
    return {
        "kind": e.kind,
        "message": e.message,
        "line": span.line if span is not None else None,
        "column": span.column if span is not None else None,
        "notes": list(notes or []),  # the `note:` lines the text prints under the error
    }


def _json_collector(options: RunOptions) -> Any:
    """--json: the gatherer of events and warnings (None without the option)."""
    if not options.json:
        return None
    from adcli.render.jsonout import JsonCollector

    return JsonCollector(
        fold=not options.all_reports, every=options.report_every, full=options.full
    )


def _json_object(
    session: Any, collected: Any, stdout_parts: list[str], full: bool
) -> dict[str, Any]:
    """SPEC §5's object, `ok` and `error` still to fill in (keys in the documented order)."""
    from adcli.render.jsonout import VARIABLE_LIMIT, value_to_json

    limit = None if full else VARIABLE_LIMIT
    return {
        "ok": None,
        "stdout": "".join(stdout_parts),
        "variables": {k: value_to_json(v, limit=limit) for k, v in session.variables().items()},
        "events": collected.events,
        "warnings": _warnings_json(session),
        "error": None,
    }


def _warnings_json(session: Any) -> list[dict[str, Any]]:
    """The UserWarnings the text printed to stderr, with their notes."""
    from adcli.render.jsonout import warning_to_json

    source = session.source
    out = []
    for w in getattr(session, "warnings", []):
        code = source.line_text(w.line).strip() if source is not None and w.line else ""
        out.append(warning_to_json(w.message, w.line or 0, code, list(w.notes)))
    return out


def _error_notes(session: Any, error: AdError) -> list[str]:
    """The `note:` lines the text prints under an error."""
    notes = getattr(error, "notes", None)
    if isinstance(notes, list):
        return [str(n) for n in notes]
    return session.explain(getattr(error, "original", None))


def _write_json(streams: _Streams, obj: dict[str, Any]) -> None:
    from adcli.render.jsonout import dumps

    streams.out.write(dumps(obj) + "\n")


def _write_internal_error(
    session: Any, internal: str, streams: _Streams, stdout_parts: list[str], collected: Any
) -> None:
    """--json after an adcli bug: still one object, with the bug as the error."""
    collected.finish()
    obj = _json_object(session, collected, stdout_parts, False)
    obj["ok"] = False
    message = f"{internal} (run with --debug for the traceback)"
    obj["error"] = {"kind": "InternalError", "message": message, "line": None, "column": None}
    obj["error"]["notes"] = []
    _write_json(streams, obj)


def _root_value(event: Any) -> float | None:
    """The root's value when the pass has one root of one element (for fold lines)."""
    roots = event.roots
    if len(roots) == 1 and roots[0].numel() == 1:
        return float(roots[0].data_.flat[0])
    return None


def _show_report(tensors: list[Any], span: Any, session: Any, full: bool) -> Any:
    """The report of a `show(...)` call."""
    from adcli.render.report import build_show_report

    line = span.line if span is not None else None
    text = None
    if span is not None and session.source is not None:
        text = session.source.line_text(span.line).strip()
    return build_show_report(tensors, line=line, call_text=text, full=full)


class _Reporter:
    """Renders reports to the output stream through one rich console."""

    def __init__(self, options: RunOptions, streams: _Streams) -> None:
        self.options = options
        self.streams = streams
        self._console = None
        self._folder: Any = None
        # --symbolic: per call site, its latest report and what fills in its formulas
        # (run only if the report is printed: folded ones never are)
        self._formulas: dict[Any, tuple[Any, Any]] = {}

    def console(self) -> Any:
        if self._console is None:
            from adcli.render.tables import make_console

            color = self.options.use_color(self.streams.out)
            width = self.options.width
            if width is None:
                width = self.options.resolve_width(self.streams.out)
            self._console = make_console(self.streams.out, width=width, color=color)
        return self._console

    def event(
        self, event: Any, line: int | None, call_text: str | None, tracker: Any = None
    ) -> None:
        from adcli.render.report import build_report

        report = build_report(event, line=line, call_text=call_text, full=self.options.full)
        if tracker is not None:  # --symbolic: formula columns
            self._formulas[(report.line, report.call)] = (report, tracker.annotator(report, event))
        self.folder().add(report, _root_value(event))

    def _prepare(self, report: Any) -> None:
        got = self._formulas.pop((report.line, report.call), None)
        if got is not None and got[0] is report:
            got[1]()

    def folder(self) -> Any:
        if self._folder is None:
            from adcli.render.folding import ReportFolder
            from adcli.render.tables import render_report

            console = self.console()
            self._folder = ReportFolder(
                lambda report: render_report(report, console),
                lambda text: console.print(text, style="dim", markup=False, highlight=False),
                fold=not self.options.all_reports,
                every=self.options.report_every,
                prepare=self._prepare,
            )
        return self._folder

    def show(self, tensors: list[Any], span: Any, session: Any) -> None:
        from adcli.render.tables import render_report

        render_report(_show_report(tensors, span, session, self.options.full), self.console())

    def flush(self) -> None:
        if self._folder is not None:
            self._folder.finish()
        if hasattr(self.streams.out, "flush"):
            self.streams.out.flush()
