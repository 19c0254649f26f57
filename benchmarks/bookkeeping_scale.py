"""Time the bookkeeping commands on bundles of 1,000 and 10,000 scenarios.

    python benchmarks/bookkeeping_scale.py [--sizes 1000,10000] [--keep DIR]

Prints figures (this is a benchmark, not a timed test). Each bundle is synthesised from a real
cell: the published smoke bundle's Qwen2.5-Coder-0.5B cell under the JSON schema on the seven
workspace scenarios (a real run's results, transcripts, engine log, gate, sandbox and images).
Scenario k of N is that cell's scenario k mod 7, cloned under the id `<id>-s<k div 7>`: its
scenario file (only the id changed) goes into an author's suite folder, its result and transcript
(only the id changed) into the cell. The matrix is the published one cut to that model, protocol
and one suite naming the N ids, kept outside the project (`paths_from: matrix`), as an author's
own suite would be; the cell id, plan, suite sha256, summary, harness seconds (the cell's own,
scaled by N / 7), every file's hash and the manifest are recomputed by the real bundle writer, so
`repro check` says VALID and re-grades every scenario from its transcript.

For each size: the bundle's size on disk (and the synthesis's own peak memory), then wall seconds,
milliseconds per scenario and peak memory (the child's maximum resident set, from wait4) of
`repro check`, `repro paper render`, `repro verify --published` (against the bundle's own
results.json), `repro claims from-results` and `repro verify --claims`, `repro results merge` (the
bundle as shard 1 of 1), and `repro export inspect` when inspect_ai is installed; after each, the
machine's load averages (1, 5 and 15 minutes), since the figures are only as quiet as the machine
was.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.contracts import ProgressEvent  # noqa: E402
from repro.bundle.layout.reader import BundleReader  # noqa: E402
from repro.bundle.layout.writer import Bundle  # noqa: E402
from repro.bundle.provenance import author_source  # noqa: E402
from repro.bundle.records import CellRecord, CellSummary, MatrixInfo, RunRecord  # noqa: E402
from repro.bundle.redact import Redactor  # noqa: E402
from repro.plan.planner import make_plan  # noqa: E402
from repro.spec.loading import load_matrix  # noqa: E402
from repro.spec.matrix import LoadedMatrix  # noqa: E402
from repro.suites.registry import kind_of, select  # noqa: E402

PUBLISHED = ROOT / "paper" / "published" / "smoke-cpu-bundle.tar.gz"
MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
PROTOCOL, SUITE = "json_schema", "workspace-smoke"
SCALE_SUITE = "workspace-scale"


def unpack(tar: Path, into: Path) -> Path:
    with tarfile.open(tar) as archive:
        archive.extractall(into, filter="data")
    (run_dir,) = [p for p in into.iterdir() if p.is_dir()]
    return run_dir


def source_cell(reader: BundleReader) -> CellRecord:
    for cell_id in reader.run().planned_cells:
        record = reader.cell(cell_id)
        if (record.cell.model.id, record.cell.protocol, record.cell.suite.id) == (MODEL, PROTOCOL, SUITE):
            return record
    raise SystemExit(f"the published bundle has no {MODEL} {PROTOCOL} {SUITE} cell")


def author_suite(reader: BundleReader, record: CellRecord, count: int, folder: Path) -> list[str]:
    """Scenario files of `count` clones of the cell's scenarios, and the fixtures, under `folder`."""
    suite_dir = reader.suite_dir(SUITE)
    shutil.copytree(suite_dir / "fixtures", folder / "fixtures")
    categories = record.summary.by_category if record.summary else {}
    ids = []
    for number in range(count):
        base = record.suite_ids[number % len(record.suite_ids)]
        category = next(c for c in categories if (suite_dir / "scenarios" / c / f"{base}.json").exists())
        clone = f"{base}-s{number // len(record.suite_ids):05d}"
        data = json.loads((suite_dir / "scenarios" / category / f"{base}.json").read_text())
        target = folder / "scenarios" / category / f"{clone}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({**data, "id": clone}, indent=2))
        ids.append(clone)
    return ids


def author_matrix(reader: BundleReader, ids: list[str], folder: Path) -> tuple[bytes, LoadedMatrix]:
    raw = yaml.safe_load(reader.matrix_path().read_text())
    models = [m for m in raw["models"] if m["id"] == MODEL]
    suite = {"id": SCALE_SUITE, "path": "scenarios", "ids": sorted(ids)}
    matrix = {
        **raw,
        "name": f"bookkeeping-{len(ids)}",
        "paths_from": "matrix",
        "models": models,
        "protocols": [PROTOCOL],
        "suites": [suite],
        "exclude": [],
    }
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump(matrix, sort_keys=False))
    return path.read_bytes(), load_matrix(path)


def without_progress(log: str) -> str:
    """The source cell's harness output without its per-scenario progress lines: they name the
    source's scenarios, which the synthesised cell renamed (check holds those lines to its results)."""
    return "".join(line for line in log.splitlines(keepends=True) if ProgressEvent.parse(line) is None)


