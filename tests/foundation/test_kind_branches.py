"""Nothing outside repro/suites/ asks which kind a suite is: it asks the kind
(repro.suites.registry.kind_of). So no module there reads a suite's `external` pin to branch on
it (`suite.external`, `.external is None`, an `assert` on it); repro/spec/ is the one exception,
the matrix's own schema, which validates the pin and sits below the suites.

Engines the same way: nothing outside repro/engines/ and repro/spec/ compares an engine's kind
with a kind's name (`engine.kind == "llama.cpp"`); it asks the kind's facts (`engine.facts`,
repro.spec.engines.ENGINE_KINDS) or its class (repro.engines.registry)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("repro/suites/", "repro/spec/")
BRANCHES = re.compile(r"\.external is (not )?None|\bsuite\.external\b|assert .*\.external\b")
ENGINES_ALLOWED = ("repro/engines/", "repro/spec/")
ENGINE_NAMES = r"""["'](?:llama\.cpp|ollama|scripted)["']"""
ENGINE_BRANCHES = re.compile(
    rf"kind\s*(?:==|!=)\s*{ENGINE_NAMES}|{ENGINE_NAMES}\s*(?:==|!=)\s*\S*kind\b|kind\s+(?:not\s+)?in\s+[\(\[\{{]\s*{ENGINE_NAMES}"
)


def kind_branches(root: Path, branches: re.Pattern[str] = BRANCHES, allowed: tuple[str, ...] = ALLOWED) -> list[str]:
    """Each line of repro/ outside `allowed` that branches on a kind, as path:line: text."""
    found = []
    for path in sorted((root / "repro").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(allowed):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if branches.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_no_kind_branch_outside_the_suites() -> None:
    assert kind_branches(ROOT) == []


def test_the_grep_finds_a_branch(tmp_path: Path) -> None:
    """The grep itself: each way of branching is caught, and the suites' own are not."""
    (tmp_path / "repro" / "report").mkdir(parents=True)
    (tmp_path / "repro" / "suites").mkdir(parents=True)
    lines = ["a = s.external is None", "b = x if cell.suite.external else y", "assert suite.external is not None"]
    (tmp_path / "repro" / "report" / "m.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "repro" / "suites" / "k.py").write_text("\n".join(lines) + "\n")
    assert [hit.split(":", 2)[1] for hit in kind_branches(tmp_path)] == ["1", "2", "3"]


def test_no_engine_kind_branch_outside_the_engines() -> None:
    assert kind_branches(ROOT, ENGINE_BRANCHES, ENGINES_ALLOWED) == []


def test_the_grep_finds_an_engine_branch(tmp_path: Path) -> None:
    (tmp_path / "repro" / "check").mkdir(parents=True)
    (tmp_path / "repro" / "engines").mkdir(parents=True)
    lines = [
        'if cell.engine.kind == "llama.cpp":',
        "ok = engine.kind != 'scripted'",
        'x = "ollama" == spec.kind',
        'if e.kind in ("ollama", "llama.cpp"):',
        "if engine.facts.template_from_gguf:",
        'for kind in ("prompt", "predicted"):',
    ]
    (tmp_path / "repro" / "check" / "m.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "repro" / "engines" / "k.py").write_text("\n".join(lines) + "\n")
    hits = kind_branches(tmp_path, ENGINE_BRANCHES, ENGINES_ALLOWED)
    assert [hit.split(":", 2)[1] for hit in hits] == ["1", "2", "3", "4"]
