"""The backward report: rows, names, gradients, notes, folding, second derivatives, text.

Graphs are built directly with the engine (labels set by hand, as the language
layer would set them), so these tests do not depend on the parser.
"""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from adcli.autograd import engine
from adcli.autograd import ops as torch
from adcli.autograd.engine import BackwardEvent
from adcli.provenance import Label
from adcli.render.report import (
    GRAD_CALL_REASON,
    NONLEAF_REASON,
    Fold,
    Report,
    Row,
    build_report,
    build_show_report,
    fold_plan,
    format_value,
)
from adcli.render.tables import make_console, render_report, report_to_text

# ---------------------------------------------------------------- helpers


def lab(t, name, expr, line):
    """Give `t` the label the language layer would give it."""
    t._label = Label(name, expr, line)
    return t


@contextmanager
def events() -> Iterator[list[BackwardEvent]]:
    """Collect the engine's events while the block runs."""
    got: list[BackwardEvent] = []
    engine.listeners.append(got.append)
    try:
        yield got
    finally:
        engine.listeners.remove(got.append)


def leaf(value, name, line):
    t = torch.tensor(value, requires_grad=True)
    return lab(t, name, f"tensor({value!r}, requires_grad=True)", line)


def example():
    """y = (x + w) * (w + 1) at x=2, w=1: dy/dx = w + 1 = 2, dy/dw = (w + 1) + (x + w) = 5."""
    x = leaf(2.0, "x", 1)
    w = leaf(1.0, "w", 2)
    a = lab(x + w, None, "x + w", 3)
    b = lab(w + 1, None, "w + 1", 3)
    y = lab(a * b, "y", "(x + w) * (w + 1)", 3)
    return x, w, a, b, y


def report_of(fn, *, line=9, call_text=None, **kw) -> Report:
    with events() as got:
        fn()
    assert got, "no backward event"
    return build_report(got[-1], line=line, call_text=call_text, **kw)


def row(report: Report, name: str) -> Row:
    for r in report.shown_rows:
        if r.name == name:
            return r
    raise KeyError(name)


# ---------------------------------------------------------------- rows


def test_rows_in_topological_order_leaves_first():
    x, w, a, b, y = example()
    rep = report_of(y.backward, call_text="y.backward()")
    assert [r.name for r in rep.rows] == ["x", "w", "x + w", "w + 1", "y"]
    assert [r.is_leaf for r in rep.rows] == [True, True, False, False, False]
    assert [r.grad_fn for r in rep.rows] == [
        None,
        None,
        "AddBackward0",
        "AddBackward0",
        "MulBackward0",
    ]
    assert rep.root == "y"
    assert rep.call == "y.backward()"
    assert rep.line == 9
    assert rep.options == ["retain_graph=False", "create_graph=False"]
    assert rep.kind == "backward"
    assert rep.node_count == 5


def test_flowed_gradients_and_grads():
    x, w, a, b, y = example()
    rep = report_of(y.backward)
    flowed = {r.name: float(r.flowed_grad) for r in rep.shown_rows}
    assert flowed == {"x": 2.0, "w": 5.0, "x + w": 2.0, "w + 1": 3.0, "y": 1.0}
    assert float(row(rep, "x").grad) == 2.0
    assert float(row(rep, "w").grad) == 5.0
    for name in ("x + w", "w + 1", "y"):
        r = row(rep, name)
        assert r.grad is None
        assert r.grad_reason == NONLEAF_REASON
    xr = row(rep, "x")
    assert (xr.shape, xr.dtype, xr.requires_grad) == ([], "float32", True)
    assert float(xr.value) == 2.0
    assert row(rep, "y").expr == "(x + w) * (w + 1)"
    assert row(rep, "y").line == 3


def test_values_are_copies_taken_at_report_time():
    x, w, a, b, y = example()
    rep = report_of(y.backward)
    x._grad.data_[...] = 100.0  # later accumulation must not change the report
    assert float(row(rep, "x").grad) == 2.0


