"""The readers of react, json_prompt and native_tools replies, the OpenAI tools built from the
tool specs, and Ollama's message conversion."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.agent.policy import Step, TableView
from harness.clients.ollama import OllamaClient, ollama_messages
from harness.clients.openai_compat import ChatReply, ToolCall
from harness.protocols import make_policy
from harness.protocols.base import probe_turn
from harness.protocols.json_prompt import RepairError, parse_prompted_step, read_json_object
from harness.protocols.native_tools import openai_tools, parse_tool_calls
from harness.protocols.react import STOP, parse_react
from harness.tools import TOOL_SPECS

TURN = probe_turn(tools=["table_read", "note_read", "finish"])
TURN.tables.append(TableView("beds", ["bed", "crop"], 2))


# ---------------------------------------------------------------------------- react


@pytest.mark.parametrize(
    "text",
    [
        'Thought: read it\nAction: note_read\nAction Input: {"title": "Log"}',
        'Action: note_read\n\nAction Input:\n```json\n{"title": "Log"}\n```\n',
        'Thought: x\nAction: note_read\nAction Input: {"title": "Log"}\nObservation: made up\nAction: finish',
        # prose after the Action Input line (Qwen2.5-Coder's habit): the line's object is the input
        'Thought: x\nAction: note_read\nAction Input: {"title": "Log"}\nThen I stop: {"summary": "read"}',
        # the signature the tool list shows, copied into the Action line: the tool is its name
        'Thought: x\nAction: note_read(title)\nAction Input: {"title": "Log"}',
    ],
)
def test_react_reads_the_first_action_block(text):
    step = parse_react(text, TURN)
    assert isinstance(step, Step) and (step.tool, step.args) == ("note_read", {"title": "Log"})


def test_react_records_the_signature_it_stripped():
    from harness.protocols.react import SIGNATURE_REPAIR, parse_react

    repairs: list[str] = []
    assert isinstance(parse_react('Action: note_read(title)\nAction Input: {"title": "Log"}', TURN, repairs), Step)
    assert repairs == [SIGNATURE_REPAIR]
    repairs.clear()
    assert (
        isinstance(parse_react('Action: note_read\nAction Input: {"title": "Log"}', TURN, repairs), Step)
        and repairs == []
    )


def test_react_final_answer_is_finish():
    step = parse_react("Thought: done\nFinal Answer: Two beds,\nboth dry.", TURN)
    assert step == Step("finish", {"summary": "Two beds,\nboth dry."}, "done")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I would read the log.", "no 'Action:' or 'Final Answer:' line"),
        ("Action: note_read\nThe title is Log.", "not followed by an 'Action Input:'"),
        ("Action: note_read\nAction Input: title=Log", "not one JSON object"),
        ('Action: note_read\nAction Input: ["Log"]', "is not a JSON object"),
        ('Action: note_read\nAction Input: {"title": "Log",}', "not one JSON object"),
        # no object on the line itself
        ('Action: note_read\nAction Input: {"title":\n"Log"} and more', "not one JSON object"),
        # not a tool's signature
        ('Action: notes_read(title)\nAction Input: {"title": "Log"}', "unknown tool 'notes_read(title)'"),
        ('Action: delete\nAction Input: {"x": 1}', "unknown tool 'delete'"),
        ('Action: table_read\nAction Input: {"table": "pots", "query": null, "limit": null}', "$.args.table: must be"),
        ("Final Answer:   ", "an empty Final Answer"),
    ],
)
def test_react_refuses_anything_else(text, problem):
    parsed = parse_react(text, TURN)
    assert isinstance(parsed, str) and problem in parsed


def test_react_asks_with_stop_sequences():
    sent = {}

    class Client:
        def chat(self, messages, **kwargs):
            sent.update(kwargs)
            return ChatReply(content='Action: finish\nAction Input: {"summary": "ready"}')

    reply = make_policy("react", Client()).next_step(probe_turn())
    assert reply.step == Step("finish", {"summary": "ready"}) and sent["stop"] == STOP


# ---------------------------------------------------------------------------- json_prompt


@pytest.mark.parametrize(
    ("text", "value", "repairs"),
    [
        ('{"a": 1}', {"a": 1}, []),
        ('```json\n{"a": 1}\n```', {"a": 1}, ["code_fence"]),
        ('Sure! {"a": "}"} Hope it helps.', {"a": "}"}, ["surrounding_text"]),
        ("{'a': 'it\\'s \"x\"'}", {"a": 'it\'s "x"'}, ["single_quotes"]),
        ('{a: 1, "b": 2}', {"a": 1, "b": 2}, ["unquoted_keys"]),
        ('{"a": True, "b": None, "c": "True"}', {"a": True, "b": None, "c": "True"}, ["python_literals"]),
        ('{"a": [1, 2,], }', {"a": [1, 2]}, ["trailing_commas"]),
        (
            "Here:\n```\n{'a': [True,],}\n```",
            {"a": [True]},
            ["code_fence", "surrounding_text", "single_quotes", "python_literals", "trailing_commas"],
        ),
    ],
)
def test_json_prompt_repairs_are_fixed_and_recorded(text, value, repairs):
    repaired = read_json_object(text)
    assert (repaired.value, repaired.repairs) == (value, repairs)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no json here", "no JSON object"),
        ('{"a": {"b": 1}', "not closed"),
        ('{"a": 1 "b": 2}', "invalid JSON"),
        ('{"a": NaN}', "invalid JSON"),
    ],
)
def test_json_prompt_refuses_what_the_repairs_do_not_cover(text, problem):
    with pytest.raises(RepairError, match=problem):
        read_json_object(text)


def test_json_prompt_validates_after_repair():
    ok = parse_prompted_step(
        "```json\n{'thought': 'x', 'tool': 'finish', 'args': {'summary': 'ready'}}\n```", probe_turn()
    )
    assert ok.step == Step("finish", {"summary": "ready"}, "x") and ok.repairs == ["code_fence", "single_quotes"]
    bad = parse_prompted_step('{"thought": "x", "tool": "finish", "args": {}}', probe_turn())
    assert bad.step is None and "summary" in bad.problem


def test_json_prompt_reprompts_once_with_the_error():
    replies = iter(["nothing", '{"thought": "x", "tool": "finish", "args": {"summary": "ready",}}'])
    seen = []

    class Client:
        def chat(self, messages, **kwargs):
            seen.append((messages, kwargs))
            return ChatReply(content=next(replies))

    reply = make_policy("json_prompt", Client()).next_step(probe_turn())
    assert reply.step.tool == "finish" and [c.repairs for c in reply.calls] == [[], ["trailing_commas"]]
    assert "no JSON object" in seen[1][0][-1]["content"] and "response_format" not in seen[0][1]


# ---------------------------------------------------------------------------- native_tools


def test_tools_are_built_from_every_tool_spec():
    turn = probe_turn(tools=list(TOOL_SPECS))
    tools = openai_tools(turn)
    assert [t["function"]["name"] for t in tools] == list(TOOL_SPECS)
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in tools)


def call(name: str, arguments: str) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id="random")


def test_native_runs_the_first_call_and_records_the_rest():
    parsed = parse_tool_calls("", [call("note_read", '{"title": "Log"}'), call("finish", '{"summary": "x"}')], TURN)
    assert parsed.step == Step("note_read", {"title": "Log"}, "")
    assert parsed.ignored_calls == [{"name": "finish", "arguments": '{"summary": "x"}'}]
    assert "random" not in parsed.raw


@pytest.mark.parametrize(
    ("content", "calls", "problem"),
    [
        ('{"name": "finish"}', [], "written as text"),
        ("", [], "no tool call"),
        ("", [call("note_read", '{"title": ')], "not JSON"),
        ("", [call("note_read", "[1]")], "not a JSON object"),
        ("", [call("note_read", '{"title": "Log", "x": 1}')], "$.args"),
    ],
)
def test_native_refuses_invalid_calls(content, calls, problem):
    parsed = parse_tool_calls(content, calls, TURN)
    assert parsed.step is None and problem in parsed.problem


def test_native_history_uses_the_harness_call_ids():
    from harness.agent.policy import HistoryItem

    turn = probe_turn(tools=["note_read", "finish"])
    turn.history.append(HistoryItem(Step("note_read", {"title": "Log"}), "ok", {"text": "hi"}))
    turn.step_number = 2
    messages = make_policy("native_tools", None).messages(turn)
    assert messages[2]["tool_calls"][0]["id"] == messages[3]["tool_call_id"] == "call_1"
    assert messages[3]["role"] == "tool" and messages[3]["content"].startswith('(ok) {"text": "hi"}')


def test_ollama_gets_tools_and_converted_messages():
    sent = {}

    def handler(request: httpx.Request) -> httpx.Response:
        sent.update(json.loads(request.content))
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "finish", "arguments": {"summary": "ready"}}}],
        }
        return httpx.Response(200, json={"message": message, "done_reason": "stop"})

    client = OllamaClient("http://ollama", "m", transport=httpx.MockTransport(handler))
    reply = make_policy("native_tools", client).next_step(probe_turn())
    assert reply.step == Step("finish", {"summary": "ready"}, "")
    assert sent["tools"][0]["function"]["name"] == "finish"
    converted = ollama_messages(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "note_read", "arguments": '{"title": "Log"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "(ok) {}"},
        ]
    )
    assert converted[0]["tool_calls"] == [{"function": {"name": "note_read", "arguments": {"title": "Log"}}}]
    assert converted[1] == {"role": "tool", "content": "(ok) {}", "tool_name": "note_read"}
