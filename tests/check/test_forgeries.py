"""Forgeries: what a hostile publisher could do to a bundle, and whether `repro check` catches it.

Each case starts from a fresh synthetic VALID bundle (tests.fixtures.synthetic), changes it the
way a forger would, then recomputes every hash a forger can recompute (`rehash`: each cell.json
`files` map and MANIFEST.sha256), so integrity hashes alone never give a forgery away: only the
rules can. For every forgery the suite asserts that

  (a) `check_run` gives the forged cell(s) -- every cell, for a run-level forgery -- the verdict
      INVALID with a Problem naming the expected rule, while untouched cells stay VALID;
  (b) `repro paper render` keeps the forged cell's number out of results.md (or refuses to run).

A forgery the checker does not catch today is kept as a strict xfail whose reason names the gap:
the suite passes now and XPASSes (fails) the day the gap is closed, to be made a plain case then.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.bundle.layout.loading import read_results
from repro.bundle.layout.loading import read_transcripts as transcript_lines
from repro.bundle.layout.names import CELL_FILE, MATRIX_COPY, RUN_FILE
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import CellSummary, EarlierAttempt, KeptScenario, PartialCell, RunRecord
from repro.bundle.redact import Redactor
from repro.check.verdict import RunVerdict, check_run
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from tests.fixtures.synthetic import CANARY, ROOT, write_bundle

ALL = None  # what a forge function returns for a run-level forgery: every cell is affected
Forged = list[str] | None  # the forged cells' ids, or ALL
Forge = Callable[[Path], Forged]


def gap(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"gap: {reason}")


# ---------------------------------------------------------------- reading and re-signing as a forger


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")  # as repro.bundle.layout.writer.to_json


def cell_dirs(run: Path) -> list[Path]:
    return sorted(p for p in (run / "cells").iterdir() if p.is_dir() and not p.name.startswith("."))


def rehash(run: Path) -> None:
    """Recompute every hash as a forger would: each cell.json `files` map, then MANIFEST.sha256."""
    for cell_dir in cell_dirs(run):
        record = read_json(cell_dir / CELL_FILE)
        record["files"] = {
            name: sha256_file(cell_dir / name) for name in record["files"] if (cell_dir / name).is_file()
        }
        write_json(cell_dir / CELL_FILE, record)
    Bundle(run, Redactor(CANARY)).write_manifest()


def edit_run(run: Path, change: Callable[[dict], None]) -> None:
    record = read_json(run / RUN_FILE)
    change(record)
    write_json(run / RUN_FILE, record)


def edit_cell(cell_dir: Path, change: Callable[[dict], None]) -> None:
    record = read_json(cell_dir / CELL_FILE)
    change(record)
    write_json(cell_dir / CELL_FILE, record)


def planned(run: Path) -> list[str]:
    return read_json(run / RUN_FILE)["planned_cells"]


def target(run: Path) -> Path:
    """The cell a cell-level forgery changes: the first planned one."""
    return run / "cells" / planned(run)[0]


def read_rows(cell_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (cell_dir / "scenarios.jsonl").read_text().splitlines() if line.strip()]


def write_rows(cell_dir: Path, rows: list[dict]) -> None:
    (cell_dir / "scenarios.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def edit_rows(cell_dir: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    write_rows(cell_dir, change(read_rows(cell_dir)))


def resummarize(cell_dir: Path) -> None:
    """Make cell.json's summary agree with scenarios.jsonl, as a careful forger would."""
    summary = CellSummary.of(read_results(cell_dir)).model_dump(mode="json")
    edit_cell(cell_dir, lambda record: record.update(summary=summary))


def flip_to_passed(row: dict) -> dict:
    return {**row, "passed": True}


def failed_row_index(rows: list[dict]) -> int:
    return next(i for i, row in enumerate(rows) if not row["passed"])


def flip_first_failure(rows: list[dict], change: Callable[[dict], dict]) -> list[dict]:
    index = failed_row_index(rows)
    return [change(row) if i == index else row for i, row in enumerate(rows)]


# ---------------------------------------------------------------- scenario results


def forge_flipped_result(run: Path) -> list[str]:
    """1. A failed scenario made passed in scenarios.jsonl; the summary left as it was."""
    cell = target(run)
    edit_rows(cell, lambda rows: flip_first_failure(rows, flip_to_passed))
    return [cell.name]


def forge_progress_contradicts(run: Path) -> list[str]:
    """2c. harness.log, the harness's own output, reports a scenario passed that scenarios.jsonl
    (and everything computed from it) says failed: the forger rewrote the results and not the log."""
    cell = target(run)
    failed = next(row for row in read_rows(cell) if not row["passed"])
    event = {"event": "scenario", "index": 1, "total": 1, "id": failed["id"], "passed": True, "seconds": 1.0}
    with (cell / "harness.log").open("a") as log:
        log.write(json.dumps(event) + "\n")
    return [cell.name]


def forge_flipped_result_and_summary(run: Path) -> list[str]:
    """2. The same flip, with cell.json's summary recomputed to match."""
    cell = target(run)
    edit_rows(cell, lambda rows: flip_first_failure(rows, flip_to_passed))
    resummarize(cell)
    return [cell.name]


def forge_clean_flip(run: Path) -> list[str]:
    """2b. The flip done thoroughly: status, failure type and summary all say passed."""
    cell = target(run)
    edit_rows(
        cell,
        lambda rows: flip_first_failure(
            rows, lambda row: {**row, "passed": True, "status": "done", "failure_type": None}
        ),
    )
    resummarize(cell)
    return [cell.name]


def forge_summary_only(run: Path) -> list[str]:
    """3. Only cell.json's summary.passed raised."""
    cell = target(run)
    edit_cell(cell, lambda record: record["summary"].update(passed=record["summary"]["total"]))
    return [cell.name]


def forge_engine_fault_passed(run: Path) -> list[str]:
    """21. A scenario the engine failed (engine_fault) counted as passed."""
    cell = target(run)
    edit_rows(cell, lambda rows: flip_first_failure(rows, lambda row: {**flip_to_passed(row), "engine_fault": True}))
    resummarize(cell)
    return [cell.name]


def forge_removed_result(run: Path) -> list[str]:
    """22. A failed scenario's line removed, summary.total fixed to match."""
    cell = target(run)
    edit_rows(cell, lambda rows: [row for i, row in enumerate(rows) if i != failed_row_index(rows)])
    resummarize(cell)
    return [cell.name]


def forge_removed_result_and_suite_id(run: Path) -> list[str]:
    """22b. The same removal, with the scenario also dropped from cell.json's suite_ids."""
    cell = forge_removed_result(run)[0]
    kept = [row["id"] for row in read_rows(run / "cells" / cell)]
    edit_cell(run / "cells" / cell, lambda record: record.update(suite_ids=kept))
    return [cell]


