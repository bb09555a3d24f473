"""Layer and batch normalisation on NumPy, rounded as PyTorch 2.13's CPU kernels round.

Measured bit for bit against torch on this machine (AVX2 kernels: 8 float32 or 4
float64 lanes):

- layer_norm's row statistics are Welford's, per vector lane over chunks of 16
  vectors, the chunks merged in a cascade, then the leftover elements one by one
  and the lanes merged into them; the compiler fuses some of the multiply-adds
  (which ones is what matched: see `_merge_lanes` and `_merge_scalar`).
  y = fma((x - mean) * rstd, weight, bias), rstd = 1 / sqrt(var + eps).
- batch_norm's statistics add float32 values in double (a 3-d or 4-d input), or
  per thread in float32 and the threads' sums in double (a 2-d input: PyTorch's
  channels-last kernel); y = fma(x, alpha, beta), alpha = invstd * weight,
  beta = fma(-mean, alpha, bias).

Everything works on whole arrays; Python loops run over lanes, chunks, threads
or rows of a 2-d input's thread chunk, never over single elements of large rows.
"""

from __future__ import annotations

import math

import numpy as np

from . import bngeneric, kernels32
from .summation import thread_chunks, threads

_CHUNK = 16  # vectors per Welford chunk (PyTorch's kChunkSize)


def _lanes(dt: np.dtype) -> int:
    """AVX2 lanes: 8 float32, 4 float64."""
    return 8 if dt == np.float32 else 4


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return kernels32.fma(*np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c)))


def _merge_lanes(
    stack: list[list], k: int, m0_add: int, m1_add: np.ndarray, m2_add: np.ndarray
) -> None:
    """AddMomentsVec: merge (m0_add, m1_add, m2_add) into level k of the stack (the
    mean update unfused, the M2 update one fma over M2 + M2_add)."""
    m0, m1, m2 = stack[k]
    dt = m1.dtype.type
    n = m0 + m0_add
    c = dt(0) if n == 0 else dt(dt(m0_add) / dt(n))
    delta = m1_add - m1
    m1 = m1 + c * delta
    m2 = _fma(delta * delta * c, dt(m0), m2 + m2_add)
    stack[k] = [n, m1, m2]


