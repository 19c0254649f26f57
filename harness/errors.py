"""Errors shared across the harness."""

from __future__ import annotations


class EngineError(Exception):
    """The inference engine failed (transport, HTTP error status, timeout, unreadable reply).

    An engine error is never counted as a model failure.
    """
