"""PyTorch's checks of what a backward hook returns (tensor hooks, node pre- and post-hooks).

A tensor hook's result replaces one gradient; a node hook's result, a tuple, replaces
them all. PyTorch refuses a result of another type, count, dtype or size, and a
tensor in place of an undefined (None) gradient; a None inside a node hook's tuple
makes that gradient undefined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .dtypes import of_array
from .tensor import Tensor

__all__ = ["hook_name", "single_result", "tuple_result"]


def hook_name(fn: Callable[..., Any]) -> str:
    """The hook's name in PyTorch's messages."""
    # script functions carry their name as `ad_name`; Python ones as `__name__`
    return getattr(fn, "ad_name", None) or getattr(fn, "__name__", None) or "hook"


def _typename(value: Any) -> str:
    return getattr(type(value), "__ad_type_name__", None) or type(value).__name__


def single_result(fn: Callable[..., Any], original: Tensor | None, result: Any) -> None:
    """PyTorch's `check_single_result`: one returned gradient against the one it replaces."""
    if result is None:
        return
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{_typename(result)}'")
    was, got = of_array(original.data_), of_array(result.data_)
    if was is not got:
        raise RuntimeError(
            f"hook '{hook_name(fn)}' has changed the type of value "
            f"(was torch.{was.legacy} got torch.{got.legacy})"
        )
    if result.data_.shape != original.data_.shape:
        raise RuntimeError(f"hook '{hook_name(fn)}' has changed the size of value")


def tuple_result(
    fn: Callable[..., Any], original: Sequence[Tensor | None], result: Any
) -> tuple[Tensor | None, ...]:
    """PyTorch's `check_result`: a node hook's returned tuple against the gradients it
    replaces; returns the new gradients."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{_typename(result)}'")
    if len(result) != len(original):
        raise RuntimeError(
            f"hook '{hook_name(fn)}' has returned an incorrect number of values "
            f"(got {len(result)}, but expected {len(original)})"
        )
    for was, got in zip(original, result, strict=True):
        single_result(fn, was, got)
    return result
