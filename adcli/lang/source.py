"""Script text and positions inside it.

A `Source` is one script (a file or one REPL input); a `Span` is a region of
it. Lines and columns are 1-based and `end_column` is exclusive, as in Lark
and in Python's `ast` (plus one): the span of `y` in `x = y` is
``Span(1, 5, 1, 6)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Source", "Span", "render_caret", "caret_line"]

TAB_SIZE = 8


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a script: 1-based lines and columns, end column exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Source:
    """One script: where it came from (`path`, used in messages) and its text.

    Line endings are normalised to ``\\n`` and a leading byte-order mark is
    dropped, so columns count characters of the visible line.
    """

    path: str
    text: str
    _lines: list[str] = field(init=False, repr=False, compare=False)
    _offsets: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = self.text
        if text.startswith("\ufeff"):
            text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        object.__setattr__(self, "text", text)
        lines = text.split("\n")
        offsets = []
        pos = 0
        for line in lines:
            offsets.append(pos)
            pos += len(line) + 1
        object.__setattr__(self, "_lines", lines)
        object.__setattr__(self, "_offsets", offsets)

    @property
    def line_count(self) -> int:
        """Number of lines (a final newline does not start a new line)."""
        n = len(self._lines)
        return n - 1 if n > 1 and self._lines[-1] == "" else n

    def line_text(self, n: int) -> str:
        """The text of line `n` (1-based) without its newline; "" if out of range."""
        if 1 <= n <= len(self._lines):
            return self._lines[n - 1]
        return ""

    def offset(self, line: int, column: int) -> int:
        """Character offset into `text` of a 1-based line and column (clamped)."""
        if line < 1:
            return 0
        if line > len(self._lines):
            return len(self.text)
        base = self._offsets[line - 1]
        return base + max(0, min(column - 1, len(self._lines[line - 1]) + 1))

    def snippet(self, span: Span) -> str:
        """The exact source text covered by `span`."""
        start = self.offset(span.line, span.column)
        end = self.offset(span.end_line, span.end_column)
        return self.text[start:end]


def _display(line: str, column: int) -> tuple[str, int]:
    """Expand tabs in `line`; return it and the display index of 1-based `column`."""
    if "\t" not in line:
        return line, column - 1
    out: list[str] = []
    width = 0
    display_col = None
    for i, ch in enumerate(line):
        if i == column - 1:
            display_col = width
        piece = " " * (TAB_SIZE - width % TAB_SIZE) if ch == "\t" else ch
        out.append(piece)
        width += len(piece)
    if display_col is None:
        display_col = width + max(0, column - 1 - len(line))
    return "".join(out), display_col


MAX_SHOWN = 100  # longest line shown whole; longer ones are cut around the span


def caret_line(source: Source, span: Span) -> tuple[str, str]:
    """The line of `span.line` (tabs expanded) and a ``^~~~`` marker under the span.

    A span running past its first line is marked to the end of that line; a
    very long line is cut to a window around the span, marked with "...".
    """
    raw = source.line_text(span.line)
    text, start = _display(raw, span.column)
    if span.end_line == span.line:
        end = _display(raw, span.end_column)[1]
    else:
        end = len(text)
    width = max(1, min(end - start, MAX_SHOWN))
    if len(text) > MAX_SHOWN:
        lo = max(0, start - MAX_SHOWN // 3)
        hi = min(len(text), max(start + width, lo + MAX_SHOWN))
        prefix = "..." if lo > 0 else ""
        suffix = "..." if hi < len(text) else ""
        text = prefix + text[lo:hi] + suffix
        start = start - lo + len(prefix)
        width = max(1, min(width, hi - (start - len(prefix) + lo)))
    return text, " " * start + "^" + "~" * (width - 1)


def render_caret(source: Source, span: Span) -> str:
    """Python-style location text::

    File "x.ad", line 3, column 5
      y.backward()
      ^~~~~~~~~~~~
    """
    text, marks = caret_line(source, span)
    stripped = text.lstrip()
    cut = len(text) - len(stripped)
    return (
        f'  File "{source.path}", line {span.line}, column {span.column}\n'
        f"    {stripped}\n"
        f"    {marks[cut:]}"
    )
