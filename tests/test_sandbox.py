"""Escape attempts: every one must end in a clear script error, never Python internals."""

# ruff: noqa: E501 - tables of source snippets read best one per line

from __future__ import annotations

import io
import textwrap

import pytest

from adcli.lang.errors import AdError, ScriptRuntimeError, ScriptSyntaxError, format_diagnostic
from adcli.lang.evaluator import Interpreter
from adcli.lang.guard import Guards, get_attribute, make_print, set_attribute
from adcli.lang.host import Host, Limits, Namespace
from adcli.lang.parser import parse
from adcli.lang.source import Source


class Tensorish:
    __ad_attrs__ = frozenset({"shape", "double"})
    __ad_settable__ = frozenset({"grad"})

    def __init__(self) -> None:
        self.shape = (2,)
        self.grad = None
        self.hidden = "secret"

    def double(self) -> Tensorish:
        return Tensorish()


def run(code: str, limits: Limits | None = None) -> tuple[str, Interpreter]:
    buf = io.StringIO()
    torch = Namespace("torch", {"tensor": Tensorish})
    host = Host(globals={"print": make_print(buf.write), "torch": torch, "tensor": Tensorish})
    interp = Interpreter(host, limits)
    interp.run(parse(Source("evil.ad", textwrap.dedent(code))))
    return buf.getvalue(), interp


def refused(code: str, limits: Limits | None = None) -> AdError:
    with pytest.raises((ScriptRuntimeError, ScriptSyntaxError)) as info:
        run(code, limits)
    err = info.value
    # Always a located, printable diagnostic, never a bare Python error.
    assert err.span is not None and err.source is not None
    assert format_diagnostic(err).startswith("evil.ad:")
    return err


