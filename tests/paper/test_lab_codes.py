"""The Local Agent Bench reason codes beside our failure types: each of ours maps to exactly one
code, and results.json and the CSV export carry the code."""

from __future__ import annotations

import csv
import json

from harness.contracts import FAILURE_TYPES
from harness.scoring.lab_codes import LAB_CODE, LAB_CODES, lab_code, lab_counts
from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from tests.compare.bundles import write_bundle as write_compare_bundle
from tests.fixtures.synthetic import CANARY, write_bundle


def test_every_failure_type_has_exactly_one_lab_code():
    assert set(LAB_CODE) == set(FAILURE_TYPES)
    assert set(LAB_CODE.values()) <= set(LAB_CODES)
    assert set(LAB_CODES) - set(LAB_CODE.values()) == {"TOOL_EXECUTION_FAILED"}  # a tool error goes back to the model
    assert (lab_code("hallucinated_result"), lab_code("wrong_outcome"), lab_code(None)) == (
        "HALLUCINATED_RESULT",
        "ASSERTION_FAILED",
        None,
    )
    assert lab_code("a-type-from-a-newer-version") == "UNKNOWN_FAILURE"
    assert lab_counts({"empty_reply": 1, "invalid_syntax": 2, "wrong_tool": 1}) == {
        "INVALID_TOOL_SYNTAX": 3,
        "WRONG_TOOL": 1,
    }


def test_results_json_has_the_lab_codes_beside_ours(tmp_path):
    tables = collect([write_bundle(tmp_path / "run1")], Redactor(CANARY))
    render(tables, tmp_path / "tables")
    rows = json.loads((tmp_path / "tables" / "results.json").read_text())["rows"]
    for row in rows:
        assert row["lab_codes"] == lab_counts(row["failure_types"])
    assert any(row["lab_codes"] for row in rows)


def test_csv_has_the_lab_code_column(tmp_path):
    def scenarios(cell):
        return [("notes-001", "notes", True, None, None), ("notes-002", "notes", False, "ignored_tool_result", None)]

    run = write_compare_bundle(tmp_path / "run", scenarios, models=1)
    assert main(["results", "csv", str(run), "--out", str(tmp_path / "out.csv")]) == 0
    rows = {r["scenario"]: r for r in csv.DictReader((tmp_path / "out.csv").open())}
    assert (rows["notes-001"]["failure_type"], rows["notes-001"]["lab_code"]) == ("", "")
    assert (rows["notes-002"]["failure_type"], rows["notes-002"]["lab_code"]) == (
        "ignored_tool_result",
        "IGNORED_TOOL_RESULT",
    )
