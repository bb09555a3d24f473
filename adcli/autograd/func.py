"""torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian and vmap.

The reverse-mode transforms (grad, vjp, jacrev) run the function on fresh inputs
and differentiate with the engine (`engine.grad`, always building the gradient's
graph so that transforms nest); the forward-mode ones (jvp, jacfwd) open a level
of forward_ad.py.  `hessian` is jacfwd over jacrev, as in PyTorch.  The function
is any callable (a script's function too: the host calls it as Python).

Results leave the transform as PyTorch's do: still attached to the autograd graph
of tensors from outside the transform that require grad (a captured weight, an
input that requires grad), detached otherwise, keeping their outer tangents.
`vmap` runs the function once on every slice at once (vmapping.py), and jacrev and
jacfwd run one backward pass, or one forward pass, with the whole standard basis
(batched.py), as PyTorch's vmap over vjp and jvp do: so results have PyTorch's
batched kernels' rounding, and a 512-wide Hessian takes one pass, not 16,384. Where
an operation has no batched rule, they go one slice, row or column at a time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import batched, engine, forward_ad, grad_mode, ops, vmapping
from . import random as _random
from .config import check_numel
from .node import AccumulateGrad
from .tensor import Tensor
from .vmapping import Batched

# ---------------------------------------------------------------- pytrees
# A spec is None for a leaf, else (container type, keys, child specs).
Spec = Any


def tree_flatten(tree: Any) -> tuple[list[Any], Spec]:
    """The leaves of nested tuples, lists and dicts, and the structure to rebuild it."""
    if isinstance(tree, (tuple, list)) and type(tree) in (tuple, list):
        leaves: list[Any] = []
        specs = []
        for item in tree:
            sub, spec = tree_flatten(item)
            leaves.extend(sub)
            specs.append(spec)
        return leaves, (type(tree), None, specs)
    if type(tree) is dict:
        leaves = []
        specs = []
        for key in tree:
            sub, spec = tree_flatten(tree[key])
            leaves.extend(sub)
            specs.append(spec)
        return leaves, (dict, list(tree), specs)
    return [tree], None


def tree_unflatten(leaves: list[Any], spec: Spec) -> Any:
    """The inverse of tree_flatten."""
    it = iter(leaves)

    def build(spec: Spec) -> Any:
        if spec is None:
            return next(it)
        kind, keys, children = spec
        values = [build(c) for c in children]
        if kind is dict:
            return dict(zip(keys, values, strict=True))
        return kind(values)

    return build(spec)


def spec_repr(spec: Spec, indent: int = 0) -> str:
    """A structure as PyTorch's TreeSpec prints it (`*` for a leaf)."""
    if spec is None:
        return "*"
    kind, keys, children = spec
    inner = [spec_repr(c, indent + 2) for c in children]
    sep = ",\n" + " " * (indent + 2)
    return f"TreeSpec({kind.__name__}, {keys}, [{sep.join(inner)}])"


def spec_short(spec: Spec) -> str:
    """A structure written as a Python value with `*` for leaves (`(*,)`), as PyTorch's
    vjp prints it."""
    if spec is None:
        return "*"
    kind, keys, children = spec
    inner = [spec_short(c) for c in children]
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, inner, strict=True)) + "}"
    if kind is list:
        return "[" + ", ".join(inner) + "]"
    return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"


# ---------------------------------------------------------------- lifting in and out
def _check_tensor(x: Any) -> None:
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _lift(x: Tensor) -> Tensor:
    """A fresh input to differentiate with respect to: attached to x's own graph when x
    requires grad (so the result is too), with x's tangents at the open levels."""
    if x.requires_grad:
        return ops.view(x, x.data_.shape)  # a view keeps the graph and the tangents
    inner = x.detach().requires_grad_(True)
    for level in forward_ad._levels:
        tangent = forward_ad.get_tangent(x, level)
        if tangent is not None:
            forward_ad.set_tangent(inner, level, tangent)
    return inner


