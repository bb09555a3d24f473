"""torch.autograd.gradcheck and gradgradcheck: gradients checked against finite differences.

PyTorch's arguments, results and messages, in slow mode: a full numerical
Jacobian by central differences, an analytical one by one vector-Jacobian
product per output element. (`adcli check`, which checks every gradient a
script computes, is adcli.core.checker.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import engine, ops
from .config import check_numel
from .config import config as engine_config
from .node import Function, printed_as_pytorch
from .tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck", "muted"]


# ====================================================================== builtins


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails (PyTorch's class name)."""

    __ad_public__ = True  # scripts see this class by name, as torch.autograd has it


@contextmanager
def muted() -> Iterator[None]:
    """No backward/grad events for the calls made here (they are not the script's)."""
    saved = engine.listeners[:]
    engine.listeners.clear()
    try:
        yield
    finally:
        engine.listeners[:] = saved


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _outputs_of(value: Any) -> tuple[Tensor, ...]:
    outs = _as_tuple(value)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"gradcheck: the function must return tensors, not {type(o).__name__}")
    return outs


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """torch.autograd.gradcheck: True when the analytical Jacobian of `func` at
    `inputs` matches central finite differences; else raises GradcheckError
    (or returns False with raise_exception=False)."""
    if not check_forward_ad and not check_backward_ad:
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    args = (
        func,
        inputs,
        eps,
        atol,
        rtol,
        nondet_tol,
        check_undefined_grad,
        check_forward_ad,
        check_backward_ad,
    )
    if not raise_exception:
        try:
            return _gradcheck(*args)
        except GradcheckError:
            return False
    return _gradcheck(*args)


def _gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float,
    check_undefined_grad: bool = True,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
) -> bool:
    tupled = _as_tuple(inputs)
    diff_inputs = [t for t in tupled if isinstance(t, Tensor) and t.requires_grad]
    for i, t in enumerate(tupled):
        if isinstance(t, Tensor) and t.requires_grad and t.data_.dtype != np.float64:
            engine_config.warn(
                f"Input #{i} requires gradient and is not a double precision floating point "
                "or complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. "
            )
        if isinstance(t, Tensor) and t.requires_grad:
            _check_not_overlapping(i, t)
    if not diff_inputs:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of "
            "them have requires_grad=True."
        )
    func_out = _outputs_of(func(*tupled))
    numerical = _numerical_jacobian(func, tupled, diff_inputs, func_out, eps)
    if check_backward_ad:
        _check_backward(
            func,
            tupled,
            diff_inputs,
            func_out,
            numerical,
            rtol,
            atol,
            nondet_tol,
            check_undefined_grad,
        )
    if check_forward_ad:  # after the backward checks, as PyTorch orders them
        _check_forward(func, tupled, diff_inputs, numerical, rtol, atol)
    return True


def _check_not_overlapping(i: int, t: Tensor) -> None:
    """PyTorch's refusal of an input with a stride-0 dimension of more than one element
    (an expand): nudging one element would nudge them all. (NumPy's strides of adcli's
    arrays are zero exactly there; a negative one, of a flipped view, is no overlap.)"""
    d = t.data_
    if any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape, strict=True)):
        raise RuntimeError(
            f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
            "that are non-overlapping to be able to compute the numerical gradients "
            "correctly. You should call .contiguous on the input before passing it to "
            "gradcheck."
        )


_UNDEFINED = (
    "Expected all input grads to be undefined or zero when all output grads are undefined "
    'or zero. Please look at "Notes about undefined output gradients" in '
    '"tools/autograd/derivatives.yaml"'
)


_BC_WARNING = (
    "Backwards compatibility: New undefined gradient support checking feature is enabled "
    "by default, but it may break existing callers of this function. If this is true for "
    'you, you can call this function with "check_undefined_grad=False" to disable the '
    "feature"
)
_UNHANDLED = (
    "Expected backward function to handle undefined output grads. "
    'Please look at "Notes about undefined output gradients" in '
    '"tools/autograd/derivatives.yaml"'
)


def _zero_grad_outputs(outputs: list[Tensor], diff_inputs: list[Tensor], message: str) -> None:
    """PyTorch's check that a zero gradient for every output gives zero input gradients
    (a custom backward that ignores its grad_output fails here)."""
    zeros = [Tensor._make(np.zeros_like(o.data_)) for o in outputs]
    with muted():
        gs = engine.grad(outputs, diff_inputs, zeros, allow_unused=True)
    for g in gs:
        if g is not None and np.any(g.data_ != 0):
            raise GradcheckError(message)


