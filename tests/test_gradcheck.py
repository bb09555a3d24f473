"""Finite-difference checks: the gradcheck/gradgradcheck builtins, `adcli check`, and
anomaly detection (`set_detect_anomaly`, `adcli run --detect-anomaly`).

The expected gradcheck messages were printed by torch 2.13 for the same calls.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from adcli.autograd import anomaly, dtypes, engine
from adcli.autograd import functions as F
from adcli.autograd import ops as torch
from adcli.autograd import random as rng
from adcli.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from adcli.autograd.node import Function
from adcli.core.checker import CheckOptions, check_text
from adcli.core.options import RunOptions
from adcli.core.runner import capture

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_anomaly_state():
    anomaly.force(False)
    anomaly.reset()
    yield
    anomaly.force(False)
    anomaly.reset()


def f64(values, requires_grad=True):
    return torch.tensor(values, dtype=dtypes.float64, requires_grad=requires_grad)


def doubled(a):
    y = a * a
    y.register_hook(lambda g: g * 2)
    return y


# ====================================================================== gradcheck


def test_gradcheck_passes():
    x = f64([1.0, 2.0])
    assert gradcheck(lambda a: a * a, (x,)) is True
    assert gradcheck(lambda a: a * a, x) is True  # a lone tensor is accepted
    y = f64([3.0])
    assert gradcheck(lambda a, b: (a * b, a + b * 2), (x, y)) is True
    assert gradcheck(lambda a: (a.sin() * a).sum(), [x]) is True


def test_gradcheck_mismatch_message_is_torchs():
    x = f64([1.0, 2.0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(doubled, (x,))
    assert isinstance(info.value, RuntimeError)
    assert str(info.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[2.0000, 0.0000],\n"
        "        [0.0000, 4.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[4., 0.],\n"
        "        [0., 8.]], dtype=torch.float64)\n"
    )
    assert gradcheck(doubled, (x,), raise_exception=False) is False


def test_gradcheck_several_outputs_and_inputs():
    x, y = f64([1.0, 2.0]), f64([3.0])

    def bad(a, b):
        out = a * b
        out.register_hook(lambda g: g * 2)
        return out.sum(), a.sum()

    with pytest.raises(GradcheckError) as info:
        gradcheck(bad, (x, y))
    assert str(info.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[3.0000],\n"
        "        [3.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[6.],\n"
        "        [6.]], dtype=torch.float64)\n"
    )


def test_gradcheck_float32_warns_and_fails_like_torch(monkeypatch: pytest.MonkeyPatch):
    from adcli.autograd.config import config

    caught: list[str] = []
    monkeypatch.setattr(config, "warn", caught.append)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a: a * a, (x,))
    assert caught == [
        "Input #0 requires gradient and is not a double precision floating point or complex. "
        "This check will likely fail if all the inputs are not of double precision floating "
        "point or complex. "
    ]
    assert str(info.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[1.9670, 0.0000],\n"
        "        [0.0000, 3.8147]])\n"
        "analytical:tensor([[2., 0.],\n"
        "        [0., 4.]])\n"
    )


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError) as info:
        gradcheck(lambda a: a * a, (f64([1.0, 2.0], requires_grad=False),))
    assert str(info.value) == (
        "gradcheck expects at least one input tensor to require gradient, but none of them "
        "have requires_grad=True."
    )


def test_gradcheck_leaves_inputs_and_grads_alone():
    x = f64([1.0, 2.0])
    gradcheck(lambda a: (a**3).sum(), (x,))
    assert x.grad is None
    assert x.data_.tolist() == [1.0, 2.0]
    assert x._vc[0] == 0


def next_rand() -> list[float]:
    """What torch.rand(2) gives next, to 4 digits."""
    return [round(float(v), 4) for v in rng.default_generator.rand((2,), "float32")]


def test_gradgradcheck_passes_and_draws_grad_outputs_like_torch():
    x = f64([1.0, 2.0])
    rng.default_generator.manual_seed(0)
    assert gradgradcheck(lambda a: (a**3).sum(), (x,)) is True
    # torch draws the random grad_outputs from the global generator: the same numbers follow
    assert next_rand() == [0.0885, 0.132]
    assert gradgradcheck(lambda a: a.sin() * a, (x,)) is True


def test_gradgradcheck_mismatch_message_is_torchs():
    def cut(a):  # the hook cuts the gradient off its graph: no second derivative
        y = a * a * a
        y.register_hook(lambda g: g.detach())
        return y

    x = f64([1.0, 2.0])
    rng.default_generator.manual_seed(0)
    with pytest.raises(GradcheckError) as info:
        gradgradcheck(cut, (x,))
    assert str(info.value) == (
        "Jacobian mismatch for output 0 with respect to input 1,\n"
        "numerical:tensor([[ 3.0000,  0.0000],\n"
        "        [ 0.0000, 12.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[0., 0.],\n"
        "        [0., 0.]], dtype=torch.float64)\n"
    )
    rng.default_generator.manual_seed(0)
    assert gradgradcheck(cut, (x,), raise_exception=False) is False
    assert next_rand() == [0.3074, 0.6341]


def test_gradcheck_reports_no_events():
    seen = []
    engine.listeners.append(seen.append)
    try:
        gradcheck(lambda a: a * a, (f64([1.0]),))
        gradgradcheck(lambda a: a * a, (f64([1.0]),))
    finally:
        engine.listeners.remove(seen.append)
    assert seen == []


def run_script(tmp_path: Path, text: str, **options) -> tuple[str, int]:
    path = tmp_path / "s.ad"
    path.write_text(text, encoding="utf-8")
    return capture(str(path), RunOptions(quiet=True, display_name="s.ad", **options))


def test_gradcheck_from_a_script(tmp_path: Path):
    text = """\
