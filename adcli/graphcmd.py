"""`adcli graph FILE`: run a script quietly, then draw the graph behind one tensor.

Which tensor: `--var NAME` (a tensor, or a list/tuple of tensors, bound to NAME
when the script ends); by default the roots of the last backward()/grad() call
the script made, else the last tensor with a grad_fn that the script assigned
to a variable. Formats: a terminal tree, Graphviz DOT, Mermaid, and SVG drawn
by Graphviz's `dot` program when it is installed. All four are stable from run
to run (node ids in creation order, sorted edges), so they can be golden-tested.

Exit status as `adcli run`: 0 drawn, 1 the script failed (the graph is still
drawn when there is one) or SVG could not be made, 2 usage errors (an unknown
--var, nothing to draw, an unreadable file).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import IO, Any

FORMATS = ("tree", "dot", "mermaid", "svg")

# -o FILE picks the format when --format is not given
_SUFFIXES = {".svg": "svg", ".dot": "dot", ".gv": "dot", ".mmd": "mermaid", ".mermaid": "mermaid"}

INSTALL_HINT = (
    "--format svg needs Graphviz's 'dot' program, which is not installed; install it "
    "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; others: "
    "https://graphviz.org/download/) or write DOT text with --format dot"
)


@dataclass(frozen=True)
class GraphOptions:
    """What `adcli graph` draws and where."""

    var: str | None = None
    format: str | None = None  # None: from the -o suffix, else "tree"
    output: str | None = None  # None: stdout
    full: bool = False  # no folding of long chains in the tree
    debug: bool = False
    display_name: str | None = None


class UsageError(Exception):
    """A problem with the command line (exit status 2)."""


def resolve_format(opts: GraphOptions) -> str:
    """The format to draw in; raises UsageError for an unknown one."""
    fmt = opts.format
    if fmt is None:
        suffix = os.path.splitext(opts.output or "")[1].lower()
        return _SUFFIXES.get(suffix, "tree")
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{opts.format}' (choose tree, dot, mermaid or svg)")
    return fmt


def graph_path(path: str, opts: GraphOptions) -> int:
    """`adcli graph FILE` (`-` reads stdin); returns the exit status."""
    try:
        fmt = resolve_format(opts)
    except UsageError as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    from .runner import ScriptUnreadable, read_script

    try:
        text, name = read_script(path)
    except ScriptUnreadable as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    return graph_text(text, opts.display_name or name, opts, sys.stdout, sys.stderr, fmt=fmt)


def graph_text(
    text: str,
    name: str,
    opts: GraphOptions,
    out: IO[str],
    err: IO[str],
    *,
    fmt: str | None = None,
) -> int:
    """Run script `text` quietly and draw the chosen graph to `out` (or opts.output)."""
    from .errors import format_diagnostic

    if fmt is None:
        try:
            fmt = resolve_format(opts)
        except UsageError as e:
            err.write(f"adcli: error: {e}\n")
            return 2
    session, error, internal = _run(text, name, opts)
    code = 0
    if error is not None:
        err.write(format_diagnostic(error).rstrip("\n") + "\n")
        code = 1
    if internal is not None:
        err.write(f"adcli: internal error: {internal} (run with --debug for the traceback)\n")
        return 1
    try:
        target = _target(session, opts.var)
    except UsageError as e:
        if error is not None and opts.var is None:
            return code  # the script failed before it made a graph: its error says why
        err.write(f"adcli: error: {e}\n")
        return 2
    try:
        drawing = draw(target, fmt, full=opts.full)
    except UsageError as e:
        err.write(f"adcli: error: {e}\n")
        return 1
    if opts.output is None or opts.output == "-":
        out.write(drawing)
        if hasattr(out, "flush"):
            out.flush()
    else:
        try:
            with open(opts.output, "w", encoding="utf-8") as f:
                f.write(drawing)
        except OSError as e:
            err.write(f"adcli: error: cannot write '{opts.output}': {e.strerror or e}\n")
            return 1
    return code


class _Tracker:
    """What the run leaves behind for the default target."""

    def __init__(self) -> None:
        self.last_roots: list[Any] | None = None
        self.last_assigned: Any = None

    def on_event(self, event: Any, span: Any, call_text: str | None) -> None:
        self.last_roots = list(event.roots)


def _run(text: str, name: str, opts: GraphOptions) -> tuple[Any, Any, str | None]:
    from .autograd.tensor import Tensor
    from .session import Hooks, Output, Session, SessionOptions

    tracker = _Tracker()

    class _Session(Session):
        def _on_assign(self, var: str, value: object, span: Any) -> None:
            super()._on_assign(var, value, span)
            if type(value) is Tensor and value._node is not None:
                tracker.last_assigned = value

    def ignore(_: str) -> None:
        return None

    hooks = Hooks(on_event=tracker.on_event)
    session = _Session(Output(ignore, ignore), hooks, SessionOptions(debug=opts.debug))
    session.tracker = tracker  # type: ignore[attr-defined]
    try:
        error, internal = session.run_guarded(text, name, debug=opts.debug)
    finally:
        session.close()
    return session, error, internal


def _tensor_names(variables: dict[str, Any]) -> list[str]:
    from .autograd.tensor import Tensor

    return sorted(k for k, v in variables.items() if isinstance(v, Tensor))


def _target(session: Any, var: str | None) -> Any:
    """The tensor (or tensors) to draw."""
    from .autograd.tensor import Tensor

    variables = session.variables()
    names = _tensor_names(variables)
    listing = (
        f"tensor variables: {', '.join(names)}" if names else "the script has no tensor variables"
    )
    if var is not None:
        if var not in variables:
            raise UsageError(f"the script has no variable '{var}' ({listing})")
        value = variables[var]
        if isinstance(value, Tensor):
            return value
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, Tensor) for v in value):
            return list(value)
        kind = {"Namespace": "module"}.get(type(value).__name__, type(value).__name__)
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise UsageError(f"'{var}' is {article} {kind}, not a tensor ({listing})")
    tracker = session.tracker
    if tracker.last_roots:
        return tracker.last_roots if len(tracker.last_roots) > 1 else tracker.last_roots[0]
    if tracker.last_assigned is not None:
        return tracker.last_assigned
    raise UsageError(
        "nothing to draw: the script made no backward() or grad() call and assigned no tensor "
        f"with a grad_fn; name one with --var ({listing})"
    )


def draw(target: Any, fmt: str, *, full: bool = False) -> str:
    """The drawing of `target` in `fmt`; raises UsageError when SVG cannot be made."""
    from .provenance import label_of
    from .render.tree import graph_dot, graph_mermaid, graph_tree

    if fmt == "tree":
        return graph_tree(target, label_of, full=full)
    if fmt == "mermaid":
        return graph_mermaid(target, label_of)
    dot = graph_dot(target, label_of)
    if fmt == "dot":
        return dot
    return render_svg(dot)


def render_svg(dot_text: str) -> str:
    """SVG drawn by Graphviz's `dot` from DOT text."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError(INSTALL_HINT)
    try:
        done = subprocess.run(
            [exe, "-Tsvg"],
            input=dot_text,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"Graphviz's dot failed: {e}") from e
    if done.returncode != 0:
        msg = done.stderr.strip().splitlines()
        raise UsageError(
            f"Graphviz's dot failed (exit {done.returncode})" + (f": {msg[0]}" if msg else "")
        )
    return done.stdout
