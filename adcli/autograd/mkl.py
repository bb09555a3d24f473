"""Intel MKL, the library PyTorch's CPU build calls, for results bit-equal to its.

PyTorch 2.13's x86 wheels link oneMKL 2024.2. Two families of its CPU operations
are MKL's own code, closed source, with roundings no formula here reproduces:

- unary functions that `aten/src/ATen/cpu/vml.h` sends to MKL's vector math
  library (`vmsSin`, `vmdSin`, `vmsExp`, ...) in high-accuracy mode, float32 and
  float64;
- float32 matrix products: `sgemm` (mm, addmm, so `nn.Linear`), `cblas_sgemm_batch`
  (bmm), `sgemv` (mv), `sdot` (dot); float64 `dgemm` (mm, addmm). MKL picks its
  kernels by CPU, so on some CPUs (AMD's) its float64 products round otherwise than
  NumPy's BLAS. Float64 bmm, mv and dot stay NumPy's.

When the optional `mkl` package (pip install "adcli[mkl]", the same MKL version) is
installed, adcli calls the same functions the way PyTorch calls them. It is loaded
on first use, so a script that never needs it never pays for it; without it every
function here returns None and the caller keeps its NumPy kernel.

MKL threads its matrix products with GNU OpenMP in PyTorch's build, as many threads
as PyTorch's (`summation.threads`), and with more than one thread the split of the
work changes the last bits: so MKL runs on GNU OpenMP (libgomp) here too, or, where
libgomp cannot be loaded, on one thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .storage import empty_like_iterator, flat_storage
from .summation import threads

_F32 = np.dtype(np.float32)
_GEMM = (_F32, np.dtype(np.float64))  # the dtypes addmm sends to MKL (sgemm, dgemm)

# mkl_vml_defines.h: high accuracy, denormals kept, no error handling
_VML_MODE = 0x2 | 0x140000 | 0x100
# mkl_service.h: MKL_THREADING_INTEL, SEQUENTIAL, PGI, GNU
_THREADING_SEQUENTIAL, _THREADING_GNU = 1, 3
# mkl_cblas.h
_COL_MAJOR, _NO_TRANS, _TRANS = 102, 111, 112

#: torch op name -> MKL's vector function (vms... for float32, vmd... for float64):
#: the ops vml.h routes to MKL, whose results were measured bit-equal to torch 2.13's
#: (tests/conformance/test_mkl_vs_torch.py)
VML_FUNCTIONS = {
    "sin": "Sin",
    "cos": "Cos",
    "tan": "Tan",
    "exp": "Exp",
    "log": "Ln",
    "log2": "Log2",
    "log10": "Log10",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "asin": "Asin",
    "acos": "Acos",
    "atan": "Atan",
    "erf": "Erf",
    "erfc": "Erfc",
    "erfinv": "ErfInv",
}
_VML_PREFIX = {np.dtype(np.float32): "vms", np.dtype(np.float64): "vmd"}


def _candidates() -> list[str]:
    """Where libmkl_rt may be: the `mkl` distribution's files, then the loader's path."""
    import ctypes.util  # with pathlib and importlib.metadata, ~20 ms: only when needed
    from pathlib import Path

    found = []
    try:
        from importlib import metadata

        dist = metadata.distribution("mkl")
        for f in dist.files or ():
            if f.name.startswith("libmkl_rt.so"):
                found.append(str(Path(dist.locate_file(f)).resolve()))
    except Exception:  # noqa: BLE001 - not installed, or unreadable metadata
        pass
    name = ctypes.util.find_library("mkl_rt")
    if name:
        found.append(name)
    return found


class _Mkl:
    """The loaded library with the few functions adcli calls."""

    def __init__(self, lib: ctypes.CDLL, nthreads: int) -> None:
        self.lib = lib
        self.threads = nthreads
        self._vml: dict[str, Any] = {}
        c_int_p = ctypes.POINTER(ctypes.c_int)
        c_float_p = ctypes.POINTER(ctypes.c_float)
        vp, ch = ctypes.c_void_p, ctypes.c_char_p
        self.sgemm = lib.sgemm
        self.sgemm.restype = None
        self.sgemm.argtypes = [ch, ch, c_int_p, c_int_p, c_int_p, c_float_p, vp, c_int_p, vp]
        self.sgemm.argtypes += [c_int_p, c_float_p, vp, c_int_p]
        c_double_p = ctypes.POINTER(ctypes.c_double)
        self.dgemm = lib.dgemm
        self.dgemm.restype = None
        self.dgemm.argtypes = [ch, ch, c_int_p, c_int_p, c_int_p, c_double_p, vp, c_int_p, vp]
        self.dgemm.argtypes += [c_int_p, c_double_p, vp, c_int_p]
        self.sgemv = lib.sgemv
        self.sgemv.restype = None
        self.sgemv.argtypes = [ch, c_int_p, c_int_p, c_float_p, vp, c_int_p, vp, c_int_p]
        self.sgemv.argtypes += [c_float_p, vp, c_int_p]
        self.sdot = lib.sdot
        self.sdot.restype = ctypes.c_float
        self.sdot.argtypes = [c_int_p, vp, c_int_p, vp, c_int_p]
        self.sgemm_batch = lib.cblas_sgemm_batch
        self.sgemm_batch.restype = None
        self.sgemm_batch.argtypes = [ctypes.c_int, c_int_p, c_int_p, c_int_p, c_int_p, c_int_p]
        self.sgemm_batch.argtypes += [c_float_p, vp, c_int_p, vp, c_int_p, c_float_p, vp, c_int_p]
        self.sgemm_batch.argtypes += [ctypes.c_int, c_int_p]

    def vml(self, name: str, dtype: np.dtype) -> Any:
        symbol = _VML_PREFIX[dtype] + VML_FUNCTIONS[name]
        f = self._vml.get(symbol)
        if f is None:
            f = getattr(self.lib, symbol)
            f.restype = None
            f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
            self._vml[symbol] = f
        return f


def _load() -> _Mkl | None:
    if os.environ.get("ADCLI_NO_MKL"):
        return None
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            lib.MKL_Set_Threading_Layer.restype = ctypes.c_int
            lib.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            continue
        nthreads = threads()
        layer = _THREADING_GNU
        try:
            # MKL's GNU threading layer needs libgomp loaded with global symbols
            ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
        except OSError:
            layer, nthreads = _THREADING_SEQUENTIAL, 1
        lib.MKL_Set_Threading_Layer(layer)
        lib.MKL_Set_Num_Threads.argtypes = [ctypes.c_int]
        lib.MKL_Set_Num_Threads(nthreads)
        lib.MKL_Set_Dynamic.argtypes = [ctypes.c_int]
        lib.MKL_Set_Dynamic(0)  # PyTorch's set_num_threads: always the threads asked for
        try:
            return _Mkl(lib, nthreads)
        except AttributeError:
            continue
    return None


@functools.cache
def library() -> _Mkl | None:
    """MKL loaded and set up (once), or None where it is not installed."""
    with _library_headroom():
        mkl = _load()
        if mkl is not None:
            _warm_up(mkl)
    return mkl


@contextlib.contextmanager
def _library_headroom() -> Iterator[None]:
    """Raise the address-space soft limit to the hard one while MKL maps its libraries.
    MKL loads its CPU-specific kernels at the first call, and ends the process (a
    fatal error on stdout) when it cannot map them; under a memory budget
    (adcli.core.isolation) the hard limit keeps room for that."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # pragma: no cover - no rlimits here
        yield
        return
    raised = soft != hard
    if raised:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    try:
        yield
    finally:
        if raised:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _warm_up(mkl: _Mkl) -> None:
    """One tiny call of each kind adcli makes, so that MKL loads its kernel libraries
    now (inside the headroom) rather than at a script's first large product."""
    one = np.ones((1, 1), _F32)
    out = np.zeros((1, 1), _F32)
    n, a, b = _int(1), _float(1.0), _float(0.0)
    mkl.sgemm(b"n", b"n", n, n, n, a, one.ctypes.data, n, one.ctypes.data, n, b, out.ctypes.data, n)
    d1, d_out = np.ones((1, 1)), np.zeros((1, 1))
    da, db = _double(1.0), _double(0.0)
    mkl.dgemm(
        b"n", b"n", n, n, n, da, d1.ctypes.data, n, d1.ctypes.data, n, db, d_out.ctypes.data, n
    )
    for dt in (_F32, np.dtype(np.float64)):
        x, r = np.ones(1, dt), np.zeros(1, dt)
        mkl.vml("exp", dt)(1, x.ctypes.data, r.ctypes.data, _VML_MODE)


