"""Value matching and the table_read query language."""

from __future__ import annotations

import pytest

from harness.model.query import QueryError, parse_query
from harness.model.values import contains_word, matches


@pytest.mark.parametrize(
    ("expected", "actual", "result"),
    [
        ("8.40", 8.4, True),
        (8.4, "8.40", True),
        (20, 20.0, True),
        (21, 20, False),
        ("  Tram Depot ", "tram depot", True),
        ("Tram", "Tram Depot", False),
        ({"contains": "14:20"}, "High tide at 14:20.", True),
        ({"contains": "TIDE"}, "high tide", True),
        ({"contains": "x"}, None, False),
        ({"in": ["open", "new"]}, "NEW", True),
        ({"in": ["open", "new"]}, "closed", False),
        ({"nonempty": True}, "  ", False),
        ({"nonempty": True}, "a", True),
        ({"nonempty": True}, None, False),
        ({"gte": 5}, 5, True),
        ({"gte": 5}, "4.9", False),
        ({"lte": 5, "gte": 1}, 3, True),
        ({"lte": 5}, "many", False),
        ({"a": {"contains": "b"}}, {"a": "abc", "z": 1}, True),
        ({"a": 1}, {"b": 1}, False),
        (True, True, True),
        (True, "true", False),
        (None, None, True),
        (None, "", False),
        ([1, "a"], [1.0, "A"], True),
    ],
)
def test_value_matching(expected, actual, result) -> None:
    assert matches(expected, actual) is result


def test_word_boundaries() -> None:
    assert contains_word("There are 3 new leads.", "3")
    assert not contains_word("The total is 37.", "3")
    assert contains_word("Mitteco has it at 289.", "mitteco")


COLUMNS = ["item", "qty", "status"]


@pytest.mark.parametrize(
    ("query", "row", "result"),
    [
        ("status:new", {"status": "new"}, True),
        ("status=new", {"status": "New"}, True),
        ("status:new", {"status": "renewed"}, False),
        ("item:oat", {"item": "oat milk 1L"}, True),
        ("item:Bo", {"item": "Bobby Tan"}, False),
        ("qty:0", {"qty": 0}, True),
        ("qty:0", {"qty": 10}, False),
        ("qty>=3", {"qty": "3"}, True),
        ("qty<3", {"qty": 3}, False),
        ("qty>2 status:open", {"qty": 5, "status": "open"}, True),
        ("qty>2 status:open", {"qty": 5, "status": "closed"}, False),
        ("status!=open", {"status": "closed"}, True),
        ("status:in transit", {"status": "in transit"}, True),
        ('status:"in transit"', {"status": "in transit"}, True),
        ("STATUS:open", {"status": "open"}, True),
        ("oat milk", {"item": "oat milk", "status": "x"}, True),
        ("oat butter", {"item": "oat milk", "status": "x"}, False),
        ("https://x.test/a", {"item": "see https://x.test/a"}, True),
    ],
)
def test_query(query, row, result) -> None:
    values = {c: row.get(c) for c in COLUMNS}
    assert parse_query(query, COLUMNS).holds(values) is result


def test_empty_query_matches_everything() -> None:
    assert parse_query(None, COLUMNS).holds({"item": "a"})
    assert parse_query("  ", COLUMNS).holds({"item": "a"})


def test_comparison_needs_a_number() -> None:
    with pytest.raises(QueryError, match="qty>= needs a number"):
        parse_query("qty>=lots", COLUMNS)
