"""`repro results merge`, `repro results reference`, `repro results csv`, `repro results runtimes` and
`repro results repeats`."""

from __future__ import annotations

import csv
import io
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import typer
from rich.console import Console

from harness.scoring import lab_code
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import MergeRecord
from repro.bundle.layout.merge import merge as merge_bundles
from repro.bundle.layout.names import MANIFEST, MERGE_RECORD, safe_id
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import to_json
from repro.commands.vocabulary import Typer
from repro.core.archives import pack_targz
from repro.core.errors import BadInput
from repro.core.files import MAX_JSON_BYTES, atomic_write, read_regular, sha256_file
from repro.core.terminal import shown
from repro.core.yamlsource import require_file_target
from repro.rerun.archive import is_merged, missing_file, unpack_bundle
from repro.suites.reseal import reseal_run

CSV_COLUMNS = (
    "run cell model engine protocol repeat scenario category passed failure_type lab_code steps seconds tokens_in "
    "tokens_out"
).split()
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

app = Typer(help="Work with result bundles.", no_args_is_help=True)


@app.command()
def merge(
    sources: list[Path] = typer.Argument(..., help="Run folders or results folders (e.g. one per shard)."),
    out: Path = typer.Option(..., "--out", help="The merged results folder."),
    accept: list[str] = typer.Option(
        [],
        "--accept",
        help="A setup difference between the shards to merge anyway: hardware (recorded in MERGED.json).",
    ),
) -> None:
    """Join shard bundles of one matrix and profile into one results folder (bundles copied unchanged).

    Shards must share one setup: matrix, profile and its settings, commit and hardware. Shards made
    on different hardware merge only with `--accept hardware`, which MERGED.json records.

    Exit codes: 0 merged; 1 an unexpected error; 2 bad input."""
    merged = merge_bundles(sources, out, frozenset(accept))
    console = Console()
    for path in merged:
        console.print(f"merged {shown(path)}", soft_wrap=True)
    console.print(f"{len(merged)} bundles in {shown(out)}; check them with: repro check {shown(out)}", soft_wrap=True)


@app.command()
def reference(
    bundle: Path = typer.Argument(..., help="A run folder, a merged folder, or its .tar.gz."),
    out: Path = typer.Option(..., "--out", help="The rewritten bundle: a folder, or a .tar.gz when BUNDLE is one."),
) -> None:
    """Rewrite a bundle so that the inputs it carries and did not make (another project's scenario
    files, wheel or harness archive) become references by sha256, as runs write them now: results,
    transcripts and logs keep their bytes; run.json lists the references; the manifest is written
    again. The bundle is never changed in place, and a signed one is refused (sign the new one).

    Exit codes: 0 rewritten; 1 an unexpected error; 2 bad input."""
    console = Console(highlight=False)
    archive = bundle.name.endswith((".tar.gz", ".tgz"))
    if archive != out.name.endswith((".tar.gz", ".tgz")) or out.exists() or bundle.is_symlink():
        raise BadInput(f"--out {out}: a new {'.tar.gz' if archive else 'folder'}, as BUNDLE is one (and not a link)")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".reference-", dir=out.parent))
    try:
        folder = unpack_bundle(bundle, work) if archive else copied_bundle(bundle, work)
        reseal_bundle(folder, lambda line: console.print(shown(line), soft_wrap=True))
        if archive:
            pack_targz(folder, out)
        else:
            folder.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.print(f"rewritten: {shown(out)}; check it with: repro check {shown(out)}", soft_wrap=True)


def copied_bundle(bundle: Path, work: Path) -> Path:
    """A copy of a run or merged folder to rewrite (links refused: nothing is followed)."""
    if not (is_merged(bundle) or bundle.is_dir() and not missing_file(bundle)):
        raise BadInput(f"{bundle}: not a run folder, a merged folder or a bundle archive")
    target = work / bundle.name
    shutil.copytree(bundle, target, symlinks=True)
    return target


