"""Symbolic formulas (adcli/symbolic): formula(t), `adcli run --symbolic`, checks.

The seeds' hand-derived results must appear as formulas that agree with the
numbers: d(mean(3(x+2)^2))/dx = 3(x+2)/2 = 4.5 at x = 1; for y = (x+w)(w+1),
∂y/∂w = x + 2w + 1 = 5 and ∂y/∂x = w + 1 = 2; the l1..l4 chain's 28, 8, 10;
d²(x²)/dx² = 2.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text


def run(script: str, **opts: object) -> str:
    """Run a script as `adcli run` would into a pipe; return everything it printed."""
    buf = io.StringIO()
    options = RunOptions(**opts)  # type: ignore[arg-type]
    code = run_text(textwrap.dedent(script), "t.ad", options, _Streams(buf, buf))
    out = buf.getvalue()
    assert code == 0, out
    return out


def lines_with(out: str, prefix: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith(prefix)]


SEED_004 = """
import torch
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
out.backward()
formula(out)
formula(x.grad)
"""

SEED_002 = """
import torch
w = torch.tensor([1.], requires_grad=True)
x = torch.tensor([2.], requires_grad=True)
a = torch.add(w, x)
b = torch.add(w, 1)
y = torch.mul(a, b)
y.backward()
formula(y)
formula(w.grad)
formula(x.grad)
"""

SEED_003 = """
import torch
input = torch.ones([2, 2], requires_grad=False)
w1 = torch.tensor(2., requires_grad=True)
w2 = torch.tensor(3., requires_grad=True)
w3 = torch.tensor(4., requires_grad=True)
l1 = input * w1
l2 = l1 + w2
l3 = l1 * w3
l4 = l2 * l3
loss = l4.mean()
loss.backward()
formula(w1.grad)
formula(w2.grad)
formula(w3.grad)
"""

SEED_002_SECOND = """
import torch
x = torch.tensor([3.], requires_grad=True)
y = torch.pow(x, 2)
grad_1 = torch.autograd.grad(y, x, create_graph=True)
g1 = grad_1[0]
formula(g1)
grad_2 = torch.autograd.grad(g1, x)
g2 = grad_2[0]
formula(g2)
"""


# --------------------------------------------------------------------------- the seeds


def test_seed_mean_of_3_x_plus_2_squared() -> None:
    out = run(SEED_004, quiet=True)
    assert "out = mean(3*(x + 2)**2)  # = 27. ✓" in out
    (line,) = lines_with(out, "x.grad = ")
    assert line.startswith("x.grad = 3*(x + 2)/2  # ∂out/∂x; = [[4.5000, 4.5000]")
    assert line.endswith("✓")


def test_seed_x_plus_w_times_w_plus_1() -> None:
    out = run(SEED_002, quiet=True)
    assert "y = (w + 1)*(w + x)  # = [6.] ✓" in out
    assert "w.grad = 2*w + x + 1  # ∂y/∂w; = [5.] ✓" in out
    assert "x.grad = w + 1  # ∂y/∂x; = [2.] ✓" in out


def test_seed_l1_to_l4_chain_gives_28_8_10() -> None:
    out = run(SEED_003, quiet=True)
    got = {ln.split(".grad")[0]: ln for ln in lines_with(out, "w")}
    assert got["w1"].endswith("# ∂loss/∂w1; = 28. ✓")
    assert got["w2"].endswith("# ∂loss/∂w2; = 8. ✓")
    assert got["w3"].endswith("# ∂loss/∂w3; = 10. ✓")
    # the data tensor keeps its name; factors equal for every element come out of sums
    assert got["w2"].startswith("w2.grad = w1*w3*torch.sum(input)/4")


def test_seed_second_derivative_of_x_squared_is_2() -> None:
    out = run(SEED_002_SECOND, quiet=True)
    assert "g1 = 2*x  # ∂y/∂x; = [6.] ✓" in out
    assert "g2 = 2  # ∂g1/∂x; = [2.] ✓" in out


def test_symbolic_report_of_the_seed_shows_formulas_and_rules() -> None:
    out = run(SEED_002.replace("formula(", "print(").replace("print(y)", "pass"), symbolic=True)
    assert "∂y/∂name (formula)" in out
    assert "2*w + x + 1 = 5  ✓" in out
    assert "w + 1 = 2  ✓" in out
    assert "(w + 1)*(w + x) = 6  ✓" in out
    assert "MulBackward0: ∂(a*b)/∂a = b = 2; ∂(a*b)/∂b = a = 3" in out
    assert "AddBackward0: ∂(w + x)/∂w = 1; ∂(w + x)/∂x = 1" in out
    assert "MISMATCH" not in out


def test_symbolic_report_of_the_mean_seed() -> None:
    out = run(SEED_004.replace("formula(out)\nformula(x.grad)", ""), symbolic=True)
    assert "3*(x + 2)/2 = 4.5  ✓" in out
    assert "MeanBackward0: ∂mean(z)/∂z = 1/4" in out
    assert "mean(3*(x + 2)**2) = 27  ✓" in out


def reports(script: str, monkeypatch: pytest.MonkeyPatch, **opts: object) -> list:
    """The Report objects a --symbolic run renders (cells are checked unwrapped)."""
    from adcli.render import tables

    seen = []
    render = tables.render_report

    def capture(report, console):  # type: ignore[no-untyped-def]
        seen.append(report)
        render(report, console)

    monkeypatch.setattr(tables, "render_report", capture)
    run(script, symbolic=True, **opts)
    return seen


def test_symbolic_report_of_the_chain_seed_shows_broadcast_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (report,) = reports(SEED_003.replace("formula(", "print("), monkeypatch)
    rows = {r.name: r for r in report.shown_rows}
    assert rows["w1"].grad_formula == "w3*torch.sum(input*(2*input*w1 + w2))/4 = 28  ✓"
    assert rows["w2"].grad_formula == "w1*w3*torch.sum(input)/4 = 8  ✓"
    assert rows["w3"].grad_formula == "w1*torch.sum(input*(input*w1 + w2))/4 = 10  ✓"
    assert rows["l4"].rule == "MulBackward0: ∂(l2*l3)/∂l2 = l3 = 8; ∂(l2*l3)/∂l3 = l2 = 5"
    assert rows["l2"].rule == (
        "AddBackward0: ∂(l1 + w2)/∂l1 = 1; ∂(l1 + w2)/∂w2 = 1, summed over the broadcast"
    )
    assert rows["l1"].formula == "input*w1 = 2  ✓"
    assert rows["loss"].rule == "MeanBackward0: ∂mean(l4)/∂l4 = 1/4"
    assert not any("FORMULA CHECK FAILED" in n for n in report.notes)


def test_second_derivative_table_gets_formulas() -> None:
    out = run(
        """
        import torch
        x = torch.tensor([1., 2., 3.], requires_grad=True)
        w = torch.tensor(2., requires_grad=True)
        y = (w * x ** 3).sum()
        y.backward(create_graph=True)
        """,
        symbolic=True,
        width=140,
    )
    assert "diagonal: 6*w*x  ✓" in out
    assert "3*x**2  ✓" in out
    assert "MISMATCH" not in out


def test_second_derivative_of_a_scalar_in_the_report() -> None:
    out = run(
        """
        import torch
        x = torch.tensor(3., requires_grad=True)
        y = x ** 2
        g, = torch.autograd.grad(y, x, create_graph=True)
        """,
        symbolic=True,
    )
    assert "second derivatives of y" in out
    assert "[[2.]]" in out or " 2.  " in out
    block_line = [ln for ln in out.splitlines() if ln.startswith("x ") and "Backward" in ln][-1]
    assert block_line.rstrip().endswith("2  ✓")


# --------------------------------------------------------------------------- tutorials


def test_external_gradient_and_dot() -> None:
    out = run(
        """
        import torch
        a = torch.tensor([2., 3.], requires_grad=True)
        b = torch.tensor([6., 4.], requires_grad=True)
        Q = 3*a**3 - b**2
        external_grad = torch.tensor([1., 1.])
        Q.backward(gradient=external_grad)
        formula(a.grad)
        formula(b.grad)
        x = torch.arange(4.0)
        x.requires_grad_(True)
        y = 2*torch.dot(x, x)
        y.backward()
        formula(x.grad)
        """,
        quiet=True,
    )
    assert "a.grad = 9*a**2  # ∂Q/∂a; = [36., 81.] ✓" in out
    assert "b.grad = -2*b  # ∂Q/∂b; = [-12.,  -8.] ✓" in out
    assert "x.grad = 4*x  # ∂y/∂x; = [ 0.,  4.,  8., 12.] ✓" in out


def test_vector_jacobian_product_keeps_the_gradient_name() -> None:
    out = run(
        """
        import torch
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
        y.backward(v)
        formula(x.grad)
        """,
        quiet=True,
    )
    (line,) = lines_with(out, "x.grad = ")
    assert line.startswith("x.grad = 512*v  # ")
    assert line.endswith("✓")


def test_weighted_multi_output_backward_through_cat() -> None:
    out = run(
        """
        import torch
        w = torch.tensor([1.], requires_grad=True)
        x = torch.tensor([2.], requires_grad=True)
        a = torch.add(w, x)
        b = torch.add(w, 1)
        y0 = torch.mul(a, b)
        y1 = torch.add(a, b)
        loss = torch.cat([y0, y1], dim=0)
        grad_tensors = torch.tensor([1., 2.])
        loss.backward(gradient=grad_tensors)
        formula(w.grad)
        formula(loss)
        """,
        quiet=True,
    )
    assert "loss = torch.cat([(w + 1)*(w + x), 2*w + x + 1], dim=0)  # = [6., 5.] ✓" in out
    (line,) = lines_with(out, "w.grad = ")
    assert "grad_tensors[0:1]" in line and line.endswith("= [9.] ✓")


def test_gradients_accumulate_over_passes_and_reset_after_zero() -> None:
    out = run(
        """
        import torch
        w = torch.tensor([1.], requires_grad=True)
        x = torch.tensor([2.], requires_grad=True)
        y = (w + x) * (w + 1)
        y.backward(retain_graph=True)
        y.backward()
        formula(w.grad)
        w.grad.zero_()
        z = w * w * x
        z.backward()
        formula(w.grad)
        """,
        quiet=True,
    )
    grads = lines_with(out, "w.grad = ")
    assert grads[0] == "w.grad = 2*(2*w + x + 1)  # sum of 2 backward passes of ∂y/∂w; = [10.] ✓"
    assert grads[1] == "w.grad = 2*w*x  # ∂z/∂w; = [4.] ✓"


def test_gradient_formula_is_checked_at_the_values_of_its_pass() -> None:
    out = run(
        """
        import torch
        w = torch.tensor([1.], requires_grad=True)
        x = torch.tensor([2.], requires_grad=True)
        y = w * w * x
        y.backward()
        opt = torch.optim.SGD([w, x], lr=0.1)
        opt.step()
        formula(w.grad)
        formula(y)
        """,
        quiet=True,
    )
    assert "w.grad = 2*w*x  # ∂y/∂w; = [4.] ✓" in out
    (line,) = lines_with(out, "y = ")
    assert "not checked" in line and "changed in place after y was computed" in line


def test_retained_non_leaf_gradient_and_hooks() -> None:
    out = run(
        """
        import torch
        w = torch.tensor([1.], requires_grad=True)
        l1 = w * 3
        l1.register_hook(lambda grad: print('l1 grad: ', grad))
        l1.retain_grad()
        (l1 * l1).sum().backward()
        formula(l1.grad)
        k = torch.tensor([1., 2.], requires_grad=True)
        k.register_hook(lambda g: g * 2)
        (k ** 3).sum().backward()
        formula(k.grad)
        """,
        quiet=True,
    )
    assert out.count("l1 grad: ") == 1  # the symbolic pass does not run the script's hooks
    assert "l1.grad = 6*w  # ∂(l1 * l1).sum()/∂l1; = [6.] ✓" in out
    (line,) = lines_with(out, "k.grad = ")
    assert line.startswith("k.grad = 3*k**2  # ")
    assert "MISMATCH" not in line and "differs: a hook changed the gradient" in line


def test_values_changed_behind_autograds_back_are_caught() -> None:
    out = run(
        """
        import torch
        a = torch.tensor([1., 2., 3.], requires_grad=True)
        b = a * a
        a.data.mul_(10)
        formula(b)
        """,
        quiet=True,
    )
    (line,) = lines_with(out, "b = ")
    assert "✗ MISMATCH" in line and "through .data?" in line


# --------------------------------------------------------------------------- structured


def test_matmul_softmax_cross_entropy_are_structured() -> None:
    out = run(
        """
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(2, 3)
        W = torch.randn(4, 3, requires_grad=True)
        b = torch.zeros(4, requires_grad=True)
        h = F.linear(x, W, b)
        loss = F.cross_entropy(h, torch.tensor([1, 3]))
        loss.backward()
        formula(loss)
        formula(W.grad)
        formula(b.grad)
        """,
        quiet=True,
    )
    assert "loss = F.nll_loss(log_softmax(b + x @ W.T, dim=1), tensor([1, 3]))  # = 2.2536 ✓" in out
    (wg,) = lines_with(out, "W.grad = ")
    # PyTorch's mm_mat2_backward computes nn.Linear's weight gradient as (x.T @ G).T,
    # printed simplified: G.T @ x
    assert wg.startswith("W.grad = ((") and ").T @ x  #" in wg
    assert "F.one_hot(tensor([1, 3]), 4)" in wg
    assert wg.endswith("✓")
    (bg,) = lines_with(out, "b.grad = ")
    assert bg.startswith("b.grad = torch.sum(") and ", dim=0)" in bg and bg.endswith("✓")


def test_matmul_gradient_names_the_incoming_gradient() -> None:
    out = run(
        """
        import torch
        x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        W = torch.tensor([[0.5, -1.], [2., 1.]], requires_grad=True)
        y = x @ W
        y.backward(gradient=torch.tensor([[1., 0.], [0., 2.]]))
        """,
        symbolic=True,
        width=150,
    )
    assert "grad @ W.T  ✓" in out
    assert "x.T @ grad  ✓" in out
    assert "MmBackward0: x: grad @ W.T; W: x.T @ grad" in out


def test_indexing_gradient_uses_masks_and_stays_exact() -> None:
    out = run(
        """
        import torch
        v = torch.tensor([1., 2., 3.], requires_grad=True)
        s = (v[0] * v[2] + v[1:].sum()) ** 2
        s.backward()
        formula(s)
        formula(v.grad)
        """,
        quiet=True,
    )
    assert "s = (torch.sum(v[1:]) + v[0]*v[2])**2  # = 64. ✓" in out
    (line,) = lines_with(out, "v.grad = ")
    assert "tensor([1., 0., 0.])" in line and line.endswith("= [48., 16., 32.] ✓")


def test_no_closed_form_is_said_honestly() -> None:
    out = run(
        """
        import torch
        x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        y = torch.gather(x, 1, torch.tensor([[0], [1]]))
        z = (torch.cumsum(x, dim=1) * y).sum()
        z.backward()
        formula(x.grad)
        """,
        quiet=True,
    )
    (line,) = lines_with(out, "x.grad")
    assert line.startswith("x.grad: no closed form shown (goes through ")
    assert "MISMATCH" not in line


def test_piecewise_functions() -> None:
    out = run(
        """
        import torch
        v = torch.tensor([1., 2., 3.], requires_grad=True)
        r = torch.relu(v - 2).sum() + torch.sigmoid(v).prod() + torch.exp(-v).max()
        r.backward()
        formula(r)
        formula(v.grad)
        """,
        quiet=True,
    )
    assert "r = exp(-v).max() + torch.prod(sigmoid(v)) + torch.sum(relu(v - 2))" in out
    (line,) = lines_with(out, "v.grad = ")
    assert "where(v - 2 > 0, 1, 0)" in line and line.endswith("✓")


# --------------------------------------------------------------------------- edges


def test_constants_and_leaves() -> None:
    out = run(
        """
        import torch
        c = torch.tensor([1., 2.])
        formula(c)
        h = torch.tensor(5., requires_grad=True) * 0.1
        formula(h)
        x = torch.tensor(2., requires_grad=True)
        formula(x)
        u = (x * x).detach()
        z = u * x
        formula(z)
        """,
        quiet=True,
    )
    assert "c = [1., 2.]  # a constant: no graph" in out
    assert "h = torch.tensor(5., requires_grad=True)/10  # = 0.5000 ✓" in out
    assert "x = x  # = 2. ✓" in out
    assert "z = u*x  # = 8. ✓" in out


def test_formula_takes_a_tensor() -> None:
    buf = io.StringIO()
    code = run_text("formula(3)\n", "t.ad", RunOptions(quiet=True), _Streams(buf, buf))
    assert code == 1
    assert "formula() takes a tensor" in buf.getvalue()


def test_long_graphs_are_abbreviated_or_refused() -> None:
    out = run(
        """
        import torch
        x = torch.tensor(0.5, requires_grad=True)
        y = x
        for i in range(60):
            y = torch.sin(y) * 1.01 + x
        formula(y)
        """,
        quiet=True,
    )
    (line,) = lines_with(out, "y@60 = ")
    assert "(in terms of y@" in line and line.endswith("✓")


def test_report_of_a_large_graph_says_formulas_are_skipped() -> None:
    out = run(
        """
        import torch
        x = torch.tensor(0.5, requires_grad=True)
        y = x
        for i in range(300):
            y = y * 1.001 + x
        y.backward()
        """,
        symbolic=True,
    )
    assert "formulas are not shown: the graph has" in out


def test_a_wrong_reading_is_shown_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    import sympy

    from adcli.symbolic import rules

    monkeypatch.setitem(rules.RULES, "Sin", lambda c: sympy.cos(c.a))
    out = run(
        """
        import torch
        x = torch.tensor(0.5, requires_grad=True)
        y = torch.sin(x) * 2
        y.backward()
        formula(y)
        """,
        symbolic=True,
    )
    assert "✗ MISMATCH" in out
    assert "✗ FORMULA CHECK FAILED for " in out
    (line,) = lines_with(out, "y = ")
    assert "✗ MISMATCH: the formula gives" in line


def test_recording_is_off_unless_asked() -> None:
    from adcli.autograd import ops
    from adcli.autograd.config import config
    from adcli.autograd.tensor import Tensor

    run("import torch\nx = torch.tensor(1., requires_grad=True)\nformula(x * 2)\n", quiet=True)
    assert config.record_inputs is False
    x = Tensor._make(np.float32(1.0), True)
    y = ops.mul(x, 2.0)
    assert "sym_inputs" not in y.grad_fn.__dict__


def test_sympy_is_imported_only_for_formulas() -> None:
    code = textwrap.dedent(
        """
        import io, sys
        from adcli.core.options import RunOptions
        from adcli.core.runner import _Streams, run_text
        buf = io.StringIO()
        src = "import torch\\nx = torch.tensor(1., requires_grad=True)\\n(x * x).backward()\\n"
        run_text(src, "t.ad", RunOptions(), _Streams(buf, buf))
        print("sympy" in sys.modules)
        run_text(src + "formula(x.grad)\\n", "t.ad", RunOptions(), _Streams(buf, buf))
        print("sympy" in sys.modules)
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "True"]


