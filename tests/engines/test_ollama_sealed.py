"""repro's Ollama engine path end to end, sealed, against the STAND-IN server (not Ollama).

The stand-in (tests/engines/ollama_standin.py) runs inside a container of the harness image with
network none, in place of `ollama serve`; everything else is the real code path: readiness on
/api/version through a probe joined to its namespace, identity against the pin, the verified
SmolLM2 GGUF uploaded as a blob from a read-only mount and created with an explicit template and
parameters, /api/show recorded, and the latency gate over /api/chat.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.containers.sandbox import bind, hardening_problems
from repro.engines.errors import EngineRefused
from repro.engines.gate import run_gate
from repro.engines.ollama import OllamaEngine
from repro.spec.matrix import LatencyGateSettings
from repro.spec.profiles import load_profiles
from tests.engines.ollama_standin import STANDIN_VERSION
from tests.engines.test_ollama_standin import OLLAMA_SPEC
from tests.engines.test_specs import SMOKE

pytestmark = pytest.mark.docker

STANDIN_DIR = Path(__file__).resolve().parent
PROFILE = load_profiles().get("cpu")


class StandInOllama(OllamaEngine):
    """OllamaEngine with the server process swapped for the stand-in script (same sealed spec)."""

    def container_kwargs(self, launch, *, host_cpus=None, name=None):
        kwargs = super().container_kwargs(launch, host_cpus=host_cpus, name=name)
        kwargs["entrypoint"] = ["python3", "/standin/ollama_standin.py"]
        kwargs["command"] = ["--port", str(self.port), "--version", STANDIN_VERSION]
        kwargs["mounts"] = [
            *kwargs["mounts"],
            bind(STANDIN_DIR / "ollama_standin.py", "/standin/ollama_standin.py", read_only=True),
        ]
        return kwargs


def start(docker_client, harness_image_ref, run_id, model, gguf, spec=OLLAMA_SPEC):
    engine = StandInOllama(docker_client, spec, probe_image=harness_image_ref, run_id=run_id, group_id="ollama-standin")
    return engine, engine.start(
        engine.boot_spec(harness_image_ref, model, gguf, PROFILE, SMOKE.decoding, profile_name="cpu")
    )


def test_ollama_path_against_the_sealed_standin(
    docker_client, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    engine, handle = start(docker_client, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf)
    try:
        assert handle.identity == STANDIN_VERSION and handle.api == "ollama"
        assert handle.sandbox.network_mode == "none" and hardening_problems(handle.sandbox, "engine") == []
        assert handle.sandbox.env["OLLAMA_HOST"] == "127.0.0.1:11434"
        load = handle.settings["load"]
        assert load["blob"] == f"sha256:{smollm2_spec.sha256}" and load["uploaded"] is True
        assert load["model"] == handle.model_name
        show = handle.settings["show"]
        assert "<|im_start|>" in show["template"] and "num_ctx 4096" in show["parameters"]
        gate = run_gate(docker_client, handle, profile=PROFILE, settings=LatencyGateSettings(), decoding=SMOKE.decoding)
        assert gate.passed, gate.reason
        assert gate.median_tokens_per_second == pytest.approx(100.0, rel=0.1)
    finally:
        engine.stop(handle)


def test_ollama_version_mismatch_is_refused(docker_client, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf):
    pinned = OLLAMA_SPEC.model_copy(update={"version": "0.9.9"})
    with pytest.raises(EngineRefused, match=f"reports version '{STANDIN_VERSION}', the matrix pins '0.9.9'"):
        start(docker_client, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf, spec=pinned)
