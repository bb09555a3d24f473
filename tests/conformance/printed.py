"""Shared by the conformance tests that compare printed text: a script (`import
torch` first, as `.ad` files are) run by adcli's runner and by Python with the real
torch; `check` asserts that both print the same text, word for word."""

from __future__ import annotations

import contextlib
import io
import re
import types
import warnings

import torch

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")

HEADER = "import torch\nimport torch.nn.functional as F\n"

# runs each thunk of `cases`, printing its value or its error (shared by every script)
RUNNER = """
def run(cases):
    for f in cases:
        try:
            print(f())
        except Exception as e:
            print(repr(e))
"""


def _adcli_output(text: str) -> str:
    from adcli.core.options import RunOptions
    from adcli.core.runner import run_text

    out, err = io.StringIO(), io.StringIO()
    streams = types.SimpleNamespace(out=out, err=err)
    run_text(text, "case.ad", RunOptions(color=False, width=100, quiet=True), streams)
    return out.getvalue()


def _torch_output(text: str) -> str:
    out = io.StringIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(out):
                exec(compile(text, "case.ad", "exec"), {"__name__": "__main__"})
    finally:
        torch.set_grad_enabled(True)
        torch.autograd.set_detect_anomaly(False)
    return out.getvalue()


def check(body: str) -> None:
    """The script prints the same text under adcli and under torch."""
    text = HEADER + RUNNER + body
    expected = _ADDRESS.sub("0x", _torch_output(text))
    assert expected.strip(), "the torch run printed nothing"
    assert _ADDRESS.sub("0x", _adcli_output(text)) == expected
