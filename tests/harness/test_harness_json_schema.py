"""The json_schema protocol: schema, strict parsing, local validation, retry, and a full run
driven by an in-process stub chat client."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agent.policy import TableView
from harness.clients.openai_compat import ChatReply
from harness.contracts import InvalidEntry, PromptEntry
from harness.io.schema_check import schema_errors
from harness.protocols.json_schema import (
    JsonSchemaPolicy,
    build_messages,
    parse_step,
    probe_turn,
    response_format,
    round_trip,
    step_schema,
)
from harness.runner import run_scenario
from tests.fixtures.transcripts import entries_of


class StubChatClient:
    """Stands in for OpenAIClient: returns scripted replies and records every request."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def chat(self, messages, *, response_format=None, max_tokens=512, temperature=0.0, seed=None) -> ChatReply:
        self.requests.append(
            {
                "messages": messages,
                "response_format": response_format,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": seed,
            }
        )
        return ChatReply(
            content=self.replies.pop(0),
            usage={"prompt_tokens": 100, "completion_tokens": 20},
            timings={"prompt_ms": 5.0, "predicted_ms": 7.5},
            seconds=0.01,
        )


def _step(tool: str, args: dict[str, Any], thought: str = "ok") -> str:
    return json.dumps({"thought": thought, "tool": tool, "args": args})


BEDS = TableView("beds", ["bed", "crop"], 2)
SCHEMA = step_schema(["table_read", "table_add", "table_update", "finish"], [BEDS, TableView("pots", ["size"], 0)])


def test_schema_has_one_branch_per_tool_and_per_table() -> None:
    branches = SCHEMA["anyOf"]
    tools = [b["properties"]["tool"]["const"] for b in branches]
    assert tools == ["table_read", "table_add", "table_add", "table_update", "table_update", "finish"]
    for branch in branches:
        assert branch["required"] == ["thought", "tool", "args"] and branch["additionalProperties"] is False
        args = branch["properties"]["args"]
        assert args["required"] == list(args["properties"]) and args["additionalProperties"] is False
    add_beds = branches[1]["properties"]["args"]["properties"]
    assert add_beds["table"] == {"const": "beds"}
    assert add_beds["rows"]["items"]["required"] == ["bed", "crop"]
    assert branches[0]["properties"]["args"]["properties"]["table"] == {"enum": ["beds", "pots"]}


def test_schema_without_tables_is_generic() -> None:
    schema = step_schema(["table_create", "table_add"])
    assert [b["properties"]["args"]["properties"]["table"] for b in schema["anyOf"]] == [{"type": "string"}] * 2


def test_response_format_shape() -> None:
    assert response_format({"anyOf": []}) == {
        "type": "json_schema",
        "json_schema": {"name": "agent_step", "strict": True, "schema": {"anyOf": []}},
    }


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            '{"thought": "a", "tool": "finish", "tool": "finish", "args": {"summary": "x"}}',
            "invalid JSON: duplicate key 'tool'",
        ),
        (
            '{"thought": "a", "tool": "table_read", "args": {"table": "beds", "query": null, "limit": NaN}}',
            "invalid JSON: NaN is not valid JSON",
        ),
        (
            '{"thought": "a", "tool": "table_read", "args": {"table": "beds", "query": null, "limit": Infinity}}',
            "invalid JSON: Infinity is not valid JSON",
        ),
        ("Sure! Here is the step.", "invalid JSON: Expecting value at line 1 column 1"),
        (_step("launch", {}), '$.tool: must be one of "table_read", "table_add", "table_update", "finish"'),
        (
            _step("table_read", {"table": "sheds", "query": None, "limit": None}),
            '$.args.table: must be one of "beds", "pots"',
        ),
        (_step("table_read", {"table": "beds", "query": None}), "$.args.limit: is required"),
        (_step("table_read", {"table": "beds", "query": None, "limit": 99}), "$.args.limit: must be at most 50"),
        (_step("table_add", {"table": "beds", "rows": [{"bed": "B9"}]}), "$.args.rows[0].crop: is required"),
        (_step("table_add", {"table": "garage", "rows": []}), '$.args.table: must be one of "beds", "pots"'),
        (_step("finish", {"summary": "x", "extra": 1}), "$.args.extra: is not allowed here"),
        ('{"tool": "finish", "args": {"summary": "x"}}', "$.thought: is required"),
        ("[1, 2]", "$: must be an object"),
    ],
)
def test_invalid_replies_are_classified(content: str, problem: str) -> None:
    assert parse_step(content, SCHEMA) == problem


