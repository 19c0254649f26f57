"""Re-grading: a recorded result must follow from its transcript's tool calls, re-executed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.agent.policy import ModelCall, PolicyReply, Step, Turn
from harness.clients.errors import engine_failure
from harness.contracts import ScenarioResult, StepEntry, TranscriptLine, transcript_data
from harness.model.scenario import Scenario, load_scenarios
from harness.regrade import MAX_NESTING, MAX_TRANSCRIPT_CHARS, Regrade, regrade, regrade_all
from harness.runner import replay_scenario, run_scenario
from tests.fixtures.transcripts import end_of

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITE = REPO_ROOT / "scenarios"

READ = ("table_read", {"table": "beds", "query": None, "limit": None})
WRITE = ("note_write", {"title": "Log", "text": "B1 and B3 are dry.", "mode": "append"})
FINISH = ("finish", {"summary": "B1 and B3 are dry."})
EXPECT = [{"type": "finished"}, {"type": "note", "title": "Log", "contains": ["B3"]}]


class Scripted:
    """Plays ``calls``, then ends the way ``ending`` says: an invalid reply or an engine error."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], ending: str) -> None:
        self.calls, self.ending = list(calls), ending

    def next_step(self, turn: Turn) -> PolicyReply:
        prompt = [{"role": "user", "content": "the task"}] if turn.step_number == 1 else None
        if self.calls:
            tool, args = self.calls.pop(0)
            return PolicyReply(
                step=Step(tool, args, "thinking"), calls=[ModelCall(raw=json.dumps({"tool": tool}))], prompt=prompt
            )
        if self.ending == "invalid_reply":
            return PolicyReply(
                invalid="invalid JSON: line 1",
                calls=[ModelCall(raw="{", problem="invalid JSON", reject="invalid_syntax")] * 2,
                prompt=prompt,
            )
        raise engine_failure(self.ending, "HTTP 500 from the engine")


@pytest.fixture
def garden(make_scenario) -> Scenario:
    return make_scenario(reference=[_ref(READ), _ref(WRITE), _ref(FINISH)], expect=EXPECT)


@pytest.fixture
def recorded(garden: Scenario) -> ScenarioResult:
    result = replay_scenario(garden)
    assert result.passed and result.steps == 3
    return result


