"""All 20 check types, each holding and failing, with expected vs found in failures."""

from __future__ import annotations

import pytest

from harness.model.checks_model import CHECK_TYPES
from harness.runner import run_scenario

RULES = [{"agent": "*", "tool": "web_fetch", "match": "*", "decision": "ask"}]
FIXTURES = {"https://frost.test/dates": "<title>Frost</title><p>Last frost May 12.</p>"}

# One busy run; each check below is evaluated against its final state.
CALLS = [
    ("table_read", {"table": "beds", "query": "bed:B1", "limit": None}),
    ("table_update", {"table": "beds", "row": 1, "values": {"bed": None, "crop": None, "state": "wet"}}),
    ("table_add", {"table": "beds", "rows": [{"bed": "B4", "crop": "pea", "state": "8.40"}]}),
    ("table_create", {"table": "seeds", "columns": ["name", "packets"]}),
    ("note_write", {"title": "Plan", "text": "Dig B4 on Friday.", "mode": "replace"}),
    ("task_add", {"to": "Otto", "title": "Water the peas", "details": "Bed B4 needs water."}),
    ("ask", {"question": "Which day?"}),
    ("web_fetch", {"url": "https://frost.test/dates"}),
    ("remember", {"fact": "Peas go in B4."}),
    ("follow_up", {"minutes": 60, "note": "Check the peas."}),
    ("finish", {"summary": "Watered B1, planted 3 peas, last frost May 12."}),
]


@pytest.fixture(scope="module")
def outcome():
    """Run CALLS once per check list; returns a function check -> (passed, failed-check)."""

    def evaluate(check, make_scenario, script):
        scenario = make_scenario(
            workspace={"rules": RULES},
            fixtures=FIXTURES,
            respond={"approve": True, "answer": "Friday."},
            max_steps=14,
            expect=[check],
        )
        result = run_scenario(scenario, script(*CALLS))
        return result.passed, (result.failed_checks[0] if result.failed_checks else None)

    return evaluate


CASES = [
    ({"type": "finished"}, True),
    ({"type": "status", "is": "done"}, True),
    ({"type": "status", "is": "waiting"}, False),
    ({"type": "row", "table": "beds", "where": {"bed": "b1"}, "has": {"state": "WET"}}, True),
    ({"type": "row", "table": "beds", "where": {"bed": "B4"}, "has": {"state": 8.4}}, True),
    ({"type": "row", "table": "beds", "where": {"bed": "B2"}, "has": {"state": "dry"}}, False),
    ({"type": "row", "table": "pots", "where": {"bed": "B2"}}, False),
    ({"type": "rows", "table": "beds", "count": 4}, True),
    ({"type": "rows", "table": "beds", "min": 1, "max": 3}, False),
    ({"type": "rows", "table": "seeds", "max": 0}, True),
    ({"type": "table_exists", "table": "seeds", "columns": ["name", "packets"]}, True),
    ({"type": "table_exists", "table": "seeds", "columns": ["packets", "name"]}, False),
    ({"type": "table_exists", "table": "pots"}, False),
    ({"type": "note", "title": "plan", "contains": ["dig b4"], "not_contains": ["Saturday"]}, True),
    ({"type": "note", "title": "Plan", "not_contains": ["friday"]}, False),
    ({"type": "note", "title": "Log", "contains": ["kale"]}, True),
    ({"type": "unchanged", "note": "Log"}, True),
    ({"type": "unchanged", "table": "beds"}, False),
    ({"type": "task", "to": "Otto", "title_contains": "water", "mentions": ["B4", "PEAS"]}, True),
    ({"type": "task", "to": "Otto", "mentions": ["B5"]}, False),
    ({"type": "task", "mentions": ["B4"]}, False),
    ({"type": "no_task", "to": "you"}, True),
    ({"type": "no_task"}, False),
    ({"type": "called", "tool": "web_fetch", "args": {"url": {"contains": "frost.test"}}}, True),
    ({"type": "called", "tool": "search"}, False),
    ({"type": "not_called", "tool": "search"}, True),
    ({"type": "not_called", "tool": "table_update", "args": {"row": 1}}, False),
    ({"type": "asked"}, True),
    ({"type": "approval", "tool": "web_fetch"}, True),
    ({"type": "approval", "tool": "table_add"}, False),
    ({"type": "memory", "agent": "mira", "contains": "peas go"}, True),
    ({"type": "memory", "agent": "Mira", "contains": "kale"}, False),
    ({"type": "follow_up", "min_minutes": 60, "max_minutes": 60}, True),
    ({"type": "follow_up", "min_minutes": 61, "max_minutes": 90}, False),
    ({"type": "finish_contains", "all": ["b1", "May 12"], "any": ["peas", "pea"]}, True),
    ({"type": "finish_contains", "all": ["B"]}, False),
    ({"type": "finish_contains", "any": ["30", "Frost"]}, True),
    ({"type": "max_steps", "n": 11}, True),
    ({"type": "max_steps", "n": 10}, False),
    ({"type": "answer_contains_all", "values": ["B1", "may 12"], "absent": ["B2"]}, True),
    ({"type": "answer_contains_all", "values": ["B"]}, False),
    ({"type": "answer_matches", "pattern": r"last frost (may|june) \d+"}, True),
    ({"type": "answer_matches", "pattern": "kale"}, False),
    ({"type": "tool_result_contains", "tool": "web_fetch", "values": ["last frost may 12"]}, True),
    ({"type": "tool_result_contains", "tool": "table_read", "values": ["B4"]}, False),
]


def test_every_check_type_is_covered() -> None:
    assert {c["type"] for c, _ in CASES} == CHECK_TYPES
    assert len(CHECK_TYPES) == 20


@pytest.mark.parametrize(("check", "holds"), CASES, ids=[f"{c['type']}-{i}" for i, (c, _) in enumerate(CASES)])
def test_check(outcome, make_scenario, script, check, holds) -> None:
    passed, failed = outcome(check, make_scenario, script)
    assert passed is holds
    if not holds:
        assert failed.type == check["type"]
        assert failed.expected == {k: v for k, v in check.items() if k != "type"}


def test_failed_check_reports_what_was_found(make_scenario, script) -> None:
    scenario = make_scenario(expect=[{"type": "rows", "table": "beds", "count": 9}, {"type": "finished"}])
    result = run_scenario(scenario, script(("finish", {"summary": "x"})))
    assert [(f.index, f.type, f.expected, f.found) for f in result.failed_checks] == [
        (0, "rows", {"table": "beds", "count": 9}, 3)
    ]
    assert result.failure_type == "wrong_outcome"


def test_refused_call_still_counts_for_not_called(make_scenario, script) -> None:
    scenario = make_scenario(
        workspace={"rules": [{"tool": "web_fetch", "decision": "deny"}]},
        expect=[{"type": "not_called", "tool": "web_fetch"}],
    )
    result = run_scenario(scenario, script(("web_fetch", {"url": "https://x.test/"}), ("finish", {"summary": "x"})))
    assert result.failure_type == "forbidden_tool" and result.failure_step == 1
