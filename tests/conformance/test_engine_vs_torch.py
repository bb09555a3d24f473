"""Autograd-engine behaviours the differential fuzzer found, each run by adcli and by PyTorch.

Every case is a small script (`import torch` first, as `.ad` files are) that prints
values, flags and `repr(e)` of errors; adcli runs it through its runner and Python
runs it with the real torch, and the printed text must be equal, word for word.
One test per root cause: backward(inputs=[non-leaf]) retains the input's grad and
runs its node; what autograd.grad captures relative to tensor hooks; hooks called
with None; .grad accumulated in place; the checks of .grad assignment, of the
requires_grad setter and of non-differentiable arguments; which tensors a node
saves (and their versions); the wording of in-place errors on views.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

from tests.conformance.printed import check  # noqa: E402

# ******************************************** 5. backward(inputs=[non-leaf])


def test_backward_inputs_retains_the_non_leaf_grad_and_runs_its_node() -> None:
    # PyTorch calls retain_grad() on each input: its .grad is filled once per pass
    # (not twice), later passes without inputs= keep filling it; the input's node
    # runs (its saved tensors are freed, its backward may raise)
    check("""
a = torch.tensor([[-1.0]], requires_grad=True)
b, = a
b.retain_grad()
b.backward(inputs=[b])
print(b.grad, b.retains_grad, a.grad)
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = torch.sigmoid(x)
y.backward(torch.ones(2), retain_graph=True, inputs=[y])
print(y.retains_grad, y.grad, x.grad)
torch.autograd.backward([y.sum()])
print(y.grad, x.grad)
z = x * 3
z.sum().backward(inputs=[z], create_graph=True)
z.backward(z)
print(z.grad)
g, = torch.autograd.grad(torch.tanh(x).sum(), x, create_graph=True)
torch.autograd.backward([g.sum()])
run([lambda: g.backward(torch.ones(2), inputs=[g])])
f = torch.ones(3, 1).floor_divide(torch.arange(-1.0, -0.75, 1.0, requires_grad=True))
run([lambda: f.backward(torch.ones(3, 1), inputs=f)])
k = x * 2
run([lambda: torch.autograd.grad(k.sum(), k), lambda: k.retains_grad])
q = torch.tensor([1.0, 2.0]) * 2
run([lambda: q.backward(torch.ones(2), inputs=[q])])
""")


# ******************************************************** 6. hooks


def test_grad_captures_an_input_before_its_hooks_when_its_node_runs() -> None:
    # an input whose node leads to another input: its gradient is taken before its
    # hooks (which still change what flows on); otherwise after them; retain_grad
    # runs in both cases, grad_fn prehooks only when the node runs
    check("""
a = torch.tensor([1.0, 2.0], requires_grad=True)
y = a * 2
y.register_hook(lambda g: g * 10)
print(torch.autograd.grad(y.sum(), [y, a]))
y = a * 2
y.register_hook(lambda g: g * 10)
print(torch.autograd.grad(y.sum(), y))
y = a.amax()
y.register_hook(lambda g: -g)
print(torch.autograd.grad(y, [a, y]))
y = a * 2
y.retain_grad()
torch.autograd.grad(y.sum(), y, retain_graph=True)
print(y.grad)
torch.autograd.grad(y.sum(), [y, a])
print(y.grad)
y = a * 2
y.grad_fn.register_prehook(lambda gs: (gs[0] * 100,))
print(torch.autograd.grad(y.sum(), y), torch.autograd.grad((y * 1).sum(), [y, a]))
""")


def test_a_hook_on_an_output_without_gradient_is_called_with_none() -> None:
    check("""
t = torch.tensor([[1.0, -1.0, 2.0], [3.0, 1.0, -2.0]], requires_grad=True)
u, v, w = t.unbind(-1)
u.register_hook(lambda g: print("hook", g))
v.sum().backward(retain_graph=True)
w.register_hook(lambda g: -g)
run([lambda: torch.autograd.backward([v], grad_tensors=[torch.tensor([-1.0, -1.0])])])
print(t.grad)
""")


# ******************************************************** 7. .grad accumulation


def test_grad_accumulates_in_place_without_create_graph() -> None:
    # after a create_graph pass .grad keeps its CopyBackwards (or the requires_grad
    # the script set) through later passes, which add in place; with create_graph
    # the sum is out of place; zero_grad(set_to_none=False) zeroes the same tensor
    check("""
