"""`repro rerun` end to end with the real engine and the real GGUF (run alone, on a quiet machine).

Each test expects one verdict for the CPU it runs on (issue 53): the published bundle was made on
one CPU model; on that model the rerun is the bundle's setup, on any other it is another setup
whose only difference is the CPU (the same build's transcripts were identical on an AMD EPYC and an
Intel Xeon, 55 of 55).

- one cell of the published smoke bundle reruns with identical transcripts: REPRODUCED on the
  bundle's CPU, REPRODUCED ON ANOTHER SETUP naming the CPU alone elsewhere (and the harness tree
  too while paper/published/identity.yaml calls the bundle older) (the default profile,
  the bundle's own: marker engine, about 4 minutes on 2 cores after images and models are in place);
- (the same cell on a profile the smoke matrix does not allow is refused before anything boots:
  tests/rerun/test_session.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.bundle.provenance import system_description
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import PUBLISHED, SMOKE
from tests.rerun.test_session import one_cell


def rerun_one_cell(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    cell = one_cell(bundle_folder(SMOKE, tmp_path / "peek"))
    out = tmp_path / "out"
    status = main(["rerun", str(SMOKE), "--only", cell, "--out", str(out), *extra])
    return status, json.loads((out / "rerun-report.json").read_text())


def same_cpu_as_the_bundle(tmp_path: Path) -> bool:
    """Whether this machine's CPU model is the one the published smoke bundle records."""
    run = json.loads((bundle_folder(SMOKE, tmp_path / "peek") / "run.json").read_text())
    return bool(run["system"]["cpu_model"] == system_description().cpu_model)


def smoke_is_current() -> bool:
    """Whether paper/published/identity.yaml calls the smoke bundle current (this tree makes its setup)."""
    return bool(yaml.safe_load((PUBLISHED / "identity.yaml").read_text())["smoke-cpu"] == "current")


@pytest.mark.docker
@pytest.mark.engine
def test_one_cell_of_the_published_smoke_bundle_reruns_reproduced(tmp_path: Path) -> None:
    status, report = rerun_one_cell(tmp_path)
    [row] = report["report"]["verdicts"]
    assert row["transcripts"]["identical"] == row["transcripts"]["compared"] > 0, report
    expected = ([] if same_cpu_as_the_bundle(tmp_path) else ["CPU"]) + ([] if smoke_is_current() else ["harness"])
    if not expected:
        assert (row["verdict"], row["setup"], status) == ("REPRODUCED", "same", 0), report
        return
    # another CPU model, or a bundle identity.yaml calls older: another setup, naming what differs
    assert (row["verdict"], status) == ("REPRODUCED ON ANOTHER SETUP", 1), report
    named = [d["what"] for d in row["differences"]]
    assert all(any(what in n for n in named) for what in expected), report
    assert len(named) == len(expected), report
    for cpu in (d for d in row["differences"] if d["what"] == "CPU"):
        assert "rerun" in cpu["note"] and "CPU : " in cpu["note"], report  # the kernels this engine reported
