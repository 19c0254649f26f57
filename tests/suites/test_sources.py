"""External suites: scenarios from a pinned archive (folder form and JSON Lines form), unpacked
defensively, selected and hashed like a suite in the project."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from repro.core.errors import BadInput, ReproError
from repro.spec.loading import path_problems
from repro.spec.matrix import EngineSource, Suite
from repro.suites.registry import select
from repro.suites.sources import fetch_suite

ROOT = Path(__file__).resolve().parents[2]
IDS = ["notes-001", "notes-002", "ask-001"]


def scenario(scenario_id: str) -> dict:
    category = scenario_id.rsplit("-", 1)[0]
    return json.loads((ROOT / "scenarios" / category / f"{scenario_id}.json").read_text())


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def archive(path: Path, extra=None) -> EngineSource:
    """A .tar.gz holding three scenarios in folder form and as JSON Lines rows (JSON-text fields)."""
    with tarfile.open(path, "w:gz") as tar:
        for sid in IDS:
            data = scenario(sid)
            add(tar, f"bench-1.0/scenarios/{data['category']}/{sid}.json", json.dumps(data).encode())
        rows = [
            {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in scenario(sid).items()} for sid in IDS
        ]
        add(tar, "bench-1.0/data/test.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode())
        if extra:
            extra(tar)
    return EngineSource(archive=str(path), sha256=hashlib.sha256(path.read_bytes()).hexdigest())


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))


def test_a_pinned_archive_gives_the_same_suite_in_both_forms(tmp_path):
    source = archive(tmp_path / "bench.tar.gz")
    folder = Suite(id="bench", path="bench-1.0/scenarios", source=source)
    rows = Suite(id="bench", path="bench-1.0/data/test.jsonl", source=source)
    with pytest.raises(BadInput, match="not fetched; run: repro suites fetch"):
        select(folder)
    fetch_suite(source)
    by_folder, by_rows = select(folder), select(rows)
    assert by_folder.ids == by_rows.ids == ["ask-001", "notes-001", "notes-002"]
    for sid, category in by_folder.categories.items():  # the same scenarios, whichever form shipped them
        assert json.loads((by_rows.folder / category / f"{sid}.json").read_text()) == scenario(sid)
        assert json.loads((by_folder.folder / category / f"{sid}.json").read_text()) == scenario(sid)
    assert by_folder.sha256 == select(folder).sha256 != by_rows.sha256  # hashed as bytes: each form pins its own


def test_a_wrong_pin_enters_nothing(tmp_path):
    source = archive(tmp_path / "bench.tar.gz").model_copy(update={"sha256": "0" * 64})
    with pytest.raises(ReproError, match="sha256 mismatch"):
        fetch_suite(source)


@pytest.mark.parametrize(
    "entry",
    [
        lambda tar: tar.addfile(_link("bench-1.0/link", "/etc/passwd")),
        lambda tar: add(tar, "../escape.json", b"{}"),
        lambda tar: add(tar, "/abs.json", b"{}"),
    ],
    ids=["symlink", "dot-dot", "absolute"],
)
def test_unsafe_members_are_refused(tmp_path, entry):
    source = archive(tmp_path / "bench.tar.gz", entry)
    with pytest.raises(ReproError, match="link|leaves the archive"):
        fetch_suite(source)


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


def test_a_path_inside_a_source_cannot_climb_out():
    from repro.spec.loading import load_matrix

    smoke = load_matrix(ROOT / "matrix" / "smoke.yaml").matrix
    source = EngineSource(archive="bench.tar.gz", sha256="0" * 64)
    bad = smoke.model_copy(update={"suites": [Suite(id="bench", path="../../etc", source=source)]})
    assert (("suites", 0, "path"), "a path inside the suite's source must be relative, without ..") in path_problems(
        bad
    )


def test_another_projects_files_are_referenced_and_resolved_offline(tmp_path, monkeypatch):
    """A suite with a source is embedded by reference (issue 48): no scenario file enters the bundle,
    the run admits each one to the input cache, and a check resolves them from there, from the
    suite's unpacked source, or from a mirror; with none of them the cell's files are not at hand
    (NotAtHand, the command named); a file of other bytes under the right name is never used."""
    from repro.bundle.layout.reader import BundleReader
    from repro.bundle.layout.writer import Bundle
    from repro.bundle.redact import Redactor
    from repro.core.errors import NotAtHand
    from repro.suites.references import resolved_files
    from repro.suites.registry import kind_of

    source = archive(tmp_path / "bench.tar.gz")
    suite = Suite(id="bench", path="bench-1.0/scenarios", source=source)
    fetch_suite(source)
    selection = select(suite)
    bundle = Bundle(tmp_path / "run", Redactor())
    [reference] = kind_of(suite).embed(bundle, suite, selection)
    assert not (tmp_path / "run" / "suites" / "bench").exists() and reference.role == "suite-files"
    assert {f.path for f in reference.files} == {f"scenarios/{c}/{i}.json" for i, c in selection.categories.items()}
    assert (
        select(Suite(id="bench", path="scenarios"), root=resolved_files(reference, bundle.dir)).sha256
        == selection.sha256
    )
    for fresh in ("empty", "from-source", "from-mirror"):
        monkeypatch.setenv("REPRO_CACHE", str(tmp_path / fresh))
        monkeypatch.delenv("REPRO_SOURCE_MIRROR", raising=False)
        if fresh == "from-source":
            fetch_suite(source)
        if fresh == "from-mirror":
            mirror = tmp_path / "mirror"
            for name, path in {
                f"copy-{i}.json": selection.folder / c / f"{i}.json" for i, c in selection.categories.items()
            }.items():
                mirror.mkdir(exist_ok=True)
                (mirror / name).write_bytes(path.read_bytes())
            (mirror / "forged.json").write_text('{"id": "ask-001"}')
            monkeypatch.setenv("REPRO_SOURCE_MIRROR", str(mirror))
        if fresh == "empty":
            with pytest.raises(NotAtHand, match="repro suites fetch --from-bundle"):
                resolved_files(reference, BundleReader(bundle.dir).dir)
            continue
        assert (
            select(Suite(id="bench", path="scenarios"), root=resolved_files(reference, bundle.dir)).sha256
            == selection.sha256
        )


def test_a_referenced_sha256_is_a_name_never_a_path(tmp_path):
    """A bundle from someone else states its references: a sha256 that is not 64 hex digits is
    refused by the record, and the input cache never reads a path made of one."""
    from pydantic import ValidationError

    from repro.bundle.records import InputFile, InputReference
    from repro.store.inputs import admit_input, cached_input

    climbing = ("../" * 22)[:64]
    with pytest.raises(ValidationError):
        InputFile(path="scenarios/a/a-1.json", sha256=climbing, bytes=1)
    with pytest.raises(ValidationError):
        InputReference(role="suite-files", suite="s", sha256=climbing, published="x")
    assert cached_input(climbing) is None
    assert admit_input(ROOT / "README.md", climbing) is None
