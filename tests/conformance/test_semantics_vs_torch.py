"""Autograd semantics compared with PyTorch, scenario by scenario.

Each scenario is a small script written once against a torch-like namespace `m`
(torch itself, or adcli's ops/engine/grad_mode) and a recorder `r`; it is run
with both libraries and the two transcripts must be equal line for line: reprs
(addresses masked), flags, gradients, `grad_fn` names, `next_functions`, error
types and messages word for word, and the warnings emitted.

Covered: in-place ops (leaf and view-of-leaf errors, version-counter errors with
their exact clauses, grad_fn replacement on non-leaves, CopySlices, in-place on a
view of a non-leaf, detach/.data), retain_graph, retain_grad, hooks, the
backward()/autograd.grad() options (gradient=, inputs=, allow_unused,
materialize_grads), non-scalar roots, requires_grad/detach/no_grad rules,
graph structure, create_graph chains and subgradients at kinks.
"""

from __future__ import annotations

import re
import types
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from adcli.autograd import engine, grad_mode
from adcli.autograd import ops as T
from adcli.autograd.config import _default_warn, config

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

torch.set_num_threads(1)


# ************************************************************ the two libraries


class _Torch:
    F = torch.nn.functional
    autograd = torch.autograd
    name = "torch"

    def __getattr__(self, item: str) -> Any:
        return getattr(torch, item)


class _Ad:
    F = T
    autograd = types.SimpleNamespace(grad=engine.grad, backward=engine.backward)
    name = "adcli"
    float32 = T.dtypes.float32
    float64 = T.dtypes.float64
    no_grad = grad_mode.no_grad
    enable_grad = grad_mode.enable_grad
    set_grad_enabled = grad_mode.set_grad_enabled
    is_grad_enabled = staticmethod(grad_mode.is_grad_enabled)

    def __getattr__(self, item: str) -> Any:
        return getattr(T, item)


TM, AM = _Torch(), _Ad()


@pytest.fixture(autouse=True)
def _python_warnings() -> Any:
    """adcli's warnings go through Python's warnings module here (a host may have
    routed them elsewhere)."""
    saved = config.warn
    config.warn = _default_warn
    yield
    config.warn = saved


_ADDR = re.compile(r"0x[0-9a-fA-F]+")


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "grad_fn") and hasattr(v, "requires_grad") and hasattr(v, "is_leaf")


