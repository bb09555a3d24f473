"""What the host (the torch-like library and the CLI) gives the evaluator.

The evaluator is generic: it knows nothing about tensors. A host supplies
names (`Host.globals`), module lookup (`Host.import_module`), optional hooks,
and `Limits`. Host classes opt in to script access with three class
attributes (everything else is refused by the sandbox):

- ``__ad_attrs__``: frozenset of attribute names scripts may read
  (methods included: ``frozenset({"grad", "backward", "shape", ...})``);
- ``__ad_settable__``: frozenset of attribute names scripts may assign;
- ``__ad_context__ = True``: instances may be used in ``with``.

Modules are `Namespace` objects: read-only name -> value tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from adcli.lang.source import Span

__all__ = ["Host", "Library", "Limits", "Namespace", "namespace_importer"]


class Namespace:
    """A read-only module-like object: ``torch``, ``torch.nn.functional``...

    Scripts read its members as attributes (``F.relu``); nothing can be
    assigned. Python code may also use ``ns.member``, ``ns.__ad_members__``
    (a read-only mapping) and ``ns.__ad_name__``.
    """

    __slots__ = ("__ad_name__", "__ad_members__")

    def __init__(self, name: str, members: Mapping[str, object]) -> None:
        object.__setattr__(self, "__ad_name__", name)
        object.__setattr__(self, "__ad_members__", MappingProxyType(dict(members)))

    def __getattr__(self, name: str) -> object:
        try:
            return self.__ad_members__[name]
        except KeyError:
            raise AttributeError(missing_member(self.__ad_name__, name)) from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to attribute '{name}' of module '{self.__ad_name__}'")

    def __dir__(self) -> list[str]:
        return sorted(self.__ad_members__)

    def __iter__(self) -> Iterator[str]:
        raise TypeError("'module' object is not iterable")

    def __repr__(self) -> str:
        return f"<module '{self.__ad_name__}'>"


#: top-level module -> why adcli lacks its members (filled by the host: a script may
#: `import os` that it never uses, and hears why only when it reaches for a member).
MODULE_HINTS: dict[str, str] = {}


class Library(NamedTuple):
    """What the host knows of the library it stands in for, used only to word errors
    about the names it lacks: that library's public names by module ("torch.nn") and
    by host class (its tensor class), and what to use instead, by dotted name (a
    module's entry covers its members)."""

    modules: Mapping[str, frozenset[str]] = MappingProxyType({})
    classes: Mapping[type, frozenset[str]] = MappingProxyType({})
    hints: Mapping[str, str] = MappingProxyType({})


#: Gives the host's `Library`; the host sets it (the language knows no library), and
#: it is called only when an error needs it, so the tables load then.
library: Callable[[], Library] = Library


def library_hint(dotted: str) -> str | None:
    """What to use instead of `dotted`, from its own entry or the closest module's."""
    hints = library().hints
    parts = dotted.split(".")
    for i in range(len(parts), 1, -1):
        hint = hints.get(".".join(parts[:i]))
        if hint is not None:
            return hint
    return None


def missing_member(module: str, name: str) -> str:
    """The message for a name a module lacks: a name of the host's library says so."""
    hint = MODULE_HINTS.get(module.split(".")[0])
    if hint is not None:
        return f"adcli does not support {module}.{name}: {hint}"
    if name in library().modules.get(module, ()):
        hint = library_hint(f"{module}.{name}")
        return f"adcli does not support {module}.{name}" + (f": {hint}" if hint else " yet")
    return f"module '{module}' has no attribute '{name}'"


def missing_attribute(cls: type, name: str) -> str:
    """The message for an attribute a host object lacks: a name its library has says so."""
    for k in cls.__mro__:  # (a subclass, say a Parameter, is named by its library class)
        if name in library().classes.get(k, ()):
            return f"adcli does not support {k.__name__}.{name} yet"
    return f"'{cls.__name__}' object has no attribute '{name}'"


@dataclass(frozen=True)
class Limits:
    """Resource limits for one interpreter.

    max_steps: loop iterations, comprehension items and function calls
        (per `Interpreter.run`).
    max_depth: nested calls of script functions.
    max_sequence: longest list/tuple/str/dict a script may build by
        repetition, concatenation, list(...), str.join, formatting...
    max_int_bits: largest int a script may compute with ``*`` or ``**``.
    max_format_width: largest width/precision in a format spec.
    """

    max_steps: int = 10_000_000
    max_depth: int = 200
    max_sequence: int = 10_000_000
    max_int_bits: int = 100_000
    max_format_width: int = 10_000


ImportModule = Callable[[str], object]


@dataclass
class Host:
    """Everything the evaluator needs from its host.

    globals: the builtins layer: names every script sees without import
        (torch functions, ``print``, ``torch`` itself...). They are layered
        over adcli.lang.guard.make_script_builtins (unless `default_builtins` is False), and
        script assignments shadow them, as Python's builtins.
    import_module: called with the dotted name for ``import X`` / ``from X
        import a``; returns the module (normally a `Namespace`), and raises
        ImportError/ModuleNotFoundError (or returns None) for unknown ones.
        When None, modules are found among the `Namespace` values of
        `globals` (``import torch.nn`` walks ``torch`` -> ``nn``).
    on_assign(name, value, span): after each binding of a variable name
        (assignment, augmented assignment, for target, import, def, with/as,
        except/as); span is the binding statement's (the target's for loops).
    on_value(value, span): with the result of every call, binary, unary,
        comparison and subscript expression, and the expression's span.
    on_statement(span): before each statement runs (only compiled in when
        set before the run, as it costs a call per statement; the header line for
        compound statements).
    on_display(value): in interactive runs, each top-level expression
        statement's value that is not None (the REPL echo).
    value_types: when not None, on_value and on_assign are called only for
        values whose exact type is one of these (a tensor-labelling host
        passes its tensor class, so loops over floats never call it).
    """

    globals: Mapping[str, object] = field(default_factory=dict)
    import_module: ImportModule | None = None
    on_assign: Callable[[str, object, Span], None] | None = None
    on_value: Callable[[object, Span], None] | None = None
    on_statement: Callable[[Span], None] | None = None
    on_display: Callable[[object], None] | None = None
    default_builtins: bool = True
    value_types: tuple[type, ...] | None = None


def namespace_importer(modules: Mapping[str, object]) -> ImportModule:
    """An `import_module` that serves a fixed table {dotted name: module}."""

    def import_module(dotted: str) -> object:
        try:
            return modules[dotted]
        except KeyError:
            raise ModuleNotFoundError(f"No module named '{dotted}'") from None

    return import_module
