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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: A function that runs one script and returns (what a pipe would receive, exit status).
ScriptRunner = Callable[[Path], tuple[str, int]]

SCRIPT_SUFFIX = ".ad"
EXPECTED_SUFFIX = ".out"
GOLDEN_WIDTH = 100

PASSED, FAILED, UPDATED, NEW = "passed", "failed", "updated", "new"
STOPPED_TAIL = 20  # lines of a stopped script's output shown with the reason


def default_runner(path: Path) -> tuple[str, int]:
    """Run `path` in this process, as `adcli run` would print it into a pipe."""
    from adcli.runner import capture

    return capture(str(path), _golden_options(path))


_DEFAULT_RUNNER = default_runner


def _golden_options(path: Path) -> Any:
    from adcli.options import RunOptions

    return RunOptions(width=GOLDEN_WIDTH, color=False, display_name=Path(path).name)


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
            candidates = sorted(_walk(path))
        elif path.exists():
            if path.suffix == EXPECTED_SUFFIX and path.with_suffix(SCRIPT_SUFFIX).is_file():
                path = path.with_suffix(SCRIPT_SUFFIX)  # `adcli test x.out` means x.ad
            candidates = [path]
        else:
            raise FileNotFoundError(2, "No such file or directory", str(given))
        for candidate in candidates:
            key = candidate.parent.resolve() / candidate.name
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found


def _walk(top: Path) -> Iterator[Path]:
    """The scripts below `top`. Symlinked directories are not entered: a test run
    stays inside the tree it was given. Symlinked scripts are listed (and refused
    by `check`, which says so)."""
    for folder, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d == "__pycache__")]
        for name in files:
            if name.endswith(SCRIPT_SUFFIX):
                candidate = Path(folder, name)
                if candidate.is_symlink() or candidate.is_file():
                    yield candidate


def refusal(script: Path) -> str | None:
    """Why `script` (or its expected file) must not be read: a symbolic link could
    show a file from outside the tree in the diff. None when both are plain files."""
    for path, verb in ((script, "run"), (expected_path(script), "read")):
        if os.path.islink(path):
            return f"refusing to {verb} {display(path)}: it is a symbolic link"
    return None


def read_nofollow(path: Path, limit: int | None = None) -> str:
    """The UTF-8 text of `path`, never through a symbolic link (OSError ELOOP then).
    With `limit`, at most that many characters plus one."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, encoding="utf-8", newline="") as f:
        return f.read() if limit is None else f.read(limit + 1)


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
    try:  # the folder resolved, not the file: a symbolic link keeps its own name
        return (path.parent.resolve() / path.name).relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
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
    refused = refusal(script)
    if refused is not None:
        return Outcome(script, FAILED, "", None, refused)
    output, code = (runner or default_runner)(script)
    return compare(script, output, code, update)


def compare(script: Path, output: str, code: int, update: bool = False) -> Outcome:
    """The outcome for `script` that printed `output` and exited with `code`."""
    out_path = expected_path(script)
    actual = render(output, code)
    try:
        expected: str | None = read_nofollow(out_path)
    except FileNotFoundError:
        expected = None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return Outcome(script, FAILED, actual, None, f"cannot read {display(out_path)}: {reason}")

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


def stopped(script: Path, message: str, output: str) -> Outcome:
    """A script that was stopped (out of time or memory, crashed): a failure that
    says why, with the end of what it printed. Never written by --update."""
    detail = message
    lines = _normalize(output).splitlines()
    if lines:
        shown = lines[-STOPPED_TAIL:]
        skipped = f" (its last {len(shown)} lines)" if len(lines) > len(shown) else ""
        detail += f"\nit printed{skipped}:\n" + "\n".join(shown)
    return Outcome(Path(script), FAILED, "", None, detail)


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
    *,
    budget: Any = None,
    jobs: int = 1,
) -> Summary:
    """Check every script, print each failure (with its diff) and a summary line.

    With `budget` (an `adcli.isolation.Budget`; `adcli test` passes one) each
    script runs in a child process of its own under that budget, `jobs` at a
    time: one that hangs, crashes or runs out of memory fails alone, saying why.
    Without it scripts run here, one after the other, through `runner`; an
    exception inside one script's run is reported as that script's failure.
    """
    stream = sys.stdout if stream is None else stream
    if color is None:
        color = _auto_color(stream)
    summary = Summary()
    scripts = [Path(s) for s in scripts]
    if budget is not None:
        outcomes = _isolated_outcomes(scripts, update, budget, jobs)
    else:
        outcomes = (_outcome_here(script, runner, update) for script in scripts)
    for outcome in outcomes:
        setattr(summary, outcome.status, getattr(summary, outcome.status) + 1)
        report = outcome.report()
        if report:
            if color:
                report = _colorize(report, with_diff=outcome.expected is not None)
            stream.write(report)
            stream.write("\n")
            stream.flush()
    stream.write(summary.line() + "\n")
    stream.flush()
    return summary


def _outcome_here(script: Path, runner: ScriptRunner | None, update: bool) -> Outcome:
    try:
        return check(script, runner=runner, update=update)
    except Exception:
        detail = "adcli crashed while running it:\n" + traceback.format_exc()
        return Outcome(Path(script), FAILED, "", None, detail)


def _isolated_outcomes(
    scripts: list[Path], update: bool, budget: Any, jobs: int
) -> Iterator[Outcome]:
    """The outcomes of `scripts`, each run in a child process (in order)."""
    from adcli import isolation

    _warm_up()  # once here, so that each forked child starts warm
    plans: list[tuple[Path, str | None, str]] = []  # (script, refusal, text)
    for script in scripts:
        refused = refusal(script)
        text = ""
        if refused is None:
            try:
                text = read_nofollow(script, limit=_script_limit())
            except (OSError, UnicodeDecodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                refused = f"cannot read {display(script)}: {reason}"
        plans.append((script, refused, text))
    work = [
        isolation.job(_child_body(script, text), budget, prepare=None)
        for script, refused, text in plans
        if refused is None
    ]
    results = isolation.run_many(work, parallel=jobs)
    for script, refused, _ in plans:
        if refused is not None:
            yield Outcome(script, FAILED, "", None, refused)
            continue
        result = next(results)
        if result.reason is not None:
            yield stopped(script, str(result.message), result.output)
            continue
        try:
            yield compare(script, result.output, result.code, update)
        except OSError as e:  # --update could not write
            yield Outcome(script, FAILED, "", None, f"cannot write: {e.strerror or e}")


def _child_body(script: Path, text: str) -> Callable[[IO[str], IO[str]], int]:
    """What the child process runs for `script`: the script, printed as a pipe gets it."""

    def body(out: IO[str], err: IO[str]) -> int:
        if default_runner is not _DEFAULT_RUNNER:  # a test replaced it: use theirs
            output, code = default_runner(script)
            out.write(output)
            return code
        from adcli import isolation
        from adcli.runner import run_streams

        code, out_of_memory = run_streams(text, script.name, _golden_options(script), out, out)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    return body


def _script_limit() -> int:
    from adcli.lang.limits import MAX_SCRIPT_CHARS

    return MAX_SCRIPT_CHARS


def _warm_up() -> None:
    """Import the engine and build the parser here, before the children fork."""
    if default_runner is not _DEFAULT_RUNNER:
        return
    from adcli.lang.parser import get_lark
    from adcli.render import report, tables  # noqa: F401
    from adcli.runner import run_streams  # noqa: F401

    get_lark()


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
