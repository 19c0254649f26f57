"""repro.bundle.layout.reader.BundleReader: the one reader of a bundle (bounded, no link followed, ids checked)."""

from __future__ import annotations

import shutil

import pytest

from repro.bundle.layout import loading as loading_module
from repro.bundle.layout.reader import BundleReader
from repro.core.errors import BadInput
from tests.fixtures.synthetic import write_bundle


def test_cell_ids_are_the_planned_cells_present_and_stray_cells_are_the_others(tmp_path):
    run_dir = write_bundle(tmp_path / "run")
    bundle = BundleReader(run_dir)
    planned = bundle.run().planned_cells
    assert bundle.cell_ids() == planned and bundle.cells_on_disk() == sorted(planned) and bundle.stray_cells() == []

    shutil.rmtree(bundle.cell_dir(planned[0]))
    shutil.copytree(bundle.cell_dir(planned[1]), run_dir / "cells" / "not-planned")
    assert bundle.cell_ids() == planned[1:]
    assert bundle.stray_cells() == ["not-planned"]
    with pytest.raises(BadInput, match="no such file"):
        bundle.cell(planned[0])
    record = bundle.cell(planned[1])
    assert record.cell.id == planned[1] and [r.id for r in bundle.results(planned[1])] == record.suite_ids
    assert len(bundle.transcripts(planned[1])) == len(record.suite_ids) and bundle.cell_problems(planned[1]) == []


def test_links_unsafe_ids_and_oversized_files_are_refused(tmp_path):
    run_dir = write_bundle(tmp_path / "run")
    bundle = BundleReader(run_dir)
    cell_id = bundle.cell_ids()[0]
    with pytest.raises(BadInput, match="unsafe cell id"):
        bundle.cell("../" + cell_id)
    with pytest.raises(BadInput, match="not a plain file name"):
        bundle.cell_file(cell_id, "../run.json", 1024)
    with pytest.raises(BadInput, match="over the limit"):
        bundle.cell_file(cell_id, "scenarios.jsonl", 10)

    moved = tmp_path / "elsewhere"
    shutil.move(bundle.cell_dir(cell_id), moved)
    (run_dir / "cells" / cell_id).symlink_to(moved)
    assert cell_id not in bundle.cell_ids() and not bundle.has_file(cell_id, "cell.json")
    with pytest.raises(BadInput, match="a symbolic link"):
        bundle.results(cell_id)


def test_a_record_line_over_its_bound_is_refused_before_it_is_read_whole(tmp_path, monkeypatch):
    """A line of scenarios.jsonl or transcripts.jsonl is one scenario's record: a line longer than
    MAX_RECORD_LINE_BYTES is refused with one line naming it, and the line is never parsed."""
    run_dir = write_bundle(tmp_path / "run")
    bundle = BundleReader(run_dir)
    cell_id = bundle.cell_ids()[0]
    path = bundle.cell_dir(cell_id) / "transcripts.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(loading_module, "MAX_RECORD_LINE_BYTES", max(len(line) for line in lines) + 10)
    assert len(bundle.transcripts(cell_id)) == len(lines)
    path.write_bytes(lines[0] + b'{"id": "' + b"x" * (loading_module.MAX_RECORD_LINE_BYTES + 1) + b'"}\n')
    with pytest.raises(BadInput, match=r"transcripts.jsonl:2: a line of more than \d+ bytes"):
        bundle.transcripts(cell_id)


def test_each_cell_file_is_parsed_once_per_reader_and_again_when_it_changes(tmp_path, monkeypatch):
    """The rules of a check and the tables after it share a reader: a cell's scenarios.jsonl and
    transcripts.jsonl are parsed once (its `remember` most recent cells kept), again when the file
    changed since, and a file that does not read is refused each time it is asked for."""
    run_dir = write_bundle(tmp_path / "run")
    parsed: list[str] = []
    real = loading_module.record_lines
    monkeypatch.setattr(
        loading_module, "record_lines", lambda path: parsed.append(f"{path.parent.name}/{path.name}") or real(path)
    )
    bundle = BundleReader(run_dir)
    first, second = bundle.cell_ids()[:2]
    assert bundle.results(first) == bundle.results(first) and bundle.transcripts(first) == bundle.transcripts(first)
    assert parsed == [f"{first}/scenarios.jsonl", f"{first}/transcripts.jsonl"]
    bundle.results(second)
    bundle.results(first)  # the reader remembers one cell by default: the first was forgotten
    assert parsed[2:] == [f"{second}/scenarios.jsonl", f"{first}/scenarios.jsonl"]

    everything = BundleReader(run_dir, remember=None)
    parsed.clear()
    for cell_id in (first, second, first, second):
        everything.results(cell_id)
    assert parsed == [f"{first}/scenarios.jsonl", f"{second}/scenarios.jsonl"]

    path = everything.cell_dir(first) / "scenarios.jsonl"
    path.write_bytes(path.read_bytes() + b"not json\n")
    for _ in range(2):
        with pytest.raises(BadInput, match="not JSON"):
            everything.results(first)
    assert parsed[2:] == [f"{first}/scenarios.jsonl"]  # read again once it changed, then remembered as unreadable
