"""Check rules that compare a bundle's own copies with the project's files at the recorded commit.

A bundle embeds its matrix, its scenario suites and its profile's settings; the rules of
repro.check recompute from those copies, which a forger can weaken and rehash. The project's
history is a second witness: when the reviewer's checkout holds the recorded commit, the profile
in `run.json` must be `matrix/profiles.yaml`'s entry at that commit (`profile-at-commit`), the
matrix file the run names must be the embedded one when the commit has it (`matrix-at-commit`),
the harness tree digest run.json records must be the one the commit's harness/ and pyproject.toml
give (`harness-at-commit`: verify compares our harness by it), and each suite's scenario files
at that commit must give the sha256 the cell records (`suite-at-commit`). When the checkout lacks
the commit, nothing is compared and the verdict says so (`RunVerdict.notes`); a suite pinned by
its own archive (`source`) is pinned already.

A matrix kept outside the project (`paths_from: matrix`, run.json `author`) has a second
repository: its author's. Its matrix, its profiles file and its scenario folders are compared with
that repository at the recorded commit when the reviewer gives it (`repro check --source DIR`),
under the same three rules; without it, with the bundle's embedded copies and their recorded
sha256 only, and the verdict says which (`author_notes`).

Files are read with `git show` and `git archive`, never checked out: the work tree is untouched.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import tempfile
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from repro.bundle.records import AuthorSource, RunRecord
from repro.core import config
from repro.core.errors import BadInput, ReproError
from repro.core.git import git, has_commit
from repro.core.yamlsource import MAX_YAML_BYTES
from repro.spec.matrix import Suite
from repro.spec.profiles import Profile, Profiles, load_profiles
from repro.suites.registry import kind_of, select

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence, RunEvidence

MAX_ARCHIVE_BYTES = 256 * 1024**2
PROFILES_PATH = "matrix/profiles.yaml"


def project_root() -> Path:
    """The checkout whose history is compared with (the one this repro runs from)."""
    return config.PROJECT_ROOT


def at_commit(ev: RunEvidence) -> str | None:
    """The recorded commit when the checkout has it, else None."""
    commit = ev.run.source.commit
    return commit if commit and has_commit(project_root(), commit) else None


def commit_notes(ev: RunEvidence) -> list[str]:
    """What the verdict says when the project's files at the commit cannot be compared."""
    commit = ev.run.source.commit
    if commit is None or at_commit(ev):
        return []
    return [
        f"commit {commit[:12]} is not in this checkout ({project_root()}): the profile, "
        "the matrix and the suites were checked against the bundle's own copies only (fetch the commit to compare "
        "them with the project's files)"
    ]


def rule_profile_at_commit(ev: RunEvidence) -> list[str]:
    """The run's profile is its entry in the matrix's own profiles file when that file has it,
    else in the project's profiles at the commit."""
    own = author_profile_problems(ev)
    if own is not None:
        return own
    commit = at_commit(ev)
    if commit is None:
        return []
    text = git(project_root(), "show", f"{commit}:{PROFILES_PATH}")
    if text is None:
        return [f"{PROFILES_PATH} does not exist at commit {commit[:12]}"]
    try:
        profiles = profiles_from(text)
    except BadInput as error:
        return [f"{PROFILES_PATH} at commit {commit[:12]} does not load: {error}"]
    at = profiles.profiles.get(ev.run.profile)
    if at is None:
        return [f"profile {ev.run.profile} is not in {PROFILES_PATH} at commit {commit[:12]}"]
    differ = profile_differences(at, ev.run)
    if differ:
        return [
            f"profile {ev.run.profile} in run.json differs from {PROFILES_PATH} at commit {commit[:12]} "
            f"({', '.join(differ)})"
        ]
    return []


def profile_differences(at: Profile, run: RunRecord) -> list[str]:
    """The settings in which run.json's profile is not `at` as the run ran it (its --prompt-cache)."""
    ran, recorded = at.with_prompt_cache(run.prompt_cache).model_dump(), run.profile_settings.model_dump()
    return sorted(key for key, value in ran.items() if recorded.get(key) != value)


def profiles_from(text: bytes) -> Profiles:
    with tempfile.TemporaryDirectory(prefix="repro-check-") as folder:
        path = Path(folder) / "profiles.yaml"
        path.write_bytes(text)
        return load_profiles(path)


