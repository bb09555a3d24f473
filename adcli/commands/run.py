"""`adcli run FILE`: run a script and print a report after each backward call.

(The common case is parsed without typer by `adcli.cli`, with the same result.)
"""

from typing import Annotated

import typer

from adcli.commands.params import (
    DEFAULTS,
    Debug,
    InProcess,
    MaxMemory,
    NoColor,
    ReportWidth,
    ScriptFile,
    Timeout,
    budget_value,
    check_readable,
    fail,
    hand_over,
)
from adcli.core.options import RunOptions


def run(
    file: ScriptFile,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print only the script's own output, no reports."),
    ] = False,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Write one JSON object (output, variables, backward events) instead of text.",
        ),
    ] = False,
    width: ReportWidth = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="Show whole tensors and graphs, without summarising."),
    ] = False,
    debug: Debug = False,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, metavar="N", help="Stop after N evaluation steps."),
    ] = DEFAULTS.max_steps,
    max_depth: Annotated[
        int,
        typer.Option("--max-depth", min=1, metavar="N", help="Maximum depth of function calls."),
    ] = DEFAULTS.max_depth,
    max_numel: Annotated[
        int,
        typer.Option(
            "--max-numel", min=1, metavar="N", help="Maximum number of elements in one tensor."
        ),
    ] = DEFAULTS.max_numel,
    no_color: NoColor = False,
    detect_anomaly: Annotated[
        bool,
        typer.Option(
            "--detect-anomaly",
            help="Stop a backward at the first node that returns NaN, naming the line that "
            "made it (as torch.autograd.set_detect_anomaly(True)).",
        ),
    ] = False,
    symbolic: Annotated[  # adcli.symbolic: formula columns and local rules in reports
        bool,
        typer.Option(
            "--symbolic",
            help="Show beside each number the formula it came from (checked numerically) "
            "and each grad_fn's local derivative rule.",
        ),
    ] = False,
    call: Annotated[
        int | None,
        typer.Option(
            "--call",
            min=1,
            metavar="LINE",
            show_default=False,
            help="With --symbolic: formulas only for the backward()/grad() call at this "
            "script line.",
        ),
    ] = None,
    all_reports: Annotated[
        bool,
        typer.Option(
            "--all-reports",
            help="Print every report in full; by default a call repeated with the same graph "
            "prints its first and last report and one line for those between.",
        ),
    ] = False,
    report_every: Annotated[
        int | None,
        typer.Option(
            "--report-every",
            min=1,
            metavar="N",
            show_default=False,
            help="Also print every Nth report of a repeated call in full.",
        ),
    ] = None,
    html: Annotated[
        str | None,
        typer.Option(
            "--html",
            metavar="FILE",
            show_default=False,
            help="Also write every report to FILE as one self-contained web page: the graph "
            "with clickable nodes and a slider that steps through the backward pass.",
        ),
    ] = None,
    timeout: Timeout = "60",
    max_memory: MaxMemory = "4G",
    max_tensor_memory: Annotated[
        str,
        typer.Option(
            "--max-tensor-memory",
            metavar="SIZE",
            help="Memory all live tensors may hold together, as 1G or 512M (0: no limit).",
        ),
    ] = "1G",
    in_process: InProcess = False,
) -> None:
    """Run a script, printing a report of every backward pass.

    The script runs in a child process: when it runs longer than --timeout or
    needs more than --max-memory, or crashes, it is stopped with a one-line
    error and exit status 1.
    """
    if call is not None and not symbolic:
        fail("--call works with --symbolic (adcli check takes --call too)")
    if file != "-":
        check_readable(file)
    options = RunOptions(
        quiet=quiet,
        json=json_output,
        width=width,
        full=full,
        debug=debug,
        max_steps=max_steps,
        max_depth=max_depth,
        max_numel=max_numel,
        color=False if no_color else None,
        symbolic=symbolic,
        call=call,
        all_reports=all_reports,
        report_every=report_every,
        html=html,
        timeout=budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=budget_value("--max-memory", max_memory, "parse_memory"),
        max_tensor_memory=budget_value("--max-tensor-memory", max_tensor_memory, "parse_memory"),
        in_process=in_process,
    )

    def work() -> int:
        from adcli.core.runner import run_path

        if not detect_anomaly:
            return run_path(file, options)
        from adcli.autograd import anomaly

        anomaly.force(True)
        try:
            return run_path(file, options)
        finally:
            anomaly.force(False)

    hand_over(debug, work)
