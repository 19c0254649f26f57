"""An agent runtime kind is one row and one adapter class: its name is written in its row
(repro/spec/runtimes.py `RUNTIME_KINDS`), in its adapter's module and in the harness's registry of
adapters, nowhere else in repro/ or harness/. Any string constant that is exactly a kind's name
counts (a comparison, a dict key, a default): the rest of the project asks the runtime's facts
(`runtime.facts`) or its adapter (harness.runtimes.registry)."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.runtimes.registry import ADAPTERS, adapter_named
from repro.spec.runtimes import RAW, RUNTIME_KINDS

ROOT = Path(__file__).resolve().parents[2]
ROWS = {"repro/spec/runtimes.py", "harness/runtimes/registry.py"}


def named_outside(root: Path) -> list[str]:
    """Each string constant naming a runtime kind (raw aside: the default's name) outside its row,
    its registry entry and its adapter's module, as path:line."""
    kinds = set(RUNTIME_KINDS) - {RAW}
    found = []
    for package in ("repro", "harness"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in ROWS:
                continue
            own = {kind for kind in kinds if relative == f"harness/runtimes/{kind}.py"}
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in kinds - own:
                    found.append(f"{relative}:{node.lineno}: {node.value!r}")
    return found


def test_no_runtime_kind_is_named_outside_its_row_and_its_adapter() -> None:
    assert named_outside(ROOT) == []


def test_every_row_has_its_adapter_and_every_adapter_its_row() -> None:
    packaged = {kind: facts for kind, facts in RUNTIME_KINDS.items() if not facts.in_harness}
    assert {facts.adapter for facts in packaged.values()} == set(ADAPTERS)
    for kind, facts in packaged.items():
        adapter = adapter_named(facts.adapter)
        assert adapter.kind == kind
        assert facts.package and facts.registry in ("npm", "pypi")
