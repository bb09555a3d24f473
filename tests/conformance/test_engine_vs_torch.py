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


def test_node_post_hooks_see_gradients_reduced_and_cast_to_the_inputs() -> None:
    # PyTorch fits each gradient to its input's shape and dtype before the post hooks
    check("""
torch.manual_seed(0)
t2 = torch.linspace(-1.0, 1.0, 3, requires_grad=True)
t3 = t2[::2]
t5 = torch.tensor([[-1.0, 1.0]])
t6 = torch.randn(2, 2)
t7 = t3.addmm(t5, t6)
t7.grad_fn.register_hook(lambda gi, go: print('@3', gi))
r11 = torch.autograd.grad(t7.sum(), [t3])
t3 = torch.tensor([[-1.0, -1.0, 1.0], [1.0, 1.0, -1.0]], requires_grad=True)
t11 = torch.randn([], dtype=torch.float64, requires_grad=True)
t12 = torch.clamp(t3, min=t11)
t12.grad_fn.register_hook(lambda gi, go: print('@17d', gi))
go = torch.tensor([[0.0, 1.0, -1.0], [1.0, 1.0, 1.0]])
r26 = torch.autograd.grad(t12, [t11, t3], grad_outputs=go)
print(r26)
a = torch.ones(2, 1, requires_grad=True)
b = torch.ones(1, 3, dtype=torch.float64, requires_grad=True)
c = a * b
c.grad_fn.register_hook(lambda gi, go: print(gi, go))
c.grad_fn.register_hook(lambda gi, go: (gi[0] * 2, None))
c.sum().backward()
print(a.grad, b.grad)
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


# ******************************************************** efficient zeros


def test_efficient_zeros_are_skipped_when_gradients_are_added() -> None:
    # sgn's backward (in abs, the L1 losses and the norms) returns PyTorch's ZeroTensor:
    # adding it leaves a -0 as it is, `*` and views pass it on, .grad may become one
    # and then refuses the next accumulation
    check("""# the double backward of abs and of the L1 losses: PyTorch's "-0." where an
# efficient zero was skipped when gradients were added
t5 = torch.tensor([[0.0]], requires_grad=True)
g8, = torch.autograd.grad(F.l1_loss(t5, t5), t5, create_graph=True)
g8.backward()
print(t5.grad)
t14 = torch.linspace(-1.0, 1.0, 1, requires_grad=True)
g16, = torch.autograd.grad(F.l1_loss(t14, t14), t14, create_graph=True)
print(torch.autograd.grad(g16, t14))
t = torch.tensor(1.0).requires_grad_()
g7, = torch.autograd.grad(torch.nn.L1Loss()(t, t), t, create_graph=True)
g7.backward()
print(t.grad)
# .grad that is an efficient zero refuses the next accumulation and in-place changes
x = torch.tensor([[1.0, -1.0], [-1.0, 1.0]], requires_grad=True)
g, = torch.autograd.grad(torch.nn.L1Loss()(x, torch.ones(2, 2)), x, create_graph=True)
g.sum().backward(retain_graph=True)
print(x.grad)
run([lambda: x.sum().backward(), lambda: x.grad.zero_(), lambda: x.grad.add_(1)])
print(x.grad, x.grad * 2, x.grad + 1, -x.grad, x.grad.clone().add_(1))
x.grad = None
x.sum().backward()
g.sum().backward(retain_graph=True)
print(x.grad)
run([lambda: x.grad.tolist(), lambda: x.grad.numpy()])
# sgn: an efficient zero through autograd.grad, hooks, views, * and +
y = torch.tensor([1.5, -2.0, 0.0], requires_grad=True)
print(torch.sgn(y), y.sgn())
z, = torch.autograd.grad(y.sgn().sum(), y)
print(z, z[0], z.view(3, 1), z * float("nan"), z / 0.0, z + torch.tensor([-0.0, 1.0, -0.0]))
print(torch.tensor([-0.0, 1.0, -0.0]) + z, z - torch.tensor([0.0, 1.0, -0.0]), 1 - z, 2 / z)
run([lambda: z.add_(1), lambda: z.mul_(2), lambda: z[0].fill_(1), lambda: z.copy_(y)])
w = torch.tensor([-0.0, -0.0, 1.0])
w.add_(z)
print(w, torch.tensor([-0.0, 2.0, 3.0]).mul_(z))
y.register_hook(lambda g: print("hook", g))
print(torch.autograd.grad((y.sgn() * -1.0).sum(), y))
print(torch.autograd.grad((y.sgn() * -1.0 + y * 0.0 * -1).sum(), y))
print(torch.autograd.grad((y * -0.0 + y.sgn() * -1.0).sum(), y))
print(torch.autograd.grad((y.sgn() * -1.0).exp().sum(), y))
y.grad = torch.tensor([-0.0, 0.0, -0.0])
(y.sgn().sum() * -2).backward()
print(y.grad)
# retain_grad adds out of place
u = y * 1.0
u.retain_grad()
(u * -0.0).sum().backward(retain_graph=True)
print(u.grad)
u.sgn().sum().backward()
print(u.grad, y.grad)
# norms of order 1, inf and below 2 differentiate through sgn
for p in (1, float("inf"), 1.5, 0.5):
    a = torch.tensor([0.5, -2.0, 1.0], requires_grad=True)
    ga, = torch.autograd.grad(torch.linalg.vector_norm(a, p), a, create_graph=True)
    print(p, ga, ga.grad_fn.next_functions[0][0].next_functions, torch.autograd.grad(ga.sum(), a))
v = torch.tensor([0.5, -2.0, 1.0], requires_grad=True)
gv, = torch.autograd.grad(v.abs().sum(), v, create_graph=True)
print(gv.grad_fn.next_functions)
""")


def test_efficient_zeros_refuse_in_place_changes_in_the_wording_of_the_op() -> None:
    check("""
def zero():
    y = torch.tensor([[1.5, -2.0, 0.0]], requires_grad=True)
    z, = torch.autograd.grad(y.sgn().sum(), y)
    return z
def show(f):
    try:
        f()
        print("ok")
    except Exception as e:
        print(repr(e)[:60])
def w1(): zero()[0:1] = 1.
def w2(): zero()[0, 0:1] = torch.tensor([1.])
def w3(): zero()[0, 0:1] = torch.tensor(1.)
def w4(): zero()[...] = torch.ones(1, 3)
def w5(): zero()[0] = 1.
def w6(): zero()[0, 0] = 1.
def w7(): zero()[:] = torch.tensor(1.)
def w8(): zero()[None] = 1.
def w9(): zero()[torch.tensor([0])] = torch.tensor([[1., 2., 3.]])
def w10(): zero()[zero() > -1] = 1.
def w11(): zero()[True] = 1.
def w12(): zero()[0, 0] = torch.tensor(2.)
def w13(): zero()[:, 1] = torch.tensor([2.])
def w14(): zero()[0][1:] = torch.tensor([2., 3.])
for f in (w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, w12, w13, w14):
    show(f)
z = zero()
run([
    lambda: z.neg_(), lambda: z.exp_(), lambda: z.clamp_(0, 1), lambda: z.sub_(1),
    lambda: z.pow_(2), lambda: z.div_(2), lambda: z.masked_fill_(z > -1, 1.0),
    lambda: z.fill_(torch.tensor(1.0)), lambda: z[0, 0].fill_(1.0),
    lambda: z[0, 0].copy_(torch.tensor(1.0)), lambda: z.relu_(), lambda: z.detach_(),
])
print(z)
""")


# ******************************************************** optimizers


def test_an_optimizer_takes_a_non_leaf_that_retains_its_grad() -> None:
    check("""
t3 = torch.zeros(2, requires_grad=True)
t12 = torch.sign(t3)
t12.retain_grad()
o18 = torch.optim.SGD([t12], lr=0.5)
(t12 * torch.tensor([1.0, 2.0])).sum().backward()
print(t12.grad)
o18.step()
print(t12)
o19 = torch.optim.Adam([t12])
o19.step()
print(t12)
try:
    torch.optim.SGD([t3 * 2])
except Exception as e:
    print(repr(e))
""")


# ******************************************************** grad_fn names of gradients


def test_squeeze_backward_unsqueezes_each_size_one_dim_or_returns_the_gradient() -> None:
    # the gradient itself when nothing was squeezed (a later in-place op on it then
    # records on it, not through a view); a dim named twice is refused
    check("""
for shape in [(2, 1, 3), (1, 1), (4,), (), (1, 2, 1)]:
    x = torch.ones(shape, requires_grad=True)
    for f in [
        lambda x: x.squeeze(), lambda x: x.squeeze(0), lambda x: x.squeeze(-1),
        lambda x: x.squeeze((0, -1)),
    ]:
        try:
            y = f(x)
        except Exception as e:
            print(repr(e))
            continue
        g, = torch.autograd.grad((y.sin()).sum(), x, create_graph=True)
        print(shape, y.grad_fn, g.grad_fn, g.grad_fn.next_functions)
t3 = torch.randn((), requires_grad=True)
g5, = torch.autograd.grad(t3.squeeze(), t3, create_graph=True)
g5.fill_(torch.tensor(1.0, requires_grad=True))
print(g5.grad_fn.next_functions)
t1 = torch.ones(4, requires_grad=True)
t6 = t1.squeeze()
go = torch.tensor([-1.0, 1.0, 1.0, 1.0])
print(torch.autograd.grad(t6.sqrt(), [t1, t6], grad_outputs=go, create_graph=True))
""")


def test_indexing_backward_nodes_are_named_as_in_pytorch() -> None:
    # select/slice's gradients are nodes of their own (SelectBackwardBackward0 ...),
    # array indexing's an accumulating index_put into constant zeros
    check("""
x = torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)
for f in [
    lambda x: x[0], lambda x: x[:, 1:], lambda x: x[torch.tensor([1, 0])],
    lambda x: x[x > 0], lambda x: x[0, 1], lambda x: x[..., None],
    lambda x: x[[0, 1], [2, 0]], lambda x: x.select(1, 0), lambda x: x.narrow(1, 0, 2),
    lambda x: x.diagonal(), lambda x: x[1][::2], lambda x: x.unbind(0)[1],
    lambda x: x.split(1, 1)[0],
]:
    y = f(x)
    g, = torch.autograd.grad((y ** 2).sum(), x, create_graph=True)
    print(y.grad_fn, g.grad_fn, g.grad_fn.next_functions)
