"""Run a script in a child process with hard budgets: wall clock, CPU time, memory.

The language's own limits (steps, depth, elements) are checks in front of
particular operations. This module is the backstop around all of them: each
script runs in a forked child, in a process group of its own, with
`resource.setrlimit` budgets for CPU time and address space, while the parent
waits with a wall-clock deadline and kills the child's whole group when it
passes. Whatever the script does in one C-level step (a huge `in range(...)`,
`math.factorial(10**7)`, an allocation, a segfault), the parent stays in
control and says in one line why the script was stopped. A child dies with its
parent (Linux), even when the parent is killed with SIGKILL.

Output, three ways:

- "inherit": the child writes to the parent's own stdout and stderr (their
  file descriptors), as produced, in order; `adcli run` on a terminal or a pipe;
- "relay": the child sends each write as a frame (`o` or `e`, length, UTF-8; `b`
  and bytes for `out.buffer`) on one pipe, and the parent writes it to its
  `out`/`err` stream objects, keeping the order (streams without a file
  descriptor, such as a test runner's);
- "capture": stdout and stderr go down one pipe and come back as one string
  (`adcli test`), at most `capture_limit` bytes of it.

Forking costs about a millisecond: `adcli run` forks before NumPy and the
engine are imported (the child imports them), `adcli test` forks each script
from a parent that imported them once. Standard library only.
"""

from __future__ import annotations

import math
import os
import select
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = [
    "Budget",
    "Finished",
    "available",
    "run_isolated",
    "run_many",
    "parse_memory",
    "format_memory",
    "format_seconds",
    "deep_stack",
    "STOPPED",
]

DEFAULT_RUN_TIMEOUT = 60.0
DEFAULT_TEST_TIMEOUT = 10.0
DEFAULT_MAX_MEMORY = 4 * 1024**3
LIBRARY_HEADROOM = 1024**3  # address space for mapping libraries loaded late (MKL's)
DEFAULT_CAPTURE_LIMIT = 16 * 1024**2  # what one `adcli test` script may print

STOPPED = "the script was stopped: "

# Exit statuses the child uses to tell the parent why it ended; a script's own
# run exits 0, 1 or 2.
EXIT_OUT_OF_MEMORY = 86
EXIT_CHILD_FAILED = 87

# Ctrl-C: the child gets SIGINT (its own handler reports the interrupted line);
# if it has not ended this long after, or on a second Ctrl-C, it is killed.
INTERRUPT_GRACE = 2.0

#: A child's work: write to (out, err), return the exit status.
Body = Callable[[IO[str], IO[str]], int]


@dataclass(frozen=True)
class Budget:
    """What one script may use. None: no limit of that kind."""

    timeout: float | None = DEFAULT_RUN_TIMEOUT  # wall-clock seconds
    max_memory: int | None = DEFAULT_MAX_MEMORY  # bytes of address space, on top of adcli's own

    def timeout_text(self) -> str:
        return f"--timeout {format_seconds(self.timeout or 0)}"

    def memory_text(self) -> str:
        return f"--max-memory {format_memory(self.max_memory or 0)}"


@dataclass
class Finished:
    """How a child ended: its exit status, why it was stopped (None: it was not),
    and in "capture" mode what it printed."""

    code: int
    reason: str | None = None
    output: str = ""
    seconds: float | None = None  # wall-clock time from fork to exit
    peak_rss: int | None = None  # the child's largest resident set, bytes (None: unknown)

    @property
    def message(self) -> str | None:
        """`the script was stopped: ...` or None."""
        return None if self.reason is None else STOPPED + self.reason


def available() -> bool:
    """Whether scripts can run in a child process here (POSIX fork and rlimits)."""
    if not hasattr(os, "fork") or sys.platform == "win32":
        return False
    try:
        import resource  # noqa: F401
    except ImportError:  # pragma: no cover - not POSIX
        return False
    return True


# ---------------------------------------------------------------- figures


def parse_memory(text: str) -> int:
    """Bytes from `4G`, `512M`, `4GiB`, `1.5g`, `100000`; `0` means no limit.

    Raises ValueError with a sentence for the user.
    """
    s = text.strip().lower().replace(" ", "")
    if s.endswith("ib"):
        s = s[:-2]
    elif s.endswith("b"):
        s = s[:-1]
    scale = 1
    if s and s[-1] in "kmgt":
        scale = 1024 ** ("kmgt".index(s[-1]) + 1)
        s = s[:-1]
    try:
        value = float(s)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0 or (value > 0 and value * scale < 1024**2):
        raise ValueError(
            f"invalid memory size {text!r} (say 4G, 512M or 0 for no limit; at least 1M)"
        )
    return int(value * scale)


