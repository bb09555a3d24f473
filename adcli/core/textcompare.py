"""How `adcli test` compares a script's output with the expected text, and the
short diff it shows when they differ.

Two ways to compare:

- exactly, line for line (the default);
- with a tolerance (`--tolerance 1e-4`): both texts are cut into tokens
  (numbers, words, other characters and line ends; spaces and tabs only
  separate tokens, since PyTorch pads the numbers of a tensor to a common
  width). A number with a decimal point or an exponent (`0.7310`, `27.`,
  `1.0000e-08`, inside `tensor([...])` too) matches one within the relative
  tolerance (`math.isclose`, plus an optional absolute one for numbers near 0);
  integers (`3`, line numbers, `[exit 0]`), words (`nan`, `MulBackward0`,
  `float32`) and everything else must be equal.

The diff is unified (`---`/`+++`, `@@` hunks, two lines of context), with a
hunk header that says how many equal lines it skipped, and at most
`MAX_DIFF_LINES` lines of changes: a learner's script that prints something
else entirely gives a short failure, not thousands of lines.

Standard library only.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "Tolerance",
    "Difference",
    "tokens",
    "texts_match",
    "first_difference",
    "short_diff",
]

CONTEXT = 2  # equal lines shown around each change
MAX_DIFF_LINES = 40  # lines of a diff after its two header lines

# A number: digits with an optional fraction and exponent (`27.`, `.5`, `1e-08`).
# Words first, so that `x1`, `float32` and `MulBackward0` stay whole.
_TOKEN = re.compile(
    r"(?P<word>[^\W\d]\w*)"
    r"|(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<space>[^\S\n]+)"
    r"|(?P<other>.)",
    re.DOTALL,
)
# After these a `-` is an operator, not a sign: `x-1`, `f(2)-1`, `a[0]-1`.
_OPERANDS = ("word", "num", ")", "]")


@dataclass(frozen=True)
class Tolerance:
    """How close two decimal numbers must be to match (see `math.isclose`)."""

    rel: float = 0.0
    abs: float = 0.0

    def close(self, a: str, b: str) -> bool:
        """Whether number tokens `a` and `b` match: integers exactly, decimals within."""
        if a == b:
            return True
        if _is_integer(a) or _is_integer(b):
            return False
        return math.isclose(float(a), float(b), rel_tol=self.rel, abs_tol=self.abs)


def _is_integer(token: str) -> bool:
    return token.lstrip("-").isdigit()


Token = tuple[str, str]  # (kind, text): kind is "num", "word", "nl" or the character


def tokens(text: str) -> list[Token]:
    """`text` cut into tokens; a `-` before a number becomes its sign unless it
    follows an operand (`-0.0000` is one number, `x-1` is three tokens)."""
    out: list[Token] = []
    sign = False
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        value = m.group()
        if kind == "space":
            continue
        if kind == "other":
            kind = "nl" if value == "\n" else value
        if kind == "num" and sign:
            out[-1] = ("num", "-" + value)
            sign = False
            continue
        sign = kind == "-" and (not out or out[-1][0] not in _OPERANDS)
        out.append((kind, value))
    return out


def _tokens_match(a: Sequence[Token], b: Sequence[Token], tol: Tolerance) -> bool:
    if len(a) != len(b):
        return False
    for (ka, va), (kb, vb) in zip(a, b, strict=True):
        if ka != kb:
            return False
        if ka == "num":
            if not tol.close(va, vb):
                return False
        elif va != vb:
            return False
    return True


def texts_match(expected: str, actual: str, tol: Tolerance | None = None) -> bool:
    """Whether two outputs match: exactly, or token by token within `tol`."""
    if expected == actual:
        return True
    if tol is None:
        return False
    return _tokens_match(tokens(expected), tokens(actual), tol)


def _line_equal(tol: Tolerance | None) -> Callable[[str, str], bool]:
    if tol is None:
        return lambda a, b: a == b
    return lambda a, b: a == b or _tokens_match(tokens(a), tokens(b), tol)


def _shape(line: str) -> str:
    """What lines that may match within a tolerance share: their non-number tokens."""
    return "\x00".join("#" if k == "num" else v for k, v in tokens(line))


Opcode = tuple[str, int, int, int, int]


def _opcodes(a: list[str], b: list[str], tol: Tolerance | None) -> list[Opcode]:
    """difflib opcodes for line lists `a` and `b`; with `tol`, lines are aligned by
    shape and a pair of aligned lines is equal only when its numbers are close."""
    if tol is None:
        return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    keys_a = [_shape(line) for line in a]
    keys_b = [_shape(line) for line in b]
    equal = _line_equal(tol)
    refined: list[Opcode] = []

    def add(tag: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if refined and refined[-1][0] == tag:  # merge neighbours of one kind
            _, p1, _, q1, _ = refined[-1]
            refined[-1] = (tag, p1, i2, q1, j2)
        else:
            refined.append((tag, i1, i2, j1, j2))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, keys_a, keys_b, autojunk=False
    ).get_opcodes():
        if tag != "equal":
            add(tag, i1, i2, j1, j2)
            continue
        for k in range(i2 - i1):
            same = equal(a[i1 + k], b[j1 + k])
            add("equal" if same else "replace", i1 + k, i1 + k + 1, j1 + k, j1 + k + 1)
    return refined


@dataclass(frozen=True)
class Difference:
    """The first place two outputs differ: 1-based line numbers in each, and the
    lines there (None past the end of that text)."""

    expected_line: int
    actual_line: int
    expected: str | None
    actual: str | None

    def as_dict(self) -> dict[str, object]:
        return {
            "expected_line": self.expected_line,
            "actual_line": self.actual_line,
            "expected": self.expected,
            "actual": self.actual,
        }


def first_difference(expected: str, actual: str, tol: Tolerance | None = None) -> Difference | None:
    """Where `actual` first departs from `expected` (None when they match)."""
    a, b = expected.splitlines(), actual.splitlines()
    for tag, i1, _i2, j1, _j2 in _opcodes(a, b, tol):
        if tag != "equal":
            return Difference(
                i1 + 1,
                j1 + 1,
                a[i1] if i1 < len(a) else None,
                b[j1] if j1 < len(b) else None,
            )
    return None


def short_diff(
    expected: str,
    actual: str,
    expected_name: str,
    actual_name: str,
    tol: Tolerance | None = None,
    *,
    context: int = CONTEXT,
    max_lines: int = MAX_DIFF_LINES,
) -> str:
    """A unified diff of the two texts with `context` lines around each change.

    A hunk that skips equal lines says how many in its header
    (`@@ -40,5 +40,5 @@ 35 equal lines skipped`); after `max_lines` lines the
    rest is counted, not shown. Lines that match within `tol` count as equal.
    """
    a, b = expected.splitlines(), actual.splitlines()
    body: list[str] = []
    shown_to = 0  # the first expected line not yet shown or skipped
    for group in _groups(_opcodes(a, b, tol), context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        skipped = i1 - shown_to
        note = f" {skipped} equal line{'s' if skipped != 1 else ''} skipped" if skipped else ""
        body.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@{note}")
        body.extend(_hunk_lines(group, a, b, max(1, max_lines // 4)))
        shown_to = i2
        if len(body) > max_lines:
            break
    if len(body) > max_lines:
        body[max_lines:] = ["… the rest of the diff is not shown"]
    head = [f"--- {expected_name}", f"+++ {actual_name}"]
    return "\n".join(head + body) + "\n"


class _Opcodes(difflib.SequenceMatcher):
    """A SequenceMatcher that answers with given opcodes, for its hunk grouping."""

    def __init__(self, codes: list[Opcode]) -> None:
        super().__init__(None, [], [], autojunk=False)
        self._codes = codes

    def get_opcodes(self) -> list[Opcode]:  # type: ignore[override]
        return list(self._codes)


def _groups(codes: list[Opcode], n: int) -> list[list[Opcode]]:
    """The opcodes cut into hunks with `n` lines of context, as difflib cuts them."""
    groups = _Opcodes(codes).get_grouped_opcodes(n)
    return [list(g) for g in groups if any(op[0] != "equal" for op in g)]


def _hunk_lines(group: list[Opcode], a: list[str], b: list[str], side: int) -> list[str]:
    """The lines of one hunk; each side of a change shows at most `side` lines and
    counts the rest (`-… 57 more lines`), so both sides of a big change are seen."""
    lines: list[str] = []
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            lines.extend(" " + line for line in a[i1:i2])
            continue
        for mark, part in (("-", a[i1:i2]), ("+", b[j1:j2])):
            lines.extend(mark + line for line in part[:side])
            if len(part) > side:
                rest = len(part) - side
                lines.append(f"{mark}… {rest} more line{'s' if rest != 1 else ''}")
    return lines


def _range(start: int, stop: int) -> str:
    """A unified diff's `start,length` (1-based; an empty range names the line before)."""
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"
