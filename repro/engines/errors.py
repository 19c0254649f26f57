"""The engine's own refusal: not what the matrix pins, or on the wrong hardware. An engine that dies
or a probe that fails raise repro.containers.sandbox's errors (EngineDied, ProbeFailed)."""

from __future__ import annotations

from repro.core.errors import ReproError


class EngineRefused(ReproError):
    """The engine is not what the matrix pins (identity) or runs on the wrong hardware (accelerator)."""
