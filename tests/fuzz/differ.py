"""Run one program under PyTorch and under adcli, and compare what each printed.

A fuzz program prints *records*: every `print` it makes starts with a tag
`@<n><class>` (see `gen.py`), so the two outputs can be split into records and
matched tag by tag. The class letter says how to compare the record's numbers:

- ``x``: the values are expected bit for bit (IEEE-exact operations on literals):
  the text must match exactly;
- ``d``: float64 all the way: relative tolerance 1e-9 (norm-wise part 1e-10);
- none: float32 tolerance (relative 1e-4, absolute 1e-5, plus 1e-5 times the
  record's largest magnitude: norm-wise, as a sum's rounding error is);
- ``!``: an exception caught by the program, printed as ``repr(e)``: type and
  sentence must match (numbers within float32 tolerance).

Numbers are parsed out of both texts and compared with the tolerance (plus half a
unit of the last printed digit, for PyTorch's 4-decimal print), the rest of the
text must match with whitespace removed. Object addresses ``0x...`` are masked.
Warnings (``UserWarning`` lines) are compared too, by line and message.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import re
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

#: the file name both engines give the program (warnings and errors name it)
FILENAME = "<fuzz>"

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_TAG = re.compile(r"^@(\d+)([xd!]?)(?: |$)")
_NUM = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|\d+(?:e[-+]?\d+)?|inf|nan)"
    r"(?![\w.])"
)
_WARN = re.compile(r"^(.*?):(\d+): (\w*Warning): (.*)$")
_DIAG = re.compile(r"^.*?:(\d+):(\d+): error: (\w+)(?:: (.*))?$")

#: warnings PyTorch gives only once per process (TORCH_WARN_ONCE): an in-process run
#: cannot see them after the first program, so neither side's copy is compared
ONCE_PER_PROCESS = (
    "The use of `x.T` on tensors of dimension other than 2",
    "Using backward() with create_graph=True will create a reference cycle",
    "optimizer contains a parameter group with duplicate parameters",
    "Using padding='same' with even kernel lengths and odd dilation",
)

#: warnings PyTorch gives with its own source file as the location (gradcheck's
#: `warnings.warn` without a stacklevel), so the torch run cannot attribute them to the
#: program (adcli gives them at the script's line): neither side's copy is compared
LIBRARY_LOCATED = ("Input #",)

#: tolerances by record class: (rtol, atol)
TOLERANCE = {"": (1e-4, 1e-5), "!": (1e-4, 1e-5), "d": (1e-9, 1e-12), "x": (0.0, 0.0)}
#: the norm-wise part of an inexact record's tolerance, as a fraction of rtol times the
#: record's largest magnitude: a convolution or matrix product whose terms cancel
#: carries the last-bit differences of its large terms (oneDNN's summation order)
#: into a small result, beyond any element-wise tolerance
NORMWISE = 0.1

#: mismatch categories, most specific first (the report lists them in this order)
CATEGORIES = (
    "internal",  # adcli crashed (an exception escaped the engine)
    "uncaught",  # adcli raised where PyTorch did not
    "error-missing",  # PyTorch raised, adcli did not
    "error-type",  # both raised, different exception types
    "error-message",  # both raised, same type, different sentence
    "text",  # grad_fn names, flags, dtypes, shapes, None vs tensor ...
    "value",  # numbers beyond tolerance
    "rounding",  # values expected bit-identical differ in the last bits
    "format",  # same numbers, different printed text (spacing, precision)
    "missing",  # a record PyTorch printed and adcli did not
    "extra",  # a record adcli printed and PyTorch did not
    "order",  # the same records in another order (hooks ...)
    "warning",  # UserWarnings differ
    "state-leak",  # adcli left grad mode off after the program
    "crash",  # the worker process died or hung (run.py)
    "timeout",  # a program ran longer than run.PROGRAM_SECONDS
)


@dataclass
class Record:
    """One tagged print: its tag number, class letter and text (tag removed)."""

    tag: int
    cls: str
    text: str


@dataclass
class Outcome:
    """What one engine did with a program."""

    stdout: str
    warnings: list[tuple[int, str, str]] = field(default_factory=list)
    #: an exception that escaped the program: (kind, message, line) or None
    error: tuple[str, str, int] | None = None
    #: adcli only: an adcli bug (an exception escaped the engine), its last line
    internal: str | None = None
    #: whether grad mode was on after the program (a leak would change the next run)
    grad_enabled_after: bool = True


@dataclass
class Mismatch:
    """One difference between the two outcomes."""

    category: str
    tag: int | None
    torch_text: str
    adcli_text: str
    key: str = ""

    def describe(self) -> str:
        """A few lines showing both sides."""
        where = f"record @{self.tag}" if self.tag is not None else "program"
        return f"[{self.category}] {where}\n  torch: {self.torch_text}\n  adcli: {self.adcli_text}"


# ---------------------------------------------------------------- running


def _noop(*args: Any, **kwargs: Any) -> None:
    """adcli's show/graph/formula builtins, as a Python shim defines them."""


