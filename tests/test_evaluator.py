"""The evaluator against Python itself, plus hooks, limits and host interplay.

Most tests run one snippet twice: through adcli (with plain Python values)
and through Python's `exec`, and compare everything printed, including the
final error's class name and message.
"""

# ruff: noqa: E501 - tables of source snippets read best one per line

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

from adcli.lang.errors import (
    AdError,
    LimitError,
    ScriptRuntimeError,
    ScriptSyntaxError,
    format_diagnostic,
)
from adcli.lang.evaluator import Function, Interpreter
from adcli.lang.guard import make_print
from adcli.lang.host import Host, Limits, Namespace, namespace_importer
from adcli.lang.parser import parse
from adcli.lang.source import Source, Span


def run_ad(code: str, limits: Limits | None = None, **host_kw: object) -> tuple[str, Interpreter]:
    """Run `code` with adcli; return (printed text + final error line, interpreter)."""
    buf = io.StringIO()
    globals_ = {"print": make_print(buf.write)}
    globals_.update(host_kw.pop("globals", {}))  # type: ignore[arg-type]
    interp = Interpreter(Host(globals=globals_, **host_kw), limits)  # type: ignore[arg-type]
    try:
        interp.run(parse(Source("t.ad", code)))
    except ScriptRuntimeError as err:
        buf.write(f"{err.kind}: {err.message}\n")
    return buf.getvalue(), interp


