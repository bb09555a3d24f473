"""Errors and edge behaviour compared with PyTorch 2.13 (and Python 3.11).

Each scenario is written once against a torch-like module `m` and a recorder `r`,
and run twice: with torch itself and with the `torch` module an adcli script sees
(`adcli.core.session.build_modules()["torch"]`). The two transcripts must be equal line
for line: reprs (addresses masked), gradients, `grad_fn` names, error types (the
nearest builtin class, as a script's `except` sees it) and sentences word for
word, and the UserWarnings emitted.

Script-level behaviour (what `except RuntimeError as e` binds, exit status, the
diagnostic with `file:line:col` and a caret, what reaches stderr) is checked by
running the same text through `adcli.core.runner.run_text` (or the `adcli` command in
a child process) and through Python with torch.

Covered: dim 0/-1 reductions of 0-d tensors (values, grads, grad_fn names, the
out-of-range error), var/std without degrees of freedom, the second backward
through freed saved values as a plain RuntimeError, mixed-dtype matrix products,
`torch.autograd.grad`/`backward` argument errors, index assignment and reading
out of range, in-place on a leaf through `w[:]`, operators with a non-tensor
operand (`w -= w.grad` when `.grad` is None), integer division by zero, Python's
integer digit limit (literals, `int()`, `str()`), and NumPy's RuntimeWarnings
(never shown: PyTorch's own UserWarnings instead).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from adcli.autograd.config import _default_warn, config  # noqa: E402
from adcli.core.options import RunOptions  # noqa: E402
from adcli.core.runner import run_text  # noqa: E402
from adcli.core.session import build_modules  # noqa: E402

pytestmark = pytest.mark.torch

torch.set_num_threads(1)

AD = build_modules()["torch"]  # the module a script's `import torch` binds
REPO = Path(__file__).resolve().parents[2]

_ADDR = re.compile(r"0x[0-9a-fA-F]+")


@pytest.fixture(autouse=True)
def _python_warnings() -> Any:
    """adcli's UserWarnings go through Python's warnings module here, like torch's."""
    saved = config.warn
    config.warn = _default_warn
    yield
    config.warn = saved


# ************************************************************ running a scenario


def kind(e: BaseException) -> str:
    """The builtin class an exception shows as (what a script's `except` matches)."""
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


def fmt(v: Any) -> str:
    """A library-neutral text for a value (addresses masked)."""
    if isinstance(v, (tuple, list)) and not hasattr(v, "indices"):
        inner = ", ".join(fmt(x) for x in v)
        return f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, float):
        return repr(round(v, 5))
    return _ADDR.sub("0x...", repr(v))


class Rec:
    """What a scenario observed, line by line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, *values: Any) -> None:
        self.lines.append(" | ".join(fmt(v) for v in values))

    def err(self, fn: Callable[[], Any]) -> Any:
        """Run fn; record its error (class and exact text) or 'ok'."""
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001
            self.lines.append(f"{kind(e)}: {e}")
            return None
        self.lines.append("ok")
        return out


Scenario = Callable[[Any, Rec], None]


def transcript(scenario: Scenario, m: Any) -> list[str]:
    """Everything the scenario recorded with module `m`, its warnings, its error."""
    r = Rec()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            scenario(m, r)
        except Exception as e:  # noqa: BLE001
            r.lines.append(f"raised {kind(e)}: {e}")
    torch.set_grad_enabled(True)
    r.lines += [f"warning: {w.message}" for w in caught if w.category is UserWarning]
    return r.lines


def same_as_torch(scenario: Scenario) -> None:
    """The scenario records the same lines under torch and under adcli."""
    expected = transcript(scenario, torch)
    actual = transcript(scenario, AD)
    assert actual == expected


def grads(m: Any, r: Rec, y: Any, x: Any) -> None:
    """Record dy/dx (created as a graph) and, when it has one, its own derivative."""
    v = y[0] if isinstance(y, tuple) else y
    if not v.requires_grad:
        return
    (g,) = m.autograd.grad(v.sum(), x, create_graph=True)
    r(g)
    if g.requires_grad:
        r(m.autograd.grad(g.sum(), x, allow_unused=True))


# ************************************************************ running a script


def run_adcli(text: str, *, json_mode: bool = False, name: str = "s.ad") -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of adcli running `text` in this process."""
    out, err = io.StringIO(), io.StringIO()
    streams = types.SimpleNamespace(out=out, err=err)
    opts = RunOptions(quiet=not json_mode, json=json_mode, color=False, width=100)
    code = run_text(text, name, opts, streams)
    return code, out.getvalue(), err.getvalue()


