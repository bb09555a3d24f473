"""Attacks through the commands and the parser (issue 14, items 5 and 6).

Each attempt from the issue ends in a clear error, exit status 1 (2 for a
refused command line), within its bound, and touches no file outside the tree
it was given.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adcli import golden
from adcli.errors import ScriptSyntaxError
from adcli.lang.limits import (
    MAX_INDENT_LEVELS,
    MAX_LINE_CHARS,
    MAX_NESTING_LEVELS,
    MAX_SCRIPT_CHARS,
    check_text,
)
from adcli.lang.parser import parse
from adcli.options import RunOptions
from adcli.repl import Repl, run_stream
from adcli.source import Source

ROOT = Path(__file__).resolve().parent.parent
SECRET = "the grader's secret line"


def adcli(
    *args: str, cwd: Path, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "adcli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - start


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the tree under test."""
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


# ---------------------------------------------------------------- parser limits


def limit_error(text: str) -> ScriptSyntaxError:
    start = time.monotonic()
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("x.ad", text))
    assert time.monotonic() - start < 1.0
    assert info.value.kind == "LimitError"
    return info.value


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("minus_line", "x = " + "-" * 2_000_000 + "1\n", "the script is longer than 1,000,000"),
        ("many_lines", "x = 1\n" * 500_000, "the script is longer than 1,000,000"),
        ("long_sum", "x = " + "+".join(["1"] * 1_500_000) + "\n", "the script is longer"),
    ],
)
def test_the_issues_parser_attacks_fail_fast(name: str, text: str, message: str) -> None:
    assert message in limit_error(text).message


def test_a_long_line() -> None:
    text = "x = 1\ny = [" + "1," * MAX_LINE_CHARS + "]\n"
    err = limit_error(text)
    assert err.message == f"line 2 is longer than {MAX_LINE_CHARS:,} characters, the limit"
    assert (err.span.line, err.span.column) == (2, MAX_LINE_CHARS + 1)


def test_nesting_is_checked_before_parsing() -> None:
    deep = MAX_NESTING_LEVELS + 1
    err = limit_error("x = " + "[" * deep + "]" * deep + "\n")
    assert err.message == f"too many nested parentheses (the limit is {MAX_NESTING_LEVELS} levels)"
    assert err.span.column == 5 + MAX_NESTING_LEVELS
    err = limit_error("x = (" + "-\n" * deep + "1)\n")
    assert "too many nested unary operators" in err.message
    err = limit_error("x = " + "not " * deep + "1\n")
    assert "too many nested unary operators" in err.message


def test_indentation_levels() -> None:
    blocks = "".join(" " * i + "if 1:\n" for i in range(MAX_INDENT_LEVELS + 1))
    err = limit_error(blocks + " " * (MAX_INDENT_LEVELS + 1) + "pass\n")
    assert err.message == f"too many levels of indentation (the limit is {MAX_INDENT_LEVELS})"
    assert err.span.line == MAX_INDENT_LEVELS + 2
    ok = "".join(" " * i + "if 1:\n" for i in range(MAX_INDENT_LEVELS)) + " " * 100 + "pass\n"
    check_text(Source("x.ad", ok), ok)


def test_text_in_strings_and_comments_is_not_counted() -> None:
    banner = "# " + "-" * 3000 + " (((((\n"
    text = banner + 's = "' + "(" * 3000 + '"\nt = """\n' + "[" * 3000 + '\n"""\n'
    check_text(Source("x.ad", text), text)


def test_real_scripts_are_far_below_the_limits() -> None:
    for path in (ROOT / "tests").rglob("*.ad"):
        text = path.read_text(encoding="utf-8")
        if len(text) < MAX_SCRIPT_CHARS and "limit" not in path.name:
            try:
                check_text(Source(path.name, text), text)
            except ScriptSyntaxError as e:  # pragma: no cover - the failure message
                pytest.fail(f"{path}: {e.message}")


def test_a_huge_script_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "big.ad").write_text("x = " + "-" * 2_000_000 + "1\n")
    done, took = adcli("run", "big.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "big.ad:1:1000001: error: LimitError: the script is longer than 1,000,000 characters"
    )
    assert "Traceback" not in done.stderr
    assert took < 10


# ---------------------------------------------------------------- adcli test and symlinks


def test_adcli_test_refuses_a_symlinked_expected_file(tmp_path: Path, secret: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "x.ad").write_text("print(1)\n")
    (tree / "x.out").symlink_to(secret)
    (tree / "ok.ad").write_text("print(2)\n")
    (tree / "ok.out").write_text("2\n[exit 0]\n")
    done, _ = adcli("test", "tree", cwd=tmp_path)
    assert done.returncode == 1
    assert SECRET not in done.stdout + done.stderr
    assert "FAIL tree/x.ad\nrefusing to read tree/x.out: it is a symbolic link\n" in done.stdout
    assert done.stdout.endswith("1 passed, 1 failed\n")


def test_adcli_test_refuses_a_symlinked_script(tmp_path: Path, secret: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "y.ad").symlink_to(secret)
    done, _ = adcli("test", "tree", cwd=tmp_path)
    assert done.returncode == 1
    assert SECRET not in done.stdout + done.stderr
    assert "refusing to run tree/y.ad: it is a symbolic link" in done.stdout


