"""The scripted engine's replies: a step in each protocol's wire format (the protocol read from
the request), with a fault applied, and the OpenAI chat completion body around it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.agent.policy import Step
from harness.io.strict_json import dumps_compact
from harness.testing.scripts import Script, message_text

FAULTS: dict[str, str] = {
    "text_call": "the call written as prose (native_tools: as JSON text in the content, no tool_calls)",
    "unknown_tool": "a call to a tool that does not exist (delete_everything)",
    "bad_args": "the reference call with an extra argument the schema forbids",
    "broken_json": "the reply's JSON (native_tools: the arguments) cut before its last brace",
    "empty": "an empty reply",
    "length": "the reply cut in the middle of its JSON, finish_reason length",
    "endless": "the same call forever (the first reference call that is not finish or ask)",
    "repairable": "json protocols: the step in a code fence, after a sentence, with a trailing comma",
}
UNKNOWN_TOOL = "delete_everything"


@dataclass
class Reply:
    content: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str


def protocol_of(request: dict[str, Any]) -> str:
    if request.get("tools"):
        return "native_tools"
    if (request.get("response_format") or {}).get("type") == "json_schema":
        return "json_schema"
    if any("Observation" in stop for stop in request.get("stop") or []):
        return "react"
    return "json_prompt"


def steps_taken(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def faulty_step(script: Script, number: int, fault: str | None) -> Step:
    """The step a fault starts from: the reference step, or the fault's own call."""
    step = script.step(number)
    if fault == "unknown_tool":
        return Step(UNKNOWN_TOOL, {}, step.thought)
    if fault == "bad_args":
        return Step(step.tool, {**step.args, "unexpected_argument": True}, step.thought)
    if fault == "endless":
        return next((s for s in script.steps if s.tool not in ("finish", "ask")), script.steps[0])
    return step


def render(step: Step, protocol: str, fault: str | None) -> Reply:
    """The reply of ``step`` in ``protocol``'s wire format, with ``fault`` applied."""
    if fault == "empty":
        return Reply("", [], "stop")
    if fault == "text_call":
        return _text_call(step, protocol)
    if protocol == "native_tools":
        return _native(step, fault)
    prefix, body = _text_parts(step, protocol)
    if fault == "broken_json":
        body = body[:-1]
    if fault == "length":
        return Reply(prefix + body[: len(body) // 2], [], "length")
    if fault == "repairable" and protocol in ("json_schema", "json_prompt"):
        body = f"Here is my step:\n```json\n{body[:-1]},}}\n```"
    return Reply(prefix + body, [], "stop")


def _text_parts(step: Step, protocol: str) -> tuple[str, str]:
    """(the text before the JSON, the JSON) of a text protocol's reply."""
    if protocol == "react":
        return f"Thought: {step.thought}\nAction: {step.tool}\nAction Input: ", dumps_compact(step.args)
    return "", dumps_compact({"thought": step.thought, "tool": step.tool, "args": step.args})


def _text_call(step: Step, protocol: str) -> Reply:
    if protocol == "native_tools":
        return Reply(dumps_compact({"name": step.tool, "arguments": step.args}), [], "stop")
    return Reply(f"I would call the {step.tool} tool next, with the arguments the task needs.", [], "stop")


def _native(step: Step, fault: str | None) -> Reply:
    arguments = dumps_compact(step.args)
    if fault == "broken_json":
        arguments = arguments[:-1]
    if fault == "length":
        return Reply(dumps_compact({"name": step.tool, "arguments": step.args})[:20], [], "length")
    call = {"id": "scripted_call", "type": "function", "function": {"name": step.tool, "arguments": arguments}}
    return Reply(step.thought, [call], "tool_calls")


def generated_tokens(reply: Reply) -> int:
    """The tokens a reply is counted as: about a quarter of its characters."""
    return max(1, len(reply.content + json.dumps(reply.tool_calls)) // 4)


def completion(
    model: str, reply: Reply, messages: list[dict[str, Any]], spent: tuple[float, float] = (1.0, 1.0)
) -> dict[str, Any]:
    """An OpenAI chat completion body with llama.cpp-style ``timings``: ``spent`` is (prompt ms,
    generation ms). A paced server measures both (finding the step, then the pause that paces its
    reply), so its timings are real durations within the request's and within the bounds
    ``repro check`` holds every engine to; otherwise they are nominal, 1 ms each."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    prompt_tokens = max(1, sum(len(message_text(m)) for m in messages) // 4)
    completion_tokens = generated_tokens(reply)
    prompt_ms, predicted_ms = spent
    return {
        "id": "scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "timings": {
            "prompt_n": prompt_tokens,
            "prompt_ms": prompt_ms,
            "predicted_n": completion_tokens,
            "predicted_ms": predicted_ms,
            "predicted_per_second": completion_tokens * 1000.0 / predicted_ms,
        },
    }
