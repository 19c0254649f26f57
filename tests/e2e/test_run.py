"""`repro matrix run` end to end: real Docker, real llama.cpp, real SmolLM2, real bundles."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import docker
import pytest

from harness.contracts import InvalidEntry, RecordedReply, StepEntry, TranscriptEntry
from repro.bundle.layout.loading import load_cell, read_results, read_transcripts
from tests.e2e.conftest import CANARY_HOST, CANARY_USER, e2e_matrix, make_snapshot, repro_command, repro_env, run_repro
from tests.fixtures.signals import popen

DETERMINISTIC_FIELDS = {"id", "category", "passed", "status", "failure_type", "steps", "invalid_steps", "engine_fault"}
pytestmark = [pytest.mark.docker, pytest.mark.engine]


def cells_of(run_dir: Path) -> dict[str, Path]:
    return {p.name: p for p in (run_dir / "cells").iterdir() if p.is_dir() and not p.name.startswith(".")}


def outcome(cell_dir: Path) -> tuple[list, list]:
    rows = [row.model_dump(include=DETERMINISTIC_FIELDS) for row in read_results(cell_dir)]
    transcripts = [line.model_dump() for line in read_transcripts(cell_dir)]
    return rows, transcripts


def repro_containers(run_id: str) -> list:
    client = docker.from_env()
    return client.containers.list(all=True, filters={"label": f"repro.run={run_id}"})


def test_run_is_valid_and_complete(e2e_run, snapshot, canary_home):
    record = json.loads((e2e_run / "run.json").read_text())
    assert record["status"] == "complete" and record["source"]["tree_clean"] is True
    assert record["leaked_containers"] == [] and repro_containers(record["run_id"]) == []
    cells = cells_of(e2e_run)
    assert len(cells) == 2
    for cell_dir in cells.values():
        cell = load_cell(cell_dir)
        assert cell.status == "done", cell.reason
        assert cell.summary.total == 7 and cell.summary.engine_faults == 0
        assert cell.engine_identity.matched and cell.engine_identity.reported == "b11434-src-b0a2feb6"
        assert cell.sandbox.engine.network_mode == "none"
        assert cell.sandbox.harness.network_mode.startswith("container:")
        assert cell.gate.passed is True
    proc = run_repro(snapshot, canary_home, "check", str(e2e_run))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("VALID") >= 2 and "INVALID" not in proc.stdout.replace("0 INVALID", "")


def test_the_console_of_a_run_reads_as_a_log(e2e_run, e2e_console):
    """Without a terminal: a header per cell before its scenario lines, short labels, the overall
    line with time left, and no progress frame."""
    lines = e2e_console.stdout.splitlines()
    cells = sorted(cells_of(e2e_run), key=lambda cell: "part-b" in cell)
    for number, (cell_id, suite) in enumerate(zip(cells, ("part-a", "part-b"), strict=True), start=1):
        header = lines.index(f"cell {number} of 2: smollm2-135m-instruct-q4_1 / json_schema / {suite} ({cell_id})")
        done = next(i for i in range(header, len(lines)) if lines[i].startswith("  done "))
        assert lines[done].startswith(f"  done smollm2-135m-instruct-q4_1 / json_schema / {suite}: ")
        # every 60 s an overall line
        scenario_lines = [line[4:9] for line in lines[header + 1 : done] if not line.startswith("overall: ")]
        assert scenario_lines == [f"[{i}/7]" for i in range(1, 8)]
        assert lines[done + 1].startswith(f"overall: {7 * number} of 14 scenarios, {number} of 2 cells, ")
    # time left from the measured rate
    assert "left" in next(line for line in lines if line.startswith("overall: 7 of 14"))
    (ended,) = [line for line in lines if line.startswith("run complete: ")]
    assert ended.startswith("run complete: overall: 14 of 14 scenarios, 2 of 2 cells, ") and ended.endswith(
        "nothing left"
    )
    assert "━" not in e2e_console.stdout and "\x1b" not in e2e_console.stdout and "\r" not in e2e_console.stdout


def invalid_replies(transcript: list[TranscriptEntry]) -> list[RecordedReply]:
    return [
        reply
        for entry in transcript
        if isinstance(entry, StepEntry | InvalidEntry)
        for reply in entry.replies
        if reply.problem
    ]


def test_every_complete_reply_parsed_under_the_schema(e2e_run):
    """Grammar-constrained decoding: a reply the engine finished always parses and validates;
    the only invalid replies are those cut at the token limit (a rambling model)."""
    replies = 0
    for cell_dir in cells_of(e2e_run).values():
        for line in read_transcripts(cell_dir):
            for reply in invalid_replies(line.transcript):
                replies += 1
                assert (reply.problem or "").startswith("cut at the token limit"), reply.problem
    rows = [row for cell_dir in cells_of(e2e_run).values() for row in read_results(cell_dir)]
    assert sum(row.invalid_steps for row in rows) <= replies


def test_bundle_holds_no_canary_identity(e2e_run, snapshot, canary_home):
    text = "".join(path.read_text(errors="replace") for path in e2e_run.rglob("*") if path.is_file())
    for canary in (CANARY_USER, CANARY_HOST, str(canary_home), str(snapshot)):
        assert canary not in text, canary


def test_tables_hold_the_measured_numbers(e2e_run, snapshot, canary_home, tmp_path):
    proc = run_repro(snapshot, canary_home, "paper", "render", str(e2e_run), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    markdown = (tmp_path / "results.md").read_text()
    lines = markdown.splitlines()
    for cell_dir in cells_of(e2e_run).values():
        cell = load_cell(cell_dir)
        # rows carry short labels (the ids are in the table's key): the quant, size, build, suite and count are
        # the cell's
        wanted = ("| Q4_1 | 93.8 | b11434 |", f"| {cell.cell.suite.id} | {cell.summary.passed}/7 |")
        assert any(all(part in line for part in wanted) for line in lines), wanted
    assert "\\toprule" in (tmp_path / "results.tex").read_text()


def test_one_changed_byte_invalidates_its_cell_and_leaves_the_tables(e2e_run, snapshot, canary_home, tmp_path):
    import shutil

    copy = tmp_path / e2e_run.name
    shutil.copytree(e2e_run, copy)
    target_cell = sorted(cells_of(copy).values())[0]
    path = target_cell / "transcripts.jsonl"
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    proc = run_repro(snapshot, canary_home, "check", str(copy))
    assert proc.returncode == 1
    assert f"INVALID  {target_cell.name}" in proc.stdout
    run_repro(snapshot, canary_home, "paper", "render", str(copy), "--out", str(tmp_path / "tables"))
    markdown = (tmp_path / "tables" / "results.md").read_text()
    assert "/7 |" in markdown and f"`{target_cell.name}` (INVALID)" in markdown


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.faults)], ids=["sigint", "sigterm"]
)
def test_interrupted_run_resumes_to_the_same_results(e2e_run, snapshot, canary_home, stop):
    """Ctrl-C (SIGINT), or a scheduler's cancel (SIGTERM, under the faults marker): the run stops
    with 130, removes its containers, keeps only whole cells, and --resume reproduces the run."""
    out = f"results/resume-{stop.name.lower()}"  # inside the ignored results/ folder: the tree stays clean
    args = ["matrix", "run", "matrix/e2e.yaml", "--profile", "cpu", "--out", out]
    # the run stops on the signal even when this test run was started with SIGINT ignored (nohup ... &)
    proc = popen(
        repro_command(*args),
        cwd=snapshot,
        env=repro_env(snapshot, canary_home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    cells_dir = None
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline and proc.poll() is None:
        latest = snapshot / out / "LATEST"
        if latest.is_file():
            cells_dir = snapshot / out / latest.read_text().strip() / "cells"
            if cells_dir.is_dir() and any(not p.name.startswith(".") for p in cells_dir.iterdir()):
                break
        time.sleep(1)
    time.sleep(8)  # let the second cell start
    proc.send_signal(stop)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output[-3000:]
    run_dir = cells_dir.parent
    run_id = run_dir.name
    assert repro_containers(run_id) == []
    assert not any((p / "cell.json").exists() for p in cells_dir.iterdir() if p.name.startswith(".")), (
        "a partial cell looks complete"
    )
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert len(cells_of(run_dir)) == 1

    resumed = run_repro(snapshot, canary_home, *args, "--resume")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "skip" in resumed.stdout
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    baseline = cells_of(e2e_run)
    for name, cell_dir in cells_of(run_dir).items():
        assert outcome(cell_dir) == outcome(baseline[name]), name
    assert run_repro(snapshot, canary_home, "check", str(run_dir)).returncode == 0

    # the interrupted-then-resumed rerun reproduces the first run's published numbers exactly
    paper = snapshot / "results" / "paper"
    assert run_repro(snapshot, canary_home, "paper", "render", str(e2e_run), "--out", str(paper)).returncode == 0
    verified = run_repro(snapshot, canary_home, "verify", str(run_dir), "--published", str(paper / "results.json"))
    assert verified.returncode == 0, verified.stdout
    assert "2 REPRODUCED, 0 CONSISTENT, 0 DIFFERENT, 0 NOT RERUN of 2 claims" in verified.stdout


def stop_after_kept(proc: subprocess.Popen, partial: Path, count: int, timeout: float = 1200) -> None:
    """Watch the cell's partial folder from outside the run and send `repro matrix run` SIGTERM (a
    scheduler's cancel) once `count` of its scenarios are kept; the run may keep one more before
    the signal lands, which the caller reads back from the folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((partial / "kept").glob("*.json"))) >= count:
            proc.send_signal(signal.SIGTERM)
            return
        time.sleep(0.2)
    raise AssertionError(f"the run ended or stalled before {count} scenarios of its cell were kept")


