"""`repro doctor MATRIX --profile P`: is the whole pipeline sound, layer by layer?

Each line is OK or FAIL with its layer and a hint, in the order a run needs them, so the first
FAIL says where to look:

- host: the machine checks of `repro doctor` (Docker engine, disk, ...);
- images: the harness image and each engine image present under their content keys;
- models: each model in the store, verified against its sha256;
- engine: for each (engine, model) group, the engine boots sealed and reports the pinned identity;
- protocol: for each protocol of the matrix, one tool-call round trip (the latency gate's probe,
  once, without the speed thresholds): a valid step, or the reason it was not.

A layer that fails stops what depends on it (no engine boots without its image and model), and
every engine booted is removed on the way out.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.containers.client import DockerClient
from repro.core.errors import ReproError
from repro.doctor.machine import Finding, run_checks
from repro.engines.base import EngineHandle, stop_engine
from repro.engines.boot import BootSpec
from repro.engines.gate import run_gate
from repro.engines.registry import boot_engine
from repro.plan.planner import make_plan, template_reason
from repro.spec.cells import Cell
from repro.spec.findings import TemplateFacts
from repro.spec.loading import load_matrix
from repro.spec.matrix import LatencyGateSettings, LoadedMatrix
from repro.spec.profiles import Profile, load_profiles
from repro.store.chat_template import server_blocker, template_facts
from repro.store.images import ImageRef, engine_image, harness_image
from repro.store.models import model_path

Layer = Literal["host", "images", "models", "configuration", "engine", "protocol"]
ONE_ROUND_TRIP = LatencyGateSettings(enabled=True, warmup=False, attempts=1, required=1)
PROBE_RUN_ID = "doctor-probe"


@dataclass
class LayerFinding:
    layer: Layer
    finding: Finding

    @property
    def failed(self) -> bool:
        return self.finding.level == "FAIL"


def ok(layer: Layer, name: str, detail: str) -> LayerFinding:
    return LayerFinding(layer, Finding("OK", name, detail))


def fail(layer: Layer, name: str, detail: str, hint: str = "") -> LayerFinding:
    return LayerFinding(layer, Finding("FAIL", name, detail, hint))


def probe(matrix: Path, profile_name: str) -> Iterator[LayerFinding]:
    """The layered account, one finding at a time (BadInput for a bad matrix or profile)."""
    profile = load_profiles().get(profile_name)
    loaded = load_matrix(matrix)
    host = [LayerFinding("host", finding) for finding in run_checks()]
    yield from host
    if any(f.failed for f in host):
        return
    harness = yield from image_findings(loaded, profile)
    models = yield from model_findings(loaded)
    templates = yield from template_findings(loaded, models)
    if harness is None:
        return
    for cell in group_cells(loaded, profile_name, profile, templates):
        image = engine_image_or_none(cell, profile)
        if (
            image is None
            or cell.model.id not in models
            or (cell.engine.facts.template_from_gguf and cell.model.id not in templates)
        ):
            continue
        yield from engine_findings(
            cell, image, harness, models[cell.model.id], loaded, profile, profile_name, templates.get(cell.model.id)
        )


def image_findings(loaded: LoadedMatrix, profile: Profile) -> Generator[LayerFinding, None, ImageRef | None]:
    """Harness and engine images; returns the harness image (None when missing)."""
    harness: ImageRef | None = None
    try:
        harness = harness_image()
        yield ok("images", "harness image", harness.reference)
    except ReproError as error:
        yield fail("images", "harness image", str(error))
    for engine in loaded.matrix.engines:
        try:
            found = engine_image(engine, profile.engine_variant, compute_capability=profile.compute_capability)
            yield ok("images", f"engine image {engine.id}", found.reference)
        except ReproError as error:
            yield fail("images", f"engine image {engine.id}", str(error))
    return harness


def model_findings(loaded: LoadedMatrix) -> Generator[LayerFinding, None, dict[str, Path]]:
    """Each model verified in the store; returns the paths of those that are."""
    paths: dict[str, Path] = {}
    for model in loaded.matrix.models:
        try:
            paths[model.id] = model_path(model)
            yield ok("models", f"model {model.id}", f"sha256 {model.sha256[:12]} verified")
        except ReproError as error:
            yield fail("models", f"model {model.id}", str(error))
    return paths


def template_findings(
    loaded: LoadedMatrix, models: dict[str, Path]
) -> Generator[LayerFinding, None, dict[str, TemplateFacts]]:
    """Each stored model's chat template: where it comes from and what it carries."""
    facts: dict[str, TemplateFacts] = {}
    for model in loaded.matrix.models:
        if model.id not in models:
            continue
        try:
            found = facts[model.id] = template_facts(model, models[model.id])
        except ReproError as error:
            yield fail(
                "configuration",
                f"chat template {model.id}",
                str(error),
                "pin a chat template file in the matrix (docs/matrix.md)",
            )
            continue
        carries = (
            "renders tools and tool calls"
            if found.renders_tools and found.renders_tool_calls
            else "does not render tools (native_tools is excluded)"
        )
        yield ok(
            "configuration",
            f"chat template {model.id}",
            f"from {found.source}, sha256 {found.sha256[:12]}, {carries}, end of turn {found.end_of_turn}",
        )
    return facts


