"""Runs compiled scripts: the `Interpreter` a host holds, and the hidden helpers.

`Interpreter.compile` translates the parsed script (adcli.lang.compiler), has
CPython compile it, and returns a runner; `run` does both. The code runs in
`globals` (the script's module namespace) whose ``__builtins__`` is the
interpreter's builtins dict: the curated builtins, the host's names and the
hidden runtime helpers (names with a "$"), never Python's own builtins.

Errors: any exception leaving a run becomes a ScriptRuntimeError whose span
and traceback come from the script frames of the Python traceback (code
objects map back to spans through their positions); host-library exception
classes show as the builtin class they derive from.
"""

from __future__ import annotations

import ast as py
import builtins
import itertools
import operator
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from adcli.lang.build import MAX_NESTING, is_elif, span_of
from adcli.lang.compiler import Options, stmt_span, translate
from adcli.lang.errors import (
    AdError,
    LimitError,
    SandboxError,
    ScriptRuntimeError,
    ScriptSyntaxError,
    TraceEntry,
)
from adcli.lang.guard import (
    EXCEPTIONS,
    PLAIN_INPLACE,
    Guards,
    check_bases,
    context_manager,
    format_field,
    get_attribute,
    host_import,
    is_script_class,
    make_attribute_guards,
    make_operator_helpers,
    make_script_builtins,
    mark_class,
)
from adcli.lang.host import Host, Limits, Namespace, missing_member
from adcli.lang.source import Source, Span

__all__ = ["Interpreter", "Function", "UNCATCHABLE"]

# Script functions are Python functions (with an `ad_name` attribute).
Function = types.FunctionType

MAX_RECURSION_LIMIT = 25_000
UNCATCHABLE = frozenset({"LimitError", "SandboxError", "KeyboardInterrupt"})

_FORBIDDEN_NAMES = frozenset(
    "open eval exec compile __import__ getattr setattr delattr hasattr globals locals vars dir"
    " object input breakpoint help exit quit memoryview id".split()
)


class _State:
    """The depth count compiled code bumps: `d`, checked against `maxd`."""

    __slots__ = ("d", "maxd")

    def __init__(self) -> None:
        self.d = 0
        self.maxd = 0


def _kind_of(exc: BaseException) -> str:
    """The nearest builtin exception class name ("ValueError" for numpy's AxisError);
    a script's own exception class keeps its name."""
    if is_script_class(type(exc)):
        return type(exc).__name__
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "Exception"  # pragma: no cover


def _script_exception(exc: BaseException) -> BaseException:
    """What `except ... as e` binds: host-library classes show as their builtin base."""
    cls = type(exc)
    if cls.__module__ == "builtins" or isinstance(exc, AdError):
        return exc
    # a class PyTorch also has (torch.autograd.GradcheckError) keeps its own name
    if getattr(cls, "__ad_public__", False):
        return exc
    if not cls.__module__.startswith(("adcli.", "numpy")):
        return exc
    base = getattr(builtins, _kind_of(exc))
    try:
        shown = base(str(exc)) if exc.args else base()
    except Exception:  # noqa: BLE001 - a class that cannot be made so: keep the original
        return exc
    shown.__cause__ = exc
    return shown


def _uncatchable(exc: BaseException) -> bool:
    """Limits, sandbox refusals and interrupts: no `except` catches them, no `finally` runs."""
    if isinstance(exc, AdError):
        return exc.kind in UNCATCHABLE or not getattr(exc, "catchable", True)
    return isinstance(exc, KeyboardInterrupt)


