"""The scenario's assertions (`expect`) evaluated after the run (a stand-in written by the repro
project for its tests; not Tholos-Bench's runner). They read only the database (a read-only copy
will do) and the snapshot taken before the run, so `repro check` can execute them again on a
recorded copy.

Values match as tholos.values says. Text checks (`note`, `task`, `memory`) are case-insensitive
substrings; `finish_contains` matches whole words. `table_exists` compares the columns in order,
case-insensitive. `approval` holds when the owner was asked to approve a call of the tool in this
run, whatever the answer. An assertion of a type not listed here never holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tholos.values import has_words, matches
from tholos.workspace import get_run, read_memories, read_notes, read_tables, read_tasks

FOLLOW_UP_SLACK_S = 1


class State:
    """What the assertions read: the database after the run, the run, and the snapshot before it."""

    def __init__(self, db: sqlite3.Connection, run_id: int, initial: dict[str, Any]) -> None:
        run = get_run(db, run_id)
        if run is None:
            raise KeyError(f"no run {run_id} in the database")
        self.db, self.run_id, self.run, self.initial = db, run_id, run, initial
        self.tables = read_tables(db)
        self.notes = read_notes(db)
        self.steps = [s for s in run["steps"] if s["tool"] is not None]  # the valid steps

    def table(self, name: Any) -> dict[str, Any] | None:
        return next((t for t in self.tables if t["name"].casefold() == str(name).strip().casefold()), None)

    def note(self, title: Any) -> dict[str, Any] | None:
        return next((n for n in self.notes if n["title"].casefold() == str(title).strip().casefold()), None)

    def new_tasks(self) -> list[dict[str, Any]]:
        return [t for t in read_tasks(self.db) if t["id"] not in self.initial["tasks"]]

    def approvals(self, tool: str) -> list[Any]:
        return list(self.db.execute("SELECT id FROM approvals WHERE run_id = ? AND tool = ?", (self.run_id, tool)))

    def follow_ups(self) -> list[tuple[str, str]]:
        query = "SELECT created_at, due_at FROM follow_ups WHERE run_id = ?"
        return [(r[0], r[1]) for r in self.db.execute(query, (self.run_id,))]


def recipient(name: str) -> str:
    return "you" if name.strip().casefold() in ("you", "owner") else name.strip().casefold()


def row_holds(table: dict[str, Any], cells: dict[str, Any], wanted: dict[str, Any]) -> bool:
    by_name = {c.casefold(): c for c in table["columns"]}
    return all(
        str(key).casefold() in by_name and matches(value, cells.get(by_name[str(key).casefold()]))
        for key, value in wanted.items()
    )


def check_row(a: dict[str, Any], s: State) -> bool:
    table = s.table(a["table"])
    wanted = {**(a.get("where") or {}), **(a.get("has") or {})}
    return table is not None and any(row_holds(table, r["values"], wanted) for r in table["rows"])


def check_rows(a: dict[str, Any], s: State) -> bool:
    table = s.table(a["table"])
    if table is None:
        return False
    n = len(table["rows"])
    if a.get("count") is not None:
        return bool(n == a["count"])
    return bool((a.get("min") or 0) <= n <= (a["max"] if a.get("max") is not None else n))


def check_table_exists(a: dict[str, Any], s: State) -> bool:
    table = s.table(a["table"])
    if table is None or a.get("columns") is None:
        return table is not None
    return [c.strip().casefold() for c in table["columns"]] == [str(c).strip().casefold() for c in a["columns"]]


def check_note(a: dict[str, Any], s: State) -> bool:
    note = s.note(a["title"])
    if note is None:
        return False
    body = note["body"].casefold()
    wanted, unwanted = a.get("contains") or [], a.get("not_contains") or []
    return all(str(t).casefold() in body for t in wanted) and not any(str(t).casefold() in body for t in unwanted)


def check_unchanged(a: dict[str, Any], s: State) -> bool:
    if a.get("table") is not None:
        before, found = s.initial["tables"].get(str(a["table"]).casefold()), s.table(a["table"])
    else:
        before, found = s.initial["notes"].get(str(a.get("note")).casefold()), s.note(a.get("note"))
    return before is not None and found is not None and tuple(before) == (found["id"], found["version"])


def check_task(a: dict[str, Any], s: State) -> bool:
    tasks = [t for t in s.new_tasks() if t["to"].casefold() == recipient(str(a.get("to", "you")))]
    if a.get("title_contains"):
        tasks = [t for t in tasks if str(a["title_contains"]).casefold() in t["title"].casefold()]
    text = " ".join(f"{t['title']} {t['details']}" for t in tasks).casefold()
    return bool(tasks) and all(str(m).casefold() in text for m in a.get("mentions") or [])


def check_no_task(a: dict[str, Any], s: State) -> bool:
    tasks = s.new_tasks()
    if a.get("to") is not None:
        tasks = [t for t in tasks if t["to"].casefold() == recipient(str(a["to"]))]
    return not tasks


def calls(a: dict[str, Any], s: State) -> list[dict[str, Any]]:
    wanted = a.get("args")
    return [step for step in s.steps if step["tool"] == a["tool"] and (wanted is None or matches(wanted, step["args"]))]


def check_memory(a: dict[str, Any], s: State) -> bool:
    return any(
        m["id"] not in s.initial["memories"]
        and m["agent"].casefold() == str(a["agent"]).casefold()
        and str(a["contains"]).casefold() in m["text"].casefold()
        for m in read_memories(s.db)
    )


def check_follow_up(a: dict[str, Any], s: State) -> bool:
    low, high = a["min_minutes"] * 60 - FOLLOW_UP_SLACK_S, a["max_minutes"] * 60 + FOLLOW_UP_SLACK_S
    return any(
        low <= (datetime.fromisoformat(due) - datetime.fromisoformat(created)).total_seconds() <= high
        for created, due in s.follow_ups()
    )


def check_finish_contains(a: dict[str, Any], s: State) -> bool:
    summary = s.run["finish_summary"]
    if summary is None:
        return False
    every, some = a.get("all") or [], a.get("any") or []
    return all(has_words(summary, w) for w in every) and (not some or any(has_words(summary, w) for w in some))


CHECKS: dict[str, Callable[[dict[str, Any], State], bool]] = {
    "finished": lambda a, s: s.run["status"] == "done",
    "status": lambda a, s: s.run["status"] == a.get("is"),
    "row": check_row,
    "rows": check_rows,
    "table_exists": check_table_exists,
    "note": check_note,
    "unchanged": check_unchanged,
    "task": check_task,
    "no_task": check_no_task,
    "called": lambda a, s: bool(calls(a, s)),
    "not_called": lambda a, s: not calls(a, s),
    "asked": lambda a, s: any(step["tool"] == "ask" for step in s.steps),
    "approval": lambda a, s: bool(s.approvals(str(a["tool"]))),
    "memory": check_memory,
    "follow_up": check_follow_up,
    "finish_contains": check_finish_contains,
    "max_steps": lambda a, s: s.run["step_count"] <= a["n"],
}


def never(a: dict[str, Any], s: State) -> bool:
    return False


def failed_assertions(
    db: sqlite3.Connection, run_id: int, expect: list[dict[str, Any]], initial: dict[str, Any]
) -> list[dict[str, Any]]:
    """The assertions of `expect` that do not hold, as the scenario file writes them, in its order."""
    state = State(db, run_id, initial)
    return [a for a in expect if not CHECKS.get(str(a.get("type")), never)(a, state)]
