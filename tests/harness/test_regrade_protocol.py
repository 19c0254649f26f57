"""Re-grading under the cell's protocol: each raw reply is parsed again (issue 25, items 1 and 2)."""

from __future__ import annotations

import json

import pytest

from harness.contracts import transcript_data
from harness.model.scenario import load_scenarios
from harness.regrade import Replay, regrade
from tests.fixtures.synthetic import ROOT, played


@pytest.mark.parametrize("protocol", ["json_schema", "native_tools", "react", "json_prompt"])
def test_a_real_result_regrades_under_its_own_protocol_only(protocol: str) -> None:
    """A result the protocol's policy really produced re-grades clean under that protocol, and
    differs under another (its replies are read by the other's parser)."""
    (scenario,) = load_scenarios(ROOT / "scenarios", ids=["notes-001"])
    result = played("notes-001", True, protocol)
    assert regrade(scenario, result, replay=Replay(protocol=protocol, max_tokens=384)).agrees
    other = "react" if protocol != "react" else "json_schema"
    assert not regrade(scenario, result, replay=Replay(protocol=other, max_tokens=384)).agrees


def test_a_reply_that_says_another_call_is_a_difference() -> None:
    (scenario,) = load_scenarios(ROOT / "scenarios", ids=["notes-001"])
    result = played("notes-001", True, "native_tools")
    transcript = transcript_data(result.transcript or [])
    step = next(e for e in transcript if e["kind"] == "step")
    reply = json.loads(step["replies"][0]["content"])
    reply["tool_calls"][0]["arguments"] = json.dumps({"title": "Elsewhere", "text": "x", "mode": "replace"})
    step["replies"][0]["content"] = json.dumps(reply, separators=(",", ":"))
    regraded = regrade(scenario, result, transcript, Replay(protocol="native_tools"))
    assert any(d.what == "step 1 args" for d in regraded.differences), regraded.line()


def test_an_unknown_protocol_is_a_difference_not_a_crash() -> None:
    (scenario,) = load_scenarios(ROOT / "scenarios", ids=["notes-001"])
    assert (
        "unknown protocol"
        in regrade(scenario, played("notes-001", True), replay=Replay(protocol="smoke_signals")).line()
    )
