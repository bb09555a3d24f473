"""The typer pieces the commands share: failing with a usage error, the budget
options of `run`, `graph` and `check`, and handing over to the layer below.
"""

from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer

from adcli.commands.common import EXIT_ERROR, EXIT_USAGE, error, unreadable
from adcli.core.options import RunOptions


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    error(message)
    raise typer.Exit(code)


def check_readable(path: str) -> None:
    """Fail with exit 2 unless `path` names a script we can read."""
    message = unreadable(path)
    if message is not None:
        fail(message)


def internal_error(exc: BaseException) -> NoReturn:
    fail(
        f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
        EXIT_ERROR,
    )


def budget_value(flag: str, text: str, parser: str) -> Any:
    """The value of --timeout or --max-memory (0 stays 0: no limit); usage error if bad."""
    from adcli.core import isolation

    try:
        return getattr(isolation, parser)(text)
    except ValueError as exc:
        fail(f"{flag}: {exc}")


DEFAULTS = RunOptions()  # the defaults, so the help text and RunOptions never disagree

# Arguments and options several commands declare alike.
ScriptFile = Annotated[
    str,
    typer.Argument(
        metavar="FILE",
        help="The .ad script to run; '-' reads it from standard input.",
        show_default=False,
    ),
]
Debug = Annotated[
    bool, typer.Option("--debug", help="Show Python tracebacks of adcli's own errors.")
]
NoColor = Annotated[
    bool, typer.Option("--no-color", help="No colour, even on a terminal (as NO_COLOR=1).")
]


def _width(what: str) -> Any:
    return Annotated[
        int | None,
        typer.Option(
            "--width",
            min=20,
            max=1000,
            metavar="N",
            show_default=False,
            help=f"{what} width in columns (default: the terminal's, or 100 in a pipe).",
        ),
    ]


ReportWidth = _width("Report")
TableWidth = _width("Table")

# The budgets `run`, `graph` and `check` share (`adcli test` has its own defaults).
Timeout = Annotated[
    str,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Stop the script after this much wall-clock time (0: no limit).",
    ),
]
MaxMemory = Annotated[
    str,
    typer.Option(
        "--max-memory",
        metavar="SIZE",
        help="Memory the script may use, as 4G or 512M (0: no limit).",
    ),
]
InProcess = Annotated[
    bool,
    typer.Option(
        "--in-process",
        help="Run the script in adcli's own process, without the time and memory "
        "budgets (for trusted scripts).",
    ),
]


def hand_over(debug: bool, work: Callable[[], int]) -> NoReturn:
    """Run the layer below and exit with its status; an error of adcli's own is one
    line and exit 1, or its traceback with --debug."""
    try:
        code = work()
    except BrokenPipeError:
        raise  # `adcli run x.ad | head`: typer exits quietly
    except Exception as exc:
        if debug:
            raise
        internal_error(exc)
    raise typer.Exit(code)
