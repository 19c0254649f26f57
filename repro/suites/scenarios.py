"""Scenario suites as the orchestrator sees them: files in `<folder>/<category>/<id>.json`.

The orchestrator knows only this layout, never what a scenario holds: it selects ids, hashes
the selected files (so a bundle records exactly which scenario bytes were run) and hands the
folder and the ids to the harness container.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle.layout.loading import read_results, read_transcripts, record_lines
from repro.bundle.layout.names import WIRE_FILE, suite_folder
from repro.bundle.layout.writer import Bundle, CellWriter, write_in
from repro.bundle.records import CellRecord, CellSummary, InputReference, KeptScenario
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import MAX_JSON_BYTES, read_regular, sha256_file
from repro.plan.replicas import deal, in_suite_order
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.matrix import Suite
from repro.spec.profiles import Profile
from repro.suites.base import (
    SCENARIO_MOUNT,
    CellOutputs,
    Log,
    SuiteKind,
    cache_prompt_argv,
    fixture_files,
    fixtures_beside,
)
from repro.suites.references import admit_reference, files_reference, is_others
from repro.suites.sources import fetch_suite


def selection_files(selection: SuiteSelection) -> dict[str, Path]:
    """The files a selection is made of, by their path in a bundle's layout of the suite:
    `scenarios/<category>/<id>.json`, and the shared fixtures beside them as `fixtures/...`."""
    files = {
        f"scenarios/{category}/{scenario_id}.json": selection.folder / category / f"{scenario_id}.json"
        for scenario_id, category in selection.categories.items()
    }
    fixtures = fixtures_beside(selection.folder)
    files.update({f"fixtures/{path.relative_to(fixtures).as_posix()}": path for path in fixture_files(fixtures)})
    return files


def select_scenarios(suite: Suite, root: Path = PROJECT_ROOT) -> SuiteSelection:
    """The scenario files a suite selects, in (category, id) order, and their sha256 with the
    shared fixtures' (so a bundle records exactly which bytes were run)."""
    if suite.source is not None:
        from repro.suites.sources import scenario_folder

        folder = scenario_folder(suite)
    else:
        folder = (root / suite.path).resolve()
    if not folder.is_dir():
        raise BadInput(f"suite {suite.id}: scenario folder {suite.path} does not exist")
    files = sorted(folder.glob("*/*.json"), key=lambda p: (p.parent.name, p.stem))
    if suite.categories:
        files = [f for f in files if f.parent.name in suite.categories]
    if suite.ids:
        missing = sorted(set(suite.ids) - {f.stem for f in files})
        if missing:
            raise BadInput(f"suite {suite.id}: unknown scenario ids {', '.join(missing)}")
        files = [f for f in files if f.stem in suite.ids]
    if suite.per_category:
        files = _first_per_category(files, suite.per_category)
    if not files:
        raise BadInput(f"suite {suite.id}: no scenario selected from {suite.path}")
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
    fixtures = fixtures_beside(folder)
    for path in fixture_files(fixtures):
        digest.update(f"fixtures/{path.relative_to(fixtures).as_posix()}\0{sha256_file(path)}\n".encode())
    return SuiteSelection(
        folder=folder,
        ids=[f.stem for f in files],
        categories={f.stem: f.parent.name for f in files},
        sha256=digest.hexdigest(),
    )


def _first_per_category(files: list[Path], count: int) -> list[Path]:
    taken: dict[str, int] = {}
    chosen = []
    for path in files:
        if taken.get(path.parent.name, 0) < count:
            chosen.append(path)
            taken[path.parent.name] = taken.get(path.parent.name, 0) + 1
    return chosen


def harness_command(
    cell: Cell, client: list[str], suite: SuiteSelection, profile: Profile, *, ids: list[str] | None = None
) -> list[str]:
    """The harness's argv for one cell (or for one worker's share `ids` of its scenarios);
    `client` names the engine (engines.base.client_argv)."""
    decoding = cell.decoding
    return [
        "run",
        "--scenarios",
        SCENARIO_MOUNT,
        *client,
        "--protocol",
        cell.protocol,
        "--ids",
        *(suite.ids if ids is None else ids),
        "--max-tokens",
        str(decoding.max_tokens),
        "--temperature",
        str(decoding.temperature),
        "--seed",
        str(cell.seed),
        "--timeout",
        str(profile.step_timeout_s),
        "--out",
        "/out/scenarios.jsonl",
        "--transcripts",
        "/out/transcripts.jsonl",
        "--progress",
        "json",
        *cache_prompt_argv(profile.cache_prompt),
        *runtime_argv(cell),
    ]


def runtime_argv(cell: Cell) -> list[str]:
    """The harness's runtime options for a cell played through an agent runtime (none for raw)."""
    runtime = cell.runtime
    if runtime is None:
        return []
    return [
        "--runtime",
        runtime.facts.adapter,
        "--runtime-clock",
        runtime.clock,
        "--runtime-context",
        str(cell.decoding.context),
        "--wire",
        f"/out/{WIRE_FILE}",
    ]


