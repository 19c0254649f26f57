"""Value matching, shared by the tools' queries, the owner's edits and the assertions (a stand-in
written by the repro project for its tests; not Tholos-Bench's runner).

`{contains: s}` is a case-insensitive substring test, `{in: [...]}` any of, `{nonempty: b}` a
present, non-blank value (or its absence), `{gte: n}` / `{lte: n}` numeric bounds; other objects
match key by key; two numbers (or numeric strings) compare as decimals ("8.40" equals 8.4); two
strings compare trimmed and case-insensitive; anything else must be equal with the same type.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

OPERATORS = frozenset({"contains", "in", "nonempty", "gte", "lte"})


def number(value: Any) -> Decimal | None:
    """A number, or a string that is one, as a Decimal; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*", value):
        return Decimal(value.strip())
    return None


def shown(value: Any) -> str:
    """A cell or argument as text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def has_words(text: str, phrase: str) -> bool:
    """`phrase` occurs in `text` as whole words, case-insensitive."""
    phrase = phrase.strip()
    return not phrase or re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


def matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict) and expected and set(expected) <= OPERATORS:
        return all(operator_holds(op, arg, actual) for op, arg in expected.items())
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    left, right = number(expected), number(actual)
    if left is not None and right is not None:
        return left == right
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().casefold() == actual.strip().casefold()
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(matches, expected, actual))
    return type(expected) is type(actual) and expected == actual


def operator_holds(op: str, arg: Any, actual: Any) -> bool:
    if op == "contains":
        return actual is not None and shown(arg).casefold() in shown(actual).casefold()
    if op == "in":
        return isinstance(arg, list) and any(matches(option, actual) for option in arg)
    if op == "nonempty":
        present = actual is not None and (
            bool(actual) if isinstance(actual, (list, dict)) else shown(actual).strip() != ""
        )
        return present == bool(arg)
    value, bound = number(actual), number(arg)
    if value is None or bound is None:
        return False
    return value >= bound if op == "gte" else value <= bound
