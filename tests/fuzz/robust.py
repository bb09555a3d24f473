"""Robustness fuzzing: random and broken scripts never make adcli itself fail.

Programs come from the grammar (`grammar.py`: random derivations, and random
expressions in a small script) and from broken real scripts (`mutate.py`). Each
runs the way `adcli test` runs a script: forked from a warm parent, under a
wall-clock and memory budget (`adcli.core.isolation`), its stdout and stderr
captured together; every `--cli-every`th program also runs through the real
command line (`adcli run --timeout T --max-memory 1G`). Each run is one of

- `clean`: exit 0;
- `error`: exit 1 with a located diagnostic (`fuzz.ad:LINE:COL: error: Kind: ...`);
- `budget`: stopped by a budget with its one-line `the script was stopped: ...`;
- BAD: a Python traceback, an `internal error`, a crash (a signal), a run past
  its budget without that line, an unlocated diagnostic, another exit status,
  or `--json` output that is not one JSON object with a located error.

BAD programs are shrunk (lines, then tokens, while the same kind of failure
remains) and saved. `python -m tests.fuzz.robust --count N --seed S --jobs 2
[--out DIR]`; the exit status is 1 when any program was BAD.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from adcli.core import isolation
from adcli.core.options import RunOptions

from .grammar import PRELUDE, GrammarGen
from .mutate import Mutator, seed_scripts, tokens

__all__ = ["Program", "Verdict", "classify", "make_program", "fuzz", "shrink_program", "main"]

NAME = "fuzz.ad"
MAX_MEMORY = 1024**3
HANG_GRACE = 5.0  # seconds past the budget before a run counts as hung
_DIAGNOSTIC = re.compile(re.escape(NAME) + r":(\d+):(\d+): error: ([A-Za-z_]\w*)\b")
_INTERNAL = (
    "Traceback (most recent call last)",
    "internal error",
    'File "/',
)


@dataclass(frozen=True)
class Program:
    """One generated script and how to run it."""

    seed: str
    origin: str  # "grammar", "expression" or "mutant"
    text: str
    quiet: bool = True
    json: bool = False
    max_steps: int = RunOptions.max_steps

    def options(self, timeout: float) -> RunOptions:
        return RunOptions(
            quiet=self.quiet,
            json=self.json,
            width=100,
            color=False,
            timeout=timeout,
            max_memory=MAX_MEMORY,
            display_name=NAME,
            max_steps=self.max_steps,
        )


@dataclass(frozen=True)
class Verdict:
    """What one run was: `kind` is clean, error, budget or bad; `detail` says more
    (the error's kind, the budget, or what was wrong)."""

    kind: str
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.kind == "bad"

    def signature(self) -> str:
        """The failure with numbers and quoted names masked, to group alike ones."""
        text = re.sub(r"\d+", "N", self.detail)
        return re.sub(r"'[^']*'", "'…'", text)[:140]


def classify(
    output: str, code: int, reason: str | None, seconds: float | None, timeout: float, as_json: bool
) -> Verdict:
    """The verdict on one run: its combined output, exit status, the budget that
    stopped it (None: none did) and its wall-clock time."""
    if seconds is not None and seconds > timeout + HANG_GRACE:
        return Verdict("bad", f"hang: ran {seconds:.1f} s with a {timeout:g} s budget")
    for marker in _INTERNAL:
        if marker in output:
            line = next((ln for ln in output.splitlines() if marker in ln), marker)
            tail = output.strip().splitlines()[-1] if output.strip() else ""
            return Verdict("bad", f"{marker.split('(')[0].strip()}: {line.strip()} | {tail}"[:300])
    if reason is not None:
        if "crashed" in reason or "killed" in reason or "failed" in reason:
            return Verdict("bad", f"crash: {reason}")
        if "interrupted" in reason:
            return Verdict("bad", f"interrupted: {reason}")
        return Verdict("budget", re.sub(r"\d+(\.\d+)?", "N", reason.split(" (")[0]))
    if as_json:
        return _classify_json(output, code)
    if code == 0:
        return Verdict("clean")
    if code != 1:
        return Verdict("bad", f"exit status {code}: {output.strip()[-200:]}")
    found = _DIAGNOSTIC.findall(output)
    if not found:
        return Verdict("bad", f"unlocated: {output.strip()[-200:]}")
    line, col, kind = found[-1]
    if int(line) < 1 or int(col) < 1:
        return Verdict("bad", f"position {line}:{col}: {kind}")
    return Verdict("error", kind)


def _classify_json(output: str, code: int) -> Verdict:
    try:
        obj = json.loads(output)
    except ValueError:
        return Verdict("bad", f"json: not one JSON object: {output.strip()[:200]}")
    if not isinstance(obj, dict) or "ok" not in obj:
        return Verdict("bad", "json: no 'ok' member")
    if obj["ok"]:
        return Verdict("clean") if code == 0 else Verdict("bad", f"json: ok with exit {code}")
    error = obj.get("error") or {}
    kind = str(error.get("kind"))
    if code != 1:
        return Verdict("bad", f"json: error {kind} with exit {code}")
    if not (isinstance(error.get("line"), int) and isinstance(error.get("column"), int)):
        return Verdict("bad", f"json: unlocated {kind}: {error.get('message')}")
    return Verdict("error", kind)


# ---------------------------------------------------------------- programs


class Factory:
    """Program `i` of a run from its seed: a grammar derivation, a random
    expression in a short script, or a broken real script."""

    def __init__(self, full: bool = True) -> None:
        self.grammar = GrammarGen()
        self.small = GrammarGen(max_depth=16, max_tokens=40)
        seeds = seed_scripts()
        if not full:  # the CI-sized run: short seeds (long ones train for a while)
            seeds = [s for s in seeds if s.count("\n") <= 45]
        self.mutator = Mutator(seeds, slow_snippets=full)
        self.quiet = 0.6 if full else 0.85  # reports cost time: fewer in CI
        # an endless `while` meets the step limit: sooner in CI
        self.max_steps = RunOptions.max_steps if full else 500_000

    def make(self, seed: str) -> Program:
        rng = random.Random(seed)
        roll = rng.random()
        if roll < 0.3:
            origin, text = (
                "grammar",
                self.grammar.program(rng, prelude=rng.random() < 0.8, valid=rng.random() < 0.7),
            )
        elif roll < 0.5:
            origin, text = "expression", self._expression_script(rng)
        else:
            origin, text = "mutant", self.mutator.mutate(rng)
        mode = rng.random()
        quiet, as_json = mode < self.quiet, mode > 0.93
        return Program(seed, origin, text, quiet, as_json, self.max_steps)

    def _expression_script(self, rng: random.Random) -> str:
        lines = [PRELUDE.rstrip("\n")]
        for _ in range(rng.randint(1, 6)):
            expr = self.small.expression(rng, valid=rng.random() < 0.85)
            form = rng.randrange(4)
            if form == 0:
                lines.append(f"print({expr})")
            elif form == 1:
                lines.append(f"z = {expr}\nprint(repr(z), str(z))")
            elif form == 2:
                lines.append(f"try:\n    print({expr})\nexcept Exception as e:\n    print(e)")
            else:
                lines.append(f"z = ({expr}) * x\nz.sum().backward()\nprint(x.grad)")
        text = "\n".join(lines) + "\n"
        return self.mutator.mutate(rng, text) if rng.random() < 0.2 else text


def make_program(seed: str, full: bool = True) -> Program:
    """Program for `seed` (the same seed, the same program); `full` False: the
    lighter CI mix (no snippet that needs a budget to stop, short seeds)."""
    return _factory(full).make(seed)


_FACTORIES: dict[bool, Factory] = {}


def _factory(full: bool) -> Factory:
    if full not in _FACTORIES:
        _FACTORIES[full] = Factory(full)
    return _FACTORIES[full]


# ---------------------------------------------------------------- running


def _body(program: Program, timeout: float):  # type: ignore[no-untyped-def]
    def body(out, err) -> int:  # type: ignore[no-untyped-def]
        from adcli.core.runner import run_streams

        code, out_of_memory = run_streams(program.text, NAME, program.options(timeout), out, err)
        return isolation.EXIT_OUT_OF_MEMORY if out_of_memory else code

    return body


def _budget(timeout: float) -> isolation.Budget:
    return isolation.Budget(timeout=timeout, max_memory=MAX_MEMORY)


def run_forked(programs: Iterator[Program], timeout: float, jobs: int) -> Iterator[tuple]:
    """(program, verdict, seconds) for each program, run in forked children."""
    queue: collections.deque[Program] = collections.deque()

    def work() -> Iterator[object]:
        for program in programs:
            queue.append(program)
            yield isolation.job(_body(program, timeout), _budget(timeout))

    for result in isolation.run_many(work(), parallel=jobs):
        program = queue.popleft()
        verdict = classify(
            result.output, result.code, result.reason, result.seconds, timeout, program.json
        )
        yield program, verdict, result.seconds or 0.0


def run_batched(
    programs: Iterator[Program], timeout: float, jobs: int, batch: int
) -> Iterator[tuple]:
    """Like `run_forked`, but `batch` programs share one forked child, which runs
    them one after the other in-process (much cheaper than a fork each). A batch
    that does not end normally (a crash, a budget, too much output) is run again
    one fork per program, which decides each program's verdict."""
    chunks: collections.deque[list[Program]] = collections.deque()

    def work() -> Iterator[object]:
        chunk: list[Program] = []
        for program in programs:
            chunk.append(program)
            if len(chunk) == batch:
                chunks.append(chunk)
                yield _batch_job(chunk, timeout)
                chunk = []
        if chunk:
            chunks.append(chunk)
            yield _batch_job(chunk, timeout)

    for result in isolation.run_many(work(), parallel=jobs):
        yield from _judge_batch(chunks.popleft(), result, timeout, jobs, batch)


def _judge_batch(
    chunk: list[Program], result: isolation.Finished, timeout: float, jobs: int, batch: int
) -> Iterator[tuple]:
    """Verdicts for one batch's rows. A batch cut short (a hang, a crash, its budget)
    keeps the rows its child finished; the program it stopped in runs alone, which
    decides its verdict, and the rest run as a batch again: one hang costs its own
    budget, not a fork for each of the batch's programs."""
    rows = []
    for line in result.output.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            break  # the line the child was writing when it stopped
        if not isinstance(row, dict) or set(row) != {"code", "output", "seconds"}:
            break
        rows.append(row)
    rows = rows[: len(chunk)]
    for program, row in zip(chunk, rows, strict=False):
        verdict = classify(row["output"], row["code"], None, row["seconds"], timeout, program.json)
        if verdict.bad:  # decided the way a user runs it: alone, in its own child
            alone = run_one(program, timeout)
            if alone.bad:
                verdict = alone
            elif verdict.detail.startswith("hang") or "MemoryError" in verdict.detail:
                # in a batch, programs run in-process, where a long C call (five
                # 7000x7000 matmuls) outlasts its budget until it returns, and 50
                # programs share one child's address space (what the earlier ones
                # left mapped: MKL's buffers, NumPy's freed arenas); alone, the
                # child's own clock and memory budget decide, as a user's run does
                verdict = alone
            else:
                verdict = Verdict("bad", "in a batch only: " + verdict.detail)
        yield program, verdict, row["seconds"]
    if len(rows) < len(chunk):
        yield from run_forked(iter(chunk[len(rows) : len(rows) + 1]), timeout, 1)
        rest = chunk[len(rows) + 1 :]
        if rest:
            yield from run_batched(iter(rest), timeout, jobs, batch)


def _batch_job(chunk: list[Program], timeout: float) -> object:
    def body(out, err) -> int:  # type: ignore[no-untyped-def]
        import io

        from adcli.core.runner import run_streams

        for program in chunk:
            buf = io.StringIO()
            started = time.monotonic()
            try:
                code, _ = run_streams(program.text, NAME, program.options(timeout), buf, buf)
            except BaseException as e:  # noqa: BLE001 - anything escaping is a finding
                code = 1
                buf.write(f"\nTraceback (most recent call last): escaped {type(e).__name__}: {e}\n")
            row = {"code": code, "output": buf.getvalue(), "seconds": time.monotonic() - started}
            out.write(json.dumps(row) + "\n")
        return 0

    # A batch cut short loses nothing it finished (_judge_batch), so its budget need
    # not cover a program that runs into its own: that program is decided alone.
    budget = isolation.Budget(timeout=2.0 + 0.2 * len(chunk), max_memory=MAX_MEMORY)
    return isolation.job(body, budget, capture_limit=256 * 1024**2)


def run_one(program: Program, timeout: float) -> Verdict:
    """Run one program in a forked child and judge it."""
    return next(run_forked(iter([program]), timeout, 1))[1]


def run_cli(program: Program, timeout: float) -> tuple[Verdict, float]:
    """Run one program through the real command line, as a user would."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / NAME
        path.write_bytes(program.text.encode("utf-8", "surrogatepass"))
        args = [sys.executable, "-m", "adcli", "run", "--timeout", f"{timeout:g}"]
        args += ["--max-memory", "1G", "--width", "100", "--max-steps", str(program.max_steps)]
        args += ["-q"] * program.quiet + ["--json"] * program.json + [NAME]
        env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        started = time.monotonic()
        try:
            done = subprocess.run(
                args,
                cwd=tmp,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout + 30,
            )
        except subprocess.TimeoutExpired:
            return Verdict("bad", f"hang: the CLI ran past {timeout + 30:g} s"), timeout + 30
        seconds = time.monotonic() - started
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    stop = re.search(r"adcli: error: the script was stopped: (.*)", stderr)
    if done.returncode == 2 and stderr.startswith("adcli: error: cannot read"):
        return Verdict("error", "unreadable"), seconds  # lone surrogates: not UTF-8
    output = stdout if program.json else stdout + stderr
    verdict = classify(
        output,
        done.returncode,
        stop.group(1) if stop else None,
        seconds - 0.5,  # the interpreter's start-up is not the script's time
        timeout,
        program.json,
    )
    return verdict, seconds


# ---------------------------------------------------------------- shrinking


def shrink_program(program: Program, verdict: Verdict, timeout: float, attempts: int = 300) -> str:
    """A smaller text failing the same way (same signature): lines, then tokens."""
    want = verdict.signature()
    budget = [attempts if not verdict.detail.startswith(("hang", "crash")) else 25]

    def fails(text: str) -> bool:
        if budget[0] <= 0 or not text.strip():
            return False
        budget[0] -= 1
        candidate = Program(
            program.seed, program.origin, text, program.quiet, program.json, program.max_steps
        )
        got = run_one(candidate, timeout)
        return got.bad and got.signature() == want

    text = program.text
    for split, join in ((lambda t: t.split("\n"), "\n"), (lambda t: [x for _, x in tokens(t)], "")):
        parts = split(text)
        chunk = max(1, len(parts) // 2)
        while chunk >= 1 and budget[0] > 0:
            i = 0
            while i < len(parts) and budget[0] > 0:
                candidate = parts[:i] + parts[i + chunk :]
                if fails(join.join(candidate)):
                    parts = candidate
                else:
                    i += chunk
            chunk //= 2
        text = join.join(parts)
    return text


# ---------------------------------------------------------------- the campaign


@dataclass
class Stats:
    """Counts over a campaign."""

    programs: int = 0
    cli_runs: int = 0
    seconds: float = 0.0
    kinds: collections.Counter = field(default_factory=collections.Counter)
    origins: collections.Counter = field(default_factory=collections.Counter)
    details: collections.Counter = field(default_factory=collections.Counter)
    slowest: float = 0.0
    bad: dict[str, list[Program]] = field(default_factory=dict)  # signature -> programs
    shrunk: dict[str, str] = field(default_factory=dict)  # signature -> text

    def add(self, program: Program, verdict: Verdict, seconds: float) -> None:
        self.kinds[verdict.kind] += 1
        self.origins[program.origin] += 1
        if verdict.kind in ("error", "budget"):
            self.details[f"{verdict.kind}:{verdict.detail}"] += 1
        self.slowest = max(self.slowest, seconds)
        if verdict.bad:
            self.bad.setdefault(verdict.signature(), []).append(program)

    def line(self) -> str:
        rate = self.programs / self.seconds if self.seconds else 0.0
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        return f"{self.programs} programs ({rate:.1f}/s; {self.cli_runs} via the CLI): {kinds}"

    def report(self) -> str:
        """A few lines for a person: totals, the commonest errors and budgets, BAD cases."""
        lines = [self.line(), f"wall clock {self.seconds:.0f} s, slowest run {self.slowest:.1f} s"]
        lines.append("origins: " + ", ".join(f"{k} {n}" for k, n in self.origins.most_common()))
        lines.append("commonest outcomes:")
        lines += [f"  {n:7d}  {d}" for d, n in self.details.most_common(15)]
        for sig, programs in self.bad.items():
            lines.append(f"BAD x{len(programs)}: {sig}  (e.g. {programs[0].seed})")
        return "\n".join(lines)


def fuzz(
    count: int,
    seed: str = "ci",
    *,
    jobs: int = 2,
    timeout: float = 5.0,
    full: bool = True,
    batch: int = 1,
    cli_every: int = 0,
    shrink: int = 3,
    out: Path | None = None,
    progress: bool = False,
    deadline: float | None = None,
) -> Stats:
    """Run programs `seed:0` .. `seed:count-1` (`full` False: the CI mix); shrink
    up to `shrink` BAD programs per signature; with `out`, save the shrunk ones
    there. `batch` > 1 runs that many programs per forked child (`run_batched`).
    `deadline` (a time.monotonic value) ends the run early."""
    _warm_up()
    factory = _factory(full)
    stats = Stats()
    started = last = time.monotonic()

    def programs() -> Iterator[Program]:
        for i in range(count):
            if deadline is not None and time.monotonic() > deadline:
                return
            yield factory.make(f"{seed}:{i}")

    cli_pending: list[Program] = []
    raw = None
    if out is not None:  # each BAD program as found, in case the run is cut short
        out.mkdir(parents=True, exist_ok=True)
        raw = (out / "bad.jsonl").open("a", encoding="utf-8", errors="surrogatepass")
    runs = run_batched(programs(), timeout, jobs, batch) if batch > 1 else None
    try:
        for program, verdict, seconds in runs or run_forked(programs(), timeout, jobs):
            stats.programs += 1
            stats.add(program, verdict, seconds)
            if verdict.bad and raw is not None:
                entry = {"seed": program.seed, "detail": verdict.detail, "text": program.text}
                raw.write(
                    json.dumps({**entry, "quiet": program.quiet, "json": program.json}) + "\n"
                )
                raw.flush()
            if cli_every and stats.programs % cli_every == 0:
                cli_pending.append(program)
            now = time.monotonic()
            if progress and now - last > 10:
                stats.seconds = now - started
                print(stats.line(), file=sys.stderr, flush=True)
                last = now
    except KeyboardInterrupt:  # Ctrl-C: stop, and report what ran
        print("interrupted", file=sys.stderr)
    stats.seconds = time.monotonic() - started
    if raw is not None:
        raw.close()
    # After the forked runs, so that no child waits while the CLI runs.
    _run_cli_batch(cli_pending, timeout, stats, jobs)
    for sig, bad in stats.bad.items():
        for program in bad[:shrink]:
            text = shrink_program(program, run_one(program, timeout), timeout)
            if sig not in stats.shrunk or len(text) < len(stats.shrunk[sig]):
                stats.shrunk[sig] = text
    if out is not None:
        _save(stats, out, seed)
    return stats


def _run_cli_batch(programs: list[Program], timeout: float, stats: Stats, jobs: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    if not programs:
        return
    # Threads only wait on child processes here; no fork happens meanwhile.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = pool.map(lambda p: run_cli(p, timeout), programs)
        for program, (verdict, _seconds) in zip(programs, results, strict=True):
            stats.cli_runs += 1
            cli = dataclasses.replace(program, origin="cli:" + program.origin)
            if verdict.bad:
                stats.bad.setdefault("cli " + verdict.signature(), []).append(cli)
            stats.kinds[f"cli-{verdict.kind}"] += 1


def _warm_up() -> None:
    """Import the engine and run a tiny script here, so each fork starts warm."""
    import io

    from adcli.core.runner import run_streams

    buf = io.StringIO()
    run_streams(
        "import torch\nx = torch.ones(2, requires_grad=True)\n(x * x).sum().backward()\n",
        NAME,
        RunOptions(quiet=True),
        buf,
        buf,
    )


def _save(stats: Stats, out: Path, seed: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    notes = [f"# Robustness fuzz, seed {seed}", "", "```", stats.report(), "```", ""]
    for n, (sig, text) in enumerate(sorted(stats.shrunk.items())):
        example = stats.bad[sig][0]
        name = f"bad_{n:03d}.ad"
        header = f"# {sig}\n# seed {example.seed} quiet={example.quiet} json={example.json}\n"
        (out / name).write_text(header + text, encoding="utf-8", errors="surrogatepass")
        notes += [f"## {name}: {sig}", "", "```python", text.rstrip(), "```", ""]
    (out / "findings.md").write_text("\n".join(notes), encoding="utf-8", errors="surrogatepass")


def main(argv: list[str] | None = None) -> int:
    """The command line: `python -m tests.fuzz.robust --count N --seed S`."""
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.robust", description=__doc__)
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--seed", default="ci")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per program")
    p.add_argument("--cli-every", type=int, default=200, help="every Nth also via the CLI")
    p.add_argument("--minutes", type=float, default=None, help="stop after this long")
    p.add_argument("--batch", type=int, default=1, help="programs per child (in-process)")
    p.add_argument("--ci", action="store_true", help="the lighter CI mix of programs")
    p.add_argument("--shrink", type=int, default=2, help="BAD programs shrunk per kind")
    p.add_argument("--out", type=Path, default=None, help="save shrunk BAD programs here")
    p.add_argument("--show", metavar="SEED:I", help="print one program and exit")
    args = p.parse_args(argv)
    if args.show:
        program = make_program(args.show, full=not args.ci)
        print(f"# {program.origin} quiet={program.quiet} json={program.json}")
        sys.stdout.write(program.text)
        return 0
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    stats = fuzz(
        args.count,
        args.seed,
        jobs=args.jobs,
        timeout=args.timeout,
        cli_every=args.cli_every,
        shrink=args.shrink,
        out=args.out,
        full=not args.ci,
        batch=args.batch,
        progress=True,
        deadline=deadline,
    )
    print(stats.report())
    for sig, text in stats.shrunk.items():
        print(f"\n--- {sig}\n{text}")
    return 1 if stats.bad else 0


if __name__ == "__main__":
    sys.exit(main())
