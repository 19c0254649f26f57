"""What a bundle holds of an external cell: its lock and its harness's wheel (referenced, or
embedded by an older bundle), verified against the pin, and its raw outputs with their index
(BadInput when they do not match). Read by the check rules
(repro.suites.external.check_rules) and by the harness's own report (`Adapter.report`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from repro.bundle.layout.names import SUITES_DIR
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord
from repro.core.errors import BadInput, NotAtHand, ReproError
from repro.core.files import MAX_JSON_BYTES, MAX_RAW_BYTES, read_regular, sha256_bytes, sha256_file
from repro.spec.harnesses import HARNESSES
from repro.spec.matrix import ExternalSuite
from repro.spec.published import published_at
from repro.store.inputs import find_input
from repro.suites.external.carried import harness_code
from repro.suites.external.raw import LOCK_COPY, RAW_INDEX, RAW_PREFIX, WHEEL_DIR, RawFile, RawIndex, external_of
from repro.suites.external.wheels import fetched_wheels, harness_wheel, unpacked_wheel
from repro.suites.references import fetch_command, safe_path
from repro.suites.registry import kind_of


class CellFiles(Protocol):
    """One cell of a bundle as these readers need it (repro.bundle.evidence.CellEvidence is one)."""

    @property
    def bundle(self) -> BundleReader: ...
    @property
    def cell_id(self) -> str: ...
    @property
    def record(self) -> CellRecord: ...
    @property
    def suite_dir(self) -> Path: ...


@dataclass(frozen=True)
class BundledCell:
    """A cell read from a bundle outside a check (the harness's own report)."""

    bundle: BundleReader
    cell_id: str
    record: CellRecord
    suite_dir: Path


def embedded_wheel(ev: CellFiles) -> Path:
    """The suite's wheel, verified: the matrix's pin, and the wheel the adapter was written for
    (only then is its code ever imported on this host). A bundle references it (run.json `inputs`):
    it is found by sha256 in the input cache or a mirror (NotAtHand naming the command otherwise);
    an older bundle embeds it under suites/<id>/wheel/."""
    suite = ev.record.cell.suite
    external = external_of(suite)
    folder = ev.bundle.suite_dir(suite.id) / WHEEL_DIR
    wheels = (
        sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
        if folder.is_dir() and not folder.is_symlink()
        else []
    )
    if not wheels:
        wheels = [referenced_wheel(external, ev.bundle.dir)]
    if len(wheels) != 1:
        raise BadInput(f"{SUITES_DIR}/{suite.id}/{WHEEL_DIR} holds {len(wheels)} wheel files, not one")
    found = sha256_file(wheels[0])
    known = HARNESSES[external.harness].known_wheels.get(external.wheel or "")
    if found != external.sha256 or found != known:
        raise BadInput(f"the wheel {wheels[0].name[:80]} has sha256 {found[:12]}, the pin is {external.sha256[:12]}")
    return wheels[0]


def referenced_wheel(external: ExternalSuite, bundle: Path) -> Path:
    """The pinned wheel from the input cache or a mirror (by its sha256), else from the wheels
    `repro suites fetch` downloaded here; NotAtHand naming the command otherwise."""
    found = find_input(external.sha256) or fetched_wheel(external)
    if found is None:
        raise NotAtHand(
            f"the wheel {external.pin} (sha256 {external.sha256[:12]}, published: "
            f"{published_at(external.sha256, f'PyPI {external.wheel}')}) is in neither the input cache nor a mirror; "
            f"run: {fetch_command(bundle)}"
        )
    return found


def fetched_wheel(external: ExternalSuite) -> Path | None:
    """The pinned wheel among those `repro suites fetch` downloaded with this project's lock."""
    try:
        folder = fetched_wheels(external)
        return harness_wheel(external, folder) if folder is not None else None
    except ReproError:  # no lock here, another lock, or not the pinned wheel: not at hand
        return None


def wheel_root(ev: CellFiles) -> Path:
    """The harness's code: the embedded wheel unpacked, or a source-pinned harness's archive from
    the cache, a mirror or the copy the bundle carries (its sha256 verified; NotAtHand when none
    holds it: repro.suites.external.carried)."""
    suite = ev.record.cell.suite
    external = external_of(suite)
    if external.wheel is None:
        return harness_code(ev.bundle, external)
    return unpacked_wheel(embedded_wheel(ev), external.sha256)


def tasks_root(ev: CellFiles) -> Path:
    """Where the suite's tasks are read from: the harness's wheel, or the suite's files the bundle holds."""
    if kind_of(ev.record.cell.suite).tasks_in_bundle(ev.record.cell.suite):
        return ev.suite_dir / "scenarios"
    return wheel_root(ev)


def embedded_lock(ev: CellFiles) -> bytes:
    """The bundle's copy of the suite's lock file."""
    return ev.bundle.suite_file(ev.record.cell.suite.id, LOCK_COPY, MAX_RAW_BYTES)


def raw_evidence(ev: CellFiles) -> tuple[dict[str, bytes], RawIndex]:
    """The cell's raw files by name and its raw-index.json (BadInput when they do not match): those
    it keeps from the cell, those it lists as copies of the suite's files (`kept: false`) from the
    suite's files, each held to the sha256 the index gives."""
    try:
        index = RawIndex.model_validate_json(ev.bundle.cell_file(ev.cell_id, RAW_INDEX, MAX_JSON_BYTES))
    except ValidationError as error:
        raise BadInput(f"{RAW_INDEX}: not a raw index ({error.error_count()} problems)") from None
    names = sorted(name for name in ev.record.files if name.startswith(RAW_PREFIX))
    listed = sorted(entry.name for entry in index.files if entry.kept)
    if names != listed:
        raise BadInput(f"{RAW_INDEX} lists {len(listed)} kept raw files, the cell holds {len(names)}")
    raw = {name: ev.bundle.cell_file(ev.cell_id, name, MAX_RAW_BYTES) for name in names}
    raw.update({entry.name: input_copy(ev, entry) for entry in index.files if not entry.kept})
    wrong = [entry.name for entry in index.files if sha256_bytes(raw[entry.name]) != entry.sha256]
    if wrong:
        raise BadInput(f"raw file {wrong[0]} is not the file {RAW_INDEX} names")
    return raw, index


def input_copy(ev: CellFiles, entry: RawFile) -> bytes:
    """A raw output listed as a copy of one of the suite's files: that file's bytes."""
    original = kind_of(ev.record.cell.suite).input_copy(entry.path)
    if original is None:
        raise BadInput(f"{RAW_INDEX}: {entry.name[:80]} is not kept, and no suite file is its original")
    return read_regular(ev.suite_dir / safe_path(original), MAX_RAW_BYTES)
