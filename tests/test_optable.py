"""The README's operations table is generated from the registry and must not drift."""

from __future__ import annotations

from pathlib import Path

from adcli.scriptlib.optable import replace_section

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_table_matches_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    assert replace_section(text) == text, (
        "README.md's operations table is out of date: run "
        "`python -m adcli.scriptlib.optable --write README.md`"
    )


def test_every_registered_operation_is_listed() -> None:
    from adcli.autograd.node import Function

    text = README.read_text(encoding="utf-8")
    for cls in Function.registry.values():
        assert f"`{cls.grad_fn_name}` | `{cls.__name__}`" in text