class UndefinedGrad(Function):
    """PyTorch's `torch._C._functions.UndefinedGrad`: the output unchanged, whose
    backward sends an undefined gradient on (hooks behind it see None)."""

    def forward(ctx: Function, a: Tensor) -> np.ndarray:
        return a.data_.copy()

    def backward(ctx: Function, g: Tensor | None) -> tuple[Tensor | None, ...]:
        return (None,)


# PyTorch's node name, set after the class exists so the op registry does not list it
type.__setattr__(UndefinedGrad, "grad_fn_name", "UndefinedGradBackward")
printed_as_pytorch(UndefinedGrad)


def _undefined_grad_outputs(
    func: Callable[..., Any], tupled: tuple[Any, ...], diff_inputs: list[Tensor]
) -> None:
    """PyTorch's check of undefined output gradients (which reach a custom backward as
    zeros, a tensor hook as None): with all of them undefined, then, for several
    outputs, one at a time (the others get zeros). Each case runs the function again,
    as PyTorch does (a script printing in its forward or backward prints as often)."""
    first = [o for o in _outputs_of(func(*tupled)) if o.requires_grad]
    cases = [[UndefinedGrad.apply(o) for o in first]]
    if len(first) > 1:
        for k in range(len(first)):
            outs = [o for o in _outputs_of(func(*tupled)) if o.requires_grad]
            cases.append([UndefinedGrad.apply(o) if i == k else o for i, o in enumerate(outs)])
    for outs in cases:
        try:
            _zero_grad_outputs(outs, diff_inputs, _UNDEFINED)
        except GradcheckError:
            engine_config.warn(_BC_WARNING)
            raise
        except RuntimeError as e:
            engine_config.warn(_BC_WARNING)
            raise GradcheckError(_UNHANDLED) from e


def _check_jacobian_size(diff_inputs: list[Tensor], output: Tensor) -> None:
    """Refuse Jacobian blocks over the tensor element limit before allocating them."""
    for x in diff_inputs:
        check_numel(x.data_.size * output.data_.size)


def _numerical_jacobian(
    func: Callable[..., Any],
    tupled: tuple[Any, ...],
    diff_inputs: list[Tensor],
    func_out: tuple[Tensor, ...],
    eps: float,
) -> list[list[Tensor]]:
    """numerical[output][input]: (input.numel(), output.numel()) by central differences,
    each input element moved in place as PyTorch does (without a version bump)."""
    for o in func_out:
        _check_jacobian_size(diff_inputs, o)
    cols: list[list[np.ndarray]] = [
        [np.zeros((x.data_.size, o.data_.size), o.data_.dtype) for x in diff_inputs]
        for o in func_out
    ]
    for j, x in enumerate(diff_inputs):
        data = x.data_  # moved where it is: a view keeps sharing its base's memory
        if not data.flags.writeable:  # a broadcast view: its own copy
            data = x.data_ = np.array(data)
        for k, at in enumerate(np.ndindex(data.shape)):  # PyTorch's order: C order
            orig = data[at].copy()
            data[at] = orig - eps
            outa = [o.data_.copy() for o in _outputs_of(func(*tupled))]
            data[at] = orig + eps
            outb = [o.data_.copy() for o in _outputs_of(func(*tupled))]
            data[at] = orig
            for i, (a, b) in enumerate(zip(outa, outb, strict=True)):
                with np.errstate(all="ignore"):
                    d = (b - a) / np.asarray(2 * eps, b.dtype)
                cols[i][j][k] = d.reshape(-1)
    return [[Tensor._make(c) for c in per_out] for per_out in cols]


