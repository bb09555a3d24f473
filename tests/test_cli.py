"""The command line: help, version, exit codes, usage errors, options handed to the runner."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from adcli import __version__
from adcli.core.options import PIPE_WIDTH, RunOptions

# ---------------------------------------------------------------- helpers


class FakeRunner:
    """Stands in for adcli.core.runner: records each call, returns a chosen exit code."""

    def __init__(self, code: int = 0, error: Exception | None = None) -> None:
        self.code = code
        self.error = error
        self.calls: list[tuple[str, RunOptions]] = []

    def run_path(self, path: str, options: RunOptions) -> int:
        self.calls.append((path, options))
        if self.error is not None:
            raise self.error
        print(f"ran {path}")
        return self.code


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> FakeRunner:
    fake = FakeRunner()
    module = types.ModuleType("adcli.core.runner")
    module.run_path = fake.run_path  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "adcli.core.runner", module)
    return fake


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "x.ad"
    path.write_text("x = 1\n", encoding="utf-8")
    return path


def one_error_line(text: str) -> str:
    """The stderr text must be exactly one `adcli: error:` line, without a traceback."""
    assert "Traceback" not in text
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("adcli: error: "), text
    return lines[0]


REPO_ROOT = Path(__file__).resolve().parent.parent


def run_module(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    """`python -m adcli ARGS` from `cwd`, importing this checkout's adcli."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return subprocess.run(
        [sys.executable, "-m", "adcli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )


# ---------------------------------------------------------------- help and version


def test_help_lists_the_commands(run_cli) -> None:
    result = run_cli(["--help"])
    assert result.exit_code == 0
    assert "Usage: adcli" in result.stdout
    for command in ("run", "test"):
        assert f"  {command} " in result.stdout


@pytest.mark.parametrize("command", ["run", "test"])
def test_short_help_option_on_commands(run_cli, command: str) -> None:
    result = run_cli([command, "-h"])
    assert result.exit_code == 0
    assert f"Usage: adcli {command}" in result.stdout


def test_run_help_names_every_option(run_cli) -> None:
    result = run_cli(["run", "--help"])
    assert result.exit_code == 0
    for option in (
        "--quiet",
        "-q",
        "--json",
        "--width",
        "--full",
        "--debug",
        "--max-steps",
        "--max-depth",
        "--max-numel",
        "--no-color",
    ):
        assert option in result.stdout


def test_version(run_cli) -> None:
    result = run_cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"adcli {__version__}\n"


# ---------------------------------------------------------------- usage errors: exit 2, one line


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--bogus"], "--bogus"),
        (["frobnicate"], "frobnicate"),
        (["run"], "missing argument"),
        (["run", "X", "--bogus"], "--bogus"),
        (["run", "X", "--width", "wide"], "invalid value for '--width'"),
        (["run", "X", "--width", "5"], "--width"),
        (["run", "X", "--max-steps", "0"], "--max-steps"),
        (["run", "X", "Y"], "unexpected extra argument"),
        (["test"], "missing argument"),
    ],
)
def test_usage_errors_exit_2_with_one_line(run_cli, script, args, fragment) -> None:
    args = [str(script) if a == "X" else a for a in args]
    result = run_cli(args)
    assert result.exit_code == 2
    assert result.stdout == ""
    line = one_error_line(result.stderr)
    assert fragment.lower() in line.lower()


def test_usage_error_points_at_the_commands_help(run_cli, script) -> None:
    result = run_cli(["run", str(script), "--bogus"])
    assert "(see 'adcli run -h')" in result.stderr


def test_missing_file(run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["run", "x.ad"])
    assert result.exit_code == 2
    assert result.stderr == "adcli: error: cannot read 'x.ad': No such file or directory\n"


def test_directory_is_not_a_script(run_cli, tmp_path) -> None:
    result = run_cli(["run", str(tmp_path)])
    assert result.exit_code == 2
    assert one_error_line(result.stderr).endswith(": Is a directory")


def test_missing_file_does_not_load_the_runner(run_cli, tmp_path, monkeypatch) -> None:
    module = types.ModuleType("adcli.core.runner")  # no run_path: loading it would fail
    monkeypatch.setitem(sys.modules, "adcli.core.runner", module)
    result = run_cli(["run", str(tmp_path / "nope.ad")])
    assert result.exit_code == 2


