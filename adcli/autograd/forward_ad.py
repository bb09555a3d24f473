"""Forward-mode AD: dual levels, the tangents tensors carry, their propagation.

`torch.autograd.forward_ad` (`dual_level`, `make_dual`, `unpack_dual`) and the
levels `torch.func.jvp`/`jacfwd` open are all levels here: one table per open
level maps a tensor (by identity, weakly: an entry goes with its tensor, a table
with its level) to its tangent.  A Tensor has no field for it, and while no
level is open `Function.apply` pays one `is None` test (`node.fw_hook`).

While a level is open, every `Function.apply` calls `propagate`: for each level
where an input has a tangent, the row's `jvp(ctx, tangents, inputs, result)`
(declared beside its `backward` in functions.py) gives the output's tangent.
Rules are Tensor operations, so a tangent is itself differentiable (reverse over
forward) and, with several levels open (torch.func nesting), gets tangents at
the outer levels: a rule of level L runs with L and every inner level hidden.

This module is above tensor.py, ops.py and functions.py: Tensor's in-place methods
and repr reach it through tensor.py's `forward_ad` slot, which it fills as it loads.
"""

from __future__ import annotations

import math
import re
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from . import grad_mode, node
from . import tensor as _tensor_module
from .tensor import Tensor

_tensor_module.forward_ad = sys.modules[__name__]  # in-place tangents (see tensor.py's slots)

# open levels, outermost first: a level's id is its depth (the first is 0, as torch's)
_levels: list[int] = []
_tables: dict[int, dict[int, tuple[weakref.ref[Tensor], Tensor]]] = {}
_public: list[int] = []  # the levels opened through torch.autograd.forward_ad
_ceiling: float = math.inf  # levels >= this are hidden (a rule of that level is running)
# levels whose tangents are batched ([n, *primal.shape]: jacfwd's basis at once) -> n
_batch: dict[int, int] = {}
# batched.py fills these as it loads (it is above this module)
batched_jvp: Any = None
Unbatchable: Any = None

NO_LEVEL = (
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
    "enter_dual_level() first."
)
NESTED = "Nested forward mode AD is not supported at the moment"


# ---------------------------------------------------------------- the tables
def _install() -> None:
    """Point node.fw_hook at `propagate` when some level is visible, else None."""
    visible = bool(_levels) and _levels[0] < _ceiling
    node.fw_hook = propagate if visible else None


def open_level(batch: int | None = None) -> int:
    """Open a new (innermost) level and return its id. With `batch`, its tangents
    carry a leading dim of that size (batched.py computes them)."""
    level = len(_levels)
    _levels.append(level)
    _tables[level] = {}
    if batch is not None:
        _batch[level] = batch
    _install()
    return level


def close_level(level: int) -> None:
    """Close the innermost level: every tangent at it is gone."""
    _levels.remove(level)
    _batch.pop(level, None)
    table = _tables.pop(level)
    table.clear()
    _install()


def get_tangent(t: Any, level: int) -> Tensor | None:
    """t's tangent at `level`, or None."""
    table = _tables.get(level)
    if table is None or not isinstance(t, Tensor):
        return None
    entry = table.get(id(t))
    return entry[1] if entry is not None else None


def set_tangent(t: Tensor, level: int, tangent: Tensor | None) -> None:
    """Give t a tangent at `level` (None removes it)."""
    table = _tables[level]
    key = id(t)
    if tangent is None:
        table.pop(key, None)
        return

    def forget(_ref: Any, table: dict[int, Any] = table, key: int = key) -> None:
        entry = table.get(key)
        if entry is not None and entry[0]() is None:
            del table[key]

    table[key] = (weakref.ref(t, forget), tangent)


def has_tangent(t: Any) -> bool:
    """Does t carry a tangent at some visible level?"""
    return any(get_tangent(t, lv) is not None for lv in _levels if lv < _ceiling)


@contextmanager
def hidden(level: int) -> Iterator[None]:
    """Run with `level` and the levels inside it hidden: ops propagate only the
    tangents of the outer levels (a rule of `level` runs so; so does a primal)."""
    global _ceiling
    saved = _ceiling
    _ceiling = min(saved, level)
    _install()
    try:
        yield
    finally:
        _ceiling = saved
        _install()


# ---------------------------------------------------------------- propagation
def op_name(fn: Any) -> str:
    """The ATen-style name of a row (`MseLossBackwardBackward0` -> mse_loss_backward)."""
    name = re.sub(r"Backward\d*$", "", fn.grad_fn_name).replace("Backward", "_backward")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("__", "_")


