"""Result bundles on disk: layout, atomic writes, reading, integrity, discovery and merging.

    results/<run-id>/run.json                 the run record (repro.bundle.records.RunRecord)
    results/<run-id>/cells/<cell-id>/...      scenarios.jsonl, transcripts.jsonl, logs, cell.json
    results/<run-id>/inputs/<sha256>.<ext>    external inputs no public address serves, carried (an external harness's archive)
    results/<run-id>/MANIFEST.sha256          sha256 of every other file

Every byte written passes through the redactor and is written atomically (0644 files, 0755
folders). A cell is written into `cells/.<id>.partial/` and renamed into place only once
complete, so a partial cell is never taken for a complete one; `cell.json` (written last) lists
the sha256 of the cell's other files, which is how `--resume` knows a cell is complete and intact.
While a cell runs, each finished scenario is kept in the partial folder as it finishes
(`kept/<scenario-id>.json`, one atomic write each, beside `partial.json`, what they belong to):
an interrupted cell keeps them, `--resume` verifies them (`kept_scenarios`) and reruns only the
rest, and the complete cell holds neither. `repro check` calls a partial folder left in a bundle
INVALID (`BundleReader.partial_cells`).

A bundle may come from someone else: everything outside this module reads one through a
`BundleReader`, whose every read is bounded (repro.core.files' MAX_*_BYTES), never follows a link and
checks each id before it names a path; anything but regular files and folders (a symlink, a
device, a dot-entry) is reported, never read.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle.provenance import source_change
from repro.bundle.records import CellRecord, EarlierAttempt, KeptScenario, PartialCell, RunRecord, SourceState, utc_now
from repro.bundle.redact import Redactor
from repro.core.errors import BadInput, ReproError
from repro.core.files import (
    DIR_MODE,
    MAX_JSON_BYTES,
    MAX_JSONL_BYTES,
    MAX_LOG_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_RECORD_LINE_BYTES,
    atomic_write,
    open_regular,
    read_regular,
    sha256_bytes,
    sha256_file,
    short_error,
)
from repro.core.yamlsource import MAX_YAML_BYTES, parse_json_bounded
from repro.plan.planner import parse_shard

MANIFEST = "MANIFEST.sha256"
SIGNATURE = "MANIFEST.sha256.sig"
ATTESTATION = "MANIFEST.sha256.intoto.jsonl"  # the in-toto statement in a DSSE envelope (repro.bundle.attestation)
RUN_FILE = "run.json"
CELLS_DIR = "cells"
MERGE_RECORD = "MERGED.json"  # beside the runs of a merged results folder
SUITES_DIR = "suites"  # suites/<suite-id>/scenarios/<category>/<id>.json and .../fixtures/ (format 3)
INPUTS_DIR = "inputs"  # inputs/<sha256>.<ext>: an external input the bundle carries, named by the sha256 its pin gives
MATRIX_COPY = "matrix.yaml"  # the matrix file the run planned from, byte for byte (format 3)
AUTHOR_PROFILES_COPY = "author-profiles.yaml"  # a matrix's own profiles file (run.json author.profiles_file), byte for byte
CELL_FILE = "cell.json"
PARTIAL_FILE = "partial.json"  # in cells/.<id>.partial/: what its kept scenarios belong to
KEPT_DIR = "kept"  # in cells/.<id>.partial/: one <scenario-id>.json per finished scenario
ATTEMPTS_FILE = "attempts.json"  # in cells/.<id>.partial/: the earlier attempts whose scenarios it keeps
ENGINE_LOG = "engine.log"  # a cell's engine log; in cells/.<id>.partial/, the interrupted attempt's
LATEST = "LATEST"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,199}$")
Line = TypeVar("Line", ScenarioResult, TranscriptLine)
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(ReproError):
    """The results folder is full: the run stops (exit 1) with no half-written file or cell."""


@contextlib.contextmanager
def space_in(folder: Path, path: Path) -> Iterator[None]:
    """A full disk (or quota) while writing `path` under `folder` becomes one line naming the folder."""
    try:
        yield
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        where = path.relative_to(folder).as_posix() if path.is_relative_to(folder) else path.name
        raise DiskFull(f"no space left on {folder} (writing {where}); free space there, then finish the run with --resume") from None


def write_in(folder: Path, path: Path, data: bytes) -> None:
    """atomic_write (whole or not at all), DiskFull when `folder`'s disk is full."""
    with space_in(folder, path):
        atomic_write(path, data)


