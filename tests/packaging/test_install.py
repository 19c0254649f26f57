"""A non-editable install (the package without the project tree around it) says in one line that
repro runs from a source checkout, instead of failing later on a missing template or Dockerfile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_plain_install_names_the_source_checkout(tmp_path: Path):
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target), "DOCKER_HOST": "unix:///nonexistent.sock"}
    version = subprocess.run(
        [sys.executable, "-m", "repro", "--version"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert version.returncode == 0 and version.stdout.startswith("repro ")
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "matrix", "plan", "x.yaml", "--profile", "cpu"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "source checkout" in lines[0] and "Traceback" not in lines[0]
