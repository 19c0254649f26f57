"""Check rule `resumed`: the scenarios a resumed cell kept are proven, not claimed.

A resumed cell (`cell.json` `resumed_kept`) reran only what an interrupted attempt had not
finished, so its harness time, engine log and identity are of its last attempt alone. The kept
scenarios must come with the attempts that computed them (`earlier_attempts`): each one's partial
record ties it to this run, this very cell and suite, and the engine image, identity and execution
settings (threads, slots, prompt cache) the cell records; each scenario it finished has the sha256
of its result and transcript (`KeptScenario.digest`), recomputed here from the cell's own files;
its engine log is a file of the cell, not the cell's own engine log copied, and shows the thread
count the cell ran at. Where the engine's log names each request it serves (llama.cpp), each
attempt's log is bound to the scenarios it ran (repro.check.served): the cell's own log holds the
requests of exactly the scenarios the last attempt reran, and the gate's; an earlier attempt's log
at least those of the scenarios kept from it. A kept list that no earlier attempt accounts for, an
attempt on another engine or settings, a kept scenario whose digest differs, or a log that served
other requests than its attempt's scenarios is INVALID.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from repro.bundle.layout.names import ENGINE_LOG
from repro.bundle.records import EarlierAttempt, Execution, KeptScenario
from repro.check.cross import ENGINE_THREADS
from repro.check.served import calls_per_scenario, own_requests_problem, served_during, sibling_logs
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.spec.profiles import PromptCache

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence

SHOWN = 3


def rule_resumed(ev: CellEvidence) -> list[str]:
    """The kept list is exactly what the recorded earlier attempts finished, each attempt is of
    this cell on the cell's engine and settings, each kept scenario's digest is recomputed, and
    each attempt's engine log served the requests of the scenarios it ran."""
    kept, attempts = ev.record.resumed_kept, ev.record.earlier_attempts
    if not kept and not attempts:
        return []
    claimed = Counter(scenario_id for attempt in attempts for scenario_id in attempt.finished)
    if claimed != Counter(kept):
        return [
            f"resumed_kept names {len(kept)} scenario(s), the recorded earlier attempts finished "
            f"{sum(claimed.values())} ({len(attempts)} attempt(s)): "
            "kept scenarios no earlier attempt of this cell accounts for"
        ]
    problems = [
        problem for number, attempt in enumerate(attempts, start=1) for problem in attempt_problems(ev, number, attempt)
    ]
    return (problems + digest_problems(ev, attempts) + request_problems(ev, attempts))[:SHOWN]


def attempt_problems(ev: CellEvidence, number: int, attempt: EarlierAttempt) -> list[str]:
    """One earlier attempt against the run and the cell: what it belongs to and what computed it."""
    run, record, partial = ev.run, ev.record, attempt.partial
    execution = record.execution
    bound = {
        "run": (partial.run_id, run.run_id),
        "matrix": (partial.matrix_sha256, run.matrix.sha256),
        "profile": (partial.profile, run.profile),
        "commit": (partial.commit, run.source.commit),
        "harness digest": (partial.harness_digest, run.source.harness_digest),
        "cell": (partial.cell.model_dump(mode="json"), record.cell.model_dump(mode="json")),
        "suite": ((partial.suite_sha256, partial.suite_ids), (record.suite_sha256, record.suite_ids)),
        "engine image": (partial.engine_image_id, record.engine_image.id if record.engine_image else None),
        "engine identity": (partial.engine_identity, record.reported_identity),
        "execution": (settings_of(partial.execution), settings_of(execution)),
    }
    problems = [
        f"earlier attempt {number} ran with another {what} than the cell records"
        for what, (was, now) in bound.items()
        if was != now or was is None
    ]
    return problems + attempt_log_problems(ev, number, attempt)


def settings_of(execution: Execution | None) -> tuple[int | None, int, PromptCache] | None:
    """The execution settings that change results: threads, slots, prompt cache."""
    return None if execution is None else (execution.threads, execution.slots, execution.cache_prompt)


