"""Helpers for the Tholos tests: the runner's archive and the Tholos-Bench scenario archive filled
into the suite cache from a local mirror by sha256 (never copied into the project), the runner run
directly (a subprocess of the unpacked archive), repro's driver run on the host, and one scripted
OpenAI-compatible server of the project's own (harness.testing.scripted_engine) that both talk to."""

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
from repro.store.sources import MIRROR_ENV

MATRIX = PROJECT_ROOT / "matrix" / "tholos.yaml"
DRIVER = PROJECT_ROOT / "images" / "tholos" / "driver.py"
# The peers' folder (the runner's archive, the 160 scenario files): beside the checkout, or named.
PEERS = Path(os.environ.get("REPRO_TEST_PEERS", PROJECT_ROOT.parent / "shared" / "peers"))
# Six categories: an approval, an interference (injection), a web fixture (web_research) and more.
FIDELITY_IDS = ["approval-001", "ask-001", "injection-001", "memory-001", "update-001", "web_research-001"]


def loaded() -> LoadedMatrix:
    return load_matrix(MATRIX)


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


@pytest.fixture(scope="session")
def tholos_sources(tmp_path_factory) -> tuple[Path, Path]:
    """(the unpacked runner archive, the scenario folder), both fetched into the cache from a mirror:
    the peers' runner archive as it is, and the scenario folder packed as `repro suites pack` does."""
    from repro.suites.external.wheels import fetch_code
    from repro.suites.sources import fetch_suite, pack_folder, scenario_folder

    if not (PEERS / "tholos-runner").is_dir() or not (PEERS / "tholos-bench").is_dir():
        pytest.skip(f"the Tholos runner and scenarios are not at {PEERS} (set REPRO_TEST_PEERS)")
    mirror = tmp_path_factory.mktemp("mirror")
    suite = runner_suite()
    assert suite.source is not None and suite.external is not None
    assert pack_folder(PEERS / "tholos-bench", mirror / "tholos-bench.tar") == suite.source.sha256
    previous = os.environ.get(MIRROR_ENV)
    os.environ[MIRROR_ENV] = os.pathsep.join([str(PEERS / "tholos-runner"), str(mirror)])
    try:
        fetch_suite(suite.source)
        yield fetch_code(suite.external), scenario_folder(suite)
    finally:
        if previous is None:
            os.environ.pop(MIRROR_ENV, None)
        else:
            os.environ[MIRROR_ENV] = previous


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
    """`python -m tholos bench` from the unpacked archive, outside repro, on the same files: id -> result."""
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
