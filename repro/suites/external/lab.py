"""The LAB adapter: Local Agent Bench's own code (`python3 -m local_agent_bench run`) as an external harness.

LAB is on no package registry: a matrix pins its source as an archive (its git commit, or the
sha256 of a deterministic packing found in a mirror: docs/external-suites.md), and its files never
enter the tree. Its image (images/lab/) holds LAB's project folder as `local-agent-bench`; repro's
driver (images/lab/driver.py) runs LAB's command line unchanged against the sealed Ollama, its
live weather hosts answered by fixture hosts inside the sandbox from repro's fixture world
(`fixtures/weather`, mounted read-only), and keeps per worker:

- `result.json`: LAB's result file byte for byte (per task its `score`, `failure_reason`,
  `tool_calls`, `final_answer`, `raw_transcript`, `assertion_results`);
- `console.txt`: what LAB printed, its `Summary: k/n passed` line among it;
- `fixtures.jsonl`: each answer a fixture host gave, by sha256; `driver.json`: the command, the
  fixture world's files by sha256, LAB's exit.

The suite's `path` names LAB's benchmark file in its archive (`benchmarks/smoke.json`); LAB runs it
whole (a suite selects no subset). The matrix protocol maps to LAB's runtime (`react` ->
`raw-ollama-react`, HarnessFacts.protocol_modes). `normalise` keeps LAB's outcome per task as LAB
gave it (`passed`, `score`, `failure_reason` mapped onto our failure types, FROM_LAB_CODE) and its
tool calls as the transcript's steps; `recheck` re-derives LAB's summary from its per-task results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    FailureType,
    PromptEntry,
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from harness.io import loads_strict
from repro.containers.sandbox import bind
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.suites.base import FIXTURES_MOUNT
from repro.suites.external.base import Adapter
from repro.suites.external.raw import Normalised, RawIndex, external_of, raw_name, walk_raw, worker_files
from repro.suites.external.wheels import fetch_code, fetched_code

if TYPE_CHECKING:
    from repro.plan.planner import Cell
    from repro.spec.findings import SuiteSelection
    from repro.spec.matrix import Suite
    from repro.spec.profiles import Profile

RESULT, CONSOLE, FIXTURE_LOG, DRIVER_RECORD = "result.json", "console.txt", "fixtures.jsonl", "driver.json"
MAX_RAW_FILES = 50
MAX_TASKS = 10_000
EVIDENCE_CHARS = 300
FIXTURE_WORLD = "fixtures"  # the folder of repro's tree the fixture hosts answer from (its weather/)
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
    # a run that ended with no reason of its own (ours that LAB calls so are runs cut short: stuck,
    # step_limit, timeout); never an engine failure, which LAB names (OLLAMA_UNREACHABLE)
    "UNKNOWN_FAILURE": "step_limit",
}
ENGINE_CODES = frozenset({"MODEL_NOT_INSTALLED", "OLLAMA_UNREACHABLE"})


class LabTaskResult(BaseModel):
    """One task of LAB's result file, as LAB writes it (fields beyond these are kept, not read)."""

    model_config = ConfigDict(extra="allow")

    id: str
    score: float
    passed: bool | None = None
    failure_reason: str | None = None
    tool_calls: list[dict[str, Any]] = []
    final_answer: str | None = None
    raw_transcript: list[dict[str, Any]] = []
    assertion_results: list[dict[str, Any]] = []

    @property
    def ok(self) -> bool:
        """LAB's verdict: its `passed`, or, where it writes none, no failure reason."""
        return self.passed if self.passed is not None else self.failure_reason is None


class LabResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    metadata: dict[str, Any] = {}
    tasks: list[LabTaskResult]
    summary: dict[str, Any] | None = None


