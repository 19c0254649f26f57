"""The built server's own `--help` against the command line a CUDA profile gets: every option
whose default llama.cpp chooses per device (or from device memory) is set explicitly, or named
below with the reason it may stay unset. A new llama.cpp build whose help lists another such
option fails here until it is pinned (repro.engines.llamacpp DEVICE_CHOSEN, device_args).

The CPU image's help is read (a CUDA build cannot start without a driver here); both are built
from the same common/arg.cpp, which prints the same options whatever the backend.
"""

from __future__ import annotations

import re

import pytest

from repro.containers import lifecycle as containers
from repro.containers.sandbox import create_kwargs, engine_settings, image_id
from repro.engines.llamacpp import DEVICE_CHOSEN, server_args
from repro.spec.profiles import load_profiles
from tests.engines.test_specs import SMOKE

pytestmark = [pytest.mark.docker, pytest.mark.engine]

T4 = load_profiles().get("gpu-t4")
# Help text that marks an option as chosen per device or from device memory.
PER_DEVICE = re.compile(r"\bauto\b|device|VRAM|\bGPU|fit ", re.IGNORECASE)
# Options whose help matches PER_DEVICE but that may stay unset on a CUDA profile, and why.
LEFT_UNSET = {
    "--device": "the container is given only the profile's GPUs (device requests), so every device it sees is used",
    "--list-devices": "prints and exits",
    "--tensor-split": "with --split-mode none one device holds the model (set on profiles of several GPUs)",
    "--fit-target": "only read when --fit is on (it is off)",
    "--fit-ctx": "only read when --fit is on (it is off)",
    "--kv-unified": "its default (disabled) holds whenever -np is explicit, and it always is",
    "--op-offload": "default enabled on every device, not chosen per device",
    "--lazy-mode": "chosen by tensor size (on-demand rows for tensors over 4 GiB), not by the device; "
    "where rows are read from changes no result",
    "--reasoning": "chosen from the chat template, which the matrix pins (docs/matrix.md), not from the device",
    "--reasoning-format": "chosen from the chat template, not from the device",
    "--log-colors": "chosen by whether the log is a terminal",
    "--log-prompts-dir": "a debugging option, off by default",
    "--mmproj-auto": "no multimodal projector is loaded",
    "--mmproj-device": "no multimodal projector is loaded",
    "--mmproj-offload": "no multimodal projector is loaded",
    "--spec-draft-device": "no draft model is loaded",
    "--spec-draft-ngl": "no draft model is loaded",
}


class HelpOption:
    """One option of `--help`: its flags (every alias) and its help text (continuation lines joined)."""

    def __init__(self, flags: list[str], text: str) -> None:
        self.flags, self.text = flags, text

    @property
    def name(self) -> str:
        longs = [flag for flag in self.flags if flag.startswith("--")]
        return longs[0] if longs else self.flags[0]


HELP_COLUMN = 40  # common/arg.cpp common_arg::to_string: the help starts at column 40, or on the next line
FLAG = re.compile(r"(?:^|,\s+)(-{1,2}[A-Za-z0-9][\w-]*)")


def parse_help(text: str) -> list[HelpOption]:
    """common/arg.cpp's layout: `-fa,   --flash-attn [on|off|auto]` padded to column 40, then
    the help, continued on lines indented to column 40 (a head too long for the column ends its
    line, and the help starts on the next)."""
    options: list[HelpOption] = []
    for line in text.splitlines():
        if line.startswith("-"):
            fits = len(line) > HELP_COLUMN and line[HELP_COLUMN - 3 : HELP_COLUMN] == "   "
            head, rest = (line[:HELP_COLUMN], line[HELP_COLUMN:]) if fits else (line, "")
            flags = FLAG.findall(head)
            if flags:  # not a section header such as "----- speculative params -----"
                options.append(HelpOption(flags, rest.strip()))
        elif options and line.startswith(" " * HELP_COLUMN):
            options[-1].text += " " + line.strip()
    return options


def test_the_help_layout_is_read():
    text = (
        "-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')\n"
        "                                        (env: LLAMA_ARG_FLASH_ATTN)\n"
        "-sm,   --split-mode {none,layer,row,tensor}\n"
        "                                        how to split the model across multiple GPUs, one of:\n"
        "--cache-prompt, --no-cache-prompt       whether to enable prompt caching (default: enabled)\n"
    )
    options = parse_help(text)
    assert [(o.flags, o.name) for o in options] == [
        (["-fa", "--flash-attn"], "--flash-attn"),
        (["-sm", "--split-mode"], "--split-mode"),
        (["--cache-prompt", "--no-cache-prompt"], "--cache-prompt"),
    ]
    assert "default: 'auto'" in options[0].text and "multiple GPUs" in options[1].text


def server_help(docker_client, llama_image_ref, run_id: str) -> str:
    image = image_id(docker_client, llama_image_ref)
    settings = engine_settings(run_id=run_id, cell_id="server-help", mem_limit=512 * 1024**2, nano_cpus=1_000_000_000)
    container = docker_client.containers.create(**create_kwargs(settings, image, ["--help"]))
    try:
        container.start()
        assert containers.wait(container, 60).code == 0
        return container.logs().decode(errors="replace")
    finally:
        containers.remove(container)


def test_every_option_the_server_chooses_per_device_is_set_on_a_cuda_profile(
    docker_client, llama_image_ref, TEST_RUN_ID
):
    options = parse_help(server_help(docker_client, llama_image_ref, TEST_RUN_ID))
    by_flag = {flag: option for option in options for flag in option.flags}
    assert set(DEVICE_CHOSEN) <= set(by_flag), sorted(set(DEVICE_CHOSEN) - set(by_flag))
    argv = server_args(SMOKE.models[0], T4, SMOKE.decoding)
    # the build takes every flag gpu-t4 passes
    assert [flag for flag in argv if flag.startswith("-") and flag not in by_flag] == []
    pinned = {by_flag[flag].name for flag in argv if flag in by_flag}
    assert set(DEVICE_CHOSEN) <= pinned
    per_device = {
        option.name for option in options if PER_DEVICE.search(option.text) or PER_DEVICE.search(" ".join(option.flags))
    }
    unset = sorted(per_device - pinned - set(LEFT_UNSET))
    assert unset == [], f"options chosen per device and left unset on gpu-t4: {unset}"
    assert sorted(set(LEFT_UNSET) - per_device) == []  # every reason is for an option this build has and would flag
