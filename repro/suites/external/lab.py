"""The LAB adapter: Local Agent Bench's own code (`python3 -m local_agent_bench run`) as an external harness.

LAB is on no package registry: a matrix pins its source as an archive (its git commit, or the
sha256 of a deterministic packing found in a mirror: docs/external-suites.md), and its files never
enter the tree. Its image (images/lab/) holds LAB's project folder as `local-agent-bench`; repro's
driver (images/lab/driver.py) runs LAB's command line unchanged against the sealed Ollama, its
live weather hosts answered by fixture hosts inside the sandbox from repro's fixture worlds
(`fixtures/weather`, and `images/lab/world` for the places LAB resolves from its own table, both
mounted read-only), and keeps per worker (lab_raw reads them):

- `result.json`: LAB's result file byte for byte (per task its `score`, `failure_reason`,
  `tool_calls`, `final_answer`, `raw_transcript`, `assertion_results`);
- `console.txt`: what LAB printed, its `Summary: k/n passed` line among it;
- `fixtures.jsonl`: each answer a fixture host gave, by sha256; `driver.json`: the command, the
  fixture worlds' files by sha256, LAB's exit.

The suite's `path` names LAB's benchmark file in its archive (`benchmarks/smoke.json`); LAB runs it
whole (a suite selects no subset), each task under LAB's own category. The matrix protocol maps to
LAB's runtime (`react` -> `raw-ollama-react`, HarnessFacts.protocol_modes); a cell with a matrix
runtime runs LAB's CLI runtime for it (`pi` -> `pi-react`, RuntimeKindFacts.harness_modes) in an image
built on the runtime's, LAB given the model as the runtime's command line names it
(RuntimeKindFacts.model_ref). `normalise` keeps LAB's
outcome per task as LAB gave it (passed at score 1.0, as its Summary counts; `score`;
`failure_reason` mapped onto our failure types, FROM_LAB_CODE) and its tool calls as the
transcript's steps; `recheck` re-derives LAB's summary and re-runs LAB's own scoring (lab_check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    PromptEntry,
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from repro.containers.sandbox import bind
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.suites.base import FIXTURES_MOUNT
from repro.suites.external.base import Adapter
from repro.suites.external.lab_check import recheck_worker, runtime_problems
from repro.suites.external.lab_raw import (
    CONSOLE,
    FROM_LAB_CODE,
    PASS,
    LabTaskResult,
    benchmark_file,
    benchmark_tasks,
    read_result,
)
from repro.suites.external.raw import Normalised, RawIndex, external_of, raw_name, walk_raw, worker_files
from repro.suites.external.wheels import fetch_code, fetched_code

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence
    from repro.plan.planner import Cell
    from repro.spec.findings import SuiteSelection
    from repro.spec.matrix import Suite
    from repro.spec.profiles import Profile

MAX_RAW_FILES = 50
EVIDENCE_CHARS = 300
# the folders of repro's tree the fixture hosts answer from (each one's weather/), and where they are mounted
FIXTURE_WORLDS = {"fixtures": FIXTURES_MOUNT, "images/lab/world": "/lab-world"}
ENGINE_CODES = frozenset({"MODEL_NOT_INSTALLED", "OLLAMA_UNREACHABLE"})


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
        """The benchmark's tasks, whole and in its order, under LAB's own categories; the sha256
        covers the benchmark file and the fixture worlds its live tools are answered from."""
        from repro.spec.findings import SuiteSelection

        benchmark = benchmark_file(wheel_root, suite.path)
        tasks = benchmark_tasks(benchmark)
        if suite.ids and suite.ids != list(tasks) or suite.categories or suite.per_category:
            raise BadInput(f"suite {suite.id}: LAB runs {suite.path} whole; select no ids, categories or per_category")
        lines = [*sha256_inputs, f"benchmark\0{suite.path}\0{sha256_bytes(benchmark.read_bytes())}"]
        lines += [f"fixture\0{name}\0{sha256_bytes(path.read_bytes())}" for name, path in world_files()]
        digest = sha256_bytes("".join(f"{line}\n" for line in lines).encode())
        return SuiteSelection(
            folder=benchmark.parent, ids=list(tasks), categories=tasks, sha256=digest, external=self.name
        )

    def mounts(self, selection: SuiteSelection) -> list:
        """repro's fixture worlds, read-only, where the driver's fixture hosts read them (LAB's own
        code and benchmark files are in the image)."""
        return [bind(PROJECT_ROOT / folder, mount, read_only=True) for folder, mount in FIXTURE_WORLDS.items()]

    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        _, host, model = self.engine_server(cell, client, "LAB talks to Ollama's own API")
        worlds = [arg for mount in FIXTURE_WORLDS.values() for arg in ("--fixtures", mount)]
        argv = ["--out", "/out", "--benchmark", cell.suite.path, "--base-url", host, *worlds]
        driven = cell.driven_runtime
        if driven is None:
            return [*argv, "--runtime", self.facts.protocol_modes[cell.protocol], "--model", model]
        named = driven.facts.model_ref.format(model=model)  # as the runtime's command line names it
        return [
            *argv,
            *("--runtime", driven.facts.harness_modes[self.name], "--model", named),
            *("--runtime-kind", driven.kind, "--engine-model", model, "--clock", driven.clock),
            *("--context", str(cell.decoding.context), "--max-tokens", str(cell.decoding.max_tokens)),
        ]

    def raw_paths(self, out_dir: Path) -> list[str]:
        return walk_raw(out_dir, MAX_RAW_FILES, "LAB")

    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        results = [
            task for _number, files in sorted(worker_files(raw, index).items()) for task in read_result(files).results
        ]
        found = [t.task_id for t in results]
        if found != ids:
            raise BadInput(f"LAB's result holds {', '.join(found) or 'no task'}, the benchmark has {', '.join(ids)}")
        return Normalised(
            results=[scenario_result(t) for t in results],
            transcripts=[TranscriptLine(id=t.task_id, transcript=transcript(t)) for t in results],
        )

    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        problems = []
        for number, files in sorted(worker_files(raw, index).items()):
            problems += [f"worker {number}: {p}" for p in recheck_worker(files, wheel_root)]
        return problems

    def recheck_evidence(self, ev: CellEvidence, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> list[str]:
        """LAB's checks (`recheck`), and the runtime LAB ran held to the cell's (lab_check.runtime_problems)."""
        cell = ev.record.cell
        driven = cell.driven_runtime
        ran = driven.facts.harness_modes[self.name] if driven else self.facts.protocol_modes[cell.protocol]
        kind, clock = (driven.kind, driven.clock) if driven else (None, None)
        problems = self.recheck(raw, index, wheel_root, cell.protocol)
        for number, files in sorted(worker_files(raw, index).items()):
            problems += [f"worker {number}: {p}" for p in runtime_problems(files, ran, kind, clock)]
        return problems

    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        """LAB's own report: its console output as it printed it, its `Summary: k/n passed` line
        among it (which `recheck` re-derives from the per-task results; LAB's code, not ours, would
        be needed to print it again)."""
        return {
            raw_name(CONSOLE, number, index.workers): files.get(CONSOLE, b"")
            for number, files in sorted(worker_files(raw, index).items())
        }


def world_files() -> list[tuple[str, Path]]:
    """The fixture worlds' weather files, each by its path in the tree."""
    found = [PROJECT_ROOT / folder / "weather" for folder in FIXTURE_WORLDS]
    return [(p.relative_to(PROJECT_ROOT).as_posix(), p) for folder in found for p in sorted(folder.glob("*.json"))]


