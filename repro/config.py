"""Where things live on the host: the project root and the content-addressed cache."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MATRIX = PROJECT_ROOT / "matrix" / "smoke.yaml"
PROFILES_FILE = PROJECT_ROOT / "matrix" / "profiles.yaml"


def cache_dir() -> Path:
    """The cache for models, sources and build contexts (`REPRO_CACHE`, else XDG, else ~/.cache)."""
    if os.environ.get("REPRO_CACHE"):
        return Path(os.environ["REPRO_CACHE"]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "repro"
