"""The CLI surface: version, doctor against the real Docker engine."""

from __future__ import annotations

import subprocess
import sys

from repro import __version__
from repro.__main__ import main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"repro {__version__}"


def test_doctor_against_real_engine(docker_client):
    proc = subprocess.run([sys.executable, "-m", "repro", "doctor"], capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    engine = next(line for line in lines if "docker engine" in line)
    assert engine.startswith("OK") and f"API {docker_client.version()['ApiVersion']}" in engine
    for name in ("storage driver", "free disk", "debootstrap", "nvidia runtime"):
        assert any(name in line for line in lines), name
    assert all(line.split()[0] in {"OK", "WARN", "FAIL"} for line in lines if line and not line.startswith(" "))


def test_doctor_without_engine_fails_with_hint(monkeypatch):
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "repro", "doctor"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert any(line.startswith("FAIL docker engine") for line in proc.stdout.splitlines())
    assert "Traceback" not in proc.stdout + proc.stderr
