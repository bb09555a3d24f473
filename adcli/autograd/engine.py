"""The backward engine: `backward()` and `autograd.grad()` with PyTorch's semantics.

The graph is walked without recursion: one iterative pass counts, for every
node reachable from the roots, how many edges lead into it; nodes then run in
dependency order (among ready nodes, the most recently created first, as
PyTorch's engine does), so a node runs once all gradients for it have arrived.

This module is above tensor.py and ops.py: `x.backward()` reaches it through
tensor.py's `engine` slot, which it fills as it loads.
"""

from __future__ import annotations

import heapq
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import grad_mode
from . import node as _node
from . import tensor as _tensor_module
from .config import config
from .hookresults import single_result, tuple_result
from .node import AccumulateGrad, Freed, Function, Node, forward_traces
from .storage import iterator_result
from .tensor import ZERO_IMMUTABLE, Size, Tensor, ZeroCounter

_tensor_module.engine = sys.modules[__name__]  # x.backward() (tensor.py cannot import this)


@dataclass
class TraceEntry:
    """One node the pass went through, with the gradient that flowed into it."""

    node: Node
    grads: tuple[Tensor | None, ...]
    hook_changed: bool = False
    released: bool = False


@dataclass
class BackwardEvent:
    """What a backward()/grad() call did, for reports (the engine never prints)."""

    kind: str  # "backward" | "grad"
    roots: list[Tensor]
    root_grads: list[Tensor]
    inputs: list[Tensor] | None
    retain_graph: bool
    create_graph: bool
    gradient_given: bool
    entries: list[TraceEntry] = field(default_factory=list)
    results: tuple[Tensor | None, ...] | None = None
    pass_id: int = field(default_factory=lambda: next(_passes))
    # notes a host adds before the listeners after it report the pass
    notes: list[str] = field(default_factory=list)


_passes = itertools.count(1)

# Called with each BackwardEvent when set (the report layer listens here).
listeners: list[Callable[[BackwardEvent], None]] = []

CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using "
    "autograd.grad when creating the graph to avoid this. If you have to use this function, "
    "make sure to reset the .grad fields of your parameters to None after use to break the "
    "cycle and avoid the leak. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)"
)


class _Warned:
    """Warnings PyTorch gives once per process (a new session resets them)."""

    __slots__ = ("create_graph",)

    def __init__(self) -> None:
        self.create_graph = False


warned = _Warned()

# Whether passes record a TraceEntry per node (reports read them; a quiet run need not).
record_trace = True

# Anomaly detection (torch.autograd.set_detect_anomaly, `adcli run --detect-anomaly`):
# set by adcli/autograd/anomaly.py only while detection is on, and then called with each node
# and the gradients its backward returned; None costs one test per node.
anomaly_check: Callable[[Node, Sequence[Tensor | None]], None] | None = None


_FIRST = 1 << 62  # AccumulateGrad's seq

# (node.prof: the open `torch.autograd.profiler.profile`, else None: a pass then
# records PyTorch's two ranges per node it runs)
_EVALUATE = "autograd::engine::evaluate_function: "


def _tensors_arg(v: Any) -> list[Any]:
    """`(v,)` for a tensor, else `tuple(v)`, as torch.autograd reads outputs and inputs
    (so a number fails with Python's own "'int' object is not iterable")."""
    if isinstance(v, Tensor):
        return [v]
    if type(v) is dict:
        return list(v.values())
    return list(v)


def _grads_arg(v: Any, n: int) -> list[Any]:
    """The gradients given for `n` outputs: None for each when absent."""
    if v is None:
        return [None] * n
    return _tensors_arg(v)


def _make_grads(roots: list[Any], grads: list[Any]) -> list[Tensor | None]:
    """PyTorch's `_make_grads`: check each given gradient against its output, and
    create ones for a scalar output that requires grad and was given none."""
    if len(grads) < len(roots):
        raise RuntimeError(f"got {len(roots)} tensors and {len(grads)} gradients")
    out: list[Tensor | None] = []
    for i, (r, g) in enumerate(zip(roots, grads, strict=False)):
        if not isinstance(r, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if isinstance(g, Tensor):
            if g.data_.shape != r.data_.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{Size(g.data_.shape)} and output[{i}] has a shape of "
                    f"{Size(r.data_.shape)}."
                )
            if g.data_.dtype != r.data_.dtype:
                g = Tensor._make(g.data_.astype(r.data_.dtype), g._requires_grad, g.grad_fn)
        elif g is None:
            if r.requires_grad:
                if r.data_.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                g = Tensor._make(np.ones(r.data_.shape, r.data_.dtype))
                if _node.prof is not None:  # PyTorch's ones_like (empty_like, fill_)
                    _ones_like_events(_node.prof)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        out.append(g)
    return out


