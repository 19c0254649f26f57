"""The synthetic rerun the verify tests answer claims from, and its own rows stated as claims."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from repro.spec.claims import ClaimsFile, Source
from repro.verify.own_claims import claims_from_rerun
from repro.verify.rerun_rows import load_rerun
from tests.fixtures.synthetic import write_bundle

SOURCE = Source(citation="a test", url="https://example.org/paper", date=datetime.date(2026, 12, 2))


@pytest.fixture(scope="module")
def rerun_dir(tmp_path_factory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("rerun") / "run1")


@pytest.fixture(scope="module")
def own(rerun_dir) -> ClaimsFile:
    return claims_from_rerun(load_rerun([rerun_dir]), SOURCE)
