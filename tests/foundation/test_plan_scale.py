"""Planning a matrix of thousands of models that name one GGUF: each file read once, each
template rendered once, and `repro matrix plan ... | head -1` ending at once and quietly.

These are not timed tests (benchmarks/plan_scale.py prints the figures, docs/performance.md);
they count the reads that made planning slow.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks.plan_scale import scale_matrix
from repro.spec.loading import load_matrix
from repro.store import chat_template, gguf
from repro.store.models import is_stored

ROOT = Path(__file__).resolve().parents[2]
QWEN = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def write_matrix(tmp_path: Path, count: int) -> Path:
    path = tmp_path / f"scale-{count}.yaml"
    path.write_text(yaml.safe_dump(scale_matrix(count, QWEN), sort_keys=False))
    return path


def test_a_matrix_of_many_models_naming_one_file_reads_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_cache: Path, qwen_gguf: Path
) -> None:
    monkeypatch.setenv("REPRO_CACHE", str(model_cache))  # the session's store, where qwen_gguf fetched it
    loaded = load_matrix(write_matrix(tmp_path, 300))
    assert is_stored(loaded.matrix.models[0])
    gguf.header_of.cache_clear()
    chat_template.facts_of.cache_clear()
    reads: list[Path] = []
    real = gguf.read_metadata
    monkeypatch.setattr(
        gguf, "read_metadata", lambda path, wanted=gguf.wanted_key: reads.append(path) or real(path, wanted)
    )
    facts = chat_template.stored_template_facts(loaded.matrix.models)
    assert len(facts) == 300 and len({fact.sha256 for fact in facts.values()}) == 1
    assert len(reads) == 1 and chat_template.facts_of.cache_info().misses == 1


def test_plan_into_a_closed_pipe_ends_at_once_and_quietly(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path, 2500)  # about 250 kB of plan: more than a pipe holds
    for extra in ([], ["--json"]):
        command = [sys.executable, "-m", "repro", "matrix", "plan", str(matrix), "--profile", "cpu", *extra]
        with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            assert process.stdout is not None and process.stderr is not None
            first = process.stdout.readline()
            process.stdout.close()  # what `head -1` does
            error = process.stderr.read()
            status = process.wait(timeout=120)
        assert first.strip() and error == b"", error.decode()[-500:]
        assert status in (0, 1)  # 1: stopped at the closed pipe; 0: everything was written before it closed
