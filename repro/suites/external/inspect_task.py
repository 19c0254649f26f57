"""The inspect adapter: one inspect_ai task, run sealed by inspect_ai itself, and its log as our records.

A suite of harness `inspect` names a task by its registry name (`external.task`, e.g.
`inspect_evals/agent_threat_bench_memory_poison`) in a pinned package (`external.wheel`, e.g.
`inspect-evals==0.26.0`), its arguments (`task_args`), the model roles it asks for (`roles`), and
the samples it runs (`ids`: a task's samples are not files of the wheel, so the matrix names them).
In a cell, repro's driver (images/inspect/driver.py) runs inspect_ai's `eval()`, unchanged, against
the sealed engine through inspect's OpenAI-compatible provider, at the matrix's decoding, one
connection, one epoch, no shuffling. inspect's own log (`logs/*.eval`) is the raw output, kept byte
for byte.

`normalise` reads the log with inspect_ai's own reader (the host's inspect_ai, which must be the
lock's version: `pip install -e .[inspect]`) into one ScenarioResult and one transcript per sample.
`repro check` also re-runs the task's scorers on the log's samples in the suite's sealed image,
offline (`recheck_evidence`), and holds every model call to the cell's model and decoding.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    FailureType,
    ProgressEvent,
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from repro.bundle.layout.names import suite_folder
from repro.bundle.layout.writer import Bundle, write_in
from repro.bundle.records import InputReference
from repro.containers.sandbox import bind
from repro.core.config import PROJECT_ROOT, extra_pin
from repro.core.errors import BadInput, NotAtHand
from repro.core.files import MAX_RAW_BYTES, read_regular, sha256_bytes
from repro.spec.findings import Noted, SuiteSelection
from repro.suites.base import SCENARIO_MOUNT
from repro.suites.external.base import Adapter
from repro.suites.external.evidence import embedded_lock, tasks_root
from repro.suites.external.raw import (
    Normalised,
    RawIndex,
    external_of,
    tree_files,
    tree_lines,
    walk_raw,
    wheel_folder,
    worker_files,
)

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

    from repro.bundle.evidence import CellEvidence
    from repro.spec.cells import Cell
    from repro.spec.matrix import ExternalSuite, Suite
    from repro.spec.profiles import Profile

LOGS = "logs/"
MAX_LOG_MEMBERS = 20_000  # a sample is one member (two with its journal summary)
MAX_LOG_UNPACKED = 1024**3  # bytes, every member unpacked
MAX_RAW_FILES = 50
EVIDENCE_CHARS = 300
RESCORE_TIMEOUT_S = 600
PASSING = ("C", True, 1, 1.0)  # inspect's CORRECT, or a true or full value
INSTALL_READER = f"pip install '{extra_pin('inspect', 'inspect-ai')}' (repro's inspect extra)"


class Inspect(Adapter):
    name = "inspect"
    image_dir = "images/inspect"
    driver = "driver.py"

    def author_files(self, suite: Suite) -> bool:
        """An author's task file (`task: FILE.py@name`) is the author's: in their tree at its commit,
        and in the bundle (suites/<id>/scenarios/), as their scenario files are."""
        return external_of(suite).task_file is not None

    def tasks_in_bundle(self, suite: Suite) -> bool:
        return self.author_files(suite)

    def tasks_folder(self, suite: Suite, root: Path | None = None) -> Path:
        """A package's task: its folder in the fetched wheel; an author's task file: the suite's
        folder in the author's tree (`root`, or where the matrix says)."""
        if not self.author_files(suite):
            return super().tasks_folder(suite, root)
        return ((PROJECT_ROOT if root is None else root) / suite.path).resolve()

    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        """The samples the suite names, in its order; the sha256 covers the task's folder (a
        package's, `path` in its wheel, e.g. inspect_evals/agent_threat_bench: its code and data;
        or the author's folder that holds their task file), the task, its arguments and roles, the
        wheel and the lock. `wheel_root`: the unpacked wheel, or the author's folder itself."""
        external = external_of(suite)
        folder = author_folder(suite, wheel_root) if self.author_files(suite) else wheel_folder(suite, wheel_root)
        if not suite.ids:
            raise BadInput(f"suite {suite.id}: an inspect suite names the samples it runs (ids)")
        task = str(external.task)
        unbound = sorted(roles_asked(folder) - set(external.roles or []))
        if unbound:
            raise BadInput(
                f"suite {suite.id}: task {task} asks for model role(s) {', '.join(unbound)} "
                f"(get_model(role=...) in {suite.path}); bind them in external.roles, or inspect would play them "
                "with the main model unsaid"
            )
        pins = [
            f"task\0{task}",
            f"task_args\0{json.dumps(external.task_args or {}, sort_keys=True)}",
            f"roles\0{','.join(external.roles or [])}",
        ]
        digest = sha256_bytes(
            "".join(f"{line}\n" for line in [*sha256_inputs, *pins, *tree_lines(folder, "task")]).encode()
        )
        short = task_name(external)
        return SuiteSelection(
            folder=folder,
            ids=list(suite.ids),
            categories=dict.fromkeys(suite.ids, short),
            sha256=digest,
            external=self.name,
        )

    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        base_url, model = self.openai_server(cell, client, "inspect runs through its OpenAI-compatible provider")
        external = external_of(cell.suite)
        decoding = cell.decoding
        return [
            *["run", "--out", "/out", "--task", task_spec(external), "--samples", ",".join(ids)],
            *["--task-args", json.dumps(external.task_args or {}, sort_keys=True)],
            *["--base-url", base_url, "--model", model],
            *["--seed", str(cell.seed), "--temperature", str(decoding.temperature)],
            *["--max-tokens", str(decoding.max_tokens), "--timeout", str(int(profile.step_timeout_s))],
            *[arg for role in external.roles or [] for arg in ("--role", role)],
        ]

    def embed(self, bundle: Bundle, suite: Suite, selection: SuiteSelection) -> list[InputReference]:
        """The lock, and the wheel by reference; an author's task folder, byte for byte, under
        suites/<id>/scenarios/ (their own code: check selects it again there, and a rerun runs it)."""
        references = super().embed(bundle, suite, selection)
        if self.author_files(suite):
            target = suite_folder(bundle.dir, suite.id) / "scenarios"
            for name, path in tree_files(selection.folder).items():
                write_in(bundle.dir, target / name, read_regular(path, MAX_RAW_BYTES))
        return references

    def mounts(self, selection: SuiteSelection) -> list:
        """The task's folder, read-only, at SCENARIO_MOUNT (an author's task file runs from there)."""
        return [bind(selection.folder, SCENARIO_MOUNT, read_only=True)]

    def raw_paths(self, out_dir: Path) -> list[str]:
        return walk_raw(out_dir, MAX_RAW_FILES, "inspect")

    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        logs = read_logs(raw, index)
        samples = {str(s.id): s for log in logs for s in log.samples or []}
        if sorted(samples) != sorted(ids) or any(s.epoch != 1 for s in samples.values()):
            raise BadInput(
                f"the inspect logs hold samples {', '.join(sorted(samples)) or 'none'}, the cell ran {', '.join(ids)}"
            )
        ordered = [samples[sample_id] for sample_id in ids]
        task = log_task(logs)
        return Normalised(
            results=[scenario_result(s, task) for s in ordered],
            transcripts=[TranscriptLine(id=str(s.id), transcript=transcript(s)) for s in ordered],
        )

    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        """What the logs alone show: each finished, and every model call used the cell's one model."""
        return [problem for log in read_logs(raw, index) for problem in log_problems(log)]

    def recheck_evidence(self, ev: CellEvidence, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> list[str]:
        """The logs held to the cell's pins (the package, the task, the decoding of every model call,
        the bound roles), and the task's scorers re-run on the recorded samples in the suite's sealed
        image (offline): each sample's score must be the log's."""
        record = ev.record.cell
        external = external_of(record.suite)
        wanted = {
            "temperature": record.decoding.temperature,
            "seed": record.seed,
            "max_tokens": record.decoding.max_tokens,
        }
        files = log_files(raw, index)
        logs = {name: read_log(name, data) for name, data in sorted(files.items())}
        locked = re.search(r"^inspect-ai==(\S+)", embedded_lock(ev).decode(errors="replace"), re.MULTILINE)
        problems = [p for log in logs.values() for p in [*log_problems(log), *pin_problems(log, external, wanted)]]
        problems += [
            f"{name} was written by inspect_ai {(log.eval.packages or {}).get('inspect_ai')}, "
            f"the suite's lock pins {locked[1] if locked else 'none'}"
            for name, log in logs.items()
            if not locked or (log.eval.packages or {}).get("inspect_ai") != locked[1]
        ]
        graded = {name for name, log in logs.items() if graded_by_model(log)}
        notes = [
            Noted(f"{name}: its scorer called a model, so its scores are taken on the log's word, not re-run")
            for name in sorted(graded)
        ]
        if len(graded) == len(logs):
            return problems + notes
        image = rescoring_image(ev)
        author = tasks_root(ev) if self.author_files(record.suite) else None
        for name, log in logs.items():
            if name not in graded:
                problems += score_problems(log, rescore(image, self.program, files[name], external, author))
        return problems + notes

    records_requests = True

    def engine_requests(self, raw: dict[str, bytes], index: RawIndex) -> int | None:
        return sum(model_calls(log) for log in read_logs(raw, index))

    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        """inspect's own report is its log, which the bundle keeps: nothing is rendered."""
        return {}

    def own_messages(self, raw: dict[str, bytes], index: RawIndex) -> dict[str, list[dict]]:
        return {
            str(s.id): [m.model_dump(mode="json", exclude_none=True) for m in s.messages]
            for log in read_logs(raw, index)
            for s in log.samples or []
        }

    def progress(self, line: str) -> ProgressEvent | None:
        return ProgressEvent.parse(line)


# ---------------------------------------------------------------- the task


def task_name(external: ExternalSuite) -> str:
    """The task's own name, without its package or file."""
    task = str(external.task)
    return task.split("@", 1)[1] if "@" in task else task.split("/", 1)[1]


def task_spec(external: ExternalSuite) -> str:
    """The task as the driver hands it to inspect's eval(): a package's registry name, or the
    author's file where the cell's container mounts their folder (FILE.py@name)."""
    return str(external.task) if external.task_file is None else f"{SCENARIO_MOUNT}/{external.task}"


def author_folder(suite: Suite, folder: Path) -> Path:
    """The author's folder that holds the suite's task file (BadInput when the file is not in it)."""
    name = external_of(suite).task_file
    path = folder / str(name)
    if not folder.is_dir() or path.is_symlink() or not path.is_file():
        raise BadInput(f"suite {suite.id}: the task file {name} is not a file of {suite.path}")
    return folder


# ---------------------------------------------------------------- the log


ROLE_ASKED = re.compile(r"""get_model\(\s*role\s*=\s*["']([A-Za-z0-9_-]+)["']""")
MAX_SCANNED_BYTES = 2 * 1024 * 1024


def roles_asked(folder: Path) -> set[str]:
    """The model roles the task's code asks for by name (`get_model(role="user")`, tau2's user
    simulator) in its package folder: read before the run, so an unbound role is refused in one line
    (check also refuses a model call in a role the matrix does not bind, from the log)."""
    asked: set[str] = set()
    for path in sorted(folder.rglob("*.py")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SCANNED_BYTES:
            asked |= set(ROLE_ASKED.findall(path.read_text(encoding="utf-8", errors="replace")))
    return asked


def log_files(raw: dict[str, bytes], index: RawIndex) -> dict[str, bytes]:
    """Every worker's inspect log (`logs/*.eval`), by raw name; BadInput when a worker wrote none or several."""
    found = {}
    for number, files in sorted(worker_files(raw, index).items()):
        logs = {path: data for path, data in files.items() if path.startswith(LOGS) and path.endswith(".eval")}
        if len(logs) != 1:
            raise BadInput(f"worker {number} wrote {len(logs)} inspect logs, not one")
        path, data = next(iter(logs.items()))
        found[f"w{number}:{path}"] = data
    return found


def log_task(logs: list[EvalLog]) -> str:
    """The task the logs ran, by its name without its package (every log must name one)."""
    tasks = {log.eval.task.split("/")[-1] for log in logs}
    if len(tasks) != 1:
        raise BadInput(f"the inspect logs ran tasks {', '.join(sorted(tasks))}, not one")
    return tasks.pop()


def read_logs(raw: dict[str, bytes], index: RawIndex) -> list[EvalLog]:
    return [read_log(name, data) for name, data in sorted(log_files(raw, index).items())]


def read_log(name: str, data: bytes) -> EvalLog:
    """One `.eval` log, read by inspect_ai's own reader (the lock's version: the host's must be it)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise NotAtHand(f"reading an inspect log needs inspect_ai on this host: {INSTALL_READER}") from None
    refuse_oversized(name, data)
    with tempfile.TemporaryDirectory(prefix="repro-inspect-") as folder:
        path = Path(folder) / "log.eval"
        path.write_bytes(data)
        try:
            log = read_eval_log(str(path))
        except Exception as error:  # inspect's reader raises many kinds on a damaged file
            raise BadInput(f"{name}: not an inspect log ({type(error).__name__}: {str(error)[:200]})") from None
    from inspect_ai import __version__ as reader

    writer = (log.eval.packages or {}).get("inspect_ai")
    if writer != reader:  # the host's reader, not the bundle: pin_problems holds the writer to the suite's lock
        raise NotAtHand(
            f"{name} was written by inspect_ai {writer}; this host reads it with {reader}: "
            f"pip install 'inspect-ai=={writer}'"
        )
    return log


def refuse_oversized(name: str, data: bytes) -> None:
    """A log is a zip (zstd members): its directory is read first, and a log of more members, or of
    more bytes once unpacked, than a cell's run can write is refused before inspect's reader unpacks it."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as error:
        raise BadInput(f"{name}: not an inspect log ({error})") from None
    if len(members) > MAX_LOG_MEMBERS:
        raise BadInput(f"{name}: {len(members)} members, more than an inspect log of a cell holds ({MAX_LOG_MEMBERS})")
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_LOG_UNPACKED:
        raise BadInput(f"{name}: {unpacked} bytes once unpacked, more than {MAX_LOG_UNPACKED}")


def score_values(sample: EvalSample) -> dict[str, Any]:
    return {name: score.value for name, score in (sample.scores or {}).items()}


def passes(value: object) -> bool:
    """inspect's CORRECT, a true or a 1, or a dict whose every value passes (agentdojo-like utility and security)."""
    if isinstance(value, dict):
        return bool(value) and all(passes(v) for v in value.values())
    return value in PASSING


def parts(value: object) -> list[bool]:
    return [passes(v) for v in value.values()] if isinstance(value, dict) else [passes(value)]


def scenario_result(sample: EvalSample, category: str) -> ScenarioResult:
    """A sample as one line of scenarios.jsonl: passed when every score passes; the score values are
    the evidence of a failure."""
    values = score_values(sample)
    fault = sample.error is not None
    checks = [part for value in values.values() for part in parts(value)]
    passed = bool(checks) and all(checks) and not fault
    failure: FailureType | None = None if passed else ("engine_error" if fault else "wrong_outcome")
    usage = list((sample.model_usage or {}).values())
    calls = [c for m in sample.messages if m.role == "assistant" for c in (m.tool_calls or [])]
    return ScenarioResult(
        id=str(sample.id),
        category=category,
        passed=passed,
        status="failed" if fault else "done",
        failure_type=failure,
        engine_fault=fault,
        error=sample.error.message[:EVIDENCE_CHARS] if sample.error else None,
        failure_evidence=None if passed else f"inspect scores {json.dumps(values, sort_keys=True)}"[:EVIDENCE_CHARS],
        partial_score=None if fault else (sum(checks) / len(checks) if checks else 0.0),
        failed_checks=[],
        checks_total=len(checks),
        steps=len(calls),
        seconds=round(sample.total_time or 0.0, 3),
        tokens_in=sum(u.input_tokens for u in usage),
        tokens_out=sum(u.output_tokens for u in usage),
        engine_timings=[],
        invalid_steps=sum(1 for m in sample.messages if m.role == "tool" and m.error is not None),
    )


def transcript(sample: EvalSample) -> list[TranscriptEntry]:
    """The sample in our transcript's shape: the first user message, one step per tool call with its
    result, the final completion; no clock."""
    trigger = next((m.text for m in sample.messages if m.role == "user"), "")
    results = {m.tool_call_id: m for m in sample.messages if m.role == "tool"}
    entries: list[TranscriptEntry] = [TriggerEntry(text=trigger)]
    step = 0
    for turn, message in enumerate(m for m in sample.messages if m.role == "assistant"):
        for call in message.tool_calls or []:
            result = results.get(call.id)
            status = "none" if result is None else ("ok" if result.error is None else result.error.type)
            entries.append(
                ExternalStepEntry(
                    step=step,
                    turn=turn,
                    tool=call.function,
                    args=call.arguments,
                    status=status,
                    result=result.text if result is not None else None,
                )
            )
            step += 1
    stop = sample.output.stop_reason if sample.output and sample.output.choices else None
    detail = sample.output.completion if sample.output else None
    entries.append(EndEntry(status="error" if sample.error else "ok", stop=stop, detail=detail))
    return entries


# ---------------------------------------------------------------- what check holds the log to


def model_events(log: EvalLog) -> list[Any]:
    return [e for s in log.samples or [] for e in model_events_of(s)]


def model_events_of(sample: EvalSample) -> list[Any]:
    return [e for e in sample.events if getattr(e, "event", None) == "model"]


def graded_by_model(log: EvalLog) -> bool:
    """Whether a model call was made while scoring (inside a `scorers` span): a model-graded scorer,
    which re-scoring offline cannot run again."""
    for sample in log.samples or []:
        spans = scoring_spans(sample)
        if any(in_scoring(e.span_id, spans) for e in model_events_of(sample)):
            return True
    return False


def scoring_spans(sample: EvalSample) -> dict[str, tuple[str | None, str | None]]:
    """Each span of the sample by id: its type and its parent (what `in_scoring` walks)."""
    events: list[Any] = list(sample.events)
    return {e.id: (e.type, e.parent_id) for e in events if getattr(e, "event", None) == "span_begin"}


def in_scoring(span: str | None, spans: dict[str, tuple[str | None, str | None]]) -> bool:
    """Whether a span is, or lies within, a `scorers` span (a bounded walk: a log's parents may loop)."""
    for _ in range(len(spans) + 1):
        if span is None or span not in spans:
            return False
        kind, span = spans[span]
        if kind in ("scorers", "scorer"):
            return True
    return False


def log_problems(log: EvalLog) -> list[str]:
    """The log finished, every model call named its model (a role bound to the same engine and model
    included), and every sample's answer is what its model calls returned."""
    problems = [] if log.status == "success" else [f"the inspect log's status is {log.status}"]
    return problems + model_call_problems(log) + [p for s in log.samples or [] for p in output_problems(s)]


def output_problems(sample: EvalSample) -> list[str]:
    """The sample's output is its last model call's (a model-graded scorer's calls aside), and its
    assistant messages are its model calls' outputs, in order (a call whose output the sample did
    not keep may come between)."""
    from inspect_ai.log import resolve_sample_attachments

    sample = resolve_sample_attachments(sample)  # a model event holds long text as attachment://<hash>
    spans = scoring_spans(sample)
    outputs = [said(e.output.message) for e in model_events_of(sample) if not in_scoring(e.span_id, spans)]
    problems = []
    if sample.output and sample.output.choices and (not outputs or said(sample.output.message) != outputs[-1]):
        problems.append(f"sample {sample.id}: its output is not what its last model call returned")
    remaining = iter(outputs)
    kept = [said(m) for m in sample.messages if m.role == "assistant"]
    if not all(any(message == output for output in remaining) for message in kept):
        problems.append(f"sample {sample.id}: an assistant message is no model call's output, in order")
    return problems


def said(message: Any) -> tuple[str, list[tuple[str, str]]]:
    """What an assistant message says: its text and each tool call with its arguments."""
    calls = [(c.function, json.dumps(c.arguments, sort_keys=True)) for c in message.tool_calls or []]
    return message.text, calls


def model_calls(log: EvalLog) -> int:
    """The requests the log's model calls made of the engine: each model event one, and one more per
    retry; none for a call inspect's own cache answered."""
    return sum(0 if e.cache == "read" else 1 + (e.retries or 0) for e in model_events(log))


def pin_problems(log: EvalLog, external: ExternalSuite, wanted: dict[str, Any]) -> list[str]:
    """The log ran the pinned package at its version, the suite's task, and the cell's decoding."""
    name, version = str(external.wheel).split("==", 1)
    ran = (log.eval.packages or {}).get(name.replace("-", "_"))
    problems = [] if ran == version else [f"the log ran {name} {ran}, the suite pins {version}"]
    ran_task = (log.eval.task, log.eval.task_file)
    file = external.task_file
    wanted_task = (external.task, None) if file is None else (task_name(external), f"{SCENARIO_MOUNT}/{file}")
    if ran_task != wanted_task:
        problems.append(f"the log ran task {ran_task}, the suite names {wanted_task}")
    return problems + decoding_problems(log, wanted, external.roles or [])


def score_problems(log: EvalLog, rescored: dict[str, Any]) -> list[str]:
    """Every sample's recorded scores are what its scorers give again."""
    recorded = {str(s.id): score_values(s) for s in log.samples or []}
    return [
        f"sample {sample_id}: the log scores {recorded[sample_id]}, its scorers re-run give {rescored.get(sample_id)}"
        for sample_id in sorted(recorded)
        if rescored.get(sample_id) != recorded[sample_id]
    ]


def model_call_problems(log: EvalLog) -> list[str]:
    """Every model call named the log's model (a role bound to the same engine and model included)."""
    model = log.eval.model
    others = sorted({str(e.model) for e in model_events(log)} - {model})
    return [f"the log calls model {', '.join(others)} besides the cell's {model}"] if others else []


def decoding_problems(log: EvalLog, wanted: dict[str, Any], roles: list[str]) -> list[str]:
    """Every model call was made at the cell's decoding, and by the main model or a role the matrix binds."""
    problems = []
    for event in model_events(log):
        config = event.config
        found = {"temperature": config.temperature, "seed": config.seed, "max_tokens": config.max_tokens}
        if found != wanted:
            problems.append(f"a model call ran at {found}, the cell's decoding is {wanted}")
            break
        role = getattr(event, "role", None)
        if role is not None and role not in roles:
            problems.append(f"a model call played role {role!r}, which the matrix does not bind")
            break
    return problems


def rescoring_image(ev: CellEvidence) -> str:
    """The suite's sealed image on this host: the one the cell ran in (by id or by its content-keyed
    name), or one built from the same wheel, lock and driver (its labels say so: the harness image
    below it does not enter the scorer's code)."""
    from repro.store.images import client_or_default
    from repro.suites.external.rebuild import SAME_CODE

    recorded = ev.record.harness_image
    if recorded is None:
        raise BadInput("the cell records no harness image")
    try:
        client = client_or_default(None)
        for reference in (recorded.id, recorded.reference):
            try:
                return str(client.images.get(reference).id)
            except Exception:  # docker's ImageNotFound, or a reference this host cannot parse
                continue
        wanted = [f"{label}={recorded.labels[label]}" for label in SAME_CODE if label in recorded.labels]
        same = client.images.list(filters={"label": wanted}) if len(wanted) == len(SAME_CODE) else []
    except Exception as error:  # no Docker engine on this host
        raise NotAtHand(
            f"re-scoring runs the task's scorers in the suite's image, and Docker is not at hand ({error}): "
            "start a Docker engine (./scripts/up starts one), then run: "
            f"repro images build --from-bundle {ev.bundle.dir}"
        ) from None
    if same:
        return str(sorted(image.id for image in same)[0])
    raise NotAtHand(
        f"re-scoring runs the task's scorers in the suite's image {recorded.reference}, not on this host: "
        f"run: repro images build --from-bundle {ev.bundle.dir}"
    )


def rescore(image: str, program: list[str], log: bytes, external: ExternalSuite, author: Path | None) -> dict[str, Any]:
    """Each sample's scores, from the task's scorers re-run on the log in `image`: sealed as a probe
    is (non-root, read-only, no capabilities), with no network at all. A package's scorers are named
    by its package; an author's are loaded from their task file (`author`: the bundle's copy of
    their folder, mounted where the cell's container had it)."""
    from repro.containers.sandbox import base_env, create_kwargs, labels
    from repro.spec.findings import SandboxSettings
    from repro.store.images import client_or_default

    client = client_or_default(None)
    settings = SandboxSettings(
        pids_limit=128,
        tmpfs={"/tmp": "rw,nosuid,nodev,size=256m"},
        env={**base_env(), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
        labels=labels("rescore", None, "probe"),
    )
    with tempfile.TemporaryDirectory(prefix="repro-rescore-") as folder:
        path = Path(folder) / "log.eval"
        path.write_bytes(log)
        path.chmod(0o644)
        Path(folder).chmod(0o755)
        package = [] if author is not None else ["--package", str(external.task).split("/", 1)[0]]
        task = [] if author is None else [bind(author, SCENARIO_MOUNT, read_only=True)]
        kwargs = create_kwargs(
            settings,
            image,
            ["rescore", "/in/log.eval", *package],
            entrypoint=program,
            mounts=[bind(folder, "/in", read_only=True), *task],
        )
        container = client.containers.create(**kwargs)
        try:
            container.start()
            status = container.wait(timeout=RESCORE_TIMEOUT_S)
            output = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
        finally:
            container.remove(force=True)
    lines = [line for line in output.splitlines() if line.startswith("{")]
    if status.get("StatusCode") != 0 or not lines:
        raise BadInput(f"the task's scorers did not re-run (exit {status.get('StatusCode')}): {output[-300:]}")
    try:
        return dict(json.loads(lines[-1]))
    except (json.JSONDecodeError, TypeError, ValueError):
        raise BadInput("the re-run scorers printed no scores") from None
