"""What Local Agent Bench (LAB) leaves in the driver's output folder, as the adapter (lab) and the
re-executed scoring (lab_check) both read it: the file names, LAB's result file (`python3 -m
local_agent_bench run --output`: metadata, runtime, model, benchmark, then one result per task) and
its benchmark files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.contracts import FailureType
from harness.io import loads_strict
from repro.core.errors import BadInput

RESULT, CONSOLE, FIXTURE_LOG, DRIVER_RECORD = "result.json", "console.txt", "fixtures.jsonl", "driver.json"
MAX_TASKS = 10_000
PASS = "PASS"  # LAB's reason for a task that passed; its Summary counts a task passed at score 1.0
# LAB's reason codes as our failure types (harness.scoring.lab_codes maps ours onto LAB's, many to one;
# this is the reading back, one type per code: where several of ours share a code, the broadest)
FROM_LAB_CODE: dict[str, FailureType] = {
    "HALLUCINATED_RESULT": "hallucinated_result",
    "IGNORED_TOOL_RESULT": "ignored_tool_result",
    "NO_TOOL_ATTEMPT": "no_tool_attempt",
    "WRONG_TOOL": "wrong_tool",
    "MISSING_REQUIRED_TOOL": "missing_required_tool",
    "FORBIDDEN_TOOL": "forbidden_tool",
    "BAD_ARGUMENTS": "invalid_arguments",
    "INVALID_TOOL_SYNTAX": "invalid_syntax",
    "TOOL_EXECUTION_FAILED": "wrong_outcome",
    "CONTEXT_LOSS": "context_overflow",
    "ASSERTION_FAILED": "wrong_outcome",
    "MODEL_NOT_INSTALLED": "model_not_loaded",
    "OLLAMA_UNREACHABLE": "engine_unreachable",
    "RUNTIME_UNAVAILABLE": "runtime_unavailable",
    "RUNTIME_ERROR": "runtime_error",
    "TIMEOUT": "timeout",
    # a run that ended with no reason of its own (ours that LAB calls so are runs cut short: stuck,
    # step_limit, timeout); never an engine failure, which LAB names (OLLAMA_UNREACHABLE)
    "UNKNOWN_FAILURE": "step_limit",
}
LAB_REASONS = frozenset({PASS, *FROM_LAB_CODE})  # every reason LAB writes that we read back as its own


class LabToolCall(BaseModel):
    """One tool call of a task, as LAB records it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = {}
    ok: bool
    result: Any = None
    error: str | None = None


class LabTaskResult(BaseModel):
    """One task's result in LAB's result file (its TaskResult; a field a later LAB adds is kept, not read)."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    category: str
    runtime: str
    model: str
    score: float
    failure_reason: str
    final_answer: str
    tool_calls: list[LabToolCall] = []
    latency_ms: int = 0
    raw_transcript: list[dict[str, Any]] = []
    assertion_results: list[dict[str, Any]] = []

    @property
    def ok(self) -> bool:
        """LAB's verdict, as its Summary line counts it: the task scored 1.0."""
        return self.score == 1.0


class LabResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    metadata: dict[str, Any] = {}
    runtime: str
    model: str
    benchmark: str
    results: list[LabTaskResult]


def read_result(files: dict[str, bytes]) -> LabResult:
    if RESULT not in files:
        raise BadInput(f"no {RESULT} among LAB's raw outputs (LAB wrote no result file: see {CONSOLE})")
    try:
        return LabResult.model_validate(loads_strict(files[RESULT].decode("utf-8"), max_depth=64, max_int_digits=30))
    except (ValueError, ValidationError) as error:
        raise BadInput(f"{RESULT}: not LAB's result file ({str(error).splitlines()[0][:120]})") from None


def console_text(files: dict[str, bytes]) -> str:
    return files.get(CONSOLE, b"").decode("utf-8", "replace")


def benchmark_run(files: dict[str, bytes]) -> str:
    """The benchmark file the driver ran LAB on (its record, driver.json)."""
    try:
        return str(json.loads(files[DRIVER_RECORD])["benchmark"])
    except (KeyError, ValueError, TypeError):
        raise BadInput(f"no readable {DRIVER_RECORD} naming the benchmark among LAB's raw outputs") from None


def benchmark_file(root: Path, path: str) -> Path:
    """LAB's benchmark file in its unpacked archive (the archive's top folder, then `path`)."""
    if Path(path).is_absolute() or ".." in Path(path).parts:
        raise BadInput(f"benchmark {path}: a path inside LAB's project folder")
    found = sorted(p / path for p in [root, *(c for c in root.iterdir() if c.is_dir())] if (p / path).is_file())
    if not found or found[0].is_symlink():
        raise BadInput(f"benchmark {path}: not a file of LAB's archive")
    return found[0]


def benchmark_tasks(path: Path) -> dict[str, str]:
    """A benchmark's tasks in its order: each id and its category (LAB's own)."""
    try:
        data = loads_strict(path.read_text(), max_depth=64)
        tasks = {str(task["id"]): str(task["category"]) for task in data["tasks"]}
        count = len(data["tasks"])
    except (ValueError, KeyError, TypeError) as error:
        raise BadInput(f"benchmark {path.name}: not a LAB benchmark file ({error})") from None
    if not tasks or len(tasks) != count or count > MAX_TASKS:
        raise BadInput(f"benchmark {path.name}: its task ids are empty or repeat")
    return tasks
