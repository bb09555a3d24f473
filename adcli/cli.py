"""The `adcli` command line.

Commands are thin: they check their arguments, build options and hand over to the
module that does the work. Those modules (the runner, the engine, NumPy, Lark) are
imported inside the commands, never here, so `import adcli.cli` stays cheap and
`adcli --help` or a usage error answers at once.

Exit status: 0 success, 1 script error (or a failed golden test), 2 usage error.
Usage errors are one line on stderr, `adcli: error: ...`, never a traceback.
"""

import os
import stat
import sys
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from adcli import __version__
from adcli.options import RunOptions

try:  # recent typer (0.29 here) carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer (0.20 tested) is built on click
    from click.exceptions import ClickException

PROG = "adcli"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _error(message: str) -> None:
    """Write one `adcli: error: ...` line to stderr."""
    line = " ".join(message.split())  # always one line, whatever the message holds
    sys.stderr.write(f"{PROG}: error: {line}\n")
    sys.stderr.flush()


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    _error(message)
    raise typer.Exit(code)


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
            _error(_usage_message(exc))
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
        # Bare `adcli`: help for now; it will start the REPL once there is one.
        typer.echo(ctx.get_help())
        raise typer.Exit(EXIT_OK)


def _check_readable(path: str) -> None:
    """Fail with exit 2 unless `path` names a script we can read."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        if stat.S_ISREG(mode):  # FIFOs and devices are left to the runner: opening may block
            with open(path, "rb"):
                pass
    except OSError as exc:
        _fail(f"cannot read {path!r}: {exc.strerror or exc}")


def _internal_error(exc: BaseException) -> NoReturn:
    _fail(
        f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
        EXIT_ERROR,
    )


_D = RunOptions()  # the defaults, so the help text and RunOptions never disagree


@app.command(no_args_is_help=False)
def run(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="The .ad script to run; '-' reads it from standard input.",
            show_default=False,
        ),
    ],
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
        bool,
        typer.Option("--full", help="Show whole tensors and graphs, without summarising."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show Python tracebacks of adcli's own errors."),
    ] = False,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, metavar="N", help="Stop after N evaluation steps."),
    ] = _D.max_steps,
    max_depth: Annotated[
        int,
        typer.Option("--max-depth", min=1, metavar="N", help="Maximum depth of function calls."),
    ] = _D.max_depth,
    max_numel: Annotated[
        int,
        typer.Option(
            "--max-numel", min=1, metavar="N", help="Maximum number of elements in one tensor."
        ),
    ] = _D.max_numel,
    no_color: Annotated[
        bool,
        typer.Option("--no-color", help="No colour, even on a terminal (as NO_COLOR=1)."),
    ] = False,
) -> None:
    """Run a script, printing a report of every backward pass."""
    if file != "-":
        _check_readable(file)
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
    )
    try:
        from adcli.runner import run_path

        code = run_path(file, options)
    except BrokenPipeError:
        raise  # `adcli run x.ad | head`: typer exits quietly
    except Exception as exc:
        if debug:
            raise
        _internal_error(exc)
    raise typer.Exit(code)


@app.command("test")
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
) -> None:
    """Run golden tests: each X.ad must print exactly what X.out holds.

    The last line of X.out is the exit status, as `[exit 0]`. A failure shows a
    unified diff; exit status 1 if any test failed.
    """
    from adcli import golden

    try:
        scripts = golden.find_scripts(paths)
    except OSError as exc:
        _fail(f"cannot read {exc.filename!r}: {exc.strerror or exc}")
    if not scripts:
        _fail(f"no .ad scripts found in {', '.join(repr(p) for p in paths)}")
    summary = golden.run_all(scripts, update=update)
    raise typer.Exit(EXIT_ERROR if summary.failed else EXIT_OK)


def main() -> None:
    """Console-script entry point."""
    app()
