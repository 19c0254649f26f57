"""Re-grading: does a recorded scenario result follow from its own transcript?

The transcript's tool calls are executed again, in order, against a fresh workspace of the
scenario (the same fixtures, ``respond``, ``interfere`` and pinned clock) through the run loop
itself: ``TranscriptPolicy`` plays the recorded steps as the model, and ``run_scenario`` scores
the run, so the loop, the tools, the checks and the diagnosis are exactly those of a real run.
The outcome is then compared with what was recorded: every step's status and result, how the
run ended, ``passed``, the failed checks, the failure type with its step and evidence, and the
partial credit. Each difference is named.

How a recorded run ended is replayed faithfully: ``done``, ``waiting``, ``stuck`` and
``step_limit`` are decided by the loop from the replayed steps; ``invalid_reply`` is replayed
as the recorded invalid replies (each with its recorded reject code, which the diagnosis reads),
an engine stop (``engine_unreachable``, ``model_not_loaded``, ``context_overflow``,
``engine_error``) as the engine failure of that name (so a recorded engine fault can never
re-grade into a pass), and ``timeout`` (a wall-clock budget, which a replay cannot measure) as
the recorded late reply, then scored as a timeout: always a failure. A transcript that ends
before the loop does is a difference, and the run is stopped as an engine failure.

Given the cell's protocol (``Replay``, as ``repro check`` does), the recorded steps are not
taken on their word: each recorded raw reply is read again by that protocol's own policy
(``TranscriptPolicy`` with ``ReplayClient``), so the executed call, its thought, each reply's
validity and reject code, and the first prompt (rebuilt from the scenario) are derived, and a
record that says otherwise is a difference.

A re-grade proves that the recorded outcome follows from the recorded calls; it cannot prove
that a model made those calls (only a rerun does). A transcript is hostile input: its size and
nesting are bounded, its entries validated, and anything malformed is a difference, never an
exception.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.agent.loop import ENGINE_STOPS, INVALID_REPLY, run_agent
from harness.agent.policy import ModelCall, PolicyReply, Step, Turn
from harness.clients.errors import EngineError, engine_failure
from harness.clients.openai_compat import ChatReply, ToolCall
from harness.contracts import (
    ENTRY,
    EndEntry,
    ExternalStepEntry,
    FailedCheck,
    InvalidEntry,
    PromptEntry,
    RecordedReply,
    ScenarioResult,
    StepEntry,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from harness.io.inputs import MAX_RECORDS_BYTES, open_text
from harness.model.fixtures import FIXTURES_ENV
from harness.model.scenario import Scenario, ScenarioError, load_scenarios
from harness.model.workspace import Workspace
from harness.protocols import PROTOCOLS, make_policy
from harness.runner import build_transcript, run_scenario, verdict
from harness.scoring.checks import CheckContext, evaluate_all

# What the host may import: the re-grade, and the scenario loading and fixture folder it needs.
__all__ = [
    "FIXTURES_ENV",
    "Regrade",
    "RegradeReport",
    "Replay",
    "ScenarioError",
    "TranscriptError",
    "command",
    "load_scenarios",
    "parse_transcript",
    "regrade",
    "regrade_all",
    "regrade_files",
]

MAX_TRANSCRIPT_CHARS = 4_000_000  # a 50-step transcript of a real run is well under 1 MB
MAX_NESTING = 32
MAX_LINE_CHARS = 16 * 1024**2
EXTRA_ENTRIES = 4  # trigger, prompt, invalid, end besides the steps
SHOWN_CHARS = 120
SHOWN_DIFFERENCES = 8
ENTRY_ORDER = re.compile(r"tp?s*i?e")
DEFAULT_MAX_TOKENS = 512  # the harness's default; a check passes the cell's decoding

RESULT_FIELDS = (
    "id",
    "category",
    "level",
    "passed",
    "status",
    "failure_type",
    "engine_fault",
    "error",
    "failure_step",
    "failure_evidence",
    "partial_score",
    "failed_checks",
    "checks_total",
    "steps",
    "invalid_steps",
)
OPTIONAL_RESULT_FIELDS = ("protocol_stats",)  # recomputed from the replies, where the harness records it
STEP_FIELDS = ("step", "agent", "tool", "args", "thought", "status", "result", "replies")
END_FIELDS = ("status", "stop", "detail")


# ---------------------------------------------------------------------------- the result


class Difference(BaseModel):
    """One way the re-grade disagrees with the record."""

    what: str  # e.g. "passed", "step 3 result", "end stop", "transcript"
    recorded: Any = None
    regraded: Any = None

    def line(self) -> str:
        return f"{self.what}: recorded {_shown(self.recorded)}, regraded {_shown(self.regraded)}"


class ReplayedStep(BaseModel):
    step: int
    tool: str
    status: str
    result: dict[str, Any]


class Regrade(BaseModel):
    """The re-graded outcome of one scenario and every difference from the record."""

    id: str
    replayed: bool  # False when the transcript was unusable and nothing was executed
    passed: bool
    status: str
    stop: str | None = None
    failure_type: str | None = None
    failure_step: int | None = None
    partial_score: float | None = None
    engine_fault: bool = False
    failed_checks: list[FailedCheck] = []
    steps: list[ReplayedStep] = []
    differences: list[Difference] = []

    @property
    def agrees(self) -> bool:
        return not self.differences

    def line(self) -> str:
        """One line: the scenario id and its differences (the first few)."""
        shown = [d.line() for d in self.differences[:SHOWN_DIFFERENCES]]
        if len(self.differences) > SHOWN_DIFFERENCES:
            shown.append(f"{len(self.differences) - SHOWN_DIFFERENCES} more")
        return f"{_printable(self.id)}: " + "; ".join(shown)


class RegradeReport(BaseModel):
    """The re-grades of one cell's results, and the problems that kept a result from one."""

    regrades: list[Regrade] = []
    problems: list[str] = []  # one line each: a malformed line, a missing transcript, a duplicate

    @property
    def agrees(self) -> bool:
        return not self.problems and all(r.agrees for r in self.regrades)

    def lines(self) -> list[str]:
        return self.problems + [r.line() for r in self.regrades if not r.agrees]


