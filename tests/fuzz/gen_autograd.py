"""Effectful statements for the generator: backward, autograd.grad, hooks, retain_grad,
in-place ops, grad modes, detach, .grad assignment, optimizers, autograd.functional,
script functions, and deliberate errors.

Each `st_*` function appends one statement (or a small block) through `Gen.effect`,
which keeps it whatever torch does (wrapped in try/except when torch raised), then
adds records that show what changed: gradients, flags, grad_fn names.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import torch

from . import gen_ops
from .gen import DYADIC, IEEE, MOVE, TRANSC, Meta, Plan, in_contexts, kind_of, shadow_check, wrap

if TYPE_CHECKING:
    from .gen import Gen


def _kw(parts: list[str]) -> str:
    return ", ".join(p for p in parts if p)


def _grad_tensor(g: Gen, root: str) -> str:
    """A `gradient=` argument for a non-scalar root."""
    v = g.ns[root]
    r = g.rng.random()
    if r < 0.35:
        return f"torch.ones_like({root})"
    if r < 0.5:
        return f"torch.full_like({root}, {g.rng.choice((0.5, 2.0, -1.0))})"
    if r < 0.55:
        return "torch.ones(7)"  # deliberate: the wrong shape
    dt = ", dtype=torch.float64" if v.dtype == torch.float64 else ""
    return f"torch.tensor({g.literal(tuple(v.shape), 'f')}{dt})"


def _records_after_backward(g: Gen) -> None:
    holders = g.grad_holders()
    for n in g.rng.sample(holders, min(len(holders), g.rng.randint(1, 3))):
        g.record_grad(n)


def _graph_tensors(g: Gen, root: str) -> list[str]:
    """Variables that `root` was computed from (through its grad_fn graph)."""
    v = g.ns[root]
    if v.grad_fn is None:
        return [root] if v.requires_grad else []
    seen: set[int] = set()
    nodes = [v.grad_fn]
    leaves: set[int] = set()
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            leaves.add(id(var))
        nodes.extend(n for n, _ in node.next_functions)
    out = []
    for name, t in g.tensor_items():
        if not t.requires_grad:
            continue
        if id(t) in leaves or (t.grad_fn is not None and id(t.grad_fn) in seen):
            out.append(name)
    return out


def _root(g: Gen) -> str | None:
    roots = g.tensors(lambda v: v.requires_grad and v.is_floating_point())
    if not roots:
        g.leaf(requires_grad=True)
        g.op()
        roots = g.tensors(lambda v: v.requires_grad and v.is_floating_point())
    return g.pick(roots)


# ---------------------------------------------------------------- backward


def st_backward(g: Gen) -> None:
    """x.backward(...) and torch.autograd.backward(...) in their many spellings."""
    rng = g.rng
    r = _root(g)
    if r is None:
        return
    v = g.ns[r]
    kw: list[str] = []
    x = rng.random()
    if x < 0.35:
        kw.append("retain_graph=True")
    elif x < 0.4:
        kw.append("retain_graph=False")
    if rng.random() < 0.12:
        kw.append("create_graph=True")
    if rng.random() < 0.15:
        members = _graph_tensors(g, r) or g.grad_holders()
        if members:
            chosen = rng.sample(members, min(len(members), rng.randint(1, 2)))
            kw.append(
                f"inputs=[{', '.join(chosen)}]" if rng.random() < 0.7 else f"inputs={chosen[0]}"
            )
    scalar = v.numel() == 1
    form = rng.random()
    if scalar and form < 0.7:
        text = f"{r}.backward({_kw(kw)})"
    elif form < 0.3:
        text = f"{r}.sum().backward({_kw(kw)})"
    elif form < 0.4:
        text = f"{r}.mean().backward({_kw(kw)})"
    elif form < 0.75:
        grad = _grad_tensor(g, r)
        text = rng.choice(
            (
                f"{r}.backward({_kw([f'gradient={grad}'] + kw)})",
                f"{r}.backward({_kw([grad] + kw)})",
                f"torch.autograd.backward({_kw([r, grad] + kw)})",
                f"torch.autograd.backward({_kw([f'[{r}]', f'grad_tensors=[{grad}]'] + kw)})",
            )
        )
    elif form < 0.85:
        text = f"torch.autograd.backward({_kw([f'[{r}.sum()]'] + kw)})"
    else:
        text = f"{r}.backward({_kw(kw)})"  # non-scalar: an error unless numel is 1
    feature = "backward" + ("+create_graph" if "create_graph=True" in kw else "")
    if rng.random() < 0.06:  # anomaly mode changes some error sentences and adds checks
        text = f"with torch.autograd.detect_anomaly():\n    {text}"
        feature += "+detect_anomaly"
    g.effect(text, feature)
    _records_after_backward(g)


def st_grad(g: Gen) -> None:
    """torch.autograd.grad with grad_outputs, retain_graph, create_graph, allow_unused;
    with create_graph, often a second-order grad of the result right away."""
    rng = g.rng
    r = _root(g)
    if r is None:
        return
    v = g.ns[r]
    members = _graph_tensors(g, r)
    pool = members if members and rng.random() < 0.85 else g.tensors(lambda t: t.requires_grad)
    if not pool:
        return
    inputs = rng.sample(pool, min(len(pool), rng.randint(1, 2)))
    kw: list[str] = []
    if rng.random() < 0.35:
        kw.append("retain_graph=True")
    create = rng.random() < 0.35
    if create:
        kw.append("create_graph=True")
    if rng.random() < 0.2:
        kw.append("allow_unused=True")
    if v.numel() == 1 and rng.random() < 0.7:
        out = r
    elif rng.random() < 0.5:
        out = f"{r}.sum()"
    else:
        out = r
        kw.insert(0, f"grad_outputs={_grad_tensor(g, r)}")
    ins = f"[{', '.join(inputs)}]" if len(inputs) > 1 or rng.random() < 0.5 else inputs[0]
    call = f"torch.autograd.grad({_kw([out, ins] + kw)})"
    names = [g.name("g") for _ in inputs]
    if rng.random() < 0.7:
        lhs = ", ".join(names) + ("," if len(names) == 1 else "")
    else:
        lhs = names[0] = g.name("r")
        names = [lhs]
    err = g.effect(f"{lhs} = {call}", "autograd.grad" + ("+create_graph" if create else ""))
    if err is not None:
        return
    for n in names:
        val = g.ns.get(n)
        g.record_raw(n, g.grad_cls(val) if isinstance(val, torch.Tensor) else "")
        if isinstance(val, torch.Tensor):
            g.bind(n, Meta(False, g.all_f64 and val.dtype == torch.float64))
    if create and rng.random() < 0.6:
        _second_order(g, names)


def st_double(g: Gen) -> None:
    """Double backward through one random operation: the first derivative with
    create_graph=True, then the derivative of that (backward-of-backward nodes)."""
    rng = g.rng
    x = g.pick(g.tensors(lambda v: v.is_leaf and v.requires_grad and v.numel() > 0))
    if x is None:
        x = g.leaf(g.rng.choice(((3,), (2, 2), ())), requires_grad=True, record=False)
    if not x:
        return
    g.focus = x
    try:
        names = g.op(uniform=True)
    finally:
        g.focus = ""
    y = next((n for n in names if g.ns[n].requires_grad and g.ns[n].is_floating_point()), None)
    if y is None:
        return
    first = g.name("g")
    out = f"{y}.sum()" if g.ns[y].numel() != 1 or rng.random() < 0.3 else y
    err = g.effect(f"{first}, = torch.autograd.grad({out}, {x}, create_graph=True)", "double:first")
    if err is not None or not isinstance(g.ns.get(first), torch.Tensor):
        return
    g.bind(first, Meta(False, g.all_f64 and g.ns[first].dtype == torch.float64))
    g.record_raw(f"{first}, {first}.grad_fn", g.grad_cls(g.ns[first]))
    if not g.ns[first].requires_grad:
        return
    weight = f"torch.ones_like({first})" if rng.random() < 0.5 else f"{first}"
    if rng.random() < 0.5:
        second = g.name("g")
        err = g.effect(
            f"{second}, = torch.autograd.grad(({first} * {weight}).sum(), {x}, allow_unused=True)",
            "double:second",
        )
        if err is None:
            g.record_raw(second, g.grad_cls(g.ns[x]))
    else:
        g.effect(f"({first} * {weight}).sum().backward()", "double:backward")
        g.record_grad(x)


def _second_order(g: Gen, names: list[str]) -> None:
    first = next((n for n in names if isinstance(g.ns.get(n), torch.Tensor)), None)
    if first is None or not g.ns[first].requires_grad:
        return
    members = _graph_tensors(g, first)
    leaves = [m for m in members if g.ns[m].is_leaf]
    rng = g.rng
    out = rng.choice((f"{first}.sum()", f"({first} * {first}).sum()", f"{first}.pow(2).mean()"))
    if leaves and rng.random() < 0.6:
        h = g.name("g")
        err = g.effect(
            f"{h}, = torch.autograd.grad({out}, {rng.choice(leaves)}, allow_unused=True)",
            "autograd.grad:second-order",
        )
        if err is None:
            val = g.ns.get(h)
            g.record_raw(h, g.grad_cls(val) if isinstance(val, torch.Tensor) else "")
            if isinstance(val, torch.Tensor):
                g.bind(h, Meta(False, g.all_f64 and val.dtype == torch.float64))
    else:
        g.effect(f"{out}.backward()", "backward:second-order")
        _records_after_backward(g)


# ---------------------------------------------------------------- hooks


def st_hook(g: Gen) -> None:
    """Tensor hooks that print, return None, or change the gradient; node hooks;
    removing a hook through its handle."""
    rng = g.rng
    handles = [n for n in g.ns if re.fullmatch(r"h\d+", n)]
    if handles and rng.random() < 0.25:
        g.effect(f"{rng.choice(handles)}.remove()", "hook:remove")
        return
    # PyTorch 2.13 segfaults in register_hook on a view whose base changed in place
    # (while nothing read the view's grad_fn since): never generate that.
    t = g.pick(g.tensors(lambda v: v.requires_grad and not _stale_view(v))) or g.any_tensor(
        "f", lambda v: not _stale_view(v)
    )
    if not t:
        return
    v = g.ns[t]
    if v.grad_fn is not None and rng.random() < 0.2:
        tag = g.tag(g.grad_cls(v))
        text = rng.choice(
            (
                f"{t}.grad_fn.register_hook(lambda gi, go: print({tag!r}, gi, go))",
                f"{t}.grad_fn.register_prehook(lambda go: print({tag!r}, go))",
            )
        )
        g.effect(text, "hook:node")
        return
    tag = g.tag(g.grad_cls(v))
    fn = rng.choice(
        (
            "lambda g: g * 2",
            "lambda g: g + 1",
            "lambda g: None",
            "lambda g: -g",
            "lambda g: torch.zeros_like(g)",
            f"lambda g: print({tag!r}, g)",
            f"lambda g: print({tag!r}, g)",
        )
    )
    if rng.random() < 0.5:
        g.effect(f"{g.name('h')} = {t}.register_hook({fn})", "hook:tensor")
    else:
        g.effect(f"{t}.register_hook({fn})", "hook:tensor")


def _stale_view(v: torch.Tensor) -> bool:
    return v._base is not None and v._version > 0


def st_retain_grad(g: Gen) -> None:
    """retain_grad on a non-leaf (or a leaf, a no-op), then its retains_grad flag."""
    t = g.pick(g.tensors(lambda v: v.requires_grad and not v.is_leaf)) or g.any_tensor("f")
    if not t:
        return
    if g.effect(f"{t}.retain_grad()", "retain_grad") is None:
        g.record_raw(f"{t}.retains_grad, {t}.is_leaf", "")


# ---------------------------------------------------------------- in-place

# (feature, in-place form, out-of-place twin or None, how, kinks on x/b, operand kind)
INPLACE: list[tuple[str, str, str | None, str, list[tuple[str, str]], str]] = [
    ("iadd", "{x} += {b}", "{x} + {b}", IEEE, [], "t"),
    ("isub", "{x} -= {b}", "{x} - {b}", IEEE, [], "t"),
    ("imul", "{x} *= {b}", "{x} * {b}", IEEE, [], "t"),
    ("idiv", "{x} /= {b}", "{x} / {b}", IEEE, [("zero", "b")], "t"),
    ("ipow", "{x} **= 2", "{x} ** 2", IEEE, [], ""),
    ("add_", "{x}.add_({b})", "{x} + {b}", IEEE, [], "t"),
    ("add_", "{x}.add_({b}, alpha=2)", "{x}.add({b}, alpha=2)", TRANSC, [], "t"),
    ("sub_", "{x}.sub_({b})", "{x} - {b}", IEEE, [], "t"),
    ("mul_", "{x}.mul_({b})", "{x} * {b}", IEEE, [], "t"),
    ("div_", "{x}.div_({b})", "{x} / {b}", IEEE, [("zero", "b")], "t"),
    ("pow_", "{x}.pow_(2)", "{x} ** 2", IEEE, [], ""),
    (
        "clamp_",
        "{x}.clamp_({lo}, {hi})",
        "{x}.clamp({lo}, {hi})",
        IEEE,
        [("lo", "x"), ("hi", "x")],
        "",
    ),
    ("clamp_", "{x}.clamp_(min={lo})", "{x}.clamp(min={lo})", IEEE, [("lo", "x")], ""),
    ("neg_", "{x}.neg_()", "-{x}", IEEE, [], ""),
    ("exp_", "{x}.exp_()", "{x}.exp()", TRANSC, [], ""),
    ("relu_", "{x}.relu_()", "{x}.relu()", IEEE, [("zero", "x")], ""),
    ("sigmoid_", "{x}.sigmoid_()", "{x}.sigmoid()", TRANSC, [], ""),
    ("tanh_", "{x}.tanh_()", "{x}.tanh()", TRANSC, [], ""),
    ("abs_", "{x}.abs_()", "{x}.abs()", IEEE, [("zero", "x")], ""),
    ("sqrt_", "{x}.sqrt_()", "{x}.sqrt()", TRANSC, [("zero", "x")], ""),
    ("log_", "{x}.log_()", "{x}.log()", TRANSC, [("zero", "x")], ""),
    ("zero_", "{x}.zero_()", None, MOVE, [], ""),
    ("fill_", "{x}.fill_({s})", None, MOVE, [], ""),
    ("fill_", "{x}.fill_({z})", None, MOVE, [], "z"),
    ("copy_", "{x}.copy_({b})", None, MOVE, [], "t"),
    ("setitem", "{x}[{idx}] = {s}", None, MOVE, [], ""),
    ("setitem", "{x}[{idx}] = {v}", None, MOVE, [], "v"),
    ("setitem_index", "{x}[{aidx}] = {s}", None, MOVE, [], ""),
    ("setitem_mask", "{x}[{x} > 0] = {s}", None, MOVE, [("zero", "x")], ""),
    ("masked_fill_", "{x}.masked_fill_({x} > 0, {s})", None, MOVE, [("zero", "x")], ""),
    ("data", "{x}.data.mul_(2)", None, IEEE, [], ""),
]


def _target(g: Gen) -> str | None:
    """A tensor to change in place: views of graph tensors and leaves are the
    interesting ones."""
    rng = g.rng
    r = rng.random()
    if r < 0.4:
        views = g.tensors(lambda v: v._base is not None and v.is_floating_point())
        if views:
            return g.pick(views)
    if r < 0.6:
        leaves = g.tensors(lambda v: v.is_leaf and v.requires_grad)
        if leaves:
            return g.pick(leaves)
    return g.pick(g.tensors(lambda v: v.numel() <= 64)) or None


def st_inplace(g: Gen) -> None:
    """One in-place change: `+=`, `mul_`, index assignment, `copy_`, `zero_` ... on a
    leaf, a view, a non-leaf; under no_grad a quarter of the time."""
    rng = g.rng
    x = _target(g)
    if x is None:
        return
    v = g.ns[x]
    feature, form, twin, how, kinks, operand = rng.choice(INPLACE)
    inputs = [x]
    b = s = z = val = idx = ""
    if operand == "t":
        b, b_in = gen_ops._other(g, x, kind_of(v) if kind_of(v) != "b" else "f")
        inputs += b_in
        if not b:
            return
    s = gen_ops._scalar(g)
    if operand == "z":
        z = g.need((), "f")
        inputs.append(z)
    if feature == "setitem":
        if not v.ndim:
            idx = "..."
        else:
            idx = gen_ops._basic_index(g, tuple(v.shape))
        if operand == "v":
            try:
                with torch.no_grad():  # (a view made with grad would derive x's node)
                    shape = tuple(g.eval(f"{x}[{idx}]").shape)
            except Exception:
                shape = ()
            val = g.need(shape if rng.random() < 0.8 else (), "f")
            inputs.append(val)
    lo, hi = sorted(rng.sample(DYADIC, 2))
    aidx = "[0]"
    if v.ndim and v.shape[0]:
        n = v.shape[0]
        picks = [rng.randint(-n, n - 1) for _ in range(rng.randint(1, 2))]
        aidx = rng.choice((str(picks), f"torch.tensor({picks})"))
    fill = {"x": x, "b": b, "s": s, "z": z, "v": val, "idx": idx, "lo": lo, "hi": hi}
    fill["aidx"] = aidx
    body = form.format(**fill)
    if not _inplace_safe(g, x, twin, fill, kinks, inputs, how):
        return
    exact = how in (MOVE, IEEE) and all(g.meta[n].exact for n in inputs if n in g.meta)
    # a float64 result of an inexact float32 operand (softplus's last bit) is not f64
    f64 = all(g.meta[n].f64 or g.meta[n].exact for n in inputs if n in g.meta)
    if rng.random() < 0.25:
        body = f"with torch.no_grad():\n    {body}"
        feature += "+no_grad"
    before = g.snapshot()
    g.features["inplace:" + feature] += 1
    err = g.run(body)
    if err is not None:
        g.stmts.append(wrap(body, g.tag("!")))
        g.features["error:" + type(err).__name__] += 1
    else:
        g.stmts.append(body)
    g.after_effect(before, exact, f64)
    if err is None and x in g.ns:
        if rng.random() < 0.7:
            g.record_value(x)
        base = g.ns[x]._base
        for name, t in g.tensor_items():
            if base is not None and t is base and rng.random() < 0.6:
                g.record_raw(f"{name}.grad_fn, {name}.requires_grad", "")


def _inplace_safe(
    g: Gen,
    x: str,
    twin: str | None,
    fill: dict[str, Any],
    kinks: list[tuple[str, str]],
    inputs: list[str],
    how: str,
) -> bool:
    """Kinks and conditioning of the change, judged on its out-of-place twin; no
    operand that overlaps x's memory in a layout PyTorch cannot check (its result then
    depends on its loop order and vector width: see README, deliberate divergences)."""
    if _too_hard_overlap(g, x, inputs):
        return False
    for kind, ref in kinks:
        target = fill[ref] if ref in fill else ref
        if kind in ("lo", "hi"):
            if not g.kink_ok(("at", [x], float(fill[kind]))):
                return False
            continue
        if target and not g.kink_ok((kind, [target])):
            return False
    if twin is None:
        return True
    expr = twin.format(**fill)
    try:
        # without grad: with it, an op on a view derives the view's node, which changes
        # what PyTorch's in-place check says next (a view's node is read only when used)
        with torch.no_grad():
            out = g.eval(expr)
    except Exception:
        return True  # the in-place op will raise too: kept as an error
    if not isinstance(out, torch.Tensor):
        return True
    plan = Plan(expr, inputs, how, [], "inplace")
    floats = [
        n for n in inputs if isinstance(g.ns.get(n), torch.Tensor) and g.ns[n].is_floating_point()
    ]
    if not g._acceptable(plan, [out]):
        return False
    return shadow_check(g, plan, [out], floats) is not None or all(
        g.meta[n].exact for n in floats if n in g.meta
    )


def _too_hard_overlap(g: Gen, x: str, inputs: list[str]) -> bool:
    """Whether an operand shares memory with x without being x's very layout while one
    of the two is not contiguous (PyTorch's get_overlap_status: TooHard, not checked)."""
    v = g.ns.get(x)
    if not isinstance(v, torch.Tensor):
        return False
    for n in inputs:
        o = g.ns.get(n)
        if n == x or not isinstance(o, torch.Tensor) or not o.numel() or not v.numel():
            continue
        if not torch._C._overlaps(v, o):
            continue
        same = o.data_ptr() == v.data_ptr() and o.shape == v.shape and o.stride() == v.stride()
        if not same and not (o.is_contiguous() and v.is_contiguous()):
            return True
    return False


# ---------------------------------------------------------------- grad modes, detach


def st_no_grad(g: Gen) -> None:
    """An operation under no_grad / set_grad_enabled(False), or enable_grad inside no_grad."""
    ctx = g.rng.choice(
        (
            ("torch.no_grad()",),
            ("torch.no_grad()",),
            ("torch.set_grad_enabled(False)",),
            ("torch.no_grad()", "torch.enable_grad()"),
            ("torch.enable_grad()",),
        )
    )
    names = g.op(ctx)
    g.features["grad_mode:" + "+".join(c.split("(")[0] for c in ctx)] += 1
    if g.rng.random() < 0.3:
        g.stmts.append(in_contexts(f"print({g.tag()!r}, torch.is_grad_enabled())", ctx))
    for n in names[:1]:
        g.record_raw(f"{n}.requires_grad, {n}.is_leaf, {n}.grad_fn", "")


def st_detach(g: Gen) -> None:
    """detach_, requires_grad_, the requires_grad setter, `.data`."""
    rng = g.rng
    t = g.pick(g.tensors()) or None
    if t is None:
        return
    r = rng.random()
    if r < 0.3:
        body, feat = f"{t}.detach_()", "detach_"
    elif r < 0.55:
        body, feat = f"{t}.requires_grad_()", "requires_grad_"
    elif r < 0.65:
        body, feat = f"{t}.requires_grad_(False)", "requires_grad_"
    elif r < 0.8:
        body, feat = f"{t}.requires_grad = {rng.choice(('True', 'False'))}", "requires_grad="
    else:
        n = g.name()
        err = g.effect(f"{n} = {t}.data", "data")
        if err is None:
            g.bind(n, Meta(g.meta[t].exact, g.meta[t].f64))
            g.record_raw(f"{n}.requires_grad, {n}.is_leaf", "")
        return
    if g.effect(body, feat) is None:
        g.record_raw(f"{t}.requires_grad, {t}.is_leaf, {t}.grad_fn", "")


def st_grad_attr(g: Gen) -> None:
    """Reading, binding, zeroing and assigning `.grad`."""
    rng = g.rng
    holders = g.grad_holders()
    t = g.pick(holders) if holders else g.pick(g.tensors())
    if t is None:
        return
    v = g.ns[t]
    r = rng.random()
    if r < 0.3 and v.grad is not None:
        n = g.name("g")
        if g.effect(f"{n} = {t}.grad", "grad:bind") is None:
            g.bind(n, Meta(False, g.all_f64 and g.ns[n].dtype == torch.float64))
        return
    if r < 0.45:
        g.effect(f"{t}.grad = None", "grad:none")
    elif r < 0.6:
        g.effect(f"{t}.grad.zero_()", "grad:zero_")
    elif r < 0.75:
        g.effect(f"{t}.grad = torch.ones_like({t})", "grad:assign")
    elif r < 0.85:
        bad = rng.choice(("torch.zeros(7)", f"torch.zeros_like({t}, dtype=torch.float64)"))
        g.effect(f"{t}.grad = {bad}", "grad:assign-bad")
    else:
        g.record_raw(f"{t}.grad", g.grad_cls(v))
        return
    g.record_grad(t)


# ---------------------------------------------------------------- optimizers

LOSSES = (
    "(({p} - 1.5) ** 2).sum()",
    "({p} * {p}).mean()",
    "{p}.sin().sum()",
    "({p}.exp() - {p}).sum()",
    "({p} * {q}).sum() + ({q} ** 2).sum()",
    "({p}.tanh() * 2).sum() + {q}.sum()",
)


def st_optim(g: Gen) -> None:
    """A few SGD or Adam steps on one or two leaves, then the parameters."""
    rng = g.rng
    leaves = g.tensors(
        lambda v: v.is_leaf and v.requires_grad and v.numel() > 0 and v.is_floating_point()
    )
    if not leaves:
        g.leaf(rng.choice(((2,), (3,), ())), requires_grad=True)
        leaves = g.tensors(lambda v: v.is_leaf and v.requires_grad and v.numel() > 0)
    if not leaves:
        return
    params = rng.sample(leaves, min(len(leaves), rng.randint(1, 2)))
    if rng.random() < 0.05:
        params = [g.pick(g.tensors(lambda v: not v.is_leaf)) or params[0]]  # deliberate
    p, q = params[0], params[-1]
    if g.ns[p].shape != g.ns[q].shape:
        q = p
    opt, loss = g.name("o"), g.name("l")
    if rng.random() < 0.5:
        kw = [f"lr={rng.choice((0.1, 0.5, 0.01))}"]
        if rng.random() < 0.5:
            kw.append("momentum=0.9")
            if rng.random() < 0.3:
                kw.append("nesterov=True")
            elif rng.random() < 0.3:
                kw.append("dampening=0.5")
        if rng.random() < 0.3:
            kw.append("weight_decay=0.1")
        if rng.random() < 0.1:
            kw.append("maximize=True")
        make = f"torch.optim.SGD([{', '.join(params)}], {', '.join(kw)})"
        feat = "optim:SGD"
    else:
        kw = [f"lr={rng.choice((0.1, 0.01))}"]
        if rng.random() < 0.3:
            kw.append("betas=(0.8, 0.99)")
        if rng.random() < 0.3:
            kw.append("weight_decay=0.1")
        if rng.random() < 0.2:
            kw.append("amsgrad=True")
        make = f"torch.optim.Adam([{', '.join(params)}], {', '.join(kw)})"
        feat = "optim:Adam"
    expr = rng.choice(LOSSES).format(p=p, q=q)
    zero = rng.choice((f"{opt}.zero_grad()", f"{opt}.zero_grad(set_to_none=False)"))
    first = rng.random() < 0.7
    lines = [f"{opt} = {make}", f"for _ in range({rng.randint(1, 3)}):"]
    lines += [f"    {zero}"] if first else []
    lines += [f"    {loss} = {expr}", f"    {loss}.backward()", f"    {opt}.step()"]
    lines += [] if first else [f"    {zero}"]
    lines.append(f"print({g.tag(g.grad_cls(g.ns[p]))!r}, {', '.join(params)}, {loss})")
    g.effect("\n".join(lines), feat)
    if any(g.ns[n].dtype != torch.float64 for n in params):
        # the loss mixes the parameters, so float32 rounding reaches a float64 one too
        for n in params:
            if n in g.meta:
                g.meta[n].f64 = False
    for name in params:
        g.record_grad(name)


# ---------------------------------------------------------------- functional API

FUNCS = (
    "lambda a: (a * a).sum()",
    "lambda a: (a ** 3).sum()",
    "lambda a: a.sin().sum() * 2",
    "lambda a: (a.exp() * a).sum()",
    "lambda a: a.tanh() * a",
    "lambda a: a * 2 + 1",
)


def st_functional(g: Gen) -> None:
    """torch.autograd.functional.jacobian / hessian / vjp / hvp on a lambda, or
    torch.autograd.gradcheck on a float64 leaf."""
    rng = g.rng
    x = g.any_tensor("f", lambda v: 0 < v.numel() <= 6)
    if not x:
        return
    fn = rng.choice(FUNCS)
    scalar_fn = fn.endswith(".sum()") or fn.endswith("* 2")
    which = rng.choice(("jacobian", "hessian", "vjp", "hvp", "gradcheck"))
    if which == "gradcheck":
        if g.ns[x].dtype != torch.float64 or not g.ns[x].requires_grad:
            which = "jacobian"
        else:
            smooth = rng.choice(("lambda a: (a * a).sum()", "lambda a: a.sin() * 2"))
            check = f"torch.autograd.gradcheck({smooth}, ({x},))"
            g.effect(f"print({g.tag()!r}, {check})", "gradcheck")
            return
    if which in ("hessian", "hvp") and not scalar_fn:
        which = "jacobian"
    cg = ", create_graph=True" if rng.random() < 0.2 else ""
    if which == "jacobian":
        call = f"torch.autograd.functional.jacobian({fn}, {x}{cg})"
    elif which == "hessian":
        call = f"torch.autograd.functional.hessian({fn}, {x}{cg})"
    elif which == "vjp":
        v = "torch.ones(())" if scalar_fn else f"torch.ones_like({x})"
        call = f"torch.autograd.functional.vjp({fn}, {x}, {v})"
    else:
        call = f"torch.autograd.functional.hvp({fn}, {x}, torch.ones_like({x}))"
    n = g.name("r")
    if g.effect(f"{n} = {call}", "functional:" + which) is None:
        g.record_raw(n, "d" if g.all_f64 and g.ns[x].dtype == torch.float64 else "")


# ---------------------------------------------------------------- script functions


def st_function(g: Gen) -> None:
    """A `def` wrapping a random operation (plain or @torch.no_grad()), then a call."""
    for _ in range(4):
        plan = gen_ops.random_plan(g)
        if plan is None or not plan.inputs or len(set(plan.inputs)) > 3:
            continue
        params = list(dict.fromkeys(plan.inputs))
        letters = ["a", "b", "c"][: len(params)]
        body = plan.expr
        for name, letter in zip(params, letters, strict=True):
            body = re.sub(rf"\b{name}\b", letter, body)
        fname = g.name("f")
        deco = "@torch.no_grad()\n" if g.rng.random() < 0.2 else ""
        g.emit(f"{deco}def {fname}({', '.join(letters)}):\n    return {body}")
        g.features["def" + ("+no_grad" if deco else "")] += 1
        call = Plan(
            f"{fname}({', '.join(params)})",
            params,
            plan.how,
            plan.kinks,
            plan.feature,
            reject=plan.reject,
        )
        call.may_fail = False
        names = g.try_plan(call)
        if names:
            g.record_value(names[0])
            return


# ---------------------------------------------------------------- deliberate errors


def st_error(g: Gen) -> None:
    """A statement PyTorch refuses, with its sentence: second backward, in-place on a
    leaf, a saved tensor modified, grads of integers, shape mismatches, ..."""
    rng = g.rng
    case = rng.choice(
        (
            "second_backward",
            "version",
            "version",
            "leaf_inplace",
            "int_grad",
            "nonscalar",
            "no_grad_root",
            "item",
            "view",
            "retain_no_grad",
            "hook_no_grad",
            "grad_unused",
        )
    )
    x = g.pick(g.tensors(lambda v: v.is_floating_point() and v.requires_grad and v.numel() > 0))
    c = g.pick(g.tensors(lambda v: not v.requires_grad))
    g.features["deliberate:" + case] += 1
    if case == "second_backward" and x:
        y = g.name()
        g.emit(f"{y} = ({x} * {x}).sum()")
        g.bind(y, Meta(False, False))
        g.effect(f"{y}.backward()", "backward")
        g.effect(f"{y}.backward()", "backward:second")
    elif case == "version" and x:
        a, b = g.name(), g.name()
        op = rng.choice(("{a}.exp()", "{a} * {a}", "{a}.sigmoid()", "{a}.tanh()", "{a}.pow(2)"))
        g.emit(f"{a} = {x} * 1")
        g.emit(f"{b} = {op.format(a=a)}")
        g.bind(a, Meta(g.meta[x].exact, g.meta[x].f64))
        g.bind(b, Meta(False, False))
        target = rng.choice((a, b))
        g.effect(f"{target}.{rng.choice(('add_(1)', 'mul_(2)', 'zero_()'))}", "inplace:saved")
        g.effect(f"{b}.sum().backward()", "backward:version")
    elif case == "leaf_inplace" and x:
        g.effect(rng.choice((f"{x}.add_(1)", f"{x}[0] = 1.0", f"{x} *= 2")), "inplace:leaf")
    elif case == "int_grad":
        g.effect(
            rng.choice(
                (
                    "torch.tensor([1, 2], requires_grad=True)",
                    "torch.arange(3).requires_grad_()",
                    "torch.tensor([True]).requires_grad_()",
                )
            ),
            "int_requires_grad",
        )
    elif case == "nonscalar" and x:
        g.effect(f"({x} * 2).backward()", "backward:nonscalar")
    elif case == "no_grad_root" and c:
        g.effect(f"{c}.sum().backward()", "backward:no-grad-root")
    elif case == "item":
        t = g.pick(g.tensors(lambda v: v.numel() != 1))
        if t:
            g.effect(f"{t}.item()", "item")
    elif case == "view":
        t = g.pick(g.tensors(lambda v: v.ndim >= 2))
        if t:
            g.effect(rng.choice((f"{t}.t().view(-1)", f"{t}.view(5, 7)")), "view:error")
    elif case == "retain_no_grad" and c:
        g.effect(f"{c}.retain_grad()", "retain_grad:error")
    elif case == "hook_no_grad" and c and not _stale_view(g.ns[c]):
        g.effect(f"{c}.register_hook(lambda g: g)", "hook:error")
    elif case == "grad_unused" and x:
        other = g.leaf((2,), requires_grad=True, record=False)
        if other:
            g.effect(f"torch.autograd.grad({x}.sum(), [{x}, {other}])", "autograd.grad:unused")