def test_adcli_test_does_not_enter_a_symlinked_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "z.ad").write_text("print(3)\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.ad").write_text("print(1)\n")
    (tree / "linked").symlink_to(elsewhere)
    assert [p.name for p in golden.find_scripts([tree])] == ["a.ad"]


def test_update_does_not_write_through_a_symlink(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "x.ad").write_text("print(1)\n")
    (tmp_path / "x.out").symlink_to(secret)
    summary = golden.run_all(
        [tmp_path / "x.ad"], update=True, runner=lambda p: ("1\n", 0), stream=io.StringIO()
    )
    assert summary.failed == 1
    assert secret.read_text() == SECRET + "\n"


# ---------------------------------------------------------------- adcli graph -o


GRAPH = "import torch\nx = torch.tensor(2., requires_grad=True)\ny = x * 3\ny.backward()\n"


def test_graph_refuses_a_symlinked_folder(tmp_path: Path) -> None:
    (tmp_path / "g.ad").write_text(GRAPH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "g.ad").write_text(GRAPH)
    (work / "sub").symlink_to(elsewhere)
    done, _ = adcli("graph", "g.ad", "-o", "sub/out.dot", cwd=work)
    assert done.returncode == 2
    assert done.stderr == (
        f"adcli: error: refusing to write 'sub/out.dot': '{work / 'sub'}' is a symbolic link\n"
    )
    assert not (elsewhere / "out.dot").exists()


def test_graph_refuses_a_symlinked_file_even_with_force(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "g.ad").write_text(GRAPH)
    (tmp_path / "out.dot").symlink_to(secret)
    done, _ = adcli("graph", "g.ad", "-o", "out.dot", "--force", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "adcli: error: refusing to write 'out.dot': it is a symbolic link\n"
    assert secret.read_text() == SECRET + "\n"


def test_graph_overwrites_only_with_force(tmp_path: Path) -> None:
    (tmp_path / "g.ad").write_text(GRAPH)
    (tmp_path / "out.dot").write_text("keep me\n")
    done, _ = adcli("graph", "g.ad", "-o", "out.dot", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "adcli: error: 'out.dot' exists; use --force to overwrite it\n"
    assert (tmp_path / "out.dot").read_text() == "keep me\n"
    done, _ = adcli("graph", "g.ad", "-o", "out.dot", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.dot").read_text().startswith("digraph")


def test_safe_write_refuses_links_that_appear_late(tmp_path: Path, secret: Path) -> None:
    from adcli.safefiles import Refused, write_file

    target = tmp_path / "late.txt"
    target.symlink_to(secret)
    with pytest.raises(Refused):
        write_file(str(target), "x", overwrite=True)
    with pytest.raises(Refused):
        write_file(str(target), "x")
    assert secret.read_text() == SECRET + "\n"


# ---------------------------------------------------------------- the REPL


def test_piped_dot_commands_are_ignored(tmp_path: Path, secret: Path) -> None:
    target = tmp_path / "bashrc"
    text = f"x = 1\n.save {target}\n.load {secret}\nprint(x + 1)\n"
    done, _ = adcli("repl", cwd=tmp_path, stdin=text)
    assert done.returncode == 0
    assert done.stdout == "2\n"
    assert not target.exists()
    assert SECRET not in done.stdout + done.stderr
    note = (
        "dot-commands are obeyed only from a terminal "
        "(adcli repl --commands obeys them in piped input)"
    )
    assert done.stderr == f"ignored .save: {note}\nignored .load: {note}\n"


def test_commands_flag_obeys_them(tmp_path: Path) -> None:
    target = tmp_path / "saved.ad"
    done, _ = adcli("repl", "--commands", cwd=tmp_path, stdin=f"x = 1\n.save {target}\n")
    assert done.returncode == 0
    assert target.read_text() == "import torch\nx = 1\n"


def feed(text: str, *, confirm=None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(RunOptions(width=100, color=False), out, err)
    repl.confirm = confirm
    try:
        run_stream(repl, io.StringIO(text))
    finally:
        repl.close()
    return out.getvalue(), err.getvalue()


def test_save_never_overwrites_without_a_yes(tmp_path: Path) -> None:
    target = tmp_path / "s.ad"
    target.write_text("old\n")
    _, err = feed(f"x = 1\n.save {target}\n")
    assert err == f"not saved: '{target}' exists (.save overwrites only when you confirm)\n"
    assert target.read_text() == "old\n"
    questions: list[str] = []
    _, err = feed(f"x = 1\n.save {target}\n", confirm=lambda q: questions.append(q) or False)
    assert target.read_text() == "old\n"
    assert questions == [f"{target} exists; overwrite it? [y/N] "]
    out, _ = feed(f"x = 1\n.save {target}\n", confirm=lambda q: True)
    assert out == f"saved 2 lines to {target}\n"
    assert target.read_text() == "import torch\nx = 1\n"


def test_save_refuses_a_symlink(tmp_path: Path, secret: Path) -> None:
    link = tmp_path / "s.ad"
    link.symlink_to(secret)
    _, err = feed(f"x = 1\n.save {link}\n", confirm=lambda q: True)
    assert err == f"refusing to write '{link}': it is a symbolic link\n"
    assert secret.read_text() == SECRET + "\n"