def rule_matrix_at_commit(ev: RunEvidence) -> list[str]:
    """The matrix the run names, when the commit holds a file at that path, is the embedded one
    (an author's matrix: the one in the author's repository at its commit, when given)."""
    author = ev.run.author
    if author is not None:
        return author_file_problems(
            ev, author, "matrix", author.matrix.path, author.matrix.sha256, ev.run.matrix.sha256
        )
    commit = at_commit(ev)
    path = PurePosixPath(ev.run.matrix.path)
    if commit is None or path.is_absolute() or ".." in path.parts:
        return []
    text = git(project_root(), "show", f"{commit}:{path}")
    if text is None or hashlib.sha256(text).hexdigest() == ev.run.matrix.sha256:
        return []
    return [
        f"the embedded matrix is not {path} at commit {commit[:12]} (sha256 {hashlib.sha256(text).hexdigest()[:12]})"
    ]


def rule_harness_at_commit(ev: RunEvidence) -> list[str]:
    """The harness tree digest run.json records is the one the commit's files give (harness/ and
    pyproject.toml, as repro.store.images computes it): verify compares our harness by this digest,
    so it is recomputed wherever the checkout holds the commit, never taken on the bundle's word."""
    commit = at_commit(ev)
    if commit is None or not ev.run.source.tree_clean or ev.run.source.harness_digest is None:
        return []
    found = harness_digest_at(project_root(), commit)
    if found is None:  # a checkout without harness/ at that commit: nothing to compare with
        return []
    if found.startswith("error: "):
        return [f"the harness tree cannot be recomputed at commit {commit[:12]}: {found[7:]}"]
    if found != ev.run.source.harness_digest:
        return [
            f"run.json records harness tree digest {ev.run.source.harness_digest[:12]}, the commit "
            f"{commit[:12]}'s files give {found[:12]}"
        ]
    return []


@cache
def harness_digest_at(root: Path, commit: str) -> str | None:
    """The harness tree digest of the commit's files, "error: why", or None where the commit has
    no harness/; once per commit."""
    from repro.store.images import harness_source_digest

    if git(root, "cat-file", "-e", f"{commit}:harness") is None:
        return None
    archive = git(root, "archive", "--format=tar", commit, "--", "harness", "pyproject.toml")
    if archive is None or len(archive) > MAX_ARCHIVE_BYTES:
        return "error: harness/ and pyproject.toml cannot be read at the commit"
    with tempfile.TemporaryDirectory(prefix="repro-harness-") as scratch:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch, filter="data")
        try:
            return harness_source_digest(Path(scratch))
        except ReproError as error:
            return f"error: {error}"


def rule_suite_at_commit(ev: CellEvidence) -> list[str]:
    """The cell's suite, selected from the project's files at the commit, gives its sha256."""
    commit, suite = at_commit(ev), ev.record.cell.suite
    author = ev.run.author
    if author is not None and kind_of(suite).author_files(suite):
        return author_suite_problems(ev, author)
    if commit is None or suite.source is not None:
        return []
    found = suite_sha256_at(project_root(), commit, suite.model_dump_json())
    if found.startswith("error: "):
        return [f"suite {suite.id} cannot be selected at commit {commit[:12]}: {found[7:]}"]
    if found != ev.record.suite_sha256:
        return [
            f"suite {suite.id} at commit {commit[:12]} has sha256 {found[:12]}, the cell records "
            f"{str(ev.record.suite_sha256)[:12]}"
        ]
    return []


@cache
def suite_sha256_at(root: Path, commit: str, suite_json: str) -> str:
    """The suite's sha256 from the commit's files (its folder and the fixtures beside it), or
    "error: why"; once per suite and commit."""
    suite = Suite.model_validate_json(suite_json)
    folder = PurePosixPath(suite.path)
    if folder.is_absolute() or ".." in folder.parts:
        return f"error: path {suite.path} is outside the project"
    paths = [
        str(p) for p in (folder, folder.parent / "fixtures") if git(root, "cat-file", "-e", f"{commit}:{p}") is not None
    ]
    archive = git(root, "archive", "--format=tar", commit, "--", *paths) if paths else None
    if archive is None or len(archive) > MAX_ARCHIVE_BYTES:
        return f"error: {suite.path} is not in the commit"
    with tempfile.TemporaryDirectory(prefix="repro-suite-") as scratch:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch, filter="data")
        try:
            return select(suite, root=Path(scratch)).sha256
        except BadInput as error:
            return f"error: {error}"


# ---------------------------------------------------------------- the author's repository


def author_commit(ev: RunEvidence) -> str | None:
    """The author's recorded commit when --source was given and holds it, else None."""
    author = ev.run.author
    if author is None or author.commit is None or ev.author_repo is None:
        return None
    return author.commit if has_commit(ev.author_repo, author.commit) else None


