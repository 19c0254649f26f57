"""``run_scenario``: one scenario, one policy, one ``ScenarioResult``."""

from __future__ import annotations

import time
from typing import Any

from harness.checks import CheckContext, evaluate_all
from harness.contracts import FailedCheck, ProtocolStats, ScenarioResult, StepTiming
from harness.diagnosis import diagnose
from harness.loop import AgentRun, run_agent
from harness.policy import ModelCall, Policy, ScriptedPolicy
from harness.scenario import Scenario
from harness.workspace import Workspace


def run_scenario(scenario: Scenario, policy: Policy, *, transcript: bool = True, timeout: float | None = None) -> ScenarioResult:
    """Run ``scenario`` with ``policy`` choosing the steps, then score it. ``timeout``: the
    scenario's wall-clock budget in seconds (None: unbounded)."""
    started = time.monotonic()
    ws = Workspace.from_spec(scenario.workspace)
    before = ws.snapshot()
    run = run_agent(scenario, ws, policy, deadline=None if timeout is None else started + timeout)
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
        protocol_stats=protocol_stats(getattr(policy, "protocol", None), calls),
        transcript=build_transcript(run) if transcript else None,
    )


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


def build_transcript(run: AgentRun) -> list[dict[str, Any]]:
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


def _reply(call: ModelCall) -> dict[str, Any]:
    reply: dict[str, Any] = {"content": call.raw}
    if call.problem:
        reply["problem"] = call.problem
    if call.repairs:
        reply["repairs"] = list(call.repairs)
    if call.ignored_calls:
        reply["ignored_calls"] = list(call.ignored_calls)
    return reply
