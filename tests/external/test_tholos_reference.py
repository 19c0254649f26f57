"""The reference claim's pieces without Docker: the scripted engine, served from the scenario
archive (as the `scripted` engine kind serves its model file), answers the Tholos runner's prompt
layout with each scenario's reference steps, an approval and its denied twin told apart (shown on
the repro project's stand-in for Tholos-Bench's runner, tests/standins/tholos_runner/, our own code
with the runner's prompt layout; the published claim, 160 of 160 through the real runner, is
paper/published/tholos-reference-cpu*); the archive is read bounded, links refused; the matrix plans
its two cells; the archive is fetched as a model from a source mirror by its sha256."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from harness.model.scenario import ScenarioError
from harness.testing.scripted_engine import ScriptedEngine
from harness.testing.scripts import runner_errors, scenarios_at
from repro.core.config import PROJECT_ROOT
from repro.plan.planner import make_plan
from repro.spec.loading import load_matrix
from repro.spec.matrix import EngineSpec
from repro.spec.profiles import load_profiles
from repro.store import models
from repro.store.sources import MIRROR_ENV
from repro.suites.sources import pack_folder
from tests.external.tholos_support import PEERS, run_direct

MATRIX = PROJECT_ROOT / "matrix" / "tholos-reference.yaml"
# approval-001 and approval-008 share trigger and agent; the owner approves one, denies the other.
IDS = ["approval-001", "approval-008", "ask-001", "conflict-001", "follow_up-001", "web_research-001"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    if not (PEERS / "tholos-bench").is_dir():
        pytest.skip(f"the Tholos-Bench scenarios are not at {PEERS} (set REPRO_TEST_PEERS)")
    path = tmp_path_factory.mktemp("mirror") / "tholos-bench.tar"
    pack_folder(PEERS / "tholos-bench", path)
    return path


def test_the_stand_in_passes_the_reference_steps_served_from_the_archive(
    tholos_sources, archive: Path, tmp_path: Path
) -> None:
    """The stand-in runner, run directly, against the scripted engine serving the packed archive:
    the six pass with no invalid step, and approval-008 (denied) is told apart from approval-001
    (approved) by the refused step its requests show."""
    code_root, scenarios = tholos_sources
    with ScriptedEngine(archive) as engine:
        assert len(engine.library) == 160
        results = run_direct(code_root, scenarios, tmp_path, IDS, engine.base_url, model="tholos-reference")
    assert sorted(results) == sorted(IDS)
    assert all(r["passed"] and r["invalid_json_count"] == 0 and r["status"] == "done" for r in results.values()), (
        results
    )
    assert results["approval-008"]["steps"] == 2  # denied: the twin's table_add was not played


def test_runner_errors_reads_which_steps_were_refused() -> None:
    step = {"role": "assistant", "content": "{}"}
    messages = [
        {"role": "system", "content": "You are Scout, an agent"},
        {"role": "user", "content": "Now: x\nTask #1 from you: t"},
        step,
        {"role": "user", "content": '<tool_response>\n{"rows":[]}\n</tool_response>'},
        step,
        {"role": "user", "content": '<tool_response>\n{"error":"the owner denied this"}\n</tool_response>'},
        step,
    ]
    assert runner_errors(messages) == [False, True, False]


def archive_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "bad.tar"
    with tarfile.open(path, "w") as tar:
        tar.addfile(member, io.BytesIO(data) if data else None)
    return path


def test_the_archive_is_read_bounded_and_links_are_refused(tmp_path: Path) -> None:
    link = tarfile.TarInfo("scenarios/a.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(ScenarioError, match="not a regular file"):
        scenarios_at(archive_with(tmp_path, link))
    big = tarfile.TarInfo("scenarios/b.json")
    big.size = 2 * 1024**2
    with pytest.raises(ScenarioError, match="over"):
        scenarios_at(archive_with(tmp_path, big, b" " * big.size))


def test_the_matrix_plans_the_runner_and_our_harness_against_the_scripted_engine() -> None:
    loaded = load_matrix(MATRIX)
    plan = make_plan(loaded, "cpu", load_profiles().get("cpu"))
    assert sorted(c.suite.id for c in plan.cells) == ["tholos-bench", "tholos-runner"] and not plan.excluded
    assert {c.engine.kind for c in plan.cells} == {"scripted"}
    model = loaded.matrix.models[0]
    assert model.sha256 == loaded.matrix.suites[0].source.sha256  # the model is the suite's archive


@pytest.mark.parametrize("pin", [{"image": "x/y@sha256:" + "0" * 64}, {"build_info": "b1"}, {"version": "1"}])
def test_a_scripted_engine_takes_no_image_or_build_pin(pin: dict) -> None:
    with pytest.raises(ValueError, match="harness image"):
        EngineSpec.model_validate({"id": "reference", "kind": "scripted", "label": "reference", **pin})


def test_the_archive_is_fetched_as_a_model_from_a_mirror_by_sha256(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_matrix(MATRIX).matrix.models[0]
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    with pytest.raises(models.ModelError, match="no file at"):
        models.fetch(spec, cache=tmp_path / "cache", base_dir=tmp_path)
    monkeypatch.setenv(MIRROR_ENV, str(archive.parent))
    stored = models.fetch(spec, cache=tmp_path / "cache", base_dir=tmp_path)
    assert stored.path.read_bytes() == archive.read_bytes() and stored.source == "mirror:tholos-bench.tar"


@pytest.mark.docker
def test_the_sealed_runner_passes_the_reference_served_by_the_scripted_engine_kind(
    docker_client, harness_image_ref, tholos_sources, archive: Path
) -> None:
    """The `scripted` engine kind booted as a run boots it (its identity checked), the runner image
    built from the stand-in's pinned archive joined to its namespace with a cell's harness settings
    (the command line the reference matrix's runner cell gets): a handful of files pass."""
    from repro.containers import lifecycle as containers
    from repro.containers.sandbox import bind, container_name, harness_kwargs
    from repro.engines.base import stop_engine
    from repro.engines.boot import BootSpec
    from repro.engines.registry import boot_engine
    from repro.run.cell import harness_output_dir
    from repro.suites.base import SCENARIO_MOUNT
    from repro.suites.external.base import adapter_of
    from repro.suites.registry import kind_of
    from tests.external.tholos_support import results_by_id, runner_suite

    _, scenarios = tholos_sources
    loaded, profile = load_matrix(MATRIX), load_profiles().get("cpu")
    cell = next(c for c in make_plan(loaded, "cpu", profile).cells if c.suite.external is not None)
    cell = cell.model_copy(update={"suite": cell.suite.model_copy(update={"ids": IDS})})
    image = kind_of(runner_suite()).build_image(runner_suite(), harness_image_ref, lambda line: None)
    assert image is not None
    run_id, out = "tholos-reference-test", harness_output_dir()
    boot = BootSpec(
        spec=cell.engine, image=harness_image_ref, probe_image=harness_image_ref, model=cell.model, gguf=archive,
        profile=profile, profile_name="cpu", decoding=loaded.matrix.decoding, run_id=run_id,
    )  # fmt: skip
    handle = boot_engine(docker_client, boot)
    try:
        assert handle.identity == "scripted-engine" and handle.sandbox.network_mode == "none"
        command = adapter_of(cell.suite).task_argv(cell, handle.client_argv(), IDS, profile)
        mounts = [bind(scenarios, SCENARIO_MOUNT, read_only=True)]
        kwargs = harness_kwargs(
            image.id,
            handle.container_id,
            command,
            out,
            run_id=run_id,
            cell_id=cell.id,
            mounts=mounts,
            name=container_name(run_id, "harness"),
        )
        kwargs["entrypoint"] = kind_of(cell.suite).entrypoint(cell)
        with containers.started(docker_client, kwargs) as container:
            ended = containers.wait(container, 600)
        assert ended.code == 0, ended.log_tail
        results = results_by_id(out / "results.jsonl")
    finally:
        stop_engine(docker_client, handle)
        shutil.rmtree(out, ignore_errors=True)
    assert sorted(results) == sorted(IDS) and all(r["passed"] for r in results.values()), results


def test_a_paced_engine_reports_real_durations_within_checks_bounds(archive: Path) -> None:
    import time

    import httpx

    from harness.protocols.base import PROBE_TASK

    body = {"model": "m", "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": PROBE_TASK}]}
    with ScriptedEngine(archive, pace=1000.0) as engine:
        started = time.monotonic()
        timings = httpx.post(engine.base_url + "/v1/chat/completions", json=body, timeout=30).json()["timings"]
        took_ms = (time.monotonic() - started) * 1000
    assert timings["predicted_ms"] >= timings["predicted_n"]  # at most 1000 tokens a second
    assert timings["predicted_per_second"] <= 1000.0 and timings["prompt_ms"] + timings["predicted_ms"] <= took_ms