import torch
from torch.autograd import gradcheck, gradgradcheck
x = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)
print(gradcheck(lambda a: (a * a.exp()).sum(), (x,)))
print(torch.autograd.gradgradcheck(lambda a: a ** 3, (x,)))
def bad(a):
    y = a * a
    y.register_hook(lambda g: g * 2)
    return y
print(gradcheck(bad, (x,), raise_exception=False))
gradcheck(bad, (x,))
"""
    out, code = run_script(tmp_path, text)
    assert code == 1
    assert out.startswith(
        "True\nTrue\nFalse\n"
        "s.ad:11:1: error: RuntimeError: Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[2.0000, 0.0000],\n"
    )


# ====================================================================== anomaly

NAN_SCRIPT = """\
import torch
x = torch.tensor([0., 1.], requires_grad=True)
s = torch.sqrt(x)
y = s * 0
y.sum().backward()
print(x.grad)
"""


def test_anomaly_names_the_node_and_its_line(tmp_path: Path):
    on = "import torch\ntorch.autograd.set_detect_anomaly(True)\n"
    text = NAN_SCRIPT.replace("import torch\n", on)
    out, code = run_script(tmp_path, text)
    assert code == 1
    # PyTorch's warning with the script's stack where the node was made, then its
    # sentence as it is (a script's `repr(e)` shows it so), then adcli's note
    assert out.startswith(
        "s.ad:6: UserWarning: Error detected in SqrtBackward0. Traceback of forward call "
        'that caused the error:\n  File "s.ad", line 4, in <module>\n    s = torch.sqrt(x)\n'
    )
    lines = out.splitlines()
    assert (
        "s.ad:6:1: error: RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th "
        "output."
    ) in lines
    assert "note: SqrtBackward0 was made at line 4: s = torch.sqrt(x)" in lines


def test_without_anomaly_detection_nan_flows(tmp_path: Path):
    out, code = run_script(tmp_path, NAN_SCRIPT)
    assert (out, code) == ("tensor([nan, 0.])\n", 0)
    assert engine.anomaly_check is None  # nothing is checked while it is off


def test_an_unnamed_node_shows_its_expression(tmp_path: Path):
    text = (
        "import torch\ntorch.autograd.set_detect_anomaly(True)\n"
        "x = torch.tensor([0., 1.], requires_grad=True)\n(torch.sqrt(x) * 0).sum().backward()\n"
    )
    out, code = run_script(tmp_path, text)
    assert code == 1
    assert "note: SqrtBackward0 was made at line 4: torch.sqrt(x)\n" in out


def test_infinite_gradients_are_not_anomalies(tmp_path: Path):
    text = (
        "import torch\ntorch.autograd.set_detect_anomaly(True)\n"
        "x = torch.tensor([0., 1.], requires_grad=True)\ntorch.sqrt(x).sum().backward()\n"
        "print(x.grad)\n"
    )
    assert run_script(tmp_path, text) == ("tensor([   inf, 0.5000])\n", 0)


def test_anomaly_modes(tmp_path: Path):
    text = """\
