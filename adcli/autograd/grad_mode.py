"""Grad mode: whether operations record a graph (`no_grad`, `enable_grad`,
`set_grad_enabled`), and inference mode (`inference_mode`).

`state.enabled` is what the engine reads: do new operations record? Inside
inference mode nothing records, whatever grad mode says, so there the grad mode
the script set (what `is_grad_enabled()` reports) is kept apart in `state.grad`.
Tensors made in inference mode get an `InferenceCounter` as their version
counter: that marks them as inference tensors (views and detached tensors share
it), and refuses their in-place updates outside inference mode, after the write,
as PyTorch does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _State:
    __slots__ = ("enabled", "grad", "inference")

    def __init__(self) -> None:
        self.enabled = True
        self.grad = True  # the grad mode the script set, while in inference mode
        self.inference = False


state = _State()

INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)
INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
    "of `torch.inference_mode()`."
)
INFERENCE_REQUIRES_GRAD = (
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
)


class InferenceCounter(list):
    """The version counter of an inference tensor: a bump (every in-place write ends
    with one) outside inference mode raises PyTorch's error."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        if not state.inference:
            raise RuntimeError(INFERENCE_INPLACE)
        list.__setitem__(self, index, value)


def new_counter() -> list[int]:
    """A version counter for a new tensor (an inference tensor's in inference mode)."""
    return InferenceCounter((0,)) if state.inference else [0]


def is_grad_enabled() -> bool:
    """True when grad mode is on (inside inference mode: the mode the script set)."""
    return state.grad if state.inference else state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()`."""
    return state.inference


def _set_grad(mode: bool) -> None:
    state.grad = mode
    state.enabled = mode and not state.inference


def reset() -> None:
    """A fresh process's modes (each session starts there)."""
    state.enabled = state.grad = True
    state.inference = False


class set_grad_enabled:
    """Context manager (and plain call) that sets grad mode to `mode`."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __init__(self, mode: bool) -> None:
        self.prev = (state.enabled, state.grad)
        self.mode = bool(mode)
        _set_grad(self.mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        state.enabled, state.grad = self.prev
        return False


class _Mode:
    """Base of no_grad/enable_grad: a context manager and a decorator."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()
    mode = True

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        self.prev: list[tuple[bool, bool]] = []
        self.fn = fn

    def __enter__(self) -> None:
        self.prev.append((state.enabled, state.grad))
        _set_grad(self.mode)

    def __exit__(self, *exc: object) -> bool:
        state.enabled, state.grad = self.prev.pop()
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


class inference_mode:
    """`torch.inference_mode(mode=True)`: a context manager and a decorator in which
    nothing records a graph and new tensors are inference tensors; `mode=False`
    turns it off (and grad mode on) inside."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __init__(self, mode: Any = True) -> None:
        self.fn: Callable[..., Any] | None = None
        if callable(mode) and not isinstance(mode, bool):  # @torch.inference_mode
            self.fn, mode = mode, True
        self.mode = bool(mode)
        self.prev: list[tuple[bool, bool, bool]] = []

    def __enter__(self) -> None:
        self.prev.append((state.enabled, state.grad, state.inference))
        state.inference = self.mode
        state.grad = not self.mode
        state.enabled = not self.mode

    def __exit__(self, *exc: object) -> bool:
        state.enabled, state.grad, state.inference = self.prev.pop()
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None and len(args) == 1 and callable(args[0]) and not kwargs:
            wrapped = inference_mode(self.mode)
            wrapped.fn = args[0]
            return wrapped
        if self.fn is None:
            raise TypeError("'inference_mode' object is not callable")
        with self:
            return self.fn(*args, **kwargs)


for _cls in (set_grad_enabled, no_grad, enable_grad, inference_mode):
    _cls.__module__ = "torch.autograd.grad_mode"  # printed as PyTorch's classes
