#!/usr/bin/env python3
"""Where the time of one tensor op goes, layer by layer (microseconds per op).

    python benchmarks/layers.py [--n 10000] [--no-torch]

Each line times a loop of N ops on a (4,)-shaped float32 tensor, `y = y * 1.0001`
(a chain: every op records a node), CPU time, median of 7, gc enabled unless
the line says otherwise:

- NumPy:            the multiplication on the array alone, and a hand-written
                    backward (the floor).
- engine, no grad:  `adcli.autograd.ops.mul` on a tensor that does not require
                    grad (dispatch, dtype promotion, the scalar wrapped, no node).
- engine, forward:  the same with requires_grad (a node recorded per op).
- engine, backward: `backward()` through the chain, per node.
- script ...:       the op as a line of a script run by adcli (`run_text`),
                    without the tensor (`z = w * 1.0001` on floats), forward only,
                    forward with the session's labelling hooks (on_value and
                    on_assign) switched off, and forward + backward.
- torch:            the same chain in PyTorch eager, forward and backward.
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
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
from run import adcli_runner, release_session  # noqa: E402

REPEATS = 7


def cpu(
    fn: Callable[[], object], setup: Callable[[], object] | None = None, gc_on: bool = True
) -> float:
    """Median CPU seconds of fn() (setup() untimed before each)."""
    out = []
    for _ in range(REPEATS):
        arg = setup() if setup is not None else None
        gc.collect()
        if not gc_on:
            gc.disable()
        t0 = time.process_time()
        fn() if arg is None else fn(arg)  # type: ignore[call-arg]
        out.append(time.process_time() - t0)
        gc.enable()
        del arg
    return statistics.median(out)


def script(body: str, n: int) -> str:
    return (
        "import torch\n"
        "x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)\n"
        "y = x\nw = 1.5\n"
        f"for i in range({n}):\n    {body}\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    n = args.n
    rows: list[tuple[str, float]] = []

    def add(name: str, seconds: float) -> None:
        rows.append((name, seconds / n * 1e6))
        print(f"{seconds / n * 1e6:8.2f} us/op  {name}", flush=True)

    # NumPy
    a0 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    c = np.asarray(1.0001, np.float32)

    def np_fwd() -> None:
        y = a0
        for _ in range(n):
            y = y * c

    def np_bwd() -> None:
        g = np.ones(4, np.float32)
        for _ in range(n):
            g = g * c

    add("NumPy: a * c", cpu(np_fwd))
    add("NumPy: hand-written backward, per node", cpu(np_bwd))

    import adcli.core.session  # noqa: F401  (first: importing adcli.autograd.ops first leaves

    # Tensor.__ad_attrs__ without the methods ops.py installs, see PROFILE.md)
    from adcli.autograd import ops

    t_nograd = ops.tensor([1.0, 2.0, 3.0, 4.0])

    def eng_nograd() -> None:
        y = t_nograd
        for _ in range(n):
            y = ops.mul(y, 1.0001)

    add("engine: ops.mul, no grad", cpu(eng_nograd))

    def eng_fwd() -> object:
        x = ops.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x
        for _ in range(n):
            y = ops.mul(y, 1.0001)
        return y

    add("engine: ops.mul, forward (node recorded)", cpu(eng_fwd))
    add("engine: same, gc disabled", cpu(eng_fwd, gc_on=False))
    add("engine: backward, per node", cpu(lambda y: y.sum().backward(), setup=eng_fwd))
    add(
        "engine: backward, per node, gc disabled",
        cpu(lambda y: y.sum().backward(), setup=eng_fwd, gc_on=False),
    )

    def run_script(text: str) -> Callable[[], object]:
        r = adcli_runner("layers", text)

        def go() -> object:
            out = r()
            release_session()
            return out

        go()
        return go

    empty = cpu(run_script(script("pass", n)))
    add("script: `for` loop + `pass`", empty)
    add("script: `z = w * 1.0001` on floats", cpu(run_script(script("z = w * 1.0001", n))))
    fwd = run_script(script("y = y * 1.0001", n))
    add("script: `y = y * 1.0001`, forward", cpu(fwd))
    add("script: same, gc disabled", cpu(fwd, gc_on=False))
    from adcli.core.session import Session

    saved = Session._on_value, Session._on_assign
    Session._on_value = Session._on_assign = lambda self, *a: None  # type: ignore
    try:
        add("script: same, gc disabled, no labelling hooks", cpu(fwd, gc_on=False))
    finally:
        Session._on_value, Session._on_assign = saved
    both = run_script(script("y = y * 1.0001", n) + "y.sum().backward()\n")
    add("script: forward + backward", cpu(both))
    add("script: forward + backward, gc disabled", cpu(both, gc_on=False))

    if not args.no_torch:
        import torch

        torch.set_num_threads(1)

        def t_fwd() -> object:
            x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
            y = x
            for _ in range(n):
                y = y * 1.0001
            return y

        t_fwd()
        add("torch: forward", cpu(t_fwd))
        add("torch: backward, per node", cpu(lambda y: y.sum().backward(), setup=t_fwd))
        add(
            "torch: script text, forward + backward (exec)",
            cpu(lambda: exec(script("y = y * 1.0001", n) + "y.sum().backward()\n", {})),
        )


if __name__ == "__main__":
    main()
