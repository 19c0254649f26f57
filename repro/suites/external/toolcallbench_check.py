"""ToolCallBench's own checks and report, re-executed on the host from a cell's raw outputs.

The code is ToolCallBench's, from the wheel embedded in the bundle, imported only when its
sha256 is the one this adapter was written for (the wheel on PyPI). Per run:

- every call is validated again with its `validate_arguments`, and every call but `run_command`
  executed again with its `ToolExecutor` on a fresh copy of the wheel's fixture, in order: the
  results must be the recorded tool messages (up to the first `run_command`, which is never run
  on the host: its effects are the container's);
- the final state so replayed must be the state the driver observed, for runs without a
  `run_command` call (with one, the observed state is taken on the harness's word);
- its `evaluate` scores the recorded transcript (calls, answer, limits) on the observed state,
  with its check commands answered from their recorded exit codes (taken on the harness's
  word: they run the model's edited code, which `repro check` never runs on the host): every
  verdict, the failure type, the efficiency and the details must be the recorded ones.

Its report (Markdown and HTML) is rendered again from the recorded database with its
`render_markdown` and `markdown_to_html` and must be the recorded one byte for byte.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.suites.external.raw import RawIndex, raw_name, worker_files
from repro.suites.external.toolcallbench_raw import DATABASE, FIXTURE, REPORT_FILES, SESSION, Run, Worker
from repro.suites.external.wheels import import_harness

PACKAGE = "toolcallbench"
MODULES = ("checks", "models", "report", "runner", "store", "tasks", "tools")
DRIVER = PROJECT_ROOT / "images" / "toolcallbench" / "driver.py"
SHOWN = 3


def load(wheel_root: Path) -> dict[str, Any]:
    """ToolCallBench's modules from an unpacked, verified wheel (never another copy of it)."""
    return import_harness(
        wheel_root,
        PACKAGE,
        MODULES,
        "ToolCallBench's code cannot be loaded on this host ({error}); "
        "install its dependencies: pip install jsonschema pyyaml",
    )


def driver_module() -> ModuleType:
    """repro's driver (images/toolcallbench/driver.py): its `state_of` is the one the container ran."""
    spec = importlib.util.spec_from_file_location("repro_toolcallbench_driver", DRIVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tasks_folder(wheel_root: Path) -> Path:
    return wheel_root / PACKAGE / "data" / "tasks"


# ---------------------------------------------------------------- the checks


def recheck_workers(workers: list[Worker], wheel_root: Path) -> list[str]:
    tcb = load(wheel_root)
    tasks = {task.id: task for task in tcb["tasks"].load_tasks(tasks_folder(wheel_root))}
    fixture = tasks_folder(wheel_root).parent / FIXTURE
    state_of = driver_module().state_of
    problems: list[str] = []
    for worker in workers:
        scored = [run for run in worker.runs if run.status == "ok"]
        if len(scored) != len(worker.observed) or [r.task_id for r in scored] != [
            o.get("task") for o in worker.observed
        ]:
            problems.append("observed.jsonl does not hold one observation per scored run, in order")
            continue
        max_calls = int(worker.settings.get("max_calls", 12))
        for run, observed in zip(scored, worker.observed, strict=True):
            if run.task_id not in tasks:
                problems.append(f"{run.task_id}: not a task of the wheel")
                continue
            problems += [
                f"{run.task_id}: {p}"
                for p in recheck_run(tcb, tasks[run.task_id], run, observed, fixture, max_calls, state_of)
            ]
    return problems[:SHOWN] + ([f"{len(problems) - SHOWN} more"] if len(problems) > SHOWN else [])


def recheck_run(
    tcb: dict[str, Any], task: Any, run: Run, observed: dict[str, Any], fixture: Path, max_calls: int, state_of: Any
) -> list[str]:
    state = observed.get("state") or {}
    if "too_large" in state:
        return ["its final state was too large to record: the outcome checks cannot be re-executed"]
    with tempfile.TemporaryDirectory(prefix="repro-tcb-") as work:
        replay = copy_fixture(fixture, Path(work) / "replay")
        problems, commanded = replay_calls(tcb, run, replay)
        if not commanded and state_of(replay, fixture) != state:
            problems.append("the calls, executed again, do not leave the observed final state")
        final = copy_fixture(fixture, Path(work) / "final")
        apply_state(final, state)
        with recorded_commands(tcb, observed.get("commands") or []) as leftover:
            check = tcb["checks"].evaluate(task, transcript_of(tcb, run), final, fixture, default_max_calls=max_calls)
        if leftover:
            problems.append(f"{len(leftover)} recorded check command(s) were never asked for")
    recomputed = {
        "passed": check.passed,
        "parse_ok": check.parse_ok,
        "tool_ok": check.tool_ok,
        "args_ok": check.args_ok,
        "outcome_ok": check.outcome_ok,
    }
    recomputed |= {"failure_type": check.failure_type, "efficiency": check.efficiency, "details": check.details}
    recorded = {name: getattr(run, name) for name in recomputed}
    problems += [
        f"{name} re-executes as {recomputed[name]!r}, recorded {recorded[name]!r}"
        for name in recomputed
        if recomputed[name] != recorded[name]
    ]
    return problems


def copy_fixture(fixture: Path, target: Path) -> Path:
    shutil.copytree(fixture, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))
    return target


