"""Operation edge cases the differential fuzzer found, each run by adcli and by PyTorch.

Every case is a small script (`import torch` first, as `.ad` files are) whose lines
print records, `repr(e)` for an exception; adcli runs it through its runner and
Python runs it with the real torch, and the printed text must be equal, word for
word. One case per root cause: empty tensors (cat's legacy 1-d empties, reductions
over empty dims), in-place results (shape, dtype, memory overlap, copy_ into a
non-float tensor), argument handling, promotion and values (clamp's dtype, softplus'
double backward, mean's DivBackward1, SGD with a parameter listed twice).
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

from tests.conformance.printed import check  # noqa: E402

# ************************************************************ 4. empty tensors


def test_cat_skips_legacy_empty_tensors() -> None:
    check("""
e = torch.tensor([])
a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
ei = torch.zeros(0, requires_grad=True)
r = torch.cat([ei, a, ei], 0)
r.sum().backward()
print(r, ei.grad, a.grad)
run([
    lambda: torch.cat([e, a], 0), lambda: torch.cat([a, e], -1), lambda: torch.cat([e, e]),
    lambda: torch.cat([e, a.int()]).dtype, lambda: torch.cat([e], 1),
    lambda: torch.cat([e, torch.tensor(1.0)]), lambda: torch.cat([a, e], 2),
    lambda: torch.cat([e, a, torch.ones(3, 3)], 1), lambda: torch.cat([a, torch.ones(2)]),
    lambda: torch.chunk(torch.zeros(0), 3, 0),
])
""")


def test_reductions_over_empty_dims() -> None:
    check("""
e = torch.zeros(0)
e2 = torch.zeros(2, 0)
run([
    lambda: torch.amax(e, 0), lambda: e.amax(), lambda: e2.amax(1), lambda: e2.amax(0),
    lambda: e2.amin((0, 1)), lambda: e.argmax(), lambda: e.argmax(-1), lambda: e2.argmin(1),
    lambda: e2.argmin(0), lambda: e.max(0), lambda: torch.min(e2, 1), lambda: e2.max(0),
    lambda: e.norm(float('inf')), lambda: e2.norm(-1, 1), lambda: e2.norm(float('-inf'), 0),
    lambda: e.norm(1),
])
""")


def test_out_of_bounds_index_on_an_empty_dim() -> None:
    check("""
t = torch.tensor([-1.0, 1.0]).narrow(-1, 2, 0)
def put():
    t[[0]] = -1
run([put, lambda: t[[0]], lambda: torch.zeros(2, 0)[:, [1]], lambda: torch.zeros(3)[[5]]])
""")


# ************************************************************ 9. in-place ops


def test_inplace_result_shape_and_dtype_checks() -> None:
    check("""
def div0d():
    t = torch.tensor(-2)
    t /= torch.tensor([[[1]]])
def grow():
    t = torch.tensor([[1.0]])
    t += torch.tensor([[1.0], [-1.0]])
def view_grow():
    v = torch.zeros(2, 3, requires_grad=True).clone()[0]
    v += torch.ones(2, 3)
def view_cast():
    v = torch.zeros(2, 3, dtype=torch.int64)[0]
    v += torch.ones(3, requires_grad=True)
run([
    div0d, grow, view_grow, view_cast,
    lambda: torch.tensor(1.0).copy_(torch.zeros((1, 2, 2))),
    lambda: torch.rand(3).copy_(torch.tensor([[[-1.0, 1.0]]])),
    lambda: torch.tensor(1.0).mul_(torch.tensor([[-1.0, -1.0]])),
])
""")


def test_inplace_and_bool_or_int_operands() -> None:
    check("""
b = torch.tensor([True, False])
i = torch.tensor([4, -3])
def isub():
    c = b.clone()
    c -= torch.tensor(1.0)
