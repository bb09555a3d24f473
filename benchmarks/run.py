#!/usr/bin/env python3
"""Run adcli's benchmarks and print one table of medians and ratios.

Each workload is an `.ad` script in `benchmarks/workloads/` that also runs
unchanged as Python + PyTorch (it starts with `import torch`). The same text is
timed under adcli (in-process, `adcli.runner.run_text`, quiet) and under
PyTorch eager (`exec` of the text with the real torch), and, where it matters,
against a hand-written NumPy forward + backward (`floors.py`). Start-up is timed
as whole processes.

Engines are timed in the same run, interleaved (the order rotates every repeat),
after one warm-up call each; the table quotes medians. PyTorch and NumPy are
pinned to one thread (set before NumPy or torch is imported).

    python benchmarks/run.py            # everything (several minutes)
    python benchmarks/run.py --quick    # smaller sizes and fewer repeats, < 1 minute
    python benchmarks/run.py --only per_op,report --repeats 1
    python benchmarks/run.py --json results.json

Workloads: startup, per_op, large, scale, second_order, training, interpreter, report.
Exit status 0 whether or not the targets are met (the table says "MISS").
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import types  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKLOADS_DIR = HERE / "workloads"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import floors  # noqa: E402

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
SCALE_SIZES = ([1_000, 10_000, 100_000, 1_000_000], [1_000, 10_000, 30_000])
SCALE_MEMORY_N = (100_000, 10_000)  # chain length for the tracemalloc measurement
# Repeats: (full, quick); a workload may lower them for its biggest sizes.
REPEATS = (5, 3)


# ----------------------------------------------------------------------------- results


@dataclass
class Row:
    """One line of the table: times in seconds (None: not measured)."""

    workload: str
    adcli: float | None = None
    torch: float | None = None
    floor: float | None = None
    ratio_torch: float | None = None
    ratio_floor: float | None = None
    unit: str = "s"  # "s" | "us/node" | "B/node" | "x" | "text"
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


# ----------------------------------------------------------------------------- engines


def script_text(name: str, **params: Any) -> str:
    """The workload's text with its `NAME = value` parameter lines replaced."""
    text = (WORKLOADS_DIR / f"{name}.ad").read_text(encoding="utf-8")
    for key, value in params.items():
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", text, count=1, flags=re.M)
        if n != 1:
            raise ValueError(f"{name}.ad has no line '{key} = ...'")
    return text


def adcli_runner(name: str, text: str) -> Callable[[], str]:
    """A callable running `text` under adcli in this process (quiet: no reports)."""
    from adcli.runner import RunOptions, _Streams, run_text

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


_DEFAULT_WARN: list[Any] = []


def release_session() -> None:
    """Let the finished run's Session be freed, as at the end of an `adcli run` process.

    A Session leaves its bound `_warn` in the engine's process-wide config after
    `close()`, which keeps the last script's globals and graphs alive until the
    next Session replaces it: the next timed run would then pay for collecting
    them. Restoring the default lets `gc.collect()` (outside the timed region) do it.
    """
    from adcli.autograd import config as engine_config

    if not _DEFAULT_WARN:
        _DEFAULT_WARN.append(engine_config._default_warn)
    engine_config.config.warn = _DEFAULT_WARN[0]


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


def load_torch(enabled: bool) -> Any:
    """The real torch pinned to one thread, or None when absent/disabled."""
    if not enabled:
        return None
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    return torch


def time_interleaved(
    runners: dict[str, Callable[[], Any]],
    repeats: int,
    *,
    warmup: dict[str, Callable[[], Any]] | None = None,
    batch: int = 1,
) -> dict[str, list[float]]:
    """Seconds per call of each runner: `repeats` samples each, engines interleaved."""
    for fn in (warmup if warmup is not None else runners).values():
        fn()
    names = list(runners)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            fn = runners[n]
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            samples[n].append((time.perf_counter() - t0) / batch)
    return samples


def _median(xs: list[float] | None) -> float | None:
    return statistics.median(xs) if xs else None


# ----------------------------------------------------------------------------- workloads


