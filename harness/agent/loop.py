"""The run loop: one step per turn until finish, a pause, or a failure.

- A call that repeats the previous step's tool and args is not run again; the agent is told
  the result is already known. Three identical calls in a row fail the run as ``stuck``.
- Running out of steps fails the run as ``step_limit``.
- A reply the policy could not turn into a valid step ends it as ``invalid_reply`` (the replies,
  each with its reject code, are kept for the diagnosis); an ``EngineError`` from the policy ends
  it with the error's ``failure`` as the stop: ``engine_unreachable``, ``model_not_loaded``,
  ``context_overflow`` or ``engine_error``, or an agent runtime's ``runtime_unavailable``,
  ``runtime_config`` or ``runtime_error`` (``ENGINE_STOPS``).
- A scenario past its wall-clock budget (``deadline``, checked before each request and after
  each reply; an engine timeout after the deadline counts too) fails the run as ``timeout``; the
  reply that came too late is not executed.
- ``ask`` and approval requests without a scripted answer pause the run (status ``waiting``).
- ``interfere`` fires once, after the first successful step with its tool and target.
- Tasks handed to teammates are recorded as theirs; teammates do not run in this run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.agent.compact import compact
from harness.agent.policy import HistoryItem, ModelCall, Policy, PolicyReply, Step, TableView, Turn
from harness.agent.prompts import render_trigger, workspace_overview
from harness.clients.errors import ENGINE_FAILURES, RUNTIME_STOPS, EngineError, EngineTimeout
from harness.model.clock import human
from harness.model.scenario import Scenario
from harness.model.workspace import Workspace
from harness.tools import FINISHED, OK, WAITING, ToolContext, ToolOutcome
from harness.tools.dispatch import execute, tool_target

REPEAT = "repeat"
STUCK_AFTER = 3
TIMED_OUT = "the scenario ran past its wall-clock budget"
ALREADY_KNOWN = (
    "already known: this repeats your previous call exactly; its result is above. Do something else or finish."
)
INVALID_REPLY = "invalid_reply"
# engine_unreachable, model_not_loaded, context_overflow, engine_error, and an agent runtime's failures
ENGINE_STOPS = frozenset(ENGINE_FAILURES) | RUNTIME_STOPS


@dataclass
class StepRecord:
    number: int
    agent: str
    step: Step
    status: str
    result: dict[str, Any]
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class AgentRun:
    """Everything the checks and the result need from one run."""

    agent: str
    status: str = "failed"  # done | waiting | failed
    stop: str | None = None  # stuck | step_limit | invalid_reply | timeout | one of ENGINE_STOPS | None
    detail: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    finish_summary: str | None = None
    invalid_calls: list[ModelCall] = field(default_factory=list)
    prompt: list[dict[str, Any]] | None = None
    task: str = ""

    @property
    def calls(self) -> list[ModelCall]:
        return [c for s in self.steps for c in s.calls] + self.invalid_calls


def run_agent(scenario: Scenario, ws: Workspace, policy: Policy, *, deadline: float | None = None) -> AgentRun:
    """Run the scenario's primary agent against ``ws`` until it stops. ``deadline`` is a
    ``time.monotonic()`` value past which the run ends as ``timeout``."""
    agent = scenario.agent_spec()
    run = AgentRun(agent=agent.name, task=render_trigger(scenario.trigger))
    ctx = ToolContext(ws, agent.name, dict(scenario.fixtures or {}), scenario.respond)
    started = human(ws.clock.now())
    interference = _Interference(scenario)
    overviews: list[str] = []
    for number in range(1, scenario.max_steps + 1):
        if _past(deadline):
            return _stop(run, "failed", "timeout", TIMED_OUT)
        turn = _turn(scenario, ws, run, started, number, overviews)
        try:
            reply = policy.next_step(turn)
        except EngineError as exc:
            late = isinstance(exc, EngineTimeout) and _past(deadline)
            return (
                _stop(run, "failed", "timeout", f"{TIMED_OUT}: {exc}")
                if late
                else _stop(run, "failed", exc.failure, str(exc))
            )
        if run.prompt is None and reply.prompt is not None:
            run.prompt = reply.prompt
        if _past(deadline):
            run.invalid_calls += reply.calls
            return _stop(run, "failed", "timeout", TIMED_OUT)
        if reply.step is None:
            run.invalid_calls += reply.calls
            return _stop(run, "failed", INVALID_REPLY, reply.invalid or "no step")
        outcome = _take_step(ctx, run, reply)
        if run.stop == "stuck":
            return run
        if outcome.status == FINISHED:
            run.finish_summary = str(reply.step.args.get("summary", ""))
            return _stop(run, "done", None, None)
        if outcome.status == WAITING:
            return _stop(run, "waiting", None, outcome.result.get("waiting"))
        interference.maybe_apply(ws, reply.step, outcome)
    return _stop(run, "failed", "step_limit", f"no finish within {scenario.max_steps} steps")


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _take_step(ctx: ToolContext, run: AgentRun, reply: PolicyReply) -> ToolOutcome:
    step = reply.step
    assert step is not None
    repeats = _trailing_repeats(run, step)
    if repeats + 1 >= STUCK_AFTER:
        outcome = ToolOutcome("stuck", {"error": f"the same call {STUCK_AFTER} times in a row"})
        _record(run, ctx.agent, step, outcome, reply.calls)
        _stop(run, "failed", "stuck", f"{step.tool} called {STUCK_AFTER} times in a row with the same args")
        return outcome
    if repeats:
        outcome = ToolOutcome(REPEAT, {"note": ALREADY_KNOWN})
    else:
        outcome = execute(ctx, step.tool, step.args)
        outcome = ToolOutcome(outcome.status, compact(outcome.result))
    _record(run, ctx.agent, step, outcome, reply.calls)
    return outcome


def _trailing_repeats(run: AgentRun, step: Step) -> int:
    """How many of the latest steps are identical to ``step`` (tool and args)."""
    count = 0
    for record in reversed(run.steps):
        if record.step.call() != step.call():
            break
        count += 1
    return count


def _record(run: AgentRun, agent: str, step: Step, outcome: ToolOutcome, calls: list[ModelCall]) -> None:
    number = len(run.steps) + 1
    run.steps.append(StepRecord(number, agent, step, outcome.status, outcome.result, list(calls)))


def _stop(run: AgentRun, status: str, stop: str | None, detail: str | None) -> AgentRun:
    run.status, run.stop, run.detail = status, stop, detail
    return run


def _turn(scenario: Scenario, ws: Workspace, run: AgentRun, started: str, number: int, overviews: list[str]) -> Turn:
    """The turn of step ``number``. ``overviews`` holds the workspace overview of each earlier
    turn and gets this one's: the first is the system prompt's, the others follow the steps."""
    agent = scenario.agent_spec()
    turn = Turn(
        agent=agent,
        task=run.task,
        now=started,
        teammates=[a for a in ws.agents if a.name != agent.name],
        tables=[TableView(t.name, list(t.columns), len(t.rows)) for t in ws.tables],
        notes=[n.title for n in ws.notes],
        memories=[m.text for m in ws.memories_of(agent.name)],
        history=[],
        step_number=number,
        max_steps=scenario.max_steps,
    )
    overviews.append(workspace_overview(turn))
    turn.opening_overview = overviews[0]
    turn.history = [_history_item(r, after) for r, after in zip(run.steps, overviews[1:], strict=True)]
    return turn


def _history_item(record: StepRecord, overview: str) -> HistoryItem:
    """A step as the agent sees it: with the reply the step came from (the last call's, when a
    model gave it) and the workspace overview after it."""
    reply = record.calls[-1].raw if record.calls else None
    return HistoryItem(record.step, record.status, record.result, reply, overview)


class _Interference:
    """The scenario's ``interfere`` edit, applied once by the owner."""

    def __init__(self, scenario: Scenario) -> None:
        self.spec = scenario.interfere
        self.fired = False

    def maybe_apply(self, ws: Workspace, step: Step, outcome: ToolOutcome) -> None:
        spec = self.spec
        if spec is None or self.fired or outcome.status != OK or step.tool != spec.after_tool:
            return
        wanted = spec.table if spec.table is not None else spec.note
        if tool_target(step.tool, step.args).casefold() != (wanted or "").casefold():
            return
        self.fired = True
        if spec.table is not None:
            ws.owner_update_row(spec.table, spec.row_match, spec.set or {})
        else:
            ws.owner_append_note(spec.note or "", spec.append or "")
