"""Progress display of a run: one line per stage, and per cell either a bar with scenario counts and
time left (on a terminal) or one plain line per scenario (in a CI log or through `| tee`).

The harness reports each finished scenario as a `harness.contracts.ProgressEvent` JSON line; the
display never parses human text.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness.contracts import ProgressEvent
from repro.gate import GateResult
from repro.plan import Cell


class RunProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.cells_task: TaskID | None = None
        self.cell_tasks: dict[str, TaskID] = {}
        self.passed: dict[str, int] = {}

    def note(self, text: str) -> None:
        self.console.print(text, soft_wrap=True)

    def start_run(self, run_id: str, run_dir: Path, cells: int) -> None:
        self.console.print(f"[bold]run {run_id}[/] -> {run_dir}", soft_wrap=True)
        self.bars.start()
        self.cells_task = self.bars.add_task("cells", total=cells)

    def skip_cells(self, cells: list[Cell]) -> None:
        for cell in cells:
            self.console.print(f"[dim]skip {cell.id} (complete and intact)[/]", soft_wrap=True)
            if self.cells_task is not None:
                self.bars.advance(self.cells_task)

    def start_group(self, engine_id: str, model_id: str) -> None:
        self.console.print(f"[bold]engine {engine_id}[/] with model [bold]{model_id}[/]: booting (sealed, network none)", soft_wrap=True)

    def engine_ready(self, seconds: float | None) -> None:
        self.console.print(f"  engine ready{f' in {seconds:.1f}s' if seconds else ''}, identity matches the pin", soft_wrap=True)

    def gate(self, gate: GateResult) -> None:
        colour = "green" if gate.passed else "yellow"
        self.console.print(f"  latency gate: [{colour}]{'pass' if gate.passed else 'excluded'}[/] ({gate.reason})", soft_wrap=True)

    def start_cell(self, cell_id: str, scenarios: int) -> None:
        self.passed[cell_id] = 0
        self.cell_tasks[cell_id] = self.bars.add_task(f"  {cell_id[:60]}", total=scenarios)

    def scenario_done(self, cell_id: str, event: ProgressEvent) -> None:
        if cell_id not in self.cell_tasks:
            return
        self.passed[cell_id] += event.passed
        self.bars.update(self.cell_tasks[cell_id], completed=event.index, description=f"  {cell_id[:48]} {self.passed[cell_id]} passed")
        if not self.console.is_terminal:
            verdict = "PASS" if event.passed else f"FAIL {event.failure_type}"
            self.console.print(f"    [{event.index}/{event.total}] {event.id} {verdict} ({event.seconds:.1f}s)", soft_wrap=True, highlight=False)

    def cell_done(self, cell_id: str, status: str, text: str) -> None:
        colour = {"done": "green", "excluded": "yellow"}.get(status, "red")
        self.console.print(f"  [{colour}]{status}[/] {cell_id}: {text}", soft_wrap=True)
        if self.cells_task is not None:
            self.bars.advance(self.cells_task)

    def end_run(self, status: str) -> None:
        self.bars.stop()
        colour = "green" if status == "complete" else "red"
        self.console.print(f"run [{colour}]{status}[/]", soft_wrap=True)
