"""Render NumPy arrays exactly as PyTorch 2.13 prints tensors.

This module reproduces ``repr(tensor)`` / ``print(tensor)`` of PyTorch 2.13
(CPU, strided, real dtypes) without importing torch.  It is pure NumPy plus
Python string formatting.  The rules (see PYTORCH-REFERENCE.md, section 2):

* One *element formatter* is chosen for the whole tensor (or, when the tensor
  has more than ``threshold`` elements, for the summarised subset that is
  actually shown).  Integer and bool tensors print ``str(value)``.  Floating
  tensors look only at their non-zero finite values, taken as Python floats
  (a float32 value converted *exactly* to double, so float32 rounding shows):

  - *int mode*: every such value is integral -> ``3.`` style;
  - *sci mode*: ``max|v| / min|v| > 1000`` or ``max|v| > 1e8`` or
    ``min|v| < 1e-4`` (int mode only uses the first two) -> ``1.0000e-05``;
  - otherwise fixed point with ``precision`` (4) decimals.

  Every element is left-padded with spaces to one common width.
* Layout: ``tensor(`` prefix (indent 7); a 1-d row wraps so that at most
  ``(linewidth - indent) // (width + 2)`` elements sit on one line; n-d rows
  are nested with one more space of indent per level, and ``ndim - 1``
  newlines between sub-blocks (a blank line between the 2-d blocks of a 3-d
  tensor).  More than ``threshold`` (1000) elements: every axis longer than
  ``2 * edgeitems`` keeps only its first and last ``edgeitems`` entries, with
  ``...`` in between.
* Suffixes after the contents, each after ``", "`` or, when it would pass
  the line width, on a new line indented by 7: ``size=(0, 3)`` (empty non-1-d
  tensors), ``dtype=torch.xxx`` (non-default dtypes, or any non-float32
  empty tensor), then ``grad_fn=<Name>`` or else ``requires_grad=True``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_PRINT_OPTIONS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "PrintOptions",
    "format_dtype",
    "format_size",
    "format_tensor",
]

#: Floating-point dtype names (torch names without the ``torch.`` prefix).
FLOAT_DTYPES: frozenset[str] = frozenset({"float16", "bfloat16", "float32", "float64"})
#: Integer dtype names.
INT_DTYPES: frozenset[str] = frozenset(
    {"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
)
_ALL_DTYPES: frozenset[str] = FLOAT_DTYPES | INT_DTYPES | {"bool"}

#: Dtypes that a non-empty tensor never names in its repr (besides the default
#: float dtype, float32 unless ``torch.set_default_dtype`` changed it).
_IMPLICIT_DTYPES: frozenset[str] = frozenset({"float32", "int64", "bool", "complex64"})

#: NumPy dtypes used to coerce ``data`` (bfloat16 has none: data is kept as is).
_NUMPY_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(name) for name in _ALL_DTYPES if name != "bfloat16"
}

#: Text of ``repr(tensor)`` starts with this; its length is the base indent.
_PREFIX = "tensor("


@dataclass(frozen=True)
class PrintOptions:
    """The subset of ``torch.set_printoptions`` that affects tensor text.

    Attributes mirror torch's names and defaults.  ``sci_mode=None`` means
    "decide automatically"; ``True``/``False`` force it (except for tensors
    with no non-zero finite value, which always print in int mode).
    ``threshold`` may be ``math.inf`` (torch's ``profile="full"``).
    """

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


#: Torch's defaults (``torch.set_printoptions(profile="default")``).
DEFAULT_PRINT_OPTIONS = PrintOptions()

_PROFILES = {
    "default": DEFAULT_PRINT_OPTIONS,
    "short": PrintOptions(precision=2, edgeitems=2),
    "full": PrintOptions(threshold=math.inf),
}


class _Current:
    """What ``print(tensor)`` uses now: ``torch.set_printoptions`` and the default
    float dtype (``torch.set_default_dtype``) change it; a host resets it per run."""

    options: PrintOptions = DEFAULT_PRINT_OPTIONS
    default_dtype: str = "float32"


current = _Current()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """``torch.set_printoptions``: a profile first, then each option given; ``sci_mode``
    is set on every call (omitting it means "decide automatically" again)."""
    base = _PROFILES.get(profile, current.options) if profile is not None else current.options
    changes = {
        k: v
        for k, v in (
            ("precision", precision),
            ("threshold", threshold),
            ("edgeitems", edgeitems),
            ("linewidth", linewidth),
        )
        if v is not None
    }
    current.options = dataclasses.replace(base, sci_mode=sci_mode, **changes)


def reset_print_state() -> None:
    """PyTorch's fresh-process print options and default dtype."""
    current.options = DEFAULT_PRINT_OPTIONS
    current.default_dtype = "float32"


def format_dtype(dtype: str) -> str:
    """Return ``str(torch.<dtype>)``, e.g. ``"float32"`` -> ``"torch.float32"``."""
    if dtype not in _ALL_DTYPES:
        raise ValueError(f"unsupported dtype name: {dtype!r}")
    return "torch." + dtype


def format_size(shape: Iterable[int]) -> str:
    """Return ``str(torch.Size(shape))``, e.g. ``torch.Size([2, 3])``."""
    return "torch.Size([" + ", ".join(str(int(n)) for n in shape) + "])"


def format_tensor(
    data: np.ndarray,
    dtype: str,
    *,
    grad_fn: str | None = None,
    requires_grad: bool = False,
    options: PrintOptions | None = None,
    tangent: str | None = None,
) -> str:
    """Return exactly what ``repr(t)`` gives in PyTorch 2.13 for a CPU tensor.

    Args:
        data: the tensor's values, with the tensor's shape.  It is coerced to
            the NumPy dtype matching ``dtype`` (a no-op when it already has it),
            so float32 tensors must be passed as float32 data to print the
            float32-rounded values torch shows.
        dtype: the torch dtype name without ``torch.``: ``"float32"``,
            ``"float64"``, ``"float16"``, ``"int64"``, ``"int32"``, ``"bool"``...
        grad_fn: class name of the tensor's ``grad_fn`` (``"MulBackward0"``),
            or ``None`` for a leaf.  Printed as ``grad_fn=<MulBackward0>``.
        requires_grad: printed as ``requires_grad=True`` only when there is
            no ``grad_fn`` (i.e. for leaves), as torch does.
        options: print options; the current ``torch.set_printoptions`` unless given.
        tangent: a dual tensor's ``tangent=...`` suffix (forward AD), printed last.

    Returns:
        The text, possibly spanning several lines (no trailing newline).
    """
    if dtype not in _ALL_DTYPES:
        raise ValueError(f"unsupported dtype name: {dtype!r}")
    if options is None:
        options = current.options
    default = current.default_dtype
    np_dtype = _NUMPY_DTYPES.get(dtype)
    array = np.asarray(data) if np_dtype is None else np.asarray(data, dtype=np_dtype)
    indent = len(_PREFIX)
    suffixes: list[str] = []

    if array.size == 0:
        # Empty: "[]", plus the shape unless 1-d, plus the dtype unless it is
        # the default float32 (an empty int64 tensor names its dtype).
        body = "[]"
        if array.ndim != 1:
            suffixes.append("size=" + str(tuple(int(n) for n in array.shape)))
        if dtype != default:
            suffixes.append("dtype=" + format_dtype(dtype))
    else:
        if not options.edgeitems:
            # torch shows only "[...]" and the size when edgeitems is 0.
            suffixes.append("size=" + str(tuple(int(n) for n in array.shape)))
        if dtype != default and (dtype not in _IMPLICIT_DTYPES or dtype == "float32"):
            suffixes.append("dtype=" + format_dtype(dtype))
        body = _format_contents(array, dtype in FLOAT_DTYPES, indent, options)

    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    if tangent is not None:
        suffixes.append(tangent)
    return _add_suffixes(_PREFIX + body, suffixes, indent, options.linewidth)


# ---------------------------------------------------------------------------
# Element formatting
# ---------------------------------------------------------------------------


class _ElementFormatter:
    """Formats single values of one tensor with one common width and style."""

    __slots__ = ("floating", "int_mode", "sci_mode", "width", "precision")

    def __init__(self, values: Sequence[float | int | bool], floating: bool, options: PrintOptions):
        """Choose the style and width from ``values`` (the elements shown)."""
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        self.precision = options.precision
        if not floating:
            self.width = max(1, max(len(str(v)) for v in values))
            return

        # Only the non-zero finite values decide the format (nan != 0 holds,
        # but isfinite rejects it).
        shown = [v for v in values if v != 0.0 and math.isfinite(v)]
        if not shown:
            return  # all zero / nan / inf: int mode, width 1, sci forced off
        magnitudes = [abs(v) for v in shown]
        largest = max(magnitudes)
        smallest = min(magnitudes)
        self.int_mode = all(v == math.ceil(v) for v in shown)
        if options.sci_mode is not None:
            self.sci_mode = options.sci_mode
        elif self.int_mode:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8
        else:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4

        p = self.precision
        if self.sci_mode:
            self.width = max(len(f"{v:.{p}e}") for v in shown)
        elif self.int_mode:
            # One extra column for the trailing "." of "3.".
            self.width = max(len(f"{v:.0f}") for v in shown) + 1
        else:
            self.width = max(len(f"{v:.{p}f}") for v in shown)
        self.width = max(self.width, 1)

    def format(self, value: float | int | bool) -> str:
        """Return ``value`` as text, left-padded with spaces to the width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{self.precision}f}"
        return text.rjust(self.width)


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


def _summarise(array: np.ndarray, edgeitems: int) -> tuple[np.ndarray, tuple[bool, ...]]:
    """Keep the first/last ``edgeitems`` entries of every axis longer than 2x that.

    Returns the reduced array and, per axis, whether it was cut (so that the
    layout inserts ``...`` after the first ``edgeitems`` entries).
    """
    cut = tuple(n > 2 * edgeitems for n in array.shape)
    for axis, is_cut in enumerate(cut):
        if is_cut:
            n = array.shape[axis]
            keep = list(range(edgeitems)) + list(range(n - edgeitems, n))
            array = np.take(array, keep, axis=axis)
    return array, cut


def _format_contents(array: np.ndarray, floating: bool, indent: int, options: PrintOptions) -> str:
    """Return the bracketed contents of a non-empty tensor (no prefix/suffix)."""
    summarize = array.size > options.threshold
    if summarize and options.edgeitems:
        array, cut = _summarise(array, options.edgeitems)
    else:
        cut = (False,) * array.ndim
    # Python scalars: float32 values become their exact double value.
    values = array.ravel().tolist()
    formatter = _ElementFormatter(values, floating, options)
    if array.ndim == 0:
        return formatter.format(values[0])
    if summarize and not options.edgeitems:
        # Degenerate torch behaviour with edgeitems=0: a 1-d tensor prints
        # "[...]"; higher ranks nest empty rows (we print the common 1-d form).
        return "[...]"
    cells = [formatter.format(v) for v in values]
    return _layout(cells, array.shape, cut, indent, formatter.width, options)


def _layout(
    cells: list[str],
    shape: tuple[int, ...],
    cut: tuple[bool, ...],
    indent: int,
    width: int,
    options: PrintOptions,
) -> str:
    """Nest the formatted ``cells`` (row-major) into torch's bracketed text."""
    ndim = len(shape)
    edge = options.edgeitems
    # Row-major strides, in cells.
    strides = [1] * ndim
    for axis in range(ndim - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]

    def block(offset: int, axis: int, level_indent: int) -> str:
        n = shape[axis]
        if axis == ndim - 1:
            # Innermost: a 1-d row, wrapped at the line width.  The " ..."
            # marker counts as one element when filling lines.
            row = cells[offset : offset + n]
            if cut[axis]:
                row = row[:edge] + [" ..."] + row[edge:]
            per_line = max(1, (options.linewidth - level_indent) // (width + 2))
            lines = [", ".join(row[i : i + per_line]) for i in range(0, len(row), per_line)]
            return "[" + (",\n" + " " * (level_indent + 1)).join(lines) + "]"
        parts = [block(offset + i * strides[axis], axis + 1, level_indent + 1) for i in range(n)]
        if cut[axis]:
            parts.insert(edge, "...")
        separator = "," + "\n" * (ndim - axis - 1) + " " * (level_indent + 1)
        return "[" + separator.join(parts) + "]"

    return block(0, 0, indent)


def _add_suffixes(text: str, suffixes: list[str], indent: int, linewidth: int) -> str:
    """Append ``suffixes`` and the closing parenthesis, wrapping as torch does.

    A suffix stays on the current line (after ``", "``) unless the line,
    counted as its length + 1 (+2 more for a one-line text: torch measures
    from ``rfind("\\n")`` which is -1 then), plus the suffix and 2 exceeds the
    line width; then it starts a new line indented by ``indent``.
    """
    pieces = [text]
    line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_len + len(suffix) + 2 > linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)
