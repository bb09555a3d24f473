"""Jacobians for every basis vector at once: torch.func's jacrev and jacfwd, batched.

PyTorch computes `jacrev(f)(x)` as `vmap(vjp_fn)(basis)` and `jacfwd(f)(x)` as
`vmap(jvp)(basis)`: `f` runs once, and the gradient (or tangent) formulas run once
on a stack of cotangents (or tangents) with the basis along a new leading dim. Here
the same: a batched value is a plain Tensor whose dim 0 runs over the basis vectors,
beside primals that have no such dim.

- `vjp` walks the graph `f` recorded, as the engine does, with batched gradients: each
  node's formula is one of the rules below (`VJP_RULES`), or its own backward when
  that is elementwise (`VJP_ELEMENTWISE`: broadcasting carries the leading dim along);
- a forward-AD level opened with a batch size (`forward_ad.open_level(batch=n)`) has
  batched tangents: `forward_ad` asks `jvp` here for each op's tangent.

A node or op without a batched rule raises `Unbatchable` before anything is computed
with it: the caller then runs the transform one basis vector at a time (func.py).
The rules are Tensor operations, so batched gradients are differentiable and carry
tangents: the transforms nest (`hessian` is jacfwd over jacrev).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import engine, forward_ad, grad_mode, node, ops
from .node import AccumulateGrad, Node
from .tensor import Tensor


class Unbatchable(Exception):
    """An op or graph node without a batched rule (or with hooks that must see each
    basis vector): compute one basis vector at a time instead."""


# ---------------------------------------------------------------- shapes
def _align(t: Tensor, ndim: int) -> Tensor:
    """Batched t ([n, *s]) with size-1 dims after the batch dim, to `ndim` logical dims
    (so it broadcasts against unbatched operands of that rank as its rows would)."""
    shape = t.data_.shape
    extra = ndim - (len(shape) - 1)
    if extra <= 0:
        return t
    return ops.reshape(t, shape[:1] + (1,) * extra + shape[1:])


def _fit(g: Tensor, n: int, shape: tuple[int, ...]) -> Tensor:
    """Batched g reduced over broadcast dims (or broadcast) to (n, *shape), as the
    engine fits a gradient to its input's shape, one row at a time."""
    shape = tuple(shape)
    s = g.data_.shape
    if s[:1] != (n,):
        raise Unbatchable("a batched value lost its batch dim")
    s = s[1:]
    if s == shape:
        return g
    lead = len(s) - len(shape)
    if lead < 0 or any(a != b and b != 1 for a, b in zip(s[lead:], shape, strict=True)):
        try:
            full = np.broadcast_shapes(s, shape)
        except ValueError:
            raise Unbatchable("shapes do not broadcast") from None
        if full != shape:
            raise Unbatchable("shapes do not broadcast")
        return ops.expand(_align(g, len(shape)), (n,) + shape)
    dims = tuple(range(1, 1 + lead)) + tuple(
        1 + lead + i for i, d in enumerate(shape) if d == 1 and s[lead + i] != 1
    )
    if dims:
        g = ops.sum(g, dim=dims, keepdim=True)
    if lead:
        g = ops.reshape(g, (n,) + shape)
    return g


def _left_mm(a: Tensor, g: Tensor) -> Tensor:
    """a @ g[i] for each row i of batched g ([n, k, p]): (g[i]^T @ a^T)^T, one product."""
    return ops.transpose(ops.matmul(ops.transpose(g, 1, 2), ops.t(a)), 1, 2)


def _times(t: Tensor | None, factor: Any) -> Tensor | None:
    """t * factor (t itself for a factor of 1, as PyTorch's maybe_multiply)."""
    return t if t is None or factor == 1 else ops.mul(t, factor)


def _plus(*terms: Tensor | None) -> Tensor | None:
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


# ---------------------------------------------------------------- backward rules
# rule(node, g, n) -> one batched gradient (or None) per input
VjpRule = Callable[[Any, Tensor, int], Sequence[Tensor | None]]

