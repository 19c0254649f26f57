"""Value matching shared by checks, interference and table queries.

Rules (see docs/scenario-format.md):
- ``{"contains": s}``: case-insensitive substring test on the text of the value;
- ``{"in": [...]}``: any of the listed expectations matches;
- ``{"nonempty": true}``: the value is present and not blank;
- ``{"gte": n}`` / ``{"lte": n}``: numeric comparisons;
- other dicts match key by key, recursively;
- two numbers (or numeric strings) compare as decimals, so "8.40" equals 8.4;
- strings compare trimmed and case-insensitive;
- anything else must be equal with the same type.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

OPERATORS = frozenset({"contains", "in", "nonempty", "gte", "lte"})


def as_decimal(value: Any) -> Decimal | None:
    """The value as a Decimal when it is a number or a numeric string, else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):
            return None
        return Decimal(text)
    return None


def as_text(value: Any) -> str:
    """A readable text form of a cell or argument value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def is_operator_spec(expected: Any) -> bool:
    return isinstance(expected, dict) and bool(expected) and set(expected) <= OPERATORS


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` satisfies ``expected`` under the value-matching rules."""
    if is_operator_spec(expected):
        return all(_operator_holds(op, arg, actual) for op, arg in expected.items())
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        return all(key in actual and matches(sub, actual[key]) for key, sub in expected.items())
    return scalar_equal(expected, actual)


def scalar_equal(expected: Any, actual: Any) -> bool:
    left, right = as_decimal(expected), as_decimal(actual)
    if left is not None and right is not None:
        return left == right
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().casefold() == actual.strip().casefold()
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(matches, expected, actual))
    return type(expected) is type(actual) and expected == actual


def _operator_holds(op: str, arg: Any, actual: Any) -> bool:
    if op == "contains":
        return actual is not None and as_text(arg).casefold() in as_text(actual).casefold()
    if op == "in":
        return isinstance(arg, list) and any(matches(option, actual) for option in arg)
    if op == "nonempty":
        present = actual is not None and (
            bool(actual) if isinstance(actual, (list, dict)) else as_text(actual).strip() != ""
        )
        return present == bool(arg)
    number, bound = as_decimal(actual), as_decimal(arg)
    if number is None or bound is None:
        return False
    return number >= bound if op == "gte" else number <= bound


def contains_text(haystack: str, needle: str) -> bool:
    """Case-insensitive substring test."""
    return needle.casefold() in haystack.casefold()


def contains_word(haystack: str, phrase: str) -> bool:
    """Case-insensitive test that ``phrase`` occurs with word boundaries on both sides."""
    phrase = phrase.strip()
    if not phrase:
        return True
    pattern = r"(?<!\w)" + re.escape(phrase) + r"(?!\w)"
    return re.search(pattern, haystack, flags=re.IGNORECASE) is not None
