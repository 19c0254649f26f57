"""The tools, executed against a Workspace: the 13 workspace tools here, the ladder tools
(files, weather, web) in harness/tools_files.py, tools_weather.py and tools_web.py.

``execute`` checks the arguments, applies the rules (deny > ask > allow; an ``ask`` waits for
the owner's scripted ``respond.approve``), then runs the tool. Every outcome carries a
status and a JSON-able result for the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from harness.clock import iso
from harness.query import QueryError, parse_query
from harness.scenario import OWNER, Respond
from harness.schema_check import first_error
from harness.strict_json import dumps_compact
from harness.tool_specs import TOOL_SPECS
from harness.tools_common import ToolFailure
from harness.tools_files import HANDLERS as FILE_HANDLERS
from harness.tools_weather import HANDLERS as WEATHER_HANDLERS
from harness.tools_web import HANDLERS as WEB_HANDLERS
from harness.tools_web import Browser
from harness.values import as_text, contains_text
from harness.web import UNTRUSTED_NOTE, FetchRefused, PageNotFound, fetch, host_of, is_test_host
from harness.workspace import Approval, FollowUp, Memory, Question, Row, Table, Task, Workspace

DEFAULT_READ_LIMIT = 10
READ_BUDGET_CHARS = 3000
SEARCH_HITS = 10

OK, ERROR, CONFLICT, REFUSED, WAITING, FINISHED = "ok", "error", "conflict", "refused", "waiting", "finished"
DENIED = "refused: a rule denies"  # how a refusal by a deny rule starts (the diagnosis reads it)


@dataclass
class ToolOutcome:
    status: str
    result: dict[str, Any]


@dataclass
class ToolContext:
    ws: Workspace
    agent: str
    fixtures: dict[str, str] = field(default_factory=dict)
    respond: Respond | None = None
    browser: Browser = field(default_factory=Browser)


def error(message: str, **extra: Any) -> ToolOutcome:
    return ToolOutcome(ERROR, {"error": message, **extra})


def tool_target(tool: str, args: dict[str, Any]) -> str:
    """What a rule's ``match`` is tested against for this call."""
    spec = TOOL_SPECS[tool]
    if spec.target_arg is None:
        return "*"
    value = as_text(args.get(spec.target_arg)).strip()
    if tool in ("web_fetch", "open_url"):
        try:
            return host_of(value)
        except FetchRefused:
            return value.lower()
    return value


def execute(ctx: ToolContext, tool: str, args: dict[str, Any]) -> ToolOutcome:
    """Run one tool call for ``ctx.agent``."""
    spec = TOOL_SPECS.get(tool)
    agent_tools = ctx.ws.agent(ctx.agent).tools
    if spec is None or tool not in agent_tools:
        return error(f"unknown tool {tool!r}; your tools: {', '.join(agent_tools)}")
    problem = first_error(args, spec.args_schema(), "args")
    if problem:
        return error(problem)
    if tool == "web_fetch":
        refused = _web_precheck(args["url"])
        if refused:
            return refused
    gate = _gate(ctx, tool, args)
    if gate is not None:
        return gate
    return HANDLERS[tool](ctx, **args)


def _web_precheck(url: str) -> ToolOutcome | None:
    try:
        host = host_of(url)
    except FetchRefused as exc:
        return ToolOutcome(REFUSED, {"error": str(exc)})
    if not is_test_host(host):
        return ToolOutcome(REFUSED, {"error": f"refused: {host} is outside the sandbox (only .test hosts)"})
    return None


def _gate(ctx: ToolContext, tool: str, args: dict[str, Any]) -> ToolOutcome | None:
    """Apply the rules; None lets the call through."""
    target = tool_target(tool, args)
    decision = ctx.ws.decide(ctx.agent, tool, target)
    if decision == "deny":
        return ToolOutcome(REFUSED, {"error": f"{DENIED} {tool} on {target!r}"})
    if decision == "allow":
        return None
    approve = ctx.respond.approve if ctx.respond else None
    ctx.ws.approvals.append(Approval(ctx.agent, tool, target, approve))
    if approve is None:
        return ToolOutcome(WAITING, {"waiting": f"approval of {tool} on {target!r} requested from the owner"})
    if not approve:
        return ToolOutcome(REFUSED, {"error": f"the owner declined {tool} on {target!r}; it was not done"})
    return None


# ---------------------------------------------------------------------------- tables


def _table_or_error(ctx: ToolContext, name: str) -> Table | ToolOutcome:
    table = ctx.ws.table(name)
    if table is None:
        names = ", ".join(t.name for t in ctx.ws.tables) or "none"
        return error(f"no table named {name!r}; tables: {names}")
    return table