def _reaches_outside(t: Tensor, own: set[int]) -> bool:
    """Does t's graph reach a leaf that is not one of this transform's own inputs?"""
    node = t._node
    if node is None:
        return t.requires_grad and id(t) not in own
    seen = {id(node)}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, AccumulateGrad):
            if id(n.variable) not in own:
                return True
            continue
        for nxt, _ in n.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return False


def _unwrap(t: Any, own: set[int], originals: dict[int, Tensor] | None = None) -> Any:
    """A result as it leaves the transform: an input itself (returned as aux) is the
    caller's tensor again; others are detached unless attached to the outside,
    keeping their tangents at the levels open around the transform."""
    if originals and id(t) in originals:
        return originals[id(t)]
    if type(t) is Batched:
        return Batched(_unwrap(t.value, own), t.levels)
    if not isinstance(t, Tensor) or not t.requires_grad or _reaches_outside(t, own):
        return t
    out = t.detach()
    for level in forward_ad._levels:
        tangent = forward_ad.get_tangent(t, level)
        if tangent is not None:
            forward_ad.set_tangent(out, level, _unwrap(tangent, own))
    return out


def _argnums(argnums: Any, nargs: int) -> tuple[int, ...]:
    """Validate argnums as PyTorch does; the positions, normalised."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    items = (argnums,) if isinstance(argnums, int) else argnums
    if not items:
        raise RuntimeError("argnums must be non-empty")
    for a in items:
        if isinstance(a, bool) or not isinstance(a, int):
            raise RuntimeError(
                f"argnums must be int or Tuple[int, ...], got: Tuple[{type(a).__name__}, ...]"
            )
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    norm = tuple(a % nargs for a in items)
    if len(set(norm)) != len(norm):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return norm


def _physical(x: Any) -> Any:
    """A vmap slice-set's stacked tensor; anything else as it is."""
    return x.value if type(x) is Batched else x


def _levels_of(x: Any) -> tuple[int, ...]:
    return x.levels if type(x) is Batched else ()


class _Inputs:
    """The positional args with those at argnums lifted (pytrees allowed)."""

    def __init__(self, args: tuple[Any, ...], argnums: Any) -> None:
        self.single = isinstance(argnums, int)
        self.positions = _argnums(argnums, len(args))
        self.args = list(args)
        self.leaves: list[list[Tensor]] = []
        self.specs: list[Spec] = []
        self.originals: dict[int, Tensor] = {}  # lifted input -> the caller's tensor
        for pos in self.positions:
            leaves, spec = tree_flatten(args[pos])
            for x in leaves:
                if type(x) is not Batched:
                    _check_tensor(x)
            lifted = [
                Batched(_lift(x.value), x.levels) if type(x) is Batched else _lift(x)
                for x in leaves
            ]
            self.originals.update({id(y): x for x, y in zip(leaves, lifted, strict=True)})
            self.args[pos] = tree_unflatten(lifted, spec)
            self.leaves.append(lifted)
            self.specs.append(spec)
        self.flat = [x for group in self.leaves for x in group]
        self.own = {id(_physical(x)) for x in self.flat}
        self.mapped = any(type(x) is Batched for x in self.flat)

    def shaped(self, flat: list[Any]) -> Any:
        """Per-input values (flat, in input order) in the inputs' structure."""
        out, start = [], 0
        for group, spec in zip(self.leaves, self.specs, strict=True):
            out.append(tree_unflatten(flat[start : start + len(group)], spec))
            start += len(group)
        return out[0] if self.single else tuple(out)


def _grads(outputs: list[Tensor], inputs: list[Tensor], cotangents: list[Any]) -> list[Tensor]:
    """Vector-Jacobian products, zeros for an input the outputs do not use."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not pairs:
        return [ops.zeros_like(x) for x in inputs]
    saved = engine.listeners[:]
    engine.listeners.clear()  # no report events for a transform's inner passes
    try:
        gs = engine.grad(
            [o for o, _ in pairs],
            inputs,
            grad_outputs=[c for _, c in pairs],
            retain_graph=True,
            create_graph=True,
            allow_unused=True,
        )
    finally:
        engine.listeners[:] = saved
    return [ops.zeros_like(x) if g is None else g for g, x in zip(gs, inputs, strict=True)]


# ---------------------------------------------------------------- grad, vjp
def _split_aux(out: Any, has_aux: bool, who: str) -> tuple[Any, Any]:
    """(output, aux) of func's result: with has_aux it must be an (output, aux) pair."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{who}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return out