#: PyTorch's longer sentence, for an op whose derivatives.yaml entry has no forward formula
NOT_YET = (
    " because it has not been implemented yet.\nPlease file an issue to PyTorch at "
    "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we "
    "can prioritize its implementation or submit a PR adding the implementation to "
    "derivatives.yaml"
)


def not_supported(name: str, not_yet: bool = False) -> NotImplementedError:
    """PyTorch's error for an op without a forward-mode rule (`not_yet`: the sentence of
    one whose formula PyTorch has not written)."""
    tail = NOT_YET if not_yet else "."
    return NotImplementedError(
        f"Trying to use forward AD with {name} that does not support it{tail}"
    )


def propagate(ctx: Any, inputs: tuple[Any, ...] | None, out: Any) -> None:
    """`node.fw_hook`: give `out` its tangents from `inputs`' through ctx's jvp row.

    With `inputs` None, `out` is a node's saved output being unpacked for backward:
    it gets back the tangents the output had (so backward formulas propagate them)."""
    if inputs is None:
        kept = ctx.__dict__.get("fw_out")
        if kept:
            for level, tangent in kept.items():
                if level in _tables:
                    set_tangent(out, level, tangent)
        return
    for level in list(_levels):
        if level >= _ceiling:
            break
        table = _tables[level]
        tangents: list[Any] | None = None
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor):
                entry = table.get(id(x))
                if entry is not None:
                    if tangents is None:
                        tangents = [None] * len(inputs)
                    tangents[i] = entry[1]
        if tangents is not None:
            _apply_rule(ctx, level, tuple(tangents), inputs, out)


def _apply_rule(ctx: Any, level: int, tangents: tuple[Any, ...], inputs: Any, out: Any) -> None:
    cls = type(ctx)
    n = _batch.get(level)
    if n is not None:  # a batched level: every basis tangent at once
        with hidden(level):
            r = batched_jvp(ctx, tangents, inputs, out, n)
            if r is not None and out.data_.dtype.kind in "fc":
                set_tangent(out, level, r)
                if out._grad_fn is ctx and ctx.saved:
                    ctx.__dict__.setdefault("fw_out", {})[level] = r
        return
    rule = getattr(cls, "jvp", None)
    if rule is None:
        # PyTorch's name for the op and its "not implemented yet" sentence where it has them
        name = getattr(cls, "jvp_name", None) or op_name(cls)
        raise not_supported(name, getattr(cls, "jvp_not_yet", False))
    with hidden(level):
        result = rule(ctx, tangents, inputs, out)
        outs = out if cls.multi_output else (out,)
        results = result if cls.multi_output else (result,)
        for o, r in zip(outs, results, strict=True):
            if r is None or o.data_.dtype.kind not in "fc":
                continue  # a zero tangent (none), or an integer output (no tangent)
            if r.data_.shape != o.data_.shape:  # a broadcast operand's tangent
                from . import ops

                r = ops.contiguous(ops.expand(r, o.data_.shape))
            set_tangent(o, level, r)
            if o._grad_fn is ctx and ctx.saved:
                # the node may rebuild this output from its saved data for backward
                ctx.__dict__.setdefault("fw_out", {})[level] = r


