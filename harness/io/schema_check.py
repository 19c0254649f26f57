"""A small validator for the subset of JSON Schema the harness emits.

Keywords: type (one or a list), const, enum, anyOf, properties, required,
additionalProperties (bool or schema), items, minItems, maxItems, minimum, maximum,
minLength, maxLength. Errors read ``path: reason``. For ``anyOf`` the reported error
comes from the branch that got furthest (its discriminating consts matched deepest).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "an object",
    "array": "an array",
}


@dataclass(frozen=True)
class Issue:
    path: str
    message: str
    depth: int
    allowed: tuple = ()  # for const/enum mismatches: the allowed values

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """All problems of ``value`` against ``schema`` (empty when valid)."""
    return [str(issue) for issue in _issues(value, schema, path, 0)]


def first_error(value: Any, schema: dict[str, Any], path: str = "$") -> str | None:
    errors = schema_errors(value, schema, path)
    return errors[0] if errors else None


def _issues(value: Any, schema: dict[str, Any], path: str, depth: int) -> list[Issue]:
    if "anyOf" in schema:
        return _any_of(value, schema["anyOf"], path, depth)
    if "const" in schema and not _same(value, schema["const"]):
        return [Issue(path, f"must be {json.dumps(schema['const'])}", depth, (schema["const"],))]
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        options = ", ".join(json.dumps(o) for o in schema["enum"])
        return [Issue(path, f"must be one of {options}", depth, tuple(schema["enum"]))]
    if "type" in schema and not _type_ok(value, schema["type"]):
        return [Issue(path, f"must be {_type_words(schema['type'])}", depth)]
    if isinstance(value, dict):
        return _object_issues(value, schema, path, depth)
    if isinstance(value, list):
        return _array_issues(value, schema, path, depth)
    return _scalar_issues(value, schema, path, depth)


def _any_of(value: Any, branches: list[dict[str, Any]], path: str, depth: int) -> list[Issue]:
    results = [_issues(value, branch, path, depth) for branch in branches]
    if any(not issues for issues in results):
        return []
    furthest = max(_discriminated_depth(issues) for issues in results)
    candidates = [issues for issues in results if _discriminated_depth(issues) == furthest]
    consts = [issues[0] for issues in candidates if issues and issues[0].allowed and issues[0].depth == furthest]
    if consts and len(consts) == len(candidates) and len({c.path for c in consts}) == 1:
        allowed = [v for c in consts for v in c.allowed]
        options = ", ".join(json.dumps(v) for v in dict.fromkeys(allowed))
        return [Issue(consts[0].path, f"must be one of {options}", furthest, tuple(allowed))]
    return min(candidates, key=len)


def _discriminated_depth(issues: list[Issue]) -> int:
    """How deep the value got into a branch before a const/enum mismatch (large if none)."""
    mismatches = [i.depth for i in issues if i.allowed]
    return min(mismatches) if mismatches else 1_000


def _object_issues(value: dict, schema: dict[str, Any], path: str, depth: int) -> list[Issue]:
    issues: list[Issue] = []
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            issues.append(Issue(f"{path}.{name}", "is required", depth + 1))
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        item_path = f"{path}.{name}"
        if name in properties:
            issues += _issues(item, properties[name], item_path, depth + 1)
        elif extra is False:
            issues.append(Issue(item_path, "is not allowed here", depth + 1))
        elif isinstance(extra, dict):
            issues += _issues(item, extra, item_path, depth + 1)
    return issues


def _array_issues(value: list, schema: dict[str, Any], path: str, depth: int) -> list[Issue]:
    issues: list[Issue] = []
    if len(value) < schema.get("minItems", 0):
        issues.append(Issue(path, f"needs at least {schema['minItems']} items", depth))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        issues.append(Issue(path, f"allows at most {schema['maxItems']} items", depth))
    if "items" in schema:
        for i, item in enumerate(value):
            issues += _issues(item, schema["items"], f"{path}[{i}]", depth + 1)
    return issues


def _scalar_issues(value: Any, schema: dict[str, Any], path: str, depth: int) -> list[Issue]:
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return [Issue(path, f"needs at least {schema['minLength']} characters", depth)]
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return [Issue(path, f"allows at most {schema['maxLength']} characters", depth)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return [Issue(path, f"must be at least {schema['minimum']}", depth)]
        if "maximum" in schema and value > schema["maximum"]:
            return [Issue(path, f"must be at most {schema['maximum']}", depth)]
    return []


def _type_ok(value: Any, expected: str | list[str]) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    return any(_is_type(value, name) for name in names)


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    kinds = {"string": str, "boolean": bool, "object": dict, "array": list}
    if name == "null":
        return value is None
    return isinstance(value, kinds[name])


def _type_words(expected: str | list[str]) -> str:
    names = expected if isinstance(expected, list) else [expected]
    words = [_TYPE_NAMES.get(n, n) for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _same(value: Any, expected: Any) -> bool:
    return type(value) is type(expected) and value == expected
