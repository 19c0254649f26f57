"""`repro verify`: a rerun against published numbers, with every difference named."""

from __future__ import annotations

import json

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from repro.report.verify import compare, load_published
from tests.fixtures.synthetic import CANARY, write_bundle


def published_from(run, out):
    render(collect([run], Redactor(CANARY)), out)
    return out / "results.json"


def test_identical_rerun_is_reproduced(tmp_path):
    published = load_published(published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper"))
    rerun = collect([write_bundle(tmp_path / "rerun")], Redactor(CANARY))
    comparisons = compare(published, rerun)
    assert [c.status for c in comparisons] == ["reproduced", "reproduced"]


def test_flipped_scenario_and_missing_row_are_named(tmp_path):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    data = json.loads(path.read_text())
    data["rows"][0]["scenarios"]["notes-002"] = [True]
    data["rows"][0]["passed"] += 1
    data["rows"][1]["model_sha256"] = "0" * 64
    data["rows"].append({**data["rows"][1], "suite": "other-suite"})
    path.write_text(json.dumps(data))
    comparisons = {c.key: c for c in compare(load_published(path), collect([write_bundle(tmp_path / "rerun")], Redactor(CANARY)))}
    first, second, extra = (comparisons[k] for k in comparisons)
    assert first.status == "differs"
    assert "scenario notes-002: pass published, fail rerun" in first.differences
    assert any(d.startswith("passed 3/3 published, 2/3 rerun") for d in first.differences)
    assert second.status == "differs" and second.differences[0].startswith("model bytes differ")
    assert extra.status == "missing"


def test_cli_exit_codes(tmp_path, capsys):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    rerun = write_bundle(tmp_path / "rerun")
    code = main(["verify", str(rerun), "--published", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "2 of 2 rows reproduced" in out
    assert main(["verify", str(rerun), "--published", str(tmp_path / "none.json")]) == 2


def test_an_execution_mismatch_is_named_before_the_scenarios(tmp_path):
    """Threads, slots and prompt cache are compared first: they explain differing transcripts."""
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    data = json.loads(path.read_text())
    data["rows"][0]["execution"].update(threads=1, slots=2)
    data["rows"][0]["scenarios"]["notes-002"] = [True]
    path.write_text(json.dumps(data))
    first = compare(load_published(path), collect([write_bundle(tmp_path / "rerun")], Redactor(CANARY)))[0]
    assert first.status == "differs"
    assert first.differences[:2] == ["threads per engine differ: 1 published, 2 rerun", "engine slots differ: 2 published, 1 rerun"]
    assert "scenario notes-002: pass published, fail rerun" in first.differences[2:]
