"""Strict JSON parsing: duplicate keys and NaN/Infinity are errors, not silently accepted.

An integer too long for Python to convert and nesting too deep for its parser are errors of the
same kind (``StrictJSONError``), never a ``ValueError`` or ``RecursionError`` from inside; files
add tighter bounds (``max_int_digits``, ``max_depth``: harness/io/inputs.py).
"""

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


def _int_within(max_digits: int | None) -> Any:
    def parse(text: str) -> int:
        digits = len(text.lstrip("-"))
        if max_digits is not None and digits > max_digits:
            raise StrictJSONError(f"an integer of {digits} digits (at most {max_digits})")
        try:
            return int(text)
        except ValueError:  # beyond Python's own limit on integer conversion
            raise StrictJSONError(f"an integer of {digits} digits is too long") from None

    return parse


def _depth(value: Any) -> int:
    """Nesting of a parsed value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def loads_strict(text: str, *, max_int_digits: int | None = None, max_depth: int | None = None) -> Any:
    """Parse JSON text, rejecting duplicate keys and NaN/Infinity (and, when given, integers of
    more than ``max_int_digits`` digits and nesting deeper than ``max_depth``)."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_int_within(max_int_digits),
        )
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise StrictJSONError("nested too deeply") from None
    if max_depth is not None and _depth(value) > max_depth:
        raise StrictJSONError(f"nested deeper than {max_depth} levels")
    return value


def dumps_compact(value: Any) -> str:
    """Deterministic compact JSON used in prompts and transcripts."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)
