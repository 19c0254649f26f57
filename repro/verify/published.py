"""What `repro verify` reads of published numbers, and how it names differing transcripts.

Published numbers are the `results.json` that `repro paper render` writes beside the tables, or
the published bundle itself; repro.verify.own_claims states their rows as claims and
repro.verify.claims verifies them. Transcripts are compared by their canonical sha256 ("identical
transcripts k of n"); when both bundles are at hand, a differing transcript is named by the step
where it first differs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from harness.contracts import ExternalStepEntry, StepEntry, TranscriptEntry
from repro.bundle.setup import SetupRecord
from repro.core.errors import BadInput
from repro.core.yamlsource import read_model_bounded
from repro.report.aggregate import ValidCell
from repro.report.tables import PaperTables

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


def load_published(path: Path) -> PaperTables:
    if path.is_dir():
        raise BadInput(f"{path}: a folder; give the results.json written by repro paper render")
    tables: PaperTables = read_model_bounded(path, PaperTables, "a results.json written by repro paper render")
    return tables


def first_difference_in(
    published_cells: list[ValidCell], rerun_cells: list[ValidCell], scenario: str, repeat: int
) -> str | None:
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


def first_step_finder(
    published_cells: Cells, rerun_cells: Cells, published_keys: dict[str, str]
) -> Callable[[str, str, str, int], str | None]:
    """With both bundles at hand (their cells by row key, from collect_with_cells): where a
    differing transcript first parts from the published one."""

    def where(claim: str, rerun_key: str, scenario: str, repeat: int) -> str | None:
        before, after = published_cells.get(published_keys.get(claim, ""), []), rerun_cells.get(rerun_key, [])
        return first_difference_in(before, after, scenario, repeat)

    return where


def stated_setups(published: PaperTables, published_keys: dict[str, str]) -> dict[str, SetupRecord]:
    """With the published bundle at hand: each claim's setup as its published row's cells record
    it (repro.bundle.setup), the suite's bytes and the scenarios of its parts aside (a claim's
    scenario set is compared by its ids, NOT RERUN where it is another)."""
    rows = {row.key: row.setup for row in published.rows if row.setup is not None}
    return {
        claim: setup.without_part().model_copy(update={"suite_sha256": None})
        for claim, key in published_keys.items()
        if (setup := rows.get(key)) is not None
    }


def host_environments(published: PaperTables, rerun: PaperTables) -> str | None:
    """Where the two sides' host environments came from other locks (locks/, scripts/lock): one
    line of information, not an input of the setup (the engine, model and harness are)."""
    sides = [sorted({run.host_lock or "not recorded" for run in t.setup.runs}) for t in (published, rerun)]
    if sides[0] == sides[1]:
        return None
    return f"repro's host environment: published from {', '.join(sides[0])}; rerun from {', '.join(sides[1])}"
