"""Ollama, built from its pinned Go module (or pinned by image digest): `ollama serve` sealed, the
verified GGUF uploaded as a blob and created with an explicit template and parameters, identity
from `/api/version`.

Never `/api/pull`: the model comes only from the verified store, through a probe container joined
to the engine's namespace that mounts the GGUF read-only and posts it to
`/api/blobs/sha256:<hex>`, then `/api/create` with `files`, `template` and `parameters`.

Run for real by tests/engines/test_ollama_real.py and test_ollama_template.py (the stand-in,
tests/engines/test_ollama_standin.py, stays a test double for faults); see docs/engines.md.
"""

from __future__ import annotations

import json
import math
from typing import Any

from harness.contracts import OllamaLoadResult, OllamaShowResult, OllamaVersionResult
from repro.containers.sandbox import GIB, MIB, EngineDied, bind, create_kwargs, engine_settings
from repro.core.errors import BadInput
from repro.engines.base import MODEL_MOUNT, Engine, EngineHandle
from repro.engines.boot import BootSpec
from repro.engines.devices import gpu_device_requests, nano_cpus_for
from repro.spec.findings import TemplateFacts
from repro.spec.matrix import Decoding, ModelSpec

PORT = 11434
MODELS_DIR = "/tmp/ollama/models"
LOAD_TIMEOUT_S = 900
SHOW_TIMEOUT_S = 60

CHATML = "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"
GEMMA3 = (
    "{{- range $i, $_ := .Messages }}\n"
    "{{- $last := eq (len (slice $.Messages $i)) 1 }}\n"
    '{{- if or (eq .Role "user") (eq .Role "system") }}<start_of_turn>user\n'
    "{{ .Content }}<end_of_turn>\n"
    "{{ if $last }}<start_of_turn>model\n"
    "{{ end }}\n"
    '{{- else if eq .Role "assistant" }}<start_of_turn>model\n'
    "{{ .Content }}{{ if not $last }}<end_of_turn>\n"
    "{{ end }}\n"
    "{{- end }}\n"
    "{{- end }}"
)

# Qwen2.5's GGUF chat template, tools included, as a Go template: it renders what the GGUF's own
# Jinja template renders (transformers' `tojson`: json.dumps, its ", " and ": ", no ASCII escaping)
# for a conversation whose tools Ollama keeps whole (tests/engines/test_ollama_template.py holds
# the two equal). Ollama 0.11.4 parses a request's tools into fixed structs: it keeps a tool's
# name, description and parameters (type, properties, required) and a property's type,
# description and enum, drops every other key (additionalProperties, minimum, items, ...), orders
# properties by name, and escapes <, > and & in its `json`; Jinja renders the request as sent.
# So a tool that uses other keys, or lists its properties out of name order, reaches the model
# otherwise than through llama.cpp (docs/engines.md). Written with dot fields (`.ToolCalls`) so
# that Ollama's tool-call parser finds its tag, `<tool_call>`, in the template.
_TOOL_TYPE = (
    "{{ if eq (len $p.Type) 1 }}{{ json (index $p.Type 0) }}{{ else }}"
    "[{{ range $j, $t := $p.Type }}{{ if $j }}, {{ end }}{{ json $t }}{{ end }}]{{ end }}"
)
_TOOL = (
    '{"type": {{ json .Type }}, "function": {"name": {{ json .Function.Name }}'
    '{{ if .Function.Description }}, "description": {{ json .Function.Description }}{{ end }}'
    ', "parameters": {{ "{" }}"type": {{ json .Function.Parameters.Type }}, "properties": {{ "{" }}{{ $sep := "" }}'
    '{{ range $name, $p := .Function.Parameters.Properties }}{{ $sep }}{{ json $name }}: {{ "{" }}"type": '
    + _TOOL_TYPE
    + '{{ if $p.Description }}, "description": {{ json $p.Description }}{{ end }}'
    '{{ if $p.Enum }}, "enum": [{{ range $j, $e := $p.Enum }}{{ if $j }}, {{ end }}{{ json $e }}{{ end }}]{{ end }}}'
    '{{ $sep = ", " }}{{ end }}}'
    '{{ if .Function.Parameters.Required }}, "required": '
    "[{{ range $j, $r := .Function.Parameters.Required }}{{ if $j }}, {{ end }}{{ json $r }}{{ end }}]{{ end }}}}}"
)
_ARGUMENTS = (
    '{{ "{" }}{{ $sep := "" }}{{ range $k, $v := .Function.Arguments }}{{ $sep }}{{ json $k }}: {{ json $v }}'
    '{{ $sep = ", " }}{{ end }}}'
)
QWEN25_TOOLS = (
    '{{ $system := "You are Qwen, created by Alibaba Cloud. You are a helpful assistant." }}'
    '{{ if and .Messages (eq (index .Messages 0).Role "system") }}{{ $system = (index .Messages 0).Content }}{{ end }}'
    "{{ if .Tools }}<|im_start|>system\n{{ $system }}\n\n# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{{ range .Tools }}\n" + _TOOL + "{{ end }}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
    'XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "{{ else }}<|im_start|>system\n{{ $system }}<|im_end|>\n{{ end }}"
    '{{ $previous := "" }}{{ range $i, $_ := .Messages }}{{ $rest := slice $.Messages $i }}'
    '{{ if or (eq .Role "user") (and (eq .Role "system") (ne $i 0)) (and (eq .Role "assistant") (not .ToolCalls)) }}'
    "<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n"
    '{{ else if eq .Role "assistant" }}<|im_start|>assistant{{ if .Content }}\n{{ .Content }}{{ end }}'
    '{{ if .ToolCalls }}{{ range .ToolCalls }}\n<tool_call>\n{"name": "{{ .Function.Name }}", "arguments": '
    + _ARGUMENTS
    + "}\n</tool_call>{{ end }}{{ end }}<|im_end|>\n"
    '{{ else if eq .Role "tool" }}{{ if ne $previous "tool" }}<|im_start|>user{{ end }}'
    "\n<tool_response>\n{{ .Content }}\n</tool_response>"
    '{{ if or (eq (len $rest) 1) (ne (index $rest 1).Role "tool") }}<|im_end|>\n{{ end }}'
    "{{ end }}{{ $previous = .Role }}{{ end }}<|im_start|>assistant\n"
)