def _check_roots(roots: list[Tensor]) -> None:
    """The engine's own check: every output must lead into the graph (a view made
    under no_grad of a tensor that requires grad requires grad, but leads nowhere)."""
    for i, r in enumerate(roots):
        if r.grad_fn is None and not r._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )


def _check_input(t: Any) -> None:
    if not isinstance(t, Tensor):
        raise RuntimeError(
            f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}"
        )


def _edge_of(t: Tensor) -> tuple[Node, int]:
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    return t._accumulator(), 0


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate d(roots)/d(leaf) into every reached leaf's `.grad`."""
    # PyTorch's order of checks: inputs, gradients, then the engine's
    inputs_l = _tensors_arg(inputs) if inputs is not None else None
    if inputs_l is not None and not inputs_l:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    roots = _tensors_arg(tensors)
    grads = _make_grads(roots, _grads_arg(grad_tensors, len(roots)))
    _check_roots(roots)
    if create_graph and not warned.create_graph:
        warned.create_graph = True  # PyTorch warns once per process
        config.warn(CREATE_GRAPH_WARNING)
    if retain_graph is None:
        retain_graph = create_graph
    event = BackwardEvent(
        "backward", roots, grads, inputs_l, retain_graph, create_graph, grad_tensors is not None
    )
    targets = None
    if inputs_l is not None:
        targets = []
        for t in inputs_l:
            _check_input(t)
            # As PyTorch: a non-leaf input keeps retaining its grad after this pass (its
            # .grad is filled by the retain_grad hook, once per pass); a leaf is unchanged.
            t.retain_grad()
            targets.append(_edge_of(t))
    _run(roots, grads, retain_graph, create_graph, targets, None, event)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
    only_inputs: bool = True,
    is_grads_batched: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of `outputs` with respect to `inputs`, without touching `.grad`."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    # PyTorch's order of checks: arguments, gradients, outputs, then inputs
    roots = _tensors_arg(outputs)
    ins = _tensors_arg(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _make_grads(roots, _grads_arg(grad_outputs, len(roots)))
    _check_roots(roots)
    for t in ins:
        _check_input(t)
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    event = BackwardEvent(
        "grad", roots, grads, ins, retain_graph, create_graph, grad_outputs is not None
    )
    targets = [_edge_of(t) for t in ins]
    captured: dict[tuple[int, int], Tensor] = {}
    _run(roots, grads, retain_graph, create_graph, targets, captured, event)
    results: list[Tensor | None] = []
    for i, (t, (node, nr)) in enumerate(zip(ins, targets, strict=False)):
        g = captured.get((id(node), nr))
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = Tensor._make(np.zeros(t.data_.shape, t.data_.dtype))
        # (as PyTorch, a gradient that reaches an input unchanged, the grad_outputs of
        # an input that is an output, is returned as it is, graph and all)
        results.append(g)
    event.results = tuple(results)
    _notify(event)
    return tuple(results)


def _notify(event: BackwardEvent) -> None:
    for fn in listeners:
        fn(event)


def _collect(root_nodes: list[Node]) -> dict[Node, int]:
    """Every node reachable from the roots, with its number of incoming edges."""
    deps: dict[Node, int] = {}
    stack = []
    for n in root_nodes:
        if n not in deps:
            deps[n] = 0
            stack.append(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                stack.append(nxt)
    return deps


def _needed(deps: dict[Node, int], target_nodes: set[Node]) -> tuple[set[Node], set[Node]]:
    """Nodes from which some target can be reached (the only ones worth running), and
    the subset of them with a needed next node (the ones worth calling backward on).

    A node's next nodes were all made before it (smaller `seq`), except AccumulateGrad
    (largest `seq`, no next nodes, needed only as a target): so one sweep in creation
    order decides each node after all of its next nodes, with no topological sort."""
    needed = {n for n in target_nodes if n in deps}
    through: set[Node] = set()
    for node in sorted(deps, key=_seq):
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt in needed:
                needed.add(node)
                through.add(node)
                break
    return needed, through


def _seq(node: Node) -> int:
    return node.seq


def _rank(node: Node) -> int:
    """A ready node's place in the heap (smallest first): the most recently created
    first; a node PyTorch runs as soon as it is ready (its NotImplemented) ties with
    AccumulateGrad, ready nodes of equal rank running in the order they became ready."""
    return -_FIRST if node.runs_first else -node.seq


def _call_hook(fn: Callable[..., Any], g: Tensor | None) -> Tensor | None:
    r = fn(g)
    if r is g:
        return g
    single_result(fn, g, r)
    return g if r is None else r


def _accumulate(buf: list[Tensor | None], i: int, g: Tensor) -> None:
    cur = buf[i]
    if cur is None:
        buf[i] = g
    elif not (cur._requires_grad or g._requires_grad) and cur.data_.dtype == g.data_.dtype:
        if type(cur._vc) is ZeroCounter:
            buf[i] = g  # PyTorch's buffer adds to an efficient zero out of place: g as is
        else:  # no graph to record: add the arrays (PyTorch adds in place: a zero g is +0)
            if _node.prof is not None:
                _instant(_node.prof, ("aten::add_",))
            # PyTorch adds into a gradient only it holds (its version goes one up), else
            # into the other one, else into new memory laid out by TensorIterator: the
            # sum keeps that memory's layout (which a later dropout's mask follows)
            own = cur if _own(cur) else g if _own(g) else None
            total = cur.data_ + g.data_
            if own is None:
                total = iterator_result(total, (cur.data_, g.data_))
            elif total.strides != own.data_.strides:
                into = np.empty_like(own.data_)
                into[...] = total
                total = into
            buf[i] = Tensor._make(total)
            if own is not None and type(buf[i]._vc) is list:
                buf[i]._vc[0] = own._vc[0] + 1
    else:
        buf[i] = cur + g


#: ids of the gradients the caller of the running pass holds (backward's `gradient`,
#: the implicit ones of a scalar root): PyTorch's AccumulateGrad and input buffers
#: never adopt or add into those, their reference count says someone else has them
_held: set[int] = set()


def _own(g: Tensor) -> bool:
    """Whether PyTorch would write into gradient `g` in place, being its only holder (a
    result of a backward formula, not the caller's, not a view, one dense block)."""
    return id(g) not in _held and g._base is None and _tensor_module._dense(g.data_)


def _run(
    roots: list[Tensor],
    root_grads: list[Tensor],
    retain_graph: bool,
    create_graph: bool,
    targets: list[tuple[Node, int]] | None,
    captured: dict[tuple[int, int], Tensor] | None,
    event: BackwardEvent,
) -> None:
    edges = [_edge_of(r) for r in roots]
    root_nodes = [n for n, _ in edges]
    deps = _collect(root_nodes)
    target_nodes = {n for n, _ in targets} if targets is not None else None
    needed = through = None
    if target_nodes is not None:
        needed, through = _needed(deps, target_nodes)
    target_edges = {(id(n), nr) for n, nr in targets} if targets is not None else set()

    buffers: dict[Node, list[Tensor | None]] = {}
    prev_mode = grad_mode.state.enabled
    grad_mode.state.enabled = create_graph
    global _held
    prev_held, _held = _held, {id(g) for g in root_grads if g is not None}
    prev_needed, _node.pass_needed = _node.pass_needed, needed
    try:
        for (node, nr), g in zip(edges, root_grads, strict=False):
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * _n_outputs(node)
            _accumulate(buf, nr, g)
        heap: list[tuple[int, int, Node]] = []
        tie = 0
        p_event = None
        for node in dict.fromkeys(root_nodes):
            if deps[node] == 0:
                heapq.heappush(heap, (_rank(node), tie, node))
                tie += 1
        trace = record_trace  # TraceEntry records only when someone reads them
        entries = event.entries
        entry = None
        freed = Freed(event.pass_id)
        # The one node made ready by the last step while the heap was empty (a chain's
        # usual case): it runs next without a heap push and pop.
        single: Node | None = None
        heappush, heappop = heapq.heappush, heapq.heappop
        node = None
        p = _node.prof
        while True:
            if single is not None:
                node, single = single, None
            elif heap:
                node = heappop(heap)[2]
            else:
                break
            if p is not None:  # one range per node, closed when the next starts
                if p_event is not None:
                    p.end(p_event)
                p_event = p.begin(_EVALUATE + node.name())
            grads = buffers.pop(node, None) or [None] * _n_outputs(node)
            if needed is not None and node not in needed:
                # PyTorch still calls the tensor hooks of a node it reached (a root's)
                if node.pre_hooks or type(node) is AccumulateGrad:
                    grads, _ = _pre_hooks(node, grads)
                if node.retained:
                    _retain(node, grads, create_graph)
                continue
            if type(node) is AccumulateGrad:
                grads, changed = _pre_hooks(node, grads)
                accumulate = captured is None and (target_nodes is None or node in target_nodes)
                if accumulate and node.pre_hooks:  # grad_fn hooks registered on the node
                    grads, changed = _node_pre_hooks(node, grads, changed)
                if trace:
                    entries.append(TraceEntry(node, tuple(grads), changed))
                if captured is not None:
                    if grads[0] is not None:
                        captured[(id(node), 0)] = grads[0]
                elif accumulate:
                    if p is not None:
                        _profiled_accumulate(p, node, grads[0], create_graph)
                    else:
                        _accumulate_grad(node, grads[0], create_graph)
                    _post_accumulate_hooks(node)
                    if node.pre_hooks:
                        _post_hooks(node, (), grads)
                continue
            # As PyTorch: autograd.grad captures an input's gradient before its tensor
            # hooks when the node has to run anyway (it leads to another input), after
            # them when it does not; backward() runs every needed node, inputs included.
            capture = captured is not None and node in target_nodes
            runs = through is None or captured is None or node in through
            if capture and runs:
                _capture(node, grads, target_edges, captured)
            if node.pre_hooks:
                grads, changed = _pre_hooks(node, grads)
            else:
                changed = False
            if node.retained:
                _retain(node, grads, create_graph)
            if not runs:
                if capture:
                    _capture(node, grads, target_edges, captured)
                if trace:
                    entries.append(TraceEntry(node, tuple(grads), changed))
                continue
            if node.pre_hooks:
                grads, changed = _node_pre_hooks(node, grads, changed)
            if trace:
                entry = TraceEntry(node, tuple(grads), changed)
                entries.append(entry)
            if p is not None:
                ev = p.begin(node.name())
                try:
                    outs = _apply(node, grads, needed)
                finally:
                    p.end(ev)
            elif (
                node.multi_output
                or node.pre_hooks
                or anomaly_check is not None
                or not node.next_functions
                or node.next_functions[0][0] is None
                or grads[0] is None
            ):
                outs = _apply(node, grads, needed)
            else:  # _apply's common case, inline (one call less per node)
                outs = node.backward(node, grads[0])
                if len(outs) != len(node.next_functions):
                    _apply_count_error(node, outs)
            # PyTorch validates (reduces, casts or refuses) the gradients before the
            # node releases what it saved: a node whose gradient is refused keeps it
            outs = _validate_outputs(node, outs, needed)
            if not retain_graph and isinstance(node, Function):
                if trace:
                    entry.released = bool(node.saved)
                node.release(freed)
            if anomaly_check is not None:
                _check_anomaly(node, outs, needed)
            for g, (nxt, nr) in zip(outs, node.next_functions, strict=False):
                if nxt is None:
                    continue
                if needed is not None and nxt not in needed:
                    continue
                # An undefined gradient (None) still counts as arrived, as in PyTorch: the
                # next node runs, its hooks seeing None when nothing else reached it.
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        if type(nxt.outputs) is tuple:
                            buf = buffers[nxt] = [None] * len(nxt.outputs)
                            buf[nr] = g
                        else:
                            buffers[nxt] = [g]
                    else:
                        _accumulate(buf, nr, g)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    if single is None and not heap:
                        single = nxt
                    else:
                        if single is not None:  # keep the order the heap alone would give
                            heappush(heap, (_rank(single), tie, single))
                            tie += 1
                            single = None
                        heappush(heap, (_rank(nxt), tie, nxt))
                        tie += 1
            # Nodes skipped because grads never arrived still have to be released; a
            # grad() input with nothing needed beyond it never runs in PyTorch: it keeps them.
        if not retain_graph:
            for node in deps:
                if isinstance(node, Function) and (
                    through is None or node in through or (captured is None and node in needed)
                ):
                    node.release(freed)
    except Exception:
        if config.anomaly_mode and node is not None:
            _report_anomaly(node)
        raise
    finally:
        grad_mode.state.enabled = prev_mode
        _held = prev_held
        _node.pass_needed = prev_needed
        if p_event is not None:
            p.end(p_event)
    if event.kind == "backward":
        _notify(event)


_TRIGGERED = " (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/"


def _report_anomaly(node: Node) -> None:
    """PyTorch's anomaly-mode warning when a node's backward fails: where the script
    made that node, when detection was on as it did."""
    trace = forward_traces.get(node)
    if trace:
        config.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the "
            f"error:\n{trace}{_TRIGGERED}python_anomaly_mode.cpp:122.)"
        )
    else:
        config.warn(
            f"Error detected in {node.name()}. No forward pass information available. "
            "Enable detect anomaly during forward pass for more information."
            f"{_TRIGGERED}python_anomaly_mode.cpp:100.)"
        )


def _ones_like_events(p: Any) -> None:
    """The ranges of PyTorch's ones_like for an implicit root gradient."""
    outer = p.begin("aten::ones_like")
    _instant(p, ("aten::empty_like", "aten::empty_strided"))
    _instant(p, ("aten::fill_",))
    p.end(outer)


def _instant(p: Any, names: tuple[str, ...]) -> None:
    """Nested ranges PyTorch records where adcli computes on arrays directly."""
    first = p.begin(names[0])
    for name in names[1:]:
        p.begin(name)
    p.end(first)


def _profiled_accumulate(p: Any, node: AccumulateGrad, g: Tensor | None, create: bool) -> None:
    """AccumulateGrad under the profiler: its range, with what PyTorch does inside (a
    first gradient is taken as a detached alias, a later one added in place)."""
    var = node.variable
    ev = p.begin(node.name())
    try:
        if var is not None and g is not None and var._requires_grad:
            if var._grad is None and not create:
                if _adopts(var, g):  # PyTorch takes it (a detached alias)
                    _instant(p, ("aten::detach", "detach"))
                else:  # else copies it into the leaf's layout
                    _instant(p, ("aten::new_empty_strided", "aten::empty_strided"))
                    _instant(p, ("aten::copy_",))
            elif var._grad is not None and not create:
                _instant(p, ("aten::add_",))
        hook, _node.prof_hook = _node.prof_hook, None  # (recorded above, as PyTorch's)
        try:
            _accumulate_grad(node, g, create)
        finally:
            _node.prof_hook = hook
    finally:
        p.end(ev)


def _n_outputs(node: Node) -> int:
    outs = node.outputs
    return len(outs) if isinstance(outs, tuple) else 1


def _validate_outputs(
    node: Node, outs: Sequence[Tensor | None], needed: set[Node] | None
) -> Sequence[Tensor | None]:
    """`outs` with each gradient an input this pass needs receives fitted to that input's
    shape and dtype (see `_fit`); `outs` itself when all fit already."""
    fitted: list[Tensor | None] | None = None
    for at, (g, (nxt, _), meta) in enumerate(
        zip(outs, node.next_functions, node.in_meta, strict=False)
    ):
        if g is None or nxt is None or (needed is not None and nxt not in needed):
            continue
        gd = g.data_
        # reduce/cast only when the shape or dtype differs from the input's
        if gd.shape != meta[0] or (gd.dtype is not meta[1] and gd.dtype != meta[1]):
            if fitted is None:
                fitted = list(outs)
            fitted[at] = _fit(g, meta, node, at)
    return outs if fitted is None else fitted


def _fit(
    g: Tensor, meta: tuple[tuple[int, ...], np.dtype], node: Node | None = None, at: int = 0
) -> Tensor:
    """Reduce a gradient over broadcast dims and cast it to the input's dtype; one the
    input's shape cannot expand to is PyTorch's validate_outputs error (a scatter's
    gradient for a source larger than its index)."""
    shape, dtype = meta
    if g.data_.shape == shape and g.data_.dtype == dtype:
        return g
    from . import ops

    if g.data_.shape != shape:
        got = g.data_.shape
        fits = len(shape) <= len(got) and all(
            n in (1, m) for n, m in zip(reversed(shape), reversed(got), strict=False)
        )
        if not fits and node is not None:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {at} - got "
                f"{list(got)} but expected shape compatible with {list(shape)}"
            )
        g = ops.sum_to(g, shape)
    if g.data_.dtype != dtype:
        g = ops.to_dtype(g, dtype)
    return g


