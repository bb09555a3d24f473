"""The symbolic forward table: one rule per Function row of adcli/autograd/functions.py.

A rule turns a node's operands (formulas) and recorded parameters into the
formula of its output, saying what the row's NumPy `forward` computes:
`Mul -> a*b`, `Exp -> exp(a)`, `Mean -> the mean over its n elements`.
Gradients need no table of their own: the engine's backward definitions are
run with `create_graph=True`, and the graph they build is made of these same
rows, so the same table reads it (adcli/symbolic/gradients.py).

Elementwise rows are exact SymPy expressions read per element.  Reductions
become explicit sums and means (`torch.sum(...)`, `mean(...)`), or a number
times the operand when broadcasting made every element the same.  Rows with no
elementwise meaning (matmul, indexing, softmax, ...) become an `Op` that prints
as Python (`x @ W.T`, `softmax(x, dim=1)`) and evaluates by replaying the row's
own `forward`; those without a readable form are marked as having no closed form.

This module is below formula.py, whose Converter applies the rules: a rule sees the
converter only through the `ConverterView` protocol below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import sympy

from . import sym
from .sym import FormulaError, OpSpec, S, Shape, eshape, numel, strip1

_MISSING = object()


class ConverterView(Protocol):
    """What a rule uses of formula.Converter (which imports this module)."""

    shape_memo: dict[Any, tuple[int, ...]]

    def output_shape(self, ctx: RuleCtx) -> tuple[int, ...]: ...

    def const_array(self, arr: np.ndarray, *, kind: str = "const", label: Any = None) -> Any: ...


class RuleCtx:
    """What a rule sees: the node, its operands' formulas and shapes, its parameters."""

    def __init__(self, conv: ConverterView, node: Any, nr: int, args: list[Any]) -> None:
        self.conv = conv
        self.node = node
        self.nr = nr
        self.args = args
        metas = getattr(node, "in_meta", ()) or ()
        self.in_shapes: list[Shape | None] = [
            None if m is None else tuple(int(d) for d in m[0]) for m in metas
        ]
        self._out_shape: Shape | None = None
        self.params: dict[str, Any] | None = getattr(node, "sym_params", None)

    # ---------------------------------------------------------------- reading
    @property
    def a(self) -> Any:
        return self.args[0]

    @property
    def b(self) -> Any:
        return self.args[1]

    def p(self, name: str, default: Any = _MISSING) -> Any:
        """A parameter: as recorded by the engine, else as the node kept it."""
        if self.params is not None and name in self.params:
            return self.params[name]
        if name in getattr(self.node, "__dict__", {}):
            return self.node.__dict__[name]
        if default is _MISSING:
            raise FormulaError(
                f"{self.node.name()} did not record '{name}' (formulas need the graph to be "
                "recorded: run with --symbolic or call formula() in the script)"
            )
        return default

    @property
    def out_shape(self) -> Shape:
        """The shape of this output (from the tensor, its label, or by replaying forward)."""
        if self._out_shape is None:
            self._out_shape = self.conv.output_shape(self)
        return self._out_shape

    def shape_of(self, i: int) -> Shape:
        s = self.in_shapes[i] if i < len(self.in_shapes) else None
        if s is None:
            raise FormulaError(f"{self.node.name()}: operand {i} has no recorded shape")
        return s

    def eshape(self, expr: Any) -> Shape:
        return eshape(expr, self.conv.shape_memo)

    # ---------------------------------------------------------------- building
    def op(
        self,
        display: Callable[[list[str]], str],
        args: Sequence[Any] | None = None,
        *,
        closed: bool = True,
        infix: bool = False,
        method: bool = False,
        evaluate: Callable[[list[Any]], Any] | None = None,
        in_shapes: Sequence[Shape | None] | None = None,
        out_shape: Shape | None = None,
        key: Any = None,
        name: str | None = None,
    ) -> Any:
        """An opaque operation on `args` (default: this node's operands), evaluated by
        `evaluate` or else by replaying this node's own forward."""
        node = self.node
        args = list(self.args if args is None else args)
        in_sh = tuple(self.in_shapes if in_shapes is None else in_shapes)
        out_sh = self.out_shape if out_shape is None else tuple(out_shape)
        if evaluate is None:
            params = self.params
            if params is None:
                raise FormulaError(
                    f"{node.name()} did not record its parameters (run with --symbolic)"
                )
            evaluate = _replay(type(node), params, self.nr)
            key = key or ("replay", type(node).__name__, _freeze(params), self.nr)
        full_key = None if key is None else (key, in_sh, out_sh, closed, infix, method)
        gname = name or node.name()

        def make() -> OpSpec:
            return OpSpec(
                gname, _wrapping(display, method or infix), evaluate, in_sh, out_sh, closed, infix
            )

        return sym.make_op(full_key, make, args)

    def number(self, v: Any) -> Any:
        return sym.number(v)

    def mask(self, arr: Any) -> Any:
        """A boolean array (a condition) as a formula: True/False, a literal, or `mask`."""
        return self.conv.const_array(np.asarray(arr, dtype=bool), kind="mask")

    def literal(self, arr: Any, small: int = 8) -> tuple[str, bool]:
        """Python text of a constant array parameter, and whether it is shown whole."""
        a = np.asarray(arr)
        if a.size <= small:
            return sym_literal(a), True
        return f"<{a.dtype.name} array of shape {list(a.shape)}>", False


