"""Check rules that cross-check records naming the same fact, and require the evidence a format
promises.

- `evidence` (format 5): what a ran cell must carry: the execution record, the engine's log, and
  for llama.cpp the slots it reports (`total_slots`), its reported build and the thread count in
  its log. Absent evidence is INVALID, never skipped.
- `identity-cross-check`: the engine named the same way everywhere: the cell's engine, the
  image's labels (engine id, kind, variant, stamped build), the build the engine reported in its
  settings and at the identity check, the gate's engine, model and profile; and the hardware:
  no accelerator and no device request on a profile without one, a device request on one with.
- `gate-settings`: the gate record agrees with the embedded matrix and the profile (enabled or
  not, thresholds, attempts): two records that disagree are INVALID.
- `gate-group`: the cells of one engine group share one engine and one gate, so they carry one
  gate verdict: one cell EXCLUDED by the gate while a sibling passed it is INVALID.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from repro.bundle.layout.names import ENGINE_LOG
from repro.bundle.records import CellRecord
from repro.core.errors import BadInput
from repro.core.files import MAX_LOG_BYTES

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence


def rule_evidence(ev: CellEvidence) -> list[str]:
    """The evidence format 5 requires of a ran cell, each piece named when absent."""
    record, profile = ev.record, ev.run.profile_settings
    problems = []
    if record.execution is None:
        problems.append("no execution record (threads, slots, prompt cache): format 5 requires it")
    if not ev.bundle.has_file(ev.cell_id, ENGINE_LOG):
        problems.append(f"no {ENGINE_LOG}: format 5 requires the engine's own log")
    if not record.cell.engine.facts.reports_build:
        return problems
    reported = record.engine_settings.reported
    problems += [
        f"the engine's reported settings lack {key}: format 5 requires it of llama.cpp"
        for key in ("total_slots", "build_info")
        if key not in reported
    ]
    from repro.check.cross import engine_log_threads

    if profile.threads is not None and ev.bundle.has_file(ev.cell_id, ENGINE_LOG) and not engine_log_threads(ev):
        problems.append(f"{ENGINE_LOG} shows no n_threads line: the thread count the engine ran at is not evidenced")
    return problems


def rule_identity_cross_check(ev: CellEvidence) -> list[str]:
    """Every record that names the engine, the model or the hardware names the same one."""
    return engine_names(ev) + gate_names(ev) + hardware_names(ev)


def engine_names(ev: CellEvidence) -> list[str]:
    record, engine = ev.record, ev.record.cell.engine
    labels = record.engine_image.labels if record.engine_image else {}
    expected = engine.expected_identity()
    named = {
        "the engine image's repro.engine label": (labels.get("repro.engine"), engine.id),
        "the engine image's repro.engine_kind label": (labels.get("repro.engine_kind"), engine.kind),
        "the engine image's repro.variant label": (labels.get("repro.variant"), ev.run.profile_settings.engine_variant),
        "the engine image's repro.build_info label": (
            labels.get("repro.build_info"),
            expected if engine.facts.reports_build else None,
        ),
        "the build the engine reported in its settings": (
            record.engine_settings.reported.get("build_info"),
            expected if engine.facts.reports_build else None,
        ),
    }
    return [
        f"{what} says {found!r}, the pinned engine is {wanted!r}"
        for what, (found, wanted) in named.items()
        if found is not None and wanted is not None and found != wanted
    ]


def gate_names(ev: CellEvidence) -> list[str]:
    gate, cell = ev.record.gate, ev.record.cell
    if gate is None:
        return []
    named = {
        "engine": (gate.engine_id, cell.engine.id),
        "model": (gate.model_id, cell.model.id),
        "profile": (gate.profile, ev.run.profile),
    }
    return [
        f"the latency gate was run for {what} {found!r}, the cell's is {wanted!r}"
        for what, (found, wanted) in named.items()
        if found is not None and found != wanted
    ]


def hardware_names(ev: CellEvidence) -> list[str]:
    """A profile without an accelerator records none and requests no device; one with requests one."""
    profile, record = ev.run.profile_settings, ev.record
    devices = [
        *(record.sandbox.engine.device_requests if record.sandbox.engine else []),
        *(record.sandbox.harness.device_requests if record.sandbox.harness else []),
    ]
    if profile.accelerator is None:
        problems = (
            [f"accelerator {record.accelerator!r} recorded on profile {ev.run.profile}, which has none"]
            if record.accelerator
            else []
        )
        return problems + (
            [f"a device was requested ({devices[0]}) on profile {ev.run.profile}, which has no accelerator"]
            if devices
            else []
        )
    if profile.gpu_count and not (record.sandbox.engine and record.sandbox.engine.device_requests):
        return [f"profile {ev.run.profile} runs on {profile.gpu_count} GPU(s), but the engine requested no device"]
    return []


def rule_gate_settings(ev: CellEvidence) -> list[str]:
    """The gate record says what the embedded matrix and the profile set: enabled or not, the
    thresholds and the number of attempts."""
    gate, settings, thresholds = ev.record.gate, ev.plan.latency_gate if ev.plan else None, ev.run.profile_settings.gate
    if gate is None or settings is None:
        return []  # gate and plan-recomputed name these
    if gate.enabled != settings.enabled:
        return [
            f"the gate record says {'enabled' if gate.enabled else 'disabled'}, the embedded matrix "
            f"{'enables' if settings.enabled else 'disables'} it"
        ]
    if not gate.enabled:
        return ["the matrix disables the gate, yet attempts are recorded"] if gate.attempts else []
    recorded = {
        "max_seconds_per_step": (gate.max_seconds_per_step, thresholds.max_seconds_per_step),
        "min_tokens_per_second": (gate.min_tokens_per_second, thresholds.min_tokens_per_second),
        "attempts_required": (gate.attempts_required, settings.required),
    }
    problems = [
        f"the gate record's {name} is {found!r}, the profile and matrix set {wanted!r}"
        for name, (found, wanted) in recorded.items()
        if found is not None and found != wanted
    ]
    if len(gate.attempts) > settings.attempts:
        problems.append(f"{len(gate.attempts)} gate attempts recorded, the matrix sets {settings.attempts}")
    return problems


def rule_gate_group(ev: CellEvidence) -> list[str]:
    """One gate verdict per engine group: every sibling's gate passed, or none did."""
    mine = gate_verdict(ev.record)
    if mine is None:
        return []
    others = {cell_id: gate_verdict(record) for cell_id, record in group_siblings(ev).items()}
    differ = sorted(cell_id for cell_id, verdict in others.items() if verdict is not None and verdict != mine)
    if not differ:
        return []
    return [
        f"its engine group has one gate, yet the gate {describe(mine)} here and {describe(not mine)} in "
        f"{differ[0]}{f' and {len(differ) - 1} more' if len(differ) > 1 else ''}"
    ]


