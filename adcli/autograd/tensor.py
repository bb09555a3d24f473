"""Tensor: a NumPy array with autograd state (`grad`, `grad_fn`, `requires_grad`, version).

This module is below the op layer (ops.py, functions.py) and the engine: they import
it, and Tensor's methods reach them through the module slots below, which each of them
fills as it loads (adcli/autograd/__init__.py loads them all).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import dtypes, grad_mode
from . import node as _node
from .budget import WATCH_BYTES as _WATCH_BYTES
from .budget import watch as _watch
from .config import config
from .dtypes import DType
from .node import AccumulateGrad, Node, RemovableHandle, _add_hook

# The modules above this one that Tensor's methods call into, bound by each of them as
# it loads. A method looks the module up as a global, as an import at the top would.
ops: Any = None  # ops.py: the operations behind the methods and operators
engine: Any = None  # engine.py: backward()
forward_ad: Any = None  # forward_ad.py: tangents through in-place ops, and in repr
legacy: Any = None  # legacy.py: torch.Tensor(...) and .device

SCALAR_CONVERSION_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
    "behavior.\nConsider using tensor.detach() first. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)"
)
#: F.conv2d(..., padding='same') whose total padding is odd (convops.py)
SAME_PADDING_WARNING = (
    "Using padding='same' with even kernel lengths and odd dilation may require a "
    "zero-padded copy of the input be created (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/Convolution.cpp:1101.)"
)
#: warnings PyTorch gives once per process (TORCH_WARN_ONCE), not once per script line
WARN_ONCE = frozenset({SCALAR_CONVERSION_WARNING, SAME_PADDING_WARNING})
#: warnings PyTorch raises inside its engine: Python's warning registry sees them at one
#: line of torch's own autograd code, whichever script line ran the backward, so each
#: text shows once per process
# warnings PyTorch raises from one place of its own (so Python shows each text once)
ENGINE_WARNING_PREFIXES = (
    "Error detected in ",
    "input's size at dim=",
)
NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information. (Triggered "
    "internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)"
)
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
ZERO_IMMUTABLE = (
    "ZeroTensors are immutable. Please use the materialized zero tensor obtained using "
    ".clone() if you want a mutable tensor."
)
ZERO_IMMUTABLE_COPY = (  # copy_'s own wording
    "ZeroTensors are immutable. Please materialize the tensor using `.clone()`, if you want "
    "a mutable zero tensor."
)


class ZeroCounter(list):
    """The version counter of an "efficient zero", PyTorch's ZeroTensor: the gradient
    some backward formulas return (sgn's) and what `*`, `/`, views and detach make of
    one. It marks the tensor (views and detached tensors share it) at no cost to other
    tensors. Its values are +0; adding it leaves the other operand as it is (a -0
    stays -0); it cannot be changed in place."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        raise RuntimeError(ZERO_IMMUTABLE)


def efficient_zero(shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    """A new efficient zero of `shape` and `dtype`."""
    return Tensor._make(np.zeros(shape, dtype), vc=ZeroCounter((0,)))


def is_efficient_zero(t: Any) -> bool:
    """Whether `t` is an efficient zero (PyTorch's `_is_zerotensor()`)."""
    return isinstance(t, Tensor) and type(t._vc) is ZeroCounter


MAX_SIZE_ITEMS = 1_000_000  # a torch.Size made from an iterable: a sane bound on its length


def _checked_sizes(sizes: Any) -> list[int]:
    """The ints of `torch.Size(iterable)`, with PyTorch's error for other items; read
    one by one, so an endless or huge iterable is refused without being consumed."""
    import operator

    out: list[int] = []
    for i, s in enumerate(sizes):
        if i >= MAX_SIZE_ITEMS:
            raise MemoryError(f"torch.Size of more than {MAX_SIZE_ITEMS:,} sizes is over the limit")
        if type(s) is not int:
            try:
                s = operator.index(s)
            except TypeError:
                raise TypeError(
                    f"torch.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')"
                ) from None
        out.append(s)
    return out


class Size(tuple):
    """`torch.Size`: a tuple of ints printed as `torch.Size([2, 3])`."""

    __ad_attrs__ = frozenset({"numel", "index", "count"})

    def __new__(cls, sizes: Any = ()) -> Size:
        if type(sizes) is tuple:  # adcli's own shapes (and a script's tuple, taken as is)
            return tuple.__new__(cls, sizes)
        return tuple.__new__(cls, _checked_sizes(sizes))

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(int(s)) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        """Product of the sizes."""
        return math.prod(self)


# what PyTorch's profiler records for `detach()` (see profiler.py's emit)
_DETACH_RANGES = (("aten::detach", (("detach", ()),)),)


class Tensor:
    """An n-dimensional array that can record the operations made with it."""

    __slots__ = (
        "data_",
        "_requires_grad",
        "_grad",
        "_grad_fn",
        "_output_nr",
        "_vc",
        "_acc_ref",
        "_hooks",
        "_post_acc_hooks",
        "_retains_grad",
        "_base",
        "_view_version",
        "_creation",
        "_label",
        "__weakref__",
    )

    # ------------------------------------------------------------------ making
    @staticmethod
    def _make(
        data: Any,
        requires_grad: bool = False,
        grad_fn: Node | None = None,
        vc: list[int] | None = None,
        output_nr: int = 0,
    ) -> Tensor:
        """Wrap an ndarray (0-d NumPy scalars become 0-d arrays)."""
        if type(data) is not np.ndarray:
            data = np.asarray(data)
        if not data.size and data.ndim and not any(data.strides) and _fresh_empty(data):
            data = _contiguous_empty(data)
        if data.nbytes >= _WATCH_BYTES:  # the size limit and memory budget (budget.py)
            _watch(data)
        t = object.__new__(Tensor)
        t.data_ = data
        t._requires_grad = requires_grad
        t._grad = None
        t._grad_fn = grad_fn
        t._output_nr = output_nr
        # (an inference tensor's counter in inference mode: see grad_mode)
        t._vc = vc if vc is not None else [0] if not grad_mode.state.inference else _new_vc()
        t._acc_ref = None
        t._hooks = None
        t._post_acc_hooks = None
        t._retains_grad = False
        t._base = None
        t._view_version = 0
        t._creation = 0
        t._label = None
        return t

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        """`torch.Tensor(...)`: PyTorch's legacy constructor (sizes or data)."""
        return legacy.new_default(args, kwargs)

    # -------------------------------------------------------------- attributes
    @property
    def data(self) -> Tensor:
        """The same values, detached and outside version tracking (`x.data`)."""
        if type(self._vc) is grad_mode.InferenceCounter:  # an inference tensor's .data is one too
            return Tensor._make(self.data_, vc=grad_mode.InferenceCounter((0,)))
        return Tensor._make(self.data_)

    @data.setter
    def data(self, value: Tensor) -> None:
        self.data_ = _as_tensor(value).data_

    @property
    def dtype(self) -> DType:
        """The torch dtype (`torch.float32`)."""
        return dtypes.of_array(self.data_)

    @property
    def shape(self) -> Size:
        """The sizes, as `torch.Size`."""
        return Size(self.data_.shape)

    def size(self, dim: int | None = None) -> Size | int:
        """`torch.Size` of the tensor, or the size of one dimension."""
        if dim is None:
            return Size(self.data_.shape)
        return self.data_.shape[_norm_dim(dim, self.data_.ndim)]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self.data_.ndim

    def dim(self) -> int:
        """Number of dimensions."""
        return self.data_.ndim

    def numel(self) -> int:
        """Number of elements."""
        return int(self.data_.size)

    nelement = numel

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation."""
        return self.grad_fn is None

    @property
    def grad_fn(self) -> Node | None:
        """The node that made this tensor (None for a leaf).  A view's node is
        re-derived from its base (AsStridedBackward0) the first time it is read after
        an in-place change to the base or to any view of it, as PyTorch does."""
        if self._base is not None:
            if self._view_version != self._vc[0]:
                ops.rebase_view(self)
            d = getattr(self._grad_fn, "__dict__", None)
            if d and "held_node" in d:
                del d["held_node"]  # read by the script: PyTorch's view lets its old node go
        return self._grad_fn

    @property
    def _node(self) -> Node | None:
        """grad_fn for readers outside scripts (reports, labels): None where reading
        it would raise PyTorch's error for a view that can no longer be re-derived.
        It does not re-derive the node of a view that retains its grad or has hooks:
        where those go is decided when the script itself reads grad_fn, as in PyTorch;
        nor one that has none yet (its base needed no grad when it was taken)."""
        if self._base is not None and self._view_version != self._vc[0]:
            old = self._grad_fn
            if old is None:  # deriving it would end its being a leaf to in-place checks
                return None
            if self._retains_grad or old.pre_hooks:
                return old
            try:
                ops.rebase_view(self)
            except RuntimeError:
                return None
            # PyTorch's view would still hold its old node (the script has not read its
            # grad_fn): the new one keeps it alive, as a saved output's weak reference
            # to it tells, until the script reads grad_fn
            new = self._grad_fn
            if new is not None and hasattr(new, "__dict__"):
                new.held_node = old
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, node: Node | None) -> None:
        self._grad_fn = node
        self._view_version = self._vc[0]

    def _node_read(self) -> Node | None:
        """grad_fn as the script reading it now would see it (a view's node re-derived),
        None where that read would raise: for what is written once the script is over."""
        try:
            return self.grad_fn
        except RuntimeError:
            return None

    @property
    def requires_grad(self) -> bool:
        """Whether gradients are computed for this tensor (a view also when its base
        requires grad, even if the view was taken under no_grad)."""
        if self._requires_grad:
            return True
        base = self._base
        return base is not None and (self._grad_fn is not None or base._requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._set_requires_grad(bool(value), setter=True)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad in place; returns the tensor."""
        self._set_requires_grad(bool(requires_grad), setter=False)
        return self

    def _set_requires_grad(self, value: bool, setter: bool) -> None:
        """The checks of `t.requires_grad = v` (setter) and `t.requires_grad_(v)`."""
        # the raw node, as PyTorch's is_leaf() here: a view's node is not re-derived
        if self._grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            if setter:  # the attribute setter refuses even True; requires_grad_() does not
                raise RuntimeError("you can only change requires_grad flags of leaf variables.")
            if self.data_.dtype.kind not in "fc":  # (an integer that a fill_ made record)
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            return
        if value and self.data_.dtype.kind not in "fc":
            raise RuntimeError(
                f"only Tensors of floating point {'and complex ' if setter else ''}dtype "
                "can require gradients"
            )
        if value and type(self._vc) is grad_mode.InferenceCounter and not grad_mode.state.inference:
            raise RuntimeError(grad_mode.INFERENCE_REQUIRES_GRAD)
        self._requires_grad = value

    def is_inference(self) -> bool:
        """Was this tensor made in inference mode (`torch.inference_mode`)?"""
        return type(self._vc) is grad_mode.InferenceCounter

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, and non-leaves that retain it)."""
        # the raw node, as PyTorch's check: reading .grad never re-derives a view's node
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            config.warn(NONLEAF_GRAD_WARNING)
        return self._grad

    @grad.deleter
    def grad(self) -> None:
        """`del x.grad`: the same as `x.grad = None`, as in PyTorch."""
        self.grad = None

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            # PyTorch checks the dtype first, then the size
            if value.data_.dtype != self.data_.dtype:
                got = dtypes.CPP_TYPE_NAMES[value.dtype.name]
                want = self.dtype.legacy[: -len("Tensor")]
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{got}' to a tensor with "
                    f"grad_dtype '{want}'. The gradient must match the tensor's grad_dtype "
                    "(defaults to the tensor's dtype). You can set the tensor's grad_dtype "
                    "attribute with a specific dtype, or None to allow any dtype. Set "
                    "grad_dtype with caution. Diverging the dtypes of a tensor and its "
                    "gradient may break downstream systems that assume they match."
                )
            if value.data_.shape != self.data_.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.data_.shape)}' to "
                    f"a tensor of size '{list(self.data_.shape)}'. Please ensure that the "
                    "gradient and the tensor are the same size"
                )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        """True after `retain_grad()` on a non-leaf."""
        return self._retains_grad

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def device(self) -> Any:
        """Always the CPU: `device(type='cpu')`."""
        return legacy.tensor_device(self)

    @property
    def is_cuda(self) -> bool:
        """Always False: adcli runs on the CPU."""
        return False

    @property
    def T(self) -> Tensor:
        """The dimensions reversed (PermuteBackward0)."""
        if self.data_.ndim != 2:
            config.warn(
                "The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
                "is deprecated and it will throw an error in a future release. Consider "
                "`x.mT` to transpose batches of matrices or `x.permute(*torch.arange(x.ndim "
                "- 1, -1, -1))` to reverse the dimensions of a tensor."
            )
        return ops.permute(self, tuple(range(self.data_.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped."""
        return ops.transpose(self, -2, -1)

    # ------------------------------------------------------- autograd methods
    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Compute the gradient of this tensor with respect to the graph's leaves."""
        engine.backward(
            self,
            gradient,
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf after backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        # the raw node, as PyTorch's is_leaf() here: a view of a base that came to
        # require grad only by an in-place change has none until grad_fn is read, and
        # retain_grad() then does nothing
        if self._grad_fn is None or self._retains_grad:
            return
        self.grad_fn  # noqa: B018 (a stale view's node is re-derived first, as PyTorch's grad_fn())
        self._retains_grad = True
        _register_retain(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call `hook(grad)` when the gradient for this tensor is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            return _add_hook(self, "_hooks", hook)
        return _add_hook(self.grad_fn, "pre_hooks", ("tensor", self._output_nr, hook))

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call `hook(self)` each time a backward pass has added into this leaf's `.grad`
        (PyTorch 2.1; an optimizer step run inside the backward)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        return _add_hook(self, "_post_acc_hooks", hook)

    def detach(self) -> Tensor:
        """A new leaf sharing data and version counter, not requiring grad."""
        if _node.prof_hook is not None:  # a profile is open: PyTorch's two ranges
            _node.prof.emit(_DETACH_RANGES)
        return Tensor._make(self.data_, False, None, self._vc)

    def detach_(self) -> Tensor:
        """Make this tensor a leaf that does not require grad."""
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        if self._grad_fn is not None:  # a saved input it was can no longer be used
            _node.DETACHED_IN_PLACE[id(self)] = self
        self.grad_fn = None
        self._requires_grad = False
        self._retains_grad = False
        return self

    def _accumulator(self) -> AccumulateGrad:
        """This leaf's AccumulateGrad node: one per leaf while a graph uses it.

        The node holds the leaf strongly and the leaf holds the node weakly (as in
        PyTorch), so a graph keeps its leaves alive and no reference cycle forms."""
        acc = self._acc
        if acc is None:
            acc = AccumulateGrad(self)
            self._acc_ref = weakref.ref(acc)
        return acc

    @property
    def _acc(self) -> AccumulateGrad | None:
        ref = self._acc_ref
        return ref() if ref is not None else None

    @_acc.setter
    def _acc(self, acc: AccumulateGrad | None) -> None:
        self._acc_ref = weakref.ref(acc) if acc is not None else None

    # ------------------------------------------------------------ conversions
    def item(self) -> float | int | bool:
        """The value of a one-element tensor as a Python number."""
        if self.data_.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data_.size} elements cannot be converted to Scalar"
            )
        return self.data_.reshape(()).item()

    def tolist(self) -> Any:
        """Nested Python lists of numbers."""
        if type(self._vc) is ZeroCounter:  # PyTorch never allocated its values
            raise RuntimeError("tolist() shouldn't be called on a tensor with unallocated storage")
        return self.data_.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array sharing the tensor's memory (only for tensors that
        do not require grad, unless `force` or grad mode is off, as in PyTorch). Writes
        through it change the tensor without a version bump, as in PyTorch."""
        if self.requires_grad and not force and grad_mode.state.enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if type(self._vc) is ZeroCounter and not force:
            raise RuntimeError(
                " Cannot convert a ZeroTensor to numpy. Set force=True if you need the zero array."
            )
        return self.data_.view()  # a new array object: `arr.resize()` cannot reach data_

    def _scalar(self, kind: str) -> float | int | bool:
        if self.data_.size != 1:
            if kind == "bool":
                raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.data_.reshape(()).item()

    def __float__(self) -> float:
        if self.requires_grad:
            config.warn(SCALAR_CONVERSION_WARNING)
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __index__(self) -> int:
        if self.data_.dtype.kind not in "iub" or self.data_.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.data_.reshape(()).item())

    def __len__(self) -> int:
        if self.data_.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data_.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.data_.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(ops.unbind(self, 0))

    def __hash__(self) -> int:
        return id(self)

    def __format__(self, spec: str) -> str:
        if self.data_.ndim == 0:
            return format(self.data_.item(), spec)
        return format(repr(self), spec)

    def __repr__(self) -> str:
        from .printing import format_tensor

        try:
            node = self.grad_fn
            name = node.grad_fn_name if node is not None else None
        except RuntimeError:  # a view whose node can no longer be re-derived
            name = "Invalid"
        tangent = None
        if _node.fw_hook is not None:  # a dual level is open: show the tangent
            tangent = forward_ad.tangent_text(self)
        return format_tensor(
            self.data_,
            self.dtype.name,
            grad_fn=name,
            requires_grad=self.requires_grad,
            tangent=tangent,
        )

    __str__ = __repr__

    # ------------------------------------------------------------ in place
    def _check_inplace(self, others: tuple[Any, ...] = ()) -> None:
        """Refuse in-place ops that would record on a leaf that requires grad, a view
        of a leaf, a view made under no_grad or one of several views made at once, and
        any change of an efficient zero."""
        if type(self._vc) is ZeroCounter:
            raise RuntimeError(ZERO_IMMUTABLE)
        if not grad_mode.state.enabled:
            return
        rg = self.requires_grad
        if not rg and not any(isinstance(a, Tensor) and a.requires_grad for a in others):
            return
        base = self._base
        if base is not None:
            if self._creation:
                raise RuntimeError(ops.view_rebase_message(self, indirect=False))
            if rg and base._grad_fn is None:
                raise RuntimeError(VIEW_LEAF_INPLACE)
        # the node as it stands, not re-derived: a view taken while its base needed no
        # grad, whose node nothing has read since, is a leaf here, as in PyTorch
        if rg and self._grad_fn is None:
            raise RuntimeError(LEAF_INPLACE)

    def _inplace(
        self,
        fn: Callable[..., Tensor],
        *args: Any,
        _overlap_ok: bool = False,
        _store: Callable[[np.ndarray], None] | None = None,
        **kwargs: Any,
    ) -> Tensor:
        """Run `fn(self, *args)` out of place, then write the result into self.

        When grad mode records, the graph sees the pre-update value as a
        snapshot (so the op's saved inputs are not the tensor being changed),
        and this tensor takes the op's node as its new grad_fn. `_overlap_ok`: the op
        writes one value (fill_), read first, so PyTorch lets it write expanded or aliased memory.
        `_store(memory)`: how the op writes a view's memory itself, in its own order (an
        index_put_ into expanded memory: the last value written to an element stays).
        """
        self._check_inplace(args)
        if _node.prof_hook is not None:  # a profile is open: the op's name ends in "_"
            _node.prof_hook.mark_inplace()  # type: ignore[attr-defined]
        if args and any(is_efficient_zero(a) for a in args):  # in place, PyTorch adds real zeros
            args = tuple(_materialized(a) for a in args)
        if not _overlap_ok:
            check_no_overlap(self.data_)
            check_no_partial_overlap(self.data_, args)
        # forward AD: the tangents self will have, stored once its values are written
        fw = _fw_inplace(self, fn, args, kwargs) if _node.fw_hook is not None else None
        record = grad_mode.state.enabled and (
            self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)
        )
        if not record:
            with grad_mode.no_grad():
                result = fn(self, *args, **kwargs)
            if _store is not None:  # (expanded memory holds what the op wrote last)
                check_write(self.data_, result.data_)
                _store(self.data_)
            else:
                _write(self, result.data_)
            self._vc[0] += 1
            return self if fw is None else _fw_write(self, fw)
        if self._base is not None:
            done = ops.inplace_on_view(self, fn, args, kwargs, _store)
            if done is not None:
                return done if fw is None else _fw_write(done, fw)
        # the pre-update value is a copy: its own version counter, so the op's saved
        # `self` (the original value, as PyTorch keeps it) is not invalidated below
        snapshot = Tensor._make(
            self.data_.copy(), self.requires_grad, self.grad_fn, [self._vc[0]], self._output_nr
        )
        snapshot._acc = self._acc
        with _node.recording_in_place():
            result = fn(snapshot, *args, **kwargs)
        check_saved_self(result.grad_fn, snapshot)
        _write(self, result.data_)
        self._vc[0] += 1
        _adopt_node(self, result)
        return self if fw is None else _fw_write(self, fw)

    def _inplace_view(self, fn: Callable[[Tensor], Tensor], node_name: str) -> Tensor:
        """Give this tensor the sizes and strides of the view `fn(self)`, in place (as
        `unsqueeze_`, `t_`): the memory stays, the version counter moves on and, when
        grad mode records, the view's node (named `node_name`, PyTorch's in-place
        overload) becomes this tensor's grad_fn."""
        if _node.fw_hook is not None:
            raise RuntimeError(f"adcli does not support {node_name[:-9].lower()}_ of a dual tensor")
        record = grad_mode.state.enabled and self.requires_grad
        if record:
            self._check_inplace(())
            result = fn(self)
        else:
            with grad_mode.no_grad():
                result = fn(self)
        self.data_ = result.data_
        if record and result._grad_fn is not None:
            result._grad_fn.grad_fn_name = node_name
            _adopt_node(self, result)
        self._vc[0] += 1
        if self._base is not None:
            self._view_version = self._vc[0]  # its node is the one just set (or kept)
        return self

    def unsqueeze_(self, dim: int) -> Tensor:
        """A size-1 dim inserted at `dim`, in place."""
        return self._inplace_view(lambda t: ops.unsqueeze(t, dim), "UnsqueezeBackward1")

    def squeeze_(self, dim: Any = None) -> Tensor:
        """Size-1 dims removed in place (all, the given one, or the given ones)."""
        n = 3 if dim is None else 5 if isinstance(dim, (list, tuple)) else 4
        return self._inplace_view(lambda t: ops.squeeze(t, dim), f"SqueezeBackward{n}")

    def t_(self) -> Tensor:
        """Transposed in place (a matrix; vectors unchanged)."""
        if self.data_.ndim > 2:
            raise RuntimeError(
                f"t_() expects a tensor with <= 2 dimensions, but self is {self.data_.ndim}D"
            )
        return self._inplace_view(ops.t, "TBackward1")

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        """Two dims swapped in place."""
        return self._inplace_view(lambda t: ops.transpose(t, dim0, dim1), "TransposeBackward1")

    def zero_(self) -> Tensor:
        """Fill with zeros in place."""
        return self._inplace(lambda t: ops.zero_like(t), _overlap_ok=True)

    def fill_(self, value: Any) -> Tensor:
        """Fill with `value` in place."""
        if isinstance(value, Tensor):  # PyTorch refuses expanded memory for a tensor value
            self._check_inplace((value,))  # (after its view and leaf checks)
            check_no_overlap(self.data_)
        return self._inplace(lambda t, v: ops.fill_like(t, v), value, _overlap_ok=True)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        """Copy `src` (broadcast) into this tensor in place (`non_blocking`: no effect on
        the CPU)."""
        if type(self._vc) is ZeroCounter:
            raise RuntimeError(ZERO_IMMUTABLE_COPY)
        # PyTorch's copy_ kernel skips a source that is this tensor's very data (itself, or
        # a view with the same offset, sizes and strides), expanded memory too
        same = src is self or isinstance(src, Tensor) and ops._same_memory(self.data_, src.data_)
        if same and not (grad_mode.state.enabled and (self.requires_grad or src.requires_grad)):
            self._check_inplace()
            self._vc[0] += 1
            return self
        if isinstance(src, Tensor) and not self.dtype.is_floating_point:
            # PyTorch's copy_ records nothing into a non-float tensor (one that requires
            # grad, by a fill_ of a float that does, keeps its node)
            self._check_inplace()
            with grad_mode.no_grad():
                return self._inplace(lambda t, s: ops.copy_from(t, s), src.detach())
        # (a tensor copied into itself is not written, so expanded memory is no error)
        return self._inplace(lambda t, s: ops.copy_from(t, s), src, _overlap_ok=same)

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        """In-place `self + alpha * other`."""
        return self._inplace(lambda t, o: ops.add(t, o, alpha=alpha), other)

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        """In-place `self - alpha * other`."""
        self._check_inplace((other,))
        ops.check_sub_operands(self, other)
        return self._inplace(lambda t, o: ops.sub(t, o, alpha=alpha), other)

    def mul_(self, other: Any) -> Tensor:
        """In-place multiply."""
        return self._inplace(ops.mul, other)

    def div_(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        """In-place divide."""
        return self._inplace(lambda t, o: ops.div(t, o, rounding_mode=rounding_mode), other)

    def floor_divide_(self, other: Any) -> Tensor:
        """In-place `//`."""
        return self._inplace(ops.floor_divide, other)

    def __ifloordiv__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented  # Python's own TypeError, as for the other operators
        return self.floor_divide_(other)

    def pow_(self, exponent: Any) -> Tensor:
        """In-place power."""
        return self._inplace(ops.pow, exponent)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        """In-place clamp."""
        ops.check_clamp_inplace(self, min, max)
        return self._inplace(lambda t, lo, hi: ops.clamp(t, lo, hi), min, max)

    def neg_(self) -> Tensor:
        """In-place negation."""
        if self.data_.dtype == np.bool_:  # (neg's own check comes before the overlap one)
            ops.neg(self)
        return self._inplace(ops.neg)

    def exp_(self) -> Tensor:
        """In-place exp."""
        return self._inplace(ops.exp)

    def __iadd__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented
        return self.div_(other)

    def __ipow__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor) and not isinstance(other, _SCALARS):
            return NotImplemented
        return self.pow_(other)

    def __setitem__(self, index: Any, value: Any) -> None:
        ops.setitem(self, index, value)
        if _node.fw_hook is not None:  # forward AD: the value's tangent goes there too
            forward_ad.after_setitem(self, index, value)

    def __getitem__(self, index: Any) -> Tensor:
        return ops.getitem(self, index)

    # ------------------------------------------------------------ operators
    # An operand that is neither a tensor nor a number returns NotImplemented, so
    # Python raises its own TypeError ("unsupported operand type(s) for -=: 'Tensor'
    # and 'NoneType'"), as torch's operators do.
    def __add__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.add(self, o)

    def __radd__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.add(self, o)

    def __sub__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.sub(self, o)

    def __rsub__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.rsub(self, o)

    def __mul__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.mul(self, o)

    def __rmul__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.mul(o, self) if isinstance(o, Tensor) else ops.mul(self, o)

    def __truediv__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.div(self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.rdiv(self, o)

    def __floordiv__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.floor_divide(ops.as_tensor_like(o, self), self)

    def __mod__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.remainder(self, o)

    def __rmod__(self, o: Any) -> Tensor:
        if not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.remainder(o, self)

    def __pow__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.pow(self, o)

    def __rpow__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.rpow(self, o)

    def __matmul__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor):
            return NotImplemented
        return ops.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor):
            return NotImplemented
        return ops.matmul(o, self)

    def __neg__(self) -> Tensor:
        return ops.neg(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return ops.abs(self)

    def __invert__(self) -> Tensor:
        return ops.bitwise_not(self)

    def __and__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.bitwise("and", self, o)

    def __or__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.bitwise("or", self, o)

    def __xor__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.bitwise("xor", self, o)

    def __lt__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.compare("lt", self, o)

    def __le__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.compare("le", self, o)

    def __gt__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.compare("gt", self, o)

    def __ge__(self, o: Any) -> Tensor:
        if not isinstance(o, Tensor) and not isinstance(o, _SCALARS):
            return NotImplemented
        return ops.compare("ge", self, o)

    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return ops.compare("eq", self, o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return ops.compare("ne", self, o)


# The numbers a tensor operator takes as its other operand (bool is an int; NumPy
# scalars count as Python numbers, as in PyTorch).
_SCALARS = (int, float, np.number, np.bool_)


OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a "
    "single memory location. Please clone() the tensor before performing the operation."
)


def check_no_overlap(d: np.ndarray) -> None:
    """Refuse to write into an array where several elements share memory (expand)."""
    if (
        d.size
        and 0 in d.strides
        and any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape, strict=True))
    ):
        raise RuntimeError(OVERLAP_MESSAGE)


