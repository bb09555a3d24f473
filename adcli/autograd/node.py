"""Graph nodes (`grad_fn` objects): the Function base class, saved tensors, AccumulateGrad.

A node never holds its own output tensor strongly (only through a weak
reference), and a leaf holds its AccumulateGrad while AccumulateGrad holds the
leaf weakly: so a graph has no reference cycles and is freed by reference
counting the moment the last tensor using it goes away.

This module is below tensor.py: it does not import it, and reaches the Tensor
class through the `Tensor` name that tensor.py binds here.
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from . import grad_mode
from .config import config as _config
from .dtypes import of_array
from .storage import iterator_result

# tensor.Tensor, bound by tensor.py once the class exists (tensor.py imports this module).
Tensor: Any = None

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)

_sequence = itertools.count()


# Where anomaly mode saw each node made (the host's text of the script's stack), for
# PyTorch's "Error detected in ..." warning when that node's backward fails.
forward_traces: weakref.WeakKeyDictionary[Node, str | None] = weakref.WeakKeyDictionary()


class SavedTensorError(RuntimeError):
    """PyTorch's RuntimeError about saved tensors, carrying the node involved (and, for
    an in-place change, the version counter) so a host can name the script's lines."""

    def __init__(self, message: str, node: Node, counter: list[int] | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.counter = counter


# The (pack, unpack) pairs of the active `torch.autograd.graph.saved_tensors_hooks`
# contexts, innermost last (see adcli/autograd/graph.py).
SAVED_HOOKS: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []

# Nodes whose saved tensors PyTorch packs and unpacks in another order than adcli's
# `save` keeps them: grad_fn name -> the slots in PyTorch's order.
PACK_ORDER: dict[str, tuple[int, ...]] = {
    "DivBackward0": (1, 0),
    "PowBackward1": (1, 0, 2),
    "DotBackward0": (1, 0),
    "MvBackward0": (1, 0),
    "AddmmBackward0": (1, 0),
    "ClampBackward0": (2, 1, 0),
    "MaximumBackward0": (1, 0),
    "MinimumBackward0": (1, 0),
    "RemainderBackward1": (1, 0),
    "FmodBackward1": (1, 0),
    "Atan2Backward0": (1, 0),
    "NativeLayerNormBackward0": (2, 0, 1),  # (bias, input, weight): by name, as PyTorch
}


def _saved_in_order(tensors: tuple[Any, ...], order: tuple[int, ...]) -> tuple[Any, ...]:
    """SavedTensors made (so packed) in PyTorch's order, kept in adcli's slots."""
    out: list[Any] = list(tensors)
    for i in order:
        if i >= len(tensors):
            continue  # the output's slot (save_output adds it later, last)
        t = tensors[i]
        out[i] = SavedTensor(t) if isinstance(t, Tensor) else t
    return tuple(out)


# Non-leaf tensors `detach_()` made leaves: a saved input among them can no longer be
# used (PyTorch's saved variable needs the grad_fn it had).
DETACHED_IN_PLACE: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
DETACHED_MESSAGE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
    "This is not supported, please use out-of-place `.detach()` instead"
)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.  Under
    saved-tensor hooks it keeps what `pack(tensor)` returned instead of the tensor,
    and `unpack` gives back `unpack(packed)`."""

    __slots__ = (
        "tensor",
        "data",
        "counter",
        "version",
        "is_output",
        "hooked",
        "view_fn",
        "nonleaf",
        "output_nr",
    )

    def __init__(
        self,
        tensor: Tensor | None,
        *,
        output_data: Any = None,
        counter: Any = None,
        output: Tensor | None = None,
    ):
        self.hooked: tuple[Any, Callable[[Any], Any]] | None = None
        # an output written in place into a view: the view's node after the write, held
        # weakly (while alive, the output unpacks as that view, so a double backward
        # reaches the base's history, and a version error names it)
        self.view_fn: weakref.ref[Node] | None = None
        self.output_nr = 0  # which of its node's outputs a saved output is
        if tensor is not None:
            self.tensor = tensor
            self.data = None
            self.counter = c = tensor._vc
            if type(c) is grad_mode.InferenceCounter:  # an inference tensor
                raise RuntimeError(grad_mode.INFERENCE_SAVED)
            self.is_output = False
            self.nonleaf = tensor._grad_fn is not None  # (a detach_ later makes it a leaf)
        else:  # the node's own output: keep its data, not the tensor (no cycle)
            self.tensor = None
            self.data = output_data
            self.counter = c = counter
            self.is_output = True
        self.version = c[0]
        if SAVED_HOOKS:
            pack, unpack = SAVED_HOOKS[-1]
            self.hooked = (pack(tensor if tensor is not None else output), unpack)
            self.tensor = None

    def unpack(self, node: Function) -> Tensor:
        """The saved tensor, after checking that no in-place op changed it (PyTorch's
        order: a tensor detached in place since is refused first)."""
        t = self.tensor
        if (
            DETACHED_IN_PLACE
            and t is not None
            and self.nonleaf
            and DETACHED_IN_PLACE.get(id(t)) is t
        ):
            raise RuntimeError(DETACHED_MESSAGE)
        if self.counter[0] != self.version:
            raise SavedTensorError(_version_message(self, node), node, self.counter)
        if self.hooked is not None:
            packed, unpack = self.hooked
            return unpack(packed)
        if self.is_output:
            # Rebuild the output as a tensor whose grad_fn is this node, so that
            # a backward formula using it is differentiable (double backward).
            fn = self.output_node(node)
            nr = self.output_nr if fn is node else 0
            out = Tensor._make(self.data, True, fn, self.counter, nr)
            if fw_hook is not None:  # the output's tangents go with it (forward over reverse)
                fw_hook(node, None, out)
            return out
        return self.tensor

    def output_node(self, node: Function) -> Node:
        """The node a saved output of `node` unpacks with: the view's node it was written
        into in place while that node lives (PyTorch's weak_grad_fn_), else `node`."""
        fn = self.view_fn() if self.view_fn is not None else None
        return node if fn is None else fn


def short_name(node: Node) -> str:
    """A node's name as PyTorch's in-place errors print it: without "Backward" and a 0
    suffix (Add, Exp, Unbind), keeping any other number (Pow2, Clamp1, Squeeze1); a
    custom Function's node without its "Backward" suffix."""
    name = node.name()
    if name.endswith("Backward0"):
        return name[: -len("Backward0")]
    if name.endswith("Backward"):  # a custom Function's node (ExpBackward): Exp
        return name[: -len("Backward")]
    if name[-1:].isdigit() and "Backward" in name:
        return name.replace("Backward", "")
    return name


def _version_message(saved: SavedTensor, node: Function) -> str:
    if saved.is_output:
        data, producer = saved.data, saved.output_node(node)
        nr = saved.output_nr if producer is node else 0
    else:
        t: Tensor = saved.tensor
        data, producer, nr = t.data_, t.grad_fn, t._output_nr
    sizes = ", ".join(str(s) for s in data.shape)
    # (PyTorch names a bool tensor by its C++ type here)
    kind = "CPUBoolType" if data.dtype == bool else f"torch.{of_array(data).legacy}"
    what = f"[{kind} [{sizes}]]"
    if producer is not None:
        name = short_name(producer)
        if name == "CopySlices":
            name = "torch::autograd::CopySlices"
        what += f", which is output {nr} of {name},"
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} is at version {saved.counter[0]}; expected version "
        f"{saved.version} instead. Hint: " + (_ANOMALY_HINT if _config.anomaly_mode else _HINT)
    )


