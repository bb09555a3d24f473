"""`adcli graph`: nodes labelled with value and gradient, and images drawn by Graphviz.

`-o FILE.svg|.png|.pdf` draws through Graphviz's `dot`; without it the command fails
and says how to install it. Text never goes into a file named as an image (it once
wrote the tree into `g.png` and exited 0).
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from adcli.core import graphing as graphcmd
from adcli.core.graphing import INSTALL_HINT, GraphOptions, graph_text
from adcli.render.labels import data_line, grad_line, number_text

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed"
)

SCRIPT = """\
import torch
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * w).sum() * x
y.backward()
"""

BIG = """\
import torch
W = torch.ones(5, 3, requires_grad=True)
x = torch.ones(3)
loss = (W @ x).sum()
loss.backward()
"""


def draw(text: str, **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = graph_text(text, "x.ad", GraphOptions(**kw), out, err)  # type: ignore[arg-type]
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ labels


def test_labels_as_micrograd_draw_dot():
    assert number_text(2.0) == "2.0000"  # micrograd's "%.4f"
    assert number_text(-3.0) == "-3.0000"
    assert number_text(1.5e-7) == "1.5000e-07"
    assert number_text(3) == "3"
    assert data_line(__import__("numpy").array([1.0, 2.0])) == "data [1.0000, 2.0000]"
    assert grad_line(None) == "grad None"
    assert grad_line(None, known=False) is None


def test_dot_boxes_carry_value_and_gradient():
    code, out, err = draw(SCRIPT, format="dot")
    assert (code, err) == (0, "")
    assert 'n0 [label="x\\ndata 2.0000\\ngrad 12.0000", fillcolor=lightblue];' in out
    assert 'label="w\\n[2]\\ndata [1.0000, 2.0000]\\ngrad [4.0000, 4.0000]"' in out
    assert '"MulBackward0\\ny\\ndata 12.0000\\ngrad 1.0000"' in out


def test_big_tensors_are_labelled_with_their_shape():
    code, out, _ = draw(BIG)
    assert code == 0
    assert out == (
        "SumBackward0 → loss  []  data 15.0000  grad 1.0000\n"
        "└── MvBackward0 → (W @ x)  [5]  data norm 6.7082  grad norm 2.2361\n"
        "    └── W  leaf  [5, 3]  data norm 3.8730  grad norm 3.8730\n"
    )


def test_nodes_no_pass_reached_say_so():
    text = SCRIPT + "z = w.exp()\n"
    code, out, _ = draw(text, var="z")
    assert code == 0
    assert out.splitlines()[0] == "ExpBackward0 → z  [2]  data [2.7183, 7.3891]  grad None"


# ------------------------------------------------------------------ images


@needs_dot
@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_image_from_the_output_suffix(tmp_path: Path, suffix: str):
    target = tmp_path / f"g{suffix}"
    code, out, err = draw(SCRIPT, output=str(target))
    assert (code, out, err) == (0, "", "")
    data = target.read_bytes()
    if suffix == ".png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])
        assert width > 100 and height > 100
    elif suffix == ".pdf":
        assert data.startswith(b"%PDF-")
    else:
        text = data.decode("utf-8")
        assert "<svg" in text and "grad 12.0000" in text
    assert b"MulBackward0 \xe2\x86\x92" not in data  # never the text tree


@needs_dot
def test_png_to_a_pipe_is_written_whole():
    done = subprocess.run(
        [sys.executable, "-m", "adcli", "graph", "-", "--format", "png"],
        input=SCRIPT.encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout[:8] == b"\x89PNG\r\n\x1a\n"


def test_binary_is_not_written_to_a_terminal():
    class Tty(io.StringIO):
        buffer = io.BytesIO()

        def isatty(self) -> bool:
            return True

    out, err = Tty(), io.StringIO()
    opts = GraphOptions(format="png")
    code = graphcmd._write_binary(b"\x89PNG", "png", out, err)
    assert code == 2 and out.getvalue() == "" and Tty.buffer.getvalue() == b""
    assert "-o FILE.png" in err.getvalue()
    assert graphcmd.resolve_format(opts) == "png"


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_without_graphviz_fails_and_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, suffix: str
):
    monkeypatch.setattr(graphcmd.shutil, "which", lambda name: None)
    target = tmp_path / f"g{suffix}"
    code, out, err = draw(SCRIPT, output=str(target))
    assert (code, out) == (1, "")
    assert err == f"adcli: error: {INSTALL_HINT}\n"
    assert "apt-get install graphviz" in err
    assert not target.exists()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"output": "g.png", "format": "tree"}, "--format tree does not write a PNG image"),
        ({"output": "g.pdf", "format": "dot"}, "--format dot does not write a PDF image"),
        ({"output": "g.svg", "format": "mermaid"}, "--format mermaid does not write an SVG"),
        ({"output": "g.png", "format": "svg"}, "--format svg does not write a PNG image"),
        ({"output": "g.jpg"}, "g.jpg': adcli draws images as .svg, .png or .pdf"),
        ({"output": "G.GIF", "format": "dot"}, "G.GIF': adcli draws images as .svg"),
    ],
)
def test_text_never_goes_into_an_image_file(tmp_path: Path, kw: dict, message: str):
    target = tmp_path / str(kw["output"])
    code, out, err = draw(SCRIPT, **{**kw, "output": str(target)})
    assert (code, out) == (2, "")
    assert message in err
    assert not target.exists()


@needs_dot
def test_cli_writes_png(run_cli, tmp_path: Path):
    script = tmp_path / "f.ad"
    script.write_text(SCRIPT, encoding="utf-8")
    target = tmp_path / "g.png"
    result = run_cli(["graph", str(script), "-o", str(target)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert target.read_bytes()[:4] == b"\x89PNG"


def test_cli_refuses_text_into_png(run_cli, tmp_path: Path):
    script = tmp_path / "f.ad"
    script.write_text(SCRIPT, encoding="utf-8")
    target = tmp_path / "g.png"
    result = run_cli(["graph", str(script), "-o", str(target), "--format", "tree"])
    assert result.exit_code == 2
    assert result.stderr.startswith("adcli: error: --format tree does not write a PNG image")
    assert not target.exists()
