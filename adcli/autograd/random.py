"""PyTorch's CPU random generator, reproduced with NumPy.

``Generator`` gives the same numbers as ``torch.Generator()`` /
``torch.default_generator`` of PyTorch 2.13 on an x86-64 CPU, for ``randn``,
``rand``, ``randint``, ``randperm``, ``normal_`` and ``uniform_`` on freshly
made (contiguous) tensors.  The algorithm (PYTORCH-REFERENCE.md section 18,
refined by experiment against torch):

* Engine: MT19937 seeded with the standard ``init_genrand(seed & 0xffffffff)``
  (``initial_seed()`` keeps the full 64-bit seed).  ``random()`` is one 32-bit
  output; ``random64()`` is ``(first << 32) | second``.
* Uniform floats: ``(random() & (2**24 - 1)) * 2**-24`` for float32 and
  float16, ``(random64() & (2**53 - 1)) * 2**-53`` for float64; then
  ``fma(x, to - from, from)`` in float32 / float64, rounded to the dtype; a
  result equal to ``to`` is replaced by ``from`` (the range is [from, to)).
* ``randn`` / ``normal_`` with fewer than 16 elements: per element a double Box-Muller
  ``u1, u2 = uniform53(), uniform53(); r = sqrt(-2 log1p(-u2)); t = 2 pi u1``,
  emitting ``r cos t`` and caching ``r sin t`` for the next element, then
  ``fma(v, std, mean)`` in double and a cast.  The cache lives in the
  generator and survives across calls (cleared by manual_seed).
* 16 elements or more: fill the whole buffer with uniforms, then transform
  each block of 16 in place (pairs ``j``, ``j + 8``); when ``n % 16 != 0`` the
  last 16 slots are refilled with fresh uniforms and transformed again.  For
  float32 torch runs this through an AVX2 Cephes-style ``log``/``sincos`` with
  FMA contraction; we emulate those float32 polynomials exactly.  float64 uses
  libm ``log``/``cos``/``sin`` (Python's ``math``, the same libm).  float16
  is computed as float32 and rounded, but its first fill covers only the
  full blocks.  This path neither reads nor clears the cached normal.
* ``exponential_(lambd)``: per element ``u = uniform53()`` then
  ``-1 / lambd * log1p(-u)`` in double and a cast (also for float32: one
  64-bit draw per element), filled in memory order.
* ``randint(low, high)``: ``(random() % (high - low)) + low`` (``random64()``
  when the range is 2**28 or more).  ``randperm(n)``: start from ``0..n-1``
  and for ``i < n - 1`` swap slot ``i`` with slot ``i + random() % (n - i)``.

Residual differences from torch: the float32 FMA is emulated in double
precision (double rounding could differ once in ~2**29 operations), and
the float64 large path switches to NumPy's ``log``/``cos``/``sin`` above
``_EXACT_MATH_LIMIT`` elements (may differ by an ulp from libm).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "DEFAULT_SEED",
    "Generator",
    "GeneratorState",
    "default_generator",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "normal",
    "rand",
    "randint",
    "randn",
    "randperm",
    "set_rng_state",
    "uniform",
]

#: Seed of a generator that was never seeded.  (A fresh torch process picks
#: a random one; we use a fixed one, the constant of ATen's
#: ``default_rng_seed_val``, so that unseeded runs are reproducible.)
DEFAULT_SEED = 67280421310721

#: Float dtype names accepted by the sampling functions and their NumPy types.
_FLOAT_DTYPES: dict[str, type[np.floating]] = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
}
#: Integer dtype names accepted by ``randint`` / ``randperm``.
_INT_DTYPES: dict[str, type[np.integer]] = {
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
}

#: Mantissa bits (including the hidden bit) used for uniform draws; torch
#: draws float16 uniforms as float32 ones.
_UNIFORM_DIGITS = {"float16": 24, "float32": 24, "float64": 53}
#: Above this many float64 elements the large randn path uses NumPy's
#: transcendental functions instead of libm through ``math`` (speed).
_EXACT_MATH_LIMIT = 1 << 20

#: randint ranges from this size on use random64() instead of random().
_RANDINT_WIDE_RANGE = 1 << 28

_MT_N = 624
#: Bytes in torch's ``Generator.get_state()`` tensor.
STATE_SIZE = 5056
_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_F32 = np.float32
_F64 = np.float64


@dataclass(frozen=True)
class GeneratorState:
    """Opaque snapshot of a :class:`Generator` (what ``get_state`` returns)."""

    seed: int
    key: bytes
    pos: int
    next_normal: float | None


class Generator:
    """NumPy port of ``torch.Generator(device="cpu")``.

    Every sampling method takes the tensor shape and torch dtype name and
    returns a new C-contiguous NumPy array holding what torch would put into
    a freshly made tensor of that shape and dtype.
    """

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        """Create a generator seeded with ``seed`` (see :meth:`manual_seed`)."""
        self._engine = np.random.MT19937()
        self._seed = 0
        self._next_normal: float | None = None
        self.manual_seed(seed)

    # -- seeding and state ------------------------------------------------

    def manual_seed(self, seed: int) -> Generator:
        """Seed the engine as ``torch.manual_seed(seed)`` does; return self.

        Accepts ``-2**63 <= seed < 2**64`` (negative seeds wrap modulo 2**64,
        as torch stores them in a uint64).  Clears the cached normal.
        """
        seed = int(seed)
        if not -(1 << 63) <= seed <= _U64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & _U64
        self._engine.state = {
            "bit_generator": "MT19937",
            "state": {"key": _init_genrand(self._seed & _U32), "pos": _MT_N},
        }
        self._next_normal = None
        return self

    def initial_seed(self) -> int:
        """Return the seed last given to :meth:`manual_seed` (as a uint64)."""
        return self._seed

    def get_state(self) -> GeneratorState:
        """Return an opaque snapshot of the whole generator state."""
        state = self._engine.state["state"]
        return GeneratorState(
            seed=self._seed,
            key=np.asarray(state["key"], dtype=np.uint32).tobytes(),
            pos=int(state["pos"]),
            next_normal=self._next_normal,
        )

    def set_state(self, state: GeneratorState) -> Generator:
        """Restore a snapshot made by :meth:`get_state`; return self."""
        if not isinstance(state, GeneratorState):
            raise TypeError(f"expected a GeneratorState, got {type(state).__name__}")
        self._seed = state.seed
        self._engine.state = {
            "bit_generator": "MT19937",
            "state": {"key": np.frombuffer(state.key, dtype=np.uint32).copy(), "pos": state.pos},
        }
        self._next_normal = state.next_normal
        return self

    def state_bytes(self) -> bytes:
        """The state as the 5056 bytes of torch's ``Generator.get_state()``.

        torch's layout (``CPUGeneratorImplState``, little-endian): the initial
        seed (u64), ``left`` and ``seeded`` (i32 each), ``next`` (u64), the 624
        words of the key (one u64 each), ``normal_x``, ``normal_y`` and
        ``normal_rho`` (f64, the cached normal in ``normal_y``),
        ``normal_is_valid`` (i32 and 4 bytes of padding), then a float normal
        (f32) and its flag (bool and 3 bytes of padding), unused here.
        """
        state = self._engine.state["state"]
        key = np.asarray(state["key"], dtype=np.uint32)
        pos = int(state["pos"])
        if pos < _MT_N:
            left, nxt = _MT_N + 1 - pos, pos
        else:  # about to twist: freshly seeded (next 0) or after 624 draws (next 624)
            fresh = np.array_equal(key, _init_genrand(self._seed & _U32))
            left, nxt = 1, 0 if fresh else _MT_N
        normal = self._next_normal
        head = np.array([self._seed], dtype="<u8").tobytes()
        head += np.array([left, 1], dtype="<i4").tobytes() + np.array([nxt], "<u8").tobytes()
        tail = np.array([0.0, normal or 0.0, 0.0], dtype="<f8").tobytes()
        tail += np.array([normal is not None, 0, 0, 0], dtype="<i4").tobytes()
        return head + key.astype("<u8").tobytes() + tail

    def set_state_bytes(self, data: bytes) -> Generator:
        """Restore a state made by :meth:`state_bytes` (or by torch); return self."""
        if len(data) != STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the "
                f"input RNG state size to be {len(data)}"
            )
        seed = int(np.frombuffer(data, "<u8", 1, 0)[0])
        left = int(np.frombuffer(data, "<i4", 1, 8)[0])
        nxt = int(np.frombuffer(data, "<u8", 1, 16)[0])
        key = np.frombuffer(data, "<u8", _MT_N, 24).astype(np.uint32)
        normal_y = float(np.frombuffer(data, "<f8", 1, 5024)[0])
        valid = int(np.frombuffer(data, "<i4", 1, 5040)[0])
        self._seed = seed
        pos = _MT_N if left <= 1 else min(nxt, _MT_N)
        self._engine.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._next_normal = normal_y if valid else None
        return self

    # -- raw streams ------------------------------------------------------

    def _random32(self, n: int) -> np.ndarray:
        """``n`` raw 32-bit outputs (uint64 array holding uint32 values)."""
        return self._engine.random_raw(n)

    def _random64(self, n: int) -> np.ndarray:
        """``n`` 64-bit values ``(first << 32) | second`` (uint64 array)."""
        raw = self._engine.random_raw(2 * n)
        return (raw[0::2] << np.uint64(32)) | raw[1::2]

    def _uniform01(self, n: int, dtype: str) -> np.ndarray:
        """``n`` uniforms in [0, 1) the way ``uniform_real_distribution`` makes them.

        float64 values are returned as float64, float16/float32 as float32
        (torch computes the half-precision case in float and rounds later).
        """
        digits = _UNIFORM_DIGITS[dtype]
        if digits == 53:
            bits = self._random64(n) & np.uint64((1 << 53) - 1)
            return bits.astype(_F64) * _F64(2.0**-53)
        bits = self._random32(n) & np.uint64((1 << digits) - 1)
        return bits.astype(_F32) * _F32(2.0**-digits)

    def _next_double_normal(self) -> float:
        """One standard normal from the cached, double Box-Muller path."""
        if self._next_normal is not None:
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = (float(u) for u in self._uniform01(2, "float64"))
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._next_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    # -- sampling ---------------------------------------------------------

    def randn(self, shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
        """``torch.randn(*shape, dtype=dtype, generator=self)``."""
        return self.normal(shape, 0.0, 1.0, dtype)

    def normal(
        self,
        shape: Sequence[int],
        mean: float = 0.0,
        std: float = 1.0,
        dtype: str = "float32",
        serial: bool = False,
    ) -> np.ndarray:
        """``torch.empty(shape, dtype=dtype).normal_(mean, std, generator=self)``;
        `serial`: the tensor filled is not contiguous, so PyTorch draws one by one."""
        np_type = _float_type(dtype)
        shape = _check_shape(shape)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt_scalar(std)}")
        n = math.prod(shape)
        if n >= 16 and not serial:
            return self._normal_fill(n, float(mean), float(std), dtype).reshape(shape)
        # Serial path: double normals (through the cache), fma(v, std, mean)
        # in double, then a cast (float16 goes double -> float -> half).
        values = np.array([self._next_double_normal() for _ in range(n)], dtype=_F64)
        values = _fma64(values, _F64(std), _F64(mean))
        if dtype == "float16":
            values = values.astype(_F32)
        return values.astype(np_type).reshape(shape)

    def _normal_fill(self, n: int, mean: float, std: float, dtype: str) -> np.ndarray:
        """The >= 16-element path: uniforms first, then Box-Muller per 16-block.

        When ``n % 16 != 0`` the last 16 slots are redrawn and transformed
        again.  float16 is computed as float32 and rounded at the end, and
        its first fill covers only the full blocks (observed in torch: a
        float16 ``randn(n)`` consumes ``ceil(n / 16) * 16`` draws).
        """
        work = "float64" if dtype == "float64" else "float32"
        transform = _box_muller16_f64 if work == "float64" else _box_muller16_f32
        full = n - n % 16
        if dtype == "float16":
            data = np.empty(n, dtype=_F32)
            data[:full] = self._uniform01(full, work)
        else:
            data = self._uniform01(n, work)
        data[:full] = transform(data[:full].reshape(-1, 16), mean, std).ravel()
        if n % 16:
            tail = self._uniform01(16, work).reshape(1, 16)
            data[n - 16 :] = transform(tail, mean, std).ravel()
        return data.astype(_float_type(dtype), copy=False)

    def rand(self, shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
        """``torch.rand(*shape, dtype=dtype, generator=self)``."""
        return self.uniform(shape, 0.0, 1.0, dtype)

    def uniform(
        self, shape: Sequence[int], low: float = 0.0, high: float = 1.0, dtype: str = "float32"
    ) -> np.ndarray:
        """``torch.empty(shape, dtype=dtype).uniform_(low, high, generator=self)``."""
        np_type = _float_type(dtype)
        shape = _check_shape(shape)
        if not low <= high:
            raise RuntimeError(
                "uniform_ expects to return a [from, to) range, but found "
                f"from={_fmt_scalar(low)} > to={_fmt_scalar(high)}"
            )
        n = math.prod(shape)
        x = self._uniform01(n, dtype)
        if dtype == "float64":
            lo, hi = _F64(low), _F64(high)
            values = _fma64(x, hi - lo, lo)
        else:
            # float32 arithmetic (also for float16, rounded afterwards).
            lo, hi = _F32(low), _F32(high)
            values = _fma32(x, _F32(hi - lo), lo)
        values = values.astype(np_type)
        # [from, to): a value that rounds up to `to` is replaced by `from`.
        values[values == np_type(high)] = np_type(low)
        return values.reshape(shape)

    def exponential(self, n: int, lambd: float = 1.0, dtype: str = "float32") -> np.ndarray:
        """``n`` values of ``x.exponential_(lambd, generator=self)`` in fill order.

        torch 2.13's CPU kernel is serial and computes every dtype in double:
        ``-1.0 / lambd * log1p(-u)`` with a 53-bit uniform ``u``, then a cast
        (float16 through float32).  libm's ``log1p`` (Python's ``math``) is used
        up to ``_EXACT_MATH_LIMIT`` elements, NumPy's above.
        """
        np_type = _float_type(dtype)
        if not lambd > 0.0:
            raise RuntimeError(
                f"exponential_ expects lambda > 0.0, but found lambda={_fmt_scalar(lambd)}"
            )
        u = self._uniform01(int(n), "float64")
        scale = -1.0 / float(lambd)
        if u.size <= _EXACT_MATH_LIMIT:
            log1p = math.log1p
            values = np.array([scale * log1p(-x) for x in u.tolist()], dtype=_F64)
        else:
            values = scale * np.log1p(-u)
        if dtype == "float16":
            values = values.astype(_F32)
        return values.astype(np_type)

    def randint(
        self, low: int, high: int, shape: Sequence[int], dtype: str = "int64"
    ) -> np.ndarray:
        """``torch.randint(low, high, shape, generator=self)`` (int64 by default)."""
        if dtype not in _INT_DTYPES and dtype not in _FLOAT_DTYPES:
            raise ValueError(f"unsupported dtype for randint: {dtype!r}")
        shape = _check_shape(shape)
        low, high = int(low), int(high)
        if low >= high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        span = high - low
        n = math.prod(shape)
        # torch 2.13 switches to 64-bit draws from a range of 2**28 on (found
        # by bisection against torch; it lowers the modulo bias).
        raw = self._random64(n) if span >= _RANDINT_WIDE_RANGE else self._random32(n)
        offsets = raw % np.uint64(span)
        values = offsets.astype(np.int64) + np.int64(low)
        np_type = _INT_DTYPES.get(dtype) or _FLOAT_DTYPES[dtype]
        return values.astype(np_type).reshape(shape)

    def randperm(self, n: int, dtype: str = "int64") -> np.ndarray:
        """``torch.randperm(n, generator=self)``: Fisher-Yates on ``0..n-1``."""
        n = int(n)
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
        if n >= _U32 // 20:
            raise NotImplementedError("randperm for n >= 2**32 / 20 is not reproduced")
        perm = list(range(n))
        draws = self._random32(max(n - 1, 0)).tolist()
        for i, r in enumerate(draws):
            j = i + r % (n - i)
            perm[i], perm[j] = perm[j], perm[i]
        np_type = _INT_DTYPES.get(dtype) or _FLOAT_DTYPES[dtype]
        return np.array(perm, dtype=np_type)


# ---------------------------------------------------------------------------
# Box-Muller block transforms (16 values -> 16 normals, pairs j and j + 8)
# ---------------------------------------------------------------------------


def _box_muller16_f32(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """torch's AVX2 float32 block transform, emulated bit for bit."""
    u1 = _F32(1.0) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(_F32(-2.0) * _cephes_log_f32(u1))
    theta = _F32(2.0 * math.pi) * u2
    sin, cos = _cephes_sincos_f32(theta)
    mean32, std32 = _F32(mean), _F32(std)
    first = _fma32(radius * cos, std32, mean32)
    second = _fma32(radius * sin, std32, mean32)
    return np.concatenate([first, second], axis=1)


