"""`repro check` of an external suite's cells: the rules that replace those reading our scenarios
(the kind's `check_rules` entry, repro.suites.base; what they borrow from the check, which sits
above the suites, it passes in as `CheckTools`).

Every rule of our suites applies (pins, sealed execution, sandbox and its audit, engine identity,
gate, summary from scenarios.jsonl, the plan), except four that read our scenario files and
transcripts: `suite-recomputed`, `regraded`, `bounds` and `suite-at-commit`. In their place:

- `external-pin`: the bundle's wheel is the pinned one (its sha256, the one the adapter was
  written for), its lock is the pinned lock, and the cell's image was built from both;
- `external-suite`: the selection recomputed from the embedded wheel gives the cell's task ids,
  categories and suite sha256;
- `external-raw`: raw-index.json lists exactly the cell's raw files, each with its sha256;
- `external-normalised`: scenarios.jsonl and transcripts.jsonl recomputed from the raw outputs;
- `external-rechecked`: the harness's own checks re-executed where its code allows (the adapter's
  `recheck`; docs/methodology.md says what is recomputed and what is taken on its word);
- `external-report`: the harness's own report rendered again from the raw outputs is the recorded one;
- `external-bounds`: every recorded number finite and in bounds.

And one run rule, `carried-inputs`: each file in `inputs/` is the carried archive of an external
suite the run planned (named `<sha256><ext>` by its pin), at most MAX_CARRIED_BYTES, a regular
file whose bytes hash to that pin (the manifest alone would not do: it can be rewritten).

`host-identity` reads the raw files as model output (a model may name any home; this host's
identity is still refused).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from repro.bundle.layout.names import CELLS_DIR, INPUTS_DIR
from repro.core.errors import BadInput, NotAtHand, ReproError
from repro.core.files import MAX_CARRIED_BYTES, MAX_JSON_BYTES, read_regular, sha256_bytes, sha256_file
from repro.spec.findings import Noted
from repro.spec.harnesses import HARNESSES
from repro.spec.loading import code_problems
from repro.suites.base import CheckTools
from repro.suites.external.base import adapter_of
from repro.suites.external.carried import carried_name
from repro.suites.external.evidence import embedded_lock, embedded_wheel, raw_evidence, tasks_root, wheel_root
from repro.suites.external.raw import LOCK_COPY, RAW_PREFIX, external_of, pin_inputs

if TYPE_CHECKING:
    from harness.contracts import ScenarioResult
from repro.bundle.evidence import CellEvidence, CellRule, RunEvidence
from repro.spec.matrix import Decoding

REPLACED = ("suite-recomputed", "regraded", "bounds", "suite-at-commit")


def external_rules(chosen: dict[str, CellRule], ran: bool, tools: CheckTools) -> dict[str, CellRule]:
    """The rules of an external suite's cell: ours, with those that read scenario files replaced."""
    rules = {name: rule for name, rule in chosen.items() if name not in REPLACED} | {
        "host-identity": with_tools(rule_host_identity, tools)
    }
    if not ran:
        return rules
    return rules | {
        "external-pin": rule_pin,
        "external-suite": rule_suite,
        "external-raw": rule_raw,
        "external-normalised": rule_normalised,
        "external-rechecked": rule_rechecked,
        "external-report": rule_report,
        "external-requests": guarded(with_tools(rule_engine_requests, tools)),
        "external-bounds": with_tools(rule_task_bounds, tools),
    }


def with_tools(rule: Callable[[CellEvidence, CheckTools], list[str]], tools: CheckTools) -> CellRule:
    """A rule that borrows from the check, given what it borrows."""

    def bound(ev: CellEvidence) -> list[str]:
        return rule(ev, tools)

    bound.__doc__ = rule.__doc__
    return bound


def guarded(rule: CellRule) -> CellRule:
    """A rule that names unreadable evidence as its problem rather than raising (what is not at hand
    is not a problem: NotAtHand passes on, and the cell is UNCHECKED)."""

    def checked(ev: CellEvidence) -> list[str]:
        try:
            return rule(ev)
        except NotAtHand:
            raise
        except (ReproError, ValueError, OSError, KeyError, TypeError) as error:
            return [f"cannot check: {str(error).splitlines()[0] if str(error) else type(error).__name__}"]

    checked.__doc__ = rule.__doc__
    return checked


# ---------------------------------------------------------------- rules


