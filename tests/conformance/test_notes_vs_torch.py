"""The learner notes (adcli.core.hints) add `note:` lines after PyTorch's sentence; the
sentence itself must stay torch's, word for word, and the "Did you mean" part must
be what Python 3.12 would say. Each script runs through adcli and through torch."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adcli.core.options import RunOptions  # noqa: E402
from adcli.core.runner import run_text  # noqa: E402
from adcli.lang.suggest import suggest  # noqa: E402

pytestmark = pytest.mark.torch

NOTES = Path(__file__).resolve().parents[1] / "golden" / "notes"
# scripts whose error is PyTorch's (not Python's own NameError/AttributeError suggestion)
TORCH_ERRORS = [
    "no_requires_grad",
    "detached",
    "inside_no_grad",
    "rebound_in_no_grad",
    "matmul_shapes",
    "linear_shapes",
    "sequential_shapes",
    "optimizer_nonleaf",
    "misspelled_keyword",
    "misspelled_backward_keyword",
]


def _adcli(text: str) -> str:
    from adcli.core.runner import _Streams

    buf = io.StringIO()
    run_text(text, "x.ad", RunOptions(quiet=True, in_process=True), _Streams(buf, buf))
    return buf.getvalue()


def _torch_error(text: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", text], capture_output=True, text=True, timeout=120, check=False
    )
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("name", TORCH_ERRORS)
def test_sentence_is_torchs_and_a_note_follows(name: str) -> None:
    text = (NOTES / f"{name}.ad").read_text()
    out = _adcli(text)
    lines = out.splitlines()
    head = next(ln for ln in lines if ": error: " in ln)
    assert head.split(": error: ", 1)[1] == _torch_error(text)
    assert any(ln.startswith("note: ") for ln in lines[lines.index(head) :])


def test_nonleaf_grad_warning_is_torchs_then_a_note() -> None:
    text = (NOTES / "nonleaf_grad_read.ad").read_text()
    proc = subprocess.run(
        [sys.executable, "-c", text], capture_output=True, text=True, timeout=120, check=False
    )
    torch_warning = next(ln for ln in proc.stderr.splitlines() if "UserWarning" in ln)
    lines = _adcli(text).splitlines()
    i = next(k for k, ln in enumerate(lines) if "UserWarning" in ln)
    assert lines[i].split("UserWarning: ", 1)[1] == torch_warning.split("UserWarning: ", 1)[1]
    assert lines[i + 2].startswith("note: y is not a leaf: it was made at line 3")


@pytest.mark.parametrize(
    ("wrong", "names", "expected"),
    [
        ("backwrd", ["backward", "grad", "zero_"], "backward"),
        ("zero_grads", ["step", "zero_grad"], "zero_grad"),
        ("weigth", ["weight", "width"], "weight"),
        ("onse", ["ones", "zeros"], None),  # a swap costs 4, over Python's limit of 3
        ("x1", ["x"], "x"),
        ("X", ["x"], "x"),
        ("a" * 41, ["a" * 40], None),
    ],
)
def test_suggestion_matches_python_312(wrong: str, names: list[str], expected: str | None) -> None:
    assert suggest(wrong, names) == expected


@pytest.mark.parametrize(
    "wrong",
    # greator: 'greater', a torch method adcli lacks, as torch's traceback suggests it
    ["greator", "gradd", "grad_fun", "detch", "unsquezee", "retain_grads", "mena", "zero_grad"],
)
def test_missing_tensor_attribute_line_is_pythons(wrong: str) -> None:
    """The error line of `x.WRONG` is the last line of torch's traceback, suggestion
    included (names starting with "_" aside: Python 3.11 suggests them, 3.12 does not)."""
    text = f"import torch\nx = torch.ones(1)\nx.{wrong}\n"
    head = next(ln for ln in _adcli(text).splitlines() if ": error: " in ln)
    assert head.split(": error: ", 1)[1] == _torch_error(text)


def test_missing_tensor_attribute_keeps_pythons_str_and_repr() -> None:
    """The exception itself has no suggestion, in either: str(e) and repr(e) as Python's."""
    text = (
        "import torch\ntry:\n    torch.ones(1).greator\nexcept AttributeError as e:\n"
        "    print(str(e))\n    print(repr(e))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", text], capture_output=True, text=True, timeout=120, check=False
    )
    assert _adcli(text) == proc.stdout
