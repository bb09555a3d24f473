"""The guard between scripts and Python, and the builtins table scripts see.

Compiled scripts (see `adcli.lang.compiler`) never touch an attribute
directly: every ``obj.name`` read, write and delete goes through the
functions of `make_attribute_guards` (SPEC section 4: no Python objects,
modules, files or dunders):

- No attribute whose name starts with "_" is ever read or written, except a
  class's ``__name__`` (``type(e).__name__``), on ``super()`` the dunder
  methods a script class may define (``super().__init__(...)``), and
  single-underscore names a script sets or defines on its own instances and
  classes (``self._prev``; see `script_name_ok`), and reading a single-underscore
  name a host class lists in ``__ad_attrs__`` (PyTorch's ``grad_fn._saved_self``
  and friends, see adcli/autograd/saved_attrs.py; ``x._version``, ``x._base``).
- Reading ``obj.name`` needs ``name in type(obj).__ad_attrs__`` (declared by
  the host's classes), or `obj` to be a `Namespace`, or a whitelisted method
  of a plain list/dict/str/tuple, or `obj` to be an instance (or a class)
  made by a script's ``class`` statement and ``name`` defined by it. All
  attributes of functions, generators, frames, modules and Python's own
  classes and exceptions are refused.
- Writing ``obj.name = v`` needs ``name in type(obj).__ad_settable__`` (or a
  script class instance); so does ``del obj.name`` (the class's own delete runs:
  an nn.Module forgets the parameter).
- A host class marked ``__ad_open__ = True`` (an autograd ``ctx``) also lets
  scripts write any public name its class does not define into the instance's
  ``__dict__``, and read it back from there.
- ``with`` needs ``type(obj).__ad_context__ is True`` (or a script class).
- A script class may define only `DEFINABLE_DUNDERS`, and derive only from
  script classes, the exception classes in `EXCEPTIONS` and host classes
  marked ``__ad_subclass__ = True``; ``type()`` of a class is refused.
- ``str.format`` and f-strings allow only plain ``{}``, ``{0}``, ``{name}``
  fields (no ``{0.attr}``/``{0[key]}``) and bounded widths.
- Operators and builtins refuse results beyond `Limits` (huge repetitions,
  concatenations, integer powers and products, endless iterables), before
  allocating them.

`make_builtins` is the table of pure builtins (print, len, range, ...);
`make_script_builtins` adds the class builtins (type, isinstance, super,
property...) and getattr/setattr/hasattr/delattr, which follow the rules above
exactly as ``obj.name`` does. The evaluator layers the host's globals over it.
"""

from __future__ import annotations

import builtins
import itertools
import operator
import re
import sys
import types
from collections.abc import Callable, Iterable
from string import Formatter
from typing import Any

from adcli.lang.bounds import NESTED, BigRange, int_text_bits, nested_size
from adcli.lang.errors import LimitError, SandboxError
from adcli.lang.host import Limits, Namespace, missing_attribute, missing_member

