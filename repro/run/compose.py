"""One cell by hand with docker-compose: the `.env` that docker-compose.yml reads.

`docker-compose.yml` (and `docker-compose.gpu.yml` for GPU profiles) hold no machine-specific
value: image ids, paths, limits, labels and command lines all come from an `.env` that
`repro compose env` writes. The values are not re-derived here: they are read off the very
`containers.create(...)` keyword arguments the orchestrator would use for the cell:

- engine: `Engine.container_kwargs(...)` (llama.cpp's server flags, `engine_settings`, the GGUF
  mounted read-only, the GPU device request);
- readiness probe: `sandbox.probe_kwargs(...)` with the `ready` probe the engine waits on;
- harness: `sandbox.harness_kwargs(...)` with the suite kind's `command(...)` and `mounts(...)`.

`expected_services(...)` gives the same kwargs back, so a test compares what `docker-compose
config` resolves with what a run creates. A cell run this way is not clean-room: no bundle, no
latency gate, no identity or accelerator check (docs/compose.md).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput, ReproError

if TYPE_CHECKING:
    from repro.containers.client import DockerClient
    from repro.spec.cells import Cell

COMPOSE_FILE = "docker-compose.yml"
COMPOSE_GPU_FILE = "docker-compose.gpu.yml"
RUN_PREFIX = "compose"
ENV_HEADER = """\
# One cell by hand: the values docker-compose.yml reads (written by `repro compose env`).
# Not clean-room: no bundle, no latency gate, no identity check (docs/compose.md).
#   docker-compose up -d engine && docker-compose run --rm -T harness; docker-compose down -v
"""


@dataclass(frozen=True)
class ComposeCell:
    """Everything one cell needs, resolved and verified: what the `.env` is made of."""

    cell: Any  # repro.spec.cells.Cell
    profile_name: str
    profile: Any  # repro.spec.profiles.Profile
    harness: Any  # repro.store.images.ImageRef (or anything with .id)
    engine_image: Any
    gguf: Path
    suite: Any  # repro.spec.findings.SuiteSelection
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- resolving a cell


def from_matrix(matrix: Path, profile_name: str, cell_id: str, client: DockerClient | None = None) -> ComposeCell:
    """A planned cell of a matrix on a profile, its images (present, by content key) and model."""
    from repro.plan.planner import stored_plan
    from repro.spec.loading import load_matrix
    from repro.spec.profiles import load_profiles
    from repro.store.images import engine_image, harness_image
    from repro.store.models import model_path
    from repro.suites.registry import select

    profiles = load_profiles()
    profile = profiles.get(profile_name)
    loaded = load_matrix(matrix, set(profiles.profiles))
    plan, _ = stored_plan(loaded, profile_name, profile)
    cell = _pick(plan.cells, plan.excluded, cell_id, f"repro matrix plan {matrix} --profile {profile_name}")
    _supported(cell)
    client = client or _client()
    return ComposeCell(
        cell=cell,
        profile_name=profile_name,
        profile=profile,
        harness=harness_image(client),
        engine_image=engine_image(
            cell.engine,
            profile.engine_variant,
            client,
            matrix=str(matrix),
            compute_capability=profile.compute_capability,
        ),
        gguf=model_path(cell.model),
        suite=cell.share(select(cell.suite)),
    )


def from_bundle(run_dir: Path, cell_id: str | None = None, client: DockerClient | None = None) -> ComposeCell:
    """A cell of a result bundle, with the image ids it recorded (they must be present here)."""
    from repro.bundle.layout.reader import BundleReader
    from repro.store.images import ImageRef
    from repro.store.models import model_path
    from repro.suites.registry import select

    bundle = BundleReader(run_dir)
    record = bundle.run()
    done = bundle.cell_ids()
    if cell_id is None:
        if len(done) != 1:
            raise BadInput(f"{run_dir} has {len(done)} cells; name one with --cell ({', '.join(done[:5])})")
        cell_id = done[0]
    if cell_id not in done:
        raise BadInput(f"{run_dir} has no cell {cell_id}")
    cell_record = bundle.cell(cell_id)
    cell = cell_record.cell
    _supported(cell)
    if cell_record.harness_image is None or cell_record.engine_image is None:
        raise BadInput(f"cell {cell_id} recorded no images ({cell_record.status}: {cell_record.reason})")
    client = client or _client()
    images = {}
    for role, info in (("harness", cell_record.harness_image), ("engine", cell_record.engine_image)):
        if not _present(client, info.id):
            raise ReproError(
                f"the bundle's {role} image {info.reference} ({info.id[:19]}) "
                "is not present here; build or load it first"
            )
        images[role] = ImageRef(
            name=role,
            reference=info.reference,
            key=info.key,
            id=info.id,
            pinned_by=info.pinned_by,
            labels=dict(info.labels),
        )
    suite = cell.share(select(cell.suite))
    notes = []
    if cell_record.suite_sha256 and suite.sha256 != cell_record.suite_sha256:
        notes.append(
            f"the scenario files differ from the bundle's (sha256 {suite.sha256[:12]}, "
            f"bundle {cell_record.suite_sha256[:12]})"
        )
    return ComposeCell(
        cell=cell,
        profile_name=record.profile,
        profile=record.profile_settings,
        harness=images["harness"],
        engine_image=images["engine"],
        gguf=model_path(cell.model),
        suite=suite,
        notes=notes,
    )


def _pick(cells: list[Cell], excluded: list[Cell], cell_id: str, hint: str) -> Cell:
    for cell in cells:
        if cell.id == cell_id:
            return cell
    for cell in excluded:
        if cell.id == cell_id:
            raise BadInput(f"cell {cell_id} is excluded: {cell.excluded}")
    raise BadInput(f"unknown cell {cell_id} (see: {hint})")


def _supported(cell: Cell) -> None:
    if not cell.engine.facts.composable:
        raise BadInput(
            f"cell {cell.id}: the compose files run llama.cpp cells only "
            f"(engine {cell.engine.id} is {cell.engine.kind})"
        )


def _present(client: DockerClient, image_id: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(image_id)
    except ImageNotFound:
        return False
    return True


def _client() -> DockerClient:
    from repro.containers.client import get_client

    return get_client()


# ---------------------------------------------------------------- the orchestrator's kwargs


def group_id(cell: Cell) -> str:
    """The engine's `repro.cell` label: its (engine, model) group, as a run labels it."""
    return f"{cell.engine.id}.{cell.model.id}"