def to_json(model: BaseModel | dict | list) -> str:
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else model
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def safe_id(value: str, what: str = "id") -> str:
    """An id read from a bundle or a plan, used as a path part: refused unless plainly safe."""
    if not SAFE_ID.match(value) or ".." in value:
        raise BadInput(f"unsafe {what} {value[:80]!r}: ids are letters, digits and _.@+- and start with a letter or digit")
    return value


# ---------------------------------------------------------------- writing


class Bundle:
    """Writes one run's bundle; every byte passes through the redactor."""

    def __init__(self, run_dir: Path, redactor: Redactor) -> None:
        self.dir = run_dir
        self.redactor = redactor
        self.reader = BundleReader(run_dir)  # what --resume reads back of the cells already written
        with space_in(run_dir, run_dir / CELLS_DIR):
            (run_dir / CELLS_DIR).mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        for folder in (run_dir, run_dir / CELLS_DIR):
            os.chmod(folder, DIR_MODE)

    def write_text(self, relative: str, text: str) -> str:
        data = self.redactor.text(text).encode()
        write_in(self.dir, self.dir / relative, data)
        return sha256_bytes(data)

    def write_run(self, record: RunRecord) -> None:
        self.write_text(RUN_FILE, to_json(record))

    def embed_matrix(self, raw: bytes, sha256: str, name: str = MATRIX_COPY) -> None:
        """The matrix's bytes, so `repro check` can recompute the plan (or, as `name`, the matrix's own
        profiles file); refused when they are not the planned file's (changed since it was read) or
        when redaction would alter them."""
        if sha256_bytes(raw) != sha256:
            raise BadInput("the matrix file changed while the run was starting; run again")
        text = raw.decode("utf-8", errors="strict")
        if self.redactor.text(text) != text:
            raise BadInput("the matrix file names a host path or user; bundles carry their matrix, so use paths relative to the checkout")
        write_in(self.dir, self.dir / name, raw)

    def carry(self, name: str, data: bytes) -> None:
        """An external input's bytes as `inputs/<name>`, unchanged (verified against its pin by the caller)."""
        write_in(self.dir, self.dir / INPUTS_DIR / plain_name(name), data)

    def cell_dir(self, cell_id: str) -> Path:
        return self.dir / CELLS_DIR / safe_id(cell_id, "cell id")

    def partial_dir(self, cell_id: str) -> Path:
        return self.dir / CELLS_DIR / f".{safe_id(cell_id, 'cell id')}.partial"

    def start_cell(self, cell_id: str, partial: PartialCell | None = None, kept: Sequence[KeptScenario] = ()) -> CellWriter:
        """A fresh partial folder for the cell; with `partial`, one that keeps each finished
        scenario (starting with `kept`, an interrupted attempt's, already verified)."""
        folder = self.partial_dir(cell_id)
        shutil.rmtree(folder, ignore_errors=True)
        with space_in(self.dir, folder):
            folder.mkdir(parents=True, mode=DIR_MODE)
        os.chmod(folder, DIR_MODE)
        writer = CellWriter(self, cell_id, folder)
        if partial is not None:
            write_in(self.dir, folder / PARTIAL_FILE, self.redactor.text(to_json(partial)).encode())
            for scenario in kept:
                writer.keep(scenario)
        return writer

    def kept_scenarios(self, cell_id: str, expected: PartialCell) -> tuple[list[KeptScenario], str | None]:
        """The finished scenarios an interrupted attempt at the cell kept, in suite order, when
        they belong to exactly `expected` and each is intact; else none, and why (None: no partial)."""
        folder = self.partial_dir(cell_id)
        if folder.is_symlink() or not folder.is_dir():
            return [], None
        paths = kept_files(folder / KEPT_DIR)
        try:
            found = PartialCell.model_validate_json(read_regular(folder / PARTIAL_FILE, MAX_JSON_BYTES))
            kept = [KeptScenario.model_validate_json(read_regular(path, MAX_JSONL_BYTES)) for path in paths]
        except (BadInput, OSError, ValidationError) as error:
            return [], f"its kept scenarios are unreadable ({short_error(error)})"
        if found != PartialCell.model_validate_json(self.redactor.text(to_json(expected))):  # written redacted
            return [], "it was started for another matrix, profile, commit, cell or suite"
        wrong = [
            path.stem for path, one in zip(paths, kept, strict=True) if not one.intact or one.result.id != path.stem or path.stem not in expected.suite_ids
        ]
        if wrong:
            return [], f"kept scenario {wrong[0]} is not intact"
        order = {scenario_id: index for index, scenario_id in enumerate(expected.suite_ids)}
        return sorted(kept, key=lambda one: order[one.result.id]), None

    def earlier_attempts(self, cell_id: str, kept: Sequence[KeptScenario]) -> tuple[list[EarlierAttempt], dict[str, str]] | str:
        """The attempts the kept scenarios of the cell's partial folder come from (those it carried
        from earlier resumes, then the interrupted one: its partial record, the digest of each
        scenario it finished, its engine log) and each one's engine log by file name; or why they
        cannot be evidenced (then none is kept)."""
        folder = self.partial_dir(cell_id)
        try:
            partial = PartialCell.model_validate_json(read_regular(folder / PARTIAL_FILE, MAX_JSON_BYTES))
            carried = (
                [EarlierAttempt.model_validate(one) for one in json.loads(read_regular(folder / ATTEMPTS_FILE, MAX_JSON_BYTES))]
                if (folder / ATTEMPTS_FILE).exists()
                else []
            )
            logs = {one.engine_log: read_regular(folder / plain_name(one.engine_log), MAX_LOG_BYTES).decode() for one in carried}
            log = read_regular(folder / ENGINE_LOG, MAX_LOG_BYTES).decode()
        except (BadInput, OSError, ValueError) as error:
            return f"the interrupted attempt's record or engine log is unreadable ({short_error(error)})"
        done = {scenario_id for one in carried for scenario_id in one.finished}
        name = f"attempt-{len(carried) + 1}.{ENGINE_LOG}"
        latest = EarlierAttempt(partial=partial, finished={k.result.id: k.sha256 for k in kept if k.result.id not in done}, engine_log=name)
        return [*carried, latest], {**logs, name: log}

    def cell_is_complete(self, cell_id: str) -> bool:
        return not self.reader.cell_problems(cell_id)

    def write_manifest(self) -> None:
        lines = [f"{sha256_file(path)}  {path.relative_to(self.dir).as_posix()}" for path in bundle_files(self.dir)]
        write_in(self.dir, self.dir / MANIFEST, ("\n".join(lines) + "\n").encode())


