"""Where things live on the host: the project root, the files the package ships, and the
content-addressed cache."""

from __future__ import annotations

import os
import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
# The files outside the packages that an installed repro reads (the wheel carries copies of them
# in repro/_data/, see setup.py): from a checkout they are read in place.
PACKAGE_DATA = Path(__file__).resolve().parent.parent / "_data"
SHIPPED_FILES = ("matrix/profiles.yaml", "paper/templates")
# What only a source checkout has: the Dockerfiles the images are built from and the matrices and
# scenarios a run reads (a matrix's paths are relative to the project).
CHECKOUT_MARKERS = ("pyproject.toml", "images", "matrix")


def project_file(relative: str) -> Path:
    """A file the package ships (one of SHIPPED_FILES): the checkout's own when there is one, else
    the installed package's copy."""
    in_checkout = PROJECT_ROOT / relative
    return in_checkout if in_checkout.exists() or not (PACKAGE_DATA / relative).exists() else PACKAGE_DATA / relative


DEFAULT_MATRIX = PROJECT_ROOT / "matrix" / "smoke.yaml"
PROFILES_FILE = project_file("matrix/profiles.yaml")


def cache_dir() -> Path:
    """The cache for models, sources and build contexts (`REPRO_CACHE`, else XDG, else ~/.cache)."""
    if os.environ.get("REPRO_CACHE"):
        return Path(os.environ["REPRO_CACHE"]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "repro"


def is_checkout() -> bool:
    return all((PROJECT_ROOT / marker).exists() for marker in CHECKOUT_MARKERS)


def require_checkout(command: str = "this command") -> None:
    """Commands that build, run or plan read matrices, Dockerfiles and scenarios from the project
    tree: an installed repro (which checks, verifies and renders bundles) refuses them in one line."""
    if not is_checkout():
        from repro.core.errors import BadInput

        raise BadInput(
            f"{command} needs the project's source checkout (its matrices, Dockerfiles and scenarios); "
            "an installed repro checks, verifies and renders bundles only: clone the project and run it from there "
            "(`pip install -e '.[host]'` inside the clone)"
        )


def extra_pin(extra: str, package: str) -> str:
    """How repro's metadata pins `package` in its `extra` (e.g. "inspect-ai==0.3.285", from
    pyproject.toml's optional dependencies), for the one command that installs it; the bare name
    when the metadata cannot say."""
    from importlib import metadata

    try:
        lines = metadata.requires("repro") or []
    except metadata.PackageNotFoundError:
        return package
    for line in lines:
        found = re.fullmatch(
            rf"({re.escape(package)}\s*==\s*[\w.]+)\s*;\s*extra\s*==\s*[\"']{extra}[\"']", line.strip()
        )
        if found:
            return found[1].replace(" ", "")
    return package
