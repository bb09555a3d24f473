"""Strides of views compared with PyTorch, over random chains of view ops.

A size-1 dim's stride depends on how PyTorch made the tensor (unsqueeze, expand,
view, slicing an expanded dim ...); adcli keeps NumPy's strides equal to PyTorch's,
so `stride()`, `is_contiguous()`, a following `view(-1)`, reshape's node and the
memory-overlap errors of in-place writes between views all agree. Each chain starts
from a contiguous, transposed, expanded, 0-d or empty tensor and applies the same
random view ops to both libraries; an op PyTorch refuses is skipped.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from adcli.autograd import ops as T
from adcli.autograd.config import config

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

Op = Callable[[Any], Any]


def _starts(lib: Any, f64: Any) -> list[Callable[[], Any]]:
    """Starting tensors, made the same way in both libraries (non-leaves needing grad)."""

    def base(n: int) -> Any:
        return (lib.arange(n, dtype=f64) + 1).requires_grad_() * 1

    return [
        lambda: base(24).view(2, 3, 4),
        lambda: base(6).view(2, 3).t(),
        lambda: base(12).view(3, 4).transpose(0, 1)[::2],
        lambda: base(3).view(3, 1).expand(3, 2),
        lambda: base(2).expand(2, 2).unsqueeze(0),
        lambda: base(1).view(()),
        lambda: base(1).view(()).expand(2),
        lambda: base(4).view(1, 4, 1),
        lambda: lib.zeros(0, 3, dtype=f64),
        lambda: lib.zeros(2, 0, 1, dtype=f64),
    ]


def _random_op(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, Op]:
    """A random view op for a tensor of `shape` (PyTorch may still refuse it)."""
    nd = len(shape)
    d = rng.randrange(-nd, nd) if nd else 0
    kind = rng.choice(
        [
            "unsqueeze", "none", "expand", "broadcast_to", "slice", "select", "transpose",
            "permute", "movedim", "view", "reshape", "squeeze", "squeeze_dim", "narrow",
            "unbind", "split", "diagonal", "as_strided", "unflatten", "t",
        ]
    )  # fmt: skip
    if kind == "unsqueeze":
        k = rng.randrange(-nd - 1, nd + 1)
        return f"unsqueeze({k})", lambda x: x.unsqueeze(k)
    if kind == "none":
        idx = rng.choice(
            [(None,), (slice(None), None), (Ellipsis, None), (None, 0), (0, None), (None, 1, None)]
        )
        return f"[{idx}]", lambda x: x[idx]
    if kind in ("expand", "broadcast_to"):
        lead = [rng.choice([1, 1, 2]) for _ in range(rng.randrange(0, 3))]
        new = lead + [rng.choice([1, 3]) if n == 1 else rng.choice([n, -1]) for n in shape]
        if kind == "broadcast_to":
            return f"broadcast_to({new})", lambda x: x.broadcast_to(tuple(new))
        return f"expand({new})", lambda x: x.expand(*new)
    if kind == "slice":
        a, b, c = rng.randrange(0, 3), rng.randrange(0, 4), rng.randrange(1, 3)
        idx = (slice(None),) * (d % nd if nd else 0) + (slice(a, b, c),)
        return f"[{idx}]", lambda x: x[idx]
    if kind == "select":
        i = rng.randrange(0, 3)
        return f"select({d}, {i})", lambda x: x.select(d, i)
    if kind == "transpose":
        e = rng.randrange(-nd, nd) if nd else 0
        return f"transpose({d}, {e})", lambda x: x.transpose(d, e)
    if kind in ("permute", "movedim"):
        perm = list(range(nd))
        rng.shuffle(perm)
        if kind == "movedim":
            e = rng.randrange(-nd, nd) if nd else 0
            return f"movedim({d}, {e})", lambda x: x.movedim(d, e)
        return f"permute({perm})", lambda x: x.permute(*perm)
    if kind in ("view", "reshape", "unflatten"):
        numel = int(np.prod(shape)) if shape else 1
        cands = [(-1,), (numel,), (1, numel), (numel, 1), (1,) + tuple(shape)]
        cands += [tuple(shape) + (1,), tuple(n for n in shape if n != 1)]
        if nd >= 2:
            cands.append((shape[0] * shape[1],) + tuple(shape[2:]))
            cands.append(tuple(shape[:-2]) + (1, shape[-2] * shape[-1]))
        new = rng.choice(cands)
        if kind == "unflatten":
            sizes = rng.choice([(1, -1), (-1, 1), (1, 1, -1)])
            return f"unflatten({d}, {sizes})", lambda x: x.unflatten(d, sizes)
        if kind == "view":
            return f"view({new})", lambda x: x.view(*new)
        return f"reshape({new})", lambda x: x.reshape(*new)
    if kind == "squeeze":
        return "squeeze()", lambda x: x.squeeze()
    if kind == "squeeze_dim":
        return f"squeeze({d})", lambda x: x.squeeze(d)
    if kind == "narrow":
        s, n = rng.randrange(0, 2), rng.randrange(0, 3)
        return f"narrow({d}, {s}, {n})", lambda x: x.narrow(d, s, n)
    if kind == "unbind":
        i = rng.randrange(0, 2)
        return f"unbind({d})[{i}]", lambda x: x.unbind(d)[i]
    if kind == "split":
        k, i = rng.randrange(1, 3), rng.randrange(0, 2)
        return f"split({k}, {d})[{i}]", lambda x: x.split(k, d)[i]
    if kind == "diagonal":
        off, e = rng.randrange(-1, 2), rng.randrange(-nd, nd) if nd else 0
        return f"diagonal({off}, {d}, {e})", lambda x: x.diagonal(off, d, e)
    if kind == "as_strided":
        size = tuple(rng.choice([1, 1, 2]) for _ in range(rng.randrange(0, 3)))
        stride = tuple(rng.choice([0, 1, 2, 5]) for _ in size)
        return f"as_strided({size}, {stride})", lambda x: x.as_strided(size, stride)
    return "t()", lambda x: x.t()


def _chain(rng: random.Random, start: int, length: int) -> list[tuple[str, Op]]:
    """A chain of ops that PyTorch accepts from start tensor number `start`."""
    x = _starts(torch, torch.float64)[start]()
    ops: list[tuple[str, Op]] = []
    while len(ops) < length:
        name, op = _random_op(rng, tuple(x.shape))
        try:
            y = op(x)
        except (RuntimeError, IndexError, ValueError, TypeError):
            continue
        ops.append((name, op))
        x = y
    return ops


def _outcome(fn: Callable[[], Any]) -> str:
    """'ok' or the error's kind and message."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error is compared
        return f"{type(e).__name__}: {e}"
    return "ok"