run([
    isub, lambda: b - 1, lambda: 1 - b, lambda: b - b, lambda: i - b, lambda: i - True,
    lambda: torch.tensor([1.5]) - False, lambda: torch.sub(torch.tensor([1.5]), True, alpha=2),
    lambda: b.clone().relu_(), lambda: F.relu(b), lambda: b.clone().abs_(), lambda: b.floor(),
    lambda: b.ceil(), lambda: b.round(), lambda: F.leaky_relu(b), lambda: F.softplus(b),
    lambda: torch.tensor([2]).clamp_(min=-1.0), lambda: torch.tensor([[False]]).clamp_(min=-1.0),
    lambda: b.clone().clamp_(min=1), lambda: b.clone().clamp_(min=True), lambda: b.clamp(max=0),
    lambda: i.clamp(max=1.0), lambda: i.clamp(min=0.5, max=2), lambda: b.clamp(min=False, max=True),
    lambda: i.to(torch.int8).clamp(max=300), lambda: i.to(torch.uint8).clamp(max=-1),
    lambda: torch.tensor([1.0], dtype=torch.float16).clamp(max=1e10),
])
""")


def test_inplace_memory_overlap() -> None:
    check("""
def e():
    return torch.zeros(1).expand(3)
def grad_fill():
    t = torch.rand((3,), requires_grad=True)
    g, = torch.autograd.grad(t.sum(), t)
    return g.fill_(1)
def partial(k):
    x = torch.arange(6.0)
    return [
        lambda: x.add_(torch.as_strided(x, (1,), (1,))), lambda: x.add_(x),
        lambda: x[:3].copy_(x[1:4]), lambda: x[::2].add_(x[1::2]),
        lambda: x.view(2, 3)[:, :2].add_(1), lambda: x.clamp_(min=x[0]),
        lambda: x.masked_fill_(x > 2, x[0]), lambda: x.fill_(x[1])
    ][k]()
run([
    lambda: e().fill_(1), lambda: e().zero_(), lambda: e().add_(1),
    lambda: e().copy_(torch.ones(3)),
    grad_fill, lambda: partial(0), lambda: partial(1), lambda: partial(2), lambda: partial(3),
    lambda: partial(4), lambda: partial(5), lambda: partial(6), lambda: partial(7),
])
""")


def test_copy_into_a_non_float_tensor_records_nothing() -> None:
    check("""
r = torch.ones(2, requires_grad=True)
def sliced():
    i = torch.zeros(2, dtype=torch.int64)
    i[0:1] = r[:1]
    return i
def viewed():
    i = torch.zeros(2, 2, dtype=torch.int64)
    v = i[0]
    v.copy_(r)
    return i, v
run([lambda: torch.zeros(2, dtype=torch.int64).copy_(r), sliced, viewed,
     lambda: torch.zeros(2, dtype=torch.bool).copy_(r)])
""")


# ************************************************************ 12. argument handling


def test_argument_handling() -> None:
    check("""
t = torch.tensor([1.0, 2.0])
t2 = torch.tensor([[3.0, 1.0]])
run([
    lambda: torch.max(t, -1.0), lambda: t.max(-1.0), lambda: torch.min(t, True), lambda: t.min('a'),
    lambda: t2.max(1), lambda: t.max(other=t), lambda: torch.equal(t, 1.0),
    lambda: torch.equal(1.0, t), lambda: t.equal(1.0), lambda: torch.allclose(t, -1.0),
    lambda: t.allclose(1), lambda: torch.equal(t, t), lambda: torch.concatenate((t,), axis=0),
    lambda: torch.concat([t2, t2], axis=1), lambda: torch.cat([t], dim=0, axis=0),
    lambda: t.clone().copy_(1.5), lambda: torch.zeros(2, dtype=torch.int64).copy_(-2.7),
    lambda: t.copy_(None), lambda: torch.tensor([]) & torch.tensor([]),
    lambda: t.double() | t.double(), lambda: torch.tensor([[False]]) ^ 1.0,
])
""")


# ************************************************************ 13. values


def test_softplus_double_backward_at_the_threshold() -> None:
    check("""
for v in [2.0, 1.0, -3.0, 2.5]:
    x = torch.tensor([v, -v], requires_grad=True)
    y = F.softplus(x, beta=0.5, threshold=1.0)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    gg, = torch.autograd.grad((g * torch.tensor([1.0, -2.0])).sum(), x)
    print(g, gg)