def rule_carried_inputs(ev: RunEvidence) -> list[str]:
    """Every carried input is a planned external suite's carried pin, its bytes the pinned ones."""
    names = ev.bundle.carried()
    if not names:
        return []
    pins = (
        {
            carried_name(cell.suite.external): cell.suite.external
            for cell in ev.plan.whole
            if cell.suite.external and cell.suite.external.carried
        }
        if ev.plan
        else {}
    )
    problems = []
    for name in names:
        try:
            path = ev.bundle.carried_file(name, MAX_CARRIED_BYTES)
        except BadInput as error:
            problems.append(str(error))
            continue
        if name not in pins:
            problems.append(f"{INPUTS_DIR}/{name[:80]}: not the carried archive of any external suite the run planned")
        elif path is not None and (found := sha256_file(path)) != pins[name].sha256:
            problems.append(
                f"{INPUTS_DIR}/{name[:16]}...: its bytes have sha256 {found[:12]}, "
                f"not the pinned {pins[name].sha256[:12]}"
            )
    return problems


@guarded
def rule_pin(ev: CellEvidence) -> list[str]:
    """The embedded wheel and lock are the pinned ones, and the cell's image was built from them."""
    suite = ev.record.cell.suite
    external = external_of(suite)
    problems = []
    if external.wheel is not None:
        embedded_wheel(ev)
    else:
        problems += [
            f"{external.harness} does not read the archive with sha256 {external.sha256[:12]}"
            for _ in code_problems(HARNESSES[external.harness], external, 0)
        ]
    lock = embedded_lock(ev)
    lock_sha = sha256_bytes(lock)
    if lock_sha != external.requirements.sha256:
        problems.append(
            f"the embedded {LOCK_COPY} has sha256 {lock_sha[:12]}, the pin is {external.requirements.sha256[:12]}"
        )
    if external.wheel is not None and f"--hash=sha256:{external.sha256}" not in lock.decode(errors="replace"):
        problems.append(f"the embedded {LOCK_COPY} does not pin the wheel's sha256")
    labels = ev.record.harness_image.labels if ev.record.harness_image else {}
    wanted = {
        "repro.external": adapter_of(suite).name,
        "repro.external.wheel_sha256": external.sha256,
        "repro.external.requirements_sha256": lock_sha,
    }
    problems += [
        f"the cell's image label {key} is {labels.get(key)!r}, expected {value!r}"
        for key, value in wanted.items()
        if labels.get(key) != value
    ]
    return problems


@guarded
def rule_suite(ev: CellEvidence) -> list[str]:
    """The task selection recomputed from the embedded wheel and lock."""
    suite = ev.record.cell.suite
    external = external_of(suite)
    lock_sha = sha256_bytes(embedded_lock(ev))
    selection = adapter_of(suite).selection(suite, tasks_root(ev), pin_inputs(external.sha256, lock_sha))
    problems = raw_task_problems(ev, selection.categories) if adapter_of(suite).tasks_from == "source" else []
    if selection.sha256 != ev.record.suite_sha256:
        problems.append(
            f"suite sha256 {str(ev.record.suite_sha256)[:12]} is not the embedded wheel's selection "
            f"({selection.sha256[:12]})"
        )
    if ev.record.cell.share(selection).ids != ev.record.suite_ids:
        problems.append("suite_ids are not the embedded wheel's selected tasks (the cell's part of them), in order")
    wrong = [r.id for r in ev.bundle.results(ev.cell_id) if selection.categories.get(r.id) != r.category]
    return problems + ([f"task {wrong[0]} is recorded in another category than its file's"] if wrong else [])


def raw_task_problems(ev: CellEvidence, categories: dict[str, str]) -> list[str]:
    """A harness that runs scenario files keeps the files it ran (raw `scenarios/<category>/<id>.json`):
    each is the embedded file of that name, and each of the cell's scenarios is among them."""
    raw, index = raw_evidence(ev)
    kept = {
        entry.path.removeprefix("scenarios/"): raw[entry.name]
        for entry in index.files
        if entry.path.startswith("scenarios/")
    }
    problems = [
        f"the raw scenario file {name[:80]} is not the embedded one"
        for name, data in kept.items()
        if embedded_scenario(ev, name) != data
    ]
    wanted = {f"{category}/{sid}.json" for sid, category in categories.items() if sid in ev.record.suite_ids}
    return problems[:3] + [f"the raw outputs do not keep {name}" for name in sorted(wanted - set(kept))][:3]


def embedded_scenario(ev: CellEvidence, name: str) -> bytes | None:
    """A suite scenario file's bytes, embedded or referenced (None when there is no such regular
    file; NotAtHand when the referenced files are not at hand)."""
    if name.startswith("/") or ".." in Path(name).parts:
        return None
    root = ev.suite_dir
    try:
        return read_regular(root / "scenarios" / name, MAX_JSON_BYTES)
    except (BadInput, OSError):
        return None


