"""Containers: Sequential, ModuleList and ModuleDict (children named "0", "1", ... or
by key), printed as PyTorch prints them."""

from __future__ import annotations

import collections
import operator
from collections.abc import Iterable, Iterator
from typing import Any

from .module import Module, _indent, attrs


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

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self.__dict__["_modules"].keys())

    def values(self) -> list[Module]:
        """The modules, in insertion order."""
        return list(self.__dict__["_modules"].values())

    def items(self) -> list[tuple[str, Module]]:
        """(key, module) pairs, in insertion order."""
        return list(self.__dict__["_modules"].items())

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
        for key in self.keys():
            del self[key]
