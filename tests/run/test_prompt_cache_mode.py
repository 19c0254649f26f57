"""The prompt cache as part of the setup (issues 56 and 65): a run may set it over its profile
(`--prompt-cache off|scenario|on`), run.json records the choice, `repro check` compares the profile
as run, a resumed run keeps the mode, and the mode is said in the resume command. Per scenario,
each scenario's first request reads no cache: only a harness that marks a scenario's start runs in
that mode, on an engine whose cache can be switched per request, at one slot."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from repro.__main__ import main
from repro.bundle.records import Execution
from repro.check.commit import profile_differences
from repro.commands.matrix import parse_cache_mode, resume_command
from repro.core.errors import BadInput
from repro.engines.llamacpp import cache_args
from repro.run.context import RunOptions
from repro.spec.harnesses import HARNESSES
from repro.spec.matrix import Suite
from repro.spec.profiles import load_profiles
from repro.suites.base import cache_prompt_argv
from repro.suites.registry import kind_of
from repro.verify.exact import exactness
from tests.fixtures.synthetic import write_bundle

PROFILES = load_profiles()
CPU = PROFILES.get("cpu")


def test_the_switch_takes_off_scenario_and_on_only():
    assert parse_cache_mode("on") is True
    assert parse_cache_mode("off") is False
    assert parse_cache_mode("scenario") == "scenario"
    assert parse_cache_mode(None) is None
    with pytest.raises(BadInput, match=r"--prompt-cache yes: expected off, scenario or on"):
        parse_cache_mode("yes")


def test_a_bad_mode_is_one_line_and_exit_2(capsys):
    assert main(["matrix", "run", "--prompt-cache", "maybe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--prompt-cache maybe: expected off, scenario or on" in err[0]


def test_per_scenario_needs_one_slot():
    with pytest.raises(ValidationError, match="needs slots: 1"):
        CPU.model_copy().model_validate({**CPU.model_dump(), "cache_prompt": "scenario", "slots": 2})


def test_each_mode_reaches_the_engine_and_the_harness():
    modes = {mode: CPU.with_prompt_cache(mode) for mode in (False, "scenario", True)}
    assert [cache_args(p) for p in modes.values()] == [["--no-cache-prompt", "--cache-ram", "0"]] * 2 + [
        ["--cache-prompt"]
    ]
    assert [cache_prompt_argv(p.cache_prompt) for p in modes.values()] == [
        [],
        ["--cache-prompt", "scenario"],
        ["--cache-prompt"],
    ]


def test_the_execution_of_a_cell_per_scenario():
    """Per scenario: ours and ToolCallBench's driver mark each scenario's start; a harness that
    cannot runs with the cache off; Ollama keeps its cache whatever it is asked."""
    per_scenario = CPU.with_prompt_cache("scenario")
    ours = Execution.of(per_scenario, 1, "llama.cpp")
    assert ours.cache_prompt == "scenario" and ours.exact and ours.label().endswith("prompt cache per scenario")
    assert Execution.of(per_scenario, 1, "llama.cpp", marks_scenarios=False).cache_prompt is False
    assert Execution.of(per_scenario, 1, "ollama").cache_prompt is True
    assert not Execution.of(CPU.with_prompt_cache(True), 1, "llama.cpp").exact
    marks = {name: facts.marks_scenarios for name, facts in HARNESSES.items()}
    assert marks == {"toolcallbench": True, "tholos": False, "inspect": False, "lab": False}  # LAB: Ollama only
    assert kind_of(Suite(id="workspace", path="scenarios")).marks_scenarios()


def test_identity_is_promised_per_scenario_against_the_same_mode_only(tmp_path):
    from repro.bundle.setup import SetupRecord, compare

    base = dict(engine_variant="cpu", threads=2, slots=1, engine_build="b1", cpu_model="x")
    claimed = SetupRecord(**base, cache_prompt="scenario")
    assert exactness(claimed, SetupRecord(**base, cache_prompt="scenario"), []) is not None  # unstated pins
    off = SetupRecord(**base, cache_prompt=False)
    found = [row for row in compare(off, SetupRecord(**base, cache_prompt="scenario")) if row.differs]
    assert [row.name for row in found] == ["prompt-cache"]
    assert exactness(off, SetupRecord(**base, cache_prompt="scenario"), found) == "the setups differ"
    assert "run-wide" in str(exactness(claimed, SetupRecord(**base, cache_prompt=True), []))


def test_the_profile_as_run_and_its_resume_command():
    flipped = CPU.with_prompt_cache(not CPU.cache_prompt)
    assert flipped.cache_prompt is not CPU.cache_prompt and CPU.with_prompt_cache(None) is CPU
    options = RunOptions(matrix=Path("matrix/smoke.yaml"), profile="cpu", prompt_cache=False)
    assert resume_command(options).endswith("--resume --prompt-cache off")


def test_check_compares_the_profile_as_the_run_ran_it(tmp_path):
    from repro.bundle.layout.loading import load_run

    record = load_run(write_bundle(tmp_path / "run"))
    other = not record.profile_settings.cache_prompt
    ran = record.model_copy(update={"profile_settings": record.profile_settings.with_prompt_cache(other)})
    assert profile_differences(record.profile_settings, ran) == ["cache_prompt"]  # not said: a silent change
    said = ran.model_copy(update={"prompt_cache": other})
    assert profile_differences(record.profile_settings, said) == []
