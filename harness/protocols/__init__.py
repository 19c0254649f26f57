"""Protocols turn a turn into a request and a model reply into a step or a classified error.

- ``json_schema``: a JSON step decoded under a grammar (``response_format``).
- ``json_prompt``: the same step described in the prompt, no grammar, a fixed list of repairs.
- ``native_tools``: OpenAI ``tools``, calls from ``message.tool_calls``.
- ``react``: Thought / Action / Action Input text, stop sequences before the observation.

docs/harness.md states each protocol's parsing, repair and multi-call rules.
"""

from __future__ import annotations

from typing import Any

from harness.agent.policy import Step, Turn
from harness.protocols.base import ChatPolicy, probe_turn
from harness.protocols.json_prompt import JsonPromptPolicy
from harness.protocols.json_schema import JsonSchemaPolicy
from harness.protocols.native_tools import NativeToolsPolicy
from harness.protocols.react import ReactPolicy

__all__ = [
    "PROTOCOLS",
    "ChatPolicy",
    "JsonPromptPolicy",
    "JsonSchemaPolicy",
    "NativeToolsPolicy",
    "ReactPolicy",
    "make_policy",
    "probe_turn",
    "round_trip",
]

PROTOCOLS: dict[str, type[ChatPolicy]] = {
    "json_schema": JsonSchemaPolicy,
    "native_tools": NativeToolsPolicy,
    "react": ReactPolicy,
    "json_prompt": JsonPromptPolicy,
}


def make_policy(protocol: str, client: Any, **options: Any) -> ChatPolicy:
    """A policy for ``protocol`` over ``client``; KeyError for an unknown protocol."""
    return PROTOCOLS[protocol](client, **options)


def round_trip(
    protocol: str, client: Any, turn: Turn | None = None, *, max_tokens: int = 64, seed: int | None = None
) -> tuple[Any, Step | str]:
    """One request under ``protocol`` (no retry): the client's ChatReply and the Step or the
    reason it is invalid. Used by the latency gate. Engine failures raise EngineError."""
    return make_policy(protocol, client, max_tokens=max_tokens, seed=seed).round_trip(turn or probe_turn())
