"""Building with the real Docker engine: no-op rebuilds, labels, listing, a failing build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.core.errors import ReproError
from repro.store import images

pytestmark = pytest.mark.docker


def repro_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def image_ids(client) -> set[str]:
    return {image.id for image in client.images.list(all=True)}


def test_a_second_build_rebuilds_nothing_and_is_fast(docker_client, harness_image_ref, llama_image_ref):
    before = image_ids(docker_client)
    started = time.monotonic()
    proc = repro_cli("images", "build", str(DEFAULT_MATRIX))
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert elapsed < 10, f"a no-op build took {elapsed:.1f} s"
    assert f"up to date {harness_image_ref.reference}" in proc.stdout
    assert f"up to date {llama_image_ref.reference}" in proc.stdout
    assert "building" not in proc.stdout
    assert image_ids(docker_client) == before


def test_list_shows_the_present_images_with_keys_and_ids(docker_client, harness_image_ref, llama_image_ref):
    proc = repro_cli("images", "list", str(DEFAULT_MATRIX), "--json")
    assert proc.returncode == 0, proc.stderr
    listed = {row["reference"]: row for row in json.loads(proc.stdout)["images"]}
    for ref in (harness_image_ref, llama_image_ref):
        row = listed[ref.reference]
        assert row["present"] and row["id"] == ref.id and row["key"] == ref.key and row["pinned_by"] == "content-key"
    text = repro_cli("images", "list", str(DEFAULT_MATRIX))
    assert text.returncode == 0
    assert (
        f"present  {harness_image_ref.reference}  key {harness_image_ref.key}  id {harness_image_ref.id}" in text.stdout
    )
    assert f"present  {llama_image_ref.reference}  key {llama_image_ref.key}" in text.stdout


def test_the_harness_image_carries_its_tree_digest_and_runs_unprivileged(
    docker_client, harness_image_ref, base_image_id
):
    labels = harness_image_ref.labels
    assert labels["repro.kind"] == "harness"
    assert labels["repro.key"] == harness_image_ref.key
    assert labels["repro.harness_tree"] == images.harness_source_digest(PROJECT_ROOT)
    assert labels["repro.base_id"] == base_image_id
    config = docker_client.images.get(harness_image_ref.id).attrs["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["python3", "-m", "harness"]
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]


def test_the_engine_image_carries_the_stamped_build(docker_client, llama_image_ref):
    from tests.fixtures.images import smoke_engine

    labels = llama_image_ref.labels
    assert labels["repro.kind"] == "engine" and labels["repro.key"] == llama_image_ref.key
    assert labels["repro.build_info"] == smoke_engine().stamped_build_info()
    assert labels["repro.source_sha256"] == smoke_engine().build.source.sha256
    config = docker_client.images.get(llama_image_ref.id).attrs["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["/usr/local/bin/llama-server"]


def test_a_failing_build_reports_the_tail_of_its_log(docker_client, base_image_id, tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
        "RUN for i in $(seq 1 40); do echo line-$i; done; echo the-build-broke; exit 3\n"
    )
    plan = images.BuildPlan(
        name="test-failing-build",
        kind="engine",
        dockerfile=tmp_path / "Dockerfile",
        buildargs={"BASE_IMAGE": images.configured_base()},
        inputs={},
        base_ids={},
        key="0" * 64,
        labels={"repro.kind": "test"},
        source="test",
    )
    seen: list[str] = []
    with pytest.raises(ReproError) as caught:
        images.docker_build(plan, tmp_path, docker_client, seen.append)
    lines = caught.value.lines
    assert lines[0].startswith(f"build of {plan.tag} failed:") and "returned a non-zero code: 3" in lines[0]
    assert lines[1] == f"--- last {images.LOG_TAIL_LINES} lines of the build log ---"
    assert len(lines) == 2 + images.LOG_TAIL_LINES
    assert "the-build-broke" in lines and "line-40" in lines and "line-1" not in lines
    assert "line-1" in seen  # every line was streamed to the log as it came
    assert images.find_local(plan.tag, docker_client) is None


def tiny_plan(tmp_path, name: str, run: str) -> images.BuildPlan:
    """A one-step image on the local base: a real build of a few seconds."""
    (tmp_path / "Dockerfile").write_text(f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\nRUN {run}\n")
    key = images.content_key({"test": name, "run": run})
    return images.BuildPlan(
        name=name,
        kind="engine",
        dockerfile=tmp_path / "Dockerfile",
        buildargs={"BASE_IMAGE": images.configured_base()},
        inputs={},
        base_ids={},
        key=key,
        labels={"repro.kind": "test"},
        source="test",
    )


def test_a_build_log_goes_to_its_file_and_streams_only_when_asked(docker_client, base_image_id, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    plan = tiny_plan(tmp_path, "test-logged-build", "echo the-tiny-build-ran")
    path = images.build_log_path(plan.name)
    assert path == tmp_path / "cache" / "build-logs" / "test-logged-build.log"
    try:
        with images.BuildLog(path) as log:
            images.build_in_context(
                plan, docker_client, lambda context: images.link_or_copy(plan.dockerfile, context / "Dockerfile"), log
            )
        assert "the-tiny-build-ran" in path.read_text() and log.stream is None
        streamed: list[str] = []
        with images.BuildLog(path, streamed.append) as log:
            log("with --log")
        assert streamed == ["with --log"] and path.read_text() == "with --log\n"  # the latest build's log
    finally:
        docker_client.images.remove(plan.tag, force=True)


def test_a_failing_build_names_its_log_file_and_shows_its_tail(docker_client, base_image_id, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    plan = tiny_plan(
        tmp_path,
        "test-failing-logged-build",
        "for i in $(seq 1 40); do echo line-$i; done; echo the-build-broke; exit 3",
    )
    path = images.build_log_path(plan.name)
    with pytest.raises(ReproError) as caught, images.BuildLog(path) as log:
        images.build_in_context(
            plan, docker_client, lambda context: images.link_or_copy(plan.dockerfile, context / "Dockerfile"), log
        )
    lines = caught.value.lines
    assert lines[0].startswith(f"build of {plan.tag} failed:") and lines[-1] == f"the whole build log: {path}"
    assert "the-build-broke" in lines and "line-40" in lines and "line-1" not in lines  # the tail, shown once
    assert "line-1\n" in path.read_text() and "the-build-broke" in path.read_text()  # the whole log, in the file
    # a failure before docker build: the log's tail is added
    with pytest.raises(ReproError) as fetch, images.BuildLog(path) as log:
        log("fetching the source")
        raise ReproError("the source's sha256 differs")
    assert fetch.value.lines == [
        "the source's sha256 differs",
        "--- last 1 lines of the build log ---",
        "fetching the source",
        f"the whole build log: {path}",
    ]


def test_images_build_does_not_stream_by_default_and_says_where_the_logs_go():
    from typer.testing import CliRunner

    from repro.cli import app

    result = CliRunner().invoke(app, ["images", "build", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--log" in result.stdout and "build-logs" in result.stdout
    assert "--no-log" in result.stdout.split("build-logs")[0] or "[default: no-log]" in result.stdout
