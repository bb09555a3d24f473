"""Options for one run of a script, shared by the CLI, the runner and the golden tests.

This module must stay import-light (standard library only): `adcli.cli` imports it
before it knows whether the run needs NumPy or the engine at all.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import IO

# Width of the report when stdout is not a terminal (a pipe, a file, the golden
# tests): fixed, so the same script always prints the same text.
PIPE_WIDTH = 100


@dataclass(frozen=True)
class RunOptions:
    """How to run a script and what to print.

    `width` None means: the terminal's width on a terminal, else `PIPE_WIDTH`.
    `color` None means: colour only on a terminal, and never when the `NO_COLOR`
    environment variable is set to a non-empty value.
    `all_reports`/`report_every` undo the folding of repeated reports (see
    `adcli.render.folding`).
    `timeout`, `max_memory` and `in_process` matter only to `runner.run_path`.
    `display_name` is the name messages give the script (`File "x.ad", line 3`);
    None means the path as given. The golden tests set it to the file's name so
    that the expected text does not depend on the directory the tests run from.
    """

    quiet: bool = False
    json: bool = False
    width: int | None = None
    full: bool = False
    debug: bool = False
    max_steps: int = 10_000_000
    max_depth: int = 200
    max_numel: int = 50_000_000
    color: bool | None = None
    symbolic: bool = False
    call: int | None = None  # with symbolic: formulas only for the call at this line
    display_name: str | None = None
    # Reports of one call site with the same graph fold into one line between the
    # first and the last (`--all-reports` prints each; `--report-every N` every Nth).
    all_reports: bool = False
    report_every: int | None = None
    # `--html FILE`: also write every report to one self-contained page (adcli.render.html)
    html: str | None = None
    # `adcli run` runs the script in a child process with these budgets (see
    # `adcli.core.isolation`): wall-clock seconds and bytes of memory, None for no limit.
    # `in_process` runs it in this process instead, without budgets.
    timeout: float | None = 60.0
    max_memory: int | None = 4 * 1024**3
    # bytes all live tensors may hold together (`--max-tensor-memory`, adcli.autograd.budget)
    max_tensor_memory: int | None = 1024**3
    in_process: bool = False

    def use_color(self, stream: IO[str] | None = None) -> bool:
        """Whether to write colour codes to `stream` (default: sys.stdout)."""
        if self.color is not None:
            return self.color
        if os.environ.get("NO_COLOR", ""):
            return False
        return _isatty(stream)

    def resolve_width(self, stream: IO[str] | None = None) -> int:
        """The width to render at on `stream` (default: sys.stdout)."""
        if self.width is not None:
            return self.width
        if _isatty(stream):
            try:
                fd = _stream(stream).fileno()
                return max(os.get_terminal_size(fd).columns, 20)
            except (AttributeError, OSError, ValueError):
                return PIPE_WIDTH
        return PIPE_WIDTH


def _stream(stream: IO[str] | None) -> IO[str]:
    return sys.stdout if stream is None else stream


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return bool(_stream(stream).isatty())
    except (AttributeError, OSError, ValueError):
        return False
