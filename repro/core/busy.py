"""Is this machine busy? The load average and the processes that used the cores over a pause.

The latency gate measures the machine at one moment; when it fails, the run pauses and measures
again (repro.engines.gate). The pause itself is the measurement: the CPU time each process spent during
it (from /proc, Linux only) names what else was using the cores, so the user reads "the machine
looks busy: load 3.9 on 2 cores; busiest: python (pid 4242) 1.9 cores" rather than a verdict on
the model. Everything here is best effort: a machine without /proc gives the load average alone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel

PROC = Path("/proc")
BUSIEST_SHOWN = 3
MIN_CORES_SHOWN = 0.1  # a process using less than a tenth of a core is not "using the cores"


class ProcessUse(BaseModel):
    pid: int
    name: str
    cores: float  # CPU seconds per second of the pause


class MachineLoad(BaseModel):
    load_1min: float | None = None
    cores: int | None = None
    busiest: list[ProcessUse] = []

    def describe(self) -> str:
        """`load average 3.9 on 2 cores; busiest: python (pid 4242) 1.9 cores, ...`."""
        parts = []
        if self.load_1min is not None:
            parts.append(f"load average {self.load_1min:.1f} on {self.cores or '?'} cores")
        if self.busiest:
            parts.append("busiest: " + ", ".join(f"{p.name} (pid {p.pid}) {p.cores:.1f} cores" for p in self.busiest))
        return "; ".join(parts) or "no load figures on this system"


def cpu_seconds() -> dict[int, tuple[str, float]]:
    """pid -> (command name, CPU seconds so far) of every process readable in /proc."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    seen: dict[int, tuple[str, float]] = {}
    try:
        entries = [e for e in PROC.iterdir() if e.name.isascii() and e.name.isdigit()]
    except OSError:
        return seen
    for entry in entries:
        parsed = parse_stat(entry / "stat", tick)
        if parsed is not None:
            seen[int(entry.name)] = parsed
    return seen


def parse_stat(path: Path, tick: int) -> tuple[str, float] | None:
    """(comm, utime + stime in seconds) from /proc/<pid>/stat; None when it vanished or is odd."""
    try:
        text = path.read_text(errors="replace")[:4096]
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        return name, (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError, IndexError):
        return None


def busiest(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], seconds: float
) -> list[ProcessUse]:
    """The processes that used the most CPU between two snapshots, this one left out."""
    uses = []
    for pid, (name, spent) in after.items():
        if pid == os.getpid() or pid not in before or seconds <= 0:
            continue
        cores = (spent - before[pid][1]) / seconds
        if cores >= MIN_CORES_SHOWN:
            uses.append(ProcessUse(pid=pid, name=name, cores=round(cores, 2)))
    return sorted(uses, key=lambda u: -u.cores)[:BUSIEST_SHOWN]


def pause_and_look(seconds: float) -> MachineLoad:
    """Sleep `seconds`, and say what used the machine meanwhile."""
    started, before = time.monotonic(), cpu_seconds()
    time.sleep(seconds)
    after = cpu_seconds()
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return MachineLoad(load_1min=load, cores=os.cpu_count(), busiest=busiest(before, after, time.monotonic() - started))
