"""Images: the harness image and engine images, tagged by content key, built offline-capable.

Every image repro builds comes from a Dockerfile in images/ whose base is a build argument. Its
tag is `repro/<name>:<key16>` where the key is the sha256 over everything the image is made of:

    the Dockerfile's bytes, the build arguments (base references, source sha256, stamped build),
    the input hashes (engine source sha256; harness tree digest and wheel lock hash) and the
    image id of every base it builds on.

So an unchanged set of inputs is a no-op (the tag exists: "up to date") and a changed input can
never hide behind an old tag. The key is computed without fetching anything: sources are named by
their pinned sha256, wheels by the hash of the lock file; both are fetched, verified and cached
only when a build actually runs. Engines pinned by digest (`image:` in the matrix) are resolved
locally and never pulled.

Public API: `ImageRef`, `harness_image`, `engine_image`, `base_image_id`,
`harness_source_digest`; `needed_images` and `build_plan_*` serve the CLI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput, ReproError
from repro.core.files import sha256_bytes
from repro.spec.matrix import EngineSpec, LoadedMatrix, Variant
from repro.store.bootstrap import DEFAULT_SUITE, base_reference

if TYPE_CHECKING:
    from repro.containers.client import DockerClient, Image

KEY_SCHEMA = 1
REPOSITORY = "repro"
HARNESS_DIR = "images/harness"
HARNESS_DOCKERFILE = f"{HARNESS_DIR}/Dockerfile"
HARNESS_LOCK = f"{HARNESS_DIR}/requirements.txt"
# The harness image's Python: Debian bookworm's python3 (3.11) on x86_64.
WHEEL_PYTHON = "3.11"
WHEEL_PLATFORM = "manylinux2014_x86_64"
WHEEL_IMPLEMENTATION = "cp"
# The harness image's platform: pip downloads wheels for it, whatever the host runs.
WHEEL_TARGET = ["--only-binary=:all:", "--python-version", WHEEL_PYTHON, "--platform", WHEEL_PLATFORM, "--implementation", WHEEL_IMPLEMENTATION]
BUILD_TIMEOUT_S = 3 * 3600
LOG_TAIL_LINES = 30
# Reproducible zip timestamps for the repro wheel built on the host (1980-01-01, zip's epoch).
WHEEL_EPOCH = "315532800"
_EXCLUDED_PARTS = {"__pycache__"}
_EXCLUDED_SUFFIXES = (".pyc", ".pyo")

Log = Callable[[str], None]


def quiet(_line: str) -> None:
    return None


@dataclass(frozen=True)
class ImageRef:
    """A resolved local image: what a run records and creates containers from (by `id`)."""

    name: str
    reference: str
    key: str | None
    id: str
    pinned_by: Literal["content-key", "digest"]
    labels: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class BuildPlan:
    """How to build one image, and its content key (computed without fetching anything)."""

    name: str
    kind: Literal["harness", "engine"]
    dockerfile: Path
    buildargs: dict
    inputs: dict
    base_ids: dict
    key: str
    labels: dict
    source: str
    engine: EngineSpec | None = None
    variant: str | None = None

    @property
    def tag(self) -> str:
        return f"{REPOSITORY}/{self.name}:{self.key[:16]}"


@dataclass(frozen=True)
class DigestPin:
    """An engine pinned by registry digest (`image:` in the matrix): resolved locally, never built."""

    name: str
    reference: str
    engine: EngineSpec


# ---------------------------------------------------------------- digests and keys


def _tree_files(root: Path, folder: str) -> Iterable[Path]:
    base = root / folder
    if not base.is_dir():
        return []
    found = []
    for path in base.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(root)
        if _EXCLUDED_PARTS.intersection(relative.parts) or path.name.endswith(_EXCLUDED_SUFFIXES):
            continue
        found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def harness_source_digest(root: str | Path = PROJECT_ROOT) -> str:
    """sha256 over the files under harness/ and pyproject.toml (paths and contents; no caches).

    One line per file, `<sha256>  <path relative to root>`, sorted by path, hashed together, so
    a rename, an edit, an added or a removed file all change it. The harness image carries it as
    the label `repro.harness_tree`; a run records it and `repro check` compares.
    """
    root = Path(root)
    lines = []
    for path in list(_tree_files(root, "harness")) + [root / "pyproject.toml"]:
        if not path.is_file():
            raise ReproError(f"{path} is missing: cannot compute the harness source digest")
        lines.append(f"{sha256_bytes(path.read_bytes())}  {path.relative_to(root).as_posix()}\n")
    return sha256_bytes("".join(lines).encode())


def content_key(material: dict) -> str:
    return sha256_bytes(json.dumps(material, sort_keys=True, separators=(",", ":")).encode())


def dockerfile_args(path: str | Path) -> dict[str, str | None]:
    """ARG names of a Dockerfile (in order of first appearance) with their default, if any."""
    args: dict[str, str | None] = {}
    text = Path(path).read_text()
    text = re.sub(r"\\\n", " ", text)
    for line in text.splitlines():
        match = re.match(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?\s*$", line)
        if match and match.group(1) not in args:
            args[match.group(1)] = match.group(2)
        elif match and match.group(2) is not None:
            args[match.group(1)] = match.group(2)
    return args


# ---------------------------------------------------------------- base images


def configured_base() -> str:
    """The base for CPU images: REPRO_BASE_IMAGE, else the bootstrapped repro/base:bookworm."""
    return os.environ.get("REPRO_BASE_IMAGE") or base_reference(DEFAULT_SUITE)


def client_or_default(client: DockerClient | None) -> DockerClient:
    if client is not None:
        return client
    from repro.containers.client import get_client

    return get_client()


def resolve_base(reference: str, client: DockerClient) -> str:
    """The local image id of a base reference, or a one-line ReproError saying how to get it."""
    from docker.errors import ImageNotFound

    try:
        return client.images.get(reference).id
    except ImageNotFound:
        if reference.startswith(f"{REPOSITORY}/base:"):
            suite = reference.split(":", 1)[1]
            raise ReproError(f"base image {reference} is missing; run: repro images bootstrap --suite {suite}") from None
        raise ReproError(f"base image {reference} is not present locally; pull it by digest first (docker pull {reference}); builds never pull") from None


def base_image_id(client: DockerClient | None = None) -> str:
    """The id of the base CPU images build on (repro/base:bookworm unless REPRO_BASE_IMAGE)."""
    return resolve_base(configured_base(), client_or_default(client))


CUDA_BASES_ENV = "REPRO_CUDA_BASES"


def _variant_bases(dockerfile: Path, variant: str) -> dict[str, str]:
    """BASE_IMAGE and BUILD_BASE_IMAGE for a variant (always passed explicitly as build args).

    CUDA builds on the offline base by default (Debian's nvidia-cuda-toolkit from non-free);
    REPRO_CUDA_BASES=registry takes the Dockerfile's nvidia/cuda bases pinned by digest, and
    REPRO_CUDA_BASE_IMAGE / REPRO_CUDA_BUILD_BASE_IMAGE name others.
    """
    if variant == "cpu":
        base = configured_base()
        return {"BASE_IMAGE": base, "BUILD_BASE_IMAGE": base}
    choice = os.environ.get(CUDA_BASES_ENV, "offline")
    if choice not in ("offline", "registry"):
        raise BadInput(f"{CUDA_BASES_ENV}={choice}: expected offline or registry")
    if choice == "registry":
        defaults = dockerfile_args(dockerfile)
        runtime, builder = defaults.get("BASE_IMAGE"), defaults.get("BUILD_BASE_IMAGE")
    else:
        runtime = builder = configured_base()
    runtime = os.environ.get("REPRO_CUDA_BASE_IMAGE") or runtime
    builder = os.environ.get("REPRO_CUDA_BUILD_BASE_IMAGE") or builder
    if not runtime or not builder:
        raise BadInput(f"{dockerfile}: needs ARG BASE_IMAGE and ARG BUILD_BASE_IMAGE defaults for the {variant} variant")
    return {"BASE_IMAGE": runtime, "BUILD_BASE_IMAGE": builder}


def cuda_architectures(dockerfile: Path, compute_capability: str | None) -> str:
    """CMake CUDA architectures: the profile's compute capability only ("7.5" -> "75"), else every
    capability the CUDA profiles name that the toolkit builds (repro.cuda_toolkit; for the offline
    toolkit that is the Dockerfile's default, which a test keeps equal). A capability the toolkit
    cannot build is refused in one line before anything compiles."""
    from repro.spec.profiles import load_profiles
    from repro.store.cuda_toolkit import architecture, current_toolkit, profile_architectures, unbuildable_capability

    toolkit = current_toolkit()
    if compute_capability is None:
        found = profile_architectures(load_profiles().profiles.values(), toolkit)
        if not found:
            raise BadInput(f"{dockerfile}: no CUDA profile names a compute capability {toolkit.name} builds")
        return ";".join(found)
    refused = unbuildable_capability(compute_capability, "the CUDA image", toolkit)
    if refused:
        raise BadInput(refused)
    return architecture(compute_capability)


# ---------------------------------------------------------------- build plans


def build_plan_harness(client: DockerClient | None = None, *, root: Path = PROJECT_ROOT) -> BuildPlan:
    client = client_or_default(client)
    dockerfile = root / HARNESS_DOCKERFILE
    lock = root / HARNESS_LOCK
    for needed in (dockerfile, lock):
        if not needed.is_file():
            raise ReproError(f"{needed} is missing")
    base = configured_base()
    buildargs = {"BASE_IMAGE": base}
    base_ids = {"BASE_IMAGE": resolve_base(base, client)}
    tree = harness_source_digest(root)
    inputs = {
        "harness_tree": tree,
        "requirements_sha256": sha256_bytes(lock.read_bytes()),
        "wheel_target": f"{WHEEL_IMPLEMENTATION}{WHEEL_PYTHON}-{WHEEL_PLATFORM}",
    }
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = content_key(
        {"schema": KEY_SCHEMA, "kind": "harness", "dockerfile_sha256": dockerfile_sha, "buildargs": buildargs, "inputs": inputs, "base_ids": base_ids}
    )
    labels = {
        "repro.key": key,
        "repro.kind": "harness",
        "repro.source": f"tree:{tree}",
        "repro.harness_tree": tree,
        "repro.requirements_sha256": inputs["requirements_sha256"],
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": base,
        "repro.base_id": base_ids["BASE_IMAGE"],
    }
    return BuildPlan(
        name="harness",
        kind="harness",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=f"tree:{tree}",
    )


def engine_image_name(engine: EngineSpec, variant: str) -> str:
    return f"{engine.id}-{variant}"


def build_plan_engine(
    engine: EngineSpec, variant: Variant, client: DockerClient | None = None, *, root: Path = PROJECT_ROOT, compute_capability: str | None = None
) -> BuildPlan:
    """How to build an engine image; for CUDA, `compute_capability` (a profile's) picks the one
    architecture to compile for (None: every architecture the Dockerfile lists)."""
    client = client_or_default(client)
    if engine.build is None:
        raise BadInput(f"engine {engine.id} is pinned by image digest, not built")
    relative = engine.build.dockerfile_for(variant)
    if relative is None:
        raise BadInput(f"engine {engine.id} has no Dockerfile for the {variant} variant")
    dockerfile = root / relative
    if not dockerfile.is_file():
        raise BadInput(f"engine {engine.id}: Dockerfile {relative} not found")
    source = engine.build.source
    bases = _variant_bases(dockerfile, variant)
    buildargs = {
        **bases,
        "SOURCE_SHA256": source.sha256,
        "LLAMA_BUILD_NUMBER": str(engine.build.build_number),
        "LLAMA_BUILD_COMMIT": engine.build.build_commit,
    }
    if variant == "cuda":
        buildargs["CUDA_ARCHITECTURES"] = cuda_architectures(dockerfile, compute_capability)
    base_ids = {name: resolve_base(reference, client) for name, reference in bases.items()}
    inputs = {"source_sha256": source.sha256}
    dockerfile_sha = sha256_bytes(dockerfile.read_bytes())
    key = content_key(
        {"schema": KEY_SCHEMA, "kind": "engine", "dockerfile_sha256": dockerfile_sha, "buildargs": buildargs, "inputs": inputs, "base_ids": base_ids}
    )
    build_info = engine.stamped_build_info() or ""
    # Labels travel into result bundles: name a local archive by its file name, never its path.
    source_label = f"archive:{Path(source.archive).name}" if source.archive else source.describe()
    labels = {
        "repro.key": key,
        "repro.kind": "engine",
        "repro.engine": engine.id,
        "repro.engine_kind": engine.kind,
        "repro.variant": variant,
        "repro.source": source_label,
        "repro.source_sha256": source.sha256,
        "repro.build_info": build_info,
        "repro.dockerfile": relative,
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": bases["BASE_IMAGE"],
        "repro.base_id": base_ids["BASE_IMAGE"],
        "repro.build_base_image": bases["BUILD_BASE_IMAGE"],
        "repro.build_base_id": base_ids["BUILD_BASE_IMAGE"],
    }
    if "CUDA_ARCHITECTURES" in buildargs:
        labels["repro.cuda_architectures"] = buildargs["CUDA_ARCHITECTURES"]
    return BuildPlan(
        name=engine_image_name(engine, variant),
        kind="engine",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=source_label,
        engine=engine,
        variant=variant,
    )


@dataclass(frozen=True)
class Blocked:
    """An image whose key cannot be computed here (say, a base not present); `reason` says why."""

    name: str
    reason: str


def needed_images(
    loaded: LoadedMatrix,
    variant: Variant,
    client: DockerClient | None = None,
    *,
    engine_ids: list[str] | None = None,
    collect: bool = False,
    compute_capability: str | None = None,
) -> list[BuildPlan | DigestPin | Blocked]:
    """What a matrix needs on a variant: the harness image, then each engine serving it
    (CUDA engines for `compute_capability`, a profile's, when given).

    A plan that cannot be computed raises, or with `collect` comes back as `Blocked`.
    """
    client = client_or_default(client)
    needs: list[BuildPlan | DigestPin | Blocked] = []

    def add(name: str, make: Callable[[], BuildPlan | DigestPin | Blocked]) -> None:
        try:
            needs.append(make())
        except ReproError as error:
            if not collect:
                raise
            needs.append(Blocked(name=name, reason=error.lines[0]))

    add("harness", lambda: build_plan_harness(client))
    for engine in loaded.matrix.engines:
        if engine_ids is not None and engine.id not in engine_ids:
            continue
        if not engine.serves(variant):
            continue
        if engine.image is not None:
            needs.append(DigestPin(name=engine.id, reference=engine.image, engine=engine))
        elif engine.kind != "scripted":  # it runs in the harness image, already needed
            add(engine_image_name(engine, variant), partial(build_plan_engine, engine, variant, client, compute_capability=compute_capability))
    return needs


# ---------------------------------------------------------------- resolving


def find_local(reference: str, client: DockerClient) -> Image | None:
    from docker.errors import ImageNotFound

    try:
        return client.images.get(reference)
    except ImageNotFound:
        return None


def ref_for_plan(plan: BuildPlan, image: Image) -> ImageRef:
    return ImageRef(
        name=plan.name,
        reference=plan.tag,
        key=plan.key,
        id=image.id,
        pinned_by="content-key",
        labels=dict(image.labels or {}),
    )


def resolve_plan(plan: BuildPlan, client: DockerClient) -> ImageRef | None:
    image = find_local(plan.tag, client)
    if image is None:
        return None
    if (image.labels or {}).get("repro.key") != plan.key:
        raise ReproError(
            f"image {plan.tag} carries key {(image.labels or {}).get('repro.key')} instead of {plan.key}; remove it (docker rmi {plan.tag}) and rebuild"
        )
    return ref_for_plan(plan, image)


def resolve_digest(pin: DigestPin, client: DockerClient) -> ImageRef:
    image = find_local(pin.reference, client)
    if image is None:
        raise ReproError(
            f"engine {pin.name}: image {pin.reference} is not present locally; pull it by digest first (docker pull {pin.reference}); a run never pulls"
        )
    return ImageRef(name=pin.name, reference=pin.reference, key=None, id=image.id, pinned_by="digest", labels=dict(image.labels or {}))


def _missing(plan: BuildPlan, matrix: str | None) -> ReproError:
    hint = f"repro images build {matrix}" if matrix else "repro images build MATRIX"
    if plan.variant and plan.variant != "cpu":
        hint += " --profile <a gpu profile>"
    return ReproError(f"image {plan.tag} is missing; run: {hint}")


def harness_image(client: DockerClient | None = None, *, build: bool = False, log: Log = quiet) -> ImageRef:
    """The harness image for the current tree (harness/ + pyproject.toml); build it if asked."""
    client = client_or_default(client)
    plan = build_plan_harness(client)
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise _missing(plan, None)
    return build_image(plan, client, log=log)


def engine_image(
    engine: EngineSpec,
    variant: str,
    client: DockerClient | None = None,
    *,
    build: bool = False,
    log: Log = quiet,
    matrix: str | None = None,
    compute_capability: str | None = None,
) -> ImageRef:
    """The engine's image for a variant: by digest pin, or by content key (built if asked).
    CUDA images are built for `compute_capability` (a profile's) when given."""
    client = client_or_default(client)
    if not engine.serves(variant):  # type: ignore[arg-type]
        raise BadInput(f"engine {engine.id} has no {variant} image")
    if engine.image is not None:
        return resolve_digest(DigestPin(name=engine.id, reference=engine.image, engine=engine), client)
    if engine.kind == "scripted":  # the scripted engine runs in the harness image of this tree
        return harness_image(client, build=build, log=log)
    plan = build_plan_engine(engine, variant, client, compute_capability=compute_capability)  # type: ignore[arg-type]
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise _missing(plan, matrix)
    return build_image(plan, client, log=log)


# ---------------------------------------------------------------- building


def build_image(plan: BuildPlan, client: DockerClient, *, log: Log = quiet) -> ImageRef:
    """Assemble the build context (fetching and verifying inputs), build, check the tag exists."""
    fill = _harness_context if plan.kind == "harness" else _engine_context
    return build_in_context(plan, client, lambda context: fill(plan, context, log), log)


def build_in_context(plan: BuildPlan, client: DockerClient, fill: Callable[[Path], None], log: Log = quiet) -> ImageRef:
    """Build `plan` from a temporary context under the cache that `fill` assembles; the tag must exist after."""
    work_parent = cache_dir() / "contexts"
    work_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{plan.name}-", dir=work_parent) as work:
        context = Path(work)
        fill(context)
        _docker_build(plan, context, client, log)
    image = find_local(plan.tag, client)
    if image is None:
        raise ReproError(f"build of {plan.tag} reported success but the image is not there")
    return ref_for_plan(plan, image)


def _docker_build(plan: BuildPlan, context: Path, client: DockerClient, log: Log) -> None:
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    error: str | None = None
    try:
        stream = client.api.build(
            path=str(context),
            dockerfile="Dockerfile",
            tag=plan.tag,
            buildargs=plan.buildargs,
            labels=plan.labels,
            network_mode="host",
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=BUILD_TIMEOUT_S,
            use_config_proxy=False,
        )
        pending = ""
        for chunk in stream:
            if "stream" in chunk:
                pending += _ANSI.sub("", str(chunk["stream"]))
                *complete, pending = pending.split("\n")
                for line in complete:
                    _emit(line, tail, log)
            elif "error" in chunk:
                error = str(chunk.get("errorDetail", {}).get("message") or chunk["error"]).strip()
            elif "status" in chunk:
                log(str(chunk["status"]))
        _emit(pending, tail, log)
    except Exception as exc:  # API errors (bad Dockerfile, daemon gone) land here
        from docker.errors import APIError, DockerException

        if not isinstance(exc, (APIError, DockerException)) and "Timeout" not in type(exc).__name__:
            raise
        error = getattr(exc, "explanation", None) or str(exc)
    if error is not None:
        first = error.splitlines()[0] if error else "unknown error"
        lines = [f"build of {plan.tag} failed: {first}"]
        if tail:
            lines.append(f"--- last {len(tail)} lines of the build log ---")
            lines += list(tail)
        raise ReproError(lines[0], lines=lines)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _emit(line: str, tail: deque, log: Log) -> None:
    line = line.rstrip()
    if line.strip():
        tail.append(line)
        log(line)


def build_log_path(name: str) -> Path:
    """Where an image's build log is written: `<cache>/build-logs/<name>.log` (the latest build
    of that image; the cache is `REPRO_CACHE`, else `~/.cache/repro`)."""
    return cache_dir() / "build-logs" / f"{name}.log"


class BuildLog:
    """A build's log, written to `path` (opened at its first line) and to `stream` too when given
    (`--log`). Used as a context: a ReproError raised inside names the file and carries the log's
    last lines (unless it carries them already, as a failed `docker build` does)."""

    def __init__(self, path: Path, stream: Log | None = None) -> None:
        self.path = path
        self.stream = stream
        self.tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.out: IO[str] | None = None

    def __call__(self, line: str) -> None:
        if self.out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.out = self.path.open("w", encoding="utf-8")
        self.out.write(line + "\n")
        self.out.flush()
        self.tail.append(line)
        if self.stream is not None:
            self.stream(line)

    @property
    def written(self) -> bool:
        return self.out is not None

    def __enter__(self) -> BuildLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        if self.out is not None:
            self.out.close()
        if not isinstance(error, ReproError) or self.out is None:
            return
        tail = [] if len(error.lines) > 1 or not self.tail else [f"--- last {len(self.tail)} lines of the build log ---", *self.tail]
        lines = [*error.lines, *tail, f"the whole build log: {self.path}"]
        raise type(error)(lines[0], lines=lines) from error


def link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _engine_context(plan: BuildPlan, context: Path, log: Log) -> None:
    from repro.store.sources import fetch_source

    assert plan.engine is not None and plan.engine.build is not None
    archive = fetch_source(plan.engine.build.source, log=log)
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    link_or_copy(archive, context / "source.archive")


def _harness_context(plan: BuildPlan, context: Path, log: Log, *, root: Path = PROJECT_ROOT) -> None:
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    wheels = context / "wheels"
    wheels.mkdir()
    for wheel in sorted(harness_wheels(root=root, log=log).glob("*.whl")):
        link_or_copy(wheel, wheels / wheel.name)
    build_repro_wheel(wheels, root=root, log=log)
    sums = "".join(f"{sha256_bytes(w.read_bytes())}  {w.name}\n" for w in sorted(wheels.glob("*.whl")))
    (wheels / "SHA256SUMS").write_text(sums)


def pip_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def run_tool(command: list[str], what: str, env: dict | None = None) -> str:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if result.returncode != 0:
        tail = result.stdout.strip().splitlines()[-LOG_TAIL_LINES:]
        raise ReproError(f"{what} failed (exit {result.returncode})", lines=[f"{what} failed (exit {result.returncode})", *tail])
    return result.stdout


def harness_wheels(*, root: Path = PROJECT_ROOT, log: Log = quiet) -> Path:
    """The dependency wheels of the lock file, downloaded once (hashes required) and cached.

    Cached at <cache>/wheels/<sha256 of the lock and the wheel target>/; a `.complete` marker is
    written only after pip verified every hash.
    """
    lock = root / HARNESS_LOCK
    lock_bytes = lock.read_bytes()
    target = f"{WHEEL_IMPLEMENTATION}{WHEEL_PYTHON}-{WHEEL_PLATFORM}"
    folder = cache_dir() / "wheels" / sha256_bytes(lock_bytes + b"\0" + target.encode())
    if (folder / ".complete").is_file():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    log(f"downloading the harness wheels ({target}) from {HARNESS_LOCK}")
    run_tool(
        pip_argv(
            "download",
            "--require-hashes",
            "--no-deps",
            *WHEEL_TARGET,
            "-r",
            str(lock),
            "-d",
            str(folder),
        ),
        "pip download (harness wheels)",
    )
    (folder / ".complete").write_text(lock_bytes.decode())
    return folder


HARNESS_README_STUB = "# repro\n\nThe in-container harness of repro (the image installs the harness package only).\n"


def build_repro_wheel(out: Path, *, root: Path = PROJECT_ROOT, log: Log = quiet) -> Path:
    """The `repro` wheel of harness/ and pyproject.toml only (the orchestrator stays on the host).

    Built from a staged copy holding exactly the files the harness digest covers (plus a fixed
    README stub that pyproject's `readme` names), with fixed zip timestamps.
    """
    work_parent = cache_dir() / "tmp"
    work_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="repro-wheel-", dir=work_parent) as work:
        stage = Path(work) / "repro"
        for path in _tree_files(root, "harness"):
            destination = stage / path.relative_to(root)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
        shutil.copyfile(root / "pyproject.toml", stage / "pyproject.toml")
        (stage / "README.md").write_text(HARNESS_README_STUB)
        built = Path(work) / "dist"
        log("building the repro wheel (harness/ + pyproject.toml)")
        env = {**os.environ, "SOURCE_DATE_EPOCH": WHEEL_EPOCH, "PYTHONDONTWRITEBYTECODE": "1"}
        run_tool(pip_argv("wheel", "--no-deps", "-q", "-w", str(built), str(stage)), "pip wheel (repro)", env=env)
        wheels = sorted(built.glob("repro-*.whl"))
        if len(wheels) != 1:
            raise ReproError(f"pip wheel made {len(wheels)} repro wheels, expected one")
        target = out / wheels[0].name
        shutil.copyfile(wheels[0], target)
        return target


def base_dependencies(root: Path = PROJECT_ROOT) -> list[str]:
    import tomllib

    return list(tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"])


def lock_harness_requirements(*, root: Path = PROJECT_ROOT, log: Log = quiet) -> str:
    """Resolve pyproject's base dependencies for the harness image and write the hash lock."""
    requirements = base_dependencies(root)
    with tempfile.TemporaryDirectory(prefix="lock-") as work:
        run_tool(
            pip_argv(
                "download",
                *WHEEL_TARGET,
                "-d",
                work,
                *requirements,
            ),
            "pip download (lock)",
        )
        pins = []
        for wheel in sorted(Path(work).glob("*.whl")):
            name, version = wheel.name.split("-")[:2]
            digest = sha256_bytes(wheel.read_bytes())
            pins.append(f"{name.replace('_', '-').lower()}=={version} \\\n    --hash=sha256:{digest}\n")
    header = (
        "# The harness image's dependency wheels, pinned with hashes (regenerate: repro images lock).\n"
        f"# Resolved from pyproject.toml's base dependencies: {', '.join(requirements)}\n"
        f"# for {WHEEL_IMPLEMENTATION}{WHEEL_PYTHON} on {WHEEL_PLATFORM} (Debian bookworm's python3).\n"
    )
    text = header + "".join(pins)
    (root / HARNESS_LOCK).write_text(text)
    log(f"wrote {HARNESS_LOCK} ({len(pins)} wheels)")
    return text