def test_retained_nonleaf_grad_is_shown():
    x, w, a, b, y = example()
    a.retain_grad()
    rep = report_of(y.backward)
    r = row(rep, "x + w")
    assert float(r.grad) == 2.0
    assert r.grad_reason is None


def test_rebound_names_and_unlabelled_nodes():
    x = leaf(1.0, "x", 1)
    y1 = lab(x * 2, "y", "x * 2", 2)
    y = lab(y1 * 3, "y@2", "y * 3", 3)
    z = (y + 1).sum()  # no labels at all
    rep = report_of(z.backward)
    assert [r.name for r in rep.rows] == ["x", "y", "y@2", "AddBackward0#1", "SumBackward0#1"]
    assert rep.root == "SumBackward0#1"
    assert rep.call == "SumBackward0#1.backward()"


def test_label_on_grad_fn_outlives_the_tensor():
    x = leaf(1.0, "x", 1)
    y = x * 2
    y.grad_fn._label = Label("y", "x * 2", 2)  # what the language layer may keep
    y = lab(y * 3, "y@2", "y * 3", 3)  # the first y is gone now
    rep = report_of(y.backward)
    assert [r.name for r in rep.rows] == ["x", "y", "y@2"]
    assert row(rep, "y").value is None  # its value went with it
    assert row(rep, "y").shape == []


def test_grad_call_report():
    x, w, a, b, y = example()
    with events() as got:
        engine.grad(y, [x])
    rep = build_report(got[-1], line=4, call_text=None)
    assert rep.kind == "grad"
    assert rep.call == "torch.autograd.grad(y, [x])"
    assert "inputs=[x]" in rep.options
    xr = row(rep, "x")
    assert float(xr.flowed_grad) == 2.0
    assert xr.grad is None and xr.grad_reason == GRAD_CALL_REASON


def test_gradient_option_in_header():
    x = lab(torch.tensor([1.0, 2.0], requires_grad=True), "x", "tensor([1., 2.])", 1)
    y = lab(x * 3, "y", "x * 3", 2)
    rep = report_of(lambda: y.backward(torch.tensor([1.0, 0.5])))
    assert rep.options[-1] == "gradient=[1.0000, 0.5000]"
    np.testing.assert_allclose(row(rep, "x").grad, [3.0, 1.5])


def test_multi_output_node_rows():
    x = lab(torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True), "x", "tensor(...)", 1)
    a, b = torch.chunk(x, 2)
    lab(a, "a", "chunk", 2)
    lab(b, "b", "chunk", 2)
    y = (a * b).sum()
    rep = report_of(y.backward)
    names = [r.name for r in rep.rows]
    assert names[:3] == ["x", "a", "b"]
    np.testing.assert_allclose(row(rep, "x").grad, [3.0, 4.0, 1.0, 2.0])
    np.testing.assert_allclose(row(rep, "b").flowed_grad, [1.0, 2.0])


def test_show_report_has_no_flowed_gradients():
    x, w, a, b, y = example()
    c = lab(torch.ones(2), "c", "ones(2)", 5)
    rep = build_show_report([y, c], line=7, call_text="show(y, c)")
    assert rep.kind == "show"
    assert [r.name for r in rep.rows] == ["c", "x", "w", "x + w", "w + 1", "y"]
    assert all(r.flowed_grad is None for r in rep.shown_rows)
    assert row(rep, "c").requires_grad is False


# ---------------------------------------------------------------- notes


def test_note_freed_saved_values_names_lines():
    x, w, a, b, y = example()
    rep = report_of(y.backward)
    assert rep.notes == [
        "this pass freed the values saved by MulBackward0 (line 3): a second backward through "
        "this graph will fail; pass retain_graph=True to keep them"
    ]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_no_freed_note_with_retain_graph():
    x, w, a, b, y = example()
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == []
    assert "retain_graph=True" in rep.options


