"""Generate, run, compare, shrink: the fuzz loop, its summary and its reproducer files.

`python -m tests.fuzz --count 50000 --seed S [--jobs 2] [--out DIR]` runs the long
campaign (see README.md in this folder); `fuzz_many` is what the CI-sized test calls.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from .differ import Mismatch, Outcome, compare, run_adcli, run_torch
from .divergences import (
    BY_FEATURE,
    DELIBERATE,
    TORCH_INTERNAL_ASSERT,
    classify,
    torch_internal_assert,
)
from .gen import Program, generate
from .shrink import shrink

#: categories whose key (a message, the first differing words) identifies the bug
KEYED = {"uncaught", "error-type", "error-message", "error-missing", "text", "warning", "internal"}
#: names not worth listing in a signature (they are in every program)
_BORING = {"print", "repr", "tensor", "float", "manual_seed", "range", "torch", "F"}
PROGRAM_SECONDS = 30


@dataclass
class Result:
    """One program's run: the differences left after the deliberate ones."""

    seed: str
    text: str
    features: Counter
    mismatches: list[Mismatch]
    deliberate: list[str]
    generator_error: str | None = None
    seconds: float = 0.0


@dataclass
class Finding:
    """A shrunk reproducer of one distinct mismatch."""

    signature: str
    category: str
    seeds: list[str]
    text: str
    mismatch: Mismatch
    torch_stdout: str
    adcli_stdout: str
    adcli_error: str | None

    def report(self) -> str:
        """The finding as a few Markdown lines: the program, then both outputs."""
        err = f"\nadcli stopped with: {self.adcli_error}" if self.adcli_error else ""
        return (
            f"### {self.signature}\n\nseeds: {', '.join(self.seeds[:5])}"
            f"{' ...' if len(self.seeds) > 5 else ''} ({len(self.seeds)} programs)\n\n"
            f"```python\n{self.text.rstrip()}\n```\n\n{self.mismatch.describe()}\n\n"
            f"torch stdout:\n```\n{self.torch_stdout.rstrip()}\n```\n"
            f"adcli stdout:\n```\n{self.adcli_stdout.rstrip()}\n```{err}\n"
        )


@dataclass
class Summary:
    """Counts over a run, and the findings."""

    programs: int = 0
    failing: int = 0
    by_category: Counter = field(default_factory=Counter)
    deliberate: Counter = field(default_factory=Counter)
    generator_errors: list[str] = field(default_factory=list)
    features: Counter = field(default_factory=Counter)
    findings: dict[str, Finding] = field(default_factory=dict)
    #: failing programs of a kind no shrunk finding covers (the shrink cap was hit)
    unshrunk: dict[str, list[Result]] = field(default_factory=dict)
    seconds: float = 0.0

    def text(self) -> str:
        """A human summary."""
        lines = [
            f"programs run: {self.programs} in {self.seconds:.1f} s",
            f"programs with mismatches: {self.failing}",
        ]
        for cat, n in self.by_category.most_common():
            lines.append(f"  {cat}: {n}")
        lines.append(f"deliberate divergences skipped: {sum(self.deliberate.values())}")
        for name, n in self.deliberate.most_common():
            lines.append(f"  {name}: {n}")
        if self.generator_errors:
            lines.append(
                f"generator errors (torch refused its own program): {len(self.generator_errors)}"
            )
            lines += [f"  {e}" for e in self.generator_errors[:5]]
        lines.append(f"distinct shrunk findings: {len(self.findings)}")
        for sig, f in sorted(self.findings.items()):
            lines.append(f"  [{len(f.seeds)}] {sig}")
        if self.unshrunk:
            lines.append(f"kinds of mismatch not shrunk (cap reached): {len(self.unshrunk)}")
            for pre, rs in sorted(self.unshrunk.items()):
                lines.append(f"  [{len(rs)}] {pre[:150]}")
        return "\n".join(lines)


# ---------------------------------------------------------------- one program


def check(text: str) -> tuple[Outcome, Outcome, list[Mismatch], list[str]]:
    """Run `text` under both engines: (torch, adcli, real mismatches, deliberate names)."""
    t = run_torch(text)
    a = run_adcli(text)
    real: list[Mismatch] = []
    deliberate: list[str] = []
    torch_bug = torch_internal_assert(t)  # then every mismatch of the program is counted apart
    for m in compare(t, a, text):
        d = torch_bug or classify(m)
        if d is None:
            real.append(m)
        else:
            deliberate.append(d.name)
    return t, a, real, deliberate


