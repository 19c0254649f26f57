"""A published inspect bundle made checkable by the commands its UNCHECKED lines name (issue 63):
on a fresh home, `repro check` names `repro suites fetch --from-bundle RUN` (the pinned wheel) and
then `repro images build --from-bundle RUN` (the suite's image, from the bundle's own pins at its
commit: this checkout's history has it); after both, every cell is VALID, its scorers re-run.

Docker and the package index (the inspect lock's wheels, once per cache); no engine runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.__main__ import main
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import PUBLISHED

pytestmark = [pytest.mark.docker]


def test_the_commands_an_unchecked_inspect_cell_names_make_it_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], docker_client
) -> None:
    pytest.importorskip("inspect_ai")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "home" / ".cache" / "repro"))
    run = bundle_folder(PUBLISHED / "inspect-smoke-cpu-bundle.tar.gz", tmp_path / "unpacked")
    assert main(["check", str(run)]) == 3
    assert f"repro suites fetch --from-bundle {run}" in capsys.readouterr().out
    assert main(["suites", "fetch", "--from-bundle", str(run)]) == 0
    capsys.readouterr()
    images = main(["images", "build", "--from-bundle", str(run)])
    printed = capsys.readouterr().out
    assert images == 0 and "3 suite image(s) ready" in printed, printed
    assert main(["check", str(run)]) == 0
    assert "3 VALID, 0 EXCLUDED, 0 INVALID" in capsys.readouterr().out


def test_a_bundle_of_no_external_suite_builds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_client
):
    run = bundle_folder(PUBLISHED / "smoke-cpu-bundle.tar.gz", tmp_path / "unpacked")
    assert main(["images", "build", "--from-bundle", str(run)]) == 0
    assert "no external suite ran, nothing to build" in capsys.readouterr().out


def test_a_file_is_no_bundle_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images", "build", "--from-bundle", str(PUBLISHED / "smoke-cpu-bundle.tar.gz")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not a bundle folder" in error
