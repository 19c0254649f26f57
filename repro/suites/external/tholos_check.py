"""Tholos-Bench's runner re-checked on the host from a cell's raw outputs.

Two kinds of evidence, per scenario:

- **The record alone** (no runner code): pass means no failed assertion, and each failed one is
  an assertion of the scenario file; the steps are the assistant messages; every request the
  runner sent carries its fixed decoding (temperature 0, max_tokens 512, no thinking) and the
  response_format of the cell's `--json-mode` (json_schema, or json_object in its JSON mode) and
  its messages are the run's messages before that step (a retry: those plus one `Invalid step`
  message), in order, one first attempt per step; the tokens are the sum of the engine's usage
  over the steps' requests; the invalid count is at most two per retry; the category is the
  scenario file's.
- **The runner's own code**, from the pinned archive in the cache (its sha256 verified when it was
  fetched, and one the adapter was written for): the scenario's database as the runner scored it
  (opened read-only and immutable: nothing can be written) holds the recorded run (status, error,
  steps, tokens, messages), the invalid count is the runner's own sum over its steps, and its
  `evaluate` re-executed on that database with the recorded snapshot gives the recorded failed
  assertions.

Its summary (the console table) is rendered again by its own `bench` with every scenario's run
replaced by the recorded result, and must be the recorded console output byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import sqlite3
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.io import loads_strict
from repro.core.errors import BadInput
from repro.suites.external.base import RawIndex, raw_name
from repro.suites.external.tholos_raw import (
    CONSOLE,
    RESPONSE_FORMATS,
    RUNNER_ERRORS,
    RUNNER_MAX_TOKENS,
    RUNNER_TEMPERATURE,
    Request,
    RunnerResult,
    Worker,
    expectations,
)
from repro.suites.external.wheels import import_harness

PACKAGE = "tholos"
MODULES = ("bench.runner", "workspace", "db")
RETRY_PREFIX = "Invalid step: "  # tholos.prompt.retry
SHOWN = 5


def runner_root(code_root: Path) -> Path:
    """The folder holding the `tholos` package in an unpacked archive (its root or one folder down:
    the deterministic archive has a `tholos-runner/` prefix, a `git archive` none)."""
    for candidate in [code_root, *sorted(p for p in code_root.iterdir() if p.is_dir() and not p.is_symlink())]:
        if (candidate / PACKAGE / "bench" / "runner.py").is_file():
            return candidate
    raise BadInput(f"no {PACKAGE}/bench/runner.py in the runner's archive")


def load(code_root: Path) -> dict[str, ModuleType]:
    """The runner's modules from the unpacked, verified archive (never another copy of them)."""
    return import_harness(
        runner_root(code_root),
        PACKAGE,
        MODULES,
        "the Tholos runner cannot be loaded on this host ({error}); it needs httpx and Python's sqlite3",
    )


def recheck_workers(workers: list[Worker], code_root: Path, mode: str) -> list[str]:
    """Every scenario of every worker held to its record and re-scored; `mode` is the runner's
    `--json-mode` the cell's protocol names."""
    if mode not in RESPONSE_FORMATS:
        return [f"the runner's --json-mode {mode[:40]!r} is not one repro runs ({', '.join(RESPONSE_FORMATS)})"]
    runner = load(code_root)
    problems: list[str] = []
    for worker in workers:
        ids = [r.id for r in worker.results]
        strays = (
            sorted({r.id for r in worker.requests} - set(ids))
            + sorted({o.id for o in worker.observed} - set(ids))
            + sorted(set(worker.databases) - set(ids))
        )
        problems += [
            f"worker {worker.number}: a request, snapshot or database of {s!r}, which has no result" for s in strays[:1]
        ]
        observed = {o.id: o for o in worker.observed}
        for result in worker.results:
            requests = [r for r in worker.requests if r.id == result.id]
            found = record_problems(result, requests, worker, RESPONSE_FORMATS[mode]) + database_problems(
                runner, result, worker, observed.get(result.id)
            )
            problems += [f"{result.id}: {p}" for p in found]
    return problems[:SHOWN] + ([f"{len(problems) - SHOWN} more"] if len(problems) > SHOWN else [])


# ---------------------------------------------------------------- the record alone


