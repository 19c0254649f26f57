"""The stand-in's scoring (not LAB's code, nor its rules): a pure function of the task, the final
answer, the tool calls and whether the reply could not be parsed, under the entry point's name and
signature LAB's scoring has (`score_task`), returning the score, the reason and the assertions'
results. Its rules are the stand-in's own: the share of assertions that held, 1.0 and PASS when all
did and every required tool was called."""

from __future__ import annotations

from typing import Any

from local_agent_bench.types import Task, ToolCall


def values_at(value: Any, path: str) -> list[Any]:
    """The values at a dotted path (`entries[].name`: each entry's name); the whole value for ''."""
    found = [value]
    for part in filter(None, path.split(".")):
        key, spread = part.removesuffix("[]"), part.endswith("[]")
        found = [v[key] for v in found if isinstance(v, dict) and key in v]
        if spread:
            found = [item for v in found if isinstance(v, list) for item in v]
    return found


def tool_values(calls: list[ToolCall], tool: str, path: str) -> list[Any]:
    return [v for call in calls if call.name == tool and call.ok for v in values_at(call.result, path)]


def holds(assertion: dict[str, Any], answer: str, calls: list[ToolCall]) -> bool:
    kind, said = assertion.get("type"), answer.lower()
    if kind == "answer_contains_any":
        return any(str(v).lower() in said for v in assertion.get("values", []))
    if kind == "answer_contains_all":
        return all(str(v).lower() in said for v in assertion.get("values", []))
    found = tool_values(calls, str(assertion.get("tool")), str(assertion.get("path", "")))
    if kind == "tool_result_contains":
        return any(str(v).lower() == str(assertion.get("value")).lower() for v in found)
    if kind == "answer_contains_tool_result":
        return any(str(v).lower() in said for v in found if v is not None)
    return False


def score_task(
    task: Task, final_answer: str, tool_calls: list[ToolCall], invalid_tool_syntax: bool
) -> tuple[float, str, list[dict[str, Any]]]:
    called = {call.name for call in tool_calls}
    if invalid_tool_syntax:
        return 0.0, "INVALID_TOOL_SYNTAX", []
    if task.required_tools and not tool_calls:
        return 0.0, "NO_TOOL_ATTEMPT", []
    if task.allowed_tools and called - set(task.allowed_tools):
        return 0.0, "WRONG_TOOL", []
    if set(task.required_tools) - called:
        return 0.0, "MISSING_REQUIRED_TOOL", []
    results = [
        {"ok": holds(a, final_answer, tool_calls), "type": a.get("type"), "assertion": a} for a in task.assertions
    ]
    held = sum(r["ok"] for r in results)
    if held < len(results):
        return round(held / len(results), 4), "ASSERTION_FAILED", results
    return (1.0, "PASS", results) if final_answer else (0.0, "UNKNOWN_FAILURE", results)
