"""The import structure: no import circle in repro/ or harness/ (every import counted, those inside
functions and under TYPE_CHECKING too, as grimp reads them), and the layering contracts of
pyproject.toml and layers.ini kept (import-linter, which ./scripts/test also runs as `lint-imports`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def cycles(package: str) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    graph = grimp.build_graph(package, include_external_packages=False)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


@pytest.mark.parametrize("package", ["repro", "harness"])
def test_no_import_cycle(package):
    assert cycles(package) == []


def test_a_cycle_is_found_when_there_is_one(tmp_path, monkeypatch):
    """The search itself: two modules importing each other, one of them inside a function."""
    package = tmp_path / "loop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from loop import b\n")
    (package / "b.py").write_text("def f():\n    from loop import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cycles("loop") == [["loop.a", "loop.b"]]


@pytest.mark.parametrize("config", ["pyproject.toml", "layers.ini"])
def test_the_layering_contracts_are_kept(config):
    """pyproject.toml's contracts, and layers.ini's: the verify stage between the rerun and the report."""
    done = subprocess.run(
        [sys.executable, "-m", "importlinter.cli", "--config", str(ROOT / config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 and "No module named" in done.stderr:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "lint-imports"), "--config", str(ROOT / config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
