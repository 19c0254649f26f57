"""The prompt cache's rule on the engine (docs/engines.md, "The prompt cache across the run"): with
the cache off, as the GPU profiles run, the engine takes no token from a cache and reads a prompt
sent twice to the same text, on the edge cases of benchmarks/prompt_cache.py (a prompt cached whole,
a one-token suffix, a suffix across the -ub batch, a shared system part, the slot's history, an
agent loop's step). With it on, the engine does reuse its cache (`cache_n`): across the run, that is
the mode the measurements found inexact, so no shipped profile turns it on (the CPU profiles run it
per scenario: tests/e2e/test_run.py holds that mode)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repro.core.config import PROJECT_ROOT
from repro.spec.profiles import load_profiles
from tests.fixtures.models import SMOLLM2_ID

pytestmark = [pytest.mark.docker, pytest.mark.engine]


def test_the_cache_off_reads_every_prompt_whole(llama_image_ref, smollm2_gguf):
    assert not any(profile.cache_prompt is True for profile in load_profiles().profiles.values())
    command = [sys.executable, "benchmarks/prompt_cache.py", "--model", SMOLLM2_ID, "--gguf", str(smollm2_gguf)]
    done = subprocess.run(
        [*command, "--threads", "2", "--tokens", "32"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "cache off: held" in done.stdout
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("  ") and "/" in line]
    assert len(rows) == 12 and all(row[2].split("/")[0] == "0" for row in rows)  # cache_n off: 0 every time
    assert any(row[2].split("/")[1] not in ("0", "None") for row in rows)  # on: the cache was used
