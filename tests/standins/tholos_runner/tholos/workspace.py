"""The workspace an agent works in, kept in the scenario's database (tholos.db), and what was
recorded of its run (a stand-in written by the repro project for its tests; not Tholos-Bench's
runner).

- Rows are numbered from 1 in table order; a row and its table carry versions that go up at every
  change. Each agent's reads (row and note versions) are remembered for the run: updating a row,
  or replacing a note, that the agent has not read at its current version is a conflict.
- The clock is pinned (2026-06-01 09:00:00 UTC, a Monday, when asked) and each read of it
  advances it one second.
- `snapshot` is the state the scoring compares against: each table's and note's (id, version) by
  lower-cased name, and the ids of the tasks, memories and runs that existed before the run.
- `get_run` reads a run back (status, error, step count, tokens, messages and every step),
  from any connection, read-only included.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

PINNED_START = datetime(2026, 6, 1, 9, 0, 0, tzinfo=UTC)
OWNER = "you"
RANK = {"deny": 3, "ask": 2, "allow": 1}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def iso(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """A clock that moves one second at every read."""

    def __init__(self, start: datetime) -> None:
        self.next = start

    def now(self) -> datetime:
        current = self.next
        self.next = current + timedelta(seconds=1)
        return current


class Workspace:
    """One scenario's workspace in its database, for the agent loop and the tools."""

    def __init__(self, db: sqlite3.Connection, clock: Clock, scenario: dict[str, Any]) -> None:
        spec = scenario["workspace"]
        self.db, self.clock, self.scenario = db, clock, scenario
        self.agents: list[dict[str, Any]] = list(spec.get("agents") or [])
        self.rules: list[dict[str, Any]] = list(spec.get("rules") or [])
        self.row_reads: dict[tuple[str, int, int], int] = {}  # (agent, table id, row) -> version read
        self.note_reads: dict[tuple[str, int], int] = {}  # (agent, note id) -> version read

    # ---------------------------------------------------------------- the starting state

    def seed(self) -> int | None:
        """The scenario's tables, notes, tasks and memories; for a task trigger, the task itself
        (assigned to the agent): its id, the number the agent is told."""
        spec = self.scenario["workspace"]
        for table in spec.get("tables") or []:
            table_id = self.create_table(table["name"], list(table["columns"]))
            for cells in table.get("rows") or []:
                self.add_row(table_id, {c: cells.get(c) for c in table["columns"]})
            self.db.execute("UPDATE ws_tables SET version = 1 WHERE id = ?", (table_id,))
        for note in spec.get("notes") or []:
            self.create_note(note["title"], note.get("body", ""))
        for task in spec.get("tasks") or []:
            to = self.recipient(task.get("to") or OWNER) or task.get("to") or OWNER
            self.db.execute(
                "INSERT INTO tasks (title, details, assignee, status, created_by) VALUES (?, ?, ?, ?, ?)",
                (task["title"], task.get("details") or "", to, task.get("status") or "open", OWNER),
            )
        for memory in spec.get("memories") or []:
            agent = self.agent(memory["agent"])
            name = agent["name"] if agent else memory["agent"]
            self.db.execute("INSERT INTO memories (agent, text) VALUES (?, ?)", (name, memory["text"]))
        trigger = self.scenario["trigger"]
        if trigger.get("kind") != "task":
            return None
        cursor = self.db.execute(
            "INSERT INTO tasks (title, details, assignee, status, created_by) VALUES (?, ?, ?, 'open', ?)",
            (trigger["title"], trigger.get("details", ""), self.scenario["agent"], trigger.get("from", OWNER)),
        )
        return int(cursor.lastrowid or 0)

    # ---------------------------------------------------------------- people and rules

    def agent(self, name: str) -> dict[str, Any] | None:
        wanted = name.strip().casefold()
        return next((a for a in self.agents if a["name"].casefold() == wanted), None)

    def recipient(self, name: str) -> str | None:
        """`you` for the owner, an agent's own spelling of its name, or None."""
        if name.strip().casefold() in (OWNER, "owner"):
            return OWNER
        agent = self.agent(name)
        return agent["name"] if agent else None

    def decide(self, agent: str, tool: str, target: str) -> str:
        """deny > ask > allow among the rules that match (shell-style, case-insensitive); with none,
        web_fetch asks and everything else is allowed."""
        found = [
            rule["decision"]
            for rule in self.rules
            if fnmatchcase(agent.casefold(), str(rule.get("agent", "*")).casefold())
            and fnmatchcase(tool.casefold(), str(rule.get("tool", "*")).casefold())
            and fnmatchcase(target.casefold(), str(rule.get("match", "*")).casefold())
        ]
        if found:
            return max(found, key=lambda decision: RANK.get(decision, 0))
        return "ask" if tool == "web_fetch" else "allow"

    # ---------------------------------------------------------------- tables

    def table(self, name: str) -> dict[str, Any] | None:
        wanted = name.strip().casefold()
        return next((t for t in read_tables(self.db, rows=False) if t["name"].casefold() == wanted), None)

    def table_names(self) -> list[str]:
        return [t["name"] for t in read_tables(self.db, rows=False)]

    def rows(self, table_id: int) -> list[dict[str, Any]]:
        return read_rows(self.db, table_id)

    def create_table(self, name: str, columns: list[str]) -> int:
        cursor = self.db.execute(
            "INSERT INTO ws_tables (name, columns, version) VALUES (?, ?, 1)", (name, dumps(columns))
        )
        return int(cursor.lastrowid or 0)

    def add_row(self, table_id: int, cells: dict[str, Any]) -> int:
        (count,) = self.db.execute("SELECT COUNT(*) FROM ws_rows WHERE table_id = ?", (table_id,)).fetchone()
        self.db.execute(
            "INSERT INTO ws_rows (table_id, number, cells, version) VALUES (?, ?, ?, 1)",
            (table_id, count + 1, dumps(cells)),
        )
        self.db.execute("UPDATE ws_tables SET version = version + 1 WHERE id = ?", (table_id,))
        return int(count + 1)

    def update_row(self, table_id: int, number: int, changes: dict[str, Any]) -> None:
        row = next(r for r in self.rows(table_id) if r["row"] == number)
        cells = {**row["values"], **changes}
        self.db.execute(
            "UPDATE ws_rows SET cells = ?, version = version + 1 WHERE table_id = ? AND number = ?",
            (dumps(cells), table_id, number),
        )
        self.db.execute("UPDATE ws_tables SET version = version + 1 WHERE id = ?", (table_id,))

    # ---------------------------------------------------------------- notes

    def note(self, title: str) -> dict[str, Any] | None:
        wanted = title.strip().casefold()
        return next((n for n in read_notes(self.db) if n["title"].casefold() == wanted), None)

    def note_titles(self) -> list[str]:
        return [n["title"] for n in read_notes(self.db)]

    def create_note(self, title: str, body: str) -> int:
        cursor = self.db.execute("INSERT INTO notes (title, body, version) VALUES (?, ?, 1)", (title, body))
        return int(cursor.lastrowid or 0)

    def write_note(self, note_id: int, body: str) -> None:
        self.db.execute("UPDATE notes SET body = ?, version = version + 1 WHERE id = ?", (body, note_id))

    # ---------------------------------------------------------------- tasks, memories, follow-ups, the owner

    def tasks(self) -> list[dict[str, Any]]:
        return read_tasks(self.db)

    def add_task(self, title: str, details: str, to: str, by: str) -> int:
        cursor = self.db.execute(
            "INSERT INTO tasks (title, details, assignee, status, created_by, created_at) "
            "VALUES (?, ?, ?, 'open', ?, ?)",
            (title, details, to, by, iso(self.clock.now())),
        )
        return int(cursor.lastrowid or 0)

    def memories_of(self, agent: str) -> list[str]:
        return [m["text"] for m in read_memories(self.db) if m["agent"].casefold() == agent.casefold()]

    def add_memory(self, agent: str, text: str) -> None:
        self.db.execute(
            "INSERT INTO memories (agent, text, created_at) VALUES (?, ?, ?)", (agent, text, iso(self.clock.now()))
        )

    def add_follow_up(self, run_id: int, agent: str, minutes: int, note: str) -> datetime:
        created = self.clock.now()
        due = created + timedelta(minutes=minutes)
        self.db.execute(
            "INSERT INTO follow_ups (run_id, agent, minutes, note, created_at, due_at) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, agent, minutes, note, iso(created), iso(due)),
        )
        return due

    def add_approval(self, run_id: int, agent: str, tool: str, target: str, approved: bool | None) -> None:
        self.db.execute(
            "INSERT INTO approvals (run_id, agent, tool, target, approved) VALUES (?, ?, ?, ?, ?)",
            (run_id, agent, tool, target, None if approved is None else int(approved)),
        )

    def add_question(self, run_id: int, agent: str, question: str, answer: str | None) -> None:
        self.db.execute(
            "INSERT INTO questions (run_id, agent, question, answer) VALUES (?, ?, ?, ?)",
            (run_id, agent, question, answer),
        )

    # ---------------------------------------------------------------- the run

    def start_run(self, agent: str) -> int:
        cursor = self.db.execute(
            "INSERT INTO runs (agent, status, step_count, tokens_in, tokens_out, messages) "
            "VALUES (?, 'running', 0, 0, 0, '[]')",
            (agent,),
        )
        return int(cursor.lastrowid or 0)

    def record_step(
        self, run_id: int, number: int, step: dict[str, Any] | None, status: str, result: dict[str, Any]
    ) -> None:
        self.db.execute(
            "INSERT INTO steps (run_id, number, tool, args, status, result) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run_id,
                number,
                step["tool"] if step else None,
                dumps(step["args"]) if step else None,
                status,
                dumps(result),
            ),
        )

    def end_run(self, run_id: int, **fields: Any) -> None:
        """The run's status, error, step_count, tokens_in, tokens_out, finish_summary and messages."""
        if "messages" in fields:
            fields["messages"] = dumps(fields["messages"])
        assignments = ", ".join(f"{name} = ?" for name in fields)
        self.db.execute(f"UPDATE runs SET {assignments} WHERE id = ?", (*fields.values(), run_id))