def _ref(call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool": call[0], "args": call[1]}


def _whats(regraded: Regrade) -> set[str]:
    return {d.what for d in regraded.differences}


def _forged(result: ScenarioResult, **changes: Any) -> ScenarioResult:
    return ScenarioResult.model_validate(result.model_dump() | changes)


# ---------------------------------------------------------------------------- the whole suite


def test_every_reference_replay_regrades_without_difference() -> None:
    scenarios = load_scenarios(SUITE)
    assert len(scenarios) >= 184  # the suite grows; every scenario in it must re-grade
    differing = {}
    for scenario in scenarios:
        regraded = regrade(scenario, replay_scenario(scenario))
        if not regraded.agrees or not regraded.passed:
            differing[scenario.id] = regraded.line()
    assert differing == {}


def test_regrade_reports_the_recomputed_outcome(garden: Scenario, recorded: ScenarioResult) -> None:
    regraded = regrade(garden, recorded)
    assert regraded.agrees and regraded.replayed
    assert (regraded.passed, regraded.status, regraded.failure_type, regraded.failed_checks) == (True, "done", None, [])
    assert [(s.step, s.tool, s.status) for s in regraded.steps] == [
        (1, "table_read", "ok"),
        (2, "note_write", "ok"),
        (3, "finish", "finished"),
    ]
    assert regraded.steps[0].result == recorded.transcript[1].result


# ---------------------------------------------------------------------------- forgeries


def test_flipped_passed(garden, make_scenario) -> None:
    failing = run_scenario(garden, Scripted([READ, FINISH], "none"))
    assert not failing.passed and failing.failure_type == "wrong_outcome"
    forged = _forged(failing, passed=True, failure_type=None, failed_checks=[])
    regraded = regrade(garden, forged)
    assert {"passed", "failure_type", "failed_checks"} <= _whats(regraded)
    assert not regraded.passed and regraded.failure_type == "wrong_outcome"


def test_edited_tool_result(garden, recorded) -> None:
    transcript = transcript_data(recorded.transcript)
    transcript[1]["result"]["rows"] = []
    regraded = regrade(garden, recorded, transcript)
    assert _whats(regraded) == {"step 1 result"}
    assert "step 1 result: recorded" in regraded.line()


def test_changed_args(garden, recorded) -> None:
    transcript = transcript_data(recorded.transcript)
    transcript[1]["args"]["query"] = "kale"  # the recorded result is still that of the full table
    assert _whats(regrade(garden, recorded, transcript)) == {"step 1 result"}


def test_extra_step(garden, recorded) -> None:
    transcript = transcript_data(recorded.transcript)
    transcript.insert(-1, {**transcript[-2], "step": 4})  # a second finish after the first
    regraded = regrade(garden, recorded, transcript)
    assert "step 4" in _whats(regraded)
    assert regraded.agrees is False and regraded.passed


def test_dropped_step(garden, recorded) -> None:
    transcript = transcript_data(recorded.transcript)
    del transcript[2]  # the note_write: the finish becomes step 2
    regraded = regrade(garden, recorded, transcript)
    assert {"steps", "step 2 step", "passed", "failed_checks"} <= _whats(regraded)
    assert not regraded.passed and regraded.failure_type == "wrong_outcome"


def test_dropped_finish_is_an_overrun_never_a_pass(garden, recorded) -> None:
    transcript = [e for e in recorded.transcript if not (isinstance(e, StepEntry) and e.tool == "finish")]
    regraded = regrade(garden, recorded, transcript)
    assert {"transcript", "passed", "status", "end stop"} <= _whats(regraded)
    assert not regraded.passed and regraded.engine_fault


def test_edited_failed_check_and_status(garden) -> None:
    failing = run_scenario(garden, Scripted([READ, FINISH], "none"))
    forged = _forged(failing, failed_checks=[], status="waiting")
    assert {"failed_checks", "status"} <= _whats(regrade(garden, forged))


def test_a_result_of_another_scenario(garden, recorded, make_scenario) -> None:
    other = make_scenario(id="garden-002", reference=[_ref(READ), _ref(WRITE), _ref(FINISH)], expect=EXPECT)
    assert _whats(regrade(other, recorded)) == {"id"}


# ---------------------------------------------------------------------------- how runs end


@pytest.mark.parametrize(
    ("calls", "ending", "stop", "failure"),
    [
        ([READ, READ, READ], "none", "stuck", "stuck"),
        ([READ, WRITE, READ, WRITE, READ, WRITE], "none", "step_limit", "step_limit"),
        ([READ], "invalid_reply", "invalid_reply", "invalid_syntax"),
        ([], "invalid_reply", "invalid_reply", "invalid_syntax"),
        ([READ, WRITE], "engine_error", "engine_error", "engine_error"),
        ([], "engine_error", "engine_error", "engine_error"),
        ([READ], "context_overflow", "context_overflow", "context_overflow"),
        ([], "model_not_loaded", "model_not_loaded", "model_not_loaded"),
        ([], "engine_unreachable", "engine_unreachable", "engine_unreachable"),
    ],
)
def test_abnormal_endings_regrade_faithfully(garden, calls, ending, stop, failure) -> None:
    result = run_scenario(garden, Scripted(calls, ending))
    assert end_of(result).stop == stop and result.failure_type == failure
    regraded = regrade(garden, result)
    assert regraded.agrees, regraded.line()
    assert regraded.stop == stop and not regraded.passed and regraded.failure_type == failure
    assert regraded.failure_step == result.failure_step == len(calls) + (stop != "stuck" and stop != "step_limit")


def test_waiting_regrades_faithfully(make_scenario) -> None:
    scenario = make_scenario(
        workspace={"rules": [{"tool": "note_write", "decision": "ask"}]},
        reference=[_ref(WRITE)],
        expect=[{"type": "status", "is": "waiting"}],
    )
    result = replay_scenario(scenario)
    assert result.status == "waiting" and result.passed
    assert regrade(scenario, result).agrees


def test_a_recorded_engine_fault_never_regrades_into_a_pass(garden) -> None:
    fault = run_scenario(garden, Scripted([READ, WRITE], "engine_error"))
    forged = _forged(fault, passed=True, engine_fault=False, failure_type=None)
    regraded = regrade(garden, forged)
    assert {"passed", "engine_fault", "failure_type"} <= _whats(regraded)
    assert not regraded.passed and regraded.engine_fault


@pytest.mark.parametrize("late_reply", [False, True])
def test_a_timeout_regrades_as_a_timeout(garden, late_reply) -> None:
    fault = run_scenario(garden, Scripted([READ, WRITE], "engine_error"))
    transcript = transcript_data(fault.transcript)
    detail = "the scenario ran past its wall-clock budget"
    transcript[-1].update(stop="timeout", detail=detail)
    if late_reply:  # the loop keeps a reply that came after the deadline, unexecuted
        transcript.insert(-1, {"kind": "invalid", "replies": [{"content": '{"tool": "finish"}'}]})
    checks = [
        c.model_copy(update={"found": {"status": "failed", "stop": "timeout"}}) if c.type == "finished" else c
        for c in fault.failed_checks
    ]
    # the table read was the reference's only lookup
    diagnosis = {"failure_step": 3, "failure_evidence": detail, "partial_score": 0.75}
    timed_out = _forged(
        fault,
        failure_type="timeout",
        engine_fault=False,
        error=detail,
        transcript=transcript,
        failed_checks=checks,
        **diagnosis,
    )
    regraded = regrade(garden, timed_out)
    assert regraded.agrees, regraded.line()
    assert (regraded.stop, regraded.failure_type, regraded.passed, regraded.engine_fault) == (
        "timeout",
        "timeout",
        False,
        False,
    )
    assert "passed" in _whats(regrade(garden, _forged(timed_out, passed=True, failure_type=None)))


def test_a_real_timeout_regrades(garden) -> None:

    class Slow(Scripted):
        def next_step(self, turn: Turn) -> PolicyReply:
            if turn.step_number == 2:
                time.sleep(0.3)
            return super().next_step(turn)

    result = run_scenario(garden, Slow([READ, WRITE, FINISH], "none"), timeout=0.2)
    assert result.failure_type == "timeout" and end_of(result).stop == "timeout"
    regraded = regrade(garden, result)
    assert regraded.agrees, regraded.line()


# ---------------------------------------------------------------------------- hostile transcripts


def _step(tool: str, args: Any) -> dict[str, Any]:
    return {
        "kind": "step",
        "step": 1,
        "agent": "Mira",
        "thought": "",
        "tool": tool,
        "args": args,
        "status": "ok",
        "result": {},
    }


END = {"kind": "end", "status": "done", "stop": None, "detail": None}
TRIGGER = {"kind": "trigger", "agent": "Mira", "text": "Check the beds."}


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("transcript", "reason"),
    [
        ("not a list", "not a list"),
        ([TRIGGER, {"kind": "shell", "cmd": "rm -rf /"}, END], "entry 1"),
        ([TRIGGER, _step("table_read", ["not", "an", "object"]), END], "entry 1 step.args"),
        ([TRIGGER, {**_step("table_read", {}), "step": True}, END], "entry 1 step.step"),
        ([TRIGGER, _step("table_read", {}), {**END, "extra": 1}], "entry 2 end.extra"),
        ([END, TRIGGER], "out of order"),
        ([TRIGGER, END, _step("finish", {"summary": ""}), END], "out of order"),
        ([TRIGGER], "out of order"),
        ([TRIGGER] + [_step("table_read", {})] * 60 + [END], "more than 6 steps allow"),
        ([TRIGGER, _step("finish", {"summary": _deep(MAX_NESTING + 5)}), END], "nested deeper"),
        ([TRIGGER, _step("finish", {"summary": "x" * (MAX_TRANSCRIPT_CHARS + 1)}), END], "characters"),
        ([TRIGGER, _step("finish", {"summary": float("nan")}), END], None),
    ],
)
def test_malformed_transcripts_are_differences_never_crashes(garden, recorded, transcript, reason) -> None:
    regraded = regrade(garden, recorded, transcript)
    assert not regraded.replayed and not regraded.passed
    assert _whats(regraded) == {"transcript"}
    assert reason is None or reason in regraded.differences[0].recorded
    assert "\n" not in regraded.line()


