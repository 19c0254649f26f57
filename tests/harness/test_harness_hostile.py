"""Hostile inputs to ``python -m harness`` (issue 27): huge integers and deep nesting in a
scenario, non-finite or out-of-range options, special input files (a FIFO, a device, a sparse
gigabyte) and special output targets. Each is one line and exit 2 (lint: a finding, exit 1),
never a traceback, and in well under the time a read of the whole file would take."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import cli
from harness.cli import main
from harness.io.inputs import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    MAX_RECORDS_BYTES,
    MAX_SCENARIO_BYTES,
    InputError,
    open_regular,
)
from harness.io.strict_json import StrictJSONError, loads_strict

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = REPO_ROOT / "scenarios" / "table_create"


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness: ") and "Traceback" not in err, err
    return err


def special(tmp_path: Path, kind: str) -> Path:
    """A path of the given kind: fifo, device, sparse (a gigabyte of holes), folder or link."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo.json")
        return tmp_path / "fifo.json"
    if kind == "device":
        return Path("/dev/zero")
    if kind == "sparse":
        path = tmp_path / "sparse.json"
        with path.open("wb") as handle:
            handle.truncate(1024**3)
        return path
    if kind == "folder":
        (tmp_path / "folder").mkdir()
        return tmp_path / "folder"
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere.jsonl")
    return tmp_path / "link"


# ---------------------------------------------------------------------------- JSON bounds


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"id": ' + "9" * 5000 + "}", "integer of 5000 digits"),
        ('{"id": ' + "9" * (MAX_INT_DIGITS + 1) + "}", f"at most {MAX_INT_DIGITS}"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), f"deeper than {MAX_JSON_DEPTH}"),
    ],
)
def test_replay_and_lint_refuse_huge_integers_and_deep_nesting(tmp_path, capsys, text, reason) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(["replay", "--scenarios", str(path)]) == 2
    assert reason in one_line(capsys)
    assert main(["lint", "--scenarios", str(path)]) == 1  # a scenario that does not load is a lint finding
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and reason in out


def test_model_output_json_keeps_its_meaning_but_never_raises_from_inside() -> None:
    assert loads_strict("[" * 100 + "]" * 100) is not None  # no depth bound on what a model writes
    for text in ('{"a": ' + "9" * 5000 + "}", "[" * 100_000):
        with pytest.raises(StrictJSONError):
            loads_strict(text)


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "argv",
    [
        [
            "run",
            "--scenarios",
            str(SCENARIOS),
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--out",
            "o",
            "--timeout",
            "nan",
        ],
        [
            "run",
            "--scenarios",
            str(SCENARIOS),
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--out",
            "o",
            "--timeout",
            "inf",
        ],
        [
            "run",
            "--scenarios",
            str(SCENARIOS),
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--out",
            "o",
            "--temperature",
            "-inf",
        ],
        [
            "run",
            "--scenarios",
            str(SCENARIOS),
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--out",
            "o",
            "--scenario-timeout",
            "nan",
        ],
        ["scripted-engine", "--scenarios", str(SCENARIOS), "--port", "99999"],
        ["scripted-engine", "--scenarios", str(SCENARIOS), "--port", "-1"],
    ],
)
def test_non_finite_and_out_of_range_options_are_one_line(argv, capsys) -> None:
    assert main(argv) == 2
    one_line(capsys)


def test_scripted_engine_refuses_a_malformed_scenario(tmp_path, capsys) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"id": ' + "9" * 5000 + "}")
    assert main(["scripted-engine", "--scenarios", str(path), "--port", "0"]) == 2
    assert "5000 digits" in one_line(capsys)


# ---------------------------------------------------------------------------- input files


@pytest.mark.parametrize("kind", ["fifo", "device", "sparse"])
def test_special_input_files_are_refused_unread(tmp_path, capsys, kind) -> None:
    path = special(tmp_path, kind)
    started = time.monotonic()
    for argv in (
        ["replay", "--scenarios", str(path)],
        ["lint", "--scenarios", str(path)],
        ["regrade", "--scenarios", str(SCENARIOS), "--results", str(path)],
        ["scripted-engine", "--scenarios", str(path), "--port", "0"],
    ):
        assert main(argv) == 2, argv
        assert str(path) in one_line(capsys)
    assert time.monotonic() - started < 5


def test_regrade_refuses_special_transcripts(tmp_path, capsys) -> None:
    results = tmp_path / "scenarios.jsonl"
    results.write_text("")
    for kind in ("fifo", "device"):
        assert (
            main(
                [
                    "regrade",
                    "--scenarios",
                    str(SCENARIOS),
                    "--results",
                    str(results),
                    "--transcripts",
                    str(special(tmp_path, kind)),
                ]
            )
            == 2
        )
        assert "not a regular file" in one_line(capsys)


def test_the_bounds_are_checked_on_the_open_file(tmp_path) -> None:
    path = tmp_path / "big.jsonl"
    with path.open("wb") as handle:
        handle.truncate(MAX_RECORDS_BYTES + 1)
    with pytest.raises(InputError, match="larger than the limit"):
        open_regular(path, MAX_RECORDS_BYTES)
    with pytest.raises(InputError, match="a folder"):
        open_regular(tmp_path, MAX_SCENARIO_BYTES)


# ---------------------------------------------------------------------------- output targets


@pytest.mark.parametrize("kind", ["/dev/null", "/dev/full", "fifo", "folder", "link"])
def test_replay_refuses_a_special_output_before_any_work(tmp_path, capsys, kind) -> None:
    target = Path(kind) if kind.startswith("/") else special(tmp_path, kind)
    before = os.lstat(target)
    assert main(["replay", "--scenarios", str(SCENARIOS), "--out", str(target)]) == 2
    assert "not an output file" in one_line(capsys)
    assert capsys.readouterr().out == ""  # refused before the first scenario
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_run_refuses_the_same_file_for_results_and_transcripts(tmp_path, capsys) -> None:
    out = str(tmp_path / "o.jsonl")
    argv = [
        "run",
        "--scenarios",
        str(SCENARIOS),
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--out",
        out,
        "--transcripts",
        out,
    ]
    assert main(argv) == 2
    assert "same file" in one_line(capsys)


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_write_error_is_one_line_and_leaves_no_temporary_file(tmp_path) -> None:
    out = tmp_path / "replay.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", "--scenarios", str(SCENARIOS), "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size,
    )
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"harness: error: {out}: cannot write (File too large)"
    ], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_leaves_no_temporary_file(tmp_path, monkeypatch) -> None:
    def refuse(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.os, "replace", refuse)
    with pytest.raises(InputError, match="cannot write"), cli._atomic_lines(tmp_path / "x.jsonl") as write:
        write({"id": "a"})
    assert list(tmp_path.iterdir()) == []


def test_a_full_or_closed_standard_output_is_one_line(tmp_path) -> None:
    argv = [sys.executable, "-m", "harness", "lint", "--scenarios", str(SCENARIOS)]
    with open("/dev/full", "w") as full:
        done = subprocess.run(argv, cwd=REPO_ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "harness: standard output could not be written: No space left on device"
    ]
    script = "import os, sys; os.close(1); from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    closed = subprocess.run(
        [sys.executable, "-c", script, *argv[3:]], cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True, timeout=120
    )
    lines = closed.stderr.splitlines()
    assert closed.returncode == 2 and len(lines) == 1 and lines[0].startswith("harness: standard output "), lines
