"""What `repro compose env` writes goes where git does not see it, so the next `repro matrix
plan` / `run` finds the tree clean (unit level: where it writes, and git's own verdict on those
paths; the full docker-compose walk is tests/compose/, marker docker)."""

from __future__ import annotations

import subprocess

from repro.core.config import PROJECT_ROOT
from repro.rerun.prepare import RERUNS
from repro.run.compose import default_out_dir


def ignored(relative: str) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", relative], cwd=PROJECT_ROOT, check=False).returncode == 0


def test_compose_output_and_env_are_ignored() -> None:
    folder = default_out_dir("compose-20260101T000000Z-x")
    assert folder.is_relative_to(PROJECT_ROOT)
    assert ignored(str(folder.relative_to(PROJECT_ROOT) / "scenarios.jsonl"))
    assert ignored(".env")


def test_the_rerun_default_out_is_ignored() -> None:
    assert ignored(str(RERUNS / "smoke-cpu-bundle" / "bundle" / "run.json"))