def sym_literal(a: np.ndarray) -> str:
    import re

    from adcli.autograd.dtypes import of_array
    from adcli.autograd.printing import format_tensor

    text = format_tensor(np.asarray(a), of_array(np.asarray(a)).name)
    return re.sub(r"\s*\n\s*", " ", text)


def _wrapping(display: Callable[[list[str]], str], wrap: bool) -> Callable[[list[str]], str]:
    if not wrap:
        return display
    return lambda texts: display([_paren(t) for t in texts])


def _paren(text: str) -> str:
    """Parenthesise an operand of a method call or an infix operator unless atomic."""
    if text.startswith("(") and _balanced_outer(text):
        return text
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in " +-*/@<>=&|~":
            return f"({text})"
    return text


def _balanced_outer(text: str) -> bool:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return True


def _freeze(v: Any) -> Any:
    """A hashable stand-in for a parameter (arrays by content)."""
    if isinstance(v, np.ndarray):
        return ("arr", v.shape, v.dtype.str, hash(v.tobytes()))
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_freeze(x) for x in v)
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    try:
        hash(v)
        return v
    except TypeError:
        return ("repr", type(v).__name__, repr(v))


def _replay(cls: type, params: dict[str, Any], nr: int) -> Callable[[list[Any]], Any]:
    """Evaluate by running the row's own NumPy forward on the operands' values."""

    def run(arrays: list[Any]) -> Any:
        from adcli.autograd.tensor import Tensor

        ctx = cls.__new__(cls)
        ctx.saved = ()
        ctx.needs_input_grad = (False,) * len(arrays)
        ts = [None if a is None else Tensor._make(np.array(a)) for a in arrays]
        with np.errstate(all="ignore"):
            out = cls.forward(ctx, *ts, **params)
        if getattr(cls, "multi_output", False):
            out = out[nr]
        return np.asarray(out)

    return run


# ============================================================================ rules

Rule = Callable[[RuleCtx], Any]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return register


def rule_for(cls: type) -> Rule | None:
    """The rule of a Function class (or of the nearest base class that has one)."""
    for k in cls.__mro__:
        r = RULES.get(k.__name__)
        if r is not None:
            return r
    return None


def _dims_text(dims: Sequence[int]) -> str:
    dims = tuple(int(d) for d in dims)
    return str(dims[0]) if len(dims) == 1 else str(dims)


def _shape_text(shape: Sequence[int]) -> str:
    return ", ".join(str(int(d)) for d in shape) if len(shape) else "()"


# ------------------------------------------------------------------ arithmetic


@rule("Add")
def _add(c: RuleCtx) -> Any:
    return c.a + c.number(c.p("alpha", 1)) * c.b


@rule("Sub")
def _sub(c: RuleCtx) -> Any:
    return c.a - c.number(c.p("alpha", 1)) * c.b


@rule("Rsub")
def _rsub(c: RuleCtx) -> Any:
    return c.number(c.p("other")) - c.a


@rule("Mul")
def _mul(c: RuleCtx) -> Any:
    return c.a * c.b


@rule("Div")
def _div(c: RuleCtx) -> Any:
    return c.a / c.b


@rule("MulScalar")
def _mul_scalar(c: RuleCtx) -> Any:
    return c.a * c.number(c.p("other"))


