"""The transcript entry models keep the published bundles byte for byte: every line of every
published transcripts.jsonl and scenarios.jsonl reads into the models and dumps to the same bytes,
and the entries of a transcript are the JSON the line holds."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from harness.contracts import ScenarioResult, StepEntry, TranscriptLine, transcript_data

PUBLISHED = Path(__file__).resolve().parents[2] / "paper" / "published"
BUNDLES = sorted(PUBLISHED.glob("*-bundle.tar.gz"))
RECORDS = {"transcripts.jsonl": TranscriptLine, "scenarios.jsonl": ScenarioResult}


def published_lines(archive: Path, name: str) -> list[str]:
    """Every line of every cell's ``name`` in the bundle, read straight from the archive."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(f"/{name}")]
        return [line for m in members for line in tar.extractfile(m).read().decode().splitlines()]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(RECORDS))
@pytest.mark.parametrize("archive", BUNDLES, ids=[p.name for p in BUNDLES])
def test_published_lines_round_trip_byte_identically(archive: Path, name: str) -> None:
    lines = published_lines(archive, name)
    assert lines, f"{archive.name} holds no {name}"
    for line in lines:
        assert RECORDS[name].model_validate_json(line).model_dump_json() == line


def test_a_published_transcript_is_its_entries() -> None:
    lines = [line for bundle in BUNDLES for line in published_lines(bundle, "transcripts.jsonl")]
    records = [TranscriptLine.model_validate_json(line) for line in lines]
    assert [transcript_data(r.transcript) for r in records] == [json.loads(line)["transcript"] for line in lines]
    steps = [e for r in records for e in r.transcript if isinstance(e, StepEntry)]
    # the optional keys occur (a rejected reply, in a step's replies or an invalid turn's), and survive
    replies = [reply for r in records for e in r.transcript for reply in getattr(e, "replies", [])]
    assert steps and any(reply.reject for reply in replies)
