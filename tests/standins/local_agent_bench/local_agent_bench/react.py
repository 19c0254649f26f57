"""The stand-in's raw-ollama-react loop (not Local Agent Bench's code): the model writes
`Action:` / `Action Input:` lines or a `Final Answer:` line; each tool's result comes back as an
`Observation:` message."""

from __future__ import annotations

import json
import re
from typing import Any

from local_agent_bench import ollama, tools

SYSTEM = """You are a local agent. You can use these tools:
{tools}

To use a tool, answer exactly:
Action: <tool name>
Action Input: <JSON object of arguments>

When you know the answer, answer exactly:
Final Answer: <your answer>"""

ACTION = re.compile(r"Action:\s*(\w+)\s*\nAction Input:\s*(\{.*?\})\s*$", re.S | re.M)
FINAL = re.compile(r"Final Answer:\s*(.*)", re.S)
TOOL_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, KeyError, LookupError, ValueError)


def run_task(model: str, task: dict[str, Any], max_steps: int) -> dict[str, Any]:
    """One task: the transcript, the tool calls, the final answer, or why it stopped."""
    listing = "\n".join(f"- {line}" for line in tools.TOOLS.values())
    messages = [
        {"role": "system", "content": SYSTEM.format(tools=listing)},
        {"role": "user", "content": task["prompt"]},
    ]
    calls: list[dict[str, Any]] = []
    for _step in range(max_steps):
        reply = ollama.chat(model, messages)
        messages.append({"role": "assistant", "content": reply})
        final = FINAL.search(reply)
        action = ACTION.search(reply)
        if action is None and final is not None:
            return {"messages": messages, "tool_calls": calls, "final_answer": final.group(1).strip(), "stop": None}
        if action is None:
            return {"messages": messages, "tool_calls": calls, "final_answer": None, "stop": "INVALID_TOOL_SYNTAX"}
        name = action.group(1)
        try:
            args = json.loads(action.group(2))
        except ValueError:
            return {"messages": messages, "tool_calls": calls, "final_answer": None, "stop": "INVALID_TOOL_SYNTAX"}
        if name not in tools.TOOLS:
            return {"messages": messages, "tool_calls": calls, "final_answer": None, "stop": "WRONG_TOOL"}
        try:
            result = tools.run(name, args if isinstance(args, dict) else {})
        except TOOL_ERRORS as error:
            result = {"error": f"{type(error).__name__}: {error}"}
        calls.append({"name": name, "arguments": args, "result": result})
        messages.append({"role": "user", "content": f"Observation: {json.dumps(result)}"})
    return {"messages": messages, "tool_calls": calls, "final_answer": None, "stop": "UNKNOWN_FAILURE"}
