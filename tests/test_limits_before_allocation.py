"""Size limits checked before anything is allocated or looped over (issue 14, items 2-4).

Every attempt from the issue ends in a one-line error naming its limit, exit 1,
quickly and without a traceback: in process through `runner.run_text` (fast), and a
few through `adcli run` itself. `tracemalloc` (which sees NumPy's allocations) proves
that refused results were never allocated.
"""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from adcli.autograd import budget, ops
from adcli.autograd.config import config
from adcli.autograd.tensor import Size
from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text
from adcli.lang.bounds import BigRange, int_text_bits, nested_size

ROOT = Path(__file__).resolve().parent.parent
# "Within a second" on an idle machine; the shared test machines run several
# suites at once, so the bound here leaves room for that.
SECONDS = 6.0


def run(text: str, **options: object) -> tuple[int, str, float]:
    """(exit status, output, seconds) of `text` run in this process."""
    buf = io.StringIO()
    opts = RunOptions(quiet=True, color=False, **options)  # type: ignore[arg-type]
    start = time.monotonic()
    code = run_text(text, "t.ad", opts, _Streams(buf, buf))
    return code, buf.getvalue(), time.monotonic() - start


def refused(text: str, *words: str, **options: object) -> str:
    """Run `text`; it must fail at once with one error line holding `words`."""
    code, out, seconds = run(text, **options)
    first = out.splitlines()[0] if out else ""
    assert code == 1, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert first.startswith("t.ad:") and ": error: " in first, out
    for w in words:
        assert w in first, out
    assert seconds < SECONDS, (seconds, text)
    return first


NUMEL = "exceeds the size limit of 50000000 (raise it with --max-numel)"

# (script, words of the error): results of each operation beyond --max-numel
ELEMENT_LIMIT = [
    ("x = torch.ones(20000, 1) + torch.ones(1, 20000)", NUMEL),
    ("x = torch.ones(20000, 1) * torch.ones(20000)", NUMEL),
    ("x = torch.where(torch.ones(20000, 1) > 0, torch.ones(20000), 0.0)", NUMEL),
    ("x = torch.clamp(torch.ones(20000, 1), min=torch.zeros(20000))", NUMEL),
    ("x = torch.outer(torch.ones(20000), torch.ones(20000))", NUMEL),
    ("x = torch.ger(torch.ones(20000), torch.ones(20000))", NUMEL),
    ("x = torch.ones(20000).repeat(20000)", NUMEL),
    ("x = torch.ones(20000, 1).repeat(1, 20000)", NUMEL),
    ("x = torch.ones(1).expand(10**6, 10**6).sum()", "tensor of 1000000000000 elements", NUMEL),
    ("x = torch.ones(1).expand(20000, 20000)", NUMEL),
    ("x = torch.ones(20000, 1).expand(-1, 20000).contiguous()", NUMEL),
    ("x = torch.ones(1000)\nfor i in range(30):\n    x = torch.cat([x, x])", NUMEL),
    ("x = torch.stack([torch.ones(20000)] * 20000)", NUMEL),
    ("x = torch.ones(20000, 1) @ torch.ones(1, 20000)", NUMEL),
    ("x = torch.mm(torch.ones(20000, 1), torch.ones(1, 20000))", NUMEL),
    ("x = torch.bmm(torch.ones(2, 20000, 1), torch.ones(2, 1, 20000))", NUMEL),
    ("x = torch.matmul(torch.ones(1, 20000, 1), torch.ones(20000, 1, 20000))", NUMEL),
    ("x = torch.addmm(torch.zeros(1), torch.ones(20000, 1), torch.ones(1, 20000))", NUMEL),
    ("x = torch.ones(1, 20000)[torch.zeros(20000, dtype=torch.long)]", NUMEL),
    (
        "i = torch.zeros(20000, dtype=torch.long)\n"
        "x = torch.ones(20000, 20000 // 20000)[i[:, None], i[None, :]]",
        NUMEL,
    ),
    ("x = torch.ones(20000).masked_fill(torch.ones(20000, 1) > 0, 0.0)", NUMEL),
    ("row = [0.0] * 20000\nx = torch.tensor([row for i in range(20000)])", NUMEL),
    ("x = torch.tensor([[0.0] * 20000] * 20000)", "nested list of 400,020,000 items"),
    ("l = torch.nn.Linear(1, 20000)\ny = l(torch.ones(20000, 1))", NUMEL),
    ("e = torch.nn.Embedding(1, 20000)\ny = e(torch.zeros(20000, dtype=torch.long))", NUMEL),
    (
        "from torch.autograd.functional import jacobian\n"
        "j = jacobian(torch.exp, torch.ones(20000))",
        NUMEL,
    ),
    (
        "from torch.autograd.functional import hessian\n"
        "h = hessian(lambda x: x.exp().sum(), torch.ones(20000))",
        NUMEL,
    ),
    (
        "from torch.autograd import gradcheck\n"
        "x = torch.ones(30000, dtype=torch.float64, requires_grad=True)\n"
        "gradcheck(torch.exp, (x,))",
        NUMEL,
    ),
    ("from torch.func import jacrev\nj = jacrev(torch.exp)(torch.ones(20000))", NUMEL),
    ("from torch.func import jacfwd\nj = jacfwd(torch.exp)(torch.ones(20000))", NUMEL),
    (
        "from torch.func import hessian\nh = hessian(lambda x: x.exp().sum())(torch.ones(20000))",
        NUMEL,
    ),
]


