"""`adcli repl`: input grouping, echo, reports, meta-commands, .save/.load, completion,
the line editor (through prompt_toolkit's pipe input) and golden sessions.

Golden sessions: each tests/golden/repl/X.repl is fed to the REPL as stdin
(`adcli repl < X.repl`) and must print exactly X.out (stdout and stderr
together, then `[exit N]`). `pytest --update-goldens` rewrites them.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from adcli.core import golden
from adcli.core.options import RunOptions
from adcli.repl.loop import (
    COMMANDS,
    COMPLETE,
    INCOMPLETE,
    Repl,
    enter_action,
    history_path,
    input_status,
    iter_inputs,
    next_indent,
    run_stream,
)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "repl"
SESSIONS = sorted(GOLDEN.glob("*.repl"))
PIPE = RunOptions(width=100, color=False)


# ---------------------------------------------------------------- helpers


def make_repl(options: RunOptions = PIPE) -> tuple[Repl, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Repl(options, out, err), out, err


def feed(text: str, options: RunOptions = PIPE) -> tuple[str, str, Repl]:
    """Run `text` as `adcli repl < file` would: (stdout, stderr, the repl)."""
    repl, out, err = make_repl(options)
    try:
        run_stream(repl, io.StringIO(text))
    finally:
        repl.close()
    return out.getvalue(), err.getvalue(), repl


def inputs(text: str) -> list[str]:
    lines = iter(text.split("\n"))
    return list(iter_inputs(lambda prompt: next(lines, None)))


def session_runner(path: Path) -> tuple[str, int]:
    """What `adcli repl < path` prints into a pipe (run from the file's folder)."""
    buf = io.StringIO()
    repl = Repl(PIPE, buf, buf)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with open(path.name, encoding="utf-8") as f:
            code = run_stream(repl, f)
    finally:
        os.chdir(cwd)
        repl.close()
    return buf.getvalue(), code


def run_script(text: str) -> tuple[str, str, int]:
    """`adcli run` on script text: (stdout, stderr, exit status)."""
    from adcli.core.runner import run_text

    out, err = io.StringIO(), io.StringIO()
    code = run_text(text, "saved.ad", PIPE, SimpleNamespace(out=out, err=err))
    return out.getvalue(), err.getvalue(), code


# ---------------------------------------------------------------- golden sessions


@pytest.mark.parametrize("session", SESSIONS, ids=[s.name for s in SESSIONS])
def test_golden_session(session: Path, request: pytest.FixtureRequest) -> None:
    update = request.config.getoption("--update-goldens")
    outcome = golden.check(session, runner=session_runner, update=update)
    if not outcome.ok:
        pytest.fail(outcome.report(), pytrace=False)


def test_there_are_golden_sessions() -> None:
    assert {s.stem for s in SESSIONS} >= {"basics", "errors", "meta", "seed004"}


@pytest.mark.parametrize("name", ["seed004", "basics"])
def test_saved_session_runs_with_the_same_output(name: str, tmp_path: Path) -> None:
    """The issue's 'done when': a seed tutorial typed line by line, `.save`d, and
    `adcli run` on the saved file prints the same values and reports."""
    text = (GOLDEN / f"{name}.repl").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^exit\n(.*\n)*", "", text)  # stop before leaving
    saved = tmp_path / "saved.ad"
    out, _, _ = feed(text + f".save {saved}\n")
    assert out.endswith(f"to {saved}\n")
    repl_out = out[: out.rindex("saved ")]
    run_out, _, _ = run_script(saved.read_text(encoding="utf-8"))
    assert run_out == repl_out
    assert "backward()" in run_out or name == "basics"


def test_saved_tutorial_runs_clean(tmp_path: Path) -> None:
    saved = tmp_path / "s.ad"
    feed((GOLDEN / "seed004.repl").read_text(encoding="utf-8") + f".save {saved}\n")
    _, err, code = run_script(saved.read_text(encoding="utf-8"))
    assert code == 0, err


def test_cli_repl_reads_stdin(run_cli) -> None:
    result = run_cli(["repl"], input="x = 2\nx * 21\n")
    assert result.exit_code == 0
    assert result.stdout == "42\n"


def test_bare_adcli_reads_stdin_when_it_is_not_a_terminal(run_cli) -> None:
    result = run_cli([], input="'hello'\n")
    assert result.exit_code == 0
    assert result.stdout == "'hello'\n"


def test_cli_repl_options(run_cli) -> None:
    script = "x = tensor(2., requires_grad=True)\ny = x * x\ny.backward()\nx.grad\n"
    quiet = run_cli(["repl", "--quiet"], input=script)
    assert quiet.stdout == "tensor(4.)\n"
    loud = run_cli(["repl", "--width", "60", "--no-history", "--no-color"], input=script)
    assert "y.backward() at line 4" in loud.stdout  # line 1: the saved import
    assert max(len(line) for line in loud.stdout.splitlines()) <= 60
    assert run_cli(["repl", "--width", "5"]).exit_code == 2


def test_cli_help_lists_repl(run_cli) -> None:
    result = run_cli(["repl", "--help"])
    assert result.exit_code == 0
    for option in ("--quiet", "--width", "--no-history", "--no-color", "--full", "--debug"):
        assert option in result.stdout


def test_run_never_imports_the_line_editor(tmp_path: Path) -> None:
    script = tmp_path / "x.ad"
    script.write_text("print(tensor(1.) + 1)\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from adcli.commands.app import app\n"
        f"app(['run', {str(script)!r}], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('prompt_toolkit', 'adcli.repl'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr


def test_repl_module_does_not_import_the_line_editor() -> None:
    code = "import sys, adcli.repl.loop; print('prompt_toolkit' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr


# ---------------------------------------------------------------- reading input


@pytest.mark.parametrize(
    "text, status",
    [
        ("x = 1", COMPLETE),
        ("if x:", INCOMPLETE),
        ("if x:\n    y", INCOMPLETE),
        ("if x:\n    y\n", COMPLETE),
        ("for i in range(3): print(i)", INCOMPLETE),
        ("x = (1,", INCOMPLETE),
        ("x = (1,\n\n", INCOMPLETE),
        ('s = """abc', INCOMPLETE),
        ("x = 1 \\", INCOMPLETE),
        ("x = = 1", COMPLETE),  # an error: the parser says what is wrong
        ("x = 1\ny = 2", COMPLETE),  # a paste
        ("x = 1\nif x:\n    y", INCOMPLETE),
        ("x = 1\nif x:", INCOMPLETE),
        ("x is 1", COMPLETE),  # no SyntaxWarning on the way
        ("(" * 1000, COMPLETE),  # Python's own limit: let adcli report it
    ],
)
def test_input_status(text: str, status: str) -> None:
    assert input_status(text) == status


def test_inputs_end_at_a_blank_line_or_a_dedent() -> None:
    text = (
        "x = 1\n"
        "\n"
        "# a comment between inputs\n"
        "def f(a):\n"
        "    return a\n"
        "f(2)\n"
        "if x:\n"
        "    'yes'\n"
        "else:\n"
        "    'no'\n"
        "\n"
        "m = [1,\n"
        "\n"
        "2]\n"
        ".vars\n"
        "for i in range(2):\n"
        "    i\n"
    )
    assert inputs(text) == [
        "x = 1",
        "def f(a):\n    return a",
        "f(2)",
        "if x:\n    'yes'\nelse:\n    'no'",
        "m = [1,\n\n2]",
        ".vars",
        "for i in range(2):\n    i",
    ]


def test_comment_lines_inside_a_block_stay_in_it() -> None:
    assert inputs("def f():\n# note\n    return 1\n\nf()\n") == [
        "def f():\n# note\n    return 1",
        "f()",
    ]


@pytest.mark.parametrize(
    "line, indent",
    [
        ("def f(x):", "    "),
        ("    for i in range(3):  # loop", "        "),
        ("    return x", ""),
        ("        pass", "    "),
        ("    y = 1", "    "),
        ("x = f(", "    "),
        ("s = '#:'", ""),
    ],
)
def test_next_indent(line: str, indent: str) -> None:
    assert next_indent(line) == indent


def test_enter_action() -> None:
    assert enter_action("x = 1") is None
    assert enter_action("") is None
    assert enter_action(".vars") is None
    assert enter_action("exit") is None
    assert enter_action("def f():") == "\n    "
    assert enter_action("def f():\n    return 1") == "\n"
    assert enter_action("def f():\n    y = 1") == "\n    "
    assert enter_action("def f():\n    y = 1\n    ") is None  # the blank line ends it
    assert enter_action("x = (1,\n    ") == "\n    "  # still in brackets
    # Enter in the middle of a recalled block edits it
    assert enter_action("if x:\n    y\n", cursor=5) == "\n    "


# ---------------------------------------------------------------- echo and reports


def test_echo_is_python_repr_and_none_prints_nothing() -> None:
    out, err, _ = feed("'a'\nNone\n1.5\n[1, 'b']\nprint('p')\nprint\n")
    assert out == "'a'\n1.5\n[1, 'b']\np\n<built-in function print>\n"
    assert err == ""


def test_function_echo_is_like_python() -> None:
    out, _, _ = feed("def f():\n    pass\n\nf\n")
    assert re.fullmatch(r"<function f at 0x[0-9a-f]+>\n", out)


def test_backward_prints_the_report_and_quiet_does_not() -> None:
    script = "x = tensor(3., requires_grad=True)\ny = x ** 2\ny.backward()\nx.grad\n"
    out, _, _ = feed(script)
    assert out.startswith("y.backward() at line 4")
    assert "PowBackward0" in out and out.endswith("tensor(6.)\n")
    quiet, _, _ = feed(script, RunOptions(quiet=True, width=100, color=False))
    assert quiet == "tensor(6.)\n"


def test_autograd_grad_prints_a_report() -> None:
    out, _, _ = feed("x = tensor(3., requires_grad=True)\ng, = autograd.grad(x ** 3, [x])\ng\n")
    assert "torch.autograd.grad" in out or "autograd.grad" in out
    assert out.endswith("tensor(27.)\n")


def test_width_option_sets_the_report_width() -> None:
    script = "x = tensor([1., 2.], requires_grad=True)\n(x * x).sum().backward()\n"
    out, _, _ = feed(script, RunOptions(width=50, color=False))
    assert max(len(line) for line in out.splitlines()) <= 50


def test_show_and_graph_builtins_work_in_the_repl() -> None:
    out, _, _ = feed("x = tensor(1., requires_grad=True)\ny = x * 2\ngraph(y)\nshow(y)\n")
    assert "MulBackward0 → y" in out
    assert "show(y) at line 5" in out


def test_line_numbers_continue_across_inputs() -> None:
    out, err, repl = feed("a = 1\nb = 2\nc = nope\nd = 4\nd.missing\n")
    # line 1 is the `import torch` that .save writes: input starts at line 2
    assert "<stdin>:4:5: error: NameError" in err
    # the failed input gave its line back: `d = 4` is line 4, `d.missing` line 5
    assert "<stdin>:5:1: error: AttributeError" in err
    assert repl.next_line == 5


# ---------------------------------------------------------------- errors


def test_error_then_recovery_keeps_the_state() -> None:
    out, err, repl = feed("x = 5\ny = x +\nz = x / 0\nx + 1\n")
    assert "SyntaxError" in err and "ZeroDivisionError" in err
    assert "^" in err
    assert out == "6\n"
    assert repl.session.variables()["x"] == 5


def test_runtime_error_mid_block_leaves_earlier_effects() -> None:
    out, err, _ = feed("acc = []\nfor i in range(5):\n    acc.append(i)\n    1 / (2 - i)\n\nacc\n")
    assert "ZeroDivisionError" in err
    assert out.splitlines()[-1] == "[0, 1, 2]"


def test_interrupt_a_running_loop_keeps_the_variables() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals need the main thread")
    repl, out, err = make_repl()
    repl.execute("x = tensor(2., requires_grad=True)")
    repl.execute("n = 0")
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        assert repl.execute("while True:\n    n += 1") is True
    finally:
        timer.cancel()
    assert "KeyboardInterrupt: interrupted" in err.getvalue()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    variables = repl.session.variables()
    assert variables["n"] > 0
    repl.execute("x * 3")
    assert out.getvalue().endswith("tensor(6., grad_fn=<MulBackward0>)\n")
    repl.close()


def test_internal_errors_do_not_end_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    repl, out, err = make_repl()

    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug")

    monkeypatch.setattr(repl.session, "run_text", boom)
    repl.execute("x = 1")
    assert "adcli: internal error: ValueError: a bug" in err.getvalue()
    monkeypatch.undo()
    repl.execute("2 + 2")
    assert out.getvalue() == "4\n"


# ---------------------------------------------------------------- meta-commands


def test_every_meta_command_is_in_help() -> None:
    out, _, _ = feed(".help\n")
    for command, _, _ in COMMANDS:
        assert command in out
    assert {c for c, _, _ in COMMANDS} == {
        ".help",
        ".vars",
        ".graph",
        ".show",
        ".reset",
        ".load",
        ".save",
        ".quit",
    }


def test_bare_help_shows_the_commands_unless_it_is_a_variable() -> None:
    out, _, _ = feed("help\n")
    assert ".vars" in out
    out, _, _ = feed("help = 2\nhelp\n")
    assert out == "2\n"


def test_ctrl_c_while_typing_drops_the_input() -> None:
    lines = iter(["def f():", "    return 1", None, "x = 1", None])

    def readline(prompt: str) -> str | None:
        line = next(lines)
        if line is None and prompt == "... ":
            raise KeyboardInterrupt
        return line

    assert list(iter_inputs(readline)) == ["x = 1"]


def test_vars_table() -> None:
    out, _, _ = feed(
        "x = tensor([1., 2.], requires_grad=True)\ny = (x * 2).sum()\nk = 3\ny.backward()\n.vars\n",
        RunOptions(quiet=True, width=100, color=False),
    )
    lines = out.splitlines()
    assert lines[0].split() == [
        "name",
        "type",
        "shape",
        "dtype",
        "requires_grad",
        "is_leaf",
        "grad_fn",
        ".grad",
    ]
    assert lines[2].split() == ["x", "Tensor", "[2]", "float32", "True", "True", "None", "set"]
    assert lines[3].split() == [
        "y",
        "Tensor",
        "[]",
        "float32",
        "True",
        "False",
        "SumBackward0",
        "None",
    ]
    assert lines[4].split() == ["k", "int"]


def test_vars_reads_no_non_leaf_grad_warning() -> None:
    _, err, _ = feed("x = tensor(1., requires_grad=True)\ny = x * 2\n.vars\n")
    assert err == ""


def test_graph_and_show_commands() -> None:
    out, err, _ = feed(
        "x = tensor(1., requires_grad=True)\ny = x.exp()\n.graph y\n.show y\n.show x y\n"
        ".graph\n.show\n.graph zz\n.graph yy\n"
    )
    assert "ExpBackward0 → y" in out
    assert ".show y  (2 nodes)" in out
    assert ".show x y" in out
    assert "usage: .graph NAME" in err and "usage: .show NAME..." in err
    assert "no variable named 'zz'" in err
    assert "did you mean 'y'?" in err


def test_reset_forgets_everything() -> None:
    out, err, repl = feed("x = randn(2)\nx\n.reset\nx\nx = randn(2)\nx\n")
    first, second = out.splitlines()[0], out.splitlines()[-1]
    assert first == second  # the seed was reset too
    assert "session reset" in out
    assert "name 'x' is not defined" in err
    assert repl.script() == "import torch\nx = randn(2)\nprint(x)\n"


def test_unknown_command() -> None:
    _, err, _ = feed(".vras\n.frobnicate\n")
    assert "unknown command '.vras'; did you mean .vars?" in err
    assert "unknown command '.frobnicate'; .help lists the commands" in err


@pytest.mark.parametrize("leave", [".quit", ".exit", "exit", "quit", "exit()", "quit()"])
def test_quit(leave: str) -> None:
    out, _, _ = feed(f"1\n{leave}\n2\n")
    assert out == "1\n"


def test_exit_shadowed_by_a_variable_is_a_variable() -> None:
    out, _, _ = feed("quit = 3\nquit\n4\n")
    assert out == "3\n4\n"


def test_load_runs_a_script_into_the_session(tmp_path: Path) -> None:
    lib = tmp_path / "lib.ad"
    lib.write_text("w = tensor(2., requires_grad=True)\nprint('loaded')\nw\n", encoding="utf-8")
    out, err, repl = feed(f".load {lib}\nw * 2\n")
    assert out == "loaded\ntensor(4., grad_fn=<MulBackward0>)\n"  # a script: no echo
    assert repl.script().startswith("import torch\n" + lib.read_text(encoding="utf-8"))


def test_load_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ad"
    bad.write_text("a = 1\nb = a + nope\nc = 3\n", encoding="utf-8")
    out, err, repl = feed(f".load {bad}\na\n.load {tmp_path / 'missing.ad'}\n.load\n")
    assert f"{bad}:2:9: error: NameError" in err
    assert out == "1\n"
    assert "cannot read" in err and "No such file" in err
    assert "usage: .load FILE" in err
    assert repl.script() == "import torch\na = 1\nprint(a)\n"


def test_save_writes_what_ran(tmp_path: Path) -> None:
    target = tmp_path / "out.ad"
    text = (
        "x = tensor(2., requires_grad=True)\n"
        "y = x * = 2\n"  # a syntax error: not saved
        "y = x * 3\n"
        "bad + 1\n"  # a runtime error: not saved
        "y\n"
        "'s'\n"
        "def f(v):\n"
        "    return v + 1\n"
        "\n"
        "f(1); g = 2\n"
        f".save {target}\n"
    )
    out, _, _ = feed(text)
    assert out.endswith(f"saved 9 lines to {target}\n")
    assert target.read_text(encoding="utf-8") == (
        "import torch\n"
        "x = tensor(2., requires_grad=True)\n"
        "y = x * 3\n"
        "print(y)\n"
        "print(repr('s'))\n"
        "def f(v):\n"
        "    return v + 1\n"
        "\n"
        "print(f(1)); g = 2\n"
    )


def test_save_keeps_the_statements_before_a_failure() -> None:
    _, _, repl = feed("a = 1\nb = 2\nc = a +\n")  # warm up the numbering
    repl.execute("p = 1\nq = p + nope\nr = 3")  # a paste: p took effect
    assert repl.script() == "import torch\na = 1\nb = 2\np = 1\n"
    assert repl.next_line == 5


def test_save_errors(tmp_path: Path) -> None:
    _, err, _ = feed(f".save\n.save {tmp_path}\n")
    assert "usage: .save FILE" in err
    assert "cannot write" in err


# ---------------------------------------------------------------- completion


def completions(repl: Repl, text: str) -> list[str]:
    return repl.complete(text)[1]


def test_complete_names_builtins_and_keywords() -> None:
    repl, _, _ = make_repl()
    repl.execute("weights = tensor([1.], requires_grad=True)")
    assert "weights" in completions(repl, "y = wei")
    assert "print" in completions(repl, "pri")
    assert "while" in completions(repl, "whi")
    assert "tensor" in completions(repl, "tens")
    assert completions(repl, "y = wei")[0] == "weights"
    assert repl.complete("x = wei")[0] == "wei"


def test_complete_torch_namespaces() -> None:
    repl, _, _ = make_repl()
    assert "relu" in completions(repl, "torch.nn.functional.rel")
    assert "grad" in completions(repl, "torch.autograd.g")
    assert "SGD" in completions(repl, "torch.optim.")
    assert "relu" in completions(repl, "F.re")
    assert completions(repl, "torch.nope.") == []
    assert completions(repl, "nothing.") == []


def test_complete_tensor_attributes() -> None:
    repl, _, _ = make_repl()
    repl.execute("t = tensor([1.], requires_grad=True)")
    assert {"grad", "grad_fn"} <= set(completions(repl, "t.gra"))
    assert "backward" in completions(repl, "(t * 2).sum(); t.back")
    assert "zero_" in completions(repl, "t.grad.ze")
    assert "requires_grad_" in completions(repl, "t.data.requires_")
    assert not any(c.startswith("_") for c in completions(repl, "t."))


def test_complete_meta_commands_and_their_arguments() -> None:
    repl, _, _ = make_repl()
    repl.execute("a1 = tensor(1.)")
    repl.execute("a2 = 3")
    assert completions(repl, ".s") == [".save", ".show"]
    assert completions(repl, ".graph a") == ["a1"]  # tensors only
    assert completions(repl, ".show a1 a") == ["a1"]


def test_history_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADCLI_HISTORY", str(tmp_path / "h"))
    assert history_path() == tmp_path / "h"
    monkeypatch.delenv("ADCLI_HISTORY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert history_path() == tmp_path / "state" / "adcli" / "history"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert history_path() == tmp_path / ".local" / "state" / "adcli" / "history"


# ---------------------------------------------------------------- the line editor

pt = pytest.importorskip  # prompt_toolkit is needed only from here on


def editor_session(
    keys: list[str],
    history_file: Path | None = None,
    options: RunOptions = PIPE,
    delay: float = 0.0,
) -> tuple[str, str, Repl]:
    """Type `keys` into the line editor (each string sent whole); (stdout, stderr, repl)."""
    pt("prompt_toolkit")
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from adcli.repl.editor import run_interactive

    repl, out, err = make_repl(options)
    with create_pipe_input() as inp:

        def type_keys() -> None:
            for k in keys:
                inp.send_text(k)
                if delay:
                    time.sleep(delay)  # completion runs in the background: let it land
            inp.send_text("\x04")  # Ctrl-D on an empty line: leave

        if delay:
            feeder = threading.Thread(target=type_keys, daemon=True)
            feeder.start()
        else:
            type_keys()
        code = run_interactive(
            repl, history_file=history_file, input=inp, output=DummyOutput(), banner=False
        )
    assert code == 0
    repl.close()
    return out.getvalue(), err.getvalue(), repl


def test_editor_multiline_def_then_call() -> None:
    # auto-indent supplies the body's indentation; return dedents; Enter on the
    # empty line ends the block
    out, err, repl = editor_session(
        ["def f(x):\r", "y = x * 2\r", "return y + 1\r", "\r", "f(3)\r"]
    )
    assert out == "7\n", err
    assert (
        repl.script() == "import torch\ndef f(x):\n    y = x * 2\n    return y + 1\n\nprint(f(3))\n"
    )


def test_editor_nested_blocks_and_brackets() -> None:
    out, err, _ = editor_session(
        ["for i in range(3):\r", "if i > 0:\r", "print(i)\r", "\r", "v = [1,\r", "2]\r", "v\r"]
    )
    assert out == "1\n2\n[1, 2]\n", err


def test_editor_error_then_recovery() -> None:
    out, err, _ = editor_session(["a = 1\r", "b = a +\r", "a / 0\r", "a + 1\r"])
    assert "SyntaxError" in err and "ZeroDivisionError" in err
    assert "<stdin>:3:8" in err  # points into the input just typed
    assert out == "2\n"


def test_editor_backward_report_and_vars() -> None:
    out, _, _ = editor_session(
        ["x = tensor(2., requires_grad=True)\r", "(x ** 3).backward()\r", "x.grad\r", ".vars\r"]
    )
    assert "(x ** 3).backward() at line 3" in out
    assert "tensor(12.)" in out
    assert re.search(r"x\s+Tensor\s+\[\]\s+float32\s+True\s+True\s+None\s+set", out)


def test_editor_ctrl_c_cancels_the_input() -> None:
    out, _, _ = editor_session(["x = 1\r", "x = 999", "\x03", "x\r"])
    assert out == "1\n"


def test_editor_tab_completes() -> None:
    out, err, _ = editor_session(
        [
            "weights = tensor([2.], requires_grad=True)\r",
            "weig",
            "\t",
            ".retain_g",
            "\t",
            "()\r",
            "weig",
            "\t",
            " * 2\r",
        ],
        delay=0.2,
    )
    assert out == "tensor([4.], grad_fn=<MulBackward0>)\n", err


def test_editor_tab_and_backspace_indent() -> None:
    # Tab at the start of a line indents; Backspace in indentation removes a level
    out, err, _ = editor_session(["if True:\r", "if True:\r", "'in'\r", "\x7f", "'out'\r", "\r"])
    assert out == "'in'\n'out'\n", err
    out, err, _ = editor_session(["x = 0\r", "while x < 2:\r", "\x7f\t", "x += 1\r", "\r", "x\r"])
    assert out == "2\n", err


def test_editor_history_across_sessions(tmp_path: Path) -> None:
    hist = tmp_path / "state" / "history"
    editor_session(["def g():\r", "return 5\r", "\r", "v = 1\r"], history_file=hist)
    assert hist.is_file()
    # Up twice recalls the whole def block as one entry
    out, err, _ = editor_session(["\x1b[A", "\x1b[A", "\r", "g()\r"], history_file=hist)
    assert out == "5\n", err


def test_editor_history_folder_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    out, err, _ = editor_session(["1 + 1\r"], history_file=blocker / "sub" / "history")
    assert out == "2\n"
    assert "history is not kept" in err


def test_editor_quit_command() -> None:
    out, _, _ = editor_session([".quit\r", "1\r"])
    assert out == ""


def test_editor_typed_tutorial_saves_a_script_that_runs_the_same(tmp_path: Path) -> None:
    """The seed tutorial typed key by key (auto-indent supplies the indentation),
    then `.save`: `adcli run` on the file prints what the session printed."""
    keys = []
    for line in (GOLDEN / "seed004.repl").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            keys.append(line.strip() + "\r")
    saved = tmp_path / "typed.ad"
    out, _, _ = editor_session(keys + [f".save {saved}\r"])
    stdin_out, _, _ = feed((GOLDEN / "seed004.repl").read_text(encoding="utf-8"))
    assert out == stdin_out + f"saved {saved.read_text().count(chr(10))} lines to {saved}\n"
    run_out, _, code = run_script(saved.read_text(encoding="utf-8"))
    assert code == 0
    assert run_out == stdin_out


def test_golden_session_through_the_real_command() -> None:
    """`adcli repl < X.repl` in a subprocess prints what the golden file holds."""
    with open(GOLDEN / "errors.repl", encoding="utf-8") as f:
        done = subprocess.run(
            [sys.executable, "-m", "adcli", "repl"],
            stdin=f,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=GOLDEN,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    expected = (GOLDEN / "errors.out").read_text(encoding="utf-8")
    assert golden.render(done.stdout, done.returncode) == expected


def test_a_closed_pipe_ends_the_session_quietly() -> None:
    cmd = f"'{sys.executable}' -m adcli repl < '{GOLDEN / 'seed004.repl'}' | head -n 1"
    done = subprocess.run(
        cmd,
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout == "tensor([[1., 1.],\n"
    assert done.stderr == ""


def test_formula_works_in_the_repl() -> None:
    pytest.importorskip("sympy")
    out, err, _ = feed(
        "x = tensor(2., requires_grad=True)\ny = x * x\nformula(y)\ny.backward()\n"
        "formula(x.grad)\n",
        RunOptions(quiet=True, width=100, color=False),
    )
    assert "x**2" in out, err
    assert "x.grad = 2*x" in out, err
