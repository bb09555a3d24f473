"""Value and gradient text for the boxes of a drawn graph, as micrograd's draw_dot labels them.

micrograd writes `data 2.0000 | grad -3.0000` in every node. Tensors are larger than
micrograd's scalars, so a tensor with at most `SMALL_NUMEL` elements shows its
values, and a bigger one its shape and the norm of its values (the whole tensor
would not fit in a box). Everything here reads arrays and changes nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .report import format_shape

__all__ = ["SMALL_NUMEL", "number_text", "data_line", "grad_line", "is_big"]

#: Tensors with at most this many elements are labelled with their values.
SMALL_NUMEL = 4


def number_text(x: Any) -> str:
    """One element as micrograd prints it (`%.4f`), switching to exponent form where
    four decimals would hide the number or make it very long."""
    if isinstance(x, (bool, np.bool_)):
        return "True" if x else "False"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (complex, np.complexfloating)):
        return f"{number_text(x.real)}{'+' if x.imag >= 0 else '-'}{number_text(abs(x.imag))}j"
    v = float(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0 or 1e-4 <= abs(v) < 1e6:
        return f"{v:.4f}"
    return f"{v:.4e}"


def is_big(a: np.ndarray) -> bool:
    """Whether `a` is labelled by its shape rather than its values."""
    return int(a.size) > SMALL_NUMEL


def _values(a: np.ndarray) -> str:
    if a.ndim == 0:
        return number_text(a.item())
    flat = [number_text(v) for v in a.reshape(-1).tolist()]
    return "[" + ", ".join(flat) + "]"


def _norm(a: np.ndarray) -> str:
    try:
        return number_text(float(np.linalg.norm(a.astype(np.float64).reshape(-1))))
    except (TypeError, ValueError):  # complex or odd dtypes: no norm line
        return "?"


def data_line(a: np.ndarray | None) -> str | None:
    """`data 2.0000`, `data [1.0000, 2.0000]`, or `data norm 3.1623` for a big tensor
    (its shape is on the line above); None when the values are not known."""
    if a is None:
        return None
    return f"data norm {_norm(a)}" if is_big(a) else f"data {_values(a)}"


def grad_line(g: np.ndarray | None, *, known: bool = True) -> str | None:
    """`grad -3.0000`, `grad norm 0.5000`, `grad None` (no gradient reached it), or
    None when no backward pass ran through the node (nothing to say)."""
    if not known:
        return None
    if g is None:
        return "grad None"
    return f"grad norm {_norm(g)}" if is_big(g) else f"grad {_values(g)}"


def shape_line(shape: Any, dtype: str = "float32") -> str:
    """`[4, 3]`, with the dtype when it is not float32."""
    text = format_shape(shape)
    return text if dtype == "float32" else f"{text} {dtype}"
