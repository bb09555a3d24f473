"""`adcli run --json` output matches the JSON Schema shipped in the package
(adcli/render/schema.json), for every sample, every golden error script and the
cases the samples do not reach (folds, warnings, summaries, errors with notes)."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path

import pytest
from schema_check import errors, validate

from adcli.core.options import RunOptions
from adcli.core.runner import run_text
from adcli.render.jsonout import schema

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "samples").glob("*.ad")) + sorted(
    (ROOT / "tests" / "golden" / "errors").glob("*.ad")
)


def run_json(text: str, **options: object) -> tuple[dict, int]:
    buf = io.StringIO()
    streams = types.SimpleNamespace(out=buf, err=io.StringIO())
    code = run_text(text, "s.ad", RunOptions(json=True, **options), streams)  # type: ignore[arg-type]
    return json.loads(buf.getvalue()), code


@pytest.fixture(scope="module")
def the_schema() -> dict:
    return schema()


def test_schema_ships_in_the_package(the_schema: dict) -> None:
    from importlib.resources import files

    assert files("adcli.render").joinpath("schema.json").is_file()
    assert the_schema["title"] == "adcli run --json"
    # hatchling packs every file under adcli/ that git does not ignore
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'packages = ["adcli"]' in pyproject
    ignored = (ROOT / ".gitignore").read_text().split()
    assert not any(p in ("*.json", "schema.json", "adcli/render/") for p in ignored)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_sample_and_error_script_matches_the_schema(path: Path, the_schema: dict) -> None:
    obj, code = run_json(path.read_text(encoding="utf-8"))
    validate(obj, the_schema)
    assert obj["ok"] is (code == 0)


def test_the_checker_sees_a_break(the_schema: dict) -> None:
    obj, _ = run_json("import torch\nx = torch.ones(2, requires_grad=True)\nx.sum().backward()\n")
    validate(obj, the_schema)
    obj["events"][0]["nodes"][0]["requires_grad"] = "yes"
    assert errors(obj, the_schema)
    del obj["warnings"]
    assert any("missing 'warnings'" in e for e in errors(obj, the_schema))


LOOP = """\
import torch
x = torch.linspace(-1, 1, 2000)
w = torch.tensor(0.5, requires_grad=True)
for step in range({n}):
    loss = ((w * x - x) ** 2).sum()
    loss.backward()
    with torch.no_grad():
        w -= 1e-4 * w.grad
        w.grad.zero_()
"""


def test_a_loop_folds_and_large_arrays_are_summarised(the_schema: dict) -> None:
    obj, code = run_json(LOOP.format(n=50))
    assert code == 0
    validate(obj, the_schema)
    kinds = [e["kind"] for e in obj["events"]]
    assert kinds == ["backward", "fold", "backward"]
    fold = obj["events"][1]
    assert fold["steps"] == [2, 49] and fold["same_graph"] and fold["next_in_full"]
    assert fold["text"].startswith("… line 6, steps 2–49: same graph, loss ")
    assert obj["events"][2]["graph_as_above"] is True
    big = [n for n in obj["events"][0]["nodes"] if n["shape"] == [2000]]
    assert big and all(n["value"]["summarized"] for n in big)
    assert big[0]["value"]["numel"] == 2000 and len(big[0]["value"]["head"]) == 3


def test_a_2000_step_loop_stays_small_and_quick(the_schema: dict) -> None:
    import time

    start = time.perf_counter()
    obj, code = run_json(LOOP.format(n=2000))
    took = time.perf_counter() - start
    assert code == 0
    text = json.dumps(obj)
    assert len(text) < 200_000, len(text)  # three reports, not 2,000
    assert took < 60
    validate(obj, the_schema)


def test_all_reports_and_full_undo_folding_and_summaries(the_schema: dict) -> None:
    obj, _ = run_json(LOOP.format(n=3), all_reports=True, full=True)
    validate(obj, the_schema)
    assert [e["kind"] for e in obj["events"]] == ["backward"] * 3
    node = next(n for n in obj["events"][0]["nodes"] if n["shape"] == [2000])
    assert isinstance(node["value"], list) and len(node["value"]) == 2000
    every, _ = run_json(LOOP.format(n=7), report_every=3)  # steps 1, 4 and 7 in full
    kinds = [e["kind"] for e in every["events"]]
    assert kinds == ["backward", "fold", "backward", "fold", "backward"]


def test_warnings_legend_and_notes_are_carried(the_schema: dict) -> None:
    text = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True) * 0.1
y = (w * w).sum()
y.backward()
print(w.grad)
"""
    obj, code = run_json(text)
    assert code == 0
    validate(obj, the_schema)
    (warning,) = obj["warnings"]
    assert warning["category"] == "UserWarning" and warning["line"] == 5
    assert warning["message"].startswith("The .grad attribute of a Tensor that is not a leaf")
    assert warning["source"] == "print(w.grad)"
    # the notes the text prints under the warning
    buf = io.StringIO()
    run_text(text, "s.ad", RunOptions(), types.SimpleNamespace(out=buf, err=buf))  # type: ignore[arg-type]
    printed = buf.getvalue()
    assert all(f"note: {n}" in printed for n in warning["notes"])
    (event,) = obj["events"]
    assert event["legend"][0] == ".grad None: non-leaf; call .retain_grad() to keep it"
    assert any("w" in note and "leaf" in note for note in event["notes"])
    assert event["call"] == "y.backward()"
    assert event["options"] == ["retain_graph=False", "create_graph=False"]
    w = next(n for n in event["nodes"] if n["name"] == "w")
    assert w["grad"] is None and w["grad_reason"] == "non-leaf; call .retain_grad() to keep it"


def test_error_notes_are_carried(the_schema: dict) -> None:
    text = """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward()
y.backward()
"""
    obj, code = run_json(text)
    assert code == 1
    validate(obj, the_schema)
    assert obj["error"]["kind"] == "RuntimeError" and obj["error"]["line"] == 5
    (note,) = obj["error"]["notes"]
    assert "line 4" in note and "retain_graph=True" in note


def test_show_reports_and_folded_chains_are_events(the_schema: dict) -> None:
    text = """\
import torch
x = torch.tensor(1.0, requires_grad=True)
y = x
for i in range(60):
    y = y * 1.0
show(y)
"""
    obj, _ = run_json(text)
    validate(obj, the_schema)
    (event,) = obj["events"]
    assert event["kind"] == "show"
    assert event["folded_nodes"] and event["folded_nodes"][0]["count"] > 1
    full, _ = run_json(text, full=True)
    assert full["events"][0]["folded_nodes"] == []
    assert len(full["events"][0]["nodes"]) == 61


def test_second_order_matches_the_schema(the_schema: dict) -> None:
    text = """\
import torch
x = torch.arange(1.0, 10.0, requires_grad=True)
y = (x ** 3).sum()
y.backward(create_graph=True)
"""
    obj, _ = run_json(text)
    validate(obj, the_schema)
    (block,) = obj["events"][0]["second_order"]
    assert block["value"]["shape"] == [9, 9]


def test_an_internal_error_still_writes_one_object(
    the_schema: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adcli.core import session

    def broken(self, *args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(session.Session, "run_text", broken)
    obj, code = run_json("x = 1\n")
    assert code == 1
    validate(obj, the_schema)
    assert obj["error"]["kind"] == "InternalError"
    assert "ZeroDivisionError: a bug" in obj["error"]["message"]
