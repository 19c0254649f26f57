"""``python -m harness``: run, replay, lint, regrade, probe, scripted-engine.

- ``run``: play scenarios against an engine; exit ``EXIT_OK`` when the run completed (whatever
  the score), ``EXIT_ENGINE_UNREACHABLE`` when the engine never answered.
- ``replay``: play scenarios with their reference policy; ``EXIT_FAILED`` when one fails.
- ``lint``: check scenario files; ``EXIT_FAILED`` on a finding.
- ``regrade``: replay recorded transcripts and compare with the recorded results.
- ``probe``: the engine probes (``harness.probe``), run inside the sealed namespace.
- ``scripted-engine``: serve a scenario's reference replies over the OpenAI API (tests).

The exit statuses are named once, in ``harness.contracts``. Bad input never shows a traceback:
one line on stderr, ``EXIT_BAD_INPUT``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from harness.contracts import (
    EXIT_BAD_INPUT,
    EXIT_ENGINE_UNREACHABLE,
    EXIT_FAILED,
    EXIT_OK,
    ScenarioResult,
    TranscriptLine,
)
from harness.io.inputs import MAX_SCENARIO_BYTES, InputError, open_regular, require_output_file
from harness.model.scenario import Scenario, ScenarioError, load_scenarios
from harness.protocols import PROTOCOLS
from harness.scoring.results import progress_event, progress_line, summary_lines
from harness.testing import FAULTS, serve_command

OUTPUT_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT}


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description="The repro agent harness.")
    commands = parser.add_subparsers(
        dest="command", metavar="{run,replay,lint,regrade,probe,scripted-engine}", parser_class=_Parser
    )
    commands.required = True

    run = commands.add_parser("run", help="run scenarios against an OpenAI-compatible engine")
    _scenario_options(run)
    run.add_argument("--base-url", required=True, help="engine root URL, e.g. http://127.0.0.1:8080")
    run.add_argument("--model", required=True, help="model name sent with each request")
    run.add_argument(
        "--protocol",
        default="json_schema",
        choices=list(PROTOCOLS),
        help="how steps are asked for and read (docs/harness.md)",
    )
    run.add_argument(
        "--api",
        default="openai",
        choices=["openai", "ollama"],
        help="openai: /v1/chat/completions (llama.cpp); ollama: /api/chat",
    )
    run.add_argument("--max-tokens", type=_positive_int, default=512)
    run.add_argument("--temperature", type=_finite_float, default=0.0)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--timeout", type=_positive_float, default=300.0, help="seconds per request")
    run.add_argument(
        "--scenario-timeout",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="wall-clock budget per scenario (failure type timeout)",
    )
    run.add_argument("--out", required=True, type=Path, help="results, one JSON line per scenario")
    run.add_argument("--transcripts", type=Path, help="write transcripts here instead of into --out")
    run.add_argument(
        "--progress", choices=["text", "json"], default="text", help="json: one ProgressEvent line per scenario"
    )
    run.add_argument(
        "--cache-prompt",
        nargs="?",
        const="run",
        choices=["run", "scenario"],
        default=None,
        help="let llama.cpp reuse the KV cache of a previous prompt: across the run (faster, not exact), or "
        "per scenario (each scenario's first request reads no cache: exact against the same mode)",
    )
    _runtime_options(run)

    replay = commands.add_parser("replay", help="replay each scenario's reference as the model")
    _scenario_options(replay)
    replay.add_argument("--out", type=Path, help="results, one JSON line per scenario")

    lint = commands.add_parser("lint", help="check scenario files against the project's rules")
    lint.add_argument("--scenarios", required=True, type=Path)

    regrade = commands.add_parser(
        "regrade", help="execute recorded transcripts again and compare with the recorded results"
    )
    regrade.add_argument(
        "--scenarios", required=True, type=Path, help="the scenario file or folder the results came from"
    )
    regrade.add_argument("--results", required=True, type=Path, help="scenarios.jsonl")
    regrade.add_argument(
        "--transcripts", type=Path, help="transcripts.jsonl (default: the transcripts inside --results)"
    )

    commands.add_parser("probe", help="engine probe (harness.probe)", add_help=False)

    scripted = commands.add_parser(
        "scripted-engine", help="serve scenarios' reference steps as an OpenAI-compatible engine"
    )
    scripted.add_argument(
        "--scenarios", required=True, type=Path, help="the scenario file or folder to play, or a tar archive of them"
    )
    scripted.add_argument("--port", type=_port, default=8080, help="0 to 65535 (0: a free port)")
    scripted.add_argument("--host", default="127.0.0.1")
    scripted.add_argument("--fault", choices=list(FAULTS), default=None, help="emit this failure mode in every reply")
    scripted.add_argument(
        "--record", type=Path, default=None, help="append each request body to this file, one JSON line each"
    )
    scripted.add_argument(
        "--pace",
        type=_positive_float,
        default=None,
        metavar="TOKENS_PER_SECOND",
        help="hold each reply back as long as generating it at this rate would take; timings report the real durations",
    )
    return parser


def _runtime_options(run: argparse.ArgumentParser) -> None:
    from harness.runtimes.registry import ADAPTERS

    run.add_argument(
        "--runtime",
        choices=list(ADAPTERS),
        default=None,
        help="an agent runtime produces each turn (react; native_tools where it offers tools: docs/runtimes.md)",
    )
    run.add_argument(
        "--runtime-clock", metavar="'YYYY-MM-DD HH:MM:SS'", default=None, help="the instant each turn starts at (UTC)"
    )
    run.add_argument("--runtime-context", type=_positive_int, default=4096, help="the context the runtime is told")
    run.add_argument("--wire", type=Path, default=None, help="the runtime's turns and exchanges, one JSON line each")


def _scenario_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", required=True, type=Path, help="a scenario file or folder")
    parser.add_argument("--only", nargs="+", metavar="CATEGORY", help="keep these categories")
    parser.add_argument("--ids", nargs="+", metavar="ID", help="keep these scenario ids")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {value}")
    return value


# ---------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with standard output closed (`>&-`): results and progress would be lost
        return _fail("standard output is closed; redirect it to a file or /dev/null instead")
    if argv[:1] == ["probe"]:
        return _probe(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        status = COMMANDS[args.command](args)
        sys.stdout.flush()  # a full or closed standard output fails here, not in the interpreter's last flush
        return status
    except UsageError as exc:
        return _fail(f"error: {exc}")
    except InputError as exc:  # an input or output file, as an OSError below would be
        return _fail(f"error: {exc}")
    except ScenarioError as exc:
        return _fail(str(exc))
    except OSError as exc:
        if exc.filename is None and exc.errno in OUTPUT_ERRNOS:
            return _output_failed(exc)
        return _fail(f"error: {exc.filename or ''}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


def _fail(message: str) -> int:
    print(f"harness: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _output_failed(error: OSError) -> int:
    """Standard output could not be written (a closed pipe, a full device): one line, exit 2, and
    stdout pointed at /dev/null so that the interpreter's last flush does not fail again."""
    _fail(f"standard output could not be written: {error.strerror or error}")
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BAD_INPUT