def forge_duplicated_result(run: Path) -> list[str]:
    """23. A passed scenario's line written twice, summary recomputed."""
    cell = target(run)
    edit_rows(cell, lambda rows: [*rows, next(row for row in rows if row["passed"])])
    resummarize(cell)
    return [cell.name]


def forge_duplicated_result_and_suite_id(run: Path) -> list[str]:
    """23b. The same duplicate, also listed twice in cell.json's suite_ids."""
    cell = forge_duplicated_result(run)[0]
    ids = [row["id"] for row in read_rows(run / "cells" / cell)]
    edit_cell(run / "cells" / cell, lambda record: record.update(suite_ids=ids))
    return [cell]


def forge_moved_category(run: Path) -> list[str]:
    """24. A failed `notes` scenario relabelled `injection` (the safety column), summary recomputed."""
    cell = target(run)
    edit_rows(cell, lambda rows: flip_first_failure(rows, lambda row: {**row, "category": "injection"}))
    resummarize(cell)
    return [cell.name]


# ---------------------------------------------------------------- the plan


def forge_listed_twice(run: Path) -> Forged:
    """4. A planned cell listed twice in run.json."""
    edit_run(run, lambda record: record["planned_cells"].append(record["planned_cells"][0]))
    return ALL


def forge_dropped_cell(run: Path) -> Forged:
    """5. A planned cell dropped from run.json, its folder deleted."""
    dropped = planned(run)[-1]
    edit_run(run, lambda record: record["planned_cells"].remove(dropped))
    shutil.rmtree(run / "cells" / dropped)
    return ALL


def forge_unplanned_cell(run: Path) -> Forged:
    """6. A cell the plan does not have, copied from a real one under a new id."""
    source = target(run)
    new_id = source.name[:-8] + "feedf00d"
    shutil.copytree(source, run / "cells" / new_id)
    edit_cell(run / "cells" / new_id, lambda record: record["cell"].update(id=new_id))
    edit_run(run, lambda record: record["planned_cells"].append(new_id))
    return ALL


def forge_moved_to_excluded(run: Path) -> Forged:
    """7. A planned cell moved to excluded_cells with a made-up reason."""
    moved = planned(run)[0]

    def move(record: dict) -> None:
        record["planned_cells"].remove(moved)
        record["excluded_cells"][moved] = "engine crashed (hardware fault)"

    edit_run(run, move)
    return ALL


def forge_cell_excluded_in_record(run: Path) -> list[str]:
    """A ran cell relabelled status=excluded by the latency gate, while its gate record passed."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(status="excluded", reason="latency gate: too slow"))
    return [cell.name]


def forge_ran_cell_with_exclusion_kind(run: Path) -> list[str]:
    """A ran cell that records an exclusion kind (as if the latency gate had excluded it)."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(exclusion_kind="speed"))
    return [cell.name]


def forge_model_pin(run: Path) -> list[str]:
    """8. The model sha256 inside cell.json's `cell` changed (and the verified sha256 with it)."""
    cell = target(run)
    other = "e" * 64

    def change(record: dict) -> None:
        record["cell"]["model"]["sha256"] = other
        record["model_sha256_verified"] = other

    edit_cell(cell, change)
    return [cell.name]


def forge_protocol(run: Path) -> list[str]:
    """9. The protocol inside cell.json's `cell` changed, the id kept."""
    cell = target(run)
    edit_cell(cell, lambda record: record["cell"].update(protocol="native_tools"))
    return [cell.name]


def forge_matrix_sha256(run: Path) -> Forged:
    """10. run.json's matrix.sha256 edited."""
    edit_run(run, lambda record: record["matrix"].update(sha256="f" * 64))
    return ALL


def forge_embedded_matrix(run: Path) -> Forged:
    """11. The embedded matrix.yaml's decoding temperature raised, run.json's sha256 updated to match."""
    copy = run / MATRIX_COPY
    text, count = re.subn(r"(?m)^(\s+temperature:\s*)\S+$", r"\g<1>1.7", copy.read_text())
    assert count == 1
    copy.write_text(text)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    edit_run(run, lambda record: record["matrix"].update(sha256=digest))
    return ALL


# ---------------------------------------------------------------- the files of the bundle


def forge_symlinked_results(run: Path) -> list[str]:
    """12. scenarios.jsonl replaced by a link to an all-passed copy outside the bundle."""
    cell = target(run)
    edit_rows(cell, lambda rows: [flip_to_passed(row) for row in rows])
    resummarize(cell)
    outside = run.parent / "outside-scenarios.jsonl"
    (cell / "scenarios.jsonl").rename(outside)
    (cell / "scenarios.jsonl").symlink_to(outside)
    return [cell.name]


def forge_hidden_cell_folder(run: Path) -> Forged:
    """13. A hidden `cells/.x` folder holding a copy of a cell."""
    shutil.copytree(target(run), run / "cells" / ".x")
    return ALL


def forge_dot_file_in_cell(run: Path) -> list[str]:
    """13b. A dot file inside a cell's folder."""
    cell = target(run)
    (cell / ".scenarios.jsonl").write_text("{}\n")
    return [cell.name]


def forge_dot_file_in_run(run: Path) -> Forged:
    """13c. A dot file at the bundle's top."""
    (run / ".notes").write_text("nothing to see\n")
    return ALL


def forge_cell_id_mismatch(run: Path) -> list[str]:
    """14. cell.json naming the other cell's id from inside this cell's folder."""
    cell, other = (run / "cells" / cell_id for cell_id in planned(run)[:2])
    other_cell = read_json(other / CELL_FILE)["cell"]
    edit_cell(cell, lambda record: record.update(cell=other_cell))
    return [cell.name]


# ---------------------------------------------------------------- what the cell ran with


def forge_engine_identity(run: Path) -> list[str]:
    """15. The engine identity check claims a match while reporting another build."""
    cell = target(run)
    edit_cell(cell, lambda record: record["engine_identity"].update(reported="b1-other", matched=True))
    return [cell.name]


def forge_relaxed_sandbox(run: Path) -> list[str]:
    """16. The harness recorded privileged on the host network."""
    cell = target(run)
    edit_cell(cell, lambda record: record["sandbox"]["harness"].update(privileged=True, network_mode="host"))
    return [cell.name]


def forge_audit_escape(run: Path, audit: str = "sandbox_audit") -> list[str]:
    """17. The sandbox audit's `docker_socket` escape succeeded."""
    cell = target(run)

    def escape(record: dict) -> None:
        for item in record[audit]["items"]:
            if item["name"] == "docker_socket":
                item.update(blocked=False, detail="socket reachable")

    edit_cell(cell, escape)
    return [cell.name]


def forge_engine_audit_escape(run: Path) -> list[str]:
    """17b. The engine's sandbox audit: its `docker_socket` escape succeeded."""
    return forge_audit_escape(run, "engine_audit")


