#!/usr/bin/env python3
"""Run adcli's benchmarks and print one table of medians and ratios.

Each workload is an `.ad` script in `benchmarks/workloads/` that also runs
unchanged as Python + PyTorch (it starts with `import torch`). The same text is
timed under adcli (`adcli.core.runner.run_text`, quiet, so start-up is left out) and
under PyTorch eager (`exec` of the text with the real torch) and, where it
matters, against a hand-written NumPy forward + backward (`floors.py`).
Start-up is timed as whole processes.

Every engine runs in a worker process of its own, started once: adcli's worker
never imports torch (whose ~150,000 objects would otherwise slow every full
collection of Python's cyclic garbage collector during adcli's runs), and the
torch worker never imports adcli. This script sends the workers one request at a
time: engines are timed in the same run, interleaved (the order rotates every
repeat), after a warm-up call each, with `gc.collect()` before each sample;
the table quotes medians. Every worker pins PyTorch and NumPy to one thread
(`torch.set_num_threads(1)`, OMP/OPENBLAS/MKL_NUM_THREADS=1). The clock is the
process's CPU time by default (user + system; for start-up, the child's rusage):
on a shared, loaded machine it does not count the time a process waits for a
CPU, which wall time does (`--clock wall` to use it anyway). The machine's load
average at start and end is printed with the table.

    python benchmarks/run.py            # everything (several minutes)
    python benchmarks/run.py --quick    # smaller sizes and fewer repeats, < 1 minute
    python benchmarks/run.py --only per_op,report --repeats 1
    python benchmarks/run.py --json results.json

Workloads: startup, per_op, large, scale, second_order, training, interpreter, report.
The exit status is 0 whether or not the targets are met (the table says "MISS").
"""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
for _var in THREAD_VARS:
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKLOADS_DIR = HERE / "workloads"
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

ALL = ("startup", "per_op", "large", "scale", "second_order", "training", "interpreter", "report")

# Parameters: (full, quick). Names are the `NAME = value` lines the scripts start with.
PARAMS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "per_op": ({"N": 2000}, {"N": 2000}),
    "large": ({"N": 1000}, {"N": 400}),
    "second_order": ({"N": 100}, {"N": 100}),
    "training": ({"STEPS": 200}, {"STEPS": 50}),
    "interpreter": ({"N": 100_000}, {"N": 30_000}),
    "report": ({"N": 10_000}, {"N": 10_000}),
}
# Cheap parameters for the warm-up call of each engine.
WARM: dict[str, dict[str, Any]] = {
    "per_op": {"N": 200},
    "large": {"N": 64},
    "second_order": {"N": 5},
    "training": {"STEPS": 2},
    "interpreter": {"N": 1000},
    "scale": {"N": 1000},
}
SCALE_SIZES = ([1_000, 10_000, 100_000, 1_000_000], [1_000, 10_000, 30_000])
SCALE_MEMORY_N = (100_000, 10_000)  # chain length for the tracemalloc measurement
REPEATS = (5, 3)  # samples per engine: (full, quick)


# ============================================================================ workers
#
# A worker serves JSON requests, one a line, on stdin and answers one JSON line
# each on the stdout it started with (scripts' own output goes to buffers).


def script_text(name: str, **params: Any) -> str:
    """The workload's text with its `NAME = value` parameter lines replaced."""
    text = (WORKLOADS_DIR / f"{name}.ad").read_text(encoding="utf-8")
    for key, value in params.items():
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", text, count=1, flags=re.M)
        if n != 1:
            raise ValueError(f"{name}.ad has no line '{key} = ...'")
    return text


_DEFAULT_WARN: list[Any] = []


def release_session() -> None:
    """Let the finished run's Session be freed, as at the end of an `adcli run` process.

    After `close()` a Session stays referenced from the engine's process-wide
    config (`config.warn` is its bound `_warn`) until the next Session replaces
    it, so its globals and graphs outlive the run; and the Session is in
    reference cycles, so only the cyclic collector frees it. Without this the
    next timed run would pay for collecting the previous one.
    """
    from adcli.autograd import config as engine_config

    if not _DEFAULT_WARN:
        _DEFAULT_WARN.append(engine_config._default_warn)
    engine_config.config.warn = _DEFAULT_WARN[0]


