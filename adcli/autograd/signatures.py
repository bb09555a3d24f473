"""PyTorch's own parameter names on adcli's ops, and their `out=` argument.

The ops name their parameters for the engine (`a`, `b`); scripts call them the way
PyTorch names them: `torch.matmul(input=x, other=w)`, `x.add(other=y, alpha=2)`,
`x.permute(dims=(1, 0))`, `torch.exp(x, out=buf)`. `conform()` wraps one op so that:

- keywords are renamed to the op's own names (positional calls go straight through,
  so nothing changes for them and the op itself stays the single implementation);
- a `*shape` op takes its sequence by keyword too (`reshape(shape=...)`);
- `out=` writes the result into the given tensor as PyTorch does (cast to its dtype,
  resized with PyTorch's warning when its shape differs, refused when autograd records).

The tables below list PyTorch's names for the op's leading parameters, in order (they
are aligned with the op's own by position). tests/conformance/test_signatures_vs_torch.py
calls every name through these keywords in adcli and in PyTorch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from . import grad_mode
from .budget import WATCH_BYTES, watch
from .config import config
from .tensor import Tensor, _write, check_no_overlap, check_no_partial_overlap

__all__ = ["FUNCTIONS", "METHODS", "OUT", "conform", "conform_methods", "conform_table"]


def _names(group: str, params: str) -> dict[str, str]:
    return dict.fromkeys(group.split(), params)


# torch.X: PyTorch's names of the op's leading parameters.
FUNCTIONS: dict[str, str] = {
    **_names(
        "abs exp log log1p sqrt sin cos tan tanh sigmoid relu sign sgn floor ceil square "
        "reciprocal neg negative logical_not isnan isinf isfinite clone ravel t sum mean prod "
        "max min amax amin argmax argmin all any norm logsumexp var std cumsum softmax "
        "log_softmax transpose flatten squeeze unsqueeze narrow select diagonal as_strided "
        "gather masked_fill chunk unbind flip round clamp clip permute movedim moveaxis "
        "reshape zeros_like ones_like empty_like full_like randn_like rand_like "
        "asin acos atan arcsin arccos arctan rsqrt "
        "asin_ acos_ atan_ arcsin_ arccos_ arctan_ rsqrt_ "
        "abs_ exp_ log_ log1p_ sqrt_ sin_ cos_ tan_ tanh_ sigmoid_ relu_ floor_ ceil_ "
        "square_ reciprocal_ neg_ negative_ round_ clamp_ clip_ clamp_min_ clamp_max_ index_put_ "
        "topk sort argsort",
        "input",
    ),
    **_names(
        "add sub mul div eq ne gt ge lt le floor_divide remainder maximum minimum matmul "
        "equal allclose",
        "input other",
    ),
    **_names("mm bmm", "input mat2"),
    **_names("outer ger", "input vec2"),
    "mv": "input vec",
    "pow": "input exponent",
    "dot": "input tensor",
    "addmm": "input mat1 mat2",
    "true_divide": "input other",
    "where": "condition input other",
    "swapaxes": "input axis0 axis1",
    "split": "tensor",
    "dropout": "input p train",
}

# Tensor.X (after self).
METHODS: dict[str, str] = {
    **_names(
        "add sub mul div true_divide floor_divide remainder eq ne gt ge lt le matmul",
        "other",
    ),
    **_names("mm bmm", "mat2"),
    **_names("outer ger", "vec2"),
    "mv": "vec",
    "dot": "tensor",
    "addmm": "mat1 mat2",
    "where": "condition other",
    "swapaxes": "axis0 axis1",
    "split": "split_size",
    "uniform_": "from to",
    "copy_": "other",
}

# PyTorch's argument parser takes NumPy's names for these parameters everywhere:
# `x.sum(axis=1, keepdims=True)` is `x.sum(dim=1, keepdim=True)`.
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim"}
# The ops with `dim`/`keepdim` that have no other renaming (wrapped for the aliases).
REDUCTIONS = (
    "sum mean prod max min amax amin argmax argmin all any norm logsumexp var std cumsum "
    "softmax log_softmax"
).split()

# `*shape` ops: the keyword PyTorch gives the sequence.
FUNCTION_VARARGS = {"permute": "dims", "reshape": "shape"}
METHOD_VARARGS = {
    "permute": "dims",
    "reshape": "shape",
    "view": "size",
    "expand": "size",
    "repeat": "repeats",
}

# torch.X that take `out=` (the ops returning one tensor).
OUT = frozenset(
    (
        "abs add addmm all amax amin any arange argmax argmin bmm cat concat concatenate ceil "
        "clamp clip cos cumsum div dot empty eq exp eye floor floor_divide full gather ge ger gt "
        "le linspace log log1p logical_not logsumexp lt matmul max maximum mean min minimum "
        "mm mul mv ne neg negative norm ones outer pow prod rand randint randn randperm "
        "reciprocal remainder round sigmoid sgn sign sin sqrt square stack std sub sum tan tanh "
        "true_divide var where zeros asin acos atan arcsin arccos arctan rsqrt"
    ).split()
)


# ------------------------------------------------------------------ the wrapper


def _renames(fn: Callable[..., Any], torch_names: str, skip_self: bool) -> dict[str, str]:
    """PyTorch's name -> the op's, for the leading parameters whose names differ."""
    if not torch_names:
        return {}
    params = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ][1 if skip_self else 0 :]
    return {t: a for t, a in zip(torch_names.split(), params, strict=False) if t != a}


def _signature(
    fn: Callable[..., Any], renames: dict[str, str], out: bool
) -> inspect.Signature | None:
    """The op's signature as PyTorch names it (for help() and completion)."""
    try:
        sig = inspect.signature(fn)
        back = {a: t for t, a in renames.items()}
        params = [p.replace(name=back.get(p.name, p.name)) for p in sig.parameters.values()]
        if out and not any(p.name == "out" for p in params):
            at = len(params) - (params and params[-1].kind == params[-1].VAR_KEYWORD)
            params.insert(
                at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
            )
        return sig.replace(parameters=params)
    except (TypeError, ValueError):
        return None


