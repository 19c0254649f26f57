"""What a GPU cell ran on, from two witnesses that do not fail together.

`nvidia-smi` reads the driver's management library (NVML), not CUDA: when CUDA cannot initialise
in the engine container (a driver too old for the image's toolkit, a library missing), nvidia-smi
still names the GPU while llama-server logs that it found no CUDA device, ignores `-ngl` and
serves on the CPU, fast enough for a small model to pass a GPU profile's latency gate. So a GPU
cell needs both: the exact identity nvidia-smi reports (`GpuDevice`, recorded in cell.json), and
in the engine's own log the CUDA initialisation naming a device of the profile and every layer of
the model offloaded (`CudaLog`). `device_problems` and `log_problems` say, in one line each, what
does not match the profile; the boot refuses such an engine and `repro check` (rule
`gpu-evidence`) refuses such a cell.

The log lines are llama.cpp b11434's (ggml/src/ggml-cuda/ggml-cuda.cu `ggml_cuda_init`,
src/llama-model.cpp `load_tensors`), printed at log verbosity 4 (`-lv 4`, which the engine sets on
GPU profiles); the older form without `VRAM` is read too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from repro.core.errors import ReproError
from repro.core.registry import load_object
from repro.spec.engines import EngineKindFacts
from repro.spec.findings import GpuDevice
from repro.spec.profiles import Profile

QUERY_FIELDS = ("name", "compute_cap", "driver_version", "memory.total", "mig.mode.current")
QUERY_ARGV = ["nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"]
LIST_ARGV = ["nvidia-smi", "-L"]
NOT_AVAILABLE = frozenset({"[N/A]", "N/A", "[Not Supported]", ""})
MAX_LINE = 300  # a log line or nvidia-smi row quoted in a problem is cut here
# a kind's `gpu_evidence` (repro.spec.engines): one engine log, a profile and its name -> what does not match
LogReader = Callable[["CudaLog", Profile, str], list[str]]


class GpuError(ReproError):
    """nvidia-smi printed something that is not the rows asked for (the boot turns it into
    EngineRefused: repro.engines.devices.parse_or_refuse)."""


class CudaDevice(BaseModel):
    """One `Device N: NAME, compute capability M.m, VMM: yes, VRAM: X MiB` line."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    compute_capability: str
    vmm: bool
    vram_mib: int | None = None


class Offload(BaseModel):
    """One `load_tensors: offloaded A/B layers to GPU` line (one per replica)."""

    model_config = ConfigDict(frozen=True)

    offloaded: int
    total: int


class InferenceCompute(BaseModel):
    """One Ollama `msg="inference compute" ... library=cuda ... compute=7.5 ... name="Tesla T4"` line."""

    model_config = ConfigDict(frozen=True)

    library: str
    name: str | None = None
    compute_capability: str | None = None


class CudaLog(BaseModel):
    """What llama.cpp's own log says about CUDA (several replicas: each one's lines, in order)."""

    found: list[int] = []  # "ggml_cuda_init: found N CUDA devices"
    devices: list[CudaDevice] = []
    failures: list[str] = []  # "ggml_cuda_init: failed to initialize CUDA: ..."
    offloads: list[Offload] = []
    no_usable_gpu: bool = False  # "warning: no usable GPU found, --gpu-layers option will be ignored"
    flash_attn: list[str] = []  # "llama_context: flash_attn = enabled": what the context was created with
    # CUDA device -> MiB of model weights in its memory ("CUDA0 model buffer size = X MiB")
    weights_mib: dict[int, float] = {}
    compute: list[InferenceCompute] = []  # Ollama's "inference compute" lines: the devices it chose