class Bench:
    def __init__(self, quick: bool, torch: Any, repeats: int | None, verbose: bool) -> None:
        self.quick = quick
        self.torch = torch
        self.repeats = repeats if repeats is not None else REPEATS[quick]
        self.verbose = verbose
        self.stub_torch = types.ModuleType("torch")  # for "plain CPython" runs

    def params(self, name: str) -> dict[str, Any]:
        return PARAMS[name][self.quick]

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def engines(
        self, name: str, params: dict[str, Any], *, floor: bool, script: str | None = None
    ) -> dict[str, Callable[[], Any]]:
        text = script_text(script or name, **params)
        runners: dict[str, Callable[[], Any]] = {"adcli": adcli_runner(name, text)}
        if self.torch is not None:
            runners["torch"] = python_runner(name, text, self.torch)
        if floor:
            fn = floors.FLOORS[script or name]
            runners["floor"] = lambda: fn(**params)
        return runners

    def simple(
        self,
        name: str,
        *,
        floor: bool,
        target: tuple[str, float],
        warm_params: dict[str, Any] | None = None,
        note: str = "",
    ) -> Row:
        params = self.params(name)
        runners = self.engines(name, params, floor=floor)
        warm = self.engines(name, warm_params, floor=floor) if warm_params else None
        self.log(f"{name} {params}")
        s = time_interleaved(runners, self.repeats, warmup=warm)
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
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("PYTHONSTARTUP", None)
        cmds = {
            "adcli": [sys.executable, "-m", "adcli", "run", script],
            "floor": [sys.executable, "-c", "import numpy"],
        }
        if self.torch is not None and not self.quick:  # ~2-4 s a sample: not in --quick
            cmds["torch"] = [sys.executable, script]

        def proc(cmd: list[str]) -> Callable[[], None]:
            def run() -> None:
                subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd="/")

            return run

        self.log("startup")
        runners = {k: proc(v) for k, v in cmds.items()}
        repeats = self.repeats if self.quick else self.repeats + 2
        warm = {} if self.quick else {k: v for k, v in runners.items() if k != "torch"}
        s = time_interleaved(runners, repeats, warmup=warm)
        row = Row(
            "startup (whole process)",
            adcli=_median(s["adcli"]),
            torch=_median(s.get("torch")),
            floor=_median(s["floor"]),
            samples=s,
            target="<= 1.6x floor",
            note="floor: python -c 'import numpy'; torch: python startup.ad",
        )
        row.ratio_torch = _ratio(row.adcli, row.torch)
        row.ratio_floor = _ratio(row.adcli, row.floor)
        row.verdict = _judge(row.ratio_floor, 1.6)
        # Which heavy modules does `adcli run` import?
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "adcli", "run", script],
            env=env, capture_output=True, text=True, cwd="/",
        )
        imported = set()
        for line in out.stderr.splitlines():
            if line.startswith("import time:") and "|" in line:
                imported.add(line.rsplit("|", 1)[1].strip().split(".")[0])
        banned = sorted(m for m in ("torch", "sympy", "prompt_toolkit") if m in imported)
        heavy = sorted(m for m in ("rich", "pydantic", "typer", "click", "lark") if m in imported)
        imp_row = Row(
            "startup: forbidden imports",
            unit="text",
            target="no torch/sympy/prompt_toolkit",
            verdict="MISS" if banned else "ok",
            note=("imports " + ", ".join(banned) if banned else "none")
            + ("; also imports " + ", ".join(heavy) if heavy else ""),
        )
        return [row, imp_row]

    # -- per-op, large, second order, training, interpreter -----------------
    def per_op(self) -> list[Row]:
        return [
            self.simple(
                "per_op", floor=True, target=("torch", 1.0), warm_params={"N": 200},
                note="10,000 elementwise ops on (4,) + backward",
            )
        ]

    def large(self) -> list[Row]:
        return [
            self.simple(
                "large", floor=True, target=("floor", 1.1), warm_params={"N": 64},
                note="10 x tanh(h @ W + b), float32, + backward",
            )
        ]

    def second_order(self) -> list[Row]:
        return [
            self.simple(
                "second_order", floor=False, target=("torch", 1.5), warm_params={"N": 5},
                note="full Hessian by 1 + N grad calls",
            )
        ]

    def training(self) -> list[Row]:
        return [
            self.simple(
                "training", floor=True, target=("torch", 1.0), warm_params={"STEPS": 2},
                note="784-128-10 MLP, batch 64, SGD",
            )
        ]

    def interpreter(self) -> list[Row]:
        params = self.params("interpreter")
        text = script_text("interpreter", **params)
        warm_text = script_text("interpreter", N=1000)
        runners = {"adcli": adcli_runner("interpreter", text)}
        warm = {"adcli": adcli_runner("interpreter", warm_text)}
        if self.torch is not None:
            runners["torch"] = python_runner("interpreter", text, self.torch)
            warm["torch"] = python_runner("interpreter", warm_text, self.torch)
        runners["floor"] = python_runner("interpreter", text, self.stub_torch)
        warm["floor"] = python_runner("interpreter", warm_text, self.stub_torch)
        self.log(f"interpreter {params}")
        s = time_interleaved(runners, self.repeats, warmup=warm)
        row = Row(
            f"interpreter {_fmt_params(params)}",
            adcli=_median(s["adcli"]),
            torch=_median(s.get("torch")),
            floor=_median(s["floor"]),
            samples=s,
            target="<= 3x floor",
            note="floor: CPython exec of the same text (no torch)",
        )
        row.ratio_torch = _ratio(row.adcli, row.torch)
        row.ratio_floor = _ratio(row.adcli, row.floor)
        row.verdict = _judge(row.ratio_floor, 3.0)
        return [row]

    # -- scale -----------------------------------------------------------------
    def scale(self) -> list[Row]:
        sizes = SCALE_SIZES[self.quick]
        rows: list[Row] = []
        per_node: dict[int, dict[str, float | None]] = {}
        warm = self.engines("scale", {"N": 1000}, floor=True)
        for fn in warm.values():
            fn()
        for n in sizes:
            reps = self.repeats if n <= 10_000 else 1 if self.quick or n > 100_000 else 3
            runners = self.engines("scale", {"N": n}, floor=True)
            self.log(f"scale N={n} x{reps}")
            s = time_interleaved(runners, reps, warmup={})
            med = {k: _median(v) for k, v in s.items()}
            per = {k: (v / n * 1e6 if v is not None else None) for k, v in med.items()}
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
                    f"scale: per-node N={big:.0e} / N=1e+04",
                    adcli=growth,
                    torch=_ratio(t_big, t_mid),
                    unit="x",
                    target="<= 1.5x",
                    verdict=_judge(growth, 1.5),
                    note="" if big == 1_000_000 else f"quick: largest size {big:.0e}, not 1e6",
                )
            )
        rows.extend(self.scale_memory(SCALE_MEMORY_N[self.quick]))
        return rows

    def scale_memory(self, n: int) -> list[Row]:
        """Peak traced memory per node, and what is left after the run with gc off."""
        self.log(f"scale memory N={n}")
        run = adcli_runner("scale", script_text("scale", N=n))
        run_small = adcli_runner("scale", script_text("scale", N=10))
        run_small()
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        tracemalloc.start()
        try:
            run_small()  # steady state: caches and first-use allocations
            gc.collect()
            base, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            run()
            after, peak = tracemalloc.get_traced_memory()
            collected = gc.collect()
            after_gc, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            if was_enabled:
                gc.enable()
        per_node = (peak - base) / n
        left = after - base
        return [
            Row(
                f"scale: peak memory N={n:.0e}",
                adcli=per_node,
                unit="B/node",
                target="<= 1024 B/node",
                verdict=_judge(per_node, 1024),
                note="tracemalloc, gc disabled, peak over the whole run",
            ),
            Row(
                "scale: left after run, gc off",
                adcli=left / 1024,
                unit="KiB",
                target="back to baseline",
                verdict="ok" if left < 256 * 1024 and left < 0.02 * (peak - base) else "MISS",
                note=f"gc.collect() then found {collected} objects, "
                f"left {(after_gc - base) / 1024:.0f} KiB",
            ),
        ]

    # -- report ----------------------------------------------------------------
    def report(self) -> list[Row]:
        from adcli.runner import RunOptions, _Reporter, _Streams
        from adcli.session import Hooks, Output, Session, SessionOptions

        params = self.params("report")
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
        event, span, call = events[-1]
        options = RunOptions(width=100, color=False)
        sizes: list[int] = []

        def run() -> None:
            buf = io.StringIO()
            _Reporter(options, _Streams(buf, buf)).event(event, span.line, call)
            sizes.append(len(buf.getvalue()))

        self.log(f"report {params}")
        s = time_interleaved({"adcli": run}, max(self.repeats, 3))
        return [
            Row(
                f"report {_fmt_params(params)}",
                adcli=_median(s["adcli"]),
                samples=s,
                target="<= 0.3 s",
                verdict=_judge(_median(s["adcli"]), 0.3),
                note=f"build_report + render_report, {sizes[-1]} chars",
            )
        ]


