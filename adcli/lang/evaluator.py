"""Runs an AST: each node is compiled once into a Python closure.

Design:

- `Interpreter` holds the state of one session: the script's globals, the
  builtins layer (pure builtins + the host's names), hooks, limits, and the
  step/depth counters. `Interpreter.run(module)` compiles then executes.
- Compilation is two passes, both iterative (explicit stacks), so trees of
  any depth compile: a scope analysis (which names are local to which
  function, as Python decides it), then a post-order walk that turns each
  node into a closure taking `env`. `env` is a tuple of dicts, innermost
  scope first (``()`` at module level); every name is resolved at compile
  time to "env[d]" or "global", as CPython resolves fast locals and cells.
- At run time closures recurse only over real nesting: flat chains
  (``a + b + c ...``, ``x.f(1).g[0]``, ``if/elif``) run in loops, and the
  parser bounds other nesting (build.MAX_NESTING), so a 100,000-term sum
  runs, and the Python recursion limit is raised for the run to fit
  `max_depth` script calls.
- Statements return None, BREAK, CONTINUE or a `_Return`; no exceptions are
  used for control flow.
- Hot shapes (operator chains, comparisons, subscripts, positional calls,
  assignments and one-branch ifs around them, `return expr` bodies) become
  generated straight-line closures (see "fused closures"), and value hooks
  are only called for the host's `value_types`: a scalar loop makes a few
  calls per iteration instead of ~25.
- A Python exception raised by host code becomes a ScriptRuntimeError at the
  innermost expression that raised it (zero-cost `try` blocks in 3.11), with
  the Python class name as `kind`; it then travels up as is, collecting one
  traceback entry per script call it leaves.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from itertools import islice
from typing import Any

from adcli.errors import (
    AdError,
    LimitError,
    SandboxError,
    ScriptRuntimeError,
    ScriptSyntaxError,
    TraceEntry,
)
from adcli.lang import ast
from adcli.lang.build import MAX_NESTING
from adcli.lang.host import Host, Limits, Namespace, missing_member
from adcli.lang.pybuiltins import EXCEPTIONS, make_builtins
from adcli.lang.sandbox import (
    Guards,
    check_context_manager,
    delete_attribute,
    get_attribute,
    make_operators,
    refuse_private,
    set_attribute,
)
from adcli.source import Source, Span

__all__ = ["Interpreter", "Function", "UNCATCHABLE"]

Env = tuple
Closure = Callable[..., Any]

_MISSING: Any = object()


class _EveryType:
    """A container holding every type (for hooks without a type filter)."""

    __slots__ = ()

    def __contains__(self, item: object) -> bool:
        return True


_EVERY_TYPE = _EveryType()

# Highest Python recursion limit a run sets (see Interpreter._recursion_needed).
MAX_RECURSION_LIMIT = 25_000

# Error kinds a script's try/except can never catch.
UNCATCHABLE = frozenset({"LimitError", "SandboxError", "KeyboardInterrupt"})

# Names that exist in Python but not in adcli scripts: a NameError for them
# says so, instead of leaving the user to wonder.
_FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "eval",
        "exec",
        "compile",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "type",
        "object",
        "super",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
        "classmethod",
        "staticmethod",
        "property",
        "id",
        "iter",
        "next",
        "callable",
    }
)


class _Signal:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


BREAK = _Signal("BREAK")
CONTINUE = _Signal("CONTINUE")


class _Return:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# ------------------------------------------------------------------ errors


def _kind_of(exc: BaseException) -> str:
    """The nearest builtin exception class name ("ValueError" for numpy's AxisError)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "Exception"  # pragma: no cover - every exception derives from a builtin


def _fail(
    it: Interpreter, exc: BaseException, span: Span, src: Source, fname: str
) -> ScriptRuntimeError:
    """Turn a Python exception raised at `span` into a ScriptRuntimeError."""
    if isinstance(exc, ScriptRuntimeError):
        return exc
    if isinstance(exc, AdError):
        kind, message = exc.kind, exc.message
        if exc.span is not None and exc.source is not None:
            span, src = exc.span, exc.source
    elif isinstance(exc, RecursionError):
        kind = "LimitError"
        message = "maximum recursion depth exceeded: expressions or calls are nested too deeply"
    elif isinstance(exc, MemoryError):
        # the host's own size limit explains itself; NumPy's bare MemoryError does not
        kind, message = "LimitError", str(exc) or "out of memory"
    else:
        kind, message = _kind_of(exc), str(exc)
    err = ScriptRuntimeError(
        message,
        span,
        src,
        kind=kind,
        traceback=[TraceEntry(fname, span, src)],
        original=exc,
        catchable=kind not in UNCATCHABLE,
    )
    return err


def _script_exception(exc: BaseException) -> BaseException:
    """The exception `except ... as e` binds: a host library's own class (the engine's
    SavedTensorError, NumPy's AxisError) shows as the builtin class it derives from, as
    PyTorch's errors are plain RuntimeErrors; the original stays its `__cause__`."""
    cls = type(exc)
    if cls.__module__ == "builtins" or isinstance(exc, AdError):
        return exc
    if not cls.__module__.startswith(("adcli.", "numpy")):
        return exc
    base = getattr(builtins, _kind_of(exc))
    try:  # its text, not its arguments: NumPy's AxisError words its own message
        shown = base(str(exc)) if exc.args else base()
    except Exception:  # noqa: BLE001 - a class that cannot be made so: keep the original
        return exc
    shown.__cause__ = exc
    return shown


def _cause(it: Interpreter, exc: BaseException) -> BaseException | None:
    """What a converted error is chained to: the Python error only in debug mode."""
    return exc if it.debug else None


def _through_call(err: ScriptRuntimeError, span: Span, src: Source, fname: str) -> None:
    """Record that `err` left a call at `span` (one traceback entry per call)."""
    if err.span is None:
        err.span, err.source = span, src
        err.traceback = [TraceEntry(fname, span, src)]
    else:
        err.traceback.insert(0, TraceEntry(fname, span, src))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _name_list(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


# --------------------------------------------------------------- functions


class _Code:
    """Compile-time facts about a function: parameters and compiled body."""

    __slots__ = (
        "name",
        "qualname",
        "posnames",
        "nargs",
        "vararg",
        "kwonly",
        "kwarg",
        "simple",
        "run",
    )

    def __init__(
        self,
        name: str,
        qualname: str,
        params: tuple[ast.Param, ...],
        run: Callable[[Env], Any],
    ) -> None:
        self.name = name
        self.qualname = qualname
        self.posnames = tuple(p.name for p in params if p.kind == "pos")
        self.nargs = len(self.posnames)
        self.vararg = next((p.name for p in params if p.kind == "vararg" and p.name), None)
        self.kwonly = tuple(p.name for p in params if p.kind == "kwonly")
        self.kwarg = next((p.name for p in params if p.kind == "kwarg"), None)
        self.simple = self.vararg is None and self.kwarg is None and not self.kwonly
        self.run = run


class Function:
    """A function defined by a script (``def`` or ``lambda``).

    Calling it from Python (as a host does for hooks or ``sorted(key=...)``)
    runs the script code; errors come out as ScriptRuntimeError. It has no
    attributes a script can read.
    """

    __slots__ = ("_code", "_defaults", "_kwdefaults", "_env", "_interp", "_source")

    def __init__(
        self,
        code: _Code,
        defaults: tuple,
        kwdefaults: dict,
        env: Env,
        interp: Interpreter,
        source: Source,
    ) -> None:
        self._code = code
        self._defaults = defaults
        self._kwdefaults = kwdefaults
        self._env = env
        self._interp = interp
        self._source = source

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _invoke(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self._code.qualname} at 0x{id(self):x}>"

    @property
    def ad_name(self) -> str:
        """The function's name (for hosts: graph labels, messages)."""
        return self._code.name

    # Python code (a host) may read fn.__name__ as for any function; scripts
    # never can (no attribute starting with "_" is readable). The class's own
    # name stays "function" (type(fn).__name__ comes from the type itself).
    @property
    def __name__(self) -> str:  # type: ignore[override]
        return self._code.name


Function.__name__ = Function.__qualname__ = "function"  # as Python names it in messages


def _bind(fn: Function, args: tuple | list, kwargs: dict) -> dict:
    """Python's argument binding, with Python's error messages."""
    code = fn._code
    name = code.qualname
    posnames = code.posnames
    n = code.nargs
    defaults = fn._defaults
    loc: dict[str, Any] = {}
    if len(args) > n:
        if code.vararg is None:
            if defaults:
                takes = f"from {n - len(defaults)} to {n} positional arguments"
            else:
                takes = _plural(n, "positional argument")
            given = len(args)
            was = "was" if given == 1 else "were"
            raise TypeError(f"{name}() takes {takes} but {given} {was} given")
        loc[code.vararg] = tuple(args[n:])
        args = args[:n]
    elif code.vararg is not None:
        loc[code.vararg] = ()
    for pname, value in zip(posnames, args, strict=False):
        loc[pname] = value
    extra: dict[str, Any] = {}
    if kwargs:
        for key, value in kwargs.items():
            if key in posnames or key in code.kwonly:
                if key in loc:
                    raise TypeError(f"{name}() got multiple values for argument '{key}'")
                loc[key] = value
            elif code.kwarg is not None:
                extra[key] = value
            else:
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
    if len(loc) < n + (code.vararg is not None) or code.kwonly:
        first_default = n - len(defaults)
        missing = []
        for i, pname in enumerate(posnames):
            if pname not in loc:
                if i >= first_default:
                    loc[pname] = defaults[i - first_default]
                else:
                    missing.append(pname)
        if missing:
            raise TypeError(
                f"{name}() missing {len(missing)} required positional"
                f" argument{'s' if len(missing) > 1 else ''}: {_name_list(missing)}"
            )
        missing = []
        for pname in code.kwonly:
            if pname not in loc:
                if pname in fn._kwdefaults:
                    loc[pname] = fn._kwdefaults[pname]
                else:
                    missing.append(pname)
        if missing:
            raise TypeError(
                f"{name}() missing {len(missing)} required keyword-only"
                f" argument{'s' if len(missing) > 1 else ''}: {_name_list(missing)}"
            )
    if code.kwarg is not None:
        loc[code.kwarg] = extra
    return loc


def _invoke(fn: Function, args: tuple | list, kwargs: dict) -> Any:
    """Call a script function: bind, check depth, run, restore position."""
    it = fn._interp
    code = fn._code
    if not kwargs and code.simple and len(args) == code.nargs:
        loc = dict(zip(code.posnames, args, strict=True))
    else:
        loc = _bind(fn, args, kwargs)
    if it.depth >= it.max_depth:
        raise LimitError(
            f"maximum recursion depth of {it.max_depth} exceeded (raise it with --max-depth)"
        )
    it.depth += 1
    span = it.current_span
    source = it.current_source
    it.current_source = fn._source
    try:
        return code.run((loc,) + fn._env)
    finally:
        it.depth -= 1
        it.current_span = span
        it.current_source = source


# ---------------------------------------------------------------- scopes


class _Scope:
    """One function, lambda, comprehension or the module, for name resolution."""

    __slots__ = ("kind", "name", "qualname", "parent", "locals", "globals", "nonlocals")

    def __init__(self, kind: str, name: str, qualname: str, parent: _Scope | None) -> None:
        self.kind = kind
        self.name = name
        self.qualname = qualname
        self.parent = parent
        self.locals: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: dict[str, Span] = {}

    def bind(self, name: str) -> None:
        """Record that this scope assigns `name` (module names are globals)."""
        if self.kind != "module":
            self.locals.add(name)

    def resolve(self, name: str) -> int:
        """Index into env of the scope holding `name`, or -1 for global."""
        s: _Scope | None = self
        depth = 0
        while s is not None and s.kind != "module":
            if name in s.globals:
                return -1
            if name in s.locals and name not in s.nonlocals:
                return depth
            s = s.parent
            depth += 1
        return -1


_COMP_NAMES = {
    ast.ListComp: "<listcomp>",
    ast.DictComp: "<dictcomp>",
    ast.GeneratorExp: "<genexpr>",
}
_CHAIN = (ast.Call, ast.Attribute, ast.Subscript)
_COMPOUND = (ast.If, ast.While, ast.For, ast.Try, ast.With, ast.FunctionDef)


def _target_names(target: ast.Node) -> list[str]:
    """Names bound by an assignment target (Tuple/List unpacking included)."""
    out = []
    stack = [target]
    while stack:
        n = stack.pop()
        if type(n) is ast.Name:
            out.append(n.id)
        elif type(n) in (ast.TupleExpr, ast.ListExpr):
            stack.extend(n.elts)  # type: ignore[attr-defined]
    return out


# ------------------------------------------------------------ fused closures
#
# A scalar loop spends its time in closure calls (~25 per iteration of a
# typical loop body). The commonest expression shapes are therefore compiled
# into straight-line Python source, one closure per expression tree: chains of
# binary operators, single comparisons, single subscripts and calls with
# positional arguments, whose operands are constants, names, other such
# expressions (inlined, up to _MAX_FUSED operations) or any other closure.
#
# The generated code does what the separate closures did, in the same order:
# a name load that fails falls back to the Name's own closure (which raises
# the same error as before); each operation keeps its own span, try block and
# value hook, so errors, tracebacks, labels and hook calls are unchanged.
# Operators the sandbox never checks run inline; checked ones take an inline
# fast path only for types the check lets through anyway (a float product
# cannot be a long sequence) and call the checked operator otherwise. A call
# of a script function taking exactly its positional arguments enters it
# inline (what `_invoke` does). The source of each shape is compiled once per
# process and cached by its text.

_BIN_INLINE = {
    "+": "{v} + {b} if type({v}) is float or type({v}) is int else {op}({v}, {b})",
    "-": "{v} - {b}",
    "*": "{v} * {b} if type({v}) is float or type({b}) is float else {op}({v}, {b})",
    "/": "{v} / {b}",
    "//": "{v} // {b}",
    "%": "{v} % {b} if type({v}) is not str else {op}({v}, {b})",
    "**": "{v} ** {b} if type({v}) is float or type({b}) is float else {op}({v}, {b})",
    "@": "{v} @ {b}",
    "&": "{v} & {b}",
    "|": "{v} | {b}",
    "^": "{v} ^ {b}",
}
# In-place forms: inline only where both sides are plain numbers (so `t += 1`
# on a tensor still goes through the in-place operator, and errors keep the
# in-place operator's message: "for +=").
_NUMBERS = "(type({v}) is float or type({v}) is int) and (type({b}) is float or type({b}) is int)"
_INPLACE_INLINE = {
    "+": f"{{v}} + {{b}} if {_NUMBERS} else {{op}}({{v}}, {{b}})",
    "-": f"{{v}} - {{b}} if {_NUMBERS} else {{op}}({{v}}, {{b}})",
    "*": "{v} * {b} if type({v}) is float and type({b}) is float else {op}({v}, {b})",
    "/": f"{{v}} / {{b}} if {_NUMBERS} else {{op}}({{v}}, {{b}})",
}
_CALL_OP = "{op}({v}, {b})"
_COMPARE_INLINE = {
    "<": "{v} < {b}",
    "<=": "{v} <= {b}",
    ">": "{v} > {b}",
    ">=": "{v} >= {b}",
    "==": "{v} == {b}",
    "!=": "{v} != {b}",
    "in": "{v} in {b}",
    "not in": "{v} not in {b}",
    "is": "{v} is {b}",
    "is not": "{v} is not {b}",
}
_SUBSCRIPT_INLINE = "{v}[{b}]"

# Most operations inlined into one generated closure (the rest are calls).
_MAX_FUSED = 12

# Names every generated closure may use (bound by the factory).
_COMMON = ("it", "src", "fname", "g", "_fail", "_cause", "SRE", "Function", "invoke", "through")
_TAIL_PARAMS = ("TSPAN", "NAME", "SPAN", "BODY", "ORELSE")

_FUSED_CACHE: dict[str, Callable[..., Closure]] = {}
_MAX_CACHED = 4096


class _Emitter:
    """Collects the lines and the bound values of one generated closure."""

    __slots__ = ("lines", "params", "temps", "ops")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.params: dict[str, Any] = {}
        self.temps = 0
        self.ops = 0

    def bind(self, value: Any) -> str:
        """A parameter name holding `value` in the generated code."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return name

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def operand(self, node: ast.Node, fn: Closure, sc: _Scope, var: str) -> None:
        """Lines leaving the value of `node` (compiled to `fn`) in `var`."""
        t = type(node)
        if t is ast.Constant:
            self.lines.append(f"{var} = {self.bind(node.value)}")  # type: ignore[attr-defined]
            return
        if t is ast.Name:
            depth = sc.resolve(node.id)  # type: ignore[attr-defined]
            if depth <= 0:
                scope = "env[0]" if depth == 0 else "g"
                self.lines += [
                    "try:",
                    f"    {var} = {scope}[{self.bind(node.id)}]",  # type: ignore[attr-defined]
                    "except KeyError:",
                    f"    {var} = {self.bind(fn)}(env)",  # raises the right error
                ]
                return
        emit = getattr(fn, "emit", None)
        if emit is not None and self.ops < _MAX_FUSED:
            self.ops += 1  # counted before recursing: bounds size and recursion
            emit(self, var)
            return
        self.lines.append(f"{var} = {self.bind(fn)}(env)")

    def guarded(self, code: list[str], span: Span, var: str, call: bool = False) -> None:
        """`code` (setting `var`) then the value hook, errors placed at `span`."""
        sp = self.bind(span)
        self.lines.append("try:")
        self.lines += ["    " + line for line in code]
        self.lines += [
            f"    if type({var}) in it._value_watch:",
            f"        it._value_hook({var}, {sp})",
        ]
        if call:
            self.lines += ["except SRE as err:", f"    through(err, {sp}, src, fname)", "    raise"]
        else:
            self.lines += ["except SRE:", "    raise"]
        self.lines += [
            "except Exception as exc:",
            f"    raise _fail(it, exc, {sp}, src, fname) from _cause(it, exc)",
        ]


def _chain_emitter(
    nodes: list, fns: list, exprs: list[str], ops: list, spans: list[Span], sc: _Scope
) -> Callable[[_Emitter, str], None]:
    """Emits `nodes[0] op1 nodes[1] op2 ...` (left to right) into a variable."""

    def emit(em: _Emitter, var: str) -> None:
        em.operand(nodes[0], fns[0], sc, var)
        for node, fn, expr, op, span in zip(nodes[1:], fns[1:], exprs, ops, spans, strict=True):
            b = em.temp()
            em.operand(node, fn, sc, b)
            code = expr.format(v=var, b=b, op=em.bind(op) if "{op}" in expr else "")
            em.guarded([f"{var} = {code}"], span, var)

    return emit


def _call_emitter(
    base: ast.Node, args: list, fns: list, span: Span, sc: _Scope
) -> Callable[[_Emitter, str], None]:
    """Emits ``f(a, b, ...)`` (positional arguments) into a variable."""
    n = len(args)

    def emit(em: _Emitter, var: str) -> None:
        f = em.temp()
        em.operand(base, fns[0], sc, f)
        names = []
        for node, fn in zip(args, fns[1:], strict=True):
            a = em.temp()
            em.operand(node, fn, sc, a)
            names.append(a)
        joined = ", ".join(names)
        tup = f"({joined},)" if n == 1 else f"({joined})"
        loc = ", ".join(f"pn[{i}]: {a}" for i, a in enumerate(names))
        code = [
            f"if type({f}) is Function:",
            f"    code = {f}._code",
            f"    fi = {f}._interp",
            f"    if code.simple and code.nargs == {n} and fi.depth < fi.max_depth:",
            "        pn = code.posnames",
            "        fi.depth += 1",
            "        span_ = fi.current_span",
            "        source_ = fi.current_source",
            f"        fi.current_source = {f}._source",
            "        try:",
            f"            {var} = code.run(({{{loc}}},) + {f}._env)",
            "        finally:",
            "            fi.depth -= 1",
            "            fi.current_span = span_",
            "            fi.current_source = source_",
            "    else:",
            f"        {var} = invoke({f}, {tup}, {{}})",
            "else:",
            f"    {var} = {f}({joined})",
        ]
        em.guarded(code, span, var, call=True)

    return emit


def _tail_lines(tail: str) -> list[str]:
    """What a fused closure does with its result `v`.

    "value": returns it; "test": returns its truth (errors at TSPAN, as
    `_Compiler._test`); "if": runs BODY or ORELSE (None: nothing) on its truth,
    as a one-branch `if` statement; "store_l"/"store_g": binds it to the local
    or global NAME and calls on_assign with SPAN, as an assignment.
    """
    truth = [
        "if v is not True and v is not False:",
        "    try:",
        "        v = bool(v)",
        "    except SRE:",
        "        raise",
        "    except Exception as exc:",
        "        raise _fail(it, exc, TSPAN, src, fname) from _cause(it, exc)",
    ]
    if tail == "value":
        return ["return v"]
    if tail == "test":
        return truth + ["return v"]
    if tail == "if":
        return truth + [
            "if v:",
            "    return BODY(env)",
            "if ORELSE is not None:",
            "    return ORELSE(env)",
            "return None",
        ]
    scope = "env[0]" if tail == "store_l" else "g"
    return [
        f"{scope}[NAME] = v",
        "if type(v) in it._assign_watch:",
        "    it._assign_hook(NAME, v, SPAN)",
    ]


def _build_fused(
    emit: Callable[[_Emitter, str], None], common: dict, tail: str, extra: dict
) -> Closure:
    """The closure running `emit`'s code then `tail`; it carries `emit` (so an
    enclosing expression can inline it) and `refuse(tail, **extra)` (the same
    computation with another tail: an `if` or an assignment around it)."""
    em = _Emitter()
    emit(em, "v")
    if tail == "return_stmt":
        # `return expr` as a function's whole body: the statement's bookkeeping
        # (as `_Compiler._block` does it), then the value (see make_s_FunctionDef)
        lines = [
            "it.current_span = SPAN",
            "it.steps += 1",
            "if it.steps > it._step_cap:",
            "    it._over_budget(SPAN, src, fname)",
            "hook = it.on_statement",
            "try:",
            "    if hook is not None:",
            "        hook(SPAN)",
            *["    " + line for line in em.lines],
            "except SRE:",
            "    raise",
            "except Exception as exc:",
            "    raise _fail(it, exc, SPAN, src, fname) from _cause(it, exc)",
            "return v",
        ]
    else:
        lines = em.lines + _tail_lines(tail)
    params = list(em.params) + list(_COMMON) + list(_TAIL_PARAMS)
    text = (
        f"def factory({', '.join(params)}):\n"
        "    def fused(env):\n"
        + "".join(f"        {line}\n" for line in lines)
        + "    return fused\n"
    )
    factory = _FUSED_CACHE.get(text)
    if factory is None:
        if len(_FUSED_CACHE) >= _MAX_CACHED:  # a long REPL session: start afresh
            _FUSED_CACHE.clear()
        ns: dict[str, Any] = {}
        exec(compile(text, "<adcli fused closure>", "exec"), ns)  # noqa: S102 - our own text
        factory = _FUSED_CACHE[text] = ns["factory"]
    values = {**em.params, **common, **dict.fromkeys(_TAIL_PARAMS), **extra}
    fused = factory(**values)

    def refuse(tail: str, **extra: Any) -> Closure:
        return _build_fused(emit, common, tail, extra)

    fused.emit = emit
    fused.refuse = refuse
    return fused


# --------------------------------------------------------------- compiler


class _Compiler:
    """Compiles one Module for one Interpreter."""

    # (node class, mode) -> function: built once from the kids_*/make_* methods.
    _KIDS: dict[tuple[type, str], Callable] = {}
    _MAKE: dict[tuple[type, str], Callable] = {}

    @classmethod
    def _build_tables(cls) -> None:
        for attr in dir(cls):
            for prefix, table in (("kids_", cls._KIDS), ("make_", cls._MAKE)):
                if attr.startswith(prefix):
                    mode, _, tname = attr[len(prefix) :].partition("_")
                    table[(getattr(ast, tname), mode)] = getattr(cls, attr)

    def __init__(self, it: Interpreter, module: ast.Module, interactive: bool) -> None:
        self.it = it
        self.src = module.source
        self.interactive = interactive
        self.module_scope = _Scope("module", "<module>", "", None)
        self.scopes: dict[int, _Scope] = {}
        self._analyze(module)
        if not _Compiler._KIDS:
            _Compiler._build_tables()

    # ------------------------------------------------------ scope analysis

    def _new_scope(self, node: ast.Node, kind: str, name: str, parent: _Scope) -> _Scope:
        if parent.kind == "module":
            qual = name
        else:
            qual = f"{parent.qualname}.<locals>.{name}"
        sc = _Scope(kind, name, qual, parent)
        self.scopes[id(node)] = sc
        return sc

    def _analyze(self, module: ast.Module) -> None:
        """Pass 1: which names each scope binds (iteratively)."""
        stack: list[tuple[ast.Node, _Scope]] = [(s, self.module_scope) for s in module.body]
        while stack:
            node, sc = stack.pop()
            t = type(node)
            if t is ast.FunctionDef or t is ast.Lambda:
                name = node.name if t is ast.FunctionDef else "<lambda>"  # type: ignore[attr-defined]
                if t is ast.FunctionDef:
                    sc.bind(name)
                inner = self._new_scope(node, "function", name, sc)
                for p in node.params:  # type: ignore[attr-defined]
                    if p.name:
                        inner.locals.add(p.name)
                    if p.default is not None:
                        stack.append((p.default, sc))
                if t is ast.FunctionDef:
                    stack.extend((s, inner) for s in node.body)  # type: ignore[attr-defined]
                else:
                    stack.append((node.body, inner))  # type: ignore[attr-defined]
                continue
            if t in _COMP_NAMES:
                inner = self._new_scope(node, "comprehension", _COMP_NAMES[t], sc)
                gens = node.generators  # type: ignore[attr-defined]
                stack.append((gens[0].iter, sc))
                for i, g in enumerate(gens):
                    for name in _target_names(g.target):
                        inner.locals.add(name)
                    stack.append((g.target, inner))
                    if i:
                        stack.append((g.iter, inner))
                    stack.extend((c, inner) for c in g.ifs)
                if t is ast.DictComp:
                    stack.append((node.key, inner))  # type: ignore[attr-defined]
                    stack.append((node.value, inner))  # type: ignore[attr-defined]
                else:
                    stack.append((node.elt, inner))  # type: ignore[attr-defined]
                continue
            if t is ast.Global:
                if sc.kind != "module":
                    sc.globals.update(node.names)  # type: ignore[attr-defined]
                continue
            if t is ast.Nonlocal:
                for name in node.names:  # type: ignore[attr-defined]
                    sc.nonlocals[name] = node.span
                continue
            if t is ast.Assign:
                for target in node.targets:  # type: ignore[attr-defined]
                    for name in _target_names(target):
                        sc.bind(name)
            elif t is ast.AugAssign or t is ast.For:
                for name in _target_names(node.target):  # type: ignore[attr-defined]
                    sc.bind(name)
            elif t is ast.WithItem and node.target is not None:  # type: ignore[attr-defined]
                for name in _target_names(node.target):  # type: ignore[attr-defined]
                    sc.bind(name)
            elif t is ast.Delete:
                for target in node.targets:  # type: ignore[attr-defined]
                    for name in _target_names(target):
                        sc.bind(name)
            elif t is ast.Import:
                for alias in node.names:  # type: ignore[attr-defined]
                    sc.bind(alias.asname or alias.name.split(".")[0])
            elif t is ast.ImportFrom:
                if node.star and sc.kind != "module":  # type: ignore[attr-defined]
                    raise ScriptSyntaxError(
                        "import * only allowed at module level", node.span, self.src
                    )
                for alias in node.names:  # type: ignore[attr-defined]
                    sc.bind(alias.asname or alias.name)
            elif t is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
                sc.bind(node.name)  # type: ignore[attr-defined]
            stack.extend((c, sc) for c in node.children())
        for sc in self.scopes.values():
            for name, span in sc.nonlocals.items():
                if name in sc.globals:
                    raise ScriptSyntaxError(f"name '{name}' is nonlocal and global", span, self.src)
                p = sc.parent
                found = False
                while p is not None and p.kind != "module":
                    if name in p.locals and name not in p.globals:
                        found = True
                        break
                    p = p.parent
                if not found:
                    raise ScriptSyntaxError(
                        f"no binding for nonlocal '{name}' found", span, self.src
                    )

    # ------------------------------------------------------------- driver

    def compile_module(self, module: ast.Module) -> Callable[[Env], Any]:
        """The module body as one block closure."""
        return self._block(
            module.body,
            [self.compile(s, self.module_scope, "s") for s in module.body],
            self.module_scope,
        )

    def compile(self, root: ast.Node, scope: _Scope, mode: str) -> Closure:
        """Compile `root` (mode "s" statement, "e" expression, "t" target, "d" del target)."""
        kids_table = self._KIDS
        make_table = self._MAKE
        out: list[Closure] = []
        stack: list[tuple[ast.Node, _Scope, str, list | None]] = [(root, scope, mode, None)]
        while stack:
            node, sc, md, kids = stack.pop()
            key = (type(node), md)
            if kids is None:
                kid_fn = kids_table.get(key)
                if kid_fn is None and key not in make_table:
                    raise self._bad_node(node, md)
                kids = kid_fn(self, node, sc) if kid_fn is not None else []
                if kids:
                    stack.append((node, sc, md, kids))
                    stack.extend((k[0], k[1], k[2], None) for k in reversed(kids))
                    continue
                out.append(make_table[key](self, node, sc, []))
            else:
                n = len(kids)
                args = out[len(out) - n :]
                del out[len(out) - n :]
                out.append(make_table[key](self, node, sc, args))
        return out[0]

    def _bad_node(self, node: ast.Node, mode: str) -> ScriptSyntaxError:
        what = {"t": "cannot assign to", "d": "cannot delete"}.get(mode, "cannot compile")
        return ScriptSyntaxError(f"{what} {type(node).__name__}", node.span, self.src)

    # ------------------------------------------------------------ helpers

    def stmt_span(self, node: ast.Node) -> Span:
        """A statement's span; for compound statements only its first line."""
        if isinstance(node, _COMPOUND):
            sp = node.span
            line = self.src.line_text(sp.line).rstrip()
            return Span(sp.line, sp.column, sp.line, max(sp.column + 1, len(line) + 1))
        return node.span

    def _block(self, nodes: tuple, fns: list[Closure], sc: _Scope) -> Callable[[Env], Any]:
        """A closure running statements in order, counting steps."""
        it = self.it
        src = self.src
        fname = sc.qualname or "<module>"
        items = tuple(zip(fns, [self.stmt_span(n) for n in nodes], strict=True))

        def block(env: Env) -> Any:
            for fn, span in items:
                it.current_span = span
                it.steps += 1
                if it.steps > it._step_cap:
                    it._over_budget(span, src, fname)
                hook = it.on_statement
                try:
                    if hook is not None:
                        hook(span)
                    r = fn(env)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)
                if r is not None:
                    return r
            return None

        block.items = items  # type: ignore[attr-defined] # a loop may run them inline
        return block

    def _fname(self, sc: _Scope) -> str:
        return sc.qualname or "<module>"

    def _test(self, fn: Closure, span: Span, sc: _Scope) -> Callable[[Env], bool]:
        """A closure computing bool(fn(env)), errors placed at `span`."""
        if getattr(fn, "test_span", None) == span:
            return fn.refuse("test", TSPAN=span)  # a comparison computing its own truth
        it = self.it
        src = self.src
        fname = self._fname(sc)

        def test(env: Env) -> bool:
            v = fn(env)
            if v is True:
                return True
            if v is False:
                return False
            try:
                return bool(v)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return test

    def _truth(self, sc: _Scope) -> Callable[[Any, Span], bool]:
        it = self.it
        src = self.src
        fname = self._fname(sc)

        def truth(v: Any, span: Span) -> bool:
            try:
                return bool(v)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return truth

    # ----------------------------------------------------- fused closures

    def _fused_common(self, sc: _Scope) -> dict:
        it = self.it
        return dict(
            it=it,
            src=self.src,
            fname=self._fname(sc),
            g=it.globals,
            _fail=_fail,
            _cause=_cause,
            SRE=ScriptRuntimeError,
            Function=Function,
            invoke=_invoke,
            through=_through_call,
        )

    def _fuse(
        self,
        nodes: list,
        fns: list,
        exprs: list[str],
        ops: list,
        spans: list[Span],
        sc: _Scope,
        tail: str = "value",
        **extra: Any,
    ) -> Closure:
        """One closure for a chain of operators (see `_chain_emitter`)."""
        emit = _chain_emitter(nodes, fns, exprs, ops, spans, sc)
        return _build_fused(emit, self._fused_common(sc), tail, extra)

    # ======================================================= expressions

    def make_e_Constant(self, node: ast.Constant, sc: _Scope, c: list) -> Closure:
        value = node.value

        def const(env: Env) -> Any:
            return value

        return const

    def make_e_Name(self, node: ast.Name, sc: _Scope, c: list) -> Closure:
        name = node.id
        span = node.span
        it = self.it
        src = self.src
        fname = self._fname(sc)
        depth = sc.resolve(name)
        if depth == 0:

            def load_local(env: Env) -> Any:
                try:
                    return env[0][name]
                except KeyError:
                    raise _fail(
                        it,
                        UnboundLocalError(
                            f"cannot access local variable '{name}' where it is not"
                            " associated with a value"
                        ),
                        span,
                        src,
                        fname,
                    ) from None

            return load_local
        if depth > 0:

            def load_free(env: Env) -> Any:
                try:
                    return env[depth][name]
                except KeyError:
                    raise _fail(
                        it,
                        NameError(
                            f"cannot access free variable '{name}' where it is not associated"
                            " with a value in enclosing scope"
                        ),
                        span,
                        src,
                        fname,
                    ) from None

            return load_free
        g = it.globals
        b = it.builtins

        def load_global(env: Env) -> Any:
            try:
                return g[name]  # the common case: one lookup
            except KeyError:
                pass
            v = b.get(name, _MISSING)
            if v is _MISSING:
                raise _fail(it, NameError(it._name_error(name, env)), span, src, fname) from None
            return v

        return load_global

    def kids_e_FString(self, node: ast.FString, sc: _Scope) -> list:
        return [(p, sc, "e") for p in node.parts if not isinstance(p, str)]

    def make_e_FString(self, node: ast.FString, sc: _Scope, c: list) -> Closure:
        fns = iter(c)
        parts = tuple(p if isinstance(p, str) else next(fns) for p in node.parts)
        it = self.it
        max_len = it.guards.max_seq
        span = node.span
        src = self.src
        fname = self._fname(sc)

        def fstring(env: Env) -> str:
            out = []
            total = 0
            for p in parts:
                s = p if type(p) is str else p(env)
                total += len(s)
                out.append(s)
            if total > max_len:
                raise _fail(it, it.guards.too_long(total, "f-string"), span, src, fname) from None
            return "".join(out)

        return fstring

    def kids_e_FormattedValue(self, node: ast.FormattedValue, sc: _Scope) -> list:
        kids = [(node.value, sc, "e")]
        if node.spec is not None:
            kids.append((node.spec, sc, "e"))
        return kids

    def make_e_FormattedValue(self, node: ast.FormattedValue, sc: _Scope, c: list) -> Closure:
        value_fn = c[0]
        spec_fn = c[1] if len(c) > 1 else None
        conv = {"r": repr, "s": str, "a": ascii}.get(node.conversion or "")
        it = self.it
        fmt = it.guards.format_value
        span = node.span
        src = self.src
        fname = self._fname(sc)

        def formatted(env: Env) -> str:
            v = value_fn(env)
            spec = spec_fn(env) if spec_fn is not None else ""
            try:
                if conv is not None:
                    v = conv(v)
                return fmt(v, spec)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return formatted

    def kids_e_ListExpr(self, node: ast.ListExpr, sc: _Scope) -> list:
        return [(e, sc, "e") for e in node.elts]

    def make_e_ListExpr(self, node: ast.ListExpr, sc: _Scope, c: list) -> Closure:
        fns = tuple(c)

        def list_expr(env: Env) -> list:
            return [f(env) for f in fns]

        return list_expr

    kids_e_TupleExpr = kids_e_ListExpr

    def make_e_TupleExpr(self, node: ast.TupleExpr, sc: _Scope, c: list) -> Closure:
        fns = tuple(c)
        if len(fns) == 2:
            a, b = fns

            def pair(env: Env) -> tuple:
                return (a(env), b(env))

            return pair

        def tuple_expr(env: Env) -> tuple:
            return tuple([f(env) for f in fns])

        return tuple_expr

    def kids_e_DictExpr(self, node: ast.DictExpr, sc: _Scope) -> list:
        kids = []
        for k, v in zip(node.keys, node.values, strict=True):
            kids.append((k, sc, "e"))
            kids.append((v, sc, "e"))
        return kids

    def make_e_DictExpr(self, node: ast.DictExpr, sc: _Scope, c: list) -> Closure:
        pairs = tuple(zip(c[0::2], c[1::2], [k.span for k in node.keys], strict=True))
        it = self.it
        src = self.src
        fname = self._fname(sc)

        def dict_expr(env: Env) -> dict:
            d = {}
            for kf, vf, span in pairs:
                k = kf(env)
                v = vf(env)
                try:
                    d[k] = v
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            return d

        return dict_expr

    # ---- operators: left-deep chains run in a loop

    def kids_e_BinOp(self, node: ast.BinOp, sc: _Scope) -> list:
        rights = []
        n: ast.Node = node
        while type(n) is ast.BinOp:
            rights.append(n.right)  # type: ignore[attr-defined]
            n = n.left  # type: ignore[attr-defined]
        rights.reverse()
        return [(n, sc, "e")] + [(r, sc, "e") for r in rights]

    def make_e_BinOp(self, node: ast.BinOp, sc: _Scope, c: list) -> Closure:
        spine = []
        n: ast.Node = node
        while type(n) is ast.BinOp:
            spine.append(n)
            n = n.left  # type: ignore[attr-defined]
        spine.reverse()
        base = c[0]
        ops = self.it.binary_ops
        if len(spine) <= _MAX_FUSED:
            return self._fuse(
                [n] + [b.right for b in spine],  # type: ignore[attr-defined]
                c,
                [_BIN_INLINE[b.op] for b in spine],  # type: ignore[attr-defined]
                [ops[b.op] for b in spine],  # type: ignore[attr-defined]
                [b.span for b in spine],
                sc,
            )
        links = tuple(zip([ops[b.op] for b in spine], c[1:], [b.span for b in spine], strict=True))
        it = self.it
        src = self.src
        fname = self._fname(sc)

        def binchain(env: Env) -> Any:
            v = base(env)
            for op, right, span in links:
                b = right(env)
                try:
                    v = op(v, b)
                    if type(v) in it._value_watch:
                        it._value_hook(v, span)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            return v

        return binchain

    def kids_e_UnaryOp(self, node: ast.UnaryOp, sc: _Scope) -> list:
        return [(node.operand, sc, "e")]

    def make_e_UnaryOp(self, node: ast.UnaryOp, sc: _Scope, c: list) -> Closure:
        operand = c[0]
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span
        if node.op == "not":
            test = self._test(operand, node.operand.span, sc)

            def not_(env: Env) -> bool:
                return not test(env)

            return not_
        op = {"-": _neg, "+": _pos, "~": _invert}[node.op]

        def unary(env: Env) -> Any:
            a = operand(env)
            try:
                v = op(a)
                if type(v) in it._value_watch:
                    it._value_hook(v, span)
                return v
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return unary

    def kids_e_BoolOp(self, node: ast.BoolOp, sc: _Scope) -> list:
        return [(v, sc, "e") for v in node.values]

    def make_e_BoolOp(self, node: ast.BoolOp, sc: _Scope, c: list) -> Closure:
        first = c[0]
        rest = tuple(c[1:])
        spans = tuple(v.span for v in node.values)
        items = tuple(zip(spans, rest, strict=False))
        truth = self._truth(sc)
        if node.op == "and":

            def and_(env: Env) -> Any:
                v = first(env)
                for span, fn in items:
                    if not (v if type(v) is bool else truth(v, span)):
                        return v
                    v = fn(env)
                return v

            return and_

        def or_(env: Env) -> Any:
            v = first(env)
            for span, fn in items:
                if v if type(v) is bool else truth(v, span):
                    return v
                v = fn(env)
            return v

        return or_

    def kids_e_Compare(self, node: ast.Compare, sc: _Scope) -> list:
        return [(node.left, sc, "e")] + [(x, sc, "e") for x in node.comparators]

    def make_e_Compare(self, node: ast.Compare, sc: _Scope, c: list) -> Closure:
        left = c[0]
        operands = (node.left,) + node.comparators
        spans = [
            Span(a.span.line, a.span.column, b.span.end_line, b.span.end_column)
            for a, b in zip(operands, operands[1:], strict=False)
        ]
        links = tuple(zip([_COMPARE[o] for o in node.ops], c[1:], spans, strict=True))
        it = self.it
        src = self.src
        fname = self._fname(sc)
        truth = self._truth(sc)
        if len(links) == 1:
            ((op, right, span),) = links
            operands = [node.left, node.comparators[0]]
            fused = self._fuse(operands, c, [_COMPARE_INLINE[node.ops[0]]], [op], [span], sc)
            fused.test_span = node.span  # `_test` and `if` may refuse it with a truth tail
            return fused
        last = len(links) - 1

        def compare_chain(env: Env) -> Any:
            a = left(env)
            v: Any = None
            for i, (op, right, span) in enumerate(links):
                b = right(env)
                try:
                    v = op(a, b)
                    if type(v) in it._value_watch:
                        it._value_hook(v, span)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)
                if i < last and not (v if type(v) is bool else truth(v, span)):
                    return v
                a = b
            return v

        return compare_chain

    def kids_e_IfExp(self, node: ast.IfExp, sc: _Scope) -> list:
        return [(node.test, sc, "e"), (node.body, sc, "e"), (node.orelse, sc, "e")]

    def make_e_IfExp(self, node: ast.IfExp, sc: _Scope, c: list) -> Closure:
        test = self._test(c[0], node.test.span, sc)
        body, orelse = c[1], c[2]

        def ifexp(env: Env) -> Any:
            return body(env) if test(env) else orelse(env)

        return ifexp

    # ---- functions

    def _param_kids(self, params: tuple[ast.Param, ...], sc: _Scope) -> list:
        return [(p.default, sc, "e") for p in params if p.default is not None]

    def _function_maker(
        self,
        node: ast.Node,
        name: str,
        params: tuple[ast.Param, ...],
        default_fns: list[Closure],
        run: Callable[[Env], Any],
    ) -> Callable[[Env], Function]:
        inner = self.scopes[id(node)]
        code = _Code(name, inner.qualname, params, run)
        it = self.it
        src = self.src
        with_default = [p for p in params if p.default is not None]
        pos_fns = tuple(
            f for p, f in zip(with_default, default_fns, strict=True) if p.kind == "pos"
        )
        kw_fns = tuple(
            (p.name, f)
            for p, f in zip(with_default, default_fns, strict=True)
            if p.kind == "kwonly"
        )

        def make_function(env: Env) -> Function:
            defaults = tuple([f(env) for f in pos_fns])
            kwdefaults = {k: f(env) for k, f in kw_fns}
            return Function(code, defaults, kwdefaults, env, it, src)

        return make_function

    def kids_e_Lambda(self, node: ast.Lambda, sc: _Scope) -> list:
        return self._param_kids(node.params, sc) + [(node.body, self.scopes[id(node)], "e")]

    def make_e_Lambda(self, node: ast.Lambda, sc: _Scope, c: list) -> Closure:
        return self._function_maker(node, "<lambda>", node.params, c[:-1], c[-1])

    # ---- calls, attributes and subscripts: a chain runs in a loop

    def kids_e_Call(self, node: ast.Node, sc: _Scope) -> list:
        chain = []
        n = node
        while type(n) in _CHAIN:
            chain.append(n)
            n = n.func if type(n) is ast.Call else n.value  # type: ignore[attr-defined]
        chain.reverse()
        kids = [(n, sc, "e")]
        for link in chain:
            if type(link) is ast.Call:
                kids.extend((a.value, sc, "e") for a in link.args)  # type: ignore[attr-defined]
            elif type(link) is ast.Subscript:
                kids.append((link.index, sc, "e"))  # type: ignore[attr-defined]
        return kids

    kids_e_Attribute = kids_e_Call
    kids_e_Subscript = kids_e_Call

    def make_e_Call(self, node: ast.Node, sc: _Scope, c: list) -> Closure:
        chain = []
        n = node
        while type(n) in _CHAIN:
            chain.append(n)
            n = n.func if type(n) is ast.Call else n.value  # type: ignore[attr-defined]
        chain.reverse()
        base = c[0]
        if len(chain) == 1:
            fused = self._fuse_link(n, chain[0], c, sc)
            if fused is not None:
                return fused
        pos = 1
        links = []
        for link in chain:
            if type(link) is ast.Call:
                k = len(link.args)  # type: ignore[attr-defined]
                links.append(self._call_link(link, c[pos : pos + k], sc))  # type: ignore[arg-type]
                pos += k
            elif type(link) is ast.Subscript:
                links.append(self._subscript_link(link, c[pos], sc))  # type: ignore[arg-type]
                pos += 1
            else:
                links.append(self._attribute_link(link, sc))  # type: ignore[arg-type]
        if len(links) == 1:
            (only,) = links

            def single(env: Env) -> Any:
                return only(env, base(env))

            return single
        all_links = tuple(links)

        def chain_expr(env: Env) -> Any:
            v = base(env)
            for link in all_links:
                v = link(env, v)
            return v

        return chain_expr

    make_e_Attribute = make_e_Call
    make_e_Subscript = make_e_Call

    def _fuse_link(self, base: ast.Node, link: ast.Node, c: list, sc: _Scope) -> Closure | None:
        """`x[i]` or `f(a, b, ...)` (positional arguments only) as one closure, or None."""
        if type(link) is ast.Subscript:
            return self._fuse(
                [base, link.index],  # type: ignore[attr-defined]
                c,
                [_SUBSCRIPT_INLINE],
                [None],
                [link.span],
                sc,
            )
        if type(link) is ast.Call:
            args = link.args  # type: ignore[attr-defined]
            if len(args) > 4 or any(a.kind != "pos" for a in args):
                return None
            emit = _call_emitter(base, [a.value for a in args], c, link.span, sc)
            return _build_fused(emit, self._fused_common(sc), "value", {})
        return None

    def _call_link(
        self, node: ast.Call, fns: list[Closure], sc: _Scope
    ) -> Callable[[Env, Any], Any]:
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span
        kinds = [a.kind for a in node.args]
        invoke = _invoke
        function_type = Function
        if all(k == "pos" for k in kinds):
            argfns = tuple(fns)
            if len(argfns) == 1:
                (arg0,) = argfns

                def call1(env: Env, f: Any) -> Any:
                    a = arg0(env)
                    try:
                        if type(f) is function_type:
                            v = invoke(f, (a,), {})
                        else:
                            v = f(a)
                        if type(v) in it._value_watch:
                            it._value_hook(v, span)
                        return v
                    except ScriptRuntimeError as err:
                        _through_call(err, span, src, fname)
                        raise
                    except Exception as exc:
                        raise _fail(it, exc, span, src, fname) from _cause(it, exc)

                return call1

            def call(env: Env, f: Any) -> Any:
                args = [a(env) for a in argfns]
                try:
                    if type(f) is function_type:
                        v = invoke(f, args, {})
                    else:
                        v = f(*args)
                    if type(v) in it._value_watch:
                        it._value_hook(v, span)
                    return v
                except ScriptRuntimeError as err:
                    _through_call(err, span, src, fname)
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)

            return call
        spec = tuple(
            zip(kinds, [a.name for a in node.args], fns, [a.span for a in node.args], strict=True)
        )
        qual = _callee_name(node.func)

        def call_general(env: Env, f: Any) -> Any:
            args: list[Any] = []
            kwargs: dict[str, Any] = {}
            for kind, name, fn, aspan in spec:
                v = fn(env)
                try:
                    if kind == "pos":
                        args.append(v)
                    elif kind == "kw":
                        kwargs[name] = v
                    elif kind == "star":
                        args.extend(it.guards.materialize(_iterable_arg(v, qual)))
                    else:
                        _merge_kwargs(kwargs, v, qual)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, aspan, src, fname) from _cause(it, exc)
            try:
                if type(f) is function_type:
                    v = invoke(f, args, kwargs)
                else:
                    v = f(*args, **kwargs)
                if type(v) in it._value_watch:
                    it._value_hook(v, span)
                return v
            except ScriptRuntimeError as err:
                _through_call(err, span, src, fname)
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return call_general

    def _attribute_link(self, node: ast.Attribute, sc: _Scope) -> Callable[[Env, Any], Any]:
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span
        name = node.attr
        guards = it.guards
        if name.startswith("_"):

            def private(env: Env, obj: Any) -> Any:
                raise _fail(it, refuse_private(name), span, src, fname) from None

            return private

        def attribute(env: Env, obj: Any) -> Any:
            try:
                return get_attribute(obj, name, guards)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return attribute

    def _subscript_link(
        self, node: ast.Subscript, index_fn: Closure, sc: _Scope
    ) -> Callable[[Env, Any], Any]:
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span

        def subscript(env: Env, obj: Any) -> Any:
            i = index_fn(env)
            try:
                v = obj[i]
                if type(v) in it._value_watch:
                    it._value_hook(v, span)
                return v
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return subscript

    def kids_e_Slice(self, node: ast.Slice, sc: _Scope) -> list:
        return [(x, sc, "e") for x in (node.lower, node.upper, node.step) if x is not None]

    def make_e_Slice(self, node: ast.Slice, sc: _Scope, c: list) -> Closure:
        fns = iter(c)
        lo, hi, st = (
            next(fns) if x is not None else None for x in (node.lower, node.upper, node.step)
        )

        def slice_expr(env: Env) -> slice:
            return slice(
                lo(env) if lo is not None else None,
                hi(env) if hi is not None else None,
                st(env) if st is not None else None,
            )

        return slice_expr

    # ---- comprehensions

    def kids_e_ListComp(self, node: Any, sc: _Scope) -> list:
        inner = self.scopes[id(node)]
        gens = node.generators
        kids = [(gens[0].iter, sc, "e")]
        for i, g in enumerate(gens):
            if i:
                kids.append((g.iter, inner, "e"))
            kids.append((g.target, inner, "t"))
            kids.extend((x, inner, "e") for x in g.ifs)
        if type(node) is ast.DictComp:
            kids += [(node.key, inner, "e"), (node.value, inner, "e")]
        else:
            kids.append((node.elt, inner, "e"))
        return kids

    kids_e_DictComp = kids_e_ListComp
    kids_e_GeneratorExp = kids_e_ListComp

    def _comprehension(self, node: Any, sc: _Scope, c: list) -> tuple:
        """(first iterable, loops, result closures) for a comprehension."""
        inner = self.scopes[id(node)]
        c = list(c)
        first = c.pop(0)
        loops = []
        for i, g in enumerate(node.generators):
            iter_fn = c.pop(0) if i else None
            store = c.pop(0)
            ifs = tuple(self._test(c.pop(0), x.span, inner) for x in g.ifs)
            loops.append((iter_fn, store, ifs, g.iter.span))
        return first, tuple(loops), c

    def _comp_runner(self, node: Any, sc: _Scope, loops: tuple, emit: Callable) -> Callable:
        """A closure looping over the generators (with steps), calling emit(cenv)."""
        it = self.it
        src = self.src
        fname = self._fname(self.scopes[id(node)])
        n = len(loops)

        def run(level: int, iterable: Any, cenv: Env) -> None:
            _, store, ifs, iter_span = loops[level]
            try:
                for item in iterable:
                    it.steps += 1
                    if it.steps > it._step_cap:
                        it._over_budget(iter_span, src, fname)
                    store(cenv, item)
                    ok = True
                    for test in ifs:
                        if not test(cenv):
                            ok = False
                            break
                    if not ok:
                        continue
                    if level + 1 == n:
                        emit(cenv)
                    else:
                        run(level + 1, loops[level + 1][0](cenv), cenv)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, iter_span, src, fname) from _cause(it, exc)

        return run

    def make_e_ListComp(self, node: ast.ListComp, sc: _Scope, c: list) -> Closure:
        first, loops, (elt,) = self._comprehension(node, sc, c)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span0 = node.generators[0].iter.span
        out_ref: list[list] = []

        def emit(cenv: Env) -> None:
            out_ref[-1].append(elt(cenv))

        run = self._comp_runner(node, sc, loops, emit)

        def listcomp(env: Env) -> list:
            iterable = first(env)
            try:
                iterator = iter(iterable)
            except Exception as exc:
                raise _fail(it, exc, span0, src, fname) from _cause(it, exc)
            out_ref.append([])
            try:
                run(0, iterator, ({},) + env)
                return out_ref[-1]
            finally:
                out_ref.pop()

        return listcomp

    def make_e_DictComp(self, node: ast.DictComp, sc: _Scope, c: list) -> Closure:
        first, loops, (key_fn, value_fn) = self._comprehension(node, sc, c)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span0 = node.generators[0].iter.span
        out_ref: list[dict] = []

        def emit(cenv: Env) -> None:
            k = key_fn(cenv)
            out_ref[-1][k] = value_fn(cenv)

        run = self._comp_runner(node, sc, loops, emit)

        def dictcomp(env: Env) -> dict:
            iterable = first(env)
            try:
                iterator = iter(iterable)
            except Exception as exc:
                raise _fail(it, exc, span0, src, fname) from _cause(it, exc)
            out_ref.append({})
            try:
                run(0, iterator, ({},) + env)
                return out_ref[-1]
            finally:
                out_ref.pop()

        return dictcomp

    def make_e_GeneratorExp(self, node: ast.GeneratorExp, sc: _Scope, c: list) -> Closure:
        first, loops, (elt,) = self._comprehension(node, sc, c)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        inner_name = self._fname(self.scopes[id(node)])
        span0 = node.generators[0].iter.span
        n = len(loops)

        def genexp(env: Env) -> Any:
            iterable = first(env)
            try:
                iterator = iter(iterable)
            except Exception as exc:
                raise _fail(it, exc, span0, src, fname) from _cause(it, exc)
            cenv = ({},) + env

            def gen(level: int, iterable: Any) -> Any:
                _, store, ifs, iter_span = loops[level]
                try:
                    for item in iterable:
                        it.steps += 1
                        if it.steps > it._step_cap:
                            it._over_budget(iter_span, src, inner_name)
                        store(cenv, item)
                        if all(test(cenv) for test in ifs):
                            if level + 1 == n:
                                yield elt(cenv)
                            else:
                                yield from gen(level + 1, loops[level + 1][0](cenv))
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, iter_span, src, inner_name) from _cause(it, exc)

            return gen(0, iterator)

        return genexp

    # ============================================================ targets

    def _store_name(self, name: str, sc: _Scope, span: Span) -> Callable[[Env, Any], None]:
        """A closure binding `name` (and calling on_assign)."""
        it = self.it
        depth = sc.resolve(name)
        if depth >= 0:

            def store_env(env: Env, value: Any) -> None:
                env[depth][name] = value
                if type(value) in it._assign_watch:
                    it._assign_hook(name, value, span)

            return store_env
        g = it.globals

        def store_global(env: Env, value: Any) -> None:
            g[name] = value
            if type(value) in it._assign_watch:
                it._assign_hook(name, value, span)

        return store_global

    def make_t_Name(self, node: ast.Name, sc: _Scope, c: list) -> Closure:
        return self._store_name(node.id, sc, node.span)

    def kids_t_TupleExpr(self, node: ast.TupleExpr, sc: _Scope) -> list:
        return [(e, sc, "t") for e in node.elts]

    kids_t_ListExpr = kids_t_TupleExpr

    def make_t_TupleExpr(self, node: ast.TupleExpr, sc: _Scope, c: list) -> Closure:
        stores = tuple(c)
        n = len(stores)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span

        def unpack(env: Env, value: Any) -> None:
            try:
                if type(value) is tuple or type(value) is list:
                    items = value
                else:
                    try:
                        iterator = iter(value)
                    except TypeError:
                        raise TypeError(
                            f"cannot unpack non-iterable {type(value).__name__} object"
                        ) from None
                    items = list(islice(iterator, n + 1))
                if len(items) != n:
                    if len(items) > n:
                        raise ValueError(f"too many values to unpack (expected {n})")
                    raise ValueError(
                        f"not enough values to unpack (expected {n}, got {len(items)})"
                    )
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            for store, item in zip(stores, items, strict=True):
                store(env, item)

        return unpack

    make_t_ListExpr = make_t_TupleExpr

    def kids_t_Attribute(self, node: ast.Attribute, sc: _Scope) -> list:
        return [(node.value, sc, "e")]

    def make_t_Attribute(self, node: ast.Attribute, sc: _Scope, c: list) -> Closure:
        obj_fn = c[0]
        name = node.attr
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span

        def store_attr(env: Env, value: Any) -> None:
            obj = obj_fn(env)
            try:
                set_attribute(obj, name, value)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return store_attr

    def kids_t_Subscript(self, node: ast.Subscript, sc: _Scope) -> list:
        return [(node.value, sc, "e"), (node.index, sc, "e")]

    def make_t_Subscript(self, node: ast.Subscript, sc: _Scope, c: list) -> Closure:
        obj_fn, index_fn = c
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span

        def store_item(env: Env, value: Any) -> None:
            obj = obj_fn(env)
            i = index_fn(env)
            try:
                obj[i] = value
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return store_item

    # ---- del targets

    def make_d_Name(self, node: ast.Name, sc: _Scope, c: list) -> Closure:
        name = node.id
        depth = sc.resolve(name)
        g = self.it.globals

        def delete_name(env: Env) -> None:
            scope = env[depth] if depth >= 0 else g
            try:
                del scope[name]
            except KeyError:
                if depth == 0:
                    raise UnboundLocalError(
                        f"cannot access local variable '{name}' where it is not associated"
                        " with a value"
                    ) from None
                raise NameError(f"name '{name}' is not defined") from None

        return delete_name

    def kids_d_TupleExpr(self, node: ast.TupleExpr, sc: _Scope) -> list:
        return [(e, sc, "d") for e in node.elts]

    kids_d_ListExpr = kids_d_TupleExpr

    def make_d_TupleExpr(self, node: ast.TupleExpr, sc: _Scope, c: list) -> Closure:
        fns = tuple(c)

        def delete_all(env: Env) -> None:
            for f in fns:
                f(env)

        return delete_all

    make_d_ListExpr = make_d_TupleExpr

    kids_d_Subscript = kids_t_Subscript

    def make_d_Subscript(self, node: ast.Subscript, sc: _Scope, c: list) -> Closure:
        obj_fn, index_fn = c
        it = self.it
        src = self.src
        fname = self._fname(sc)
        span = node.span

        def delete_item(env: Env) -> None:
            obj = obj_fn(env)
            i = index_fn(env)
            try:
                del obj[i]
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return delete_item

    kids_d_Attribute = kids_t_Attribute

    def make_d_Attribute(self, node: ast.Attribute, sc: _Scope, c: list) -> Closure:
        obj_fn = c[0]
        name = node.attr

        def delete_attr(env: Env) -> None:
            delete_attribute(obj_fn(env), name)

        return delete_attr

    # ========================================================= statements

    def kids_s_ExprStmt(self, node: ast.ExprStmt, sc: _Scope) -> list:
        return [(node.value, sc, "e")]

    def make_s_ExprStmt(self, node: ast.ExprStmt, sc: _Scope, c: list) -> Closure:
        value = c[0]
        it = self.it
        if self.interactive and sc is self.module_scope:

            def echo(env: Env) -> None:
                v = value(env)
                hook = it.on_display
                if v is not None and hook is not None:
                    hook(v)

            return echo

        def expr_stmt(env: Env) -> None:
            value(env)

        return expr_stmt

    def kids_s_Assign(self, node: ast.Assign, sc: _Scope) -> list:
        return [(node.value, sc, "e")] + [(t, sc, "t") for t in node.targets]

    def make_s_Assign(self, node: ast.Assign, sc: _Scope, c: list) -> Closure:
        value = c[0]
        stores = tuple(c[1:])
        # Report bindings with the whole statement's span (not the target's).
        if len(stores) == 1 and type(node.targets[0]) is ast.Name:
            name = node.targets[0].id
            depth = sc.resolve(name)
            if depth <= 0 and hasattr(value, "refuse"):
                # a fused value (operator chain, call...) binds the name itself
                tail = "store_l" if depth == 0 else "store_g"
                return value.refuse(tail, NAME=name, SPAN=node.span)
            if depth <= 0:
                # the store inline (one call less per assignment)
                it = self.it
                g = it.globals
                span = node.span
                if depth < 0:

                    def assign_global(env: Env) -> None:
                        v = value(env)
                        g[name] = v
                        if type(v) in it._assign_watch:
                            it._assign_hook(name, v, span)

                    return assign_global

                def assign_local(env: Env) -> None:
                    v = value(env)
                    env[0][name] = v
                    if type(v) in it._assign_watch:
                        it._assign_hook(name, v, span)

                return assign_local
            store = self._store_name(node.targets[0].id, sc, node.span)

            def assign_name(env: Env) -> None:
                store(env, value(env))

            return assign_name
        stores = tuple(
            self._store_name(t.id, sc, node.span) if type(t) is ast.Name else s
            for t, s in zip(node.targets, stores, strict=True)
        )
        if len(stores) == 1:
            (store,) = stores

            def assign(env: Env) -> None:
                store(env, value(env))

            return assign

        def assign_many(env: Env) -> None:
            v = value(env)
            for s in stores:
                s(env, v)

        return assign_many

    def kids_s_AugAssign(self, node: ast.AugAssign, sc: _Scope) -> list:
        t = node.target
        if type(t) is ast.Attribute:
            return [(t.value, sc, "e"), (node.value, sc, "e")]
        if type(t) is ast.Subscript:
            return [(t.value, sc, "e"), (t.index, sc, "e"), (node.value, sc, "e")]
        return [(node.value, sc, "e")]

    def make_s_AugAssign(self, node: ast.AugAssign, sc: _Scope, c: list) -> Closure:
        it = self.it
        src = self.src
        fname = self._fname(sc)
        op = it.inplace_ops[node.op]
        target = node.target
        span = node.span
        value_fn = c[-1]
        if type(target) is ast.Name:
            load = self.make_e_Name(target, sc, [])
            depth = sc.resolve(target.id)
            if depth <= 0:
                return self._fuse(
                    [target, node.value],
                    [load, value_fn],
                    [_INPLACE_INLINE.get(node.op, _CALL_OP)],
                    [op],
                    [span],
                    sc,
                    tail="store_l" if depth == 0 else "store_g",
                    NAME=target.id,
                    SPAN=span,
                )
            store = self._store_name(target.id, sc, span)

            def aug_name(env: Env) -> None:
                a = load(env)
                b = value_fn(env)
                try:
                    v = op(a, b)
                    if type(v) in it._value_watch:
                        it._value_hook(v, span)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)
                store(env, v)

            return aug_name
        if type(target) is ast.Attribute:
            obj_fn = c[0]
            name = target.attr
            guards = it.guards

            def aug_attr(env: Env) -> None:
                obj = obj_fn(env)
                try:
                    a = get_attribute(obj, name, guards)
                except Exception as exc:
                    raise _fail(it, exc, target.span, src, fname) from _cause(it, exc)
                b = value_fn(env)
                try:
                    v = op(a, b)
                    set_attribute(obj, name, v)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)

            return aug_attr
        obj_fn, index_fn = c[0], c[1]

        def aug_item(env: Env) -> None:
            obj = obj_fn(env)
            i = index_fn(env)
            try:
                a = obj[i]
            except Exception as exc:
                raise _fail(it, exc, target.span, src, fname) from _cause(it, exc)
            b = value_fn(env)
            try:
                v = op(a, b)
                if type(v) in it._value_watch:
                    it._value_hook(v, span)
                obj[i] = v
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)

        return aug_item

    def make_s_Pass(self, node: ast.Pass, sc: _Scope, c: list) -> Closure:
        def pass_(env: Env) -> None:
            return None

        return pass_

    make_s_Global = make_s_Pass
    make_s_Nonlocal = make_s_Pass

    def make_s_Break(self, node: ast.Break, sc: _Scope, c: list) -> Closure:
        def break_(env: Env) -> _Signal:
            return BREAK

        return break_

    def make_s_Continue(self, node: ast.Continue, sc: _Scope, c: list) -> Closure:
        def continue_(env: Env) -> _Signal:
            return CONTINUE

        return continue_

    def kids_s_Return(self, node: ast.Return, sc: _Scope) -> list:
        return [(node.value, sc, "e")] if node.value is not None else []

    def make_s_Return(self, node: ast.Return, sc: _Scope, c: list) -> Closure:
        if not c:

            def return_none(env: Env) -> _Return:
                return _Return(None)

            return return_none
        value = c[0]

        def return_(env: Env) -> _Return:
            return _Return(value(env))

        return_.return_value = value  # type: ignore[attr-defined] # for make_s_FunctionDef
        return return_

    def kids_s_Raise(self, node: ast.Raise, sc: _Scope) -> list:
        return [(x, sc, "e") for x in (node.exc, node.cause) if x is not None]

    def make_s_Raise(self, node: ast.Raise, sc: _Scope, c: list) -> Closure:
        it = self.it
        if node.exc is None:

            def reraise(env: Env) -> None:
                if it._handling:
                    raise it._handling[-1]
                raise RuntimeError("No active exception to reraise")

            return reraise
        exc_fn = c[0]
        cause_fn = c[1] if len(c) > 1 else None

        def raise_(env: Env) -> None:
            exc = exc_fn(env)
            if cause_fn is not None:
                cause_fn(env)
            if isinstance(exc, type) and issubclass(exc, Exception):
                exc = exc()
            if not isinstance(exc, Exception):
                raise TypeError("exceptions must derive from BaseException")
            raise exc

        return raise_

    def kids_s_Delete(self, node: ast.Delete, sc: _Scope) -> list:
        return [(t, sc, "d") for t in node.targets]

    def make_s_Delete(self, node: ast.Delete, sc: _Scope, c: list) -> Closure:
        fns = tuple(c)

        def delete(env: Env) -> None:
            for f in fns:
                f(env)

        return delete

    def kids_s_Assert(self, node: ast.Assert, sc: _Scope) -> list:
        kids = [(node.test, sc, "e")]
        if node.msg is not None:
            kids.append((node.msg, sc, "e"))
        return kids

    def make_s_Assert(self, node: ast.Assert, sc: _Scope, c: list) -> Closure:
        test = self._test(c[0], node.test.span, sc)
        msg_fn = c[1] if len(c) > 1 else None

        def assert_(env: Env) -> None:
            if not test(env):
                if msg_fn is None:
                    raise AssertionError()
                raise AssertionError(msg_fn(env))

        return assert_

    def make_s_Import(self, node: ast.Import, sc: _Scope, c: list) -> Closure:
        it = self.it
        plan = []
        for alias in node.names:
            if alias.asname:
                plan.append((alias.name, alias.name, self._store_name(alias.asname, sc, node.span)))
            else:
                top = alias.name.split(".")[0]
                plan.append((alias.name, top, self._store_name(top, sc, node.span)))

        def import_(env: Env) -> None:
            for dotted, bound, store in plan:
                module = it._import(dotted)
                if bound != dotted:
                    module = it._import(bound)
                store(env, module)

        return import_

    def make_s_ImportFrom(self, node: ast.ImportFrom, sc: _Scope, c: list) -> Closure:
        it = self.it
        module_name = node.module
        plan = [(a.name, self._store_name(a.asname or a.name, sc, node.span)) for a in node.names]
        star = node.star
        span = node.span

        def import_from(env: Env) -> None:
            module = it._import(module_name)
            if star:
                if type(module) is not Namespace:
                    raise SandboxError(f"'from {module_name} import *' is not supported here")
                for name, value in module.__ad_members__.items():
                    if not name.startswith("_"):
                        self._store_name(name, sc, span)(env, value)
                return
            for name, store in plan:
                store(env, it._import_from(module, module_name, name))

        return import_from

    # ---- compound statements

    def kids_s_If(self, node: ast.If, sc: _Scope) -> list:
        kids = []
        for test, body in zip(node.tests, node.bodies, strict=True):
            kids.append((test, sc, "e"))
            kids.extend((s, sc, "s") for s in body)
        kids.extend((s, sc, "s") for s in node.orelse)
        return kids

    def make_s_If(self, node: ast.If, sc: _Scope, c: list) -> Closure:
        c = list(c)
        if len(node.tests) == 1 and getattr(c[0], "test_span", None) == node.tests[0].span:
            # `if a < b:` with one branch: the comparison runs the branch itself
            test = node.tests[0]
            nb = len(node.bodies[0])
            body = self._block(node.bodies[0], c[1 : 1 + nb], sc)
            orelse = self._block(node.orelse, c[1 + nb :], sc) if node.orelse else None
            return c[0].refuse("if", TSPAN=test.span, BODY=body, ORELSE=orelse)
        branches = []
        for test, body in zip(node.tests, node.bodies, strict=True):
            test_fn = self._test(c.pop(0), test.span, sc)
            fns = [c.pop(0) for _ in body]
            branches.append((test_fn, self._block(body, fns, sc)))
        orelse = self._block(node.orelse, c, sc) if node.orelse else None
        if len(branches) == 1:
            ((test, body),) = branches
            if orelse is None:

                def if_(env: Env) -> Any:
                    if test(env):
                        return body(env)
                    return None

                return if_

            def if_else(env: Env) -> Any:
                if test(env):
                    return body(env)
                return orelse(env)

            return if_else
        all_branches = tuple(branches)

        def if_chain(env: Env) -> Any:
            for test, body in all_branches:
                if test(env):
                    return body(env)
            if orelse is not None:
                return orelse(env)
            return None

        return if_chain

    def kids_s_While(self, node: ast.While, sc: _Scope) -> list:
        return [(node.test, sc, "e")] + [(s, sc, "s") for s in node.body + node.orelse]

    def make_s_While(self, node: ast.While, sc: _Scope, c: list) -> Closure:
        test = self._test(c[0], node.test.span, sc)
        nb = len(node.body)
        body = self._block(node.body, c[1 : 1 + nb], sc)
        orelse = self._block(node.orelse, c[1 + nb :], sc) if node.orelse else None
        it = self.it
        src = self.src
        fname = self._fname(sc)
        header = self.stmt_span(node)

        def while_(env: Env) -> Any:
            while True:
                it.steps += 1
                if it.steps > it._step_cap:
                    it._over_budget(header, src, fname)
                it.current_span = header
                if not test(env):
                    break
                r = body(env)
                if r is not None:
                    if r is CONTINUE:
                        continue
                    if r is BREAK:
                        return None
                    return r
            if orelse is not None:
                return orelse(env)
            return None

        return while_

    def kids_s_For(self, node: ast.For, sc: _Scope) -> list:
        return [(node.iter, sc, "e"), (node.target, sc, "t")] + [
            (s, sc, "s") for s in node.body + node.orelse
        ]

    def make_s_For(self, node: ast.For, sc: _Scope, c: list) -> Closure:
        iter_fn = c[0]
        store = c[1]
        nb = len(node.body)
        body = self._block(node.body, c[2 : 2 + nb], sc)
        orelse = self._block(node.orelse, c[2 + nb :], sc) if node.orelse else None
        it = self.it
        src = self.src
        fname = self._fname(sc)
        header = self.stmt_span(node)
        iter_span = node.iter.span
        target_span = node.target.span
        depth = sc.resolve(node.target.id) if type(node.target) is ast.Name else 1
        if depth <= 0:
            # `for name in ...`: bind the name inline (one call less per step)
            name = node.target.id  # type: ignore[attr-defined]
            g = it.globals
            items = body.items  # type: ignore[attr-defined]

            def for_name(env: Env) -> Any:
                iterable = iter_fn(env)
                scope = env[0] if depth == 0 else g
                try:
                    for item in iterable:
                        it.steps += 1
                        if it.steps > it._step_cap:
                            it._over_budget(header, src, fname)
                        it.current_span = header
                        scope[name] = item
                        if type(item) in it._assign_watch:
                            try:
                                it._assign_hook(name, item, target_span)
                            except ScriptRuntimeError:
                                raise
                            except Exception as exc:
                                raise _fail(it, exc, target_span, src, fname) from _cause(it, exc)
                        # the body's statements, as `block` runs them (one call less)
                        for fn, span in items:
                            it.current_span = span
                            it.steps += 1
                            if it.steps > it._step_cap:
                                it._over_budget(span, src, fname)
                            hook = it.on_statement
                            try:
                                if hook is not None:
                                    hook(span)
                                r = fn(env)
                            except ScriptRuntimeError:
                                raise
                            except Exception as exc:
                                raise _fail(it, exc, span, src, fname) from _cause(it, exc)
                            if r is not None:
                                break
                        else:
                            continue
                        if r is CONTINUE:
                            continue
                        if r is BREAK:
                            return None
                        return r
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, iter_span, src, fname) from _cause(it, exc)
                if orelse is not None:
                    return orelse(env)
                return None

            return for_name

        def for_(env: Env) -> Any:
            iterable = iter_fn(env)
            try:
                for item in iterable:
                    it.steps += 1
                    if it.steps > it._step_cap:
                        it._over_budget(header, src, fname)
                    it.current_span = header
                    try:
                        store(env, item)
                    except ScriptRuntimeError:
                        raise
                    except Exception as exc:
                        raise _fail(it, exc, target_span, src, fname) from _cause(it, exc)
                    r = body(env)
                    if r is not None:
                        if r is CONTINUE:
                            continue
                        if r is BREAK:
                            return None
                        return r
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, iter_span, src, fname) from _cause(it, exc)
            if orelse is not None:
                return orelse(env)
            return None

        return for_

    def kids_s_Try(self, node: ast.Try, sc: _Scope) -> list:
        kids = [(s, sc, "s") for s in node.body]
        for h in node.handlers:
            if h.type is not None:
                kids.append((h.type, sc, "e"))
            kids.extend((s, sc, "s") for s in h.body)
        kids.extend((s, sc, "s") for s in node.orelse + node.finalbody)
        return kids

    def make_s_Try(self, node: ast.Try, sc: _Scope, c: list) -> Closure:
        c = list(c)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        body = self._block(node.body, [c.pop(0) for _ in node.body], sc)
        handlers = []
        for h in node.handlers:
            type_fn = c.pop(0) if h.type is not None else None
            hbody = self._block(h.body, [c.pop(0) for _ in h.body], sc)
            store = self._store_name(h.name, sc, h.span) if h.name else None
            depth = sc.resolve(h.name) if h.name else -1
            type_span = h.type.span if h.type is not None else h.span
            handlers.append((type_fn, type_span, store, h.name, depth, hbody))
        orelse = (
            self._block(node.orelse, [c.pop(0) for _ in node.orelse], sc) if node.orelse else None
        )
        final = self._block(node.finalbody, c, sc) if node.finalbody else None
        g = it.globals

        def handle(env: Env, err: ScriptRuntimeError) -> Any:
            exc = _script_exception(err.original) if err.original is not None else err
            for type_fn, type_span, store, name, depth, hbody in handlers:
                if type_fn is not None:
                    cls = type_fn(env)
                    try:
                        matched = _exception_matches(err, exc, cls)
                    except Exception as e2:
                        raise _fail(it, e2, type_span, src, fname) from _cause(it, e2)
                    if not matched:
                        continue
                if store is not None:
                    store(env, exc)
                it._handling.append(err)
                try:
                    return hbody(env)
                finally:
                    it._handling.pop()
                    if name is not None:  # Python deletes the "as" name
                        (env[depth] if depth >= 0 else g).pop(name, None)
            raise err

        def try_except(env: Env) -> Any:
            try:
                r = body(env)
            except ScriptRuntimeError as err:
                if not err.catchable or not handlers:
                    raise
                return handle(env, err)
            if orelse is not None:
                return orelse(env)
            return r

        if final is None:
            return try_except

        def try_finally(env: Env) -> Any:
            try:
                r = try_except(env)
            except ScriptRuntimeError as err:
                if not err.catchable:
                    raise  # limits and interrupts skip finally blocks
                fr = final(env)
                if fr is not None:
                    return fr  # return/break/continue in finally drops the error
                raise
            fr = final(env)
            if fr is not None:
                return fr
            return r

        return try_finally

    def kids_s_With(self, node: ast.With, sc: _Scope) -> list:
        kids = []
        for item in node.items:
            kids.append((item.context, sc, "e"))
            if item.target is not None:
                kids.append((item.target, sc, "t"))
        kids.extend((s, sc, "s") for s in node.body)
        return kids

    def make_s_With(self, node: ast.With, sc: _Scope, c: list) -> Closure:
        c = list(c)
        items = []
        for item in node.items:
            ctx = c.pop(0)
            store = c.pop(0) if item.target is not None else None
            items.append((ctx, store, item.span))
        inner = self._block(node.body, c, sc)
        it = self.it
        src = self.src
        fname = self._fname(sc)
        for ctx, store, span in reversed(items):
            inner = self._with_item(ctx, store, span, inner, it, src, fname)
        return inner

    @staticmethod
    def _with_item(
        ctx: Closure,
        store: Closure | None,
        span: Span,
        inner: Closure,
        it: Interpreter,
        src: Source,
        fname: str,
    ) -> Closure:
        def with_(env: Env) -> Any:
            mgr = ctx(env)
            try:
                check_context_manager(mgr)
                t = type(mgr)
                exit_ = t.__exit__
                value = t.__enter__(mgr)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            try:
                if store is not None:
                    store(env, value)
                r = inner(env)
            except ScriptRuntimeError as err:
                exc = err.original if err.original is not None else err
                try:
                    suppress = exit_(mgr, type(exc), exc, None)
                except Exception as exc2:
                    raise _fail(it, exc2, span, src, fname) from _cause(it, exc2)
                if suppress and err.catchable:
                    return None
                raise
            except BaseException as exc:  # KeyboardInterrupt: still leave the context
                exit_(mgr, type(exc), exc, None)
                raise
            try:
                exit_(mgr, None, None, None)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            return r

        return with_

    def kids_s_FunctionDef(self, node: ast.FunctionDef, sc: _Scope) -> list:
        inner = self.scopes[id(node)]
        decorators = [(d, sc, "e") for d in node.decorators]
        return decorators + self._param_kids(node.params, sc) + [(s, inner, "s") for s in node.body]

    def make_s_FunctionDef(self, node: ast.FunctionDef, sc: _Scope, c: list) -> Closure:
        nd = len(node.decorators)
        decorators, c = c[:nd], c[nd:]
        define = self._make_function_def(node, sc, c)
        if not decorators:
            return define
        store = self._store_name(node.name, sc, node.span)
        it, src, span = self.it, self.src, node.span
        fname = self._fname(sc)

        def decorated(env: Env) -> None:
            # decorator expressions first, then the function, then bottom-up application
            decs = [d(env) for d in decorators]
            define(env)
            fn = self._load_defined(node.name, sc, env)
            try:
                for dec in reversed(decs):
                    fn = dec(fn)
            except ScriptRuntimeError:
                raise
            except Exception as exc:
                raise _fail(it, exc, span, src, fname) from _cause(it, exc)
            store(env, fn)

        return decorated

    def _load_defined(self, name: str, sc: _Scope, env: Env) -> Any:
        """The value just bound to `name` by a def in scope `sc`."""
        depth = sc.resolve(name)
        return env[depth][name] if depth >= 0 else self.it.globals[name]

    def _make_function_def(self, node: ast.FunctionDef, sc: _Scope, c: list) -> Closure:
        inner = self.scopes[id(node)]
        ndefaults = sum(1 for p in node.params if p.default is not None)
        block = self._block(node.body, c[ndefaults:], inner)
        only = node.body[0] if len(node.body) == 1 else None

        def run_block(env: Env) -> Any:
            r = block(env)
            if r is not None:
                return r.value
            return None

        run = run_block
        if type(only) is ast.Return and only.value is not None:  # type: ignore[attr-defined]
            # `def f(x): return expr`: what the block does for its one statement,
            # then the value itself (no block, Return statement or _Return box)
            value = c[-1].return_value  # type: ignore[attr-defined]
            it = self.it
            src = self.src
            fname = self._fname(inner)
            span = self.stmt_span(only)
            if hasattr(value, "refuse"):  # a fused expression: all in one closure
                return self._function_def(
                    node, sc, c[:ndefaults], value.refuse("return_stmt", SPAN=span)
                )

            def run_return(env: Env) -> Any:
                it.current_span = span
                it.steps += 1
                if it.steps > it._step_cap:
                    it._over_budget(span, src, fname)
                hook = it.on_statement
                try:
                    if hook is not None:
                        hook(span)
                    return value(env)
                except ScriptRuntimeError:
                    raise
                except Exception as exc:
                    raise _fail(it, exc, span, src, fname) from _cause(it, exc)

            run = run_return
        return self._function_def(node, sc, c[:ndefaults], run)

    def _function_def(
        self, node: ast.FunctionDef, sc: _Scope, default_fns: list, run: Callable[[Env], Any]
    ) -> Closure:
        make = self._function_maker(node, node.name, node.params, default_fns, run)
        store = self._store_name(node.name, sc, node.span)

        def def_(env: Env) -> None:
            store(env, make(env))

        return def_