def run_python(text: str) -> tuple[str, BaseException | None, list[warnings.WarningMessage]]:
    """(stdout, the uncaught error, the warnings) of `text` run by Python with torch."""
    out = io.StringIO()
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(text, "s.ad", "exec"), {"__name__": "__main__"})
            except Exception as e:  # noqa: BLE001 - the script's own error
                error = e
    torch.set_grad_enabled(True)
    return out.getvalue(), error, list(caught)


# ************************************************************ 0-d reductions

_REDUCTIONS: dict[str, Callable[[Any, Any, int], Any]] = {
    "sum": lambda m, x, d: x.sum(d),
    "sum_keepdim": lambda m, x, d: x.sum(d, keepdim=True),
    "sum_list": lambda m, x, d: x.sum([d]),
    "torch_sum": lambda m, x, d: m.sum(x, d),
    "mean": lambda m, x, d: x.mean(d),
    "mean_keepdim": lambda m, x, d: x.mean(d, True),
    "prod": lambda m, x, d: x.prod(d),
    "prod_keepdim": lambda m, x, d: x.prod(d, True),
    "amax": lambda m, x, d: x.amax(d),
    "amin": lambda m, x, d: x.amin(d),
    "max": lambda m, x, d: x.max(d),
    "max_keepdim": lambda m, x, d: x.max(d, keepdim=True),
    "min": lambda m, x, d: m.min(x, d),
    "argmax": lambda m, x, d: x.argmax(d),
    "argmin": lambda m, x, d: x.argmin(d, keepdim=True),
    "logsumexp": lambda m, x, d: x.logsumexp(d),
    "logsumexp_keepdim": lambda m, x, d: x.logsumexp(d, keepdim=True),
    "softmax": lambda m, x, d: x.softmax(d),
    "log_softmax": lambda m, x, d: m.nn.functional.log_softmax(x, dim=d),
    "cumsum": lambda m, x, d: x.cumsum(d),
    "torch_cumsum": lambda m, x, d: m.cumsum(x, dim=d),
    "norm": lambda m, x, d: x.norm(dim=d),
    "norm_p1": lambda m, x, d: x.norm(p=1, dim=d),
    "std_correction0": lambda m, x, d: x.std(d, correction=0),
    "var_unbiased_false": lambda m, x, d: x.var(d, unbiased=False),
    "std": lambda m, x, d: x.std(d),
    "var": lambda m, x, d: x.var(d),
    "all": lambda m, x, d: x.all(d),
    "any": lambda m, x, d: x.any(d),
}


@pytest.mark.parametrize("dim", [0, -1, 1, -2])
@pytest.mark.parametrize("op", sorted(_REDUCTIONS))
def test_zero_dim_reduction_over_dim(op: str, dim: int) -> None:
    """torch treats a 0-d tensor as one element along dim 0/-1 (shape stays []),
    and names any other dim out of range."""

    def scenario(m: Any, r: Rec) -> None:
        x = m.tensor(2.5, dtype=m.float64, requires_grad=True)
        y = _REDUCTIONS[op](m, x, dim)
        r(y)
        r(y[0].shape if isinstance(y, tuple) else y.shape)
        grads(m, r, y, x)

    same_as_torch(scenario)


@pytest.mark.parametrize("value", [0.0, float("inf"), float("nan")])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp", "cumsum", "max", "prod"])
def test_zero_dim_reduction_special_values(op: str, value: float) -> None:
    def scenario(m: Any, r: Rec) -> None:
        x = m.tensor(value, requires_grad=True)
        y = _REDUCTIONS[op](m, x, 0)
        r(y)
        grads(m, r, y, x)

    same_as_torch(scenario)


@pytest.mark.parametrize("dims", [(0, 0), (0, -1), (1, 0, 1), (0, 5)])
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_repeated_dims_in_a_list(shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    def scenario(m: Any, r: Rec) -> None:
        x = m.ones(shape, requires_grad=True)
        for name in ("sum", "mean", "amax", "logsumexp", "std"):
            r.err(lambda name=name: getattr(x, name)(dims))

    same_as_torch(scenario)


@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": 0, "correction": 2}, {"correction": 0}])
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 1)])
@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_std_without_degrees_of_freedom(fn: str, shape: tuple[int, ...], kw: dict) -> None:
    """NaN, PyTorch's UserWarning, and PyTorch's gradient (no ZeroDivisionError)."""

    def scenario(m: Any, r: Rec) -> None:
        x = m.full(shape, 2.0, dtype=m.float64, requires_grad=True)
        y = getattr(x, fn)(**kw)
        r(y)
        grads(m, r, y, x)

    same_as_torch(scenario)


# ************************************************************ freed saved values

_SECOND_BACKWARD = """import torch
x = torch.tensor(2.0, requires_grad=True)
y = x * x
y.backward()
try:
    y.backward()
except RuntimeError as e:
    print(repr(e))
z = x.exp()
z.backward()
z.backward()
"""


