"""Random scripts drawn from the language's own grammar (grammars/ad.lark).

`GrammarGen.program(rng)` walks the compiled Lark rules from `start`, choosing
an expansion at random at each nonterminal. Past a depth (or a token budget) it
takes the expansion that ends soonest, so every walk is finite and the text
always parses, as far as the grammar goes: what the compiler refuses later
(`return` outside a function, `break` outside a loop ...) is part of the test.
Terminals become text from small tables: names a script could mean (its
variables, torch's API, Python's builtins), numbers from 0 to 10**400 and NaN
spelled out, strings with and without f-string fields. The indentation tokens
the postlexer makes are turned back into leading spaces.
"""

from __future__ import annotations

import functools
import random
import warnings
from collections.abc import Iterator

from lark import Lark
from lark.grammar import NonTerminal, Rule, Terminal

from adcli.lang.parser import _grammar_text

__all__ = ["GrammarGen", "PRELUDE", "NAMES"]

#: a few variables every grammar program can use
PRELUDE = (
    "import torch\n"
    "x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
    "w = torch.ones(3, 3, requires_grad=True)\n"
    "y = (w @ x).sum()\n"
    "n = 3\n"
    "s = 'ab'\n"
    "d = {'k': 1}\n"
    "l = [1, 2.5, x]\n"
)

#: script names, weighted toward what the prelude defines and torch's common API
NAMES = (
    "x w y n s d l torch print len range sum min max abs int float str list dict tuple "
    "set sorted reversed enumerate zip map filter isinstance repr round bool any all "
    "tensor ones zeros randn rand arange linspace eye full stack cat exp log sin cos tanh "
    "sigmoid relu softmax matmul mm mean grad backward detach requires_grad "
    "requires_grad_ retain_grad item tolist numpy shape view reshape T t sum_ grad_fn "
    "is_leaf data dtype float64 float32 int64 no_grad enable_grad autograd functional "
    "jacobian hessian nn Linear Module Parameter optim SGD Adam step zero_grad F mse_loss "
    "show graph formula manual_seed math self cls a b i j k f g h e ValueError "
    "RuntimeError Exception super object property staticmethod"
).split()

_STRINGS = [
    "'a'",
    '"xy"',
    "''",
    "'%s'",
    "'{}'",
    "f'{x}'",
    "f'{n:>5}'",
    "f'{x!r}'",
    "f'{{}}'",
    "r'\\d'",
    "b'ab'",
    "'\\u00e9'",
    "'\\x00'",
    "'é∂😀'",
    "'\\N{BULLET}'",
    "'%(a)5s'",
    "'\\\\'",
]
_LONG_STRINGS = ['"""doc"""', "'''a\nb'''", 'f"""{n}\n"""']
_FLOATS = ["0.5", "1.", ".25", "1e-3", "1e308", "1e309", "4.9e-324", "2.5e-320", "3.14", "0.0"]
_INTS = ["0", "1", "2", "3", "7", "10", "255", "1_000", "2147483648", "9223372036854775808"]


def _number(rng: random.Random, kind: str) -> str:
    roll = rng.random()
    if kind == "DEC_NUMBER":
        if roll < 0.05:
            return "1" + "0" * rng.choice([20, 100, 400, 4400])  # big ints, past int->str limits
        return rng.choice(_INTS)
    if kind == "FLOAT_NUMBER":
        if roll < 0.05:
            return "9" * rng.randint(20, 400) + ".0"
        return rng.choice(_FLOATS)
    return {"HEX_NUMBER": "0xff", "OCT_NUMBER": "0o17", "BIN_NUMBER": "0b101"}[kind]