def test_test_command_missing_path(run_cli, tmp_path) -> None:
    result = run_cli(["test", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "No such file or directory" in one_error_line(result.stderr)


def test_test_command_with_no_scripts(run_cli, tmp_path) -> None:
    result = run_cli(["test", str(tmp_path)])
    assert result.exit_code == 2
    assert "no .ad scripts found" in one_error_line(result.stderr)


# ---------------------------------------------------------------- run: options handed to the runner


def test_run_defaults(run_cli, fake_runner, script) -> None:
    result = run_cli(["run", str(script)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"ran {script}\n"
    [(path, options)] = fake_runner.calls
    assert path == str(script)
    assert options == RunOptions()


def test_run_passes_every_option(run_cli, fake_runner, script) -> None:
    args = ["run", "-q", "--json", "--width", "77", "--full", "--debug", "--no-color"]
    args += ["--max-steps", "5", "--max-depth", "6", "--max-numel", "7", str(script)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    [(_, options)] = fake_runner.calls
    assert options == RunOptions(
        quiet=True,
        json=True,
        width=77,
        full=True,
        debug=True,
        max_steps=5,
        max_depth=6,
        max_numel=7,
        color=False,
    )


@pytest.mark.parametrize("code", [0, 1])
def test_run_exit_status_is_the_runners(run_cli, fake_runner, script, code) -> None:
    fake_runner.code = code
    assert run_cli(["run", str(script)]).exit_code == code


def test_run_stdin_is_passed_as_dash(run_cli, fake_runner) -> None:
    result = run_cli(["run", "-"], input="x = 1\n")
    assert result.exit_code == 0
    assert fake_runner.calls[0][0] == "-"


def test_no_color_env_is_not_a_usage_error(run_cli, fake_runner, script) -> None:
    result = run_cli(["run", str(script)], env={"NO_COLOR": "please"})
    assert result.exit_code == 0
    assert fake_runner.calls[0][1].color is None  # auto: the runner reads NO_COLOR itself


def test_internal_error_is_one_line_and_exit_1(run_cli, fake_runner, script) -> None:
    fake_runner.error = ValueError("boom")
    result = run_cli(["run", str(script)])
    assert result.exit_code == 1
    line = one_error_line(result.stderr)
    assert "internal error: ValueError: boom" in line


def test_internal_error_with_debug_raises(run_cli, fake_runner, script) -> None:
    fake_runner.error = ValueError("boom")
    result = run_cli(["run", "--debug", str(script)])
    assert isinstance(result.exception, ValueError)


# ---------------------------------------------------------------- RunOptions


def test_run_options_color_auto(monkeypatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert RunOptions().use_color(Tty()) is True
    assert RunOptions().use_color(io.StringIO()) is False
    assert RunOptions(color=True).use_color(io.StringIO()) is True
    assert RunOptions(color=False).use_color(Tty()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert RunOptions().use_color(Tty()) is False
    monkeypatch.setenv("NO_COLOR", "")
    assert RunOptions().use_color(Tty()) is True


def test_run_options_width() -> None:
    assert RunOptions().resolve_width(io.StringIO()) == PIPE_WIDTH
    assert RunOptions(width=60).resolve_width(io.StringIO()) == 60


# ---------------------------------------------------------------- as a real process


def test_importing_the_cli_stays_light(repo_root) -> None:
    code = (
        "import sys, adcli.cli; "
        "heavy = ('numpy', 'lark', 'torch', 'prompt_toolkit', 'adcli.autograd', "
        "'adcli.lang', 'adcli.core.runner', 'adcli.render'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.strip() == "[]"


def test_process_missing_file(tmp_path) -> None:
    proc = run_module("run", "x.ad", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "adcli: error: cannot read 'x.ad': No such file or directory\n"


def test_process_version_and_bad_option(repo_root) -> None:
    proc = run_module("--version", cwd=repo_root)
    assert (proc.returncode, proc.stdout) == (0, f"adcli {__version__}\n")
    proc = run_module("run", "--nope", "x.ad", cwd=repo_root)
    assert proc.returncode == 2
    one_error_line(proc.stderr)


# ---------------------------------------------------------------- with the real runner


@pytest.fixture
def real_runner():
    return pytest.importorskip("adcli.core.runner")


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.ad"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_real_run_prints(run_cli, real_runner, tmp_path) -> None:
    result = run_cli(["run", "-q", write(tmp_path, "print(1 + 2)\n")])
    assert result.exit_code == 0, result.output
    assert result.stdout == "3\n"


def test_real_run_from_stdin(run_cli, real_runner) -> None:
    result = run_cli(["run", "-q", "-"], input="print(6 * 7)\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "42\n"


@pytest.mark.parametrize(
    "text", ["x = (\n", "y = undefined_name + 1\n", "1 / tensor([1.]).foo()\n"]
)
def test_real_script_errors_exit_1_without_traceback(run_cli, real_runner, tmp_path, text) -> None:
    result = run_cli(["run", write(tmp_path, text)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output


def test_real_json_is_one_object(run_cli, real_runner, tmp_path) -> None:
    result = run_cli(["run", "--json", write(tmp_path, "x = 2\nprint(x)\n")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["stdout"] == "2\n"
    assert data["error"] is None


def test_real_pipe_output_has_no_color_codes(repo_root, real_runner, tmp_path) -> None:
    script = write(
        tmp_path,
        "x = tensor(3., requires_grad=True)\ny = x * x\ny.backward()\nprint(x.grad)\n",
    )
    proc = run_module("run", script, cwd=repo_root)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout + proc.stderr
    assert "tensor(6.)" in proc.stdout
