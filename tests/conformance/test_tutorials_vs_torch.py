"""Tutorial-shaped programs, run by adcli and by PyTorch: the output must be the same.

`tutorials/*.ad` are our own programs in the shape of what a learner first meets
(issue 12, "Done when"): the steps of PyTorch's "Learning PyTorch with Examples"
(a cubic fitted to sin with tensors and hand-written gradients, with autograd,
with a custom autograd.Function, with nn, with optimizers, as an nn.Module, and a
model whose graph changes each call), a first look at autograd, and the torch
side of a scalar-engine test. `poly_grad_float_error.ad` fails in PyTorch itself
(it assigns a float to `.grad`): adcli must fail the same way.

Each program runs twice, in this process: by PyTorch (`exec` with stdout captured)
and by adcli (`run_text`, JSON mode). Their printed output must be identical
(memory addresses `0x...` normalised), and so must a raised error's kind and message.

Most of these programs draw their weights unseeded. A fresh PyTorch process seeds
itself at random, adcli with PyTorch's `default_rng_seed_val`; so PyTorch is run
after `torch.manual_seed(67280421310721)`, and both runs' Python `random` (the
dynamic net's) start from the same seed.

With MKL installed (the `mkl` extra, adcli/autograd/mkl.py), every program prints
exactly what PyTorch prints. Without it, those whose float32 sin, matrix products
or float64 tanh PyTorch computes with MKL are strict xfails naming the kernel.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_threads_as_mkl")]

TUTORIALS_DIR = Path(__file__).resolve().parent / "tutorials"
PROGRAMS = sorted(TUTORIALS_DIR.glob("*.ad"))

#: adcli's seed of a generator never seeded (adcli/autograd/random.py DEFAULT_SEED)
TORCH_SEED = 67280421310721
PY_SEED = 12345

_MKL_SIN = (
    "float32 torch.sin of the 2000-point linspace: PyTorch computes it with MKL's "
    "vmsSin (VML_HA), which differs from sin rounded once in 92 of the 2000 elements"
)
_MKL_GEMM = "nn.Linear(3, 1) on a (2000, 3) input and its gradients: MKL's sgemm; and " + _MKL_SIN
#: program -> why its output differs from PyTorch's when MKL is not installed
XFAIL_WITHOUT_MKL: dict[str, str] = {
    "poly_tensor": _MKL_SIN,
    "poly_autograd": _MKL_SIN,
    "poly_custom_function": _MKL_SIN,
    "poly_module": _MKL_SIN,
    "poly_tensor_matmul": (
        "torch.matmul of a (2000, 4) matrix and a 4-vector, and of its transpose and a "
        "2000-vector: MKL's sgemv; and " + _MKL_SIN
    ),
    "poly_nn": _MKL_GEMM,
    "poly_optim": _MKL_GEMM,
    "micrograd_style": (
        "float64 torch.tanh(0.5): PyTorch's kernel gives 0.4621171572600098, NumPy's "
        "0.46211715726000974"
    ),
}

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class _SeededRandom(random.Random):
    """adcli's per-run `random` module, started from PY_SEED instead of the OS."""

    def __init__(self) -> None:
        super().__init__(PY_SEED)


def run_adcli(text: str, name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    from adcli.core.options import RunOptions
    from adcli.core.runner import run_text
    from adcli.scriptlib import pymodules

    monkeypatch.setattr(pymodules, "_random", types.SimpleNamespace(Random=_SeededRandom))
    out, err = io.StringIO(), io.StringIO()
    streams = types.SimpleNamespace(out=out, err=err)
    code = run_text(text, name, RunOptions(json=True, color=False, width=100), streams)
    try:
        obj = json.loads(out.getvalue())
    except json.JSONDecodeError:  # pragma: no cover - shows what went wrong
        pytest.fail(f"adcli wrote no JSON (exit {code}):\n{out.getvalue()}\n{err.getvalue()}")
    error = obj.get("error")
    return {
        "stdout": obj["stdout"],
        "error": None if not error else {"kind": error["kind"], "message": error["message"]},
    }


def run_torch(text: str, name: str) -> dict[str, Any]:
    out = io.StringIO()
    error = None
    state = random.getstate()
    torch.manual_seed(TORCH_SEED)
    random.seed(PY_SEED)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(out):
                try:
                    exec(compile(text, name, "exec"), {"__name__": "__main__"})
                except Exception as e:  # the program's own error
                    error = {"kind": type(e).__name__, "message": str(e)}
    finally:
        random.setstate(state)
        torch.set_grad_enabled(True)
        torch.set_default_device(None)
    return {"stdout": out.getvalue(), "error": error}


def _param(path: Path) -> Any:
    from adcli.autograd import mkl

    reason = None if mkl.available() else XFAIL_WITHOUT_MKL.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


def test_every_tutorial_is_here() -> None:
    names = {p.stem for p in PROGRAMS}
    assert {
        "poly_tensor",
        "poly_autograd",
        "poly_custom_function",
        "poly_nn",
        "poly_optim",
        "poly_module",
        "dynamic_net",
        "blitz_style",
        "micrograd_style",
    } <= names
    assert set(XFAIL_WITHOUT_MKL) <= names


@pytest.mark.parametrize("program", [_param(p) for p in PROGRAMS])
def test_tutorial_prints_what_torch_prints(program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = program.read_text(encoding="utf-8")
    pt = run_torch(text, str(program))
    ad = run_adcli(text, program.name, monkeypatch)
    problems = []
    a_out, t_out = _ADDRESS.sub("0x...", ad["stdout"]), _ADDRESS.sub("0x...", pt["stdout"])
    if a_out != t_out:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                t_out.splitlines(True), a_out.splitlines(True), "torch", "adcli", n=1
            )
        )
        problems.append("stdout differs:\n" + diff)
    if ad["error"] != pt["error"]:
        problems.append(f"error: adcli {ad['error']} != torch {pt['error']}")
    assert not problems, f"{program.name}: adcli and torch disagree:\n" + "\n".join(problems)