def _capture(
    node: Node,
    grads: list[Tensor | None],
    target_edges: set[tuple[int, int]],
    captured: dict[tuple[int, int], Tensor],
) -> None:
    """Keep the gradients autograd.grad returns for the inputs that are outputs of `node`."""
    for i, g in enumerate(grads):
        if g is not None and (id(node), i) in target_edges:
            captured[(id(node), i)] = g


def _pre_hooks(node: Node, grads: list[Tensor | None]) -> tuple[list[Tensor | None], bool]:
    """The tensor hooks of a node's outputs (a leaf's, for AccumulateGrad), in the order
    they were registered; as PyTorch, a hook on an output that got no gradient (another
    output of unbind) is called with None."""
    changed = False
    if isinstance(node, AccumulateGrad):
        var = node.variable
        hooks = var._hooks if var is not None else None
        if hooks:
            g = grads[0]
            for fn in list(hooks):
                new = _call_hook(fn, g)
                changed = changed or new is not g
                g = new
            grads = [g]
        return grads, changed
    grads = list(grads)
    for kind, *rest in list(node.pre_hooks):
        if kind == "tensor":
            nr, fn = rest
            new = _call_hook(fn, grads[nr])
            changed = changed or new is not grads[nr]
            grads[nr] = new
    return grads, changed


