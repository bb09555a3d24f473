"""The golden-test runner itself (adcli/core/golden.py, `adcli test`), with fake script runners."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from adcli.core import golden


def fake(outputs: dict[str, tuple[str, int]]):
    """A script runner that answers from a table keyed by the script's file name."""
    calls: list[Path] = []

    def runner(path: Path) -> tuple[str, int]:
        calls.append(Path(path))
        return outputs[Path(path).name]

    runner.calls = calls  # type: ignore[attr-defined]
    return runner


def make(tmp_path: Path, name: str, expected: str | None = None) -> Path:
    script = tmp_path / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("print(1)\n", encoding="utf-8")
    if expected is not None:
        script.with_suffix(".out").write_text(expected, encoding="utf-8", newline="")
    return script


# ---------------------------------------------------------------- the file format


@pytest.mark.parametrize(
    "output, code, text",
    [
        ("a\nb\n", 0, "a\nb\n[exit 0]\n"),
        ("", 0, "[exit 0]\n"),
        ("oops\n", 1, "oops\n[exit 1]\n"),
        ("no newline", 0, "no newline\n[exit 0, no final newline]\n"),
        ("crlf\r\n", 0, "crlf\n[exit 0]\n"),
    ],
)
def test_render(output, code, text) -> None:
    assert golden.render(output, code) == text


def test_render_keeps_the_exit_status_apart_from_the_output() -> None:
    assert golden.render("x", 0) != golden.render("x\n", 0)


# ---------------------------------------------------------------- finding scripts


def test_find_scripts_recurses_sorted_and_deduplicated(tmp_path) -> None:
    b = make(tmp_path, "b.ad")
    a = make(tmp_path, "sub/a.ad")
    c = make(tmp_path, "c.ad")
    make(tmp_path, ".hidden/h.ad")
    make(tmp_path, "sub/.venv/v.ad")
    (tmp_path / "notes.txt").write_text("")
    found = golden.find_scripts([tmp_path, b])
    assert found == [b, c, a]


def test_find_scripts_accepts_the_out_file(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "[exit 0]\n")
    assert golden.find_scripts([script.with_suffix(".out")]) == [script]


