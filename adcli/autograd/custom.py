"""Custom autograd Functions: `torch.autograd.Function` with its `ctx`.

A user class derives from `Function` and writes two static methods, `forward`
and `backward` (or `forward` without `ctx` plus `setup_context`); `apply` runs
the forward with grad mode off and, when an input requires grad, makes the
outputs' `grad_fn` a node of the class `<Name>Backward`, made once per user
class.  As in PyTorch, that node is also the `ctx` the user's methods receive,
so what `forward` stores on it (`ctx.constant = c`) is there in `backward`.

The node's backward calls the user's `backward` and checks what it returns with
PyTorch's sentences (number of gradients, types, shapes); the engine then sums
each gradient to its input's shape and casts it to its dtype, as for any node.
Saved outputs are kept as data and rebuilt on unpacking (as the built-in
operations do), so saving an output makes no reference cycle.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import forward_ad, grad_mode
from . import node as _node
from . import profiler as _profiler
from .node import (
    FREED_MESSAGE,
    Freed,
    Node,
    SavedTensor,
    SavedTensorError,
    _intern_meta,
    _version_message,
    printed_as_pytorch,
)
from .node import Function as _OpNode
from .tensor import Tensor, _register_retain

__all__ = [
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "user_backward_name",
]

_MODULE = "torch.autograd.function"  # where PyTorch's classes live (their printed names)

NO_FORWARD = "You must implement the forward function for custom autograd.Function."
NO_BACKWARD = (
    "You must implement either the backward or vjp method for your custom autograd.Function "
    "to use it with backward mode AD."
)
NO_JVP = (
    "You must implement the jvp function for custom autograd.Function to use it with forward "
    "mode AD."
)
BOTH_BACKWARD = (
    "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
    "only implement one of them."
)
DIRTY_NOT_RETURNED = (
    "Some elements marked as dirty during the forward method were not returned as output. "
    "The inputs that are modified inplace must all be outputs of the Function."
)
DIRTY_LEAF = "a leaf Variable that requires grad has been used in an in-place operation."
TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"
LEGACY = (
    "Legacy autograd function with non-static forward method is deprecated. Please use "
    "new-style autograd function with static forward method. (Example: "
    "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)


class FunctionCtx:
    """What `forward`/`setup_context` call on `ctx` to prepare the backward."""

    __slots__ = ()

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors (or None) for `backward`, which reads them as `ctx.saved_tensors`."""
        self._to_save = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that `forward` changed in place (they must be returned)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that get no gradient (they do not require grad)."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """False: `backward` gets None, not zeros, for outputs that got no gradient."""
        self._materialize = bool(value)


class BackwardCFunction(FunctionCtx, _OpNode):
    """The graph node of one `apply` call, which is also its `ctx` (one subclass per user
    class, named `<Name>Backward`).  Attributes a script sets on it live in the instance
    dict; the guard lets scripts read and write them (`__ad_open__`)."""

    __slots__ = (
        "_to_save",
        "_dirty",
        "_non_diff",
        "_materialize",
        "_arg_is_tensor",  # per forward argument: was it a tensor (has an edge)?
        "_out_meta",  # per output: (shape, dtype) for materialised zero gradients, or None
        "_metadata",
    )
    __ad_attrs__ = Node.__ad_attrs__ | {
        "save_for_backward",
        "saved_tensors",
        "needs_input_grad",
        "mark_dirty",
        "mark_non_differentiable",
        "set_materialize_grads",
        "metadata",
    }
    __ad_settable__ = frozenset({"needs_input_grad"})
    __ad_open__ = True
    multi_output = True  # the engine passes one gradient per output of forward
    runs_undefined = True  # the user's backward gets zeros (or None) for undefined ones
    _forward_cls: ClassVar[type[Function]]

    def __repr__(self) -> str:
        return f"<{_MODULE}.{self.grad_fn_name} object at {id(self):#x}>"

    @property
    def metadata(self) -> dict[str, Any]:
        """A dict for the user's own notes (PyTorch's `grad_fn.metadata`)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors given to `save_for_backward`, checked against in-place changes;
        raises PyTorch's error once a backward pass freed them."""
        saved = self.saved
        if type(saved) is Freed:
            raise SavedTensorError(FREED_MESSAGE, self)
        return tuple([s if s is None else _unpack(s, self) for s in saved])

    @staticmethod
    def backward(ctx: BackwardCFunction, *grads: Tensor | None) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        """Run the user's backward and check its gradients (called by the engine)."""
        if ctx._materialize:
            grads = tuple(
                [
                    Tensor._make(np.zeros(m[0], m[1])) if g is None and m is not None else g
                    for g, m in zip(grads, ctx._out_meta, strict=True)
                ]
            )
        user = _user_backward(ctx._forward_cls)
        return _checked_grads(ctx, user(ctx, *grads))