def _box_muller16_f64(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """torch's scalar double block transform (libm log/cos/sin)."""
    u1 = 1.0 - blocks[:, :8]
    u2 = blocks[:, 8:]
    if blocks.size <= _EXACT_MATH_LIMIT:
        log = np.array([math.log(v) for v in u1.ravel().tolist()]).reshape(u1.shape)
        theta = (2.0 * math.pi) * u2
        flat = theta.ravel().tolist()
        cos = np.array([math.cos(v) for v in flat]).reshape(u2.shape)
        sin = np.array([math.sin(v) for v in flat]).reshape(u2.shape)
    else:
        log = np.log(u1)
        theta = (2.0 * math.pi) * u2
        cos, sin = np.cos(theta), np.sin(theta)
    radius = np.sqrt(-2.0 * log)
    first = _fma64(radius * cos, _F64(std), _F64(mean))
    second = _fma64(radius * sin, _F64(std), _F64(mean))
    return np.concatenate([first, second], axis=1)


def _cephes_log_f32(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 values, as ATen's AVX2 ``log256_ps``.

    Cephes-style: split ``x = m * 2**e`` with ``m`` in [sqrt(1/2), sqrt(2)),
    evaluate a degree-8 polynomial in ``m - 1``, add ``e * ln 2`` in two
    parts.  Multiply-adds that GCC contracts into FMA are FMAs here too.
    """
    bits = x.view(np.uint32)
    exponent = ((bits >> np.uint32(23)).astype(np.int32) - 0x7F).astype(_F32) + _F32(1.0)
    mantissa = ((bits & np.uint32(0x807FFFFF)) | _F32(0.5).view(np.uint32)).view(_F32)
    small = mantissa < _F32(0.707106781186547524)
    extra = np.where(small, mantissa, _F32(0.0))
    m = mantissa - _F32(1.0)
    exponent = np.where(small, exponent - _F32(1.0), exponent)
    m = m + extra
    z = m * m
    y = np.full_like(m, _F32(7.0376836292e-2))
    for coefficient in (
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    ):
        y = _fma32(y, m, _F32(coefficient))
    y = y * m
    y = _fma32(y, z, exponent * _F32(-2.12194440e-4))
    y = _fma32(-z, _F32(0.5), y)
    m = m + y
    return _fma32(exponent, _F32(0.693359375), m)


def _cephes_sincos_f32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) for float32 ``x`` as ATen's AVX2 ``sincos256_ps``.

    Reduce by multiples of pi/4 (three-part Cody-Waite constant), then use
    the Cephes sine and cosine polynomials on [-pi/4, pi/4], choosing and
    signing them by octant.  Valid for the |x| < 2**24 range used here.
    """
    bits = x.view(np.uint32)
    sign_sin = bits & np.uint32(0x80000000)
    ax = (bits & np.uint32(0x7FFFFFFF)).view(_F32)
    octant = (ax * _F32(1.27323954473516)).astype(np.int32)  # truncation
    octant = (octant + 1) & ~np.int32(1)
    y = octant.astype(_F32)
    sign_sin = sign_sin ^ ((octant & 4).astype(np.uint32) << np.uint32(29))
    sine_first = (octant & 2) == 0
    r = _fma32(y, _F32(-0.78515625), ax)
    r = _fma32(y, _F32(-2.4187564849853515625e-4), r)
    r = _fma32(y, _F32(-3.77489497744594108e-8), r)
    sign_cos = ((~(octant - 2)) & 4).astype(np.uint32) << np.uint32(29)
    z = r * r
    c = _fma32(np.full_like(z, _F32(2.443315711809948e-5)), z, _F32(-1.388731625493765e-3))
    c = _fma32(c, z, _F32(4.166664568298827e-2))
    c = c * z
    c = _fma32(c, z, -(z * _F32(0.5)))
    c = c + _F32(1.0)
    s = _fma32(np.full_like(z, _F32(-1.9515295891e-4)), z, _F32(8.3321608736e-3))
    s = _fma32(s, z, _F32(-1.6666654611e-1))
    s = s * z
    s = _fma32(s, r, r)
    sin = np.where(sine_first, s, c)
    cos = np.where(sine_first, c, s)
    return (sin.view(np.uint32) ^ sign_sin).view(_F32), (cos.view(np.uint32) ^ sign_cos).view(_F32)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _fma32(
    a: np.ndarray | np.floating, b: np.ndarray | np.floating, c: np.ndarray | np.floating
) -> np.ndarray:
    """float32 fused multiply-add: exact product in double, one final rounding.

    The float32 product is exact in double; the double sum is then rounded to
    float32 (a double rounding, which differs from a true FMA only when the
    double sum lands exactly halfway between two float32 values).
    """
    wide = np.asarray(a, dtype=_F32).astype(_F64) * np.asarray(b, dtype=_F32).astype(_F64)
    return (wide + np.asarray(c, dtype=_F32).astype(_F64)).astype(_F32)


def _fma64(a: np.ndarray, b: np.floating, c: np.floating) -> np.ndarray:
    """float64 fused multiply-add ``a * b + c`` (vectorised, error-free terms).

    The exact product ``p + e`` comes from Dekker's split; ``s + t`` is the
    exact sum ``p + c``; the result ``s + (t + e)`` is the correctly rounded
    value except in extremely rare near-tie cases.  ``b == 1 and c == 0``
    returns ``a`` unchanged (the common ``randn`` case).
    """
    a = np.asarray(a, dtype=_F64)
    if b == 1.0 and c == 0.0:
        return a.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        e = _two_product_error(a, _F64(b), p)
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        result = s + (t + e)
    # Non-finite products/sums: the plain expression is what the FMA gives.
    result = np.where(np.isfinite(result), result, a * b + c)
    # Dekker's split is not exact near the subnormal range: round those exactly
    if b == 0:
        return result
    tiny = np.flatnonzero((np.abs(p) < 2.0**-960) & (a != 0))
    for i in tiny:
        exact = Fraction(float(a.flat[i])) * Fraction(float(b)) + Fraction(float(c))
        value = float(exact)
        result.flat[i] = value if value or exact >= 0 else -0.0
    return result


def _two_product_error(a: np.ndarray, b: np.floating, p: np.ndarray) -> np.ndarray:
    """Error ``a * b - p`` of the double product ``p`` (Dekker/Veltkamp)."""
    split = _F64(134217729.0)  # 2**27 + 1
    ta = split * a
    a_hi = ta - (ta - a)
    a_lo = a - a_hi
    tb = split * b
    b_hi = tb - (tb - b)
    b_lo = b - b_hi
    return ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _init_genrand(seed: int) -> np.ndarray:
    """MT19937 key for 32-bit ``seed`` (Matsumoto-Nishimura ``init_genrand``)."""
    key = [0] * _MT_N
    value = seed & _U32
    key[0] = value
    for i in range(1, _MT_N):
        value = (1812433253 * (value ^ (value >> 30)) + i) & _U32
        key[i] = value
    return np.array(key, dtype=np.uint32)


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """Validate a shape as torch's factories do; return it as a tuple of ints."""
    dims = tuple(int(n) for n in shape)
    for n in dims:
        if n < 0:
            listed = ", ".join(str(d) for d in dims)
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{listed}]")
    return dims


def _float_type(dtype: str) -> type[np.floating]:
    """NumPy type of a floating torch dtype name, or ValueError."""
    try:
        return _FLOAT_DTYPES[dtype]
    except KeyError:
        raise ValueError(f"unsupported floating dtype: {dtype!r}") from None


def _fmt_scalar(value: float) -> str:
    """Format a bound in torch's error messages (``2``, ``-1``, ``0.5``)."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


# ---------------------------------------------------------------------------
# The default generator and torch-style module functions
# ---------------------------------------------------------------------------

#: The process-wide generator used by ``torch.randn`` & co.
default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """``torch.manual_seed(seed)``: reseed :data:`default_generator`."""
    return default_generator.manual_seed(seed)


def initial_seed() -> int:
    """``torch.initial_seed()``."""
    return default_generator.initial_seed()


def get_rng_state() -> GeneratorState:
    """``torch.get_rng_state()`` (opaque)."""
    return default_generator.get_state()


def set_rng_state(state: GeneratorState) -> None:
    """``torch.set_rng_state(state)``."""
    default_generator.set_state(state)


def randn(shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
    """``torch.randn(*shape, dtype=dtype)``."""
    return default_generator.randn(shape, dtype)


def rand(shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
    """``torch.rand(*shape, dtype=dtype)``."""
    return default_generator.rand(shape, dtype)


def normal(
    shape: Sequence[int], mean: float = 0.0, std: float = 1.0, dtype: str = "float32"
) -> np.ndarray:
    """``torch.empty(shape, dtype=dtype).normal_(mean, std)``."""
    return default_generator.normal(shape, mean, std, dtype)


def uniform(
    shape: Sequence[int], low: float = 0.0, high: float = 1.0, dtype: str = "float32"
) -> np.ndarray:
    """``torch.empty(shape, dtype=dtype).uniform_(low, high)``."""
    return default_generator.uniform(shape, low, high, dtype)


def randint(low: int, high: int, shape: Sequence[int], dtype: str = "int64") -> np.ndarray:
    """``torch.randint(low, high, shape)``."""
    return default_generator.randint(low, high, shape, dtype)


def randperm(n: int, dtype: str = "int64") -> np.ndarray:
    """``torch.randperm(n)``."""
    return default_generator.randperm(n, dtype)