def run_torch(text: str) -> Outcome:
    """Execute `text` as Python with the real torch imported; capture stdout and warnings."""
    import torch

    ns: dict[str, Any] = {"__name__": "__fuzz__", "show": _noop, "graph": _noop, "formula": _noop}
    out = io.StringIO()
    error = None
    torch.set_grad_enabled(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        warnings._showwarnmsg_impl = functools.partial(_record_warning, caught)  # type: ignore[attr-defined]
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(text, FILENAME, "exec"), ns)
            except Exception as e:  # the program's own uncaught error
                error = (type(e).__name__, str(e), _error_line(e))
    grad_after = torch.is_grad_enabled()
    torch.set_grad_enabled(True)  # an error inside no_grad must not leak into the next run
    ns.clear()
    got = [
        (w.lineno, w.category.__name__, str(w.message))
        for w in caught
        if w.filename == FILENAME and not str(w.message).startswith(ONCE_PER_PROCESS)
    ]
    return Outcome(out.getvalue(), got, error, grad_enabled_after=grad_after)


_MODULES_DIR = os.sep + os.path.join("torch", "nn", "modules") + os.sep
# the autograd engine's entry: a warning its C++ raises during a backward (anomaly
# mode's "Error detected in") is attributed there
_ENGINE_ENTRY = os.sep + os.path.join("torch", "autograd", "graph.py")


def _record_warning(caught: list[Any], msg: Any) -> None:
    """Record a warning of the torch run. One that a torch.nn module's forward passes on
    from a functional (stacklevel=2 lands in torch/nn/modules/), or that the engine
    raises during a backward, is located at the program's line that called the module
    or the backward, where the program sees it (and adcli gives it)."""
    if msg.filename != FILENAME and (
        _MODULES_DIR in msg.filename or msg.filename.endswith(_ENGINE_ENTRY)
    ):
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename != FILENAME:
            f = f.f_back
        if f is not None:
            msg.filename, msg.lineno = FILENAME, f.f_lineno
    caught.append(msg)


def _error_line(e: BaseException) -> int:
    tb = e.__traceback__
    line = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_adcli(text: str) -> Outcome:
    """Run `text` with adcli in this process (`adcli run -q`); capture stdout and stderr."""
    from adcli.core.options import RunOptions
    from adcli.core.runner import run_text

    out, err = io.StringIO(), io.StringIO()
    streams = types.SimpleNamespace(out=out, err=err)
    try:
        run_text(text, FILENAME, RunOptions(quiet=True, color=False, width=100), streams)
    except Exception as e:  # pragma: no cover - an escaped exception is an adcli bug
        return Outcome(out.getvalue(), [], None, f"{type(e).__name__}: {e}")
    finally:
        from adcli.autograd import grad_mode

        enabled = grad_mode.state.enabled
        grad_mode.state.enabled = True  # so that a leak cannot change the next program
    outcome = _parse_stderr(out.getvalue(), err.getvalue())
    outcome.grad_enabled_after = enabled
    return outcome


def _parse_stderr(stdout: str, stderr: str) -> Outcome:
    outcome = Outcome(stdout)
    for line in stderr.splitlines():
        if line.startswith("adcli: internal error: "):
            outcome.internal = line.removeprefix("adcli: internal error: ")
            continue
        m = _WARN.match(line)
        if m and m.group(1) == FILENAME:
            if m.group(4).startswith(ONCE_PER_PROCESS + LIBRARY_LOCATED):
                continue
            outcome.warnings.append((int(m.group(2)), m.group(3), m.group(4)))
            continue
        m = _DIAG.match(line)
        if m and outcome.error is None:
            outcome.error = (m.group(3), m.group(4) or "", int(m.group(1)))
    return outcome


