"""Shared fixtures. Keep this file free of heavy imports (no torch, no numpy)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import settings
from typer.testing import CliRunner, Result

# Property tests explore the same cases on every run (CI included), so a failure
# is reproducible and no run goes red by chance; tests may still raise max_examples.
settings.register_profile("adcli", derandomize=True, database=None, deadline=None)
settings.load_profile("adcli")

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite each golden X.out from the actual output (and create missing ones)",
    )


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's top directory (where pyproject.toml is)."""
    return REPO_ROOT


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """Invoke the adcli command line in-process: `run_cli(["run", "x.ad"], input=None)`.

    The result has `exit_code`, `stdout`, `stderr` and `output` (both interleaved).
    """
    from adcli.commands.app import app

    runner = CliRunner()

    def invoke(args: Sequence[str], input: str | None = None, **kwargs) -> Result:
        return runner.invoke(app, list(args), input=input, **kwargs)

    return invoke
