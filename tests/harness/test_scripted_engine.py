"""The scripted engine: its endpoints, scenario identification, and every failure mode it emits
ending the run with the failure type the diagnosis names for it, under each protocol."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from harness.agent.policy import PolicyReply, Step
from harness.cli import main
from harness.clients.openai_compat import OpenAIClient
from harness.contracts import InvalidEntry, StepEntry
from harness.model.scenario import Scenario, load_scenarios
from harness.protocols import PROTOCOLS, make_policy
from harness.runner import run_scenario
from harness.testing import FAULTS, ScriptedEngine
from tests.fixtures.transcripts import end_of, entries_of

REPO = Path(__file__).resolve().parents[2]
CATEGORIES = ["approval", "ask", "conflict", "injection", "notes", "table_add", "table_update", "web_research"]
# Each protocol fault and the failure type it must give, under every protocol.
FAULT_TYPES = {
    "text_call": "text_tool_call",
    "unknown_tool": "unknown_tool",
    "bad_args": "invalid_arguments",
    "broken_json": "invalid_syntax",
    "empty": "empty_reply",
    "length": "truncated",  # a flag: the type is what the cut reply was (LENGTH_TYPES)
}
# A reply cut in the middle: the type says what the model wrote, and every such reply is flagged.
LENGTH_TYPES = {
    "json_schema": "invalid_syntax",
    "json_prompt": "invalid_syntax",
    "native_tools": "text_tool_call",
    "react": "invalid_syntax",
}
PROTOCOL_FAULTS = list(FAULT_TYPES)


def sample() -> list[Scenario]:
    """One scenario per category whose reference makes a call before finishing and whose checks
    need a finish (so a run cut short fails)."""
    picked = []
    for category in CATEGORIES:
        for scenario in load_scenarios(REPO / "scenarios" / category):
            tools = [r.tool for r in scenario.reference]
            if "finished" in {c.type for c in scenario.expect} and any(t not in ("finish", "ask") for t in tools):
                picked.append(scenario)
                break
    return picked


SAMPLE = sample()


@pytest.fixture(scope="module")
def engine():
    with ScriptedEngine(SAMPLE) as running:
        yield running


def run_all(engine: ScriptedEngine, protocol: str, model: str = "scripted", **options) -> list:
    with OpenAIClient(engine.base_url, model, timeout=30) as client:
        return [run_scenario(s, make_policy(protocol, client, **options)) for s in SAMPLE]


def test_endpoints_answer(engine):
    for path, key in (("/health", "status"), ("/props", "build_info"), ("/v1/models", "data")):
        response = httpx.get(engine.base_url + path, trust_env=False)
        assert response.status_code == 200 and key in response.json()
    assert httpx.get(engine.base_url + "/nowhere", trust_env=False).status_code == 404


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_the_sample_passes_without_faults(engine, protocol):
    results = run_all(engine, protocol)
    assert [r.id for r in results if not r.passed] == []
    assert all(r.protocol_stats.protocol == protocol and r.protocol_stats.valid_tool_call_rate == 1.0 for r in results)


@pytest.mark.parametrize("fault", PROTOCOL_FAULTS)
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_each_fault_is_its_protocol_failure(engine, protocol, fault):
    results = run_all(engine, protocol, model=f"scripted+fault={fault}")
    expected = LENGTH_TYPES[protocol] if fault == "length" else FAULT_TYPES[fault]
    assert {r.failure_type for r in results} == {expected}, [(r.id, r.failure_type, r.error) for r in results]
    for result in results:
        stats = result.protocol_stats
        # the reply and its one re-prompt
        assert stats.model_turns == 2 and stats.invalid_turns == 2 and stats.valid_calls == 0
        assert stats.valid_tool_call_rate == 0.0 and result.invalid_steps == 2
        (invalid,) = entries_of(result, InvalidEntry)
        assert result.transcript[-2] is invalid and all(r.problem and r.reject == expected for r in invalid.replies)
        assert (result.failure_step, result.engine_fault, end_of(result).stop) == (1, False, "invalid_reply")
        assert result.failure_evidence.startswith("reply ") and len(result.failure_evidence) <= 300


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_fault_partial_credit(engine, protocol):
    """No useful attempt (empty) 0; an unknown tool 0.25; a reference tool with bad arguments 0.5."""
    scores = {
        fault: {r.partial_score for r in run_all(engine, protocol, model=f"scripted+fault={fault}")}
        for fault in ("empty", "unknown_tool", "bad_args")
    }
    assert scores == {"empty": {0.0}, "unknown_tool": {0.25}, "bad_args": {0.5}}


def test_a_cut_reply_is_named_as_such(engine):
    result = run_all(engine, "json_schema", model="scripted+fault=length")[0]
    assert "cut at the token limit" in result.error


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_the_endless_call_gets_stuck(engine, protocol):
    results = run_all(engine, protocol, model="scripted+fault=endless")
    assert {r.failure_type for r in results} <= {"stuck", "step_limit"} and results
    assert any(r.failure_type == "stuck" for r in results)
    for result in results:
        assert result.failure_step == result.steps and result.partial_score in (0.5, 0.75)


def test_repairs_are_counted_under_json_prompt_and_refused_under_json_schema(engine):
    repaired = run_all(engine, "json_prompt", model="scripted+fault=repairable")
    assert all(r.passed for r in repaired)
    for result in repaired:
        assert result.protocol_stats.repairs == 3 * result.protocol_stats.model_turns
        replies = [reply for entry in entries_of(result, StepEntry) for reply in entry.replies]
        assert all(reply.repairs == ["code_fence", "surrounding_text", "trailing_commas"] for reply in replies)
    strict = run_all(engine, "json_schema", model="scripted+fault=repairable")
    assert {r.failure_type for r in strict} == {"invalid_syntax"}


def test_the_server_fault_applies_unless_the_model_names_one():
    with ScriptedEngine(SAMPLE[:1], fault="empty") as faulty:
        assert run_all_one(faulty, "json_schema", "scripted").failure_type == "empty_reply"
        assert run_all_one(faulty, "json_schema", "scripted+fault=unknown_tool").error.startswith("$.tool")


def run_all_one(engine: ScriptedEngine, protocol: str, model: str):
    with OpenAIClient(engine.base_url, model, timeout=30) as client:
        return run_scenario(SAMPLE[0], make_policy(protocol, client))


def test_an_unknown_scenario_or_fault_is_an_engine_error(engine, make_scenario):
    with OpenAIClient(engine.base_url, "scripted", timeout=30) as client:
        result = run_scenario(make_scenario(), make_policy("json_schema", client))
    assert result.failure_type == "engine_error" and "no scenario has the trigger" in result.error
    assert (result.engine_fault, result.partial_score, result.failure_step) == (True, None, 1)
    assert run_all_one(engine, "react", "scripted+fault=nonsense").failure_type == "engine_error"


def test_same_trigger_scenarios_are_told_apart_by_their_results(tmp_path, scenario_dict):
    approve = scenario_dict(
        id="garden-002",
        workspace={"rules": [{"agent": "*", "tool": "note_write", "match": "*", "decision": "ask"}]},
        respond={"approve": True},
        reference=[
            {"tool": "note_write", "args": {"title": "Log", "text": "x", "mode": "append"}},
            {"tool": "finish", "args": {"summary": "Wrote it."}},
        ],
        expect=[{"type": "finish_contains", "all": ["Wrote"]}],
    )
    deny = dict(approve, id="garden-003", respond={"approve": False})
    deny["reference"] = [approve["reference"][0], {"tool": "finish", "args": {"summary": "Not allowed."}}]
    deny["expect"] = [{"type": "finish_contains", "all": ["Not allowed"]}]
    scenarios = [Scenario.model_validate(approve), Scenario.model_validate(deny)]
    with ScriptedEngine(scenarios) as engine, OpenAIClient(engine.base_url, "scripted") as client:
        assert all(run_scenario(s, make_policy("native_tools", client)).passed for s in scenarios)


class SlowPolicy:
    protocol = "slow"

    def next_step(self, turn) -> PolicyReply:
        time.sleep(0.2)
        return PolicyReply(step=Step("search", {"query": f"kale {turn.step_number}"}))


def test_a_scenario_past_its_budget_is_a_timeout(make_scenario):
    result = run_scenario(make_scenario(), SlowPolicy(), timeout=0.3)
    assert (result.failure_type, result.passed) == ("timeout", False)
    assert "wall-clock budget" in result.error and result.steps == 1


def test_an_engine_that_cannot_be_reached_is_a_configuration_failure(make_scenario):
    with OpenAIClient("http://127.0.0.1:9", "m", timeout=1) as client:
        result = run_scenario(make_scenario(), make_policy("react", client), timeout=60)
    assert (result.failure_type, result.engine_fault, result.partial_score) == ("engine_unreachable", True, None)


def test_the_cli_refuses_an_unknown_fault(capsys):
    assert main(["scripted-engine", "--scenarios", "scenarios/ask", "--fault", "boom"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_faults_are_documented():
    assert set(PROTOCOL_FAULTS) | {"endless", "repairable"} == set(FAULTS)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_the_gate_probe_round_trips_every_protocol(engine, protocol, tmp_path):
    from harness.probe import main as probe

    out = tmp_path / "gate.json"
    argv = [
        "gate",
        "--base-url",
        engine.base_url,
        "--out",
        str(out),
        "--model",
        "scripted",
        "--protocol",
        protocol,
        "--max-seconds",
        "5",
        "--min-tps",
        "1",
    ]
    assert probe(argv) == 0
    result = json.loads(out.read_text())
    assert result["passed"] and all(a["valid_step"] and a["tool"] == "finish" for a in result["attempts"])