def run_py(code: str) -> str:
    """Run `code` with Python; return printed text + final error line."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            exec(compile(code, "t.py", "exec"), {})
        except Exception as exc:  # noqa: BLE001 - we compare any error
            print(f"{type(exc).__name__}: {exc}")
    return buf.getvalue()


def same_as_python(code: str) -> None:
    code = textwrap.dedent(code)
    assert run_ad(code)[0] == run_py(code)


SNIPPETS = {
    "arithmetic": """
        print(1 + 2 * 3, (1 + 2) * 3, 7 // 2, -7 // 2, 7 % 3, -7 % 3, 2 ** 10, 2 ** -1)
        print(10 / 4, 1 / 3, 3 * 1.1, 1e20, 1e-7, 0.1 + 0.2, 2 ** 0.5, -2 ** 2, (-2) ** 2)
        print(1_000_000, 0x1F, 0o17, 0b101, 1., .5, 1e3, 1E-3, 10 // 3.0, 5 % 2.5)
        print(True + True, 3 & 5, 3 | 5, 3 ^ 5, ~5, -(-3), +4)
    """,
    "comparisons": """
        x = 5
        print(0 < x < 10, 0 < x < 5, 1 < 2 > 0, x == 5 != 6, x is None, x is not None)
        print(3 in [1, 3], 4 not in [1], 'a' in 'abc', None is None, [] == [], 1 == 1.0)
    """,
    "boolean": """
        print(True and 'yes', [] or 'empty', not [], not 0, 0 or None, 1 and 2 and 3)
        print(1 if 0 else 2 if 0 else 3, 'a' if [1] else 'b')
    """,
    "strings": """
        s = 'Hello World'
        print(s.lower(), s.upper(), s.split(), s.replace('o', '0'), s.startswith('He'))
        print(','.join(['a', 'b']), s.strip('Hd'), '  x '.strip(), s.endswith('d'), s.find('W'))
        print('a' 'b' "c", 'it''s', "q\\"q", 'tab\\tnew\\nline', r'raw\\n', '\\x41\\u00e9')
        print('''triple
        quoted''', len('abc'), 'ab' * 3, 'x' + 'y', 'abc'[1], 'abcdef'[1:4], 'abc'[::-1])
        print("{} and {name} {0!r:>5}".format('a', name='n'), '%.2f|%5d|%s' % (3.14159, 42, 'x'))
    """,
    "fstrings": """
        x = 3.14159
        w = 8
        print(f"{x:.2f}|{x!r}|{'x'!r}|{10:>5}|{1+1=}|{[1, 2]}|{x:{w}.3f}|{{}}|{'{'}")
        print(f'''{x
        :.1f}''', f"{'a' 'b'}", f"{ {'k': 1}['k'] }", f"{x=:.1f}", f"{x = }")
        print(F"{len('abc')}", rf"\\{x:.0f}", f"\\N{BULLET} {x:>{w}.{2}f}")
    """,
    "lists_and_tuples": """
        l = [3, 1, 2]
        l.sort(); l.append(4); l.extend([5, 6]); print(l, l.pop(), l.pop(0), l)
        l.insert(0, 9); l.remove(3); l.reverse()
        print(l, l.index(9), l.count(4), l.copy(), l[-1], l[1:3], l[::2], l[::-1])
        t = (1, 2, 3)
        print(t, t[0], t.index(2), t.count(1), len(t), (1,), (), [] + [1], [[1]] * 2)
        a, b = 1, 2
        a, b = b, a
        g, = [5]
        (c, (d, e)) = 1, (2, 3)
        [f, h] = 'xy'
        print(a, b, g, c, d, e, f, h)
        x = [1, 2, 3]
        x[0] += 5
        x[1] = 7
        del x[2]
        print(x)
    """,
    "dicts": """
        d = {'a': 1, 'b': 2}
        d['c'] = 3
        d.update(e=5)
        print(d, d.get('a'), d.get('z', 0), list(d.keys()), list(d.values()), list(d.items()))
        print(d.pop('a'), d, 'b' in d, len(d), {k: v * 2 for k, v in d.items()}, dict(x=1))
        del d['b']
        print(d, {1: 'one', (1, 2): 'tuple'}, d.setdefault('q', 9), d)
    """,
    "loops": """
        s = 0
        for i in range(10):
            if i == 3:
                continue
            if i == 7:
                break
            s += i
        else:
            print('never')
        print(s)
        n = 0
        while n < 5:
            n += 1
        else:
            print('while else', n)
        for i in []:
            pass
        else:
            print('empty for else')
        for i, (a, b) in enumerate([(1, 2), (3, 4)]):
            print(i, a, b)
        for k in {'x': 1}:
            print(k)
        for ch in 'ab':
            print(ch)
        t = 0
        while True:
            t += 1
            if t > 3:
                break
        print(t)
    """,
    "comprehensions": """
        print([i * i for i in range(5) if i % 2 == 0])
        print([(i, j) for i in range(3) for j in range(i) if j % 2 == 0])
        print([[j for j in range(i)] for i in range(3)])
        print({k: v for k, v in zip('abc', range(3)) if v})
        print(sum(x * x for x in range(4)), any(i > 2 for i in range(5)), all(x for x in []))
        print([x for x in range(3)], [y for y in 'ab' if y != 'a'])
        x = 10
        print([x for x in range(2)], x)
        fs = [lambda: i for i in range(3)]
        print([f() for f in fs])
    """,
    "functions": """
        def f(a, b=2, *args, c=3, **kw):
            return a + b + c + len(args) + len(kw)
        print(f(1), f(1, 2, 3, 4, c=5, d=6), f(*[1, 2]), f(**{'a': 1, 'b': 1}))
        def k(a, b=2, *rest, c, **kw):
            return (a, b, rest, c, kw)
        print(k(*[1, 2, 3], c=4, **{'d': 5}), k(1, c=0))
        def kwonly(a, *, b=1, c):
            return a, b, c
        print(kwonly(1, c=2), kwonly(1, b=5, c=2))
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        print(fact(20))
        def noret():
            pass
        print(noret())
        def early(x):
            if x:
                return 'yes'
            return
        print(early(1), early(0))
        def doc():
            '''A docstring.'''
            return 1
        print(doc())
        sq = lambda x, y=2: x ** y
        print(sq(3), sq(2, 3), (lambda *a, **k: (a, k))(1, 2, z=3), (lambda: 7)())
        def apply(fn, v):
            return fn(v)
        print(apply(abs, -3), apply(lambda v: v + 1, 1), apply(len, 'abc'))
    """,
    "closures_and_scopes": """
        def outer():
            x = 1
            def inner():
                nonlocal x
                x += 1
                return x
            inner(); inner()
            return x
        print(outer())
        def mk():
            v = []
            def add(z):
                v.append(z)
                return len(v)
            return add
        ad = mk()
        ad(1)
        print(ad(2))
        cnt = 0
        def inc():
            global cnt
            cnt += 1
        inc(); inc()
        print(cnt)
        fs = []
        for i in range(3):
            fs.append(lambda i=i: i * 10)
        print([q() for q in fs])
        def counter():
            n = 0
            def step():
                nonlocal n
                n = n + 1
                return n
            return step
        c1 = counter(); c2 = counter()
        print(c1(), c1(), c2())
        y = 'global'
        def shadow():
            y = 'local'
            return y
        print(shadow(), y)
        def deep():
            a = 1
            def mid():
                def inn():
                    return a + 1
                return inn()
            return mid()
        print(deep())
        def defaults(x=[]):
            x.append(1)
            return len(x)
        print(defaults(), defaults())
    """,
    "exceptions": """
        def f():
            try:
                return 1
            finally:
                print('fin')
        print(f())
        def g():
            for i in range(3):
                try:
                    if i == 1:
                        continue
                    if i == 2:
                        break
                finally:
                    print('f', i)
            return i
        print(g())
        def h():
            try:
                raise ValueError('bad')
            except ValueError as e:
                print('got', e)
                try:
                    raise
                except Exception as e2:
                    print('re', e2)
        h()
        try:
            1 / 0
        except ZeroDivisionError as e:
            print('caught', e)
        else:
            print('no')
        finally:
            print('finally')
        try:
            pass
        except Exception:
            print('no')
        else:
            print('else ran')
        try:
            [][1]
        except (KeyError, IndexError) as e:
            print('idx', e)
        try:
            {}['k']
        except LookupError as e:
            print('lookup', e)
        try:
            int('x')
        except ValueError as e:
            print(e)
        try:
            assert 1 == 2, 'nope'
        except AssertionError as e:
            print('assert', e)
        try:
            raise RuntimeError
        except RuntimeError as e:
            print('bare class', repr(str(e)))
        try:
            undefined_name
        except NameError as e:
            print(e)
        try:
            try:
                raise KeyError('inner')
            finally:
                print('inner finally')
        except KeyError as e:
            print('outer', e)
        def swallow():
            try:
                raise ValueError('x')
            finally:
                return 'swallowed'
        print(swallow())
        try:
            raise ValueError('from') from None
        except ValueError as e:
            print(e)
    """,
    "type_errors": """
        def m(a, b): pass
        for call in (lambda: m(1, 2, 3), lambda: m(1), lambda: m(1, z=2), lambda: m(), lambda: m(1, 2, a=3)):
            try:
                call()
            except TypeError as e:
                print(e)
        def k(a, *, c): pass
        try:
            k(1)
        except TypeError as e:
            print(e)
        def d(a, b=1): pass
        try:
            d(1, 2, 3)
        except TypeError as e:
            print(e)
        def many(a, b, c): pass
        try:
            many()
        except TypeError as e:
            print(e)
        try:
            1 + 'a'
        except TypeError as e:
            print(e)
    """,
    "unbound_local": """
        def u():
            print(y)
            y = 1
        u()
    """,
    "builtins": """
        print(sorted([3, 1, 2], key=lambda v: -v), sorted('cba'), sorted([1, 2], reverse=True))
        print(list(enumerate('ab')), list(enumerate('ab', 1)), list(reversed([1, 2])), list(zip([1, 2], 'ab')))
        print(round(2.567, 2), round(2.5), round(3.5), round(-0.5), round(1234, -2), abs(-3), abs(-2.5))
        print(int('5') + float('1.5'), int(3.9), int('-2'), float(2), str(1.0), bool(''), bool('x'))
        print(tuple([1]), dict(a=1), dict([(1, 2)]), list('ab'), list(), tuple(), dict())
        print(min([3, 1, 2]), max(1, 5, 3), min('bca'), max([], default=0), min(1, 2, key=lambda v: -v))
        print(sum([1, 2, 3]), sum([0.5, 0.25], 1), sum([[1], [2]], []), len(range(5)), list(range(10, 0, -3)))
        print(any([0, 1]), all([1, 0]), any([]), all([]), repr('a'), repr([1, 'b']))
        print(float('inf'), float('-inf'), float('nan') != float('nan'), -float('inf') < 0)
        print(1, 2, sep='-', end='!\\n')
        print()
        print(range(3), range(1, 5, 2))
    """,
    "with_unpack_errors": """
        try:
            a, b = [1, 2, 3]
        except ValueError as e:
            print(e)
        try:
            a, b, c = [1]
        except ValueError as e:
            print(e)
        try:
            a, b = 5
        except TypeError as e:
            print(e)
    """,
    "del_and_names": """
        x = 1
        del x
        try:
            print(x)
        except NameError as e:
            print(e)
        def loc():
            z = 1
            del z
            return 'ok'
        print(loc())
        x = y = z = 0
        print(x, y, z)
        a = b = [1]
        a.append(2)
        print(b)
    """,
    "statements_on_one_line": """
        x = 1; y = 2; print(x + y)
        if x: print('one line if')
        for i in range(2): print(i)
        while x < 3: x += 1
        print(x)
        def one(): return 'one'
        print(one())
    """,
    "augmented": """
        x = 10
        x += 1; x -= 2; x *= 3; x /= 2; print(x)
        y = 17
        y //= 3; print(y); y %= 4; print(y); y **= 3; print(y)
        z = 6
        z &= 3; z |= 8; z ^= 1; print(z)
        s = 'a'
        s += 'b'; s *= 2; print(s)
        l = [1]
        alias = l
        l += [2]
        print(alias, l is alias)
        t = (1,)
        t2 = t
        t += (2,)
        print(t, t2)
        d = {'k': 1}
        d['k'] += 1
        print(d)
    """,
    "error_at_end": """
        print('before')
        x = 1 / 0
        print('after')
    """,
    "key_error": """
        d = {}
        print(d['missing'])
    """,
    "index_error": """
        print([1, 2][5])
    """,
    "attribute_error": """
        x = 5
        x.foo
    """,
    "not_callable": """
        x = 1
        x()
    """,
    "raise_custom": """
        raise ValueError('custom message')
    """,
    "assert_plain": """
        assert 1 == 1
        assert [], 'empty list'
    """,
    "name_error_in_function": """
        def f():
            return missing
        f()
    """,
    "raise_non_exception": """
        try:
            raise 5
        except TypeError as e:
            print(e)
    """,
    "generators": """
        g = (i * 2 for i in range(3))
        print(list(g), list(g))
        print(sum(x for x in range(10) if x % 3 == 0), max(len(w) for w in ['a', 'abc']))
        print(list(a + b for a in 'xy' for b in '12'))
    """,
    "nested_data": """
        m = [[1, 2], [3, 4]]
        print(m[1][0], [row[1] for row in m], m[0][::-1])
        m[0][1] = 9
        print(m, len(m), [sum(r) for r in m])
        cfg = {'a': {'b': [1, {'c': 2}]}}
        print(cfg['a']['b'][1]['c'])
    """,
    "global_loop_var": """
        for i in range(3):
            pass
        print(i)
        def uses():
            return i * 2
        print(uses())
    """,
    "is_and_identity": """
        a = [1]
        b = a
        c = [1]
        print(a is b, a is c, a == c, a is not c, None is None)
    """,
    "slices": """
        x = list(range(10))
        print(x[2:5], x[:3], x[7:], x[::3], x[-3:], x[1:-1:2], x[:], x[5:2:-1])
        x[1:3] = [9, 9]
        print(x)
        s = 'abcdef'
        print(s[:2], s[-2:], s[::2], s[10:])
    """,
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_same_as_python(name: str) -> None:
    same_as_python(SNIPPETS[name])


# ------------------------------------------------------------ errors


def run_error(code: str, limits: Limits | None = None, **kw: object) -> ScriptRuntimeError:
    globals_ = {"print": make_print(lambda s: None)}
    globals_.update(kw.pop("globals", {}))  # type: ignore[arg-type]
    interp = Interpreter(Host(globals=globals_, **kw), limits)  # type: ignore[arg-type]
    with pytest.raises(ScriptRuntimeError) as info:
        interp.run(parse(Source("t.ad", textwrap.dedent(code))))
    return info.value


def test_runtime_error_span_and_traceback() -> None:
    err = run_error(
        """\
        def f(a, b):
            return a / b
        def g(x):
            return f(x, 0)
        print(g(1))
        """
    )
    assert err.kind == "ZeroDivisionError"
    assert err.message == "division by zero"
    assert err.source.snippet(err.span) == "a / b"
    assert [(e.name, e.span.line) for e in err.traceback] == [("<module>", 5), ("g", 4), ("f", 2)]
    assert isinstance(err.original, ZeroDivisionError)
    text = format_diagnostic(err)
    assert text.splitlines()[:3] == [
        "t.ad:2:12: error: ZeroDivisionError: division by zero",
        "  2 |     return a / b",
        "    |            ^~~~~",
    ]
    assert "traceback (most recent call last):" in text
    assert "t.ad:4:12 in g: return f(x, 0)" in text


def test_innermost_expression_span() -> None:
    err = run_error("x = [1, 2]\ny = 3 + x[7] * 2\n")
    assert err.kind == "IndexError"
    assert err.source.snippet(err.span) == "x[7]"
    assert err.span.line == 2


def test_name_error_suggestion() -> None:
    err = run_error("value = 1\nprint(valeu)\n")
    assert err.kind == "NameError"
    assert err.message == "name 'valeu' is not defined. Did you mean: 'value'?"


def test_keyword_only_missing() -> None:
    err = run_error("def f(*, k): pass\nf()\n")
    assert err.message == "f() missing 1 required keyword-only argument: 'k'"


def test_qualname_in_messages() -> None:
    err = run_error("def outer():\n    def inner(a): pass\n    inner()\nouter()\n")
    assert err.message == "outer.<locals>.inner() missing 1 required positional argument: 'a'"


def test_nonlocal_without_binding_is_syntax_error() -> None:
    interp = Interpreter()
    with pytest.raises(ScriptSyntaxError, match="no binding for nonlocal 'q' found"):
        interp.run(parse(Source("t.ad", "def f():\n    nonlocal q\n")))


def test_traceback_is_shortened_in_diagnostic() -> None:
    err = run_error("def f(n):\n    return f(n + 1)\nf(0)\n")
    assert err.kind == "LimitError"
    assert err.message == "maximum recursion depth of 200 exceeded (raise it with --max-depth)"
    assert not err.catchable
    text = format_diagnostic(err)
    assert "more calls" in text
    assert len(text.splitlines()) < 20


# ------------------------------------------------------------ limits


def test_step_limit() -> None:
    err = run_error("while True:\n    pass\n", Limits(max_steps=1000))
    assert err.kind == "LimitError"
    assert err.message == "step limit of 1000 exceeded (raise it with --max-steps)"
    assert err.span.line in (1, 2)


def test_step_limit_not_catchable() -> None:
    code = "try:\n    while True:\n        pass\nexcept Exception:\n    print('caught')\n"
    out, _ = run_ad(code, Limits(max_steps=500))
    assert out == "LimitError: step limit of 500 exceeded (raise it with --max-steps)\n"


def test_step_limit_counts_comprehensions() -> None:
    err = run_error("x = [i for i in range(10**6)]\n", Limits(max_steps=1000))
    assert err.kind == "LimitError"


def test_depth_limit_configurable() -> None:
    code = "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(150))\n"
    out, _ = run_ad(code)
    assert out == "150\n"
    err = run_error(code, Limits(max_depth=100))
    assert "maximum recursion depth of 100 exceeded" in err.message


def test_deep_recursion_with_raised_limit() -> None:
    code = "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(3000))\n"
    out, _ = run_ad(code, Limits(max_depth=5000))
    assert out == "3000\n"


def test_interrupt_from_hook() -> None:
    interp: Interpreter

    def on_statement(span: Span) -> None:
        if interp.steps > 50:
            interp.interrupt()

    interp = Interpreter(Host(on_statement=on_statement))
    with pytest.raises(ScriptRuntimeError) as info:
        interp.run(parse(Source("t.ad", "x = 0\nwhile True:\n    x += 1\n")))
    assert info.value.kind == "KeyboardInterrupt"
    assert not info.value.catchable
    # the next run starts afresh
    interp.run(parse(Source("t.ad", "y = 1\n")))
    assert interp.globals["y"] == 1


# ------------------------------------------------------- big and deep


def test_hundred_thousand_term_sum() -> None:
    # over many lines: one line may hold 100,000 characters (adcli.lang.limits)
    code = "x = (" + " +\n".join(["1"] * 100_000) + ")\nprint(x)\n"
    out, _ = run_ad(code)
    assert out == "100000\n"


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("(" * 1000 + "1" + ")" * 1000, 1),
        ("(1 + " * 1000 + "1" + ")" * 1000, 1001),
        ("-" * 1000 + "1", 1),
        ("[" * 1000 + "1" + "]" * 1000 + "[0]" * 1000, 1),
        ("f(" * 1000 + "1" + ")" * 1000, 1),
        ("1" + " ** 1" * 1000, 1),
        ("x" + ".copy()" * 5000 + "[0]", 7),
    ],
    ids=["parens", "right_nested_sum", "unary", "lists", "calls", "power", "method_chain"],
)
def test_deep_expressions(expr: str, expected: int) -> None:
    code = f"def f(a):\n    return a\nx = [7]\nprint({expr})\n"
    out, _ = run_ad(code)
    assert out == f"{expected}\n"


def test_too_deep_is_a_limit_error_not_recursion_error() -> None:
    code = "x = " + "(1 + " * 5000 + "1" + ")" * 5000 + "\n"
    with pytest.raises(ScriptSyntaxError) as info:
        parse(Source("t.ad", code))
    assert info.value.kind == "LimitError"
    assert "nested" in info.value.message


def test_long_elif_chain_and_many_statements() -> None:
    branches = "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 2000))
    code = "x = 1999\nif x == 0:\n    y = 0\n" + branches + "print(y)\n" + "z = 1\n" * 5000
    out, _ = run_ad(code)
    assert out == "1999\n"


# ------------------------------------------------------------- hooks


def test_hooks_see_assignments_values_and_statements() -> None:
    assigned: list[tuple[str, object, int]] = []
    values: list[tuple[object, str]] = []
    statements: list[int] = []
    source = Source("t.ad", "a = 2\nb = a * 3 + 1\nfor i in range(2):\n    a += i\nc = [a][0]\n")

    def on_value(value: object, span: Span) -> None:
        values.append((value, source.snippet(span)))

    interp = Interpreter(
        Host(
            on_assign=lambda n, v, s: assigned.append((n, v, s.line)),
            on_value=on_value,
            on_statement=lambda s: statements.append(s.line),
        )
    )
    interp.run(parse(source))
    assert assigned == [
        ("a", 2, 1),
        ("b", 7, 2),
        ("i", 0, 3),
        ("a", 2, 4),
        ("i", 1, 3),
        ("a", 3, 4),
        ("c", 3, 5),
    ]
    assert (6, "a * 3") in values
    assert (7, "a * 3 + 1") in values
    assert (range(0, 2), "range(2)") in values
    assert (3, "[a][0]") in values
    assert statements == [1, 2, 3, 4, 4, 5]


def test_current_span_during_host_call_and_after_script_call() -> None:
    seen: list[tuple[int, str]] = []
    interp: Interpreter

    def probe() -> int:
        span = interp.current_span
        assert span is not None and interp.current_source is not None
        seen.append((span.line, interp.current_source.path))
        return 0

    interp = Interpreter(Host(globals={"probe": probe}))
    code = "def f():\n    return probe()\nx = f() + probe()\n"
    interp.run(parse(Source("t.ad", code)))
    assert seen == [(2, "t.ad"), (3, "t.ad")]


def test_interactive_display() -> None:
    shown: list[object] = []
    interp = Interpreter(Host(on_display=shown.append))
    interp.run(
        parse(Source("<repl>", "1 + 1\nNone\nx = 5\nx\ndef f():\n    7\nf()\n")), interactive=True
    )
    assert shown == [2, 5]
    interp.run(parse(Source("<repl>", "x * 2\n")), interactive=True)
    assert shown == [2, 5, 10]


def test_repl_style_sessions_keep_globals_and_sources() -> None:
    interp = Interpreter()
    interp.run(parse(Source("<in1>", "def f(v):\n    return 1 / v\n")))
    with pytest.raises(ScriptRuntimeError) as info:
        interp.run(parse(Source("<in2>", "f(0)\n")))
    err = info.value
    assert err.source.path == "<in1>"
    assert [e.source.path for e in err.traceback] == ["<in2>", "<in1>"]


# -------------------------------------------------- host objects


class FakeTensor:
    """A tiny host class: declares what scripts may touch."""

    __ad_attrs__ = frozenset({"value", "grad", "double", "item", "requires_grad", "ops"})
    __ad_settable__ = frozenset({"grad", "requires_grad"})

    def __init__(self, value: float) -> None:
        self.value = value
        self.grad = None
        self.requires_grad = False
        self.secret = "hidden"
        self.ops: list[str] = []

    def double(self) -> FakeTensor:
        return FakeTensor(self.value * 2)

    def item(self) -> float:
        return self.value

    def __add__(self, other: object) -> FakeTensor:
        o = other.value if isinstance(other, FakeTensor) else other
        return FakeTensor(self.value + o)  # type: ignore[operator]

    __radd__ = __add__

    def __iadd__(self, other: object) -> FakeTensor:
        self.ops.append("iadd")
        self.value += other.value if isinstance(other, FakeTensor) else other  # type: ignore[operator]
        return self

    def __matmul__(self, other: FakeTensor) -> FakeTensor:
        return FakeTensor(self.value * other.value)

    def __getitem__(self, i: object) -> FakeTensor:
        return FakeTensor(self.value)

    def __setitem__(self, i: object, v: object) -> None:
        self.ops.append(f"set {i!r}")

    def __lt__(self, other: object) -> bool:
        return self.value < other  # type: ignore[operator]

    def __bool__(self) -> bool:
        if self.value == 99:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.value)

    def __format__(self, spec: str) -> str:
        return f"T({format(self.value, spec)})"

    def __repr__(self) -> str:
        return f"tensor({self.value})"


class NoGrad:
    __ad_context__ = True
    __ad_attrs__ = frozenset()
    depth = 0
    log: list[str] = []

    def __enter__(self) -> None:
        NoGrad.log.append("enter")

    def __exit__(self, *exc: object) -> bool:
        NoGrad.log.append(f"exit {exc[0].__name__ if exc[0] else None}")
        return False


def backward_error() -> None:
    raise RuntimeError("grad can be implicitly created only for scalar outputs")


def host_globals() -> dict[str, object]:
    torch = Namespace("torch", {"tensor": FakeTensor, "no_grad": NoGrad, "pi": 3.14})
    return {
        "tensor": FakeTensor,
        "torch": torch,
        "no_grad": NoGrad,
        "backward": backward_error,
        "limit": lambda: (_ for _ in ()).throw(LimitError("tensor too large")),
    }


def test_host_objects_operators_and_attributes() -> None:
    code = """\
        t = tensor(2.0)
        u = t + 1
        u += 3
        print(u, u.value, u.double().item(), t @ tensor(5.0), t[0], f"{t:.1f}", 1 + t)
        t.grad = 5
        t[1] = 2
        t[0] += 1
        print(t.grad, t.ops, t < 3, bool(t))
        print(torch.tensor(1.0), torch.pi)
    """
    out, interp = run_ad(textwrap.dedent(code), globals=host_globals())
    assert out.splitlines() == [
        "tensor(6.0) 6.0 12.0 tensor(10.0) tensor(2.0) T(2.0) tensor(3.0)",
        "5 ['set 1', 'set 0'] True True",
        "tensor(1.0) 3.14",
    ]
    assert interp.globals["u"].ops == ["iadd"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "code, kind, message",
    [
        (
            "t = tensor(1.0)\nt.secret\n",
            "AttributeError",
            "'FakeTensor' object has no attribute 'secret'",
        ),
        (
            "t = tensor(1.0)\nt.value = 3\n",
            "AttributeError",
            "attribute 'value' of 'FakeTensor' objects is not writable",
        ),
        (
            "t = tensor(99)\nif t:\n    pass\n",
            "RuntimeError",
            "Boolean value of Tensor with more than one value is ambiguous",
        ),
        ("backward()\n", "RuntimeError", "grad can be implicitly created only for scalar outputs"),
        ("torch.nothing\n", "AttributeError", "module 'torch' has no attribute 'nothing'"),
        (
            "torch.pi = 3\n",
            "SandboxError",
            "cannot assign to attribute 'pi' of module 'torch' in adcli scripts",
        ),
        ("limit()\n", "LimitError", "tensor too large"),
    ],
)
def test_host_errors(code: str, kind: str, message: str) -> None:
    err = run_error(code, globals=host_globals())
    assert (err.kind, err.message) == (kind, message)


def test_host_runtime_error_is_catchable_by_class() -> None:
    code = "try:\n    backward()\nexcept RuntimeError as e:\n    print('caught:', e)\n"
    out, _ = run_ad(code, globals=host_globals())
    assert out == "caught: grad can be implicitly created only for scalar outputs\n"


def test_host_ad_error_matches_by_kind() -> None:
    def fail() -> None:
        raise AdError("bad shapes", kind="RuntimeError")

    code = "try:\n    fail()\nexcept RuntimeError as e:\n    print('caught', e)\n"
    out, _ = run_ad(code, globals={"fail": fail})
    assert out == "caught bad shapes\n"


def test_with_statement_calls_enter_and_exit() -> None:
    NoGrad.log.clear()
    code = "with no_grad():\n    x = 1\nwith torch.no_grad() as g, no_grad():\n    print(g)\ntry:\n    with no_grad():\n        1 / 0\nexcept ZeroDivisionError:\n    print('z')\n"
    out, _ = run_ad(code, globals=host_globals())
    assert out == "None\nz\n"
    assert NoGrad.log == [
        "enter",
        "exit None",
        "enter",
        "enter",
        "exit None",
        "exit None",
        "enter",
        "exit ZeroDivisionError",
    ]


def test_with_exit_runs_on_limit_errors() -> None:
    NoGrad.log.clear()
    err = run_error(
        "with no_grad():\n    while True:\n        pass\n",
        Limits(max_steps=100),
        globals=host_globals(),
    )
    assert err.kind == "LimitError"
    assert NoGrad.log == ["enter", "exit ScriptRuntimeError"]


def test_script_function_called_by_host() -> None:
    calls: list[object] = []

    def register(fn: object) -> object:
        calls.append(fn)
        return fn(10)  # type: ignore[operator]

    out, _ = run_ad(
        "def hook(g):\n    return g * 2\nprint(register(hook))\nprint(sorted([3, 1], key=lambda v: -v))\n",
        globals={"register": register},
    )
    assert out == "20\n[3, 1]\n"
    assert isinstance(calls[0], Function)
    assert calls[0].ad_name == "hook"


def test_error_inside_callback_reports_both_frames() -> None:
    def register(fn: object) -> object:
        return fn(0)  # type: ignore[operator]

    err = run_error(
        "def hook(g):\n    return 1 / g\nregister(hook)\n", globals={"register": register}
    )
    assert err.kind == "ZeroDivisionError"
    assert [(e.name, e.span.line) for e in err.traceback] == [("<module>", 3), ("hook", 2)]


# -------------------------------------------------------------- imports


def test_imports_through_host() -> None:
    functional = Namespace("torch.nn.functional", {"relu": abs})
    nn = Namespace("torch.nn", {"functional": functional})
    torch = Namespace("torch", {"nn": nn, "tensor": FakeTensor})
    modules = {
        "torch": torch,
        "torch.nn": nn,
        "torch.nn.functional": functional,
        "math": Namespace("math", {"pi": 3.0}),
    }
    code = """\
        import torch
        import torch as t
        import torch.nn.functional as F
        import torch.nn
        from torch import tensor, nn as n2
        from torch.nn import functional
        import math
        print(torch, t is torch, F.relu(-2), tensor(1.0), n2, functional, math.pi)
        from math import *
        print(pi)
    """
    out, _ = run_ad(textwrap.dedent(code), import_module=namespace_importer(modules))
    assert out.splitlines() == [
        "<module 'torch'> True 2 tensor(1.0) <module 'torch.nn'> <module 'torch.nn.functional'> 3.0",
        "3.0",
    ]


@pytest.mark.parametrize(
    "code, kind, message",
    [
        ("import os\n", "ModuleNotFoundError", "No module named 'os'"),
        ("from torch import nothing\n", "ImportError", "cannot import name 'nothing' from 'torch'"),
        (
            "from torch import _C\n",
            "SandboxError",
            "importing '_C' is not allowed in adcli scripts",
        ),
        (
            "import torch._C\n",
            "SandboxError",
            "importing 'torch._C' is not allowed in adcli scripts",
        ),
    ],
)
def test_import_errors(code: str, kind: str, message: str) -> None:
    modules = {"torch": Namespace("torch", {"tensor": FakeTensor})}
    err = run_error(code, import_module=namespace_importer(modules))
    assert (err.kind, err.message) == (kind, message)


def test_default_import_uses_namespace_globals() -> None:
    nn = Namespace("torch.nn", {"x": 1})
    out, _ = run_ad(
        "import torch.nn as nn\nimport torch\nprint(nn.x, torch.nn.x)\n",
        globals={"torch": Namespace("torch", {"nn": nn})},
    )
    assert out == "1 1\n"


# ----------------------------------------------------------- the rest


def test_globals_and_variables() -> None:
    _, interp = run_ad("a = 1\ndef f(): pass\n")
    assert set(interp.variables()) == {"a", "f"}
    assert interp.globals["a"] == 1


def test_debug_keeps_cause() -> None:
    interp = Interpreter(debug=True)
    with pytest.raises(ScriptRuntimeError) as info:
        interp.run(parse(Source("t.ad", "1 / 0\n")))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_function_repr_and_print_of_builtins() -> None:
    out, _ = run_ad("def f(): pass\nprint(f)\nprint(lambda: 0)\n")
    lines = out.splitlines()
    assert lines[0].startswith("<function f at 0x")
    assert lines[1].startswith("<function <lambda> at 0x")


def test_compile_without_running() -> None:
    interp = Interpreter()
    runner = interp.compile(parse(Source("t.ad", "x = 1\n")))
    assert "x" not in interp.globals
    runner()
    assert interp.globals["x"] == 1


def test_keyboard_interrupt_leaves_with_blocks_and_becomes_script_error() -> None:
    NoGrad.log.clear()

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    globals_ = host_globals()
    globals_["ctrl_c"] = ctrl_c
    err = run_error("with no_grad():\n    ctrl_c()\n", globals=globals_)
    assert err.kind == "KeyboardInterrupt"
    assert err.message == "interrupted"
    assert err.span.line == 2
    assert NoGrad.log == ["enter", "exit KeyboardInterrupt"]


def test_host_reads_function_name() -> None:
    _, interp = run_ad("def bad(g):\n    return g\nanon = lambda: 0\n")
    assert interp.globals["bad"].__name__ == "bad"  # type: ignore[attr-defined]
    assert interp.globals["anon"].__name__ == "<lambda>"  # type: ignore[attr-defined]
    assert type(interp.globals["bad"]).__name__ == "function"


def test_decorators_apply_bottom_up_like_python() -> None:
    code = (
        "log = []\n"
        "def tag(name):\n"
        "    log.append('made ' + name)\n"
        "    def deco(f):\n"
        "        log.append('applied ' + name)\n"
        "        return lambda x: name + '(' + f(x) + ')'\n"
        "    return deco\n"
        "@tag('outer')\n"
        "@tag('inner')\n"
        "def f(x):\n"
        "    return x\n"
        "print(f('a'), log)\n"
        "@undefined_decorator\n"
        "def g():\n"
        "    pass\n"
    )
    assert run_ad(code)[0] == run_py(code)


# ------------------------------------------------------- classes, generators


CLASS_PROGRAM = """
class Shape:
    count = 0

    def __init__(self, name):
        self.name = name
        Shape.count += 1

    def describe(self):
        return f"{self.name}: {self.area:.2f}"

    def __repr__(self):
        return "Shape(" + repr(self.name) + ")"


class Circle(Shape):
    def __init__(self, r):
        super().__init__("circle")
        self.r = r

    @property
    def area(self):
        return 3.14159 * self.r ** 2

    @staticmethod
    def unit():
        return Circle(1)

    @classmethod
    def kind(cls):
        return cls.__name__

    def __call__(self, k):
        return self.r * k


def squares(n):
    for i in range(n):
        yield i * i


c = Circle(2)
print(c.describe(), c, Circle.unit().area, Circle.kind(), c(3), Shape.count)
print(isinstance(c, Shape), issubclass(Circle, Shape), type(c).__name__, type(1.5).__name__)
print(list(squares(4)), sum(squares(5)), {1, 2, 2}, {x % 3 for x in range(9)})
first, *rest = [1, 2, 3]
x: int = 3
print(first, rest, x)
try:
    c.radius
except AttributeError as e:
    print(type(e).__name__, e)
try:
    Circle()
except TypeError as e:
    print(type(e).__name__, e)


class NegativeError(ValueError):
    pass


try:
    raise NegativeError("below zero")
except ValueError as e:
    print(type(e).__name__, e)
"""


def test_classes_generators_and_errors_print_what_python_prints() -> None:
    same_as_python(CLASS_PROGRAM)


def test_generator_counts_steps() -> None:
    err = run_error(
        "def g():\n    while True:\n        yield 1\nfor x in g():\n    pass\n",
        Limits(max_steps=100),
    )
    assert err.kind == "LimitError"


@pytest.mark.parametrize(
    "code, snippet",
    [
        ("for x in 5:\n    pass\n", "5"),
        ("x = [i for i in 5]\n", "5"),
        ("1 < 2 < 'a'\n", "2 < 'a'"),
        ("assert 1 == 2\n", "assert 1 == 2"),
        ("def f(a):\n    return a\nf(*5)\n", "*5"),
        ("def f(a):\n    return a\nf(**[1])\n", "**[1]"),
        ("x = 1\ndel y\n", "del y"),
        ("x = {1: 2}\nfor k in x:\n    x[k + 1] = 1\n", "x"),
        ("class A:\n    def f(self):\n        return 1 / 0\nA().f()\n", "1 / 0"),
    ],
)
def test_compiled_code_errors_point_at_the_script(code: str, snippet: str) -> None:
    err = run_error(code)
    assert err.source is not None and err.source.snippet(err.span) == snippet


class _Box:
    """A host class scripts may read `a` on."""

    __ad_attrs__ = frozenset({"a"})
    a = 1


def test_names_the_host_lacks_are_worded_from_its_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language knows no library: a name the host lacks is 'not supported' only
    when the host's `Library` lists it, with its advice; else Python's message."""
    from adcli.lang import host

    monkeypatch.setattr(host, "library", host.Library)  # a host that names no library
    lib = Namespace("lib", {"f": 1})
    code = "print(x.a)\nx.{}\n"
    globals_ = {"lib": lib, "x": _Box()}
    plain = [run_ad(code.format(n), globals=globals_)[0] for n in ("b", "c")]
    assert plain == [
        "1\nAttributeError: '_Box' object has no attribute 'b'\n",
        "1\nAttributeError: '_Box' object has no attribute 'c'\n",
    ]
    assert (
        run_ad("lib.g\n", globals=globals_)[0]
        == "AttributeError: module 'lib' has no attribute 'g'\n"
    )
    monkeypatch.setattr(
        host,
        "library",
        lambda: host.Library(
            {"lib": frozenset({"g", "h"})}, {_Box: frozenset({"b"})}, {"lib.g": "use lib.f"}
        ),
    )
    assert (
        run_ad(code.format("b"), globals=globals_)[0]
        == "1\nAttributeError: adcli does not support _Box.b yet\n"
    )
    assert (
        run_ad(code.format("c"), globals=globals_)[0]
        == "1\nAttributeError: '_Box' object has no attribute 'c'\n"
    )
    assert (
        run_ad("lib.g\n", globals=globals_)[0]
        == "AttributeError: adcli does not support lib.g: use lib.f\n"
    )
    assert (
        run_ad("lib.h\n", globals=globals_)[0]
        == "AttributeError: adcli does not support lib.h yet\n"
    )
