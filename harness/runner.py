"""``run_scenario``: one scenario, one policy, one ``ScenarioResult``."""

from __future__ import annotations

import time
from typing import Any

from harness.checks import CheckContext, evaluate_all
from harness.contracts import FailedCheck, ScenarioResult, StepTiming
from harness.diagnosis import diagnose
from harness.loop import RunRecord, run_agent
from harness.policy import Policy, ScriptedPolicy
from harness.scenario import Scenario
from harness.workspace import Workspace


def run_scenario(scenario: Scenario, policy: Policy, *, transcript: bool = True) -> ScenarioResult:
    """Run ``scenario`` with ``policy`` choosing the steps, then score it."""
    started = time.monotonic()
    ws = Workspace.from_spec(scenario.workspace)
    before = ws.snapshot()
    run = run_agent(scenario, ws, policy)
    outcomes = evaluate_all(scenario.expect, CheckContext(ws, before, run))
    failed = [o for o in outcomes if not o.passed]
    failure_type = diagnose(run.stop, [o.type for o in failed])
    engine_fault = run.stop == "engine_error"
    calls = run.calls
    return ScenarioResult(
        id=scenario.id,
        category=scenario.category,
        level=scenario.level,
        passed=failure_type is None and not engine_fault,
        status=run.status,
        failure_type=failure_type,
        engine_fault=engine_fault,
        error=run.detail if run.stop else None,
        failed_checks=[FailedCheck(index=o.index, type=o.type, expected=o.expected, found=o.found) for o in failed],
        checks_total=len(outcomes),
        steps=len(run.steps),
        seconds=round(time.monotonic() - started, 3),
        tokens_in=sum(c.tokens_in for c in calls),
        tokens_out=sum(c.tokens_out for c in calls),
        engine_timings=_timings(run),
        invalid_steps=sum(1 for c in calls if c.problem),
        transcript=build_transcript(run) if transcript else None,
    )


def replay_scenario(scenario: Scenario, *, transcript: bool = True) -> ScenarioResult:
    """Run the scenario's ``reference`` as the model."""
    return run_scenario(scenario, ScriptedPolicy(scenario.reference), transcript=transcript)


def _timings(run: RunRecord) -> list[StepTiming]:
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


def build_transcript(run: RunRecord) -> list[dict[str, Any]]:
    """Messages and tool results, with no wall-clock values: identical replies give identical
    transcripts."""
    entries: list[dict[str, Any]] = [{"kind": "trigger", "agent": run.agent, "text": run.task}]
    if run.prompt:
        entries.append({"kind": "prompt", "messages": run.prompt})
    for record in run.steps:
        entry: dict[str, Any] = {
            "kind": "step",
            "step": record.number,
            "agent": record.agent,
            "thought": record.step.thought,
            "tool": record.step.tool,
            "args": record.step.args,
            "status": record.status,
            "result": record.result,
        }
        if record.calls:
            entry["replies"] = [_reply(c) for c in record.calls]
        entries.append(entry)
    if run.invalid_calls:
        entries.append({"kind": "invalid", "replies": [_reply(c) for c in run.invalid_calls]})
    entries.append({"kind": "end", "status": run.status, "stop": run.stop, "detail": run.detail})
    return entries


def _reply(call: Any) -> dict[str, Any]:
    reply = {"content": call.raw}
    if call.problem:
        reply["problem"] = call.problem
    return reply
