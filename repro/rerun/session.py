"""`repro rerun BUNDLE`, step by step: `RerunSession`.

A rerun is six steps, each a method a test can call on its own, and `run()` takes them in order:

1. `prepare`: the bundle opened and checked (an INVALID bundle is refused), its matrix rebuilt, its
   cells planned here and the same-setup table laid out (repro.rerun.prepare);
2. `fetch`: the models of the cells to rerun, and the matrix's suites;
3. `build`: the images the matrix needs on the profile;
4. `run_cells`: `matrix run` of exactly the bundle's cells into OUT (`--resume` finishes one);
5. `check`: `repro check` of the rerun;
6. `verify`: the rerun against the bundle, row by row and scenario by scenario
   (repro.rerun.verdict), written to OUT/rerun-report.md and .json.

The session prints nothing: it tells a `RerunReport` what each step found, and the command prints
that (repro.commands.rerun). Fetching and building are borrowed (`FetchAndBuild`): `repro models
fetch`, `suites fetch` and `images build` do that work, printing as they go, in command modules,
which this layer does not import, so the caller hands them in. The run is repro.run.runner's
`run_matrix` unless the caller hands in another (`run_matrix=`: a test without Docker does).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from repro.check.verdict import RunVerdict, check_run
from repro.core.files import atomic_write
from repro.rerun.prepare import RerunOptions, RerunPlan, prepare_rerun
from repro.rerun.verdict import RerunVerdict, verdict_of

if TYPE_CHECKING:
    from repro.run.context import RunOptions
    from repro.run.progress import RunProgress

REPORT = "rerun-report"  # OUT/rerun-report.md and .json, beside the rerun's bundle

RunMatrix = Callable[["RunOptions", "RunProgress"], Path]  # repro.run.runner.run_matrix, or a stand-in


class RerunReport(Protocol):
    """What the session says as its steps end; the command prints it."""

    def prepared(self, plan: RerunPlan) -> None:
        """The bundle, its cells and the same-setup table, before anything is fetched or booted."""

    def run_progress(self) -> RunProgress:
        """The display the run tells about each cell and scenario while it runs."""

    def ran(self, run_dir: Path) -> None:
        """The rerun's bundle, written to `run_dir`."""

    def checked(self, verdict: RunVerdict) -> None:
        """`repro check`'s verdict on the rerun."""

    def verified(self, verdict: RerunVerdict, report: Path) -> None:
        """The verdict against the bundle, and its report (the .md; the .json beside it)."""


class FetchAndBuild(Protocol):
    """The work the fetch and build steps borrow: what `repro models fetch`, `repro suites fetch`
    and `repro images build` do, on the rebuilt matrix."""

    def fetch_models(self, matrix: Path, model_ids: list[str]) -> None:
        """Fetch and verify these models of the matrix into the store."""

    def fetch_suites(self, matrix: Path) -> None:
        """Fetch and verify the matrix's pinned suites."""

    def build_images(self, matrix: Path, profile: str) -> None:
        """Build (or find up to date) the images the matrix needs on the profile."""


class RerunSession:
    """One rerun of one bundle, from the reviewer's flags to the verdict."""

    def __init__(
        self,
        options: RerunOptions,
        report: RerunReport,
        borrowed: FetchAndBuild,
        *,
        accepted: frozenset[str] = frozenset(),
        resume: bool = False,
        author_repo: Path | None = None,
        run_matrix: RunMatrix | None = None,
    ) -> None:
        self.options = options
        self.report = report
        self.borrowed = borrowed
        self.accepted = accepted  # setup differences accepted by name (--accept)
        self.resume = resume
        self.author_repo = author_repo  # the top of --source's git repository
        self.run_matrix = run_matrix

    def run(self) -> RerunVerdict:
        """Every step in order; the verdict (its `exit_code` is the command's)."""
        plan = self.prepare()
        self.fetch(plan)
        self.build(plan)
        run_dir = self.run_cells(plan)
        self.check(run_dir)
        return self.verify(plan, run_dir)

    def prepare(self) -> RerunPlan:
        plan = prepare_rerun(self.options, self.author_repo)
        self.report.prepared(plan)
        return plan

    def fetch(self, plan: RerunPlan) -> None:
        self.borrowed.fetch_models(plan.matrix, sorted({c.model.id for c in plan.cells}))
        self.borrowed.fetch_suites(plan.matrix)

    def build(self, plan: RerunPlan) -> None:
        self.borrowed.build_images(plan.matrix, plan.profile)

    def run_cells(self, plan: RerunPlan) -> Path:
        """Exactly the bundle's cells, on its profile and with its prompt cache; the first
        full-disk error of the run where the disk filled up."""
        from repro.bundle.layout.writer import DiskFull
        from repro.run.context import RunOptions
        from repro.run.runner import first_disk_full, run_matrix

        options = RunOptions(
            matrix=plan.matrix,
            profile=plan.profile,
            out=plan.out,
            resume=self.resume,
            only=[c.id for c in plan.cells],
            prompt_cache=plan.prompt_cache,
        )
        try:
            run_dir = (self.run_matrix or run_matrix)(options, self.report.run_progress())
        except DiskFull as error:
            raise first_disk_full(error) from None
        self.report.ran(run_dir)
        return run_dir

    def check(self, run_dir: Path) -> RunVerdict:
        verdict = check_run(run_dir)
        self.report.checked(verdict)
        return verdict

    def verify(self, plan: RerunPlan, run_dir: Path) -> RerunVerdict:
        """The rerun against the bundle, written beside the rerun as OUT/rerun-report.md and .json."""
        verdict = verdict_of(plan.run_dir, [run_dir], self.accepted)
        report = plan.out / f"{REPORT}.md"
        atomic_write(report, verdict.markdown().encode())
        atomic_write(plan.out / f"{REPORT}.json", verdict.model_dump_json(indent=2).encode())
        self.report.verified(verdict, report)
        return verdict