def _unwrap_aux(aux: Any, ins: _Inputs) -> Any:
    """The aux pytree with the transform's own tensors unwrapped (as for the output)."""
    leaves, spec = tree_flatten(aux)
    return tree_unflatten([_unwrap(a, ins.own, ins.originals) for a in leaves], spec)


def grad_and_value(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Any:
    """A function returning (gradient of func's scalar output at argnums, output)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ins = _Inputs(args, argnums)
        with grad_mode.enable_grad():
            out, aux = _split_aux(func(*ins.args, **kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out)}"
                )
            if out.data_.ndim != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {out.data_.ndim} dims. Maybe you wanted to use the vjp "
                    "or jacrev APIs instead?"
                )
            gs = _grads([out], ins.flat, [None])
        gs = [_unwrap(g, ins.own) for g in gs]
        value = _unwrap(out, ins.own, ins.originals)
        grads = ins.shaped(gs)
        if has_aux:
            return grads, (value, _unwrap_aux(aux, ins))
        return grads, value

    return wrapper


def grad(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Any:
    """A function returning the gradient of func's scalar output at argnums."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = inner(*args, **kwargs)
        if has_aux:
            return grads, value[1]
        return grads

    return wrapper


def _only_tensors(leaves: list[Any], who: str) -> None:
    for o in leaves:
        if not isinstance(o, Tensor) and type(o) is not Batched:
            raise RuntimeError(
                f"{who}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives one gradient per primal."""
    ins = _Inputs(primals, tuple(range(len(primals))))
    with grad_mode.enable_grad():
        out = func(*ins.args)
    out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
    leaves, spec = tree_flatten(out)
    _only_tensors(leaves, "vjp(f, *primals)")

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool = False) -> Any:
        cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {spec_short(cot_spec)}, primal "
                f"output: {spec_short(spec)}"
            )
        if any(type(c) is Batched for c in cot) or ins.mapped:
            gs = _vjp_mapped(leaves, ins, cot)  # inside vmap: every slice at once
        else:
            with grad_mode.enable_grad():
                gs = _grads(leaves, ins.flat, cot)
        return tuple(tree_flatten_groups(ins, [_unwrap(g, ins.own) for g in gs]))

    result = tree_unflatten([_unwrap(o, ins.own, ins.originals) for o in leaves], spec)
    if has_aux:
        return result, vjp_fn, _unwrap_aux(aux, ins)
    return result, vjp_fn


def _vjp_mapped(leaves: list[Tensor], ins: _Inputs, cot: list[Any]) -> list[Any]:
    """vjp_fn inside vmap, for outputs and inputs outside it: one batched backward
    pass with every slice of the cotangents (as PyTorch's batching rules run it)."""
    levels = {c.levels for c in cot if type(c) is Batched}
    if ins.mapped or any(type(o) is Batched for o in leaves) or len(levels) != 1:
        raise batched.Unbatchable("vjp of values mapped at other levels")
    (lv,) = levels
    lead: tuple[int, ...] = ()
    flat_cot = []
    for c, o in zip(cot, leaves, strict=True):
        if type(c) is not Batched or not isinstance(c.value, Tensor):
            raise batched.Unbatchable("a cotangent not mapped")
        v = c.value
        lead = v.data_.shape[: len(lv)]
        if v.data_.shape[len(lv) :] != o.data_.shape:
            raise batched.Unbatchable("a cotangent of another shape")
        flat_cot.append(v)
    n = math.prod(lead)
    flat_cot = [ops.reshape(v, (n,) + o.data_.shape) for v, o in zip(flat_cot, leaves, strict=True)]
    saved = engine.listeners[:]
    engine.listeners.clear()
    try:
        gs = batched.vjp(leaves, ins.flat, flat_cot, n)
    finally:
        engine.listeners[:] = saved
    return [
        Batched(ops.reshape(g, lead + x.data_.shape), lv) for g, x in zip(gs, ins.flat, strict=True)
    ]