def attempt_log_problems(ev: CellEvidence, number: int, attempt: EarlierAttempt) -> list[str]:
    """The attempt's engine log is a file of the cell (its sha256 in `files`), not the cell's own
    engine log copied, and, for an engine that reports its build, shows the thread count the cell ran at."""
    if attempt.engine_log not in ev.record.files:
        return [f"earlier attempt {number}: its engine log {attempt.engine_log!r} is not a file of the cell"]
    try:
        text = ev.bundle.cell_file(ev.cell_id, attempt.engine_log, MAX_LOG_BYTES)
    except BadInput as error:
        return [f"earlier attempt {number}: its engine log is unreadable ({error})"]
    if ev.bundle.has_file(ev.cell_id, ENGINE_LOG) and text == ev.bundle.cell_file(
        ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES
    ):
        return [
            f"earlier attempt {number}: its engine log is the cell's own {ENGINE_LOG}, byte for byte: "
            "it shows no earlier engine (an interrupted attempt's engine served other requests)"
        ]
    threads = ev.record.execution.threads if ev.record.execution else None
    logged = {int(found) for found in ENGINE_THREADS.findall(text)}
    if ev.record.cell.engine.facts.reports_build and threads is not None and logged != {threads}:
        shown = ", ".join(map(str, sorted(logged))) or "none"
        return [f"earlier attempt {number}: its engine log shows n_threads = {shown}, the cell ran at {threads}"]
    return []


def digest_problems(ev: CellEvidence, attempts: list[EarlierAttempt]) -> list[str]:
    """Each kept scenario's result and transcript, as the cell holds them, hash to the digest its
    attempt recorded when it finished them."""
    try:
        results = {result.id: result for result in ev.bundle.results(ev.cell_id)}
        transcripts = {line.id: line for line in ev.bundle.transcripts(ev.cell_id)}
    except BadInput:
        return []  # the summary and regraded rules name unreadable files
    problems = []
    for number, attempt in enumerate(attempts, start=1):
        for scenario_id, digest in attempt.finished.items():
            result, transcript = results.get(scenario_id), transcripts.get(scenario_id)
            if result is None or transcript is None or KeptScenario.digest(result, transcript) != digest:
                problems.append(
                    f"kept scenario {scenario_id[:60]}: its result and transcript are not what earlier attempt "
                    f"{number} finished (sha256 differs)"
                )
    return problems


def request_problems(ev: CellEvidence, attempts: list[EarlierAttempt]) -> list[str]:
    """Each attempt's engine log against the scenarios it ran (repro.check.served), where the
    engine's log names each request: the cell's own log holds the requests of exactly the
    scenarios its last attempt reran (and the gate's); an earlier attempt's log at least those of
    the scenarios kept from it (it may also hold one its interrupt cut short)."""
    request_line = ev.record.cell.engine.facts.request_line
    calls = calls_per_scenario(ev)
    if request_line is None or calls is None or not ev.bundle.has_file(ev.cell_id, ENGINE_LOG):
        return []
    problems: list[str] = []
    siblings = sibling_logs(ev)
    for number, attempt in enumerate(attempts, start=1):
        try:
            log = ev.bundle.cell_file(ev.cell_id, attempt.engine_log, MAX_LOG_BYTES)
        except BadInput:
            continue  # attempt_log_problems names it
        served, _ = served_during(log, request_line, siblings)
        kept = sum(calls.get(scenario_id, 0) for scenario_id in attempt.finished)
        if served < kept:
            problems.append(
                f"earlier attempt {number}: its engine log shows {served} request(s), the "
                f"{len(attempt.finished)} scenario(s) kept from it record {kept}"
            )
    kept_ids = set(ev.record.resumed_kept)
    rerun = [scenario_id for scenario_id in calls if scenario_id not in kept_ids]
    try:
        own = ev.bundle.cell_file(ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES)
    except BadInput as error:
        return [*problems, f"its engine log is unreadable ({error})"]
    problem = own_requests_problem(ev, own, request_line, sum(calls[i] for i in rerun), siblings)
    return problems + ([f"the last attempt, which reran {len(rerun)} scenario(s): {problem}"] if problem else [])
