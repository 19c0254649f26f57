"""A suite pinned by sha256 in the matrix: unchanged cell ids without the pin, a run refused
before anything boots when the selection hashes otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.__main__ import main
from repro.plan.planner import make_plan
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.suites.registry import select

ROOT = Path(__file__).resolve().parents[2]
SMOKE = (ROOT / "matrix" / "smoke.yaml").read_text()
PIN_AFTER = (
    "    categories: [ask, follow_up, injection, notes, nothing_to_do, table_add, table_read_answer]\n"
    "    per_category: 1\n"
)


@pytest.fixture(autouse=True)
def empty_model_store(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))


def pinned(tmp_path: Path, sha256: str) -> Path:
    assert PIN_AFTER in SMOKE
    path = tmp_path / "pinned.yaml"
    path.write_text(SMOKE.replace(PIN_AFTER, PIN_AFTER + f"    sha256: {sha256}\n"))
    return path


def plan_ids(path: Path) -> list[str]:
    return [c.id for c in make_plan(load_matrix(path), "cpu", load_profiles().get("cpu")).cells]


def test_a_pin_enters_the_cell_id_only_when_set(tmp_path: Path) -> None:
    suite = load_matrix(ROOT / "matrix" / "smoke.yaml").matrix.suites[0]
    right = select(suite).sha256
    unpinned, with_pin = plan_ids(ROOT / "matrix" / "smoke.yaml"), plan_ids(pinned(tmp_path, right))
    assert len(unpinned) == len(with_pin)
    changed = [a for a, b in zip(unpinned, with_pin, strict=True) if a != b]
    assert changed and all("workspace-smoke" in cell for cell in changed)  # only the pinned suite's cells


def test_a_wrong_pin_is_refused_before_anything_boots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["matrix", "run", str(pinned(tmp_path, "a" * 64)), "--profile", "cpu", "--out", str(tmp_path / "results")])
        == 2
    )
    err = capsys.readouterr().err
    assert "suite workspace-smoke: the selected scenario files hash to" in err and "the matrix pins aaaaaaaaaaaa" in err
    assert not (tmp_path / "results").exists()
