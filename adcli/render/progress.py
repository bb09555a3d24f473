"""A progress bar for the long commands (`adcli check`, `adcli run --symbolic`).

The bar goes to standard error, and only when that is a terminal: in a pipe, a
file or a golden test nothing at all is written. It appears only once a piece of
work has lasted about a second (`DELAY`), so quick runs never flash one, and it
is erased when the work ends, before the command prints its results.

    bar = Progress()                      # sys.stderr; disabled unless a terminal
    with bar.phase("checking loss.backward() at line 28", total=64):
        for ...:
            bar.advance()

A phase is the stretch of work the bar may cover: nothing else may write to the
terminal meanwhile (`adcli run --symbolic` opens one only while it builds the
formulas of a report, never while the script runs and prints). A timer thread
shows the bar when a phase outlives the delay; rich is imported only then.
`ADCLI_PROGRESS_DELAY=SECONDS` changes the delay (the tests use 0).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["DELAY", "Progress"]

#: Seconds a phase runs before its bar is shown.
DELAY = 1.0


def _delay() -> float:
    text = os.environ.get("ADCLI_PROGRESS_DELAY", "")
    try:
        value = float(text) if text else DELAY
    except ValueError:
        return DELAY
    return value if value >= 0 else DELAY


def _is_terminal(stream: IO[str]) -> bool:
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Progress:
    """A bar on `stream` (default: sys.stderr) for the phases of one command."""

    def __init__(self, stream: IO[str] | None = None, *, delay: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream)
        self.delay = _delay() if delay is None else delay
        self.description = ""
        self.total: int | None = None
        self.completed = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._bar: Any = None  # rich's Progress while shown
        self._task: Any = None
        self.shown = False  # whether a bar was ever shown (for tests)

    @contextmanager
    def phase(self, description: str, total: int | None = None) -> Iterator[Progress]:
        """Work the bar may cover; the bar is shown once it lasts `delay` seconds and
        erased when it ends."""
        self.begin(description, total)
        try:
            yield self
        finally:
            self.end()

    def begin(self, description: str, total: int | None = None) -> None:
        """Start a phase (see `phase`)."""
        self.update(description, total)
        if not self.enabled or self._timer is not None or self._bar is not None:
            return
        if self.delay <= 0:
            self._show()
            return
        self._timer = threading.Timer(self.delay, self._show)
        self._timer.daemon = True
        self._timer.start()

    def update(self, description: str, total: int | None = None) -> None:
        """A new stretch of work inside the phase: its text and size (None: unknown)."""
        with self._lock:
            self.description = description
            self.total = total
            self.completed = 0
            if self._bar is not None:  # a new task: rich's update() cannot unset a total
                self._bar.remove_task(self._task)
                self._task = self._bar.add_task(description, total=total)

    def advance(self, n: int = 1) -> None:
        """`n` more units of the current work done."""
        self.completed += n
        bar = self._bar
        if bar is not None:
            with self._lock:
                if self._bar is not None:
                    self._bar.update(self._task, completed=self.completed)

    def end(self) -> None:
        """End the phase: cancel the timer, erase the bar."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        with self._lock:
            bar, self._bar = self._bar, None
            if bar is not None:
                bar.stop()  # transient: the bar's lines are erased

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichProgress

        with self._lock:
            if self._timer is None and self.delay > 0:
                return  # the phase ended while the timer fired
            console = Console(file=self.stream, stderr=self.stream is sys.stderr)
            bar = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = bar.add_task(self.description, total=self.total, completed=self.completed)
            bar.start()
            self._bar = bar
            self.shown = True