def available() -> bool:
    return library() is not None


# ---------------------------------------------------------------- vector math


_vml_cache: dict[tuple[str, np.dtype], Any] = {}
_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def _ptr(a: np.ndarray) -> int:
    """The address of contiguous a's data (from_buffer is 4x faster than .ctypes.data,
    which counts on arrays of a few elements; it refuses a read-only array)."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


_STEP = 1 << 30  # MKL_INT is 32 bits


def vml(name: str, x: np.ndarray) -> np.ndarray | None:
    """MKL's `name` (a VML_FUNCTIONS key) of float32 or float64 x elementwise, as
    PyTorch computes it; None for another dtype or when MKL is missing."""
    dt = x.dtype
    f = _vml_cache.get((name, dt))
    if f is None:
        if dt not in _VML_PREFIX:
            return None
        mkl = library()
        if mkl is None:
            return None
        f = _vml_cache[name, dt] = mkl.vml(name, dt)
    n = x.size
    if x.flags.c_contiguous:  # (0-d stays 0-d)
        out = np.empty(x.shape, dt)
        if n <= _STEP:  # the usual case, with as little per-call cost as can be
            if n:
                f(n, _ptr(x), _addressof(_from_buffer(out)), _VML_MODE)
            return out
        flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    else:
        # the result laid out as PyTorch's TensorIterator lays it out (a dense x's
        # strides kept); computed in memory order on a copy of x in that layout
        out = empty_like_iterator(x)
        src = np.empty_like(out)
        src[...] = x
        flat_in, flat_out = flat_storage(src), flat_storage(out)
        assert flat_in is not None and flat_out is not None
    for i in range(0, n, _STEP):
        a, r = flat_in[i : i + _STEP], flat_out[i : i + _STEP]
        f(a.size, a.ctypes.data, r.ctypes.data, _VML_MODE)
    return out


# ---------------------------------------------------------------- BLAS


def _int(v: int) -> Any:
    return ctypes.byref(ctypes.c_int(v))


def _float(v: float) -> Any:
    return ctypes.byref(ctypes.c_float(v))


def _double(v: float) -> Any:
    return ctypes.byref(ctypes.c_double(v))


_INT_MAX = 2**31 - 1


def _normalize_last_dims(
    ta: bool, tb: bool, m: int, n: int, k: int, lda: int, ldb: int, ldc: int
) -> tuple[int, int, int]:
    """PyTorch's cpublas normalize_last_dims: leading dimensions of size-1 sides set as
    it sets them, since MKL picks its kernel (and its rounding) by them."""
    if n == 1:
        ldc = m
    if ta:
        if m == 1:
            lda = k
    elif k == 1:
        lda = m
    if tb:
        if k == 1:
            ldb = n
    elif n == 1:
        ldb = k
    return lda, ldb, ldc


def _elem_strides(x: np.ndarray) -> list[int] | None:
    """x's strides in elements, or None when BLAS cannot read them (negative, odd)."""
    out = []
    for s in x.strides:
        if s < 0 or s % x.itemsize:
            return None
        out.append(s // x.itemsize)
    return out


_PACKED = 32  # addmm: the smallest side from which operands are not copied to align them
_ALIGN = 64  # PyTorch's CPU allocator aligns every tensor's memory to 64 bytes


def _empty(shape: tuple[int, ...], misalign: int = 0, dtype: np.dtype = _F32) -> np.ndarray:
    """An uninitialised array whose first element sits `misalign` bytes past a
    64-byte boundary (as a fresh PyTorch tensor, or a view at that offset of one)."""
    n = int(np.prod(shape)) * dtype.itemsize
    buf = np.empty(n + _ALIGN, np.uint8)
    start = (misalign - buf.ctypes.data) % _ALIGN
    return buf[start : start + n].view(dtype).reshape(shape)


def _owner_offset(x: np.ndarray) -> int:
    """How far x's first element is from the start of the array owning its memory."""
    owner = x
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    return x.ctypes.data - owner.ctypes.data


def _aligned(x: np.ndarray) -> np.ndarray:
    """x at PyTorch's alignment: MKL's matrix-vector kernels peel differently, and so
    round differently, at another alignment. The array owning x's memory stands for
    a PyTorch tensor (64-byte aligned); x keeps its offset into it and its strides."""
    want = _owner_offset(x) % _ALIGN
    if x.ctypes.data % _ALIGN == want or x.size == 0:
        return x
    if x.flags.c_contiguous or x.flags.f_contiguous:
        order = "C" if x.flags.c_contiguous else "F"
        y = _empty(x.shape if order == "C" else x.shape[::-1], want, x.dtype)
        y = y if order == "C" else y.T
        y[...] = x
        return y
    span = sum((n - 1) * s for n, s in zip(x.shape, x.strides, strict=True)) + x.itemsize
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(x.ctypes.data))
    buf = np.empty(span + _ALIGN, np.uint8)
    start = (want - buf.ctypes.data) % _ALIGN
    buf[start : start + span] = raw
    return np.lib.stride_tricks.as_strided(
        buf[start : start + span].view(x.dtype), x.shape, x.strides, writeable=False
    )