def _node_pre_hooks(
    node: Node, grads: list[Tensor | None], changed: bool
) -> tuple[list[Tensor | None], bool]:
    """`grad_fn.register_prehook` hooks: after the tensor hooks and retain_grad, as in
    PyTorch, and only when the node runs."""
    for kind, *rest in list(node.pre_hooks):
        if kind == "node":
            (fn,) = rest
            args = tuple(grads)
            r = fn(args)
            if r is not None and r is not args:
                grads = list(tuple_result(fn, args, r))
                changed = True
    return grads, changed


def _post_hooks(
    node: Node, outs: Sequence[Tensor | None], grads: Sequence[Tensor | None]
) -> Sequence[Tensor | None]:
    """`grad_fn.register_hook` hooks: `fn(grad_inputs, grad_outputs)` after the node ran,
    in registration order; a hook's non-None result replaces the grad_inputs."""
    for hook in list(node.pre_hooks or ()):
        if hook[0] == "post":
            args = tuple(outs)
            r = hook[1](args, tuple(grads))
            if r is not None and r is not args:
                outs = tuple_result(hook[1], args, r)
    return outs


def _retain(node: Node, grads: list[Tensor | None], create_graph: bool) -> None:
    retained = node.retained
    if not retained:
        return
    for nr, ref in retained.items():
        t = ref()
        g = grads[nr]
        if t is None or g is None or t._grad_fn is not node:  # (no lazy re-derivation)
            continue
        if t._grad is None:
            if create_graph and g._requires_grad:
                from . import ops

                t._grad = ops.clone(g)  # PyTorch's retain_grad hook clones: CloneBackward0
            else:
                t._grad = Tensor._make(g.data_.copy())
        elif create_graph:
            t._grad = t._grad + g
        elif type(g._vc) is ZeroCounter:  # added out of place: the sum is .grad's values
            t._grad = Tensor._make(t._grad.data_.copy())
        else:
            t._grad = Tensor._make(t._grad.data_ + g.data_)