def fmt(v: Any) -> str:
    """A library-neutral text for a value (addresses masked)."""
    if isinstance(v, (tuple, list)):
        inner = ", ".join(fmt(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, float):
        return repr(round(v, 5))
    return _ADDR.sub("0x...", repr(v))


def fmt_exc(e: BaseException) -> str:
    kind = "RuntimeError" if isinstance(e, RuntimeError) else type(e).__name__
    return f"{kind}: {e}"


class Rec:
    """What a scenario observed, line by line."""

    def __init__(self, m: Any) -> None:
        self.m = m
        self.lines: list[str] = []

    def __call__(self, *values: Any) -> None:
        self.lines.append(" | ".join(fmt(v) for v in values))

    def err(self, fn: Callable[[], Any]) -> Any:
        """Run fn; record the error (type and exact text) or 'ok'."""
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001
            self.lines.append(fmt_exc(e))
            return None
        self.lines.append("ok")
        return out

    def flags(self, t: Any) -> None:
        """requires_grad, is_leaf, grad_fn name of a tensor."""
        name = None if t.grad_fn is None else t.grad_fn.name()
        self.lines.append(f"rg={t.requires_grad} leaf={t.is_leaf} fn={name}")

    def graph(self, t: Any) -> None:
        """The whole graph under t (names, None edges, output indices)."""
        self.lines.append(repr(_sig(t.grad_fn)))

    def grad(self, t: Any) -> None:
        """t.grad, reading it with warnings recorded."""
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g = t.grad
        self.lines.append(fmt(g))
        for x in w:
            self.lines.append(f"warning: {x.category.__name__}: {x.message}")


def _sig(node: Any, depth: int = 12) -> Any:
    if node is None:
        return None
    if depth == 0:
        return "..."
    return (node.name(),) + tuple((_sig(n, depth - 1), nr) for n, nr in node.next_functions)


def run(m: Any, scenario: Callable[[Any, Rec], None]) -> list[str]:
    r = Rec(m)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            scenario(m, r)
        except Exception as e:  # noqa: BLE001
            r.lines.append("uncaught " + fmt_exc(e))
    for x in w:
        msg = str(x.message)
        if msg.startswith(CREATE_GRAPH_WARNING):
            continue  # PyTorch warns once per process: see test_create_graph_warning
        if "Triggered internally" in msg and "TensorBody" not in msg:
            msg = msg.split(" (Triggered internally")[0]
        r.lines.append(f"warning: {x.category.__name__}: {msg}")
    return r.lines


CREATE_GRAPH_WARNING = "Using backward() with create_graph=True will create a reference cycle"


def check(scenario: Callable[[Any, Rec], None]) -> None:
    expected = run(TM, scenario)
    actual = run(AM, scenario)
    for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
        assert a == e, f"line {i}:\nadcli: {a}\ntorch: {e}\n(torch transcript: {expected})"
    assert len(actual) == len(expected), f"adcli {actual}\ntorch {expected}"


SCENARIOS: dict[str, Callable[[Any, Rec], None]] = {}


def scenario(fn: Callable[[Any, Rec], None]) -> Callable[[Any, Rec], None]:
    SCENARIOS[fn.__name__] = fn
    return fn


# ************************************************************ in-place: leaves


@scenario
def leaf_inplace_errors(m: Any, r: Rec) -> None:
    x = m.ones(3, requires_grad=True)

    def iadd() -> None:
        nonlocal x
        x += 1

    def setitem() -> None:
        x[0] = 5

    for f in (
        lambda: x.add_(1),
        iadd,
        lambda: x.mul_(2),
        lambda: x.zero_(),
        lambda: x.fill_(1.0),
        lambda: x.sub_(1),
        lambda: x.div_(2),
        lambda: x.pow_(2),
        lambda: x.copy_(m.zeros(3)),
        lambda: x.exp_(),
        setitem,
        lambda: x[:2].add_(1),
        lambda: x[1].mul_(2),
        lambda: x.view(3).zero_(),
    ):
        r.err(f)
    r(x, x.is_leaf, x._version)
    r.err(lambda: x.data.add_(1))
    r(x, x.is_leaf, x.grad_fn)


@scenario
def leaf_inplace_under_no_grad(m: Any, r: Rec) -> None:
    w = m.ones(3, requires_grad=True)
    with m.no_grad():
        w -= 0.1 * m.tensor([1.0, 2.0, 3.0])
    r(w, w.is_leaf, w.grad_fn, w._version)
    with m.no_grad():
        w.add_(1)
        w[0] = 7.0
    r(w, w.requires_grad, w._version)
    (w * w).sum().backward()
    r.grad(w)


@scenario
def update_without_no_grad(m: Any, r: Rec) -> None:
    w = m.tensor([1.0], requires_grad=True)
    (w * w).sum().backward()

    def upd() -> None:
        nonlocal w
        w -= 0.1 * w.grad

    r.err(upd)
    w2 = w - 0.1 * w.grad
    r(w2, w2.is_leaf)
    r.grad(w2)


@scenario
def leaf_without_grad_becomes_nonleaf(m: Any, r: Rec) -> None:
    a = m.ones(2)
    b = m.tensor([2.0, 3.0], requires_grad=True)
    r.flags(a)
    a.mul_(b)
    r(a)
    r.flags(a)
    a.sum().backward()
    r.grad(b)
    c = m.zeros(3)
    c[1] = b[0]
    r(c)
    r.flags(c)
    r.graph(c)
    z = m.zeros(2, 3)
    v = z[:, 1:]
    v.add_(b)
    r(z, v)
    r.flags(z)
    r.flags(v)
    r.graph(z)
    r.graph(v)
    (z * z).sum().backward()
    r.grad(b)


# ************************************************************ in-place: version counter


@scenario
def version_counter_saved_input(m: Any, r: Rec) -> None:
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    c = b * b
    r(b._version)
    b.add_(1)
    r(b._version)
    r.err(lambda: c.sum().backward())


@scenario
def version_counter_saved_output(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y += 1
    r.err(lambda: y.sum().backward())
    x2 = m.tensor([1.0, 2.0], requires_grad=True)
    s = m.sigmoid(x2)
    s.mul_(2)
    r.err(lambda: s.sum().backward())
    t = x2.tanh()
    t.add_(1)
    t.add_(1)
    r.err(lambda: t.sum().backward())


@scenario
def version_counter_variants(m: Any, r: Rec) -> None:
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = a * a
    a.detach().add_(1)
    r.err(lambda: c.sum().backward())
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    c = b * b
    b.mul_(3)
    b.add_(1)
    r.err(lambda: c.sum().backward())
    a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = a * 2
    c = b @ b

    def setitem() -> None:
        b[0, 0] = 5

    setitem()
    r.err(lambda: c.sum().backward())
    a = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    b = a * 2
    c = b * b
    b.add_(1)
    r.err(lambda: c.sum().backward())
    a = m.tensor(2.0, requires_grad=True)
    b = a * 2
    c = b * b
    b.add_(1)
    r.err(lambda: c.backward())
    # modified through a view of the saved tensor
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    c = b.exp()
    b[1:].mul_(2)
    r(b._version)
    r.err(lambda: (c * b).sum().backward())


@scenario
def version_counter_detach_and_data(m: Any, r: Rec) -> None:
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid()
    c = b.detach()
    c.zero_()
    r(b._version, c._version)
    r.err(lambda: b.sum().backward())
    a2 = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b2 = a2.sigmoid()
    b2.data.zero_()
    b2.sum().backward()
    r.grad(a2)
    a3 = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b3 = a3 * a3
    a3.data.mul_(10)
    b3.sum().backward()
    r.grad(a3)
    r(a3)


@scenario
def inplace_safe_when_not_saved(m: Any, r: Rec) -> None:
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    c = b + 1
    b.add_(100)
    c.sum().backward()
    r.grad(a)
    r(b.grad_fn, b._version)
    # in-place ops that save the original self (PyTorch keeps it) are fine
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x + 1
    y.mul_(x)
    y.pow_(2)
    y.div_(x)
    y.sum().backward()
    r.grad(x)
    r(y._version)


@scenario
def inplace_same_tensor_twice(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.mul_(y)
    r(y)
    r.err(lambda: y.sum().backward())


# ************************************************************ in-place: grad_fn replacement


def _inplace_ops(m: Any) -> list[tuple[str, Callable[[Any, Any, Any, Any], Any]]]:
    def setitem(y: Any, i: Any, v: Any) -> None:
        y[i] = v

    return [
        ("add_", lambda y, x, w, s: y.add_(1)),
        ("iadd", lambda y, x, w, s: y.__iadd__(1)),
        ("add_w", lambda y, x, w, s: y.add_(w)),
        ("add_alpha", lambda y, x, w, s: y.add_(w, alpha=2)),
        ("mul_", lambda y, x, w, s: y.mul_(2)),
        ("imul_w", lambda y, x, w, s: y.__imul__(w)),
        ("sub_", lambda y, x, w, s: y.sub_(1)),
        ("isub_w", lambda y, x, w, s: y.__isub__(w)),
        ("div_", lambda y, x, w, s: y.div_(2)),
        ("itruediv_w", lambda y, x, w, s: y.__itruediv__(w)),
        ("pow_", lambda y, x, w, s: y.pow_(2)),
        ("exp_", lambda y, x, w, s: y.exp_()),
        ("relu_", lambda y, x, w, s: y.relu_()),
        ("clamp_", lambda y, x, w, s: y.clamp_(0, 1)),
        ("zero_", lambda y, x, w, s: y.zero_()),
        ("fill_", lambda y, x, w, s: y.fill_(1)),
        ("fill_tensor", lambda y, x, w, s: y.fill_(s)),
        ("setitem_number", lambda y, x, w, s: setitem(y, 0, 5)),
        ("setitem_tensor", lambda y, x, w, s: setitem(y, 0, s)),
        ("setitem_slice", lambda y, x, w, s: setitem(y, slice(1, None), w[:2])),
        ("setitem_mask", lambda y, x, w, s: setitem(y, y > 0, 0.0)),
        ("neg_", lambda y, x, w, s: y.neg_()),
        ("sigmoid_", lambda y, x, w, s: y.sigmoid_()),
        ("tanh_", lambda y, x, w, s: y.tanh_()),
        ("copy_", lambda y, x, w, s: y.copy_(w)),
        ("copy_bcast", lambda y, x, w, s: y.copy_(s)),
        ("masked_fill_", lambda y, x, w, s: y.masked_fill_(w > 1, 0.5)),
    ]


@pytest.mark.parametrize("op", [name for name, _ in _inplace_ops(TM)])
def test_inplace_on_nonleaf_replaces_grad_fn(op: str) -> None:
    def sc(m: Any, r: Rec) -> None:
        fn = dict(_inplace_ops(m))[op]
        x = m.tensor([1.0, -2.0, 3.0], requires_grad=True)
        w = m.tensor([0.5, 0.25, 2.0], requires_grad=True)
        s = m.tensor(2.0, requires_grad=True)
        y = x * 1.0
        ident = id(y)
        fn(y, x, w, s)
        r(y, id(y) == ident, y._version)
        r.flags(y)
        r.graph(y)
        r.err(lambda: (y * m.tensor([1.0, 2.0, 3.0])).sum().backward())
        r.grad(x)
        r.grad(w)
        r.grad(s)

    check(sc)


@scenario
def inplace_sequence_on_nonleaf(m: Any, r: Rec) -> None:
    a = m.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    r(b.grad_fn)
    b.add_(1)
    r(b.grad_fn, b)
    b.mul_(3)
    r(b.grad_fn, b)
    b += 1
    r(b.grad_fn, b)
    b.sum().backward()
    r.grad(a)


@scenario
def inplace_identity(m: Any, r: Rec) -> None:
    a = m.ones(2)
    alias = a
    a += 1
    r(a, alias, a is alias, a._version)
    a = a + 1
    r(a, alias, a is alias)
    x = m.ones(2, requires_grad=True)
    y = x * 2
    yid = id(y)
    y += 1
    r(id(y) == yid, y.grad_fn, y._version)
    y = y + 1
    r(id(y) == yid, y.grad_fn)


# ************************************************************ in-place on views


@scenario
def inplace_on_view_of_nonleaf(m: Any, r: Rec) -> None:
    x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x * 1
    v = y[0]
    r.flags(v)
    v.mul_(2)
    r(y, v)
    r.flags(y)
    r.flags(v)
    r.graph(y)
    r.graph(v)
    r(y._version, v._version)
    (y * m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    r.grad(x)


@scenario
def inplace_on_view_with_tensor_operand(m: Any, r: Rec) -> None:
    x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = m.tensor([0.5, -1.0], requires_grad=True)
    y = x.exp()
    v = y[:, 1]
    r.err(lambda: v.add_(w))
    r.graph(y)
    r.graph(v)
    r.err(lambda: y.sum().backward())  # exp saved its result, now modified
    y2 = x * 1
    v2 = y2[:, 1:]
    v2.mul_(m.tensor([[2.0, 3.0]]))
    v2 += w[:, None]
    r(y2)
    r.graph(y2)
    r.graph(v2)
    (y2**2).sum().backward()
    r.grad(x)
    r.grad(w)


@scenario
def setitem_on_view_of_nonleaf(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    s = m.tensor(10.0, requires_grad=True)
    y = x * 2
    v = y[1:]
    v[0] = s
    r(y, v)
    r.flags(y)
    r.flags(v)
    r.graph(y)
    (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    r.grad(x)
    r.grad(s)


@scenario
def inplace_on_view_of_view(m: Any, r: Rec) -> None:
    x = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = y.t()[1]
    v.add_(10)
    r(y)
    r.flags(y)
    r.flags(v)
    r.graph(y)
    (y * y).sum().backward()
    r.grad(x)


@scenario
def inplace_on_view_of_leaf(m: Any, r: Rec) -> None:
    x = m.ones(3, requires_grad=True)
    v = x[:2]
    r.err(lambda: v.add_(1))
    r.err(lambda: x.view(3).mul_(2))
    r.err(lambda: x.t().zero_())

    def setitem() -> None:
        v[0] = 2

    r.err(setitem)
    r(x)
    with m.no_grad():
        v.add_(1)
    r(x, x._version, v._version)
    x2 = m.tensor([1.0, 2.0], requires_grad=True)

    def setmask() -> None:
        x2[x2 > 1] = 0.0

    r.err(setmask)


def test_view_grad_fn_regenerated_after_base_changes() -> None:
    def sc(m: Any, r: Rec) -> None:
        x = m.ones(3, requires_grad=True)
        v = x[:2]
        with m.no_grad():
            v.add_(1)
        r(v)
        r.flags(v)
        y = x * 1
        u = y[1:]
        y.mul_(2)
        r(u)
        r.flags(u)
        (u * u).sum().backward()
        r.grad(x)

    check(sc)


# ************************************************************ retain_graph


def _second_backward_graphs(m: Any) -> list[tuple[str, Callable[[Any], Any]]]:
    return [
        ("x+1", lambda x: (x + 1).sum()),
        ("x+x", lambda x: (x + x).sum()),
        ("x-1", lambda x: (x - 1).sum()),
        ("-x", lambda x: (-x).sum()),
        ("x*2", lambda x: (x * 2).sum()),
        ("x*x", lambda x: (x * x).sum()),
        ("x/2", lambda x: (x / 2).sum()),
        ("x**2", lambda x: (x**2).sum()),
        ("exp", lambda x: x.exp().sum()),
        ("sum", lambda x: x.sum()),
        ("mean", lambda x: x.mean()),
        ("relu", lambda x: x.relu().sum()),
        ("view", lambda x: x.view(-1).sum()),
        ("reshape", lambda x: x.reshape(2).sum()),
        ("select", lambda x: x[0]),
        ("cat", lambda x: m.cat([x, x]).sum()),
        ("t", lambda x: x.t().sum()),
        ("clone", lambda x: x.clone().sum()),
        ("dot", lambda x: x.dot(x)),
        ("sigmoid", lambda x: x.sigmoid().sum()),
        ("tanh", lambda x: x.tanh().sum()),
        ("abs", lambda x: x.abs().sum()),
        ("max", lambda x: x.max()),
        ("softmax", lambda x: x.softmax(0)[0]),
        ("expand", lambda x: x.expand(2, 2).sum()),
        ("norm", lambda x: x.norm()),
        ("index_list", lambda x: x[[0, 1]].sum()),
        ("index_mask", lambda x: x[x > 0].sum()),
        ("gather", lambda x: x.gather(0, m.tensor([1, 0])).sum()),
        ("max_dim", lambda x: x.max(0).values),
        ("min_dim", lambda x: x.min(0).values),
        ("where", lambda x: m.where(x > 1, x, 0.0).sum()),
        ("masked_fill", lambda x: x.masked_fill(x > 1, 0.0).sum()),
        ("masked_fill_tensor", lambda x: x.masked_fill(x > 1, m.tensor(0.0)).sum()),
        ("cumsum", lambda x: x.cumsum(0).sum()),
        ("repeat", lambda x: x.repeat(2).sum()),
        ("flip", lambda x: x.flip(0).sum()),
        ("split", lambda x: x.split(1)[0].sum()),
        ("unbind", lambda x: x.unbind()[0]),
        ("clamp", lambda x: x.clamp(0, 1.5).sum()),
        ("clamp_tensor", lambda x: x.clamp(m.tensor(0.0), None).sum()),
        ("sign", lambda x: x.sign().sum()),
        ("floor", lambda x: x.floor().sum()),
        ("round_decimals", lambda x: x.round(decimals=1).sum()),
        ("leaky_relu", lambda x: m.F.leaky_relu(x).sum()),
        ("softplus", lambda x: m.F.softplus(x).sum()),
        ("amax", lambda x: x.amax()),
        ("logsumexp", lambda x: x.logsumexp(0)),
        ("var", lambda x: x.var()),
        ("std", lambda x: x.std()),
        ("prod", lambda x: x.prod()),
        ("mse_loss", lambda x: m.F.mse_loss(x, m.zeros(2))),
        ("stack", lambda x: m.stack([x, x]).sum()),
        ("permute", lambda x: x.permute(0).sum()),
        ("squeeze", lambda x: x.unsqueeze(0).squeeze(0).sum()),
        ("double", lambda x: x.double().sum()),
        ("maximum", lambda x: m.maximum(x, m.ones(2)).sum()),
        ("pow_tensor", lambda x: (x**x).sum()),
        ("rpow", lambda x: (2**x).sum()),
        ("rsub", lambda x: (1 - x).sum()),
        ("log_softmax", lambda x: x.log_softmax(0)[0]),
        ("nll_loss", lambda x: m.F.nll_loss(x.unsqueeze(0), m.tensor([1]))),
        ("cross_entropy", lambda x: m.F.cross_entropy(x.unsqueeze(0), m.tensor([1]))),
        ("mm_const", lambda x: (x.unsqueeze(0) @ m.ones(2, 2)).sum()),
        ("mv_const", lambda x: (m.ones(2, 2) @ x).sum()),
        ("dot_const", lambda x: x.dot(m.ones(2))),
        ("rdiv", lambda x: (m.ones(2) / x).sum()),
        ("div_const", lambda x: (x / m.tensor([2.0, 3.0])).sum()),
        ("mul_const", lambda x: (x * m.tensor([2.0, 3.0])).sum()),
        ("linear", lambda x: m.F.linear(x, m.ones(3, 2), m.ones(3)).sum()),
        ("bce", lambda x: m.F.binary_cross_entropy(x.sigmoid(), m.ones(2))),
        ("norm_p1", lambda x: x.norm(1)),
        ("sqrt", lambda x: x.sqrt().sum()),
        ("chunk", lambda x: x.chunk(2)[0].sum()),
        ("mean_dim", lambda x: x.mean(0)),
        ("sum_dim", lambda x: x.sum(0)),
    ]


@pytest.mark.parametrize("graph", [name for name, _ in _second_backward_graphs(TM)])
def test_second_backward(graph: str) -> None:
    def sc(m: Any, r: Rec) -> None:
        f = dict(_second_backward_graphs(m))[graph]
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = f(x)
        y.backward()
        r.err(lambda: y.backward())
        r.grad(x)
        y = f(x)
        y.backward(retain_graph=True)
        y.backward()
        r.grad(x)
        r.err(lambda: m.autograd.grad(f(x), x, retain_graph=False) and None)

    check(sc)


@scenario
def retain_graph_two_roots(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    a = (h * 2).sum()
    b = (h * 3).sum()
    a.backward()
    r.err(lambda: b.backward())
    x.grad = None
    h = x.exp()
    a = (h * 2).sum()
    b = (h * 3).sum()
    a.backward(retain_graph=True)
    b.backward()
    r.grad(x)


@scenario
def autograd_grad_retain_default(m: Any, r: Rec) -> None:
    x = m.tensor(3.0, requires_grad=True)
    y = x.exp()
    r(m.autograd.grad(y, x))
    r.err(lambda: m.autograd.grad(y, x))
    y = x.exp()
    r(m.autograd.grad(y, x, create_graph=True))
    r(m.autograd.grad(y, x))
    r.grad(x)


# ************************************************************ retain_grad and .grad of non-leaves


@scenario
def retain_grad_accumulates(m: Any, r: Rec) -> None:
    x = m.tensor(1.0, requires_grad=True)
    y = x * 3
    y.retain_grad()
    r(y.retains_grad, x.retains_grad)
    z = y * y
    z.backward(retain_graph=True)
    r.grad(y)
    r.grad(x)
    z.backward(retain_graph=True)
    r.grad(y)
    r.grad(x)
    z.retain_grad()
    z.backward()
    r.grad(y)
    r.grad(z)
    r.grad(x)
    y2 = x * 3
    r.grad(y2)
    (y2 * 2).backward()
    r.grad(y2)


@scenario
def retain_grad_root_and_leaf(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    r(x.retains_grad)
    y = x * 2
    y.retain_grad()
    y.retain_grad()
    y.backward(m.tensor([1.0, 0.5]))
    r.grad(y)
    r.grad(x)
    c = m.ones(2)
    r.err(lambda: c.retain_grad())
    r.grad(c)


@scenario
def nonleaf_grad_warning(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    r.grad(x)
    y = x * 2
    r.grad(y)
    y.sum().backward()
    r.grad(y)
    r.grad(x)
    d = x.detach()
    r.grad(d)


# ************************************************************ hooks


@scenario
def hooks_see_and_replace(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: r("hook on y got", g))
    (y * y).sum().backward()
    r.grad(x)
    r(type(h).__name__)
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: g * 100)
    (y * y).sum().backward()
    r.grad(x)
    x.grad = None
    x.register_hook(lambda g: g * 0 + 7)
    (x**2).sum().backward()
    r.grad(x)


@scenario
def hooks_order_and_remove(m: Any, r: Rec) -> None:
    x = m.tensor(1.0, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: (r("h1", g), g + 1)[1])
    h2 = y.register_hook(lambda g: (r("h2", g), g * 10)[1])
    y.backward(retain_graph=True)
    r.grad(x)
    h2.remove()
    h2.remove()
    x.grad = None
    y.backward()
    r.grad(x)


@scenario
def hooks_and_retain_grad(m: Any, r: Rec) -> None:
    x = m.tensor(1.0, requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 100)
    (y * 2).backward()
    r.grad(y)
    r.grad(x)
    x2 = m.tensor(1.0, requires_grad=True)
    y2 = x2 * 3
    y2.register_hook(lambda g: g * 100)
    y2.retain_grad()
    (y2 * 2).backward()
    r.grad(y2)
    r.grad(x2)


@scenario
def hook_errors(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: m.ones(3))
    r.err(lambda: y.sum().backward())

    def named_hook(g: Any) -> Any:
        return g[:1]

    y = x * 2
    y.register_hook(named_hook)
    r.err(lambda: y.sum().backward())
    c = m.ones(2)
    r.err(lambda: c.register_hook(lambda g: g))


@scenario
def hook_called_once_with_sum(m: Any, r: Rec) -> None:
    x = m.tensor(2.0, requires_grad=True)
    y = x * 1.5
    calls = []
    y.register_hook(lambda g: calls.append(g.clone()))
    z = y * y + y
    z.backward()
    r(calls)
    r.grad(x)


@scenario
def node_hooks(m: Any, r: Rec) -> None:
    x = m.tensor(2.0, requires_grad=True)
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: r("node hook in:", gi, "out:", go))
    y.grad_fn.register_prehook(lambda go: r("node prehook:", go))
    y.backward()
    r.grad(x)


# ************************************************************ backward() / grad() options


@scenario
def non_scalar_roots(m: Any, r: Rec) -> None:
    x = m.ones(3, requires_grad=True)
    y = x * 2
    r.err(lambda: y.backward())
    r.err(lambda: y.backward(m.ones(2)))
    r.err(lambda: m.autograd.grad(y, x))
    r.err(lambda: m.autograd.grad(y, x, grad_outputs=m.ones(2, 2)))
    y.backward(m.tensor([1, 1, 2]))
    r.grad(x)
    r(x.grad.dtype)
    x2 = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y2 = x2**2
    y2.backward(m.tensor([1.0, 0.1, 0.01]))
    r.grad(x2)
    s = m.tensor(2.0, requires_grad=True)
    (s**2).backward(m.tensor(3.0))
    r.grad(s)
    s.grad = None
    z = m.zeros(1, requires_grad=True)
    (z * 3).backward()
    r.grad(z)


@scenario
def multiple_roots(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = x**2
    m.autograd.backward([a, b], grad_tensors=[m.ones(2), m.tensor([1.0, 0.5])])
    r.grad(x)
    r(m.autograd.grad([(x * x).sum(), (x**3).sum()], x))
    w = m.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    r(m.autograd.grad(y, [x, w], grad_outputs=m.ones(2), retain_graph=True))
    r(m.autograd.grad(y, x, grad_outputs=m.tensor([1.0, 0.0])))


@scenario
def unused_inputs(m: Any, r: Rec) -> None:
    x = m.tensor(2.0, requires_grad=True)
    u = m.tensor(5.0, requires_grad=True)
    k = m.tensor(3.0)
    y = x * x
    r.err(lambda: m.autograd.grad(y, [x, u], retain_graph=True))
    r(m.autograd.grad(y, [x, u], retain_graph=True, allow_unused=True))
    r(m.autograd.grad(y, [x, u], retain_graph=True, materialize_grads=True))
    r.err(lambda: m.autograd.grad(y, [x, k], retain_graph=True))
    y.backward(inputs=[x, u], retain_graph=True)
    r.grad(x)
    r.grad(u)
    r.err(lambda: y.backward(inputs=[]))
    r.err(lambda: y.backward(inputs=[k]))


@scenario
def backward_inputs_restricts(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    w = m.tensor([3.0, 4.0], requires_grad=True)
    h = x * w
    out = (h * h).sum()
    out.backward(inputs=[w], retain_graph=True)
    r.grad(x)
    r.grad(w)
    out.backward(inputs=w, retain_graph=True)
    r.grad(w)
    out.backward(inputs=[h])
    r.grad(h)
    r.grad(x)


@scenario
def backward_without_grad(m: Any, r: Rec) -> None:
    c = m.ones(2)
    r.err(lambda: c.sum().backward())
    x = m.ones(2, requires_grad=True)
    with m.no_grad():
        y = (x * 2).sum()
    r.flags(y)
    r.err(lambda: y.backward())
    r.err(lambda: m.autograd.grad(y, x))
    d = (x * 2).sum().detach()
    r.err(lambda: d.backward())
    z = (x * 2).sum()
    with m.no_grad():
        z.backward()
    r.grad(x)
    (g,) = m.autograd.grad((2 * x).sum(), x, create_graph=True)
    r(g, g.requires_grad, g.grad_fn)
    r.err(lambda: m.autograd.grad(g.sum(), x))


# ************************************************************ requires_grad, detach, no_grad


@scenario
def requires_grad_rules(m: Any, r: Rec) -> None:
    r.err(lambda: m.tensor([1, 2, 3], requires_grad=True))
    r.err(lambda: m.tensor(True, requires_grad=True))
    r.err(lambda: m.arange(5, requires_grad=True))
    i = m.tensor([1, 2])
    r.err(lambda: i.requires_grad_())

    def set_attr() -> None:
        i.requires_grad = True

    r.err(set_attr)
    x = m.ones(2, requires_grad=True)
    y = x * 2
    r.err(lambda: y.requires_grad_(False))

    def set_false() -> None:
        y.requires_grad = False

    r.err(set_false)
    r.err(lambda: y.requires_grad_(True))
    r.flags(y)
    a = m.ones(2)
    a.requires_grad_()
    r.flags(a)
    a.requires_grad = False
    r.flags(a)
    r.flags(x + a)
    r.flags(a + 1)
    r.flags(m.ones(2) * m.zeros(2))
    r.err(lambda: x.numpy())


@scenario
def detach_rules(m: Any, r: Rec) -> None:
    x = m.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    r.flags(d)
    r(d._version == y._version)
    d2 = y.data
    r.flags(d2)
    y2 = x * 3
    y2.detach_()
    r.flags(y2)
    r(y2)
    c = x.clone()
    r.flags(c)
    f = x.float()
    r(f is x)
    r.flags(x.double())
    r.flags(x.detach().requires_grad_())


@scenario
def grad_mode_rules(m: Any, r: Rec) -> None:
    x = m.ones(2, requires_grad=True)
    with m.no_grad():
        r(m.is_grad_enabled())
        y = x * 2
        r.flags(y)
        with m.enable_grad():
            z = x * 2
            r.flags(z)
        w = x.exp()
        r.flags(w)
    r(m.is_grad_enabled())
    with m.set_grad_enabled(False):
        r.flags(x + 1)
    r.flags(x + 1)

    @m.no_grad()
    def f(t: Any) -> Any:
        return t * 2

    r.flags(f(x))
    m.set_grad_enabled(False)
    r.flags(x * 2)
    m.set_grad_enabled(True)
    r.flags(x * 2)


# ************************************************************ graph structure


@scenario
def next_functions_structure(m: Any, r: Rec) -> None:
    x = m.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    r(out.grad_fn)
    r(out.grad_fn.next_functions)
    r(out.grad_fn.next_functions[0][0].next_functions)
    r(z.grad_fn.next_functions[0][0].next_functions)
    acc = y.grad_fn.next_functions[0][0]
    r(acc, type(acc).__name__, acc.variable is x)
    r(acc.next_functions)
    r(y.grad_fn.name(), out.grad_fn.name(), acc.name())
    a = m.tensor(2.0, requires_grad=True)
    c = m.tensor(3.0)
    r((a * c).grad_fn.next_functions)
    r((c * a).grad_fn.next_functions)
    r((a * 3).grad_fn.next_functions)
    aa = (a + a).grad_fn.next_functions
    r(aa, aa[0][0] is aa[1][0])
    r(aa[0][0] is (a * 2).grad_fn.next_functions[0][0])
    r(m.cat([a.view(1), c.view(1), a.view(1)]).grad_fn.next_functions)
    parts = x.unbind()
    r(parts[1].grad_fn.next_functions, parts[0].grad_fn is parts[1].grad_fn)
    r([p.grad_fn.name() for p in x.split(1)])


@scenario
def graph_walk(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    w = m.tensor([3.0, 4.0], requires_grad=True)
    loss = ((x * w).sum() + x.pow(2).mean()).tanh()
    r.graph(loss)
    r(loss.grad_fn)
    r(str(loss.grad_fn), loss.grad_fn.name())


# ************************************************************ create_graph


@scenario
def higher_order(m: Any, r: Rec) -> None:
    x = m.tensor(3.0, requires_grad=True)
    y = x**3
    (dy,) = m.autograd.grad(y, x, create_graph=True)
    r(dy)
    (d2y,) = m.autograd.grad(dy, x, create_graph=True)
    r(d2y)
    (d3y,) = m.autograd.grad(d2y, x)
    r(d3y)
    r.err(lambda: m.autograd.grad(d3y, x))
    x = m.tensor(2.0, requires_grad=True)
    for f in (
        lambda t: t**2,
        lambda t: t**3,
        lambda t: t * t,
        lambda t: t.exp(),
        lambda t: t.sin(),
        lambda t: t.tanh(),
        lambda t: t.sigmoid(),
        lambda t: t.log(),
        lambda t: t**2 + 3 * t,
        lambda t: t.relu(),
        lambda t: (t * 1).relu() * t,
    ):
        (g,) = m.autograd.grad(f(x), x, create_graph=True)
        (h,) = m.autograd.grad(g, x, allow_unused=True)
        r(g, h)


@scenario
def backward_create_graph(m: Any, r: Rec) -> None:
    x = m.tensor(3.0, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    r.grad(x)
    g = x.grad
    x.grad = None
    g.backward()
    r.grad(x)
    x.grad = None
    (x * x).backward(create_graph=True)
    (x * x * x).backward(create_graph=True)
    r.grad(x)


@scenario
def gradient_penalty_and_mixed(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = (x**3).sum()
    (g,) = m.autograd.grad(y, x, create_graph=True)
    r(g)
    penalty = (g**2).sum()
    r(penalty)
    penalty.backward()
    r.grad(x)
    a = m.tensor(2.0, requires_grad=True)
    b = m.tensor(3.0, requires_grad=True)
    f = a**2 * b**3
    fa, fb = m.autograd.grad(f, [a, b], create_graph=True)
    r(fa, fb)
    r(m.autograd.grad(fa, [a, b], retain_graph=True))
    r(m.autograd.grad(fb, [a, b]))


# ************************************************************ subgradients at kinks


@scenario
def kinks(m: Any, r: Rec) -> None:
    x = m.tensor([0.0, 0.0, 0.0, 0.0], requires_grad=True)
    for f in (
        lambda t: t.relu(),
        lambda t: t.abs(),
        lambda t: t.sqrt(),
        lambda t: m.F.leaky_relu(t, 0.1),
        lambda t: t.sign(),
        lambda t: t.floor(),
        lambda t: t.clamp(min=0),
        lambda t: m.maximum(t, m.zeros(4)),
        lambda t: t.log(),
        lambda t: t**0.5,
        lambda t: t**-1,
    ):
        f(x).sum().backward()
        r.grad(x)
        x.grad = None
    t = m.tensor([1.0, 3.0, 3.0], requires_grad=True)
    for f in (
        lambda v: v.max(),
        lambda v: v.max(dim=0).values,
        lambda v: v.min(),
        lambda v: v.amax(),
        lambda v: v.norm(p=float("inf")),
        lambda v: m.maximum(v, m.tensor([1.0, 3.0, 2.0])).sum(),
    ):
        f(t).backward()
        r.grad(t)
        t.grad = None
    c = m.tensor([0.0, 1.0, 2.0], requires_grad=True)
    c.clamp(0, 2).sum().backward()
    r.grad(c)
    n = m.tensor([0.0, 3.0, 4.0], requires_grad=True)
    n.norm().backward()
    r.grad(n)
    z = m.zeros(2, requires_grad=True)
    z.norm().backward()
    r.grad(z)
    z.grad = None
    z.norm(p=1).backward()
    r.grad(z)
    z.grad = None
    z.norm(dim=0).backward()
    r.grad(z)
    p = m.tensor([0.0, -1.0], requires_grad=True)
    (p**2).sum().backward()
    r.grad(p)
    p.grad = None
    (p**0.5).sum().backward()
    r.grad(p)
    q = m.tensor([0.0, 2.0, 0.0], requires_grad=True)
    q.prod().backward()
    r.grad(q)


# ************************************************************ gradient accumulation


@scenario
def accumulation_and_zeroing(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
        r.grad(x)
    x.grad.zero_()
    r.grad(x)
    x.grad = None
    r.grad(x)
    r.err(lambda: x.grad.zero_())

    def bad_grad() -> None:
        x.grad = m.ones(3)

    r.err(bad_grad)
    a = m.tensor(1.0, requires_grad=True)
    (a + a).backward()
    r.grad(a)
    b = m.tensor([1.0, 2.0], requires_grad=True)
    (b.expand(2, 2) * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    r.grad(b)
    b.grad = None
    (b.repeat(2) * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    r.grad(b)
    s = m.tensor(2.0, requires_grad=True)
    (s * m.ones(2, 3)).sum().backward()
    r.grad(s)


# ************************************************************ more corners


@scenario
def retain_grad_with_create_graph(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    z = (y * y).sum()
    z.backward(create_graph=True)
    r.grad(y)
    r.grad(x)
    z.backward(create_graph=True)
    r.grad(y)


@scenario
def grad_wrt_nonleaf(m: Any, r: Rec) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    r(m.autograd.grad(y, [h, x], retain_graph=True))
    r(m.autograd.grad(y, y, retain_graph=True))
    (g,) = m.autograd.grad(y, h, create_graph=True)
    r(g)
    r(m.autograd.grad(g.sum(), x))
    r.grad(h)


@scenario
def detach_inplace_variants(m: Any, r: Rec) -> None:
    x = m.ones(2, 2, requires_grad=True)
    y = x * 2
    v = y[0]
    r.err(lambda: v.detach_())
    r.flags(v)
    r.err(lambda: y.detach_())
    r.flags(y)
    r(y._version)


@scenario
def backward_twice_through_view_ops(m: Any, r: Rec) -> None:
    x = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.t().reshape(4)[1:].unsqueeze(0).expand(2, 3).sum()
    y.backward()
    y.backward()
    r.grad(x)
    z = x.flatten()[[0, 3]].sum()
    z.backward()
    r.err(lambda: z.backward())
    r.grad(x)


@scenario
def inplace_on_expanded(m: Any, r: Rec) -> None:
    x = m.ones(3, requires_grad=True)
    y = x * 1
    r.err(lambda: y.expand(2, 3).add_(1))
    z = m.ones(3)
    r.err(lambda: z.expand(2, 3).mul_(2))
    r(y, z)


# ************************************************************ the tests


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str) -> None:
    check(SCENARIOS[name])


def test_recorder_catches_a_difference() -> None:
    def sc(m: Any, r: Rec) -> None:
        r(m.ones(2) * (2 if m is TM else 3))

    with pytest.raises(AssertionError):
        check(sc)


def test_create_graph_warning() -> None:
    from adcli.autograd import engine

    engine.warned.create_graph = False
    x = T.tensor(3.0, requires_grad=True)
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
        (x * x).backward(create_graph=True)
