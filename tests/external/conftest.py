"""Fixtures for ToolCallBench: its fetched wheels, a host venv with it installed (the "direct"
side of the fidelity test), and helpers that turn a driver's output folder into a cell."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import (
    CellRecord,
    InputReference,
    MatrixInfo,
    RunRecord,
    SourceState,
    utc_now,
)
from repro.bundle.redact import Redactor
from repro.core.config import PROJECT_ROOT
from repro.plan.planner import make_plan
from repro.spec.cells import Cell
from repro.spec.loading import load_matrix
from repro.spec.matrix import LoadedMatrix, Suite
from repro.spec.profiles import load_profiles
from repro.store.sources import MIRROR_ENV
from repro.suites.base import CellOutputs
from tests.external.tholos_support import PEERS, pack_standin, runner_suite
from tests.fixtures.synthetic import synthetic_system

MATRIX = PROJECT_ROOT / "matrix" / "toolcallbench-smoke.yaml"
DRIVER = PROJECT_ROOT / "images" / "toolcallbench" / "driver.py"
ALL_TASKS = [
    f"{group}-{n:02d}"
    for group, count in (("chain", 4), ("edit", 5), ("failure", 3), ("read", 5), ("run", 3))
    for n in range(1, count + 1)
]


def loaded() -> LoadedMatrix:
    return load_matrix(MATRIX)


def tcb_suite(ids: list[str] | None = None) -> Suite:
    suite = loaded().matrix.suites[0]
    return suite.model_copy(update={"ids": ids}) if ids is not None else suite


def tcb_cell(ids: list[str] | None = None) -> Cell:
    matrix = loaded()
    if ids is not None:
        suites = [tcb_suite(ids)]
        matrix = matrix.model_copy(update={"matrix": matrix.matrix.model_copy(update={"suites": suites})})
    return make_plan(matrix, "cpu", load_profiles().get("cpu")).cells[0]


@pytest.fixture(scope="session")
def tcb_wheels() -> Path:
    """Every wheel of images/toolcallbench/requirements.txt, fetched (PyPI, once) and verified."""
    from repro.suites.external.wheels import fetch_wheels

    suite = tcb_suite()
    assert suite.external is not None
    return fetch_wheels(suite.external)


@pytest.fixture(scope="session")
def tcb_python(tmp_path_factory, tcb_wheels) -> Path:
    """A venv on the host with exactly the locked wheels: ToolCallBench outside repro."""
    venv = tmp_path_factory.mktemp("tcb-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--find-links", str(tcb_wheels), "toolcallbench"],
        check=True,
    )
    return venv / "bin" / "python"


def run_direct(python: Path, work: Path, profile: str, tasks: list[str]) -> dict[str, tuple[bool, str]]:
    """ToolCallBench's own CLI with its scripted backend: task id -> (passed, its failure type)."""
    results = work / "results"
    command = [
        str(python),
        "-m",
        "toolcallbench",
        "run",
        "--backend",
        "scripted",
        "--profile",
        profile,
        "--repeats",
        "1",
    ]
    command += ["--results-dir", str(results), "--session", "direct", "--tasks", ",".join(tasks), "--root", str(work)]
    subprocess.run(command, cwd=work, check=True, capture_output=True)
    with sqlite3.connect(results / "results.sqlite") as db:
        return {
            task: (bool(passed), failure)
            for task, passed, failure in db.execute("SELECT task_id, passed, failure_type FROM runs")
        }


def run_driver(python: Path, out: Path, profile: str, tasks: list[str]) -> None:
    """repro's driver on the host (no container): what the image runs, for the fast tests."""
    command = [
        str(python),
        str(DRIVER),
        "--out",
        str(out),
        "--tasks",
        ",".join(tasks),
        "--backend",
        "scripted",
        "--profile",
        profile,
    ]
    subprocess.run(command, cwd=out, check=True, capture_output=True)


def record_inputs(bundle: Bundle, cell: Cell, references: list[InputReference]) -> None:
    """The references the suite's embed returned, in run.json `inputs` as a run records them (a
    run.json of the test's own when there is one, else a minimal one for this cell)."""
    if (bundle.dir / "run.json").is_file():
        run = BundleReader(bundle.dir).run()
    else:
        run = RunRecord(
            run_id=bundle.dir.name,
            status="complete",
            matrix=MatrixInfo(path="-", name="-", sha256="0" * 64),
            profile="cpu",
            profile_settings=load_profiles().get("cpu"),
            source=SourceState(commit=None, tree_clean=True),
            system=synthetic_system(),
            planned_cells=[cell.id],
            excluded_cells={},
            started_at=utc_now(),
        )
    bundle.write_run(run.model_copy(update={"inputs": [*run.inputs, *references]}))


