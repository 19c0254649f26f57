"""`repro results csv`: the per-scenario results of a bundle, one CSV row per scenario and cell."""

from __future__ import annotations

import csv

from repro.__main__ import main
from repro.commands.results import CSV_COLUMNS
from tests.compare.bundles import write_bundle


def scenarios(cell):
    return [("notes-001", "notes", True, None, None), ("=cmd|x", "notes", False, "stuck", None)]


def test_csv_has_one_row_per_scenario_repeat_and_cell(tmp_path, capsys):
    run = write_bundle(tmp_path / "run", scenarios, repeats=2, models=1)
    assert main(["results", "csv", str(run), "--out", str(tmp_path / "out.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert list(rows[0]) == CSV_COLUMNS and len(rows) == 4
    first = next(r for r in rows if r["scenario"] == "notes-001")
    assert (
        first["run"] == "run"
        and first["repeat"] == "1"
        and first["scenario"] == "notes-001"
        and first["passed"] == "True"
    )
    assert first["model"] == "smollm2-135m-instruct-q4_1" and first["protocol"] == "json_schema"
    assert (first["steps"], first["seconds"], first["tokens_in"], first["tokens_out"]) == ("1", "0.5", "10", "5")
    failed = next(r for r in rows if r["scenario"] != "notes-001")
    assert failed["failure_type"] == "stuck" and failed["scenario"] == "'=cmd|x"  # never a spreadsheet formula
    assert [r["repeat"] for r in rows] == ["1", "1", "2", "2"]


def test_csv_to_stdout_and_bad_input(tmp_path, capsys):
    run = write_bundle(tmp_path / "run", scenarios, models=1)
    assert main(["results", "csv", str(run)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == ",".join(CSV_COLUMNS)
    assert main(["results", "csv", str(tmp_path / "missing")]) == 2
    assert main(["results", "csv", str(run), "--out", str(tmp_path)]) == 2
