"""Scripts made by breaking real ones: the samples and the conformance scripts.

`Mutator.mutate(rng)` takes a seed script and applies one to four random edits:
token deletion, duplication and swap; literals replaced by huge, tiny, negative
or non-finite numbers; names swapped for others; an expression buried under
hundreds of brackets or unary operators (sometimes past the parser's limits);
very long lines; random Unicode (control characters, zero-width and
right-to-left marks, combining marks, emoji, lone surrogates); lines deleted,
duplicated, re-indented or taken from another seed; and hostile snippets, the
escape and denial-of-service attempts of tests/test_sandbox.py,
tests/test_attacks.py and issue 14, pasted in at a statement boundary.
"""

from __future__ import annotations

import ast
import functools
import random
import re
from pathlib import Path

__all__ = ["Mutator", "seed_scripts", "hostile_snippets", "SLOW_SNIPPETS"]

ROOT = Path(__file__).resolve().parents[2]

# Python-ish tokens: strings (whole), numbers, names, operators, spaces, newlines.
_TOKEN = re.compile(
    r"""(?P<str>[rRbBfFuU]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))"""
    r"|(?P<num>\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<nl>\n)"
    r"|(?P<space>[ \t]+)"
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<op>\*\*=?|//=?|->|[-+*/%@&|^<>=!]=|<<|>>|\.\.\.|.)",
)

HUGE_LITERALS = [
    "10**18",
    "2**63",
    "-2**63 - 1",
    "10**400",
    "1" + "0" * 5000,
    "1e308",
    "1e309",
    "-1e309",
    "4.9e-324",
    "float('nan')",
    "float('inf')",
    "-float('inf')",
    "-0.0",
    "0",
    "-1",
    "2147483647",
    "9" * 60 + ".5",
    "True",
    "None",
    "''",
    "[]",
    "()",
    "torch.tensor(float('nan'))",
    "torch.tensor([])",
    "torch.empty(0, 3)",
    "torch.ones(10**6)",
    "torch.zeros(3, dtype=torch.float64)",
]

UNICODE = [
    "\x00",
    "\x0b",
    "\x0c",
    "\r",
    "\t",
    "\x1b[31m",
    "\u200b",
    "\u200f",
    "\u202e",
    "\ufeff",
    "\u0301",
    "é",
    "ß",
    "ǅ",
    "𝔵",
    "ℌ",
    "Ⅻ",
    "١",
    "😀",
    "\U0001f9ea",
    "\ud800",
    "\udfff",
    "\u2028",
    "\x85",
    "\uffff",
    "∂",
    "ｘ",
]

#: Denial-of-service attempts from issue 14 and a few more (each a complete script).
#: Those in SLOW_SNIPPETS are stopped by a budget, not a guard, and take its time.
_MATMULS = (
    "import torch\nfor i in range(100):\n    x = torch.ones(3000, 3000) @ torch.ones(3000, 3000)\n"
)
DOS_SNIPPETS = [
    "0.5 in range(10**18)\n",
    "{}.keys() & range(10**18)\n",
    "import math\nmath.factorial(10**7)\n",
    "int('1' * 10**7, 2)\n",
    "l = []\nfor i in range(40):\n    l = [l, l]\nstr(l)\n",
    "a = [[0] * 10**7] * 10**7\na == a\n",
    "import torch\ntorch.ones(1).expand(10**6, 10**6).sum()\n",
    "import torch\ntorch.tensor([[0.0] * 20000] * 20000)\n",
    "import torch\ntorch.ones(20000, 1) + torch.ones(1, 20000)\n",
    "import torch\ntorch.outer(torch.ones(30000), torch.ones(30000))\n",
    "import torch\ntorch.ones(10).repeat(10**9)\n",
    "import torch\nx = torch.ones(2)\nfor i in range(40):\n    x = torch.cat([x, x])\n",
    "import torch\ntorch.Size(zip(range(10**9)))\n",
    "'%(a)1500000000s' % {'a': 1}\n",
    "'{:1500000000}'.format(1)\n",
    "f'{1:1500000000}'\n",
    "import torch\nx = torch.tensor([300000000]).numpy()[0]\n[0] * x\n",
    "t = ()\nfor i in range(10**6):\n    t = (t,)\nd = {t: 1}\n",
    "x = 10**10**8\n",
    "x = 2 ** 2 ** 40\n",
    "s = 'x' * 10**7\nfor i in range(100):\n    s = s + s\n",
    "import torch\nx = torch.ones(20000)\ntorch.autograd.functional.jacobian(torch.exp, x)\n",
    "sorted([[0] * 10**7] * 10**7)\n",
    "hash(tuple(range(10**8)))\n",
    "x = [1] * 10**9\n",
    "x = 'a' * 10**10\n",
    "import math\nmath.comb(10**7, 5 * 10**6)\n",
    "pow(10, 10**8)\n",
    "x = 1 << 10**9\n",
    "x = 10**5000\nstr(x)\n",
    "def f():\n    return f()\nf()\n",
    "def f(n):\n    return [f(n - 1) for _ in range(2)] if n else 0\nf(40)\n",
    "while True:\n    pass\n",
    "x = list(range(10**8))\n",
    _MATMULS,
]
SLOW_SNIPPETS = frozenset(
    {
        "while True:\n    pass\n",
        "def f(n):\n    return [f(n - 1) for _ in range(2)] if n else 0\nf(40)\n",
        _MATMULS,
    }
)


