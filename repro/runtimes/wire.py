"""A runtime cell's wire in the bundle: each turn the runtime produced, with every exchange between it
and the engine (harness.contracts.RuntimeTurn, written by the harness's recording relay), kept as
`wire.jsonl` beside the transcripts, in suite order, and read back for the check and the report.
Untrusted: bounded, no links, typed."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from harness.contracts import RuntimeTurn
from repro.bundle.layout.loading import record_lines
from repro.bundle.layout.names import WIRE_FILE
from repro.bundle.layout.writer import CellWriter
from repro.core.errors import BadInput


def read_wire(path: Path) -> list[RuntimeTurn]:
    """The turns of a wire file (BadInput naming the line on any bad one)."""
    turns = []
    for number, line in record_lines(path):
        if not line.strip():
            continue
        try:
            turns.append(RuntimeTurn.model_validate_json(line))
        except ValidationError as error:
            raise BadInput(f"{path}:{number}: not a runtime turn: {error.errors()[0]['msg']}") from None
    return turns


def in_suite_order(turns: Iterable[RuntimeTurn], ids: list[str]) -> list[RuntimeTurn]:
    """Turns by their scenario's place in the suite, then by turn (turns of no such scenario left out)."""
    place = {scenario_id: k for k, scenario_id in enumerate(ids)}
    return sorted((t for t in turns if t.scenario in place), key=lambda t: (place[t.scenario], t.turn))


def keep_wire(writer: CellWriter, out_dirs: list[Path], ids: list[str]) -> None:
    """Each worker's wire file, joined into the cell's `wire.jsonl` in suite order (a worker that
    wrote none adds nothing: the check holds every reply to its turn)."""
    turns: list[RuntimeTurn] = []
    for out_dir in out_dirs:
        if (out_dir / WIRE_FILE).exists() or (out_dir / WIRE_FILE).is_symlink():
            turns += read_wire(out_dir / WIRE_FILE)
    writer.write_text(WIRE_FILE, "".join(t.model_dump_json() + "\n" for t in in_suite_order(turns, ids)))


def turns_by_scenario(turns: Iterable[RuntimeTurn]) -> dict[str, list[RuntimeTurn]]:
    found: dict[str, list[RuntimeTurn]] = {}
    for turn in turns:
        found.setdefault(turn.scenario, []).append(turn)
    return found