@guarded
def rule_raw(ev: CellEvidence) -> list[str]:
    """raw-index.json names exactly the cell's raw files, each with its sha256, for this suite."""
    suite = ev.record.cell.suite
    external = external_of(suite)
    _, index = raw_evidence(ev)
    workers = ev.record.execution.workers if ev.record.execution else 1
    problems = (
        []
        if (index.harness, index.wheel, index.wheel_sha256) == (adapter_of(suite).name, external.pin, external.sha256)
        else ["raw-index.json names another harness or wheel"]
    )
    return problems + (
        [f"raw-index.json names {index.workers} worker(s), the cell ran {workers}"] if index.workers != workers else []
    )


@guarded
def rule_normalised(ev: CellEvidence) -> list[str]:
    """scenarios.jsonl and transcripts.jsonl are what the raw outputs give, line for line."""
    raw, index = raw_evidence(ev)
    normalised = adapter_of(ev.record.cell.suite).normalise(raw, index, ev.record.suite_ids, ev.record.cell.protocol)
    recorded, transcripts = ev.bundle.results(ev.cell_id), ev.bundle.transcripts(ev.cell_id)
    wrong = [a.id for a, b in zip(normalised.results, recorded, strict=False) if a != b]
    problems = (
        [f"scenarios.jsonl differs from the raw outputs at {wrong[0]} ({len(wrong)} task(s))"]
        if wrong or len(recorded) != len(normalised.results)
        else []
    )
    if [t.model_dump() for t in transcripts] != [t.model_dump() for t in normalised.transcripts]:
        problems.append("transcripts.jsonl differs from the raw outputs")
    return problems


@guarded
def rule_rechecked(ev: CellEvidence) -> list[str]:
    """The harness's own checks, re-executed from the recorded calls, answers and final states."""
    raw, index = raw_evidence(ev)
    rechecked = adapter_of(ev.record.cell.suite).recheck_evidence(ev, raw, index, wheel_root(ev))
    return [
        p if isinstance(p, Noted) else f"the harness's checks do not re-execute to the recorded verdicts: {p}"
        for p in rechecked
    ]


@guarded
def rule_report(ev: CellEvidence) -> list[str]:
    """The harness's own report, rendered again from the raw outputs, is the recorded one."""
    raw, index = raw_evidence(ev)
    rendered = adapter_of(ev.record.cell.suite).render_report(raw, index, wheel_root(ev))
    return [
        f"{name} is not the report its raw outputs render" for name, data in rendered.items() if raw.get(name) != data
    ]


def rule_engine_requests(ev: CellEvidence, tools: CheckTools) -> list[str]:
    """The cell's engine log holds the requests the harness's own records say it made (inspect: one
    per model call), where both say."""
    adapter = adapter_of(ev.record.cell.suite)
    if not adapter.records_requests:
        return []  # its raw outputs are not read for nothing
    asked = adapter.engine_requests(*raw_evidence(ev))
    problem = None if asked is None else tools.requests_problem(ev, asked)
    return [f"{problem} (its harness's records)"] if problem else []


def task_bounds(tools: CheckTools, result: ScenarioResult, transcript: list, decoding: Decoding) -> list[str]:
    """An external task's own numbers: its seconds and its token counts finite."""
    problems = tools.seconds_problem(f"task {result.id[:60]} seconds", result.seconds)
    return problems + [
        f"task {result.id[:60]}: {name} is {value!r}"
        for name, value in (("tokens_in", result.tokens_in), ("tokens_out", result.tokens_out))
        if not tools.finite(value)
    ]


def rule_task_bounds(ev: CellEvidence, tools: CheckTools) -> list[str]:
    """Every recorded number finite and in bounds (repro.check.bounds.rule_bounds, per task)."""
    return tools.bounds(ev, per_result=partial(task_bounds, tools), what="tasks")


def rule_host_identity(ev: CellEvidence, tools: CheckTools) -> list[str]:
    """No host path, user or host name in the cell's files; raw outputs are read as model output."""
    from repro.bundle.redact import find_leaks, suite_data_homes

    data = suite_data_homes(ev.suite_dir) if ev.plan is not None else frozenset()
    raw = frozenset(name for name in ev.record.files if name.startswith(RAW_PREFIX))
    leaks = find_leaks(ev.cell_dir, ev.redactor, data, model_output=tools.model_output_files | raw)
    return [f"host identity left in {CELLS_DIR}/{ev.cell_id}/{line}" for line in leaks][:5]