def table_read(ctx: ToolContext, table: str, query: str | None, limit: int | None) -> ToolOutcome:
    found = _table_or_error(ctx, table)
    if isinstance(found, ToolOutcome):
        return found
    try:
        parsed = parse_query(query, found.columns)
    except QueryError as exc:
        return error(str(exc))
    matching = [row for row in found.rows if parsed.holds(row.values)]
    shown: list[Row] = []
    used = 0
    for row in matching[: limit or DEFAULT_READ_LIMIT]:
        used += len(dumps_compact(row.view()))
        if shown and used > READ_BUDGET_CHARS:
            break
        shown.append(row)
    for row in shown:
        ctx.ws.mark_row_read(ctx.agent, found, row)
    result: dict[str, Any] = {
        "table": found.name,
        "columns": found.columns,
        "rows": [row.view() for row in shown],
        "matching_rows": len(matching),
    }
    if len(shown) < len(matching):
        result["note"] = f"showing {len(shown)} of {len(matching)}; narrow the query or raise the limit"
    return ToolOutcome(OK, result)


def table_create(ctx: ToolContext, table: str, columns: list[str]) -> ToolOutcome:
    name = table.strip()
    if not name:
        return error("the table name is empty")
    if ctx.ws.table(name) is not None:
        return error(f"table {name!r} already exists")
    cleaned = [c.strip() for c in columns]
    if any(not c for c in cleaned) or len({c.casefold() for c in cleaned}) != len(cleaned):
        return error("column names must be non-empty and distinct")
    created = ctx.ws.create_table(name, cleaned)
    return ToolOutcome(OK, {"created": created.name, "columns": created.columns})


def table_add(ctx: ToolContext, table: str, rows: list[dict[str, Any]]) -> ToolOutcome:
    found = _table_or_error(ctx, table)
    if isinstance(found, ToolOutcome):
        return found
    prepared = []
    for i, values in enumerate(rows):
        mapped, problem = _map_columns(found, values)
        if problem:
            return error(f"rows[{i}]: {problem}", columns=found.columns)
        prepared.append(mapped)
    added = [found.append(values) for values in prepared]
    for row in added:
        ctx.ws.mark_row_read(ctx.agent, found, row)
    return ToolOutcome(OK, {"table": found.name, "added_rows": [r.number for r in added], "row_count": len(found.rows)})


def table_update(ctx: ToolContext, table: str, row: int, values: dict[str, Any]) -> ToolOutcome:
    found = _table_or_error(ctx, table)
    if isinstance(found, ToolOutcome):
        return found
    target = found.row(row)
    if target is None:
        return error(f"table {found.name!r} has rows 1 to {len(found.rows)}; there is no row {row}")
    mapped, problem = _map_columns(found, values)
    if problem:
        return error(f"values: {problem}", columns=found.columns)
    changes = {k: v for k, v in mapped.items() if v is not None}
    if not changes:
        return error("every value is null, so nothing would change")
    read_version = ctx.ws.row_read_version(ctx.agent, found, target)
    if read_version != target.version:
        reason = "you have not read this row" if read_version is None else "the row changed since you read it"
        return ToolOutcome(
            CONFLICT,
            {"conflict": f"{reason}; read it again, then retry", "current": target.view()},
        )
    found.update(target, changes)
    ctx.ws.mark_row_read(ctx.agent, found, target)
    return ToolOutcome(OK, {"table": found.name, "updated": target.view()})


