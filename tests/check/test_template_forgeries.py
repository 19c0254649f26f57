"""Forgeries of the chat-template record (bundle format 5), in the manner of test_forgeries.py:
each forgery recomputes every hash a forger can, and must be INVALID under the named rule and
stay out of the tables.

What is left to the record's word, and so not forged here: a consistent swap of the template
text, its sha256 and the engine's reported sha256 together, for a model whose GGUF is not in the
checking machine's store (with the GGUF there, `chat-template-facts` re-reads it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.store.chat_template import derive_facts, template_sha256
from tests.check.test_forgeries import (
    ALL,
    CELL_FILE,
    Forged,
    assert_caught,
    assert_not_rendered,
    cell_dirs,
    edit_cell,
    edit_run,
    read_json,
    rehash,
    row_keys,
)
from tests.fixtures.synthetic import CANARY, write_bundle

CHATML_BUILTIN = (
    "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}"
)


def first_cell(run: Path) -> Path:
    return cell_dirs(run)[0]


def model_of(cell_dir: Path) -> str:
    return str(read_json(cell_dir / CELL_FILE)["cell"]["model"]["id"])


def forge_fallback_template(run: Path) -> list[str]:
    """The engine ran llama.cpp's built-in ChatML, not the GGUF's template."""
    cell_dir = first_cell(run)
    edit_cell(
        cell_dir,
        lambda r: r["engine_settings"]["reported"].update(chat_template_sha256=template_sha256(CHATML_BUILTIN)),
    )
    return [cell_dir.name]


def forge_inflated_capabilities(run: Path) -> Forged:
    """The record says the template renders tools when its own text says otherwise (or the reverse)."""
    model = model_of(first_cell(run))
    edit_run(
        run, lambda r: r["chat_templates"][model].update(renders_tools=not r["chat_templates"][model]["renders_tools"])
    )
    return ALL


def forge_swapped_template_text(run: Path) -> list[str]:
    """Another template's facts, each derived again from its text, while the engine reported the real one."""
    cell_dir = first_cell(run)
    model = model_of(cell_dir)

    def swap(record: dict) -> None:
        recorded = record["chat_templates"][model]
        other = derive_facts(CHATML_BUILTIN, "gguf", recorded["eog_tokens"], recorded["eog_tokens"])
        record["chat_templates"][model] = other.model_dump(mode="json")

    edit_run(run, swap)
    return [d.name for d in cell_dirs(run) if model_of(d) == model]


def forge_dropped_template_record(run: Path) -> list[str]:
    """No template recorded for a model whose cell was scored."""
    cell_dir = first_cell(run)
    model = model_of(cell_dir)
    edit_run(run, lambda r: r["chat_templates"].pop(model))
    return [d.name for d in cell_dirs(run) if model_of(d) == model]


def forge_claimed_pin(run: Path) -> Forged:
    """The record says the template was pinned; the matrix pins none."""
    model = model_of(first_cell(run))
    edit_run(run, lambda r: r["chat_templates"][model].update(source="pinned"))
    return ALL


FORGERIES = [
    pytest.param(forge_fallback_template, "chat-template", id="t1-fallback-template"),
    pytest.param(forge_inflated_capabilities, "chat-template-facts", id="t2-inflated-capabilities"),
    pytest.param(forge_swapped_template_text, "chat-template", id="t3-swapped-template-text"),
    pytest.param(forge_dropped_template_record, "chat-template", id="t4-dropped-template-record"),
    pytest.param(forge_claimed_pin, "chat-template-facts", id="t5-claimed-pin"),
]


@pytest.mark.parametrize(("forge", "rule"), FORGERIES)
def test_template_forgery_is_caught(tmp_path: Path, forge, rule: str) -> None:
    run = write_bundle(tmp_path / "run1")
    keys = row_keys(run)
    forged = forge(run)
    rehash(run)
    assert_caught(check_run(run, Redactor(CANARY)), forged, rule)
    assert_not_rendered(run, tmp_path / "tables", keys, forged)
