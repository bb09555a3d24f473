"""Errors a script can cause, their user-facing text, and exit codes.

Every problem with a script becomes an `AdError`: `ScriptSyntaxError` from the
parser, `ScriptRuntimeError` from the evaluator (whatever Python exception the
host library raised underneath). `format_diagnostic` renders either as
compact, plain text::

    x.ad:3:5: error: RuntimeError: grad can be implicitly created only for scalar outputs
      3 | y.backward()
        | ^~~~~~~~~~~~
"""

from __future__ import annotations

from typing import Any, NamedTuple

from adcli.lang.source import Source, Span, caret_line

__all__ = [
    "OK",
    "SCRIPT_ERROR",
    "USAGE_ERROR",
    "AdError",
    "ScriptSyntaxError",
    "ScriptRuntimeError",
    "LimitError",
    "SandboxError",
    "TraceEntry",
    "format_diagnostic",
]

# Exit codes (SPEC section 4).
OK = 0
SCRIPT_ERROR = 1
USAGE_ERROR = 2


class AdError(Exception):
    """Base of every error about a script.

    `message` is the sentence shown to the user, `kind` a Python-like class
    name ("SyntaxError", "RuntimeError", ...), `span`/`source` where it
    happened (either may be None until the evaluator fills them in).
    `notes` are adcli's `note:` lines after PyTorch's sentence (see adcli.core.hints),
    filled in by the session that ran the script.
    """

    kind: str = "Error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        source: Source | None = None,
        *,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.notes: list[str] = []
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message


class ScriptSyntaxError(AdError):
    """The script does not parse (or uses syntax adcli refuses)."""

    kind = "SyntaxError"


class TraceEntry(NamedTuple):
    """One script frame of a runtime traceback: function name and position."""

    name: str
    span: Span
    source: Source | None


class ScriptRuntimeError(AdError):
    """An error while running a script.

    `kind` is the Python exception class name underneath ("TypeError",
    "ZeroDivisionError", "NameError", ...) or "LimitError"/"SandboxError".
    `traceback` lists script frames, outermost first; its last entry is where
    the error happened. `original` is the Python exception that was raised
    (None for errors adcli makes itself); `catchable` is False for limits,
    sandbox refusals and interrupts, which a script's `try` cannot catch.
    """

    kind = "RuntimeError"

    def __init__(
        self,
        *args: Any,
        traceback: list[TraceEntry] | None = None,
        original: BaseException | None = None,
        catchable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)  # message, span, source, kind: as AdError
        self.traceback: list[TraceEntry] = traceback if traceback is not None else []
        self.original = original
        self.catchable = catchable


class LimitError(AdError):
    """Raised by the evaluator or the host when a resource limit is exceeded.

    The evaluator turns it into an uncatchable `ScriptRuntimeError` of kind
    "LimitError" at the expression that caused it.
    """

    kind = "LimitError"


class SandboxError(AdError):
    """Raised when a script reaches for something scripts may not use."""

    kind = "SandboxError"


def _location(source: Source | None, span: Span | None) -> str:
    path = source.path if source is not None else "<script>"
    if span is None:
        return path
    return f"{path}:{span.line}:{span.column}"


def _quote(source: Source, span: Span) -> list[str]:
    text, marks = caret_line(source, span)
    number = str(span.line)
    pad = " " * len(number)
    return [f"  {number} | {text}".rstrip(), f"  {pad} | {marks}"]


TRACE_KEEP = 4  # traceback entries shown at each end of a long traceback


def format_diagnostic(err: AdError) -> str:
    """The text a user sees for `err`: location, kind, message, the line and a caret.

    A runtime error raised inside script functions also lists the calls that
    led there, most recent last, like Python's traceback.
    """
    message = err.message.strip("\n")
    head = f"{err.kind}: {message}" if message else err.kind
    lines = [f"{_location(err.source, err.span)}: error: {head}"]
    if err.source is not None and err.span is not None:
        lines += _quote(err.source, err.span)
    trace = getattr(err, "traceback", None) or []
    if len(trace) > 1:
        lines.append("traceback (most recent call last):")
        shown = list(trace)
        hidden = 0
        if len(shown) > 2 * TRACE_KEEP:
            hidden = len(shown) - 2 * TRACE_KEEP
            shown = shown[:TRACE_KEEP] + [None] + shown[-TRACE_KEEP:]  # type: ignore[list-item]
        for entry in shown:
            if entry is None:
                lines.append(f"  ... {hidden} more calls ...")
                continue
            where = _location(entry.source, entry.span)
            code = ""
            if entry.source is not None:
                code = entry.source.line_text(entry.span.line).strip()
                if len(code) > 80:
                    code = code[:77] + "..."
            lines.append(f"  {where} in {entry.name}: {code}".rstrip())
    return "\n".join(lines)
