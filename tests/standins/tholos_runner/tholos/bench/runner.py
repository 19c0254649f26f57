"""`bench`: scenario files run against an OpenAI-compatible server, one results line each (a
stand-in written by the repro project for its tests; not Tholos-Bench's runner).

- `bench(base_url, model, ...)` loads `<category>/<id>.json` files (sorted by path; `only` one
  category, `limit` the first N), runs each with `run_scenario` (found in this module when called,
  with the clock pinned), writes one JSON line per scenario to `out` as it goes, and prints one
  line per scenario and a summary by category. What it prints depends only on the results.
- `run_scenario(scenario, profile, transport=None, pin_clock=False)`: a fresh database and
  workspace, the snapshot before the run, the agent's run, then `evaluate` (found in this module
  when called) on the database; the result: id, category, passed, status, error,
  failed_assertions, steps, seconds, tokens {in, out}, invalid_json_count, messages.
- `evaluate(db, run_id, expect, initial)`: the assertions that do not hold (tholos.checks).

A scenario passes when no assertion fails. `invalid_json_count` counts the invalid replies: one
for each `retried` step, one more for each step both of whose replies were invalid.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tholos import checks, model, runner, workspace
from tholos import db as database


def load_scenarios(folder: str | Path, only: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    chosen = []
    for path in sorted(Path(folder).glob("*/*.json")):
        scenario = json.loads(path.read_text(encoding="utf-8"))
        if only is None or scenario.get("category") == only:
            chosen.append(scenario)
    return chosen[:limit] if limit is not None else chosen


def evaluate(
    db: sqlite3.Connection, run_id: int, expect: list[dict[str, Any]], initial: dict[str, Any]
) -> list[dict[str, Any]]:
    return checks.failed_assertions(db, run_id, expect, initial)


def run_scenario(
    scenario: dict[str, Any], profile: model.Profile, transport: Any = None, pin_clock: bool = False
) -> dict[str, Any]:
    started = time.monotonic()
    start = workspace.PINNED_START if pin_clock else datetime.now(UTC).replace(microsecond=0)
    db = database.connect()
    try:
        ws = workspace.Workspace(db, workspace.Clock(start), scenario)
        task_number = ws.seed()
        initial = workspace.snapshot(db)
        client = model.Client(profile, transport)
        try:
            run_id = runner.run_agent(ws, scenario, client, task_number)
        finally:
            client.close()
        db.commit()
        failed = evaluate(db, run_id, scenario["expect"], initial)
        run = workspace.get_run(db, run_id)
    finally:
        db.close()
    assert run is not None
    return {
        "id": scenario["id"],
        "category": scenario["category"],
        "passed": not failed,
        "status": run["status"],
        "error": run["error"],
        "failed_assertions": failed,
        "steps": run["step_count"],
        "seconds": round(time.monotonic() - started, 3),
        "tokens": {"in": run["tokens_in"], "out": run["tokens_out"]},
        "invalid_json_count": sum(
            (step["status"] == "retried") + step["result"].get("invalid_json_count", 0) for step in run["steps"]
        ),
        "messages": run["messages"],
    }


def line(result: dict[str, Any]) -> str:
    verdict = "PASS" if result["passed"] else "FAIL"
    tail = f" ({result['status']}: {result['error']})" if result["error"] else f" ({result['status']})"
    return f"{result['id']:<28} {verdict}  {result['steps']:>2} steps  {result['invalid_json_count']} invalid{tail}"


def summary(results: list[dict[str, Any]]) -> str:
    ran, passed = Counter(r["category"] for r in results), Counter(r["category"] for r in results if r["passed"])
    rows = [f"{'category':<20} passed"] + [f"{c:<20} {passed[c]}/{ran[c]}" for c in sorted(ran)]
    rows.append(f"{'total':<20} {sum(passed.values())}/{len(results)}")
    return "\n".join(rows)


def bench(
    base_url: str,
    model_name: str,
    json_mode: str = "schema",
    scenarios: str | Path = "scenarios",
    only: str | None = None,
    limit: int | None = None,
    out: str | Path | None = None,
) -> list[dict[str, Any]]:
    profile = model.Profile(base_url, model_name, json_mode)
    results = []
    handle = Path(out).open("w", encoding="utf-8") if out is not None else None
    try:
        for scenario in load_scenarios(scenarios, only, limit):
            result = run_scenario(scenario, profile, pin_clock=True)
            results.append(result)
            if handle is not None:
                handle.write(json.dumps(result, ensure_ascii=True) + "\n")
                handle.flush()
            print(line(result), flush=True)
    finally:
        if handle is not None:
            handle.close()
    print(summary(results), flush=True)
    return results
