"""Errors shared across the harness."""

from __future__ import annotations


class EngineError(Exception):
    """The inference engine failed (transport, HTTP error status, timeout, unreadable reply).

    An engine error is never counted as a model failure.
    """


class EngineTimeout(EngineError):
    """The engine did not answer within the request timeout: a slow engine, told apart by type."""
