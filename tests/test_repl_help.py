"""The REPL's `_`, `dir(x)`, `help(x)`, `.save`'s `import torch` line and the
grey suggestions from history (issue 13 item 8). Golden: tests/golden/repl/dir_help."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from adcli.core.options import RunOptions
from adcli.repl.help import script_dir
from adcli.repl.loop import FIRST_LINE, Repl, run_stream

PIPE = RunOptions(width=100, color=False)


def feed(text: str) -> tuple[str, str, Repl]:
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(PIPE, out, err)
    try:
        run_stream(repl, io.StringIO(text))
    finally:
        repl.close()
    return out.getvalue(), err.getvalue(), repl


# ---------------------------------------------------------------- _


def test_underscore_is_the_last_value_shown() -> None:
    out, err, _ = feed("2 + 3\n_ * 10\nprint('x')\n_\n")
    assert out == "5\n50\nx\n50\n" and err == ""


def test_underscore_before_any_value_is_a_name_error() -> None:
    _, err, _ = feed("_\n")
    assert "NameError: name '_' is not defined" in err


def test_a_variable_named_underscore_hides_it_and_is_not_overwritten() -> None:
    out, _, repl = feed("_ = 'mine'\n1 + 1\n_\n")
    assert out == "2\n'mine'\n"
    assert repl.session.variables()["_"] == "mine"


# ---------------------------------------------------------------- dir


def test_dir_lists_what_the_guard_lets_a_script_read() -> None:
    from adcli.autograd.tensor import Tensor

    _, _, repl = feed("x = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\n")
    x = repl.session.variables()["x"]
    names = script_dir(x)
    assert names == sorted(names)
    assert {"backward", "grad", "requires_grad", "shape", "sum"} <= set(names)
    assert set(names) <= set(Tensor.__ad_attrs__)
    assert not any(n.startswith("_") for n in names)
    # every name dir lists can be read by a script, and one it does not list cannot
    out, err, _ = feed(
        "x = torch.ones(2, requires_grad=True)\n"
        "y = (x * 2).sum()\n"
        "all(n in dir(x) for n in ['T', 'mT', 'grad_fn', 'is_leaf'])\n"
        "'data_' in dir(x)\n"
        "dir(y.grad_fn)\n"
    )
    assert out.splitlines()[:2] == ["True", "False"]
    assert "next_functions" in out and "_saved_self" not in out.splitlines()[0]


def test_dir_reads_no_attribute() -> None:
    """Reading .grad of a non-leaf warns; dir() never reads it."""
    _, err, _ = feed("x = torch.ones(2, requires_grad=True)\ny = x * 2\nd = dir(y)\n")
    assert err == ""


def test_dir_of_modules_lists_script_and_plain_values() -> None:
    out, err, _ = feed(
        "'Linear' in dir(nn)\n"
        "dir({})[:3]\n"
        "class A:\n"
        "    k = 1\n"
        "    def __init__(self):\n"
        "        self.v = 2\n"
        "        self._p = 3\n"
        "\n"
        "dir(A())\n"
        "dir(A)\n"
        "a = 1\n"
        "dir()\n"
    )
    assert err == ""
    assert out.splitlines() == [
        "True",
        "['clear', 'copy', 'get']",
        "['_p', 'k', 'v']",
        "['k']",
        "['A', 'a']",
    ]


def test_dir_with_two_arguments_is_a_type_error() -> None:
    _, err, _ = feed("dir(1, 2)\n")
    assert "TypeError: dir expected at most 1 argument, got 2" in err


# ---------------------------------------------------------------- help


def test_help_shows_the_call_and_the_first_sentence_of_the_doc() -> None:
    out, err, _ = feed("help(torch.sum)\nhelp(torch.nn.functional.relu)\nhelp('torch.exp')\n")
    assert err == ""
    lines = out.splitlines()
    # PyTorch's own parameter names (adcli.autograd.signatures)
    assert lines[0] == "torch.sum(input, dim=None, keepdim=False, dtype=None, *, out=None)"
    assert lines[1] == "    Sum of all elements, or over `dim`."
    assert lines[2] == "torch.nn.functional.relu(input, inplace=False)"
    assert lines[4].startswith("torch.exp(")


def test_help_of_methods_attributes_classes_and_values() -> None:
    out, err, _ = feed(
        "x = torch.ones(2, requires_grad=True)\n"
        "help(x.backward)\n"
        "help('Tensor.grad')\n"
        "help(nn.Linear)\n"
        "help(x)\n"
        "help(torch.optim)\n"
        "help(print)\n"
        "help(2.5)\n"
    )
    assert err == ""
    assert out.startswith("Tensor.backward(gradient=None, retain_graph=None,")
    assert "Tensor.grad: an attribute\n    The accumulated gradient" in out
    assert "class torch.nn.Linear(in_features, out_features, bias=True" in out
    assert "Tensor: a tensor of shape [2], dtype torch.float32" in out
    assert "module torch.optim\n" in out
    assert "print(...)\n    Write the values to the output" in out
    assert "a Python float\n" in out


def test_help_of_an_unknown_or_private_name() -> None:
    out, err, _ = feed("help('torch.nosuch')\nhelp('Tensor._grad')\nhelp('os.system')\n")
    assert err == ""
    assert out.count("No documentation found for") == 3


def test_bare_help_and_help_call_show_the_commands() -> None:
    out, _, _ = feed("help()\n")
    assert out.startswith("Commands:") and "help(x) shows a short" in out
    out, _, _ = feed("help\n")
    assert out.startswith("Commands:")


def test_dir_and_help_complete_and_print_like_builtins() -> None:
    out, _, repl = feed("dir\n")
    assert out == "<built-in function dir>\n"
    word, names = repl.complete("he")
    assert "help" in names


# ---------------------------------------------------------------- .save


def test_save_writes_import_torch_first_and_numbers_from_line_2(tmp_path: Path) -> None:
    target = tmp_path / "s.ad"
    out, err, repl = feed(
        f"x = torch.tensor(2., requires_grad=True)\ny = x * x\ny.backward()\n.save {target}\n"
    )
    assert FIRST_LINE == 2
    assert "y.backward() at line 4" in out
    text = target.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "import torch"
    assert text.splitlines()[3] == "y.backward()"  # line 4, as the report said


def test_save_does_not_repeat_an_import_the_session_typed_first() -> None:
    _, _, repl = feed("import torch\nx = 1\n")
    assert repl.script() == "# adcli repl session\nimport torch\nx = 1\n"


def test_save_asks_before_overwriting(tmp_path: Path) -> None:
    target = tmp_path / "s.ad"
    target.write_text("old\n")
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(PIPE, out, err)
    asked: list[str] = []
    repl.confirm = lambda q: asked.append(q) or False
    repl.execute("a = 1")
    repl.execute(f".save {target}")
    assert asked and "exists; overwrite it?" in asked[0]
    assert target.read_text() == "old\n" and "not saved" in err.getvalue()
    repl.confirm = lambda q: True
    repl.execute(f".save {target}")
    assert target.read_text() == "import torch\na = 1\n"
    repl.close()


# ---------------------------------------------------------------- suggestions


def test_the_editor_suggests_from_history_and_right_arrow_takes_it(tmp_path: Path) -> None:
    pytest.importorskip("prompt_toolkit")
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from adcli.repl.editor import make_prompt_session, run_interactive

    history = tmp_path / "history"
    history.write_text("\n# 2026-01-01\n+print('from history', 42)\n")
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(RunOptions(width=100, color=True), out, err)
    session = make_prompt_session(repl, history_file=history)
    assert isinstance(session.auto_suggest, AutoSuggestFromHistory)
    with create_pipe_input() as inp:

        def type_keys() -> None:
            inp.send_text("pri")
            time.sleep(1.5)  # the suggestion is computed in the background (slow under load)
            inp.send_text("\x1b[C")  # Right arrow: take the suggestion
            time.sleep(0.5)
            inp.send_text("\r")
            time.sleep(1.0)
            inp.send_text("\x04")

        feeder = threading.Thread(target=type_keys, daemon=True)
        feeder.start()
        run_interactive(repl, history_file=history, input=inp, output=DummyOutput(), banner=False)
        feeder.join()
    repl.close()
    assert out.getvalue() == "from history 42\n", err.getvalue()


def test_no_colour_means_no_suggestion() -> None:
    pytest.importorskip("prompt_toolkit")
    from adcli.repl.editor import make_prompt_session

    repl = Repl(RunOptions(width=100, color=False), io.StringIO(), io.StringIO())
    assert make_prompt_session(repl).auto_suggest is None
    repl.close()
