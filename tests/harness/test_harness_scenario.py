"""Loading scenarios: the model, and one-line ``FILE field.path: reason`` errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.model.scenario import ScenarioError, load_scenario, load_scenarios


@pytest.fixture
def load_error(write_scenario: Callable[..., Path]) -> Callable[[dict[str, Any]], str]:
    """The ``field: reason`` part of the error for a bad scenario dict."""

    def error(data: dict[str, Any]) -> str:
        path = write_scenario(data)
        with pytest.raises(ScenarioError) as caught:
            load_scenario(path)
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(str(path))
        return message[len(str(path)) :].strip()

    return error


def test_good_file_loads_with_optional_level(write_scenario, scenario_dict) -> None:
    scenario = load_scenario(write_scenario(scenario_dict(level=3)))
    assert scenario.level == 3
    assert scenario.trigger.kind == "message"
    assert load_scenario(write_scenario(scenario_dict())).level is None


def test_unknown_check_type(load_error, scenario_dict) -> None:
    data = scenario_dict(expect=[{"type": "finished"}, {"type": "finished"}, {"type": "rowz", "table": "beds"}])
    assert load_error(data) == "expect[2].type: unknown check type 'rowz'"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["expect"][0].update(extra=1), "expect[0].extra: unknown field"),
        (lambda d: d.pop("about"), "about: field required"),
        (lambda d: d.update(surprise=True), "surprise: unknown field"),
        (lambda d: d["trigger"].update(kind="email"), "trigger.kind: unknown trigger kind 'email'"),
        (lambda d: d["trigger"].pop("text"), "trigger.text: field required"),
        (lambda d: d.update(level=9), "level: Input should be less than or equal to 8"),
        (lambda d: d.update(expect=[{"type": "row", "where": {}}]), "expect[0].table: field required"),
        (lambda d: d.update(expect=[{"type": "rows", "table": "beds"}]), "expect[0]: give count, or min and/or max"),
        (
            lambda d: d["workspace"].update(rules=[{"tool": "x", "decision": "maybe"}]),
            "workspace.rules[0].decision: Input should be 'allow', 'ask' or 'deny'",
        ),
        (
            lambda d: d["workspace"]["tables"][0]["rows"][0].update(crop=["a"]),
            "workspace.tables[0].rows[0].crop: a cell must be a string, number, boolean or null",
        ),
    ],
)
def test_schema_errors_name_the_field(load_error, scenario_dict, change, expected) -> None:
    data = scenario_dict()
    change(data)
    assert load_error(data) == expected


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(agent="Nobody"), "agent: agent 'Nobody' is not in workspace.agents"),
        (
            lambda d: d["workspace"]["agents"][1]["tools"].remove("finish"),
            "workspace.agents[1].tools: every agent needs finish",
        ),
        (
            lambda d: d["workspace"]["agents"][0]["tools"].append("teleport"),
            "workspace.agents[0].tools[13]: unknown tool 'teleport'",
        ),
        (
            lambda d: d.update(reference=[{"tool": "note_read", "args": {"title": "Log"}}]),
            "reference[0].tool: finish must be the last step, and only the last",
        ),
        (
            lambda d: d.update(
                reference=[
                    {"tool": "table_read", "args": {"table": "beds"}},
                    {"tool": "finish", "args": {"summary": "x"}},
                ]
            ),
            "reference[0].args: missing argument 'query'",
        ),
        (
            lambda d: d.update(reference=[{"tool": "finish", "args": {"summary": "x", "mood": "ok"}}]),
            "reference[0].args: unknown argument 'mood'",
        ),
        (
            lambda d: d.update(fixtures={"https://example.com/a": "<p>x</p>"}),
            "fixtures.https://example.com/a: fixture hosts must end in .test",
        ),
        (
            lambda d: d.update(interfere={"after_tool": "table_read", "table": "pots", "set": {"a": 1}}),
            "interfere.table: no table 'pots' in the workspace",
        ),
        (
            lambda d: d["workspace"]["tables"][0]["rows"].append({"plot": "x"}),
            "workspace.tables[0].rows[3]: unknown column 'plot'",
        ),
    ],
)
def test_semantic_errors_name_the_field(load_error, scenario_dict, change, expected) -> None:
    data = scenario_dict()
    change(data)
    assert load_error(data) == expected


def test_duplicate_keys_and_bad_json_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"id": "a", "id": "b"}', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"dup.json: invalid JSON: duplicate key 'id'"):
        load_scenario(path)
    path.write_text('{"id": ', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"invalid JSON: Expecting value at line 1"):
        load_scenario(path)


def test_folder_load_stops_at_first_bad_file(write_scenario, scenario_dict) -> None:
    good = write_scenario(scenario_dict(id="garden-001"))
    bad = scenario_dict(id="garden-002")
    bad["expect"] = [{"type": "nope"}]
    write_scenario(bad)
    with pytest.raises(ScenarioError, match="garden-002.json expect"):
        load_scenarios(good.parent.parent)


def test_duplicate_ids_across_files(write_scenario, scenario_dict) -> None:
    first = write_scenario(scenario_dict(), name="one")
    write_scenario(scenario_dict(), name="two")
    with pytest.raises(ScenarioError, match="duplicate scenario id 'garden-001'"):
        load_scenarios(first.parent)


def test_missing_path() -> None:
    with pytest.raises(ScenarioError, match="no such file or folder"):
        load_scenarios("/nonexistent/scenarios")
