"""The run loop: repeats, stuck, step limit, pauses, interference, engine and protocol faults."""

from __future__ import annotations

from harness.agent.loop import ALREADY_KNOWN
from harness.agent.policy import ModelCall, PolicyReply, Step, Turn
from harness.clients.errors import EngineError
from harness.contracts import InvalidEntry, RecordedReply, StepEntry
from harness.runner import run_scenario
from tests.fixtures.transcripts import end_of, entries_of

READ = ("table_read", {"table": "beds", "query": None, "limit": None})
FINISH = ("finish", {"summary": "Done."})


def test_repeat_gets_a_note_and_is_not_run_again(make_scenario, script) -> None:
    add = ("table_add", {"table": "beds", "rows": [{"bed": "B4", "crop": "pea", "state": "dry"}]})
    scenario = make_scenario(expect=[{"type": "rows", "table": "beds", "count": 4}, {"type": "finished"}])
    result = run_scenario(scenario, script(add, add, FINISH))
    assert result.passed
    repeated = entries_of(result, StepEntry)[1]
    assert (repeated.status, repeated.result) == ("repeat", {"note": ALREADY_KNOWN})


def test_three_identical_calls_in_a_row_is_stuck(make_scenario, script) -> None:
    result = run_scenario(make_scenario(), script(READ, READ, READ, FINISH))
    assert (result.status, result.failure_type, result.steps) == ("failed", "stuck", 3)
    assert not result.passed


def test_identical_calls_not_in_a_row_are_fine(make_scenario, script) -> None:
    note = ("note_read", {"title": "Log"})
    result = run_scenario(make_scenario(), script(READ, note, READ, note, READ, FINISH))
    assert result.passed and result.steps == 6


def test_step_limit(make_scenario, script) -> None:
    scenario = make_scenario(max_steps=2)
    result = run_scenario(scenario, script(READ, ("note_read", {"title": "Log"}), FINISH))
    assert (result.status, result.failure_type, result.steps) == ("failed", "step_limit", 2)


def test_scenario_max_steps_bounds_the_primary_agent(make_scenario, script) -> None:
    scenario = make_scenario(max_steps=3)  # the agent's own max_steps (6) does not matter
    calls = [READ, ("note_read", {"title": "Log"}), READ, FINISH]
    assert run_scenario(scenario, script(*calls)).failure_type == "step_limit"


def test_unanswered_question_pauses_the_run(make_scenario, script) -> None:
    scenario = make_scenario(expect=[{"type": "status", "is": "waiting"}, {"type": "asked"}])
    result = run_scenario(scenario, script(("ask", {"question": "Which bed?"}), FINISH))
    assert result.passed and result.status == "waiting" and result.steps == 1


def test_interfere_fires_once_after_matching_step(make_scenario, script) -> None:
    scenario = make_scenario(
        interfere={"after_tool": "table_read", "table": "beds", "row_match": {"bed": "B1"}, "set": {"state": "frozen"}},
        expect=[{"type": "row", "table": "beds", "where": {"bed": "B1"}, "has": {"state": "frozen", "crop": "chard"}}],
    )
    update = ("table_update", {"table": "beds", "row": 1, "values": {"bed": None, "crop": "chard", "state": None}})
    result = run_scenario(scenario, script(("note_read", {"title": "Log"}), READ, update, READ, update, FINISH))
    statuses = [e.status for e in entries_of(result, StepEntry)]
    assert statuses == ["ok", "ok", "conflict", "ok", "ok", "finished"]
    assert result.passed


def test_note_interference(make_scenario, script) -> None:
    scenario = make_scenario(
        interfere={"after_tool": "note_read", "note": "Log", "append": "\nFrost tonight."},
        expect=[{"type": "note", "title": "Log", "contains": ["Frost tonight", "Watered"]}],
    )
    read = ("note_read", {"title": "Log"})
    replace = ("note_write", {"title": "Log", "text": "Watered.", "mode": "replace"})
    merged = ("note_write", {"title": "Log", "text": "Watered.\nFrost tonight.", "mode": "replace"})
    result = run_scenario(scenario, script(read, replace, read, merged, FINISH))
    assert result.passed


class _FailingEngine:
    def next_step(self, turn: Turn) -> PolicyReply:
        raise EngineError("connection refused")


class _Garbage:
    def next_step(self, turn: Turn) -> PolicyReply:
        calls = [ModelCall(raw="{oops", problem="invalid JSON"), ModelCall(raw="{oops", problem="invalid JSON")]
        return PolicyReply(invalid="invalid JSON", calls=calls)


def test_engine_error_is_not_a_model_failure(make_scenario) -> None:
    result = run_scenario(make_scenario(), _FailingEngine())
    assert (result.passed, result.engine_fault, result.failure_type) == (False, True, "engine_error")
    assert result.error == "connection refused"


def test_invalid_step_is_a_protocol_failure(make_scenario) -> None:
    result = run_scenario(make_scenario(), _Garbage())  # replies without a reject code read as invalid_syntax
    assert (result.failure_type, result.invalid_steps, result.engine_fault) == ("invalid_syntax", 2, False)
    assert end_of(result).stop == "invalid_reply" and result.failure_step == 1
    assert (result.transcript or [])[-2] == InvalidEntry(
        replies=[RecordedReply(content="{oops", problem="invalid JSON")] * 2
    )


def test_handoff_records_task_for_teammate_who_does_not_run(make_scenario, script) -> None:
    scenario = make_scenario(
        expect=[{"type": "task", "to": "Otto", "mentions": ["B1"]}, {"type": "no_task", "to": "you"}]
    )
    result = run_scenario(
        scenario, script(("task_add", {"to": "Otto", "title": "Water", "details": "B1 is dry."}), FINISH)
    )
    assert result.passed
    assert {e.agent for e in entries_of(result, StepEntry)} == {"Mira"}


def test_turn_shows_workspace_to_the_policy(make_scenario) -> None:
    seen: list[Turn] = []

    class Spy:
        def next_step(self, turn: Turn) -> PolicyReply:
            seen.append(turn)
            return PolicyReply(step=Step("finish", {"summary": "x"}))

    run_scenario(make_scenario(workspace={"memories": [{"agent": "Mira", "text": "Kale first."}]}), Spy())
    turn = seen[0]
    assert turn.task == "Message from the owner: Check the beds."
    assert turn.now == "Monday 2026-06-01 09:00:00 UTC"
    assert [t.name for t in turn.tables] == ["beds"] and turn.notes == ["Log"]
    assert turn.memories == ["Kale first."] and [a.name for a in turn.teammates] == ["Otto"]