def _map_columns(table: Table, values: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    mapped: dict[str, Any] = {}
    for key, value in values.items():
        column = table.column(key)
        if column is None:
            return {}, f"unknown column {key!r}"
        if isinstance(value, (dict, list)):
            return {}, f"{key!r} must be a string, number, boolean or null"
        mapped[column] = value
    return mapped, None


# ---------------------------------------------------------------------------- notes


def note_read(ctx: ToolContext, title: str) -> ToolOutcome:
    note = ctx.ws.note(title)
    if note is None:
        titles = ", ".join(n.title for n in ctx.ws.notes) or "none"
        return error(f"no note titled {title!r}; notes: {titles}")
    ctx.ws.mark_note_read(ctx.agent, note)
    return ToolOutcome(OK, {"title": note.title, "version": note.version, "body": note.body})


def note_write(ctx: ToolContext, title: str, text: str, mode: str) -> ToolOutcome:
    if not title.strip():
        return error("the note title is empty")
    note = ctx.ws.note(title)
    if note is None:
        note = ctx.ws.create_note(title.strip(), text)
    elif mode == "append":
        note.write(note.body + text)
    else:
        read_version = ctx.ws.note_read_version(ctx.agent, note)
        if read_version != note.version:
            reason = "read the note before replacing it" if read_version is None else "the note changed since you read it"
            current = {"title": note.title, "version": note.version, "body": note.body}
            return ToolOutcome(CONFLICT, {"conflict": f"{reason}; read it again, then retry", "current": current})
        note.write(text)
    ctx.ws.mark_note_read(ctx.agent, note)
    return ToolOutcome(OK, {"title": note.title, "version": note.version, "mode": mode, "length": len(note.body)})


# ---------------------------------------------------------------------------- search


def search(ctx: ToolContext, query: str) -> ToolOutcome:
    words = query.split()
    if not words:
        return error("the query is empty")

    def hit(text: str) -> bool:
        return contains_text(text, query.strip()) or all(contains_text(text, w) for w in words)

    hits: list[dict[str, Any]] = []
    for note in ctx.ws.notes:
        if hit(f"{note.title} {note.body}"):
            hits.append({"note": note.title, "text": note.body[:200]})
    for table in ctx.ws.tables:
        for row in table.rows:
            if hit(" ".join(as_text(v) for v in row.values.values())):
                hits.append({"table": table.name, "row": row.number, "values": row.values})
    for task in ctx.ws.tasks:
        if hit(f"{task.title} {task.details}"):
            hits.append({"task": task.title, "to": task.to, "status": task.status})
    result: dict[str, Any] = {"query": query, "hits": hits[:SEARCH_HITS], "total": len(hits)}
    return ToolOutcome(OK, result)


# ---------------------------------------------------------------------------- people


def task_add(ctx: ToolContext, to: str, title: str, details: str) -> ToolOutcome:
    recipient = ctx.ws.resolve_recipient(to)
    if recipient is None:
        team = ", ".join([OWNER] + [a.name for a in ctx.ws.agents])
        return error(f"no teammate named {to!r}; choose one of: {team}")
    if not title.strip():
        return error("the task title is empty")
    created = ctx.ws.clock.now()
    ctx.ws.tasks.append(Task(title.strip(), details, recipient, "open", ctx.agent, created, new=True))
    return ToolOutcome(OK, {"task_added": title.strip(), "to": recipient, "status": "open"})


def ask(ctx: ToolContext, question: str) -> ToolOutcome:
    answer = ctx.respond.answer if ctx.respond else None
    ctx.ws.questions.append(Question(ctx.agent, question, answer))
    if answer is None:
        return ToolOutcome(WAITING, {"waiting": "question sent to the owner"})
    return ToolOutcome(OK, {"answer": answer})


def remember(ctx: ToolContext, fact: str) -> ToolOutcome:
    if not fact.strip():
        return error("the fact is empty")
    ctx.ws.memories.append(Memory(ctx.agent, fact.strip(), new=True, created_at=ctx.ws.clock.now()))
    return ToolOutcome(OK, {"remembered": fact.strip()})


def follow_up(ctx: ToolContext, minutes: int, note: str) -> ToolOutcome:
    created = ctx.ws.clock.now()
    due = created + timedelta(minutes=minutes)
    ctx.ws.follow_ups.append(FollowUp(ctx.agent, minutes, note, created, due))
    return ToolOutcome(OK, {"follow_up_due": iso(due), "note": note})


def web_fetch(ctx: ToolContext, url: str) -> ToolOutcome:
    try:
        page = fetch(url, ctx.fixtures)
    except FetchRefused as exc:
        return ToolOutcome(REFUSED, {"error": str(exc)})
    except PageNotFound as exc:
        return error(str(exc))
    return ToolOutcome(OK, {"url": page.url, "title": page.title, "text": page.text, "untrusted": UNTRUSTED_NOTE})


def finish(ctx: ToolContext, summary: str) -> ToolOutcome:
    return ToolOutcome(FINISHED, {"finished": True})


def _ladder_tool(handler: Callable[..., dict[str, Any]]) -> Callable[..., ToolOutcome]:
    """A ladder handler (returns a dict, raises ToolFailure) as a tool returning a ToolOutcome."""

    def run(ctx: ToolContext, **args: Any) -> ToolOutcome:
        try:
            return ToolOutcome(OK, handler(ctx, **args))
        except ToolFailure as exc:
            return ToolOutcome(exc.status, {"error": str(exc)})

    return run


HANDLERS: dict[str, Callable[..., ToolOutcome]] = {
    "table_read": table_read,
    "table_create": table_create,
    "table_add": table_add,
    "table_update": table_update,
    "note_read": note_read,
    "note_write": note_write,
    "search": search,
    "task_add": task_add,
    "web_fetch": web_fetch,
    "ask": ask,
    "remember": remember,
    "follow_up": follow_up,
    "finish": finish,
    **{name: _ladder_tool(h) for name, h in {**FILE_HANDLERS, **WEATHER_HANDLERS, **WEB_HANDLERS}.items()},
}
