"""Check rule `gpu-evidence`: a cell of a GPU profile proves it ran on the profile's GPU.

The accelerator name comes from nvidia-smi, which answers from the driver's management library
even when CUDA cannot initialise; llama-server then serves on the CPU and a small model can still
pass the profile's gate. So a ran cell of a GPU profile must carry both witnesses (repro.engines.gpu): the
exact identity nvidia-smi reported (`cell.json` `gpu`: name, compute capability, driver, memory,
MIG slice, matched against the profile), and, for llama.cpp, its own log's CUDA initialisation
(the devices found, each one's name and compute capability) and every layer offloaded. A CPU
fallback is INVALID with that reason. Cells of CPU profiles are not touched by this rule.

It is a rule of format 5, not of a new format: no bundle of a GPU profile was ever written (no
GPU has run this project), so no VALID bundle becomes INVALID, and a new format would let a GPU
bundle relabelled 5 escape the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.engines.gpu import device_problems, identity_agrees, log_problems, parse_cuda_log

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence

ENGINE_LOG = "engine.log"


def rule_gpu_evidence(ev: CellEvidence) -> list[str]:
    """A GPU profile's cell: the recorded identity matches the profile, and llama.cpp's log shows
    CUDA on that device with every layer offloaded."""
    profile, name, record = ev.run.profile_settings, ev.run.profile, ev.record
    if not profile.gpu:
        return []
    devices = record.gpu or []
    problems = device_problems(devices, profile, name)
    if record.cell.engine.kind != "llama.cpp":
        return problems  # Ollama's log is not read for CUDA (docs/engines.md)
    try:
        text = ev.bundle.cell_file(ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except BadInput as error:
        return [*problems, f"no CUDA evidence: {error}"]
    log = parse_cuda_log(text)
    return problems + log_problems(log, profile, name) + identity_agrees(devices, log)
