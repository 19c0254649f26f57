"""The published bundles the rerun tests start from (real bundles, paper/published/)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "paper" / "published"
SMOKE = PUBLISHED / "smoke-cpu-bundle.tar.gz"
TOOLCALLBENCH = PUBLISHED / "toolcallbench-smoke-cpu-bundle.tar.gz"
THOLOS_RUNNER_FULL = PUBLISHED / "tholos-full-runner-cpu-bundle.tar.gz"  # a merged bundle: four shard runs
