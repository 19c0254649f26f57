"""`repro rerun BUNDLE`, its first step: from someone's bundle to what the rerun needs, before
anything is fetched.

`prepare_rerun` opens the bundle (repro.rerun.archive), checks it (`repro check`'s own
`check_run`, and its signature when asked): an INVALID bundle is refused with its reasons. It then
rebuilds the matrix the bundle ran from what the bundle embeds (`source_matrix`), plans the
bundle's cells on the profile (its VALID cells, and its EXCLUDED cells, which the plan excludes
again with the reason or runs again when only the latency gate had excluded them; `--only`
narrows) and lays this machine's setup beside the bundle's (repro.rerun.preflight). The bundle is
read through one `BundleReader`, the one the check reads it through, and its run record is read
here once and handed to each step after the check. Nothing is fetched, built or booted here: the
session's next steps do that (repro.rerun.session).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import write_in
from repro.bundle.provenance import source_state, system_description
from repro.bundle.records import RunRecord
from repro.bundle.signers import require_signed
from repro.check.verdict import RunVerdict, check_run
from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.core.terminal import shown
from repro.plan.planner import Plan, stored_plan
from repro.rerun.archive import bundle_folder, shard_run
from repro.rerun.preflight import SetupRow, bundle_side, compare_setups, machine_side, refuse_unservable
from repro.spec.cells import Cell
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.matrix import LoadedMatrix
from repro.spec.profiles import PromptCache
from repro.store.models import is_stored
from repro.suites.fetching import fetch_run_references
from repro.suites.registry import kind_of

RERUNS = Path("results") / "reruns"  # the default --out: OUT/<bundle run id>/ (results/ is ignored)


class RerunOptions(BaseModel):
    bundle: Path
    out: Path | None = None
    profile: str | None = None
    only: list[str] = []
    allowed_signers: Path | None = None
    source: Path | None = None  # the author's repository (repro check --source)


class RerunPlan(BaseModel):
    """What the rerun will do, decided before anything is fetched or booted."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path
    record: RunRecord
    check: RunVerdict
    out: Path
    matrix: Path
    loaded: LoadedMatrix
    profile: str
    plan: Plan
    cells: list[Cell]
    again_excluded: dict[str, str] = {}  # bundle cells the plan excludes on this profile: why
    setup: list[SetupRow]
    prompt_cache: PromptCache  # the bundle's engine prompt cache, which the rerun runs with (--prompt-cache)


def default_out(given: Path) -> Path:
    """results/reruns/<the bundle's name without .tar.gz>/."""
    return RERUNS / given.name.removesuffix(".tar.gz").removesuffix(".tgz")


def prepare_rerun(options: RerunOptions, author_repo: Path | None = None) -> RerunPlan:
    """The bundle opened and checked, its matrix rebuilt, its cells planned here and the setup
    table laid out; one reader for the check and the rest, and the run record read once here."""
    out = options.out or default_out(options.bundle)
    run_dir = shard_run(bundle_folder(options.bundle, out), options.only)
    fetch_references(run_dir)
    reader = BundleReader(run_dir)
    check = checked(reader, options.allowed_signers, author_repo)
    record = reader.run()
    matrix = source_matrix(reader, record, out)
    loaded, profiles = load_matrix_and_profiles(matrix)
    profile_name = options.profile or record.profile
    profile = profiles.get(profile_name).with_prompt_cache(record.profile_settings.cache_prompt)  # the bundle's mode
    system = system_description()
    refuse_unservable(profile_name, profile, system)
    plan = stored_plan(loaded, profile_name, profile)[0]
    cells, again = bundle_cells(plan, check, options.only)
    refuse_unfetchable(loaded, cells)
    here = machine_side(source_state(), system, profile_name, profile, cells, suite_hashes(loaded, cells))
    setup = compare_setups(bundle_side(record, [reader.cell(c.id) for c in cells if reader.has_cell(c.id)]), here)
    return RerunPlan(
        run_dir=run_dir,
        record=record,
        check=check,
        out=out,
        matrix=matrix,
        loaded=loaded,
        profile=profile_name,
        plan=plan,
        cells=cells,
        again_excluded=again,
        setup=setup,
        prompt_cache=profile.cache_prompt,
    )


def checked(reader: BundleReader, allowed_signers: Path | None, author_repo: Path | None) -> RunVerdict:
    """`repro check` on the bundle, through the reader the rerun goes on with: INVALID (or
    unsigned, when a signer is required) is refused."""
    run_dir = reader.dir
    if allowed_signers is not None:
        require_signed([run_dir], allowed_signers)
    verdict = check_run(run_dir, author_repo=author_repo, bundle=reader)
    if verdict.failed:
        reasons = [f"{p.rule}: {p.text}" for p in verdict.run_problems] + [
            f"{c.cell_id}: {r}" for c in verdict.invalid for r in c.reasons
        ]
        first = (
            f"{shown(run_dir.name)}: the bundle is INVALID ({len(verdict.invalid)} cell(s), "
            f"{len(verdict.run_problems)} run problem(s)); nothing is rerun"
        )
        raise BadInput(first, lines=[first, *(f"  {shown(line)}" for line in reasons[:20])])
    return verdict