class _SavedOutput:
    """An output of the node saved for backward: its data and version, not the tensor
    (which holds the node: no reference cycle); rebuilt as the output when unpacked."""

    __slots__ = ("data", "counter", "version", "nr")

    def __init__(self, t: Tensor, nr: int) -> None:
        self.data = t.data_
        self.counter = t._vc
        self.version = t._vc[0]
        self.nr = nr


def _unpack(s: SavedTensor | _SavedOutput, node: BackwardCFunction) -> Tensor:
    if type(s) is SavedTensor:
        return s.unpack(node)
    if s.counter[0] != s.version:
        shim = SavedTensor(None, output_data=s.data, counter=s.counter)
        shim.version = s.version
        raise SavedTensorError(_version_message(shim, node), node, s.counter)
    return Tensor._make(s.data, True, node, s.counter, s.nr)


def user_backward_name(node: Node) -> str | None:
    """`Exp.backward` (or `Exp.vjp`) for a custom Function's node, else None: what a
    report names as the user-written backward of the node."""
    if not isinstance(node, BackwardCFunction):
        return None
    cls = node._forward_cls
    method = "vjp" if cls.vjp is not Function.vjp else "backward"
    return f"{cls.__name__}.{method}"


def _user_backward(cls: type[Function]) -> Callable[..., Any]:
    """The user's `backward` (or `vjp`), as PyTorch picks it."""
    backward = cls.backward
    vjp = cls.vjp
    own_backward = backward is not Function.backward
    own_vjp = vjp is not Function.vjp
    if own_backward and own_vjp:
        raise RuntimeError(BOTH_BACKWARD)
    return vjp if own_vjp else backward


def _expandable(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to), strict=False))


def _checked_grads(ctx: BackwardCFunction, result: Any) -> tuple[Tensor | None, ...]:
    """One gradient per tensor input (the engine's edges), from what the user returned."""
    name = ctx.grad_fn_name
    res = result if type(result) is tuple else (result,)
    n = len(ctx._arg_is_tensor)
    if len(res) > n and all(g is None for g in res[n:]):
        res = res[:n]  # extra trailing Nones are allowed, as in PyTorch
    if len(res) != n:
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected {n}, "
            f"got {len(res)})"
        )
    out: list[Tensor | None] = []
    for i, (g, is_tensor) in enumerate(zip(res, ctx._arg_is_tensor, strict=True)):
        if not is_tensor:
            if g is not None:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
            continue
        if g is not None and not isinstance(g, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        out.append(g)
    for k, (g, (nxt, _), meta) in enumerate(zip(out, ctx.next_functions, ctx.in_meta, strict=True)):
        if g is None or nxt is None:
            continue
        if not _expandable(meta[0], g.data_.shape):
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {k} - got "
                f"{list(g.data_.shape)} but expected shape compatible with {list(meta[0])}"
            )
    return tuple(out)


# ---------------------------------------------------------------- the user's base class


