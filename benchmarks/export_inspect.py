"""Time and size of `repro export inspect` on a published bundle, and of reading its logs back.

    python benchmarks/export_inspect.py [--bundle paper/published/smoke-cpu-bundle.tar.gz] [--runs 3]

Prints figures (this is a benchmark, not a timed test): per run the wall time of the export (the
`repro check` it starts with included), the median, the check alone for comparison, the logs'
count and total size against the bundle's, and the time inspect_ai takes to read every log back.
Needs the inspect extra (pip install -e '.[host,inspect]').
"""

from __future__ import annotations

import argparse
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

from inspect_ai.log import read_eval_log

from repro.__main__ import main
from repro.check.verdict import check_run

ROOT = Path(__file__).resolve().parents[1]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run(bundle: Path, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="repro-export-") as scratch:
        with tarfile.open(bundle) as tar:
            tar.extractall(Path(scratch) / "bundle", filter="data")
        (run_dir,) = [p for p in (Path(scratch) / "bundle").iterdir() if p.is_dir()]
        started = time.monotonic()
        check_run(run_dir)
        check_s = time.monotonic() - started
        times = []
        for number in range(runs):
            out = Path(scratch) / f"logs{number}"
            started = time.monotonic()
            assert main(["export", "inspect", str(run_dir), "--out", str(out)]) == 0
            times.append(time.monotonic() - started)
        logs = sorted(out.rglob("*.eval"))
        started = time.monotonic()
        samples = sum(len(read_eval_log(str(log)).samples or []) for log in logs)
        read_s = time.monotonic() - started
        print(f"bundle {bundle.name}: {folder_bytes(run_dir) / 1e6:.2f} MB unpacked")
        print(
            f"export: {', '.join(f'{t:.1f}' for t in times)} s; median {statistics.median(times):.1f} s "
            f"(repro check alone {check_s:.1f} s)"
        )
        print(f"logs: {len(logs)} files, {samples} samples, {folder_bytes(out) / 1e3:.0f} kB in all")
        print(f"read back with inspect_ai.log.read_eval_log: {read_s:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "paper/published/smoke-cpu-bundle.tar.gz")
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    run(arguments.bundle, arguments.runs)