import torch
print(torch.autograd.is_anomaly_enabled())
torch.autograd.set_detect_anomaly(True, check_nan=False)
print(torch.autograd.is_anomaly_enabled())
x = torch.tensor([0., 1.], requires_grad=True)
(torch.sqrt(x) * 0).sum().backward()
torch.autograd.set_detect_anomaly(False)
with torch.autograd.set_detect_anomaly(True):
    print(torch.autograd.is_anomaly_enabled())
print(torch.autograd.is_anomaly_enabled())
with torch.autograd.detect_anomaly():
    print(torch.autograd.is_anomaly_enabled())
    (torch.sqrt(x) * 0).sum().backward()
"""
    out, code = run_script(tmp_path, text)
    assert code == 1
    assert out.splitlines()[:5] == ["False", "True", "True", "False", "True"] or (
        out.splitlines()[:4] == ["False", "True", "True", "False"]
    )
    assert (
        "s.ad:11: UserWarning: Anomaly Detection has been enabled. This mode will increase the "
        "runtime and should only be enabled for debugging.\n"
    ) in out
    assert "s.ad:13:5: error: RuntimeError: Function 'SqrtBackward0' returned nan values" in out


def test_cli_detect_anomaly(run_cli, tmp_path: Path):
    path = tmp_path / "n.ad"
    path.write_text(NAN_SCRIPT, encoding="utf-8")
    result = run_cli(["run", "-q", "--detect-anomaly", str(path)])
    assert result.exit_code == 1
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in result.stderr
    assert "made at line 3: s = torch.sqrt(x)" in result.stderr
    assert engine.anomaly_check is None  # switched off again after the run
    result = run_cli(["run", "-q", str(path)])
    assert (result.exit_code, result.stdout) == (0, "tensor([nan, 0.])\n")


def test_forced_detection_survives_the_script_switching_it_off():
    anomaly.force(True)
    anomaly.set_enabled(False)
    assert anomaly.is_anomaly_enabled()
    assert engine.anomaly_check is anomaly.check_node
    anomaly.force(False)
    assert engine.anomaly_check is None


# ====================================================================== adcli check


def check(text: str, **kw) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    opts = CheckOptions(width=100, color=False, **kw)
    code = check_text(text, "c.ad", opts, out, err)
    return code, out.getvalue(), err.getvalue()


EXACT = """\
import torch
x = torch.tensor([1.5, -0.5], requires_grad=True)
y = (x * x).sum()
y.backward()
for i in range(3):
    w = torch.tensor(0.25, requires_grad=True)
    (w * x.detach()).sum().backward()
"""


def test_check_golden_text():
    # with a power-of-two step the differences of these polynomials are exact
    code, out, err = check(EXACT, eps=2.0**-10)
    assert (code, err) == (0, "")
    assert out == (
        "gradients vs central differences in float64 (eps=0.000976562, rtol=0.001, atol=1e-05)\n"
        "\n"
        "y.backward() at line 4\n"
        "tensor  shape  checked  max abs error  max rel error  result\n"
        "────────────────────────────────────────────────────────────\n"
        "x       [2]    2        0              0              ok\n"
        "\n"
        "(w * x.detach()).sum().backward() at line 7  (3 calls)\n"
        "tensor  shape  checked  max abs error  max rel error  result\n"
        "────────────────────────────────────────────────────────────\n"
        "w       []     1        0              0              ok\n"
        "\n"
        "4 calls checked, 2 gradients: 2 ok, 0 failed\n"
    )


def test_check_full_gives_one_table_per_call():
    code, out, _ = check(EXACT, eps=2.0**-10, full=True)
    assert code == 0
    assert out.count("(w * x.detach()).sum().backward() at line 7\n") == 3
    assert "w@2 " in out and "w@3 " in out


def test_check_fails_on_a_hook_that_doubles_a_gradient():
    text = """\
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * x
y.register_hook(lambda g: g * 2)
y.sum().backward()
"""
    code, out, _ = check(text)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("x "))
    assert row.split()[-1] == "FAIL"
    assert (
        "note: a hook on y changed the gradient that flowed into it: the result is no longer "
        "the derivative"
    ) in out
    assert out.rstrip().endswith("1 call checked, 1 gradient: 0 ok, 1 failed")


def test_check_fails_on_a_hook_on_a_leaf():
    text = (
        "import torch\nw = torch.tensor([0.5, -3.0], requires_grad=True)\n"
        "w.register_hook(lambda g: g.clamp(-1.0, 1.0))\n(w ** 2).sum().backward()\n"
    )
    code, out, _ = check(text)
    assert code == 1
    assert "FAIL (1 of 2) (hook)" in out
    assert "a hook on w changed its gradient" in out


def test_check_kinks_are_not_failures():
    text = """\