def _printable(text: str) -> str:
    """An id read from a file, safe on one line (control characters escaped, length bounded)."""
    return json.dumps(text, ensure_ascii=False)[1:-1][:SHOWN_CHARS]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


# ---------------------------------------------------------------------------- the transcript


class RecordedRun(BaseModel):
    """A transcript, split by entry kind."""

    trigger: TriggerEntry
    prompt: PromptEntry | None = None
    steps: list[StepEntry] = []
    invalid: InvalidEntry | None = None
    end: EndEntry

    @classmethod
    def of(cls, entries: list[TranscriptEntry]) -> RecordedRun:
        """The entries by kind (validated and in order, as ``parse_transcript`` checks)."""
        steps = [e for e in entries if isinstance(e, StepEntry)]
        return cls(steps=steps, **{e.kind: e for e in entries if not isinstance(e, StepEntry)})


class TranscriptError(ValueError):
    """A transcript that cannot be replayed; the message is one line."""


def parse_transcript(transcript: Any, max_steps: int) -> RecordedRun:
    """The transcript (entries, or the JSON data of entries) as a ``RecordedRun``, or
    ``TranscriptError`` saying what is wrong with it. Entries are validated again from their data."""
    if not isinstance(transcript, list):
        raise TranscriptError("the transcript is not a list of entries")
    if len(transcript) > max_steps + EXTRA_ENTRIES:
        raise TranscriptError(f"{len(transcript)} entries, more than {max_steps} steps allow")
    data = [entry.model_dump(mode="json") if isinstance(entry, BaseModel) else entry for entry in transcript]
    _check_size(data)
    entries = [_entry(i, raw) for i, raw in enumerate(data)]
    _check_order([e.kind for e in entries])
    return RecordedRun.of(entries)