def gate_verdict(record: CellRecord) -> bool | None:
    """Whether the cell's gate passed (a ran cell) or failed (a gate exclusion); None without one."""
    if record.gate is None or record.status == "error" or (record.status == "excluded" and record.gate.passed):
        return None  # an exclusion for another reason (the plan, the chat template at boot)
    return record.gate.passed


def describe(passed: bool) -> str:
    return "passed" if passed else "failed"


def group_siblings(ev: CellEvidence) -> dict[str, CellRecord]:
    """The other cells of the run in the same (engine, model) group, as recorded."""
    siblings = {}
    for cell_id in dict.fromkeys(ev.run.planned_cells):
        if cell_id == ev.cell_id:
            continue
        try:
            record = ev.bundle.cell(cell_id)
        except (BadInput, OSError):
            continue  # cell-intact names an unreadable cell
        if record.cell.group == ev.record.cell.group:
            siblings[cell_id] = record
    return siblings


ENGINE_THREADS = re.compile(rb"n_threads = (\d+)")  # llama.cpp's "llama threadpool init, n_threads = 2"


def engine_log_threads(ev: CellEvidence) -> list[int]:
    """Every thread count llama.cpp logged at start (one per replica); none for other engines."""
    try:
        text = ev.bundle.cell_file(ev.cell_id, ENGINE_LOG, MAX_LOG_BYTES)
    except BadInput:
        return []
    return [int(found) for found in ENGINE_THREADS.findall(text)]