# Explicit Go templates and stop sequences per model family (Ollama templates are Go templates,
# not the GGUF's Jinja template, so they are written out here rather than guessed by the server).
TEMPLATES: dict[str, tuple[str, list[str]]] = {
    "smollm2": (CHATML, ["<|im_start|>", "<|im_end|>"]),
    "qwen2.5": (QWEN25_TOOLS, ["<|im_start|>", "<|im_end|>"]),
    "gemma 3": (GEMMA3, ["<end_of_turn>"]),
    "gemma3": (GEMMA3, ["<end_of_turn>"]),
}


def template_for(model: ModelSpec) -> tuple[str, list[str]]:
    family = model.family.strip().lower()
    if family in TEMPLATES:
        return TEMPLATES[family]
    raise BadInput(
        f"model {model.id}: no explicit Ollama template for family '{model.family}' (known: "
        f"{', '.join(sorted(TEMPLATES))})"
    )


def ollama_blocker(model: ModelSpec, protocol: str) -> str | None:
    """The capability preflight for Ollama: native_tools needs a Go template that renders the
    tool list (`.Tools`); a family without an explicit template cannot run at all."""
    try:
        template, _ = template_for(model)
    except BadInput as error:
        return f"configuration: {error}"
    if protocol == "native_tools" and ".Tools" not in template:
        return (
            f"configuration: the explicit Ollama template for family '{model.family}' does not render .Tools: "
            "under native_tools the model would never see its tools"
        )
    return None


def model_parameters(model: ModelSpec, decoding: Decoding, threads: int | None = None) -> dict[str, Any]:
    """The created model's defaults: the matrix's decoding, the family's stops, and the profile's
    threads (`num_thread`; without it Ollama chooses from the machine's cores)."""
    _, stop = template_for(model)
    return {
        "num_ctx": decoding.context,
        "temperature": decoding.temperature,
        "seed": decoding.seed,
        "num_predict": decoding.max_tokens,
        "stop": stop,
        **({"num_thread": threads} if threads is not None else {}),
    }


