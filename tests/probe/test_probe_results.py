"""The probe results across the container boundary: each action writes its model, the host reads
the file only as the model of the action it asked for, and the contracts import alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import probe
from harness.contracts import EXIT_BAD_INPUT, EXIT_ENGINE_UNREACHABLE, GateProbeResult, PropsResult, ReadyResult
from repro.containers.sandbox import MAX_PROBE_RESULT_BYTES, PROBE_RESULT, read_result

ROOT = Path(__file__).resolve().parents[2]


def _read_result(folder: Path, result_type: type):
    return read_result(folder / PROBE_RESULT, result_type, MAX_PROBE_RESULT_BYTES)


def test_importing_the_contracts_loads_no_other_harness_module():
    code = "import sys, harness.contracts; print(sorted(m for m in sys.modules if m.startswith('harness')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['harness', 'harness.contracts']"


def test_an_unreachable_engine_is_a_ready_result_with_the_named_exit_status(tmp_path: Path):
    out = tmp_path / PROBE_RESULT
    code = probe.main(
        ["ready", "--base-url", "http://127.0.0.1:9", "--out", str(out), "--timeout", "0.2", "--interval", "0.1"]
    )
    assert code == EXIT_ENGINE_UNREACHABLE
    result, why = _read_result(tmp_path, ReadyResult)
    assert result is not None and not why
    assert (result.action, result.ok, result.ready) == ("ready", False, False) and result.polls >= 1


def test_bad_input_is_the_action_model_too(tmp_path: Path):
    out = tmp_path / PROBE_RESULT
    argv = [
        "gate",
        "--base-url",
        "http://127.0.0.1:9",
        "--out",
        str(out),
        "--model",
        "m",
        "--max-seconds",
        "1",
        "--min-tps",
        "1",
    ]
    assert probe.main([*argv, "--protocol", "nonsense"]) == EXIT_BAD_INPUT
    result, _ = _read_result(tmp_path, GateProbeResult)
    assert result is not None and result.error is not None and "unknown protocol" in result.error


@pytest.mark.parametrize(
    "written, why",
    [
        # a field the contract does not know
        ('{"action": "ready", "ok": true, "ready": true, "extra": 1}', "unreadable result"),
        ('{"action": "props", "ok": true}', "unreadable result"),  # another action's result
        ('{"action": "ready", "ok": "yes please"}', "unreadable result"),
        ("[1, 2]", "unreadable result"),
    ],
)
def test_the_host_reads_only_the_asked_actions_model(tmp_path: Path, written: str, why: str):
    (tmp_path / PROBE_RESULT).write_text(written)
    result, reason = _read_result(tmp_path, ReadyResult)
    assert result is None and reason.startswith(why)


def test_a_linked_or_missing_result_is_refused(tmp_path: Path):
    assert _read_result(tmp_path, PropsResult) == (None, "no result file")
    target = tmp_path / "elsewhere.json"
    target.write_text('{"action": "props", "ok": true, "props": {}}')
    (tmp_path / PROBE_RESULT).symlink_to(target)
    result, why = _read_result(tmp_path, PropsResult)
    assert result is None and why.startswith("the result file is refused") and "not a regular file" in why