def rowwise_moments(x: np.ndarray, ddof: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of each row of the 2-d float array x, as RowwiseMoments."""
    dt = x.dtype.type
    rows, n_cols = x.shape
    lanes = _lanes(x.dtype)
    n = n_cols // lanes
    m = -(-n // _CHUNK)
    depth = math.ceil(math.log2(m)) if m > 1 else 0
    zero = np.zeros((rows, lanes), dt)
    stack: list[list] = [[0, zero, zero] for _ in range(max(depth, 1))]
    recip = [dt(dt(1) / dt(j + 1)) for j in range(_CHUNK)]
    vecs = x[:, : n * lanes].reshape(rows, n, lanes)
    for i in range(m):
        count = min(_CHUNK, n - i * _CHUNK)
        m1 = m2 = zero
        for j in range(count):
            xv = vecs[:, i * _CHUNK + j]
            delta = xv - m1
            m1 = _fma(delta, recip[j], m1)
            m2 = _fma(delta, xv - m1, m2)
        _merge_lanes(stack, 0, count, m1, m2)
        mask, j = i + 1, 1
        while j < depth and mask & 1 == 0:
            _merge_lanes(stack, j, *stack[j - 1])
            stack[j - 1] = [0, zero, zero]
            mask >>= 1
            j += 1
    for k in range(1, depth):
        _merge_lanes(stack, 0, *stack[k])
    m0 = 0
    mean = np.zeros(rows, dt)
    m2s = np.zeros(rows, dt)
    with np.errstate(all="ignore"):
        for i in range(n * lanes, n_cols):  # the leftover elements, one by one
            xs = x[:, i]
            delta = xs - mean
            m0 += 1
            mean = mean + delta / dt(m0)
            m2s = m2s + delta * (xs - mean)
        for lane in range(lanes):
            mean, m2s, m0 = _merge_scalar(
                n, stack[0][1][:, lane], stack[0][2][:, lane], m0, mean, m2s
            )
        return mean, m2s / dt(n_cols - ddof)


def _merge_scalar(
    m0_add: int, m1_add: np.ndarray, m2_add: np.ndarray, m0: int, m1: np.ndarray, m2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """AddMoments on scalars (here a column of rows): the mean update fused, then
    M2 + fma(delta * delta * c, m0, M2_add)."""
    dt = m1.dtype.type
    n = m0 + m0_add
    c = dt(0) if n == 0 else dt(dt(m0_add) / dt(n))
    delta = m1_add - m1
    m1 = _fma(c, delta, m1)
    m2 = m2 + _fma(delta * delta * c, dt(m0), m2_add)
    return m1, m2, n


def layer_norm(
    x: np.ndarray, n: int, w: np.ndarray | None, b: np.ndarray | None, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, mean, rstd) of x normalised over its last `n` elements per row; mean and
    rstd have one value per row (shape x.shape[:-k] flattened)."""
    dt = x.dtype.type
    rows = x.size // n if n else 0
    x2 = np.ascontiguousarray(x).reshape(rows, n)
    if rows == 0 or n == 0:
        return x.copy(), np.zeros(rows, dt), np.zeros(rows, dt)
    mean, var = rowwise_moments(x2)
    with np.errstate(all="ignore"):
        rstd = dt(1) / np.sqrt(var + dt(eps))
        z = (x2 - mean[:, None]) * rstd[:, None]
        wv = np.ones(n, dt) if w is None else w.reshape(n)
        bv = np.zeros(n, dt) if b is None else b.reshape(n)
        y = _fma(z, wv, bv)
    return y.reshape(x.shape), mean, rstd


def _lanes_reduce(v: np.ndarray, lanes: int) -> np.ndarray:
    """Sum along the last axis as `vec::reduce_all` / `map*_reduce_all` add: one
    accumulator per lane over whole vectors (the first is the start), the tail into
    the first lanes, then the lanes folded (`_fold_lanes`); a row shorter than a
    vector in order."""
    n = v.shape[-1]
    if n < lanes:
        return np.add.accumulate(v, axis=-1)[..., -1] if n else np.zeros(v.shape[:-1], v.dtype)
    full = n - n % lanes
    vecs = v[..., :full].reshape(v.shape[:-1] + (full // lanes, lanes))
    acc = vecs[..., 0, :].copy()
    for k in range(1, full // lanes):
        acc = acc + vecs[..., k, :]
    if n > full:
        acc[..., : n - full] += v[..., full:]
    return _fold_lanes(acc)


def _lanes_dot(p: np.ndarray, q: np.ndarray, lanes: int) -> np.ndarray:
    """sum(p * q) along the last axis as `vec::map2_reduce_all` adds it: as
    `_lanes_reduce`, but the tail's products fused into the lanes they join (a row
    shorter than a vector: the products added in order)."""
    n = p.shape[-1]
    if n < lanes:
        return _lanes_reduce(p * q, lanes)
    full = n - n % lanes
    shape = p.shape[:-1] + (full // lanes, lanes)
    pv, qv = p[..., :full].reshape(shape), q[..., :full].reshape(shape)
    acc = pv[..., 0, :] * qv[..., 0, :]
    for k in range(1, full // lanes):
        acc = acc + pv[..., k, :] * qv[..., k, :]
    if n > full:
        acc[..., : n - full] = _fma(p[..., full:], q[..., full:], acc[..., : n - full])
    return _fold_lanes(acc)


def _fold_lanes(acc: np.ndarray) -> np.ndarray:
    """A vector's lanes (last axis) added up as `vec_reduce_all`: float's halving
    shuffles (8 lanes), double's generic loop one lane after another (4 lanes)."""
    if acc.shape[-1] != 8:
        total = acc[..., 0]
        for i in range(1, acc.shape[-1]):
            total = total + acc[..., i]
        return total
    while acc.shape[-1] > 1:
        half = acc.shape[-1] // 2
        acc = acc[..., :half] + acc[..., half:]
    return acc[..., 0]


def layer_norm_backward(
    g: np.ndarray,
    x: np.ndarray,
    mean: np.ndarray,
    rstd: np.ndarray,
    w: np.ndarray | None,
    n: int,
    need: tuple[bool, bool, bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(dx, dweight, dbias) as LayerNormBackwardKernel: per row a = rstd,
    b = (db * mean - ds) * a^3 / n, c = -b * mean - db * a / n, dx = a*dy*w + b*x + c;
    dweight, dbias summed per thread chunk of rows, then over the threads."""
    dt = x.dtype.type
    rows = x.size // n if n else 0
    shape = x.shape
    x2 = np.ascontiguousarray(x).reshape(rows, n)
    g2 = np.ascontiguousarray(np.broadcast_to(g, shape)).reshape(rows, n)
    lanes = _lanes(x.dtype)
    wv = None if w is None else w.reshape(n)
    dx = dw = db = None
    with np.errstate(all="ignore"):
        if need[0]:
            if wv is None:
                ds = _lanes_dot(g2, x2, lanes)
                dbs = _lanes_reduce(g2, lanes)
            else:
                wb = np.broadcast_to(wv, g2.shape)
                ds = _lanes_dot(g2 * x2, wb, lanes)
                dbs = _lanes_dot(g2, wb, lanes)
            scale = dt(1) / dt(n)
            a = rstd
            bb = _fma(dbs, mean, -ds) * a * a * a * scale
            cc = _fma(-bb, mean, -(dbs * a * scale))
            first = a[:, None] * g2 if wv is None else a[:, None] * g2 * wv
            dx = (_fma(bb[:, None], x2, first) + cc[:, None]).reshape(shape)
        if need[1] or need[2]:
            chunks = thread_chunks(rows, threads(), 1) if rows else []
            gsum = np.zeros(n, dt)
            bsum = np.zeros(n, dt)
            for lo, hi in chunks:
                acc_w = np.zeros(n, dt)
                acc_b = np.zeros(n, dt)
                for i in range(lo, hi):
                    a = rstd[i]
                    b0 = -a * mean[i]
                    acc_w = _fma(g2[i], _fma(a, x2[i], b0), acc_w)
                    acc_b = acc_b + g2[i]
                gsum = gsum + acc_w
                bsum = bsum + acc_b
            dw = gsum if need[1] else None
            db = bsum if need[2] else None
    return dx, dw, db


# ************************************************************ batch norm


def _channel_rows(x: np.ndarray) -> np.ndarray:
    """x as (channels, batch, image) in memory order within each channel."""
    nb, c = x.shape[0], x.shape[1]
    return np.ascontiguousarray(x).reshape(nb, c, -1).transpose(1, 0, 2)


def _channel_last_rows(x: np.ndarray) -> np.ndarray | None:
    """x as rows of channels in memory order, when PyTorch's channels-last kernels
    run on it: a contiguous (n, c, 1, ...) input, or a channels-last (not also
    contiguous) 4-d or 5-d one; else None."""
    c = x.shape[1]
    if x.flags.c_contiguous:
        return x.reshape(-1, c) if x.size and x.size == x.shape[0] * c else None
    if bngeneric.channels_last_dense(x):
        return np.transpose(x, (0, *range(2, x.ndim), 1)).reshape(-1, c)
    return None


def _from_channel_rows(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rows of channels (memory order) back in x's shape, laid out as x's result."""
    n = x.ndim
    moved = v.reshape((x.shape[0], *x.shape[2:], x.shape[1]))
    return bngeneric.laid_out(np.transpose(moved, (0, n - 1, *range(1, n - 1))), x)


def _thread_sums(v: np.ndarray, fn: object = None) -> np.ndarray:
    """Rows of v (rows, channels) added per thread chunk in order in v's dtype, the
    chunks' sums then added in double: PyTorch's two-pass vertical reduction."""
    rows = v.shape[0]
    total = np.zeros(v.shape[1], np.float64)
    for t, (lo, hi) in enumerate(thread_chunks(rows, threads(), 1)):
        del t
        acc = np.zeros(v.shape[1], v.dtype)
        for i in range(lo, hi):
            acc = acc + v[i]
        total = total + acc.astype(np.float64)
    return total


def batch_norm_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, var_sum) per channel as batch_norm_cpu_collect_stats (contiguous input)."""
    dt = x.dtype.type
    c = x.shape[1]
    rows = x.size // c if c else 0
    image = x.size // (x.shape[0] * c) if x.shape[0] * c else 0
    v = _channel_last_rows(x)
    with np.errstate(all="ignore"):
        if v is not None:  # PyTorch's channels-last kernel: rows of channels
            nthreads = threads()
            if rows > nthreads:
                mean = (_thread_sums(v) / rows).astype(dt)
                d = v - mean
                var_sum = np.zeros(c, np.float64)
                for lo, hi in thread_chunks(rows, nthreads, 1):
                    acc = np.zeros(c, dt)
                    for i in range(lo, hi):
                        acc = _fma(d[i], d[i], acc)
                    var_sum = var_sum + acc
                return mean, var_sum.astype(dt)
            if nthreads == 1 or c <= 16 or c > 2048:  # tiles of channels, in float
                acc = np.zeros(c, dt)
                for i in range(rows):
                    acc = acc + v[i]
                mean = acc / dt(rows)
                var_sum = np.zeros(c, dt)
                for i in range(rows):
                    d = v[i] - mean
                    var_sum = _fma(d, d, var_sum)
                return mean, var_sum
            s = np.cumsum(v.astype(np.float64), axis=0)[-1] + 0.0  # from +0, as PyTorch
            mean = (s / rows).astype(dt)
            d = v - mean
            return mean, np.cumsum((d * d).astype(np.float64), axis=0)[-1].astype(dt)
        flat = _channel_rows(x).reshape(c, -1)
        # PyTorch's double accumulator starts at +0: a channel of -0s sums to +0
        s = np.cumsum(flat.astype(np.float64), axis=1)[:, -1] + 0.0 if flat.size else np.zeros(c)
        mean = (s / rows).astype(dt)
        d = flat - mean[:, None]
        if dt == np.float64 and image % 2 and flat.size:
            return mean, _odd_plane_var_sum(d.reshape(c, -1, image))
        sq = (d * d).astype(np.float64)
        var_sum = np.cumsum(sq, axis=1)[:, -1] if sq.size else np.zeros(c)
        return mean, var_sum.astype(dt)


def _odd_plane_var_sum(d: np.ndarray) -> np.ndarray:
    """sum(d²) per channel over d (channels, planes, odd image size) in double, as the
    compiled loop adds it: each plane's squares two at a time in order, its odd last
    square fused into the sum (measured)."""
    acc = np.zeros(d.shape[0])
    body = d[:, :, :-1] * d[:, :, :-1]
    for p in range(d.shape[1]):
        acc = np.add.accumulate(np.concatenate([acc[:, None], body[:, p]], axis=1), axis=1)[:, -1]
        acc = _fma(d[:, p, -1], d[:, p, -1], acc)
    return acc


def strided_layout(x: np.ndarray) -> bool:
    """Neither contiguous nor channels-last: PyTorch's batch_norm then takes its
    generic path (a mean op, a serial variance in double, an unfused transform)."""
    if x.flags.c_contiguous or x.size == 0:
        return False
    return not bngeneric.channels_last_dense(x)


def _memory_order(v: np.ndarray) -> np.ndarray:
    """v's elements flat in the order PyTorch's TensorIterator walks them (largest
    stride first, so memory order for a dense layout)."""
    axes = sorted(range(v.ndim), key=lambda d: -abs(v.strides[d]))
    return np.transpose(v, axes).reshape(-1)


def _strided_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, var_sum in double) per channel on the generic path: at::mean over all dims
    but 1, then sum((x - mean)²) one element after another in double."""
    from .summation import torch_sum

    dt = x.dtype.type
    c = x.shape[1]
    rows = x.size // c
    dims = (0,) + tuple(range(2, x.ndim))
    with np.errstate(all="ignore"):
        mean = (torch_sum(x, dims) / dt(rows)).astype(dt)
        var_sum = np.zeros(c, np.float64)
        for f in range(c):
            d = _memory_order(x[:, f]).astype(np.float64) - np.float64(mean[f])
            var_sum[f] = np.add.accumulate(d * d)[-1]
    return mean, var_sum


def batch_norm_train(
    x: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, invstd, var_sum, rows) of a training step's batch statistics."""
    dt = x.dtype.type
    c = x.shape[1]
    rows = x.size // c
    if strided_layout(x):
        mean, vs = _strided_stats(x)
        with np.errstate(all="ignore"):
            var = vs / rows
            invstd = np.where((var != 0) | (eps != 0), 1.0 / np.sqrt(var + eps), 0.0)
        return mean, invstd.astype(dt), vs, np.asarray(rows)
    mean, var_sum = batch_norm_stats(x)
    with np.errstate(all="ignore"):
        var = (var_sum / dt(rows)).astype(np.float64)
        invstd = np.where((var != 0) | (eps != 0), 1.0 / np.sqrt(var + eps), 0.0).astype(dt)
    return mean, invstd, var_sum, np.asarray(rows)


def update_running(
    rm: np.ndarray | None,
    rv: np.ndarray | None,
    mean: np.ndarray,
    var_sum: np.ndarray,
    rows: int,
    momentum: float,
) -> None:
    """Update the running mean and (unbiased) variance in place, as PyTorch's kernel:
    momentum * stat + (1 - momentum) * running in the input's dtype (the
    variance's sum in double, one fused multiply-add for float32 inputs)."""
    dt = mean.dtype.type
    mom = dt(momentum)
    with np.errstate(all="ignore"):
        if var_sum.dtype == np.float64 and dt != np.float64:
            # the generic path's update, all in double (var_sum is its double sum)
            m = np.float64(momentum)
            if rm is not None:
                rm[...] = (m * mean.astype(np.float64) + (1 - m) * rm).astype(rm.dtype)
            if rv is not None:
                rv[...] = (m * (var_sum / (rows - 1)) + (1 - m) * rv).astype(rv.dtype)
            return
        if rm is not None:
            rm[...] = (mom * mean + (dt(1) - mom) * rm.astype(dt)).astype(rm.dtype)
        if rv is not None:
            unbiased = (var_sum / dt(rows - 1)).astype(np.float64)
            keep = ((dt(1) - mom) * rv.astype(dt)).astype(np.float64)
            if dt == np.float64:  # measured: a double input's update is not fused
                rv[...] = (mom * unbiased + keep).astype(rv.dtype)
            else:
                rv[...] = _fma(np.float64(mom), unbiased, keep).astype(rv.dtype)


def eval_invstd(rv: np.ndarray, eps: float, dt: type) -> np.ndarray:
    """1 / sqrt(running_var + eps) in the input's dtype (the forward's eval path)."""
    with np.errstate(all="ignore"):
        return (dt(1) / np.sqrt(rv.astype(dt) + dt(eps))).astype(dt)


def batch_norm_apply(
    x: np.ndarray,
    mean: np.ndarray,
    invstd: np.ndarray,
    w: np.ndarray | None,
    b: np.ndarray | None,
) -> np.ndarray:
    """y = fma(x, alpha, beta) with alpha = invstd * w, beta = fma(-mean, alpha, b)."""
    dt = x.dtype.type
    c = x.shape[1]
    with np.errstate(all="ignore"):
        alpha = invstd.astype(dt) * (np.ones(c, dt) if w is None else w.astype(dt))
        beta = _fma(-mean.astype(dt), alpha, np.zeros(c, dt) if b is None else b.astype(dt))
        sh = (1, c) + (1,) * (x.ndim - 2)
        if strided_layout(x):  # the generic path: ((x - mean) * invstd) * w + b, unfused
            one, zero = np.ones(c, dt), np.zeros(c, dt)
            n = (x - mean.astype(dt).reshape(sh)) * invstd.astype(dt).reshape(sh)
            wd = (one if w is None else w.astype(dt)).reshape(sh)
            y = n * wd + (zero if b is None else b.astype(dt)).reshape(sh)
        else:
            y = _fma(x, alpha.reshape(sh), beta.reshape(sh))
        return bngeneric.laid_out(y, x)


def batch_norm_backward(
    g: np.ndarray,
    x: np.ndarray,
    w: np.ndarray | None,
    mean: np.ndarray,
    invstd: np.ndarray,
    train: bool,
    need: tuple[bool, bool, bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(dx, dweight, dbias) as batch_norm_cpu_backward: sum = sum(dy) and
    dotp = sum((x - mean) * dy) per channel, then dx = (dy - sum/n - (x - mean) * k)
    * invstd * w with k = dotp * invstd^2 / n (training) or dy * invstd * w (eval)."""
    dt = x.dtype.type
    c = x.shape[1]
    rows = x.size // c if c else 0
    g = np.broadcast_to(g, x.shape)
    if x.size and not bngeneric.kernel_layouts(x, g):
        return bngeneric.generic_backward(g, x, w, mean, invstd, train, need)
    v, gv = _channel_last_rows(x), _channel_last_rows(g)
    g = np.ascontiguousarray(g)
    wv = np.ones(c, dt) if w is None else w.astype(dt)
    sh = (1, c) + (1,) * (x.ndim - 2)
    with np.errstate(all="ignore"):
        if v is not None and gv is not None:
            total = _thread_sums(gv).astype(dt)
            dp = np.zeros(c, np.float64)
            d = v - mean
            for lo, hi in thread_chunks(rows, threads(), 1) if rows else []:
                acc = np.zeros(c, dt)
                for i in range(lo, hi):
                    acc = _fma(d[i], gv[i], acc)
                dp = dp + acc
            dotp = dp.astype(dt)
            if train:
                k = dotp * invstd * invstd / dt(rows)
                gmean = total / dt(rows)
            grad_w = dotp * invstd
            grad_b = total
        else:
            xr = _channel_rows(x)  # (c, batch, image)
            gr = _channel_rows(g)
            lanes = _lanes(x.dtype)
            part_s = _lanes_reduce(gr, lanes).astype(np.float64)
            part_d = _lanes_dot(xr - mean[:, None, None], gr, lanes).astype(np.float64)
            # the double accumulators start at +0
            s = np.cumsum(part_s, axis=1)[:, -1] + 0.0 if part_s.size else np.zeros(c)
            dp = np.cumsum(part_d, axis=1)[:, -1] + 0.0 if part_d.size else np.zeros(c)
            if train:
                k = dp.astype(dt) * invstd * invstd / dt(rows)
                gmean = (s / rows).astype(dt) if rows else np.full(c, np.nan, dt)
            grad_w = (dp * invstd).astype(dt)
            grad_b = s.astype(dt)
        dx = None
        if need[0]:
            if train and v is not None and gv is not None:
                # the channels-last kernel: its vector body fuses, its tail does not
                d = v - mean
                body = c - c % _lanes(x.dtype)
                t = gv - gmean - d * k
                t[:, :body] = _fma(-d[:, :body], k[:body], gv[:, :body] - gmean[:body])
                dx = _from_channel_rows(t * invstd * wv, x)
            elif train:
                t = _fma(-(x - mean.reshape(sh)), k.reshape(sh), g - gmean.reshape(sh))
                dx = bngeneric.laid_out(t * invstd.reshape(sh) * wv.reshape(sh), x)
            else:
                dx = bngeneric.laid_out(g * invstd.reshape(sh) * wv.reshape(sh), x)
    return dx, (grad_w if need[1] else None), (grad_b if need[2] else None)


def backward_eval_invstd(rv: np.ndarray, eps: float, dt: type) -> np.ndarray:
    """The backward's eval invstd: 1 / sqrt(running_var + eps) in double, then rounded."""
    with np.errstate(all="ignore"):
        return (1.0 / np.sqrt(rv.astype(np.float64) + eps)).astype(dt)


# ************************************************************ group norm


def group_norm(
    x: np.ndarray, groups: int, w: np.ndarray | None, b: np.ndarray | None, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, mean, rstd) as GroupNormKernelImpl: each (sample, group) block's moments as
    layer_norm's rows, rstd = 1 / sqrt(var + eps) with eps in double; then per
    channel scale = rstd * w, bias = fma(-scale, mean, b), y = fma(scale, x, bias)
    (without weight and bias: (x - mean) * rstd)."""
    dt = x.dtype.type
    n, c = x.shape[0], x.shape[1]
    hw = x.size // (n * c) if n * c else 0
    d = c // groups
    rows = n * groups
    x3 = np.ascontiguousarray(x).reshape(rows, d, hw)
    if x.size == 0:
        return x.copy(), np.zeros(rows, dt), np.zeros(rows, dt)
    mean, var = rowwise_moments(x3.reshape(rows, d * hw))
    with np.errstate(all="ignore"):
        rstd = (1.0 / np.sqrt(np.maximum(var, dt(0)).astype(np.float64) + eps)).astype(dt)
        if w is None and b is None:
            y = (x3 - mean[:, None, None]) * rstd[:, None, None]
        else:
            wv = (np.ones(c, dt) if w is None else w.astype(dt)).reshape(groups, d)
            bv = (np.zeros(c, dt) if b is None else b.astype(dt)).reshape(groups, d)
            scale = rstd.reshape(n, groups, 1) * wv  # (n, groups, d)
            bias = _fma(-scale, mean.reshape(n, groups, 1), bv)
            y = _fma(scale.reshape(rows, d, 1), x3, bias.reshape(rows, d, 1))
    return y.reshape(x.shape), mean, rstd


def group_norm_backward(
    g: np.ndarray,
    x: np.ndarray,
    mean: np.ndarray,
    rstd: np.ndarray,
    w: np.ndarray | None,
    groups: int,
    need: tuple[bool, bool, bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(dx, dweight, dbias) as GroupNormBackwardKernelImpl: per (sample, channel)
    ds = sum(dy * x) and db = sum(dy) over the plane; per block
    c2 = (db' * mean - ds') * rstd^3 / (d * hw), c3 = -c2 * mean - db' * rstd / (d * hw)
    with ds', db' the channels' sums weighted by w; dx = c1 * dy + c2 * x + c3 with
    c1 = rstd * w; dweight = sum over samples of (ds - db * mean) * rstd."""
    dt = x.dtype.type
    n, c = x.shape[0], x.shape[1]
    hw = x.size // (n * c) if n * c else 0
    d = c // groups
    lanes = _lanes(x.dtype)
    xp = np.ascontiguousarray(x).reshape(n, c, hw)
    gp = np.ascontiguousarray(np.broadcast_to(g, x.shape)).reshape(n, c, hw)
    dx = dw = db = None
    with np.errstate(all="ignore"):
        # (n, c): float's tail products are not fused into the lanes, double's are (measured)
        ds = _lanes_dot(gp, xp, lanes) if lanes == 4 else _lanes_reduce(gp * xp, lanes)
        dbs = _lanes_reduce(gp, lanes)
        mean2, rstd2 = mean.reshape(n, groups), rstd.reshape(n, groups)
        if need[0]:
            wv = np.ones(c, dt) if w is None else w.astype(dt)
            wg = wv.reshape(groups, d)
            # one block runs inline, more in OpenMP's outlined copy of the loop: the
            # two copies fuse the leftover channels' multiply-adds differently
            fused = n * groups > 1 and threads() > 1
            ds_g = _weighted_channel_sum(ds.reshape(n, groups, d), wg, lanes, fused)
            db_g = _weighted_channel_sum(dbs.reshape(n, groups, d), wg, lanes, fused)
            s = dt(1) / dt(d * hw)
            c2 = _fma(db_g, mean2, -ds_g) * rstd2 * rstd2 * rstd2 * s
            c3 = _fma(-(db_g * rstd2), s, -c2 * mean2)
            c1 = rstd2[:, :, None] * wg  # (n, groups, d)
            x4 = xp.reshape(n, groups, d, hw)
            g4 = gp.reshape(n, groups, d, hw)
            dx = _fma(c1[..., None], g4, c2[:, :, None, None] * x4) + c3[:, :, None, None]
            dx = dx.reshape(x.shape)
        if need[1]:
            acc = np.zeros((groups, d), dt)
            for i in range(n):
                t = _fma(-dbs[i].reshape(groups, d), mean2[i][:, None], ds[i].reshape(groups, d))
                acc = _fma(t, rstd2[i][:, None], acc)
            dw = acc.reshape(c)
        if need[2]:
            acc = np.zeros(c, dt)
            for i in range(n):
                acc = acc + dbs[i]
            db = acc
    return dx, dw, db


def _weighted_channel_sum(
    v: np.ndarray, wg: np.ndarray, lanes: int, fused_tail: bool
) -> np.ndarray:
    """sum over a block's channels of v * w as CalcDsDb: whole vectors of channels
    accumulated per lane (fused), the lanes added in order from 0, then the other
    channels (fused where `fused_tail`)."""
    d = v.shape[-1]
    full = d - d % lanes
    total = np.zeros(v.shape[:-1], v.dtype)
    if full:
        acc = np.zeros(v.shape[:-1] + (lanes,), v.dtype)
        for j in range(0, full, lanes):
            acc = _fma(v[..., j : j + lanes], wg[:, j : j + lanes], acc)
        for lane in range(lanes):
            total = total + acc[..., lane]
    for j in range(full, d):
        total = _fma(v[..., j], wg[:, j], total) if fused_tail else total + v[..., j] * wg[:, j]
    return total
