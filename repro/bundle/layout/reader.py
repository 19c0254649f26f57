"""`BundleReader`: every read of a bundle, bounded, never following a link, each id checked before
it names a path: the run's and its cells' records, a cell's files, the suites and carried inputs,
the digests the manifest lists, and what an interrupted attempt left in a partial cell
(`cells/.<id>.partial/`), which `--resume` reads back through the writer's `Bundle`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from pydantic import BaseModel, Field

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle.layout.integrity import bundle_files, cell_problems, manifest_problems
from repro.bundle.layout.loading import ParsedLines, load_cell, load_run
from repro.bundle.layout.names import (
    ATTEMPTS_FILE,
    AUTHOR_PROFILES_COPY,
    CELL_FILE,
    CELLS_DIR,
    CLOCK_FILE,
    INPUTS_DIR,
    KEPT_DIR,
    MATRIX_COPY,
    PARTIAL_FILE,
    RUN_FILE,
    SCENARIOS_FILE,
    TRANSCRIPTS_FILE,
    is_partial,
    is_plain_name,
    plain_name,
    safe_id,
    suite_folder,
    unlinked,
)
from repro.bundle.records import CellRecord, EarlierAttempt, KeptScenario, PartialCell, RunRecord
from repro.core.errors import BadInput
from repro.core.files import (
    MAX_JSON_BYTES,
    MAX_JSONL_BYTES,
    read_regular,
    sha256_file,
)
from repro.core.yamlsource import MAX_YAML_BYTES


class AttemptClock(BaseModel):
    """An attempt's harness wall time up to its latest kept scenario (cells/.<id>.partial/harness-clock.json)."""

    harness_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class BundleReader:
    """Reads one run's bundle, which may come from anyone: every read is bounded, refuses a link
    (the cells folder, a cell's folder or the file itself) and checks each id before it names a path.
    A cell's scenarios.jsonl and transcripts.jsonl are parsed once per reader (again only when the
    file changed): it keeps the parsed lines of its `remember` most recent cells (None: of every
    cell, for a command that holds them all anyway, as `paper render` does).

    Two listings of cells, not to be confused:
    - `cell_ids()`: the cells the run planned (run.json's planned_cells, once each, in order) whose
      cell.json is present, readable or not: the cells that ran;
    - `cells_on_disk()`: every entry of cells/ (dot-entries, the partial cells, aside), planned or
      not: what `repro check` holds to the plan (`stray_cells()`: those the run neither planned
      nor excluded)."""

    def __init__(self, run_dir: Path, remember: int | None = 1) -> None:
        self.dir = run_dir
        self.parsed = ParsedLines(remember)

    def run(self) -> RunRecord:
        return load_run(self.dir)

    def run_text(self) -> str:
        """run.json as text (what the host-identity lint scans)."""
        return read_regular(self.dir / RUN_FILE, MAX_JSON_BYTES).decode("utf-8", errors="replace")

    def manifest_problems(self) -> list[str]:
        return manifest_problems(self.dir)

    def file_digests(self) -> list[tuple[str, str]]:
        """(relative path, sha256) of every file the manifest covers, sorted by path: what it lists."""
        return [(path.relative_to(self.dir).as_posix(), sha256_file(path)) for path in bundle_files(self.dir)]

    def matrix_path(self) -> Path:
        """The embedded matrix.yaml (repro.spec.loading.load_matrix reads it embedded: bounded, no link)."""
        return self.dir / MATRIX_COPY

    def author_profiles(self) -> bytes:
        """The embedded copy of the matrix's own profiles file (bounded, no link)."""
        return read_regular(self.dir / AUTHOR_PROFILES_COPY, MAX_YAML_BYTES)

    def cell_ids(self) -> list[str]:
        return [cell_id for cell_id in dict.fromkeys(self.run().planned_cells) if self.has_cell(cell_id)]

    def cells_on_disk(self) -> list[str]:
        folder = self.dir / CELLS_DIR
        if folder.is_symlink() or not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith("."))

    def partial_cells(self) -> list[str]:
        """The partial cells' folders (`.<id>.partial`): an interrupted attempt, never a complete cell."""
        folder = self.dir / CELLS_DIR
        if folder.is_symlink() or not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if is_partial([CELLS_DIR, entry.name]))

    def stray_cells(self) -> list[str]:
        run = self.run()
        return [
            name for name in self.cells_on_disk() if name not in run.planned_cells and name not in run.excluded_cells
        ]

    def has_cell(self, cell_id: str) -> bool:
        return self.has_file(cell_id, CELL_FILE)

    def cell_dir(self, cell_id: str) -> Path:
        """The cell's folder (BadInput for an unsafe id, or when it or cells/ is a link)."""
        return unlinked(self.dir / CELLS_DIR / safe_id(cell_id, "cell id"))

    def cell(self, cell_id: str) -> CellRecord:
        return load_cell(self.cell_dir(cell_id))

    def cell_problems(self, cell_id: str) -> list[str]:
        return cell_problems(self.cell_dir(cell_id))

    def results(self, cell_id: str) -> list[ScenarioResult]:
        """scenarios.jsonl of the cell (parsed once per reader, see ParsedLines)."""
        return self.parsed.read(self.cell_dir(cell_id), SCENARIOS_FILE, ScenarioResult)

    def transcripts(self, cell_id: str) -> list[TranscriptLine]:
        """transcripts.jsonl of the cell (parsed once per reader, see ParsedLines)."""
        return self.parsed.read(self.cell_dir(cell_id), TRANSCRIPTS_FILE, TranscriptLine)

    def has_file(self, cell_id: str, name: str) -> bool:
        """Whether the cell holds `name` as a regular file (not a link)."""
        try:
            return stat.S_ISREG(self.cell_dir(cell_id).joinpath(plain_name(name)).lstat().st_mode)
        except (BadInput, OSError):
            return False

    def cell_file(self, cell_id: str, name: str, limit: int) -> bytes:
        """The bytes of one file of the cell (engine.log, an external harness's raw output)."""
        return read_regular(self.cell_dir(cell_id) / plain_name(name), limit)

    def suite_dir(self, suite_id: str) -> Path:
        """suites/<suite-id>/ (BadInput for an unsafe id, or when it or suites/ is a link)."""
        return unlinked(suite_folder(self.dir, suite_id))

    def suite_file(self, suite_id: str, relative: str, limit: int) -> bytes:
        return read_regular(self.suite_dir(suite_id) / relative, limit)

    def carried(self) -> list[str]:
        """The names in inputs/ (every entry: a folder or a link there is the carried-inputs rule's to refuse)."""
        folder = self.dir / INPUTS_DIR
        return sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []

    def carried_file(self, name: str, limit: int) -> Path | None:
        """inputs/<name> when the bundle carries it (None when not; BadInput for a link, a folder or
        more than `limit` bytes)."""
        path = unlinked(self.dir / INPUTS_DIR / plain_name(name))
        if not path.exists():
            return None
        if not stat.S_ISREG(path.lstat().st_mode) or path.lstat().st_size > limit:
            raise BadInput(f"{INPUTS_DIR}/{name[:80]}: not a regular file of at most {limit // 1024**2} MB")
        return path

    # ------------------------------------------------------------ partial cells (what --resume reads back)

    def partial_dir(self, cell_id: str) -> Path:
        """cells/.<id>.partial/: an interrupted attempt at the cell (BadInput for an unsafe id)."""
        return self.dir / CELLS_DIR / f".{safe_id(cell_id, 'cell id')}.partial"

    def has_partial(self, cell_id: str) -> bool:
        """Whether the cell has a partial folder (a folder, not a link)."""
        folder = self.partial_dir(cell_id)
        return not folder.is_symlink() and folder.is_dir()

    def partial_file(self, cell_id: str, name: str, limit: int) -> bytes:
        """The bytes of one file of the cell's partial folder (an engine log, a record)."""
        return read_regular(self.partial_dir(cell_id) / plain_name(name), limit)

    def partial_record(self, cell_id: str) -> PartialCell:
        """partial.json: what the kept scenarios of the partial folder belong to."""
        return PartialCell.model_validate_json(self.partial_file(cell_id, PARTIAL_FILE, MAX_JSON_BYTES))

    def kept_in_partial(self, cell_id: str) -> list[tuple[str, KeptScenario]]:
        """(file name's stem, scenario) of each regular `kept/<id>.json` of the partial folder (no
        link, no dot-entry), by file name."""
        return [
            (path.stem, KeptScenario.model_validate_json(read_regular(path, MAX_JSONL_BYTES)))
            for path in kept_files(self.partial_dir(cell_id) / KEPT_DIR)
        ]

    def partial_attempts(self, cell_id: str) -> list[EarlierAttempt]:
        """attempts.json: the earlier attempts whose scenarios the partial folder carries (none
        when it has no such file)."""
        if not (self.partial_dir(cell_id) / ATTEMPTS_FILE).exists():
            return []
        return [
            EarlierAttempt.model_validate(one)
            for one in json.loads(self.partial_file(cell_id, ATTEMPTS_FILE, MAX_JSON_BYTES))
        ]

    def partial_clock(self, cell_id: str) -> AttemptClock:
        """harness-clock.json: the attempt's harness wall time (unknown when it has no such file)."""
        if not (self.partial_dir(cell_id) / CLOCK_FILE).exists():
            return AttemptClock()
        return AttemptClock.model_validate_json(self.partial_file(cell_id, CLOCK_FILE, MAX_JSON_BYTES))


def kept_files(folder: Path) -> list[Path]:
    """The kept scenarios' files of a partial cell: regular `<id>.json` files (no link, no dot-entry)."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.suffix == ".json" and is_plain_name(p.name) and not p.is_symlink() and p.is_file()
    )