# ---------------------------------------------------------------- records


def split_records(stdout: str) -> list[Record]:
    """The tagged records of an output; text before the first tag is record -1."""
    records: list[Record] = []
    for line in stdout.splitlines():
        m = _TAG.match(line)
        if m:
            records.append(Record(int(m.group(1)), m.group(2), line[m.end() :]))
        elif records:
            records[-1].text += "\n" + line
        else:
            records.append(Record(-1, "", line))
    for r in records:
        r.text = _ADDRESS.sub("0x?", r.text)
    return records


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """(the text between numbers with whitespace removed, the number tokens)."""
    nums = _NUM.findall(text)
    rest = ["".join(part.split()) for part in _NUM.split(text)]
    return rest, nums


def _resolution(tok: str) -> float:
    """Half a unit of the last digit when `tok` looks like torch's 4-decimal print."""
    mant, _, exp = tok.lower().partition("e")
    frac = mant.partition(".")[2]
    if len(frac) != 4:
        return 0.0
    return 0.5e-4 * 10.0 ** int(exp or 0)


def numbers_close(a: str, b: str, rtol: float, atol: float) -> bool:
    """Whether number tokens `a` (torch) and `b` (adcli) agree within the tolerance."""
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    allowed = atol + rtol * max(abs(x), abs(y)) + (_resolution(a) + _resolution(b)) * 1.001
    return abs(x - y) <= allowed


def _largest(nums: list[str]) -> float:
    """The largest finite magnitude among number tokens (0.0 when there is none)."""
    finite = [abs(v) for v in map(float, nums) if math.isfinite(v)]
    return max(finite, default=0.0)


def compare_text(torch_text: str, adcli_text: str, cls: str) -> str | None:
    """None when the record texts agree, else the mismatch category."""
    if torch_text == adcli_text:
        return None
    if cls == "!":  # an exception's type and sentence: word for word
        return "error-type" if _kind(torch_text) != _kind(adcli_text) else "error-message"
    rest_t, nums_t = _tokens(torch_text)
    rest_a, nums_a = _tokens(adcli_text)
    if rest_t != rest_a or len(nums_t) != len(nums_a):
        return "text"
    exact = all(_same_number(a, b) for a, b in zip(nums_t, nums_a, strict=True))
    if exact:
        if cls != "x" and _integer_mode_flip(nums_t, nums_a):
            return None  # rounding noise: an inexact value a last bit off a whole number
        return "format"
    rtol, atol = TOLERANCE[cls] if cls != "x" else TOLERANCE["d"]
    if cls != "x":  # norm-wise too: a sum's rounding error scales with its largest terms
        atol += rtol * NORMWISE * _largest(nums_t + nums_a)
    close = all(numbers_close(a, b, rtol, atol) for a, b in zip(nums_t, nums_a, strict=True))
    if not close:
        return "value"
    return "rounding" if cls == "x" else None


_WHOLE = re.compile(r"^[-+]?\d+\.(0000)?$")


def _integer_mode_flip(nums_t: list[str], nums_a: list[str]) -> bool:
    """Whether the two prints differ only as PyTorch's whole-number mode (`1.`) against
    its 4-decimal mode (`1.0000`): which one a tensor prints in depends on whether every
    value is whole, so a last-bit difference (an inexact sum that lands on 1 or just
    below) flips it while every printed number stays the same."""
    return all(
        a == b or (_WHOLE.match(a) and _WHOLE.match(b) and a.rstrip("0") == b.rstrip("0"))
        for a, b in zip(nums_t, nums_a, strict=True)
    )


def _same_number(a: str, b: str) -> bool:
    x, y = float(a), float(b)
    return x == y or (math.isnan(x) and math.isnan(y))


def _kind(text: str) -> str:
    return text.partition("(")[0].strip()


# ---------------------------------------------------------------- comparing


