"""torch.autograd.profiler (issue 12) compared with PyTorch 2.13: the same script, run
by adcli and by torch, prints `key_averages().table(...)`; with the times and shares
masked, the tables must agree: the layout (headers, dashes, widths), the rows (names
and call counts) and, where the order does not depend on the times, their order.

PyTorch records a few kernel-internal ranges adcli has no counterpart for in some
programs (an `aten::clone` inside mm's backward when a transposed operand is
contiguous, ...): the programs here are ones where adcli records exactly PyTorch's."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")

from tests.conformance.printed import _adcli_output, _torch_output  # noqa: E402

pytestmark = pytest.mark.torch

_TIME = re.compile(r"^-?\d+\.\d{3}(us|ms|s)$")
_SHARE = re.compile(r"^(-?\d+\.\d{2}%|NaN)$")

HEAD = """import torch
x = torch.randn(2, 3, requires_grad=True)
y = torch.rand(2, 3, requires_grad=True)
z = torch.ones(2, 3, requires_grad=True)
w = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, requires_grad=True)
"""

TUTORIAL = """
with torch.autograd.profiler.profile(use_cuda=False) as prf:
    for _ in range(1000):
        z = (z / x) * y
print(prf.key_averages().table(sort_by='self_cpu_time_total'))
"""

TUTORIAL_BACKWARD = """
with torch.autograd.profiler.profile() as prf:
    for _ in range(3):
        z = (z / x) * y
    z.sum().backward()
print(prf.key_averages().table())
"""

LAYERS = """
with torch.autograd.profiler.profile() as prf:
    h = torch.nn.functional.linear(x, w, b).relu() + torch.nn.functional.linear(x, w).sum()
    with torch.autograd.profiler.record_function("my_block"):
        q = (x * 2 + 1).exp().tanh().sigmoid() - y
    (q * q / 3).mean().backward()
print(prf.key_averages().table(sort_by="count", row_limit=12))
print(prf.key_averages().table())
"""

KINETO = """
from torch.profiler import profile, record_function, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with record_function("model_inference"):
        out = torch.nn.functional.linear(x, w).relu()
        out = out.softmax(dim=1).log()
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
print(prof.key_averages().table(sort_by="count"))
"""

STEPS = """
with torch.profiler.profile() as k:
    for i in range(3):
        q = x * 2
        k.step()
print(k.key_averages().table(sort_by="count"))
"""

EVENTS = """
with torch.autograd.profiler.profile() as prf:
    v = (x * y).neg().sum()
    v.backward()
print(prf)
"""


def _cells(line: str) -> list[str]:
    """A table row's cells (columns are two or more spaces apart), times masked."""
    cells = [c for c in re.split(r"\s{2,}", line.strip()) if c]
    return ["T" if _TIME.match(c) else "P" if _SHARE.match(c) else c for c in cells]


def _tables(text: str) -> list[list[str]]:
    """Each printed table as its lines (times masked, right-aligned cells re-joined)."""
    tables: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("-") and current is None:
            current = []
        if current is None:
            continue
        if line.startswith("Self CPU time total:"):
            stamp = line.split(": ", 1)[1]
            assert _TIME.match(stamp), line
            current.append("Self CPU time total: T")
            tables.append(current)
            current = None
        elif line.startswith("-"):
            current.append(line)  # dashes: their widths are the layout
        else:
            current.append(" | ".join(_cells(line)))
    return tables


def _both(body: str) -> tuple[list[list[str]], list[list[str]]]:
    script = HEAD + body
    return _tables(_adcli_output(script)), _tables(_torch_output(script))


def _rows(table: list[str]) -> list[str]:
    return [r for r in table[3:-2]]


@pytest.mark.parametrize(
    "body",
    [TUTORIAL_BACKWARD, LAYERS, EVENTS, STEPS],
    ids=["tutorial_bw", "layers", "events", "steps"],
)
def test_tables_match_torch(body: str) -> None:
    """Row order by first appearance or by count (ties by appearance): exact."""
    ours, theirs = _both(body)
    assert theirs and len(ours) == len(theirs)
    for mine, torch_table in zip(ours, theirs, strict=True):
        assert mine == torch_table