import torch
a = torch.tensor([0., 1., -2.], requires_grad=True)
torch.relu(a).sum().backward()
b = torch.tensor([0., 3., -1.], requires_grad=True)
(b.abs() + b.clamp(0, 3)).sum().backward()
s = torch.tensor([0., 4.], requires_grad=True)
s.sqrt().sum().backward()
m = torch.tensor([1., 3., 3.], requires_grad=True)
m.max().backward()
"""
    code, out, _ = check(text)
    assert code == 0, out
    assert "a       [3]    3" in out and "ok (1 at a kink)" in out
    assert "ok (2 at a kink)" in out
    assert "FAIL" not in out
    assert out.rstrip().endswith("4 calls checked, 4 gradients: 4 ok (3 with kinks), 0 failed")


def test_check_second_derivatives():
    text = """\
import torch
a = torch.tensor([0.5, -1.0], requires_grad=True)
b = torch.tensor(2.0, requires_grad=True)
ga, gb = torch.autograd.grad((a.sin() * b).sum() + b ** 3, [a, b], create_graph=True)
(ga.sum() + gb).backward()
"""
    code, out, _ = check(text)
    assert code == 0, out
    assert "second derivatives (finite differences of the gradient)" in out
    rows = [line.split() for line in out.splitlines()]
    blocks = [r[:3] + [r[-1]] for r in rows if len(r) >= 4 and r[0] in "ab" and r[1] in "ab"]
    assert blocks == [
        ["a", "a", "[2,", "ok"],
        ["a", "b", "[2]", "ok"],
        ["b", "a", "[2]", "ok"],
        ["b", "b", "[]", "ok"],
    ]
    assert out.rstrip().endswith("2 calls checked, 8 gradients: 8 ok, 0 failed")


def test_check_catches_a_wrong_backward(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(F.Exp, "backward", staticmethod(lambda ctx, g: (g * 2,)))
    code, out, _ = check(
        "import torch\nx = torch.tensor([0.5, 1.0], requires_grad=True)\nx.exp().sum().backward()\n"
    )
    assert code == 1
    assert "FAIL" in out


def test_check_catches_a_wrong_double_backward(monkeypatch: pytest.MonkeyPatch):
    from adcli.autograd.tensor import Tensor

    def sin_backward(ctx, g):  # right values, but cos(x) enters as a constant
        (a,) = ctx.saved_tensors
        return (g * Tensor._make(np.cos(a.data_)),)

    monkeypatch.setattr(F.Sin, "backward", staticmethod(sin_backward))
    text = (
        "import torch\nx = torch.tensor([0.5, 1.0], requires_grad=True)\n"
        "g, = torch.autograd.grad(x.sin().sum(), x, create_graph=True)\n"
    )
    code, out, _ = check(text)
    assert code == 1
    lines = out.splitlines()
    first = next(line for line in lines if line.startswith("x "))
    second = next(line for line in lines if line.startswith("x  x "))
    assert first.split()[-1] == "ok"
    assert second.endswith("FAIL (2 of 4)")  # the diagonal; the zeros off it agree


def test_check_vector_jacobian_products_and_inputs():
    text = """\
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
w = torch.tensor(0.5, requires_grad=True)
y = x * x * w
y.backward(gradient=torch.tensor([1., 0.1, 0.01]), retain_graph=True)
y.sum().backward(inputs=[w])
h = x * 2
z = (h ** 2).sum()
gh, gx = torch.autograd.grad(z, [h, x])
"""
    code, out, _ = check(text)
    assert code == 0, out
    assert out.rstrip().endswith("3 calls checked, 5 gradients: 5 ok, 0 failed")
    assert re.search(r"^h +\[3\] +3 ", out, re.M)


def test_check_training_loop_checks_each_step():
    text = """\
