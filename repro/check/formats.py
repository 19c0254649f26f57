"""The rules of each bundle format (`RULES`, keyed by `format_version`): which run and cell rules a
bundle of that format is checked by. A format this release does not check is refused in one line,
never checked by the wrong rules (docs/architecture.md, "Check rules")."""

from __future__ import annotations

from pathlib import Path

from repro.bundle.evidence import Rules
from repro.bundle.records import FORMAT_VERSION, RunRecord
from repro.check.bounds import rule_bounds
from repro.check.cell_rules import (
    rule_cell_as_planned,
    rule_cell_intact,
    rule_cell_no_host_identity,
    rule_cell_status,
    rule_engine_audit,
    rule_exclusion_evidenced,
    rule_exclusion_kind,
    rule_execution,
    rule_gate,
    rule_gate_recomputed,
    rule_hardware,
    rule_images,
    rule_model_and_engine,
    rule_progress_agrees,
    rule_regraded,
    rule_results_consistent,
    rule_sandbox,
    rule_sandbox_audit,
    rule_suite_recomputed,
    rule_summary_recomputed,
)
from repro.check.commit import (
    rule_harness_at_commit,
    rule_matrix_at_commit,
    rule_profile_at_commit,
    rule_suite_at_commit,
)
from repro.check.cross import rule_evidence, rule_gate_group, rule_gate_settings, rule_identity_cross_check
from repro.check.gpu import rule_gpu_evidence
from repro.check.resumed import rule_resumed
from repro.check.run_rules import (
    rule_manifest,
    rule_no_host_identity,
    rule_plan_listing,
    rule_plan_recomputed,
    rule_provenance,
    rule_run_complete,
)
from repro.check.templates import rule_chat_template, rule_template_facts
from repro.check.wire import rule_runtime_wire
from repro.core.errors import BadInput

# the run rule of carried inputs (only external suites carry any)
from repro.suites.external.check_rules import rule_carried_inputs

# The rules of every format; format 3 adds the recomputations from the embedded matrix and suites.
BASE_RULES = Rules(
    run={
        "provenance": rule_provenance,
        "run-complete": rule_run_complete,
        "manifest": rule_manifest,
        "plan-listing": rule_plan_listing,
        "host-identity": rule_no_host_identity,
    },
    every_cell={
        "cell-intact": rule_cell_intact,
        "cell-status": rule_cell_status,
        "host-identity": rule_cell_no_host_identity,
        "exclusion-kind": rule_exclusion_kind,
    },
    ran_cell={
        "images": rule_images,
        "model-and-engine": rule_model_and_engine,
        "sandbox": rule_sandbox,
        "sandbox-audit": rule_sandbox_audit,
        "hardware": rule_hardware,
        "gate": rule_gate,
        "summary": rule_summary_recomputed,
    },
)


RULES_V3 = Rules(
    run={**BASE_RULES.run, "plan-recomputed": rule_plan_recomputed},
    every_cell={**BASE_RULES.every_cell, "exclusion-evidenced": rule_exclusion_evidenced},
    ran_cell={
        **BASE_RULES.ran_cell,
        "cell-as-planned": rule_cell_as_planned,
        "suite-recomputed": rule_suite_recomputed,
        "results-consistent": rule_results_consistent,
        "gate-recomputed": rule_gate_recomputed,
        "regraded": rule_regraded,
    },
)


RULES_V4 = Rules(
    run=RULES_V3.run,
    every_cell=RULES_V3.every_cell,
    ran_cell={**RULES_V3.ran_cell, "engine-audit": rule_engine_audit, "execution": rule_execution},
)


RULES_V5 = Rules(
    run={
        **RULES_V4.run,
        "chat-template-facts": rule_template_facts,
        "profile-at-commit": rule_profile_at_commit,
        "matrix-at-commit": rule_matrix_at_commit,
        "harness-at-commit": rule_harness_at_commit,
        "carried-inputs": rule_carried_inputs,
    },
    every_cell={**RULES_V4.every_cell, "gate-settings": rule_gate_settings, "gate-group": rule_gate_group},
    ran_cell={
        **RULES_V4.ran_cell,
        "chat-template": rule_chat_template,
        "evidence": rule_evidence,
        "identity-cross-check": rule_identity_cross_check,
        "gpu-evidence": rule_gpu_evidence,
        "bounds": rule_bounds,
        "resumed": rule_resumed,
        "suite-at-commit": rule_suite_at_commit,
        "progress": rule_progress_agrees,
        "runtime-wire": rule_runtime_wire,
    },
)


# Formats 2 (no embedded matrix or suites), 3 (no engine audit, no execution record) and 4 (no
# chat template record: a built-in fallback template cannot be told from the model's own) are
# retired: a bundle relabelled to any of them would escape what it lacks, and no bundle of them
# was published.
RULES: dict[int, Rules] = {FORMAT_VERSION: RULES_V5}


def rules_for(run: RunRecord, run_dir: Path) -> Rules:
    rules = RULES.get(run.format_version)
    if rules is None:
        known = ", ".join(str(v) for v in sorted(RULES))
        raise BadInput(f"{run_dir}: bundle format {run.format_version} is not one this repro checks (known: {known})")
    return rules