def synthesise(count: int, scratch: Path) -> Path:
    """A bundle of one VALID cell of `count` scenarios, from the published smoke bundle's cell."""
    reader = BundleReader(unpack(PUBLISHED, scratch / "published"))
    run, record = reader.run(), source_cell(reader)
    ids = author_suite(reader, record, count, scratch / "author")
    raw, loaded = author_matrix(reader, ids, scratch / "author")
    (cell,) = make_plan(loaded, run.profile, run.profile_settings, templates=run.chat_templates).cells
    lines = {line.id: line for line in reader.transcripts(record.cell.id)}
    results = {result.id: result for result in reader.results(record.cell.id)}
    selection = select(cell.suite, loaded.suite_root(cell.suite))
    rows = [results[scenario.rsplit("-s", 1)[0]].model_copy(update={"id": scenario}) for scenario in selection.ids]
    transcripts = [lines[scenario.rsplit("-s", 1)[0]].model_copy(update={"id": scenario}) for scenario in selection.ids]
    run_dir = scratch / "bundles" / f"{run.run_id}-{count}"
    bundle = Bundle(run_dir, Redactor())
    bundle.embed_matrix(raw, loaded.sha256)
    kind_of(cell.suite).embed(bundle, cell.suite, selection)
    matrix = MatrixInfo(path=loaded.path.name, name=loaded.matrix.name, sha256=loaded.sha256)
    update = {
        "run_id": run_dir.name,
        "matrix": matrix,
        "planned_cells": [cell.id],
        "excluded_cells": {},
        "excluded_kinds": {},
        "author": author_source(loaded),
    }
    bundle.write_run(
        RunRecord.model_validate({**run.model_dump(), **update, "chat_templates": {MODEL: run.chat_templates[MODEL]}})
    )
    writer = bundle.start_cell(cell.id)
    writer.write_jsonl("scenarios.jsonl", rows)
    writer.write_jsonl("transcripts.jsonl", transcripts)
    writer.write_text("engine.log", reader.cell_file(record.cell.id, "engine.log", 10**8).decode())
    writer.write_text("harness.log", without_progress(reader.cell_file(record.cell.id, "harness.log", 10**8).decode()))
    seconds = round((record.harness_seconds or 0) * count / len(record.suite_ids), 3)
    summary = CellSummary.of(rows)
    writer.finish(
        record.model_copy(
            update={
                "cell": cell,
                "suite_ids": selection.ids,
                "suite_sha256": selection.sha256,
                "summary": summary,
                "harness_seconds": seconds,
            }
        )
    )
    bundle.write_manifest()
    return run_dir


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def timed(*argv: str) -> tuple[float, float, int]:
    """(wall seconds, peak resident MB, exit status) of `repro ARGV` in a child process (its own
    rusage, from wait4)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as output:
        child = subprocess.Popen(
            [sys.executable, "-m", "repro", *argv], cwd=ROOT, stdout=output, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        if child.returncode != 0:
            output.seek(0)
            print(
                f"  repro {' '.join(argv[:2])}: exit {child.returncode}: "
                f"{output.read().decode(errors='replace').strip()[-400:]}",
                flush=True,
            )
    return seconds, usage.ru_maxrss / 1024, child.returncode


def commands(run_dir: Path, out: Path) -> dict[str, list[str]]:
    tables, claims = out / "tables", out / "claims.yaml"
    steps = {
        "check": ["check", str(run_dir)],
        "paper render": ["paper", "render", str(run_dir), "--out", str(tables)],
        "verify --published": ["verify", str(run_dir), "--published", str(tables / "results.json")],
        "claims from-results": [
            "claims",
            "from-results",
            str(run_dir),
            "--citation",
            "bookkeeping benchmark",
            "--url",
            "https://example.invalid/bookkeeping",
            "--out",
            str(claims),
        ],
        "verify --claims": ["verify", str(run_dir), "--claims", str(claims)],
        "results merge": ["results", "merge", str(run_dir), "--out", str(out / "merged")],
    }
    try:
        import inspect_ai  # noqa: F401

        steps["export inspect"] = ["export", "inspect", str(run_dir), "--out", str(out / "inspect")]
    except ImportError:
        print("  (inspect_ai is not installed: export inspect not timed)")
    return steps


def measure(count: int, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="repro-bookkeeping-") as folder:
        scratch = keep / str(count) if keep else Path(folder)
        started = time.monotonic()
        run_dir = synthesise(count, scratch)
        built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{count} scenarios: synthesised in {time.monotonic() - started:.1f} s ({built:.0f} MB peak so far), "
            f"{folder_bytes(run_dir) / 1e6:.1f} MB on disk",
            flush=True,
        )
        for name, argv in commands(run_dir, scratch / "out").items():
            seconds, peak, status = timed(*argv)
            load = "/".join(f"{figure:.1f}" for figure in os.getloadavg())
            print(
                f"  {name:20s} {seconds:8.2f} s  {seconds / count * 1000:7.2f} ms/scenario  {peak:7.0f} MB peak  "
                f"exit {status}  load {load}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--keep", type=Path, default=None, help="Keep the bundles and outputs under this folder.")
    arguments = parser.parse_args()
    for size in arguments.sizes.split(","):
        measure(int(size), arguments.keep)
