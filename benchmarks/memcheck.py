#!/usr/bin/env python3
"""Are graphs freed by reference counting? Memory and objects per node; recursion.

    python benchmarks/memcheck.py            # chains of 50,000 nodes
    python benchmarks/memcheck.py --n 1000000

1. Engine only (no evaluator), gc disabled: build a chain `y = y * 1.0` of N
   nodes through adcli's ops, count the GC-tracked objects and traced bytes
   per node, run backward, drop the chain and check that memory returns to its
   baseline with no collection; `gc.collect()` afterwards must find nothing.
   If something is left, the referrers of the survivors are printed.
2. The same chain through the evaluator (scale.ad without backward): what the
   language layer adds per node (labels, source snippets).
3. Recursion: backward, the report and the graph drawing of the chain run with
   the recursion limit lowered to 200; dropping a chain of N nodes must not
   overflow the C stack.
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from run import script_text  # noqa: E402


def tracked_by_type(before: set[int]) -> Counter:
    return Counter(type(o).__name__ for o in gc.get_objects() if id(o) not in before)


def engine_chain(n: int) -> None:
    from adcli.autograd import ops
    from adcli.autograd.tensor import Tensor

    print(f"== 1. engine only: chain of {n} multiplications, gc disabled")
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        base_mem, _ = tracemalloc.get_traced_memory()
        before = {id(o) for o in gc.get_objects()}
        x = ops.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 1.0
        fwd_mem, _ = tracemalloc.get_traced_memory()
        types = tracked_by_type(before)
        del before
        total = sum(types.values())
        print(
            f"forward: {(fwd_mem - base_mem) / n:.0f} B/node traced, "
            f"{total / n:.1f} GC-tracked objects/node:"
        )
        print("   " + ", ".join(f"{k} {v / n:.2f}" for k, v in types.most_common(10)))
        tracemalloc.reset_peak()
        y.sum().backward()
        after_bwd, peak = tracemalloc.get_traced_memory()
        print(
            f"backward: peak {(peak - base_mem) / n:.0f} B/node, "
            f"after {(after_bwd - base_mem) / n:.0f} B/node (saved tensors released)"
        )
        assert isinstance(x.grad, Tensor)
        del y
        after_del, _ = tracemalloc.get_traced_memory()
        left = after_del - base_mem
        graph = fwd_mem - base_mem
        print(
            f"after `del y` (reference counting only): {left / 1024:.1f} KiB above baseline, "
            f"{100 * left / graph:.2f}% of the graph "
            f"({'freed' if left < 0.01 * graph else 'NOT freed'}; what remains is mostly "
            "the interpreter's free lists, which a full collection empties)"
        )
        del x
        found = gc.collect()
        after_gc, _ = tracemalloc.get_traced_memory()
        print(
            f"gc.collect() then found {found} unreachable objects; "
            f"{(after_gc - base_mem) / 1024:.1f} KiB left"
        )
        if found:
            gc.set_debug(gc.DEBUG_SAVEALL)
            x = ops.tensor([1.0, 2.0], requires_grad=True)
            y = x
            for _ in range(10):
                y = y * 1.0
            y.sum().backward()
            del x, y
            gc.collect()
            print("   cycles:", Counter(type(o).__name__ for o in gc.garbage).most_common(8))
            gc.set_debug(0)
            gc.garbage.clear()
    finally:
        tracemalloc.stop()
        gc.enable()


def evaluator_chain(n: int) -> None:
    from adcli.autograd import config as engine_config
    from adcli.core.runner import RunOptions, _Streams, run_text

    print(f"\n== 2. through the evaluator: scale.ad forward only, N={n}, gc disabled")
    text = script_text("scale", N=n).replace("y.sum().backward()\ndel y\n", "")
    text = text.replace("print(float(x.grad.sum()))\n", "")
    opts = RunOptions(quiet=True, max_steps=10**9)
    default_warn = engine_config.config.warn
    buf = io.StringIO()
    run_text(script_text("scale", N=10), "scale.ad", opts, _Streams(buf, buf))  # first-use costs
    engine_config.config.warn = default_warn
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        base_mem, _ = tracemalloc.get_traced_memory()
        before = {id(o) for o in gc.get_objects()}
        buf = io.StringIO()
        # The session stays alive after the run (it is the engine's config.warn until
        # the next session), holding `y` and its graph: count what it holds.
        code = run_text(text, "scale.ad", opts, _Streams(buf, buf))
        assert code == 0, buf.getvalue()
        mem, _ = tracemalloc.get_traced_memory()
        types = tracked_by_type(before)
        del before
        total = sum(types.values())
        print(
            f"forward: {(mem - base_mem) / n:.0f} B/node traced, "
            f"{total / n:.1f} GC-tracked objects/node:"
        )
        print("   " + ", ".join(f"{k} {v / n:.2f}" for k, v in types.most_common(10)))
        engine_config.config.warn = default_warn
        found = gc.collect()
        after, _ = tracemalloc.get_traced_memory()
        print(
            f"the finished session is freed only by the collector: gc.collect() found {found} "
            f"objects; {(after - base_mem) / 1024:.1f} KiB left"
        )
    finally:
        tracemalloc.stop()
        gc.enable()


def recursion(n: int) -> None:
    from adcli.autograd import ops
    from adcli.autograd.engine import listeners
    from adcli.provenance import label_of
    from adcli.render.report import build_report
    from adcli.render.tables import report_to_text
    from adcli.render.tree import graph_tree

    print(f"\n== 3. recursion: chain of {n}, recursion limit 200")
    events = []
    listeners.append(events.append)
    x = ops.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    results = {}
    try:
        steps: list[tuple[str, Callable[[Any], object]]] = [
            ("graph_tree", lambda t: graph_tree(t, label_of)),
            ("backward", lambda t: t.sum().backward(retain_graph=True)),
            (
                "report",
                lambda t: report_to_text(build_report(events[-1], line=None, call_text=None)),
            ),
        ]
        for what, fn in steps:
            try:
                fn(y)
                results[what] = "ok"
            except RecursionError as e:
                results[what] = f"RecursionError: {e}"
    finally:
        sys.setrecursionlimit(old)
        listeners.remove(events.append)
    events.clear()
    for k, v in results.items():
        print(f"{k}: {v}")
    del y
    print("dropping the chain: ok (no C stack overflow)")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    args = ap.parse_args()
    engine_chain(args.n)
    evaluator_chain(args.n)
    recursion(args.n)


if __name__ == "__main__":
    main()
