"""Text -> Python `ast.Module`. The only place where Lark exceptions become ScriptSyntaxError.

The Lark LALR parser is built once per process, lazily (about 10 ms; it is
deliberately not cached to a file: see PITFALLS.md). Indentation is handled
by `AdIndenter`, our own reentrant postlexer, which also reports bracket and
indentation mistakes with exact positions (Lark's `DedentError` has none).
"""

from __future__ import annotations

import ast as py
import functools
import keyword
import os
import re
from collections.abc import Callable, Iterator

from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex

from adcli.lang.build import Builder, validate
from adcli.lang.errors import ScriptSyntaxError
from adcli.lang.limits import MAX_SCRIPT_CHARS, check_text
from adcli.lang.source import Source, Span

__all__ = ["parse", "parse_expression", "get_lark", "MAX_SCRIPT_CHARS"]

_OPEN = {"LPAR": "(", "LSQB": "[", "LBRACE": "{"}
_CLOSE = {"RPAR": ")", "RSQB": "]", "RBRACE": "}"}
_TAB = 8

# Keywords that open a block, and how Python names them in
# "expected an indented block after ... on line N".
_BLOCK_WORDS = {
    w: f"'{w}' statement" for w in "if elif else while for try except finally with".split()
}
_BLOCK_WORDS["def"] = "function definition"

Pos = Callable[[int, int], "tuple[int, int]"]


