"""The interface between the run loop and whatever chooses the steps.

A policy gets a ``Turn`` (what the agent can see) and returns a ``PolicyReply``: a ``Step``, or
an ``invalid`` reason when the model's reply could not be turned into a valid step. A policy
raises ``harness.clients.errors.EngineError`` when the engine itself fails.

Implementations: ``ScriptedPolicy`` (a fixed list of steps, e.g. a scenario's ``reference``),
``harness.protocols.json_schema.JsonSchemaPolicy`` (a model over a chat client), and the
scripted agents in ``harness.lint.agents``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.model.scenario import AgentSpec


@dataclass(frozen=True)
class Step:
    tool: str
    args: dict[str, Any]
    thought: str = ""

    def call(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": self.args}


@dataclass
class ModelCall:
    """One request to the engine, as recorded in the result."""

    raw: str
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    timings: dict[str, Any] | None = None
    problem: str | None = None  # why this reply was not a valid step, if it was not
    reject: str | None = None  # the problem's code (harness.protocols.base.REJECT_CODES)
    truncated: bool = False  # the engine cut the reply at max_tokens (finish_reason "length")
    tool: str | None = None  # the tool a rejected reply tried to call, when it names one
    repairs: list[str] = field(default_factory=list)  # json_prompt: the repairs applied, in order
    ignored_calls: list[dict[str, Any]] = field(default_factory=list)  # native_tools: calls after the first


@dataclass
class PolicyReply:
    step: Step | None = None
    invalid: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    prompt: list[dict[str, Any]] | None = None  # messages sent, recorded for the first turn only


@dataclass(frozen=True)
class TableView:
    name: str
    columns: list[str]
    row_count: int


@dataclass(frozen=True)
class HistoryItem:
    step: Step
    status: str
    result: dict[str, Any]
    reply: str | None = None  # the model's reply as recorded (ModelCall.raw); None without a model
    overview: str | None = None  # the workspace overview after the step; None when not known


@dataclass
class Turn:
    """What the agent sees when it chooses its next step."""

    agent: AgentSpec
    task: str  # the trigger, rendered as text
    now: str  # the pinned clock, human-readable
    teammates: list[AgentSpec]
    tables: list[TableView]
    notes: list[str]
    memories: list[str]
    history: list[HistoryItem]
    step_number: int  # 1-based number of the step being chosen
    max_steps: int
    opening_overview: str | None = None  # the workspace overview at the start; None: this turn's own


@runtime_checkable
class Policy(Protocol):
    def next_step(self, turn: Turn) -> PolicyReply: ...


class ScriptedPolicy:
    """Plays a fixed list of steps, one per turn; finishes when the list runs out."""

    def __init__(self, steps: Iterable[Step | dict[str, Any] | Any]) -> None:
        self._steps = [_as_step(s) for s in steps]
        self._next = 0

    def next_step(self, turn: Turn) -> PolicyReply:
        if self._next >= len(self._steps):
            return PolicyReply(step=Step("finish", {"summary": "No scripted steps left."}))
        step = self._steps[self._next]
        self._next += 1
        return PolicyReply(step=step)


def _as_step(value: Step | dict[str, Any] | Any) -> Step:
    if isinstance(value, Step):
        return value
    if isinstance(value, dict):
        return Step(value["tool"], dict(value["args"]), value.get("thought", ""))
    return Step(value.tool, dict(value.args))  # a scenario ReferenceStep
