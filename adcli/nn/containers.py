"""Containers: Sequential, ModuleList and ModuleDict (children named "0", "1", ... or
by key), ParameterList and ParameterDict (parameters named the same way), printed as
PyTorch prints them."""

from __future__ import annotations

import collections
import collections.abc
import operator
from collections.abc import ItemsView, Iterable, Iterator, KeysView, ValuesView
from typing import Any

from ..autograd.tensor import Tensor
from .module import Module, _indent, attrs, typename
from .parameter import Parameter


def _index(idx: Any, size: int) -> int:
    """A list position from `idx` (negative from the end), or PyTorch's IndexError."""
    i = operator.index(idx)
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of range")
    return i % size


def _set_children(owner: Module, mods: list[Module]) -> None:
    """Make `mods` the children "0".."n-1" (after a deletion or insertion, as PyTorch
    renumbers)."""
    d = owner.__dict__
    for key in list(d["_modules"]):
        d.pop(key, None)
    d["_modules"] = {}
    for i, m in enumerate(mods):
        d["_modules"][str(i)] = m
        d[str(i)] = m


class Sequential(Module):
    """Calls its modules one after another, each on the previous one's output."""

    __ad_attrs__ = attrs("append", "extend", "insert", "pop")

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def _items(self) -> list[tuple[str, Module]]:
        return list(self.__dict__["_modules"].items())

    def __getitem__(self, idx: Any) -> Any:
        items = self._items()
        if isinstance(idx, slice):
            return type(self)(collections.OrderedDict(items[idx]))
        return items[_index(idx, len(items))][1]

    def __setitem__(self, idx: Any, module: Module) -> None:
        items = self._items()
        key = items[_index(idx, len(items))][0]
        setattr(self, key, module)

    def __delitem__(self, idx: Any) -> None:
        items = self._items()
        if isinstance(idx, slice):
            doomed = [k for k, _ in items[idx]]
        else:
            doomed = [items[_index(idx, len(items))][0]]
        for key in doomed:
            delattr(self, key)
        _set_children(self, list(self.__dict__["_modules"].values()))

    def __len__(self) -> int:
        return len(self.__dict__["_modules"])

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self.__dict__["_modules"].values()))

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append every module of `sequential`; returns self."""
        for layer in list(sequential):
            self.append(layer)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put `module` at position `index`; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self.__dict__["_modules"].values())
        mods.insert(index, module)
        _set_children(self, mods)
        return self

    def pop(self, key: Any) -> Module:
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ..."""

    __ad_attrs__ = attrs("append", "extend", "insert", "pop")

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _values(self) -> list[Module]:
        return list(self.__dict__["_modules"].values())

    def __getitem__(self, idx: Any) -> Any:
        mods = self._values()
        if isinstance(idx, slice):
            return type(self)(mods[idx])
        return mods[_index(idx, len(mods))]

    def __setitem__(self, idx: Any, module: Module) -> None:
        i = _index(idx, len(self))
        setattr(self, str(i), module)

    def __delitem__(self, idx: Any) -> None:
        keys = list(self.__dict__["_modules"])
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]
        for key in doomed:
            delattr(self, key)
        _set_children(self, self._values())

    def __len__(self) -> int:
        return len(self.__dict__["_modules"])

    def __iter__(self) -> Iterator[Module]:
        return iter(self._values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(self._values() + list(other))

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append every module; returns self."""
        if isinstance(modules, (str, bytes)) or not hasattr(modules, "__iter__"):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for m in list(modules):
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put `module` before position `index`."""
        mods = self._values()
        mods.insert(index, module)
        _set_children(self, mods)

    def pop(self, key: Any) -> Module:
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        # runs of identical modules print once, as "(i-j): n x Module(...)"
        runs: list[list[Any]] = []
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, r in runs:
            head = f"({start})" if start == end else f"({start}-{end}): {end - start + 1} x"
            text = f"{head}: {r}" if start == end else f"{head} {r}"
            lines.append(_indent(text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, registered as children under their keys."""

    __ad_attrs__ = attrs("keys", "values", "items", "update", "pop", "clear")

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self.__dict__["_modules"][key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self.__dict__["_modules"])

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.__dict__["_modules"]))

    def __contains__(self, key: str) -> bool:
        return key in self.__dict__["_modules"]

    def keys(self) -> KeysView[str]:
        """The keys, in insertion order (a view, printed `dict_keys([...])` as in torch)."""
        return self.__dict__["_modules"].keys()

    def values(self) -> ValuesView[Module]:
        """The modules, in insertion order (a view)."""
        return self.__dict__["_modules"].values()

    def items(self) -> ItemsView[str, Module]:
        """(key, module) pairs, in insertion order (a view)."""
        return self.__dict__["_modules"].items()

    def update(self, modules: Any) -> None:
        """Add the (key, module) pairs of a dict or an iterable of pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, m in list(pairs):
            self[key] = m

    def pop(self, key: str) -> Module:
        """Remove and return the module under `key`."""
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        """Remove every module."""
        for key in list(self.keys()):
            del self[key]


def _as_parameter(value: Any) -> Any:
    """A tensor that is not a Parameter becomes one (requires_grad=True), as PyTorch's
    parameter containers convert it; anything else is kept as it is."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _entry_line(key: Any, value: Any, dtype_text: str) -> str:
    """One line of a parameter container's printed form."""
    if isinstance(value, Tensor):
        size = "x".join(str(n) for n in value.shape)
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{dtype_text} of size {size}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


def _entry(owner: Module, name: str) -> Any:
    """The entry stored under attribute `name`, or PyTorch's Module.__getattr__ error."""
    d = owner.__dict__
    if name in d:
        return d[name]
    raise AttributeError(
        f"'{type(owner).__name__}' object has no attribute '{name}'", name=name, obj=owner
    )


class ParameterList(Module):
    """A list of parameters (or other values), stored as attributes "0", "1", ...: the
    tensors among them are registered parameters, plain tensors made Parameters."""

    __ad_attrs__ = attrs("append", "extend")

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self.__dict__["_size"] = 0
        if values is not None:
            self += values

    def _abs_index(self, idx: Any) -> str:
        return str(_index(idx, len(self)))

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return _entry(self, self._abs_index(idx))

    def __setitem__(self, idx: Any, value: Any) -> None:
        name = self._abs_index(idx)
        setattr(self, name, _as_parameter(value))

    def __len__(self) -> int:
        return self.__dict__["_size"]

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add `value` at the end (a plain tensor as a Parameter); returns self."""
        i = len(self)
        self.__dict__["_size"] = i + 1
        self[i] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append every value of an iterable (not a tensor); returns self."""
        if not isinstance(values, collections.abc.Iterable) or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(
            _entry_line(i, v, str(v.dtype) if isinstance(v, Tensor) else "")
            for i, v in enumerate(self)
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (or other values) under string keys, stored as
    attributes of those names: the tensors are registered parameters, plain tensors
    made Parameters."""

    __ad_attrs__ = attrs(
        *"keys values items update pop popitem get clear copy setdefault fromkeys".split()
    )

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self.__dict__["_keys"] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need "
                "non-string keys."
            )
        return key

    def __getitem__(self, key: Any) -> Any:
        return _entry(self, self._key_to_attr(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        # as PyTorch, the key is listed before it is checked (a refused key stays listed)
        self.__dict__["_keys"][key] = None
        name = self._key_to_attr(key)
        value = _as_parameter(value)
        if (
            isinstance(value, Parameter)
            and hasattr(type(self), name)
            and name not in self.__dict__["_parameters"]
        ):
            raise KeyError(f"attribute '{name}' already exists")
        setattr(self, name, value)

    def __delitem__(self, key: Any) -> None:
        del self.__dict__["_keys"][key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self.__dict__["_keys"])

    def __iter__(self) -> Iterator[Any]:
        return iter(self.__dict__["_keys"])

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.__dict__["_keys"])

    def __contains__(self, key: Any) -> bool:
        return key in self.__dict__["_keys"]

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same entries."""
        return ParameterDict(collections.OrderedDict((k, self[k]) for k in self))

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value under `key`, after storing `default` there if it was missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self.__dict__["_keys"]):
            del self[key]

    def pop(self, key: str) -> Any:
        """Remove and return the value under `key`."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted (key, value) pair."""
        keys = self.__dict__["_keys"]
        k, _ = keys.popitem()
        keys[k] = None
        v = self[k]
        del self[k]
        return k, v

    def get(self, key: str, default: Any = None) -> Any:
        """The value under `key`, or `default`."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict with `default` under every key of `keys`."""
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Any:
        """The keys, in insertion order (a dict_keys view, as PyTorch's)."""
        return self.__dict__["_keys"].keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """(key, value) pairs, in insertion order (a generator, as PyTorch's)."""
        return ((k, self[k]) for k in self.__dict__["_keys"])

    def values(self) -> Iterator[Any]:
        """The values, in insertion order (a generator, as PyTorch's)."""
        return (self[k] for k in self.__dict__["_keys"])

    def update(self, parameters: Any) -> None:
        """Add the pairs of an OrderedDict or ParameterDict (in order), of a dict (in key
        order, as PyTorch sorts them) or of an iterable of pairs."""
        if not isinstance(parameters, collections.abc.Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value "
                "pairs, but got " + type(parameters).__name__
            )
        if isinstance(parameters, (collections.OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, collections.abc.Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, collections.abc.Iterable):
                    raise TypeError(
                        f"ParameterDict update sequence element #{j} should be Iterable; "
                        f"is{type(p).__name__}"
                    )
                if len(p) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} has length {len(p)}; "
                        "2 is required"
                    )
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        return "\n".join(
            _entry_line(k, v, typename(v) if isinstance(v, Tensor) else "") for k, v in self.items()
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
