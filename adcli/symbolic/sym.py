"""The SymPy layer: adcli's own functions, tensor symbols, numbers, printing, evaluation.

This module imports SymPy; nothing imports it until a formula is asked for.

A formula is an ordinary SymPy expression read *per element*: a tensor named
`x` is the symbol `x` standing for each of its elements, so elementwise
operations and NumPy broadcasting keep their meaning (`3*(x + 2)/2`).  What is
not elementwise (sums over elements, matmul, indexing, softmax) is an `Op`: an
opaque SymPy function carrying, in a side table, how to print it in Python
syntax and how to evaluate it with NumPy (usually by replaying the engine's own
forward).  Every formula can therefore be evaluated numerically and compared
with what autograd computed.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

S = sympy.S

Shape = tuple[int, ...]


class FormulaError(Exception):
    """A formula cannot be built or evaluated; the message says why, for the learner."""


# --------------------------------------------------------------------------- symbols


class TensorSymbol(sympy.Dummy):
    """A tensor standing for each of its elements: a leaf, a named constant, a mask,
    the incoming gradient `grad`, or an intermediate abbreviated to its name.

    Identity is the object (a Dummy), not the name, so two tensors that print alike
    are never merged.  `value` holds the numbers the symbol stands for.
    """

    __slots__ = ("shape", "value", "kind")

    @property
    def precedence(self) -> int:  # read by SymPy's printer: names like `y * y` need parens
        return PRECEDENCE["Atom"] if _atomic_name(self.name) else PRECEDENCE["Add"] - 1


_ATOMIC = re.compile(r"[A-Za-z_][\w.@]*(\[[^\]]*\])?(\(.*\))?$")


def _atomic_name(name: str) -> bool:
    return bool(_ATOMIC.match(name))


def tensor_symbol(name: str, value: Any, kind: str) -> TensorSymbol:
    """A new symbol for a tensor (`kind`: leaf, const, mask, grad, abbrev)."""
    arr = np.asarray(value)
    if kind == "mask" or arr.dtype == np.bool_:
        sym = TensorSymbol(name)
        arr = arr.astype(bool)
    else:
        sym = TensorSymbol(name, real=True)
        arr = arr.astype(np.float64)
    sym.shape = tuple(arr.shape)
    sym.value = arr
    sym.kind = kind
    return sym


# ------------------------------------------------------------------ functions


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


class sigmoid(sympy.Function):  # noqa: N801 - printed as the language spells it
    """sigmoid(x) = 1/(1 + exp(-x))"""

    nargs = 1

    @classmethod
    def eval(cls, x: Any) -> Any:
        if x.is_zero:
            return S.Half
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        s = sigmoid(self.args[0])
        return s * (1 - s)

    def _eval_rewrite_as_exp(self, x: Any, **kwargs: Any) -> Any:
        return 1 / (1 + sympy.exp(-x))

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real


class log1p(sympy.Function):  # noqa: N801
    """log(1 + x)"""

    nargs = 1

    @classmethod
    def eval(cls, x: Any) -> Any:
        if x.is_zero:
            return S.Zero
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        return 1 / (1 + self.args[0])

    def _eval_rewrite_as_log(self, x: Any, **kwargs: Any) -> Any:
        return sympy.log(1 + x)


class where(sympy.Function):  # noqa: N801
    """where(cond, a, b): a where cond holds, else b (elementwise)."""

    nargs = 3

    @classmethod
    def eval(cls, c: Any, a: Any, b: Any) -> Any:
        if c is S.true:
            return a
        if c is S.false:
            return b
        if a == b:
            return a
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        c = self.args[0]
        if argindex == 2:
            return where(c, 1, 0)
        if argindex == 3:
            return where(c, 0, 1)
        return S.Zero

    def _eval_is_real(self) -> Any:
        return self.args[1].is_real and self.args[2].is_real


class relu(sympy.Function):  # noqa: N801
    """max(x, 0)"""

    nargs = 1

    @classmethod
    def eval(cls, x: Any) -> Any:
        if x.is_number and x.is_real:
            return sympy.Max(x, 0)
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        return where(self.args[0] > 0, 1, 0)

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real


class maximum(sympy.Function):  # noqa: N801
    """elementwise max; ties share the gradient"""

    nargs = 2

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real and self.args[1].is_real


class minimum(sympy.Function):  # noqa: N801
    """elementwise min; ties share the gradient"""

    nargs = 2

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real and self.args[1].is_real


class clamp(sympy.Function):  # noqa: N801
    """clamp(x, lo, hi); a missing bound is -oo/oo"""

    nargs = 3

    def fdiff(self, argindex: int = 1) -> Any:
        x, lo, hi = self.args
        if argindex == 1:
            return where(sympy.And(x >= lo, x <= hi), 1, 0)
        return S.Zero

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real


class leaky_relu(sympy.Function):  # noqa: N801
    """x if x > 0 else slope*x"""

    nargs = 2

    def fdiff(self, argindex: int = 1) -> Any:
        x, slope = self.args
        return where(x > 0, 1, slope) if argindex == 1 else S.Zero

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real


class softplus(sympy.Function):  # noqa: N801
    """log(1 + exp(beta*x))/beta, x itself where beta*x > threshold"""

    nargs = 3

    def fdiff(self, argindex: int = 1) -> Any:
        x, beta, th = self.args
        return where(beta * x > th, 1, sigmoid(beta * x)) if argindex == 1 else S.Zero

    def _eval_is_real(self) -> Any:
        return self.args[0].is_real


class round_half_even(sympy.Function):  # noqa: N801
    """round(x), halves to even (as torch.round)"""

    nargs = 1

    def fdiff(self, argindex: int = 1) -> Any:
        return S.Zero


#: Elementwise functions of the language, as NumPy computes them.
NUMPY_FUNCS: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "Abs": np.abs,
    "sign": np.sign,
    "floor": np.floor,
    "ceiling": np.ceil,
    "sigmoid": _np_sigmoid,
    "log1p": np.log1p,
    "relu": lambda x: np.maximum(x, 0.0),
    "where": lambda c, a, b: np.where(np.asarray(c, bool), a, b),
    "maximum": np.maximum,
    "minimum": np.minimum,
    "clamp": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "leaky_relu": lambda x, s: np.where(x > 0, x, x * s),
    "softplus": lambda x, b, th: np.where(
        b * x > th, x, np.log1p(np.exp(np.minimum(b * x, 700.0))) / b
    ),
    "round_half_even": np.round,
    "Max": np.maximum,
    "Min": np.minimum,
    "Heaviside": lambda x, h=0.5: np.heaviside(x, h),
}

#: What the language calls SymPy's functions (everything else keeps its name).
PRINT_NAMES = {
    "Abs": "abs",
    "ceiling": "ceil",
    "round_half_even": "round",
    "Max": "maximum",
    "Min": "minimum",
}

#: Functions a printed formula may use: anything else (sec, cosh, Piecewise...) is a
#: rewrite SymPy chose that the script language does not have.
ALLOWED_FUNCS = frozenset(NUMPY_FUNCS) - {
    "sinh",
    "cosh",
    "Max",
    "Min",
    "Heaviside",
}


# ------------------------------------------------------------------ opaque ops


@dataclass(eq=False)
class OpSpec:
    """How to print and evaluate one non-elementwise operation (an `Op`)."""

    name: str  # grad_fn name or a short kind, for messages
    display: Callable[[list[str]], str]  # argument texts -> Python text
    evaluate: Callable[[list[np.ndarray | None]], np.ndarray]
    in_shapes: tuple[Shape | None, ...]
    out_shape: Shape
    closed: bool = True  # False: shown as "no closed form"
    infix: bool = False  # printed with an operator (`a @ b`): parenthesised inside * and **


_SPECS: list[OpSpec] = []
_SPEC_KEYS: list[Any] = []
_SPEC_INDEX: dict[Any, int] = {}


def register_spec(key: Any, make: Callable[[], OpSpec]) -> int:
    """The index of the spec for `key`, made once (so equal ops are equal expressions)."""
    idx = _SPEC_INDEX.get(key) if key is not None else None
    if idx is None:
        _SPECS.append(make())
        _SPEC_KEYS.append(key)
        idx = len(_SPECS) - 1
        if key is not None:
            _SPEC_INDEX[key] = idx
    return idx


def spec_of(op: Any) -> OpSpec:
    return _SPECS[int(op.args[0])]


def spec_key(op: Any) -> Any:
    """The key the op's spec was registered under (None for one-off specs)."""
    return _SPEC_KEYS[int(op.args[0])]


