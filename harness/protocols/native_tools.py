"""The ``native_tools`` protocol: the agent's tools as OpenAI ``tools``, calls read from
``message.tool_calls``.

- Request: ``tools`` holds one ``{"type": "function", "function": {name, description,
  parameters}}`` per agent tool, built from ``harness.tools.TOOL_SPECS`` (description: the
  tool's summary; parameters: its argument schema in this workspace, exactly the one json_schema
  decodes under: table names narrowed to existing tables, ``table_add``/``table_update`` rows
  with the table's columns, ``anyOf`` one variant per table when there are several), and
  ``tool_choice: "auto"``. llama.cpp must run with ``--jinja`` so the model's own chat template
  formats the tools and the calls. Ollama gets the same ``tools`` on
  ``/api/chat``.
- Reply: the calls in ``message.tool_calls``. No call is invalid (text that merely describes a
  call is not a call). Arguments must be one JSON object that fits the parameters sent.
  Classification (``Reject`` codes): no call goes through ``no_call`` (empty, a call written as
  text, or ``invalid_syntax`` for text that is no call at all); arguments that are not one JSON
  object are ``invalid_syntax``; the tool and argument checks give ``unknown_tool`` and
  ``invalid_arguments``.
- **Several calls in one reply: the first is executed; the others are not run.** They are
  recorded in the transcript (``ignored_calls`` of that reply) and counted in the protocol
  stats. The history sent back holds only the executed call, so the model sees what ran.
- History: each step is an ``assistant`` message with the reply's text and, in ``tool_calls``,
  the executed call with its arguments as the engine sent them, followed by a ``role: tool``
  message with the same ``tool_call_id`` and the result ``(<status>) <json>``. Engines make
  call ids up at random (llama.cpp) or send none (Ollama), so the harness names each executed
  call ``call_<step>``: transcripts of identical replies are identical, and the id in the result
  always matches its call.
- An invalid reply gets one re-prompt: the reply's text as an assistant message, then a user
  message with the problem.
"""

from __future__ import annotations

from typing import Any

from harness.agent.policy import HistoryItem, ModelCall, Step, Turn
from harness.clients.openai_compat import ToolCall
from harness.io.strict_json import StrictJSONError, dumps_compact, loads_strict
from harness.protocols.base import (
    ChatPolicy,
    Parsed,
    Reject,
    args_schema,
    check_call,
    no_call,
    result_texts,
    system_prompt,
    task_text,
)
from harness.tools import TOOL_SPECS

PROTOCOL = "native_tools"
NATIVE_FORMAT = "Use the provided tools: call exactly one tool per reply. To end, call finish with a short summary."
RETRY_TEMPLATE = "Your reply did not make a valid tool call: {problem}. Call exactly one of the provided tools."


def openai_tools(turn: Turn) -> list[dict[str, Any]]:
    """The agent's tools in OpenAI's ``tools`` shape, generic over TOOL_SPECS."""
    return [_function(name, turn) for name in turn.agent.tools]


def _function(name: str, turn: Turn) -> dict[str, Any]:
    schema = args_schema(name, list(turn.tables))
    return {
        "type": "function",
        "function": {"name": name, "description": TOOL_SPECS[name].summary, "parameters": schema},
    }


def call_id(step_number: int) -> str:
    return f"call_{step_number}"


def history_messages(turn: Turn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for number, (item, result) in enumerate(zip(turn.history, result_texts(turn, tool_result), strict=True), start=1):
        messages.append(assistant_call(item, call_id(number)))
        messages.append({"role": "tool", "tool_call_id": call_id(number), "content": result})
    return messages


def assistant_call(item: HistoryItem, identifier: str) -> dict[str, Any]:
    content, function = replied_call(item)
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": identifier, "type": "function", "function": function}],
    }


def replied_call(item: HistoryItem) -> tuple[str, dict[str, str]]:
    """The reply's text and its first call (the executed one), its arguments as the engine sent
    them (read back from ``recorded_reply``); without a model, the thought and the step."""
    if item.reply is None:
        return item.step.thought, {"name": item.step.tool, "arguments": dumps_compact(item.step.args)}
    reply = loads_strict(item.reply)
    first = reply["tool_calls"][0]
    return reply["content"], {"name": first["name"], "arguments": first["arguments"]}


def tool_result(item: HistoryItem) -> str:
    return f"({item.status}) {dumps_compact(item.result)}"


def build_native_messages(turn: Turn) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system_prompt(turn, NATIVE_FORMAT, list_tools=False)},
        {"role": "user", "content": task_text(turn)},
        *history_messages(turn),
    ]


def parse_tool_calls(content: str, calls: list[ToolCall], turn: Turn) -> Parsed:
    """The first call as a step (the others recorded as ignored), or the problem."""
    raw = recorded_reply(content, calls)
    if not calls:
        return Parsed(problem=no_call(content, turn, "no tool call in the reply"), raw=raw)
    first, rest = calls[0], [{"name": c.name, "arguments": c.arguments} for c in calls[1:]]
    try:
        args = loads_strict(first.arguments or "{}")
    except StrictJSONError as exc:
        return Parsed(
            problem=Reject(f"arguments of {first.name!r} are not JSON: {exc}", "invalid_syntax", first.name),
            ignored_calls=rest,
            raw=raw,
        )
    if not isinstance(args, dict):
        return Parsed(
            problem=Reject(f"arguments of {first.name!r} are not a JSON object", "invalid_syntax", first.name),
            ignored_calls=rest,
            raw=raw,
        )
    step = check_call(first.name, args, content.strip(), turn)
    if isinstance(step, Step):
        return Parsed(step=step, ignored_calls=rest, raw=raw)
    return Parsed(problem=step, ignored_calls=rest, raw=raw)


def recorded_reply(content: str, calls: list[ToolCall]) -> str:
    """The reply as recorded: its text, or its text and calls (engine ids left out) as JSON."""
    if not calls:
        return content
    return dumps_compact(
        {"content": content, "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in calls]}
    )


class NativeToolsPolicy(ChatPolicy):
    """OpenAI-style function calling through the engine's chat template."""

    protocol = PROTOCOL

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        return build_native_messages(turn)

    def request(self, turn: Turn) -> dict[str, Any]:
        return {"tools": openai_tools(turn)}

    def parse(self, answer: Any, turn: Turn) -> Parsed:
        return parse_tool_calls(answer.content, list(answer.tool_calls), turn)

    def retry_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        return [
            {"role": "assistant", "content": call.raw},
            {"role": "user", "content": RETRY_TEMPLATE.format(problem=call.problem)},
        ]
