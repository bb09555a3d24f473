"""--json: report events and script values as SPEC §5 writes them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from adcli.autograd import engine
from adcli.autograd import ops as torch
from adcli.provenance import Label
from adcli.render.jsonout import array_to_json, dumps, report_to_json, value_to_json
from adcli.render.report import build_report

NODE_KEYS = [
    "name",
    "expr",
    "shape",
    "dtype",
    "value",
    "requires_grad",
    "is_leaf",
    "grad_fn",
    "flowed_grad",
    "grad",
    "grad_reason",
]
EVENT_KEYS = [
    "kind",
    "line",
    "root",
    "call",
    "options",
    "nodes",
    "folded_nodes",
    "second_order",
    "legend",
    "notes",
    "graph_as_above",
]


def lab(t, name, expr, line):
    t._label = Label(name, expr, line)
    return t


def run(fn):
    got = []
    engine.listeners.append(got.append)
    try:
        fn()
    finally:
        engine.listeners.remove(got.append)
    return got[-1]


def test_event_fields_and_rows():
    x = lab(torch.tensor([1.0], requires_grad=True), "x", "tensor([1.], requires_grad=True)", 1)
    w = lab(torch.tensor([2.0], requires_grad=True), "w", "tensor([2.], requires_grad=True)", 2)
    a = lab(w + x, "a", "w + x", 3)
    y = lab((a * a).sum(), "y", "(a * a).sum()", 4)
    ev = run(y.backward)
    out = report_to_json(build_report(ev, line=9, call_text="y.backward()"))
    assert list(out) == EVENT_KEYS
    assert (out["kind"], out["line"], out["root"], out["second_order"]) == ("backward", 9, "y", [])
    assert (out["call"], out["folded_nodes"], out["graph_as_above"]) == ("y.backward()", [], False)
    assert out["legend"][0] == ".grad None: non-leaf; call .retain_grad() to keep it"
    assert [n["name"] for n in out["nodes"]] == ["x", "w", "a", "MulBackward0#1", "y"]
    for node in out["nodes"]:
        assert list(node) == NODE_KEYS
    assert out["nodes"][2] == {
        "name": "a",
        "expr": "w + x",
        "shape": [1],
        "dtype": "float32",
        "value": [3.0],
        "requires_grad": True,
        "is_leaf": False,
        "grad_fn": "AddBackward0",
        "flowed_grad": [6.0],
        "grad": None,
        "grad_reason": "non-leaf; call .retain_grad() to keep it",
    }
    assert out["nodes"][0]["grad"] == [6.0] and out["nodes"][0]["grad_fn"] is None
    assert out["nodes"][-1]["value"] == 9.0  # a 0-d tensor is a plain number
    json.loads(dumps(out))


def test_second_order_event():
    x = lab(torch.tensor([1.0, 2.0], requires_grad=True), "x", "tensor([1., 2.])", 1)
    y = lab((x**3).sum(), "y", "(x ** 3).sum()", 2)
    ev = run(lambda: y.backward(create_graph=True))
    out = report_to_json(build_report(ev, line=3, call_text=None))
    assert out["second_order"] == [{"u": "x", "v": "x", "value": [[6.0, 0.0], [0.0, 12.0]]}]


def test_large_second_order_block_summary():
    x = lab(torch.arange(1.0, 10.0).requires_grad_(), "x", "arange(1., 10.)", 1)
    y = lab((x**2).sum(), "y", "(x ** 2).sum()", 2)
    ev = run(lambda: y.backward(create_graph=True))
    (block,) = report_to_json(build_report(ev, line=3, call_text=None))["second_order"]
    assert block["value"]["shape"] == [9, 9]
    assert block["value"]["diagonal"] == [2.0] * 9
    assert block["value"]["norm"] == pytest.approx(6.0)


def test_folded_graph_lists_the_rows_shown():
    x = lab(torch.tensor(1.0, requires_grad=True), "x", "tensor(1.)", 1)
    keep, y = [x], x
    for i in range(100):
        y = lab(y * 1.0, f"y@{i + 1}", "y * 1.0", 2)
        keep.append(y)
    ev = run(y.backward)
    out = report_to_json(build_report(ev, line=3, call_text=None))
    assert [n["name"] for n in out["nodes"]] == ["x", "y@1", "y@2", "y@99", "y@100"]
    assert out["folded_nodes"] == [{"at": 3, "count": 96, "similar": True}]
    full = report_to_json(build_report(ev, line=3, call_text=None, full=True))
    assert len(full["nodes"]) == 101


def test_non_finite_values_are_strings():
    assert array_to_json(np.array([1.0, np.nan, np.inf, -np.inf], dtype=np.float32)) == [
        1.0,
        "nan",
        "inf",
        "-inf",
    ]
    assert array_to_json(np.array([[np.nan]], dtype=np.float64)) == [["nan"]]
    assert array_to_json(np.array(np.inf)) == "inf"
    text = dumps({"a": float("nan"), "b": [float("-inf"), np.float32(np.inf)], "c": (1, 2.5)})
    assert json.loads(text) == {"a": "nan", "b": ["-inf", "inf"], "c": [1, 2.5]}
    assert "NaN" not in text and "Infinity" not in text


def test_float32_shortest_digits():
    assert array_to_json(np.array([0.1, 1e-8, 3.0], dtype=np.float32)) == [0.1, 1e-08, 3.0]
    assert array_to_json(np.array([0.1], dtype=np.float64)) == [0.1]
    assert array_to_json(np.array([1, 2], dtype=np.int64)) == [1, 2]
    assert array_to_json(np.array([True, False])) == [True, False]
    assert array_to_json(np.zeros((0, 3), dtype=np.float32)) == []


def test_tensor_variable():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert value_to_json(x) == {
        "type": "tensor",
        "shape": [2],
        "dtype": "float32",
        "value": [1.0, 2.0],
        "requires_grad": True,
        "is_leaf": True,
        "grad_fn": None,
        "grad": [2.0, 4.0],
    }
    out = value_to_json(y)
    assert (out["grad_fn"], out["is_leaf"], out["grad"], out["value"]) == (
        "SumBackward0",
        False,
        None,
        5.0,
    )
    i = value_to_json(torch.tensor([1, 2]))
    assert (i["dtype"], i["value"], i["requires_grad"]) == ("int64", [1, 2], False)


def test_plain_values_and_kinds():
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    assert value_to_json(None) is None
    assert value_to_json(True) is True
    assert value_to_json(3) == 3
    assert value_to_json(2.5) == 2.5
    assert value_to_json(float("inf")) == "inf"
    assert value_to_json("s") == "s"
    assert value_to_json([1, (2, None), "a"]) == [1, [2, None], "a"]
    assert value_to_json(len) == {"type": "function"}
    assert value_to_json(lambda v: v) == {"type": "function"}
    assert value_to_json(x.dtype) == {"type": "dtype"}
    assert value_to_json(y.grad_fn) == {"type": "grad_fn"}
    assert value_to_json(math) == {"type": "module"}
    assert value_to_json(x.shape) == [1]

    class SGD:
        def step(self):
            pass

        def zero_grad(self):
            pass

    assert value_to_json(SGD()) == {"type": "optimizer"}


def test_list_that_contains_itself():
    a: list = []
    a.append(a)
    out = value_to_json(a)
    json.loads(dumps(out))
    json.loads(dumps(a))  # dumps itself cuts the cycle too


def test_large_arrays_are_summarised_beyond_the_limit():
    a = np.arange(2000, dtype=np.float32).reshape(40, 50) / 10
    out = array_to_json(a, limit=1000)
    assert out == {
        "summarized": True,
        "shape": [40, 50],
        "numel": 2000,
        "min": 0.0,
        "max": 199.9,
        "mean": pytest.approx(99.95),
        "head": [0.0, 0.1, 0.2],
        "tail": [199.7, 199.8, 199.9],
    }
    assert len(array_to_json(a, limit=2000)) == 40  # at the limit: whole
    assert array_to_json(a) != out  # no limit: whole
    nan = array_to_json(np.array([np.nan] * 5), limit=2)
    assert (nan["min"], nan["mean"], nan["head"]) == ("nan", "nan", ["nan"] * 3)
    flags = array_to_json(np.ones(5, dtype=bool), limit=2)
    assert (flags["min"], flags["max"], flags["mean"]) == (True, True, 1.0)
    assert array_to_json(np.zeros(2, dtype=np.int64), limit=1)["tail"] == []


def test_report_arrays_summarise_unless_full():
    from adcli.render.jsonout import REPORT_LIMIT

    x = lab(torch.ones(REPORT_LIMIT + 1, requires_grad=True), "x", "ones(1001)", 1)
    y = lab((x * 2).sum(), "y", "(x * 2).sum()", 2)
    ev = run(y.backward)
    short = report_to_json(build_report(ev, line=3, call_text=None))
    assert short["nodes"][0]["grad"]["summarized"] is True
    whole = report_to_json(build_report(ev, line=3, call_text=None, full=True))
    assert len(whole["nodes"][0]["grad"]) == REPORT_LIMIT + 1


def test_variables_summarise_beyond_their_own_limit():
    from adcli.render.jsonout import VARIABLE_LIMIT

    t = torch.zeros(VARIABLE_LIMIT + 1)
    assert value_to_json(t)["value"]["numel"] == VARIABLE_LIMIT + 1
    assert len(value_to_json(t, limit=None)["value"]) == VARIABLE_LIMIT + 1
    assert value_to_json([torch.zeros(3)], limit=2)[0]["value"]["summarized"] is True