ESCAPES = [
    # (code, kind, part of the message)
    (
        "x = 1\nx.__class__\n",
        "SandboxError",
        "attribute '__class__' is not available in adcli scripts",
    ),
    ("().__class__.__bases__\n", "SandboxError", "'__class__'"),
    ("[].__class__.__mro__\n", "SandboxError", "'__class__'"),
    ("''.__class__.__subclasses__()\n", "SandboxError", "'__class__'"),
    ("(1).__add__\n", "SandboxError", "'__add__'"),
    (
        "open('f')\n",
        "NameError",
        "name 'open' is not defined ('open' is not available in adcli scripts)",
    ),
    ("__import__('os')\n", "NameError", "'__import__' is not available"),
    ("eval('1')\n", "NameError", "'eval' is not available"),
    ("exec('x = 1')\n", "NameError", "'exec' is not available"),
    ("compile('1', 'f', 'eval')\n", "NameError", "'compile' is not available"),
    # getattr/setattr/hasattr/delattr follow the rules of obj.name (private names refused)
    ("getattr(1, '__class__')\n", "SandboxError", "'__class__'"),
    ("hasattr(print, '__globals__')\n", "SandboxError", "'__globals__'"),
    ("setattr(print, '__doc__', 1)\n", "SandboxError", "'__doc__'"),
    ("delattr(print, '__name__')\n", "SandboxError", "'__name__'"),
    (
        "getattr(print, 'x', 0)\nhasattr(len, 'y')\ngetattr(1, '__class__', 0)\n",
        "SandboxError",
        "'__class__'",
    ),
    ("globals()\n", "NameError", "'globals' is not available"),
    ("vars()\n", "NameError", "'vars' is not available"),
    ("type(1).__subclasses__\n", "SandboxError", "'__subclasses__'"),
    ("input()\n", "NameError", "'input' is not available"),
    ("__builtins__\n", "NameError", "name '__builtins__' is not defined"),
    ("import os\n", "ModuleNotFoundError", "No module named 'os'"),
    ("import sys\n", "ModuleNotFoundError", "No module named 'sys'"),
    ("from os import path\n", "ModuleNotFoundError", "No module named 'os'"),
    ("import torch._C\n", "SandboxError", "importing 'torch._C' is not allowed"),
    ("from torch import __dict__\n", "SandboxError", "importing '__dict__' is not allowed"),
    ("(lambda f=print: f.__self__)()\n", "SandboxError", "'__self__'"),
    ("print.__self__\n", "SandboxError", "'__self__'"),
    ("len.__module__\n", "SandboxError", "'__module__'"),
    ("def f(): pass\nf.__globals__\n", "SandboxError", "'__globals__'"),
    ("def f(): pass\nf.__code__\n", "SandboxError", "'__code__'"),
    ("def f(): pass\nf.__closure__\n", "SandboxError", "'__closure__'"),
    ("def f(): pass\nf.x = 1\n", "SandboxError", "cannot set attribute 'x' of 'function' objects"),
    ("f = lambda: 0\nf.__defaults__\n", "SandboxError", "'__defaults__'"),
    (
        "'{0.__class__}'.format(1)\n",
        "SandboxError",
        "format field '{0.__class__}' is not available",
    ),
    ("'{0[0]}'.format([1])\n", "SandboxError", "format field '{0[0]}' is not available"),
    ("'{x.real}'.format(x=1)\n", "SandboxError", "format field '{x.real}' is not available"),
    ("'{:{0.__class__}}'.format(1)\n", "SandboxError", "not available"),
    ("x = 1\nf'{x.__class__}'\n", "SandboxError", "'__class__'"),
    ("f'{print.__self__}'\n", "SandboxError", "'__self__'"),
    ("str.join\n", "SandboxError", "attribute 'join' of 'type' objects is not available"),
    ("int.from_bytes\n", "SandboxError", "attribute 'from_bytes' of 'type' objects"),
    ("(1).real\n", "SandboxError", "attribute 'real' of 'int' objects is not available"),
    ("'abc'.format_map\n", "AttributeError", "'str' object has no attribute 'format_map'"),
    ("[].__init__\n", "SandboxError", "'__init__'"),
    (
        "g = (x for x in [1])\ng.gi_frame\n",
        "SandboxError",
        "attribute 'gi_frame' of 'generator' objects",
    ),
    (
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__\n",
        "SandboxError",
        "'__traceback__'",
    ),
    (
        "try:\n    1/0\nexcept Exception as e:\n    e.with_traceback\n",
        "SandboxError",
        "'with_traceback'",
    ),
    # an exception's args only when plain data or the script's own objects
    (
        "try:\n    raise ValueError(len)\nexcept Exception as e:\n    e.args\n",
        "SandboxError",
        "'args'",
    ),
    ("raise SystemExit\n", "NameError", "name 'SystemExit' is not defined"),
    ("raise KeyboardInterrupt\n", "NameError", "name 'KeyboardInterrupt' is not defined"),
    ("t = tensor()\nt.hidden\n", "AttributeError", "'Tensorish' object has no attribute 'hidden'"),
    (
        "t = tensor()\nt.shape = 3\n",
        "AttributeError",
        "attribute 'shape' of 'Tensorish' objects is not writable",
    ),
    ("t = tensor()\nt._private\n", "SandboxError", "'_private'"),
    ("t = tensor()\nt.double.__func__\n", "SandboxError", "'__func__'"),
    ("t = tensor()\ndel t.shape\n", "SandboxError", "cannot delete attribute 'shape'"),
    ("t = tensor()\ndelattr(t, 'shape')\n", "SandboxError", "cannot delete attribute 'shape'"),
    ("tensor.__init__\n", "SandboxError", "'__init__'"),
    ("tensor.double\n", "SandboxError", "attribute 'double' of 'type' objects"),
    ("torch.__ad_members__\n", "SandboxError", "'__ad_members__'"),
    ("torch.x = 1\n", "SandboxError", "cannot assign to attribute 'x' of module 'torch'"),
    (
        "with 1:\n    pass\n",
        "TypeError",
        "'int' object does not support the context manager protocol",
    ),
    (
        "with tensor():\n    pass\n",
        "TypeError",
        "'Tensorish' object does not support the context manager protocol",
    ),
    ("class A:\n    pass\nA.__subclasses__()\n", "SandboxError", "'__subclasses__'"),
    ("def g():\n    yield 1\ng().gi_frame\n", "SandboxError", "'gi_frame' of 'generator'"),
    ("async def f(): pass\n", "SyntaxError", "'async' is not supported in adcli scripts"),
]