def test_valid_reply_becomes_a_step() -> None:
    step = parse_step(
        "  " + _step("table_add", {"table": "beds", "rows": [{"bed": "B9", "crop": None}]}, "add it") + "\n", SCHEMA
    )
    assert (step.tool, step.args, step.thought) == (
        "table_add",
        {"table": "beds", "rows": [{"bed": "B9", "crop": None}]},
        "add it",
    )


def test_validator_accepts_what_it_emits() -> None:
    assert schema_errors({"thought": "", "tool": "finish", "args": {"summary": ""}}, SCHEMA) == []
    assert schema_errors(True, {"type": "integer"}) == ["$: must be an integer"]


def test_retry_then_valid(make_scenario) -> None:
    client = StubChatClient(["not json", _step("finish", {"summary": "Done."})])
    result = run_scenario(make_scenario(), JsonSchemaPolicy(client))
    assert result.passed and result.invalid_steps == 1
    retry_messages = client.requests[1]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": "not json"}
    assert "invalid JSON" in retry_messages[-1]["content"]


def test_retry_then_invalid_is_a_protocol_failure(make_scenario) -> None:
    client = StubChatClient(["not json", _step("finish", {})])
    result = run_scenario(make_scenario(), JsonSchemaPolicy(client))
    # invalid_syntax (the first reply) precedes invalid_arguments (the re-prompt's)
    assert (result.passed, result.failure_type, result.invalid_steps, result.steps) == (False, "invalid_syntax", 2, 0)
    assert [r.reject for e in entries_of(result, InvalidEntry) for r in e.replies] == [
        "invalid_syntax",
        "invalid_arguments",
    ]
    assert result.error == "$.args.summary: is required"
    assert [t.attempt for t in result.engine_timings] == [1, 2]


def test_full_run_records_usage_timings_and_deterministic_transcripts(make_scenario) -> None:
    scenario = make_scenario(expect=[{"type": "row", "table": "beds", "where": {"bed": "B1"}, "has": {"state": "wet"}}])
    replies = [
        _step("table_read", {"table": "beds", "query": "bed:B1", "limit": None}),
        _step("table_update", {"table": "beds", "row": 1, "values": {"bed": None, "crop": None, "state": "wet"}}),
        _step("finish", {"summary": "B1 is wet now."}),
    ]
    first = run_scenario(scenario, JsonSchemaPolicy(client := StubChatClient(replies), seed=7, max_tokens=300))
    second = run_scenario(scenario, JsonSchemaPolicy(StubChatClient(replies), seed=7, max_tokens=300))
    assert first.passed and first.steps == 3
    assert (first.tokens_in, first.tokens_out) == (300, 60)
    assert first.engine_timings[0].timings == {"prompt_ms": 5.0, "predicted_ms": 7.5}
    assert first.transcript == second.transcript
    assert isinstance((first.transcript or [])[1], PromptEntry)
    request = client.requests[1]
    assert (request["seed"], request["max_tokens"], request["temperature"]) == (7, 300, 0.0)
    assert request["response_format"]["json_schema"]["strict"] is True
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert request["messages"][3]["content"].startswith("Result (ok): ")


def test_prompt_is_short_and_mentions_only_relevant_rules(make_scenario) -> None:
    turn = probe_turn()
    system = build_messages(turn)[0]["content"]
    assert "table_update" not in system and "finish(summary)" in system
    assert len(system) < 1500


def test_round_trip_helper_for_probes() -> None:
    client = StubChatClient([_step("finish", {"summary": "ready"})])
    reply, step = round_trip(client)
    assert step.tool == "finish" and reply.timings["predicted_ms"] == 7.5
    assert client.requests[0]["max_tokens"] == 64


def test_every_tholos_reference_is_valid_under_the_step_schema(tholos_dir) -> None:
    from harness.model.scenario import load_scenarios

    failures = []
    for scenario in load_scenarios(tholos_dir):
        replies = [_step(s.tool, s.args) for s in scenario.reference]
        result = run_scenario(scenario, JsonSchemaPolicy(StubChatClient(replies)), transcript=False)
        if not result.passed or result.invalid_steps:
            failures.append((scenario.id, result.failure_type, result.error))
    assert failures == []
