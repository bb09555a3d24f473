"""vmap's batched values: the function runs once, on every slice at once.

Inside `vmap(f)`, f's mapped arguments are `Batched` values: a plain Tensor
(`value`) holding every slice, with one leading dim per open vmap level
(`levels`, outermost first), followed by the dims f sees. Operations on them
(`x.tanh()`, `x + y`, `F.linear(x, w, b)`, `x.sum(0)`, jacrev and jacfwd of them)
run once on `value` with the dims shifted, as PyTorch's batching rules do; so f's
results have PyTorch's batched kernels' rounding (one matrix product for every
slice, not one per slice).

Anything else done with a Batched value (an operation without a rule here, reading
its numbers, printing it) raises `Unbatchable`, or fails in the operation itself:
vmap then runs f once per slice instead (vmap_call in func.py), as it always
could. A function that printed before that point prints again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from . import ops
from .batched import Unbatchable
from .tensor import Size, Tensor

_level_ids = itertools.count(1)


def new_level() -> int:
    """A fresh vmap level (larger than every open one)."""
    return next(_level_ids)


class Batched:
    """Every slice of a value inside vmap (see the module docstring)."""

    __slots__ = ("levels", "value")
    __ad_attrs__ = frozenset(
        "shape dtype device ndim dim size numel requires_grad is_floating_point "
        "tanh sin cos exp log sqrt sigmoid relu neg abs sum mean pow square "
        "asin acos atan arcsin arccos arctan rsqrt".split()
    )

    def __init__(self, value: Tensor, levels: tuple[int, ...]) -> None:
        self.value = value
        self.levels = levels

    # -------------------------------------------------------- what f may read
    @property
    def _k(self) -> int:
        return len(self.levels)

    @property
    def shape(self) -> Size:
        """The shape f sees (without the batch dims)."""
        return Size(self.value.data_.shape[self._k :])

    def size(self, dim: int | None = None) -> Any:
        """The shape f sees, or one of its sizes."""
        shape = self.shape
        return shape if dim is None else shape[dim]

    @property
    def ndim(self) -> int:
        """Dims f sees."""
        return self.value.data_.ndim - self._k

    def dim(self) -> int:
        """Dims f sees."""
        return self.ndim

    def numel(self) -> int:
        """Elements of one slice."""
        return self.shape.numel()

    @property
    def dtype(self) -> Any:
        """The slices' dtype."""
        return self.value.dtype

    @property
    def device(self) -> Any:
        """The slices' device."""
        return self.value.device

    @property
    def requires_grad(self) -> bool:
        """Whether the slices require grad."""
        return self.value.requires_grad

    def is_floating_point(self) -> bool:
        """Whether the slices are floating point."""
        return self.value.is_floating_point()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # -------------------------------------------------------- refused reads
    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise Unbatchable("a batched value's numbers read inside vmap")

    __bool__ = __float__ = __int__ = __index__ = __iter__ = _refuse
    __repr__ = __str__ = __array__ = item = tolist = numpy = _refuse
    # comparisons have no rule: without these, `x == 0` would be Python's identity test
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]

    # -------------------------------------------------------- elementwise
    def _unary(self, name: str, *args: Any) -> Batched:
        return Batched(getattr(ops, name)(self.value, *args), self.levels)

    def tanh(self) -> Batched:
        """tanh of every slice."""
        return self._unary("tanh")

    def sin(self) -> Batched:
        """sin of every slice."""
        return self._unary("sin")

    def cos(self) -> Batched:
        """cos of every slice."""
        return self._unary("cos")

    def asin(self) -> Batched:
        """asin of every slice."""
        return self._unary("asin")

    def acos(self) -> Batched:
        """acos of every slice."""
        return self._unary("acos")

    def atan(self) -> Batched:
        """atan of every slice."""
        return self._unary("atan")

    arcsin, arccos, arctan = asin, acos, atan

    def rsqrt(self) -> Batched:
        """1 / sqrt of every slice."""
        return self._unary("rsqrt")

    def exp(self) -> Batched:
        """exp of every slice."""
        return self._unary("exp")

    def log(self) -> Batched:
        """log of every slice."""
        return self._unary("log")

    def sqrt(self) -> Batched:
        """sqrt of every slice."""
        return self._unary("sqrt")

    def sigmoid(self) -> Batched:
        """sigmoid of every slice."""
        return self._unary("sigmoid")

    def relu(self) -> Batched:
        """relu of every slice."""
        return self._unary("relu")

    def abs(self) -> Batched:
        """abs of every slice."""
        return self._unary("abs")

    def neg(self) -> Batched:
        """-x of every slice."""
        return self._unary("neg")

    __neg__ = neg

    def square(self) -> Batched:
        """x * x of every slice."""
        return binary(ops.mul, self, self)

    def pow(self, exponent: Any) -> Batched:
        """x ** exponent of every slice."""
        return binary(ops.pow, self, exponent)

    def __add__(self, o: Any) -> Any:
        return binary(ops.add, self, o)

    def __radd__(self, o: Any) -> Any:
        return binary(ops.add, o, self)

    def __sub__(self, o: Any) -> Any:
        return binary(ops.sub, self, o)

    def __rsub__(self, o: Any) -> Any:
        return binary(ops.sub, o, self)

    def __mul__(self, o: Any) -> Any:
        return binary(ops.mul, self, o)

    def __rmul__(self, o: Any) -> Any:
        return binary(ops.mul, o, self)

    def __truediv__(self, o: Any) -> Any:
        return binary(ops.div, self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return binary(ops.div, o, self)

    def __pow__(self, o: Any) -> Any:
        return binary(ops.pow, self, o)

    def __matmul__(self, o: Any) -> Any:
        return matmul(self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return matmul(o, self)

    # -------------------------------------------------------- reductions
    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Batched:
        """sum over f's dims (all by default)."""
        return self._reduce(ops.sum, dim, keepdim, dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Batched:
        """mean over f's dims (all by default)."""
        return self._reduce(ops.mean, dim, keepdim, dtype)

    def _reduce(self, fn: Callable[..., Tensor], dim: Any, keepdim: bool, dtype: Any) -> Batched:
        nd, k = self.ndim, self._k
        if nd == 0:
            raise Unbatchable("a reduction of 0-d slices")
        if dim is None:
            dims = tuple(range(nd))
        else:
            items = dim if isinstance(dim, (tuple, list)) else (dim,)
            dims = tuple(int(d) % nd if -nd <= int(d) < nd else _bad_dim(d, nd) for d in items)
        shifted = tuple(d + k for d in dims)
        return Batched(fn(self.value, dim=shifted, keepdim=keepdim, dtype=dtype), self.levels)


def _bad_dim(d: Any, nd: int) -> int:
    raise IndexError(
        f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
    )


def _with_levels(x: Batched, levels: tuple[int, ...], ndim: int) -> Tensor:
    """x's value with a (size-1) dim for each of `levels` it lacks, and size-1 dims
    after them up to `ndim` dims of its own: it then broadcasts as its slices would."""
    v = x.value
    shape = v.data_.shape
    k = len(x.levels)
    lead = tuple(shape[x.levels.index(lv)] if lv in x.levels else 1 for lv in levels)
    if x.levels != tuple(lv for lv in levels if lv in x.levels):
        raise Unbatchable("levels out of order")
    own = shape[k:]
    pad = (1,) * max(0, ndim - len(own))
    full = lead + pad + own
    return v if full == shape else ops.reshape(v, full)


def binary(fn: Callable[..., Tensor], a: Any, b: Any) -> Any:
    """fn(a, b) slice by slice, on the values with their batch dims aligned."""
    operands = (a, b)
    levels = tuple(sorted({lv for x in operands if type(x) is Batched for lv in x.levels}))
    for x in operands:
        if not (type(x) is Batched or isinstance(x, (Tensor, int, float, bool))):
            raise Unbatchable("an operand of another kind")
    ndim = max(
        x.ndim if type(x) is Batched else x.data_.ndim if isinstance(x, Tensor) else 0
        for x in operands
    )
    values = [_with_levels(x, levels, ndim) if type(x) is Batched else x for x in operands]
    return Batched(fn(*values), levels)


def matmul(a: Any, b: Any) -> Any:
    """a @ b slice by slice: a batched left operand (at least 1-d) times a plain matrix
    or vector is one product of the stacked slices, as PyTorch folds it."""
    if type(a) is Batched and isinstance(b, Tensor) and a.ndim >= 1 and b.data_.ndim in (1, 2):
        return Batched(ops.matmul(a.value, b), a.levels)
    raise Unbatchable("matmul of these operands")


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """F.linear slice by slice: batched input, plain weight and bias."""
    if (
        type(x) is Batched
        and x.ndim >= 1
        and isinstance(weight, Tensor)
        and weight.data_.ndim == 2
        and (bias is None or isinstance(bias, Tensor))
    ):
        # PyTorch's linear on a batched input: matmul, then the bias added (AddBackward0)
        out = ops.matmul(x.value, ops.t(weight))
        return Batched(out if bias is None else ops.add(out, bias), x.levels)
    raise Unbatchable("linear of these operands")


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """A function of torch (or torch.nn.functional) given a Batched argument."""
    if name == "linear":
        return linear(*args, **kwargs)
    if name == "matmul":
        return matmul(*args, **kwargs)
    x = args[0]
    if type(x) is not Batched or any(type(a) is Batched for a in args[1:]):
        raise Unbatchable(name)
    if name in ("sum", "mean"):
        return x._reduce(getattr(ops, name), *args[1:], **kwargs)
    if args[1:] or kwargs:
        raise Unbatchable(name)
    return x._unary(name)


# ---------------------------------------------------------------- entering, leaving
def enter(x: Any, dim: int | None, level: int) -> Any:
    """An argument as f sees it at `level`: mapped over `dim`, or as it is (None)."""
    if dim is None:
        return x
    if type(x) is Batched:
        k, nd = len(x.levels), x.ndim
        d = dim % nd if -nd <= dim < nd else _bad_dim(dim, nd)
        return Batched(_moved(x.value, k + d, k), x.levels + (level,))
    nd = x.data_.ndim
    d = dim % nd if -nd <= dim < nd else _bad_dim(dim, nd)
    return Batched(_moved(x, d, 0), (level,))


def _moved(t: Tensor, src: int, dst: int) -> Tensor:
    """t with dim src moved to dst (t itself when it is there: no node)."""
    return t if src == dst else ops.movedim(t, src, dst)


def leave(y: Any, out_dim: int | None, level: int, size: int) -> Any:
    """f's result outside `level`: its slices stacked at `out_dim`."""
    if type(y) is not Batched:
        if out_dim is None:
            return y
        if not isinstance(y, Tensor):
            raise Unbatchable("a result that is not a tensor")
        y = Batched(ops.expand(ops.unsqueeze(y, 0), (size,) + y.data_.shape), (level,))
    if level not in y.levels:
        # not mapped at this level: every slice is the same
        k = len(y.levels)
        v = ops.unsqueeze(y.value, k)
        shape = list(v.data_.shape)
        shape[k] = size
        y = Batched(ops.expand(v, tuple(shape)), y.levels + (level,))
    i = y.levels.index(level)
    rest = y.levels[:i] + y.levels[i + 1 :]
    if out_dim is None:
        raise Unbatchable("out_dims=None for a mapped result")
    nd = y.ndim + 1
    d = out_dim % nd if -nd <= out_dim < nd else _bad_dim(out_dim, nd)
    moved = _moved(y.value, i, len(rest) + d)
    return Batched(moved, rest) if rest else moved


def is_batched(x: Any) -> bool:
    """Is x a vmap slice-set?"""
    return type(x) is Batched


ops.BATCHED = Batched
ops.batched_call = call
