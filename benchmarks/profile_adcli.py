#!/usr/bin/env python3
"""Profile one workload under adcli (in-process, quiet), as for benchmarks/PROFILE.md.

    python benchmarks/profile_adcli.py per_op                 # cProfile, top 25 by self time
    python benchmarks/profile_adcli.py scale N=100000 --tool pyinstrument
    python benchmarks/profile_adcli.py training --gc          # gc on vs off, collections
    python benchmarks/profile_adcli.py scale N=100000 --gc-settings   # thresholds, freeze

`--tool cprofile` lists functions by self time (file:line:function, % of the
run); its per-call overhead inflates small functions, so `--tool pyinstrument`
(sampling; `pip install pyinstrument`) is the check on proportions. `--gc`
times the run with the cyclic collector on and off and counts collections and
the objects they freed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from run import PARAMS, adcli_runner, script_text  # noqa: E402


def _short(path: str) -> str:
    for marker in ("/adcli/", "/site-packages/", "/lib/python3"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + 1 :]
    return path


def profile_cprofile(run, top: int, times: int) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    for _ in range(times):
        prof.enable()
        run()
        prof.disable()
        release()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
    print(f"cProfile: {total:.3f} s of self time in total")
    print(f"{'self %':>7} {'cum %':>7} {'calls':>9}  function")
    for (file, line, func), (_cc, nc, tt, ct, _callers) in rows[:top]:
        where = f"{_short(file)}:{line}:{func}"
        print(f"{100 * tt / total:6.1f}% {100 * ct / total:6.1f}% {nc:9d}  {where}")


def release() -> None:
    from run import release_session

    release_session()
    enabled = gc.isenabled()
    gc.collect()  # the finished session (cyclic garbage), outside the next run
    if not enabled:
        gc.disable()


def profile_pyinstrument(run, top: int, times: int) -> None:
    os.environ.setdefault("PYINSTRUMENT_IGNORE_OVERHEAD_WARNING", "1")
    from pyinstrument import Profiler

    prof = Profiler(interval=0.0005, use_timing_thread=True)
    prof.start()
    for _ in range(times):
        run()
        release()
    prof.stop()
    root = prof.last_session.root_frame(trim_stem=False)
    assert root is not None, "no samples"
    # flat view: self time by function, summed over every place it was called from
    selfs: dict[str, float] = {}
    stack = [root]
    while stack:
        f = stack.pop()
        stack.extend(f.children)
        key = f"{_short(f.file_path or '?')}:{f.line_no}:{f.function}"
        if f.is_synthetic:  # "[self]" / "[N frames hidden]" leaves
            key = f"{_short(f.parent.file_path or '?')}:{f.parent.line_no}:{f.parent.function}"
        own = f.time - sum(c.time for c in f.children)
        selfs[key] = selfs.get(key, 0.0) + own
    total = root.time
    print(f"pyinstrument: {total:.3f} s sampled")
    print(f"{'self %':>7}  function")
    for key, t in sorted(selfs.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{100 * t / total:6.1f}%  {key}")
    print()
    print(prof.output_text(unicode=False, color=False, show_all=False))


def gc_report(run, repeats: int) -> None:
    stats = {0: [0, 0.0, 0], 1: [0, 0.0, 0], 2: [0, 0.0, 0]}
    start = [0.0]

    def cb(phase: str, info: dict) -> None:
        if phase == "start":
            start[0] = time.process_time()
        else:
            s = stats[info["generation"]]
            s[0] += 1
            s[1] += time.process_time() - start[0]
            s[2] += info["collected"]

    gc.collect()
    gc.callbacks.append(cb)
    t0 = time.process_time()
    run()
    total = time.process_time() - t0
    gc.callbacks.remove(cb)
    print(f"one run, gc on: {total * 1e3:.0f} ms cpu; {len(gc.get_objects())} tracked objects now")
    for g, (n, secs, freed) in stats.items():
        print(
            f"  gen{g}: {n} collections, {secs * 1e3:.1f} ms ({100 * secs / total:.0f}%), "
            f"freed {freed} objects"
        )
    res: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(repeats):
        for mode in ("on", "off"):
            gc.collect()
            if mode == "off":
                gc.disable()
            t0 = time.process_time()
            run()
            res[mode].append(time.process_time() - t0)
            gc.enable()
    on, off = statistics.median(res["on"]), statistics.median(res["off"])
    print(
        f"medians of {repeats}: gc on {on * 1e3:.0f} ms, off {off * 1e3:.0f} ms, "
        f"on/off {on / off:.2f}x"
    )


def gc_variants(run, repeats: int) -> None:
    """The run under collector settings a host could choose (medians, CPU time)."""
    variants = {
        "default (700, 10, 10)": lambda: None,
        "gc.freeze() first": gc.freeze,
        "gc.set_threshold(50_000, 10, 10)": lambda: gc.set_threshold(50_000, 10, 10),
        "freeze + (50_000, 10, 10)": lambda: (gc.freeze(), gc.set_threshold(50_000, 10, 10)),
        "gc.disable()": gc.disable,
    }
    old = gc.get_threshold()
    res: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, setup in variants.items():
            gc.collect()
            setup()
            t0 = time.process_time()
            run()
            res[name].append(time.process_time() - t0)
            gc.unfreeze()
            gc.set_threshold(*old)
            gc.enable()
            release()
    for name, v in res.items():
        print(f"  {name:34s} {statistics.median(v) * 1e3:8.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("workload")
    ap.add_argument("params", nargs="*", help="NAME=value overrides (default: full size)")
    ap.add_argument("--tool", choices=("cprofile", "pyinstrument"), default="cprofile")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--gc", action="store_true", help="gc on/off comparison instead")
    ap.add_argument("--no-gc", action="store_true", help="profile with the collector disabled")
    ap.add_argument(
        "--gc-settings", action="store_true", help="time the run under other collector settings"
    )
    ap.add_argument("--repeats", type=int, default=3, help="--gc: runs per mode")
    ap.add_argument("--times", type=int, default=3, help="runs profiled together")
    args = ap.parse_args()
    params = dict(PARAMS.get(args.workload, ({}, {}))[0])
    for p in args.params:
        k, v = p.split("=", 1)
        params[k] = int(float(v))
    run = adcli_runner(args.workload, script_text(args.workload, **params))
    run()  # warm-up
    release()
    print(f"{args.workload} {params}")
    if args.gc:
        gc_report(run, args.repeats)
    elif args.gc_settings:
        gc_variants(run, args.repeats)
    else:
        if args.no_gc:
            gc.disable()
        if args.tool == "cprofile":
            profile_cprofile(run, args.top, args.times)
        else:
            profile_pyinstrument(run, args.top, args.times)
        gc.enable()


if __name__ == "__main__":
    main()