def record_problems(result: RunnerResult, requests: list[Request], worker: Worker, response_format: str) -> list[str]:
    expect = expectations(worker, result)
    problems = []
    if result.passed != (not result.failed_assertions):
        problems.append(f"passed is {result.passed} with {len(result.failed_assertions)} failed assertion(s)")
    if any(a not in expect for a in result.failed_assertions):
        problems.append("a failed assertion is not one of the scenario file's")
    assistant = [i for i, m in enumerate(result.messages) if m.get("role") == "assistant"]
    if result.steps != len(assistant):
        problems.append(f"steps is {result.steps}, the messages hold {len(assistant)} step(s)")
    if [m.get("role") for m in result.messages[:2]] != ["system", "user"]:
        problems.append("the messages do not start with the system prompt and the trigger")
    return problems + request_problems(result, requests, assistant, response_format)


def request_problems(
    result: RunnerResult, requests: list[Request], assistant: list[int], response_format: str
) -> list[str]:
    """Every request carries the runner's decoding and `response_format`, and its messages are the
    run's before that step."""
    bodies: list[dict[str, Any] | None] = []
    for request in requests:
        if request.body is None:
            bodies.append(None)
            continue
        try:
            body = loads_strict(request.body, max_depth=64)
        except ValueError:
            return [f"request {request.n} is not JSON"]
        bodies.append(body if isinstance(body, dict) else {})
    problems = [
        f"request {r.n}: {p}"
        for r, b in zip(requests, bodies, strict=True)
        if b is not None
        for p in decoding_problems(b, response_format)
    ][:2]
    first, retries, usage_in, usage_out = 0, 0, 0, 0
    for request, body in zip(requests, bodies, strict=True):
        if body is None:
            continue
        messages = body.get("messages")
        if not isinstance(messages, list):
            return [*problems, f"request {request.n} has no messages"]
        retry = (
            bool(messages)
            and messages[-1].get("role") == "user"
            and str(messages[-1].get("content", "")).startswith(RETRY_PREFIX)
        )
        step = first - 1 if retry else first
        if (
            step < 0
            or step > len(assistant)
            or (step < len(assistant) and messages[: len(messages) - retry] != result.messages[: assistant[step]])
        ):
            return [*problems, f"request {request.n}'s messages are not the run's messages before step {step + 1}"]
        if step == len(assistant) and messages[: len(messages) - retry] != result.messages:
            return [*problems, f"request {request.n}'s messages are not the run's messages"]
        retries, first = retries + retry, first + (not retry)
        if step < len(assistant):
            usage_in, usage_out = (
                usage_in + usage(request, "prompt_tokens"),
                usage_out + usage(request, "completion_tokens"),
            )
    stopped_by_engine = result.status == "failed" and result.error not in RUNNER_ERRORS
    if first != len(assistant) and not (stopped_by_engine and first == len(assistant) + 1):
        problems.append(f"{first} first request(s) for {len(assistant)} step(s)")
    if (usage_in, usage_out) != (result.tokens.in_, result.tokens.out):
        problems.append(
            f"tokens are {result.tokens.in_}/{result.tokens.out}, the engine's usage sums to {usage_in}/{usage_out}"
        )
    if result.invalid_json_count > 2 * retries:
        problems.append(f"invalid_json_count is {result.invalid_json_count} with {retries} retried request(s)")
    return problems