def _node_name(x: Any) -> str | None:
    return None if x.grad_fn is None else x.grad_fn.name()


def _layout(x: Any) -> tuple[Any, ...]:
    return tuple(x.shape), tuple(x.stride()), x.is_contiguous()


@pytest.mark.parametrize("seed", range(6))
def test_view_chains_have_torch_strides(seed: int) -> None:
    rng = random.Random(seed)
    for trial in range(60):
        start = trial % len(_starts(torch, torch.float64))
        ops = _chain(rng, start, rng.randrange(1, 6))
        t = _starts(torch, torch.float64)[start]()
        a = _starts(T, T.dtypes.float64)[start]()
        names = []
        for name, op in ops:
            names.append(name)
            t, a = op(t), op(a)
            assert _layout(a) == _layout(t), (start, names)
        assert _outcome(lambda a=a: a.view(-1)) == _outcome(lambda t=t: t.view(-1)), (start, names)
        rt, ra = t.reshape(-1), a.reshape(-1)
        assert _node_name(ra) == _node_name(rt), (start, names)


@pytest.mark.parametrize("seed", range(6))
def test_writes_between_views_overlap_as_in_torch(seed: int) -> None:
    rng = random.Random(100 + seed)
    writes: dict[str, Callable[[Any, Any], Any]] = {
        "copy_": lambda x, y: x.copy_(y),
        "add_": lambda x, y: x.add_(y),
        "setitem": lambda x, y: x.__setitem__(Ellipsis, y),
        "setitem_none": lambda x, y: x.__setitem__((None, 0), y),
    }
    for trial in range(80):
        start = trial % 8  # (the empty starts write nothing)
        c1 = _chain(rng, start, rng.randrange(1, 4))
        c2 = _chain(rng, start, rng.randrange(0, 4))
        for lib, f64 in ((torch, torch.float64), (T, T.dtypes.float64)):
            with lib.no_grad() if lib is torch else _no_grad():
                base = _starts(lib, f64)[start]()
                x, y = base, base
                for _, op in c1:
                    x = op(x)
                for _, op in c2:
                    y = op(y)
                got = {k: _outcome(lambda w=w, x=x, y=y: w(x, y)) for k, w in writes.items()}
            if lib is torch:
                want = got
        names = ([n for n, _ in c1], [n for n, _ in c2])
        assert got == want, (start, names)


def _no_grad() -> Any:
    from adcli.autograd import grad_mode

    return grad_mode.no_grad()


def test_unsqueeze_before_expanded_dim_then_setitem() -> None:
    # fuzz s24a:14202: t9[None, 0] has stride (0,), t8 stride (1,): a partial overlap
    def run(lib: Any) -> str:
        t8 = lib.ones(()).requires_grad_(False)[None]
        t9 = t8.broadcast_to((2,))
        return _outcome(lambda: t9.__setitem__((None, 0), t8)) + str(t9[None, 0].stride())

    assert run(T) == run(torch)
    assert config is not None
