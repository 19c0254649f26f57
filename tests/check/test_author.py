"""A matrix kept outside the project (`paths_from: matrix`): its profiles and scenarios beside it
in its author's own git repository, planned, recorded and checked without a fork of repro.

The author's repository is a real git repository in a temporary folder outside the project; the
bundles are synthetic (tests.fixtures.synthetic, no engine), the real run is tests/e2e/test_author.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.bundle.layout.names import AUTHOR_PROFILES_COPY, RUN_FILE
from repro.bundle.provenance import author_source
from repro.bundle.records import AuthorSource
from repro.bundle.redact import Redactor
from repro.check.verdict import RunVerdict, check_run
from repro.core.errors import BadInput
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.matrix import LoadedMatrix
from repro.spec.profiles import load_profiles
from tests.check.test_forgeries import edit_run, rehash
from tests.fixtures.synthetic import CANARY, ROOT, SCENARIO_IDS, smoke_variant, write_bundle

GIT = ["git", "-c", "user.name=author", "-c", "user.email=author@paper.invalid"]
PROFILE = "author-laptop"


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def scenario_file(scenario_id: str) -> Path:
    return next(ROOT.glob(f"scenarios/*/{scenario_id}.json"))


@pytest.fixture
def author_repo(tmp_path: Path) -> Path:
    """The author's paper repository: paper.tex at its top, the benchmark in bench/ (matrix,
    profiles file, three scenarios and the fixtures they use), committed."""
    repo = tmp_path / "paper"
    bench = repo / "bench"
    for scenario_id in SCENARIO_IDS:
        source = scenario_file(scenario_id)
        (bench / "scenarios" / source.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, bench / "scenarios" / source.parent.name / source.name)
    shutil.copytree(ROOT / "fixtures", bench / "fixtures")
    cpu = load_profiles().get("cpu").model_dump(mode="json")
    (bench / "profiles.yaml").write_text(
        yaml.safe_dump({"profiles": {PROFILE: {**cpu, "description": "The author's laptop."}}})
    )
    raw, _ = smoke_variant(paths_from="matrix", profiles_file="profiles.yaml", profiles=[PROFILE])
    (bench / "bench.yaml").write_bytes(raw)
    (repo / "paper.tex").write_text("\\documentclass{article}\n")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "the benchmark")
    return repo


def loaded_author(repo: Path) -> LoadedMatrix:
    return load_matrix_and_profiles(repo / "bench" / "bench.yaml")[0]


def author_bundle(run_dir: Path, repo: Path, **author: object) -> Path:
    """A VALID bundle of the author's matrix on the author's profile, as a run from `repo` records it."""
    loaded, profiles = load_matrix_and_profiles(repo / "bench" / "bench.yaml")
    record = author_source(loaded)
    assert record is not None
    return write_bundle(
        run_dir,
        profile_name=PROFILE,
        variant=((repo / "bench" / "bench.yaml").read_bytes(), loaded),
        profile=profiles.get(PROFILE),
        author=record.model_copy(update=author),
        author_profiles=(repo / "bench" / "profiles.yaml").read_bytes(),
    )


def checked(run: Path, source: Path | None = None) -> RunVerdict:
    return check_run(run, Redactor(CANARY), author_repo=source)


def reasons(verdict: RunVerdict) -> list[str]:
    return [f"{p.rule}: {p.text}" for cell in verdict.cells for p in cell.problems]


# ---------------------------------------------------------------- loading and planning


def test_the_matrix_takes_its_scenarios_and_profiles_from_its_own_folder(author_repo: Path) -> None:
    loaded, profiles = load_matrix_and_profiles(author_repo / "bench" / "bench.yaml")
    assert loaded.outside and loaded.root == (author_repo / "bench").resolve()
    assert PROFILE in profiles.profiles and "cpu" in profiles.profiles
    suite = loaded.matrix.suites[0]
    assert loaded.suite_root(suite) == loaded.root
    assert main(["matrix", "plan", str(author_repo / "bench" / "bench.yaml"), "--profile", PROFILE]) == 0
    assert main(["matrix", "validate", str(author_repo / "bench" / "bench.yaml")]) == 0


def test_the_project_paths_stay_the_default(tmp_path: Path) -> None:
    """A matrix anywhere without paths_from names the project's files, as before."""
    raw, _ = smoke_variant()
    (tmp_path / "m.yaml").write_bytes(raw)
    loaded = load_matrix(tmp_path / "m.yaml")
    assert not loaded.outside and loaded.root == ROOT


@pytest.mark.parametrize(
    "change,expected",
    [
        (
            lambda d: d["suites"][0].update(path="../elsewhere"),
            "suites[0].path: '../elsewhere' leaves the matrix: paths must stay inside the matrix folder",
        ),
        (
            lambda d: d.update(profiles_file="/etc/profiles.yaml"),
            "profiles_file '/etc/profiles.yaml' leaves the matrix",
        ),
    ],
    ids=["suite-up", "profiles-absolute"],
)
def test_own_paths_stay_in_the_matrix_folder(author_repo: Path, change, expected: str) -> None:
    path = author_repo / "bench" / "bench.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BadInput) as caught:
        load_matrix_and_profiles(path)
    assert any(expected in line for line in [str(caught.value), *caught.value.lines]), caught.value.lines


