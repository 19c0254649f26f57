"""Whether a rerun can be the same setup as the bundle, input by input.

Both sides are described the same way (`Setup`): the bundle's from its own records (run.json and
each ran cell's cell.json), this machine's from the project tree, the rerun's plan and the host;
after the rerun, the rerun bundle's from its records again, so the verdict names what really
differed, not what was predicted. `compare_setups` lays them side by side, one `SetupRow` per
input: the repro commit (named, but what a commit changes in a run is the harness tree, the
repro version and the engine pins, each a row of its own), the harness tree digest, the repro
version, each engine's pinned source, build and Dockerfile, each external harness's pin, each
suite's sha256, the profile's settings, the threads per engine and the hardware.

A row that differs and counts makes the rerun another setup, never plain REPRODUCED, unless the
reviewer accepts it by name (`--accept threads,hardware`: the names of repro.verify.pins, which
the verdict uses too). A suite whose bytes differ cannot be accepted: its counts are of another
scenario set, and the verdict says NOT RERUN.
"""

from __future__ import annotations

from pydantic import BaseModel

from repro.bundle.records import CellRecord, ImageInfo, RunRecord, SourceState, SystemDescription
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.spec.cells import Cell
from repro.spec.matrix import EngineSpec, Suite, Variant
from repro.spec.profiles import Profile
from repro.suites.registry import kind_of


class Setup(BaseModel):
    """One side of the comparison: what a run was (or will be) made with."""

    commit: str | None
    harness: str | None
    version: str
    engines: dict[str, str] = {}  # engine id -> its pin as one label
    externals: dict[str, str] = {}  # suite id -> the external harness's pin
    suites: dict[str, str | None] = {}  # suite id -> the selected files' sha256 (None: not known yet)
    profile: str
    settings: dict = {}  # the profile's settings without its threads
    threads: int | None = None
    hardware: str = ""
    kernels: str | None = None  # the engine kernels its cells recorded (None: not recorded, or not booted yet)


class SetupRow(BaseModel):
    name: str  # what --accept calls it
    input: str
    bundle: str
    here: str
    same: bool | None  # None: not known before the rerun (a suite not fetched yet)
    counts: bool = True  # a difference makes the rerun another setup

    @property
    def differs(self) -> bool:
        return self.counts and self.same is False


def source_part(source: SourceState, system: SystemDescription, profile: str, settings: Profile) -> dict:
    """The fields of a Setup that come from a run record's source, system and profile."""
    return {
        "commit": source.commit,
        "harness": source.harness_digest,
        "version": source.repro_version,
        "profile": profile,
        "settings": settings.model_dump(mode="json", exclude={"threads", "description"}),
        "threads": settings.threads,
        "hardware": system.setup_label,
    }


def bundle_setup(record: RunRecord, cells: list[CellRecord]) -> Setup:
    """A bundle's setup from its own records (its ran cells' engine images, pins and suites)."""
    ran = [c for c in cells if c.engine_image is not None]
    return Setup(
        **source_part(record.source, record.system, record.profile, record.profile_settings),
        engines={c.cell.engine.id: recorded_engine(c.engine_image) for c in ran if c.engine_image},
        externals=code_pins([c.cell.suite for c in cells]),
        suites={c.cell.suite.id: c.suite_sha256 for c in ran},
        kernels="; ".join(sorted({c.engine_kernels for c in ran if c.engine_kernels})) or None,
    )


def machine_setup(
    source: SourceState,
    system: SystemDescription,
    profile: str,
    settings: Profile,
    cells: list[Cell],
    suites: dict[str, str | None],
) -> Setup:
    """This machine's setup for the planned cells, before anything is fetched or built."""
    return Setup(
        **source_part(source, system, profile, settings),
        engines={c.engine.id: planned_engine(c.engine, settings.engine_variant) for c in cells},
        externals=code_pins([c.suite for c in cells]),
        suites=suites,
    )


def recorded_engine(image: ImageInfo) -> str:
    labels = image.labels
    if image.pinned_by == "digest":
        return f"image {image.reference}"
    return engine_label(
        labels.get("repro.source", "?"), labels.get("repro.build_info", "?"), labels.get("repro.dockerfile_sha256", "?")
    )


def planned_engine(engine: EngineSpec, variant: Variant) -> str:
    """The pin a build here would carry: the source, the build_info it stamps, the Dockerfile's bytes."""
    if engine.build is None:
        return f"image {engine.image}"
    relative = engine.build.dockerfile_for(variant)
    dockerfile = PROJECT_ROOT / relative if relative else None
    digest = sha256_bytes(dockerfile.read_bytes()) if dockerfile is not None and dockerfile.is_file() else "missing"
    source = engine.build.source
    label = f"archive:{source.archive.rsplit('/', 1)[-1]}" if source.archive else source.describe()
    return engine_label(label, engine.stamped_build_info() or "", digest)


def engine_label(source: str, build_info: str, dockerfile_sha256: str) -> str:
    return f"{source}, build_info {build_info}, Dockerfile {dockerfile_sha256[:12]}"


def code_pins(suites: list[Suite]) -> dict[str, str]:
    """Each suite's harness pinned apart from the commit (an external harness's pin), by suite id."""
    return {suite.id: pin for suite in suites if (pin := kind_of(suite).code_pin(suite)) is not None}


def compare_setups(bundle: Setup, here: Setup) -> list[SetupRow]:
    """One row per input, the bundle's beside this side's."""
    rows = [
        SetupRow(
            name="commit",
            input="repro commit",
            bundle=_short(bundle.commit),
            here=_short(here.commit),
            same=bundle.commit == here.commit,
            counts=False,
        ),
        _row("harness", "harness tree digest", _short(bundle.harness), _short(here.harness)),
        _row("harness", "repro version", bundle.version, here.version),
    ]
    rows += [
        _row("engine-build", f"engine {eid}", bundle.engines.get(eid, "-"), here.engines.get(eid, "-"))
        for eid in sorted(set(bundle.engines) | set(here.engines))
    ]
    rows += [
        _row("harness", f"external harness of {sid}", bundle.externals.get(sid, "-"), here.externals.get(sid, "-"))
        for sid in sorted(set(bundle.externals) | set(here.externals))
    ]
    rows += [
        _suite_row(sid, bundle.suites.get(sid), here.suites.get(sid))
        for sid in sorted(set(bundle.suites) | set(here.suites))
    ]
    rows.append(_row("profile", "profile", bundle.profile, here.profile, same=bundle.settings == here.settings))
    rows.append(_row("threads", "threads per engine", str(bundle.threads), str(here.threads)))
    rows.append(_row("hardware", "hardware", bundle.hardware, here.hardware))
    rows.append(kernels_row(bundle.kernels, here.kernels))
    return rows


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


def _row(name: str, what: str, bundle: str, here: str, same: bool | None = None) -> SetupRow:
    return SetupRow(name=name, input=what, bundle=bundle, here=here, same=(bundle == here) if same is None else same)


def _suite_row(suite_id: str, bundle: str | None, here: str | None) -> SetupRow:
    shown_here = _short(here) if here else "known once fetched"
    return SetupRow(
        name="suite",
        input=f"suite {suite_id}",
        bundle=_short(bundle),
        here=shown_here,
        same=None if here is None else bundle == here,
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