def test_cli_flag(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "s.ad"
    script.write_text(SEED_002)
    result = run_cli(["run", "--symbolic", str(script)])
    assert result.exit_code == 0, result.output
    assert "local rule (grad_fn)" in result.stdout
    result = run_cli(["run", str(script)])
    assert "local rule (grad_fn)" not in result.stdout


# --------------------------------------------------------------------------- pieces


def test_numbers_are_read_exactly() -> None:
    import sympy

    from adcli.symbolic import sym

    assert sym.number(np.float32(0.1)) == sympy.Rational(1, 10)
    assert sym.number(0.25) == sympy.Rational(1, 4)
    assert sym.number(3.0) == 3
    assert sym.number(True) is sympy.true
    assert sym.number(float("inf")) is sympy.oo
    assert isinstance(sym.number(np.float32(1 / 3)), sympy.Float)


def test_printer_speaks_the_language() -> None:
    import sympy

    from adcli.symbolic import sym

    x = sym.tensor_symbol("x", np.array([1.0, -2.0]), "leaf")
    assert sym.to_text(sympy.Abs(x) + sympy.ceiling(x)) == "abs(x) + ceil(x)"
    assert sym.to_text(sym.sigmoid(x) ** 2 / 3) == "sigmoid(x)**2/3"
    assert sym.to_text(sympy.Float("0.33333334", 17) * x) == "0.33333334*x"
    assert sym.to_text(sym.clamp(x, 0, sympy.oo)) == "clamp(x, min=0)"
    np.testing.assert_allclose(sym.evaluate(sympy.Abs(x) * 2 + sym.sigmoid(0 * x)), [2.5, 4.5])


def test_inverse_trig_formulas_and_their_gradients() -> None:
    out = run(
        """
        import torch
        x = torch.tensor([0.5, -0.25], requires_grad=True)
        y = (torch.asin(x) + x.acos() * torch.atan(x) + (x + 2).rsqrt()).sum()
        g, = torch.autograd.grad(y, x, create_graph=True)
        formula(y)
        formula(g)
        """,
        quiet=True,
    )
    (line,) = lines_with(out, "y = ")
    assert "asin(x)" in line and "acos(x)*atan(x)" in line and "1/sqrt(x + 2)" in line
    assert line.endswith("✓")
    (line,) = lines_with(out, "g = ")
    assert "1/sqrt(1 - x**2)" in line and line.endswith("✓")


def test_tidy_prefers_factored_forms() -> None:
    from adcli.symbolic import sym

    x = sym.tensor_symbol("x", np.ones(4), "leaf")
    assert sym.to_text(sym.tidy(sym.number(0.25) * 2 * (x + 2) * 3)) == "3*(x + 2)/2"


def test_tensor_api_formula_of() -> None:
    from adcli.autograd import ops
    from adcli.autograd.tensor import Tensor
    from adcli.provenance import Label
    from adcli.symbolic import Tracker, formula_of

    tr = Tracker()
    try:
        x = Tensor._make(np.array([1.0, 2.0], np.float32), True)
        x._label = Label("x", "x", 1)
        y = ops.mean(ops.exp(ops.mul(x, 3.0)))
        assert formula_of(y) == "mean(exp(3*x))"
    finally:
        tr.close()