@rule("AddScalar")
def _add_scalar(c: RuleCtx) -> Any:
    return c.a + c.number(c.p("other"))


@rule("DivScalar")
def _div_scalar(c: RuleCtx) -> Any:
    return c.a / c.number(c.p("other"))


@rule("Pow")
def _pow(c: RuleCtx) -> Any:
    return c.a ** c.number(c.p("exponent"))


@rule("PowTensor")
def _pow_tensor(c: RuleCtx) -> Any:
    return c.a**c.b


@rule("PowScalarBase")
def _pow_base(c: RuleCtx) -> Any:
    return c.number(c.p("base")) ** c.a


@rule("Neg")
def _neg(c: RuleCtx) -> Any:
    return -c.a


@rule("Reciprocal")
def _reciprocal(c: RuleCtx) -> Any:
    return 1 / c.a


@rule("Maximum")
def _maximum(c: RuleCtx) -> Any:
    return sym.maximum(c.a, c.b)


@rule("Minimum")
def _minimum(c: RuleCtx) -> Any:
    return sym.minimum(c.a, c.b)


# ------------------------------------------------------------------ unary

_UNARY: dict[str, Callable[[Any], Any]] = {
    "Exp": sympy.exp,
    "Log": sympy.log,
    "Log1p": sym.log1p,
    "Sqrt": sympy.sqrt,
    "Abs": sympy.Abs,
    "Sin": sympy.sin,
    "Cos": sympy.cos,
    "Tan": sympy.tan,
    "Asin": sympy.asin,
    "Acos": sympy.acos,
    "Atan": sympy.atan,
    "Rsqrt": lambda a: 1 / sympy.sqrt(a),
    "Tanh": sympy.tanh,
    "Sigmoid": sym.sigmoid,
    "Relu": sym.relu,
    "Sign": sympy.sign,
    "Sgn": sympy.sign,
    "Floor": sympy.floor,
    "Ceil": sympy.ceiling,
    "Round": sym.round_half_even,
}

for _name, _fn in _UNARY.items():
    RULES[_name] = lambda c, _fn=_fn: _fn(c.a)


@rule("Clone", "ToCopy", "Alias", "Expand")
def _identity(c: RuleCtx) -> Any:
    return c.a


@rule("TanhBackward")
def _tanh_backward(c: RuleCtx) -> Any:
    g, r = c.args
    return g * (1 - r**2)


@rule("SigmoidBackward")
def _sigmoid_backward(c: RuleCtx) -> Any:
    g, r = c.args
    return g * (1 - r) * r


def _positive(r: Any) -> Any:
    """`r > 0`, read through relu: relu(x) > 0 is x > 0."""
    if isinstance(r, sym.relu):
        return r.args[0] > 0
    return r > 0


@rule("ThresholdBackward")
def _threshold_backward(c: RuleCtx) -> Any:
    g, r = c.args
    return sym.where(_positive(r), g, 0)


@rule("LeakyRelu")
def _leaky_relu(c: RuleCtx) -> Any:
    return sym.leaky_relu(c.a, c.number(c.p("negative_slope")))


@rule("LeakyReluBackward")
def _leaky_relu_backward(c: RuleCtx) -> Any:
    g, a = c.args
    return sym.where(a > 0, g, c.number(c.p("slope")) * g)


@rule("Softplus")
def _softplus(c: RuleCtx) -> Any:
    return sym.softplus(c.a, c.number(c.p("beta")), c.number(c.p("threshold")))


@rule("SoftplusBackward")
def _softplus_backward(c: RuleCtx) -> Any:
    g, a = c.args
    beta, th = c.number(c.p("beta")), c.number(c.p("threshold"))
    return sym.where(beta * a > th, g, g * sym.sigmoid(beta * a))


@rule("Clamp")
def _clamp(c: RuleCtx) -> Any:
    lo, hi = c.p("lo"), c.p("hi")
    return sym.clamp(
        c.a,
        S.NegativeInfinity if lo is None else c.number(lo),
        S.Infinity if hi is None else c.number(hi),
    )


@rule("ClampTensor")
def _clamp_tensor(c: RuleCtx) -> Any:
    a, lo, hi = c.args[:3]
    return sym.clamp(a, S.NegativeInfinity if lo is None else lo, S.Infinity if hi is None else hi)