# Attempts aimed at compiled scripts: generators and frames, format strings,
# class bodies, super(), decorators, exception chains, type() and classes.
GEN = "def g():\n    yield 1\n"
CLASS_ESCAPES = [
    (GEN + "x = g()\nx.gi_frame.f_globals\n", "SandboxError", "'gi_frame'"),
    (GEN + "g().gi_code\n", "SandboxError", "'gi_code'"),
    (GEN + "g().send\n", "SandboxError", "'send' of 'generator'"),
    ("(i for i in [1]).gi_frame.f_back\n", "SandboxError", "'gi_frame'"),
    ("[1].__iter__\n", "SandboxError", "'__iter__'"),
    (GEN + "'{0.gi_frame}'.format(g())\n", "SandboxError", "format field '{0.gi_frame}'"),
    ("def f(): pass\n'{0.__globals__}'.format(f)\n", "SandboxError", "format field"),
    ("'{x}'.format_map({'x': 1})\n", "AttributeError", "no attribute 'format_map'"),
    (GEN + "f'{g().gi_frame}'\n", "SandboxError", "'gi_frame'"),
    (
        "class A:\n    def __init_subclass__(cls):\n        pass\n",
        "SandboxError",
        "defining '__init_subclass__' is not available",
    ),
    ("class A(metaclass=type):\n    pass\n", "SyntaxError", "class keywords"),
    (
        "class A:\n    __class_getitem__ = classmethod(lambda c, k: k)\n",
        "SandboxError",
        "assigning '__class_getitem__' in a class body",
    ),
    (
        "class A:\n    def __set_name__(self, owner, name):\n        pass\n",
        "SandboxError",
        "defining '__set_name__'",
    ),
    (
        "class A:\n    def __getattribute__(self, name):\n        pass\n",
        "SandboxError",
        "defining '__getattribute__'",
    ),
    ("class A:\n    __slots__ = ('x',)\n", "SandboxError", "assigning '__slots__'"),
    (
        "class A:\n    __ad_attrs__ = frozenset()\n",
        "SandboxError",
        "assigning '__ad_attrs__'",
    ),
    ("class A(type(1)):\n    pass\n", "SandboxError", "subclassing 'int' is not available"),
    ("class A(type):\n    pass\n", "TypeError", "bases must be types"),
    ("class A(torch.tensor):\n    pass\n", "SandboxError", "subclassing 'Tensorish'"),
    ("type(type(1))\n", "SandboxError", "type() of a class is not available"),
    ("class A:\n    pass\ntype(A)('B', (), {})\n", "SandboxError", "type() of a class"),
    (
        "class A:\n    def f(self):\n        return super().__thisclass__\nA().f()\n",
        "SandboxError",
        "'__thisclass__'",
    ),
    (
        "class A:\n    def f(self):\n        return super().__self__\nA().f()\n",
        "SandboxError",
        "'__self__'",
    ),
    (
        "class A:\n    def f(self):\n        return super().__getattribute__\nA().f()\n",
        "SandboxError",
        "'__getattribute__'",
    ),
    (
        "class A:\n    def f(self):\n        return super().__init__.__self__\nA().f()\n",
        "SandboxError",
        "'__self__'",
    ),
    (
        "def deco(f):\n    return f.__code__\n@deco\ndef g():\n    pass\n",
        "SandboxError",
        "'__code__'",
    ),
    (
        "def deco(c):\n    return c.__mro__\n@deco\nclass A:\n    pass\n",
        "SandboxError",
        "'__mro__'",
    ),
    (
        "class A:\n    @property\n    def p(self):\n        return 1\nA.p.fget\n",
        "SandboxError",
        "'fget' of 'property'",
    ),
    (
        "class A:\n    @staticmethod\n    def s():\n        pass\nA.__dict__\n",
        "SandboxError",
        "'__dict__'",
    ),
    ("class A:\n    pass\nA().__class__\n", "SandboxError", "'__class__'"),
    ("class A:\n    pass\nA().__dict__\n", "SandboxError", "'__dict__'"),
    ("class A:\n    pass\nA.mro\n", "SandboxError", "attribute 'mro' of 'type'"),
    ("class A:\n    pass\nA.__init__ = print\n", "SandboxError", "'__init__'"),
    (
        "try:\n    1/0\nexcept Exception as e:\n    try:\n        [][0]\n"
        "    except Exception as e2:\n        e2.__context__\n",
        "SandboxError",
        "'__context__'",
    ),
    (
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame\n",
        "SandboxError",
        "'__traceback__'",
    ),
    (
        "class E(Exception):\n    pass\ntry:\n    raise E('x')\nexcept E as e:\n    e.with_traceback\n",
        "SandboxError",
        "'with_traceback'",
    ),
    ("type(1).mro()\n", "SandboxError", "attribute 'mro' of 'type'"),
    ("__build_class__\n", "NameError", "'__build_class__' is not defined"),
    ("class A:\n    def __index__(self):\n        return 10**12\n", "SandboxError", "'__index__'"),
    ("(lambda: 0).__code__\n", "SandboxError", "'__code__'"),
    ("staticmethod(print).__func__\n", "SandboxError", "'__func__'"),
    ("slice(1, 2).__reduce__\n", "SandboxError", "'__reduce__'"),
    ("s = slice(1, 2)\ns.start = 0\n", "SandboxError", "cannot set attribute 'start'"),
]


