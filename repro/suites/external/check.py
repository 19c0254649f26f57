"""`repro check` of an external suite's cells: the rules that replace those reading our scenarios.

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

`host-identity` reads the raw files as model output (a model may name any home; this host's
identity is still refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from repro.bundle.layout import CELLS_DIR, SUITES_DIR
from repro.core.errors import BadInput, ReproError
from repro.core.files import MAX_JSON_BYTES, MAX_RAW_BYTES, sha256_bytes, sha256_file
from repro.suites.external import adapter_for
from repro.suites.external.base import RAW_INDEX, RAW_PREFIX, RawIndex
from repro.suites.external.cells import LOCK_COPY, WHEEL_DIR
from repro.suites.external.wheels import unpacked_wheel

if TYPE_CHECKING:
    from repro.check.verdict import CellEvidence, CellRule

REPLACED = ("suite-recomputed", "regraded", "bounds", "suite-at-commit")


def external_rules(chosen: dict[str, CellRule], ran: bool) -> dict[str, CellRule]:
    """The rules of an external suite's cell: ours, with those that read scenario files replaced."""
    rules = {name: rule for name, rule in chosen.items() if name not in REPLACED} | {"host-identity": rule_host_identity}
    if not ran:
        return rules
    return rules | {
        "external-pin": rule_pin,
        "external-suite": rule_suite,
        "external-raw": rule_raw,
        "external-normalised": rule_normalised,
        "external-rechecked": rule_rechecked,
        "external-report": rule_report,
        "external-bounds": rule_bounds,
    }


# ---------------------------------------------------------------- the evidence


def embedded_wheel(ev: CellEvidence) -> Path:
    """The bundle's copy of the suite's wheel, verified: the matrix's pin, and the wheel the adapter
    was written for (only then is its code ever imported on this host)."""
    suite = ev.record.cell.suite
    assert suite.external is not None
    folder = ev.suite_dir / WHEEL_DIR
    wheels = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()) if folder.is_dir() and not folder.is_symlink() else []
    if len(wheels) != 1:
        raise BadInput(f"{SUITES_DIR}/{suite.id}/{WHEEL_DIR} holds {len(wheels)} wheel files, not one")
    found = sha256_file(wheels[0])
    known = adapter_for(suite).known_wheels.get(suite.external.wheel)
    if found != suite.external.sha256 or found != known:
        raise BadInput(f"the embedded wheel {wheels[0].name} has sha256 {found[:12]}, the pin is {suite.external.sha256[:12]}")
    return wheels[0]


def wheel_root(ev: CellEvidence) -> Path:
    suite = ev.record.cell.suite
    assert suite.external is not None
    return unpacked_wheel(embedded_wheel(ev), suite.external.sha256)


def embedded_lock(ev: CellEvidence) -> bytes:
    """The bundle's copy of the suite's lock file."""
    return ev.bundle.suite_file(ev.record.cell.suite.id, LOCK_COPY, MAX_RAW_BYTES)


def raw_evidence(ev: CellEvidence) -> tuple[dict[str, bytes], RawIndex]:
    """The cell's raw files by name and its raw-index.json (BadInput when they do not match)."""
    try:
        index = RawIndex.model_validate_json(ev.bundle.cell_file(ev.cell_id, RAW_INDEX, MAX_JSON_BYTES))
    except ValidationError as error:
        raise BadInput(f"{RAW_INDEX}: not a raw index ({error.error_count()} problems)") from None
    names = sorted(name for name in ev.record.files if name.startswith(RAW_PREFIX))
    listed = sorted(entry.name for entry in index.files)
    if names != listed:
        raise BadInput(f"{RAW_INDEX} lists {len(listed)} raw files, the cell holds {len(names)}")
    raw = {name: ev.bundle.cell_file(ev.cell_id, name, MAX_RAW_BYTES) for name in names}
    wrong = [entry.name for entry in index.files if sha256_bytes(raw[entry.name]) != entry.sha256]
    if wrong:
        raise BadInput(f"raw file {wrong[0]} is not the file {RAW_INDEX} names")
    return raw, index


def guarded(rule: CellRule) -> CellRule:
    """A rule that names unreadable evidence as its problem rather than raising."""

    def checked(ev: CellEvidence) -> list[str]:
        try:
            return rule(ev)
        except (ReproError, ValueError, OSError, KeyError, TypeError) as error:
            return [f"cannot check: {str(error).splitlines()[0] if str(error) else type(error).__name__}"]

    checked.__doc__ = rule.__doc__
    return checked


# ---------------------------------------------------------------- rules


@guarded
def rule_pin(ev: CellEvidence) -> list[str]:
    """The embedded wheel and lock are the pinned ones, and the cell's image was built from them."""
    suite = ev.record.cell.suite
    assert suite.external is not None
    embedded_wheel(ev)
    problems = []
    lock = embedded_lock(ev)
    lock_sha = sha256_bytes(lock)
    if lock_sha != suite.external.requirements.sha256:
        problems.append(f"the embedded {LOCK_COPY} has sha256 {lock_sha[:12]}, the pin is {suite.external.requirements.sha256[:12]}")
    if f"--hash=sha256:{suite.external.sha256}" not in lock.decode(errors="replace"):
        problems.append(f"the embedded {LOCK_COPY} does not pin the wheel's sha256")
    labels = ev.record.harness_image.labels if ev.record.harness_image else {}
    wanted = {"repro.external": adapter_for(suite).name, "repro.external.wheel_sha256": suite.external.sha256, "repro.external.requirements_sha256": lock_sha}
    problems += [f"the cell's image label {key} is {labels.get(key)!r}, expected {value!r}" for key, value in wanted.items() if labels.get(key) != value]
    return problems


