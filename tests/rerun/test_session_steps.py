"""The rerun session driven without the CLI (repro.rerun.session.RerunSession), on the real
published smoke bundle: its steps happen in order and each is reported as it ends; the run is a
stand-in (`run_matrix=`) that "reruns" the bundle by copying it, so the check and the verdict are
the real ones and the verdict is REPRODUCED; a bundle the preflight refuses stops the session
before anything is fetched; the first full-disk error of a run is the one raised. No Docker.
(`repro rerun` itself, through the CLI, is tests/rerun/test_session.py's.)"""

from __future__ import annotations

import ast
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from repro.bundle.layout.writer import DiskFull
from repro.check.verdict import RunVerdict
from repro.core.errors import BadInput
from repro.rerun.archive import bundle_folder
from repro.rerun.prepare import RerunOptions, RerunPlan
from repro.rerun.session import REPORT, RerunSession
from repro.rerun.verdict import RerunVerdict
from repro.run.context import RunOptions
from repro.run.progress import RunProgress
from tests.rerun.conftest import ROOT, SMOKE
from tests.rerun.test_session import one_cell, tampered


class Recorded:
    """A report and a borrowed fetch and build in one: each writes down what it was told, in order."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, object]] = []
        self.plan: RerunPlan | None = None

    def prepared(self, plan: RerunPlan) -> None:
        self.steps.append(("prepared", [c.id for c in plan.cells]))
        self.plan = plan

    def fetch_models(self, matrix: Path, model_ids: list[str]) -> None:
        self.steps.append(("fetch models", model_ids))

    def fetch_suites(self, matrix: Path) -> None:
        self.steps.append(("fetch suites", matrix))

    def build_images(self, matrix: Path, profile: str) -> None:
        self.steps.append(("build images", profile))

    def run_progress(self) -> RunProgress:
        self.steps.append(("run progress", None))
        return RunProgress(Console(file=io.StringIO()))

    def ran(self, run_dir: Path) -> None:
        self.steps.append(("ran", run_dir))

    def checked(self, verdict: RunVerdict) -> None:
        self.steps.append(("checked", dict(verdict.counts)))

    def verified(self, verdict: RerunVerdict, report: Path) -> None:
        self.steps.append(("verified", report))

    def names(self) -> list[str]:
        return [name for name, _ in self.steps]


class CopyRun:
    """A stand-in for repro.run.runner.run_matrix: the bundle itself copied into OUT, as if its
    cells had been rerun and recorded exactly as before."""

    def __init__(self, bundle_run: Path, recorded: Recorded) -> None:
        self.bundle_run = bundle_run
        self.recorded = recorded
        self.options: RunOptions | None = None

    def __call__(self, options: RunOptions, progress: RunProgress) -> Path:
        self.recorded.steps.append(("run", options.only))
        self.options = options
        return Path(shutil.copytree(self.bundle_run, options.out / "rerun" / self.bundle_run.name))


def test_the_steps_happen_in_order_and_a_bundle_rerun_as_itself_is_reproduced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bundle_run = bundle_folder(SMOKE, out)  # where the session unpacks it again
    cell = one_cell(bundle_run)
    recorded = Recorded()
    run = CopyRun(bundle_run, recorded)
    session = RerunSession(RerunOptions(bundle=SMOKE, out=out, only=[cell]), recorded, recorded, run_matrix=run)
    verdict = session.run()
    assert recorded.names() == [
        "prepared",
        "fetch models",
        "fetch suites",
        "build images",
        "run progress",
        "run",
        "ran",
        "checked",
        "verified",
    ]
    steps = dict(recorded.steps)
    record = json.loads((bundle_run / "run.json").read_text())
    assert recorded.plan is not None and steps["prepared"] == steps["run"] == [cell]
    model = recorded.plan.cells[0].model.id
    assert steps["fetch models"] == [model] and cell.startswith(model)
    assert steps["build images"] == record["profile"]
    assert run.options is not None and run.options.out == out and not run.options.resume
    assert run.options.prompt_cache == record["profile_settings"]["cache_prompt"]  # the bundle's mode
    checked = steps["checked"]
    assert isinstance(checked, dict) and checked["VALID"] > 0 and not checked.get("INVALID")
    assert steps["ran"] == out / "rerun" / bundle_run.name and steps["verified"] == out / f"{REPORT}.md"
    assert verdict.rows and {row.verdict for row in verdict.rows} == {"REPRODUCED"} and verdict.exit_code == 0
    written = json.loads((out / f"{REPORT}.json").read_text())
    assert {row["verdict"] for row in written["report"]["verdicts"]} == {"REPRODUCED"}
    assert "| REPRODUCED | same |" in (out / f"{REPORT}.md").read_text()


def test_a_bundle_the_preflight_refuses_stops_the_session_before_anything_is_fetched(tmp_path: Path) -> None:
    recorded = Recorded()
    run = CopyRun(tmp_path, recorded)
    options = RerunOptions(bundle=tampered(tmp_path), out=tmp_path / "out")
    with pytest.raises(BadInput, match="the bundle is INVALID"):
        RerunSession(options, recorded, recorded, run_matrix=run).run()
    assert recorded.steps == [] and run.options is None
    assert not (tmp_path / "out" / f"{REPORT}.json").exists()


def test_the_run_step_raises_the_first_full_disk_error_of_the_run(tmp_path: Path) -> None:
    """A full disk stops a cell, and the run record written on the way out fails too: the cell's
    error is the one said."""

    def fills_up(options: RunOptions, progress: RunProgress) -> Path:
        try:
            raise DiskFull("no space left (writing cells/c/scenarios.jsonl)")
        except DiskFull:
            raise DiskFull("no space left (writing run.json)")  # noqa: B904 (the run's finally, as it is)

    cell = one_cell(bundle_folder(SMOKE, tmp_path / "peek"))
    recorded = Recorded()
    session = RerunSession(
        RerunOptions(bundle=SMOKE, out=tmp_path / "out", only=[cell]), recorded, recorded, run_matrix=fills_up
    )
    plan = session.prepare()
    with pytest.raises(DiskFull, match="scenarios.jsonl"):
        session.run_cells(plan)
    assert recorded.names() == ["prepared", "run progress"]


SHARED = {"printing", "steps", "vocabulary"}  # the modules of the commands that define no command


def test_the_rerun_command_runs_no_step_itself() -> None:
    """commands/rerun.py parses, hands the session what it borrows, and prints: it imports no other
    command module, only those that define no command (repro/commands/__init__.py)."""
    tree = ast.parse((ROOT / "repro" / "commands" / "rerun.py").read_text())
    imported = {
        alias.name if node.module == "repro.commands" else node.module.removeprefix("repro.commands.")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro.commands")
        for alias in node.names
    }
    assert imported <= SHARED, imported - SHARED
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert not names & {"run_matrix", "check_run", "verdict_of", "prepare_rerun", "atomic_write"}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_the_shared_modules_of_the_commands_define_no_command(name: str) -> None:
    text = (ROOT / "repro" / "commands" / f"{name}.py").read_text()
    assert "@app.command" not in text and "Typer(" not in text.replace("class Typer(", "")


def test_no_command_module_imports_another() -> None:
    """Each command module imports, of the commands, only the shared modules."""
    wrong = []
    for path in sorted((ROOT / "repro" / "commands").glob("*.py")):
        if path.stem in SHARED or path.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro.commands"):
                found = {a.name for a in node.names} if node.module == "repro.commands" else {node.module.split(".")[2]}
                wrong += [f"{path.name} imports {module}" for module in sorted(found - SHARED)]
    assert wrong == []
