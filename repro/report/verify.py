"""`repro verify`: a rerun compared with published numbers, row by row and scenario by scenario.

Published numbers are the `results.json` that `repro paper render` writes beside the tables. A
row is reproduced when the rerun has a VALID row with the same model bytes, engine identity,
protocol and suite, and every scenario has the same outcome; otherwise every difference is named.

Beside the pass flags, each scenario's transcript is compared by its canonical sha256 ("identical
transcripts k of n"). When both bundles are at hand (the published side given as a bundle, not
only its results.json), each differing transcript is named with its first differing step. With
`require_identical`, a differing transcript makes the row differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness.contracts import ExternalStepEntry, StepEntry, TranscriptEntry
from repro.core.errors import BadInput
from repro.core.yamlsource import read_model_bounded
from repro.report.aggregate import PaperTables, TableRow, ValidCell, collect_with_cells

Status = Literal["reproduced", "differs", "missing", "extra"]


Cells = dict[str, list[ValidCell]]


class TranscriptIdentity(BaseModel):
    """Scenario runs (scenario x repeat) recorded on both sides, and how many are byte-identical."""

    identical: int = 0
    compared: int = 0
    unrecorded: int = 0  # a transcript missing on either side (e.g. an older results.json)
    differing: list[str] = []  # one line per differing transcript

    def summary(self) -> str:
        if not self.compared:
            return "transcripts not recorded on both sides"
        unrecorded = f", {self.unrecorded} not recorded" if self.unrecorded else ""
        return f"identical transcripts {self.identical} of {self.compared}{unrecorded}"


class RowComparison(BaseModel):
    key: str
    status: Status
    published: str | None = None
    rerun: str | None = None
    differences: list[str] = []
    transcripts: TranscriptIdentity | None = None


def load_side(path: Path) -> tuple[PaperTables, Cells]:
    """A results.json (numbers only) or a bundle or results folder (numbers and transcripts)."""
    if path.is_dir():
        return collect_with_cells([path])
    return load_published(path), {}


def load_published(path: Path) -> PaperTables:
    if path.is_dir():
        raise BadInput(f"{path}: a folder; give the results.json written by repro paper render")
    tables: PaperTables = read_model_bounded(path, PaperTables, "a results.json written by repro paper render")
    return tables


def compare(
    published: PaperTables,
    rerun: PaperTables,
    published_cells: Cells | None = None,
    rerun_cells: Cells | None = None,
    require_identical: bool = False,
) -> list[RowComparison]:
    reruns = {row_identity(row): row for row in rerun.rows}
    comparisons = []
    for row in published.rows:
        again = reruns.pop(row_identity(row), None)
        if again is None:
            comparisons.append(
                RowComparison(key=row.key, status="missing", published=_score(row), differences=[f"no VALID rerun of this row on {hardware_label(row)}"])
            )
            continue
        differences = row_differences(row, again)
        identity = transcript_identity(row, again, (published_cells or {}).get(row.key, []), (rerun_cells or {}).get(row.key, []))
        if require_identical:
            differences += identity.differing
        status: Status = "differs" if differences else "reproduced"
        comparisons.append(RowComparison(key=row.key, status=status, published=_score(row), rerun=_score(again), differences=differences, transcripts=identity))
    for row in reruns.values():
        comparisons.append(
            RowComparison(key=row.key, status="extra", rerun=_score(row), differences=[f"not in the published numbers on {hardware_label(row)}"])
        )
    return comparisons


def row_identity(row: TableRow) -> tuple[str, ...]:
    """What a row is matched on: its key and the hardware it ran on (profile, accelerator,
    compute capability, driver), so rows of different accelerators never match (a gpu-l4
    rerun does not reproduce a gpu-t4 row, though both run 4 threads)."""
    hardware = row.hardware
    if hardware is None:
        return (row.key, row.profile)
    return (row.key, row.profile, hardware.accelerator, hardware.compute_capability or "", hardware.driver_version or "")


def hardware_label(row: TableRow) -> str:
    return f"profile {row.profile or 'unknown'}" + (f" ({row.hardware.label()})" if row.hardware else "")


def hardware_differences(published: TableRow, rerun: TableRow) -> list[str]:
    """What differs of the GPU beside the identity (memory, MIG slice), named before outcomes."""
    before, after = published.hardware, rerun.hardware
    if before is None or after is None:
        return []
    return [
        f"GPU {what} differs: {getattr(before, field)} published, {getattr(after, field)} rerun"
        for field, what in (("memory_mib", "memory (MiB)"), ("mig_profile", "MIG slice"))
        if getattr(before, field) != getattr(after, field)
    ]


def row_differences(published: TableRow, rerun: TableRow) -> list[str]:
    differences = hardware_differences(published, rerun) + execution_differences(published, rerun)
    if published.model_sha256 != rerun.model_sha256:
        differences.append(f"model bytes differ: sha256 {published.model_sha256[:12]} published, {rerun.model_sha256[:12]} rerun")
    if published.engine_identity != rerun.engine_identity:
        differences.append(f"engine identity differs: {published.engine_identity} published, {rerun.engine_identity} rerun")
    differences += template_differences(published, rerun)
    if (published.passed, published.total) != (rerun.passed, rerun.total):
        differences.append(f"passed {published.passed}/{published.total} published, {rerun.passed}/{rerun.total} rerun")
    for scenario in sorted(set(published.scenarios) | set(rerun.scenarios)):
        before, after = published.scenarios.get(scenario), rerun.scenarios.get(scenario)
        if before is None or after is None:
            differences.append(f"scenario {scenario}: only in the {'rerun' if before is None else 'published numbers'}")
        elif before != after:
            differences.append(f"scenario {scenario}: {_outcomes(before)} published, {_outcomes(after)} rerun")
    return differences


def template_differences(published: TableRow, rerun: TableRow) -> list[str]:
    """The chat template the model was shown the task through (where both sides recorded it)."""
    before, after = published.chat_template, rerun.chat_template
    if before is None or after is None or (before.source, before.sha256) == (after.source, after.sha256):
        return []
    return [f"chat template differs: {before.source} {str(before.sha256)[:12]} published, {after.source} {str(after.sha256)[:12]} rerun"]


def execution_differences(published: TableRow, rerun: TableRow) -> list[str]:
    """Threads per engine, slots and prompt cache, named before any transcript is compared: a
    mismatch here explains differing transcripts (where both sides recorded them)."""
    before, after = published.execution, rerun.execution
    if before is None or after is None:
        return []
    return [
        f"{what} differ: {getattr(before, field)} published, {getattr(after, field)} rerun"
        for field, what in (("threads", "threads per engine"), ("slots", "engine slots"), ("cache_prompt", "prompt-cache settings"))
        if getattr(before, field) != getattr(after, field)
    ]


def transcript_identity(published: TableRow, rerun: TableRow, published_cells: list[ValidCell], rerun_cells: list[ValidCell]) -> TranscriptIdentity:
    """Compare transcript hashes per scenario and repeat; name the first differing step where both bundles are at hand."""
    identity = TranscriptIdentity()
    for scenario in sorted(set(published.transcripts) & set(rerun.transcripts)):
        for repeat, (before, after) in enumerate(zip(published.transcripts[scenario], rerun.transcripts[scenario], strict=False)):
            if not before or not after:
                identity.unrecorded += 1
            elif before == after:
                identity.identical += 1
            else:
                where = _first_difference_in(published_cells, rerun_cells, scenario, repeat) or f"sha256 {before[:12]} published, {after[:12]} rerun"
                identity.differing.append(f"scenario {scenario} repeat {repeat + 1}: transcript differs ({where})")
    identity.compared = identity.identical + len(identity.differing)
    return identity


def _first_difference_in(published_cells: list[ValidCell], rerun_cells: list[ValidCell], scenario: str, repeat: int) -> str | None:
    if repeat >= len(published_cells) or repeat >= len(rerun_cells):
        return None
    before, after = published_cells[repeat].transcript(scenario), rerun_cells[repeat].transcript(scenario)
    if before is None or after is None:
        return None
    return first_difference(before, after)


def first_difference(before: list[TranscriptEntry], after: list[TranscriptEntry]) -> str | None:
    """Where two transcripts first part: "first differs at step 3 (args)", or None when equal."""
    for index, (a, b) in enumerate(zip(before, after, strict=False)):
        if a != b:
            return f"first differs at {_entry_name(a, index)} ({', '.join(_differing_keys(a, b))})"
    if len(before) == len(after):
        return None
    longer, side = (before, "published") if len(before) > len(after) else (after, "rerun")
    index = min(len(before), len(after))
    return f"first differs at {_entry_name(longer[index], index)} (only in the {side} transcript)"


def _differing_keys(a: TranscriptEntry, b: TranscriptEntry) -> list[str]:
    """The keys whose written values differ (a key one entry leaves out reads as None)."""
    written_a, written_b = a.model_dump(mode="json"), b.model_dump(mode="json")
    return sorted(k for k in set(written_a) | set(written_b) if written_a.get(k) != written_b.get(k))


def _entry_name(entry: TranscriptEntry, index: int) -> str:
    if isinstance(entry, StepEntry | ExternalStepEntry):
        return f"step {entry.step}"
    return f"entry {index + 1} ({entry.kind})"


def _score(row: TableRow) -> str:
    return f"{row.passed}/{row.total}"


def _outcomes(values: list[bool]) -> str:
    return ", ".join("pass" if value else "fail" for value in values)
