"""Whole scripts, written the way tutorials write them, run by adcli and by PyTorch.

Each `scripts/*.ad` file is a small tutorial-style program (it starts with
`import torch` and uses only the subset of SPEC §1); the tour in `samples/` is
checked the same way. Each script is run twice:

(a) by adcli, in this process, through `adcli.core.runner.run_text` in `--json` mode;
(b) by Python with the real torch: the same text `exec`uted in a fresh namespace
    with stdout captured.

and the two runs must agree on:

- stdout, exactly (memory addresses `0x7f...` normalised);
- every global variable at the end: tensors by shape, dtype, values (rtol 1e-5),
  requires_grad, is_leaf, grad_fn name and .grad; numbers, strings, bools and
  None by value; lists and tuples element by element; other objects by kind
  (module, function, optimizer, dtype, grad_fn);
- for a script that raises: the exception's kind and its message, adcli's
  `error.kind` / `error.message` against torch's `type(exc).__name__` / `str(exc)`.

A case that exposes an adcli bug not fixed yet is listed in `XFAIL` with the
reason; it must fail (strict), so a fix is noticed and the entry removed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_threads_as_adcli")]

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"
CASES = sorted(SCRIPTS_DIR.glob("*.ad"))
#: the tour in samples/ must stay runnable as Python too, with the same results
SCRIPTS = CASES + sorted(SAMPLES_DIR.glob("*.ad"))

#: case file stem -> why it is expected to fail (adcli bugs not fixed yet).
XFAIL: dict[str, str] = {}

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")

RTOL = 1e-5
ATOL = 1e-6


# ---------------------------------------------------------------- running adcli


def run_adcli(text: str, name: str) -> dict[str, Any]:
    """adcli's JSON object for `text` (SPEC §5)."""
    from adcli.core.options import RunOptions
    from adcli.core.runner import run_text

    buf = io.StringIO()
    err = io.StringIO()
    streams = types.SimpleNamespace(out=buf, err=err)
    code = run_text(text, name, RunOptions(json=True, color=False, width=100), streams)
    out = buf.getvalue()
    try:
        obj = json.loads(out)
    except json.JSONDecodeError:  # pragma: no cover - shows what went wrong
        pytest.fail(f"adcli wrote no JSON (exit {code}):\n{out}\n{err.getvalue()}")
    obj["exit"] = code
    return obj


# ---------------------------------------------------------------- running torch


def _torch_value(v: Any, depth: int = 0) -> Any:
    """A Python/torch value in the shape adcli's JSON gives it."""
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, torch.Tensor):
        g = v.grad if v.is_leaf or v.retains_grad else None
        return {
            "type": "tensor",
            "shape": list(v.shape),
            "dtype": str(v.dtype).removeprefix("torch."),
            "value": v.data.tolist(),  # .data: detach() refuses some modified views
            "requires_grad": v.requires_grad,
            "is_leaf": v.is_leaf,
            "grad_fn": type(v.grad_fn).__name__ if v.grad_fn is not None else None,
            "grad": g.data.tolist() if g is not None else None,
        }
    if isinstance(v, (list, tuple)) and depth < 64:
        return [_torch_value(x, depth + 1) for x in v]
    if type(v).__name__ == "ndarray":  # NumPy arrays: adcli's JSON gives their values
        return v.tolist()
    if isinstance(v, torch.dtype):
        return {"type": "dtype"}
    if isinstance(v, types.ModuleType):
        return {"type": "module"}
    if isinstance(v, torch.optim.Optimizer):
        return {"type": "optimizer"}
    if isinstance(v, torch.nn.Module):
        return {"type": "nn_module"}
    if isinstance(v, type):  # a class (an autograd.Function has next_functions too)
        return {"type": "function"}
    if type(v).__name__.endswith("Backward0") or hasattr(v, "next_functions"):
        return {"type": "grad_fn"}
    if callable(v):
        return {"type": "function"}
    return {"type": type(v).__name__.lower()}


