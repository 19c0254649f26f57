"""A busy machine: the latency gate measures again after a pause and says what used the cores,
`--resume` gates the cells it excluded again, and the exit line says exactly what to run. Without
an engine: the gate probe and the pause are fakes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import repro.core.busy as busy
import repro.engines.gate as gate_module
import repro.run.outcome as outcome_module
import repro.run.resume as resume_module
import repro.run.runner as run_module
from harness.contracts import GateAttempt
from repro.__main__ import main
from repro.bundle.records import CellRecord
from repro.spec.findings import GateResult
from repro.spec.profiles import load_profiles
from tests.run.test_exit_codes import ROOT, context, first_cell, rewrite_cell, write_bundle

PROFILE = load_profiles().get("cpu")


def measured(*, fast: bool, valid: bool = True) -> GateResult:
    tps = PROFILE.gate.min_tokens_per_second * (4 if fast else 0.3)
    attempts = [GateAttempt(seconds=1.0, tokens_per_second=tps, valid_step=valid, ok=fast and valid) for _ in range(3)]
    return GateResult(
        passed=fast and valid, reason="fast" if fast and valid else "only 0 of 3 attempts passed", attempts=attempts
    )


@pytest.fixture()
def gate_runs(monkeypatch):
    """The gate's probe replaced by a queue of measurements; the pause takes no time."""
    queue: list[GateResult] = []
    pauses: list[float] = []
    monkeypatch.setattr(
        gate_module,
        "pause_and_look",
        lambda seconds: pauses.append(seconds) or busy.MachineLoad(load_1min=3.9, cores=2),
    )
    return queue, pauses


def retry(queue: list[GateResult], notes: list[str]) -> GateResult:
    return gate_module.gate_with_retries(lambda: queue.pop(0), PROFILE, note=notes.append)


def test_a_slow_gate_is_measured_again_after_a_pause_and_may_pass(gate_runs):
    queue, pauses = gate_runs
    queue += [measured(fast=False), measured(fast=True)]
    notes: list[str] = []
    gate = retry(queue, notes)
    assert (
        gate.passed and gate.earlier == ["only 0 of 3 attempts passed"] and pauses == [gate_module.GATE_RETRY_PAUSE_S]
    )
    assert any("measuring again" in n for n in notes) and any("load average 3.9 on 2 cores" in n for n in notes)


def test_retries_are_bounded_and_only_for_a_slow_engine(gate_runs):
    queue, pauses = gate_runs
    queue += [measured(fast=False) for _ in range(gate_module.GATE_RETRIES + 1)]
    gate = retry(queue, [])
    assert not gate.passed and len(gate.earlier) == gate_module.GATE_RETRIES and not queue
    queue += [measured(fast=True, valid=False)]  # fast, but no valid step: a pause would not help
    pauses.clear()
    assert not retry(queue, []).passed and pauses == []


def test_the_pause_names_the_processes_that_used_the_cores():
    before = {1: ("stress", 10.0), 2: ("idle", 5.0), os.getpid(): ("me", 1.0)}
    after = {1: ("stress", 11.9), 2: ("idle", 5.01), os.getpid(): ("me", 9.0), 3: ("new", 1.0)}
    uses = busy.busiest(before, after, 1.0)
    assert [(u.name, u.cores) for u in uses] == [("stress", 1.9)]
    text = busy.MachineLoad(load_1min=2.5, cores=2, busiest=uses).describe()
    assert text == "load average 2.5 on 2 cores; busiest: stress (pid 1) 1.9 cores"
    assert busy.pause_and_look(0.01).cores == os.cpu_count()  # the real /proc, read without error


def test_resume_gates_again_a_cell_the_gate_excluded(tmp_path):
    ctx, output = context(tmp_path)
    slow, template = ctx.prepared.cells[:2]
    ctx.bundle.start_cell(slow.id).finish(
        CellRecord(cell=slow, status="excluded", reason="latency gate: slow", gate=measured(fast=False))
    )
    ctx.bundle.start_cell(template.id).finish(
        CellRecord(cell=template, status="excluded", reason="template", gate=measured(fast=True))
    )
    assert not resume_module.cell_is_kept(ctx, slow.id)
    assert resume_module.cell_is_kept(ctx, template.id)  # excluded by the engine's template: a rerun changes nothing
    assert f"gate again {slow.id}" in output.getvalue()


def test_the_exit_line_says_why_and_what_to_run(tmp_path, monkeypatch, capsys):
    run_dir = write_bundle(tmp_path / "run1")
    rewrite_cell(
        run_dir, first_cell(run_dir), status="excluded", reason="latency gate: slow", gate=measured(fast=False)
    )
    monkeypatch.setattr(run_module, "run_matrix", lambda options, progress: run_dir)
    out = tmp_path / "my results"
    assert (
        main(
            [
                "matrix",
                "run",
                str(ROOT / "matrix" / "smoke.yaml"),
                "--profile",
                "cpu",
                "--out",
                str(out),
                "--shard",
                "1/1",
            ]
        )
        == 1
    )
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("run incomplete (exit 1): 1 cell(s) excluded by the latency gate")
    assert (
        f"when the machine is quiet, run: repro matrix run {ROOT / 'matrix' / 'smoke.yaml'} --profile cpu --out "
        f"'{out}' --resume --shard 1/1" in line
    )


