"""Helpers for the Tholos runner-path tests. The runner they run is the repro project's stand-in
for Tholos-Bench's runner (tests/standins/tholos_runner/: our own code with the runner's command
line, results and modules; not Tholos-Bench's runner), pinned by tests/external/tholos-standin.yaml.
`tholos_sources` (tests/external/conftest.py) packs it and the Tholos-Bench scenario files (from
../shared/peers/, never copied into the project) into a temporary mirror and fetches both into
the suite cache by sha256, as
`repro suites fetch --mirror` does; `run_direct` runs it directly (a subprocess of the unpacked
archive), `run_driver` runs repro's driver on the host, both against one scripted
OpenAI-compatible server of the project's own (harness.testing.scripted_engine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.core.config import PROJECT_ROOT
from repro.plan.planner import Cell, make_plan
from repro.spec.loading import load_matrix
from repro.spec.matrix import LoadedMatrix, Suite
from repro.spec.profiles import load_profiles

MATRIX = PROJECT_ROOT / "matrix" / "tholos.yaml"  # the real runner's pins (its matrix-level tests need no runner)
STANDIN_MATRIX = PROJECT_ROOT / "tests" / "external" / "tholos-standin.yaml"  # the runner path's: the stand-in
DRIVER = PROJECT_ROOT / "images" / "tholos" / "driver.py"
# The peers' folder (the 160 scenario files): beside the checkout, or named.
PEERS = Path(os.environ.get("REPRO_TEST_PEERS", PROJECT_ROOT.parent / "shared" / "peers"))
# Six categories: an approval, an interference (injection), a web fixture (web_research) and more.
FIDELITY_IDS = ["approval-001", "ask-001", "injection-001", "memory-001", "update-001", "web_research-001"]


def loaded() -> LoadedMatrix:
    """The stand-in matrix: matrix/tholos.yaml with the runner suite pinned to the stand-in."""
    return load_matrix(STANDIN_MATRIX)


def runner_suite(ids: list[str] | None = None) -> Suite:
    suite = next(s for s in loaded().matrix.suites if s.external is not None)
    return suite.model_copy(update={"ids": ids}) if ids is not None else suite


def runner_cell(ids: list[str] | None = None, protocol: str = "json_schema") -> Cell:
    matrix = loaded()
    suites = [runner_suite(ids)]
    matrix = matrix.model_copy(
        update={"matrix": matrix.matrix.model_copy(update={"suites": suites, "protocols": [protocol]})}
    )
    return make_plan(matrix, "cpu", load_profiles().get("cpu")).cells[0]


def pack_standin(mirror: Path) -> str:
    """The stand-in runner packed into `mirror`; fails, naming the new sha256, when it is not the pin."""
    from tests.standins import pack_tholos_runner

    suite = runner_suite()
    assert suite.external is not None
    found = pack_tholos_runner(mirror / "tholos-standin-src.tar")
    if found != suite.external.sha256:
        pytest.fail(
            f"the stand-in runner (tests/standins/tholos_runner/) packs to sha256 {found}, the pin is "
            f"{suite.external.sha256}: update the pin in {STANDIN_MATRIX.relative_to(PROJECT_ROOT)} and "
            "repro/spec/harnesses.py (HARNESSES['tholos'].known_archives)"
        )
    return found


def runner_path(code_root: Path) -> str:
    from repro.suites.external.tholos_check import runner_root

    return str(runner_root(code_root))


def run_driver(
    code_root: Path,
    scenarios: Path,
    out: Path,
    ids: list[str],
    base_url: str,
    model: str = "scripted",
    extra: tuple[str, ...] = (),
) -> subprocess.CompletedProcess:
    """repro's driver on the host (no container), as the image runs it (`extra`: more of its arguments,
    as the adapter's command line adds them)."""
    command = [
        sys.executable,
        str(DRIVER),
        "--out",
        str(out),
        "--scenarios",
        str(scenarios),
        "--ids",
        ",".join(ids),
        "--base-url",
        base_url + "/v1",
        "--model",
        model,
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=runner_path(code_root))
    return subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, timeout=600, check=True)


def run_direct(
    code_root: Path,
    scenarios: Path,
    work: Path,
    ids: list[str],
    base_url: str,
    model: str = "scripted",
    timeout: float = 600,
) -> dict[str, dict]:
    """`python -m tholos bench` from the unpacked archive (the stand-in's in the tests; benchmarks/
    tholos_direct.py passes the real runner's), outside repro, on the same files: id -> result."""
    chosen = work / "scenarios"
    for scenario_id in ids:
        (source,) = scenarios.glob(f"*/{scenario_id}.json")
        (chosen / source.parent.name).mkdir(parents=True, exist_ok=True)
        (chosen / source.parent.name / source.name).write_bytes(source.read_bytes())
    command = [
        sys.executable,
        "-m",
        "tholos",
        "bench",
        "--base-url",
        base_url + "/v1",
        "--model",
        model,
        "--scenarios",
        str(chosen),
        "--out",
        str(work / "results.jsonl"),
    ]
    env = dict(os.environ, PYTHONPATH=runner_path(code_root))
    subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout, check=True)
    return results_by_id(work / "results.jsonl")


def results_by_id(path: Path) -> dict[str, dict]:
    """The runner's results file, id -> line, without the wall-clock seconds (never the same twice)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["id"]: {k: v for k, v in row.items() if k != "seconds"} for row in rows}


def bodies(path: Path) -> list[dict]:
    """The request bodies a scripted engine recorded (`--record`), parsed."""
    return [json.loads(json.loads(line)["body"]) for line in path.read_text().splitlines() if line.strip()]
