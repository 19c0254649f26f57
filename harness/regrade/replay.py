"""The recorded run played as the model: ``TranscriptPolicy`` gives the loop the recorded steps
(each raw reply read again by the cell's protocol, served by ``ReplayClient``), then the
recorded ending."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from harness.agent.loop import ENGINE_STOPS, INVALID_REPLY
from harness.agent.policy import ModelCall, PolicyReply, Step, Turn
from harness.clients.errors import EngineError, engine_failure
from harness.clients.openai_compat import ChatReply, ToolCall
from harness.contracts import RecordedReply
from harness.protocols import make_policy
from harness.regrade.transcript import RecordedRun

DEFAULT_MAX_TOKENS = 512  # the harness's default; a check passes the cell's decoding


class TranscriptOverrun(EngineError):
    """The loop asked for a step the transcript does not have."""


class TranscriptPolicy:
    """Plays a recorded transcript as the model: its steps in order, then its ending.

    With the cell's ``protocol``, each recorded raw reply is read again by that protocol's own
    policy (``harness.protocols``), served by ``ReplayClient`` as the engine's answer: the step
    the loop executes, the thought, each reply's validity, problem, reject code and tool, the
    repairs and ignored calls, and the first prompt are all derived from the raw replies and the
    scenario, never taken from the record. Without one (a transcript of a scripted policy), the
    recorded steps are played as they are."""

    def __init__(
        self,
        recorded: RecordedRun,
        protocol: str | None = None,
        *,
        parse: bool = False,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        retries: int = 1,
    ) -> None:
        self.recorded = recorded
        self.protocol = protocol  # as recorded, so the protocol figures are recomputed too
        self.taken = 0
        self.overrun = False
        self.timed_out = False
        self.client = ReplayClient(protocol or "")
        chat = (
            make_policy(protocol, self.client, max_tokens=max_tokens, retries=retries) if parse and protocol else None
        )
        self.chat = chat

    def next_step(self, turn: Turn) -> PolicyReply:
        if self.taken < len(self.recorded.steps):
            entry = self.recorded.steps[self.taken]
            self.taken += 1
            if self.chat is not None:
                return self._parsed(entry.replies, turn)
            prompt = self._recorded_prompt(turn)
            return PolicyReply(
                step=Step(entry.tool, copy.deepcopy(entry.args), entry.thought),
                calls=_calls(entry.replies),
                prompt=prompt,
            )
        return self._ending(turn)

    def _recorded_prompt(self, turn: Turn) -> list[dict[str, Any]] | None:
        return copy.deepcopy(self.recorded.prompt.messages) if self.recorded.prompt and turn.step_number == 1 else None

    def _parsed(self, replies: list[RecordedReply] | None, turn: Turn) -> PolicyReply:
        """The protocol's own reading of the recorded replies of one turn."""
        assert self.chat is not None
        self.client.serve(replies or [], turn.step_number)
        return self.chat.next_step(turn)

    def _ending(self, turn: Turn) -> PolicyReply:
        end = self.recorded.end
        if end.stop in (INVALID_REPLY, "timeout"):  # a timeout: the loop stops as for an invalid reply, scored after
            self.timed_out = end.stop == "timeout"
            invalid = self.recorded.invalid.replies if self.recorded.invalid else None
            if self.chat is None:
                return PolicyReply(invalid=end.detail, calls=_calls(invalid), prompt=self._recorded_prompt(turn))
            reply = self._parsed(invalid, turn)
            if self.timed_out:  # a late reply ends the run whatever it says
                return PolicyReply(invalid=end.detail, calls=reply.calls, prompt=reply.prompt)
            return reply
        if end.stop in ENGINE_STOPS:
            raise engine_failure(end.stop, end.detail or "")
        self.overrun = True
        raise TranscriptOverrun(f"the run needs step {turn.step_number}; the transcript has {len(self.recorded.steps)}")


class ReplayClient:
    """A chat client whose answers are one turn's recorded replies, in order; asking for more
    than the turn recorded is a ``TranscriptOverrun``."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.pending: list[RecordedReply] = []
        self.step = 0
        self.short: str | None = None  # why the replay ran out of replies, when it did

    def serve(self, replies: list[RecordedReply], step: int) -> None:
        self.pending, self.step = list(replies), step

    def chat(self, messages: list[dict[str, Any]], **request: Any) -> ChatReply:
        if not self.pending:
            self.short = (
                f"step {self.step}: the {self.protocol} protocol asks for another reply, the transcript has none"
            )
            raise TranscriptOverrun(self.short)
        return recorded_answer(self.pending.pop(0), self.protocol)


def recorded_answer(reply: RecordedReply, protocol: str) -> ChatReply:
    """A recorded reply as the engine's answer: its text and (native_tools) calls, cut at the
    token limit when it was recorded as truncated."""
    content, calls = native_parts(reply.content) if protocol == "native_tools" else (reply.content, [])
    finish = "length" if reply.truncated else ("tool_calls" if calls else "stop")
    return ChatReply(content=content, finish_reason=finish, tool_calls=calls)


def native_parts(raw: str) -> tuple[str, list[ToolCall]]:
    """native_tools records a reply with calls as ``{"content", "tool_calls": [{name, arguments}]}``
    (harness.protocols.native_tools.recorded_reply) and one without as its text."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw, []
    if not (isinstance(value, dict) and set(value) == {"content", "tool_calls"} and isinstance(value["content"], str)):
        return raw, []
    calls = value["tool_calls"]
    if not (
        isinstance(calls, list)
        and calls
        and all(isinstance(c, dict) and set(c) == {"name", "arguments"} for c in calls)
    ):
        return raw, []
    if not all(isinstance(c["name"], str) and isinstance(c["arguments"], str) for c in calls):
        return raw, []
    return value["content"], [ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls]


# ModelCall fields a transcript may carry (never the measured ones: those are not in transcripts).
MODEL_CALL_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelCall)) - {
    "raw",
    "seconds",
    "tokens_in",
    "tokens_out",
    "timings",
}


def _calls(replies: list[RecordedReply] | None) -> list[ModelCall]:
    """The recorded replies as the policy returned them. A recorded key that is not a
    ``ModelCall`` field is dropped here, so the rebuilt transcript lacks it: a difference."""
    calls = []
    for reply in replies or []:
        recorded = reply.model_dump(exclude={"content"})
        known = {key: copy.deepcopy(value) for key, value in recorded.items() if key in MODEL_CALL_FIELDS}
        calls.append(ModelCall(raw=reply.content, **known))
    return calls
