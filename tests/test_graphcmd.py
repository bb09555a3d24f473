"""`adcli graph FILE`: which tensor is drawn, the four formats, errors and exit codes."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from adcli.core import graphing as graphcmd
from adcli.core.graphing import INSTALL_HINT, GraphOptions, graph_text

SCRIPT = """\
import torch
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
a = x * w
s = a.sum()
y = s * s
y.backward()
z = (w * 3).exp()
n = 3
pair = [y, z]
"""

# every node labelled with its value and gradient, as micrograd's draw_dot does
TREE = """\
MulBackward0 → y  []  data 36.0000  grad 1.0000
├── SumBackward0 → s  []  data 6.0000  grad 12.0000
│   └── MulBackward0 → a  [2]  data [2.0000, 4.0000]  grad [12.0000, 12.0000]
│       ├── x  leaf  []  data 2.0000  grad 36.0000
│       └── w  leaf  [2]  data [1.0000, 2.0000]  grad [24.0000, 24.0000]
└── SumBackward0 → s  []  data 6.0000  grad 12.0000  (see above)
"""

DOT = """\
digraph adcli {
  node [shape=box, style="filled,rounded", fontname="monospace", fontsize=10];
  n0 [label="x\\ndata 2.0000\\ngrad 36.0000", fillcolor=lightblue];
  n1 [label="w\\n[2]\\ndata [1.0000, 2.0000]\\ngrad [24.0000, 24.0000]", fillcolor=lightblue];
  n2 [label="MulBackward0\\na\\n[2]\\ndata [2.0000, 4.0000]\\ngrad [12.0000, 12.0000]", \
fillcolor=lightgrey];
  n3 [label="SumBackward0\\ns\\ndata 6.0000\\ngrad 12.0000", fillcolor=lightgrey];
  n4 [label="MulBackward0\\ny\\ndata 36.0000\\ngrad 1.0000", fillcolor=darkolivegreen1];
  n0 -> n2;
  n1 -> n2;
  n2 -> n3;
  n3 -> n4;
  n3 -> n4;
}
"""

MERMAID = """\
flowchart TB
  n0["x<br/>data 2.0000<br/>grad 36.0000"]
  n1["w<br/>[2]<br/>data [1.0000, 2.0000]<br/>grad [24.0000, 24.0000]"]
  n2["MulBackward0<br/>a<br/>[2]<br/>data [2.0000, 4.0000]<br/>grad [12.0000, 12.0000]"]
  n3["SumBackward0<br/>s<br/>data 6.0000<br/>grad 12.0000"]
  n4["MulBackward0<br/>y<br/>data 36.0000<br/>grad 1.0000"]
  n0 --> n2
  n1 --> n2
  n2 --> n3
  n3 --> n4
  n3 --> n4
  classDef leaf fill:#add8e6,stroke:#4a708b,color:#000
  classDef op fill:#d3d3d3,stroke:#696969,color:#000
  classDef root fill:#caff70,stroke:#696969,color:#000
  class n0,n1 leaf
  class n2,n3 op
  class n4 root