def test_a_cell_interrupted_after_3_scenarios_keeps_them_and_resumes_to_the_same_transcripts(
    e2e_run, snapshot, canary_home, tmp_path
):
    """The test stops the run from outside (SIGTERM to `repro matrix run`) once 3 scenarios of the
    first cell are kept: the partial cell keeps them (no cell.json), check calls the run INVALID,
    and --resume reruns the others on a freshly booted engine into the uninterrupted run's cell,
    transcripts byte for byte, with the interrupted attempt's record and engine log kept as evidence."""
    cell_id = _first_cell(snapshot, canary_home)
    out = "results/resume-after-3"
    args = ["matrix", "run", "matrix/e2e.yaml", "--profile", "cpu", "--out", out, "--only", cell_id]
    log = tmp_path / "interrupted.log"
    with log.open("w") as sink:
        proc = popen(
            repro_command(*args),
            cwd=snapshot,
            env=repro_env(snapshot, canary_home),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            run_root = snapshot / out
            deadline = time.monotonic() + 600
            while not (run_root / "LATEST").is_file() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            partial = run_root / (run_root / "LATEST").read_text().strip() / "cells" / f".{cell_id}.partial"
            stop_after_kept(proc, partial, 3)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    output = log.read_text()
    assert proc.returncode == 130, output[-3000:]
    kept = len(list((partial / "kept").glob("*.json")))
    assert 3 <= kept < 7 and f"{kept} of 7 finished scenario(s) kept" in output, output[-3000:]
    run_dir = partial.parent.parent
    assert (partial / "engine.log").is_file() and not (partial / "cell.json").exists()
    assert not (run_dir / "cells" / cell_id).exists()
    check = run_repro(snapshot, canary_home, "check", str(run_dir))
    assert check.returncode == 1 and f"cells/.{cell_id}.partial: a partial cell" in check.stdout

    resumed = run_repro(snapshot, canary_home, *args, "--resume")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"{kept} finished scenario(s) kept" in resumed.stdout and f"{7 - kept} rerun from" in resumed.stdout, (
        resumed.stdout
    )
    assert not partial.exists()
    cell_dir = run_dir / "cells" / cell_id
    record = load_cell(cell_dir)
    assert len(record.resumed_kept) == kept and len(record.earlier_attempts) == 1
    attempt = record.earlier_attempts[0]
    assert sorted(attempt.finished) == sorted(record.resumed_kept) and (cell_dir / attempt.engine_log).is_file()
    assert (
        attempt.partial.engine_identity == record.engine_identity.reported
        and attempt.partial.engine_image_id == record.engine_image.id
    )
    baseline = cells_of(e2e_run)[cell_id]
    assert outcome(cell_dir) == outcome(baseline)
    assert (cell_dir / "transcripts.jsonl").read_bytes() == (baseline / "transcripts.jsonl").read_bytes()
    final = run_repro(snapshot, canary_home, "check", str(run_dir))
    assert final.returncode == 0, final.stdout[-3000:]


def test_the_second_cell_alone_gives_the_whole_runs_transcripts(e2e_run, snapshot, canary_home):
    """The CPU profile's prompt cache per scenario (issue 65): in the whole run, the second cell's
    first scenario followed the first cell's last on the same engine; run alone (`--only`, a
    fresh engine), its scenarios read what they read there, transcripts byte for byte, and every
    first request took no token from a cache while every later one took some."""
    second = sorted(cells_of(e2e_run))[1]
    whole = cells_of(e2e_run)[second]
    record = load_cell(whole)
    assert record.execution is not None and record.execution.cache_prompt == "scenario" and record.execution.exact
    counts = [[(t.timings or {}).get("cache_n") for t in row.engine_timings] for row in read_results(whole)]
    assert all(each[0] == 0 and all(c > 0 for c in each[1:]) for each in counts if each), counts
    assert any(len(each) > 1 for each in counts)
    out = "results/second-alone"
    alone = run_repro(snapshot, canary_home, "matrix", "run", "matrix/e2e.yaml", "--out", out, "--only", second)
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-3000:]
    run_root = snapshot / out
    cell_dir = run_root / (run_root / "LATEST").read_text().strip() / "cells" / second
    assert (cell_dir / "transcripts.jsonl").read_bytes() == (whole / "transcripts.jsonl").read_bytes()
    assert outcome(cell_dir) == outcome(whole)