class Op(sympy.Function):  # noqa: N801
    """A non-elementwise operation: `Op(k, *args)`, `k` indexing the spec table."""

    @classmethod
    def eval(cls, *args: Any) -> Any:
        return None

    @property
    def precedence(self) -> int:
        # an infix op (`a @ b`) is parenthesised inside products and powers
        return PRECEDENCE["Mul"] - 1 if spec_of(self).infix else PRECEDENCE["Atom"]

    def _eval_is_real(self) -> Any:
        return True

    def fdiff(self, argindex: int = 1) -> Any:
        raise FormulaError("an opaque operation has no symbolic derivative here")

    def sort_key(self, order: Any = None) -> Any:
        # ordered by what it prints, not by its index in the spec table, so that terms
        # come out in the same order in every run
        text = _SORT_TEXT.get(self)
        if text is None:
            if len(_SORT_TEXT) > 100_000:
                _SORT_TEXT.clear()
            text = _SORT_TEXT[self] = to_text(self)
        return self.class_key(), (1, (text,)), S.One.sort_key(), S.One


_SORT_TEXT: dict[Any, str] = {}


#: Stands for a missing optional operand (`None`) inside an Op.
NONE = sympy.Dummy("None")


def make_op(key: Any, make: Callable[[], OpSpec], args: Sequence[Any]) -> Any:
    idx = register_spec(key, make)
    return Op(sympy.Integer(idx), *[NONE if a is None else a for a in args])


