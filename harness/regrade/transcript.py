"""A recorded transcript read as untrusted data: bounded in size and nesting, every entry
validated, the entries in order (trigger, an optional prompt, the steps, an optional invalid
entry, end), split by kind as a ``RecordedRun``."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.contracts import (
    ENTRY,
    EndEntry,
    ExternalStepEntry,
    InvalidEntry,
    PromptEntry,
    ScenarioResult,
    StepEntry,
    TranscriptEntry,
    TriggerEntry,
)

MAX_TRANSCRIPT_CHARS = 4_000_000  # a 50-step transcript of a real run is well under 1 MB
MAX_NESTING = 32
EXTRA_ENTRIES = 4  # trigger, prompt, invalid, end besides the steps
ENTRY_ORDER = re.compile(r"tp?s*i?e")


class RecordedRun(BaseModel):
    """A transcript, split by entry kind."""

    trigger: TriggerEntry
    prompt: PromptEntry | None = None
    steps: list[StepEntry] = []
    invalid: InvalidEntry | None = None
    end: EndEntry

    @classmethod
    def of(cls, entries: list[TranscriptEntry]) -> RecordedRun:
        """The entries by kind (validated and in order, as ``parse_transcript`` checks)."""
        steps = [e for e in entries if isinstance(e, StepEntry)]
        return cls(steps=steps, **{e.kind: e for e in entries if not isinstance(e, StepEntry)})


class TranscriptError(ValueError):
    """A transcript that cannot be replayed; the message is one line."""


def parse_transcript(transcript: Any, max_steps: int) -> RecordedRun:
    """The transcript (entries, or the JSON data of entries) as a ``RecordedRun``, or
    ``TranscriptError`` saying what is wrong with it. Entries are validated again from their data."""
    if not isinstance(transcript, list):
        raise TranscriptError("the transcript is not a list of entries")
    if len(transcript) > max_steps + EXTRA_ENTRIES:
        raise TranscriptError(f"{len(transcript)} entries, more than {max_steps} steps allow")
    data = [entry.model_dump(mode="json") if isinstance(entry, BaseModel) else entry for entry in transcript]
    _check_size(data)
    entries = [_entry(i, raw) for i, raw in enumerate(data)]
    _check_order([e.kind for e in entries])
    return RecordedRun.of(entries)


def _check_size(transcript: list[Any]) -> None:
    if _nesting(transcript) > MAX_NESTING:
        raise TranscriptError(f"nested deeper than {MAX_NESTING} levels")
    try:
        size = len(json.dumps(transcript, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"not JSON data: {exc}") from None
    if size > MAX_TRANSCRIPT_CHARS:
        raise TranscriptError(f"{size} characters, more than the limit of {MAX_TRANSCRIPT_CHARS}")


def _nesting(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (iteratively: no recursion limit to hit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            return depth
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _entry(index: int, raw: Any) -> TranscriptEntry:
    try:
        entry: TranscriptEntry = ENTRY.validate_python(raw)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        raise TranscriptError(f"entry {index} {where}: {error['msg']}") from None
    if isinstance(entry, ExternalStepEntry):
        raise TranscriptError(f"entry {index}: a step of an external suite's run, which the harness does not replay")
    return entry


def _check_order(kinds: list[str]) -> None:
    """trigger, an optional prompt, the steps, an optional invalid entry, end: nothing else."""
    letters = "".join(kind[0] for kind in kinds)  # trigger, prompt, step, invalid, end
    if not ENTRY_ORDER.fullmatch(letters):
        shown = ", ".join(kinds[:6]) + (", ..." if len(kinds) > 6 else "")
        raise TranscriptError(f"entries out of order ({shown}): expected trigger, prompt, steps, invalid, end")


def replayed_run(result: ScenarioResult) -> RecordedRun:
    """The replay's own transcript by kind (``run_scenario`` always records one)."""
    return RecordedRun.of(result.transcript or [])
