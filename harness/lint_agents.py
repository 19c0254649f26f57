"""Scripted agents for scenario lint: a scenario must not be passable by doing (almost) nothing.

- ``FINISH_NOW`` finishes at once: it must fail every scenario outside ``nothing_to_do``.
- ``PLAUSIBLE_WRITERS`` each make one plausible write, then finish: each must fail every
  ``nothing_to_do`` scenario it applies to. A writer applies only when its target exists and
  its tools are among the agent's tools.

Scenario writers can use them directly::

    from harness.lint_agents import FINISH_NOW, PLAUSIBLE_WRITERS
    from harness.runner import run_scenario
    result = run_scenario(scenario, FINISH_NOW.policy(scenario))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.policy import ScriptedPolicy, Step
from harness.scenario import Scenario

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
    values = {c: None for c in table.columns}
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