t1 = torch.tensor([-1.0, 1.0], requires_grad=True)
t2 = torch.cos(t1)
t2.mean().backward(create_graph=True)
g = t1.grad
torch.autograd.backward([t2], grad_tensors=[t2.detach()])
print(t1.grad, t1.grad is g)
t1.sum().backward(create_graph=True)
print(t1.grad, t1.grad is g)
t3 = torch.tensor([[-1.0, -1.0, 0.0]], requires_grad=True)
t3.sum().backward()
g3 = t3.grad
g3.requires_grad_()
t3.backward(gradient=torch.tensor([[-1.0, 1.0, 1.0]]))
print(t3.grad, t3.grad is g3)
torch.optim.SGD([t3]).zero_grad(set_to_none=False)
print(g3, t3.grad is g3)
w = torch.tensor([1.0, 2.0], requires_grad=True)
(w * w).sum().backward(create_graph=True)
gw = w.grad
torch.optim.SGD([w]).zero_grad(set_to_none=False)
print(gw, w.grad is gw, gw.requires_grad, gw.is_leaf)
v = torch.rand(2, requires_grad=True)
g7, = torch.autograd.grad(v.var(), v, create_graph=True)
(2 ** g7).sum().backward(create_graph=True, inputs=[g7])
print(g7.grad.grad_fn)
""")


# ******************************************************** 10, 11. checks on assignment


def test_grad_assignment_checks_the_dtype_then_the_size() -> None:
    check("""
def set_grad(t, g):
    t.grad = g
    return t.grad
run([
    lambda: set_grad(torch.ones(2, 3), torch.zeros(7)),
    lambda: set_grad(torch.ones(1, 2, 2), torch.zeros(7)),
    lambda: set_grad(torch.zeros(()), torch.zeros(1)),
    lambda: set_grad(torch.zeros(3, dtype=torch.float64), torch.zeros(7)),
    lambda: set_grad(torch.zeros(3), torch.zeros(3, dtype=torch.float64)),
    lambda: set_grad(torch.zeros(3), torch.zeros(3, dtype=torch.int64)),
    lambda: set_grad(torch.zeros(3, dtype=torch.int64), torch.zeros(3)),
    lambda: set_grad(torch.zeros(3), torch.zeros(3, dtype=torch.bool)),
    lambda: set_grad(torch.zeros(3), torch.zeros(3, dtype=torch.uint8)),
    lambda: set_grad(torch.zeros(3), torch.zeros(3, dtype=torch.float16)),
])
""")


def test_requires_grad_setter_and_non_differentiable_arguments() -> None:
    check("""
x = torch.tensor([[1.0]]).requires_grad_()
y = x.masked_fill(x > 1.0, 0)
p = torch.tensor([0.5, 0.2, 0.7])
t = torch.tensor([1.0, 1.0, 0.0])
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
def set_flag(t, v):
    t.requires_grad = v
run([
    lambda: set_flag(y, True),
    lambda: set_flag(y, False),
    lambda: y.requires_grad_(True),
    lambda: y.requires_grad_(False),
    lambda: F.binary_cross_entropy(p, t, weight=w),
    lambda: F.binary_cross_entropy(p, t.clone().requires_grad_()),
    lambda: F.nll_loss(torch.randn(2, 3), torch.tensor([0, 1]), weight=w),
    lambda: F.nll_loss(torch.randn(2, 3, 4), torch.zeros(2, 4, dtype=torch.long), weight=w),
    lambda: F.cross_entropy(torch.randn(2, 3), torch.tensor([0, 1]), weight=w),
])
with torch.no_grad():
    print(F.binary_cross_entropy(p, t, weight=w))
""")


# ******************************************************** 8. engine errors


def test_saved_inputs_are_version_checked_as_pytorch_saves_them() -> None:
    # gather saves its input, pow(number, x) its exponent, a rounding division its
    # operands (though the gradient is zero); vector @ matrix squeezes in place (the
    # result starts at version 1); anomaly mode changes the hint
    check("""
def changed(make):
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    y = make(x)
    with torch.no_grad():
        x.mul_(1)
    y.sum().backward()
    return x.grad