def reseal_bundle(folder: Path, say: Callable[[str], None]) -> None:
    """Each run of a run or merged folder referenced (repro.suites.reseal), MERGED.json held to
    the runs' new manifests."""
    if not is_merged(folder):
        reseal_run(folder, say)
        return
    record = MergeRecord.model_validate_json(read_regular(folder / MERGE_RECORD, MAX_JSON_BYTES))
    for shard in record.shards:
        reseal_run(folder / safe_id(shard.run_id, "run id"), say)
    shards = [
        shard.model_copy(update={"manifest_sha256": sha256_file(folder / shard.run_id / MANIFEST)})
        for shard in record.shards
    ]
    atomic_write(folder / MERGE_RECORD, to_json(record.model_copy(update={"shards": shards})).encode())


@app.command("csv")
def csv_export(
    results: Path = typer.Argument(..., help="A run folder or a results folder."),
    out: Path | None = typer.Option(None, "--out", help="The CSV file (standard output when omitted)."),
) -> None:
    """Per-scenario results of a bundle as CSV: one row per scenario, repeat and cell (complete
    cells, any verdict).

    Exit codes: 0 written; 1 an unexpected error; 2 bad input."""
    if out is not None:
        require_file_target(out, "CSV file")
    rows = list(scenario_rows(results))
    text = to_csv(rows)
    if out is None:
        sys.stdout.write(text)
        return
    atomic_write(out, text.encode())
    Console(stderr=True).print(f"wrote {len(rows)} scenario rows to {shown(out)}", soft_wrap=True)


@app.command("runtimes")
def runtimes(
    run: Path = typer.Argument(..., help="A run folder (or a results folder: each run in it)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per runtime, a line each."),
) -> None:
    """What each agent runtime of a run did, read from its cells' wires: the system prompt it
    injected, the sampling it sent and what the relay filled, what it tried outside (refused), the
    files it left in its HOME, the lines printed beside its answers, and where a turn's time went.

    Exit codes: 0 shown; 1 an unexpected error; 2 bad input (no bundle, a bad wire)."""
    from repro.report.runtimes import runtime_summaries, summary_lines

    out = Console(soft_wrap=True, highlight=False)
    for run_dir in find_runs(run):
        summaries = runtime_summaries(BundleReader(run_dir))
        if not as_json:
            out.print(f"{shown(run_dir.name)}: {len(summaries)} runtime(s) with a wire", markup=False)
        for summary in summaries:
            if as_json:
                sys.stdout.write(summary.model_dump_json() + "\n")
                continue
            for line in summary_lines(summary):
                out.print(shown(line), markup=False)


@app.command("repeats")
def repeats(
    run: Path = typer.Argument(..., help="A run folder (or a results folder: its runs' VALID cells)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per row, a line each."),
) -> None:
    """Each row's repeats in the fields Local Agent Bench's repeat runner writes (runs_completed,
    total_scores, mean_total, stdev_total, min_total, max_total; per task runs, mean_score,
    stdev_score, pass_count, failure_reasons), then ours (tasks passed per run, their mean and sd,
    each task's passes), from the VALID cells alone.

    Exit codes: 0 shown; 1 an unexpected error; 2 bad input (no bundle)."""
    from repro.report.aggregate import collect_with_cells
    from repro.report.repeats import repeat_lines, repeat_runs, repeat_summary

    out = Console(soft_wrap=True, highlight=False)
    tables, cells = collect_with_cells([run])
    for row in tables.rows:
        summary = repeat_summary(row, repeat_runs(cells.get(row.key, [])))
        if as_json:
            sys.stdout.write(summary.model_dump_json() + "\n")
            continue
        for line in repeat_lines(summary):
            out.print(shown(line), markup=False)


def to_csv(rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows([_cell_text(value) for value in row] for row in rows)
    return buffer.getvalue()


def scenario_rows(results: Path) -> Iterator[list[object]]:
    for run_dir in find_runs(results):
        bundle = BundleReader(run_dir)
        run_id = bundle.run().run_id
        for cell_id in bundle.cell_ids():
            cell = bundle.cell(cell_id).cell
            for r in bundle.results(cell_id):
                yield [
                    run_id,
                    cell.id,
                    cell.model.id,
                    cell.engine.id,
                    cell.protocol,
                    cell.repeat,
                    r.id,
                    r.category,
                    r.passed,
                    r.failure_type or "",
                    lab_code(r.failure_type) or "",
                    r.steps,
                    r.seconds,
                    r.tokens_in,
                    r.tokens_out,
                ]


def _cell_text(value: object) -> object:
    """Text a spreadsheet would run as a formula is quoted (a bundle may come from anyone)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
