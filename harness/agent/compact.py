"""Bound the size of tool results before they reach the model and the transcript."""

from __future__ import annotations

from typing import Any

from harness.io.strict_json import dumps_compact

RESULT_LIMIT_CHARS = 3200
_STRING_CAPS = (2400, 1200, 600, 300, 150, 80)
_LIST_CAPS = (50, 20, 10, 5, 3, 1)


def compact(value: Any, limit: int = RESULT_LIMIT_CHARS) -> Any:
    """``value`` itself when its JSON fits ``limit``; otherwise a copy with long strings cut
    (marked with ``...``) and long lists shortened (with a ``"... N more"`` marker)."""
    if _size(value) <= limit:
        return value
    for list_cap in _LIST_CAPS:
        for string_cap in _STRING_CAPS:
            shrunk = _shrink(value, string_cap, list_cap)
            if _size(shrunk) <= limit:
                return shrunk
    return _shrink(value, 40, 1)


def _size(value: Any) -> int:
    return len(dumps_compact(value))


def _shrink(value: Any, string_cap: int, list_cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= string_cap else value[:string_cap].rstrip() + " ..."
    if isinstance(value, list):
        kept = [_shrink(v, string_cap, list_cap) for v in value[:list_cap]]
        if len(value) > list_cap:
            kept.append(f"... {len(value) - list_cap} more")
        return kept
    if isinstance(value, dict):
        return {k: _shrink(v, string_cap, list_cap) for k, v in value.items()}
    return value
