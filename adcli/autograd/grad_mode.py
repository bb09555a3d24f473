"""Grad mode: whether operations record a graph (`no_grad`, `enable_grad`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _State:
    __slots__ = ("enabled",)

    def __init__(self) -> None:
        self.enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """True when new operations record the graph."""
    return state.enabled


class set_grad_enabled:
    """Context manager (and plain call) that sets grad mode to `mode`."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __init__(self, mode: bool) -> None:
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        state.enabled = self.prev
        return False


class _Mode:
    """Base of no_grad/enable_grad: a context manager and a decorator."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()
    mode = True

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        self.prev: list[bool] = []
        self.fn = fn

    def __enter__(self) -> None:
        self.prev.append(state.enabled)
        state.enabled = self.mode

    def __exit__(self, *exc: object) -> bool:
        state.enabled = self.prev.pop()
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # `@torch.no_grad()` decorates a function; `@torch.no_grad` too.
        if self.fn is None and len(args) == 1 and callable(args[0]) and not kwargs:
            return type(self)(args[0])
        with self:
            return self.fn(*args, **kwargs)


class no_grad(_Mode):
    """Operations inside do not record a graph."""

    mode = False


class enable_grad(_Mode):
    """Operations inside record a graph even within `no_grad`."""

    mode = True
