"""The chat template as part of the pin, and the capability preflight: one test per rule.

The GGUF files here are small headers written by `write_gguf` (a stand-in for a model file: only
the header is read); tests/engines/test_template_preflight.py boots the real engine with the real
GGUFs.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from repro.core.errors import BadInput
from repro.spec.matrix import ModelSpec
from repro.store.chat_template import (
    derive_facts,
    engine_template_problem,
    protocol_blocker,
    recheck_facts,
    served_sha256,
    server_blocker,
    template_facts,
)
from repro.store.gguf import read_header

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHATML_TOOLS = (
    "{% if tools %}<|im_start|>system\nTools:\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}"
    "<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "{% if message.tool_calls %}{% for call in message.tool_calls %}"
    "<tool_call>{{ call.function.name }}</tool_call>{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}"
)
GEMMA_LIKE = (
    "{% for message in messages %}<start_of_turn>{{ message['role'] }}\n{{ message['content'] }}<end_of_turn>\n"
    "{% endfor %}"
)
VOCAB = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "a", "b"]
TYPES = [3, 3, 3, 3, 3, 1, 1]


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(
    path: Path, *, template: str | None, tokens: list[str] = VOCAB, types: list[int] = TYPES, eos: int = 0
) -> Path:
    """A GGUF v3 header with the tokenizer keys the preflight reads (no tensors)."""
    entries = [
        _string("general.architecture") + struct.pack("<I", 8) + _string("llama"),
        _string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, len(tokens))
        + b"".join(_string(t) for t in tokens),
        _string("tokenizer.ggml.token_type")
        + struct.pack("<IIQ", 9, 5, len(types))
        + b"".join(struct.pack("<i", t) for t in types),
        _string("tokenizer.ggml.eos_token_id") + struct.pack("<II", 4, eos),
        _string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<fff", 0.0, 1.0, 2.0),
    ]
    if template is not None:
        entries.append(_string("tokenizer.chat_template") + struct.pack("<I", 8) + _string(template))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries))
    return path


def model(**update: object) -> ModelSpec:
    spec = {
        "id": "m",
        "family": "Test",
        "parameters": "1M",
        "quant": "Q4_0",
        "file_size": 1,
        "sha256": "a" * 64,
        "sources": [{"path": "x.gguf"}],
    }
    return ModelSpec.model_validate({**spec, **update})


def test_the_header_reader_finds_template_tokens_and_eog(tmp_path: Path) -> None:
    header = read_header(write_gguf(tmp_path / "m.gguf", template=CHATML))
    assert header.chat_template == CHATML
    assert header.special_ids == {"eos": 0}
    # eos, plus llama.cpp's known EOG texts
    assert header.eog_tokens() == ["<end_of_turn>", "<|endoftext|>", "<|im_end|>"]
    assert "<|im_start|>" in header.special_tokens()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"GGML" + b"\0" * 20,
        b"GGUF" + struct.pack("<IQQ", 3, 0, 10**9),
        b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**40),
    ],
    ids=["empty", "bad-magic", "too-many-entries", "huge-key"],
)
def test_a_hostile_header_is_one_line_and_bounded(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(BadInput) as error:
        read_header(path)
    assert "\n" not in str(error.value)


def test_no_template_and_no_pin_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Rule 1: a GGUF without a template, and a matrix that pins none."""
    with pytest.raises(BadInput, match="carries no chat template and the matrix pins none; add chat_template"):
        template_facts(model(), write_gguf(tmp_path / "m.gguf", template=None))


def test_a_pinned_template_is_used_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from repro.store import chat_template

    (tmp_path / "t.jinja").write_text(CHATML_TOOLS)
    monkeypatch.setattr(chat_template, "PROJECT_ROOT", tmp_path)
    digest = hashlib.sha256(CHATML_TOOLS.encode()).hexdigest()
    facts = template_facts(
        model(chat_template={"path": "t.jinja", "sha256": digest}), write_gguf(tmp_path / "m.gguf", template=None)
    )
    assert (facts.source, facts.sha256, facts.renders_tools, facts.renders_tool_calls) == ("pinned", digest, True, True)
    with pytest.raises(BadInput, match="the matrix pins"):
        template_facts(model(chat_template={"path": "t.jinja", "sha256": "b" * 64}), tmp_path / "m.gguf")


def test_a_fallback_template_is_never_the_pinned_one() -> None:
    """Rule 2: the engine reports a template other than the GGUF's (llama.cpp's built-in ChatML)."""
    facts = derive_facts(GEMMA_LIKE, "gguf", ["<end_of_turn>"], VOCAB)
    assert engine_template_problem(facts, served_sha256(facts.text)) is None
    problem = engine_template_problem(facts, "c" * 64)
    assert problem is not None and "a built-in fallback is never valid" in problem


def test_a_template_without_tools_blocks_native_tools_only() -> None:
    """Rule 3: SmolLM2's kind of template: ChatML that never renders `tools`."""
    facts = derive_facts(CHATML, "gguf", ["<|im_end|>"], VOCAB)
    assert not facts.renders_tools and not facts.renders_tool_calls
    blocker = protocol_blocker(facts, "native_tools")
    assert blocker is not None and blocker.startswith("configuration: ") and "does not render the tool list" in blocker
    assert all(protocol_blocker(facts, p) is None for p in ("json_schema", "react", "json_prompt"))
    tools = derive_facts(CHATML_TOOLS, "gguf", ["<|im_end|>"], VOCAB)
    assert protocol_blocker(tools, "native_tools") is None


def test_an_end_of_turn_token_that_is_not_eog_blocks_every_protocol() -> None:
    """Rule 4: ChatML's <|im_end|> where the vocabulary's only EOG token is another (gemma under ChatML)."""
    facts = derive_facts(CHATML_TOOLS, "gguf", ["<eos>", "<end_of_turn>"], VOCAB)
    assert facts.end_of_turn == "<|im_end|>" and not facts.end_of_turn_is_eog
    for protocol in ("json_schema", "native_tools", "react", "json_prompt"):
        blocker = protocol_blocker(facts, protocol)
        assert blocker is not None and "is not an end-of-generation token" in blocker


def test_the_server_capabilities_gate_native_tools() -> None:
    assert server_blocker({"supports_tools": True, "supports_tool_calls": True}, "native_tools") is None
    assert "supports_tools false" in (
        server_blocker({"supports_tools": False, "supports_tool_calls": True}, "native_tools") or ""
    )
    assert server_blocker(None, "native_tools") is not None
    assert server_blocker(None, "react") is None


def test_recorded_facts_are_rederived_from_their_text() -> None:
    facts = derive_facts(CHATML, "gguf", ["<|im_end|>"], VOCAB)
    assert recheck_facts(facts) == []
    forged = facts.model_copy(update={"renders_tools": True, "renders_tool_calls": True})
    assert any("renders_tools" in p for p in recheck_facts(forged))
    swapped = facts.model_copy(update={"text": CHATML_TOOLS})
    assert any("hashes to" in p for p in recheck_facts(swapped))
