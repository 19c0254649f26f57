"""Reading the recorded wire: what a chat completion reply said, streamed (server-sent events) or
whole, and one turn's record as the wire file keeps it. The client reads it for a turn's tokens and
the engine's timings; repro's check reads the same to hold the runtime's answer to what the engine
said (one reader, so the two cannot read a reply differently)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.clients.openai_compat import ToolCall, read_tool_call
from harness.protocols.native_tools import recorded_reply

CHAT_SUFFIX = "/chat/completions"


@dataclass
class EngineReply:
    """One chat completion as the engine sent it: its text, why it ended, its usage and timings."""

    content: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def read_reply(text: str) -> EngineReply | None:
    """The completion in a recorded reply body (JSON, or `data:` events); None when it holds none."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            body = json.loads(stripped)
        except ValueError:
            return None
        return _whole(body) if isinstance(body, dict) else None
    return _streamed(text)


def _whole(body: dict[str, Any]) -> EngineReply | None:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message") or {}
    return EngineReply(
        content=str(message.get("content") or ""),
        finish_reason=choices[0].get("finish_reason"),
        usage=body.get("usage") or {},
        timings=body.get("timings"),
        tool_calls=list(message.get("tool_calls") or []),
    )


def _streamed(text: str) -> EngineReply | None:
    reply, seen = EngineReply(), False
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict):
            seen = True
            _take_event(reply, event)
    return reply if seen else None


def _take_event(reply: EngineReply, event: dict[str, Any]) -> None:
    for choice in event.get("choices") or []:
        delta = choice.get("delta") or {}
        reply.content += str(delta.get("content") or "")
        for fragment in delta.get("tool_calls") or []:
            _merge_call(reply.tool_calls, fragment)
        reply.finish_reason = choice.get("finish_reason") or reply.finish_reason
    if event.get("usage"):
        reply.usage = event["usage"]
    if event.get("timings"):
        reply.timings = event["timings"]


def _merge_call(calls: list[dict[str, Any]], fragment: Any) -> None:
    """Add one streamed tool call fragment: a new ``index`` starts a call, later fragments of the
    same index extend its arguments text (OpenAI's streaming shape; Ollama sends each call whole)."""
    if not isinstance(fragment, dict) or not isinstance(fragment.get("function"), dict):
        return
    function, index = fragment["function"], fragment.get("index", len(calls))
    known = next((c for c in calls if c.get("index") == index), None)
    if known is None:
        known = {"index": index, "id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        calls.append(known)
    known["id"] = known["id"] or str(fragment.get("id") or "")
    known["function"]["name"] = known["function"]["name"] or str(function.get("name") or "")
    arguments = function.get("arguments")
    known["function"]["arguments"] += arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def calls_of(reply: EngineReply) -> list[ToolCall]:
    """A reply's tool calls as the protocols read an engine's (arguments as JSON text)."""
    return [read_tool_call(call) for call in reply.tool_calls]


def as_recorded(reply: EngineReply) -> str:
    """A reply as the native_tools protocol records it: its text, or its text and calls as JSON."""
    return recorded_reply(reply.content, calls_of(reply))


def chat_replies(exchanges: list[dict[str, Any]]) -> list[EngineReply]:
    """The completions of a turn's recorded exchanges, in order (other requests left out)."""
    found = []
    for exchange in exchanges:
        if exchange.get("method") == "POST" and str(exchange.get("path", "")).split("?")[0].endswith(CHAT_SUFFIX):
            reply = read_reply(str(exchange.get("reply", "")))
            if reply is not None:
                found.append(reply)
    return found
