"""`tholos bench` through repro against `tholos bench` run directly, on the same engine and model.

    python benchmarks/tholos_direct.py RUN [--cell CELL] [--out DIR]

For each Tholos-runner cell of a bundle (a suite whose harness is `tholos`), this boots the engine
image the cell recorded (by image id) with the model the cell verified and the same llama-server
command line, changing one thing: the engine listens on the host's loopback (network_mode host,
another port) instead of inside a sealed namespace. Then it runs the runner's own
`python -m tholos bench` on the host, from its archive in the suite cache (never from the project),
on the cell's scenario files, and compares its results file, line by line, with the bundle's raw
results (`raw.results.jsonl`): pass, failed assertions, steps, tokens, invalid steps and the whole
message list. Only the runner's wall-clock `seconds` is left out of the comparison (never the same
twice), and printed for both sides.

Prints one line per scenario (`same` or the fields that differ), the seconds per scenario on both
sides, and a last line "N of M scenarios identical". Exit 0 when every scenario is identical, 1
otherwise, 2 for bad input. Needs the cell's images, its model in the store and the suite cache
filled (`repro suites fetch`, `REPRO_SOURCE_MIRROR` offline). It starts one engine at a time:
run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.bundle.layout.reader import BundleReader  # noqa: E402
from repro.bundle.records import CellRecord  # noqa: E402

RUN_ID = f"direct-{os.getpid()}"
TIMEOUT_S = 3600


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def runner_cells(reader: BundleReader, only: str | None) -> list[CellRecord]:
    records = [reader.cell(cell_id) for cell_id in reader.cells_on_disk()]
    chosen = [
        r
        for r in records
        if r.cell.suite.external is not None and r.cell.suite.external.harness == "tholos" and r.status == "done"
    ]
    return [r for r in chosen if only in (None, r.cell.id)]


def keyed_lines(paths: list[Path]) -> dict[str, dict]:
    """The runner's results lines in these files, id -> line (with its `seconds`)."""
    rows = [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def engine_kwargs(record: CellRecord, profile, port: int) -> dict:
    """The cell's engine container, as the run created it, but on the host's loopback at `port`."""
    from repro.engines.registry import engine_for
    from repro.store.models import model_path

    cell = record.cell
    assert record.engine_image is not None
    # No probe is started here (the host polls the engine itself): the engine's image stands in for the probe's.
    engine = engine_for(None, cell.engine, probe_image=record.engine_image.id, run_id=RUN_ID, group_id="direct")
    launch = engine.boot_spec(
        record.engine_image.id, cell.model, model_path(cell.model), profile, cell.decoding, profile_name=cell.profile
    )
    kwargs = engine.container_kwargs(launch)
    command = list(kwargs["command"])
    command[command.index("--port") + 1] = str(port)
    return kwargs | {"command": command, "network_mode": "host"}


def wait_ready(port: int, timeout: float) -> None:
    import httpx

    started = time.monotonic()
    with httpx.Client(trust_env=False, timeout=2.0) as http:
        while time.monotonic() - started < timeout:
            try:
                if http.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise SystemExit(f"the engine on 127.0.0.1:{port} was not ready within {timeout:g}s")


def run_direct(record: CellRecord, port: int, work: Path) -> dict[str, dict]:
    """`python -m tholos bench` from the cached archive on the cell's scenarios: id -> results line."""
    from repro.suites.external.wheels import fetch_code
    from repro.suites.sources import scenario_folder
    from tests.external.tholos_support import run_direct as bench

    suite = record.cell.suite
    assert suite.external is not None
    bench(
        fetch_code(suite.external),
        scenario_folder(suite),
        work,
        record.suite_ids,
        f"http://127.0.0.1:{port}",
        model=record.cell.model.id,
        timeout=TIMEOUT_S,
    )
    return keyed_lines([work / "results.jsonl"])


def differences(ours: dict, theirs: dict) -> list[str]:
    keys = sorted((set(ours) | set(theirs)) - {"seconds"})
    return [key for key in keys if ours.get(key) != theirs.get(key)]


def compare(record: CellRecord, kept: dict[str, dict], direct: dict[str, dict]) -> int:
    same = 0
    for scenario_id in record.suite_ids:
        ours, theirs = kept.get(scenario_id), direct.get(scenario_id)
        if ours is None or theirs is None:
            print(f"  {scenario_id}: missing {'in the bundle' if ours is None else 'in the direct run'}")
            continue
        fields = differences(ours, theirs)
        same += not fields
        verdict = "same" if not fields else "differs: " + ", ".join(fields)
        print(f"  {scenario_id}: {verdict} (passed {ours.get('passed')}, {len(ours.get('messages') or [])} messages)")
    through = [row.get("seconds") or 0.0 for row in kept.values()]
    alone = [row.get("seconds") or 0.0 for row in direct.values()]
    print(
        f"  seconds per scenario: through repro median {statistics.median(through):.1f}, "
        f"directly median {statistics.median(alone):.1f}"
    )
    print(
        f"{same} of {len(record.suite_ids)} scenarios identical (outcome, steps, tokens, invalid steps, "
        f"message list) for {record.cell.id}"
    )
    return same


def check_one(client, reader: BundleReader, record: CellRecord, out: Path) -> bool:
    from repro.containers.lifecycle import started

    port = free_port()
    profile = reader.run().profile_settings
    print(
        f"{record.cell.id}: engine {record.engine_image.id[:19] if record.engine_image else '?'} on "
        f"127.0.0.1:{port}, {len(record.suite_ids)} scenarios"
    )
    with started(client, engine_kwargs(record, profile, port)):
        wait_ready(port, profile.ready_timeout_s)
        work = out / record.cell.id
        work.mkdir(parents=True, exist_ok=True)
        direct = run_direct(record, port, work)
    return compare(
        record, keyed_lines(sorted(reader.cell_dir(record.cell.id).glob("raw*results.jsonl"))), direct
    ) == len(record.suite_ids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--cell", default=None, help="one cell id (default: every Tholos-runner cell)")
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the direct runs' results here (default: a temporary folder)"
    )
    args = parser.parse_args()
    if not (args.run / "run.json").is_file():
        print(f"{args.run}: not a run folder (no run.json)", file=sys.stderr)
        return 2

    from repro.containers.cleanup import cleanup
    from repro.containers.client import get_client

    reader = BundleReader(args.run)
    records = runner_cells(reader, args.cell)
    if not records:
        print(f"{args.run}: no finished Tholos-runner cell{' ' + args.cell if args.cell else ''}", file=sys.stderr)
        return 2
    client = get_client()
    try:
        with tempfile.TemporaryDirectory(prefix="repro-direct-") as scratch:
            out = args.out or Path(scratch)
            return 0 if all([check_one(client, reader, record, out) for record in records]) else 1
    finally:
        cleanup(RUN_ID, client)


if __name__ == "__main__":
    sys.exit(main())
