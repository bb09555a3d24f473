"""The graph behind a tensor: a terminal tree, Graphviz DOT and Mermaid.

Nodes are labelled like the report (a tensor's variable name, else its
expression) and styled as torchviz draws them: leaves are light blue boxes with
name and shape, operations grey boxes with their grad_fn name, the root green.
DOT and Mermaid ids are `n0`, `n1`, ... in creation order (each leaf just
before the first operation that uses it) and edges are sorted, so the text is
stable enough for golden tests. Everything walks the graph with loops: a chain
of 100,000 nodes draws without touching the recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adcli.autograd.node import AccumulateGrad, Node
from adcli.autograd.tensor import Tensor
from adcli.provenance import Label
from adcli.provenance import label_of as _default_label_of

from .labels import data_line, grad_line
from .report import _no_gc, format_shape

LabelOf = Callable[[Any], "Label | None"]

#: Deeper levels of the terminal tree are not indented further.
MAX_INDENT = 12
#: A chain of similar single-input nodes longer than this is folded in the tree.
CHAIN_FOLD = 6
#: Nodes kept at each end of a folded chain.
CHAIN_KEEP = 2


@dataclass
class _Info:
    """What a drawing says about one node."""

    id: str
    name: str | None  # the tensor's name or expression, if known
    title: str  # what the node is called in the drawing
    shape: str
    is_leaf: bool
    is_root: bool = False
    data: str | None = None  # `data 2.0000` when drawing with Values
    grad: str | None = None  # `grad -3.0000`


@dataclass
class Values:
    """Label nodes with their values and gradients too, as micrograd's draw_dot does.

    `flowed` maps a node to the gradients that flowed into it in the last backward
    pass that went through it (a non-leaf keeps no `.grad`); `ran` says a backward
    pass ran at all, so that a node it missed is labelled `grad None`.
    """

    flowed: Mapping[Node, Sequence[Any]] = field(default_factory=dict)
    ran: bool = False


def _value_lines(
    node: Node, t: Tensor | None, lab: Label | None, values: Values
) -> tuple[str | None, str | None]:
    """The `data ...` and `grad ...` lines of one node."""
    data = t.data_ if t is not None else (lab.value if lab is not None else None)
    grad = None
    if t is not None and t._grad is not None:  # a leaf's .grad, or a retained one
        grad = t._grad.data_
    elif isinstance(node, AccumulateGrad):  # a leaf says what its .grad holds: None
        return data_line(data), grad_line(None)
    else:  # a non-leaf keeps no .grad: the gradient that flowed into it
        flowed = values.flowed.get(node)
        if flowed:
            g = flowed[0]
            grad = getattr(g, "data_", g)
    known = values.ran or grad is not None
    return data_line(data), grad_line(grad, known=known)


def _roots(t: Tensor | Sequence[Tensor]) -> list[Tensor]:
    return [t] if isinstance(t, Tensor) else list(t)


def _node_of(t: Tensor) -> Node | None:
    if t._node is not None:
        return t._node
    if t._requires_grad:
        return t._accumulator()
    return None


def _tensor_of(node: Node) -> Tensor | None:
    if isinstance(node, AccumulateGrad):
        return node.variable
    outs = node.outputs
    n = len(outs) if isinstance(outs, tuple) else 1
    for i in range(n):
        t = node.output_tensor(i)
        if t is not None and t._node is node:
            return t
    return None


def _collect(roots: list[Node]) -> list[Node]:
    """Every node reachable from the roots, each leaf just before its first user,
    operations in creation order."""
    seen: set[Node] = set()
    stack = list(roots)
    ops: list[Node] = []
    leaves: list[Node] = []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        (leaves if isinstance(node, AccumulateGrad) else ops).append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    ops.sort(key=lambda n: n.seq)
    order: list[Node] = []
    placed: set[Node] = set()
    for op in ops:
        for nxt, _ in op.next_functions:
            if isinstance(nxt, AccumulateGrad) and nxt not in placed:
                placed.add(nxt)
                order.append(nxt)
        order.append(op)
    order += [leaf for leaf in leaves if leaf not in placed]
    return order


def _infos(
    order: list[Node], roots: list[Node], label_of: LabelOf, values: Values | None = None
) -> dict[Node, _Info]:
    infos: dict[Node, _Info] = {}
    # shape and dtype of outputs no longer alive, from what their users recorded
    metas: dict[Node, Any] = {}
    for node in order:
        for (nxt, _), meta in zip(node.next_functions, getattr(node, "in_meta", ()), strict=False):
            if nxt is not None and meta is not None and nxt not in metas:
                metas[nxt] = meta
    leaf_count = 0
    root_set = set(roots)
    shapes: dict[tuple[Any, Any], str] = {}  # text of each (shape, dtype), made once
    for i, node in enumerate(order):
        t = _tensor_of(node)
        lab = label_of(t) if t is not None else None
        if lab is None and not isinstance(node, AccumulateGrad):
            lab = label_of(node)  # a label kept on the grad_fn outlives the tensor
        name = (lab.name or lab.expr) if lab is not None else None
        shape = ""
        meta = metas.get(node) if t is None else (t.data_.shape, t.data_.dtype)
        if meta is not None:
            key = (tuple(meta[0]), meta[1])
            shape = shapes.get(key)  # type: ignore[assignment]
            if shape is None:
                shape = format_shape(meta[0])
                if meta[1].name != "float32":
                    shape += " " + meta[1].name
                shapes[key] = shape
        leaf = isinstance(node, AccumulateGrad)
        if leaf:
            if name is None:
                leaf_count += 1
                name_shown = f"leaf#{leaf_count}"
            else:
                name_shown = name
            title = name_shown
        else:
            title = node.grad_fn_name
        info = _Info(f"n{i}", name, title, shape, leaf, node in root_set)
        if values is not None:
            info.data, info.grad = _value_lines(node, t, lab, values)
        infos[node] = info
    return infos


# ------------------------------------------------------------------ terminal tree


def _line(info: _Info) -> str:
    extra = "".join(f"  {x}" for x in (info.data, info.grad) if x)
    if info.is_leaf:
        return f"{info.title}  leaf  {info.shape}".rstrip() + extra
    named = f" → {info.name}" if info.name else ""
    return f"{info.title}{named}  {info.shape}".rstrip() + extra


def _graph_tree(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    *,
    full: bool = False,
    values: Values | None = None,
) -> str:
    """The graph behind `t` as a tree, root first; a node reached again is shown
    once more as `(see above)` without its inputs. Long chains of similar
    single-input nodes are folded unless `full`."""
    tensors = _roots(t)
    lines: list[str] = []
    root_nodes: list[Node] = []
    for x in tensors:
        node = _node_of(x)
        if node is None:
            lab = label_of(x)
            name = (lab.name or lab.expr) if lab is not None else "tensor"
            data = f"  {data_line(x.data_)}" if values is not None else ""
            shape = format_shape(x.data_.shape)
            lines.append(f"{name}  {shape}{data}  (no graph: requires_grad=False)")
        else:
            root_nodes.append(node)
    if not root_nodes:
        return "\n".join(lines) + "\n"
    infos = _infos(_collect(root_nodes), root_nodes, label_of, values)
    shown: set[Node] = set()
    pending: list[Node] = []  # subtrees too deep to indent: drawn again from column 0
    starts = list(dict.fromkeys(root_nodes))
    k = 0
    while k < len(starts) + len(pending):
        if k < len(starts):
            _draw(starts[k], "", infos, shown, pending, lines, full)
        else:
            j = k - len(starts)
            lines.append("")
            _draw(pending[j], f"[{j + 1}] ", infos, shown, pending, lines, full)
        k += 1
    return "\n".join(lines) + "\n"


def _draw(
    top: Node,
    label: str,
    infos: dict[Node, _Info],
    shown: set[Node],
    pending: list[Node],
    lines: list[str],
    full: bool,
) -> None:
    """Draw the tree below `top` (already marked shown when it is a continuation)."""
    # (node or folded text, prefix for this line, prefix for its children, depth)
    stack: list[tuple[Node | str, str, str, int]] = [(top, label, "", 0)]
    while stack:
        node, head, rest, depth = stack.pop()
        if isinstance(node, str):  # a folded stretch
            lines.append(head + node)
            continue
        info = infos[node]
        if node in shown and depth > 0:
            lines.append(f"{head}{_line(info)}  (see above)")
            continue
        shown.add(node)
        children = [nxt for nxt, _ in node.next_functions if nxt is not None]
        if depth >= MAX_INDENT and children:
            pending.append(node)
            lines.append(f"{head}{_line(info)}  (continued below as [{len(pending)}])")
            continue
        lines.append(head + _line(info))
        todo: list[tuple[Node | str, str, str, int]] = []
        for i, child in enumerate(children):
            last = i == len(children) - 1
            h = rest + ("└── " if last else "├── ")
            r = rest + ("    " if last else "│   ")
            if not full and len(children) == 1:
                chain = _chain(child, infos, shown)
                if len(chain) > CHAIN_FOLD:
                    # show the first nodes, fold the middle, go on from the last ones
                    folded = chain[CHAIN_KEEP:-CHAIN_KEEP]
                    shown.update(chain[:CHAIN_KEEP])
                    shown.update(folded)
                    for text in [_line(infos[n]) for n in chain[:CHAIN_KEEP]] + [
                        f"… {len(folded)} similar nodes"
                    ]:
                        todo.append((text, h, r, depth + 1))
                        h, r = r + "└── ", r + "    "
                    todo.append((chain[-CHAIN_KEEP], h, r, depth + 1))
                    continue
            todo.append((child, h, r, depth + 1))
        stack.extend(reversed(todo))


def _chain(start: Node, infos: dict[Node, _Info], shown: set[Node]) -> list[Node]:
    """The run of single-input nodes like `start` that hang below it."""
    key = (start.grad_fn_name, infos[start].shape)
    chain = [start]
    node = start
    while True:
        children = [nxt for nxt, _ in node.next_functions if nxt is not None]
        if len(children) != 1:
            break
        nxt = children[0]
        if nxt in shown or nxt in chain[-1:] or (nxt.grad_fn_name, infos[nxt].shape) != key:
            break
        chain.append(nxt)
        node = nxt
    return chain


# ------------------------------------------------------------------ DOT and Mermaid


def _graph(
    t: Tensor | Sequence[Tensor], label_of: LabelOf, values: Values | None = None
) -> tuple[list[_Info], list[tuple[int, int]]]:
    tensors = _roots(t)
    root_nodes = [n for n in (_node_of(x) for x in tensors) if n is not None]
    order = _collect(root_nodes)
    infos = _infos(order, root_nodes, label_of, values)
    index = {node: i for i, node in enumerate(order)}
    edges = sorted(
        (index[nxt], index[node])
        for node in order
        for nxt, _ in node.next_functions
        if nxt is not None
    )
    nodes = [infos[n] for n in order]
    extra = len(nodes)
    for x in tensors:
        if _node_of(x) is None:  # a tensor without a graph: one plain box
            lab = label_of(x)
            name = (lab.name or lab.expr) if lab is not None else "tensor"
            info = _Info(f"n{extra}", name, name, format_shape(x.data_.shape), True, True)
            if values is not None:
                info.data = data_line(x.data_)
            nodes.append(info)
            extra += 1
    return nodes, edges


def _box_lines(info: _Info) -> list[str]:
    lines = [info.title]
    if info.name and not info.is_leaf:
        lines.append(info.name)
    # with values shown, a float32 scalar's `[]` says nothing more
    if info.shape and not (info.shape == "[]" and info.data):
        lines.append(info.shape)
    lines += [x for x in (info.data, info.grad) if x]
    return lines


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _graph_dot(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    values: Values | None = None,
) -> str:
    nodes, edges = _graph(t, label_of, values)
    out = [
        "digraph adcli {",
        '  node [shape=box, style="filled,rounded", fontname="monospace", fontsize=10];',
    ]
    for info in nodes:
        label = "\\n".join(_dot_escape(s) for s in _box_lines(info))
        if info.is_leaf:
            color = "lightblue"
        else:
            color = "darkolivegreen1" if info.is_root else "lightgrey"
        out.append(f'  {info.id} [label="{label}", fillcolor={color}];')
    for a, b in edges:
        out.append(f"  n{a} -> n{b};")
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_escape(s: str) -> str:
    return s.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _graph_mermaid(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    values: Values | None = None,
) -> str:
    nodes, edges = _graph(t, label_of, values)
    out = ["flowchart TB"]
    for info in nodes:
        label = "<br/>".join(_mermaid_escape(s) for s in _box_lines(info))
        out.append(f'  {info.id}["{label}"]')
    for a, b in edges:
        out.append(f"  n{a} --> n{b}")
    out.append("  classDef leaf fill:#add8e6,stroke:#4a708b,color:#000")
    out.append("  classDef op fill:#d3d3d3,stroke:#696969,color:#000")
    out.append("  classDef root fill:#caff70,stroke:#696969,color:#000")
    for cls in ("leaf", "op", "root"):
        ids = [i.id for i in nodes if _cls(i) == cls]
        if ids:
            out.append(f"  class {','.join(ids)} {cls}")
    return "\n".join(out) + "\n"


def _cls(info: _Info) -> str:
    if info.is_leaf:
        return "leaf"
    return "root" if info.is_root else "op"


def graph_tree(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    *,
    full: bool = False,
    values: Values | None = None,
) -> str:
    """The graph behind `t` as a tree, root first; a node reached again is shown
    once more as `(see above)` without its inputs. Long chains of similar
    single-input nodes are folded unless `full`; subtrees deeper than MAX_INDENT
    levels are drawn again below, from the left margin, as `[1]`, `[2]`, ..."""
    with _no_gc():
        return _graph_tree(t, label_of, full=full, values=values)


def graph_dot(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    values: Values | None = None,
) -> str:
    """Graphviz DOT text of the graph behind `t` (edges point from input to user);
    with `values`, each box also shows the node's value and gradient."""
    with _no_gc():
        return _graph_dot(t, label_of, values)


def graph_mermaid(
    t: Tensor | Sequence[Tensor],
    label_of: LabelOf = _default_label_of,
    values: Values | None = None,
) -> str:
    """Mermaid flowchart text of the graph behind `t` (edges point from input to user);
    with `values`, each box also shows the node's value and gradient."""
    with _no_gc():
        return _graph_mermaid(t, label_of, values)
