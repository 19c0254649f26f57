"""The ``json_schema`` protocol: one JSON step per turn, decoded under a schema built from the
agent's tools and the workspace's tables.

Each turn the model gets ``response_format: {"type": "json_schema", "json_schema": {"name",
"strict": true, "schema"}}``. The reply is parsed strictly (duplicate keys and NaN/Infinity
rejected) and validated locally against the same schema; an invalid reply gets one retry with
the validation error, then the step is classified invalid (a protocol error).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.policy import ModelCall, Step, TableView, Turn
from harness.protocols.base import (
    THOUGHT_MAX_CHARS,
    TRUNCATED,
    ChatPolicy,
    Parsed,
    args_variants,
    next_step_line,
    probe_turn,
    result_texts,
    step_dict,
    system_prompt,
)
from harness.schema_check import first_error
from harness.strict_json import StrictJSONError, dumps_compact, loads_strict

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

STEP_FORMAT = 'Reply with one JSON object only: {"thought": "<one short sentence>", "tool": "<tool name>", "args": {...}}. Give every argument; use null where an argument allows it.'

RETRY_TEMPLATE = (
    'Your reply was not a valid step: {problem}. Reply again with one JSON object {{"thought": ..., "tool": ..., "args": {{...}}}} that follows the schema.'
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


def parse_step(content: str, schema: dict[str, Any]) -> Step | str:
    """The step in a model reply, or a one-line reason why it is not a valid step."""
    try:
        value = loads_strict(content.strip())
    except StrictJSONError as exc:
        return f"invalid JSON: {exc}"
    return step_from_value(value, schema)


def step_from_value(value: Any, schema: dict[str, Any]) -> Step | str:
    problem = first_error(value, schema, "$")
    if problem:
        return problem
    return Step(tool=value["tool"], args=value["args"], thought=value.get("thought", ""))


# ---------------------------------------------------------------------------- messages


def build_messages(turn: Turn) -> list[dict[str, Any]]:
    """System prompt, the task, then one assistant/user pair per step taken so far."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(turn, STEP_FORMAT)}, {"role": "user", "content": turn.task}]
    for item, result in zip(turn.history, result_texts(turn), strict=True):
        messages.append({"role": "assistant", "content": dumps_compact(step_dict(item))})
        messages.append({"role": "user", "content": result})
    messages[-1]["content"] += next_step_line(turn)
    return messages


def json_retry_messages(call: ModelCall) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": call.raw}, {"role": "user", "content": RETRY_TEMPLATE.format(problem=call.problem)}]


# ---------------------------------------------------------------------------- policy


class JsonSchemaPolicy(ChatPolicy):
    """A model behind an OpenAI-compatible chat client, one schema-constrained step per turn."""

    protocol = PROTOCOL

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        return build_messages(turn)

    def request(self, turn: Turn) -> dict[str, Any]:
        return {"response_format": response_format(step_schema(turn.agent.tools, turn.tables))}

    def parse(self, answer: Any, turn: Turn) -> Parsed:
        parsed = parse_step(answer.content, step_schema(turn.agent.tools, turn.tables))
        return Parsed(step=parsed) if isinstance(parsed, Step) else Parsed(problem=parsed)

    def retry_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        return json_retry_messages(call)


# ---------------------------------------------------------------------------- probes


def round_trip(client: Any, turn: Turn | None = None, *, max_tokens: int = 64, seed: int | None = None) -> tuple[Any, Step | str]:
    """One schema-constrained request: (the client's ChatReply, the parsed Step or the reason it
    is invalid). Engine failures raise EngineError."""
    return JsonSchemaPolicy(client, max_tokens=max_tokens, seed=seed).round_trip(turn or probe_turn())
