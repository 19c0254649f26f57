"""Errors shared across the harness.

An ``EngineError`` names the failure type it stands for (``failure``): the client raises the
subclass that fits what the engine answered (``harness.clients.openai_compat`` decides; docs/diagnosis.md
states the rules), the run loop ends the run with that name as its ``stop``, and the diagnosis
reports it. None of them is ever a model failure.
"""

from __future__ import annotations

from typing import get_args

from harness.contracts import RuntimeFailure


class EngineError(Exception):
    """The inference engine failed (transport, HTTP error status, timeout, unreadable reply).

    An engine error is never counted as a model failure.
    """

    failure = "engine_error"


class EngineTimeout(EngineError):
    """The engine did not answer within the request timeout: a slow engine, told apart by type."""


class EngineUnreachable(EngineError):
    """No connection to the engine could be made (refused, no route, connect timeout)."""

    failure = "engine_unreachable"


class ModelNotLoaded(EngineError):
    """The engine answered, but the model is not there: not found, still loading, failed to load."""

    failure = "model_not_loaded"


class ContextOverflow(EngineError):
    """The engine refused the request because the prompt no longer fits the model's context."""

    failure = "context_overflow"


# The run stops an engine failure ends with, each with the error that stands for it.
ENGINE_FAILURES: dict[str, type[EngineError]] = {
    cls.failure: cls for cls in (EngineUnreachable, ModelNotLoaded, ContextOverflow, EngineError)
}


# The stops an agent runtime's failure ends a run with (harness.runtimes.base raises them, as
# EngineError subclasses, so the loop ends the run the same way).
RUNTIME_STOPS: frozenset[str] = frozenset(get_args(RuntimeFailure))


def engine_failure(stop: str, detail: str) -> EngineError:
    """The error a recorded engine or runtime stop stands for (``engine_error`` for any other name)."""
    error = ENGINE_FAILURES.get(stop, EngineError)(detail)
    if stop in RUNTIME_STOPS:
        error.failure = stop
    return error