FOUND = re.compile(r"ggml_cuda_init: found (\d+) CUDA devices")
DEVICE = re.compile(r"Device (\d+): (.+?), compute capability (\d+)\.(\d+), VMM: (yes|no)(?:, VRAM: (\d+) MiB)?")
FAILED = re.compile(r"ggml_cuda_init: failed to initialize CUDA: ?(.*)")
# llama.cpp's load_tensors line; Ollama's runner prints it too
OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
# llama.cpp's load_tensors: the weights on each device
MODEL_BUFFER = re.compile(r"\bCUDA(\d+) model buffer size\s*=\s*([0-9.]+) MiB")
OLLAMA_WEIGHTS = re.compile(r'msg="model weights" device=CUDA(\d+) size="([0-9.]+) (MiB|GiB)"')  # Ollama's own engine
INFERENCE_COMPUTE = re.compile(r'msg="inference compute"(.*)')
KEY_VALUE = re.compile(r'([\w.]+)=("[^"]*"|\S+)')
# the weights in device memory, as a share of the GGUF's size: all of them, give or take the file's metadata
WEIGHTS_BAND = (0.5, 1.5)
NO_USABLE_GPU = "no usable GPU found"
FLASH_ATTN = re.compile(r"llama_context: flash_attn\s+= (\w+)")
FLASH_ATTN_LOGGED = {"on": "enabled", "off": "disabled"}  # llama_flash_attn_type_name


# ---------------------------------------------------------------- nvidia-smi


def parse_query_gpu(text: str) -> list[GpuDevice]:
    """The rows of `nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`."""
    devices = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(QUERY_FIELDS):
            raise GpuError(
                f"nvidia-smi row has {len(cells)} fields, expected {len(QUERY_FIELDS)} "
                f"({', '.join(QUERY_FIELDS)}): {line[:MAX_LINE]!r}"
            )
        name, capability, driver, memory, mig = (None if cell in NOT_AVAILABLE else cell for cell in cells)
        if name is None:
            raise GpuError(f"nvidia-smi row names no GPU: {line[:MAX_LINE]!r}")
        if memory is not None and not memory.isdigit():
            raise GpuError(f"nvidia-smi memory.total {memory[:40]!r} is not a number of MiB")
        if capability is not None and not re.fullmatch(r"\d+\.\d+", capability):
            raise GpuError(f"nvidia-smi compute_cap {capability[:40]!r} is not MAJOR.MINOR")
        devices.append(
            GpuDevice(
                name=name,
                compute_capability=capability,
                driver_version=driver,
                memory_mib=int(memory) if memory else None,
                mig_mode=mig,
            )
        )
    if not devices:
        raise GpuError("nvidia-smi listed no GPU")
    return devices


MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+\d+:")
GPU_LINE = re.compile(r"^GPU (\d+): ")


def parse_mig_profiles(text: str) -> dict[int, list[str]]:
    """GPU index -> the MIG profiles `nvidia-smi -L` lists under it (`  MIG 1g.10gb  Device 0: ...`)."""
    profiles: dict[int, list[str]] = {}
    current: int | None = None
    for line in text.splitlines():
        if gpu := GPU_LINE.match(line):
            current = int(gpu.group(1))
            profiles.setdefault(current, [])
        elif (mig := MIG_LINE.match(line)) and current is not None:
            profiles[current].append(mig.group(1))
    return profiles


def with_mig(devices: list[GpuDevice], listing: str) -> list[GpuDevice]:
    """Each GPU with the MIG slice the container was given (one slice per GPU is what a profile
    can name; several slices of one GPU are named by their list)."""
    profiles = parse_mig_profiles(listing)
    return [
        device.model_copy(update={"mig_profile": "+".join(profiles.get(index, [])) or None})
        for index, device in enumerate(devices)
    ]


def device_problems(devices: list[GpuDevice], profile: Profile, profile_name: str) -> list[str]:
    """What in nvidia-smi's identity does not match the profile: count, name, compute capability,
    memory, MIG slice."""
    if not devices:
        return [
            f"no GPU identity recorded (nvidia-smi --query-gpu): profile {profile_name} needs "
            f"{profile.accelerator or 'a GPU'}"
        ]
    problems = []
    if profile.gpu_count and len(devices) != profile.gpu_count:
        problems.append(f"the engine sees {len(devices)} GPU(s), profile {profile_name} runs on {profile.gpu_count}")
    for device in devices:
        problems += [
            f"GPU {device.label()}: {why}"
            for why in mismatches(profile, device.name, device.compute_capability, device.memory_mib, memory_known=True)
        ]
        if device.mig_profile != profile.mig_profile:
            wanted = f"MIG slice {profile.mig_profile}" if profile.mig_profile else "a whole GPU"
            problems.append(
                f"GPU {device.label()}: "
                f"{'MIG slice ' + device.mig_profile if device.mig_profile else 'a whole GPU'}, "
                f"profile {profile_name} needs {wanted}"
            )
    return problems