def reduce_all_op(arg: Any, kind: str, shape: Shape) -> Any:
    """`torch.sum(arg)` / `mean(arg)` over the elements of `arg` (evaluated at `shape`)."""
    fn = np.sum if kind == "sum" else np.mean
    word = "torch.sum" if kind == "sum" else "mean"
    shape = strip1(shape)

    def make() -> OpSpec:
        return OpSpec(
            f"{kind} of all elements", lambda t: f"{word}({t[0]})", lambda v: fn(v[0]), (shape,), ()
        )

    return make_op(("reduce_all", kind, shape), make, [arg])


def only_derived(expr: Any) -> bool:
    """An expression of constants that backward definitions made (no leaf, no name)."""
    syms = expr.atoms(TensorSymbol)
    return bool(syms) and all(s.kind == "derived" for s in syms) and not expr.has(Op)


def reduce_all(arg: Any, kind: str, shape: Sequence[int]) -> Any:
    """Sum or mean of all elements of a tensor of `shape` whose elements are `arg`.

    Broadcasting may have made `arg` smaller than the tensor (a scalar-like operand):
    then each of its elements stands for n/m of the tensor's."""
    n = numel(shape)
    es = eshape(arg)
    m = numel(es)
    if n == 0:
        return S.Zero if kind == "sum" else S.NaN
    if m == 1:
        return arg * n if kind == "sum" else arg
    if only_derived(arg):
        v = evaluate(arg)
        total = float(np.sum(v) * (n // m) if kind == "sum" else np.mean(v))
        return number(total)
    op = reduce_all_op(arg, kind, es)
    if kind == "sum" and n != m:
        return sympy.Integer(n // m) * op
    return op


def _is_reduce_all(e: Any) -> bool:
    if not isinstance(e, Op):
        return False
    key = spec_key(e)
    return key is not None and key[0] == "reduce_all"


def is_sum(e: Any) -> bool:
    """A sum over elements (all, or some dims): what reduces a broadcast gradient."""
    if not isinstance(e, Op):
        return False
    key = spec_key(e)
    return key is not None and (
        (key[0] == "reduce_all" and key[1] == "sum")
        or (isinstance(key[0], tuple) and key[0][:2] == ("reduce_dims", "sum"))
    )


def sum_argument(e: Any) -> Any:
    return e.args[1]


def pull_scalars(expr: Any, expand: bool = False) -> Any:
    """Sums and means with factors that are the same for every element taken out
    (`torch.sum(w*x)` -> `w*torch.sum(x)`, w a scalar); with `expand`, split over terms."""

    def visit(e: Any) -> Any:
        kind = spec_key(e)[1]
        arg = e.args[1]
        shape = spec_of(e).in_shapes[0]
        n = numel(shape)
        terms = sympy.Add.make_args(sympy.expand(arg)) if expand else (arg,)
        out = S.Zero
        for term in terms:
            scalar, rest = [], []
            for f in sympy.Mul.make_args(term):
                (scalar if numel(eshape(f)) == 1 else rest).append(f)
            c = sympy.Mul(*scalar)
            if not rest:
                out += c * (n if kind == "sum" else 1)
                continue
            r = sympy.Mul(*rest)
            m = numel(eshape(r))
            part = reduce_all_op(r, kind, eshape(r))
            if kind == "sum" and m != n:
                part = part * sympy.Integer(n // m)
            out += c * part
        return out

    try:
        return expr.replace(_is_reduce_all, visit)
    except Exception:  # shapes SymPy moved around that no longer broadcast: leave it
        return expr


# ------------------------------------------------------------------ numbers


def number(v: Any) -> Any:
    """A constant as SymPy reads it: integers and short decimals exactly (0.1 -> 1/10)."""
    if isinstance(v, (bool, np.bool_)):
        return S.true if bool(v) else S.false
    if isinstance(v, (int, np.integer)):
        return sympy.Integer(int(v))
    if isinstance(v, np.ndarray):
        v = v.item()
        return number(v)
    f = float(v)
    if math.isnan(f):
        return S.NaN
    if math.isinf(f):
        return S.Infinity if f > 0 else S.NegativeInfinity
    if f == int(f) and abs(f) < 1e15:
        return sympy.Integer(int(f))
    is32 = isinstance(v, np.floating) and np.dtype(type(v)).itemsize <= 4
    text = np.format_float_positional(np.float32(f) if is32 else f, unique=True, trim="-")
    digits = text.replace("-", "").replace(".", "").lstrip("0")
    if len(digits) <= 6:
        return sympy.Rational(text)
    return sympy.Float(text, 17)


# ------------------------------------------------------------------ shapes


def strip1(shape: Sequence[int]) -> Shape:
    """The shape without leading size-1 dimensions (they do not change broadcasting)."""
    s = tuple(int(d) for d in shape)
    i = 0
    while i < len(s) and s[i] == 1:
        i += 1
    return s[i:]


def numel(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def eshape(expr: Any, memo: dict[Any, Shape] | None = None) -> Shape:
    """The shape the expression evaluates to (before broadcasting to its tensor's shape)."""
    memo = {} if memo is None else memo
    stack = [expr]
    while stack:
        e = stack[-1]
        if e in memo:
            stack.pop()
            continue
        if isinstance(e, TensorSymbol):
            memo[e] = strip1(e.shape)
        elif isinstance(e, Op):
            memo[e] = strip1(spec_of(e).out_shape)
        elif not e.args or e is NONE:
            memo[e] = ()
        else:
            pending = [a for a in e.args if a not in memo]
            if pending:
                stack.extend(pending)
                continue
            try:
                memo[e] = strip1(np.broadcast_shapes(*[memo[a] for a in e.args]))
            except ValueError as exc:
                raise FormulaError(f"shapes do not broadcast in {e}") from exc
        stack.pop()
    return memo[expr]


def fit(value: Any, shape: Sequence[int]) -> np.ndarray:
    """An evaluated value broadcast to a tensor's shape (leading size-1 dims ignored)."""
    a = np.asarray(value)
    a = a.reshape(strip1(a.shape))
    return np.broadcast_to(a, tuple(shape))


# ------------------------------------------------------------------ printing


class Printer(StrPrinter):
    """Python syntax, with the language's names: `abs`, `ceil`, `x**2`, `3*(x + 2)/2`."""

    def _print_Dummy(self, expr: Any) -> str:
        if expr is NONE:
            return "None"
        return expr.name

    _print_TensorSymbol = _print_Dummy

    def _print_Float(self, expr: Any) -> str:
        return repr(float(expr))

    def _print_Exp1(self, expr: Any) -> str:
        return "2.718281828459045"

    def _print_Pi(self, expr: Any) -> str:
        return "3.141592653589793"

    def _print_Infinity(self, expr: Any) -> str:
        return "float('inf')"

    def _print_NegativeInfinity(self, expr: Any) -> str:
        return "float('-inf')"

    def _print_ComplexInfinity(self, expr: Any) -> str:
        return "float('inf')"

    def _print_NaN(self, expr: Any) -> str:
        return "float('nan')"

    def _print_BooleanTrue(self, expr: Any) -> str:
        return "True"

    def _print_BooleanFalse(self, expr: Any) -> str:
        return "False"

    def _print_And(self, expr: Any) -> str:
        return " & ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Or(self, expr: Any) -> str:
        return " | ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Not(self, expr: Any) -> str:
        return f"~({self._print(expr.args[0])})"

    def _print_Op(self, expr: Any) -> str:
        spec = spec_of(expr)
        texts = []
        for a, shape in zip(expr.args[1:], spec.in_shapes, strict=False):
            texts.append(self.arg_text(a, shape))
        return spec.display(texts)

    def _print_Function(self, expr: Any) -> str:
        name = expr.func.__name__
        name = PRINT_NAMES.get(name, name)
        if name == "clamp":
            x, lo, hi = expr.args
            parts = [self._print(x)]
            if lo is not S.NegativeInfinity:
                parts.append(f"min={self._print(lo)}")
            if hi is not S.Infinity:
                parts.append(f"max={self._print(hi)}")
            return f"clamp({', '.join(parts)})"
        if name == "leaky_relu":
            x, s = expr.args
            return f"leaky_relu({self._print(x)}, {self._print(s)})"
        if name == "softplus":
            x, b, th = expr.args
            extra = "" if b == 1 else f", beta={self._print(b)}"
            extra += "" if th == 20 else f", threshold={self._print(th)}"
            return f"softplus({self._print(x)}{extra})"
        return f"{name}({', '.join(self._print(a) for a in expr.args)})"

    def arg_text(self, a: Any, shape: Shape | None) -> str:
        """An Op's operand; widened with `.expand(...)` where broadcasting made it smaller."""
        if a is NONE or shape is None:
            return "None"
        text = self._print(a)
        es = eshape(a)
        if es == strip1(shape):
            return text
        dims = ", ".join(str(d) for d in shape)
        if a.is_number:
            if a == 1:
                return f"ones({dims})" if shape else "ones(())"
            if a == 0:
                return f"zeros({dims})" if shape else "zeros(())"
            return f"full(({dims}{',' if len(shape) == 1 else ''}), {text})"
        wrapped = text if self._atomic(a) else f"({text})"
        if numel(es) == numel(shape):
            return f"{wrapped}.reshape({dims})"
        return f"{wrapped}.expand({dims})"

    def _atomic(self, a: Any) -> bool:
        from sympy.printing.precedence import precedence

        return precedence(a) >= PRECEDENCE["Func"]


_PRINTER = Printer({"order": None})


def to_text(expr: Any) -> str:
    """The formula in Python syntax (pasteable into a script)."""
    return _PRINTER.doprint(readable_numbers(expr))


def readable_numbers(expr: Any) -> Any:
    """Exact fractions too long to read (1.001**300) as floats."""
    if not isinstance(expr, sympy.Basic):
        return expr
    big = {
        r: sympy.Float(float(r), 17)
        for r in expr.atoms(sympy.Rational)
        if abs(r.p) > 10**12 or r.q > 10**12
    }
    return expr.xreplace(big) if big else expr


def atomic_text(expr: Any) -> str:
    """`to_text`, parenthesised unless it is a name, a number or a call."""
    text = to_text(expr)
    return text if _PRINTER._atomic(expr) and not str(text).startswith("-") else f"({text})"


# ------------------------------------------------------------------ evaluation


def evaluate(expr: Any, env: dict[Any, Any] | None = None) -> np.ndarray:
    """The numbers of a formula, in float64 (iterative; shared subexpressions once)."""
    memo: dict[Any, Any] = {}
    stack = [expr]
    with np.errstate(all="ignore"):
        while stack:
            e = stack[-1]
            if e in memo:
                stack.pop()
                continue
            if e is NONE:
                memo[e] = None
            elif isinstance(e, TensorSymbol):
                memo[e] = e.value
            elif isinstance(e, sympy.Symbol):
                if env is None or e not in env:
                    raise FormulaError(f"no value for {e}")
                memo[e] = np.asarray(env[e], dtype=np.float64)
            elif e is S.true or e is S.false:
                memo[e] = np.bool_(e is S.true)
            elif e.is_Number or e.is_NumberSymbol:
                memo[e] = np.float64(float(e)) if e is not S.ComplexInfinity else np.inf
            else:
                args = e.args[1:] if isinstance(e, Op) else e.args
                pending = [a for a in args if a not in memo]
                if pending:
                    stack.extend(pending)
                    continue
                memo[e] = _apply(e, [memo[a] for a in args])
            stack.pop()
    return np.asarray(memo[expr])


def _apply(e: Any, vals: list[Any]) -> Any:
    if isinstance(e, Op):
        spec = spec_of(e)
        arrays = [
            None if v is None else np.array(fit(v, s) if s is not None else v)
            for v, s in zip(vals, spec.in_shapes, strict=False)
        ]
        return np.asarray(spec.evaluate(arrays))
    if e.is_Add:
        out = vals[0]
        for v in vals[1:]:
            out = out + v
        return out
    if e.is_Mul:
        out = vals[0]
        for v in vals[1:]:
            out = out * v
        return out
    if e.is_Pow:
        base, exp = vals
        return np.power(np.asarray(base, np.float64), exp)
    if isinstance(e, sympy.core.relational.Relational):
        a, b = vals
        op = {
            "<": np.less,
            "<=": np.less_equal,
            ">": np.greater,
            ">=": np.greater_equal,
            "==": np.equal,
            "!=": np.not_equal,
        }[e.rel_op]
        return op(a, b)
    if isinstance(e, sympy.And):
        return np.logical_and.reduce([np.asarray(v, bool) for v in vals])
    if isinstance(e, sympy.Or):
        return np.logical_or.reduce([np.asarray(v, bool) for v in vals])
    if isinstance(e, sympy.Not):
        return np.logical_not(vals[0])
    name = e.func.__name__
    fn = NUMPY_FUNCS.get(name)
    if fn is None:
        raise FormulaError(f"cannot evaluate {name}")
    return fn(*vals)


# ------------------------------------------------------------------ simplification

#: Formulas with more nodes than this are shown as built, without simplification.
SIMPLIFY_LIMIT = 120


def node_count(expr: Any, limit: int = 10_000) -> int:
    """Nodes of the expression tree, counting shared subtrees again (stops past `limit`)."""
    n = 0
    stack = [expr]
    while stack and n <= limit:
        e = stack.pop()
        n += 1
        stack.extend(e.args)
    return n


def _allowed(expr: Any) -> bool:
    for f in expr.atoms(sympy.Function):
        if isinstance(f, Op):
            continue
        if f.func.__name__ not in ALLOWED_FUNCS:
            return False
    return not expr.has(sympy.Piecewise, sympy.I, sympy.zoo)


def tidy(expr: Any) -> Any:
    """The simplest equal form SymPy finds that the language can still spell.

    Results are kept per formula *shape*: the formula with its tensor symbols
    replaced by canonical ones (same name, kind, shape and assumptions). A training
    loop builds the same formula at every step from new symbols (the leaves have new
    values), and simplification does not look at values, so every step after the
    first reuses the first step's work."""
    if node_count(expr, SIMPLIFY_LIMIT) > SIMPLIFY_LIMIT:
        return expr
    canon, back = _canonical(expr)
    hit = _TIDY_CACHE.get(canon)
    if hit is None:
        with _memoized_simplify():
            hit = _tidy(canon)
        if len(_TIDY_CACHE) >= _CACHE_LIMIT:
            _TIDY_CACHE.clear()
        _TIDY_CACHE[canon] = hit
    return _rename(hit, back)


#: tidy() results and SymPy simplify() results, keyed by canonical formulas
_TIDY_CACHE: dict[Any, Any] = {}
_SIMPLIFY_CACHE: dict[Any, Any] = {}
_CACHE_LIMIT = 4000
#: canonical symbols: (name, rank, kind, shape, assumptions) -> symbol
_CANONICAL: dict[tuple[Any, ...], TensorSymbol] = {}
_CLASSES: dict[tuple[Any, ...], int] = {}  # (kind, shape, assumptions) -> small number


def _canonical(expr: Any) -> tuple[Any, dict[Any, Any]]:
    """`expr` with each tensor symbol replaced by a canonical one, and the way back.

    Symbols of one name are ranked by their own order (their dummy index), and the
    canonical ones are ordered the same way (negative dummy indices: rank first), so
    SymPy sorts the arguments of the canonical formula exactly as it sorts the
    original's."""
    by_name: dict[str, list[TensorSymbol]] = {}
    for s in expr.atoms(TensorSymbol):
        by_name.setdefault(s.name, []).append(s)
    if not by_name:
        return expr, {}
    there: dict[Any, Any] = {}
    for name, group in by_name.items():
        group.sort(key=lambda s: s.dummy_index)
        for rank, s in enumerate(group):
            assumptions = tuple(sorted(s._assumptions_orig.items()))
            cls_key = (s.kind, tuple(s.shape), assumptions)
            key = (name, rank) + cls_key
            c = _CANONICAL.get(key)
            if c is None:
                if len(_CANONICAL) >= _CACHE_LIMIT:  # made again alike: equal to the old
                    _CANONICAL.clear()
                number_ = _CLASSES.setdefault(cls_key, len(_CLASSES))
                index = -(10**12) + rank * 10**6 + number_
                c = TensorSymbol(name, dummy_index=index, **dict(assumptions))
                c.shape, c.value, c.kind = s.shape, s.value, s.kind
                _CANONICAL[key] = c
            there[s] = c
    back = {c: s for s, c in there.items()}
    return _rename(expr, there), back


def _rename(expr: Any, mapping: dict[Any, Any]) -> Any:
    """`expr` with symbols renamed and nothing else changed: rebuilt without
    evaluation, which would undo forms tidy() chose (`(a - b)/16` -> `a/16 - b/16`)."""
    if not mapping:
        return expr
    with sympy.evaluate(False):
        return expr.xreplace(mapping)


class _memoized_simplify:  # noqa: N801 - used as a context manager
    """While active, SymPy's simplify() remembers its results.

    simplify() simplifies the arguments of every function in a formula by calling
    itself on them, at every level of nesting, so a formula of nested opaque
    operations (`X.T @ where(b1 + X @ W1 > 0, ... exp(log_softmax(...)) ...)`) has
    its innermost parts simplified again and again, exponentially in the depth.
    simplify() is a function of the formula alone, so its module-level name is
    swapped for a remembering one while tidy() runs (never across a script's code).
    """

    def __enter__(self) -> None:
        self.module = sys.modules["sympy.simplify.simplify"]
        self.original = self.module.simplify
        original = self.original

        def simplify(expr: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                key = (expr, args, tuple(sorted(kwargs.items())))
                hit = _SIMPLIFY_CACHE.get(key)
            except TypeError:  # an unhashable argument: no memory
                return original(expr, *args, **kwargs)
            if hit is None:
                hit = original(expr, *args, **kwargs)
                if len(_SIMPLIFY_CACHE) >= _CACHE_LIMIT:
                    _SIMPLIFY_CACHE.clear()
                _SIMPLIFY_CACHE[key] = hit
            return hit

        self.module.simplify = simplify

    def __exit__(self, *exc: Any) -> None:
        self.module.simplify = self.original


def _tidy(expr: Any) -> Any:
    candidates = []
    simplify = sys.modules["sympy.simplify.simplify"].simplify  # remembering, in tidy()
    for fn in (sympy.factor, sympy.factor_terms, lambda e: e, simplify):
        try:
            c = fn(expr)
        except Exception:  # SymPy gives up in many ways; the expression as built is fine
            continue
        if c is None or not _allowed(c):
            continue
        if c.has(Op):
            for expand in (False, True):
                pulled = pull_scalars(c, expand)
                if pulled != c:
                    candidates.append(sympy.factor_terms(pulled))
        candidates.append(c)
    if not candidates:
        return expr
    best = min(enumerate(candidates), key=lambda ic: (sympy.count_ops(ic[1]), ic[0]))
    return best[1]


def is_closed(expr: Any) -> tuple[bool, str | None]:
    """Whether the formula can be shown: no opaque op without a closed form in it."""
    for f in expr.atoms(Op):
        spec = spec_of(f)
        if not spec.closed:
            return False, spec.name
    return True, None


def abbreviations(expr: Any) -> list[TensorSymbol]:
    """Intermediates the formula names instead of expanding (it was too long)."""
    return sorted((s for s in expr.atoms(TensorSymbol) if s.kind == "abbrev"), key=lambda s: s.name)
