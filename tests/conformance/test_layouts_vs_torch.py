"""The layout (strides) of elementwise results, run by adcli and by PyTorch.

PyTorch's TensorIterator allocates an elementwise result contiguous when its operands
are, else dense in an order of dims its operands' strides decide (a broadcast
operand's 0 stride passing the decision to the next operand); NumPy orders its output
otherwise, and `reshape` then copies (UnsafeViewBackward0) where PyTorch views
(ViewBackward0), fuzz s23final:7361. A grid of operand layouts (contiguous,
transposed, permuted, expanded in various dims, size-1 dims, stepped slices, 0-d,
another dtype) goes through binary, unary and ternary ops; each result's shape,
strides, is_contiguous and a following reshape's grad_fn must print as PyTorch's.
`storage.iterator_result`'s rule is also checked directly against PyTorch on random
layouts.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

from adcli.autograd import storage  # noqa: E402
from tests.conformance.printed import check  # noqa: E402

# operands broadcastable to (2, 3, 4), each in another layout, and how a result prints
OPERANDS = """
def leaf(*shape):
    n = 1
    for s in shape:
        n = n * s
    return torch.linspace(0.5, 3.0, n).reshape(shape).requires_grad_()

# operands broadcastable to (2, 3, 4), each in another layout
makers = [
    ("contig", lambda: leaf(2, 3, 4)),
    ("reversed", lambda: leaf(4, 3, 2).permute(2, 1, 0)),
    ("permuted", lambda: leaf(3, 2, 4).permute(1, 0, 2)),
    ("transposed", lambda: leaf(2, 4, 3).transpose(1, 2)),
    ("expand0", lambda: leaf(1, 3, 4).expand(2, 3, 4)),
    ("expand_col", lambda: leaf(3, 1).expand(2, 3, 4)),
    ("expand_row", lambda: leaf(4).expand(2, 3, 4)),
    ("expand_t", lambda: leaf(4, 3).t().expand(2, 3, 4)),
    ("size1", lambda: leaf(2, 1, 4)),
    ("size1_t", lambda: leaf(4, 1, 2).permute(2, 1, 0)),
    ("col", lambda: leaf(3, 1)),
    ("stepped", lambda: leaf(4, 6, 8)[::2, ::2, ::2]),
    ("stepped_t", lambda: leaf(8, 6, 4)[::2, ::2, ::2].permute(2, 1, 0)),
    ("zero_d", lambda: leaf()),
    ("double_t", lambda: leaf(4, 3, 2).double().permute(2, 1, 0)),
    ("long_p", lambda: torch.arange(24).reshape(3, 2, 4).permute(1, 0, 2) + 1),
]

def show(name, r):
    g = r.reshape(-1).grad_fn
    print(name, tuple(r.shape), r.stride(), r.is_contiguous(), g)
"""


def test_binary_ops_over_a_grid_of_layouts() -> None:
    check(
        OPERANDS
        + """
binary = [
    ("add", lambda a, b: torch.add(a, b, alpha=-1)),
    ("mul", lambda a, b: a * b),
    ("sub", lambda a, b: a - b),
    ("div", lambda a, b: a / b),
    ("maximum", lambda a, b: torch.maximum(a, b)),
    ("pow", lambda a, b: a ** b),
    ("gt", lambda a, b: a > b),
    ("where", lambda a, b: torch.where(a > 1.5, a, b)),
    ("clamp", lambda a, b: torch.clamp(a, min=b)),
]
for na, ma in makers:
    for nb, mb in makers:
        for nop, op in binary:
            try:
                show(nop + " " + na + " " + nb, op(ma(), mb()))
            except Exception as e:
                print(nop, na, nb, repr(e))
"""
    )


def test_numbers_unary_ops_masked_fill_clamp_and_where_condition() -> None:
    check(
        OPERANDS
        + """
