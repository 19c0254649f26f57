"""Issue 49: a setup is one record per cell (repro.bundle.setup.cell_setup) and one comparison
(repro.bundle.setup.compare), so one pair of setups gets one answer from every place that asks:
the rerun's preflight table, the rerun's verdict, `repro verify --published` with the bundle at
hand, `results merge`, the tables (a row is made of cells whose setups agree) and `repro compare`.

Each pair is a synthetic bundle and a copy of it with one input re-recorded (its manifest made
again, so it checks VALID): the CPU model, the core count, the architecture, the engine image's
Dockerfile and the threads each make the setups differ, by the same input everywhere; the memory,
the OS and the Docker engine do not."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from repro.bundle.layout.merge import setup_differences
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from repro.core.files import sha256_file
from repro.report.aggregate import collect_with_cells
from repro.report.tables import TableRow
from repro.rerun.preflight import bundle_side, compare_setups
from repro.rerun.verdict import verdict_of
from repro.verify.compare import setup_changes
from tests.fixtures.synthetic import CANARY, smoke_variant, write_bundle

Edit = Callable[[dict, list[dict]], None]  # (run.json, each cell.json) edited in place


def system(**change: object) -> Edit:
    return lambda run, cells: run["system"].update(change)


def dockerfile(run: dict, cells: list[dict]) -> None:
    for cell in cells:
        cell["engine_image"]["labels"]["repro.dockerfile_sha256"] = "9" * 64


def threads(run: dict, cells: list[dict]) -> None:
    run["profile_settings"]["threads"] = 1
    for cell in cells:
        cell["execution"]["threads"] = 1


# what changes -> (the edit, the input every place names, or None where none may)
PAIRS: dict[str, tuple[Edit, str | None]] = {
    "CPU model": (system(cpu_model="Intel(R) Xeon(R) Processor"), "CPU"),
    "core count": (system(cpu_cores=16), "CPU cores"),
    "architecture": (system(machine="aarch64"), "architecture"),
    "engine Dockerfile": (dockerfile, "engine image"),
    "threads": (threads, "threads per engine"),
    "memory": (system(memory_gb=64), None),
    "OS and Docker": (system(os="Ubuntu", docker_engine="27"), None),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("one") / "20261205T000000Z-smoke-cpu", variant=smoke_variant(repeats=2))


def edited(source: Path, out: Path, edit: Edit, keep: str | None = None) -> Path:
    """A copy of the bundle with one input re-recorded (and, with `keep`, only the cells of that
    repeat: two runs whose cells would join one row), its manifest made again."""
    shutil.copytree(source, out)
    run = json.loads((out / "run.json").read_text())
    if keep is not None:
        gone = [c for c in run["planned_cells"] if keep not in c]
        for cell_id in gone:
            shutil.rmtree(out / "cells" / cell_id)
        kept = [c for c in run["planned_cells"] if keep in c]
        run.update(planned_cells=kept, only=kept, run_id=out.name)  # as `--only` would have run it, another run
    paths = sorted((out / "cells").glob("*/cell.json"))
    cells = [json.loads(p.read_text()) for p in paths]
    edit(run, cells)
    (out / "run.json").write_text(json.dumps(run))
    for path, cell in zip(paths, cells, strict=True):
        log = path.parent / "engine.log"  # the threads as the engine says them, and the log's sha256
        log.write_text(re.sub(r"n_threads = \d+", f"n_threads = {cell['execution']['threads']}", log.read_text()))
        cell["files"]["engine.log"] = sha256_file(log)
        path.write_text(json.dumps(cell))
    Bundle(out, Redactor(CANARY)).write_manifest()
    return out


def unchanged(run: dict, cells: list[dict]) -> None:
    return None


def preflight_names(a: Path, b: Path) -> set[str]:
    sides = [
        bundle_side(BundleReader(p).run(), [BundleReader(p).cell(c) for c in BundleReader(p).cell_ids()])
        for p in (a, b)
    ]
    return {row.input for row in compare_setups(*sides) if row.differs}


def verdict_names(a: Path, b: Path) -> tuple[set[str], set[str]]:
    verdict = verdict_of(a, [b], frozenset())
    return {d.what for row in verdict.rows for d in row.differences if not d.accepted}, {
        row.verdict for row in verdict.rows
    }


@pytest.mark.parametrize("what", sorted(PAIRS))
def test_one_pair_of_setups_gets_one_answer_everywhere(base: Path, tmp_path: Path, what: str) -> None:
    edit, named = PAIRS[what]
    expected = {named} if named else set()
    a, b = base, edited(base, tmp_path / "b" / base.name, edit)
    assert preflight_names(a, b) == expected
    names, words = verdict_names(a, b)
    assert names == expected
    assert words == ({"REPRODUCED ON ANOTHER SETUP"} if named else {"REPRODUCED"})
    merged = setup_differences([a, b])
    assert (named is not None) == bool(merged) and all(named in text for text in merged.values())
    tables, _ = collect_with_cells(
        [
            edited(base, tmp_path / "r1" / "run-a", unchanged, "__r1-"),
            edited(base, tmp_path / "r2" / "run-b", edit, "__r2-"),
        ]
    )
    by_model: dict[str, list[TableRow]] = {}
    for row in tables.rows:
        by_model.setdefault(row.model, []).append(row)
    assert {len(rows) for rows in by_model.values()} == {2 if named else 1}
    for first, *rest in by_model.values():
        assert all({change.name for change in setup_changes(first, other)} == expected for other in rest)
