"""The latency gate: can this engine and model answer one agent step fast enough on this profile?

Run once per booted (engine, model) group, inside the sealed namespace by the probe's `gate`
action: a warm-up request, then k attempts (default 3, pass at 2) of a one-step tool round trip
with the real protocol (`harness.protocols.json_schema.round_trip` over the harness's own chat
client). An attempt passes when the reply is a valid step, it took at most the profile's
`max_seconds_per_step`, and the engine's own generation speed (`timings.predicted_per_second`)
is at least `min_tokens_per_second`. A gate that fails because the
engine was too slow is a measurement of the machine at one moment, so it is measured again after a
pause, at most `GATE_RETRIES` times, and each pause says whether the machine looks busy (its load
average and the processes that used the cores meanwhile, `repro.core.busy`). A gate that still fails
excludes the group's cells with the reason; the `GateResult` (the last measurement, with the
reasons of the earlier ones) is recorded in each cell, never dropped, and `--resume` gates those
cells again.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.contracts import GateProbeResult
from harness.probe import judge
from repro.containers.client import DockerClient
from repro.containers.sandbox import EngineDied, ProbeFailed, ProbeUnreachable, run_probe
from repro.core.busy import pause_and_look
from repro.engines.base import EngineHandle
from repro.spec.findings import GateCause, GateResult
from repro.spec.matrix import Decoding, LatencyGateSettings
from repro.spec.profiles import Profile

PROBE_SLACK_S = 60
GATE_RETRIES = 2  # measurements after the first, when the engine was too slow
GATE_RETRY_PAUSE_S = 30.0  # the pause before each, long enough for a passing load to show


def gate_argv(
    handle: EngineHandle,
    profile: Profile,
    settings: LatencyGateSettings,
    decoding: Decoding,
    protocol: str = "json_schema",
) -> list[str]:
    argv = [
        "gate",
        *handle.client_argv(),
        "--protocol",
        protocol,
        "--attempts",
        str(settings.attempts),
        "--required",
        str(settings.required),
        "--max-seconds",
        f"{profile.gate.max_seconds_per_step:g}",
        "--min-tps",
        f"{profile.gate.min_tokens_per_second:g}",
        "--max-tokens",
        str(decoding.max_tokens),
        "--seed",
        str(decoding.seed),
        "--request-timeout",
        str(profile.step_timeout_s),
    ]
    if settings.warmup:
        argv.append("--warmup")
    if handle.api == "ollama":
        argv += ["--num-ctx", str(decoding.context)]
    return argv


def rejudge(gate: GateResult, profile: Profile, settings: LatencyGateSettings) -> bool | None:
    """Whether a recorded gate's attempts pass under the profile's thresholds and the matrix's
    settings (the probe's rule, on copies); None when the matrix turns the gate off."""
    if not settings.enabled:
        return None
    attempts = [a.model_copy() for a in gate.attempts]
    return judge(
        attempts,
        required=settings.required,
        max_seconds=profile.gate.max_seconds_per_step,
        min_tps=profile.gate.min_tokens_per_second,
    ).passed


def from_probe(
    result: GateProbeResult, handle: EngineHandle, profile: Profile, settings: LatencyGateSettings, protocol: str
) -> GateResult:
    """A GateResult from the probe's result, judged again here with the same rule (harness.probe.judge)."""
    attempts = [a.model_copy() for a in result.attempts]
    verdict = judge(
        attempts,
        required=settings.required,
        max_seconds=profile.gate.max_seconds_per_step,
        min_tps=profile.gate.min_tokens_per_second,
    )
    return GateResult(
        passed=verdict.passed,
        reason=verdict.reason,
        engine_fault=bool(attempts) and all(a.engine_fault for a in attempts),  # nothing could be measured
        engine_id=handle.engine_id,
        model_id=handle.model_id,
        profile=handle.profile,
        protocol=protocol,
        max_seconds_per_step=profile.gate.max_seconds_per_step,
        min_tokens_per_second=profile.gate.min_tokens_per_second,
        attempts_required=settings.required,
        warmup=result.warmup,
        attempts=attempts,
        passed_attempts=verdict.passed_attempts,
        median_seconds=verdict.median_seconds,
        median_tokens_per_second=verdict.median_tokens_per_second,
        total_seconds=result.total_seconds,
    )


# How the run's closing line and an exclusion name each cause (repro.commands.matrix, repro.run).
CAUSE_TEXT: dict[GateCause, str] = {
    "too_slow": "the engine was slower than the profile allows on a quiet machine",
    "busy": "the machine was busy with other work then",
    "invalid_reply": "the model's reply to the gate's probe was not a valid step (a rerun does not change that)",
    "engine_fault": "the engine failed during the gate",
    "probe_failed": "the gate's probe failed",
}
RERUN_MAY_PASS: frozenset[GateCause] = frozenset({"too_slow", "busy", "engine_fault", "probe_failed"})


def gate_with_retries(
    measure: Callable[[], GateResult], profile: Profile, note: Callable[[str], None] = lambda text: None
) -> GateResult:
    """Gate a ready engine with `measure` (a `run_gate` call); a gate that failed because the
    engine was too slow is measured again after a pause (at most GATE_RETRIES times), saying
    through `note` how busy the machine looks; a gate still too slow records whether the machine
    looked busy then (cause `busy`) or not (`too_slow`). EngineDied if the engine container stops meanwhile."""
    earlier: list[str] = []
    sent: list[int] = []
    busy = False
    while True:
        gate = measure()
        if gate.passed or len(earlier) >= GATE_RETRIES or not too_slow(gate, profile) or gate.cause == "invalid_reply":
            cause = "busy" if gate.cause == "too_slow" and busy else gate.cause
            return gate.model_copy(update={"earlier": earlier, "earlier_requests": sent, "cause": cause})
        earlier.append(gate.reason)
        sent.append(gate.sent)
        note(
            f"  latency gate failed ({gate.reason}); measuring again in {GATE_RETRY_PAUSE_S:g} s "
            f"({len(earlier)} of {GATE_RETRIES})"
        )
        load = pause_and_look(GATE_RETRY_PAUSE_S)
        busy = bool(load.busiest)
        note(f"  the machine looks busy: {load.describe()}" if load.busiest else f"  machine load: {load.describe()}")


def gate_cause(gate: GateResult, profile: Profile) -> GateCause | None:
    """What a failed gate measured, from its attempts: an engine fault (nothing measured), a model
    whose every failed attempt was an invalid step (however fast), else an engine too slow (the
    retries tell a busy machine apart). None for a gate that passed or is off."""
    if gate.passed or not gate.enabled:
        return None
    if gate.engine_fault:
        return "engine_fault"
    failed = [a for a in gate.attempts if a.ok is False]
    if failed and all(not a.valid_step and not a.error for a in failed):
        return "invalid_reply"
    if too_slow(gate, profile):
        return "too_slow"
    return "engine_fault" if any(a.error for a in failed) else "invalid_reply"


def too_slow(gate: GateResult, profile: Profile) -> bool:
    """Whether a failed gate measured an engine slower than the profile allows (what a busy machine
    causes), rather than an engine fault or a model that cannot make a valid step."""
    if gate.engine_fault or not gate.enabled:
        return False
    limits = profile.gate
    return any(
        (a.seconds is not None and a.seconds > limits.max_seconds_per_step)
        or (a.tokens_per_second is not None and a.tokens_per_second < limits.min_tokens_per_second)
        for a in gate.attempts
        if not a.engine_fault
    )


def run_gate(
    client: DockerClient,
    handle: EngineHandle,
    *,
    profile: Profile,
    settings: LatencyGateSettings,
    decoding: Decoding,
    protocol: str = "json_schema",
    probe_image: str | None = None,
) -> GateResult:
    """Run the gate probe once against a ready engine. EngineDied if the engine container stops meanwhile."""
    base = {"engine_id": handle.engine_id, "model_id": handle.model_id, "profile": handle.profile, "protocol": protocol}
    if not settings.enabled:
        return GateResult(passed=True, reason="latency gate disabled in the matrix", enabled=False, **base)
    requests = settings.attempts + (1 if settings.warmup else 0)
    timeout = requests * profile.step_timeout_s + PROBE_SLACK_S
    engine = client.containers.get(handle.container_id)
    try:
        result = run_probe(
            client,
            probe_image or handle.probe_image_id,
            engine,
            gate_argv(handle, profile, settings, decoding, protocol),
            GateProbeResult,
            run_id=handle.run_id,
            cell_id=handle.group_id,
            timeout=timeout,
        )
    except ProbeUnreachable as error:
        if not isinstance(error.result, GateProbeResult) or not error.result.attempts:
            return GateResult(
                passed=False, reason=f"engine fault: {error}", engine_fault=True, cause="engine_fault", **base
            )
        result = error.result
    except EngineDied:
        raise
    except ProbeFailed as error:
        return GateResult(passed=False, reason=f"gate probe failed: {error}", cause="probe_failed", **base)
    gate = from_probe(result, handle, profile, settings, protocol)
    if gate.attempts and all(a.engine_fault for a in gate.attempts):
        gate = gate.model_copy(
            update={"passed": False, "reason": f"engine fault in every attempt: {gate.attempts[-1].error}"}
        )
    return gate.model_copy(update={"cause": gate_cause(gate, profile)})