def test_a_profile_the_project_has_already_is_refused(author_repo: Path) -> None:
    profiles = author_repo / "bench" / "profiles.yaml"
    profiles.write_text(profiles.read_text().replace(PROFILE, "cpu"))
    with pytest.raises(BadInput, match="names profile\\(s\\) the project has already: cpu"):
        load_matrix_and_profiles(author_repo / "bench" / "bench.yaml")


def test_paths_from_matrix_inside_the_project_is_refused(tmp_path: Path) -> None:
    raw, _ = smoke_variant(paths_from="matrix")
    inside = ROOT / "matrix" / f".test-author-{tmp_path.name}.yaml"
    inside.write_bytes(raw)
    try:
        with pytest.raises(BadInput) as caught:
            load_matrix(inside)
    finally:
        inside.unlink()
    assert any("paths_from: matrix is for a matrix kept outside it" in line for line in caught.value.lines)


# ---------------------------------------------------------------- what the run records


def test_the_record_names_the_commit_and_the_files_under_the_matrix_folder(author_repo: Path) -> None:
    commit = git(author_repo, "rev-parse", "HEAD")
    record = author_source(loaded_author(author_repo))
    assert record is not None
    assert (
        record.folder,
        record.commit,
        record.tree_clean,
        record.matrix.path,
        record.profiles_file and record.profiles_file.path,
    ) == (
        "bench",
        commit,
        True,
        "bench.yaml",
        "profiles.yaml",
    )
    (author_repo / "paper.tex").write_text("edited, outside the benchmark's folder\n")
    assert author_source(loaded_author(author_repo)).tree_clean  # type: ignore[union-attr]
    (author_repo / "bench" / "scenarios" / "new.json").write_text("{}")
    dirty = author_source(loaded_author(author_repo))
    assert dirty is not None and not dirty.tree_clean and dirty.dirty_files == ["bench/scenarios/new.json"]


def test_outside_git_only_the_sha256_are_recorded(author_repo: Path) -> None:
    shutil.rmtree(author_repo / ".git")
    record = author_source(loaded_author(author_repo))
    assert record is not None and record.commit is None and record.folder == ""


# ---------------------------------------------------------------- checking


def test_without_source_the_embedded_copies_are_checked_and_the_verdict_says_so(
    author_repo: Path, tmp_path: Path
) -> None:
    verdict = checked(author_bundle(tmp_path / "run", author_repo))
    assert {c.verdict for c in verdict.cells} == {"VALID"}, reasons(verdict)
    commit = git(author_repo, "rev-parse", "HEAD")
    assert (
        "the author's matrix, profiles and scenarios: embedded copies only: author repository not given "
        f"(--source DIR compares them at {commit[:12]})" in verdict.notes
    )


def test_with_source_they_are_compared_with_the_author_repository_at_its_commit(
    author_repo: Path, tmp_path: Path
) -> None:
    verdict = checked(author_bundle(tmp_path / "run", author_repo), author_repo)
    assert {c.verdict for c in verdict.cells} == {"VALID"}, reasons(verdict)
    commit = git(author_repo, "rev-parse", "HEAD")
    assert f"the author's matrix, profiles and scenarios: compared with {author_repo} at {commit[:12]}" in verdict.notes