def _fmt_params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


# ----------------------------------------------------------------------------- table


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
    head = ("workload", "adcli", "torch", "NumPy floor", "adcli/torch", "adcli/floor", "target", "")
    body = [
        (
            r.workload,
            _fmt_value(r.adcli, r.unit) if r.unit != "text" else r.note,
            _fmt_value(r.torch, r.unit) if r.unit != "text" else "",
            _fmt_value(r.floor, r.unit) if r.unit != "text" else "",
            _fmt_ratio(r.ratio_torch),
            _fmt_ratio(r.ratio_floor),
            r.target,
            r.verdict,
        )
        for r in rows
    ]
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) if body else len(head[i]) for i in range(len(head))]
    # a long note in the adcli column of a text row should not widen the table
    widths[1] = max(len(head[1]), *(len(b[1]) for b, r in zip(body, rows) if r.unit != "text"), 8)

    def line(cells: tuple[str, ...]) -> str:
        out = []
        for i, c in enumerate(cells):
            out.append(c.ljust(widths[i]) if i == 0 or i == 6 else c.rjust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths)]
    for b, r in zip(body, rows):
        if r.unit == "text":
            lines.append(f"{b[0].ljust(widths[0])}  {r.note}  [{r.target}: {r.verdict}]")
        else:
            lines.append(line(b))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (< 1 min)")
    ap.add_argument("--only", default="", help=f"comma-separated subset of: {','.join(ALL)}")
    ap.add_argument("--repeats", type=int, default=None, help="samples per engine")
    ap.add_argument("--no-torch", action="store_true", help="leave the torch column empty")
    ap.add_argument("--json", metavar="FILE", help="also write the rows (with samples) as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = ap.parse_args(argv)

    only = [w.strip() for w in args.only.split(",") if w.strip()] or list(ALL)
    unknown = [w for w in only if w not in ALL]
    if unknown:
        ap.error(f"unknown workload(s): {', '.join(unknown)} (choose from {', '.join(ALL)})")

    load_start = os.getloadavg()
    t_start = time.perf_counter()
    torch = load_torch(not args.no_torch)
    import numpy as np

    bench = Bench(args.quick, torch, args.repeats, args.verbose)
    rows: list[Row] = []
    for name in ALL:
        if name in only:
            rows.extend(getattr(bench, name)())
    load_end = os.getloadavg()
    elapsed = time.perf_counter() - t_start

    mode = "quick" if args.quick else "full"
    print(
        f"adcli benchmarks ({mode}; medians of {bench.repeats} interleaved repeats unless noted; "
        f"1 thread: torch.set_num_threads(1), OMP/OPENBLAS_NUM_THREADS=1)"
    )
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"torch {torch.__version__ if torch is not None else 'absent'}, "
        f"{os.cpu_count()} CPUs"
    )
    print(
        "load average (1/5/15 min): start "
        + " ".join(f"{x:.2f}" for x in load_start)
        + ", end "
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
                    "load_start": load_start,
                    "load_end": load_end,
                    "torch": torch.__version__ if torch is not None else None,
                    "rows": [asdict(r) for r in rows],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