# ----------------------------------------------------------- small helpers


def _neg(a: Any) -> Any:
    return -a


def _pos(a: Any) -> Any:
    return +a


def _invert(a: Any) -> Any:
    return ~a


def _lt(a: Any, b: Any) -> Any:
    return a < b


def _le(a: Any, b: Any) -> Any:
    return a <= b


def _gt(a: Any, b: Any) -> Any:
    return a > b


def _ge(a: Any, b: Any) -> Any:
    return a >= b


def _eq(a: Any, b: Any) -> Any:
    return a == b


def _ne(a: Any, b: Any) -> Any:
    return a != b


def _in(a: Any, b: Any) -> bool:
    return a in b


def _not_in(a: Any, b: Any) -> bool:
    return a not in b


def _is(a: Any, b: Any) -> bool:
    return a is b


def _is_not(a: Any, b: Any) -> bool:
    return a is not b


_COMPARE = {
    "<": _lt,
    "<=": _le,
    ">": _gt,
    ">=": _ge,
    "==": _eq,
    "!=": _ne,
    "in": _in,
    "not in": _not_in,
    "is": _is,
    "is not": _is_not,
}


def _callee_name(func: ast.Node) -> str:
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined]
    if type(func) is ast.Attribute:
        return func.attr  # type: ignore[attr-defined]
    return "function"


