"""Nothing outside repro/suites/ asks which kind a suite is: it asks the kind
(repro.suites.registry.kind_of). So no module there reads a suite's `external` pin to branch on
it (`suite.external`, `.external is None`, an `assert` on it); repro/spec/ is the one exception,
the matrix's own schema, which validates the pin and sits below the suites."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("repro/suites/", "repro/spec/")
BRANCHES = re.compile(r"\.external is (not )?None|\bsuite\.external\b|assert .*\.external\b")


def kind_branches(root: Path) -> list[str]:
    """Each line of repro/ outside ALLOWED that branches on a suite's kind, as path:line: text."""
    found = []
    for path in sorted((root / "repro").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(ALLOWED):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if BRANCHES.search(line):
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
