"""Text shown to models: the trigger, the workspace overview, tool results."""

from __future__ import annotations

from harness.agent.policy import HistoryItem, Turn
from harness.io.strict_json import dumps_compact
from harness.model.scenario import (
    FollowUpTrigger,
    MessageTrigger,
    ScheduleTrigger,
    TaskTrigger,
)
from harness.tools import TOOL_SPECS


def render_trigger(trigger: object) -> str:
    """The event that starts the run, as the agent reads it."""
    if isinstance(trigger, TaskTrigger):
        sender = "the owner (you)" if trigger.from_ == "you" else trigger.from_
        details = f"\n{trigger.details}" if trigger.details else ""
        return f"New task from {sender}: {trigger.title}{details}"
    if isinstance(trigger, ScheduleTrigger):
        return f"Scheduled run: {trigger.prompt}"
    if isinstance(trigger, FollowUpTrigger):
        return f"A follow-up you scheduled is due: {trigger.note}"
    if isinstance(trigger, MessageTrigger):
        return f"Message from the owner: {trigger.text}"
    raise TypeError(f"unknown trigger {trigger!r}")


def workspace_overview(turn: Turn) -> str:
    """Tables, notes, teammates and memories, one short line each."""
    lines = [f"Now: {turn.now}."]
    if turn.tables:
        tables = "; ".join(f"{t.name} ({', '.join(t.columns)}; {t.row_count} rows)" for t in turn.tables)
        lines.append(f"Tables: {tables}.")
    if turn.notes:
        lines.append("Notes: " + "; ".join(turn.notes) + ".")
    if "task_add" in turn.agent.tools:
        team = "".join(f"; {a.name} ({a.role})" for a in turn.teammates)
        lines.append(f"Who can take a task (task_add): you (the owner){team}.")
    if turn.memories:
        lines.append("Your saved memories: " + " | ".join(turn.memories))
    return "\n".join(lines)


def tool_lines(tools: list[str]) -> str:
    return "\n".join(f"- {TOOL_SPECS[t].signature()}: {TOOL_SPECS[t].summary}" for t in tools)


def render_result(item: HistoryItem) -> str:
    """A tool result as the model reads it."""
    return f"Result ({item.status}): {dumps_compact(item.result)}"
