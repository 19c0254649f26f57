"""Result records (one JSON line per scenario) and run summaries."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict


class FailedCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    type: str
    expected: Any
    found: Any


class StepTiming(BaseModel):
    """One request to the engine: the server's own ``timings`` and the token counts."""

    model_config = ConfigDict(extra="forbid")

    step: int
    attempt: int
    seconds: float
    tokens_in: int
    tokens_out: int
    timings: dict[str, Any] | None = None


class ScenarioResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    category: str
    level: int | None = None
    passed: bool
    status: str  # done | waiting | failed
    failure_type: str | None
    engine_fault: bool
    error: str | None = None
    failed_checks: list[FailedCheck]
    checks_total: int
    steps: int
    seconds: float
    tokens_in: int
    tokens_out: int
    engine_timings: list[StepTiming]
    invalid_steps: int
    transcript: list[dict[str, Any]] | None = None


class TranscriptLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    transcript: list[dict[str, Any]]


def summary_lines(results: list[ScenarioResult]) -> list[str]:
    """Passed counts per category, then ``Overall: P/N``."""
    totals: Counter[str] = Counter(r.category for r in results)
    passed: Counter[str] = Counter(r.category for r in results if r.passed)
    width = max((len(c) for c in totals), default=0)
    lines = [f"{category:<{width}}  {passed[category]}/{total}" for category, total in sorted(totals.items())]
    faults = sum(r.engine_fault for r in results)
    if faults:
        lines.append(f"Engine faults (not counted as model failures): {faults}")
    lines.append(f"Overall: {sum(passed.values())}/{len(results)}")
    return lines


def progress_line(k: int, n: int, result: ScenarioResult) -> str:
    verdict = "PASS" if result.passed else f"FAIL {result.failure_type}"
    return f"[{k}/{n}] {result.id} {verdict} ({result.seconds:.1f}s)"
