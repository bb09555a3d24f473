"""One run's formulas: `formula(t)`, and the formula columns of --symbolic reports.

A `Tracker` switches on the engine's recording of operands while it is open.
At every backward()/autograd.grad() it runs the engine's backward again on
symbolic terms (gradients.py) and keeps, for each tensor whose `.grad` was
filled (and each tensor autograd.grad returned), the gradient graphs that make
up its value, so `formula(x.grad)` can show and check them later, even after
further script lines.  Gradient sums over several backward calls are followed
(leaf gradients accumulate until zeroed).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcli.autograd.config import config
from adcli.autograd.engine import BackwardEvent
from adcli.autograd.node import AccumulateGrad, Node
from adcli.autograd.tensor import Tensor
from adcli.provenance import label_of

from . import gradients

#: Reports of graphs with more nodes than this get no formula columns (a note says so).
NODE_LIMIT = 400
#: Backward passes through more nodes than this are not followed for formula(x.grad).
PASS_LIMIT = 20_000
#: Formulas longer than this are folded in report cells.
CELL_CHARS = 160
#: Second-derivative blocks get formulas for at most this many pairs.
PAIR_LIMIT = 16
#: A gradient summed over more backward passes than this gets no formula.
PARTS_LIMIT = 8


@dataclass
class Pass:
    """One symbolic backward pass: gradient graphs for the edges of one event."""

    root: str
    captured: dict[tuple[int, int], Tensor]
    stops: dict[tuple[int, int], Any]
    leaf_values: dict[int, np.ndarray]
    keep: list[Any] = field(default_factory=list)  # the `grad` leaves, kept alive
    second: dict[tuple[int, int], dict[tuple[int, int], Tensor]] = field(default_factory=dict)
    converter: Any = None
    shared: dict[int, Any] = field(default_factory=dict)  # leaf symbols of the tracker
    hooked: bool = False  # a hook changed a gradient in this pass
    second_grad: dict[tuple[int, int], Tensor] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)  # the graph the pass went through

    def conv(self) -> Any:
        if self.converter is None:
            from .formula import Converter

            self.converter = Converter(
                stops=self.stops, leaf_values=self.leaf_values, shared=self.shared
            )
        return self.converter


@dataclass
class Part:
    """A contribution to a gradient: the edge's gradient in one pass."""

    sym_pass: Pass
    edge: tuple[int, int]
    wrt: str


@dataclass
class GradRecord:
    """What makes up the gradient held by `owner.grad` (or an autograd.grad result)."""

    owner: Any  # weakref to the tensor whose .grad this is (None for grad() results)
    grad: Any  # weakref to the gradient tensor
    parts: list[Part]
    value: np.ndarray  # the gradient's values right after the last pass


@dataclass
class Checked:
    """A formula, its text and how it compares with the numbers autograd computed."""

    text: str
    ok: bool | None  # None: not checked
    detail: str = ""
    closed: bool = True
    expr: Any = None
    value: str = ""  # ` = 5` when every element of the number is the same
    note: str = ""  # why it was not checked

    def mark(self) -> str:
        if self.ok is None:
            return ""
        return "✓" if self.ok else "✗ MISMATCH"


