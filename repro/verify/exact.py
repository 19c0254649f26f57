"""When a claim and a rerun are the same exact setup, so the claim promises identity (a CPU
engine, the same threads, one slot, the prompt cache off or per scenario (the same on both sides),
the same engine build, model bytes and harness, every one of them stated, the CPU model included);
else why not, which the verdict says beside its tolerance test. A cache-off claim and a
per-scenario rerun are two setups (the prompt-cache input differs): identity is not promised."""

from __future__ import annotations

from repro.bundle.setup import InputDifference, SetupRecord
from repro.spec.profiles import cache_exact


def exactness(claimed: SetupRecord, rerun: SetupRecord, found: list[InputDifference]) -> str | None:
    """None when claim and rerun are the same exact setup (identity promised); else why not."""
    if found:
        return "the setups differ"
    if rerun.engine_variant != "cpu" or rerun.accelerator:
        return "the rerun ran on a GPU"
    if rerun.slots != 1 or rerun.cache_prompt is None or not cache_exact(rerun.cache_prompt) or rerun.threads is None:
        return "the rerun's execution is not exact (several slots, a run-wide prompt cache, or threads not recorded)"
    unstated = [name for name, value in exact_statements(claimed).items() if value is None]
    if unstated:
        return f"the claim does not state {', '.join(unstated)}"
    return None


def exact_statements(claimed: SetupRecord) -> dict[str, object]:
    """What a claim must state to promise identity."""
    harness = claimed.harness
    pinned = harness and (harness.tree_digest or harness.commit or harness.archive_sha256 or harness.version)
    cpu = True if claimed.engine_variant == "cpu" or (claimed.accelerator_stated and not claimed.accelerator) else None
    return {
        "the engine build": claimed.engine_build,
        "the threads": claimed.threads,
        "the slots": claimed.slots,
        "the prompt cache": claimed.cache_prompt,
        "the harness's pin": pinned or None,
        "a CPU engine": cpu,
        "the CPU model": claimed.cpu_model,
    }