def _as_blas(x: np.ndarray, align: bool = True) -> tuple[np.ndarray, list[int]]:
    st = _elem_strides(x)
    if st is None:  # PyTorch never has such strides: a fresh, aligned copy
        y = _empty(x.shape, 0, x.dtype)
        y[...] = x
        x, st = y, _elem_strides(y)
        assert st is not None
    return (_aligned(x) if align else x), st


def _contiguous(x: np.ndarray) -> np.ndarray:
    y = _empty(x.shape, 0, x.dtype)
    y[...] = x
    return y


def addmm(
    bias: np.ndarray | None,
    m1: np.ndarray,
    m2: np.ndarray,
    beta: float = 0.0,
    alpha: float = 1.0,
    out_offset: int = 0,
) -> np.ndarray | None:
    """beta * bias + alpha * (m1 @ m2) for float32 or float64 2-d m1, m2 as PyTorch's
    CPU addmm computes it: the result, C-contiguous, starts as bias broadcast (unless
    beta is 0), and one `sgemm` (`dgemm`) call, with the operands, transpositions and
    leading dimensions PyTorch derives from the strides, adds the product. None when
    MKL is missing, the operands are not all float32 or all float64, or the sizes
    exceed 32-bit BLAS. `out_offset`: the result's byte offset into a PyTorch tensor
    (a matrix of a batch)."""
    dt = m1.dtype
    if dt not in _GEMM or m2.dtype != dt or (bias is not None and bias.dtype != dt):
        return None
    rows, k_ = m1.shape
    cols = m2.shape[1]
    if max(rows, cols, k_) > _INT_MAX or rows * cols == 0 or k_ == 0:
        return None
    mkl = library()
    if mkl is None:
        return None
    res = _empty((rows, cols), out_offset % _ALIGN, dt)
    if beta != 0:
        res[...] = np.broadcast_to(bias, (rows, cols))
    # Large products are packed into MKL's own buffers first, so where the operands
    # start does not change the result (none of 3,000 shapes and offsets tried did, at
    # any size); the aligned copies, which cost as much as the product in training
    # loops, are kept only for small products as a precaution.
    align = min(rows, cols, k_) < _PACKED
    m1, s1 = _as_blas(m1, align)
    m2, s2 = _as_blas(m2, align)
    # the result is row-major: BLAS (column-major) computes its transpose, m2' @ m1'
    if cols == 1:
        tc, m, n = False, rows, cols
    else:
        m1, m2, s1, s2 = m2, m1, s2, s1
        tc, m, n = True, cols, rows
    k = k_
    i0, i1 = (1, 0) if tc else (0, 1)
    if s1[i0] == 1 and s1[i1] >= max(1, m):
        ta, a = False, m1
    elif s1[i1] == 1 and s1[i0] >= max(1, k):
        ta, a = True, m1
    else:
        ta, a = not tc, _contiguous(m1)
    if s2[i0] == 1 and s2[i1] >= max(1, k):
        tb, b = False, m2
    elif s2[i1] == 1 and s2[i0] >= max(1, n):
        tb, b = True, m2
    else:
        tb, b = not tc, _contiguous(m2)
    sa, sb = _elem_strides(a), _elem_strides(b)
    assert sa is not None and sb is not None
    lda = sa[1 if ta == tc else 0]
    ldb = sb[1 if tb == tc else 0]
    ldc = cols if tc else 1
    lda, ldb, ldc = _normalize_last_dims(ta, tb, m, n, k, lda, ldb, ldc)
    if lda > _INT_MAX or ldb > _INT_MAX or ldc > _INT_MAX:
        return None
    gemm, scalar = (mkl.sgemm, _float) if dt == _F32 else (mkl.dgemm, _double)
    gemm(
        b"t" if ta else b"n",
        b"t" if tb else b"n",
        _int(m),
        _int(n),
        _int(k),
        scalar(alpha),
        a.ctypes.data,
        _int(lda),
        b.ctypes.data,
        _int(ldb),
        scalar(beta),
        res.ctypes.data,
        _int(ldc),
    )
    return res


