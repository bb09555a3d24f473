"""torch.autograd.graph: hooks on the tensors saved for backward
(`saved_tensors_hooks`, `save_on_cpu`) and the `Node` base class of `grad_fn`s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import node, saved_attrs  # noqa: F401 (saved_attrs: the grad_fn._saved_* names)
from .node import Node
from .tensor import Tensor

__all__ = ["Node", "save_on_cpu", "saved_tensors_hooks"]


class saved_tensors_hooks:
    """Within this context, every tensor an operation saves for backward is handed to
    `pack_hook` at once, and what it returns is kept instead; backward (or reading a
    `grad_fn._saved_*` attribute) calls `unpack_hook` on it to get a tensor back.
    Contexts nest: the innermost pair applies."""

    __ad_context__ = True
    __ad_attrs__ = frozenset({"pack_hook", "unpack_hook"})

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]
    ) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        node.SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: object) -> bool:
        node.SAVED_HOOKS.pop()
        return False


def _pack_on_cpu(t: Tensor) -> tuple[str, Tensor]:
    # a fresh copy, as PyTorch's copy into a new CPU tensor (here every tensor is on CPU)
    return ("cpu", Tensor._make(t.data_.copy()))


def _unpack_from_cpu(packed: tuple[str, Tensor]) -> Tensor:
    return packed[1]


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept as CPU copies and given back at backward (on a CPU-only
    build: a copy and the same numbers)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(_pack_on_cpu, _unpack_from_cpu)


def reset() -> None:
    """No hooks active (a new session)."""
    node.SAVED_HOOKS.clear()
