"""A script session: the language evaluator wired to the autograd engine.

It builds the names a script sees (Python builtins, `torch` and its submodules,
bare torch names, adcli's `show`/`graph`/`formula`), labels tensors with the
variable and expression that made them, routes PyTorch's warnings, and hands
every backward/grad event to a callback.  It prints nothing itself: output goes
through the `Output` it is given, and rendering is the caller's business.
"""

from __future__ import annotations

import contextlib
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcli.autograd import config as engine_config
from adcli.autograd import engine, grad_mode
from adcli.autograd import graph as autograd_graph
from adcli.autograd import random as rng
from adcli.autograd.engine import BackwardEvent
from adcli.autograd.node import SavedTensorError
from adcli.autograd.tensor import ENGINE_WARNING_PREFIXES, WARN_ONCE, Tensor
from adcli.lang import host as lang_host
from adcli.lang.compiler import _script_name
from adcli.lang.errors import AdError
from adcli.lang.host import MODULE_HINTS, Host, Limits, Namespace, library_hint
from adcli.lang.parser import parse
from adcli.lang.source import Source, Span
from adcli.provenance import Label


@dataclass
class WarningRecord:
    """A UserWarning the script caused: its line, PyTorch's text, and adcli's notes."""

    line: int | None
    message: str
    notes: list[str] = field(default_factory=list)


class Output:
    """Where a session writes: `out` for the script's own output and reports,
    `err` for warnings and diagnostics (often the same buffer)."""

    def __init__(self, out: Callable[[str], Any], err: Callable[[str], Any]) -> None:
        self.out = out
        self.err = err


@dataclass
class Hooks:
    """What the caller wants told: backward/grad events and `show`/`graph` calls."""

    on_event: Callable[[BackwardEvent, Span | None, str | None], None] | None = None
    on_show: Callable[[list[Tensor], Span | None], None] | None = None
    on_graph: Callable[[Tensor, Span | None], None] | None = None
    on_formula: Callable[[Tensor, Span | None], None] | None = None


@dataclass
class SessionOptions:
    """Limits for one session."""

    max_steps: int = 10_000_000
    max_depth: int = 200
    max_numel: int = 50_000_000
    max_tensor_memory: int | None = 1024**3  # bytes; None or 0: no budget
    debug: bool = False
    initial_names: set[str] = field(default_factory=set)


def _pytorch_library() -> lang_host.Library:
    """PyTorch's names, for the language's error messages (loaded at the first one)."""
    from adcli.scriptlib.pytorch_names import library

    return library()


def build_modules() -> dict[str, Namespace]:
    """`Namespace` objects for every importable module, submodules linked; the
    language learns PyTorch's names, to say which ones adcli lacks."""
    from adcli.scriptlib.torchapi import module_table

    lang_host.library = _pytorch_library
    table = module_table()
    built: dict[str, Namespace] = {}
    # children before parents, so a parent can hold its submodules
    for name in sorted(table, key=lambda n: -n.count(".")):
        members = {}
        for k, v in table[name].items():
            if isinstance(v, str) and v.startswith("module:"):
                v = built[v[len("module:") :]]
            members[k] = v
        built[name] = Namespace(name, members)
    return built