""")


def test_masked_fill_backward_is_a_masked_fill() -> None:
    check("""
t1 = torch.ones((0,), requires_grad=True)
t4 = t1.masked_fill(t1 > -1.0, 1.0)
g8, = torch.autograd.grad((t4 ** 2).sum(), t1, create_graph=True)
print(g8)
a = torch.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
v = torch.tensor(2.0, requires_grad=True)
for y in (a.masked_fill(a > 0, 0.5), a.masked_fill(torch.tensor([True, False]), v)):
    g, = torch.autograd.grad((y ** 2).sum(), a, create_graph=True)
    print(g, g.grad_fn.next_functions)
    print(torch.autograd.grad(g.sum(), a))
""")


def test_index_and_mask_tensors_are_saved_with_their_versions() -> None:
    # masked_fill, where, gather and indexing save the script's index/mask tensor itself:
    # changing it in place makes the backward fail (a bool one named CPUBoolType)
    check("""
x = torch.tensor([1.0, 2.0], requires_grad=True)
def run(f):
    try:
        f()
        print("no error")
    except Exception as e:
        print(str(e)[:170])
def a():
    mm = torch.tensor([True, False])
    y = x.masked_fill(mm, 3.0)
    mm[0] = False
    y.sum().backward()
def b():
    idx = torch.tensor([1, 0])
    y = x[idx]
    idx[0] = 0
    y.sum().backward()
