"""Hostile inputs from outside (issue 27): terminal escapes and markup from a bundle, special
output targets, a closed or full standard output, non-finite numbers, oversized ids. Each is one
line and exit 2 (or the documented exit code), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.contracts import GateAttempt
from harness.probe import judge
from repro.__main__ import main
from repro.bundle.layout.loading import load_cell, load_run
from repro.core.errors import BadInput
from repro.core.terminal import printable, shown
from repro.core.yamlsource import MAX_SCALAR_CHARS, parse_json_bounded
from tests.fixtures.synthetic import write_bundle

ROOT = Path(__file__).resolve().parents[2]
FORGED = "r[/]\x1b[2J\x1b]0;title\x07x\n[blink]forged\u202e"


def repro(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args], capture_output=True, text=True, cwd=ROOT, timeout=60, **kwargs
    )


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("hostile") / "run1")


# ---------------------------------------------------------------- terminal escapes and markup


def test_control_characters_and_markup_are_shown_as_written():
    assert printable("a\x1b[2Jb\nc\u202e") == "a\\x1b[2Jb\\nc\\u202e"
    assert shown("[/] [blink]x") == "\\[/] \\[blink]x"


def test_a_forged_run_id_neither_escapes_nor_crashes_check(tmp_path, bundle):
    run = tmp_path / "run1"
    subprocess.run(["cp", "-r", str(bundle), str(run)], check=True)
    record = json.loads((run / "run.json").read_text())
    record["run_id"] = FORGED
    (run / "run.json").write_text(json.dumps(record))
    proc = repro("check", str(run))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr  # INVALID: run.json no longer matches its manifest
    line = next(line for line in proc.stdout.splitlines() if line.startswith("run "))
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    assert "r[/]\\x1b[2J\\x1b]0;title\\x07x\\n[blink]forged\\u202e" in line


def test_a_markup_file_name_is_printed_as_written(tmp_path, bundle):
    out = tmp_path / "[blink]x[/].csv"
    proc = repro("results", "csv", str(bundle), "--out", str(out))
    assert proc.returncode == 0 and "[blink]x[/].csv" in " ".join(proc.stderr.split())


# ---------------------------------------------------------------- output targets


@pytest.mark.parametrize("target", ["/dev/null", "/dev/full", "fifo", "folder", "link"])
def test_csv_refuses_a_target_that_is_not_a_regular_file(tmp_path, bundle, target):
    path = Path(target)
    if target == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif target == "folder":
        path = tmp_path
    elif target == "link":
        path = tmp_path / "link"
        path.symlink_to(tmp_path / "elsewhere.csv")
    before = os.lstat(path)
    proc = repro("results", "csv", str(bundle), "--out", str(path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)  # the device node is still there


def test_a_closed_or_full_standard_output_is_one_line_and_exit_2(bundle):
    closed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.close(1); from repro.__main__ import main; sys.exit(main(sys.argv[1:]))",
            "results",
            "csv",
            str(bundle),
        ],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert closed.returncode == 2 and len(closed.stderr.strip().splitlines()) == 1, closed.stderr
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "repro", "results", "csv", str(bundle)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "repro: standard output could not be written: No space left on device"
    ]


# ---------------------------------------------------------------- non-finite numbers


@pytest.mark.parametrize(
    "text", ['{"x": NaN}', '{"x": -Infinity}', '{"x": 1e999}', "[" * 100 + "]" * 100, '{"x": ' + "9" * 5000 + "}"]
)
def test_non_finite_huge_or_deep_json_is_refused(text):
    with pytest.raises(BadInput):
        parse_json_bounded("f.json", text.encode())


def test_a_nan_gate_attempt_does_not_pass_the_gate_nor_load(tmp_path, bundle):
    nan = GateAttempt(seconds=float("nan"), tokens_per_second=float("nan"), valid_step=True)
    assert not judge([nan, nan.model_copy()], required=1, max_seconds=30, min_tps=5).passed
    run = tmp_path / "run1"
    subprocess.run(["cp", "-r", str(bundle), str(run)], check=True)
    cell_dir = run / "cells" / load_run(run).planned_cells[0]
    text = (cell_dir / "cell.json").read_text()
    record = json.loads(text)
    record["gate"]["attempts"][0]["seconds"] = 0.5
    (cell_dir / "cell.json").write_text(json.dumps(record).replace('"seconds": 0.5', '"seconds": NaN', 1))
    with pytest.raises(BadInput, match="NaN"):
        load_cell(cell_dir)
    proc = repro("check", str(run))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout


def test_a_published_file_with_1e999_is_refused(tmp_path, bundle):
    published = tmp_path / "results.json"
    published.write_text('{"rows": [], "x": 1e999}')
    assert main(["verify", str(bundle), "--published", str(published)]) == 2


# ---------------------------------------------------------------- sizes


def test_an_id_of_100_kb_is_refused_at_once(tmp_path, capsys):
    matrix = (ROOT / "matrix" / "smoke.yaml").read_text().replace("name: smoke", "name: " + "a" * 100_000, 1)
    path = tmp_path / "m.yaml"
    path.write_text(matrix)
    started = time.monotonic()
    assert main(["matrix", "plan", str(path), "--profile", "cpu"]) == 2
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(len(line) < 400 for line in err)


def test_a_yaml_value_over_its_bound_is_refused_at_once(tmp_path, capsys):
    matrix = (
        (ROOT / "matrix" / "smoke.yaml")
        .read_text()
        .replace("description: ", "description: " + "x" * (MAX_SCALAR_CHARS + 1), 1)
    )
    path = tmp_path / "m.yaml"
    path.write_text(matrix)
    started = time.monotonic()
    assert main(["matrix", "plan", str(path), "--profile", "cpu"]) == 2
    assert time.monotonic() - started < 5
    assert f"(at most {MAX_SCALAR_CHARS})" in capsys.readouterr().err


def _forged_exclusion(tmp_path: Path) -> Path:
    reason = ("x1 [blink]y[/] \\x1b[2J " * 200)[:MAX_SCALAR_CHARS]
    matrix = (
        (ROOT / "matrix" / "smoke.yaml")
        .read_text()
        .replace("\nexclude:\n", f'\nexclude:\n  - model: smollm2-135m-instruct-q4_1\n    reason: "{reason}"\n', 1)
    )
    path = tmp_path / "[blink]m.yaml"
    path.write_text(matrix)
    return path


def test_matrix_plan_and_validate_print_input_as_written(tmp_path):
    path = _forged_exclusion(tmp_path)
    started = time.monotonic()
    plan = repro("matrix", "plan", str(path), "--profile", "cpu")
    assert plan.returncode == 0 and time.monotonic() - started < 30, plan.stderr
    assert "\x1b" not in plan.stdout and "x1 [blink]y[/] \\x1b[2J" in plan.stdout
    validate = repro("matrix", "validate", str(path))
    assert validate.returncode == 0 and "[blink]m.yaml" in validate.stdout and "\x1b" not in validate.stdout


def test_the_run_progress_escapes_what_came_from_input():
    from rich.console import Console

    from repro.run.progress import RunProgress

    console = Console(record=True, width=400, force_terminal=False)
    progress = RunProgress(console)
    progress.start_run(FORGED, Path("/tmp/[blink]x"), [], {})
    progress.cell_done(FORGED, "error", FORGED)  # its header names it twice (no label known: the id), its line twice
    progress.note(f"[red]engine fault[/] {FORGED}")
    progress.end_run("failed")
    text = console.export_text()
    assert "\x1b" not in text and "\u202e" not in text
    assert "/tmp/[blink]x" in text and text.count("r[/]\\x1b[2J\\x1b]0;title\\x07x\\n[blink]forged\\u202e") == 6


def test_the_host_identity_scan_of_a_suite_skips_a_huge_sparse_file(tmp_path):
    from harness.io.inputs import MAX_SCENARIO_BYTES
    from repro.bundle.redact import suite_data_homes

    suite = tmp_path / "suites" / "s" / "scenarios" / "notes"
    suite.mkdir(parents=True)
    (suite / "a.json").write_text('{"about": "/home/mira/notes.txt"}')
    with (suite / "huge.json").open("wb") as handle:
        handle.truncate(64 * MAX_SCENARIO_BYTES * 1024)  # 64 GiB of holes: read whole, this would never end
    started = time.monotonic()
    assert suite_data_homes(tmp_path / "suites" / "s") == frozenset({"/home/mira"})
    assert suite_data_homes(tmp_path / "suites" / "s") == frozenset({"/home/mira"})  # from the cache the second time
    assert time.monotonic() - started < 2
