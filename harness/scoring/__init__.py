"""Judging a run: the checks evaluated, the failure diagnosed, the LAB codes, the summaries.

- ``checks``: ``evaluate_all`` over the check models of ``harness.model.checks_model``.
- ``diagnosis``: ``diagnose``: the one failure type of a failed run (docs/diagnosis.md).
- ``lab_codes``: each failure type's Local Agent Bench reason code.
- ``results``: human summaries and progress lines of scenario results.

The host may import the names below (the report counts LAB codes); the modules are the harness's own.
"""

from harness.scoring.lab_codes import lab_code, lab_counts

__all__ = ["lab_code", "lab_counts"]
