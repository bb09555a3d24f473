"""The legacy API and the Python glue (issue 12, items 3 and 5) without torch:
what cannot be compared with PyTorch (escapes through NumPy, limits, copies where
PyTorch shares memory, settings that must not leak from one run to the next) and
the wording of what stays unsupported. The behaviour that PyTorch shares is in
tests/conformance/scripts/legacy_*.ad and glue_*.ad."""

# ruff: noqa: E501 - tables of source snippets read best one per line

from __future__ import annotations

import contextlib
import io

import pytest

from adcli.core.options import RunOptions
from adcli.core.runner import _Streams, run_text


def run(text: str) -> tuple[int, str]:
    buf = io.StringIO()
    code = run_text(text, "u.ad", RunOptions(quiet=True), _Streams(buf, buf))
    return code, buf.getvalue()


def first_error(text: str) -> str:
    code, out = run(text)
    assert code == 1, out
    assert "Traceback" not in out
    return out.splitlines()[0]


NP = "import numpy as np\na = np.ones(3)\n"

NUMPY_ESCAPES = [
    # (script, part of the first error line)
    (NP + "np.load('x.npy')\n", "SandboxError: module 'numpy' has no attribute 'load'"),
    (NP + "np.save('x.npy', a)\n", "module 'numpy' has no attribute 'save'"),
    (NP + "np.fromfile('x')\n", "module 'numpy' has no attribute 'fromfile'"),
    (NP + "np.lib\n", "module 'numpy' has no attribute 'lib'"),
    (NP + "np.ctypeslib\n", "module 'numpy' has no attribute 'ctypeslib'"),
    (NP + "np.frompyfunc\n", "module 'numpy' has no attribute 'frompyfunc'"),
    (NP + "np.vectorize\n", "module 'numpy' has no attribute 'vectorize'"),
    ("import numpy.lib\n", "adcli does not support numpy.lib"),
    ("from numpy import ctypeslib\n", "cannot import name 'ctypeslib' from 'numpy'"),
    (NP + "a.ctypes\n", "adcli does not support numpy.ndarray.ctypes"),
    (NP + "a.tofile('x')\n", "adcli does not support numpy.ndarray.tofile"),
    (NP + "a.dump('x')\n", "adcli does not support numpy.ndarray.dump"),
    (NP + "a.view()\n", "adcli does not support numpy.ndarray.view"),
    (NP + "a.base\n", "adcli does not support numpy.ndarray.base"),
    (NP + "a.data\n", "adcli does not support numpy.ndarray.data"),
    (NP + "a.flat\n", "adcli does not support numpy.ndarray.flat"),
    (NP + "a.__array_interface__\n", "attribute '__array_interface__' is not available"),
    (NP + "a.__class__\n", "attribute '__class__' is not available"),
    (NP + "a.sum.__self__\n", "attribute '__self__' is not available"),
    (NP + "a.dtype.type\n", "adcli does not support numpy.dtype.type"),
    (NP + "a[0].__class__.__mro__\n", "attribute '__class__' is not available"),
    (NP + "np.ndarray((2,))\n", "np.ndarray(...) is not available in adcli scripts"),
    (NP + "type(a)((2,), buffer=a)\n", "np.ndarray(...) is not available in adcli scripts"),
    (NP + "np.array([1], dtype=type(None))\n", "Cannot interpret"),
    (NP + "np.array([1], dtype='O')\n", "supports bool, integer and float dtypes only"),
    (NP + "a.astype('O')\n", "supports bool, integer and float dtypes only"),
    (NP + "np.array(['a', 'b'])\n", "supports bool, integer and float arrays only"),
    (NP + "np.array([print])\n", "supports bool, integer and float arrays only"),
    (NP + "np.random.__dict__\n", "attribute '__dict__' is not available"),
    (NP + "np.random.RandomState\n", "module 'numpy.random' has no attribute 'RandomState'"),
    (NP + "np.zeros(10**10)\n", "exceeds the size limit"),
    (NP + "np.ones((100000, 100000))\n", "exceeds the size limit"),
    (NP + "np.random.randn(100000, 100000)\n", "exceeds the size limit"),
    (NP + "np.arange(1e12)\n", "exceeds the size limit"),
    (NP + "np.tile(a, 10**9)\n", "exceeds the size limit"),
    (NP + "np.outer(np.ones(10**5), np.ones(10**5))\n", "exceeds the size limit"),
    # the importer C code uses is unreachable from scripts
    ("__import__('os')\n", "name '__import__' is not defined"),
    ("print(__builtins__)\n", "name '__builtins__' is not defined"),
]


