"""repro's driver for Tholos-Bench's own runner inside its sealed container (stdlib and the runner).

It runs the runner's own `bench` command (`tholos.cli.main(["bench", ...])`) on the selected
scenario files, unchanged: their bytes are copied into `<out>/scenarios/`, the folder its
`--scenarios` names, and everything the runner computes, sends, decides and writes is its own (its clock, its
temperature 0 and max_tokens 512, its retry, its scoring, its results file). Four observers
change nothing of it:

- `requests.jsonl`: each chat request exactly as the runner sent it (the body's bytes, read back
  from the request httpx built) and the engine's answer, with the scenario id: `repro check`
  proves each request's messages extend the previous ones and the final message list;
- `db/<id>.sqlite` and `observed.jsonl`: just before the runner scores a scenario, a copy of its
  database (SQLite's online backup, which only reads the runner's connection) and the snapshot the
  runner took before the run: `repro check` re-executes the runner's own `evaluate` on them;
- `console.txt`: the runner's console output byte for byte (also echoed to the container log);
- `scenarios/<category>/<id>.json`: the selected files, byte for byte, the folder `--scenarios`
  names (so the record holds exactly what the runner read);
- one JSON progress line per finished scenario on stdout (repro's progress display).

The requests carry no `cache_prompt` (the runner sends none): the engine's default applies, as
in the published runs; `driver.json` records that, the command and the versions.

Usage: python driver.py --out DIR --scenarios DIR --ids ID,ID --base-url URL --model NAME
       [--json-mode schema|object|none]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
import time
import types
from pathlib import Path

MAX_TEXT = 2 * 1024 * 1024  # an engine answer longer than this is recorded cut (never happens at 512 tokens)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="driver")
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenarios", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json-mode", default="schema", choices=["schema", "object", "none"])
    return parser.parse_args(argv)


def select(scenarios: Path, ids: list[str], target: Path) -> None:
    """The chosen scenario files, byte for byte, in `<category>/<id>.json` under `target`."""
    for scenario_id in ids:
        found = sorted(p for p in scenarios.glob(f"*/{scenario_id}.json") if p.is_file() and not p.is_symlink())
        if len(found) != 1:
            raise SystemExit(f"driver: scenario {scenario_id}: {len(found)} files in {scenarios}")
        destination = target / found[0].parent.name / found[0].name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(found[0].read_bytes())


class Tee:
    """The runner's stdout: into console.txt byte for byte, and echoed to the container log."""

    def __init__(self, file, echo) -> None:
        self.file, self.echo = file, echo

    def write(self, text: str) -> int:
        self.file.write(text.encode("utf-8"))
        self.echo.write(text)
        return len(text)

    def flush(self) -> None:
        self.file.flush()
        self.echo.flush()


def observe(out: Path, total: int) -> None:
    """Install the observers (see the module's docstring)."""
    import httpx
    import tholos.bench.runner as bench_runner
    import tholos.model as model

    requests, observed = (out / "requests.jsonl").open("a", encoding="utf-8"), out / "observed.jsonl"
    (out / "db").mkdir(exist_ok=True)
    current = {"id": "", "n": 0}

    class RecordingClient(httpx.Client):
        def post(self, url, *args, **kwargs):  # type: ignore[no-untyped-def]
            current["n"] += 1
            line = {"id": current["id"], "n": current["n"]}
            try:
                response = super().post(url, *args, **kwargs)
            except Exception as error:
                requests.write(json.dumps(line | {"error": f"{type(error).__name__}: {error}"[:2000]}, ensure_ascii=True) + "\n")
                requests.flush()
                raise
            answer = response.content.decode("utf-8", errors="replace")
            line |= {"body": response.request.content.decode("utf-8"), "status": response.status_code, "answer": answer[:MAX_TEXT]}
            requests.write(json.dumps(line, ensure_ascii=True) + "\n")
            requests.flush()
            return response

    proxy = types.ModuleType("httpx")
    proxy.__dict__.update(httpx.__dict__)
    proxy.Client = RecordingClient  # type: ignore[attr-defined]
    model.httpx = proxy  # type: ignore[attr-defined]

    original_evaluate, original_run = bench_runner.evaluate, bench_runner.run_scenario

    def evaluate(db, run_id, expect, initial):  # type: ignore[no-untyped-def]
        target = sqlite3.connect(out / "db" / f"{current['id']}.sqlite")
        try:
            db.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
        snapshot = {key: sorted(value) if isinstance(value, set) else value for key, value in initial.items()}
        with observed.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"id": current["id"], "run_id": run_id, "initial": snapshot}, sort_keys=True, ensure_ascii=True) + "\n")
        return original_evaluate(db, run_id, expect, initial)

    done = [0]

    def run_scenario(scenario, profile, transport=None, pin_clock=False):  # type: ignore[no-untyped-def]
        current.update(id=str(scenario["id"]), n=0)
        started = time.monotonic()
        result = original_run(scenario, profile, transport, pin_clock)
        done[0] += 1
        event = {"event": "scenario", "index": done[0], "total": total, "id": result["id"], "passed": bool(result["passed"])}
        print(json.dumps(event | {"seconds": round(time.monotonic() - started, 3)}), file=sys.__stdout__, flush=True)
        return result

    bench_runner.evaluate, bench_runner.run_scenario = evaluate, run_scenario


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Path(args.out)
    ids = [i for i in args.ids.split(",") if i]
    select(Path(args.scenarios), ids, out / "scenarios")
    observe(out, len(ids))
    import tholos
    from tholos.cli import main as tholos_main

    command = ["bench", "--base-url", args.base_url, "--model", args.model, "--json-mode", args.json_mode]
    command += ["--scenarios", str(out / "scenarios"), "--out", str(out / "results.jsonl")]
    record = {"runner": tholos.__version__, "argv": command, "cache_prompt": None, "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version}
    (out / "driver.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    with (out / "console.txt").open("wb") as console, contextlib.redirect_stdout(Tee(console, sys.__stdout__)):  # type: ignore[type-var]
        tholos_main(command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
