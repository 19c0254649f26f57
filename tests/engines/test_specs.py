"""Container specifications (no Docker call): engines, probes, harness, GPU profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.containers.sandbox import create_kwargs, hardening_problems, harness_kwargs, probe_kwargs
from repro.core.errors import BadInput
from repro.engines.devices import check_accelerator, gpu_device_requests
from repro.engines.errors import EngineRefused
from repro.engines.llamacpp import LlamaCppEngine, server_args, summarize_props
from repro.engines.registry import engine_class
from repro.spec.engines import ENGINE_KINDS, EngineKindFacts
from repro.spec.findings import MountInfo, SandboxSettings
from repro.spec.loading import load_matrix
from repro.spec.matrix import EngineSpec
from repro.spec.profiles import load_profiles
from repro.store.images.plans import source_buildargs

IMAGE = "sha256:" + "a" * 64
SMOKE = load_matrix(Path(__file__).resolve().parents[2] / "matrix" / "smoke.yaml").matrix
PROFILES = load_profiles()


def llama(run_id: str = "run-1", group: str = "grp") -> LlamaCppEngine:
    engine = LlamaCppEngine.__new__(LlamaCppEngine)
    engine.spec, engine.run_id, engine.group_id, engine.probe_image_id = SMOKE.engines[0], run_id, group, None
    return engine


def kwargs_for(profile_name: str, tmp_path: Path, host_cpus: int | None = None) -> dict:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    engine = llama()
    launch = engine.boot_spec(
        IMAGE, SMOKE.models[0], gguf, PROFILES.get(profile_name), SMOKE.decoding, profile_name=profile_name
    )
    return engine.container_kwargs(launch, host_cpus=host_cpus, name="repro-run-1-engine-x")


def flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_llamacpp_cpu_spec_is_sealed_with_every_flag_explicit(tmp_path: Path):
    kwargs = kwargs_for("cpu", tmp_path, host_cpus=2)
    command = kwargs["command"]
    assert flag(command, "--host") == "127.0.0.1" and flag(command, "--port") == "8080"
    assert flag(command, "-m") == "/models/model.gguf" and flag(command, "-a") == SMOKE.models[0].id
    assert flag(command, "-c") == "4096" and flag(command, "-ngl") == "0" and flag(command, "-np") == "1"
    assert flag(command, "--seed") == "42" and flag(command, "-t") == "2" and flag(command, "-tb") == "2"
    assert "--jinja" in command and "--no-webui" in command
    assert kwargs["image"] == IMAGE and kwargs["network_mode"] == "none"
    assert not {"ports", "publish_all_ports", "network", "privileged"} & {k for k, v in kwargs.items() if v}
    assert kwargs["user"] == "10001:10001" and kwargs["read_only"] is True
    assert kwargs["cap_drop"] == ["ALL"] and kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["pids_limit"] > 0 and kwargs["mem_limit"] == 8 * 1024**3 and kwargs["nano_cpus"] == 2_000_000_000
    assert kwargs["environment"]["TZ"] == "UTC" and kwargs["environment"]["PYTHONHASHSEED"] == "0"
    assert "/tmp" in kwargs["tmpfs"]
    assert kwargs["labels"] == {"repro.run": "run-1", "repro.cell": "grp", "repro.role": "engine"}
    [mount] = kwargs["mounts"]
    assert mount["Target"] == "/models/model.gguf" and mount["ReadOnly"] is True and mount["Type"] == "bind"
    assert "device_requests" not in kwargs


def test_gpu_t4_spec_requests_one_gpu_and_offloads_every_layer(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("REPRO_GPU_DEVICES", raising=False)
    kwargs = kwargs_for("gpu-t4", tmp_path, host_cpus=8)
    [request] = kwargs["device_requests"]
    assert request["Count"] == 1 and request["Capabilities"] == [["gpu"]] and not request.get("DeviceIDs")
    command = kwargs["command"]
    assert flag(command, "-ngl") == "999" and flag(command, "-t") == "4"
    assert kwargs["nano_cpus"] == 4_000_000_000 and kwargs["mem_limit"] == 16 * 1024**3
    assert kwargs["network_mode"] == "none" and kwargs["user"] == "10001:10001"
    # with explicit devices
    monkeypatch.setenv("REPRO_GPU_DEVICES", "2,3")
    [request] = gpu_device_requests(PROFILES.get("gpu-t4"))
    # gpu_count GPUs per replica
    assert request["DeviceIDs"] == ["2"] and request["Capabilities"] == [["gpu"]] and not request.get("Count")
    [second] = gpu_device_requests(PROFILES.get("gpu-t4"), replica=1)
    assert second["DeviceIDs"] == ["3"]  # the next replica, the next GPU
    assert gpu_device_requests(PROFILES.get("cpu")) == []


def test_threads_are_clamped_to_the_docker_host(tmp_path: Path):
    assert kwargs_for("gpu-t4", tmp_path, host_cpus=2)["nano_cpus"] == 2_000_000_000


def test_accelerator_must_match_the_profile():
    t4 = PROFILES.get("gpu-t4")
    check_accelerator("e", "Tesla T4", t4, "gpu-t4")
    check_accelerator("e", None, PROFILES.get("cpu"), "cpu")
    with pytest.raises(EngineRefused, match="runs on 'NVIDIA L4', profile gpu-t4 needs 'Tesla T4'"):
        check_accelerator("e", "NVIDIA L4", t4, "gpu-t4")
    with pytest.raises(EngineRefused, match="no GPU"):
        check_accelerator("e", None, t4, "gpu-t4")
    with pytest.raises(EngineRefused):
        check_accelerator("e", "Tesla T4, NVIDIA L4", t4, "gpu-t4")
    check_accelerator("e", "NVIDIA A100-SXM4-80GB", PROFILES.get("gpu-a100-80g"), "gpu-a100-80g")


def test_probe_spec_joins_the_engine_with_one_writable_mount(tmp_path: Path):
    kwargs = probe_kwargs(
        IMAGE,
        "f" * 64,
        ["ready", "--base-url", "http://127.0.0.1:8080", "--timeout", "5"],
        tmp_path,
        run_id="run-1",
        cell_id="c1",
    )
    assert kwargs["network_mode"] == "container:" + "f" * 64
    assert kwargs["entrypoint"] == ["python3", "-m", "harness", "probe"]
    assert kwargs["command"][-2:] == ["--out", "/out/result.json"]
    assert kwargs["user"] == "10001:10001" and kwargs["read_only"] and kwargs["cap_drop"] == ["ALL"]
    assert (
        kwargs["security_opt"] == ["no-new-privileges"]
        and kwargs["pids_limit"]
        and kwargs["mem_limit"]
        and kwargs["nano_cpus"]
    )
    assert kwargs["environment"]["TZ"] == "UTC" and kwargs["environment"]["PYTHONHASHSEED"] == "0"
    assert kwargs["labels"] == {"repro.run": "run-1", "repro.cell": "c1", "repro.role": "probe"}
    writable = [m for m in kwargs["mounts"] if not m["ReadOnly"]]
    assert [m["Target"] for m in writable] == ["/out"]


def test_harness_spec(tmp_path: Path):
    kwargs = harness_kwargs(IMAGE, "e" * 64, ["run", "--help"], tmp_path, run_id="r", cell_id="cell-1")
    assert kwargs["entrypoint"] == ["python3", "-m", "harness"] and kwargs["command"] == ["run", "--help"]
    assert kwargs["labels"]["repro.role"] == "harness" and kwargs["labels"]["repro.cell"] == "cell-1"
    assert kwargs["network_mode"] == "container:" + "e" * 64


def test_containers_are_created_from_image_ids_only():
    with pytest.raises(BadInput, match="resolved image id"):
        create_kwargs(SandboxSettings(), "llama:latest", None)


def test_hardening_problems():
    good = SandboxSettings(
        labels={"repro.run": "r", "repro.role": "probe"},
        network_mode="container:x",
        mounts=[MountInfo(target="/out", type="bind", read_only=False)],
    )
    assert hardening_problems(good, "probe") == []
    bad = good.with_(
        user="0",
        read_only=False,
        cap_drop=[],
        security_opt=[],
        pids_limit=None,
        env={},
        network_mode="bridge",
        mounts=[
            MountInfo(target="/out", type="bind", read_only=False),
            MountInfo(target="/x", type="bind", read_only=False),
        ],
    )
    problems = hardening_problems(bad, "probe")
    assert len(problems) == 9, problems


def test_every_engine_kind_has_a_provider():
    assert engine_class("llama.cpp") is LlamaCppEngine
    assert engine_class("ollama").kind == "ollama"


def test_a_new_kind_is_one_row(monkeypatch):
    """A fourth kind, a stand-in row alone, is named by a matrix, pinned, served and built as
    its row says (docs/engines.md, "Adding an engine"); a kind not in the table is refused."""
    row = EngineKindFacts(
        kind="standin",
        implementation="repro.engines.llamacpp:LlamaCppEngine",
        identity="version",
        identity_route="/version",
        build_args={"STANDIN_VERSION": "version"},
    )
    monkeypatch.setitem(ENGINE_KINDS, "standin", row)
    pinned = {"id": "s", "kind": "standin", "label": "s 1", "image": "example/standin@sha256:" + "c" * 64}
    with pytest.raises(ValueError, match=r"a standin engine needs version \(what /version must report\)"):
        EngineSpec(**pinned)
    spec = EngineSpec(**pinned, version="1.0")
    assert spec.facts is row and spec.expected_identity() == "1.0"
    assert spec.serves("cpu") and not spec.serves("cuda")
    source = {"archive": "standin.tar.gz", "sha256": "a" * 64}
    built = EngineSpec(id="b", kind="standin", label="b", version="1.0", build={"dockerfile": "d", "source": source})
    assert source_buildargs(built) == {"SOURCE_SHA256": "a" * 64, "STANDIN_VERSION": "1.0"}
    with pytest.raises(ValueError, match="input should be 'llama.cpp', 'ollama', 'scripted' or 'standin'"):
        EngineSpec(**{**pinned, "kind": "vllm"}, version="1.0")


def test_server_args_and_props_summary():
    args = server_args(SMOKE.models[0], PROFILES.get("cpu"), SMOKE.decoding)
    assert args.count("--port") == 1 and "--jinja" in args
    props = {
        "build_info": "b1-x",
        "default_generation_settings": {"n_ctx": 4096, "params": {"seed": 42}},
        "total_slots": 1,
        "chat_template": "{{ x }}",
        "model_path": "/models/model.gguf",
    }
    summary = summarize_props(props)
    assert summary["n_ctx"] == 4096 and summary["total_slots"] == 1 and len(summary["chat_template_sha256"]) == 64
    assert "chat_template" not in summary


def test_a_daemon_that_does_not_answer_is_one_line(tmp_path: Path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"}
    done = subprocess.run(
        [sys.executable, "-m", "repro", "cleanup"], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "Docker engine not reachable" in done.stderr