class Tracker:
    """Formulas for one run; `close()` switches the engine's recording back off."""

    def __init__(self, *, eager: bool = False, call: int | None = None) -> None:
        self.eager = eager
        self.call = call  # --call LINE: formula columns only in the reports of that line
        self._progress: Any = None  # a bar on a terminal while slow formulas are built
        self._prev_record = config.record_inputs
        config.record_inputs = True
        self._records: dict[int, GradRecord] = {}
        self._results: dict[int, GradRecord] = {}
        self.last: tuple[BackwardEvent, Pass] | None = None
        self.errors: list[str] = []
        self._shared: dict[int, Any] = {}

    def close(self) -> None:
        config.record_inputs = self._prev_record
        self._records.clear()
        self._results.clear()
        self._shared.clear()
        self.last = None

    # ------------------------------------------------------------------ events
    def on_event(self, event: BackwardEvent) -> Pass | None:
        """Run the symbolic pass for a backward()/grad() call and note its gradients."""
        self.last = None
        # the graph itself, not the event's trace (a quiet run does not record one)
        nodes = _graph(event, PASS_LIMIT + 1)
        if len(nodes) > PASS_LIMIT:
            self._error(f"a backward pass went through more than {PASS_LIMIT} nodes")
            self._forget(event)
            return None
        try:
            sp = self._pass(event, nodes)
        except Exception as exc:  # a graph the pass cannot go through: no formulas
            self._error(_first_sentence(str(exc)))
            self._forget(event)
            return None
        self.last = (event, sp)
        self._note_grads(event, sp)
        return sp

    def _error(self, message: str) -> None:
        self.errors = self.errors[-9:] + [message]

    def _forget(self, event: BackwardEvent) -> None:
        """Gradients this event changed can no longer be explained by a formula."""
        for n in _graph(event, PASS_LIMIT + 1):
            if isinstance(n, AccumulateGrad) and n.variable is not None:
                self._records.pop(id(n.variable), None)

    def _pass(self, event: BackwardEvent, nodes: list[Node]) -> Pass:
        roots = list(event.roots)
        root_grads = list(event.root_grads)
        targets: list[tuple[Node, int]] = []
        seen: set[tuple[int, int]] = set()
        for n in nodes:
            outs = n.outputs
            for i in range(len(outs) if isinstance(outs, tuple) else 1):
                seen.add((id(n), i))
                targets.append((n, i))
        for t in event.inputs or ():
            node, nr = gradients.edge_of(t)
            if (id(node), nr) not in seen:
                seen.add((id(node), nr))
                targets.append((node, nr))
        gleaves = gradients.grad_leaves(root_grads)
        # a leaf holds its AccumulateGrad weakly: keep these alive, their ids are keys
        accs = [gl._accumulator() for gl in gleaves]
        stops = {}
        for i, (acc, rg) in enumerate(zip(accs, root_grads, strict=True)):
            stops[(id(acc), 0)] = gradients.grad_symbol_for(
                rg, event.gradient_given, i + 1, len(root_grads)
            )
        root_nodes = [gradients.edge_of(r)[0] for r in roots]
        sp = Pass(
            root=_root_name(event),
            captured={},
            stops=stops,
            leaf_values=gradients.leaf_snapshot(nodes),
            keep=[gleaves, accs, roots, targets],
            shared=self._shared,
            hooked=_hooked(event, nodes),
            nodes=nodes,
        )
        with gradients.quiet_graph(root_nodes):
            sp.captured = gradients.run_backward(roots, gleaves, targets)
            if event.create_graph and self.eager and len(nodes) <= NODE_LIMIT:
                try:
                    self._second_pass(event, sp)
                except Exception as exc:  # first-order formulas still stand
                    self._error(_first_sentence(str(exc)))
        return sp

    def _second_pass(self, event: BackwardEvent, sp: Pass) -> None:
        """Gradients of the first-order gradients (for the second-derivative table),
        from an incoming gradient `grad2` standing for each element of ∂root/∂u."""
        wrt = [t for t in _differentiated(event) if t._requires_grad]
        edges = [gradients.edge_of(t) for t in wrt]
        for node, nr in edges:
            g = sp.captured.get((id(node), nr))
            if g is None or not g._requires_grad or g.grad_fn is None:
                continue
            if len(sp.second) >= PAIR_LIMIT:
                break
            from . import sym

            (g2,) = gradients.grad_leaves([g])
            acc = g2._accumulator()
            if g.data_.size == 1:
                sp.stops[(id(acc), 0)] = sym.S.One
            else:
                sp.stops[(id(acc), 0)] = sym.tensor_symbol("grad2", g2.data_, "grad")
            sp.keep += [g2, acc, edges]
            sp.second[(id(node), nr)] = gradients.run_backward([g], [g2], edges)
            sp.second_grad[(id(node), nr)] = g2

    def _note_grads(self, event: BackwardEvent, sp: Pass) -> None:
        """Remember which passes make up each `.grad` (and each grad() result)."""
        for k in [k for k, r in self._results.items() if r.grad() is None]:
            del self._results[k]  # results the script dropped
        if event.kind == "grad":
            for t, g in zip(event.inputs or (), event.results or (), strict=False):
                if g is None:
                    continue
                node, nr = gradients.edge_of(t)
                part = Part(sp, (id(node), nr), _name(t))
                self._results[id(g)] = GradRecord(None, weakref.ref(g), [part], _values(g))
            return
        inputs = event.inputs

        def wanted(t: Tensor) -> bool:
            return inputs is None or any(x is t for x in inputs)

        owners: list[tuple[Tensor, tuple[int, int]]] = []
        for node in sp.nodes:
            if isinstance(node, AccumulateGrad):
                var = node.variable
                if var is not None and wanted(var):
                    owners.append((var, (id(node), 0)))
                continue
            outs = node.outputs
            for i in range(len(outs) if isinstance(outs, tuple) else 1):
                t = node.output_tensor(i)
                if t is None or t._node is not node:
                    continue
                if t._retains_grad or (inputs is not None and wanted(t)):
                    owners.append((t, (id(node), i)))
        for t, edge in owners:
            grad = t._grad
            flowed = sp.captured.get(edge)
            if grad is None or flowed is None:
                continue
            now = _values(grad)
            part = Part(sp, edge, _name(t))
            prev = self._records.get(id(t))
            flowed_v = _values(flowed)
            parts = [part]
            if prev is not None and prev.owner() is t and _close(prev.value + flowed_v, now):
                if not _close(flowed_v, now):
                    parts = prev.parts + [part]
            if len(parts) > PARTS_LIMIT:
                self._records.pop(id(t), None)
                self._error(f"{_name(t)}.grad sums more than {PARTS_LIMIT} backward passes")
                continue
            self._records[id(t)] = GradRecord(weakref.ref(t), weakref.ref(grad), parts, now)

    # ------------------------------------------------------------------ reports
    def annotate(self, report: Any, event: BackwardEvent) -> None:
        """Fill the formula columns of a report (--symbolic) and note every mismatch."""
        self.annotator(report, event)()

    def annotator(self, report: Any, event: BackwardEvent) -> Callable[[], None]:
        """`annotate(report, event)` in two steps, so that a report nobody prints (a
        loop's folded reports) costs little: the formulas are read from the graphs
        now, while the values they were computed from are still there (the script may
        change its tensors in place later); the returned function simplifies, checks
        and prints them into the report, whenever it is called."""
        from .formula import Converter
        from .local import local_rule_later

        if self.call is not None and report.line != self.call:
            return lambda: None  # --call LINE: a plain report
        n = len(_graph(event, PASS_LIMIT + 1))
        sp = self.last[1] if self.last is not None and self.last[0] is event else None
        if n > NODE_LIMIT or sp is None:
            why = (
                f"the graph has {n} nodes (the limit is {NODE_LIMIT})"
                if n > NODE_LIMIT
                else (self.errors[-1] if self.errors else "the pass failed")
            )

            def refuse() -> None:
                report.symbolic = True
                report.notes.append(f"formulas are not shown: {why}")

            return refuse
        forward = Converter()
        rows = [r for r in report.shown_rows if getattr(r, "node", None) is not None]
        names = {(id(r.node), r.output_nr): r.name for r in rows}
        # per row: the formula, the gradient's formula and the local rule, each as
        # (what to finish later, or why there is none)
        later: list[tuple[Any, Any, Any, Any]] = []
        for row in rows:
            key = (id(row.node), row.output_nr)
            own: Any = None
            try:
                if not row.is_leaf:
                    t = row.node.output_tensor(row.output_nr)
                    # a tensor changed in place since belongs to a later node: its
                    # values are not this node's any more
                    current = t is not None and t._node is row.node
                    own = (forward.of_edge(row.node, row.output_nr), current, t)
            except Exception as exc:  # one row without a formula does not stop the others
                own = exc
            grad: Any = None
            try:
                if key in sp.captured:
                    grad = self.gradient_expr([Part(sp, key, row.name)])
            except Exception as exc:
                grad = exc
            rule: Any = None
            if not row.is_leaf and row.output_nr == 0:
                try:
                    rule = local_rule_later(row.node, names, forward, row.name)
                except Exception as exc:
                    rule = exc
            later.append((row, own, grad, rule))
        second: list[str] = []
        if report.second_order is not None:
            second = self._annotate_second(report, event, sp)

        def finish() -> None:
            where = f" at line {report.line}" if report.line is not None else ""
            with self.progress().phase(f"formulas of {report.call}{where}", len(later)):
                fill()

        def fill() -> None:
            report.symbolic = True
            failures: list[str] = []
            for row, own, grad, rule in later:
                self.progress().advance()
                try:
                    if isinstance(own, Exception):
                        raise own
                    if own is not None:
                        expr, current, t = own
                        c = check(expr, row.value if current else None, tidy=False)
                        row.formula = _cell(c)
                        if c.ok is False and t is not None:
                            hint = " (did a leaf change since, through .data?)"
                            failures.append(f"{row.name} = {c.text}: {c.detail}{hint}")
                except Exception as exc:
                    row.formula = f"no formula ({_first_sentence(str(exc))})"
                try:
                    if isinstance(grad, Exception):
                        raise grad
                    if grad is not None:
                        c = self.checked_gradient(*grad, row.flowed_grad)
                        row.grad_formula = _cell(c)
                        if c.ok is False:
                            failures.append(f"∂{sp.root}/∂{row.name} = {c.text}: {c.detail}")
                except Exception as exc:
                    row.grad_formula = f"no formula ({_first_sentence(str(exc))})"
                try:
                    if isinstance(rule, Exception):
                        raise rule
                    text = rule() if rule is not None else None
                    if text:
                        row.rule = f"{row.grad_fn}: {text}"
                except Exception as exc:
                    row.rule = f"{row.grad_fn}: no rule shown ({_first_sentence(str(exc))})"
            for f in failures + second:
                report.notes.append(f"✗ FORMULA CHECK FAILED for {f}")
            later.clear()

        return finish

    def progress(self) -> Any:
        """The bar (adcli.render.progress) shown while a report's formulas take long."""
        if self._progress is None:
            from adcli.render.progress import Progress

            self._progress = Progress()
        return self._progress

    def _annotate_second(self, report: Any, event: BackwardEvent, sp: Pass) -> list[str]:
        from . import sym

        tensors = {_name(t): t for t in _differentiated(event)}
        failures = []
        for b in report.second_order.blocks:
            u, v = tensors.get(b.u), tensors.get(b.v)
            if u is None or v is None or b.error is not None:
                continue
            ukey = _key(gradients.edge_of(u))
            vkey = _key(gradients.edge_of(v))
            second = sp.second.get(ukey)
            if second is None:
                first = sp.captured.get(ukey)
                if first is not None and not first._requires_grad:
                    b.formula = "0  ✓"  # the first derivative is a constant
                continue
            g = second.get(vkey)
            try:
                expr = sp.conv().of_tensor(g) if g is not None else sym.S.Zero
                diag = False
                if u.data_.size == 1:
                    expected = None if b.value is None else np.reshape(b.value, v.data_.shape)
                else:
                    # grad2 stands for each element of ∂root/∂u: what multiplies it is the
                    # block's column (v a scalar) or its diagonal (u is v, nothing off it)
                    s2 = sp.stops[_key((sp.second_grad[ukey]._accumulator(), 0))]
                    if sym.is_sum(expr):
                        expr = sym.sum_argument(expr)
                    expr = expr / s2
                    if v.data_.size == 1:
                        expected = None if b.value is None else np.reshape(b.value, u.data_.shape)
                    elif u is v:
                        expected = _diagonal(b)
                        diag = True
                    else:
                        expected = None
                    if expected is None or s2 in sym.tidy(expr).free_symbols:
                        b.formula = f"no closed form shown (∂{sp.root}/∂{b.u} is not a scalar)"
                        continue
                c = check(expr, expected, tidy=True)
            except Exception as exc:
                b.formula = f"no formula ({_first_sentence(str(exc))})"
                continue
            if c.ok is False and u.data_.size != 1:
                b.formula = f"no closed form shown (∂{sp.root}/∂{b.u} is not a scalar)"
                continue
            b.formula = ("diagonal: " if diag else "") + _cell(c)
            if c.ok is False:
                failures.append(f"∂²{sp.root}/∂{b.u}∂{b.v} = {c.text}: {c.detail}")
        return failures

    # ------------------------------------------------------------------ formula()
    def formula_text(self, t: Tensor, call_name: str | None = None) -> str:
        """What `formula(t)` prints: `name = formula  # = value ✓`."""

        rec, owner = self._record_of(t)
        lhs = call_name or _name(t)
        if rec is not None and owner is not None:
            lhs = f"{_name(owner)}.grad"
        try:
            if rec is not None:
                wrt = rec.parts[0].wrt
                root = rec.parts[0].sym_pass.root
                checked = self.gradient_formula(rec.parts, rec.value)
                what = f"∂{root}/∂{wrt}"
                if len(rec.parts) > 1:
                    what = f"sum of {len(rec.parts)} backward passes of ∂{root}/∂{wrt}"
                return _line(lhs, checked, what, rec.value, t)
            if t._node is None and not t._requires_grad:
                from adcli.render.report import inline_value

                value = inline_value(_values(t), t.dtype.name)
                if label_of(t) is None:
                    why = f" ({self.errors[-1]})" if self.errors else ""
                    return (
                        f"{value}  # a constant: no graph, and not a gradient adcli could "
                        f"follow{why}"
                    )
                return f"{lhs} = {value}  # a constant: no graph"
            checked = self.forward_formula(t)
            return _line(lhs, checked, None, _values(t), t)
        except Exception as exc:  # never a traceback for a formula
            return f"{lhs}: no formula ({_first_sentence(str(exc))})"

    def _record_of(self, t: Tensor) -> tuple[GradRecord | None, Tensor | None]:
        for rec in self._records.values():
            owner = rec.owner() if rec.owner is not None else None
            if owner is not None and owner._grad is t and rec.grad() is t:
                if _close(rec.value, _values(t)):
                    return rec, owner
        rec = self._results.get(id(t))
        if rec is not None and rec.grad() is t:
            return rec, None
        return None, None

    # ------------------------------------------------------------------ building blocks
    def forward_formula(self, t: Tensor, conv: Any = None) -> Checked:
        """The formula of a tensor in its leaves, checked against its values."""
        from .formula import Converter

        conv = conv or Converter()
        expr = conv.of_tensor(t)
        c = check(expr, _values(t), tidy=False)
        if c.ok is False:
            changed = _changed_leaves(t)
            if changed:
                c.ok = None
                c.detail = ""
                c.note = (
                    f"not checked: {', '.join(changed)} changed in place after "
                    f"{_name(t)} was computed"
                )
            else:
                c.detail += " (did a leaf change since, through .data?)"
        return c

    def gradient_formula(self, parts: list[Part], expected: np.ndarray | None) -> Checked:
        """The (summed) gradient formula of `parts`, simplified and checked."""
        return self.checked_gradient(*self.gradient_expr(parts), expected)

    @staticmethod
    def gradient_expr(parts: list[Part]) -> tuple[Any, bool]:
        """The (summed) gradient formula of `parts`, as read from their gradient graphs,
        and whether a hook changed one of them."""
        total: Any = 0
        hooked = False
        for part in parts:
            g = part.sym_pass.captured.get(part.edge)
            hooked = hooked or bool(part.sym_pass.hooked)
            if g is None:
                continue
            total = total + part.sym_pass.conv().of_tensor(g)
        return total, hooked

    @staticmethod
    def checked_gradient(total: Any, hooked: bool, expected: np.ndarray | None) -> Checked:
        """A gradient formula simplified and checked against autograd's numbers."""
        c = check(total, expected, tidy=True)
        if c.ok is False and hooked:  # not a wrong formula: the script changed the number
            c.ok, c.detail = None, ""
            c.note = "differs: a hook changed the gradient; the formula is without hooks"
        return c