def parse_seconds(text: str) -> float:
    """Seconds from `60`, `2.5`, `0` (no limit); raises ValueError with a sentence."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"invalid time {text!r} (a number of seconds; 0 for no limit)")
    return value


def format_memory(n: int) -> str:
    """`4 GiB`, `512 MiB`, `1.5 GiB`."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value != int(value) else f"{int(value)} {unit}"
    return f"{n} bytes"


def format_seconds(x: float) -> str:
    """`60`, `2.5` (seconds, as the flag takes them)."""
    return f"{int(x)}" if x == int(x) else f"{x:g}"


# ---------------------------------------------------------------- the C stack

#: How far the C stack may grow while a script runs (a hard limit below it wins).
DEEP_STACK = 16 * 1024**3
#: The stack of each thread a child starts (the progress bar's, rich's refresher).
THREAD_STACK = 8 * 1024**2

_deep_stack_depth = 0


@contextmanager
def deep_stack() -> Iterator[None]:
    """Let the C stack grow as far as the memory budget allows while the block runs.

    Hashing, comparing or printing a tuple nested a million deep (`t = (t,)` in a
    loop, then `{t: 1}`) recurses in C with no depth check: with the usual 8 MB
    stack that is a segfault, with room a slow step the time and memory budgets
    bound (found by tests/fuzz/robust.py). The limit is put back afterwards, so
    programs started later (Graphviz's dot, a test runner's subprocesses) do not
    inherit it: glibc sizes a new process's thread stacks from it. Nested uses
    act once; a no-op where rlimits are missing.
    """
    global _deep_stack_depth
    _deep_stack_depth += 1
    restore = _raise_stack_limit() if _deep_stack_depth == 1 else None
    try:
        yield
    finally:
        _deep_stack_depth -= 1
        if restore is not None:
            restore()


def _raise_stack_limit() -> Callable[[], None] | None:
    """Raise RLIMIT_STACK's soft limit; the undo (None when nothing changed)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        want = DEEP_STACK if hard == resource.RLIM_INFINITY else hard
        if soft == resource.RLIM_INFINITY or soft >= want:
            return None
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or refused: keep the default
        return None

    def restore() -> None:
        try:
            resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
        except (ValueError, OSError):  # pragma: no cover - lowering is always allowed
            pass

    return restore


# ---------------------------------------------------------------- the child


def _set_limits(budget: Budget) -> None:
    """Apply `budget` to this (child) process: address space, CPU time, no core files."""
    import resource

    def limit(kind: int, soft: int, hard: int) -> None:
        _, old_hard = resource.getrlimit(kind)
        if old_hard != resource.RLIM_INFINITY:
            hard = min(hard, old_hard)
            soft = min(soft, hard)
        try:
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):  # pragma: no cover - a platform that refuses
            pass

    limit(resource.RLIMIT_CORE, 0, 0)
    if budget.max_memory:
        # glibc sizes a thread's stack from RLIMIT_STACK as it was when the process
        # started: one started under a raised limit (`ulimit -s 16777216`) would
        # ask 16 GiB per thread, more than the budget ("can't start new thread").
        import threading

        try:
            threading.stack_size(THREAD_STACK)
        except (ValueError, RuntimeError):  # pragma: no cover - a platform that refuses
            pass
        # On top of what is mapped now (the interpreter, NumPy, BLAS buffers), so
        # the figure means the same whatever adcli itself happened to map.
        size = _mapped_bytes() + budget.max_memory
        # the hard limit leaves room for loading MKL's libraries when a script first
        # needs them (adcli.autograd.mkl raises its soft limit for that alone): under
        # a budget nearly used up, MKL could not map them and would end the process
        limit(resource.RLIMIT_AS, size, size + LIBRARY_HEADROOM)
    if budget.timeout:
        # A backstop for a parent that is itself killed: the wall clock is the real
        # budget. BLAS may keep every CPU busy, so CPU time may run faster than it.
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        soft = math.ceil(budget.timeout * max(1, cpus)) + 1
        limit(resource.RLIMIT_CPU, soft, soft + 2)


def _mapped_bytes() -> int:
    """This process's address space now (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _FdWriter:
    """A text stream over a pipe: each write goes out at once, framed or raw."""

    def __init__(self, fd: int, tag: bytes | None) -> None:
        self._fd = fd
        self._tag = tag

    def write(self, s: str) -> int:
        data = s.encode("utf-8", "surrogatepass")
        if self._tag is not None:
            data = self._tag + struct.pack("<I", len(data)) + data
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"

    @property
    def buffer(self) -> _BinaryFdWriter:
        """Bytes to the same place (`adcli graph --format png` to standard output)."""
        return _BinaryFdWriter(self._fd, b"b" if self._tag == b"o" else self._tag)