__all__ = [
    "DEFINABLE_DUNDERS",
    "EXCEPTIONS",
    "Guards",
    "check_bases",
    "context_manager",
    "format_field",
    "get_attribute",
    "host_import",
    "is_script_class",
    "make_attribute_guards",
    "make_builtins",
    "make_operator_helpers",
    "make_print",
    "make_script_builtins",
    "mark_class",
    "set_attribute",
    "type_name",
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
        out = list(itertools.islice(iterable, self.max_seq + 1))  # one more tells
        if len(out) > self.max_seq:
            raise LimitError(f"{what} longer than the limit of {self.max_seq:,} items")
        return out

    def check_int_bits(self, bits: int) -> None:
        """Refuse an int result of about `bits` bits."""
        if bits > self.max_bits:
            raise LimitError(
                f"integer result of about {bits:,} bits is larger than the limit of"
                f" {self.max_bits:,} bits"
            )

    def check_repr(self, value: object) -> None:
        """Refuse the text of a container that would be longer than `max_sequence`
        items: nested lists sharing items print every share (``l = [l, l]``, doubled)."""
        if type(value) in NESTED:
            n = nested_size(value)
            if n is not None and n > self.max_seq:
                raise self.too_long(n, f"text of a nested {type(value).__name__}")

    def check_compare(self, items: list, what: str) -> None:
        """Refuse sorting or comparing `items` when they are containers whose
        comparisons together would visit more than 10x `max_sequence` items."""
        if len(items) > 1 and not set(map(type, items)).isdisjoint(NESTED):
            work = (nested_size(items) or 0) * max(1, len(items).bit_length())
            if work > 10 * self.max_seq:
                raise LimitError(
                    f"{what} of nested items would compare about {work:,} items, more than"
                    f" the limit of {10 * self.max_seq:,}"
                )

    def int_(self, *args: Any, **kwargs: Any) -> int:
        """int(x) and int(text, base), refusing a text whose int would pass `max_int_bits`."""
        if args and type(args[0]) is str and (len(args) > 1 or "base" in kwargs):
            base = args[1] if len(args) > 1 else kwargs["base"]
            if type(base) is int:
                self.check_int_bits(int(int_text_bits(args[0], base)))
        return int(*args, **kwargs)

    def range_(self, *args: Any) -> Any:
        """range(...); one longer than `max_sequence` becomes a `BigRange` (see bounds.py)."""
        r = range(*args)
        try:
            n = len(r)
        except OverflowError:
            n = self.max_seq + 1
        if n <= self.max_seq:
            return r
        steps = self.limits.max_steps

        def refuse(count: int) -> LimitError:
            size = f"{len(r):,}" if n <= sys.maxsize else "too many"
            return LimitError(
                f"a range of {size} items is longer than the limit of {steps:,} (the step"
                " limit) for a search or an iteration outside a loop"
            )

        return BigRange(r, steps, refuse)

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
        self.check_repr(value)
        return format(value, spec)

    # after a '%' and its optional (key): flags, width, precision (or '%%')
    _PERCENT = re.compile(r"[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")

    def check_percent(self, fmt: str) -> None:
        """Refuse ``%`` formats with ``*`` or huge widths (``%(key)5s`` included)."""
        i = fmt.find("%")
        while i != -1:
            j = i + 1
            if fmt.startswith("(", j):  # a mapping key: Python matches nested parentheses
                depth = 0
                while j < len(fmt):
                    depth += {"(": 1, ")": -1}.get(fmt[j], 0)
                    j += 1
                    if depth == 0:
                        break
            m = self._PERCENT.match(fmt, j)
            assert m is not None  # every part of the pattern is optional
            for g in m.groups():
                if g == "*":
                    raise SandboxError("'*' widths in % formats are not available in adcli scripts")
                if g is not None:
                    self.check_spec(g)
            i = fmt.find("%", m.end() + 1)  # past the conversion character ('%' of '%%' too)

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
            value = _conversion(value, conv)
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
        elif ta in _SEQ_SET:
            self._repeat_check(a, b if tb is int or tb is bool else _count(b))
        elif tb in _SEQ_SET:
            self._repeat_check(b, a if ta is int or ta is bool else _count(a))

    def _repeat_check(self, seq: Any, n: int) -> None:
        """``seq * n``: its length, and what printing or comparing it would visit (each
        repeated row in full: ``[[0] * 10**7] * 10**7`` is short but has 10**14 items)."""
        self.check_len(len(seq) * n)
        if n > 1 and type(seq) is not str:
            size = nested_size(seq)
            if size is not None and size * n > self.max_seq:
                raise self.too_long(size * n, f"nested {type(seq).__name__}")

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
            self.check_repr(b)
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


def _count(v: Any) -> int:
    """The repeat count `v` stands for in ``seq * v``: any integer-like value (a NumPy
    int, a one-element integer tensor) repeats as its int does; 0 for anything else
    (the operator itself then raises Python's TypeError)."""
    try:
        return operator.index(v)
    except Exception:
        return 0


# --------------------------------------------------------------- attributes

_PLAIN = frozenset(
    (t, name)
    for t, names in (
        (list, "append pop insert index count copy reverse sort remove clear"),
        (dict, "keys values items get pop popitem clear copy setdefault"),
        # set and frozenset (the methods taking iterables are in _guarded_method)
        (set, "add discard remove pop clear copy issubset issuperset isdisjoint"),
        (frozenset, "copy issubset issuperset isdisjoint"),
        (
            str,
            "split rsplit strip lstrip rstrip upper lower title capitalize swapcase casefold"
            " startswith endswith find rfind index rindex count partition rpartition"
            " splitlines removeprefix removesuffix isdigit isalpha isalnum isspace isupper"
            " islower isnumeric isdecimal istitle isidentifier",
        ),
        (tuple, "index count"),
        # slice (what `x[a:b:c]` makes; `slice(...)` builds one)
        (slice, "start stop step indices"),
    )
    for name in names.split()
)


_PLAIN_TYPES = (list, dict, str, tuple, set, frozenset)
_PADDING = frozenset("ljust rjust center zfill".split())  # results as long as `width`
_SET_METHODS = frozenset(
    "union intersection difference symmetric_difference update intersection_update"
    " difference_update symmetric_difference_update".split()
)
_FROZEN_METHODS = frozenset("union intersection difference symmetric_difference".split())


def _guarded_method(obj: Any, name: str, guards: Guards) -> Callable | None:
    """Whitelisted methods that could build huge results get a checking wrapper."""
    t = type(obj)
    if (t is set and name in _SET_METHODS) or (t is frozenset and name in _FROZEN_METHODS):
        method = getattr(obj, name)

        def set_method(*others: Iterable[Any]) -> Any:
            items = [o if type(o) in (set, frozenset) else guards.materialize(o) for o in others]
            guards.check_len(len(obj) + sum(len(o) for o in items), "set")
            return method(*items)

        set_method.__name__ = name
        return set_method
    if t is dict and name == "update":

        def update(*args: Any, **kwargs: Any) -> None:
            if len(args) > 1:
                raise TypeError(f"update expected at most 1 argument, got {len(args)}")
            src = args[0] if args else {}
            if not isinstance(src, dict):
                src = guards.materialize(src, "dict")
            guards.check_len(len(obj) + len(src) + len(kwargs), "dict")
            obj.update(src, **kwargs)

        return update
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
    if t is str and name in _PADDING:
        method = getattr(obj, name)

        def pad(width: Any, *fill: Any) -> str:
            guards.check_len(operator.index(width), "string")
            return method(width, *fill)

        pad.__name__ = name
        return pad
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


#: Attribute readers for foreign classes a host exposes (NumPy arrays, scalars and
#: dtypes): type -> reader(obj, name), which returns the attribute or raises.
ATTRIBUTE_READERS: dict[type, Callable[[Any, str], Any]] = {}
#: Attribute writers for host classes that take names a script chooses (adcli's
#: layers: `model.fc = nn.Linear(...)` registers a submodule): type -> writer(obj,
#: name, value), which sets the attribute (True), refuses a name the host uses
#: itself (False), or raises.
ATTRIBUTE_WRITERS: dict[type, Callable[[Any, str, Any], bool]] = {}
#: What ``type(x)`` gives a script for these real types: stand-ins that check
#: ``isinstance`` but cannot construct objects from raw memory (``numpy.ndarray``).
TYPE_PROXIES: dict[type, type] = {}


def get_attribute(obj: Any, name: str, guards: Guards) -> Any:
    """``obj.name`` as a script may see it (see the module docstring)."""
    t = _public_type(obj, name)
    reader = ATTRIBUTE_READERS.get(t)
    if reader is not None:
        return reader(obj, name)
    if t is Namespace:
        try:
            return obj.__ad_members__[name]
        except KeyError:
            message = missing_member(obj.__ad_name__, name)
            raise AttributeError(message, name=name, obj=obj) from None
    if _declares(t, "__ad_attrs__", name):
        return getattr(obj, name)
    if getattr(t, "__ad_open__", False) is True:
        # a host object scripts keep their own attributes on (an autograd ctx)
        try:
            return obj.__dict__[name]
        except KeyError:
            raise _no_attr(obj, name) from None
    if (t, name) in _PLAIN:
        return getattr(obj, name)
    if name == "args" and isinstance(obj, BaseException) and _plain_args(obj):
        return obj.args  # what `raise E(a, b)` was given: tutorials print it
    if t in (list, str, set, frozenset, dict):
        wrapped = _guarded_method(obj, name, guards)
        if wrapped is not None:
            return wrapped
    declared = getattr(t, "__ad_attrs__", None) is not None
    if not declared and t not in _PLAIN_TYPES and _has_attr(obj, name):
        raise SandboxError(
            f"attribute '{name}' of '{t.__name__}' objects is not available in adcli scripts"
        )
    # name and obj let the diagnostic say "Did you mean: ...?" as Python 3.12 does
    raise AttributeError(missing_attribute(t, name), name=name, obj=obj)


_PLAIN_ARGS = (str, int, float, bool, type(None))


def _plain_args(e: BaseException) -> bool:
    """Whether an exception's args are all plain data or script objects (an exception
    raised inside a library could carry one of its own objects)."""
    return all(type(a) in _PLAIN_ARGS or _is_script_instance(type(a)) for a in e.args)


def _unbound_method(cls: type, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`torch.Tensor.tanh`: the method as a function of its instance, refusing any
    other first argument with Python's descriptor error, as PyTorch's methods do."""
    owner = cls.__dict__.get("__ad_descriptor_owner__", cls.__name__)

    def method(*args: Any, **kwargs: Any) -> Any:
        if not args or not isinstance(args[0], cls):
            got = type(args[0]).__name__ if args else "NoneType"
            if not args:
                raise TypeError(f"unbound method {owner}.{name}() needs an argument")
            raise TypeError(
                f"descriptor '{name}' for '{owner}' objects doesn't apply to a '{got}' object"
            )
        return fn(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def _public_type(obj: Any, name: str) -> type:
    """type(obj), after refusing any name starting with an underscore, except the
    one documented exception: single-underscore names a host class lists in its
    ``__ad_attrs__`` (PyTorch's `grad_fn._saved_self`, `x._version`, `x._base`)."""
    if name[:1] == "_" and not (name[:2] != "__" and _declares(type(obj), "__ad_attrs__", name)):
        raise refuse_private(name)
    return type(obj)


def _declares(t: type, table: str, name: str) -> bool:
    """Does host class `t` list `name` in its `table` (``__ad_attrs__``...)?"""
    names = getattr(t, table, None)
    return type(names) is frozenset and name in names


def _has_attr(obj: Any, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:
        return False


def set_attribute(obj: Any, name: str, value: Any) -> None:
    """``obj.name = value`` if the host declared `name` settable."""
    t = _public_type(obj, name)
    if t is Namespace:
        raise SandboxError(
            f"cannot assign to attribute '{name}' of module '{obj.__ad_name__}' in adcli scripts"
        )
    if _declares(t, "__ad_settable__", name):
        setattr(obj, name, value)
        return
    writer = ATTRIBUTE_WRITERS.get(t)
    if writer is not None:
        if not writer(obj, name, value):
            raise SandboxError(
                f"attribute '{name}' of '{t.__name__}' objects is used by adcli: "
                "choose another name"
            )
        return
    if getattr(t, "__ad_open__", False) is True and not _declares(t, "__ad_attrs__", name):
        if hasattr(t, name):  # one of the host's own names: writing it would confuse adcli
            raise SandboxError(
                f"attribute '{name}' of '{t.__name__}' objects is used by adcli: "
                "choose another name"
            )
        obj.__dict__[name] = value  # the script's own name
        return
    readable = getattr(t, "__ad_attrs__", None)
    if _declares(t, "__ad_attrs__", name):
        # (`__ad_owner__`: the class PyTorch names, where its attribute lives elsewhere)
        owner = getattr(t, "__ad_owner__", t.__name__)
        raise AttributeError(f"attribute '{name}' of '{owner}' objects is not writable")
    if readable is not None or t in (int, float, str, bool, list, tuple, dict, type(None)):
        raise AttributeError(f"'{t.__name__}' object has no attribute '{name}'")
    raise SandboxError(f"cannot set attribute '{name}' of '{t.__name__}' objects in adcli scripts")


def delete_attribute(obj: Any, name: str) -> None:
    """``del obj.name``: only a script's own attribute of an ``__ad_open__`` object."""
    if name[:1] == "_":
        raise refuse_private(name)
    t = type(obj)
    if getattr(t, "__ad_open__", False) is True and not hasattr(t, name):
        try:
            del obj.__dict__[name]
        except KeyError:
            raise AttributeError(f"'{t.__name__}' object has no attribute '{name}'") from None
        return
    if _declares(t, "__ad_settable__", name):  # what a script may set, it may delete
        delattr(obj, name)
        return
    raise SandboxError(f"cannot delete attribute '{name}' in adcli scripts")


# ------------------------------------------------------------------ builtins

# Exception classes scripts can name in ``except`` and ``raise``.
EXCEPTIONS: dict[str, type[BaseException]] = {
    name: getattr(builtins, name)
    for name in (
        "Exception ArithmeticError AssertionError AttributeError ImportError IndexError"
        " KeyError LookupError ModuleNotFoundError NameError NotImplementedError"
        " OverflowError RuntimeError TypeError UnboundLocalError ValueError ZeroDivisionError"
    ).split()
}

_MISSING: Any = object()


def make_print(
    write: Callable[[str], object] | None = None, check: Callable[[object], None] | None = None
) -> Callable[..., None]:
    """A ``print(*values, sep=' ', end='\\n')`` writing through `write` (default: stdout),
    after `check` (a size check) of each value."""

    def print(
        *values: object, sep: str | None = " ", end: str | None = "\n", flush: bool = False
    ) -> None:  # noqa: A001
        if sep is None:
            sep = " "
        if end is None:
            end = "\n"
        if type(sep) is not str:
            raise TypeError(f"sep must be None or a string, not {type(sep).__name__}")
        if type(end) is not str:
            raise TypeError(f"end must be None or a string, not {type(end).__name__}")
        if check is not None:
            for v in values:
                check(v)
        text = sep.join(str(v) for v in values) + end
        if write is None:
            sys.stdout.write(text)
        else:
            write(text)

    return print


class _BuiltinType(type):
    """A Python type as scripts see it (`list`, `tuple`, `dict`, `set`, `frozenset`,
    `range`, `int`, `str`): calling it goes through a size-checked constructor, while
    ``isinstance``, ``type(x) is list`` and printing behave as with the real type."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.ad_make(*args, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(cls, name: str) -> Any:
        # the real type's public names exist (so the guard says they are refused)
        if name[:1] == "_":
            raise AttributeError(name)
        return getattr(cls.ad_type, name)  # type: ignore[attr-defined]

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls.ad_type)  # type: ignore[attr-defined]

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(getattr(sub, "ad_type", sub), cls.ad_type)  # type: ignore[attr-defined]

    def __repr__(cls) -> str:
        return f"<class '{cls.__name__}'>"


_BuiltinType.__name__ = "type"  # what messages call it: `type(1).mro` is on a 'type'


def _builtin_type(real: type, make: Callable[..., Any]) -> type:
    return _BuiltinType(
        real.__name__, (), {"ad_type": real, "ad_make": staticmethod(make), "__slots__": ()}
    )


def make_builtins(
    guards: Guards, write: Callable[[str], object] | None = None
) -> dict[str, object]:
    """A fresh table of the pure builtins, with `print` writing through `write`."""
    materialize = guards.materialize

    def list_(iterable: Iterable[Any] = ()) -> list:
        return materialize(iterable, "list")

    def tuple_(iterable: Iterable[Any] = ()) -> tuple:
        return tuple(materialize(iterable, "tuple"))

    def set_(iterable: Iterable[Any] = ()) -> set:
        return set(iterable if type(iterable) in (set, frozenset) else materialize(iterable, "set"))

    def frozenset_(iterable: Iterable[Any] = ()) -> frozenset:
        return frozenset(
            iterable if type(iterable) in (set, frozenset) else materialize(iterable, "set")
        )

    def dict_(*args: Any, **kwargs: Any) -> dict:
        if len(args) > 1:
            raise TypeError(f"dict expected at most 1 argument, got {len(args)}")
        if args:
            src = args[0]
            result = dict(src) if isinstance(src, dict) else dict(materialize(src, "dict"))
        else:
            result = {}
        result.update(kwargs)
        return result

    def sum_(iterable: Iterable[Any], /, start: Any = 0) -> Any:
        items = materialize(iterable)
        if type(start) not in (list, tuple):
            return sum(items, start)  # numbers (and tensors) never grow in length
        # sum(lists, []) is quadratic in Python; extend a copy instead, with
        # the same result and the same TypeError for mismatched types.
        total = list(start)
        for x in items:
            if type(x) is not type(start):
                return guards.add(start if not total else type(start)(total), x)
            guards.check_len(len(total) + len(x))
            total.extend(x)
        return type(start)(total)

    def _minmax(name: str, pick: Callable, args: tuple, key: Any, default: Any) -> Any:
        if not args:
            raise TypeError(f"{name} expected at least 1 argument, got 0")
        if len(args) == 1:
            items = materialize(args[0])
            if not items:
                if default is not _MISSING:
                    return default
                raise ValueError(f"{name}() arg is an empty sequence")
        else:
            if default is not _MISSING:
                raise TypeError(
                    f"Cannot specify a default for {name}() with multiple positional arguments"
                )
            items = list(args)
        if key is None:
            guards.check_compare(items, f"{name}()")
        return pick(items, key=key)

    def min_(*args: Any, key: Any = None, default: Any = _MISSING) -> Any:
        return _minmax("min", min, args, key, default)

    def max_(*args: Any, key: Any = None, default: Any = _MISSING) -> Any:
        return _minmax("max", max, args, key, default)

    def sorted_(iterable: Iterable[Any], /, *, key: Any = None, reverse: bool = False) -> list:
        items = materialize(iterable)
        if key is None:
            guards.check_compare(items, "sorted()")
        return sorted(items, key=key, reverse=reverse)

    def any_(iterable: Iterable[Any], /) -> bool:
        return any(_bounded(iterable))

    def all_(iterable: Iterable[Any], /) -> bool:
        return all(_bounded(iterable))

    def _bounded(iterable: Iterable[Any]) -> Iterable[Any]:
        # Lazy, so any()/all() stop early, yet never loop for ever in C.
        limit = guards.max_seq
        for i, x in enumerate(iterable):
            if i >= limit:
                raise guards.too_long(i + 1)
            yield x

    def str_(*args: Any, **kwargs: Any) -> str:
        if args:
            guards.check_repr(args[0])
        return str(*args, **kwargs)

    def repr_(obj: Any, /) -> str:
        guards.check_repr(obj)
        return repr(obj)

    def round_(number: Any, ndigits: Any = None) -> Any:
        if ndigits is None:
            return round(number)
        if type(number) is int and type(ndigits) is int and ndigits < 0:
            # round(5, -10**9) would compute 10**(10**9): answer directly.
            if -ndigits > number.bit_length() * 0.302 + 2:
                return 0
        return round(number, ndigits)

    def pow_(base: Any, exp: Any, mod: Any = None) -> Any:
        if mod is None:
            return guards.pow(base, exp)
        return pow(base, exp, mod)  # modular: never larger than mod

    def format_(value: Any, format_spec: str = "", /) -> str:
        return guards.format_value(value, format_spec)

    table: dict[str, object] = {
        "print": make_print(write, guards.check_repr),
        "len": len,
        "range": _builtin_type(range, guards.range_),
        "slice": slice,
        "float": float,
        "int": _builtin_type(int, guards.int_),
        "bool": bool,
        "str": _builtin_type(str, str_),
        "abs": abs,
        "round": round_,
        "min": min_,
        "max": max_,
        "sum": sum_,
        "list": _builtin_type(list, list_),
        "tuple": _builtin_type(tuple, tuple_),
        "dict": _builtin_type(dict, dict_),
        "set": _builtin_type(set, set_),
        "frozenset": _builtin_type(frozenset, frozenset_),
        "zip": zip,
        "map": map,
        "filter": filter,
        "enumerate": enumerate,
        "reversed": reversed,
        "sorted": sorted_,
        "any": any_,
        "all": all_,
        "repr": repr_,
        "pow": pow_,
        "divmod": divmod,
        "format": format_,
        "bin": bin,
        "oct": oct,
        "hex": hex,
        "ord": ord,
        "chr": chr,
        "hash": hash,
        "id": id,  # tutorials show that an in-place op keeps the object (`id(x)` before, after)
    }
    table.update(EXCEPTIONS)
    return _named(table)


def _named(table: dict[str, object]) -> dict[str, object]:
    """`table`, its functions named as scripts see them (``sum_`` shows as ``sum``)."""
    for name, fn in table.items():
        if callable(fn) and getattr(fn, "__name__", "").endswith("_"):
            fn.__name__ = fn.__qualname__ = name  # type: ignore[union-attr]
    return table


# --------------------------------------------------------------- classes

# The class attribute marking a script class (in its own __dict__ only).
SCRIPT = "ad$script"

# Dunder methods a script class may define (others are refused at compile time).
DEFINABLE_DUNDERS = frozenset(
    "__init__ __call__ __repr__ __str__ __len__ __getitem__ __setitem__ __delitem__"
    " __iter__ __next__ __contains__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__"
    " __bool__ __neg__ __pos__ __abs__ __invert__ __enter__ __exit__"
    " __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__"
    " __truediv__ __rtruediv__ __itruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__"
    " __pow__ __rpow__ __matmul__ __rmatmul__ __and__ __rand__ __or__ __ror__ __xor__"
    " __rxor__ __float__ __int__".split()
)


def script_name_ok(name: str) -> bool:
    """May a script use `name` on its own instances and classes? Public names, and
    single-underscore ones (micrograd's ``self._prev``): never dunders, and never
    ``_ad...``, the prefix under which subclassable host bases keep their state."""
    return name[:1] != "_" or (name[1:2] != "_" and name[:3] != "_ad")


def is_script_class(cls: object) -> bool:
    """Was `cls` made by a script's ``class`` statement?"""
    return isinstance(cls, type) and any(SCRIPT in k.__dict__ for k in cls.__mro__)


def _script_names(mro: Iterable[type], name: str) -> bool:
    """Is `name` defined by a script class of `mro` (or allowed by a host base)?"""
    for k in mro:
        d = k.__dict__
        if SCRIPT in d:
            if name in d:
                return True
        else:
            allowed = d.get("__ad_attrs__")
            if type(allowed) is frozenset and name in allowed:
                return True
    return False


def _super_ok(obj: super, name: str) -> bool:
    if name in DEFINABLE_DUNDERS:
        return True
    if name[:1] == "_":
        return False
    start = obj.__self_class__
    if start is None:
        return False
    mro = start.__mro__
    after = mro[mro.index(obj.__thisclass__) + 1 :] if obj.__thisclass__ in mro else mro
    return _script_names(after, name)


def make_attribute_guards(guards: Guards) -> tuple[Callable, Callable, Callable]:
    """The (get, set, delete) attribute functions compiled code calls."""

    def get(obj: Any, name: str) -> Any:
        t = type(obj)
        if t is Namespace:  # the common case first: torch.exp, F.relu...
            if name[:1] != "_" or name == "__version__":
                try:
                    return obj.__ad_members__[name]
                except KeyError:
                    pass
            return get_attribute(obj, name, guards)
        if t is property and name in ("getter", "setter", "deleter"):  # @p.setter
            return getattr(obj, name)
        if t is super:
            if _super_ok(obj, name):
                return getattr(obj, name)
            raise refuse_private(name) if name[:1] == "_" else _no_attr(obj, name)
        if isinstance(obj, type):
            if name == "__name__":  # a host class may answer with PyTorch's name for it
                shown = obj.__dict__.get("__ad_type_name__")
                return shown if isinstance(shown, str) else obj.__name__
            if script_name_ok(name) and is_script_class(obj) and _script_names(obj.__mro__, name):
                return getattr(obj, name)
            # a host class's own class-level API (nn.Embedding.from_pretrained)
            class_attrs = obj.__dict__.get("__ad_class_attrs__")
            if type(class_attrs) is frozenset and name in class_attrs:
                value = getattr(obj, name)
                if type(value) is types.FunctionType:  # a method read off its class
                    return _unbound_method(obj, name, value)
                return value
        elif script_name_ok(name) and _is_script_instance(t):
            d = getattr(obj, "__dict__", None)
            if (d is not None and name in d) or _script_names(t.__mro__, name):
                return getattr(obj, name)
            if name == "args" and isinstance(obj, BaseException) and _plain_args(obj):
                return obj.args
            if hasattr(obj, name):  # inherited from Python (an exception's with_traceback)
                raise SandboxError(
                    f"attribute '{name}' of '{t.__name__}' objects"
                    " is not available in adcli scripts"
                )
            raise _no_attr(obj, name)
        return get_attribute(obj, name, guards)

    def set_(obj: Any, name: str, value: Any) -> None:
        if script_name_ok(name) and (
            _is_script_instance(type(obj)) or (isinstance(obj, type) and is_script_class(obj))
        ):
            setattr(obj, name, value)
            return
        set_attribute(obj, name, value)

    def delete(obj: Any, name: str) -> None:
        if script_name_ok(name) and _is_script_instance(type(obj)):
            delattr(obj, name)
            return
        delete_attribute(obj, name)

    return get, set_, delete


def _is_script_instance(t: type) -> bool:
    return SCRIPT in t.__dict__ or (t.__base__ is not object and is_script_class(t))


def _no_attr(obj: Any, name: str) -> AttributeError:
    return AttributeError(
        f"'{type(obj).__name__}' object has no attribute '{name}'", name=name, obj=obj
    )


def check_bases(*bases: Any) -> tuple:
    """A script class's bases, once each is allowed (see the module docstring)."""
    for b in bases:
        if not isinstance(b, type):
            raise TypeError("bases must be types")
        ok = (
            is_script_class(b)
            or (issubclass(b, BaseException) and b in EXCEPTIONS.values())
            or b.__dict__.get("__ad_subclass__") is True
        )
        if not ok:
            raise SandboxError(f"subclassing '{b.__name__}' is not available in adcli scripts")
    return bases


def mark_class(cls: type) -> type:
    """The decorator every script class gets last: marks it as a script class."""
    type.__setattr__(cls, SCRIPT, True)
    return cls


def make_script_builtins(guards: Guards) -> dict[str, object]:
    """The pure builtins plus the class builtins scripts see (no runtime helpers)."""
    table = make_builtins(guards)
    classes = (isinstance, issubclass, super, property, staticmethod, classmethod)
    table.update({f.__name__: f for f in classes + (next, iter, callable)})
    # type([]) is the script's `list`; type(an ndarray) a stand-in (TYPE_PROXIES)
    proxies = {t.ad_type: t for t in table.values() if type(t) is _BuiltinType}
    proxies[BigRange] = proxies[range]

    def type_(*args: Any) -> type:
        if len(args) != 1:
            raise TypeError("type() takes 1 argument in adcli scripts")
        cls = type(args[0])
        if issubclass(cls, type):  # `type` itself (or a metaclass) would make classes freely
            raise SandboxError("type() of a class is not available in adcli scripts")
        return proxies.get(cls) or TYPE_PROXIES.get(cls, cls)

    table["type"] = type_
    table.update(_attribute_builtins(guards))
    return _named(table)


def _attribute_builtins(guards: Guards) -> dict[str, Callable]:
    """getattr, setattr, hasattr and delattr, under the rules of ``obj.name``."""
    get, set_, delete = make_attribute_guards(guards)

    def name_of(name: Any) -> str:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")
        return name

    def arity(fn: str, args: tuple, n: int) -> None:
        if len(args) != n:
            raise TypeError(f"{fn} expected {n} arguments, got {len(args)}")

    def getattr_(*args: Any) -> Any:
        if not 2 <= len(args) <= 3:
            bound = "at least 2" if len(args) < 2 else "at most 3"
            raise TypeError(f"getattr expected {bound} arguments, got {len(args)}")
        try:
            return get(args[0], name_of(args[1]))
        except AttributeError:
            if len(args) == 3:
                return args[2]
            raise

    def setattr_(*args: Any) -> None:
        arity("setattr", args, 3)
        set_(args[0], name_of(args[1]), args[2])

    def hasattr_(*args: Any) -> bool:
        arity("hasattr", args, 2)
        try:
            get(args[0], name_of(args[1]))
        except AttributeError:
            return False
        return True

    def delattr_(*args: Any) -> None:
        arity("delattr", args, 2)
        delete(args[0], name_of(args[1]))

    return {"getattr": getattr_, "setattr": setattr_, "hasattr": hasattr_, "delattr": delattr_}


# Packages whose C code imports its own helpers lazily while a script's frame is the
# current one (NumPy's ndarray.sum, repr...): CPython then looks `__import__` up in
# the script's builtins.
_HOST_PACKAGES = frozenset({"numpy"})


def host_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    """The ``__import__`` in a script's builtins. Scripts cannot name it (the compiler
    renames every dunder identifier); it serves only the host packages' own imports."""
    if level == 0 and name.split(".")[0] in _HOST_PACKAGES:
        return __import__(name, globals, locals, fromlist, level)
    raise ImportError(f"import of '{name}' is not available in adcli scripts")


def make_operator_helpers(guards: Guards) -> dict[str, Callable]:
    """Hidden names for the operators the compiler size-checks ('ad$+', 'ad$+=' ...);
    the others run natively, or in place through `PLAIN_INPLACE`."""
    return {
        "ad$+": guards.add,
        "ad$*": guards.mul,
        "ad$**": guards.pow,
        "ad$%": guards.mod,
        "ad$+=": guards.iadd,
        "ad$*=": guards.imul,
        "ad$**=": guards.ipow,
        "ad$%=": guards.imod,
    }


def context_manager(obj: Any) -> Any:
    """``with obj``: host classes marked ``__ad_context__ = True`` and script classes."""
    t = type(obj)
    if not _is_script_instance(t) and getattr(t, "__ad_context__", False) is not True:
        raise TypeError(f"'{t.__name__}' object does not support the context manager protocol")
    return obj


def format_field(value: Any, conversion: str | None, spec: str, guards: Guards) -> str:
    """An f-string field with a format spec, after checking the spec (and, before a
    ``!r``/``!s`` conversion makes it, the length of the value's text)."""
    guards.check_repr(value)
    return guards.format_value(_conversion(value, conversion), spec)


def _conversion(value: Any, conversion: str | None) -> Any:
    """A format field's ``!r``/``!s``/``!a`` conversion."""
    if conversion is None:
        return value
    convert = {"r": repr, "s": str, "a": ascii}.get(conversion)
    if convert is None:
        raise ValueError(f"Unknown conversion specifier {conversion}")
    return convert(value)


# Operators compiled code may call directly (no size check needed).
PLAIN_INPLACE = {
    "+": operator.iadd,
    "*": operator.imul,
    "**": operator.ipow,
    "%": operator.imod,
    "-": operator.isub,
    "/": operator.itruediv,
    "//": operator.ifloordiv,
    "@": operator.imatmul,
    "&": operator.iand,
    "|": operator.ior,
    "^": operator.ixor,
}
