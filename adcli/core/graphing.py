"""`adcli graph FILE`: run a script quietly, then draw the graph behind one tensor.

Which tensor: `--var NAME` (a tensor, or a list/tuple of tensors, bound to NAME
when the script ends); by default the roots of the last backward()/grad() call
the script made, else the last tensor with a grad_fn that the script assigned
to a variable. Every node is labelled with its value and gradient, as
micrograd's draw_dot does (the shape and norms for big tensors). Formats: a
terminal tree, Graphviz DOT, Mermaid, and SVG, PNG or PDF drawn by Graphviz's
`dot` program when it is installed (never text in a file named like an image).
The text formats are stable from run to run (node ids in creation order, sorted
edges), so they can be golden-tested.

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

FORMATS = ("tree", "dot", "mermaid", "svg", "png", "pdf")
#: formats drawn by Graphviz's dot; png and pdf are binary
IMAGE_FORMATS = ("svg", "png", "pdf")

# -o FILE picks the format when --format is not given
_SUFFIXES = {
    ".svg": "svg",
    ".png": "png",
    ".pdf": "pdf",
    ".dot": "dot",
    ".gv": "dot",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
}
# image files adcli cannot draw: refused rather than filled with text
_OTHER_IMAGES = (".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff", ".eps", ".ps")

INSTALL_HINT = (
    "drawing SVG, PNG or PDF needs Graphviz's 'dot' program, which is not installed; "
    "install it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
    "others: https://graphviz.org/download/) or write DOT text with --format dot"
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
    force: bool = False  # overwrite an existing output file (never through a symbolic link)
    # `graph_path` runs the script in a child process with the budgets of `adcli run`
    # (wall-clock seconds, bytes of memory; 0 or None: no limit), or here with `in_process`
    timeout: float | None = 60.0
    max_memory: int | None = 4 * 1024**3
    in_process: bool = False


class UsageError(Exception):
    """A problem with the command line (exit status 2)."""


def resolve_format(opts: GraphOptions) -> str:
    """The format to draw in; raises UsageError for an unknown one, and for text
    (tree, DOT, Mermaid) or an image format into a file named as another image."""
    suffix = os.path.splitext(opts.output or "")[1].lower() if opts.output != "-" else ""
    if suffix in _OTHER_IMAGES:
        raise UsageError(f"cannot draw '{opts.output}': adcli draws images as .svg, .png or .pdf")
    fmt = opts.format
    if fmt is None:
        return _SUFFIXES.get(suffix, "tree")
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise UsageError(
            f"unknown format '{opts.format}' (choose tree, dot, mermaid, svg, png or pdf)"
        )
    named = _SUFFIXES.get(suffix)
    if named in IMAGE_FORMATS and named != fmt:
        raise UsageError(
            f"--format {fmt} does not write {'an' if named == 'svg' else 'a'} "
            f"{named.upper()} image; "
            f"name the file .{fmt if fmt in IMAGE_FORMATS else 'txt'} or use --format {named}"
        )
    return fmt


def graph_path(path: str, opts: GraphOptions) -> int:
    """`adcli graph FILE` (`-` reads stdin); returns the exit status."""
    try:
        fmt = resolve_format(opts)
    except UsageError as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    problem = output_problem(opts)
    if problem is not None:
        sys.stderr.write(f"adcli: error: {problem}\n")
        return 2
    from adcli.core.runner import ScriptUnreadable, read_script

    try:
        text, name = read_script(path)
    except ScriptUnreadable as e:
        sys.stderr.write(f"adcli: error: {e}\n")
        return 2
    name = opts.display_name or name
    from adcli.core import isolation

    if opts.in_process or not isolation.available():
        return graph_text(text, name, opts, sys.stdout, sys.stderr, fmt=fmt)
    from adcli.core.runner import run_in_child

    def body(out: IO[str], err: IO[str]) -> int:
        code, out_of_memory = _graph_text(text, name, opts, out, err, fmt)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    timeout, memory = opts.timeout or 0, opts.max_memory or 0
    return run_in_child(body, timeout, memory, sys.stdout, sys.stderr, debug=opts.debug)


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
    if fmt is None:
        try:
            fmt = resolve_format(opts)
        except UsageError as e:
            err.write(f"adcli: error: {e}\n")
            return 2
    return _graph_text(text, name, opts, out, err, fmt)[0]


def _graph_text(
    text: str, name: str, opts: GraphOptions, out: IO[str], err: IO[str], fmt: str
) -> tuple[int, bool]:
    """`graph_text`, and whether the script failed for lack of memory (the budget)."""
    from adcli.core.runner import out_of_memory
    from adcli.lang.errors import format_diagnostic

    session, error, internal = _run(text, name, opts)
    code = 0
    if error is not None:
        err.write(format_diagnostic(error).rstrip("\n") + "\n")
        code = 1
    if internal is not None:
        err.write(f"adcli: internal error: {internal} (run with --debug for the traceback)\n")
        return 1, out_of_memory(error, internal)
    return _draw_target(session, error, code, opts, out, err, fmt), out_of_memory(error, None)


def _draw_target(
    session: Any, error: Any, code: int, opts: GraphOptions, out: IO[str], err: IO[str], fmt: str
) -> int:
    """Draw the graph the options name after the run; the exit status."""
    try:
        target = _target(session, opts.var)
    except UsageError as e:
        if error is not None and opts.var is None:
            return code  # the script failed before it made a graph: its error says why
        err.write(f"adcli: error: {e}\n")
        return 2
    try:
        drawing = draw(target, fmt, full=opts.full, values=session.tracker.values())
    except UsageError as e:
        err.write(f"adcli: error: {e}\n")
        return 1
    if opts.output is None or opts.output == "-":
        if isinstance(drawing, bytes):
            return _write_binary(drawing, fmt, out, err)
        out.write(drawing)
        if hasattr(out, "flush"):
            out.flush()
    else:
        from adcli.safefiles import Refused, write_file

        try:  # text, or PNG and PDF bytes; never through a symbolic link
            write_file(opts.output, drawing, overwrite=opts.force)
        except Refused as e:
            err.write(f"adcli: error: {e}\n")
            return 1
        except FileExistsError:
            err.write(f"adcli: error: {_exists(opts.output)}\n")
            return 1
        except OSError as e:
            err.write(f"adcli: error: cannot write '{opts.output}': {e.strerror or e}\n")
            return 1
    return code


def _exists(path: str) -> str:
    return f"'{path}' exists; use --force to overwrite it"


def output_problem(opts: GraphOptions) -> str | None:
    """Why `-o` cannot be written, checked before the script runs (None: it can)."""
    if opts.output is None or opts.output == "-":
        return None
    from adcli.safefiles import link_problem

    problem = link_problem(opts.output)
    if problem is not None:
        return problem
    if os.path.lexists(opts.output) and not opts.force:
        return _exists(opts.output)
    return None


def _write_binary(data: bytes, fmt: str, out: IO[str], err: IO[str]) -> int:
    """PNG or PDF to standard output: only into a pipe or file, never a terminal."""
    buffer = getattr(out, "buffer", None)
    isatty = getattr(out, "isatty", None)
    if buffer is None or (isatty is not None and isatty()):
        err.write(
            f"adcli: error: --format {fmt} is binary and is not written to a terminal; "
            f"write it to a file with -o FILE.{fmt}\n"
        )
        return 2
    out.flush()
    buffer.write(data)
    buffer.flush()
    return 0


class _Tracker:
    """What the run leaves behind for the default target and the labels."""

    def __init__(self) -> None:
        self.last_roots: list[Any] | None = None
        self.last_assigned: Any = None
        # the gradients that flowed into each node in the last backward pass
        self.flowed: dict[Any, Any] = {}
        self.ran = False

    def on_event(self, event: Any, span: Any, call_text: str | None) -> None:
        self.last_roots = list(event.roots)
        self.flowed = {e.node: e.grads for e in event.entries}
        self.ran = True

    def values(self) -> Any:
        """The labels' values and gradients (render.tree.Values)."""
        from adcli.render.tree import Values

        return Values(self.flowed, self.ran)


