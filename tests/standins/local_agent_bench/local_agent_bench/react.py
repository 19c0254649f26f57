"""The stand-in's raw-ollama-react loop (not LAB's code): the model writes `Action:` and `Action
Input:` lines, or `Final Answer:`; each tool's result goes back as an `Observation:` message. A reply
that is neither, before any call, is invalid tool syntax."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from local_agent_bench import scoring, tools
from local_agent_bench.ollama import OllamaError
from local_agent_bench.types import Task, TaskResult, ToolCall

SYSTEM = """You are an agent in a local benchmark. Tools:
{tools}

To call a tool, reply with exactly:
Action: <tool name>
Action Input: <a JSON object of its arguments>

When you can answer, reply with exactly:
Final Answer: <the answer>"""
ACTION = re.compile(r"Action:\s*(\w+)\s*\n\s*Action Input:\s*(\{.*\})", re.S)
FINAL = re.compile(r"Final Answer:\s*(.*)", re.S)


def parse(reply: str) -> tuple[str, dict[str, Any]] | None:
    found = ACTION.search(reply)
    if found is None:
        return None
    try:
        args, _end = json.JSONDecoder().raw_decode(found.group(2))
    except ValueError:
        return None
    return (found.group(1), args) if isinstance(args, dict) else None


def step(name: str, args: dict[str, Any]) -> ToolCall:
    try:
        return ToolCall(name=name, args=args, ok=True, result=tools.call_tool(name, args))
    except (TypeError, tools.ToolError) as error:
        return ToolCall(name=name, args=args, ok=False, error=str(error))


def run_task(turns: Any, runtime: str, model: str, task: Task, max_steps: int) -> TaskResult:
    started = time.monotonic()
    messages = [
        {"role": "system", "content": SYSTEM.format(tools="\n".join(f"- {d}" for d in tools.DESCRIPTIONS))},
        {"role": "user", "content": task.prompt},
    ]
    calls: list[ToolCall] = []
    answer, invalid, reason = "", False, None
    for _ in range(max_steps):
        try:
            reply = turns.chat(model, messages)
        except OllamaError as error:
            answer, reason = str(error), error.failure_reason
            break
        messages.append({"role": "assistant", "content": reply})
        final, action = FINAL.search(reply), parse(reply)
        if final is not None and action is None:
            answer = final.group(1).strip()
            break
        if action is None:
            answer, invalid = reply.strip(), not calls
            break
        calls.append(step(*action))
        shown = calls[-1].result if calls[-1].ok else {"error": calls[-1].error}
        messages.append({"role": "user", "content": f"Observation: {json.dumps(shown, ensure_ascii=False)}"})
    else:
        answer = "The task did not finish within its steps."
    score, reason, checked = (0.0, reason, []) if reason else scoring.score_task(task, answer, calls, invalid)
    elapsed = int((time.monotonic() - started) * 1000)
    return TaskResult(task.id, task.category, runtime, model, score, reason, answer, calls, elapsed, messages, checked)
