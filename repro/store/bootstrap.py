"""The offline base image: a minimal Debian root file system made by `debootstrap`, imported.

Machines without a registry still need a base to build on. `bootstrap()` runs
`debootstrap --variant=minbase` against a Debian mirror (plain http works), trims caches, tars the
tree and `docker import`s it as `repro/base:<suite>` with labels recording what went in. The
image is made once: later calls return the existing image id (so every content key built on it
stays stable) unless `force` is given.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.config import cache_dir
from repro.core.errors import BadInput, ReproError

if TYPE_CHECKING:
    from repro.containers.client import DockerClient, Image

DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
BASE_REPOSITORY = "repro/base"
# What the harness (python3, venv for the install step) and the engine runtime (libgomp1 for
# OpenMP; libstdc++ is in minbase) need. Build tools are installed in the builder stages only.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "libgomp1")
# Trimmed after debootstrap: caches, logs, docs beyond copyright files, man pages.
_TRIM = (
    "var/cache/apt/archives",
    "var/cache/apt/pkgcache.bin",
    "var/cache/apt/srcpkgcache.bin",
    "var/lib/apt/lists",
    "var/log",
    "usr/share/man",
    "usr/share/info",
    "var/cache/debconf/templates.dat-old",
)
_APT_CONF = 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n'

Log = Callable[[str], None]


def base_reference(suite: str = DEFAULT_SUITE) -> str:
    return f"{BASE_REPOSITORY}:{suite}"


def find_debootstrap() -> str | None:
    return shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if os.access(p, os.X_OK)), None
    )


def preflight() -> str:
    """The debootstrap path, or a one-line ReproError saying what is missing."""
    tool = find_debootstrap()
    if tool is None:
        raise ReproError(
            "debootstrap not found; install it (apt-get install debootstrap) to bootstrap the offline base image"
        )
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise ReproError("debootstrap needs root; rerun `repro images bootstrap` as root (or with sudo)")
    return tool


def existing_base(client: DockerClient, suite: str = DEFAULT_SUITE) -> Image | None:
    from docker.errors import ImageNotFound

    try:
        return client.images.get(base_reference(suite))
    except ImageNotFound:
        return None


def bootstrap(
    client: DockerClient,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str = DEFAULT_MIRROR,
    force: bool = False,
    log: Log = lambda line: None,
) -> tuple[str, bool]:
    """Make (or find) `repro/base:<suite>`; return (image id, created)."""
    if not suite.replace("-", "").isalnum():
        raise BadInput(f"suite '{suite}' must be a Debian suite name such as bookworm")
    if not mirror.startswith(("http://", "https://", "file:/")):
        raise BadInput(f"mirror '{mirror}' must be an http(s) or file: URL")
    image = existing_base(client, suite)
    if image is not None and not force:
        return image.id, False
    tool = preflight()
    work_parent = cache_dir() / "tmp"
    work_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bootstrap-", dir=work_parent) as work:
        root = Path(work) / "rootfs"
        started = time.monotonic()
        log(f"debootstrap --variant=minbase {suite} from {mirror} (+ {', '.join(BASE_PACKAGES)})")
        _run(
            [
                tool,
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                "--components=main",
                suite,
                str(root),
                mirror,
            ],
            "debootstrap",
        )
        log(f"debootstrap done in {time.monotonic() - started:.0f} s; trimming and packing")
        packages = _trim(root)
        packages_sha = hashlib.sha256(packages.encode()).hexdigest()
        tarball = Path(work) / "rootfs.tar"
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(tarball), "."], "tar")
        labels = {
            "repro.kind": "base",
            "repro.base.suite": suite,
            "repro.base.mirror": mirror,
            "repro.base.variant": "minbase",
            "repro.base.include": ",".join(BASE_PACKAGES),
            "repro.base.dpkg_sha256": packages_sha,
            "repro.base.created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        changes = [f'LABEL "{key}"="{value}"' for key, value in labels.items()]
        changes += ["ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]']
        log(f"docker import as {base_reference(suite)}")
        result = client.api.import_image_from_file(str(tarball), repository=BASE_REPOSITORY, tag=suite, changes=changes)
        _check_import(result)
    image = client.images.get(base_reference(suite))
    (cache_dir() / "base").mkdir(parents=True, exist_ok=True)
    (cache_dir() / "base" / f"{suite}.dpkg.txt").write_text(packages)
    return image.id, True


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        tail = " | ".join(result.stdout.strip().splitlines()[-3:])
        raise ReproError(f"{what} failed (exit {result.returncode}): {tail}")


def _trim(root: Path) -> str:
    """Clean caches, set apt to no recommends; return the installed package list (name version)."""
    subprocess.run(["chroot", str(root), "apt-get", "clean"], capture_output=True)
    packages = subprocess.run(
        ["chroot", str(root), "dpkg-query", "-W", "-f", "${Package} ${Version}\\n"],
        capture_output=True,
        text=True,
    ).stdout
    for relative in _TRIM:
        target = root / relative
        if target.is_dir() and not target.is_symlink():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        elif target.exists():
            target.unlink()
    (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/apt.conf.d/99repro-no-recommends").write_text(_APT_CONF)
    return "".join(sorted(packages.splitlines(keepends=True)))


def _check_import(result: object) -> None:
    text = result if isinstance(result, str) else str(result)
    if '"error"' in text or "errorDetail" in text:
        raise ReproError(f"docker import failed: {text.strip()[-300:]}")
