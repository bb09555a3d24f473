"""Reports of a call repeated in a loop fold: first in full, one line, last in full."""

from __future__ import annotations

import io
import time

from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text

LOOP = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
for step in range({n}):
    loss = (w * w).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
print("done", w)
"""


def run(text: str, **options: object) -> str:
    buf = io.StringIO()
    run_text(text, "loop.ad", RunOptions(width=100, **options), _Streams(buf, buf))  # type: ignore[arg-type]
    return buf.getvalue()


def headers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("loss.backward() at line 5")]


def test_a_loop_prints_first_and_last_report_and_one_line_between() -> None:
    out = run(LOOP.format(n=20))
    assert len(headers(out)) == 2
    folds = [line for line in out.splitlines() if line.startswith("…")]
    assert folds == ["… line 5, steps 2–19: same graph, loss 3.2 → 0.001623; step 20 below"]
    # the fold line comes after the script's own output, before the last report
    lines = out.splitlines()
    assert lines.index(folds[0]) > lines.index("done tensor([0.0115, 0.0231], requires_grad=True)")
    # the last report shows the last step's values, not those after the loop
    last = out[out.rindex("loss.backward() at line 5") :]
    assert "0.0144" in last and "0.0288" in last


def test_all_reports_and_report_every() -> None:
    assert len(headers(run(LOOP.format(n=6), all_reports=True))) == 6
    out = run(LOOP.format(n=10), report_every=4)
    assert len(headers(out)) == 4  # steps 1, 5, 9 and the last
    assert [line for line in out.splitlines() if line.startswith("…")] == [
        "… line 5, steps 2–4: same graph, loss 3.2 → 1.311",
        "… line 5, steps 6–8: same graph, loss 0.5369 → 0.2199",
    ]


def test_one_repeat_prints_no_fold_line() -> None:
    out = run(LOOP.format(n=2))
    assert len(headers(out)) == 2
    assert "…" not in "".join(line[:1] for line in out.splitlines())


def test_a_changing_graph_shows_each_new_shape() -> None:
    text = (
        "import torch\nx = torch.tensor(2.0, requires_grad=True)\n"
        "for k in range(8):\n    y = x\n    for j in range(k % 2 + 1):\n        y = y * x\n"
        "    y.backward()\n"
    )
    out = run(text)
    assert len([line for line in out.splitlines() if line.startswith("y.backward()")]) == 3
    assert "… line 7, steps 3–7: same graph" not in out
    assert "… line 7, steps 3–7" in out


def test_a_thousand_step_loop_is_short_and_quick() -> None:
    start = time.perf_counter()
    quiet = run(LOOP.format(n=1000), quiet=True)
    script_time = time.perf_counter() - start
    start = time.perf_counter()
    out = run(LOOP.format(n=1000))
    assert quiet.splitlines()[-1] in out
    assert len(out.splitlines()) <= 120
    # the reports cost at most a few times the script itself (generous: CI is noisy)
    assert time.perf_counter() - start < 10 * script_time + 2
