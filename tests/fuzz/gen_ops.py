"""Candidate operations for the generator: one `Plan` per call, over every op adcli has.

Each family picks inputs of fitting kinds and shapes from the generator's variables
(or makes new leaves), fills one of the op's spellings (function, method,
operator, `F.`, `torch.nn` object) and says how the op computes (for the exact
flag) and where its kinks are. Shapes that do not fit are fine: the generator
runs every plan in torch first and drops (or keeps as an error) what fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .gen import DISCRETE, DYADIC, IEEE, MOVE, ORDER, TRANSC, Plan, kind_of
from .gen_conv import conv_pool

if TYPE_CHECKING:
    from .gen import Gen

# ---------------------------------------------------------------- factories


def _shape_args(g: Gen, shape: tuple[int, ...]) -> str:
    """`2, 3` or `(2, 3)` or `()` for a factory's size arguments."""
    if not shape:
        return "()" if g.rng.random() < 0.5 else "[]"
    if g.rng.random() < 0.5:
        return ", ".join(map(str, shape))
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _tuple(shape: tuple[int, ...] | list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def factory(
    g: Gen, shape: tuple[int, ...], kind: str, rg: bool, dtype: str | None
) -> tuple[str, bool]:
    """Text making a new tensor of `shape`, and whether its values are exact."""
    rng = g.rng
    rgt = ", requires_grad=True" if rg else ""
    if kind != "f" and rng.random() < 0.03:
        rgt = ", requires_grad=True"  # deliberate: integer tensors cannot require grad
    if kind == "f":
        dt = dtype if dtype is not None else g.float_dtype()
    elif kind == "i":
        dt = dtype if dtype is not None else rng.choice(("", ", dtype=torch.int64"))
    else:
        dt = ""
    r = rng.random()
    size = _shape_args(g, shape)
    if kind == "b":
        if r < 0.8:
            return f"torch.tensor({g.literal(shape, 'b')})", True
        return f"torch.{rng.choice(('ones', 'zeros'))}({size}, dtype=torch.bool)", True
    if kind == "i":
        if r < 0.65:
            return f"torch.tensor({g.literal(shape, 'i')}{dt}{rgt})", True
        if r < 0.8 and len(shape) == 1:
            return f"torch.arange({shape[0]}{dt})", True
        if r < 0.9:
            return f"torch.randint(-3, 4, {_tuple(shape)})", True
        return f"torch.zeros({size}, dtype=torch.int64)", True
    if r < 0.55:
        return f"torch.tensor({g.literal(shape, 'f')}{dt}{rgt})", True
    if r < 0.63:
        return f"torch.{rng.choice(('ones', 'zeros'))}({size}{dt}{rgt})", True
    if r < 0.69:
        return f"torch.full({_tuple(shape)}, {rng.choice(DYADIC)}{dt}{rgt})", True
    if r < 0.74 and len(shape) == 1 and shape[0]:
        start = rng.choice((0.0, -1.0, 0.5))
        return f"torch.arange({start}, {start + 0.5 * shape[0] - 0.25}, 0.5{dt}{rgt})", True
    if r < 0.78 and len(shape) == 1:
        a, b = rng.choice(((-1.0, 1.0), (0.0, 2.0), (-2.0, 0.5)))
        return f"torch.linspace({a}, {b}, {shape[0]}{dt}{rgt})", False
    if r < 0.81 and len(shape) == 2 and shape[0] == shape[1]:
        return f"torch.eye({shape[0]}{dt}{rgt})", True
    if r < 0.89:
        fn = rng.choice(("randn", "rand"))
        return f"torch.{fn}({size}{dt}{rgt})", False
    like = g.tensors(lambda v: tuple(v.shape) == tuple(shape))
    if like:
        src = g.pick(like)
        fn = rng.choice(("ones_like", "zeros_like", "full_like"))
        extra = f", {rng.choice(DYADIC)}" if fn == "full_like" else ""
        ldt = dt or ", dtype=torch.float32"
        if g.ns[src].is_floating_point() and not dt:
            ldt = ""
        return f"torch.{fn}({src}{extra}{ldt}{rgt})", True
    lit = g.literal(shape, "f")
    if rg:
        return f"torch.tensor({lit}{dt}).requires_grad_()", True
    return f"torch.tensor({lit}{dt})", True


# ---------------------------------------------------------------- helpers


def _dim(g: Gen, ndim: int) -> int:
    """A valid dim for `ndim` (negative sometimes); 0-d tensors take 0 or -1."""
    n = max(ndim, 1)
    return g.rng.randint(-n, n - 1)


def _two_dims(g: Gen, ndim: int) -> tuple[int, int] | None:
    if ndim < 2:
        return None
    a, b = g.rng.sample(range(ndim), 2)
    return a, b


def _kw_bool(g: Gen) -> str:
    return g.rng.choice(("True", "False"))


def _scalar(g: Gen) -> str:
    """A Python number operand."""
    r = g.rng.random()
    if r < 0.4:
        return str(g.rng.choice((1, 2, 3, -1, 0)))
    if r < 0.95:
        return repr(g.rng.choice(DYADIC))
    return repr(round(g.rng.uniform(-2, 2), 2))


def _broadcast_shape(g: Gen, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against `shape` without growing it."""
    s = list(shape)
    if s and g.rng.random() < 0.4:
        s = s[g.rng.randint(1, len(s)) :]
    return tuple(1 if g.rng.random() < 0.3 else d for d in s)


def _other(g: Gen, a: str, kinds: str = "f") -> tuple[str, list[str]]:
    """A second operand for `a`: a tensor of its shape, a broadcastable one, a 0-d one,
    a Python number, or (rarely) anything."""
    v = g.ns[a]
    r = g.rng.random()
    kind = kind_of(v) if kind_of(v) in kinds else kinds[0]
    if r < 0.35:
        name = g.need(tuple(v.shape), kind, v.dtype if g.rng.random() < 0.7 else None)
        return name, [name]
    if r < 0.55:
        return _scalar(g), []
    if r < 0.68:
        name = g.need((), kind)
        return name, [name]
    if r < 0.93:
        name = g.need(_broadcast_shape(g, tuple(v.shape)), kind)
        return name, [name]
    name = g.any_tensor(kinds)
    return name, [name]


def _fill(form: str, **kw: Any) -> str:
    return form.format(**kw)


# ---------------------------------------------------------------- unary

# (feature, form, how, kinks, kinds); kinks name "x" or give ("at", "x", value)
UNARY: list[tuple[str, str, str, list[tuple[Any, ...]], str]] = [
    ("exp", "torch.exp({x})", TRANSC, [], "f"),
    ("exp", "{x}.exp()", TRANSC, [], "f"),
    ("log", "torch.log({x})", TRANSC, [("zero", "x")], "f"),
    ("log", "{x}.log()", TRANSC, [("zero", "x")], "f"),
    ("log1p", "torch.log1p({x})", TRANSC, [("at", "x", -1.0)], "f"),
    ("log1p", "{x}.log1p()", TRANSC, [("at", "x", -1.0)], "f"),
    # PyTorch's CPU sqrt (SLEEF's 0.5-ulp kernel) is not IEEE's correctly rounded one:
    # about 1% of float64 and float32 inputs differ in the last bit (sqrt(2.) included)
    ("sqrt", "torch.sqrt({x})", TRANSC, [("zero", "x")], "f"),
    ("sqrt", "{x}.sqrt()", TRANSC, [("zero", "x")], "f"),
    ("abs", "torch.abs({x})", IEEE, [("zero", "x")], "fi"),
    ("abs", "{x}.abs()", IEEE, [("zero", "x")], "f"),
    ("abs", "abs({x})", IEEE, [("zero", "x")], "f"),
    ("neg", "-{x}", IEEE, [], "fi"),
    ("neg", "torch.neg({x})", IEEE, [], "f"),
    ("neg", "{x}.neg()", IEEE, [], "f"),
    ("neg", "torch.negative({x})", IEEE, [], "f"),
    ("pos", "+{x}", MOVE, [], "f"),
    ("sin", "torch.sin({x})", TRANSC, [], "f"),
    ("sin", "{x}.sin()", TRANSC, [], "f"),
    ("cos", "torch.cos({x})", TRANSC, [], "f"),
    ("cos", "{x}.cos()", TRANSC, [], "f"),
    ("tan", "torch.tan({x})", TRANSC, [], "f"),
    ("tan", "{x}.tan()", TRANSC, [], "f"),
    ("asin", "torch.asin({x})", TRANSC, [("at", "x", 1.0), ("at", "x", -1.0)], "fi"),
    ("asin", "{x}.arcsin()", TRANSC, [("at", "x", 1.0), ("at", "x", -1.0)], "f"),
    ("asin", "({x} * 1).asin_()", TRANSC, [("at", "x", 1.0), ("at", "x", -1.0)], "f"),
    ("acos", "torch.arccos({x})", TRANSC, [("at", "x", 1.0), ("at", "x", -1.0)], "fi"),
    ("acos", "{x}.acos()", TRANSC, [("at", "x", 1.0), ("at", "x", -1.0)], "f"),
    ("atan", "torch.atan({x})", TRANSC, [], "fi"),
    ("atan", "{x}.arctan()", TRANSC, [], "f"),
    ("atan", "torch.arctan_({x} * 1)", TRANSC, [], "f"),
    ("rsqrt", "torch.rsqrt({x})", TRANSC, [("zero", "x")], "fi"),
    ("rsqrt", "{x}.rsqrt()", TRANSC, [("zero", "x")], "f"),
    ("rsqrt", "({x} * 1).rsqrt_()", TRANSC, [("zero", "x")], "f"),
    ("tanh", "torch.tanh({x})", TRANSC, [], "f"),
    ("tanh", "{x}.tanh()", TRANSC, [], "f"),
    ("tanh", "F.tanh({x})", TRANSC, [], "f"),
    ("tanh", "torch.nn.Tanh()({x})", TRANSC, [], "f"),
    ("sigmoid", "torch.sigmoid({x})", TRANSC, [], "f"),
    ("sigmoid", "{x}.sigmoid()", TRANSC, [], "f"),
    ("sigmoid", "F.sigmoid({x})", TRANSC, [], "f"),
    ("sigmoid", "torch.nn.Sigmoid()({x})", TRANSC, [], "f"),
    ("relu", "torch.relu({x})", IEEE, [("zero", "x")], "fi"),
    ("relu", "{x}.relu()", IEEE, [("zero", "x")], "f"),
    ("relu", "F.relu({x})", IEEE, [("zero", "x")], "f"),
    ("relu", "torch.nn.ReLU()({x})", IEEE, [("zero", "x")], "f"),
    ("leaky_relu", "F.leaky_relu({x})", TRANSC, [("zero", "x")], "f"),
    ("leaky_relu", "F.leaky_relu({x}, 0.2)", TRANSC, [("zero", "x")], "f"),
    ("leaky_relu", "F.leaky_relu({x}, negative_slope=0.5)", TRANSC, [("zero", "x")], "f"),
    ("softplus", "F.softplus({x})", TRANSC, [("at", "x", 20.0)], "f"),
    ("softplus", "F.softplus({x}, beta=2.0)", TRANSC, [("at", "x", 10.0)], "f"),
    ("softplus", "F.softplus({x}, beta=0.5, threshold=1.0)", TRANSC, [("at", "x", 2.0)], "f"),
    ("sign", "torch.sign({x})", DISCRETE, [("zero", "x")], "fi"),
    ("sign", "{x}.sign()", DISCRETE, [("zero", "x")], "f"),
    ("floor", "torch.floor({x})", DISCRETE, [("int", "x")], "f"),
    ("floor", "{x}.floor()", DISCRETE, [("int", "x")], "f"),
    ("ceil", "torch.ceil({x})", DISCRETE, [("int", "x")], "f"),
    ("ceil", "{x}.ceil()", DISCRETE, [("int", "x")], "f"),
    ("round", "torch.round({x})", DISCRETE, [("half", "x")], "f"),
    ("round", "{x}.round()", DISCRETE, [("half", "x")], "f"),
    ("round_decimals", "torch.round({x}, decimals=1)", TRANSC, [("half10", "x")], "f"),
    ("square", "torch.square({x})", IEEE, [], "fi"),
    ("square", "{x}.square()", IEEE, [], "f"),
    ("square", "{x} ** 2", IEEE, [], "f"),
    ("square", "{x}.pow(2)", IEEE, [], "f"),
    ("square", "{x} * {x}", IEEE, [], "f"),
    ("reciprocal", "torch.reciprocal({x})", IEEE, [("zero", "x")], "f"),
    ("reciprocal", "{x}.reciprocal()", IEEE, [("zero", "x")], "f"),
    ("rdiv", "1 / {x}", IEEE, [("zero", "x")], "f"),
    ("pow_const", "{x} ** 3", TRANSC, [], "f"),
    ("pow_const", "{x}.pow(0.5)", TRANSC, [("zero", "x")], "f"),
    ("pow_const", "torch.pow({x}, -1)", TRANSC, [("zero", "x")], "f"),
    ("pow_const", "{x} ** 1.5", TRANSC, [("zero", "x")], "f"),
    ("rpow", "2 ** {x}", TRANSC, [], "f"),
    ("rpow", "torch.pow(2.0, {x})", TRANSC, [], "f"),
    ("rsub", "1 - {x}", IEEE, [], "fi"),
    ("rmul", "2 * {x}", IEEE, [], "fi"),
    ("radd", "0.5 + {x}", IEEE, [], "f"),
    ("clamp", "torch.clamp({x}, min={lo})", IEEE, [("at", "x", "lo")], "f"),
    ("clamp", "{x}.clamp({lo}, {hi})", IEEE, [("at", "x", "lo"), ("at", "x", "hi")], "f"),
    ("clamp", "{x}.clamp(max={hi})", IEEE, [("at", "x", "hi")], "fi"),
    ("clamp", "torch.clip({x}, {lo}, {hi})", IEEE, [("at", "x", "lo"), ("at", "x", "hi")], "f"),
    ("clamp", "{x}.clip(min={lo})", IEEE, [("at", "x", "lo")], "f"),
    ("clamp_min", "{x}.clamp_min({lo})", IEEE, [("at", "x", "lo")], "fi"),
    ("clamp_min", "torch.clamp_min({x}, min={lo})", IEEE, [("at", "x", "lo")], "f"),
    ("clamp_min", "({x} * 1).clamp_min_({lo})", IEEE, [("at", "x", "lo")], "f"),
    ("clamp_max", "torch.clamp_max({x}, {hi})", IEEE, [("at", "x", "hi")], "fi"),
    ("clamp_max", "{x}.clamp_max(max={hi})", IEEE, [("at", "x", "hi")], "f"),
    ("clamp_max", "torch.clamp_max_({x} * 1, {hi})", IEEE, [("at", "x", "hi")], "f"),
    ("logcumsumexp", "torch.logcumsumexp({x}, 0)", TRANSC, [], "f"),
    ("logcumsumexp", "{x}.logcumsumexp(-1)", TRANSC, [], "f"),
    ("logcumsumexp", "{x}.logcumsumexp(dim=0)", TRANSC, [], "fi"),
    ("logical_not", "torch.logical_not({x})", DISCRETE, [("zero", "x")], "fib"),
    ("invert", "~{x}", DISCRETE, [], "b"),
    ("isnan", "torch.isnan({x})", DISCRETE, [], "fi"),
    ("isinf", "{x}.isinf()", DISCRETE, [], "f"),
    ("isfinite", "torch.isfinite({x})", DISCRETE, [], "f"),
    ("to_float64", "{x}.double()", MOVE, [], "fib"),
    ("to_float64", "{x}.to(torch.float64)", MOVE, [], "fi"),
    ("to_float32", "{x}.float()", IEEE, [], "fib"),
    ("to_float32", "{x}.to(dtype=torch.float32)", IEEE, [], "fi"),
    ("to_float32", "{x}.type(torch.float32)", IEEE, [], "fi"),
    ("to_int64", "{x}.long()", DISCRETE, [("int", "x")], "fb"),
    ("to_int64", "{x}.to(torch.int64)", DISCRETE, [("int", "x")], "f"),
    ("to_bool", "{x}.bool()", DISCRETE, [("zero", "x")], "fi"),
    ("clone", "{x}.clone()", MOVE, [], "fib"),
    ("clone", "torch.clone({x})", MOVE, [], "f"),
    ("detach", "{x}.detach()", MOVE, [], "f"),
    ("contiguous", "{x}.contiguous()", MOVE, [], "f"),
    ("dropout", "F.dropout({x}, p=0.0)", MOVE, [], "f"),
    ("dropout", "F.dropout({x}, training=False)", MOVE, [], "f"),
    ("dropout_train", "F.dropout({x}, p=0.5)", TRANSC, [], "f"),
]


def _resolve_kinks(
    kinks: list[tuple[Any, ...]], names: dict[str, str], values: dict[str, Any]
) -> list[tuple[Any, ...]]:
    out = []
    for k in kinks:
        kind, *args = k
        refs = [names.get(a, a) if isinstance(a, str) else a for a in args[:1]]
        rest = [values.get(a, a) if isinstance(a, str) else a for a in args[1:]]
        if kind == "pair":
            refs = [names.get(args[0], args[0]), names.get(args[1], args[1])]
            rest = []
        if kind == "ratio":
            refs = [names.get(args[0], args[0]), names.get(args[1], args[1])]
            rest = []
        out.append((kind, refs, *[float(r) for r in rest]))
    return out


def unary(g: Gen) -> Plan | None:
    """One-input elementwise ops, conversions, copies."""
    feature, form, how, kinks, kinds = g.rng.choice(UNARY)
    x = g.any_tensor(kinds)
    if not x:
        return None
    lo, hi = sorted(g.rng.sample(DYADIC, 2))
    if lo == hi:
        return None
    expr = _fill(form, x=x, lo=lo, hi=hi)
    ks = _resolve_kinks(kinks, {"x": x}, {"lo": lo, "hi": hi})
    return Plan(expr, [x], how, ks, feature)


# ---------------------------------------------------------------- binary

BINARY: list[tuple[str, str, str, list[tuple[Any, ...]], str]] = [
    ("add", "{a} + {b}", IEEE, [], "fi"),
    ("add", "torch.add({a}, {b})", IEEE, [], "fi"),
    ("add", "{a}.add({b})", IEEE, [], "f"),
    ("add_alpha", "torch.add({a}, {b}, alpha={s})", TRANSC, [], "f"),
    ("sub", "{a} - {b}", IEEE, [], "fi"),
    ("sub", "torch.sub({a}, {b})", IEEE, [], "f"),
    ("sub_alpha", "{a}.sub({b}, alpha={s})", TRANSC, [], "f"),
    ("mul", "{a} * {b}", IEEE, [], "fib"),
    ("mul", "torch.mul({a}, {b})", IEEE, [], "fi"),
    ("mul", "{a}.mul({b})", IEEE, [], "f"),
    ("div", "{a} / {b}", IEEE, [("zero", "b")], "fi"),
    ("div", "torch.div({a}, {b})", IEEE, [("zero", "b")], "f"),
    ("div", "{a}.div({b})", IEEE, [("zero", "b")], "f"),
    ("div", "torch.true_divide({a}, {b})", IEEE, [("zero", "b")], "fi"),
    (
        "div_floor",
        "torch.div({a}, {b}, rounding_mode='floor')",
        DISCRETE,
        [("ratio", "a", "b")],
        "f",
    ),
    (
        "div_trunc",
        "torch.div({a}, {b}, rounding_mode='trunc')",
        DISCRETE,
        [("ratio", "a", "b")],
        "f",
    ),
    ("pow", "{a} ** {b}", TRANSC, [("zero", "a")], "f"),
    ("pow", "torch.pow({a}, {b})", TRANSC, [("zero", "a")], "f"),
    ("pow", "{a}.pow({b})", TRANSC, [("zero", "a")], "f"),
    ("maximum", "torch.maximum({a}, {b})", IEEE, [("pair", "a", "b")], "fi"),
    ("maximum", "torch.max({a}, {b})", IEEE, [("pair", "a", "b")], "f"),
    ("maximum", "{a}.maximum({b})", IEEE, [("pair", "a", "b")], "f"),
    ("minimum", "torch.minimum({a}, {b})", IEEE, [("pair", "a", "b")], "fi"),
    ("minimum", "torch.min({a}, {b})", IEEE, [("pair", "a", "b")], "f"),
    ("remainder", "{a} % {b}", TRANSC, [("ratio", "a", "b")], "fi"),
    ("remainder", "torch.remainder({a}, {b})", TRANSC, [("ratio", "a", "b")], "f"),
    ("floor_divide", "{a} // {b}", DISCRETE, [("ratio", "a", "b")], "fi"),
    ("floor_divide", "torch.floor_divide({a}, {b})", DISCRETE, [("ratio", "a", "b")], "f"),
    ("floor_divide", "{a}.floor_divide({b})", DISCRETE, [("ratio", "a", "b")], "fi"),
    ("remainder", "{a}.remainder({b})", TRANSC, [("ratio", "a", "b")], "f"),
    ("remainder", "({a} * 1).remainder_({b})", TRANSC, [("ratio", "a", "b")], "fi"),
    ("fmod", "torch.fmod({a}, {b})", TRANSC, [("ratio", "a", "b")], "fi"),
    ("fmod", "{a}.fmod({b})", TRANSC, [("ratio", "a", "b")], "f"),
    ("fmod", "({a} * 1).fmod_({b})", TRANSC, [("ratio", "a", "b")], "fi"),
    ("clamp_tensor", "torch.clamp_min({a}, {b})", IEEE, [("pair", "a", "b")], "f"),
    ("clamp_tensor", "{a}.clamp_max({b})", IEEE, [("pair", "a", "b")], "f"),
    ("clamp_tensor", "({a} * 1).clamp_min_(min={b})", IEEE, [("pair", "a", "b")], "f"),
    ("compare", "{a} == {b}", DISCRETE, [("pair", "a", "b")], "fib"),
    ("compare", "{a} != {b}", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "{a} < {b}", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "{a} <= {b}", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "{a} > {b}", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "{a} >= {b}", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "torch.eq({a}, {b})", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "{a}.ne({b})", DISCRETE, [("pair", "a", "b")], "fi"),
    ("compare", "torch.gt({a}, {b})", DISCRETE, [("pair", "a", "b")], "f"),
    ("compare", "{a}.ge({b})", DISCRETE, [("pair", "a", "b")], "f"),
    ("compare", "torch.lt({a}, {b})", DISCRETE, [("pair", "a", "b")], "f"),
    ("compare", "{a}.le({b})", DISCRETE, [("pair", "a", "b")], "f"),
    ("logical", "{a} & {b}", DISCRETE, [], "bi"),
    ("logical", "{a} | {b}", DISCRETE, [], "b"),
    ("logical", "{a} ^ {b}", DISCRETE, [], "b"),
    ("clamp_tensor", "torch.clamp({a}, min={b})", IEEE, [("pair", "a", "b")], "f"),
    ("clamp_tensor", "{a}.clamp(max={b})", IEEE, [("pair", "a", "b")], "f"),
    ("equal", "torch.equal({a}, {b})", DISCRETE, [("pair", "a", "b")], "fi"),
    ("allclose", "torch.allclose({a}, {b})", DISCRETE, [("pair", "a", "b")], "f"),
]


def binary(g: Gen) -> Plan | None:
    """Two-input elementwise ops, with broadcasting and Python numbers."""
    feature, form, how, kinks, kinds = g.rng.choice(BINARY)
    a = g.any_tensor(kinds)
    if not a:
        return None
    b, b_inputs = _other(g, a, kinds)
    if not b:
        return None
    if g.rng.random() < 0.15 and "{a} " in form and b_inputs:
        a, b = b, a  # number or other tensor first
    s = g.rng.choice(("2", "0.5", "-1", "1.5"))
    expr = _fill(form, a=a, b=b, s=s)
    inputs = [a] + b_inputs if a in g.ns else b_inputs
    ks = [k for k in _resolve_kinks(kinks, {"a": a, "b": b}, {}) if all(_known(g, r) for r in k[1])]
    return Plan(expr, [n for n in inputs if n in g.ns], how, ks, feature)


def _known(g: Gen, ref: Any) -> bool:
    """A kink operand: a variable or a number literal."""
    if ref in g.ns:
        return True
    try:
        float(ref)
    except (TypeError, ValueError):
        return False
    return True


def reversed_scalar(g: Gen) -> Plan | None:
    """A Python number on the left: `2 * x`, `1 - x`, `3 / x`, `2 ** x`."""
    x = g.any_tensor("f")
    if not x:
        return None
    s = _scalar(g)
    op, how, kinks = g.rng.choice(
        (
            ("+", IEEE, []),
            ("-", IEEE, []),
            ("*", IEEE, []),
            ("/", IEEE, [("zero", [x])]),
            ("**", TRANSC, []),
        )
    )
    if op == "**" and float(s) <= 0:
        s = "2.0"
    return Plan(f"{s} {op} {x}", [x], how, kinks, "scalar_" + op)


def where_mask(g: Gen) -> Plan | None:
    """where, masked_fill, boolean masks made by comparisons."""
    a = g.any_tensor("f")
    if not a:
        return None
    v = g.ns[a]
    r = g.rng.random()
    kinks: list[tuple[Any, ...]] = []
    if r < 0.4:
        c = repr(g.rng.choice(DYADIC))
        mask = f"{a} > {c}"
        kinks.append(("pair", [a, c]))
        inputs = [a]
    else:
        mask = g.need(_broadcast_shape(g, tuple(v.shape)), "b")
        inputs = [a, mask]
    if not mask:
        return None
    form = g.rng.randrange(6)
    if form < 3:
        b, b_in = _other(g, a)
        if not b:
            return None
        exprs = (
            f"torch.where({mask}, {a}, {b})",
            f"{a}.where({mask}, {b})",
            f"torch.where({mask}, {b}, {a})",
        )
        return Plan(exprs[form], inputs + b_in, MOVE, kinks, "where")
    value = _scalar(g) if g.rng.random() < 0.7 else g.need((), "f")
    inputs += [value] if value in g.ns else []
    exprs = (
        f"{a}.masked_fill({mask}, {value})",
        f"torch.masked_fill({a}, {mask}, {value})",
        f"{a}.masked_fill({mask}, {value})",
    )
    return Plan(exprs[form - 3], inputs, MOVE, kinks, "masked_fill")


# ---------------------------------------------------------------- reductions

# {x} tensor, {d}/{d2} dims, {k} keepdim; kinks on x
REDUCE: list[tuple[str, str, str, list[tuple[Any, ...]], str]] = [
    ("sum", "{x}.sum()", ORDER, [], "fib"),
    ("sum", "torch.sum({x})", ORDER, [], "f"),
    ("sum", "{x}.sum({d})", ORDER, [], "fi"),
    ("sum", "{x}.sum(dim={d}, keepdim={k})", ORDER, [], "f"),
    ("sum", "torch.sum({x}, ({d}, {d2}))", ORDER, [], "f"),
    ("sum", "{x}.sum(dtype=torch.float64)", ORDER, [], "fi"),
    ("mean", "{x}.mean()", ORDER, [], "f"),
    ("mean", "torch.mean({x}, {d})", ORDER, [], "f"),
    ("mean", "{x}.mean(dim={d}, keepdim={k})", ORDER, [], "f"),
    ("mean", "{x}.mean(({d}, {d2}))", ORDER, [], "f"),
    ("prod", "{x}.prod()", ORDER, [("zero", "x")], "fi"),
    ("prod", "torch.prod({x}, {d})", ORDER, [("zero", "x")], "f"),
    ("prod", "{x}.prod({d}, keepdim={k})", ORDER, [("zero", "x")], "f"),
    ("max", "{x}.max()", MOVE, [("ties", "x")], "fi"),
    ("min", "torch.min({x})", MOVE, [("ties", "x")], "f"),
    ("max_dim", "{x}.max({d})", MOVE, [("ties", "x")], "f"),
    ("max_dim", "torch.max({x}, dim={d}, keepdim={k})", MOVE, [("ties", "x")], "f"),
    ("min_dim", "{x}.min({d})[0]", MOVE, [("ties", "x")], "f"),
    ("max_dim", "{x}.max(dim={d}).values", MOVE, [("ties", "x")], "f"),
    ("min_dim", "torch.min({x}, {d}).indices", DISCRETE, [("ties", "x")], "f"),
    ("amax", "torch.amax({x}, {d})", MOVE, [("ties", "x")], "f"),
    ("amin", "{x}.amin(dim={d}, keepdim={k})", MOVE, [("ties", "x")], "f"),
    ("amax", "torch.amax({x}, ({d}, {d2}))", MOVE, [("ties", "x")], "f"),
    ("amax", "{x}.amax()", MOVE, [("ties", "x")], "f"),
    ("argmax", "{x}.argmax()", DISCRETE, [("ties", "x")], "fi"),
    ("argmin", "torch.argmin({x}, dim={d})", DISCRETE, [("ties", "x")], "f"),
    ("argmax", "{x}.argmax({d}, keepdim={k})", DISCRETE, [("ties", "x")], "f"),
    ("norm", "{x}.norm()", TRANSC, [("zero", "x")], "f"),
    ("norm", "torch.norm({x})", TRANSC, [("zero", "x")], "f"),
    ("norm", "{x}.norm(p=1)", TRANSC, [("zero", "x")], "f"),
    ("norm", "{x}.norm(dim={d})", TRANSC, [("zero", "x")], "f"),
    ("norm", "torch.norm({x}, p=3, dim={d}, keepdim={k})", TRANSC, [("zero", "x")], "f"),
    ("norm", "{x}.norm(p=float('inf'))", TRANSC, [("zero", "x"), ("ties", "x")], "f"),
    ("linalg_norm", "torch.linalg.norm({x})", TRANSC, [("zero", "x")], "f"),
    ("linalg_norm", "torch.linalg.vector_norm({x}, ord=1)", TRANSC, [("zero", "x")], "f"),
    ("linalg_norm", "torch.linalg.norm({x}, dim={d})", TRANSC, [("zero", "x")], "f"),
    ("var", "{x}.var()", TRANSC, [("ties", "x")], "f"),
    ("var", "torch.var({x}, {d})", TRANSC, [("ties", "x")], "f"),
    ("var", "{x}.var(dim={d}, keepdim={k})", TRANSC, [("ties", "x")], "f"),
    ("var", "{x}.var(unbiased=False)", TRANSC, [("ties", "x")], "f"),
    ("std", "torch.std({x})", TRANSC, [("ties", "x")], "f"),
    ("std", "{x}.std({d})", TRANSC, [("ties", "x")], "f"),
    ("std", "{x}.std(correction=0)", TRANSC, [("ties", "x")], "f"),
    ("logsumexp", "torch.logsumexp({x}, {d})", TRANSC, [], "f"),
    ("logsumexp", "{x}.logsumexp(dim={d}, keepdim={k})", TRANSC, [], "f"),
    ("softmax", "torch.softmax({x}, {d})", TRANSC, [], "f"),
    ("softmax", "{x}.softmax(dim={d})", TRANSC, [], "f"),
    ("softmax", "F.softmax({x}, dim={d})", TRANSC, [], "f"),
    ("log_softmax", "F.log_softmax({x}, {d})", TRANSC, [], "f"),
    ("log_softmax", "{x}.log_softmax({d})", TRANSC, [], "f"),
    ("log_softmax", "torch.log_softmax({x}, dim={d})", TRANSC, [], "f"),
    ("cumsum", "torch.cumsum({x}, {d})", ORDER, [], "fi"),
    ("cumsum", "{x}.cumsum(dim={d})", ORDER, [], "f"),
    ("all", "{x}.all()", DISCRETE, [("zero", "x")], "fib"),
    ("any", "torch.any({x})", DISCRETE, [("zero", "x")], "fb"),
    ("any", "{x}.any({d})", DISCRETE, [("zero", "x")], "fb"),
    ("all", "torch.all({x}, dim={d})", DISCRETE, [("zero", "x")], "b"),
]


def reduction(g: Gen) -> Plan | None:
    """Reductions over all elements or along dims, with keepdim."""
    feature, form, how, kinks, kinds = g.rng.choice(REDUCE)
    x = g.any_tensor(kinds)
    if not x:
        return None
    nd = g.ns[x].ndim
    if "{d2}" in form:
        dims = _two_dims(g, nd)
        if dims is None:
            return None
        d, d2 = dims
    else:
        d, d2 = _dim(g, nd), 0
    if g.rng.random() < 0.03:
        d = nd + 1  # deliberate: dim out of range
    expr = _fill(form, x=x, d=d, d2=d2, k=_kw_bool(g))
    return Plan(expr, [x], how, _resolve_kinks(kinks, {"x": x}, {}), feature)


# ---------------------------------------------------------------- linear algebra


def linalg(g: Gen) -> Plan | None:
    """dot, mv, mm, matmul / @ (1-d to 3-d), bmm, outer, addmm, F.linear."""
    rng = g.rng
    case = rng.choice(("dot", "mv", "mm", "matmul", "matmul", "bmm", "outer", "addmm", "linear"))
    n, m, k = rng.randint(1, 3), rng.randint(1, 3), rng.randint(0, 3) if rng.random() < 0.1 else 2
    dtype = torch.float64 if g.f64_mode else rng.choice((torch.float32, torch.float32, None))
    if case == "dot":
        a, b = g.need((n,), dtype=dtype), None
        b = g.need((n,), dtype=g.ns[a].dtype) if a else ""
        forms = (f"torch.dot({a}, {b})", f"{a}.dot({b})", f"{a} @ {b}", f"torch.matmul({a}, {b})")
    elif case == "mv":
        a = g.need((m, n), dtype=dtype)
        b = g.need((n,), dtype=g.ns[a].dtype) if a else ""
        forms = (f"torch.mv({a}, {b})", f"{a}.mv({b})", f"{a} @ {b}")
    elif case == "mm":
        a = g.need((m, k), dtype=dtype)
        b = g.need((k, n), dtype=g.ns[a].dtype) if a else ""
        forms = (f"torch.mm({a}, {b})", f"{a}.mm({b})", f"{a} @ {b}", f"torch.matmul({a}, {b})")
    elif case == "matmul":
        shapes = rng.choice(
            (
                ((k,), (k, n)),
                ((m, k), (k,)),
                ((2, m, k), (k, n)),
                ((k,), (2, k, n)),
                ((2, m, k), (k,)),
            )
        )
        a = g.need(shapes[0], dtype=dtype)
        b = g.need(shapes[1], dtype=g.ns[a].dtype) if a else ""
        forms = (f"{a} @ {b}", f"torch.matmul({a}, {b})", f"{a}.matmul({b})")
    elif case == "bmm":
        a = g.need((2, m, k), dtype=dtype)
        b = g.need((2, k, n), dtype=g.ns[a].dtype) if a else ""
        forms = (f"{a}.bmm({b})", f"torch.bmm({a}, {b})", f"{a} @ {b}", f"torch.matmul({a}, {b})")
    elif case == "outer":
        a = g.need((m,), dtype=dtype)
        b = g.need((n,), dtype=g.ns[a].dtype) if a else ""
        forms = (f"torch.outer({a}, {b})", f"{a}.outer({b})", f"torch.ger({a}, {b})")
        if a and b:
            return Plan(rng.choice(forms), [a, b], IEEE, [], "outer")
    elif case == "addmm":
        a = g.need((m, k), dtype=dtype)
        b = g.need((k, n), dtype=g.ns[a].dtype) if a else ""
        c = g.need(rng.choice(((m, n), (n,), ())), dtype=g.ns[a].dtype) if a else ""
        if not (a and b and c):
            return None
        expr = rng.choice((f"{c}.addmm({a}, {b})", f"torch.addmm({c}, {a}, {b})"))
        return Plan(expr, [a, b, c], ORDER, [], "addmm")
    else:
        x = g.need(rng.choice(((k,), (m, k), (2, m, k))), dtype=dtype)
        w = g.need((n, k), dtype=g.ns[x].dtype) if x else ""
        if not (x and w):
            return None
        if rng.random() < 0.6:
            bias = g.need((n,), dtype=g.ns[x].dtype)
            return Plan(f"F.linear({x}, {w}, {bias})", [x, w, bias], ORDER, [], "linear")
        return Plan(f"F.linear({x}, {w})", [x, w], ORDER, [], "linear")
    if not (a and b):
        return None
    return Plan(rng.choice(forms), [a, b], ORDER, [], case)


# ---------------------------------------------------------------- shapes and views


def _factorisations(n: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [(n,), (1, n), (n, 1)]
    for a in range(2, n):
        if n % a == 0:
            out += [(a, n // a), (1, a, n // a), (a, 1, n // a)]
    return out


def reshape(g: Gen) -> Plan | None:
    """view, reshape, flatten, ravel, view_as, reshape_as."""
    x = g.any_tensor("fib")
    if not x:
        return None
    v = g.ns[x]
    shape = list(g.rng.choice(_factorisations(v.numel())))
    if g.rng.random() < 0.4:
        shape[g.rng.randrange(len(shape))] = -1
    s = ", ".join(map(str, shape))
    nd = v.ndim
    forms = [
        (f"{x}.view({s})", "view"),
        (f"{x}.view({_tuple(shape)})", "view"),
        (f"{x}.reshape({s})", "reshape"),
        (f"torch.reshape({x}, {_tuple(shape)})", "reshape"),
        (f"{x}.view(-1)", "view"),
        (f"{x}.flatten()", "flatten"),
        (f"torch.flatten({x}, {_dim(g, nd)})", "flatten"),
        (f"{x}.ravel()", "ravel"),
    ]
    if nd >= 2:
        forms.append((f"{x}.flatten(start_dim=1, end_dim=-1)", "flatten"))
    if g.rng.random() < 0.2:
        y = g.need(tuple(abs(d) if d != -1 else 1 for d in shape), kind_of(v))
        if y and g.ns[y].numel() == v.numel():
            forms += [(f"{x}.view_as({y})", "view_as"), (f"{x}.reshape_as({y})", "reshape_as")]
            expr, feat = forms[-g.rng.randint(1, 2)]
            return Plan(expr, [x, y], MOVE, [], feat)
    expr, feat = g.rng.choice(forms)
    return Plan(expr, [x], MOVE, [], feat)


def transpose(g: Gen) -> Plan | None:
    """transpose, swapaxes, t, T, mT, permute."""
    x = g.any_tensor("fib")
    if not x:
        return None
    v = g.ns[x]
    nd = v.ndim
    forms: list[tuple[str, str]] = [(f"{x}.T", "T")]
    if nd <= 2:
        forms += [(f"{x}.t()", "t"), (f"torch.t({x})", "t")]
    if nd >= 2:
        forms.append((f"{x}.mT", "mT"))
    d0, d1 = _dim(g, nd), _dim(g, nd)
    forms += [
        (f"{x}.transpose({d0}, {d1})", "transpose"),
        (f"torch.transpose({x}, {d0}, {d1})", "transpose"),
        (f"{x}.swapaxes({d0}, {d1})", "swapaxes"),
    ]
    perm = list(range(nd))
    g.rng.shuffle(perm)
    if nd:
        forms += [
            (f"{x}.permute({', '.join(map(str, perm))})", "permute"),
            (f"torch.permute({x}, {_tuple(perm)})", "permute"),
        ]
    expr, feat = g.rng.choice(forms)
    return Plan(expr, [x], MOVE, [], feat)


def squeeze(g: Gen) -> Plan | None:
    """squeeze, unsqueeze, None-indexing, expand, expand_as, repeat, flip."""
    x = g.any_tensor("fib")
    if not x:
        return None
    v = g.ns[x]
    nd = v.ndim
    d = _dim(g, nd)
    u = g.rng.randint(-nd - 1, nd)
    forms = [
        (f"{x}.squeeze()", "squeeze"),
        (f"{x}.squeeze({d})", "squeeze"),
        (f"torch.squeeze({x}, {d})", "squeeze"),
        (f"{x}.unsqueeze({u})", "unsqueeze"),
        (f"torch.unsqueeze({x}, {u})", "unsqueeze"),
        (f"{x}[None]", "unsqueeze"),
        (f"{x}[..., None]", "unsqueeze"),
        (f"torch.flip({x}, ({d},))", "flip"),
        (f"{x}.flip({d})", "flip"),
    ]
    if nd >= 2:
        forms.append((f"{x}.squeeze((0, {nd - 1}))", "squeeze"))
    target = [g.rng.choice((2, 3)) if s == 1 else s for s in v.shape]
    if g.rng.random() < 0.5:
        target = [2] + target
    spelled = [
        -1 if i >= len(target) - nd and g.rng.random() < 0.3 else t for i, t in enumerate(target)
    ]
    forms += [
        (f"{x}.expand({', '.join(map(str, spelled))})", "expand"),
        (f"{x}.expand({_tuple(spelled)})", "expand"),
        (f"{x}.repeat({', '.join(str(g.rng.randint(1, 2)) for _ in range(max(nd, 1)))})", "repeat"),
    ]
    expr, feat = g.rng.choice(forms)
    if feat == "expand" and g.rng.random() < 0.25:
        y = g.need(tuple(target), kind_of(v))
        if y:
            return Plan(f"{x}.expand_as({y})", [x, y], MOVE, [], "expand_as")
    if not target and "expand" in expr:
        expr = f"{x}.expand(())"
    return Plan(expr, [x], MOVE, [], feat)


def cat_stack(g: Gen) -> Plan | None:
    """cat / concat / concatenate and stack of two or three tensors."""
    x = g.any_tensor("fi")
    if not x:
        return None
    v = g.ns[x]
    shape = tuple(v.shape)
    stack = g.rng.random() < 0.35 or not shape
    nd = len(shape) + (1 if stack else 0)
    d = _dim(g, nd)
    parts = [x]
    for _ in range(g.rng.randint(1, 2)):
        s = list(shape)
        if not stack and s:
            s[d % len(s)] = g.rng.randint(0, 3)
        p = g.need(tuple(s), kind_of(v), v.dtype if g.rng.random() < 0.8 else None)
        if not p:
            return None
        parts.append(p)
    if g.rng.random() < 0.2:
        parts.append(x)
    seq = ", ".join(parts)
    lst = f"[{seq}]" if g.rng.random() < 0.6 else f"({seq})"
    if stack:
        expr, feat = g.rng.choice(
            ((f"torch.stack({lst})", "stack"), (f"torch.stack({lst}, dim={d})", "stack"))
        )
    else:
        expr, feat = g.rng.choice(
            (
                (f"torch.cat({lst}, dim={d})", "cat"),
                (f"torch.cat({lst}, {d})", "cat"),
                (f"torch.cat({lst})", "cat"),
                (f"torch.concat({lst}, dim={d})", "cat"),
                (f"torch.concatenate({lst}, axis={d})", "cat"),
            )
        )
    return Plan(expr, list(dict.fromkeys(parts)), MOVE, [], feat)


def strided(g: Gen) -> Plan | None:
    """diagonal (a view) and as_strided on a contiguous tensor."""
    x = g.any_tensor("fi", lambda t: t.ndim >= 1)
    if not x:
        return None
    v = g.ns[x]
    if v.ndim >= 2 and g.rng.random() < 0.6:
        off = g.rng.choice((0, 0, 1, -1))
        expr = g.rng.choice(
            (
                f"torch.diagonal({x})",
                f"{x}.diagonal({off})",
                f"{x}.diagonal(offset={off}, dim1=-1, dim2=0)",
                f"torch.diagonal({x}, {off}, -2, -1)",
            )
        )
        return Plan(expr, [x], MOVE, [], "diagonal")
    n = v.numel()
    if not n or not v.is_contiguous() or v.storage_offset():
        return None
    step = g.rng.choice((1, 1, 2))
    size = g.rng.randint(1, max(1, (n - 1) // step + 1))
    if g.rng.random() < 0.5 and size % 2 == 0:
        shape, stride = f"({size // 2}, 2)", f"({2 * step}, {step})"
    else:
        shape, stride = f"({size},)", f"({step},)"
    expr = g.rng.choice(
        (f"{x}.as_strided({shape}, {stride})", f"torch.as_strided({x}, {shape}, {stride})")
    )
    return Plan(expr, [x], MOVE, [], "as_strided")


def split(g: Gen) -> Plan | None:
    """split, chunk, unbind (several outputs), narrow, select."""
    x = g.any_tensor("fi", lambda t: t.ndim >= 1)
    if not x:
        return None
    v = g.ns[x]
    d = _dim(g, v.ndim)
    size = v.shape[d]
    n = g.rng.randint(1, 3)
    a = g.rng.randint(0, max(size - 1, 0))
    sizes = [a, size - a]
    forms = [
        (f"torch.split({x}, {n}, dim={d})", "split"),
        (f"{x}.split({n})", "split"),
        (f"{x}.split({sizes}, {d})", "split_sizes"),
        (f"torch.chunk({x}, {n}, {d})", "chunk"),
        (f"{x}.chunk({n})", "chunk"),
        (f"{x}.unbind({d})", "unbind"),
        (f"torch.unbind({x})", "unbind"),
        (f"{x}.narrow({d}, {a}, {g.rng.randint(0, size - a)})", "narrow"),
        (f"torch.narrow({x}, {d}, 0, {min(size, 1)})", "narrow"),
        (f"{x}.select({d}, {g.rng.randint(-size, max(size - 1, -size))})", "select"),
        (f"torch.select({x}, {d}, 0)", "select"),
    ]
    expr, feat = g.rng.choice(forms)
    return Plan(expr, [x], MOVE, [], feat)


def _basic_index(g: Gen, shape: tuple[int, ...]) -> str:
    """A basic index (ints, slices, None, ...) for `shape`."""
    parts = []
    for size in shape[: g.rng.randint(1, max(len(shape), 1))]:
        r = g.rng.random()
        if r < 0.35 and size:
            parts.append(str(g.rng.randint(-size, size - 1)))
        elif r < 0.55:
            parts.append(":")
        elif r < 0.7:
            parts.append(f"{g.rng.randint(0, size)}:")
        elif r < 0.8:
            parts.append("::2")
        elif r < 0.9:
            parts.append(f":{g.rng.randint(-1, size)}")
        else:
            parts.append(f"{g.rng.randint(0, size)}:{g.rng.randint(0, size + 1)}")
    if g.rng.random() < 0.1:
        parts.insert(g.rng.randint(0, len(parts)), "None")
    if g.rng.random() < 0.1 and len(parts) < len(shape):
        parts.insert(0, "...")
    if not parts:
        return g.rng.choice(("...", "None", "()"))
    return ", ".join(parts)


def index(g: Gen) -> Plan | None:
    """Basic indexing and slicing (views), integer-array and boolean-mask indexing (copies)."""
    x = g.any_tensor("fib")
    if not x:
        return None
    v = g.ns[x]
    shape = tuple(v.shape)
    r = g.rng.random()
    if r < 0.6 or not shape:
        return Plan(f"{x}[{_basic_index(g, shape)}]", [x], MOVE, [], "index_basic")
    size = shape[0]
    if r < 0.75:
        c = repr(g.rng.choice(DYADIC))
        if v.is_floating_point():
            return Plan(f"{x}[{x} > {c}]", [x], MOVE, [("pair", [x, c])], "index_mask")
        m = g.need(shape[: g.rng.randint(1, len(shape))], "b")
        return Plan(f"{x}[{m}]", [x, m], MOVE, [], "index_mask") if m else None
    if not size:
        return None
    idx = [g.rng.randint(-size, size - 1) for _ in range(g.rng.randint(1, 3))]
    forms = [f"{x}[{idx}]", f"{x}[torch.tensor({idx})]"]
    if len(shape) >= 2 and shape[1]:
        j = [g.rng.randint(0, shape[1] - 1) for _ in range(2)]
        forms += [f"{x}[:, {j}]", f"{x}[{idx[0]}, {j}]", f"{x}[{idx[:1] * 2}, {j}]"]
    return Plan(g.rng.choice(forms), [x], MOVE, [], "index_array")


def gather(g: Gen) -> Plan | None:
    """gather along a dim with a literal index tensor."""
    x = g.any_tensor("f", lambda t: t.ndim >= 1 and t.numel() > 0)
    if not x:
        return None
    v = g.ns[x]
    d = _dim(g, v.ndim)
    dd = d % v.ndim
    shape = [g.rng.randint(1, s) if s else 0 for s in v.shape]
    shape[dd] = g.rng.randint(1, 3)

    def nest(dims: list[int]) -> str:
        if len(dims) == 1:
            return str([g.rng.randrange(v.shape[dd]) for _ in range(dims[0])])
        return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"

    idx = f"torch.tensor({nest(shape)})"
    expr = g.rng.choice((f"torch.gather({x}, {d}, {idx})", f"{x}.gather({d}, {idx})"))
    return Plan(expr, [x], MOVE, [], "gather")


def _index_literal(g: Gen, shape: list[int], size: int, unique: bool = False) -> str:
    """A nested list of `shape` with values below `size` (each innermost row without
    repeats when `unique`: a scatter with repeated positions writes in no set order)."""
    if len(shape) == 1:
        if unique:
            return str(g.rng.sample(range(size), min(shape[0], size)))
        return str([g.rng.randrange(size) for _ in range(shape[0])])
    return (
        "[" + ", ".join(_index_literal(g, shape[1:], size, unique) for _ in range(shape[0])) + "]"
    )


def scatter_index(g: Gen) -> Plan | None:
    """scatter (src, value, reduce) / scatter_add, index_fill / index_add / index_copy /
    index_put (+ in place), index_select, with literal index tensors (sometimes out of
    range)."""
    rng = g.rng
    x = g.any_tensor("f", lambda t: t.ndim >= 1 and t.numel() > 0)
    if not x:
        return None
    v = g.ns[x]
    nd = v.ndim
    d = _dim(g, nd)
    dd = d % nd
    size = v.shape[dd]
    case = rng.choice(("scatter", "scatter", "scatter_add", "fill", "add", "copy", "put", "select"))
    inplace = rng.random() < 0.4
    target = f"({x} * 1)" if inplace else x
    sfx = "_" if inplace else ""
    if case in ("scatter", "scatter_add"):
        shape = [rng.randint(1, s) for s in v.shape]
        shape[dd] = rng.randint(1, size)
        if rng.random() < 0.05:
            shape[dd] += 1  # deliberately too many along dim for some plans
        unique = case == "scatter"
        idx = f"torch.tensor({_index_literal(g, shape, size, unique)})"
        if case == "scatter" and rng.random() < 0.4:
            val = repr(rng.choice(DYADIC))
            red = rng.choice(("", "", "", ", reduce='add'", ", reduce='multiply'"))
            forms = (
                f"{target}.scatter{sfx}({d}, {idx}, {val}{red})",
                f"torch.scatter({x}, {d}, {idx}, value={val})",
            )
            return Plan(rng.choice(forms), [x], MOVE if not red else IEEE, [], "scatter")
        src_shape = tuple(n + rng.choice((0, 0, 1)) for n in shape)
        src = g.need(src_shape, "f", v.dtype)
        if not src:
            return None
        fn = "scatter" if case == "scatter" else "scatter_add"
        forms = (
            f"{target}.{fn}{sfx}({d}, {idx}, {src})",
            f"torch.{fn}({x}, {d}, {idx}, src={src})",
            f"{target}.{fn}{sfx}(dim={d}, index={idx}, src={src})",
        )
        return Plan(rng.choice(forms), [x, src], MOVE if fn == "scatter" else ORDER, [], fn)
    n = rng.randint(1, 3)
    picks = rng.sample(range(size), min(n, size)) if case not in ("add", "select") else None
    vec = picks if picks is not None else [rng.randrange(size) for _ in range(n)]
    vec = [p - size if rng.random() < 0.2 else p for p in vec]
    idx = f"torch.tensor({vec})"
    if case == "select":
        forms = (
            f"{x}.index_select({d}, {idx})",
            f"torch.index_select({x}, {d}, {idx})",
            f"torch.index_select({x}, dim={d}, index={idx})",
        )
        return Plan(rng.choice(forms), [x], MOVE, [], "index_select")
    if case == "fill":
        val = repr(rng.choice(DYADIC))
        if rng.random() < 0.3:
            val = g.need((), "f", v.dtype) or val
        inputs = [x] + ([val] if val in g.ns else [])
        forms = (
            f"{target}.index_fill{sfx}({d}, {idx}, {val})",
            f"torch.index_fill({x}, {d}, {idx}, {val})",
        )
        return Plan(rng.choice(forms), inputs, MOVE, [], "index_fill")
    src_shape = list(v.shape)
    src_shape[dd] = len(vec)
    src = g.need(tuple(src_shape), "f", v.dtype)
    if not src:
        return None
    if case == "put":
        acc = rng.choice(("", ", accumulate=True", ", accumulate=False"))
        vals = g.need(tuple(v.shape[1:]), "f", v.dtype) if nd > 1 and rng.random() < 0.5 else src
        if not vals or dd != 0:
            vals = g.need((len(vec),) + tuple(v.shape[1:]), "f", v.dtype)
        if not vals:
            return None
        forms = (
            f"{target}.index_put{sfx}(({idx},), {vals}{acc})",
            f"torch.index_put({x}, ({idx},), {vals}{acc})",
            f"{target}.index_put{sfx}(indices=[{idx}], values={vals}{acc})",
        )
        return Plan(rng.choice(forms), [x, vals], ORDER if acc else MOVE, [], "index_put")
    if case == "add":
        alpha = rng.choice(("", "", ", alpha=2", ", alpha=-0.5"))
        forms = (
            f"{target}.index_add{sfx}({d}, {idx}, {src}{alpha})",
            f"torch.index_add({x}, {d}, {idx}, {src}{alpha})",
        )
        return Plan(rng.choice(forms), [x, src], ORDER, [], "index_add")
    forms = (
        f"{target}.index_copy{sfx}({d}, {idx}, {src})",
        f"torch.index_copy({x}, {d}, {idx}, source={src})",
    )
    return Plan(rng.choice(forms), [x, src], MOVE, [], "index_copy")


# ---------------------------------------------------------------- losses


def _prob_leaf(g: Gen, shape: tuple[int, ...], values: tuple[float, ...], rg: bool) -> str:
    name = g.name()
    lit = _nest_values(g, shape, values)
    dt = ", dtype=torch.float64" if g.f64_mode else ""
    rgt = ", requires_grad=True" if rg else ""
    g.emit(f"{name} = torch.tensor({lit}{dt}{rgt})")
    from .gen import Meta

    g.bind(name, Meta(True, g.f64_mode))
    return name


def _nest_values(g: Gen, shape: tuple[int, ...], values: tuple[float, ...]) -> str:
    if not shape:
        return repr(g.rng.choice(values))
    if len(shape) == 1:
        return "[" + ", ".join(repr(g.rng.choice(values)) for _ in range(shape[0])) + "]"
    return "[" + ", ".join(_nest_values(g, shape[1:], values) for _ in range(shape[0])) + "]"


def _reduction_kw(g: Gen) -> str:
    return g.rng.choice(("", "", ", reduction='sum'", ", reduction='none'", ", reduction='mean'"))


def loss(g: Gen) -> Plan | None:
    """mse_loss, l1_loss, binary_cross_entropy, cross_entropy, nll_loss (F and nn forms)."""
    rng = g.rng
    case = rng.choice(("mse", "l1", "bce", "ce", "ce", "nll", "smooth_l1", "huber"))
    red = _reduction_kw(g)
    if case in ("smooth_l1", "huber"):
        a = g.any_tensor("f")
        if not a:
            return None
        b = g.need(tuple(g.ns[a].shape), "f", g.ns[a].dtype)
        k = rng.choice(("", "0.5", "1.0", "2.0", "0.25"))
        key = "beta" if case == "smooth_l1" else "delta"
        kw = f", {key}={k}" if k else ""
        fn, cls = (
            ("smooth_l1_loss", "SmoothL1Loss")
            if case == "smooth_l1"
            else ("huber_loss", "HuberLoss")
        )
        args = ", ".join(x for x in (red.lstrip(", "), kw.lstrip(", ")) if x)
        expr = rng.choice((f"F.{fn}({a}, {b}{red}{kw})", f"torch.nn.{cls}({args})({a}, {b})"))
        # kinks where |a - b| is the threshold (and a == b for beta 0 is l1)
        return Plan(expr, [a, b], TRANSC, [("pair", [a, b])], fn)
    if case in ("mse", "l1"):
        a = g.any_tensor("f")
        if not a:
            return None
        b = g.need(tuple(g.ns[a].shape), "f", g.ns[a].dtype)
        fn = "mse_loss" if case == "mse" else "l1_loss"
        cls = "MSELoss" if case == "mse" else "L1Loss"
        red_arg = red.lstrip(", ")
        expr = rng.choice((f"F.{fn}({a}, {b}{red})", f"torch.nn.{cls}({red_arg})({a}, {b})"))
        kinks = [("pair", [a, b])] if case == "l1" else []
        return Plan(expr, [a, b], ORDER if case == "mse" else TRANSC, kinks, fn)
    if case == "bce":
        shape = g.shape()
        p = _prob_leaf(g, shape, (0.1, 0.25, 0.5, 0.75, 0.9), True)
        t = _prob_leaf(g, shape, (0.0, 1.0, 1.0, 0.5), False)
        p_expr = p if rng.random() < 0.7 else f"torch.sigmoid({p})"
        weight = ""
        inputs = [p, t]
        if rng.random() < 0.25:
            w = g.need(_broadcast_shape(g, shape), "f", g.ns[p].dtype)
            weight, inputs = f", weight={w}", inputs + [w]
        red_arg = red.lstrip(", ")
        expr = rng.choice(
            (
                f"F.binary_cross_entropy({p_expr}, {t}{weight}{red})",
                f"torch.nn.BCELoss({red_arg})({p_expr}, {t})",
            )
        )
        return Plan(expr, inputs, TRANSC, [], "binary_cross_entropy")
    n, c = rng.randint(1, 3), rng.randint(2, 4)
    batched = rng.random() < 0.8
    x = g.need((n, c) if batched else (c,), "f", torch.float64 if g.f64_mode else None)
    if not x:
        return None
    inputs = [x]
    if case == "ce" and rng.random() < 0.2:
        t = _prob_leaf(g, (n, c) if batched else (c,), (0.0, 0.25, 0.5, 1.0), False)
        inputs.append(t)
    else:
        ids = [rng.randrange(c) for _ in range(n)]
        t = f"torch.tensor({ids if batched else ids[0]})"
    extra = red
    if rng.random() < 0.2:
        w = g.need((c,), "f", g.ns[x].dtype)
        extra += f", weight={w}"
        inputs.append(w)
    if rng.random() < 0.1 and batched and t.startswith("torch"):
        extra += f", ignore_index={ids[0]}"
    if case == "ce":
        if rng.random() < 0.15:
            extra += ", label_smoothing=0.1"
        expr = rng.choice(
            (f"F.cross_entropy({x}, {t}{extra})", f"torch.nn.CrossEntropyLoss()({x}, {t})")
        )
        return Plan(expr, inputs, TRANSC, [], "cross_entropy")
    expr = rng.choice((f"F.nll_loss({x}, {t}{extra})", f"torch.nn.NLLLoss()({x}, {t})"))
    return Plan(expr, inputs, TRANSC, [], "nll_loss")


# ---------------------------------------------------------------- tutorial ops (issue 12)


def tutorial(g: Gen) -> Plan | None:
    """unflatten, broadcast_to, tril/triu (+ in place), hstack/vstack/row_stack/
    column_stack, cumprod, roll, atan2/arctan2 (+ in place)."""
    rng = g.rng
    case = rng.choice(("unflatten", "broadcast_to", "tri", "stack", "cumprod", "roll", "atan2"))
    if case == "atan2":
        a = g.any_tensor("fi")
        if not a:
            return None
        b = g.need(_broadcast_shape(g, tuple(g.ns[a].shape)), kind_of(g.ns[a]))
        if not b:
            return None
        forms = (
            f"torch.atan2({a}, {b})",
            f"torch.arctan2({a}, {b})",
            f"{a}.atan2({b})",
            f"{a}.arctan2(other={b})",
            f"({a} * 1).atan2_({b})",
        )
        kinks = [("zero", [a]), ("zero", [b])]
        return Plan(rng.choice(forms), [a, b], TRANSC, kinks, "atan2")
    if case == "stack":
        x = g.any_tensor("fi", lambda t: t.ndim <= 2)
        if not x:
            return None
        shape = tuple(g.ns[x].shape)
        p = g.need(shape, kind_of(g.ns[x]), g.ns[x].dtype if rng.random() < 0.8 else None)
        if not p:
            return None
        name = rng.choice(("hstack", "vstack", "row_stack", "column_stack"))
        seq = f"[{x}, {p}]" if rng.random() < 0.6 else f"({x}, {p}, {x})"
        return Plan(f"torch.{name}({seq})", [x, p], MOVE, [], name)
    x = g.any_tensor("fib" if case in ("unflatten", "broadcast_to", "roll", "tri") else "fi")
    if not x:
        return None
    v = g.ns[x]
    nd = v.ndim
    d = _dim(g, nd)
    if case == "unflatten":
        if not nd:
            return Plan(f"{x}.unflatten(0, (1,))", [x], MOVE, [], "unflatten")
        sizes = list(rng.choice(_factorisations(v.shape[d]) if v.shape[d] else [(0,), (1, 0)]))
        if rng.random() < 0.3 and v.shape[d]:
            sizes[rng.randrange(len(sizes))] = -1
        forms = (f"{x}.unflatten({d}, {_tuple(sizes)})", f"torch.unflatten({x}, {d}, {sizes})")
        return Plan(rng.choice(forms), [x], MOVE, [], "unflatten")
    if case == "broadcast_to":
        target = [rng.choice((2, 3)) if s == 1 else s for s in v.shape]
        if rng.random() < 0.5:
            target = [2, *target]
        forms = (
            f"torch.broadcast_to({x}, {_tuple(target)})",
            f"{x}.broadcast_to({_tuple(target)})",
        )
        return Plan(rng.choice(forms), [x], MOVE, [], "broadcast_to")
    if case == "tri":
        k = rng.choice((0, 0, 1, -1, 2))
        name = rng.choice(("tril", "triu"))
        forms = (
            f"torch.{name}({x})",
            f"torch.{name}({x}, {k})",
            f"{x}.{name}(diagonal={k})",
            f"({x} * 1).{name}_({k})",
        )
        return Plan(rng.choice(forms), [x], MOVE, [], name)
    if case == "cumprod":
        forms = (f"torch.cumprod({x}, {d})", f"{x}.cumprod(dim={d})", f"{x}.cumprod({d})")
        return Plan(rng.choice(forms), [x], ORDER, [], "cumprod")
    s1, s2 = rng.randint(-4, 4), rng.randint(-4, 4)
    forms = [
        f"torch.roll({x}, {s1})",
        f"{x}.roll({s1}, {d})",
        f"torch.roll({x}, shifts={s1}, dims={d})",
    ]
    if nd >= 2:
        forms.append(f"{x}.roll(({s1}, {s2}), (0, {nd - 1}))")
    return Plan(rng.choice(forms), [x], MOVE, [], "roll")


# ---------------------------------------------------------------- einsum, trace, moments, cdist

#: einsum equations by operand shapes (n, m, k stand for small sizes)
_EINSUM = (
    ("ij,jk->ik", ("nk", "km")),
    ("ij,jk", ("nk", "km")),
    ("bij,bjk->bik", ("2nk", "2km")),
    ("i,j->ij", ("n", "m")),
    ("i,i->", ("k", "k")),
    ("ii->", ("kk",)),
    ("ii", ("kk",)),
    ("ii->i", ("kk",)),
    ("ij->", ("nm",)),
    ("ij->j", ("nm",)),
    ("ij->ji", ("nm",)),
    ("ij,ij->ij", ("nm", "nm")),
    ("ij,j->i", ("nk", "k")),
    ("bn,anm,bm->ba", ("2k", "nkm", "2m")),
    ("...ij,...jk->...ik", ("2nk", "2km")),
    ("ij,k->i", ("nm", "k")),
    ("bqd,bkd->bqk", ("2nk", "2mk")),
)


def misc_ops(g: Gen) -> Plan | None:
    """einsum (common equations, 1 to 3 operands), trace, std_mean / var_mean, cdist."""
    rng = g.rng
    case = rng.choice(("einsum", "einsum", "trace", "moments", "cdist"))
    dtype = torch.float64 if g.f64_mode else rng.choice((torch.float32, torch.float32, None))
    sizes = {"n": rng.randint(1, 3), "m": rng.randint(1, 3), "k": rng.randint(0, 3), "2": 2}
    if case == "einsum":
        eq, shapes = rng.choice(_EINSUM)
        names: list[str] = []
        for sh in shapes:
            t = g.need(tuple(sizes[c] for c in sh), dtype=g.ns[names[0]].dtype if names else dtype)
            if not t:
                return None
            names.append(t)
        ops = ", ".join(names)
        expr = (
            f"torch.einsum('{eq}', [{ops}])"
            if rng.random() < 0.3
            else f"torch.einsum('{eq}', {ops})"
        )
        return Plan(expr, names, ORDER, [], "einsum")
    if case == "trace":
        x = g.any_tensor("fi", lambda t: t.ndim == 2)
        if not x:
            return None
        return Plan(rng.choice((f"{x}.trace()", f"torch.trace({x})")), [x], ORDER, [], "trace")
    if case == "moments":
        x = g.any_tensor("f")
        if not x:
            return None
        name = rng.choice(("std_mean", "var_mean"))
        d = _dim(g, g.ns[x].ndim)
        args = rng.choice(("", f", {d}", f", dim={d}, keepdim=True", f", {d}, correction=0"))
        return Plan(f"torch.{name}({x}{args})[{rng.randint(0, 1)}]", [x], TRANSC, [], name)
    a = g.need((sizes["n"], sizes["k"]), dtype=dtype)
    b = g.need((sizes["m"], sizes["k"]), dtype=g.ns[a].dtype) if a else ""
    if not (a and b):
        return None
    p = rng.choice(("", ", p=1.0", ", p=3.0", ", compute_mode='use_mm_for_euclid_dist'"))
    kinks = [("zero", [a]), ("zero", [b])]
    if "mm" in p:
        kinks.append(("rows", [a, b]))
    return Plan(f"torch.cdist({a}, {b}{p})", [a, b], TRANSC, kinks, "cdist")


# ---------------------------------------------------------------- normalisation


def normalisation(g: Gen) -> Plan | None:
    """F.layer_norm / nn.LayerNorm over the last dims, F.batch_norm / nn.BatchNorm1d in
    training (batch statistics, running ones updated) and eval mode, F.instance_norm /
    nn.InstanceNorm1d."""
    rng = g.rng
    x = g.any_tensor("f", lambda t: t.ndim >= 1 and t.numel() > 0)
    if not x:
        return None
    v = g.ns[x]
    shape = tuple(v.shape)
    dt = v.dtype
    if rng.random() < 0.5 or v.ndim < 2:
        k = 1 if v.ndim < 2 or rng.random() < 0.7 else 2
        ns = shape[-k:]
        inputs = [x]
        affine = ""
        if rng.random() < 0.6:
            w = g.need(ns, "f", dt)
            if not w:
                return None
            inputs.append(w)
            affine = f", {w}"
            if rng.random() < 0.6:
                b = g.need(ns, "f", dt)
                if not b:
                    return None
                inputs.append(b)
                affine += f", {b}"
        eps = rng.choice(("", ", eps=1e-3", ", eps=0.5"))
        forms = [f"F.layer_norm({x}, {_tuple(ns)}{affine}{eps})"]
        if len(inputs) == 1:
            forms.append(f"torch.nn.LayerNorm({list(ns)}, elementwise_affine=False{eps})({x})")
        if k == 1 and dt == torch.float32:
            forms.append(f"torch.nn.LayerNorm({ns[0]})({x})")
        return Plan(rng.choice(forms), inputs, TRANSC, [], "layer_norm")
    c = shape[1]
    if rng.random() < 0.2:  # instance norm
        # (group_norm is left out: under create_graph PyTorch's gradient graph runs
        # through the forward's node via its mean and rstd outputs, so a later backward
        # through the forward fails there; adcli's does not yet; see the conformance test)
        forms = [f"F.instance_norm({x})"]
        if v.ndim in (2, 3) and dt == torch.float32:
            forms.append(f"torch.nn.InstanceNorm1d({c})({x})")
        return Plan(rng.choice(forms), [x], TRANSC, [], "instance_norm")
    training = rng.random() < 0.7
    inputs = [x]
    args = ""
    if rng.random() < 0.6:
        w = g.need((c,), "f", dt)
        b = g.need((c,), "f", dt) if w else ""
        if not (w and b):
            return None
        inputs += [w, b]
        args = f", {w}, {b}"
    kind = "torch.float64" if dt == torch.float64 else "torch.float32"
    stats = f"torch.zeros({c}, dtype={kind}), torch.full(({c},), 1.5, dtype={kind})"
    if training and rng.random() < 0.4:
        stats = "None, None"
    mom = rng.choice(("", ", momentum=0.3"))
    forms = [f"F.batch_norm({x}, {stats}{args}, training={training}{mom})"]
    if v.ndim in (2, 3) and dt == torch.float32 and len(inputs) == 1:
        forms.append(f"torch.nn.BatchNorm1d({c})({x})")
        forms.append(f"torch.nn.BatchNorm1d({c}, affine=False, momentum=None)({x})")
    return Plan(rng.choice(forms), inputs, TRANSC, [], "batch_norm")


# ---------------------------------------------------------------- choosing

FAMILIES = (
    (unary, 22),
    (binary, 20),
    (reversed_scalar, 3),
    (where_mask, 4),
    (reduction, 16),
    (linalg, 8),
    (reshape, 5),
    (transpose, 4),
    (squeeze, 5),
    (cat_stack, 4),
    (split, 4),
    (strided, 2),
    (index, 7),
    (gather, 2),
    (scatter_index, 3),
    (loss, 4),
    (tutorial, 6),
    (misc_ops, 4),
    (conv_pool, 4),
    (normalisation, 3),
)


def random_plan(g: Gen, uniform: bool = False) -> Plan | None:
    """One candidate operation from a random family (all families alike if `uniform`)."""
    fns, weights = zip(*FAMILIES, strict=True)
    return g.rng.choices(fns, None if uniform else weights)[0](g)