class _Located(Exception):
    """A syntax problem in parse-text coordinates (raised by the postlexer, made
    from Lark's errors by `_token_error` and `_char_error`)."""

    def __init__(
        self, message: str, line: int, column: int, end_column: int, kind: str = "SyntaxError"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.end_column = end_column
        self.kind = kind


class _State:
    """Per-parse postlexer state, kept so error messages can inspect it."""

    __slots__ = ("parens", "levels", "history", "line_start", "block_header")

    def __init__(self) -> None:
        self.parens: list[Token] = []
        self.levels = [0]
        self.history: list[Token] = []  # the last two tokens passed on
        self.line_start: Token | None = None  # first token of the logical line
        self.block_header: Token | None = None


def _indent_width(text: str) -> int:
    width = 0
    for ch in text:
        if ch == "\t":
            width += _TAB - width % _TAB
        elif ch == " ":
            width += 1
    return width


class AdIndenter(PostLex):
    """Python-style INDENT/DEDENT postlexer, reentrant (state per parse call).

    Besides Lark's `Indenter` behaviour it reports, with positions: an unindent
    to no known level, and a block header (``if x:``) not followed by an
    indented block.
    """

    always_accept = ("_NEWLINE",)

    def __init__(self) -> None:
        self.state = _State()
        self.text = ""
        # keyword -> terminal name ("if" -> "IF"), filled in by get_lark().
        self.keyword_types: dict[str, str] = {}

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        """Filter Lark's token stream (called by Lark for each parse)."""
        self.state = _State()
        return self._process(stream, self.state)

    def _process(self, stream: Iterator[Token], st: _State) -> Iterator[Token]:
        last = None
        for tok in stream:
            typ = tok.type
            if typ == "NAME" and tok in _KEYWORDS:
                # The contextual lexer reads a keyword as a NAME where the
                # keyword cannot occur; make it the keyword again so that
                # "x = if" or "else = 1" are errors, as in Python.
                kw = str(tok)
                if kw not in self.keyword_types:
                    raise _Located(
                        f"'{kw}' is not supported in adcli scripts",
                        tok.line,
                        tok.column,
                        tok.end_column,
                    )
                tok = Token.new_borrow_pos(self.keyword_types[kw], kw, tok)
                typ = tok.type
            if typ == "_NEWLINE":
                if st.parens:
                    continue
                yield from self._newline(tok, st, last)
                last = tok
                continue
            if typ in _CLOSE:
                # (one with no opener, or the wrong one, is refused by the parser:
                # `_scan_brackets` words the error, as Python's tokenizer does)
                if st.parens:
                    st.parens.pop()
            elif typ in _OPEN:
                st.parens.append(tok)
            if st.line_start is None:
                st.line_start = tok
            self._remember(st, tok)
            last = tok
            yield tok
        if st.block_header is not None and last is not None:
            raise self._no_block(st, last.end_line + 1, 1)
        while len(st.levels) > 1:
            st.levels.pop()
            yield Token.new_borrow_pos("_DEDENT", "", last) if last else Token("_DEDENT", "")

    @staticmethod
    def _remember(st: _State, tok: Token) -> None:
        st.history.append(tok)
        if len(st.history) > 2:
            del st.history[0]

    def _newline(self, tok: Token, st: _State, last: Token | None) -> Iterator[Token]:
        # A block header is "if ...:" (etc.) with the colon last on the line.
        if (
            last is not None
            and last.type == "COLON"
            and st.line_start is not None
            and str(st.line_start) in _BLOCK_WORDS
        ):
            st.block_header = st.line_start
        st.line_start = None
        self._remember(st, tok)
        yield tok
        indent_str = tok.rsplit("\n", 1)[1]
        indent = _indent_width(indent_str)
        line = tok.end_line
        if indent > st.levels[-1]:
            st.levels.append(indent)
            st.block_header = None
            yield Token.new_borrow_pos("_INDENT", indent_str, tok)
            return
        if st.block_header is not None:
            raise self._no_block(st, line, len(indent_str) + 1)
        while indent < st.levels[-1]:
            st.levels.pop()
            yield Token.new_borrow_pos("_DEDENT", indent_str, tok)
        if indent != st.levels[-1]:
            raise _Located(
                "unindent does not match any outer indentation level",
                line,
                len(indent_str) + 1,
                len(indent_str) + 2,
                "IndentationError",
            )

    def _no_block(self, st: _State, line: int, column: int) -> _Located:
        header = st.block_header
        assert header is not None
        what = _BLOCK_WORDS[str(header)]
        lines = self.text.split("\n")
        if line > len(lines) or not lines[line - 1].strip():
            # Nothing follows the header: point just past its colon.
            colon = st.history[0] if len(st.history) == 2 else header
            line, column = colon.end_line, colon.end_column
        return _Located(
            f"expected an indented block after {what} on line {header.line}",
            line,
            column,
            column + 1,
            "IndentationError",
        )


# Python keywords; those the grammar lacks (class, yield, ...) are refused.
_KEYWORDS = frozenset(keyword.kwlist)

_lark: Lark | None = None
_indenter: AdIndenter | None = None


def _grammar_text() -> str:
    """The grammar: packaged copy first (wheel), then the checkout's grammars/."""
    # A wheel installed as files has it next to the package: read it directly
    # (importlib.resources and pathlib cost ~14 ms of start-up to import).
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in (
        os.path.join(here, "grammars", "ad.lark"),
        os.path.join(os.path.dirname(here), "grammars", "ad.lark"),
    ):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError:
            pass
    import importlib.resources  # a zipped install, say
    from pathlib import Path

    try:
        res = importlib.resources.files("adcli") / "grammars" / "ad.lark"
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
        pass
    path = Path(__file__).resolve().parents[2] / "grammars" / "ad.lark"
    return path.read_text(encoding="utf-8")


def _cache_path() -> str | bool:
    """Where to keep the built parse tables between runs: a folder of the user's own.

    Building the LALR tables takes most of a second, far longer than a short script
    runs, so they are cached. Never in the shared temp folder (another user could
    plant a pickle there): in $XDG_CACHE_HOME/adcli (default ~/.cache/adcli), made
    private, and only used when this user owns it and nobody else can write to it.
    Lark checks the grammar's hash itself and rebuilds when it changed.
    """
    if os.environ.get("ADCLI_NO_PARSER_CACHE"):
        return False
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "adcli")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
    except (OSError, AttributeError):
        return False
    import lark

    # "basic": the lexer option (see get_lark); an older checkout's contextual-lexer
    # tables live in another file instead of being rebuilt back and forth.
    return os.path.join(folder, f"ad-grammar-lark{lark.__version__}-basic.cache")


