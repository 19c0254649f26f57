"""The LAB path sealed and on the host give the same per-task results: the repro project's stand-in
for Local Agent Bench (tests/standins/local_agent_bench/, our own code with LAB's command line and
result file; not LAB), run through repro (LAB's image built from the stand-in's archive, pinned by
sha256 in tests/external/lab-standin.yaml; in a harness container sealed as a cell's is, joined to an
engine container's namespace; the fixture world mounted as a cell's mounts do) and run by the driver
on the host outside any container, against the same canned Ollama of our own
(tests/external/lab_canned_ollama.py: no network in its container). LAB's result files are the same
but for its metadata and latencies, and so are the fixture hosts' answers, request for request: the image,
the sandbox and the namespace change nothing of what LAB computes."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from repro.containers.sandbox import bind, container_name, harness_kwargs, harness_settings
from repro.core.config import PROJECT_ROOT
from repro.engines.base import client_argv
from repro.plan.planner import make_plan
from repro.run.cell import harness_output_dir
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.suites.registry import kind_of
from tests.external.conftest import run_joined
from tests.external.lab_canned_ollama import MODEL, CannedOllama, lisbon_answer
from tests.external.test_lab import STANDIN_MATRIX, run_driver

pytestmark = [pytest.mark.docker]
RUN_ID = "lab-fidelity"
PORT = 11434
CANNED = PROJECT_ROOT / "tests" / "external" / "lab_canned_ollama.py"


@pytest.fixture(scope="module")
def lab_cell():
    return make_plan(load_matrix(STANDIN_MATRIX), "cpu", load_profiles().get("cpu")).cells[0]


@pytest.fixture(scope="module")
def lab_code(lab_mirror, lab_cell) -> Path:
    """The stand-in's archive, fetched from the mirror into the cache by sha256 and unpacked."""
    from repro.suites.external.wheels import fetch_code

    return fetch_code(lab_cell.suite.external)


@pytest.fixture(scope="module")
def lab_image_ref(docker_client, harness_image_ref, lab_code, lab_cell):
    return kind_of(lab_cell.suite).build_image(lab_cell.suite, harness_image_ref, lambda line: None)


def run_sealed(client, harness_id: str, image_id: str, cell) -> tuple[Path, object]:
    """The canned Ollama in its own container (no network), LAB's image joined to it as a cell's is."""
    engine_out, out = harness_output_dir(), harness_output_dir()
    settings = harness_settings(run_id=RUN_ID, cell_id=cell.id, engine_id="none").with_(network_mode="none")
    engine_kwargs = harness_kwargs(
        harness_id,
        "none",
        [str(PORT), lisbon_answer(PROJECT_ROOT / "fixtures")],
        engine_out,
        run_id=RUN_ID,
        cell_id=cell.id,
        settings=settings,
        mounts=[bind(CANNED, "/canned.py", read_only=True)],
        name=container_name(RUN_ID, "engine"),
    )
    engine_kwargs["entrypoint"] = ["python3", "/canned.py"]
    kind = kind_of(cell.suite)
    command = kind.task_argv(
        cell, client_argv(f"http://127.0.0.1:{PORT}", MODEL, "ollama"), [], load_profiles().get("cpu")
    )
    harness = (image_id, command, out, kind.mounts(kind.select(cell.suite)))
    try:
        ended, applied = run_joined(client, engine_kwargs, b"canned ollama: serving", harness, cell, RUN_ID)
    finally:
        shutil.rmtree(engine_out, ignore_errors=True)
    assert ended.code == 0, ended.log_tail
    return out, applied


def comparable(out: Path) -> tuple[dict, list[tuple[str, str, int, str]]]:
    """LAB's result but its metadata (the host's Python) and each task's latency, and the fixture
    hosts' answers in order."""
    result = json.loads((out / "result.json").read_text())
    result.pop("metadata")
    for task in result["results"]:
        task.pop("latency_ms")
    fixtures = [json.loads(line) for line in (out / "fixtures.jsonl").read_text().splitlines()]
    return result, [(f["host"], f["target"], f["status"], f["sha256"]) for f in fixtures]


def test_lab_sealed_and_on_the_host_give_the_same_results(
    docker_client, harness_image_ref, lab_image_ref, lab_code, lab_cell, tmp_path: Path
) -> None:
    external = lab_cell.suite.external
    assert lab_image_ref.labels["repro.external.wheel_sha256"] == external.sha256  # built from the pinned archive
    out, applied = run_sealed(docker_client, harness_image_ref.id, lab_image_ref.id, lab_cell)
    try:
        assert (applied.read_only, applied.user, applied.cap_drop) == (True, "10001:10001", ["ALL"])
        assert applied.network_mode.startswith("container:")
        sealed = comparable(out)
        console = (out / "console.txt").read_text()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert "Summary: 3/5 passed" in console

    CannedOllama.lisbon = lisbon_answer(PROJECT_ROOT / "fixtures")
    server = ThreadingHTTPServer(("127.0.0.1", 0), CannedOllama)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        project = next(p.parent.parent for p in lab_code.rglob("__main__.py") if p.parent.name == "local_agent_bench")
        done = run_driver(project, tmp_path / "host", f"http://127.0.0.1:{server.server_address[1]}", tmp_path / "w")
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-2000:]
    host = comparable(tmp_path / "host")
    assert sealed == host  # the same per-task results, and the same answers from the fixture hosts
