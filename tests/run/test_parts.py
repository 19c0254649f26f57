"""A suite run in parts (`parts: n`): the plan makes one cell per part (its number in the id and
the name), each runs a contiguous slice of the selection, the check holds each part to its slice,
and the tables join the parts back into one row; a row short of a part says which it holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.core.errors import BadInput
from repro.plan.planner import make_plan
from repro.report.aggregate import collect, collect_with_cells, make_row, with_labels
from repro.run.runner import refuse_empty_parts
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.matrix import Suite
from repro.spec.profiles import load_profiles
from repro.suites.registry import select
from tests.fixtures.synthetic import CANARY, SCENARIO_IDS, smoke_variant, synthetic_templates, write_bundle


def in_parts(parts: int, ids: list[str] = SCENARIO_IDS):
    return smoke_variant(suites=[Suite(id="synthetic", path="scenarios", ids=sorted(ids), parts=parts)])


def test_a_selection_splits_into_contiguous_parts_that_cover_it_once() -> None:
    ids = [f"s-{n:02d}" for n in range(10)]
    selection = SuiteSelection(folder=Path("."), ids=ids, categories={i: "c" for i in ids}, sha256="f" * 64)
    parts = [selection.part(index, 3) for index in (1, 2, 3)]
    assert [len(part.ids) for part in parts] == [3, 3, 4]
    assert [i for part in parts for i in part.ids] == ids
    # the whole suite's bytes and the part's number fix the part
    assert {part.sha256 for part in parts} == {selection.sha256}
    assert set(parts[0].categories) == set(parts[0].ids)
    with pytest.raises(ValueError, match="part 4 of 3 does not exist"):
        selection.part(4, 3)


def test_the_plan_makes_one_cell_per_part_named_by_its_number() -> None:
    _raw, loaded = in_parts(3)
    profile = load_profiles().get("cpu")
    plan = make_plan(loaded, "cpu", profile, templates=synthetic_templates(loaded.matrix.models))
    model = loaded.matrix.models[0].id
    cells = [c for c in plan.cells if c.model.id == model]
    assert [c.part for c in cells] == [1, 2, 3]
    assert all(f"__synthetic-p{c.part}of3__r1-" in c.id for c in cells)
    assert cells[1].label.endswith("/ synthetic part 2 of 3")
    selection = select(cells[0].suite, loaded.suite_root(cells[0].suite))
    assert [i for c in cells for i in c.share(selection).ids] == selection.ids
    assert len({c.id for c in cells}) == 3


def test_a_cell_of_a_suite_without_parts_dumps_as_before() -> None:
    _raw, loaded = smoke_variant()
    plan = make_plan(loaded, "cpu", load_profiles().get("cpu"), templates=synthetic_templates(loaded.matrix.models))
    dumped = plan.cells[0].model_dump(mode="json")
    assert "part" not in dumped and "parts" not in dumped["suite"]


@pytest.mark.parametrize(("parts", "part"), [(None, 1), (3, 4), (3, 0)])
def test_a_cell_names_only_a_part_its_suite_has(parts: int | None, part: int) -> None:
    _raw, loaded = in_parts(3)
    plan = make_plan(loaded, "cpu", load_profiles().get("cpu"), templates=synthetic_templates(loaded.matrix.models))
    data = plan.cells[0].model_dump(mode="json") | {"part": part}
    data["suite"] = {k: v for k, v in data["suite"].items() if k != "parts"} | ({"parts": parts} if parts else {})
    with pytest.raises(ValidationError, match="is not one of the suite's"):
        Cell.model_validate(data)


def test_parts_check_valid_and_join_into_one_row(tmp_path: Path) -> None:
    run = write_bundle(tmp_path / "run1", variant=in_parts(3))
    verdict = check_run(run, Redactor(CANARY))
    assert [c.verdict for c in verdict.cells] == ["VALID"] * 6, [c.problems for c in verdict.cells]
    rows = collect([run], Redactor(CANARY)).rows
    assert len(rows) == 2  # one per model, each joining its three parts
    for row in rows:
        assert (row.cells, row.total, sorted(row.scenarios), row.parts) == (3, 3, sorted(SCENARIO_IDS), None)
        assert "part" not in row.label


def test_a_row_short_of_a_part_says_which_it_holds(tmp_path: Path) -> None:
    run = write_bundle(tmp_path / "run1", variant=in_parts(3))
    tables, cells = collect_with_cells([run], Redactor(CANARY))
    members = [c for c in cells[tables.rows[0].key] if c.record.cell.part != 2]
    row = make_row(members, None)
    assert (row.parts, row.total) == ("parts 1, 3 of 3", 2)
    assert with_labels([row])[0].label.endswith("(parts 1, 3 of 3)")


def test_a_suite_in_more_parts_than_it_selects_scenarios_is_refused() -> None:
    _raw, loaded = in_parts(4)
    plan = make_plan(loaded, "cpu", load_profiles().get("cpu"), templates=synthetic_templates(loaded.matrix.models))
    suites = {s.id: select(s, loaded.suite_root(s)) for s in loaded.matrix.suites}
    with pytest.raises(BadInput, match="selects 3 scenario"):
        refuse_empty_parts(plan.cells, suites)
