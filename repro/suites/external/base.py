"""What an external harness's adapter provides, and the raw outputs it reads.

An adapter is the whole difference between an external suite and ours; the run, the bundle and
the check call only this interface (docs/external-suites.md walks through ToolCallBench's).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from harness.contracts import ProgressEvent, ScenarioResult, TranscriptLine

if TYPE_CHECKING:
    from repro.plan.planner import Cell
    from repro.spec.matrix import Suite
    from repro.spec.profiles import Profile
    from repro.suites.selection import SuiteSelection

RAW_PREFIX = "raw."  # a cell's raw outputs: raw.<path with / as __> (cell files are flat)
RAW_INDEX = "raw-index.json"


class RawFile(BaseModel):
    """One raw output file, kept byte for byte: its name in the cell, where the harness wrote it
    (relative to its output folder, per worker), its sha256 and size."""

    name: str
    path: str
    worker: int = 1
    sha256: str
    bytes: int


class RawIndex(BaseModel):
    """raw-index.json: the adapter, the wheel, and every raw file of the cell."""

    harness: str
    wheel: str
    wheel_sha256: str
    workers: int
    files: list[RawFile]


class Normalised(BaseModel):
    """An external run as our records: one ScenarioResult and one transcript per task, suite order."""

    results: list[ScenarioResult]
    transcripts: list[TranscriptLine]


class Adapter(ABC):
    name: str  # the matrix's external.harness
    known_wheels: dict[str, str]  # name==version -> sha256 of the wheels this adapter reads
    protocols: frozenset[str]  # the matrix protocols its cells may name (it makes its own requests)
    request_kind: str  # how it talks to the engine, in words
    image_dir: str  # images/<name>/: Dockerfile, requirements.txt, the driver
    driver: str  # the driver's file name in image_dir (copied into the image)

    @abstractmethod
    def selection(self, suite: Suite, wheel_root: Path, sha256_inputs: list[str]) -> SuiteSelection:
        """The suite's tasks in the unpacked wheel: ids in run order, categories, and a sha256 over
        the task and fixture files and `sha256_inputs` (the wheel's and the lock's sha256)."""

    @abstractmethod
    def command(self, cell: Cell, client: list[str], ids: list[str], profile: Profile) -> list[str]:
        """The container's argv (after the adapter's entrypoint) for one worker's share `ids`."""

    @property
    @abstractmethod
    def entrypoint(self) -> list[str]:
        """The program the cell's container runs (the image's default stays the harness's)."""

    @abstractmethod
    def raw_paths(self, out_dir: Path) -> list[str]:
        """The raw outputs a worker wrote, relative to its output folder, sorted."""

    @abstractmethod
    def normalise(self, raw: dict[str, bytes], index: RawIndex, ids: list[str]) -> Normalised:
        """The cell's records recomputed from its raw outputs (BadInput when they are not whole)."""

    @abstractmethod
    def recheck(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> list[str]:
        """The harness's own checks re-executed where its code allows: one line per disagreement."""

    @abstractmethod
    def report(self, raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
        """The harness's own report files (name -> bytes), rendered again from the raw outputs."""

    def progress(self, line: str) -> ProgressEvent | None:
        """A progress event from one line of the container's output (None for other lines)."""
        return ProgressEvent.parse(line)


def raw_name(path: str, worker: int, workers: int) -> str:
    """A raw file's flat name in the cell: raw.[w<k>.]<path with / as __>."""
    prefix = f"{RAW_PREFIX}w{worker}." if workers > 1 else RAW_PREFIX
    return prefix + path.replace("/", "__")
