"""`adcli repl` end to end in a real pseudo-terminal (pexpect): the line editor,
reports, errors, `.vars`, history across restarts and Ctrl-C.

Each test waits for the prompt before typing the next input. A new prompt is
recognised by the bracketed-paste switch prompt_toolkit sends when a prompt
starts (the finished input is redrawn with its `ad>` too, so the prompt text
alone would match too early).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
pytest.importorskip("prompt_toolkit")

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("needs a POSIX pseudo-terminal", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
NEW_PROMPT = "\x1b[?2004h"  # bracketed paste on: a prompt is starting


class Terminal:
    """One `adcli repl` in a pty."""

    def __init__(self, history: Path, *args: str, color: bool = False) -> None:
        env = dict(os.environ)
        env.update(
            PROMPT_TOOLKIT_NO_CPR="1",
            ADCLI_HISTORY=str(history),
            NO_COLOR="" if color else "1",
            TERM="xterm",
            PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        )
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "adcli", "repl", *args],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 120),
        )
        self.prompt()

    def prompt(self) -> None:
        """Wait for a new `ad>` prompt."""
        self.child.expect_exact(NEW_PROMPT)
        self.child.expect_exact("ad>")

    def enter(self, line: str) -> None:
        """Type one line and Enter (inside a block: wait for the `...` line)."""
        self.child.send(line + "\r")

    def run(self, line: str) -> None:
        """Type a complete input, Enter, and wait for its output and the next prompt."""
        self.enter(line)
        self.prompt()

    def output_of(self, line: str) -> str:
        """Run `line`; everything printed before the next prompt."""
        self.enter(line)
        self.child.expect_exact(NEW_PROMPT)
        text = self.child.before
        self.child.expect_exact("ad>")
        return text

    def close(self) -> None:
        self.child.sendeof()  # Ctrl-D on an empty line
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus == 0


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "state" / "history"


def test_multiline_def_then_call(history: Path) -> None:
    t = Terminal(history)
    t.enter("def f(x):")
    t.child.expect_exact("...")
    t.enter("y = x * 7")  # auto-indented
    t.enter("return y")
    t.run("")  # the blank line ends the block
    assert "42" in t.output_of("f(6)")
    t.close()


def test_error_then_recovery(history: Path) -> None:
    t = Terminal(history)
    t.run("v = 5")
    out = t.output_of("w = v +")
    assert "SyntaxError" in out and "<stdin>:3:8" in out and "^" in out  # line 1: import
    out = t.output_of("v / 0")
    assert "ZeroDivisionError: division by zero" in out
    assert "15" in t.output_of("v * 3")
    t.close()


def test_backward_report_and_vars(history: Path) -> None:
    t = Terminal(history)
    t.run("x = tensor(3., requires_grad=True)")
    out = t.output_of("(x * x).backward()")
    assert "(x * x).backward() at line 3" in out
    assert "MulBackward0" in out
    assert "tensor(6.)" in t.output_of("x.grad")
    out = t.output_of(".vars")
    assert "requires_grad" in out and "Tensor" in out and "set" in out
    t.close()


def test_history_is_recalled_after_a_restart(history: Path) -> None:
    t = Terminal(history)
    t.run("remembered = 41")
    t.close()
    assert history.is_file()
    t = Terminal(history)
    t.child.send("\x1b[A")  # Up: the last input of the previous session
    t.child.expect_exact("remembered")  # drawn highlighted: escapes between the tokens
    t.child.expect_exact("41")
    t.run("")
    assert "42" in t.output_of("remembered + 1")
    t.close()


def test_no_history_option_keeps_no_file(history: Path) -> None:
    t = Terminal(history, "--no-history")
    t.run("a = 1")
    t.close()
    assert not history.exists()


def test_ctrl_c_interrupts_a_loop_and_keeps_the_variables(history: Path) -> None:
    t = Terminal(history)
    t.run("x = tensor(2., requires_grad=True)")
    t.run("n = 0")
    t.enter("while True:")
    t.enter("n += 1")
    # a tensor op per step keeps the loop far from the 10,000,000-step limit (a bare
    # `n += 1` reaches it in about a second, before the Ctrl-C below)
    t.enter("y = x * 3")
    t.enter("")  # runs the loop
    time.sleep(1.0)
    t.child.sendintr()
    t.child.expect_exact("KeyboardInterrupt: interrupted")
    t.prompt()
    assert "tensor(6., grad_fn=<MulBackward0>)" in t.output_of("x * 3")
    assert "True" in t.output_of("n > 0")
    t.close()


def test_ctrl_c_cancels_the_input_being_typed(history: Path) -> None:
    t = Terminal(history)
    t.run("k = 1")
    t.child.send("k = 999")
    t.child.sendintr()
    t.prompt()
    assert "1" in t.output_of("k")
    t.close()


def test_tab_completes_torch_members_and_tensor_methods(history: Path) -> None:
    t = Terminal(history)
    t.run("weights = tensor([1., 2.], requires_grad=True)")

    def type_keys(*keys: str) -> None:
        for k in keys:
            t.child.send(k)
            time.sleep(0.3)  # completion runs in the background: let it land

    type_keys("torch.nn.functional.rel", "\t", "(weig", "\t", ".sum())")
    assert "tensor(3., grad_fn=<ReluBackward0>)" in t.output_of("")
    type_keys("weig", "\t", ".nume", "\t", "() * 100")
    assert "200" in t.output_of("")
    t.close()


def test_suggestion_from_history_in_grey(history: Path) -> None:
    """Typing the start of a line from history shows its rest in grey (ANSI 90);
    Right arrow takes it."""
    t = Terminal(history, color=True)
    t.run("suggested_name = 6 * 7")
    t.child.send("sugg")
    t.child.expect_exact("\x1b[0;90m")  # grey: ansibrightblack
    t.child.expect_exact("ested_name = 6 * 7")
    t.child.send("\x1b[C")  # Right arrow
    t.run("")
    assert "42" in t.output_of("suggested_name")
    t.close()


def test_underscore_dir_and_help(history: Path) -> None:
    t = Terminal(history)
    t.run("x = tensor([1., 2.], requires_grad=True)")
    assert "tensor([2., 4.]" in t.output_of("x * 2")
    assert "tensor(6." in t.output_of("_.sum()")
    assert "'backward'" in t.output_of("dir(x)")
    out = t.output_of("help(torch.sum)")
    assert "torch.sum(input, dim=None, keepdim=False, dtype=None, *, out=None)" in out
    assert "Sum of all elements" in out
    t.close()


def test_save_asks_before_overwriting(history: Path, tmp_path: Path) -> None:
    target = tmp_path / "s.ad"
    target.write_text("old\n")
    t = Terminal(history)
    t.run("a = 1")
    t.enter(f".save {target}")
    t.child.expect_exact("exists; overwrite it? [y/N]")
    t.child.send("y\r")
    t.child.expect_exact("saved 2 lines")
    t.prompt()
    assert target.read_text() == "import torch\na = 1\n"
    t.close()
