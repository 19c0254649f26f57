"""The sealed runner path, on the repro project's stand-in for Tholos-Bench's runner
(tests/standins/tholos_runner/, our own code with the runner's command line, results and modules;
not Tholos-Bench's runner): the stand-in through repro (the runner image built from its archive,
pinned by sha256 in tests/external/tholos-standin.yaml; in a harness container sealed as a cell's
is, joined to an engine container's namespace; its raw outputs collected, normalised and checked as
a run does, the runner's scoring re-executed from the archive) and the stand-in run directly (a
subprocess of the unpacked archive from the cache, outside repro), against the same scripted
OpenAI-compatible server of the project's own (harness.testing.scripted_engine: loopback only,
bounded), on scenarios of six categories (an approval, an interference, a web fixture among them):
the request bodies are identical byte for byte, and so are the results. So the image, the sandbox
and the driver's observers change nothing of what the runner code inside sends or computes; the
same comparison with Tholos-Bench's runner itself is benchmarks/tholos_direct.py's, measured on the
published run (docs/external-suites.md).

The engine container is the harness image serving `python -m harness scripted-engine --record`
with no network at all; the runner's container reaches it only through its namespace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.testing.scripted_engine import ScriptedEngine
from repro.containers.sandbox import bind, container_name, harness_kwargs, harness_settings
from repro.engines.base import client_argv
from repro.run.cell import harness_output_dir
from repro.spec.profiles import load_profiles
from repro.suites.base import SCENARIO_MOUNT
from repro.suites.external.base import adapter_of
from repro.suites.registry import kind_of
from tests.external.conftest import collect_cell, run_joined
from tests.external.test_toolcallbench import RECOMPUTING, evidence
from tests.external.tholos_support import FIDELITY_IDS, results_by_id, run_direct, runner_cell, runner_suite

pytestmark = [pytest.mark.docker]
RUN_ID = "tholos-fidelity"
PORT = 8080


@pytest.fixture(scope="module")
def tholos_image_ref(docker_client, harness_image_ref, tholos_sources):

    return kind_of(runner_suite()).build_image(runner_suite(), harness_image_ref, lambda line: None)


def run_sealed(client, harness_id: str, image_id: str, scenarios: Path, ids: list[str]) -> tuple[Path, Path, object]:
    """The scripted engine in its own container (no network), the runner's image joined to it with
    a cell's harness settings: (the runner's output folder, the engine's output folder, read-back)."""
    cell = runner_cell(ids)
    engine_out, out = harness_output_dir(), harness_output_dir()
    engine_command = [
        "scripted-engine",
        "--scenarios",
        "/scenarios",
        "--host",
        "127.0.0.1",
        "--port",
        str(PORT),
        "--record",
        "/out/requests.jsonl",
    ]
    engine_settings = harness_settings(run_id=RUN_ID, cell_id=cell.id, engine_id="none").with_(network_mode="none")
    engine_kwargs = harness_kwargs(
        harness_id,
        "none",
        engine_command,
        engine_out,
        run_id=RUN_ID,
        cell_id=cell.id,
        settings=engine_settings,
        mounts=[bind(scenarios, "/scenarios", read_only=True)],
        name=container_name(RUN_ID, "engine"),
    )
    argv = client_argv(f"http://127.0.0.1:{PORT}", "scripted", "openai")
    command = adapter_of(cell.suite).task_argv(cell, argv, ids, load_profiles().get("cpu"))
    harness = (image_id, command, out, [bind(scenarios, SCENARIO_MOUNT, read_only=True)])
    ended, applied = run_joined(client, engine_kwargs, b"scripted engine:", harness, cell, RUN_ID)
    assert ended.code == 0, ended.log_tail
    return out, engine_out, applied


def test_the_stand_in_through_repro_matches_the_stand_in_run_directly(
    docker_client, harness_image_ref, tholos_image_ref, tholos_sources, tmp_path: Path
) -> None:
    code_root, scenarios = tholos_sources
    external = runner_suite().external
    assert external is not None
    # the image is built from the stand-in's archive, named by its pin
    assert tholos_image_ref.labels["repro.external.wheel_sha256"] == external.sha256
    assert tholos_image_ref.labels["repro.external.wheel"] == external.pin == "archive:tholos-standin-src.tar"
    out, engine_out, applied = run_sealed(
        docker_client, harness_image_ref.id, tholos_image_ref.id, scenarios, FIDELITY_IDS
    )
    try:
        assert (applied.read_only, applied.user, applied.cap_drop) == (True, "10001:10001", ["ALL"])
        assert applied.network_mode.startswith("container:")
        sealed_requests = (engine_out / "requests.jsonl").read_bytes()
        record = collect_cell(tmp_path / "run", runner_cell(FIDELITY_IDS), [out])
        sealed = results_by_id(out / "results.jsonl")
        ran = json.loads((out / "driver.json").read_text())["runner"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(engine_out, ignore_errors=True)
    assert record.status == "done", record.reason
    assert ran == "0.0.0+standin"  # the tholos package the image runs is the stand-in's
    (tmp_path / "direct").mkdir()
    with ScriptedEngine(scenarios, record=tmp_path / "direct.jsonl") as engine:
        direct = run_direct(code_root, scenarios, tmp_path / "direct", FIDELITY_IDS, engine.base_url)
    assert sealed_requests == (tmp_path / "direct.jsonl").read_bytes()  # identical request bodies, byte for byte
    assert sealed == direct  # identical results (the wall-clock seconds aside)
    assert len(direct) == 6 and {r["category"] for r in direct.values()} >= {"approval", "injection", "web_research"}
    ev = evidence(tmp_path / "run", record)
    assert [problem for rule in RECOMPUTING for problem in rule(ev)] == []
