"""Random, type-correct `.ad` programs, grown statement by statement next to real PyTorch.

The generator keeps a Python namespace in which it executes every statement it
writes, with the real torch. So it always knows the exact type, shape, dtype,
flags and values of every variable, and a program is valid by construction:

- a *pure* candidate (a new variable from an operation) that raises in torch is
  dropped, or, now and then, kept inside ``try/except`` as a deliberate error;
- an *effectful* statement (backward, ``autograd.grad``, hooks, in-place ops,
  optimizer steps, ...) is kept whatever happens; when torch raised, the program
  wraps it in ``try: ... except Exception as e: print("@n!", repr(e))`` so both
  engines print the exception's type and sentence and go on.

Every variable also carries two flags that decide how its records are compared
(see `differ.py`): ``exact`` (the value is expected bit for bit: literals and
IEEE-exact operations on exact inputs) and ``f64`` (float64 with float64-accurate
inputs: tight tolerance). Operations with a kink (relu, abs, clamp, max ties,
floor, comparisons, ...) are only applied to inexact inputs that stay away from
the kink, and every float result is checked against a float64 evaluation on
slightly perturbed inputs, so an ill-conditioned value (whose last bits would
decide the outcome) never reaches a comparison.

`generate(seed)` returns the program text; the same seed always gives the same text.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

HEADER = ("import torch", "import torch.nn.functional as F")

#: float literals: mostly dyadic (sums and products stay exact), some decimals
DYADIC = (0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 0.25, -0.25, 3.0, -3.0, 0.75, 2.5, -4.0)
SHAPES = (
    ((), 14),
    ((1,), 4),
    ((2,), 10),
    ((3,), 12),
    ((4,), 6),
    ((0,), 3),
    ((2, 3), 12),
    ((3, 2), 6),
    ((2, 2), 8),
    ((1, 3), 4),
    ((3, 1), 4),
    ((0, 2), 2),
    ((2, 3, 2), 4),
    ((2, 1, 3), 3),
    ((1, 2, 2), 3),
)
#: values further from a kink than this (relative) are safe from rounding noise
MARGIN = 1e-3
#: results larger than this are dropped (overflow later would be rounding-sensitive)
MAX_ABS = 1e4
MAX_NUMEL = 64

# how an operation computes, for the `exact` flag of its result
MOVE = "move"  # values copied or picked (views, cat, index, clone, where ...)
IEEE = "ieee"  # one correctly rounded IEEE operation per element (+ - * / ...)
ORDER = "order"  # sums whose rounding depends on the order (sum, mean, mm, norm ...)
TRANSC = "transc"  # transcendental functions: never bit-identical across libraries
DISCRETE = "discrete"  # integer or bool results (floor, comparisons, argmax ...)


@dataclass
class Meta:
    """What the comparison may assume about a variable's values."""

    exact: bool
    f64: bool


@dataclass
class Plan:
    """A candidate operation: `expr` reads the variables `inputs`."""

    expr: str
    inputs: list[str]
    how: str
    kinks: list[tuple[Any, ...]] = field(default_factory=list)
    feature: str = ""
    #: shape-sensitive ops may be kept as deliberate errors when they fail
    may_fail: bool = True
    #: results to drop (the reason is the family's): called with torch's outputs
    reject: Any = None


@dataclass
class Program:
    """A generated program and the features it exercises."""

    seed: str
    text: str
    features: Counter = field(default_factory=Counter)
    #: the statements `text` joins (for `repaired`)
    stmts: list[str] = field(default_factory=list)

    def repaired(self, line: int) -> Program | None:
        """This program with the statement at `line` inside try/except printing what it
        raises (a new `!` record), or None when it is one already.

        For a refusal the generator cannot foresee: its own reads of a view's grad_fn
        (to choose what to print) derive the view's node in its torch, which the program
        run afresh does not, and PyTorch's in-place check reads the node as it stands
        (an underived one is a leaf). The statement stays, as a tested error."""
        start = 1
        for i, stmt in enumerate(self.stmts):
            end = start + stmt.count("\n")
            if start <= line <= end:
                if stmt.startswith("try:"):
                    return None
                tags = [int(n) for n in re.findall(r"'@(\d+)", self.text)]
                stmts = list(self.stmts)
                stmts[i] = wrap(stmt, f"@{max(tags, default=0) + 1}!")
                features = Counter(self.features)
                features["generator:repaired"] += 1
                return Program(self.seed, "\n".join(stmts) + "\n", features, stmts)
            start = end + 1
        return None


