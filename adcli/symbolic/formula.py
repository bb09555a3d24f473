"""Graph -> formula: read a tensor's graph of Function rows as a SymPy expression.

`Converter.of_tensor(t)` walks the graph behind `t` iteratively (no Python
recursion, whatever the depth) and applies the symbolic forward table of
rules.py to each node, bottom-up.  Leaves become symbols named after the
script's variables; constants become numbers, literals or their names.  A
subformula that grows past `ABBREVIATE` nodes is replaced by a symbol named
after its tensor (its value kept for evaluation), so long graphs stay readable
and cheap.

The same converter reads gradient graphs (built by the engine's own backward
definitions with create_graph=True): their nodes are rows of the same table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcli.autograd.node import AccumulateGrad, Node
from adcli.autograd.tensor import Tensor
from adcli.provenance import label_of

from . import rules, sym
from .sym import FormulaError, TensorSymbol

#: A subformula with more tree nodes than this is abbreviated to its tensor's name.
ABBREVIATE = 80
#: A converter reads at most this many nodes (a formula of a longer graph is refused).
NODE_BUDGET = 3000
#: Constant arrays with at most this many elements are written out (`tensor([1., 2.])`).
LITERAL_MAX = 6


class Converter:
    """Formulas of the tensors of one or more graphs, sharing symbols and results.

    `stops` maps graph edges `(id(node), output_nr)` to formulas to use instead of
    walking further (local rules stop at a node's inputs; gradient formulas map the
    incoming gradient to 1 or `grad`).  `leaf_values` maps `id(tensor)` to the values
    a leaf had when a gradient was computed.
    """

    def __init__(
        self,
        *,
        stops: dict[tuple[int, int], Any] | None = None,
        leaf_values: dict[int, np.ndarray] | None = None,
        abbreviate: int = ABBREVIATE,
        shared: dict[int, list[tuple[Any, Any]]] | None = None,
    ) -> None:
        self.memo: dict[tuple[int, int], tuple[Node, Any]] = {}
        self.stops = dict(stops or {})
        self.leaf_values = leaf_values or {}
        self.syms: dict[int, tuple[Any, Any]] = {}
        # leaf symbols shared with other converters (the same leaf at the same values is
        # the same symbol, so gradients of several passes add up)
        self.shared = shared if shared is not None else {}
        self.shape_memo: dict[Any, tuple[int, ...]] = {}
        self.abbreviate = abbreviate
        self.abbreviated: dict[TensorSymbol, Any] = {}
        self._counter = 0
        self.converted = 0

    # ------------------------------------------------------------------ entry points
    def of_tensor(self, t: Tensor) -> Any:
        """The formula of a tensor in terms of the leaves of its graph."""
        if t._node is not None:
            return self.of_edge(t._node, t._output_nr)
        if t._requires_grad:
            return self.of_edge(t._accumulator(), 0)
        return self.const(t)

    def of_edge(self, node: Node, nr: int) -> Any:
        """The formula of output `nr` of `node` (iterative post-order walk)."""
        memo = self.memo
        stack: list[tuple[Node, int]] = [(node, nr)]
        expanded: set[tuple[int, int]] = set()
        while stack:
            n, k = stack[-1]
            key = (id(n), k)
            if key in memo:
                stack.pop()
                continue
            if key in self.stops:
                memo[key] = (n, self.stops[key])
                stack.pop()
                continue
            if isinstance(n, AccumulateGrad):
                memo[key] = (n, self.leaf(n))
                stack.pop()
                continue
            if key not in expanded:
                expanded.add(key)
                pending = [
                    (nx, r)
                    for nx, r in n.next_functions
                    if nx is not None and (id(nx), r) not in memo
                ]
                if pending:
                    stack.extend(pending)
                    continue
            self.converted += 1
            if self.converted > NODE_BUDGET:
                raise FormulaError(
                    f"the graph has more than {NODE_BUDGET} nodes: too long for a formula"
                )
            memo[key] = (n, self._node(n, k))
            stack.pop()
        expr = memo[(id(node), nr)][1]
        # the node asked for is shown whole, even when its users see it abbreviated
        return self.abbreviated.get(expr, expr) if isinstance(expr, TensorSymbol) else expr

    # ------------------------------------------------------------------ leaves, constants
    def leaf(self, acc: AccumulateGrad) -> Any:
        var = acc.variable
        owner: Any = var if var is not None else acc
        hit = self.syms.get(id(owner))
        if hit is not None and hit[0] is owner:
            return hit[1]
        lab = label_of(var) if var is not None else getattr(acc, "_label", None)
        name = (lab.name or lab.expr) if lab is not None else None
        if var is not None:
            value = self.leaf_values.get(id(var))
            if value is None:
                value = var.data_
        elif lab is not None and lab.value is not None:
            value = lab.value
        else:
            raise FormulaError("a leaf of this graph is gone")
        for known_owner, known in self.shared.get(id(owner), ()):
            if known_owner is owner and np.array_equal(known.value, value, equal_nan=True):
                self.syms[id(owner)] = (owner, known)
                return known
        s = sym.tensor_symbol(name or self._fresh("leaf"), np.array(value, copy=True), "leaf")
        self.syms[id(owner)] = (owner, s)
        known = self.shared.setdefault(id(owner), [])
        known.append((owner, s))
        del known[:-4]  # a leaf trained in a loop: only its latest values matter
        return s

    def const(self, t: Tensor) -> Any:
        """A tensor that does not require grad, as a formula."""
        hit = self.syms.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        lab = label_of(t)
        if lab is not None and lab.name:
            value = self.leaf_values.get(id(t))
            if value is None:
                value = t.data_
            s: Any = sym.tensor_symbol(lab.name, np.array(value, copy=True), "const")
        else:
            s = self.const_array(t.data_, label=lab)
        self.syms[id(t)] = (t, s)
        return s

    def const_array(self, arr: np.ndarray, *, kind: str = "const", label: Any = None) -> Any:
        """An unnamed constant: a number when all its elements are equal, else a literal
        (small) or a symbol (`c1`, `mask1`) holding its values."""
        a = np.asarray(arr)
        if a.size and a.dtype != object:
            first = a.flat[0]
            if np.all(a == first) or (a.dtype.kind == "f" and np.all(np.isnan(a))):
                return sym.number(first if a.dtype != np.bool_ else bool(first))
        if 0 < a.size <= LITERAL_MAX:
            shown = a.astype(np.float32) if kind == "derived" and a.dtype == np.float64 else a
            return sym.tensor_symbol(rules.sym_literal(shown), a, kind)
        name = None
        if label is not None and label.expr and len(label.expr) <= 24:
            name = label.expr
        return sym.tensor_symbol(name or self._fresh("mask" if kind == "mask" else "c"), a, kind)

    def _fresh(self, base: str) -> str:
        self._counter += 1
        return f"{base}{self._counter}"

    # ------------------------------------------------------------------ operations
    def _node(self, n: Node, nr: int) -> Any:
        args = self._operands(n)
        ctx = rules.RuleCtx(self, n, nr, args)
        r = rules.rule_for(type(n))
        try:
            expr = r(ctx) if r is not None else rules.generic(ctx)
        except FormulaError:
            raise
        except Exception:  # a rule that cannot read this node: show it without a closed form
            expr = rules.generic(ctx)
        if self.abbreviate and sym.node_count(expr, self.abbreviate) > self.abbreviate:
            expr = self._abbreviate(n, nr, expr, ctx)
        return expr

    def _operands(self, n: Node) -> list[Any]:
        consts = getattr(n, "sym_inputs", None)
        metas = getattr(n, "in_meta", ()) or ()
        args: list[Any] = []
        for i, (nx, r) in enumerate(n.next_functions):
            if nx is not None:
                args.append(self.memo[(id(nx), r)][1])
                continue
            meta = metas[i] if i < len(metas) else None
            if meta is None:
                args.append(None)
                continue
            saved = consts[i] if consts is not None and i < len(consts) else None
            if saved is None:
                raise FormulaError(
                    f"{n.name()} has a constant operand that was not recorded (formulas need "
                    "recording: run with --symbolic, or call formula() in the script)"
                )
            if saved.counter[0] != saved.version:
                raise FormulaError(
                    f"a constant operand of {n.name()} was changed in place after it was used"
                )
            args.append(self.const(saved.tensor))
        return args

    def output_shape(self, ctx: rules.RuleCtx) -> tuple[int, ...]:
        """The shape of a node's output: from the tensor, its label, or by replaying."""
        n, nr = ctx.node, ctx.nr
        t = n.output_tensor(nr)
        if t is not None:
            return tuple(t.data_.shape)
        lab = getattr(n, "_label", None)
        if nr == 0 and lab is not None and lab.value is not None:
            return tuple(np.shape(lab.value))
        params = ctx.params
        if params is None:
            raise FormulaError(f"the shape of {n.name()}'s output is unknown")
        values = []
        for a, s in zip(ctx.args, ctx.in_shapes, strict=False):
            values.append(None if a is None or s is None else np.array(sym.fit(self.value(a), s)))
        return tuple(rules._replay(type(n), params, nr)(values).shape)

    def value(self, expr: Any) -> np.ndarray:
        return sym.evaluate(expr)

    def _abbreviate(self, n: Node, nr: int, expr: Any, ctx: rules.RuleCtx) -> Any:
        t = n.output_tensor(nr)
        lab = label_of(t) if t is not None else (getattr(n, "_label", None) if nr == 0 else None)
        name = (lab.name or lab.expr) if lab is not None else None
        try:
            value = sym.fit(sym.evaluate(expr), ctx.out_shape)
        except Exception:  # cannot evaluate: keep the long formula
            return expr
        s = sym.tensor_symbol(name or f"<{n.name()}>", np.array(value), "abbrev")
        self.abbreviated[s] = expr
        return s