def get_lark() -> tuple[Lark, AdIndenter]:
    """The process-wide Lark parser and its postlexer (built on first use)."""
    global _lark, _indenter
    if _lark is None or _indenter is None:
        indenter = AdIndenter()
        options = dict(
            parser="lalr",
            # One lexer for the whole grammar, not Lark's default contextual
            # lexer (one per parser state: 146 of them built at every start,
            # ~12 ms, and a slower first parse). Keywords still lex as keywords
            # (Lark re-types a NAME that spells one); the grammar has no other
            # terminals that only the parser state could tell apart.
            lexer="basic",
            postlex=indenter,
            propagate_positions=False,
            maybe_placeholders=True,
            start=["start", "eval_input"],
        )
        try:
            _lark = Lark(_grammar_text(), cache=_cache_path(), **options)
        except Exception:  # an unreadable or stale cache must never stop a run
            _lark = Lark(_grammar_text(), **options)
        for term in _lark.terminals:
            value = getattr(term.pattern, "value", None)
            if term.pattern.type == "str" and value in _KEYWORDS:
                indenter.keyword_types[value] = term.name
        _indenter = indenter
    return _lark, _indenter


# ------------------------------------------------------------------- errors

_EXPR_START = {"NAME", "DEC_NUMBER", "LPAR", "LSQB", "MINUS"}
_STMT_START = {"PASS", "RETURN", "IF", "DEF"}
_ATOM_TOKENS = frozenset(
    "NAME DEC_NUMBER HEX_NUMBER OCT_NUMBER BIN_NUMBER FLOAT_NUMBER STRING LONG_STRING"
    " NONE TRUE FALSE".split()
)
_FIRST_INDENT = re.compile(r"(?:[ \t\f]*(?:#[^\n]*)?\n)*([ \t\f]+)(?=[^\s#])")


def _end_of(text: str) -> tuple[int, int]:
    """Line and column just past the last non-blank character."""
    lines = text.rstrip().split("\n")
    return len(lines), len(lines[-1]) + 1


def _scan_brackets(text: str) -> _Located | None:
    """The first bracket problem in the whole text, as Python's tokenizer sees it.

    Like CPython, a bracket left open at the end of the file (or a closing
    bracket that does not match) takes priority over a later parse error.
    """
    stack: list[tuple[str, int, int]] = []
    i, n = 0, len(text)
    line, line_start = 1, 0
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            line_start = i + 1
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "'\"":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n" and len(quote) == 1:
                    break
                j += 1
            for k in range(i, min(j, n)):
                if text[k] == "\n":
                    line += 1
                    line_start = k + 1
            i = j + len(quote)
            continue
        elif ch in "([{":
            stack.append((ch, line, i - line_start + 1))
        elif ch in ")]}":
            col = i - line_start + 1
            if not stack:
                return _Located(f"unmatched '{ch}'", line, col, col + 1)
            opener, oline, _ = stack.pop()
            if "([{".index(opener) != ")]}".index(ch):
                where = "" if oline == line else f" on line {oline}"
                return _Located(
                    f"closing parenthesis '{ch}' does not match opening parenthesis"
                    f" '{opener}'{where}",
                    line,
                    col,
                    col + 1,
                )
        i += 1
    if stack:
        opener, oline, ocol = stack[-1]
        return _Located(f"'{opener}' was never closed", oline, ocol, ocol + 1)
    return None


def _token_error(exc: UnexpectedToken, text: str, st: _State) -> _Located:
    """The syntax problem an unexpected token shows."""
    tok = exc.token
    typ = tok.type
    expected = set(exc.expected or ())
    if typ == "$END":
        line, col = _end_of(text)
        end = col + 1
    else:
        line, col = tok.line, tok.column
        end = tok.end_column if tok.end_line == tok.line else col + 1
    if typ == "_NEWLINE":
        end = col + 1
    if typ == "_INDENT":
        width = len(str(tok))
        return _Located("unexpected indent", tok.end_line, 1, width + 1, "IndentationError")
    brackets = _scan_brackets(text)
    if brackets is not None:
        return brackets
    # The previous token: the postlexer may or may not have seen `tok` yet.
    hist = [t for t in st.history if t is not tok and (t.line, t.column) < (tok.line, tok.column)]
    prev = hist[-1] if hist and typ != "$END" else None
    if st.parens and "COMMA" in expected and (typ in _ATOM_TOKENS or typ in _OPEN):
        start = prev.column if prev is not None and prev.line == line else col
        return _Located("invalid syntax. Perhaps you forgot a comma?", line, start, end)
    if typ == "EQUAL" and "EQUAL" not in expected and not _EXPR_START <= expected:
        return _Located("invalid syntax. Maybe you meant '==' instead of '='?", line, col, end)
    if "ELSE" in expected and "IF" not in expected and typ in ("_NEWLINE", "$END", "RPAR", "COMMA"):
        return _Located("expected 'else' after 'if' expression", line, col, end)
    if "COLON" in expected and typ in ("_NEWLINE", "$END") and not expected & set(_CLOSE):
        return _Located("expected ':'", line, col, end)
    if _EXPR_START <= expected and not _STMT_START & expected:
        return _Located("expected an expression", line, col, end)
    if (
        prev is not None
        and prev.type == "NAME"
        and str(prev) in ("print", "exec")
        and typ in _ATOM_TOKENS
        and prev.line == tok.line
    ):
        return _Located(
            f"Missing parentheses in call to '{prev}'. Did you mean {prev}(...)?",
            prev.line,
            prev.column,
            end,
        )
    return _Located("invalid syntax", line, col, end)


