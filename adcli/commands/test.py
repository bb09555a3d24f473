"""`adcli test PATH...`: run scripts and compare what they print with their X.out files.

The comparing is adcli.core.golden's.
"""

from typing import Annotated

import typer

from adcli.commands.common import EXIT_ERROR, EXIT_OK
from adcli.commands.params import budget_value, fail


def test_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            help="Scripts, or directories searched recursively for *.ad files.",
            show_default=False,
        ),
    ],
    update: Annotated[
        bool,
        typer.Option(
            "--update",
            help="Rewrite each X.out with the actual output (and create missing ones).",
        ),
    ] = False,
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Stop a script after this much wall-clock time (0: no limit).",
        ),
    ] = "10",
    max_memory: Annotated[
        str,
        typer.Option(
            "--max-memory",
            metavar="SIZE",
            help="Memory each script may use, as 4G or 512M (0: no limit).",
        ),
    ] = "4G",
    jobs: Annotated[
        int,
        typer.Option("--jobs", "-j", min=1, max=256, metavar="N", help="Run N scripts at a time."),
    ] = 1,
    output_only: Annotated[
        bool,
        typer.Option(
            "--output-only",
            help="Run scripts without reports (as run -q) and compare only what they print; "
            "with --update, write that.",
        ),
    ] = False,
    tolerance: Annotated[
        str | None,
        typer.Option(
            "--tolerance",
            metavar="REL",
            show_default=False,
            help="Let decimal numbers differ by this relative tolerance, as 1e-4 "
            "(integers and text still compare exactly).",
        ),
    ] = None,
    abs_tolerance: Annotated[
        str | None,
        typer.Option(
            "--abs-tolerance",
            metavar="ABS",
            show_default=False,
            help="With --tolerance: also let numbers near 0 differ by this much.",
        ),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Write one JSON document: per script pass/fail, first difference, exit "
            "status, time and why it was stopped.",
        ),
    ] = False,
) -> None:
    """Run golden tests: each X.ad must print exactly what X.out holds.

    The last line of X.out is the exit status, as `[exit 0]`. A failure shows a
    short unified diff; exit status 1 if any test failed. Each script runs in a
    child process of its own: one that runs past --timeout, needs more than
    --max-memory or crashes fails alone, with the reason. Symbolic links to
    scripts or expected files are refused, and linked folders are not entered.
    To grade a class, --output-only compares what the scripts print without the
    reports (whose name columns change when a variable is renamed).
    """
    from adcli.core import golden
    from adcli.core.textcompare import Tolerance

    rel = _tolerance_value("--tolerance", tolerance)
    absolute = _tolerance_value("--abs-tolerance", abs_tolerance)
    if absolute is not None and rel is None:
        fail("--abs-tolerance works with --tolerance")
    grading = golden.Grading(
        output_only=output_only,
        tolerance=None if rel is None else Tolerance(rel, absolute or 0.0),
    )

    try:
        scripts = golden.find_scripts(paths)
    except OSError as exc:
        fail(f"cannot read {exc.filename!r}: {exc.strerror or exc}")
    if not scripts:
        fail(f"no .ad scripts found in {', '.join(repr(p) for p in paths)}")
    budget = None
    from adcli.core import isolation

    if isolation.available():
        budget = isolation.Budget(
            timeout=budget_value("--timeout", timeout, "parse_seconds") or None,
            max_memory=budget_value("--max-memory", max_memory, "parse_memory") or None,
        )
    summary = golden.run_all(
        scripts, update=update, budget=budget, jobs=jobs, grading=grading, json_output=json_output
    )
    raise typer.Exit(EXIT_ERROR if summary.failed else EXIT_OK)


def _tolerance_value(flag: str, text: str | None) -> float | None:
    """The number given to --tolerance/--abs-tolerance (None when not given)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value < 1e300):
        fail(f"{flag}: invalid tolerance {text!r} (a number such as 1e-4, at least 0)")
    return value
