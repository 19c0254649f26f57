"""The chat template as part of the pin, and the capability preflight that rests on it.

A number blames the model only when the engine really showed the model the task. What the model
is shown is decided by its chat template: the one the matrix pins (`chat_template: {path,
sha256}`, passed to llama.cpp with `--chat-template-file`) or else the one its GGUF embeds. A
GGUF without a template and no pin is refused (llama.cpp would silently fall back to a built-in
ChatML, which is never valid).

`template_facts(model, gguf)` reads the template and the GGUF's vocabulary on the host and
renders the template with jinja2 (sandboxed) to learn what it can carry:

- `renders_tools`: a tool list passed as `tools` appears in the prompt (a probe tool's name);
- `renders_tool_calls`: an assistant message with `tool_calls` appears in the prompt;
- `end_of_turn`: the special token the template writes right after an assistant's reply, and
  whether it is an end-of-generation token of the vocabulary (else every unconstrained reply
  runs on to the token limit, writing fake turns).

`protocol_blocker(facts, protocol)` says why a protocol cannot be carried (None when it can);
the plan turns that into an exclusion of the configuration layer, never a model failure. The
facts are recorded in run.json with the template's text, so `repro check` re-derives them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.spec.findings import TemplateFacts, TemplateSource
from repro.spec.matrix import ModelSpec

MAX_TEMPLATE_BYTES = 256 * 1024
PROBE_TOOL = "repro_probe_tool_7f3a"
PROBE_CALL = "repro_probe_call_5c1e"
PROBE_REPLY = "REPRO-PROBE-REPLY-91d2"
CONFIGURATION = "configuration: "


def template_sha256(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def served_sha256(text: str) -> str:
    """The sha256 a template is known by once an engine has loaded it: llama.cpp b11434 trims the
    template's leading and trailing whitespace (Qwen2.5's GGUF template ends in a newline that
    `/props` does not report), so both sides are compared trimmed."""
    return template_sha256(text.strip())


# ---------------------------------------------------------------- reading the template


def pinned_template(model: ModelSpec, root: Path | None = None) -> str | None:
    """The text of the template the matrix pins (sha256 verified), or None when none is pinned."""
    pin = model.chat_template
    if pin is None:
        return None
    path = (root or PROJECT_ROOT) / pin.path
    if path.is_symlink() or not path.is_file():
        raise BadInput(f"model {model.id}: chat_template {pin.path} is not a regular file")
    data = path.read_bytes()[: MAX_TEMPLATE_BYTES + 1]
    if len(data) > MAX_TEMPLATE_BYTES:
        raise BadInput(f"model {model.id}: chat_template {pin.path} exceeds {MAX_TEMPLATE_BYTES} bytes")
    if sha256_bytes(data) != pin.sha256:
        raise BadInput(
            f"model {model.id}: chat_template {pin.path} has sha256 {sha256_bytes(data)[:12]}..., "
            f"the matrix pins {pin.sha256[:12]}..."
        )
    return data.decode("utf-8", errors="replace")


def no_template_message(model: ModelSpec) -> str:
    return (
        f"model {model.id}: its GGUF carries no chat template and the matrix pins none; add "
        f"chat_template: {{path: <file in the project>, sha256: <its sha256>}} to the model (docs/matrix.md)"
    )


def template_facts(model: ModelSpec, gguf: Path) -> TemplateFacts:
    """The template a llama.cpp engine will use for `model` (pinned, else the GGUF's) and what it
    can carry; BadInput when there is none."""
    from repro.store.gguf import read_header

    header = read_header(gguf)
    pinned = pinned_template(model)
    if pinned is not None:
        text, source = pinned, "pinned"
    elif header.chat_template is not None:
        text, source = header.chat_template, "gguf"
    else:
        raise BadInput(no_template_message(model))
    return derive_facts(text, source, header.eog_tokens(), header.special_tokens())  # type: ignore[arg-type]


def derive_facts(text: str, source: TemplateSource, eog_tokens: list[str], special_tokens: list[str]) -> TemplateFacts:
    """Render `text` with probe conversations and read off what it carries (once per command for
    the same template and tokens: a matrix naming one model a thousand times renders it once)."""
    return facts_of(text, source, tuple(sorted(set(eog_tokens))), tuple(special_tokens))


@lru_cache(maxsize=256)
def facts_of(
    text: str, source: TemplateSource, eog_tokens: tuple[str, ...], special_tokens: tuple[str, ...]
) -> TemplateFacts:
    """derive_facts of hashable arguments, remembered (TemplateFacts is frozen)."""
    tools = renders(text, tools=True)
    calls = renders(text, calls=True)
    turn_end = end_of_turn(text, special_tokens)
    error = next((e for e in (tools[1], calls[1], turn_end[1]) if e), None)
    return TemplateFacts(
        source=source,
        sha256=template_sha256(text),
        text=text,
        renders_tools=tools[0],
        renders_tool_calls=calls[0],
        end_of_turn=turn_end[0],
        eog_tokens=list(eog_tokens),
        render_error=error,
    )


# ---------------------------------------------------------------- rendering


def _environment() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    def tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False, **_: Any) -> str:
        return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime(2026, 6, 1, 9, 0, tzinfo=UTC).strftime(fmt)
    return env


def render(text: str, messages: list[dict[str, Any]], **context: Any) -> str:
    template = _environment().from_string(text)
    return template.render(messages=messages, bos_token="", eos_token="", add_generation_prompt=False, **context)


def _tool_spec(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    return {"type": "function", "function": {"name": name, "description": "A probe tool.", "parameters": parameters}}


def renders(text: str, *, tools: bool = False, calls: bool = False) -> tuple[bool, str | None]:
    """(whether the probe tool or probe call name appears in the rendered prompt, render error)."""
    user = {"role": "user", "content": "Hello."}
    try:
        if tools:
            return PROBE_TOOL in render(text, [user], tools=[_tool_spec(PROBE_TOOL)]), None
        call: dict[str, Any] = {
            "id": "call_1",
            "type": "function",
            "function": {"name": PROBE_CALL, "arguments": {"x": "1"}},
        }
        messages: list[dict[str, Any]] = [
            user,
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]
        return PROBE_CALL in render(text, messages, tools=[_tool_spec(PROBE_CALL)]), None
    except Exception as error:  # a template that cannot render this is a template that cannot carry it
        return False, f"{type(error).__name__}: {error}"[:300]


def end_of_turn(text: str, special_tokens: Sequence[str]) -> tuple[str | None, str | None]:
    """The special token the template writes right after an assistant's reply (the longest one
    that starts what follows the reply), or None; and the render error, if any."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": PROBE_REPLY},
        {"role": "user", "content": "Again."},
    ]
    try:
        rendered = render(text, messages)
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"[:300]
    at = rendered.find(PROBE_REPLY)
    if at < 0:
        return None, None
    after = rendered[at + len(PROBE_REPLY) :].lstrip(" ")
    matches = [token for token in special_tokens if token and after.startswith(token)]
    return (max(matches, key=len) if matches else None), None


