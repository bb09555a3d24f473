"""Torch dtypes over NumPy dtypes, and PyTorch's type-promotion rules."""

from __future__ import annotations

import numpy as np


class DType:
    """A torch dtype: a name (`float32`), its NumPy dtype and its category."""

    __slots__ = ("name", "np", "is_floating_point", "category", "legacy")
    __ad_attrs__ = frozenset({"is_floating_point"})

    def __init__(self, name: str, np_dtype: type, category: int, legacy: str) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.legacy = legacy  # the name in version-counter messages (`FloatTensor`)

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):  # dtypes are singletons, also across copy/pickle
        return (by_name, (self.name,))


DType.__name__ = DType.__qualname__ = "dtype"  # printed as PyTorch's `torch.dtype`
DType.__module__ = "torch"


float32 = DType("float32", np.float32, 2, "FloatTensor")
float64 = DType("float64", np.float64, 2, "DoubleTensor")
float16 = DType("float16", np.float16, 2, "HalfTensor")
int64 = DType("int64", np.int64, 1, "LongTensor")
int32 = DType("int32", np.int32, 1, "IntTensor")
int16 = DType("int16", np.int16, 1, "ShortTensor")
int8 = DType("int8", np.int8, 1, "CharTensor")
uint8 = DType("uint8", np.uint8, 1, "ByteTensor")
bool_ = DType("bool", np.bool_, 0, "BoolTensor")

ALL = (float32, float64, float16, int64, int32, int16, int8, uint8, bool_)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# aliases torch accepts
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32})

DEFAULT_FLOAT = float32


def by_name(name: str) -> DType:
    """The dtype called `name` (`float32`, `double`, ...)."""
    return _BY_NAME[name]


def of_array(a: np.ndarray) -> DType:
    """The torch dtype of a NumPy array (unsupported NumPy dtypes map to float64/int64)."""
    d = _BY_NP.get(a.dtype)
    if d is not None:
        return d
    if a.dtype.kind == "f":
        return float64
    if a.dtype.kind in "iu":
        return int64
    raise TypeError(f"can't convert np.ndarray of type numpy.{a.dtype} to a tensor")


def scalar_category(v: object) -> int:
    """Category of a Python scalar: 0 bool, 1 int, 2 float."""
    if isinstance(v, (bool, np.bool_)):
        return 0
    if isinstance(v, (int, np.integer)):
        return 1
    return 2


def default_for_category(cat: int) -> DType:
    """The dtype a Python scalar of this category becomes."""
    return (bool_, int64, DEFAULT_FLOAT)[cat]


def _higher(a: DType, b: DType) -> DType:
    """Promotion within one priority group: larger category, then wider type."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def result_type(*operands: object) -> DType:
    """PyTorch's result dtype for tensors (`.dtype`, `.ndim`) and Python scalars.

    Operands fall into three groups by priority: tensors with dimensions, 0-d
    tensors, Python scalars.  A lower group only changes the result when its
    category (bool < int < float) is higher than the result so far; so a Python
    float does not widen a float32 tensor, and a float64 0-d tensor does not
    widen a float32 vector.
    """
    dim = zero = None
    scal = -1
    for o in operands:
        dt = getattr(o, "dtype", None)
        if isinstance(dt, DType):
            if o.ndim:
                dim = dt if dim is None else _higher(dim, dt)
            else:
                zero = dt if zero is None else _higher(zero, dt)
        else:
            scal = max(scal, scalar_category(o))
    res = dim
    if zero is not None and (res is None or zero.category > res.category):
        res = zero
    if scal >= 0 and (res is None or scal > res.category):
        res = default_for_category(scal)
    return res if res is not None else DEFAULT_FLOAT


# The C++ type names PyTorch's messages print for each dtype ("long int", "c10::Half").
CPP_TYPE_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
}
