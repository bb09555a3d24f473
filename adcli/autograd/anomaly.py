"""Anomaly detection: `torch.autograd.set_detect_anomaly(True)`, `detect_anomaly()`
and `adcli run --detect-anomaly`.

As in PyTorch, while it is on, every node's backward is checked for NaN in what it
returns, and the first one that returns NaN stops the backward with PyTorch's
sentence (`Function 'SqrtBackward0' returned nan values in its 0th output.`);
adcli adds the script line and expression that made that node. (PyTorch checks
NaN only: an infinite gradient is not an anomaly.)

It costs nothing while off: the engine calls `engine.anomaly_check` after each
node's backward only when it is set, and it is set only while detection is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import engine
from .config import config as engine_config


class _State:
    """Whether detection is on: by the script (`set_detect_anomaly`) or forced by
    the command line (`--detect-anomaly`, which a script cannot switch off)."""

    __slots__ = ("enabled", "check_nan", "forced")

    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True
        self.forced = False


state = _State()


def _sync() -> None:
    on = state.forced or (state.enabled and state.check_nan)
    engine.anomaly_check = check_node if on else None
    engine_config.anomaly_mode = state.enabled or state.forced


def set_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch.set_anomaly_enabled(enabled, check_nan)."""
    state.enabled = bool(enabled)
    state.check_nan = bool(check_nan)
    _sync()


def force(on: bool) -> None:
    """`--detect-anomaly`: check every backward of the run, whatever the script says."""
    state.forced = bool(on)
    _sync()


def reset() -> None:
    """A fresh process's state for the script (a forced check stays as it is)."""
    set_enabled(False, True)


def is_anomaly_enabled() -> bool:
    """torch.is_anomaly_enabled()"""
    return state.enabled or state.forced


def is_anomaly_check_nan_enabled() -> bool:
    """torch.is_anomaly_check_nan_enabled()"""
    return state.forced or state.check_nan


class set_detect_anomaly:
    """torch.autograd.set_detect_anomaly(mode, check_nan=True): switches detection on
    or off at once; as a context manager, restores the previous state on exit."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (state.enabled, state.check_nan)
        set_enabled(mode, check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        set_enabled(*self.prev)
        return False

    def __repr__(self) -> str:
        return "<torch.autograd.anomaly_mode.set_detect_anomaly object>"


class detect_anomaly:
    """torch.autograd.detect_anomaly(check_nan=True): a context manager that switches
    detection on inside its block (and warns, as PyTorch does)."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = (state.enabled, state.check_nan)
        self.check_nan = bool(check_nan)
        engine_config.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and "
            "should only be enabled for debugging."
        )

    def __enter__(self) -> None:
        set_enabled(True, self.check_nan)

    def __exit__(self, *exc: object) -> bool:
        set_enabled(*self.prev)
        return False

    def __repr__(self) -> str:
        return "<torch.autograd.anomaly_mode.detect_anomaly object>"


class AnomalyError(RuntimeError):
    """PyTorch's RuntimeError for a backward that returned NaN, carrying the node so
    that a host can name the script line that made it (scripts see a RuntimeError)."""

    def __init__(self, message: str, node: Any) -> None:
        super().__init__(message)
        self.node = node


def check_node(node: Any, outs: Sequence[Any]) -> None:
    """Raise PyTorch's error when `node`'s backward returned NaN (called by the engine)."""
    for i, g in enumerate(outs):
        if g is None:
            continue
        data = g.data_
        if data.dtype.kind in "fc" and np.isnan(data).any():
            raise AnomalyError(
                f"Function '{node.name()}' returned nan values in its {i}th output.", node
            )


def made_at(node: Any) -> str | None:
    """adcli's addition to the error: where the script made the node."""
    label = getattr(node, "_label", None)
    if label is None or not getattr(label, "line", None):
        return None
    what = label.expr or label.name
    if label.name and label.name != label.expr:
        what = f"{label.name} = {label.expr}"
    return f"{node.name()} was made at line {label.line}: {what}"
