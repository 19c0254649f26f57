"""Writing a bundle: every byte through the redactor, written atomically (0644 files, 0755
folders); a cell written into `cells/.<id>.partial/` (its finished scenarios kept there as they
finish) and renamed into place once complete; the manifest last. What it reads back (a cell
already written, an interrupted attempt's partial folder, the files the manifest lists) it reads
through its `BundleReader`."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from repro.bundle.layout.names import (
    ATTEMPTS_FILE,
    CELL_FILE,
    CELLS_DIR,
    CLOCK_FILE,
    ENGINE_LOG,
    INPUTS_DIR,
    KEPT_DIR,
    LATEST,
    MANIFEST,
    MATRIX_COPY,
    PARTIAL_FILE,
    RUN_FILE,
    plain_name,
    safe_id,
)
from repro.bundle.layout.reader import AttemptClock, BundleReader
from repro.bundle.records import CellRecord, EarlierAttempt, KeptScenario, PartialCell, RunRecord
from repro.bundle.redact import Redactor
from repro.core.errors import BadInput, ReproError
from repro.core.files import (
    DIR_MODE,
    MAX_LOG_BYTES,
    atomic_write,
    sha256_bytes,
    short_error,
)

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
        raise DiskFull(
            f"no space left on {folder} (writing {where}); free space there, then finish the run with --resume"
        ) from None


def write_in(folder: Path, path: Path, data: bytes) -> None:
    """atomic_write (whole or not at all), DiskFull when `folder`'s disk is full."""
    with space_in(folder, path):
        atomic_write(path, data)


def to_json(model: BaseModel | dict | list) -> str:
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else model
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


class Bundle:
    """Writes one run's bundle; every byte passes through the redactor."""

    def __init__(self, run_dir: Path, redactor: Redactor) -> None:
        self.dir = run_dir
        self.redactor = redactor
        self.reader = BundleReader(run_dir)  # what it reads back: cells already written, partial cells
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
            raise BadInput(
                "the matrix file names a host path or user; bundles carry their matrix, "
                "so use paths relative to the checkout"
            )
        write_in(self.dir, self.dir / name, raw)

    def carry(self, name: str, data: bytes) -> None:
        """An external input's bytes as `inputs/<name>`, unchanged (verified against its pin by the caller)."""
        write_in(self.dir, self.dir / INPUTS_DIR / plain_name(name), data)

    def cell_dir(self, cell_id: str) -> Path:
        return self.dir / CELLS_DIR / safe_id(cell_id, "cell id")

    def partial_dir(self, cell_id: str) -> Path:
        return self.reader.partial_dir(cell_id)

    def start_cell(
        self, cell_id: str, partial: PartialCell | None = None, kept: Sequence[KeptScenario] = ()
    ) -> CellWriter:
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
        if not self.reader.has_partial(cell_id):
            return [], None
        try:
            found = self.reader.partial_record(cell_id)
            named = self.reader.kept_in_partial(cell_id)
        except (BadInput, OSError, ValidationError) as error:
            return [], f"its kept scenarios are unreadable ({short_error(error)})"
        if found != PartialCell.model_validate_json(self.redactor.text(to_json(expected))):  # written redacted
            return [], "it was started for another matrix, profile, commit, cell or suite"
        wrong = [
            stem for stem, one in named if not one.intact or one.result.id != stem or stem not in expected.suite_ids
        ]
        kept = [one for _, one in named]
        if wrong:
            return [], f"kept scenario {wrong[0]} is not intact"
        order = {scenario_id: index for index, scenario_id in enumerate(expected.suite_ids)}
        return sorted(kept, key=lambda one: order[one.result.id]), None

    def earlier_attempts(
        self, cell_id: str, kept: Sequence[KeptScenario]
    ) -> tuple[list[EarlierAttempt], dict[str, str]] | str:
        """The attempts the kept scenarios of the cell's partial folder come from (those it carried
        from earlier resumes, then the interrupted one: its partial record, the digest of each
        scenario it finished, its engine log) and each one's engine log by file name; or why they
        cannot be evidenced (then none is kept)."""
        reader = self.reader
        try:
            partial = reader.partial_record(cell_id)
            carried = reader.partial_attempts(cell_id)
            logs = {
                one.engine_log: reader.partial_file(cell_id, one.engine_log, MAX_LOG_BYTES).decode() for one in carried
            }
            log = reader.partial_file(cell_id, ENGINE_LOG, MAX_LOG_BYTES).decode()
            clock = reader.partial_clock(cell_id)
        except (BadInput, OSError, ValueError) as error:
            return f"the interrupted attempt's record or engine log is unreadable ({short_error(error)})"
        done = {scenario_id for one in carried for scenario_id in one.finished}
        name = f"attempt-{len(carried) + 1}.{ENGINE_LOG}"
        latest = EarlierAttempt(
            partial=partial,
            finished={k.result.id: k.sha256 for k in kept if k.result.id not in done},
            engine_log=name,
            harness_seconds=clock.harness_seconds,
        )
        return [*carried, latest], {**logs, name: log}

    def cell_is_complete(self, cell_id: str) -> bool:
        return not self.reader.cell_problems(cell_id)

    def write_manifest(self) -> None:
        lines = [f"{digest}  {relative}" for relative, digest in self.reader.file_digests()]
        write_in(self.dir, self.dir / MANIFEST, ("\n".join(lines) + "\n").encode())