# ---------------------------------------------------------------------- helpers


def check(expr: Any, expected: np.ndarray | None, *, tidy: bool) -> Checked:
    """Simplify (optionally), print and evaluate a formula against autograd's numbers."""
    from . import sym

    expr = sym.sympy.sympify(expr)
    if tidy:
        expr = sym.tidy(expr)
    closed, via = sym.is_closed(expr)
    text = sym.to_text(expr)
    abbrev = sym.abbreviations(expr)
    if abbrev:
        text += "  (in terms of " + ", ".join(s.name for s in abbrev) + ")"
    if not closed:
        text = f"no closed form shown (goes through {via})"
    if expected is None:
        return Checked(text, None, closed=closed, expr=expr)
    try:
        got = sym.evaluate(expr)
        ok, detail = compare(got, expected)
    except Exception as exc:  # the formula cannot be evaluated: say so
        return Checked(text, False, f"cannot evaluate: {_first_sentence(str(exc))}", closed, expr)
    value = ""
    e = np.asarray(expected)
    if e.size and e.dtype.kind == "f" and np.all(e == e.flat[0]) and not expr.is_number:
        value = " = " + np.format_float_positional(np.float32(e.flat[0]), unique=True, trim="-")
    return Checked(text, ok, detail, closed, expr, value)


