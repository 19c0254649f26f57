"""Every protocol against the scripted engine over whole suites, through ``python -m harness
run``: our scenarios and the Tholos-Bench files (read in place from ../shared, never copied); and
every failure mode of the scripted engine over our whole suite, diagnosed as its failure type and
re-graded by ``python -m harness regrade`` without a difference."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.protocols import PROTOCOLS
from harness.testing.scripted_engine import ScriptedEngine

REPO = Path(__file__).resolve().parents[2]
OURS = REPO / "scenarios"


def run_suite(
    folder: Path, protocol: str, out: Path, capsys, model: str = "scripted", extra: tuple[str, ...] = ()
) -> tuple[str, list[dict]]:
    with ScriptedEngine(folder) as engine:
        code = main(
            [
                "run",
                "--scenarios",
                str(folder),
                "--base-url",
                engine.base_url,
                "--model",
                model,
                "--protocol",
                protocol,
                "--out",
                str(out),
                "--scenario-timeout",
                "60",
                *extra,
            ]
        )
    assert code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return capsys.readouterr().out, records


def assert_all_pass(stdout: str, records: list[dict], protocol: str) -> None:
    overall = re.search(r"^Overall: (\d+)/(\d+)$", stdout, re.M)
    assert overall and overall.group(1) == overall.group(2) == str(len(records)), stdout[-2000:]
    assert all(
        r["protocol_stats"]["protocol"] == protocol and r["protocol_stats"]["valid_tool_call_rate"] == 1.0
        for r in records
    )
    assert all(r["protocol_stats"]["model_turns"] == r["steps"] for r in records)
    assert all(
        r["partial_score"] == 1.0 and r["failure_step"] is None and r["failure_evidence"] is None for r in records
    )


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


# Each fault of the scripted engine under one protocol (each protocol twice or so), its type.
FAULT_RUNS = [
    ("text_call", "native_tools", {"text_tool_call"}),
    ("unknown_tool", "react", {"unknown_tool"}),
    ("bad_args", "json_schema", {"invalid_arguments"}),
    ("broken_json", "json_prompt", {"invalid_syntax"}),
    ("empty", "react", {"empty_reply"}),
    ("length", "native_tools", {"text_tool_call"}),  # cut in the middle of a call written as text (flagged truncated)
    ("endless", "json_prompt", {"stuck", "step_limit"}),
]


@pytest.mark.parametrize(("fault", "protocol", "types"), FAULT_RUNS)
def test_each_fault_over_our_suite_is_diagnosed_and_regrades(fault, protocol, types, tmp_path, capsys):
    out, transcripts = tmp_path / "scenarios.jsonl", tmp_path / "transcripts.jsonl"
    _, records = run_suite(
        OURS, protocol, out, capsys, model=f"scripted+fault={fault}", extra=("--transcripts", str(transcripts))
    )
    failed = [r for r in records if not r["passed"]]
    assert failed and {r["failure_type"] for r in failed} <= types, sorted(
        {(r["id"], r["failure_type"]) for r in failed} - {(r["id"], t) for r in failed for t in types}
    )[:5]
    assert all(
        r["failure_step"] is not None and r["failure_evidence"] and r["partial_score"] in (0.0, 0.25, 0.5, 0.75)
        for r in failed
    )
    # a run cut by an invalid reply still passes when every check holds (nothing_to_do scenarios can)
    assert all(r["partial_score"] == 1.0 and r["failure_type"] is None for r in records if r["passed"])
    assert main(["regrade", "--scenarios", str(OURS), "--results", str(out), "--transcripts", str(transcripts)]) == 0, (
        capsys.readouterr().out[-3000:]
    )