class Lab(Adapter):
    name = "lab"
    image_dir = "images/lab"
    driver = "driver.py"

    @property
    def program(self) -> list[str]:
        """LAB is the standard library alone: the driver runs on the image's Debian python3."""
        return ["/usr/bin/python3", f"/opt/lab/{self.driver}"]

    def tasks_folder(self, suite: Suite, root: Path | None = None) -> Path:
        """LAB's unpacked archive (its benchmark files are in its code), fetched and verified."""
        external = external_of(suite)
        return fetched_code(external) or fetch_code(external)

    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        """The benchmark's tasks, whole and in its order; the sha256 covers the benchmark file and
        the fixture world its live tools are answered from."""
        from repro.spec.findings import SuiteSelection

        benchmark = benchmark_file(wheel_root, suite.path)
        tasks = benchmark_tasks(benchmark)
        if suite.ids and suite.ids != tasks or suite.categories or suite.per_category:
            raise BadInput(f"suite {suite.id}: LAB runs {suite.path} whole; select no ids, categories or per_category")
        world = sorted((PROJECT_ROOT / FIXTURE_WORLD / "weather").glob("*.json"))
        lines = [*sha256_inputs, f"benchmark\0{suite.path}\0{sha256_bytes(benchmark.read_bytes())}"]
        lines += [f"fixture\0weather/{p.name}\0{sha256_bytes(p.read_bytes())}" for p in world]
        digest = sha256_bytes("".join(f"{line}\n" for line in lines).encode())
        category = Path(suite.path).stem
        return SuiteSelection(
            folder=benchmark.parent,
            ids=tasks,
            categories=dict.fromkeys(tasks, category),
            sha256=digest,
            external=self.name,
        )

    def mounts(self, selection: SuiteSelection) -> list:
        """repro's fixture world, read-only, where the driver's fixture hosts read it (LAB's own code
        and benchmark files are in the image)."""
        return [bind(PROJECT_ROOT / FIXTURE_WORLD, FIXTURES_MOUNT, read_only=True)]

    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        _, host, model = self.engine_server(cell, client, "LAB talks to Ollama's own API")
        runtime = self.facts.protocol_modes[cell.protocol]
        return [
            *("--out", "/out", "--benchmark", cell.suite.path, "--runtime", runtime),
            *("--base-url", host, "--model", model, "--fixtures", FIXTURES_MOUNT),
        ]

    def raw_paths(self, out_dir: Path) -> list[str]:
        return walk_raw(out_dir, MAX_RAW_FILES, "LAB")

    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        workers = sorted(worker_files(raw, index).items())
        results = [task for _number, files in workers for task in read_result(files).tasks]
        found = [t.id for t in results]
        if found != ids:
            raise BadInput(f"LAB's result holds {', '.join(found) or 'no task'}, the benchmark has {', '.join(ids)}")
        category = Path(benchmark_run(workers[0][1])).stem  # the selection's category: the benchmark's name
        return Normalised(
            results=[scenario_result(t, category) for t in results],
            transcripts=[TranscriptLine(id=t.id, transcript=transcript(t)) for t in results],
        )

    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        problems = []
        for number, files in sorted(worker_files(raw, index).items()):
            problems += [f"worker {number}: {p}" for p in summary_problems(files)]
        return problems

    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        """LAB's own report: its console output as it printed it, its `Summary: k/n passed` line
        among it (which `recheck` re-derives from the per-task results; LAB's code, not ours, would
        be needed to print it again)."""
        return {
            raw_name(CONSOLE, number, index.workers): files.get(CONSOLE, b"")
            for number, files in sorted(worker_files(raw, index).items())
        }


# ---------------------------------------------------------------- LAB's files


def benchmark_file(root: Path, path: str) -> Path:
    """LAB's benchmark file in its unpacked archive (the archive's top folder, then `path`)."""
    if Path(path).is_absolute() or ".." in Path(path).parts:
        raise BadInput(f"benchmark {path}: a path inside LAB's project folder")
    found = sorted(p / path for p in [root, *(c for c in root.iterdir() if c.is_dir())] if (p / path).is_file())
    if not found or found[0].is_symlink():
        raise BadInput(f"benchmark {path}: not a file of LAB's archive")
    return found[0]


def benchmark_tasks(path: Path) -> list[str]:
    """The ids of a benchmark's tasks, in its order."""
    try:
        data = loads_strict(path.read_text(), max_depth=64)
        ids = [str(task["id"]) for task in data["tasks"]]
    except (ValueError, KeyError, TypeError) as error:
        raise BadInput(f"benchmark {path.name}: not a LAB benchmark file ({error})") from None
    if not ids or len(set(ids)) != len(ids) or len(ids) > MAX_TASKS:
        raise BadInput(f"benchmark {path.name}: its task ids are empty or repeat")
    return ids


def benchmark_run(files: dict[str, bytes]) -> str:
    """The benchmark file the driver ran LAB on (its record, driver.json)."""
    try:
        return str(json.loads(files[DRIVER_RECORD])["benchmark"])
    except (KeyError, ValueError, TypeError):
        raise BadInput(f"no readable {DRIVER_RECORD} naming the benchmark among LAB's raw outputs") from None