def test_add_only_graph_frees_nothing():
    x = leaf(2.0, "x", 1)
    w = leaf(1.0, "w", 2)
    y = lab(x + w + 1, "y", "x + w + 1", 3)
    rep = report_of(y.backward)
    assert rep.notes == []
    y.backward()  # nothing was saved, so nothing was freed: this works, as in PyTorch
    assert float(x._grad.data_) == 2.0


def test_note_broadcast():
    x = lab(torch.ones(4, 3), "x", "ones(4, 3)", 1)
    w = lab(torch.ones(4, 3, requires_grad=True), "w", "ones(4, 3, requires_grad=True)", 2)
    b = lab(torch.tensor([1.0, 2.0, 3.0], requires_grad=True), "b", "tensor(...)", 3)
    z = lab(x * w + b, None, "x * w + b", 4)
    loss = lab(z.sum(), "loss", "(x * w + b).sum()", 4)
    rep = report_of(lambda: loss.backward(retain_graph=True))
    assert rep.notes == [
        "the gradient of b (shape [3]) was summed over the broadcast dimension 0 of x * w + b "
        "(shape [4, 3]) at line 4"
    ]
    np.testing.assert_allclose(row(rep, "b").grad, [4.0, 4.0, 4.0])


def test_note_broadcast_keepdim_dimensions():
    a = lab(torch.ones(2, 1, 3, requires_grad=True), "a", "ones(2, 1, 3)", 1)
    b = lab(torch.ones(4, 1, requires_grad=True), "b", "ones(4, 1)", 2)
    s = lab((a * b).sum(), "s", "(a * b).sum()", 3)
    rep = report_of(lambda: s.backward(retain_graph=True))
    assert rep.notes == [
        "the gradient of a (shape [2, 1, 3]) was summed over the broadcast dimension 1 of "
        "MulBackward0#1 (shape [2, 4, 3])",
        "the gradient of b (shape [4, 1]) was summed over the broadcast dimensions 0, 2 of "
        "MulBackward0#1 (shape [2, 4, 3])",
    ]


def test_no_broadcast_note_for_matmul_or_scalars():
    a = lab(torch.ones(2, 3, requires_grad=True), "a", "ones(2, 3)", 1)
    b = lab(torch.ones(3, requires_grad=True), "b", "ones(3)", 2)
    y = lab((a @ b * 2.0).sum(), "y", "(a @ b * 2.0).sum()", 3)
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == []


def test_note_hook_changed_gradient():
    x = leaf(3.0, "x", 1)
    y = lab(x * x, "y", "x * x", 2)
    x.register_hook(lambda g: g * 10)
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == [
        "a hook on x (line 1) changed the gradient that flowed into it; the table shows the "
        "gradient after the hook"
    ]
    xr = row(rep, "x")
    assert xr.hook_changed
    assert float(xr.flowed_grad) == 60.0


def test_hook_returning_none_is_not_a_change():
    x = leaf(3.0, "x", 1)
    y = lab(x * x, "y", "x * x", 2)
    seen = []
    x.register_hook(seen.append)
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == [] and len(seen) == 1


def test_note_tensor_that_stopped_being_a_leaf():
    w = lab(
        torch.tensor(5.0, requires_grad=True) * 0.1, "w", "tensor(5., requires_grad=True) * 0.1", 3
    )
    y = lab(w * w, "y", "w * w", 4)
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == [
        "w (line 3) is not a leaf: it is the result of MulBackward0, so w.grad stays None; make "
        "the finished value the leaf (compute it, then call .requires_grad_()) or call "
        "w.retain_grad()"
    ]


def test_no_leaf_note_after_retain_grad():
    w = lab(
        torch.tensor(5.0, requires_grad=True) * 0.1, "w", "tensor(5., requires_grad=True) * 0.1", 3
    )
    w.retain_grad()
    y = lab(w * w, "y", "w * w", 4)
    rep = report_of(lambda: y.backward(retain_graph=True))
    assert rep.notes == []
    assert float(row(rep, "w").grad) == pytest.approx(1.0)


# ---------------------------------------------------------------- folding