def compare(torch_out: Outcome, adcli_out: Outcome, text: str = "") -> list[Mismatch]:
    """Every difference between the two outcomes, in the order of the program
    (`text`, the program, tells which records come after an error that stopped adcli)."""
    if adcli_out.internal is not None:
        return [Mismatch("internal", None, "(no error)", adcli_out.internal, adcli_out.internal)]
    tr, ar = split_records(torch_out.stdout), split_records(adcli_out.stdout)
    mismatches = _compare_records(tr, ar)
    if adcli_out.error is not None and torch_out.error is None:
        kind, message, line = adcli_out.error
        m = Mismatch("uncaught", None, "(no error)", f"line {line}: {kind}: {message}")
        m.key = f"{kind}: {mask_numbers(message)}"
        # records missing after adcli stopped are explained by its error: those after
        # the last record adcli printed, or printed by statements after its error line
        seen = {r.tag for r in ar}
        stop = max((i for i, r in enumerate(tr) if r.tag in seen), default=-1)
        first = {}
        for i, r in enumerate(tr):
            first.setdefault(r.tag, i)
        lines = _tag_lines(text)
        gone = ("missing", "error-missing", "order")
        mismatches = [
            x
            for x in mismatches
            if x.category not in gone
            or (first.get(x.tag, -1) <= stop and lines.get(x.tag or 0, line + 1) < line)
        ]
        mismatches.append(m)
    elif torch_out.error is not None and adcli_out.error is None:
        kind, message, line = torch_out.error
        mismatches.append(
            Mismatch("error-missing", None, f"line {line}: {kind}: {message}", "(no error)")
        )
    if torch_out.grad_enabled_after and not adcli_out.grad_enabled_after:
        mismatches.append(
            Mismatch("state-leak", None, "grad mode on", "grad mode left off", "grad mode")
        )
    if not mismatches and torch_out.warnings != adcli_out.warnings:
        mismatches.append(
            Mismatch("warning", None, _warn_text(torch_out), _warn_text(adcli_out), "warnings")
        )
    for m in mismatches:
        if not m.key:
            m.key = _default_key(m)
    return mismatches


def _tag_lines(text: str) -> dict[int, int]:
    """Record tag -> the program line that prints it."""
    out: dict[int, int] = {}
    for i, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"'@(\d+)[xd!]?'", line):
            out.setdefault(int(m.group(1)), i)
    return out


def _warn_text(o: Outcome) -> str:
    return "; ".join(f"line {ln}: {cat}: {msg[:80]}" for ln, cat, msg in o.warnings) or "(none)"


def _compare_records(tr: list[Record], ar: list[Record]) -> list[Mismatch]:
    out: list[Mismatch] = []
    i = j = 0
    while i < len(tr) or j < len(ar):
        t = tr[i] if i < len(tr) else None
        a = ar[j] if j < len(ar) else None
        if t is not None and a is not None and t.tag == a.tag:
            cat = compare_text(t.text, a.text, t.cls)
            if cat is not None:
                out.append(Mismatch(cat, t.tag, t.text, a.text))
            i, j = i + 1, j + 1
            continue
        t_later = t is not None and any(r.tag == t.tag for r in ar[j:])
        a_later = a is not None and any(r.tag == a.tag for r in tr[i:])
        if t is not None and not t_later:
            cat = "error-missing" if t.cls == "!" else "missing"
            out.append(Mismatch(cat, t.tag, t.text, "(no record)"))
            i += 1
        elif a is not None and not a_later:
            out.append(Mismatch("extra", a.tag, "(no record)", a.text))
            j += 1
        else:  # both appear later on the other side: the order differs
            assert t is not None and a is not None
            out.append(Mismatch("order", t.tag, f"@{t.tag} {t.text}", f"@{a.tag} {a.text}"))
            i, j = i + 1, j + 1
    return out


def mask_numbers(text: str) -> str:
    """`text` with every number replaced by N (for grouping messages)."""
    return _NUM.sub("N", _ADDRESS.sub("0x?", text))


def _default_key(m: Mismatch) -> str:
    if m.category.startswith("error") or m.category == "text":
        side = m.torch_text if m.torch_text not in ("(no record)", "(no error)") else m.adcli_text
        if m.category == "text":
            return _first_difference(m.torch_text, m.adcli_text)
        return mask_numbers(side)[:160]
    return m.category


def _first_difference(a: str, b: str) -> str:
    """The first differing words of two texts (numbers masked), for grouping."""
    wa, wb = mask_numbers(a).split(), mask_numbers(b).split()
    for x, y in zip(wa, wb, strict=False):
        if x != y:
            return f"{x[:60]} vs {y[:60]}"
    return f"{len(wa)} vs {len(wb)} words"
