"""Check rule `bounds`: every number a cell records is finite, non-negative and consistent with
the others and with the decoding settings, and each reply has exactly one timing.

The numbers go straight into the time table (repro.report.tables.TimeSplit), so none is taken on its
word: seconds (of a scenario, a request, the engine's boot, the harness, the gate), token counts
(at most `max_tokens` per reply, prompt and reply within `context`), and the engine's own timings
(milliseconds within the request's wall time, a generation speed that follows from its count and
its milliseconds and stays below `MAX_TOKENS_PER_SECOND`). A scenario's timings are one per reply
of its transcript, in order (step, attempt), and add up to its recorded token counts (a
transcript that records no reply at all is the `regraded` rule's: its protocol reads none).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.contracts import InvalidEntry, ScenarioResult, StepEntry, StepTiming, TranscriptEntry
from repro.core.errors import BadInput
from repro.spec.matrix import Decoding

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence

MAX_TOKENS_PER_SECOND = 50_000.0  # far above any single sequence on any engine today
MAX_SECONDS = 7 * 24 * 3600.0  # a week: no request, scenario or cell takes longer
WALL_SLACK_S = 0.05  # the engine's clock and the harness's are read at slightly different moments
RATE_TOLERANCE = 0.01  # the engine rounds its reported speed
SHOWN = 3


def finite(value: Any) -> bool:
    """A real, finite, non-negative number below the bound of any recorded quantity."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1e12
    )


def seconds_problem(what: str, value: float | None) -> list[str]:
    if value is None or (finite(value) and value <= MAX_SECONDS):
        return []
    return [f"{what} is {value!r}, not a number of seconds between 0 and {MAX_SECONDS:g}"]


ResultBounds = Callable[[ScenarioResult, list, Decoding], list[str]]  # one result's numbers, with its transcript


def rule_bounds(ev: CellEvidence, per_result: ResultBounds | None = None, what: str = "scenarios") -> list[str]:
    """Every recorded number of the cell in bounds: the cell's and the gate's seconds, each result's
    numbers (`per_result`: ours check the transcript's too; an external suite's, its tasks' seconds
    and tokens), and the results' time within the harness's; the first few problems, then a count."""
    try:
        results = ev.bundle.results(ev.cell_id)
        transcripts = {line.id: line.transcript for line in ev.bundle.transcripts(ev.cell_id)}
    except BadInput:
        return []  # the summary and regraded rules name unreadable files
    decoding = ev.record.cell.decoding
    problems = cell_seconds(ev) + gate_bounds(ev, decoding)
    for result in results:
        problems += (per_result or result_bounds)(result, transcripts.get(result.id, result.transcript) or [], decoding)
    return shown(problems + within_harness(ev, results, what))


def within_harness(ev: CellEvidence, results: list[ScenarioResult], what: str) -> list[str]:
    """The results' seconds within the harness's wall time times its workers. A resumed cell's
    harness ran only the scenarios the interrupted attempt had not finished (`resumed_kept`, which
    must name some of the cell's scenarios and leave at least one that this attempt ran)."""
    kept = set(ev.record.resumed_kept)
    ids = {r.id for r in results}
    if kept and (not kept < ids):
        return [
            f"resumed_kept names {len(kept)} scenario(s), not a part of the cell's {len(ids)} "
            "(a resume reruns at least one)"
        ]
    rerun = [r for r in results if r.id not in kept]
    workers = ev.record.execution.workers if ev.record.execution else 1
    harness = ev.record.harness_seconds
    spent = sum(r.seconds for r in rerun if finite(r.seconds))
    problems = attempts_within_harness(ev, results, what) if kept else []
    if harness is not None and finite(harness) and spent > harness * workers + WALL_SLACK_S * len(rerun):
        kept_note = f" ({len(kept)} kept from an interrupted attempt left out)" if kept else ""
        problems.append(
            f"the {what} took {spent:.3f} s in all{kept_note}, more than the harness's {harness:.3f} s with "
            f"{workers} worker(s)"
        )
    return problems