def group_cells(
    loaded: LoadedMatrix, profile_name: str, profile: Profile, templates: dict[str, TemplateFacts]
) -> list[Cell]:
    """One planned cell per (engine, model) group, standing for the group."""
    groups: dict[tuple[str, str], Cell] = {}
    for cell in make_plan(loaded, profile_name, profile, templates=templates).cells:
        groups.setdefault((cell.engine.id, cell.model.id), cell)
    return list(groups.values())


def engine_image_or_none(cell: Cell, profile: Profile) -> ImageRef | None:
    try:
        return engine_image(cell.engine, profile.engine_variant, compute_capability=profile.compute_capability)
    except ReproError:
        return None  # already reported at the images layer


def engine_findings(
    cell: Cell,
    image: ImageRef,
    harness: ImageRef,
    gguf: Path,
    loaded: LoadedMatrix,
    profile: Profile,
    profile_name: str,
    facts: TemplateFacts | None = None,
) -> Iterator[LayerFinding]:
    """Boot the group's engine sealed, then one round trip per protocol; the engine is removed."""
    from repro.containers.client import get_client

    client = get_client()
    name = f"{cell.engine.id} with {cell.model.id}"
    handle: EngineHandle | None = None
    try:
        try:
            boot = BootSpec(
                spec=cell.engine, image=image, probe_image=harness, model=cell.model, gguf=gguf, profile=profile,
                profile_name=profile_name, decoding=cell.decoding, run_id=PROBE_RUN_ID,
                group_id=f"{cell.engine.id}.{cell.model.id}",
            )  # fmt: skip
            handle = boot_engine(client, boot)
        except ReproError as error:
            yield fail(
                "engine",
                f"boot {name}",
                str(error),
                "see the engine log above; repro images build rebuilds a damaged image",
            )
            return
        yield ok("engine", f"boot {name}", f"sealed (network none), ready in {handle.boot_seconds or 0:.1f}s")
        yield ok("engine", f"identity {name}", f"{handle.identity} (pinned {handle.expected_identity})")
        for protocol in loaded.matrix.protocols:
            blocker = preflight(cell.model_copy(update={"protocol": protocol}), facts, handle)
            if blocker:
                yield LayerFinding(
                    "configuration", Finding("WARN", f"{protocol} {cell.model.id}", f"EXCLUDED, not scored: {blocker}")
                )
                continue
            yield round_trip(client, handle, cell, protocol, harness, profile)
    finally:
        stop_engine(client, handle)


def preflight(cell: Cell, facts: TemplateFacts | None, handle: EngineHandle) -> str | None:
    """Why the booted engine cannot carry the cell's protocol (host facts, then the server's caps)."""
    if not cell.engine.facts.template_from_gguf:
        return template_reason(cell, None)
    return template_reason(cell, facts) or server_blocker(handle.settings.get("chat_template_caps"), cell.protocol)


def round_trip(
    client: DockerClient, handle: EngineHandle, cell: Cell, protocol: str, harness: ImageRef, profile: Profile
) -> LayerFinding:
    """One gate probe request under `protocol`: OK when the model's reply was a valid step."""
    name = f"{protocol} round trip, {cell.model.id}"
    try:
        gate = run_gate(
            client,
            handle,
            profile=profile,
            settings=ONE_ROUND_TRIP,
            decoding=cell.decoding,
            protocol=protocol,
            probe_image=harness.id,
        )
    except ReproError as error:
        return fail("protocol", name, str(error), "the engine stopped answering: see its log")
    attempt = gate.attempts[0] if gate.attempts else None
    if attempt is None:
        return fail("protocol", name, gate.reason, "the probe recorded no request")
    if attempt.error:
        return fail("protocol", name, attempt.error, "an engine or transport error, not the model's reply")
    if not attempt.valid_step:
        return fail(
            "protocol",
            name,
            f"the reply was not a valid step: {attempt.problem}",
            "the model cannot form this protocol's call; compare protocols",
        )
    speed = f", {attempt.tokens_per_second:.1f} tokens/s" if attempt.tokens_per_second else ""
    return ok("protocol", name, f"valid step ({attempt.tool or 'a tool'}) in {attempt.seconds or 0:.1f}s{speed}")
