"""Golden tests: each `X.ad` must print exactly what `X.out` beside it holds.

`X.out` is the text a pipe receives from `adcli run X.ad` (stdout and stderr
together, width 100, no colour), followed by one last line with the exit status:

    tensor(6., grad_fn=<MulBackward0>)
    [exit 0]

If the output does not end with a newline, that line reads
`[exit 0, no final newline]` instead.

One runner serves both `adcli test PATH... [--update]` and pytest
(tests/test_golden.py). A failure shows a unified diff, expected against actual.
`--update` rewrites `X.out` atomically, and writes one for a script that has
none; the reviewer then reads the diff in version control.

Standard library only: the script runner is imported when the first script runs.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

#: A function that runs one script and returns (what a pipe would receive, exit status).
ScriptRunner = Callable[[Path], tuple[str, int]]

SCRIPT_SUFFIX = ".ad"
EXPECTED_SUFFIX = ".out"
GOLDEN_WIDTH = 100

PASSED, FAILED, UPDATED, NEW = "passed", "failed", "updated", "new"


def default_runner(path: Path) -> tuple[str, int]:
    """Run `path` in this process, as `adcli run` would print it into a pipe."""
    from adcli.options import RunOptions
    from adcli.runner import capture

    options = RunOptions(width=GOLDEN_WIDTH, color=False, display_name=Path(path).name)
    return capture(str(path), options)


# ---------------------------------------------------------------- the file format


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n")


def render(output: str, code: int) -> str:
    """The expected-file text for a run that printed `output` and exited with `code`."""
    output = _normalize(output)
    if output == "" or output.endswith("\n"):
        return f"{output}[exit {code}]\n"
    return f"{output}\n[exit {code}, no final newline]\n"


def expected_path(script: Path) -> Path:
    return script.with_suffix(EXPECTED_SUFFIX)


# ---------------------------------------------------------------- finding scripts


def find_scripts(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The scripts named by `paths`: files as given, directories searched recursively.

    Raises FileNotFoundError for a path that does not exist. The order is the
    order of `paths`, and sorted within each directory; duplicates are dropped.
    Hidden directories (`.git`, `.venv`, ...) are skipped.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            candidates = sorted(
                p
                for p in path.rglob(f"*{SCRIPT_SUFFIX}")
                if p.is_file() and not _hidden(p.relative_to(path))
            )
        elif path.exists():
            if path.suffix == EXPECTED_SUFFIX and path.with_suffix(SCRIPT_SUFFIX).is_file():
                path = path.with_suffix(SCRIPT_SUFFIX)  # `adcli test x.out` means x.ad
            candidates = [path]
        else:
            raise FileNotFoundError(2, "No such file or directory", str(given))
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts[:-1])


# ---------------------------------------------------------------- one script


@dataclass(frozen=True)
class Outcome:
    """The result of one golden test."""

    script: Path
    status: str  # PASSED, FAILED, UPDATED or NEW
    actual: str  # rendered: output, then the `[exit N]` line
    expected: str | None  # None when X.out did not exist
    detail: str = ""  # the diff or the error, for a failure

    @property
    def ok(self) -> bool:
        return self.status != FAILED

    @property
    def expected_path(self) -> Path:
        return expected_path(self.script)

    def report(self) -> str:
        """What to show a person about this test (empty when it passed)."""
        name = display(self.script)
        if self.status == PASSED:
            return ""
        if self.status == UPDATED:
            return f"updated {display(self.expected_path)}"
        if self.status == NEW:
            return f"new     {display(self.expected_path)}"
        return f"FAIL {name}\n{self.detail}".rstrip("\n")


def display(path: Path) -> str:
    """`path` relative to the working directory when it is below it, with `/`."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def diff(expected: str, actual: str, expected_name: str, actual_name: str) -> str:
    lines = difflib.unified_diff(
        _normalize(expected).splitlines(),
        actual.splitlines(),
        fromfile=expected_name,
        tofile=actual_name,
        lineterm="",
    )
    return "\n".join(lines) + "\n"


def check(script: Path, runner: ScriptRunner | None = None, update: bool = False) -> Outcome:
    """Run one script and compare it with its expected file (rewriting it if `update`).

    Exceptions from the runner propagate: pytest shows them with their traceback.
    """
    script = Path(script)
    out_path = expected_path(script)
    output, code = (runner or default_runner)(script)
    actual = render(output, code)
    try:
        with open(out_path, encoding="utf-8", newline="") as f:
            expected: str | None = f.read()
    except FileNotFoundError:
        expected = None

    if expected is not None and _normalize(expected) == actual:
        return Outcome(script, PASSED, actual, expected)
    if update:
        write_atomic(out_path, actual)
        return Outcome(script, NEW if expected is None else UPDATED, actual, expected)
    if expected is None:
        detail = (
            f"{display(out_path)} does not exist (`adcli test --update` creates it); "
            f"the script printed:\n{actual}"
        )
    else:
        detail = diff(
            expected,
            actual,
            f"{display(out_path)} (expected)",
            f"{display(script)} (actual)",
        )
    return Outcome(script, FAILED, actual, expected, detail)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a reader sees the old file or the new one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------- many scripts


@dataclass
class Summary:
    passed: int = 0
    failed: int = 0
    updated: int = 0
    new: int = 0

    def line(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        if self.updated:
            text += f", {self.updated} updated"
        if self.new:
            text += f", {self.new} new"
        return text


def run_all(
    scripts: Iterable[Path],
    update: bool = False,
    runner: ScriptRunner | None = None,
    stream: IO[str] | None = None,
    color: bool | None = None,
) -> Summary:
    """Check every script, print each failure (with its diff) and a summary line.

    An exception inside one script's run is reported as that script's failure,
    and the others still run.
    """
    stream = sys.stdout if stream is None else stream
    if color is None:
        color = _auto_color(stream)
    summary = Summary()
    for script in scripts:
        try:
            outcome = check(script, runner=runner, update=update)
        except Exception:
            detail = "adcli crashed while running it:\n" + traceback.format_exc()
            outcome = Outcome(Path(script), FAILED, "", None, detail)
        setattr(summary, outcome.status, getattr(summary, outcome.status) + 1)
        report = outcome.report()
        if report:
            if color:
                report = _colorize(report, with_diff=outcome.expected is not None)
            stream.write(report)
            stream.write("\n")
    stream.write(summary.line() + "\n")
    stream.flush()
    return summary


def _auto_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR", ""):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


_STYLES = (
    ("FAIL ", "1;31"),
    ("--- ", "31"),
    ("+++ ", "32"),
    ("@@", "36"),
    ("-", "31"),
    ("+", "32"),
)


def _colorize(report: str, with_diff: bool) -> str:
    lines = []
    for line in report.split("\n"):
        for prefix, sgr in _STYLES if with_diff else _STYLES[:1]:
            if line.startswith(prefix):
                line = f"\x1b[{sgr}m{line}\x1b[0m"
                break
        lines.append(line)
    return "\n".join(lines)
