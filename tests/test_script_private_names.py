"""Single-underscore names on a script's own objects (micrograd's ``self._prev``) are
allowed; dunders, ``_ad...`` host state and anything private of a host object are not."""

from __future__ import annotations

import pytest

from tests.test_sandbox import refused, run


def test_script_instances_and_classes_keep_private_names() -> None:
    out, _ = run(
        """
        class Value:
            _count = 0
            def __init__(self, data, _children=()):
                self.data = data
                self._prev = set(_children)
                self._backward = lambda: None
                Value._count += 1
            def _label(self):
                return f"v{self.data}"
        a = Value(1.0)
        b = Value(2.0, (a,))
        b._backward()
        print(len(b._prev), b._label(), Value._count)
        del b._backward
        """
    )
    assert out == "1 v2.0 2\n"


@pytest.mark.parametrize(
    "code",
    [
        # host-held state of subclassable bases is kept under the `_ad` prefix
        "class A:\n    pass\na = A()\na._ad_state = 1\n",
        "class A:\n    def __init__(self):\n        self._ad_x = 1\nA()\n",
        # dunders stay closed on instances and classes
        "class A:\n    pass\nprint(A().__dict__)\n",
        "class A:\n    pass\nA().__class__ = int\n",
        "class A:\n    pass\nprint(A.__mro__)\n",
        # private names of host objects stay closed
        "t = torch.tensor()\nprint(t._hidden)\n",
        "print((1)._x)\n",
        # names Python gives an instance are not the script's own
        "class E(Exception):\n    pass\nprint(E()._x)\n",
    ],
)
def test_private_names_of_others_are_refused(code: str) -> None:
    err = refused(code)
    assert err.kind in ("SandboxError", "AttributeError")
    assert "is not available in adcli scripts" in str(err) or "has no attribute" in str(err)
