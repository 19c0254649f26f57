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
from tests.external.tholos_support import PEERS

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


def runner_cell(verdict_cell_id: str) -> bool:
    """A cell scored by Tholos-Bench's runner (whose code no registry serves and no test has)."""
    return "__tholos-runner" in verdict_cell_id


def needs_its_image(reasons: list[str]) -> bool:
    """An inspect cell whose scorers are re-run in the suite's sealed image, which this host has not built."""
    return bool(reasons) and all("repro images build" in reason for reason in reasons)


def checked(run_dir: Path) -> list:
    """Every cell verdict of a bundle (run or merged folder), no run-level problem allowed."""
    assert not merge_problems(run_dir)
    cells = []
    for run in find_runs(run_dir):
        verdict = check_run(run)
        assert not verdict.run_problems, verdict.run_problems
        cells += verdict.cells
    return cells


@pytest.mark.parametrize("archive", BUNDLES, ids=[p.name for p in BUNDLES])
def test_on_a_fresh_home_a_published_bundle_is_valid_or_unchecked_with_the_command(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing fetched, no mirror (issue 48): what the bundle references and this machine lacks
    makes its cells UNCHECKED, naming the command that makes them checkable; never INVALID."""
    run_dir = unpack(archive, tmp_path / "bundle")
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    cells = checked(run_dir)
    assert {cell.verdict for cell in cells} <= {"VALID", "EXCLUDED", "UNCHECKED"}
    for cell in cells:
        if cell.verdict == "UNCHECKED":
            assert needs_its_image(cell.reasons) or all(
                "repro suites fetch --from-bundle" in reason for reason in cell.reasons
            ), cell.reasons


@pytest.mark.parametrize("archive", BUNDLES, ids=[p.name for p in BUNDLES])
def test_a_published_bundle_checks_and_renders_its_published_numbers(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the bundle references fetched (`repro suites fetch --from-bundle`: the ToolCallBench wheel
    from PyPI, Tholos-Bench's scenario files from their copy in ../shared/peers/ as a mirror): every
    cell VALID, but the runner's, which stay UNCHECKED naming the runner's pinned source; the tables
    and claims of a bundle whose cells are all checked verify."""
    run_dir = unpack(archive, tmp_path / "bundle")
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(MIRROR_ENV, str(PEERS / "tholos-bench"))
    for run in find_runs(run_dir):
        main(["suites", "fetch", "--from-bundle", str(run)])  # exit 1 where the runner's archive is out of reach
    cells = checked(run_dir)
    wrong = [(c.cell_id, c.verdict, c.reasons) for c in cells if c.verdict not in ("VALID", "EXCLUDED")]
    if wrong and all(verdict == "UNCHECKED" and needs_its_image(reasons) for _, verdict, reasons in wrong):
        pytest.skip("the inspect image is not built here (tests/external/test_inspect_engine.py builds it)")
    assert all(runner_cell(cell_id) and verdict == "UNCHECKED" for cell_id, verdict, _ in wrong), wrong
    for _, _, reasons in wrong:
        assert any("mertkayacs/tholos" in reason and "48e6604a1775" in reason for reason in reasons), reasons
    if wrong:
        return  # the runner's rows verify where its archive is at hand (docs/reviewing.md)
    published = PUBLISHED / archive.name.replace("-bundle.tar.gz", ".json")
    assert main(["verify", str(run_dir), "--published", str(published)]) == 0
    claims = ROOT / "paper" / "claims" / archive.name.replace("-bundle.tar.gz", ".yaml")
    # issue 32: our own rows, claim by claim, REPRODUCED
    assert main(["verify", str(run_dir), "--claims", str(claims)]) == 0
    rows = json.loads(published.read_text())["rows"]
    # A model is shown the task through its GGUF's or a pinned template, or on Ollama repro's explicit Go
    # template for its family; the scripted engine has no model and no template.
    assert rows and all(
        row["chat_template"]["source"] in ("gguf", "pinned", "explicit")
        for row in rows
        if row["engine_identity"] != "scripted-engine"
    )
    assert all(row["chat_template"] is None for row in rows if row["engine_identity"] == "scripted-engine")