def test_second_backward_is_a_plain_runtime_error() -> None:
    """`except RuntimeError as e` binds a RuntimeError (its repr says so), and the
    uncaught one is a RuntimeError with PyTorch's sentence, plus adcli's note."""
    out_t, err_t, _ = run_python(_SECOND_BACKWARD)
    code, out, err = run_adcli(_SECOND_BACKWARD)
    assert out == out_t
    assert out.startswith("RuntimeError('Trying to backward through the graph a second time")
    assert code == 1
    assert err_t is not None
    head = err.splitlines()[0]
    assert head == f"s.ad:11:1: error: RuntimeError: {err_t}"
    assert "note: ExpBackward0 (line 9) saved values that the backward at line 10 freed" in err
    code, out, _ = run_adcli(_SECOND_BACKWARD, json_mode=True)
    error = json.loads(out)["error"]
    assert (error["kind"], error["message"]) == (type(err_t).__name__, str(err_t))


def test_reraised_saved_tensor_error_keeps_the_note() -> None:
    text = """import torch
x = torch.tensor(2.0, requires_grad=True)
z = x.exp()
z.backward()
try:
    z.backward()
except RuntimeError as e:
    raise e
"""
    code, _, err = run_adcli(text)
    assert code == 1
    assert err.startswith("s.ad:8:5: error: RuntimeError: Trying to backward through the graph")
    assert "note: ExpBackward0 (line 3) saved values that the backward at line 4 freed" in err


def test_caught_numpy_error_shows_as_its_builtin_class() -> None:
    """A host library's own exception class never reaches a script under its name."""
    from adcli.autograd.node import SavedTensorError
    from adcli.lang.evaluator import _script_exception

    shown = _script_exception(SavedTensorError("boom", None))  # type: ignore[arg-type]
    assert type(shown) is RuntimeError and str(shown) == "boom"
    assert isinstance(shown.__cause__, SavedTensorError)
    plain = ValueError("x")
    assert _script_exception(plain) is plain
    import numpy as np

    axis = _script_exception(np.exceptions.AxisError(2, 1))
    assert type(axis) is ValueError
    assert str(axis) == "axis 2 is out of bounds for array of dimension 1"


# ************************************************************ mixed dtypes in products

_D = {"f32": "float32", "f64": "float64", "i64": "int64", "f16": "float16", "b": "bool"}


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((2, 2), (2, 2)),
        ((2, 2), (2,)),
        ((2,), (2, 2)),
        ((2,), (2,)),
        ((3, 2, 2), (2, 2)),
        ((2, 2), (3, 2, 2)),
        ((3, 2, 2), (2,)),
        ((2,), (3, 2, 2)),
        ((3, 2, 2), (3, 2, 2)),
    ],
)
@pytest.mark.parametrize(("da", "db"), [("f64", "f32"), ("f32", "f64"), ("i64", "f32")])
def test_matmul_of_mixed_dtypes(sa: tuple, sb: tuple, da: str, db: str) -> None:
    def scenario(m: Any, r: Rec) -> None:
        a = m.ones(sa, dtype=getattr(m, _D[da]))
        b = m.ones(sb, dtype=getattr(m, _D[db]))
        r.err(lambda: a @ b)
        r.err(lambda: m.matmul(a, b))

    same_as_torch(scenario)


@pytest.mark.parametrize("other", ["f64", "f16", "i64", "b"])
@pytest.mark.parametrize("first", [True, False])
def test_mm_mv_dot_of_mixed_dtypes(other: str, first: bool) -> None:
    def scenario(m: Any, r: Rec) -> None:
        dt = getattr(m, _D[other])
        mat, vec = m.ones(2, 2), m.ones(2)
        omat, ovec = m.ones(2, 2, dtype=dt), m.ones(2, dtype=dt)
        if first:  # float32 first
            calls = [(m.mm, mat, omat), (m.mv, mat, ovec), (m.dot, vec, ovec)]
        else:
            calls = [(m.mm, omat, mat), (m.mv, omat, vec), (m.dot, ovec, vec)]
        for f, a, b in calls:
            r.err(lambda f=f, a=a, b=b: f(a, b))
        # dot checks dtypes before sizes; mm and mv check shapes first
        r.err(lambda: m.dot(m.ones(3), ovec))
        r.err(lambda: m.mm(m.ones(2, 3), omat))

    same_as_torch(scenario)


