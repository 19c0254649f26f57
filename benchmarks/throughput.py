"""Throughput modes of a cell, each measured for speed and for transcript identity, in one run.

    python benchmarks/throughput.py [--modes serial-1t,replicas-1t,serial-2t,slots-2t,cache-2t] [--keep]
    python benchmarks/throughput.py --reread RUN [RUN ...]

On a committed snapshot of the working tree (as tests/e2e runs the product), with SmolLM2 under
the JSON-schema protocol on one scenario per workspace category (14 scenarios), it runs
`repro matrix run` once per mode:

  serial-1t    profile cpu-1t, --prompt-cache off: one engine, 1 thread, 1 slot (the reference at 1 thread)
  replicas-1t  the same with --replicas 2: two engines of 1 thread, scenarios dealt between them
  serial-2t    profile cpu, --prompt-cache off: one engine, 2 threads, 1 slot (the reference at 2 threads)
  slots-2t     a profile like cpu with slots: 2 (prompt cache off): 2 parallel sequences in one engine
  cache-2t     profile cpu, --prompt-cache on: one engine, prompt-cache reuse on

For each mode it prints the harness's wall time, the engine's busy time (its own prompt and
generation timings, summed over every request), the overhead ratio (wall time x engines over busy
time: 1.0 means the engines never waited), the speed-up against the serial run at the same
threads (ratio of wall times), and how many scenarios' transcripts are identical to that serial
run's; and the re-read ratio: the prompt tokens the engine read over those a perfect prefix cache
would read (each step's prompt past the previous step's prompt and reply; a scenario's first step
whole), 1.0 when no token is read twice. Modes run one after another under /tmp/repro-engine.lock:
never two benchmarks' engines at once. Needs the built images and the model (`./scripts/up` does both).

`--reread RUN ...` prints, for the cells of finished runs, each scenario's prompt tokens read against
a perfect prefix cache's, and each cell's ratio (no engine is started).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.contracts import ScenarioResult  # noqa: E402
from repro.bundle.layout.reader import BundleReader  # noqa: E402
from repro.bundle.records import CellRecord  # noqa: E402
from repro.report.aggregate import transcript_sha256  # noqa: E402
from repro.spec.profiles import cache_label  # noqa: E402
from tests.e2e.conftest import e2e_matrix, make_snapshot  # noqa: E402

LOCK = Path("/tmp/repro-engine.lock")
MATRIX = "matrix/throughput.yaml"
SUITE = """\
  - id: workspace-smoke
    path: scenarios
    categories: [approval, ask, conflict, follow_up, handoff, injection, memory, notes, nothing_to_do, table_add, \
table_create, table_read_answer, table_update, web_research]
    per_category: 1"""
INEXACT_PROFILE = """\
  {name}:
    description: Like cpu, with {what} (not exact).
    accelerator: null
    memory_gb: 8
    engine_variant: cpu
    gpu_layers: 0
    gpu_count: 0
    threads: 2
    {setting}
    max_model_gb: 2
    gate: {{max_seconds_per_step: 60, min_tokens_per_second: 5}}
"""
EXTRA_PROFILES = INEXACT_PROFILE.format(
    name="cpu-slots2", what="two parallel sequences in one engine", setting="slots: 2"
)


@dataclass(frozen=True)
class Mode:
    name: str
    profile: str
    replicas: int
    reference: str  # the serial mode at the same threads
    cache: bool = False  # --prompt-cache


MODES = {
    m.name: m
    for m in (
        Mode("serial-1t", "cpu-1t", 1, "serial-1t"),
        Mode("replicas-1t", "cpu-1t", 2, "serial-1t"),
        Mode("serial-2t", "cpu", 1, "serial-2t"),
        Mode("slots-2t", "cpu-slots2", 1, "serial-2t"),
        Mode("cache-2t", "cpu", 1, "serial-2t", cache=True),
    )
}


@dataclass
class Measured:
    mode: Mode
    record: CellRecord
    results: list[ScenarioResult]
    transcripts: dict[str, str]  # scenario id -> sha256 of its canonical transcript
    command_seconds: float

    @property
    def wall(self) -> float:
        return self.record.harness_seconds or 0.0

    @property
    def busy(self) -> float:
        """The engines' own time: prompt processing and generation, summed over every request."""
        timings = [t.timings for r in self.results for t in r.engine_timings if t.timings]
        return sum(float(t.get("prompt_ms") or 0) + float(t.get("predicted_ms") or 0) for t in timings) / 1000


