"""`repro doctor`: is this machine ready to run a matrix? One OK/WARN/FAIL line per check."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Literal

from repro.containers.client import get_client
from repro.core.config import cache_dir
from repro.core.errors import DockerUnavailable

Level = Literal["OK", "WARN", "FAIL"]
MIN_FREE_GB = 20


@dataclass
class Finding:
    level: Level
    name: str
    detail: str
    hint: str = ""


def run_checks() -> list[Finding]:
    findings = [_python()]
    try:
        client = get_client()
    except DockerUnavailable as error:
        findings.append(Finding("FAIL", "docker engine", str(error), "install docker.io and start dockerd (README: Requirements)"))
        return findings + [_disk(None), _debootstrap()]
    info = client.info()
    version = client.version()
    findings.append(Finding("OK", "docker engine", f"engine {version.get('Version')}, API {version.get('ApiVersion')}"))
    findings.append(_storage(info))
    findings.append(_disk(info.get("DockerRootDir")))
    findings.append(_debootstrap())
    findings.append(_nvidia(info))
    return findings


def _python() -> Finding:
    import sys

    ok = sys.version_info >= (3, 11)
    return Finding("OK" if ok else "FAIL", "python", sys.version.split()[0], "" if ok else "repro needs Python 3.11 or newer")


def _storage(info: dict) -> Finding:
    driver = info.get("Driver", "unknown")
    if driver in ("overlay2", "btrfs", "zfs"):
        return Finding("OK", "storage driver", driver)
    return Finding("WARN", "storage driver", driver, "overlay2 is what repro is tested with; builds may be slow")


def _disk(docker_root: str | None) -> Finding:
    paths = [p for p in (docker_root, str(cache_dir())) if p]
    lowest = None
    for path in paths:
        probe = path
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        free_gb = shutil.disk_usage(probe or "/").free / 1024**3
        lowest = free_gb if lowest is None else min(lowest, free_gb)
    free = lowest if lowest is not None else shutil.disk_usage("/").free / 1024**3
    if free < 5:
        return Finding("FAIL", "free disk", f"{free:.1f} GB free", "images and models need at least 5 GB; 20 GB recommended")
    if free < MIN_FREE_GB:
        return Finding("WARN", "free disk", f"{free:.1f} GB free", f"{MIN_FREE_GB} GB recommended")
    return Finding("OK", "free disk", f"{free:.1f} GB free")


def _debootstrap() -> Finding:
    found = shutil.which("debootstrap") or next((p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if os.path.exists(p)), None)
    if found:
        return Finding("OK", "debootstrap", found)
    return Finding("WARN", "debootstrap", "not found", "needed only for an offline base image: apt-get install debootstrap")


def _nvidia(info: dict) -> Finding:
    runtimes = info.get("Runtimes") or {}
    if "nvidia" in runtimes:
        return Finding("OK", "nvidia runtime", "present (GPU profiles can run)")
    return Finding("WARN", "nvidia runtime", "absent (only the cpu profile can run)", "install nvidia-container-toolkit for gpu-* profiles")
