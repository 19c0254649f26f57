"""`repro rerun` up to the point where it would fetch, build and boot, on the real published
smoke bundle: a tampered bundle is refused before anything starts; the same-setup table names the
commit and harness of a bundle recorded at another repro commit before anything starts; the
verdict of a bundle against itself is REPRODUCED with identical transcripts. No Docker."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.bundle.layout.reader import BundleReader
from repro.bundle.setup import SetupRecord
from repro.commands import rerun as rerun_command
from repro.core.config import PROJECT_ROOT as ROOT
from repro.rerun.archive import bundle_folder, shard_run
from repro.rerun.preflight import Side, compare_setups, differences
from repro.rerun.session import RerunSession
from repro.rerun.verdict import verdict_of
from repro.spec.harnesses import HarnessPin
from repro.store.sources import MIRROR_ENV
from tests.rerun.conftest import SMOKE, THOLOS_RUNNER_FULL

ONE_CELL = "smollm2-135m-instruct-q4_1__llamacpp-b11434__json_schema__workspace-smoke__r1"


class Booted(Exception):
    """What a test raises in place of fetching, building or booting."""


def no_start(*args: object, **kwargs: object) -> None:
    raise Booted


def one_cell(run_dir: Path) -> str:
    """The published bundle's VALID workspace cell of SmolLM2 under the JSON schema (its id carries a hash)."""
    ids = [p.name for p in (run_dir / "cells").iterdir() if p.name.startswith(ONE_CELL)]
    assert ids, sorted(p.name for p in (run_dir / "cells").iterdir())
    return ids[0]


