"""The Go template repro gives Ollama for Qwen2.5 renders what the GGUF's own chat template renders,
tools included (issue 54). A real Ollama, built from its pinned Go module and booted sealed through
repro's engine path with its trace log on (OLLAMA_DEBUG=2: it logs each prompt it sends its
runner), gets the verified Qwen2.5-Coder-0.5B-Instruct GGUF with `repro.engines.ollama`'s template;
a probe joined to its namespace sends one conversation with tools through `/api/chat`: a system
message, a user's question, the assistant's tool call, the tool's answer, a second question.
The prompt Ollama rendered must equal, byte for byte, the GGUF's embedded Jinja template rendered
by jinja2 with transformers' `tojson` (json.dumps as it is, ", " and ": ", no ASCII escaping).

The tools here use only what Ollama 0.11.4 keeps of a tool (name, description, parameters: type,
properties in name order, required; a property's type, description and enum), which is where the
two can be equal at all (docs/engines.md)."""

from __future__ import annotations

import json
import re

import jinja2
import jinja2.sandbox
import pytest

from repro.engines.ollama import OllamaEngine, template_for
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.store.gguf import read_metadata
from tests.engines.conftest import OLLAMA_MATRIX as MATRIX
from tests.engines.conftest import OLLAMA_SPEC as SPEC

pytestmark = [pytest.mark.docker, pytest.mark.ollama]

QWEN = load_matrix("matrix/ollama-smoke.yaml").matrix.models[0]
PROFILE = load_profiles().get("cpu")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "flour_stock",
            "description": "Kilograms of one kind of flour in the store.",
            "parameters": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "description": "the kind of flour", "enum": ["rye", "wheat"]},
                    "unit": {"type": ["string", "null"], "description": "kg or lb"},
                },
                "required": ["kind", "unit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "End the task with a summary.",
            "parameters": {
                "type": "object",
                "properties": {"summary": {"type": "string", "description": "what was done"}},
                "required": ["summary"],
            },
        },
    },
]
MESSAGES = [
    {"role": "system", "content": "You keep the bakery's store."},
    {"role": "user", "content": "How much rye is there?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "flour_stock", "arguments": {"kind": "rye", "unit": "kg"}}}],
    },
    {"role": "tool", "content": "25"},
    {"role": "user", "content": "And wheat, then finish."},
]
# The probe: the harness image's Python, in the engine's namespace, sends the conversation once.
ASK = """
import json, sys, urllib.request
body = json.dumps({"model": sys.argv[1], "messages": json.loads(sys.argv[2]), "tools": json.loads(sys.argv[3]),
                   "stream": False, "options": {"num_predict": 8}}).encode()
request = urllib.request.Request("http://127.0.0.1:11434/api/chat", body, {"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=300).status)
"""
LOGGED = re.compile(r'msg="completion request" prompt=("(?:[^"\\]|\\.)*")')


def tojson(value, indent=None, separators=None, sort_keys=False) -> str:
    """transformers' `tojson` for chat templates: json.dumps as it is, no ASCII escaping."""
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def jinja_prompt(gguf) -> str:
    source = read_metadata(gguf, lambda key: key == "tokenizer.chat_template")["tokenizer.chat_template"]
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    return env.from_string(source).render(messages=MESSAGES, tools=TOOLS, add_generation_prompt=True)


def test_the_qwen_template_renders_the_ggufs_prompt_tools_included(
    docker_client,
    ollama_image,
    harness_image_ref,
    TEST_RUN_ID,
    qwen_gguf,
) -> None:
    engine = OllamaEngine(docker_client, SPEC, probe_image=harness_image_ref, run_id=TEST_RUN_ID, group_id="template")
    plain = engine.container_kwargs

    def traced(*args, **kwargs) -> dict:
        made = plain(*args, **kwargs)
        return made | {"environment": {**made["environment"], "OLLAMA_DEBUG": "2"}}

    engine.container_kwargs = traced  # type: ignore[method-assign]
    handle = engine.start(
        engine.boot_spec(ollama_image.id, QWEN, qwen_gguf, PROFILE, MATRIX.decoding, profile_name="cpu")
    )
    try:
        assert ".Tools" in template_for(QWEN)[0] and handle.settings["show"]["template"] == template_for(QWEN)[0]
        container = engine.container(handle)
        asked = docker_client.containers.run(
            harness_image_ref.id,
            entrypoint=["python3", "-c", ASK, handle.model_name, json.dumps(MESSAGES), json.dumps(TOOLS)],
            network_mode=f"container:{container.id}",
            remove=True,
        )
        assert asked.decode().strip() == "200"
        logs = container.logs().decode("utf-8", errors="replace")
    finally:
        engine.stop(handle)
    found = LOGGED.findall(logs)
    assert found, logs[-2000:]
    assert json.loads(found[-1]) == jinja_prompt(qwen_gguf)
