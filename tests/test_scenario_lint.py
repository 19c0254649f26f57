"""Lint of the project's own scenarios (scenarios/ at the repo root).

Per file: id equals the file stem, category equals the folder, the reference replays to a
pass, category rules (approval, ask, injection, conflict), no placeholder names or em dashes,
fixtures on .test hosts and under 4 KB, max_steps covers the reference, and the scenario is
not passable by doing nothing (see harness/lint/agents.py). Across files: unique ids, each
template used at most three times, approval answers balanced. ``python -m harness lint
--scenarios scenarios`` runs the same rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.lint import lint_file, lint_suite

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
FILES = sorted(SCENARIOS.rglob("*.json")) if SCENARIOS.is_dir() else []

pytestmark = pytest.mark.skipif(not FILES, reason="scenarios/ holds no JSON files yet")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SCENARIOS)) for p in FILES])
def test_scenario_file(path: Path) -> None:
    assert lint_file(path) == []


def test_scenario_suite() -> None:
    assert lint_suite(FILES) == []
