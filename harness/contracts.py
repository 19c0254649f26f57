"""The contracts across the container boundary: what the harness writes and the host reads.

Every record that leaves the harness container (one scenario's result, a transcript line and its
entries, a progress event, a probe's gate attempt) is one of these pydantic models. The
orchestrator (`repro/`) imports them from here and never reads such a record as a plain dict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    model_serializer,
)

# The closed set of failure types, in precedence order, each listed once under its layer: a failed
# scenario gets the first type whose rule applies (harness.scoring.diagnosis decides;
# docs/diagnosis.md states every rule).
ConfigurationFailure = Literal["engine_unreachable", "model_not_loaded", "context_overflow"]  # never a model failure
EngineFailure = Literal["engine_error"]  # never a model failure
# an agent runtime (harness.runtimes) could not start, refused its configuration, or failed: never a model failure
RuntimeFailure = Literal["runtime_unavailable", "runtime_config", "runtime_error"]
ProtocolFailure = Literal[  # the run ended on a reply that was not a valid step
    "degenerate",
    "empty_reply",
    "invalid_syntax",
    "text_tool_call",
    "unknown_tool",
    "invalid_arguments",
]
BehaviourFailure = Literal[
    "forbidden_tool",
    "no_tool_attempt",
    "wrong_tool",
    "stuck",
    "step_limit",
    "timeout",
    "missing_required_tool",
    "ignored_tool_result",
    "hallucinated_result",
]
OutcomeFailure = Literal["wrong_outcome"]
FailureType = Literal[
    ConfigurationFailure, EngineFailure, RuntimeFailure, ProtocolFailure, BehaviourFailure, OutcomeFailure
]
FailureLayer = Literal["configuration", "engine", "runtime", "protocol", "behaviour", "outcome"]
FAILURE_TYPES: tuple[FailureType, ...] = get_args(FailureType)
FAILURE_LAYERS: tuple[FailureLayer, ...] = get_args(FailureLayer)
FAILURE_LAYER: dict[str, FailureLayer] = {
    failure: layer
    for layer, group in zip(
        FAILURE_LAYERS,
        (ConfigurationFailure, EngineFailure, RuntimeFailure, ProtocolFailure, BehaviourFailure, OutcomeFailure),
        strict=True,
    )
    for failure in get_args(group)
}
# Failures of the setup or the engine, never of the model: such a result has engine_fault true (the cell is
# rerun). A runtime failure is not the model's either, but it is what a runtime cell measures: the cell
# keeps it, under its own layer.
NOT_MODEL_LAYERS: frozenset[FailureLayer] = frozenset({"configuration", "engine"})
# a layer a table shows only where it occurs (older tables, made before runtimes, never had it)
OCCASIONAL_LAYERS: frozenset[FailureLayer] = frozenset({"runtime"})
ScenarioStatus = Literal["done", "waiting", "failed"]


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FailedCheck(Contract):
    index: int
    type: str
    expected: Any
    found: Any


class StepTiming(Contract):
    """One request to the engine: the server's own ``timings`` and the token counts."""

    step: int
    attempt: int
    seconds: float
    tokens_in: int
    tokens_out: int
    timings: dict[str, Any] | None = None


class ProtocolStats(Contract):
    """How the model handled its protocol in one scenario (every request counts, retries included)."""

    protocol: str
    model_turns: int  # requests to the engine
    valid_calls: int  # replies that were a valid step
    invalid_turns: int  # replies that were not
    repairs: int = 0  # json_prompt: repairs applied, over all replies
    ignored_calls: int = 0  # native_tools: calls after the first in a reply, not executed
    truncated: int = 0  # replies the engine cut at max_tokens (valid or not)
    valid_tool_call_rate: float | None = None  # valid_calls / model_turns; None without turns


# ---------------------------------------------------------------------------- the transcript


