"""`adcli repl`: an interactive session for exploring autograd line by line.

It feels like Python's REPL with adcli's reports added: `ad> ` and `... `
prompts, blocks ended by a blank line, expression statements echoed with
`repr`, and after every `backward()` / `autograd.grad()` the same report as
`adcli run`. Meta-commands start with a dot (`.help` lists them).

Two front ends share one `Repl`:

- on a terminal, a line editor (prompt_toolkit, imported only then, from
  `adcli.repl.editor`): history kept across sessions, Tab completion, syntax
  highlighting, auto-indent;
- otherwise (`adcli repl < session.ad`), statements are read from stdin with no
  prompts and no line editor, so a session is deterministic golden text.

Line numbers run on across inputs as they would in the script `.save` writes:
line 1 is its `import torch`, the first input starts at line 2, an input that
ran without error takes the next lines, one that failed gives them back. So a
report or a note that says "line 7" means line 7 of the saved script, and
`adcli run` on it prints the same reports.

As in Python's REPL, `_` holds the last value shown; `dir(x)` lists the
attributes a script may use on x and `help(x)` prints a short doc
(`adcli.repl.help`).

`adcli run` never imports this module.
"""

from __future__ import annotations

import codeop
import difflib
import os
import re
import signal
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from adcli.core.allocator import keep_freed_memory
from adcli.core.options import RunOptions
from adcli.lang.errors import AdError, ScriptRuntimeError, format_diagnostic

__all__ = [
    "COMMANDS",
    "Repl",
    "enter_action",
    "history_path",
    "input_status",
    "iter_inputs",
    "run_stream",
]

PATH = "<stdin>"  # the name diagnostics give REPL input, as Python's REPL does
#: Line 1 of the script `.save` writes is `import torch`: REPL input starts at line 2.
FIRST_LINE = 2
_IMPORT_TORCH = re.compile(r"import torch\s*(#.*)?")
PROMPT = "ad> "
CONTINUATION = "... "
INDENT = "    "

#: Every meta-command with its argument and what it does (`.help` prints this).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (".help", "", "show this help"),
    (".vars", "", "table of the session's variables (shape, dtype, flags, grad_fn, .grad)"),
    (".graph", "NAME", "draw the graph behind tensor NAME as a tree"),
    (".show", "NAME...", "node table of the graphs behind the tensors, now"),
    (".reset", "", "start afresh: forget every variable, statement and seed"),
    (".load", "FILE", "run a script into this session"),
    (".save", "FILE", "write the statements that ran without error as an .ad script"),
    (".quit", "", "leave (also: exit, quit, Ctrl-D on an empty line)"),
)

_HELP_KEYS = """\
Type Python with PyTorch's names (import torch is optional). A block (def, for,
while, if, with) ends at a blank line; an expression shows its value, and _ holds
the last one. Every backward() and autograd.grad() prints a report of the graph
it went through. dir(x) lists what a script may use on x; help(x) shows a short
doc (also help("torch.sum")).

Keys: Tab completes names, torch. members and tensor methods; Up/Down recall
history (whole blocks); grey text after the cursor is a line from history,
Right arrow takes it; Ctrl-C cancels the input or interrupts a running loop;
Ctrl-D on an empty line leaves."""

_EXITS = {"exit", "quit", "exit()", "quit()"}
_CONTINUES = re.compile(r"(else|elif|except|finally)\b")
_DEDENTS = re.compile(r"\s*(return|pass|break|continue|raise)\b")
_KEYWORDS = (
    "False None True and as assert break continue def del elif else for from if import "
    "in is lambda nonlocal global not or pass raise return try except finally while with"
).split()

COMPLETE, INCOMPLETE = "complete", "incomplete"


# ---------------------------------------------------------------- reading input


