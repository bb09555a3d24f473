"""Deliberate divergences: differences from PyTorch that adcli chose, with the reason.

A mismatch that matches an entry here is counted as "deliberate" and not reported
as a failure. Keep this list short and honest: a bug is not a divergence. Each
entry names the mismatch category it applies to and a regular expression searched
in adcli's side of the mismatch (its record, error or warning text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .differ import Mismatch


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
    Divergence(
        "gradient-views",
        "error-missing",
        r"Can't detach views in-place",
        "Some of PyTorch's backward formulas return views (linear's bias gradient), so "
        "detach_() on such a gradient is refused; adcli's are plain tensors there (its "
        "sum, expand and as_strided gradients are views, as PyTorch's).",
        side="torch",
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


def classify(m: Mismatch) -> Divergence | None:
    """The deliberate divergence `m` is an instance of, or None."""
    for d in DELIBERATE:
        if d.matches(m):
            return d
    return None
