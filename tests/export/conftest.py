"""The published smoke bundle, unpacked once, and its inspect export (tests/export/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paper.test_published_bundles import PUBLISHED, unpack

SMOKE = PUBLISHED / "smoke-cpu-bundle.tar.gz"
TOOLCALLBENCH = PUBLISHED / "toolcallbench-smoke-cpu-bundle.tar.gz"


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpack(SMOKE, tmp_path_factory.mktemp("smoke"))


@pytest.fixture(scope="session")
def smoke_export(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`repro export inspect` of the published smoke bundle (every VALID cell)."""
    pytest.importorskip("inspect_ai")
    from repro.__main__ import main

    out = tmp_path_factory.mktemp("logs")
    assert main(["export", "inspect", str(smoke_run), "--out", str(out)]) == 0
    return out
