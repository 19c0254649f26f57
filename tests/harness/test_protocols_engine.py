"""Real engine, sealed pair: SmolLM2 on llama.cpp (``--jinja``) under each of
the four protocols on three scenarios, twice. Every reply is parsed or classified (the harness
exits 0, no engine fault, every invalid reply names its problem) and the second run's
transcripts are identical to the first's.

Slow (an engine boot per model, 24 harness runs); run it alone, under
``flock /tmp/repro-engine.lock``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.contracts import FAILURE_LAYER
from harness.protocols import PROTOCOLS
from tests.fixtures.images import smoke_engine
from tests.fixtures.models import smoke_model

pytestmark = [pytest.mark.docker, pytest.mark.engine]

REPO = Path(__file__).resolve().parents[2]
# Qwen2.5-Coder-0.5B's replies under every protocol are exercised by the smoke run and the
# ToolCallBench engine test; here the fast model keeps the suite short.
MODELS = ["smollm2-135m-instruct-q4_1"]
IDS = ["ask-001", "notes-001", "table_read_answer-001"]


@pytest.fixture(scope="module", params=MODELS)
def engine(request, docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, model_cache):
    from repro.core.config import DEFAULT_MATRIX
    from repro.engines.base import stop_engine
    from repro.engines.boot import BootSpec
    from repro.engines.registry import boot_engine
    from repro.spec.loading import load_matrix
    from repro.spec.profiles import load_profiles
    from repro.store.models import fetch, model_path

    spec = smoke_model(request.param)
    fetch(spec, cache=model_cache)
    decoding = load_matrix(DEFAULT_MATRIX).matrix.decoding
    handle = boot_engine(
        docker_client,
        BootSpec(
            spec=smoke_engine(),
            image=llama_image_ref,
            probe_image=harness_image_ref,
            model=spec,
            gguf=model_path(spec, cache=model_cache),
            profile=load_profiles().get("cpu"),
            profile_name="cpu",
            decoding=decoding,
            run_id=TEST_RUN_ID,
            group_id="protocol-tests",
        ),
    )
    try:
        yield handle
    finally:
        stop_engine(docker_client, handle)


def run_harness(docker_client, harness_image_ref, handle, protocol: str, run_id: str) -> list[dict]:
    from repro.containers import lifecycle as containers
    from repro.containers.sandbox import bind, container_name, harness_kwargs
    from repro.core.files import scratch_dir
    from repro.suites.base import FIXTURES_MOUNT

    out_dir = scratch_dir("protocols-")
    os.chmod(out_dir, 0o777)
    command = [
        "run",
        "--scenarios",
        "/scenarios",
        "--ids",
        *IDS,
        "--base-url",
        handle.base_url,
        "--model",
        handle.model_name,
    ]
    command += [
        "--protocol",
        protocol,
        "--seed",
        "42",
        "--temperature",
        "0",
        "--max-tokens",
        "256",
        "--out",
        "/out/results.jsonl",
        "--scenario-timeout",
        "600",
    ]
    kwargs = harness_kwargs(
        harness_image_ref.id,
        handle.container_id,
        command,
        out_dir,
        run_id=run_id,
        cell_id=f"protocols-{protocol}",
        mounts=[
            bind(REPO / "scenarios", "/scenarios", read_only=True),
            bind(REPO / "fixtures", FIXTURES_MOUNT, read_only=True),
        ],
        name=container_name(run_id, "harness", protocol),
    )
    try:
        with containers.started(docker_client, kwargs) as container:
            ended = containers.wait(container, 1500)
        assert ended.code == 0 and not ended.timed_out, ended.log_tail
        return [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_every_reply_is_classified_and_runs_repeat(engine, protocol, docker_client, harness_image_ref, TEST_RUN_ID):
    first = run_harness(docker_client, harness_image_ref, engine, protocol, TEST_RUN_ID)
    second = run_harness(docker_client, harness_image_ref, engine, protocol, TEST_RUN_ID)
    assert [r["id"] for r in first] == sorted(IDS, key=lambda i: (i.rsplit("-", 1)[0], i))
    for record in first:
        assert not record["engine_fault"], record["error"]
        assert record["protocol_stats"]["protocol"] == protocol and record["protocol_stats"]["model_turns"] >= 1
        replies = [reply for entry in record["transcript"] for reply in entry.get("replies", [])]
        assert all(isinstance(reply["content"], str) for reply in replies)
        if record["failure_type"] in FAILURE_LAYER and FAILURE_LAYER[record["failure_type"]] == "protocol":
            assert all(reply.get("problem") for reply in record["transcript"][-2]["replies"])
    assert [r["transcript"] for r in first] == [r["transcript"] for r in second]
