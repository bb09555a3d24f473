"""`adcli graph FILE`: draw the graph behind a tensor (adcli.core.graphing)."""

from typing import Annotated

import typer

from adcli.commands.params import (
    Debug,
    InProcess,
    MaxMemory,
    ScriptFile,
    Timeout,
    budget_value,
    check_readable,
    fail,
    hand_over,
)


def graph_command(
    file: ScriptFile,
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
    debug: Debug = False,
    timeout: Timeout = "60",
    max_memory: MaxMemory = "4G",
    in_process: InProcess = False,
) -> None:
    """Run a script quietly, then draw the graph behind one of its tensors.

    The script runs in a child process, as with `adcli run`: when it runs longer
    than --timeout or needs more than --max-memory, or crashes, it is stopped
    with a one-line error and exit status 1.
    """
    from adcli.core.graphing import GraphOptions, UsageError, output_problem, resolve_format

    options = GraphOptions(
        var=var,
        format=fmt,
        output=output,
        full=full,
        debug=debug,
        force=force,
        timeout=budget_value("--timeout", timeout, "parse_seconds"),
        max_memory=budget_value("--max-memory", max_memory, "parse_memory"),
        in_process=in_process,
    )
    try:
        resolve_format(options)
    except UsageError as exc:
        fail(str(exc))
    problem = output_problem(options)
    if problem is not None:
        fail(problem)
    if file != "-":
        check_readable(file)

    def work() -> int:
        from adcli.core.graphing import graph_path

        return graph_path(file, options)

    hand_over(debug, work)