#: how many statements torch refused as on a leaf one program may have wrapped
REPAIRS = 3
_LEAF_REFUSAL = "a leaf Variable that requires grad is being used in an in-place operation."


def _repaired(prog: Program, t: Outcome) -> Program | None:
    """The program with the statement torch refused as an in-place op on a leaf (which
    the generator's torch, having read the view's node, let pass) kept as an error."""
    if t.error is None or t.error[1] != _LEAF_REFUSAL:
        return None
    return prog.repaired(t.error[2])


def program_for(seed: str) -> Program:
    """The program of `seed` as the fuzzer runs it (repaired where torch refuses it)."""
    prog = generate(seed)
    for _ in range(REPAIRS):
        fixed = _repaired(prog, run_torch(prog.text))
        if fixed is None:
            break
        prog = fixed
    return prog


def fuzz_one(seed: str, on_program: Callable[[str], None] | None = None) -> Result:
    """Generate the program of `seed` and compare both engines on it (`on_program`
    sees the text before it runs, so a crash can still be reported with it)."""
    start = time.perf_counter()
    with _time_limit(PROGRAM_SECONDS):
        try:
            prog = generate(seed)
        except ProgramTimeout:
            return Result(seed, "", Counter(), [], [], f"{seed}: generation timed out")
        except Exception as e:  # a generator bug: report it, do not stop the run
            where = traceback.extract_tb(e.__traceback__)[-1]
            msg = f"{seed}: generator raised {type(e).__name__}: {str(e)[:100]}"
            return Result(seed, "", Counter(), [], [], f"{msg} ({where.name}:{where.lineno})")
        if on_program is not None:
            on_program(prog.text)
        try:
            t, _, real, deliberate = check(prog.text)
            for _ in range(REPAIRS):
                fixed = _repaired(prog, t)
                if fixed is None:
                    break
                prog = fixed
                t, _, real, deliberate = check(prog.text)
        except ProgramTimeout:
            m = Mismatch("timeout", None, "", f"over {PROGRAM_SECONDS} s", "timeout")
            return Result(seed, prog.text, prog.features, [m], [])
        for feature, d in BY_FEATURE.items():
            if real and feature in prog.features:
                deliberate += [d.name] * len(real)
                real = []
    gen_error = None
    if t.error is not None:  # torch refused the generator's own program: not adcli's fault
        gen_error = f"{seed}: line {t.error[2]}: {t.error[0]}: {t.error[1][:120]}"
        real = []
    return Result(
        seed, prog.text, prog.features, real, deliberate, gen_error, time.perf_counter() - start
    )


class ProgramTimeout(BaseException):
    """A program ran too long. A BaseException, so that neither the program's own
    `except Exception` nor adcli's error handling can swallow it."""


class _time_limit:
    """SIGALRM-based time limit (main thread on Unix only; otherwise no limit)."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.active = hasattr(signal, "SIGALRM")

    def __enter__(self) -> None:
        if self.active:
            try:
                self.old = signal.signal(signal.SIGALRM, self._raise)
                signal.alarm(self.seconds)
            except ValueError:  # not the main thread
                self.active = False

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self.old)

    @staticmethod
    def _raise(signum: int, frame: object) -> None:
        raise ProgramTimeout


# ---------------------------------------------------------------- shrinking


def _same_failure(first: Mismatch) -> Callable[[str], bool]:
    def test(text: str) -> bool:
        try:
            t, _, real, _ = check(text)
        except Exception:
            return False
        if t.error is not None or not real:
            return False
        m = real[0]
        return m.category == first.category and (first.category not in KEYED or m.key == first.key)

    return test


def operations(text: str) -> str:
    """The names a program calls or applies (for grouping findings)."""
    names: set[str] = set()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "?"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name and name not in _BORING:
                names.add(name)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            names.add(type(node.op).__name__ + ("=" if isinstance(node, ast.AugAssign) else ""))
        elif isinstance(node, ast.UnaryOp):
            names.add(type(node.op).__name__)
        elif isinstance(node, ast.Subscript):
            names.add("[]=" if isinstance(node.ctx, ast.Store) else "[]")
        elif isinstance(node, ast.Attribute) and node.attr in ("grad", "T", "mT", "data"):
            names.add("." + node.attr)
    return " ".join(sorted(names)) or "-"


def signature(m: Mismatch, text: str) -> str:
    """What identifies a finding: the category and the message or the operations."""
    if m.category in KEYED:
        return f"{m.category}: {m.key}"
    return f"{m.category}: {operations(text)}"


def shrink_result(result: Result, budget: int = 300) -> Finding:
    """The shrunk reproducer of a failing result's first mismatch."""
    first = result.mismatches[0]
    cut = f"@{first.tag}" if first.tag is not None else None
    line = _error_line(first.adcli_text) if first.category == "uncaught" else None
    small = shrink(result.text, _same_failure(first), budget, cut, line)
    t, a, real, _ = check(small)
    m = real[0] if real else first
    err = a.internal or (f"{a.error[0]}: {a.error[1]} (line {a.error[2]})" if a.error else None)
    return Finding(
        signature(m, small), m.category, [result.seed], small, m, t.stdout, a.stdout, err
    )


