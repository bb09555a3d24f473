"""`adcli check` and `adcli run --symbolic` on longer scripts: `--call LINE`, the
progress bar (on a terminal only, never in a pipe), and the work they save (formulas
simplified once per formula shape, folded reports never annotated).

The timing itself is in benchmarks/long_commands.py (medians and ratios, no asserts).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adcli.core.checker import CheckOptions, check_text
from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text
from adcli.render.progress import Progress

ROOT = Path(__file__).resolve().parent.parent

LOOP = textwrap.dedent(
    """\
    import torch
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    w = torch.randn(3, 2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    for step in range(4):
        y = torch.tanh(x @ w + b)
        loss = (y * y).sum()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
    v = torch.tensor([1.5], requires_grad=True)
    (g,) = torch.autograd.grad((v * v).sum(), v)
    print("done")
    """
)
LOOP_LINE, GRAD_LINE = 9, 16


def _run(text: str, **opts: object) -> str:
    buf = io.StringIO()
    code = run_text(text, "t.ad", RunOptions(**opts), _Streams(buf, buf))  # type: ignore[arg-type]
    assert code == 0, buf.getvalue()
    return buf.getvalue()


def _check(text: str, **opts: object) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = check_text(text, "t.ad", CheckOptions(width=100, **opts), out, err)  # type: ignore[arg-type]
    assert err.getvalue() == ""
    return code, out.getvalue()


# --------------------------------------------------------------------------- --call


def test_check_call_checks_that_line_only() -> None:
    code, out = _check(LOOP)
    assert code == 0
    assert f"at line {LOOP_LINE}  (4 calls)" in out and f"at line {GRAD_LINE}" in out
    code, out = _check(LOOP, call=GRAD_LINE)
    assert code == 0
    assert f"at line {GRAD_LINE}" in out and f"line {LOOP_LINE}" not in out
    assert "1 call checked, 1 gradient: 1 ok, 0 failed" in out


def test_check_call_at_a_line_without_a_call_fails() -> None:
    code, out = _check(LOOP, call=3)
    assert code == 1
    assert "no backward() or autograd.grad() call ran at line 3: nothing to check" in out


def test_symbolic_call_gives_formulas_to_that_line_only() -> None:
    both = _run(LOOP, symbolic=True)
    assert both.count("local rule (grad_fn)") == 3  # the loop's first and last, and grad()
    only = _run(LOOP, symbolic=True, call=GRAD_LINE)
    assert only.count("local rule (grad_fn)") == 1
    plain = _run(LOOP)
    # the other reports are printed as without --symbolic
    assert only.split("autograd.grad(")[0] == plain.split("autograd.grad(")[0]


def test_call_options_on_the_command_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "loop.ad"
    script.write_text(LOOP)
    result = run_cli(["check", "--call", str(GRAD_LINE), str(script)])
    assert result.exit_code == 0, result.output
    assert "1 call checked" in result.stdout
    result = run_cli(["run", "--call", "9", str(script)])
    assert result.exit_code == 2
    assert "--call works with --symbolic" in result.stderr
    result = run_cli(["run", "--in-process", "--symbolic", "--call", "9", str(script)])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("local rule (grad_fn)") == 2


# --------------------------------------------------------------------------- saved work


def test_folded_reports_get_no_formulas_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only printed reports are simplified and checked (the loop's first and last)."""
    from adcli.symbolic import tracker

    finished: list[int] = []
    real = tracker.Tracker.annotator

    def counting(self, report, event):  # type: ignore[no-untyped-def]
        done = real(self, report, event)

        def run() -> None:
            finished.append(report.line)
            done()

        return run

    monkeypatch.setattr(tracker.Tracker, "annotator", counting)
    _run(LOOP, symbolic=True)
    assert finished == [LOOP_LINE, GRAD_LINE, LOOP_LINE]
    finished.clear()
    _run(LOOP, symbolic=True, all_reports=True)
    assert finished == [LOOP_LINE] * 4 + [GRAD_LINE]


def test_folded_last_report_matches_an_unfolded_one() -> None:
    """The last report of a loop, printed at the end, shows what it showed when it
    was made (the parameters have changed in place since)."""
    folded = _run(LOOP, symbolic=True)
    every = _run(LOOP, symbolic=True, all_reports=True)
    last_folded = folded.split("(graph as above)")[1].split("autograd.grad(")[0]
    last_every = every.split("loss@4.backward()")[-1].split("autograd.grad(")[0]
    rows = [ln for ln in last_folded.splitlines() if "✓" in ln or "Backward0:" in ln]
    assert rows and all(ln in last_every for ln in rows)
    assert "no rule shown" not in folded and "MISMATCH" not in folded


def test_tidy_is_remembered_per_formula_shape() -> None:
    """Two formulas alike but for their symbols (a loop's steps) are simplified once,
    and each comes back in its own symbols."""
    import numpy as np

    from adcli.symbolic import sym

    def formula(value: float) -> tuple[object, object]:
        w = sym.tensor_symbol("w", np.full(3, value), "leaf")
        x = sym.tensor_symbol("x", np.ones(3), "const")
        return w, sym.relu(w * x) / 16 - x * w / 16

    sym._TIDY_CACHE.clear()
    w1, e1 = formula(1.0)
    w2, e2 = formula(2.0)
    t1 = sym.tidy(e1)
    assert len(sym._TIDY_CACHE) == 1
    t2 = sym.tidy(e2)
    assert len(sym._TIDY_CACHE) == 1  # the second was a hit
    assert sym.to_text(t1) == sym.to_text(t2)
    assert w1 in t1.free_symbols and w2 in t2.free_symbols and w1 not in t2.free_symbols
    assert np.allclose(sym.evaluate(t2), sym.evaluate(e2))


# --------------------------------------------------------------------------- the bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only() -> None:
    tty, pipe = _Terminal(), io.StringIO()
    for stream in (tty, pipe):
        bar = Progress(stream, delay=0)
        with bar.phase("checking things", total=3):
            for _ in range(3):
                bar.advance()
    assert "checking things" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_progress_waits_for_its_delay() -> None:
    tty = _Terminal()
    bar = Progress(tty, delay=30)
    with bar.phase("quick", total=1):
        bar.advance()
    assert not bar.shown and tty.getvalue() == ""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ADCLI_PROGRESS_DELAY="0",
        NO_COLOR="1",
        TERM="xterm",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


@pytest.mark.parametrize(
    ("args", "text"),
    [(["check"], "running the script"), (["run", "--symbolic", "--timeout", "600"], "formulas of")],
)
def test_bar_on_a_pty_and_not_in_a_pipe(tmp_path: Path, args: list[str], text: str) -> None:
    pexpect = pytest.importorskip("pexpect")
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("needs a POSIX pseudo-terminal")
    script = tmp_path / "loop.ad"
    script.write_text(LOOP)
    command = [sys.executable, "-m", "adcli", *args, str(script)]
    child = pexpect.spawn(
        command[0], command[1:], env=_env(), encoding="utf-8", timeout=60, dimensions=(40, 120)
    )
    child.expect_exact(text)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    piped = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    assert text not in piped.stdout


def test_benchmark_prints_medians_and_ratios(tmp_path: Path) -> None:
    """benchmarks/long_commands.py runs and prints its table (no timing is asserted)."""
    out_json = tmp_path / "t.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "long_commands.py"),
            "--repeats",
            "1",
            "--no-warm-up",
            "--json",
            str(out_json),
            str(ROOT / "samples" / "01_first_gradient.ad"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("01_first_gradient.ad, 1 repeats, medians")
    assert [ln.split("  ")[0].strip() for ln in lines[2:]] == ["run", "check", "run --symbolic"]
    assert out_json.exists()
