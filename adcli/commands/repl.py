"""`adcli repl`: the interactive session (adcli.repl)."""

from typing import Annotated

import typer

from adcli.commands.params import Debug, NoColor, ReportWidth
from adcli.core.options import RunOptions


def repl_command(
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No reports: only values and printed output.")
    ] = False,
    width: ReportWidth = None,
    full: Annotated[
        bool, typer.Option("--full", help="Show whole tensors and graphs, without summarising.")
    ] = False,
    no_history: Annotated[
        bool,
        typer.Option(
            "--no-history",
            help="Keep no history file ($ADCLI_HISTORY, else $XDG_STATE_HOME/adcli/history).",
        ),
    ] = False,
    no_color: NoColor = False,
    debug: Debug = False,
    commands: Annotated[
        bool,
        typer.Option(
            "--commands",
            help="Obey dot-commands (.load, .save ...) in piped input too; by default "
            "they are obeyed only when typed at a terminal.",
        ),
    ] = False,
) -> None:
    """Interactive session: statements line by line, a report after every backward()."""
    from adcli.repl.start import main as repl_main

    options = RunOptions(
        quiet=quiet, width=width, full=full, debug=debug, color=False if no_color else None
    )
    raise typer.Exit(repl_main(options, history=not no_history, commands=commands))
