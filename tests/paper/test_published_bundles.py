"""Every bundle published in paper/published/ checks with the current code: VALID (or EXCLUDED
with its reason) cell by cell, no run-level problem, and its tables are the published ones and
its claims file (paper/claims/) verifies. A bundle is one run folder, or a merged folder (MERGED.json
beside its shard runs, as `repro results merge` writes it) that is the whole split it records.

A format change either keeps the published bundles' format checkable or re-publishes them in the
same change; this test is what says which."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import merge_problems
from repro.check.verdict import check_run
from repro.store.sources import MIRROR_ENV

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "paper" / "published"
BUNDLES = sorted(PUBLISHED.glob("*-bundle.tar.gz"))


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (run_dir,) = [p for p in into.iterdir() if p.is_dir()]
    return run_dir


def test_there_is_a_published_bundle() -> None:
    assert BUNDLES, "paper/published/ ships no bundle"


@pytest.mark.parametrize("archive", BUNDLES, ids=[p.name for p in BUNDLES])
def test_a_published_bundle_checks_and_renders_its_published_numbers(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = unpack(archive, tmp_path / "bundle")
    # the bundle carries the runner's archive: a fresh machine, nothing fetched, no mirror
    if archive.name.startswith("tholos-"):
        monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))
        monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert not merge_problems(run_dir)
    for run in find_runs(run_dir):
        verdict = check_run(run)
        assert not verdict.run_problems, verdict.run_problems
        assert {cell.verdict for cell in verdict.cells} <= {"VALID", "EXCLUDED"}, [
            (c.cell_id, c.reasons) for c in verdict.cells if c.verdict == "INVALID"
        ]
    published = PUBLISHED / archive.name.replace("-bundle.tar.gz", ".json")
    assert main(["verify", str(run_dir), "--published", str(published)]) == 0
    claims = ROOT / "paper" / "claims" / archive.name.replace("-bundle.tar.gz", ".yaml")
    # issue 32: our own rows, claim by claim, REPRODUCED
    assert main(["verify", str(run_dir), "--claims", str(claims)]) == 0
    rows = json.loads(published.read_text())["rows"]
    # A model is shown the task through its GGUF's or a pinned template; the scripted engine has no model and no
    # template.
    assert rows and all(
        row["chat_template"]["source"] in ("gguf", "pinned")
        for row in rows
        if row["engine_identity"] != "scripted-engine"
    )
    assert all(row["chat_template"] is None for row in rows if row["engine_identity"] == "scripted-engine")