def test_find_scripts_missing_path(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        golden.find_scripts([tmp_path / "nope"])


# ---------------------------------------------------------------- one script


def test_pass(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "1\n[exit 0]\n")
    outcome = golden.check(script, runner=fake({"x.ad": ("1\n", 0)}))
    assert outcome.ok and outcome.status == golden.PASSED
    assert outcome.report() == ""


def test_expected_file_with_crlf_still_passes(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "1\r\n[exit 0]\r\n")
    assert golden.check(script, runner=fake({"x.ad": ("1\n", 0)})).ok


def test_fail_shows_a_unified_diff_with_file_names(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = make(tmp_path, "x.ad", "1\n2\n[exit 0]\n")
    outcome = golden.check(Path("x.ad"), runner=fake({"x.ad": ("1\n3\n", 0)}))
    assert not outcome.ok
    report = outcome.report()
    assert report.splitlines() == [
        "FAIL x.ad",
        "--- x.out (expected)",
        "+++ x.ad (actual)",
        "@@ -1,3 +1,3 @@",
        " 1",
        "-2",
        "+3",
        " [exit 0]",
    ]
    assert script.with_suffix(".out").read_text() == "1\n2\n[exit 0]\n"  # untouched


def test_exit_status_is_compared(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "1\n[exit 0]\n")
    outcome = golden.check(script, runner=fake({"x.ad": ("1\n", 1)}))
    assert not outcome.ok
    assert "-[exit 0]" in outcome.detail and "+[exit 1]" in outcome.detail


def test_missing_expected_file_fails_and_shows_the_output(tmp_path) -> None:
    script = make(tmp_path, "x.ad")
    outcome = golden.check(script, runner=fake({"x.ad": ("hello\n", 0)}))
    assert not outcome.ok
    assert "does not exist" in outcome.detail
    assert "hello\n[exit 0]" in outcome.detail
    assert not script.with_suffix(".out").exists()


def test_update_rewrites_a_mismatch_keeping_the_mode(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "old\n[exit 0]\n")
    out = script.with_suffix(".out")
    os.chmod(out, 0o640)
    outcome = golden.check(script, runner=fake({"x.ad": ("new\n", 1)}), update=True)
    assert outcome.ok and outcome.status == golden.UPDATED
    assert out.read_text() == "new\n[exit 1]\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.ad", "x.out"]  # no temp file left


def test_update_creates_a_missing_expected_file(tmp_path) -> None:
    script = make(tmp_path, "x.ad")
    outcome = golden.check(script, runner=fake({"x.ad": ("∂y/∂x\n", 0)}), update=True)
    assert outcome.status == golden.NEW
    assert script.with_suffix(".out").read_text(encoding="utf-8") == "∂y/∂x\n[exit 0]\n"


def test_update_leaves_a_passing_file_alone(tmp_path) -> None:
    script = make(tmp_path, "x.ad", "1\n[exit 0]\n")
    out = script.with_suffix(".out")
    os.utime(out, (1, 1))
    outcome = golden.check(script, runner=fake({"x.ad": ("1\n", 0)}), update=True)
    assert outcome.status == golden.PASSED
    assert out.stat().st_mtime == 1


def test_write_atomic_cleans_up_after_a_failure(tmp_path, monkeypatch) -> None:
    target = tmp_path / "x.out"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(golden.os, "replace", broken_replace)
    with pytest.raises(OSError):
        golden.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.out"]


# ---------------------------------------------------------------- many scripts


def test_run_all_summary_and_failures(tmp_path) -> None:
    scripts = [
        make(tmp_path, "a.ad", "a\n[exit 0]\n"),
        make(tmp_path, "b.ad", "b\n[exit 0]\n"),
        make(tmp_path, "c.ad"),
    ]
    runner = fake({"a.ad": ("a\n", 0), "b.ad": ("B\n", 0), "c.ad": ("c\n", 0)})
    stream = io.StringIO()
    summary = golden.run_all(scripts, runner=runner, stream=stream, color=False)
    assert (summary.passed, summary.failed) == (1, 2)
    text = stream.getvalue()
    assert text.endswith("\n1 passed, 2 failed\n")
    assert "FAIL" in text and "-b" in text and "+B" in text
    assert "\x1b[" not in text


def test_run_all_update_counts(tmp_path) -> None:
    scripts = [
        make(tmp_path, "a.ad", "a\n[exit 0]\n"),
        make(tmp_path, "b.ad", "b\n[exit 0]\n"),
        make(tmp_path, "c.ad"),
    ]
    runner = fake({"a.ad": ("a\n", 0), "b.ad": ("B\n", 0), "c.ad": ("c\n", 0)})
    stream = io.StringIO()
    summary = golden.run_all(scripts, update=True, runner=runner, stream=stream, color=False)
    assert summary.line() == "1 passed, 0 failed, 1 updated, 1 new"
    assert stream.getvalue().splitlines()[-1] == "1 passed, 0 failed, 1 updated, 1 new"


def test_run_all_survives_a_crashing_script(tmp_path) -> None:
    scripts = [make(tmp_path, "a.ad", "a\n[exit 0]\n"), make(tmp_path, "b.ad", "b\n[exit 0]\n")]

    def runner(path: Path) -> tuple[str, int]:
        if path.name == "a.ad":
            raise RuntimeError("engine bug")
        return "b\n", 0

    stream = io.StringIO()
    summary = golden.run_all(scripts, runner=runner, stream=stream, color=False)
    assert (summary.passed, summary.failed) == (1, 1)
    assert "RuntimeError: engine bug" in stream.getvalue()


def test_run_all_colours_only_when_asked(tmp_path) -> None:
    scripts = [make(tmp_path, "a.ad", "a\n[exit 0]\n")]
    stream = io.StringIO()
    golden.run_all(scripts, runner=fake({"a.ad": ("A\n", 0)}), stream=stream, color=True)
    assert "\x1b[31m-a\x1b[0m" in stream.getvalue()


# ---------------------------------------------------------------- `adcli test`


@pytest.fixture
def cli_runner(monkeypatch):
    """Make `adcli test` use a fake script runner; returns its table of outputs."""
    outputs: dict[str, tuple[str, int]] = {}
    monkeypatch.setattr(golden, "default_runner", fake(outputs))
    return outputs


def test_cli_test_passes(run_cli, cli_runner, tmp_path) -> None:
    make(tmp_path, "a.ad", "a\n[exit 0]\n")
    cli_runner["a.ad"] = ("a\n", 0)
    result = run_cli(["test", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 passed, 0 failed\n"


def test_cli_test_fails_with_exit_1(run_cli, cli_runner, tmp_path) -> None:
    make(tmp_path, "a.ad", "a\n[exit 0]\n")
    cli_runner["a.ad"] = ("b\n", 0)
    result = run_cli(["test", str(tmp_path / "a.ad")])
    assert result.exit_code == 1
    assert "--- " in result.stdout and "+b" in result.stdout
    assert result.stdout.endswith("0 passed, 1 failed\n")


def test_cli_test_update(run_cli, cli_runner, tmp_path) -> None:
    script = make(tmp_path, "a.ad", "a\n[exit 0]\n")
    make(tmp_path, "b.ad")
    cli_runner.update({"a.ad": ("A\n", 0), "b.ad": ("B\n", 1)})
    result = run_cli(["test", "--update", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("0 passed, 0 failed, 1 updated, 1 new\n")
    assert script.with_suffix(".out").read_text() == "A\n[exit 0]\n"
    assert (tmp_path / "b.out").read_text() == "B\n[exit 1]\n"
    assert run_cli(["test", str(tmp_path)]).exit_code == 0


def test_cli_test_respects_no_color(run_cli, cli_runner, tmp_path) -> None:
    make(tmp_path, "a.ad", "a\n[exit 0]\n")
    cli_runner["a.ad"] = ("b\n", 0)
    result = run_cli(["test", str(tmp_path)], env={"NO_COLOR": "1"})
    assert "\x1b[" not in result.stdout


# ---------------------------------------------------------------- the default runner


def test_default_runner_asks_the_runner_for_deterministic_text(monkeypatch, tmp_path) -> None:
    import sys
    import types

    seen = {}

    def capture(path, options):
        seen["args"] = (path, options)
        return "out\n", 0

    module = types.ModuleType("adcli.core.runner")
    module.capture = capture  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "adcli.core.runner", module)
    script = tmp_path / "dir" / "x.ad"
    assert golden.default_runner(script) == ("out\n", 0)
    path, options = seen["args"]
    assert path == str(script)
    assert (options.width, options.color, options.display_name) == (100, False, "x.ad")
    assert not options.quiet and not options.json
