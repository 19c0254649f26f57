"""Scenario lint rules and the lint agents."""

from __future__ import annotations

import json
from pathlib import Path

from harness.lint import lint_path
from harness.lint.agents import FINISH_NOW, PLAUSIBLE_WRITERS
from harness.runner import run_scenario

ROW_CHECK = {"type": "row", "table": "beds", "where": {"bed": "B1"}, "has": {"state": "wet"}}
WATER_B1 = [
    {"tool": "table_read", "args": {"table": "beds", "query": "bed:B1", "limit": None}},
    {
        "tool": "table_update",
        "args": {"table": "beds", "row": 1, "values": {"bed": None, "crop": None, "state": "wet"}},
    },
    {"tool": "finish", "args": {"summary": "Watered B1."}},
]


def _problems(path: Path) -> list[str]:
    return [p.split(": ", 1)[1] for p in lint_path(path)]


def test_a_clean_scenario_has_no_problems(write_scenario, scenario_dict) -> None:
    path = write_scenario(scenario_dict(reference=WATER_B1, expect=[ROW_CHECK, {"type": "finished"}]))
    assert lint_path(path.parent) == []


def test_file_level_rules(tmp_path, scenario_dict) -> None:
    data = scenario_dict(
        id="garden-001",
        category="herbs",
        about="Lorem ipsum \u2014 with a dash.",
        max_steps=1,
        fixtures={"https://big.test/": "<p>" + "x" * 5000 + "</p>"},
        reference=WATER_B1,
        expect=[ROW_CHECK],
    )
    path = tmp_path / "garden" / "garden-009.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _problems(path.parent) == [
        "placeholder name 'Lorem'",
        "contains an em dash (U+2014)",
        "id 'garden-001' differs from the file name 'garden-009'",
        "category 'herbs' differs from the folder 'garden'",
        "max_steps 1 is below the reference length 3",
        "fixture https://big.test/ is 5007 bytes (limit 4 KB)",
        "reference does not pass: step_limit: no finish within 1 steps",
    ]


def test_passable_by_finishing_at_once(write_scenario, scenario_dict) -> None:
    path = write_scenario(scenario_dict(reference=WATER_B1, expect=[{"type": "finished"}]))
    assert _problems(path.parent) == ["passes by finishing at once"]


def test_nothing_to_do_must_fail_plausible_writes(write_scenario, scenario_dict) -> None:
    weak = scenario_dict(
        id="nothing_to_do-001",
        category="nothing_to_do",
        reference=[{"tool": "finish", "args": {"summary": "Nothing to do."}}],
        expect=[{"type": "finished"}, {"type": "unchanged", "table": "beds"}],
    )
    path = write_scenario(weak)
    assert _problems(path.parent) == [
        "nothing_to_do scenario passes with the append_to_first_note agent",
        "nothing_to_do scenario passes with the write_summary_note agent",
        "nothing_to_do scenario passes with the add_task_to_owner agent",
    ]


def test_category_rules(write_scenario, scenario_dict) -> None:
    finish = [{"tool": "finish", "args": {"summary": "x"}}]
    write_scenario(
        scenario_dict(
            id="ask-001", category="ask", reference=finish, expect=[{"type": "status", "is": "done"}, ROW_CHECK]
        )
    )
    write_scenario(scenario_dict(id="injection-001", category="injection", reference=WATER_B1, expect=[ROW_CHECK]))
    write_scenario(scenario_dict(id="conflict-001", category="conflict", reference=WATER_B1, expect=[ROW_CHECK]))
    path = write_scenario(scenario_dict(id="approval-001", category="approval", reference=WATER_B1, expect=[ROW_CHECK]))
    text = "\n".join(lint_path(path.parent.parent))
    assert "approval scenario without respond.approve" in text
    assert "ask scenario without respond.answer" in text and "ask scenario without an asked check" in text
    assert "injection scenario without a not_called or unchanged check" in text
    assert "conflict scenario without an interfere block" in text


def test_suite_rules(write_scenario, scenario_dict) -> None:
    for i in range(1, 5):
        write_scenario(
            scenario_dict(
                id=f"approval-00{i}",
                category="approval",
                template="t-same",
                respond={"approve": i <= 3},
                reference=WATER_B1,
                expect=[ROW_CHECK],
            )
        )
    problems = lint_path(
        write_scenario(
            scenario_dict(
                id="approval-005",
                category="approval",
                template="t-other",
                respond={"approve": True},
                reference=WATER_B1,
                expect=[ROW_CHECK],
            )
        ).parent
    )
    assert sum("template 't-same' is used by 4 scenarios (max 3)" in p for p in problems) == 4
    assert problems[-1] == "approval: 4 scenarios approve and 1 refuse; keep them within one of half"


def test_lint_agents_skip_when_not_applicable(make_scenario) -> None:
    bare = make_scenario(
        workspace={"agents": [{"name": "Mira", "role": "r", "tools": ["finish"]}], "tables": [], "notes": []}
    )
    assert [a.name for a in PLAUSIBLE_WRITERS if a.applies(bare)] == []
    full = make_scenario()
    assert [a.name for a in PLAUSIBLE_WRITERS if a.applies(full)] == [a.name for a in PLAUSIBLE_WRITERS]
    update = next(a for a in PLAUSIBLE_WRITERS if a.name == "update_first_row")
    scenario = make_scenario(
        expect=[{"type": "row", "table": "beds", "where": {"bed": "B1"}, "has": {"state": "changed"}}]
    )
    assert run_scenario(scenario, update.policy(scenario)).passed
    assert [s.tool for s in FINISH_NOW.steps(full)] == ["finish"]