@pytest.mark.parametrize(
    "dts",
    [("f64", "f32", "f32"), ("f32", "f64", "f32"), ("f32", "f32", "f64"), ("i64", "f32", "f32")],
)
@pytest.mark.parametrize("xshape", [(2, 2), (3, 2, 2), (2,)])
def test_linear_with_mixed_dtypes(dts: tuple[str, str, str], xshape: tuple[int, ...]) -> None:
    bias_dt, x_dt, w_dt = dts

    def scenario(m: Any, r: Rec) -> None:
        x = m.ones(xshape, dtype=getattr(m, _D[x_dt]))
        w = m.ones(2, 2, dtype=getattr(m, _D[w_dt]))
        b = m.ones(2, dtype=getattr(m, _D[bias_dt]))
        r.err(lambda: m.nn.functional.linear(x, w, b))
        r.err(lambda: m.nn.functional.linear(x, w))

    same_as_torch(scenario)


# ************************************************************ autograd.grad / backward


def _grad_cases(m: Any) -> dict[str, Callable[[], Any]]:
    x = m.tensor(2.0, requires_grad=True)
    c = m.tensor(3.0)
    grad, backward = m.autograd.grad, m.autograd.backward
    return {
        "output without grad": lambda: grad(c * 2, x),
        "output and input without grad": lambda: grad(c, c),
        "input without grad": lambda: grad(x * 2, c),
        "one input without grad": lambda: grad(x * 2, [x, c]),
        "unused input": lambda: grad(x * 2, [x, m.tensor(1.0, requires_grad=True)]),
        "unused first input": lambda: grad(x * 2, [m.tensor(1.0, requires_grad=True), x]),
        "allow_unused": lambda: grad(
            x * 2, [m.tensor(1.0, requires_grad=True), x], allow_unused=True
        ),
        "materialize_grads": lambda: grad(
            x * 2, [x, m.tensor(1.0, requires_grad=True)], materialize_grads=True
        ),
        "materialize without allow_unused": lambda: grad(
            x * 2, x, materialize_grads=True, allow_unused=False
        ),
        "second output without grad": lambda: grad([x * 2, c * 2], x),
        "non-scalar output": lambda: grad(x * m.ones(2), x),
        "non-scalar output without grad": lambda: grad(c * m.ones(2), c),
        "non-scalar before one without grad": lambda: grad([c, x * m.ones(2)], x),
        "empty inputs": lambda: grad(x * 2, []),
        "empty inputs, output without grad": lambda: grad(c, []),
        "an int input": lambda: grad(x * 2, [3]),
        "an int input after one without grad": lambda: grad(x * 2, [c, 3]),
        "an int input before one without grad": lambda: grad(x * 2, [3, c]),
        "inputs an int": lambda: grad(x * 2, 3),
        "outputs an int": lambda: grad(3, [x]),
        "outputs a list with an int": lambda: grad([3], [x]),
        "grad_outputs an int": lambda: grad(x * 2, x, grad_outputs=[3]),
        "grad_outputs a float": lambda: grad(x * 2, x, grad_outputs=3.0),
        "grad_outputs of the wrong shape": lambda: grad(x * 2, x, grad_outputs=[m.ones(2)]),
        "fewer grad_outputs": lambda: grad([x * 2, x * 3], x, [m.tensor(1.0)]),
        "backward without grad": lambda: (c * 2).backward(),
        "backward, non-scalar without grad": lambda: (c * m.ones(2)).backward(),
        "backward of a list with an int": lambda: backward([x * 2, 3]),
        "backward of an int": lambda: backward(3),
        "backward, empty inputs": lambda: (x * 2).backward(inputs=[]),
        "backward, empty inputs, no grad": lambda: c.backward(inputs=[]),
        "backward, input without grad": lambda: (x * 2).backward(inputs=[c]),
        "backward, an int input": lambda: (x * 2).backward(inputs=[x, 3]),
        "backward, inputs an int": lambda: (x * 2).backward(inputs=3),
        "backward, gradient a float": lambda: (x * 2).backward(3.0),
        "backward, gradient a list of floats": lambda: (x * 2).backward([3.0]),
        "backward, fewer gradients": lambda: backward([x * 2, x * 3], [m.tensor(1.0)]),
        "backward of a no_grad view": lambda: _no_grad_view(m, x).backward(),
        "grad of a no_grad view": lambda: grad(_no_grad_view(m, x), x),
    }


def _no_grad_view(m: Any, x: Any) -> Any:
    """A view made under no_grad of a tensor that requires grad: requires_grad is
    True, but it leads into no graph."""
    with m.no_grad():
        return x.unsqueeze(-1)


@pytest.mark.parametrize("case", sorted(_grad_cases(torch)))
def test_autograd_argument_errors(case: str) -> None:
    def scenario(m: Any, r: Rec) -> None:
        r(r.err(_grad_cases(m)[case]))

    same_as_torch(scenario)


