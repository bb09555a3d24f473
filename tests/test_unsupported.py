"""A PyTorch name adcli lacks is an error naming the line, never a Python traceback."""

from __future__ import annotations

import io

import pytest

from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text


def run(text: str) -> tuple[int, str]:
    buf = io.StringIO()
    code = run_text(text, "u.ad", RunOptions(), _Streams(buf, buf))
    return code, buf.getvalue()


@pytest.mark.parametrize(
    "script, message",
    [
        (
            "import torch\ny = torch.fft\n",
            "u.ad:2:5: error: AttributeError: adcli does not support torch.fft yet",
        ),
        (
            "import torch\nx = torch.ones(2)\nx.cummax(0)\n",
            "u.ad:3:1: error: AttributeError: adcli does not support Tensor.cummax yet",
        ),
        (
            "import torch\np = torch.nn.Parameter(torch.ones(2))\np.cummax(0)\n",
            "u.ad:3:1: error: AttributeError: adcli does not support Tensor.cummax yet",
        ),
        (
            "import torch.nn.functional as F\nF.softsign\n",
            "u.ad:2:1: error: AttributeError: "
            "adcli does not support torch.nn.functional.softsign yet",
        ),
        (
            "from torch.func import stack_module_state\n",
            "u.ad:1:1: error: ImportError: "
            "adcli does not support torch.func.stack_module_state yet",
        ),
        (
            "from torch import erfinv\n",
            "u.ad:1:1: error: ImportError: adcli does not support torch.erfinv yet",
        ),
        (
            "import torch.distributions\n",
            "u.ad:1:1: error: ModuleNotFoundError: adcli does not support torch.distributions: "
            "use torch.randn, torch.rand and torch.randint for random numbers",
        ),
    ],
)
def test_missing_pytorch_names_say_so(script: str, message: str) -> None:
    code, out = run(script)
    assert code == 1
    assert out.splitlines()[0] == message
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "script, message",
    [
        (
            "import torch\ntorch.tensr(1)\n",
            "AttributeError: module 'torch' has no attribute 'tensr'",
        ),
        ("x = ones(2)\nx.foo\n", "AttributeError: 'Tensor' object has no attribute 'foo'"),
        ("import foo_bar\n", "ModuleNotFoundError: No module named 'foo_bar' (adcli scripts"),
    ],
)
def test_names_pytorch_lacks_get_pythons_message(script: str, message: str) -> None:
    code, out = run(script)
    assert code == 1
    assert message in out.splitlines()[0]