class CellWriter:
    def __init__(self, bundle: Bundle, cell_id: str, partial: Path) -> None:
        self.bundle = bundle
        self.cell_id = cell_id
        self.partial = partial
        self.files: dict[str, str] = {}
        self.kept: dict[str, KeptScenario] = {}  # scenario id -> its result and transcript, kept as it finished

    def carry(self, attempts: Sequence[EarlierAttempt], logs: dict[str, str]) -> None:
        """The earlier attempts whose scenarios this one keeps: their records (for the next resume,
        should this attempt be interrupted too) and their engine logs, files of the cell."""
        write_in(self.bundle.dir, self.partial / ATTEMPTS_FILE, self.bundle.redactor.text(to_json([one.model_dump(mode="json") for one in attempts])).encode())
        for one in attempts:
            self.write_text(plain_name(one.engine_log), logs.get(one.engine_log, ""))

    def keep(self, scenario: KeptScenario) -> None:
        """One finished scenario, written at once (atomically) so an interrupted cell keeps it."""
        name = f"{safe_id(scenario.result.id, 'scenario id')}.json"
        # written in the harness's key order (not to_json's sorted keys): a resumed cell's
        # transcripts.jsonl is then byte for byte the uninterrupted one's
        redacted = KeptScenario.model_validate_json(self.bundle.redactor.text(scenario.model_dump_json(indent=2)))
        stored = KeptScenario.of(redacted.result, redacted.transcript)  # its digest is of what is written
        write_in(self.bundle.dir, self.partial / KEPT_DIR / name, (stored.model_dump_json(indent=2) + "\n").encode())
        self.kept[scenario.result.id] = stored

    def write_text(self, name: str, text: str) -> None:
        data = self.bundle.redactor.text(text).encode()
        write_in(self.bundle.dir, self.partial / name, data)
        self.files[name] = sha256_bytes(data)

    def write_jsonl(self, name: str, rows: Sequence[BaseModel]) -> None:
        self.write_text(name, "".join(row.model_dump_json() + "\n" for row in rows))

    def finish(self, record: CellRecord) -> CellRecord:
        """Write cell.json last, then move the whole cell into place in one rename."""
        record = record.model_copy(update={"files": dict(sorted(self.files.items()))})
        shutil.rmtree(self.partial / KEPT_DIR, ignore_errors=True)  # the complete cell holds its scenarios in scenarios.jsonl
        (self.partial / PARTIAL_FILE).unlink(missing_ok=True)
        (self.partial / ATTEMPTS_FILE).unlink(missing_ok=True)  # cell.json holds them (earlier_attempts)
        write_in(self.bundle.dir, self.partial / CELL_FILE, self.bundle.redactor.text(to_json(record)).encode())
        final = self.bundle.cell_dir(self.cell_id)
        if final.exists():
            shutil.rmtree(final)
        os.replace(self.partial, final)
        return record

    def discard(self) -> None:
        shutil.rmtree(self.partial, ignore_errors=True)