def chain(n, line=3):
    x = leaf(1.0, "x", 1)
    y = x
    keep = [x]  # the interpreter's variables keep the tensors their labels are on
    for i in range(n):
        y = lab(y * 1.001, "y" if i == 0 else f"y@{i + 1}", "y * 1.001", line)
        keep.append(y)
    return keep, y


def test_loop_of_1000_steps_is_folded():
    x, y = chain(1000)
    rep = report_of(y.backward)
    names = [r.text if isinstance(r, Fold) else r.name for r in rep.rows]
    assert names == ["x", "y", "y@2", "… 996 similar nodes", "y@999", "y@1000"]
    assert rep.node_count == 1001
    assert rep.notes == [
        "this pass freed the values saved by 1000 × MulBackward0 (line 3): a second backward "
        "through this graph will fail; pass retain_graph=True to keep them"
    ]
    text = report_to_text(rep)
    assert "…       996 similar nodes" in text


def test_full_shows_every_node():
    x, y = chain(1000)
    rep = report_of(y.backward, full=True)
    assert len(rep.rows) == 1001
    assert not any(isinstance(r, Fold) for r in rep.rows)


def test_short_loop_is_not_folded():
    x, y = chain(30)
    rep = report_of(y.backward)
    assert len(rep.rows) == 31


def test_fold_plan_periodic_and_fallback():
    keys = ["leaf"] + ["mul", "add"] * 100
    plan = fold_plan(keys, limit=40)
    folds = [u for u in plan if isinstance(u, tuple)]
    assert folds == [(5, 192, True)]
    assert plan[:5] == [0, 1, 2, 3, 4] and plan[-4:] == [197, 198, 199, 200]
    # no repetition at all: first and last 10 rows around one fold
    plan = fold_plan(list(range(100)), limit=40)
    assert plan == list(range(10)) + [(10, 80, False)] + list(range(90, 100))
    assert fold_plan(list(range(40)), limit=40) == list(range(40))


def test_fold_text():
    assert Fold(996).text == "… 996 similar nodes"
    assert Fold(80, similar=False).text == "… 80 more nodes"


def test_100000_node_chain_reports_quickly():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    with events() as got:
        y.sum().backward()
    start = time.perf_counter()
    rep = build_report(got[-1], line=None, call_text=None)
    text = report_to_text(rep)
    elapsed = time.perf_counter() - start
    assert re.search(r"…  +99996 similar nodes", text)
    assert len(rep.rows) == 7
    # no timing assertion (benchmarks/ measures speed); about 0.3 s on a quiet machine
    del elapsed


# ---------------------------------------------------------------- second derivatives


def test_second_order_x_cubed():
    x = lab(torch.tensor([1.0, 2.0], requires_grad=True), "x", "tensor([1., 2.])", 1)
    y = lab((x**3).sum(), "y", "(x ** 3).sum()", 2)
    rep = report_of(lambda: y.backward(create_graph=True))
    so = rep.second_order
    assert so is not None and so.root == "y"
    assert [(f.name, f.grad_fn) for f in so.first_order] == [("x", x._grad.grad_fn.grad_fn_name)]
    assert so.first_order[0].grad_fn is not None
    (block,) = so.blocks
    assert (block.u, block.v, block.shape) == ("x", "x", [2, 2])
    np.testing.assert_allclose(block.value, [[6.0, 0.0], [0.0, 12.0]])  # d2/dx2 x^3 = 6x


def test_second_order_mixed_pairs():
    x = leaf(3.0, "x", 1)
    w = leaf(2.0, "w", 2)
    y = lab(x * x * w, "y", "x * x * w", 3)
    rep = report_of(lambda: y.backward(create_graph=True))
    got = {(b.u, b.v): float(b.value) for b in rep.second_order.blocks}
    # y = x^2 w: d2/dx2 = 2w, d2/dxdw = 2x, d2/dw2 = 0
    assert got == {("x", "x"): 4.0, ("x", "w"): 6.0, ("w", "x"): 6.0, ("w", "w"): 0.0}