def c():
    idx = torch.tensor([1, 0])
    y = torch.gather(x, 0, idx)
    idx.add_(0)
    y.sum().backward()
def d():
    mm = torch.tensor([True, False])
    y = torch.where(mm, x, 0.0)
    mm[1] = True
    y.sum().backward()
def e():
    mm = torch.tensor([True, False])
    y = x[mm]
    mm[1] = True
    y.sum().backward()
def f():
    mm = torch.tensor([True, False])
    y = x.masked_fill(mm, torch.tensor(2.0, requires_grad=True))
    mm[0] = False
    y.sum().backward()
def g():
    m = torch.tensor([True, False])
    y = x.masked_fill(m[0], 3.0)
    m[0] = False
    y.sum().backward()
for fn in (a, b, c, d, e, f, g):
    run(fn)
""")


def test_an_efficient_zero_can_be_saved_for_backward() -> None:
    check("""
x = torch.tensor([1.5, -2.0, 0.0], requires_grad=True)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
z, = torch.autograd.grad(x.sgn().sum(), x)
y = z * w
print(y, y.grad_fn)
y.sum().backward()
print(w.grad)
g, = torch.autograd.grad((x.abs() * w).sum(), x, create_graph=True)
h, = torch.autograd.grad((g * g).sum(), w, create_graph=True)
print(g, h)
k = torch.autograd.grad(h.sum(), x, allow_unused=True)
print(k)
""")


def test_a_false_0d_mask_still_writes_through_an_empty_view() -> None:
    # `y[torch.tensor(False)] = v` records a CopySlices (and checks the leaf view);
    # `y[False] = v` does nothing
    check("""