def test_a_target_that_never_runs_keeps_its_saved_values() -> None:
    """grad(y, [y]) does not run y's node: PyTorch frees nothing it did not run, so
    y.backward() still works; a node that did run has freed its values."""

    def scenario(m: Any, r: Rec) -> None:
        x = m.tensor(3.0, requires_grad=True)
        y = x * x
        r(m.autograd.grad(y, [y]))
        r.err(y.backward)
        r(x.grad)
        z = x.exp()
        w = z * z
        r(m.autograd.grad(w, [z, w]))
        r.err(w.backward)

    same_as_torch(scenario)


# ************************************************************ indexing out of range

_READS = [
    "x[3]",
    "x[-4]",
    "x[2]",
    "x[0, 0]",
    "x[None, None, 5]",
    "x[::-1]",
    "x[::0]",
    "x[[0, 5]]",
    "x[torch.tensor([0, 5])]",
    "x[torch.tensor(5)]",
    "x[torch.tensor([-4])]",
    "m[2]",
    "m[-3]",
    "m[1, 3]",
    "m[0, -4]",
    "m[:, 3]",
    "m[..., 3]",
    "m[None, 2]",
    "m[:, None, 3]",
    "m[0][3]",
    "m[[0, 1], 3]",
    "m[2, [0, 1]]",
    "m[[0, 1], [0, 5]]",
    "m[[0, 2], :]",
    "s[0]",
    "s[-1]",
    "s[0:1]",
    "s[:]",
    "s[None, 0]",
]


@pytest.mark.parametrize("expr", _READS)
def test_reading_out_of_range(expr: str) -> None:
    def scenario(m: Any, r: Rec) -> None:
        env = {"torch": m, "x": m.zeros(3), "m": m.zeros(2, 3), "s": m.tensor(1.0)}
        r(r.err(lambda: eval(expr, env)))  # noqa: S307 - test expressions only

    same_as_torch(scenario)


_WRITES = [
    "x[3] = 1.0",
    "x[-4] = 1.0",
    "m[2] = 1.0",
    "m[1, 3] = 1.0",
    "m[:, 3] = 1.0",
    "m[0, -4] = 1.0",
    "x[[0, 5]] = 1.0",
    "x[torch.tensor([0, 5])] = 1.0",
    "m[[0, 1], [0, 3]] = 1.0",
    "m[torch.tensor([2])] = 1.0",
    "s[0] = 2.0",
    "x[:] = torch.ones(2)",
    "x[0] = torch.ones(2)",
    "x[:] = torch.ones(1, 3)",
    "x[:] = 'a'",
    "x[0] = None",
    "x[5:] = 1.0",
    "x[:] = [1.0, 2.0, 3.0]",
    "x[:] = (1.0, 2.0, 3.0)",
]


@pytest.mark.parametrize("stmt", _WRITES)
def test_assigning_out_of_range(stmt: str) -> None:
    def scenario(m: Any, r: Rec) -> None:
        env = {"torch": m, "x": m.zeros(3), "m": m.zeros(2, 3), "s": m.tensor(1.0)}
        r.err(lambda: exec(stmt, env))  # noqa: S102 - test statements only
        if "[[" not in stmt and "([" not in stmt:
            # (PyTorch's index_put_ has already written the elements before a bad index)
            r(env["x"], env["m"])

    same_as_torch(scenario)


_LEAF_WRITES = [
    ("w", ":"),
    ("w", "..."),
    ("w", "0:3"),
    ("w", "0:"),
    ("w", ":100"),
    ("w", "::1"),
    ("w", "-3:"),
    ("w", "None"),
    ("w", "0:2"),
    ("w", "::2"),
    ("w", "0"),
    ("w", "3"),
    ("w", "0, 0"),
    ("w", "torch.tensor([0, 1])"),
    ("w", "torch.tensor([True, False, True])"),
    ("w", "[0, 5]"),
    ("w", "True"),
    ("w", "False"),
    ("w", "torch.tensor(True)"),
    ("w", "0, torch.tensor(True)"),
    ("m", ":"),
    ("m", ":, :"),
    ("m", "..., :"),
    ("m", "0:2, :"),
    ("m", "0:2, 0:3"),
    ("m", ":, 0"),
    ("m", "None, :"),
]


@pytest.mark.parametrize(("name", "index"), _LEAF_WRITES)
@pytest.mark.parametrize("value", ["1.0", "torch.ones(2)", "'a'"])
def test_assigning_into_a_leaf_that_requires_grad(name: str, index: str, value: str) -> None:
    """`w[:] = 1.0` changes the leaf itself (PyTorch's message says so); `w[0] = 1.0`
    changes a view of it; bad values and indices fail first."""

    def scenario(m: Any, r: Rec) -> None:
        env = {
            "torch": m,
            "w": m.ones(3, requires_grad=True),
            "m": m.ones(2, 3, requires_grad=True),
        }
        r.err(lambda: exec(f"{name}[{index}] = {value}", env))  # noqa: S102
        with m.no_grad():
            r.err(lambda: exec(f"{name}[{index}] = 2.0", env))  # noqa: S102
        if "5" not in index:  # (PyTorch's index_put_ writes the elements before a bad one)
            r(env[name])

    same_as_torch(scenario)