def _error_line(text: str) -> int | None:
    """The line of an 'uncaught' mismatch's adcli side ('line 12: Kind: message')."""
    head = text.partition(":")[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else None


def _presignature(r: Result) -> str:
    m = r.mismatches[0]
    return f"{m.category}: {m.key}"


# ---------------------------------------------------------------- worker processes

#: wall-clock limits for one task in a worker (fuzz one program; shrink one)
FUZZ_TIMEOUT = 120.0
SHRINK_TIMEOUT = 900.0


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(conn: Connection) -> None:
    """A worker: run ("fuzz", seed) and ("shrink", (result, budget)) tasks until None.
    Sends ("program", text) before running a program, then ("done", result)."""
    _init_worker()
    while True:
        task = conn.recv()
        if task is None:
            return
        kind, arg = task
        if kind == "fuzz":
            result = fuzz_one(arg, lambda text: conn.send(("program", text)))
        else:
            result = shrink_result(*arg)
        conn.send(("done", result))


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.task: tuple[str, Any] | None = None
        self.program = ""
        self.deadline = 0.0

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


class Workers:
    """Worker processes that survive a crash (PyTorch can segfault on odd programs):
    a task whose worker died or timed out comes back as None, and a new worker
    takes its place. Spawned, not forked, so no OpenMP state is inherited."""

    def __init__(self, n: int) -> None:
        self.ctx = multiprocessing.get_context("spawn")
        self.workers = [_Worker(self.ctx) for _ in range(max(n, 1))]

    def run(self, tasks: Iterable[tuple[str, Any]]) -> Iterator[tuple[tuple[str, Any], Any, str]]:
        """Yield (task, result or None, program text) as tasks finish."""
        todo = iter(tasks)
        busy: list[_Worker] = []
        idle = list(self.workers)
        exhausted = False
        while True:
            while idle and not exhausted:
                task = next(todo, None)
                if task is None:
                    exhausted = True
                    break
                w = idle.pop()
                w.task, w.program = task, ""
                limit = FUZZ_TIMEOUT if task[0] == "fuzz" else SHRINK_TIMEOUT
                w.deadline = time.monotonic() + limit
                w.conn.send(task)
                busy.append(w)
            if not busy:
                return
            ready = wait([w.conn for w in busy], timeout=1.0)
            now = time.monotonic()
            for w in list(busy):
                if w.conn not in ready and now <= w.deadline:
                    continue
                kind, result = self._collect(w, now)
                if kind == "program":
                    w.program = result
                    continue
                busy.remove(w)
                task, w.task = w.task, None
                if kind != "done":  # crashed or hung: replace the worker
                    self.workers.remove(w)
                    w.proc.kill()
                    fresh = _Worker(self.ctx)
                    self.workers.append(fresh)
                    idle.append(fresh)
                    result = None
                else:
                    idle.append(w)
                assert task is not None
                yield task, result, w.program

    @staticmethod
    def _collect(w: _Worker, now: float) -> tuple[str, Any]:
        if now > w.deadline and not w.conn.poll():
            return "hung", None
        try:
            return w.conn.recv()
        except (EOFError, OSError):
            return "died", None

    def close(self) -> None:
        """Stop every worker."""
        for w in self.workers:
            w.stop()


def _crashed(seed: str, text: str) -> Result:
    """The result for a program whose worker died: see whether torch alone survives it."""
    import subprocess

    if not text:
        return Result(seed, "", Counter(), [], [], f"{seed}: the generator crashed or hung")
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import sys, torch; exec(sys.stdin.read())"],
            input=text,
            capture_output=True,
            text=True,
            timeout=FUZZ_TIMEOUT,
        )
        code = probe.returncode
    except subprocess.TimeoutExpired:
        code = -1
    if code < 0:  # torch itself crashed or hung: a generator problem, not adcli's
        return Result(seed, text, Counter(), [], [], f"{seed}: torch crashed (status {code})")
    m = Mismatch("crash", None, "(torch ran it)", "the worker died or hung", "crash")
    return Result(seed, text, Counter(), [m], [])