a = torch.tensor(2.0, requires_grad=True)
for m in (torch.tensor(False), torch.tensor(True)):
    for v in (1.0, torch.tensor(3.0), torch.tensor(3.0, requires_grad=True), torch.tensor([4.0])):
        y = a * 1
        try:
            y[m] = v
            print(y, y.grad_fn.next_functions)
            y.backward()
            print(a.grad)
        except Exception as e:
            print(repr(e))
        a.grad = None
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 1
y[torch.tensor(False)] = 5.0
print(y, y.grad_fn, y.grad_fn.next_functions)
y[False] = 5.0
print(y, y.grad_fn)
z = x * 1
z[x > 5] = 1.0
print(z, z.grad_fn)
x = torch.tensor([1.0, 2.0], requires_grad=True)
for idx in (False, torch.tensor(False), torch.tensor([False, False])):
    try:
        x[idx] = 1.0
        print("ok", x)
    except Exception as e:
        print(repr(e))
d = x.detach()
d[torch.tensor(False)] = 1.0
d[False] = 1.0
print(d)
""")


def test_an_in_place_op_on_a_view_saves_the_view_as_the_base_requires_grad() -> None:
    # the view's old value, saved by mul_, requires grad only when its base does
    check("""
t8 = torch.tensor([1.0, 2.0])
t19 = torch.tensor(-1.0, requires_grad=True)
t8[0].mul_(t19)
t8[1:].add_(t19 * 2)
print(t8, t8.grad_fn, t8.grad_fn.next_functions)
g20, g21 = torch.autograd.grad(t8.sum(), [t19, t8], create_graph=True)
print(g20, g21)
b = torch.tensor([1.0, 2.0], requires_grad=True) * 1
b[0].mul_(t19)
print(b, b.grad_fn.next_functions)
print(torch.autograd.grad(b.sum(), [t19], create_graph=True))
w = torch.tensor([3.0])
w[0].pow_(t19)
print(w, torch.autograd.grad(w.sum(), t19, create_graph=True))
""")


def test_as_strided_gradients_are_views() -> None:
    # PyTorch returns as_strided's gradient as a view of a fresh storage: in-place
    # changes re-derive its AsStridedBackward0, and the view-of-a-leaf rules apply
    check("""
t2 = torch.tensor([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0]], requires_grad=True)
t11 = torch.as_strided(t2, (3,), (2,))
g12, = torch.autograd.grad(t11.sum(), t2, create_graph=True)
print(g12)
g12.requires_grad_()
try:
    g12.relu_()
except Exception as e:
    print(repr(e))
