"""``python -m harness``: run, replay, lint, probe.

Bad input never shows a traceback: one line on stderr, exit 2. ``run`` exits 0 when the run
completed (whatever the score) and 3 when the engine is unreachable from the start.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from harness.contracts import ScenarioResult
from harness.protocols import PROTOCOLS
from harness.results import progress_event, progress_line, summary_lines
from harness.scenario import Scenario, ScenarioError, load_scenarios
from harness.scripted_engine import FAULTS, serve_command

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_ENGINE_DOWN = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description="The repro agent harness.")
    commands = parser.add_subparsers(dest="command", metavar="{run,replay,lint,regrade,probe,scripted-engine}", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser("run", help="run scenarios against an OpenAI-compatible engine")
    _scenario_options(run)
    run.add_argument("--base-url", required=True, help="engine root URL, e.g. http://127.0.0.1:8080")
    run.add_argument("--model", required=True, help="model name sent with each request")
    run.add_argument("--protocol", default="json_schema", choices=list(PROTOCOLS), help="how steps are asked for and read (docs/harness.md)")
    run.add_argument("--api", default="openai", choices=["openai", "ollama"], help="openai: /v1/chat/completions (llama.cpp); ollama: /api/chat")
    run.add_argument("--max-tokens", type=_positive_int, default=512)
    run.add_argument("--temperature", type=float, default=0.0)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--timeout", type=_positive_float, default=300.0, help="seconds per request")
    run.add_argument("--scenario-timeout", type=_positive_float, default=None, metavar="SECONDS", help="wall-clock budget per scenario (failure type timeout)")
    run.add_argument("--out", required=True, type=Path, help="results, one JSON line per scenario")
    run.add_argument("--transcripts", type=Path, help="write transcripts here instead of into --out")
    run.add_argument("--progress", choices=["text", "json"], default="text", help="json: one ProgressEvent line per scenario")
    run.add_argument("--cache-prompt", action="store_true", help="let llama.cpp reuse the KV cache of a previous prompt (faster, not exact)")

    replay = commands.add_parser("replay", help="replay each scenario's reference as the model")
    _scenario_options(replay)
    replay.add_argument("--out", type=Path, help="results, one JSON line per scenario")

    lint = commands.add_parser("lint", help="check scenario files against the project's rules")
    lint.add_argument("--scenarios", required=True, type=Path)

    regrade = commands.add_parser("regrade", help="execute recorded transcripts again and compare with the recorded results")
    regrade.add_argument("--scenarios", required=True, type=Path, help="the scenario file or folder the results came from")
    regrade.add_argument("--results", required=True, type=Path, help="scenarios.jsonl")
    regrade.add_argument("--transcripts", type=Path, help="transcripts.jsonl (default: the transcripts inside --results)")

    commands.add_parser("probe", help="engine probe (harness.probe)", add_help=False)

    scripted = commands.add_parser("scripted-engine", help="serve scenarios' reference steps as an OpenAI-compatible engine")
    scripted.add_argument("--scenarios", required=True, type=Path, help="the scenario file or folder to play")
    scripted.add_argument("--port", type=int, default=8080)
    scripted.add_argument("--host", default="127.0.0.1")
    scripted.add_argument("--fault", choices=list(FAULTS), default=None, help="emit this failure mode in every reply")
    return parser


def _scenario_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", required=True, type=Path, help="a scenario file or folder")
    parser.add_argument("--only", nargs="+", metavar="CATEGORY", help="keep these categories")
    parser.add_argument("--ids", nargs="+", metavar="ID", help="keep these scenario ids")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


# ---------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["probe"]:
        return _probe(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        return _fail(f"error: {exc}")
    except ScenarioError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"error: {exc.filename or ''}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


def _fail(message: str) -> int:
    print(f"harness: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _select(args: argparse.Namespace) -> list[Scenario]:
    scenarios = load_scenarios(args.scenarios, only=args.only, ids=args.ids)
    if not scenarios:
        raise UsageError(f"no scenarios selected from {args.scenarios}")
    return scenarios


# ---------------------------------------------------------------------------- commands


def _client(args: argparse.Namespace) -> Any:
    if args.api == "ollama":
        from harness.ollama_client import OllamaClient

        return OllamaClient(args.base_url, args.model, timeout=args.timeout)
    from harness.client import OpenAIClient

    return OpenAIClient(args.base_url, args.model, timeout=args.timeout, cache_prompt=args.cache_prompt)


def cmd_run(args: argparse.Namespace) -> int:
    from harness.errors import EngineError
    from harness.protocols import make_policy
    from harness.runner import run_scenario

    scenarios = _select(args)
    _check_writable(args.out, args.transcripts)
    with _client(args) as client:
        try:
            client.ping()
        except EngineError as exc:
            print(f"harness: engine unreachable: {exc}", file=sys.stderr)
            return EXIT_ENGINE_DOWN
        options = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}

        def play(scenario: Scenario) -> ScenarioResult:
            return run_scenario(scenario, make_policy(args.protocol, client, **options), timeout=args.scenario_timeout)

        _run_all(scenarios, play, args.out, args.transcripts, args.progress)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from harness.runner import replay_scenario

    scenarios = _select(args)
    if args.out:
        _check_writable(args.out, None)
    results = _run_all(scenarios, replay_scenario, args.out, None)
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def cmd_lint(args: argparse.Namespace) -> int:
    from harness.lint import lint_path

    if not args.scenarios.exists():
        raise UsageError(f"{args.scenarios}: no such file or folder")
    problems = lint_path(args.scenarios)
    for problem in problems:
        print(problem)
    if problems:
        return EXIT_FAILED
    print(f"lint: no problems in {args.scenarios}")
    return EXIT_OK


def cmd_regrade(args: argparse.Namespace) -> int:
    from harness.regrade import command

    return command(args.scenarios, args.results, args.transcripts)


def _probe(argv: list[str]) -> int:
    try:
        probe = importlib.import_module("harness.probe")
    except ModuleNotFoundError as exc:
        if exc.name != "harness.probe":
            raise
        return _fail("error: the probe command is not available (harness/probe.py is missing)")
    return int(probe.main(argv) or 0)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "replay": cmd_replay,
    "lint": cmd_lint,
    "regrade": cmd_regrade,
    "scripted-engine": lambda args: serve_command(args.scenarios, args.host, args.port, args.fault),
}


# ---------------------------------------------------------------------------- running and writing


def _run_all(
    scenarios: list[Scenario],
    play: Callable[[Scenario], ScenarioResult],
    out: Path | None,
    transcripts: Path | None,
    progress_format: str = "text",
) -> list[ScenarioResult]:
    progress = progress_event if progress_format == "json" else progress_line
    results = []
    with _atomic_lines(out) as write_result, _atomic_lines(transcripts) as write_transcript:
        for k, scenario in enumerate(scenarios, start=1):
            result = play(scenario)
            results.append(result)
            record = result.model_dump(mode="json", exclude={"transcript"} if transcripts else None)
            write_result(record)
            if transcripts:
                write_transcript({"id": result.id, "transcript": result.transcript})
            print(progress(k, len(scenarios), result), flush=True)
    for line in summary_lines(results):
        print(line, flush=True)
    return results


class _atomic_lines:
    """Append JSON lines to a temporary file beside ``path``; rename it into place on success."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: Any = None
        self._temp = ""

    def __enter__(self) -> Callable[[dict[str, Any]], None]:
        if self.path is None:
            return lambda record: None
        handle, self._temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self._file = os.fdopen(handle, "w", encoding="utf-8")
        return self._write

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if self._file is None:
            return
        self._file.close()
        assert self.path is not None  # a file was opened, so there is a path
        if exc_type is None:
            os.chmod(self._temp, 0o644)  # mkstemp makes it private; results are meant to be read
            os.replace(self._temp, self.path)
        else:
            os.unlink(self._temp)


def _check_writable(*paths: Path | None) -> None:
    for path in paths:
        if path is not None and not path.parent.resolve().is_dir():
            raise UsageError(f"{path}: the folder {path.parent} does not exist")
