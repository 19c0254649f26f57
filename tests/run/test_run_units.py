"""Run bookkeeping that needs no engine: what counts as a changed project tree."""

from __future__ import annotations

import repro.provenance as run_module
from repro.provenance import SourceState

CLEAN = SourceState(commit="a" * 40, tree_clean=True, harness_digest="d" * 64)


def test_source_change_names_what_changed():
    assert run_module.source_change(CLEAN, CLEAN) is None
    moved = CLEAN.model_copy(update={"commit": "b" * 40})
    assert run_module.source_change(CLEAN, moved) == f"the project moved from commit {'a' * 40} to {'b' * 40}"
    dirty = CLEAN.model_copy(update={"tree_clean": False, "dirty_files": ["repro/run.py"]})
    assert run_module.source_change(CLEAN, dirty) == "the project tree became dirty (repro/run.py)"


def test_a_tree_edited_during_the_run_is_recorded_dirty(monkeypatch):
    dirty = CLEAN.model_copy(update={"tree_clean": False, "dirty_files": ["README.md"]})
    monkeypatch.setattr(run_module, "source_state", lambda: dirty)
    ended = run_module.source_at_end(CLEAN)
    assert ended.tree_clean is False
    assert ended.dirty_files[0] == "changed during the run: the project tree became dirty (README.md)"
    monkeypatch.setattr(run_module, "source_state", lambda: CLEAN)
    assert run_module.source_at_end(CLEAN) == CLEAN