def adcli_runner(name: str, text: str) -> Callable[[], str]:
    """A callable running `text` under adcli in this process (quiet: no reports)."""
    from adcli.core.runner import RunOptions, _Streams, run_text

    options = RunOptions(quiet=True, max_steps=10**9)

    def run() -> str:
        buf = io.StringIO()
        try:
            code = run_text(text, f"{name}.ad", options, _Streams(buf, buf))
        finally:
            release_session()
        if code != 0:
            raise RuntimeError(f"adcli failed on {name}.ad:\n{buf.getvalue()}")
        return buf.getvalue()

    return run


def python_runner(name: str, text: str, torch_module: Any) -> Callable[[], str]:
    """A callable exec-ing `text` as Python, `import torch` giving `torch_module`."""
    code = compile(text, f"{name}.ad", "exec")

    def run() -> str:
        buf = io.StringIO()
        saved = sys.modules.get("torch")
        sys.modules["torch"] = torch_module
        try:
            with contextlib.redirect_stdout(buf):
                exec(code, {"__name__": "__bench__"})
        finally:
            if saved is not None:
                sys.modules["torch"] = saved
            else:
                del sys.modules["torch"]
        return buf.getvalue()

    return run


class Worker:
    """The serving side: one engine ("adcli", "torch" or "numpy") in this process."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.cache: dict[str, Callable[[], Any]] = {}
        self.torch: Any = None
        if engine == "torch":
            import torch

            torch.set_num_threads(1)
            with contextlib.suppress(RuntimeError):
                torch.set_num_interop_threads(1)
            self.torch = torch
        elif engine == "adcli":
            import adcli.core.runner  # noqa: F401  (imports paid before timing)
            import adcli.core.session  # noqa: F401
        import numpy  # noqa: F401

    def runner(self, workload: str, params: dict[str, Any], variant: str) -> Callable[[], Any]:
        key = json.dumps([workload, params, variant], sort_keys=True)
        fn = self.cache.get(key)
        if fn is None:
            if self.engine == "adcli":
                fn = adcli_runner(workload, script_text(workload, **params))
            elif self.engine == "torch":
                fn = python_runner(workload, script_text(workload, **params), self.torch)
            elif variant == "cpython":  # the same text under CPython, no torch
                fn = python_runner(
                    workload, script_text(workload, **params), types.ModuleType("torch")
                )
            else:
                import floors

                floor = floors.FLOORS[workload]
                fn = lambda: floor(**params)  # noqa: E731
            self.cache[key] = fn
        return fn

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req["op"]
        if op == "info":
            import numpy

            return {
                "numpy": numpy.__version__,
                "torch": self.torch.__version__ if self.torch is not None else None,
            }
        if op == "run":
            fn = self.runner(req["workload"], req["params"], req.get("variant", ""))
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            c1, w1 = time.process_time(), time.perf_counter()
            return {"wall": w1 - w0, "cpu": c1 - c0}
        if op == "memory":
            return scale_memory(int(req["n"]))
        if op == "report":
            return report_timings(req["params"], int(req["repeats"]))
        raise ValueError(f"unknown op {op!r}")

    def serve(self) -> None:
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)  # anything printed by accident goes to stderr, not into the protocol
        sys.stdout = sys.stderr
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            if req.get("op") == "quit":
                break
            try:
                resp = {"ok": True, **self.handle(req)}
            except Exception as e:  # report to the driver, keep serving
                resp = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            out.write(json.dumps(resp) + "\n")
            out.flush()


def scale_memory(n: int) -> dict[str, Any]:
    """scale.ad under adcli with tracemalloc and gc disabled: peak bytes per node,
    and what is left once the run (and its session) is over."""
    import tracemalloc

    run = adcli_runner("scale", script_text("scale", N=n))
    run_small = adcli_runner("scale", script_text("scale", N=10))
    run_small()
    gc.collect()
    gc.disable()
    tracemalloc.start(8)
    try:
        run_small()  # steady state: caches and first-use allocations
        gc.collect()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        run()
        after, peak = tracemalloc.get_traced_memory()
        survivor = ""
        if after - base > 64 * 1024:  # name the biggest allocation site still alive
            top = (
                tracemalloc.take_snapshot()
                .filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
                .statistics("traceback")
            )
            if top:
                frames = [f for f in top[0].traceback if "/adcli/" in f.filename]
                frame = frames[-1] if frames else top[0].traceback[0]  # innermost adcli frame
                where = "adcli/" + frame.filename.split("/adcli/")[-1]
                survivor = f"{where}:{frame.lineno} ({top[0].size / 1024:.0f} KiB)"
        collected = gc.collect()
        after_gc, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    return {
        "peak_per_node": (peak - base) / n,
        "left": after - base,
        "collected": collected,
        "left_after_gc": after_gc - base,
        "peak": peak - base,
        "survivor": survivor,
    }


def report_timings(params: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Seconds to build and print the report of report.ad's backward pass."""
    from adcli.core.runner import RunOptions, _Reporter, _Streams
    from adcli.core.session import Hooks, Output, Session, SessionOptions

    text = script_text("report", **params)
    events: list[Any] = []
    sink = io.StringIO()
    session = Session(
        Output(sink.write, sink.write),
        Hooks(on_event=lambda ev, span, call: events.append((ev, span, call))),
        SessionOptions(max_steps=10**9),
    )
    try:
        session.run_text(text, "report.ad")
    finally:
        session.close()
        release_session()
    event, span, call = events[-1]
    options = RunOptions(width=100, color=False)

    def run() -> int:
        buf = io.StringIO()
        _Reporter(options, _Streams(buf, buf)).event(event, span.line, call)
        return len(buf.getvalue())

    run()  # warm-up: imports rich
    wall, cpu = [], []
    chars = 0
    for _ in range(repeats):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        chars = run()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"wall": wall, "cpu": cpu, "chars": chars}


