"""External suites: another project's benchmark harness, run sealed from its pinned wheel.

A matrix suite with `external` names the harness (an adapter of this package), its wheel and
that wheel's sha256, and a lock of every wheel it installs. Everything else of repro applies as to
our own suites: the plan, the sealed engine, the gate, the sandbox and its audit, healing,
bundles, check, tables. What differs is held by the adapter (repro.suites.external.base.Adapter):
which tasks the wheel holds, the container's command, how its raw outputs become our
ScenarioResult lines, which of its checks `repro check` re-executes, and its own report.

docs/external-suites.md says how to add another harness; ToolCallBench is the worked example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repro.spec.matrix import Matrix, Suite
    from repro.suites.external.base import Adapter


def adapter_for(suite: Suite) -> Adapter:
    """The adapter of an external suite (the matrix's validation allows only known ones)."""
    from repro.suites.external.toolcallbench import ToolCallBench

    assert suite.external is not None
    adapters: dict[str, Adapter] = {"toolcallbench": ToolCallBench()}
    return adapters[suite.external.harness]


def external_problems(matrix: Matrix) -> list[tuple[tuple, str]]:
    """Matrix problems of its external suites: a wheel this adapter was not written for (its
    output format and checks are read by version), a path out of the wheel, and a protocol the
    harness cannot carry (it drives the engine with its own requests)."""
    problems: list[tuple[tuple, str]] = []
    for index, suite in enumerate(matrix.suites):
        if suite.external is None:
            continue
        adapter = adapter_for(suite)
        known = adapter.known_wheels.get(suite.external.wheel)
        if known is None:
            problems.append((("suites", index, "external", "wheel"), f"{adapter.name} reads {', '.join(sorted(adapter.known_wheels))} only"))
        elif known != suite.external.sha256:
            problems.append((("suites", index, "external", "sha256"), f"{suite.external.wheel} is the wheel with sha256 {known}"))
        if suite.source is not None:
            problems.append((("suites", index, "source"), "an external suite's tasks come from its wheel: give external or source, not both"))
        if suite.path.startswith("/") or ".." in suite.path.split("/"):
            problems.append((("suites", index, "path"), "a path inside the wheel must be relative, without .."))
        problems += [
            (("engines", number, "kind"), f"{adapter.name} talks to an OpenAI-compatible server; engine {engine.id} is {engine.kind}")
            for number, engine in enumerate(matrix.engines)
            if engine.kind != "llama.cpp"
        ]
        wrong = [p for p in matrix.protocols if p not in adapter.protocols]
        if wrong:
            problems.append(
                (
                    ("suites", index, "external"),
                    f"{adapter.name} drives the engine with its own requests ({adapter.request_kind}): the matrix's protocols must be "
                    f"{', '.join(sorted(adapter.protocols))} (found {', '.join(wrong)}); run it in a matrix of its own",
                )
            )
    return problems