def _iterable_arg(value: Any, name: str) -> Any:
    try:
        iter(value)
    except TypeError:
        raise TypeError(
            f"{name}() argument after * must be an iterable, not {type(value).__name__}"
        ) from None
    return value


def _merge_kwargs(kwargs: dict, value: Any, name: str) -> None:
    if type(value) is not dict:
        raise TypeError(f"{name}() argument after ** must be a mapping, not {type(value).__name__}")
    for k, v in value.items():
        if type(k) is not str:
            raise TypeError("keywords must be strings")
        if k in kwargs:
            raise TypeError(f"{name}() got multiple values for keyword argument '{k}'")
        kwargs[k] = v


def _exception_matches(err: ScriptRuntimeError, exc: BaseException, cls: Any) -> bool:
    """Does ``except cls`` catch `err` (whose Python exception is `exc`)?"""
    classes = cls if type(cls) is tuple else (cls,)
    for k in classes:
        if not (isinstance(k, type) and issubclass(k, BaseException)):
            raise TypeError(
                "catching classes that do not inherit from BaseException is not allowed"
            )
    if isinstance(exc, classes):
        return True
    if isinstance(exc, AdError):
        # A host error of kind "RuntimeError" is caught by "except RuntimeError".
        as_builtin = EXCEPTIONS.get(err.kind) or getattr(builtins, err.kind, None)
        return isinstance(as_builtin, type) and issubclass(as_builtin, classes)
    return False


