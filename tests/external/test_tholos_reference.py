"""The reference claim's pieces without Docker: the scripted engine, served from the scenario
archive (as the `scripted` engine kind serves its model file), answers the Tholos runner's own
requests with each scenario's reference steps (the runner, unchanged, passes them, an approval
and its denied twin told apart); the archive is read bounded, links refused; the matrix plans its
two cells; the archive is fetched as a model from a source mirror by its sha256."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from harness.scenario import ScenarioError
from harness.scripted_engine import ScriptedEngine, runner_errors, scenarios_in_archive
from repro.core.config import PROJECT_ROOT
from repro.plan.planner import make_plan
from repro.spec.matrix import EngineSpec, load_matrix
from repro.spec.profiles import load_profiles
from repro.store import models
from repro.store.sources import MIRROR_ENV
from repro.suites.sources import pack_folder
from tests.external.tholos_support import PEERS, run_direct
from tests.external.tholos_support import tholos_sources as tholos_sources  # noqa: F401  (the fixture)

MATRIX = PROJECT_ROOT / "matrix" / "tholos-reference.yaml"
# approval-001 and approval-008 share trigger and agent; the owner approves one, denies the other.
IDS = ["approval-001", "approval-008", "ask-001", "conflict-001", "follow_up-001", "web_research-001"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    if not (PEERS / "tholos-bench").is_dir():
        pytest.skip(f"the Tholos-Bench scenarios are not at {PEERS} (set REPRO_TEST_PEERS)")
    path = tmp_path_factory.mktemp("mirror") / "tholos-bench.tar"
    pack_folder(PEERS / "tholos-bench", path)
    return path


def test_the_runner_passes_the_reference_steps_served_from_the_archive(tholos_sources, archive: Path, tmp_path: Path) -> None:
    code_root, scenarios = tholos_sources
    with ScriptedEngine(archive) as engine:
        assert len(engine.library) == 160
        results = run_direct(code_root, scenarios, tmp_path, IDS, engine.base_url, model="tholos-reference")
    assert sorted(results) == sorted(IDS)
    assert all(r["passed"] and r["invalid_json_count"] == 0 and r["status"] == "done" for r in results.values()), results
    assert results["approval-008"]["steps"] == 2  # denied: the twin's table_add was not played


def test_runner_errors_reads_which_steps_were_refused() -> None:
    step = {"role": "assistant", "content": "{}"}
    messages = [
        {"role": "system", "content": "You are Scout, an agent"},
        {"role": "user", "content": "Now: x\nTask #1 from you: t"},
        step,
        {"role": "user", "content": '<tool_response>\n{"rows":[]}\n</tool_response>'},
        step,
        {"role": "user", "content": '<tool_response>\n{"error":"the owner denied this"}\n</tool_response>'},
        step,
    ]
    assert runner_errors(messages) == [False, True, False]


def archive_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "bad.tar"
    with tarfile.open(path, "w") as tar:
        tar.addfile(member, io.BytesIO(data) if data else None)
    return path


def test_the_archive_is_read_bounded_and_links_are_refused(tmp_path: Path) -> None:
    link = tarfile.TarInfo("scenarios/a.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(ScenarioError, match="not a regular file"):
        scenarios_in_archive(archive_with(tmp_path, link))
    big = tarfile.TarInfo("scenarios/b.json")
    big.size = 2 * 1024**2
    with pytest.raises(ScenarioError, match="over"):
        scenarios_in_archive(archive_with(tmp_path, big, b" " * big.size))


def test_the_matrix_plans_the_runner_and_our_harness_against_the_scripted_engine() -> None:
    loaded = load_matrix(MATRIX)
    plan = make_plan(loaded, "cpu", load_profiles().get("cpu"))
    assert sorted(c.suite.id for c in plan.cells) == ["tholos-bench", "tholos-runner"] and not plan.excluded
    assert {c.engine.kind for c in plan.cells} == {"scripted"}
    model = loaded.matrix.models[0]
    assert model.sha256 == loaded.matrix.suites[0].source.sha256  # the model is the suite's archive


@pytest.mark.parametrize("pin", [{"image": "x/y@sha256:" + "0" * 64}, {"build_info": "b1"}, {"version": "1"}])
def test_a_scripted_engine_takes_no_image_or_build_pin(pin: dict) -> None:
    with pytest.raises(ValueError, match="harness image"):
        EngineSpec.model_validate({"id": "reference", "kind": "scripted", "label": "reference", **pin})


def test_the_archive_is_fetched_as_a_model_from_a_mirror_by_sha256(archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_matrix(MATRIX).matrix.models[0]
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    with pytest.raises(models.ModelError, match="no file at"):
        models.fetch(spec, cache=tmp_path / "cache", base_dir=tmp_path)
    monkeypatch.setenv(MIRROR_ENV, str(archive.parent))
    stored = models.fetch(spec, cache=tmp_path / "cache", base_dir=tmp_path)
    assert stored.path.read_bytes() == archive.read_bytes() and stored.source == "mirror:tholos-bench.tar"