class GrammarGen:
    """Random derivations of the grammar's `start` rule."""

    def __init__(self, max_depth: int = 24, max_tokens: int = 200) -> None:
        lark = _lark()
        self.max_depth = max_depth
        self.max_tokens = max_tokens
        self.rules: dict[str, list[Rule]] = {}
        for rule in lark.rules:
            self.rules.setdefault(rule.origin.name, []).append(rule)
        self.literals = {t.name: t.pattern.value for t in lark.terminals if t.pattern.type == "str"}
        self.height = self._heights()

    def _heights(self) -> dict[str, int]:
        """For each nonterminal, the least depth of a finished derivation (a fixpoint)."""
        inf = 10**9
        height = {name: inf for name in self.rules}
        changed = True
        while changed:
            changed = False
            for name, rules in self.rules.items():
                for rule in rules:
                    h = 1 + max(
                        (height[s.name] for s in rule.expansion if isinstance(s, NonTerminal)),
                        default=0,
                    )
                    if h < height[name]:
                        height[name] = h
                        changed = True
        return height

    def tokens(self, rng: random.Random, start: str = "start") -> list[str]:
        """A random derivation as a list of terminal names and literal texts."""
        out: list[str] = []
        # An explicit stack (no recursion over the derivation's depth).
        stack: list[tuple[object, int]] = [(NonTerminal(start), 0)]
        while stack:
            sym, depth = stack.pop()
            if isinstance(sym, Terminal):
                out.append(self._terminal(sym.name, rng))
                continue
            assert isinstance(sym, NonTerminal)
            rules = self.rules[sym.name]
            # The deeper the walk, the likelier it heads for the nearest end.
            if (
                depth >= self.max_depth
                or len(out) > self.max_tokens
                or rng.random() < depth / self.max_depth
            ):
                least = min(self._rule_height(r) for r in rules)
                rules = [r for r in rules if self._rule_height(r) == least]
            rule = rng.choice(rules)
            for child in reversed(rule.expansion):
                stack.append((child, depth + 1))
        return out

    def _rule_height(self, rule: Rule) -> int:
        return max(
            (self.height[s.name] for s in rule.expansion if isinstance(s, NonTerminal)), default=0
        )

    def _terminal(self, name: str, rng: random.Random) -> str:
        if name in ("_NEWLINE", "_INDENT", "_DEDENT"):
            return name
        if name in self.literals:
            return self.literals[name]
        if name == "NAME":
            return rng.choice(NAMES)
        if name == "STRING":
            return rng.choice(_STRINGS)
        if name == "LONG_STRING":
            return rng.choice(_LONG_STRINGS)
        if name == "COMMENT":
            return "# c"
        return _number(rng, name)

    def program(self, rng: random.Random, prelude: bool = True, valid: bool = False) -> str:
        """A whole script: the prelude (usually) and random statements; with `valid`,
        only statements Python itself compiles (so more of them get to run)."""
        parts: list[str] = []
        for _ in range(rng.randint(1, 8)):
            for _attempt in range(4 if valid else 1):
                stmt = render(self.tokens(rng, "_stmt"))
                if not valid or _compiles(stmt, "exec"):
                    parts.append(stmt)
                    break
        return (PRELUDE if prelude else "") + "".join(parts)

    def expression(self, rng: random.Random, valid: bool = False) -> str:
        """One random expression (a `test`), on one line; with `valid`, one that
        Python compiles, if one of a few tries does."""
        for _attempt in range(6 if valid else 1):
            expr = render(self.tokens(rng, "test")).strip()
            if not valid or _compiles(expr, "eval"):
                break
        return expr


def _compiles(text: str, mode: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fuzz>", mode, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    return True


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(_grammar_text(), parser="lalr", start=["start", "_stmt", "test"], lexer="basic")


def render(tokens: list[str]) -> str:
    """Text from a token list: spaces between tokens, newlines and indentation from
    the layout tokens (inside brackets the grammar never puts any)."""
    lines: list[str] = []
    current: list[str] = []
    level = line_level = 0

    def end_line() -> None:
        if current:
            lines.append("    " * line_level + " ".join(current))
            current.clear()

    for tok in tokens:
        if tok == "_NEWLINE":
            end_line()
        elif tok == "_INDENT":
            level += 1
        elif tok == "_DEDENT":
            level = max(0, level - 1)
        else:
            if not current:
                line_level = level
            current.append(tok)
    end_line()
    return "".join(line + "\n" for line in lines)


def programs(seed: str, count: int) -> Iterator[str]:
    """`count` grammar programs from `seed` (for a quick look: `python -m tests.fuzz.grammar`)."""
    gen = GrammarGen()
    for i in range(count):
        yield gen.program(random.Random(f"{seed}:{i}"))


if __name__ == "__main__":  # pragma: no cover - a manual look at what it makes
    for text in programs("look", 3):
        print(text)
        print("-" * 40)