def test_unknown_tool_and_bad_args_replay_as_tool_errors(garden, recorded) -> None:
    transcript = [
        TRIGGER,
        _step("shell", {"cmd": "id"}),
        {**_step("table_read", {"table": 7}), "step": 2},
        {**_step("finish", {"summary": "ok"}), "step": 3},
        END,
    ]
    regraded = regrade(garden, recorded, transcript)
    assert regraded.replayed
    assert [s.status for s in regraded.steps] == ["error", "error", "finished"]
    assert "unknown tool" in regraded.steps[0].result["error"]
    assert {"step 1 status", "step 1 result", "step 2 status", "step 2 result"} <= _whats(regraded)


def test_unknown_reply_fields_are_a_difference(garden, recorded) -> None:
    transcript = transcript_data(recorded.transcript)
    transcript[1]["replies"] = [{"content": "{}", "smuggled": "yes"}]
    assert "step 1 replies" in _whats(regrade(garden, recorded, transcript))


# ---------------------------------------------------------------------------- a cell and the command


def test_regrade_all_names_missing_duplicate_and_unknown(garden, recorded) -> None:
    lines = [TranscriptLine(id=recorded.id, transcript=recorded.transcript), TranscriptLine(id="ghost", transcript=[])]
    stranger = _forged(recorded, id="stranger", transcript=None)
    no_transcript = _forged(recorded, id="garden-002", transcript=None)
    report = regrade_all([garden], [recorded.model_copy(update={"transcript": None}), recorded, stranger], lines)
    assert not report.agrees
    assert set(report.problems) == {
        "garden-001: more than one result",
        "stranger: no such scenario in the suite",
        "ghost: a transcript without a result",
    }
    report = regrade_all([garden, garden.model_copy(update={"id": "garden-002"})], [no_transcript])
    assert report.problems == ["garden-002: no transcript"]
    report = regrade_all([garden], [_forged(recorded, id="evil\nVALID garden-001")])
    assert report.lines() == ["evil\\nVALID garden-001: no such scenario in the suite"]