def kept_files(folder: Path) -> list[Path]:
    """The kept scenarios' files of a partial cell: regular `<id>.json` files (no link, no dot-entry)."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == ".json" and is_plain_name(p.name) and not p.is_symlink() and p.is_file())


def mark_latest(results_dir: Path, run_dir: Path) -> None:
    write_in(results_dir, results_dir / LATEST, (run_dir.name + "\n").encode())


# ---------------------------------------------------------------- reading (never following a link)


def entries(run_dir: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under a bundle (relative posix path, lstat), without following links."""
    for folder, dirs, files in os.walk(run_dir, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder) / name
            yield path.relative_to(run_dir).as_posix(), path.lstat()


def strange_entries(run_dir: Path) -> list[str]:
    """Entries a bundle must not hold: links, devices, sockets, and dot-entries (partial cells aside)."""
    problems = []
    for relative, info in entries(run_dir):
        parts = relative.split("/")
        if stat.S_ISLNK(info.st_mode):
            problems.append(f"{relative}: a symbolic link")
        elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            problems.append(f"{relative}: not a regular file or folder")
        elif any(part.startswith(".") for part in parts) and not _is_partial(parts):
            problems.append(f"{relative}: a hidden entry")
    return problems


def _is_partial(parts: list[str]) -> bool:
    return len(parts) >= 2 and parts[0] == CELLS_DIR and parts[1].startswith(".") and parts[1].endswith(".partial")


def bundle_files(run_dir: Path) -> list[Path]:
    """The regular files of a bundle that the manifest covers: all but the manifest, its signature,
    partial cells, links and other strange entries."""
    files = []
    for relative, info in entries(run_dir):
        parts = relative.split("/")
        if not stat.S_ISREG(info.st_mode) or relative in (MANIFEST, SIGNATURE, ATTESTATION) or _is_partial(parts):
            continue
        if any(part.startswith(".") for part in parts):
            continue
        files.append(run_dir / relative)
    return files


def record_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of a JSON Lines file, streamed: the file within MAX_JSONL_BYTES and each
    line within MAX_RECORD_LINE_BYTES, refused (BadInput) at the first line over it, before it
    is read whole."""
    with open_regular(path, MAX_JSONL_BYTES) as handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_RECORD_LINE_BYTES + 1), b""), start=1):
            if len(line) > MAX_RECORD_LINE_BYTES:
                raise BadInput(f"{path}:{number}: a line of more than {MAX_RECORD_LINE_BYTES} bytes (one scenario's record is far smaller)")
            yield number, line


def finite_json(path: Path | str, data: bytes | str) -> bytes | str:
    """`data` unchanged once it is JSON within the bounds (no NaN, no Infinity, no 1e999, no
    integer of thousands of digits, no deep nesting): pydantic's own parser takes all of them."""
    parse_json_bounded(path, data.encode() if isinstance(data, str) else data)
    return data


def load_run(run_dir: Path) -> RunRecord:
    try:
        return RunRecord.model_validate_json(finite_json(run_dir / RUN_FILE, read_regular(run_dir / RUN_FILE, MAX_JSON_BYTES)))
    except ValidationError as error:
        raise BadInput(f"{run_dir / RUN_FILE}: not a run record ({error.error_count()} problems)") from None


