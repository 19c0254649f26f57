"""Nothing outside repro/suites/ asks which kind a suite is: it asks the kind
(repro.suites.registry.kind_of). So no module there reads a suite's `external` pin to branch on
it (`suite.external`, `.external is None`, an `assert` on it); repro/spec/ is the one exception,
the matrix's own schema, which validates the pin and sits below the suites.

An engine kind is one row and one class: its name is written in its row (repro/spec/engines.py
`ENGINE_KINDS`) and in its class's module (the row's `implementation`), nowhere else in repro/.
Any string that is exactly a kind's name counts, in any form (`kind == "ollama"`, `!=`, `in (...)`,
`case "scripted":`, a dict key, a `Literal[...]`, a default, a set member): the rest of the
project asks the kind's facts (`engine.facts`) or its class (repro.engines.registry). The few
other places that name one are listed below, each with why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repro.engines.registry import engine_class
from repro.spec.engines import ENGINE_KINDS

ROOT = Path(__file__).resolve().parents[2]
ROW = "repro/spec/engines.py"
ALLOWED = ("repro/suites/", "repro/spec/")
BRANCHES = re.compile(r"\.external is (not )?None|\bsuite\.external\b|assert .*\.external\b")
# (path, the line's text) -> why that line names a kind; every other line naming one fails the test
NAMED_ELSEWHERE = {
    ("repro/engines/gate.py", 'handle.api == "ollama"'): "an engine API's name (EngineHandle.api, the "
    "harness's --api), not a kind's",
    ("repro/spec/harnesses.py", "engine_kinds"): "a harness's row names the engine kinds its adapter runs "
    "against: data that validation looks a kind up in, never a branch",
    ("repro/spec/harnesses.py", "backends="): "a harness's backend per engine API (the API's name, not a kind's)",
}


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


def kind_homes(root: Path) -> set[str]:
    """The files that may name a kind: the table, and each row's class module."""
    modules = {facts.implementation.partition(":")[0] for facts in ENGINE_KINDS.values()}
    files = {module.replace(".", "/") + ".py" for module in modules}
    packages = {module.replace(".", "/") + "/__init__.py" for module in modules}
    return {ROW} | files | {path for path in packages if (root / path).is_file()}


def kind_names(root: Path, names: frozenset[str] = frozenset(ENGINE_KINDS)) -> list[str]:
    """Each line of repro/ outside a kind's row and class that holds a string which is exactly a
    kind's name (docstrings and comments never are), and is not in NAMED_ELSEWHERE, as path:line: text."""
    homes, found = kind_homes(root), []
    for path in sorted((root / "repro").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative in homes:
            continue
        text = path.read_text()
        lines = text.splitlines()
        numbers = sorted({node.lineno for node in ast.walk(ast.parse(text)) if is_name(node, names)})
        found += [
            f"{relative}:{number}: {lines[number - 1].strip()}"
            for number in numbers
            if not any(relative == where and text in lines[number - 1] for where, text in NAMED_ELSEWHERE)
        ]
    return found


def is_name(node: ast.AST, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names


def test_an_engine_kind_is_named_in_its_row_and_class_only() -> None:
    assert kind_names(ROOT) == []


def test_each_allowance_is_still_needed() -> None:
    """An entry of NAMED_ELSEWHERE whose line is gone (fixed, or moved into the row) is removed."""
    stale = [
        (where, text)
        for where, text in NAMED_ELSEWHERE
        if not any(text in line for line in (ROOT / where).read_text().splitlines())
    ]
    assert stale == []


def test_each_row_names_its_class() -> None:
    """A row's implementation is an Engine whose `kind` is the row's."""
    for kind, facts in ENGINE_KINDS.items():
        assert facts.kind == kind and engine_class(kind).kind == kind


def test_the_grep_finds_an_engine_branch(tmp_path: Path) -> None:
    """Each form of naming a kind is caught outside its row and class; prose is not."""
    (tmp_path / "repro" / "check").mkdir(parents=True)
    (tmp_path / "repro" / "engines").mkdir(parents=True)
    (tmp_path / "repro" / "spec").mkdir(parents=True)
    lines = [
        'a = cell.engine.kind == "llama.cpp"',
        "ok = engine.kind != 'scripted'",
        'x = "ollama" == spec.kind',
        'y = e.kind in ("ollama", "llama.cpp")',
        "READERS = {'ollama': read_ollama}",
        'kind: Literal["llama.cpp", "ollama"]',
        'kind = pins.kind or "llama.cpp"',
        "match kind:",
        '    case "scripted": pass',
        "name = f\"{engine.id} {'ollama'}\"",
        "z = engine.facts.template_from_gguf",
        'for kind in ("prompt", "predicted"): pass',
        '"""Served by llama.cpp or ollama."""  # scripted',
        'action = "ollama-version"',
    ]
    for where in ("check/m.py", "engines/llamacpp.py", "spec/engines.py"):
        (tmp_path / "repro" / where).write_text("\n".join(lines) + "\n")
    hits = kind_names(tmp_path)
    assert [hit.split(":", 2)[0] for hit in hits] == ["repro/check/m.py"] * 9
    assert [hit.split(":", 2)[1] for hit in hits] == ["1", "2", "3", "4", "5", "6", "7", "9", "10"]