def attempts_within_harness(ev: CellEvidence, results: list[ScenarioResult], what: str) -> list[str]:
    """Each earlier attempt's kept scenarios within that attempt's harness wall time (its clock up
    to its last finished scenario) times its workers: every scenario of a resumed cell is bound by
    the attempt that ran it. An attempt that records no harness time leaves its scenarios' seconds
    unbound, which is refused."""
    seconds = {r.id: r.seconds for r in results if finite(r.seconds)}
    problems = []
    for number, attempt in enumerate(ev.record.earlier_attempts, start=1):
        harness = attempt.harness_seconds
        if harness is None or not (finite(harness) and harness <= MAX_SECONDS):
            problems.append(
                f"earlier attempt {number} records no harness time ({harness!r}): the {what} kept from it are unbound"
            )
            continue
        execution = attempt.partial.execution
        workers = execution.workers if execution else 1
        ids = [i for i in attempt.finished if i in seconds]
        spent = sum(seconds[i] for i in ids)
        if spent > harness * workers + WALL_SLACK_S * len(ids):
            problems.append(
                f"the {len(ids)} {what} kept from earlier attempt {number} took {spent:.3f} s in all, more than "
                f"that attempt's harness {harness:.3f} s with {workers} worker(s)"
            )
    return problems


def shown(problems: list[str]) -> list[str]:
    return problems[:SHOWN] + ([f"{len(problems) - SHOWN} more numbers out of bounds"] if len(problems) > SHOWN else [])


def cell_seconds(ev: CellEvidence) -> list[str]:
    return seconds_problem("engine_boot_seconds", ev.record.engine_boot_seconds) + seconds_problem(
        "harness_seconds", ev.record.harness_seconds
    )


def gate_bounds(ev: CellEvidence, decoding: Decoding) -> list[str]:
    gate = ev.record.gate
    if gate is None:
        return []
    problems = seconds_problem("gate total_seconds", gate.total_seconds)
    for number, attempt in enumerate([gate.warmup, *gate.attempts] if gate.warmup else gate.attempts):
        what = "gate warm-up" if gate.warmup and number == 0 else f"gate attempt {number + (0 if gate.warmup else 1)}"
        problems += seconds_problem(f"{what} seconds", attempt.seconds)
        if attempt.tokens_per_second is not None and not (
            finite(attempt.tokens_per_second) and attempt.tokens_per_second <= MAX_TOKENS_PER_SECOND
        ):
            problems.append(
                f"{what}: {attempt.tokens_per_second!r} tokens/s is out of bounds (0 to {MAX_TOKENS_PER_SECOND:g})"
            )
        if attempt.completion_tokens is not None and not (
            finite(attempt.completion_tokens) and attempt.completion_tokens <= decoding.max_tokens
        ):
            problems.append(
                f"{what}: {attempt.completion_tokens} completion tokens, max_tokens is {decoding.max_tokens}"
            )
    return problems


def reply_positions(transcript: list[TranscriptEntry]) -> list[tuple[int, int]]:
    """(step, attempt) of every reply the transcript records, in order, as the harness numbers
    its timings: each step's replies, then the final invalid turn's at the step after the last."""
    positions: list[tuple[int, int]] = []
    steps = [e for e in transcript if isinstance(e, StepEntry)]  # an external suite's steps record no replies
    for number, step in enumerate(steps, start=1):
        positions += [(number, attempt) for attempt in range(1, len(step.replies) + 1)]
    for invalid in (e for e in transcript if isinstance(e, InvalidEntry)):
        positions += [(len(steps) + 1, attempt) for attempt in range(1, len(invalid.replies) + 1)]
    return positions


def result_bounds(result: ScenarioResult, transcript: list[TranscriptEntry], decoding: Decoding) -> list[str]:
    """One scenario: its totals, one timing per reply in order, and each timing in bounds."""
    name = f"scenario {result.id[:60]}"
    problems = seconds_problem(f"{name} seconds", result.seconds)
    problems += [
        f"{name}: {field} is {value!r}"
        for field, value in (("tokens_in", result.tokens_in), ("tokens_out", result.tokens_out))
        if not finite(value)
    ]
    positions = [(t.step, t.attempt) for t in result.engine_timings]
    expected = reply_positions(transcript)
    if expected and positions != expected:  # a transcript without replies fails the re-grade under its protocol
        problems.append(
            f"{name}: {len(positions)} engine timing(s) for {len(expected)} recorded reply(ies) "
            "(one timing per reply, in order)"
        )
    if (
        sum(t.tokens_in for t in result.engine_timings) != result.tokens_in
        or sum(t.tokens_out for t in result.engine_timings) != result.tokens_out
    ):
        problems.append(f"{name}: tokens_in/tokens_out are not the sums of its timings")
    spent = sum(t.seconds for t in result.engine_timings if finite(t.seconds))
    if finite(result.seconds) and spent > result.seconds + WALL_SLACK_S:
        problems.append(f"{name}: its requests took {spent:.3f} s, more than the scenario's {result.seconds:.3f} s")
    for timing in result.engine_timings:
        problems += timing_bounds(f"{name} step {timing.step} attempt {timing.attempt}", timing, decoding)
    return problems


