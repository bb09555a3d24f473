"""Tests of adcli.autograd.random (no torch needed).

Expected numbers were produced by PyTorch 2.13.0 on CPU (see also
PYTORCH-REFERENCE.md section 18, examples M1/M2).
"""

from __future__ import annotations

import numpy as np
import pytest

from adcli.autograd import random as arandom
from adcli.autograd.printing import format_tensor
from adcli.autograd.random import DEFAULT_SEED, Generator


@pytest.fixture
def gen() -> Generator:
    return Generator()


def show(data: np.ndarray, dtype: str = "float32", **kwargs) -> str:
    return format_tensor(data, dtype, **kwargs)


# --- printed values of the reference's M1 example ---------------------------


def test_m1_seed0_randn_sequence(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.randn((3,))) == "tensor([ 1.5410, -0.2934, -2.1788])"
    assert show(gen.randn((2, 2))) == "tensor([[ 0.5684, -1.0845],\n        [-1.3986,  0.4033]])"
    gen.manual_seed(0)
    assert show(gen.randn((3,))) == "tensor([ 1.5410, -0.2934, -2.1788])"


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        (42, "tensor([0.3367, 0.1288, 0.2345])"),
        (7, "tensor([-0.1468,  0.7861,  0.9468])"),
        (1, "tensor([0.6614, 0.2669, 0.0617])"),
    ],
)
def test_small_randn_known_seeds(gen: Generator, seed: int, expected: str) -> None:
    gen.manual_seed(seed)
    assert show(gen.randn((3,))) == expected


def test_rand_seed0(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.rand((3,))) == "tensor([0.4963, 0.7682, 0.0885])"
    gen.manual_seed(0)
    np.testing.assert_array_equal(
        gen.rand((2,), "float64"), [0.9700530018065531, 0.707819864399788]
    )


def test_randn5_equals_randn3_then_randn2x2(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.randn((5,))) == "tensor([ 1.5410, -0.2934, -2.1788,  0.5684, -1.0845])"
    gen.manual_seed(0)
    first = gen.randn((3,))
    second = gen.randn((2, 2))
    gen.manual_seed(0)
    np.testing.assert_array_equal(np.concatenate([first, second.ravel()]), gen.randn((7,))[:7])


def test_randn16_uses_block_algorithm(gen: Generator) -> None:
    gen.manual_seed(0)
    values = gen.randn((16,))
    assert show(values) == (
        "tensor([-1.1258, -1.1524, -0.2506, -0.4339,  0.8487,  0.6920, -0.3160, -2.1152,\n"
        "         0.3223, -1.2633,  0.3500,  0.3081,  0.1198,  1.2377,  1.1168, -0.2473])"
    )
    assert values[:4].tolist() == [
        -1.1258398294448853,
        -1.152360200881958,
        -0.2505785822868347,
        -0.4338788092136383,
    ]


def test_randn20_redraws_last_block(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.randn((20,))) == (
        "tensor([-1.1258, -1.1524, -0.2506, -0.4339,  0.5988, -1.5551, -0.3414,  1.8530,\n"
        "         0.4681, -0.1577,  1.4437,  0.2660,  1.3894,  1.5863,  0.9463, -0.8437,\n"
        "         0.9318,  1.2590,  2.0050,  0.0537])"
    )


def test_randn16_float64_differs_from_float32(gen: Generator) -> None:
    gen.manual_seed(0)
    values = gen.randn((16,), "float64")
    assert values.dtype == np.float64
    assert values[:4].tolist() == [
        -2.310411800234176,
        -0.3732508612577643,
        -1.0608166785462863,
        0.9995093547811761,
    ]


def test_small_randn_float64_same_print_as_float32(gen: Generator) -> None:
    gen.manual_seed(0)
    values = gen.randn((3,), "float64")
    assert show(values, "float64") == "tensor([ 1.5410, -0.2934, -2.1788], dtype=torch.float64)"
    gen.manual_seed(0)
    assert gen.randn((3,)).tolist() == [1.5409960746765137, -0.293428897857666, -2.1787893772125244]


def test_small_randn_float16(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.randn((3,), "float16"), "float16") == (
        "tensor([ 1.5410, -0.2935, -2.1797], dtype=torch.float16)"
    )


# --- the cached second normal ----------------------------------------------


def test_cache_survives_across_calls_and_large_draws(gen: Generator) -> None:
    gen.manual_seed(5)
    one = gen.randn((1,))  # leaves the sine half in the cache
    gen.randn((16,))  # block path: neither reads nor clears the cache
    after = gen.randn((1,))
    gen.manual_seed(5)
    two = gen.randn((2,))
    assert one[0] == two[0]
    assert after[0] == two[1]


def test_manual_seed_clears_cache(gen: Generator) -> None:
    gen.manual_seed(0)
    gen.randn((1,))
    gen.manual_seed(0)
    assert gen.randn((1,))[0] == np.float32(1.5409960746765137)


# --- seeding, state --------------------------------------------------------


