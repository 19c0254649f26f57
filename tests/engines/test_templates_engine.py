"""Chat templates against the real engine: what the host reads from each GGUF header and renders
is what llama.cpp b11434 itself uses and reports (`/props` chat_template, chat_template_caps),
and a pinned template file reaches the engine through --chat-template-file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from repro.engines.base import stop_engine
from repro.spec.matrix import ChatTemplatePin
from repro.store.chat_template import protocol_blocker, served_sha256, server_blocker, template_facts
from tests.engines.test_llamacpp import boot
from tests.fixtures.models import QWEN_ID, smoke_model

pytestmark = [pytest.mark.docker, pytest.mark.engine]

ROOT = Path(__file__).resolve().parents[2]
PINNED = "tests/fixtures/templates/chatml-tools.jinja"


def booted_props(docker_client, llama_image_ref, harness_image_ref, run_id, model, gguf) -> dict:
    handle = boot(docker_client, llama_image_ref, harness_image_ref, run_id, model, gguf)
    try:
        return dict(handle.settings)
    finally:
        stop_engine(docker_client, handle)


def test_smollm2_template_is_the_ggufs_and_carries_no_tools(
    docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    facts = template_facts(smollm2_spec, smollm2_gguf)
    settings = booted_props(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf)
    assert settings["chat_template_sha256"] == served_sha256(facts.text) and facts.source == "gguf"
    caps = settings["chat_template_caps"]
    assert (
        (caps["supports_tools"], caps["supports_tool_calls"])
        == (False, False)
        == (facts.renders_tools, facts.renders_tool_calls)
    )
    assert facts.end_of_turn == "<|im_end|>" and facts.end_of_turn_is_eog
    assert protocol_blocker(facts, "native_tools") and server_blocker(caps, "native_tools")
    assert protocol_blocker(facts, "json_schema") is None


def test_qwen_template_renders_tools_as_the_engine_says(
    docker_client,
    llama_image_ref,
    harness_image_ref,
    TEST_RUN_ID,
    qwen_gguf,
):
    model = smoke_model(QWEN_ID)
    facts = template_facts(model, qwen_gguf)
    settings = booted_props(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, model, qwen_gguf)
    assert settings["chat_template_sha256"] == served_sha256(facts.text) and facts.source == "gguf"
    caps = settings["chat_template_caps"]
    assert (
        (caps["supports_tools"], caps["supports_tool_calls"])
        == (True, True)
        == (facts.renders_tools, facts.renders_tool_calls)
    )
    assert facts.end_of_turn == "<|im_end|>" and facts.end_of_turn_is_eog
    assert protocol_blocker(facts, "native_tools") is None and server_blocker(caps, "native_tools") is None


def test_a_pinned_template_reaches_the_engine(
    docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, smollm2_spec, smollm2_gguf
):
    digest = hashlib.sha256((ROOT / PINNED).read_bytes()).hexdigest()
    pinned = smollm2_spec.model_copy(update={"chat_template": ChatTemplatePin(path=PINNED, sha256=digest)})
    facts = template_facts(pinned, smollm2_gguf)
    settings = booted_props(docker_client, llama_image_ref, harness_image_ref, TEST_RUN_ID, pinned, smollm2_gguf)
    assert (
        facts.source == "pinned"
        and settings["chat_template_sha256"] == served_sha256(facts.text)
        and facts.sha256 == digest
    )
    assert settings["chat_template_caps"]["supports_tools"] is True  # this template renders the tools