def mismatches(
    profile: Profile, name: str, capability: str | None, memory_mib: int | None, *, memory_known: bool
) -> list[str]:
    """One line per property of a device that is not the profile's (an unknown value is named,
    except the memory of a log line that does not print it: `memory_known=False`)."""
    found = []
    if not profile.accelerator_matches(name):
        found.append(f"the name is not {profile.accelerator!r}")
    if profile.compute_capability and capability != profile.compute_capability:
        found.append(f"compute capability {capability or 'unknown'}, the profile needs {profile.compute_capability}")
    window = profile.gpu_memory_mib
    if (
        window is not None
        and (memory_mib is not None or memory_known)
        and (memory_mib is None or not window.min <= memory_mib <= window.max)
    ):
        found.append(
            f"memory {memory_mib if memory_mib is not None else 'unknown'} MiB, "
            f"the profile needs {window.min}-{window.max} MiB"
        )
    return found


# ---------------------------------------------------------------- engine.log


def parse_cuda_log(text: str) -> CudaLog:
    """The CUDA lines of a llama.cpp log, or of Ollama's (which prints its runner's llama.cpp lines
    and its own), any prefix before them: timestamps, replica markers."""
    log = CudaLog()
    for line in text.splitlines():
        if found := FOUND.search(line):
            log.found.append(int(found.group(1)))
        elif failed := FAILED.search(line):
            log.failures.append(failed.group(1).strip()[:MAX_LINE] or "no reason given")
        elif device := DEVICE.search(line):
            index, name, major, minor, vmm, vram = device.groups()
            log.devices.append(
                CudaDevice(
                    index=int(index),
                    name=name.strip(),
                    compute_capability=f"{major}.{minor}",
                    vmm=vmm == "yes",
                    vram_mib=int(vram) if vram else None,
                )
            )
        elif offload := OFFLOADED.search(line):
            log.offloads.append(Offload(offloaded=int(offload.group(1)), total=int(offload.group(2))))
        elif flash := FLASH_ATTN.search(line):
            log.flash_attn.append(flash.group(1))
        elif NO_USABLE_GPU in line:
            log.no_usable_gpu = True
        else:
            read_weights_or_compute(log, line)
    return log


def read_weights_or_compute(log: CudaLog, line: str) -> None:
    """A line naming the weights on a CUDA device (llama.cpp's or Ollama's), or Ollama's device choice."""
    if weights := MODEL_BUFFER.search(line) or OLLAMA_WEIGHTS.search(line):
        mib = float(weights.group(2)) * (1024 if weights.re is OLLAMA_WEIGHTS and weights.group(3) == "GiB" else 1)
        log.weights_mib[int(weights.group(1))] = log.weights_mib.get(int(weights.group(1)), 0.0) + mib
    elif compute := INFERENCE_COMPUTE.search(line):
        fields = {key: value.strip('"') for key, value in KEY_VALUE.findall(compute.group(1))}
        log.compute.append(
            InferenceCompute(
                library=fields.get("library", ""), name=fields.get("name"), compute_capability=fields.get("compute")
            )
        )


def weights_problems(log: CudaLog, model_bytes: int) -> list[str]:
    """The model's weights are in device memory: the CUDA buffers llama.cpp allocated for them
    (what happened, where the offload count shows only what `-ngl` asked for) hold between half
    and one and a half times the GGUF's size."""
    if not log.weights_mib:
        return ["the engine log shows no model weights in device memory (CUDA0 model buffer size = X MiB)"]
    held = sum(log.weights_mib.values())
    low, high = (share * model_bytes / 2**20 for share in WEIGHTS_BAND)
    if not low <= held <= high:
        return [
            f"the engine holds {held:.1f} MiB of weights in device memory, the GGUF is {model_bytes / 2**20:.1f} "
            "MiB: not this model's weights on the GPU"
        ]
    return []