def replay_calls(tcb: dict[str, Any], run: Run, root: Path) -> tuple[list[str], bool]:
    """Each call validated and executed again in order, up to the first run_command: the results
    must be the recorded ones. Returns the problems and whether a run_command came."""
    executor = tcb["tools"].ToolExecutor(root)
    for call in run.calls:
        arguments, kind, message = tcb["tools"].validate_arguments(call.tool, call.arguments)
        if not kind and call.tool == "run_command":
            return [], True
        ok, result = (False, f"error: {message}") if kind else executor.execute(call.tool, arguments)
        if (bool(kind), kind or ("" if ok else "tool_error"), result) != (not call.valid, call.error_kind, call.result):
            return [f"call {call.index} ({call.tool}) executes again to another result than the recorded one"], False
    return [], False


def apply_state(root: Path, state: dict[str, Any]) -> None:
    """The observed final state on a fixture copy: changed files written, removed ones removed."""
    for relative, text in (state.get("changed") or {}).items():
        target = (root / relative).resolve()
        if not target.is_relative_to(root.resolve()):
            raise BadInput(f"observed state names {relative!r}, outside the repository")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text if isinstance(text, str) else "", encoding="utf-8")
    for relative in state.get("removed") or []:
        target = (root / relative).resolve()
        if target.is_relative_to(root.resolve()) and target.is_file():
            target.unlink()


@contextmanager
def recorded_commands(tcb: dict[str, Any], commands: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """ToolCallBench's check commands answered from their recorded results, never run here; the
    list left over at the end holds those it did not ask for."""
    pending = list(commands)
    original = tcb["checks"].run_trusted

    def answer(argv: list[str], cwd: Path, timeout: float = 30.0) -> subprocess.CompletedProcess:
        if not pending or pending[0].get("argv") != list(argv):
            raise BadInput(f"check command {argv} was not recorded")
        recorded = pending.pop(0)
        if recorded.get("timed_out"):
            raise subprocess.TimeoutExpired(argv, timeout)
        return subprocess.CompletedProcess(
            argv, int(recorded["returncode"]), str(recorded.get("stdout", "")), str(recorded.get("stderr", ""))
        )

    tcb["checks"].run_trusted = answer
    try:
        yield pending
    finally:
        tcb["checks"].run_trusted = original


def transcript_of(tcb: dict[str, Any], run: Run) -> Any:
    """ToolCallBench's Transcript of a run, from its recorded messages and calls: how the
    conversation ended (an answer, or a limit) follows from its last message."""
    models, runner = tcb["models"], tcb["runner"]
    last = run.messages[-1] if run.messages else {}
    answered = last.get("role") == "assistant" and not last.get("tool_calls")
    calls = [
        models.CallRecord(c.index, c.turn, c.tool, c.arguments, c.valid, c.ok, c.error_kind, c.result or "")
        for c in run.calls
    ]
    return models.Transcript(
        messages=run.messages,
        calls=calls,
        final_text=run.final_text,
        turns=run.turns,
        hit_limit=not answered,
        text_tool_call=answered and bool(runner.TEXT_CALL_RE.search(str(last.get("content") or ""))),
    )


# ---------------------------------------------------------------- the report


def render_reports(raw: dict[str, bytes], index: RawIndex, wheel_root: Path) -> dict[str, bytes]:
    """Each worker's report rendered again from its database: name in the cell -> bytes."""
    tcb = load(wheel_root)
    titles = {task.id: (task.group, task.title) for task in tcb["tasks"].load_tasks(tasks_folder(wheel_root))}
    rendered = {}
    for number, files in sorted(worker_files(raw, index).items()):
        with tempfile.TemporaryDirectory(prefix="repro-tcb-") as work:
            path = Path(work) / "results.sqlite"
            path.write_bytes(files[DATABASE])
            store = tcb["store"].Store(path)
            try:
                chosen = {t: titles[t] for t in store.session(SESSION)["settings"].get("tasks", []) if t in titles}
                markdown = tcb["report"].render_markdown(store, SESSION, chosen)
            finally:
                store.close()
        page = tcb["report"].markdown_to_html(markdown, f"ToolCallBench {SESSION}")
        for path_in_out, text in zip(REPORT_FILES, (markdown, page), strict=True):
            rendered[raw_name(path_in_out, number, index.workers)] = text.encode("utf-8")
    return rendered