@pytest.mark.parametrize("body", [TUTORIAL, KINETO], ids=["tutorial", "torch.profiler"])
def test_time_sorted_tables_match_torch(body: str) -> None:
    """Sorted by a time: the same layout and rows (the order follows each run's times,
    and adcli's is the order of its own column)."""
    ours, theirs = _both(body)
    assert theirs and len(ours) == len(theirs)
    for mine, torch_table in zip(ours, theirs, strict=True):
        assert mine[:3] == torch_table[:3]  # dashes, headers, dashes
        assert mine[-2:] == torch_table[-2:]
        if len(_rows(torch_table)) < 10:  # (a row limit keeps the run's slowest ones)
            assert sorted(_rows(mine)) == sorted(_rows(torch_table))


def test_tutorial_table_sorted_by_self_time() -> None:
    """`sort_by='self_cpu_time_total'`: the rows in decreasing self time."""
    from adcli.autograd import profiler

    events = profiler.EventList()
    for name, t in (("a", 1.0), ("b", 3.0), ("c", 2.0)):
        avg = profiler.FunctionEventAvg(name, None)
        avg.count, avg.cpu_time_total, avg.self_cpu_time_total = 1, t, t
        events.append(avg)
    text = events.table(sort_by="self_cpu_time_total")
    names = [line.split()[0] for line in text.splitlines()[3:6]]
    assert names == ["b", "c", "a"]
    assert text.splitlines()[-1] == "Self CPU time total: 6.000us"


def test_no_profile_costs_one_test() -> None:
    """Without an open profile, the hooks are None (an op pays one global test)."""
    from adcli.autograd import node

    assert node.prof_hook is None
    assert node.prof is None


def test_plain_values_match_torch() -> None:
    """What a script reads besides the table: keys and counts of the averages, a
    disabled profile binding None, record_function outside a profile doing nothing."""
    from tests.conformance.printed import check

    check(
        HEAD
        + """
with torch.autograd.profiler.profile(enabled=False) as off:
    q = x * y
print(off)
with torch.autograd.profiler.record_function("alone"):
    q = x * y
with torch.autograd.profiler.profile() as prf:
    with torch.autograd.profiler.record_function("block"):
        for _ in range(4):
            q = (x * y).relu()
    q.sum().backward()
for e in prf.key_averages():
    print(e.key, e.count)
print(prf.total_average().count, prf.total_average().key)
print(len(prf.function_events))
"""
    )


# Expressions whose ranges (names and nesting, forward only) adcli records exactly as
# PyTorch 2.13 does: the ops' aten names, composites (linear, matmul, reshape, square,
# outer) around their steps, and PyTorch's kernel-internal ranges of these ops.
TREE_CASES = [
    "x + y",
    "x - y",
    "x * y",
    "x / y",
    "x ** 2",
    "x ** y.abs()",
    "-x",
    "x.abs()",
    "x.exp()",
    "x.log()",
    "x.sqrt()",
    "x.sin()",
    "x.cos()",
    "x.tan()",
    "x.asin()",
    "x.acos()",
    "x.atan()",
    "x.rsqrt()",
    "x.tanh()",
    "x.sigmoid()",
    "x.relu()",
    "x.sum()",
    "x.sum(0)",
    "x.mean()",
    "x.mean(1)",
    "x.max()",
    "x.min()",
    "x.amax(0)",
    "x.prod()",
    "x.norm()",
    "x.t()",
    "x.view(6)",
    "x.reshape(3, 2)",
    "x.transpose(0, 1)",
    "x.permute(1, 0)",
    "x.unsqueeze(0)",
    "x.squeeze()",
    "x.flatten()",
    "x[0]",
    "x[:, 1]",
    "x.clone()",
    "x.clamp(-1, 1)",
    "x.clamp(min=0)",
    "x.expand(2, 2, 3)",
    "x.cumsum(0)",
    "x.softmax(1)",
    "x.log_softmax(1)",
    "x @ y.t()",
    "x.matmul(y.t())",
    "x.mm(y.t())",
    "x.exp().log1p()",
    "x.reciprocal()",
    "x.sign()",
    "x.floor()",
    "x.round()",
    "x.flip(0)",
    "torch.cat([x, y])",
    "torch.stack([x, y])",
    "torch.where(x > 0, x, y)",
    "torch.maximum(x, y)",
    "x.masked_fill(x > 0, 0.0)",
    "x.gather(1, torch.tensor([[0], [1]]))",
    "x.to(torch.float64)",
    "x.double()",
    "x.detach()",
    "x.contiguous()",
    "F.relu(x)",
    "F.gelu(x)",
    "F.silu(x)",
    "F.leaky_relu(x)",
    "F.elu(x)",
    "F.softplus(x)",
    "F.hardtanh(x)",
    "F.mse_loss(x, y)",
    "F.cross_entropy(x, torch.tensor([0, 1]))",
    "F.nll_loss(x.log_softmax(1), torch.tensor([0, 1]))",
    "F.linear(x, w)",
    "F.linear(x, w, b)",
    "torch.sum(x * y)",
    "torch.outer(x[0], y[0])",
    "x[0].dot(y[0])",
    "x.mv(y[0])",
    "torch.bmm(x.unsqueeze(0), y.t().unsqueeze(0))",
    "x.tril()",
    "x.cumprod(1)",
    "torch.atan2(x, y)",
    "x.square()",
    "x.pow(3)",
    "x.mul(2)",
    "x.add(1)",
    "x.div(2)",
    "x.sub(1)",
    "1 - x",
    "x.sigmoid().log()",
    "torch.zeros(2, 3)",
    "torch.ones(2)",
    "torch.randn(2)",
    "torch.tensor([1.0])",
    "torch.arange(3)",
    "torch.zeros_like(x)",
    "torch.ones_like(x)",
    "x.numel()",
    "x.add_(1)",
    "x.mul_(2)",
    "x.zero_()",
    "x.fill_(1.0)",
    "x.copy_(y)",
    "x.relu_()",
    "x.clamp_(0, 1)",
]