# ============================================================================ driver


class Client:
    """The driving side of one worker process."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", engine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(ROOT),
        )

    def call(self, **req: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.engine} worker died (exit {self.proc.wait()})")
        resp = json.loads(line)
        if not resp.pop("ok"):
            raise RuntimeError(f"{self.engine} worker: {resp['error']}")
        return resp

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@dataclass
class Row:
    """One line of the table: times in seconds (None: not measured)."""

    workload: str
    adcli: float | None = None
    torch: float | None = None
    floor: float | None = None
    ratio_torch: float | None = None
    ratio_floor: float | None = None
    unit: str = "s"  # "s" | "us/node" | "B/node" | "KiB" | "x" | "text"
    target: str = ""
    verdict: str = ""
    note: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _judge(value: float | None, limit: float) -> str:
    if value is None:
        return "-"
    return "ok" if value <= limit else "MISS"


def _median(xs: list[float] | None) -> float | None:
    return statistics.median(xs) if xs else None


def _fmt_params(params: dict[str, Any]) -> str:
    return " ".join(
        f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items()
    )


# Each column of the table: (engine name, worker, request variant).
Column = tuple[str, str, str]


class Bench:
    def __init__(
        self, quick: bool, use_torch: bool, repeats: int | None, verbose: bool, clock: str
    ) -> None:
        self.quick = quick
        self.clock = clock
        self.use_torch = use_torch
        self.repeats = repeats if repeats is not None else REPEATS[quick]
        self.verbose = verbose
        self.clients: dict[str, Client] = {}

    def client(self, engine: str) -> Client:
        c = self.clients.get(engine)
        if c is None:
            self.log(f"starting the {engine} worker")
            c = self.clients[engine] = Client(engine)
        return c

    def close(self) -> None:
        for c in self.clients.values():
            c.close()

    def params(self, name: str) -> dict[str, Any]:
        return PARAMS[name][self.quick]

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def columns(self, floor: str | None) -> dict[str, tuple[str, str]]:
        """column -> (worker engine, variant)"""
        cols = {"adcli": ("adcli", "")}
        if self.use_torch:
            cols["torch"] = ("torch", "")
        if floor is not None:
            cols["floor"] = ("numpy", floor)
        return cols

    def time(
        self,
        workload: str,
        params: dict[str, Any],
        cols: dict[str, tuple[str, str]],
        repeats: int,
        warm: dict[str, Any] | None,
    ) -> dict[str, list[float]]:
        """Seconds per run of each column: `repeats` samples each, interleaved."""
        if warm is not None:
            for engine, variant in cols.values():
                self.client(engine).call(op="run", workload=workload, params=warm, variant=variant)
        names = list(cols)
        samples: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                engine, variant = cols[n]
                resp = self.client(engine).call(
                    op="run", workload=workload, params=params, variant=variant
                )
                samples[n].append(resp[self.clock])
        return samples

    def simple(
        self, name: str, *, floor: str | None, target: tuple[str, float], note: str = ""
    ) -> Row:
        params = self.params(name)
        self.log(f"{name} {params}")
        s = self.time(name, params, self.columns(floor), self.repeats, WARM[name])
        row = Row(
            f"{name} {_fmt_params(params)}",
            adcli=_median(s.get("adcli")),
            torch=_median(s.get("torch")),
            floor=_median(s.get("floor")),
            samples=s,
            note=note,
        )
        row.ratio_torch = _ratio(row.adcli, row.torch)
        row.ratio_floor = _ratio(row.adcli, row.floor)
        kind, limit = target
        row.target = f"<= {limit:g}x {kind}"
        row.verdict = _judge(row.ratio_torch if kind == "torch" else row.ratio_floor, limit)
        return row

    # -- start-up ------------------------------------------------------------
    def startup(self) -> list[Row]:
        script = str(WORKLOADS_DIR / "startup.ad")
        base_env = dict(os.environ)
        base_env["PYTHONPATH"] = str(ROOT) + os.pathsep + base_env.get("PYTHONPATH", "")
        base_env.pop("PYTHONSTARTUP", None)
        # As installed (pip writes .pyc files): bytecode is cached, in a private
        # directory of ours so the checkout stays clean, even where the caller's
        # environment sets PYTHONDONTWRITEBYTECODE (this one does).
        pyc_dir = tempfile.mkdtemp(prefix="adcli-bench-pyc-")
        env = dict(base_env)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc_dir
        cmds = {
            "adcli": [sys.executable, "-m", "adcli", "run", script],
            "floor": [sys.executable, "-c", "import numpy"],
        }
        if self.use_torch and not self.quick:  # 2-4 s a sample: not in --quick
            cmds["torch"] = [sys.executable, script]

        def one(cmd: list[str], env: dict[str, str] = env) -> float:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd="/")
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
            return usage.ru_utime + usage.ru_stime if self.clock == "cpu" else wall

        self.log("startup")
        repeats = self.repeats if self.quick else self.repeats + 2
        names = list(cmds)
        s: dict[str, list[float]] = {n: [] for n in names}
        no_pyc: list[float] = []
        try:
            for n in names:  # writes the .pyc files, warms the page cache
                one(cmds[n])
            for r in range(repeats):
                k = r % len(names)
                for n in names[k:] + names[:k]:
                    s[n].append(one(cmds[n]))
            if not self.quick and os.environ.get("PYTHONDONTWRITEBYTECODE"):
                nopyc_env = dict(base_env)
                no_pyc = [one(cmds["adcli"], nopyc_env) for _ in range(3)]
        finally:
            shutil.rmtree(pyc_dir, ignore_errors=True)
        row = Row(
            "startup (whole process)",
            adcli=_median(s["adcli"]),
            torch=_median(s.get("torch")),
            floor=_median(s["floor"]),
            samples=s,
            target="<= 1.6x floor",
            note="adcli run startup.ad; floor: python -c 'import numpy'; torch: python startup.ad"
            " (all with cached bytecode)",
        )
        row.ratio_torch = _ratio(row.adcli, row.torch)
        row.ratio_floor = _ratio(row.adcli, row.floor)
        row.verdict = _judge(row.ratio_floor, 1.6)
        rows = [row]
        if no_pyc:
            extra = Row(
                "startup, no .pyc",
                adcli=_median(no_pyc),
                floor=row.floor,
                samples={"adcli": no_pyc},
                note="PYTHONDONTWRITEBYTECODE=1 as in this environment: adcli compiled from source",
            )
            extra.ratio_floor = _ratio(extra.adcli, extra.floor)
            rows.append(extra)
        # Which heavy modules does `adcli run` import?
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "adcli", "run", script],
            env=base_env,
            capture_output=True,
            text=True,
            cwd="/",
        )
        imported = set()
        for line in out.stderr.splitlines():
            if line.startswith("import time:") and "|" in line:
                imported.add(line.rsplit("|", 1)[1].strip().split(".")[0])
        banned = sorted(m for m in ("torch", "sympy", "prompt_toolkit") if m in imported)
        heavy = sorted(m for m in ("rich", "pydantic", "typer", "click", "lark") if m in imported)
        imp_row = Row(
            "startup: imports",
            unit="text",
            target="no torch/sympy/prompt_toolkit",
            verdict="MISS" if banned else "ok",
            note=("imports " + ", ".join(banned) if banned else "none of them")
            + ("; it does import " + ", ".join(heavy) if heavy else ""),
        )
        return rows + [imp_row]

    # -- per-op, large, second order, training, interpreter -----------------
    def per_op(self) -> list[Row]:
        return [
            self.simple(
                "per_op",
                floor="numpy",
                target=("torch", 1.0),
                note="10,000 elementwise ops on (4,) + backward",
            )
        ]

    def large(self) -> list[Row]:
        return [
            self.simple(
                "large",
                floor="numpy",
                target=("floor", 1.1),
                note="10 x tanh(h @ W + b), float32, + backward",
            )
        ]

    def second_order(self) -> list[Row]:
        return [
            self.simple(
                "second_order",
                floor=None,
                target=("torch", 1.5),
                note="full Hessian by 1 + N grad calls",
            )
        ]

    def training(self) -> list[Row]:
        return [
            self.simple(
                "training",
                floor="numpy",
                target=("torch", 1.0),
                note="784-128-10 MLP, batch 64, SGD",
            )
        ]

    def interpreter(self) -> list[Row]:
        return [
            self.simple(
                "interpreter",
                floor="cpython",
                target=("floor", 2.0),
                note="floor: CPython exec of the same text (no torch)",
            )
        ]

    # -- scale -----------------------------------------------------------------
    def scale(self) -> list[Row]:
        sizes = SCALE_SIZES[self.quick]
        cols = self.columns("numpy")
        rows: list[Row] = []
        per_node: dict[int, dict[str, float | None]] = {}
        for i, n in enumerate(sizes):
            reps = self.repeats if n <= 10_000 else 1 if self.quick or n > 100_000 else 3
            self.log(f"scale N={n} x{reps}")
            s = self.time("scale", {"N": n}, cols, reps, WARM["scale"] if i == 0 else None)
            per = {
                k: (v / n * 1e6 if v is not None else None)
                for k, v in ((k, _median(x)) for k, x in s.items())
            }
            per_node[n] = per
            row = Row(
                f"scale N={n:.0e} (per node)",
                adcli=per.get("adcli"),
                torch=per.get("torch"),
                floor=per.get("floor"),
                unit="us/node",
                samples=s,
            )
            row.ratio_torch = _ratio(row.adcli, row.torch)
            row.ratio_floor = _ratio(row.adcli, row.floor)
            if n == sizes[-1]:
                row.target = "<= 1x torch"
                row.verdict = _judge(row.ratio_torch, 1.0)
            rows.append(row)
        big = sizes[-1]
        if 10_000 in per_node and big != 10_000:
            a_big, a_mid = per_node[big].get("adcli"), per_node[10_000].get("adcli")
            t_big, t_mid = per_node[big].get("torch"), per_node[10_000].get("torch")
            growth = _ratio(a_big, a_mid)
            rows.append(
                Row(
                    f"scale: per node N={big:.0e} / N=1e+04",
                    adcli=growth,
                    torch=_ratio(t_big, t_mid),
                    unit="x",
                    target="<= 1.5x",
                    verdict=_judge(growth, 1.5),
                    note="" if big == 1_000_000 else f"quick: largest size {big:.0e}, not 1e6",
                )
            )
        n = SCALE_MEMORY_N[self.quick]
        self.log(f"scale memory N={n}")
        m = self.client("adcli").call(op="memory", n=n)
        left = m["left"]
        rows.append(
            Row(
                f"scale: peak memory N={n:.0e}",
                adcli=m["peak_per_node"],
                unit="B/node",
                target="<= 1024 B/node",
                verdict=_judge(m["peak_per_node"], 1024),
                note="tracemalloc (NumPy buffers included), gc disabled, whole run",
            )
        )
        rows.append(
            Row(
                "scale: left after run, gc off",
                adcli=left / 1024,
                unit="KiB",
                target="back to baseline",
                verdict="ok" if left < 64 * 1024 else "MISS",
                note=(f"largest left: {m['survivor']}; " if m["survivor"] else "")
                + f"then gc.collect() found {m['collected']} objects, "
                f"{m['left_after_gc'] / 1024:.0f} KiB left",
            )
        )
        return rows

    # -- report ----------------------------------------------------------------
    def report(self) -> list[Row]:
        params = self.params("report")
        self.log(f"report {params}")
        r = self.client("adcli").call(op="report", params=params, repeats=max(self.repeats, 3))
        t = _median(r[self.clock])
        return [
            Row(
                f"report {_fmt_params(params)}",
                adcli=t,
                samples={"adcli": r[self.clock]},
                target="<= 0.3 s",
                verdict=_judge(t, 0.3),
                note=f"build_report + render_report of a {params['N']}-node pass, "
                f"{r['chars']} chars",
            )
        ]


# ============================================================================ table


def _fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        if v >= 1:
            return f"{v:.2f} s"
        if v >= 1e-3:
            return f"{v * 1e3:.1f} ms"
        return f"{v * 1e6:.0f} us"
    if unit == "us/node":
        return f"{v:.2f} us"
    if unit == "B/node":
        return f"{v:.0f} B"
    if unit == "KiB":
        return f"{v:.0f} KiB"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v}"


def _fmt_ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def format_table(rows: list[Row]) -> str:
    """The results as a fixed-width text table."""
    head = ("workload", "adcli", "torch", "NumPy floor", "adcli/torch", "adcli/floor", "target", "")
    body = [
        (
            r.workload,
            _fmt_value(r.adcli, r.unit),
            _fmt_value(r.torch, r.unit),
            _fmt_value(r.floor, r.unit),
            _fmt_ratio(r.ratio_torch),
            _fmt_ratio(r.ratio_floor),
            r.target,
            r.verdict,
        )
        for r in rows
    ]
    numeric = [b for b, r in zip(body, rows, strict=True) if r.unit != "text"]
    widths = [max([len(head[i])] + [len(b[i]) for b in numeric]) for i in range(len(head))]
    widths[0] = max([widths[0]] + [len(b[0]) for b in body])

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i in (0, 6) else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths)]
    for b, r in zip(body, rows, strict=True):
        if r.unit == "text":
            lines.append(f"{r.workload.ljust(widths[0])}  {r.note}  [{r.target}: {r.verdict}]")
        else:
            lines.append(line(b))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (< 1 min)")
    ap.add_argument("--only", default="", help=f"comma-separated subset of: {','.join(ALL)}")
    ap.add_argument("--repeats", type=int, default=None, help="samples per engine")
    ap.add_argument("--no-torch", action="store_true", help="leave the torch column empty")
    ap.add_argument("--json", metavar="FILE", help="also write the rows (with samples) as JSON")
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: process CPU time, robust on a loaded machine (default); wall: elapsed time",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    ap.add_argument("--worker", choices=("adcli", "torch", "numpy"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        Worker(args.worker).serve()
        return 0

    only = [w.strip() for w in args.only.split(",") if w.strip()] or list(ALL)
    unknown = [w for w in only if w not in ALL]
    if unknown:
        ap.error(f"unknown workload(s): {', '.join(unknown)} (choose from {', '.join(ALL)})")
    use_torch = not args.no_torch and torch_available()

    load_start = os.getloadavg()
    t_start = time.perf_counter()
    bench = Bench(args.quick, use_torch, args.repeats, args.verbose, args.clock)
    rows: list[Row] = []
    try:
        info = bench.client("numpy").call(op="info")
        torch_version = bench.client("torch").call(op="info")["torch"] if use_torch else None
        for name in ALL:
            if name in only:
                rows.extend(getattr(bench, name)())
    finally:
        bench.close()
    load_end = os.getloadavg()
    elapsed = time.perf_counter() - t_start

    mode = "quick" if args.quick else "full"
    print(
        f"adcli benchmarks ({mode}): {args.clock} time, medians of {bench.repeats} interleaved "
        "repeats unless noted; one thread (torch.set_num_threads(1), OMP/OPENBLAS_NUM_THREADS=1); "
        "each engine in its own worker process"
    )
    print(
        f"python {sys.version.split()[0]}, numpy {info['numpy']}, "
        f"torch {torch_version or ('not used' if args.no_torch else 'absent')}, "
        f"{os.cpu_count()} CPUs; "
        "load average (1/5/15 min) at start "
        + " ".join(f"{x:.2f}" for x in load_start)
        + ", at end "
        + " ".join(f"{x:.2f}" for x in load_end)
    )
    print()
    print(format_table(rows))
    print()
    for r in rows:
        if r.note and r.unit != "text":
            print(f"  {r.workload}: {r.note}")
    print(f"\ntotal {elapsed:.1f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "mode": mode,
                    "clock": args.clock,
                    "load_start": load_start,
                    "load_end": load_end,
                    "torch": torch_version,
                    "numpy": info["numpy"],
                    "rows": [asdict(r) for r in rows],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