def test_second_order_for_autograd_grad():
    x = leaf(2.0, "x", 1)
    y = lab(x**3, "y", "x ** 3", 2)
    with events() as got:
        (g,) = engine.grad(y, [x], create_graph=True)
    rep = build_report(got[-1], line=3, call_text="torch.autograd.grad(y, x, create_graph=True)")
    assert rep.second_order.first_order[0].grad_fn == g.grad_fn.name()
    (block,) = rep.second_order.blocks
    assert float(block.value) == 12.0


def test_second_order_constant_gradient():
    x = leaf(2.0, "x", 1)
    y = lab(x * 3, "y", "x * 3", 2)
    rep = report_of(lambda: y.backward(create_graph=True))
    (block,) = rep.second_order.blocks
    assert float(block.value) == 0.0
    assert rep.second_order.first_order[0].grad_fn is None


def test_second_order_large_block_is_summarised():
    x = lab(torch.arange(1.0, 11.0).requires_grad_(), "x", "arange(1., 11.)", 1)
    y = lab((x**3).sum(), "y", "(x ** 3).sum()", 2)
    rep = report_of(lambda: y.backward(create_graph=True))
    (block,) = rep.second_order.blocks
    assert block.value is None and block.shape == [10, 10]
    expected = 6 * np.arange(1.0, 11.0)
    np.testing.assert_allclose(block.diagonal, expected)
    assert block.norm == pytest.approx(float(np.linalg.norm(expected)))
    text = report_to_text(rep)
    assert "norm 117.7285" in text


def test_second_order_is_silent_and_leaves_state_alone():
    x = leaf(2.0, "x", 1)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    a = lab(x * x, "a", "x * x", 2)
    a.retain_grad()
    y = lab(a * x, "y", "a * x", 3)
    with events() as got:
        y.backward(create_graph=True)
    assert len(calls) == 1
    a_grad = a._grad
    n_listeners = len(engine.listeners)
    rep = build_report(got[-1], line=4, call_text=None)
    assert len(got) == 1  # no nested events from the second-order passes
    assert len(engine.listeners) == n_listeners
    assert len(calls) == 1  # the hook did not run again
    assert a._grad is a_grad  # retain_grad did not accumulate again
    assert float(rep.second_order.blocks[0].value) == 12.0  # d2/dx2 x^3 = 6x


# ---------------------------------------------------------------- text


EXPECTED_TEXT = """\
y.backward() at line 9  retain_graph=False, create_graph=False
name  expression            shape dtype   requires_grad is_leaf grad_fn      value flowed grad .grad
────────────────────────────────────────────────────────────────────────────────────────────────────
x     tensor(2.0,           []    float32 True          True    None         2.    2.          2.
      requires_grad=True)
w     tensor(1.0,           []    float32 True          True    None         1.    5.          5.
      requires_grad=True)
x + w                       []    float32 True          False   AddBackward0 3.    2.          None
w + 1                       []    float32 True          False   AddBackward0 2.    3.          None
y     (x + w) * (w + 1)     []    float32 True          False   MulBackward0 6.    1.          None
.grad None: non-leaf; call .retain_grad() to keep it
note: this pass freed the values saved by MulBackward0 (line 3): a second backward through this
      graph will fail; pass retain_graph=True to keep them

"""


def test_plain_text_is_golden():
    x, w, a, b, y = example()
    rep = report_of(y.backward, call_text="y.backward()")
    assert report_to_text(rep) == EXPECTED_TEXT


def test_plain_text_has_no_escapes_or_trailing_spaces():
    x = lab(torch.ones(4, 3, requires_grad=True), "[x]", "ones(4, 3) [bold] :warning:", 1)
    y = lab((x * 2).sum(), "y", "(x * 2).sum()", 2)
    text = report_to_text(report_of(y.backward))
    assert "\x1b" not in text
    assert all(line == line.rstrip() for line in text.split("\n"))
    assert "[x]" in text and "[bold]" in text and ":warning:" in text


