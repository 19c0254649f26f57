"""A scenario's transcript as chat turns: what the model was sent, what it replied, what each
tool answered, and where the scenario failed.

Both readers of a transcript that a person looks at use this one reading: report.html draws the
turns as a conversation, and `repro export inspect` writes them as inspect_ai chat messages. Only
what the transcript holds becomes a turn: the harness records the messages of the first request
(the system prompt and the task) and, after that, every reply and tool result, not the prompts
it rebuilt for later turns, so no later prompt is shown (or invented).

An external suite's transcript (ToolCallBench) names calls and results but not its messages;
`external_turns` reads that suite's own messages (its raw logs, kept in the bundle) instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from harness.contracts import (
    EndEntry,
    ExternalStepEntry,
    InvalidEntry,
    PromptEntry,
    RecordedReply,
    StepEntry,
    TranscriptEntry,
    TriggerEntry,
)

Role = Literal["system", "user", "assistant", "tool"]
MAX_TURN_CHARS = 20_000  # one turn's text, cut beyond (a page, not a dump)


class ToolCallOf(BaseModel):
    """The call a reply made, as the harness executed it."""

    id: str
    tool: str
    args: Any


class Turn(BaseModel):
    """One message of the conversation. `step` is the harness's step number (the final invalid
    turn is the step after the last); `problem` says why a reply was not a valid step; `failing`
    marks the turn the scenario failed at (its result's failure_step)."""

    role: Role
    text: str
    step: int | None = None
    call: ToolCallOf | None = None  # an assistant turn that made a call
    call_id: str | None = None  # a tool turn: the call it answers
    tool: str | None = None  # a tool turn: the tool that answered
    status: str | None = None  # a tool turn: the step's status (ok, error, ...)
    problem: str | None = None
    reject: str | None = None
    truncated: bool = False
    failing: bool = False


def as_text(value: Any) -> str:
    """A message's content or a tool's result as text: text as is, anything else as indented JSON."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_TURN_CHARS else text[:MAX_TURN_CHARS] + "\n... (cut)"


def transcript_turns(transcript: Sequence[TranscriptEntry], failure_step: int | None = None) -> list[Turn]:
    """The turns of one of our transcripts (or of an external one, from its steps), in order."""
    turns: list[Turn] = []
    prompted = any(isinstance(entry, PromptEntry) for entry in transcript)
    last_step = 0
    for entry in transcript:
        if isinstance(entry, TriggerEntry) and not prompted:
            turns.append(Turn(role="user", text=as_text(entry.text)))
        elif isinstance(entry, PromptEntry):
            turns += [prompt_turn(message) for message in entry.messages]
        elif isinstance(entry, StepEntry):
            last_step = entry.step
            turns += step_turns(entry)
        elif isinstance(entry, ExternalStepEntry):
            last_step = entry.step
            call = ToolCallOf(id=f"call-{entry.step}", tool=entry.tool, args=entry.args)
            turns.append(Turn(role="assistant", text="", step=entry.step, call=call))
            turns.append(
                Turn(
                    role="tool",
                    text=as_text(entry.result or ""),
                    step=entry.step,
                    call_id=call.id,
                    tool=entry.tool,
                    status=entry.status,
                )
            )
        elif isinstance(entry, InvalidEntry):
            turns += [reply_turn(reply, last_step + 1) for reply in entry.replies]
    return mark_failing(turns, failure_step)


def prompt_turn(message: dict[str, Any]) -> Turn:
    role = message.get("role")
    return Turn(
        role=role if role in ("system", "user", "assistant", "tool") else "user",
        text=as_text(message.get("content", "")),
    )


def step_turns(entry: StepEntry) -> list[Turn]:
    """A step's replies (the rejected ones first, as the model sent them), the call made by its
    last reply, and the tool's answer."""
    call = ToolCallOf(id=f"call-{entry.step}", tool=entry.tool, args=entry.args)
    replies = [reply_turn(reply, entry.step) for reply in entry.replies] or [
        Turn(role="assistant", text=as_text(entry.thought), step=entry.step)
    ]
    replies[-1] = replies[-1].model_copy(update={"call": call})
    return [
        *replies,
        Turn(
            role="tool",
            text=as_text(entry.result),
            step=entry.step,
            call_id=call.id,
            tool=entry.tool,
            status=entry.status,
        ),
    ]


def reply_turn(reply: RecordedReply, step: int) -> Turn:
    return Turn(
        role="assistant",
        text=as_text(reply.content),
        step=step,
        problem=reply.problem,
        reject=reply.reject,
        truncated=reply.truncated,
    )


def mark_failing(turns: list[Turn], failure_step: int | None) -> list[Turn]:
    """The turns of the failure step are marked: its replies and its tool's answer."""
    if failure_step is None:
        return turns
    return [turn.model_copy(update={"failing": True}) if turn.step == failure_step else turn for turn in turns]


def final_answer(transcript: Sequence[TranscriptEntry]) -> str | None:
    """The model's final answer: the summary it finished with (our harness), or the final reply
    an external suite recorded as its end (ToolCallBench); None when there is none (our end's
    detail is the harness's, never the model's)."""
    finished = [e for e in transcript if isinstance(e, StepEntry) and e.tool == "finish"]
    if finished:
        summary = finished[-1].args.get("summary")
        return summary if isinstance(summary, str) else None
    ours = any(isinstance(e, PromptEntry | StepEntry | InvalidEntry) for e in transcript)
    ends = [e for e in transcript if isinstance(e, EndEntry)]
    return ends[-1].detail if ends and not ours else None


def external_turns(messages: Sequence[dict[str, Any]]) -> list[Turn]:
    """An external suite's own messages (OpenAI chat format, as its logs hold them) as turns."""
    turns = []
    for number, message in enumerate(messages):
        role = message.get("role")
        calls = message.get("tool_calls") or []
        call = None
        if role == "assistant" and isinstance(calls, list) and calls and isinstance(calls[0], dict):
            function = calls[0].get("function") or {}
            call = ToolCallOf(
                id=str(calls[0].get("id") or f"call-{number}"),
                tool=str(function.get("name", "")),
                args=parsed_arguments(function.get("arguments")),
            )
        turns.append(
            Turn(
                role=role if role in ("system", "user", "assistant", "tool") else "user",
                text=as_text(message.get("content") or ""),
                call=call,
                call_id=str(message["tool_call_id"]) if role == "tool" and message.get("tool_call_id") else None,
                tool=str(message["name"]) if role == "tool" and message.get("name") else None,
            )
        )
    return turns


def parsed_arguments(arguments: Any) -> Any:
    """A call's arguments: the JSON text an OpenAI-format message holds, parsed when it parses."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments
