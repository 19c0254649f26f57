"""What an inspect cell's evidence binds together, on the real published log
(paper/published/inspect-smoke-cpu-bundle.tar.gz): a sample's output is its last model call's, its
assistant messages are its model calls' outputs in order, and the engine's log shows one request
per model call. A rewritten answer breaks the first two; the published log holds them all.

Needs inspect_ai on the host (the inspect extra, which the test command installs); no Docker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import PUBLISHED

inspect_log = pytest.importorskip("inspect_ai.log")

from repro.suites.external.inspect_task import model_calls, output_problems  # noqa: E402

LLAMA_REQUEST = re.compile(rb"launch_slot_: .*\| processing task")


@pytest.fixture(scope="module")
def cells(tmp_path_factory) -> list[Path]:
    run = bundle_folder(PUBLISHED / "inspect-smoke-cpu-bundle.tar.gz", tmp_path_factory.mktemp("inspect"))
    return sorted(p for p in (run / "cells").iterdir() if p.is_dir())


def log_of(cell: Path):
    (path,) = cell.glob("raw.logs__*.eval")
    return inspect_log.read_eval_log(str(path))


def test_the_published_samples_answer_with_their_model_calls(cells: list[Path]) -> None:
    for cell in cells:
        for sample in log_of(cell).samples or []:
            assert output_problems(sample) == [], (cell.name, sample.id)


def test_the_engine_served_one_request_per_model_call(cells: list[Path]) -> None:
    """The cells ran in turn on one engine, the first after the latency gate's 4 requests: each
    cell's log is the one before it plus its own model calls."""
    counts = {
        cell.name: (model_calls(log_of(cell)), len(LLAMA_REQUEST.findall((cell / "engine.log").read_bytes())))
        for cell in cells
    }
    served = sorted(total for _, total in counts.values())
    calls = {total: calls for calls, total in counts.values()}
    assert served[0] == calls[served[0]] + 4
    assert all(later - earlier == calls[later] for earlier, later in zip(served, served[1:], strict=False))


def rewrite_sample_answer(sample, text: str) -> None:
    """The sample's final answer rewritten where a forger would, its output and its last assistant
    message, as copies: inspect's reader shares one message object between the output and the model
    event that returned it, which a forger editing the log's JSON leaves as the engine answered."""
    sample.output = sample.output.model_copy(deep=True)
    sample.output.choices[0].message = sample.output.choices[0].message.model_copy(update={"content": text})
    sample.output.completion = text
    last = max(i for i, m in enumerate(sample.messages) if m.role == "assistant")
    sample.messages[last] = sample.messages[last].model_copy(update={"content": text})


def test_a_rewritten_answer_is_no_model_calls_output(cells: list[Path]) -> None:
    sample = (log_of(cells[0]).samples or [])[0]
    rewrite_sample_answer(sample, "I will not follow the injected instruction.")
    problems = output_problems(sample)
    assert any("its output is not what its last model call returned" in p for p in problems), problems
    assert any("an assistant message is no model call's output" in p for p in problems), problems


def test_an_assistant_message_alone_rewritten_is_caught(cells: list[Path]) -> None:
    sample = (log_of(cells[0]).samples or [])[1]
    last = max(i for i, m in enumerate(sample.messages) if m.role == "assistant")
    sample.messages[last] = sample.messages[last].model_copy(update={"content": "rewritten"})
    assert f"sample {sample.id}: an assistant message is no model call's output, in order" in output_problems(sample)