def decoding_problems(body: dict[str, Any], response_format: str) -> list[str]:
    wanted = {
        "temperature": RUNNER_TEMPERATURE,
        "max_tokens": RUNNER_MAX_TOKENS,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    problems = [
        f"{key} is {body.get(key)!r}, the runner sends {value!r}"
        for key, value in wanted.items()
        if body.get(key) != value
    ]
    if (body.get("response_format") or {}).get("type") != response_format:
        problems.append(f"no {response_format} response_format")
    return problems + (["it carries cache_prompt, which the runner never sends"] if "cache_prompt" in body else [])


def usage(request: Request, key: str) -> int:
    """One count of the engine's usage in a recorded answer (0 when it gave none, as the runner reads it)."""
    try:
        answer = loads_strict(request.answer or "{}", max_depth=64)
    except ValueError:
        return 0
    value = ((answer if isinstance(answer, dict) else {}).get("usage") or {}).get(key, 0) or 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---------------------------------------------------------------- the runner's own scoring


def database_problems(
    runner: dict[str, ModuleType], result: RunnerResult, worker: Worker, observation: Any
) -> list[str]:
    data = worker.databases.get(result.id)
    if data is None or observation is None:
        return ["its database or snapshot was not kept: the runner's scoring cannot be re-executed"]
    with tempfile.TemporaryDirectory(prefix="repro-tholos-") as folder:
        path = Path(folder) / "scored.sqlite"
        path.write_bytes(data)
        try:
            db = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
        except sqlite3.Error as error:
            return [f"its database does not open ({error})"]
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA trusted_schema=OFF")
            return scored_problems(
                runner, db, result, observation.run_id, initial_of(observation.initial), expectations(worker, result)
            )
        except (sqlite3.Error, ValueError, KeyError, TypeError, AttributeError) as error:
            return [
                f"the runner's scoring does not re-execute on its database ({type(error).__name__}: {str(error)[:120]})"
            ]
        finally:
            db.close()


def initial_of(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The runner's snapshot from its JSON form: versions as tuples, id lists as sets."""
    tables = {name: tuple(v) if isinstance(v, list) else v for name, v in (snapshot.get("tables") or {}).items()}
    notes = {name: tuple(v) if isinstance(v, list) else v for name, v in (snapshot.get("notes") or {}).items()}
    return {
        "tables": tables,
        "notes": notes,
        **{key: set(snapshot.get(key) or []) for key in ("tasks", "memories", "runs")},
    }


def scored_problems(
    runner: dict[str, ModuleType],
    db: sqlite3.Connection,
    result: RunnerResult,
    run_id: int,
    initial: dict,
    expect: list,
) -> list[str]:
    run = runner["workspace"].get_run(db, run_id)
    if run is None:
        return [f"its database holds no run {run_id}"]
    recorded = {
        "status": result.status,
        "error": result.error,
        "step_count": result.steps,
        "tokens_in": result.tokens.in_,
        "tokens_out": result.tokens.out,
    }
    problems = [
        f"{key} is {value!r}, its database holds {run[key]!r}" for key, value in recorded.items() if run[key] != value
    ]
    if run["messages"] != result.messages:
        problems.append("its messages are not the ones its database holds")
    invalid = sum(step["result"].get("invalid_json_count", 0) + (step["status"] == "retried") for step in run["steps"])
    if invalid != result.invalid_json_count:
        problems.append(
            f"invalid_json_count is {result.invalid_json_count}, the runner's sum over its steps is {invalid}"
        )
    failed = runner["bench.runner"].evaluate(db, run_id, expect, initial)
    if failed != result.failed_assertions:
        problems.append(
            f"the runner's evaluate, re-executed, fails {len(failed)} assertion(s), the result "
            f"{len(result.failed_assertions)}"
        )
    return problems


# ---------------------------------------------------------------- the summary


def render_summaries(workers: list[Worker], index: RawIndex, code_root: Path) -> dict[str, bytes]:
    """Each worker's console output rendered again by the runner's own `bench`, each scenario's
    run replaced by its recorded result: name in the cell -> bytes."""
    bench = load(code_root)["bench.runner"]
    rendered = {}
    for worker in workers:
        recorded = {r.id: r.model_dump(by_alias=True) for r in worker.results}
        original = bench.run_scenario  # type: ignore[attr-defined]
        bench.run_scenario = (  # type: ignore[attr-defined]
            lambda scenario, profile, transport=None, pin_clock=False, recorded=recorded: recorded[scenario["id"]]
        )
        try:
            with tempfile.TemporaryDirectory(prefix="repro-tholos-") as folder:
                for name, data in worker.scenarios.items():
                    (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
                    (Path(folder) / name).write_bytes(data)
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    bench.bench("http://replayed.invalid/v1", "replayed", scenarios=folder)
        except (KeyError, ValueError, ZeroDivisionError) as error:
            raise BadInput(f"worker {worker.number}: the runner's summary cannot be rendered again ({error})") from None
        finally:
            bench.run_scenario = original  # type: ignore[attr-defined]
        rendered[raw_name(CONSOLE, worker.number, index.workers)] = printed.getvalue().encode("utf-8")
    return rendered