class _BinaryFdWriter:
    """The binary side of an `_FdWriter`: bytes framed with tag `b` (relay) or raw."""

    def __init__(self, fd: int, tag: bytes | None) -> None:
        self._fd = fd
        self._tag = tag

    def write(self, data: bytes) -> int:
        framed = bytes(data)
        if self._tag is not None:
            framed = self._tag + struct.pack("<I", len(framed)) + framed
        view = memoryview(framed)
        while view:
            view = view[os.write(self._fd, view) :]
        return len(data)

    def flush(self) -> None:
        pass


def _die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this child when its parent dies (Linux), so a parent
    killed with SIGKILL (which it cannot catch to kill the group) leaves no script
    running until its CPU budget. A no-op elsewhere.

    The signal follows the parent's forking thread: adcli forks from its main
    thread, which lives as long as the parent waits.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes  # NumPy imports it anyway: no cost to `adcli run`

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1  # <linux/prctl.h>
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (ImportError, OSError, AttributeError):  # no ctypes, or no prctl
        return
    if os.getppid() != parent:  # the parent died between fork() and prctl()
        os._exit(EXIT_CHILD_FAILED)


def _child(
    body: Body,
    budget: Budget,
    mode: str,
    wfd: int | None,
    debug: bool,
    prepare: Any,
    parent: int,
) -> None:
    """The forked child: isolate, limit, run `body`, exit. Never returns."""
    code = EXIT_CHILD_FAILED
    err: Any = sys.stderr
    try:
        os.setpgid(0, 0)  # a group of its own, so the parent can kill all of it
        _die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # In its own group the child is not the terminal's foreground: let it write
        # even with `stty tostop`, and never stop it reading (stdin is not its).
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        faulthandler = sys.modules.get("faulthandler")
        if faulthandler is not None and faulthandler.is_enabled():
            faulthandler.disable()  # a crash is the parent's one line, never a dump
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        if mode == "inherit":
            out: Any = sys.stdout
            err = sys.stderr
        elif mode == "relay":
            assert wfd is not None
            out, err = _FdWriter(wfd, b"o"), _FdWriter(wfd, b"e")
        else:
            assert wfd is not None
            out = err = _FdWriter(wfd, None)
        if prepare is not None:
            prepare()
        _set_limits(budget)
        code = body(out, err)
    except MemoryError:
        code = EXIT_OUT_OF_MEMORY
    except KeyboardInterrupt:
        code = 130
    except BaseException as exc:  # an adcli bug: one line, or the traceback with --debug
        try:
            if debug:
                err.write(traceback.format_exc())
            else:
                err.write(
                    f"adcli: error: internal error: {type(exc).__name__}: {exc} "
                    "(run with --debug for the traceback)\n"
                )
        except BaseException:
            pass
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


# ---------------------------------------------------------------- the parent


@dataclass
class _Job:
    body: Body
    budget: Budget
    mode: str  # "inherit", "relay" or "capture"
    out: IO[str] | None = None  # relay targets
    err: IO[str] | None = None
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    debug: bool = False
    prepare: Any = None  # called in the child before the limits are set


@dataclass
class _Child:
    job: _Job
    pid: int
    fd: int | None  # read end of the output pipe
    pidfd: int | None
    deadline: float | None
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    pending: bytes = b""  # relay: an incomplete frame
    reason: str | None = None
    status: int | None = None
    peak_rss: int | None = None
    interrupted_at: float | None = None
    started: float = field(default_factory=time.monotonic)