# ---------------------------------------------------------------- the preflight


def protocol_blocker(facts: TemplateFacts, protocol: str) -> str | None:
    """Why the engine cannot carry `protocol` with this template (a configuration fault, never the
    model's), or None when it can."""
    if facts.end_of_turn is None:
        return (
            f"{CONFIGURATION}the chat template ({facts.source}) writes no special token after an assistant's reply, "
            "so the model has no end-of-turn to stop on"
        )
    if not facts.end_of_turn_is_eog:
        return (
            f"{CONFIGURATION}the chat template's end-of-turn token {facts.end_of_turn} is not an end-of-generation "
            f"token of the model (those are {', '.join(facts.eog_tokens) or 'none'}): "
            "every reply would run to max_tokens"
        )
    if protocol == "native_tools" and not facts.renders_tools:
        return (
            f"{CONFIGURATION}the chat template ({facts.source}) does not render the tool list: "
            "under native_tools the model would never see its tools"
        )
    if protocol == "native_tools" and not facts.renders_tool_calls:
        return (
            f"{CONFIGURATION}the chat template ({facts.source}) does not render tool calls: "
            "under native_tools the model would never see its own calls"
        )
    return None


def server_blocker(caps: dict[str, Any] | None, protocol: str) -> str | None:
    """Why the running server's own template capabilities (`/props` chat_template_caps) cannot
    carry `protocol`, or None."""
    if protocol != "native_tools":
        return None
    if not isinstance(caps, dict):
        return (
            f"{CONFIGURATION}the engine reports no chat_template_caps, "
            "so native_tools cannot be shown to carry the tools"
        )
    missing = [name for name in ("supports_tools", "supports_tool_calls") if caps.get(name) is not True]
    if missing:
        return (
            f"{CONFIGURATION}the engine's chat template capabilities say {', '.join(f'{m} false' for m in missing)}: "
            "under native_tools the model would never see its tools"
        )
    return None


def engine_template_problem(facts: TemplateFacts | None, used_sha256: object) -> str | None:
    """Why the template the engine reports using (sha256 of `/props` chat_template) is not the
    pinned or embedded one: a built-in fallback, a template from elsewhere. None when it is."""
    if facts is not None and used_sha256 == served_sha256(facts.text):
        return None
    expected = f"the {facts.source} template {facts.sha256[:12]}..." if facts else "a recorded template"
    return (
        f"{CONFIGURATION}the engine uses chat template {str(used_sha256)[:12]}..., not {expected} "
        "(a built-in fallback is never valid)"
    )


def recheck_facts(facts: TemplateFacts) -> list[str]:
    """What a recorded TemplateFacts claims that its own text does not give (re-rendered here)."""
    problems = []
    if template_sha256(facts.text) != facts.sha256:
        problems.append(
            f"the recorded template text hashes to {template_sha256(facts.text)[:12]}..., "
            f"not the recorded {facts.sha256[:12]}..."
        )
    again = derive_facts(facts.text, facts.source, facts.eog_tokens, _known_specials(facts))
    for field in ("renders_tools", "renders_tool_calls", "end_of_turn"):
        if getattr(again, field) != getattr(facts, field):
            problems.append(
                f"the recorded template gives {field} {getattr(again, field)!r}, "
                f"the record says {getattr(facts, field)!r}"
            )
    return problems


def _known_specials(facts: TemplateFacts) -> list[str]:
    """The special tokens a re-derivation may match: the recorded end-of-turn and EOG tokens (the
    vocabulary itself is not in the bundle; the GGUF is pinned by sha256)."""
    return [*facts.eog_tokens, *([facts.end_of_turn] if facts.end_of_turn else [])]


def stored_template_facts(models: list[ModelSpec], *, required: set[str] = frozenset()) -> dict[str, TemplateFacts]:  # type: ignore[assignment]
    """TemplateFacts of every model of `models` whose verified GGUF is in the store (the plan's
    preflight); a model in `required` must be stored. BadInput names every model without a template."""
    from repro.store.models import is_stored, model_path, stored_path

    facts: dict[str, TemplateFacts] = {}
    problems: list[str] = []
    for model in models:
        if model.id not in required and not is_stored(model):
            continue
        gguf = model_path(model) if model.id in required else stored_path(model.sha256)
        try:
            facts[model.id] = template_facts(model, gguf)
        except BadInput as error:
            problems.append(str(error))
    if problems:
        raise BadInput(problems[0], lines=problems)
    return facts
