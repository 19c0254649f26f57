"""repro.report.aggregate.ValidCell finds a scenario's transcript by id (an index built once per
cell, not a walk over the cell's lines per scenario) as it always has: the first line of
transcripts.jsonl with the id, else the result line's own transcript; its sha256 once each."""

from __future__ import annotations

from harness.contracts import TranscriptLine
from repro.bundle.layout.reader import BundleReader
from repro.report.aggregate import ValidCell, transcript_sha256
from tests.fixtures.synthetic import played, write_bundle


def a_cell(tmp_path) -> ValidCell:
    run_dir = write_bundle(tmp_path / "run")
    bundle = BundleReader(run_dir)
    cell_id = bundle.cell_ids()[0]
    return ValidCell(
        run_id="run",
        record=bundle.cell(cell_id),
        results=bundle.results(cell_id),
        transcripts=bundle.transcripts(cell_id),
    )


def test_the_first_line_with_the_id_wins_and_a_result_without_a_line_gives_its_own(tmp_path):
    cell = a_cell(tmp_path)
    first, second = cell.results[0], cell.results[1]
    own = played(second.id, passes=False)
    lines = [
        TranscriptLine(id=first.id, transcript=[]),  # an empty transcript is still the line's
        TranscriptLine(id=first.id, transcript=own.transcript or []),
    ]
    results = [first, second.model_copy(update={"transcript": own.transcript})]
    cell = cell.model_copy(update={"results": results, "transcripts": lines})
    assert cell.transcript(first.id) == []
    assert cell.transcript(second.id) == own.transcript
    assert cell.transcript("no-such-scenario") is None
    assert (
        cell.transcript_sha256(second.id) == transcript_sha256(own.transcript)
        and cell.transcript_sha256("no-such-scenario") == ""
    )


def test_the_index_follows_the_cell_s_lists(tmp_path):
    """A copy of a cell with other transcripts answers from its own lists, not the original's index."""
    cell = a_cell(tmp_path)
    scenario = cell.results[0].id
    before = cell.transcript(scenario)
    assert before is not None and cell.transcript_sha256(scenario) == transcript_sha256(before)
    changed = cell.model_copy(update={"transcripts": [TranscriptLine(id=scenario, transcript=[])]})
    assert changed.transcript(scenario) == [] and changed.transcript_sha256(scenario) == transcript_sha256([])
    assert cell.transcript(scenario) == before