@guarded
def rule_suite(ev: CellEvidence) -> list[str]:
    """The task selection recomputed from the embedded wheel and lock."""
    suite = ev.record.cell.suite
    assert suite.external is not None
    lock_sha = sha256_bytes(embedded_lock(ev))
    selection = adapter_for(suite).selection(suite, wheel_root(ev), [f"wheel\0{suite.external.sha256}", f"requirements\0{lock_sha}"])
    problems = []
    if selection.sha256 != ev.record.suite_sha256:
        problems.append(f"suite sha256 {str(ev.record.suite_sha256)[:12]} is not the embedded wheel's selection ({selection.sha256[:12]})")
    if selection.ids != ev.record.suite_ids:
        problems.append("suite_ids are not the embedded wheel's selected tasks, in order")
    wrong = [r.id for r in ev.bundle.results(ev.cell_id) if selection.categories.get(r.id) != r.category]
    return problems + ([f"task {wrong[0]} is recorded in another category than its file's"] if wrong else [])


@guarded
def rule_raw(ev: CellEvidence) -> list[str]:
    """raw-index.json names exactly the cell's raw files, each with its sha256, for this suite."""
    suite = ev.record.cell.suite
    assert suite.external is not None
    _, index = raw_evidence(ev)
    workers = ev.record.execution.workers if ev.record.execution else 1
    problems = (
        []
        if (index.harness, index.wheel, index.wheel_sha256) == (adapter_for(suite).name, suite.external.wheel, suite.external.sha256)
        else ["raw-index.json names another harness or wheel"]
    )
    return problems + ([f"raw-index.json names {index.workers} worker(s), the cell ran {workers}"] if index.workers != workers else [])


@guarded
def rule_normalised(ev: CellEvidence) -> list[str]:
    """scenarios.jsonl and transcripts.jsonl are what the raw outputs give, line for line."""
    raw, index = raw_evidence(ev)
    normalised = adapter_for(ev.record.cell.suite).normalise(raw, index, ev.record.suite_ids)
    recorded, transcripts = ev.bundle.results(ev.cell_id), ev.bundle.transcripts(ev.cell_id)
    wrong = [a.id for a, b in zip(normalised.results, recorded, strict=False) if a != b]
    problems = (
        [f"scenarios.jsonl differs from the raw outputs at {wrong[0]} ({len(wrong)} task(s))"] if wrong or len(recorded) != len(normalised.results) else []
    )
    if [t.model_dump() for t in transcripts] != [t.model_dump() for t in normalised.transcripts]:
        problems.append("transcripts.jsonl differs from the raw outputs")
    return problems


@guarded
def rule_rechecked(ev: CellEvidence) -> list[str]:
    """The harness's own checks, re-executed from the recorded calls, answers and final states."""
    raw, index = raw_evidence(ev)
    return [
        f"the harness's checks do not re-execute to the recorded verdicts: {p}" for p in adapter_for(ev.record.cell.suite).recheck(raw, index, wheel_root(ev))
    ]


@guarded
def rule_report(ev: CellEvidence) -> list[str]:
    """The harness's own report, rendered again from the raw outputs, is the recorded one."""
    raw, index = raw_evidence(ev)
    rendered = adapter_for(ev.record.cell.suite).report(raw, index, wheel_root(ev))
    return [f"{name} is not the report its raw outputs render" for name, data in rendered.items() if raw.get(name) != data]


def rule_bounds(ev: CellEvidence) -> list[str]:
    """Every recorded number finite and in bounds: the cell's and the gate's seconds, each task's
    seconds and tokens, and the tasks' time within the harness's."""
    from repro.check.bounds import WALL_SLACK_S, cell_seconds, finite, gate_bounds, seconds_problem, shown

    try:
        results = ev.bundle.results(ev.cell_id)
    except BadInput:
        return []  # the summary rule names it
    problems = cell_seconds(ev) + gate_bounds(ev, ev.record.cell.decoding)
    for result in results:
        problems += seconds_problem(f"task {result.id[:60]} seconds", result.seconds)
        problems += [
            f"task {result.id[:60]}: {name} is {value!r}"
            for name, value in (("tokens_in", result.tokens_in), ("tokens_out", result.tokens_out))
            if not finite(value)
        ]
    workers = ev.record.execution.workers if ev.record.execution else 1
    spent = sum(r.seconds for r in results if finite(r.seconds))
    harness = ev.record.harness_seconds
    if harness is not None and finite(harness) and spent > harness * workers + WALL_SLACK_S * len(results):
        problems.append(f"the tasks took {spent:.3f} s in all, more than the harness's {harness:.3f} s with {workers} worker(s)")
    return shown(problems)


def rule_host_identity(ev: CellEvidence) -> list[str]:
    """No host path, user or host name in the cell's files; raw outputs are read as model output."""
    from repro.bundle.redact import find_leaks
    from repro.check.verdict import MODEL_OUTPUT_FILES, suite_data_homes

    data = suite_data_homes(ev.suite_dir) if ev.plan is not None else frozenset()
    raw = frozenset(name for name in ev.record.files if name.startswith(RAW_PREFIX))
    leaks = find_leaks(ev.cell_dir, ev.redactor, data, model_output=MODEL_OUTPUT_FILES | raw)
    return [f"host identity left in {CELLS_DIR}/{ev.cell_id}/{line}" for line in leaks][:5]