# ---------------------------------------------------------------- our records


def scenario_result(task: LabTaskResult) -> ScenarioResult:
    """A LAB task as one line of scenarios.jsonl: LAB's verdict, its reason as our failure type."""
    failure = None if task.ok else FROM_LAB_CODE.get(task.failure_reason, "step_limit")
    return ScenarioResult(
        id=task.task_id,
        category=task.category,
        passed=task.ok,
        status="done",
        failure_type=failure,
        engine_fault=task.failure_reason in ENGINE_CODES,
        error=None if task.ok else task.failure_reason,
        failure_evidence=None if task.ok else evidence(task),
        partial_score=round(task.score, 4),
        checks_total=len(task.assertion_results),
        failed_checks=[],
        steps=len(task.tool_calls),
        seconds=round(task.latency_ms / 1000, 3),
        tokens_in=0,  # LAB's result records no token counts (the engine's log has them)
        tokens_out=0,
        engine_timings=[],
        invalid_steps=0,
    )


def evidence(task: LabTaskResult) -> str:
    failed = ", ".join(str(a.get("type")) for a in task.assertion_results if not a.get("ok"))
    text = f"LAB {task.failure_reason} (score {task.score:g})" + (f"; failed: {failed}" if failed else "")
    return text[:EVIDENCE_CHARS]


def transcript(task: LabTaskResult) -> list[TranscriptEntry]:
    """LAB's run in our transcript's shape: the task's prompt, its first messages, one step per tool
    call LAB made with its result or error, and how it ended (LAB's reason)."""
    messages = task.raw_transcript
    prompt = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    entries: list[TranscriptEntry] = [
        TriggerEntry(text=prompt if isinstance(prompt, str) else ""),
        PromptEntry(messages=messages[:2]),
    ]
    for number, call in enumerate(task.tool_calls, start=1):
        outcome = json.dumps(call.result, sort_keys=True) if call.ok else str(call.error)
        entries.append(
            ExternalStepEntry(
                step=number,
                turn=number,
                tool=call.name,
                args=call.args,
                status="ok" if call.ok else "error",
                result=outcome[: EVIDENCE_CHARS * 10],
            )
        )
    stop = None if task.failure_reason == PASS else task.failure_reason
    entries.append(EndEntry(status="done" if task.ok else "failed", stop=stop, detail=task.final_answer))
    return entries