@pytest.mark.parametrize(
    "code, kind, message", CLASS_ESCAPES, ids=[str(i) for i in range(len(CLASS_ESCAPES))]
)
def test_class_and_generator_escapes_are_refused(code: str, kind: str, message: str) -> None:
    err = refused(code)
    assert (err.kind, message in err.message) == (kind, True), err.message


@pytest.mark.parametrize(
    "code, kind, message", ESCAPES, ids=[e[0].split("\n")[-2][:40] for e in ESCAPES]
)
def test_escape_attempts_are_refused(code: str, kind: str, message: str) -> None:
    err = refused(code)
    assert err.kind == kind
    assert message in err.message


def test_sandbox_errors_cannot_be_caught() -> None:
    err = refused("try:\n    x = (1).__class__\nexcept Exception:\n    print('caught')\n")
    assert err.kind == "SandboxError"
    assert isinstance(err, ScriptRuntimeError) and not err.catchable


def test_attribute_names_are_checked_before_evaluation_of_effects() -> None:
    # The refusal happens even when the object's attribute would be harmless.
    err = refused("x = [1]\ny = x.__len__()\n")
    assert err.kind == "SandboxError"
    assert err.source is not None and err.source.snippet(err.span) == "x.__len__"


# ------------------------------------------------------------------ sizes

