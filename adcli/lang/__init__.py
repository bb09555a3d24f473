"""The .ad script language: grammar, AST, compiler to Python bytecode, guard.

Generic over the values it manipulates: it knows nothing about tensors. A
host (see `adcli.lang.host`) supplies names, modules, hooks and limits::

    from adcli.lang import Host, Interpreter, Limits, parse
    from adcli.lang.source import Source

    interp = Interpreter(Host(globals=names, import_module=find_module), Limits())
    interp.run(parse(Source("x.ad", text)))   # ScriptSyntaxError / ScriptRuntimeError

Names are imported lazily so that ``import adcli.lang`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["parse", "Interpreter", "Function", "Host", "Limits", "Namespace"]

_WHERE = {
    "parse": "adcli.lang.parser",
    "Interpreter": "adcli.lang.evaluator",
    "Function": "adcli.lang.evaluator",
    "Host": "adcli.lang.host",
    "Limits": "adcli.lang.host",
    "Namespace": "adcli.lang.host",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'adcli.lang' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(module), name)
