"""scripts/common.sh: the README's first command sets up everything, on the most common machine too
(Docker already runs, debootstrap is not installed). Docker and apt-get are stubs on PATH; nothing
is installed or started."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _ensure_docker(tmp_path: Path, *, debootstrap: bool) -> tuple[subprocess.CompletedProcess[str], str]:
    """Source common.sh with a Docker that answers and a recording apt-get; debootstrap present or
    not (has_debootstrap is replaced, so the host's own debootstrap does not count)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    _stub(bin_dir, "docker", "exit 0")
    _stub(bin_dir, "apt-get", f'echo "$*" >> "{log}"')
    _stub(bin_dir, "id", "echo 0")
    present = "true" if debootstrap else "test -e " + str(tmp_path / "installed")
    script = f'source "{ROOT}/scripts/common.sh"; has_debootstrap() {{ {present}; }}; ensure_docker; echo ready'
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=30)
    return proc, log.read_text() if log.exists() else ""


def test_debootstrap_is_installed_when_docker_already_runs(tmp_path: Path):
    proc, apt = _ensure_docker(tmp_path, debootstrap=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ready")
    assert "install -y -qq debootstrap" in apt and "docker.io" not in apt


def test_nothing_is_installed_when_both_are_there(tmp_path: Path):
    proc, apt = _ensure_docker(tmp_path, debootstrap=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ready", proc.stderr
    assert apt == ""
