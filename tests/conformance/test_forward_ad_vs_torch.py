"""Forward-mode AD against PyTorch: every op row's `jvp` rule, on random inputs.

Each case is one expression written once and run twice, on adcli's torch names
and on real torch: inside a dual level, with every input made dual with a random
tangent (float64), the outputs' primals and tangents must agree.  Backward rows
(TanhBackward, SoftmaxBackwardData, ...) are reached through forward over reverse:
the tangent of a gradient computed inside the level.  A last test checks that the
cases reach every row that declares a `jvp`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

from adcli.autograd import forward_ad  # noqa: E402
from adcli.autograd.node import Function  # noqa: E402
from adcli.scriptlib import torchapi  # noqa: E402


def _adcli_lib() -> SimpleNamespace:
    tables = torchapi.module_table()
    lib = SimpleNamespace(**tables["torch"])
    lib.F = SimpleNamespace(**tables["torch.nn.functional"])
    lib.grad = tables["torch.autograd"]["grad"]
    lib.fwAD = SimpleNamespace(**tables["torch.autograd.forward_ad"])
    return lib


def _torch_lib() -> SimpleNamespace:
    lib = SimpleNamespace(**{n: getattr(torch, n) for n in dir(torch) if not n.startswith("_")})
    lib.F = torch.nn.functional
    lib.grad = torch.autograd.grad
    lib.fwAD = torch.autograd.forward_ad
    return lib


ADCLI = _adcli_lib()
TORCH = _torch_lib()

Case = tuple[str, list[tuple[int, ...]], Callable[..., Any]]


def _gr(T: Any, f: Callable[..., Any], x: Any) -> Any:
    """The gradient of f(x).sum() with respect to x, inside the dual level."""
    (g,) = T.grad(f(x).sum(), x, create_graph=True)
    return g


S = (3, 4)


def _gen(T: Any, seed: int) -> Any:
    """A generator seeded afresh, so each call of a case draws the same sample."""
    return T.Generator().manual_seed(seed)


# fmt: off
CASES: list[Case] = [
    # arithmetic
    ("add", [S, S], lambda T, x, y: x + y),
    ("add_alpha", [S, S], lambda T, x, y: T.add(x, y, alpha=2.5)),
    ("add_number", [S], lambda T, x: x + 2),
    ("add_broadcast", [(4,), S], lambda T, x, y: x + y),
    ("sub", [S, S], lambda T, x, y: x - y),
    ("sub_alpha", [S, S], lambda T, x, y: T.sub(x, y, alpha=3)),
    ("rsub", [S], lambda T, x: 1 - x),
    ("mul", [S, S], lambda T, x, y: x * y),
    ("mul_number", [S], lambda T, x: x * 3),
    ("remainder", [S], lambda T, x: x % 1.5),
    ("remainder_tensor", [S, S], lambda T, x, y: x % (y.abs() + 0.5)),
    ("div", [S, S], lambda T, x, y: x / (y.abs() + 0.5)),
    ("div_number", [S], lambda T, x: x / 4),
    ("div_floor", [S, S], lambda T, x, y: T.div(x, y.abs() + 0.5, rounding_mode="floor")),
    ("normal_mean", [S], lambda T, x: T.normal(x, 1.0, generator=_gen(T, 0))),
    ("normal_std", [S], lambda T, s: T.normal(0.5, s.abs(), generator=_gen(T, 1))),
    ("normal_both", [S, S], lambda T, x, s: T.normal(x, s.abs(), generator=_gen(T, 2))),
    ("pow2", [S], lambda T, x: x**2),
    ("pow3", [S], lambda T, x: x**3),
    ("pow_half", [S], lambda T, x: (x.abs() + 0.1) ** 0.5),
    ("pow0", [S], lambda T, x: x**0),
    ("pow_tensor", [S, S], lambda T, x, y: (x.abs() + 0.1) ** y),
    ("rpow", [S], lambda T, x: 2**x),
    ("neg", [S], lambda T, x: -x),
    ("reciprocal", [S], lambda T, x: T.reciprocal(x.abs() + 0.5)),
    ("maximum", [S, S], lambda T, x, y: T.maximum(x, y)),
    ("minimum", [S, S], lambda T, x, y: T.minimum(x, y)),
    # unary
    ("exp", [S], lambda T, x: x.exp()),
    ("log", [S], lambda T, x: (x.abs() + 0.1).log()),
    ("log1p", [S], lambda T, x: T.log1p(x.abs())),
    ("sqrt", [S], lambda T, x: (x.abs() + 0.1).sqrt()),
    ("abs", [S], lambda T, x: x.abs()),
    ("sin", [S], lambda T, x: x.sin()),
    ("cos", [S], lambda T, x: x.cos()),
    ("tan", [S], lambda T, x: T.tan(x * 0.5)),
    ("asin", [S], lambda T, x: T.asin(x * 0.3)),
    ("acos", [S], lambda T, x: (x * 0.3).acos()),
    ("atan", [S], lambda T, x: T.atan(x)),
    ("rsqrt", [S], lambda T, x: (x.abs() + 0.1).rsqrt()),
    ("tanh", [S], lambda T, x: x.tanh()),
    ("sigmoid", [S], lambda T, x: x.sigmoid()),
    ("relu", [S], lambda T, x: x.relu()),
    ("leaky_relu", [S], lambda T, x: T.F.leaky_relu(x, 0.2)),
    ("prelu", [S, (4,)], lambda T, x, w: T.F.prelu(x, w)),
    ("prelu_one", [S, (1,)], lambda T, x, w: T.F.prelu(x, w)),
    ("softplus", [S], lambda T, x: T.F.softplus(x, beta=2.0, threshold=1.0)),
    ("clamp", [S], lambda T, x: x.clamp(-0.5, 0.5)),
    ("clamp_tensor", [S, S, S], lambda T, x, lo, hi: T.clamp(x, min=lo - 1, max=hi + 1)),
    ("sign", [S], lambda T, x: x.sign()),
    ("sgn", [S], lambda T, x: x.sgn() + x),  # (a ZeroTensor tangent has no numpy())
    ("floor", [S], lambda T, x: x.floor()),
    ("ceil", [S], lambda T, x: x.ceil()),
    ("round", [S], lambda T, x: x.round()),
    ("round_decimals", [S], lambda T, x: T.round(x, decimals=1)),
    ("clone", [S], lambda T, x: x.clone()),
    ("to_float32", [S], lambda T, x: x.float() * 1),
    # reductions
    ("sum", [S], lambda T, x: x.sum()),
    ("sum_dim", [S], lambda T, x: x.sum(1)),
    ("mean", [S], lambda T, x: x.mean()),
    ("mean_dim", [S], lambda T, x: x.mean(0, keepdim=True)),
    ("prod", [S], lambda T, x: x.prod()),
    ("prod_dim", [S], lambda T, x: x.prod(1)),
    ("prod_zero", [S], lambda T, x: (x * T.tensor([0.0, 1, 1, 1], dtype=x.dtype)).prod()),
    ("prod_dim_zero", [S], lambda T, x: (x * T.tensor([0.0, 1, 1, 1], dtype=x.dtype)).prod(1)),
    ("max", [S], lambda T, x: x.max()),
    ("min", [S], lambda T, x: x.min()),
    ("max_dim", [S], lambda T, x: x.max(1).values),
    ("min_dim_keep", [S], lambda T, x: x.min(0, keepdim=True)[0]),
    ("topk", [S], lambda T, x: x.topk(2).values),
    ("topk_dim0", [S], lambda T, x: T.topk(x, 2, dim=0, largest=False)[0]),
    ("sort", [S], lambda T, x: x.sort(0, True).values),
    ("sort_stable", [S], lambda T, x: T.sort(x, stable=True)[0]),
    ("amax", [S], lambda T, x: x.amax(1)),
    ("amin", [S], lambda T, x: x.amin(0)),
    ("norm", [S], lambda T, x: x.norm()),
    ("norm1", [S], lambda T, x: x.norm(p=1)),
    ("norm3_dim", [S], lambda T, x: x.norm(p=3, dim=1)),
    ("norm_inf", [S], lambda T, x: x.norm(p=math.inf)),
    ("logsumexp", [S], lambda T, x: x.logsumexp(1)),
    ("var", [S], lambda T, x: x.var()),
    ("var_dim", [S], lambda T, x: x.var(1)),
    ("std", [S], lambda T, x: x.std()),
    ("std_dim", [S], lambda T, x: x.std(0)),
    ("cumsum", [S], lambda T, x: x.cumsum(1)),
    ("cumprod", [S], lambda T, x: x.cumprod(1)),
    ("cumprod_zero", [S], lambda T, x: (x * T.tensor([1.0, 0, 1, 0], dtype=x.dtype)).cumprod(1)),
    ("roll", [S], lambda T, x: x.roll((1, -1), (0, 1))),
    ("roll_flat", [S], lambda T, x: T.roll(x, 2)),
    # einsum (composed of the rows above), trace, std_mean / var_mean
    ("einsum_matmul", [(2, 3), (3, 4)], lambda T, x, y: T.einsum("ij,jk->ik", x, y)),
    (
        "einsum_bilinear",
        [(2, 3), (4, 3, 2), (2, 2)],
        lambda T, x, w, y: T.einsum("bn,anm,bm->ba", x, w, y),
    ),
    ("einsum_trace", [(3, 3)], lambda T, x: T.einsum("ii", x)),
    ("trace", [(3, 4)], lambda T, x: x.trace()),
    ("std_mean", [S], lambda T, x: T.std_mean(x, 1)),
    ("std_mean_all", [S], lambda T, x: T.std_mean(x)),
    ("var_mean", [S], lambda T, x: T.var_mean(x, 0, keepdim=True)),
    ("tril", [S], lambda T, x: x.tril()),
    ("triu", [S], lambda T, x: T.triu(x, diagonal=1)),
    ("atan2", [S, S], lambda T, a, b: T.atan2(a, b)),
    # linear algebra
    ("mm", [S, (4, 2)], lambda T, a, b: a.mm(b)),
    ("mv", [S, (4,)], lambda T, a, v: T.mv(a, v)),
    ("dot", [(4,), (4,)], lambda T, a, b: T.dot(a, b)),
    ("bmm", [(2, 3, 4), (2, 4, 2)], lambda T, a, b: T.bmm(a, b)),
    ("matmul", [(2, 3, 4), (4,)], lambda T, a, b: a @ b),
    ("addmm", [(2,), S, (4, 2)], lambda T, c, a, b: T.addmm(c, a, b)),
    ("addmm_scaled", [(2,), S, (4, 2)], lambda T, c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2)),
    ("linear", [S, (2, 4), (2,)], lambda T, x, w, b: T.F.linear(x, w, b)),
    # shapes and views
    ("view", [S], lambda T, x: x.view(2, 6)),
    ("reshape_alias", [S], lambda T, x: x.t().reshape(4, 3, 1)),
    ("vector_matmul", [(3,), S], lambda T, v, x: v @ x),
    ("reshape_copy", [S], lambda T, x: x.t().reshape(12)),
    ("transpose", [S], lambda T, x: x.transpose(0, 1)),
    ("t", [S], lambda T, x: x.t()),
    ("permute", [(2, 3, 4)], lambda T, x: x.permute(2, 0, 1)),
    ("squeeze", [(3, 1, 4)], lambda T, x: x.squeeze()),
    ("squeeze_dim", [(3, 1, 4)], lambda T, x: x.squeeze(1)),
    ("squeeze_dims", [(3, 1, 1)], lambda T, x: x.squeeze((1, 2))),
    ("unsqueeze", [S], lambda T, x: x.unsqueeze(1)),
    ("expand", [(3, 1)], lambda T, x: x.expand(3, 4)),
    ("repeat", [S], lambda T, x: x.repeat(2, 1)),
    ("flip", [S], lambda T, x: x.flip(0)),
    ("cat", [S, (1, 4)], lambda T, x, y: T.cat([x, y])),
    ("stack", [S, S], lambda T, x, y: T.stack([x, y], 1)),
    ("split", [S], lambda T, x: x.split(1, dim=0)),
    ("split_sizes", [S], lambda T, x: x.split([1, 3], dim=1)),
    ("unbind", [S], lambda T, x: x.unbind(1)),
    ("narrow", [S], lambda T, x: x.narrow(1, 1, 2)),
    ("select", [S], lambda T, x: x[1]),
    ("slice", [S], lambda T, x: x[:, 1:3]),
    ("alias", [S], lambda T, x: x[...]),
    ("index", [S], lambda T, x: x[T.tensor([2, 0, 2])]),
    ("mask", [S], lambda T, x: x[x > 0]),
    ("as_strided", [S], lambda T, x: T.as_strided(x, (2, 2), (1, 2), 1)),
    ("diagonal", [S], lambda T, x: T.diagonal(x, 1)),
    ("gather", [S], lambda T, x: T.gather(x, 1, T.tensor([[0, 3], [1, 1], [2, 0]]))),
    ("masked_fill", [S], lambda T, x: x.masked_fill(x > 0.5, 2.0)),
    ("masked_fill_tensor", [S, ()], lambda T, x, v: x.masked_fill(x > 0.5, v)),
    ("where", [S, S], lambda T, x, y: T.where(x > 0, x, y)),
    # neural-network functions
    ("softmax", [S], lambda T, x: x.softmax(1)),
    ("log_softmax", [S], lambda T, x: T.log_softmax(x, 0)),
    ("mse_loss", [S, S], lambda T, x, y: T.F.mse_loss(x, y)),
    ("mse_loss_sum", [S, S], lambda T, x, y: T.F.mse_loss(x, y, reduction="sum")),
    ("mse_loss_none", [S, S], lambda T, x, y: T.F.mse_loss(x, y, reduction="none")),
    ("l1_loss", [S, S], lambda T, x, y: T.F.l1_loss(x, y)),
    ("bce", [S, S], lambda T, x, y: T.F.binary_cross_entropy(x.sigmoid(), y.sigmoid())),
    ("bce_weight", [S, S], lambda T, x, y: T.F.binary_cross_entropy(
        x.sigmoid(), y.sigmoid(), weight=T.tensor([1.0, 2, 0.5, 1], dtype=x.dtype))),
    ("nll_loss", [S], lambda T, x: T.F.nll_loss(x.log_softmax(1), T.tensor([0, 3, 1]))),
    ("cross_entropy", [S], lambda T, x: T.F.cross_entropy(x, T.tensor([2, 0, 1]))),
    ("cross_entropy_probs", [S, S], lambda T, x, y: T.F.cross_entropy(
        x, y.softmax(1), label_smoothing=0.1)),
    ("layer_norm", [S, (4,), (4,)], lambda T, x, w, b: T.F.layer_norm(x, (4,), w, b)),
    ("batch_norm", [S, (4,)], lambda T, x, w: T.F.batch_norm(x, None, None, w, None, True)),
    ("batch_norm_eval", [S, (4,)], lambda T, x, b: T.F.batch_norm(
        x, T.zeros(4, dtype=x.dtype), T.ones(4, dtype=x.dtype), None, b)),
    ("group_norm", [(2, 4, 3), (4,)], lambda T, x, w: T.F.group_norm(x, 2, w)),
    ("layer_norm_grad", [S, (4,)], lambda T, x, w: _gr(
        T, lambda r: T.F.layer_norm(r, (4,), w) ** 3, x)),
    ("batch_norm_grad", [S, (4,)], lambda T, x, w: _gr(
        T, lambda r: T.F.batch_norm(r, None, None, w, None, True) ** 3, x)),
    # in place (the op's value rows: zero_, fill_, copy_) and assignment
    ("zero_", [S], lambda T, x: x.clone().zero_()),
    ("fill_", [S], lambda T, x: x.clone().fill_(2.0)),
    ("fill_tensor", [S, ()], lambda T, x, v: x.clone().fill_(v)),
    ("copy_", [S, (4,)], lambda T, x, y: x.clone().copy_(y)),
    ("mul_", [S, S], lambda T, x, y: x.clone().mul_(y)),
    ("view_add_", [S, (4,)], lambda T, x, y: _view_add(x, y)),
    ("setitem", [S, (4,)], lambda T, x, y: _setitem(x, y)),
    ("setitem_plain", [(4,)], lambda T, y: _setitem_plain(T, y)),
    ("grad_setitem", [S, (4,)], lambda T, x, y: _gr(T, lambda v: _setitem(v, y) ** 2, x)),
    ("grad_index_put", [S, (2, 4)], lambda T, x, y: _gr(
        T, lambda v: _index_put(T, v, y) ** 2, x)),
    # backward rows, through forward over reverse
    ("grad_tanh", [S], lambda T, x: _gr(T, lambda v: v.tanh(), x)),
    ("grad_sigmoid", [S], lambda T, x: _gr(T, lambda v: v.sigmoid(), x)),
    ("grad_relu", [S], lambda T, x: _gr(T, lambda v: v.relu() * v, x)),
    ("grad_prelu", [S, (4,)], lambda T, x, w: _gr(T, lambda v: T.F.prelu(v, w) * v, x)),
    ("grad_prelu_weight", [S, (4,)], lambda T, x, w: _gr(T, lambda v: T.F.prelu(x, v) ** 2, w)),
    ("grad_leaky_relu", [S], lambda T, x: _gr(T, lambda v: T.F.leaky_relu(v) * v, x)),
    # convolution and pooling (forward, and their backward rows)
    ("conv2d", [(1, 2, 5, 4), (4, 1, 3, 2), (4,)],
     lambda T, x, w, b: T.F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)),
    ("conv1d_same", [(2, 6), (3, 2, 2)], lambda T, x, w: T.F.conv1d(x, w, padding="same")),
    ("max_pool2d", [(2, 5, 4)], lambda T, x: T.F.max_pool2d(x, 2, ceil_mode=True)),
    ("avg_pool2d", [(1, 2, 5, 4)], lambda T, x: T.F.avg_pool2d(x, 3, 2, 1)),
    ("grad_conv2d", [(1, 2, 5, 4), (4, 1, 3, 2)], lambda T, x, w: _gr(
        T, lambda v: T.F.conv2d(v, w, groups=2, padding=1) ** 2, x)),
    ("grad_conv2d_weight", [(1, 2, 5, 4), (4, 1, 3, 2), (4,)], lambda T, x, w, b: _gr(
        T, lambda v: T.F.conv2d(x, v, b, groups=2) ** 2, w)),
    ("grad_max_pool2d", [(2, 5, 4)], lambda T, x: _gr(
        T, lambda v: T.F.max_pool2d(v * v, 2), x)),
    ("grad_avg_pool2d", [(1, 2, 5, 4)], lambda T, x: _gr(
        T, lambda v: T.F.avg_pool2d(v * v, 3, 2, 1), x)),
    ("grad_softplus", [S], lambda T, x: _gr(T, lambda v: T.F.softplus(v, 2.0, 1.0), x)),
    ("grad_softmax", [S], lambda T, x: _gr(T, lambda v: v.softmax(1) * v, x)),
    ("grad_log_softmax", [S], lambda T, x: _gr(T, lambda v: v.log_softmax(1) * v, x)),
    ("grad_mse", [S, S], lambda T, x, y: _gr(T, lambda v: T.F.mse_loss(v, y), x)),
    ("grad_bce", [S, S], lambda T, x, y: _gr(
        T, lambda v: T.F.binary_cross_entropy(v.sigmoid(), y.sigmoid()), x)),
    ("grad_nll", [S], lambda T, x: _gr(
        T, lambda v: T.F.nll_loss(v.log_softmax(1), T.tensor([0, 3, 1])), x)),
    ("grad_max_dim", [S], lambda T, x: _gr(T, lambda v: v.max(1).values * v[:, 0], x)),
    ("grad_topk", [S], lambda T, x: _gr(T, lambda v: v.topk(2).values * v[:, :2], x)),
    ("grad_sort", [S], lambda T, x: _gr(T, lambda v: v.sort(1)[0] ** 2, x)),
    ("grad_gather", [S], lambda T, x: _gr(
        T, lambda v: T.gather(v, 1, T.tensor([[0, 3], [1, 1], [2, 0]])) ** 2, x)),
    ("grad_index", [S], lambda T, x: _gr(T, lambda v: v[T.tensor([2, 0, 2])] ** 2, x)),
    ("grad_slice", [S], lambda T, x: _gr(T, lambda v: v[:, 1:3] ** 2, x)),
    ("grad_as_strided", [S], lambda T, x: _gr(
        T, lambda v: T.as_strided(v, (2, 2), (1, 2), 1) ** 2, x)),
    ("grad_diagonal", [S], lambda T, x: _gr(T, lambda v: T.diagonal(v) ** 2, x)),
    ("grad_prod_zero", [S], lambda T, x: _gr(
        T, lambda v: (v * T.tensor([0.0, 1, 1, 1], dtype=v.dtype)).prod(), x)),
    # scatter and index_* writes, kink losses, logcumsumexp, fmod, clamp_min/clamp_max
    ("scatter_src", [S, (2, 4)], lambda T, x, y: x.scatter(1, T.tensor([[0, 2], [3, 1]]), y)),
    ("scatter_value", [S], lambda T, x: x.scatter(0, T.tensor([[2, 0, 1, 1]]), 0.5)),
    ("scatter_add", [S, (2, 4)], lambda T, x, y: T.scatter_add(x, 0, T.tensor([[1, 0, 2, 2]]), y)),
    ("index_fill", [S], lambda T, x: x.index_fill(1, T.tensor([0, 3]), -1.0)),
    ("index_fill_tensor", [S, ()], lambda T, x, v: x.index_fill(0, T.tensor([1]), v)),
    ("index_add", [S, (3, 2)], lambda T, x, y: x.index_add(1, T.tensor([3, 3]), y, alpha=2)),
    ("index_copy", [S, (1, 4)], lambda T, x, y: x.index_copy(0, T.tensor([2]), y)),
    ("index_select", [S], lambda T, x: x.index_select(1, T.tensor([3, 0, 3]))),
    ("index_put_acc", [S, (4,)], lambda T, x, y: x.index_put(
        (T.tensor([0, 0]),), y, accumulate=True)),
    ("smooth_l1", [S, S], lambda T, x, y: T.F.smooth_l1_loss(x, y, beta=0.7)),
    ("huber_none", [S, S], lambda T, x, y: T.F.huber_loss(x, y, reduction="none")),
    ("grad_smooth_l1", [S, S], lambda T, x, y: _gr(
        T, lambda v: T.F.smooth_l1_loss(v, y, reduction="sum", beta=0.7), x)),
    ("logcumsumexp", [S], lambda T, x: T.logcumsumexp(x, 1)),
    ("fmod", [S], lambda T, x: T.fmod(x, 0.7)),
    ("fmod_tensor", [S, S], lambda T, x, y: x.fmod(y.abs() + 0.5)),
    ("clamp_min", [S], lambda T, x: x.clamp_min(0.1)),
    ("clamp_max", [S], lambda T, x: T.clamp_max(x, -0.1)),
    ("clamp_min_tensor", [S, S], lambda T, x, y: T.clamp_min(x, y)),
    ("clamp_max_tensor", [S, (4,)], lambda T, x, y: x.clamp_max(y)),
]
# fmt: on


def _view_add(x: Any, y: Any) -> Any:
    base = x.clone()
    base[1].add_(y)
    return base


def _setitem(x: Any, y: Any) -> Any:
    base = x * 1
    base[0] = y
    base[1:, 2] = 0.5
    return base


def _index_put(T: Any, x: Any, y: Any) -> Any:
    base = x * 1
    base[T.tensor([2, 0])] = y
    return base


def _setitem_plain(T: Any, y: Any) -> Any:
    base = T.zeros(2, 4, dtype=y.dtype)
    base[1] = y
    return base


def _run(lib: Any, shapes: list[tuple[int, ...]], fn: Callable[..., Any], seed: int) -> Any:
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    grad_case = fn.__code__.co_names.count("_gr") > 0
    with lib.fwAD.dual_level():
        duals = []
        for v, t in zip(values, tangents, strict=True):
            p = lib.tensor(v, dtype=lib.float64, requires_grad=grad_case)
            duals.append(lib.fwAD.make_dual(p, lib.tensor(t, dtype=lib.float64)))
        out = fn(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        result = []
        for o in outs:
            primal, tangent = lib.fwAD.unpack_dual(o)
            result.append(
                (
                    primal.detach().numpy().copy(),
                    None if tangent is None else tangent.detach().numpy().copy(),
                )
            )
    return result


@pytest.mark.parametrize("name,shapes,fn", CASES, ids=[c[0] for c in CASES])
def test_tangents_match_torch(name: str, shapes: list[tuple[int, ...]], fn: Any) -> None:
    for seed in range(3):
        ours = _run(ADCLI, shapes, fn, seed)
        theirs = _run(TORCH, shapes, fn, seed)
        assert len(ours) == len(theirs)
        for (p, t), (tp, tt) in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p, tp, rtol=1e-7, atol=1e-9, err_msg=f"{name} primal")
            if tt is None:
                assert t is None, f"{name}: torch has no tangent"
                continue
            assert t is not None, f"{name}: adcli has no tangent"
            assert t.shape == tt.shape, name
            np.testing.assert_allclose(t, tt, rtol=1e-7, atol=1e-9, err_msg=f"{name} tangent")


def test_every_jvp_row_is_exercised() -> None:
    """The cases above reach every row of the op table that declares a jvp rule."""
    reached: set[str] = set()
    real = forward_ad.propagate

    def spy(ctx: Any, inputs: Any, out: Any) -> None:
        reached.add(type(ctx).__name__)
        real(ctx, inputs, out)

    forward_ad.propagate = spy  # _install reads the module attribute
    try:
        for _, shapes, fn in CASES:
            _run(ADCLI, shapes, fn, 0)
    finally:
        forward_ad.propagate = real
    with_rule = {n for n, c in Function.registry.items() if getattr(c, "jvp", None) is not None}
    # rows no public op reaches on its own with a tangent flowing into them
    unreachable = {"NotImplementedOp", "CopySlicesOp", "AsStridedExpand"}
    missing = sorted(with_rule - reached - unreachable)
    assert not missing, f"jvp rows no case exercises: {missing}"


def test_missing_rule_names_the_op() -> None:
    """An op row without a jvp rule raises PyTorch's NotImplementedError."""
    from adcli.autograd import ops
    from adcli.autograd.functions import Exp

    rule = Exp.__dict__["jvp"]
    del Exp.jvp
    try:
        with forward_ad.dual_level():
            d = forward_ad.make_dual(ops.tensor([1.0]), ops.tensor([1.0]))
            with pytest.raises(NotImplementedError, match="Trying to use forward AD with exp "):
                d.exp()
    finally:
        Exp.jvp = rule


