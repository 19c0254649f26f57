"""Check rule `gpu-evidence`: a cell of a GPU profile proves it ran on the profile's GPU.

The accelerator name comes from nvidia-smi, which answers from the driver's management library
even when CUDA cannot initialise; llama-server then serves on the CPU and a small model can still
pass the profile's gate. So a ran cell of a GPU profile must carry both witnesses (repro.engines.gpu): the
exact identity nvidia-smi reported (`cell.json` `gpu`: name, compute capability, driver, memory,
MIG slice, matched against the profile), and every engine's own log: each replica's (`engine.log`
holds one per replica, `--- replica i of K ---`) and each earlier attempt's whose scenarios a
resume kept. llama.cpp's must show CUDA initialised on the profile's device, every layer
offloaded, and the model's weights in device memory (`CUDA0 model buffer size`, held against the
GGUF's size: the offload count is printed from the requested `-ngl`, the buffer is what was
allocated); Ollama's its `inference compute` line on CUDA naming the device, every layer offloaded
and the weights on the device. A CPU fallback is INVALID with that reason. Cells of CPU profiles
are not touched by this rule.

It is a rule of format 5, not of a new format: no bundle of a GPU profile was ever written (no
GPU has run this project), so no VALID bundle becomes INVALID, and a new format would let a GPU
bundle relabelled 5 escape the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.bundle.layout.names import ENGINE_LOG
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.engines.gpu import device_problems, engine_log_problems, identity_agrees, parse_cuda_log
from repro.engines.logs import split_logs

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence


def rule_gpu_evidence(ev: CellEvidence) -> list[str]:
    """A GPU profile's cell: the recorded identity matches the profile, and every engine log of
    the cell (each replica's, each kept earlier attempt's) shows the profile's device computing."""
    profile, name, record = ev.run.profile_settings, ev.run.profile, ev.record
    if not profile.gpu:
        return []
    problems = device_problems(record.gpu or [], profile, name)
    logs = [(ENGINE_LOG, "")] + [
        (one.engine_log, f"earlier attempt {number}: ") for number, one in enumerate(record.earlier_attempts, start=1)
    ]
    for log_name, said in logs:
        problems += [said + problem for problem in log_evidence(ev, log_name)]
    return problems


def log_evidence(ev: CellEvidence, log_name: str) -> list[str]:
    """One engine log of the cell: as many replicas' logs as the cell ran, each with its evidence."""
    profile, name, record = ev.run.profile_settings, ev.run.profile, ev.record
    try:
        text = ev.bundle.cell_file(ev.cell_id, log_name, MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except BadInput as error:
        return [f"no CUDA evidence: {error}"]
    replicas = record.execution.replicas if record.execution else 1
    parts = split_logs("replica", text)
    if len(parts) != replicas:
        return [
            f"{log_name} holds {len(parts)} engine log(s), the cell ran {replicas} replica(s): "
            "each replica's evidence is needed"
        ]
    problems = []
    for index, part in enumerate(parts, start=1):
        log = parse_cuda_log(part)
        found = engine_log_problems(
            record.cell.engine.facts, log, profile, name, record.cell.model.file_size
        ) + identity_agrees(record.gpu or [], log)
        problems += [(f"replica {index} of {replicas}: " if replicas > 1 else "") + problem for problem in found]
    return problems
