"""The `adcli` command line, as a typer application (`adcli.cli` loads it on demand).

`adcli.cli.main` runs the common `adcli run FILE [flags]` itself, without
importing typer (~30 ms of start-up); everything else (help, other commands,
unusual or wrong arguments) comes here.

Commands are thin: they check their arguments, build options and hand over to the
module that does the work. Those modules (the runner, the engine, NumPy, Lark) are
imported inside the commands, never here, so `import adcli.cli` stays cheap and
`adcli --help` or a usage error answers at once.

Exit status: 0 success, 1 script error (or a failed golden test), 2 usage error.
Usage errors are one line on stderr, `adcli: error: ...`, never a traceback.
"""

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


from adcli.cli import _error, _unreadable  # noqa: E402 - shared with the fast path


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
        # Bare `adcli`: the REPL (reading statements from stdin when it is not a terminal).
        from adcli.repl import main as repl_main

        raise typer.Exit(repl_main(RunOptions()))


@app.command("repl")
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
    from adcli.repl import main as repl_main

    options = RunOptions(
        quiet=quiet, width=width, full=full, debug=debug, color=False if no_color else None
    )
    raise typer.Exit(repl_main(options, history=not no_history, commands=commands))


def _check_readable(path: str) -> None:
    """Fail with exit 2 unless `path` names a script we can read."""
    message = _unreadable(path)
    if message is not None:
        _fail(message)


def _internal_error(exc: BaseException) -> NoReturn:
    _fail(
        f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
        EXIT_ERROR,
    )


def _budget_value(flag: str, text: str, parser: str) -> Any:
    """The value of --timeout or --max-memory (0 stays 0: no limit); usage error if bad."""
    from adcli import isolation

    try:
        return getattr(isolation, parser)(text)
    except ValueError as exc:
        _fail(f"{flag}: {exc}")


_D = RunOptions()  # the defaults, so the help text and RunOptions never disagree

