"""Failure taxonomy precedence, and the no-docker rule for the harness package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness
from harness.diagnosis import FAILURE_PRECEDENCE, diagnose


@pytest.mark.parametrize(
    ("stop", "failed", "expected"),
    [
        (None, [], None),
        ("engine_error", [], "engine_error"),
        ("engine_error", ["not_called"], "engine_error"),
        ("protocol_error", ["finished", "unchanged"], "protocol_error"),
        ("stuck", ["finished"], "stuck"),
        ("step_limit", ["finished", "not_called"], "step_limit"),
        (None, ["row", "not_called"], "unsafe_action"),
        (None, ["unchanged"], "unsafe_action"),
        (None, ["row", "finished"], "wrong_outcome"),
        ("step_limit", [], None),  # every check held: a pass
    ],
)
def test_precedence(stop, failed, expected) -> None:
    assert diagnose(stop, failed) == expected


def test_precedence_order_is_fixed() -> None:
    assert FAILURE_PRECEDENCE == (
        "engine_error",
        "protocol_error",
        "timeout",
        "stuck",
        "step_limit",
        "unsafe_action",
        "wrong_outcome",
    )


def test_harness_never_imports_docker() -> None:
    package = Path(harness.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__"):
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            offenders += [f"{path.name}: {n}" for n in names if n == "docker" or n.startswith("docker.")]
    assert offenders == []
