"""Re-grading: a scenario's recorded run replayed through the run loop itself and scored
(``regrade``), a late reply scored as the timeout it was, and a cell's results re-graded against
their scenarios (``regrade_all``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from harness.agent.loop import INVALID_REPLY, run_agent
from harness.contracts import FailedCheck, ScenarioResult, TranscriptEntry, TranscriptLine
from harness.model.scenario import Scenario
from harness.model.workspace import Workspace
from harness.protocols import PROTOCOLS
from harness.regrade.compare import compare
from harness.regrade.replay import DEFAULT_MAX_TOKENS, TranscriptPolicy
from harness.regrade.report import Difference, Regrade, RegradeReport, ReplayedStep, printable
from harness.regrade.transcript import RecordedRun, TranscriptError, parse_transcript, replayed_run
from harness.runner import build_transcript, run_scenario, verdict
from harness.scoring.checks import CheckContext, evaluate_all


class Replay(BaseModel):
    """How to replay a cell's transcripts: under its protocol (each raw reply parsed again by it,
    with the cell's max_tokens), or, without one, playing the recorded steps as they are."""

    protocol: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    retries: int = 1  # the re-prompts the cell's policy had (harness.runtimes.native.policy_retries)


def regrade(
    scenario: Scenario, result: ScenarioResult, transcript: Any = None, replay: Replay | None = None
) -> Regrade:
    """Re-grade ``result`` of ``scenario`` from ``transcript`` (default: the result's own; entries,
    or untrusted data that should hold them); with ``replay.protocol``, every raw reply is parsed
    again by that protocol."""
    transcript = result.transcript if transcript is None else transcript
    replay = replay or Replay()
    if replay.protocol is not None and replay.protocol not in PROTOCOLS:
        return _unusable(result, f"unknown protocol {printable(replay.protocol)}")
    try:
        recorded = parse_transcript(transcript, scenario.max_steps)
    except TranscriptError as exc:
        return _unusable(result, str(exc))
    policy = _policy(recorded, result, replay)
    try:
        regraded = run_scenario(scenario, policy)
    except Exception as exc:  # hostile input must never crash a check; the replay says why it stopped
        return _unusable(result, f"replay stopped: {type(exc).__name__}: {str(exc)[:200]}")
    if policy.timed_out and replayed_run(regraded).end.stop == INVALID_REPLY:
        regraded = _rescored_as_timeout(scenario, recorded, regraded, replay)
    differences = compare(result, recorded, regraded)
    if policy.client.short:
        differences.insert(
            0,
            Difference(what="replies", recorded="fewer replies than the protocol reads", regraded=policy.client.short),
        )
    if policy.overrun:
        differences.insert(
            0,
            Difference(
                what="transcript", recorded=f"ends after {len(recorded.steps)} steps", regraded="the run goes on"
            ),
        )
    return _regrade(regraded, differences)


def _policy(recorded: RecordedRun, result: ScenarioResult, replay: Replay) -> TranscriptPolicy:
    """The replay policy: the cell's protocol when given, else the one the result records."""
    if replay.protocol is not None:
        return TranscriptPolicy(
            recorded, replay.protocol, parse=True, max_tokens=replay.max_tokens, retries=replay.retries
        )
    stats = getattr(result, "protocol_stats", None)
    return TranscriptPolicy(recorded, getattr(stats, "protocol", None))


def _rescored_as_timeout(
    scenario: Scenario, recorded: RecordedRun, result: ScenarioResult, replay: Replay
) -> ScenarioResult:
    """A replay cannot run out of wall-clock time: the loop stopped at the recorded late reply as
    for an invalid one. Run it again, mark the run timed out, and score it the way the harness
    scores a timeout (checks that read the run record see ``timeout``)."""
    ws = Workspace.from_spec(scenario.workspace)
    before = ws.snapshot()
    run = run_agent(scenario, ws, _policy(recorded, result, replay))
    run.stop = "timeout"
    outcomes = evaluate_all(scenario.expect, CheckContext(ws, before, run))
    failed = [
        FailedCheck(index=o.index, type=o.type, expected=o.expected, found=o.found) for o in outcomes if not o.passed
    ]
    transcript = build_transcript(run)
    return result.model_copy(
        update={**verdict(scenario, transcript, failed), "failed_checks": failed, "transcript": transcript}
    )


def _unusable(result: ScenarioResult, reason: str) -> Regrade:
    return Regrade(
        id=result.id,
        replayed=False,
        passed=False,
        status="failed",
        differences=[Difference(what="transcript", recorded=reason, regraded="not replayed")],
    )


def _regrade(result: ScenarioResult, differences: list[Difference]) -> Regrade:
    run = replayed_run(result)
    return Regrade(
        id=result.id,
        replayed=True,
        passed=result.passed,
        status=result.status,
        stop=run.end.stop,
        failure_type=result.failure_type,
        failure_step=result.failure_step,
        partial_score=result.partial_score,
        engine_fault=result.engine_fault,
        failed_checks=result.failed_checks,
        steps=[ReplayedStep(step=e.step, tool=e.tool, status=e.status, result=e.result) for e in run.steps],
        differences=differences,
    )


def regrade_all(
    scenarios: Iterable[Scenario],
    results: Iterable[ScenarioResult],
    transcripts: Iterable[TranscriptLine] = (),
    replay: Replay | None = None,
) -> RegradeReport:
    """Re-grade every result against the scenario of the same id and its transcript (from
    ``transcripts``, else the result's own); ``replay`` names the cell's protocol, if known."""
    by_id = {s.id: s for s in scenarios}
    report = RegradeReport()
    found = _unique_by_id(transcripts, "transcript", report.problems)
    seen: set[str] = set()
    for result in results:
        if result.id in seen:
            report.problems.append(f"{printable(result.id)}: more than one result")
            continue
        seen.add(result.id)
        transcript = found.pop(result.id, result.transcript)
        if result.id not in by_id:
            report.problems.append(f"{printable(result.id)}: no such scenario in the suite")
        elif transcript is None:
            report.problems.append(f"{printable(result.id)}: no transcript")
        else:
            report.regrades.append(regrade(by_id[result.id], result, transcript, replay))
    report.problems += [f"{printable(name)}: a transcript without a result" for name in found]
    return report


def _unique_by_id(lines: Iterable[TranscriptLine], what: str, problems: list[str]) -> dict[str, list[TranscriptEntry]]:
    found: dict[str, list[TranscriptEntry]] = {}
    for line in lines:
        if line.id in found:
            problems.append(f"{printable(line.id)}: more than one {what}")
        found[line.id] = line.transcript
    return found
