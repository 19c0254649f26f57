"""The harness image's wheels: its dependency wheels from the hash lock (downloaded once, cached),
the repro wheel of harness/ and pyproject.toml (built reproducibly), and the lock itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import ReproError
from repro.core.files import sha256_bytes
from repro.store.images.keys import HARNESS_LOCK, LOG_TAIL_LINES, Log, quiet, tree_files

__all__ = [
    "WHEEL_IMPLEMENTATION",
    "WHEEL_PLATFORM",
    "WHEEL_PYTHON",
    "WHEEL_TARGET",
    "base_dependencies",
    "build_repro_wheel",
    "harness_wheels",
    "lock_harness_requirements",
    "pip_argv",
    "run_tool",
]

# The harness image's Python: Debian bookworm's python3 (3.11) on x86_64.
WHEEL_PYTHON = "3.11"
WHEEL_PLATFORM = "manylinux2014_x86_64"
WHEEL_IMPLEMENTATION = "cp"
# The harness image's platform: pip downloads wheels for it, whatever the host runs. Bookworm's glibc
# (2.36) also takes manylinux_2_28 and _2_17 wheels (an external suite's lock holds some: inspect's).
WHEEL_TARGET = [
    "--only-binary=:all:",
    "--python-version",
    WHEEL_PYTHON,
    "--platform",
    WHEEL_PLATFORM,
    "--platform",
    "manylinux_2_17_x86_64",
    "--platform",
    "manylinux_2_28_x86_64",
    "--platform",
    "manylinux_2_34_x86_64",  # Debian bookworm's glibc 2.36 runs them (Hermes' lock pins cryptography's)
    "--implementation",
    WHEEL_IMPLEMENTATION,
]
# Reproducible zip timestamps for the repro wheel built on the host (1980-01-01, zip's epoch).
WHEEL_EPOCH = "315532800"


def pip_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def run_tool(command: list[str], what: str, env: dict | None = None) -> str:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if result.returncode != 0:
        tail = result.stdout.strip().splitlines()[-LOG_TAIL_LINES:]
        raise ReproError(
            f"{what} failed (exit {result.returncode})", lines=[f"{what} failed (exit {result.returncode})", *tail]
        )
    return result.stdout


def download_locked(lock: Path, into: Path, what: str) -> None:
    """Every wheel `lock` pins, for the harness image's platform, downloaded into `into` by pip with
    every hash required (ReproError naming `what` when pip fails). A lock that pins no wheel (a harness
    of the standard library alone, as LAB is) downloads nothing."""
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lock.read_text().splitlines()):
        return
    argv = pip_argv("download", "--require-hashes", "--no-deps", *WHEEL_TARGET, "-r", str(lock), "-d", str(into))
    run_tool(argv, f"pip download ({what})")


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
    download_locked(lock, folder, "harness wheels")
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
        for path in tree_files(root, "harness"):
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