def _start(job: _Job) -> _Child:
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    rfd = wfd = None
    if job.mode != "inherit":
        rfd, wfd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        if rfd is not None:
            os.close(rfd)
        _child(job.body, job.budget, job.mode, wfd, job.debug, job.prepare, parent)
    if wfd is not None:
        os.close(wfd)
    try:  # the parent sets the group too, so a kill right away reaches it
        os.setpgid(pid, pid)
    except OSError:
        pass
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # an old kernel: poll instead
            pidfd = None
    timeout = job.budget.timeout
    deadline = time.monotonic() + timeout if timeout else None
    return _Child(job, pid, rfd, pidfd, deadline)


def _kill(child: _Child, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(child.pid, sig)
    except OSError:
        try:
            os.kill(child.pid, sig)
        except OSError:
            pass


def _read(child: _Child) -> None:
    """Read what the child wrote; at end of file close the pipe."""
    assert child.fd is not None
    try:
        data = os.read(child.fd, 65536)
    except OSError:
        data = b""
    if not data:
        os.close(child.fd)
        child.fd = None
        return
    job = child.job
    if job.mode == "relay":
        _relay(child, data)
        return
    child.size += len(data)
    if child.size > job.capture_limit:
        keep = len(data) - (child.size - job.capture_limit)
        child.chunks.append(data[: max(keep, 0)])
        if child.reason is None:
            child.reason = f"it printed more than {format_memory(job.capture_limit)}"
            _kill(child)
        return
    child.chunks.append(data)


def _relay(child: _Child, data: bytes) -> None:
    buf = child.pending + data
    i = 0
    job = child.job
    while len(buf) - i >= 5:
        (n,) = struct.unpack_from("<I", buf, i + 1)
        if len(buf) - i - 5 < n:
            break
        tag = buf[i : i + 1]
        payload = buf[i + 5 : i + 5 + n]
        i += 5 + n
        if tag == b"b":  # bytes for the binary side of `out`
            _relay_bytes(job.out, payload)
            continue
        try:
            text = payload.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # bytes written to err's `buffer`
            text = payload.decode("utf-8", "replace")
        stream = job.out if tag == b"o" else job.err
        if stream is not None:
            if tag == b"e" and job.out is not None and job.out is not stream:
                job.out.flush()
            stream.write(text)
            stream.flush()
    child.pending = buf[i:]


def _relay_bytes(out: IO[str] | None, data: bytes) -> None:
    """Write `data` to the binary side of `out` (its `buffer`), after its text."""
    buffer = getattr(out, "buffer", None)
    if out is None or buffer is None:
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def _reap(child: _Child, block: bool) -> bool:
    """Collect the child's exit status; False when it is still running."""
    try:
        pid, status, usage = os.wait4(child.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        child.status = child.status if child.status is not None else 0
        return True
    if pid == 0:
        return False
    _kill(child)  # anything left in its group goes with it
    child.status = status
    # ru_maxrss is in KiB on Linux, bytes on macOS
    child.peak_rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return True


def _finish(child: _Child) -> Finished:
    """The child has ended: drain its pipe, close it, say why it ended."""
    while child.fd is not None:
        _read(child)
    if child.pidfd is not None:
        os.close(child.pidfd)
        child.pidfd = None
    job = child.job
    output = b"".join(child.chunks).decode("utf-8", "replace")
    status = child.status or 0
    reason = child.reason
    code = 1
    if reason is None:
        if os.WIFSIGNALED(status):
            reason = _signal_reason(os.WTERMSIG(status), job.budget)
        else:
            code = os.WEXITSTATUS(status)
            if code == EXIT_OUT_OF_MEMORY:
                reason = f"it ran out of memory ({job.budget.memory_text()})"
                code = 1
            elif code == EXIT_CHILD_FAILED:
                reason = "adcli's child process failed before the script ran"
                code = 1
    if child.interrupted_at is not None and reason is not None:
        reason, code = "interrupted (Ctrl-C)", 130
    return Finished(code, reason, output, time.monotonic() - child.started, child.peak_rss)


def _signal_reason(sig: int, budget: Budget) -> str:
    if sig == getattr(signal, "SIGXCPU", None):
        return f"it used more than its CPU time ({budget.timeout_text()})"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    what = signal.strsignal(sig) if hasattr(signal, "strsignal") else None
    detail = f"{name}: {what}" if what else name
    if sig == signal.SIGKILL:
        return f"it was killed ({detail}; perhaps the system ran out of memory)"
    return f"it crashed ({detail})"


def run_many(jobs: Iterable[_Job], parallel: int = 1) -> Iterator[Finished]:
    """Run each job in a child, up to `parallel` at a time; yield results in job order.

    After a Ctrl-C no new child starts: the running ones end (see `_interrupt`),
    their results are yielded, then KeyboardInterrupt is raised.
    """
    pending = iter(enumerate(jobs))
    running: dict[int, _Child] = {}
    done: dict[int, Finished] = {}
    next_out = 0
    exhausted = interrupted = False
    try:
        while True:
            while not (exhausted or interrupted) and len(running) < max(1, parallel):
                try:
                    index, job = next(pending)
                except StopIteration:
                    exhausted = True
                    break
                running[index] = _start(job)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            if not running:
                if interrupted:
                    raise KeyboardInterrupt
                if exhausted:
                    return
                continue
            for index, child in list(_step(running).items()):
                interrupted = interrupted or child.interrupted_at is not None
                done[index] = _finish(child)
                del running[index]
            interrupted = interrupted or any(c.interrupted_at is not None for c in running.values())
    finally:
        for child in running.values():  # interrupted, or the caller stopped early
            _kill(child)
            _reap(child, block=True)
            _finish(child)


def _step(running: dict[int, _Child]) -> dict[int, _Child]:
    """Wait until something happens (output, an exit, a deadline); the children that ended."""
    ended: dict[int, _Child] = {}
    now = time.monotonic()
    waits: list[float] = []
    readers: dict[int, tuple[str, int, _Child]] = {}
    for index, child in running.items():
        grace = None if child.interrupted_at is None else child.interrupted_at + INTERRUPT_GRACE
        if child.deadline is not None and now >= child.deadline:
            seconds = format_seconds(child.job.budget.timeout or 0)
            child.reason = child.reason or (
                f"it ran longer than {seconds} s ({child.job.budget.timeout_text()})"
            )
        elif grace is not None and now >= grace:
            child.reason = child.reason or "interrupted (Ctrl-C)"
        if child.reason is not None:  # out of time, or printed too much (see _read)
            _kill(child)
            _reap(child, block=True)
            ended[index] = child
            continue
        waits += [t - now for t in (child.deadline, grace) if t is not None]
        if child.pidfd is None:
            waits.append(0.05)  # no pidfd to wait on: poll
        else:
            readers[child.pidfd] = ("exit", index, child)
        if child.fd is not None:
            readers[child.fd] = ("out", index, child)
    if ended:
        return ended
    try:
        ready, _, _ = select.select(list(readers), [], [], min(waits) if waits else None)
    except KeyboardInterrupt:
        _interrupt(running)
        return ended
    for fd in ready:
        kind, index, child = readers[fd]
        if kind == "out" and child.fd == fd:
            _read(child)
    for index, child in running.items():
        if child.reason is not None or child.pidfd is None or child.pidfd in ready:
            if child.reason is not None:
                _reap(child, block=True)
                ended[index] = child
            elif _reap(child, block=child.pidfd is not None):
                ended[index] = child
    return ended


def _interrupt(running: dict[int, _Child]) -> None:
    """Ctrl-C in the parent: pass it on; a second one (or the grace running out) kills."""
    now = time.monotonic()
    for child in running.values():
        if child.interrupted_at is None:
            child.interrupted_at = now
            _kill(child, signal.SIGINT)
        else:
            child.reason = "interrupted (Ctrl-C)"
            _kill(child)


def run_isolated(
    body: Body,
    budget: Budget,
    *,
    mode: str = "inherit",
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    debug: bool = False,
    prepare: Callable[[], object] | None = None,
) -> Finished:
    """Run `body(out, err)` in a child process under `budget` and wait for it.

    `mode` is "inherit", "relay" (to `out`/`err`) or "capture" (see the module
    docstring). `prepare` runs in the child before the limits are set (imports
    whose memory should not count against the script).
    """
    job = _Job(body, budget, mode, out, err, capture_limit, debug, prepare)
    return next(iter(run_many([job])))


def job(
    body: Body,
    budget: Budget,
    *,
    mode: str = "capture",
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    prepare: Callable[[], object] | None = None,
) -> _Job:
    """A job for `run_many`."""
    return _Job(body, budget, mode, capture_limit=capture_limit, prepare=prepare)


def has_fd(stream: Any) -> bool:
    """Whether `stream` writes to a real file descriptor (a child can inherit it)."""
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
