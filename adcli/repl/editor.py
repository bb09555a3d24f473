"""The REPL's line editor (prompt_toolkit): imported only for a terminal session.

Enter runs the input when it is complete (Python's rules, see
`adcli.repl.loop.enter_action`) and otherwise opens a new line with the right
indentation; Tab indents at the start of a line and completes elsewhere;
Backspace in the indentation removes one level. History keeps whole blocks
as one entry. As you type, the rest of a matching line from history shows in
grey after the cursor (fish-style); Right arrow or Ctrl-E takes it. Without
colour (NO_COLOR, --no-color) there is no grey, so no suggestion either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.styles import Style
from pygments.lexers.python import PythonLexer

from adcli.repl.loop import CONTINUATION, INDENT, PROMPT, Repl, _trim, enter_action

__all__ = ["ReplCompleter", "make_prompt_session", "run_interactive"]

_PATH_ARG = re.compile(r"\s*\.(load|save)\s+(\S*)$")
#: Suggestions from history: grey (ANSI bright black) after the cursor.
_SUGGESTION_STYLE = "fg:ansibrightblack"


class ReplCompleter(Completer):
    """Variable names, builtins, `torch.` members, tensor attributes, meta-commands, files."""

    def __init__(self, repl: Repl) -> None:
        self.repl = repl
        self._paths = PathCompleter(expanduser=True)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        m = _PATH_ARG.match(before)
        if m and "\n" not in before:
            fragment = m.group(2)
            sub = Document(fragment, len(fragment))
            yield from self._paths.get_completions(sub, complete_event)
            return
        word, names = self.repl.complete(before)
        for name in names:
            yield Completion(name, start_position=-len(word))


class _SafeFileHistory(FileHistory):
    """FileHistory that never lets a full disk or a vanished folder end the session."""

    def store_string(self, string: str) -> None:
        try:
            super().store_string(string)
        except OSError:
            pass


def _history(path: Path | None, repl: Repl) -> History:
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as e:
        repl.err.write(
            f"adcli: history is not kept: cannot write {str(path)!r}: {e.strerror or e}\n"
        )
        return InMemoryHistory()
    return _SafeFileHistory(str(path))


def _key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @Condition
    def in_indentation() -> bool:
        from prompt_toolkit.application.current import get_app

        before = get_app().current_buffer.document.current_line_before_cursor
        return before.strip() == ""

    @Condition
    def in_indentation_after_spaces() -> bool:
        from prompt_toolkit.application.current import get_app

        before = get_app().current_buffer.document.current_line_before_cursor
        return before != "" and before.strip() == ""

    @kb.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buf = event.current_buffer
        state = buf.complete_state
        if state is not None:
            if state.current_completion is not None:
                buf.apply_completion(state.current_completion)
                return
            buf.cancel_completion()
        action = enter_action(buf.text, buf.cursor_position)
        if action is None:
            text = _trim(buf.text)
            if text != buf.text:
                buf.document = Document(text, len(text))
            buf.validate_and_handle()
        else:
            buf.insert_text(action)

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        """Alt-Enter: a new line even where Enter would run the input."""
        buf = event.current_buffer
        from adcli.repl.loop import next_indent

        buf.insert_text("\n" + next_indent(buf.document.current_line_before_cursor))

    @kb.add("tab", filter=in_indentation)
    def _indent(event: KeyPressEvent) -> None:
        before = event.current_buffer.document.current_line_before_cursor
        event.current_buffer.insert_text(" " * (len(INDENT) - len(before) % len(INDENT)))

    @kb.add("backspace", filter=in_indentation_after_spaces)
    def _dedent(event: KeyPressEvent) -> None:
        before = event.current_buffer.document.current_line_before_cursor
        n = len(before) % len(INDENT) or len(INDENT)
        event.current_buffer.delete_before_cursor(min(n, len(before)))

    return kb


def make_prompt_session(
    repl: Repl,
    *,
    history_file: Path | None = None,
    input: Any = None,
    output: Any = None,
) -> PromptSession:
    """The prompt_toolkit session: prompts, keys, completion, highlighting, history."""
    color = repl.options.color
    if color is None and os.environ.get("NO_COLOR", ""):
        color = False
    return PromptSession(
        message=PROMPT,
        prompt_continuation=lambda width, line_number, is_soft_wrap: CONTINUATION,
        multiline=True,
        key_bindings=_key_bindings(),
        lexer=PygmentsLexer(PythonLexer),
        completer=ReplCompleter(repl),
        complete_while_typing=False,
        history=_history(history_file, repl),
        enable_history_search=False,
        auto_suggest=AutoSuggestFromHistory() if color is not False else None,
        style=Style.from_dict({"auto-suggestion": _SUGGESTION_STYLE}),
        color_depth=ColorDepth.MONOCHROME if color is False else None,
        tempfile_suffix=".py",
        input=input,
        output=output,
    )


def run_interactive(
    repl: Repl,
    *,
    history_file: Path | None = None,
    input: Any = None,
    output: Any = None,
    banner: bool = True,
) -> int:
    """Read, run, repeat until `.quit`, `exit` or Ctrl-D; returns the exit status."""
    from adcli import __version__

    session = make_prompt_session(repl, history_file=history_file, input=input, output=output)
    if banner:
        repl.out.write(
            f"adcli {__version__}: Python with PyTorch's names, on adcli's autograd. "
            ".help for commands, Ctrl-D to leave.\n"
        )
        repl.out.flush()
    while True:
        try:
            text = session.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C cancels the input being typed
        except EOFError:
            break
        try:
            if not repl.execute(text):
                break
        except KeyboardInterrupt:
            repl.err.write("KeyboardInterrupt\n")
    return 0