def check_write(dst: np.ndarray, values: np.ndarray) -> None:
    """Refuse an in-place result of another shape or a wider dtype class, as PyTorch does
    (the shape first)."""
    ops.check_output_shape(dst.shape, values.shape)
    if values.dtype != dst.dtype and not np.can_cast(values.dtype, dst.dtype, "same_kind"):
        src_name = dtypes.of_array(values).legacy.replace("Tensor", "")
        dst_name = dtypes.of_array(dst).legacy.replace("Tensor", "")
        raise RuntimeError(
            f"result type {src_name} can't be cast to the desired output type {dst_name}"
        )


def _byte_range(a: np.ndarray) -> tuple[int, int]:
    """The first and one-past-last byte an array's elements occupy."""
    start = a.__array_interface__["data"][0]
    lo = sum(st * (n - 1) for st, n in zip(a.strides, a.shape, strict=True) if st < 0)
    hi = sum(st * (n - 1) for st, n in zip(a.strides, a.shape, strict=True) if st > 0)
    return start + lo, start + hi + a.itemsize


def _dense(a: np.ndarray, shape: tuple[int, ...] | None = None) -> bool:
    """PyTorch's is_non_overlapping_and_dense: some order of the dims is contiguous
    (`shape`: of `a` expanded to it first)."""
    strides = a.strides
    if shape is not None and shape != a.shape and len(shape) >= a.ndim:
        strides = ops.expand_strides(a.shape, a.strides, shape, a.itemsize)
    else:
        shape = a.shape
    expected = a.itemsize
    for st, n in sorted((abs(st), n) for st, n in zip(strides, shape, strict=True) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def check_no_partial_overlap(
    dst: np.ndarray, others: tuple[Any, ...], expanded: bool = False
) -> None:
    """Refuse an input that overlaps the written-to tensor only in part (PyTorch's
    get_overlap_status: the very same memory is fine, layouts it cannot tell are let be).
    `expanded`: the inputs are first expanded to dst's shape (setitem's value)."""
    for o in others:
        if not isinstance(o, Tensor) or not o.data_.size or not dst.size:
            continue
        src = o.data_
        dense = _dense(dst) and _dense(src, dst.shape if expanded else None)
        if not np.may_share_memory(dst, src) or not dense:
            continue
        if _byte_range(dst) == _byte_range(src) and _same_layout(dst, src, expanded):
            continue
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to "
            "tensor refer to a single memory location. Please clone() the tensor before "
            "performing the operation."
        )