def _select(args: argparse.Namespace) -> list[Scenario]:
    scenarios = load_scenarios(args.scenarios, only=args.only, ids=args.ids)
    if not scenarios:
        raise UsageError(f"no scenarios selected from {args.scenarios}")
    return scenarios


# ---------------------------------------------------------------------------- commands


def _client(args: argparse.Namespace) -> Any:
    if args.runtime is not None:
        return _runtime_client(args)
    return _engine_client(args)


def _runtime_client(args: argparse.Namespace) -> Any:
    from harness.runtimes.base import Endpoint
    from harness.runtimes.client import RuntimeClient
    from harness.runtimes.native import NativeRuntimeClient
    from harness.runtimes.registry import adapter_named

    adapter = adapter_named(args.runtime)
    native = args.protocol == "native_tools"
    if args.protocol != "react" and not (native and adapter.native):
        modes = "react or native_tools" if adapter.native else "react"
        raise UsageError(f"--runtime {args.runtime} runs the {modes} protocol, not {args.protocol}")
    engine = _engine_client(args)
    if args.api == "ollama":  # every runtime talks OpenAI's API: Ollama serves it under /v1
        from harness.clients.openai_compat import OpenAIClient

        engine = OpenAIClient(args.base_url, args.model, timeout=args.timeout)
    fill = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    if args.seed is not None:
        fill["seed"] = args.seed
    endpoint = Endpoint("", args.model, args.runtime_context, args.max_tokens)
    return (NativeRuntimeClient if native else RuntimeClient)(
        adapter,
        engine,
        endpoint,
        fill=fill,
        clock=args.runtime_clock,
        wire=args.wire,
        timeout=args.timeout,
        per_scenario=args.cache_prompt == "scenario",
    )