def compare(got: np.ndarray, expected: np.ndarray) -> tuple[bool, str]:
    """Whether a formula's numbers (float64) agree with autograd's (float32 tolerance)."""
    from . import sym

    exp = np.asarray(expected, dtype=np.float64)
    try:
        g = np.asarray(sym.fit(np.asarray(got, dtype=np.float64), exp.shape), dtype=np.float64)
    except ValueError:
        return False, f"the formula has shape {list(np.shape(got))}, autograd {list(exp.shape)}"
    scale = float(np.nanmax(np.abs(exp), initial=0.0)) if exp.size else 0.0
    ok = bool(
        np.all(
            np.isclose(g, exp, rtol=1e-3, atol=1e-5 + 1e-4 * scale, equal_nan=True)
            | ((g == exp) & np.isinf(exp))
        )
    )
    if ok:
        return True, ""
    from adcli.render.report import inline_value

    return False, (
        f"the formula gives {inline_value(g.astype(np.float32), 'float32')}, "
        f"autograd computed {inline_value(exp.astype(np.float32), 'float32')}"
    )


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True))
    except ValueError:
        return False


def _values(t: Tensor) -> np.ndarray:
    return np.array(t.data_, copy=True)


def _name(t: Tensor) -> str:
    lab = label_of(t)
    if lab is not None and (lab.name or lab.expr):
        return lab.name or lab.expr
    return "tensor"