#: nodes whose inputs are one list argument to PyTorch (its gradient formula fills the
#: whole range when any element needs a gradient)
_LIST_INPUTS = frozenset({"StackBackward0", "CatBackward0"})


def _apply(
    node: Node, grads: list[Tensor | None], needed: set[Node] | None = None
) -> Sequence[Tensor | None]:
    if not node.runs_undefined and all(nxt is None for nxt, _ in node.next_functions):
        # every input was a view made under no_grad (it requires grad, but leads
        # nowhere): PyTorch's formulas compute nothing, but unpack what a one-input op
        # saved (a freed graph or a changed saved tensor raises); an error node still
        # raises and a custom Function's backward still runs
        if getattr(node, "dead_unpacks", False):
            node.saved_tensors  # noqa: B018
        outs: Sequence[Tensor | None] = (None,) * len(node.next_functions)
    elif not node.runs_undefined and all(g is None for g in grads):
        # every gradient undefined: PyTorch's formulas compute nothing and return
        # undefined ones, after unpacking what the node saved (a freed graph raises)
        # (a freed node too: its Freed marker is falsy, but something was saved)
        if isinstance(node, Function) and (node.saved or isinstance(node.saved, Freed)):
            node.saved_tensors  # noqa: B018
        outs = (None,) * len(node.next_functions)
    elif node.multi_output:
        outs = node.backward(node, *grads)
    else:
        outs = node.backward(node, grads[0])
    if len(outs) != len(node.next_functions):
        _apply_count_error(node, outs)
    if node.pre_hooks and any(h[0] == "post" for h in node.pre_hooks):
        # PyTorch reduces and casts the gradients to the inputs' shapes and dtypes
        # before the node's post hooks see them
        # (and see none for the inputs that need none, or lead nowhere this pass needs)
        drop = [
            g is None or nxt is None or (needed is not None and nxt not in needed)
            for g, (nxt, _) in zip(outs, node.next_functions, strict=False)
        ]
        if node.grad_fn_name in _LIST_INPUTS and not all(drop):
            # one input list to PyTorch: computed (and seen) whole once any part is needed
            drop = [g is None for g in outs]
        # (a gradient the input's shape cannot take fails here, before the hooks run)
        outs = [
            None if dropped else g if meta is None else _fit(g, meta, node, at)
            for at, (g, meta, dropped) in enumerate(zip(outs, node.in_meta, drop, strict=False))
        ]
        outs = _post_hooks(node, outs, grads)
    return outs


