"""Golden tests: one test per .ad script under samples/ and tests/golden/.

Each script's output must match its X.out (see adcli/core/golden.py); this is the
same check `adcli test samples tests/golden` makes. `--update-goldens` rewrites
the expected files (review the diff before committing).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adcli.core import golden

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = golden.find_scripts(
    [d for d in (ROOT / "samples", ROOT / "tests" / "golden") if d.is_dir()]
)


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.relative_to(ROOT).as_posix() for s in SCRIPTS])
def test_golden(script: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("adcli.core.runner")
    update = request.config.getoption("--update-goldens")
    outcome = golden.check(script, update=update)
    if not outcome.ok:
        pytest.fail(outcome.report(), pytrace=False)