""")


def test_mean_backward_divides_by_a_number() -> None:
    check("""
x = torch.tensor([-1.0, 3.0], requires_grad=True)
m = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
print(torch.autograd.grad(torch.reciprocal(x.mean()), x, create_graph=True))
print(torch.autograd.grad((m.mean(0) ** 2).sum(), m, create_graph=True))
""")


def test_sgd_with_a_parameter_listed_twice() -> None:
    check("""
kws = [dict(momentum=1.0), dict(momentum=0.9, nesterov=True), dict(momentum=0.5, dampening=0.3)]
for kw in kws:
    t = torch.tensor([1.0, -2.0], requires_grad=True)
    u = torch.tensor([3.0], requires_grad=True)
    o = torch.optim.SGD([t, u, t], lr=0.1, **kw)
    for _ in range(3):
        o.zero_grad()
        ((t * t).sum() + u.sum() * 2).backward()
        o.step()
    print(t, u)
""")


def test_sgd_warns_of_a_parameter_listed_twice() -> None:
    from adcli.autograd import ops, optim
    from adcli.autograd.config import _default_warn, config

    messages = []
    for lib in (torch, None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if lib is torch:
                t = torch.ones(1, requires_grad=True)
                torch.optim.SGD([t, t])
            else:
                saved, config.warn = config.warn, _default_warn
                try:
                    a = ops.ones(1, requires_grad=True)
                    optim.SGD([a, a])
                finally:
                    config.warn = saved
        messages.append([(w.category, str(w.message)) for w in caught])
    assert messages[0] == messages[1] and messages[0]


def test_repeat_backward_follows_pytorch_steps() -> None:
    check("""
cases = [((1, 2), (1, 1)), ((2, 3), (2, 1, 2)), ((2,), (2, 1)), ((3,), (1, 1, 1)),
         ((2, 2), (0, 1)), ((1, 2), (2, 2))]
for shape, reps in cases:
    x = torch.ones(shape).requires_grad_()
    y = x.repeat(*reps)
    g, = torch.autograd.grad((y * y).sum(), x, create_graph=True)
    print(g, g.grad_fn.next_functions if g.grad_fn is not None else None)
    g2, = torch.autograd.grad(y.sum(), x)
    run([lambda: g2.sub_(1.0)])
""")


# ************************************************************ signs of zero


def test_nll_loss_sums_into_a_positive_zero() -> None:
    # one sample or a reduction: PyTorch's kernel accumulates from +0 (a -0 loss is +0)
    check("""
x = torch.tensor([[0.0, -0.0], [0.0, 1.0]])
print(F.nll_loss(x, torch.tensor([0, 1]), reduction='none'))
print(F.nll_loss(torch.arange(0.0, 1.0, 1.0), torch.tensor(0), reduction='none'))
print(F.nll_loss(torch.tensor([[0.0, -0.0]]), torch.tensor([1]), reduction='none'))
print(F.nll_loss(torch.tensor([0.0, -0.0]), torch.tensor(1), reduction='none'))
print(F.nll_loss(torch.tensor([0.0, -0.0]), torch.tensor(0), reduction='none'))
print(F.nll_loss(torch.tensor([0.0, -2.0]), torch.tensor(1), reduction='none'))
print(F.nll_loss(torch.tensor([[0.0, -0.0]]), torch.tensor([0]), reduction='none'))
print(F.nll_loss(torch.tensor([[0.0, -0.0]]), torch.tensor([0]), reduction='sum'))
print(F.nll_loss(torch.tensor([[0.0, -0.0]]), torch.tensor([0]), reduction='mean'))
w = torch.tensor([2.0, 1.0])
print(F.nll_loss(torch.tensor([[0.0, -0.0]]), torch.tensor([0]), weight=w, reduction='none'))
print(F.nll_loss(torch.tensor([0.0, -0.0]), torch.tensor(0), weight=w, reduction='mean'))
""")


def test_float32_p_norms_round_as_pytorch_on_exact_values() -> None:
    # |x|^p rounded once, then powf: a norm that is an integer prints as one
    check("""