@pytest.mark.parametrize("script, message", NUMPY_ESCAPES)
def test_numpy_escape_attempts_fail(script: str, message: str) -> None:
    line = first_error(script)
    assert message.removeprefix("SandboxError: ") in line


@pytest.mark.parametrize(
    "script, message",
    [
        ("s = set(range(10**8))\n", "longer than the limit"),
        ("d = {}\nd.update(zip(range(10**8), range(10**8)))\n", "longer than the limit"),
        ("s = {1}\ns.update(range(10**8))\n", "longer than the limit"),
        ("s = {1}\ns.union(range(10**8))\n", "longer than the limit"),
        ("import math\nmath.factorial(10**7)\n", "LimitError: factorial of about"),
        ("import math\nmath.comb(10**7, 5 * 10**6)\n", "LimitError: comb of about"),
        ("import math\nmath.prod([2**60] * 10**5)\n", "LimitError: integer result"),
        ("import random\nrandom.choices([1], k=10**9)\n", "LimitError: random.choices"),
        ("import random\nrandom.getrandbits(10**9)\n", "LimitError"),
        ("from functools import reduce\nreduce(max, range(10**9))\n", "LimitError"),
        ("from collections import Counter\nCounter(range(10**12))\n", "LimitError"),
        ("import collections\ncollections.Counter().update(range(10**12))\n", "LimitError"),
    ],
)
def test_glue_is_bounded(script: str, message: str) -> None:
    assert message in first_error(script)


def test_numpy_arrays_share_a_tensors_memory_as_in_pytorch() -> None:
    code, out = run(
        "import torch\nimport numpy as np\n"
        "x = torch.zeros(2)\nn = x.numpy()\nn[0] = 5.0\nprint(x)\n"
        "a = np.zeros(2)\nt = torch.from_numpy(a)\na[0] = 7.0\nprint(t)\n"
        "u = torch.tensor(a)\na[1] = 9.0\nprint(u)\n"
    )
    assert code == 0, out
    assert out.splitlines()[:3] == [
        "tensor([5., 0.])",
        "tensor([7., 0.], dtype=torch.float64)",
        "tensor([7., 0.], dtype=torch.float64)",
    ]


def test_numpy_random_is_numpys_own_and_fresh_per_run() -> None:
    import numpy as np

    script = "import numpy as np\nnp.random.seed(3)\nprint(np.random.randn(3).tolist())\n"
    code, out = run(script)
    assert code == 0, out
    assert out.strip() == str(np.random.RandomState(3).randn(3).tolist())


def test_settings_do_not_leak_into_the_next_run() -> None:
    code, out = run(
        "import torch\ntorch.set_default_dtype(torch.float64)\n"
        "torch.set_printoptions(precision=1)\ntorch.set_default_device('cuda')\nprint(1)\n"
    )
    assert code == 0, out
    code, out = run("import torch\nprint(torch.tensor([1.25]), torch.get_default_dtype())\n")
    assert code == 0, out
    assert out.strip() == "tensor([1.2500]) torch.float32"


def test_default_device_cuda_fails_at_the_next_factory() -> None:
    line = first_error("import torch\ntorch.set_default_device('cuda')\nx = torch.ones(2)\n")
    assert line == "u.ad:3:5: error: AssertionError: Torch not compiled with CUDA enabled"