def collect_cell(
    run_dir: Path,
    cell: Cell,
    out_dirs: list[Path],
    seconds: float = 60.0,
    redactor: Redactor | None = None,
    **fields: object,
) -> CellRecord:
    """What a run does with a cell's output folders: the raw files kept, the records normalised,
    the cell written (with the suite's wheel embedded beside it); `fields` complete its record."""
    from repro.containers import lifecycle as containers
    from repro.suites.registry import kind_of, select

    bundle = Bundle(run_dir, redactor or Redactor())
    kind = kind_of(cell.suite)
    selection = select(cell.suite)
    record_inputs(bundle, cell, kind.embed(bundle, cell.suite, selection))
    record = CellRecord(
        cell=cell,
        status="done",
        suite_ids=selection.ids,
        suite_sha256=selection.sha256,
        harness_seconds=seconds,
        **fields,  # type: ignore[arg-type]
    )
    writer = bundle.start_cell(cell.id)
    ended = [containers.Exit(code=0, seconds=seconds) for _ in out_dirs]
    return writer.finish(kind.collect(writer, record, selection, CellOutputs(out_dirs, ended)))


@pytest.fixture(scope="session")
def tholos_sources(tmp_path_factory) -> Iterator[tuple[Path, Path]]:
    """(the unpacked stand-in runner archive, the scenario folder), both fetched into the cache from
    a temporary mirror: the stand-in packed as its pin says, the scenario folder packed as `repro
    suites pack` does. The mirror stays set for the session."""
    from repro.suites.external.wheels import fetch_code
    from repro.suites.sources import fetch_suite, pack_folder, scenario_folder

    if not (PEERS / "tholos-bench").is_dir():
        pytest.skip(f"the Tholos-Bench scenario files are not at {PEERS} (set REPRO_TEST_PEERS)")
    mirror = tmp_path_factory.mktemp("mirror")
    suite = runner_suite()
    assert suite.source is not None and suite.external is not None
    pack_standin(mirror)
    assert pack_folder(PEERS / "tholos-bench", mirror / "tholos-bench.tar") == suite.source.sha256
    # the two archives by sha256, and the loose scenario files for what is found file by file
    with mirror_set(mirror, PEERS / "tholos-bench"):
        fetch_suite(suite.source)
        yield fetch_code(suite.external), scenario_folder(suite)


@contextlib.contextmanager
def mirror_set(*folders: Path) -> Iterator[None]:
    """REPRO_SOURCE_MIRROR names `folders` (this process and the repro commands it starts), as
    before once done."""
    previous = os.environ.get(MIRROR_ENV)
    os.environ[MIRROR_ENV] = os.pathsep.join(str(folder) for folder in folders)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(MIRROR_ENV, None)
        else:
            os.environ[MIRROR_ENV] = previous


@pytest.fixture(scope="module")
def lab_mirror(tmp_path_factory) -> Iterator[Path]:
    """The LAB stand-in packed as its pin says into a temporary mirror, set for the module's tests."""
    from tests.standins import pack_lab

    mirror = tmp_path_factory.mktemp("lab-mirror")
    pack_lab(mirror / "lab-standin-src.tar")
    with mirror_set(mirror):
        yield mirror


def run_lab_matrix(project: Path, home: Path, matrix: str) -> Path:
    """A LAB matrix through repro in a project snapshot (`suites fetch`, `images build`, `matrix run`
    on the cpu profile), each step asserted to succeed: the run's folder."""
    from tests.e2e.conftest import run_repro

    for step in (["suites", "fetch", matrix], ["images", "build", matrix, "--profile", "cpu", "--no-log"]):
        proc = run_repro(project, home, *step, timeout=3 * 3600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_repro(project, home, "matrix", "run", matrix, "--profile", "cpu", "--out", "results")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project / "results" / (project / "results" / "LATEST").read_text().strip()


def serving(container, ready: bytes, deadline_s: float = 60.0) -> None:
    """Wait until a served engine's container prints its `ready` line (it prints it once it listens)."""
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        if ready in container.logs():
            return
        container.reload()
        assert container.status in ("created", "running"), container.logs()[-2000:]
        time.sleep(0.2)
    raise AssertionError(f"the engine did not start (no {ready!r} in its log)")


def run_joined(
    client, engine_kwargs: dict, ready: bytes, harness: tuple[str, list[str], Path, list], cell, run_id: str
):
    """An engine container, served once its log prints `ready`, and the cell's harness container
    (`harness`: its image id, command, output folder and mounts) joined to its namespace as a
    cell's is, under the kind's entrypoint: how the harness ended and the settings it ran under.
    Both containers are removed however it ends."""
    from repro.containers import lifecycle as containers
    from repro.containers.sandbox import container_name, harness_kwargs, read_back
    from repro.suites.registry import kind_of

    image_id, command, out, mounts = harness
    with containers.started(client, engine_kwargs) as engine:
        serving(engine, ready)
        kwargs = harness_kwargs(
            image_id,
            engine.id,
            command,
            out,
            run_id=run_id,
            cell_id=cell.id,
            mounts=mounts,
            name=container_name(run_id, "harness"),
        )
        kwargs["entrypoint"] = kind_of(cell.suite).entrypoint(cell)
        with containers.started(client, kwargs) as container:
            return containers.wait(container, 600), read_back(container)