def expected_services(
    source: ComposeCell, *, run_id: str, out_dir: Path, host_cpus: int | None, client: DockerClient | None = None
) -> dict[str, dict[str, Any]]:
    """The `containers.create(...)` kwargs a run would use for this cell's engine, readiness probe
    and harness (the engine's namespace named `ENGINE`)."""
    from repro.containers.sandbox import harness_kwargs, probe_kwargs
    from repro.engines.base import client_argv
    from repro.engines.registry import engine_for
    from repro.suites.registry import kind_of

    cell = source.cell
    kind = kind_of(cell.suite)
    engine = engine_for(client, cell.engine, probe_image=source.harness, run_id=run_id, group_id=group_id(cell))
    launch = engine.boot_spec(
        source.engine_image.id, cell.model, source.gguf, source.profile, cell.decoding, profile_name=source.profile_name
    )
    engine_kwargs = engine.container_kwargs(launch, host_cpus=host_cpus)
    ready = [
        "ready",
        "--base-url",
        engine.base_url,
        "--timeout",
        f"{source.profile.ready_timeout_s:g}",
        "--path",
        engine.health_path,
    ]
    probe = probe_kwargs(source.harness.id, "ENGINE", ready, out_dir / "ready", run_id=run_id, cell_id=group_id(cell))
    engine_client = client_argv(engine.base_url, engine.model_name(cell.model), engine.api)
    harness = harness_kwargs(
        source.harness.id,
        "ENGINE",
        kind.command(cell, engine_client, source.suite, source.profile, source.suite.ids),
        out_dir,
        run_id=run_id,
        cell_id=cell.id,
        mounts=kind.mounts(source.suite),
    )
    return {"engine": engine_kwargs, "ready": probe, "harness": harness}


# ---------------------------------------------------------------- the .env


