"""Progress display of a run: one line per stage, and per cell either a bar with scenario counts and
time left (on a terminal) or one plain line per scenario (in a CI log or through `| tee`).

The harness reports each finished scenario as a `harness.contracts.ProgressEvent` JSON line; the
display never parses human text. Ids, paths and reasons are input: they are printed escaped
(`repro.core.terminal.shown`) and never through the highlighter.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.errors import MarkupError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness.contracts import ProgressEvent
from repro.core.terminal import printable, shown
from repro.engines.gate import GateResult
from repro.plan.planner import Cell


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

    def say(self, markup: str) -> None:
        """One line of markup whose input-derived parts the caller escaped with `shown`."""
        self.console.print(markup, soft_wrap=True, highlight=False)

    def note(self, text: str) -> None:
        """A line composed by the run (its markup kept): control characters are escaped, and text
        that is not valid markup is printed as written."""
        try:
            self.say(printable(text))
        except MarkupError:
            self.say(shown(text))

    def start_run(self, run_id: str, run_dir: Path, cells: int) -> None:
        self.say(f"[bold]run {shown(run_id)}[/] -> {shown(run_dir)}")
        self.bars.start()
        self.cells_task = self.bars.add_task("cells", total=cells)

    def skip_cells(self, cells: list[Cell]) -> None:
        for cell in cells:
            self.say(f"[dim]skip {shown(cell.id)} (complete and intact)[/]")
            if self.cells_task is not None:
                self.bars.advance(self.cells_task)

    def start_group(self, engine_id: str, model_id: str) -> None:
        self.say(f"[bold]engine {shown(engine_id)}[/] with model [bold]{shown(model_id)}[/]: booting (sealed, network none)")

    def engine_ready(self, seconds: float | None) -> None:
        self.say(f"  engine ready{f' in {seconds:.1f}s' if seconds else ''}, identity matches the pin")

    def gate(self, gate: GateResult) -> None:
        colour = "green" if gate.passed else "yellow"
        self.say(f"  latency gate: [{colour}]{'pass' if gate.passed else 'excluded'}[/] ({shown(gate.reason)})")

    def start_cell(self, cell_id: str, scenarios: int) -> None:
        self.passed[cell_id] = 0
        self.cell_tasks[cell_id] = self.bars.add_task(f"  {shown(cell_id[:60])}", total=scenarios)

    def scenario_done(self, cell_id: str, event: ProgressEvent) -> None:
        if cell_id not in self.cell_tasks:
            return
        self.passed[cell_id] += event.passed
        self.bars.update(self.cell_tasks[cell_id], completed=event.index, description=f"  {shown(cell_id[:48])} {self.passed[cell_id]} passed")
        if not self.console.is_terminal:
            verdict = "PASS" if event.passed else f"FAIL {shown(event.failure_type)}"
            self.say(f"    \\[{event.index}/{event.total}] {shown(event.id)} {verdict} ({event.seconds:.1f}s)")

    def cell_done(self, cell_id: str, status: str, text: str) -> None:
        colour = {"done": "green", "excluded": "yellow"}.get(status, "red")
        self.say(f"  [{colour}]{shown(status)}[/] {shown(cell_id)}: {shown(text)}")
        if self.cells_task is not None:
            self.bars.advance(self.cells_task)

    def end_run(self, status: str) -> None:
        self.bars.stop()
        colour = "green" if status == "complete" else "red"
        self.say(f"run [{colour}]{shown(status)}[/]")
