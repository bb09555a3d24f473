"""Hand-written NumPy forward + backward passes: the floor an engine on NumPy can reach.

Each floor mirrors one workload script in `workloads/` (same shapes, dtypes, op
count and set-up work) but calls NumPy directly, with the backward formulas
written out by hand and no graph, no Python objects per op beyond the arrays.
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def per_op(N: int = 2000) -> float:
    """per_op.ad: y = log(exp(y * 1.0001 + 0.5)) - 0.5, N times; backward."""
    y = np.array([0.5, -1.0, 2.0, 0.1], F32)
    c1, c2 = np.asarray(1.0001, F32), np.asarray(0.5, F32)
    saved = []
    for _ in range(N):
        a = y * c1
        b = a + c2
        e = np.exp(b)
        lg = np.log(e)
        y = lg - c2
        saved.append(e)
    g = np.ones_like(y)
    for e in reversed(saved):
        g = g / e  # d log(e)
        g = g * e  # d exp(b)
        g = g * c1  # d (y * c1)
    return float(g.sum())


def scale(N: int = 10000) -> float:
    """scale.ad: y = y * 1.0, N times; backward."""
    y = np.array([1.0, 2.0, 3.0, 4.0], F32)
    one = np.asarray(1.0, F32)
    saved = []
    for _ in range(N):
        saved.append(y)
        y = y * one
    g = np.ones_like(y)
    for _ in reversed(saved):
        g = g * one
    return float(g.sum())


def large(N: int = 1000, L: int = 10) -> float:
    """large.ad: L layers of tanh(h @ W + b) on N x N float32; backward."""
    x = np.linspace(-1.0, 1.0, N * N, dtype=F32).reshape(N, N)
    params = []
    for i in range(L):
        W = np.linspace(-0.05, 0.05, N * N, dtype=F32).reshape(N, N) * F32(1.0 + 0.01 * i)
        b = np.linspace(-0.1, 0.1, N, dtype=F32)
        params.append((W, b))
    hs = [x]
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
        hs.append(h)
    g = np.ones_like(h)
    grads = []
    for i in range(L - 1, -1, -1):
        W, _ = params[i]
        gz = g * (1 - hs[i + 1] * hs[i + 1])
        grads.append((hs[i].T @ gz, gz.sum(0)))
        if i > 0:  # x does not require grad
            g = gz @ W.T
    return float(grads[-1][0].sum())


def training(STEPS: int = 200) -> float:
    """training.ad: 784-128-10 MLP, batch 64, softmax cross-entropy, SGD lr 0.1."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 784), dtype=F32)
    Y = rng.integers(0, 10, 64)
    W1 = rng.standard_normal((784, 128), dtype=F32) * F32(0.05)
    b1 = np.zeros(128, F32)
    W2 = rng.standard_normal((128, 10), dtype=F32) * F32(0.1)
    b2 = np.zeros(10, F32)
    lr = F32(0.1)
    B = X.shape[0]
    rows = np.arange(B)
    loss = math.nan
    for _ in range(STEPS):
        z1 = X @ W1 + b1
        h = np.maximum(z1, 0)
        z2 = h @ W2 + b2
        m = z2.max(1, keepdims=True)
        ez = np.exp(z2 - m)
        s = ez.sum(1, keepdims=True)
        logp = z2 - m - np.log(s)
        loss = float(-logp[rows, Y].mean())
        dz2 = ez / s
        dz2[rows, Y] -= 1
        dz2 /= B
        dW2 = h.T @ dz2
        db2 = dz2.sum(0)
        dz1 = (dz2 @ W2.T) * (z1 > 0)
        dW1 = X.T @ dz1
        db1 = dz1.sum(0)
        W1 -= lr * dW1
        b1 -= lr * db1
        W2 -= lr * dW2
        b2 -= lr * db2
    return loss


FLOORS = {"per_op": per_op, "scale": scale, "large": large, "training": training}
