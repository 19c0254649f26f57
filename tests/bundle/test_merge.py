"""Scale-out: deterministic shards of a plan, and merging shard bundles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repro.bundle.layout.merge import merge, merge_problems
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.core.errors import BadInput
from repro.plan.planner import make_plan, parse_shard, shard_cells
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from tests.fixtures.synthetic import CANARY, SCENARIO_IDS, smoke_variant, write_bundle

ROOT = Path(__file__).resolve().parents[2]


def full_plan(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text((ROOT / "matrix" / "smoke.yaml").read_text().replace("repeats: 1", "repeats: 5"))
    return make_plan(load_matrix(path), "cpu", load_profiles().get("cpu"))


def test_shards_partition_the_plan(tmp_path):
    cells = full_plan(tmp_path).cells
    shards = [shard_cells(cells, (i, 3)) for i in (1, 2, 3)]
    ids = [c.id for shard in shards for c in shard]
    # 16 per repeat, 4 excluded by the matrix
    assert sorted(ids) == sorted(c.id for c in cells) and len(ids) == len(set(ids)) == 5 * 12
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
    with pytest.raises(BadInput, match="holds runs already"):
        merge([run], tmp_path / "merged")
    twin = tmp_path / "other" / "run2"
    shutil.copytree(run, twin)
    with pytest.raises(BadInput, match="is in both"):
        merge([run, twin], tmp_path / "merged2")
    (run / "cells").iterdir().__next__().joinpath("engine.log").write_text("changed\n")
    with pytest.raises(BadInput, match="not intact"):
        merge([run], tmp_path / "merged3")


def sharded(run_dir: Path, shard: str, cells: list[str]) -> Path:
    """A synthetic bundle relabelled as one shard holding `cells` (hashes recomputed)."""
    import json

    from repro.bundle.layout.writer import Bundle

    write_bundle(run_dir)
    record = json.loads((run_dir / "run.json").read_text())
    for cell_id in set(record["planned_cells"]) - set(cells):
        shutil.rmtree(run_dir / "cells" / cell_id)
    record.update(shard=shard, planned_cells=cells)
    (run_dir / "run.json").write_text(json.dumps(record))
    Bundle(run_dir, Redactor(CANARY)).write_manifest()
    return run_dir


def two_shards(tmp_path: Path) -> tuple[Path, Path]:
    cells = [c.id for c in make_plan(smoke_variant()[1], "cpu", load_profiles().get("cpu")).cells]
    return sharded(tmp_path / "s" / "a-shard1of2", "1/2", cells[:1]), sharded(
        tmp_path / "s" / "b-shard2of2", "2/2", cells[1:]
    )


def test_a_split_merges_only_whole_and_the_folder_records_it(tmp_path):
    first, second = two_shards(tmp_path)
    with pytest.raises(BadInput, match="shard 2/2 is missing"):
        merge([first], tmp_path / "half")
    shutil.copytree(second, tmp_path / "copy" / second.name)
    with pytest.raises(BadInput, match="is in both"):
        merge([first, second, tmp_path / "copy"], tmp_path / "twice")
    out = tmp_path / "merged"
    merge([first, second], out)
    assert merge_problems(out) == []
    assert {v.verdict for run in sorted(out.glob("*-shard*")) for v in check_run(run, Redactor(CANARY)).cells} == {
        "VALID"
    }


@pytest.mark.parametrize("damage", ["drop a shard", "add a run", "edit a shard"])
def test_a_merged_folder_that_changed_is_refused_by_check_and_render(tmp_path, damage):
    from repro.report.aggregate import collect

    first, second = two_shards(tmp_path)
    out = tmp_path / "merged"
    merge([first, second], out)
    if damage == "drop a shard":
        shutil.rmtree(out / second.name)
    elif damage == "add a run":
        write_bundle(out / "stranger")
    else:
        (out / first.name / "MANIFEST.sha256").write_text("")
    assert merge_problems(out)
    with pytest.raises(BadInput, match="not the merged folder"):
        collect([out], Redactor(CANARY))


def test_shards_recorded_on_another_cpu_model_are_refused(tmp_path):
    """Shard 2 re-recorded as run on another CPU model (its manifest made again): merged, its parts
    would join into one row of mixed setups; `results merge` refuses it in one line (issue 49)."""
    import json

    from repro.bundle.layout.writer import Bundle

    first, second = two_shards(tmp_path)
    record = json.loads((second / "run.json").read_text())
    record["system"]["cpu_model"] = "Intel(R) Xeon(R) Processor"
    (second / "run.json").write_text(json.dumps(record))
    Bundle(second, Redactor(CANARY)).write_manifest()
    with pytest.raises(BadInput, match=r"differ in hardware .*Intel.*or accept it with --accept hardware"):
        merge([first, second], tmp_path / "mixed")
    assert not (tmp_path / "mixed").exists()
    with pytest.raises(BadInput, match="--accept threads: a merge may accept only: hardware"):
        merge([first, second], tmp_path / "mixed", frozenset({"threads"}))
    merge([first, second], tmp_path / "accepted", frozenset({"hardware"}))
    assert json.loads((tmp_path / "accepted" / "MERGED.json").read_text())["accepted"] == ["hardware"]
    assert merge_problems(tmp_path / "accepted") == []
    merged = json.loads((tmp_path / "accepted" / "MERGED.json").read_text())
    (tmp_path / "accepted" / "MERGED.json").write_text(json.dumps({**merged, "accepted": []}))
    (problem,) = merge_problems(tmp_path / "accepted")  # the acceptance is MERGED.json's, never implied
    assert problem.startswith("the runs differ in hardware (") and "Intel" in problem


def test_shards_run_with_another_prompt_cache_are_refused(tmp_path):
    """A shard run with --prompt-cache on beside one with it off: other settings, never one row (issue 56)."""
    import json

    from repro.bundle.layout.writer import Bundle

    first, second = two_shards(tmp_path)
    record = json.loads((second / "run.json").read_text())
    record["profile_settings"]["cache_prompt"] = True
    record["prompt_cache"] = True
    (second / "run.json").write_text(json.dumps(record))
    Bundle(second, Redactor(CANARY)).write_manifest()
    with pytest.raises(BadInput, match=r"differ in profile \(the profile's settings as run: .*one setup only$"):
        merge([first, second], tmp_path / "mixed", frozenset({"hardware"}))


def test_parts_of_two_commits_given_as_several_paths_never_join_into_one_row(tmp_path):
    """Without MERGED.json, the repeats of one row made at two commits are two setups: each run's
    cells make a row of its own, never one row that names neither commit (issue 49)."""
    import json

    from repro.bundle.layout.writer import Bundle
    from repro.report.aggregate import collect_with_cells

    variant = smoke_variant(repeats=2)
    runs = []
    for name, repeat in (("a", "__r1-"), ("b", "__r2-")):
        run_dir = write_bundle(tmp_path / name / f"run-{name}", variant=variant)
        record = json.loads((run_dir / "run.json").read_text())
        keep = [c for c in record["planned_cells"] if repeat in c]
        for cell_id in set(record["planned_cells"]) - set(keep):
            shutil.rmtree(run_dir / "cells" / cell_id)
        record.update(planned_cells=keep, only=keep)  # as `--only` would have run it
        if name == "b":
            record["source"].update(commit="b" * 40)
        (run_dir / "run.json").write_text(json.dumps(record))
        Bundle(run_dir, Redactor(CANARY)).write_manifest()
        runs.append(run_dir)
    tables, _ = collect_with_cells(runs)
    assert tables.rows, [(e.cell_id, e.reasons[:1]) for e in tables.exclusions]
    assert all(row.total == len(SCENARIO_IDS) for row in tables.rows), [r.total for r in tables.rows]