@pytest.mark.parametrize("shard", ["", "¹/²", "1/2\n", "x"])
def test_a_shard_that_is_not_ascii_i_of_n_is_bad_input(tmp_path, capsys, shard):
    assert (
        main(
            [
                "matrix",
                "run",
                str(ROOT / "matrix" / "smoke.yaml"),
                "--profile",
                "cpu",
                "--out",
                str(tmp_path),
                "--shard",
                shard,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected i/n" in err[0]


@pytest.mark.parametrize("replicas", ["²", "0", "-1", "9" * 4000])
def test_a_bad_replicas_count_is_bad_input(tmp_path, capsys, replicas):
    assert (
        main(
            [
                "matrix",
                "run",
                str(ROOT / "matrix" / "smoke.yaml"),
                "--profile",
                "cpu",
                "--out",
                str(tmp_path),
                "--replicas",
                replicas,
            ]
        )
        == 2
    )
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_setup_script_goes_on_after_an_incomplete_run():
    up = (Path(ROOT) / "scripts" / "up").read_text()
    assert "|| RUN_STATUS=$?" in up and "grep '^run incomplete'" in up


# ---------------------------------------------------------------- the cause a gate measured


def cut_off(*, fast: bool = True) -> GateResult:
    """SmolLM2 at one thread: every probe reply a JSON step cut off mid-string (0 of 3 valid)."""
    tps = PROFILE.gate.min_tokens_per_second * (4 if fast else 0.3)
    attempts = [
        GateAttempt(seconds=1.0, tokens_per_second=tps, valid_step=False, problem="unterminated string")
        for _ in range(3)
    ]
    gate = GateResult(passed=False, reason="only 0 of 3 attempts passed", attempts=attempts)
    return gate.model_copy(update={"attempts": [a.model_copy(update={"ok": False}) for a in attempts]})


@pytest.mark.parametrize(
    ("gate", "cause"),
    [
        (measured(fast=False), "too_slow"),
        (cut_off(), "invalid_reply"),
        (cut_off(fast=False), "invalid_reply"),  # slow too, but a faster machine would not make it valid
        (GateResult(passed=False, reason="engine fault: x", engine_fault=True), "engine_fault"),
        (measured(fast=True), None),
    ],
)
def test_a_failed_gate_records_the_cause_it_measured(gate, cause):
    assert gate_module.gate_cause(gate, PROFILE) == cause


def test_an_invalid_reply_is_not_retried_and_keeps_its_cause(gate_runs):
    queue, pauses = gate_runs
    queue += [cut_off(fast=False).model_copy(update={"cause": "invalid_reply"})]
    gate = retry(queue, [])
    assert gate.cause == "invalid_reply" and pauses == []


def test_a_slow_gate_on_a_busy_machine_is_told_from_a_slow_engine(monkeypatch):
    slow = measured(fast=False).model_copy(update={"cause": "too_slow"})
    hog = busy.ProcessUse(name="stress", pid=1, cores=1.9)
    for busiest, cause in (([hog], "busy"), ([], "too_slow")):
        monkeypatch.setattr(
            gate_module,
            "pause_and_look",
            lambda seconds, found=busiest: busy.MachineLoad(load_1min=1.0, cores=2, busiest=found),
        )
        queue = [slow for _ in range(gate_module.GATE_RETRIES + 1)]
        assert retry(queue, []).cause == cause


@pytest.mark.parametrize(
    ("cause", "said", "quiet"),
    [
        (
            "invalid_reply",
            "excluded by the latency gate (the model's reply to the gate's probe was not a valid step "
            "(a rerun does not change that))",
            False,
        ),
        ("busy", "excluded by the latency gate (the machine was busy with other work then)", True),
        (
            "too_slow",
            "excluded by the latency gate (the engine was slower than the profile allows on a quiet machine)",
            True,
        ),
    ],
)
def test_the_exit_line_names_the_cause_the_gate_measured(tmp_path, monkeypatch, capsys, cause, said, quiet):
    """The run's outcome is computed once (run_outcome): its exit status and the closing line's causes."""
    run_dir = write_bundle(tmp_path / "run1")
    gate = (cut_off() if cause == "invalid_reply" else measured(fast=False)).model_copy(update={"cause": cause})
    rewrite_cell(run_dir, first_cell(run_dir), status="excluded", reason="latency gate: x", gate=gate)
    outcome = outcome_module.run_outcome(run_dir)
    assert outcome.status == 1 and outcome.causes == {f"gate:{cause}": 1}
    monkeypatch.setattr(run_module, "run_matrix", lambda options, progress: run_dir)
    assert (
        main(
            [
                "matrix",
                "run",
                str(ROOT / "matrix" / "smoke.yaml"),
                "--profile",
                "cpu",
                "--out",
                str(tmp_path / "out"),
                "--shard",
                "1/1",
            ]
        )
        == 1
    )
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"1 cell(s) {said}" in line and ("when the machine is quiet" in line) == quiet
    assert "too slow or busy" not in line