class Session:
    """One run (or one REPL): an interpreter, its engine settings and its labels."""

    def __init__(self, output: Output, hooks: Hooks, options: SessionOptions) -> None:
        from adcli.lang.evaluator import Interpreter

        self.output = output
        self.hooks = hooks
        self.options = options
        self.source: Source | None = None
        self._name_counts: dict[str, int] = {}
        self._texts: dict[tuple[int, bool], tuple[Span, Source, str]] = {}  # see _text
        self._warned_lines: set[tuple[str, int, str]] = set()
        # version counter id -> (counter, version, line of the in-place change)
        self._changed_at: dict[int, tuple[list[int], int, int]] = {}
        # backward pass id -> line of the call (to say which call freed saved values)
        self._pass_lines: dict[int, int] = {}
        # PyTorch's UserWarnings shown so far, with the notes printed after each
        self.warnings: list[WarningRecord] = []
        # leaf id -> (its .grad after the last pass, passes summed in it, their lines)
        self._accum: dict[int, tuple[Any, int, list[int | None]]] = {}
        self._accum_noted: dict[int, tuple[Tensor, int | None]] = {}  # leaf id -> call line
        self.modules = build_modules()
        names = self._global_names()
        host = Host(
            globals=names,
            import_module=self._import,
            on_assign=self._on_assign,
            on_value=self._on_value,
            value_types=(Tensor,),  # the hooks only label tensors
        )
        limits = Limits(max_steps=options.max_steps, max_depth=options.max_depth)
        self.interp = Interpreter(host, limits, debug=options.debug)
        self.initial_names = set(names)
        self._reset_engine()

    # ------------------------------------------------------------ running
    def _reset_engine(self) -> None:
        """Each session starts from PyTorch's fresh-process state."""
        from adcli.autograd import anomaly, forward_ad
        from adcli.scriptlib import compat

        anomaly.reset()
        compat.reset_state()  # default dtype, device and print options
        rng.default_generator.manual_seed(rng.DEFAULT_SEED)
        engine.warned.create_graph = False
        grad_mode.reset()
        autograd_graph.reset()
        forward_ad.reset()  # no dual level left open by an earlier run
        engine_config.config.max_numel = self.options.max_numel
        engine_config.config.max_tensor_bytes = self.options.max_tensor_memory or None
        engine_config.config.warn = self._warn
        engine_config.config.forward_trace = self._forward_trace
        engine.listeners[:] = [self._on_backward]

    def run_text(self, text: str, path: str, *, interactive: bool = False) -> None:
        """Parse and run a script (or REPL input) in this session; raises AdError."""
        source = Source(path, text)
        self.source = source
        module = parse(source)
        with quiet_numpy():
            self.interp.run(module, interactive=interactive)

    def run_guarded(
        self, text: str, path: str, *, debug: bool = False
    ) -> tuple[AdError | None, str | None]:
        """Run a script; return (its error, or None; the last line of an adcli bug's
        traceback, or None). With `debug` an adcli bug is raised instead."""
        try:
            self.run_text(text, path)
        except AdError as e:
            e.notes = self.explain(getattr(e, "original", None))
            return e, None
        except Exception:
            if debug:
                raise
            return None, traceback.format_exc().strip().splitlines()[-1]
        return None, None

    def close(self) -> None:
        """Stop listening to the engine and give its warnings back to Python's."""
        if self._on_backward in engine.listeners:
            engine.listeners.remove(self._on_backward)
        if engine_config.config.warn == self._warn:
            engine_config.config.warn = engine_config._default_warn
        if engine_config.config.forward_trace == self._forward_trace:
            engine_config.config.forward_trace = None

    def _forward_trace(self) -> str | None:
        """The script's stack as Python's traceback prints it, for anomaly mode."""
        return (
            "".join(
                f'  File "{e.source.path}", line {e.span.line}, in {e.name}\n'
                f"    {e.source.line_text(e.span.line).strip()}\n"
                for e in self.interp.stack()
            )
            or None
        )

    def dispose(self) -> None:
        """End the session: drop the script's names now. The evaluator and this
        session refer to each other (builtins, hooks), so without this a finished
        run's tensors and graphs would wait for the cyclic collector."""
        self.close()
        self.interp.globals.clear()

    def variables(self) -> dict[str, Any]:
        """The script's own global names (not the builtins it started with)."""
        return {k: v for k, v in self.interp.globals.items() if not k.startswith("__")}

    # ------------------------------------------------------------ names
    def _global_names(self) -> dict[str, Any]:
        m = self.modules
        names: dict[str, Any] = {}
        # bare torch names first; Python builtins (max, sum, abs, float ...) win over
        # them because the evaluator layers host globals over its own builtins only
        # for names the script does not find there.
        for mod in ("torch.autograd.functional", "torch.optim", "torch.nn.functional", "torch"):
            for k, v in m[mod].__ad_members__.items():
                if not isinstance(v, Namespace):
                    names.setdefault(k, v)
        names["grad"] = m["torch.autograd"].__ad_members__["grad"]
        for py_name in _PYTHON_WINS:
            names.pop(py_name, None)
        names.update(
            torch=m["torch"],
            F=m["torch.nn.functional"],
            nn=m["torch.nn"],
            optim=m["torch.optim"],
            autograd=m["torch.autograd"],
            print=Builtin("print", self._print),
            show=Builtin("show", self._show),
            graph=Builtin("graph", self._graph),
            formula=Builtin("formula", self._formula),
        )
        # a script is the main program, so `if __name__ == "__main__":` runs its body
        # (compiled scripts read dunder names under their renamed form)
        names[_script_name("__name__")] = "__main__"
        return names

    def _import(self, dotted: str) -> Any:
        mod = self.modules.get(dotted)
        if mod is None:
            if dotted.split(".")[0] == "torch":
                hint = library_hint(dotted)
                raise ModuleNotFoundError(
                    f"adcli does not support {dotted}" + (f": {hint}" if hint else " yet")
                )
            from adcli.scriptlib.pymodules import UNSUPPORTED_MODULES, unsupported_module

            top = dotted.split(".")[0]
            if top not in UNSUPPORTED_MODULES or dotted not in (top, f"{top}.pyplot", "os.path"):
                raise ModuleNotFoundError(unsupported_module(dotted))
            # tutorials often import what they never use (`import os`): the import
            # works, and the first member a script reads says why it is missing
            MODULE_HINTS[top] = UNSUPPORTED_MODULES[top]
            mod = self.modules[dotted] = Namespace(dotted, {})
        return mod

    # ------------------------------------------------------------ hooks
    def _on_value(self, value: object, span: Span) -> None:
        if type(value) is not Tensor:
            return
        if value._vc[0]:
            self._note_version(value, span)
        src = self.interp.current_source or self.source  # a function's own, in a REPL
        if src is None:
            return
        if value._label is None:
            self._attach(value, Label(None, self._text(src, span), span.line))
        else:
            self._relabel_if_changed(value, src, span)

    def _text(self, src: Source, span: Span, assigned: bool = False) -> str:
        """A label's text: the one-line source of `span` (with `assigned`, the
        part after the first "=", for an assignment statement's span).

        Memoised per span: a loop evaluates the same expressions again and
        again, and re-slicing the source for each new tensor cost ~1 us. The
        memo holds the span and source, so an `id` is never reused while in it.
        """
        key = (id(span), assigned)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is span and hit[1] is src:
            return hit[2]
        text = src.snippet(span)
        if assigned and "=" in text:
            text = text.split("=", 1)[1].strip()
        text = _one_line(text)
        self._texts[key] = (span, src, text)
        return text

    def _relabel_if_changed(self, t: Tensor, src: Source, span: Span) -> None:
        """After an in-place op the tensor has a new, unlabelled grad_fn: give that
        node the in-place expression (`h.add_(1)`), keeping the tensor's name."""
        node = t._node
        if node is None or node._label is not None:
            return
        old = t._label
        label = Label(old.name if old is not None else None, self._text(src, span), span.line)
        t._label = None
        self._attach(t, label)

    def _note_version(self, t: Tensor, span: Span) -> None:
        """Remember the line where a tensor was last changed in place."""
        vc = t._vc
        seen = self._changed_at.get(id(vc))
        if seen is None or seen[1] != vc[0]:
            line = self.interp.current_span.line if self.interp.current_span else span.line
            self._changed_at[id(vc)] = (vc, vc[0], line)

    @staticmethod
    def _attach(t: Tensor, label: Label) -> None:
        """Label the tensor and its graph node (which outlives an unnamed tensor)."""
        t._label = label
        if not grad_mode.state.enabled and not t._requires_grad:
            label.no_grad = True  # for the note on "does not require grad" (adcli.core.hints)
        node = t._node
        if node is None and t._requires_grad:
            node = t._accumulator()
        if node is not None and node._label is None:
            label.value = t.data_
            node._label = label

    def _on_assign(self, name: str, value: object, span: Span) -> None:
        if type(value) is not Tensor:
            return
        if value._vc[0]:
            self._note_version(value, span)
        src = self.interp.current_source or self.source
        if value._label is not None and src is not None:
            self._relabel_if_changed(value, src, span)
        label = value._label
        if label is None:
            expr = self._text(src, span, assigned=True) if src is not None else name
            label = Label(None, expr, span.line)
            self._attach(value, label)
        if label.name is None:
            n = self._name_counts.get(name, 0) + 1
            self._name_counts[name] = n
            label.name = name if n == 1 else f"{name}@{n}"

    def _warn(self, message: str) -> None:
        """PyTorch's UserWarnings, printed once per message and script line as Python does
        (once per run for those PyTorch itself gives once)."""
        span = self.interp.current_span if hasattr(self, "interp") else None
        path = self.source.path if self.source is not None else "<script>"
        line = span.line if span is not None else 0
        if span is not None:  # the running call's own line, in a statement over several
            line = self.interp.current_line or line
        once = message in WARN_ONCE or message.startswith(ENGINE_WARNING_PREFIXES)
        key = ("", 0, message) if once else (path, line, message)
        if key in self._warned_lines:
            return
        self._warned_lines.add(key)
        src = self.interp.current_source or self.source
        code = src.line_text(line).strip() if src is not None and line else ""
        notes = self._warning_notes(message, sys._getframe(1))
        self.warnings.append(WarningRecord(line or None, message, notes))
        # as Python's warnings module shows it: the message, then the source line
        self.output.err(
            f"{path}:{line}: UserWarning: {message}\n"
            + (f"  {code}\n" if code else "")
            + "".join(f"note: {n}\n" for n in notes)
        )

    def _warning_notes(self, message: str, caller: Any) -> list[str]:
        """Notes after a UserWarning: for `.grad` of a non-leaf, the line that made it one."""
        from adcli.autograd.tensor import NONLEAF_GRAD_WARNING
        from adcli.core.hints import nonleaf_grad_note

        if message != NONLEAF_GRAD_WARNING:
            return []
        t = caller.f_locals.get("self") if caller is not None else None
        if not isinstance(t, Tensor):
            return []
        return [nonleaf_grad_note(t)]

    def _on_backward(self, event: BackwardEvent) -> None:
        span = self.interp.current_span
        if span is not None:
            self._pass_lines[event.pass_id] = span.line
        if event.kind == "backward" and event.entries:
            self._note_accumulation(event, span.line if span is not None else None)
        if self.hooks.on_event is None:
            return
        self._label_parameters(span.line if span is not None else 0)
        text = None
        src = self.interp.current_source or self.source
        if span is not None and src is not None:
            text = self._text(src, span)
        self.hooks.on_event(event, span, text)

    def _note_accumulation(self, event: BackwardEvent, line: int | None) -> None:
        """Count, per leaf, the backward passes whose gradients its .grad holds; the
        first time one holds two, add a note to this pass's report (only in a script
        that reads .grad or steps an optimizer: there the sum is what gets used)."""
        from adcli.core.hints import accumulated

        for t, n, lines in accumulated(event, self._accum, line):
            noted = self._accum_noted.get(id(t))
            # once per leaf; again at the same call in a loop, where reports fold and
            # the last one (printed in full) must still say it
            if (noted is not None and (noted[0] is not t or noted[1] != line)) or (
                not self._uses_grads()
            ):
                continue
            self._accum_noted[id(t)] = (t, line)
            event.notes.append(_accumulation_note(t, n, lines))

    def _uses_grads(self) -> bool:
        src = self.interp.current_source or self.source
        return src is not None and _READS_GRAD.search(src.text) is not None

    def _label_parameters(self, line: int) -> None:
        """Name the parameters the script holds by their path (`model.fc.weight` for a
        model's, `w` for a bare nn.Parameter), for the report. Parameters are made
        inside the layers, where no assignment labels them; this runs before a report."""
        from adcli.nn import Module, Parameter

        for var, v in list(self.interp.globals.items()):
            if isinstance(v, Module) and not var.startswith("__"):
                for pname, p in v.named_parameters():
                    if p._label is None:
                        self._attach(p, Label(f"{var}.{pname}", "", line))
            elif type(v) is Parameter and v._label is None:
                self._attach(v, Label(var, "", line))

    def explain(self, exc: BaseException | None) -> list[str]:
        """Beyond PyTorch's sentence: `note:` lines naming the script lines behind an
        error (saved tensors freed or changed, a root that does not require grad, a
        non-leaf given to an optimizer, shapes that do not multiply, a misspelled keyword)."""
        from adcli.autograd.anomaly import AnomalyError, made_at

        if exc is None:
            return []
        learner = self._learner_notes(exc)
        if learner:
            return learner
        if not isinstance(exc, (SavedTensorError, AnomalyError)):
            exc = exc.__cause__  # a script's `raise e` of the RuntimeError it caught
        if isinstance(exc, AnomalyError):
            where = made_at(exc.node)
            return [where] if where else []
        if not isinstance(exc, SavedTensorError):
            return []
        node = exc.node
        label = getattr(node, "_label", None)
        made = f" (line {label.line})" if label is not None else ""
        if exc.counter is None:
            freed = self._pass_lines.get(getattr(node.saved, "pass_id", None))
            if freed is None:
                return []
            return [
                f"{node.name()}{made} saved values that the backward at line {freed} "
                "freed; pass retain_graph=True there to keep them"
            ]
        seen = self._changed_at.get(id(exc.counter))
        where = f" at line {seen[2]}" if seen is not None and seen[0] is exc.counter else ""
        return [
            f"{node.name()}{made} saved a tensor that was then changed in place{where}; "
            "use an out-of-place operation (x = x + 1) or .clone() before changing it"
        ]

    def _learner_notes(self, exc: BaseException) -> list[str]:
        """The notes of adcli.core.hints for the common mistakes (empty for other errors)."""
        from adcli.core import hints

        codes = self.interp._codes
        if isinstance(exc, RuntimeError):
            notes = hints.no_grad_note(exc, codes, self.source)
            return notes or hints.shape_note(exc, codes, self._error_text(exc))
        if isinstance(exc, ValueError):
            return hints.nonleaf_param_note(exc)
        if isinstance(exc, TypeError):
            notes = hints.keyword_note(exc, self._keywords(str(exc)))
            if notes or "'NoneType'" not in str(exc):
                return notes
            frame = hints.script_frame(exc, codes)
            line = frame.f_lineno if frame is not None else None
            # `w - lr * w.grad` failing right after reading .grad of a non-leaf there
            return [n for w in self.warnings if w.line == line for n in w.notes][:1]
        return []

    def _error_text(self, exc: BaseException) -> str | None:
        """The script text of the expression that raised `exc` (innermost script frame)."""
        tb = exc.__traceback__
        found = None
        while tb is not None:
            if tb.tb_frame.f_code in self.interp._codes:
                found = tb
            tb = tb.tb_next
        if found is None:
            return None
        span, src = self.interp._span_at(found.tb_frame.f_code, found.tb_lasti)
        return src.snippet(span) if span is not None and src is not None else None

    def _keywords(self, message: str) -> list[str]:
        """Keyword names of the function a TypeError names (`ones()`, `SGD.__init__()`)."""
        import inspect

        from adcli.nn import Module

        fn = message.split("(", 1)[0]
        owner, _, attr = fn.rpartition(".")
        found: list[Any] = []
        pools: list[dict[str, Any]] = [ns.__ad_members__ for ns in self.modules.values()]
        pools.append({k: v for k, v in self.interp.globals.items() if "$" not in k})
        for pool in pools:
            for name, v in pool.items():
                if owner and name == owner and isinstance(v, type):
                    found.append(getattr(v, attr, None))
                elif not owner and name == fn and callable(v):
                    found.append(v)
        if owner == "Tensor":
            found.append(getattr(Tensor, attr, None))
        elif owner and not found:
            for v in self.interp.globals.values():
                if isinstance(v, Module) and type(v).__name__ == owner:
                    found.append(getattr(type(v), attr, None))
        names: dict[str, None] = {}
        for f in found:
            try:
                params = inspect.signature(f).parameters.values()
            except (TypeError, ValueError):
                continue
            for p in params:
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                    names[p.name] = None
        return list(names)

    # ------------------------------------------------------------ builtins
    def _print(
        self, *args: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False
    ) -> None:
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("sep and end must be None or a string")
        for a in args:  # a nested list sharing its items could print for ever
            self.interp.guards.check_repr(a)
        self.output.out(sep.join(_to_str(a) for a in args) + end)

    def _show(self, *tensors: Any) -> None:
        ts = [t for t in tensors if isinstance(t, Tensor)]
        if len(ts) != len(tensors):
            raise TypeError("show() takes tensors")
        if self.hooks.on_show is not None:
            self.hooks.on_show(ts, self.interp.current_span)

    def _graph(self, t: Any) -> None:
        if not isinstance(t, Tensor):
            raise TypeError("graph() takes a tensor")
        if self.hooks.on_graph is not None:
            self.hooks.on_graph(t, self.interp.current_span)

    def _formula(self, t: Any) -> None:
        if not isinstance(t, Tensor):
            raise TypeError("formula() takes a tensor")
        if self.hooks.on_formula is not None:
            self.hooks.on_formula(t, self.interp.current_span)