SIZE_LIMITS = [
    ("list(range(10**12))\n", "list of 1,000,000,000,000 items is longer than the limit"),
    ("tuple(range(10**12))\n", "longer than the limit"),
    ("sum(range(10**12))\n", "longer than the limit"),
    ("max(range(10**12))\n", "longer than the limit"),
    ("sorted(range(10**12))\n", "longer than the limit"),
    ("all(range(1, 10**12))\n", "longer than the limit"),
    ("print(*range(10**12))\n", "longer than the limit"),
    ("'a' * 10**10\n", "sequence of 10,000,000,000 items is longer than the limit"),
    ("10**10 * 'a'\n", "longer than the limit"),
    ("[0] * 10**9\n", "longer than the limit"),
    ("(0,) * 10**9\n", "longer than the limit"),
    ("s = 'x' * 10**6\ns *= 100\n", "longer than the limit"),
    ("2 ** 10**10\n", "integer result of about 20,000,000,000 bits is larger than the limit"),
    ("x = 10**1000\nx ** 1000\n", "is larger than the limit of 100,000 bits"),
    ("x = 2**99999\ny = x * x\n", "is larger than the limit"),
    ("s = 'ab'\nfor i in range(64):\n    s += s\n", "longer than the limit"),
    ("s = 'ab'\nfor i in range(64):\n    s = s + s\n", "longer than the limit"),
    ("l = [1]\nfor i in range(64):\n    l.extend(l)\n", "longer than the limit"),
    ("(''.join(['x'] * 1000)).replace('x', 'y' * 100000)\n", "longer than the limit"),
    ("('-' * 10**6).join(['a'] * 100)\n", "longer than the limit"),
    ("f'{1:>1000000000}'\n", "format width or precision 1000000000 is larger than the limit"),
    ("format = '{:>999999999}'\nformat.format(1)\n", "larger than the limit"),
    ("'%1000000000d' % 1\n", "larger than the limit"),
    ("'%*d' % (10**9, 1)\n", "'*' widths in % formats are not available"),
    ("x = 'x' * 10**7\nf'{x}{x}'\n", "longer than the limit"),
]


@pytest.mark.parametrize(
    "code, message", SIZE_LIMITS, ids=[s[0].split("\n")[-2][:40] for s in SIZE_LIMITS]
)
def test_size_limits(code: str, message: str) -> None:
    err = refused(code)
    assert err.kind in ("LimitError", "SandboxError")
    assert message in err.message


def test_recursion_and_loops_stop() -> None:
    err = refused("def f():\n    return f()\nf()\n")
    assert err.kind == "LimitError"
    assert "maximum recursion depth of 200 exceeded" in err.message
    err = refused("while True:\n    pass\n", Limits(max_steps=10_000))
    assert err.kind == "LimitError"
    assert "step limit of 10000 exceeded" in err.message
    err = refused(
        "x = [i for i in iter_forever()]\n"
        if False
        else "def f():\n    while True:\n        pass\nf()\n",
        Limits(max_steps=1000),
    )
    assert err.kind == "LimitError"


def test_mutual_recursion_and_lambda_recursion() -> None:
    err = refused("def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(1)\n")
    assert err.kind == "LimitError"
    err = refused("f = lambda: f()\nf()\n")
    assert err.kind == "LimitError"


def test_deeply_nested_data_does_not_crash() -> None:
    code = "a = []\nfor i in range(100000):\n    a = [a]\nprint(a)\n"
    err = refused(code)
    assert err.kind == "LimitError"
    assert "nested too deeply" in err.message


def test_huge_round_is_fast() -> None:
    out, _ = run("print(round(5, -10**9), round(1.5, 10**9))\n")
    assert out == "0 1.5\n"


def test_limits_are_configurable() -> None:
    out, _ = run("print(len('a' * 20))\n", Limits(max_sequence=100))
    assert out == "20\n"
    with pytest.raises(ScriptRuntimeError) as info:
        run("'a' * 200\n", Limits(max_sequence=100))
    assert info.value.kind == "LimitError"


def test_allowed_plain_methods_still_work() -> None:
    out, _ = run(
        """\
        l = [3, 1]
        l.append(2); l.sort(); l.extend((4,)); l.insert(0, 0); l.remove(0)
        d = {'a': 1}
        d.update({'b': 2})
        print(l, l.index(2), l.count(1), d.get('a'), sorted(d.keys()), list(d.values()), list(d.items()))
        print('a,b'.split(','), ' x '.strip(), 'x'.upper(), 'X'.lower(), '-'.join(['a', 'b']))
        print('{} {name} {0}'.format(1, name=2) if False else '{} {name}'.format(1, name=2), 'ab'.replace('a', 'c'))
        print('abc'.startswith('a'), 'abc'.endswith('c'), (1, 2).index(2), 'xyz'.find('z'))
        """
    )
    assert out.splitlines() == [
        "[1, 2, 3, 4] 1 1 1 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]",
        "['a', 'b'] x X x a-b",
        "1 2 cb",
        "True True 1 2",
    ]