def _innermost_frame(exc: BaseException, codes: dict) -> types.FrameType | None:
    """The innermost frame of script code in `exc`'s traceback."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            found = tb.tb_frame
        tb = tb.tb_next
    return found


def _attribute_error(exc: AttributeError) -> str:
    """An AttributeError's message with Python 3.12's "Did you mean: 'x'?" when a
    name the script may read on the object is close."""
    message = str(exc)
    if "has no attribute" not in message:
        return message  # "adcli does not support Tensor.x yet" and the like
    from adcli.lang.suggest import attribute_candidates, suggest

    close = suggest(exc.name, attribute_candidates(exc.obj))
    return message + f". Did you mean: '{close}'?" if close else message


class Interpreter:
    """One script session: globals, builtins, hooks, limits, counters.

    Typical use by a host::

        host = Host(globals=names, import_module=find_module, on_value=label)
        interp = Interpreter(host, Limits(max_steps=10**6))
        interp.run(parse(Source("x.ad", text)))     # raises ScriptRuntimeError

    Attributes a host may read (or set between runs): `globals`, `builtins`,
    `on_assign`/`on_value`/`on_statement`/`on_display`, `current_span`/
    `current_source` (the statement running now, found from the running
    script frame), `steps`, `depth`, `max_steps`, `max_depth`.
    """

    def __init__(
        self, host: Host | None = None, limits: Limits | None = None, *, debug: bool = False
    ) -> None:
        host = host if host is not None else Host()
        self.host = host
        self.limits = limits if limits is not None else Limits()
        self.debug = debug
        self.guards = Guards(self.limits)
        table: dict[str, object] = (
            make_script_builtins(self.guards) if host.default_builtins else {}
        )
        table.update(host.globals)
        self.builtins = table
        self._value_types = host.value_types
        self.on_assign = host.on_assign
        self.on_value = host.on_value
        self.on_statement = host.on_statement
        self.on_display = host.on_display
        self.max_steps = self.limits.max_steps
        self.max_depth = self.limits.max_depth
        self._state = _State()
        self._spans: list[Span] = []
        # code object -> (source, {line: [(statement span, its header's span)]})
        self._codes: dict[types.CodeType, tuple[Source, dict]] = {}
        self._positions: dict[types.CodeType, list] = {}
        self._sources: list[Source] = []  # every source compiled (a REPL has many)
        self._steps_left = itertools.repeat(True, 0)
        self._budget: Any = None
        self._fixed_span: tuple[Span, Source] | None = None
        self._run_builtins = self._helpers()
        self._run_builtins.update(table)
        # for C code running in a script's frame (scripts cannot name it: see host_import)
        self._run_builtins["__import__"] = host_import
        self.globals: dict[str, object] = {"__builtins__": self._run_builtins}

    # ------------------------------------------------------------- public

    @property
    def steps(self) -> int:
        """Loop iterations and function calls so far in this run."""
        return self.max_steps - operator.length_hint(self._steps_left)

    @property
    def depth(self) -> int:
        """Nested script calls running now."""
        return self._state.d

    def compile(self, module: py.Module, *, interactive: bool = False) -> Callable[[], None]:
        """Compile `module` for this interpreter; returns a no-argument runner.

        Raises ScriptSyntaxError for scope errors (nonlocal without binding).
        """
        source: Source = module.source  # type: ignore[attr-defined]
        watch = self._value_types
        options = Options(
            values=self.on_value is not None,
            assigns=self.on_assign is not None,
            statements=self.on_statement is not None,
            watch="all" if watch is None else ("one" if len(watch) == 1 else "set"),
            interactive=interactive,
            spans=self._spans,
        )
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 20_000 + 8 * MAX_NESTING))
        try:
            tree = translate(module, options)
            with warnings.catch_warnings():  # CPython's SyntaxWarnings are not the script's
                warnings.simplefilter("ignore")
                code = compile(tree, source.path, "exec", dont_inherit=True, optimize=0)
        except SyntaxError as exc:
            line, col = exc.lineno or 1, exc.offset or 1
            end_line, end_col = exc.end_lineno or line, exc.end_offset or col + 1
            if (end_line, end_col) <= (line, col):
                end_line, end_col = line, col + 1
            raise ScriptSyntaxError(exc.msg, Span(line, col, end_line, end_col), source) from None
        except RecursionError:
            raise ScriptSyntaxError(
                f"too many nested expressions or blocks (the limit is {MAX_NESTING} levels)",
                Span(1, 1, 1, 2),
                source,
                kind="LimitError",
            ) from None
        finally:
            sys.setrecursionlimit(old)
        self._register(code, module, source)

        def runner() -> None:
            self._execute(code, source)

        return runner

    def run(self, module: py.Module, *, interactive: bool = False) -> None:
        """Compile and execute `module` in this interpreter's globals."""
        self.compile(module, interactive=interactive)()

    def interrupt(self) -> None:
        """Ask the running script to stop at its next loop step or call (signal-safe)."""
        self._run_builtins["ad$B"] = iter(self._stop, None)

    def _stop(self) -> None:
        self._run_builtins["ad$B"] = self._budget  # the steps left stay for the next run
        raise KeyboardInterrupt

    def _over(self) -> None:
        raise ScriptRuntimeError(
            f"step limit of {self.max_steps} exceeded (raise it with --max-steps)",
            kind="LimitError",
            catchable=False,
        )

    def variables(self) -> dict[str, object]:
        """The script's global names and values (a copy)."""
        return {k: v for k, v in self.globals.items() if k != "__builtins__" and "$" not in k}

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call a script function (or any callable) from the host."""
        return fn(*args, **kwargs)

    @property
    def current_span(self) -> Span | None:
        """The statement running now (of the innermost running script frame)."""
        found = self._frame()
        if found is None:
            return self._fixed_span[0] if self._fixed_span else None
        frame, (_, lines) = found
        pos = self._position(frame.f_code, frame.f_lasti)
        if pos is None or pos[0] is None:
            return None
        at = (pos[0], pos[2] or 0)
        best = None
        for full, header in lines.get(pos[0], ()):  # the innermost statement holding `at`
            if (full.line, full.column - 1) <= at <= (full.end_line, full.end_column - 1):
                best = header
        return best

    @property
    def current_line(self) -> int | None:
        """The line of the operation running now in the innermost script frame (in a
        statement over several lines, the line of its running call, as a Python frame's
        line number and so its warnings give it)."""
        found = self._frame()
        if found is None:
            return self._fixed_span[0].line if self._fixed_span else None
        frame = found[0]
        pos = self._position(frame.f_code, frame.f_lasti)
        return None if pos is None else pos[0]

    @property
    def current_source(self) -> Source | None:
        """The source of the innermost running script frame."""
        if len(self._sources) == 1 and self._fixed_span is None:
            return self._sources[0]  # one script: no need to look at the frames
        found = self._frame()
        if found is None:
            return self._fixed_span[1] if self._fixed_span else None
        return found[1][0]

    def stack(self) -> list[TraceEntry]:
        """The running script frames, outermost first, each at the statement it is
        running and named as Python's traceback names it (anomaly mode's forward
        trace)."""
        out = []
        f = sys._getframe(1)
        while f is not None:
            code = f.f_code
            if code in self._codes:
                span, src = self._span_at(code, f.f_lasti)
                if span is not None:
                    out.append(TraceEntry(code.co_name, span, src))
            f = f.f_back
        out.reverse()
        return out

    # ----------------------------------------------------------- internals

    def _frame(self) -> Any:
        codes = self._codes
        f = sys._getframe(2)
        while f is not None:
            info = codes.get(f.f_code)
            if info is not None:
                return f, info
            f = f.f_back
        return None

    def _register(self, code: types.CodeType, module: py.Module, source: Source) -> None:
        lines: dict[int, list[tuple[Span, Span]]] = {}
        stack: list[Any] = list(module.body)
        while stack:  # outer statements first
            n = stack.pop()
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(n, field, ()))
            if isinstance(n, py.stmt) and not is_elif(n):  # an elif is its if's statement
                sp = span_of(n)
                for line in range(sp.line, sp.end_line + 1):
                    lines.setdefault(line, []).append((sp, stmt_span(n, source)))
        info = (source, lines)
        if source not in self._sources:
            self._sources.append(source)
        todo = [code]
        while todo:
            c = todo.pop()
            self._codes[c] = info
            todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))

    def _span_at(self, code: types.CodeType, lasti: int) -> tuple[Span | None, Source | None]:
        info = self._codes.get(code)
        if info is None:
            return None, None
        found = self._position(code, lasti)
        if found is None or found[0] is None:
            return None, info[0]
        line, end_line, col, end_col = found  # the span the compiler gave the code
        return Span(line, (col or 0) + 1, end_line or line, (end_col or col or 0) + 1), info[0]

    def _position(self, code: types.CodeType, lasti: int) -> tuple | None:
        """(line, end line, column, end column) of the instruction at byte `lasti`."""
        pos = self._positions.get(code)
        if pos is None:
            pos = self._positions[code] = list(code.co_positions())
        i = lasti // 2
        return pos[i] if 0 <= i < len(pos) else None

    def _recursion_needed(self) -> int:
        return min(2_000 + 10 * self.max_depth + 4 * MAX_NESTING, MAX_RECURSION_LIMIT)

    def _execute(self, code: types.CodeType, source: Source) -> None:
        st = self._state
        st.d = 0
        st.maxd = self.max_depth
        # the step budget: `ad$next(ad$B)` takes one (C code: no Python call per step)
        self._steps_left = itertools.repeat(True, self.max_steps)
        self._budget = itertools.chain(self._steps_left, iter(self._over, None))
        self._run_builtins["ad$B"] = self._budget
        self._fixed_span = None
        self._run_builtins.update(self._hook_helpers())
        old_limit = sys.getrecursionlimit()
        needed = self._recursion_needed()
        if needed > old_limit:
            sys.setrecursionlimit(needed)
        try:
            exec(code, self.globals)  # noqa: S102 - compiled from the script by adcli
        except (Exception, KeyboardInterrupt) as exc:  # a host's own BaseException passes
            err = self._convert(exc, source)
            self._fixed_span = (err.span, err.source) if err.span is not None else None
            raise err from (exc if self.debug else None)
        finally:
            st.d = 0
            for k in [k for k in self.globals if "$" in k]:
                del self.globals[k]
            if needed > old_limit:
                sys.setrecursionlimit(old_limit)

    def _convert(self, exc: BaseException, source: Source) -> ScriptRuntimeError:
        """The ScriptRuntimeError for an exception that left the run."""
        entries: list[TraceEntry] = []
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code in self._codes:
                span, src = self._span_at(code, tb.tb_lasti)
                if span is not None and code.co_name in _COMPREHENSIONS and entries:
                    entries[-1] = TraceEntry(entries[-1].name, span, src)  # one frame, as before
                elif span is not None:
                    name = "<module>" if code.co_name == "<module>" else code.co_qualname
                    entries.append(TraceEntry(name, span, src))
            tb = tb.tb_next
        if isinstance(exc, ScriptRuntimeError):
            if exc.span is None and entries:
                exc.span, exc.source = entries[-1].span, entries[-1].source
                exc.traceback = entries
            return exc
        span = entries[-1].span if entries else Span(1, 1, 1, 2)
        src = entries[-1].source if entries else source
        if isinstance(exc, AdError):
            kind, message = exc.kind, exc.message
            if exc.span is not None and exc.source is not None:
                span, src = exc.span, exc.source
                if entries:
                    entries[-1] = TraceEntry(entries[-1].name, span, src)
        elif isinstance(exc, KeyboardInterrupt):
            kind, message = "KeyboardInterrupt", "interrupted"
        elif isinstance(exc, RecursionError):
            kind = "LimitError"
            message = "maximum recursion depth exceeded: expressions or calls are nested too deeply"
        elif isinstance(exc, MemoryError):
            kind, message = "LimitError", str(exc) or "out of memory"
        elif isinstance(exc, NameError) and type(exc) is NameError and getattr(exc, "name", None):
            kind, message = "NameError", self._name_error(exc.name, str(exc), exc)
        elif type(exc) is AttributeError and exc.name and exc.obj is not None:
            kind, message = "AttributeError", _attribute_error(exc)
        else:
            kind, message = _kind_of(exc), str(exc)
        if not entries:
            entries = [TraceEntry("<module>", span, src)]
        return ScriptRuntimeError(
            message,
            span,
            src,
            kind=kind,
            traceback=entries,
            original=None if isinstance(exc, KeyboardInterrupt) else exc,
            catchable=kind not in UNCATCHABLE,
        )

    def _name_error(self, name: str, message: str, exc: BaseException | None = None) -> str:
        name = name[3:] if name.startswith("ad$") else name
        if not message.startswith("name "):
            return message
        message = f"name '{name}' is not defined"
        if name in _FORBIDDEN_NAMES:
            return message + f" ('{name}' is not available in adcli scripts)"
        from adcli.lang.suggest import suggest

        # as Python 3.12: the frame's locals, then its globals, then the builtins
        candidates: dict[str, None] = {}
        frame = _innermost_frame(exc, self._codes) if exc is not None else None
        if frame is not None and frame.f_locals is not frame.f_globals:
            candidates.update(dict.fromkeys(frame.f_locals))
        candidates.update(dict.fromkeys(self.globals))
        candidates.update(dict.fromkeys(self.builtins))
        close = suggest(
            name, [k for k in candidates if "$" not in k and k != "__builtins__" and k[:1] != "_"]
        )
        if close:
            message += f". Did you mean: '{close}'?"
        return message

    # ------------------------------------------------------------ helpers

    def _hook_helpers(self) -> dict[str, object]:
        """The hook-calling helpers (re-read each run: a host may change hooks)."""
        on_value, on_assign, spans = self.on_value, self.on_assign, self._spans
        on_statement, on_display = self.on_statement, self.on_display
        watch = self._value_types

        def value(v: Any, k: int) -> Any:
            if on_value is not None and (watch is None or type(v) in watch):
                on_value(v, spans[k])
            return v

        def assign(name: str, v: Any, k: int) -> None:
            if on_assign is not None and (watch is None or type(v) in watch):
                on_assign(name, v, spans[k])

        def statement(k: int) -> None:
            if on_statement is not None:
                on_statement(spans[k])

        def show(v: Any) -> None:
            if v is not None and on_display is not None:
                on_display(v)

        types_ = tuple(watch or ())
        return {
            "ad$v": value,
            "ad$a": assign,
            "ad$st": statement,
            "ad$show": show,
            "ad$T": types_[0] if types_ else None,
            "ad$TS": frozenset(types_),
        }

    def _helpers(self) -> dict[str, object]:
        st = self._state
        get, set_, delete = make_attribute_guards(self.guards)
        guards = self.guards

        def enter() -> None:
            # called when a function entry went over the depth limit (already counted)
            st.d -= 1
            raise LimitError(
                f"maximum recursion depth of {self.max_depth} exceeded (raise it with --max-depth)"
            )

        def fn(f: types.FunctionType) -> types.FunctionType:
            f.ad_name = f.__name__  # type: ignore[attr-defined]
            return f

        def match(exc: BaseException, cls: Any) -> bool:
            if not isinstance(exc, Exception):  # GeneratorExit, a host's own BaseException
                return False
            if _uncatchable(exc):
                return False
            if cls is None:
                return True
            classes = cls if type(cls) is tuple else (cls,)
            for k in classes:
                if not (isinstance(k, type) and issubclass(k, BaseException)):
                    raise TypeError(
                        "catching classes that do not inherit from BaseException is not allowed"
                    )
            if isinstance(exc, classes):
                return True
            if isinstance(exc, AdError):
                as_builtin = EXCEPTIONS.get(exc.kind) or getattr(builtins, exc.kind, None)
                return isinstance(as_builtin, type) and issubclass(as_builtin, classes)
            return False

        def finally_runs() -> bool:
            exc = sys.exc_info()[1]
            return exc is None or not _uncatchable(exc)

        def fmt(value: Any, conversion: str | None, spec: str) -> str:
            return format_field(value, conversion, spec, guards)

        def field(value: Any) -> Any:
            guards.check_repr(value)  # a field without a spec: text bounded as str()'s
            return value

        def fstring(text: str) -> str:
            guards.check_len(len(text), "f-string")
            return text

        def star_args(value: Any, name: str) -> list:
            try:
                iter(value)
            except TypeError:
                raise TypeError(
                    f"{name}() argument after * must be an iterable, not {type(value).__name__}"
                ) from None
            return guards.materialize(value)

        def star_kwargs(value: Any, name: str) -> dict:
            if type(value) is not dict:
                raise TypeError(
                    f"{name}() argument after ** must be a mapping, not {type(value).__name__}"
                )
            if any(type(k) is not str for k in value):
                raise TypeError("keywords must be strings")
            return value

        table: dict[str, object] = {
            "__build_class__": builtins.__build_class__,  # class statements
            "__name__": "__main__",  # a class body's __module__
            "ad$fs": fstring,
            "ad$args": star_args,
            "ad$kwargs": star_kwargs,
            "ad$S": st,
            "ad$BE": BaseException,
            "ad$AE": AssertionError,
            "ad$next": next,
            "ad$enter": enter,
            "ad$fn": fn,
            "ad$ga": get,
            "ad$sa": set_,
            "ad$da": delete,
            "ad$cm": context_manager,
            "ad$match": match,
            "ad$shown": _script_exception,
            "ad$fin": finally_runs,
            "ad$bases": check_bases,
            "ad$class": mark_class,
            "ad$fmt": fmt,
            "ad$fv": field,
            "ad$import": self._import_stmt,
            "ad$from": self._import_from,
            "ad$star": self._import_star,
        }
        table.update(make_operator_helpers(guards))
        # left-operand types for which +, %, * and ** need no size check
        numbers = {int, float, bool, complex}
        watched = set(self._value_types or ())
        table["ad$N+"] = frozenset(numbers | watched)
        table["ad$N%"] = frozenset(numbers - {complex})
        table["ad$N*"] = frozenset({float, complex} | watched)
        table["ad$N**"] = frozenset({float, complex} | watched)
        for op in ("+", "%", "*", "**"):  # the same without the watched (tensor) types
            table[f"ad$P{op}"] = table[f"ad$N{op}"] - watched
        table.update({f"ad$i{op}": fn_ for op, fn_ in PLAIN_INPLACE.items()})
        table.update(self._hook_helpers())
        return table

    # ------------------------------------------------------------ imports

    def _import_stmt(self, dotted: str, top: bool) -> Any:
        module = self._import(dotted)
        if top and "." in dotted:
            module = self._import(dotted.split(".")[0])
        return module

    def _import(self, dotted: str) -> Any:
        for part in dotted.split("."):
            if part.startswith("_"):
                raise SandboxError(f"importing '{dotted}' is not allowed in adcli scripts")
        importer = self.host.import_module
        module = importer(dotted) if importer is not None else self._default_import(dotted)
        if module is None:
            raise ModuleNotFoundError(f"No module named '{dotted}'")
        return module

    def _default_import(self, dotted: str) -> Any:
        parts = dotted.split(".")
        module = self.builtins.get(parts[0])
        for part in parts[1:]:
            if type(module) is not Namespace:
                module = None
                break
            module = module.__ad_members__.get(part)
        if type(module) is not Namespace:
            raise ModuleNotFoundError(f"No module named '{dotted}'")
        return module

    def _import_from(self, module: Any, module_name: str, name: str) -> Any:
        if name.startswith("_"):
            raise SandboxError(f"importing '{name}' is not allowed in adcli scripts")
        if type(module) is Namespace and name in module.__ad_members__:
            return module.__ad_members__[name]
        try:
            return self._import(f"{module_name}.{name}")
        except ImportError:
            pass
        try:
            return get_attribute(module, name, self.guards)
        except Exception:
            if missing_member(module_name, name).startswith("adcli"):
                raise ImportError(missing_member(module_name, name)) from None
            raise ImportError(f"cannot import name '{name}' from '{module_name}'") from None

    def _import_star(self, module: Any, module_name: str) -> None:
        if type(module) is not Namespace:
            raise SandboxError(f"'from {module_name} import *' is not supported here")
        for name, value in module.__ad_members__.items():
            if not name.startswith("_"):
                self.globals[name] = value
                if self.on_assign is not None and (
                    self._value_types is None or type(value) in self._value_types
                ):
                    self.on_assign(name, value, self.current_span or Span(1, 1, 1, 2))


_COMPREHENSIONS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>"})  # run inline
