"""Reports at every width from 60 to 200 columns: no line is wider than the
terminal and no cell splits a token (a name, a number, `True`); golden text at
widths 60, 80 and 120 (set ADCLI_UPDATE_WIDTHS=1 to rewrite it, then read the diff)."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).resolve().parent / "widths"
GOLDEN_CASES = ["03_chain_rule_l1_l4", "14_mlp_training", "19_softmax_cross_entropy"]
#: words a narrower layout may spell differently (short flags, blocks, headers)
LAYOUT_WORDS = {
    "name", "expression", "shape", "dtype", "requires_grad", "is_leaf", "grad_fn", "value",
    "flowed", "grad", ".grad", "True", "False", "None", "rg", "leaf", "T", "F", "(graph",
    "as", "above)",
}  # fmt: skip


def render(stem: str, width: int) -> str:
    path = SAMPLES / f"{stem}.ad"
    buf = io.StringIO()
    options = RunOptions(width=width, color=False, display_name=path.name)
    run_text(path.read_text(), path.name, options, _Streams(buf, buf))  # type: ignore[arg-type]
    return buf.getvalue()


def words(text: str) -> set[str]:
    found = set()
    for word in text.split():
        if not re.fullmatch(r"[─…]+", word) and "∂" not in word:
            found.add(word.removeprefix("requires_grad=").removeprefix("is_leaf="))
    return found - LAYOUT_WORDS


@pytest.mark.parametrize(
    "stem",
    [
        "03_chain_rule_l1_l4",
        "14_mlp_training",
        "19_softmax_cross_entropy",
        "18_jacobian_and_hessian",
    ],
)
def test_no_token_is_split_at_any_width(stem: str) -> None:
    wide_text = render(stem, 1000)
    wide = words(wide_text)
    for width in range(60, 201, 7):
        text = render(stem, width)
        # only the script's own printing (the same at any width) may be wider
        too_wide = [ln for ln in text.splitlines() if len(ln) > width]
        assert all(ln in wide_text.splitlines() for ln in too_wide), (width, too_wide)
        missing = wide - words(text)
        assert not missing, (width, sorted(missing)[:10])


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("stem", GOLDEN_CASES)
def test_width_goldens(stem: str, width: int) -> None:
    golden = GOLDEN / f"{stem}.w{width}.out"
    text = render(stem, width)
    if os.environ.get("ADCLI_UPDATE_WIDTHS"):
        golden.write_text(text)
    assert text == golden.read_text()
