"""The stand-in's command line (not LAB's code), with LAB's options:

    python3 -m local_agent_bench [--ollama-base-url URL] [--runtime NAME] run --model NAME
        [--runtime NAME] [--benchmark FILE] [--output FILE] [--max-steps N] [--skip-preflight]
    python3 -m local_agent_bench diagnose [--model NAME]

Runtimes: raw-ollama-react, and the CLI runtimes openclaw-react, hermes-react and pi-react
(local_agent_bench.backends).

`run` writes the result document (metadata, runtime, model, benchmark, results: one per task, paths
redacted) to --output, or prints it; `Summary: k/n passed` (a task passes at score 1.0) on stderr;
exit 0 when every task passed, 1 otherwise or when the preflight fails (its checks printed)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from local_agent_bench import VERSION
from local_agent_bench.backends import backend
from local_agent_bench.diagnostics import run_diagnostics
from local_agent_bench.react import run_task
from local_agent_bench.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = {"raw-ollama-react": "raw-ollama-react", "ollama": "raw-ollama-react", "raw-ollama": "raw-ollama-react"}
RUNTIMES |= {f"{name}-react": f"{name}-react" for name in ("openclaw", "hermes", "pi")} | {
    name: f"{name}-react" for name in ("openclaw", "hermes", "pi")
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="local-agent-bench")
    top.add_argument("--ollama-base-url", default=os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434"))
    top.add_argument("--runtime", default="raw-ollama-react")
    commands = top.add_subparsers(dest="command", required=True)
    diagnose = commands.add_parser("diagnose")
    diagnose.add_argument("--model")
    run = commands.add_parser("run")
    run.add_argument("--model", required=True)
    run.add_argument("--runtime", dest="run_runtime")
    run.add_argument("--benchmark", type=Path, default=ROOT / "benchmarks" / "smoke.json")
    run.add_argument("--output", type=Path)
    run.add_argument("--max-steps", type=int, default=5)
    run.add_argument("--skip-preflight", action="store_true")
    return top


def printed(checks: list[tuple[str, bool, str, str]]) -> None:
    for name, ok, layer, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'} [{layer}] {name}: {detail}", file=sys.stderr)


def redacted(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: redacted(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, pairs) for v in value]
    if isinstance(value, str):
        for path, mark in pairs:
            value = value.replace(path, mark)
    return value


def run(args: argparse.Namespace, runtime: str) -> int:
    tasks = load_tasks(args.benchmark)
    if not args.skip_preflight:
        checks = run_diagnostics(args.ollama_base_url, args.model, any(t.requires_network for t in tasks), runtime)
        if not all(ok for _name, ok, _layer, _detail in checks):
            printed(checks)
            return 1
    turns = backend(runtime, args.ollama_base_url)
    results = [run_task(turns, runtime, args.model, task, args.max_steps) for task in tasks]
    metadata = {"tool": "local-agent-bench (stand-in)", "version": VERSION, "python": platform.python_version()}
    document = {"metadata": metadata, "runtime": runtime, "model": args.model, "benchmark": str(args.benchmark)}
    document["results"] = [asdict(r) for r in results]
    marks = sorted([(str(ROOT), "<PROJECT_ROOT>"), (str(Path.home()), "<HOME>")], key=lambda p: -len(p[0]))
    text = json.dumps(redacted(document, marks), indent=2, ensure_ascii=False)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    passed = sum(r.score == 1.0 for r in results)
    print(f"Summary: {passed}/{len(results)} passed", file=sys.stderr)
    return 0 if passed == len(results) else 1


def main() -> int:
    args = parser().parse_args()
    runtime = RUNTIMES.get(getattr(args, "run_runtime", None) or args.runtime)
    if runtime is None:
        print(f"unknown runtime: {args.runtime}. Expected one of: {', '.join(sorted(RUNTIMES))}", file=sys.stderr)
        return 2
    if args.command == "diagnose":
        checks = run_diagnostics(args.ollama_base_url, args.model, True, runtime)
        printed(checks)
        return 0 if all(c[1] for c in checks) else 1
    return run(args, runtime)


if __name__ == "__main__":
    raise SystemExit(main())