_HINT = (
    "enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
_ANOMALY_HINT = (
    "the backtrace further above shows the operation that failed to compute its gradient. "
    "The variable in question was changed in there or anywhere later. Good luck!"
)


class _NodeType(type):
    """Node classes print as PyTorch's C++ node types: `<class 'MulBackward0'>`."""

    def __repr__(cls) -> str:
        if cls.__module__ == "builtins":  # (type's own repr would show `__name__`)
            return f"<class '{cls.__qualname__}'>"
        return type.__repr__(cls)


class Node(metaclass=_NodeType):
    """What every `grad_fn` has: a name, edges to the next nodes, hooks."""

    __slots__ = (
        "next_functions",
        "seq",
        "pre_hooks",
        "retained",
        "outputs",
        "_label",  # opaque to the engine: a host's note of where the output came from
        "__weakref__",
    )
    __ad_attrs__ = frozenset({"next_functions", "name", "register_hook", "register_prehook"})
    grad_fn_name: ClassVar[str] = "Node"
    multi_output: ClassVar[bool] = False
    # PyTorch runs this kind of node as soon as it is ready, as AccumulateGrad (see
    # engine._rank); AccumulateGrad itself has the largest seq instead
    runs_first: ClassVar[bool] = False
    # True: backward runs even when every incoming gradient is undefined (None): an
    # error node, or a custom Function (which gets zeros); PyTorch's formulas do not
    runs_undefined: ClassVar[bool] = False

    def name(self) -> str:
        """PyTorch's class name of this node (`MulBackward0`)."""
        return self.grad_fn_name

    def __repr__(self) -> str:
        return f"<{self.grad_fn_name} object at {id(self):#x}>"

    def output_tensor(self, index: int = 0) -> Tensor | None:
        """The tensor this node produced, if it is still alive."""
        outs = self.outputs
        if outs is None:
            return None
        ref = outs[index] if isinstance(outs, tuple) else outs
        return ref() if ref is not None else None

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call `fn(grad_outputs)` before this node runs (may return replacements)."""
        return _add_hook(self, "pre_hooks", ("node", fn))

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call `fn(grad_inputs, grad_outputs)` after this node runs (not used by tensors)."""
        return _add_hook(self, "pre_hooks", ("post", fn))


class RemovableHandle:
    """Returned by `register_hook`; `remove()` unregisters the hook."""

    __slots__ = ("_owner", "_attr", "_entry")
    __ad_attrs__ = frozenset({"remove"})

    def __init__(self, owner: object, attr: str, entry: object) -> None:
        self._owner = weakref.ref(owner)
        self._attr = attr
        self._entry = entry

    def remove(self) -> None:
        """Unregister the hook (no error if it is already gone)."""
        owner = self._owner()
        if owner is None:
            return
        hooks = getattr(owner, self._attr)
        if hooks and self._entry in hooks:
            hooks.remove(self._entry)


RemovableHandle.__module__ = "torch.utils.hooks"  # printed as PyTorch's class


def _add_hook(owner: Any, attr: str, entry: object) -> RemovableHandle:
    hooks = getattr(owner, attr)
    if hooks is None:
        hooks = []
        setattr(owner, attr, hooks)
    hooks.append(entry)
    return RemovableHandle(owner, attr, entry)


class AccumulateGrad(Node):
    """The node that adds an incoming gradient into a leaf's `.grad`."""

    __slots__ = ("_variable",)  # the leaf, held strongly (the leaf holds this node weakly)
    __ad_attrs__ = Node.__ad_attrs__ | {"variable"}
    grad_fn_name = "AccumulateGrad"

    def __init__(self, variable: Tensor) -> None:
        self.next_functions = ()
        self.seq = 1 << 62  # PyTorch runs accumulation as soon as it is ready
        self.pre_hooks = None
        self.retained = None
        self.outputs = None
        self._label = None
        self._variable = variable

    @property
    def variable(self) -> Tensor | None:
        """The leaf tensor this node accumulates into."""
        return self._variable

    def name(self) -> str:
        """`torch::autograd::AccumulateGrad`, as PyTorch's `name()` spells it."""
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def printed_as_pytorch(cls: type) -> None:
    """A node class as a script sees it: `type(y.grad_fn).__name__` is PyTorch's node
    name and `print(type(y.grad_fn))` shows `<class 'MulBackward0'>` (PyTorch's node
    classes are C++ types without a module); `__name__` stays adcli's own."""
    cls.__ad_type_name__ = cls.grad_fn_name  # type: ignore[attr-defined]
    cls.__qualname__ = cls.grad_fn_name  # type: ignore[attr-defined]
    cls.__module__ = "builtins"


class Function(Node):
    """Base of every differentiable operation.

    A subclass declares `grad_fn_name` and two static methods side by side:
    `forward(ctx, *inputs, **params) -> ndarray` computing on NumPy (and saving
    what backward needs with `ctx.save(...)`), and `backward(ctx, grad) ->
    tuple` returning one gradient per tensor input, written with Tensor
    operations so that it is itself differentiable.  Broadcast reduction and
    dtype casting of the returned gradients are done by the engine, not here.
    A row may also declare `jvp(ctx, tangents, inputs, result)`, its forward-mode
    rule: the output's tangent (None for zero) from one tangent per input (None for
    zero), also in Tensor operations; see forward_ad.py.
    """

    __slots__ = ("saved", "needs_input_grad", "in_meta", "__dict__")
    registry: ClassVar[dict[str, type[Function]]] = {}
    differentiable: ClassVar[bool] = True
    # recorded on an integer or bool result too (a view's re-derived node, which
    # PyTorch builds directly rather than through a recorded op's dtype check)
    any_dtype: ClassVar[bool] = False
    # PyTorch allocates this op's result contiguous whatever its input's layout (a
    # reduction, repeat, cumsum): NumPy's may follow the input's, so apply copies it
    contiguous_result: ClassVar[bool] = False
    # an elementwise op (TensorIterator's): the positions of its operands among the
    # inputs, in PyTorch's operand order (a number there is a wrapped 0-d operand);
    # apply lays the result out as PyTorch does from their strides
    elementwise: ClassVar[tuple[int, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for meth in ("forward", "backward", "jvp"):
            f = cls.__dict__.get(meth)
            if f is not None and not isinstance(f, staticmethod):
                setattr(cls, meth, staticmethod(f))
        if "grad_fn_name" in cls.__dict__:
            Function.registry[cls.__name__] = cls
        if cls.__module__.startswith("adcli."):  # (not a script's Function's node class)
            printed_as_pytorch(cls)

    @staticmethod
    def forward(ctx: Function, *args: Any, **params: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Function, *grads: Tensor) -> tuple[Tensor | None, ...]:  # pragma: no cover
        raise NotImplementedError

    # -- saving ----------------------------------------------------------
    def save(self, *tensors: Tensor | float | None) -> None:
        """Save input tensors for backward (None for ones not needed).  A Python-number
        operand (a constant edge, see `apply`) is kept as the number itself: it still
        counts as saved, so a second backward through a freed graph raises as in PyTorch."""
        if True not in self.needs_input_grad:
            return  # not recorded (grad mode off, or no input needs grad): nothing to keep
        if SAVED_HOOKS and self.grad_fn_name in PACK_ORDER:
            self.saved = _saved_in_order(tensors, PACK_ORDER[self.grad_fn_name])
            return
        # a list comprehension, not a generator: this runs once per recorded op
        self.saved = tuple([SavedTensor(t) if isinstance(t, Tensor) else t for t in tensors])

    def save_output(self, *tensors: Tensor | None, nr: int = 0) -> None:
        """Ask `apply` to save this node's output for backward (exp, tanh, ...), after
        the input tensors given (saved as `save` saves them): the output comes last in
        `saved_tensors`, version-checked like any saved tensor.  A multi-output node
        saves its output `nr`."""
        if nr:
            self.saved_output_nr = nr
        if tensors:
            self.save(*tensors)
            self.saved = self.saved + _SAVE_OUTPUT
        else:
            self.saved = _SAVE_OUTPUT

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The saved tensors, version-checked; raises once they were freed."""
        saved = self.saved
        if type(saved) is Freed:
            raise SavedTensorError(FREED_MESSAGE, self)
        order = PACK_ORDER.get(self.grad_fn_name)
        if order is not None and len(order) == len(saved):  # unpack in PyTorch's order
            out: list[Any] = list(saved)
            for i in order:
                s = saved[i]
                out[i] = s.unpack(self) if type(s) is SavedTensor else s
            return tuple(out)
        # None and saved Python numbers pass through as they are
        return tuple([s.unpack(self) if type(s) is SavedTensor else s for s in saved])

    def release(self, marker: Freed | None = None) -> None:
        """Free the saved tensors (after a backward without retain_graph); `marker`
        records which pass freed them."""
        # (a Freed marker is falsy: released once only; slots that saved nothing, as
        # PyTorch's never-defined saved variables, leave nothing to free)
        if self.saved and any(s is not None for s in self.saved):
            if _config.record_inputs:
                self.sym_saved = self.saved  # adcli.symbolic: kept for gradient formulas
            self.saved = marker if marker is not None else _FREED

    # -- building the graph ---------------------------------------------
    @classmethod
    def apply(cls, *inputs: Any, **params: Any) -> Any:
        """Run the forward and, when grad mode is on and an input requires
        grad, record a node of this class as the output's `grad_fn`.

        An input may also be None (no operand) or a Python number: a constant
        operand, as PyTorch's wrapped scalar in `x * 2`, which gets a constant
        `(None, 0)` edge like any tensor that does not require grad (ops.py passes
        numbers only to rows whose forward reads them with `_d`)."""
        if prof_hook is not None:  # a profile is open (profiler.py): it records, then applies
            return prof_hook(cls, inputs, params)
        ctx = cls.__new__(cls)
        ctx.saved = ()
        record = False
        if grad_mode.state.enabled and cls.differentiable:
            needs = tuple(
                [
                    isinstance(t, Tensor)
                    and (t._requires_grad if t._base is None else t.requires_grad)
                    for t in inputs
                ]
            )
            record = True in needs
        if not record:
            # shared all-False tuple: nothing is recorded, forward saves nothing
            ctx.needs_input_grad = (
                _NO_NEEDS[len(inputs)] if len(inputs) < 8 else ((False,) * len(inputs))
            )
            data = cls.forward(ctx, *inputs, **params)
            if cls.contiguous_result:
                data = _contiguous(data, cls.multi_output)
            elif cls.elementwise:
                data = _iterator_layout(data, inputs, cls.elementwise, params)
            if not cls.multi_output:
                out = Tensor._make(data)
            else:
                out = tuple([Tensor._make(d) for d in data])
            if fw_hook is not None:  # forward AD: a dual level is open (forward_ad.py)
                fw_hook(ctx, inputs, out)
            return out
        ctx.needs_input_grad = needs
        if True in [n and t._base is not None for t, n in zip(inputs, needs, strict=True)]:
            ctx.needs_input_grad = _live_needs(inputs, needs)
        data = cls.forward(ctx, *inputs, **params)
        if cls.contiguous_result:
            data = _contiguous(data, cls.multi_output)
        elif cls.elementwise:
            data = _iterator_layout(data, inputs, cls.elementwise, params)
        if not cls.multi_output and data.dtype.kind not in "fc" and not (cls.any_dtype or in_place):
            _check_differentiable(data, inputs, needs)
        # One pass over the inputs for the edges and the (shape, dtype) metas.  Both
        # use shared tuples where they can (the constant edge; interned metas), as
        # they are the bulk of a node's memory and of the objects the GC walks.
        edges = []
        metas = []
        for t, need in zip(inputs, needs):  # noqa: B905 (same length by construction)
            if isinstance(t, Tensor):
                d = t.data_
                key = (d.shape, d.dtype)
                meta = _META.get(key)
                if meta is None:
                    meta = _intern_meta(key)
                metas.append(meta)
                if not need:
                    edges.append(_NO_EDGE)
                    continue
                # a view's node may have to be re-derived first (the property does it)
                fn = t._grad_fn if t._base is None else t.grad_fn
                if fn is not None:
                    edges.append((fn, t._output_nr))
                elif t._requires_grad:
                    edges.append((t._accumulator(), 0))
                else:  # a view made under no_grad: requires grad, but leads nowhere
                    edges.append(_NO_EDGE)
            else:
                edges.append(_NO_EDGE)
                # a number operand: a 0-d constant of the op's dtype (as PyTorch wraps it)
                metas.append(None if t is None else _intern_meta(((), _result_dtype(data))))
        ctx.next_functions = tuple(edges)
        if _NO_EDGE is edges[0] and all(e is _NO_EDGE for e in edges):
            # every input is a view made under no_grad (it requires grad, but leads
            # nowhere): PyTorch still saved (and unpacks) what the formulas of all its
            # differentiable inputs use: all it saves for a one-operand op (an integer
            # or bool index or mask is no operand), and the shared ones of a few others
            ctx.dead_unpacks = cls.grad_fn_name in _SAVED_FOR_ALL or 1 == sum(
                t is not None and (not isinstance(t, Tensor) or t.data_.dtype.kind in "fc")
                for t in inputs
            )
        ctx.in_meta = tuple(metas)
        ctx.seq = next(_sequence)
        ctx.pre_hooks = None
        ctx.retained = None
        ctx._label = None
        if _config.anomaly_mode and _config.forward_trace is not None:
            forward_traces[ctx] = _config.forward_trace()  # anomaly mode keeps the stack
        if _config.record_inputs:  # adcli.symbolic (opt-in): operands/params for formulas
            ctx.sym_inputs = tuple(
                SavedTensor(t) if isinstance(t, Tensor) and not t._requires_grad else None
                for t in inputs
            )
            ctx.sym_params = params
        if not cls.multi_output:
            out = Tensor._make(data, True, ctx)
            ctx.outputs = weakref.ref(out)
            saved = ctx.saved
            if saved and saved[-1] is _OUTPUT:
                own = SavedTensor(None, output_data=out.data_, counter=out._vc, output=out)
                ctx.saved = saved[:-1] + (own,)
            if fw_hook is not None:
                fw_hook(ctx, inputs, out)
            return out
        outs = tuple(Tensor._make(d, True, ctx, None, i) for i, d in enumerate(data))
        ctx.outputs = tuple(weakref.ref(o) for o in outs)
        saved = ctx.saved
        if saved and saved[-1] is _OUTPUT:  # one of the outputs (save_output's `nr`)
            nr = getattr(ctx, "saved_output_nr", 0)
            o = outs[nr]
            own = SavedTensor(None, output_data=o.data_, counter=o._vc, output=o)
            own.output_nr = nr
            ctx.saved = saved[:-1] + (own,)
        if fw_hook is not None:
            fw_hook(ctx, inputs, outs)
        return outs


_NUMBER = np.empty(())  # a Python-number operand: PyTorch wraps it in a 0-d tensor


def _iterator_layout(
    data: Any, inputs: tuple[Any, ...], where: tuple[int, ...], params: dict[str, Any]
) -> Any:
    """An elementwise result in PyTorch's layout for its operands (`where`: their
    positions among the inputs; None, an absent optional operand, is left out; the
    `dtype` parameter, where the row has one, is the dtype they are converted to)."""
    if data.ndim < 2 and data.flags.c_contiguous:
        return data  # a vector or scalar has one layout (as iterator_result decides)
    operands = []
    plain = data.flags.c_contiguous  # the common case: contiguous operands of one shape
    for i in where:
        t = inputs[i]
        if type(t) is Tensor or isinstance(t, Tensor):
            x = t.data_
            operands.append(x)
            plain = plain and x.shape == data.shape and x.flags.c_contiguous
        elif t is not None:
            operands.append(_NUMBER)
            plain = False
    if plain:
        return data
    return iterator_result(data, operands, params.get("dtype"))


def _contiguous(data: Any, multi: bool) -> Any:
    """A forward's result (or results) in C order."""
    if multi:
        return tuple([d if d.flags.c_contiguous else d.copy(order="C") for d in data])
    return data if data.flags.c_contiguous else data.copy(order="C")


def _check_differentiable(data: Any, inputs: tuple[Any, ...], needs: tuple[bool, ...]) -> None:
    """PyTorch's refusal to record an integer or bool result of an integer or bool tensor
    that requires grad (one a fill_ or copy_ from a float tensor requiring grad made)."""
    for t, need in zip(inputs, needs):  # noqa: B905 (same length by construction)
        if need and isinstance(t, Tensor) and t.data_.dtype.kind not in "fc":
            raise RuntimeError(dtype_refusal(data))


def dtype_refusal(data: Any) -> str:
    """PyTorch's error for recording an op whose result (an array) is integer or bool."""
    return f"Autograd not support dtype: {of_array(data).legacy[: -len('Tensor')]}"


class Freed:
    """Stands where a node's saved tensors were, once a pass freed them."""

    __slots__ = ("pass_id",)

    def __init__(self, pass_id: int | None) -> None:
        self.pass_id = pass_id  # the BackwardEvent.pass_id of the pass that freed them

    def __bool__(self) -> bool:
        return False  # "nothing saved any more"


_FREED = Freed(None)
printed_as_pytorch(AccumulateGrad)
_OUTPUT = object()  # where `apply` puts the saved output (see save_output)
_SAVE_OUTPUT = (_OUTPUT,)
#: two-operand nodes whose formulas for both operands use a saved tensor
_SAVED_FOR_ALL = frozenset(
    {
        "DivBackward0",
        "PowBackward1",
        "Atan2Backward0",
        "MaximumBackward0",
        "MinimumBackward0",
        "WhereBackward0",
        "MseLossBackward0",
        "BinaryCrossEntropyBackward0",
        "HuberLossBackward0",
        "SmoothL1LossBackward0",
        # the index or mask both formulas read (s26b:36882)
        "ScatterBackward0",
        "IndexCopyBackward0",
        "MaskedFillBackward1",
        "IndexPutBackward0",
        # clamp with tensor bounds: self and the bounds, for every formula (s26final:48273)
        "ClampBackward0",
        "ClampMinBackward1",
        "ClampMaxBackward1",
    }
)


def _live_needs(inputs: Sequence[Any], needs: tuple[bool, ...]) -> tuple[bool, ...]:
    """What the forward may save for: an input that is a view made under no_grad
    requires grad but leads nowhere, and PyTorch's guarded saves (should_compute_output,
    which reads the edges) skip what only its formula uses.  When every input is such a
    view nothing changes: what PyTorch then saves is what `dead_unpacks` describes."""
    live = tuple(
        [
            n and not (t._base is not None and not t._requires_grad and t.grad_fn is None)
            for t, n in zip(inputs, needs, strict=True)
        ]
    )
    return live if True in live else needs


_NO_EDGE = (None, 0)  # the edge of an operand that needs no gradient (shared by all nodes)
_NO_NEEDS = [(False,) * n for n in range(8)]

# Interned (shape, dtype) metas: nodes share them instead of holding a fresh tuple
# (with a fresh shape tuple) per input.  Bounded: cleared when it gets large.
_META: dict[tuple[Any, Any], tuple[Any, Any]] = {}


def _intern_meta(key: tuple[Any, Any]) -> tuple[Any, Any]:
    meta = _META.get(key)
    if meta is None:
        if len(_META) > 4096:
            _META.clear()
        meta = _META[key] = key
    return meta


def _result_dtype(data: Any) -> Any:
    return data.dtype if hasattr(data, "dtype") else None


# forward_ad.propagate while a dual level is open, else None: `apply` calls it with the
# node, its inputs and its output(s), so an op costs one test when no level is open.
fw_hook: Callable[..., None] | None = None
# The nodes the running backward pass needs (autograd.grad's inputs and the nodes on
# the way to them), None when it needs all: set by the engine for the pass, so a
# formula whose kernel can fail computes an input's gradient only when PyTorch's
# task_should_compute_output would (`computes`).
pass_needed: set[Any] | None = None


def computes(node: Node, i: int) -> bool:
    """Whether this pass computes `node`'s gradient for input `i`."""
    if not node.needs_input_grad[i]:
        return False
    nxt = node.next_functions[i][0]
    return pass_needed is None or (nxt is not None and nxt in pass_needed)


# profiler._record_apply while a `torch.autograd.profiler.profile` is open, else None;
# `prof` is that profile (the backward engine records its node ranges into it).
prof_hook: Callable[..., Any] | None = None
prof: Any = None

# True while an in-place op runs as its out-of-place form: PyTorch's in-place kernels
# record on an integer or bool tensor that requires grad (a fill_ or copy_ of a float
# that does made it so) without the dtype check that refuses such a new result
in_place = False


@contextlib.contextmanager
def recording_in_place() -> Iterator[None]:
    """Run an in-place op's out-of-place form without the result dtype check."""
    global in_place
    outer, in_place = in_place, True
    try:
        yield
    finally:
        in_place = outer


def _tensor_class() -> Any:
    """tensor.Tensor."""
    return Tensor


def _edge(t: Tensor | None) -> tuple[Node | None, int]:
    """The (node, output index) a gradient for `t` flows to."""
    if t is None or not isinstance(t, Tensor) or not t.requires_grad:
        return _NO_EDGE
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (t._accumulator(), 0) if t._requires_grad else _NO_EDGE
