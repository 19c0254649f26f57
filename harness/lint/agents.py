"""Scripted agents for scenario lint: a scenario must not be passable by doing (almost) nothing.

- ``FINISH_NOW`` finishes at once: it must fail every scenario outside ``nothing_to_do``.
- ``PLAUSIBLE_WRITERS`` each make one plausible write, then finish: each must fail every
  ``nothing_to_do`` and every ladder scenario it applies to. A writer applies only when its
  target exists and its tools are among the agent's tools.
- ``RANDOM_CALLERS`` call one to three of the agent's tools at random (valid arguments from a
  fixed pool, seeded by scenario id), then finish with "Done." or with the results pasted in:
  each must fail every ladder scenario of level 0 and 1.

Scenario writers can use them directly::

    from harness.lint.agents import FINISH_NOW, PLAUSIBLE_WRITERS
    from harness.runner import run_scenario
    result = run_scenario(scenario, FINISH_NOW.policy(scenario))
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.agent.policy import PolicyReply, ScriptedPolicy, Step, Turn
from harness.io.strict_json import dumps_compact
from harness.model.scenario import Scenario
from harness.tools import TOOL_SPECS

FINISH = Step("finish", {"summary": "Done."})


@dataclass(frozen=True)
class LintAgent:
    name: str
    tools: tuple[str, ...]
    plan: Callable[[Scenario], list[Step] | None]  # the steps before finish, or None if no target

    def applies(self, scenario: Scenario) -> bool:
        tools = scenario.agent_spec().tools
        return all(t in tools for t in self.tools) and self.plan(scenario) is not None

    def steps(self, scenario: Scenario) -> list[Step]:
        return [*(self.plan(scenario) or []), FINISH]

    def policy(self, scenario: Scenario) -> ScriptedPolicy:
        return ScriptedPolicy(self.steps(scenario))


def _finish_now(scenario: Scenario) -> list[Step]:
    return []


def _add_row(scenario: Scenario) -> list[Step] | None:
    tables = scenario.workspace.tables
    if not tables:
        return None
    table = tables[0]
    row = dict(table.rows[0]) if table.rows else {}
    values = {c: row.get(c, "x") for c in table.columns}
    return [Step("table_add", {"table": table.name, "rows": [values]})]


def _update_first_row(scenario: Scenario) -> list[Step] | None:
    tables = scenario.workspace.tables
    if not tables or not tables[0].rows:
        return None
    table = tables[0]
    values: dict[str, str | None] = {c: None for c in table.columns}
    values[table.columns[-1]] = "changed"
    return [
        Step("table_read", {"table": table.name, "query": None, "limit": None}),
        Step("table_update", {"table": table.name, "row": 1, "values": values}),
    ]


def _append_to_first_note(scenario: Scenario) -> list[Step] | None:
    notes = scenario.workspace.notes
    if not notes:
        return None
    return [Step("note_write", {"title": notes[0].title, "text": "\nChecked today.", "mode": "append"})]


def _write_summary_note(scenario: Scenario) -> list[Step] | None:
    return [Step("note_write", {"title": "Summary", "text": "Summary of this run.", "mode": "replace"})]


def _task_to_owner(scenario: Scenario) -> list[Step] | None:
    return [Step("task_add", {"to": "you", "title": "Review this", "details": "Please review the workspace."})]


FINISH_NOW = LintAgent("finish_now", (), _finish_now)
PLAUSIBLE_WRITERS: tuple[LintAgent, ...] = (
    LintAgent("add_row_to_first_table", ("table_add",), _add_row),
    LintAgent("update_first_row", ("table_read", "table_update"), _update_first_row),
    LintAgent("append_to_first_note", ("note_write",), _append_to_first_note),
    LintAgent("write_summary_note", ("note_write",), _write_summary_note),
    LintAgent("add_task_to_owner", ("task_add",), _task_to_owner),
)


# ---------------------------------------------------------------------------- random callers

RANDOM_STRINGS = (
    ".",
    "..",
    "/",
    "~",
    "notes.txt",
    "README.md",
    "*.md",
    "docs",
    "Paris",
    "London",
    "weather",
    "news today",
    "https://www.example.test/",
    "Next",
    "Can you help?",
)
RANDOM_SEEDS = range(6)
RANDOM_MAX_CALLS = 3


def random_args(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value valid for one argument schema of harness.model.tool_specs, drawn with ``rng``."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kinds = schema.get("type", "string")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "integer":
        low = schema.get("minimum", 1)
        return rng.randint(low, min(schema.get("maximum", low + 5), low + 5))
    if kind == "array":
        return [random_args(schema.get("items", {}), rng) for _ in range(schema.get("minItems", 1))]
    if kind == "object":
        return {}
    return rng.choice(RANDOM_STRINGS)


class RandomCaller:
    """Calls 1 to 3 of the agent's tools at random with valid arguments, then finishes with
    "Done." or, when ``echo``, with every tool result pasted into the summary."""

    def __init__(self, scenario: Scenario, seed: int, echo: bool) -> None:
        self.rng = random.Random(f"{seed}:{scenario.id}")
        self.tools = sorted(t for t in scenario.agent_spec().tools if t != "finish")
        self.calls = self.rng.randint(1, RANDOM_MAX_CALLS) if self.tools else 0
        self.echo = echo

    def next_step(self, turn: Turn) -> PolicyReply:
        if turn.step_number > self.calls or turn.step_number >= turn.max_steps:
            summary = " ".join(dumps_compact(item.result) for item in turn.history) if self.echo else "Done."
            return PolicyReply(step=Step("finish", {"summary": summary or "Done."}))
        tool = self.rng.choice(self.tools)
        args = {name: random_args(schema, self.rng) for name, schema in TOOL_SPECS[tool].args.items()}
        return PolicyReply(step=Step(tool, args))


@dataclass(frozen=True)
class RandomAgent:
    name: str
    seed: int
    echo: bool

    def policy(self, scenario: Scenario) -> RandomCaller:
        return RandomCaller(scenario, self.seed, self.echo)


RANDOM_CALLERS: tuple[RandomAgent, ...] = tuple(
    RandomAgent(f"random_tools_{seed}{'_echo' if echo else ''}", seed, echo)
    for seed in RANDOM_SEEDS
    for echo in (False, True)
)
