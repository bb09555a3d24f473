"""Limits on script text, checked before the parser sees it.

Parsing takes time in proportion to the number of tokens (about 30 µs each), and
some shapes of text make the parser or the compiler work much harder than their
size suggests. So the text is checked first, in linear time: its size, the
length of its lines, how deeply brackets nest, how many indentation levels
blocks use and how long a run of unary operators is. Each check fails with a
`ScriptSyntaxError` of kind "LimitError" pointing where the limit was crossed.
Real scripts are far below every limit. Standard library only.
"""

from __future__ import annotations

import functools
import re
from typing import NoReturn

from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.source import Source, Span

__all__ = [
    "MAX_SCRIPT_CHARS",
    "MAX_LINE_CHARS",
    "MAX_NESTING_LEVELS",
    "MAX_INDENT_LEVELS",
    "check_text",
]

MAX_SCRIPT_CHARS = 1_000_000  # about 1 MB: the longest tutorial is ~30 KB
MAX_LINE_CHARS = 100_000  # room for a pasted data list; a 20,000-term sum is 80,000
MAX_NESTING_LEVELS = 1_500  # brackets, unary operator chains: as build.MAX_NESTING (Python: 200)
MAX_INDENT_LEVELS = 100  # blocks inside blocks (Python's own limit too)

_TAB = 8

# What the nesting scan stops at: strings (skipped whole) and comments always;
# brackets, line starts with their indentation, and runs of two or more unary
# operators (each run matched whole, once) when their counts say they could
# cross a limit. Scripts below every limit by those counts are not scanned.
_PARTS = {
    "strings": "(?P<str3>'''|\"\"\")|(?P<str1>['\"])|(?P<comment>#[^\\n]*)",
    "brackets": r"(?P<open>[(\[{])|(?P<close>[)\]}])",
    "lines": r"(?P<line>\n[ \t\f]*)",
    "unary": r"(?P<unary>(?:[-+~]|\bnot\b)(?:\s*(?:[-+~]|\bnot\b))+)",
}
_OPERATOR = re.compile(r"[-+~]|not")
# A line indented this many characters could be 101 levels deep (a tab is up to 8).
_DEEP_INDENT = re.compile(rf"^[ \t\f]{{{-(-MAX_INDENT_LEVELS // 8) + 1},}}", re.M)


@functools.lru_cache(maxsize=8)
def _scanner(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(_PARTS[p] for p in ("strings", *parts)))


_STRING_END = {
    "'": re.compile(r"(?:[^'\\\n]|\\.|\\\n)*'"),
    '"': re.compile(r'(?:[^"\\\n]|\\.|\\\n)*"'),
    "'''": re.compile(r"(?:[^'\\]|\\.|'(?!''))*'''", re.S),
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""', re.S),
}


def check_text(source: Source, text: str) -> None:
    """Raise ScriptSyntaxError (kind "LimitError") when `text` crosses a limit."""
    if len(text) > MAX_SCRIPT_CHARS:
        _fail(
            source,
            text,
            MAX_SCRIPT_CHARS,
            f"the script is longer than {MAX_SCRIPT_CHARS:,} characters, the limit",
        )
    lengths = list(map(len, text.split("\n")))
    if lengths and max(lengths) > MAX_LINE_CHARS:
        line = next(i for i, n in enumerate(lengths) if n > MAX_LINE_CHARS)
        offset = sum(lengths[:line]) + line + MAX_LINE_CHARS
        _fail(
            source,
            text,
            offset,
            f"line {line + 1} is longer than {MAX_LINE_CHARS:,} characters, the limit",
        )
    _check_nesting(source, text)


def _check_nesting(source: Source, text: str) -> None:
    parts = []
    deep_indent = _DEEP_INDENT.search(text) is not None
    if deep_indent or sum(text.count(c) for c in "([{") > MAX_NESTING_LEVELS:
        parts.append("brackets")  # also to tell blocks from lines inside brackets
    if deep_indent:
        parts.append("lines")
    if sum(text.count(c) for c in "-+~") + text.count("not") > MAX_NESTING_LEVELS:
        parts.append("unary")
    if not parts:
        return
    scan = _scanner(*parts)
    depth = 0
    levels = [0]
    pos = 0
    n = len(text)
    while pos < n:
        m = scan.search(text, pos)
        if m is None:
            return
        kind = m.lastgroup
        pos = m.end()
        if kind in ("str1", "str3"):
            end = _STRING_END[m.group()].match(text, pos)
            if end is None:
                return  # an unterminated string: the parser says where
            pos = end.end()
        elif kind == "open":
            depth += 1
            if depth > MAX_NESTING_LEVELS:
                _fail(
                    source,
                    text,
                    m.start(),
                    f"too many nested parentheses (the limit is {MAX_NESTING_LEVELS} levels)",
                )
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "line":
            if depth or (m.start() > 0 and text[m.start() - 1] == "\\"):
                continue  # inside brackets, or a continuation line: not a block
            following = text[pos : pos + 1]
            if following in ("", "\n", "#", "\r"):
                continue  # a blank or comment-only line
            width = _indent_width(m.group()[1:])
            if width > levels[-1]:
                levels.append(width)
                if len(levels) - 1 > MAX_INDENT_LEVELS:
                    _fail(
                        source,
                        text,
                        m.start() + 1,
                        f"too many levels of indentation (the limit is {MAX_INDENT_LEVELS})",
                    )
            else:
                while len(levels) > 1 and width < levels[-1]:
                    levels.pop()
        elif (
            kind == "unary"
            and len(m.group()) > MAX_NESTING_LEVELS
            and len(_OPERATOR.findall(m.group())) > MAX_NESTING_LEVELS
        ):
            _fail(
                source,
                text,
                m.start(),
                f"too many nested unary operators (the limit is {MAX_NESTING_LEVELS})",
            )


def _indent_width(s: str) -> int:
    width = 0
    for ch in s:
        width = width + _TAB - width % _TAB if ch == "\t" else width + 1
    return width


def _fail(source: Source, text: str, offset: int, message: str) -> NoReturn:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    raise ScriptSyntaxError(
        message, Span(line, column, line, column + 1), source, kind="LimitError"
    )
