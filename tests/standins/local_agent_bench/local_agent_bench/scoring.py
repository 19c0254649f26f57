"""The stand-in's scoring (not Local Agent Bench's code): a pure function of the task, the final
answer and the tool calls. A task passes when every assertion holds and every required tool was
called; its score is the share of assertions that held."""

from __future__ import annotations

import re
from typing import Any

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def assertion_result(assertion: dict[str, Any], answer: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    kind = assertion.get("type")
    named = [c for c in calls if c.get("name") == assertion.get("tool")]
    if kind == "final_answer_contains":
        held = str(assertion["value"]).lower() in answer.lower()
    elif kind == "tool_argument_contains":
        held = any(
            str(assertion["value"]).lower() in str(c["arguments"].get(assertion["argument"], "")).lower() for c in named
        )
    elif kind == "final_answer_matches_tool_number":
        wanted = [
            c["result"].get("current", {}).get(assertion["field"]) for c in named if isinstance(c.get("result"), dict)
        ]
        said = {float(n) for n in NUMBER.findall(answer)}
        held = any(w is not None and float(w) in said for w in wanted)
    else:
        held = False
    return {"type": kind, "passed": held}


def score_task(task: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The task's score, failure reason and assertion results, from its run alone."""
    answer, calls = run.get("final_answer") or "", run.get("tool_calls") or []
    results = [assertion_result(a, answer, calls) for a in task.get("assertions", [])]
    score = round(sum(r["passed"] for r in results) / len(results), 4) if results else 1.0
    called = {c.get("name") for c in calls}
    missing = [t for t in task.get("required_tools", []) if t not in called]
    if run.get("stop"):
        reason = run["stop"]
    elif not calls and task.get("required_tools"):
        reason = "NO_TOOL_ATTEMPT"
    elif missing:
        reason = "MISSING_REQUIRED_TOOL"
    elif score < 1.0:
        reason = "ASSERTION_FAILED"
    else:
        reason = None
    return {
        "score": score if reason is None or reason == "ASSERTION_FAILED" else 0.0,
        "passed": reason is None,
        "failure_reason": reason,
        "assertion_results": results,
    }