# a number operand, unary ops, masked_fill, a 3-operand clamp and where's condition first
for na, ma in makers:
    a = ma()
    show("number " + na, a * 2)
    show("rsub " + na, 1 - a)
    show("exp " + na, a.exp())
    show("neg " + na, -a)
    show("relu " + na, torch.relu(a))
    show("sigmoid " + na, torch.sigmoid(a))
    show("isnan " + na, torch.isnan(a))
    show("not " + na, torch.logical_not(a > 1))
    show("clamp_n " + na, a.clamp(1.0, 2.0))
    show("pow_n " + na, a ** 2)
    show("base_pow " + na, 2 ** a)
    show("masked_fill " + na, a.masked_fill(torch.ones(3, 4, dtype=torch.bool), 0.5))
    show("clamp3 " + na, torch.clamp(leaf(2, 3, 4), a, leaf(4, 3, 2).permute(2, 1, 0)))
    for nc, mc in makers[:8]:
        show("where_cond " + na + " " + nc, torch.where(mc() > 1.5, a, leaf(2, 3, 4)))
"""
    )


def test_gradients_through_layouts() -> None:
    check(
        OPERANDS
        + """
# gradients flowing back through these layouts
for na, ma in makers[:12]:
    a = ma()
    y = (a * leaf(2, 3, 4)).tanh()
    g, = torch.autograd.grad(y.sum(), a, create_graph=True)
    show("grad " + na, g)
"""
    )


def test_empty_operands() -> None:
    check(
        OPERANDS
        + """
# empty operands (PyTorch's strides of an empty result are not all kept: shapes only)
for x, y in [(torch.ones(0, 3), torch.ones(2, 1, 3)), (torch.ones(2, 0).t(), torch.ones(1)),
             (torch.ones(3, 0, 2).permute(2, 1, 0), torch.ones(2, 1, 3))]:
    r = x + y
    print(tuple(r.shape), r.is_contiguous(), (x * 2).is_contiguous())
"""
    )


def _random_operand(shape: tuple[int, ...], rng: random.Random) -> torch.Tensor:
    """A tensor of `shape` in a random layout."""
    kind = rng.choice(["contiguous", "permuted", "expanded", "stepped"])
    n = len(shape)
    if kind == "contiguous" or n == 0:
        return torch.zeros(shape)
    if kind == "permuted":
        p = list(range(n))
        rng.shuffle(p)
        return torch.zeros([shape[i] for i in p]).permute(*np.argsort(p).tolist())
    if kind == "expanded":
        small = tuple(1 if rng.random() < 0.5 else s for s in shape)
        return _random_operand(small, rng).expand(shape)
    return torch.zeros([2 * s for s in shape])[tuple(slice(None, None, 2) for _ in shape)]


@pytest.mark.parametrize("seed", range(4))
def test_iterator_result_strides_are_pytorchs(seed: int) -> None:
    """Random operands (broadcast, size-1 dims, up to three): the strides
    iterator_result gives NumPy's result are those of PyTorch's."""
    rng = random.Random(seed)
    for _ in range(400):
        n = rng.choice([2, 3, 4])
        shape = tuple(rng.choice([1, 2, 3]) for _ in range(n))
        operands = []
        for _ in range(rng.choice([1, 2, 3])):
            sh = shape
            if rng.random() < 0.4:
                sh = tuple(s if rng.random() < 0.6 else 1 for s in shape)[rng.randint(0, n) :]
            operands.append(_random_operand(sh, rng))
        if len(operands) == 1:
            r = operands[0].exp()
        elif len(operands) == 2:
            r = operands[0] + operands[1]
        else:
            operands[0] = operands[0] > 0
            r = torch.where(*operands)
        arrays = [t.numpy() for t in operands]
        out = storage.iterator_result(np.zeros(tuple(r.shape), np.float32), arrays)
        assert storage.torch_strides(out) == r.stride(), [(t.shape, t.stride()) for t in operands]
