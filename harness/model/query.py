"""The ``table_read`` query language.

A query is a list of conditions, AND-ed: ``col:value`` or ``col=value`` (the cell equals the
value, or contains it as whole words; numbers compare as decimals), ``col!=value``,
``col>=n``, ``col<=n``, ``col>n``, ``col<n``. Text that is not a condition (before the first
condition) is free words: each must occur somewhere in the row. A value runs to the next
condition, so ``status:in transit owner:Sara`` has two conditions. Quotes around a value are
dropped. Only real column names (case-insensitive) start a condition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.model.values import as_decimal, as_text, contains_text, contains_word

_CONDITION_START = re.compile(r"(?:^|(?<=\s))([A-Za-z_][\w\-]*)\s*(!=|>=|<=|=|:|>|<)")


class QueryError(ValueError):
    """The query cannot be applied to this table."""


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: str

    def holds(self, row: dict[str, Any]) -> bool:
        cell = row.get(self.column)
        if self.op in (":", "="):
            return cell_matches(cell, self.value)
        if self.op == "!=":
            return not cell_matches(cell, self.value)
        number, bound = as_decimal(cell), as_decimal(self.value)
        if number is None or bound is None:
            return False
        return {">=": number >= bound, "<=": number <= bound, ">": number > bound, "<": number < bound}[self.op]


@dataclass(frozen=True)
class Query:
    conditions: tuple[Condition, ...]
    words: tuple[str, ...]

    def holds(self, row: dict[str, Any]) -> bool:
        text = " ".join(as_text(v) for v in row.values())
        return all(c.holds(row) for c in self.conditions) and all(contains_text(text, w) for w in self.words)


def cell_matches(cell: Any, value: str) -> bool:
    number, wanted = as_decimal(cell), as_decimal(value)
    if number is not None and wanted is not None:
        return number == wanted
    text = as_text(cell)
    return text.strip().casefold() == value.strip().casefold() or contains_word(text, value)


def parse_query(query: str | None, columns: list[str]) -> Query:
    """Parse ``query`` against the table's ``columns``; raise QueryError when a bound is not a number."""
    if not query or not query.strip():
        return Query((), ())
    by_name = {c.casefold(): c for c in columns}
    starts = [m for m in _CONDITION_START.finditer(query) if m.group(1).casefold() in by_name]
    free_text = query[: starts[0].start()] if starts else query
    conditions = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(query)
        value = _unquote(query[match.end() : end].strip())
        condition = Condition(by_name[match.group(1).casefold()], match.group(2), value)
        if condition.op in (">=", "<=", ">", "<") and as_decimal(value) is None:
            raise QueryError(f"{condition.column}{condition.op} needs a number, got {value!r}")
        conditions.append(condition)
    words = tuple(_unquote(w) for w in free_text.split() if _unquote(w))
    return Query(tuple(conditions), words)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1].strip()
    return text
