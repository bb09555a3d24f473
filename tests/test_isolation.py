"""Scripts run in a child process with hard budgets (issue 14, item 1).

Wall clock, CPU time and memory are enforced around the script, whatever it
does in one C-level step; a crash of the child is one line, never a traceback
or a hung parent; `adcli test` grades each script alone. Timeouts here are
short (2 s) so the suite stays quick; bounds on elapsed time leave room for a
loaded machine (start-up alone can take a second there).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adcli.core import golden, isolation
from adcli.core.options import RunOptions

pytestmark = pytest.mark.skipif(not isolation.available(), reason="needs POSIX fork")

ROOT = Path(__file__).resolve().parent.parent
SLACK = 8.0  # seconds a loaded machine may add to a budget (start-up, scheduling)
STOPPED = "adcli: error: the script was stopped: "


def adcli(
    *args: str, cwd: Path, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`python -m adcli ARGS` from `cwd`: (the finished process, seconds it took)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "adcli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - start


def script(tmp_path: Path, text: str, name: str = "s.ad") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_line(text: str) -> str:
    """The one line that says what went wrong (`adcli: error: ...` or `x.ad:1:2: error: ...`)."""
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if "error: " in line]
    assert len(lines) == 1, text
    return lines[0]


def last_line(text: str) -> str:
    assert "Traceback" not in text, text
    lines = text.strip().splitlines()
    assert lines, "no error message"
    return lines[-1]


# ---------------------------------------------------------------- wall clock


def test_a_loop_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    script(tmp_path, 'print("started")\nwhile True:\n    pass\n')
    done, took = adcli(
        "run", "--timeout", "2", "--max-steps", "10000000000000", "s.ad", cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stdout == "started\n"  # streamed before the child was killed
    assert last_line(done.stderr) == STOPPED + "it ran longer than 2 s (--timeout 2)"
    assert 2 <= took < 2 + SLACK


@pytest.mark.parametrize(
    "text",
    [
        # one C-level step no guard reaches (`==` of two doubled lists): Ctrl-C could not
        # stop it. (`0.5 in range(10**18)` is answered at once since the range guard.)
        "a = [0]\nb = [0]\nfor i in range(40):\n    a = [a, a]\n    b = [b, b]\nx = a == b\n",
        "x = {}.keys() & range(10**18)\n",
        "import math\nx = math.factorial(10**7)\n",
        "l = [0]\nfor i in range(40):\n    l = [l, l]\ns = str(l)\n",
    ],
    ids=["eq_of_doubled_lists", "keys_and_range", "factorial", "str_of_doubled_list"],
)
def test_c_level_hangs_end_within_the_budget(tmp_path: Path, text: str) -> None:
    """Each ends in a clear error within its budget: a guard's LimitError where
    there is one, else the child's wall clock."""
    script(tmp_path, text)
    done, took = adcli("run", "--timeout", "2", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    line = error_line(done.stderr)
    assert line == STOPPED + "it ran longer than 2 s (--timeout 2)" or "Error: " in line, line
    assert took < 2 + SLACK


def test_the_timeout_flag_is_checked(tmp_path: Path) -> None:
    script(tmp_path, "x = 1\n")
    for bad in ("-1", "soon", "nan"):
        done, _ = adcli("run", "--timeout", bad, "s.ad", cwd=tmp_path)
        assert done.returncode == 2
        assert last_line(done.stderr).startswith("adcli: error: --timeout: invalid time")
    done, _ = adcli("run", "--max-memory", "lots", "s.ad", cwd=tmp_path)
    assert done.returncode == 2
    assert "--max-memory: invalid memory size 'lots'" in done.stderr


def test_zero_means_no_limit(tmp_path: Path) -> None:
    script(tmp_path, "print(1)\n")
    done, _ = adcli("run", "--timeout", "0", "--max-memory", "0", "s.ad", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "1\n")


@pytest.mark.parametrize(
    "text, value",
    [("60", 60.0), ("2.5", 2.5), ("0", 0.0)],
)
def test_parse_seconds(text: str, value: float) -> None:
    assert isolation.parse_seconds(text) == value


@pytest.mark.parametrize(
    "text, value",
    [("4G", 4 * 1024**3), ("512M", 512 * 1024**2), ("1.5GiB", 3 * 1024**3 // 2), ("0", 0)],
)
def test_parse_memory(text: str, value: int) -> None:
    assert isolation.parse_memory(text) == value
    assert isolation.format_memory(4 * 1024**3) == "4 GiB"


def test_parse_memory_refuses_nonsense() -> None:
    for bad in ("-1G", "4X", "", "10"):  # 10 bytes: below 1 MiB
        with pytest.raises(ValueError):
            isolation.parse_memory(bad)


# ---------------------------------------------------------------- memory


def test_memory_beyond_the_budget_stops_the_script(tmp_path: Path) -> None:
    script(
        tmp_path,
        "import torch\nprint('allocating')\nxs = []\nfor i in range(100):\n"
        "    xs.append(torch.ones(10_000_000))\n",
    )
    done, took = adcli("run", "--max-memory", "300M", "--timeout", "60", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "allocating\n"
    line = last_line(done.stderr)
    assert line == STOPPED + "it ran out of memory (--max-memory 300 MiB)" or (
        "LimitError" in done.stderr and "memory" in done.stderr
    ), done.stderr
    assert took < 30


def test_a_memory_error_in_the_child_is_reported_as_the_budget() -> None:
    def body(out, err):
        raise MemoryError

    result = isolation.run_isolated(body, isolation.Budget(timeout=10), mode="capture")
    assert result.code == 1
    assert result.message == "the script was stopped: it ran out of memory (--max-memory 4 GiB)"


def test_the_size_limits_own_memory_error_is_not_the_budget(tmp_path: Path) -> None:
    """--max-numel raises a MemoryError that says which limit: a script error, exit 1."""
    script(tmp_path, "import torch\nx = torch.ones(100_000_000)\n")
    done, _ = adcli("run", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert "exceeds the size limit" in done.stderr
    assert "the script was stopped" not in done.stderr


# ---------------------------------------------------------------- crashes


def test_a_child_killed_by_a_signal_is_one_line() -> None:
    def body(out, err):
        out.write("before\n")
        os.kill(os.getpid(), signal.SIGSEGV)
        return 0

    start = time.monotonic()
    result = isolation.run_isolated(body, isolation.Budget(timeout=10), mode="capture")
    assert time.monotonic() - start < 5
    assert result.code == 1
    assert result.output == "before\n"
    assert result.message == "the script was stopped: it crashed (SIGSEGV: Segmentation fault)"


def test_a_segfaulting_script(tmp_path: Path) -> None:
    """A tuple nested a million deep used as a dict key overflowed the C stack; the
    run now gives the stack room (adcli.core.isolation.deep_stack), so it works."""
    script(tmp_path, "t = ()\nfor i in range(10**6):\n    t = (t,)\nd = {t: 1}\nprint(len(d))\n")
    done, took = adcli("run", "--timeout", "30", "s.ad", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n", "")
    assert took < 30 + SLACK


def test_the_cpu_budget_is_named() -> None:
    reason = isolation._signal_reason(signal.SIGXCPU, isolation.Budget(timeout=3))
    assert reason == "it used more than its CPU time (--timeout 3)"


def test_an_internal_error_in_the_child_is_one_line() -> None:
    def body(out, err):
        raise RuntimeError("boom")

    result = isolation.run_isolated(body, isolation.Budget(timeout=10), mode="capture")
    assert result.code == 1 and result.reason is None
    assert result.output == (
        "adcli: error: internal error: RuntimeError: boom (run with --debug for the traceback)\n"
    )


def test_too_much_output_stops_the_child() -> None:
    def body(out, err):
        while True:
            out.write("x" * 1000 + "\n")

    job = isolation.job(body, isolation.Budget(timeout=20), capture_limit=100_000)
    (result,) = list(isolation.run_many([job]))
    assert result.message == "the script was stopped: it printed more than 97.7 KiB"
    assert len(result.output) <= 100_000


# ---------------------------------------------------------------- output and options


def test_stdout_and_stderr_keep_their_order(tmp_path: Path) -> None:
    script(tmp_path, "print('one')\nprint('two')\nx = 1 / 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "adcli", "run", "s.ad"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout.startswith(
        "one\ntwo\ns.ad:3:5: error: ZeroDivisionError: division by zero\n"
    )


def test_relayed_output_keeps_streams_apart_and_in_order() -> None:
    """Streams without a file descriptor (a test runner's) get the child's output relayed."""
    from adcli.core.runner import run_isolated

    out, err = io.StringIO(), io.StringIO()
    merged: list[tuple[str, str]] = []

    class Tee(io.StringIO):
        def __init__(self, name: str, target: io.StringIO) -> None:
            super().__init__()
            self.name, self.target = name, target

        def write(self, s: str) -> int:
            merged.append((self.name, s))
            return self.target.write(s)

    options = RunOptions(quiet=True, timeout=30)
    code = run_isolated(
        "print('a')\nprint(1/0)\n", "r.ad", options, Tee("out", out), Tee("err", err)
    )
    assert code == 1
    assert out.getvalue() == "a\n"
    assert err.getvalue().startswith("r.ad:2:7: error: ZeroDivisionError")
    assert [name for name, _ in merged][:2] == ["out", "err"]


def test_json_mode_says_why_the_script_was_stopped(tmp_path: Path) -> None:
    script(tmp_path, "while True:\n    pass\n")
    done, _ = adcli(
        "run", "--json", "--timeout", "1", "--max-steps", "10000000000000", "s.ad", cwd=tmp_path
    )
    assert done.returncode == 1
    obj = json.loads(done.stdout)
    assert obj["ok"] is False
    assert obj["error"]["message"] == "the script was stopped: it ran longer than 1 s (--timeout 1)"


def test_in_process_runs_without_a_child(tmp_path: Path) -> None:
    script(tmp_path, "print(6 * 7)\n")
    done, _ = adcli("run", "--in-process", "s.ad", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "42\n")


def test_fast_path_and_typer_read_the_budget_flags_alike(tmp_path: Path) -> None:
    from adcli.cli import _parse_run

    opts = _parse_run(["--timeout", "2.5", "--max-memory=1G", "--in-process", "x.ad"])
    assert opts == {"timeout": 2.5, "max_memory": 1024**3, "in_process": True, "file": "x.ad"}
    assert _parse_run(["--timeout", "-3", "x.ad"]) is None  # typer gives the error
    assert RunOptions().timeout == 60.0 and RunOptions().max_memory == 4 * 1024**3


def test_ctrl_c_reaches_the_script(tmp_path: Path) -> None:
    script(tmp_path, "print('ready', flush=True)\nwhile True:\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "adcli", "run", "--max-steps", "10000000000000", "s.ad"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.3)  # the parent is waiting for its child now
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode in (1, 130)
    assert "Traceback" not in err
    assert "KeyboardInterrupt" in err or "interrupted" in err
    assert time.monotonic() - start < isolation.INTERRUPT_GRACE + SLACK


# ---------------------------------------------------------------- adcli test


def make_suite(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "a_ok.ad").write_text("print(1 + 1)\n")
    (folder / "a_ok.out").write_text("2\n[exit 0]\n")
    # steps are slow to count here: the step limit would take minutes to stop it
    (folder / "b_hang.ad").write_text("print('start')\nwhile True:\n    s = 'x' * 1_000_000\n")
    (folder / "b_hang.out").write_text("start\n[exit 0]\n")
    (folder / "c_crash.ad").write_text("print('crash here')\n")
    (folder / "c_crash.out").write_text("x\n[exit 0]\n")
    (folder / "d_ok.ad").write_text("print(3)\n")
    (folder / "d_ok.out").write_text("3\n[exit 0]\n")


@pytest.mark.parametrize("jobs", [1, 2])
def test_adcli_test_grades_the_others_when_one_hangs_and_one_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """The crash is simulated: the runner kills its own child with SIGSEGV for one
    script (the forked child inherits this patched runner)."""
    make_suite(tmp_path)
    real = golden.default_runner

    def runner(path: Path) -> tuple[str, int]:
        if path.name == "c_crash.ad":
            os.kill(os.getpid(), signal.SIGSEGV)
        if path.name == "b_hang.ad":
            sys.stdout.flush()
            while True:
                pass
        return real(path)

    monkeypatch.setattr(golden, "default_runner", runner)
    stream = io.StringIO()
    scripts = golden.find_scripts([tmp_path])
    budget = isolation.Budget(timeout=2)
    start = time.monotonic()
    summary = golden.run_all(scripts, budget=budget, jobs=jobs, stream=stream, color=False)
    took = time.monotonic() - start
    text = stream.getvalue()
    assert (summary.passed, summary.failed) == (2, 2), text
    assert "b_hang.ad\nthe script was stopped" in text
    assert "the script was stopped: it ran longer than 2 s (--timeout 2)" in text
    assert "the script was stopped: it crashed (SIGSEGV: Segmentation fault)" in text
    assert text.index("b_hang") < text.index("c_crash")  # in order, whatever finished first
    assert "Traceback" not in text
    assert took < 2 + SLACK


def test_adcli_test_command_isolates_each_script(tmp_path: Path) -> None:
    make_suite(tmp_path / "suite")
    (tmp_path / "suite" / "c_crash.out").write_text("crash here\n[exit 0]\n")
    done, took = adcli("test", "--timeout", "2", "-j", "2", "suite", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.endswith("3 passed, 1 failed\n"), done.stdout
    assert (
        "FAIL suite/b_hang.ad\nthe script was stopped: it ran longer than 2 s (--timeout 2)\n"
        "it printed:\nstart\n"
    ) in done.stdout
    assert took < 2 + 3 * SLACK


def test_a_stopped_script_is_never_written_by_update(tmp_path: Path) -> None:
    (tmp_path / "h.ad").write_text("while True:\n    s = 'x' * 1_000_000\n")
    done, _ = adcli("test", "--update", "--timeout", "1", "h.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert not (tmp_path / "h.out").exists()


def test_ctrl_c_ends_adcli_test_without_starting_more_scripts(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.ad").write_text("while True:\n    s = 'x' * 1_000_000\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "adcli", "test", "--timeout", "60", "."],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)  # a.ad is running
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "Traceback" not in out + err
    assert "b.ad" not in out and "c.ad" not in out
    assert time.monotonic() - start < isolation.INTERRUPT_GRACE + SLACK


def test_adcli_test_stops_a_script_that_prints_without_end(tmp_path: Path) -> None:
    """The grader keeps at most 16 MiB of one script's output in memory."""
    (tmp_path / "p.ad").write_text("while True:\n    print('x' * 10_000)\n")
    done, took = adcli("test", "--timeout", "30", "p.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert "FAIL p.ad\nthe script was stopped: it printed more than 16 MiB\n" in done.stdout
    assert len(done.stdout) < 10_000 * 25  # the reason and the last 20 lines, no more
    assert took < 30


# ---------------------------------------------------------------- graph and check


SLOW_LOOP = "l = list(range(100000))\nwhile True:\n    s = sum(l)\n"  # steps too slow to count


@pytest.mark.parametrize("command", ["graph", "check"])
def test_graph_and_check_stop_at_the_timeout(tmp_path: Path, command: str) -> None:
    """`adcli graph` and `adcli check` run the script in a child with run's budgets."""
    script(tmp_path, SLOW_LOOP)
    done, took = adcli(command, "--timeout", "2", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert error_line(done.stderr) == STOPPED + "it ran longer than 2 s (--timeout 2)"
    assert done.stdout == ""
    assert 2 <= took < 2 + SLACK


@pytest.mark.parametrize("command", ["graph", "check"])
def test_graph_and_check_end_an_endless_loop_within_the_timeout(
    tmp_path: Path, command: str
) -> None:
    """`while True: pass` ends with one clear line within the budget: the step limit
    (10 million steps take well under a second) or, on a slow machine, the clock."""
    script(tmp_path, "while True:\n    pass\n")
    done, took = adcli(command, "--timeout", "5", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    line = error_line(done.stderr)
    assert line == STOPPED + "it ran longer than 5 s (--timeout 5)" or (
        line == "s.ad:1:1: error: LimitError: step limit of 10000000 exceeded "
        "(raise it with --max-steps)"
    ), line
    assert took < 5 + SLACK


@pytest.mark.parametrize("command", ["graph", "check"])
def test_graph_and_check_memory_budget_and_flags(tmp_path: Path, command: str) -> None:
    script(
        tmp_path,
        "import torch\nxs = []\nfor i in range(100):\n    xs.append(torch.ones(10_000_000))\n",
    )
    done, _ = adcli(command, "--max-memory", "300M", "s.ad", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert last_line(done.stderr) == STOPPED + "it ran out of memory (--max-memory 300 MiB)"
    done, _ = adcli(command, "--timeout", "soon", "s.ad", cwd=tmp_path)
    assert done.returncode == 2
    assert last_line(done.stderr).startswith("adcli: error: --timeout: invalid time")


def test_graph_and_check_in_process_and_isolated_agree(tmp_path: Path) -> None:
    """Isolation changes nothing else: the same text, the same exit status (the
    drawing relayed from the child, through a test runner's streams)."""
    from typer.testing import CliRunner

    from adcli.commands.app import app

    sample = str(ROOT / "samples" / "11_second_derivative.ad")
    runner = CliRunner()
    for args in (["graph", sample], ["graph", sample, "-f", "dot"], ["check", sample]):
        here = runner.invoke(app, [*args, "--in-process"])
        child = runner.invoke(app, args)
        assert (child.exit_code, child.stdout, child.stderr) == (
            here.exit_code,
            here.stdout,
            here.stderr,
        ), args


def test_binary_output_is_relayed_as_bytes() -> None:
    """`adcli graph -f png` to a stream without a descriptor: bytes reach its buffer."""
    data = bytes(range(256)) * 4

    def body(out, err):
        out.write("text first\n")
        out.buffer.write(data)
        return 0

    class Stream(io.TextIOWrapper):
        pass

    raw = io.BytesIO()
    out = Stream(raw, encoding="utf-8", write_through=True)
    result = isolation.run_isolated(
        body, isolation.Budget(timeout=10), mode="relay", out=out, err=io.StringIO()
    )
    assert result.code == 0
    assert raw.getvalue() == b"text first\n" + data


# ---------------------------------------------------------------- the parent's death


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie waiting for init counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_dies_with_its_parent(tmp_path: Path) -> None:
    """A parent killed with SIGKILL cannot kill its child's group: the kernel does."""
    script(tmp_path, SLOW_LOOP)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen(
        [sys.executable, "-m", "adcli", "run", "--timeout", "600", "s.ad"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    child = None
    try:
        deadline = time.monotonic() + 60
        while child is None and time.monotonic() < deadline:
            kids = _children(parent.pid)
            child = kids[0] if kids else None
            time.sleep(0.05)
        assert child is not None, "adcli run started no child"
        time.sleep(1.0)  # the script is running
        assert not _gone(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the child outlived its parent"
    finally:
        parent.kill()
        if child is not None and not _gone(child):
            os.killpg(child, signal.SIGKILL)


# ---------------------------------------------------------------- the C stack


def test_deep_stack_is_given_back() -> None:
    """The raised stack limit holds while a script runs, never after (children
    started later would inherit it: glibc sizes their threads' stacks from it)."""
    import resource

    before = resource.getrlimit(resource.RLIMIT_STACK)
    with isolation.deep_stack():
        during = resource.getrlimit(resource.RLIMIT_STACK)
        with isolation.deep_stack():
            pass
        assert resource.getrlimit(resource.RLIMIT_STACK) == during
    assert resource.getrlimit(resource.RLIMIT_STACK) == before
    if before[0] != resource.RLIM_INFINITY and before[1] == resource.RLIM_INFINITY:
        assert during[0] == isolation.DEEP_STACK


def test_threads_start_under_the_memory_budget_whatever_the_stack_limit() -> None:
    """A process started under a huge stack limit would give each new thread a stack
    that size, more than --max-memory allows ("can't start new thread"), and the
    progress bar of `adcli check` runs in a thread: the child sets it explicitly."""
    import resource

    code = (
        "import threading\n"
        "from adcli.core import isolation\n"
        "def body(out, err):\n"
        "    t = threading.Thread(target=lambda: out.write('thread ran\\n'))\n"
        "    t.start()\n"
        "    t.join()\n"
        "    return 0\n"
        "budget = isolation.Budget(timeout=30, max_memory=512 * 1024**2)\n"
        "r = isolation.run_isolated(body, budget, mode='capture')\n"
        "print(r.code, r.reason, r.output, end='')\n"
    )

    def huge_stack() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        want = 16 * 1024**3 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_STACK, (want, hard))

    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=huge_stack,  # before exec: glibc reads the limit at start-up
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "0 None thread ran\n", "")