#: nodes whose own backward is elementwise: a leading batch dim broadcasts through
VJP_ELEMENTWISE = frozenset(
    (
        "AddBackward0 SubBackward0 MulBackward0 MulBackward1 DivBackward0 DivBackward1 "
        "NegBackward0 RsubBackward1 AddBackward1 SinBackward0 CosBackward0 TanhBackward0 "
        "TanhBackwardBackward0 ExpBackward0 LogBackward0 SqrtBackward0 SigmoidBackward0 "
        "SigmoidBackwardBackward0 ReluBackward0 CloneBackward0 AliasBackward0 "
        "AsinBackward0 AcosBackward0 AtanBackward0 RsqrtBackward0"
    ).split()
)


def _vjp_reshape(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    return (ops.reshape(g, (n,) + ctx.in_meta[0][0]),)


def _vjp_sum(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    shape = ctx.shape
    return (ops.expand(ops.reshape(g, (n,) + (1,) * len(shape)), (n,) + shape),)


def _vjp_sum_dim(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    if not ctx.keepdim:
        for d in sorted(ctx.dims):
            g = ops.unsqueeze(g, d + 1)
    return (ops.expand(g, (n,) + ctx.shape),)


def _vjp_expand(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    return (_fit(g, n, ctx.shape),)


def _vjp_t(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    return (ops.transpose(g, 1, 2) if g.data_.ndim == 3 else g,)


def _vjp_transpose(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    nd = g.data_.ndim - 1
    if nd == 0:
        return (g,)
    return (ops.transpose(g, ctx.d0 % nd + 1, ctx.d1 % nd + 1),)


def _vjp_permute(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    inverse = [int(i) for i in np.argsort(ctx.dims)]
    return (ops.permute(g, [0] + [i + 1 for i in inverse]),)


def _vjp_mm(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    b, a = ctx.saved_tensors
    ga = ops.matmul(g, ops.t(b)) if b is not None else None
    gb = _left_mm(ops.t(a), g) if a is not None else None
    return ga, gb


def _vjp_addmm(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    w, x = ctx.saved_tensors
    gx = ops.matmul(g, ops.t(w)) if w is not None else None
    gw = _left_mm(ops.t(x), g) if x is not None else None
    return _times(g, ctx.beta), _times(gx, ctx.alpha), _times(gw, ctx.alpha)


def _vjp_mv(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    v, m = ctx.saved_tensors
    gm = ops.mul(ops.unsqueeze(g, 2), v) if v is not None else None
    gv = ops.matmul(g, m) if m is not None else None
    return gm, gv


def _vjp_dot(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    b, a = ctx.saved_tensors
    col = ops.unsqueeze(g, 1)
    return (ops.mul(col, b) if b is not None else None), (
        ops.mul(col, a) if a is not None else None
    )


def _vjp_pow(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    if ctx.exponent == 0:
        raise Unbatchable("PowBackward0 with exponent 0")
    return ctx.backward(ctx, g)


def _vjp_select(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    embed = F().SelectBackward if ctx.grad_fn_name == "SelectBackward0" else F().SliceBackward
    return (embed.apply(g, index=(slice(None), *ctx.index), shape=(n, *ctx.shape)),)


def _vjp_embed(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    return (ops._view_of(g, ctx.view.apply(g, index=(slice(None), *ctx.index))),)


def _vjp_cat(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    out, start = [], 0
    d = ctx.dim % (g.data_.ndim - 1) + 1
    for size in ctx.sizes:
        if size is None:
            raise Unbatchable("cat of a legacy empty tensor")
        out.append(ops.narrow(g, d, start, size))
        start += size
    return tuple(out)


def _vjp_stack(ctx: Any, g: Tensor, n: int) -> Sequence[Tensor | None]:
    d = ctx.dim % (g.data_.ndim - 1) + 1
    return tuple(ops.select(g, d, i) for i in range(g.data_.shape[d]))


def F() -> Any:  # noqa: N802 (the op table, as ops.py names it)
    """functions.py, the op table (loaded before anything runs a rule)."""
    return ops.F


VJP_RULES: dict[str, VjpRule] = {
    "SelectBackward0": _vjp_select,
    "SliceBackward0": _vjp_select,
    "SelectBackwardBackward0": _vjp_embed,
    "SliceBackwardBackward0": _vjp_embed,
    "CatBackward0": _vjp_cat,
    "StackBackward0": _vjp_stack,
    "ViewBackward0": _vjp_reshape,
    "UnsafeViewBackward0": _vjp_reshape,
    "ReshapeAliasBackward0": _vjp_reshape,
    "SqueezeBackward0": _vjp_reshape,
    "SqueezeBackward1": _vjp_reshape,
    "SqueezeBackward2": _vjp_reshape,
    "UnsqueezeBackward0": _vjp_reshape,
    "SumBackward0": _vjp_sum,
    "SumBackward1": _vjp_sum_dim,
    "ExpandBackward0": _vjp_expand,
    "TBackward0": _vjp_t,
    "TransposeBackward0": _vjp_transpose,
    "PermuteBackward0": _vjp_permute,
    "MmBackward0": _vjp_mm,
    "AddmmBackward0": _vjp_addmm,
    "MvBackward0": _vjp_mv,
    "DotBackward0": _vjp_dot,
    "PowBackward0": _vjp_pow,
}


def _check_node(n: Node) -> None:
    """Refuse a node the batched walk cannot run as the engine would, row by row."""
    if n.pre_hooks or n.retained:
        raise Unbatchable("hooks see one gradient at a time")
    if type(n) is AccumulateGrad:
        return
    name = getattr(n, "grad_fn_name", "")
    if n.multi_output or (name not in VJP_RULES and name not in VJP_ELEMENTWISE):
        raise Unbatchable(name)
    if not n.saved and type(n.saved) is not tuple:  # freed: let the engine say so
        raise Unbatchable("freed graph")


def vjp(
    outputs: Sequence[Tensor], inputs: Sequence[Tensor], cotangents: Sequence[Tensor], n: int
) -> list[Tensor]:
    """The gradients of `inputs` for each of the `n` rows of the batched `cotangents`
    (one per output, [n, *output.shape]): [n, *input.shape] each, zero where unused.
    Builds the gradients' own graph (as `autograd.grad(create_graph=True)`)."""
    if engine.anomaly_check is not None or node.SAVED_HOOKS:
        raise Unbatchable("anomaly mode and saved-tensor hooks see each pass")
    roots = [(engine._edge_of(o), c) for o, c in zip(outputs, cotangents, strict=True)]
    roots = [(e, c) for (e, c), o in zip(roots, outputs, strict=True) if o.requires_grad]
    targets = [engine._edge_of(x) for x in inputs]
    target_nodes = {t[0] for t in targets}
    # every node from the roots, and which of them lead to an input
    children: dict[Node, list[Node]] = {}
    stack = [e[0] for e, _ in roots]
    while stack:
        nd = stack.pop()
        if nd in children:
            continue
        kids = [nxt for nxt, _ in nd.next_functions if nxt is not None]
        children[nd] = kids
        stack.extend(k for k in kids if k not in children)
    leads: dict[Node, bool] = {}
    for start in children:  # iterative post-order: a node leads to an input if a child does
        if start in leads:
            continue
        work = [(start, False)]
        while work:
            nd, done = work.pop()
            if done:
                leads[nd] = nd in target_nodes or any(leads[k] for k in children[nd])
                continue
            if nd in leads:
                continue
            leads[nd] = False  # provisional (graphs are acyclic)
            work.append((nd, True))
            work.extend((k, False) for k in children[nd] if k not in leads)
    needed = {nd for nd, ok in leads.items() if ok}
    through = {nd for nd in needed if any(leads[k] for k in children[nd])}
    for nd in needed:
        _check_node(nd)
    deps = dict.fromkeys(needed, 0)
    for nd in through:
        for k in children[nd]:
            if k in needed:
                deps[k] += 1
    buffers: dict[Node, list[Tensor | None]] = {}
    with grad_mode.enable_grad():
        for (nd, nr), c in roots:
            if nd in needed:
                _add(buffers, nd, nr, c)
        captured: dict[tuple[int, int], Tensor] = {}
        starts = dict.fromkeys(e[0] for e, _ in roots)
        heap = [
            (engine._rank(nd), i, nd)
            for i, nd in enumerate(starts)
            if nd in needed and deps[nd] == 0
        ]
        heapq.heapify(heap)
        tie = len(heap)
        while heap:
            nd = heapq.heappop(heap)[2]
            grads = buffers.pop(nd, None) or [None] * _n_outputs(nd)
            if nd in target_nodes:
                for i, g in enumerate(grads):
                    if g is not None:
                        captured[(id(nd), i)] = g
            if nd not in through:
                continue  # an input no other input is reached through
            if grads[0] is None:
                outs: Sequence[Tensor | None] = (None,) * len(nd.next_functions)
            else:
                name = nd.grad_fn_name
                rule = VJP_RULES.get(name)
                outs = rule(nd, grads[0], n) if rule is not None else nd.backward(nd, grads[0])
            for g, (nxt, nr), meta in zip(outs, nd.next_functions, nd.in_meta, strict=False):
                if nxt is None or nxt not in needed:
                    continue
                if g is not None:
                    if g.data_.dtype != meta[1]:
                        raise Unbatchable("a gradient of another dtype")
                    _add(buffers, nxt, nr, _fit(g, n, meta[0]))
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(heap, (engine._rank(nxt), tie, nxt))
                    tie += 1
    out = []
    for (nd, nr), x in zip(targets, inputs, strict=True):
        g = captured.get((id(nd), nr))
        out.append(g if g is not None else ops.zeros((n,) + x.data_.shape, dtype=x.dtype))
    return out


def _n_outputs(nd: Node) -> int:
    return len(nd.outputs) if type(nd.outputs) is tuple else 1


def _add(buffers: dict[Node, list[Tensor | None]], nd: Node, nr: int, g: Tensor) -> None:
    buf = buffers.get(nd)
    if buf is None:
        buf = buffers[nd] = [None] * _n_outputs(nd)
    buf[nr] = g if buf[nr] is None else buf[nr] + g


# ---------------------------------------------------------------- forward rules
# rule(ctx, batched tangents ([n, *input.shape] or None), inputs, result, n) -> batched tangent
JvpRule = Callable[[Any, tuple[Any, ...], tuple[Any, ...], Tensor, int], Tensor | None]

#: rows whose jvp is elementwise: tangents aligned to the result's rank broadcast
JVP_ELEMENTWISE = frozenset(
    (
        "AddBackward0 SubBackward0 MulBackward0 MulBackward1 DivBackward0 DivBackward1 "
        "NegBackward0 RsubBackward1 AddBackward1 SinBackward0 CosBackward0 TanhBackward0 "
        "TanhBackwardBackward0 ExpBackward0 LogBackward0 SqrtBackward0 SigmoidBackward0 "
        "SigmoidBackwardBackward0 ReluBackward0 CloneBackward0 AliasBackward0 "
        "AsinBackward0 AcosBackward0 AtanBackward0 RsqrtBackward0"
    ).split()
)


def _jvp_reshape(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return ops.reshape(ts[0], (n,) + r.data_.shape)


def _jvp_expand(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return ops.expand(_align(ts[0], r.data_.ndim), (n,) + r.data_.shape)


def _jvp_sum(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    t = ts[0]
    return ops.sum(t, dim=tuple(range(1, t.data_.ndim))) if t.data_.ndim > 1 else t


def _jvp_sum_dim(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    if not ctx.dims:
        return ts[0]
    return ops.sum(ts[0], dim=tuple(d + 1 for d in ctx.dims), keepdim=ctx.keepdim)


def _jvp_t(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return ops.transpose(ts[0], 1, 2) if r.data_.ndim == 2 else ts[0]


def _jvp_transpose(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    nd = r.data_.ndim
    if nd == 0:
        return ts[0]
    return ops.transpose(ts[0], ctx.d0 % nd + 1, ctx.d1 % nd + 1)


def _jvp_permute(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return ops.permute(ts[0], [0] + [d + 1 for d in ctx.dims])


def _jvp_mm(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor | None:
    (ta, tb), (a, b) = ts, xs
    return _plus(None if ta is None else ops.matmul(ta, b), None if tb is None else _left_mm(a, tb))


def _jvp_addmm(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor | None:
    (tbias, tx, tw), (_, x, w) = ts, xs
    if tbias is not None:
        tbias = _align(tbias, 2)
    return _plus(
        _times(tbias, ctx.beta) if ctx.beta != 0 else None,
        None if tx is None else _times(ops.matmul(tx, w), ctx.alpha),
        None if tw is None else _times(_left_mm(x, tw), ctx.alpha),
    )


def _jvp_mv(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor | None:
    (tm, tv), (m, v) = ts, xs
    return _plus(
        None if tm is None else ops.matmul(tm, v), None if tv is None else ops.matmul(tv, ops.t(m))
    )


def _jvp_dot(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor | None:
    (ta, tb), (a, b) = ts, xs
    return _plus(
        None if ta is None else ops.matmul(ta, b), None if tb is None else ops.matmul(tb, a)
    )


def _jvp_pow(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor | None:
    if ctx.exponent == 0:
        raise Unbatchable("PowBackward0 with exponent 0")
    return type(ctx).jvp(ctx, ts, xs, r)


def _jvp_select(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    t = ts[0]
    return ops._view_of(t, type(ctx).apply(t, index=(slice(None), *ctx.index)))


def _jvp_embed(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return type(ctx).apply(ts[0], index=(slice(None), *ctx.index), shape=(n, *r.data_.shape))


def _batched_parts(ts: Any, xs: Any, n: int) -> list[Tensor]:
    return [
        ops.zeros((n, *x.data_.shape), dtype=x.dtype) if t is None else t
        for t, x in zip(ts, xs, strict=True)
    ]


def _jvp_cat(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    if any(x.data_.shape == (0,) for x in xs):
        raise Unbatchable("cat of a legacy empty tensor")
    return ops.cat(_batched_parts(ts, xs, n), ctx.dim % r.data_.ndim + 1)


def _jvp_stack(ctx: Any, ts: Any, xs: Any, r: Tensor, n: int) -> Tensor:
    return ops.stack(_batched_parts(ts, xs, n), ctx.dim % r.data_.ndim + 1)


JVP_RULES: dict[str, JvpRule] = {
    "SelectBackward0": _jvp_select,
    "SliceBackward0": _jvp_select,
    "SelectBackwardBackward0": _jvp_embed,
    "SliceBackwardBackward0": _jvp_embed,
    "CatBackward0": _jvp_cat,
    "StackBackward0": _jvp_stack,
    "ViewBackward0": _jvp_reshape,
    "UnsafeViewBackward0": _jvp_reshape,
    "ReshapeAliasBackward0": _jvp_reshape,
    "SqueezeBackward0": _jvp_reshape,
    "SqueezeBackward1": _jvp_reshape,
    "SqueezeBackward2": _jvp_reshape,
    "UnsqueezeBackward0": _jvp_reshape,
    "ExpandBackward0": _jvp_expand,
    "SumBackward0": _jvp_sum,
    "SumBackward1": _jvp_sum_dim,
    "TBackward0": _jvp_t,
    "TransposeBackward0": _jvp_transpose,
    "PermuteBackward0": _jvp_permute,
    "MmBackward0": _jvp_mm,
    "AddmmBackward0": _jvp_addmm,
    "MvBackward0": _jvp_mv,
    "DotBackward0": _jvp_dot,
    "PowBackward0": _jvp_pow,
}


def jvp(ctx: Any, tangents: tuple[Any, ...], inputs: tuple[Any, ...], out: Any, n: int) -> Any:
    """The batched tangent ([n, *out.shape]) of one op's result at a batched level:
    `forward_ad` calls this instead of the row's own jvp."""
    cls = type(ctx)
    name = getattr(cls, "grad_fn_name", "")
    if cls.multi_output or not isinstance(out, Tensor):
        raise Unbatchable(name)
    rule = JVP_RULES.get(name)
    if rule is None and name not in JVP_ELEMENTWISE:
        raise Unbatchable(name)
    if rule is not None:  # (a shape rule places the batch dim itself)
        result = rule(ctx, tangents, inputs, out, n)
    else:  # elementwise: tangents of fewer dims broadcast as their rows would
        nd = out.data_.ndim
        ts = tuple(_align(t, nd) if isinstance(t, Tensor) else t for t in tangents)
        result = cls.jvp(ctx, ts, inputs, out)
    if result is None:
        return None
    return _fit(result, n, out.data_.shape)


forward_ad.batched_jvp = jvp
forward_ad.Unbatchable = Unbatchable