def ollama_log_problems(log: CudaLog, profile: Profile, profile_name: str) -> list[str]:
    """Ollama's own log: an `inference compute` line with library=cuda naming the profile's device
    (a CPU fallback says library=cpu), and every layer offloaded."""
    wanted = profile.accelerator or "GPU"
    cuda = [one for one in log.compute if one.library.startswith("cuda")]
    if not cuda:
        return [
            "the engine log shows no CUDA device (Ollama's inference compute line): "
            f"it served on the CPU, not on a {wanted}"
        ]
    problems = [
        f"Ollama's device {one.name or 'unnamed'}: {why}"
        for one in cuda
        for why in mismatches(profile, one.name or "", one.compute_capability, None, memory_known=False)
    ]
    return problems + offload_problems(log)


def offload_problems(log: CudaLog) -> list[str]:
    if not log.offloads:
        return ["the engine log shows no layer offload (offloaded N/N layers to GPU)"]
    return [
        f"only {o.offloaded} of {o.total} layers were offloaded to the GPU: the rest ran on the CPU"
        for o in log.offloads
        if o.offloaded != o.total
    ]


def engine_log_problems(
    facts: EngineKindFacts, log: CudaLog, profile: Profile, profile_name: str, model_bytes: int | None
) -> list[str]:
    """Why one engine's log (one replica's) does not show it computing on the profile's GPU with
    the model's weights in device memory, read as the engine kind prints it (its row's
    `gpu_evidence`: `log_problems` for llama.cpp's lines, `ollama_log_problems` for Ollama's)."""
    read: LogReader = load_object(facts.gpu_evidence)
    problems = read(log, profile, profile_name)
    if problems or model_bytes is None:
        return problems
    return weights_problems(log, model_bytes)


def log_problems(log: CudaLog, profile: Profile, profile_name: str) -> list[str]:
    """Why the log does not show the engine computing on the profile's GPU: CUDA failed or never
    initialised (a CPU fallback), another device, or layers left on the CPU."""
    wanted = profile.accelerator or "GPU"
    if log.failures:
        return [f"CUDA failed to initialise in the engine ({log.failures[0]}): it served on the CPU, not on a {wanted}"]
    if log.no_usable_gpu or not log.found or not any(log.found):
        return [f"the engine log shows no CUDA device (ggml_cuda_init): it served on the CPU, not on a {wanted}"]
    problems = []
    if profile.gpu_count and any(count != profile.gpu_count for count in log.found):
        problems.append(
            f"CUDA found {', '.join(map(str, log.found))} device(s), profile {profile_name} runs on {profile.gpu_count}"
        )
    for device in log.devices:
        problems += [
            f"CUDA device {device.index} ({device.name}): {why}"
            for why in mismatches(profile, device.name, device.compute_capability, device.vram_mib, memory_known=False)
        ]
    problems += offload_problems(log)
    wanted_fa = FLASH_ATTN_LOGGED.get(profile.flash_attn or "")
    if wanted_fa and any(found != wanted_fa for found in log.flash_attn):
        problems.append(
            f"the engine ran with flash_attn = {', '.join(sorted(set(log.flash_attn)))}, "
            f"profile {profile_name} sets {profile.flash_attn}"
        )
    return problems


def identity_agrees(devices: list[GpuDevice], log: CudaLog) -> list[str]:
    """nvidia-smi and CUDA name the same GPUs (a container whose nvidia-smi lies, or sees another
    device than CUDA does, is caught here)."""
    named = sorted({device.name for device in devices})
    cuda = sorted({device.name for device in log.devices})
    if devices and cuda and named != cuda:
        return [f"nvidia-smi names {', '.join(named)}, CUDA found {', '.join(cuda)}"]
    return []
