"""The ``json_schema`` protocol: one JSON step per turn, decoded under a schema built from the
agent's tools and the workspace's tables.

Each turn the model gets ``response_format: {"type": "json_schema", "json_schema": {"name",
"strict": true, "schema"}}``. The reply is parsed strictly (duplicate keys and NaN/Infinity
rejected) and validated locally against the same schema; an invalid reply gets one retry with
the validation error, then the turn is invalid. A reply that is not a valid step is a ``Reject``
(harness.protocols.base): no ``{`` at all goes through ``no_call`` (empty, a call written as text,
or invalid syntax); JSON that does not parse, a value that is not a step object, or a step whose
envelope (``thought``, extra keys) breaks the schema is ``invalid_syntax``; a ``tool`` that no
branch has is ``unknown_tool``; arguments that no branch of that tool accepts are
``invalid_arguments``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.agent.policy import HistoryItem, ModelCall, Step, TableView, Turn
from harness.agent.prompts import render_result
from harness.io.schema_check import first_error
from harness.io.strict_json import StrictJSONError, dumps_compact, loads_strict
from harness.protocols.base import (
    THOUGHT_MAX_CHARS,
    TRUNCATED,
    ChatPolicy,
    Parsed,
    Reject,
    args_variants,
    no_call,
    probe_turn,
    step_dict,
    text_messages,
)

__all__ = [
    "TRUNCATED",
    "JsonSchemaPolicy",
    "build_messages",
    "parse_step",
    "probe_turn",
    "response_format",
    "round_trip",
    "step_schema",
]

PROTOCOL = "json_schema"
SCHEMA_NAME = "agent_step"

STEP_FORMAT = (
    'Reply with one JSON object only: {"thought": "<one short sentence>", "tool": "<tool name>", "args": {...}}. '
    "Give every argument; use null where an argument allows it."
)

RETRY_TEMPLATE = (
    "Your reply was not a valid step: {problem}. "
    'Reply again with one JSON object {{"thought": ..., "tool": ..., "args": {{...}}}} that follows the schema.'
)


# ---------------------------------------------------------------------------- schema


def step_schema(tools: Iterable[str], tables: Iterable[TableView] = ()) -> dict[str, Any]:
    """The JSON Schema of one step: ``anyOf`` one branch per tool (per table for table_add and
    table_update), each with every argument required and no extra keys."""
    tables = list(tables)
    return {"anyOf": [_branch(tool, args) for tool in tools for args in args_variants(tool, tables)]}


def _branch(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    thought = {"type": "string", "maxLength": THOUGHT_MAX_CHARS}
    return {
        "type": "object",
        "properties": {"thought": thought, "tool": {"const": tool}, "args": args},
        "required": ["thought", "tool", "args"],
        "additionalProperties": False,
    }


def response_format(schema: dict[str, Any], name: str = SCHEMA_NAME) -> dict[str, Any]:
    """The OpenAI-style ``response_format`` that llama.cpp's server accepts."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


# ---------------------------------------------------------------------------- parsing


def parse_step(content: str, schema: dict[str, Any], turn: Turn | None = None) -> Step | Reject:
    """The step in a model reply, or the ``Reject`` saying why it is not a valid step. ``turn``
    (the agent's tools) tells a call written as text from other text; without it, such a reply
    is ``invalid_syntax``."""
    try:
        value = loads_strict(content.strip())
    except StrictJSONError as exc:
        if "{" not in content and turn is not None:
            return no_call(content, turn, f"invalid JSON: {exc}")
        return Reject(f"invalid JSON: {exc}", "empty_reply" if not content.strip() else "invalid_syntax")
    return step_from_value(value, schema)


def step_from_value(value: Any, schema: dict[str, Any]) -> Step | Reject:
    problem = first_error(value, schema, "$")
    if problem:
        code, tool = _classify(value, schema)
        return Reject(problem, code, tool)
    return Step(tool=value["tool"], args=value["args"], thought=value.get("thought", ""))


def _classify(value: Any, schema: dict[str, Any]) -> tuple[str, str | None]:
    """(the reject code, the tool named) of a JSON value that breaks the step schema."""
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return "invalid_syntax", None
    tool = value["tool"]
    branches = [
        b for b in schema.get("anyOf", [schema]) if (b.get("properties", {}).get("tool") or {}).get("const") == tool
    ]
    if not branches:
        return "unknown_tool", tool
    if "args" not in value or first_error(
        value["args"], {"anyOf": [b["properties"]["args"] for b in branches]}, "$.args"
    ):
        return "invalid_arguments", tool
    return "invalid_syntax", tool


# ---------------------------------------------------------------------------- messages


def build_messages(turn: Turn) -> list[dict[str, Any]]:
    """System prompt, the task, then one assistant/user pair per step taken so far: the reply as
    the model wrote it (the step as compact JSON without a model), then the result."""
    return text_messages(turn, STEP_FORMAT, render_result, step_text)


def step_text(item: HistoryItem) -> str:
    return dumps_compact(step_dict(item))


def json_retry_messages(call: ModelCall) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": call.raw},
        {"role": "user", "content": RETRY_TEMPLATE.format(problem=call.problem)},
    ]


# ---------------------------------------------------------------------------- policy


class JsonSchemaPolicy(ChatPolicy):
    """A model behind an OpenAI-compatible chat client, one schema-constrained step per turn."""

    protocol = PROTOCOL

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        return build_messages(turn)

    def request(self, turn: Turn) -> dict[str, Any]:
        return {"response_format": response_format(step_schema(turn.agent.tools, turn.tables))}

    def parse(self, answer: Any, turn: Turn) -> Parsed:
        parsed = parse_step(answer.content, step_schema(turn.agent.tools, turn.tables), turn)
        return Parsed(step=parsed) if isinstance(parsed, Step) else Parsed(problem=parsed)

    def retry_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        return json_retry_messages(call)


# ---------------------------------------------------------------------------- probes


def round_trip(
    client: Any, turn: Turn | None = None, *, max_tokens: int = 64, seed: int | None = None
) -> tuple[Any, Step | str]:
    """One schema-constrained request: (the client's ChatReply, the parsed Step or the reason it
    is invalid). Engine failures raise EngineError."""
    return JsonSchemaPolicy(client, max_tokens=max_tokens, seed=seed).round_trip(turn or probe_turn())
