"""``run_scenario``: one scenario, one policy, one ``ScenarioResult``.

The run's transcript, the scenario and the failed checks go to ``harness.scoring.diagnosis``, which
decides ``passed``, the failure (type, step, evidence), ``engine_fault`` and the partial credit
(``verdict``); ``harness.regrade`` scores a replayed run through the same function.
"""

from __future__ import annotations

import time
from typing import Any

from harness.agent.loop import AgentRun, run_agent
from harness.agent.policy import ModelCall, Policy, ScriptedPolicy
from harness.contracts import (
    EndEntry,
    FailedCheck,
    InvalidEntry,
    PromptEntry,
    ProtocolStats,
    RecordedReply,
    ScenarioResult,
    StepEntry,
    StepTiming,
    TranscriptEntry,
    TriggerEntry,
)
from harness.model.scenario import Scenario
from harness.model.workspace import Workspace
from harness.scoring.checks import CheckContext, evaluate_all
from harness.scoring.diagnosis import diagnose, partial_credit


def run_scenario(
    scenario: Scenario, policy: Policy, *, transcript: bool = True, timeout: float | None = None
) -> ScenarioResult:
    """Run ``scenario`` with ``policy`` choosing the steps, then score it. ``timeout``: the
    scenario's wall-clock budget in seconds (None: unbounded)."""
    started = time.monotonic()
    ws = Workspace.from_spec(scenario.workspace)
    before = ws.snapshot()
    run = run_agent(scenario, ws, policy, deadline=None if timeout is None else started + timeout)
    outcomes = evaluate_all(scenario.expect, CheckContext(ws, before, run))
    failed = [
        FailedCheck(index=o.index, type=o.type, expected=o.expected, found=o.found) for o in outcomes if not o.passed
    ]
    entries = build_transcript(run)
    calls = run.calls
    return ScenarioResult(
        id=scenario.id,
        category=scenario.category,
        level=scenario.level,
        status=run.status,
        error=run.detail if run.stop else None,
        **verdict(scenario, entries, failed),
        failed_checks=failed,
        checks_total=len(outcomes),
        steps=len(run.steps),
        seconds=round(time.monotonic() - started, 3),
        tokens_in=sum(c.tokens_in for c in calls),
        tokens_out=sum(c.tokens_out for c in calls),
        engine_timings=_timings(run),
        invalid_steps=sum(1 for c in calls if c.problem),
        protocol_stats=protocol_stats(getattr(policy, "protocol", None), calls),
        transcript=entries if transcript else None,
    )


def verdict(scenario: Scenario, transcript: list[TranscriptEntry], failed: list[FailedCheck]) -> dict[str, Any]:
    """The result fields the diagnosis decides: passed, the failure (type, step, evidence),
    whether it is the engine's, and the partial credit."""
    diagnosis = diagnose(scenario, transcript, failed)
    return {
        "passed": diagnosis is None,
        "failure_type": diagnosis.type if diagnosis else None,
        "engine_fault": diagnosis.engine_fault if diagnosis else False,
        "failure_step": diagnosis.step if diagnosis else None,
        "failure_evidence": diagnosis.evidence if diagnosis else None,
        "partial_score": partial_credit(scenario, transcript, diagnosis),
    }


def protocol_stats(protocol: str | None, calls: list[ModelCall]) -> ProtocolStats | None:
    """The per-scenario protocol figures; None for a policy that is not a model protocol."""
    if not protocol:
        return None
    valid = sum(1 for c in calls if not c.problem)
    return ProtocolStats(
        protocol=protocol,
        model_turns=len(calls),
        valid_calls=valid,
        invalid_turns=len(calls) - valid,
        repairs=sum(len(c.repairs) for c in calls),
        ignored_calls=sum(len(c.ignored_calls) for c in calls),
        truncated=sum(1 for c in calls if c.truncated),
        valid_tool_call_rate=round(valid / len(calls), 4) if calls else None,
    )


def replay_scenario(scenario: Scenario, *, transcript: bool = True) -> ScenarioResult:
    """Run the scenario's ``reference`` as the model."""
    return run_scenario(scenario, ScriptedPolicy(scenario.reference), transcript=transcript)


def _timings(run: AgentRun) -> list[StepTiming]:
    timings = []
    groups = [(s.number, s.calls) for s in run.steps] + [(len(run.steps) + 1, run.invalid_calls)]
    for number, calls in groups:
        for attempt, call in enumerate(calls, start=1):
            timings.append(
                StepTiming(
                    step=number,
                    attempt=attempt,
                    seconds=round(call.seconds, 4),
                    tokens_in=call.tokens_in,
                    tokens_out=call.tokens_out,
                    timings=call.timings,
                )
            )
    return timings


def build_transcript(run: AgentRun) -> list[TranscriptEntry]:
    """Messages and tool results, with no wall-clock values: identical replies give identical
    transcripts. A rejected reply carries its ``problem``, ``reject`` code and the ``tool`` it
    named; ``end`` holds how the run stopped, which the diagnosis reads."""
    entries: list[TranscriptEntry] = [TriggerEntry(agent=run.agent, text=run.task)]
    if run.prompt:
        entries.append(PromptEntry(messages=run.prompt))
    entries += [
        StepEntry(
            step=record.number,
            agent=record.agent,
            thought=record.step.thought,
            tool=record.step.tool,
            args=record.step.args,
            status=record.status,
            result=record.result,
            replies=[recorded_reply(c) for c in record.calls],
        )
        for record in run.steps
    ]
    if run.invalid_calls:
        entries.append(InvalidEntry(replies=[recorded_reply(c) for c in run.invalid_calls]))
    entries.append(EndEntry(status=run.status, stop=run.stop, detail=run.detail))
    return entries


def recorded_reply(call: ModelCall) -> RecordedReply:
    """A reply as the transcript keeps it: an empty problem, code or tool is left out."""
    return RecordedReply(
        content=call.raw,
        problem=call.problem or None,
        reject=call.reject or None,
        truncated=call.truncated,
        tool=call.tool or None,
        repairs=list(call.repairs),
        ignored_calls=list(call.ignored_calls),
    )