def load_cell(cell_dir: Path) -> CellRecord:
    try:
        return CellRecord.model_validate_json(finite_json(cell_dir / CELL_FILE, read_regular(cell_dir / CELL_FILE, MAX_JSON_BYTES)))
    except ValidationError as error:
        raise BadInput(f"{cell_dir / CELL_FILE}: not a cell record ({error.error_count()} problems)") from None


def read_results(cell_dir: Path) -> list[ScenarioResult]:
    """scenarios.jsonl of a cell, each line a ScenarioResult (BadInput on any bad line)."""
    return _read_lines(cell_dir / "scenarios.jsonl", ScenarioResult)


def read_transcripts(cell_dir: Path) -> list[TranscriptLine]:
    """transcripts.jsonl of a cell, each line a TranscriptLine (BadInput on any bad line)."""
    return _read_lines(cell_dir / "transcripts.jsonl", TranscriptLine)


def _read_lines(path: Path, model: type[Line]) -> list[Line]:
    if not path.exists():
        return []
    rows = []
    for number, raw in record_lines(path):
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate_json(finite_json(f"{path}:{number}", line)))
        except ValidationError as error:
            raise BadInput(f"{path}:{number}: not a {model.__name__} ({error.error_count()} problems)") from None
    return rows


def cell_problems(cell_dir: Path) -> list[str]:
    """Why a cell folder is not complete and intact (empty when it is)."""
    if not (cell_dir / CELL_FILE).is_file() or (cell_dir / CELL_FILE).is_symlink():
        return [f"{CELL_FILE} missing"]
    try:
        record = load_cell(cell_dir)
    except BadInput as error:
        return [f"{CELL_FILE} unreadable: {error}"]
    problems = []
    for name, digest in record.files.items():
        path = cell_dir / name
        if not is_plain_name(name) or path.is_symlink() or not path.is_file():
            problems.append(f"{name} missing or not a regular file")
        elif sha256_file(path) != digest:
            problems.append(f"{name} sha256 differs from {CELL_FILE}")
    return problems


