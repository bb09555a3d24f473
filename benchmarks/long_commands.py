#!/usr/bin/env python3
"""How much `adcli check` and `adcli run --symbolic` cost next to a plain run.

Each command runs as a whole process (`python -m adcli ...`, output to a pipe),
interleaved with the others, `--repeats` times; the order rotates every repeat
so a change in the machine's load hits every command alike. The table gives, per
command, the median wall time and the median CPU time of the process and its
children (user + system, from rusage), and each one's ratio to the plain run.
On a shared machine compare the ratios, measured back to back, not the seconds.

    python benchmarks/long_commands.py                   # samples/14_mlp_training.ad
    python benchmarks/long_commands.py --repeats 7 path/to/script.ad
    python benchmarks/long_commands.py --json results.json

The target is a ratio of at most 5 (issue 13); the exit status is 0 whether or not
it is met (the table says "MISS").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SCRIPT = ROOT / "samples" / "14_mlp_training.ad"
TARGET_RATIO = 5.0

#: name -> adcli arguments before the script
COMMANDS: dict[str, list[str]] = {
    "run": ["run"],
    "check": ["check"],
    "run --symbolic": ["run", "--symbolic"],
}


@dataclass
class Timing:
    """The samples of one command."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    status: int | None = None

    def median(self, clock: str) -> float:
        return statistics.median(self.wall if clock == "wall" else self.cpu)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_once(args: list[str], script: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of one `adcli ARGS SCRIPT`."""
    env = dict(os.environ)
    env.pop("ADCLI_PROGRESS_DELAY", None)
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "adcli", *args, str(script)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=str(ROOT),
        env=env,
        check=False,
    )
    return time.perf_counter() - t0, _children_cpu() - cpu0, proc.returncode


def measure(
    script: Path, repeats: int, names: list[str], warm_up: bool = True
) -> dict[str, Timing]:
    timings = {n: Timing(n) for n in names}
    for n in names if warm_up else ():  # bytecode caches, the file system's cache
        time_once(COMMANDS[n], script)
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            wall, cpu, status = time_once(COMMANDS[n], script)
            t = timings[n]
            t.wall.append(wall)
            t.cpu.append(cpu)
            t.status = status
    return timings


def table(timings: dict[str, Timing], script: Path, repeats: int) -> str:
    base = timings["run"]
    lines = [
        f"{script.name}, {repeats} repeats, medians (load average {_load()})",
        f"{'command':<16} {'wall s':>8} {'cpu s':>8} {'wall ×':>7} {'cpu ×':>7}  target",
    ]
    for t in timings.values():
        rw = t.median("wall") / base.median("wall")
        rc = t.median("cpu") / base.median("cpu")
        verdict = "" if t is base else ("ok" if rc <= TARGET_RATIO else "MISS")
        lines.append(
            f"{t.name:<16} {t.median('wall'):8.2f} {t.median('cpu'):8.2f} "
            f"{rw:7.1f} {rc:7.1f}  {verdict}"
        )
    return "\n".join(lines)


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - no load average here
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("script", nargs="?", type=Path, default=DEFAULT_SCRIPT)
    ap.add_argument("--repeats", type=int, default=5, metavar="N")
    ap.add_argument("--only", metavar="A,B", help="commands other than run (comma-separated)")
    ap.add_argument("--json", metavar="FILE", help="also write the samples as JSON")
    ap.add_argument("--no-warm-up", action="store_true", help="no untimed first run of each")
    args = ap.parse_args(argv)
    names = list(COMMANDS)
    if args.only:
        names = ["run"] + [n for n in args.only.split(",") if n in COMMANDS and n != "run"]
    timings = measure(args.script, max(1, args.repeats), names, not args.no_warm_up)
    print(table(timings, args.script, max(1, args.repeats)))
    if args.json:
        Path(args.json).write_text(
            json.dumps({n: asdict(t) for n, t in timings.items()}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
