"""Human summaries of scenario results (the records themselves are in harness.contracts)."""

from __future__ import annotations

from collections import Counter

from harness.contracts import ProgressEvent, ScenarioResult


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


def progress_event(k: int, n: int, result: ScenarioResult) -> str:
    """The same progress as one JSON line (``--progress json``), for the orchestrator."""
    event = ProgressEvent(
        index=k, total=n, id=result.id, passed=result.passed, failure_type=result.failure_type, seconds=result.seconds
    )
    return event.model_dump_json()
