"""A small JSON Schema validator: the subset adcli/render/schema.json uses.

Keywords: type (a name or a list of names), enum, const, properties, required,
additionalProperties (false or a schema), items, minItems, maxItems, minimum,
anyOf and local $ref (`#/$defs/NAME`). Unknown keywords are refused, so the
schema cannot use one this checker would silently skip. Iterative within one
schema branch; each anyOf branch is checked on its own. `jsonschema` is not a dependency of adcli.
"""

from __future__ import annotations

from typing import Any

_ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
_KEYWORDS = {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "anyOf",
    "$ref",
}


def _is_type(v: Any, name: str) -> bool:
    if name == "null":
        return v is None
    if name == "boolean":
        return isinstance(v, bool)
    if name == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if name == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if name == "string":
        return isinstance(v, str)
    if name == "array":
        return isinstance(v, list)
    if name == "object":
        return isinstance(v, dict)
    raise ValueError(f"unknown type {name!r}")


def _same(a: Any, b: Any) -> bool:
    """JSON equality (True is not 1)."""
    return type(a) is type(b) and a == b


def errors(instance: Any, schema: dict[str, Any], *, limit: int = 10) -> list[str]:
    """Where `instance` breaks `schema`, as `path: problem` lines (at most `limit`)."""
    return errors_in(instance, schema, schema, "$")[:limit]


def _check(
    value: Any,
    sch: dict[str, Any],
    path: str,
    sink: list[str],
    stack: list,
    root: dict[str, Any],
) -> None:
    unknown = set(sch) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords {sorted(unknown)}")
    if "$ref" in sch:
        ref = sch["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        stack.append((value, root["$defs"][ref[len("#/$defs/") :]], path, sink))
    if "type" in sch:
        names = sch["type"] if isinstance(sch["type"], list) else [sch["type"]]
        if not any(_is_type(value, n) for n in names):
            sink.append(f"{path}: {type(value).__name__} is not {'/'.join(names)}")
            return
    if "enum" in sch and not any(_same(value, e) for e in sch["enum"]):
        sink.append(f"{path}: {value!r} is not one of {sch['enum']}")
    if "const" in sch and not _same(value, sch["const"]):
        sink.append(f"{path}: {value!r} is not {sch['const']!r}")
    if "minimum" in sch and _is_type(value, "number") and value < sch["minimum"]:
        sink.append(f"{path}: {value} < {sch['minimum']}")
    if isinstance(value, dict):
        props = sch.get("properties", {})
        for key in sch.get("required", []):
            if key not in value:
                sink.append(f"{path}: missing {key!r}")
        extra = sch.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                stack.append((v, props[key], f"{path}.{key}", sink))
            elif extra is False:
                sink.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                stack.append((v, extra, f"{path}.{key}", sink))
    if isinstance(value, list):
        if "minItems" in sch and len(value) < sch["minItems"]:
            sink.append(f"{path}: fewer than {sch['minItems']} items")
        if "maxItems" in sch and len(value) > sch["maxItems"]:
            sink.append(f"{path}: more than {sch['maxItems']} items")
        if "items" in sch:
            for i, v in enumerate(value):
                stack.append((v, sch["items"], f"{path}[{i}]", sink))
    if "anyOf" in sch:
        branch_errors = [errors_in(value, b, root, path) for b in sch["anyOf"]]
        if all(branch_errors):
            sink.append(f"{path}: matches none of anyOf ({branch_errors[0][0]} ...)")


def errors_in(value: Any, sch: dict[str, Any], root: dict[str, Any], path: str) -> list[str]:
    """The errors of `value` against the sub-schema `sch` of `root`."""
    out: list[str] = []
    stack: list = [(value, sch, path, out)]
    while stack:
        v, s, p, sink = stack.pop()
        _check(v, s, p, sink, stack, root)
    return out


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """Raise AssertionError listing the problems when `instance` breaks `schema`."""
    problems = errors(instance, schema)
    if problems:
        raise AssertionError("JSON does not match the schema:\n" + "\n".join(problems))
