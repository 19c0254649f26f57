"""A bundle's record files parsed within bounds: run.json, cell.json, and the JSON Lines of a
cell, streamed line by line (repro.core.files' MAX_*_BYTES), no NaN, no Infinity."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle.layout.names import CELL_FILE, RUN_FILE, SCENARIOS_FILE, TRANSCRIPTS_FILE
from repro.bundle.records import CellRecord, RunRecord
from repro.core.errors import BadInput
from repro.core.files import (
    MAX_JSON_BYTES,
    MAX_JSONL_BYTES,
    MAX_RECORD_LINE_BYTES,
    open_regular,
    read_regular,
)
from repro.core.yamlsource import parse_json_bounded

Line = TypeVar("Line", ScenarioResult, TranscriptLine)


def record_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of a JSON Lines file, streamed: the file within MAX_JSONL_BYTES and each
    line within MAX_RECORD_LINE_BYTES, refused (BadInput) at the first line over it, before it
    is read whole."""
    with open_regular(path, MAX_JSONL_BYTES) as handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_RECORD_LINE_BYTES + 1), b""), start=1):
            if len(line) > MAX_RECORD_LINE_BYTES:
                raise BadInput(
                    f"{path}:{number}: a line of more than {MAX_RECORD_LINE_BYTES} bytes "
                    "(one scenario's record is far smaller)"
                )
            yield number, line


def finite_json(path: Path | str, data: bytes | str) -> bytes | str:
    """`data` unchanged once it is JSON within the bounds (no NaN, no Infinity, no 1e999, no
    integer of thousands of digits, no deep nesting): pydantic's own parser takes all of them."""
    parse_json_bounded(path, data.encode() if isinstance(data, str) else data)
    return data


def load_run(run_dir: Path) -> RunRecord:
    try:
        return RunRecord.model_validate_json(
            finite_json(run_dir / RUN_FILE, read_regular(run_dir / RUN_FILE, MAX_JSON_BYTES))
        )
    except ValidationError as error:
        raise BadInput(f"{run_dir / RUN_FILE}: not a run record ({error.error_count()} problems)") from None


def load_cell(cell_dir: Path) -> CellRecord:
    try:
        return CellRecord.model_validate_json(
            finite_json(cell_dir / CELL_FILE, read_regular(cell_dir / CELL_FILE, MAX_JSON_BYTES))
        )
    except ValidationError as error:
        raise BadInput(f"{cell_dir / CELL_FILE}: not a cell record ({error.error_count()} problems)") from None


def read_results(cell_dir: Path) -> list[ScenarioResult]:
    """scenarios.jsonl of a cell, each line a ScenarioResult (BadInput on any bad line)."""
    return _read_lines(cell_dir / SCENARIOS_FILE, ScenarioResult)


def read_transcripts(cell_dir: Path) -> list[TranscriptLine]:
    """transcripts.jsonl of a cell, each line a TranscriptLine (BadInput on any bad line)."""
    return _read_lines(cell_dir / TRANSCRIPTS_FILE, TranscriptLine)


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


FileStamp = tuple[int, int, int, int] | None


def file_stamp(path: Path) -> FileStamp:
    """A file's identity, (device, inode, size, modification time), without following a link; None
    when there is none."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class ParsedLines:
    """The parsed lines of the JSON Lines files of the most recent `size` cells read (None: of every
    cell), or why a file does not read, each with the file's identity (device, inode, size,
    modification time) when it was read: the rules of a check and the tables after it parse each
    file once, and a file changed since is read again."""

    def __init__(self, size: int | None) -> None:
        self.size = size
        self.cells: dict[str, dict[str, tuple[FileStamp, list[ScenarioResult] | list[TranscriptLine] | BadInput]]] = {}

    def read(self, cell_dir: Path, name: str, model: type[Line]) -> list[Line]:
        cell = self.cells.pop(cell_dir.name, {})
        self.cells[cell_dir.name] = cell  # the most recent last
        while self.size is not None and len(self.cells) > self.size:
            del self.cells[next(iter(self.cells))]
        stamp = file_stamp(cell_dir / name)
        if name not in cell or cell[name][0] != stamp:
            try:
                cell[name] = (stamp, _read_lines(cell_dir / name, model))
            except BadInput as error:
                cell[name] = (stamp, error)
        found = cell[name][1]
        if isinstance(found, BadInput):
            raise BadInput(str(found))
        return list(found)  # type: ignore[arg-type]
