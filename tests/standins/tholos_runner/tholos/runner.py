"""The agent loop (a stand-in written by the repro project for its tests; not Tholos-Bench's
runner): one scenario's primary agent, one step per turn, until it finishes, waits, or fails.

- A turn sends the run's messages so far. A reply that is not a valid step (tholos.model.parse_step)
  is asked again once, with an `Invalid step: ` message added; a second invalid reply costs the
  step: it is kept (the assistant message and an error result) and the run goes on.
- The call runs through the rules (deny > ask > allow; an `ask` takes the owner's scripted
  `respond.approve`: approved, declined, or none, which leaves the run waiting) and then the tool.
- The third identical call (tool and arguments) in a row is not run: the run fails as `stuck`.
  Running out of steps (the scenario's `max_steps`) fails it as `step limit`; a failed request
  stops it as `engine: ...`.
- The scenario's `interfere` edit is made once, as the owner, after the first successful step
  with its tool and its table or note.
- Teammates do not run: a task handed to one is only recorded.

Recorded in the database: one step row per step (number, tool, arguments, status, result) and one
`retried` row before it for a first reply that was invalid; the run's status, error, step count,
tokens (the server's usage over the steps' requests) and messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tholos import prompt, tools
from tholos.model import Client, EngineError, Reply, parse_step
from tholos.values import matches
from tholos.workspace import Workspace, read_tables

STUCK_AFTER = 3


@dataclass
class Attempt:
    """What one turn got: the step (None when both replies were invalid), the assistant message
    kept, the replies it took, and why the first (and the second) was invalid."""

    step: dict[str, Any] | None
    content: str
    replies: list[Reply]
    invalid: list[str]


def turn(
    client: Client, messages: list[dict[str, Any]], schema: dict[str, Any], signatures: dict[str, tuple[str, ...]]
) -> Attempt:
    first = client.complete(messages, schema)
    step, why = parse_step(first.content, signatures)
    if step is not None:
        return Attempt(step, first.content, [first], [])
    again = client.complete([*messages, {"role": "user", "content": prompt.retry(why)}], schema)
    step, why_again = parse_step(again.content, signatures)
    return Attempt(step, again.content, [first, again], [why] if step is not None else [why, why_again])


def execute(ctx: tools.Context, tool: str, args: dict[str, Any]) -> tools.Outcome:
    """One call: its arguments checked, the rules applied, the tool run."""
    try:
        tools.check_args(tool, args)
        target = tools.target(tool, args)
        decision = ctx.ws.decide(ctx.agent, tool, target)
        if decision == "deny":
            raise tools.ToolError(f"refused: a rule denies {tool} on {target!r}", "refused")
        if decision == "ask":
            approve = ctx.respond.get("approve")
            ctx.ws.add_approval(ctx.run_id, ctx.agent, tool, target, approve)
            if approve is None:
                return tools.Outcome("waiting", {"waiting": f"the owner was asked to approve {tool} on {target!r}"})
            if not approve:
                raise tools.ToolError(f"the owner declined {tool} on {target!r}; it was not done", "refused")
        return tools.HANDLERS[tool](ctx, **args)
    except tools.ToolError as error:
        return tools.Outcome(error.status, {"error": str(error)})


def interfere(ws: Workspace, spec: dict[str, Any], step: dict[str, Any]) -> bool:
    """The owner's edit, when `step` is the one it waits for; whether it was made."""
    if step["tool"] != spec.get("after_tool"):
        return False
    wanted = spec.get("table") if spec.get("table") is not None else spec.get("note")
    if tools.target(step["tool"], step["args"]).casefold() != str(wanted or "").casefold():
        return False
    if spec.get("table") is not None:
        table = ws.table(spec["table"])
        if table is not None:
            match = spec.get("row_match") or {}
            row = next((r for r in ws.rows(table["id"]) if row_matches(table, r["values"], match)), None)
            by_name = {c.casefold(): c for c in table["columns"]}
            changes = {by_name[k.casefold()]: v for k, v in (spec.get("set") or {}).items() if k.casefold() in by_name}
            if row is not None and changes:
                ws.update_row(table["id"], row["row"], changes)
    else:
        note = ws.note(spec["note"])
        if note is not None:
            ws.write_note(note["id"], note["body"] + str(spec.get("append") or ""))
    return True


