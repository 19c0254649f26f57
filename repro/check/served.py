"""What an engine served, counted in its log, against what a cell's scenarios asked of it.

An engine kind whose log prints one line per completion request it serves (`request_line` in
repro.spec.engines: llama.cpp's `launch_slot_ ... processing task`) can be held to the requests a
cell's transcripts record: every reply a step or a failed turn records is one request. A cell's
engine log is the engine's whole log when the cell ended (the engine serves its group's cells in
turn), so the requests of one cell are those after the log of the cell before it on that engine,
whose log is then a prefix of this one; the first cell's also hold the latency gate's.

Used by the resumed rule (repro.check.resumed): the later attempt's log must hold the requests of
exactly the scenarios it reran, each earlier attempt's those of the scenarios kept from it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from repro.bundle.layout.names import ENGINE_LOG
from repro.check.bounds import reply_positions
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.spec.findings import GateResult

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence


def requests_in(log: bytes, request_line: str) -> int:
    """The requests a log shows the engine served."""
    return len(re.findall(request_line.encode(), log))


def calls_per_scenario(ev: CellEvidence) -> dict[str, int] | None:
    """Scenario id -> the requests its transcript records (one per recorded reply); None when
    the transcripts cannot be read (the summary and regraded rules name them)."""
    try:
        lines = ev.bundle.transcripts(ev.cell_id)
    except BadInput:
        return None
    return {line.id: len(reply_positions(line.transcript)) for line in lines}


def gate_requests(gate: GateResult | None) -> int | None:
    """The requests the latency gate sent on the engine: its warmup and attempts; None when a
    retried gate's earlier measurements (recorded by their reasons alone) sent an unknown number."""
    if gate is None or not gate.enabled:
        return 0
    if gate.earlier:
        return None
    return len(gate.attempts) + (1 if gate.warmup is not None else 0)


def sibling_logs(ev: CellEvidence) -> list[bytes]:
    """The engine logs of the run's other cells on the same model and engine (read once per cell
    checked): those the engine served before an attempt of this cell are prefixes of its log."""
    cell, logs = ev.record.cell, []
    for cell_id in ev.bundle.cell_ids():
        if cell_id == ev.cell_id or not ev.bundle.has_file(cell_id, ENGINE_LOG):
            continue
        try:
            other = ev.bundle.cell(cell_id).cell
            if (other.model.id, other.engine.id) == (cell.model.id, cell.engine.id):
                logs.append(ev.bundle.cell_file(cell_id, ENGINE_LOG, MAX_LOG_BYTES))
        except BadInput:
            continue
    return logs


def served_during(log: bytes, request_line: str, siblings: list[bytes]) -> tuple[int, bool]:
    """The requests `log` shows after the longest sibling log it begins with (the cell before it
    on the engine), and whether there was one (else the count holds the latency gate's too)."""
    before = max((s for s in siblings if len(s) < len(log) and log.startswith(s)), key=len, default=b"")
    return requests_in(log, request_line) - requests_in(before, request_line), bool(before)


def own_requests_problem(
    ev: CellEvidence, log: bytes, request_line: str, asked: int, siblings: list[bytes]
) -> str | None:
    """The cell's own log against the `asked` requests of the scenarios its last attempt ran:
    exactly those (and the gate's, when the cell was the first on its engine); at least those where
    the count cannot be exact (several replicas, a retried gate)."""
    served, after_another = served_during(log, request_line, siblings)
    gate = 0 if after_another else gate_requests(ev.record.gate)
    replicas = ev.record.execution.replicas if ev.record.execution else 1
    if gate is None or replicas > 1:
        return None if served >= asked else f"its engine log shows {served} request(s), those scenarios made {asked}"
    if served == asked + gate:
        return None
    with_gate = f" and the latency gate's {gate}" if gate else ""
    return f"its engine log shows {served} request(s), not the {asked} those scenarios record{with_gate}"
