"""Process-wide settings of the engine that a host (the language, a test) may change."""

from __future__ import annotations

import warnings
from collections.abc import Callable


def _default_warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


class _Config:
    __slots__ = (
        "warn",
        "max_numel",
        "max_tensor_bytes",
        "record_inputs",
        "anomaly_mode",
        "forward_trace",
    )

    def __init__(self) -> None:
        # Called with PyTorch's UserWarning text; a host can route it elsewhere.
        self.warn: Callable[[str], None] = _default_warn
        # Largest tensor a script may create (elements); None means no limit.
        self.max_numel: int | None = None
        # Memory all live tensors may hold together (bytes); None means no budget.
        # Both limits are enforced by adcli.autograd.budget.
        self.max_tensor_bytes: int | None = None
        # adcli.symbolic (opt-in): Function.apply records each node's constant operands and
        # parameters, and release() keeps the saved values, so formulas can be rebuilt.
        self.record_inputs: bool = False
        # Whether anomaly detection is on (set by adcli.autograd.anomaly): it changes the hint
        # of PyTorch's in-place error.
        self.anomaly_mode: bool = False
        # A host's traceback of the script's frames (PyTorch's "Traceback of forward call"),
        # asked for each node made while anomaly detection is on; None: no host.
        self.forward_trace: Callable[[], str | None] | None = None


config = _Config()


def check_numel(n: int) -> None:
    """Refuse a tensor larger than the configured limit."""
    limit = config.max_numel
    if limit is not None and n > limit:
        raise MemoryError(
            f"tensor of {n} elements exceeds the size limit of {limit} (raise it with --max-numel)"
        )
