"""Custom `torch.autograd.Function`s under adcli and under PyTorch 2.13: the errors a
wrong backward gets (number, type and shape of its gradients), the ctx API's errors,
and the printed `grad_fn` (its repr, name() and class name).

Every case is a script (`import torch` first) printing values and `repr` of errors,
run by adcli and by Python with the real torch; the printed text must be equal, word
for word (memory addresses aside). Whole tutorial-style programs are in
`scripts/custom_fn_*.ad`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

from tests.conformance.printed import check  # noqa: E402

# A class whose backward returns `RESULT`, a function of its gradient `g` and inputs.
_RETURNS = """
class Ret(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, k):
        return a * b * k

    @staticmethod
    def backward(ctx, g):
        return RESULT

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
def go():
    a.grad = None
    Ret.apply(a, b, 2).sum().backward()
    return a.grad
run([go])
"""


@pytest.mark.parametrize(
    "result",
    [
        "g",  # too few
        "g, g",  # too few (the number counts the non-tensor argument too)
        "g, g, None, None",  # extra trailing Nones are dropped
        "g, g, None, g",  # too many
        "g, g, 2.0",  # a gradient for the non-tensor argument
        "g, g, g",
        "3.0, g, None",  # not a tensor
        "[g], g, None",
        "torch.ones(3), g, None",  # a shape that does not fit
        "torch.ones(1), g, None",
        "torch.ones(2, 2), g, None",  # expandable: summed to the input's shape
        "torch.ones(1, 2), g, None",
        "g.double(), g, None",  # cast to the input's dtype
        "(g * 2).long(), g, None",
        "None, torch.ones(5), None",  # b's wrong shape is reported at b's index
        "None, None, None",
    ],
)
def test_gradients_returned_by_backward_are_checked(result: str) -> None:
    check(_RETURNS.replace("RESULT", result))


def test_gradient_for_an_input_that_needs_none_is_not_checked() -> None:
    check("""
class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, torch.ones(5)

a = torch.tensor([1.0, 2.0], requires_grad=True)
c = torch.ones(2)
Two.apply(a, c).sum().backward()
print(a.grad, c.grad)
""")


def test_printed_grad_fn_and_flags() -> None:
    check("""
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        r = i.exp()
        ctx.save_for_backward(r)
        print("in forward:", len(ctx.saved_tensors), r.requires_grad)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Exp.apply(x * 2)
print(y)
print(y.grad_fn)
print(repr(y.grad_fn), type(y.grad_fn).__name__, y.grad_fn.name())
print(y.grad_fn.next_functions[0][0].name(), y.grad_fn.needs_input_grad)
print(y.grad_fn.saved_tensors)
print(y.grad_fn.metadata)
print(y.is_leaf, y.requires_grad, y.dtype, y.shape)
y.sum().backward()
run([lambda: y.grad_fn.saved_tensors, lambda: y.sum().backward()])
with torch.no_grad():
    z = Exp.apply(x)
print(z, z.requires_grad, z.is_leaf, z.grad_fn)
w = Exp.apply(torch.ones(2, dtype=torch.float64))
print(w, w.requires_grad, w.grad_fn)
""")


def test_needs_input_grad_and_outputs_that_get_no_grad_fn() -> None:
    check("""
class N(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, k):
        print("needs", ctx.needs_input_grad)
        return a * b * k, (a * k).long(), [a], 7

    @staticmethod
    def backward(ctx, g, g_int, g_list, g_num):
        print("backward got", g, g_int, g_list, g_num, ctx.needs_input_grad)
        return g, None, None

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0])
out, as_int, as_list, num = N.apply(a, b, 2)
print(out, as_int, as_int.requires_grad, as_list, num)
out.sum().backward()
print(a.grad)
with torch.no_grad():
    out2 = N.apply(a, b, 2)[0]
print(out2.requires_grad)
print(N.apply(b, b, 2)[0].requires_grad)
""")


def test_ctx_attributes_and_their_errors() -> None:
    check("""
