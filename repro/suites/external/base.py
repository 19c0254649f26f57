"""An external harness as a suite kind (repro.suites.base.SuiteKind), and the raw outputs it keeps.

A cell's raw outputs are kept byte for byte: each file a worker wrote becomes `raw.<path>` in the
cell (`raw.w<k>.<path>` with several workers), hashed in cell.json and the manifest and listed in
raw-index.json; none is changed by redaction: a raw file the redactor would change ends the cell
as an error instead (a bundle never carries a host path, and a raw file is never rewritten).
An adapter states only what differs between harnesses; docs/external-suites.md walks through
ToolCallBench's.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from repro.bundle.layout.names import suite_folder
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle, CellWriter, write_in
from repro.bundle.records import CellRecord, CellSummary, InputReference, SourceState
from repro.core.errors import BadInput
from repro.core.files import MAX_RAW_BYTES, read_regular, sha256_bytes
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.harnesses import HARNESSES, HarnessFacts, HarnessPin
from repro.spec.matrix import Suite
from repro.spec.profiles import Profile
from repro.store.images import ImageRef
from repro.suites.base import CellOutputs, Log, SuiteKind
from repro.suites.external.raw import (
    LOCK_COPY,
    RAW_INDEX,
    Normalised,
    RawFile,
    RawIndex,
    external_of,
    pin_inputs,
    raw_name,
)
from repro.suites.external.wheels import fetch_code, fetch_wheels, lock_file, unpacked_wheel, verified_wheel
from repro.suites.references import code_reference, suite_root
from repro.suites.scenarios import ScenarioSuites, selection_files
from repro.suites.sources import fetch_suite, scenario_folder

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence


class Adapter(SuiteKind):
    """An external harness as a suite kind: the suite interface implemented once for every harness
    run sealed from its pinned release, in terms of the few things that differ between harnesses
    (the abstract methods below; docs/external-suites.md walks through ToolCallBench's)."""

    image_dir: str  # images/<name>/: Dockerfile, requirements.txt, the driver
    driver: str  # the driver's file name in image_dir (copied into the image)
    check_rules = "repro.suites.external.check_rules:external_rules"

    @property
    def facts(self) -> HarnessFacts:
        """What the matrix validation knows of this harness (repro.spec.harnesses)."""
        return HARNESSES[self.name]

    def harness_pin(self, suite: Suite, source: SourceState | None) -> HarnessPin:
        """Its pinned release: the wheel's version and sha256, or the source archive's sha256."""
        external = external_of(suite)
        version = external.wheel.split("==", 1)[1] if external.wheel else None
        return HarnessPin(name=self.name, version=version, archive_sha256=external.sha256)

    def solver(self, suite: Suite, protocol: str) -> str:
        """The harness itself, by its name (it plays the tasks its own way)."""
        return self.name

    def release(self, suite: Suite) -> str | None:
        """Its pinned wheel (name==version); None for one pinned by its source archive."""
        return external_of(suite).wheel

    def openai_server(self, cell: Cell, client: list[str], talks: str) -> tuple[str, str]:
        """The engine's OpenAI-compatible address (ending in /v1) and model name from the cell's client
        arguments; BadInput when the engine serves another API (`talks`: how the harness talks, in words)."""
        _, host, model = self.engine_server(cell, client, talks)
        return host + "/v1", model

    def engine_server(self, cell: Cell, client: list[str], talks: str) -> tuple[str, str, str]:
        """The engine's API ("openai", "ollama"), its address without a path, and the model name, from
        the cell's client arguments; BadInput when the harness has no backend for that API (its facts'
        `backends`)."""
        named = dict(zip(client[::2], client[1::2], strict=False))
        api = named.get("--api", "openai")
        if api not in self.facts.backends:
            raise BadInput(f"cell {cell.id}: {talks}; engine {cell.engine.id} serves the {api} API")
        return api, named["--base-url"].rstrip("/").removesuffix("/v1"), named["--model"]

    @property
    def known_wheels(self) -> dict[str, str]:
        return self.facts.known_wheels

    @property
    def tasks_from(self) -> str:
        """Where its tasks are: in its wheel ("code"), or in the suite's own pinned source ("source")."""
        return self.facts.tasks_from

    def tasks_in_bundle(self, suite: Suite) -> bool:
        """Whether a bundle holds the suite's tasks itself (suites/<id>/scenarios/, embedded or
        referenced): a harness that runs the suite's scenario files, or an author's own task file;
        else they are in the harness's wheel or code."""
        return self.tasks_from == "source"

    # ------------------------------------------------------------ what differs between harnesses

    @abstractmethod
    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        """The suite's tasks in the unpacked wheel: ids in run order, categories, and a sha256 over
        the task and fixture files and `sha256_inputs` (the wheel's and the lock's sha256)."""

    @abstractmethod
    def task_argv(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        """The container's argv (after the adapter's program) for one worker's share `ids`."""

    @property
    def program(self) -> list[str]:
        """The program the cell's container runs (the image's default stays the harness's): the driver,
        with the Python of the harness's own venv, /opt/<name> (images/<name>/Dockerfile)."""
        return [f"/opt/{self.name}/bin/python3", f"/opt/{self.name}/{self.driver}"]

    @abstractmethod
    def raw_paths(self, out_dir: Path) -> list[str]:
        """The raw outputs a worker wrote, relative to its output folder, sorted."""

    @abstractmethod
    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str], protocol: str) -> Normalised:
        """The cell's records recomputed from its raw outputs, run under the cell's matrix protocol
        (BadInput when they are not whole)."""

    @abstractmethod
    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path, protocol: str) -> list[str]:
        """The harness's own checks re-executed where its code allows, and its requests held to the
        cell's matrix protocol: one line per disagreement."""

    def recheck_evidence(self, ev: CellEvidence, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> list[str]:
        """What `repro check` re-executes of one cell: the harness's checks (`recheck`); an adapter that
        needs more of the cell's record (its decoding, the image it ran in) says so here."""
        return self.recheck(raw, index, wheel_root, ev.record.cell.protocol)

    records_requests = False  # whether `engine_requests` reads a count from the harness's records

    def engine_requests(self, raw: dict[str, bytes], index: RawIndex) -> int | None:
        """The requests the harness's own records say it made of the engine (check holds the cell's
        engine log to them); None where its records do not say (the default)."""
        return None

    @abstractmethod
    def render_report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        """The harness's own report files (name -> bytes), rendered again from the raw outputs."""

    # ------------------------------------------------------------ the suite interface, once for all

    def select(self, suite: Suite, root: Path | None = None) -> SuiteSelection:
        """The tasks the suite selects from its fetched, verified wheel or source (`root`: where an
        author's own files are, when not where the matrix says; a bundle's copy of a wheel is
        verified by its sha256 instead)."""
        external = external_of(suite)
        lock = lock_file(external)
        return self.selection(
            suite, self.tasks_folder(suite, root), pin_inputs(external.sha256, sha256_bytes(lock.read_bytes()))
        )

    def tasks_folder(self, suite: Suite, root: Path | None = None) -> Path:
        """Where the suite's tasks are on this host: its fetched wheel unpacked, or (a harness that
        runs scenario files) the suite's fetched source."""
        external = external_of(suite)
        if self.tasks_from == "source":
            return scenario_folder(suite)
        return unpacked_wheel(verified_wheel(external), external.sha256)

    def fetch(self, suite: Suite, log: Log) -> str | None:
        external = external_of(suite)
        if suite.source is not None:
            fetch_suite(suite.source, log=log)
        fetch_wheels(external, log=log)
        if external.wheel is None:
            fetch_code(external, log=log)
        if self.author_files(suite):  # the tasks are in the author's folder, beside their matrix
            return f"{external.pin} and its lock (sha256 verified) for the author's {external.task}"
        return f"{len(self.select(suite).ids)} tasks of {external.pin} (sha256 verified)"

    def image(self, suite: Suite, harness: ImageRef) -> ImageRef:
        from repro.suites.external.image import external_image

        return external_image(suite, self, harness=harness)

    def build_image(self, suite: Suite, harness: ImageRef, log: Log) -> ImageRef | None:
        from repro.suites.external.image import external_image

        return external_image(suite, self, harness=harness, build=True, log=log)

    def embed(self, bundle: Bundle, suite: Suite, selection: SuiteSelection) -> list[InputReference]:
        """The lock we wrote, byte for byte; the harness's wheel or source archive and its scenario
        files (where it runs the suite's) by reference: `repro check` recomputes the selection, reads
        the tasks and re-executes the checks from them once they are fetched."""
        external = external_of(suite)
        references = ScenarioSuites().embed(bundle, suite, selection) if self.tasks_from == "source" else []
        if external.wheel is not None:
            verified_wheel(external)  # the run had the pinned wheel
            references.append(code_reference(suite, "harness-wheel"))
        else:
            references.append(code_reference(suite, "harness-code"))
        write_in(bundle.dir, suite_folder(bundle.dir, suite.id) / LOCK_COPY, lock_file(external).read_bytes())
        return references

    def sends_cache_prompt(self) -> bool:
        return self.facts.sends_cache_prompt

    def marks_scenarios(self) -> bool:
        return self.facts.marks_scenarios

    def command(
        self, cell: Cell, client: list[str], selection: SuiteSelection, profile: Profile, ids: list[str]
    ) -> list[str]:
        return self.task_argv(cell, client, ids, profile)

    def entrypoint(self, cell: Cell) -> list[str] | None:
        return self.program

    def collect(
        self, writer: CellWriter, record: CellRecord, selection: SuiteSelection, outputs: CellOutputs
    ) -> CellRecord:
        """Keep each worker's raw outputs byte for byte, then record the normalised results, or fail the
        cell with why (a harness exit status other than 0 is the harness's: a server it could not reach).
        An external harness keeps no task of an interrupted cell (`finished` is none), so `kept` is empty."""
        out_dirs, ended = outputs.out_dirs, outputs.ended
        failed = next((e for e in ended if e.timed_out), None)
        if failed is not None:
            return record.model_copy(
                update={"status": "error", "reason": f"harness did not finish within {failed.seconds:.0f}s (stopped)"}
            )
        try:
            raw, index = self.keep_raw(writer, record.cell, out_dirs, selection)
            normalised = self.normalise(raw, index, selection.ids, record.cell.protocol)
        except (BadInput, ValueError, UnicodeError) as error:
            code = next((e.code for e in ended if e.code != 0), 0)
            tail = next((e.log_tail[-600:] for e in ended if e.code != 0), "")
            why = f"external harness output refused: {error}" + (
                f"; exit status {code}, log tail: {tail}" if code else ""
            )
            return record.model_copy(update={"status": "error", "reason": why})
        writer.write_jsonl("scenarios.jsonl", normalised.results)
        writer.write_jsonl("transcripts.jsonl", normalised.transcripts)
        return record.model_copy(update={"summary": CellSummary.of(normalised.results)})

    def keep_raw(
        self, writer: CellWriter, cell: Cell, out_dirs: list[Path], selection: SuiteSelection
    ) -> tuple[dict[str, bytes], RawIndex]:
        """Every raw file each worker wrote, into the cell unchanged (a file the redactor would change
        ends the cell: a raw file is never rewritten), and raw-index.json listing them; a byte-for-byte
        copy of one of the suite's files is listed by its sha256 and not kept (its original is
        referenced or embedded: `input_copy`)."""
        external = external_of(cell.suite)
        inputs = selection_files(selection)
        raw: dict[str, bytes] = {}
        files = []
        for worker, out_dir in enumerate(out_dirs, start=1):
            for path in self.raw_paths(out_dir):
                data = read_regular(out_dir / path, MAX_RAW_BYTES)
                name = raw_name(path, worker, len(out_dirs))
                raw[name] = data
                entry = RawFile(name=name, path=path, worker=worker, sha256=sha256_bytes(data), bytes=len(data))
                if is_input_copy(self.input_copy(path), inputs, data):
                    files.append(entry.model_copy(update={"kept": False}))
                    continue
                if writer.bundle.redactor.names_host(data):
                    raise BadInput(
                        f"raw output {path} names a host path, user or host name; a raw file is never rewritten"
                    )
                write_in(writer.bundle.dir, writer.partial / name, data)
                writer.files[name] = entry.sha256
                files.append(entry)
        index = RawIndex(
            harness=self.name, wheel=external.pin, wheel_sha256=external.sha256, workers=len(out_dirs), files=files
        )
        writer.write_text(RAW_INDEX, json.dumps(index.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
        return raw, index

    def own_messages(self, raw: dict[str, bytes], index: RawIndex) -> dict[str, list[dict]]:
        """The harness's own messages per task from its raw outputs (none unless the adapter reads them)."""
        return {}

    def messages(self, reader: BundleReader, cell_id: str) -> dict[str, list[dict]]:
        """The harness's own messages per task, from the raw outputs the bundle keeps; none when they
        do not read (the transcript's turns serve then)."""
        from repro.suites.external.evidence import BundledCell, raw_evidence

        try:
            record = reader.cell(cell_id)
            raw, index = raw_evidence(
                BundledCell(
                    bundle=reader,
                    cell_id=cell_id,
                    record=record,
                    suite_dir=suite_root(reader, reader.run(), record.cell.suite.id),
                )
            )
            return self.own_messages(raw, index)
        except (BadInput, ValueError):
            return {}

    def report(self, reader: BundleReader, cell_id: str) -> dict[str, bytes]:
        """The harness's own report of one cell, rendered again from the bundle's raw outputs and its
        embedded wheel."""
        from repro.suites.external.evidence import BundledCell, raw_evidence, wheel_root

        record = reader.cell(cell_id)
        files = BundledCell(
            bundle=reader,
            cell_id=cell_id,
            record=record,
            suite_dir=suite_root(reader, reader.run(), record.cell.suite.id),
        )
        raw, index = raw_evidence(files)
        return self.render_report(raw, index, wheel_root(files))


def is_input_copy(original: str | None, inputs: dict[str, Path], data: bytes) -> bool:
    """Whether a raw output is, byte for byte, the suite file it names."""
    source = inputs.get(original) if original is not None else None
    return source is not None and read_regular(source, MAX_RAW_BYTES) == data


def adapter_of(suite: Suite) -> Adapter:
    """The adapter of an external suite (for the check rules that read raw outputs)."""
    from repro.suites.registry import kind_of

    kind = kind_of(suite)
    if not isinstance(kind, Adapter):
        raise BadInput(f"suite {suite.id} is not run by an external harness")
    return kind
