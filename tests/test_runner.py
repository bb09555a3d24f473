"""adcli run as a process: a closed pipe ends it quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_closed_pipe_is_quiet() -> None:
    # `adcli run long.ad | head -1`: the reader leaves after one line
    script = "import torch\nfor i in range(20000):\n    print(torch.ones(3) * i)\n"
    proc = subprocess.Popen(
        [sys.executable, "-m", "adcli", "run", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(script)
    proc.stdin.close()
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    code = proc.wait(timeout=120)
    assert first == "tensor([0., 0., 0.])\n"
    assert err == ""
    assert code == 1