def _check_anomaly(node: Node, outs: Sequence[Tensor | None], needed: set[Node] | None) -> None:
    """Anomaly mode's NaN check of what `node` returned (see the note at `anomaly_check`
    above): after its post hooks and after the pass released what it saved, as PyTorch
    checks (so a second backward through a node that returned NaN finds it freed). It
    computes no gradient for an input this pass does not need, so has none to check
    there."""
    check = anomaly_check
    if check is None:
        return
    # (checked as the inputs receive them: PyTorch reduces a broadcast gradient first,
    # so [inf, -inf] summed to one NaN is found)
    checked: list[Tensor | None] = [
        None
        if nxt is None or (needed is not None and nxt not in needed)
        else g
        if g is None or meta is None or g.data_.shape == meta[0]
        else _fit(g, meta, node, at)
        for at, (g, (nxt, _), meta) in enumerate(
            zip(outs, node.next_functions, node.in_meta, strict=False)
        )
    ]
    if node.grad_fn_name in _LIST_INPUTS and any(g is not None for g in checked):
        # one input list to PyTorch: computed (so checked) whole once any part is
        # needed, the parts for inputs that need no gradient too
        checked = list(outs)
    check(node, checked)


def _apply_count_error(node: Node, outs: Sequence[Tensor | None]) -> None:
    raise RuntimeError(
        f"function {node.name()} returned an incorrect number of gradients (expected "
        f"{len(node.next_functions)}, got {len(outs)})"
    )


