"""`adcli check FILE`: check every gradient a script computes (adcli.core.checker)."""

from typing import Annotated

import typer

from adcli.commands.params import (
    Debug,
    InProcess,
    MaxMemory,
    NoColor,
    ScriptFile,
    TableWidth,
    Timeout,
    budget_value,
    check_readable,
    fail,
    hand_over,
)


def check_command(
    file: ScriptFile,
    eps: Annotated[
        float,
        typer.Option("--eps", metavar="EPS", help="Finite-difference step (positive)."),
    ] = 1e-6,
    rtol: Annotated[
        float, typer.Option("--rtol", min=0.0, metavar="RTOL", help="Relative tolerance.")
    ] = 1e-3,
    atol: Annotated[
        float, typer.Option("--atol", min=0.0, metavar="ATOL", help="Absolute tolerance.")
    ] = 1e-5,
    max_elements: Annotated[
        int,
        typer.Option(
            "--max-elements",
            min=1,
            metavar="N",
            help="Check at most N elements of each tensor per call (evenly spread).",
        ),
    ] = 1000,
    full: Annotated[
        bool,
        typer.Option("--full", help="One table per call, also for calls repeated in a loop."),
    ] = False,
    width: TableWidth = None,
    no_color: NoColor = False,
    call: Annotated[
        int | None,
        typer.Option(
            "--call",
            min=1,
            metavar="LINE",
            show_default=False,
            help="Check only the backward()/grad() call at this script line.",
        ),
    ] = None,
    debug: Debug = False,
    timeout: Timeout = "60",
    max_memory: MaxMemory = "4G",
    in_process: InProcess = False,
) -> None:
    """Check every gradient a script computes against finite differences.

    Runs the script quietly; after each backward() and autograd.grad() call, the
    graph is evaluated again in float64 with each element of each differentiated
    tensor moved by +eps and -eps, and the central difference is compared with the
    engine's gradient (|analytic - numeric| <= atol + rtol * |numeric|). Where the
    one-sided differences disagree (relu or abs at 0, clamp at a bound) a mismatch
    is a kink, not a failure. create_graph=True calls also get their second
    derivatives checked. Exit status 1 when a gradient fails or the script fails.
    The script runs in a child process with the budgets of `adcli run`
    (--timeout, --max-memory).
    """
    from adcli.core.checker import CheckOptions

    if not eps > 0 or eps == float("inf"):
        fail(f"--eps must be a positive number, not {eps}")
    options = CheckOptions(
        eps=eps,
        rtol=rtol,
        atol=atol,
        max_elements=max_elements,
        full=full,
        width=width,
        color=False if no_color else None,
        debug=debug,
        call=call,
        timeout=budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=budget_value("--max-memory", max_memory, "parse_memory"),
        in_process=in_process,
    )
    if file != "-":
        check_readable(file)

    def work() -> int:
        from adcli.core.checker import check_path

        return check_path(file, options)

    hand_over(debug, work)
