"""The `adcli` command line as a typer application, gathering the commands of
this package (`adcli.cli.main` loads it for anything but the common
`adcli run FILE [flags]`, which it runs itself without typer's ~30 ms).

Commands are thin: they check their arguments, build options and hand over to the
module that does the work. Those modules (the runner, the engine, NumPy, Lark) are
imported inside the commands, never here, so loading the application stays cheap
and `adcli --help` or a usage error answers at once.
"""

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from adcli import __version__
from adcli.commands import check, graph, repl, run, test
from adcli.commands.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, PROG, error
from adcli.core.options import RunOptions

try:  # recent typer (0.29 here) carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer (0.20 tested) is built on click
    from click.exceptions import ClickException


def _usage_message(exc: ClickException) -> str:
    message = exc.format_message().strip().rstrip(".")
    if len(message) > 1 and message[0].isupper() and message[1].islower():
        message = message[0].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and exc.exit_code == EXIT_USAGE:
        message = f"{message} (see '{ctx.command_path} -h')"
    return message


class _AdcliGroup(TyperGroup):
    """Runs the command line and turns every usage error into one line and exit 2.

    Both the console script and `typer.testing.CliRunner` come through `main`,
    so tests see exactly what users see.
    """

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(
                args=args,
                prog_name=PROG,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except ClickException as exc:
            error(_usage_message(exc))
            code = exc.exit_code
        except typer.Abort:
            code = EXIT_ERROR
        else:
            code = result if isinstance(result, int) and not isinstance(result, bool) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=_AdcliGroup,
    name=PROG,
    help="Run .ad scripts (Python with PyTorch's names) and see, node by node, "
    "how reverse-mode autograd computes their gradients.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        # Bare `adcli`: the REPL (reading statements from stdin when it is not a terminal).
        from adcli.repl.start import main as repl_main

        raise typer.Exit(repl_main(RunOptions()))


# In this order in `adcli --help`.
app.command("repl")(repl.repl_command)
app.command(no_args_is_help=False)(run.run)
app.command("test")(test.test_command)
app.command("graph")(graph.graph_command)
app.command("check")(check.check_command)