def _write_bundle_files(folder: Path, results: list[ScenarioResult]) -> tuple[Path, Path]:
    scenarios, transcripts = folder / "scenarios.jsonl", folder / "transcripts.jsonl"
    scenarios.write_text("".join(r.model_dump_json(exclude={"transcript"}) + "\n" for r in results))
    transcripts.write_text(
        "".join(json.dumps({"id": r.id, "transcript": transcript_data(r.transcript)}) + "\n" for r in results)
    )
    return scenarios, transcripts


def test_command_agrees_then_names_each_differing_scenario(tmp_path, capsys) -> None:
    from harness.cli import main

    scenarios = load_scenarios(SUITE, only=["conflict"])
    results = [replay_scenario(s) for s in scenarios]
    results_path, transcripts_path = _write_bundle_files(tmp_path, results)
    argv = [
        "regrade",
        "--scenarios",
        str(SUITE / "conflict"),
        "--results",
        str(results_path),
        "--transcripts",
        str(transcripts_path),
    ]
    assert main(argv) == 0
    assert f"{len(results)} scenarios re-graded, 0 differ, 0 other problems" in capsys.readouterr().out

    results[0] = _forged(results[0], passed=False)
    edited = results[1].transcript[1].model_copy(update={"result": {"rows": []}})
    results[1] = _forged(results[1], transcript=[results[1].transcript[0], edited, *results[1].transcript[2:]])
    _write_bundle_files(tmp_path, results)
    with transcripts_path.open("a") as handle:
        handle.write("{not json\n")
    assert main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("transcripts.jsonl line ")
    assert out[1].startswith(f"{results[0].id}: passed: recorded false, regraded true")
    assert out[2].startswith(f"{results[1].id}: step 1 result:")
    assert len(out) == 4


def test_command_bad_input_is_one_line_exit_2(tmp_path, capsys) -> None:
    from harness.cli import main

    assert main(["regrade", "--scenarios", str(SUITE), "--results", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness: error:") and "\n" not in err