def _check_backward(
    func: Callable[..., Any],
    tupled: tuple[Any, ...],
    diff_inputs: list[Tensor],
    func_out: tuple[Tensor, ...],
    numerical: list[list[Tensor]],
    rtol: float,
    atol: float,
    nondet_tol: float,
    check_undefined_grad: bool,
) -> None:
    """check_backward_ad: the Jacobian from backward passes against the numerical one,
    then PyTorch's zero and undefined grad_output checks."""
    outputs = [(i, o) for i, o in enumerate(func_out) if o.requires_grad]
    if not outputs:
        for per_input in numerical:
            for n in per_input:
                if not np.allclose(n.data_, 0.0, rtol=rtol, atol=atol):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    for k, (i, o) in enumerate(outputs):
        analytical = _analytical_jacobian(o, diff_inputs, nondet_tol)
        for j, a in enumerate(analytical):
            n = numerical[i][j]
            dt = np.promote_types(a.data_.dtype, n.data_.dtype)
            with np.errstate(all="ignore"):
                close = np.allclose(
                    a.data_.astype(dt), n.data_.astype(dt), rtol=rtol, atol=atol, equal_nan=False
                )
            if not close:
                raise GradcheckError(
                    f"Jacobian mismatch for output {k:d} with respect to input {j:d},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    diff_outputs = [o for _, o in outputs]
    _zero_grad_outputs(diff_outputs, diff_inputs, "backward not multiplied by grad_output")
    if check_undefined_grad:
        _undefined_grad_outputs(func, tupled, diff_inputs)


def _check_forward(
    func: Callable[..., Any],
    tupled: tuple[Any, ...],
    diff_inputs: list[Tensor],
    numerical: list[list[Tensor]],
    rtol: float,
    atol: float,
) -> None:
    """check_forward_ad: the Jacobian from forward-mode AD (one one-hot tangent per
    input element, as PyTorch builds it) against the numerical one."""
    from adcli.autograd import forward_ad

    positions = {id(x): j for j, x in enumerate(diff_inputs)}
    for j, x in enumerate(diff_inputs):
        cols = [np.zeros(n[j].data_.shape, n[j].data_.dtype) for n in numerical]
        for k in range(x.data_.size):
            onehot = np.zeros(x.data_.shape, x.data_.dtype)
            onehot.reshape(-1)[k] = 1
            with forward_ad.dual_level(), muted():
                args = tuple(
                    forward_ad.make_dual(a, Tensor._make(onehot))
                    if isinstance(a, Tensor) and positions.get(id(a)) == j
                    else a
                    for a in tupled
                )
                for i, o in enumerate(_outputs_of(func(*args))):
                    tangent = forward_ad.unpack_dual(o).tangent
                    if tangent is not None:
                        cols[i][k] = tangent.data_.reshape(-1)
        for i, n in enumerate(numerical):
            a, num = cols[i], n[j].data_
            with np.errstate(all="ignore"):
                close = np.allclose(a, num, rtol=rtol, atol=atol, equal_nan=False)
            if not close:
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {i:d} with "
                    f"respect to input {j:d},\nnumerical:{n[j]}\n"
                    f"analytical:{Tensor._make(a)}\n"
                )


def _analytical_jacobian(
    output: Tensor, diff_inputs: list[Tensor], nondet_tol: float
) -> list[Tensor]:
    """(input.numel(), output.numel()) per input, one vjp per output element (twice, to
    tell a non-reentrant backward, as PyTorch does)."""

    _check_jacobian_size(diff_inputs, output)

    def rows() -> list[np.ndarray]:
        jac = [np.zeros((x.data_.size, output.data_.size), x.data_.dtype) for x in diff_inputs]
        for k in range(output.data_.size):
            onehot = np.zeros(output.data_.shape, output.data_.dtype)
            onehot.reshape(-1)[k] = 1
            with muted():
                gs = engine.grad(
                    output,
                    diff_inputs,
                    Tensor._make(onehot),
                    retain_graph=True,
                    allow_unused=True,
                )
            for j, g in enumerate(gs):
                if g is not None:
                    if g.data_.size != diff_inputs[j].data_.size:
                        raise GradcheckError("Analytical gradient has incorrect size")
                    jac[j][:, k] = g.data_.reshape(-1)
        return jac

    first = rows()
    second = rows()
    for a, b in zip(first, second, strict=True):
        # as PyTorch: the largest difference, which is NaN (so no error) when any is NaN
        if a.size and np.max(np.abs(a - b)) > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}."
            )
    return [Tensor._make(a) for a in first]


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """torch.autograd.gradgradcheck: gradcheck of the function's vector-Jacobian
    product. Without `grad_outputs`, random ones uniform in [-1, 1) are drawn from
    the global generator, as torch.testing.make_tensor draws them."""
    from . import random as rng

    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        outs = [o for o in _outputs_of(func(*tupled)) if o.requires_grad]
        gos = []
        for o in outs:
            dt = o.data_.dtype if o.data_.dtype.kind == "f" else np.dtype(np.float64)
            data = rng.default_generator.uniform(o.data_.shape, -1.0, 1.0, dt.name)
            gos.append(ops._finish(np.asarray(data, dt), True))
        tupled_go = tuple(gos)
    else:
        tupled_go = _as_tuple(grad_outputs)
    n_out = len(tupled_go)
    diff_in = {i for i, x in enumerate(tupled) if isinstance(x, Tensor) and x.requires_grad}
    diff_go = {i for i, x in enumerate(tupled_go) if isinstance(x, Tensor) and x.requires_grad}

    def new_func(*args: Any) -> tuple[Tensor, ...]:
        in_args = args[:-n_out] if n_out else args
        outs = [o for o in _outputs_of(func(*in_args)) if o.requires_grad]
        gos = tuple(x for x in args[len(args) - n_out :])
        diff = [x for i, x in enumerate(in_args) if i in diff_in]
        with muted():
            gi = engine.grad(outs, diff, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gi if g is not None)

    del diff_go  # requires_grad is kept on the tensors themselves here
    return gradcheck(
        new_func,
        tupled + tupled_go,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
    )