# --------------------------------------------------------------- interpreter


class Interpreter:
    """One script session: globals, builtins, hooks, limits, counters.

    Typical use by a host::

        host = Host(globals=names, import_module=find_module, on_value=label)
        interp = Interpreter(host, Limits(max_steps=10**6))
        interp.run(parse(Source("x.ad", text)))     # raises ScriptRuntimeError

    Attributes a host may read (or set between runs): `globals` (the script's
    module namespace), `builtins`, `on_assign`/`on_value`/`on_statement`/
    `on_display`, `current_span`/`current_source` (the statement running
    now), `steps`, `depth`, `max_steps`, `max_depth`.
    """

    def __init__(
        self, host: Host | None = None, limits: Limits | None = None, *, debug: bool = False
    ) -> None:
        host = host if host is not None else Host()
        self.host = host
        self.limits = limits if limits is not None else Limits()
        self.debug = debug
        self.guards = Guards(self.limits)
        self.binary_ops, self.inplace_ops = make_operators(self.guards)
        builtins: dict[str, object] = make_builtins(self.guards) if host.default_builtins else {}
        builtins.update(host.globals)
        self.builtins = builtins
        self.globals: dict[str, object] = {}
        # The value hooks are called only for values whose exact type is in
        # host.value_types (all values when None): a scalar loop then never
        # calls into the host. See the on_value/on_assign properties.
        self._value_types = host.value_types
        self.on_assign = host.on_assign
        self.on_value = host.on_value
        self.on_statement = host.on_statement
        self.on_display = host.on_display
        self.current_span: Span | None = None
        self.current_source: Source | None = None
        self.max_steps = self.limits.max_steps
        self.max_depth = self.limits.max_depth
        self.steps = 0
        self._step_cap = self.max_steps
        self._interrupted = False
        self.depth = 0
        self._handling: list[ScriptRuntimeError] = []

    # The closures test ``type(v) in it._value_watch`` before calling a hook:
    # one set lookup, and no call for values the host ignores. The watch sets
    # follow the hooks (a host may set or clear a hook between runs).

    @property
    def on_value(self) -> Callable[[object, Span], None] | None:
        return self._value_hook

    @on_value.setter
    def on_value(self, hook: Callable[[object, Span], None] | None) -> None:
        self._value_hook = hook  # closures call it directly (no property on the hot path)
        self._value_watch = self._watch(hook)

    @property
    def on_assign(self) -> Callable[[str, object, Span], None] | None:
        return self._assign_hook

    @on_assign.setter
    def on_assign(self, hook: Callable[[str, object, Span], None] | None) -> None:
        self._assign_hook = hook
        self._assign_watch = self._watch(hook)

    def _watch(self, hook: object) -> Any:
        if hook is None:
            return frozenset()
        if self._value_types is None:
            return _EVERY_TYPE
        return frozenset(self._value_types)

    # ------------------------------------------------------------- public

    def compile(self, module: ast.Module, *, interactive: bool = False) -> Callable[[], None]:
        """Compile `module` for this interpreter; returns a no-argument runner.

        Raises ScriptSyntaxError for scope errors (nonlocal without binding).
        `run` does this for you; compile separately to check a script first.
        """
        block = _Compiler(self, module, interactive).compile_module(module)
        source = module.source

        def runner() -> None:
            self._execute(block, source)

        return runner

    def run(self, module: ast.Module, *, interactive: bool = False) -> None:
        """Compile and execute `module` in this interpreter's globals.

        `interactive` passes each module-level expression statement's value
        (when not None) to `on_display`, as Python's REPL echoes it.
        Raises ScriptSyntaxError (compile) or ScriptRuntimeError (run).
        """
        self.compile(module, interactive=interactive)()

    def interrupt(self) -> None:
        """Ask the running script to stop at its next statement or loop step.

        Safe to call from a signal handler; the run then raises a
        ScriptRuntimeError of kind "KeyboardInterrupt".
        """
        self._interrupted = True
        self._step_cap = -1

    def variables(self) -> dict[str, object]:
        """The script's global names and values (a copy)."""
        return dict(self.globals)

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call a script function (or any callable) from the host."""
        return fn(*args, **kwargs)

    # ----------------------------------------------------------- internals

    def _recursion_needed(self) -> int:
        # About 40 Python frames per script call level and 4 per nesting level,
        # capped: the same limit guards C recursion (repr of a deeply nested
        # list), which crashes the process beyond about 50,000 levels.
        return min(2_000 + 40 * self.max_depth + 4 * MAX_NESTING, MAX_RECURSION_LIMIT)

    def _execute(self, block: Callable[[Env], Any], source: Source) -> None:
        self.steps = 0
        self._interrupted = False
        self._step_cap = self.max_steps
        self.current_source = source
        self.current_span = None
        old_limit = sys.getrecursionlimit()
        needed = self._recursion_needed()
        if needed > old_limit:
            sys.setrecursionlimit(needed)
        try:
            block(())
        except ScriptRuntimeError:
            raise
        except KeyboardInterrupt:
            span = self.current_span or Span(1, 1, 1, 2)
            raise ScriptRuntimeError(
                "interrupted",
                span,
                self.current_source,
                kind="KeyboardInterrupt",
                traceback=[TraceEntry("<module>", span, self.current_source)],
                catchable=False,
            ) from None
        except Exception as exc:  # pragma: no cover - statements convert their own errors
            span = self.current_span or Span(1, 1, 1, 2)
            raise _fail(self, exc, span, self.current_source or source, "<module>") from _cause(
                self, exc
            )
        finally:
            self.depth = 0
            self._handling.clear()
            if needed > old_limit:
                sys.setrecursionlimit(old_limit)

    def _over_budget(self, span: Span, src: Source, fname: str) -> None:
        """Raise the step-limit (or interrupt) error at `span`."""
        if self._interrupted:
            self._interrupted = False
            message, kind = "interrupted", "KeyboardInterrupt"
        else:
            message = f"step limit of {self.max_steps} exceeded (raise it with --max-steps)"
            kind = "LimitError"
        raise ScriptRuntimeError(
            message,
            span,
            src,
            kind=kind,
            traceback=[TraceEntry(fname, span, src)],
            catchable=False,
        )

    def _name_error(self, name: str, env: Env) -> str:
        message = f"name '{name}' is not defined"
        if name in _FORBIDDEN_NAMES:
            return message + f" ('{name}' is not available in adcli scripts)"
        candidates = set(self.globals) | set(self.builtins)
        for scope in env:
            candidates |= set(scope)
        import difflib  # only for this message: not a start-up import

        close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
        if close:
            message += f". Did you mean: '{close[0]}'?"
        return message

    def _import(self, dotted: str) -> Any:
        """The module for ``import dotted`` (host first, then Namespace builtins)."""
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
