"""Golden tests: each `X.ad` must print exactly what `X.out` beside it holds.

`X.out` is the text a pipe receives from `adcli run X.ad` (stdout and stderr
together, width 100, no colour), followed by one last line with the exit status:

    tensor(6., grad_fn=<MulBackward0>)
    [exit 0]

If the output does not end with a newline, that line reads
`[exit 0, no final newline]` instead.

One runner serves both `adcli test PATH... [--update]` and pytest
(tests/test_golden.py). A failure shows a short unified diff, expected against
actual (adcli.core.textcompare). `--update` rewrites `X.out` atomically, and writes
one for a script that has none; the reviewer then reads the diff in version
control.

For grading a class (`Grading`): `--output-only` runs each script with its
reports off, as `adcli run -q` does, so only what the script itself prints (and
its errors) is compared; `--update --output-only` writes that same text. Report
names are not normalised: a report's name and expression columns are the
script's own words, so a renamed variable changes them, and a grader who does
not want to compare reports uses `--output-only`. `--tolerance` compares
decimal numbers within a relative tolerance. `--json` writes one summary
document instead of the text.

Standard library only: the script runner is imported when the first script runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from adcli.core.textcompare import Difference, Tolerance, first_difference, short_diff, texts_match

#: A function that runs one script and returns (what a pipe would receive, exit status).
ScriptRunner = Callable[[Path], tuple[str, int]]

SCRIPT_SUFFIX = ".ad"
EXPECTED_SUFFIX = ".out"
GOLDEN_WIDTH = 100

PASSED, FAILED, UPDATED, NEW = "passed", "failed", "updated", "new"
STOPPED_TAIL = 20  # lines of a stopped script's output shown with the reason


@dataclass(frozen=True)
class Grading:
    """How outputs are compared: `output_only` runs scripts without reports;
    `tolerance` (None: exact) lets decimal numbers differ a little."""

    output_only: bool = False
    tolerance: Tolerance | None = None


EXACT = Grading()


def default_runner(path: Path, quiet: bool = False) -> tuple[str, int]:
    """Run `path` in this process, as `adcli run [-q]` would print it into a pipe."""
    from adcli.core.runner import capture

    return capture(str(path), _golden_options(path, quiet))


_DEFAULT_RUNNER = default_runner


def _golden_options(path: Path, quiet: bool = False) -> Any:
    from adcli.core.options import RunOptions

    return RunOptions(width=GOLDEN_WIDTH, color=False, display_name=Path(path).name, quiet=quiet)


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
    code: int | None = None  # the script's exit status (None: it did not run, or was stopped)
    seconds: float | None = None  # how long it ran
    stopped: str | None = None  # why it was stopped (out of time or memory, crashed)
    difference: Difference | None = None  # where the output first departs from X.out

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


def diff(
    expected: str,
    actual: str,
    expected_name: str,
    actual_name: str,
    tolerance: Tolerance | None = None,
) -> str:
    """A short unified diff (see `adcli.core.textcompare.short_diff`)."""
    return short_diff(_normalize(expected), actual, expected_name, actual_name, tolerance)


def check(
    script: Path,
    runner: ScriptRunner | None = None,
    update: bool = False,
    grading: Grading = EXACT,
) -> Outcome:
    """Run one script and compare it with its expected file (rewriting it if `update`).

    A given `runner` is called with the path alone (it decides about reports);
    the default one runs quietly under `grading.output_only`.
    Exceptions from the runner propagate: pytest shows them with their traceback.
    """
    script = Path(script)
    refused = refusal(script)
    if refused is not None:
        return Outcome(script, FAILED, "", None, refused)
    start = time.monotonic()
    if runner is None:  # a test may have replaced default_runner with a one-argument one
        output, code = (
            default_runner(script, True) if grading.output_only else default_runner(script)
        )
    else:
        output, code = runner(script)
    return compare(script, output, code, update, grading, time.monotonic() - start)


def compare(
    script: Path,
    output: str,
    code: int,
    update: bool = False,
    grading: Grading = EXACT,
    seconds: float | None = None,
) -> Outcome:
    """The outcome for `script` that printed `output` and exited with `code`."""
    out_path = expected_path(script)
    actual = render(output, code)
    try:
        expected: str | None = read_nofollow(out_path)
    except FileNotFoundError:
        expected = None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        detail = f"cannot read {display(out_path)}: {reason}"
        return Outcome(script, FAILED, actual, None, detail, code=code, seconds=seconds)

    if expected is not None and texts_match(_normalize(expected), actual, grading.tolerance):
        return Outcome(script, PASSED, actual, expected, code=code, seconds=seconds)
    if update:
        write_atomic(out_path, actual)
        status = NEW if expected is None else UPDATED
        return Outcome(script, status, actual, expected, code=code, seconds=seconds)
    if expected is None:
        detail = (
            f"{display(out_path)} does not exist (`adcli test --update` creates it); "
            f"the script printed:\n{actual}"
        )
        return Outcome(script, FAILED, actual, None, detail, code=code, seconds=seconds)
    detail = diff(
        expected,
        actual,
        f"{display(out_path)} (expected)",
        f"{display(script)} (actual)",
        grading.tolerance,
    )
    if grading.output_only and _REPORT_HEADER.search(expected):
        detail += (
            f"note: {display(out_path)} holds reports; with --output-only, make it with "
            "`adcli test --update --output-only`\n"
        )
    first = first_difference(_normalize(expected), actual, grading.tolerance)
    return Outcome(script, FAILED, actual, expected, detail, code, seconds, difference=first)


# The first line of a backward report (adcli.render.report), to tell an expected
# file written with reports from one written with --output-only.
_REPORT_HEADER = re.compile(r" at line \d+  retain_graph=(?:True|False), create_graph=", re.M)


def stopped(
    script: Path,
    message: str,
    output: str,
    reason: str | None = None,
    seconds: float | None = None,
) -> Outcome:
    """A script that was stopped (out of time or memory, crashed): a failure that
    says why, with the end of what it printed. Never written by --update."""
    detail = message
    lines = _normalize(output).splitlines()
    if lines:
        shown = lines[-STOPPED_TAIL:]
        skipped = f" (its last {len(shown)} lines)" if len(lines) > len(shown) else ""
        detail += f"\nit printed{skipped}:\n" + "\n".join(shown)
    return Outcome(
        Path(script), FAILED, "", None, detail, seconds=seconds, stopped=reason or message
    )


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
    outcomes: list[Outcome] = field(default_factory=list, repr=False)  # with json_output
    seconds: float = 0.0  # wall-clock time of the whole run

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
    grading: Grading = EXACT,
    json_output: bool = False,
) -> Summary:
    """Check every script, print each failure (with its diff) and a summary line.

    With `budget` (an `adcli.core.isolation.Budget`; `adcli test` passes one) each
    script runs in a child process of its own under that budget, `jobs` at a
    time: one that hangs, crashes or runs out of memory fails alone, saying why.
    Without it scripts run here, one after the other, through `runner`; an
    exception inside one script's run is reported as that script's failure.
    With `json_output` nothing is printed until the end, then one JSON document
    (`json_report`).
    """
    stream = sys.stdout if stream is None else stream
    if color is None:
        color = _auto_color(stream)
    start = time.monotonic()
    summary = Summary()
    scripts = [Path(s) for s in scripts]
    if budget is not None:
        outcomes = _isolated_outcomes(scripts, update, budget, jobs, grading)
    else:
        outcomes = (_outcome_here(script, runner, update, grading) for script in scripts)
    for outcome in outcomes:
        setattr(summary, outcome.status, getattr(summary, outcome.status) + 1)
        if json_output:  # kept only for the document: outputs may be large
            summary.outcomes.append(outcome)
        report = "" if json_output else outcome.report()
        if report:
            if color:
                report = _colorize(report, with_diff=outcome.expected is not None)
            stream.write(report)
            stream.write("\n")
            stream.flush()
    summary.seconds = time.monotonic() - start
    if json_output:
        document = json_report(summary, grading, budget, jobs)
        stream.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        stream.write(summary.line() + "\n")
    stream.flush()
    return summary


def json_report(
    summary: Summary, grading: Grading = EXACT, budget: Any = None, jobs: int = 1
) -> dict[str, Any]:
    """The `adcli test --json` document: the counts, the options, and one entry
    per script (in the order run)."""
    tolerance = grading.tolerance
    return {
        "passed": summary.passed,
        "failed": summary.failed,
        "updated": summary.updated,
        "new": summary.new,
        "total": len(summary.outcomes),
        "seconds": round(summary.seconds, 3),
        "options": {
            "output_only": grading.output_only,
            "tolerance": None if tolerance is None else tolerance.rel,
            "abs_tolerance": None if tolerance is None else tolerance.abs,
            "timeout": None if budget is None else budget.timeout,
            "max_memory": None if budget is None else budget.max_memory,
            "jobs": jobs,
        },
        "scripts": [_json_entry(outcome) for outcome in summary.outcomes],
    }


def _json_entry(outcome: Outcome) -> dict[str, Any]:
    expected = outcome.expected
    return {
        "script": display(outcome.script),
        "expected_file": display(outcome.expected_path),
        "status": outcome.status,
        "ok": outcome.ok,
        "exit_status": outcome.code,
        "expected_exit_status": None if expected is None else _exit_status(expected),
        "seconds": None if outcome.seconds is None else round(outcome.seconds, 3),
        "stopped": outcome.stopped,
        "first_difference": None if outcome.difference is None else outcome.difference.as_dict(),
        "detail": outcome.detail or None,
    }


_EXIT_LINE = re.compile(r"\[exit (\d+)(?:, no final newline)?\]\r?\n?\Z")


def _exit_status(expected: str) -> int | None:
    """The exit status an expected file's last line holds (None if it has none)."""
    m = _EXIT_LINE.search(expected)
    return int(m.group(1)) if m else None


