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
from repro.engines.logs import split_logs
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
    """The requests the latency gate sent on the engine: each measurement's warm-up and attempts;
    None when a retried gate's earlier measurements sent a number it does not record (an older
    bundle records their reasons alone)."""
    if gate is None or not gate.enabled:
        return 0
    if len(gate.earlier_requests) != len(gate.earlier):
        return None
    return sum(gate.earlier_requests) + gate.sent


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
    on the engine), and whether there was one (else the count holds the latency gate's too). A
    cell's log of several replicas (`--- replica i of n ---` each) is counted replica by replica,
    each after the same replica's log in a sibling; the gate ran on the first replica."""
    parts = replica_logs(log)
    before = [replica_logs(sibling) for sibling in siblings]
    served, after_another = 0, False
    for index, part in enumerate(parts):
        prefixes = [other[index] for other in before if len(other) == len(parts)]
        found = max((s for s in prefixes if len(s) < len(part) and part.startswith(s)), key=len, default=b"")
        served += requests_in(part, request_line) - requests_in(found, request_line)
        after_another = after_another or (index == 0 and bool(found))
    return served, after_another


def replica_logs(log: bytes) -> list[bytes]:
    """Each replica's engine log, byte for byte (latin-1 maps every byte to one character and back)."""
    return [part.encode("latin-1") for part in split_logs("replica", log.decode("latin-1"))]


def own_requests_problem(
    ev: CellEvidence, log: bytes, request_line: str, asked: int, siblings: list[bytes]
) -> str | None:
    """The cell's own log against the `asked` requests of the scenarios its last attempt ran:
    exactly those (and the gate's, when the cell was the first on its engine); at least those where
    the count cannot be exact (a gate retried in an older bundle, which does not record what its
    earlier measurements sent)."""
    served, after_another = served_during(log, request_line, siblings)
    gate = 0 if after_another else gate_requests(ev.record.gate)
    if gate is None:
        return None if served >= asked else f"its engine log shows {served} request(s), those scenarios made {asked}"
    if served == asked + gate:
        return None
    with_gate = f" and the latency gate's {gate}" if gate else ""
    return f"its engine log shows {served} request(s), not the {asked} those scenarios record{with_gate}"


def cell_requests_problem(ev: CellEvidence, asked: int) -> str | None:
    """A cell run whole: its engine log against the `asked` requests its harness's records say it
    made (and the gate's, when it was the first on its engine). None where the engine's log does not
    name requests or the cell was resumed (the resumed rule counts each attempt)."""
    request_line = ev.record.cell.engine.facts.request_line
    if request_line is None or ev.record.earlier_attempts or not ev.bundle.has_file(ev.cell_id, ENGINE_LOG):
        return None
    log = ev.bundle.cell_file(ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES)
    return own_requests_problem(ev, log, request_line, asked, sibling_logs(ev))
