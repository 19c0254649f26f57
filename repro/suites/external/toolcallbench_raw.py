"""What a ToolCallBench run leaves in its output folder, as the adapter (toolcallbench) and the
re-executed checks (toolcallbench_check) both read it: the file names, a run and its calls, a worker."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

SESSION = "repro"  # the driver's session id: raw file names do not depend on the clock
DATABASE = "results/results.sqlite"
REPORT_FILES = (f"results/reports/{SESSION}.md", f"results/reports/{SESSION}.html")
FIXTURE = "fixtures/repo"  # beside the tasks folder in the wheel's data


class Call(BaseModel):
    index: int
    turn: int
    tool: str
    arguments: Any
    valid: bool
    ok: bool
    error_kind: str
    result: str | None = None


class Run(BaseModel):
    """One ToolCallBench run as its raw outputs hold it: the sqlite row, its calls, and its log."""

    task_id: str
    group: str
    repeat: int
    status: str
    passed: bool
    parse_ok: bool
    tool_ok: bool
    args_ok: bool
    outcome_ok: bool
    failure_type: str
    calls_made: int
    turns: int
    efficiency: float | None
    eval_tokens: int
    eval_seconds: float
    wall_seconds: float
    error: str
    log_path: str
    calls: list[Call]
    messages: list[dict[str, Any]]
    final_text: str
    details: list[str]


class Worker(BaseModel):
    """What one worker's ToolCallBench wrote: its session settings, runs and observations."""

    settings: dict[str, Any]
    runs: list[Run]
    observed: list[dict[str, Any]]
