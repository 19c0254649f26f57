"""Strict JSON parsing: duplicate keys and NaN/Infinity are errors, not silently accepted."""

from __future__ import annotations

import json
from typing import Any


class StrictJSONError(ValueError):
    """The text is not strict JSON; the message says why in one line."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise StrictJSONError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise StrictJSONError(f"number {text} is out of range")
    return value


def loads_strict(text: str) -> Any:
    """Parse JSON text, rejecting duplicate keys and NaN/Infinity."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None


def dumps_compact(value: Any) -> str:
    """Deterministic compact JSON used in prompts and transcripts."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)
