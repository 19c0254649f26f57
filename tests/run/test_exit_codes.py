"""Exit codes of `repro matrix run`, `--resume` rerunning engine faults, and the healing loop,
checked without an engine: the steps that need Docker are replaced by fakes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

import repro.run.context as context_module
import repro.run.group as group_module
import repro.run.outcome as outcome_module
import repro.run.resume as resume_module
import repro.run.runner as run_module
from repro.__main__ import main
from repro.bundle.layout.loading import load_cell, load_run
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import CellRecord, CellSummary, EngineFault, utc_now
from repro.bundle.redact import Redactor
from repro.containers.sandbox import EngineDied
from repro.engines.base import EngineHandle
from repro.plan.planner import make_plan
from repro.run.healing import MAX_BOOTS, EngineLost
from repro.run.progress import RunProgress
from repro.spec.findings import GateResult, SandboxSettings
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.chat_template import derive_facts
from repro.store.images import ImageRef
from repro.suites.registry import select
from tests.fixtures.synthetic import CANARY, STANDIN_TEMPLATE, reported_template, result, write_bundle

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ImageRef(name="x", reference="repro/x:k", key="k", id="sha256:" + "1" * 64, pinned_by="content-key")
OOM_FAULT = EngineFault(
    noticed_at="2026-01-01T00:00:00Z",
    cause="the engine container stopped",
    status="exited",
    exit_code=137,
    oom_killed=True,
)


# ---------------------------------------------------------------- exit status of a bundle


def rewrite_cell(run_dir: Path, cell_id: str, **update) -> None:
    bundle = Bundle(run_dir, Redactor(CANARY))
    record = load_cell(run_dir / "cells" / cell_id)
    writer = bundle.start_cell(cell_id)
    writer.write_jsonl("scenarios.jsonl", update.pop("rows", []))
    writer.finish(record.model_copy(update=update))


def first_cell(run_dir: Path) -> str:
    return load_run(run_dir).planned_cells[0]


def test_clean_complete_run_exits_0(tmp_path):
    assert outcome_module.run_exit_status(write_bundle(tmp_path / "run1")) == 0


@pytest.mark.parametrize(
    "update",
    [
        {"status": "error", "reason": "engine fault: gone"},
        {"status": "excluded", "reason": "latency gate: too slow"},
    ],
)
def test_engine_fault_or_gate_exclusion_exits_1(tmp_path, update):
    run_dir = write_bundle(tmp_path / "run1")
    rewrite_cell(run_dir, first_cell(run_dir), **update)
    assert outcome_module.run_exit_status(run_dir) == 1


def test_done_cell_with_engine_fault_scenarios_exits_1(tmp_path):
    run_dir = write_bundle(tmp_path / "run1")
    rows = [result("notes-001", "notes", False, "engine_error", engine_fault=True)]
    summary = load_cell(run_dir / "cells" / first_cell(run_dir)).summary.model_copy(update={"engine_faults": 1})
    rewrite_cell(run_dir, first_cell(run_dir), rows=rows, summary=summary)
    assert outcome_module.run_exit_status(run_dir) == 1


def test_missing_cell_and_interrupted_run(tmp_path):
    run_dir = write_bundle(tmp_path / "run1")
    bundle = Bundle(run_dir, Redactor(CANARY))
    record = load_run(run_dir)
    bundle.write_run(record.model_copy(update={"planned_cells": [*record.planned_cells, "never-ran"]}))
    assert outcome_module.run_exit_status(run_dir) == 1
    bundle.write_run(record.model_copy(update={"status": "interrupted"}))
    assert outcome_module.run_exit_status(run_dir) == 130


# ---------------------------------------------------------------- the command's exit status


def run_command(tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "matrix",
            "run",
            str(ROOT / "matrix" / "smoke.yaml"),
            "--profile",
            "cpu",
            "--out",
            str(tmp_path / "results"),
            *extra,
        ]
    )


def test_command_exit_codes(tmp_path, monkeypatch):
    clean = write_bundle(tmp_path / "clean")
    monkeypatch.setattr(run_module, "run_matrix", lambda options, progress: clean)
    assert run_command(tmp_path) == 0
    faulty = write_bundle(tmp_path / "faulty")
    rewrite_cell(faulty, first_cell(faulty), status="error", reason="engine fault: gone")
    monkeypatch.setattr(run_module, "run_matrix", lambda options, progress: faulty)
    assert run_command(tmp_path) == 1


def test_interrupt_exits_130_and_bad_input_exits_2(tmp_path, monkeypatch):
    def interrupted(options, progress):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "run_matrix", interrupted)
    assert run_command(tmp_path) == 130
    monkeypatch.undo()
    assert (
        main(
            [
                "matrix",
                "run",
                str(ROOT / "matrix" / "smoke.yaml"),
                "--profile",
                "no-such-profile",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert (
        main(["matrix", "run", str(tmp_path / "missing.yaml"), "--profile", "cpu", "--out", str(tmp_path / "r")]) == 2
    )


# ---------------------------------------------------------------- resume and healing, with fakes


# The group's engine reports the chat template the run recorded for its model (a stand-in here).
STANDIN_FACTS = derive_facts(STANDIN_TEMPLATE, "gguf", ["<|im_end|>"], ["<|im_start|>", "<|im_end|>"])


def prepared(tmp_path: Path) -> context_module.Prepared:
    profiles = load_profiles()
    loaded = load_matrix(ROOT / "matrix" / "smoke.yaml")
    plan = make_plan(loaded, "cpu", profiles.get("cpu"))
    return context_module.Prepared(
        loaded=loaded,
        plan=plan,
        profile=profiles.get("cpu"),
        cells=plan.cells,
        harness=IMAGE,
        engines={c.engine.id: IMAGE for c in plan.cells},
        models={c.model.id: tmp_path / "model.gguf" for c in plan.cells},
        suites={c.suite.id: select(c.suite) for c in plan.cells},
        templates={m.id: STANDIN_FACTS for m in loaded.matrix.models},
    )


class UnusedDocker:
    """A stand-in Docker client for tests whose engine steps are all replaced: a call is a test bug."""

    containers = images = api = None

    def ping(self) -> bool:
        raise AssertionError("this test must not reach Docker")

    info = version = close = ping


def context(tmp_path: Path) -> tuple[context_module.RunContext, io.StringIO]:
    output = io.StringIO()
    progress = RunProgress(Console(file=output, width=200))
    ctx = context_module.RunContext(
        client=UnusedDocker(),
        prepared=prepared(tmp_path),
        bundle=Bundle(tmp_path / "run", Redactor()),
        run_id="r1",
        progress=progress,
    )
    return ctx, output


def group(identity: str = "b11434-src-b0a2feb6", container_id: str = "old") -> context_module.GroupEngine:
    handle = EngineHandle(
        engine_id="llamacpp",
        kind="llama.cpp",
        container_id=container_id,
        container_name=container_id,
        image_reference="repro/x:k",
        image_id=IMAGE.id,
        probe_image_id=IMAGE.id,
        port=8080,
        base_url="http://127.0.0.1:8080",
        model_id="m",
        model_sha256="0" * 64,
        model_name="m",
        api="openai",
        identity=identity,
        expected_identity=identity,
        profile="cpu",
        run_id="r1",
        sandbox=SandboxSettings(),
        settings=reported_template(STANDIN_FACTS),
    )
    return context_module.GroupEngine(handle=handle, gate=GateResult(passed=True, reason="ok"))


@pytest.fixture()
def no_docker(monkeypatch):
    stopped: list[str] = []
    monkeypatch.setattr(
        group_module, "stop_engine", lambda client, handle: stopped.append(handle.container_id) if handle else None
    )
    monkeypatch.setattr(group_module, "wait_for_daemon", lambda client: True)
    return stopped


def test_a_dead_engine_is_healed_and_the_whole_cell_rerun(tmp_path, monkeypatch, no_docker):
    ctx, output = context(tmp_path)
    cell = ctx.prepared.cells[0]
    calls: list[str] = []

    def fake_run_cell(ctx, cell, group, incidents=None):
        calls.append(group.handle.container_id)
        if len(calls) == 1:
            raise EngineLost(OOM_FAULT)
        return CellRecord(cell=cell, status="done", engine_incidents=list(incidents or []), finished_at=utc_now())

    monkeypatch.setattr(group_module, "run_cell", fake_run_cell)
    monkeypatch.setattr(group_module, "boot_and_gate", lambda ctx, cell, booted: group(container_id="new"))
    record, healthy = group_module.run_healing(ctx, cell, group(), [])
    assert calls == ["old", "new"] and healthy.handle.container_id == "new" and no_docker == ["old"]
    assert record.status == "done" and len(record.engine_incidents) == 1
    incident = record.engine_incidents[0]
    assert incident.healed and incident.fault.exit_code == 137 and incident.fault.oom_killed
    assert incident.attempts[0].healed and incident.attempts[0].gate_passed
    text = output.getvalue()
    assert "exited with status 137 (OOM-killed)" in text and "rerunning" in text


def test_an_engine_that_cannot_be_healed_ends_its_group_as_engine_faults(tmp_path, monkeypatch, no_docker):
    ctx, output = context(tmp_path)
    cells = [
        c
        for c in ctx.prepared.cells
        if (c.engine.id, c.model.id) == (ctx.prepared.cells[0].engine.id, ctx.prepared.cells[0].model.id)
    ]
    boots: list[int] = []

    def fake_boot(ctx, cell, booted):
        boots.append(1)
        if len(boots) == 1:
            return group()
        raise EngineDied("engine llamacpp did not start: no memory")

    def dying_cell(ctx, cell, group, incidents=None):
        raise EngineLost(OOM_FAULT)

    monkeypatch.setattr(group_module, "boot_and_gate", fake_boot)
    monkeypatch.setattr(group_module, "run_cell", dying_cell)
    group_module.run_group(ctx, cells)
    assert len(boots) == 1 + MAX_BOOTS
    records = [load_cell(ctx.bundle.cell_dir(c.id)) for c in cells]
    assert all(r.status == "error" and r.reason.startswith("engine fault") for r in records)
    first = records[0]
    assert not first.engine_incidents[0].healed and len(first.engine_incidents[0].attempts) == MAX_BOOTS
    assert "could not be booted again" in output.getvalue() and "going on with the next group" in output.getvalue()
    assert not any(resume_module.cell_is_kept(ctx, c.id) for c in cells)  # --resume reruns them


def test_resume_keeps_clean_cells_and_reruns_engine_faults(tmp_path):
    ctx, _ = context(tmp_path)
    clean, other = ctx.prepared.cells[:2]
    summary = CellSummary(passed=0, total=1, by_category={"notes": (0, 1)}, engine_faults=1)
    ctx.bundle.start_cell(clean.id).finish(CellRecord(cell=clean, status="done"))
    ctx.bundle.start_cell(other.id).finish(CellRecord(cell=other, status="done", summary=summary))
    assert resume_module.cell_is_kept(ctx, clean.id)
    assert not resume_module.cell_is_kept(ctx, other.id)  # done, but with engine-fault scenarios
    ctx.bundle.start_cell(other.id).finish(CellRecord(cell=other, status="error", reason="engine fault"))
    assert not resume_module.cell_is_kept(ctx, other.id)


# ---------------------------------------------------------------- a Docker daemon restarted mid-run


def daemon_gone() -> Exception:
    import requests

    return requests.exceptions.ConnectionError(
        ("Connection aborted.", FileNotFoundError(2, "No such file or directory"))
    )


def test_a_daemon_that_stops_answering_mid_cell_is_an_engine_fault():
    from repro.run.healing import blame_engine

    with pytest.raises(EngineLost, match="the Docker daemon stopped answering"), blame_engine(lambda: None):
        raise daemon_gone()
    with pytest.raises(ValueError), blame_engine(lambda: None):
        raise ValueError("not the daemon")


def test_healing_waits_for_the_daemon_and_counts_its_silence_as_a_failed_attempt():
    from repro.run.healing import heal

    answers = iter([False, True])
    healed, incident = heal(
        OOM_FAULT, lambda: group(container_id="new"), lambda g: None, lambda text: None, daemon=lambda: next(answers)
    )
    assert healed is not None and incident.healed
    assert [a.reason for a in incident.attempts][0] == "the Docker daemon did not answer"

    def boot_without_daemon():
        raise daemon_gone()

    healed, incident = heal(OOM_FAULT, boot_without_daemon, lambda g: None, lambda text: None)
    assert healed is None and all("the Docker daemon did not answer" in a.reason for a in incident.attempts)


def test_a_group_whose_first_boot_meets_no_daemon_ends_as_engine_faults(tmp_path, monkeypatch, no_docker):
    ctx, _ = context(tmp_path)
    cells = ctx.prepared.cells[:1]

    def boot_without_daemon(ctx, cell, booted):
        raise daemon_gone()

    monkeypatch.setattr(group_module, "boot_and_gate", boot_without_daemon)
    group_module.run_group(ctx, cells)
    record = load_cell(ctx.bundle.cell_dir(cells[0].id))
    assert record.status == "error" and record.reason.startswith("engine: the Docker daemon did not answer")


def test_the_bundle_is_closed_even_when_the_daemon_is_gone_at_the_end(tmp_path, monkeypatch):
    ctx, _ = context(tmp_path)

    def cleanup_without_daemon(run_id):
        raise daemon_gone()

    monkeypatch.setattr(run_module, "cleanup_run", cleanup_without_daemon)
    record = load_run(write_bundle(tmp_path / "written")).model_copy(update={"run_id": "r1", "status": "running"})
    monkeypatch.setattr(run_module, "source_at_end", lambda source: source)
    run_module.finish_run(ctx, record, tmp_path)
    closed = load_run(ctx.bundle.dir)
    assert closed.status == "failed" and closed.leaked_containers[0].startswith(
        "unknown: the Docker daemon did not answer"
    )
    assert "repro cleanup --run-id r1" in closed.leaked_containers[0]
