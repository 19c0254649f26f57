"""The real runtimes end to end: OpenClaw, Pi and Hermes, their images built in the test session from
their pinned locks (npm and PyPI), each playing a ladder scenario in react mode against the real
llama.cpp and SmolLM2, through `repro matrix run`; the bundle checks VALID, its wire holds every
exchange, and `repro results runtimes` shows what each runtime injected.

SmolLM2 at a 64K context: Hermes refuses a model whose context is below 64,000 tokens, and Pi keeps
4,096 tokens free; the prompts stay within a few thousand tokens (SmolLM2 is the smallest real model,
so the 13,000-token prompt Hermes sends is read fastest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.contracts import RuntimeTurn
from repro.spec.loading import load_matrix
from tests.e2e.conftest import make_snapshot, run_repro, smoke_parts

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.runtimes]
ROOT = Path(__file__).resolve().parents[2]


def runtimes_matrix() -> str:
    models, engines = smoke_parts()
    smoke = yaml.safe_load((ROOT / "matrix" / "runtimes-smoke.yaml").read_text())
    runtimes = [r for r in smoke["runtimes"] if r["kind"] != "raw"]
    return f"""\
name: runtimes-e2e
description: SmolLM2 on llama.cpp b11434 (CPU) through OpenClaw, Pi and Hermes (react), one ladder scenario.
models:
{models}
engines:
{engines}
protocols: [react]
runtimes: {json.dumps(runtimes)}
suites:
  - id: ladder-one
    path: scenarios
    ids: [ladder-0-001]
decoding: {{temperature: 0, seed: 42, max_tokens: 96, context: 65536}}
repeats: 1
latency_gate: {{warmup: true, attempts: 3, required: 2}}
profiles: [cpu]
"""


@pytest.fixture(scope="session")
def runtimes_snapshot(tmp_path_factory) -> Path:
    matrix = {"matrix/runtimes-e2e.yaml": runtimes_matrix()}
    return make_snapshot(tmp_path_factory.mktemp("runtimes") / "project", matrix)


@pytest.fixture(scope="session")
def runtime_images(docker_client, harness_image_ref, runtimes_snapshot):
    """Each runtime's image, built from its lock (npm ci or pip download on the host, then docker build)."""
    from repro.runtimes.image import build_runtime_images

    loaded = load_matrix(runtimes_snapshot / "matrix" / "runtimes-e2e.yaml")
    return build_runtime_images(loaded.matrix.runtimes, docker_client, lambda line: None)


@pytest.fixture(scope="session")
def runtimes_run(runtimes_snapshot, canary_home, llama_image_ref, runtime_images) -> Path:
    run = ("matrix", "run", "matrix/runtimes-e2e.yaml", "--profile", "cpu", "--out", "results")
    proc = run_repro(runtimes_snapshot, canary_home, *run)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runtimes_snapshot / "results" / (runtimes_snapshot / "results" / "LATEST").read_text().strip()


def wires(run_dir: Path) -> dict[str, list[RuntimeTurn]]:
    found = {}
    for cell in sorted((run_dir / "cells").iterdir()):
        cell_json = json.loads((cell / "cell.json").read_text())
        lines = (cell / "wire.jsonl").read_text().splitlines()
        found[cell_json["cell"]["runtime"]["kind"]] = [RuntimeTurn.model_validate_json(line) for line in lines]
    return found


def test_each_runtime_plays_its_cell_and_the_bundle_checks_valid(runtimes_run, runtimes_snapshot, canary_home):
    proc = run_repro(runtimes_snapshot, canary_home, "check", str(runtimes_run))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("VALID") >= 3 and "INVALID" not in proc.stdout.replace("0 INVALID", "")
    by_kind = wires(runtimes_run)
    assert set(by_kind) == {"openclaw", "pi", "hermes"}
    for kind, turns in by_kind.items():
        assert turns, kind
        first = turns[0]
        assert first.clock == "2026-01-01 12:00:00" and first.exit == 0, (kind, first.stderr[-500:])
        chats = [e for e in first.exchanges if e.path.endswith("/chat/completions")]
        assert chats and chats[0].filled.get("cache_prompt") is False  # the scenario's first request
        request = json.loads(chats[0].request)
        assert "temperature" not in request or kind == "openclaw"  # filled where the runtime sent none
        assert all(e.status == 403 for e in first.exchanges if e.outside)


def test_the_injected_system_prompts_are_shown_with_the_pinned_date(runtimes_run, runtimes_snapshot, canary_home):
    proc = run_repro(runtimes_snapshot, canary_home, "results", "runtimes", str(runtimes_run), "--json")
    assert proc.returncode == 0, proc.stderr
    summaries = {s["runtime"].split("-")[0]: s for s in map(json.loads, proc.stdout.splitlines())}
    assert not summaries["openclaw"]["system_prompt"]  # OpenClaw passes the prompt unchanged
    assert "2026-01-01" in summaries["pi"]["system_prompt"]  # Pi's "Current date", under the pinned clock
    assert "January 01, 2026" in summaries["hermes"]["system_prompt"]  # Hermes' "Conversation started"
    assert any(".update_check" in name for name in summaries["hermes"]["home"])


def test_compare_shows_the_runtime_effect(runtimes_run, runtimes_snapshot, canary_home):
    run = str(runtimes_run)
    runtimes = ("--runtime-a", "openclaw-2026.9.6", "--runtime-b", "pi-0.80.3")
    proc = run_repro(runtimes_snapshot, canary_home, "compare", run, run, *runtimes)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "agent runtime: openclaw==2026.9.6 -> @earendil-works/pi-coding-agent==0.80.3" in proc.stdout
    assert "1 rows compared" in proc.stdout
    wrong = run_repro(runtimes_snapshot, canary_home, "compare", run, run, "--runtime-a", "raw")
    assert wrong.returncode == 2 and "--runtime-a raw: no row of that runtime" in wrong.stderr