def tree_flatten_groups(ins: _Inputs, flat: list[Any]) -> list[Any]:
    """Per-primal values in each primal's structure."""
    out, start = [], 0
    for group, spec in zip(ins.leaves, ins.specs, strict=True):
        out.append(tree_unflatten(flat[start : start + len(group)], spec))
        start += len(group)
    return out


# ---------------------------------------------------------------- jvp
def jvp(
    func: Callable[..., Any],
    primals: Any,
    tangents: Any,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> Any:
    """(func(*primals), the Jacobian of func times tangents), by forward-mode AD."""
    who = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{who}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(
            f"{who}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {spec_repr(spec_p)} and tangents with structure {spec_repr(spec_t)}"
        )
    if not flat_p:
        raise RuntimeError(f"{who}: Expected primals to contain at least one Tensor.")
    for what, leaves in (("primals", flat_p), ("tangents", flat_t)):
        for x in leaves:
            if not isinstance(x, Tensor):
                got = type(x)
                raise RuntimeError(f"{who}: Expected {what} to only contain Tensors, got {got}")
    level = forward_ad.open_level()
    try:
        duals = [forward_ad.dual_of(p, t, level) for p, t in zip(flat_p, flat_t, strict=True)]
        out, aux = _split_aux(func(*tree_unflatten(duals, spec_p)), has_aux, who)
        leaves, spec = tree_flatten(out)
        _only_tensors(leaves, who)
        primals_out = [forward_ad.primal_of(o, level) for o in leaves]
        tangents_out = []
        for o in leaves:
            t = forward_ad.get_tangent(o, level)
            tangents_out.append(t if t is not None else ops.zeros_like(o))
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            aux = tree_unflatten(
                [
                    forward_ad.primal_of(a, level) if isinstance(a, Tensor) else a
                    for a in aux_leaves
                ],
                aux_spec,
            )
    finally:
        forward_ad.close_level(level)
    result = (tree_unflatten(primals_out, spec), tree_unflatten(tangents_out, spec))
    return result + (aux,) if has_aux else result


# ---------------------------------------------------------------- Jacobians
def _basis(n: int, like: Tensor, k: int) -> Tensor:
    """The k-th one-hot vector of n elements, shaped and typed as `like`."""
    e = ops.zeros(n, dtype=like.dtype)
    e.data_[k] = 1
    return ops.reshape(e, like.data_.shape)


def _check_blocks(outs: list[Any], ins: list[Tensor]) -> None:
    """Refuse a Jacobian with a block over the element limit, before computing it."""
    for o in outs:
        if isinstance(o, (Tensor, Batched)):
            for x in ins:
                rows = o.numel() if type(o) is Batched else o.data_.size
                check_numel(rows * _physical(x).data_.size)


def jacrev(
    func: Callable[..., Any],
    argnums: Any = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Any:
    """A function returning func's Jacobian at argnums, row by row (reverse mode)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ins = _Inputs(args, argnums)
        with grad_mode.enable_grad():
            out, aux = _split_aux(func(*ins.args, **kwargs), has_aux, "vjp(f, *primals)")
            leaves, spec = tree_flatten(out)
            _only_tensors(leaves, "vjp(f, *primals)")
            _check_blocks(leaves, ins.flat)
            # all rows in one batched backward, as PyTorch's vmap over vjp; row by row
            # when some node of the graph has no batched rule
            jac_leaves = _jacrev_batched(leaves, ins)
            if jac_leaves is None:
                jac_leaves = [_jacrev_rows(leaves, ins, m) for m in range(len(leaves))]
        result = tree_unflatten(jac_leaves, spec)
        if has_aux:
            return result, _unwrap_aux(aux, ins)
        return result

    return wrapper


def _jacrev_rows(leaves: list[Tensor], ins: _Inputs, m: int) -> Any:
    """Output m's Jacobian blocks, one vjp per output element, with zero cotangents
    for the other outputs (PyTorch's basis spans them all: so do its signs of zero)."""
    o = leaves[m]
    n = o.data_.size
    rows = [
        _grads(
            leaves,
            ins.flat,
            [_basis(n, o, k) if j == m else ops.zeros_like(p) for j, p in enumerate(leaves)],
        )
        for k in range(n)
    ]
    blocks = []
    for j, x in enumerate(ins.flat):
        col = [r[j] for r in rows]
        stacked = ops.stack(col) if col else ops.zeros(0, *x.data_.shape)
        blocks.append(ops.reshape(stacked, o.data_.shape + x.data_.shape))
    return ins.shaped([_unwrap(b, ins.own) for b in blocks])


def _eye_rows(n: int, start: int, like: Tensor, first: int = 0, count: int | None = None) -> Tensor:
    """Rows first..first+count (all n by default) of the n x n identity, restricted to
    the columns start..start+like.numel() and each shaped as `like`: the part of the
    standard basis that falls on `like` ([count, *like.shape])."""
    size = like.data_.size
    count = n - first if count is None else count
    rows = np.zeros((count, size), like.data_.dtype)
    cols = np.arange(size)
    hit = (start + cols >= first) & (start + cols < first + count)
    rows[start + cols[hit] - first, cols[hit]] = 1
    return Tensor._make(rows.reshape((count,) + like.data_.shape))


def _rows(t: Tensor, start: int, count: int, total: int) -> Tensor:
    """t's rows start..start+count (t itself when that is all of them)."""
    return t if count == total else ops.narrow(t, 0, start, count)


#: elements of a batch of basis vectors (and of the gradients it gives) at once: a
#: Hessian's jacrev of jacrev has a basis of 2**28 elements, taken in chunks of this
BATCH_ELEMENTS = 1 << 22


def _jacrev_batched(leaves: list[Any], ins: _Inputs) -> list[Any] | None:
    """Every output's Jacobian blocks from backward passes with the stacked basis of
    cotangents (batched.vjp: all rows at once, or in chunks of BATCH_ELEMENTS); None
    when the graph has a node without a batched rule. Inside vmap, outputs and inputs
    hold every slice (one set of levels for all): so do the blocks."""
    mapped = ins.mapped or any(type(o) is Batched for o in leaves)
    levels = {_levels_of(v) for v in (*leaves, *ins.flat)}
    if mapped and len(levels) != 1:
        raise batched.Unbatchable("jacrev of values mapped at other levels")
    lv = next(iter(levels)) if mapped else ()
    k = len(lv)
    outs = [_physical(o) for o in leaves]
    xs = [_physical(x) for x in ins.flat]
    lead = outs[0].data_.shape[:k] if outs else ()
    shapes = [o.data_.shape[k:] for o in outs]
    sizes = [math.prod(sh) for sh in shapes]
    n = sum(sizes)
    ok = n > 0 and all(o.data_.dtype.kind in "fc" for o in outs)
    if not ok or not any(o.requires_grad for o in outs):
        # (no outputs, integer ones: as row by row; none requiring grad: zeros)
        if mapped:
            raise batched.Unbatchable("jacrev without a graph inside vmap")
        return None
    width = max(sum(o.data_.size for o in outs), sum(x.data_.size for x in xs), 1)
    chunk = max(1, min(n, BATCH_ELEMENTS // width))
    saved = engine.listeners[:]
    engine.listeners.clear()  # no report events for a transform's inner passes
    parts: list[list[Tensor]] = []
    try:
        for first in range(0, n, chunk):
            count = min(chunk, n - first)
            cots, start = [], 0
            for o, sh, size in zip(outs, shapes, sizes, strict=True):
                basis = _eye_rows(n, start, Tensor._make(o.data_[(0,) * k]), first, count)
                if k:  # the same basis vector for every slice
                    basis = ops.expand(
                        ops.reshape(basis, (count,) + (1,) * k + sh), (count,) + lead + sh
                    )
                cots.append(basis)
                start += size
            parts.append(batched.vjp(outs, xs, cots, count))
    except (batched.Unbatchable, MemoryError):
        # (a batch over the size limit: one row at a time may fit)
        if mapped:
            raise batched.Unbatchable("jacrev inside vmap") from None
        return None
    finally:
        engine.listeners[:] = saved
    if len(parts) == 1:
        grads = parts[0]
    else:
        grads = [ops.cat([p[j] for p in parts]) for j in range(len(xs))]
    out, start = [], 0
    for sh, size in zip(shapes, sizes, strict=True):
        blocks = []
        for g, x in zip(grads, xs, strict=True):
            rows = _rows(g, start, size, n)
            if k:
                rows = ops.movedim(rows, 0, k)
            block = _unwrap(ops.reshape(rows, lead + sh + x.data_.shape[k:]), ins.own)
            blocks.append(Batched(block, lv) if k else block)
        out.append(ins.shaped(blocks))
        start += size
    return out


def jacfwd(
    func: Callable[..., Any],
    argnums: Any = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Any:
    """A function returning func's Jacobian at argnums, column by column (forward mode)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        single = isinstance(argnums, int)
        positions = _argnums(argnums, len(args))
        groups = []
        for pos in positions:
            leaves, spec = tree_flatten(args[pos])
            for x in leaves:
                if type(x) is not Batched:
                    _check_tensor(x)
            groups.append((pos, leaves, spec))
        flat_in = [x for _, leaves, _ in groups for x in leaves]
        sizes = [x.numel() if type(x) is Batched else x.data_.size for x in flat_in]
        # all columns in one forward pass with the stacked basis of tangents, as
        # PyTorch's vmap over jvp; column by column when some op has no batched rule
        done = _jacfwd_batched(func, args, kwargs, groups, sizes, has_aux, single)
        if done is not None:
            return done
        if any(type(x) is Batched for x in flat_in):
            raise batched.Unbatchable("jacfwd column by column inside vmap")
        columns: list[list[Tensor]] = []  # per input element: the output tangents
        out_leaves: list[Tensor] = []
        out_spec: Spec = None
        aux = None
        for i in range(len(flat_in)):
            for k in range(sizes[i]):
                tangents = [
                    _basis(n, y, k) if j == i else ops.zeros_like(y)
                    for j, (y, n) in enumerate(zip(flat_in, sizes, strict=True))
                ]
                call_args = list(args)
                start = 0
                for pos, leaves, spec in groups:
                    part = tangents[start : start + len(leaves)]
                    call_args[pos] = (tree_unflatten(leaves, spec), tree_unflatten(part, spec))
                    start += len(leaves)
                primal_out, tangent_out, aux = _jvp_at(func, call_args, positions, kwargs, has_aux)
                out_leaves, out_spec = tree_flatten(primal_out)
                if not columns:  # the outputs are known now: the Jacobian's size too
                    _check_blocks(out_leaves, flat_in)
                columns.append(tree_flatten(tangent_out)[0])
        if not columns:  # no input elements: call once for the output's shape
            zero_args = [(a, ops.zeros_like(a)) if isinstance(a, Tensor) else a for a in args]
            primal_out, _, aux = _jvp_at(func, zero_args, positions, kwargs, has_aux)
            out_leaves, out_spec = tree_flatten(primal_out)
        jac_leaves = []
        for m, o in enumerate(out_leaves):
            blocks, start = [], 0
            for x, n in zip(flat_in, sizes, strict=True):
                cols = [columns[c][m] for c in range(start, start + n)]
                start += n
                if cols:
                    stacked = ops.stack(cols, dim=-1) if o.data_.ndim else ops.stack(cols)
                else:
                    stacked = ops.zeros(*o.data_.shape, 0, dtype=o.dtype)
                blocks.append(ops.reshape(stacked, o.data_.shape + x.data_.shape))
            per_arg, start = [], 0
            for _, leaves, spec in groups:
                per_arg.append(tree_unflatten(blocks[start : start + len(leaves)], spec))
                start += len(leaves)
            jac_leaves.append(per_arg[0] if single else tuple(per_arg))
        result = tree_unflatten(jac_leaves, out_spec)
        return (result, aux) if has_aux else result

    return wrapper


def _jacfwd_batched(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    groups: list[tuple[int, list[Any], Spec]],
    sizes: list[int],
    has_aux: bool,
    single: bool,
) -> Any:
    """jacfwd's result from one call of func at a forward-AD level whose tangents are
    the whole standard basis ([n, *input.shape]); None when some op has no batched
    rule (func's effects so far, a print, happen again column by column). Inside
    vmap, inputs and outputs hold every slice: the tangents and blocks too."""
    n = sum(sizes)
    flat_in = [x for _, leaves, _ in groups for x in leaves]
    mapped = any(type(x) is Batched for x in flat_in)
    widest = max((_physical(x).data_.size for x in flat_in), default=0)
    if (
        n == 0
        or n * widest > 4 * BATCH_ELEMENTS  # the basis alone: column by column instead
        or any(_physical(x).data_.dtype.kind not in "fc" for x in flat_in)
    ):
        if mapped:
            raise batched.Unbatchable("jacfwd of these inputs inside vmap")
        return None
    who = "jvp(f, primals, tangents)"
    rng = _rng_state()
    level = forward_ad.open_level(batch=n)
    try:
        call_args, start = list(args), 0
        for pos, leaves, spec in groups:
            duals = []
            for x in leaves:
                phys, k = _physical(x), len(_levels_of(x))
                lead, sh = phys.data_.shape[:k], phys.data_.shape[k:]
                basis = _eye_rows(n, start, Tensor._make(phys.data_[(0,) * k]))
                if k:  # the same basis vector for every slice
                    basis = ops.expand(ops.reshape(basis, (n,) + (1,) * k + sh), (n,) + lead + sh)
                dual = forward_ad.dual_of(phys, basis, level)
                duals.append(Batched(dual, x.levels) if k else dual)
                start += math.prod(sh)
            call_args[pos] = tree_unflatten(duals, spec)
        out, aux = _split_aux(func(*call_args, **kwargs), has_aux, who)
        out_leaves, out_spec = tree_flatten(out)
        _only_tensors(out_leaves, who)
        _check_blocks(out_leaves, flat_in)
        jac_leaves = []
        for o in out_leaves:
            phys, k = _physical(o), len(_levels_of(o))
            t = forward_ad.get_tangent(phys, level)
            if t is None:
                t = ops.zeros((n,) + phys.data_.shape, dtype=phys.dtype)
            blocks, start = [], 0
            for x, size in zip(flat_in, sizes, strict=True):
                cols = ops.movedim(_rows(t, start, size, n), 0, -1)
                xs = _physical(x).data_.shape[len(_levels_of(x)) :]
                block = ops.reshape(cols, phys.data_.shape + xs)
                blocks.append(Batched(block, o.levels) if k else block)
                start += size
            per_arg, start = [], 0
            for _, leaves, spec in groups:
                per_arg.append(tree_unflatten(blocks[start : start + len(leaves)], spec))
                start += len(leaves)
            jac_leaves.append(per_arg[0] if single else tuple(per_arg))
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([_primal(a, level) for a in aux_leaves], aux_spec)
        if _drew(rng):  # random numbers: one draw per column, as column by column
            raise batched.Unbatchable("random numbers drawn")
    except (batched.Unbatchable, MemoryError):
        _drew(rng)
        # (a batch over the size limit: one column at a time may fit)
        if mapped:
            raise batched.Unbatchable("jacfwd inside vmap") from None
        return None
    finally:
        forward_ad.close_level(level)
    result = tree_unflatten(jac_leaves, out_spec)
    return (result, aux) if has_aux else result


def _primal(a: Any, level: int) -> Any:
    """a without its tangent at `level` (a vmap slice-set's stacked tensor too)."""
    if type(a) is Batched:
        return Batched(forward_ad.primal_of(a.value, level), a.levels)
    return forward_ad.primal_of(a, level) if isinstance(a, Tensor) else a


def _jvp_at(
    func: Callable[..., Any],
    call_args: list[Any],
    positions: tuple[int, ...],
    kwargs: dict[str, Any],
    has_aux: bool,
) -> tuple[Any, Any, Any]:
    """func's output, its tangent and its aux, with (primal, tangent) pairs at positions."""
    primals = tuple(call_args[p][0] for p in positions)
    tangents = tuple(call_args[p][1] for p in positions)

    def at(*xs: Any) -> Any:
        full = list(call_args)
        for p, x in zip(positions, xs, strict=True):
            full[p] = x
        return func(*full, **kwargs)

    if has_aux:
        p, t, aux = jvp(at, primals, tangents, has_aux=True)
        return p, t, aux
    p, t = jvp(at, primals, tangents)
    return p, t, None


def hessian(func: Callable[..., Any], argnums: Any = 0) -> Any:
    """A function returning func's Hessian at argnums: jacfwd of jacrev."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------- vmap
def vmap(
    func: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Any:
    """func mapped over a dimension of its inputs: one call per slice, results stacked."""
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible "
                "with the structure of `inputs`. in_dims has structure "
                f"{spec_repr(tree_flatten(in_dims)[1])} but inputs has structure "
                f"{spec_repr(tree_flatten(args)[1])}."
            )
        sizes = []
        for a, d in zip(args, dims, strict=True):
            if d is None:
                continue
            if not isinstance(a, Tensor) and type(a) is not Batched:  # (nested vmap)
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an "
                    f"input but the input is of type {type(a)}. We cannot vmap over non-Tensor "
                    "arguments, please use None as the respective in_dim"
                )
            sizes.append(a.size(d))
        if not sizes:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be "
                "a Tensor to vmap over"
            )
        if len(set(sizes)) != 1:
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, "
                f"got sizes {sizes} for the mapped dimension"
            )
        done = _vmap_batched(func, args, dims, kwargs, out_dims, sizes[0])
        if done is not _NOT_BATCHED:
            return done
        results = []
        for i in range(sizes[0]):
            sliced = [
                a if d is None else ops.select(a, d, i) for a, d in zip(args, dims, strict=True)
            ]
            results.append(func(*sliced, **kwargs))
        first, spec = tree_flatten(results[0])
        od = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(first)
        stacked = []
        for m in range(len(first)):
            items = [tree_flatten(r)[0][m] for r in results]
            if od[m] is None:
                stacked.append(items[0])
                continue
            for item in items:
                if not isinstance(item, Tensor):
                    raise ValueError(
                        f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                        f"{type(item)}. Did you mean to set out_dims= to None for output?"
                    )
            stacked.append(ops.stack(items, od[m]))
        return tree_unflatten(stacked, spec)

    return wrapper


_NOT_BATCHED: Any = object()


def _vmap_batched(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    dims: tuple[Any, ...],
    kwargs: dict[str, Any],
    out_dims: Any,
    size: int,
) -> Any:
    """func run once on every slice (vmapping.py), or _NOT_BATCHED when something in
    it has no batched rule (or fails: the slice-by-slice run then says why)."""
    level = vmapping.new_level()
    rng = _rng_state()
    try:
        mapped = [vmapping.enter(a, d, level) for a, d in zip(args, dims, strict=True)]
        out = func(*mapped, **kwargs)
        leaves, spec = tree_flatten(out)
        od = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(leaves)
        if len(od) != len(leaves) or _drew(rng):
            return _NOT_BATCHED
        return tree_unflatten(
            [vmapping.leave(y, d, level, size) for y, d in zip(leaves, od, strict=True)], spec
        )
    except MemoryError:
        raise
    except Exception as e:
        if type(e).__name__ == "LimitError":  # a budget: running again would not help
            raise
        _drew(rng)
        return _NOT_BATCHED


def _rng_state() -> Any:
    """A snapshot of the default generator (the engine's own, not torch's ByteTensor)."""
    return _random.Generator.get_state(_random.default_generator)


def _drew(rng: Any) -> bool:
    """Did the function draw random numbers since `rng`? Then the generator goes back
    there, for the one-slice-at-a-time run: it draws for each slice, not once for all."""
    if _rng_state() == rng:
        return False
    _random.Generator.set_state(_random.default_generator, rng)
    return True


def module_members() -> dict[str, Any]:
    """`torch.func`'s names, but for functional_call: it runs an nn.Module, so it is in
    adcli/nn/stateless.py (nn builds on this package), and nn.tables() adds it."""
    return {
        "grad": grad,
        "grad_and_value": grad_and_value,
        "vjp": vjp,
        "jvp": jvp,
        "jacrev": jacrev,
        "jacfwd": jacfwd,
        "hessian": hessian,
        "vmap": vmap,
    }
