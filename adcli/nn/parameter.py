"""`torch.nn.Parameter`: a leaf tensor a Module registers as one of its weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.tensor import Tensor


class Parameter(Tensor):
    """A Tensor subclass that Modules register on attribute assignment.

    It shares its data and version counter with the tensor it was made from (as
    torch's `_make_subclass`); results of operations on it are plain Tensors, since
    every op builds its output with `Tensor._make`."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = Tensor._make(np.empty((0,), np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter.__new__(): argument 'data' (position 1) must be Tensor, "
                f"not {type(data).__name__}"
            )
        p = object.__new__(cls)
        p.data_ = data.data_
        p._requires_grad = False
        p._grad = None
        p._grad_fn = None
        p._output_nr = 0
        p._vc = data._vc
        p._acc_ref = None
        p._hooks = None
        p._post_acc_hooks = None
        p._retains_grad = False
        p._base = None
        p._view_version = 0
        p._creation = 0
        p._label = None
        if requires_grad:
            if p.data_.dtype.kind not in "fc":
                raise RuntimeError(
                    "Only Tensors of floating point and complex dtype can require gradients"
                )
            p._requires_grad = True
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__ (Tensor.__init__ refuses to run)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # torch formats only plain 0-d Tensors as numbers; a Parameter is object-formatted
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return repr(self)

    def __reduce_ex__(self, proto: Any) -> Any:  # pragma: no cover - copy/pickle support
        return (Parameter, (Tensor._make(self.data_.copy()), self.requires_grad))
