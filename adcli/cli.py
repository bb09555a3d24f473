"""The `adcli` command line: the entry point.

The commands are a typer application, `adcli.commands.app`, one module per
command. Importing typer costs ~30 ms, a sixth of a short script's whole run, so
`main` runs the common case, `adcli run FILE [flags]` with well-formed flags, by
itself. Anything else (help, other commands, unusual or wrong arguments) goes to
typer, which gives the same results for the arguments the fast path accepts
(tests/test_cli.py runs both).

Exit status: 0 success, 1 script error (or a failed golden test), 2 usage error.
Usage errors are one line on stderr, `adcli: error: ...`, never a traceback.
"""

import os
import sys
from typing import Any

from adcli.commands.common import EXIT_ERROR, EXIT_USAGE, error, unreadable
from adcli.core.options import RunOptions

# `adcli run` flags the fast path understands: flag -> RunOptions field, and
# for options with a value their (min, max) as the typer command declares them.
_RUN_FLAGS = {
    "--quiet": "quiet",
    "-q": "quiet",
    "--json": "json",
    "--full": "full",
    "--debug": "debug",
    "--no-color": "no_color",
    "--detect-anomaly": "detect_anomaly",
    "--symbolic": "symbolic",
    "--all-reports": "all_reports",
    "--in-process": "in_process",
}
_RUN_VALUES = {
    "--width": ("width", 20, 1000),
    "--max-steps": ("max_steps", 1, None),
    "--max-depth": ("max_depth", 1, None),
    "--max-numel": ("max_numel", 1, None),
    "--report-every": ("report_every", 1, None),
}
# Options whose value is not a plain integer: flag -> (RunOptions field, parser).
# A value the parser refuses goes to typer, which gives the usage error.
_RUN_PARSED = {
    "--timeout": ("timeout", "parse_seconds"),
    "--max-memory": ("max_memory", "parse_memory"),
    "--max-tensor-memory": ("max_tensor_memory", "parse_memory"),
}


def _parse_run(args: list[str]) -> dict[str, Any] | None:
    """The options of `run ARGS`, or None when typer should parse them.

    Only plain, valid input is taken: each known flag at most once, values as
    decimal integers in range, one FILE (or '-'). Help, unknown or repeated
    flags, '--', bad values... return None, and typer answers as before.
    """
    seen: dict[str, Any] = {}
    file = None
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in _RUN_FLAGS:
            key = _RUN_FLAGS[arg]
            if key in seen:
                return None
            seen[key] = True
            continue
        name, eq, value = arg.partition("=")
        if name in _RUN_PARSED:
            key, parser = _RUN_PARSED[name]
            if not eq:
                if i >= len(args):
                    return None
                value = args[i]
                i += 1
            if key in seen:
                return None
            from adcli.core import isolation

            try:
                seen[key] = getattr(isolation, parser)(value)
            except ValueError:
                return None
            continue
        if name in _RUN_VALUES:
            key, low, high = _RUN_VALUES[name]
            if not eq:
                if i >= len(args):
                    return None
                value = args[i]
                i += 1
            if key in seen or not value.isascii() or not value.isdigit():
                return None
            n = int(value)
            if n < low or (high is not None and n > high):
                return None
            seen[key] = n
            continue
        if arg.startswith("-") and arg != "-":
            return None
        if file is not None:
            return None
        file = arg
    if file is None:
        return None
    seen["file"] = file
    return seen


def _fast_run(args: list[str]) -> int | None:
    """Run `adcli run ...` without typer; None when typer must handle `args`."""
    if not args or args[0] != "run":
        return None
    opts = _parse_run(args[1:])
    if opts is None:
        return None
    file = opts["file"]
    debug = opts.get("debug", False)
    if file != "-":
        message = unreadable(file)
        if message is not None:
            error(message)
            return EXIT_USAGE
    defaults = RunOptions()
    options = RunOptions(
        quiet=opts.get("quiet", False),
        json=opts.get("json", False),
        width=opts.get("width"),
        full=opts.get("full", False),
        debug=debug,
        max_steps=opts.get("max_steps", defaults.max_steps),
        max_depth=opts.get("max_depth", defaults.max_depth),
        max_numel=opts.get("max_numel", defaults.max_numel),
        color=False if opts.get("no_color") else None,
        symbolic=opts.get("symbolic", False),
        all_reports=opts.get("all_reports", False),
        report_every=opts.get("report_every"),
        timeout=opts.get("timeout", defaults.timeout),
        max_memory=opts.get("max_memory", defaults.max_memory),
        max_tensor_memory=opts.get("max_tensor_memory", defaults.max_tensor_memory),
        in_process=opts.get("in_process", False),
    )
    try:
        from adcli.core.runner import run_path

        if opts.get("detect_anomaly"):
            from adcli.autograd import anomaly

            anomaly.force(True)
            try:
                return run_path(file, options)
            finally:
                anomaly.force(False)
        return run_path(file, options)
    except BrokenPipeError:
        # as typer does: `adcli run x.ad | head` exits 1, quietly
        _quiet_pipes()
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if debug:
            raise
        error(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return EXIT_ERROR


def _quiet_pipes() -> None:
    """After a broken pipe, let the interpreter's final flush fail silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - no real stdout
        pass


def main() -> None:
    """Console-script entry point."""
    code = _fast_run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from adcli.commands.app import app

    app()