def _noop(*args: Any, **kwargs: Any) -> None:
    """adcli's show/graph/formula builtins."""


class Gen:
    """Grows one program; `self.ns` is the torch namespace the statements ran in."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.ns: dict[str, Any] = {"__name__": "__fuzz_gen__", "show": _noop, "graph": _noop}
        self.ns["formula"] = _noop
        self.stmts: list[str] = []
        self.meta: dict[str, Meta] = {}
        self.features: Counter = Counter()
        self.n_var = 0
        self.n_tag = 0
        self.f64_mode = self.rng.random() < 0.25
        self.specials = self.rng.random() < 0.3  # nan/inf literals in this program
        self.all_f64 = True  # no float32 inexact value made yet: grads compare tightly
        self.focus = ""  # a variable operations should prefer as input (double backward)
        self._sink = io.StringIO()
        for line in HEADER:
            self.emit(line)
        self.emit(f"torch.manual_seed({self.rng.randrange(1000)})")

    # ------------------------------------------------------------ running

    def run(self, text: str) -> Exception | None:
        """Execute `text` in the namespace (prints go nowhere); the exception it raised."""
        self._sink.seek(0)
        self._sink.truncate()
        with contextlib.redirect_stdout(self._sink), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(text, "<gen>", "exec"), self.ns)
            except Exception as e:
                return e
            finally:
                torch.set_grad_enabled(True)
                self.note_grad_aliasing()
        return None

    def note_grad_aliasing(self) -> None:
        """Mark the program when two tensors' `.grad` share memory: PyTorch's
        AccumulateGrad adopted gradients that are views of one buffer (a deliberate
        divergence: adcli's `.grad` always owns its memory)."""
        if "divergence:grad-stealing" in self.features:
            return
        spans = []
        seen: set[int] = set()
        for v in self.ns.values():
            if not isinstance(v, torch.Tensor) or id(v) in seen or not _healthy(v):
                continue
            seen.add(id(v))
            g = v.grad if (v.is_leaf or v.retains_grad) else None
            if g is None or g.numel() == 0 or g.layout != torch.strided:
                continue
            reach = sum((n - 1) * st for n, st in zip(g.shape, g.stride(), strict=True))
            first = g.data_ptr()
            spans.append((first, first + (reach + 1) * g.element_size(), id(g)))
        spans.sort()
        for (_, end, ga), (start, _, gb) in zip(spans, spans[1:], strict=False):
            if start < end and ga != gb:
                self.features["divergence:grad-stealing"] += 1
                return

    def eval(self, expr: str, ns: dict[str, Any] | None = None) -> Any:
        """Evaluate `expr` (raises what torch raises)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(compile(expr, "<gen>", "eval"), self.ns if ns is None else ns)

    def emit(self, text: str) -> Exception | None:
        """Append a statement to the program and run it."""
        self.stmts.append(text)
        return self.run(text)

    def effect(self, body: str, feature: str) -> Exception | None:
        """Append an effectful statement; wrapped in try/except when torch raised."""
        self.features[feature] += 1
        before = self.snapshot()
        err = self.run(body)
        if err is not None:
            tag = self.tag("!")
            self.stmts.append(wrap(body, tag))
            self.features["error:" + type(err).__name__] += 1
        else:
            self.stmts.append(body)
        self.after_effect(before)
        return err

    def snapshot(self) -> dict[str, torch.Tensor]:
        """The current values of every tensor variable (to see what an effect changed)."""
        return {n: v.detach().clone() for n, v in self.tensor_items()}

    def after_effect(
        self, before: dict[str, torch.Tensor], exact: bool = False, f64: bool = True
    ) -> None:
        """Variables whose values an effect changed lose `exact` (and `f64` unless float64
        arithmetic on float64-accurate values did it: `f64` False when an operand was an
        inexact float32 value)."""
        for name, old in before.items():
            v = self.ns.get(name)
            if not isinstance(v, torch.Tensor) or name not in self.meta:
                continue
            new = v.detach()
            if old.shape == new.shape and _same_values(old, new):
                continue
            m = self.meta[name]
            m.exact = m.exact and exact
            m.f64 = m.f64 and f64 and v.dtype == torch.float64
            self.note_precision(v, m)

    # ------------------------------------------------------------ names and tags

    def name(self, prefix: str = "t") -> str:
        """A fresh variable name."""
        self.n_var += 1
        return f"{prefix}{self.n_var}"

    def tag(self, cls: str = "") -> str:
        """A fresh record tag, e.g. `@12x` (see differ.py for the classes)."""
        self.n_tag += 1
        return f"@{self.n_tag}{cls}"

    def tensor_items(self) -> list[tuple[str, torch.Tensor]]:
        """(name, tensor) for every live tensor variable, oldest first."""
        return [
            (n, self.ns[n])
            for n in self.meta
            if n in self.ns and isinstance(self.ns[n], torch.Tensor) and _healthy(self.ns[n])
        ]

    def tensors(self, pred: Any = None) -> list[str]:
        """Names of live tensors satisfying `pred(tensor)`."""
        return [n for n, v in self.tensor_items() if pred is None or _holds(pred, v)]

    def pick(self, names: list[str]) -> str | None:
        """One of `names`, recent ones more likely."""
        if not names:
            return None
        weights = [i + 4 for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def cls_of(self, name: str) -> str:
        """The record class of a variable's value."""
        v = self.ns[name]
        m = self.meta.get(name)
        if isinstance(v, torch.Tensor) and not v.is_floating_point():
            return "x"
        if m is None:
            return ""
        if m.exact:
            return "x"
        return "d" if m.f64 else ""

    def grad_cls(self, v: torch.Tensor) -> str:
        """The record class for gradients of `v`."""
        return "d" if self.all_f64 and v.dtype == torch.float64 else ""

    def note_precision(self, v: Any, m: Meta) -> None:
        """A float32 value that is not exact makes every later gradient loosely compared."""
        if isinstance(v, torch.Tensor) and v.dtype == torch.float32 and not m.exact:
            self.all_f64 = False

    def bind(self, name: str, meta: Meta) -> None:
        """Record the flags of a new variable."""
        self.meta[name] = meta
        self.note_precision(self.ns.get(name), meta)

    # ------------------------------------------------------------ values

    def float_dtype(self) -> str:
        """`, dtype=...` text for a new float tensor ('' for the default float32)."""
        if self.f64_mode:
            return ", dtype=torch.float64"
        r = self.rng.random()
        if r < 0.15:
            return ", dtype=torch.float64"
        if r < 0.22:
            return ", dtype=torch.float32"
        return ""

    def fval(self) -> str:
        """A float literal."""
        r = self.rng.random()
        if r < 0.72:
            return repr(self.rng.choice(DYADIC))
        if r < 0.96 or not self.specials:
            v = round(self.rng.uniform(-3, 3), self.rng.choice((1, 2, 3)))
            return repr(v + 0.0)
        if r < 0.98:
            return "float('nan')"
        return self.rng.choice(("float('inf')", "float('-inf')"))

    def ival(self) -> str:
        """An int literal."""
        return str(self.rng.randint(-3, 4))

    def literal(self, shape: tuple[int, ...], kind: str) -> str:
        """A nested-list literal of `shape` with `kind` elements ('f', 'i', 'b')."""
        make = {"f": self.fval, "i": self.ival, "b": lambda: self.rng.choice(("True", "False"))}[
            kind
        ]
        if not shape:
            return make()

        def nest(dims: tuple[int, ...]) -> str:
            if len(dims) == 1:
                return "[" + ", ".join(make() for _ in range(dims[0])) + "]"
            return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"

        return nest(shape)

    def shape(self) -> tuple[int, ...]:
        """A random small shape."""
        shapes, weights = zip(*SHAPES, strict=True)
        return self.rng.choices(shapes, weights)[0]

    # ------------------------------------------------------------ new tensors

    def leaf(
        self,
        shape: tuple[int, ...] | None = None,
        kind: str = "f",
        requires_grad: bool | None = None,
        dtype: str | None = None,
        record: bool = True,
    ) -> str:
        """A new tensor made from a literal or a factory; its name."""
        if shape is None:
            shape = self.shape()
        if requires_grad is None:
            requires_grad = kind == "f" and self.rng.random() < 0.7
        name = self.name()
        text, exact = gen_ops.factory(self, shape, kind, requires_grad, dtype)
        self.features["leaf:" + kind] += 1
        err = self.emit(f"{name} = {text}")
        if err is not None:  # e.g. requires_grad on an int tensor: keep it as an error
            self.stmts[-1] = wrap(f"{name} = {text}", self.tag("!"))
            return ""
        v = self.ns[name]
        self.bind(name, Meta(exact, v.dtype == torch.float64))
        if record and self.rng.random() < 0.3:
            self.record_value(name)
        return name

    def need(
        self,
        shape: tuple[int, ...],
        kind: str = "f",
        dtype: torch.dtype | None = None,
        fresh: float = 0.4,
    ) -> str:
        """A tensor of exactly `shape` (and kind/dtype): an existing one or a new leaf."""

        def ok(v: torch.Tensor) -> bool:
            if tuple(v.shape) != tuple(shape) or kind_of(v) != kind:
                return False
            return dtype is None or v.dtype == dtype

        names = self.tensors(ok)
        if names and self.rng.random() > fresh:
            return self.pick(names) or ""
        dt = None
        if dtype is not None:
            dt = ", dtype=" + str(dtype)
        return self.leaf(shape, kind, dtype=dt, record=False)

    def any_tensor(self, kinds: str = "f", pred: Any = None, fresh: float = 0.15) -> str:
        """An existing tensor of one of `kinds` (or a new leaf)."""

        def ok(v: torch.Tensor) -> bool:
            return kind_of(v) in kinds and v.numel() <= MAX_NUMEL and (pred is None or pred(v))

        names = self.tensors(ok)
        if self.focus in names and self.rng.random() < 0.8:
            return self.focus
        if names and self.rng.random() > fresh:
            graph = [n for n in names if self.ns[n].requires_grad]
            if graph and self.rng.random() < 0.6:
                return self.pick(graph) or ""
            return self.pick(names) or ""
        for _ in range(6):
            name = self.leaf(kind=self.rng.choice(kinds), record=False)
            if name and (pred is None or pred(self.ns[name])):
                return name
        return ""

    # ------------------------------------------------------------ operations

    def try_plan(self, plan: Plan | None, ctx: tuple[str, ...] = ()) -> list[str]:
        """Run a candidate operation (inside the `with` contexts `ctx`); keep it when it
        is valid and well-conditioned. Returns the new variable names (empty when dropped)."""
        if plan is None or any(not n or n not in self.ns for n in plan.inputs):
            return []
        rng_state = torch.get_rng_state()
        try:
            with contextlib.ExitStack() as stack:
                for c in ctx:
                    stack.enter_context(self.eval(c))
                result = self.eval(plan.expr)
        except Exception:
            torch.set_rng_state(rng_state)
            if plan.may_fail and self.rng.random() < 0.12:
                tmp = self.name()
                self.features["error-op:" + plan.feature] += 1
                self.stmts.append(wrap(in_contexts(f"{tmp} = {plan.expr}", ctx), self.tag("!")))
            return []
        finally:
            torch.set_grad_enabled(True)
        torch.set_rng_state(rng_state)
        outs = flatten_result(result)
        if outs is None or not self._acceptable(plan, outs):
            return []
        if plan.reject is not None and plan.reject(outs):
            return []
        meta = self._result_meta(plan, result, outs)
        torch.set_rng_state(rng_state)  # the shadow run may have drawn numbers too
        if meta is None:
            return []
        names = self._bind_result(plan, result, ctx)
        self.features[plan.feature] += 1
        for n in names:
            self.bind(n, Meta(meta.exact, meta.f64 and self.ns[n].dtype == torch.float64))
        return names

    def _acceptable(self, plan: Plan, outs: list[Any]) -> bool:
        """Small, finite enough, away from kinks."""
        for o in outs:
            if isinstance(o, torch.Tensor):
                if o.numel() > MAX_NUMEL:
                    return False
                if o.is_floating_point() and o.numel():
                    finite = o.detach()[torch.isfinite(o.detach())]
                    if finite.numel() and finite.abs().max() > MAX_ABS:
                        return False
                    if not torch.isfinite(o.detach()).all() and not self._inputs_special(plan):
                        if not (self.specials and self.rng.random() < 0.3):
                            return False
            elif isinstance(o, float) and abs(o) > MAX_ABS and o == o:
                return False
        return all(self.kink_ok(k) for k in plan.kinks)

    def _inputs_special(self, plan: Plan) -> bool:
        for n in plan.inputs:
            v = self.ns.get(n)
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                if not torch.isfinite(v.detach()).all():
                    return True
        return False

    def _result_meta(self, plan: Plan, result: Any, outs: list[Any]) -> Meta | None:
        """The flags of an accepted result; None when it is ill-conditioned."""
        floats_in = [
            n
            for n in plan.inputs
            if isinstance(self.ns.get(n), torch.Tensor) and self.ns[n].is_floating_point()
        ]
        exact_in = all(self.meta[n].exact for n in floats_in if n in self.meta)
        f64_in = all(
            self.meta[n].f64 or self.meta[n].exact for n in floats_in if n in self.meta
        ) and all(self.ns[n].dtype == torch.float64 or self.meta[n].exact for n in floats_in)
        verdict = shadow_check(self, plan, outs, floats_in)
        if verdict is None:
            if not exact_in:
                return None
            verdict = False
        if plan.how in (MOVE, IEEE):
            exact = exact_in
        elif plan.how == DISCRETE:
            exact = True
        elif plan.how == ORDER:
            exact = exact_in and verdict and all(dyadic(self.ns[n]) for n in floats_in)
        else:
            exact = False
        return Meta(exact, f64_in)

    def _bind_result(self, plan: Plan, result: Any, ctx: tuple[str, ...]) -> list[str]:
        """Emit `name = expr` (or an unpacking) and return the bound names."""
        if isinstance(result, torch.Tensor):
            name = self.name()
            self.emit(in_contexts(f"{name} = {plan.expr}", ctx))
            return [name]
        if isinstance(result, (tuple, list)) and 0 < len(result) <= 4:
            if all(isinstance(r, torch.Tensor) for r in result) and self.rng.random() < 0.7:
                names = [self.name() for _ in result]
                lhs = ", ".join(names) + ("," if len(names) == 1 else "")
                self.emit(in_contexts(f"{lhs} = {plan.expr}", ctx))
                return names
        name = self.name("r")
        self.emit(in_contexts(f"{name} = {plan.expr}", ctx))
        self.record_raw(name, "")
        return []

    def kink_ok(self, kink: tuple[Any, ...]) -> bool:
        """Whether the inexact inputs of a kink stay clear of it (see MARGIN)."""
        kind, names = kink[0], kink[1]
        names = names if isinstance(names, (list, tuple)) else [names]
        vals = []
        for n in names:
            v = self.ns.get(n, n) if isinstance(n, str) else n
            if isinstance(v, torch.Tensor):
                vals.append(v.detach())
            else:
                vals.append(torch.tensor(float(v), dtype=torch.float64))
        inexact = any(
            isinstance(n, str) and n in self.meta and not self.meta[n].exact for n in names
        )
        # cdist's product path cancels whatever the inputs: its rounding (squares of
        # non-dyadic literals, the product's order) is noise on exact inputs too
        if not (inexact or kind == "rows") or not any(v.is_floating_point() for v in vals):
            return True
        return kink_clear(kind, vals, kink[2:])

    # ------------------------------------------------------------ records

    def record_value(self, name: str) -> None:
        """Print a record about tensor `name`: its value, flags, shape or list."""
        v = self.ns[name]
        if not _healthy(v):  # torch refuses to show it: printing would raise
            return
        cls = self.cls_of(name)
        styles = ["repr", "repr", "repr", "flags", "meta", "size"]
        if v.numel() <= 12:
            styles.append("list")
        if v.grad_fn is not None:
            styles += ["name", "next"]
        if v.numel() == 1:
            styles.append("item")
        style = self.rng.choice(styles)
        exprs = {
            "repr": name,
            "flags": f"{name}.requires_grad, {name}.is_leaf, {name}.grad_fn",
            "meta": f"{name}.shape, {name}.dtype, {name}.ndim, {name}.numel(), {name}.dim()",
            "size": f"{name}.size(), {name}.size(-1) if {name}.ndim else None",
            "list": f"{name}.tolist()",
            "name": f"{name}.grad_fn.name()",
            "next": f"{name}.grad_fn.next_functions",
            "item": f"{name}.item()",
        }
        self.features["record:" + style] += 1
        self.stmts.append(f"print({self.tag(cls)!r}, {exprs[style]})")

    def record_raw(self, expr: str, cls: str) -> None:
        """Print `expr` as a record of class `cls`."""
        self.stmts.append(f"print({self.tag(cls)!r}, {expr})")

    def record_grad(self, name: str) -> None:
        """Print `name.grad` (a leaf, or a non-leaf that retains its grad)."""
        v = self.ns.get(name)
        if not isinstance(v, torch.Tensor):
            return
        self.record_raw(f"{name}.grad", self.grad_cls(v))

    def grad_holders(self) -> list[str]:
        """Tensors whose .grad PyTorch fills: leaves requiring grad, retained non-leaves."""
        return self.tensors(lambda v: v.requires_grad and (v.is_leaf or v.retains_grad))

    def final_dump(self) -> None:
        """Print every variable's value, flags and gradient at the end."""
        names = [n for n, _ in self.tensor_items()][-8:]
        for n in names:
            v = self.ns[n]
            self.record_raw(f"{n}, {n}.requires_grad, {n}.is_leaf, {n}.grad_fn", self.cls_of(n))
            if v.requires_grad and (v.is_leaf or v.retains_grad):
                self.record_grad(n)
            elif v.grad_fn is not None and self.rng.random() < 0.1:
                self.record_raw(f"{n}.grad", "")  # the non-leaf warning

    # ------------------------------------------------------------ the program

    def build(self, n_statements: int) -> Program:
        """Grow a program of about `n_statements` statements."""
        for _ in range(self.rng.randint(1, 3)):
            self.leaf()
        for _ in range(n_statements):
            self.step()
        self.final_dump()
        self.features.update("grad_fn:" + n for n in graph_nodes(v for _, v in self.tensor_items()))
        text = "\n".join(self.stmts) + "\n"
        return Program(self.seed, text, self.features, list(self.stmts))

    def step(self) -> None:
        """One random statement."""
        kinds = (
            ("leaf", 8),
            ("op", 48),
            ("backward", 9),
            ("grad", 5),
            ("double", 5),
            ("hook", 4),
            ("retain_grad", 3),
            ("inplace", 9),
            ("no_grad", 4),
            ("detach", 4),
            ("grad_attr", 3),
            ("optim", 2),
            ("functional", 1),
            ("function", 2),
            ("error", 3),
        )
        names, weights = zip(*kinds, strict=True)
        kind = self.rng.choices(names, weights)[0]
        if kind == "leaf":
            self.leaf()
        elif kind == "op":
            self.op()
        else:
            getattr(gen_autograd, "st_" + kind)(self)

    def op(self, ctx: tuple[str, ...] = (), uniform: bool = False) -> list[str]:
        """A new variable from a random operation (a few tries)."""
        for _ in range(4):
            plan = gen_ops.random_plan(self, uniform)
            names = self.try_plan(plan, ctx)
            if names:
                if self.rng.random() < 0.55:
                    self.record_value(self.rng.choice(names))
                return names
        return []


# ---------------------------------------------------------------- helpers


def wrap(body: str, tag: str) -> str:
    """`body` inside try/except printing the exception as record `tag`."""
    inner = "\n".join("    " + line for line in body.splitlines())
    return f"try:\n{inner}\nexcept Exception as e:\n    print({tag!r}, repr(e))"


def graph_nodes(tensors: Any) -> set[str]:
    """The class names of every autograd node behind `tensors` and their grads."""
    seen: set[int] = set()
    names: set[str] = set()
    stack = []
    for t in tensors:
        stack.append(t.grad_fn)
        if (t.is_leaf or t.retains_grad) and t.grad is not None:
            stack.append(t.grad.grad_fn)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(type(node).__name__)
        stack.extend(n for n, _ in node.next_functions)
    return names


_creation_meta = torch._C._autograd._get_creation_meta
_DEFAULT_VIEW = torch._C._autograd.CreationMeta.DEFAULT


def _healthy(v: torch.Tensor) -> bool:
    """False for a view PyTorch refuses to touch (its base was changed in place)."""
    if v._is_view() and _creation_meta(v) == _DEFAULT_VIEW:
        # reading grad_fn cannot raise for it, and would derive the view's node in
        # torch's state but not in the program's (whose in-place check reads the node
        # as it stands: an underived one is a leaf)
        return True
    try:
        v.grad_fn  # noqa: B018 - the access itself raises for such views
    except RuntimeError:
        return False
    return True


def _holds(pred: Any, v: torch.Tensor) -> bool:
    try:
        return bool(pred(v))
    except RuntimeError:
        return False


def in_contexts(text: str, ctx: tuple[str, ...]) -> str:
    """`text` inside nested `with` blocks."""
    head = ["    " * depth + f"with {c}:" for depth, c in enumerate(ctx)]
    pad = "    " * len(ctx)
    return "\n".join(head + [pad + line for line in text.splitlines()])


def kind_of(v: torch.Tensor) -> str:
    """'f' float, 'i' integer, 'b' bool."""
    if v.dtype == torch.bool:
        return "b"
    return "f" if v.is_floating_point() else "i"


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        both_nan = torch.isnan(a) & torch.isnan(b)
        return bool(((a == b) | both_nan).all())
    return bool((a == b).all())


def dyadic(v: Any) -> bool:
    """Small multiples of 1/256: sums and products of these are exact in any order."""
    if not isinstance(v, torch.Tensor) or not v.is_floating_point():
        return True
    d = v.detach().double()
    if not torch.isfinite(d).all():
        return False
    return bool(((d * 256).round() == d * 256).all() and (d.abs() < 1024).all())


def flatten_result(result: Any) -> list[Any] | None:
    """The tensors and numbers in an operation's result; None for anything else."""
    if isinstance(result, (torch.Tensor, bool, int, float)):
        return [result]
    if isinstance(result, (tuple, list)) and len(result) <= 8:
        out: list[Any] = []
        for r in result:
            sub = flatten_result(r)
            if sub is None:
                return None
            out += sub
        return out
    return None


def kink_clear(kind: str, vals: list[torch.Tensor], args: tuple[Any, ...]) -> bool:
    """Whether the values are far enough from the kink of `kind`."""
    x = vals[0].double()
    fin = torch.isfinite(x)

    def away(d: torch.Tensor, scale: torch.Tensor) -> bool:
        d, scale = torch.broadcast_tensors(d, scale)
        bad = (d > 0) & (d <= MARGIN * torch.clamp(scale.abs(), min=1.0))
        bad &= torch.isfinite(d)
        return not bool(bad.any())

    if kind == "zero":
        return away(x.abs(), torch.ones_like(x))
    if kind == "at":
        return away((x - args[0]).abs(), torch.full_like(x, float(args[0])))
    if kind == "int":
        return away((x - x.round()).abs(), torch.ones_like(x))
    if kind == "half":
        return away((x - x.floor() - 0.5).abs(), torch.ones_like(x))
    if kind == "half10":
        return away((x * 10 - (x * 10).floor() - 0.5).abs(), torch.ones_like(x))
    if kind == "pair":
        y = vals[1].double()
        try:
            return away((x - y).abs(), x.abs())
        except RuntimeError:
            return True
    if kind == "ratio":
        y = vals[1].double()
        try:
            q = x / y
        except RuntimeError:
            return True
        return away((q - q.round()).abs(), torch.ones_like(q)) and away(y.abs(), torch.ones_like(y))
    if kind == "rows":
        # cdist's matrix-product path: a distance near (or at) 0 is the square root of
        # rounding noise in |x1|^2 - 2 x1.x2 + |x2|^2, ill-conditioned in any dtype
        y = vals[1].double()
        if x.numel() == 0 or y.numel() == 0 or not (fin.all() and torch.isfinite(y).all()):
            return True
        d = torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist")
        scale = torch.maximum(x.norm(dim=-1)[..., :, None], y.norm(dim=-1)[..., None, :])
        return not bool((d <= 1e-2 * torch.clamp(scale, min=1.0)).any())
    if kind == "ties":
        f = x[fin].flatten()
        if f.numel() < 2:
            return True
        d = (f[:, None] - f[None, :]).abs()
        return away(d, f[:, None].abs())
    raise ValueError(kind)


_NAME = re.compile(r"\b[tgr]\d+\b")


def shadow_check(gen: Gen, plan: Plan, outs: list[Any], floats_in: list[str]) -> bool | None:
    """Evaluate the plan again in float64 on slightly perturbed inexact inputs.

    Returns None when the float results move more than rounding noise can explain
    (ill-conditioned: drop it), else whether the unperturbed float64 result equals
    the actual one exactly (no rounding happened at all)."""
    sns = dict(gen.ns)
    loose = False
    for n in set(_NAME.findall(plan.expr)):
        v = gen.ns.get(n)
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            continue
        m = gen.meta.get(n, Meta(False, False))
        d = v.detach().double()
        if not m.exact:
            eps = 1e-13 if m.f64 and v.dtype == torch.float64 else 1e-6
            loose = loose or eps > 1e-10
            if d.numel():
                signs = torch.ones(d.numel(), dtype=torch.float64)
                signs[1::2] = -1
                d = d * (1 + eps * signs.reshape(d.shape))
        if v.dtype == torch.float32:
            loose = True
        sns[n] = d
    try:
        with torch.no_grad():
            shadow = flatten_result(gen.eval(plan.expr, sns))
    except Exception:
        return None
    if shadow is None or len(shadow) != len(outs):
        return None
    identical = True
    for o, s in zip(outs, shadow, strict=True):
        verdict = _close_shadow(o, s, loose)
        if verdict is None:
            return None
        identical = identical and verdict
    return identical


def _close_shadow(o: Any, s: Any, loose: bool) -> bool | None:
    if not isinstance(o, torch.Tensor):
        o = torch.tensor(o)
    if not isinstance(s, torch.Tensor):
        s = torch.tensor(s)
    o, s = o.detach(), s.detach()
    if o.shape != s.shape:
        return None
    if not o.is_floating_point():
        if not s.is_floating_point() and bool((o == s).all()):
            return True
        return None
    if o.dtype == torch.float32:
        loose = True
    od, sd = o.double(), s.double()
    same_special = (torch.isnan(od) == torch.isnan(sd)).all() and (
        torch.isinf(od) == torch.isinf(sd)
    ).all()
    if not same_special:
        return None
    fin = torch.isfinite(od)
    if (od[~fin & ~torch.isnan(od)] != sd[~fin & ~torch.isnan(od)]).any():
        return None
    tol = 1e-5 if loose else 1e-10
    diff = (od[fin] - sd[fin]).abs()
    if (diff > tol * torch.clamp(od[fin].abs(), min=1.0)).any():
        return None
    return bool((diff == 0).all())


def generate(seed: str, n_statements: int | None = None) -> Program:
    """The program of `seed` (deterministic)."""
    g = Gen(seed)
    if n_statements is None:
        n_statements = g.rng.randint(6, 22)
    return g.build(n_statements)


# the statement builders need the names above
from . import gen_autograd, gen_ops  # noqa: E402