def collect_results(writer: CellWriter, record: CellRecord, suite: SuiteSelection, outputs: CellOutputs) -> CellRecord:
    """Read what each harness worker wrote (untrusted: bounded, no links, typed; each exactly its
    share of the scenarios not kept), put it with the kept ones in suite order, or fail the cell with why."""
    out_dirs, ended, kept = outputs
    failed = next((e for e in ended if e.timed_out or e.code != 0), None)
    if failed is not None:
        why = (
            f"harness did not finish within {failed.seconds:.0f}s (stopped)"
            if failed.timed_out
            else f"harness exited with status {failed.code}"
        )
        return record.model_copy(update={"status": "error", "reason": f"{why}; log tail: {failed.log_tail[-600:]}"})
    done = {one.result.id for one in kept}
    shares = deal([i for i in suite.ids if i not in done], len(out_dirs))
    results, transcripts = [one.result for one in kept], [one.transcript for one in kept]
    try:
        for out_dir, share in zip(out_dirs, shares, strict=True):
            written = read_results(out_dir)
            if [r.id for r in written] != share:
                missing = sorted(set(share) - {r.id for r in written})
                return record.model_copy(
                    update={
                        "status": "error",
                        "reason": "harness results do not match the suite (missing: "
                        f"{', '.join(missing[:5]) or 'none'})",
                    }
                )
            results += written
            transcripts += read_transcripts(out_dir)
    except BadInput as error:
        return record.model_copy(update={"status": "error", "reason": f"harness output refused: {error}"})
    writer.write_jsonl("scenarios.jsonl", in_suite_order(results, suite.ids))
    writer.write_jsonl("transcripts.jsonl", in_suite_order(transcripts, suite.ids))
    return record.model_copy(update={"summary": CellSummary.of(results)})


def finished_scenarios(out_dir: Path) -> list[KeptScenario]:
    """The scenarios a running harness has finished: the whole lines of the files it appends to
    while it runs (harness.cli `_atomic_lines`: `.scenarios.jsonl.*.tmp` and
    `.transcripts.jsonl.*.tmp` in its output folder, each line flushed before the scenario's progress
    line is printed, renamed into place at the end), result and transcript paired in order.
    Untrusted: bounded, no links, typed; anything unreadable is none (the cell's collect judges it)."""
    try:
        results = [ScenarioResult.model_validate_json(line) for line in whole_lines(out_dir, "scenarios.jsonl")]
        transcripts = [TranscriptLine.model_validate_json(line) for line in whole_lines(out_dir, "transcripts.jsonl")]
    except (BadInput, OSError, ValueError):
        return []
    return [KeptScenario.of(r, t) for r, t in zip(results, transcripts, strict=False) if r.id == t.id]


def whole_lines(out_dir: Path, name: str) -> list[bytes]:
    """The newline-ended lines of the harness's file in progress for `name` (none when there is
    not exactly one), each within the bundle's bounds (repro.bundle.layout.loading.record_lines)."""
    found = [p for p in out_dir.glob(f".{name}.*.tmp") if not p.is_symlink()]
    if len(found) != 1:
        return []
    return [line for _, line in record_lines(found[0]) if line.endswith(b"\n") and line.strip()]


class ScenarioSuites(SuiteKind):
    """Our own suites: scenario files run by our harness (harness/) in the harness image."""

    name = "scenarios"

    def author_files(self, suite: Suite) -> bool:
        return suite.source is None

    def select(self, suite: Suite, root: Path | None = None) -> SuiteSelection:
        return select_scenarios(suite, PROJECT_ROOT if root is None else root)

    def fetch(self, suite: Suite, log: Log) -> str | None:
        if suite.source is None:
            return None
        fetch_suite(suite.source, log=log)
        return f"{len(self.select(suite).ids)} scenarios from {suite.source.describe()}"

    def refuse_unfit(self, selection: SuiteSelection) -> list[str]:
        """Every selected scenario loads, its reference passes, and doing nothing does not pass it
        (harness.lint.unfit_to_score)."""
        from harness.lint import unfit_to_score

        return [
            p
            for sid, category in selection.categories.items()
            for p in unfit_to_score(selection.folder / category / f"{sid}.json")
        ]

    def embed(self, bundle: Bundle, suite: Suite, selection: SuiteSelection) -> list[InputReference]:
        """The exact scenario files the suite ran, and the shared fixtures beside them, laid out so
        that selecting over the copy gives the same ids, categories and sha256: embedded when the
        project or the author wrote them (or the matrix carries them), else referenced."""
        files = selection_files(selection)
        if suite.source is not None:
            reference = files_reference(suite, files, carried=not is_others(suite))
            if not reference.carried:
                admit_reference(reference, files)  # so that a check on this machine finds them by sha256
                return [reference]
        target = suite_folder(bundle.dir, suite.id)
        for path, source in files.items():
            write_in(bundle.dir, target / path, read_regular(source, MAX_JSON_BYTES))
        return [reference] if suite.source is not None else []

    def command(
        self, cell: Cell, client: list[str], selection: SuiteSelection, profile: Profile, ids: list[str]
    ) -> list[str]:
        return harness_command(cell, client, selection, profile, ids=ids)

    def finished(self, out_dir: Path) -> list[KeptScenario]:
        return finished_scenarios(out_dir)

    def collect(
        self, writer: CellWriter, record: CellRecord, selection: SuiteSelection, outputs: CellOutputs
    ) -> CellRecord:
        return collect_results(writer, record, selection, outputs)
