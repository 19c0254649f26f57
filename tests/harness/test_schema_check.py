"""The harness's own JSON Schema validator (harness.io.schema_check) agrees with `jsonschema` on the
schemas the harness builds, for valid instances (every reference step of the suite) and for
invalid ones made from them (a key dropped, an extra key, a wrong type, a wrong tool)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.io.schema_check import schema_errors
from harness.model.scenario import load_scenarios
from harness.protocols.json_schema import step_schema

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = load_scenarios(ROOT / "scenarios")


def reference_steps(scenario: Any) -> list[dict[str, Any]]:
    steps = []
    for step in scenario.reference:
        value = step if isinstance(step, dict) else {"tool": step.tool, "args": step.args}
        steps.append({"thought": "t", "tool": value["tool"], "args": dict(value.get("args") or {})})
    return steps


def mutations(step: dict[str, Any]) -> list[dict[str, Any]]:
    dropped = copy.deepcopy(step)
    dropped.pop("args")
    extra = copy.deepcopy(step)
    extra["surprise"] = 1
    wrong_type = copy.deepcopy(step)
    wrong_type["thought"] = 7
    wrong_tool = copy.deepcopy(step)
    wrong_tool["tool"] = "no_such_tool"
    variants = [dropped, extra, wrong_type, wrong_tool]
    if step["args"]:
        key = sorted(step["args"])[0]
        missing_arg = copy.deepcopy(step)
        missing_arg["args"].pop(key)
        bad_arg = copy.deepcopy(step)
        bad_arg["args"][key] = {"nested": [None]}
        variants += [missing_arg, bad_arg]
    return variants


def agree(instance: Any, schema: dict[str, Any]) -> None:
    ours = not schema_errors(instance, schema)
    theirs = jsonschema.Draft202012Validator(schema).is_valid(instance)
    assert ours == theirs, f"schema_check says {ours}, jsonschema says {theirs} for {instance!r}"


@pytest.mark.parametrize("scenario", SCENARIOS[::4], ids=lambda s: s.id)
def test_step_schemas_agree_with_jsonschema(scenario):
    schema = step_schema(scenario.agent_spec().tools)
    jsonschema.Draft202012Validator.check_schema(schema)
    for step in reference_steps(scenario):
        agree(step, schema)
        for variant in mutations(step):
            agree(variant, schema)
