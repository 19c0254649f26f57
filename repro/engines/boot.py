"""`BootSpec`: everything one engine boot is launched with, travelling as one object through the
engine interface (`Engine.start`, `boot`, `container_kwargs`, `prepare_model`) and `boot_engine`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.spec.matrix import Decoding, EngineSpec, ModelSpec
from repro.spec.profiles import Profile


@dataclass(frozen=True)
class BootSpec:
    """What one engine boot needs: the engine and its image, the probe image (the harness's), the
    model and its file, the profile (and its name) and decoding, and whose engine it is (the run,
    the (engine, model) group, which of the group's replicas)."""

    spec: EngineSpec  # as given: a pin that is wrong is the engine's to refuse after boot (not revalidated here)
    image: Any  # an ImageRef (repro.store.images), or an image id
    probe_image: Any
    model: ModelSpec
    gguf: Path
    profile: Profile
    profile_name: str
    decoding: Decoding
    run_id: str
    group_id: str | None = None
    replica: int = 0