def tampered(tmp_path: Path) -> Path:
    """The published smoke bundle with one scenario's result flipped, packed again: INVALID."""
    run_dir = bundle_folder(SMOKE, tmp_path / "unpacked")
    results = run_dir / "cells" / one_cell(run_dir) / "scenarios.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0]["passed"] = not rows[0]["passed"]
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with tarfile.open(tmp_path / "tampered.tar.gz", "w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    return tmp_path / "tampered.tar.gz"


def test_a_tampered_bundle_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RerunSession, "fetch", no_start)
    monkeypatch.setattr(RerunSession, "run_cells", no_start)
    assert main(["rerun", str(tampered(tmp_path)), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "INVALID" in err and "nothing is rerun" in err


def test_the_preflight_names_the_commit_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published bundle was recorded at an earlier commit than this one: the table names it
    first, and the harness tree digest beside it (the same while paper/published/identity.yaml
    calls the bundle current; otherwise it differs, and the preflight says so)."""
    monkeypatch.setattr(RerunSession, "fetch", no_start)
    peek = bundle_folder(SMOKE, tmp_path / "peek")
    cell, commit = one_cell(peek), json.loads((peek / "run.json").read_text())["source"]["commit"]
    with pytest.raises(Booted):
        rerun_command.rerun(SMOKE, None, [cell], tmp_path / "out", False, [], None, None)
    out = capsys.readouterr().out
    assert "same setup?" in out and f"RUN  {cell}" in out
    current = yaml.safe_load((ROOT / "paper" / "published" / "identity.yaml").read_text())["smoke-cpu"] == "current"
    harness = "same     harness tree digest" if current else "not the same setup: harness tree digest"
    assert f"named    repro commit: {commit[:12]}" in out and harness in out
    assert "threads per engine: 2 | 2" in out


def test_another_harness_tree_and_threads_are_named_and_counted() -> None:
    pin = HarnessPin(name="repro", version="0.1.0", commit="a" * 40, tree_digest="1" * 64)
    cell = SetupRecord(harness=pin, profile="cpu", threads=2, cpu_model="cpu x")
    bundle = Side(cells={"c": cell}, commit="a" * 40)
    moved = pin.model_copy(update={"commit": "b" * 40, "tree_digest": "2" * 64})
    here = Side(cells={"c": cell.model_copy(update={"harness": moved, "threads": 1})}, commit="b" * 40)
    rows = compare_setups(bundle, here)
    assert [r.input for r in differences(rows)] == ["threads per engine", "harness tree digest"]
    assert [r.input for r in differences(rows, frozenset({"threads"}))] == ["harness tree digest"]
    assert [r.input for r in rows if r.same is False] == ["repro commit", "threads per engine", "harness tree digest"]


def test_a_bundle_against_itself_is_reproduced_with_identical_transcripts(tmp_path: Path) -> None:
    run_dir = bundle_folder(SMOKE, tmp_path / "out")
    verdict = verdict_of(run_dir, [run_dir], frozenset())
    assert verdict.rows and {row.verdict for row in verdict.rows} == {"REPRODUCED"}
    assert all(row.transcripts and row.transcripts.identical == row.transcripts.compared > 0 for row in verdict.rows)
    assert {row.setup for row in verdict.rows} == {"same"}
    assert verdict.exit_code == 0 and "differ" not in verdict.closing_line()
    assert f"reproduced: {len(verdict.rows)} of {len(verdict.rows)} claims; " in verdict.closing_line()
    assert "| REPRODUCED | same |" in verdict.markdown()


def test_an_unknown_accept_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rerun", str(SMOKE), "--accept", "threads,colour"]) == 2
    assert "--accept colour: not an input name" in capsys.readouterr().err


def test_a_merged_bundle_is_rerun_one_shard_at_a_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published runner's 160 is four shard runs merged: without --only the rerun names each
    shard's cell in one line; with a shard's cell it plans that shard's run, and only that cell."""
    monkeypatch.setattr(RerunSession, "fetch", no_start)
    assert main(["rerun", str(THOLOS_RUNNER_FULL), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "rerun one shard at a time" in err and "-p2of4" in err and len(err.strip().splitlines()) == 1
    merged = bundle_folder(THOLOS_RUNNER_FULL, tmp_path / "out")
    (second,) = [run for run in merged.iterdir() if run.name.endswith("shard2of4")]
    (cell,) = BundleReader(second).cell_ids()
    assert shard_run(merged, [cell]) == second
    # the runner's code is on no registry and not here: its cells are UNCHECKED, and nothing is rerun
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert main(["rerun", str(THOLOS_RUNNER_FULL), "--only", cell, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--only {cell}: UNCHECKED here" in err and "mertkayacs/tholos" in err and "--from-bundle" in err


def test_a_merged_bundle_missing_a_shard_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    merged = bundle_folder(THOLOS_RUNNER_FULL, tmp_path / "out")
    (fourth,) = [run for run in merged.iterdir() if run.name.endswith("shard4of4")]
    shutil.rmtree(fourth)
    assert main(["rerun", str(merged), "--only", "x"]) == 2
    assert "not the merged folder its MERGED.json records" in capsys.readouterr().err


def test_the_verdict_names_what_the_setup_table_says_differs(tmp_path: Path) -> None:
    """The setup table and the verdict agree (issue 49): an engine built from another Dockerfile,
    or a host with another core count, is named in the verdict, which is then never plain
    REPRODUCED, unless the reviewer accepts it by name."""
    from repro.rerun.preflight import SetupRow
    from repro.rerun.verdict import with_setup

    run_dir = bundle_folder(SMOKE, tmp_path / "out")
    report = verdict_of(run_dir, [run_dir], frozenset()).report
    rows = [
        SetupRow(
            name="engine-build",
            input="engine llamacpp-b11434",
            bundle="Dockerfile 475f",
            here="Dockerfile 9a0c",
            same=False,
        ),
        SetupRow(name="commit", input="repro commit", bundle="a", here="b", same=False, counts=False),
    ]
    named = with_setup(report, rows, frozenset())
    assert {v.verdict for v in named.verdicts} == {"REPRODUCED ON ANOTHER SETUP"}
    assert {v.setup for v in named.verdicts} == {"differs: engine-build"}
    assert all([d.what for d in v.differences] == ["engine llamacpp-b11434"] for v in named.verdicts)
    accepted = with_setup(report, rows, frozenset({"engine-build"}))
    assert {(v.verdict, v.setup) for v in accepted.verdicts} == {("REPRODUCED", "accepted: engine-build")}


def test_the_same_cell_on_a_profile_its_matrix_does_not_allow_is_refused_before_anything_boots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The smoke matrix runs on the profiles it names (not cpu-1t): the cell, found on that profile
    by its name (its id's hash changes with the profile), is refused in one line, and nothing boots.
    A rerun at another thread count is tests/e2e/test_claims_threads.py's (its matrix allows both)."""
    cell = one_cell(bundle_folder(SMOKE, tmp_path / "peek"))
    code = main(["rerun", str(SMOKE), "--only", cell, "--profile", "cpu-1t", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "nothing to rerun" in err and "does not run on profile cpu-1t" in err, err
    assert not (tmp_path / "out" / "rerun-report.json").exists()
