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

    def matches(self, m: Mismatch) -> bool:
        """Whether mismatch `m` is this divergence."""
        return m.category == self.category and re.search(self.pattern, m.adcli_text) is not None


DELIBERATE: tuple[Divergence, ...] = (
    Divergence(
        "dropout-training",
        "uncaught",
        r"adcli does not support torch\.nn\.functional\.dropout in training",
        "Dropout masks come from PyTorch's Bernoulli sampler, which adcli does not "
        "reproduce; rather than print different random numbers it refuses training-mode "
        "dropout with p > 0 (p = 0 and training=False are supported).",
    ),
)


def classify(m: Mismatch) -> Divergence | None:
    """The deliberate divergence `m` is an instance of, or None."""
    for d in DELIBERATE:
        if d.matches(m):
            return d
    return None