t1 = torch.zeros(2, requires_grad=True)
t8 = torch.as_strided(t1, (1,), (2,))
g9, = torch.autograd.grad(t8, t1, create_graph=True)
g9 -= t1
print(g9)
a = torch.tensor([-1.0, 1.0], requires_grad=True)
w = torch.tensor([[-1.0, 1.0]], requires_grad=True)
g20, = torch.autograd.grad(w.mv(torch.as_strided(a, (2,), (1,))), a, create_graph=True)
g20.pow_(2)
print(g20, g20.grad_fn.next_functions)
y = torch.as_strided(t2, (2, 2), (1, 2), 1)
g, = torch.autograd.grad((y * y).sum(), t2, create_graph=True)
print(g, g.grad_fn)
print(torch.autograd.grad(g.sum(), t2))
h, = torch.autograd.grad(y.sum(), t2)
h[0, 0] = 5.0
print(h)
""")


def test_array_indexing_results_are_contiguous() -> None:
    # so flatten/view of one are views, and in-place changes through them record
    check("""
t1 = torch.tensor([[1.0, -1.0], [-1.0, -1.0]], requires_grad=True)
for f in (lambda t: t[:, [0, 1]], lambda t: t * 1, lambda t: t[[0, 1]], lambda t: t[t > -5]):
    t6 = f(t1)
    t8 = t6.flatten()
    t8.exp_()
    print(t8, t6.grad_fn)
    t9 = t6.view(-1)
    t9.mul_(2)
    print(t9, t6.grad_fn)
""")


def test_setitem_copies_or_fills_as_pytorch_and_drops_leading_ones_of_the_value() -> None:
    # equal shapes: copy_ (a number into a 0-d tensor too); one value into several
    # elements: fill_; a value's leading size-1 dims are dropped
    check("""
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = torch.tensor(3.0, requires_grad=True)
def w0(y, v):
    y[0] = v
def w1(y, v):
    y[:] = v
def w2(y, v):
    y[...] = v
def w3(y, v):
    y[0:1] = v
def w4(y, v):
    y[None] = v
for w in (w0, w1, w2, w3, w4):
    for v in (5, 5.0, torch.tensor(5.0), torch.tensor([5.0]), s):
        for base in (lambda: x * 1, lambda: (x * 1).sum()):
            y = base()
            try:
                w(y, v)
                print(y.grad_fn, y.grad_fn.next_functions)
            except Exception as e:
                print(repr(e)[:60])
t3 = torch.tensor(1.0)
t9 = t3.flatten()
t14 = torch.tensor([], requires_grad=True)
t9[1:] = t14
print(t9, t3, t9.grad_fn, t3.grad_fn)
""")


def test_in_place_through_a_view_cannot_be_backpropagated_twice() -> None:
    # PyTorch's CopySlices drops the node it wraps after one pass
    check("""
def twice(f):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = f(x)
    y.sum().backward()
    try:
        y.sum().backward()
        print("no error", x.grad)
    except Exception as e:
        print(repr(e)[:60])
def f1(x):
    y = x * 1
    y[0] = 5.0
    return y
def f2(x):
    y = x * 1
    y[torch.tensor([0])] = 5.0
    return y
def f3(x):
    y = x * 1
    y[y > 1] = 5.0
    return y
def f4(x):
    y = x * 1
    y[:] = 5.0
    return y
def f5(x):
    y = x * 1
    y[0:1] = torch.tensor([5.0], requires_grad=True)
    return y
def f6(x):
    y = x.sum(0)
    v = y.t()
    v[...] = 1.0
    return v
def f7(x):
    y = x * 1
    v = y.view(2)
    v.add_(2.0)
    return y
for f in (f1, f2, f3, f4, f5, f6, f7):
    twice(f)
""")


def test_a_saved_input_detached_in_place_cannot_be_used() -> None:
    # and a leaf that stopped requiring grad gets no .grad
    check("""
def run(f):
    try:
        print(f())
    except Exception as e:
        print(repr(e)[:90])
def a():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    x.requires_grad_(False)
    y.sum().backward()
    return x.grad
def b():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = x * 2
    y = t * t
    t.detach_()
    y.sum().backward()
    return x.grad