def _accumulate_grad(node: AccumulateGrad, g: Tensor | None, create_graph: bool) -> None:
    var = node.variable
    if var is None or g is None:
        return
    if var._grad_fn is not None:  # detach_() then an in-place op gave the leaf a history
        raise RuntimeError("leaf variable has been moved into the graph interior")
    if not var._requires_grad:
        return  # (PyTorch's AccumulateGrad skips a leaf that stopped requiring grad)
    if var._grad is None:
        if create_graph and g._requires_grad:
            # PyTorch copies into a fresh tensor: the grad's grad_fn is CopyBackwards
            from . import ops

            var._grad = ops.copy_from(Tensor._make(np.empty_like(g.data_)), g)
        elif type(g._vc) is ZeroCounter and not create_graph and _adopts(var, g):
            # PyTorch takes the new gradient itself, an efficient zero (one not laid out
            # as the leaf, an expanded one, it copies into real zeros below)
            var._grad = g.detach()
        else:
            var._grad = _first_grad(var, g, create_graph)
    elif create_graph:
        var._grad = var._grad + g
    else:
        # Without create_graph PyTorch adds in place (grad mode is off): .grad stays the
        # same tensor, with its flags (a grad_fn from an earlier create_graph pass, a
        # requires_grad_() the script set); an efficient zero there refuses it.
        if type(var._grad._vc) is ZeroCounter:
            raise RuntimeError(ZERO_IMMUTABLE)
        dst = var._grad.data_
        if dst.flags.writeable and dst.dtype == g.data_.dtype:
            dst += g.data_
            var._grad._vc[0] += 1
        else:
            var._grad = Tensor._make(dst + g.data_)


