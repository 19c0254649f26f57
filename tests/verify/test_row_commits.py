"""Issue 63, item 6: a row names its commit. A results folder holding runs of one matrix made at two
project commits (no MERGED.json) never gives one row of both: the cells of each commit make a row
of their own, whose label, key and results.json name its commit; and `repro verify` of the folder
never says a plain REPRODUCED without naming the commit of the row it rests on.

The two runs are halves of one synthetic bundle (repeat 1 and repeat 2 of each cell, as two shards
or two `--only` runs would hold them), the second re-recorded at another commit and still VALID.
Each is asked twice: with our harness pinned by its commit (as it is), and pinned by its tree
digest alone, as an external harness's pin is (it names no commit): the row rule compares the
project commit itself, not the harness's pin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.report.aggregate import collect_with_cells, group_rows
from repro.report.paper import render
from repro.spec.harnesses import HarnessPin
from repro.suites.registry import kind_of
from tests.fixtures.synthetic import smoke_variant, write_bundle
from tests.rerun.test_one_setup import edited, unchanged

COMMITS = ("a" * 40, "b" * 40)  # write_bundle's commit, and the one the second run is re-recorded at


def at_commit(commit: str):
    def edit(run: dict, cells: list[dict]) -> None:
        run["source"]["commit"] = commit

    return edit


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published side: one run, two repeats of each cell, at the first commit."""
    return write_bundle(tmp_path_factory.mktemp("one") / "20261205T000000Z-smoke-cpu", variant=smoke_variant(repeats=2))


@pytest.fixture(scope="module")
def folder(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One results folder, no MERGED.json: repeat 1 at the first commit, repeat 2 at the second."""
    out = tmp_path_factory.mktemp("two") / "results"
    edited(base, out / "run-a", unchanged, "__r1-")
    edited(base, out / "run-b", at_commit(COMMITS[1]), "__r2-")
    return out


@pytest.fixture(params=["by commit", "by tree digest alone"])
def pinned(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Our harness pinned as it is, or as an external harness is pinned: by what names no commit."""
    if request.param != "by commit":
        suite = smoke_variant()[1].matrix.suites[0]
        monkeypatch.setattr(
            type(kind_of(suite)),
            "harness_pin",
            lambda self, suite, source: HarnessPin(name="repro", tree_digest=source.harness_digest if source else None),
        )
    return request.param


def test_no_row_joins_two_commits_and_each_names_its_own(folder: Path, tmp_path: Path, pinned: str) -> None:
    tables, cells = collect_with_cells([folder])
    assert not tables.exclusions
    for row in tables.rows:
        made_at = {cell.commit for cell in cells[row.key]}
        assert made_at == {row.commit}, (row.key, made_at)
        assert row.commit_label and row.commit_label in row.label and row.commit_label in row.key
    for model in {row.model for row in tables.rows}:
        assert {row.commit for row in tables.rows if row.model == model} == set(COMMITS)
    render(tables, tmp_path)
    for name in ("results.md", "results.tex"):
        text = (tmp_path / name).read_text()
        assert all(f"commit {commit[:12]}" in text for commit in COMMITS), name
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert sorted(row["commit"] for row in rows) == sorted(COMMITS * 2)


def test_the_rule_compares_the_project_commit_not_the_harness_pin(folder: Path, pinned: str) -> None:
    """Whatever the harness's pin names, cells of two commits are two rows; of one commit, one."""
    _, cells = collect_with_cells([folder])
    valid = [cell for members in cells.values() for cell in members]
    assert len(group_rows(valid)) == 4  # two models, each at two commits
    one_commit = [cell.model_copy(update={"commit": COMMITS[0]}) for cell in valid]
    if pinned != "by commit":  # our pin names the run's commit too; an external one's does not
        assert sorted(len(members) for members, _ in group_rows(one_commit)) == [2, 2]


def test_verify_never_says_a_plain_reproduced_for_a_folder_of_two_commits(
    base: Path, folder: Path, capsys: pytest.CaptureFixture[str], pinned: str
) -> None:
    code = main(["verify", str(folder), "--published", str(base), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    for verdict in report["verdicts"]:
        named = [commit for commit in COMMITS if commit[:12] in (verdict["rerun_row"] or "")]
        assert verdict["verdict"] != "REPRODUCED" or named, verdict
        assert verdict["verdict"] == "NOT RERUN"  # half the published repeats in each row: another scenario set
    assert report["unclaimed_rows"] and all(f"commit {COMMITS[1][:12]}" in key for key in report["unclaimed_rows"])
