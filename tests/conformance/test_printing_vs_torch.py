"""format_tensor compared with repr() of real torch tensors (skipped without torch).

Hypothesis draws shapes (0-d to 3-d, empty, and > 1000 elements so that
summarisation kicks in), dtypes, magnitudes from 1e-10 to 1e10, integral or
fractional values, NaN/inf/+-0 sprinkled in, and requires_grad / grad_fn
suffixes; the NumPy array is handed both to ``format_tensor`` and, through
``torch.from_numpy``, to torch.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adcli.autograd.printing import PrintOptions, format_size, format_tensor

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

NUMPY_TYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "bool": np.bool_,
}
FLOATS = ("float32", "float64", "float16")

_shapes_small = st.lists(st.integers(0, 6), min_size=0, max_size=3).map(tuple)
_shapes_large = st.sampled_from(
    [(1001,), (1500,), (40, 30), (3, 400), (2, 3, 200), (7, 11, 13), (12, 100)]
)


@st.composite
def arrays(draw: st.DrawFn) -> tuple[np.ndarray, str]:
    """A random array and its torch dtype name."""
    dtype = draw(
        st.sampled_from(
            [
                "float32",
                "float32",
                "float32",
                "float64",
                "float64",
                "float16",
                "int64",
                "int32",
                "bool",
            ]
        )
    )
    shape = draw(st.one_of(_shapes_small, _shapes_small, _shapes_large))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    if dtype == "bool":
        return np.array(rng.random(size).reshape(shape) < 0.5), dtype
    if dtype in ("int64", "int32"):
        bound = 10 ** draw(st.integers(0, 9))
        return rng.integers(-bound, bound + 1, size).astype(NUMPY_TYPES[dtype]).reshape(
            shape
        ), dtype
    # Floats: a log-uniform magnitude range inside 1e-10..1e10 (1e-5..1e4 for half).
    low_exp, high_exp = (-5, 4) if dtype == "float16" else (-10, 10)
    a = draw(st.integers(low_exp, high_exp))
    b = draw(st.integers(a, min(high_exp, a + draw(st.sampled_from([0, 1, 2, 3, 4, 20])))))
    magnitudes = 10.0 ** rng.uniform(a, b + 1e-9, size)
    signs = np.where(rng.random(size) < draw(st.sampled_from([0.0, 0.3, 0.5])), -1.0, 1.0)
    values = signs * magnitudes
    if draw(st.booleans()):  # integral values (int mode)
        values = np.round(values)
    if draw(st.booleans()):  # values near a rounding boundary at 4 decimals
        values = np.round(values, 4) + rng.choice([-5e-5, 5e-5, 0.0], size)
    special = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    if special and size:
        picks = rng.random(size) < special
        specials = rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf], size)
        values = np.where(picks, specials, values)
    return values.astype(NUMPY_TYPES[dtype]).reshape(shape), dtype


def torch_repr(data: np.ndarray, suffix: str | None) -> str:
    """repr() of the torch tensor holding ``data``; suffix None / "rg" / "mul"."""
    tensor = torch.from_numpy(np.array(data))  # np.array: 0-d results may be scalars
    if suffix == "rg":
        tensor.requires_grad_()
    elif suffix == "mul":
        tensor = tensor.requires_grad_() * 1  # values unchanged, grad_fn MulBackward0
    return repr(tensor)


@settings(
    max_examples=1500,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=arrays(), suffix=st.sampled_from([None, None, "rg", "mul"]))
def test_repr_matches_torch(case: tuple[np.ndarray, str], suffix: str | None) -> None:
    data, dtype = case
    if dtype not in FLOATS:
        suffix = None  # only floating tensors can require grad
    kwargs = {"requires_grad": True} if suffix == "rg" else {}
    if suffix == "mul":
        kwargs = {"grad_fn": "MulBackward0"}
    assert format_tensor(data, dtype, **kwargs) == torch_repr(data, suffix)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    case=arrays(),
    precision=st.integers(0, 8),
    linewidth=st.integers(20, 140),
    threshold=st.sampled_from([5, 50, 1000]),
    edgeitems=st.integers(1, 4),
    sci_mode=st.sampled_from([None, True, False]),
    rg=st.booleans(),
)
def test_repr_with_print_options_matches_torch(
    case: tuple[np.ndarray, str],
    precision: int,
    linewidth: int,
    threshold: int,
    edgeitems: int,
    sci_mode: bool | None,
    rg: bool,
) -> None:
    data, dtype = case
    rg = rg and dtype in FLOATS
    options = PrintOptions(precision, threshold, edgeitems, linewidth, sci_mode)
    torch.set_printoptions(
        precision=precision,
        threshold=threshold,
        edgeitems=edgeitems,
        linewidth=linewidth,
        sci_mode=sci_mode,
    )
    try:
        expected = torch_repr(data, "rg" if rg else None)
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
    assert format_tensor(data, dtype, requires_grad=rg, options=options) == expected


def _load_table_cases() -> list:
    """The hand-written cases of tests/test_printing.py (file is not a package)."""
    path = Path(__file__).resolve().parent.parent / "test_printing.py"
    spec = importlib.util.spec_from_file_location("_adcli_printing_cases", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module.CASES


TABLE = _load_table_cases()


@pytest.mark.parametrize(
    ("data", "dtype", "kwargs", "expected"),
    [case[1:] for case in TABLE],
    ids=[case[0] for case in TABLE],
)
def test_table_expectations_are_torchs(
    data: np.ndarray, dtype: str, kwargs: dict, expected: str
) -> None:
    """Each expected string in the offline table is what torch prints."""
    data = np.array(data, dtype=NUMPY_TYPES.get(dtype, np.asarray(data).dtype))
    tensor = torch.from_numpy(data)
    if "grad_fn" in kwargs:
        # Relabel: the grad_fn name is not the point here, only its placement.
        text = torch_repr(data, "mul").replace("MulBackward0", kwargs["grad_fn"])
    elif kwargs.get("requires_grad"):
        text = torch_repr(data, "rg")
    else:
        text = repr(tensor)
    assert text == expected


@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (1, 0, 4), (7,)])
def test_size_matches_torch(shape: tuple[int, ...]) -> None:
    assert format_size(shape) == str(torch.zeros(shape).shape)
