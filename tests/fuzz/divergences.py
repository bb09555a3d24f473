"""Deliberate divergences: differences from PyTorch that adcli chose, with the reason.

A mismatch that matches an entry here is counted as "deliberate" and not reported
as a failure. Keep this list short and honest: a bug is not a divergence. Each
entry names the mismatch category it applies to and a regular expression searched
in adcli's side of the mismatch (its record, error or warning text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .differ import Mismatch, Outcome, split_records


@dataclass(frozen=True)
class Divergence:
    """One documented, intended difference."""

    name: str
    category: str
    pattern: str
    reason: str
    side: str = "adcli"  # whose text the pattern is searched in ("torch" for a missing error)

    def matches(self, m: Mismatch) -> bool:
        """Whether mismatch `m` is this divergence."""
        text = m.torch_text if self.side == "torch" else m.adcli_text
        return m.category == self.category and re.search(self.pattern, text) is not None


DELIBERATE: tuple[Divergence, ...] = (
    Divergence(
        "unflatten-cpp-trace",
        "error-message",
        r"^RuntimeError\('unflatten got an unexpected error:\\n[^\\]*'\)$",
        "unflatten wraps some C++ errors (a dim of a 0-d tensor, two -1 sizes) with "
        "PyTorch's C++ stack trace (frame addresses, library paths) after the sentence; "
        "adcli gives the same sentence without the trace.",
    ),
)


# Divergences the generator sees in torch's own state while it runs a program (a
# feature it records); every mismatch of such a program is counted under the entry.
BY_FEATURE: dict[str, Divergence] = {
    "divergence:grad-stealing": Divergence(
        "grad-stealing",
        "*",
        "",
        "PyTorch's AccumulateGrad adopts an incoming gradient as `.grad` when its C++ "
        "reference count says nothing else holds it, so two leaves' `.grad` can be views "
        "of one buffer (the 0-d parts of an expanded gradient, through stack or unbind) "
        "and a later in-place accumulation into one changes the other. adcli's `.grad` "
        "always owns its memory: Python's reference counts (reports hold gradients) "
        "cannot tell what PyTorch's tell.",
    ),
}


# A program whose torch run met one of PyTorch's internal assertions: every mismatch of
# it is counted under this entry (see `torch_internal_assert`).
TORCH_INTERNAL_ASSERT = Divergence(
    "torch-internal-assert",
    "*",
    r"INTERNAL ASSERT FAILED",
    "PyTorch stopped at one of its own internal assertions (its message asks to report "
    "a bug to PyTorch), as torch 2.13 does for an in-place op on a tensor that "
    "backward(inputs=...) gave a gradient accumulator and detach_() then made a leaf. "
    "That is a PyTorch bug, not a semantics to copy: adcli runs the statement.",
    side="torch",
)

#: an error PyTorch's own consistency check raised: the `repr` of a RuntimeError whose
#: sentence is c10's "<condition> INTERNAL ASSERT FAILED at <file>:<line>, please report..."
_INTERNAL_ASSERT = re.compile(
    r"^RuntimeError\(['\"].*INTERNAL ASSERT FAILED at .*please report a bug to PyTorch"
)


def torch_internal_assert(torch_out: Outcome) -> Divergence | None:
    """TORCH_INTERNAL_ASSERT when PyTorch's run of a program raised an internal assertion
    (an error record, or the program's uncaught error), else None. Only errors count: a
    value or a text that happens to contain the words does not."""
    errors = [r.text for r in split_records(torch_out.stdout) if r.cls == "!"]
    if torch_out.error is not None:
        kind, message, _ = torch_out.error
        errors.append(f"{kind}({message!r})")
    if any(_INTERNAL_ASSERT.match(e) for e in errors):
        return TORCH_INTERNAL_ASSERT
    return None


def classify(m: Mismatch) -> Divergence | None:
    """The deliberate divergence `m` is an instance of, or None."""
    for d in DELIBERATE:
        if d.matches(m):
            return d
    return None
