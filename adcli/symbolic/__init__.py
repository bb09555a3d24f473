"""Symbolic formulas beside autograd's numbers (`formula(t)`, `adcli run --symbolic`).

Every node's formula is rebuilt from the graph (rules.py: one symbolic forward
per Function row); every gradient's formula is derived by running the engine's
own backward definitions with create_graph=True and reading the graph they
build with the same rules (gradients.py); each formula is evaluated and checked
against the number autograd computed.  SymPy is imported only when a formula is
built: importing this package costs nothing.

API:
    Tracker(eager=False)     switch recording on for a run; `on_event(event)` at each
                             backward/grad; `formula_text(t)` is what formula(t) prints;
                             `annotate(report, event)` fills --symbolic report columns;
                             `close()` switches recording off.
    formula_of(t) -> str     the formula of one tensor, in Python syntax.
"""

from __future__ import annotations

from typing import Any

from .tracker import Tracker

__all__ = ["Tracker", "formula_of"]


def formula_of(t: Any) -> str:
    """The formula of `t` in the leaves of its graph (Python syntax), not simplified.

    The graph must have been built while recording was on (a Tracker open).
    """
    from .formula import Converter
    from .sym import to_text

    return to_text(Converter().of_tensor(t))