def _check_size(transcript: list[Any]) -> None:
    if _nesting(transcript) > MAX_NESTING:
        raise TranscriptError(f"nested deeper than {MAX_NESTING} levels")
    try:
        size = len(json.dumps(transcript, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"not JSON data: {exc}") from None
    if size > MAX_TRANSCRIPT_CHARS:
        raise TranscriptError(f"{size} characters, more than the limit of {MAX_TRANSCRIPT_CHARS}")


def _nesting(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (iteratively: no recursion limit to hit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            return depth
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _entry(index: int, raw: Any) -> TranscriptEntry:
    try:
        entry: TranscriptEntry = ENTRY.validate_python(raw)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        raise TranscriptError(f"entry {index} {where}: {error['msg']}") from None
    if isinstance(entry, ExternalStepEntry):
        raise TranscriptError(f"entry {index}: a step of an external suite's run, which the harness does not replay")
    return entry


def _check_order(kinds: list[str]) -> None:
    """trigger, an optional prompt, the steps, an optional invalid entry, end: nothing else."""
    letters = "".join(kind[0] for kind in kinds)  # trigger, prompt, step, invalid, end
    if not ENTRY_ORDER.fullmatch(letters):
        shown = ", ".join(kinds[:6]) + (", ..." if len(kinds) > 6 else "")
        raise TranscriptError(f"entries out of order ({shown}): expected trigger, prompt, steps, invalid, end")


# ---------------------------------------------------------------------------- the replay policy


class TranscriptOverrun(EngineError):
    """The loop asked for a step the transcript does not have."""


class TranscriptPolicy:
    """Plays a recorded transcript as the model: its steps in order, then its ending.

    With the cell's ``protocol``, each recorded raw reply is read again by that protocol's own
    policy (``harness.protocols``), served by ``ReplayClient`` as the engine's answer: the step
    the loop executes, the thought, each reply's validity, problem, reject code and tool, the
    repairs and ignored calls, and the first prompt are all derived from the raw replies and the
    scenario, never taken from the record. Without one (a transcript of a scripted policy), the
    recorded steps are played as they are."""

    def __init__(
        self,
        recorded: RecordedRun,
        protocol: str | None = None,
        *,
        parse: bool = False,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.recorded = recorded
        self.protocol = protocol  # as recorded, so the protocol figures are recomputed too
        self.taken = 0
        self.overrun = False
        self.timed_out = False
        self.client = ReplayClient(protocol or "")
        self.chat = make_policy(protocol, self.client, max_tokens=max_tokens) if parse and protocol else None

    def next_step(self, turn: Turn) -> PolicyReply:
        if self.taken < len(self.recorded.steps):
            entry = self.recorded.steps[self.taken]
            self.taken += 1
            if self.chat is not None:
                return self._parsed(entry.replies, turn)
            prompt = self._recorded_prompt(turn)
            return PolicyReply(
                step=Step(entry.tool, copy.deepcopy(entry.args), entry.thought),
                calls=_calls(entry.replies),
                prompt=prompt,
            )
        return self._ending(turn)

    def _recorded_prompt(self, turn: Turn) -> list[dict[str, Any]] | None:
        return copy.deepcopy(self.recorded.prompt.messages) if self.recorded.prompt and turn.step_number == 1 else None

    def _parsed(self, replies: list[RecordedReply] | None, turn: Turn) -> PolicyReply:
        """The protocol's own reading of the recorded replies of one turn."""
        assert self.chat is not None
        self.client.serve(replies or [], turn.step_number)
        return self.chat.next_step(turn)

    def _ending(self, turn: Turn) -> PolicyReply:
        end = self.recorded.end
        if end.stop in (INVALID_REPLY, "timeout"):  # a timeout: the loop stops as for an invalid reply, scored after
            self.timed_out = end.stop == "timeout"
            invalid = self.recorded.invalid.replies if self.recorded.invalid else None
            if self.chat is None:
                return PolicyReply(invalid=end.detail, calls=_calls(invalid), prompt=self._recorded_prompt(turn))
            reply = self._parsed(invalid, turn)
            if self.timed_out:  # a late reply ends the run whatever it says
                return PolicyReply(invalid=end.detail, calls=reply.calls, prompt=reply.prompt)
            return reply
        if end.stop in ENGINE_STOPS:
            raise engine_failure(end.stop, end.detail or "")
        self.overrun = True
        raise TranscriptOverrun(f"the run needs step {turn.step_number}; the transcript has {len(self.recorded.steps)}")


class ReplayClient:
    """A chat client whose answers are one turn's recorded replies, in order; asking for more
    than the turn recorded is a ``TranscriptOverrun``."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.pending: list[RecordedReply] = []
        self.step = 0
        self.short: str | None = None  # why the replay ran out of replies, when it did

    def serve(self, replies: list[RecordedReply], step: int) -> None:
        self.pending, self.step = list(replies), step

    def chat(self, messages: list[dict[str, Any]], **request: Any) -> ChatReply:
        if not self.pending:
            self.short = (
                f"step {self.step}: the {self.protocol} protocol asks for another reply, the transcript has none"
            )
            raise TranscriptOverrun(self.short)
        return recorded_answer(self.pending.pop(0), self.protocol)


def recorded_answer(reply: RecordedReply, protocol: str) -> ChatReply:
    """A recorded reply as the engine's answer: its text and (native_tools) calls, cut at the
    token limit when it was recorded as truncated."""
    content, calls = native_parts(reply.content) if protocol == "native_tools" else (reply.content, [])
    finish = "length" if reply.truncated else ("tool_calls" if calls else "stop")
    return ChatReply(content=content, finish_reason=finish, tool_calls=calls)


def native_parts(raw: str) -> tuple[str, list[ToolCall]]:
    """native_tools records a reply with calls as ``{"content", "tool_calls": [{name, arguments}]}``
    (harness.protocols.native_tools.recorded_reply) and one without as its text."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw, []
    if not (isinstance(value, dict) and set(value) == {"content", "tool_calls"} and isinstance(value["content"], str)):
        return raw, []
    calls = value["tool_calls"]
    if not (
        isinstance(calls, list)
        and calls
        and all(isinstance(c, dict) and set(c) == {"name", "arguments"} for c in calls)
    ):
        return raw, []
    if not all(isinstance(c["name"], str) and isinstance(c["arguments"], str) for c in calls):
        return raw, []
    return value["content"], [ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls]


# ModelCall fields a transcript may carry (never the measured ones: those are not in transcripts).
MODEL_CALL_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelCall)) - {
    "raw",
    "seconds",
    "tokens_in",
    "tokens_out",
    "timings",
}


def _calls(replies: list[RecordedReply] | None) -> list[ModelCall]:
    """The recorded replies as the policy returned them. A recorded key that is not a
    ``ModelCall`` field is dropped here, so the rebuilt transcript lacks it: a difference."""
    calls = []
    for reply in replies or []:
        recorded = reply.model_dump(exclude={"content"})
        known = {key: copy.deepcopy(value) for key, value in recorded.items() if key in MODEL_CALL_FIELDS}
        calls.append(ModelCall(raw=reply.content, **known))
    return calls


# ---------------------------------------------------------------------------- re-grading


class Replay(BaseModel):
    """How to replay a cell's transcripts: under its protocol (each raw reply parsed again by it,
    with the cell's max_tokens), or, without one, playing the recorded steps as they are."""

    protocol: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS


def regrade(
    scenario: Scenario, result: ScenarioResult, transcript: Any = None, replay: Replay | None = None
) -> Regrade:
    """Re-grade ``result`` of ``scenario`` from ``transcript`` (default: the result's own; entries,
    or untrusted data that should hold them); with ``replay.protocol``, every raw reply is parsed
    again by that protocol."""
    transcript = result.transcript if transcript is None else transcript
    replay = replay or Replay()
    if replay.protocol is not None and replay.protocol not in PROTOCOLS:
        return _unusable(result, f"unknown protocol {_printable(replay.protocol)}")
    try:
        recorded = parse_transcript(transcript, scenario.max_steps)
    except TranscriptError as exc:
        return _unusable(result, str(exc))
    policy = _policy(recorded, result, replay)
    try:
        regraded = run_scenario(scenario, policy)
    except Exception as exc:  # hostile input must never crash a check; the replay says why it stopped
        return _unusable(result, f"replay stopped: {type(exc).__name__}: {str(exc)[:200]}")
    if policy.timed_out and _replayed_run(regraded).end.stop == INVALID_REPLY:
        regraded = _rescored_as_timeout(scenario, recorded, regraded, replay)
    differences = compare(result, recorded, regraded)
    if policy.client.short:
        differences.insert(
            0,
            Difference(what="replies", recorded="fewer replies than the protocol reads", regraded=policy.client.short),
        )
    if policy.overrun:
        differences.insert(
            0,
            Difference(
                what="transcript", recorded=f"ends after {len(recorded.steps)} steps", regraded="the run goes on"
            ),
        )
    return _regrade(regraded, differences)


def _policy(recorded: RecordedRun, result: ScenarioResult, replay: Replay) -> TranscriptPolicy:
    """The replay policy: the cell's protocol when given, else the one the result records."""
    if replay.protocol is not None:
        return TranscriptPolicy(recorded, replay.protocol, parse=True, max_tokens=replay.max_tokens)
    stats = getattr(result, "protocol_stats", None)
    return TranscriptPolicy(recorded, getattr(stats, "protocol", None))


def _rescored_as_timeout(
    scenario: Scenario, recorded: RecordedRun, result: ScenarioResult, replay: Replay
) -> ScenarioResult:
    """A replay cannot run out of wall-clock time: the loop stopped at the recorded late reply as
    for an invalid one. Run it again, mark the run timed out, and score it the way the harness
    scores a timeout (checks that read the run record see ``timeout``)."""
    ws = Workspace.from_spec(scenario.workspace)
    before = ws.snapshot()
    run = run_agent(scenario, ws, _policy(recorded, result, replay))
    run.stop = "timeout"
    outcomes = evaluate_all(scenario.expect, CheckContext(ws, before, run))
    failed = [
        FailedCheck(index=o.index, type=o.type, expected=o.expected, found=o.found) for o in outcomes if not o.passed
    ]
    transcript = build_transcript(run)
    return result.model_copy(
        update={**verdict(scenario, transcript, failed), "failed_checks": failed, "transcript": transcript}
    )


def _unusable(result: ScenarioResult, reason: str) -> Regrade:
    return Regrade(
        id=result.id,
        replayed=False,
        passed=False,
        status="failed",
        differences=[Difference(what="transcript", recorded=reason, regraded="not replayed")],
    )


def _replayed_run(result: ScenarioResult) -> RecordedRun:
    """The replay's own transcript by kind (``run_scenario`` always records one)."""
    return RecordedRun.of(result.transcript or [])


def _regrade(result: ScenarioResult, differences: list[Difference]) -> Regrade:
    run = _replayed_run(result)
    return Regrade(
        id=result.id,
        replayed=True,
        passed=result.passed,
        status=result.status,
        stop=run.end.stop,
        failure_type=result.failure_type,
        failure_step=result.failure_step,
        partial_score=result.partial_score,
        engine_fault=result.engine_fault,
        failed_checks=result.failed_checks,
        steps=[ReplayedStep(step=e.step, tool=e.tool, status=e.status, result=e.result) for e in run.steps],
        differences=differences,
    )


# ---------------------------------------------------------------------------- comparing


def compare(recorded: ScenarioResult, transcript: RecordedRun, regraded: ScenarioResult) -> list[Difference]:
    """Every difference between the recorded result and transcript and the re-graded ones."""
    old, new = _plain(recorded.model_dump(mode="json")), _plain(regraded.model_dump(mode="json"))
    names = [name for name in RESULT_FIELDS + OPTIONAL_RESULT_FIELDS if name in old or name in new]
    differences = [
        Difference(what=name, recorded=old.get(name), regraded=new.get(name))
        for name in names
        if old.get(name) != new.get(name)
    ]
    return differences + compare_transcripts(transcript, _replayed_run(regraded))


def compare_transcripts(recorded: RecordedRun, regraded: RecordedRun) -> list[Difference]:
    differences = []
    for kind in ("trigger", "prompt", "invalid"):
        old, new = _data(getattr(recorded, kind)), _data(getattr(regraded, kind))
        if old != new:
            differences.append(Difference(what=kind, recorded=old, regraded=new))
    differences += _step_differences(recorded.steps, regraded.steps)
    return differences + _field_differences("end", _data(recorded.end), _data(regraded.end), END_FIELDS)


def _step_differences(recorded: list[StepEntry], regraded: list[StepEntry]) -> list[Difference]:
    differences = []
    for number in range(1, max(len(recorded), len(regraded)) + 1):
        old = _data(recorded[number - 1]) if number <= len(recorded) else None
        new = _data(regraded[number - 1]) if number <= len(regraded) else None
        if old is None or new is None:
            differences.append(Difference(what=f"step {number}", recorded=_call(old), regraded=_call(new)))
        else:
            differences += _field_differences(f"step {number}", old, new, STEP_FIELDS)
    return differences


def _field_differences(what: str, old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...]) -> list[Difference]:
    return [
        Difference(what=f"{what} {key}", recorded=old.get(key), regraded=new.get(key))
        for key in keys
        if old.get(key) != new.get(key)
    ]


def _data(entry: BaseModel | None) -> Any:
    """An entry as its transcript line holds it (a key left out reads as None)."""
    return None if entry is None else entry.model_dump(mode="json")


def _call(entry: dict[str, Any] | None) -> Any:
    return None if entry is None else {"tool": entry.get("tool"), "args": entry.get("args")}


def _plain(value: Any) -> Any:
    """``value`` as JSON would carry it (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


# ---------------------------------------------------------------------------- a cell's results


def regrade_all(
    scenarios: Iterable[Scenario],
    results: Iterable[ScenarioResult],
    transcripts: Iterable[TranscriptLine] = (),
    replay: Replay | None = None,
) -> RegradeReport:
    """Re-grade every result against the scenario of the same id and its transcript (from
    ``transcripts``, else the result's own); ``replay`` names the cell's protocol, if known."""
    by_id = {s.id: s for s in scenarios}
    report = RegradeReport()
    found = _unique_by_id(transcripts, "transcript", report.problems)
    seen: set[str] = set()
    for result in results:
        if result.id in seen:
            report.problems.append(f"{_printable(result.id)}: more than one result")
            continue
        seen.add(result.id)
        transcript = found.pop(result.id, result.transcript)
        if result.id not in by_id:
            report.problems.append(f"{_printable(result.id)}: no such scenario in the suite")
        elif transcript is None:
            report.problems.append(f"{_printable(result.id)}: no transcript")
        else:
            report.regrades.append(regrade(by_id[result.id], result, transcript, replay))
    report.problems += [f"{_printable(name)}: a transcript without a result" for name in found]
    return report


def _unique_by_id(lines: Iterable[TranscriptLine], what: str, problems: list[str]) -> dict[str, list[TranscriptEntry]]:
    found: dict[str, list[TranscriptEntry]] = {}
    for line in lines:
        if line.id in found:
            problems.append(f"{_printable(line.id)}: more than one {what}")
        found[line.id] = line.transcript
    return found


def read_records(path: Path, model: type[BaseModel], problems: list[str]) -> list[Any]:
    """The valid records of a JSON-lines file; each bad line is one problem, never an exception.
    ``InputError`` (a missing, unreadable, non-regular or oversized file) is left to the caller:
    that is bad input."""
    records = []
    with open_text(path, MAX_RECORDS_BYTES) as handle:  # a regular file within its bound (harness/io/inputs.py)
        number = 0
        while line := handle.readline(MAX_LINE_CHARS + 1):
            number += 1
            if len(line) > MAX_LINE_CHARS:
                problems.append(f"{path.name} line {number}: longer than {MAX_LINE_CHARS} characters")
                _skip_rest_of_line(handle, line)
                continue
            if line.strip():
                record = _record(line, model)
                if isinstance(record, BaseModel):
                    records.append(record)
                else:
                    problems.append(f"{path.name} line {number}: {record}")
    return records


def _skip_rest_of_line(handle: Any, line: str) -> None:
    while not line.endswith("\n") and line:
        line = handle.readline(MAX_LINE_CHARS)


def _record(line: str, model: type[BaseModel]) -> BaseModel | str:
    try:
        return model.model_validate_json(line)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "(line)"
        return f"not a {model.__name__}: {where}: {error['msg']}"[:300]


def regrade_files(
    scenarios: list[Scenario], results_path: Path, transcripts_path: Path | None, replay: Replay | None = None
) -> RegradeReport:
    """``regrade_all`` over a cell's ``scenarios.jsonl`` and ``transcripts.jsonl``."""
    problems: list[str] = []
    results = read_records(results_path, ScenarioResult, problems)
    transcripts = read_records(transcripts_path, TranscriptLine, problems) if transcripts_path else []
    report = regrade_all(scenarios, results, transcripts, replay)
    report.problems[:0] = problems
    return report


def command(
    scenarios_path: Path, results_path: Path, transcripts_path: Path | None, replay: Replay | None = None
) -> int:
    """``python -m harness regrade``: one line per differing scenario; 1 on any difference.
    ``replay.protocol`` parses every raw reply again under that protocol, as ``repro check`` does.
    Unreadable files and bad scenario files raise (``OSError``, ``ScenarioError``): bad input."""
    report = regrade_files(load_scenarios(scenarios_path), results_path, transcripts_path, replay)
    for line in report.lines():
        print(line)
    differing = sum(not r.agrees for r in report.regrades)
    print(
        f"regrade: {len(report.regrades)} scenarios re-graded, {differing} differ, "
        f"{len(report.problems)} other problems"
    )
    return 0 if report.agrees else 1
