"""`repro results reference`: an existing bundle rewritten so that the inputs it carries and did not
make become references (repro.suites.references), as a run writes them today.

Per run folder, after its manifest is verified (nothing unverified is re-hashed into a bundle):

- another project's scenario files under `suites/<id>/` (a suite with a source the matrix does
  not carry) become one `suite-files` reference listing each file's path and sha256;
- an external harness's wheel under `suites/<id>/wheel/` becomes a `harness-wheel` reference,
  and an archive in `inputs/` a `harness-code` reference (its bytes verified against the pin);
- a raw output that is a byte-for-byte copy of a referenced file (the adapter's `input_copy`) is
  listed in raw-index.json as not kept, and leaves the cell and its cell.json `files`;
- run.json records the references, and MANIFEST.sha256 is written again (MERGED.json's record of
  it too, in a merged folder).

Results, transcripts, logs and every other file keep their bytes; so every outcome and transcript
is unchanged. A signed bundle is refused: its signature covers the manifest this rewrites.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from repro.bundle.layout.integrity import manifest_problems
from repro.bundle.layout.names import ATTESTATION, CELL_FILE, INPUTS_DIR, MANIFEST, RUN_FILE, SIGNATURE, SUITES_DIR
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle, to_json
from repro.bundle.records import InputReference, RunRecord
from repro.bundle.redact import Redactor
from repro.core.errors import BadInput
from repro.core.files import MAX_CARRIED_BYTES, MAX_JSON_BYTES, atomic_write, read_regular, sha256_file
from repro.spec.loading import load_matrix
from repro.spec.matrix import Suite
from repro.suites.external.raw import RAW_INDEX, WHEEL_DIR
from repro.suites.references import code_reference, files_reference, is_others, reference_of
from repro.suites.registry import kind_of

Say = Callable[[str], None]


def reseal_run(run_dir: Path, say: Say) -> None:
    """One run folder rewritten in place: the inputs it carries and did not make, referenced."""
    reader = BundleReader(run_dir)
    if any((run_dir / name).exists() for name in (SIGNATURE, ATTESTATION)):
        raise BadInput(
            f"{run_dir.name} is signed: its signature covers {MANIFEST}, which this rewrites; "
            "use an unsigned copy and sign it again after"
        )
    problems = manifest_problems(run_dir)
    if problems:
        raise BadInput(f"{run_dir.name}: its manifest does not hold ({problems[0]}); nothing is re-hashed into it")
    run = reader.run()
    suites = {s.id: s for s in load_matrix(reader.matrix_path(), embedded=True).matrix.suites}
    inputs = list(run.inputs)
    for suite in suites.values():
        if (run_dir / SUITES_DIR / suite.id).is_dir():  # a suite the run ran: it embedded its files or its lock
            inputs += suite_references(run_dir, run, suite, say)
    if inputs == run.inputs:
        say(f"{run_dir.name}: carries no input it did not make; unchanged")
        return
    run = run.model_copy(update={"inputs": inputs})
    for cell_id in run.planned_cells:
        if reader.has_file(cell_id, RAW_INDEX):
            drop_raw_copies(reader, run, cell_id, suites, say)
    edit_json(run_dir / RUN_FILE, "inputs", [reference.model_dump(mode="json") for reference in inputs])
    Bundle(run_dir, Redactor()).write_manifest()


def edit_json(path: Path, key: str, value: object) -> None:
    """One key of a record set, every other as it was (the file as the writer writes it)."""
    data = json.loads(read_regular(path, MAX_JSON_BYTES))
    data[key] = value
    atomic_write(path, to_json(data).encode())


def suite_references(run_dir: Path, run: RunRecord, suite: Suite, say: Say) -> list[InputReference]:
    """The references one suite's carried inputs become, their files removed from the bundle."""
    folder = run_dir / SUITES_DIR / suite.id
    found: list[InputReference] = []
    files = suite_files(folder)
    if files and is_others(suite) and reference_of(run, suite.id, "suite-files") is None:
        found.append(files_reference(suite, files, carried=False))
        for name in ("scenarios", "fixtures"):
            shutil.rmtree(folder / name, ignore_errors=True)
        if not any(folder.iterdir()):
            folder.rmdir()
        say(f"{run_dir.name}: suite {suite.id}: {len(files)} files of {suite.source.describe()} referenced")  # type: ignore[union-attr]
    external = suite.external
    if external is not None and (folder / WHEEL_DIR).is_dir() and reference_of(run, suite.id, "harness-wheel") is None:
        wheels = [p for p in (folder / WHEEL_DIR).iterdir() if p.is_file() and not p.is_symlink()]
        if [sha256_file(p) for p in wheels] != [external.sha256]:
            raise BadInput(
                f"{run_dir.name}: {SUITES_DIR}/{suite.id}/{WHEEL_DIR} does not hold exactly the pinned wheel"
            )
        found.append(code_reference(suite, "harness-wheel"))
        shutil.rmtree(folder / WHEEL_DIR)
        say(f"{run_dir.name}: suite {suite.id}: the wheel {external.wheel} referenced")
    if external is not None and external.wheel is None and reference_of(run, suite.id, "harness-code") is None:
        carried = run_dir / INPUTS_DIR
        for path in sorted(carried.iterdir()) if carried.is_dir() else []:
            if path.is_file() and path.stat().st_size <= MAX_CARRIED_BYTES and sha256_file(path) == external.sha256:
                path.unlink()
                say(f"{run_dir.name}: {INPUTS_DIR}/{path.name[:16]}...: the harness's archive referenced")
        if carried.is_dir() and not any(carried.iterdir()):
            carried.rmdir()
        found.append(code_reference(suite, "harness-code"))
    return found


def suite_files(folder: Path) -> dict[str, Path]:
    """A suite folder's scenario and fixture files, by their path in the bundle's layout."""
    return {
        path.relative_to(folder).as_posix(): path
        for name in ("scenarios", "fixtures")
        for path in sorted((folder / name).rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def drop_raw_copies(reader: BundleReader, run: RunRecord, cell_id: str, suites: dict[str, Suite], say: Say) -> None:
    """A cell's raw outputs that copy a referenced suite file: listed as not kept, removed."""
    record = reader.cell(cell_id)
    suite = suites.get(record.cell.suite.id) or record.cell.suite
    reference = reference_of(run, suite.id, "suite-files")
    if reference is None or suite.external is None:
        return
    referenced = {f.path: f.sha256 for f in reference.files}
    adapter = kind_of(suite)
    index = json.loads(reader.cell_file(cell_id, RAW_INDEX, MAX_JSON_BYTES))
    files, dropped = dict(record.files), 0
    for entry in index["files"]:
        original = adapter.input_copy(entry["path"])
        if entry.get("kept", True) and original is not None and referenced.get(original) == entry["sha256"]:
            entry["kept"] = False
            files.pop(entry["name"], None)
            (reader.cell_dir(cell_id) / entry["name"]).unlink()
            dropped += 1
    if dropped:
        atomic_write(
            reader.cell_dir(cell_id) / RAW_INDEX, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode()
        )
        files[RAW_INDEX] = sha256_file(reader.cell_dir(cell_id) / RAW_INDEX)
        edit_json(reader.cell_dir(cell_id) / CELL_FILE, "files", dict(sorted(files.items())))
        say(f"{run.run_id}: cell {cell_id}: {dropped} raw copies of the suite's files referenced")