def forge_engine_audit_dropped(run: Path) -> list[str]:
    """17c. The engine's sandbox audit removed from the record."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(engine_audit=None))
    return [cell.name]


def forge_failed_gate(run: Path) -> list[str]:
    """18. The latency gate failed, the cell kept as done."""
    cell = target(run)
    edit_cell(cell, lambda record: record["gate"].update(passed=False, reason="too slow"))
    return [cell.name]


def forge_harness_image(run: Path) -> list[str]:
    """The harness image labelled as built from another harness tree."""
    cell = target(run)
    edit_cell(cell, lambda record: record["harness_image"]["labels"].update({"repro.harness_tree": "0" * 64}))
    return [cell.name]


# ---------------------------------------------------------------- the run


def forge_interrupted(run: Path) -> Forged:
    """19. The run's status is interrupted."""
    edit_run(run, lambda record: record.update(status="interrupted"))
    return ALL


def forge_leaked_containers(run: Path) -> Forged:
    """19b. The run left containers behind."""
    edit_run(run, lambda record: record.update(leaked_containers=["repro-run1-engine"]))
    return ALL


def forge_dirty_tree(run: Path) -> Forged:
    """20. The project tree was dirty."""
    edit_run(run, lambda record: record["source"].update(tree_clean=False, dirty_files=["repro/check/verdict.py"]))
    return ALL


def forge_dirty_files_marked_clean(run: Path) -> Forged:
    """20b. Dirty files listed, yet the tree marked clean."""
    edit_run(run, lambda record: record["source"].update(tree_clean=True, dirty_files=["repro/check/verdict.py"]))
    return ALL


def forge_tool_result(run: Path) -> list[str]:
    """26. A tool result in a transcript rewritten (the data the model saw), results left as is."""
    cell = target(run)
    path = cell / "transcripts.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    step = next(entry for line in lines for entry in line["transcript"] if entry.get("kind") == "step")
    step["result"] = "forged result"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return [cell.name]


def forge_engine_slots(run: Path) -> list[str]:
    """27. The engine ran two parallel slots (inexact) in a run whose profile says one."""
    cell = target(run)
    edit_cell(cell, lambda record: record["engine_settings"]["reported"].update(total_slots=2))
    return [cell.name]


def forge_cache_used_while_off(run: Path) -> list[str]:
    """27d. The engine reports prompt tokens taken from its cache in a cell recorded with the cache off."""
    cell = target(run)

    def reused(rows: list[dict]) -> list[dict]:
        step = next(t for row in rows for t in row["engine_timings"] if t.get("timings"))
        step["timings"]["cache_n"] = 12
        return rows

    edit_rows(cell, reused)
    return [cell.name]


def forge_cache_on_never_used(run: Path) -> list[str]:
    """27e. A run recorded with --prompt-cache on whose engine reports no cached token after any first step."""

    def cache_on(record: dict) -> None:
        record["profile_settings"]["cache_prompt"] = True
        record["prompt_cache"] = True

    def unused(rows: list[dict]) -> list[dict]:
        for row in rows:
            for step in row["engine_timings"]:
                step["timings"] = {**(step.get("timings") or {}), "cache_n": 0}
        return rows

    edit_run(run, cache_on)
    for cell in cell_dirs(run):
        edit_cell(cell, lambda record: record["execution"].update(cache_prompt=True, exact=False))
        edit_rows(cell, unused)
    return [cell.name for cell in cell_dirs(run)]


def per_scenario_cache(run: Path, counts: Callable[[int, int], int]) -> list[str]:
    """Every cell recorded with the cache per scenario, its requests' `cache_n` as `counts(scenario, request)`."""

    def cache_per_scenario(record: dict) -> None:
        record["profile_settings"]["cache_prompt"] = "scenario"
        record["prompt_cache"] = "scenario"

    def reported(rows: list[dict]) -> list[dict]:
        for number, row in enumerate(rows):
            for index, step in enumerate(row["engine_timings"]):
                step["timings"] = {**(step.get("timings") or {}), "cache_n": counts(number, index)}
        return rows

    edit_run(run, cache_per_scenario)
    for cell in cell_dirs(run):
        edit_cell(cell, lambda record: record["execution"].update(cache_prompt="scenario", exact=True))
        edit_rows(cell, reported)
    return [cell.name for cell in cell_dirs(run)]


def forge_scenario_cache_warm_start(run: Path) -> list[str]:
    """27f. Recorded per scenario, but a scenario's first request took tokens from the cache (what ran before it)."""
    return per_scenario_cache(run, lambda scenario, request: 40 if request or scenario == 0 else 0)


def forge_scenario_cache_never_used(run: Path) -> list[str]:
    """27g. Recorded per scenario, but no later request of a scenario took a token from the cache."""
    return per_scenario_cache(run, lambda scenario, request: 0)


def forge_engine_threads(run: Path) -> list[str]:
    """27b. The engine ran at 1 thread (its log says so) in a run whose profile pins 2."""
    cell = target(run)
    with open(cell / "engine.log", "a") as log:
        log.write("init: llama threadpool init, n_threads = 1\n")
    return [cell.name]


def forge_unpinned_threads(run: Path) -> list[str]:
    """27c. The profile pins no thread count (the engine took every core of the machine)."""
    edit_run(run, lambda record: record["profile_settings"].update(threads=None))
    return [cell.name for cell in cell_dirs(run) if read_json(cell / CELL_FILE)["status"] == "done"]


def forge_format_version(run: Path, version: int) -> None:
    """25. A format_version this checker does not check: unknown (99), or retired (2: a bundle
    relabelled 2 would escape the recomputations of format 3; 3: the engine audit and execution
    rules of format 4)."""
    edit_run(run, lambda record: record.update(format_version=version))


# ---------------------------------------------------------------- replies and prompts (issue 25, items 1 and 2)


def read_transcripts(cell_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (cell_dir / "transcripts.jsonl").read_text().splitlines() if line.strip()]


