"""UNCHECKED is not INVALID: a rule that cannot look (NotAtHand: something it needs is on neither
this machine nor in the bundle) makes the cell UNCHECKED with the command that makes it checkable,
exit 3; a problem any rule finds still makes it INVALID; tables leave it out and list it."""

from __future__ import annotations

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.report.aggregate import collect
from tests.fixtures.rules import MISSING
from tests.fixtures.synthetic import CANARY, write_bundle


def test_a_cell_a_rule_cannot_look_at_is_unchecked_never_invalid(tmp_path, cannot_look, capsys) -> None:
    run = write_bundle(tmp_path / "run1")
    cells = check_run(run, Redactor(CANARY)).cells
    assert {c.verdict for c in cells} == {"UNCHECKED"}
    assert all(c.reasons == [f"not checked: {MISSING}"] and not c.problems and c.unchecked for c in cells)
    assert main(["check", str(run)]) == 3
    printed = capsys.readouterr().out
    assert (
        "UNCHECKED" in printed
        and "run: fetch-the-widget" in printed
        and "0 VALID, 0 EXCLUDED, 0 INVALID, 2 UNCHECKED" in printed
    )


def test_invalid_wins_over_unchecked(tmp_path, cannot_look) -> None:
    run = write_bundle(tmp_path / "run1")
    first = sorted((run / "cells").iterdir())[0]
    data = bytearray((first / "scenarios.jsonl").read_bytes())
    data[5] ^= 1
    (first / "scenarios.jsonl").write_bytes(bytes(data))
    cells = {c.cell_id: c for c in check_run(run, Redactor(CANARY)).cells}
    assert cells[first.name].verdict == "INVALID" and f"not checked: {MISSING}" in cells[first.name].reasons
    assert main(["check", str(run)]) == 1


def test_tables_render_no_unchecked_cell_and_list_it_with_its_reason(tmp_path, cannot_look) -> None:
    run = write_bundle(tmp_path / "run1")
    tables = collect([run])
    assert tables.rows == []
    assert {(e.verdict, e.why) for e in tables.exclusions} == {("UNCHECKED", f"not checked: {MISSING}")}
    assert "2 UNCHECKED" in tables.setup.runs[0].verdict_label


def test_a_clean_run_says_no_unchecked_count(tmp_path, capsys) -> None:
    run = write_bundle(tmp_path / "run1")
    assert main(["check", str(run)]) == 0
    assert "2 VALID, 0 EXCLUDED, 0 INVALID\n" in capsys.readouterr().out
