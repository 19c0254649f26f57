"""`repro rerun` end to end with the real engine and the real GGUF (not run by the author of
this file: the lead runs engine tests alone, on a quiet machine).

- one cell of the published smoke bundle reruns REPRODUCED with identical transcripts (the
  default profile, the bundle's own: marker engine, about 4 minutes on 2 cores after images
  and models are in place);
- the same cell at one thread per engine (profile cpu-1t) is not REPRODUCED and names the
  threads (marker reruns: a slow suite, not in the default run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import SMOKE
from tests.rerun.test_session import one_cell


def rerun_one_cell(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    cell = one_cell(bundle_folder(SMOKE, tmp_path / "peek"))
    out = tmp_path / "out"
    status = main(["rerun", str(SMOKE), "--only", cell, "--out", str(out), *extra])
    return status, json.loads((out / "rerun-report.json").read_text())


@pytest.mark.docker
@pytest.mark.engine
def test_one_cell_of_the_published_smoke_bundle_reruns_reproduced(tmp_path: Path) -> None:
    status, report = rerun_one_cell(tmp_path)
    [row] = report["report"]["verdicts"]
    assert (row["verdict"], row["setup"]) == ("REPRODUCED", "same"), report
    assert row["transcripts"]["identical"] == row["transcripts"]["compared"] > 0, report
    assert status == 0, report


@pytest.mark.docker
@pytest.mark.reruns
def test_the_same_cell_at_another_thread_count_is_not_reproduced_and_names_the_threads(tmp_path: Path) -> None:
    status, report = rerun_one_cell(tmp_path, "--profile", "cpu-1t")
    assert status == 1
    [row] = report["report"]["verdicts"]
    assert row["verdict"] != "REPRODUCED" and "threads" in row["setup"], report
    threads = [row for row in report["setup"] if row["name"] == "threads"]
    assert threads and threads[0]["bundle"] == "2" and threads[0]["here"] == "1" and threads[0]["same"] is False
