"""Scale-out: deterministic shards of a plan, and merging shard bundles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repro.bundle import merge
from repro.check import check_run
from repro.errors import BadInput
from repro.matrix import load_matrix
from repro.plan import make_plan, parse_shard, shard_cells
from repro.profiles import load_profiles
from repro.redact import Redactor
from tests.fixtures.synthetic import CANARY, write_bundle

ROOT = Path(__file__).resolve().parents[2]


def full_plan(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text((ROOT / "matrix" / "smoke.yaml").read_text().replace("repeats: 1", "repeats: 5"))
    return make_plan(load_matrix(path), "cpu", load_profiles().get("cpu"))


def test_shards_partition_the_plan(tmp_path):
    cells = full_plan(tmp_path).cells
    shards = [shard_cells(cells, (i, 3)) for i in (1, 2, 3)]
    ids = [c.id for shard in shards for c in shard]
    assert sorted(ids) == sorted(c.id for c in cells) and len(ids) == len(set(ids)) == 10
    assert [c.id for c in shard_cells(cells, (2, 3))] == [c.id for c in shards[1]]


def test_shard_syntax():
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "x/2", "2"):
        with pytest.raises(BadInput, match="expected i/n"):
            parse_shard(bad)


def test_merge_copies_intact_bundles_and_refuses_the_rest(tmp_path):
    run = write_bundle(tmp_path / "shards" / "run1")
    merged = merge([tmp_path / "shards"], tmp_path / "merged")
    assert [p.name for p in merged] == ["run1"]
    assert {c.verdict for c in check_run(tmp_path / "merged" / "run1", Redactor(CANARY)).cells} == {"VALID"}
    with pytest.raises(BadInput, match="exists already"):
        merge([run], tmp_path / "merged")
    twin = tmp_path / "other" / "run2"
    shutil.copytree(run, twin)
    with pytest.raises(BadInput, match="is in both"):
        merge([run, twin], tmp_path / "merged2")
    (run / "cells").iterdir().__next__().joinpath("engine.log").write_text("changed\n")
    with pytest.raises(BadInput, match="not intact"):
        merge([run], tmp_path / "merged3")
