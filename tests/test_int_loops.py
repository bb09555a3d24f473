"""Loop variables of `for i in range(...)` are known ints, so the compiled code
skips the value hooks on them (adcli.lang.compiler, `Translator.int_loop`). These
tests check the hooks still see every watched value wherever a script can make the
loop variable something else."""

from __future__ import annotations

import textwrap

import pytest

from adcli.lang.evaluator import Interpreter
from adcli.lang.host import Host
from adcli.lang.parser import parse
from adcli.lang.source import Source, Span


class Watched:
    """A stand-in for a tensor: the only type the host watches."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __mul__(self, other: object) -> Watched:
        return Watched(self.v * 2)

    __rmul__ = __mul__

    def __mod__(self, other: object) -> Watched:
        return Watched(self.v)

    def __neg__(self) -> Watched:
        return Watched(-self.v)

    def __lt__(self, other: object) -> Watched:
        return Watched(0)

    def __index__(self) -> int:
        return self.v


def hooked(code: str) -> tuple[list[str], list[str]]:
    """Run `code`; (snippets the value hook saw, names the assign hook saw)."""
    source = Source("t.ad", textwrap.dedent(code))
    values: list[str] = []
    names: list[str] = []

    def on_value(value: object, span: Span) -> None:
        values.append(source.snippet(span))

    def on_assign(name: str, value: object, span: Span) -> None:
        names.append(name)

    host = Host(
        globals={"mk": lambda: Watched(3)},
        on_value=on_value,
        on_assign=on_assign,
        value_types=(Watched,),
    )
    Interpreter(host).run(parse(source))
    return values, names


def test_int_loop_variables_are_not_watched_but_other_values_are() -> None:
    values, names = hooked(
        """
        w = mk()
        for i in range(2):
            y = w * (i % 7)
            z = -i + i * 3 < 5
        """
    )
    assert values == ["mk()", "w * (i % 7)", "w * (i % 7)"]
    assert names == ["w", "y", "y"]


@pytest.mark.parametrize(
    "code",
    [
        # the body rebinds the loop variable
        """
        for i in range(1):
            i = mk()
            y = i % 7
        """,
        # a function called from the body rebinds it through `global`
        """
        def f():
            global i
            i = mk()
        for i in range(1):
            f()
            y = i % 7
        """,
        # `range` is the script's own
        """
        def range(n):
            return [mk()]
        for i in range(1):
            y = i % 7
        """,
        # enumerate's index is an int, its item is not
        """
        for k, i in enumerate([mk()]):
            y = i % 7
        """,
        # a nested function reads the name later, when it may be anything
        """
        fs = []
        for i in range(1):
            fs.append(lambda: i % 7)
        i = mk()
        y = fs[0]()
        """,
        # a generator expression runs later, after `i` was rebound
        """
        for i in range(1):
            g = (i % 7 for _ in [0])
        i = mk()
        y = list(g)[0]
        """,
        # a comprehension in the body binds its own `i`
        """
        for i in range(1):
            y = [i % 7 for i in [mk()]][0]
        """,
    ],
    ids=[
        "body",
        "global",
        "shadowed-range",
        "enumerate-item",
        "closure",
        "generator",
        "comprehension",
    ],
)
def test_a_loop_variable_that_can_be_watched_keeps_its_hooks(code: str) -> None:
    values, names = hooked(code)
    assert "i % 7" in values, values
    assert "y" in names, names


def test_enumerate_index_is_an_int() -> None:
    values, names = hooked(
        """
        for k, x in enumerate([mk()]):
            y = k % 7
        """
    )
    assert values == ["mk()"]
    assert names == ["x"]
