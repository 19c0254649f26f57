"""`repro verify RERUN --published X` takes nothing on trust (issue 50): a hostile published
results.json is one line and exit 2, never an internal error or a pydantic dump; a published bundle
is checked before its rows become claims, its INVALID cells named (exit 1, "the published side is
not clean"), its UNCHECKED cells NOT RERUN with their reason; `--allow-invalid-published` narrows
the verify to the VALID rows and says so (synthetic bundles)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from tests.fixtures.synthetic import CANARY, write_bundle

Edit = Callable[[dict], None]


@pytest.fixture(scope="module")
def rerun_dir(tmp_path_factory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("rerun") / "run1")


@pytest.fixture(scope="module")
def published_json(rerun_dir, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("paper")
    render(collect([rerun_dir], Redactor(CANARY)), out)
    return json.loads((out / "results.json").read_text())


def first_row(change: Callable[[dict], None]) -> Edit:
    def edit(data: dict) -> None:
        change(data["rows"][0])

    return edit


def first_scenarios(data: dict) -> dict:
    return data["rows"][0]["scenarios"]


FORGED = "x[/]\x1b[2J\n[blink]y"

# Each edit of a published results.json that must be one line and exit 2.
HOSTILE_JSON: dict[str, Edit] = {
    "negative count": first_row(lambda row: row.update(passed=-1)),
    "passed over total": first_row(lambda row: row.update(passed=row["total"] + 5)),
    "negative total": first_row(lambda row: row.update(total=-3)),
    "category over its total": first_row(lambda row: row["by_category"].update(forged=[9, 1])),
    "markup and escapes in a scenario id": lambda d: first_scenarios(d).update({FORGED: [True]}),
    "a newline in a model name": first_row(lambda row: row.update(model="a\nb")),
    "a huge integer": first_row(lambda row: row.update(total=10**40)),
    "a wrong type": first_row(lambda row: row.update(scenarios="everything passed")),
}


def write_published(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


def one_line_exit_2(capsys: pytest.CaptureFixture[str], code: int) -> None:
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "validation error" not in err.lower() and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "\x1b" not in err, err


@pytest.mark.parametrize("name", sorted(HOSTILE_JSON))
def test_a_hostile_published_results_json_is_one_line_and_exit_2(
    name: str, rerun_dir: Path, published_json: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(json.dumps(published_json))
    HOSTILE_JSON[name](data)
    code = main(["verify", str(rerun_dir), "--published", str(write_published(tmp_path, data))])
    one_line_exit_2(capsys, code)


@pytest.mark.parametrize("text", ["NaN", '{"rows": [NaN]}', "[" * 5000, b"\xff\xfe{".decode("latin-1")])
def test_an_unreadable_published_file_is_one_line_and_exit_2(
    text: str, rerun_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    one_line_exit_2(capsys, main(["verify", str(rerun_dir), "--published", str(path)]))


# ---------------------------------------------------------------- a published bundle that is not clean


def copy_of(rerun_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "published" / rerun_dir.name
    shutil.copytree(rerun_dir, target)
    return target


def a_cell(run: Path) -> Path:
    return sorted((run / "cells").iterdir())[0]


BROKEN_CELLS: dict[str, Callable[[Path], None]] = {
    "a negative count": lambda cell: edit_results(cell, lambda row: row.update(steps=-4)),
    "wrong types in cell.json": lambda cell: edit_json(cell / "cell.json", lambda d: d.update(suite_ids="all")),
    "a link for a cell file": lambda cell: link_over(cell / "transcripts.jsonl"),
    "a folder for a cell file": lambda cell: folder_over(cell / "transcripts.jsonl"),
    "a FIFO for a cell file": lambda cell: fifo_over(cell / "engine.log"),
    "a flipped outcome": lambda cell: edit_results(cell, lambda row: row.update(passed=not row["passed"])),
}


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def edit_results(cell: Path, change: Callable[[dict], None]) -> None:
    rows = [json.loads(line) for line in (cell / "scenarios.jsonl").read_text().splitlines()]
    change(rows[0])
    (cell / "scenarios.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def link_over(path: Path) -> None:
    path.unlink()
    path.symlink_to("/etc/hostname")


def folder_over(path: Path) -> None:
    path.unlink()
    path.mkdir()


def fifo_over(path: Path) -> None:
    import os

    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("name", sorted(BROKEN_CELLS))
def test_a_published_bundle_with_an_invalid_cell_names_it_and_fails(
    name: str, rerun_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    published = copy_of(rerun_dir, tmp_path)
    broken = a_cell(published)
    BROKEN_CELLS[name](broken)
    code = main(["verify", str(rerun_dir), "--published", str(published)])
    out, err = capsys.readouterr()
    assert "internal error" not in err, err
    assert code == 1, out + err
    assert f"INVALID (published) {broken.name}: " in out, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("==> the published side is not clean (1 INVALID published cell(s), first "), last
    narrowed = main(["verify", str(rerun_dir), "--published", str(published), "--allow-invalid-published"])
    out = capsys.readouterr().out
    assert "against the VALID published rows only (--allow-invalid-published: 1 INVALID" in out, out
    assert narrowed == 0  # the other rows verify; the broken cell's row is stated by no claim (UNCLAIMED)


def test_a_published_bundle_with_an_unchecked_cell_makes_its_row_not_rerun(
    rerun_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule that cannot look (NotAtHand) makes the published cell UNCHECKED: its row is NOT
    RERUN, with the reason, and the verify fails unless partial verification is allowed."""
    from repro.check import cell_rules
    from repro.core.errors import NotAtHand

    published = copy_of(rerun_dir, tmp_path)
    unchecked = a_cell(published).name
    original = cell_rules.rule_regraded

    def not_at_hand(ev):
        if ev.cell_id == unchecked and ev.bundle.dir.resolve() == published.resolve():
            raise NotAtHand("the forged input is not at hand; run: repro suites fetch --from-bundle X")
        return original(ev)

    from repro.check import formats

    for rules in formats.RULES.values():
        monkeypatch.setitem(rules.ran_cell, "regraded", not_at_hand)
    code = main(["verify", str(rerun_dir), "--published", str(published), "--json"])
    report = json.loads(capsys.readouterr().out)
    [row] = [v for v in report["verdicts"] if v["claim"] == unchecked]
    assert row["verdict"] == "NOT RERUN" and "UNCHECKED" in row["reasons"][0] and "not at hand" in row["reasons"][0]
    assert code == 1
