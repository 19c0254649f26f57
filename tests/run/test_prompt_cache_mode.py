"""The prompt cache as part of the setup (issue 56): a run may set it over its profile
(`--prompt-cache`), run.json records the choice, `repro check` compares the profile as run, a
resumed run keeps the mode, and the mode is said in the resume command."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.__main__ import main
from repro.check.commit import profile_differences
from repro.commands.matrix import parse_switch, resume_command
from repro.core.errors import BadInput
from repro.run.context import RunOptions
from repro.spec.profiles import load_profiles
from tests.fixtures.synthetic import write_bundle

PROFILES = load_profiles()
CPU = PROFILES.get("cpu")


def test_the_switch_takes_on_and_off_only():
    assert parse_switch("--prompt-cache", "on") is True
    assert parse_switch("--prompt-cache", "off") is False
    assert parse_switch("--prompt-cache", None) is None
    with pytest.raises(BadInput, match=r"--prompt-cache yes: expected on or off"):
        parse_switch("--prompt-cache", "yes")


def test_a_bad_mode_is_one_line_and_exit_2(capsys):
    assert main(["matrix", "run", "--prompt-cache", "maybe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--prompt-cache maybe: expected on or off" in err[0]


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