def manifest_problems(run_dir: Path) -> list[str]:
    """Files whose sha256 differs from MANIFEST.sha256, files it does not list, and strange entries."""
    manifest = run_dir / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        return ["MANIFEST.sha256 missing (the run did not finish)"]
    listed: dict[str, str] = {}
    for line in read_regular(manifest, MAX_MANIFEST_BYTES).decode("utf-8", errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = list(strange_entries(run_dir))
    present = {p.relative_to(run_dir).as_posix(): p for p in bundle_files(run_dir)}
    for name, digest in listed.items():
        if name not in present:
            problems.append(f"{name}: listed in the manifest but missing")
        elif sha256_file(present[name]) != digest:
            problems.append(f"{name}: sha256 differs from the manifest")
    problems += [f"{name}: not in the manifest" for name in present if name not in listed]
    return problems


def suite_folder(run_dir: Path, suite_id: str) -> Path:
    """suites/<suite-id>/ of a bundle: the scenario files (or wheel and lock) a suite ran."""
    return run_dir / SUITES_DIR / safe_id(suite_id, "suite id")


class BundleReader:
    """Reads one run's bundle, which may come from anyone: every read is bounded, refuses a link
    (the cells folder, a cell's folder or the file itself) and checks each id before it names a path.

    Two listings of cells, not to be confused:
    - `cell_ids()`: the cells the run planned (run.json's planned_cells, once each, in order) whose
      cell.json is present, readable or not: the cells that ran;
    - `cells_on_disk()`: every entry of cells/ (dot-entries, the partial cells, aside), planned or
      not: what `repro check` holds to the plan (`stray_cells()`: those the run neither planned
      nor excluded)."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir

    def run(self) -> RunRecord:
        return load_run(self.dir)

    def run_text(self) -> str:
        """run.json as text (what the host-identity lint scans)."""
        return read_regular(self.dir / RUN_FILE, MAX_JSON_BYTES).decode("utf-8", errors="replace")

    def manifest_problems(self) -> list[str]:
        return manifest_problems(self.dir)

    def matrix_path(self) -> Path:
        """The embedded matrix.yaml (repro.spec.matrix.load_matrix reads it embedded: bounded, no link)."""
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
        return sorted(entry.name for entry in folder.iterdir() if _is_partial([CELLS_DIR, entry.name]))

    def stray_cells(self) -> list[str]:
        run = self.run()
        return [name for name in self.cells_on_disk() if name not in run.planned_cells and name not in run.excluded_cells]

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
        return read_results(self.cell_dir(cell_id))

    def transcripts(self, cell_id: str) -> list[TranscriptLine]:
        return read_transcripts(self.cell_dir(cell_id))

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


def unlinked(folder: Path) -> Path:
    """A folder two levels into a bundle, refused when it or its parent is a symbolic link."""
    for path in (folder.parent, folder):
        if path.is_symlink():
            raise BadInput(f"{path}: a symbolic link, not a bundle folder")
    return folder


def is_plain_name(name: str) -> bool:
    """A file name within a cell, as cell.json lists them: no folder, no dot-entry."""
    return bool(name) and "/" not in name and not name.startswith(".")


def plain_name(name: str) -> str:
    if not is_plain_name(name):
        raise BadInput(f"{name[:80]!r}: not a plain file name of a cell")
    return name


# ---------------------------------------------------------------- discovery


def find_runs(path: Path) -> list[Path]:
    """A run folder, or a results folder holding run folders (links are never followed)."""
    if path.is_symlink():
        raise BadInput(f"{path}: a symbolic link, not a result bundle")
    if path.is_file():
        raise BadInput(f"{path}: a file, not a result folder")
    if (path / RUN_FILE).is_file():
        return [path]
    runs = sorted(p for p in path.iterdir() if not p.is_symlink() and (p / RUN_FILE).is_file()) if path.is_dir() else []
    if not runs:
        raise BadInput(f"{path}: no result bundle here (no run.json)")
    return runs


def latest_run(results_dir: Path) -> Path:
    """The run named in results/LATEST, else the results folder itself."""
    pointer = results_dir / LATEST
    if pointer.is_file() and not pointer.is_symlink():
        return results_dir / safe_id(read_regular(pointer, 1024).decode(errors="replace").strip(), "run id")
    return results_dir


def find_resumable(out: Path, matrix_sha256: str, profile: str, shard: str | None, cell_ids: set[str], source: SourceState) -> tuple[Path, RunRecord] | None:
    """The latest run of the same matrix, profile, shard and project source that planned these cells."""
    if not out.is_dir():
        return None
    for run_dir in sorted((p for p in out.iterdir() if not p.is_symlink() and (p / RUN_FILE).is_file()), reverse=True):
        try:
            record = load_run(run_dir)
        except BadInput:
            continue
        same = record.matrix.sha256 == matrix_sha256 and record.profile == profile and record.shard == shard
        same = same and source_change(record.source, source) is None  # never mix results of two code states
        if same and cell_ids <= set(record.planned_cells):
            return run_dir, record
    return None


# ---------------------------------------------------------------- merging shards


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


def merge(sources: list[Path], out: Path) -> list[Path]:
    """Copy the bundles of several shards (or machines) into one results folder, unchanged, and
    record them in MERGED.json.

    Only intact, complete bundles of one matrix, profile and project commit are merged; a
    sharded run only whole (shards 1..n of one n, each once); no cell may be in two of them;
    links are never followed (a bundle holding one is refused)."""
    runs = [run for source in sources for run in find_runs(source)]
    records = {run: load_run(run) for run in runs}
    _refuse_mixed(records)
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
    shards = [MergedShard(run_id=r.run_id, shard=r.shard, manifest_sha256=sha256_file(run / MANIFEST)) for run, r in records.items()]
    record = MergeRecord(matrix_sha256=first.matrix.sha256, profile=first.profile, commit=first.source.commit, shards=shards, merged_at=utc_now())
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
    mixed = {(r.matrix.sha256, r.profile, r.source.commit) for r in records} - {(record.matrix_sha256, record.profile, record.commit)}
    problems += ["a run of another matrix, profile or commit is in the folder"] if mixed else []
    return problems + split_problems(records)


def find_runs_quietly(folder: Path) -> list[Path]:
    """The runs in a folder, none when it does not exist or holds none."""
    try:
        return find_runs(folder) if folder.is_dir() else []
    except BadInput:
        return []


def _refuse_mixed(records: dict[Path, RunRecord]) -> None:
    kinds = {(r.matrix.sha256, r.profile, r.source.commit) for r in records.values()}
    if len(kinds) > 1:
        described = ", ".join(f"matrix {sha[:12]} on {profile} at {(commit or '?')[:12]}" for sha, profile, commit in sorted(kinds, key=str))
        raise BadInput(f"these bundles come from different matrices, profiles or commits ({described}); merge shards of one run only")