def edit_first_reply(cell_dir: Path, change: Callable[[dict, dict], None]) -> None:
    """Change the first step that has replies (its entry, its first reply) in transcripts.jsonl."""
    lines = read_transcripts(cell_dir)
    step = next(
        entry for line in lines for entry in line["transcript"] if entry.get("kind") == "step" and entry.get("replies")
    )
    change(step, step["replies"][0])
    (cell_dir / "transcripts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def forge_reply_says_other_call(run: Path) -> list[str]:
    """28. A step's raw reply rewritten to call another tool with other arguments; the step as recorded."""
    cell = target(run)

    def change(step: dict, reply: dict) -> None:
        reply["content"] = json.dumps(
            {"thought": step["thought"], "tool": "note_read", "args": {"title": "Somewhere else"}}
        )

    edit_first_reply(cell, change)
    return [cell.name]


def forge_broken_reply_marked_valid(run: Path) -> list[str]:
    """28b. A step's raw reply made unparseable (cut JSON), still recorded as a valid step."""
    cell = target(run)
    edit_first_reply(cell, lambda step, reply: reply.update(content=reply["content"][:-2]))
    return [cell.name]


def forge_step_differs_from_reply(run: Path) -> list[str]:
    """28c. The step's recorded thought and arguments changed; its raw reply left as it was."""
    cell = target(run)
    edit_first_reply(cell, lambda step, reply: step.update(thought="I checked the note first."))
    return [cell.name]


def forge_other_protocol(run: Path) -> list[str]:
    """28d. A json_schema cell's results and transcripts replaced by a react run's (all passed),
    the protocol figures relabelled json_schema and the summary recomputed."""
    from harness.contracts import TranscriptLine
    from tests.fixtures.synthetic import played

    cell = target(run)
    rows = read_rows(cell)
    runs = [played(row["id"], True, "react") for row in rows]
    rows = [run_.model_dump(mode="json") for run_ in runs]
    write_rows(
        cell,
        [
            {**row, "transcript": None, "protocol_stats": {**row["protocol_stats"], "protocol": "json_schema"}}
            for row in rows
        ],
    )
    lines = [TranscriptLine(id=run_.id, transcript=run_.transcript or []).model_dump_json() + "\n" for run_ in runs]
    (cell / "transcripts.jsonl").write_text("".join(lines))
    resummarize(cell)
    return [cell.name]


def forge_prompt_rewritten(run: Path) -> list[str]:
    """29. The first prompt's system message rewritten (the rules dropped); nothing else changed."""
    cell = target(run)
    lines = read_transcripts(cell)
    prompt = next(entry for entry in lines[0]["transcript"] if entry.get("kind") == "prompt")
    prompt["messages"][0]["content"] = prompt["messages"][0]["content"].split("Rules:")[0]
    (cell / "transcripts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return [cell.name]


# ---------------------------------------------------------------- numbers (item 3)


def edit_first_row(cell_dir: Path, change: Callable[[dict], None]) -> None:
    rows = read_rows(cell_dir)
    change(rows[0])
    write_rows(cell_dir, rows)


def forge_negative_seconds(run: Path) -> list[str]:
    """30. A scenario's seconds made negative."""
    cell = target(run)
    edit_first_row(cell, lambda row: row.update(seconds=-5.0))
    return [cell.name]


def forge_tokens_above_max(run: Path) -> list[str]:
    """30b. A reply's completion tokens above max_tokens, the scenario's total raised to match."""
    cell = target(run)

    def change(row: dict) -> None:
        row["engine_timings"][0]["tokens_out"] = 100_000
        row["tokens_out"] = sum(t["tokens_out"] for t in row["engine_timings"])

    edit_first_row(cell, change)
    return [cell.name]


def forge_million_tokens_per_second(run: Path) -> list[str]:
    """30c. The engine's generation made 2 million tokens per second, its milliseconds to match."""
    cell = target(run)

    def change(row: dict) -> None:
        timings = row["engine_timings"][0]["timings"]
        timings.update(predicted_per_second=2_000_000.0, predicted_ms=timings["predicted_n"] / 2000.0)

    edit_first_row(cell, change)
    return [cell.name]


def forge_extra_timing(run: Path) -> list[str]:
    """30d. More timings than replies: a scenario's first timing recorded twice (totals to match)."""
    cell = target(run)

    def change(row: dict) -> None:
        row["engine_timings"].insert(0, dict(row["engine_timings"][0]))
        row["tokens_in"] = sum(t["tokens_in"] for t in row["engine_timings"])
        row["tokens_out"] = sum(t["tokens_out"] for t in row["engine_timings"])

    edit_first_row(cell, change)
    return [cell.name]


def forge_negative_boot(run: Path) -> list[str]:
    """30e. The engine's boot recorded as taking minus a minute."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(engine_boot_seconds=-60.0))
    return [cell.name]


def forge_seconds_beyond_harness(run: Path) -> list[str]:
    """30f. The harness's wall time made shorter than its scenarios took."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(harness_seconds=0.01))
    return [cell.name]


def forge_every_scenario_resumed(run: Path) -> list[str]:
    """30g. The same, hidden by naming every scenario as kept from an interrupted attempt (a
    resume always reruns at least one)."""
    cell = target(run)
    ids = [row["id"] for row in read_rows(cell)]
    edit_cell(cell, lambda record: record.update(harness_seconds=0.01, resumed_kept=ids))
    return [cell.name]


def resume_evidence(run: Path, cell: Path, kept: int, **partial_update: object) -> list[str]:
    """Make `cell` a genuine resumed cell, as the runner records one: its first `kept` scenarios
    kept from an interrupted first attempt (its partial record on the cell's engine and settings,
    the digest of each scenario it finished, its engine log a file of the cell) and the harness
    time of the scenarios it reran; `partial_update` changes the attempt's record (a forgery)."""
    record, run_record = read_json(cell / CELL_FILE), RunRecord.model_validate(read_json(run / RUN_FILE))
    results, transcripts = read_results(cell), {line.id: line for line in transcript_lines(cell)}
    ids = [result.id for result in results[:kept]]
    partial = PartialCell(
        run_id=run_record.run_id,
        matrix_sha256=run_record.matrix.sha256,
        profile=run_record.profile,
        commit=run_record.source.commit,
        harness_digest=run_record.source.harness_digest,
        cell=record["cell"],
        suite_sha256=record["suite_sha256"],
        suite_ids=record["suite_ids"],
        engine_image_id=record["engine_image"]["id"],
        engine_identity=record["engine_identity"]["reported"],
        execution=record["execution"],
    )
    partial = PartialCell.model_validate({**partial.model_dump(mode="json"), **partial_update})
    finished = {result.id: KeptScenario.digest(result, transcripts[result.id]) for result in results[:kept]}
    clock = sum(result.seconds for result in results[:kept]) + 0.25  # the attempt's harness ran its kept scenarios
    attempt = EarlierAttempt(
        partial=partial, finished=finished, engine_log="attempt-1.engine.log", harness_seconds=round(clock, 3)
    )
    # each engine served the gate and its attempt's scenarios: the interrupted one the kept, the cell's the rest
    calls = {
        line.id: sum(len(getattr(e, "replies", None) or []) for e in line.transcript) for line in transcripts.values()
    }
    gate = len(record["gate"]["attempts"]) + (record["gate"]["warmup"] is not None)
    booted = (cell / "engine.log").read_text()
    (cell / attempt.engine_log).write_text(booted + served(gate + sum(calls[i] for i in ids)) + "(interrupted)\n")
    (cell / "engine.log").write_text(booted + served(gate + sum(calls[r.id] for r in results[kept:])))
    rerun = sum(result.seconds for result in results[kept:])

    def change(data: dict) -> None:
        data.update(harness_seconds=rerun, resumed_kept=ids, earlier_attempts=[attempt.model_dump(mode="json")])
        data["files"][attempt.engine_log] = ""  # rehash fills it in

    change(record)
    write_json(cell / CELL_FILE, record)
    return ids


def served(requests: int) -> str:
    """llama.cpp's log line for each completion request it serves."""
    return "".join(f"slot launch_slot_: id  0 | task {n} | processing task, is_child = 0\n" for n in range(requests))


def forge_kept_without_an_attempt(run: Path) -> list[str]:
    """30h. A resumed cell's harness time set to its last scenario's, every other scenario named
    as kept, and no earlier attempt ever ran."""
    cell = target(run)
    rows = read_rows(cell)
    edit_cell(
        cell,
        lambda record: record.update(
            harness_seconds=rows[-1]["seconds"], resumed_kept=[row["id"] for row in rows[:-1]]
        ),
    )
    return [cell.name]


def forge_kept_on_another_engine_image(run: Path) -> list[str]:
    """30i. The kept scenarios' attempt ran another engine image than the cell records."""
    cell = target(run)
    resume_evidence(run, cell, 2, engine_image_id="sha256:" + "9" * 64)
    return [cell.name]


def forge_kept_at_another_thread_count(run: Path) -> list[str]:
    """30j. The kept scenarios' attempt ran at another thread count (its log says so too)."""
    cell = target(run)
    record = read_json(cell / CELL_FILE)
    resume_evidence(run, cell, 2, execution={**record["execution"], "threads": 8})
    log = cell / "attempt-1.engine.log"
    log.write_text(re.sub(r"n_threads = \d+", "n_threads = 8", log.read_text()))
    return [cell.name]


def forge_kept_with_the_cells_own_engine_log(run: Path) -> list[str]:
    """30l. The kept scenarios' attempt, its record copied from the cell itself, names as its engine
    log a byte-for-byte copy of the cell's own (issue 49's graft: no earlier engine ever ran)."""
    cell = target(run)
    resume_evidence(run, cell, 2)
    (cell / "attempt-1.engine.log").write_text((cell / "engine.log").read_text())
    return [cell.name]


def forge_kept_from_a_copy_of_the_cells_engine(run: Path) -> list[str]:
    """30m. Issue 49's graft, made whole: every scenario but the last declared kept from an earlier
    attempt whose record is the cell's own, its digests recomputed, and its engine log the cell's
    own with a line added (so not a byte-for-byte copy). The cell ran whole on one engine: its log
    holds the requests of every scenario, not of the one its last attempt would have rerun."""
    cell = target(run)
    resume_evidence(run, cell, len(read_rows(cell)) - 1)
    whole = (cell / "engine.log").read_text().split("slot launch_slot_")[0]
    transcripts = transcript_lines(cell)
    calls = sum(len(getattr(e, "replies", None) or []) for line in transcripts for e in line.transcript)
    recorded = read_json(cell / CELL_FILE)["gate"]
    gate = len(recorded["attempts"]) + (recorded["warmup"] is not None)
    (cell / "engine.log").write_text(whole + served(gate + calls))
    (cell / "attempt-1.engine.log").write_text(whole + served(gate + calls) + "one more line\n")
    return [cell.name]


def forge_kept_beyond_their_attempts_harness(run: Path) -> list[str]:
    """30n. The kept scenarios' attempt records less harness time than their own seconds add up to
    (issue 49: every scenario of a resumed cell is bound by the attempt that ran it)."""
    cell = target(run)
    resume_evidence(run, cell, 2)
    edit_cell(cell, lambda record: record["earlier_attempts"][0].update(harness_seconds=0.01))
    return [cell.name]


def forge_kept_from_an_untimed_attempt(run: Path) -> list[str]:
    """30o. The kept scenarios' attempt records no harness time: their seconds would be unbound."""
    cell = target(run)
    resume_evidence(run, cell, 2)
    edit_cell(cell, lambda record: record["earlier_attempts"][0].update(harness_seconds=None))
    return [cell.name]


def forge_kept_scenario_changed(run: Path) -> list[str]:
    """30k. A kept scenario's result changed after its attempt recorded its digest (its seconds
    halved: nothing else in the bundle would notice)."""
    cell = target(run)
    resume_evidence(run, cell, 2)
    edit_rows(
        cell,
        lambda rows: [{**row, "seconds": row["seconds"] / 2} if index == 0 else row for index, row in enumerate(rows)],
    )
    return [cell.name]


# ---------------------------------------------------------------- gates (items 5 and 8)


def ran_cells(run: Path) -> list[str]:
    return [cell.name for cell in cell_dirs(run) if read_json(cell / CELL_FILE)["status"] == "done"]


def forge_gate_disabled_in_matrix(run: Path) -> list[str]:
    """33. The embedded matrix's latency gate turned off (sha256 updated): the gate records still
    say enabled, so a failing gate could be waved through."""
    copy = run / MATRIX_COPY
    matrix = yaml.safe_load(copy.read_text())
    matrix["latency_gate"] = {**matrix.get("latency_gate", {}), "enabled": False}
    copy.write_text(yaml.safe_dump(matrix, sort_keys=False))
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    edit_run(run, lambda record: record["matrix"].update(sha256=digest))
    return ran_cells(run)


def forge_gate_thresholds(run: Path) -> list[str]:
    """33b. A gate record whose thresholds are not the profile's (a far slower engine let through)."""
    cell = target(run)
    edit_cell(cell, lambda record: record["gate"].update(max_seconds_per_step=1e6, min_tokens_per_second=0.0))
    return [cell.name]


def forge_one_cell_gate_excluded(run: Path) -> list[str]:
    """36. One cell of an engine group shown EXCLUDED by a failing gate, while its sibling, on the
    same engine, passed the gate (a bad cell hidden as a slow machine)."""
    cell = target(run)
    group = read_json(cell / CELL_FILE)["cell"]["model"]["id"]
    siblings = [c.name for c in cell_dirs(run) if read_json(c / CELL_FILE)["cell"]["model"]["id"] == group]
    slow = [{"seconds": 1.0, "tokens_per_second": 0.5, "valid_step": True} for _ in range(3)]
    edit_cell(cell, lambda record: record.update(status="excluded", reason="latency gate: too slow"))
    edit_cell(cell, lambda record: record["gate"].update(passed=False, reason="too slow", attempts=slow))
    return siblings


# ---------------------------------------------------------------- evidence and identity (items 6 and 7)


def forge_execution_dropped(run: Path) -> list[str]:
    """34. The execution record (threads, slots, prompt cache) removed."""
    cell = target(run)
    edit_cell(cell, lambda record: record.update(execution=None))
    return [cell.name]


def forge_engine_log_removed(run: Path) -> list[str]:
    """34b. The engine's log removed (and from the cell's file list)."""
    cell = target(run)
    (cell / "engine.log").unlink()
    return [cell.name]


def forge_slots_unreported(run: Path) -> list[str]:
    """34c. The slots the engine reported removed from its settings."""
    cell = target(run)
    edit_cell(cell, lambda record: record["engine_settings"]["reported"].pop("total_slots"))
    return [cell.name]


def forge_image_label_build(run: Path) -> list[str]:
    """35. The engine image labelled with another llama.cpp build than the pinned one."""
    cell = target(run)
    edit_cell(cell, lambda record: record["engine_image"]["labels"].update({"repro.build_info": "b9999-0000000"}))
    return [cell.name]


def forge_reported_build(run: Path) -> list[str]:
    """35b. The engine's own settings report another build than the identity check recorded."""
    cell = target(run)
    edit_cell(cell, lambda record: record["engine_settings"]["reported"].update(build_info="b9999-0000000"))
    return [cell.name]


def forge_gpu_on_cpu_profile(run: Path) -> list[str]:
    """35c. A GPU recorded (accelerator and device request) in a cell of the cpu profile."""
    cell = target(run)

    def change(record: dict) -> None:
        record["accelerator"] = "NVIDIA H200"
        record["sandbox"]["engine"]["device_requests"] = [
            {"count": -1, "capabilities": [["gpu"]], "driver": "nvidia", "device_ids": []}
        ]

    edit_cell(cell, change)
    return [cell.name]


# ---------------------------------------------------------------- partial plans (item 9)


def forge_only_cell_removed(run: Path) -> Forged:
    """37. A run of --only one cell whose only cell was removed, from the folder and from
    planned_cells: nothing is left to be INVALID, yet the selection says a cell is missing."""
    chosen, other = planned(run)[:2]
    edit_run(run, lambda record: record.update(only=[chosen], planned_cells=[]))
    shutil.rmtree(run / "cells" / chosen)
    shutil.rmtree(run / "cells" / other)
    return ALL


# ---------------------------------------------------------------- the project at the recorded commit (items 4 and 5)

PROJECT = "project"  # a forge that commits the honest project beside the bundle; check compares with it


def commit_project(run: Path) -> Path:
    """The project as it was when the bundle was made, committed in a git repository beside the
    bundle (its profiles, the matrix the run names, its scenarios and fixtures), and run.json
    naming that commit: what a reviewer's checkout of the author's project holds."""
    project = run.parent / PROJECT
    shutil.copytree(ROOT / "scenarios", project / "scenarios")
    shutil.copytree(ROOT / "fixtures", project / "fixtures")
    (project / "matrix").mkdir()
    shutil.copy(ROOT / "matrix" / "profiles.yaml", project / "matrix" / "profiles.yaml")
    shutil.copy(run / MATRIX_COPY, project / read_json(run / RUN_FILE)["matrix"]["path"])
    git = ["git", "-C", str(project), "-c", "user.name=Author", "-c", "user.email=author@example.org"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the project"]):
        subprocess.run([*git, *command], check=True, capture_output=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    edit_run(run, lambda record: record["source"].update(commit=commit))
    return project


def forge_suite_weakened(run: Path) -> list[str]:
    """31. An embedded scenario file changed (its description), the cells' suite sha256
    recomputed to match the copy: consistent inside the bundle, not the project's suite."""
    commit_project(run)
    copy = next((run / "suites").rglob("notes-002.json"))
    scenario = json.loads(copy.read_text())
    scenario["description"] = scenario.get("description", "") + " (weakened)"
    copy.write_text(json.dumps(scenario, indent=2))
    from repro.spec.matrix import Suite
    from repro.suites.registry import select

    for cell in cell_dirs(run):
        suite = Suite.model_validate(read_json(cell / CELL_FILE)["cell"]["suite"])
        digest = select(suite.model_copy(update={"path": "scenarios", "source": None}), root=copy.parents[2]).sha256
        record = read_json(cell / CELL_FILE)
        write_json(cell / CELL_FILE, {**record, "suite_sha256": digest})
    return ran_cells(run)


def forge_profile_relaxed(run: Path) -> Forged:
    """32. The profile copied into run.json relaxed (a gate any machine passes), the project's
    profiles.yaml at the commit left as it is."""
    commit_project(run)
    edit_run(
        run,
        lambda record: record["profile_settings"]["gate"].update(max_seconds_per_step=1e6, min_tokens_per_second=0.0),
    )
    return ALL


def forge_matrix_not_the_commits(run: Path) -> Forged:
    """32b. The embedded matrix edited (its description) with its sha256: the project's matrix at
    the commit is another file."""
    commit_project(run)
    copy = run / MATRIX_COPY
    copy.write_text(copy.read_text().replace("description:", "description: edited", 1))
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    edit_run(run, lambda record: record["matrix"].update(sha256=digest))
    return ALL


# Forgeries check does not catch today: id -> what it misses and what it would need.
GAPS: dict[str, str] = {}  # none left: every forgery below is caught


def case(forge: Forge, rule: str, ident: str) -> object:
    """One forgery, the rule expected to catch it, and its id; a strict xfail where GAPS names it."""
    marks = [gap(GAPS[ident])] if ident in GAPS else []
    return pytest.param(forge, rule, id=ident, marks=marks)


FORGERIES = [
    case(forge_flipped_result, "summary", "01-result-flipped"),
    case(forge_flipped_result_and_summary, "results-consistent", "02-result-flipped-summary-fixed"),
    case(forge_clean_flip, "regraded", "02b-result-flipped-thoroughly"),
    case(forge_progress_contradicts, "progress", "02c-harness-log-reports-another-outcome"),
    case(forge_summary_only, "summary", "03-summary-edited"),
    case(forge_listed_twice, "plan-listing", "04-cell-listed-twice"),
    case(forge_dropped_cell, "plan-recomputed", "05-cell-dropped"),
    case(forge_unplanned_cell, "plan-recomputed", "06-unplanned-cell-added"),
    case(forge_moved_to_excluded, "plan-recomputed", "07-cell-moved-to-excluded"),
    case(forge_cell_excluded_in_record, "exclusion-evidenced", "07b-cell-record-says-excluded"),
    case(forge_ran_cell_with_exclusion_kind, "exclusion-kind", "07c-ran-cell-records-an-exclusion-kind"),
    case(forge_model_pin, "cell-as-planned", "08-model-sha256-changed"),
    case(forge_protocol, "cell-as-planned", "09-protocol-changed"),
    case(forge_matrix_sha256, "plan-recomputed", "10-matrix-sha256-edited"),
    case(forge_embedded_matrix, "plan-recomputed", "11-embedded-matrix-edited"),
    case(forge_symlinked_results, "cell-intact", "12-results-symlinked-outside"),
    case(forge_hidden_cell_folder, "manifest", "13-hidden-cell-folder"),
    case(forge_dot_file_in_cell, "manifest", "13b-dot-file-in-cell"),
    case(forge_dot_file_in_run, "manifest", "13c-dot-file-in-run"),
    case(forge_cell_id_mismatch, "cell-intact", "14-cell-id-not-folder"),
    case(forge_engine_identity, "model-and-engine", "15-engine-identity"),
    case(forge_relaxed_sandbox, "sandbox", "16-sandbox-relaxed"),
    case(forge_audit_escape, "sandbox-audit", "17-audit-escape"),
    case(forge_engine_audit_escape, "engine-audit", "17b-engine-audit-escape"),
    case(forge_engine_audit_dropped, "engine-audit", "17c-engine-audit-dropped"),
    case(forge_failed_gate, "gate", "18-gate-failed-cell-done"),
    case(forge_harness_image, "images", "18b-harness-image-other-tree"),
    case(forge_interrupted, "run-complete", "19-run-interrupted"),
    case(forge_leaked_containers, "run-complete", "19b-leaked-containers"),
    case(forge_dirty_tree, "provenance", "20-dirty-tree"),
    case(forge_dirty_files_marked_clean, "provenance", "20b-dirty-files-marked-clean"),
    case(forge_engine_fault_passed, "summary", "21-engine-fault-passed"),
    case(forge_removed_result, "summary", "22-result-removed"),
    case(forge_removed_result_and_suite_id, "suite-recomputed", "22b-result-removed-from-suite"),
    case(forge_duplicated_result, "summary", "23-result-duplicated"),
    case(forge_duplicated_result_and_suite_id, "suite-recomputed", "23b-result-duplicated-in-suite"),
    case(forge_moved_category, "suite-recomputed", "24-category-changed"),
    case(forge_tool_result, "regraded", "26-tool-result-rewritten"),
    case(forge_engine_slots, "execution", "27-engine-ran-two-slots"),
    case(forge_engine_threads, "execution", "27b-engine-ran-other-threads"),
    case(forge_cache_used_while_off, "execution", "27d-cache-used-while-recorded-off"),
    case(forge_cache_on_never_used, "execution", "27e-cache-recorded-on-never-used"),
    case(forge_scenario_cache_warm_start, "execution", "27f-scenario-cache-first-request-warm"),
    case(forge_scenario_cache_never_used, "execution", "27g-scenario-cache-never-used"),
    case(forge_unpinned_threads, "execution", "27c-threads-unpinned"),
    case(forge_reply_says_other_call, "regraded", "28-reply-says-another-call"),
    case(forge_broken_reply_marked_valid, "regraded", "28b-broken-reply-marked-valid"),
    case(forge_step_differs_from_reply, "regraded", "28c-step-differs-from-its-reply"),
    case(forge_other_protocol, "regraded", "28d-other-protocols-replies"),
    case(forge_prompt_rewritten, "regraded", "29-first-prompt-rewritten"),
    case(forge_negative_seconds, "bounds", "30-negative-seconds"),
    case(forge_tokens_above_max, "bounds", "30b-tokens-above-max-tokens"),
    case(forge_million_tokens_per_second, "bounds", "30c-million-tokens-per-second"),
    case(forge_extra_timing, "bounds", "30d-more-timings-than-replies"),
    case(forge_negative_boot, "bounds", "30e-negative-boot-seconds"),
    case(forge_seconds_beyond_harness, "bounds", "30f-scenarios-longer-than-the-harness"),
    case(forge_every_scenario_resumed, "bounds", "30g-every-scenario-marked-resumed"),
    case(forge_kept_without_an_attempt, "resumed", "30h-kept-without-an-earlier-attempt"),
    case(forge_kept_on_another_engine_image, "resumed", "30i-kept-on-another-engine-image"),
    case(forge_kept_at_another_thread_count, "resumed", "30j-kept-at-another-thread-count"),
    case(forge_kept_scenario_changed, "resumed", "30k-kept-scenario-digest-differs"),
    case(forge_kept_with_the_cells_own_engine_log, "resumed", "30l-kept-with-the-cells-own-engine-log"),
    case(forge_kept_from_a_copy_of_the_cells_engine, "resumed", "30m-kept-from-a-copy-of-the-cells-engine"),
    case(forge_kept_beyond_their_attempts_harness, "bounds", "30n-kept-beyond-their-attempts-harness"),
    case(forge_kept_from_an_untimed_attempt, "bounds", "30o-kept-from-an-untimed-attempt"),
    case(forge_suite_weakened, "suite-at-commit", "31-embedded-suite-not-the-commits"),
    case(forge_profile_relaxed, "profile-at-commit", "32-profile-not-the-commits"),
    case(forge_matrix_not_the_commits, "matrix-at-commit", "32b-matrix-not-the-commits"),
    case(forge_gate_disabled_in_matrix, "gate-settings", "33-gate-disabled-in-matrix-only"),
    case(forge_gate_thresholds, "gate-settings", "33b-gate-thresholds-not-the-profiles"),
    case(forge_execution_dropped, "evidence", "34-execution-record-dropped"),
    case(forge_engine_log_removed, "evidence", "34b-engine-log-removed"),
    case(forge_slots_unreported, "evidence", "34c-slots-unreported"),
    case(forge_image_label_build, "identity-cross-check", "35-image-label-other-build"),
    case(forge_reported_build, "identity-cross-check", "35b-engine-reports-other-build"),
    case(forge_gpu_on_cpu_profile, "identity-cross-check", "35c-gpu-on-cpu-profile"),
    case(forge_only_cell_removed, "plan-recomputed", "37-only-selected-cell-removed"),
]
# Forgeries that need two cells in one engine group (two protocols on one model).
GROUP_FORGERIES = [case(forge_one_cell_gate_excluded, "gate-group", "36-one-cell-of-a-group-gate-excluded")]


# ---------------------------------------------------------------- the assertions

RowKey = tuple[str, str]  # (model id, protocol): the columns that tell a cell's table row apart here


def row_keys(run: Path) -> dict[str, RowKey]:
    """Cell id -> its row's (model id, protocol), read before the forgery."""
    cells = {cell_dir.name: read_json(cell_dir / CELL_FILE)["cell"] for cell_dir in cell_dirs(run)}
    return {cell_id: (cell["model"]["id"], cell["protocol"]) for cell_id, cell in cells.items()}


def rules_of(verdict: RunVerdict, cell_id: str) -> set[str]:
    cell = next(c for c in verdict.cells if c.cell_id == cell_id)
    assert cell.verdict == "INVALID", f"{cell_id} is {cell.verdict}: {cell.reasons}"
    return {problem.rule for problem in cell.problems}


def assert_caught(verdict: RunVerdict, forged: Forged, rule: str) -> None:
    """The forged cells (all, for a run-level forgery) INVALID by `rule`, the rest VALID."""
    everyone = [cell.cell_id for cell in verdict.cells]
    if forged is ALL:
        assert rule in {problem.rule for problem in verdict.run_problems}, verdict.run_problems
    for cell_id in everyone if forged is ALL else forged:
        assert rule in rules_of(verdict, cell_id)
    untouched = [c for c in verdict.cells if forged is not ALL and c.cell_id not in forged]
    assert all(cell.verdict == "VALID" for cell in untouched), [c.reasons for c in untouched]


def rendered_rows(out: Path) -> tuple[set[RowKey], str]:
    """The (model, protocol) of every row results.json holds, and results.md's text."""
    rows = read_json(out / "results.json")["rows"]
    return {(row["model"], row["protocol"]) for row in rows}, (out / "results.md").read_text()


def in_markdown(markdown: str, key: RowKey) -> bool:
    model, protocol = key
    return any(line.startswith(f"| {model} |") and f"| {protocol} |" in line for line in markdown.splitlines())


def assert_not_rendered(run: Path, out: Path, keys: dict[str, RowKey], forged: Forged) -> None:
    """`repro paper render` keeps the forged cells' rows out of its tables (or refuses to render)."""
    if main(["paper", "render", str(run), "--out", str(out)]) != 0:
        return
    rows, markdown = rendered_rows(out)
    if forged is ALL:
        assert rows == set() and not any(in_markdown(markdown, key) for key in keys.values())
        return
    kept = {key for cell_id, key in keys.items() if cell_id not in forged}
    for cell_id in forged:
        assert f"`{cell_id}` (INVALID)" in markdown
        assert keys[cell_id] in kept or (keys[cell_id] not in rows and not in_markdown(markdown, keys[cell_id]))
    assert kept <= rows and all(in_markdown(markdown, key) for key in kept)


def compare_with_project(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a forge committed the honest project beside the bundle, check compares with it (as
    with the reviewer's checkout of the author's project)."""
    project = run.parent / PROJECT
    if project.is_dir():
        monkeypatch.setattr("repro.check.commit.project_root", lambda: project)


@pytest.mark.parametrize(("forge", "rule"), FORGERIES)
def test_forgery_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forge: Forge, rule: str) -> None:
    run = write_bundle(tmp_path / "run1")
    keys = row_keys(run)
    forged = forge(run)
    rehash(run)
    compare_with_project(run, monkeypatch)
    assert_caught(check_run(run, Redactor(CANARY)), forged, rule)
    assert_not_rendered(run, tmp_path / "tables", keys, forged)


@pytest.mark.parametrize(("forge", "rule"), GROUP_FORGERIES)
def test_group_forgery_is_caught(tmp_path: Path, forge: Forge, rule: str) -> None:
    run = write_bundle(tmp_path / "run1", protocols=("json_schema", "react"))
    keys = row_keys(run)
    forged = forge(run)
    rehash(run)
    assert_caught(check_run(run, Redactor(CANARY)), forged, rule)
    assert_not_rendered(run, tmp_path / "tables", keys, forged)


def test_the_project_at_the_commit_keeps_the_bundle_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The null control with the project's files at the recorded commit to compare with: VALID,
    and the verdict has nothing to say about the commit."""
    run = write_bundle(tmp_path / "run1")
    commit_project(run)
    rehash(run)
    compare_with_project(run, monkeypatch)
    verdict = check_run(run, Redactor(CANARY))
    assert not verdict.run_problems and {c.verdict for c in verdict.cells} == {"VALID"}, [
        c.reasons for c in verdict.cells
    ]
    assert verdict.notes == []


def test_a_commit_the_checkout_lacks_is_said(tmp_path: Path) -> None:
    """Without the commit, the bundle's own copies are all check has, and the verdict says so."""
    verdict = check_run(write_bundle(tmp_path / "run1"), Redactor(CANARY))
    assert {c.verdict for c in verdict.cells} == {"VALID"}
    assert len(verdict.notes) == 1 and "is not in this checkout" in verdict.notes[0]


def test_rehash_alone_keeps_the_bundle_valid(tmp_path: Path) -> None:
    """The forger's re-signing changes nothing by itself: every verdict above is the forgery's."""
    run = write_bundle(tmp_path / "run1")
    rehash(run)
    verdict = check_run(run, Redactor(CANARY))
    assert not verdict.run_problems and {c.verdict for c in verdict.cells} == {"VALID"}


def test_a_resumed_cell_is_timed_by_the_scenarios_it_reran(tmp_path: Path) -> None:
    """A genuine resumed cell: its harness ran only what the interrupted attempt had not finished
    (the kept scenarios' seconds are not held against it, which the e2e resume found), and its kept
    scenarios come with the attempt that finished them: VALID."""
    run = write_bundle(tmp_path / "run1")
    cell = target(run)
    kept = resume_evidence(run, cell, 2)
    rehash(run)
    verdict = check_run(run, Redactor(CANARY))
    assert {c.verdict for c in verdict.cells} == {"VALID"}, [c.reasons for c in verdict.cells]
    assert read_json(cell / CELL_FILE)["resumed_kept"] == kept and len(kept) == 2


@pytest.mark.parametrize("version", [99, 2, 3])
def test_unknown_or_retired_format_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int
) -> None:
    """25. check_run raises BadInput; `repro check` exits 2 with one line; render refuses too."""
    run = write_bundle(tmp_path / "run1")
    forge_protocol(run)
    forge_format_version(run, version)
    rehash(run)
    with pytest.raises(BadInput, match=f"bundle format {version} "):
        check_run(run, Redactor(CANARY))
    capsys.readouterr()
    assert main(["check", str(run)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["paper", "render", str(run), "--out", str(tmp_path / "tables")]) == 2
    assert not (tmp_path / "tables" / "results.md").exists()


def test_a_harness_digest_the_commit_does_not_give_is_invalid(tmp_path):
    """The published smoke bundle, its harness tree digest rewritten in run.json and in every image
    label that carries it (every hash made again): the commit it records is in this checkout, and
    its files give the digest back, so the forgery is INVALID (issue 49: never taken on the
    bundle's word)."""
    from repro.rerun.archive import bundle_folder
    from tests.rerun.conftest import SMOKE

    run = bundle_folder(SMOKE, tmp_path / "unpacked")
    forged = "f" * 64
    edit_run(run, lambda record: record["source"].update(harness_digest=forged))
    for cell_dir in cell_dirs(run):
        edit_cell(cell_dir, lambda record: record["harness_image"]["labels"].update({"repro.harness_tree": forged}))
    rehash(run)
    problems = [p.text for p in check_run(run).run_problems]
    assert any("records harness tree digest ffffffffffff, the commit" in text for text in problems), problems