@pytest.mark.parametrize(("body", "words"), [(b, tuple(w)) for b, *w in ELEMENT_LIMIT])
def test_element_limit_before_allocating(body: str, words: tuple[str, ...]) -> None:
    refused("import torch\n" + body + "\n", "LimitError", *words)


def test_refused_results_are_never_allocated() -> None:
    """With tracemalloc on, a refused 400-million-element result (1.6 GB) leaves the
    peak of traced memory far below its size: it was refused before NumPy allocated."""
    gc.collect()
    tracemalloc.start()
    try:
        for body, *_ in ELEMENT_LIMIT:
            if "cat" in body or "hessian" in body:
                continue  # (cat's last legal result is itself large; hessians are slow)
            tracemalloc.reset_peak()
            code, out, _ = run("import torch\n" + body + "\n")
            assert code == 1, out
            peak = tracemalloc.get_traced_memory()[1]
            assert peak < 400 * 2**20, (body, peak)  # the refused results need 1.6 GB or more
    finally:
        tracemalloc.stop()


def test_limit_is_the_option() -> None:
    refused(
        "import torch\nx = torch.ones(100, 1) + torch.ones(1, 100)\n",
        "limit of 1000",
        max_numel=1000,
    )
    code, out, _ = run(
        "import torch\nprint((torch.ones(10, 1) + torch.ones(1, 10)).shape)\n", max_numel=100
    )
    assert code == 0 and out == "torch.Size([10, 10])\n"


def test_broadcast_views_within_the_limit_still_work() -> None:
    code, out, _ = run(
        "import torch\n"
        "x = torch.ones(3, 1).expand(3, 4)\n"
        "print(x.sum().item(), (torch.ones(2, 1) + torch.ones(1, 3)).shape)\n"
        "print(torch.cat([torch.ones(2), torch.zeros(1)]), torch.ones(2).repeat(2))\n"
    )
    assert code == 0, out
    assert out == "12.0 torch.Size([2, 3])\ntensor([1., 1., 0.]) tensor([1., 1., 1., 1.])\n"


# --------------------------------------------------------------- memory budget


def test_tensor_memory_budget() -> None:
    first = refused(
        "import torch\nxs = []\nfor i in range(12):\n    xs.append(torch.ones(4_000_000))\n",
        "LimitError",
        "more than the tensor memory budget of 64 MiB (raise it with --max-tensor-memory)",
        max_tensor_memory=64 * 2**20,
    )
    assert "t.ad:4:" in first


def test_tensor_memory_is_given_back() -> None:
    """Dropped tensors (and views keeping their base alive) are counted while alive only."""
    code, out, _ = run(
        "import torch\n"
        "for i in range(40):\n"
        "    x = torch.ones(4_000_000)\n"
        "    v = x[::2]\n"
        "print('ok')\n",
        max_tensor_memory=64 * 2**20,
    )
    assert code == 0 and out == "ok\n", out


def test_budget_counts_array_owners_once() -> None:
    gc.collect()
    saved = (config.max_numel, config.max_tensor_bytes)
    config.max_numel, config.max_tensor_bytes = 10**8, 40 * 2**20
    try:
        before = budget.live_bytes()
        x = ops.ones(2_000_000)  # 8 MB
        views = [x[::2], ops.reshape(x, (1000, 2000)), x.data]
        assert budget.live_bytes() - before == 8_000_000
        small = ops.ones(1).expand(5_000_000)  # a broadcast of one element holds nothing
        assert budget.live_bytes() - before == 8_000_000
        kept = [ops.ones(2_000_000) for _ in range(4)]  # 40 MB with x: under 40 MiB
        with pytest.raises(MemoryError, match="tensor memory budget of 40 MiB"):
            kept.append(ops.ones(2_000_000))
        del x, views, small, kept
        gc.collect()
        assert budget.live_bytes() == before
    finally:
        config.max_numel, config.max_tensor_bytes = saved


