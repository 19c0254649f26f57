"""What every part of a run shares: its options, what was prepared before any engine boots, the
run's context, and a group's booted engine (its replicas and gate)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from repro.bundle.layout.writer import Bundle
from repro.bundle.records import (
    Execution,
)
from repro.containers.client import DockerClient
from repro.engines.base import EngineHandle
from repro.plan.planner import Plan
from repro.run.progress import RunProgress
from repro.spec.cells import Cell
from repro.spec.findings import GateResult, SuiteSelection, TemplateFacts
from repro.spec.matrix import LoadedMatrix
from repro.spec.profiles import Profile, PromptCache
from repro.store.images import ImageRef
from repro.suites.registry import cell_execution


class RunOptions(BaseModel):
    matrix: Path
    profile: str
    out: Path = Path("results")
    resume: bool = False
    only: list[str] = []
    shard: tuple[int, int] | None = None  # (i, n): this machine runs the i-th of n shards, 1-based
    replicas: int | None = 1  # engines per group, one slot each; None: as many as the cores (and GPU memory) hold
    allow_dirty: bool = False  # run on a dirty tree anyway, marked not clean-room from the start
    prompt_cache: PromptCache | None = None  # --prompt-cache over the profile's mode (None: the profile's)

    @property
    def shard_text(self) -> str | None:
        return f"{self.shard[0]}/{self.shard[1]}" if self.shard else None


class Prepared(BaseModel):
    """Everything checked before any engine boots: plan, images, models, suites."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    loaded: LoadedMatrix
    plan: Plan
    profile: Profile
    cells: list[Cell]
    harness: ImageRef
    engines: dict[str, ImageRef]
    models: dict[str, Path]
    suites: dict[str, SuiteSelection]
    templates: dict[str, TemplateFacts] = {}  # model id -> its chat template's facts (the preflight)
    # suite_image_key -> the image its kind runs it in (the harness unless the kind has its own; an
    # external harness driving a runtime: its image built on the runtime's)
    suite_images: dict[str, ImageRef] = {}
    runtime_images: dict[str, ImageRef] = {}  # runtime id -> its image (the harness image and the runtime)

    def selection(self, cell: Cell) -> SuiteSelection:
        """The scenarios the cell runs: its suite's selection, or the cell's part of it."""
        return cell.share(self.suites[cell.suite.id])

    def harness_for(self, cell: Cell) -> ImageRef:
        """The image of a cell's harness containers: its runtime's (our harness's scenarios), else as
        the suite's kind says."""
        if cell.runtime is not None and cell.driven_runtime is None:
            return self.runtime_images[cell.runtime.id]
        return self.suite_images.get(suite_image_key(cell), self.harness)


def suite_image_key(cell: Cell) -> str:
    """Which of a run's suite images a cell runs in: its suite's, or for an external harness driving
    a runtime, its suite's built on that runtime's image."""
    driven = cell.driven_runtime
    return f"{cell.suite.id} via {driven.id}" if driven is not None else cell.suite.id


def suite_base(cell: Cell, harness: ImageRef, runtimes: dict[str, ImageRef]) -> ImageRef:
    """The image a cell's suite image builds on: the harness's, or the runtime's an external harness drives."""
    driven = cell.driven_runtime
    return runtimes[driven.id] if driven is not None else harness


class RunContext(BaseModel):
    """What every step of a run needs, passed as one object."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: DockerClient
    prepared: Prepared
    bundle: Bundle
    run_id: str
    progress: RunProgress
    replicas: int = 1  # engine replicas per group (repro.plan.replicas)

    @property
    def execution(self) -> Execution:
        return Execution.of(self.prepared.profile, self.replicas)

    def cell_execution(self, cell: Cell) -> Execution:
        """How the cell's engine computes: the profile's execution on the cell's engine kind."""
        return cell_execution(self.prepared.profile, self.replicas, cell)


class GroupEngine(BaseModel):
    """The booted, gated engine of one (engine, model) group, and its replicas if the run has more
    than one: same image, model and threads, booted and identity-checked alike; `handle` (the
    first) is the gated one and the one the records name."""

    handle: EngineHandle
    gate: GateResult
    others: list[EngineHandle] = []

    @property
    def handles(self) -> list[EngineHandle]:
        return [self.handle, *self.others]