def fuzz_many(
    base_seed: str,
    count: int,
    *,
    jobs: int = 1,
    shrink_budget: int = 300,
    max_shrinks: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Summary:
    """Run `count` programs from `base_seed`, then shrink representatives of each
    distinct failure (a few per kind, more while new signatures keep turning up)."""
    start = time.perf_counter()
    summary = Summary()
    failing: list[Result] = []
    seeds = [f"{base_seed}:{i}" for i in range(count)]
    pool = Workers(jobs)
    try:
        results = (
            res if res is not None else _crashed(task[1], text)
            for task, res, text in pool.run(("fuzz", s) for s in seeds)
        )
        _tally(summary, failing, results, count, start, progress)
        _shrink_all(pool, summary, failing, jobs, shrink_budget, max_shrinks, progress)
    finally:
        pool.close()
    summary.seconds = time.perf_counter() - start
    return summary


def _tally(
    summary: Summary,
    failing: list[Result],
    results: Iterable[Result],
    count: int,
    start: float,
    progress: Callable[[str], None] | None,
) -> None:
    last = time.perf_counter()
    for r in results:
        summary.programs += 1
        summary.features.update(r.features)
        summary.deliberate.update(r.deliberate)
        if r.generator_error:
            summary.generator_errors.append(r.generator_error)
        if r.mismatches:
            summary.failing += 1
            summary.by_category[r.mismatches[0].category] += 1
            failing.append(r)
        if progress is not None and (time.perf_counter() - last > 10 or summary.programs == count):
            last = time.perf_counter()
            rate = summary.programs / (last - start)
            progress(
                f"[{summary.programs}/{count}] {rate:.1f} programs/s, "
                f"{summary.failing} with mismatches, "
                f"{sum(summary.deliberate.values())} deliberate, "
                f"{len(summary.generator_errors)} generator errors"
            )


def _shrink_all(
    pool: Workers,
    summary: Summary,
    failing: list[Result],
    jobs: int,
    budget: int,
    max_shrinks: int | None,
    progress: Callable[[str], None] | None,
) -> None:
    """Shrink failing programs: kinds of mismatch not tried yet first, then a few more
    per kind (three more each time one turned up a new finding). Programs left over
    are counted under their kind's finding, or listed unshrunk."""
    tried: Counter = Counter()
    novel: Counter = Counter()
    led_to: dict[str, str] = {}  # pre-signature -> the first finding it gave
    pending = list(failing)
    done = 0

    def allowed(r: Result) -> bool:
        pre = _presignature(r)
        return tried[pre] < 2 + 3 * novel[pre]

    while max_shrinks is None or done < max_shrinks:
        pending = [r for r in pending if allowed(r)] + [r for r in pending if not allowed(r)]
        pending.sort(key=lambda r: tried[_presignature(r)] > 0)  # stable: new kinds first
        room = max(jobs, 1) if max_shrinks is None else min(max(jobs, 1), max_shrinks - done)
        batch: list[Result] = []
        for r in pending:
            if len(batch) < room and allowed(r):
                tried[_presignature(r)] += 1
                batch.append(r)
        if not batch:
            break
        pending = [r for r in pending if r not in batch]
        done += len(batch)
        for r, f in zip(batch, _shrink_batch(pool, batch, budget), strict=True):
            pre = _presignature(r)
            if f.signature in summary.findings:
                summary.findings[f.signature].seeds.append(r.seed)
            else:
                summary.findings[f.signature] = f
                novel[pre] += 1
            led_to.setdefault(pre, f.signature)
        if progress is not None:
            progress(f"shrunk {done} programs: {len(summary.findings)} distinct findings")
    for r in pending:
        pre = _presignature(r)
        if pre in led_to:
            summary.findings[led_to[pre]].seeds.append(r.seed)
        else:
            summary.unshrunk.setdefault(pre, []).append(r)


def _shrink_batch(pool: Workers, batch: list[Result], budget: int) -> list[Finding]:
    """Shrink in the workers; a shrink that crashed keeps its program unshrunk."""
    tasks = [("shrink", (r, budget)) for r in batch]
    done: dict[str, Finding] = {}
    for task, finding, _ in pool.run(tasks):
        r = task[1][0]
        if finding is None:
            m = r.mismatches[0]
            finding = Finding(signature(m, r.text), m.category, [r.seed], r.text, m, "", "", None)
        done[r.seed] = finding
    return [done[r.seed] for r in batch]


# ---------------------------------------------------------------- files


def findings_markdown(summary: Summary, title: str = "Fuzz findings") -> str:
    """All findings, grouped by category, as Markdown."""
    parts = [f"# {title}\n", "```\n" + summary.text() + "\n```\n"]
    by_cat: dict[str, list[Finding]] = {}
    for f in summary.findings.values():
        by_cat.setdefault(f.category, []).append(f)
    for cat in sorted(by_cat):
        parts.append(f"## {cat}\n")
        for f in sorted(by_cat[cat], key=lambda f: -len(f.seeds)):
            parts.append(f.report())
    if summary.unshrunk:
        parts.append("## Not shrunk (the cap on shrinks was reached)\n")
        for pre, rs in sorted(summary.unshrunk.items()):
            seeds = ", ".join(r.seed for r in rs[:5])
            parts.append(f"### {pre[:200]}\n\nseeds: {seeds}\n\n{rs[0].mismatches[0].describe()}\n")
    if DELIBERATE:
        parts.append("## Deliberate divergences (not counted as failures)\n")
        parts += [f"- **{d.name}** ({d.category}): {d.reason}" for d in DELIBERATE]
        parts += [f"- **{d.name}** (any, {f}): {d.reason}" for f, d in BY_FEATURE.items()]
        d = TORCH_INTERNAL_ASSERT
        parts.append(f"- **{d.name}** (any, torch's error): {d.reason}")
    return "\n".join(parts) + "\n"


def write_reproducers(summary: Summary, out: Path) -> None:
    """One `.ad` file per finding (outputs as comments) and findings.md, under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(sorted(summary.findings.values(), key=lambda f: f.signature)):
        comment = "\n".join(
            "# " + line
            for line in (
                [f"signature: {f.signature}", f"seeds: {', '.join(f.seeds[:10])}"]
                + f.mismatch.describe().splitlines()
            )
        )
        (out / f"{i:03d}-{f.category}.ad").write_text(comment + "\n" + f.text, encoding="utf-8")
    (out / "findings.md").write_text(findings_markdown(summary), encoding="utf-8")


def coverage_text(features: Counter) -> str:
    """What the programs exercised: statement kinds and operations by count, and the
    grad_fn names of adcli's registry that no program produced (under torch)."""
    import adcli.autograd.ops  # noqa: F401 - fills the registry
    from adcli.autograd.node import Function

    registry = {cls.grad_fn_name for cls in Function.registry.values()}
    seen = {k.removeprefix("grad_fn:") for k in features if k.startswith("grad_fn:")}
    plain = sorted((k, n) for k, n in features.items() if not k.startswith("grad_fn:"))
    lines = ["features (statement kinds, operations, records, errors) by count:"]
    lines += [f"  {k}: {n}" for k, n in plain]
    lines.append(f"grad_fn nodes produced: {len(seen)}")
    missing = sorted(registry - seen)
    lines.append(f"adcli registry grad_fns never produced ({len(missing)}): {', '.join(missing)}")
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.fuzz`: exit 1 when any mismatch was found."""
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    p.add_argument("--count", type=int, default=1000, help="programs to run (default 1000)")
    p.add_argument("--seed", default="0", help="base seed; program i uses '<seed>:<i>'")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--out", type=Path, default=None, help="folder for shrunk reproducers")
    p.add_argument("--budget", type=int, default=400, help="test runs per shrink (default 400)")
    p.add_argument("--max-shrinks", type=int, default=None, help="cap on programs shrunk")
    p.add_argument("--show", metavar="SEED", help="print the program of one full seed and exit")
    p.add_argument("--coverage", action="store_true", help="also print what the programs used")
    args = p.parse_args(argv)
    if args.show:
        print(program_for(args.show).text, end="")
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    summary = fuzz_many(
        args.seed,
        args.count,
        jobs=args.jobs,
        shrink_budget=args.budget,
        max_shrinks=args.max_shrinks,
        progress=lambda s: print(s, flush=True),
    )
    print(summary.text())
    if args.coverage:
        print(coverage_text(summary.features))
    if args.out is not None:
        write_reproducers(summary, args.out)
        print(f"reproducers written to {args.out}/")
    return 1 if summary.failing else 0


if __name__ == "__main__":
    sys.exit(main())