def input_status(text: str) -> str:
    """Whether `text` is a whole input (COMPLETE) or needs more lines (INCOMPLETE).

    Python's REPL rules: a compound statement goes on until a blank line (a
    trailing newline here), open brackets and strings go on, and anything that
    cannot become valid is complete (the parser then says what is wrong).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = codeop.compile_command(text, "<input>", "single")
        except (SyntaxError, ValueError, OverflowError):
            # several statements (a paste), or a real error
            try:
                code = codeop.compile_command(text, "<input>", "exec")
            except Exception:
                return COMPLETE
            if code is None:
                return INCOMPLETE
            lines = [ln for ln in text.split("\n") if ln.strip()]
            if lines and lines[-1][:1] in (" ", "\t") and not text.endswith("\n"):
                return INCOMPLETE  # still inside a block: wait for the blank line
            return COMPLETE
        except Exception:  # the compiler's own limits (nesting, memory): let adcli say
            return COMPLETE
    return INCOMPLETE if code is None else COMPLETE


def _is_single_command(line: str) -> bool:
    s = line.strip()
    return s.startswith(".") or s in _EXITS


def next_indent(line: str) -> str:
    """The indentation for the line after `line`: one more after a `:`, one less
    after return/pass/break/continue/raise."""
    lead = line[: len(line) - len(line.lstrip())]
    code = _strip_comment(line).rstrip()
    if code.endswith(":") or code.endswith(("(", "[", "{")):
        return lead + INDENT
    if _DEDENTS.match(line):
        return lead[: max(0, len(lead) - len(INDENT))]
    return lead


def _strip_comment(line: str) -> str:
    """`line` without a trailing `# comment` (quotes are respected, roughly)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def enter_action(text: str, cursor: int | None = None) -> str | None:
    """What Enter does in the line editor: None to run the input, else the text
    to insert (a newline and the next line's indentation).

    `cursor` is the cursor's offset in `text` (default: the end).
    """
    if cursor is None:
        cursor = len(text)
    if not text.strip():
        return None
    lines = text.split("\n")
    before = text[:cursor]
    on_last_line = "\n" not in text[cursor:]
    if len(lines) == 1 and _is_single_command(text):
        return None
    if not on_last_line:  # editing inside a recalled block
        return "\n" + next_indent(before.split("\n")[-1])
    if len(lines) > 1 and not lines[-1].strip():
        body = _trim(text)
        if input_status(body + "\n") == COMPLETE:
            return None
        return "\n" + next_indent(lines[-1])
    if input_status(text) == COMPLETE:
        return None
    return "\n" + next_indent(before.split("\n")[-1])