def c():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = x * 2
    y = t.exp()
    y.detach_()
    return torch.autograd.grad(y.sum(), x)
def d():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = x * 2
    y = t + 1
    t.detach_()
    y.sum().backward()
    return x.grad
def e():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = x.exp()
    y = t * 3
    t.detach_()
    t.requires_grad_()
    y.sum().backward()
    return x.grad
def f():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    t = x.exp()
    z = t.sin()
    t.detach_()
    z.sum().backward()
    return x.grad
for fn in (a, b, c, d, e, f):
    run(fn)
""")


def test_the_hooks_and_retain_grad_of_an_unneeded_root_still_run() -> None:
    check("""
t17 = torch.ones((3,), requires_grad=True)
t22 = torch.tensor(-1.0, requires_grad=True)
t27 = t22.squeeze()
t27.retain_grad()
print(t27.grad_fn)
try:
    r35 = torch.autograd.grad(t27, [t17])
except Exception as e:
    print(repr(e)[:50])
print(t27.grad)
t28 = t22 * 2
t28.retain_grad()
try:
    r35 = torch.autograd.grad(t28, [t17])
except Exception as e:
    print(repr(e)[:50])
print(t28.grad)

t3 = torch.tensor([-1.0, 1.0], requires_grad=True)
h4 = t3.register_hook(lambda g: print("hook", g))
t8 = torch.tensor([1.0], requires_grad=True)
go = torch.tensor([-1.0, 1.0])
print(torch.autograd.grad(t3, [t8], grad_outputs=go, allow_unused=True))
""")


def test_retain_grad_stays_on_a_view_node_until_the_script_reads_grad_fn() -> None:
    # (adcli's reports must not re-derive the node behind the script's back)
    check("""
t3 = torch.full((), 0.0, requires_grad=True)
t5 = t3[()]
print(t5.grad_fn)
t5.retain_grad()
torch.autograd.backward(t5, torch.tensor(1.0))
t15 = torch.stack([t5])
print(t15.grad_fn.next_functions)
with torch.no_grad():
    t5.fill_(-1.0)
t15.backward()
print('@21', t5.grad, t3.grad)
""")


def test_an_in_place_op_on_a_view_saves_the_view_as_its_output() -> None:
    # sqrt_/tanh_ on a view save the view: a later in-place change fails the backward
    # with the version error, before any freed node further down is reached
    check("""
t2 = torch.full((2, 3), 0.0)
t5 = torch.tensor([[1.0, 1.0, 1.0], [-1.0, 0.0, -1.0]], requires_grad=True)
t6 = torch.nn.CrossEntropyLoss()(t5, torch.tensor([1, 0]))
t8 = torch.tensor([[1.0, 0.0], [1.0, -1.0], [1.0, 1.0]])
t9 = t6.addmm(t8, t2)
t11 = t9.select(-2, 2)
t11.sqrt_()
t6.backward()
t11 **= 2
try:
    t11.sum().backward()
except Exception as e:
    print('@13!', repr(e))
t2 = torch.zeros(1, 3, requires_grad=True)
t3 = torch.tensor([-1.0, -1.0, 1.0])
t4 = t2 @ t3
t6 = t4[:-1]
t6.tanh_()
t12 = torch.tensor([])
t6 *= t12
try:
    g14, g15 = torch.autograd.grad(t6.sum(), [t2, t6])
except Exception as e:
    print('@12!', repr(e))
""")


def test_nodes_save_only_what_the_gradients_needed_read() -> None:
    # a second backward through a node that saved nothing works (remainder by a
    # constant tensor, addmm into a bias only); dot unpacks self before tensor
    check("""