def fetch_references(run_dir: Path) -> None:
    """What the bundle references (another project's files), fetched where this machine can reach
    its pinned source, before the bundle is checked; what stays out of reach leaves the cells that
    need it UNCHECKED, and the check names it."""
    fetch_run_references(run_dir, log=lambda line: None)


def bundle_cells(plan: Plan, check: RunVerdict, only: list[str]) -> tuple[list[Cell], dict[str, str]]:
    """The bundle's VALID and EXCLUDED cells (or `--only` of them) that the plan runs here, and
    those it excludes again, with the reason."""
    held = {c.cell_id: c.verdict for c in check.cells if c.verdict in ("VALID", "EXCLUDED")}
    unknown = sorted(set(only) - set(held))
    unchecked = {c.cell_id: c.reasons for c in check.cells if c.verdict == "UNCHECKED" and c.cell_id in unknown}
    if unchecked:
        cell_id, reasons = next(iter(unchecked.items()))
        raise BadInput(
            f"--only {shown(cell_id)}: UNCHECKED here, so there is nothing checked to rerun it against: "
            f"{shown(reasons[0] if reasons else 'an input is not at hand')}"
        )
    if unknown:
        raise BadInput(
            f"--only {shown(unknown[0])}: not a VALID or EXCLUDED cell of the bundle (it has: "
            f"{shown(', '.join(sorted(held))[:300])})"
        )
    wanted = {slug(cid) for cid in set(only) or set(held)}
    cells = [c for c in plan.cells if slug(c.id) in wanted]
    again = {c.id: c.excluded or "excluded" for c in plan.excluded if slug(c.id) in wanted}
    missing = sorted(wanted - {slug(c.id) for c in cells} - {slug(cid) for cid in again})
    if missing:
        raise BadInput(
            f"cell {shown(missing[0])} of the bundle is not in the plan recomputed from its matrix on this profile"
        )
    if not cells:
        raise BadInput(
            "nothing to rerun: every asked-for cell is excluded on this profile"
            + "".join(f"; {shown(k)}: {shown(v)}" for k, v in again.items())
        )
    return cells, again


def slug(cell_id: str) -> str:
    """A cell's id without its hash: model, engine, protocol, suite and repeat. On another profile
    (`--profile cpu-1t`) the same cell has another hash, since the profile enters it."""
    return cell_id.rsplit("-", 1)[0]


def source_matrix(reader: BundleReader, record: RunRecord, out: Path) -> Path:
    """The matrix to run: the project's own file when it is byte for byte the bundle's, else the
    bundle's copy; an author's matrix (paths_from: matrix) with its profiles file and scenario
    folders rebuilt from the bundle beside it, outside the project tree."""
    if record.author is None:
        own = PROJECT_ROOT / record.matrix.path
        if own.is_file() and not own.is_symlink() and sha256_file(own) == record.matrix.sha256:
            return Path(os.path.relpath(own))
        return copy_matrix(reader, out / "source" / "matrix.yaml")
    folder = author_folder(out, record.run_id)
    matrix = copy_matrix(reader, folder / record.author.matrix.path)
    if record.author.profiles_file is not None:
        write_in(folder, folder / record.author.profiles_file.path, reader.author_profiles())
    embedded = load_matrix(reader.matrix_path(), embedded=True)
    for suite in embedded.matrix.suites:
        if kind_of(suite).author_files(suite):
            copy_suite(reader.suite_dir(suite.id), folder / suite.path, folder)
    return matrix


def author_folder(out: Path, run_id: str) -> Path:
    """Where an author's files are rebuilt: OUT/source, or the cache when OUT is in the project
    (a paths_from: matrix matrix must lie outside it); emptied first."""
    inside = out.resolve() == PROJECT_ROOT or PROJECT_ROOT in out.resolve().parents
    folder = (cache_dir() / "reruns" / run_id if inside else out.resolve()) / "source"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def copy_matrix(reader: BundleReader, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    write_in(target.parent, target, reader.matrix_path().read_bytes())
    return target


def copy_suite(embedded: Path, scenarios: Path, folder: Path) -> None:
    """A suite's embedded scenario files into its scenario folder, its fixtures beside it."""
    for part, target in (("scenarios", scenarios), ("fixtures", scenarios.parent / "fixtures")):
        for path in sorted((embedded / part).rglob("*")):
            if path.is_file() and not path.is_symlink():
                write_in(folder, target / path.relative_to(embedded / part), path.read_bytes())


def suite_hashes(loaded: LoadedMatrix, cells: list[Cell]) -> dict[str, str | None]:
    """Each planned suite's sha256 as selected here (None when its files are not fetched yet)."""
    hashes: dict[str, str | None] = {}
    for cell in cells:
        try:
            hashes[cell.suite.id] = kind_of(cell.suite).select(cell.suite, loaded.suite_root(cell.suite)).sha256
        except BadInput:
            hashes[cell.suite.id] = None
    return hashes


def refuse_unfetchable(loaded: LoadedMatrix, cells: list[Cell]) -> None:
    """A model not in the store whose every source is a local path that is not here: one line."""
    for model in {c.model.id: c.model for c in cells}.values():
        if is_stored(model) or any(s.path is None for s in model.sources):
            continue
        if not any((loaded.root / str(s.path)).is_file() for s in model.sources):
            raise BadInput(
                f"model {shown(model.id)}: not in the store, and its only sources are local files not on this "
                "machine; put it in the store (repro models fetch from a copy)"
            )
