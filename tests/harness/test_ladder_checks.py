"""Answer checks (answer_contains_all, answer_matches, tool_result_contains), the ladder lint
(random tool callers, one-write agents, levels) and the level in the result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agent.policy import ScriptedPolicy
from harness.contracts import StepEntry
from harness.lint import lint_file
from harness.lint.agents import RANDOM_CALLERS, RandomCaller
from harness.model.scenario import Scenario, ScenarioError, load_scenario, load_scenarios
from harness.runner import replay_scenario, run_scenario
from harness.scoring.checks import contains_term

REPO = Path(__file__).resolve().parents[2]
CONTEXT = {"scenario_path": str(REPO / "scenarios" / "x" / "x.json")}


def scenario(expect: list[dict[str, Any]], level: int = 3, category: str = "ladder-3", **extra: Any) -> Scenario:
    data = {
        "id": f"{category}-001",
        "category": category,
        "level": level,
        "about": "A check test.",
        "template": "t-check",
        "agent": "Ada",
        "max_steps": 4,
        "workspace": {
            "agents": [{"name": "Ada", "role": "assistant", "tools": ["list_directory", "get_weather", "finish"]}],
            "world": {"files": "mira", "cwd": "projects/tide-app", "weather": "june-2026"},
        },
        "trigger": {"kind": "message", "text": "List this folder."},
        "reference": [
            {"tool": "list_directory", "args": {"path": None}},
            {"tool": "finish", "args": {"summary": "README.md, pyproject.toml."}},
        ],
        "expect": expect,
        **extra,
    }
    return Scenario.model_validate(data, context=CONTEXT)


def run(expect: list[dict[str, Any]], steps: list[tuple[str, dict[str, Any]]]) -> Any:
    return run_scenario(scenario(expect), ScriptedPolicy([{"tool": t, "args": a} for t, a in steps]))


LISTED = [
    ("list_directory", {"path": None}),
    ("finish", {"summary": "Files: `README.md`, pyproject.toml and 14.5 other things."}),
]


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("it is 14 C", "14", True),
        ("it is 114 C", "14", False),
        ("it is 14.5 C", "14", False),
        ("it is 14.5 C", "14.5", True),
        ("total 14.", "14", True),
        ("1,400 EUR", "400", False),
        ("see `report.md`.", "report.md", True),
        ("see report.mdx", "report.md", False),
        ("Ships on  12\nJune", "12 june", True),
        ("pyproject.toml", "project", False),
    ],
)
def test_contains_term(text: str, term: str, found: bool) -> None:
    assert contains_term(text, term) is found


@pytest.mark.parametrize(
    ("check", "holds"),
    [
        ({"type": "answer_contains_all", "values": ["readme.md", "PYPROJECT.TOML"]}, True),
        ({"type": "answer_contains_all", "values": ["README.md", "setup.py"]}, False),
        ({"type": "answer_contains_all", "values": ["README.md"], "absent": ["setup.py"]}, True),
        ({"type": "answer_contains_all", "values": ["README.md"], "absent": ["pyproject.toml"]}, False),
        ({"type": "answer_contains_all", "values": ["14"]}, False),
        ({"type": "answer_matches", "pattern": r"files?:"}, True),
        ({"type": "answer_matches", "pattern": r"^no files"}, False),
        (
            {
                "type": "tool_result_contains",
                "tool": "list_directory",
                "values": ["CHANGELOG.md", "/home/mira/projects/tide-app"],
            },
            True,
        ),
        ({"type": "tool_result_contains", "tool": "list_directory", "values": ["setup.py"]}, False),
        ({"type": "tool_result_contains", "tool": "get_weather", "values": ["Bergen"]}, False),
    ],
)
def test_answer_checks(check: dict[str, Any], holds: bool) -> None:
    result = run([check], LISTED)
    assert result.passed is holds
    if not holds:
        assert result.failed_checks[0].type == check["type"]


def test_answer_checks_fail_without_a_finish() -> None:
    expect = [{"type": "answer_contains_all", "values": ["x"]}, {"type": "answer_matches", "pattern": "x"}]
    result = run_scenario(
        scenario(expect, max_steps=1), ScriptedPolicy([{"tool": "list_directory", "args": {"path": None}}])
    )
    assert result.failure_type == "step_limit"
    assert [c.found for c in result.failed_checks] == [None, None]


def test_tool_result_contains_ignores_failed_calls() -> None:
    steps = [("get_weather", {"city": "Atlantis", "days": None}), ("finish", {"summary": "x"})]
    result = run([{"type": "tool_result_contains", "tool": "get_weather", "values": ["Atlantis"]}], steps)
    assert not result.passed
    assert result.failed_checks[0].found == {"successful_calls": 0}


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"type": "answer_matches", "pattern": "(unclosed"}, "not a regular expression"),
        ({"type": "answer_matches", "pattern": "x" * 301}, "at most 300"),
        ({"type": "answer_contains_all", "values": []}, "at least 1"),
        ({"type": "tool_result_contains", "tool": "read_file"}, "field required"),
    ],
)
def test_bad_answer_checks(tmp_path: Path, check: dict[str, Any], message: str) -> None:
    path = ladder_file(tmp_path, 3, [{"type": "finished"}])
    data = json.loads(path.read_text())
    data["expect"] = [check]
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=r"expect\[0\]") as caught:
        load_scenario(path)
    assert message in str(caught.value)


# ----------------------------------------------------------------------------- lint and levels


def test_random_callers_are_seeded_and_valid() -> None:
    s = scenario([{"type": "finished"}])
    first = [a.policy(s) for a in RANDOM_CALLERS]
    again = [a.policy(s) for a in RANDOM_CALLERS]
    runs = [run_scenario(s, p, transcript=True).transcript for p in first]
    assert runs == [run_scenario(s, p, transcript=True).transcript for p in again]
    assert all(isinstance(p, RandomCaller) for p in first)
    statuses = {e.status for t in runs for e in t or [] if isinstance(e, StepEntry)}
    assert "ok" in statuses  # they do reach the tools with valid arguments


def ladder_file(tmp_path: Path, level: int, expect: list[dict[str, Any]], **extra: Any) -> Path:
    folder = tmp_path / "scenarios" / f"ladder-{level}"
    folder.mkdir(parents=True)
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    data = scenario(expect, level=level, category=f"ladder-{level}", **extra).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    path = folder / f"ladder-{level}-001.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def test_lint_catches_a_level_one_scenario_that_random_calls_pass(tmp_path: Path) -> None:
    path = ladder_file(
        tmp_path, 1, [{"type": "tool_result_contains", "tool": "list_directory", "values": ["README.md"]}]
    )
    problems = lint_file(path)
    assert any("passes with the random_tools_" in p for p in problems), problems


def test_lint_wants_the_folder_level_and_an_outcome_check(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios" / "ladder-4"
    folder.mkdir(parents=True)
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    data = scenario([{"type": "max_steps", "n": 3}], level=2, category="ladder-4").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    path = folder / "ladder-4-001.json"
    path.write_text(json.dumps(data))
    problems = lint_file(path)
    assert any("needs level 4, has 2" in p for p in problems)
    assert any("without an outcome check" in p for p in problems)


def test_the_suite_has_eight_ladder_scenarios_per_level_and_the_level_reaches_the_result() -> None:
    ladder = [s for s in load_scenarios(REPO / "scenarios") if s.category.startswith("ladder-")]
    for level in range(9):
        assert len([s for s in ladder if s.level == level and s.category == f"ladder-{level}"]) >= 8
    first = next(s for s in ladder if s.id == "ladder-3-001")
    result = replay_scenario(first)
    assert result.passed and result.level == 3
    assert "list this project directory" in first.trigger.text.lower()