def test_future_imports_are_accepted_and_change_nothing() -> None:
    code, out = run(
        "from __future__ import print_function, division, absolute_import, unicode_literals\n"
        "import torch\nprint(7 / 2, 7 // 2)\n"
    )
    assert (code, out) == (0, "3.5 3\n")
    line = first_error("from __future__ import braces\n")
    assert line == "u.ad:1:24: error: SyntaxError: future feature braces is not defined"


def test_pre_2018_tutorial_fails_where_torch_fails() -> None:
    # jcjohnson/pytorch-examples autograd/two_layer_net_autograd.py reads loss.data[0]:
    # PyTorch 2.13 refuses it, with this sentence.
    script = (
        "import torch\nfrom torch.autograd import Variable\n"
        "dtype = torch.FloatTensor\n"
        "x = Variable(torch.randn(4, 3).type(dtype), requires_grad=False)\n"
        "w1 = Variable(torch.randn(3, 2).type(dtype), requires_grad=True)\n"
        "loss = x.mm(w1).clamp(min=0).pow(2).sum()\n"
        "print(0, loss.data[0])\n"
    )
    line = first_error(script)
    assert line == (
        "u.ad:7:10: error: IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` "
        "in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
    )


@pytest.mark.parametrize(
    "script, message",
    [
        (
            "import pandas as pd\npd.DataFrame()\n",
            "AttributeError: adcli does not support pandas.DataFrame: use Python lists",
        ),
        (
            "import matplotlib.pyplot as plt\nplt.plot([1])\n",
            "adcli does not support matplotlib.pyplot.plot: plotting is not available in adcli",
        ),
        (
            "from sklearn.datasets import make_moons\n",
            "adcli does not support the module 'sklearn'",
        ),
        ("import torchvision.models\n", "adcli does not support the module 'torchvision'"),
        (
            "from IPython.core.debugger import set_trace\n",
            "adcli does not support the module 'IPython': notebook tools and the debugger",
        ),
        (
            "import os\nos.listdir()\n",
            "adcli does not support os.listdir: adcli scripts cannot read or write files",
        ),
        (
            "import time\ntime.strftime('%Y')\n",
            "adcli does not support time.strftime: adcli has the clocks",
        ),
        ("from os import getcwd\n", "adcli does not support os.getcwd: adcli scripts cannot"),
        (
            "import foo_bar\n",
            "No module named 'foo_bar' (adcli scripts can import torch (with torch.nn, torch.optim, torch.autograd...), numpy, math and random)",
        ),
        (
            "import numpy.fft\n",
            "adcli does not support numpy.fft: its numpy subset is numpy, numpy.random and numpy.linalg",
        ),
        (
            "import torch\ntorch.nn.Conv3d(1, 2, 3)\n",
            "AttributeError: adcli does not support torch.nn.Conv3d: adcli has 1-d and 2-d convolutions only",
        ),
        (
            "import torch.nn as nn\nnn.MaxPool1d\n",
            "adcli does not support torch.nn.MaxPool1d: adcli has 2-d max and average pooling",
        ),
        (
            "import torch\ntorch.save({}, 'm.pt')\n",
            "adcli does not support torch.save: adcli scripts cannot read or write files",
        ),
        (
            "from torch.utils.data import IterableDataset\n",
            "adcli does not support torch.utils.data.IterableDataset: adcli's torch.utils.data "
            "has Dataset",
        ),
        (
            "from torch.utils.data import WeightedRandomSampler\n",
            "adcli does not support torch.utils.data.WeightedRandomSampler: adcli's "
            "torch.utils.data has Dataset",
        ),
        (
            "import torch\nx = torch.ones(1)\nx.cuda()\n",
            "AssertionError: Torch not compiled with CUDA enabled",
        ),
        (
            "from functools import lru_cache\n",
            "adcli does not support functools.lru_cache: adcli has functools.partial and functools.reduce; use def and lambda",
        ),
        (
            "import collections\ncollections.namedtuple('P', 'x y')\n",
            "adcli does not support collections.namedtuple: adcli has collections.OrderedDict, "
            "defaultdict and Counter; use dict",
        ),
        (
            "import functools\nimport torch\nfunctools.partial(torch.add, alpha=2).func\n",
            "SandboxError: attribute 'func' of 'partial' objects is not available in adcli scripts",
        ),
        (
            "import torch\ntorch.nn.Sequential(torch.nn.ReLU()).relu\n",
            "AttributeError: 'Sequential' object has no attribute 'relu'",
        ),
        (
            "import torch\ntorch.nn.Linear(1, 1)._parameters\n",
            "attribute '_parameters' is not available",
        ),
        (
            "print(open)\n",
            "NameError: name 'open' is not defined ('open' is not available in adcli scripts)",
        ),
    ],
)
def test_unsupported_names_say_so_and_point_elsewhere(script: str, message: str) -> None:
    assert message in first_error(script)


