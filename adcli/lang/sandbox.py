"""What a script may touch: attributes, format strings, sizes.

Rules (SPEC section 4: no Python objects, modules, files or dunders):

- No attribute whose name starts with "_" is ever read or written.
- Reading ``obj.name`` needs ``name in type(obj).__ad_attrs__`` (declared by
  the host's classes), or `obj` to be a `Namespace`, or a whitelisted method
  of a plain list/dict/str/tuple. Everything else is refused, including all
  attributes of functions, classes, modules and exceptions.
- Writing ``obj.name = v`` needs ``name in type(obj).__ad_settable__``.
- ``with`` needs ``type(obj).__ad_context__ is True``.
- ``str.format`` and f-strings allow only plain ``{}``, ``{0}``, ``{name}``
  fields (no ``{0.attr}``/``{0[key]}``) and bounded widths.
- Operators refuse results beyond `Limits` (huge repetitions, concatenations,
  integer powers and products), before allocating them.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from string import Formatter
from typing import Any

from adcli.errors import LimitError, SandboxError
from adcli.lang.host import Limits, Namespace, missing_member

__all__ = [
    "type_name",
    "get_attribute",
    "set_attribute",
    "check_context_manager",
    "make_operators",
    "Guards",
]

_SEQ_TYPES = (str, list, tuple)
_SEQ_SET = frozenset(_SEQ_TYPES)


def type_name(obj: object) -> str:
    """The class name Python would print for `obj` ("function" for script functions)."""
    return type(obj).__name__


def refuse_private(name: str) -> SandboxError:
    """The error for any attribute starting with an underscore."""
    return SandboxError(f"attribute '{name}' is not available in adcli scripts")


class Guards:
    """Size checks bound to one `Limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.max_seq = limits.max_sequence
        self.max_bits = limits.max_int_bits
        self.max_width = limits.max_format_width

    # ------------------------------------------------------------- sizes

    def too_long(self, n: int, what: str = "sequence") -> LimitError:
        """The error for a `what` of `n` items (over the limit)."""
        return LimitError(f"{what} of {n:,} items is longer than the limit of {self.max_seq:,}")

    def check_len(self, n: int, what: str = "sequence") -> None:
        """Refuse a result of `n` items beyond `max_sequence`."""
        if n > self.max_seq:
            raise self.too_long(n, what)

    def materialize(self, iterable: Iterable[Any], what: str = "list") -> list:
        """list(iterable), refusing more than `max_sequence` items (lazily checked)."""
        try:
            n = len(iterable)  # type: ignore[arg-type]
        except Exception:
            n = -1
        if n > self.max_seq:
            raise self.too_long(n, what)
        if n >= 0 and type(iterable) in (list, tuple, range, str, dict):
            return list(iterable)
        out = []
        append = out.append
        limit = self.max_seq
        for i, item in enumerate(iterable):
            if i >= limit:
                raise LimitError(f"{what} longer than the limit of {limit:,} items")
            append(item)
        return out

    def check_int_bits(self, bits: int) -> None:
        """Refuse an int result of about `bits` bits."""
        if bits > self.max_bits:
            raise LimitError(
                f"integer result of about {bits:,} bits is larger than the limit of"
                f" {self.max_bits:,} bits"
            )

    # ------------------------------------------------------------ formats

    _NUMBERS = re.compile(r"\d+")

    def check_spec(self, spec: str) -> None:
        """Refuse format specs whose width or precision exceeds the limit."""
        if spec:
            for m in self._NUMBERS.finditer(spec):
                if len(m.group()) > 6 or int(m.group()) > self.max_width:
                    raise LimitError(
                        f"format width or precision {m.group()} is larger than the limit of"
                        f" {self.max_width:,}"
                    )

    def format_value(self, value: object, spec: str) -> str:
        """format(value, spec) after checking the spec."""
        self.check_spec(spec)
        return format(value, spec)

    _PERCENT = re.compile(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")

    def check_percent(self, fmt: str) -> None:
        """Refuse ``%`` formats with ``*`` or huge widths."""
        for m in self._PERCENT.finditer(fmt):
            for g in m.groups():
                if g == "*":
                    raise SandboxError("'*' widths in % formats are not available in adcli scripts")
                if g is not None:
                    self.check_spec(g)

    def safe_format(self, fmt: str, args: tuple, kwargs: dict) -> str:
        """str.format with plain fields only ({}, {0}, {name}) and bounded output."""
        out: list[str] = []
        state = {"auto": 0, "manual": False, "total": 0}
        self._format_into(fmt, args, kwargs, out, state, 0)
        return "".join(out)

    def _format_into(
        self, fmt: str, args: tuple, kwargs: dict, out: list, state: dict, depth: int
    ) -> None:
        if depth > 1:
            raise ValueError("Max string recursion exceeded")
        for literal, field, spec, conv in Formatter().parse(fmt):
            if literal:
                out.append(literal)
                state["total"] += len(literal)
            if field is None:
                continue
            key: int | str
            if field == "":
                if state["manual"]:
                    raise ValueError(
                        "cannot switch from manual field specification to automatic field numbering"
                    )
                key = state["auto"]
                state["auto"] += 1
            elif field.isdigit():
                if state["auto"]:
                    raise ValueError(
                        "cannot switch from automatic field numbering to manual field specification"
                    )
                state["manual"] = True
                key = int(field)
            elif field.isidentifier() and not field.startswith("_"):
                key = field
            else:
                raise SandboxError(
                    f"format field '{{{field}}}' is not available in adcli scripts"
                    " (only {}, {0} or {name} fields)"
                )
            if isinstance(key, int):
                if key >= len(args):
                    raise IndexError(
                        f"Replacement index {key} out of range for positional args tuple"
                    )
                value = args[key]
            else:
                value = kwargs[key]
            if conv == "r":
                value = repr(value)
            elif conv == "s":
                value = str(value)
            elif conv == "a":
                value = ascii(value)
            elif conv is not None:
                raise ValueError(f"Unknown conversion specifier {conv}")
            if spec and "{" in spec:
                inner: list[str] = []
                self._format_into(spec, args, kwargs, inner, state, depth + 1)
                spec = "".join(inner)
            piece = self.format_value(value, spec or "")
            out.append(piece)
            state["total"] += len(piece)
            if state["total"] > self.max_seq:
                raise self.too_long(state["total"], "formatted string")

    # ---------------------------------------------------------- operators

    def add(self, a: Any, b: Any) -> Any:
        """a + b, refusing too long str/list/tuple results."""
        if type(a) in _SEQ_SET and type(b) in _SEQ_SET:
            self.check_len(len(a) + len(b))
        return a + b

    def iadd(self, a: Any, b: Any) -> Any:
        """a += b, with the same checks as `add`."""
        if type(a) in _SEQ_SET:
            try:
                n = len(b)
            except TypeError:
                n = 0
            self.check_len(len(a) + n)
        a += b
        return a

    def _mul_check(self, a: Any, b: Any) -> None:
        ta = type(a)
        tb = type(b)
        if ta is int and tb is int:
            self.check_int_bits(a.bit_length() + b.bit_length())
        elif ta in _SEQ_SET and (tb is int or tb is bool):
            self.check_len(len(a) * b)
        elif tb in _SEQ_SET and (ta is int or ta is bool):
            self.check_len(len(b) * a)

    def mul(self, a: Any, b: Any) -> Any:
        """a * b, refusing huge repetitions and integer products."""
        self._mul_check(a, b)
        return a * b

    def imul(self, a: Any, b: Any) -> Any:
        """a *= b, with the same checks as `mul`."""
        self._mul_check(a, b)
        a *= b
        return a

    def _pow_check(self, a: Any, b: Any) -> None:
        if type(a) is int and type(b) is int and b > 0 and a not in (0, 1, -1):
            self.check_int_bits(b * a.bit_length())

    def pow(self, a: Any, b: Any) -> Any:
        """a ** b, refusing huge integer powers."""
        self._pow_check(a, b)
        return a**b

    def ipow(self, a: Any, b: Any) -> Any:
        """a **= b, with the same checks as `pow`."""
        self._pow_check(a, b)
        a **= b
        return a

    def mod(self, a: Any, b: Any) -> Any:
        """a % b; for ``str % args`` checks widths and the result's length."""
        if type(a) is str:
            self.check_percent(a)
            result = a % b
            self.check_len(len(result), "formatted string")
            return result
        return a % b

    def imod(self, a: Any, b: Any) -> Any:
        """a %= b (Python's in-place form, so errors name `%=`)."""
        if type(a) is str:
            return self.mod(a, b)
        a %= b
        return a


def make_operators(guards: Guards) -> tuple[dict[str, Callable], dict[str, Callable]]:
    """(binary operators, in-place operators) keyed by their source text."""
    binary: dict[str, Callable] = {
        "+": guards.add,
        "-": operator.sub,
        "*": guards.mul,
        "/": operator.truediv,
        "//": operator.floordiv,
        "%": guards.mod,
        "**": guards.pow,
        "@": operator.matmul,
        "&": operator.and_,
        "|": operator.or_,
        "^": operator.xor,
    }
    inplace: dict[str, Callable] = {
        "+": guards.iadd,
        "-": operator.isub,
        "*": guards.imul,
        "/": operator.itruediv,
        "//": operator.ifloordiv,
        "%": guards.imod,
        "**": guards.ipow,
        "@": operator.imatmul,
        "&": operator.iand,
        "|": operator.ior,
        "^": operator.ixor,
    }
    return binary, inplace


# --------------------------------------------------------------- attributes

_PLAIN = frozenset(
    {
        # list
        (list, "append"),
        (list, "pop"),
        (list, "insert"),
        (list, "index"),
        (list, "count"),
        (list, "copy"),
        (list, "reverse"),
        (list, "sort"),
        (list, "remove"),
        (list, "clear"),
        # dict
        (dict, "keys"),
        (dict, "values"),
        (dict, "items"),
        (dict, "get"),
        (dict, "pop"),
        (dict, "update"),
        (dict, "copy"),
        (dict, "setdefault"),
        # str
        (str, "split"),
        (str, "strip"),
        (str, "lstrip"),
        (str, "rstrip"),
        (str, "upper"),
        (str, "lower"),
        (str, "startswith"),
        (str, "endswith"),
        (str, "find"),
        (str, "count"),
        (str, "isdigit"),
        # tuple
        (tuple, "index"),
        (tuple, "count"),
    }
)


def _guarded_method(obj: Any, name: str, guards: Guards) -> Callable | None:
    """Whitelisted methods that could build huge results get a checking wrapper."""
    t = type(obj)
    if t is list and name == "extend":

        def extend(iterable: Iterable[Any]) -> None:
            items = guards.materialize(iterable)
            guards.check_len(len(obj) + len(items))
            obj.extend(items)

        return extend
    if t is str and name == "join":

        def join(iterable: Iterable[Any]) -> str:
            items = guards.materialize(iterable)
            total = len(obj) * max(0, len(items) - 1)
            for x in items:
                if type(x) is not str:
                    break  # str.join raises the right TypeError below
                total += len(x)
            guards.check_len(total, "string")
            return obj.join(items)

        return join
    if t is str and name == "replace":

        def replace(old: str, new: str, count: int = -1) -> str:
            if type(old) is str and type(new) is str and len(new) > len(old):
                n = obj.count(old) if old else len(obj) + 1
                if count >= 0:
                    n = min(n, count)
                guards.check_len(len(obj) + n * (len(new) - len(old)), "string")
            return obj.replace(old, new, count)

        return replace
    if t is str and name == "format":

        def format(*args: Any, **kwargs: Any) -> str:  # noqa: A001 - str.format
            return guards.safe_format(obj, args, kwargs)

        return format
    return None


def get_attribute(obj: Any, name: str, guards: Guards) -> Any:
    """``obj.name`` as a script may see it (see the module docstring)."""
    if name[:1] == "_":
        raise refuse_private(name)
    t = type(obj)
    if t is Namespace:
        try:
            return obj.__ad_members__[name]
        except KeyError:
            raise AttributeError(missing_member(obj.__ad_name__, name)) from None
    allowed = getattr(t, "__ad_attrs__", None)
    if allowed is not None and type(allowed) is frozenset and name in allowed:
        return getattr(obj, name)
    if (t, name) in _PLAIN:
        return getattr(obj, name)
    if t in (list, str):
        wrapped = _guarded_method(obj, name, guards)
        if wrapped is not None:
            return wrapped
    if allowed is None and t not in (list, dict, str, tuple) and _has_attr(obj, name):
        raise SandboxError(
            f"attribute '{name}' of '{t.__name__}' objects is not available in adcli scripts"
        )
    raise AttributeError(_missing_attribute(t.__name__, name))


def _missing_attribute(type_name: str, name: str) -> str:
    from adcli.lang.pytorch_names import PYTORCH_NAMES

    if type_name == "Tensor" and name in PYTORCH_NAMES["Tensor"]:
        return f"adcli does not support Tensor.{name} yet"
    return f"'{type_name}' object has no attribute '{name}'"


def _has_attr(obj: Any, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:
        return False


def set_attribute(obj: Any, name: str, value: Any) -> None:
    """``obj.name = value`` if the host declared `name` settable."""
    if name[:1] == "_":
        raise refuse_private(name)
    t = type(obj)
    if t is Namespace:
        raise SandboxError(
            f"cannot assign to attribute '{name}' of module '{obj.__ad_name__}' in adcli scripts"
        )
    settable = getattr(t, "__ad_settable__", None)
    if settable is not None and type(settable) is frozenset and name in settable:
        setattr(obj, name, value)
        return
    readable = getattr(t, "__ad_attrs__", None)
    if readable is not None and type(readable) is frozenset and name in readable:
        raise AttributeError(f"attribute '{name}' of '{t.__name__}' objects is not writable")
    if readable is not None or t in (int, float, str, bool, list, tuple, dict, type(None)):
        raise AttributeError(f"'{t.__name__}' object has no attribute '{name}'")
    raise SandboxError(f"cannot set attribute '{name}' of '{t.__name__}' objects in adcli scripts")


def delete_attribute(obj: Any, name: str) -> None:
    """``del obj.name``: never allowed."""
    if name[:1] == "_":
        raise refuse_private(name)
    raise SandboxError(f"cannot delete attribute '{name}' in adcli scripts")


def check_context_manager(obj: Any) -> None:
    """Refuse ``with obj:`` unless the host marked the class ``__ad_context__ = True``."""
    if getattr(type(obj), "__ad_context__", False) is not True:
        raise TypeError(
            f"'{type(obj).__name__}' object does not support the context manager protocol"
        )
