"""The workspace an agent works in: tables, notes, tasks, memories, follow-ups, rules,
approvals and questions. A fresh one is built from each scenario.

Rows are numbered from 1 in table order and carry a version that goes up at every change.
Each agent's reads are remembered (row and note versions) for optimistic concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any

from harness.model.clock import PinnedClock
from harness.model.fixtures import World
from harness.model.scenario import OWNER, AgentSpec, RuleSpec, WorkspaceSpec
from harness.model.values import matches

Decision = str  # "allow" | "ask" | "deny"
DECISION_RANK = {"deny": 3, "ask": 2, "allow": 1}


@dataclass
class Row:
    number: int
    values: dict[str, Any]
    version: int = 1

    def view(self) -> dict[str, Any]:
        return {"row": self.number, "version": self.version, "values": dict(self.values)}


@dataclass
class Table:
    id: int
    name: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    version: int = 1

    def column(self, name: str) -> str | None:
        """The canonical column name for ``name`` (case-insensitive), or None."""
        wanted = name.strip().casefold()
        return next((c for c in self.columns if c.casefold() == wanted), None)

    def row(self, number: int) -> Row | None:
        return self.rows[number - 1] if 1 <= number <= len(self.rows) else None

    def append(self, values: dict[str, Any]) -> Row:
        row = Row(number=len(self.rows) + 1, values={c: values.get(c) for c in self.columns})
        self.rows.append(row)
        self.version += 1
        return row

    def update(self, row: Row, values: dict[str, Any]) -> None:
        row.values.update(values)
        row.version += 1
        self.version += 1


@dataclass
class Note:
    id: int
    title: str
    body: str
    version: int = 1

    def write(self, body: str) -> None:
        self.body = body
        self.version += 1


@dataclass
class Task:
    title: str
    details: str
    to: str
    status: str = "open"
    by: str = OWNER
    created_at: datetime | None = None
    new: bool = False


@dataclass
class Memory:
    agent: str
    text: str
    new: bool = False
    created_at: datetime | None = None


@dataclass
class FollowUp:
    agent: str
    minutes: int
    note: str
    created_at: datetime
    due_at: datetime


@dataclass
class Approval:
    agent: str
    tool: str
    target: str
    approved: bool | None  # None: asked, no answer yet (the run waits)


@dataclass
class Question:
    agent: str
    question: str
    answer: str | None


@dataclass
class Workspace:
    agents: list[AgentSpec]
    rules: list[RuleSpec]
    clock: PinnedClock = field(default_factory=PinnedClock)
    tables: list[Table] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    follow_ups: list[FollowUp] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    row_reads: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (agent, table id, row) -> version
    note_reads: dict[tuple[str, int], int] = field(default_factory=dict)  # (agent, note id) -> version
    world: World | None = None  # the read-only fixture sets of the ladder tools
    _next_id: int = 1

    # ------------------------------------------------------------------ building

    @classmethod
    def from_spec(cls, spec: WorkspaceSpec, clock: PinnedClock | None = None) -> Workspace:
        ws = cls(
            agents=list(spec.agents), rules=list(spec.rules), clock=clock or PinnedClock(), world=spec.loaded_world()
        )
        for t in spec.tables:
            table = ws.create_table(t.name, list(t.columns))
            for values in t.rows:
                table.append(dict(values))
            table.version = 1
        for n in spec.notes:
            ws.notes.append(Note(id=ws._new_id(), title=n.title, body=n.body))
        for task in spec.tasks:
            to = ws.resolve_recipient(task.to or OWNER) or task.to or OWNER
            ws.tasks.append(Task(task.title, task.details or "", to, task.status or "open"))
        for m in spec.memories:
            ws.memories.append(Memory(agent=ws.resolve_agent(m.agent) or m.agent, text=m.text))
        return ws

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def create_table(self, name: str, columns: list[str]) -> Table:
        table = Table(id=self._new_id(), name=name, columns=columns)
        self.tables.append(table)
        return table

    def create_note(self, title: str, body: str) -> Note:
        note = Note(id=self._new_id(), title=title, body=body)
        self.notes.append(note)
        return note

    # ------------------------------------------------------------------ lookups

    def table(self, name: str) -> Table | None:
        wanted = name.strip().casefold()
        return next((t for t in self.tables if t.name.casefold() == wanted), None)

    def note(self, title: str) -> Note | None:
        wanted = title.strip().casefold()
        return next((n for n in self.notes if n.title.casefold() == wanted), None)

    def resolve_agent(self, name: str) -> str | None:
        wanted = name.strip().casefold()
        return next((a.name for a in self.agents if a.name.casefold() == wanted), None)

    def resolve_recipient(self, name: str) -> str | None:
        """``you`` for the owner, an agent's canonical name, or None if unknown."""
        if name.strip().casefold() in (OWNER, "owner"):
            return OWNER
        return self.resolve_agent(name)

    def agent(self, name: str) -> AgentSpec:
        wanted = name.casefold()
        return next(a for a in self.agents if a.name.casefold() == wanted)

    def memories_of(self, agent: str) -> list[Memory]:
        return [m for m in self.memories if m.agent.casefold() == agent.casefold()]

    # ------------------------------------------------------------------ reads

    def mark_row_read(self, agent: str, table: Table, row: Row) -> None:
        self.row_reads[(agent, table.id, row.number)] = row.version

    def row_read_version(self, agent: str, table: Table, row: Row) -> int | None:
        return self.row_reads.get((agent, table.id, row.number))

    def mark_note_read(self, agent: str, note: Note) -> None:
        self.note_reads[(agent, note.id)] = note.version

    def note_read_version(self, agent: str, note: Note) -> int | None:
        return self.note_reads.get((agent, note.id))

    # ------------------------------------------------------------------ rules

    def decide(self, agent: str, tool: str, target: str) -> Decision:
        """deny > ask > allow among the matching rules; default: web_fetch asks, all else allowed."""
        found = [r.decision for r in self.rules if _rule_applies(r, agent, tool, target)]
        if found:
            return max(found, key=DECISION_RANK.__getitem__)
        return "ask" if tool == "web_fetch" else "allow"

    # ------------------------------------------------------------------ owner edits

    def owner_update_row(self, table_name: str, row_match: dict[str, Any] | None, values: dict[str, Any]) -> bool:
        table = self.table(table_name)
        if table is None:
            return False
        row = next((r for r in table.rows if matches(row_match or {}, r.values)), None)
        if row is None:
            return False
        table.update(row, {table.column(k) or k: v for k, v in values.items()})
        return True

    def owner_append_note(self, title: str, text: str) -> bool:
        note = self.note(title)
        if note is None:
            return False
        note.write(note.body + text)
        return True

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Identity and version of every table and note, for ``unchanged`` checks."""
        state = {("table", t.name.casefold()): (t.id, t.version) for t in self.tables}
        state.update({("note", n.title.casefold()): (n.id, n.version) for n in self.notes})
        return state

    def new_tasks(self) -> list[Task]:
        return [t for t in self.tasks if t.new]


def _rule_applies(rule: RuleSpec, agent: str, tool: str, target: str) -> bool:
    return (
        fnmatchcase(agent.casefold(), rule.agent.casefold())
        and fnmatchcase(tool.casefold(), rule.tool.casefold())
        and fnmatchcase(target.casefold(), rule.match.casefold())
    )
