"""What each agent runtime of a run did, read from its cells' wires (repro.runtimes.wire): the system
prompt it injected, the sampling it sent and what the relay filled, the tool calls it ran (native
mode), what it tried outside (refused), the files it left in its HOME, the lines it printed beside
its answers, and where a turn's time went (the runtime's process against the engine's replies).
`repro results runtimes RUN` prints it."""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel

from harness.contracts import RuntimeTurn, WireExchange
from harness.runtimes import wire
from repro.bundle.layout.names import WIRE_FILE
from repro.bundle.layout.reader import BundleReader
from repro.runtimes.wire import read_wire

STOPPED_EXIT = "stopped"  # a native run's wire `exit` when the run loop ended it (harness.runtimes.native)
SAMPLING = ("temperature", "seed", "max_tokens", "max_completion_tokens", "top_p", "top_k")


class RuntimeSummary(BaseModel):
    runtime: str
    pin: str
    cells: int = 0
    turns: int = 0
    failed_turns: int = 0  # ended without an answer, but for a native run the loop stopped
    calls: int = 0  # native mode: tool calls the runtime ran through the harness's desk
    system_prompt: str | None = None  # the first request's system message, as the runtime sent it
    sent: list[str] = []  # sampling fields the runtime's chat requests carried
    filled: list[str] = []  # fields the relay set (the profile's), on any request
    outside: list[str] = []  # requests for another host, refused
    home: list[str] = []  # files a turn left in its HOME
    beside: list[str] = []  # lines printed beside the answers (distinct, first few)
    requests: int = 0  # chat requests to the engine
    turn_seconds: float = 0.0  # the runtime's processes, start to exit
    engine_seconds: float = 0.0  # the engine's replies to them, as the relay timed them

    @property
    def overhead_per_turn(self) -> float:
        """Seconds per turn outside the engine: the runtime's start, its own work, its exit."""
        return (self.turn_seconds - self.engine_seconds) / self.turns if self.turns else 0.0

    def take(self, turns: Iterable[RuntimeTurn]) -> None:
        self.cells += 1
        for turn in turns:
            self.turns += 1
            self.failed_turns += turn.answer is None and turn.exit != STOPPED_EXIT
            self.calls += len(turn.calls)
            self.turn_seconds += turn.seconds
            self.home = sorted(set(self.home) | set(turn.home))
            self.beside = list(dict.fromkeys([*self.beside, *turn.other]))[:5]
            for exchange in turn.exchanges:
                self._exchange(exchange)

    def _exchange(self, exchange: WireExchange) -> None:
        if exchange.outside:
            self.outside = sorted(set(self.outside) | {f"{exchange.method} {exchange.path}"})
            return
        self.filled = sorted(set(self.filled) | set(exchange.filled))
        if exchange.method != "POST" or not exchange.path.split("?")[0].endswith(wire.CHAT_SUFFIX):
            return
        self.requests += 1
        self.engine_seconds += exchange.seconds
        try:
            request = json.loads(exchange.request)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        self.sent = sorted(set(self.sent) | {name for name in SAMPLING if name in request})
        if self.system_prompt is None:
            self.system_prompt = next(
                (str(m.get("content")) for m in request.get("messages") or [] if m.get("role") == "system"), ""
            )


def runtime_summaries(reader: BundleReader, only: set[str] | None = None) -> list[RuntimeSummary]:
    """One summary per runtime of the run's cells that carry a wire (of `only` those cells, when
    given: a report's VALID ones), in the order they first appear."""
    found: dict[str, RuntimeSummary] = {}
    for cell_id in reader.cell_ids():
        if only is not None and cell_id not in only:
            continue
        runtime = reader.cell(cell_id).cell.runtime
        if runtime is None or not reader.has_file(cell_id, WIRE_FILE):
            continue
        summary = found.setdefault(runtime.id, RuntimeSummary(runtime=runtime.id, pin=runtime.pin))
        summary.take(read_wire(reader.cell_dir(cell_id) / WIRE_FILE))
    return list(found.values())


def summary_lines(summary: RuntimeSummary) -> list[str]:
    """The summary as text, a line a fact, the system prompt last (whole)."""
    per_turn = summary.turn_seconds / summary.turns if summary.turns else 0.0
    lines = [
        f"{summary.runtime} ({summary.pin}): {summary.cells} cell(s), {summary.turns} turn(s), "
        f"{summary.failed_turns} without an answer, {summary.requests} chat request(s)"
        + (f", {summary.calls} tool call(s) it ran (native mode)" if summary.calls else ""),
        f"  time: {per_turn:.1f} s a turn, of which {summary.overhead_per_turn:.1f} s outside the engine "
        f"(the runtime's start, work and exit); engine {summary.engine_seconds:.0f} s of {summary.turn_seconds:.0f} s",
        f"  sampling it sent: {', '.join(summary.sent) or 'none'}; "
        f"the relay filled: {', '.join(summary.filled) or 'nothing'}",
        f"  tried outside (refused): {', '.join(summary.outside) or 'nothing'}",
        f"  left in its HOME: {', '.join(summary.home) or 'nothing'}",
        f"  printed beside its answers: {' | '.join(summary.beside) or 'nothing'}",
    ]
    prompt = summary.system_prompt
    if not prompt:
        return [*lines, "  system prompt: none of its own"]
    shown = [f"    {line}" for line in prompt.splitlines()]
    return [*lines, f"  system prompt it injected ({len(prompt)} characters):", *shown]
