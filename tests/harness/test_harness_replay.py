"""Every Tholos-Bench reference replays to a pass, and transcripts are deterministic."""

from __future__ import annotations

from pathlib import Path

from harness.model.scenario import load_scenarios
from harness.runner import replay_scenario


def test_all_160_tholos_references_pass(tholos_dir: Path) -> None:
    scenarios = load_scenarios(tholos_dir)
    assert len(scenarios) == 160
    failures = {}
    for scenario in scenarios:
        result = replay_scenario(scenario)
        if not result.passed:
            failures[scenario.id] = (result.failure_type, result.error, result.failed_checks)
    assert failures == {}


def test_scenarios_sorted_by_category_then_id(tholos_dir: Path) -> None:
    scenarios = load_scenarios(tholos_dir)
    keys = [(s.category, s.id) for s in scenarios]
    assert keys == sorted(keys)


def test_only_and_ids_filter(tholos_dir: Path) -> None:
    assert {s.category for s in load_scenarios(tholos_dir, only=["ask", "memory"])} == {"ask", "memory"}
    assert [s.id for s in load_scenarios(tholos_dir, ids=["conflict-003", "add-002"])] == ["conflict-003", "add-002"]


def test_replay_transcripts_are_identical_across_runs(tholos_dir: Path) -> None:
    for scenario in load_scenarios(tholos_dir, only=["conflict", "web_research"]):
        first, second = replay_scenario(scenario), replay_scenario(scenario)
        assert first.transcript == second.transcript
