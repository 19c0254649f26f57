"""The stand-in's command line (not Local Agent Bench's code): `run`, with LAB's flags; a preflight
of Ollama and of the weather API; the result JSON; `Summary: k/n passed` on stderr."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from local_agent_bench import VERSION, ollama, react, scoring, tools

RUNTIMES = ("raw-ollama-react",)
PROJECT = "local-agent-bench"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="local_agent_bench")
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run")
    run.add_argument("--runtime", choices=RUNTIMES, required=True)
    run.add_argument("--model", required=True)
    run.add_argument("--benchmark", required=True, type=Path)
    run.add_argument("--skip-preflight", action="store_true")
    run.add_argument("--deterministic-score-only", action="store_true")
    run.add_argument("--output", type=Path)
    return top


def preflight(model: str) -> str | None:
    """Why the run cannot start, or None: Ollama answers and lists the model by its exact name, and
    the weather API answers."""
    try:
        ollama.call("/api/version")
        names = [m.get("name") for m in ollama.call("/api/tags").get("models", [])]
        if model not in names:
            return f"model {model} is not installed (Ollama lists {', '.join(map(str, names)) or 'none'})"
        ollama.call("/api/show", {"model": model})
    except OSError as error:
        return f"Ollama unreachable at {ollama.base_url()}: {error}"
    try:
        tools.get_weather("Lisbon")
    except (OSError, LookupError) as error:
        return f"the weather API is unreachable: {error}"
    return None


def redact(value: Any, root: str, home: str) -> Any:
    if isinstance(value, str):
        return (
            value.replace(root, "<PROJECT_ROOT>").replace(home, "<HOME>")
            if home
            else value.replace(root, "<PROJECT_ROOT>")
        )
    if isinstance(value, list):
        return [redact(v, root, home) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, root, home) for k, v in value.items()}
    return value


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    root = Path.cwd()
    if root.name != PROJECT:
        print(f"run from the {PROJECT} project folder (here: {root.name})", file=sys.stderr)
        return 2
    if not args.skip_preflight and (why := preflight(args.model)):
        print(f"preflight failed: {why}", file=sys.stderr)
        return 2
    benchmark = json.loads(args.benchmark.read_text())
    results = []
    for task in benchmark["tasks"]:
        run = react.run_task(args.model, task, int(benchmark.get("max_steps", 5)))
        scored = scoring.score_task(task, run)
        results.append(
            {
                "id": task["id"],
                **scored,
                "tool_calls": run["tool_calls"],
                "final_answer": run["final_answer"],
                "raw_transcript": run["messages"],
            }
        )
    passed = sum(r["passed"] for r in results)
    metadata = {
        "tool": "local-agent-bench",
        "version": VERSION,
        "runtime": args.runtime,
        "model": args.model,
        "benchmark": str(args.benchmark),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "deterministic_score_only": args.deterministic_score_only,
    }
    document = redact(
        {"metadata": metadata, "tasks": results, "summary": {"passed": passed, "total": len(results)}},
        str(root),
        os.environ.get("HOME", ""),
    )
    out = args.output or root / "results" / f"{args.benchmark.stem}-{args.runtime}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"Summary: {passed}/{len(results)} passed", file=sys.stderr)
    return 0