@rule("RoundDecimals")
def _round_decimals(c: RuleCtx) -> Any:
    d = c.p("decimals")
    return c.op(lambda t: f"torch.round({t[0]}, decimals={d})")


@rule("ZeroFill")
def _zero_fill(c: RuleCtx) -> Any:
    return S.Zero


@rule("FillScalar")
def _fill_scalar(c: RuleCtx) -> Any:
    return c.number(c.p("value"))


@rule("FillTensor", "CopyFrom")
def _fill_tensor(c: RuleCtx) -> Any:
    return c.args[1]


@rule("Where")
def _where(c: RuleCtx) -> Any:
    return sym.where(c.mask(c.p("cond")), c.a, c.b)


@rule("MaskedFill")
def _masked_fill(c: RuleCtx) -> Any:
    return sym.where(c.mask(c.p("mask")), c.number(c.p("value")), c.a)


@rule("MaskedFillTensor")
def _masked_fill_tensor(c: RuleCtx) -> Any:
    return sym.where(c.mask(c.p("mask")), c.b, c.a)


# ------------------------------------------------------------------ reductions


def reduce_all(c: RuleCtx, arg: Any, in_shape: Shape, kind: str) -> Any:
    """Sum or mean of all elements of `arg` (a tensor of `in_shape`)."""
    return sym.reduce_all(arg, kind, in_shape)


def reduce_dims(
    c: RuleCtx, arg: Any, in_shape: Shape, dims: Sequence[int], keepdim: bool, kind: str
) -> Any:
    """Sum or mean of `arg` over `dims` of `in_shape`."""
    nd = len(in_shape)
    dims = tuple(sorted(int(d) % nd for d in dims)) if nd else ()
    if not dims:
        return arg
    if sym.only_derived(arg):  # a reduction of constants the backward made: its number
        value = np.sum(sym.fit(sym.evaluate(arg), in_shape), axis=dims, keepdims=keepdim)
        if kind == "mean":
            value = value / math.prod(in_shape[d] for d in dims)
        folded = c.conv.const_array(value, kind="derived")
        if folded.is_number:
            return folded
    es = c.eshape(arg)
    padded = (1,) * (nd - len(es)) + tuple(es)
    real = [d for d in dims if padded[d] != 1]
    if not real:
        factor = math.prod(in_shape[d] for d in dims) if kind == "sum" else 1
        ok = keepdim or all(d < nd - len(es) for d in dims)
        if ok:
            return arg * factor if factor != 1 else arg
    out_shape = tuple(
        (1 if d in dims else s) for d, s in enumerate(in_shape) if keepdim or d not in dims
    )
    fn = np.sum if kind == "sum" else np.mean
    word = "torch.sum" if kind == "sum" else "mean"
    dtext = _dims_text(dims)
    kd = ", keepdim=True" if keepdim else ""
    return c.op(
        lambda t: f"{word}({t[0]}, dim={dtext}{kd})",
        [arg],
        evaluate=lambda v, fn=fn: fn(v[0], axis=dims, keepdims=keepdim),
        in_shapes=[in_shape],
        out_shape=out_shape,
        key=("reduce_dims", kind, dims, keepdim),
        name=f"{kind} over dim {dtext}",
    )


@rule("Sum")
def _sum(c: RuleCtx) -> Any:
    return reduce_all(c, c.a, c.shape_of(0), "sum")


@rule("Mean")
def _mean(c: RuleCtx) -> Any:
    return reduce_all(c, c.a, c.shape_of(0), "mean")


@rule("SumDim")
def _sum_dim(c: RuleCtx) -> Any:
    return reduce_dims(c, c.a, c.shape_of(0), c.p("dims"), c.p("keepdim"), "sum")


@rule("MeanDim")
def _mean_dim(c: RuleCtx) -> Any:
    return reduce_dims(c, c.a, c.shape_of(0), c.p("dims"), c.p("keepdim"), "mean")


def _scalar_like(c: RuleCtx, arg: Any) -> bool:
    """Every element of the operand is the same formula (a broadcast scalar)."""
    return numel(c.eshape(arg)) == 1