class Recorded(Contract):
    """A transcript record, strictly typed. An optional field left at its default is not written,
    as the runner's dict literals before these models left such keys out: a dump is byte for byte
    the transcript the harness has always recorded (published bundles re-grade from it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields = type(self).model_fields
        dumped: dict[str, Any] = handler(self)
        return {
            key: value for key, value in dumped.items() if not (key in fields and _left_out(key, value, fields[key]))
        }


def _left_out(name: str, value: Any, field: Any) -> bool:
    return name != "kind" and not field.is_required() and value == field.get_default(call_default_factory=True)


class RecordedReply(Recorded):
    """One model reply of a turn: its raw text and, when it was no valid step, why. Other keys are
    ``ModelCall`` fields a protocol may record; the re-grade finds any it does not rebuild."""

    model_config = ConfigDict(extra="allow", strict=True)

    content: str
    problem: str | None = None
    reject: str | None = None  # the problem's code (harness.protocols.base.REJECT_CODES)
    truncated: bool = False  # the engine cut the reply at max_tokens
    tool: str | None = None  # the tool a rejected reply named
    repairs: list[str] = []  # json_prompt: the repairs applied
    ignored_calls: list[dict[str, Any]] = []  # native_tools: calls after the first, not executed


class TriggerEntry(Recorded):
    """The task as the agent got it (an external suite's transcript names no agent)."""

    kind: Literal["trigger"] = "trigger"
    agent: str | None = None
    text: str


class PromptEntry(Recorded):
    """The messages of the first request, as a protocol sent them."""

    kind: Literal["prompt"] = "prompt"
    messages: list[dict[str, Any]]


class StepEntry(Recorded):
    """One executed step: the call, its outcome, and the replies of the turn that chose it."""

    kind: Literal["step"] = "step"
    step: int
    agent: str
    thought: str
    tool: str
    args: dict[str, Any]
    status: str
    result: dict[str, Any]
    replies: list[RecordedReply] = []


class ExternalStepEntry(Recorded):
    """One call of an external suite's run (``repro.suites.external`` normalises it): its turn, the
    arguments and the result text as that suite recorded them. Never re-graded by the harness."""

    kind: Literal["step"] = "step"
    step: int
    turn: int
    tool: str
    args: Any
    status: str
    result: str | None


class InvalidEntry(Recorded):
    """The replies of a final turn that gave no valid step."""

    kind: Literal["invalid"] = "invalid"
    replies: list[RecordedReply]


class EndEntry(Recorded):
    """How the run ended; ``stop`` names an abnormal end (the diagnosis reads it)."""

    kind: Literal["end"] = "end"
    status: str
    stop: str | None
    detail: str | None


def _entry_tag(value: Any) -> str | None:
    """The tag of an entry or of its data: its kind, but ``external_step`` for a step with a turn."""
    if isinstance(value, dict):
        kind, external = value.get("kind"), "turn" in value
    else:
        kind, external = getattr(value, "kind", None), isinstance(value, ExternalStepEntry)
    if not isinstance(kind, str):
        return None
    return "external_step" if external and kind == "step" else kind


TranscriptEntry = Annotated[
    Annotated[TriggerEntry, Tag("trigger")]
    | Annotated[PromptEntry, Tag("prompt")]
    | Annotated[StepEntry, Tag("step")]
    | Annotated[ExternalStepEntry, Tag("external_step")]
    | Annotated[InvalidEntry, Tag("invalid")]
    | Annotated[EndEntry, Tag("end")],
    Discriminator(_entry_tag),
]
ENTRY: TypeAdapter[TranscriptEntry] = TypeAdapter(TranscriptEntry)


def transcript_data(transcript: Sequence[TranscriptEntry]) -> list[dict[str, Any]]:
    """The entries as JSON data, exactly as a transcript line holds them (hashing, rendering)."""
    return [entry.model_dump(mode="json") for entry in transcript]


class ScenarioResult(Contract):
    """One line of ``scenarios.jsonl``."""

    id: str
    category: str
    level: int | None = None
    passed: bool
    status: ScenarioStatus
    failure_type: FailureType | None
    engine_fault: bool
    error: str | None = None
    failure_step: int | None = (
        None  # the step the failure happened at (the turn after the last step for a final invalid turn)
    )
    failure_evidence: str | None = None  # the reply, the call or the check, shortened to about 300 characters
    partial_score: float | None = None  # 0, 0.25, 0.5, 0.75 or 1.0; None for a configuration or engine failure
    failed_checks: list[FailedCheck]
    checks_total: int
    steps: int
    seconds: float
    tokens_in: int
    tokens_out: int
    engine_timings: list[StepTiming]
    invalid_steps: int
    protocol_stats: ProtocolStats | None = None
    transcript: list[TranscriptEntry] | None = None


class TranscriptLine(Contract):
    """One line of ``transcripts.jsonl``."""

    id: str
    transcript: list[TranscriptEntry]


class ProgressEvent(Contract):
    """One JSON line on the harness's stdout per finished scenario (``--progress json``)."""

    event: Literal["scenario"] = "scenario"
    index: int
    total: int
    id: str
    passed: bool
    failure_type: FailureType | None = None
    seconds: float

    @classmethod
    def parse(cls, line: str) -> ProgressEvent | None:
        """The event on one output line, or None for any other line (human text, warnings)."""
        text = line.strip()
        if not text.startswith("{") or len(text) > 4096:
            return None
        try:
            return cls.model_validate_json(text)
        except ValueError:
            return None


class GateAttempt(Contract):
    """One round trip of the latency gate, as the gate probe measured it."""

    seconds: float | None = None
    tokens_per_second: float | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    valid_step: bool = False
    problem: str | None = None
    tool: str | None = None
    finish_reason: str | None = None
    ok: bool | None = None  # None for the warm-up, which is not judged
    reason: str | None = None
    error: str | None = None
    engine_fault: bool = False
    timed_out: bool = False


class GateVerdict(Contract):
    """The gate rule's decision over the judged attempts (``harness.probe.judge``)."""

    passed: bool
    reason: str
    passed_attempts: int
    median_seconds: float | None = None
    median_tokens_per_second: float | None = None


# Exit statuses of ``python -m harness`` (``run`` and ``probe``), read by the host.
EXIT_OK = 0
EXIT_FAILED = 1  # run: a scenario failed
EXIT_BAD_INPUT = 2
EXIT_ENGINE_UNREACHABLE = 3


class ProbeResult(BaseModel):
    """What every probe action writes: the action, whether it did its job, and why not.

    Each action has its own model below; the host validates the file against the model of the
    action it asked for (``repro.containers.sandbox.run_probe``)."""

    model_config = ConfigDict(extra="forbid")

    action: str
    ok: bool
    error: str | None = None
    status: int | None = None  # the engine's HTTP status, where one answered


class ReadyResult(ProbeResult):
    """``ready``: polled the health path until 200 (or gave up)."""

    action: Literal["ready"] = "ready"
    ready: bool = False
    seconds: float = 0.0
    polls: int = 0


class PropsResult(ProbeResult):
    """``props``: llama.cpp's ``GET /props``, the engine's own JSON (recorded as the engine wrote it)."""

    action: Literal["props"] = "props"
    props: dict[str, Any] | None = None


class OllamaVersionResult(ProbeResult):
    """``ollama-version``: ``GET /api/version``."""

    action: Literal["ollama-version"] = "ollama-version"
    version: str | None = None


class OllamaLoadResult(ProbeResult):
    """``ollama-load``: the GGUF uploaded as a blob (unless present), the model created from it.
    ``create`` is what was sent, ``show`` a summary of what Ollama then reports (its own JSON)."""

    action: Literal["ollama-load"] = "ollama-load"
    stage: Literal["blob", "create"] | None = None
    blob: str | None = None
    uploaded: bool | None = None
    model: str | None = None
    create: dict[str, Any] | None = None
    show: dict[str, Any] | None = None
    seconds: float | None = None


class OllamaShowResult(ProbeResult):
    """``ollama-show``: a summary of ``POST /api/show`` (Ollama's own JSON)."""

    action: Literal["ollama-show"] = "ollama-show"
    show: dict[str, Any] | None = None


class GateThresholds(Contract):
    max_seconds_per_step: float
    min_tokens_per_second: float
    attempts: int
    required: int


class GateProbeResult(ProbeResult):
    """``gate``: a warm-up, the judged attempts and the probe's verdict (judged again on the host)."""

    action: Literal["gate"] = "gate"
    api: str | None = None
    model: str | None = None
    protocol: str | None = None
    thresholds: GateThresholds | None = None
    warmup: GateAttempt | None = None
    attempts: list[GateAttempt] = []
    total_seconds: float | None = None
    passed: bool | None = None
    reason: str | None = None
    passed_attempts: int | None = None
    median_seconds: float | None = None
    median_tokens_per_second: float | None = None


# The escapes a sandbox audit tries from inside a harness container (harness.probe.audit runs them).
AUDIT_ITEMS: tuple[str, ...] = (
    "dns",
    "tcp_outside",
    "tcp_gateway",
    "write_root",
    "write_outside_output",
    "docker_socket",
    "capabilities",
    "no_new_privileges",
    "seccomp",
    "pids_limit",
    "memory_limit",
)


class AuditItem(Contract):
    """One escape the audit tried: whether it was attempted, whether it was blocked, and how."""

    name: str
    attempted: bool
    blocked: bool
    detail: str


class SandboxAudit(Contract):
    """What a container with a cell's harness settings could do from inside (``probe audit``)."""

    items: list[AuditItem] = []
    uid: int | None = None
    seconds: float | None = None
    error: str | None = None

    def escapes(self) -> list[AuditItem]:
        """Items that were not both attempted and blocked, and required items that are missing."""
        seen = {item.name for item in self.items}
        missing = [
            AuditItem(name=name, attempted=False, blocked=False, detail="not in the audit")
            for name in AUDIT_ITEMS
            if name not in seen
        ]
        return [item for item in self.items if not (item.attempted and item.blocked)] + missing


class AuditResult(ProbeResult):
    """``audit``: what a container with these settings could do from inside."""

    action: Literal["audit"] = "audit"
    audit: SandboxAudit | None = None


# ---------------------------------------------------------------------------- a runtime's wire


class WireExchange(Contract):
    """One request an agent runtime sent through the relay, and the engine's answer, as the bytes
    went (harness.runtimes.relay): `filled` names what the relay set (the profile's sampling);
    `outside` marks a request for another host, refused."""

    method: str
    path: str
    request: str
    status: int
    reply: str
    seconds: float
    filled: dict[str, Any] = {}
    outside: bool = False


class DeskCallRecord(Contract):
    """One tool call a runtime ran in native mode (harness.runtimes.native): the engine's call id, the
    tool, the arguments as the runtime parsed them, the turn's chat reply that held it (its index
    among the turn's replies on the wire; None: a later call of a reply already given, not run) and
    the result the harness gave back."""

    id: str = ""
    name: str
    args: Any = None
    reply: int | None = None
    result: str | None = None


class RuntimeTurn(Contract):
    """One turn an agent runtime produced (harness.runtimes.client): its command line (the prompt
    as `<prompt>`), the prompt, the pinned clock, how the process ended (`exit`: its status, or
    "timeout"), its answer and the lines beside it, the files it left in its HOME, and every
    exchange with the engine; in native mode, each tool call the runtime ran (`calls`)."""

    scenario: str
    turn: int
    runtime: str
    argv: list[str] = []
    prompt: str = ""
    clock: str | None = None
    exit: int | str | None = None
    seconds: float = 0.0
    stderr: str = ""
    answer: str | None = None
    other: list[str] = []
    home: list[str] = []
    exchanges: list[WireExchange] = []
    calls: list[DeskCallRecord] = []
