"""Custom autograd Functions without torch: what a script may do with `ctx` (the guard's
`__ad_open__` rule), the report's mark on their nodes, and `adcli check` running them
again. Their agreement with PyTorch is in tests/conformance (custom_fn_*.ad and
test_custom_function_vs_torch.py)."""

from __future__ import annotations

import io
import types

import pytest

from adcli.core.options import RunOptions
from adcli.core.runner import run_text

HEADER = """import torch

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        ctx.save_for_backward(x)
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Scale.apply(x, 3.0)
"""


def run(body: str, **options: object) -> tuple[int, str]:
    """Exit code and output (stdout and stderr) of HEADER + body."""
    out = io.StringIO()
    streams = types.SimpleNamespace(out=out, err=out)
    opts = RunOptions(color=False, width=100, **options)  # type: ignore[arg-type]
    code = run_text(HEADER + body, "case.ad", opts, streams)
    return code, out.getvalue()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # the node's own names: never overwritten, nor read through the instance dict
        ("y.grad_fn.multi_output = False", "attribute 'multi_output' of 'ScaleBackward' objects"),
        ("y.grad_fn.backward = print", "attribute 'backward' of 'ScaleBackward' objects"),
        ("y.grad_fn.saved = 1", "attribute 'saved' of 'ScaleBackward' objects is used by adcli"),
        ("print(y.grad_fn.saved)", "'ScaleBackward' object has no attribute 'saved'"),
        ("print(y.grad_fn.seq)", "'ScaleBackward' object has no attribute 'seq'"),
        ("y.grad_fn.saved_tensors = ()", "attribute 'saved_tensors' of 'ScaleBackward' objects"),
        ("print(y.grad_fn._forward_cls)", "attribute '_forward_cls' is not available"),
        ("y.grad_fn._x = 1", "attribute '_x' is not available"),
        ("del y.grad_fn.next_functions", "cannot delete attribute 'next_functions'"),
        ("print(type(y.grad_fn).__mro__)", "attribute '__mro__' is not available"),
    ],
)
def test_ctx_keeps_the_nodes_own_attributes_out_of_reach(body: str, message: str) -> None:
    code, out = run(body + "\n", quiet=True)
    assert code == 1
    assert message in out


def test_ctx_attributes_of_the_script_are_read_and_written() -> None:
    code, out = run("y.grad_fn.k = 5.0\nprint(y.grad_fn.k)\ny.sum().backward()\nprint(x.grad)\n")
    assert code == 0, out
    assert "5.0\n" in out and "tensor([5., 5.])" in out


def test_report_marks_the_custom_node_and_names_its_backward() -> None:
    code, out = run("y.sum().backward()\n")
    assert code == 0, out
    assert "ScaleBackward (custom)" in out
    assert (
        "ScaleBackward is a custom autograd.Function: its gradients come from Scale.backward"
        in (" ".join(out.split()))
    )


def test_adcli_check_runs_the_custom_forward_again() -> None:
    from adcli.core.checker import CheckOptions, check_text

    text = HEADER + "(y * y).sum().backward()\n"
    out, err = io.StringIO(), io.StringIO()
    code = check_text(text, "case.ad", CheckOptions(), out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert "1 calls checked" in out.getvalue() or "1 call checked" in out.getvalue()
    assert "0 failed" in out.getvalue()
