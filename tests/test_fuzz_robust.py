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

from adcli.core import isolation
from tests.fuzz.robust import Program, Verdict, classify, fuzz, run_batched, run_cli, run_one

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


def test_a_batch_cut_short_keeps_what_it_finished() -> None:
    """A program that hangs in a batch is decided alone, and the programs after it
    still run (as a batch again); the ones before it keep their rows."""
    texts = ["print(1)\n", "l = []\nwhile True:\n    l.insert(0, 1)\n", "print(2)\n", "x = y\n"]
    programs = [Program(f"t:{i}", "grammar", t, max_steps=10**12) for i, t in enumerate(texts)]
    got = [(p.seed, v) for p, v, _ in run_batched(iter(programs), 1.0, 1, 4)]
    assert got == [
        ("t:0", Verdict("clean")),
        ("t:1", Verdict("budget", "it ran longer than N s")),
        ("t:2", Verdict("clean")),
        ("t:3", Verdict("error", "NameError")),
    ]


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


# Shrunk cases the long campaign found, each fixed; they must stay fixed.
REGRESSIONS: list[tuple[str, str]] = [
    # hashing a tuple nested a million deep overflowed the 8 MB C stack (SIGSEGV);
    # the run now gives the stack room (adcli.core.isolation.deep_stack)
    ("deep_tuple_key", "t = ()\nfor i in range(10**6):\n    t = (t,)\nd = {t: 1}\nprint(len(d))\n"),
    # a lone surrogate in a string literal (stdin read with surrogateescape, run_text)
    # was an internal error: AttributeError: 'UnicodeEncodeError' has no 'msg'
    ("surrogate_in_string", 'x = 1\ns = "a\ud800b"\nprint(s)\n'),
    ("surrogate_in_docstring", 'def f():\n    """T\udfffwo"""\n    return 1\n'),
]


@pytest.mark.parametrize("text", [t for _, t in REGRESSIONS], ids=[n for n, _ in REGRESSIONS])
@pytest.mark.parametrize("quiet", [True, False])
def test_campaign_findings_stay_fixed(text: str, quiet: bool) -> None:
    verdict = run_one(Program("regression", "fixed", text, quiet=quiet), TIMEOUT)
    assert not verdict.bad, verdict


def test_a_lone_surrogate_in_a_string_is_a_located_syntax_error() -> None:
    from adcli.lang.errors import ScriptSyntaxError
    from adcli.lang.parser import parse
    from adcli.lang.source import Source

    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("x.ad", 'x = 1\ns = "a\ud800b"\n'))
    assert info.value.message == "invalid string literal: surrogates not allowed"
    assert (info.value.span.line, info.value.span.column) == (2, 5)


def test_json_variables_of_lists_sharing_items_are_bounded() -> None:
    """`--json` wrote the variable `l = [l, l]` (doubled 40 times) item by item, 2**40
    of them, until the time budget stopped it; the lists inside a variable now write
    at most the variable limit of items, the rest as {"type": "list"}."""
    text = "l = []\nfor i in range(40):\n    l = [l, l]\nprint(len(l))\n"
    verdict = run_one(Program("regression", "fixed", text, json=True), TIMEOUT)
    assert verdict == Verdict("clean"), verdict
