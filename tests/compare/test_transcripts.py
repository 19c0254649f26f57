"""Transcript identity: canonical hashes in the rows, and verify naming the first differing step."""

from __future__ import annotations

import json

from harness.contracts import TranscriptLine
from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import canonical_json, collect, collect_with_cells, transcript_sha256
from repro.report.paper import render
from repro.report.verify import compare, first_difference, load_published
from tests.compare.bundles import step, transcript, write_bundle
from tests.fixtures.synthetic import CANARY

SAME = transcript(step(1), step(2, "write_file", {"path": "notes.md", "text": "hi"}))
OTHER = transcript(step(1), step(2, "write_file", {"path": "notes.md", "text": "HI"}))


def same_everywhere(cell):
    return [("notes-001", "notes", True, None, SAME), ("notes-002", "notes", False, "wrong_outcome", SAME)]


def differs_at_step_two(cell):
    return [("notes-001", "notes", True, None, SAME), ("notes-002", "notes", False, "wrong_outcome", OTHER)]


def test_canonical_hash_ignores_key_order_and_whitespace():
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    line = json.loads(TranscriptLine(id="notes-001", transcript=SAME).model_dump_json())
    reordered = json.dumps({"transcript": [dict(reversed(entry.items())) for entry in line["transcript"]], "id": "notes-001"}, indent=1)
    assert transcript_sha256(TranscriptLine.model_validate_json(reordered).transcript) == transcript_sha256(SAME)
    assert transcript_sha256(None) == "" and transcript_sha256([]) != ""


def test_rows_carry_one_hash_per_scenario_and_repeat(tmp_path):
    tables = collect([write_bundle(tmp_path / "run", same_everywhere, repeats=2)], Redactor(CANARY))
    row = tables.rows[0]
    assert row.transcripts["notes-001"] == [transcript_sha256(SAME)] * 2
    assert row.identical_across_repeats == 2 and row.failure_types == {"wrong_outcome": 2}


def test_first_difference_names_the_step_and_field():
    assert first_difference(SAME, OTHER) == "first differs at step 2 (args)"
    assert first_difference(SAME, SAME) is None
    assert first_difference(SAME, SAME[:-1]) == "first differs at entry 4 (end) (only in the published transcript)"


def test_verify_between_bundles_names_the_first_differing_step(tmp_path):
    published = collect_with_cells([write_bundle(tmp_path / "paper-run", same_everywhere)], Redactor(CANARY))
    rerun = collect_with_cells([write_bundle(tmp_path / "rerun", differs_at_step_two)], Redactor(CANARY))
    first = compare(*published[:1], *rerun[:1], published[1], rerun[1])[0]
    assert first.status == "reproduced"  # same pass flags
    assert first.transcripts.summary() == "identical transcripts 1 of 2"
    assert first.transcripts.differing == ["scenario notes-002 repeat 1: transcript differs (first differs at step 2 (args))"]
    strict = compare(published[0], rerun[0], published[1], rerun[1], require_identical=True)[0]
    assert strict.status == "differs" and strict.differences == first.transcripts.differing


def test_verify_against_results_json_compares_hashes(tmp_path, capsys):
    render(collect([write_bundle(tmp_path / "paper-run", same_everywhere)], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    rerun = write_bundle(tmp_path / "rerun", differs_at_step_two)
    item = compare(load_published(path), collect([rerun], Redactor(CANARY)))[0]
    assert item.transcripts.differing[0].startswith("scenario notes-002 repeat 1: transcript differs (sha256 ")
    assert main(["verify", str(rerun), "--published", str(path)]) == 0
    out = capsys.readouterr().out
    assert "identical transcripts 1 of 2" in out and "transcript differs" in out
    assert main(["verify", str(rerun), "--published", str(path), "--identical-transcripts"]) == 1


def test_verify_with_the_published_bundle_and_an_old_results_json(tmp_path, capsys):
    paper_run = write_bundle(tmp_path / "paper-run", same_everywhere)
    rerun = write_bundle(tmp_path / "rerun", differs_at_step_two)
    assert main(["verify", str(rerun), "--published", str(paper_run)]) == 0
    assert "first differs at step 2 (args)" in capsys.readouterr().out
    render(collect([paper_run], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    data = json.loads(path.read_text())
    for row in data["rows"]:
        del row["transcripts"], row["failure_types"]
    path.write_text(json.dumps(data))
    item = compare(load_published(path), collect([rerun], Redactor(CANARY)))[0]
    assert item.status == "reproduced" and item.transcripts.summary() == "transcripts not recorded on both sides"
