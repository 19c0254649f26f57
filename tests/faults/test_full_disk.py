"""A full results disk: the run stops with one line naming the folder (exit 1), leaves no
half-written file, no half cell and no container, and --resume after freeing space completes it
with the transcripts of an undisturbed run. Marked `faults` (not in the default run); needs root
to mount a tmpfs. Run with `flock /tmp/repro-engine.lock pytest -m faults tests/faults/test_full_disk.py`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.bundle.layout.integrity import cell_problems
from repro.bundle.layout.writer import Bundle, DiskFull
from repro.bundle.redact import Redactor
from tests.e2e.conftest import e2e_matrix, make_snapshot, repro_command, repro_env, run_repro
from tests.e2e.test_engine_kill import TINY_SUITE, harness_running, run_dir_of
from tests.e2e.test_run import cells_of, outcome, repro_containers

pytestmark = [pytest.mark.faults, pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")]
ARGS = ["matrix", "run", "matrix/faults.yaml", "--profile", "cpu"]


@contextlib.contextmanager
def tmpfs(folder: Path, size: int) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """A filler file that takes every byte left on the folder's disk."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (65536, 4096, 512):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    return filler


def leftovers(folder: Path) -> list[str]:
    """Half-written entries: partial cells, temporary files, cell folders without a whole cell."""
    found = [str(p) for p in folder.rglob("*") if ".partial" in p.name or p.name.endswith(".tmp")]
    return found + [
        str(cell)
        for cells in folder.glob("*/cells")
        for cell in cells.iterdir()
        if not cell.name.startswith(".") and cell_problems(cell)
    ]


def test_a_full_disk_fails_a_write_whole_and_names_the_folder(tmp_path):
    with tmpfs(tmp_path / "results", 64 * 1024) as results:
        bundle = Bundle(results / "run-1", Redactor())
        bundle.write_text("run.json", '{"status": "running"}\n')
        writer = bundle.start_cell("cell-1")
        with pytest.raises(DiskFull) as caught:
            for number in range(100):
                writer.write_text(f"part-{number}.log", "x" * 8000)
        assert str(caught.value).startswith(
            f"no space left on {results / 'run-1'} (writing cells/.cell-1.partial/part-"
        )
        assert caught.value.exit_code == 1
        writer.discard()
        fill(results)
        with pytest.raises(DiskFull, match=r"\(writing run\.json\)"):
            bundle.write_text("run.json", '{"status": "failed"}\n' + "x" * 8000)
        assert json.loads((results / "run-1" / "run.json").read_text()) == {"status": "running"}
        assert leftovers(results) == []


@pytest.mark.docker
@pytest.mark.engine
def test_a_run_on_a_full_disk_stops_cleanly_and_resumes_to_the_same_transcripts(
    tmp_path, canary_home, harness_image_ref, llama_image_ref
):
    project = make_snapshot(tmp_path / "project", {"matrix/faults.yaml": e2e_matrix(TINY_SUITE)})
    undisturbed = run_repro(project, canary_home, *ARGS, "--out", "results/undisturbed")
    assert undisturbed.returncode == 0, undisturbed.stdout[-3000:] + undisturbed.stderr[-3000:]
    baseline = run_dir_of(project, "results/undisturbed")
    size = max(2 * 1024**2, 2 * sum(p.stat().st_size for p in baseline.rglob("*") if p.is_file()))
    with tmpfs(project / "results" / "disk", size) as disk:
        output, code = run_until_full(project, canary_home, disk)
        assert code == 1, output[-3000:]
        assert output.strip().splitlines()[-1].startswith("no space left on results/disk/"), output[-3000:]
        assert "Traceback" not in output and "internal error" not in output
        run_dir = run_dir_of(project, "results/disk")
        assert repro_containers(run_dir.name) == []
        assert leftovers(disk) == []
        assert json.loads((run_dir / "run.json").read_text())["status"] in ("running", "failed")
        (disk / "filler").unlink()
        resumed = run_repro(project, canary_home, *ARGS, "--out", "results/disk", "--resume")
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
        assert leftovers(disk) == [] and repro_containers(run_dir.name) == []
        expected = cells_of(baseline)
        assert {name: outcome(cell) for name, cell in cells_of(run_dir).items()} == {
            name: outcome(cell) for name, cell in expected.items()
        }
        assert run_repro(project, canary_home, "check", str(run_dir)).returncode == 0


def run_until_full(project: Path, home: Path, disk: Path) -> tuple[str, int]:
    """Start a run into `disk`, fill the disk 5 s into the cell's harness; its output and exit status."""
    command = repro_command(*ARGS, "--out", "results/disk")
    proc = subprocess.Popen(
        command, cwd=project, env=repro_env(project, home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and proc.poll() is None:
            run_dir = run_dir_of(project, "results/disk")
            if run_dir is not None and harness_running(run_dir.name):
                time.sleep(5)
                fill(disk)
                break
            time.sleep(0.5)
        output, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return output, proc.returncode