def _root_name(event: BackwardEvent) -> str:
    names = [_name(r) for r in event.roots]
    return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"


def _differentiated(event: BackwardEvent) -> list[Tensor]:
    if event.inputs is not None:
        return list(event.inputs)
    nodes = [e.node for e in event.entries] or _graph(event, PASS_LIMIT + 1)
    return [n.variable for n in nodes if isinstance(n, AccumulateGrad) and n.variable is not None]


def _graph(event: BackwardEvent, limit: int) -> list[Node]:
    """The nodes of the graph behind the event's roots (at most `limit`)."""
    roots = [gradients.edge_of(r)[0] for r in event.roots]
    return gradients.graph_nodes(roots, limit)


def _hooked(event: BackwardEvent, nodes: list[Node]) -> bool:
    """Whether a hook changed a gradient in this pass (or may have: no trace was kept)."""
    if event.entries:
        return any(e.hook_changed for e in event.entries)
    for n in nodes:
        if getattr(n, "pre_hooks", None):
            return True
        if isinstance(n, AccumulateGrad) and n.variable is not None and n.variable._hooks:
            return True
    return False


def _key(edge: tuple[Any, int]) -> tuple[int, int]:
    return (id(edge[0]), edge[1])


def _changed_leaves(t: Tensor) -> list[str]:
    """Leaves of t's graph whose values changed in place since the graph used them."""
    out: list[str] = []
    root = t._node
    if root is None:
        return out
    for n in gradients.graph_nodes([root]):
        saved = n.__dict__.get("sym_saved") if hasattr(n, "__dict__") else None
        saved = getattr(n, "saved", None) if not saved else saved
        for st in saved if isinstance(saved, tuple) else ():
            leaf = getattr(st, "tensor", None)
            if leaf is None or leaf._node is not None or st.counter[0] == st.version:
                continue
            name = _name(leaf)
            if name not in out:
                out.append(name)
    return out