def _tree(events: object) -> list[str]:
    out = []
    for e in events:  # type: ignore[attr-defined]
        depth, a = 0, e.cpu_parent
        while a is not None:
            depth, a = depth + 1, a.cpu_parent
        out.append("  " * depth + e.name)
    return out


def _profiled(mod: object, fn: object, expr: str, profile: object) -> list[str]:
    inplace = "_(" in expr
    x = mod.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -2.0]], requires_grad=not inplace)
    if inplace:
        x = x.detach()
    y = mod.tensor([[0.3, 0.2, 0.9], [0.1, 0.8, 0.4]], requires_grad=True)
    w = mod.ones(4, 3, requires_grad=True)
    b = mod.zeros(4, requires_grad=True)
    env = {"torch": mod, "F": fn, "x": x, "y": y, "w": w, "b": b}
    with profile() as p:
        eval(expr, env)
    return _tree(p.function_events)


@pytest.mark.parametrize("expr", TREE_CASES)
def test_op_ranges_match_torch(expr: str) -> None:
    """One op (or a few) under the profiler: the same ranges, nested the same way."""
    import torch
    import torch.nn.functional as tf

    from adcli.autograd import profiler
    from adcli.core.session import build_modules

    mods = build_modules()
    ours = _profiled(mods["torch"], mods["torch.nn.functional"], expr, profiler.Profile)
    theirs = _profiled(torch, tf, expr, torch.autograd.profiler.profile)
    assert ours == theirs


# Of those, the ones whose backward (`.sum().backward()` of the result) PyTorch records
# as adcli does too: the evaluate_function ranges, each node's formula's ops, the
# gradient buffers' add_, AccumulateGrad's detach (or copy, for an expanded gradient).
BACKWARD_CASES = [
    "x + y",
    "x - y",
    "x * y",
    "-x",
    "x.abs()",
    "x.exp()",
    "x.log()",
    "x.sqrt()",
    "x.sin()",
    "x.cos()",
    "x.tanh()",
    "x.sigmoid()",
    "x.relu()",
    "x.sum()",
    "x.sum(0)",
    "x.mean()",
    "x.mean(1)",
    "x.t()",
    "x.view(6)",
    "x.reshape(3, 2)",
    "x.transpose(0, 1)",
    "x.permute(1, 0)",
    "x.unsqueeze(0)",
    "x.squeeze()",
    "x.flatten()",
    "x[0]",
    "x[:, 1]",
    "x.clone()",
    "x.expand(2, 2, 3)",
    "x.exp().log1p()",
    "torch.stack([x, y])",
    "x.masked_fill(x > 0, 0.0)",
    "x.to(torch.float64)",
    "x.double()",
    "x.detach()",
    "x.contiguous()",
    "F.relu(x)",
    "F.gelu(x)",
    "F.leaky_relu(x)",
    "F.elu(x)",
    "F.softplus(x)",
    "F.mse_loss(x, y)",
    "F.cross_entropy(x, torch.tensor([0, 1]))",
    "F.nll_loss(x.log_softmax(1), torch.tensor([0, 1]))",
    "torch.sum(x * y)",
    "x[0].dot(y[0])",
    "torch.bmm(x.unsqueeze(0), y.t().unsqueeze(0))",
    "x.tril()",
    "x.mul(2)",
    "x.add(1)",
    "x.div(2)",
    "1 - x",
    "x.sigmoid().log()",
    "torch.zeros(2, 3)",
    "torch.ones(2)",
    "torch.randn(2)",
    "torch.tensor([1.0])",
    "torch.arange(3)",
    "torch.zeros_like(x)",
    "torch.ones_like(x)",
    "x.numel()",
]


