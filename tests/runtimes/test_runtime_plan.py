"""The runtime dimension of a matrix: validated in one line per problem, cells multiplied by runtime,
a raw cell exactly what it was before runtimes existed, a runtime cell that cannot be played
excluded with why (configuration)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.plan.planner import make_plan
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.runtimes import RAW_RUNTIME

SMOKE = PROJECT_ROOT / "matrix" / "runtimes-smoke.yaml"


def variant(tmp_path: Path, change: dict) -> Path:
    data = yaml.safe_load(SMOKE.read_text())
    data.update(change)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def plan_of(path: Path):
    loaded, profiles = load_matrix_and_profiles(path)
    return make_plan(loaded, "cpu", profiles.get("cpu"))


def test_cells_multiply_by_runtime_and_name_it() -> None:
    plan = plan_of(SMOKE)
    assert len(plan.cells) == 2 * 4 and not plan.excluded  # engines x runtimes (one suite)
    via = [c for c in plan.cells if c.runtime is not None]
    assert len(via) == 6
    for cell in via:
        assert f"__{cell.runtime.id}-react__" in cell.id and f"react via {cell.runtime.id} /" in cell.label
    raw = [c for c in plan.cells if c.runtime is None]
    assert all("__react__" in c.id and " via " not in c.label for c in raw)
    assert len({c.id for c in plan.cells}) == len(plan.cells)


def test_a_raw_cell_is_what_it_was_before_runtimes(tmp_path: Path) -> None:
    """Naming raw alone, or no runtimes at all, gives the same cells, and a raw cell dumps no runtime."""
    explicit = plan_of(variant(tmp_path, {"runtimes": [{"id": "raw", "kind": "raw"}]}))
    data = yaml.safe_load(SMOKE.read_text())
    data.pop("runtimes")
    (tmp_path / "none.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    implicit = plan_of(tmp_path / "none.yaml")
    assert [c.id for c in explicit.cells] == [c.id for c in implicit.cells]
    assert all("runtime" not in c.model_dump() for c in implicit.cells)
    assert load_matrix(tmp_path / "none.yaml").matrix.runtimes == [RAW_RUNTIME]
    assert "runtimes" not in load_matrix(tmp_path / "none.yaml").matrix.model_dump()


def test_a_runtime_plays_react_and_native_only_where_it_offers_tools(tmp_path: Path) -> None:
    plan = plan_of(variant(tmp_path, {"protocols": ["react", "json_schema", "native_tools"]}))
    excluded = {
        (c.runtime.id if c.runtime else "raw", c.protocol): (c.excluded, c.excluded_kind) for c in plan.excluded
    }
    runtimes = ("openclaw-2026.9.6", "pi-0.80.3", "hermes-0.19.0")
    native = {("openclaw-2026.9.6", "native_tools"), ("hermes-0.19.0", "native_tools")}
    assert set(excluded) == {(r, "json_schema") for r in runtimes} | native
    why, kind = excluded[("pi-0.80.3", "json_schema")]
    assert kind == "configuration" and why == "runtime pi-0.80.3 (pi) carries native_tools, react, not json_schema"
    assert (
        excluded[("hermes-0.19.0", "native_tools")][0]
        == "runtime hermes-0.19.0 (hermes) carries react, not native_tools"
    )
    assert any(c.runtime and c.runtime.kind == "pi" and c.protocol == "native_tools" for c in plan.cells)


@pytest.mark.parametrize(
    ("runtime", "says"),
    [
        ({"id": "x", "kind": "claude"}, "unknown runtime kind 'claude'"),
        ({"id": "x", "kind": "raw", "version": "1"}, "give no version or lock"),
        ({"id": "x", "kind": "pi", "version": "0.80.3"}, "needs version"),
        (
            {"id": "x", "kind": "pi", "version": "0.8", "clock": "tomorrow", "lock": {"path": "a", "sha256": "0" * 64}},
            "must be 'YYYY-MM-DD HH:MM:SS'",
        ),
    ],
)
def test_a_bad_runtime_is_one_line(tmp_path: Path, runtime: dict, says: str) -> None:
    with pytest.raises(BadInput) as raised:
        load_matrix(variant(tmp_path, {"runtimes": [runtime]}))
    assert says in raised.value.lines[0] and "runtimes" in raised.value.lines[0]


def test_runtime_ids_are_unique(tmp_path: Path) -> None:
    raw = {"id": "raw", "kind": "raw"}
    with pytest.raises(BadInput) as raised:
        load_matrix(variant(tmp_path, {"runtimes": [raw, raw]}))
    assert raised.value.lines[0].endswith("runtimes: ids must be unique (given: raw, raw)")


def test_another_runtime_version_is_another_setup() -> None:
    from repro.bundle.setup import SetupRecord, differences

    claimed = SetupRecord(runtime="openclaw==2026.9.6", threads=2)
    [found] = differences(claimed, SetupRecord(runtime="openclaw==2026.9.7", threads=2))
    assert (found.name, found.what) == ("runtime", "agent runtime")
    assert differences(SetupRecord(threads=2), SetupRecord(runtime="openclaw==2026.9.6", threads=2)) == []
    assert differences(claimed, SetupRecord(threads=2))[0].status == "not recorded"  # raw against a runtime's claim
