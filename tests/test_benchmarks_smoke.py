"""Smoke test of benchmarks/run.py: a fast subset runs and prints the results table.

No timing is asserted (the machine may be loaded); the torch column is simply
left empty when PyTorch is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_quick_subset_prints_the_table(tmp_path: Path) -> None:
    out_json = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--quick",
            "--only",
            "interpreter,report",
            "--repeats",
            "1",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("workload"))
    for col in ("adcli", "torch", "NumPy floor", "adcli/torch", "adcli/floor", "target"):
        assert col in header
    assert "load average" in out
    interp = next(line for line in lines if line.startswith("interpreter N=30000"))
    assert "<= 2x floor" in interp
    assert any(line.startswith("report N=10000") for line in lines)
    data = json.loads(out_json.read_text())
    rows = {r["workload"].split()[0]: r for r in data["rows"]}
    assert rows["interpreter"]["adcli"] > 0 and rows["interpreter"]["floor"] > 0
    assert rows["report"]["adcli"] > 0
    if HAS_TORCH:
        assert rows["interpreter"]["torch"] > 0
    else:
        assert rows["interpreter"]["torch"] is None
        assert data["torch"] is None


def test_workloads_are_plain_python() -> None:
    """Every workload starts with `import torch` and compiles as Python."""
    for path in sorted((ROOT / "benchmarks" / "workloads").glob("*.ad")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("import torch\n"), path.name
        compile(text, str(path), "exec")


def test_unknown_workload_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, str(RUN), "--only", "nope"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "unknown workload" in proc.stderr