# ************************************************************ operators and None

_OPERANDS = ["None", "'a'", "[1.0]", "(1.0,)"]
_BINARY = ["+", "-", "*", "/", "//", "%", "**", "@", "<", ">=", "&"]
_INPLACE = ["+=", "-=", "*=", "/=", "**=", "//=", "%=", "@="]


@pytest.mark.parametrize("operand", _OPERANDS)
@pytest.mark.parametrize("op", _BINARY)
def test_operator_with_a_non_tensor(op: str, operand: str) -> None:
    """Python's own TypeError, as torch's operators give it."""

    def scenario(m: Any, r: Rec) -> None:
        env = {"w": m.ones(2), "b": m.ones(2, dtype=m.bool)}
        t = "b" if op == "&" else "w"
        r(r.err(lambda: eval(f"{t} {op} {operand}", env)))  # noqa: S307
        r(r.err(lambda: eval(f"{operand} {op} {t}", env)))  # noqa: S307

    same_as_torch(scenario)


@pytest.mark.parametrize("operand", ["None", "'a'"])
@pytest.mark.parametrize("op", _INPLACE)
def test_inplace_operator_with_a_non_tensor(op: str, operand: str) -> None:
    """`w -= None` on a leaf that requires grad: the operand's TypeError comes first."""

    def scenario(m: Any, r: Rec) -> None:
        env = {"w": m.ones(2, requires_grad=True), "v": m.ones(2)}
        r.err(lambda: exec(f"w {op} {operand}", env))  # noqa: S102
        r.err(lambda: exec(f"v {op} {operand}", env))  # noqa: S102
        r(env["w"], env["v"])

    same_as_torch(scenario)


_GRAD_NONE = """import torch
w = torch.ones(3, requires_grad=True)
print(w.grad)
with torch.no_grad():
    w -= w.grad
"""


def test_sgd_step_before_backward_in_a_script() -> None:
    """`w -= w.grad` while `.grad` is None: Python's TypeError for `-=`, with the line."""
    out_t, err_t, _ = run_python(_GRAD_NONE)
    code, out, err = run_adcli(_GRAD_NONE)
    assert out == out_t
    assert code == 1
    assert err_t is not None
    assert err.splitlines()[:3] == [
        f"s.ad:5:5: error: TypeError: {err_t}",
        "  5 |     w -= w.grad",
        "    |     ^~~~~~~~~~~",
    ]


# ************************************************************ integer division by zero


@pytest.mark.parametrize(
    "expr",
    [
        "i // 0",
        "i % 0",
        "i // torch.zeros(2, dtype=torch.int64)",
        "torch.remainder(i, 0)",
        "torch.floor_divide(i, 0)",
        "torch.div(i, 0, rounding_mode='floor')",
        "i / 0",
        "i.float() // 0",
        "i.float() % 0",
    ],
)
def test_integer_division_by_zero(expr: str) -> None:
    def scenario(m: Any, r: Rec) -> None:
        env = {"torch": m, "i": m.tensor([3, -3])}
        r(r.err(lambda: eval(expr, env)))  # noqa: S307

    same_as_torch(scenario)


# ************************************************************ Python's digit limit


def _python_literal_error(text: str) -> SyntaxError:
    try:
        compile(text, "s.ad", "exec")
    except SyntaxError as e:
        return e
    raise AssertionError("Python accepted the literal")


@pytest.mark.parametrize("digits", [4301, 5000])
def test_integer_literal_over_the_digit_limit(digits: int) -> None:
    """Python's own SyntaxError, with adcli's file:line:col and a caret."""
    text = "import torch\nx = " + "1" * digits + "\nprint(x)\n"
    expected = _python_literal_error(text)
    code, out, err = run_adcli(text)
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"s.ad:2:5: error: SyntaxError: {expected.msg}"
    assert lines[1].startswith("  2 | x = 111")
    assert lines[2].startswith("    |     ^~~")
    assert "internal error" not in err
    code, out, _ = run_adcli(text, json_mode=True)
    error = json.loads(out)["error"]
    assert (error["kind"], error["message"], error["line"]) == ("SyntaxError", expected.msg, 2)


