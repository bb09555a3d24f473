"""Where a tensor came from in the script: the variable name and expression that made it.

The language layer attaches a Label to tensors (`tensor._label`); the report
reads it. The autograd engine never looks at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Label:
    """A tensor's name (`y`, or `y@2` when `y` was rebound), its expression and line.

    The same Label is also kept on the tensor's graph node, with the tensor's
    values (`value`), so a report can still show an intermediate the script no
    longer holds; it is freed with the graph. `no_grad` is True for a tensor made
    while grad mode was off (inside `torch.no_grad()`), for the notes of adcli.core.hints.
    """

    name: str | None
    expr: str
    line: int
    value: Any = None
    no_grad: bool = False


def label_of(t: object) -> Label | None:
    """The Label of a tensor, if the script's evaluation gave it one."""
    return getattr(t, "_label", None)