t3 = torch.tensor([3.0])
print(torch.norm(t3, p=3, keepdim=True), torch.norm(t3, p=3), t3.norm(3))
print(torch.linalg.vector_norm(t3, 3))
print(torch.norm(torch.tensor([3.0, 4.0]), p=1.5), torch.norm(torch.tensor([3.0]), p=1.5))
""")


def test_reshape_of_nothing_and_allclose_shapes_are_refused_as_pytorch() -> None:
    check("""
run([
    lambda: torch.tensor([]).reshape(-1, 0), lambda: torch.zeros(0).view(0, -1),
    lambda: torch.zeros(4).reshape(-1, 0), lambda: torch.zeros(0).reshape(2, -1),
    lambda: torch.allclose(torch.ones(3), torch.ones(2)),
    lambda: torch.allclose(torch.ones(3), torch.ones(1, 3)),
])
""")


def test_clamp_names_the_shape_so_far_and_the_next_bound_when_they_do_not_broadcast() -> None:
    check("""
a = torch.zeros(2, 2)
z = torch.zeros
for lo, hi in [(z(1, 3, 2), None), (None, z(3, 1)), (z(3), z(2)), (z(2), z(3)),
               (z(1, 3, 2), z(4, 1, 1))]:
    try:
        print(torch.clamp(a, lo, hi).shape)
    except Exception as e:
        print(repr(e))
""")


def test_masked_fill_on_an_expanded_view_of_a_leaf_refuses_before_it_warns() -> None:
    from adcli.autograd import ops
    from adcli.autograd.config import _default_warn, config

    messages = []
    for lib in (torch, None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = torch if lib is torch else ops
            saved, config.warn = config.warn, _default_warn
            try:
                t = m.ones(1, 3, requires_grad=True).expand(2, 3)
                t.masked_fill_(t > 0, 0.75)
            except RuntimeError as e:
                caught.append(warnings.WarningMessage(str(e), RuntimeError, "", 0))
            finally:
                config.warn = saved
        messages.append([(w.category, str(w.message)) for w in caught])
    assert messages[0] == messages[1] and messages[0]


def test_amax_and_amin_keep_the_first_of_zeros_of_both_signs() -> None:
    check("""
for v in ([0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0, 0.0, -0.0], [1.0, -0.0], [-1.0, 0.0, -0.0]):
    t = torch.tensor(v)
    print(t.amax(), t.amin(), t.amax(0), t.amin(-1, keepdim=True), torch.amax(t.view(-1, 1), 0))
t = torch.tensor([[0.0, 0.0, 0.0], [-0.0, -0.0, -0.0]])
print(t.amax(0), t.amax(1), t.amin(0), t.amin((0, 1)), t.t().amax(1), t.amax((1, 0), keepdim=True))
print(torch.amax(torch.tensor(-0.0), 0), torch.amax(torch.zeros(3, 0), 0))
t10 = torch.tensor([1.0, -1.0])
print(torch.amax(t10.outer(torch.full((3,), 0.0)), 0))
""")


def test_float32_powers_round_as_pytorch_on_exact_values() -> None:
    # computed in float64 and rounded once: (1/3) ** -2 prints as 9.
    check("""
t1 = torch.tensor([-2.0, 1.0, -1.0], requires_grad=True)
g9, = torch.autograd.grad(t1.mean(), t1)
print(torch.pow(g9, t1), torch.pow(torch.tensor([4.0, 9.0]), torch.tensor([0.5, 1.5])))
print(torch.pow(torch.tensor([4.0, 8.0]), 1.5), torch.pow(2.0, torch.tensor([3.0, -2.0, 0.5])))
""")


def test_amax_names_the_empty_dim_as_given_and_expand_checks_from_the_last_dim() -> None:
    check("""
t = torch.zeros(2, 0, 3)
run_cases = [lambda: t.amax(-2), lambda: t.amax((0, -2)), lambda: t.amin(1),
    lambda: t.amax((-2, 0)),
             lambda: torch.zeros(0).amax(-1), lambda: torch.zeros(0).amin(0), lambda: t.max(-2),
    lambda: t.argmax(-2)]
