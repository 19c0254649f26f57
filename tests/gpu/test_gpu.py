"""The GPU path without a GPU: nvidia-smi rows, llama.cpp's CUDA log lines, the check rule, the
pinned server options, the CUDA architectures, the doctor and verify's row identity, all over
the fixtures in tests/fixtures/gpu/ (their README says where each shape comes from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.doctor.machine import driver_finding, nvidia_hook_finding
from repro.engines.devices import check_devices, replica_devices
from repro.engines.errors import EngineRefused
from repro.engines.gpu import (
    GpuError,
    device_problems,
    engine_log_problems,
    identity_agrees,
    log_problems,
    parse_cuda_log,
    parse_query_gpu,
    weights_problems,
    with_mig,
)
from repro.engines.llamacpp import DEVICE_CHOSEN, server_args
from repro.plan.replicas import capacity, replica_allowance
from repro.spec.engines import ENGINE_KINDS
from repro.spec.findings import GpuDevice
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.cuda_toolkit import (
    TOOLKITS,
    EmbeddedCode,
    embedded_problems,
    parse_cuobjdump,
    profile_architectures,
    unbuildable,
)
from repro.store.gguf import read_header
from repro.store.images import dockerfile_args
from tests.fixtures.synthetic import CANARY, write_bundle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
PROFILES = load_profiles()
T4, A100, CPU = PROFILES.get("gpu-t4"), PROFILES.get("gpu-a100-80g"), PROFILES.get("cpu")
SMOKE = load_matrix(Path(__file__).resolve().parents[2] / "matrix" / "smoke.yaml").matrix


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def t4_devices() -> list[GpuDevice]:
    return parse_query_gpu(fixture("nvidia-smi-t4.txt"))


# ---------------------------------------------------------------- nvidia-smi


def test_the_exact_identity_is_read_from_nvidia_smi():
    [t4] = t4_devices()
    assert (t4.name, t4.compute_capability, t4.driver_version, t4.memory_mib, t4.mig_mode, t4.mig_profile) == (
        "Tesla T4",
        "7.5",
        "535.183.01",
        15360,
        None,
        None,
    )
    assert device_problems([t4], T4, "gpu-t4") == []


@pytest.mark.parametrize(
    "text", ["Tesla T4, 7.5\n", "Tesla T4, seven, 535, 15360, [N/A]\n", "Tesla T4, 7.5, 535, lots, [N/A]\n", "\n"]
)
def test_other_nvidia_smi_output_is_refused_in_one_line(text):
    with pytest.raises(GpuError) as caught:
        parse_query_gpu(text)
    assert "\n" not in str(caught.value)


def test_a_profile_matches_on_what_it_needs():
    l4 = GpuDevice(name="NVIDIA L4", compute_capability="8.9", driver_version="550", memory_mib=23034)
    assert device_problems([l4], T4, "gpu-t4") == [
        "GPU NVIDIA L4, compute capability 8.9, 23034 MiB, driver 550: the name is not 'Tesla T4'",
        "GPU NVIDIA L4, compute capability 8.9, 23034 MiB, driver 550: compute capability 8.9, the profile needs 7.5",
        "GPU NVIDIA L4, compute capability 8.9, 23034 MiB, driver 550: memory 23034 MiB, "
        "the profile needs 14500-16384 MiB",
    ]
    forty = parse_query_gpu(fixture("nvidia-smi-a100-40g.txt"))
    # the name pattern alone would not tell
    assert any("memory 40960 MiB" in line for line in device_problems(forty, A100, "gpu-a100-80g"))
    assert device_problems([], T4, "gpu-t4") == [
        "no GPU identity recorded (nvidia-smi --query-gpu): profile gpu-t4 needs Tesla T4"
    ]
    assert device_problems(t4_devices() * 2, T4, "gpu-t4") == ["the engine sees 2 GPU(s), profile gpu-t4 runs on 1"]


def test_a_mig_slice_is_not_a_whole_gpu():
    devices = with_mig(parse_query_gpu(fixture("nvidia-smi-a100-mig.txt")), fixture("nvidia-smi-a100-mig-L.txt"))
    assert devices[0].mig_profile == "3g.40gb"
    assert device_problems(devices, A100, "gpu-a100-80g") == [
        "GPU NVIDIA A100-SXM4-80GB, compute capability 8.0, 81920 MiB, driver 550.90.07, MIG 3g.40gb: "
        "MIG slice 3g.40gb, profile gpu-a100-80g needs a whole GPU"
    ]
    with pytest.raises(EngineRefused, match="needs a whole GPU; refused"):
        check_devices("e", devices, A100, "gpu-a100-80g")


# ---------------------------------------------------------------- engine.log


def test_a_t4_log_proves_the_gpu_ran():
    log = parse_cuda_log(fixture("t4-cuda.log"))
    assert log.found == [1] and [(d.name, d.compute_capability, d.vram_mib) for d in log.devices] == [
        ("Tesla T4", "7.5", 14930)
    ]
    assert [(o.offloaded, o.total) for o in log.offloads] == [(25, 25)]
    assert log_problems(log, T4, "gpu-t4") == [] and identity_agrees(t4_devices(), log) == []


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "stub-libcuda.log",
            "CUDA failed to initialise in the engine (CUDA driver is a stub library): "
            "it served on the CPU, not on a Tesla T4",
        ),
        (
            "cpu-build.log",
            "the engine log shows no CUDA device (ggml_cuda_init): it served on the CPU, not on a Tesla T4",
        ),
        ("partial-offload.log", "only 10 of 33 layers were offloaded to the GPU: the rest ran on the CPU"),
    ],
)
def test_a_cpu_fallback_is_named(name, why):
    assert why in log_problems(parse_cuda_log(fixture(name)), T4, "gpu-t4")


def test_the_flash_attention_the_context_ran_with_is_the_profiles():
    log = parse_cuda_log(
        fixture("t4-cuda.log").replace("flash_attn            = enabled", "flash_attn            = disabled")
    )
    assert log_problems(log, T4, "gpu-t4") == ["the engine ran with flash_attn = disabled, profile gpu-t4 sets on"]


def test_nvidia_smi_and_cuda_must_name_the_same_gpu():
    log = parse_cuda_log(fixture("t4-cuda.log").replace("Tesla T4", "NVIDIA L4"))
    assert identity_agrees(t4_devices(), log) == ["nvidia-smi names Tesla T4, CUDA found NVIDIA L4"]


# ---------------------------------------------------------------- repro check


def verdicts(run: Path) -> dict[str, tuple[str, list[str]]]:
    return {cell.cell_id: (cell.verdict, cell.reasons) for cell in check_run(run, Redactor(CANARY)).cells}


def t4_log(cell) -> str:
    """t4-cuda.log with the cell's model's weights in device memory (96 % of its GGUF: the file
    also holds the vocabulary and metadata)."""
    return fixture("t4-cuda.log").replace("92.16 MiB", f"{cell.model.file_size * 0.96 / 2**20:.2f} MiB")


def test_check_is_valid_for_a_gpu_cell_with_its_evidence(tmp_path):
    run = write_bundle(tmp_path / "t4-ok", profile_name="gpu-t4", engine_log=t4_log, gpu=t4_devices())
    found = verdicts(run)
    assert found and all(verdict == "VALID" for verdict, _ in found.values()), found


def test_the_weights_in_device_memory_are_read_and_held_against_the_gguf():
    log = parse_cuda_log(fixture("t4-cuda.log"))
    assert log.weights_mib == {0: 92.16}
    smollm, qwen = (model.file_size for model in SMOKE.models[:2])
    assert weights_problems(log, smollm) == []
    assert weights_problems(log, qwen) == [
        f"the engine holds 92.2 MiB of weights in device memory, the GGUF is {qwen / 2**20:.1f} MiB: "
        "not this model's weights on the GPU"
    ]
    no_buffer = parse_cuda_log(
        fixture("t4-cuda.log").replace("CUDA0 model buffer size", "CPU_Mapped model buffer size")
    )
    assert engine_log_problems(ENGINE_KINDS["llama.cpp"], no_buffer, T4, "gpu-t4", smollm) == [
        "the engine log shows no model weights in device memory (CUDA0 model buffer size = X MiB)"
    ]


def test_check_refuses_a_buffer_far_smaller_than_the_gguf(tmp_path):
    """Every layer "offloaded" (printed from the requested -ngl), but the CUDA buffer holds a fifth
    of Qwen's GGUF: its cell is INVALID, SmolLM2's (whose weights the buffer holds) VALID."""
    run = write_bundle(
        tmp_path / "t4-small-buffer", profile_name="gpu-t4", engine_log=fixture("t4-cuda.log"), gpu=t4_devices()
    )
    found = {cell_id.split("__")[0]: result for cell_id, result in verdicts(run).items()}
    assert found["smollm2-135m-instruct-q4_1"][0] == "VALID", found
    verdict, reasons = found["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    assert verdict == "INVALID" and any("not this model's weights on the GPU" in reason for reason in reasons), reasons


def two_replicas(run: Path) -> None:
    """Record the bundle's cells as served by two engine replicas (one harness worker each)."""
    for cell_dir in (run / "cells").iterdir():
        record = json.loads((cell_dir / "cell.json").read_text())
        record["execution"].update(replicas=2, workers=2)
        (cell_dir / "cell.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    Bundle(run, Redactor(CANARY)).write_manifest()


@pytest.mark.parametrize("second", ["t4", "none"])
def test_every_replica_shows_its_own_cuda_evidence(tmp_path, second):
    """engine.log holds one log per replica; the second replica's without CUDA lines fails the rule
    even though the first one's show them."""

    def joined(cell) -> str:
        other = t4_log(cell) if second == "t4" else "srv  llama_server: initializing ...\n"
        return (
            f"--- replica 1 of 2 ---\n{t4_log(cell)}llama threadpool init, n_threads = 4\n--- replica 2 of 2 ---\n"
            f"{other}"
        )

    run = write_bundle(tmp_path / f"two-{second}", profile_name="gpu-t4", engine_log=joined, gpu=t4_devices())
    two_replicas(run)
    for verdict, reasons in verdicts(run).values():
        if second == "t4":
            assert verdict == "VALID", reasons
        else:
            assert verdict == "INVALID" and reasons == [
                "replica 2 of 2: the engine log shows no CUDA device (ggml_cuda_init): "
                "it served on the CPU, not on a Tesla T4"
            ], reasons


def test_a_log_for_fewer_replicas_than_the_cell_ran_is_refused(tmp_path):
    run = write_bundle(tmp_path / "two-one-log", profile_name="gpu-t4", engine_log=t4_log, gpu=t4_devices())
    two_replicas(run)
    for verdict, reasons in verdicts(run).values():
        assert verdict == "INVALID" and any(
            "holds 1 engine log(s), the cell ran 2 replica(s)" in reason for reason in reasons
        ), reasons


def test_an_ollama_log_proves_its_device_from_its_own_lines():
    smollm, ollama = SMOKE.models[0].file_size, ENGINE_KINDS["ollama"]
    log = parse_cuda_log(fixture("ollama-t4.log"))
    assert [(c.library, c.name, c.compute_capability) for c in log.compute] == [("cuda", "Tesla T4", "7.5")]
    assert engine_log_problems(ollama, log, T4, "gpu-t4", smollm) == [] and identity_agrees(t4_devices(), log) == []
    assert engine_log_problems(ollama, parse_cuda_log(fixture("ollama-cpu.log")), T4, "gpu-t4", smollm) == [
        "the engine log shows no CUDA device (Ollama's inference compute line): it served on the CPU, not on a Tesla T4"
    ]
    l4 = parse_cuda_log(fixture("ollama-t4.log").replace('name="Tesla T4"', 'name="NVIDIA L4"'))
    assert engine_log_problems(ollama, l4, T4, "gpu-t4", smollm) == [
        "Ollama's device NVIDIA L4: the name is not 'Tesla T4'"
    ]
    small = parse_cuda_log(fixture("ollama-t4.log"))
    assert (
        "not this model's weights on the GPU"
        in engine_log_problems(ollama, small, T4, "gpu-t4", SMOKE.models[1].file_size)[0]
    )


def test_check_refuses_a_cpu_fallback_labelled_t4(tmp_path):
    run = write_bundle(
        tmp_path / "t4-fallback", profile_name="gpu-t4", engine_log=fixture("stub-libcuda.log"), gpu=t4_devices()
    )
    for verdict, reasons in verdicts(run).values():
        assert verdict == "INVALID"
        assert reasons == [
            "CUDA failed to initialise in the engine (CUDA driver is a stub library): "
            "it served on the CPU, not on a Tesla T4"
        ]


def test_check_refuses_a_gpu_cell_without_identity(tmp_path):
    run = write_bundle(tmp_path / "t4-no-identity", profile_name="gpu-t4", engine_log=fixture("t4-cuda.log"))
    for verdict, reasons in verdicts(run).values():
        assert verdict == "INVALID" and any("no GPU identity recorded" in reason for reason in reasons)


def test_cpu_cells_are_not_touched_by_the_gpu_rule(tmp_path):
    run = write_bundle(tmp_path / "cpu")
    assert all(verdict == "VALID" for verdict, _ in verdicts(run).values())


# ---------------------------------------------------------------- pinned server options


def flag_values(argv: list[str]) -> dict[str, str]:
    return {flag: value for flag, value in zip(argv, [*argv[1:], ""], strict=True) if flag.startswith("-")}


def test_every_option_chosen_per_device_is_pinned_on_a_cuda_profile():
    argv = flag_values(server_args(SMOKE.models[0], T4, SMOKE.decoding))
    assert (
        argv["--flash-attn"] == "on"
        and argv["--fit"] == "off"
        and argv["--split-mode"] == "none"
        and argv["--main-gpu"] == "0"
    )
    assert argv["-ngl"] == "999" and argv["-b"] == "2048" and argv["-ub"] == "512" and argv["-lv"] == "4"
    assert "--no-cache-prompt" in argv and argv["--cache-ram"] == "0"
    long_forms = {"-ngl": "--gpu-layers", "-b": "--batch-size", "-ub": "--ubatch-size"}
    assert set(DEVICE_CHOSEN) <= {long_forms.get(flag, flag) for flag in argv}


def test_a_cpu_profile_gets_no_gpu_options():
    argv = server_args(SMOKE.models[0], CPU, SMOKE.decoding)
    assert not {"--flash-attn", "--fit", "--split-mode", "-lv"} & set(argv)
    assert "--no-cache-prompt" in argv


def test_every_shipped_cuda_profile_names_its_device_and_pins():
    assert {name: p.missing_gpu_pins() for name, p in PROFILES.profiles.items()} == dict.fromkeys(PROFILES.profiles, [])


# ---------------------------------------------------------------- CUDA architectures


def test_the_image_is_built_for_exactly_what_the_profiles_name_and_the_toolkit_builds():
    offline = profile_architectures(PROFILES.profiles.values(), TOOLKITS["offline"])
    assert offline == ["75", "80", "89"]  # gpu-t4, gpu-a100-80g, gpu-l4; gpu-h100's 90 needs CUDA 12
    dockerfile = Path(__file__).resolve().parents[2] / "images" / "llama-cpp" / "Dockerfile.cuda"
    assert dockerfile_args(dockerfile)["CUDA_ARCHITECTURES"].strip('"') == ";".join(offline)
    assert profile_architectures(PROFILES.profiles.values(), TOOLKITS["registry"]) == ["75", "80", "89", "90"]


def test_a_profile_that_needs_a_newer_toolkit_says_so_in_one_line():
    line = unbuildable(PROFILES.get("gpu-h100"), "gpu-h100", TOOLKITS["offline"])
    assert line is not None and "\n" not in line
    assert "needs compute capability 9.0" in line and "REPRO_CUDA_BASES=registry" in line
    assert (
        unbuildable(T4, "gpu-t4", TOOLKITS["offline"]) is None and unbuildable(CPU, "cpu", TOOLKITS["offline"]) is None
    )


def test_a_real_cuobjdump_listing_is_read():
    assert parse_cuobjdump(fixture("cuobjdump-argmax.txt")) == EmbeddedCode(elf=["75"], ptx=["75"])


def test_cuobjdump_listings_are_read_and_checked():
    listing = (
        "ELF file    1: llama-server.1.sm_75.cubin\nELF file    2: llama-server.2.sm_75.cubin\n"
        "PTX file    1: llama-server.1.sm_75.ptx\n"
    )
    assert parse_cuobjdump(listing) == EmbeddedCode(elf=["75"], ptx=["75"])
    assert embedded_problems(parse_cuobjdump(listing), ["75"]) == []
    assert embedded_problems(EmbeddedCode(elf=["75", "80"], ptx=[]), ["75"]) == [
        "the binary's machine (ELF) code is for sm_75, sm_80, not sm_75",
        "the binary's PTX code is for no architecture, not sm_75",
    ]


# ---------------------------------------------------------------- doctor


def info(name: str) -> dict:
    return json.loads(fixture(name))


def test_doctor_looks_for_the_hook_on_dockerds_path_not_at_runtimes():
    hook = "/usr/bin/nvidia-container-runtime-hook"
    with_hook = nvidia_hook_finding(
        info("docker-info-plain.json"), "/usr/sbin:/usr/bin", exists=lambda path: path == hook
    )
    # Runtimes lists no nvidia: Docker serves --gpus anyway
    assert with_hook.level == "OK" and "/usr/bin on dockerd's PATH" in with_hook.detail
    without = nvidia_hook_finding(info("docker-info-nvidia.json"), "/usr/sbin:/usr/bin", exists=lambda path: False)
    # a runtime listed, but no hook on PATH
    assert without.level == "WARN" and "only the cpu profile can run" in without.detail
    remote = nvidia_hook_finding(info("docker-info-nvidia.json"), None)
    assert remote.level == "OK" and "cannot be read" in remote.detail


def test_doctor_reads_the_host_driver_version():
    assert driver_finding("535.183.01\n").level == "OK"
    old = driver_finding("470.256.02\n")
    assert old.level == "FAIL" and "needs driver >= 520" in old.hint
    assert driver_finding(None).level == "WARN"
    assert driver_finding("nvidia-smi exit 9").level == "FAIL"


# ---------------------------------------------------------------- replicas


def test_replicas_on_a_multi_gpu_host_get_distinct_gpus():
    ids = ["0", "1", "2", "3"]
    assert [replica_devices(ids, 1, replica) for replica in range(4)] == [["0"], ["1"], ["2"], ["3"]]
    assert [replica_devices(ids, 2, replica) for replica in range(3)] == [["0", "1"], ["2", "3"], ["0", "1"]]
    assert replica_devices(["0"], 1, 3) == ["0"]  # one GPU: the replicas share it


def test_a_replicas_gpu_memory_comes_from_the_model_and_the_context():
    # Llama 3 8B at Q4_K_M (4.9 GB): 32 layers, 8 KV heads of 128, a 128256-token vocabulary.
    shape = {"block_count": 32, "embedding_length": 4096, "attention.head_count": 32, "attention.head_count_kv": 8}
    weights = 4_920_000_000
    at_32k = replica_allowance(weights, shape, 32768, 128256)
    assert at_32k - weights == 2 * 32 * 32768 * 8 * 256 + 4 * 512 * 128256 + 512 * 1024**2  # 4 GiB of KV cache alone
    assert capacity(T4, host_cpus=64, model_bytes=weights, gpu_bytes=at_32k) == 1  # the old 1 GiB allowance said 2
    assert capacity(T4, host_cpus=64, model_bytes=weights) == 2
    assert replica_allowance(weights, {}, 32768, 0) == weights + 1024**3  # shape unknown: the old estimate


def test_the_gguf_header_gives_the_models_shape(tmp_path):
    import struct

    def string(text: str) -> bytes:
        return struct.pack("<Q", len(text.encode())) + text.encode()

    entries = [
        string("general.architecture") + struct.pack("<I", 8) + string("llama"),
        string("llama.block_count") + struct.pack("<II", 4, 32),
        string("llama.attention.head_count_kv") + struct.pack("<IIQ", 9, 4, 2) + struct.pack("<II", 8, 4),
        string("llama.vision.block_count") + struct.pack("<II", 4, 99),
    ]
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries))
    assert read_header(path).shape == {"block_count": 32, "attention.head_count_kv": 8}


