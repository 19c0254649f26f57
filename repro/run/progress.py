"""Progress display of a run, for a person at a terminal and for a log read later.

Every cell opens with a header naming it (`cell 3 of 10: model / protocol / suite`, its full id
beside), every cell ends with one status line, and an overall line gives the scenarios and cells
done and the time left at the rate measured so far. On a terminal the scenarios of the running cell
and the overall line are a live bar, gone when the run ends (transient); without a terminal (a CI
log, `| tee`) there is no bar at all, each scenario is one plain line, and the overall line is
printed at each cell's end and every `overall_every_s` seconds in between.

The harness reports each finished scenario as a `harness.contracts.ProgressEvent` JSON line; the
display never parses human text. Ids, paths and reasons are input: they are printed escaped
(`repro.core.terminal.shown`) and never through the highlighter. When the run ends,
`print_run_summary` reads it back from its bundle: a line per planned cell, and how to check it.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.errors import MarkupError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from harness.contracts import ProgressEvent
from repro.bundle.layout.reader import BundleReader
from repro.core.terminal import printable, shown
from repro.spec.cells import Cell
from repro.spec.findings import GateResult

OVERALL_EVERY_S = 60.0  # without a terminal: the overall line at least this often while scenarios finish


def duration(seconds: float) -> str:
    """`45s`, `12m04s`, `2h05m`: a log's reader wants minutes, not a float."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class Tally:
    """What the overall line says: the run's scenarios by cell, those finished, and the rate
    measured in this process (wall time since the run started over the scenarios it finished)."""

    def __init__(self, scenarios: dict[str, int], started: float) -> None:
        self.scenarios = scenarios
        self.started = started
        self.finished: set[str] = set()  # cells done, excluded, failed or skipped
        self.running: dict[str, int] = {}  # scenarios finished so far in a cell still running
        self.measured = 0  # scenarios finished in this process

    def cell_started(self, cell_id: str) -> None:
        self.running[cell_id] = 0

    def scenario(self, cell_id: str) -> int:
        self.running[cell_id] = self.running.get(cell_id, 0) + 1
        self.measured += 1
        return self.running[cell_id]

    def cell_finished(self, cell_id: str) -> None:
        self.finished.add(cell_id)
        self.running.pop(cell_id, None)

    def left(self) -> int:
        return sum(n for c, n in self.scenarios.items() if c not in self.finished) - sum(self.running.values())

    def line(self, now: float) -> str:
        total, left = sum(self.scenarios.values()), self.left()
        elapsed = now - self.started
        if not left:
            when = "nothing left"
        else:
            when = (
                f"about {duration(elapsed / self.measured * left)} left"
                if self.measured
                else "time left not measured yet"
            )
        return (
            f"overall: {total - left} of {total} scenarios, {len(self.finished)} of {len(self.scenarios)} cells, "
            f"{duration(elapsed)} elapsed, {when}"
        )