class C(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.shape = x.shape
        ctx.parts = [1, 2]
        return x * scale

    @staticmethod
    def backward(ctx, g):
        print(ctx.scale, ctx.shape, ctx.parts)
        try:
            ctx.missing
        except AttributeError as e:
            print(repr(e))
        return g * ctx.scale, None

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = C.apply(x, 3.0)
print(y.grad_fn.scale, y.grad_fn.shape)
y.grad_fn.scale = 10.0
y.sum().backward()
print(x.grad)
""")


def test_save_for_backward_errors_and_version_checks() -> None:
    check("""
class S(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, what):
        ctx.save_for_backward(a, what)
        print("saved")
        return a * 2

    @staticmethod
    def backward(ctx, g):
        a, what = ctx.saved_tensors
        return g * 2, None

class Ex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        r = i.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r

x = torch.tensor([1.0, 2.0], requires_grad=True)
print(S.apply(x, None))
run([lambda: S.apply(x, 3), lambda: S.apply(x, [x])])

def changed_input():
    z = x * 1
    y = S.apply(z, None)
    z.add_(1)
    y.sum().backward()

def changed_output():
    y = Ex.apply(x * 1)
    with torch.no_grad():
        y.mul_(2)
    y.sum().backward()

def retained():
    y = Ex.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    y.sum().backward()

x.grad = None
run([changed_input, changed_output, retained])
print(x.grad)
""")


def test_mark_dirty_and_non_differentiable() -> None:
    check("""
class AddOne(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g

class DirtyNotReturned(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g

class NotDifferentiable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable(x)
        y = x * 2
        return x, y

    @staticmethod
    def backward(ctx, gx, gy):
        print("gx", gx)
        return gy * 2

a = torch.tensor([1.0, 2.0], requires_grad=True)
h = a * 1
r = AddOne.apply(h)
print(r is h, h, h.grad_fn)
leaf = torch.tensor([1.0], requires_grad=True)
run([lambda: AddOne.apply(leaf), lambda: DirtyNotReturned.apply(torch.ones(2))])
print(leaf)
with torch.no_grad():
    print(AddOne.apply(leaf))
p, q = NotDifferentiable.apply(a)
print(p, p.requires_grad, p is a, q)
q.sum().backward()
print(a.grad)
""")


def test_missing_methods_legacy_calls_and_keywords() -> None:
    check("""
class NoBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

class NoForward(torch.autograd.Function):
    pass

class Both(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g

    @staticmethod
    def vjp(ctx, g):
        return g

class ByVjp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def vjp(ctx, g):
        return g * 2

class K(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k=2, b=None):
        print("needs", ctx.needs_input_grad)
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * 2, None

x = torch.tensor([1.0, 2.0], requires_grad=True)
run([
    lambda: NoBackward.apply(x).sum().backward(),
    lambda: NoForward.apply(x),
    lambda: Both.apply(x).sum().backward(),
    lambda: NoBackward()(x),
    lambda: K.apply(x, k=3),
    lambda: K.apply(k=3, x=x),
    lambda: K.apply(x, b=x),
    lambda: K.apply(x, z=3),
    lambda: K.apply(x, x=x),
])
x.grad = None
ByVjp.apply(x).sum().backward()
print(x.grad)
""")


def test_setup_context_style() -> None:
    check("""
class Mul(torch.autograd.Function):
    @staticmethod
    def forward(a, b, scale=1.0):
        print("forward grad mode", torch.is_grad_enabled())
        return a * b * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, scale = inputs
        print("setup", type(inputs).__name__, scale, output, torch.is_grad_enabled())
        ctx.save_for_backward(a, b)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.scale, g * a * ctx.scale, None

class WithCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0])
y = Mul.apply(a, b, scale=2.0)
print(y)
y.sum().backward()
print(a.grad)
run([lambda: Mul.apply(a, b, 1.0, 2.0), lambda: WithCtx.apply(a), lambda: Mul.apply(a)])
""")


def test_once_differentiable() -> None:
    check("""
from torch.autograd.function import once_differentiable

class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        print("in backward:", torch.is_grad_enabled(), g.requires_grad)
        return 2 * x * g

x = torch.tensor([1.0, 2.0], requires_grad=True)
(g,) = torch.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
print(g, g.requires_grad, g.grad_fn)
(g,) = torch.autograd.grad((Sq.apply(x) ** 2).sum(), x, create_graph=True)
print(g, g.grad_fn.name(), type(g.grad_fn).__name__, g.grad_fn.next_functions[0][0].name())
run([lambda: g.sum().backward()])
""")


def test_gradcheck_of_a_wrong_backward() -> None:
    check("""
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2  # forgets g

class Half(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 2

x1 = torch.tensor([0.5], dtype=torch.double, requires_grad=True)
x2 = torch.tensor([0.5, 2.0], dtype=torch.double, requires_grad=True)
run([
    lambda: torch.autograd.gradcheck(Cube.apply, (x1,)),
    lambda: torch.autograd.gradcheck(Cube.apply, (x1,), raise_exception=False),
    lambda: torch.autograd.gradcheck(Cube.apply, (x2,)),
    lambda: torch.autograd.gradcheck(Half.apply, (x2,), raise_exception=False),
])
""")


def test_ctx_attribute_deleted() -> None:
    check("""
class C(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.k = 2
        del ctx.k
        try:
            del ctx.k
        except AttributeError as e:
            print(repr(e))
        ctx.k = 3
        return x * ctx.k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k

x = torch.ones(2, requires_grad=True)
C.apply(x).sum().backward()
print(x.grad)
""")
