"""LAB run directly, outside repro, against the same sealed engine gives the cell's per-task results.

The repro project's stand-in for Local Agent Bench (tests/standins/local_agent_bench/, our own code
with LAB's command line and result file; not LAB) runs its benchmark that needs no network
(`benchmarks/files.json`) twice on the real Ollama (0.11.4 from its Go module, Qwen2.5-Coder-0.5B):

- through repro: `repro matrix run` of tests/external/lab-standin.yaml with that benchmark (its image,
  the driver, the sandbox, the bundle);
- directly, as a user runs LAB: `python3 -m local_agent_bench run --runtime raw-ollama-react --model M
  --benchmark benchmarks/files.json --output FILE --skip-preflight` from LAB's unpacked folder, in a
  plain container of the harness image (Debian's python3) joined to a freshly booted engine of the
  same image, model, profile and decoding, gated as a run gates it. LAB's folder sits at the path the
  driver gives it (`/tmp/lab/local-agent-bench`): its `get_cwd` tool tells the model the path, so
  another path is another prompt. `--skip-preflight`, as the issue's own run outside repro: its
  preflight asks an `ollama` command a plain container lacks (it makes no chat request).

Every task's score, reason, final answer, tool calls and transcript are the same. Nothing measured here
says anything about LAB."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from repro.containers import lifecycle as containers
from repro.core.config import PROJECT_ROOT
from repro.engines.gate import run_gate
from repro.engines.registry import engine_for
from repro.run.group import GATE_PROTOCOL
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.images import engine_image
from tests.e2e.conftest import make_snapshot
from tests.external.conftest import run_lab_matrix
from tests.fixtures.docker import TEST_RUN_ID, run_labels

pytestmark = [pytest.mark.docker, pytest.mark.engine]
MATRIX = "tests/external/lab-standin-files.yaml"
KEPT = ("task_id", "score", "failure_reason", "final_answer", "tool_calls", "raw_transcript", "assertion_results")


def files_matrix() -> str:
    data = yaml.safe_load((PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml").read_text())
    data["name"] = "lab-standin-files"
    data["suites"][0].update(id="lab-files", path="benchmarks/files.json")
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def through_repro(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, lab_mirror) -> dict:
    project = make_snapshot(tmp_path_factory.mktemp("lab-files") / "project", {MATRIX: files_matrix()})
    run_dir = run_lab_matrix(project, canary_home, MATRIX)
    [cell] = sorted((run_dir / "cells").iterdir())
    return json.loads((cell / "raw.result.json").read_text())


def run_directly(client, harness_image_ref, qwen_gguf: Path, lab_folder: Path, out: Path) -> dict:
    """A fresh engine booted and gated as a run does, LAB's own command line in a plain container joined to it."""
    loaded = load_matrix(PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml").matrix  # the same engine and model
    spec, model, profile = loaded.engines[0], loaded.models[0], load_profiles().get("cpu")
    image = engine_image(spec, "cpu", client)
    engine = engine_for(client, spec, probe_image=harness_image_ref.id, run_id=TEST_RUN_ID, group_id="lab-direct")
    handle = engine.start(engine.boot_spec(image.id, model, qwen_gguf, profile, loaded.decoding, profile_name="cpu"))
    try:
        gate = run_gate(
            client,
            handle,
            profile=profile,
            settings=loaded.latency_gate,
            decoding=loaded.decoding,
            protocol=GATE_PROTOCOL,
            probe_image=harness_image_ref.id,
        )
        assert gate.passed, gate.reason
        lab = "mkdir -p /tmp/lab && cp -r /src /tmp/lab/local-agent-bench && cd /tmp/lab/local-agent-bench && "
        lab += f"exec python3 -m local_agent_bench run --runtime raw-ollama-react --model {handle.model_name} "
        lab += "--benchmark benchmarks/files.json --output /out/result.json --skip-preflight"
        kwargs = {
            "image": harness_image_ref.id,
            "entrypoint": ["/bin/sh", "-c", lab],
            "network_mode": f"container:{engine.container(handle).id}",
            "environment": {"OLLAMA_BASE_URL": "http://127.0.0.1:11434", "HOME": "/tmp/home"},
            "volumes": {str(lab_folder): {"bind": "/src", "mode": "ro"}, str(out): {"bind": "/out", "mode": "rw"}},
            "labels": run_labels(),
            "detach": True,
        }
        with containers.started(client, kwargs) as container:
            ended = containers.wait(container, 900)
        assert ended.code == 1 and (out / "result.json").is_file(), ended.log_tail  # LAB: 1 when a task failed
        return json.loads((out / "result.json").read_text())
    finally:
        engine.stop(handle)


def test_lab_run_directly_gives_the_cells_per_task_results(
    through_repro, docker_client, harness_image_ref, qwen_gguf, tmp_path: Path
) -> None:
    from tests.standins import pack_lab

    archive = tmp_path / "lab.tar"
    pack_lab(archive)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    direct = run_directly(docker_client, harness_image_ref, qwen_gguf, tmp_path / "unpacked" / "local-agent-bench", out)
    cell = [{k: task[k] for k in KEPT} for task in through_repro["results"]]
    assert [t["task_id"] for t in cell] == ["fs_where", "fs_readme", "fs_codename"]
    assert [{k: task[k] for k in KEPT} for task in direct["results"]] == cell
