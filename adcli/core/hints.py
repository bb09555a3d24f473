"""Notes for a learner's common mistakes: what went wrong, on which script lines.

PyTorch's own sentence stays the error (or warning); these functions add the
`note:` lines after it, naming the script's lines from the labels the session
attaches to tensors (`adcli.provenance`). They only read: tensors, labels, the
frames of a traceback and the script's text.

The "Did you mean" choice itself is adcli.lang.suggest.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable
from typing import Any

from adcli.autograd.node import AccumulateGrad
from adcli.autograd.tensor import Tensor
from adcli.lang.source import Source
from adcli.lang.suggest import suggest
from adcli.provenance import Label, label_of

__all__ = [
    "grad_off_line",
    "no_grad_note",
    "nonleaf_grad_note",
    "nonleaf_param_note",
    "shape_note",
    "keyword_note",
    "accumulated",
]

# ------------------------------------------------------------------ where things are


def _base(name: str | None) -> str | None:
    """`w` for `w@2` (the report's name for the second tensor bound to `w`)."""
    return name.split("@", 1)[0] if name else name


def _named(t: Tensor, fallback: str = "the tensor") -> str:
    lab = label_of(t)
    if lab is not None and lab.name:
        return _base(lab.name) or fallback
    if lab is not None and lab.expr:
        return lab.expr
    return fallback


def _line(lab: Label | None) -> str:
    return f" (line {lab.line})" if lab is not None and lab.line else ""


_GRAD_OFF = re.compile(r"\bno_grad\b|\binference_mode\b|set_grad_enabled\(\s*False")


def grad_off_line(source: Source | None, line: int) -> int | None:
    """The line of the `with torch.no_grad():` (or decorator) around `line`, if any."""
    if source is None or line < 1:
        return None
    text = source.line_text(line)
    indent = len(text) - len(text.lstrip())
    for n in range(line - 1, 0, -1):
        s = source.line_text(n)
        stripped = s.strip()
        if not stripped or stripped.startswith("#"):
            continue
        ind = len(s) - len(s.lstrip())
        if ind >= indent:
            continue
        indent = ind
        if stripped.startswith("with") and _GRAD_OFF.search(stripped):
            return n
        if stripped.startswith("def "):
            k = n - 1
            while k >= 1 and source.line_text(k).strip().startswith("@"):
                if _GRAD_OFF.search(source.line_text(k)):
                    return k
                k -= 1
        if ind == 0:
            break
    return None


def script_frame(exc: BaseException, codes: Any) -> types.FrameType | None:
    """The innermost frame of the script's own code in `exc`'s traceback."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            found = tb.tb_frame
        tb = tb.tb_next
    return found


def frame_locals(exc: BaseException, code_name: str) -> dict[str, Any] | None:
    """The locals of the innermost frame of function `code_name` in `exc`'s traceback."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == code_name:
            found = tb.tb_frame.f_locals
        tb = tb.tb_next
    return found


def visible_names(frame: types.FrameType | None) -> dict[str, Any]:
    """The names a script frame sees: its globals, then its locals over them."""
    if frame is None:
        return {}
    names = dict(frame.f_globals)
    if frame.f_locals is not frame.f_globals:
        names.update(frame.f_locals)
    return names


# ------------------------------------------------------------------ does not require grad

_NAME = re.compile(r"(?<![.\w])([A-Za-z_]\w*)")
_DETACHED = re.compile(r"\.detach\(\s*\)|\.detach_\(\s*\)|\.data\b")
_NO_GRAD_SENTENCE = "does not require grad and does not have a grad_fn"
#: How many tensors the search behind a root looks at, at most.
_SEARCH_LIMIT = 200


def _inputs(t: Tensor, names: dict[str, Any]) -> list[Tensor]:
    """The tensors named in the expression that made `t` (as the script's names are now)."""
    lab = label_of(t)
    if lab is None or not lab.expr:
        return []
    out: list[Tensor] = []
    for n in dict.fromkeys(_NAME.findall(lab.expr)):
        v = names.get(n)
        if isinstance(v, Tensor) and v is not t:
            out.append(v)
    return out


def _causes(root: Tensor, names: dict[str, Any]) -> list[tuple[str, Tensor]]:
    """Why `root` does not require grad: ("no_grad" | "detach" | "leaf", tensor) each."""
    found: list[tuple[str, Tensor]] = []
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < _SEARCH_LIMIT:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.requires_grad:
            continue
        lab = label_of(t)
        if lab is None:
            continue
        if lab.no_grad:
            found.append(("no_grad", t))
            continue
        if _DETACHED.search(lab.expr or ""):
            found.append(("detach", t))
            continue
        inputs = _inputs(t, names)
        if not inputs:
            found.append(("leaf", t))
            continue
        stack.extend(reversed(inputs))
    return found


def no_grad_note(exc: BaseException, codes: Any, source: Source | None) -> list[str]:
    """The cause of "element 0 of tensors does not require grad and does not have a grad_fn"."""
    if _NO_GRAD_SENTENCE not in str(exc):
        return []
    local = frame_locals(exc, "_check_roots")
    root = local.get("r") if local else None
    if not isinstance(root, Tensor):
        return []
    names = visible_names(script_frame(exc, codes))
    rname = _named(root, "the tensor")
    rlab = label_of(root)
    causes = _causes(root, names)
    if not causes:
        return [
            f"{rname}{_line(rlab)} does not require grad: none of the tensors it was "
            "computed from has requires_grad=True"
        ]
    notes: list[str] = []
    leaves = [t for kind, t in causes if kind == "leaf"]
    for kind, t in causes:
        lab = label_of(t)
        name = _named(t)
        if kind == "no_grad":
            where = grad_off_line(source, lab.line) if lab is not None else None
            inside = f"inside torch.no_grad() (line {where})" if where else "with grad mode off"
            bare = _base(lab.name) if lab is not None else None
            if bare and re.search(rf"(?<![.\w]){re.escape(bare)}(?!\w)", lab.expr or ""):
                notes.append(
                    f"{bare} = {lab.expr} at line {lab.line} runs {inside}: it makes a new "
                    f"tensor that does not require grad and rebinds {bare} to it, so {bare} "
                    f"is no longer the leaf you differentiate; update it in place instead "
                    f"({bare} -= ...), which keeps it a leaf"
                )
            else:
                what = name if t is root else f"{name}, used to compute {rname},"
                notes.append(
                    f"{what} was computed at line {lab.line} {inside}, so it does not "
                    "require grad; compute it outside the no_grad block"
                )
        elif kind == "detach":
            what = name if t is root else f"{name}, used to compute {rname},"
            expr = lab.expr if lab is not None else ""
            notes.append(
                f"{what} comes from {expr} at line {lab.line}: a detached tensor does not "
                "require grad and gradients do not flow back through it"
            )
    if leaves:
        shown = [f"{_named(t)}{_line(label_of(t))}" for t in leaves[:3]]
        more = f" and {len(leaves) - 3} more" if len(leaves) > 3 else ""
        listed = _join(shown) + more
        verb = "was" if len(leaves) == 1 else "were"
        first = _named(leaves[0])
        notes.append(
            f"{rname}{_line(rlab)} was computed from tensors that do not require grad: "
            f"{listed} {verb} made without requires_grad=True; pass requires_grad=True "
            f"where you create them (or call {first}.requires_grad_() before using it)"
        )
    return notes[:4]


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------ non-leaf tensors


def _leaves_behind(t: Tensor, limit: int = 3) -> list[str]:
    """Names of the leaves the graph of `t` reaches (for "read their .grad instead")."""
    node = t._node
    if node is None:
        return []
    out: list[str] = []
    seen: set[int] = set()
    stack = [node]
    while stack and len(seen) < 10_000:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            v = n.variable
            lab = label_of(v) if v is not None else None
            if lab is not None and lab.name and _base(lab.name) not in out:
                out.append(_base(lab.name) or "")
            continue
        stack.extend(nxt for nxt, _ in reversed(n.next_functions) if nxt is not None)
    return out[:limit]


def nonleaf_grad_note(t: Tensor) -> str:
    """Why `.grad` of `t` is None: the line and operation that made it a non-leaf."""
    lab = label_of(t)
    name = _named(t, "this tensor")
    op = t._node.grad_fn_name if t._node is not None else "an operation"
    made = f"made at line {lab.line} by {lab.expr}" if lab is not None and lab.expr else "made"
    leaves = _leaves_behind(t)
    instead = f"read .grad of the leaf ({_join(leaves)})" if leaves else "read a leaf's .grad"
    if _rebinds_itself(lab):
        old = _leaf_named(t, name)
        earlier = f"made at line {old}" if old else "made earlier"
        return (
            f"{name} was rebound at line {lab.line} to {lab.expr}, the result of {op}: it is "
            f"no longer the leaf {earlier}, and backward() does not fill its .grad; update "
            f"the leaf in place inside torch.no_grad() ({name} -= ...) instead of rebinding it"
        )
    return (
        f"{name} is not a leaf: it was {made} ({op}), so backward() does not fill its .grad; "
        f"{instead}, or call {name}.retain_grad() before backward()"
    )


def _rebinds_itself(lab: Label | None) -> bool:
    """Is this the label of `w = w - ...`: a name bound again to a value computed from itself?"""
    if lab is None or not lab.name or "@" not in lab.name:
        return False
    bare = re.escape(_base(lab.name) or "")
    return re.search(rf"(?<![.\w]){bare}(?!\w)", lab.expr or "") is not None


def _leaf_named(t: Tensor, name: str) -> int | None:
    """The line of the leaf called `name` (or `name@k`) in the graph of `t`, if any."""
    node = t._node
    seen: set[int] = set()
    stack = [node] if node is not None else []
    while stack and len(seen) < 10_000:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            lab = label_of(n.variable) if n.variable is not None else None
            if lab is not None and _base(lab.name) == name:
                return lab.line
            continue
        stack.extend(nxt for nxt, _ in n.next_functions if nxt is not None)
    return None


def nonleaf_param_note(exc: BaseException) -> list[str]:
    """For "can't optimize a non-leaf Tensor": which tensor, and the line that made it."""
    if "can't optimize a non-leaf Tensor" not in str(exc):
        return []
    local = frame_locals(exc, "__init__")
    p = local.get("p") if local else None
    if not isinstance(p, Tensor) or p.is_leaf:
        return []
    lab = label_of(p)
    name = _named(p, "a parameter")
    op = p._node.grad_fn_name if p._node is not None else "an operation"
    if _rebinds_itself(lab):
        return [nonleaf_grad_note(p)]
    made = f" at line {lab.line} by {lab.expr}" if lab is not None and lab.expr else ""
    return [
        f"{name} was made{made} ({op}), so it is not a leaf; compute the value first, then "
        f"make it the leaf: {name} = ({lab.expr if lab else '...'}).detach().requires_grad_()"
    ]


# ------------------------------------------------------------------ accumulation


def accumulated(
    event: Any, state: dict[int, tuple[Any, int, list[int | None]]], line: int | None
) -> list[tuple[Tensor, int, list[int | None]]]:
    """Update `state` (leaf id -> (its .grad, passes summed in it, their lines)) after a
    backward pass; return the leaves whose .grad now sums two or more passes.

    A leaf's .grad sums earlier passes when it differs from the gradient that
    flowed into it in this one (after zero_grad(), zero_() or `= None` it equals it).
    """
    import numpy as np

    out = []
    for e in event.entries:
        node = e.node
        if not isinstance(node, AccumulateGrad) or e.hook_changed or not e.grads:
            continue
        t, flowed = node.variable, e.grads[0]
        if t is None or flowed is None or t._grad is None:
            continue
        if event.inputs is not None and not any(x is t for x in event.inputs):
            continue
        grad = t._grad.data_
        if grad.shape != flowed.data_.shape:
            continue
        prev = state.get(id(t))
        if np.array_equal(grad, flowed.data_, equal_nan=True) or prev is None:
            state[id(t)] = (t._grad, 1, [line])
            continue
        n, lines = prev[1] + 1, prev[2] + [line]
        state[id(t)] = (t._grad, n, lines)
        out.append((t, n, lines))
    return out


# ------------------------------------------------------------------ shapes

_MATMUL_SENTENCE = re.compile(
    r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)"
)
_OPERANDS = re.compile(
    r"^\s*(?P<a>[A-Za-z_][\w.]*)\s*@\s*(?P<b>[A-Za-z_][\w.]*)\s*$"
    r"|^\s*(?:torch\.)?(?:mm|matmul)\(\s*(?P<c>[A-Za-z_]\w*)\s*,\s*(?P<d>[A-Za-z_]\w*)\s*\)\s*$"
    r"|^\s*(?P<e>[A-Za-z_]\w*)\.(?:mm|matmul)\(\s*(?P<f>[A-Za-z_]\w*)\s*\)\s*$"
)