def mv(mat: np.ndarray, vec: np.ndarray) -> np.ndarray | None:
    """mat @ vec for float32 2-d mat and 1-d vec as PyTorch's CPU mv computes it: one
    `sgemv` ('n' for a column-major mat, else 't' on a row-major one). None when MKL
    is missing or an operand is not float32."""
    if mat.dtype != _F32 or vec.dtype != _F32:
        return None
    rows, cols = mat.shape
    if rows == 0 or cols == 0 or max(rows, cols) > _INT_MAX:
        return None
    mkl = library()
    if mkl is None:
        return None
    res = _empty((rows,))
    vec, sv = _as_blas(vec)
    if sv[0] == 0:  # an expanded vector of one element
        vec, sv = _contiguous(vec), [1]
    mat, sm = _as_blas(mat)

    def ok(m: int, n: int, lda: int) -> bool:
        return n == 1 or lda >= max(1, m)

    if sm[0] == 1 and ok(rows, cols, sm[1]):
        trans, m, n, lda = b"n", rows, cols, sm[1]
    elif sm[1] == 1 and ok(cols, rows, sm[0]):
        trans, m, n, lda = b"t", cols, rows, sm[0]
    else:
        mat = _contiguous(mat)
        trans, m, n, lda = b"t", cols, rows, cols
    if n == 1:
        lda = m
    if lda > _INT_MAX or sv[0] > _INT_MAX:
        return None
    mkl.sgemv(
        trans,
        _int(m),
        _int(n),
        _float(1.0),
        mat.ctypes.data,
        _int(lda),
        vec.ctypes.data,
        _int(sv[0]),
        _float(0.0),
        res.ctypes.data,
        _int(1),
    )
    return res