def say(text: str) -> None:
    print(text, flush=True)


@contextlib.contextmanager
def engine_lock() -> Iterator[None]:
    with open(LOCK, "w") as handle:
        say(f"waiting for {LOCK} (one engine at a time)")
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def snapshot(folder: Path) -> Path:
    matrix = (
        e2e_matrix(SUITE)
        .replace("profiles: [cpu]", "profiles: [cpu, cpu-1t, cpu-slots2]")
        .replace("name: e2e", "name: throughput")
        # The gate's short probe step is not what is measured here (at 1 thread SmolLM2's 64-token
        # probe reply is cut mid-string and the gate excludes the cell); every mode runs ungated.
        .replace("latency_gate: {warmup: true, attempts: 3, required: 2}", "latency_gate: {enabled: false}")
    )
    assert "enabled: false" in matrix and "cpu-slots2" in matrix, (
        "the e2e matrix template changed: update the benchmark"
    )
    profiles = (ROOT / "matrix" / "profiles.yaml").read_text().replace("  gpu-t4:", EXTRA_PROFILES + "  gpu-t4:", 1)
    return make_snapshot(folder, {MATRIX: matrix, "matrix/profiles.yaml": profiles})


def run_mode(project: Path, mode: Mode) -> Measured:
    out = f"results-{mode.name}"
    command = [
        sys.executable,
        "-m",
        "repro",
        "matrix",
        "run",
        MATRIX,
        "--profile",
        mode.profile,
        "--replicas",
        str(mode.replicas),
        "--prompt-cache",
        "on" if mode.cache else "off",
        "--out",
        out,
    ]
    say(f"[{mode.name}] {' '.join(command[2:])}")
    started = time.monotonic()
    proc = subprocess.run(
        command,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project), "COLUMNS": "160"},
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(
            f"[{mode.name}] repro matrix run exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    run_dir = project / out / (project / out / "LATEST").read_text().strip()
    bundle = BundleReader(run_dir)
    cell_id = bundle.cell_ids()[0]
    transcripts = {line.id: transcript_sha256(line.transcript) for line in bundle.transcripts(cell_id)}
    measured = Measured(mode, bundle.cell(cell_id), bundle.results(cell_id), transcripts, seconds)
    say(f"[{mode.name}] done in {seconds:.0f} s: harness wall {measured.wall:.1f} s, engine busy {measured.busy:.1f} s")
    return measured


def table(measured: dict[str, Measured]) -> list[str]:
    lines = [
        "| mode | threads | slots | prompt cache | replicas | exact | wall (s) | engine busy (s) "
        "| wall x engines / busy | speed-up | re-read ratio | identical to serial |",
        "|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for m in measured.values():
        execution = m.record.execution
        assert execution is not None
        reference = measured.get(m.mode.reference)
        speed_up = f"{reference.wall / m.wall:.2f} x" if reference and m.wall else "-"
        identical = "-"
        if reference is not None:
            same = sum(m.transcripts.get(sid) == sha for sid, sha in reference.transcripts.items())
            identical = f"{same} of {len(reference.transcripts)} (vs {reference.mode.name})"
        overhead = m.wall * execution.replicas / m.busy if m.busy else float("nan")
        lines.append(
            f"| {m.mode.name} | {execution.threads} | {execution.slots} | {cache_label(execution.cache_prompt)} "
            f"| {execution.replicas} | {'yes' if execution.exact else 'no'} | {m.wall:.1f} | {m.busy:.1f} "
            f"| {overhead:.2f} | {speed_up} | {reread_ratio(m.results):.2f} | {identical} |"
        )
    return lines


def reread(result: ScenarioResult) -> tuple[int, int]:
    """A scenario's prompt tokens the engine read (its own prompt_n, else the whole prompt), and those
    a perfect prefix cache would read: each step's prompt past the previous step's prompt and reply
    (at least one token), the first step's whole."""
    read = perfect = 0
    previous = None
    for step in result.engine_timings:
        counted = (step.timings or {}).get("prompt_n")
        read += counted if isinstance(counted, int) else step.tokens_in
        held = previous.tokens_in + previous.tokens_out if previous else 0
        perfect += max(step.tokens_in - held, 1) if previous else step.tokens_in
        previous = step
    return read, perfect


def reread_ratio(results: list[ScenarioResult]) -> float:
    pairs = [reread(result) for result in results]
    return ratio(sum(r for r, _ in pairs), sum(p for _, p in pairs))


def ratio(read: int, perfect: int) -> float:
    return read / perfect if perfect else float("nan")


def print_reread(runs: list[Path]) -> None:
    """Per cell of each run: every scenario's tokens read against a perfect prefix cache's, the cell's ratio."""
    for run_dir in runs:
        bundle = BundleReader(run_dir)
        run_read = run_perfect = scenarios = 0
        for cell_id in bundle.cell_ids():
            record = bundle.cell(cell_id)
            if record.status != "done":
                continue
            mode = record.execution.label() if record.execution else "execution not recorded"
            say(f"{run_dir.name} / {cell_id} ({mode})")
            cell_read = cell_perfect = 0
            for result in bundle.results(cell_id):
                read, perfect = reread(result)
                say(f"  {result.id:32s} read {read:7d}  perfect {perfect:7d}  ratio {ratio(read, perfect):5.2f}")
                cell_read, cell_perfect, scenarios = cell_read + read, cell_perfect + perfect, scenarios + 1
            say(
                f"  cell: read {cell_read} prompt tokens, a perfect prefix cache {cell_perfect}: "
                f"{ratio(cell_read, cell_perfect):.2f}"
            )
            run_read, run_perfect = run_read + cell_read, run_perfect + cell_perfect
        say(f"{run_dir.name}: re-read ratio {ratio(run_read, run_perfect):.2f} over {scenarios} scenarios")


def threads_line(measured: dict[str, Measured]) -> str:
    """Threads as part of a result's identity: the two serial runs' transcripts compared."""
    one, two = measured.get("serial-1t"), measured.get("serial-2t")
    if one is None or two is None:
        return ""
    same = sum(one.transcripts.get(sid) == sha for sid, sha in two.transcripts.items())
    return f"\nthreads: serial-1t and serial-2t transcripts identical for {same} of {len(two.transcripts)} scenarios"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, from: " + ", ".join(MODES))
    parser.add_argument("--keep", action="store_true", help="keep the snapshot and its bundles (the folder is printed)")
    parser.add_argument("--reread", nargs="+", type=Path, default=None, metavar="RUN", help="only print re-read ratios")
    args = parser.parse_args()
    if args.reread:
        print_reread(args.reread)
        return 0
    modes = [MODES[name] for name in args.modes.split(",") if name]
    folder = Path(tempfile.mkdtemp(prefix="repro-throughput-"))
    try:
        project = snapshot(folder / "project")
        with engine_lock():
            measured = {mode.name: run_mode(project, mode) for mode in modes}
        say(
            f"\nSmolLM2-135M Q4_1, json_schema, 14 scenarios, on {os.cpu_count()} cores "
            f"({time.strftime('%Y-%m-%d')}):\n"
        )
        say("\n".join(table(measured)))
        say(threads_line(measured))
    finally:
        if args.keep:
            say(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
