"""The runner builds transcript entries as models; their JSON is the JSON of the dict literals the
runner wrote before (kept here as the oracle), key for key and in order, for every suite
scenario's reference run and for replies that carry every optional field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agent.loop import AgentRun, run_agent
from harness.agent.policy import ModelCall, Policy, PolicyReply, ScriptedPolicy, Step, Turn
from harness.contracts import ENTRY, EndEntry, ExternalStepEntry, RecordedReply, TriggerEntry, transcript_data
from harness.model.scenario import Scenario, load_scenarios
from harness.model.workspace import Workspace
from harness.runner import build_transcript
from tests.fixtures.synthetic import ROOT


def legacy_transcript(run: AgentRun) -> list[dict[str, Any]]:
    """The runner's transcript as it was built before the entry models, dict by dict."""
    entries: list[dict[str, Any]] = [{"kind": "trigger", "agent": run.agent, "text": run.task}]
    if run.prompt:
        entries.append({"kind": "prompt", "messages": run.prompt})
    for record in run.steps:
        entry: dict[str, Any] = {
            "kind": "step",
            "step": record.number,
            "agent": record.agent,
            "thought": record.step.thought,
        }
        entry |= {"tool": record.step.tool, "args": record.step.args, "status": record.status, "result": record.result}
        if record.calls:
            entry["replies"] = [legacy_reply(c) for c in record.calls]
        entries.append(entry)
    if run.invalid_calls:
        entries.append({"kind": "invalid", "replies": [legacy_reply(c) for c in run.invalid_calls]})
    entries.append({"kind": "end", "status": run.status, "stop": run.stop, "detail": run.detail})
    return entries


def legacy_reply(call: ModelCall) -> dict[str, Any]:
    optional = {"problem": call.problem, "reject": call.reject, "truncated": call.truncated, "tool": call.tool}
    optional |= {"repairs": list(call.repairs), "ignored_calls": list(call.ignored_calls)}
    return {"content": call.raw} | {key: value for key, value in optional.items() if value}


class EveryField:
    """Steps whose replies carry every optional field, then a final turn of rejected replies."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps[:2]

    def next_step(self, turn: Turn) -> PolicyReply:
        prompt = [{"role": "user", "content": "the task"}] if turn.step_number == 1 else None
        retried = ModelCall(
            raw="{",
            problem="invalid JSON",
            reject="invalid_syntax",
            truncated=True,
            tool="note_read",
            repairs=["code_fence"],
        )
        if self.steps:
            calls = [
                retried,
                ModelCall(raw="{}", repairs=["trailing_commas"], ignored_calls=[{"name": "x", "arguments": "{}"}]),
            ]
            return PolicyReply(step=self.steps.pop(0), calls=calls, prompt=prompt)
        return PolicyReply(
            invalid="invalid JSON", calls=[retried, ModelCall(raw="", problem="", reject="empty_reply")], prompt=prompt
        )


def dumped(scenario: Scenario, policy: Policy) -> tuple[str, str]:
    run = run_agent(scenario, Workspace.from_spec(scenario.workspace), policy)
    return json.dumps(transcript_data(build_transcript(run)), ensure_ascii=False), json.dumps(
        legacy_transcript(run), ensure_ascii=False
    )


SUITE = load_scenarios(ROOT / "scenarios")


@pytest.mark.parametrize("playing", ["reference", "every field"])
def test_the_runner_writes_what_the_dict_literals_wrote(playing: str) -> None:
    for scenario in SUITE:
        steps = [Step(r.tool, r.args) for r in scenario.reference]
        new, old = dumped(scenario, ScriptedPolicy(steps) if playing == "reference" else EveryField(steps))
        assert new == old, scenario.id


def test_an_external_suites_entries_keep_their_shape() -> None:
    """ToolCallBench's normalised transcript: a trigger without an agent, steps with a turn."""
    assert TriggerEntry(text="Add 2 and 3.").model_dump_json() == '{"kind":"trigger","text":"Add 2 and 3."}'
    step = ExternalStepEntry(step=1, turn=1, tool="add", args=[2, 3], status="ok", result=None)
    assert (
        step.model_dump_json()
        == '{"kind":"step","step":1,"turn":1,"tool":"add","args":[2,3],"status":"ok","result":null}'
    )
    assert ENTRY.validate_json(step.model_dump_json()) == step
    assert (
        EndEntry(status="failed", stop="wrong_answer", detail="").model_dump_json()
        == '{"kind":"end","status":"failed","stop":"wrong_answer","detail":""}'
    )


def test_a_reply_keeps_a_key_it_does_not_know() -> None:
    """The re-grade names such a key as a difference; reading must not drop it first."""
    reply = RecordedReply.model_validate_json('{"content":"{}","smuggled":"yes"}')
    assert reply.model_dump_json() == '{"content":"{}","smuggled":"yes"}'
