"""`repro export eee` and `repro export hf` of the published smoke bundle: every Every Eval Ever
record validates against the schema files of the pinned `every-eval-ever` wheel (read from the
wheel, fetched from PyPI with its hash required: it needs Python 3.12, so it is never installed),
every record carries the cell's pins, and every Hugging Face entry loads with huggingface_hub."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.report.eee import notes_pins

EEE_WHEEL = "every-eval-ever==0.3.0"
EEE_SHA256 = "564b8bc624c1f822f749a769dc69dc058a736e83d920cbeb147c3a30d3152317"
URL = "https://example.org/paper/published/smoke-cpu-bundle.tar.gz"


@pytest.fixture(scope="module")
def eee_schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("eee-wheel")
    (folder / "lock.txt").write_text(f"{EEE_WHEEL} --hash=sha256:{EEE_SHA256}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes", "--only-binary=:all:"]
        + ["--python-version", "3.12", "-r", str(folder / "lock.txt"), "-d", str(folder)],
        check=True,
    )
    (wheel,) = folder.glob("every_eval_ever-0.3.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: json.loads(archive.read(f"every_eval_ever/schemas/{name}"))
            for name in ("eval.schema.json", "instance_level_eval.schema.json")
        }


@pytest.fixture(scope="module")
def eee_export(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eee")
    assert main(["export", "eee", str(smoke_run), "--out", str(out), "--bundle-url", URL]) == 0
    return out


def test_every_record_validates_against_the_pinned_schema(eee_export: Path, eee_schemas: dict[str, dict]) -> None:
    from jsonschema import Draft7Validator

    aggregate = Draft7Validator(eee_schemas["eval.schema.json"])
    instance = Draft7Validator(eee_schemas["instance_level_eval.schema.json"])
    records = sorted(eee_export.glob("*/data/*/*/*/*.json"))
    assert len(records) == 10  # the bundle's VALID cells
    for path in records:
        record = json.loads(path.read_text())
        assert [e.message for e in aggregate.iter_errors(record)] == [], path.name
        samples = path.with_name(f"{path.stem}_samples.jsonl")
        assert (
            record["detailed_evaluation_results"]["file_path"]
            == path.relative_to(path.parents[4]).with_name(samples.name).as_posix()
        )
        lines = [json.loads(line) for line in samples.read_text().splitlines()]
        assert lines and len(lines) == record["detailed_evaluation_results"]["total_rows"]
        for line in lines:
            assert [e.message for e in instance.iter_errors(line)] == [], (path.name, line["sample_id"])
            assert line["evaluation_id"] == record["evaluation_id"]


def test_a_record_carries_the_pins_and_its_score(eee_export: Path) -> None:
    path = sorted(eee_export.glob("*/data/*/*/*/*.json"))[0]
    record = json.loads(path.read_text())
    details = record["source_metadata"]["additional_details"]
    assert {"gguf_sha256", "quant", "chat_template_sha256", "engine", "hardware", "bundle_manifest_sha256"} <= set(
        details
    )
    assert details["verdict"] == "VALID" and details["cell_id"] in record["evaluation_id"]
    result = record["evaluation_results"][0]
    passed, total = int(result["score_details"]["details"]["passed"]), int(result["score_details"]["details"]["total"])
    assert result["score_details"]["score"] == pytest.approx(passed / total)
    samples = path.with_name(f"{path.stem}_samples.jsonl")
    assert sum(json.loads(line)["evaluation"]["is_correct"] for line in samples.read_text().splitlines()) == passed


def test_every_hf_entry_loads_with_huggingface_hub_and_its_notes_read_back(
    smoke_run: Path, eee_export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each entry loads; its notes read back (one `key: value` a line) into the very pins its cell's
    Every Eval Ever record carries, "; " in the hardware value and all."""
    from huggingface_hub import parse_eval_result_entries

    out = tmp_path / "hf"
    args = ["export", "hf", str(smoke_run), "--out", str(out), "--dataset-id", "repro/smoke", "--bundle-url", URL]
    capsys.readouterr()
    assert main(args) == 0  # the 6 EXCLUDED cells are left out and named, as `repro check` passes them
    left_out = capsys.readouterr().err.splitlines()
    assert len(left_out) == 6 and all(line.startswith("left out: EXCLUDED ") for line in left_out)
    records = {
        record["evaluation_id"]: record["source_metadata"]["additional_details"]
        for record in (json.loads(p.read_text()) for p in eee_export.glob("*/data/*/*/*/*.json"))
    }
    entries = sorted(out.glob("*/*.yaml"))
    assert len(entries) == 10
    for path in entries:
        (entry,) = parse_eval_result_entries(yaml.safe_load(path.read_text()))
        assert entry.dataset_id == "repro/smoke" and entry.source_url == URL
        assert 0.0 <= float(entry.value) <= 1.0
        pins = notes_pins(entry.notes or "")
        assert pins == records[f"{pins['run_id']}/{pins['cell_id']}"] and "; GPU " in pins["hardware"]