def _shape(t: Tensor) -> str:
    return "[" + ", ".join(str(int(s)) for s in t.data_.shape) + "]"


def _describe(name: str, t: Tensor) -> str:
    lab = label_of(t)
    where = f" (made at line {lab.line})" if lab is not None and lab.line else ""
    return f"{name} has shape {_shape(t)}{where}"


def shape_note(exc: BaseException, codes: Any, text: str | None) -> list[str]:
    """For a matrix product whose shapes do not fit: both shapes and where each came from."""
    m = _MATMUL_SENTENCE.search(str(exc))
    if m is None:
        return []
    k1, k2 = m.group(2), m.group(3)
    local = frame_locals(exc, "forward")
    layer = local.get("self") if local else None
    if layer is not None and type(layer).__name__ == "Linear":
        x = local.get("input")
        if isinstance(x, Tensor):
            lname = _module_name(layer, visible_names(script_frame(exc, codes)))
            return [
                f"{lname} is Linear(in_features={layer.in_features}, out_features="
                f"{layer.out_features}): its input's last dimension must be "
                f"{layer.in_features}, but {_describe(_named(x, 'the input'), x)}"
            ]
    names = visible_names(script_frame(exc, codes))
    op = _OPERANDS.match(text or "")
    if op is None:
        return [
            f"the left operand has {k1} columns but the right one has {k2} rows; they must be equal"
        ]
    a_name, b_name = [g for g in op.groups() if g is not None]
    a, b = _lookup(a_name, names), _lookup(b_name, names)
    parts = []
    for nm, t in ((a_name, a), (b_name, b)):
        parts.append(_describe(nm, t) if isinstance(t, Tensor) else f"{nm} is not known")
    hint = ""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dim() == 2 and b.dim() == 2:
        if a.shape[1] == b.shape[1]:
            hint = f" (did you mean {a_name} @ {b_name}.T?)"
        elif a.shape[0] == b.shape[0]:
            hint = f" (did you mean {a_name}.T @ {b_name}?)"
    return [
        f"{_join(parts)}; the last dimension of {a_name} ({k1}) must equal the first "
        f"dimension of {b_name} ({k2}){hint}"
    ]