x = torch.tensor([[1.5, -0.5]], requires_grad=True)
c = torch.tensor([[2.0, -3.0]])
ops = {
 'add': lambda: x + c, 'sub': lambda: x - c, 'mul': lambda: x * c, 'div': lambda: x / c,
 'rem': lambda: torch.remainder(x, c),
 'pow': lambda: x ** c, 'rpow': lambda: c ** x, 'max': lambda: torch.maximum(x, c),
    'min': lambda: torch.minimum(x, c),
 'where': lambda: torch.where(c > 0, x, c), 'matmul': lambda: x @ c.t(), 'mm': lambda: x.mm(c.t()),
 'clampT': lambda: torch.clamp(x, min=c),
    'mulr': lambda: c * x, 'divr': lambda: c / x, 'outer': lambda: torch.outer(x[0], c[0]),
    'dot': lambda: torch.dot(x[0], c[0]),
 'addmm': lambda: torch.addmm(x, c.t(), c), 'mse': lambda: torch.nn.functional.mse_loss(x, c),
    'l1': lambda: torch.nn.functional.l1_loss(x, c),
 'bce': lambda: torch.nn.functional.binary_cross_entropy(x.sigmoid(), c.sigmoid()),
    'masked': lambda: x.masked_fill(c > 0, 1.0),
    'gather': lambda: x.gather(1, torch.tensor([[1, 0]])),
 'cat': lambda: torch.cat([x, c]), 'stack': lambda: torch.stack([x, c]),
    'floordiv': lambda: torch.div(x, c, rounding_mode='floor'), 'sqrt': lambda: x.abs().sqrt(),
    'cross_ent': lambda: torch.nn.functional.cross_entropy(x, torch.tensor([1])),
}
for n, f in ops.items():
    y = f().sum()
    y.backward()
    try:
        y.backward(); print(n, 'ok')
    except Exception as e: print(n, 'ERR')
t3 = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
t4 = torch.tensor([-1.0], dtype=torch.float64, requires_grad=True)
t5 = torch.matmul(t3, t4)
o9 = torch.optim.SGD([t3])
for _ in range(2):
    l10 = t3
    l10.backward()
    o9.step()
o12 = torch.optim.Adam([t4])
t4.backward()
o12.step()
try:
    g17, = torch.autograd.grad(t5, t4)
except Exception as e:
    print('@17!', repr(e))
""")


def test_gradient_formulas_end_in_the_node_pytorch_ends_them_in() -> None:
    # prod over a size-1 dim returns the gradient itself; amax/amin's is (g / count) *
    # mask; a post hook sees None for an input that needs no gradient
    check("""
cases = [((3, 1), -1, False), ((3, 1), 1, True), ((1,), 0, False), ((2, 3), 1, False),
         ((1, 2), 0, False)]
for shape, dim, keep in cases:
    t3 = torch.zeros(shape, requires_grad=True)
    g, = torch.autograd.grad(torch.prod(t3, dim, keepdim=keep).sum(), t3, create_graph=True)
    print(g, g.requires_grad)
t1 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
t2 = 0 + t1
t2.grad_fn.register_hook(lambda gi, go: print(gi))
print(torch.autograd.grad(t2, t1))
t9 = torch.tensor([[1.0, -2.0, 3.0], [3.0, -2.0, 0.5]], requires_grad=True)
for f in (lambda t: t.amax(0), lambda t: t.amin(1, keepdim=True), lambda t: t.amax(),
          lambda t: t.amin((0, 1))):
    g, = torch.autograd.grad((f(t9) * f(t9)).sum(), t9, create_graph=True)
    print(g, g.grad_fn, g.grad_fn.next_functions)
""")


def test_saved_tensors_are_packed_and_checked_in_pytorchs_order() -> None:
    # dot, mv and addmm save `self` (mat1) first; maximum, minimum and remainder save `other` before
    # `self`; zeros_like(None) in a hook called with None is PyTorch's TypeError
    check("""
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
def pack(t):
    print('pack', t)
    return t
def unpack(t):
    print('unpack', t)
    return t
for f in (torch.dot, torch.maximum, torch.minimum, torch.remainder):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = f(a, b)
    y.sum().backward()
    print(a.grad, b.grad)
