"""repro's driver for ToolCallBench inside its sealed container (stdlib and toolcallbench only).

It runs ToolCallBench's own `run` command unchanged, with three observers that change nothing
ToolCallBench computes, decides or writes:

- before each run is scored, the final state of the run's repository copy (the files that differ
  from the fixture, and those removed) is written to /out/observed.jsonl, with the exit codes of
  the check commands ToolCallBench runs while scoring: `repro check` re-executes ToolCallBench's
  checks from them (it never runs a model's code on the host);
- each chat request of the OpenAI-compatible backend also carries the matrix's `max_tokens` and
  the profile's `cache_prompt` (ToolCallBench 1.0.1 sends neither; without them the engine's
  defaults would apply: no token limit, and llama.cpp's prompt cache on); with the cache per
  scenario (`--cache-prompt scenario`) a task's first request says false and its later ones true,
  so each task starts from an empty cache whatever ran before it; its `ollama` backend
  (/api/chat) is left as it is: the model repro created in Ollama has the matrix's `num_predict`
  as its default, and Ollama has no prompt-cache switch;
- one JSON progress line per finished task on stdout (repro's progress display).

Usage: python driver.py --out DIR --tasks ID,ID [--backend openai-compat|ollama|scripted] [--host URL]
       [--model NAME] [--profile P] [--seed N] [--temperature T] [--max-tokens N]
       [--context N] [--timeout S] [--cache-prompt [run|scenario]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SESSION = "repro"
IGNORED = {"__pycache__", ".pytest_cache", ".git"}
MAX_STATE_BYTES = 2 * 1024 * 1024


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="driver")
    parser.add_argument("--out", required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--backend", default="openai-compat", choices=["openai-compat", "ollama", "scripted"])
    parser.add_argument("--host", default="")
    parser.add_argument("--model", default="")
    parser.add_argument("--profile", default="oracle")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--cache-prompt", nargs="?", const="run", choices=["run", "scenario"], default=None)
    return parser.parse_args(argv)


def state_of(root: Path, fixture: Path) -> dict:
    """The files of `root` that differ from `fixture` (text, or None when not UTF-8) and those removed."""

    def files(base: Path) -> dict[str, Path]:
        found = {}
        for folder, dirs, names in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in IGNORED)
            for name in sorted(names):
                if not name.endswith(".pyc"):
                    path = Path(folder) / name
                    found[path.relative_to(base).as_posix()] = path
        return found

    now, before = files(root), files(fixture)
    changed, size = {}, 0
    for rel, path in now.items():
        data = path.read_bytes()
        if rel in before and before[rel].read_bytes() == data:
            continue
        size += len(data)
        try:
            changed[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            changed[rel] = None
    state = {"changed": changed, "removed": sorted(set(before) - set(now))}
    if size > MAX_STATE_BYTES:
        state = {"changed": {}, "removed": [], "too_large": size}
    return state


class CacheSwitch:
    """The `cache_prompt` each request carries: off (None), on across the run, or per scenario
    (a task's first request false, its later ones true; `begin` marks a task's start)."""

    def __init__(self, mode: str | None) -> None:
        self.mode, self.first = mode, True

    def begin(self) -> None:
        self.first = True

    def next_value(self) -> bool:
        value = self.mode == "run" or (self.mode == "scenario" and not self.first)
        self.first = False
        return value


def observe(out: Path, total: int, cache: CacheSwitch) -> None:
    """Install the observers (see the module's docstring)."""
    import toolcallbench.checks as checks
    import toolcallbench.cli as cli
    import toolcallbench.runner as runner

    observed = out / "observed.jsonl"
    commands: list[dict] = []
    original_trusted, original_evaluate, original_run_once = checks.run_trusted, runner.evaluate, cli.run_once

    def run_trusted(argv, cwd, timeout=30.0):
        try:
            proc = original_trusted(argv, cwd, timeout)
        except subprocess.TimeoutExpired:
            commands.append({"argv": list(argv), "timed_out": True})
            raise
        commands.append({"argv": list(argv), "returncode": proc.returncode, "stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]})
        return proc

    def evaluate(task, tr, root, fixture_dir, default_max_calls=12):
        commands.clear()
        state = state_of(Path(root), Path(fixture_dir))
        result = original_evaluate(task, tr, root, fixture_dir, default_max_calls=default_max_calls)
        with observed.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"task": task.id, "state": state, "commands": list(commands)}, sort_keys=True) + "\n")
        return result

    done = [0]

    def run_once(task, backend, fixture_dir, **kwargs):
        cache.begin()
        record = original_run_once(task, backend, fixture_dir, **kwargs)
        done[0] += 1
        passed = record.status == "ok" and record.check is not None and record.check.passed
        event = {"event": "scenario", "index": done[0], "total": total, "id": task.id, "passed": passed, "seconds": round(record.transcript.wall_seconds, 3)}
        print(json.dumps(event), flush=True)
        return record

    checks.run_trusted, runner.evaluate, cli.run_once = run_trusted, evaluate, run_once


def add_decoding(max_tokens: int | None, cache: CacheSwitch) -> None:
    from toolcallbench.backends import openai_compat

    original = openai_compat.request_json

    def request_json(method, url, payload, timeout):
        if payload is not None and url.endswith("/v1/chat/completions"):
            payload = {**payload, "cache_prompt": cache.next_value(), **({"max_tokens": max_tokens} if max_tokens else {})}
        return original(method, url, payload, timeout)

    openai_compat.request_json = request_json


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Path(args.out)
    tasks = [t for t in args.tasks.split(",") if t]
    cache = CacheSwitch(args.cache_prompt)
    observe(out, len(tasks), cache)
    if args.backend == "openai-compat":
        add_decoding(args.max_tokens, cache)
    work = Path(tempfile.mkdtemp(prefix="tcb-work-"))
    config = work / "config.yaml"
    settings = {"num_ctx": args.context, "temperature": args.temperature, "seed": args.seed, "repeats": 1, "request_timeout": args.timeout}
    config.write_text(json.dumps({"backend": args.backend, "settings": settings}))  # JSON is YAML
    command = ["run", "--config", str(config), "--root", str(work), "--results-dir", str(out / "results"), "--session", SESSION, "--tasks", ",".join(tasks)]
    if args.backend == "scripted":
        command += ["--profile", args.profile]
    else:
        command += ["--host", args.host, "--model", args.model]
    from toolcallbench import __version__
    from toolcallbench.cli import main as toolcallbench_main

    record = {"toolcallbench_version": __version__, "argv": command, "max_tokens": args.max_tokens, "cache_prompt": args.cache_prompt}
    (out / "driver.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return toolcallbench_main(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
