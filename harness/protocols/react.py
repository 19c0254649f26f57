"""The ``react`` protocol: Thought / Action / Action Input text, one action per turn.

The model writes::

    Thought: <one short sentence>
    Action: <tool name>
    Action Input: <the arguments as one JSON object>

Requests carry the stop sequences ``STOP`` so the model cannot write its own observation; the
tool result goes back as a user message ``Observation (<status>): <json>``.

The parser (``parse_react``) is strict:

- Lines are read from the top. The first line that starts with ``Action:`` or ``Final Answer:``
  (after leading blanks) decides; anything after the first Action block is ignored.
- ``Final Answer: TEXT`` (TEXT is everything after the marker, stripped, over any number of
  lines) is the step ``finish {"summary": TEXT}``; an empty TEXT is invalid.
- ``Action: NAME``: NAME is the rest of the line, stripped. When NAME is not one of the agent's
  tools but starts with one followed by ``(`` (the signature the tool list shows, as in
  ``Action: web_fetch(url)``), the tool is that name and the repair ``signature stripped from
  the Action`` is recorded; the arguments still come only from Action Input. The next non-blank line must start
  with ``Action Input:``; its value is the text after the marker up to the next line that starts
  with ``Thought:``, ``Action:``, ``Observation`` or ``Final Answer:`` (or the end). Surrounding
  whitespace and one Markdown code fence around it are tolerated; what remains must be exactly
  one strict JSON object (no repairs). When it is not, but the ``Action Input:`` line itself
  holds exactly one strict JSON object, that object is the input and the lines after it are
  ignored, as everything after the first Action block is.
- ``Thought:`` is the text between the first ``Thought:`` marker and the decisive line (it may
  be missing).
- The tool and arguments are then checked against the agent's tools and the argument schema the
  json_schema protocol uses. Anything else (no Action, no Action Input, prose instead of JSON,
  an unknown tool) is invalid, and gets one re-prompt with the error.

Classification (``Reject`` codes): no ``Action:`` or ``Final Answer:`` line goes through
``no_call`` (empty, a call written as text, invalid syntax); a missing ``Action Input:`` line or
an Action Input that is not one JSON object is ``invalid_syntax``; an empty Final Answer is
``invalid_arguments`` of ``finish``; the tool and argument checks give ``unknown_tool`` and
``invalid_arguments``.
"""

from __future__ import annotations

import re
from typing import Any

from harness.agent.policy import HistoryItem, ModelCall, Step, Turn
from harness.io.strict_json import StrictJSONError, dumps_compact, loads_strict
from harness.protocols.base import (
    ChatPolicy,
    Parsed,
    Reject,
    check_call,
    no_call,
    text_messages,
)

PROTOCOL = "react"
STOP = ["Observation:", "\nObservation"]
MARKERS = ("Thought:", "Action:", "Action Input:", "Observation", "Final Answer:")
FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)

REACT_FORMAT = (
    "Reply in exactly this format, one action per reply:\n"
    "Thought: <one short sentence>\n"
    "Action: <one tool name only, without arguments>\n"
    "Action Input: <the tool's arguments as one JSON object on this line, every argument given, null where allowed>\n"
    "Write nothing after the Action Input line: the tool's result comes back to you as an Observation. "
    'To end, use Action: finish with Action Input {"summary": "..."}, or write Final Answer: <summary>.'
)

RETRY_TEMPLATE = (
    "Your reply was not valid: {problem}. "
    "Reply again as Thought: ..., Action: <tool name>, Action Input: <one JSON object>, or Final Answer: <summary>."
)


SIGNATURE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\(")
SIGNATURE_REPAIR = "signature stripped from the Action"


def action_tool(named: str, turn: Turn) -> tuple[str, list[str]]:
    """The tool an Action line names, and the repairs that reading took (rules above)."""
    found = SIGNATURE.match(named)
    if named not in turn.agent.tools and found and found.group(1) in turn.agent.tools:
        return found.group(1), [SIGNATURE_REPAIR]
    return named, []


def parse_react(text: str, turn: Turn, repairs: list[str] | None = None) -> Step | Reject:
    """The step in a ReAct reply, or the ``Reject`` saying why it is invalid (rules above); the
    repairs taken are appended to ``repairs`` when given."""
    lines = text.strip().splitlines()
    decisive = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("Action:", "Final Answer:"))), None)
    if decisive is None:
        return no_call(text, turn, "no 'Action:' or 'Final Answer:' line")
    thought = _thought(lines[:decisive])
    first = lines[decisive].lstrip()
    if first.startswith("Final Answer:"):
        answer = "\n".join([first[len("Final Answer:") :], *lines[decisive + 1 :]]).strip()
        return (
            check_call("finish", {"summary": answer}, thought, turn)
            if answer
            else Reject("an empty Final Answer", "invalid_arguments", "finish")
        )
    tool, taken = action_tool(first[len("Action:") :].strip(), turn)
    if repairs is not None:
        repairs += taken
    arguments = _action_input(lines[decisive + 1 :])
    if isinstance(arguments, str):
        return Reject(arguments, "invalid_syntax", tool or None)
    return check_call(tool, arguments[0], thought, turn)


def _thought(lines: list[str]) -> str:
    text = "\n".join(lines)
    at = text.find("Thought:")
    return text[at + len("Thought:") :].strip() if at >= 0 else ""


def _action_input(lines: list[str]) -> tuple[dict[str, Any]] | str:
    rest = list(lines)
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest or not rest[0].lstrip().startswith("Action Input:"):
        return "'Action:' is not followed by an 'Action Input:' line"
    body = [rest[0].lstrip()[len("Action Input:") :]]
    for line in rest[1:]:
        if line.lstrip().startswith(MARKERS):
            break
        body.append(line)
    whole = _json_object("\n".join(body).strip())
    if isinstance(whole, str) and len(body) > 1:
        first_line = _json_object(body[0].strip())
        return first_line if not isinstance(first_line, str) else whole
    return whole


def _json_object(text: str) -> tuple[dict[str, Any]] | str:
    fenced = FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = loads_strict(text)
    except StrictJSONError as exc:
        return f"Action Input is not one JSON object: {exc}"
    if not isinstance(value, dict):
        return "Action Input is not a JSON object"
    return (value,)


def action_text(item: HistoryItem) -> str:
    step = item.step
    return f"Thought: {step.thought}\nAction: {step.tool}\nAction Input: {dumps_compact(step.args)}"


def observation(item: HistoryItem) -> str:
    return f"Observation ({item.status}): {dumps_compact(item.result)}"


def build_react_messages(turn: Turn) -> list[dict[str, Any]]:
    """System prompt, the task, then per step the reply as the model wrote it (the step as an
    Action block without a model) and the observation."""
    return text_messages(turn, REACT_FORMAT, observation, action_text)


class ReactPolicy(ChatPolicy):
    """Prompted ReAct: free text read by the strict parser, stop sequences before observations."""

    protocol = PROTOCOL

    def messages(self, turn: Turn) -> list[dict[str, Any]]:
        return build_react_messages(turn)

    def request(self, turn: Turn) -> dict[str, Any]:
        return {"stop": list(STOP)}

    def parse(self, answer: Any, turn: Turn) -> Parsed:
        repairs: list[str] = []
        parsed = parse_react(answer.content, turn, repairs)
        return (
            Parsed(step=parsed, repairs=repairs)
            if isinstance(parsed, Step)
            else Parsed(problem=parsed, repairs=repairs)
        )

    def retry_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        return [
            {"role": "assistant", "content": call.raw},
            {"role": "user", "content": RETRY_TEMPLATE.format(problem=call.problem)},
        ]