@rule("Prod")
def _prod(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a ** numel(c.shape_of(0))
    return c.op(lambda t: f"torch.prod({t[0]})")


@rule("ProdDim")
def _prod_dim(c: RuleCtx) -> Any:
    d, kd = c.p("dim"), c.p("keepdim")
    extra = ", keepdim=True" if kd else ""
    return c.op(lambda t: f"torch.prod({t[0]}, dim={d}{extra})")


@rule("Max", "Min")
def _max_all(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    word = "max" if type(c.node).__name__ == "Max" else "min"
    return c.op(lambda t: f"{t[0]}.{word}()", method=True)


@rule("MaxDim", "MinDim")
def _max_dim(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a) and c.p("keepdim"):
        return c.a
    word = "amax" if type(c.node).__name__ == "MaxDim" else "amin"
    d, kd = c.p("dim"), c.p("keepdim")
    extra = ", keepdim=True" if kd else ""
    return c.op(lambda t: f"torch.{word}({t[0]}, dim={d}{extra})")


@rule("Amax", "Amin")
def _amax(c: RuleCtx) -> Any:
    word = "amax" if type(c.node).__name__ == "Amax" else "amin"
    dims, kd = c.p("dims"), c.p("keepdim")
    extra = ", keepdim=True" if kd else ""
    return c.op(lambda t: f"torch.{word}({t[0]}, dim={_dims_text(dims)}{extra})")


@rule("Norm")
def _norm(c: RuleCtx) -> Any:
    p, dims, keepdim = c.p("p"), c.p("dims"), c.p("keepdim")
    shape = c.shape_of(0)
    if p == 2:
        inner = c.a**2
    elif p == 1:
        inner = sympy.Abs(c.a)
    else:
        inner = None
    if inner is not None:
        if dims is None:
            total = reduce_all(c, inner, shape, "sum")
            if keepdim:  # all dims kept at size 1: same value
                pass
        else:
            total = reduce_dims(c, inner, shape, dims, keepdim, "sum")
        return sympy.sqrt(total) if p == 2 else total
    ptext = "float('inf')" if p == float("inf") else sym.to_text(c.number(p))
    dtext = "" if dims is None else f", dim={_dims_text(dims)}"
    kd = ", keepdim=True" if keepdim else ""
    return c.op(lambda t: f"torch.norm({t[0]}, p={ptext}{dtext}{kd})")


@rule("Logsumexp")
def _logsumexp(c: RuleCtx) -> Any:
    return sympy.log(
        reduce_dims(c, sympy.exp(c.a), c.shape_of(0), c.p("dims"), c.p("keepdim"), "sum")
    )


@rule("Var", "Std")
def _var(c: RuleCtx) -> Any:
    word = "var" if type(c.node).__name__ == "Var" else "std"
    dims, corr, kd = c.p("dims"), c.p("correction"), c.p("keepdim")
    extra = ("" if corr == 1 else f", correction={corr}") + (", keepdim=True" if kd else "")
    return c.op(lambda t: f"torch.{word}({t[0]}, dim={_dims_text(dims)}{extra})")


@rule("Cumsum")
def _cumsum(c: RuleCtx) -> Any:
    d = c.p("dim")
    return c.op(lambda t: f"torch.cumsum({t[0]}, dim={d})")


# ------------------------------------------------------------------ linear algebra


def _matmul_eval(v: list[Any]) -> Any:
    return np.matmul(v[0], v[1])


@rule("Mm", "Mv", "Bmm")
def _mm(c: RuleCtx) -> Any:
    return c.op(
        lambda t: f"{t[0]} @ {t[1]}",
        infix=True,
        evaluate=_matmul_eval,
        key=("matmul",),
        name="matmul",
    )


@rule("Dot")
def _dot(c: RuleCtx) -> Any:
    shape = c.shape_of(0)
    return reduce_all(c, c.a * c.b, shape, "sum")


@rule("Addmm")
def _addmm(c: RuleCtx) -> Any:
    bias, x, w = c.args
    prod = c.op(
        lambda t: f"{t[0]} @ {t[1]}",
        [x, w],
        infix=True,
        evaluate=_matmul_eval,
        in_shapes=[c.shape_of(1), c.shape_of(2)],
        key=("matmul",),
        name="matmul",
    )
    beta, alpha = c.number(c.p("beta", 1)), c.number(c.p("alpha", 1))
    return beta * bias + alpha * prod


# ------------------------------------------------------------------ shapes


def _view_like(c: RuleCtx, display: Callable[[list[str]], str]) -> Any:
    in_shape, out_shape = c.shape_of(0), c.out_shape
    inner = c.a
    # torch.sum(e, dim=d, keepdim=True) viewed without the kept dims is torch.sum(e, dim=d)
    if isinstance(inner, sym.Op):
        key = sym.spec_key(inner)
        if key is not None and key[0][0] == "reduce_dims" and key[0][3]:
            kind, dims = key[0][1], key[0][2]
            src = sym.spec_of(inner).in_shapes[0]
            squeezed = tuple(s for d, s in enumerate(src) if d not in dims)
            if squeezed == tuple(out_shape):
                return reduce_dims(c, inner.args[1], src, dims, False, kind)
    if _scalar_like(c, c.a) or strip1(in_shape) == strip1(out_shape):
        return c.a
    return c.op(display, method=True)


@rule("View", "UnsafeView", "ReshapeAlias")
def _view(c: RuleCtx) -> Any:
    shape = c.p("shape")
    return _view_like(c, lambda t: f"{t[0]}.reshape({_shape_text(shape)})")


@rule("Squeeze", "SqueezeDims")
def _squeeze(c: RuleCtx) -> Any:
    dims = c.params.get("dims") if c.params else None
    arg = "" if dims is None else _dims_text(dims)
    return _view_like(c, lambda t: f"{t[0]}.squeeze({arg})")


@rule("SqueezeDim")
def _squeeze_dim(c: RuleCtx) -> Any:
    d = c.p("dim")
    return _view_like(c, lambda t: f"{t[0]}.squeeze({d})")


@rule("Unsqueeze")
def _unsqueeze(c: RuleCtx) -> Any:
    d = c.p("dim")
    return _view_like(c, lambda t: f"{t[0]}.unsqueeze({d})")


@rule("Transpose")
def _transpose(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    d0, d1 = c.p("d0"), c.p("d1")
    return c.op(lambda t: f"{t[0]}.transpose({d0}, {d1})", method=True)


@rule("T")
def _t(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    return _transposed(c, c.a, c.shape_of(0))


def _transposed(c: RuleCtx, x: Any, shape: Shape) -> Any:
    """x.T, with (y.T).T = y and (A @ B).T = B.T @ A.T: a gradient computed in
    PyTorch's transposed order (nn.Linear's weight) prints as the textbook one."""
    if isinstance(x, sym.Op) and len(shape) == 2:
        key, spec = sym.spec_key(x), sym.spec_of(x)
        if key is not None and key[0] == ("transpose2d",):
            return x.args[1]
        if key is not None and key[0] == ("matmul",):
            (sa, sb), (a, b) = spec.in_shapes, x.args[1:]
            if sa is not None and sb is not None and len(sa) == len(sb) == 2:
                bt, at = _transposed(c, b, sb), _transposed(c, a, sa)
                return c.op(
                    lambda t: f"{t[0]} @ {t[1]}",
                    [bt, at],
                    infix=True,
                    evaluate=_matmul_eval,
                    in_shapes=[sb[::-1], sa[::-1]],
                    out_shape=shape[::-1],
                    key=("matmul",),
                    name="matmul",
                )
    return c.op(
        lambda t: f"{t[0]}.T",
        [x],
        method=True,
        evaluate=lambda v: np.transpose(v[0]),
        in_shapes=[shape],
        out_shape=tuple(shape)[::-1],
        key=("transpose2d",),
        name="t",
    )


@rule("Permute")
def _permute(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    dims = c.p("dims")
    return c.op(lambda t: f"{t[0]}.permute({_shape_text(dims)})", method=True)


@rule("Repeat")
def _repeat(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    reps = c.p("reps")
    return c.op(lambda t: f"{t[0]}.repeat({_shape_text(reps)})", method=True)


@rule("Flip")
def _flip(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    dims = c.p("dims")
    return c.op(lambda t: f"{t[0]}.flip({_shape_text(dims)})", method=True)


@rule("Cat", "Stack")
def _cat(c: RuleCtx) -> Any:
    word = "cat" if type(c.node).__name__ == "Cat" else "stack"
    d = c.p("dim")
    return c.op(lambda t: f"torch.{word}([{', '.join(t)}], dim={d})")


@rule("Split")
def _split(c: RuleCtx) -> Any:
    sizes, d, nr = c.p("sizes"), c.p("dim"), c.nr
    return c.op(lambda t: f"{t[0]}.split({list(sizes)}, dim={d})[{nr}]", method=True)


@rule("Unbind")
def _unbind(c: RuleCtx) -> Any:
    d, nr = c.p("dim"), c.nr
    return c.op(lambda t: f"{t[0]}.unbind({d})[{nr}]", method=True)


# ------------------------------------------------------------------ indexing


def index_text(index: Any) -> tuple[str, bool]:
    """Python text of an index (`0, 1:3`), and whether it is shown whole."""
    if not isinstance(index, tuple):
        index = (index,)
    parts, whole = [], True
    for ix in index:
        if ix is None:
            parts.append("None")
        elif ix is Ellipsis:
            parts.append("...")
        elif isinstance(ix, slice):
            start = "" if ix.start is None else str(ix.start)
            stop = "" if ix.stop is None else str(ix.stop)
            step = "" if ix.step is None else f":{ix.step}"
            parts.append(f"{start}:{stop}{step}")
        elif isinstance(ix, (int, np.integer)):
            parts.append(str(int(ix)))
        else:
            a = np.asarray(ix)
            if a.size <= 8:
                parts.append(str(a.tolist()))
            else:
                parts.append(f"<index of shape {list(a.shape)}>")
                whole = False
    return ", ".join(parts), whole


@rule("Select", "Slice", "Index", "AsStrided")
def _getitem(c: RuleCtx) -> Any:
    if _scalar_like(c, c.a):
        return c.a
    text, whole = index_text(c.p("index"))
    return c.op(lambda t: f"{t[0]}[{text}]", method=True, closed=whole)


@rule("Embed", "SelectBackward", "SliceBackward")
def _embed(c: RuleCtx) -> Any:
    index = c.p("index")
    g = c.args[-1]  # Embed's first operand is its constant zeros
    if c.node.grad_fn_name != "IndexPutImplBackward0":
        index = (*index, Ellipsis)
    text, _ = index_text(index)
    shape = c.p("shape")
    if _scalar_like(c, g):  # the same gradient at every indexed place: g times a 0/1 mask
        mask = np.zeros(shape)
        with np.errstate(all="ignore"):
            np.add.at(mask, index, 1.0)
        return g * c.conv.const_array(mask, kind="derived")
    return c.op(
        lambda t: f"zeros({_shape_text(shape)}).index_put(({text}), {t[-1]}, accumulate=True)",
        closed=False,
    )


@rule("_CopyInto", "CopySlices")
def _copy_into(c: RuleCtx) -> Any:
    """`x[i] = v`: v where the index points, x elsewhere (when v, broadcast over the
    whole tensor, lands exactly at the index)."""
    base, value = c.args[:2]
    index = c.p("index")
    shape, vshape = c.shape_of(0), c.shape_of(1)
    mask = np.zeros(shape, bool)
    mask[index] = True
    probe = np.arange(1.0, numel(vshape) + 1.0).reshape(vshape)
    placed = np.zeros(shape)
    try:
        placed[index] = probe
        fits = np.array_equal(np.broadcast_to(probe, shape)[mask], placed[mask])
    except ValueError:
        fits = False
    if fits:
        return sym.where(c.mask(mask), value, base)
    text, _ = index_text(index)
    return c.op(lambda t: f"{t[0]} with [{text}] = {t[1]}", closed=False)


@rule("Gather")
def _gather(c: RuleCtx) -> Any:
    text, whole = c.literal(c.p("index"))
    d = c.p("dim")
    return c.op(lambda t: f"torch.gather({t[0]}, {d}, {text})", closed=whole)


@rule("ScatterAdd")
def _scatter_add(c: RuleCtx) -> Any:
    text, _ = c.literal(c.p("index"))
    d = c.p("dim")
    return c.op(lambda t: f"zeros(...).scatter_add({d}, {text}, {t[0]})", closed=False)


# ------------------------------------------------------------------ neural-network functions


@rule("Softmax")
def _softmax(c: RuleCtx) -> Any:
    d = c.p("dim")
    return c.op(lambda t: f"softmax({t[0]}, dim={d})")


@rule("LogSoftmax")
def _log_softmax(c: RuleCtx) -> Any:
    d = c.p("dim")
    return c.op(lambda t: f"log_softmax({t[0]}, dim={d})")


@rule("SoftmaxBackwardData")
def _softmax_backward(c: RuleCtx) -> Any:
    g, y = c.args
    shape = tuple(np.broadcast_shapes(c.shape_of(0), c.shape_of(1)))
    return y * (g - reduce_dims(c, g * y, shape, (c.p("dim"),), True, "sum"))


@rule("LogSoftmaxBackwardData")
def _log_softmax_backward(c: RuleCtx) -> Any:
    g, y = c.args
    return g - sympy.exp(y) * reduce_dims(c, g, c.shape_of(0), (c.p("dim"),), True, "sum")


def _reduce_loss(c: RuleCtx, loss: Any, shape: Shape, reduction: str) -> Any:
    if reduction == "none":
        return loss
    return reduce_all(c, loss, shape, "mean" if reduction == "mean" else "sum")


def _loss_scale(g: Any, shape: Shape, reduction: str) -> Any:
    if reduction == "mean":
        return g / max(1, numel(shape))
    return g


@rule("MseLoss")
def _mse(c: RuleCtx) -> Any:
    a, t = c.args[:2]
    shape = tuple(np.broadcast_shapes(c.shape_of(0), c.shape_of(1)))
    return _reduce_loss(c, (a - t) ** 2, shape, c.p("reduction"))


@rule("MseLossBackward")
def _mse_backward(c: RuleCtx) -> Any:
    g, a, t = c.args[:3]
    shape = tuple(np.broadcast_shapes(c.shape_of(1), c.shape_of(2)))
    return _loss_scale(g, shape, c.p("reduction")) * (a - t) * 2


@rule("BinaryCrossEntropy")
def _bce(c: RuleCtx) -> Any:
    p, t, w = c.args[:3]
    loss = -(t * sympy.log(p) + (1 - t) * sympy.log(1 - p))
    if w is not None:
        loss = loss * w
    shape = tuple(np.broadcast_shapes(*[s for s in c.in_shapes if s is not None]))
    return _reduce_loss(c, loss, shape, c.p("reduction"))


@rule("BceBackward")
def _bce_backward(c: RuleCtx) -> Any:
    g, p, t, w = c.args[:4]
    shape = tuple(np.broadcast_shapes(c.shape_of(1), c.shape_of(2)))
    out = _loss_scale(g, shape, c.p("reduction")) * (p - t) / ((1 - p) * p)
    return out * w if w is not None else out


@rule("NllLoss")
def _nll(c: RuleCtx) -> Any:
    text, whole = c.literal(c.p("target"))
    red = c.p("reduction")
    extra = "" if red == "mean" else f", reduction='{red}'"
    weight = c.p("weight", None)
    if weight is not None:
        wtext, wwhole = c.literal(weight.data_)
        whole = whole and wwhole
        extra = f", weight={wtext}" + extra
    if c.p("ignore_index", -100) != -100:
        extra += f", ignore_index={c.p('ignore_index')}"
    return c.op(lambda t: f"F.nll_loss({t[0]}, {text}{extra})", closed=whole)


@rule("NllLossBackward")
def _nll_backward(c: RuleCtx) -> Any:
    """nll_loss's gradient is linear in g: g times a constant array (minus the one-hot
    of the targets over the batch size, for a mean without weights)."""
    g = c.args[0]
    if c.p("reduction") == "none" or numel(c.eshape(g)) != 1:
        return generic(c)
    metas = c.in_shapes
    ones = [np.ones(metas[0]), np.zeros(metas[1])] + [None] * (len(metas) - 2)
    if len(c.args) > 2 and c.args[2] is not None:
        ones[2] = sym.evaluate(c.args[2])
    k = np.asarray(_replay(type(c.node), c.params or {}, 0)(ones), dtype=np.float64)
    hot = k != 0
    if hot.any() and np.all(k[hot] == k[hot].flat[0]):
        scale = c.number(-k[hot].flat[0])
        target = np.asarray(c.p("target"))
        ttext = sym_literal(target) if target.size <= 8 else "target"
        classes = k.shape[-1]
        onehot = sym.tensor_symbol(f"F.one_hot({ttext}, {classes})", hot.astype(float), "derived")
        return -scale * onehot * g
    return g * c.conv.const_array(k, kind="derived")


def generic(c: RuleCtx) -> Any:
    """A row without a rule: evaluated by its own forward, shown without a closed form."""
    name = c.node.name()
    return c.op(lambda t: f"<{name}>({', '.join(t)})", closed=False)