# ---------------------------------------------------------------- verify


def test_verify_never_reproduces_a_row_on_another_accelerator_or_driver():
    """A gpu-l4 rerun of a gpu-t4 row, or the same GPU on another driver, is another setup."""
    from repro.report.tables import RowHardware
    from repro.spec.claims import LoadedClaims, Source
    from repro.spec.harnesses import HarnessPin
    from repro.verify.claims import verify_claims
    from repro.verify.own_claims import claims_from_rerun
    from repro.verify.published import load_published
    from repro.verify.rerun_rows import Rerun, published_row

    published = load_published(Path(__file__).resolve().parents[2] / "paper" / "published" / "smoke-cpu.json")
    row = published.rows[0]
    t4 = row.model_copy(
        update={
            "setup": None,  # a row read by its hardware fields, as an older results.json's are
            "engine_variant": "cuda",
            "hardware": RowHardware(accelerator="Tesla T4", compute_capability="7.5", driver_version="535.183.01"),
        }
    )
    l4 = t4.model_copy(
        update={"hardware": RowHardware(accelerator="NVIDIA L4", compute_capability="8.9", driver_version="535.183.01")}
    )
    newer_driver = t4.model_copy(update={"hardware": t4.hardware.model_copy(update={"driver_version": "550.90.07"})})

    def verdict(claimed, rerun):
        source = Source(citation="t", path="paper/published/smoke-cpu.json", date="2026-12-03")
        claims = claims_from_rerun(Rerun(rows=[published_row(claimed, HarnessPin(name="repro"), "llama.cpp")]), source)
        report = verify_claims(
            LoadedClaims(path=Path("x"), sha256="0", claims=claims),
            Rerun(rows=[published_row(rerun, HarnessPin(name="repro"), "llama.cpp")]),
        )
        return report.verdicts[0]

    assert verdict(t4, l4).verdict == "REPRODUCED ON ANOTHER SETUP" and verdict(t4, l4).setup == "differs: hardware"
    assert verdict(t4, newer_driver).setup == "differs: hardware"
    assert verdict(t4, t4).verdict == "REPRODUCED" and verdict(row, row).verdict == "REPRODUCED"
