"""Grading a class with `adcli test` (issue 13, item 4).

Comparing numbers within a tolerance, short diffs, `--output-only`, `--json`,
`-j N`, and the class of 100 scripts in which one hangs and one needs 10 GB.
The class test takes about 30 s on a loaded machine; set ADCLI_SKIP_SLOW=1 to
skip it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adcli.core import golden, isolation
from adcli.core.textcompare import (
    MAX_DIFF_LINES,
    Tolerance,
    first_difference,
    short_diff,
    texts_match,
    tokens,
)

ROOT = Path(__file__).resolve().parent.parent
TOL = Tolerance(1e-4)
needs_fork = pytest.mark.skipif(not isolation.available(), reason="needs POSIX fork")


def adcli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m adcli ARGS` from `cwd`, as a teacher would type it."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "adcli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---------------------------------------------------------------- tokens and tolerance


def test_tokens_keep_words_whole_and_signs_on_numbers() -> None:
    kinds = tokens("tensor([-0.0000,  1.0000e-08]) MulBackward0 x-1 [exit 0]\n")
    assert kinds == [
        ("word", "tensor"),
        ("(", "("),
        ("[", "["),
        ("num", "-0.0000"),
        (",", ","),
        ("num", "1.0000e-08"),
        ("]", "]"),
        (")", ")"),
        ("word", "MulBackward0"),
        ("word", "x"),
        ("-", "-"),
        ("num", "1"),
        ("[", "["),
        ("word", "exit"),
        ("num", "0"),
        ("]", "]"),
        ("nl", "\n"),
    ]


@pytest.mark.parametrize(
    "expected, actual",
    [
        ("tensor([0.7311, 0.2689])\n", "tensor([0.73112, 0.26891])\n"),
        ("loss 0.123456\n", "loss 0.1234567\n"),
        ("tensor(27., grad_fn=<MeanBackward0>)\n", "tensor(27.0001, grad_fn=<MeanBackward0>)\n"),
        ("tensor([-0.0000,  1.0000])\n", "tensor([0.0000, 1.0000])\n"),  # padding differs
        ("1.5000e+00\n", "1.50001\n"),
        ("nan 1.00001\n", "nan 1.0\n"),
    ],
)
def test_numbers_within_the_tolerance_match(expected: str, actual: str) -> None:
    assert texts_match(expected, actual, TOL)
    assert not texts_match(expected, actual)  # exactly, they differ


@pytest.mark.parametrize(
    "expected, actual",
    [
        ("tensor([0.7311, 0.2689])\n", "tensor([0.7311, 0.2699])\n"),  # 0.4 % off
        ("loss 3\n", "loss 3.0\n"),  # an int is not a float
        ("step 10000\n", "step 10001\n"),  # integers compare exactly
        ("[exit 0]\n", "[exit 1]\n"),
        ("nan\n", "inf\n"),
        ("grad_fn=<MulBackward0>\n", "grad_fn=<AddBackward0>\n"),
        ("a\nb\n", "a b\n"),  # line ends are kept
        ("tensor([1.0000, 2.0000])\n", "tensor([1.0000, 2.0000, 3.0000])\n"),
        ("0.\n", "1.0000e-08\n"),  # near 0 only with --abs-tolerance
    ],
)
def test_other_differences_still_fail(expected: str, actual: str) -> None:
    assert not texts_match(expected, actual, TOL)


def test_an_absolute_tolerance_covers_numbers_near_zero() -> None:
    assert texts_match("0.\n", "1.0000e-08\n", Tolerance(1e-4, 1e-6))
    assert not texts_match("0.\n", "1.0000e-05\n", Tolerance(1e-4, 1e-6))


def test_first_difference_skips_lines_within_the_tolerance() -> None:
    expected = "a 1.0\nb 2.0\nc 3.0\n"
    actual = "a 1.00001\nb 2.5\nc 3.0\n"
    first = first_difference(expected, actual, TOL)
    assert first is not None
    assert (first.expected_line, first.actual_line) == (2, 2)
    assert (first.expected, first.actual) == ("b 2.0", "b 2.5")
    assert first_difference(expected, actual) is not None
    assert first_difference(expected, actual).expected_line == 1  # type: ignore[union-attr]
    assert first_difference(expected, expected) is None


def test_first_difference_past_the_end() -> None:
    first = first_difference("a\nb\n", "a\n")
    assert first is not None
    assert (first.expected_line, first.expected, first.actual) == (2, "b", None)


# ---------------------------------------------------------------- short diffs


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def test_long_runs_of_equal_lines_are_elided() -> None:
    expected = numbered(1000)
    actual = expected.replace("line 500\n", "line five hundred\n")
    text = short_diff(expected, actual, "x.out (expected)", "x.ad (actual)")
    assert text.splitlines() == [
        "--- x.out (expected)",
        "+++ x.ad (actual)",
        "@@ -498,5 +498,5 @@ 497 equal lines skipped",
        " line 498",
        " line 499",
        "-line 500",
        "+line five hundred",
        " line 501",
        " line 502",
    ]


def test_each_hunk_says_how_many_lines_it_skipped() -> None:
    expected = numbered(100)
    actual = expected.replace("line 3\n", "x\n").replace("line 60\n", "y\n")
    headers = [line for line in short_diff(expected, actual, "e", "a").splitlines() if "@@" in line]
    assert headers == [
        "@@ -1,5 +1,5 @@",
        "@@ -58,5 +58,5 @@ 52 equal lines skipped",
    ]


def test_a_diff_is_short_even_when_everything_differs() -> None:
    expected = numbered(5000)
    actual = "".join(f"other {i}\n" for i in range(5000))
    lines = short_diff(expected, actual, "e", "a").splitlines()
    assert len(lines) <= MAX_DIFF_LINES + 2
    assert "-line 1" in lines and "+other 0" in lines  # both sides are seen
    assert "-… 4990 more lines" in lines and "+… 4990 more lines" in lines


def test_many_changes_end_with_a_note() -> None:
    expected = numbered(1000)
    actual = "".join(f"line {i}\n" if i % 10 else f"LINE {i}\n" for i in range(1, 1001))
    lines = short_diff(expected, actual, "e", "a").splitlines()
    assert len(lines) == MAX_DIFF_LINES + 3
    assert lines[-1] == "… the rest of the diff is not shown"


def test_a_diff_within_the_tolerance_shows_only_real_changes() -> None:
    expected = "tensor([1.0000, 2.0000])\nloss 0.5000\ndone\n"
    actual = "tensor([1.00001, 2.0000])\nloss 0.7000\ndone\n"
    lines = short_diff(expected, actual, "e", "a", TOL).splitlines()
    assert [line for line in lines if line[:1] in "-+" and line[:3] not in ("---", "+++")] == [
        "-loss 0.5000",
        "+loss 0.7000",
    ]


# ---------------------------------------------------------------- golden.check with grading


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_tolerance_passes_and_update_keeps_the_reference(tmp_path: Path) -> None:
    script = write(tmp_path / "x.ad", "print(1)\n")
    write(tmp_path / "x.out", "tensor([0.3333, 0.6667])\n[exit 0]\n")
    grading = golden.Grading(tolerance=TOL)
    runner = lambda p: ("tensor([0.33333, 0.66667])\n", 0)  # noqa: E731
    outcome = golden.check(script, runner=runner, update=True, grading=grading)
    assert outcome.status == golden.PASSED
    assert (tmp_path / "x.out").read_text() == "tensor([0.3333, 0.6667])\n[exit 0]\n"
    failed = golden.check(script, runner=lambda p: ("tensor([0.3, 0.6667])\n", 0), grading=grading)
    assert not failed.ok
    assert failed.difference is not None and failed.difference.expected_line == 1


STUDENT = """import torch