# ----------------------------------------------------- sequences and C-level steps

STEPS = [
    (
        "import torch\nn = torch.tensor([300000000]).numpy()[0]\nx = [0] * n\n",
        "sequence of 300,000,000",
    ),
    ("import numpy as np\nx = [0] * np.int64(3 * 10**8)\n", "sequence of 300,000,000"),
    ("import numpy as np\nx = np.int32(10**8) * 'ab'\n", "sequence of 200,000,000"),
    ("import torch\nx = 'ab' * torch.tensor(10**8)\n", "sequence of 200,000,000"),
    ("x = int('1' * 10**7, 2)\n", "integer result of about 10,000,000 bits"),
    ("x = int('f' * 10**6, base=16)\n", "integer result of about 4,000,000 bits"),
    ("import math\nx = math.factorial(10**7)\n", "factorial"),
    ("import math\nx = math.comb(10**7, 5 * 10**6)\n", "comb"),
    ("import math\nx = math.perm(10**7)\n", "perm"),
    ("x = {}.keys() & range(10**18)\n", "a range of 1,000,000,000,000,000,000 items"),
    ("x = set(range(10**18))\n", "longer than the limit"),
    ("x = 'a' in range(10**18)\n", "is longer than the limit of 10,000,000 (the step limit)"),
    (
        "l = []\nfor i in range(40):\n    l = [l, l]\ns = str(l)\n",
        "text of a nested list of 2,199,023,255,550",
    ),
    ("l = []\nfor i in range(40):\n    l = [l, l]\nprint(l)\n", "text of a nested list"),
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = repr(l)\n", "text of a nested list"),
    ("l = []\nfor i in range(40):\n    l = (l, l)\ns = '%s' % (l,)\n", "text of a nested tuple"),
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = '{}'.format(l)\n", "text of a nested list"),
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = f'{l:}'\n", "text of a nested list"),
    # a field without a spec, and a conversion before a spec, check as str() does
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = f'{l}'\n", "text of a nested list"),
    ("l = []\nfor i in range(40):\n    l = (l, l)\ns = f'{l!r}'\n", "text of a nested tuple"),
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = f'{l!s:>5}'\n", "text of a nested list"),
    (
        "l = []\nfor i in range(40):\n    l = [l, l]\ns = sorted([l, [l]])\n",
        "sorted() of nested items",
    ),
    ("l = []\nfor i in range(40):\n    l = [l, l]\ns = max([l], [[l]])\n", "max() of nested items"),
    ("a = [[0] * 10**7] * 10**7\n", "nested list of 100,000,010,000,000"),
    ("a = [[0] * 10**7]\nb = a * 10**7\n", "nested list"),
    ("a = [[0] * 10**4] * 10**4\nb = sorted(a)\n", "nested list"),
    ("s = '%(a)1500000000s' % {'a': 1}\n", "format width or precision 1500000000"),
    ("s = '%(a(b))1500000000s' % {'a(b)': 1}\n", "format width or precision 1500000000"),
    ("s = '%-1500000000.3f' % 1.0\n", "format width or precision 1500000000"),
    (
        "import torch\ns = torch.Size(zip(range(10**9)))\n",
        "takes an iterable of 'int' (item 0 is 'tuple')",
    ),
    ("import torch\ns = torch.Size(range(10**9))\n", "torch.Size of more than 1,000,000 sizes"),
]


@pytest.mark.parametrize(("text", "words"), STEPS)
def test_no_unbounded_c_step(text: str, words: str) -> None:
    refused(text, words)


def test_big_ranges_behave_as_ranges() -> None:
    code, out, _ = run(
        "for i in range(10**9):\n"
        "    if i == 3:\n"
        "        break\n"
        "r = range(10**18)\n"
        "print(i, isinstance(r, range), type(r) is range, type(range(3)) is range)\n"
        "print(r, len(r), r[5], r[-1], 5 in r, 5.0 in r, 0.5 in r, -1 in r, r == range(10**18))\n"
        "print(list(zip(range(10**9), 'ab')), r[::2], any(range(10**18)), bool(range(10**9)))\n"
    )
    assert code == 0, out
    assert out == (
        "3 True True True\n"
        "range(0, 1000000000000000000) 1000000000000000000 5 999999999999999999"
        " True True False False True\n"
        "[(0, 'a'), (1, 'b')] range(0, 1000000000000000000, 2) True True\n"
    )