def _trim(text: str) -> str:
    """`text` without trailing blank lines and trailing spaces on its last line."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if lines:
        lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def iter_inputs(readline: Callable[[str], str | None]) -> Iterator[str]:
    """Group lines into inputs as Python's REPL does, without a line editor.

    `readline(prompt)` returns the next line (with or without its newline) or
    None at the end. A block ends at a blank line or at a line back at column
    0 (unless it goes on with else/elif/except/finally); blank lines and
    comment lines between inputs are skipped.
    """
    buf: list[str] = []
    while True:
        try:
            raw = readline(CONTINUATION if buf else PROMPT)
        except KeyboardInterrupt:  # Ctrl-C while typing: drop the input
            buf = []
            continue
        if raw is None:
            if buf:
                yield "\n".join(buf)
            return
        line = raw.rstrip("\r\n")
        if not buf:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            buf = [line]
        elif not line.strip():
            if input_status("\n".join(buf) + "\n") == COMPLETE:
                yield "\n".join(buf)
                buf = []
            else:
                buf.append(line)  # inside brackets or a string
            continue
        elif (
            line[:1] not in (" ", "\t")
            and not line.startswith("#")
            and not _CONTINUES.match(line)
            and input_status("\n".join(buf) + "\n") == COMPLETE
        ):
            yield "\n".join(buf)
            buf = [line]
        else:
            buf.append(line)
        if len(buf) == 1 and _is_single_command(buf[0]):
            yield buf[0]
            buf = []
        elif input_status("\n".join(buf)) == COMPLETE:
            yield "\n".join(buf)
            buf = []


# ---------------------------------------------------------------- the session


def history_path() -> Path:
    """Where history is kept: $ADCLI_HISTORY, else $XDG_STATE_HOME/adcli/history
    (default ~/.local/state/adcli/history)."""
    explicit = os.environ.get("ADCLI_HISTORY", "")
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state).expanduser() if state else Path.home() / ".local" / "state"
    return base / "adcli" / "history"


class Repl:
    """One REPL session: a persistent interpreter, its reports and meta-commands.

    Front ends hand it whole inputs through `execute` (a statement, a block or
    a meta-command); it writes everything to `out` (results, reports) and `err`
    (diagnostics, warnings). It never reads input itself.
    """

    def __init__(
        self, options: RunOptions, out: IO[str], err: IO[str], *, commands: bool = True
    ) -> None:
        self.options = options
        self.out = out
        self.err = err
        # Meta-commands read and write files: `main` obeys them only from a terminal
        # (or with --commands), so a piped `.save ~/.bashrc` does nothing.
        self.commands = commands
        # Asks the user a yes/no question (`.save` over an existing file); None: no one
        # to ask, so the answer is no.
        self.confirm: Callable[[str], bool] | None = None
        self._console: Any = None
        self.broken = False  # stdout is a pipe whose reader has gone: stop
        self.session: Any = None
        self.saved: list[str] = []  # the statements that ran without error, as script text
        self.next_line = FIRST_LINE  # the line number the next input starts at
        # echoed statements of the input running now: span -> (str value seen, tuple seen)
        self._displayed: dict[tuple[int, int, int, int], tuple[bool, bool]] = {}
        self._builtin_names: dict[int, str] = {}
        self._tracker: Any = None  # adcli.symbolic, once an input mentions formula
        self._new_session()

    # ------------------------------------------------------------ setup
    def _new_session(self) -> None:
        from adcli.core.session import Hooks, Output, Session, SessionOptions

        self.close()
        hooks = Hooks(
            on_event=self._on_event,
            on_show=self._on_show,
            on_graph=self._on_graph,
            on_formula=self._on_formula,
        )
        opts = self.options
        keep_freed_memory()  # as for `adcli run`: large temporaries reuse freed memory
        self.session = Session(
            Output(self._write_out, self._write_err),
            hooks,
            SessionOptions(
                max_steps=opts.max_steps,
                max_depth=opts.max_depth,
                max_numel=opts.max_numel,
                debug=opts.debug,
            ),
        )
        self.session.interp.on_display = self._display
        self._add_builtins()
        self._builtin_names = {
            id(v): k
            for k, v in self.session.interp.builtins.items()
            if _is_bound_to(v, self.session)
        }
        self.saved = []
        self.next_line = FIRST_LINE

    def _add_builtins(self) -> None:
        """`dir` and `help`, as in Python's REPL (a script run by `adcli run` has neither)."""
        from adcli.core.session import Builtin

        interp = self.session.interp
        for name, fn in (("dir", self._dir), ("help", self._help)):
            b = Builtin(name, fn)
            interp.builtins[name] = b  # for completion
            interp.globals["__builtins__"][name] = b  # type: ignore[index]
            self._builtin_names[id(b)] = name

    def _dir(self, *args: Any) -> list[str]:
        """dir(): the session's names; dir(x): the attributes a script may use on x."""
        from adcli.repl.help import script_dir

        if len(args) > 1:
            raise TypeError(f"dir expected at most 1 argument, got {len(args)}")
        if not args:
            return sorted(self.session.variables())
        return script_dir(args[0])

    def _help(self, *args: Any) -> None:
        """help(): the commands; help(x) or help("torch.sum"): a short doc of x."""
        from adcli.repl.help import help_text

        if len(args) > 1:
            raise TypeError(f"help() takes at most 1 argument ({len(args)} given)")
        if not args:
            self._cmd_help("")
            return
        obj, name = args[0], None
        if isinstance(obj, str):
            name = obj.strip()
            found = self._resolve(name)
            if found is None:
                self._write_out(f"No documentation found for {name!r}: not a name scripts use\n")
                return
            obj = found[0]
        self._write_out(help_text(obj, self.session.modules, name) + "\n")

    def _resolve(self, dotted: str) -> tuple[Any] | None:
        """The value a dotted name (`torch.nn.Linear`, `Tensor.backward`, `x`) stands
        for, found through modules, variables and what `dir` lists; None if unknown."""
        from adcli.autograd.tensor import Tensor
        from adcli.lang.host import Namespace
        from adcli.repl.help import member_of

        modules = self.session.modules
        if dotted in modules:
            return (modules[dotted],)
        interp = self.session.interp
        parts = dotted.split(".")
        first = parts[0]
        if first in interp.globals and not first.startswith("__"):
            obj: Any = interp.globals[first]
        elif first in interp.builtins:
            obj = interp.builtins[first]
        elif first == "Tensor":
            obj = Tensor
        else:
            return None
        for part in parts[1:]:
            if isinstance(obj, Namespace):
                if part not in obj.__ad_members__:
                    return None
                obj = obj.__ad_members__[part]
                continue
            found = member_of(obj, part)
            if found is None:
                return None
            obj = found[0]
        return (obj,)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        if self._tracker is not None:
            self._tracker.close()
            self._tracker = None

    def _start_tracker(self) -> Any:
        """Symbolic formulas from now on (as `adcli run` does for a script that
        mentions formula): node formulas work for any tensor, gradient formulas
        for the backward passes run from now."""
        if self._tracker is None:
            from adcli.symbolic import Tracker

            self._tracker = Tracker()
        return self._tracker

    def console(self) -> Any:
        if self._console is None:
            from adcli.render.tables import make_console

            self._console = make_console(
                self.out, width=self.options.width, color=self.options.use_color(self.out)
            )
        return self._console

    # ------------------------------------------------------------ output
    def _write_out(self, s: str) -> None:
        try:
            self.out.write(s)
        except BrokenPipeError:  # `adcli repl < x | head`: the reader has gone
            self.broken = True
            raise

    def _write_err(self, s: str) -> None:
        self._flush()
        self.err.write(s)
        self.err.flush()

    def _flush(self) -> None:
        try:
            self.out.flush()
        except BrokenPipeError:
            self.broken = True
        except (AttributeError, OSError, ValueError):
            pass

    def _error(self, message: str) -> None:
        self._write_err(f"{message}\n")

    def _display(self, value: object) -> None:
        """The echo of an expression statement's value, as Python's REPL writes it."""
        span = self.session.interp.current_span
        if span is not None:
            key = (span.line, span.column, span.end_line, span.end_column)
            was_str, was_tuple = self._displayed.get(key, (False, False))
            self._displayed[key] = (
                was_str or isinstance(value, str),
                was_tuple or isinstance(value, tuple),
            )
        self._write_out(self.repr_of(value) + "\n")
        # as Python's REPL: `_` is the last value shown (a variable `_` hides it)
        self.session.interp.globals["__builtins__"]["_"] = value  # type: ignore[index]

    def repr_of(self, value: object) -> str:
        name = self._builtin_names.get(id(value))
        if name is not None:
            return f"<built-in function {name}>"
        return repr(value)

    def _on_event(self, event: Any, span: Any, call_text: str | None) -> None:
        if self._tracker is not None:
            self._tracker.on_event(event)
        if self.options.quiet:
            return
        from adcli.render.report import build_report
        from adcli.render.tables import render_report

        line = span.line if span is not None else None
        report = build_report(event, line=line, call_text=call_text, full=self.options.full)
        render_report(report, self.console())

    def _on_show(self, tensors: list[Any], span: Any) -> None:
        if self.options.quiet:
            return
        from adcli.render.report import build_show_report
        from adcli.render.tables import render_report

        line = span.line if span is not None else None
        text = None
        source = self.session.interp.current_source or self.session.source
        if span is not None and source is not None:
            text = source.line_text(span.line).strip()
        report = build_show_report(tensors, line=line, call_text=text, full=self.options.full)
        render_report(report, self.console())

    def _on_graph(self, t: Any, span: Any) -> None:
        from adcli.provenance import label_of
        from adcli.render.tree import graph_tree

        self._write_out(graph_tree(t, label_of, full=self.options.full).rstrip("\n") + "\n")

    def _on_formula(self, t: Any, span: Any) -> None:
        self._write_out(self._start_tracker().formula_text(t) + "\n")

    # ------------------------------------------------------------ inputs
    def execute(self, text: str) -> bool:
        """Run one input (statement, block or meta-command); False means: leave."""
        text = _trim(text)
        stripped = text.strip()
        if not stripped:
            return True
        if "\n" not in stripped:
            if stripped.startswith("."):
                return self.meta(stripped)
            if stripped in _EXITS and stripped.rstrip("()") not in self.session.interp.globals:
                return False
            if stripped in ("help", "help()") and "help" not in self.session.interp.globals:
                self._cmd_help("")
                return True
        self.run_code(text)
        return not self.broken

    def run_code(self, text: str, path: str = PATH, *, interactive: bool = True) -> bool:
        """Run script text in the session; print its diagnostic if it fails.

        REPL input (`path` PATH) is numbered from `next_line`; a loaded file
        keeps its own line numbers. Returns True when it ran without error.
        """
        base = self.next_line if path == PATH else 1
        padded = "\n" * (base - 1) + text
        if "formula" in text and self._tracker is None:
            self._start_tracker()
        self._displayed = {}
        error: AdError | None = None
        try:
            self._guarded(lambda: self.session.run_text(padded, path, interactive=interactive))
        except AdError as e:
            error = e
        except BrokenPipeError:
            self.broken = True
        except KeyboardInterrupt:
            self._flush()
            self._error("KeyboardInterrupt")
            self._forget_warnings(base)
            return False
        except Exception as e:  # an adcli bug, not the user's: the session goes on
            self._flush()
            if self.options.debug:
                traceback.print_exception(e, file=self.err)
            self._error(
                "adcli: internal error: "
                + traceback.format_exc().strip().splitlines()[-1]
                + " (run with --debug for the traceback)"
            )
            self._forget_warnings(base)
            return False
        self._flush()
        if self.broken:
            return False
        if error is not None:
            if self.options.debug and getattr(error, "original", None) is not None:
                traceback.print_exception(error.original, file=self.err)
            self._error(format_diagnostic(error).rstrip("\n"))
            explain = getattr(self.session, "explain", None)
            if explain is not None:
                for note in explain(getattr(error, "original", None)):
                    self._error(f"note: {note}")
        self._record(text, padded, path, base, error)
        return error is None

    def _guarded(self, fn: Callable[[], None]) -> None:
        """Run `fn` with Ctrl-C asking the interpreter to stop at its next step
        (a second Ctrl-C stops it at once)."""
        if threading.current_thread() is not threading.main_thread():
            fn()
            return
        interp = self.session.interp
        presses = 0

        def on_sigint(signum: int, frame: Any) -> None:
            nonlocal presses
            presses += 1
            if presses == 1:
                interp.interrupt()
            else:
                raise KeyboardInterrupt

        try:
            old = signal.signal(signal.SIGINT, on_sigint)
        except (ValueError, OSError):  # not allowed here: run without the handler
            fn()
            return
        try:
            fn()
        finally:
            signal.signal(signal.SIGINT, old)

    # ------------------------------------------------------------ .save
    def _record(self, text: str, padded: str, path: str, base: int, error: AdError | None) -> None:
        """Keep what ran without error for `.save`, and move the line numbers on.

        A failed input keeps the top-level statements before the one that
        failed (they took effect); its other lines are numbered again next time.
        """
        if error is None:
            keep = None
        else:
            keep = self._lines_before_failure(padded, path, text, error)
        if path == PATH:
            kept = self._rewrite_displays(text, base, upto=keep)
        else:
            kept = text if keep is None else "\n".join(text.split("\n")[:keep])
        kept = _trim(kept)
        if kept.strip():
            block = kept + "\n"
            if "\n" in kept:
                block += "\n"  # a blank line after a block, as a script would have
            self.saved.append(block)
            self.next_line += block.count("\n")
        self._forget_warnings(self.next_line)

    def _lines_before_failure(self, padded: str, path: str, text: str, error: AdError) -> int:
        """How many lines of `text` come before the top-level statement that failed."""
        if not isinstance(error, ScriptRuntimeError):
            return 0  # a syntax error: nothing ran
        trace = error.traceback
        span = trace[0].span if trace else error.span
        if span is None or (trace and trace[0].source is not None and trace[0].source.path != path):
            return 0
        from adcli.lang.parser import parse
        from adcli.lang.source import Source

        try:
            module = parse(Source(path, padded))
        except AdError:
            return 0
        first = padded.count("\n") - text.count("\n") + 1  # the line `text` starts at
        for stmt in module.body:
            if stmt.lineno <= span.line <= stmt.end_lineno:
                return max(0, stmt.lineno - first)
        return 0

    def _rewrite_displays(self, text: str, base: int, upto: int | None = None) -> str:
        """`text` with each echoed expression statement turned into `print(...)`,
        so `adcli run` on the saved script prints what the REPL showed."""
        from adcli.lang.source import Source

        src = Source(PATH, text)
        edits = []
        for (line, col, end_line, end_col), (needs_repr, bare) in self._displayed.items():
            first, last = line - base + 1, end_line - base + 1
            if first < 1 or (upto is not None and last > upto):
                continue
            start, end = src.offset(first, col), src.offset(last, end_col)
            edits.append((start, end, needs_repr, bare))
        out = src.text
        for start, end, needs_repr, bare in sorted(edits, reverse=True):
            expr = out[start:end]
            if bare and not _enclosed(expr):
                expr = f"({expr})"  # `a, b` is one tuple, not two arguments
            wrapped = f"print(repr({expr}))" if needs_repr else f"print({expr})"
            out = out[:start] + wrapped + out[end:]
        if upto is not None:
            out = "\n".join(out.split("\n")[:upto])
        return out

    def _forget_warnings(self, from_line: int) -> None:
        """Lines from `from_line` on will be reused: let their warnings show again."""
        warned = getattr(self.session, "_warned_lines", None)
        if isinstance(warned, set):
            for key in [k for k in warned if k[0] == PATH and k[1] >= from_line]:
                warned.discard(key)

    def script(self) -> str:
        """The text `.save` writes: `import torch` on line 1 (a comment there when the
        first input was that import), then the statements that ran."""
        body = "".join(self.saved)
        first = body.split("\n", 1)[0].strip()
        header = "# adcli repl session\n" if _IMPORT_TORCH.fullmatch(first) else "import torch\n"
        return header + body

    # ------------------------------------------------------------ meta-commands
    def meta(self, line: str) -> bool:
        """Run a `.command`; False means: leave."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if not self.commands:
            self._error(
                f"ignored {name[:20]}: dot-commands are obeyed only from a terminal "
                "(adcli repl --commands obeys them in piped input)"
            )
            return True
        handler = {
            ".help": self._cmd_help,
            ".vars": self._cmd_vars,
            ".graph": self._cmd_graph,
            ".show": self._cmd_show,
            ".reset": self._cmd_reset,
            ".load": self._cmd_load,
            ".save": self._cmd_save,
        }.get(name)
        if name in (".quit", ".exit"):
            return False
        if handler is None:
            known = [c for c, _, _ in COMMANDS]
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else "; .help lists the commands"
            self._error(f"unknown command {name!r}{hint}")
            return True
        handler(arg)
        return True

    def _cmd_help(self, arg: str) -> None:
        width = max(len(f"{c} {a}".strip()) for c, a, _ in COMMANDS)
        lines = ["Commands:"]
        for cmd, args, what in COMMANDS:
            lines.append(f"  {(cmd + ' ' + args).strip():<{width}}  {what}")
        self._write_out("\n".join(lines) + "\n\n" + _HELP_KEYS + "\n")
        self._flush()

    def _cmd_vars(self, arg: str) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        from adcli.autograd.tensor import Tensor
        from adcli.render.report import format_shape

        variables = self.session.variables()
        if not variables:
            self._write_out("no variables yet\n")
            self._flush()
            return
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),
            header_style="bold",
        )
        for col in (
            "name",
            "type",
            "shape",
            "dtype",
            "requires_grad",
            "is_leaf",
            "grad_fn",
            ".grad",
        ):
            table.add_column(col, overflow="fold")
        for name, value in variables.items():
            if isinstance(value, Tensor):
                fn = value.grad_fn
                cells = [
                    "Tensor",
                    format_shape(value.data_.shape),
                    value.dtype.name,
                    str(value._requires_grad),
                    str(fn is None),
                    fn.name() if fn is not None else "None",
                    "set" if value._grad is not None else "None",
                ]
            else:
                cells = [self._type_name(value)] + [""] * 6
            table.add_row(Text(name), *[Text(c) for c in cells])
        self._print_rich(table)

    def _type_name(self, value: object) -> str:
        from adcli.lang.host import Namespace

        if isinstance(value, Namespace):
            return "module"
        if id(value) in self._builtin_names:
            return "builtin_function"
        return type(value).__name__

    def _print_rich(self, renderable: Any) -> None:
        console = self.console()
        with console.capture() as cap:
            console.print(renderable)
        text = cap.get()
        self.out.write("\n".join(ln.rstrip() for ln in text.split("\n")))
        self._flush()

    def _lookup_tensor(self, command: str, name: str) -> Any:
        from adcli.autograd.tensor import Tensor

        variables = self.session.variables()
        if not name:
            self._error(f"usage: {command} NAME")
            return None
        if name not in variables:
            close = difflib.get_close_matches(name, list(variables), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self._error(f"{command}: no variable named {name!r}{hint}")
            return None
        value = variables[name]
        if not isinstance(value, Tensor):
            kind = self._type_name(value)
            article = "an" if kind[:1] in "aeiou" else "a"
            self._error(f"{command}: {name!r} is {article} {kind}, not a tensor")
            return None
        return value

    def _cmd_graph(self, arg: str) -> None:
        t = self._lookup_tensor(".graph", arg)
        if t is not None:
            self._on_graph(t, None)
            self._flush()

    def _cmd_show(self, arg: str) -> None:
        from adcli.render.report import build_show_report
        from adcli.render.tables import render_report

        names = arg.replace(",", " ").split()
        if not names:
            self._error("usage: .show NAME...")
            return
        tensors = []
        for name in names:
            t = self._lookup_tensor(".show", name)
            if t is None:
                return
            tensors.append(t)
        call = f".show {' '.join(names)}"
        report = build_show_report(tensors, line=None, call_text=call, full=self.options.full)
        render_report(report, self.console())
        self._flush()

    def _cmd_reset(self, arg: str) -> None:
        self._new_session()
        self._write_out("session reset: no variables, nothing to save\n")
        self._flush()

    def _cmd_load(self, arg: str) -> None:
        if not arg:
            self._error("usage: .load FILE")
            return
        path = os.path.expanduser(arg)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            self._error(f"cannot read {arg!r}: {reason}")
            return
        if not text.strip():
            return
        self.run_code(text, arg, interactive=False)

    def _cmd_save(self, arg: str) -> None:
        if not arg:
            self._error("usage: .save FILE")
            return
        from adcli.safefiles import Refused, write_file

        text = self.script()
        path = os.path.expanduser(arg)
        overwrite = False
        if os.path.isdir(path) and not os.path.islink(path):
            self._error(f"cannot write {arg!r}: it is a directory")
            return
        if os.path.lexists(path) and not os.path.islink(path):
            if self.confirm is None or not self.confirm(f"{arg} exists; overwrite it? [y/N] "):
                self._error(f"not saved: {arg!r} exists (.save overwrites only when you confirm)")
                return
            overwrite = True
        try:  # never through a symbolic link; never over a file without asking
            write_file(path, text, overwrite=overwrite)
        except Refused as e:
            self._error(str(e))
            return
        except OSError as e:
            self._error(f"cannot write {arg!r}: {e.strerror or e}")
            return
        n = text.count("\n")
        self._write_out(f"saved {n} line{'s' if n != 1 else ''} to {arg}\n")
        self._flush()

    # ------------------------------------------------------------ completion
    def complete(self, text: str) -> tuple[str, list[str]]:
        """Completions for the end of `text`: (the word being completed, candidates).

        Variable names, builtins and keywords; after a dot, the members of a
        `torch` namespace or a tensor's attributes and methods; at the start of
        an input, the meta-commands.
        """
        stripped = text.lstrip()
        if stripped.startswith(".") and " " not in stripped and "\n" not in text:
            return stripped, sorted(c for c, _, _ in COMMANDS if c.startswith(stripped))
        m = re.match(r"\s*\.(graph|show)\s+(?:\w+[\s,]+)*(\w*)$", text)
        if m:
            word = m.group(2)
            names = self._tensor_names()
            return word, sorted(n for n in names if n.startswith(word))
        m = re.search(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*(\w*)$", text)
        if m:
            word = m.group(2)
            members = self._members_of(re.sub(r"\s+", "", m.group(1)))
            return word, sorted(n for n in members if n.startswith(word) and not n.startswith("_"))
        m = re.search(r"(?<![\w.])([A-Za-z_]\w*)$", text)
        if not m:
            return "", []
        word = m.group(1)
        interp = self.session.interp
        names = set(interp.globals) | set(interp.builtins) | set(_KEYWORDS)
        return word, sorted(n for n in names if n.startswith(word) and not n.startswith("_"))

    def _tensor_names(self) -> list[str]:
        from adcli.autograd.tensor import Tensor

        return [k for k, v in self.session.variables().items() if isinstance(v, Tensor)]

    def _members_of(self, dotted: str) -> list[str]:
        """Attribute names of what `dotted` names, found without running anything."""
        from adcli.autograd.tensor import Tensor
        from adcli.lang.host import Namespace

        interp = self.session.interp
        parts = dotted.split(".")
        first = parts[0]
        if first in interp.globals:
            obj: Any = interp.globals[first]
        elif first in interp.builtins:
            obj = interp.builtins[first]
        else:
            return []
        kind: Any = None  # a class, once only the type is known
        for part in parts[1:]:
            if kind is None and isinstance(obj, Namespace):
                if part not in obj.__ad_members__:
                    return []
                obj = obj.__ad_members__[part]
                continue
            cls = kind or type(obj)
            if cls is Tensor and part in ("data", "grad", "T", "mT"):
                kind = Tensor
                continue
            return []
        if kind is not None:
            return sorted(getattr(kind, "__ad_attrs__", ()))
        if isinstance(obj, Namespace):
            return sorted(obj.__ad_members__)
        return sorted(getattr(type(obj), "__ad_attrs__", ()))


def _enclosed(expr: str) -> bool:
    """Whether `expr` is one parenthesised expression: `(a, b)`, not `(a), b`."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    quote = None
    for i, ch in enumerate(expr):
        if quote:
            if ch == quote and expr[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and i != len(expr) - 1:
                return False
    return True


def _is_bound_to(value: object, owner: object) -> bool:
    return getattr(value, "__self__", None) is owner


# ---------------------------------------------------------------- front ends


def run_stream(repl: Repl, stream: IO[str], prompts: IO[str] | None = None) -> int:
    """The REPL without a line editor: inputs from `stream`, prompts (if any) to `prompts`."""

    def readline(prompt: str) -> str | None:
        if prompts is not None:
            prompts.write(prompt)
            prompts.flush()
        try:
            line = stream.readline()
        except KeyboardInterrupt:
            if prompts is not None:
                prompts.write("\n")
            raise
        return line if line else None

    for text in iter_inputs(readline):
        try:
            if not repl.execute(text):
                break
        except KeyboardInterrupt:
            repl._error("KeyboardInterrupt")
        except BrokenPipeError:
            repl.broken = True
            break
    return 0


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False