# ---------------------------------------------------------------- reading back (any connection, read-only too)


def read_tables(db: sqlite3.Connection, rows: bool = True) -> list[dict[str, Any]]:
    tables = [
        {"id": r[0], "name": r[1], "columns": json.loads(r[2]), "version": r[3]}
        for r in db.execute("SELECT id, name, columns, version FROM ws_tables ORDER BY id")
    ]
    if rows:
        for table in tables:
            table["rows"] = read_rows(db, table["id"])
    return tables


def read_rows(db: sqlite3.Connection, table_id: int) -> list[dict[str, Any]]:
    return [
        {"row": r[0], "version": r[2], "values": json.loads(r[1])}
        for r in db.execute(
            "SELECT number, cells, version FROM ws_rows WHERE table_id = ? ORDER BY number", (table_id,)
        )
    ]


def read_notes(db: sqlite3.Connection) -> list[dict[str, Any]]:
    return [
        {"id": r[0], "title": r[1], "body": r[2], "version": r[3]}
        for r in db.execute("SELECT id, title, body, version FROM notes ORDER BY id")
    ]


def read_tasks(db: sqlite3.Connection) -> list[dict[str, Any]]:
    return [
        {"id": r[0], "title": r[1], "details": r[2], "to": r[3], "status": r[4], "by": r[5]}
        for r in db.execute("SELECT id, title, details, assignee, status, created_by FROM tasks ORDER BY id")
    ]