def _same_layout(dst: np.ndarray, src: np.ndarray, expanded: bool) -> bool:
    """Whether src (`expanded`: first expanded to dst's shape, as setitem's value) has
    dst's strides as PyTorch sees them (get_overlap_status compares only those: a (2, 1)
    tensor and its (1, 2) transpose are the same memory to it)."""
    want = ops.torch_strides(dst)
    if not expanded:
        return dst.ndim == src.ndim and want == ops.torch_strides(src)
    if dst.ndim < src.ndim:
        return False
    return want == ops.copy_to_strides(src, dst.shape)


def _fresh_empty(data: np.ndarray) -> bool:
    """Whether an empty array's memory never held elements (a fresh empty array or a
    NumPy view of one), unlike an empty view of an expanded tensor, whose zero strides
    are PyTorch's too."""
    while isinstance(data, np.ndarray) and data.size == 0:
        base = data.base
        if base is None:
            return True
        data = base if isinstance(base, np.ndarray) else getattr(base, "base", None)
    return False


def _contiguous_empty(data: np.ndarray) -> np.ndarray:
    """A fresh empty array (NumPy gives it zero strides) with PyTorch's contiguous
    strides, a size-0 dim counting as 1: its views then get PyTorch's strides too."""
    strides = [data.itemsize] * data.ndim
    for i in range(data.ndim - 2, -1, -1):
        strides[i] = max(data.shape[i + 1], 1) * strides[i + 1]
    return np.lib.stride_tricks.as_strided(
        data, data.shape, strides, writeable=data.flags.writeable
    )


