"""Merging the shards of one run into one results folder (`repro results merge`), refusing
anything that is not one run split in parts."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ValidationError

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.integrity import manifest_problems
from repro.bundle.layout.loading import finite_json, load_run
from repro.bundle.layout.names import MANIFEST, MERGE_RECORD, safe_id
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import to_json
from repro.bundle.records import RunRecord, utc_now
from repro.bundle.setup import SetupRecord, cell_setup, differences
from repro.core.errors import BadInput
from repro.core.files import (
    MAX_JSON_BYTES,
    atomic_write,
    read_regular,
    sha256_file,
    short_error,
)
from repro.plan.planner import parse_shard


class MergedShard(BaseModel):
    run_id: str
    shard: str | None
    manifest_sha256: str


class MergeRecord(BaseModel):
    """What `repro results merge` joined (MERGED.json beside the runs): `repro check` and `paper
    render` of the folder hold the runs there to this list, byte for byte."""

    matrix_sha256: str
    profile: str
    commit: str | None
    shards: list[MergedShard]
    merged_at: str
    accepted: list[str] = []  # setup differences between the shards accepted by `--accept` (MERGE_ACCEPTABLE)


# What `results merge --accept` may let differ between shards, and what it is: the hardware (its
# rows then name each shard's host, and verify judges them ON ANOTHER SETUP); every other input
# of a setup (matrix, profile and its settings, commit) makes shards of different runs.
MERGE_ACCEPTABLE = {"hardware": "the hardware (CPU model, cores, architecture, GPUs with driver and CUDA)"}
# The inputs every cell of one run shares, whatever its model, engine or suite: compared across
# every cell of the shards, where the others are compared within the cells of one row.
RUN_WIDE = frozenset({"hardware", "profile", "threads", "slots", "prompt-cache", "replicas", "engine-variant"})


def merge(sources: list[Path], out: Path, accept: frozenset[str] = frozenset()) -> list[Path]:
    """Copy the bundles of several shards (or machines) into one results folder, unchanged, and
    record them in MERGED.json.

    Only intact, complete bundles of one matrix, profile and project commit are merged; a
    sharded run only whole (shards 1..n of one n, each once); no cell may be in two of them;
    links are never followed (a bundle holding one is refused). Shards made on different hardware
    are refused unless `accept` names it, which MERGED.json then records."""
    unknown = sorted(accept - set(MERGE_ACCEPTABLE))
    if unknown:
        raise BadInput(f"--accept {unknown[0]}: a merge may accept only: {', '.join(MERGE_ACCEPTABLE)}")
    runs = [run for source in sources for run in find_runs(source)]
    records = {run: load_run(run) for run in runs}
    differ = setup_differences(runs)
    _refuse_mixed(records, differ, accept)
    for run in runs:
        problems = manifest_problems(run)
        if problems:
            raise BadInput(f"{run}: not intact ({problems[0]}); refusing to merge it")
    problems = split_problems(list(records.values()))
    if problems:
        raise BadInput(f"refusing to merge: {problems[0]}")
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out}: a file, not a folder")
    if (out / MERGE_RECORD).exists() or find_runs_quietly(out):
        raise BadInput(f"{out}: holds runs already; merge into a new folder")
    targets = {run: out / safe_id(record.run_id, "run id") for run, record in records.items()}
    for run, target in targets.items():
        shutil.copytree(run, target, symlinks=True)
    first = next(iter(records.values()))
    shards = [
        MergedShard(run_id=r.run_id, shard=r.shard, manifest_sha256=sha256_file(run / MANIFEST))
        for run, r in records.items()
    ]
    record = MergeRecord(
        matrix_sha256=first.matrix.sha256,
        profile=first.profile,
        commit=first.source.commit,
        shards=shards,
        merged_at=utc_now(),
        accepted=sorted(accept & set(differ)),
    )
    atomic_write(out / MERGE_RECORD, to_json(record).encode())
    return list(targets.values())


def split_problems(records: list[RunRecord]) -> list[str]:
    """Why these runs are not one whole plan: a cell in two runs, shards of different splits, a
    shard missing or twice, a run that did not complete."""
    problems = [f"{r.run_id}: status {r.status}, not complete" for r in records if r.status != "complete"]
    seen: dict[str, str] = {}
    for record in records:
        for cell_id in record.planned_cells:
            if cell_id in seen:
                problems.append(f"cell {cell_id} is in both {seen[cell_id]} and {record.run_id}")
            seen[cell_id] = record.run_id
    shards = [r.shard for r in records]
    if any(shards) and not all(shards):
        return [*problems, "sharded and unsharded runs mixed"]
    if not any(shards):
        return problems
    if not all(re.fullmatch(r"[0-9]{1,6}/[0-9]{1,6}", text) for text in shards if text):
        return [*problems, "a run names its shard in something other than ASCII digits i/n"]
    parsed = [parse_shard(text) for text in shards if text]
    counts = {count for _, count in parsed}
    if len(counts) > 1:
        return [*problems, f"shards of different splits ({', '.join(sorted(s for s in shards if s))})"]
    (count,) = counts
    indexes = Counter(index for index, _ in parsed)
    problems += [f"shard {i}/{count} is merged {n} times" for i, n in sorted(indexes.items()) if n > 1]
    problems += [f"shard {i}/{count} is missing" for i in range(1, count + 1) if i not in indexes]
    return problems


def merge_problems(folder: Path) -> list[str]:
    """For a merged folder (MERGED.json): the runs there are exactly the merged ones, unchanged
    since (manifest hashes), and still a whole split. Empty for any other folder."""
    record_path = folder / MERGE_RECORD
    if not record_path.exists() and not record_path.is_symlink():
        return []
    try:
        record = MergeRecord.model_validate_json(finite_json(record_path, read_regular(record_path, MAX_JSON_BYTES)))
    except (BadInput, ValidationError) as error:
        return [f"{MERGE_RECORD}: unreadable ({short_error(error)})"]
    listed = {shard.run_id: shard for shard in record.shards}
    present = {run.name: run for run in find_runs(folder)}
    problems = [f"run {name} is in the folder but not in {MERGE_RECORD}" for name in sorted(set(present) - set(listed))]
    problems += [f"run {name} of {MERGE_RECORD} is missing" for name in sorted(set(listed) - set(present))]
    for name in sorted(set(listed) & set(present)):
        manifest = present[name] / MANIFEST
        if not manifest.is_file() or manifest.is_symlink() or sha256_file(manifest) != listed[name].manifest_sha256:
            problems.append(f"run {name} changed since it was merged (its MANIFEST is not the merged one)")
    records = [load_run(run) for run in present.values()]
    mixed = {(r.matrix.sha256, r.profile, r.source.commit) for r in records} - {
        (record.matrix_sha256, record.profile, record.commit)
    }
    problems += ["a run of another matrix, profile or commit is in the folder"] if mixed else []
    differ = setup_differences(list(present.values()))
    problems += [f"the runs differ in {text}" for name, text in differ.items() if name not in record.accepted]
    return problems + split_problems(records)


def find_runs_quietly(folder: Path) -> list[Path]:
    """The runs in a folder, none when it does not exist or holds none."""
    try:
        return find_runs(folder) if folder.is_dir() else []
    except BadInput:
        return []


def setup_differences(runs: list[Path]) -> dict[str, str]:
    """What of the setup the runs' cells do not share, by the one comparison of setups
    (repro.bundle.setup), each ran cell's setup with the scenarios of its part aside: every input
    against the first cell that would join its row (the same model, engine, protocol and suite),
    whichever run holds it, and the inputs one run shares over all its cells (RUN_WIDE) against
    the first cell of all; name -> in words. The harness's pin is not stated here: shards of one
    matrix at one commit share it, which merge asks first."""
    first: dict[tuple[str, ...], SetupRecord] = {}
    base: SetupRecord | None = None
    differ: dict[str, str] = {}
    for setup, key in ran_setups(runs):
        base = base or setup
        found = differences(first.setdefault(key, setup), setup)
        found += [d for d in differences(base, setup) if d.name in RUN_WIDE]
        for d in found:
            differ.setdefault(d.name, f"{d.name} ({d.what}: {d.claimed} -> {d.rerun})")
    return differ


def ran_setups(runs: list[Path]) -> Iterator[tuple[SetupRecord, tuple[str, ...]]]:
    """Each ran cell's setup (its part's scenarios aside) and the key of the row it would join."""
    for run_dir in runs:
        reader = BundleReader(run_dir)
        record = reader.run()
        for cell in (reader.cell(cell_id) for cell_id in reader.cell_ids()):
            if cell.engine_image is not None:
                spec = cell.cell
                key = (spec.model.id, spec.engine.id, spec.protocol, spec.suite.id)
                yield cell_setup(record, cell, None).without_part(), key


def _refuse_mixed(records: dict[Path, RunRecord], differ: dict[str, str], accept: frozenset[str]) -> None:
    kinds = {(r.matrix.sha256, r.profile, r.source.commit) for r in records.values()}
    if len(kinds) > 1:
        described = ", ".join(
            f"matrix {sha[:12]} on {profile} at {(commit or '?')[:12]}"
            for sha, profile, commit in sorted(kinds, key=str)
        )
        raise BadInput(
            "these bundles come from different matrices, profiles or commits "
            f"({described}); merge shards of one run only"
        )
    # a row joined from its parts is one setup, or it is not one row
    refused = {name: text for name, text in differ.items() if name not in accept}
    if refused:
        name, text = next(iter(refused.items()))
        hint = f", or accept it with --accept {name}" if name in MERGE_ACCEPTABLE else ""
        raise BadInput(
            f"these bundles differ in {text}: their parts would join into one row of mixed setups; "
            f"merge shards of one setup only{hint}"
        )
