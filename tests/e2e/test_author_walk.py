"""scripts/author-walk run for real (the author's path of docs/authoring.md: two runs of two
scenarios on Qwen2.5-Coder-0.5B, about 4 minutes on 2 cores), its output compared, command by
command, with the transcript docs/authoring-walk.txt that the doc's outputs are held against
(tests/foundation/test_authoring_walk.py). Marker `reruns`: `REPRO_TEST_MARKERS=reruns
./scripts/test tests/e2e/test_author_walk.py`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.foundation.test_authoring_walk import ROOT, TRANSCRIPT, blocks, command_key, normalised

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.reruns]


def test_a_fresh_walk_prints_the_transcript(tmp_path: Path) -> None:
    env = os.environ | {"PAPER": str(tmp_path / "paper"), "REVIEW": str(tmp_path / "review")}
    walked = subprocess.run(
        [str(ROOT / "scripts" / "author-walk")], capture_output=True, text=True, env=env, timeout=1800, check=False
    )
    assert walked.returncode == 0, walked.stdout[-3000:] + walked.stderr[-3000:]
    fresh = [
        (command_key(c), [normalised(line) for line in out])
        for c, out in blocks(walked.stdout.replace(str(tmp_path), "~").splitlines())
    ]
    kept = [
        (command_key(c), [normalised(line) for line in out]) for c, out in blocks(TRANSCRIPT.read_text().splitlines())
    ]
    assert [c for c, _ in fresh] == [c for c, _ in kept]
    for (command, out), (_, expected) in zip(fresh, kept, strict=True):
        assert out == expected, (
            f"`{command}` prints otherwise than docs/authoring-walk.txt: run scripts/author-walk > "
            "docs/authoring-walk.txt and update docs/authoring.md"
        )
