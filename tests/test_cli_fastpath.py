"""`adcli run` parses its common flags without typer (start-up); both paths must agree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adcli.cli import _parse_run

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (
    "import torch\n"
    "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "y = (x * x).sum()\n"
    "print(y)\n"
    "y.backward()\n"
    "print(x.grad)\n"
)
LOOP = "while True:\n    pass\n"

FAST = [sys.executable, "-m", "adcli"]
TYPER = [
    sys.executable,
    "-c",
    "import sys; from adcli.commands.app import app; sys.argv[0] = 'adcli'; app()",
]


def _run(cmd: list[str], args: list[str]) -> tuple[int, str, str]:
    p = subprocess.run(cmd + args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize(
    "flags, body",
    [
        ([], SCRIPT),
        (["-q"], SCRIPT),
        (["--json"], SCRIPT),
        (["--width", "60", "--full"], SCRIPT),
        (["--width=50", "--no-color"], SCRIPT),
        (["--max-steps", "1000"], LOOP),
    ],
)
def test_fast_path_and_typer_agree(tmp_path: Path, flags: list[str], body: str) -> None:
    path = tmp_path / "s.ad"
    path.write_text(body, encoding="utf-8")
    assert _parse_run([*flags, str(path)]) is not None  # really the fast path
    fast = _run(FAST, ["run", *flags, str(path)])
    slow = _run(TYPER, ["run", *flags, str(path)])
    assert fast == slow


@pytest.mark.parametrize(
    "args",
    [["--width", "5", "s.ad"], ["-q", "-q", "s.ad"], ["--bogus", "s.ad"], ["--help"], []],
)
def test_unusual_arguments_go_to_typer(args: list[str]) -> None:
    assert _parse_run(args) is None
