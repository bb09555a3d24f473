#!/usr/bin/env python3
"""CPU time of each phase of `adcli run` on the 3-line start-up script, in one process.

    python benchmarks/startup_phases.py

Run it from a fresh interpreter (it measures imports). Bytecode caching follows
the environment: with PYTHONDONTWRITEBYTECODE=1 adcli's modules are compiled
from source, as `run.py`'s "startup, no .pyc" row shows; to see an installed
adcli's numbers, run it twice with `env -u PYTHONDONTWRITEBYTECODE
PYTHONPYCACHEPREFIX=/some/private/dir`.
"""

from __future__ import annotations

import time

T0 = time.process_time()
marks: list[tuple[str, float]] = []


def mark(name: str) -> None:
    marks.append((name, time.process_time()))


import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
mark("python start-up leftovers")

import numpy  # noqa: E402, F401

mark("import numpy")
import lark  # noqa: E402, F401

mark("import lark")
try:
    import typer  # noqa: F401

    mark("import typer")
except ImportError:  # pragma: no cover
    pass
import adcli.cli  # noqa: E402, F401

mark("import adcli.cli (the rest of it)")
import adcli.autograd.tensor  # noqa: E402, F401

mark("import adcli.autograd (tensor, ops, functions, ...)")
import adcli.lang.evaluator  # noqa: E402, F401

mark("import adcli.lang (evaluator, parser, sandbox, ...)")
import adcli.core.runner  # noqa: E402, F401
import adcli.core.session  # noqa: E402, F401

mark("import adcli.core.session, runner, torchapi, the rest")
from adcli.lang import parser  # noqa: E402

parser.get_lark()
mark("get_lark()")
import io  # noqa: E402

from adcli.core.session import Hooks, Output, Session, SessionOptions  # noqa: E402
from adcli.lang.source import Source  # noqa: E402

buf = io.StringIO()
session = Session(Output(buf.write, buf.write), Hooks(), SessionOptions())
mark("Session()")
text = (ROOT / "benchmarks" / "workloads" / "startup.ad").read_text(encoding="utf-8")
module = parser.parse(Source("startup.ad", text))
mark("parse the script (first parse)")
session.interp.run(module)
session.close()
mark("run it")

prev = T0
for name, t in marks:
    print(f"{(t - prev) * 1e3:7.1f} ms  {name}")
    prev = t
print(f"{(prev - T0) * 1e3:7.1f} ms  total (after the interpreter's own start)")