def _first_grad(var: Tensor, g: Tensor, create_graph: bool) -> Tensor:
    """A leaf's first `.grad`, with the version PyTorch's AccumulateGrad leaves on it:
    outside create_graph it adopts `g` itself when nothing else holds it and g is laid
    out as the leaf (g's version goes along: 1 for as_strided's or an index's gradient);
    otherwise it copies g into new memory laid out as the leaf (a copy_: version 1; a
    leaf that is not one dense block gets a contiguous clone, version 0)."""
    dense = _tensor_module._dense(var.data_)
    if not create_graph and _adopts(var, g):
        out = Tensor._make(np.array(g.data_, copy=True))
        version = g._vc[0]
    else:
        arr = np.empty_like(var.data_) if dense else np.empty(var.data_.shape, var.data_.dtype)
        arr[...] = g.data_
        out = Tensor._make(arr)
        version = 1 if dense else 0
    if type(out._vc) is list:  # (not an inference counter)
        out._vc[0] = version
    return out


def _adopts(var: Tensor, g: Tensor) -> bool:
    """Whether PyTorch's AccumulateGrad (outside create_graph) takes a first gradient as
    `.grad` itself: when the caller does not hold it and it obeys the layout contract."""
    return id(g) not in _held and _obeys_layout(g.data_, var.data_)


def _obeys_layout(g: np.ndarray, var: np.ndarray) -> bool:
    """PyTorch's obeys_layout_contract: a dense leaf's gradient has the leaf's strides on
    each dim of size > 1 (and no 0 stride on the others); any other leaf's is contiguous."""
    if not _tensor_module._dense(var):
        return g.flags.c_contiguous
    for n, gs, vs in zip(g.shape, g.strides, var.strides, strict=True):
        if (n != 1 and gs != vs) or (n == 1 and gs == 0):
            return False
    return True


def _post_accumulate_hooks(node: AccumulateGrad) -> None:
    """The leaf's post-accumulate-grad hooks, in order, each given the leaf."""
    var = node.variable
    if var is None or not var._post_acc_hooks:
        return
    for hook in list(var._post_acc_hooks):
        if hook(var) is not None:
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def silence_hooks(roots: Sequence[Node | None]) -> Callable[[], None]:
    """Switch off tensor hooks and retain_grad on every node reachable from `roots`,
    for a tool that differentiates a graph behind the script's back (a report's
    second derivatives, adcli check); returns the function that puts them back."""
    saved: list[tuple[Any, str, Any]] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for attr in ("pre_hooks", "retained"):
            val = getattr(node, attr)
            if val:
                saved.append((node, attr, val))
                setattr(node, attr, None)
        if isinstance(node, AccumulateGrad):
            var = node.variable
            if var is not None and var._hooks:
                saved.append((var, "_hooks", var._hooks))
                var._hooks = None
            if var is not None and var._post_acc_hooks:
                saved.append((var, "_post_acc_hooks", var._post_acc_hooks))
                var._post_acc_hooks = None
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)

    def restore() -> None:
        for obj, attr, val in saved:
            setattr(obj, attr, val)

    return restore
