"""The sandbox audit of a cell: `python -m harness probe audit` in a container created with the
cell's exact harness settings (same image, limits, mounts, joined to the engine's namespace), so
what it could do is what the harness could do. Its result is read back from its output folder as
untrusted input (no link followed, size bounded, typed), never from stdout.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.contracts import AuditResult, SandboxAudit
from repro.containers import lifecycle as containers
from repro.containers.client import DockerClient
from repro.containers.sandbox import LABEL_ROLE, OUT_DIR, bind, container_name, read_result
from repro.core.files import scratch_dir

AUDIT_FILE = "audit.json"
AUDIT_DEADLINE_S = 180
MAX_AUDIT_BYTES = 1024**2


def audit_command(read_only: list[str], gateways: list[str] | None = None) -> list[str]:
    """The harness-entrypoint arguments of the audit (the entrypoint is `python3 -m harness`)."""
    command = ["probe", "audit", "--out", f"{OUT_DIR}/{AUDIT_FILE}", "--output-dir", OUT_DIR]
    for gateway in host_gateways() if gateways is None else gateways:
        command += ["--gateway", gateway]
    for path in read_only:
        command += ["--read-only", path]
    return command


def host_gateways(route_file: Path = Path("/proc/net/route")) -> list[str]:
    """The host's default gateways (IPv4), which the audit tries to reach from inside."""
    try:
        lines = route_file.read_text().splitlines()[1:]
    except OSError:
        return []
    found = [
        socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little"))
        for f in (line.split() for line in lines)
        if len(f) > 2 and f[1] == "00000000"
    ]
    return list(dict.fromkeys(found))


def run_audit(
    client: DockerClient, kwargs: dict[str, Any], out_dir: Path, watch: Callable[[], None] | None = None
) -> SandboxAudit:
    """Start the audit container, wait for it (watching the engine), read its result."""
    with containers.started(client, kwargs) as container:
        ended = containers.wait(container, AUDIT_DEADLINE_S, watch=watch)
    if ended.timed_out:
        return SandboxAudit(error=f"the audit did not finish within {AUDIT_DEADLINE_S}s")
    audit = read_audit(out_dir / AUDIT_FILE)
    if ended.code != 0 or audit is None:
        return SandboxAudit(
            error=f"the audit exited with status {ended.code} and no readable result: {ended.log_tail[-300:]}"
        )
    return audit


def audit_engine(
    client: DockerClient, engine_kwargs: dict[str, Any], probe_image_id: str, *, run_id: str, read_only: list[str]
) -> SandboxAudit:
    """The audit with an engine container's exact settings (user, limits, read-only root, tmpfs,
    network none, mounts), minus what the engine needs: its memory limit, sized for the model, is
    read rather than exceeded, and its GPU is not requested. One folder is added for the result."""
    out_dir = scratch_dir("engine-audit-")
    try:
        uid = str(engine_kwargs.get("user") or "").split(":")[0]
        if uid.isdigit():
            os.chown(out_dir, int(uid), int(uid))
        kwargs = {
            **engine_kwargs,
            "image": probe_image_id,
            "entrypoint": ["python3", "-m", "harness"],  # the audit_command's entrypoint, as a harness container has
            "command": [*audit_command(read_only), "--memory", "read"],
            "mounts": [*engine_kwargs.get("mounts", []), bind(out_dir, OUT_DIR, read_only=False)],
            "labels": {**engine_kwargs.get("labels", {}), LABEL_ROLE: "probe"},
            "name": container_name(run_id, "probe", "engine-audit"),
            "device_requests": [],
        }
        return run_audit(client, kwargs, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def read_audit(path: Path) -> SandboxAudit | None:
    result, _ = read_result(path, AuditResult, MAX_AUDIT_BYTES)
    return result.audit if result else None