def new_run_id(cell_id: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%Sz")
    digest = cell_id.rsplit("-", 1)[-1][:8].lower()
    return f"{RUN_PREFIX}-{stamp}-{digest}"


def compose_env(
    source: ComposeCell, *, out_dir: Path, run_id: str, client: DockerClient | None = None
) -> dict[str, str]:
    """The `.env` values for one cell: every one read off the orchestrator's create kwargs."""
    client = client or _client()
    host_cpus = _host_cpus(client)
    services = expected_services(source, run_id=run_id, out_dir=out_dir, host_cpus=host_cpus, client=client)
    engine, ready, harness = services["engine"], services["ready"], services["harness"]
    gpu = engine.get("device_requests") or []
    files = [COMPOSE_FILE] + ([COMPOSE_GPU_FILE] if gpu else [])
    values = {
        "COMPOSE_PROJECT_NAME": run_id,
        "COMPOSE_FILE": os.pathsep.join(files),
        "REPRO_RUN": engine["labels"]["repro.run"],
        "REPRO_CELL": source.cell.id,
        "REPRO_PROFILE": source.profile_name,
        "REPRO_GROUP": engine["labels"]["repro.cell"],
        **_service_values("ENGINE", engine),
        **_service_values("READY", ready),
        **_service_values("HARNESS", harness),
    }
    for name, role in (("engine", "engine"), ("ready", "probe"), ("harness", "harness")):
        if services[name]["labels"].get("repro.role") != role:
            raise ReproError(f"the {name} service's labels are not a {role}'s: {services[name]['labels']}")
    if "REPRO_HARNESS_FIXTURES" not in values:  # the run mounts none: compose mounts an empty folder
        empty = out_dir / ".no-fixtures"
        empty.mkdir(parents=True, exist_ok=True)
        values["REPRO_HARNESS_FIXTURES"] = str(empty)
    if gpu:
        values.update(_gpu_values(gpu))
    return values


def _service_values(prefix: str, kwargs: dict[str, Any]) -> dict[str, str]:
    if len(kwargs["tmpfs"]) != 1:
        raise ReproError(
            f"{prefix.lower()}: the compose files hold one tmpfs, the run asks for {sorted(kwargs['tmpfs'])}"
        )
    ((tmpfs_path, tmpfs_options),) = kwargs["tmpfs"].items()
    values = {
        f"REPRO_{prefix}_IMAGE": kwargs["image"],
        f"REPRO_{prefix}_COMMAND": _command(kwargs["command"], prefix),
        f"REPRO_{prefix}_USER": kwargs["user"],
        f"REPRO_{prefix}_MEM_LIMIT": str(kwargs["mem_limit"]),
        f"REPRO_{prefix}_CPUS": _cpus(kwargs["nano_cpus"]),
        f"REPRO_{prefix}_TMPFS": f"{tmpfs_path}:{tmpfs_options}",
    }
    for mount in kwargs["mounts"]:
        name = {"/out": "OUT", "/models/model.gguf": "MODEL", "/scenarios": "SCENARIOS", "/fixtures": "FIXTURES"}.get(
            mount["Target"]
        )
        if name is None:
            raise ReproError(f"{prefix.lower()}: the compose files have no mount at {mount['Target']}")
        values[f"REPRO_{prefix}_{name}"] = mount["Source"]
    return values


def _command(argv: list[str], prefix: str) -> str:
    text = " ".join(shlex.quote(arg) for arg in argv)
    if any(ch in text for ch in "'\"$\\#") or shlex.split(text) != argv:
        raise BadInput(f"{prefix.lower()} command cannot be written to .env unquoted: {text[:200]}")
    return text


def _cpus(nano_cpus: int) -> str:
    return f"{nano_cpus / 1_000_000_000:g}"


def _gpu_values(requests: list) -> dict[str, str]:
    request = requests[0]
    ids = request.get("DeviceIDs") or []
    if ids:
        raise BadInput(
            f"REPRO_GPU_DEVICES={','.join(ids)}: docker-compose.gpu.yml reserves GPUs by count "
            "(Docker sets NVIDIA_VISIBLE_DEVICES from the reservation, so the variable cannot choose one); "
            "unset it, or replace count with device_ids in a copy of docker-compose.gpu.yml"
        )
    if request.get("Count") != 1:
        raise BadInput(f"docker-compose.gpu.yml reserves one GPU; this profile asks for {request.get('Count')}")
    return {}


def _host_cpus(client: DockerClient) -> int | None:
    from repro.engines.devices import host_cpus_of as host_cpus  # the run's clamp of the CPU quota

    return host_cpus(client)


def default_out_dir(run_id: str) -> Path:
    """The harness's output folder by default: under the project's results/, which git ignores
    (as it ignores the .env beside docker-compose.yml), so a walk by hand leaves the tree clean
    and `matrix run` can follow it."""
    return PROJECT_ROOT / "results" / "compose" / run_id


def prepare_out(out_dir: Path) -> None:
    """The output folders the harness and the readiness probe (the sandbox user) write to."""
    from repro.containers.sandbox import writable_by_sandbox

    for folder in (out_dir, out_dir / "ready"):
        folder.mkdir(parents=True, exist_ok=True)
        writable_by_sandbox(folder)


_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_./:,=+@%-][A-Za-z0-9_./:,=+@% -]*$")


def render_env(values: dict[str, str]) -> str:
    """KEY=VALUE lines docker-compose 1.29 reads as they are (no quotes, no interpolation)."""
    lines = [ENV_HEADER]
    for key, value in values.items():
        if not _SAFE_VALUE.match(value):
            raise BadInput(f"{key}: value cannot be written to .env unquoted: {value[:200]}")
        lines.append(f"{key}={value}\n")
    return "".join(lines)


def write_env(values: dict[str, str], path: Path) -> Path:
    path.write_text(render_env(values))
    return path