# The budgets `run`, `graph` and `check` share (`adcli test` has its own defaults).
_Timeout = Annotated[
    str,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Stop the script after this much wall-clock time (0: no limit).",
    ),
]
_MaxMemory = Annotated[
    str,
    typer.Option(
        "--max-memory",
        metavar="SIZE",
        help="Memory the script may use, as 4G or 512M (0: no limit).",
    ),
]
_InProcess = Annotated[
    bool,
    typer.Option(
        "--in-process",
        help="Run the script in adcli's own process, without the time and memory "
        "budgets (for trusted scripts).",
    ),
]


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
    timeout: _Timeout = "60",
    max_memory: _MaxMemory = "4G",
    max_tensor_memory: Annotated[
        str,
        typer.Option(
            "--max-tensor-memory",
            metavar="SIZE",
            help="Memory all live tensors may hold together, as 1G or 512M (0: no limit).",
        ),
    ] = "1G",
    in_process: _InProcess = False,
) -> None:
    """Run a script, printing a report of every backward pass.

    The script runs in a child process: when it runs longer than --timeout or
    needs more than --max-memory, or crashes, it is stopped with a one-line
    error and exit status 1.
    """
    if call is not None and not symbolic:
        _fail("--call works with --symbolic (adcli check takes --call too)")
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
        symbolic=symbolic,
        call=call,
        all_reports=all_reports,
        report_every=report_every,
        html=html,
        timeout=_budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=_budget_value("--max-memory", max_memory, "parse_memory"),
        max_tensor_memory=_budget_value("--max-tensor-memory", max_tensor_memory, "parse_memory"),
        in_process=in_process,
    )
    try:
        from adcli.runner import run_path

        if detect_anomaly:
            from adcli import anomaly

            anomaly.force(True)
            try:
                code = run_path(file, options)
            finally:
                anomaly.force(False)
        else:
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
    from adcli import golden
    from adcli.textcompare import Tolerance

    rel = _tolerance_value("--tolerance", tolerance)
    absolute = _tolerance_value("--abs-tolerance", abs_tolerance)
    if absolute is not None and rel is None:
        _fail("--abs-tolerance works with --tolerance")
    grading = golden.Grading(
        output_only=output_only,
        tolerance=None if rel is None else Tolerance(rel, absolute or 0.0),
    )

    try:
        scripts = golden.find_scripts(paths)
    except OSError as exc:
        _fail(f"cannot read {exc.filename!r}: {exc.strerror or exc}")
    if not scripts:
        _fail(f"no .ad scripts found in {', '.join(repr(p) for p in paths)}")
    budget = None
    from adcli import isolation

    if isolation.available():
        budget = isolation.Budget(
            timeout=_budget_value("--timeout", timeout, "parse_seconds") or None,
            max_memory=_budget_value("--max-memory", max_memory, "parse_memory") or None,
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
        _fail(f"{flag}: invalid tolerance {text!r} (a number such as 1e-4, at least 0)")
    return value


@app.command("graph")
def graph_command(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="The .ad script to run; '-' reads it from standard input.",
            show_default=False,
        ),
    ],
    var: Annotated[
        str | None,
        typer.Option(
            "--var",
            metavar="NAME",
            show_default=False,
            help="Draw the graph behind this variable (default: the root of the last "
            "backward()/grad() call, else the last tensor assigned that has a grad_fn).",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="tree|dot|mermaid|svg|png|pdf",
            show_default=False,
            help="What to draw: a terminal tree, Graphviz DOT, Mermaid, or an SVG, PNG or PDF "
            "image (needs Graphviz's dot). Default: from the -o suffix (.svg .png .pdf .dot "
            ".gv .mmd), else tree. Nodes show their value and gradient.",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            show_default=False,
            help="Write the drawing to FILE instead of standard output.",
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="Do not fold long chains of similar nodes in the tree."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite the -o file if it exists (never through a symbolic link).",
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show Python tracebacks of adcli's own errors."),
    ] = False,
    timeout: _Timeout = "60",
    max_memory: _MaxMemory = "4G",
    in_process: _InProcess = False,
) -> None:
    """Run a script quietly, then draw the graph behind one of its tensors.

    The script runs in a child process, as with `adcli run`: when it runs longer
    than --timeout or needs more than --max-memory, or crashes, it is stopped
    with a one-line error and exit status 1.
    """
    from adcli.graphcmd import GraphOptions, UsageError, output_problem, resolve_format

    options = GraphOptions(
        var=var,
        format=fmt,
        output=output,
        full=full,
        debug=debug,
        force=force,
        timeout=_budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=_budget_value("--max-memory", max_memory, "parse_memory"),
        in_process=in_process,
    )
    try:
        resolve_format(options)
    except UsageError as exc:
        _fail(str(exc))
    problem = output_problem(options)
    if problem is not None:
        _fail(problem)
    if file != "-":
        _check_readable(file)
    try:
        from adcli.graphcmd import graph_path

        code = graph_path(file, options)
    except BrokenPipeError:
        raise
    except Exception as exc:
        if debug:
            raise
        _internal_error(exc)
    raise typer.Exit(code)


@app.command("check")
def check_command(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="The .ad script to run; '-' reads it from standard input.",
            show_default=False,
        ),
    ],
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
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=20,
            max=1000,
            metavar="N",
            show_default=False,
            help="Table width in columns (default: the terminal's, or 100 in a pipe).",
        ),
    ] = None,
    no_color: Annotated[
        bool,
        typer.Option("--no-color", help="No colour, even on a terminal (as NO_COLOR=1)."),
    ] = False,
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
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show Python tracebacks of adcli's own errors."),
    ] = False,
    timeout: _Timeout = "60",
    max_memory: _MaxMemory = "4G",
    in_process: _InProcess = False,
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
    from adcli.gradcheck import CheckOptions

    if not eps > 0 or eps == float("inf"):
        _fail(f"--eps must be a positive number, not {eps}")
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
        timeout=_budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=_budget_value("--max-memory", max_memory, "parse_memory"),
        in_process=in_process,
    )
    if file != "-":
        _check_readable(file)
    try:
        from adcli.gradcheck import check_path

        code = check_path(file, options)
    except BrokenPipeError:
        raise
    except Exception as exc:
        if debug:
            raise
        _internal_error(exc)
    raise typer.Exit(code)