def test_dirty_tree_makes_cells_invalid(tmp_path, canary_home, harness_image_ref, llama_image_ref):
    matrix = e2e_matrix("  - id: one\n    path: scenarios\n    ids: [notes-001]")
    project = make_snapshot(tmp_path / "project", {"matrix/e2e.yaml": matrix})
    with open(project / "README.md", "a") as readme:
        readme.write("\nAn uncommitted edit.\n")
    args = [
        "matrix",
        "run",
        "matrix/e2e.yaml",
        "--profile",
        "cpu",
        "--out",
        "results",
        "--only",
        _first_cell(project, canary_home),
    ]
    refused = run_repro(project, canary_home, *args)
    assert refused.returncode == 2 and "the project tree is dirty (1 file(s): README.md)" in refused.stderr, (
        refused.stderr
    )
    proc = run_repro(project, canary_home, *args, "--allow-dirty")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "not a clean-room run (--allow-dirty)" in proc.stdout
    run_dir = project / "results" / (project / "results" / "LATEST").read_text().strip()
    assert json.loads((run_dir / "run.json").read_text())["dirty_allowed"] is True
    check = run_repro(project, canary_home, "check", "results")
    assert check.returncode == 1
    assert (
        "INVALID" in check.stdout
        and "project tree was dirty at run time (README.md); the run was started with --allow-dirty" in check.stdout
    )


def _first_cell(project: Path, home: Path) -> str:
    proc = run_repro(project, home, "matrix", "plan", "matrix/e2e.yaml", "--profile", "cpu", "--json")
    return json.loads(proc.stdout)["cells"][0]["id"]
