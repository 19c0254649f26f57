"""The diagnosis: one transcript per failure type classified right, the precedence on transcripts
with several faults, partial credit at each level, the engine's answers classified by the client,
re-grading that recomputes all of it, and the no-docker rule for the harness package."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import harness
from harness.agent.policy import ModelCall, Policy, PolicyReply, ScriptedPolicy, Step, Turn
from harness.clients.errors import (
    ContextOverflow,
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    ModelNotLoaded,
    engine_failure,
)
from harness.clients.ollama import OllamaClient
from harness.clients.openai_compat import ChatReply, OpenAIClient, ToolCall
from harness.contracts import (
    FAILURE_LAYER,
    FAILURE_LAYERS,
    FAILURE_TYPES,
    EndEntry,
    FailedCheck,
    InvalidEntry,
    ScenarioResult,
    TranscriptEntry,
    TriggerEntry,
)
from harness.model.scenario import Scenario
from harness.protocols import make_policy
from harness.protocols.base import REJECT_CODES
from harness.regrade import regrade
from harness.runner import replay_scenario, run_scenario
from harness.scoring.diagnosis import RULES, _figure_key, diagnose, partial_credit
from tests.fixtures.transcripts import end_of, entries_of

READ = ("table_read", {"table": "beds", "query": None, "limit": None})
NOTE_READ = ("note_read", {"title": "Log"})
WRITE = ("note_write", {"title": "Log", "text": "B1 and B3 are dry.", "mode": "append"})
FINISH = ("finish", {"summary": "B1 and B3 are dry."})
REFERENCE = [READ, WRITE, FINISH]
EXPECT = [
    {"type": "finished"},
    {"type": "note", "title": "Log", "contains": ["B3"]},
    {"type": "answer_contains_all", "values": ["B1", "B3"]},
]


def _ref(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"tool": tool, "args": args} for tool, args in calls]


@pytest.fixture
def garden(make_scenario) -> Callable[..., Scenario]:
    """The garden scenario: read the beds, log the dry ones, answer with them."""
    return lambda **overrides: make_scenario(**{"reference": _ref(REFERENCE), "expect": EXPECT, **overrides})


# ---------------------------------------------------------------------------- policies


class Chat:
    """A chat client that answers with the given replies in order (the last one again and again)."""

    def __init__(self, *replies: ChatReply) -> None:
        self.replies = list(replies)

    def chat(self, messages: list[dict[str, Any]], **options: Any) -> ChatReply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def text(content: str, finish_reason: str = "stop") -> ChatReply:
    return ChatReply(content=content, finish_reason=finish_reason)


def native(name: str, arguments: str, content: str = "") -> ChatReply:
    return ChatReply(content=content, finish_reason="tool_calls", tool_calls=[ToolCall(name=name, arguments=arguments)])


class Calls:
    """Plays ``calls``, then ends as ``ending`` says: an engine failure by name, ``invalid`` (the
    given rejected replies), or ``finish``."""

    protocol = "scripted"

    def __init__(
        self, calls: list[tuple[str, dict[str, Any]]], ending: str = "finish", replies: list[ModelCall] | None = None
    ) -> None:
        self.calls, self.ending, self.replies = list(calls), ending, replies or []

    def next_step(self, turn: Turn) -> PolicyReply:
        if self.calls:
            tool, args = self.calls.pop(0)
            return PolicyReply(step=Step(tool, args))
        if self.ending == "invalid":
            return PolicyReply(invalid=self.replies[-1].problem, calls=self.replies)
        raise engine_failure(self.ending, f"{self.ending}: what the engine said")


class Slow(Calls):
    def next_step(self, turn: Turn) -> PolicyReply:
        if turn.step_number == 2:
            time.sleep(0.3)
        return super().next_step(turn)


def rejected(code: str, content: str = "{", tool: str | None = None) -> ModelCall:
    return ModelCall(raw=content, problem=f"a {code} reply", reject=code, tool=tool)


# ---------------------------------------------------------------------------- one transcript per type


@dataclass
class Case:
    """A run that must fail with its type, at its step, with evidence holding ``evidence``, and
    score ``partial``."""

    policy: Callable[[], Policy]
    step: int | None
    evidence: str
    partial: float | None
    overrides: dict[str, Any] | None = None
    protocol: str | None = None
    timeout: float | None = None


def _protocol(name: str, *replies: ChatReply) -> Callable[[], Policy]:
    return lambda: make_policy(name, Chat(*replies))


CASES: dict[str, Case] = {
    "engine_unreachable": Case(
        lambda: Calls([], "engine_unreachable"), 1, "engine_unreachable: what the engine said", None
    ),
    "model_not_loaded": Case(lambda: Calls([READ], "model_not_loaded"), 2, "model_not_loaded", None),
    "context_overflow": Case(lambda: Calls([READ, WRITE], "context_overflow"), 3, "context_overflow", None),
    "engine_error": Case(lambda: Calls([READ], "engine_error"), 2, "engine_error", None),
    # an agent runtime's failures (harness.runtimes): the runtime's layer, never an engine fault
    "runtime_unavailable": Case(lambda: Calls([], "runtime_unavailable"), 1, "runtime_unavailable", 0.0),
    "runtime_config": Case(lambda: Calls([READ], "runtime_config"), 2, "runtime_config", 0.75),
    "runtime_error": Case(lambda: Calls([READ], "runtime_error"), 2, "runtime_error", 0.75),
    "degenerate": Case(
        _protocol("react", text("Thought: I will check the beds.\n" * 40, "length")), 1, "cut at the token limit", 0.0
    ),
    "empty_reply": Case(_protocol("json_schema", text("")), 1, 'reply ""', 0.0),
    "invalid_syntax": Case(
        _protocol("json_prompt", text('{"thought": "read" "tool": "table_read", "args": {}}')), 1, "invalid JSON", 0.5
    ),
    "text_tool_call": Case(
        _protocol("native_tools", text('{"name": "table_read", "arguments": {"table": "beds"}}')),
        1,
        "written as text",
        0.5,
    ),
    "unknown_tool": Case(
        _protocol("react", text('Thought: tidy up\nAction: delete_everything\nAction Input: {"all": true}')),
        1,
        "unknown tool",
        0.25,
    ),
    "invalid_arguments": Case(
        _protocol("native_tools", native("table_read", '{"table": "beds"}')), 1, "$.args.query: is required", 0.5
    ),
    "forbidden_tool": Case(
        lambda: ScriptedPolicy(
            _ref([READ, WRITE, ("task_add", {"to": "Otto", "title": "Water", "details": "B1"}), FINISH])
        ),
        3,
        "task_add",
        0.75,
        {"expect": [*EXPECT, {"type": "not_called", "tool": "task_add"}]},
    ),
    "no_tool_attempt": Case(
        lambda: ScriptedPolicy(_ref([("finish", {"summary": "All beds are fine."})])),
        1,
        "the reference calls note_write, table_read",
        0.0,
    ),
    "wrong_tool": Case(
        lambda: ScriptedPolicy(_ref([("search", {"query": "dry"}), ("finish", {"summary": "Nothing dry."})])),
        1,
        "search",
        0.25,
    ),
    "stuck": Case(lambda: ScriptedPolicy(_ref([READ, READ, READ])), 3, "table_read", 0.75),
    "step_limit": Case(lambda: ScriptedPolicy(_ref([READ, NOTE_READ] * 3)), 6, "note_read", 0.75),
    "timeout": Case(lambda: Slow([READ, WRITE, FINISH]), 2, "wall-clock budget", 0.75, timeout=0.2),
    "missing_required_tool": Case(
        lambda: ScriptedPolicy(_ref([READ, ("finish", {"summary": "B1 and B3 are dry."})])),
        2,
        "check 3 (called)",
        0.75,
        {"expect": [*EXPECT, {"type": "called", "tool": "note_write"}]},
    ),
    "ignored_tool_result": Case(
        lambda: ScriptedPolicy(
            _ref(
                [
                    READ,
                    ("note_write", {"title": "Log", "text": "Checked.", "mode": "append"}),
                    ("finish", {"summary": "Checked."}),
                ]
            )
        ),
        1,
        "'B3' came back from table_read",
        0.75,
    ),
    "hallucinated_result": Case(
        lambda: ScriptedPolicy(_ref([READ, WRITE, ("finish", {"summary": "B3 is dry and needs 42 litres."})])),
        3,
        "'42' in the answer",
        0.75,
    ),
    "wrong_outcome": Case(
        lambda: ScriptedPolicy(_ref(REFERENCE)),
        3,
        "check 3 (rows)",
        0.75,
        {"expect": [*EXPECT, {"type": "rows", "table": "beds", "count": 9}]},
    ),
}


def run_case(garden: Callable[..., Scenario], name: str) -> tuple[Scenario, ScenarioResult]:
    case = CASES[name]
    scenario = garden(**(case.overrides or {}))
    return scenario, run_scenario(scenario, case.policy(), timeout=case.timeout)


def test_every_type_has_a_case_and_a_rule() -> None:
    assert set(CASES) == set(FAILURE_TYPES) == set(RULES) == set(FAILURE_LAYER)
    # a reject code is its protocol type
    assert set(REJECT_CODES) == {t for t in FAILURE_TYPES if FAILURE_LAYER[t] == "protocol"}


@pytest.mark.parametrize("name", list(CASES))
def test_each_transcript_is_classified_right(garden, name) -> None:
    case = CASES[name]
    scenario, result = run_case(garden, name)
    assert (result.failure_type, result.passed) == (name, False), (
        result.failure_type,
        result.failure_evidence,
        result.failed_checks,
    )
    assert result.failure_step == case.step and case.evidence in (result.failure_evidence or ""), (
        result.failure_evidence
    )
    assert len(result.failure_evidence or "") <= 300
    assert result.partial_score == case.partial
    assert result.engine_fault == (FAILURE_LAYER[name] in ("configuration", "engine"))
    diagnosis = diagnose(scenario, result.transcript, result.failed_checks)
    assert diagnosis is not None and (diagnosis.type, diagnosis.step, diagnosis.evidence) == (
        name,
        result.failure_step,
        result.failure_evidence,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_regrade_recomputes_each_diagnosis(garden, name) -> None:
    scenario, result = run_case(garden, name)
    regraded = regrade(scenario, result)
    assert regraded.agrees, regraded.line()
    assert (regraded.failure_type, regraded.failure_step, regraded.partial_score) == (
        name,
        result.failure_step,
        result.partial_score,
    )


def test_regrade_names_a_forged_diagnosis(garden) -> None:
    scenario, result = run_case(garden, "ignored_tool_result")
    forged = result.model_copy(
        update={"failure_type": "wrong_outcome", "failure_step": 3, "failure_evidence": "made up", "partial_score": 1.0}
    )
    assert {d.what for d in regrade(scenario, forged).differences} == {
        "failure_type",
        "failure_step",
        "failure_evidence",
        "partial_score",
    }


def test_a_passing_run_has_no_failure_and_full_credit(garden) -> None:
    result = replay_scenario(garden())
    assert (result.passed, result.failure_type, result.failure_step, result.failure_evidence, result.partial_score) == (
        True,
        None,
        None,
        None,
        1.0,
    )


def test_a_deny_rule_is_a_forbidden_tool(garden) -> None:
    scenario = garden(workspace={"rules": [{"tool": "task_add", "decision": "deny"}]})
    calls = [
        READ,
        ("task_add", {"to": "you", "title": "Water B3", "details": "dry"}),
        ("finish", {"summary": "B3 is dry."}),
    ]
    result = run_scenario(scenario, ScriptedPolicy(_ref(calls)))
    assert (result.failure_type, result.failure_step) == (
        "forbidden_tool",
        2,
    ) and "a rule denies task_add" in result.failure_evidence


def test_an_unchanged_check_is_a_forbidden_tool(garden) -> None:
    scenario = garden(expect=[*EXPECT, {"type": "unchanged", "table": "beds"}])
    calls = [READ, WRITE, ("table_update", {"table": "beds", "row": 1, "values": {"state": "wet"}}), FINISH]
    result = run_scenario(scenario, ScriptedPolicy(_ref(calls)))
    assert (result.failure_type, result.failure_step) == (
        "forbidden_tool",
        3,
    ) and "table_update" in result.failure_evidence


def test_an_invented_value_the_checks_list_is_a_hallucination(garden) -> None:
    scenario = garden(expect=[{"type": "answer_contains_all", "values": ["B3"], "absent": ["B7"]}])
    result = run_scenario(scenario, ScriptedPolicy(_ref([READ, ("finish", {"summary": "B3 and B7 are dry."})])))
    assert (result.failure_type, result.failure_step) == (
        "hallucinated_result",
        2,
    ) and "'B7'" in result.failure_evidence


def test_figures_from_the_sources_are_not_hallucinations(garden) -> None:
    """A figure in the task or the workspace, written differently, is not invented."""
    scenario = garden(trigger={"kind": "message", "text": "Check the beds; the tank holds 1,200 litres."})
    calls = [READ, WRITE, ("finish", {"summary": "B3 is dry; the tank holds 1200 litres."})]
    # B1 missing, nothing invented
    assert run_scenario(scenario, ScriptedPolicy(_ref(calls))).failure_type == "wrong_outcome"
    assert (
        _figure_key("1,200") == _figure_key("1200")
        and _figure_key("14,50") == _figure_key("14.5")
        and _figure_key("09:00") == _figure_key("9:00")
    )


def test_a_run_that_stopped_early_but_holds_every_check_passes(garden) -> None:
    scenario = garden(expect=[{"type": "called", "tool": "table_read"}])
    result = run_scenario(scenario, Calls([READ], "invalid", [rejected("empty_reply", "")]))
    assert (result.passed, result.failure_type, result.partial_score) == (True, None, 1.0)
    timed_out = run_scenario(scenario, Slow([READ, FINISH]), timeout=0.2)
    assert (timed_out.passed, timed_out.failure_type) == (False, "timeout")  # a timeout always fails


# ---------------------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["unknown_tool", "empty_reply"], "empty_reply"),
        (["invalid_arguments", "degenerate"], "degenerate"),
        (["text_tool_call", "invalid_syntax"], "invalid_syntax"),
        (["invalid_arguments", "text_tool_call"], "text_tool_call"),
        (["invalid_arguments", "unknown_tool"], "unknown_tool"),
        (["invalid_arguments", None], "invalid_syntax"),  # a reply without a code reads as invalid_syntax
    ],
)
def test_the_final_turn_replies_by_precedence(garden, codes, expected) -> None:
    replies = [rejected(code, tool="table_read") if code else ModelCall(raw="?", problem="bad") for code in codes]
    result = run_scenario(garden(), Calls([READ], "invalid", replies))
    assert (result.failure_type, result.failure_step) == (expected, 2)


def test_a_truncated_reply_keeps_what_the_model_wrote(garden) -> None:
    """A reply cut at the token limit is flagged truncated beside the code of what it was: an
    unfinished JSON step is invalid_syntax, a loop of one line is degenerate."""
    unfinished = run_scenario(
        garden(),
        make_policy("json_schema", Chat(text('{"thought": "read", "tool": "table_read", "args": {"ta', "length"))),
    )
    (reply,) = [r for entry in entries_of(unfinished, InvalidEntry) for r in entry.replies][:1]
    assert (unfinished.failure_type, reply.reject, reply.truncated) == ("invalid_syntax", "invalid_syntax", True)
    assert unfinished.protocol_stats is not None and unfinished.protocol_stats.truncated == 2  # the reply and its retry


@pytest.mark.parametrize(
    ("text_", "expected"),
    [
        ("Action: table_read\n" * 30, True),  # one line until the limit
        ("ok " * 200, True),  # one short span
        ("intro text that is long enough to matter. " * 3 + "x", False),  # three copies, under half the reply
        ("Thought: a plan with several different steps, each new, none of them repeated at all.", False),
        ("", False),
    ],
)
def test_degenerate_output_rule(text_: str, expected: bool) -> None:
    from harness.protocols.base import degenerate_text

    assert degenerate_text(text_) is expected


def test_layers_decide_across_faults(garden) -> None:
    forbidding = garden(expect=[*EXPECT, {"type": "not_called", "tool": "task_add"}])
    forbidden = ("task_add", {"to": "Otto", "title": "Water", "details": "B3"})
    # an engine failure after a forbidden call: the engine's (never the model's)
    engine = run_scenario(forbidding, Calls([READ, forbidden], "context_overflow"))
    assert (engine.failure_type, engine.engine_fault, engine.partial_score) == ("context_overflow", True, None)
    # an invalid final turn after a forbidden call: protocol before behaviour
    protocol = run_scenario(forbidding, Calls([READ, forbidden], "invalid", [rejected("unknown_tool", tool="rm")]))
    assert (protocol.failure_type, protocol.failure_step) == ("unknown_tool", 3)
    # a forbidden call that is also the wrong tool, then stuck: forbidden first
    wrong = run_scenario(forbidding, ScriptedPolicy(_ref([forbidden] * 3)))
    assert (wrong.failure_type, wrong.failure_step, wrong.partial_score) == ("forbidden_tool", 1, 0.25)
    # the wrong tool until the step limit: wrong_tool before step_limit
    looping = run_scenario(garden(), ScriptedPolicy(_ref([("search", {"query": str(i)}) for i in range(6)])))
    assert (looping.failure_type, end_of(looping).stop) == ("wrong_tool", "step_limit")
    # stuck with a required call missing: stuck before missing_required_tool
    stuck = run_scenario(
        garden(expect=[*EXPECT, {"type": "called", "tool": "note_write"}]), ScriptedPolicy(_ref([READ] * 3))
    )
    assert stuck.failure_type == "stuck"
    # a value ignored and a figure invented: ignored_tool_result first
    both = run_scenario(garden(), ScriptedPolicy(_ref([READ, ("finish", {"summary": "It needs 42 litres."})])))
    assert (both.failure_type, both.failure_step) == ("ignored_tool_result", 1)


def test_precedence_is_fixed_and_layered() -> None:
    assert FAILURE_TYPES == (
        "engine_unreachable",
        "model_not_loaded",
        "context_overflow",
        "engine_error",
        "runtime_unavailable",
        "runtime_config",
        "runtime_error",
        "degenerate",
        "empty_reply",
        "invalid_syntax",
        "text_tool_call",
        "unknown_tool",
        "invalid_arguments",
        "forbidden_tool",
        "no_tool_attempt",
        "wrong_tool",
        "stuck",
        "step_limit",
        "timeout",
        "missing_required_tool",
        "ignored_tool_result",
        "hallucinated_result",
        "wrong_outcome",
    )
    layers = [FAILURE_LAYERS.index(FAILURE_LAYER[t]) for t in FAILURE_TYPES]
    assert layers == sorted(layers) and FAILURE_LAYERS == (
        "configuration",
        "engine",
        "runtime",
        "protocol",
        "behaviour",
        "outcome",
    )


def test_diagnose_needs_a_failure() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "x-001",
            "category": "x",
            "about": "",
            "template": "t",
            "agent": "A",
            "max_steps": 2,
            "workspace": {"agents": [{"name": "A", "role": "r", "tools": ["finish"]}]},
            "trigger": {"kind": "message", "text": "go"},
            "reference": [{"tool": "finish", "args": {"summary": "ok"}}],
            "expect": [{"type": "finished"}],
        }
    )
    ended: list[TranscriptEntry] = [
        TriggerEntry(agent="A", text="go"),
        EndEntry(status="failed", stop="step_limit", detail="x"),
    ]
    assert diagnose(scenario, ended, []) is None  # every check held
    failed = [FailedCheck(index=0, type="finished", expected={}, found={"status": "failed"})]
    assert diagnose(scenario, ended, failed).type == "step_limit"  # type: ignore[union-attr]
    assert diagnose(scenario, "garbage", failed).type == "wrong_outcome"  # type: ignore[arg-type, union-attr]
    assert partial_credit(scenario, ended, None) == 1.0


# ---------------------------------------------------------------------------- partial credit


@pytest.mark.parametrize(
    ("calls", "score"),
    [
        ([("finish", {"summary": "Fine."})], 0.0),  # no useful attempt
        # a call, not one the reference makes
        ([("search", {"query": "dry beds"}), ("finish", {"summary": "Fine."})], 0.25),
        # the reference's tool, wrong table
        ([("table_read", {"table": "pots", "query": None, "limit": None}), ("finish", {"summary": "Fine."})], 0.5),
        # a reference write, no read
        ([("note_write", {"title": "Log", "text": "x", "mode": "append"}), ("finish", {"summary": "x"})], 0.5),
        # the data, no answer
        ([("table_read", {"table": "BEDS", "query": "state:dry", "limit": 5}), ("finish", {"summary": "Fine."})], 0.75),
        (REFERENCE, 1.0),
    ],
)
def test_partial_credit_levels(garden, calls, score) -> None:
    assert run_scenario(garden(), ScriptedPolicy(_ref(calls))).partial_score == score


def test_partial_credit_counts_rejected_attempts(garden) -> None:
    relevant = run_scenario(garden(), Calls([], "invalid", [rejected("invalid_arguments", tool="table_read")]))
    other = run_scenario(garden(), Calls([], "invalid", [rejected("text_tool_call", tool=None)]))
    nothing = run_scenario(garden(), Calls([], "invalid", [rejected("empty_reply", "")]))
    assert (relevant.partial_score, other.partial_score, nothing.partial_score) == (0.5, 0.25, 0.0)


def test_engine_failures_get_no_partial_credit(garden) -> None:
    for name in ("engine_unreachable", "model_not_loaded", "context_overflow", "engine_error"):
        assert run_scenario(garden(), Calls(list(REFERENCE[:2]), name)).partial_score is None


# ---------------------------------------------------------------------------- the engine's answers


LLAMA_CONTEXT = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 4711,
        "n_ctx": 4096,
    }
}


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (400, LLAMA_CONTEXT, ContextOverflow),
        (503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}, ModelNotLoaded),
        (404, {"error": 'model "qwen3:4b" not found, try pulling it first'}, ModelNotLoaded),
        (400, {"error": {"message": "JSON schema conversion failed"}}, EngineError),
        (500, {"error": "llama runner process has terminated"}, EngineError),
    ],
)
def test_the_client_names_engine_failures(status, body, error) -> None:
    client = OpenAIClient(
        "http://engine.local", "m", transport=httpx.MockTransport(lambda request: httpx.Response(status, json=body))
    )
    with pytest.raises(EngineError) as raised:
        client.chat([{"role": "user", "content": "hi"}])
    names = {ContextOverflow: "context_overflow", ModelNotLoaded: "model_not_loaded", EngineError: "engine_error"}
    assert type(raised.value) is error and raised.value.failure == names[error]


@pytest.mark.parametrize(
    ("exception", "error"),
    [
        (httpx.ConnectError("refused"), EngineUnreachable),
        (httpx.ConnectTimeout("slow"), EngineUnreachable),
        (httpx.ReadTimeout("slow"), EngineTimeout),
    ],
)
def test_the_client_tells_unreachable_from_slow(exception, error) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exception

    with pytest.raises(EngineError) as raised:
        OpenAIClient("http://engine.local", "m", transport=httpx.MockTransport(handler)).chat(
            [{"role": "user", "content": "hi"}]
        )
    assert type(raised.value) is error


def test_ollama_errors_are_named_too() -> None:
    body = {"error": "model requires more system memory (12.0 GiB) than is available (4.0 GiB)"}
    client = OllamaClient(
        "http://ollama", "m", transport=httpx.MockTransport(lambda request: httpx.Response(500, json=body))
    )
    with pytest.raises(ModelNotLoaded):
        client.chat([{"role": "user", "content": "hi"}])


# ---------------------------------------------------------------------------- the docs and the package


def test_the_docs_state_every_type_and_stand_alone() -> None:
    docs = (Path(harness.__file__).parents[1] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    mapping = docs.split("## Mapping to other benchmarks", 1)[1].split("\n## ", 1)[0]
    for name in FAILURE_TYPES:
        assert mapping.count(f"| `{name}` |") == 1, name  # one row in the mapping table
        assert f"| `{name}` | {FAILURE_LAYER[name]} |" in docs, name  # one row, with its layer, in the precedence table
    assert "the mapping is ours" in docs.lower() and "http" not in docs


def test_harness_never_imports_docker() -> None:
    package = Path(harness.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            offenders += [f"{path.name}: {n}" for n in names if n == "docker" or n.startswith("docker.")]
    assert offenders == []