def test_unused_imports_and_type_hints_do_not_stop_a_tutorial() -> None:
    code, out = run(
        "import os\nimport matplotlib.pyplot as plt\nfrom typing import List, Optional\n"
        "import torch\n"
        "def f(x: List[int], y: Optional[float] = None) -> List[int]:\n    return x\n"
        "print(f([1, 2]))\n"
        "try:\n    os.getcwd()\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert code == 0, out
    assert (
        out
        == "[1, 2]\nadcli does not support os.getcwd: adcli scripts cannot read or write files\n"
    )


def test_numpy_inside_no_grad_and_custom_forward() -> None:
    # as in PyTorch, .numpy() refuses a tensor that requires grad only while grad mode is on
    code, out = run(
        "import torch\nx = torch.ones(2, requires_grad=True)\n"
        "with torch.no_grad():\n    print(x.numpy())\n"
    )
    assert (code, out) == (0, "[1. 1.]\n")


def test_training_scripts_can_time_themselves() -> None:
    # Scripts print how long a loop took; the clocks are the real ones, so only
    # their types and order are checked.
    code, out = run(
        "import time\nfrom time import perf_counter\n"
        "t0 = time.time(); p0 = perf_counter(); time.sleep(0.001)\n"
        "print(time.time() >= t0, perf_counter() > p0, type(time.time_ns()).__name__)\n"
    )
    assert (code, out) == (0, "True True int\n")


_PYTHON_GLUE = """names = ["loss", "acc"]
print("|".join(n.ljust(6) for n in names), "x".rjust(3), "t".center(5, "*"), "7".zfill(3))
print("hello world".title(), "abc".capitalize(), "a,b".partition(","), "a\\nb".splitlines())
print("a=b=c".rpartition("="), "Ab".swapcase(), "ab".isalpha(), "a1".isalnum(), " ".isspace())
print("loss=0.25".rsplit("=", 1), "x.pt".removesuffix(".pt"), "abcb".rfind("b"), "abcb".index("c"))
print(divmod(7, 2), divmod(-7.5, 2), pow(2, 10), pow(3, 200, 7), pow(2.0, -1))
print(bin(5), oct(8), hex(255), ord("a"), chr(98), format(3.14159, ".2f"), format(42, ">6"))
print(hash(3) == hash(3), hash("a") == hash("a"))
try:
    raise ValueError("bad value", 3)
except (TypeError, ValueError) as err:
    print(type(err).__name__, err.args)
class MyError(KeyError):
    pass
try:
    raise MyError("k")
except KeyError as err:
    print(err.args, repr(err))
"""


def test_python_glue_prints_what_python_prints() -> None:
    # Python is the oracle here: string methods, number builtins, an exception's args.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_PYTHON_GLUE, {})
    assert run(_PYTHON_GLUE) == (0, out.getvalue())


@pytest.mark.parametrize(
    "script, message",
    [
        ('"x".ljust(10**9)\n', "LimitError: string of 1,000,000,000 items"),
        ('"x".zfill(10**9)\n', "LimitError: string of 1,000,000,000 items"),
        ("pow(10, 10**8)\n", "LimitError: integer result of about 400,000,000 bits"),
        ('format(1, "1000000000")\n', "LimitError: format width or precision 1000000000"),
    ],
)
def test_padding_and_powers_are_bounded(script: str, message: str) -> None:
    assert message in first_error(script)