def test_wide_values_split_into_two_tables():
    x = lab(torch.tensor([[0.5, -1.0, 2.0]] * 4, requires_grad=True), "W", "W", 1)
    y = lab((x * 3).sum(), "y", "(W * 3).sum()", 2)
    text = report_to_text(report_of(y.backward))
    headers = [ln for ln in text.split("\n") if ln.startswith("name ")]
    assert len(headers) == 2
    assert "[[ 0.5000, -1.0000,  2.0000]," in text
    assert all(len(line) <= 100 for line in text.split("\n"))


def test_width_option():
    x, w, a, b, y = example()
    rep = report_of(y.backward)
    text = report_to_text(rep, width=60)
    assert all(len(line) <= 60 for line in text.split("\n"))


def test_second_order_table_text():
    x = leaf(3.0, "x", 1)
    w = leaf(2.0, "w", 2)
    y = lab(x * x * w, "y", "x * x * w", 3)
    rep = report_of(
        lambda: y.backward(create_graph=True), call_text="y.backward(create_graph=True)"
    )
    text = report_to_text(rep)
    # backward(create_graph=True) leaves x.grad made by CopyBackwards, as PyTorch does
    gx, gw = x._grad.grad_fn.grad_fn_name, w._grad.grad_fn.grad_fn_name
    assert gx == gw == "CopyBackwards"
    assert text.endswith(
        f"""\
second derivatives of y
u  ∂y/∂u grad_fn  v  shape  ∂²y/∂u∂v
────────────────────────────────────
x  {gx}  x  []     4.
                  w  []     6.
w  {gw}  x  []     6.
                  w  []     0.

"""
    )


def test_format_value_summarises_like_pytorch():
    assert format_value(np.arange(20, dtype=np.float32), "float32") == (
        "[ 0.,  1.,  ..., 18., 19.]"
    )
    assert format_value(np.arange(3, dtype=np.float64), "float64") == "[0., 1., 2.]"
    assert format_value(np.array(0.25, dtype=np.float32), "float32") == "0.2500"
    assert format_value(np.ones((2, 2), dtype=np.float32), "float32") == "[[1., 1.],\n [1., 1.]]"
    full = format_value(np.arange(20, dtype=np.float32), "float32", full=True)
    assert "..." not in full and "19." in full


# ---------------------------------------------------------------- consoles


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_console_piped_is_plain_and_fixed_width(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "37")
    con = make_console(io.StringIO(), width=None, color=None)
    assert con.width == 100
    assert con.color_system is None
    assert not con.is_terminal


def test_console_terminal_has_colour_unless_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    con = make_console(FakeTTY(), width=80, color=None)
    assert con.color_system is not None
    monkeypatch.setenv("NO_COLOR", "please")
    con = make_console(FakeTTY(), width=80, color=None)
    assert con.color_system is None
    monkeypatch.setenv("NO_COLOR", "")
    con = make_console(FakeTTY(), width=80, color=None)
    assert con.color_system is not None


def test_coloured_output_styles_leaves_and_ops(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    x, w, a, b, y = example()
    rep = report_of(y.backward)
    buf = io.StringIO()
    render_report(rep, make_console(buf, width=100, color=True))
    out = buf.getvalue()
    assert "\x1b[" in out
    assert "\x1b[1;36mx" in out  # leaf names bold cyan
    assert "\x1b[1;35mAddBackward0" in out  # grad_fns bold magenta


def test_no_color_env_makes_same_text_as_pipe(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    x, w, a, b, y = example()
    rep = report_of(y.backward, call_text="y.backward()")
    buf = FakeTTY()
    render_report(rep, make_console(buf, width=100, color=None))
    assert buf.getvalue() == EXPECTED_TEXT


@pytest.mark.skipif(os.name != "posix", reason="posix only")
def test_markup_is_never_interpreted():
    con = make_console(io.StringIO(), width=100, color=False)
    con.print("[bold]x[/bold] :warning:")
    assert con.file.getvalue() == "[bold]x[/bold] :warning:\n"
