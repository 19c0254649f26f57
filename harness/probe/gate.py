"""The latency gate (``probe gate``): a warm-up, then k one-step tool round trips with the cell's
real protocol, each attempt timed; ``judge`` is the rule that passes the gate when at least r are
valid steps within the thresholds. Pure where it decides: the host applies ``judge`` again to the
attempts the probe recorded."""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import TYPE_CHECKING, Any

from harness.contracts import (
    EXIT_ENGINE_UNREACHABLE,
    EXIT_OK,
    GateAttempt,
    GateProbeResult,
    GateThresholds,
    GateVerdict,
)
from harness.probe.actions import ProbeInputError

if TYPE_CHECKING:
    from harness.clients.openai_compat import HttpClient


def tokens_per_second(timings: dict[str, Any] | None) -> float | None:
    """The engine's own generation speed: llama.cpp (and our Ollama client) ``predicted_per_second``."""
    if not timings:
        return None
    value = timings.get("predicted_per_second")
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    n, ms = timings.get("predicted_n"), timings.get("predicted_ms")
    if isinstance(n, (int, float)) and isinstance(ms, (int, float)) and ms > 0:
        return n * 1000.0 / ms
    return None


def judge(attempts: list[GateAttempt], *, required: int, max_seconds: float, min_tps: float) -> GateVerdict:
    """Mark each attempt ok or not (with its reason) and decide the gate. Pure: also used on the host."""
    for attempt in attempts:
        reasons = attempt_problems(attempt, max_seconds=max_seconds, min_tps=min_tps)
        attempt.ok = not reasons
        attempt.reason = "; ".join(reasons) if reasons else None
    good = sum(1 for a in attempts if a.ok)
    timed = [a.seconds for a in attempts if not a.error and a.seconds is not None]
    speeds = [a.tokens_per_second for a in attempts if a.tokens_per_second is not None]
    passed = good >= required
    if passed:
        reason = (
            f"{good} of {len(attempts)} attempts within {max_seconds:g}s per step "
            f"and at least {min_tps:g} tokens/s (needed {required})"
        )
    else:
        first = next((a.reason for a in attempts if not a.ok), None) or "no attempts"
        reason = f"only {good} of {len(attempts)} attempts passed (needed {required}); first failure: {first}"
    return GateVerdict(
        passed=passed,
        reason=reason,
        passed_attempts=good,
        median_seconds=statistics.median(timed) if timed else None,
        median_tokens_per_second=statistics.median(speeds) if speeds else None,
    )


def attempt_problems(attempt: GateAttempt, *, max_seconds: float, min_tps: float) -> list[str]:
    if attempt.error:
        return [attempt.error]
    reasons = []
    if not attempt.valid_step:
        reasons.append(f"invalid step: {attempt.problem}")
    if attempt.seconds is None:
        reasons.append("no time")
    elif not math.isfinite(attempt.seconds) or attempt.seconds > max_seconds:
        reasons.append(f"{attempt.seconds:.2f}s > {max_seconds:g}s per step")
    if attempt.tokens_per_second is None:
        reasons.append("the engine reported no generation speed")
    elif not math.isfinite(attempt.tokens_per_second) or attempt.tokens_per_second < min_tps:
        reasons.append(f"{attempt.tokens_per_second:.1f} tokens/s < {min_tps:g}")
    return reasons


def _gate_client(args: argparse.Namespace) -> HttpClient:
    if args.api == "ollama":
        from harness.clients.ollama import OllamaClient

        return OllamaClient(args.base_url, args.model, timeout=args.request_timeout, num_ctx=args.num_ctx)
    from harness.clients.openai_compat import OpenAIClient

    return OpenAIClient(args.base_url, args.model, timeout=args.request_timeout)


def _one_round_trip(client: Any, args: argparse.Namespace) -> GateAttempt:
    """One step with the cell's protocol (no retry); engine failures become an error entry."""
    from harness.agent.policy import Step
    from harness.clients.errors import EngineError, EngineTimeout
    from harness.protocols import round_trip

    try:
        reply, parsed = round_trip(args.protocol, client, max_tokens=args.max_tokens, seed=args.seed)
    except EngineTimeout as error:  # the engine answers too slowly: a slow step, not a fault
        return GateAttempt(error=f"no reply: {error}", timed_out=True)
    except EngineError as error:
        return GateAttempt(error=f"engine fault: {error}", engine_fault=True)
    valid = isinstance(parsed, Step)
    usage = reply.usage or {}
    return GateAttempt(
        seconds=round(reply.seconds, 4),
        tokens_per_second=tokens_per_second(reply.timings),
        completion_tokens=usage.get("completion_tokens"),
        prompt_tokens=usage.get("prompt_tokens"),
        valid_step=valid,
        problem=None if valid else str(parsed),
        tool=parsed.tool if isinstance(parsed, Step) else None,
        finish_reason=reply.finish_reason,
    )


def action_gate(args: argparse.Namespace) -> tuple[GateProbeResult, int]:
    from harness.protocols import PROTOCOLS

    if args.protocol not in PROTOCOLS:
        raise ProbeInputError(f"unknown protocol {args.protocol!r} (protocols: {', '.join(PROTOCOLS)})")
    if args.required > args.attempts:
        raise ProbeInputError(f"--required {args.required} exceeds --attempts {args.attempts}")
    started = time.monotonic()
    client = _gate_client(args)
    try:
        warmup = _one_round_trip(client, args) if args.warmup else None
        attempts = [_one_round_trip(client, args) for _ in range(args.attempts)]
    finally:
        client.close()
    verdict = judge(attempts, required=args.required, max_seconds=args.max_seconds, min_tps=args.min_tps)
    every = ([warmup] if warmup else []) + attempts
    unreachable = bool(every) and all(a.engine_fault for a in every)
    result = GateProbeResult(
        ok=not unreachable,
        error=every[-1].error if unreachable else None,
        api=args.api,
        model=args.model,
        protocol=args.protocol,
        thresholds=GateThresholds(
            max_seconds_per_step=args.max_seconds,
            min_tokens_per_second=args.min_tps,
            attempts=args.attempts,
            required=args.required,
        ),
        warmup=warmup,
        attempts=attempts,
        total_seconds=round(time.monotonic() - started, 3),
        **verdict.model_dump(),
    )
    return result, (EXIT_ENGINE_UNREACHABLE if unreachable else EXIT_OK)
