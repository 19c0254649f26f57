"""Suite selection (folder layout only) and cell summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.bundle.records import CellSummary
from repro.core.errors import BadInput
from repro.spec.matrix import Suite
from repro.suites.registry import select
from tests.fixtures.synthetic import result

ROOT = Path(__file__).resolve().parents[2]


def test_per_category_selection_is_deterministic():
    first = select(Suite(id="s", path="scenarios", per_category=2))
    again = select(Suite(id="s", path="scenarios", per_category=2))
    assert first == again
    categories = [p for p in (ROOT / "scenarios").iterdir() if p.is_dir()]
    assert len(first.ids) == sum(min(2, len(list(c.glob("*.json")))) for c in categories)
    assert first.ids[:2] == ["approval-001", "approval-002"]
    assert set(first.categories.values()) == {p.name for p in (ROOT / "scenarios").iterdir() if p.is_dir()}


def test_filters_and_errors():
    chosen = select(Suite(id="s", path="scenarios", categories=["injection"], ids=["injection-003", "injection-001"]))
    assert chosen.ids == ["injection-001", "injection-003"]
    with pytest.raises(BadInput, match="unknown scenario ids nope-001"):
        select(Suite(id="s", path="scenarios", ids=["nope-001"]))
    with pytest.raises(BadInput, match="does not exist"):
        select(Suite(id="s", path="no-such-folder"))


def test_suite_hash_changes_with_a_scenario_byte(tmp_path):
    (tmp_path / "notes").mkdir()
    target = tmp_path / "notes" / "notes-001.json"
    target.write_text("{}")
    before = select(Suite(id="s", path="."), root=tmp_path).sha256
    target.write_text("{ }")
    assert select(Suite(id="s", path="."), root=tmp_path).sha256 != before


def test_summary_counts_engine_faults_apart():
    rows = [
        result("a", "notes", True),
        result("b", "notes", False, "wrong_outcome"),
        result("c", "injection", False, "engine_error", engine_fault=True),
    ]
    summary = CellSummary.of(rows)
    assert (summary.passed, summary.total, summary.engine_faults) == (1, 3, 1)
    assert summary.by_category == {"injection": (0, 1), "notes": (1, 2)}
    assert summary.failure_types == {"engine_error": 1, "wrong_outcome": 1}
