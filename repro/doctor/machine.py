"""`repro doctor`: is this machine ready to run a matrix? One OK/WARN/FAIL line per check."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.containers.client import get_client
from repro.core.config import cache_dir, is_checkout
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
    findings = [_python(), *tree_finding()]
    try:
        client = get_client()
    except DockerUnavailable as error:
        findings.append(
            Finding("FAIL", "docker engine", str(error), "install docker.io and start dockerd (README: Requirements)")
        )
        return findings + [_disk(None), _debootstrap()]
    info = client.info()
    version = client.version()
    findings.append(Finding("OK", "docker engine", f"engine {version.get('Version')}, API {version.get('ApiVersion')}"))
    findings.append(_storage(info))
    findings.append(_disk(info.get("DockerRootDir")))
    findings.append(_debootstrap())
    findings.append(nvidia_hook_finding(info, dockerd_path()))
    findings.append(driver_finding(host_nvidia_smi()))
    return findings


def tree_finding() -> list[Finding]:
    """The project tree as a run would record it (repro.bundle.provenance.source_state, the state
    `repro check` judges): a dirty tree is named, since `matrix run` refuses it. None outside a checkout."""
    from repro.bundle.provenance import dirty_line, source_state

    if not is_checkout():
        return []
    state = source_state()
    if state.tree_clean:
        return [Finding("OK", "project tree", f"clean at commit {(state.commit or '?')[:12]}")]
    hint = (
        "commit or remove them (or ignore them in .gitignore): matrix run refuses a dirty tree without "
        "--allow-dirty, and check calls its cells INVALID"
    )
    return [Finding("WARN", "project tree", dirty_line(state), hint)]


def _python() -> Finding:
    import sys

    ok = sys.version_info >= (3, 11)
    return Finding(
        "OK" if ok else "FAIL", "python", sys.version.split()[0], "" if ok else "repro needs Python 3.11 or newer"
    )


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
        return Finding(
            "FAIL", "free disk", f"{free:.1f} GB free", "images and models need at least 5 GB; 20 GB recommended"
        )
    if free < MIN_FREE_GB:
        return Finding("WARN", "free disk", f"{free:.1f} GB free", f"{MIN_FREE_GB} GB recommended")
    return Finding("OK", "free disk", f"{free:.1f} GB free")


def _debootstrap() -> Finding:
    found = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if os.path.exists(p)), None
    )
    if found:
        return Finding("OK", "debootstrap", found)
    return Finding(
        "WARN", "debootstrap", "not found", "needed only for an offline base image: apt-get install debootstrap"
    )


HOOK = "nvidia-container-runtime-hook"
NO_GPU = "only the cpu profile can run"
SMI_BYTES = 64 * 1024


def nvidia_hook_finding(info: dict, path: str | None, exists: Callable[[str], bool] = os.path.isfile) -> Finding:
    """Docker serves `--gpus` (a device request of the gpu capability) when dockerd finds
    nvidia-container-runtime-hook on its own PATH, whatever `Runtimes` lists; so that is what is
    checked (dockerd's PATH read from /proc, or unknown when the daemon is not local)."""
    runtimes = ", ".join(sorted(info.get("Runtimes") or {})) or "none"
    if path is None:
        level: Level = "OK" if "nvidia" in (info.get("Runtimes") or {}) else "WARN"
        return Finding(
            level,
            "nvidia runtime",
            f"dockerd's PATH cannot be read here (runtimes: {runtimes})",
            f"check that {HOOK} is on dockerd's PATH for gpu-* profiles",
        )
    found = next((folder for folder in path.split(os.pathsep) if folder and exists(os.path.join(folder, HOOK))), None)
    if found:
        return Finding("OK", "nvidia runtime", f"{HOOK} in {found} on dockerd's PATH (GPU profiles can run)")
    return Finding(
        "WARN",
        "nvidia runtime",
        f"absent: no {HOOK} on dockerd's PATH ({NO_GPU})",
        "install nvidia-container-toolkit for gpu-* profiles",
    )


def driver_finding(output: str | None) -> Finding:
    """The host's NVIDIA driver (nvidia-smi --query-gpu=driver_version), against the oldest
    driver the CUDA image's toolkit runs on (repro.store.cuda_toolkit)."""
    from repro.store.cuda_toolkit import current_toolkit

    toolkit = current_toolkit()
    if output is None:
        return Finding(
            "WARN",
            "nvidia driver",
            f"no nvidia-smi on this host ({NO_GPU})",
            f"gpu-* profiles need an NVIDIA driver >= {toolkit.min_driver}",
        )
    versions = sorted({line.strip() for line in output.splitlines() if line.strip()})
    majors = [int(v.split(".")[0]) for v in versions if v.split(".")[0].isdigit()]
    if not versions or len(majors) != len(versions):
        return Finding(
            "FAIL",
            "nvidia driver",
            f"nvidia-smi gave no driver version: {output.strip()[:120]!r}",
            "check the NVIDIA driver installation",
        )
    if min(majors) < toolkit.min_driver:
        return Finding(
            "FAIL",
            "nvidia driver",
            f"driver {', '.join(versions)}",
            f"the CUDA image ({toolkit.name}, CUDA {toolkit.version}) needs driver >= {toolkit.min_driver}",
        )
    return Finding(
        "OK", "nvidia driver", f"driver {', '.join(versions)} (CUDA {toolkit.version} needs >= {toolkit.min_driver})"
    )


def dockerd_path() -> str | None:
    """dockerd's PATH from /proc/<pid>/environ, or None (no local dockerd, or not readable)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "dockerd":
                continue
            environ = (entry / "environ").read_bytes()[: 1024**2]
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(b"PATH="):
                return item[5:].decode("utf-8", errors="replace")
        return os.defpath  # a daemon started without PATH searches the default one
    return None


def host_nvidia_smi() -> str | None:
    """The host's `nvidia-smi --query-gpu=driver_version` output, or None without nvidia-smi."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None
    try:
        result = subprocess.run(
            [binary, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nvidia-smi failed: {error}"
    return (
        result.stdout[:SMI_BYTES].decode("utf-8", errors="replace")
        if result.returncode == 0
        else f"nvidia-smi exit {result.returncode}"
    )