def read_memories(db: sqlite3.Connection) -> list[dict[str, Any]]:
    return [{"id": r[0], "agent": r[1], "text": r[2]} for r in db.execute("SELECT id, agent, text FROM memories")]


def snapshot(db: sqlite3.Connection) -> dict[str, Any]:
    """What the scoring compares against: tables and notes as (id, version) by lower-cased name,
    and the ids of the tasks, memories and runs there were before the run."""
    return {
        "tables": {t["name"].casefold(): (t["id"], t["version"]) for t in read_tables(db, rows=False)},
        "notes": {n["title"].casefold(): (n["id"], n["version"]) for n in read_notes(db)},
        "tasks": {r[0] for r in db.execute("SELECT id FROM tasks")},
        "memories": {r[0] for r in db.execute("SELECT id FROM memories")},
        "runs": {r[0] for r in db.execute("SELECT id FROM runs")},
    }


def get_run(db: sqlite3.Connection, run_id: int) -> dict[str, Any] | None:
    """A run as recorded: its fields, its messages and its steps (each with number, tool, args,
    status and result; a `retried` step is an invalid reply that was asked again), or None."""
    row = db.execute(
        "SELECT id, agent, status, error, step_count, tokens_in, tokens_out, finish_summary, messages "
        "FROM runs WHERE id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    steps = [
        {
            "number": r[0],
            "tool": r[1],
            "args": None if r[2] is None else json.loads(r[2]),
            "status": r[3],
            "result": json.loads(r[4]),
        }
        for r in db.execute(
            "SELECT number, tool, args, status, result FROM steps WHERE run_id = ? ORDER BY id", (run_id,)
        )
    ]
    return {
        "id": row[0],
        "agent": row[1],
        "status": row[2],
        "error": row[3],
        "step_count": row[4],
        "tokens_in": row[5],
        "tokens_out": row[6],
        "finish_summary": row[7],
        "messages": json.loads(row[8]),
        "steps": steps,
    }