def conform(
    fn: Callable[..., Any],
    name: str,
    torch_names: str = "",
    *,
    out: bool = False,
    varargs: str | None = None,
    method: bool = False,
) -> Callable[..., Any]:
    """`fn` called with PyTorch's keyword names (and `out=` when `out`); `fn` itself
    when nothing needs renaming."""
    renames = _renames(fn, torch_names, method)
    params = inspect.signature(fn).parameters
    aliases = {k: v for k, v in NUMPY_ALIASES.items() if v in params and k not in params}
    if not renames and not out and varargs is None and not aliases:
        return fn
    first = next(iter(params), None)  # `a` of permute(a, *dims)

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, target in aliases.items():
                if alias in kwargs and target not in kwargs:
                    kwargs[target] = kwargs.pop(alias)
            seq = kwargs.pop(varargs, _NONE) if varargs is not None else _NONE
            if renames:
                named = {renames.get(k, k): v for k, v in kwargs.items()}
                if len(named) != len(kwargs):
                    dup = next(k for k in kwargs if k in renames and renames[k] in kwargs)
                    raise TypeError(f"{name}() got multiple values for argument '{dup}'")
                kwargs = named
            if seq is not _NONE:  # permute(input=x, dims=(1, 0)): both go positionally
                if not args and first in kwargs:
                    args = (kwargs.pop(first),)
                args = (*args, seq)
            if out and "out" in kwargs:
                dst = kwargs.pop("out")
                if dst is not None:
                    return write_out(name, fn, args, kwargs, dst)
        return fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", name)
    call.__doc__ = fn.__doc__
    sig = _signature(fn, renames, out)
    if sig is not None:
        call.__signature__ = sig  # type: ignore[attr-defined]
    return call


_NONE = object()

# Wrappers made once per op (module_table() runs once per session).
_made: dict[tuple[str, str], tuple[Callable[..., Any], Callable[..., Any]]] = {}


def conform_table(module: str, members: dict[str, Any]) -> None:
    """Give the `torch` table's ops PyTorch's keyword names and `out=`, in place."""
    if module != "torch":
        return
    for name, fn in members.items():
        if not callable(fn) or isinstance(fn, type):
            continue
        if (
            name not in FUNCTIONS
            and name not in OUT
            and name not in FUNCTION_VARARGS
            and name not in REDUCTIONS
        ):
            continue
        key = (module, name)
        made = _made.get(key)
        if made is None or made[0] is not fn:
            wrapped = conform(
                fn,
                name,
                FUNCTIONS.get(name, ""),
                out=name in OUT,
                varargs=FUNCTION_VARARGS.get(name),
            )
            made = _made[key] = (fn, wrapped)
        members[name] = made[1]


def conform_methods(cls: type) -> None:
    """Give the Tensor methods PyTorch's keyword names, in place (once, at import)."""
    for name in set(METHODS) | set(METHOD_VARARGS) | set(REDUCTIONS):
        fn = cls.__dict__.get(name)
        if fn is None:
            continue
        wrapped = conform(
            fn, name, METHODS.get(name, ""), varargs=METHOD_VARARGS.get(name), method=True
        )
        setattr(cls, name, wrapped)


# ------------------------------------------------------------------ out=

RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {0}, which does "
    "not match the required output shape {1}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0). (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/Resize.cpp:30.)"
)


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Tensor, ...]:
    """The tensors among the arguments (one level into lists: cat, stack)."""
    found: list[Tensor] = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x for x in v if isinstance(x, Tensor))
    return tuple(found)


def _resize(out: Tensor, shape: tuple[int, ...]) -> None:
    """PyTorch resizes an out tensor of another shape (warning unless it was empty)."""
    if out.data_.size:
        config.warn(RESIZE_WARNING.format(list(out.data_.shape), list(shape)))
    if out._base is not None:  # PyTorch would write past the view into its base's storage
        raise NotImplementedError(
            f"adcli cannot resize a view given as out=: give an out tensor of shape {list(shape)}"
        )
    data = np.empty(shape, out.data_.dtype)
    if data.nbytes >= WATCH_BYTES:  # the size limit and memory budget (budget.py)
        watch(data)
    out.data_ = data


def write_out(
    name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
) -> Tensor:
    """`fn(*args, **kwargs)` written into `out`, which is returned (PyTorch's `out=`)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    inputs = _tensors(args, kwargs)
    if grad_mode.state.enabled and (out.requires_grad or any(t.requires_grad for t in inputs)):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    result = fn(*args, **kwargs)
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not Tensor")
    if out.data_.shape != result.data_.shape:
        _resize(out, result.data_.shape)
    check_no_overlap(out.data_)
    check_no_partial_overlap(out.data_, inputs)
    _write(out, result.data_)
    out._vc[0] += 1
    return out
