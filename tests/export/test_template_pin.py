"""One chat-template pin (issue 63): the table row, the Every Eval Ever record and the Hugging Face
entry of a cell name the same template sha256, the one its setup record gives (repro.bundle.setup:
the template the engine served), on llama.cpp and on Ollama; and the HF notes read back into the
pins they were written from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from repro.core.files import sha256_bytes
from repro.engines.ollama import template_for
from repro.report.aggregate import collect
from repro.report.eee import notes_pins, notes_text
from repro.spec.loading import load_matrix
from repro.store.chat_template import derive_facts
from tests.fixtures.synthetic import CANARY, ROOT, STANDIN_TEMPLATE, smoke_variant, synthetic_model, write_bundle


def rewrite(run: Path, edit_run: Callable[[dict], None], edit_cell: Callable[[dict], None]) -> Path:
    """The bundle with run.json and each cell.json edited, its manifest made again."""
    data = json.loads((run / "run.json").read_text())
    edit_run(data)
    (run / "run.json").write_text(json.dumps(data))
    for path in sorted((run / "cells").glob("*/cell.json")):
        cell = json.loads(path.read_text())
        edit_cell(cell)
        path.write_text(json.dumps(cell))
    Bundle(run, Redactor(CANARY)).write_manifest()
    return run


def llamacpp_bundle(run: Path) -> Path:
    """The synthetic llama.cpp bundle, its GGUF template ending in a newline as Qwen2.5's does: the
    engine serves it trimmed, so the GGUF text's sha256 is not the served one."""
    facts = derive_facts(STANDIN_TEMPLATE + "\n", "gguf", ["<|im_end|>"], ["<|im_start|>", "<|im_end|>"])

    def gguf_text(data: dict) -> None:
        data["chat_templates"] = {model: facts.model_dump(mode="json") for model in data["chat_templates"]}

    return rewrite(write_bundle(run), gguf_text, lambda cell: None)


def ollama_bundle(run: Path) -> Path:
    """A synthetic Ollama bundle as a real one records it: no GGUF template in run.json, the
    explicit Go template of the model's family as `/api/show` gave it back, the prompt cache on
    (Ollama's cannot be turned off)."""
    engines = load_matrix(ROOT / "matrix" / "ollama-smoke.yaml").matrix.engines
    models = [synthetic_model(m) for m in load_matrix(ROOT / "matrix" / "smoke.yaml").matrix.models]
    qwen = [m for m in models if m.family == "Qwen2.5"]
    variant = smoke_variant(engines=engines, models=qwen)

    def served(cell: dict) -> None:
        cell["execution"]["cache_prompt"] = True
        cell["engine_settings"]["reported"] = {"version": "0.11.4", "show": {"template": template_for(qwen[0])[0]}}

    return rewrite(write_bundle(run, variant=variant), lambda data: data.update(chat_templates={}), served)


def exported_pins(run: Path, out: Path) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """Per model id, the pins of its EEE record and those its HF entry's notes read back to."""
    from huggingface_hub import parse_eval_result_entries

    assert main(["export", "eee", str(run), "--out", str(out / "eee")]) == 0
    hf = ["export", "hf", str(run), "--out", str(out / "hf"), "--dataset-id", "example/x", "--bundle-url", "u"]
    assert main(hf) == 0
    eee = {}
    for path in (out / "eee").glob("*/data/*/*/*/*.json"):
        record = json.loads(path.read_text())
        eee[record["model_info"]["id"]] = record["source_metadata"]["additional_details"]
    entries = [parse_eval_result_entries(yaml.safe_load(p.read_text()))[0] for p in (out / "hf").glob("*/*.yaml")]
    notes = [notes_pins(entry.notes or "") for entry in entries]
    return eee, {pins["cell_id"].split("__")[0]: pins for pins in notes}


@pytest.mark.parametrize("engine", ["llama.cpp", "ollama"])
def test_table_row_eee_and_hf_name_the_served_template(engine: str, tmp_path: Path) -> None:
    run = (llamacpp_bundle if engine == "llama.cpp" else ollama_bundle)(tmp_path / "run1")
    rows = collect([run]).rows
    eee, hf = exported_pins(run, tmp_path / "out")
    assert rows and sorted(eee) == sorted(hf) == sorted(row.model for row in rows)
    recorded = json.loads((run / "run.json").read_text())["chat_templates"]
    for row in rows:
        assert row.engine_kind == engine and row.chat_template is not None and row.setup is not None
        served = row.chat_template.sha256
        assert served and served == row.setup.chat_template.sha256  # type: ignore[union-attr]
        assert eee[row.model]["chat_template_sha256"] == hf[row.model]["chat_template_sha256"] == served
        assert (
            eee[row.model]["chat_template_source"] == hf[row.model]["chat_template_source"] == row.chat_template.source
        )
        if engine == "llama.cpp":  # the engine's trimmed template, not the GGUF text's
            assert served != recorded[row.model]["sha256"]
        else:  # Ollama's explicit Go template, which run.json does not hold
            assert row.model not in recorded
            (cell,) = (json.loads(p.read_text()) for p in (run / "cells").glob("*/cell.json"))
            assert served == sha256_bytes(cell["engine_settings"]["reported"]["show"]["template"].encode())


def test_notes_read_back_into_the_same_pins() -> None:
    pins = {
        "hardware": "AMD EPYC, 2 cores, x86_64; GPU none",
        "harness": '{"name":"repro","commit":"abc"}',
        "engine_image": "repro/llama-cpp:e",
        "quoted": '"starts with a quote',
        "spaced": "  spaces at both ends ",
        "lines": "one\ntwo: three",
        "separator": "a\u2028b",
        "colon": "key: value; other=x",
    }
    notes = notes_text(pins)
    assert len(notes.splitlines()) == len(pins)
    assert notes_pins(notes) == pins
    assert "hardware: AMD EPYC, 2 cores, x86_64; GPU none" in notes.splitlines()  # plain where it reads back
