"""Suite kind -> its implementation, as lazy `"module:object"` entries (repro.core.registry).

Our scenario suites are the kind `scenarios`; every external harness the matrix may name
(repro.spec.harnesses: its facts, as data) is the kind of its own name. Nothing outside
repro.suites asks which kind a suite is: it asks the kind (`kind_of(suite)`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from repro.bundle.records import Execution
from repro.core.registry import load_object
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.harnesses import HARNESSES
from repro.spec.matrix import Suite
from repro.spec.profiles import Profile
from repro.suites.base import SuiteKind

KINDS = {"scenarios": "repro.suites.scenarios:ScenarioSuites"} | {
    name: facts.implementation for name, facts in HARNESSES.items()
}


def kind_name(suite: Suite) -> str:
    return suite.external.harness if suite.external is not None else "scenarios"


@cache
def kind_named(name: str) -> SuiteKind:
    kind: SuiteKind = load_object(KINDS[name])()
    return kind


def kind_of(suite: Suite) -> SuiteKind:
    """The kind that runs `suite` (matrix validation admits only known harnesses)."""
    return kind_named(kind_name(suite))


def cell_execution(profile: Profile, replicas: int, cell: Cell) -> Execution:
    """The profile's execution as the cell runs it: on its engine kind, and per scenario only where
    its suite kind marks a scenario's start (an agent runtime's requests are marked by the harness's
    relay, as our own client marks its own: repro.bundle.records.Execution.of)."""
    marks = kind_of(cell.suite).marks_scenarios()
    return Execution.of(profile, replicas, cell.engine.kind, marks_scenarios=marks)


def select(suite: Suite, root: Path | None = None) -> SuiteSelection:
    """The suite's tasks, as its kind selects them."""
    return kind_of(suite).select(suite, root)