@pytest.mark.parametrize(
    "literal", ["1" * 4300, "0" * 5000, "0x" + "f" * 5000, "1_" * 2500 + "1", "1" * 5000 + ".0"]
)
def test_integer_literals_python_accepts(literal: str) -> None:
    text = f"x = {literal}\nprint(x > 0, x == 0)\n"
    out_t, err_t, _ = run_python(text)
    code, out, err = run_adcli(text)
    assert err_t is None
    assert (code, out, err) == (0, out_t, "")


_CONVERSIONS = """n = 0
try:
    n = int('1' * 5000)
except ValueError as e:
    print("int:", e)
try:
    s = str(10 ** 5000)
except ValueError as e:
    print("str:", e)
try:
    print(10 ** 5000)
except ValueError as e:
    print("print:", e)
try:
    s = f"{10 ** 5000}"
except ValueError as e:
    print("f-string:", e)
print(len(str(int('1' * 4300))))
big = 10 ** 5000
s = str(big)
"""


def test_int_and_str_over_the_digit_limit() -> None:
    """Python's ValueError inside a script (caught, or reported with its line)."""
    out_t, err_t, _ = run_python(_CONVERSIONS)
    code, out, err = run_adcli(_CONVERSIONS)
    assert out == out_t
    assert err_t is not None
    assert code == 1
    assert err.splitlines()[0] == f"s.ad:20:5: error: ValueError: {err_t}"
    code, out, _ = run_adcli(_CONVERSIONS.replace("s = str(big)\n", ""), json_mode=True)
    obj = json.loads(out)
    assert (code, obj["ok"], obj["variables"]["big"]) == (0, True, {"type": "int"})


# ************************************************************ NumPy warnings

_NUMERICS = """import torch
z = torch.tensor(0.0, requires_grad=True)
print(z / z, 1 / z, -1 / z)
print(torch.log(z), torch.log(torch.tensor(-1.0)), torch.log1p(torch.tensor(-2.0)))
print(torch.exp(torch.tensor(1000.0)), torch.exp(torch.tensor([1000.0], dtype=torch.float64)))
print(torch.sqrt(torch.tensor(-1.0)), torch.tensor(-8.0) ** 0.5, torch.tensor(-8.0) ** (1 / 3))
big = torch.full((2, 2), 1e30)
print(big @ big, torch.mm(big, big), big * big, torch.tensor(3e38) + torch.tensor(3e38))
print(torch.tensor([0.0, -1.0]) ** -1, torch.pow(torch.tensor(0.0), -2.0))
y = torch.log(z) + torch.sqrt(z) + z ** 0.5
y.backward()
print(z.grad)
a = torch.tensor([0.0, 2.0, -1.0], requires_grad=True)
(a ** a + a.sqrt() + a.log() + 1 / a).sum().backward()
print(a.grad)
print(torch.sigmoid(torch.tensor([-1000.0, 1000.0])), torch.softmax(torch.tensor([1e30, -1e30]), 0))
print(torch.tensor([float('inf')]) - torch.tensor([float('inf')]), torch.tensor([float('inf')]) * 0)
print(torch.sin(torch.tensor(float('inf'))), torch.tan(torch.tensor(float('inf'))))
print(torch.tensor([]).mean(), torch.tensor([]).sum(), torch.tensor([]).std())
print(torch.logsumexp(torch.tensor([float('-inf'), float('-inf')]), 0))
print(torch.log_softmax(torch.tensor([float('-inf'), 0.0]), 0))
print(torch.norm(torch.tensor([1e30, 1e30])), torch.tensor([1e20]) ** 3)
print(torch.tensor([3.0]) % 0, torch.tensor([3.0]) // 0)
print(torch.tensor(1e300, dtype=torch.float64).float())
print(torch.tensor([2.0]).var(), torch.tensor([[1.0, 2.0]]).std(0))
print(torch.nn.functional.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])))
print(torch.nn.functional.softplus(torch.tensor([1000.0, -1000.0])))
w = torch.tensor([1e30, 1e30], requires_grad=True)
(torch.outer(w, w) @ torch.outer(w, w)).sum().backward()
print(w.grad)
"""