def ollama_model_name(model: ModelSpec) -> str:
    return f"repro-{model.id}:{model.sha256[:12]}"


class OllamaEngine(Engine):
    kind = "ollama"
    port = PORT
    api = "ollama"
    health_path = "/api/version"

    @classmethod
    def preflight(cls, model: ModelSpec, protocol: str, facts: TemplateFacts | None) -> str | None:
        """Ollama renders the matrix's explicit Go template, not the GGUF's (ollama_blocker)."""
        return ollama_blocker(model, protocol)

    def model_name(self, model: ModelSpec) -> str:
        return ollama_model_name(model)

    @classmethod
    def served_template(cls, reported: dict[str, Any]) -> str | None:
        """The Go template `/api/show` gave back at boot (repro's explicit one for the family)."""
        show = reported.get("show")
        template = show.get("template") if isinstance(show, dict) else None
        return template if isinstance(template, str) else None

    def container_kwargs(
        self, launch: BootSpec, *, host_cpus: int | None = None, name: str | None = None
    ) -> dict[str, Any]:
        profile = launch.profile
        # The uploaded blob lives in the tmpfs: size it for the model plus room for manifests.
        tmpfs_mib = math.ceil(launch.model.file_size * 1.1 / MIB) + 512
        settings = engine_settings(
            run_id=self.run_id,
            cell_id=self.group_id,
            mem_limit=int(profile.memory_gb * GIB) + tmpfs_mib * MIB,
            nano_cpus=nano_cpus_for(profile, host_cpus),
            tmpfs_size=f"{tmpfs_mib}m",
            env={
                "OLLAMA_HOST": f"127.0.0.1:{self.port}",
                "OLLAMA_MODELS": MODELS_DIR,
                "OLLAMA_KEEP_ALIVE": "-1",
                "OLLAMA_NUM_PARALLEL": str(profile.slots),
                "OLLAMA_MAX_LOADED_MODELS": "1",
                "OLLAMA_NOPRUNE": "1",
                "OLLAMA_CONTEXT_LENGTH": str(launch.decoding.context),
            },
        )
        return create_kwargs(
            settings,
            launch.image,
            ["serve"],
            name=name,
            working_dir="/tmp",
            device_requests=gpu_device_requests(profile, self.replica),
        )

    def identity(self, handle: EngineHandle) -> str:
        result = self.probe(
            handle, ["ollama-version", "--base-url", self.base_url], OllamaVersionResult, timeout=SHOW_TIMEOUT_S
        )
        if not result.ok:
            raise EngineDied(f"engine {self.spec.id}: /api/version failed: {result.error}")
        return result.version or ""

    def load_argv(self, model: ModelSpec, decoding: Decoding, threads: int | None = None) -> list[str]:
        template, _ = template_for(model)
        return [
            "ollama-load",
            "--base-url",
            self.base_url,
            "--gguf",
            MODEL_MOUNT,
            "--sha256",
            model.sha256,
            "--name",
            self.model_name(model),
            "--template",
            template,
            "--parameters",
            json.dumps(model_parameters(model, decoding, threads), sort_keys=True),
            "--request-timeout",
            str(LOAD_TIMEOUT_S),
        ]

    def prepare_model(self, handle: EngineHandle, launch: BootSpec) -> dict[str, Any]:
        model = launch.model
        mounts = [bind(launch.gguf, MODEL_MOUNT, read_only=True)]
        argv = self.load_argv(model, launch.decoding, launch.profile.threads)
        result = self.probe(handle, argv, OllamaLoadResult, timeout=LOAD_TIMEOUT_S + 60, mounts=mounts)
        if not result.ok:
            raise EngineDied(f"engine {self.spec.id}: loading {model.id} failed at {result.stage}: {result.error}")
        return result.model_dump(mode="json", include={"blob", "uploaded", "model", "create"})

    def effective_settings(self, handle: EngineHandle) -> dict[str, Any]:
        result = self.probe(
            handle,
            ["ollama-show", "--base-url", self.base_url, "--name", handle.model_name],
            OllamaShowResult,
            timeout=SHOW_TIMEOUT_S,
        )
        if not result.ok:
            raise EngineDied(f"engine {self.spec.id}: /api/show failed: {result.error}")
        return {"version": handle.identity, "show": result.show}
