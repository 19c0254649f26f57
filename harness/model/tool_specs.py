"""Tool signatures: argument names, descriptions and the generic JSON Schema of each tool's args.

Every argument is required; optional ones are nullable; no extra keys. Execution lives in
harness/tools/dispatch.py; per-table narrowing of schemas lives in harness/protocols/json_schema.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CELL_SCHEMA: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
STRING: dict[str, Any] = {"type": "string"}
NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    summary: str
    args: dict[str, dict[str, Any]]  # argument name -> JSON Schema, in signature order
    target_arg: str | None = None  # the argument a rule's ``match`` is tested against

    def args_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": dict(self.args),
            "required": list(self.args),
            "additionalProperties": False,
        }

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


def _spec(_name: str, _summary: str, _target: str | None, **args: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name=_name, summary=_summary, args=args, target_arg=_target)


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            "table_read",
            "read rows; query like 'status:new' or 'qty>=3' (several AND-ed), or null; limit 1-50 or null (10)",
            "table",
            table=STRING,
            query={"type": ["string", "null"]},
            limit={"type": ["integer", "null"], "minimum": 1, "maximum": 50},
        ),
        _spec(
            "table_create",
            "create a table with 1-12 columns",
            "table",
            table=STRING,
            columns={"type": "array", "items": STRING, "minItems": 1, "maxItems": 12},
        ),
        _spec(
            "table_add",
            "append 1-20 rows (null for empty cells)",
            "table",
            table=STRING,
            rows={
                "type": "array",
                "items": {"type": "object", "additionalProperties": CELL_SCHEMA},
                "minItems": 1,
                "maxItems": 20,
            },
        ),
        _spec(
            "table_update",
            "change cells of a row you have read (null keeps a cell)",
            "table",
            table=STRING,
            row={"type": "integer", "minimum": 1},
            values={"type": "object", "additionalProperties": CELL_SCHEMA},
        ),
        _spec("note_read", "read a note", "title", title=STRING),
        _spec(
            "note_write",
            "write a note; replace needs a prior read of an existing note; append always works",
            "title",
            title=STRING,
            text=STRING,
            mode={"enum": ["replace", "append"]},
        ),
        _spec("search", "search notes, table rows and tasks", None, query=STRING),
        _spec(
            "task_add",
            "give a task to a teammate or to 'you' (the owner)",
            "to",
            to=STRING,
            title=STRING,
            details=STRING,
        ),
        _spec("web_fetch", "fetch a web page", "url", url=STRING),
        _spec("ask", "ask the owner a question and wait for the answer", None, question=STRING),
        _spec(
            "remember",
            "save a fact for future runs (max 200 characters)",
            None,
            fact={"type": "string", "maxLength": 200},
        ),
        _spec(
            "follow_up",
            "schedule a follow-up run in 5-10080 minutes",
            None,
            minutes={"type": "integer", "minimum": 5, "maximum": 10080},
            note=STRING,
        ),
        _spec("finish", "end the run with a short summary for the owner", None, summary=STRING),
        _spec("current_directory", "the folder you are in", None),
        _spec(
            "list_directory",
            "list a folder's files and folders; path null for the current folder",
            None,
            path=NULLABLE_STRING,
        ),
        _spec("read_file", "read a text file", None, path=STRING),
        _spec(
            "find_files",
            "find files and folders whose name matches a pattern like *.csv, below path (null: the current folder)",
            None,
            pattern=STRING,
            path=NULLABLE_STRING,
        ),
        _spec(
            "get_weather",
            "current weather for a city; days 1-7 adds a daily forecast from today (null: current only)",
            None,
            city=STRING,
            days={"type": ["integer", "null"], "minimum": 1, "maximum": 7},
        ),
        _spec("web_search", "search the web; ranked results with title, url and snippet", None, query=STRING),
        _spec("open_url", "open a web page: its text and its links", "url", url=STRING),
        _spec("follow_link", "open a link of the page you have open, by its text or url", None, link=STRING),
    )
}

FILE_TOOLS = frozenset({"current_directory", "list_directory", "read_file", "find_files"})
WEATHER_TOOLS = frozenset({"get_weather"})
WEB_TOOLS = frozenset({"web_search", "open_url", "follow_link"})
WRITE_TOOLS = frozenset(
    {"table_create", "table_add", "table_update", "note_write", "task_add", "remember", "follow_up"}
)
# Tools that read or look data up (everything but the writes, ask and finish): partial credit's
# "gathered the right data" counts these among a scenario's reference steps.
LOOKUP_TOOLS = frozenset(TOOL_SPECS) - WRITE_TOOLS - {"ask", "finish"}