@contextlib.contextmanager
def quiet_numpy() -> Iterator[None]:
    """No NumPy floating-point warning (divide by zero, overflow, invalid value, ...)
    while a script runs: PyTorch computes inf and NaN silently, and where PyTorch
    does warn, the engine gives PyTorch's own UserWarning through `config.warn`.
    Set once per run, not per operation: entering `np.errstate` costs about 1 us."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # NumPy's Python-level RuntimeWarnings ("Degrees of freedom <= 0", "Mean of
        # empty slice") would name adcli's source files
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


class Builtin:
    """A session-bound builtin that prints like Python's (`<built-in function print>`)."""

    __slots__ = ("__name__", "_fn")
    __ad_attrs__ = frozenset()

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.__name__ = name
        self._fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<built-in function {self.__name__}>"


# Python's own builtins keep their meaning in a script, as after `import torch`.
_PYTHON_WINS = (
    "abs all any max min sum round pow float int bool len range list tuple print "
    "zip enumerate sorted reversed str dict"
).split()


#: A script that reads a .grad (not only assigns it) or steps an optimizer.
_READS_GRAD = re.compile(r"\.grad\b(?!\s*=[^=])|\.step\(")


def _accumulation_note(t: Tensor, n: int, lines: list[int | None]) -> str:
    from adcli.provenance import label_of

    lab = label_of(t)
    name = (lab.name or lab.expr) if lab is not None else "a leaf"
    name = name.split("@", 1)[0]
    where = f" (line {lab.line})" if lab is not None and lab.line else ""
    known = sorted({ln for ln in lines if ln})
    at = ""
    if known:
        listed = ", ".join(map(str, known))
        at = f" at line {listed}" if len(known) == 1 else f" at lines {listed}"
    return (
        f"{name}.grad{where} now holds the sum of the gradients of {n} backward() calls{at}: "
        f"nothing reset it in between; call optimizer.zero_grad(), {name}.grad.zero_() or "
        f"set {name}.grad = None before each backward() unless you mean to add them up"
    )


def _one_line(text: str) -> str:
    """Source text as one line (a call split over lines reads fine in a table cell)."""
    return " ".join(text.split())


def _to_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    return str(v)


__all__ = ["AdError", "Hooks", "Output", "Session", "SessionOptions", "build_modules"]