def test_builtins_keep_python_behaviour() -> None:
    code, out, _ = run(
        "print(int('ff', 16), int(' 12 '), int(3.9), int(), str(5), str(), repr([1, 'a']))\n"
        "print(type(5) is int, isinstance(True, int), type('a') is str, int, str, range)\n"
        "print(sorted([[3, 1], [2]]), min([[1], [0]]), max(3, 4), [[0] * 3] * 2)\n"
        "print('%s-%d%%' % ('a', 5), '%(a)5s|' % {'a': 1}, '%%%ds' % 3, f'{[1]}')\n"
        "print(sorted([(2, 'b'), (1, 'a')] * 1000)[0], list(map(str, [1, 2])))\n"
    )
    assert code == 0, out
    assert out == (
        "255 12 3 0 5  [1, 'a']\n"
        "True True True <class 'int'> <class 'str'> <class 'range'>\n"
        "[[2], [3, 1]] [0] 4 [[0, 0, 0], [0, 0, 0]]\n"
        "a-5%     1| %3s [1]\n"
        "(1, 'a') ['1', '2']\n"
    )


def test_nested_size() -> None:
    nest: list = []
    for _ in range(40):
        nest = [nest, nest]
    assert nested_size(nest) == 2**41 - 2
    a: list = [1, "ab", [1, 2, [3]], {"k": [1, 2]}]
    a.append(a)  # a cycle counts once
    assert nested_size(a) == 15
    assert nested_size([[0] * 1000] * 1000) == 1000 + 1000 * 1000
    assert nested_size(list(range(10**5))) == 10**5
    assert nested_size([(i, i) for i in range(10**6)]) is None  # too broad to measure


def test_big_range_unit() -> None:
    def refuse(n: int) -> Exception:
        return RuntimeError(f"refused {n}")

    r = BigRange(range(10**12), 5, refuse)
    assert list(zip(range(5), r, strict=False)) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    with pytest.raises(RuntimeError, match="refused 6"):
        list(iter(r))
    with pytest.raises(RuntimeError, match="refused"):
        set(reversed(r))
    assert 10**12 - 1 in r and 10**12 not in r and np.int64(7) in r and 7.5 not in r
    assert int_text_bits("1" * 100, 2) == 100


def test_torch_size_from_iterables() -> None:
    assert Size(iter([1, 2])) == (1, 2) and repr(Size([np.int64(3)])) == "torch.Size([3])"
    with pytest.raises(TypeError, match=r"takes an iterable of 'int' \(item 1 is 'float'\)"):
        Size([1, 1.5])


# --------------------------------------------------------------------- storage


def test_tensors_hand_out_views_never_their_own_array() -> None:
    code, out, _ = run(
        "import torch\n"
        "import numpy as np\n"
        "x = torch.ones(3)\n"
        "a = x.numpy()\n"
        "a[0] = 5\n"
        "b = np.asarray(x)\n"
        "b[1] = 7\n"
        "c = np.array([x])\n"
        "c[0, 2] = 9\n"
        "d = x.data\n"  # a tensor sharing the values, as in PyTorch, still adcli's own
        "d[0] = 2\n"
        "print(x, type(x.tolist()), type(d))\n"
    )
    assert code == 0, out
    # a view of the memory, as PyTorch's numpy() and np.asarray share it; np.array copies
    assert out == "tensor([2., 7., 1.]) <class 'list'> <class 'torch.Tensor'>\n"
    refused("import torch\nx = torch.ones(3).__array__()\n", "SandboxError", "'__array__'")
    refused("import torch\nx = torch.ones(3).data_\n", "has no attribute 'data_'")


# ---------------------------------------------------------------- adcli run


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("import torch\nx = torch.ones(20000, 1) + torch.ones(1, 20000)\n", NUMEL),
        ("import torch\nx = torch.ones(1).expand(10**6, 10**6).sum()\n", NUMEL),
        ("l = []\nfor i in range(40):\n    l = [l, l]\nprint(l)\n", "text of a nested list"),
        ("s = '%(a)1500000000s' % {'a': 1}\n", "format width or precision"),
    ],
)
def test_adcli_run_gives_one_line(tmp_path: Path, text: str, words: str) -> None:
    script = tmp_path / "t.ad"
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "adcli", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    seconds = time.monotonic() - start
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr + done.stdout
    first = done.stderr.splitlines()[0]
    assert "error: LimitError" in first and words in first, done.stderr
    assert seconds < SECONDS + 2, seconds  # plus the child's start-up
