"""`adcli run --html FILE`: one self-contained page with every report of the run.

The page is checked twice: as text (self-contained, one section per report, folded
as the terminal folds, the data behind each graph), and in a real headless browser
(Chromium, driven through the DevTools protocol by tests/cdp.py): load it, click a
node, step the slider, take a screenshot and look at what it shows. The browser
tests skip when no Chromium or Chrome is installed (.ci/run installs Chromium).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adcli.cli import _parse_run
from adcli.render.html import GRAPH_LIMIT
from adcli.render.layout import layout

sys.path.insert(0, str(Path(__file__).parent))
from cdp import Browser, count_color, find_browser, png_pixels  # noqa: E402

SCRIPT = """\
import torch
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
a = x * w
s = a.sum()
y = s * s
print("y =", y.item())
y.backward()
"""

LOOP = """\
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
for step in range(30):
    loss = ((w * x).sum() - 1.0) ** 2
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
"""

SELECTED = (214, 39, 40)  # the clicked node's outline (page.css)
ACTIVE = (255, 127, 14)  # the edge the slider is on
DONE = (31, 119, 180)  # edges that carried their gradient already


def make_page(run_cli, tmp_path: Path, text: str, *args: str) -> tuple[str, object]:
    script = tmp_path / "f.ad"
    script.write_text(text, encoding="utf-8")
    page = tmp_path / "report.html"
    result = run_cli(["run", str(script), "--html", str(page), "--in-process", *args])
    return page.read_text(encoding="utf-8"), result


def sections(page: str) -> list[dict]:
    """The data of each report section, in order."""
    blobs = re.findall(r'<script type="application/json" class="data">(.*?)</script>', page)
    return [json.loads(b) for b in blobs]


# ------------------------------------------------------------------ the page as text


def test_page_is_written_and_the_run_prints_as_usual(run_cli, tmp_path: Path):
    page, result = make_page(run_cli, tmp_path, SCRIPT)
    assert result.exit_code == 0
    assert "y = 36.0" in result.stdout and "y.backward()" in result.stdout  # the report
    assert page.startswith("<!DOCTYPE html>")
    assert "y = 36.0" in page  # the script's output
    (data,) = sections(page)
    names = [data["rows"][n[0]]["name"] for n in data["nodes"]]
    assert names == ["x", "w", "a", "s", "y"]
    x = data["rows"][0]
    assert (x["value"], x["grad"], x["is_leaf"], x["grad_fn"]) == ("2.", "36.", True, None)
    y = data["rows"][4]
    assert (y["grad_fn"], y["flowed"], y["requires_grad"]) == ("MulBackward0", "1.", True)
    # the backward pass edge by edge, from the root down: y's two inputs are both s
    assert [s[1] for s in data["steps"]][:3] == [
        "y sends its gradient back to s",
        "y sends its gradient back to s",
        "s sends its gradient back to a",
    ]
    assert len(data["steps"]) == len(data["edges"]) == 5
    assert "grad 36.0000" in page  # node labels as micrograd's draw_dot


def test_page_needs_no_network(run_cli, tmp_path: Path):
    page, _ = make_page(run_cli, tmp_path, SCRIPT)
    # the SVG namespace is a name, never fetched; nothing else points outside the page
    outside = re.findall(r"https?://[^\s\"'<>)]+", page)
    assert set(outside) <= {"http://www.w3.org/2000/svg"}
    for needle in ("<link", " src=", "@import", "url(http", "<iframe"):
        assert needle not in page
    assert "<style>" in page and "<script>" in page and "<svg" in page


def test_reports_in_a_loop_fold_as_on_the_terminal(run_cli, tmp_path: Path):
    page, result = make_page(run_cli, tmp_path, LOOP)
    assert result.exit_code == 0
    assert len(sections(page)) == 2  # the first and the last
    assert "… line 7, steps 2–29: same graph" in page
    page, _ = make_page(run_cli, tmp_path, LOOP, "--all-reports")
    assert len(sections(page)) == 30
    assert "steps 2–29" not in page
    assert page.count('<details class="report"') == 30
    assert page.count('<details class="report" id="report-30">') == 1  # late ones closed


def test_quiet_and_json_runs_write_the_same_page(run_cli, tmp_path: Path):
    page, _ = make_page(run_cli, tmp_path, SCRIPT)
    for flag in ("--quiet", "--json"):
        other, result = make_page(run_cli, tmp_path, SCRIPT, flag)
        assert result.exit_code == 0
        assert sections(other) == sections(page)
    assert result.stdout.startswith("{")  # --json still writes its object


def test_symbolic_puts_formulas_on_the_page(run_cli, tmp_path: Path):
    page, result = make_page(run_cli, tmp_path, SCRIPT, "--symbolic")
    assert result.exit_code == 0
    (data,) = sections(page)
    assert data["symbolic"] is True
    by_name = {r["name"]: r for r in data["rows"]}
    assert by_name["y"]["formula"] == "torch.sum(w*x)**2 = 36  ✓"  # checked numerically
    assert by_name["y"]["rule"].startswith("MulBackward0: ")
    assert by_name["x"]["grad_formula"]


def test_show_reports_are_on_the_page(run_cli, tmp_path: Path):
    text = "import torch\nx = torch.ones(2, requires_grad=True)\nh = (x * 3).sum()\nshow(h)\n"
    page, result = make_page(run_cli, tmp_path, text)
    assert result.exit_code == 0
    (data,) = sections(page)
    assert data["steps"] == [] and len(data["edges"]) == 2
    assert "No backward pass: this report shows the graph only." in page


def test_long_graph_is_drawn_folded(run_cli, tmp_path: Path):
    text = "import torch\nx = torch.ones(1, requires_grad=True)\ny = x\n"
    text += f"for i in range({GRAPH_LIMIT * 4}):\n    y = y * 1.0001\ny.sum().backward()\n"
    start = time.perf_counter()
    page, result = make_page(run_cli, tmp_path, text)
    assert result.exit_code == 0
    assert time.perf_counter() - start < 30
    (data,) = sections(page)
    assert len(data["nodes"]) < 60  # the table's folded rows, not 600 boxes
    assert "folded nodes" in page  # an edge through the folded run says so


def test_script_error_is_on_the_page(run_cli, tmp_path: Path):
    page, result = make_page(run_cli, tmp_path, SCRIPT + "y.backward()\n")
    assert result.exit_code == 1
    assert "Trying to backward through the graph a second time" in page
    assert len(sections(page)) == 1


def test_unwritable_page_fails(run_cli, tmp_path: Path):
    script = tmp_path / "f.ad"
    script.write_text(SCRIPT, encoding="utf-8")
    target = tmp_path / "no" / "such" / "dir" / "r.html"
    result = run_cli(["run", str(script), "--in-process", "--html", str(target)])
    assert result.exit_code == 1
    assert f"adcli: error: cannot write '{target}'" in result.stderr


def test_page_is_never_written_through_a_symbolic_link(run_cli, tmp_path: Path):
    script = tmp_path / "f.ad"
    script.write_text(SCRIPT, encoding="utf-8")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    link = tmp_path / "r.html"
    link.symlink_to(victim)
    result = run_cli(["run", str(script), "--in-process", "--html", str(link)])
    assert result.exit_code == 1
    assert "symbolic link" in result.stderr
    assert victim.read_text(encoding="utf-8") == "keep me"
    # an ordinary file from an earlier run is replaced
    page = tmp_path / "old.html"
    page.write_text("old", encoding="utf-8")
    assert run_cli(["run", str(script), "--in-process", "--html", str(page)]).exit_code == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_fast_path_hands_html_to_typer():
    assert _parse_run(["f.ad", "--html", "r.html"]) is None
    assert _parse_run(["f.ad", "--html=r.html"]) is None


def test_html_in_a_child_process(tmp_path: Path):
    """The default run (a child process with budgets) writes the page too."""
    script = tmp_path / "f.ad"
    script.write_text(SCRIPT, encoding="utf-8")
    page = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "adcli", "run", str(script), "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(sections(page.read_text(encoding="utf-8"))) == 1


def test_layout_puts_inputs_left_of_their_users():
    sizes = [(60.0, 30.0)] * 5
    edges = [(0, 2), (1, 2), (2, 3), (3, 4), (0, 4)]
    placed = layout(sizes, edges)
    for a, b in edges:
        assert placed.x[a] + 60 < placed.x[b]
    assert len(placed.paths) == len(edges)
    # no two boxes overlap
    for i in range(5):
        for j in range(i + 1, 5):
            apart_x = abs(placed.x[i] - placed.x[j]) >= 60
            apart_y = abs(placed.y[i] - placed.y[j]) >= 30
            assert apart_x or apart_y


# ------------------------------------------------------------------ in a browser

BROWSER = find_browser()
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no Chromium or Chrome installed")


@pytest.fixture(scope="module")
def browser():
    b = Browser(BROWSER)  # type: ignore[arg-type]
    try:
        yield b
    finally:
        b.close()


@needs_browser
def test_browser_click_a_node_and_step_the_slider(browser, run_cli, tmp_path: Path):
    page, _ = make_page(run_cli, tmp_path, SCRIPT)
    url = (tmp_path / "report.html").as_uri()
    browser.call("Network.enable")
    browser.open(url)
    requests = [
        e["params"]["request"]["url"]
        for e in browser.events
        if e.get("method") == "Network.requestWillBeSent"
    ]
    assert requests in ([], [url])  # the page asked the network for nothing
    assert browser.evaluate("document.title") == "adcli: f.ad"
    canvas = "details.report .canvas"

    before = browser.screenshot(canvas)
    assert count_color(before, SELECTED) == 0 and count_color(before, ACTIVE) == 0

    # click the box of x: its row shows in the panel, and the box is outlined
    browser.click('details.report g.node[data-node="0"]')
    panel = browser.evaluate("document.querySelector('details.report .panel').innerText")
    assert panel.split("\n")[0] == "x"
    for text in (
        "torch.tensor(2.0, requires_grad=True)",
        "None (a leaf)",
        "36.",
        "requires_grad=True, is_leaf=True",
    ):
        assert text in panel
    assert "the gradient of x (shape []) was summed" in panel  # the note about x
    clicked = browser.screenshot(canvas)
    assert count_color(clicked, SELECTED) > 100

    # the table's row of y selects y's box
    browser.click('details.report table.rows tr[data-node="4"]')
    assert (
        browser.evaluate("document.querySelector('details.report g.node.selected').dataset.node")
        == "4"
    )

    # step the slider: ▶ once, then the arrow key on the slider itself
    browser.click("details.report .next")
    browser.click("details.report .slider")  # focus (the click may move it: set it back)
    browser.evaluate(
        "(function(){var s=document.querySelector('details.report .slider');"
        "s.value=1;s.dispatchEvent(new Event('input'));})()"
    )
    browser.press("ArrowRight", 39)
    assert browser.evaluate("document.querySelector('details.report .slider').value") == "2"
    step = browser.evaluate("document.querySelector('details.report .steptext').textContent")
    assert step == "Step 2 of 5: y sends its gradient back to s"
    stepped = browser.screenshot(canvas)
    assert count_color(stepped, ACTIVE) > 100  # the edge moving now
    assert count_color(stepped, DONE) > count_color(clicked, DONE)  # outlines of reached nodes

    # to the end: every edge carried its gradient, the last one goes into a leaf
    for _ in range(3):
        browser.click("details.report .next")
    step = browser.evaluate("document.querySelector('details.report .steptext').textContent")
    assert step.startswith("Step 5 of 5: a sends its gradient back to ")
    done = browser.evaluate("document.querySelectorAll('details.report path.edge.done').length")
    assert done == 4
    width, height, _ = png_pixels(browser.screenshot())
    assert width > 0 and height > 0
    assert not [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]


@needs_browser
def test_browser_opens_every_report_of_a_loop(browser, run_cli, tmp_path: Path):
    make_page(run_cli, tmp_path, LOOP)
    browser.open((tmp_path / "report.html").as_uri())
    assert browser.evaluate("document.querySelectorAll('details.report').length") == 2
    assert "same graph" in browser.evaluate("document.querySelector('.foldline').textContent")
    # the last report's graph works as the first's does
    browser.click('#report-2 g.node[data-node="0"]')
    assert browser.evaluate("document.querySelector('#report-2 .panel').innerText").startswith("w")
    assert not [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