def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x . y for float32 1-d x, y (same size) as PyTorch's CPU dot computes it: MKL's
    `sdot`. A 0-d array; None when MKL is missing or an operand is not float32."""
    if x.dtype != _F32 or y.dtype != _F32:
        return None
    n = x.shape[0]
    if n == 0 or n > _INT_MAX:
        return None
    mkl = library()
    if mkl is None:
        return None
    x, sx = _as_blas(x)
    y, sy = _as_blas(y)
    incx, incy = (1, 1) if n == 1 else (sx[0], sy[0])
    if incx > _INT_MAX or incy > _INT_MAX:
        return None
    r = mkl.sdot(_int(n), x.ctypes.data, _int(incx), y.ctypes.data, _int(incy))
    return np.asarray(r, _F32)


def _batch_layout(x: np.ndarray, st: list[int]) -> str | None:
    """'n' when each matrix of batch x is row-major, 't' when column-major (PyTorch's
    is_transposed), None otherwise."""
    if st[1] == 1 and st[2] >= x.shape[1]:
        return "t"
    if st[2] == 1 and st[1] >= x.shape[2]:
        return "n"
    return None


def bmm(b1: np.ndarray, b2: np.ndarray) -> np.ndarray | None:
    """b1 @ b2 for float32 3-d b1, b2 as PyTorch's CPU bmm computes it from 400
    multiply-adds per matrix on: MKL's `cblas_sgemm_batch`, one group, every matrix
    of the batch laid out as PyTorch's baddbmm_with_gemm_ passes them (or one `sgemm`
    for a batch of one). None when MKL is missing, an operand is not float32, or a
    batch's matrices are neither row- nor column-major."""
    if b1.dtype != _F32 or b2.dtype != _F32:
        return None
    batch, rows, k = b1.shape
    cols = b2.shape[2]
    if min(batch, rows, cols, k) == 0 or max(rows, cols, k) > _INT_MAX:
        return None
    mkl = library()
    if mkl is None:
        return None
    b1, s1 = _as_blas(b1)
    b2, s2 = _as_blas(b2)
    l1, l2 = _batch_layout(b1, s1), _batch_layout(b2, s2)
    if l1 is None or l2 is None:
        return None
    res = _empty((batch, rows, cols))
    # column-major BLAS computes each result's transpose: b2' @ b1'
    ta, tb = l2 == "t", l1 == "t"
    m, n = cols, rows
    lda = s2[2 if ta else 1]
    ldb = s1[2 if tb else 1]
    lda, ldb, ldc = _normalize_last_dims(ta, tb, m, n, k, lda, ldb, cols)
    if max(lda, ldb, ldc) > _INT_MAX:
        return None
    if batch == 1:
        mkl.sgemm(
            b"t" if ta else b"n",
            b"t" if tb else b"n",
            _int(m),
            _int(n),
            _int(k),
            _float(1.0),
            b2.ctypes.data,
            _int(lda),
            b1.ctypes.data,
            _int(ldb),
            _float(0.0),
            res.ctypes.data,
            _int(ldc),
        )
        return res
    ptrs = ctypes.c_void_p * batch
    isz = _F32.itemsize
    a_ptrs = ptrs(*(b2.ctypes.data + i * s2[0] * isz for i in range(batch)))
    b_ptrs = ptrs(*(b1.ctypes.data + i * s1[0] * isz for i in range(batch)))
    c_ptrs = ptrs(*(res.ctypes.data + i * rows * cols * isz for i in range(batch)))
    c_int = ctypes.c_int
    mkl.sgemm_batch(
        _COL_MAJOR,
        ctypes.byref(c_int(_TRANS if ta else _NO_TRANS)),
        ctypes.byref(c_int(_TRANS if tb else _NO_TRANS)),
        _int(m),
        _int(n),
        _int(k),
        _float(1.0),
        a_ptrs,
        _int(lda),
        b_ptrs,
        _int(ldb),
        _float(0.0),
        c_ptrs,
        _int(ldc),
        1,
        _int(batch),
    )
    return res
