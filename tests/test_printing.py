"""Table-driven tests of adcli.autograd.printing against texts printed by torch 2.13.

Every expected string below was printed by PyTorch 2.13.0 (most are the
verified examples R1-R5, P1-P3 and D3 of PYTORCH-REFERENCE.md section 2/17).
No torch is needed to run these tests.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from adcli.autograd.printing import (
    PrintOptions,
    format_dtype,
    format_size,
    format_tensor,
)

F32 = np.float32
F64 = np.float64
NAN = math.nan
INF = math.inf


def f32(values) -> np.ndarray:
    """``torch.tensor(values)``: Python floats stored as float32."""
    return np.array(values, dtype=F32)


def f64(values) -> np.ndarray:
    return np.array(values, dtype=F64)


def i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# (id, data, dtype, keyword arguments, expected repr)
CASES: list[tuple[str, np.ndarray, str, dict, str]] = [
    # --- R1: scalars -------------------------------------------------------
    ("R1-int-valued", f32(3.0), "float32", {}, "tensor(3.)"),
    ("R1-2.5", f32(2.5), "float32", {}, "tensor(2.5000)"),
    ("R1-neg", f32(-0.5), "float32", {}, "tensor(-0.5000)"),
    ("R1-round", f32(1.23456789), "float32", {}, "tensor(1.2346)"),
    ("R1-1e-3", f32(1e-3), "float32", {}, "tensor(0.0010)"),
    ("R1-1e-5", f32(1e-5), "float32", {}, "tensor(1.0000e-05)"),
    ("R1-123456", f32(123456.0), "float32", {}, "tensor(123456.)"),
    ("R1-1e10", f32(1e10), "float32", {}, "tensor(1.0000e+10)"),
    ("R1-int", i64(3), "int64", {}, "tensor(3)"),
    ("R1-bool", np.array(True), "bool", {}, "tensor(True)"),
    (
        "R1-requires-grad",
        f32(3.0),
        "float32",
        {"requires_grad": True},
        "tensor(3., requires_grad=True)",
    ),
    (
        "R1-grad-fn",
        f32(6.0),
        "float32",
        {"grad_fn": "MulBackward0"},
        "tensor(6., grad_fn=<MulBackward0>)",
    ),
    ("R1-f64", f64(3.0), "float64", {}, "tensor(3., dtype=torch.float64)"),
    ("R1-nan-rg", f32(NAN), "float32", {"requires_grad": True}, "tensor(nan, requires_grad=True)"),
    ("R1-neg-zero", f32(-0.0), "float32", {}, "tensor(-0.)"),
    ("R1-neg-inf-f64", f64(-INF), "float64", {}, "tensor(-inf, dtype=torch.float64)"),
    ("R1-f16", np.array(2.0, dtype=np.float16), "float16", {}, "tensor(2., dtype=torch.float16)"),
    # --- R2: vectors -------------------------------------------------------
    ("R2-ints", f32([1.0, 2.0, 3.0]), "float32", {}, "tensor([1., 2., 3.])"),
    ("R2-neg-ints", f32([1.0, -2.0, 3.0]), "float32", {}, "tensor([ 1., -2.,  3.])"),
    ("R2-decimals", f32([1.5, 2.25]), "float32", {}, "tensor([1.5000, 2.2500])"),
    ("R2-tenths", f32([0.1, 0.2]), "float32", {}, "tensor([0.1000, 0.2000])"),
    ("R2-1000", f32([1000.0, 1.0]), "float32", {}, "tensor([1000.,    1.])"),
    ("R2-neg-one", f32([-1.0, 2.0]), "float32", {}, "tensor([-1.,  2.])"),
    ("R2-signed-zero", f32([0.0, -0.0]), "float32", {}, "tensor([0., -0.])"),
    ("R2-int64", i64([1, 2, 3]), "int64", {}, "tensor([1, 2, 3])"),
    ("R2-int64-widths", i64([1, -20, 300]), "int64", {}, "tensor([  1, -20, 300])"),
    ("R2-bool", np.array([True, False]), "bool", {}, "tensor([ True, False])"),
    (
        "R2-rg",
        f32([1.0, 2.0]),
        "float32",
        {"requires_grad": True},
        "tensor([1., 2.], requires_grad=True)",
    ),
    ("R2-empty", f32([]), "float32", {}, "tensor([])"),
    ("R2-empty-int", i64([]), "int64", {}, "tensor([], dtype=torch.int64)"),
    ("R2-empty-2d", np.zeros((0, 3), F32), "float32", {}, "tensor([], size=(0, 3))"),
    ("R2-empty-bool", np.zeros(0, bool), "bool", {}, "tensor([], dtype=torch.bool)"),
    (
        "R2-empty-2d-f64",
        np.zeros((0, 3), F64),
        "float64",
        {},
        "tensor([], size=(0, 3), dtype=torch.float64)",
    ),
    (
        "R2-empty-int32",
        np.zeros((2, 0), np.int32),
        "int32",
        {},
        "tensor([], size=(2, 0), dtype=torch.int32)",
    ),
    (
        "R2-empty-grad-fn",
        f32([]),
        "float32",
        {"grad_fn": "MulBackward0"},
        "tensor([], grad_fn=<MulBackward0>)",
    ),
    # --- R3: scientific notation -------------------------------------------
    (
        "R3-ratio",
        f32([102.4, 1024.0, 0.1024]),
        "float32",
        {},
        "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])",
    ),
    ("R3-small", f32([1e-5, 1.0]), "float32", {}, "tensor([1.0000e-05, 1.0000e+00])"),
    ("R3-big-ratio", f32([1e5, 1.0]), "float32", {}, "tensor([1.0000e+05, 1.0000e+00])"),
    ("R3-1000.5", f32([1000.5, 1.0]), "float32", {}, "tensor([1.0005e+03, 1.0000e+00])"),
    ("R3-1001", f32([1001.0, 1.0]), "float32", {}, "tensor([1.0010e+03, 1.0000e+00])"),
    ("R3-1e-4-f32", f32([1e-4, 1.0]), "float32", {}, "tensor([1.0000e-04, 1.0000e+00])"),
    ("R3-1e8", f32([1e8, 1.0]), "float32", {}, "tensor([1.0000e+08, 1.0000e+00])"),
    ("R3-zero-tiny", f32([0.0, 1e-10]), "float32", {}, "tensor([0.0000e+00, 1.0000e-10])"),
    ("R3-nonfinite", f32([NAN, INF, -INF, 1.0]), "float32", {}, "tensor([nan, inf, -inf, 1.])"),
    ("R3-nan", f32([NAN, 1.5]), "float32", {}, "tensor([   nan, 1.5000])"),
    ("R3-extremes", f32([1e-10, 1e10]), "float32", {}, "tensor([1.0000e-10, 1.0000e+10])"),
    ("R3-neg-sci", f32([-1e-5, 123.25]), "float32", {}, "tensor([-1.0000e-05,  1.2325e+02])"),
    ("R3-0.9-f32", f32([0.9, 900.0]), "float32", {}, "tensor([9.0000e-01, 9.0000e+02])"),
    (
        "R3-0.9-f64",
        f64([0.9, 900.0]),
        "float64",
        {},
        "tensor([  0.9000, 900.0000], dtype=torch.float64)",
    ),
    ("R3-1e-4-0d-f32", f32(1e-4), "float32", {}, "tensor(1.0000e-04)"),
    ("R3-1e-4-0d-f64", f64(1e-4), "float64", {}, "tensor(0.0001, dtype=torch.float64)"),
    ("R3-inf-f64", f64([INF]), "float64", {}, "tensor([inf], dtype=torch.float64)"),
    # --- R4 / P2: 2-D and 3-D ----------------------------------------------
    (
        "R4-2d",
        f32([[4.5, 4.5], [4.5, 4.5]]),
        "float32",
        {},
        "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])",
    ),
    (
        "R4-grad-fn",
        np.full((2, 2), 3.0, F32),
        "float32",
        {"grad_fn": "AddBackward0"},
        "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)",
    ),
    (
        "R4-aligned",
        f32([[1.0, -2.5], [100.0, 0.25]]),
        "float32",
        {},
        "tensor([[  1.0000,  -2.5000],\n        [100.0000,   0.2500]])",
    ),
    (
        "R4-sci",
        f32([[1e-5, 1.0], [2.0, 3.0]]),
        "float32",
        {},
        "tensor([[1.0000e-05, 1.0000e+00],\n        [2.0000e+00, 3.0000e+00]])",
    ),
    (
        "R4-3d",
        np.ones((2, 2, 3), F32),
        "float32",
        {},
        "tensor([[[1., 1., 1.],\n"
        "         [1., 1., 1.]],\n"
        "\n"
        "        [[1., 1., 1.],\n"
        "         [1., 1., 1.]]])",
    ),
    (
        "P2-int-floats",
        f32([[1.0, -2.0], [100.0, 3.0]]),
        "float32",
        {},
        "tensor([[  1.,  -2.],\n        [100.,   3.]])",
    ),
    (
        "P2-int64",
        i64([[1, -20], [300, 4]]),
        "int64",
        {},
        "tensor([[  1, -20],\n        [300,   4]])",
    ),
    (
        "P2-3d-rg",
        f32([[[1.0, 2.0]], [[3.0, 4.0]]]),
        "float32",
        {"requires_grad": True},
        "tensor([[[1., 2.]],\n\n        [[3., 4.]]], requires_grad=True)",
    ),
    (
        "P2-times-10",
        f32([[0.1, 0.2], [0.3, 0.4]]) * F32(10),
        "float32",
        {"grad_fn": "MulBackward0"},
        "tensor([[1., 2.],\n        [3., 4.]], grad_fn=<MulBackward0>)",
    ),
    (
        "P2-sum",
        f32([[0.1, 0.2], [0.3, 0.4]]).sum(0),
        "float32",
        {"grad_fn": "SumBackward1"},
        "tensor([0.4000, 0.6000], grad_fn=<SumBackward1>)",
    ),
    ("P2-zeros", np.zeros((2, 2), F32), "float32", {}, "tensor([[0., 0.],\n        [0., 0.]])"),
    ("P2-inf", f32([INF, 1.0]), "float32", {}, "tensor([inf, 1.])"),
    ("P2-1001", f32([1.0, 1001.0]), "float32", {}, "tensor([1.0000e+00, 1.0010e+03])"),
    ("P2-0.001", f32([0.001, 1.0]), "float32", {}, "tensor([0.0010, 1.0000])"),
    ("P2-0.0001", f32([0.0001, 0.1]), "float32", {}, "tensor([1.0000e-04, 1.0000e-01])"),
    ("P2-99999999", f32(99999999.0), "float32", {}, "tensor(100000000.)"),
    ("P2-100000001", f32(100000001.0), "float32", {}, "tensor(100000000.)"),
    (
        "P2-int32",
        np.array([[1, 2], [3, 4]], np.int32),
        "int32",
        {},
        "tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)",
    ),
    (
        "P2-bool-2d",
        np.array([[True, False], [False, True]]),
        "bool",
        {},
        "tensor([[ True, False],\n        [False,  True]])",
    ),
    # --- R5: dtype suffix --------------------------------------------------
    ("R5-f64", f64([1.0, 2.0]), "float64", {}, "tensor([1., 2.], dtype=torch.float64)"),
    (
        "R5-f64-rg",
        f64([1.1, 2.0]),
        "float64",
        {"requires_grad": True},
        "tensor([1.1000, 2.0000], dtype=torch.float64, requires_grad=True)",
    ),
    ("R5-int32", np.array([1, 2], np.int32), "int32", {}, "tensor([1, 2], dtype=torch.int32)"),
    (
        "R5-f16",
        np.array([1.0, 2.0], np.float16),
        "float16",
        {},
        "tensor([1., 2.], dtype=torch.float16)",
    ),
    (
        "R5-f64-grad-fn",
        f64([2.0, 4.0]),
        "float64",
        {"grad_fn": "MulBackward0"},
        "tensor([2., 4.], dtype=torch.float64, grad_fn=<MulBackward0>)",
    ),
    (
        "R5-uint8",
        np.array([1, 2, 3], np.uint8),
        "uint8",
        {},
        "tensor([1, 2, 3], dtype=torch.uint8)",
    ),
    ("R5-int8", np.array([-1, 2], np.int8), "int8", {}, "tensor([-1,  2], dtype=torch.int8)"),
    ("R5-int16", np.array([7], np.int16), "int16", {}, "tensor([7], dtype=torch.int16)"),
    # grad_fn wins over requires_grad (a non-leaf requires grad too)
    (
        "grad-fn-and-rg",
        f32([1.0]),
        "float32",
        {"grad_fn": "AddBackward0", "requires_grad": True},
        "tensor([1.], grad_fn=<AddBackward0>)",
    ),
    # --- P1: line wrapping and suffix placement ----------------------------
    (
        "P1-arange20",
        np.arange(20, dtype=F32),
        "float32",
        {},
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19.])",
    ),
    (
        "P1-thirds",
        np.arange(20, dtype=F32) / F32(3),
        "float32",
        {},
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
        "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n"
        "        6.0000, 6.3333])",
    ),
    (
        "P1-rg-newline",
        np.arange(12, dtype=F32),
        "float32",
        {"requires_grad": True},
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.],\n"
        "       requires_grad=True)",
    ),
    (
        "P1-mul",
        np.arange(12, dtype=F32) * F32(1.5),
        "float32",
        {"grad_fn": "MulBackward0"},
        "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
        "        12.0000, 13.5000, 15.0000, 16.5000], grad_fn=<MulBackward0>)",
    ),
    (
        "P1-div8",
        np.arange(8, dtype=F32) / F32(7),
        "float32",
        {"grad_fn": "DivBackward0"},
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000],\n"
        "       grad_fn=<DivBackward0>)",
    ),
    (
        "P1-div10",
        np.arange(10, dtype=F32) / F32(7),
        "float32",
        {"grad_fn": "DivBackward0"},
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
        "        1.2857], grad_fn=<DivBackward0>)",
    ),
    (
        "P1-f64-mul",
        f64([1.5, 3.0]),
        "float64",
        {"grad_fn": "MulBackward0"},
        "tensor([1.5000, 3.0000], dtype=torch.float64, grad_fn=<MulBackward0>)",
    ),
    (
        "P1-f64-two-suffixes",
        np.arange(6, dtype=F64) / 7,
        "float64",
        {"grad_fn": "DivBackward0"},
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143], dtype=torch.float64,\n"
        "       grad_fn=<DivBackward0>)",
    ),
    (
        "P1-wide-values",
        np.full(30, -123456.5, F32)[:5],
        "float32",
        {},
        "tensor([-123456.5000, -123456.5000, -123456.5000, -123456.5000, -123456.5000])",
    ),
    # --- P3: summarisation -------------------------------------------------
    (
        "P3-arange1001",
        np.arange(1001),
        "int64",
        {},
        "tensor([   0,    1,    2,  ...,  998,  999, 1000])",
    ),
    (
        "P3-ones",
        np.ones((40, 30), F32),
        "float32",
        {},
        "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        ...,\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.]])",
    ),
    (
        "P3-short-first-axis",
        np.ones((3, 1001), F64),
        "float64",
        {},
        "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.]], dtype=torch.float64)",
    ),
    # --- D3: rounding at the 4th decimal on the binary value ---------------
    ("D3-5e-5", f32([0.00005, 1.0]), "float32", {}, "tensor([5.0000e-05, 1.0000e+00])"),
    ("D3-0.12345-f32", f32([0.12345, 1.0]), "float32", {}, "tensor([0.1235, 1.0000])"),
    (
        "D3-0.12345-f64",
        f64([0.12345, 1.0]),
        "float64",
        {},
        "tensor([0.1235, 1.0000], dtype=torch.float64)",
    ),
    ("D3-2.00005-f32", f32([2.00005, 1.5]), "float32", {}, "tensor([2.0001, 1.5000])"),
    (
        "D3-2.00005-f64",
        f64([2.00005, 1.5]),
        "float64",
        {},
        "tensor([2.0000, 1.5000], dtype=torch.float64)",
    ),
    ("D3-0.33335-f32", f32([0.33335, 1.5]), "float32", {}, "tensor([0.3334, 1.5000])"),
    (
        "D3-0.33335-f64",
        f64([0.33335, 1.5]),
        "float64",
        {},
        "tensor([0.3333, 1.5000], dtype=torch.float64)",
    ),
    ("D3-100.5", f32(100.5), "float32", {}, "tensor(100.5000)"),
    # float32 rounding of the stored value (section 17)
    ("D2-16777217-f32", f32(16777217.0), "float32", {}, "tensor(16777216.)"),
    ("D2-16777217-f64", f64(16777217.0), "float64", {}, "tensor(16777217., dtype=torch.float64)"),
    ("D2-1e-8-plus-1-f32", f32([1e-8, 1.0]) + F32(1), "float32", {}, "tensor([1., 2.])"),
    (
        "D2-1e-8-plus-1-f64",
        f64([1e-8, 1.0]) + 1,
        "float64",
        {},
        "tensor([1.0000, 2.0000], dtype=torch.float64)",
    ),
]


@pytest.mark.parametrize(
    ("data", "dtype", "kwargs", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_format_tensor(data: np.ndarray, dtype: str, kwargs: dict, expected: str) -> None:
    assert format_tensor(data, dtype, **kwargs) == expected


def test_format_tensor_3d_summarised() -> None:
    """7x11x13 arange (1001 elements): every axis cut, blank lines and '...'."""
    text = format_tensor(np.arange(1001, dtype=F32).reshape(7, 11, 13), "float32")
    lines = text.split("\n")
    assert lines[0] == "tensor([[[   0.,    1.,    2.,  ...,   10.,   11.,   12.],"
    assert lines[1] == "         [  13.,   14.,   15.,  ...,   23.,   24.,   25.],"
    assert lines[3] == "         ...,"
    assert lines[7] == ""
    assert lines[8] == "        [[ 143.,  144.,  145.,  ...,  153.,  154.,  155.],"
    assert "        ...," in lines
    assert lines[-1] == "         [ 988.,  989.,  990.,  ...,  998.,  999., 1000.]]])"
    # 6 blocks of 7 lines, the "...," block row, and a blank line after each of 6 separators
    assert len(lines) == 6 * 7 + 1 + 6


def test_format_tensor_coerces_to_dtype() -> None:
    """float64 data printed as float32 shows float32 rounding (2.00005 -> 2.0001)."""
    assert format_tensor(np.array([2.00005, 1.5]), "float32") == "tensor([2.0001, 1.5000])"


def test_format_tensor_rejects_unknown_dtype() -> None:
    with pytest.raises(ValueError):
        format_tensor(np.zeros(2), "complex128")


@pytest.mark.parametrize(
    ("options", "data", "expected"),
    [
        (PrintOptions(precision=2), f32([1.5, 1.0]), "tensor([1.50, 1.00])"),
        (PrintOptions(precision=2), f32([1e-5, 2.0]), "tensor([1.00e-05, 2.00e+00])"),
        (PrintOptions(sci_mode=False), f32([1e-5, 1.0]), "tensor([0.0000, 1.0000])"),
        (PrintOptions(sci_mode=False), f32([1e9, 1.0]), "tensor([1000000000.,          1.])"),
        (PrintOptions(sci_mode=True), f32([1.0, 2.0]), "tensor([1.0000e+00, 2.0000e+00])"),
        (PrintOptions(sci_mode=True), f32([0.0, 0.0]), "tensor([0., 0.])"),
        (
            PrintOptions(threshold=5),
            np.arange(10, dtype=F32),
            "tensor([0., 1., 2.,  ..., 7., 8., 9.])",
        ),
        (PrintOptions(edgeitems=0), np.arange(1001, dtype=F32), "tensor([...], size=(1001,))"),
        (
            PrintOptions(edgeitems=1),
            np.arange(2000, dtype=F32).reshape(2, 1000),
            "tensor([[   0.,  ...,  999.],\n        [1000.,  ..., 1999.]])",
        ),
        (
            PrintOptions(linewidth=40),
            np.arange(12, dtype=F32),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,\n         6.,  7.,  8.,  9., 10., 11.])",
        ),
    ],
)
def test_print_options(options: PrintOptions, data: np.ndarray, expected: str) -> None:
    assert format_tensor(data, "float32", options=options) == expected


def test_print_options_suffix_linewidth() -> None:
    text = format_tensor(
        np.arange(12, dtype=F32), "float32", requires_grad=True, options=PrintOptions(linewidth=40)
    )
    assert text == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,\n"
        "         6.,  7.,  8.,  9., 10., 11.],\n"
        "       requires_grad=True)"
    )


@pytest.mark.parametrize(
    ("shape", "expected"),
    [((2, 3), "torch.Size([2, 3])"), ((), "torch.Size([])"), ((5,), "torch.Size([5])")],
)
def test_format_size(shape: tuple[int, ...], expected: str) -> None:
    assert format_size(shape) == expected


def test_format_dtype() -> None:
    assert format_dtype("float32") == "torch.float32"
    assert format_dtype("int64") == "torch.int64"
    assert format_dtype("bool") == "torch.bool"
    with pytest.raises(ValueError):
        format_dtype("float")


def test_small_tensor_is_fast() -> None:
    """Printing a (4,) tensor takes well under 100 microseconds."""
    data = f32([1.5, -2.0, 3.25, 4.0])
    format_tensor(data, "float32")
    rounds = 2000
    start = time.perf_counter()
    for _ in range(rounds):
        format_tensor(data, "float32", grad_fn="MulBackward0")
    per_call = (time.perf_counter() - start) / rounds
    assert per_call < 100e-6