def _char_error(exc: UnexpectedCharacters, text: str) -> _Located:
    line, col = exc.line, exc.column
    rest = text[exc.pos_in_stream :]
    ch = exc.char
    if ch in "'\"":
        if rest.startswith(ch * 3):
            last, _ = _end_of(text)
            msg = f"unterminated triple-quoted string literal (detected at line {last})"
        else:
            msg = f"unterminated string literal (detected at line {line})"
        return _Located(msg, line, col, col + 1)
    if ch == "\\":
        return _Located(
            "unexpected character after line continuation character", line, col, col + 1
        )
    if not ch.isprintable():
        return _Located(f"invalid non-printable character U+{ord(ch):04X}", line, col, col + 1)
    return _Located(f"invalid character '{ch}' (U+{ord(ch):04X})", line, col, col + 1)


def _run_lark(text: str, start: str, source: Source, pos: Pos, prefix: str = "") -> object:
    lark, indenter = get_lark()
    indenter.text = text
    try:
        return lark.parse(text, start=start)
    except _Located as exc:
        problem = exc
    except UnexpectedToken as exc:
        problem = _token_error(exc, text, indenter.state)
    except UnexpectedCharacters as exc:
        problem = _char_error(exc, text)
    except (UnexpectedInput, LarkError, AssertionError, RecursionError):
        hist = indenter.state.history
        line, col = (hist[-1].line, hist[-1].column) if hist else _end_of(text)
        problem = _Located("invalid syntax", line, col, col + 1)
    line, col = pos(problem.line, problem.column)
    _, end_col = pos(problem.line, problem.end_column)
    span = Span(line, col, line, max(end_col, col + 1))
    raise ScriptSyntaxError(prefix + problem.message, span, source, kind=problem.kind) from None


def parse_expression(source: Source, text: str, line: int, column: int) -> py.expr:
    """Parse `text`, found at `line`/`column` of `source`, as one expression.

    Used for f-string fields; spans point into `source`.
    """
    builder = Builder(source, functools.partial(parse_expression, source), line, column)
    tree = _run_lark("(" + text + ")\n", "eval_input", source, builder.pos, "f-string: ")
    return builder.build(tree)  # type: ignore[arg-type]


def parse(source: Source) -> py.Module:
    """Parse a whole script into Python's `ast.Module` (see `adcli.lang.build`),
    with the script's `source` as the module's attribute of that name.

    Raises ScriptSyntaxError (kind "SyntaxError", "IndentationError", or
    "LimitError" for absurd size or nesting, see `adcli.lang.limits`) with the
    position and Python's wording.
    """
    text = source.text
    check_text(source, text)  # size, line length, nesting: before any parsing work
    if not text.endswith("\n"):
        text += "\n"  # Lark's indenter needs a final newline (PITFALLS.md)
    m = _FIRST_INDENT.match(text)
    if m:
        line = text.count("\n", 0, m.start(1)) + 1
        raise ScriptSyntaxError(
            "unexpected indent",
            Span(line, 1, line, len(m.group(1)) + 1),
            source,
            kind="IndentationError",
        )
    builder = Builder(source, functools.partial(parse_expression, source))
    module = builder.build(_run_lark(text, "start", source, builder.pos))  # type: ignore[arg-type]
    validate(module)
    return module
