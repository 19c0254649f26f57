"""The workspace tools: tables, notes, search, tasks, questions to the owner, memories,
follow-ups and finish, acting on the run's Workspace (harness/model/workspace.py).

Reads are marked per agent: an update of a row, or a replace of a note, that the agent has
not read (or that changed since it read it) is a conflict, not an error, and the result carries
the current version.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness.io.strict_json import dumps_compact
from harness.model.clock import iso
from harness.model.query import QueryError, parse_query
from harness.model.scenario import OWNER
from harness.model.values import as_text, contains_text
from harness.model.workspace import FollowUp, Memory, Question, Row, Table, Task
from harness.tools.context import CONFLICT, FINISHED, OK, WAITING, Handler, ToolContext, ToolFailure, ToolOutcome

DEFAULT_READ_LIMIT = 10
READ_BUDGET_CHARS = 3000
SEARCH_HITS = 10


# ---------------------------------------------------------------------------- tables


def _table(ctx: ToolContext, name: str) -> Table:
    table = ctx.ws.table(name)
    if table is None:
        names = ", ".join(t.name for t in ctx.ws.tables) or "none"
        raise ToolFailure(f"no table named {name!r}; tables: {names}")
    return table


def table_read(ctx: ToolContext, table: str, query: str | None, limit: int | None) -> ToolOutcome:
    found = _table(ctx, table)
    try:
        parsed = parse_query(query, found.columns)
    except QueryError as exc:
        raise ToolFailure(str(exc)) from None
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
        raise ToolFailure("the table name is empty")
    if ctx.ws.table(name) is not None:
        raise ToolFailure(f"table {name!r} already exists")
    cleaned = [c.strip() for c in columns]
    if any(not c for c in cleaned) or len({c.casefold() for c in cleaned}) != len(cleaned):
        raise ToolFailure("column names must be non-empty and distinct")
    created = ctx.ws.create_table(name, cleaned)
    return ToolOutcome(OK, {"created": created.name, "columns": created.columns})


def table_add(ctx: ToolContext, table: str, rows: list[dict[str, Any]]) -> ToolOutcome:
    found = _table(ctx, table)
    prepared = [_map_columns(found, values, f"rows[{i}]") for i, values in enumerate(rows)]
    added = [found.append(values) for values in prepared]
    for row in added:
        ctx.ws.mark_row_read(ctx.agent, found, row)
    return ToolOutcome(OK, {"table": found.name, "added_rows": [r.number for r in added], "row_count": len(found.rows)})


def table_update(ctx: ToolContext, table: str, row: int, values: dict[str, Any]) -> ToolOutcome:
    found = _table(ctx, table)
    target = found.row(row)
    if target is None:
        raise ToolFailure(f"table {found.name!r} has rows 1 to {len(found.rows)}; there is no row {row}")
    changes = {k: v for k, v in _map_columns(found, values, "values").items() if v is not None}
    if not changes:
        raise ToolFailure("every value is null, so nothing would change")
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


def _map_columns(table: Table, values: dict[str, Any], where: str) -> dict[str, Any]:
    """``values`` keyed by the table's column names; ToolFailure, naming ``where`` and listing
    the columns, for an unknown column or a value that is not a cell."""
    mapped: dict[str, Any] = {}
    for key, value in values.items():
        column = table.column(key)
        if column is None:
            raise ToolFailure(f"{where}: unknown column {key!r}", columns=table.columns)
        if isinstance(value, (dict, list)):
            raise ToolFailure(f"{where}: {key!r} must be a string, number, boolean or null", columns=table.columns)
        mapped[column] = value
    return mapped


# ---------------------------------------------------------------------------- notes


def note_read(ctx: ToolContext, title: str) -> ToolOutcome:
    note = ctx.ws.note(title)
    if note is None:
        titles = ", ".join(n.title for n in ctx.ws.notes) or "none"
        raise ToolFailure(f"no note titled {title!r}; notes: {titles}")
    ctx.ws.mark_note_read(ctx.agent, note)
    return ToolOutcome(OK, {"title": note.title, "version": note.version, "body": note.body})


def note_write(ctx: ToolContext, title: str, text: str, mode: str) -> ToolOutcome:
    if not title.strip():
        raise ToolFailure("the note title is empty")
    note = ctx.ws.note(title)
    if note is None:
        note = ctx.ws.create_note(title.strip(), text)
    elif mode == "append":
        note.write(note.body + text)
    else:
        read_version = ctx.ws.note_read_version(ctx.agent, note)
        if read_version != note.version:
            reason = (
                "read the note before replacing it" if read_version is None else "the note changed since you read it"
            )
            current = {"title": note.title, "version": note.version, "body": note.body}
            return ToolOutcome(CONFLICT, {"conflict": f"{reason}; read it again, then retry", "current": current})
        note.write(text)
    ctx.ws.mark_note_read(ctx.agent, note)
    return ToolOutcome(OK, {"title": note.title, "version": note.version, "mode": mode, "length": len(note.body)})


# ---------------------------------------------------------------------------- search


def search(ctx: ToolContext, query: str) -> ToolOutcome:
    words = query.split()
    if not words:
        raise ToolFailure("the query is empty")

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
        raise ToolFailure(f"no teammate named {to!r}; choose one of: {team}")
    if not title.strip():
        raise ToolFailure("the task title is empty")
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
        raise ToolFailure("the fact is empty")
    ctx.ws.memories.append(Memory(ctx.agent, fact.strip(), new=True, created_at=ctx.ws.clock.now()))
    return ToolOutcome(OK, {"remembered": fact.strip()})


def follow_up(ctx: ToolContext, minutes: int, note: str) -> ToolOutcome:
    created = ctx.ws.clock.now()
    due = created + timedelta(minutes=minutes)
    ctx.ws.follow_ups.append(FollowUp(ctx.agent, minutes, note, created, due))
    return ToolOutcome(OK, {"follow_up_due": iso(due), "note": note})


def finish(ctx: ToolContext, summary: str) -> ToolOutcome:
    return ToolOutcome(FINISHED, {"finished": True})


HANDLERS: dict[str, Handler] = {
    "table_read": table_read,
    "table_create": table_create,
    "table_add": table_add,
    "table_update": table_update,
    "note_read": note_read,
    "note_write": note_write,
    "search": search,
    "task_add": task_add,
    "ask": ask,
    "remember": remember,
    "follow_up": follow_up,
    "finish": finish,
}