def _cell(c: Checked) -> str:
    """A formula for a report cell: folded when long, its check mark after it."""
    text = c.text
    if len(text) > CELL_CHARS:
        text = text[: CELL_CHARS - 1] + "…"
    if c.closed:
        text += c.value
    if c.ok is False:
        return f"{text}  ✗ MISMATCH"
    if c.note:
        return f"{text}  ({c.note})"
    mark = c.mark()
    return f"{text}  {mark}" if mark else text


def _diagonal(b: Any) -> np.ndarray | None:
    """The diagonal of a square second-derivative block, when nothing is off it."""
    if b.value is not None:
        m = np.asarray(b.value, dtype=np.float64)
        half = m.shape[: m.ndim // 2]
        n = int(np.prod(half))
        if n * n != m.size:
            return None
        m2 = m.reshape(n, n)
        if np.allclose(m2 - np.diag(np.diag(m2)), 0):
            return np.diag(m2).reshape(half)
        return None
    if b.diagonal is not None and b.norm is not None:
        d = np.asarray(b.diagonal, dtype=np.float64)
        if np.isclose(np.linalg.norm(d), b.norm, rtol=1e-5):
            return d
    return None


def _first_sentence(msg: str) -> str:
    return msg.split(". ")[0].strip().rstrip(".")


def _line(lhs: str, c: Checked, what: str | None, value: np.ndarray, t: Tensor) -> str:
    from adcli.render.report import inline_value

    val = inline_value(np.asarray(value), t.dtype.name)
    comment = f"{what}; " if what else ""
    if c.ok is False:
        return f"{lhs} = {c.text}  # {comment}✗ MISMATCH: {c.detail}"
    mark = f" {c.mark()}" if c.mark() else ""
    note = f"; {c.note}" if c.note else ""
    if not c.closed:
        return f"{lhs}: {c.text}  # {comment}= {val}{note}"
    return f"{lhs} = {c.text}  # {comment}= {val}{mark}{note}"