def _run_both(script: Path, text: str) -> subprocess.CompletedProcess[str]:
    """Run `text` with the real `adcli run` command and with Python under torch, each in
    a process of its own; check both succeed with the same stdout and stderr (what a
    user sees), and return adcli's run."""
    script.write_text(text)
    env = {"PATH": "", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    run = [sys.executable, "-m", "adcli", "run", "-q", str(script)]
    ad = subprocess.run(
        run, capture_output=True, text=True, timeout=120, env=env, cwd=script.parent
    )
    pt = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert pt.returncode == 0, pt.stderr
    assert (ad.returncode, ad.stdout) == (0, pt.stdout)
    assert ad.stderr == pt.stderr
    return ad


def test_numpy_warnings_never_reach_stderr(tmp_path: Path) -> None:
    """Division by zero, overflow and invalid values are silent, as in PyTorch; where
    PyTorch warns (var/std without degrees of freedom) adcli prints the same
    UserWarning. The real command, so what reaches stderr is what a user sees."""
    ad = _run_both(tmp_path / "numerics.ad", _NUMERICS)
    assert "RuntimeWarning" not in ad.stderr and "adcli" not in ad.stderr
    assert "UserWarning: var(): degrees of freedom is <= 0" in ad.stderr


def test_no_python_warning_while_a_script_runs() -> None:
    """In process too: nothing goes through Python's warnings during a run."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_adcli(_NUMERICS.replace("torch.tensor([2.0]).var(), ", ""))
    assert code == 0
    assert [str(w.message) for w in caught] == []
    # PyTorch's own warning, once per line and message, as Python shows it
    assert err.count("UserWarning: std(): degrees of freedom is <= 0") == 2


def test_warnings_once_per_line_and_message(tmp_path: Path) -> None:
    text = "import torch\nfor i in range(3):\n    a, b = torch.ones(1).var(), torch.ones(1).std()\n"
    # torch in a process of its own: PyTorch keeps some warnings' state per process, so
    # earlier tests in this one would change what it shows
    (tmp_path / "s.ad").write_text(text)
    torch_run = subprocess.run(
        [sys.executable, "-W", "default", "s.ad"], cwd=tmp_path, capture_output=True, text=True
    )
    code, _, err = run_adcli(text)
    assert code == 0
    shown = torch_run.stderr.replace(f"{tmp_path}/", "")
    expected = [line for line in shown.splitlines() if "UserWarning" in line]
    assert len(expected) == 2
    assert [line for line in err.splitlines() if "UserWarning" in line] == expected


_FLOATS = """import torch
w = torch.ones(2, requires_grad=True)
total = max(
    0.0,
    float(w.sum()),
)
for step in range(3):
    total += float((w * step).sum())
print(total, int(w[0]), bool(w[1]), w[0].item())
"""


def test_scalar_conversion_warning_once_per_run(tmp_path: Path) -> None:
    """float() of a tensor that requires grad warns once per process in PyTorch (its
    TORCH_WARN_ONCE), whatever line converts next; int(), bool() and item() never.
    The warning names the line of the call, inside a statement over several lines."""
    ad = _run_both(tmp_path / "floats.ad", _FLOATS)
    assert ad.stderr.count("UserWarning") == 1


_ANOMALY = """import torch
def f(x):
    return x.sqrt()
with torch.autograd.detect_anomaly():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    y = [f(v) for v in [x]][0] * 2
    try:
        y.sum().backward()
    except RuntimeError as e:
        print(e)
x = torch.tensor([-1.0, 4.0], requires_grad=True)
y = torch.cat([x.sqrt(), x])
with torch.autograd.detect_anomaly(check_nan=False):
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    try:
        y.sum().backward()
    except RuntimeError as e:
        print(e)
with torch.autograd.set_detect_anomaly(True):
    z = (x * 3).exp()
z.register_hook(lambda g: g / 0 * 0)
with torch.autograd.set_detect_anomaly(True):
    try:
        z.sum().backward()
    except RuntimeError as e:
        print(e)
u = torch.tensor([1.0, 2.0], requires_grad=True)
v = u.exp()
with torch.no_grad():
    v.mul_(2)
with torch.autograd.detect_anomaly():
    try:
        v.sum().backward(retain_graph=True)
    except RuntimeError as e:
        print(str(e)[:40])
    try:
        torch.autograd.grad(v.sum(), u)
    except RuntimeError as e:
        print(str(e)[:40])
"""


def _anomaly_warnings(stderr: str) -> list[str]:
    """The "Error detected in" warnings' texts, each from its message to PyTorch's
    "Triggered internally" part (where each library says the warning came from
    differs: PyTorch names its own graph.py)."""
    return re.findall(
        r"UserWarning: (Error detected in .*?\(Triggered internally at [^)]*\))", stderr, re.S
    )


def test_anomaly_mode_names_where_the_failing_node_was_made(tmp_path: Path) -> None:
    """When a backward fails with anomaly detection on, PyTorch warns with the script's
    stack where the failing node was made (or that no forward information was kept,
    when detection was off then), as adcli does. The same text shows once, from
    whichever line: Python's registry sees it at one line of PyTorch's engine."""
    script = tmp_path / "anomaly.ad"
    script.write_text(_ANOMALY)
    pt = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert pt.returncode == 0, pt.stderr
    code, out, err = run_adcli(_ANOMALY, name=str(script))
    assert code == 0, err
    assert out == pt.stdout
    expected = _anomaly_warnings(pt.stderr)
    assert len(expected) == 4
    assert _anomaly_warnings(err) == expected