def test_no_cost_without_a_level() -> None:
    """No dual level open: Function.apply's hook is off."""
    from adcli.autograd import node

    assert node.fw_hook is None
    with forward_ad.dual_level():
        assert node.fw_hook is not None
    assert node.fw_hook is None


# ---------------------------------------------------------------- tangents' graphs
def _tree(fn: Any, depth: int = 0) -> list[str]:
    """A grad_fn graph as nested names. PyTorch reads each primal a formula uses
    through an Identity node (`CppFunction`), which adcli does not have: skipped."""
    if fn is None:
        return ["  " * depth + "None"]
    name = getattr(fn, "grad_fn_name", None) or type(fn).__name__  # (adcli's, torch's)
    if name == "CppFunction":
        return _tree(fn.next_functions[0][0], depth)
    out = ["  " * depth + name]
    for nxt, _ in fn.next_functions:
        out += _tree(nxt, depth + 1)
    return out


def _graph_cases(T: Any) -> list[tuple[str, Any]]:
    """(label, output) pairs: ops on a dual input next to parameters that require grad,
    the parameters' tangents undefined (PyTorch's formulas add efficient zeros)."""
    g = _gen(T, 5)
    x = T.randn(4, 3, generator=g, dtype=T.float64)
    tx = T.randn(4, 3, generator=g, dtype=T.float64)
    w = T.randn(2, 3, generator=g, dtype=T.float64).requires_grad_()
    b = T.randn(2, generator=g, dtype=T.float64).requires_grad_()
    v = T.randn(3, generator=g, dtype=T.float64).requires_grad_()
    d = T.fwAD.make_dual(x, tx)
    d1 = T.fwAD.make_dual(x[0], tx[0])
    dw = d * v
    return [
        ("linear", T.F.linear(d, w, b)),
        ("linear_1d", T.F.linear(d1, w, b)),
        ("linear_no_bias", T.F.linear(d, w)),
        ("mm", d @ w.t()),
        ("mv", w @ d1),
        ("dot", d1 @ v),
        ("mul", d * v),
        ("mul_left", v * d),
        ("mul_number", dw * 3),
        ("add", d + v),
        ("add_graph", dw + v),
        ("add_left", v + dw),
        ("add_alpha", T.add(v, dw, alpha=2)),
        ("sub", dw - v),
        ("sub_left", v - dw),
        ("div", d / v),
        ("div_left", v / dw),
        ("sin", T.sin(dw)),
        ("cos", T.cos(dw)),
        ("exp", T.exp(dw)),
        ("tanh", T.tanh(dw)),
        ("sigmoid", T.sigmoid(dw)),
        ("relu", T.relu(dw)),
        ("mul_both", dw * dw),
        ("chain", T.tanh(T.F.linear(T.sin(dw), w, b))),
    ]


