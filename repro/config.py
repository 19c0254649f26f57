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


def require_checkout() -> None:
    """The orchestrator reads matrices, profiles, Dockerfiles, table templates and scenarios from
    the project tree: an install without them (a plain `pip install .`) is refused in one line."""
    if not PROFILES_FILE.is_file():
        from repro.errors import BadInput

        raise BadInput(
            f"repro runs from a source checkout (no {PROFILES_FILE.relative_to(PROJECT_ROOT)} beside the package): clone the project and `pip install -e '.[host]'`"
        )
