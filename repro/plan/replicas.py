"""Throughput without losing exactness: engine replicas and harness workers.

A cell's scenarios may be shared by several harness workers. Replicas are K engines of the same
image, model and threads per engine, one slot each: each computes every sequence exactly as the
serial run at those threads does, so a cell run on K replicas has the serial run's transcripts.
Slots (the profile's `slots`) are parallel sequences inside one engine: faster, and not exact.

`replica_count` chooses K from the cores (CPU) and the GPU memory, never putting more engine
threads on the machine than it has cores (llama.cpp's threads spin: oversubscribed, a cell takes
four times as long). `deal` splits a cell's scenario ids among its workers by a fixed rule, and
`in_suite_order` puts what they wrote back in the suite's order.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Protocol, TypeVar

from repro.core.errors import BadInput
from repro.core.files import GIB
from repro.spec.profiles import Profile

GPU_MEMORY_SHARE = 0.9  # of the profile's GPU memory, the rest left to the driver and buffers
GPU_OVERHEAD_BYTES = GIB  # per replica beside its weights when the model's shape is unknown (an estimate)
KV_BYTES_PER_VALUE = 2  # llama.cpp's default KV cache type, f16
COMPUTE_BASE_BYTES = 512 * 1024**2  # CUDA compute buffers beside the logits (an estimate)
UBATCH = 512  # -ub, as the engine pins it (repro.engines.llamacpp)


class HasId(Protocol):
    id: str


Row = TypeVar("Row", bound=HasId)


def replica_allowance(model_bytes: int, shape: dict[str, int], context: int, n_vocab: int) -> int:
    """GPU memory one replica needs, from the model and the context: its weights, the KV cache of
    the whole context (f16 K and V for every layer and KV head), the logits of one micro-batch
    and the compute buffers. Without the model's shape (a GGUF not read), weights plus 1 GiB."""
    layers, embedding, heads = (
        shape.get("block_count"),
        shape.get("embedding_length"),
        shape.get("attention.head_count"),
    )
    if not layers or not embedding or not heads:
        return replica_bytes(model_bytes)
    kv_heads = shape.get("attention.head_count_kv") or heads
    key = shape.get("attention.key_length") or embedding // heads
    value = shape.get("attention.value_length") or embedding // heads
    kv = KV_BYTES_PER_VALUE * layers * context * kv_heads * (key + value)
    logits = 4 * UBATCH * max(n_vocab, 1)
    return model_bytes + kv + logits + COMPUTE_BASE_BYTES


def replica_count(
    requested: int | None, profile: Profile, *, host_cpus: int | None, model_bytes: int, gpu_bytes: int | None = None
) -> int:
    """K: `requested`, or with None ("auto") as many as the machine holds. BadInput when the
    request would put more engine threads than cores on the machine, or overfill the GPU."""
    if profile.threads is None:
        if requested in (None, 1):
            return 1
        raise BadInput("--replicas needs a profile that pins its threads per engine (this one uses every core)")
    room = capacity(profile, host_cpus=host_cpus, model_bytes=model_bytes, gpu_bytes=gpu_bytes)
    if requested is None:
        return room
    if requested > room:
        raise BadInput(
            f"--replicas {requested}: "
            f"{why_not(profile, host_cpus=host_cpus, model_bytes=model_bytes, gpu_bytes=gpu_bytes)}; "
            f"at most {room} fit"
        )
    return requested


def capacity(profile: Profile, *, host_cpus: int | None, model_bytes: int, gpu_bytes: int | None = None) -> int:
    """How many engines of the profile's threads fit the cores (and, on GPU, the memory: each
    replica's allowance, `gpu_bytes`, else its weights plus 1 GiB); at least 1."""
    cores = host_cpus or os.cpu_count() or 1
    fits = cores // (profile.threads or cores)
    if profile.gpu_count > 0:
        fits = min(
            fits, math.floor(profile.memory_gb * GIB * GPU_MEMORY_SHARE / (gpu_bytes or replica_bytes(model_bytes)))
        )
    return max(1, fits)


def replica_bytes(model_bytes: int) -> int:
    """GPU memory one replica needs: its weights and an allowance for KV cache and buffers."""
    return model_bytes + GPU_OVERHEAD_BYTES


def why_not(profile: Profile, *, host_cpus: int | None, model_bytes: int, gpu_bytes: int | None = None) -> str:
    cores = host_cpus or os.cpu_count() or 1
    text = f"{profile.threads} thread(s) per engine on {cores} core(s)"
    if profile.gpu_count > 0:
        text += (
            f", {(gpu_bytes or replica_bytes(model_bytes)) / GIB:.1f} GiB per replica in {profile.memory_gb:g} GB of "
            "GPU memory"
        )
    return text


def deal(ids: Sequence[str], workers: int) -> list[list[str]]:
    """Round-robin in suite order: worker i gets scenarios i, i+W, i+2W, ... (no empty share)."""
    return [list(ids[i::workers]) for i in range(min(workers, len(ids)))]


def in_suite_order(rows: list[Row], ids: Sequence[str]) -> list[Row]:
    """The workers' rows in the suite's order; rows of unknown ids go last (the caller refuses them)."""
    order = {scenario: index for index, scenario in enumerate(ids)}
    return sorted(rows, key=lambda row: order.get(row.id, len(order)))


__all__ = ["capacity", "deal", "in_suite_order", "replica_allowance", "replica_count"]
