"""`torch.func.functional_call`: run a module with some of its parameters and buffers
replaced by the given tensors for one call, then put the originals back.

The stand-ins go where the module reads its state from (its `__dict__` and the
registry the name belongs to) without passing through `Module.__setattr__`, which
would refuse a plain tensor in a parameter's place, as PyTorch's reparametrization
also allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _merge(dicts: Any) -> dict[str, Any]:
    """One name -> tensor table from a dict or a tuple of dicts, as PyTorch merges them."""
    if isinstance(dicts, Mapping):
        return dict(dicts)
    if not isinstance(dicts, (list, tuple)) or not all(isinstance(d, Mapping) for d in dicts):
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(dicts)}"
        )
    merged: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for d in dicts:
        for k in d:
            seen[k] = seen.get(k, 0) + 1
    repeated = [k for k, n in seen.items() if n > 1]
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    for d in dicts:
        merged.update(d)
    return merged


def _check_strict(module: Module, names: dict[str, Any]) -> None:
    """PyTorch's error for unexpected or missing names under strict=True."""
    known = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
    unexpected = [n for n in names if n not in known]
    missing = sorted(n for n in known if n not in names)
    if not unexpected and not missing:
        return
    lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
    if unexpected:
        lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
    if missing:
        lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
    raise RuntimeError("\n".join(lines))


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Any,
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """module(*args, **kwargs) with the named parameters and buffers replaced for the call.

    `tie_weights` is accepted for PyTorch's signature: each name given is replaced, and
    a weight registered under two names is replaced only under the names given."""
    names = _merge(parameter_and_buffer_dicts)
    if strict:
        _check_strict(module, names)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    swapped: list[tuple[dict[str, Any], str, Any, dict[str, Any] | None, Any]] = []
    try:
        for name, value in names.items():
            path, _, attr = name.rpartition(".")
            owner = module.get_submodule(path).__dict__
            registry = next(
                (r for r in (owner.get("_parameters"), owner.get("_buffers")) if r and attr in r),
                None,
            )
            old_reg = registry[attr] if registry is not None else _MISSING
            swapped.append((owner, attr, owner.get(attr, _MISSING), registry, old_reg))
            owner[attr] = value
            if registry is not None:
                registry[attr] = value
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, old, registry, old_reg in reversed(swapped):
            if old is _MISSING:
                owner.pop(attr, None)
            else:
                owner[attr] = old
            if registry is not None:
                registry[attr] = old_reg