def _lookup(dotted: str, names: dict[str, Any]) -> Any:
    """The value of a plain name (`w`); attribute chains are not evaluated."""
    if "." in dotted:
        head, _, attr = dotted.partition(".")
        return None if attr not in ("T", "mT") else _transposed(names.get(head))
    return names.get(dotted)


def _transposed(t: Any) -> Any:
    if isinstance(t, Tensor) and t.dim() == 2:
        return t.t()
    return None


def _module_name(module: Any, names: dict[str, Any]) -> str:
    """The script's name for a layer: `layer`, or `model.fc1` for a submodule."""
    from adcli.nn import Module

    for var, v in names.items():
        if v is module and not var.startswith("__") and "$" not in var:
            return var
    for var, v in names.items():
        if isinstance(v, Module) and "$" not in var and not var.startswith("__"):
            for path, sub in v.named_modules():
                if sub is module and path:
                    return f"{var}.{path}"
    return "the layer"


# ------------------------------------------------------------------ keyword arguments

_UNEXPECTED_KW = re.compile(
    r"^(?P<fn>[\w.]+)\(\) got an unexpected keyword argument '(?P<kw>\w+)'$"
)


def keyword_note(exc: BaseException, keywords: Iterable[str]) -> list[str]:
    """For "f() got an unexpected keyword argument 'x'": the keyword meant, if one is close."""
    m = _UNEXPECTED_KW.match(str(exc))
    if m is None:
        return []
    best = suggest(m.group("kw"), keywords)
    return [f"did you mean {best}=?"] if best else []
