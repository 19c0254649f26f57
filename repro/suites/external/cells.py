"""An external suite in a run: its selection, its image, what a bundle embeds, how a cell's
container is started and what it wrote is read back (the hooks repro.run and repro.suites call).

A cell's raw outputs are kept byte for byte: each file a worker wrote becomes `raw.<path>` in the
cell (`raw.w<k>.<path>` with several workers), hashed in cell.json and the manifest and listed in
raw-index.json; none is changed by redaction: a raw file the redactor would change ends the cell
as an error instead (a bundle never carries a host path, and a raw file is never rewritten).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.errors import BadInput
from repro.core.files import MAX_RAW_BYTES, sha256_bytes
from repro.suites.external import adapter_for
from repro.suites.external.base import RAW_INDEX, RawFile, RawIndex, raw_name
from repro.suites.external.wheels import lock_file, unpacked_wheel, verified_wheel

if TYPE_CHECKING:
    from repro.bundle.layout import Bundle, CellWriter
    from repro.bundle.records import CellRecord
    from repro.containers import lifecycle as containers
    from repro.plan.planner import Cell
    from repro.spec.matrix import Suite
    from repro.store.images import ImageRef
    from repro.suites.selection import SuiteSelection

WHEEL_DIR = "wheel"  # suites/<suite-id>/wheel/<the wheel file> in a bundle
LOCK_COPY = "requirements.txt"  # suites/<suite-id>/requirements.txt


def external_selection(suite: Suite) -> SuiteSelection:
    """The tasks an external suite selects from its fetched, verified wheel."""
    assert suite.external is not None
    wheel = verified_wheel(suite.external)
    lock = lock_file(suite.external)
    root = unpacked_wheel(wheel, suite.external.sha256)
    return adapter_for(suite).selection(suite, root, [f"wheel\0{suite.external.sha256}", f"requirements\0{sha256_bytes(lock.read_bytes())}"])


def external_images(cells: list[Cell], harness: ImageRef) -> dict[str, ImageRef]:
    """Suite id -> the image of each external suite the cells run (missing: one-line error)."""
    from repro.suites.external.image import external_image

    suites = {c.suite.id: c.suite for c in cells if c.suite.external is not None}
    return {suite_id: external_image(suite, harness=harness) for suite_id, suite in suites.items()}


def embed(bundle: Bundle, suite: Suite) -> None:
    """The suite's wheel and lock, byte for byte: `repro check` recomputes the selection, reads the
    tasks and re-executes the checks from them."""
    from repro.bundle.layout import suite_folder, write_in

    assert suite.external is not None
    target = suite_folder(bundle.dir, suite.id)
    wheel = verified_wheel(suite.external)
    write_in(bundle.dir, target / WHEEL_DIR / wheel.name, wheel.read_bytes())
    write_in(bundle.dir, target / LOCK_COPY, lock_file(suite.external).read_bytes())


def container_command(cell: Cell, client: list[str], ids: list[str], profile: object) -> list[str]:
    return adapter_for(cell.suite).command(cell, client, ids, profile)  # type: ignore[arg-type]


def entrypoint(cell: Cell) -> list[str] | None:
    return adapter_for(cell.suite).entrypoint if cell.suite.external is not None else None


def collect(writer: CellWriter, record: CellRecord, out_dirs: list[Path], suite: SuiteSelection, ended: list[containers.Exit]) -> CellRecord:
    """Keep each worker's raw outputs byte for byte, then record the normalised results, or fail the
    cell with why (a harness exit status other than 0 is ToolCallBench's: a server it could not reach)."""
    from repro.bundle.records import CellSummary

    failed = next((e for e in ended if e.timed_out), None)
    if failed is not None:
        return record.model_copy(update={"status": "error", "reason": f"harness did not finish within {failed.seconds:.0f}s (stopped)"})
    adapter = adapter_for(record.cell.suite)
    try:
        raw, index = keep_raw(writer, record.cell, out_dirs)
        normalised = adapter.normalise(raw, index, suite.ids)
    except (BadInput, ValueError, UnicodeError) as error:
        code = next((e.code for e in ended if e.code != 0), 0)
        tail = next((e.log_tail[-600:] for e in ended if e.code != 0), "")
        return record.model_copy(
            update={"status": "error", "reason": f"external harness output refused: {error}" + (f"; exit status {code}, log tail: {tail}" if code else "")}
        )
    writer.write_jsonl("scenarios.jsonl", normalised.results)
    writer.write_jsonl("transcripts.jsonl", normalised.transcripts)
    return record.model_copy(update={"summary": CellSummary.of(normalised.results)})


def keep_raw(writer: CellWriter, cell: Cell, out_dirs: list[Path]) -> tuple[dict[str, bytes], RawIndex]:
    from repro.bundle.layout import read_regular, write_in

    assert cell.suite.external is not None
    adapter = adapter_for(cell.suite)
    raw: dict[str, bytes] = {}
    files = []
    for worker, out_dir in enumerate(out_dirs, start=1):
        for path in adapter.raw_paths(out_dir):
            data = read_regular(out_dir / path, MAX_RAW_BYTES)
            name = raw_name(path, worker, len(out_dirs))
            text = data.decode("latin-1")
            if writer.bundle.redactor.text(text) != text:
                raise BadInput(f"raw output {path} names a host path, user or host name; a raw file is never rewritten")
            write_in(writer.bundle.dir, writer.partial / name, data)
            writer.files[name] = sha256_bytes(data)
            raw[name] = data
            files.append(RawFile(name=name, path=path, worker=worker, sha256=sha256_bytes(data), bytes=len(data)))
    index = RawIndex(harness=adapter.name, wheel=cell.suite.external.wheel, wheel_sha256=cell.suite.external.sha256, workers=len(out_dirs), files=files)
    writer.write_text(RAW_INDEX, json.dumps(index.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    return raw, index