def _materialized(a: Any) -> Any:
    """An efficient zero as the plain zeros it stands for (other values unchanged)."""
    if not is_efficient_zero(a) or (a._requires_grad and a._grad_fn is None):
        return a
    return Tensor._make(a.data_, a._requires_grad, a._grad_fn, [a._vc[0]], a._output_nr)


def _write(t: Tensor, values: np.ndarray) -> None:
    """Store new values into t's own buffer (so views see them), casting like torch."""
    dst = t.data_
    check_write(dst, values)
    if dst.ndim == 0:
        # 0-d arrays can be written in place through [...]
        dst[...] = values
    else:
        np.copyto(dst, np.broadcast_to(values, dst.shape), casting="unsafe")


def _adopt_node(t: Tensor, result: Tensor) -> None:
    """Make `result`'s grad_fn the grad_fn of t (t was updated in place)."""
    node = result.grad_fn
    if node is None:
        return
    t.grad_fn = node
    t._requires_grad = True
    t._output_nr = result._output_nr
    node.outputs = weakref.ref(t)
    saved = getattr(node, "saved", ())
    if saved and isinstance(saved, tuple):
        for s in saved:
            if s is not None and getattr(s, "is_output", False):
                # the output saved is t's own memory, as PyTorch's (a write through
                # `.data`, which bumps no version, shows in the backward)
                s.counter = t._vc
                s.version = t._vc[0]
                if s.data is not None and s.data.shape == t.data_.shape:
                    s.data = t.data_
    if t._retains_grad:
        _register_retain(t)