def read_result(files: dict[str, bytes]) -> LabResult:
    if RESULT not in files:
        raise BadInput(f"no {RESULT} among LAB's raw outputs (LAB wrote no result file: see {CONSOLE})")
    try:
        return LabResult.model_validate(loads_strict(files[RESULT].decode("utf-8"), max_depth=64, max_int_digits=30))
    except (ValueError, ValidationError) as error:
        raise BadInput(f"{RESULT}: not LAB's result file ({str(error).splitlines()[0][:120]})") from None


def console_text(files: dict[str, bytes]) -> str:
    return files.get(CONSOLE, b"").decode("utf-8", "replace")


def summary_problems(files: dict[str, bytes]) -> list[str]:
    """LAB's summary, re-derived from its per-task results: its printed `Summary: k/n passed` line
    and its result file's summary agree with the tasks' verdicts, each verdict with its reason, each
    score within 0..1."""
    try:
        result = read_result(files)
    except BadInput as error:
        return [str(error)]
    passed, total = sum(t.ok for t in result.tasks), len(result.tasks)
    problems = [
        f"{t.id}: passed with failure reason {t.failure_reason}" for t in result.tasks if t.ok and t.failure_reason
    ]
    problems += [f"{t.id}: score {t.score} outside 0..1" for t in result.tasks if not 0 <= t.score <= 1]
    printed = [line.strip() for line in console_text(files).splitlines() if line.startswith("Summary:")]
    if printed != [f"Summary: {passed}/{total} passed"]:
        problems.append(f"LAB printed {printed or 'no summary'}; its tasks say Summary: {passed}/{total} passed")
    summary = result.summary or {}
    if summary and (summary.get("passed"), summary.get("total")) != (passed, total):
        problems.append(f"LAB's result summary says {summary}; its tasks say {passed}/{total}")
    return problems


# ---------------------------------------------------------------- our records


def scenario_result(task: LabTaskResult, category: str) -> ScenarioResult:
    """A LAB task as one line of scenarios.jsonl: LAB's verdict, its reason as our failure type."""
    failure = None if task.ok else FROM_LAB_CODE.get(task.failure_reason or "UNKNOWN_FAILURE", "step_limit")
    return ScenarioResult(
        id=task.id,
        category=category,
        passed=task.ok,
        status="done" if task.final_answer is not None else "failed",
        failure_type=failure,
        engine_fault=task.failure_reason in ENGINE_CODES,
        error=None if task.ok else task.failure_reason,
        failure_evidence=None if task.ok else evidence(task),
        partial_score=round(task.score, 4),
        checks_total=len(task.assertion_results),
        failed_checks=[],
        steps=len(task.tool_calls),
        seconds=0.0,
        tokens_in=0,  # LAB's result records no token counts (the engine's log has them)
        tokens_out=0,
        engine_timings=[],
        invalid_steps=0,
    )


def evidence(task: LabTaskResult) -> str:
    failed = ", ".join(str(a.get("type")) for a in task.assertion_results if not a.get("passed"))
    text = f"LAB {task.failure_reason or 'failed'} (score {task.score:g})" + (f"; failed: {failed}" if failed else "")
    return text[:EVIDENCE_CHARS]


def transcript(task: LabTaskResult) -> list[TranscriptEntry]:
    """LAB's run in our transcript's shape: the task's prompt, its first messages, one step per tool
    call LAB made with its result, and how it ended (LAB's reason)."""
    messages = task.raw_transcript
    prompt = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    entries: list[TranscriptEntry] = [
        TriggerEntry(text=prompt if isinstance(prompt, str) else ""),
        PromptEntry(messages=messages[:2]),
    ]
    for number, call in enumerate(task.tool_calls, start=1):
        arguments = call.get("arguments")
        entries.append(
            ExternalStepEntry(
                step=number,
                turn=number,
                tool=str(call.get("name", "")),
                args=arguments if isinstance(arguments, dict) else {},
                status="ok",
                result=json.dumps(call.get("result"), sort_keys=True)[: EVIDENCE_CHARS * 10],
            )
        )
    entries.append(EndEntry(status="done" if task.ok else "failed", stop=task.failure_reason, detail=task.final_answer))
    return entries