def row_matches(table: dict[str, Any], cells: dict[str, Any], wanted: dict[str, Any]) -> bool:
    by_name = {c.casefold(): c for c in table["columns"]}
    return all(
        key.casefold() in by_name and matches(value, cells.get(by_name[key.casefold()]))
        for key, value in wanted.items()
    )


def run_agent(ws: Workspace, scenario: dict[str, Any], client: Client, task_number: int | None) -> int:
    """Run the scenario's agent in `ws`; the run's id in the database."""
    agent = ws.agent(scenario["agent"])
    if agent is None:
        raise ValueError(f"{scenario['id']}: its agent {scenario['agent']!r} is not in its workspace")
    names = [n for n in agent["tools"] if n in tools.SIGNATURES] + ([] if "finish" in agent["tools"] else ["finish"])
    signatures = {name: tools.SIGNATURES[name] for name in names}
    schema = prompt.step_schema(names)
    run_id = ws.start_run(agent["name"])
    ctx = tools.Context(
        ws, agent["name"], run_id, dict(scenario.get("respond") or {}), dict(scenario.get("fixtures") or {})
    )
    overview = {
        "Tables": [
            f"{t['name']} ({', '.join(t['columns'])}; {len(ws.rows(t['id']))} rows)"
            for t in read_tables(ws.db, rows=False)
        ],
        "Notes": ws.note_titles(),
        "What you remember": ws.memories_of(agent["name"]),
    }
    teammates = [a for a in ws.agents if a["name"] != agent["name"]]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompt.system(agent, teammates, overview)},
        {"role": "user", "content": prompt.opening(ws.clock.now(), scenario["trigger"], task_number)},
    ]
    calls: list[str | None] = []  # each step's call as text (None: an invalid step), for the stuck rule
    pending = scenario.get("interfere")
    status, tokens_in, tokens_out = "failed", 0, 0
    error: str | None = "step limit"  # unless the run ends otherwise
    summary: str | None = None
    for number in range(1, int(scenario["max_steps"]) + 1):
        try:
            attempt = turn(client, messages, schema, signatures)
        except EngineError as failure:
            status, error = "failed", f"engine: {failure}"
            break
        tokens_in += sum(r.prompt_tokens for r in attempt.replies)
        tokens_out += sum(r.completion_tokens for r in attempt.replies)
        if len(attempt.replies) == 2:
            ws.record_step(run_id, number, None, "retried", {"error": f"invalid step: {attempt.invalid[0]}"})
        step = attempt.step
        call = None if step is None else json.dumps([step["tool"], step["args"]], sort_keys=True)
        if step is None:
            outcome = tools.Outcome("invalid", {"error": f"invalid step: {attempt.invalid[-1]}"})
            ws.record_step(run_id, number, None, "invalid", {**outcome.result, "invalid_json_count": 1})
        elif call is not None and calls[-(STUCK_AFTER - 1) :] == [call] * (STUCK_AFTER - 1):
            outcome = tools.Outcome("stuck", {"error": f"the same call {STUCK_AFTER} times in a row"})
            ws.record_step(run_id, number, step, outcome.status, outcome.result)
        else:
            outcome = execute(ctx, step["tool"], step["args"])
            ws.record_step(run_id, number, step, outcome.status, outcome.result)
        calls.append(call)
        messages += [
            {"role": "assistant", "content": attempt.content},
            {"role": "user", "content": prompt.tool_response(outcome.result)},
        ]
        if outcome.status == "stuck":
            status, error = "failed", "stuck"
            break
        if outcome.status == "finished":
            assert step is not None
            status, error, summary = "done", None, str(step["args"]["summary"])
            break
        if outcome.status == "waiting":
            status, error = "waiting", None
            break
        if pending and step is not None and outcome.status == "ok" and interfere(ws, pending, step):
            pending = None
    ws.end_run(
        run_id,
        status=status,
        error=error,
        step_count=sum(1 for m in messages if m["role"] == "assistant"),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        finish_summary=summary,
        messages=messages,
    )
    return run_id
