"""`repro verify --published`: a rerun against published numbers, each published row verified as
a claim (repro.verify.claims), with every difference named."""

from __future__ import annotations

import json

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from tests.fixtures.synthetic import CANARY, write_bundle


def published_from(run, out):
    render(collect([run], Redactor(CANARY)), out)
    return out / "results.json"


def verdicts(capsys, rerun, path, *extra):
    capsys.readouterr()
    code = main(["verify", str(rerun), "--published", str(path), "--json", *extra])
    return code, {v["about"].split(",")[0]: v for v in json.loads(capsys.readouterr().out)["verdicts"]}


def test_identical_rerun_is_reproduced(tmp_path, capsys):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    code, found = verdicts(capsys, write_bundle(tmp_path / "rerun"), path)
    assert code == 0 and [v["verdict"] for v in found.values()] == ["REPRODUCED", "REPRODUCED"]
    assert {v["setup"] for v in found.values()} == {"same"}


def test_flipped_scenario_and_missing_row_are_named(tmp_path, capsys):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    data = json.loads(path.read_text())
    data["rows"][0]["scenarios"]["notes-002"] = [True]
    data["rows"][0]["passed"] += 1
    data["rows"][0]["by_category"]["notes"][0] += 1
    data["rows"][1]["model_sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    code, found = verdicts(capsys, write_bundle(tmp_path / "rerun"), path)
    first, second = found.values()
    assert code == 1
    assert first["verdict"] == "DIFFERENT" and "scenario notes-002 repeat 1: pass claimed, fail rerun" in first["notes"]
    assert first["judgement"]["test"] == "exact"  # the synthetic rows ran the exact cpu setup
    assert second["verdict"] == "NOT RERUN" and "is not in the rerun's matrix" in second["reasons"][0]


def test_cli_exit_codes(tmp_path, capsys):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    rerun = write_bundle(tmp_path / "rerun")
    code = main(["verify", str(rerun), "--published", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "2 REPRODUCED, 0 CONSISTENT, 0 DIFFERENT, 0 NOT RERUN of 2 claims" in out
    assert main(["verify", str(rerun), "--published", str(tmp_path / "none.json")]) == 2


def test_an_execution_mismatch_is_named_before_the_scenarios(tmp_path, capsys):
    """Threads and slots are compared as inputs: they are named, and the claim was not rerun as stated."""
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    data = json.loads(path.read_text())
    data["rows"][0]["execution"].update(threads=1, slots=2)
    path.write_text(json.dumps(data))
    code, found = verdicts(capsys, write_bundle(tmp_path / "rerun"), path)
    first = next(iter(found.values()))
    assert (
        code == 1 and first["verdict"] == "REPRODUCED ON ANOTHER SETUP" and first["setup"] == "differs: slots, threads"
    )
    assert [d["what"] for d in first["differences"]] == ["threads per engine", "engine slots"]


def test_an_old_results_json_without_its_harness_is_refused_in_one_line(tmp_path, capsys):
    path = published_from(write_bundle(tmp_path / "paper-run"), tmp_path / "paper")
    data = json.loads(path.read_text())
    for row in data["rows"]:
        row.pop("harness")
    path.write_text(json.dumps(data))
    assert main(["verify", str(write_bundle(tmp_path / "rerun")), "--published", str(path)]) == 2
    assert "names no harness" in capsys.readouterr().err
