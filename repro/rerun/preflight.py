"""Whether a rerun can be the same setup as the bundle, input by input.

Both sides are the one setup record of each cell (repro.bundle.setup): the bundle's from its own
records (run.json and each ran cell's cell.json), this machine's from the project tree, the
rerun's plan and the host; after the rerun, the rerun bundle's from its records again, so the
verdict names what really differed, not what was predicted. The one comparison lays them side by
side per cell, and `compare_setups` folds the cells into one `SetupRow` per input: the model, the
engine's build and image, the decoding, the harness's pin, the suite's bytes and the scenarios of
each part, the profile and what it pins, and the hardware. The repro commit and the engine
kernels are shown beside them and do not count (what a commit changes in a run is the harness
tree, the engine pins and the Dockerfiles, each a row of its own; the CPU model is the input the
kernels follow).

A row that differs and counts makes the rerun another setup, never plain REPRODUCED, unless the
reviewer accepts it by name (`--accept threads,hardware`: the names of repro.bundle.setup, which
the verdict uses too). A suite whose bytes differ cannot be accepted: its counts are of another
scenario set, and the verdict says NOT RERUN. What this machine cannot know before the rerun (the
template the engine serves, a suite not fetched yet, the scenarios of a part) is `not known`.
"""

from __future__ import annotations

from pydantic import BaseModel

from repro.bundle.records import CellRecord, RunRecord, SourceState, SystemDescription
from repro.bundle.setup import (
    InputDifference,
    SetupRecord,
    cell_setup,
    compare,
    cuda_of,
    engine_names,
    image_pin_label,
    settings_digest,
)
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.spec.cells import Cell
from repro.spec.matrix import EngineSpec, Variant
from repro.spec.profiles import Profile
from repro.suites.registry import cell_execution, kind_of

SHOWN_VALUES = 3  # distinct values a folded row shows per side before "and N more"


class SetupRow(BaseModel):
    name: str  # what --accept calls it
    input: str
    bundle: str
    here: str
    same: bool | None  # None: not known before the rerun, or not stated by the bundle
    counts: bool = True  # a difference makes the rerun another setup

    @property
    def differs(self) -> bool:
        return self.counts and self.same is False


class Side(BaseModel):
    """One side of the comparison: each cell's setup by cell id, and what is named beside them."""

    cells: dict[str, SetupRecord]
    commit: str | None
    kernels: str | None = None  # the engine kernels its cells recorded (None: not recorded, or not booted yet)


def bundle_side(record: RunRecord, cells: list[CellRecord]) -> Side:
    """A bundle's side from its own records: its ran cells' setups."""
    ran = [c for c in cells if c.engine_image is not None]
    return Side(
        cells={
            c.cell.id: cell_setup(record, c, kind_of(c.cell.suite).harness_pin(c.cell.suite, record.source))
            for c in ran
        },
        commit=record.source.commit,
        kernels="; ".join(sorted({c.engine_kernels for c in ran if c.engine_kernels})) or None,
    )


def machine_side(
    source: SourceState,
    system: SystemDescription,
    profile: str,
    settings: Profile,
    cells: list[Cell],
    suites: dict[str, str | None],
) -> Side:
    """This machine's side for the planned cells, before anything is fetched, built or booted."""
    return Side(
        cells={c.id: planned_setup(source, system, profile, settings, c, suites.get(c.suite.id)) for c in cells},
        commit=source.commit,
    )


def planned_setup(
    source: SourceState, system: SystemDescription, profile: str, settings: Profile, cell: Cell, suite: str | None
) -> SetupRecord:
    """A planned cell's setup as this machine would run it; what only the run shows (the template
    the engine serves, its kernels, the scenarios of the part, the replicas) is not recorded yet."""
    gpus = system.gpus[: settings.gpu_count]
    execution = cell_execution(settings, 1, cell)
    return SetupRecord(
        model_sha256=cell.model.sha256,
        quant=cell.model.quant,
        file_size=cell.model.file_size,
        engine_kind=cell.engine.kind,
        engine_build=cell.engine.expected_identity(),
        engine_names=engine_names(cell.engine, None),
        engine_image=planned_image(cell.engine, settings.engine_variant),
        engine_variant=settings.engine_variant,
        harness=kind_of(cell.suite).harness_pin(cell.suite, source),
        runtime=cell.via.pin,
        temperature=cell.decoding.temperature,
        seed=cell.decoding.seed,
        max_tokens=cell.decoding.max_tokens,
        context=cell.decoding.context,
        suite_sha256=suite,
        profile=profile,
        profile_settings=settings_digest(settings.model_dump(mode="json")),
        threads=execution.threads,
        slots=execution.slots,
        cache_prompt=execution.cache_prompt,
        accelerator=", ".join(g.name for g in gpus) or None,
        accelerator_stated=True,
        driver_version=gpus[0].driver if gpus else None,
        cuda_version=cuda_of(gpus),
        cpu_model=system.cpu_model,
        cpu_cores=system.cpu_cores,
        arch=system.machine,
    )