MAX_TURN_REQUESTS = 64  # the most engine requests one runtime turn may stand for


def requests_of(timing: StepTiming) -> int:
    """The engine requests one recorded attempt stands for: one, but an agent runtime's turn of
    several (its `timings.requests`, which the check's runtime-wire rule holds to the wire)."""
    requests = (timing.timings or {}).get("requests", 1)
    return requests if isinstance(requests, int) and 1 <= requests <= MAX_TURN_REQUESTS else 1


def timing_bounds(what: str, timing: StepTiming, decoding: Decoding) -> list[str]:
    """One request (or one runtime turn's requests): wall seconds, token counts within the decoding,
    the engine's own figures."""
    problems = seconds_problem(f"{what} seconds", timing.seconds)
    if not (finite(timing.tokens_in) and finite(timing.tokens_out)):
        return [*problems, f"{what}: token counts {timing.tokens_in!r}/{timing.tokens_out!r} out of bounds"]
    requests = requests_of(timing)
    if timing.tokens_out > decoding.max_tokens * requests:
        problems.append(f"{what}: {timing.tokens_out} completion tokens, max_tokens is {decoding.max_tokens}")
    if timing.tokens_in + timing.tokens_out > decoding.context * requests:
        problems.append(f"{what}: {timing.tokens_in + timing.tokens_out} tokens, the context is {decoding.context}")
    return problems + engine_timings_bounds(what, timing, decoding)


def engine_timings_bounds(what: str, timing: StepTiming, decoding: Decoding) -> list[str]:
    """The engine's own timings (llama.cpp's prompt_n/ms, predicted_n/ms, per_second): numbers,
    within the request's wall time, and a generation speed that follows from them."""
    figures = timing.timings or {}
    numbers = {
        key: value for key, value in figures.items() if isinstance(value, int | float) and not isinstance(value, bool)
    }
    bad = [key for key, value in numbers.items() if not finite(value)]
    if bad:
        return [f"{what}: engine timing {bad[0]} is {numbers[bad[0]]!r}"]
    problems = []
    engine_ms = numbers.get("prompt_ms", 0) + numbers.get("predicted_ms", 0)
    if finite(timing.seconds) and engine_ms / 1000 > timing.seconds + WALL_SLACK_S:
        problems.append(f"{what}: the engine reports {engine_ms / 1000:.3f} s, the request took {timing.seconds:.3f} s")
    if numbers.get("predicted_n", 0) > decoding.max_tokens * requests_of(timing):
        problems.append(
            f"{what}: the engine generated {numbers['predicted_n']} tokens, max_tokens is {decoding.max_tokens}"
        )
    for kind in ("prompt", "predicted"):
        problems += speed_problems(what, kind, numbers)
    return problems


def speed_problems(what: str, kind: str, numbers: dict[str, float]) -> list[str]:
    """`<kind>_per_second` at most MAX_TOKENS_PER_SECOND (for generation) and equal to
    `<kind>_n` over `<kind>_ms`, when the engine reports them."""
    rate, count, ms = numbers.get(f"{kind}_per_second"), numbers.get(f"{kind}_n"), numbers.get(f"{kind}_ms")
    problems = []
    if kind == "predicted" and rate is not None and rate > MAX_TOKENS_PER_SECOND:
        problems.append(f"{what}: {rate:g} tokens/s generated, above any engine's {MAX_TOKENS_PER_SECOND:g}")
    if rate is not None and count and ms:
        # llama.cpp b11434 times generation from the first sampled token, so its predicted speed is
        # (n - 1) tokens over the time; Ollama's eval rate is n over the time: either follows.
        implied = [counted / ms * 1000 for counted in (count, count - 1) if counted > 0]
        if not any(abs(rate - speed) <= max(RATE_TOLERANCE * speed, 0.5) for speed in implied):
            problems.append(
                f"{what}: {kind}_per_second {rate:g} does not follow from {count:g} tokens in {ms:g} ms "
                f"({implied[0]:.1f})"
            )
    if kind == "predicted" and count and ms is not None and ms > 0 and count / ms * 1000 > MAX_TOKENS_PER_SECOND:
        problems.append(
            f"{what}: {count:g} tokens in {ms:g} ms is above any engine's {MAX_TOKENS_PER_SECOND:g} tokens/s"
        )
    return problems
