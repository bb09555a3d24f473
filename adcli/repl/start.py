"""How `adcli repl` starts: the line editor on a terminal, plain statements otherwise."""

from __future__ import annotations

import os
import sys

from adcli.core.options import RunOptions
from adcli.repl.loop import Repl, _isatty, history_path, run_stream


def main(options: RunOptions, *, history: bool = True, commands: bool = False) -> int:
    """`adcli repl`: the line editor on a terminal, else statements from stdin.

    Meta-commands are obeyed from a terminal; in piped input only with `commands`.
    """
    stdin, stdout = sys.stdin, sys.stdout
    repl = Repl(options, stdout, sys.stderr, commands=commands or _isatty(stdin))
    if _isatty(stdin):
        repl.confirm = _ask
    try:
        if _isatty(stdin) and _isatty(stdout):
            try:
                from adcli.repl.editor import run_interactive
            except ImportError:  # no prompt_toolkit: plain prompts still work
                sys.stderr.write("adcli: prompt_toolkit is not installed: no line editing\n")
                return run_stream(repl, stdin, prompts=sys.stderr)
            return run_interactive(repl, history_file=history_path() if history else None)
        return run_stream(repl, stdin, prompts=sys.stderr if _isatty(stdin) else None)
    finally:
        repl.close()
        if repl.broken:  # no "Exception ignored ... BrokenPipeError" at exit
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass


def _ask(question: str) -> bool:
    """A yes/no question on the terminal; anything but y/yes is no."""
    try:
        sys.stderr.write(question)
        sys.stderr.flush()
        answer = sys.stdin.readline()
    except (KeyboardInterrupt, EOFError, OSError):
        return False
    return answer.strip().lower() in ("y", "yes")