class RunProgress:
    def __init__(
        self,
        console: Console | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        overall_every_s: float = OVERALL_EVERY_S,
    ) -> None:
        self.console = console or Console()
        self.clock = clock
        self.overall_every_s = overall_every_s
        self.live = self.console.is_terminal  # a bar only where a person watches it: never a frame in a log
        self.bars = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=self.console, transient=True
        )
        self.overall_task: TaskID | None = None
        self.cell_tasks: dict[str, TaskID] = {}
        self.passed: dict[str, int] = {}
        self.labels: dict[str, str] = {}
        self.tally = Tally({}, self.clock())
        self.last_overall = self.tally.started

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

    def start_run(self, run_id: str, run_dir: Path, cells: list[Cell], scenarios: dict[str, int]) -> None:
        """`scenarios`: each cell's scenario count (cell id -> count), for the overall line."""
        self.say(f"[bold]run {shown(run_id)}[/] -> {shown(run_dir)}")
        self.labels = {cell.id: cell.label for cell in cells}
        self.tally = Tally({cell.id: scenarios.get(cell.id, 0) for cell in cells}, self.clock())
        self.last_overall = self.tally.started
        if self.live:
            self.bars.start()
            self.overall_task = self.bars.add_task(
                self.tally.line(self.clock()), total=sum(self.tally.scenarios.values())
            )

    def skip_cells(self, cells: list[Cell]) -> None:
        for cell in cells:
            self.say(f"[dim]skip {shown(self.label(cell.id))} (complete and intact; {shown(cell.id)})[/]")
            self.tally.cell_finished(cell.id)
        self.update_overall()

    def start_group(self, engine_id: str, model_id: str) -> None:
        self.say(
            f"[bold]engine {shown(engine_id)}[/] with model [bold]{shown(model_id)}[/]: booting (sealed, network none)"
        )

    def engine_ready(self, seconds: float | None) -> None:
        self.say(f"  engine ready{f' in {seconds:.1f}s' if seconds else ''}, identity matches the pin")

    def gate(self, gate: GateResult) -> None:
        colour = "green" if gate.passed else "yellow"
        self.say(f"  latency gate: [{colour}]{'pass' if gate.passed else 'excluded'}[/] ({shown(gate.reason)})")

    def label(self, cell_id: str) -> str:
        return self.labels.get(cell_id, cell_id)

    def header(self, cell_id: str) -> None:
        number = len(self.tally.finished) + 1
        self.say(
            f"[bold]cell {number} of {len(self.tally.scenarios) or number}: "
            f"{shown(self.label(cell_id))}[/] [dim]({shown(cell_id)})[/]"
        )

    def start_cell(self, cell: Cell, scenarios: int) -> None:
        self.labels.setdefault(cell.id, cell.label)
        self.header(cell.id)
        self.passed[cell.id] = 0
        self.tally.cell_started(cell.id)
        if self.live:
            self.cell_tasks[cell.id] = self.bars.add_task(f"  {shown(cell.label)}", total=scenarios)

    def scenario_done(self, cell_id: str, event: ProgressEvent) -> None:
        if cell_id not in self.passed:
            return
        self.passed[cell_id] += event.passed
        done = self.tally.scenario(cell_id)
        total = self.tally.scenarios.get(cell_id) or event.total
        if cell_id in self.cell_tasks:
            self.bars.update(
                self.cell_tasks[cell_id],
                completed=done,
                description=f"  {shown(self.label(cell_id))} {self.passed[cell_id]} passed",
            )
        if not self.live:
            verdict = (
                "PASS"
                if event.passed
                else " ".join(["FAIL", *([shown(event.failure_type)] if event.failure_type else [])])
            )
            self.say(f"    \\[{done}/{total}] {shown(event.id)} {verdict} ({event.seconds:.1f}s)")
        self.update_overall()

    def cell_done(self, cell_id: str, status: str, text: str) -> None:
        if cell_id not in self.passed:
            self.header(cell_id)  # a cell excluded or failed before its scenarios started
        colour = {"done": "green", "excluded": "yellow"}.get(status, "red")
        self.say(f"  [{colour}]{shown(status)}[/] {shown(self.label(cell_id))}: {shown(text)}")
        self.tally.cell_finished(cell_id)
        self.passed.pop(cell_id, None)
        task = self.cell_tasks.pop(cell_id, None)
        if task is not None:
            self.bars.remove_task(task)
        self.update_overall(force=True)

    def update_overall(self, *, force: bool = False) -> None:
        """The overall line: the live bar's text on a terminal; a printed line without one, at a
        cell's end and every `overall_every_s` seconds."""
        now = self.clock()
        if self.overall_task is not None:
            total = sum(self.tally.scenarios.values())
            self.bars.update(self.overall_task, completed=total - self.tally.left(), description=self.tally.line(now))
        elif force or now - self.last_overall >= self.overall_every_s:
            self.last_overall = now
            self.say(f"[dim]{shown(self.tally.line(now))}[/]")

    def end_run(self, status: str) -> None:
        if self.live:
            self.bars.stop()
        colour = "green" if status == "complete" else "red"
        self.say(f"run [{colour}]{shown(status)}[/]: {shown(self.tally.line(self.clock()))}")


def print_run_summary(run_dir: Path, console: Console) -> None:
    """The run as its bundle records it once the run ends: each planned cell's passed count (or
    its status and reason), the excluded cells, any container left behind, and how to check it."""
    bundle = BundleReader(run_dir)
    record = bundle.run()
    say = partial(console.print, soft_wrap=True, highlight=False)  # ids, reasons and paths came from input: escaped
    say(f"[bold]summary of {shown(record.run_id)}[/] ({shown(record.status)})")
    for cell_id in record.planned_cells:
        if not bundle.has_cell(cell_id):
            say(f"  [red]missing[/] {shown(cell_id)}")
            continue
        cell = bundle.cell(cell_id)
        if cell.summary is not None:
            say(f"  {cell.summary.passed}/{cell.summary.total} passed  {shown(cell_id)}")
        else:
            say(f"  [yellow]{shown(cell.status)}[/] {shown(cell_id)}: {shown(cell.reason)}")
    for cell_id, reason in record.excluded_cells.items():
        say(f"  [yellow]excluded[/] {shown(cell_id)}: {shown(reason)}")
    if record.leaked_containers:
        say(f"  [red]containers left behind:[/] {shown(', '.join(record.leaked_containers))}")
    say(f"bundle: {shown(run_dir)}  (check it with: repro check {shown(shlex.quote(str(run_dir)))})")
