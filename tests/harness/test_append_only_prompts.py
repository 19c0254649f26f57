"""Prompts that only grow: under every protocol, the messages of step k+1 are those of step k,
unchanged, then the reply the model gave at step k as it came back, then its result; a changed
workspace is told after the step's result; old results are shortened once, when the history
passes its budget."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.agent.policy import HistoryItem, PolicyReply, ScriptedPolicy, Step, Turn
from harness.clients.openai_compat import ChatReply, ToolCall
from harness.protocols import PROTOCOLS, make_policy
from harness.protocols.base import (
    FULL_RESULTS_KEPT,
    HISTORY_BUDGET_CHARS,
    SHORTENED,
    probe_turn,
    result_texts,
    shortened_count,
)
from harness.protocols.json_schema import build_messages
from harness.runner import run_scenario

STEPS = [
    ("table_read", {"table": "beds", "query": None, "limit": None}),
    ("table_add", {"table": "beds", "rows": [{"bed": "B4", "crop": "pea", "state": "dry"}]}),
    ("note_read", {"title": "Log"}),
    ("finish", {"summary": "Added B4."}),
]


def reply_for(protocol: str, tool: str, args: dict[str, Any]) -> ChatReply:
    """A valid reply for the step, written unlike the harness would render it (key order,
    spacing, a code fence, an engine call id), so a re-rendered reply would show."""
    tight = json.dumps(args, separators=(",", ":"))
    if protocol == "native_tools":
        call = ToolCall(name=tool, arguments=tight, id="chatcmpl-tool-x")
        return ChatReply(content=" Doing it. ", finish_reason="tool_calls", tool_calls=[call])
    step = json.dumps({"tool": tool, "args": args, "thought": "doing it"})
    content = {
        "json_schema": step + "\n",
        "json_prompt": f"```json\n{step}\n```",
        "react": f"Thought: doing it\nAction: {tool}\nAction Input: {tight}\n",
    }[protocol]
    return ChatReply(content=content, finish_reason="stop")


def as_sent(protocol: str, reply: ChatReply, number: int) -> dict[str, Any]:
    """The assistant message that carries ``reply`` back at step ``number``."""
    if protocol != "native_tools":
        return {"role": "assistant", "content": reply.content}
    call = reply.tool_calls[0]
    function = {"name": call.name, "arguments": call.arguments}
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [{"id": f"call_{number}", "type": "function", "function": function}],
    }


class RecordingClient:
    """Answers with the given replies in order; keeps a copy of every request's messages."""

    def __init__(self, replies: list[ChatReply]) -> None:
        self.replies = list(replies)
        self.sent: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], **request: Any) -> ChatReply:
        self.sent.append(copy.deepcopy(messages))
        return self.replies.pop(0)


def assert_append_only(sent: list[list[dict[str, Any]]]) -> None:
    for before, after in zip(sent, sent[1:], strict=False):
        assert after[: len(before)] == before
        assert len(after) == len(before) + 2


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_each_prompt_extends_the_last_with_the_reply_as_it_came(protocol, make_scenario) -> None:
    replies = [reply_for(protocol, tool, args) for tool, args in STEPS]
    client = RecordingClient(replies)
    result = run_scenario(make_scenario(), make_policy(protocol, client))
    assert result.passed and result.steps == len(STEPS)
    sent = client.sent
    assert len(sent) == len(STEPS)
    assert_append_only(sent)
    for number, (before, after) in enumerate(zip(sent, sent[1:], strict=False), start=1):
        assert after[len(before)] == as_sent(protocol, replies[number - 1], number)
        assert after[-1]["role"] == ("tool" if protocol == "native_tools" else "user")
        assert after[-1]["content"].endswith(f"\nNext: step {number + 1} of 6.")
    assert sent[0][1]["content"] == "Message from the owner: Check the beds.\nNext: step 1 of 6."


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_changed_workspace_is_told_after_the_step_that_changed_it(protocol, make_scenario) -> None:
    client = RecordingClient([reply_for(protocol, tool, args) for tool, args in STEPS])
    run_scenario(make_scenario(), make_policy(protocol, client))
    last = client.sent[-1]
    results = [m["content"] for m in last[3::2]]
    assert "Workspace now:" not in results[0] and "Workspace now:" not in results[2]
    assert "\nWorkspace now:\nTables: beds (bed, crop, state; 4 rows).\nNotes: Log." in results[1]
    assert results[1].endswith("\nNext: step 3 of 6.") and "Now: " not in results[1]
    assert "beds (bed, crop, state; 3 rows)" in last[0]["content"]  # the system prompt: the start


