"""What a re-grade says: one scenario's re-graded outcome (``Regrade``) with every ``Difference``
from its record, and a cell's ``RegradeReport``; ids and values shown on one line, bounded."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from harness.contracts import FailedCheck

SHOWN_CHARS = 120
SHOWN_DIFFERENCES = 8


class Difference(BaseModel):
    """One way the re-grade disagrees with the record."""

    what: str  # e.g. "passed", "step 3 result", "end stop", "transcript"
    recorded: Any = None
    regraded: Any = None

    def line(self) -> str:
        return f"{self.what}: recorded {_shown(self.recorded)}, regraded {_shown(self.regraded)}"


class ReplayedStep(BaseModel):
    step: int
    tool: str
    status: str
    result: dict[str, Any]


class Regrade(BaseModel):
    """The re-graded outcome of one scenario and every difference from the record."""

    id: str
    replayed: bool  # False when the transcript was unusable and nothing was executed
    passed: bool
    status: str
    stop: str | None = None
    failure_type: str | None = None
    failure_step: int | None = None
    partial_score: float | None = None
    engine_fault: bool = False
    failed_checks: list[FailedCheck] = []
    steps: list[ReplayedStep] = []
    differences: list[Difference] = []

    @property
    def agrees(self) -> bool:
        return not self.differences

    def line(self) -> str:
        """One line: the scenario id and its differences (the first few)."""
        shown = [d.line() for d in self.differences[:SHOWN_DIFFERENCES]]
        if len(self.differences) > SHOWN_DIFFERENCES:
            shown.append(f"{len(self.differences) - SHOWN_DIFFERENCES} more")
        return f"{printable(self.id)}: " + "; ".join(shown)


class RegradeReport(BaseModel):
    """The re-grades of one cell's results, and the problems that kept a result from one."""

    regrades: list[Regrade] = []
    problems: list[str] = []  # one line each: a malformed line, a missing transcript, a duplicate

    @property
    def agrees(self) -> bool:
        return not self.problems and all(r.agrees for r in self.regrades)

    def lines(self) -> list[str]:
        return self.problems + [r.line() for r in self.regrades if not r.agrees]


def printable(text: str) -> str:
    """An id read from a file, safe on one line (control characters escaped, length bounded)."""
    return json.dumps(text, ensure_ascii=False)[1:-1][:SHOWN_CHARS]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