def test_default_seed(gen: Generator) -> None:
    assert gen.initial_seed() == DEFAULT_SEED == 67280421310721
    assert gen.randn((3,)).tolist() == [
        0.9772631525993347,
        1.1568583250045776,
        -0.38065364956855774,
    ]


def test_initial_seed_and_wrapping() -> None:
    gen = Generator()
    assert gen.manual_seed(0) is gen
    assert gen.initial_seed() == 0
    gen.manual_seed(-1)
    assert gen.initial_seed() == 2**64 - 1
    gen.manual_seed(2**64 - 1)
    assert gen.initial_seed() == 2**64 - 1
    gen.manual_seed(1.7)  # torch.manual_seed does int(seed)
    assert gen.initial_seed() == 1
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            gen.manual_seed(bad)


def test_seed_uses_low_32_bits_for_the_stream() -> None:
    a = Generator(5).randn((4,))
    b = Generator(5 + 2**32).randn((4,))
    np.testing.assert_array_equal(a, b)


def test_engine_matches_numpy_legacy_seeding() -> None:
    """The MT19937 state after manual_seed equals numpy.random.RandomState(seed)'s."""
    gen = Generator(12345)
    key = np.random.RandomState(12345).get_state()[1]
    np.testing.assert_array_equal(np.frombuffer(gen.get_state().key, dtype=np.uint32), key)


def test_get_set_state_roundtrip(gen: Generator) -> None:
    gen.manual_seed(0)
    gen.randn((1,))  # something in the cache
    state = gen.get_state()
    a = gen.randn((5,))
    b = gen.randint(0, 100, (3,))
    gen.randn((40,))
    gen.set_state(state)
    np.testing.assert_array_equal(gen.randn((5,)), a)
    np.testing.assert_array_equal(gen.randint(0, 100, (3,)), b)
    with pytest.raises(TypeError):
        gen.set_state(b"not a state")  # type: ignore[arg-type]


def test_m2_state_restore_through_module_functions() -> None:
    saved = arandom.get_rng_state()
    try:
        arandom.manual_seed(0)
        state = arandom.get_rng_state()
        a = arandom.randn((2,))
        arandom.set_rng_state(state)
        b = arandom.randn((2,))
        assert show(a) == show(b) == "tensor([ 1.5410, -0.2934])"
        assert arandom.initial_seed() == 0
    finally:
        arandom.set_rng_state(saved)


def test_generators_are_independent() -> None:
    g1, g2 = Generator(0), Generator(0)
    g1.randn((3,))
    assert show(g2.randn((3,))) == "tensor([ 1.5410, -0.2934, -2.1788])"


# --- other distributions ---------------------------------------------------


def test_randint_and_randperm(gen: Generator) -> None:
    gen.manual_seed(0)
    values = gen.randint(0, 10, (6,))
    assert values.dtype == np.int64
    assert values.tolist() == [4, 9, 3, 0, 3, 9]
    gen.manual_seed(0)
    perm = gen.randperm(8)
    assert perm.dtype == np.int64
    assert perm.tolist() == [4, 0, 7, 3, 2, 5, 1, 6]
    assert gen.randperm(0).tolist() == []
    assert gen.randperm(1).tolist() == [0]


def test_normal_and_uniform_with_parameters(gen: Generator) -> None:
    gen.manual_seed(0)
    assert show(gen.normal((3,), 2.0, 0.5)) == "tensor([2.7705, 1.8533, 0.9106])"
    assert show(gen.uniform((3,), -1.0, 1.0)) == "tensor([-0.0887,  0.2646, -0.3022])"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda g: g.randint(5, 5, (3,)),
            "random_ expects 'from' to be less than 'to', but got from=5 >= to=5",
        ),
        (lambda g: g.randn((-1,)), "Trying to create tensor with negative dimension -1: [-1]"),
        (lambda g: g.randperm(-1), "Trying to create tensor with negative dimension -1: [-1]"),
        (
            lambda g: g.uniform((3,), 2, 1),
            "uniform_ expects to return a [from, to) range, but found from=2 > to=1",
        ),
        (lambda g: g.normal((3,), 0, -1), "normal expects std >= 0.0, but found std -1"),
    ],
)
def test_errors_match_torch_text(gen: Generator, call, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        call(gen)
    assert str(info.value) == message


def test_shapes_and_dtypes(gen: Generator) -> None:
    assert gen.randn((2, 0)).shape == (2, 0)
    assert gen.randn(()).shape == ()
    assert gen.rand((2, 3), "float64").dtype == np.float64
    assert gen.randn((17,), "float16").dtype == np.float16
    with pytest.raises(ValueError):
        gen.randn((2,), "int64")
    assert gen.randint(0, 3, (2, 2), "int32").dtype == np.int32


def test_empty_draws_consume_nothing(gen: Generator) -> None:
    gen.manual_seed(0)
    gen.randn((0,))
    gen.rand((3, 0))
    assert show(gen.randn((3,))) == "tensor([ 1.5410, -0.2934, -2.1788])"