class RenderingPolicy:
    """A scripted policy that also renders each turn's messages under a protocol."""

    def __init__(self, protocol: str, steps: list[tuple[str, dict[str, Any]]]) -> None:
        self.render = make_policy(protocol, None)
        self.script = ScriptedPolicy([Step(tool, args, "because") for tool, args in steps])
        self.sent: list[list[dict[str, Any]]] = []

    def next_step(self, turn: Turn) -> PolicyReply:
        self.sent.append(self.render.messages(turn))
        return self.script.next_step(turn)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_without_a_model_the_steps_are_rendered_and_still_only_grow(protocol, make_scenario) -> None:
    policy = RenderingPolicy(protocol, STEPS)
    assert run_scenario(make_scenario(), policy).passed
    assert_append_only(policy.sent)
    second = policy.sent[1][2]
    if protocol == "native_tools":
        assert second["content"] == "because"
        assert second["tool_calls"][0]["function"]["arguments"] == '{"table": "beds", "query": null, "limit": null}'
    else:
        assert "table_read" in second["content"] and "because" in second["content"]


def read_item(size: int) -> HistoryItem:
    step = Step("note_read", {"title": "Log"}, "read")
    return HistoryItem(step, "ok", {"text": "x" * size}, reply='{"reply": 1}')


def turn_with(history: list[HistoryItem]) -> Turn:
    turn = probe_turn(tools=["note_read", "finish"])
    turn.history, turn.step_number, turn.max_steps = list(history), len(history) + 1, 20
    return turn


def test_old_results_are_shortened_once_when_the_history_passes_its_budget() -> None:
    # five results that pass the budget together, then small ones that stay under it
    history = [read_item(1300) for _ in range(5)] + [read_item(20) for _ in range(5)]
    sent = [build_messages(turn_with(history[:n])) for n in range(len(history) + 1)]
    grew = [after[: len(before)] == before for before, after in zip(sent, sent[1:], strict=False)]
    assert grew == [True] * 4 + [False] + [True] * 5  # only the step that crosses the budget
    crossed = sent[5]
    assert crossed[3]["content"].startswith("Result (ok): ") and SHORTENED in crossed[3]["content"]
    assert all(SHORTENED not in m["content"] for m in crossed[5::2])
    assert sent[4][:3] == crossed[:3] and sent[4][4:] == crossed[4:-2]  # only that result changed


def test_the_shortened_results_depend_on_the_history_alone_and_never_grow_back() -> None:
    sizes = [900, 2500, 40, 1800, 3000, 100, 2900, 60, 2200, 700, 3100, 50, 80, 2600]
    history = [read_item(size) for size in sizes]
    cuts = [shortened_count([f"Result (ok): {json.dumps({'text': 'x' * s})}" for s in sizes[:n]]) for n in range(15)]
    assert cuts == sorted(cuts) and cuts[-1] > 0
    texts = [result_texts(turn_with(history[:n])) for n in range(len(history) + 1)]
    for n, (before, after) in enumerate(zip(texts, texts[1:], strict=False)):
        cut = cuts[n + 1]
        assert after[:cut] == texts[-1][:cut]  # shortened: the same way from then on
        assert all(SHORTENED in text for text, size in zip(after[:cut], sizes, strict=False) if size > 300)
        assert after[cut:-1] == before[cut:]  # the rest: as shown before
        assert len(after) - cut >= min(len(after), FULL_RESULTS_KEPT)
        if cuts[n + 1] > cuts[n]:
            assert sum(len(t) for t in before) + len(after[-1]) > HISTORY_BUDGET_CHARS