x = torch.tensor(2.0, requires_grad=True)
{y} = x * x + 3 * x
{y}.backward()
print(x.grad)
"""


def test_a_renamed_variable_passes_with_output_only(tmp_path: Path) -> None:
    pytest.importorskip("adcli.core.runner")
    reference = write(tmp_path / "ref.ad", STUDENT.format(y="y"))
    quiet = golden.Grading(output_only=True)
    assert golden.check(reference, update=True, grading=quiet).status == golden.NEW
    assert (tmp_path / "ref.out").read_text() == "tensor(7.)\n[exit 0]\n"  # no report
    student = write(tmp_path / "student.ad", STUDENT.format(y="loss"))
    (tmp_path / "student.out").write_text((tmp_path / "ref.out").read_text())
    assert golden.check(student, grading=quiet).ok
    # With reports, the name column differs: that is why graders use --output-only.
    write(tmp_path / "ref.ad", STUDENT.format(y="y"))
    golden.check(reference, update=True)
    (tmp_path / "student.out").write_text((tmp_path / "ref.out").read_text())
    outcome = golden.check(student)
    assert not outcome.ok
    assert "-y " in outcome.detail and "+loss " in outcome.detail


def test_output_only_says_when_the_expected_file_holds_reports(tmp_path: Path) -> None:
    script = write(tmp_path / "x.ad", "print(1)\n")
    header = "y.backward() at line 5  retain_graph=False, create_graph=False\n"
    write(tmp_path / "x.out", header + "tensor(5.)\n[exit 0]\n")
    quiet = golden.Grading(output_only=True)
    outcome = golden.check(script, runner=lambda p: ("tensor(5.)\n", 0), grading=quiet)
    assert not outcome.ok
    assert "holds reports; with --output-only, make it with" in outcome.detail
    outcome = golden.check(script, runner=lambda p: ("tensor(5.)\n", 0))
    assert "holds reports" not in outcome.detail


def test_run_all_json_document(tmp_path: Path) -> None:
    good = write(tmp_path / "a.ad", "print(1)\n")
    write(tmp_path / "a.out", "1\n[exit 0]\n")
    bad = write(tmp_path / "b.ad", "print(2)\n")
    write(tmp_path / "b.out", "1\n2\n3\n[exit 0]\n")
    table = {"a.ad": ("1\n", 0), "b.ad": ("1\n5\n3\n", 1)}
    stream = io.StringIO()
    summary = golden.run_all(
        [good, bad],
        runner=lambda p: table[Path(p).name],
        stream=stream,
        color=False,
        json_output=True,
        grading=golden.Grading(output_only=True, tolerance=TOL),
    )
    assert (summary.passed, summary.failed) == (1, 1)
    doc = json.loads(stream.getvalue())
    assert (doc["passed"], doc["failed"], doc["total"]) == (1, 1, 2)
    assert doc["options"]["output_only"] is True and doc["options"]["tolerance"] == 1e-4
    a, b = doc["scripts"]
    assert a["ok"] is True and a["status"] == "passed" and a["first_difference"] is None
    assert a["exit_status"] == 0 and isinstance(a["seconds"], float)
    assert b["ok"] is False and b["exit_status"] == 1 and b["expected_exit_status"] == 0
    assert b["first_difference"] == {
        "expected_line": 2,
        "actual_line": 2,
        "expected": "2",
        "actual": "5",
    }
    assert b["stopped"] is None and b["detail"].startswith("--- ")


# ---------------------------------------------------------------- the command


@needs_fork
def test_cli_json_with_parallel_jobs_keeps_the_order(tmp_path: Path) -> None:
    for i in range(6):
        write(tmp_path / f"s{i}.ad", f"print({i} / 3)\n")
        write(tmp_path / f"s{i}.out", f"{i / 3 + 1e-9 * i}\n[exit 0]\n")
    write(tmp_path / "s5.out", "99.5\n[exit 0]\n")
    done = adcli("test", "--json", "-j", "3", "--tolerance", "1e-6", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert [s["script"] for s in doc["scripts"]] == [f"s{i}.ad" for i in range(6)]
    assert [s["ok"] for s in doc["scripts"]] == [True] * 5 + [False]
    assert doc["scripts"][5]["first_difference"]["expected"] == "99.5"
    assert doc["options"]["jobs"] == 3


def test_cli_refuses_a_bad_tolerance(tmp_path: Path, run_cli) -> None:
    write(tmp_path / "a.ad", "print(1)\n")
    result = run_cli(["test", "--tolerance", "nan", str(tmp_path)])
    assert result.exit_code == 2
    assert "--tolerance: invalid tolerance 'nan'" in result.stderr
    result = run_cli(["test", "--abs-tolerance", "1e-6", str(tmp_path)])
    assert result.exit_code == 2
    assert "--abs-tolerance works with --tolerance" in result.stderr


# ---------------------------------------------------------------- a class of 100


TEMPLATES = [
    """import torch

