"""The stand-in's database (a stand-in written by the repro project for its tests; not
Tholos-Bench's runner): one in-memory SQLite database per scenario holds the workspace (tables and
their rows, notes, tasks, memories, follow-ups, approvals, questions) and the run (its steps and
messages). Its scoring reads only this database and the snapshot taken before the run, so it can
be re-executed later on a copy of it (opened read-only).

Cells, arguments, results and messages are stored as JSON text.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE ws_tables (id INTEGER PRIMARY KEY, name TEXT NOT NULL, columns TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE ws_rows (
    table_id INTEGER NOT NULL, number INTEGER NOT NULL, cells TEXT NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (table_id, number)
);
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY, title TEXT NOT NULL, details TEXT NOT NULL, assignee TEXT NOT NULL,
    status TEXT NOT NULL, created_by TEXT NOT NULL, created_at TEXT
);
CREATE TABLE memories (id INTEGER PRIMARY KEY, agent TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT);
CREATE TABLE follow_ups (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, agent TEXT NOT NULL, minutes INTEGER NOT NULL,
    note TEXT NOT NULL, created_at TEXT NOT NULL, due_at TEXT NOT NULL
);
CREATE TABLE approvals (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, agent TEXT NOT NULL, tool TEXT NOT NULL,
    target TEXT NOT NULL, approved INTEGER
);
CREATE TABLE questions (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, agent TEXT NOT NULL, question TEXT NOT NULL, answer TEXT
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, agent TEXT NOT NULL, status TEXT NOT NULL, error TEXT, step_count INTEGER NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, finish_summary TEXT, messages TEXT NOT NULL
);
CREATE TABLE steps (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, number INTEGER NOT NULL, tool TEXT, args TEXT,
    status TEXT NOT NULL, result TEXT NOT NULL
);
"""


def connect() -> sqlite3.Connection:
    """A new, empty database for one scenario."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    return db