class Function:
    """`torch.autograd.Function`: derive from it, write static `forward(ctx, ...)` and
    `backward(ctx, *grad_outputs)`, and call `YourClass.apply(...)`."""

    __ad_subclass__ = True  # script classes may derive from it
    __ad_attrs__ = frozenset(
        {"apply", "forward", "backward", "setup_context", "vjp", "jvp", "mark_dirty"}
    )
    _backward_cls: ClassVar[type[BackwardCFunction]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = f"{cls.__name__}Backward"
        node_cls = type(
            name,
            (BackwardCFunction,),
            {"__slots__": (), "_forward_cls": cls, "__module__": _MODULE, "__qualname__": name},
        )
        # set after the class exists: the engine's op registry (README tables, fuzz
        # coverage) lists only classes that declare grad_fn_name in their body
        type.__setattr__(node_cls, "grad_fn_name", name)
        cls._backward_cls = node_cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(LEGACY)

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs (overridden by the user's class)."""
        raise NotImplementedError(NO_FORWARD)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        """Prepare `ctx` from the inputs and output, for a `forward` without `ctx`."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """The gradients of the inputs (overridden by the user's class)."""
        raise NotImplementedError(NO_BACKWARD)

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        """Another name for `backward` (a class defines one of the two)."""
        raise NotImplementedError(NO_BACKWARD)

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Forward-mode derivative (not supported by adcli's custom Functions)."""
        raise NotImplementedError(NO_JVP)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run `forward` and record a `<Name>Backward` node for the outputs."""
        if cls is Function or cls.forward is Function.forward:
            raise NotImplementedError(NO_FORWARD)
        setup = cls.setup_context is not Function.setup_context
        args, kwargs = bind_inputs(cls, args, kwargs)
        node_cls = cls._backward_cls
        ctx = node_cls.__new__(node_cls)
        _init_ctx(ctx, args)
        record = grad_mode.state.enabled and True in ctx.needs_input_grad

        def run() -> Any:
            with grad_mode.no_grad():
                if setup:
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args)
            return _wrap_outputs(ctx, args, output, record)

        if _node.prof is not None:  # a profile is open: a range named after the class
            return _profiler.within(cls.__name__, forward_ad.custom_apply, cls.jvp, ctx, args, run)
        # under forward AD, the outputs' tangents come from the class's jvp
        return forward_ad.custom_apply(cls.jvp, ctx, args, run)


def bind_inputs(
    cls: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The forward's inputs (positional) and remaining keywords, as `apply` binds them."""
    if cls.setup_context is not Function.setup_context:
        bound = inspect.signature(cls.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args, bound.kwargs
    if kwargs:
        return _bind_keywords(cls.forward, args, kwargs), {}
    return args, kwargs


def _bind_keywords(forward: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Keyword arguments of `apply` as positional inputs, as PyTorch binds them (no
    defaults filled in, so every parameter before the last one named must be given)."""
    params = list(inspect.signature(forward).parameters.values())[1:]  # after ctx
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    for k in kwargs:
        if k not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{k}'")
        if names.index(k) < len(args):
            raise TypeError(f"forward() got multiple values for argument '{k}'")
    last = max(names.index(k) for k in kwargs)
    out = list(args)
    for i in range(len(args), last + 1):
        if names[i] not in kwargs:
            raise TypeError(f"forward() missing required argument: '{names[i]}' (position {i})")
        out.append(kwargs[names[i]])
    return tuple(out)


def _init_ctx(ctx: BackwardCFunction, args: tuple[Any, ...]) -> None:
    ctx.saved = ()
    ctx._to_save = ()
    ctx._dirty = ()
    ctx._non_diff = ()
    ctx._materialize = True
    ctx._arg_is_tensor = tuple([isinstance(a, Tensor) for a in args])
    ctx.needs_input_grad = tuple([isinstance(a, Tensor) and a.requires_grad for a in args])
    ctx._out_meta = ()
    ctx._metadata = None
    ctx.next_functions = ()
    ctx.in_meta = ()
    ctx.seq = 0
    ctx.pre_hooks = None
    ctx.retained = None
    ctx.outputs = None
    ctx._label = None


def _contains(items: tuple[Any, ...], t: Any) -> bool:
    return any(x is t for x in items)


def _wrap_outputs(ctx: BackwardCFunction, args: tuple[Any, ...], output: Any, record: bool) -> Any:
    """The outputs as the caller sees them: each tensor output linked to `ctx` (when
    recording), an input returned as it was becoming a new tensor on the same data,
    a dirty input staying the same tensor (its version bumped)."""
    is_tuple = type(output) is tuple
    raw = output if is_tuple else (output,)
    dirty = ctx._dirty
    for d in dirty:
        if not _contains(raw, d):
            raise RuntimeError(DIRTY_NOT_RETURNED)
    if record:
        from .node import _sequence

        _link_inputs(ctx, args)
        ctx.seq = next(_sequence)
    outs: list[Any] = []
    refs: list[Any] = []
    metas: list[Any] = []
    for i, o in enumerate(raw):
        if not isinstance(o, Tensor):
            outs.append(o)
            refs.append(None)
            metas.append(None)
            continue
        metas.append(_intern_meta((o.data_.shape, o.data_.dtype)))
        is_input, dirty_one = _contains(args, o), _contains(dirty, o)
        if dirty_one:
            o._vc[0] += 1
        differentiable = record and not _contains(ctx._non_diff, o) and o.data_.dtype.kind in "fc"
        t = o
        if not differentiable:
            if o.requires_grad and is_input:  # a detached alias: the input stays as it is
                t = Tensor._make(o.data_, False, None, o._vc, i)
            elif o.requires_grad and o._base is None:  # made in forward: detached in place
                o.grad_fn = None
                o._requires_grad = False
            elif not o.requires_grad and is_input and not dirty_one:
                t = Tensor._make(o.data_, False, None, o._vc, i)
        elif dirty_one:
            if o.requires_grad and o.grad_fn is None:
                raise RuntimeError(DIRTY_LEAF)
            _adopt(o, ctx, i)
            if o._retains_grad:
                _register_retain(o)
        elif is_input or o._base is not None:
            # an input returned as it is (or a view): a new tensor on the same data
            t = Tensor._make(o.data_, True, ctx, o._vc, i)
        else:
            _adopt(o, ctx, i)
            o._label = None  # new to the host: its note named a variable of forward
        outs.append(t)
        refs.append(weakref.ref(t) if differentiable else None)
    if record:
        ctx.outputs = tuple(refs)
        ctx._out_meta = tuple(metas)
        ctx.saved = _saved(ctx, outs)
    else:
        ctx._to_save = ()
    ctx._dirty = ctx._non_diff = ()
    return tuple(outs) if is_tuple else outs[0]


def _adopt(t: Tensor, ctx: BackwardCFunction, nr: int) -> None:
    """Make `t` output `nr` of `ctx`."""
    t.grad_fn = ctx
    t._requires_grad = True
    t._output_nr = nr


def _link_inputs(ctx: BackwardCFunction, args: tuple[Any, ...]) -> None:
    """The node's edges and input metas, for the tensor arguments only."""
    edges = []
    metas = []
    for a in args:
        if not isinstance(a, Tensor):
            continue
        metas.append(_intern_meta((a.data_.shape, a.data_.dtype)))
        if not a.requires_grad:
            edges.append((None, 0))
        elif a.grad_fn is not None:
            edges.append((a.grad_fn, a._output_nr))
        elif a._requires_grad:
            edges.append((a._accumulator(), 0))
        else:  # a view made under no_grad: requires grad, leads nowhere
            edges.append((None, 0))
    ctx.next_functions = tuple(edges)
    ctx.in_meta = tuple(metas)


def _saved(ctx: BackwardCFunction, outs: list[Any]) -> tuple[Any, ...]:
    saved: list[Any] = []
    for i, t in enumerate(ctx._to_save):
        if t is None:
            saved.append(None)
        elif not isinstance(t, Tensor):
            raise TypeError(
                f"save_for_backward can only save variables, but argument {i} is of type "
                f"{type(t).__name__}"
            )
        elif t._grad_fn is ctx:
            saved.append(_SavedOutput(t, t._output_nr))
        else:
            saved.append(SavedTensor(t))
    ctx._to_save = ()
    return tuple(saved)


# ---------------------------------------------------------------- once_differentiable


class DelayedError(_OpNode):
    """The node once_differentiable puts behind gradients computed with create_graph:
    differentiating through it fails with PyTorch's error."""

    multi_output = True
    runs_undefined = True

    def name(self) -> str:
        """`torch::autograd::Error`, as PyTorch's `name()` spells it."""
        return "torch::autograd::Error"

    @staticmethod
    def forward(ctx: Any, *inputs: Tensor) -> tuple[np.ndarray, ...]:
        return tuple(t.data_ for t in inputs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        raise RuntimeError(TWICE)


# PyTorch's class name; set after the class exists, so the op registry does not list it
type.__setattr__(DelayedError, "grad_fn_name", "Error")
type.__setattr__(DelayedError, "__name__", "Error")
printed_as_pytorch(DelayedError)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a `backward` that is not differentiable itself: it runs without
    recording, and differentiating its result again raises PyTorch's error."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.state.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if type(outputs) is not tuple:
            outputs = (outputs,)
        present = [i for i, v in enumerate(outputs) if isinstance(v, Tensor)]
        if not present:
            return outputs
        fakes = [Tensor._make(outputs[i].data_, True) for i in present]
        errs = DelayedError.apply(*fakes)
        result = list(outputs)
        for i, e in zip(present, errs, strict=True):
            result[i] = e
        return tuple(result)

    return wrapper
