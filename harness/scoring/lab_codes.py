"""Our failure types as the Local Agent Bench's reason codes.

Local Agent Bench names a failed run with one of fourteen reason codes, and two more for its runtime
adapters (`RUNTIME_UNAVAILABLE`, `RUNTIME_ERROR`), (`HALLUCINATED_RESULT`,
`NO_TOOL_ATTEMPT`, ...) that its users grep for. Each of our failure types (`FailureType`, in
harness.contracts) maps to exactly one of them; several of ours can share a code, because the
Local Agent Bench does not separate what we do (four kinds of unusable reply are all
`INVALID_TOOL_SYNTAX`). The mapping is our reading of its design against our rules, stated with
the reason for each line in docs/diagnosis.md; `TOOL_EXECUTION_FAILED` is never produced (a tool
error goes back to the model as the call's result, and the run is judged by what followed).
"""

from __future__ import annotations

from typing import Literal, get_args

from harness.contracts import FailureType

LabCode = Literal[
    "HALLUCINATED_RESULT",
    "IGNORED_TOOL_RESULT",
    "NO_TOOL_ATTEMPT",
    "WRONG_TOOL",
    "MISSING_REQUIRED_TOOL",
    "FORBIDDEN_TOOL",
    "BAD_ARGUMENTS",
    "INVALID_TOOL_SYNTAX",
    "TOOL_EXECUTION_FAILED",
    "CONTEXT_LOSS",
    "ASSERTION_FAILED",
    "MODEL_NOT_INSTALLED",
    "OLLAMA_UNREACHABLE",
    "RUNTIME_UNAVAILABLE",
    "RUNTIME_ERROR",
    "UNKNOWN_FAILURE",
]
LAB_CODES: tuple[LabCode, ...] = get_args(LabCode)

LAB_CODE: dict[FailureType, LabCode] = {
    "engine_unreachable": "OLLAMA_UNREACHABLE",
    "model_not_loaded": "MODEL_NOT_INSTALLED",
    "context_overflow": "CONTEXT_LOSS",
    "engine_error": "UNKNOWN_FAILURE",
    "runtime_unavailable": "RUNTIME_UNAVAILABLE",
    "runtime_config": "RUNTIME_ERROR",
    "runtime_error": "RUNTIME_ERROR",
    "degenerate": "INVALID_TOOL_SYNTAX",
    "empty_reply": "INVALID_TOOL_SYNTAX",
    "invalid_syntax": "INVALID_TOOL_SYNTAX",
    "text_tool_call": "INVALID_TOOL_SYNTAX",
    "unknown_tool": "WRONG_TOOL",
    "invalid_arguments": "BAD_ARGUMENTS",
    "forbidden_tool": "FORBIDDEN_TOOL",
    "no_tool_attempt": "NO_TOOL_ATTEMPT",
    "wrong_tool": "WRONG_TOOL",
    "stuck": "UNKNOWN_FAILURE",
    "step_limit": "UNKNOWN_FAILURE",
    "timeout": "UNKNOWN_FAILURE",
    "missing_required_tool": "MISSING_REQUIRED_TOOL",
    "ignored_tool_result": "IGNORED_TOOL_RESULT",
    "hallucinated_result": "HALLUCINATED_RESULT",
    "wrong_outcome": "ASSERTION_FAILED",
}


def lab_code(failure_type: str | None) -> LabCode | None:
    """The Local Agent Bench code of one of our failure types; None for a passed scenario, and
    `UNKNOWN_FAILURE` for a name that is not ours (a table from a newer version)."""
    if failure_type is None:
        return None
    return LAB_CODE.get(failure_type, "UNKNOWN_FAILURE")  # type: ignore[call-overload]


def lab_counts(failure_types: dict[str, int]) -> dict[str, int]:
    """Failed scenarios per Local Agent Bench code, from failed scenarios per failure type."""
    counts: dict[str, int] = {}
    for failure, n in failure_types.items():
        code = lab_code(failure) or "UNKNOWN_FAILURE"
        counts[code] = counts.get(code, 0) + n
    return dict(sorted(counts.items()))