def test_slice_is_a_builtin_with_readable_fields() -> None:
    out, _ = run(
        """\
        s = slice(1, None, 2)
        print(s, s.start, s.stop, s.step, s.indices(6), [0, 1, 2, 3][s], isinstance(s, slice))
        """
    )
    assert out == "slice(1, None, 2) 1 None 2 (1, 6, 2) [1, 3] True\n"


def test_format_rejects_mixed_numbering_like_python() -> None:
    err = refused("'{} {0}'.format(1)\n")
    assert err.kind == "ValueError"
    assert (
        err.message == "cannot switch from automatic field numbering to manual field specification"
    )


def test_get_attribute_directly() -> None:
    guards = Guards(Limits())
    assert get_attribute(Tensorish(), "shape", guards) == (2,)
    with pytest.raises(AdError):
        get_attribute(Tensorish(), "__dict__", guards)
    with pytest.raises(AttributeError):
        get_attribute(Tensorish(), "hidden", guards)


class NodeLike:
    """A host class listing single-underscore names, as autograd nodes (`_saved_*`)
    and tensors (`_version`, `_base`) do, and one dunder name, which stays refused."""

    __ad_attrs__ = frozenset({"_saved_self", "name", "__dict__"})

    def __init__(self) -> None:
        self._saved_self = 1
        self._saved_other = 2  # present, but not declared
        self._secret = 3

    def name(self) -> str:
        return "NodeLike"


def _run_with_node(code: str) -> str:
    buf = io.StringIO()
    host = Host(globals={"print": make_print(buf.write), "node": NodeLike()})
    Interpreter(host).run(parse(Source("evil.ad", textwrap.dedent(code))))
    return buf.getvalue()


def test_declared_single_underscore_names_are_the_only_exception() -> None:
    assert _run_with_node("print(node._saved_self)\n") == "1\n"
    for code, kind in [
        ("node._saved_other\n", "SandboxError"),  # not declared by the class
        ("node._secret\n", "SandboxError"),
        ("node.__class__\n", "SandboxError"),
        ("node._saved_self.__class__\n", "SandboxError"),
        ("(1)._saved_self\n", "SandboxError"),  # int declares nothing
        ("del node._saved_self\n", "SandboxError"),
        ("node._saved_self = 5\n", "AttributeError"),  # read-only
        ("node.__dict__\n", "SandboxError"),  # a declared dunder is still a dunder
        ("getattr(node, '__dict__')\n", "SandboxError"),
    ]:
        with pytest.raises((ScriptRuntimeError, ScriptSyntaxError)) as info:
            _run_with_node(code)
        assert info.value.kind == kind, (code, info.value.message)


def test_tensor_version_and_base_are_readable_and_nothing_else() -> None:
    from adcli.autograd import ops

    x = ops.tensor([1.0, 2.0])
    view = x[1:]
    guards = Guards(Limits())
    assert get_attribute(view, "_base", guards) is x
    assert get_attribute(view, "_version", guards) == 0
    for name in ("_vc", "_view_version", "_grad_fn", "__class__", "_make"):
        with pytest.raises((AdError, AttributeError)):
            get_attribute(view, name, guards)
    with pytest.raises(AttributeError, match="of 'torch._C.TensorBase' objects is not writable"):
        set_attribute(view, "_version", 3)


def test_saved_attributes_of_real_nodes_are_readable_and_nothing_else() -> None:
    from adcli.autograd import graph, ops  # noqa: F401 (graph installs the _saved_* names)

    x = ops.tensor([1.0, 2.0], requires_grad=True)
    node = (x * 3).grad_fn
    guards = Guards(Limits())
    assert get_attribute(node, "_saved_other", guards).item() == 3
    for name in ("_saved_nothing", "_label", "_saved", "__dict__", "saved"):
        with pytest.raises((AdError, AttributeError)):
            get_attribute(node, name, guards)
