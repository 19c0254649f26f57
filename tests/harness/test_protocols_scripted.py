"""Every protocol against the scripted engine over whole suites, through ``python -m harness
run``: our scenarios and the Tholos-Bench files (read in place from ../shared, never copied)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.protocols import PROTOCOLS
from harness.scripted_engine import ScriptedEngine

REPO = Path(__file__).resolve().parents[2]
OURS = REPO / "scenarios"


def run_suite(folder: Path, protocol: str, out: Path, capsys) -> tuple[str, list[dict]]:
    with ScriptedEngine(folder) as engine:
        code = main(
            [
                "run",
                "--scenarios",
                str(folder),
                "--base-url",
                engine.base_url,
                "--model",
                "scripted",
                "--protocol",
                protocol,
                "--out",
                str(out),
                "--scenario-timeout",
                "60",
            ]
        )
    assert code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return capsys.readouterr().out, records


def assert_all_pass(stdout: str, records: list[dict], protocol: str) -> None:
    overall = re.search(r"^Overall: (\d+)/(\d+)$", stdout, re.M)
    assert overall and overall.group(1) == overall.group(2) == str(len(records)), stdout[-2000:]
    assert all(r["protocol_stats"]["protocol"] == protocol and r["protocol_stats"]["valid_tool_call_rate"] == 1.0 for r in records)
    assert all(r["protocol_stats"]["model_turns"] == r["steps"] for r in records)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_our_scenarios_pass_under_every_protocol(protocol, tmp_path, capsys):
    stdout, records = run_suite(OURS, protocol, tmp_path / "out.jsonl", capsys)
    assert len(records) >= 184
    assert_all_pass(stdout, records, protocol)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_tholos_bench_passes_under_every_protocol(protocol, tholos_dir, tmp_path, capsys):
    stdout, records = run_suite(tholos_dir, protocol, tmp_path / "out.jsonl", capsys)
    assert len(records) == 160
    assert_all_pass(stdout, records, protocol)
