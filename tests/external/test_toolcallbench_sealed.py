"""The fidelity proof: ToolCallBench's scripted backend run through repro (its pinned image, in
a harness container sealed as a cell's is, its raw outputs collected, normalised and checked as
a run does) gives the same outcome for every task as ToolCallBench itself on the host, outside
repro, from the same wheels. No engine is started (the scripted backend needs none), so the
container has no network at all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repro.containers import lifecycle as containers
from repro.containers.sandbox import container_name, harness_kwargs, harness_settings, read_back
from repro.run.cell import harness_output_dir
from repro.suites.registry import kind_of
from tests.external.conftest import ALL_TASKS, collect_cell, run_direct, tcb_cell, tcb_suite
from tests.external.test_toolcallbench import RECOMPUTING, evidence, outcomes

pytestmark = [pytest.mark.docker]
RUN_ID = "toolcallbench-fidelity"


@pytest.fixture(scope="module")
def tcb_image_ref(docker_client, harness_image_ref, tcb_wheels):

    return kind_of(tcb_suite()).build_image(tcb_suite(), harness_image_ref, lambda line: None)


def run_sealed(client, image_id: str, profile: str, tasks: list[str]) -> tuple[Path, object]:
    """The driver in the suite's image with a cell's harness settings, network none; its output folder."""
    cell = tcb_cell(tasks)
    out_dir = harness_output_dir()
    command = ["--out", "/out", "--tasks", ",".join(tasks), "--backend", "scripted", "--profile", profile]
    settings = harness_settings(run_id=RUN_ID, cell_id=cell.id, engine_id="none").with_(network_mode="none")
    kwargs = harness_kwargs(
        image_id,
        "none",
        command,
        out_dir,
        run_id=RUN_ID,
        cell_id=cell.id,
        settings=settings,
        name=container_name(RUN_ID, "harness"),
    )
    kwargs["entrypoint"] = kind_of(cell.suite).entrypoint(cell)
    with containers.started(client, kwargs) as container:
        ended = containers.wait(container, 900)
        applied = read_back(container)
    assert ended.code == 0, ended.log_tail
    return out_dir, applied


@pytest.mark.parametrize("profile", ["oracle", "bad_edit"])
def test_scripted_toolcallbench_through_repro_matches_toolcallbench_itself(
    docker_client, tcb_image_ref, tcb_python, tmp_path: Path, profile: str
) -> None:
    out_dir, applied = run_sealed(docker_client, tcb_image_ref.id, profile, ALL_TASKS)
    try:
        assert (applied.read_only, applied.network_mode, applied.user, applied.cap_drop) == (
            True,
            "none",
            "10001:10001",
            ["ALL"],
        )
        record = collect_cell(tmp_path / "run", tcb_cell(ALL_TASKS), [out_dir])
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    assert record.status == "done", record.reason
    (tmp_path / "direct").mkdir()
    direct = run_direct(tcb_python, tmp_path / "direct", profile, ALL_TASKS)
    through_repro = outcomes(tmp_path / "run" / "cells" / record.cell.id)
    assert through_repro == direct
    assert any(not passed for passed, _ in direct.values()) == (profile != "oracle")
    ev = evidence(tmp_path / "run", record)
    assert [problem for rule in RECOMPUTING for problem in rule(ev)] == []
