"""Synthetic bundles with chosen outcomes, transcripts and repeats, written with the real Bundle writer.

The run and cell records are those of tests/fixtures/synthetic.py (the same clean-room evidence, so
`repro check` calls every cell VALID, and they follow that writer when the rules grow); only what
the statistics read varies: the plan (repeats, models), outcomes, failure types and transcripts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

from harness.contracts import (
    EndEntry,
    ProtocolStats,
    ScenarioResult,
    StepEntry,
    StepTiming,
    TranscriptEntry,
    TranscriptLine,
    TriggerEntry,
)
from repro.bundle.layout.loading import load_cell, load_run
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import CellRecord, CellSummary, EngineSettings, IdentityCheck, RunRecord
from repro.bundle.redact import Redactor
from repro.plan.planner import make_plan
from repro.spec.cells import Cell
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.suites.registry import select
from tests.fixtures.synthetic import CANARY, ROOT, embed, reported_template, result, smoke_variant, synthetic_model
from tests.fixtures.synthetic import write_bundle as write_synthetic_bundle

# What llama.cpp reports for one request: 100 prompt tokens in 0.1 s, 20 generated in 0.2 s.
TIMINGS = {"prompt_n": 100, "prompt_ms": 100.0, "predicted_n": 20, "predicted_ms": 200.0}

# One scenario: (id, category, passed, failure type or None, transcript or None).
Scenario = tuple[str, str, bool, str | None, list[TranscriptEntry] | None]
Outcomes = Callable[[Cell], list[Scenario]]


def step(number: int, tool: str = "read_file", args: dict | None = None) -> StepEntry:
    return StepEntry(
        step=number,
        agent="main",
        thought="",
        tool=tool,
        args=args or {"path": "notes.md"},
        status="ok",
        result={"text": "x"},
    )


def transcript(*steps: StepEntry) -> list[TranscriptEntry]:
    return [TriggerEntry(agent="main", text="do it"), *steps, EndEntry(status="done", stop="finish", detail=None)]


@cache
def templates() -> tuple[RunRecord, CellRecord]:
    """The run record and a VALID cell record of the synthetic writer, to copy from."""
    with tempfile.TemporaryDirectory() as folder:
        run_dir = write_synthetic_bundle(Path(folder) / "template")
        return load_run(run_dir), load_cell(sorted((run_dir / "cells").iterdir())[0])


def write_bundle(
    run_dir: Path,
    outcomes: Outcomes,
    *,
    repeats: int = 1,
    models: int = 2,
    protocols: tuple[str, ...] = ("json_schema",),
) -> Path:
    """A complete, VALID bundle of the smoke matrix with `repeats` repeats, the given protocols and
    `outcomes(cell)` per cell (each scenario's protocol stats: one turn, valid when it passed)."""
    smoke = load_matrix(ROOT / "matrix" / "smoke.yaml").matrix
    update = {
        "repeats": repeats,
        "models": [synthetic_model(m) for m in smoke.models[:models]],
        "protocols": list(protocols),
    }
    provisional = make_plan(smoke_variant(**update)[1], "cpu", load_profiles().get("cpu")).cells[0]
    real = [
        sid for sid, category, *_ in outcomes(provisional) if (ROOT / "scenarios" / category / f"{sid}.json").is_file()
    ]
    raw, variant = smoke_variant(real, **update)  # a made-up scenario id leaves its cell INVALID
    run_template, _ = templates()
    plan = make_plan(variant, "cpu", load_profiles().get("cpu"), templates=run_template.chat_templates)
    bundle = Bundle(run_dir, Redactor(CANARY))
    embed(bundle, raw, variant)
    matrix_info = run_template.matrix.model_copy(update={"sha256": variant.sha256})
    chat_templates = {m.id: run_template.chat_templates[m.id] for m in variant.matrix.models}
    update = {
        "run_id": run_dir.name,
        "matrix": matrix_info,
        "planned_cells": [c.id for c in plan.cells],
        "chat_templates": chat_templates,
    }
    bundle.write_run(run_template.model_copy(update=update))
    for cell in plan.cells:
        write_cell(bundle, cell, outcomes(cell))
    bundle.write_manifest()
    return run_dir


def write_cell(bundle: Bundle, cell: Cell, scenarios: list[Scenario]) -> None:
    """The cell's scenarios in suite order (category, then id), as a run writes them."""
    scenarios = sorted(scenarios, key=lambda scenario: (scenario[1], scenario[0]))
    writer = bundle.start_cell(cell.id)
    rows: list[ScenarioResult] = [
        result(sid, category, passed, failure)  # type: ignore[arg-type]
        for sid, category, passed, failure, _ in scenarios
    ]
    for row in rows:
        row.level = int(row.category.removeprefix("ladder-")) if row.category.startswith("ladder-") else None
        row.partial_score = 1.0 if row.passed else 0.25
        row.engine_timings = [StepTiming(step=1, attempt=1, seconds=0.4, tokens_in=10, tokens_out=5, timings=TIMINGS)]
        row.protocol_stats = ProtocolStats(
            protocol=cell.protocol, model_turns=1, valid_calls=int(row.passed), invalid_turns=int(not row.passed)
        )
    writer.write_jsonl("scenarios.jsonl", rows)
    writer.write_jsonl(
        "transcripts.jsonl", [TranscriptLine(id=sid, transcript=t) for sid, _, _, _, t in scenarios if t is not None]
    )
    writer.write_text(
        "engine.log",
        f"llama threadpool init, n_threads = {load_profiles().get('cpu').threads}\nllama server listening\n",
    )
    expected = cell.engine.expected_identity()
    update = {
        "cell": cell,
        "model_sha256_verified": cell.model.sha256,
        "engine_identity": IdentityCheck(expected=expected, reported=expected, matched=True),
        "engine_settings": EngineSettings(
            reported={
                **templates()[1].engine_settings.reported,
                **reported_template(templates()[0].chat_templates[cell.model.id]),
            }
        ),
        "suite_ids": [r.id for r in rows],
        "suite_sha256": select(cell.suite, ROOT).sha256,
        "engine_boot_seconds": 2.0,
        "harness_seconds": 1.0 * len(rows),
        "summary": CellSummary.of(rows),
    }
    writer.finish(templates()[1].model_copy(update=update))