run([
    lambda: changed(lambda x: torch.gather(x, 0, torch.tensor([1]))),
    lambda: changed(lambda x: torch.pow(2.0, x)),
    lambda: changed(lambda x: torch.div(x, 2.0, rounding_mode="floor")),
    lambda: changed(lambda x: torch.div(x, torch.tensor(2.0), rounding_mode="floor")),
    lambda: changed(lambda x: torch.div(torch.tensor(2.0), x, rounding_mode="trunc")),
    lambda: changed(lambda x: torch.div(x, x, rounding_mode="floor")),
])
t1 = torch.tensor([[[-1.0]]], dtype=torch.float64).requires_grad_()
t3 = t1.sigmoid()
t4 = torch.gather(t3, -1, torch.tensor([[[0]]]))
t3[t3 > 0] = 1.0
run([lambda: t4.backward(t4)])
t6 = F.linear(torch.tensor([-1.0, 1.0]), torch.tensor([[1.0, 1.0]], requires_grad=True))
t7 = t6.gather(0, torch.tensor([0]))
t6.masked_fill_(t6 > 0, 0)
run([lambda: torch.autograd.backward([t7])])
t2 = torch.randn(2, 3)
t8 = t2.div(torch.tensor(1.0, requires_grad=True))
t2 /= t2
def anomalous():
    with torch.autograd.detect_anomaly():
        t8.sum().backward()
run([anomalous])
""")


def test_in_place_errors_on_views_name_the_view_pytorch_writes_through() -> None:
    # the node's name keeps a number other than 0 (Squeeze1); a whole subscript
    # writes into the tensor itself; a 0-d mask goes through an unsqueeze; a view of
    # a view made under no_grad has its own sentence
    check("""
t3 = torch.linspace(-1.0, 1.0, 3, requires_grad=True)
t4, t5, t6 = t3
a, = torch.tensor([[-1.0, 1.0, -1.0]]).requires_grad_()
b, c, d = a
def put(t, index, v):
    t[index] = v
r, = torch.ones(1, 2, requires_grad=True)
def put2(t):
    t[:] = 2.0
def put3(t):
    t[..., 0] = 2.0
t7 = torch.tensor([[1.0]]).requires_grad_()
with torch.no_grad():
    t8 = t7.expand(2, 3, 2)
run([
    lambda: torch.squeeze(t6, -1).pow_(2),
    lambda: put(t5, t5 > 0, 3),
    lambda: put(t4, ..., 1.0),
    lambda: put3(r),
    lambda: put2(r),
    lambda: put(a, (0, torch.tensor(True)), 3),
    lambda: put(a, (torch.tensor(True), 0), 3),
    lambda: put(t8, -2, 1.0),
])
""")


def test_a_node_without_derivative_runs_before_the_other_ready_nodes() -> None:
    # PyTorch runs its NotImplemented node as soon as it is ready (tied with
    # AccumulateGrad, in edge order), so the error comes before later accumulations
    check("""
t1 = torch.tensor([-2.7], requires_grad=True)
t2 = t1 // t1
t3 = torch.tensor(0.5, requires_grad=True)
t5 = t1 * 2
t2.grad_fn.register_prehook(lambda g: print("NotImplemented runs"))
t5.grad_fn.register_prehook(lambda g: print("Mul runs"))
run([
    lambda: torch.autograd.backward([torch.sub(t2, t3).sum()]),
    lambda: t3.grad,
    lambda: torch.autograd.backward([torch.sub(t3, t2).sum()]),
    lambda: t3.grad,
    lambda: torch.autograd.backward([(t5 + t2).sum()]),
])
""")


def test_a_node_whose_inputs_lead_nowhere_computes_nothing() -> None:
    # a view made under no_grad requires grad but has no edge: PyTorch saves nothing
    # for a node all of whose inputs are such views, so a second backward is fine
    check("""
t2 = torch.tensor([1.0, -2.0], requires_grad=True)
with torch.no_grad():
    t3 = t2.reshape(2, -1)
t4 = (t3 * t3).sum()
t5 = (t3 * t3).exp().sum()
t5.backward()
t4.backward()
run([lambda: t4.backward(), lambda: t5.backward(), lambda: t2.grad, lambda: t4.grad_fn])
""")