x = torch.tensor({a}.0, requires_grad=True)
y = x * x * {b} + x
y.backward()
print(x.grad)
""",
    """import torch

w = torch.tensor([{a}.0, {b}.0], requires_grad=True)
loss = (w ** 2).sum()
loss.backward()
print(loss.item(), w.grad)
""",
    """import torch

torch.manual_seed({i})
x = torch.randn(3)
w = torch.ones(3, requires_grad=True)
for step in range(3):
    loss = ((w * x).sum() - {a}) ** 2
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
print(w)
""",
    """import torch

a = torch.tensor({a}.0, requires_grad=True)
b = torch.tensor({b}.0, requires_grad=True)
c = a * b + b.exp()
c.backward()
print(a.grad, b.grad)
""",
]

# A student who forgot to advance the loop, and one who keeps every batch.
HANGS = """import torch

w = torch.tensor(1.0, requires_grad=True)
step = 0
while step < 10:
    loss = (w - 3) ** 2
    loss.backward()
print(w.grad)
"""
HOGS = """import torch

history = []
for step in range(100):
    history.append(torch.zeros(5000, 5000))  # 100 MB each: 10 GB in all
print(len(history))
"""


@needs_fork
@pytest.mark.skipif(bool(os.environ.get("ADCLI_SKIP_SLOW")), reason="ADCLI_SKIP_SLOW is set")
def test_a_class_of_100_scripts_is_graded_in_under_a_minute(tmp_path: Path) -> None:
    """Done when: 100 scripts, one loops forever and one uses 10 GB; `adcli test -j 2`
    grades them in under a minute, exactly those two fail, each with its reason."""
    folder = tmp_path / "class"
    folder.mkdir()
    for i in range(100):
        text = TEMPLATES[i % len(TEMPLATES)].format(i=i, a=i % 7 + 1, b=i % 5 + 2)
        write(folder / f"student_{i:03d}.ad", text)
    made = adcli("test", "--update", "-j", "2", "class", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert made.stdout.endswith("0 passed, 0 failed, 100 new\n")
    # Two students hand in broken work; their expected output stays the reference's.
    write(folder / "student_017.ad", HANGS)
    write(folder / "student_042.ad", HOGS)

    budget = ("--timeout", "10", "--max-memory", "256M")
    start = time.monotonic()
    done = adcli("test", "-j", "2", *budget, "class", cwd=tmp_path)
    took = time.monotonic() - start
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert out.endswith("98 passed, 2 failed\n"), out
    assert out.count("FAIL ") == 2
    assert (
        "FAIL class/student_017.ad\nthe script was stopped: it ran longer than 10 s (--timeout 10)"
    ) in out
    assert (
        "FAIL class/student_042.ad\n"
        "the script was stopped: it ran out of memory (--max-memory 256 MiB)"
    ) in out
    assert "Traceback" not in out + done.stderr
    assert took < 60, f"grading took {took:.1f} s"

    # As JSON (three of them, to stay quick): the reason where a budget ran out.
    names = [f"class/student_{i:03d}.ad" for i in (0, 17, 42)]
    done = adcli("test", "-j", "2", "--json", *budget, *names, cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert (doc["passed"], doc["failed"], doc["total"]) == (1, 2, 3)
    failed = {s["script"]: s for s in doc["scripts"] if not s["ok"]}
    assert set(failed) == {"class/student_017.ad", "class/student_042.ad"}
    assert failed["class/student_017.ad"]["stopped"] == "it ran longer than 10 s (--timeout 10)"
    assert failed["class/student_042.ad"]["stopped"] == (
        "it ran out of memory (--max-memory 256 MiB)"
    )
    assert all(s["exit_status"] == 0 for s in doc["scripts"] if s["ok"])