# ---------------------------------------------------------------- in place
def inplace_tangents(t: Tensor, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Before `t` is changed in place by `fn(t, *args)`: the tangents it will have
    after (at each visible level where t or an argument has one), or None."""
    if not (has_tangent(t) or any(has_tangent(a) for a in args)):
        return None
    _refuse_batched()
    # t's old value as a tensor of its own, carrying t's tangents
    old = Tensor._make(t.data_.copy())
    for level in _levels:
        if level < _ceiling:
            set_tangent(old, level, get_tangent(t, level))
    with grad_mode.no_grad():
        result = fn(old, *args, **kwargs)
    return {lv: get_tangent(result, lv) for lv in _levels if lv < _ceiling}


def _refuse_batched() -> None:
    """In-place changes have no batched tangent rule: jacfwd goes one column at a time."""
    if any(lv in _batch for lv in _levels if lv < _ceiling):
        raise Unbatchable("in-place change")


def write_tangents(t: Tensor, new: dict[int, Tensor | None]) -> None:
    """After `t` changed in place: store its new tangents, in place where it has one
    (so views of it see the change), else as a view of its base's (made zero)."""
    for level, value in new.items():
        if level not in _tables:
            continue
        current = _tangent_for_write(t, level, value)
        with hidden(level), grad_mode.no_grad():
            v = value.data_ if value is not None else np.zeros((), current.data_.dtype)
            current.data_[...] = np.broadcast_to(v, current.data_.shape)
        current._vc[0] += 1


def _tangent_for_write(t: Tensor, level: int, value: Tensor | None) -> Tensor:
    """t's tangent at level, made (zero) when it has none: for a view, as the same
    view of its base's tangent (made zero too), as PyTorch does."""
    current = get_tangent(t, level)
    if current is not None:
        return current
    dt = value.data_.dtype if value is not None else t.data_.dtype
    base = t._base
    if base is not None:
        base_t = get_tangent(base, level)
        if base_t is None:
            base_t = Tensor._make(np.zeros(base.data_.shape, dt))
            set_tangent(base, level, base_t)
        window = _same_window(base.data_, base_t.data_, t.data_)
        if window is not None:
            current = Tensor._make(window, False, None, base_t._vc)
            current._base = base_t
            set_tangent(t, level, current)
            return current
    current = Tensor._make(np.zeros(t.data_.shape, dt))
    set_tangent(t, level, current)
    return current


def _same_window(base: np.ndarray, other: np.ndarray, view: np.ndarray) -> np.ndarray | None:
    """The elements of `other` that `view` addresses in `base` (both C-contiguous, of
    one shape), as a view of `other`; None when that cannot be told."""
    if not (base.flags.c_contiguous and other.flags.c_contiguous) or base.shape != other.shape:
        return None
    size = base.itemsize
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if offset % size or any(s % size for s in view.strides):
        return None
    scale = other.itemsize // size if other.itemsize >= size else None
    if scale is None or other.itemsize % size:
        return None
    flat = other.reshape(-1)[offset // size :]
    strides = tuple(s * scale for s in view.strides)
    return np.lib.stride_tricks.as_strided(flat, view.shape, strides)


def after_setitem(a: Tensor, index: Any, value: Any) -> None:
    """`a[index] = value` happened: a's tangent gets value's (zero for a number) there."""
    from . import ops

    for level in list(_levels):
        if level >= _ceiling:
            break
        vt = get_tangent(value, level)
        if vt is None and get_tangent(a, level) is None:
            continue
        if level in _batch:
            raise Unbatchable("in-place change")
        current = _tangent_for_write(a, level, vt)
        with hidden(level), grad_mode.no_grad():
            if vt is None:
                ops.setitem(current, index, 0.0)
            else:
                ops.setitem(current, index, ops.to_dtype(vt, current.dtype))


# ---------------------------------------------------------------- public API
class UnpackedDualTensor(NamedTuple):
    """What `unpack_dual` returns: the primal and the tangent (None without one)."""

    primal: Any
    tangent: Any


UnpackedDualTensor.__ad_attrs__ = frozenset(  # type: ignore[attr-defined]
    {"primal", "tangent", "count", "index"}
)
UnpackedDualTensor.__module__ = "torch.autograd.forward_ad"


def enter_dual_level() -> int:
    """Open the forward-AD level (only one at a time, as in PyTorch)."""
    if _public:
        raise RuntimeError(NESTED)
    level = open_level()
    _public.append(level)
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the forward-AD level: every tangent made in it is gone."""
    if not _public:
        raise RuntimeError("Dual level must be a positive number.")
    current = _public[-1]
    if level is None:
        level = current
    if level != current:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was "
            "created. This is not supported."
        )
    _public.pop()
    close_level(level)


class dual_level:  # noqa: N801 (PyTorch's name)
    """`with dual_level():` opens the forward-AD level and closes it on exit."""

    __ad_context__ = True
    __ad_attrs__ = frozenset()

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def _public_level(level: int | None, what: str) -> int | None:
    if level is None:
        return _public[-1] if _public else None
    if level not in _tables:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of `tensor` whose tangent at the level is `tangent` (copied into
    tensor's layout when its layout differs)."""
    if level is None and not _public:
        raise RuntimeError(NO_LEVEL)
    lv = _public_level(level, "_make_dual")
    assert lv is not None
    return dual_of(tensor, tangent, lv)


def dual_of(tensor: Tensor, tangent: Tensor, level: int) -> Tensor:
    """make_dual at any level (torch.func's too), with PyTorch's checks."""
    from . import ops

    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"_make_dual(): argument 'primal' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    if not isinstance(tangent, Tensor):
        name = type(tangent).__name__
        raise AttributeError(f"'{name}' object has no attribute 'is_floating_point'")
    if tensor.data_.dtype.kind not in "fc":
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if tangent.data_.dtype.kind not in "fc":
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    batch = _batch.get(level)
    if batch is not None:  # jacfwd's basis at once: [n, *primal.shape]
        if tangent.data_.shape != (batch,) + tensor.data_.shape:
            raise Unbatchable("a tangent of another shape")
        with hidden(level):
            dual = ops.view(tensor, tensor.data_.shape)
        set_tangent(dual, level, tangent)
        return dual
    if tangent.data_.shape != tensor.data_.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            "original Tensor, this is not supported. Tensor is of size "
            f"{list(tensor.data_.shape)} while the given forward gradient is of size "
            f"{list(tangent.data_.shape)}."
        )
    if get_tangent(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at "
            f"the same level {level} is not supported."
        )
    with hidden(level):
        dual = ops.view(tensor, tensor.data_.shape)
        if tangent.data_.strides != tensor.data_.strides and tangent.data_.size > 1:
            # another layout: the values go into a tensor laid out as the primal
            into = Tensor._make(np.empty_like(tensor.data_, dtype=tangent.data_.dtype))
            if tangent.requires_grad:
                tangent = ops.copy_from(into, tangent)
            else:
                into.data_[...] = tangent.data_
                tangent = into
    set_tangent(dual, level, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of a dual tensor: the primal is a view without the tangent."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    lv = _public_level(level, "_fw_primal")
    if lv is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(primal_of(tensor, lv), get_tangent(tensor, lv))


def primal_of(tensor: Tensor, level: int) -> Tensor:
    """A view of `tensor` without its tangent at `level` (outer levels' stay)."""
    from . import ops

    global _Primal
    if _Primal is None:
        _Primal = _primal_class()
    with hidden(level):
        return ops._view_of(tensor, _Primal.apply(tensor))


def _primal_class() -> Any:
    from . import functions as F

    class Primal(F.Alias):
        """unpack_dual's primal: the same values (PyTorch's `Identity` node, a C++
        function that Python sees as `CppFunction`)."""

        def name(self) -> str:
            return "torch::autograd::Identity"

        def __repr__(self) -> str:
            return f"<CppFunction object at {id(self):#x}>"

    # set after the class statement, so the row stays out of the op registry
    Primal.grad_fn_name = "Identity"
    Primal.__ad_type_name__ = "CppFunction"
    return Primal


_Primal: Any = None


def tangent_text(t: Tensor) -> str | None:
    """The `tangent=...` suffix of a tensor's repr at the public level, or None."""
    if not _public:
        return None
    tangent = get_tangent(t, _public[-1])
    if tangent is None:
        return None
    if tangent.data_.ndim == 0 and not tangent.requires_grad:
        return "tangent=" + repr(tangent.data_.item())
    return "tangent=" + repr(tangent)


def module_members() -> dict[str, Any]:
    """`torch.autograd.forward_ad`'s names."""
    return {
        "dual_level": dual_level,
        "make_dual": make_dual,
        "unpack_dual": unpack_dual,
        "enter_dual_level": enter_dual_level,
        "exit_dual_level": exit_dual_level,
        "UnpackedDualTensor": UnpackedDualTensor,
    }


def reset() -> None:
    """Close every level (a host's fresh start)."""
    global _ceiling
    _ceiling = math.inf
    for level in reversed(list(_levels)):
        close_level(level)
    _public.clear()
    _install()


def custom_apply(jvp: Any, ctx: Any, inputs: tuple[Any, ...], forward: Any) -> Any:
    """Forward AD for a custom autograd.Function: run `forward()` with the inputs'
    tangents hidden, then give its outputs the tangents of the user's
    `jvp(ctx, *input_tangents)` (zeros for an input without one), at each level
    where an input has a tangent.  Without such a level, just `forward()`."""
    levels = [
        lv
        for lv in _levels
        if lv < _ceiling and any(get_tangent(x, lv) is not None for x in inputs)
    ]
    if not levels:
        return forward()
    with hidden(levels[0]):
        out = forward()
    outs = out if isinstance(out, tuple) else (out,)
    for level in levels:
        from . import ops

        tangents = [
            (get_tangent(x, level) if get_tangent(x, level) is not None else ops.zeros_like(x))
            if isinstance(x, Tensor)
            else None
            for x in inputs
        ]
        with hidden(level):
            result = jvp(ctx, *tangents)
        results = result if isinstance(result, tuple) else (result,)
        for o, r in zip(outs, results, strict=False):
            if isinstance(o, Tensor) and isinstance(r, Tensor):
                set_tangent(o, level, r)
    return out
