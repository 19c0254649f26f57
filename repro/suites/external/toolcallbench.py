"""The ToolCallBench adapter: its tasks, its container command, and its raw outputs as our records.

ToolCallBench (`toolcallbench==1.0.1`, MIT) gives a model six tools over a sample Python project
and scores each run with plain code. In a cell it runs in its own image (repro.suites.external.image)
through repro's driver (images/toolcallbench/driver.py), which runs its `run` command unchanged
against the sealed engine with its OpenAI-compatible backend, one repeat at the cell's seed. Its
raw outputs are `results/results.sqlite` (sessions, runs, calls), one JSONL log per run
(`results/logs/<session>/<model>/<task>_1.jsonl`: the messages and a summary) and its report
(`results/reports/<session>.md` and `.html`); the driver adds `observed.jsonl` (each run's final
repository state and check commands) and `driver.json`.

`normalise` turns them into one ScenarioResult per task (docs/diagnosis.md maps ToolCallBench's
failure types to ours); the sqlite row and the log's summary must agree on every field both hold.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    FailedCheck,
    FailureType,
    ProgressEvent,
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.suites.base import cache_prompt_argv
from repro.suites.external.base import Adapter
from repro.suites.external.raw import Normalised, RawIndex, tree_lines, walk_raw, wheel_folder, worker_files
from repro.suites.external.toolcallbench_check import recheck_workers, render_reports
from repro.suites.external.toolcallbench_raw import DATABASE, FIXTURE, SESSION, Call, Run, Worker

if TYPE_CHECKING:
    from repro.spec.cells import Cell
    from repro.spec.findings import SuiteSelection
    from repro.spec.matrix import Suite
    from repro.spec.profiles import Profile

OBSERVED = "observed.jsonl"
DRIVER_RECORD = "driver.json"
MAX_RAW_FILES = 2_000
EVIDENCE_CHARS = 300

# ToolCallBench's failure types (its checks.FAILURE_TYPES, plus backend_error for a run the
# server failed) as ours; docs/diagnosis.md gives the reason for each line.
FAILURE_MAP: dict[str, FailureType] = {
    "invalid_json": "invalid_syntax",
    "invalid_args": "invalid_arguments",
    "unknown_tool": "unknown_tool",
    "text_tool_call": "text_tool_call",
    "no_call": "no_tool_attempt",
    "unneeded_call": "forbidden_tool",
    "call_limit": "step_limit",
    "not_parallel": "missing_required_tool",
    "wrong_tool": "wrong_tool",
    "too_few_calls": "missing_required_tool",
    "patch_failed": "wrong_outcome",
    "wrong_args": "wrong_outcome",
    "outcome_mismatch": "wrong_outcome",
    "backend_error": "engine_error",
}
CHECK_PARTS = ("parse_ok", "tool_ok", "args_ok", "outcome_ok")  # its four verdicts; passed needs all but args


class ToolCallBench(Adapter):
    name = "toolcallbench"
    image_dir = "images/toolcallbench"
    driver = "driver.py"

    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        from repro.spec.findings import SuiteSelection

        folder = wheel_folder(suite, wheel_root)
        tasks = task_groups(folder)
        chosen = [
            t
            for t in tasks
            if (not suite.categories or tasks[t] in suite.categories) and (not suite.ids or t in suite.ids)
        ]
        missing = sorted(set(suite.ids or []) - set(tasks))
        if missing:
            raise BadInput(f"suite {suite.id}: unknown task ids {', '.join(missing)}")
        if suite.per_category:
            chosen = [t for t in chosen if [c for c in chosen if tasks[c] == tasks[t]].index(t) < suite.per_category]
        if not chosen:
            raise BadInput(f"suite {suite.id}: no task selected from {suite.path}")
        digest = sha256_bytes(
            "".join(
                f"{line}\n"
                for line in [
                    *sha256_inputs,
                    *tree_lines(folder, "tasks"),
                    *tree_lines(folder.parent / FIXTURE, "fixture"),
                ]
            ).encode()
        )
        return SuiteSelection(
            folder=folder, ids=chosen, categories={t: tasks[t] for t in chosen}, sha256=digest, external=self.name
        )

    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        api, host, model = self.engine_server(cell, client, "ToolCallBench runs through its own backends")
        decoding = cell.decoding
        return [
            *[
                "--out",
                "/out",
                "--tasks",
                ",".join(ids),
                "--backend",
                self.facts.backends[api],
                "--host",
                host,
                "--model",
                model,
            ],
            *[
                "--seed",
                str(cell.seed),
                "--temperature",
                str(decoding.temperature),
                "--max-tokens",
                str(decoding.max_tokens),
            ],
            *[
                "--context",
                str(decoding.context),
                "--timeout",
                str(profile.step_timeout_s),
                *cache_prompt_argv(profile.cache_prompt),
            ],
        ]

    def raw_paths(self, out_dir: Path) -> list[str]:
        return walk_raw(out_dir, MAX_RAW_FILES, "ToolCallBench")

    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        workers = read_workers(raw, index)
        runs = {run.task_id: run for worker in workers for run in worker.runs}
        if sorted(runs) != sorted(ids) or len(runs) != sum(len(w.runs) for w in workers):
            raise BadInput(
                f"the raw results hold tasks {', '.join(sorted(runs)) or 'none'}, the cell ran {', '.join(ids)}"
            )
        ordered = [runs[task_id] for task_id in ids]
        return Normalised(
            results=[scenario_result(run) for run in ordered],
            transcripts=[TranscriptLine(id=run.task_id, transcript=transcript(run)) for run in ordered],
        )

    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        """Its checks re-executed (its one protocol, native_tools, is what its backend sends: the matrix
        cannot name another)."""
        return recheck_workers(read_workers(raw, index), wheel_root)

    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        return render_reports(raw, index, wheel_root)

    def own_messages(self, raw: dict[str, bytes], index: RawIndex) -> dict[str, list[dict]]:
        """Each task's messages as ToolCallBench's own logs hold them."""
        return {run.task_id: run.messages for worker in read_workers(raw, index) for run in worker.runs}

    def progress(self, line: str) -> ProgressEvent | None:
        return ProgressEvent.parse(line)


# ---------------------------------------------------------------- tasks


def task_groups(folder: Path) -> dict[str, str]:
    """Task id -> group of every task file, in ToolCallBench's order (file names, sorted)."""
    groups = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            groups[str(data["id"])] = str(data["group"])
        except (yaml.YAMLError, KeyError, TypeError) as error:
            raise BadInput(f"{path.name}: not a ToolCallBench task ({error})") from None
    return groups


