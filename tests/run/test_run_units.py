"""Run bookkeeping that needs no engine: what counts as a changed project tree."""

from __future__ import annotations

from repro.bundle import provenance
from repro.bundle.records import SourceState

CLEAN = SourceState(commit="a" * 40, tree_clean=True, harness_digest="d" * 64)


def test_source_change_names_what_changed():
    assert provenance.source_change(CLEAN, CLEAN) is None
    moved = CLEAN.model_copy(update={"commit": "b" * 40})
    assert provenance.source_change(CLEAN, moved) == f"the project moved from commit {'a' * 40} to {'b' * 40}"
    dirty = CLEAN.model_copy(update={"tree_clean": False, "dirty_files": ["repro/run/runner.py"]})
    assert provenance.source_change(CLEAN, dirty) == "the project tree became dirty (repro/run/runner.py)"


def test_a_tree_edited_during_the_run_is_recorded_dirty(monkeypatch):
    dirty = CLEAN.model_copy(update={"tree_clean": False, "dirty_files": ["README.md"]})
    monkeypatch.setattr(provenance, "source_state", lambda: dirty)
    ended = provenance.source_at_end(CLEAN)
    assert ended.tree_clean is False
    assert ended.dirty_files[0] == "changed during the run: the project tree became dirty (README.md)"
    monkeypatch.setattr(provenance, "source_state", lambda: CLEAN)
    assert provenance.source_at_end(CLEAN) == CLEAN


def test_each_repeat_carries_its_own_seed():
    """Repeat k sends seed + k - 1 (distinct samples); the cell still records the matrix's seed."""
    from repro.engines.base import client_argv
    from repro.plan.planner import make_plan
    from repro.spec.loading import load_matrix
    from repro.spec.profiles import load_profiles
    from repro.suites.registry import select
    from repro.suites.scenarios import harness_command
    from tests.fixtures.synthetic import ROOT, smoke_variant

    profile = load_profiles().get("cpu")
    cells = make_plan(smoke_variant(repeats=3)[1], "cpu", profile).cells
    suite = select(cells[0].suite, ROOT)
    seeds = []
    for cell in cells[:3]:
        argv = harness_command(cell, client_argv("http://127.0.0.1:8080", "m", "openai"), suite, profile)
        seeds.append(argv[argv.index("--seed") + 1])
    assert [c.repeat for c in cells[:3]] == [1, 2, 3] and seeds == ["42", "43", "44"]
    assert {c.decoding.seed for c in cells} == {load_matrix(ROOT / "matrix" / "smoke.yaml").matrix.decoding.seed}


def test_a_suite_a_do_nothing_agent_passes_is_refused_before_anything_boots(tmp_path):
    """notes-001 with only its `finished` check left passes for an agent that finishes at once."""
    import json

    from repro.spec.findings import SuiteSelection
    from repro.suites.scenarios import ScenarioSuites
    from tests.fixtures.synthetic import ROOT

    scenario = json.loads((ROOT / "scenarios" / "notes" / "notes-001.json").read_text())
    folder = tmp_path / "scenarios"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "notes-001.json").write_text(json.dumps(scenario))
    suite = SuiteSelection(folder=folder, ids=["notes-001"], categories={"notes-001": "notes"}, sha256="0" * 64)
    assert ScenarioSuites().refuse_unfit(suite) == []
    scenario["expect"] = [{"type": "finished"}]
    (folder / "notes" / "notes-001.json").write_text(json.dumps(scenario))
    assert any("passes by finishing at once" in line for line in ScenarioSuites().refuse_unfit(suite))