def _engine_client(args: argparse.Namespace) -> Any:
    if args.api == "ollama":
        from harness.clients.ollama import OllamaClient

        return OllamaClient(args.base_url, args.model, timeout=args.timeout)
    from harness.clients.openai_compat import OpenAIClient

    return OpenAIClient(
        args.base_url,
        args.model,
        timeout=args.timeout,
        cache_prompt=args.cache_prompt is not None,
        per_scenario=args.cache_prompt == "scenario",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from harness.clients.errors import EngineError
    from harness.protocols import make_policy
    from harness.runner import run_scenario
    from harness.runtimes.native import policy_retries

    _check_outputs(args.out, args.transcripts)
    scenarios = _select(args)
    with _client(args) as client:
        try:
            client.ping()
        except EngineError as exc:
            print(f"harness: engine unreachable: {exc}", file=sys.stderr)
            return EXIT_ENGINE_UNREACHABLE
        options = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
        options["retries"] = policy_retries(args.protocol, args.runtime)

        def play(scenario: Scenario) -> ScenarioResult:
            client.begin_scenario(scenario.id)
            return run_scenario(scenario, make_policy(args.protocol, client, **options), timeout=args.scenario_timeout)

        _run_all(scenarios, play, args.out, args.transcripts, args.progress)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from harness.runner import replay_scenario

    _check_outputs(args.out)
    scenarios = _select(args)
    results = _run_all(scenarios, replay_scenario, args.out, None)
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def cmd_lint(args: argparse.Namespace) -> int:
    from harness.lint import lint_path

    if not args.scenarios.is_dir():  # the one file named must be readable at all: else bad input, not a finding
        open_regular(args.scenarios, MAX_SCENARIO_BYTES).close()
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
        return _fail("error: the probe command is not available (harness/probe/ is missing)")
    return int(probe.main(argv) or 0)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "replay": cmd_replay,
    "lint": cmd_lint,
    "regrade": cmd_regrade,
    "scripted-engine": lambda args: serve_command(
        args.scenarios, args.host, args.port, args.fault, args.record, args.pace
    ),
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
                write_transcript(
                    TranscriptLine(id=result.id, transcript=result.transcript or []).model_dump(mode="json")
                )
            print(progress(k, len(scenarios), result), flush=True)
    for line in summary_lines(results):
        print(line, flush=True)
    return results


class _atomic_lines:
    """Append JSON lines to a temporary file beside ``path`` (``.<name>.*.tmp``, readable by all,
    each line flushed as written: the orchestrator keeps each finished scenario from it, so an
    interrupted cell keeps them); rename it into place on success. Every write error (a full
    disk) is an ``InputError`` naming ``path``, and the temporary file never outlives the run."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: Any = None
        self._temp = ""

    def __enter__(self) -> Callable[[dict[str, Any]], None]:
        if self.path is None:
            return lambda record: None
        with self._errors():
            handle, self._temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            os.fchmod(handle, 0o644)  # mkstemp makes it private; the host reads it while it grows
        self._file = os.fdopen(handle, "w", encoding="utf-8")
        return self._write

    def _write(self, record: dict[str, Any]) -> None:
        with self._errors():
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if self._file is None:
            return
        try:
            if exc_type is None:
                with self._errors():
                    self._keep()
            else:
                with contextlib.suppress(OSError):
                    self._file.close()
        finally:
            if os.path.lexists(self._temp):
                os.unlink(self._temp)

    def _keep(self) -> None:
        assert self.path is not None  # a file was opened, so there is a path
        with self._file:
            self._file.flush()
            os.fsync(self._file.fileno())
        os.replace(self._temp, self.path)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            raise InputError(f"{self.path}: cannot write ({error.strerror or error})") from None


def _check_outputs(*paths: Path | None) -> None:
    """Every output target checked before any work (harness/io/inputs.py), and no two the same."""
    given = [path for path in paths if path is not None]
    for path in given:
        require_output_file(path)
    if len({path.resolve() for path in given}) < len(given):
        raise UsageError("--out and --transcripts name the same file")
