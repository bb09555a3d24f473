"""`Module.register_full_backward_hook`: identity nodes around a module's call.

As in PyTorch, the tensors going into the module and the tensors coming out of it
pass through an identity node named `BackwardHookFunctionBackward`.  The node after
the outputs sees the gradients of the outputs (grad_output); the node before the
inputs sees the gradients of the inputs (grad_input) and calls the hooks, whose
result may replace them.  When no input requires grad, the hooks fire at the
outputs with grad_input all None (and PyTorch's warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd import grad_mode
from ..autograd.config import config
from ..autograd.node import Function, printed_as_pytorch
from ..autograd.tensor import Tensor

NO_INPUT_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module "
    "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
    "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
    "details."
)


class BackwardHookFunction(Function):
    """Identity on several tensors at once (one node for all of a module's inputs, or
    all of its outputs)."""

    multi_output = True

    def forward(ctx, *tensors):
        return tuple(t.data_ for t in tensors)

    def backward(ctx, *grads):
        return grads

    def __repr__(self) -> str:
        return f"<torch.autograd.function.BackwardHookFunctionBackward object at {id(self):#x}>"


# Set after the class statement: not an operation of the table, so it stays out of
# Function.registry (which tests/test_ops.py covers case by case).
BackwardHookFunction.grad_fn_name = "BackwardHookFunctionBackward"
printed_as_pytorch(BackwardHookFunction)
BackwardHookFunction.__module__ = "torch.autograd.function"  # a Python Function's node


def _zeros(shape_dtype: tuple[tuple[int, ...], np.dtype]) -> Tensor:
    return Tensor._make(np.zeros(shape_dtype[0], shape_dtype[1]))


class _Call:
    """The state of one hooked call: where each tensor sits, the grad_output seen."""

    def __init__(self, module: Any, hooks: list[Callable], n_args: int) -> None:
        self.module = module
        self.hooks = hooks
        self.n_args = n_args
        self.input_index: list[int] = []  # positions of the args that require grad
        self.input_meta: dict[int, tuple[tuple[int, ...], np.dtype]] = {}  # other tensors
        self.grad_output: tuple[Any, ...] | None = None

    def run_hooks(self, grad_input: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """Call every hook; the last non-None result replaces grad_input."""
        grad_output = self.grad_output if self.grad_output is not None else ()
        result = None
        for hook in list(self.hooks):
            out = hook(self.module, grad_input, grad_output)
            if out is None:
                continue
            if not isinstance(out, (tuple, list)):
                out = (out,)
            if len(out) != len(grad_input):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(grad_input)}"
                )
            grad_input = tuple(out)
            result = grad_input
        return result


def wrap_inputs(call: _Call, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Route the args that require grad through one identity node whose pre-hook calls
    the module's backward hooks."""
    if not grad_mode.state.enabled:
        return args
    index = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not index:
        return args
    call.input_index = index
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and i not in index:
            call.input_meta[i] = (a.data_.shape, a.data_.dtype)
    outs = BackwardHookFunction.apply(*[args[i] for i in index])
    metas = [(args[i].data_.shape, args[i].data_.dtype) for i in index]

    def prehook(grads: tuple[Any, ...]) -> tuple[Any, ...] | None:
        full: list[Any] = [None] * call.n_args
        for k, i in enumerate(index):
            full[i] = grads[k] if grads[k] is not None else _zeros(metas[k])
        for i, meta in call.input_meta.items():
            full[i] = _zeros(meta)
        new = call.run_hooks(tuple(full))
        if new is None:
            return None
        return tuple(new[i] for i in index)

    outs[0].grad_fn.register_prehook(prehook)
    wrapped = list(args)
    for k, i in enumerate(index):
        wrapped[i] = outs[k]
    return tuple(wrapped)


def wrap_outputs(call: _Call, result: Any) -> Any:
    """Route the output tensors through one identity node that records grad_output
    (and calls the hooks itself when no input required grad)."""
    single = isinstance(result, Tensor)
    items = (result,) if single else result
    if not isinstance(items, tuple) or not grad_mode.state.enabled:
        return result
    index = [i for i, t in enumerate(items) if isinstance(t, Tensor) and t.requires_grad]
    if not index:
        return result
    metas = [(items[i].data_.shape, items[i].data_.dtype) for i in index]
    outs = BackwardHookFunction.apply(*[items[i] for i in index])
    n = len(items)

    def prehook(grads: tuple[Any, ...]) -> None:
        full: list[Any] = [None] * n
        for k, i in enumerate(index):
            full[i] = grads[k] if grads[k] is not None else _zeros(metas[k])
        call.grad_output = tuple(full)
        if not call.input_index:
            config.warn(NO_INPUT_WARNING)
            new = call.run_hooks((None,) * call.n_args)
            if new is not None and any(g is not None for g in new):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should "
                    "always return None or None for all gradients."
                )
        return None

    outs[0].grad_fn.register_prehook(prehook)
    wrapped = list(items)
    for k, i in enumerate(index):
        wrapped[i] = outs[k]
    return wrapped[0] if single else tuple(wrapped)