for f in run_cases:
    try:
        print(f())
    except Exception as e:
        print(repr(e))
for sh, tg in [((2, 2), (-1, 3)), ((2, 3), (3, -1)), ((2, 0), (2, 1, 3)), ((3, 2), (4, -1))]:
    try:
        torch.zeros(sh).expand(*tg)
    except Exception as e:
        print(repr(e))
t2 = torch.rand(2, 1, 3)
for v in [torch.tensor([[], []]), torch.zeros(2, 2), torch.zeros(3, 1, 3)]:
    try:
        t2[:, ] = v
        print('ok')
    except Exception as e:
        print(repr(e))
""")


def test_results_are_laid_out_as_pytorch_lays_them_out() -> None:
    # ravel is contiguous().view(-1); softmax's results and comparisons of expanded
    # tensors are contiguous, so views of them work
    check("""
t3 = torch.tensor([1.0, 1.0]).requires_grad_()
g9, = torch.autograd.grad(t3.sum(), t3)
g9.requires_grad_()
print(g9.ravel(), torch.ravel(g9))
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
for y in (x.t(), x * 1, x[:, :1], x.expand(2, 2, 2), torch.tensor(2.0, requires_grad=True) * 1):
    r = y.ravel()
    print(r, r.grad_fn.next_functions)
t2 = torch.tensor([[[-1.0, 0.0], [-1.0, -1.0]]], requires_grad=True)
t7 = t2.permute(2, 0, 1)
for f in (lambda t: F.log_softmax(t, 1), lambda t: F.softmax(t, 2), lambda t: t.softmax(0),
    lambda t: t.log_softmax(-1)):
    y = f(t7)
    r = y.reshape(-1, 1)
    print(y.is_contiguous(), r.grad_fn.next_functions)
t1 = torch.zeros((3,))
t2 = t1.expand((2, 3, -1))
t4 = torch.tensor(0.0)
t5 = torch.masked_fill(t2, t2 > 1.0, t4)
t10 = t5.view(3, 1, 6)
print(t10.shape, t5.is_contiguous(), (t2 > 1.0).is_contiguous())
""")


def test_copying_a_tensor_into_itself_is_skipped_even_when_expanded() -> None:
    check("""
g = torch.zeros(3)
g[:] = g
g.copy_(g)
print(g)
e = torch.zeros(()).expand(3)
e[:] = e
e.copy_(e)
e[...] = e
e[0:3] = e
print(e)
x = torch.ones(3, requires_grad=True)
try:
    x.copy_(x)
except Exception as ex:
    print(repr(ex))
t10 = torch.tensor([-1.0, 1.0], requires_grad=True)
g13, = torch.autograd.grad(t10.sum(), t10)
g13[:] = g13
print(g13)
""")


def test_masked_fill_on_an_empty_expanded_tensor_does_not_warn() -> None:
    from adcli.autograd import ops
    from adcli.autograd.config import _default_warn, config

    messages = []
    for m in (torch, ops):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            saved, config.warn = config.warn, _default_warn
            try:
                for t in (
                    m.ones(3, 1).expand(3, 2)[:0],
                    m.zeros(1, 2, 0),
                    m.ones(3, 1).expand(3, 2),
                ):
                    t.masked_fill_(t > 5, 1.0)
            finally:
                config.warn = saved
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def test_l1_and_mse_loss_warn_of_a_target_of_another_size() -> None:
    from adcli.autograd import ops
    from adcli.autograd.config import _default_warn, config

    messages = []
    for m in (torch, ops):
        f = torch.nn.functional if m is torch else ops
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            saved, config.warn = config.warn, _default_warn
            try:
                for loss in (f.l1_loss, f.mse_loss):
                    for target in (m.ones(1), m.zeros(0), m.ones(2)):
                        try:
                            loss(m.ones(2), target)
                        except RuntimeError as e:
                            caught.append(warnings.WarningMessage(str(e), RuntimeError, "", 0))
            finally:
                config.warn = saved
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 6
