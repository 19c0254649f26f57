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
    engine = next(l for l in lines if "docker engine" in l)
    assert engine.startswith("OK") and f"API {docker_client.version()['ApiVersion']}" in engine
    for name in ("storage driver", "free disk", "debootstrap", "nvidia runtime"):
        assert any(name in l for l in lines), name
    assert all(l.split()[0] in {"OK", "WARN", "FAIL"} for l in lines if l and not l.startswith(" "))


def test_doctor_without_engine_fails_with_hint(monkeypatch):
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "repro", "doctor"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert any(l.startswith("FAIL docker engine") for l in proc.stdout.splitlines())
    assert "Traceback" not in proc.stdout + proc.stderr