def planned_image(engine: EngineSpec, variant: Variant) -> str:
    """The pin a build here would carry: the source, the build_info it stamps, the Dockerfile's bytes."""
    if engine.build is None:
        return f"image {engine.image}"
    relative = engine.build.dockerfile_for(variant)
    dockerfile = PROJECT_ROOT / relative if relative else None
    digest = sha256_bytes(dockerfile.read_bytes()) if dockerfile is not None and dockerfile.is_file() else "missing"
    source = engine.build.source
    label = f"archive:{source.archive.rsplit('/', 1)[-1]}" if source.archive else source.describe()
    return image_pin_label(label, engine.stamped_build_info() or "", digest)


def compare_setups(bundle: Side, here: Side) -> list[SetupRow]:
    """One row per input: the one comparison of each cell's setups, folded over the cells both sides hold."""
    compared: dict[tuple[str, str], list[InputDifference]] = {}
    for cell_id in sorted(bundle.cells.keys() & here.cells.keys()):
        for found in compare(bundle.cells[cell_id], here.cells[cell_id]):
            if found.status != "not stated" or found.rerun != "-":  # neither side states it: no row
                compared.setdefault((found.name, found.what), []).append(found)
    rows = [commit_row(bundle.commit, here.commit)]
    rows += [folded(name, what, found) for (name, what), found in compared.items()]
    return [*rows, kernels_row(bundle.kernels, here.kernels)]


def folded(name: str, what: str, found: list[InputDifference]) -> SetupRow:
    """One input over several cells: differs where any cell's differs, same where every cell's is;
    else not known (this machine cannot know it yet, or the bundle does not state it)."""
    statuses = {f.status for f in found}
    same = False if "differs" in statuses else True if statuses == {"same"} else None
    return SetupRow(
        name=name,
        input=what,
        bundle=values([f.claimed for f in found if f.status != "not stated"]) or "not stated",
        here=values([f.rerun for f in found if f.status != "not recorded"]) or "not known yet",
        same=same,
    )


def values(shown: list[str]) -> str:
    distinct = list(dict.fromkeys(shown))
    more = f" and {len(distinct) - SHOWN_VALUES} more" if len(distinct) > SHOWN_VALUES else ""
    return "; ".join(distinct[:SHOWN_VALUES]) + more


def commit_row(bundle: str | None, here: str | None) -> SetupRow:
    """The repro commit, named: what a commit changes in a run has rows of its own."""
    return SetupRow(
        name="commit", input="repro commit", bundle=_short(bundle), here=_short(here), same=bundle == here, counts=False
    )


def kernels_row(bundle: str | None, here: str | None) -> SetupRow:
    """The engine kernels beside the hardware: shown so a reader sees whether another CPU ran the
    same instruction set; the CPU model is the input that counts (issue 53), this row does not."""
    return SetupRow(
        name="hardware",
        input="engine kernels",
        bundle=bundle or "not recorded",
        here=here or "known once booted",
        same=None if bundle is None or here is None else bundle == here,
        counts=False,
    )


def _short(value: str | None) -> str:
    return value[:12] if value else "-"


def differences(rows: list[SetupRow], accept: set[str] = frozenset()) -> list[SetupRow]:  # type: ignore[assignment]
    """The rows that make the rerun another setup and were not accepted by name."""
    return [row for row in rows if row.differs and row.name not in accept]


def refuse_unservable(profile_name: str, profile: Profile, system: SystemDescription) -> None:
    """A profile this machine cannot serve, in one line before anything is fetched or booted."""
    if profile.gpu_count > len(system.gpus):
        raise BadInput(
            f"profile {profile_name}: needs {profile.gpu_count} GPU(s), "
            f"this machine has {len(system.gpus)}; rerun on a machine with one"
        )
    if profile.threads is not None and profile.threads > system.cpu_cores:
        raise BadInput(
            f"profile {profile_name}: {profile.threads} threads per engine, this machine has {system.cpu_cores} cores"
        )