def run_torch(text: str, name: str) -> dict[str, Any]:
    """The same fields as adcli's JSON, from running `text` as Python with torch."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    out = io.StringIO()
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(text, name, "exec"), namespace)
            except Exception as e:  # the script's own error
                error = {"kind": type(e).__name__, "message": str(e)}
    torch.set_grad_enabled(True)  # a failing script must not leave grad mode off
    variables = {k: _torch_value(v) for k, v in namespace.items() if not k.startswith("__")}
    return {"ok": error is None, "stdout": out.getvalue(), "variables": variables, "error": error}


# ---------------------------------------------------------------- comparing


def _num_close(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):  # "nan", "inf", "-inf"
        fa = float(a) if isinstance(a, str) else a
        fb = float(b) if isinstance(b, str) else b
        if math.isnan(fa) and math.isnan(fb):
            return True
        return fa == fb
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(b)


def _nested_close(a: Any, b: Any, path: str, problems: list[str]) -> None:
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            problems.append(f"{path}: length {len(a)} != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _nested_close(x, y, f"{path}[{i}]", problems)
        return
    if isinstance(a, list) or isinstance(b, list) or a is None or b is None:
        if a != b:
            problems.append(f"{path}: adcli {a!r} != torch {b!r}")
        return
    if not _num_close(a, b):
        problems.append(f"{path}: adcli {a!r} != torch {b!r}")


def compare_values(a: Any, t: Any, path: str, problems: list[str]) -> None:
    """Compare adcli's JSON value `a` with torch's `t` (converted by `_torch_value`)."""
    if isinstance(t, dict) and t.get("type") == "tensor":
        if not (isinstance(a, dict) and a.get("type") == "tensor"):
            problems.append(f"{path}: adcli {a!r} is not a tensor")
            return
        for key in ("shape", "dtype", "requires_grad", "is_leaf", "grad_fn"):
            if a[key] != t[key]:
                problems.append(f"{path}.{key}: adcli {a[key]!r} != torch {t[key]!r}")
        _nested_close(a["value"], t["value"], f"{path}.value", problems)
        if (a["grad"] is None) != (t["grad"] is None):
            problems.append(f"{path}.grad: adcli {a['grad']!r} != torch {t['grad']!r}")
        elif a["grad"] is not None:
            _nested_close(a["grad"], t["grad"], f"{path}.grad", problems)
        return
    if isinstance(t, dict):  # an object JSON cannot hold
        if not isinstance(a, dict) or "type" not in a:
            problems.append(f"{path}: adcli {a!r} != torch object {t['type']}")
        elif t["type"] in ("module", "function", "optimizer", "dtype", "grad_fn", "nn_module"):
            if a["type"] != t["type"]:
                problems.append(f"{path}: adcli kind {a['type']!r} != torch {t['type']!r}")
        return
    if isinstance(t, list):
        if not isinstance(a, list) or len(a) != len(t):
            problems.append(f"{path}: adcli {a!r} != torch {t!r}")
            return
        for i, (x, y) in enumerate(zip(a, t, strict=True)):
            compare_values(x, y, f"{path}[{i}]", problems)
        return
    if isinstance(t, float) and isinstance(a, (int, float, str)) and not isinstance(a, bool):
        if not _num_close(a, t):
            problems.append(f"{path}: adcli {a!r} != torch {t!r}")
        return
    if type(a) is not type(t) or a != t:
        problems.append(f"{path}: adcli {a!r} != torch {t!r}")


def _normalise(text: str) -> str:
    return _ADDRESS.sub("0x...", text)


def compare_runs(ad: dict[str, Any], pt: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if _normalise(ad["stdout"]) != _normalise(pt["stdout"]):
        import difflib

        diff = "".join(
            difflib.unified_diff(
                _normalise(pt["stdout"]).splitlines(True),
                _normalise(ad["stdout"]).splitlines(True),
                "torch stdout",
                "adcli stdout",
            )
        )
        problems.append("stdout differs:\n" + diff)
    if pt["error"] is None and ad["error"] is not None:
        problems.append(f"adcli raised, torch did not: {ad['error']}")
    elif pt["error"] is not None and ad["error"] is None:
        problems.append(f"torch raised, adcli did not: {pt['error']}")
    elif pt["error"] is not None:
        if ad["error"]["kind"] != pt["error"]["kind"]:
            problems.append(
                f"error kind: adcli {ad['error']['kind']} != torch {pt['error']['kind']}"
            )
        if ad["error"]["message"] != pt["error"]["message"]:
            problems.append(
                f"error message:\n  adcli: {ad['error']['message']}"
                f"\n  torch: {pt['error']['message']}"
            )
    if ad["exit"] != (0 if pt["error"] is None else 1):
        problems.append(f"adcli exit status {ad['exit']}")
    av, tv = ad["variables"], pt["variables"]
    if set(av) != set(tv):
        problems.append(
            f"global names: adcli only {sorted(set(av) - set(tv))}, "
            f"torch only {sorted(set(tv) - set(av))}"
        )
    for name in sorted(set(av) & set(tv)):
        compare_values(av[name], tv[name], name, problems)
    return problems


# ---------------------------------------------------------------- the test


def _param(path: Path) -> Any:
    reason = XFAIL.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    ident = path.stem if path.parent == SCRIPTS_DIR else f"samples/{path.stem}"
    return pytest.param(path, id=ident, marks=marks)


def test_enough_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("script", [_param(p) for p in SCRIPTS])
def test_script_matches_torch(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert text.startswith("import torch"), "a case must run as Python after `import torch`"
    pt = run_torch(text, str(script))
    ad = run_adcli(text, script.name)
    problems = compare_runs(ad, pt)
    assert not problems, f"{script.name}: adcli and torch disagree:\n" + "\n".join(problems)