def seed_scripts() -> list[str]:
    """The texts of samples/*.ad and tests/conformance/scripts/*.ad."""
    paths = sorted((ROOT / "samples").glob("*.ad"))
    paths += sorted((ROOT / "tests" / "conformance" / "scripts").glob("*.ad"))
    return [p.read_text(encoding="utf-8") for p in paths]


@functools.lru_cache(maxsize=1)
def hostile_snippets() -> tuple[str, ...]:
    """Short scripts from the sandbox and attack tests (every string constant that
    looks like a script), plus DOS_SNIPPETS."""
    found: list[str] = []
    for name in ("test_sandbox.py", "test_attacks.py"):
        path = ROOT / "tests" / name
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if text.endswith("\n") and 3 < len(text) < 600 and not text.startswith("#"):
                    found.append(text)
    return tuple(dict.fromkeys(found + DOS_SNIPPETS))


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs covering `text` exactly."""
    return [(m.lastgroup or "op", m.group()) for m in _TOKEN.finditer(text)]


class Mutator:
    """Random edits of seed scripts."""

    def __init__(self, seeds: list[str] | None = None, slow_snippets: bool = True) -> None:
        self.seeds = seeds if seeds is not None else seed_scripts()
        # a line just under the length limit parses for a second or two: not in CI
        self.line_lengths = [1000, 20000, 99_990, 100_001] if slow_snippets else [1000, 100_001]
        snippets = hostile_snippets()
        if not slow_snippets:
            snippets = tuple(s for s in snippets if s not in SLOW_SNIPPETS)
        self.snippets = snippets
        self.edits = [
            (self.delete_tokens, 3),
            (self.duplicate_tokens, 2),
            (self.swap_tokens, 2),
            (self.replace_literal, 8),
            (self.replace_name, 6),
            (self.deep_nesting, 2),
            (self.long_line, 1),
            (self.unicode, 3),
            (self.line_edit, 4),
            (self.splice, 3),
            (self.hostile, 4),
        ]

    def mutate(self, rng: random.Random, text: str | None = None) -> str:
        """A seed script (or `text`) after one to four random edits."""
        if text is None:
            text = rng.choice(self.seeds)
        funcs = [f for f, _ in self.edits]
        weights = [w for _, w in self.edits]
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
            text = rng.choices(funcs, weights)[0](rng, text)
        return text

    # ------------------------------------------------------------ token edits

    @staticmethod
    def _pick(rng: random.Random, toks: list[tuple[str, str]], kinds: set[str]) -> int | None:
        where = [i for i, (k, _) in enumerate(toks) if k in kinds]
        return rng.choice(where) if where else None

    def delete_tokens(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        i = self._pick(rng, toks, {"name", "op", "num", "str", "nl"})
        if i is None:
            return text
        n = rng.choice([1, 1, 1, 2, 3])
        del toks[i : i + n]
        return "".join(t for _, t in toks)

    def duplicate_tokens(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        i = self._pick(rng, toks, {"name", "op", "num", "str"})
        if i is None:
            return text
        n = rng.choice([1, 1, 2, 4])
        piece = toks[i : i + n]
        toks[i:i] = piece * rng.choice([1, 1, 2, 50])
        return "".join(t for _, t in toks)

    def swap_tokens(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        i = self._pick(rng, toks, {"name", "op", "num", "str"})
        j = self._pick(rng, toks, {"name", "op", "num", "str"})
        if i is None or j is None:
            return text
        toks[i], toks[j] = toks[j], toks[i]
        return "".join(t for _, t in toks)

    def replace_literal(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        i = self._pick(rng, toks, {"num", "str"} if rng.random() < 0.9 else {"name"})
        if i is None:
            return text
        toks[i] = ("num", rng.choice(HUGE_LITERALS))
        return "".join(t for _, t in toks)

    def replace_name(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        names = [t for k, t in toks if k == "name"]
        i = self._pick(rng, toks, {"name"})
        if i is None:
            return text
        pool = names + ["torch", "print", "None", "self", "grad", "backward", "__class__", "x"]
        toks[i] = ("name", rng.choice(pool))
        return "".join(t for _, t in toks)

    # ------------------------------------------------------------ shapes

    def deep_nesting(self, rng: random.Random, text: str) -> str:
        toks = tokens(text)
        i = self._pick(rng, toks, {"name", "num"})
        if i is None:
            return text
        depth = rng.choice([50, 199, 200, 201, 500, 1499, 1500, 1501, 3000])
        opener, closer = rng.choice([("(", ")"), ("[", "]"), ("-", ""), ("not ", ""), ("~", "")])
        if rng.random() < 0.2:  # unbalanced on purpose
            closer = ""
        toks[i] = ("op", opener * depth + toks[i][1] + closer * depth)
        return "".join(t for _, t in toks)

    def long_line(self, rng: random.Random, text: str) -> str:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        n = rng.choice(self.line_lengths)
        kind = rng.randrange(4)
        if kind == 0:
            line = "z = " + "+".join(["1"] * (n // 2))
        elif kind == 1:
            line = "z = '" + "a" * n + "'"
        elif kind == 2:
            line = "z = [" + "0.5," * (n // 4) + "]"
        else:
            line = lines[i] + " " * n + "# end"
        lines.insert(i, _indent_of(lines[i]) + line.lstrip())
        return "\n".join(lines)

    def unicode(self, rng: random.Random, text: str) -> str:
        pos = rng.randrange(len(text) + 1)
        chars = "".join(rng.choice(UNICODE) for _ in range(rng.choice([1, 1, 2, 5])))
        if rng.random() < 0.3:  # as an identifier or a string
            chars = rng.choice(["x" + chars, repr(chars), chars + " = 1\n"])
        return text[:pos] + chars + text[pos:]

    # ------------------------------------------------------------ lines

    def line_edit(self, rng: random.Random, text: str) -> str:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        op = rng.randrange(5)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = rng.choice(["", " ", "    ", "\t", "        "]) + lines[i].lstrip()
        else:
            lines[i] = lines[i].lstrip()
        return "\n".join(lines)

    def splice(self, rng: random.Random, text: str) -> str:
        other = rng.choice(self.seeds).split("\n")
        a = rng.randrange(len(other))
        piece = other[a : a + rng.choice([1, 2, 5, 20])]
        lines = text.split("\n")
        i = rng.randrange(len(lines) + 1)
        lines[i:i] = piece
        return "\n".join(lines)

    def hostile(self, rng: random.Random, text: str) -> str:
        snippet = rng.choice(self.snippets)
        lines = text.split("\n")
        i = rng.randrange(len(lines) + 1)
        indent = _indent_of(lines[i]) if i < len(lines) else ""
        piece = [indent + line for line in snippet.rstrip("\n").split("\n")]
        lines[i:i] = piece
        return "\n".join(lines)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
