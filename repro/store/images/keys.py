"""What an image is made of: its reference types, the harness tree digest and the content key.

`ImageRef` is a resolved local image, `BuildPlan` how to build one (with its key), `DigestPin` an
engine pinned by registry digest; `harness_source_digest` hashes harness/ and pyproject.toml, and
`content_key` hashes a build's material (repro.store.images says what enters it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from repro.core.config import PROJECT_ROOT
from repro.core.errors import ReproError
from repro.core.files import sha256_bytes
from repro.spec.matrix import EngineSpec

if TYPE_CHECKING:
    from repro.containers.client import Image

__all__ = [
    "BUILD_TIMEOUT_S",
    "HARNESS_DIR",
    "HARNESS_DOCKERFILE",
    "HARNESS_LOCK",
    "KEY_SCHEMA",
    "LOG_TAIL_LINES",
    "REPOSITORY",
    "Blocked",
    "BuildPlan",
    "DigestPin",
    "ImageRef",
    "Log",
    "content_key",
    "dockerfile_args",
    "harness_source_digest",
    "image_key",
    "quiet",
    "ref_for_plan",
    "tree_files",
]

KEY_SCHEMA = 1
REPOSITORY = "repro"
HARNESS_DIR = "images/harness"
HARNESS_DOCKERFILE = f"{HARNESS_DIR}/Dockerfile"
HARNESS_LOCK = f"{HARNESS_DIR}/requirements.txt"
BUILD_TIMEOUT_S = 3 * 3600
LOG_TAIL_LINES = 30
EXCLUDED_PARTS = {"__pycache__"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo")

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


@dataclass(frozen=True)
class Blocked:
    """An image whose key cannot be computed here (say, a base not present); `reason` says why."""

    name: str
    reason: str


def tree_files(root: Path, folder: str) -> Iterable[Path]:
    """The regular files under `root/folder` (links, caches and bytecode left out), sorted by path."""
    base = root / folder
    if not base.is_dir():
        return []
    found = []
    for path in base.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(root)
        if EXCLUDED_PARTS.intersection(relative.parts) or path.name.endswith(EXCLUDED_SUFFIXES):
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
    for path in list(tree_files(root, "harness")) + [root / "pyproject.toml"]:
        if not path.is_file():
            raise ReproError(f"{path} is missing: cannot compute the harness source digest")
        lines.append(f"{sha256_bytes(path.read_bytes())}  {path.relative_to(root).as_posix()}\n")
    return sha256_bytes("".join(lines).encode())


def content_key(material: dict) -> str:
    return sha256_bytes(json.dumps(material, sort_keys=True, separators=(",", ":")).encode())


def image_key(kind: str, dockerfile_sha256: str, buildargs: dict, inputs: dict, base_ids: dict) -> str:
    """The content key of an image of `kind` (harness, engine, external): the key schema, the
    Dockerfile's sha256, the build arguments, the input hashes and the ids of the bases it builds on."""
    material = {"schema": KEY_SCHEMA, "kind": kind, "dockerfile_sha256": dockerfile_sha256, "buildargs": buildargs}
    return content_key(material | {"inputs": inputs, "base_ids": base_ids})


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


def ref_for_plan(plan: BuildPlan, image: Image) -> ImageRef:
    """The local `image` built from `plan`, as a run records it."""
    return ImageRef(
        name=plan.name,
        reference=plan.tag,
        key=plan.key,
        id=image.id,
        pinned_by="content-key",
        labels=dict(image.labels or {}),
    )
