"""Local Agent Bench's (LAB's) own numbers, checked from a cell's raw outputs on the host.

- **The summary, re-derived**: LAB's printed `Summary: k/n passed` is the count of its tasks at score
  1.0 (as LAB counts), a task's reason is PASS exactly when it scored 1.0, every score lies in 0..1,
  and the result names the benchmark the driver ran.
- **LAB's scoring, re-run on its recorded evidence**: LAB's `local_agent_bench.scoring.score_task`,
  imported from the verified archive the cell pins (never another copy of it), scores each task
  again from the benchmark's task (`local_agent_bench.tasks.load_tasks`), the final answer and the
  tool calls as recorded (`local_agent_bench.types.ToolCall`); the score, the reason and each
  assertion's verdict must be the recorded ones. Its fourth input, whether the reply could not be
  parsed, is not in the result file: its reason INVALID_TOOL_SYNTAX says it (LAB's scoring alone gives
  that reason, from that flag alone). A task whose reason is none of the scoring's (TIMEOUT, an
  engine's or a runtime's failure) was ended before scoring: its score must be 0.

- **The runtime, the cell's**: LAB's result (and each task in it) names the runtime the cell runs
  (`raw-ollama-react`, or the CLI runtime that drives the cell's matrix runtime), and the driver's
  record names the runtime it configured: none for LAB's own loop, else the cell's runtime kind
  under the cell's clock.

No model runs: the scoring is a pure function of what the result file holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.core.errors import BadInput
from repro.suites.external.lab_raw import (
    DRIVER_RECORD,
    PASS,
    LabResult,
    LabTaskResult,
    benchmark_file,
    benchmark_run,
    console_text,
    read_result,
)
from repro.suites.external.wheels import import_harness

PACKAGE = "local_agent_bench"
MODULES = ("scoring", "tasks", "types")
SHOWN = 3
# the reasons LAB's scoring gives (its score_task); any other reason ended the task before scoring
SCORED = frozenset(
    {
        PASS,
        "INVALID_TOOL_SYNTAX",
        "NO_TOOL_ATTEMPT",
        "FORBIDDEN_TOOL",
        "WRONG_TOOL",
        "MISSING_REQUIRED_TOOL",
        "BAD_ARGUMENTS",
        "TOOL_EXECUTION_FAILED",
        "IGNORED_TOOL_RESULT",
        "ASSERTION_FAILED",
        "HALLUCINATED_RESULT",
        "UNKNOWN_FAILURE",
    }
)


def recheck_worker(files: dict[str, bytes], code_root: Path) -> list[str]:
    try:
        result = read_result(files)
        benchmark = benchmark_run(files)
    except BadInput as error:
        return [str(error)]
    problems = summary_problems(result, console_text(files))
    if result.benchmark != benchmark:
        problems.append(f"LAB's result names benchmark {result.benchmark[:80]!r}, the driver ran {benchmark!r}")
    problems += rescored_problems(result, benchmark, code_root)
    return problems[:SHOWN] + ([f"{len(problems) - SHOWN} more"] if len(problems) > SHOWN else [])


def summary_problems(result: LabResult, console: str) -> list[str]:
    """LAB's summary, re-derived from its per-task results."""
    tasks = result.results
    passed = sum(t.ok for t in tasks)
    problems = [
        f"{t.task_id}: score {t.score:g}, reason {t.failure_reason}"
        for t in tasks
        if t.ok != (t.failure_reason == PASS)
    ]
    problems += [f"{t.task_id}: score {t.score} outside 0..1" for t in tasks if not 0 <= t.score <= 1]
    printed = [line.strip() for line in console.splitlines() if line.startswith("Summary:")]
    if printed != [f"Summary: {passed}/{len(tasks)} passed"]:
        problems.append(f"LAB printed {printed or 'no summary'}; its tasks say Summary: {passed}/{len(tasks)} passed")
    return problems


def project_root(code_root: Path) -> Path:
    """LAB's project folder in the unpacked archive: the folder that holds its package."""
    for candidate in [code_root, *sorted(c for c in code_root.iterdir() if c.is_dir())]:
        if (candidate / PACKAGE / "scoring.py").is_file():
            return candidate
    raise BadInput(f"no {PACKAGE}/scoring.py in LAB's archive")


def rescored_problems(result: LabResult, benchmark: str, code_root: Path) -> list[str]:
    """Each task scored again by LAB's own scoring, from its recorded evidence."""
    root = project_root(code_root)
    lab = import_harness(root, PACKAGE, MODULES, "LAB's scoring cannot be loaded on this host ({error})")
    tasks = {task.id: task for task in lab["tasks"].load_tasks(benchmark_file(code_root, benchmark))}
    problems = []
    for recorded in result.results:
        if recorded.task_id not in tasks:
            problems.append(f"{recorded.task_id}: not a task of {benchmark}")
        elif recorded.failure_reason not in SCORED:
            if recorded.score != 0:
                problems.append(
                    f"{recorded.task_id}: ended {recorded.failure_reason} before scoring, yet scored {recorded.score:g}"
                )
        else:
            problems += rescored(lab, tasks[recorded.task_id], recorded)
    return problems


def rescored(lab: dict[str, Any], task: Any, recorded: LabTaskResult) -> list[str]:
    calls = [lab["types"].ToolCall(**call.model_dump()) for call in recorded.tool_calls]
    invalid = recorded.failure_reason == "INVALID_TOOL_SYNTAX"
    try:
        score, reason, assertions = lab["scoring"].score_task(task, recorded.final_answer, calls, invalid)
    except Exception as error:  # LAB's code, on evidence a bundle holds: whatever it raises is named
        return [f"{recorded.task_id}: LAB's scoring raised {type(error).__name__} on the recorded evidence"]
    verdicts = [bool(a.get("ok")) for a in json.loads(json.dumps(assertions, default=str))]
    says = f"{recorded.score:g} {recorded.failure_reason}"
    if (float(score), reason) != (recorded.score, recorded.failure_reason):
        return [f"{recorded.task_id}: LAB's scoring gives {score:g} {reason}, the result says {says}"]
    if verdicts != [bool(a.get("ok")) for a in recorded.assertion_results]:
        return [f"{recorded.task_id}: LAB's scoring gives the assertions {verdicts}, the result records others"]
    return []


def runtime_problems(files: dict[str, bytes], lab_runtime: str, kind: str | None, clock: str | None) -> list[str]:
    """LAB ran `lab_runtime`, and the driver configured the cell's runtime (`kind` under `clock`),
    or none where LAB runs its own loop (`kind` None)."""
    try:
        result = read_result(files)
        configured = json.loads(files[DRIVER_RECORD]).get("runtime")
    except (BadInput, KeyError, ValueError, AttributeError):
        return [f"no readable {DRIVER_RECORD} or result file to say which runtime LAB ran"]
    problems = []
    ran = sorted({result.runtime, *(task.runtime for task in result.results)})
    if ran != [lab_runtime]:
        problems.append(f"LAB ran {', '.join(r[:40] for r in ran)}, the cell runs {lab_runtime}")
    if kind is None:
        wrong = configured is not None
        return problems + ([f"the driver configured a runtime ({DRIVER_RECORD}) for LAB's own loop"] if wrong else [])
    said: dict[str, Any] = configured if isinstance(configured, dict) else {}
    env: dict[str, Any] = said["env"] if isinstance(said.get("env"), dict) else {}
    if said.get("kind") != kind or env.get("FAKETIME") != f"@{clock}":
        problems.append(f"the driver's record does not name the cell's runtime {kind} under its clock {clock}")
    return problems
