"""`dir(x)` and `help(x)` for the REPL: what a script may use, and a one-line doc.

`script_dir` lists the attribute names the guard lets a script read on a value
(adcli.lang.guard: `__ad_attrs__` of host classes, a module's members, the
whitelisted methods of lists/dicts/strings, what a script's own class defines),
found from the tables alone: no attribute is read, so no property runs and no
warning fires. `help_text` gives a name's call signature and the first line of
its docstring, for adcli's torch functions, classes and methods and for the
script's own functions and classes.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable, Mapping
from typing import Any

from adcli.lang import guard
from adcli.lang.host import Namespace

__all__ = ["help_text", "member_of", "qualified_name", "script_dir"]


#: adcli's builtins, which have no docstring of PyTorch's to show.
_BUILTIN_DOCS = {
    "print": "Write the values to the output, as Python's print does.",
    "show": "Print the node table of the graphs behind the tensors, now.",
    "graph": "Draw the graph behind a tensor as a tree.",
    "formula": "Print a tensor's formula in terms of the leaves.",
    "dir": "dir(x): the attributes a script may use on x; dir(): the session's names.",
    "help": "help(x) or help('torch.sum'): a short doc; help(): the REPL's commands.",
}


def _readable(name: str) -> bool:
    """Host names a script can read: public ones, and the `_saved_*` of autograd nodes."""
    return name[:1] != "_" or name.startswith("_saved_")


def _host_attrs(cls: type) -> set[str]:
    names = getattr(cls, "__ad_attrs__", None)
    return {n for n in names if _readable(n)} if type(names) is frozenset else set()


def _script_class_names(cls: type) -> set[str]:
    """Names a script class (and its host bases) lets a script read."""
    names: set[str] = set()
    for k in cls.__mro__:
        d = k.__dict__
        if guard.SCRIPT in d:
            names.update(n for n in d if guard.script_name_ok(n) and n != guard.SCRIPT)
        else:
            allowed = d.get("__ad_attrs__")
            if type(allowed) is frozenset:
                names.update(n for n in allowed if _readable(n))
    return names


def script_dir(obj: Any) -> list[str]:
    """The attribute names a script may read on `obj`, sorted as Python's dir() sorts."""
    t = type(obj)
    names: set[str] = set()
    if t is Namespace:
        names = {n for n in obj.__ad_members__ if n[:1] != "_"}
    elif isinstance(obj, type):
        if guard.is_script_class(obj):
            names = _script_class_names(obj)
        class_attrs = obj.__dict__.get("__ad_class_attrs__")
        if type(class_attrs) is frozenset:
            names.update(class_attrs)
    elif guard.SCRIPT in t.__dict__ or guard.is_script_class(t):
        names = _script_class_names(t)
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            names.update(n for n in d if isinstance(n, str) and guard.script_name_ok(n))
    else:
        names = _host_attrs(t)
        names.update(n for k, n in guard._PLAIN if k is t)
        if getattr(t, "__ad_open__", False) is True:
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict):
                names.update(n for n in d if isinstance(n, str) and n[:1] != "_")
    return sorted(n for n in names if not (n.startswith("__") and n.endswith("__")))


def member_of(obj: Any, name: str) -> tuple[Any] | None:
    """`obj.name` as help() documents it, without reading it: the class's function or
    property for a host value or class (so no property runs), the value itself for
    a script's own attribute; None when a script may not use the name on `obj`."""
    cls = obj if isinstance(obj, type) else type(obj)
    allowed = name in script_dir(obj) or (isinstance(obj, type) and name in _host_attrs(obj))
    if not allowed:
        return None
    try:
        return (inspect.getattr_static(cls, name),)
    except AttributeError:
        d = getattr(obj, "__dict__", None)  # a script instance's own attribute
        if isinstance(d, dict) and name in d:
            return (d[name],)
        return None


def qualified_name(obj: Any, modules: Mapping[str, Namespace]) -> str | None:
    """Where a script finds `obj`: `torch.sum`, `torch.nn.Linear`, `Tensor.backward`."""
    if isinstance(obj, Namespace):
        return obj.__ad_name__
    func = getattr(obj, "__func__", obj)  # a bound method: its function
    # the shortest path wins (torch.sum, not torch.functional.sum)
    for dotted in sorted(modules, key=lambda m: (m.count("."), m)):
        for name, value in modules[dotted].__ad_members__.items():
            if value is obj or value is func:
                return f"{dotted}.{name}"
    owner = getattr(obj, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        cls = owner if isinstance(owner, type) else type(owner)
        name = getattr(func, "__name__", None)
        if isinstance(name, str) and name in _host_attrs(cls):
            return f"{_type_name(cls)}.{name}"
    return None


def _type_name(cls: type) -> str:
    shown = cls.__dict__.get("__ad_type_name__")
    return shown if isinstance(shown, str) else cls.__name__


def _signature(obj: Any) -> str:
    """`(a, dim=None, keepdim=False)`: parameters without annotations, or `(...)`."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = []
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        params.append(p.replace(annotation=inspect.Parameter.empty))
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _first_line(obj: Any) -> str | None:
    doc = inspect.getdoc(obj)
    if not doc:
        return None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    end = first.find(". ")  # the first sentence is enough
    return first[: end + 1] if end >= 0 else first


def _lines(title: str, doc: str | None, extra: Iterable[str] = ()) -> str:
    out = [title]
    if doc:
        out.append(f"    {doc}")
    out.extend(f"    {e}" for e in extra)
    return "\n".join(out)


def help_text(obj: Any, modules: Mapping[str, Namespace], name: str | None = None) -> str:
    """A short doc of `obj`: its name and call signature, then its docstring's first
    paragraph; for a value, what it is and how to list what it offers."""
    from adcli.autograd.tensor import Tensor

    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        return _lines(f"{name or 'property'}: an attribute", _first_line(obj))
    shown = name or qualified_name(obj, modules)
    if isinstance(obj, Namespace):
        n = sum(1 for k in obj.__ad_members__ if k[:1] != "_")
        return _lines(
            f"module {obj.__ad_name__}", None, [f"{n} names; dir({shown or 'it'}) lists them"]
        )
    if isinstance(obj, Tensor):
        what = f"a tensor of shape {list(obj.shape)}, dtype {obj.dtype}"
        return _lines(
            f"Tensor: {what}", _first_line(Tensor), ["dir(it) lists its attributes and methods"]
        )
    if isinstance(obj, type):
        title = f"class {shown or _type_name(obj)}{_signature(obj)}"
        return _lines(title, _first_line(obj))
    if type(obj).__name__ == "Builtin":  # adcli's own: print, show, graph, formula, dir, help
        name = str(getattr(obj, "__name__", "builtin"))
        return _lines(f"{name}(...)", _BUILTIN_DOCS.get(name, "a builtin of adcli scripts"))
    if callable(obj):
        label = shown or getattr(obj, "__name__", None) or type(obj).__name__
        return _lines(f"{label}{_signature(obj)}", _first_line(obj))
    kind = type(obj).__name__
    if isinstance(obj, (bool, int, float, str, list, tuple, dict, set, type(None))):
        a = "an" if kind[:1] in "aeiou" else "a"
        return _lines(f"a Python {kind}", None, [f"dir() of {a} {kind} lists its methods"])
    return _lines(f"{shown or kind}: {_type_name(type(obj))} object", _first_line(type(obj)))