class CellWriter:
    def __init__(self, bundle: Bundle, cell_id: str, partial: Path) -> None:
        self.bundle = bundle
        self.cell_id = cell_id
        self.partial = partial
        self.files: dict[str, str] = {}
        self.kept: dict[str, KeptScenario] = {}  # scenario id -> its result and transcript, kept as it finished
        self.started: float | None = None  # when this attempt's harness started (time.monotonic)

    def start_clock(self) -> None:
        """The attempt's harness starts: each scenario kept from now on records the time since."""
        self.started = time.monotonic()

    def carry(self, attempts: Sequence[EarlierAttempt], logs: dict[str, str]) -> None:
        """The earlier attempts whose scenarios this one keeps: their records (for the next resume,
        should this attempt be interrupted too) and their engine logs, files of the cell."""
        write_in(
            self.bundle.dir,
            self.partial / ATTEMPTS_FILE,
            self.bundle.redactor.text(to_json([one.model_dump(mode="json") for one in attempts])).encode(),
        )
        for one in attempts:
            self.write_text(plain_name(one.engine_log), logs.get(one.engine_log, ""))

    def keep(self, scenario: KeptScenario) -> None:
        """One finished scenario, written at once (atomically) so an interrupted cell keeps it."""
        name = f"{safe_id(scenario.result.id, 'scenario id')}.json"
        # written in the harness's key order (not to_json's sorted keys): a resumed cell's
        # transcripts.jsonl is then byte for byte the uninterrupted one's
        redacted = KeptScenario.model_validate_json(self.bundle.redactor.text(scenario.model_dump_json(indent=2)))
        stored = KeptScenario.of(redacted.result, redacted.transcript)  # its digest is of what is written
        if self.started is not None:  # this attempt's scenario (an earlier attempt's are kept before the clock starts)
            # the clock first: an interrupt between the two writes leaves it late, never early
            clock = AttemptClock(harness_seconds=round(time.monotonic() - self.started, 3))
            write_in(self.bundle.dir, self.partial / CLOCK_FILE, clock.model_dump_json().encode())
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
        # the complete cell holds its scenarios in scenarios.jsonl
        shutil.rmtree(self.partial / KEPT_DIR, ignore_errors=True)
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


def mark_latest(results_dir: Path, run_dir: Path) -> None:
    write_in(results_dir, results_dir / LATEST, (run_dir.name + "\n").encode())
