"""The cell check rules of every bundle: the cell intact and ended, its images, model and engine
pins, the sandbox and its audits, hardware, execution, the gate, the summary, the suite and the
outcomes recomputed (re-graded from the transcripts), and no host identity left."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.contracts import ProgressEvent, SandboxAudit, ScenarioResult
from repro.bundle.evidence import CellEvidence
from repro.bundle.layout.names import CELLS_DIR, HARNESS_LOG, SUITES_DIR, WIRE_FILE
from repro.bundle.records import CellSummary
from repro.bundle.redact import find_leaks, suite_data_homes  # suite_data_homes: read within bounds, once per check
from repro.check.cross import engine_log_threads
from repro.check.templates import boot_exclusion_evidenced
from repro.containers.sandbox import hardening_problems
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES
from repro.engines.gate import rejudge
from repro.spec.cells import exclusion_label
from repro.spec.profiles import PER_SCENARIO
from repro.suites.registry import cell_execution, kind_of, select

# what the harness recorded of the model: its results, its transcripts, and a runtime cell's wire (the
# runtime's requests carry the model's earlier replies, and the engine's replies are the model's)
MODEL_OUTPUT_FILES = frozenset({"scenarios.jsonl", "transcripts.jsonl", WIRE_FILE})


def rule_cell_intact(ev: CellEvidence) -> list[str]:
    problems = [f"{CELLS_DIR}/{ev.cell_id}: {problem}" for problem in ev.bundle.cell_problems(ev.cell_id)]
    if ev.record.cell.id != ev.cell_id:
        problems.append(f"cell.json names cell {ev.record.cell.id}, its folder is {ev.cell_id}")
    return problems


def rule_cell_status(ev: CellEvidence) -> list[str]:
    record = ev.record
    if record.status == "error":
        return [f"cell error: {record.reason}"]
    if record.status == "excluded" and not record.reason:
        return ["excluded without a recorded reason"]
    return []


def rule_images(ev: CellEvidence) -> list[str]:
    problems = []
    engine, harness = ev.record.engine_image, ev.record.harness_image
    if engine is None or not engine.id:
        problems.append("engine image id not recorded")
    elif engine.pinned_by == "digest" and "@sha256:" not in engine.reference:
        problems.append(f"engine image {engine.reference} is not pinned by digest")
    elif engine.pinned_by == "content-key" and not (engine.key and engine.labels.get("repro.key") == engine.key):
        problems.append("engine image content key not recorded on the image")
    if harness is None or not harness.id:
        problems.append("harness image id not recorded")
    elif harness.labels.get("repro.harness_tree") != ev.run.source.harness_digest:
        problems.append("harness image was not built from the recorded commit's harness source")
    if (
        ev.record.cell.engine.facts.in_harness_image
        and engine is not None
        and engine.labels.get("repro.harness_tree") != ev.run.source.harness_digest
    ):
        problems.append(
            "a scripted engine runs in the harness image of the recorded commit; its engine image is not that image"
        )
    return problems


def rule_model_and_engine(ev: CellEvidence) -> list[str]:
    problems = []
    record = ev.record
    if record.model_sha256_verified != record.cell.model.sha256:
        problems.append("model sha256 not verified against the pin")
    identity = record.engine_identity
    expected = record.cell.engine.expected_identity()
    if identity is None or not identity.matched or identity.reported != expected or identity.expected != expected:
        reported = identity.reported if identity else None
        problems.append(f"engine identity did not match the pin (expected {expected}, reported {reported})")
    return problems


def rule_cell_as_planned(ev: CellEvidence) -> list[str]:
    """The cell's record describes the cell the recomputed plan has under its id (model pin,
    engine, protocol, suite, decoding): an id cannot be kept while its content is changed."""
    planned = {cell.id: cell for cell in ev.plan.planned} if ev.plan and not ev.plan.error else {}
    cell = planned.get(ev.cell_id)
    if cell is None:
        return []  # plan-recomputed names the run-level problem
    if ev.record.cell.model_dump(mode="json") != cell.model_dump(mode="json"):
        return [
            "the cell's record differs from the plan's cell of that id (model, engine, protocol, suite or decoding)"
        ]
    return []


def rule_sandbox(ev: CellEvidence) -> list[str]:
    """The hardening read back from Docker, checked against what each role requires."""
    problems = []
    for role in ("harness", "engine"):
        settings = getattr(ev.record.sandbox, role)
        if settings is None:
            problems.append(f"{role} sandbox settings not recorded")
            continue
        problems += [f"{role} sandbox: {problem}" for problem in hardening_problems(settings, role)]
    return problems


def rule_sandbox_audit(ev: CellEvidence) -> list[str]:
    """The audit from inside, with the harness settings: every escape tried, and every one failed."""
    return audit_problems(ev.record.sandbox_audit, "sandbox audit")


def rule_engine_audit(ev: CellEvidence) -> list[str]:
    """The audit with the engine's settings (its memory limit read, not exceeded): every escape
    tried, and every one failed."""
    return audit_problems(ev.record.engine_audit, "engine sandbox audit")


def audit_problems(audit: SandboxAudit | None, what: str) -> list[str]:
    """One problem per escape not both tried and blocked, or why there is no audit to read."""
    if audit is None:
        return [f"{what} not recorded"]
    if audit.error:
        return [f"{what} failed: {audit.error}"]
    return [
        f"{what}: {item.name} {'was not blocked' if item.attempted else 'was not tried'} ({item.detail})"
        for item in audit.escapes()
    ]


def rule_hardware(ev: CellEvidence) -> list[str]:
    record, run = ev.record, ev.run
    if record.cell.profile != run.profile:
        return [f"cell planned for profile {record.cell.profile}, run on {run.profile}"]
    if not run.profile_settings.accelerator_matches(record.accelerator):
        return [
            f"accelerator {record.accelerator!r} does not match profile {run.profile} "
            f"({run.profile_settings.accelerator})"
        ]
    return []


def rule_execution(ev: CellEvidence) -> list[str]:
    """Threads per engine pinned by the profile (part of a result's identity on CPU); the recorded
    execution, the engine's reported slots and the thread count in its own log all agree with it."""
    profile, name = ev.run.profile_settings, ev.run.profile
    problems = []
    if profile.threads is None:
        problems.append(f"profile {name} pins no thread count, so the result depends on the machine's cores")
    recorded, expected = ev.record.execution, cell_execution(profile, 1, ev.record.cell)
    if recorded is not None and (recorded.threads, recorded.slots, recorded.cache_prompt) != (
        expected.threads,
        expected.slots,
        expected.cache_prompt or legacy_cache_label(ev),
    ):
        problems.append(f"execution recorded as {recorded.label()}, but profile {name} sets {expected.label()}")
    problems += cache_evidence(ev)
    slots = ev.record.engine_settings.reported.get("total_slots")
    if slots is not None and slots != profile.slots:
        problems.append(f"the engine reports {slots} slot(s), profile {name} sets {profile.slots}")
    logged = sorted(set(engine_log_threads(ev)))
    if profile.threads is not None and logged and logged != [profile.threads]:
        problems.append(
            f"the engine log shows n_threads = {', '.join(map(str, logged))}, profile {name} sets {profile.threads}"
        )
    return problems


def legacy_cache_label(ev: CellEvidence) -> bool:
    """Bundles made before 2026-12-04 record "prompt cache on" for a harness whose requests carry no
    cache_prompt, taking llama.cpp's built-in default; the server's `--no-cache-prompt` made the
    default off, and their engine logs show it (`--cache-ram 0`). That record is read as it was
    written (it claims less exactness than the run had, never more); new bundles record the
    profile's mode."""
    recorded = ev.record.execution
    sends = kind_of(ev.record.cell.suite).sends_cache_prompt()
    return bool(not sends and recorded and recorded.cache_prompt)


def cache_evidence(ev: CellEvidence) -> list[str]:
    """The prompt cache the cell records, against the engine's own report of each request (llama.cpp's
    `cache_n`, the prompt tokens it took from its cache): off, no request reused a token; per
    scenario, no scenario's first request did and every later one did (each extends its scenario's
    conversation, so its prefix is in the slot); across the run, some request after a scenario's
    first did. A request whose report lacks the count tells nothing."""
    recorded = ev.record.execution
    if recorded is None:
        return []  # the evidence rule names a missing execution record
    try:
        counts = [scenario_cache_counts(result) for result in ev.bundle.results(ev.cell_id)]
    except BadInput:
        return []  # the bounds rule names an unreadable results file
    firsts = [each[0] for each in counts if each and each[0] is not None]
    later = [count for each in counts for count in each[1:] if count is not None]
    if recorded.cache_prompt == PER_SCENARIO:
        return per_scenario_cache_problems(firsts, later)
    if not recorded.cache_prompt:
        hits = sum(count > 0 for count in firsts + later)
        off = f"the prompt cache is recorded off, but the engine reports cached tokens in {hits} request(s)"
        return [off] if hits else []
    if later and not any(later):
        return [
            f"the prompt cache is recorded on, but the engine reports no cached token in {len(later)} later step(s)"
        ]
    return []


def scenario_cache_counts(result: ScenarioResult) -> list[int | None]:
    """`cache_n` of each of a scenario's requests in order, as the engine reported it (None where not)."""
    counts = [(timing.timings or {}).get("cache_n") for timing in result.engine_timings]
    return [c if isinstance(c, int) and not isinstance(c, bool) else None for c in counts]


def per_scenario_cache_problems(firsts: list[int], later: list[int]) -> list[str]:
    """Per scenario: each first request read no cached token, each later one read some."""
    warm, cold = sum(count > 0 for count in firsts), sum(count == 0 for count in later)
    problems = []
    if warm:
        problems.append(
            f"the prompt cache is recorded per scenario, but {warm} scenario(s) took cached tokens on their "
            "first request (from what ran before them)"
        )
    if cold:
        problems.append(
            f"the prompt cache is recorded per scenario, but the engine reports no cached token in {cold} "
            "later request(s) of a scenario"
        )
    return problems


def rule_gate(ev: CellEvidence) -> list[str]:
    gate = ev.record.gate
    if gate is None:
        return ["latency gate result not recorded"]
    if not gate.passed:
        return [f"latency gate failed but the cell was not excluded ({gate.reason})"]
    return []


def rule_gate_recomputed(ev: CellEvidence) -> list[str]:
    """The recorded attempts pass the gate again, under the profile's thresholds and the embedded
    matrix's settings: a gate result is never taken on its word."""
    settings = ev.plan.latency_gate if ev.plan else None
    if settings is None or ev.record.gate is None:
        return []  # plan-recomputed and gate name these
    if rejudge(ev.record.gate, ev.run.profile_settings, settings) is False:
        return ["the recorded gate attempts do not pass the gate the profile and matrix set"]
    return []


def rule_exclusion_evidenced(ev: CellEvidence) -> list[str]:
    """A cell the run excluded carries a gate whose recorded attempts really fail."""
    if ev.record.status != "excluded":
        return []
    if boot_exclusion_evidenced(ev):
        return []
    settings = ev.plan.latency_gate if ev.plan else None
    if ev.record.gate is None or settings is None:
        return ["excluded without a recorded latency gate"]
    verdict = rejudge(ev.record.gate, ev.run.profile_settings, settings)
    if verdict is None:
        return ["excluded by a latency gate the matrix turns off"]
    return ["excluded, but its recorded gate attempts pass the gate"] if verdict else []


def rule_exclusion_kind(ev: CellEvidence) -> list[str]:
    """The kind an excluded or failed cell records is the one its evidence shows: speed needs a
    failed gate record, configuration a gate that passed, fault an error; a cell that ran records none."""
    recorded, evidenced = ev.record.exclusion_kind, ev.record.evidenced_kind
    if recorded is None or recorded == evidenced:
        return []
    if evidenced is None:
        return [f"recorded as {exclusion_label(recorded)}, but the cell ran"]
    return [f"recorded as {exclusion_label(recorded)}, but its record shows {exclusion_label(evidenced)}"]


def rule_summary_recomputed(ev: CellEvidence) -> list[str]:
    """The recorded summary must equal the one recomputed from scenarios.jsonl; no engine faults."""
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput as error:
        return [str(error)]
    recorded = ev.record.summary
    if recorded is None:
        return ["no scenario summary recorded"]
    problems = []
    recomputed = CellSummary.of(results)
    if recorded != recomputed:
        problems.append(
            f"recorded summary {recorded.passed}/{recorded.total} differs from scenarios.jsonl "
            f"({recomputed.passed}/{recomputed.total})"
        )
    if [r.id for r in results] != ev.record.suite_ids:
        problems.append("scenarios.jsonl does not hold exactly the suite's scenarios, in order")
    if recomputed.engine_faults:
        problems.append(f"{recomputed.engine_faults} scenarios hit engine errors (not model failures; rerun the cell)")
    return problems


def rule_suite_recomputed(ev: CellEvidence) -> list[str]:
    """The scenarios the cell ran are the embedded suite's: its ids (once each, in order), its
    sha256, and each result's category and level as the scenario files give them."""
    suite, root = ev.record.cell.suite, ev.suite_dir  # NotAtHand: the suite's files are not at hand
    try:
        selection = select(suite.model_copy(update={"path": "scenarios", "source": None}), root=root)
    except BadInput as error:
        return [f"the suite cannot be recomputed from {SUITES_DIR}/{suite.id}: {error}"]
    problems = []
    if selection.sha256 != ev.record.suite_sha256:
        problems.append(
            f"suite sha256 {str(ev.record.suite_sha256)[:12]} is not the embedded suite's ({selection.sha256[:12]})"
        )
    if suite.sha256 is not None and selection.sha256 != suite.sha256:
        problems.append(f"the embedded suite hashes to {selection.sha256[:12]}, the matrix pins {suite.sha256[:12]}")
    if ev.record.suite_ids != ev.record.cell.share(selection).ids:
        problems.append(
            "suite_ids are not the embedded suite's scenarios (the cell's part of them), once each, in order"
        )
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput:
        return problems  # the summary rule names it
    wrong = [r.id for r in results if selection.categories.get(r.id) != r.category]
    problems += [f"scenario {wrong[0]} is recorded in another category than its file's"] if wrong else []
    return problems


@contextmanager
def bundle_fixtures(folder: Path) -> Iterator[None]:
    """The harness reads fixtures from the bundle's copy while re-grading, never from a folder
    the host's HARNESS_FIXTURES names."""
    from harness.regrade import FIXTURES_ENV

    before = os.environ.get(FIXTURES_ENV)
    os.environ[FIXTURES_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FIXTURES_ENV, None)
        else:
            os.environ[FIXTURES_ENV] = before


def rule_regraded(ev: CellEvidence) -> list[str]:
    """Every scenario re-grades: each recorded raw reply, parsed again by the cell's protocol, gives
    the recorded step (call, thought), validity and reject code; the first prompt is rebuilt from
    the embedded scenario; and the steps, executed again against the embedded scenario
    (harness.regrade), give the recorded tool results, outcome, failure and score."""
    from harness.regrade import Replay, ScenarioError, load_scenarios, regrade_all
    from harness.runtimes import native

    cell = ev.record.cell
    copy = ev.suite_dir
    retries = native.policy_retries(cell.protocol, cell.runtime.kind if cell.runtime is not None else None)
    replay = Replay(protocol=cell.protocol, max_tokens=cell.decoding.max_tokens, retries=retries)
    try:
        with bundle_fixtures(copy / "fixtures"):
            report = regrade_all(
                load_scenarios(copy / "scenarios"),
                ev.bundle.results(ev.cell_id),
                ev.bundle.transcripts(ev.cell_id),
                replay,
            )
    except (BadInput, ScenarioError) as error:
        return [f"cannot re-grade: {error}"]
    lines = report.lines()
    return [f"{len(lines)} scenario(s) do not re-grade from their transcripts; first: {lines[0]}"] if lines else []


def rule_results_consistent(ev: CellEvidence) -> list[str]:
    """Each result line agrees with itself: a pass has no failure type, no failed check and no
    engine fault; a failure names its type. (A run that ended early, stuck or at the step limit
    still passes when every check holds, so the status is not part of this.)"""
    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput:
        return []  # the summary rule names it
    bad = [r.id for r in results if r.passed != (r.failure_type is None and not r.failed_checks and not r.engine_fault)]
    return (
        [
            f"scenario {bad[0]}: passed does not follow from its status, "
            f"failure type and failed checks ({len(bad)} such lines)"
        ]
        if bad
        else []
    )


def rule_progress_agrees(ev: CellEvidence) -> list[str]:
    """Each scenario the harness's own output reports (a `{"event": "scenario", ...}` line in
    harness.log, the last for a scenario run twice) passed or failed as scenarios.jsonl says. The
    log keeps each worker's tail, so a scenario it does not show is not held to it."""
    if not ev.bundle.has_file(ev.cell_id, HARNESS_LOG):
        return []
    try:
        text = ev.bundle.cell_file(ev.cell_id, HARNESS_LOG, MAX_LOG_BYTES).decode("utf-8", "replace")
        results = {r.id: r.passed for r in ev.bundle.results(ev.cell_id)}
    except BadInput:
        return []  # the intact and summary rules name it
    reported = {e.id: e.passed for e in map(ProgressEvent.parse, text.splitlines()) if e is not None}
    wrong = sorted(i for i, passed in reported.items() if results.get(i, passed) != passed)
    unknown = sorted(set(reported) - set(results))
    problems = [
        f"harness.log reports scenario {i} {'passed' if reported[i] else 'failed'}, scenarios.jsonl says otherwise"
        for i in wrong[:3]
    ]
    return problems + [f"harness.log reports scenario {i}, which scenarios.jsonl does not hold" for i in unknown[:3]]


def rule_cell_no_host_identity(ev: CellEvidence) -> list[str]:
    """No host path, user or host name in the cell's files. A home folder the embedded suite
    itself names (a fixture's fictional /home/mira/...) is scenario data, not a host's; in what
    the model wrote (results, transcripts, a runtime's wire) only this host's own identity counts, since a model
    may name any home and its container saw none of the host's."""
    data = suite_data_homes(ev.suite_dir) if ev.plan is not None else frozenset()
    leaks = find_leaks(ev.cell_dir, ev.redactor, data, model_output=MODEL_OUTPUT_FILES)
    return [f"host identity left in cells/{ev.cell_id}/{line}" for line in leaks][:5]
