"""`adcli repl`: the interactive session (adcli.repl)."""

from typing import Annotated

import typer

from adcli.core.options import RunOptions


def repl_command(
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No reports: only values and printed output.")
    ] = False,
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=20,
            max=1000,
            metavar="N",
            show_default=False,
            help="Report width in columns (default: the terminal's, or 100 in a pipe).",
        ),
    ] = None,
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
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colour, even on a terminal (as NO_COLOR=1).")
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show Python tracebacks of adcli's own errors.")
    ] = False,
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
