"""Shared fixtures for harness tests: a small scenario factory and the Tholos-Bench path."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.agent.policy import ScriptedPolicy, Step
from harness.model.scenario import Scenario
from harness.model.workspace import Workspace
from harness.tools import ToolContext

REPO_ROOT = Path(__file__).resolve().parents[2]
THOLOS_DIR = (REPO_ROOT / ".." / "shared" / "peers" / "tholos-bench" / "scenarios").resolve()

ALL_TOOLS = [
    "table_read",
    "table_create",
    "table_add",
    "table_update",
    "note_read",
    "note_write",
    "search",
    "task_add",
    "web_fetch",
    "ask",
    "remember",
    "follow_up",
    "finish",
]

BASE: dict[str, Any] = {
    "id": "garden-001",
    "category": "garden",
    "about": "A small garden workspace for unit tests.",
    "template": "t-garden",
    "agent": "Mira",
    "max_steps": 6,
    "workspace": {
        "agents": [
            {"name": "Mira", "role": "You keep the allotment log.", "tools": ALL_TOOLS, "max_steps": 6},
            {"name": "Otto", "role": "You water the beds.", "tools": ["note_write", "finish"]},
        ],
        "tables": [
            {
                "name": "beds",
                "columns": ["bed", "crop", "state"],
                "rows": [
                    {"bed": "B1", "crop": "kale", "state": "dry"},
                    {"bed": "B2", "crop": "leek", "state": "wet"},
                    {"bed": "B3", "crop": "curly kale", "state": "dry"},
                ],
            }
        ],
        "notes": [{"title": "Log", "body": "Sowed kale in B1."}],
    },
    "trigger": {"kind": "message", "text": "Check the beds."},
    "reference": [{"tool": "finish", "args": {"summary": "Checked."}}],
    "expect": [{"type": "finished"}],
}


def scenario_data(**overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for key, value in overrides.items():
        if key == "workspace":
            data["workspace"].update(copy.deepcopy(value))
        else:
            data[key] = copy.deepcopy(value)
    return data


@pytest.fixture
def scenario_dict() -> Callable[..., dict[str, Any]]:
    """``scenario_dict(**overrides)``: BASE as a plain dict, for writing files."""
    return scenario_data


@pytest.fixture
def make_scenario() -> Callable[..., Scenario]:
    """``make_scenario(expect=[...], fixtures={...}, ...)``: BASE with top-level overrides
    (``workspace`` is merged key by key)."""
    return lambda **overrides: Scenario.model_validate(scenario_data(**overrides))


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    """Write a scenario dict to ``tmp/<category>/<id>.json`` and return the path."""

    def write(data: dict[str, Any], name: str | None = None) -> Path:
        folder = tmp_path / "scenarios" / data.get("category", "garden")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name or data.get('id', 'x')}.json"
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        return path

    return write


@pytest.fixture
def ctx(make_scenario: Callable[..., Scenario]) -> Callable[..., ToolContext]:
    """``ctx(**scenario_overrides)``: a ToolContext for agent Mira on a fresh workspace."""

    def build(**overrides: Any) -> ToolContext:
        scenario = make_scenario(**overrides)
        ws = Workspace.from_spec(scenario.workspace)
        return ToolContext(ws, "Mira", dict(scenario.fixtures or {}), scenario.respond)

    return build


@pytest.fixture
def script() -> Callable[..., ScriptedPolicy]:
    """``script(("table_read", {...}), ("finish", {...}))``: a ScriptedPolicy of those calls."""
    return lambda *calls: ScriptedPolicy([Step(tool, args) for tool, args in calls])


@pytest.fixture
def tholos_dir() -> Path:
    if not THOLOS_DIR.is_dir():
        pytest.skip(f"Tholos-Bench scenarios not found at {THOLOS_DIR}")
    return THOLOS_DIR