def _graphs(T: Any) -> list[tuple[str, list[str], Any]]:
    with T.fwAD.dual_level():
        out = []
        for label, y in _graph_cases(T):
            t = T.fwAD.unpack_dual(y).tangent
            out.append((label, _tree(t.grad_fn), t.detach().numpy().copy()))
    return out


def test_tangent_graphs_match_torch() -> None:
    """A tangent's grad_fn graph (`lin(dual)` with parameters that require grad:
    AddBackward0 on top, as PyTorch's jvp formulas sum their zero terms) and values."""
    ours, theirs = _graphs(ADCLI), _graphs(TORCH)
    for (label, tree, t), (_, ttree, tt) in zip(ours, theirs, strict=True):
        assert tree == ttree, (
            f"{label}:\nadcli\n" + "\n".join(tree) + "\ntorch\n" + "\n".join(ttree)
        )
        np.testing.assert_allclose(t, tt, rtol=1e-12, atol=0, err_msg=label)


def _huber_second_tangent(lib: Any) -> str:
    """PyTorch has no forward-mode rule for huber_loss_backward: the same refusal."""
    x, y = lib.tensor([[0.5, -2.0]], dtype=lib.float64), lib.tensor([[0.0, 1.0]], dtype=lib.float64)
    with lib.fwAD.dual_level():
        d = lib.fwAD.make_dual(x.requires_grad_(), lib.tensor([[1.0, 1.0]], dtype=lib.float64))
        try:
            _gr(lib, lambda v: lib.F.huber_loss(v, y), d)
        except NotImplementedError as e:
            return str(e).splitlines()[0]
    return "no error"


def test_huber_loss_backward_has_no_tangent_rule() -> None:
    assert _huber_second_tangent(ADCLI) == _huber_second_tangent(TORCH)
