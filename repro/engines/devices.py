"""What an engine gets of the machine and proves it runs on: its CPU quota and threads, its GPUs
(Docker device requests, per replica), and the checks of what it reports against the profile."""

from __future__ import annotations

import os

from repro.containers.client import DockerClient
from repro.engines.errors import EngineRefused
from repro.engines.gpu import GpuError, device_problems, parse_query_gpu
from repro.spec.findings import GpuDevice
from repro.spec.profiles import Profile

GPU_DEVICES_ENV = "REPRO_GPU_DEVICES"


def gpu_device_requests(profile: Profile, replica: int = 0) -> list:
    """Docker device requests for a GPU profile. With REPRO_GPU_DEVICES (the host's GPU ids, e.g.
    `0,1,2,3`), replica i gets the i-th group of gpu_count ids (round robin when there are more
    replicas than groups: those share a GPU, as the memory bound allows), so replicas on a
    multi-GPU host land on distinct GPUs; without it, profile.gpu_count GPUs of Docker's choice."""
    if profile.gpu_count <= 0 and not (profile.accelerator and os.environ.get(GPU_DEVICES_ENV)):
        return []
    from docker.types import DeviceRequest

    ids = [d.strip() for d in os.environ.get(GPU_DEVICES_ENV, "").split(",") if d.strip()]
    if ids:
        return [DeviceRequest(device_ids=replica_devices(ids, profile.gpu_count, replica), capabilities=[["gpu"]])]
    return [DeviceRequest(count=profile.gpu_count, capabilities=[["gpu"]])]


def replica_devices(ids: list[str], per_replica: int, replica: int) -> list[str]:
    """The GPU ids of one replica: consecutive groups of `per_replica` (all ids when it is 0)."""
    if per_replica <= 0 or per_replica >= len(ids):
        return ids
    groups = [ids[i : i + per_replica] for i in range(0, len(ids) - per_replica + 1, per_replica)]
    return groups[replica % len(groups)]


def threads_for(profile: Profile) -> int:
    return profile.threads or (os.cpu_count() or 1)


def nano_cpus_for(profile: Profile, host_cpus: int | None = None) -> int:
    """CPU quota for the engine: the profile's threads, at most what the Docker host has."""
    threads = threads_for(profile)
    if host_cpus:
        threads = min(threads, host_cpus)
    return int(threads * 1_000_000_000)


def host_cpus_of(client: DockerClient) -> int | None:
    try:
        return int(client.info().get("NCPU") or 0) or None
    except Exception:
        return None


def check_accelerator(engine_id: str, accelerator: str | None, profile: Profile, profile_name: str) -> None:
    """Every GPU the engine sees must match the profile's pattern, else EngineRefused."""
    if profile.accelerator is None:
        return
    names = [name.strip() for name in (accelerator or "").split(", ") if name.strip()]
    if not names or not all(profile.accelerator_matches(name) for name in names):
        raise EngineRefused(
            f"engine {engine_id} runs on '{accelerator or 'no GPU'}', profile {profile_name} needs "
            f"'{profile.accelerator}'; refused"
        )


def check_devices(engine_id: str, devices: list[GpuDevice], profile: Profile, profile_name: str) -> None:
    """The GPUs' exact identity matches the profile (count, name, compute capability, memory,
    MIG slice), else EngineRefused naming the first difference."""
    if not profile.gpu:
        return
    problems = device_problems(devices, profile, profile_name)
    if problems:
        raise EngineRefused(f"engine {engine_id}: {problems[0]}; refused")


def parse_or_refuse(engine_id: str, text: str) -> list[GpuDevice]:
    try:
        return parse_query_gpu(text)
    except GpuError as error:
        raise EngineRefused(f"engine {engine_id}: {error}") from None