def _profiled_backward(mod: object, fn: object, expr: str, profile: object) -> list[str]:
    x = mod.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -2.0]], requires_grad=True)
    y = mod.tensor([[0.3, 0.2, 0.9], [0.1, 0.8, 0.4]], requires_grad=True)
    w = mod.ones(4, 3, requires_grad=True)
    b = mod.zeros(4, requires_grad=True)
    env = {"torch": mod, "F": fn, "x": x, "y": y, "w": w, "b": b}
    with profile() as p:
        r = eval(expr, env)
        r = r[0] if isinstance(r, (tuple, list)) else r
        if getattr(r, "grad_fn", None) is not None:
            r.sum().backward()
    return _tree(p.function_events)


@pytest.mark.parametrize("expr", BACKWARD_CASES)
def test_backward_ranges_match_torch(expr: str) -> None:
    """One op and its backward under the profiler: the same ranges, nested the same way."""
    import torch
    import torch.nn.functional as tf

    from adcli.autograd import profiler
    from adcli.core.session import build_modules

    mods = build_modules()
    ours = _profiled_backward(mods["torch"], mods["torch.nn.functional"], expr, profiler.Profile)
    theirs = _profiled_backward(torch, tf, expr, torch.autograd.profiler.profile)
    assert ours == theirs


TRAINING_STEP = """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(5, 3)
target = torch.randn(5, 1)
with profile() as prf:
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(data), target)
    loss.backward()
    opt.step()
with profile() as prf2:
    x = torch.randn(2, 3, requires_grad=True)
    (x.sum(0, keepdim=True) * x.mean(1, keepdim=True)).sum().backward()


class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        r = i.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r


with profile() as prf3:
    MyExp.apply(x).sum().backward()

x = torch.randn(3, 4, requires_grad=True)
t = torch.tensor([0, 2, 1])
with profile() as prf4:
    torch.nn.functional.cross_entropy(x, t).backward()
    torch.nn.functional.nll_loss(x.log_softmax(1), t).backward()
    torch.nn.CrossEntropyLoss()(x, t).backward()

x = torch.randn(4, 3, requires_grad=True)
with profile() as prf5:
    x[1:3].sum().backward()
    x[:, 0:2].sum().backward()
    x[0].sum().backward()
    x[::2].sum().backward()
"""


def test_training_step_ranges_match_torch() -> None:
    """One SGD step of a small network: the optimizer's ranges, linear's addmm and mm,
    mse_loss's and its backward's, AccumulateGrad's; keepdim reductions; a custom
    Function (a range named after its class). (PyTorch's mm sometimes resolves
    the conjugate of its result too: `aten::resolve_conj` rows are left out.)"""
    import torch

    from adcli.autograd import profiler
    from adcli.core.session import build_modules

    def trees(mod: object, profile: object) -> list[list[str]]:
        env = {"torch": mod, "profile": profile}
        exec(TRAINING_STEP, env)
        return [
            [n for n in _tree(env[k].function_events) if n.strip() != "aten::resolve_conj"]
            for k in ("prf", "prf2", "prf3", "prf4", "prf5")
        ]

    ours = trees(build_modules()["torch"], profiler.Profile)
    assert ours == trees(torch, torch.autograd.profiler.profile)
