"""The ``json_prompt`` protocol: the json_schema step, described in the prompt, decoded without a
grammar, read with a fixed list of repairs.

Reading a reply (``read_json_object``):

1. The first JSON object: from the first ``{`` to its matching ``}`` (strings, in double or
   single quotes, are skipped when matching). No ``{``, or no matching ``}``, is invalid: a reply
   cut short is never completed.
2. When that object is not strict JSON, the fixed repairs below are tried, each at most once,
   outside strings only; the step is then parsed strictly and validated against the json_schema
   step schema. Every repair applied is recorded by name (``ModelCall.repairs``) and counted.

Repairs, in order (``REPAIRS``):

- ``code_fence``: the object sat inside a Markdown code fence (```` ``` ```` or ```` ```json ````).
- ``surrounding_text``: other non-blank text before or after the object was dropped.
- ``single_quotes``: 'single-quoted' strings turned into "double-quoted" ones.
- ``unquoted_keys``: bare keys (``{tool: ...}``) quoted.
- ``python_literals``: ``True``, ``False``, ``None`` turned into ``true``, ``false``, ``null``.
- ``trailing_commas``: a comma before ``}`` or ``]`` removed.

``code_fence`` and ``surrounding_text`` are recorded whenever they apply (even when the object
itself is valid); the other four only when the object was not strict JSON. An invalid reply gets
one re-prompt with the error, as in json_schema, and is classified as there: a reply without a
``{`` goes through ``no_call`` (empty, a call written as text, invalid syntax); an object that
is not closed or that the repairs cannot make JSON is ``invalid_syntax``; a repaired object is
judged against the step schema like a json_schema reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.agent.policy import ModelCall, Step, Turn
from harness.io.strict_json import StrictJSONError, loads_strict
from harness.protocols.base import ChatPolicy, Parsed, Reject, no_call
from harness.protocols.json_schema import STEP_FORMAT, build_messages, json_retry_messages, step_from_value, step_schema

PROTOCOL = "json_prompt"
REPAIRS = ("code_fence", "surrounding_text", "single_quotes", "unquoted_keys", "python_literals", "trailing_commas")
PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*\s*$")
FENCE_CLOSE = re.compile(r"^\s*```")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RepairError(ValueError):
    """The reply holds no JSON object that the fixed repairs can make valid."""


@dataclass
class Repaired:
    value: Any
    repairs: list[str]


def read_json_object(text: str) -> Repaired:
    """The first JSON object in ``text``, repaired as documented above; RepairError if none."""
    start = text.find("{")
    if start < 0:
        raise RepairError("no JSON object in the reply")
    end = _matching_brace(text, start)
    if end is None:
        raise RepairError("the JSON object is not closed")
    repairs = _outside_repairs(text[:start], text[end + 1 :])
    body = text[start : end + 1]
    try:
        return Repaired(loads_strict(body), repairs)
    except StrictJSONError as exc:
        first_error = str(exc)
    fixed, applied = _repair_tokens(body)
    try:
        return Repaired(loads_strict(fixed), repairs + applied)
    except StrictJSONError:
        raise RepairError(f"invalid JSON: {first_error}") from None


def _outside_repairs(before: str, after: str) -> list[str]:
    repairs = []
    before, after = before.rstrip(), after.lstrip()
    if FENCE_OPEN.search(before) and FENCE_CLOSE.match(after):
        repairs.append("code_fence")
        before, after = FENCE_OPEN.sub("", before), FENCE_CLOSE.sub("", after, count=1)
    if before.strip() or after.strip():
        repairs.append("surrounding_text")
    return repairs


def _matching_brace(text: str, start: int) -> int | None:
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char in "\"'":
            i = _string_end(text, i)
            if i < 0:
                return None
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index of the quote closing the string opened at ``start``, or -1."""
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


def _repair_tokens(body: str) -> tuple[str, list[str]]:
    """One pass over ``body`` outside double-quoted strings, applying the token repairs."""
    out: list[str] = []
    applied: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == '"':
            end = _string_end(body, i)
            out.append(body[i : end + 1])
            i = end + 1
        elif char == "'":
            end = _string_end(body, i)
            out.append(_double_quoted(body[i + 1 : end]))
            _note(applied, "single_quotes")
            i = end + 1
        elif match := IDENTIFIER.match(body, i):
            out.append(_identifier(match.group(), body, match.end(), applied))
            i = match.end()
        elif char == "," and re.match(r"\s*[}\]]", body[i + 1 :]):
            _note(applied, "trailing_commas")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), [name for name in REPAIRS if name in applied]


def _identifier(word: str, body: str, end: int, applied: list[str]) -> str:
    if re.match(r"\s*:", body[end:]):
        _note(applied, "unquoted_keys")
        return f'"{word}"'
    if word in PYTHON_LITERALS:
        _note(applied, "python_literals")
        return PYTHON_LITERALS[word]
    return word


def _double_quoted(inner: str) -> str:
    inner = inner.replace("\\'", "'")
    return '"' + re.sub(r'(?<!\\)"', '\\"', inner) + '"'


def _note(applied: list[str], name: str) -> None:
    if name not in applied:
        applied.append(name)


def parse_prompted_step(content: str, turn: Turn) -> Parsed:
    """A step from a json_prompt reply, with the repairs applied, or the problem."""
    try:
        repaired = read_json_object(content)
    except RepairError as exc:
        return Parsed(
            problem=no_call(content, turn, str(exc)) if "{" not in content else Reject(str(exc), "invalid_syntax")
        )
    parsed = step_from_value(repaired.value, step_schema(turn.agent.tools, turn.tables))
    if isinstance(parsed, Step):
        return Parsed(step=parsed, repairs=repaired.repairs)
    return Parsed(problem=parsed, repairs=repaired.repairs)


class JsonPromptPolicy(ChatPolicy):
    """The json_schema step without a grammar: the format is in the prompt, the reply repaired."""

    protocol = PROTOCOL

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        return build_messages(turn)

    def parse(self, answer: Any, turn: Turn) -> Parsed:
        return parse_prompted_step(answer.content, turn)

    def retry_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        return json_retry_messages(call)


__all__ = ["REPAIRS", "STEP_FORMAT", "JsonPromptPolicy", "RepairError", "parse_prompted_step", "read_json_object"]