def _fw_inplace(t: Tensor, fn: Callable[..., Tensor], args: Any, kwargs: Any) -> Any:
    """Forward AD (a dual level is open): t's tangents after the in-place op, or None."""
    return forward_ad.inplace_tangents(t, fn, args, kwargs)


def _fw_write(t: Tensor, tangents: Any) -> Tensor:
    """Forward AD: store the tangents t has after an in-place op; returns t."""
    forward_ad.write_tangents(t, tangents)
    return t


def check_saved_self(node: Node | None, original: Tensor) -> None:
    """PyTorch's in-place kernels clone the original self when their backward needs it
    (abs_, clamp_, pow_ ...): a clone, a recorded op, of an integer or bool tensor that
    requires grad (as a fill_ of a float that does makes one) is refused."""
    if node is None or original.data_.dtype.kind in "fc" or not original.requires_grad:
        return
    saved = getattr(node, "saved", ())
    if type(saved) is tuple and any(getattr(s, "tensor", None) is original for s in saved):
        raise RuntimeError(_node.dtype_refusal(original.data_))


def _register_retain(t: Tensor) -> None:
    node = t.grad_fn
    if node.retained is None:
        node.retained = {}
    node.retained[t._output_nr] = weakref.ref(t)


def _as_tensor(v: Any) -> Tensor:
    if isinstance(v, Tensor):
        return v
    return ops.tensor(v)


def _norm_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


_new_vc = grad_mode.new_counter

_node.Tensor = Tensor  # Function.apply makes tensors (node.py cannot import this module)

# What scripts may assign on a tensor; what they may read (`__ad_attrs__`) is set by
# ops.py once it has bound the operation methods.
Tensor.__ad_settable__ = frozenset({"grad", "requires_grad", "data"})
Tensor.__module__ = "torch"  # print(type(x)) shows <class 'torch.Tensor'>, as in PyTorch
Tensor.__ad_owner__ = "torch._C.TensorBase"  # where PyTorch's read-only attributes live
Size.__module__ = "torch"
# NumPy operators (`np.float64(2) * x`, `arr + x`) leave tensors to Tensor's own operators
Tensor.__array_ufunc__ = None