def _outcome_here(
    script: Path, runner: ScriptRunner | None, update: bool, grading: Grading
) -> Outcome:
    try:
        return check(script, runner=runner, update=update, grading=grading)
    except Exception:
        detail = "adcli crashed while running it:\n" + traceback.format_exc()
        return Outcome(Path(script), FAILED, "", None, detail)


def _isolated_outcomes(
    scripts: list[Path], update: bool, budget: Any, jobs: int, grading: Grading
) -> Iterator[Outcome]:
    """The outcomes of `scripts`, each run in a child process (in order)."""
    from adcli.core import isolation

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
        isolation.job(_child_body(script, text, grading.output_only), budget, prepare=None)
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
            yield stopped(script, str(result.message), result.output, result.reason, result.seconds)
            continue
        try:
            yield compare(script, result.output, result.code, update, grading, result.seconds)
        except OSError as e:  # --update could not write
            yield Outcome(script, FAILED, "", None, f"cannot write: {e.strerror or e}")


def _child_body(script: Path, text: str, quiet: bool) -> Callable[[IO[str], IO[str]], int]:
    """What the child process runs for `script`: the script, printed as a pipe gets it
    (without reports when `quiet`)."""

    def body(out: IO[str], err: IO[str]) -> int:
        if default_runner is not _DEFAULT_RUNNER:  # a test replaced it: use theirs
            output, code = default_runner(script)
            out.write(output)
            return code
        from adcli.core import isolation
        from adcli.core.runner import run_streams

        options = _golden_options(script, quiet)
        code, out_of_memory = run_streams(text, script.name, options, out, out)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    return body


def _script_limit() -> int:
    from adcli.lang.limits import MAX_SCRIPT_CHARS

    return MAX_SCRIPT_CHARS


# A script that reaches the parser, the engine, a backward pass and a report.
_WARM_UP_SCRIPT = (
    "import torch\n"
    "x = torch.ones(2, requires_grad=True)\n"
    "y = (x * x).sum()\n"
    "y.backward()\n"
    "print(x.grad)\n"
)


def _warm_up() -> None:
    """Run a tiny script here, before the children fork: each child then starts
    with the engine imported and its caches filled (about 0.1 s of CPU time saved
    per script). Each run starts from a fresh engine state (Session), so this
    one leaves nothing behind that a graded script could see."""
    if default_runner is not _DEFAULT_RUNNER:
        return
    import io

    from adcli.core.runner import run_streams

    buf = io.StringIO()
    try:
        run_streams(_WARM_UP_SCRIPT, "warm-up.ad", _golden_options(Path("warm-up.ad")), buf, buf)
    except Exception:  # pragma: no cover - the children will report the real problem
        pass


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