m = torch.tensor([[1.0, 2.0], [5.0, 6.0]], requires_grad=True)
n = torch.tensor([[3.0, 4.0], [7.0, 8.0]], requires_grad=True)
for f, b in ((torch.mv, b), (torch.matmul, b), (torch.mm, n), (lambda x, y: x.addmm(x, y), n)):
    # mv saves the matrix first, addmm mat1 first, mm mat2 first
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = f(m, b)
    y.sum().backward()
    m2, b2 = m * 1, b * 1
    y = f(m2, b2)
    with torch.no_grad():
        m2.add_(1)
        b2.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        print(e)
lo = torch.tensor(1.5, requires_grad=True)
hi = torch.tensor(1.8, requires_grad=True)
for f in (lambda: a.clamp(max=hi), lambda: a.clamp(lo, hi)):  # clamp: max, min, self
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = f()
    y.sum().backward()
torch.manual_seed(210)
t2 = torch.zeros([], dtype=torch.float64, requires_grad=True)
t5 = t2 / 1.0
t6 = torch.randn([])
t8 = t2.maximum(t5)
t5.mul_(t6)
with torch.no_grad():
    t2.add_(t8)
try:
    t8.backward()
except Exception as e:
    print('@17!', repr(e))
t1 = torch.randn((4,), requires_grad=True)
t2, t3, t4, t5 = t1.split(1)
t4.register_hook(lambda g: torch.zeros_like(g))
t6 = torch.tensor([1.0, 1.0, -1.0])
t8 = torch.concatenate((t3, t6))
try:
    t8.backward(gradient=torch.tensor([float('-inf'), 1.0, -1.0, -1.0]))
except Exception as e:
    print('@4!', repr(e))
""")


def test_an_expanded_view_of_a_0d_tensor_is_re_derived_after_a_change() -> None:
    # changed in place under no_grad: its node becomes AsStridedBackward0 into the base
    check("""
t1 = torch.tensor(1.0, requires_grad=True)
t7 = t1.expand(2)
with torch.no_grad():
    t7.fill_(-1.0)
t13 = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
t14 = torch.addmm(t7, t13, t13)
print(t14.grad_fn.next_functions, t7)
t14.sum().backward()
print(t1.grad)
t6 = (torch.tensor([1.0, 2.0], requires_grad=True) * 3).sum()
t10 = t6.expand(2)
with torch.no_grad():
    t10[t10 > 0] = 0
print(t10)
""")


def test_post_hooks_see_none_where_the_pass_needs_nothing() -> None:
    # backward(inputs=[a non-leaf]) runs its node, whose edges lead nowhere needed
    check("""
t1 = torch.tensor([-1.0, 1.0], requires_grad=True)
t2 = 1.0 + t1
t2.grad_fn.register_hook(lambda gi, go: print(gi))
t2.sum().backward(inputs=t2)
t4 = torch.as_strided(torch.tensor([[-1.0, -1.0, -1.0]], requires_grad=True), (3,), (1,))
t4.grad_fn.register_hook(lambda gi, go: print(gi))
torch.autograd.backward([t4.sum()], inputs=[t4])
""")


def test_a_view_changed_before_its_base_required_grad_is_re_derived_later() -> None:
    check("""
t3 = torch.rand((2, 2))
t4 = t3.narrow(-2, 0, 1)
t4.add_(torch.tensor(1.0))
t3.requires_grad_()
print(t4.requires_grad, t4.grad_fn)
s = t4.sum()
print(s.grad_fn.next_functions)
g6, = torch.autograd.grad(s, [t4])
print(g6)
u3 = torch.rand((2, 2))
u4 = u3[0]
u3.requires_grad_()
print(u4.requires_grad, u4.grad_fn, u4.is_leaf)
""")


def test_prod_over_a_size_one_dim_differentiates_as_pytorch_without_zeros() -> None:
    # without zeros the gradient is g * (result / input), a MulBackward0
    check("""
t10 = torch.tensor([1.0], requires_grad=True)
g12, = torch.autograd.grad(t10.prod(0), t10, create_graph=True)
print(g12)
t9 = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]], dtype=torch.float64, requires_grad=True).view(4, 1)
t11 = torch.prod(t9, -1)
print(torch.autograd.grad(t11, t9, grad_outputs=torch.full_like(t11, -1.0), create_graph=True))
""")