# ---------------------------------------------------------------- raw outputs


def read_workers(raw: dict[str, bytes], index: RawIndex) -> list[Worker]:
    return [read_worker(files, number) for number, files in sorted(worker_files(raw, index).items())]


def read_worker(files: dict[str, bytes], number: int) -> Worker:
    if DATABASE not in files:
        raise BadInput(f"worker {number}: no {DATABASE} among the raw outputs")
    settings, rows, calls = read_database(files[DATABASE])
    runs = [read_run(row, calls.get(row["id"], []), files) for row in rows]
    observed = [
        json.loads(line)
        for line in files.get(OBSERVED, b"").decode("utf-8", errors="strict").splitlines()
        if line.strip()
    ]
    return Worker(settings=settings, runs=runs, observed=observed)


def read_database(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """The session's settings, its runs (by id) and their calls, read from a copy, read-only."""
    with tempfile.TemporaryDirectory(prefix="repro-tcb-") as folder:
        path = Path(folder) / "results.sqlite"
        path.write_bytes(data)
        try:
            connection = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
            connection.row_factory = sqlite3.Row
            try:
                session = connection.execute(
                    "SELECT settings_json FROM sessions WHERE session_id = ?", (SESSION,)
                ).fetchone()
                rows = [
                    dict(r)
                    for r in connection.execute("SELECT * FROM runs WHERE session_id = ? ORDER BY id", (SESSION,))
                ]
                calls: dict[int, list[dict[str, Any]]] = {}
                for call in connection.execute("SELECT * FROM calls ORDER BY run_id, idx"):
                    calls.setdefault(call["run_id"], []).append(dict(call))
            finally:
                connection.close()
        except sqlite3.Error as error:
            raise BadInput(f"{DATABASE}: not ToolCallBench's database ({error})") from None
    if session is None:
        raise BadInput(f"{DATABASE}: no session {SESSION}")
    return json.loads(session["settings_json"]), rows, calls


def read_run(row: dict[str, Any], calls: list[dict[str, Any]], files: dict[str, bytes]) -> Run:
    """One run from its row, its calls and its log; BadInput when the log and the row disagree."""
    log = files.get(f"results/{row['log_path']}")
    if log is None:
        raise BadInput(f"run {row['task_id']}: its log {row['log_path']} is not among the raw outputs")
    lines = [json.loads(line) for line in log.decode("utf-8", errors="strict").splitlines() if line.strip()]
    summary = lines[-1] if lines and lines[-1].get("type") == "summary" else {}
    messages = [{k: v for k, v in line.items() if k != "type"} for line in lines if line.get("type") == "message"]
    results = [m.get("content") for m in messages if m.get("role") == "tool"]
    recorded = [
        Call(
            index=c["idx"],
            turn=c["turn"],
            tool=c["tool"],
            arguments=json.loads(c["arguments_json"]),
            valid=bool(c["valid"]),
            ok=bool(c["ok"]),
            error_kind=c["error_kind"],
        )
        for c in calls
    ]
    run_calls = [
        call.model_copy(update={"result": results[i] if i < len(results) else None}) for i, call in enumerate(recorded)
    ]
    run = Run(
        **{
            k: row[k]
            for k in (
                "task_id",
                "repeat",
                "status",
                "failure_type",
                "calls_made",
                "turns",
                "efficiency",
                "eval_tokens",
                "eval_seconds",
                "wall_seconds",
                "error",
                "log_path",
            )
        },
        group=row["grp"],
        passed=bool(row["passed"]),
        **{k: bool(row[k]) for k in CHECK_PARTS},
        calls=run_calls,
        messages=messages,
        final_text=str(summary.get("final_text", "")),
        details=[str(d) for d in summary.get("details", [])],
    )
    disagreement = log_disagreement(run, summary)
    if disagreement:
        raise BadInput(f"run {run.task_id}: its log and {DATABASE} disagree ({disagreement})")
    return run


def log_disagreement(run: Run, summary: dict[str, Any]) -> str | None:
    """The first field the log's summary and the database's row hold differently, if any."""
    for field in ("task", "status", "error", "passed", "failure_type"):
        wanted = run.task_id if field == "task" else getattr(run, field)
        if summary.get(field) != wanted:
            return f"{field}: log {summary.get(field)!r}, database {wanted!r}"
    logged = [
        {k: c.get(k) for k in ("index", "turn", "tool", "arguments", "valid", "ok", "error_kind")}
        for c in summary.get("calls", [])
    ]
    stored = [c.model_dump(exclude={"result"}) for c in run.calls]
    if logged != stored:
        return "calls"
    if len(run.calls) != run.calls_made:
        return f"calls_made {run.calls_made}, {len(run.calls)} calls"
    return None


# ---------------------------------------------------------------- our records


def scenario_result(run: Run) -> ScenarioResult:
    """A run as one line of scenarios.jsonl: ToolCallBench's verdict, its failure type mapped to
    ours (the original in the evidence), the calls it counted, its timings."""
    fault = run.status != "ok"
    failure: FailureType | None = (
        None if run.passed else FAILURE_MAP.get("backend_error" if fault else run.failure_type, "wrong_outcome")
    )
    return ScenarioResult(
        id=run.task_id,
        category=run.group,
        passed=run.passed and not fault,
        status="failed" if fault else "done",
        failure_type=failure,
        engine_fault=fault,
        error=run.error or None,
        failure_evidence=None if run.passed else evidence(run),
        partial_score=None if fault else (1.0 if run.passed else sum(getattr(run, part) for part in CHECK_PARTS) / 4),
        failed_checks=[]
        if run.passed
        else [FailedCheck(index=i, type=d.split(":")[0], expected=None, found=d) for i, d in enumerate(run.details)],
        checks_total=len(CHECK_PARTS),
        steps=run.calls_made,
        seconds=round(run.wall_seconds, 3),
        tokens_in=0,
        tokens_out=run.eval_tokens,
        engine_timings=[],
        invalid_steps=sum(not call.valid for call in run.calls),
    )


def evidence(run: Run) -> str:
    text = (
        f"toolcallbench {run.failure_type}"
        + (f": {run.error}" if run.error else "")
        + "".join(f"; {d}" for d in run.details)
    )
    return text[:EVIDENCE_CHARS]


def transcript(run: Run) -> list[TranscriptEntry]:
    """The run in our transcript's shape: the task, one step per call, the answer; no clock."""
    entries: list[TranscriptEntry] = [TriggerEntry(text=task_text(run))]
    entries += [
        ExternalStepEntry(
            step=c.index,
            turn=c.turn,
            tool=c.tool,
            args=c.arguments,
            status="ok" if c.ok else (c.error_kind or "error"),
            result=c.result,
        )
        for c in run.calls
    ]
    entries.append(EndEntry(status=run.status, stop=run.failure_type, detail=run.final_text))
    return entries


def task_text(run: Run) -> str:
    """The run's first user message: the task as the model got it ("" when there is none)."""
    text = next((m.get("content") for m in run.messages if m.get("role") == "user"), "")
    if not isinstance(text, str):
        raise BadInput(f"run {run.task_id}: its task message is not text")
    return text