def _run(text: str, name: str, opts: GraphOptions) -> tuple[Any, Any, str | None]:
    from adcli.autograd.tensor import Tensor
    from adcli.core.session import Hooks, Output, Session, SessionOptions

    tracker = _Tracker()

    class _Session(Session):
        def _on_assign(self, var: str, value: object, span: Any) -> None:
            super()._on_assign(var, value, span)
            if type(value) is Tensor and value._node is not None:
                tracker.last_assigned = value

    def ignore(_: str) -> None:
        return None

    from adcli.core.isolation import deep_stack

    hooks = Hooks(on_event=tracker.on_event)
    session = _Session(Output(ignore, ignore), hooks, SessionOptions(debug=opts.debug))
    session.tracker = tracker  # type: ignore[attr-defined]
    try:
        with deep_stack():  # room for values nested millions deep, as `adcli run`
            error, internal = session.run_guarded(text, name, debug=opts.debug)
    finally:
        session.close()
    return session, error, internal


def _tensor_names(variables: dict[str, Any]) -> list[str]:
    from adcli.autograd.tensor import Tensor

    return sorted(k for k, v in variables.items() if isinstance(v, Tensor))


def _target(session: Any, var: str | None) -> Any:
    """The tensor (or tensors) to draw."""
    from adcli.autograd.tensor import Tensor

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


def draw(target: Any, fmt: str, *, full: bool = False, values: Any = None) -> str | bytes:
    """The drawing of `target` in `fmt` (bytes for PNG and PDF), its nodes labelled with
    `values` (render.tree.Values) when given; raises UsageError when dot is missing."""
    from adcli.provenance import label_of
    from adcli.render.tree import graph_dot, graph_mermaid, graph_tree

    if fmt == "tree":
        return graph_tree(target, label_of, full=full, values=values)
    if fmt == "mermaid":
        return graph_mermaid(target, label_of, values)
    dot = graph_dot(target, label_of, values)
    if fmt == "dot":
        return dot
    image = render_image(dot, fmt)
    return image.decode("utf-8") if fmt == "svg" else image


def render_svg(dot_text: str) -> str:
    """SVG drawn by Graphviz's `dot` from DOT text."""
    return render_image(dot_text, "svg").decode("utf-8")


def render_image(dot_text: str, fmt: str) -> bytes:
    """The image (`svg`, `png` or `pdf`) Graphviz's `dot` draws from DOT text."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError(INSTALL_HINT)
    try:
        done = subprocess.run(
            [exe, f"-T{fmt}"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"Graphviz's dot failed: {e}") from e
    if done.returncode != 0 or not done.stdout:
        msg = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(
            f"Graphviz's dot failed (exit {done.returncode})" + (f": {msg[0]}" if msg else "")
        )
    return done.stdout
