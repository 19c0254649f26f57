"""The Tholos adapter: Tholos-Bench's own runner (`tholos bench`) as an external harness.

The published Tholos-Bench numbers were made with the runner of the public Tholos repository,
not with our harness (docs/external-suites.md says how the two differ). This adapter runs that
runner, pinned as a source archive by sha256 (the runner is not on PyPI), in its own sealed image
(images/tholos/) against the sealed engine, on scenario files from the suite's own pinned
`source` (the same archive our harness loads Tholos-Bench from, so both harnesses run the same
bytes). repro's driver (images/tholos/driver.py) calls the runner's `bench` command unchanged
and keeps, per worker:

- `results.jsonl`: the runner's results file (one line per scenario with its whole message list);
- `console.txt`: its console output (the per-category summary), byte for byte;
- `requests.jsonl`: every chat request body as the runner sent it, and the engine's answer;
- `db/<id>.sqlite` and `observed.jsonl`: each scenario's database as the runner scored it and
  the snapshot it scored against (what `repro check` re-executes the runner's scoring on);
- `scenarios/<category>/<id>.json`: the scenario files it ran, byte for byte (listed by sha256 and
  not kept: they are Tholos-Bench's files, referenced as the suite's are: `input_copy`);
- `driver.json`: the command, the runner's version, and that no cache_prompt was sent.

`normalise` turns each results line into our ScenarioResult and a transcript (one step per
assistant message, with the tool response that followed it). The runner's verdict is kept as it
gave it: a run it passed with an engine error stays passed (ours would fail it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    FailedCheck,
    FailureType,
    PromptEntry,
    ProtocolStats,
    ScenarioResult,
    ScenarioStatus,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from harness.io import loads_strict
from repro.core.errors import BadInput
from repro.suites.base import SCENARIO_MOUNT
from repro.suites.external.base import Adapter, Normalised, RawIndex
from repro.suites.external.raw import walk_raw
from repro.suites.external.tholos_check import recheck_workers, render_summaries
from repro.suites.external.tholos_raw import (
    CONSOLE,
    RUNNER_ERRORS,
    Observation,
    Request,
    RunnerResult,
    Worker,
    expectations,
)
from repro.suites.scenarios import select_scenarios

if TYPE_CHECKING:
    from repro.plan.planner import Cell
    from repro.spec.matrix import Suite
    from repro.spec.profiles import Profile
    from repro.suites.scenarios import SuiteSelection

RESULTS = "results.jsonl"
REQUESTS = "requests.jsonl"
OBSERVED = "observed.jsonl"
DRIVER_RECORD = "driver.json"
DB_DIR = "db"
SCENARIO_DIR = "scenarios"
MAX_RAW_FILES = 5_000
EVIDENCE_CHARS = 300


class Tholos(Adapter):
    name = "tholos"
    image_dir = "images/tholos"
    driver = "driver.py"

    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        """The scenarios of `wheel_root` (here the suite's scenario folder), selected as our suites
        are: the same ids, categories and sha256 as our harness's suite over the same files."""
        plain = suite.model_copy(update={"external": None, "source": None, "path": "."})
        return select_scenarios(plain, wheel_root).model_copy(update={"external": self.name})

    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        base_url, model = self.openai_server(cell, client, "tholos bench talks to an OpenAI-compatible server")
        # the runner's own flag for the cell's protocol
        mode = ["--json-mode", self.facts.protocol_modes[cell.protocol]]
        return [
            "--out",
            "/out",
            "--scenarios",
            SCENARIO_MOUNT,
            "--ids",
            ",".join(ids),
            "--base-url",
            base_url,
            "--model",
            model,
            *mode,
        ]

    def raw_paths(self, out_dir: Path) -> list[str]:
        return walk_raw(out_dir, MAX_RAW_FILES, "tholos bench")

    def input_copy(self, path: str) -> str | None:
        """The driver copies each scenario file it runs to `scenarios/<category>/<id>.json`, the
        path the suite's file has in a bundle's layout."""
        return path if path.startswith(f"{SCENARIO_DIR}/") and path.count("/") == 2 else None

    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        workers = read_workers(raw, index)
        results = {r.id: (r, w) for w in workers for r in w.results}
        if sorted(results) != sorted(ids) or len(results) != sum(len(w.results) for w in workers):
            raise BadInput(
                f"the runner's results hold {', '.join(sorted(results)) or 'none'}, the cell ran {', '.join(ids)}"
            )
        ordered = [results[i] for i in ids]
        return Normalised(
            results=[
                scenario_result(r, expectations(w, r), [q for q in w.requests if q.id == r.id], protocol)
                for r, w in ordered
            ],
            transcripts=[TranscriptLine(id=r.id, transcript=transcript(r)) for r, _ in ordered],
        )

    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        return recheck_workers(read_workers(raw, index), wheel_root, self.facts.protocol_modes.get(protocol, protocol))

    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:

        return render_summaries(read_workers(raw, index), index, wheel_root)


# ---------------------------------------------------------------- raw outputs


def read_workers(raw: dict[str, bytes], index: RawIndex) -> list[Worker]:
    from repro.suites.external.raw import worker_files

    return [read_worker(files, number) for number, files in sorted(worker_files(raw, index).items())]


def read_worker(files: dict[str, bytes], number: int) -> Worker:
    """One worker's raw files, parsed strictly (BadInput naming the file and line otherwise)."""
    unsafe = [p for p in files if p.startswith("/") or ".." in p.split("/") or "\\" in p]
    if unsafe:
        raise BadInput(f"worker {number}: raw path {unsafe[0][:80]!r} leaves its output folder")
    for needed in (RESULTS, CONSOLE, REQUESTS, OBSERVED):
        if needed not in files:
            raise BadInput(f"worker {number}: no {needed} among the raw outputs")
    return Worker(
        number=number,
        results=json_lines(files[RESULTS], RESULTS, RunnerResult),
        requests=json_lines(files[REQUESTS], REQUESTS, Request),
        observed=json_lines(files[OBSERVED], OBSERVED, Observation),
        databases={
            Path(p).stem: data
            for p, data in files.items()
            if p.startswith(f"{DB_DIR}/") and p.endswith(".sqlite") and p.count("/") == 1
        },
        scenarios={
            p.removeprefix(f"{SCENARIO_DIR}/"): data
            for p, data in files.items()
            if p.startswith(f"{SCENARIO_DIR}/") and p.count("/") == 2
        },
        console=files[CONSOLE],
    )


Row = TypeVar("Row", bound=BaseModel)


def json_lines(data: bytes, name: str, model: type[Row]) -> list[Row]:
    rows = []
    for number, line in enumerate(data.decode("utf-8", errors="strict").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate(loads_strict(line, max_int_digits=30, max_depth=64)))
        except (ValueError, ValidationError) as error:
            raise BadInput(
                f"{name}:{number}: not a line the runner or the driver writes ({str(error).splitlines()[0][:120]})"
            ) from None
    return rows


# ---------------------------------------------------------------- our records


def scenario_result(
    result: RunnerResult, expect: list[dict[str, Any]], requests: list[Request], protocol: str
) -> ScenarioResult:
    """A runner's result as one line of scenarios.jsonl: its verdict as it gave it, its failed
    assertions as our failed checks, its run error mapped to ours (docs/diagnosis.md), and how
    its requests went (protocol_stats, over every request, retries included)."""
    failure = None if result.passed else failure_type(result)
    fault = failure == "engine_error"
    positions = [next((i for i, a in enumerate(expect) if a == failed), -1) for failed in result.failed_assertions]
    status: ScenarioStatus = result.status if result.status in ("done", "waiting", "failed") else "failed"  # type: ignore[assignment]
    return ScenarioResult(
        id=result.id,
        category=result.category,
        passed=result.passed,
        status=status,
        failure_type=failure,
        engine_fault=fault,
        error=result.error,
        failure_evidence=None if result.passed else evidence(result),
        partial_score=None if fault else round(1 - len(result.failed_assertions) / max(1, len(expect)), 4),
        failed_checks=[
            FailedCheck(index=i, type=str(a.get("type")), expected=a, found=None)
            for i, a in zip(positions, result.failed_assertions, strict=True)
        ],
        checks_total=len(expect),
        steps=result.steps,
        seconds=result.seconds,
        tokens_in=result.tokens.in_,
        tokens_out=result.tokens.out,
        engine_timings=[],
        invalid_steps=result.invalid_json_count,
        protocol_stats=protocol_stats(result, requests, protocol),
    )


def protocol_stats(result: RunnerResult, requests: list[Request], protocol: str) -> ProtocolStats:
    """The engine's answers the runner got, and how many of them became a valid step (an
    assistant message with a tool: the runner keeps only valid steps' tools)."""
    answered = [r for r in requests if r.status == 200 and r.answer is not None]
    valid = sum(1 for m in result.messages if m.get("role") == "assistant" and parse_step(m).get("tool"))
    truncated = sum(1 for r in answered if finish_reason(r.answer or "") == "length")
    return ProtocolStats(
        protocol=protocol,
        model_turns=len(answered),
        valid_calls=valid,
        invalid_turns=max(0, len(answered) - valid),
        truncated=truncated,
        valid_tool_call_rate=round(valid / len(answered), 4) if answered else None,
    )


def finish_reason(answer: str) -> str | None:
    try:
        data = loads_strict(answer, max_depth=64)
        return str(data["choices"][0].get("finish_reason"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def failure_type(result: RunnerResult) -> FailureType:
    """A failed run's type: the runner's own stops (step limit, stuck), an engine error (any
    other run error: the runner's request failed), else an outcome its assertions refused."""
    if result.status == "failed" and result.error:
        return RUNNER_ERRORS.get(result.error, "engine_error")
    return "wrong_outcome"


def evidence(result: RunnerResult) -> str:
    failed = ", ".join(str(a.get("type")) for a in result.failed_assertions)
    text = (
        f"tholos {result.status}"
        + (f": {result.error}" if result.error else "")
        + (f"; failed assertions: {failed}" if failed else "")
    )
    return text[:EVIDENCE_CHARS]


def transcript(result: RunnerResult) -> list[TranscriptEntry]:
    """The run in our transcript's shape: the trigger as the runner wrote it, its first request's
    messages, one step per assistant message with the tool response after it, and how it ended."""
    messages = result.messages
    trigger = messages[1].get("content") if len(messages) > 1 else ""
    entries: list[TranscriptEntry] = [
        TriggerEntry(text=trigger if isinstance(trigger, str) else ""),
        PromptEntry(messages=messages[:2]),
    ]
    number = 0
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        number += 1
        step = parse_step(message)
        after = messages[position + 1] if position + 1 < len(messages) else {}
        answer = after.get("content") if after.get("role") == "user" else None
        tool = str(step.get("tool", ""))
        entries.append(
            ExternalStepEntry(
                step=number,
                turn=number,
                tool=tool,
                args=step.get("args", {}),
                status="ok" if tool else "invalid",
                result=answer if isinstance(answer, str) else None,
            )
        )
    entries.append(EndEntry(status=result.status, stop=result.error, detail=None))
    return entries


def parse_step(message: dict[str, Any]) -> dict[str, Any]:
    """The step an assistant message holds (the runner writes {"thought","tool","args"})."""
    try:
        value = loads_strict(str(message.get("content", "")), max_depth=64)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