def test_the_command_takes_source_and_refuses_a_folder_outside_git(
    author_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = author_bundle(tmp_path / "run", author_repo)
    assert main(["check", str(run), "--source", str(author_repo / "bench")]) == 0
    assert "compared with" in capsys.readouterr().out
    (tmp_path / "plain").mkdir()
    assert main(["check", str(run), "--source", str(tmp_path / "plain")]) == 2
    assert "not a folder in a git repository" in capsys.readouterr().err


def test_a_commit_the_repository_lacks_is_said_not_compared(author_repo: Path, tmp_path: Path) -> None:
    verdict = checked(author_bundle(tmp_path / "run", author_repo, commit="b" * 40), author_repo)
    assert {c.verdict for c in verdict.cells} == {"VALID"}, reasons(verdict)
    assert any(f"embedded copies only: commit {'b' * 12} is not in {author_repo}" in note for note in verdict.notes)


def test_a_dirty_author_folder_is_not_clean_room(author_repo: Path, tmp_path: Path) -> None:
    verdict = checked(
        author_bundle(tmp_path / "run", author_repo, tree_clean=False, dirty_files=["bench/scenarios/new.json"])
    )
    assert all(c.verdict == "INVALID" for c in verdict.cells)
    assert "provenance: the author's files were dirty at run time (bench/scenarios/new.json)" in reasons(verdict)


def test_scenarios_that_differ_at_the_recorded_commit_are_invalid(author_repo: Path, tmp_path: Path) -> None:
    """The bundle says it ran the author's scenarios at a commit whose scenario files are not the ones embedded."""
    target = next((author_repo / "bench" / "scenarios").glob("*/notes-001.json"))
    target.write_text(json.dumps({**json.loads(target.read_text()), "title": "changed after the run"}))
    later = commit_all(author_repo, "a scenario changed")
    git(author_repo, "checkout", "-q", "HEAD~1")
    run = author_bundle(tmp_path / "run", author_repo, commit=later)
    verdict = checked(run, author_repo)
    assert all(c.verdict == "INVALID" for c in verdict.cells)
    assert any(
        r.startswith(f"suite-at-commit: suite synthetic at commit {later[:12]} of {author_repo} has sha256")
        for r in reasons(verdict)
    )
    assert {c.verdict for c in checked(run).cells} == {"VALID"}  # the embedded copies agree with themselves


def test_a_forged_author_profile_is_caught_by_the_author_repository(author_repo: Path, tmp_path: Path) -> None:
    """A forger changes the profile in run.json, the embedded profiles file to match, and its recorded sha256."""
    run = author_bundle(tmp_path / "run", author_repo)
    profiles = run / AUTHOR_PROFILES_COPY
    forged = profiles.read_text().replace("The author's laptop.", "A faster machine.")
    profiles.write_text(forged)

    def forge(record: dict) -> None:
        record["profile_settings"]["description"] = "A faster machine."
        record["author"]["profiles_file"]["sha256"] = __import__("hashlib").sha256(forged.encode()).hexdigest()

    edit_run(run, forge)
    rehash(run)
    # self-consistent: only the author's repository can tell
    assert {c.verdict for c in checked(run).cells} == {"VALID"}
    verdict = checked(run, author_repo)
    assert all(c.verdict == "INVALID" for c in verdict.cells)
    assert any(
        r.startswith("profile-at-commit: the embedded profiles file is not bench/profiles.yaml at commit")
        for r in reasons(verdict)
    )


def test_an_embedded_profiles_file_that_is_not_the_recorded_one_is_invalid(author_repo: Path, tmp_path: Path) -> None:
    run = author_bundle(tmp_path / "run", author_repo)
    profiles = run / AUTHOR_PROFILES_COPY
    profiles.write_text(profiles.read_text().replace("The author's laptop.", "A faster machine."))
    edit_run(run, lambda record: record["profile_settings"].update(description="A faster machine."))
    rehash(run)
    assert any(
        "profile-at-commit: the author's profiles file profiles.yaml is recorded with sha256" in r
        for r in reasons(checked(run))
    )


@pytest.mark.parametrize("field,value", [("folder", "../outside"), ("folder", "-p"), ("folder", "/etc")])
def test_hostile_author_paths_are_problems_not_reads(author_repo: Path, tmp_path: Path, field: str, value: str) -> None:
    run = author_bundle(tmp_path / "run", author_repo)
    edit_run(run, lambda record: record["author"].update({field: value}))
    rehash(run)
    verdict = checked(run, author_repo)
    assert all(c.verdict == "INVALID" for c in verdict.cells)
    assert any("is not a path inside the author's repository" in r for r in reasons(verdict)), reasons(verdict)


def test_a_linked_profiles_copy_is_refused(author_repo: Path, tmp_path: Path) -> None:
    run = author_bundle(tmp_path / "run", author_repo)
    (run / AUTHOR_PROFILES_COPY).unlink()
    (run / AUTHOR_PROFILES_COPY).symlink_to(author_repo / "bench" / "profiles.yaml")
    found = reasons(checked(run))
    assert any(
        "profile-at-commit: the author's profiles file cannot be read from the bundle" in r
        and "not a regular file" in r
        for r in found
    ), found


def test_a_bundle_without_author_record_keeps_the_project_rules(tmp_path: Path) -> None:
    run = write_bundle(tmp_path / "run")
    assert json.loads((run / RUN_FILE).read_text())["author"] is None
    assert AuthorSource.model_fields.keys() >= {"folder", "commit", "tree_clean", "matrix"}
    assert {c.verdict for c in check_run(run, Redactor(CANARY)).cells} == {"VALID"}


def test_a_dirty_author_folder_is_named_by_plan_and_refused_by_run(
    author_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before anything starts, as the project's own dirty tree is: plan warns and names the file,
    run refuses (exit 2) and opens no run folder; the project tree itself is clean here."""
    matrix = author_repo / "bench" / "bench.yaml"
    (author_repo / "bench" / "notes.txt").write_text("a draft\n")
    assert main(["matrix", "plan", str(matrix), "--profile", PROFILE]) == 0
    assert "the author's files are dirty (1 file(s): bench/notes.txt)" in capsys.readouterr().out
    out = author_repo / "results"
    assert main(["matrix", "run", str(matrix), "--profile", PROFILE, "--out", str(out)]) == 2
    assert "the author's files are dirty (1 file(s): bench/notes.txt)" in capsys.readouterr().err
    assert not out.exists()