def author_notes(ev: RunEvidence) -> list[str]:
    """What the author's files (a matrix kept outside the project) were compared with."""
    author = ev.run.author
    if author is None:
        return []
    if author.commit is None:
        return [
            "the author's files were not in a git repository at run time: embedded copies only (their recorded sha256)"
        ]
    commit = author_commit(ev)
    if commit is not None:
        return [f"the author's matrix, profiles and scenarios: compared with {ev.author_repo} at {commit[:12]}"]
    if ev.author_repo is None:
        return [
            "the author's matrix, profiles and scenarios: embedded copies only: author repository not given "
            f"(--source DIR compares them at {author.commit[:12]})"
        ]
    return [
        "the author's matrix, profiles and scenarios: embedded copies only: "
        f"commit {author.commit[:12]} is not in {ev.author_repo}"
    ]


def repo_path(author: AuthorSource, path: str) -> str | None:
    """`path` of the matrix's folder as a path of the author's repository, or None when run.json
    names something that is not a plain relative path (absolute, `..`, an option, a control character)."""
    joined = PurePosixPath(author.folder, path) if author.folder else PurePosixPath(path)
    text = joined.as_posix()
    if (
        joined.is_absolute()
        or ".." in joined.parts
        or text.startswith("-")
        or not text
        or any(ord(c) < 32 for c in text)
    ):
        return None
    return text


def author_file_problems(
    ev: RunEvidence, author: AuthorSource, what: str, path: str, recorded: str, embedded: str
) -> list[str]:
    """An author's file: its recorded sha256 is the embedded copy's, and (with --source) the
    author's repository at the commit holds those bytes at its path."""
    if recorded != embedded:
        return [
            f"the author's {what} {path} is recorded with sha256 {recorded[:12]}, the embedded copy has {embedded[:12]}"
        ]
    commit, where = author_commit(ev), repo_path(author, path)
    if commit is None:
        return []
    if where is None:
        return [f"the author's {what} path {path[:80]!r} is not a path inside the author's repository"]
    text = git(ev.author_repo or Path(), "show", f"{commit}:{where}")
    if text is None:
        return [f"the author's {what} {where} does not exist at commit {commit[:12]} of {ev.author_repo}"]
    if len(text) > MAX_YAML_BYTES or hashlib.sha256(text).hexdigest() != embedded:
        return [
            f"the embedded {what} is not {where} at commit {commit[:12]} of {ev.author_repo} "
            f"(sha256 {hashlib.sha256(text).hexdigest()[:12]})"
        ]
    return []


def author_profile_problems(ev: RunEvidence) -> list[str] | None:
    """The run's profile against the matrix's own profiles file (its embedded copy and, with
    --source, the file at the author's commit); None when the run's profile is not in that file
    (it is the project's, checked against the project's profiles)."""
    author = ev.run.author
    own = author.profiles_file if author is not None else None
    if author is None or own is None:
        return None
    try:
        raw = ev.bundle.author_profiles()
        profiles = profiles_from(raw)
    except BadInput as error:
        return [f"the author's profiles file cannot be read from the bundle: {error}"]
    at = profiles.profiles.get(ev.run.profile)
    if at is None:
        return None
    problems = author_file_problems(ev, author, "profiles file", own.path, own.sha256, hashlib.sha256(raw).hexdigest())
    differ = profile_differences(at, ev.run)
    if differ:
        problems.append(
            f"profile {ev.run.profile} in run.json differs from the author's profiles file {own.path} "
            f"({', '.join(differ)})"
        )
    return problems


def author_suite_problems(ev: CellEvidence, author: AuthorSource) -> list[str]:
    """An author's suite, selected from the author's repository at the commit (with --source),
    gives the sha256 the cell records; without it, suite-recomputed holds the embedded copy to it."""
    commit, suite = author_commit(ev), ev.record.cell.suite
    if commit is None:
        return []
    where = repo_path(author, suite.path)
    if where is None:
        return [f"suite {suite.id}: path {suite.path[:80]!r} is not a path inside the author's repository"]
    found = suite_sha256_at(
        ev.author_repo or Path(), commit, suite.model_copy(update={"path": where}).model_dump_json()
    )
    if found.startswith("error: "):
        return [f"suite {suite.id} cannot be selected at commit {commit[:12]} of {ev.author_repo}: {found[7:]}"]
    if found != ev.record.suite_sha256:
        return [
            f"suite {suite.id} at commit {commit[:12]} of {ev.author_repo} has sha256 {found[:12]}, "
            f"the cell records {str(ev.record.suite_sha256)[:12]}"
        ]
    return []
