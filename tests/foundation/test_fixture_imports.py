"""A pytest fixture is defined once and found by pytest, never imported into another module.

An imported fixture is a second definition with its own cache: a session fixture imported into a
conftest or a test module is set up once per place it is imported, and a fixture that depends on it
then sees whichever copy was set up first. That split the session's model store in two (a canary
home linked to one copy while the Qwen GGUF was fetched into another), and `matrix run` under the
canary home could not find the model. Shared fixtures live in tests/fixtures/ and are registered by
the root conftest.py (`pytest_plugins`); a directory's own fixtures live in its conftest.py.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def is_fixture(value: object) -> bool:
    return hasattr(value, "_fixture_function_marker") or hasattr(value, "_pytestfixturefunction")


def imported_fixtures(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
            module = importlib.import_module(node.module or "")
            found += [f"{node.module}.{alias.name}" for alias in node.names if is_fixture(getattr(module, alias.name))]
    return found


def test_no_module_imports_a_fixture():
    problems = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        names = imported_fixtures(path)
        if names:
            problems[str(path.relative_to(ROOT))] = names
    assert problems == {}


def test_the_check_sees_a_fixture():
    assert is_fixture(importlib.import_module("tests.fixtures.models").model_cache)
