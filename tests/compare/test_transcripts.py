"""Transcript identity: canonical hashes in the rows, and verify naming the first differing step."""

from __future__ import annotations

import json

from harness.contracts import TranscriptLine
from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import canonical_json, collect, transcript_sha256
from repro.report.paper import render
from repro.verify.published import first_difference
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
    reordered = json.dumps(
        {"transcript": [dict(reversed(entry.items())) for entry in line["transcript"]], "id": "notes-001"}, indent=1
    )
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


def verify_json(capsys, rerun, published, *extra):
    capsys.readouterr()
    code = main(["verify", str(rerun), "--published", str(published), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)["verdicts"][0]


def test_verify_between_bundles_names_the_first_differing_step(tmp_path, capsys):
    """Same pass flags, one transcript differs: on the exact cpu setup that is DIFFERENT (identity
    was promised), and with both bundles at hand the first differing step is named."""
    paper_run = write_bundle(tmp_path / "paper-run", same_everywhere)
    rerun = write_bundle(tmp_path / "rerun", differs_at_step_two)
    code, first = verify_json(capsys, rerun, paper_run)
    assert code == 1 and first["verdict"] == "DIFFERENT" and first["judgement"]["test"] == "exact"
    assert first["transcripts"]["identical"] == 1 and first["transcripts"]["compared"] == 2
    assert first["transcripts"]["differing"] == [
        "scenario notes-002 repeat 1: transcript differs (first differs at step 2 (args))"
    ]


def test_verify_against_results_json_compares_hashes(tmp_path, capsys):
    render(collect([write_bundle(tmp_path / "paper-run", same_everywhere)], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    rerun = write_bundle(tmp_path / "rerun", differs_at_step_two)
    code, item = verify_json(capsys, rerun, path)
    assert code == 1 and item["transcripts"]["differing"][0].startswith(
        "scenario notes-002 repeat 1: transcript differs (sha256 "
    )
    data = json.loads(path.read_text())
    for row in data["rows"]:
        row["execution"]["threads"] = None  # threads not recorded: the setup is not exact, the tolerance applies
    path.write_text(json.dumps(data))
    code, item = verify_json(capsys, rerun, path)
    assert code == 0 and item["verdict"] == "CONSISTENT"
    assert main(["verify", str(rerun), "--published", str(path), "--identical-transcripts"]) == 1
    out = capsys.readouterr().out
    assert "identical transcripts 1 of 2" in out and "transcript differs" in out


def test_verify_with_an_old_results_json_without_transcripts(tmp_path, capsys):
    paper_run = write_bundle(tmp_path / "paper-run", same_everywhere)
    rerun = write_bundle(tmp_path / "rerun", same_everywhere)
    render(collect([paper_run], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    data = json.loads(path.read_text())
    for row in data["rows"]:
        del row["transcripts"], row["failure_types"]
    path.write_text(json.dumps(data))
    code, item = verify_json(capsys, rerun, path)
    assert code == 0 and item["verdict"] == "REPRODUCED" and item["transcripts"]["compared"] == 0