"""


def draw(text: str, **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = graph_text(text, "x.ad", GraphOptions(**kw), out, err)  # type: ignore[arg-type]
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ which tensor


def test_default_is_the_root_of_the_last_backward():
    assert draw(SCRIPT) == (0, TREE, "")


def test_default_without_backward_is_the_last_assigned_tensor_with_a_grad_fn():
    text = (
        "import torch\nx = torch.ones(2, requires_grad=True)\nh = x * 2\nq = h.sum()\n"
        "c = torch.ones(3)\nn = 3\n"
    )
    code, out, _ = draw(text)
    assert code == 0
    assert out == (
        "SumBackward0 → q  []  data 4.0000\n"
        "└── MulBackward0 → h  [2]  data [2.0000, 2.0000]\n"
        "    └── x  leaf  [2]  data [1.0000, 1.0000]  grad None\n"
    )


def test_default_after_grad_call_is_its_output():
    text = (
        "import torch\nx = torch.tensor(3.0, requires_grad=True)\nf = x ** 3\n"
        "g, = torch.autograd.grad(f, x, create_graph=True)\n"
    )
    code, out, _ = draw(text)
    assert code == 0
    assert out.splitlines()[0] == "PowBackward0 → f  []  data 27.0000  grad 1.0000"
    # autograd.grad does not fill .grad: the leaf says so
    assert out.splitlines()[1] == "└── x  leaf  []  data 3.0000  grad None"


def test_var_names_the_tensor():
    code, out, _ = draw(SCRIPT, var="z")
    assert code == 0
    assert out == (
        "ExpBackward0 → z  [2]  data [20.0855, 403.4288]  grad None\n"
        "└── MulBackward0 → (w * 3)  [2]  data [3.0000, 6.0000]  grad None\n"
        "    └── w  leaf  [2]  data [1.0000, 2.0000]  grad [24.0000, 24.0000]\n"
    )
    assert draw(SCRIPT, var="x")[1] == "x  leaf  []  data 2.0000  grad 36.0000\n"


def test_var_holding_a_list_of_tensors_draws_every_root():
    code, out, _ = draw(SCRIPT, var="pair")
    assert code == 0
    assert out.startswith("MulBackward0 → y  []  data 36.0000  grad 1.0000\n")
    assert "ExpBackward0 → z  [2]  data [20.0855, 403.4288]  grad None" in out


def test_unknown_var_lists_the_tensor_variables():
    code, out, err = draw(SCRIPT, var="nope")
    assert (code, out) == (2, "")
    assert err == (
        "adcli: error: the script has no variable 'nope' (tensor variables: a, s, w, x, y, z)\n"
    )


def test_var_that_is_not_a_tensor():
    code, _, err = draw(SCRIPT, var="n")
    assert code == 2
    assert err.startswith("adcli: error: 'n' is an int, not a tensor (tensor variables: ")


def test_modules_and_builtins_are_not_tensor_variables():
    code, _, err = draw(SCRIPT, var="torch")
    assert code == 2
    assert err.startswith("adcli: error: 'torch' is a module, not a tensor (tensor variables: ")
    code, _, err = draw(SCRIPT, var="print")
    assert code == 2
    assert err.startswith("adcli: error: the script has no variable 'print' ")


def test_nothing_to_draw():
    code, out, err = draw("n = 3\n")
    assert (code, out) == (2, "")
    assert err == (
        "adcli: error: nothing to draw: the script made no backward() or grad() call and "
        "assigned no tensor with a grad_fn; name one with --var "
        "(the script has no tensor variables)\n"
    )


def test_script_output_is_not_mixed_into_the_drawing():
    code, out, _ = draw('print("hello")\n' + SCRIPT, format="dot")
    assert code == 0
    assert out == DOT


# ------------------------------------------------------------------ formats


@pytest.mark.parametrize(("fmt", "expected"), [("tree", TREE), ("dot", DOT), ("mermaid", MERMAID)])
def test_formats_are_stable_golden_text(fmt: str, expected: str):
    first = draw(SCRIPT, format=fmt)
    second = draw(SCRIPT, format=fmt)
    assert first == second == (0, expected, "")


def test_format_from_output_suffix(tmp_path: Path):
    target = tmp_path / "g.dot"
    code, out, err = draw(SCRIPT, output=str(target))
    assert (code, out, err) == (0, "", "")
    assert target.read_text(encoding="utf-8") == DOT
    assert graphcmd.resolve_format(GraphOptions(output="x.mmd")) == "mermaid"
    assert graphcmd.resolve_format(GraphOptions(output="x.svg")) == "svg"
    assert graphcmd.resolve_format(GraphOptions(output="x.txt")) == "tree"
    assert graphcmd.resolve_format(GraphOptions(format="DOT", output="x.dot")) == "dot"
    # text never goes into a file named as an image (tests/test_graph_images.py)
    with pytest.raises(graphcmd.UsageError, match="does not write an SVG image"):
        graphcmd.resolve_format(GraphOptions(format="DOT", output="x.svg"))


def test_unknown_format():
    code, _, err = draw(SCRIPT, format="gif")
    assert code == 2
    assert err == (
        "adcli: error: unknown format 'gif' (choose tree, dot, mermaid, svg, png or pdf)\n"
    )


def test_svg_without_graphviz_says_how_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(graphcmd.shutil, "which", lambda name: None)
    code, out, err = draw(SCRIPT, format="svg")
    assert (code, out) == (1, "")
    assert err == f"adcli: error: {INSTALL_HINT}\n"
    assert "apt-get install graphviz" in err and "brew install graphviz" in err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_with_graphviz(tmp_path: Path):
    code, out, err = draw(SCRIPT, format="svg")
    assert (code, err) == (0, "")
    assert out.lstrip().startswith("<?xml") and "<svg" in out and "MulBackward0" in out
    assert draw(SCRIPT, format="svg")[1] == out  # stable
    target = tmp_path / "g.svg"
    assert draw(SCRIPT, output=str(target))[0] == 0
    assert target.read_text(encoding="utf-8") == out


def test_full_unfolds_long_chains():
    text = "import torch\nx = torch.ones(1, requires_grad=True)\ny = x\n"
    text += "for i in range(10):\n    y = y * 2\ny.sum().backward()\n"
    folded = draw(text)[1]
    full = draw(text, full=True)[1]
    assert "similar nodes" in folded
    assert "similar nodes" not in full
    assert full.count("MulBackward0") == 10


# ------------------------------------------------------------------ errors


def test_script_error_still_draws_what_there_is():
    text = SCRIPT + "y.backward()\n"  # the graph was freed by the first backward
    code, out, err = draw(text)
    assert code == 1
    assert out == TREE
    assert "x.ad:11:1: error: RuntimeError: Trying to backward through the graph" in err


def test_syntax_error_exits_1_without_drawing():
    code, out, err = draw("x = (\n")
    assert (code, out) == (1, "")
    assert "SyntaxError" in err


# ------------------------------------------------------------------ the command line


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "g.ad"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def test_cli_graph(run_cli, script: Path):
    result = run_cli(["graph", str(script)])
    assert result.exit_code == 0
    assert result.stdout == TREE
    result = run_cli(["graph", str(script), "--format", "dot"])
    assert (result.exit_code, result.stdout) == (0, DOT)
    result = run_cli(["graph", str(script), "-f", "mermaid", "--var", "y"])
    assert (result.exit_code, result.stdout) == (0, MERMAID)


def test_cli_graph_output_file(run_cli, script: Path, tmp_path: Path):
    target = tmp_path / "out.gv"
    result = run_cli(["graph", str(script), "-o", str(target)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert target.read_text(encoding="utf-8") == DOT


def test_cli_graph_stdin(run_cli):
    result = run_cli(["graph", "-"], input=SCRIPT)
    assert (result.exit_code, result.stdout) == (0, TREE)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["graph"], "missing argument"),
        (["graph", "nowhere.ad"], "cannot read"),
        (["graph", "{script}", "--format", "gif"], "unknown format 'gif'"),
        (["graph", "{script}", "--var", "nope"], "no variable 'nope'"),
    ],
)
def test_cli_graph_usage_errors(run_cli, script: Path, args: list[str], fragment: str):
    result = run_cli([a.replace("{script}", str(script)) for a in args])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("adcli: error: ")
    assert fragment in lines[0].lower() or fragment in lines[0]


def test_cli_graph_help(run_cli):
    result = run_cli(["graph", "-h"])
    assert result.exit_code == 0
    for option in ("--var", "--format", "--output", "-o", "--full"):
        assert option in result.stdout
