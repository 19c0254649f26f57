"""Every difference between a recorded result and transcript and the re-graded ones, field by
field and step by step."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from harness.contracts import ScenarioResult, StepEntry
from harness.regrade.report import Difference
from harness.regrade.transcript import RecordedRun, replayed_run

RESULT_FIELDS = (
    "id",
    "category",
    "level",
    "passed",
    "status",
    "failure_type",
    "engine_fault",
    "error",
    "failure_step",
    "failure_evidence",
    "partial_score",
    "failed_checks",
    "checks_total",
    "steps",
    "invalid_steps",
)
OPTIONAL_RESULT_FIELDS = ("protocol_stats",)  # recomputed from the replies, where the harness records it
STEP_FIELDS = ("step", "agent", "tool", "args", "thought", "status", "result", "replies")
END_FIELDS = ("status", "stop", "detail")


def compare(recorded: ScenarioResult, transcript: RecordedRun, regraded: ScenarioResult) -> list[Difference]:
    """Every difference between the recorded result and transcript and the re-graded ones."""
    old, new = _plain(recorded.model_dump(mode="json")), _plain(regraded.model_dump(mode="json"))
    names = [name for name in RESULT_FIELDS + OPTIONAL_RESULT_FIELDS if name in old or name in new]
    differences = [
        Difference(what=name, recorded=old.get(name), regraded=new.get(name))
        for name in names
        if old.get(name) != new.get(name)
    ]
    return differences + compare_transcripts(transcript, replayed_run(regraded))


def compare_transcripts(recorded: RecordedRun, regraded: RecordedRun) -> list[Difference]:
    differences = []
    for kind in ("trigger", "prompt", "invalid"):
        old, new = _data(getattr(recorded, kind)), _data(getattr(regraded, kind))
        if old != new:
            differences.append(Difference(what=kind, recorded=old, regraded=new))
    differences += _step_differences(recorded.steps, regraded.steps)
    return differences + _field_differences("end", _data(recorded.end), _data(regraded.end), END_FIELDS)


def _step_differences(recorded: list[StepEntry], regraded: list[StepEntry]) -> list[Difference]:
    differences = []
    for number in range(1, max(len(recorded), len(regraded)) + 1):
        old = _data(recorded[number - 1]) if number <= len(recorded) else None
        new = _data(regraded[number - 1]) if number <= len(regraded) else None
        if old is None or new is None:
            differences.append(Difference(what=f"step {number}", recorded=_call(old), regraded=_call(new)))
        else:
            differences += _field_differences(f"step {number}", old, new, STEP_FIELDS)
    return differences


def _field_differences(what: str, old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...]) -> list[Difference]:
    return [
        Difference(what=f"{what} {key}", recorded=old.get(key), regraded=new.get(key))
        for key in keys
        if old.get(key) != new.get(key)
    ]


def _data(entry: BaseModel | None) -> Any:
    """An entry as its transcript line holds it (a key left out reads as None)."""
    return None if entry is None else entry.model_dump(mode="json")


def _call(entry: dict[str, Any] | None) -> Any:
    return None if entry is None else {"tool": entry.get("tool"), "args": entry.get("args")}


def _plain(value: Any) -> Any:
    """``value`` as JSON would carry it (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value, ensure_ascii=False))