import torch
torch.manual_seed(0)
X = torch.randn(8, 3)
t = torch.randn(8)
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(5):
    loss = ((X @ w - t) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    code, out, _ = check(text)
    assert code == 0, out
    assert "loss.backward() at line 10  (5 calls)" in out


def test_check_samples_only_large_tensors():
    text = "import torch\nx = torch.ones(50, requires_grad=True)\n(x * x).sum().backward()\n"
    code, out, _ = check(text, max_elements=7)
    assert code == 0
    assert re.search(r"^x +\[50\] +7 of 50 ", out, re.M)


def test_check_script_error_after_checks():
    code, out, err = check(EXACT + "y.backward()\n", eps=2.0**-10)
    assert code == 1
    assert "x       [2]    2        0" in out
    assert err.startswith("c.ad:8:1: error: RuntimeError: Trying to backward through the graph")


def test_check_nothing_to_check():
    code, out, _ = check("x = 1\n")
    assert code == 0
    assert out.endswith("the script made no backward() or autograd.grad() call: nothing to check\n")


def test_check_of_a_script_that_fails_before_any_backward():
    code, out, err = check("x = 1\ny = x / 0\n")
    assert code == 1
    assert out.endswith(
        "the script stopped before any backward() or autograd.grad() call: nothing to check\n"
    )
    assert err.startswith("c.ad:2:5: error: ZeroDivisionError: division by zero")


def test_check_restores_function_apply():
    original = Function.__dict__["apply"]
    check(EXACT)
    check("x = (\n")
    assert Function.__dict__["apply"] is original


def test_check_reports_graphs_it_cannot_replay():
    from adcli.core.checker import Checker

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()  # made without recording
    checker = Checker(CheckOptions())
    engine.listeners.append(lambda e: checker.on_event(e, None, "y.backward()"))
    try:
        y.backward()
    finally:
        engine.listeners.pop()
    (cc,) = checker.checks
    assert cc.skipped == "SumBackward0 was made before checking started"


SAMPLES = sorted((REPO / "samples").glob("*.ad"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_check_every_sample(path: Path):
    text = path.read_text(encoding="utf-8")
    code, out, err = check(text)
    # every sample's gradients are the true derivatives (hooks that change a
    # gradient, which check rightly fails, live in tests/golden/hooks/)
    assert "not checked" not in out
    assert "internal error" not in err
    assert "FAIL" not in out, out
    assert code == 0, err


def test_cli_check(run_cli, tmp_path: Path):
    path = tmp_path / "c.ad"
    path.write_text(EXACT, encoding="utf-8")
    result = run_cli(["check", str(path), "--eps", str(2.0**-10)])
    assert result.exit_code == 0
    assert "x       [2]    2        0              0              ok" in result.stdout
    result = run_cli(["check", str(path), "--eps", "0"])
    assert result.exit_code == 2
    assert result.stderr == "adcli: error: --eps must be a positive number, not 0.0\n"
    result = run_cli(["check", str(tmp_path / "missing.ad")])
    assert result.exit_code == 2
    path.write_text(
        "import torch\nx = torch.ones(2, requires_grad=True)\ny = x * x\n"
        "y.register_hook(lambda g: g * 2)\ny.sum().backward()\n",
        encoding="utf-8",
    )
    result = run_cli(["check", str(path)])
    assert result.exit_code == 1
    assert "FAIL" in result.stdout
    result = run_cli(["check", "-h"])
    assert result.exit_code == 0
    for option in ("--eps", "--rtol", "--atol", "--max-elements", "--full"):
        assert option in result.stdout
