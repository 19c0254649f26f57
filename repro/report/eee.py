"""`repro export eee` and `repro export hf`: VALID cells where people look for eval results.

- **Every Eval Ever** (schema 0.3.0): per cell, the aggregate record (`<cell>.json`) and its
  instance-level lines (`<cell>.samples.jsonl`), written here from the bundle (not by that project's
  converter, whose inspect records its own shipped schema rejects). tests/export/test_eee.py
  validates them against the schema files of the pinned `every-eval-ever` wheel.
- **Hugging Face Hub** `.eval_results/` entries, written with huggingface_hub's own
  `EvalResultEntry` and `eval_result_entries_to_yaml`; `source.url` is the published bundle.

Both carry our pins: the GGUF's sha256, its quant, the chat template's sha256, the engine build,
the hardware and the bundle's manifest sha256. The chat template and the harness are the cell's
setup record's (repro.bundle.setup, as the tables' rows give them): the template the engine served.
The HF `notes` hold the pins one `key: value` a line, which `notes_pins` reads back.
docs/inspect-export.md says what each field holds and which stay empty.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime
from typing import Any

import yaml

from repro import __version__
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.report.export import CellLog

EEE_SCHEMA = "0.3.0"


def pins(cell: CellLog) -> dict[str, str]:
    """What pins the cell's number, as strings (both formats' free-form details take strings only);
    the chat template and the harness as the cell's setup record states them."""
    record, run, setup = cell.record, cell.run, cell.setup
    if record is None or setup is None:
        raise BadInput(f"cell {cell.cell_id}: no record to export")
    spec, template = record.cell, setup.chat_template
    gpus = ", ".join(g.label for g in run.system.gpus) or "none"
    found = {
        "gguf_sha256": spec.model.sha256,
        "quant": spec.model.quant,
        "chat_template_source": template.source if template else "",
        "chat_template_sha256": template.sha256 if template else "",
        "engine": f"{spec.engine.kind} {spec.engine.expected_identity()}",
        "engine_image": record.engine_image.reference if record.engine_image else "",
        "harness": setup.harness.model_dump_json(exclude_none=True) if setup.harness else "",
        "suite_sha256": record.suite_sha256 or "",
        "protocol": spec.protocol,
        "hardware": f"{run.system.cpu_model}, {run.system.cpu_cores} cores, {run.system.machine}; GPU {gpus}",
        "profile": run.profile,
        "bundle_manifest_sha256": cell.manifest_sha256 or "",
        "run_id": run.run_id,
        "cell_id": cell.cell_id,
        "commit": run.source.commit or "",
        "verdict": cell.verdict.verdict,
    }
    return {k: str(v) for k, v in found.items() if v}


def epoch(timestamp: str) -> str:
    return str(int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()))


def evaluation_id(cell: CellLog) -> str:
    return f"{cell.run.run_id}/{cell.cell_id}"


def datastore_path(cell: CellLog) -> str:
    """Where Every Eval Ever's datastore keeps the record: data/<eval>/<developer>/<model>/<uuid>, the
    uuid (version 4 in form) derived from the evaluation id, so an export is the same every time."""
    record = cell.record
    assert record is not None
    spec = record.cell
    digest = hashlib.sha256(evaluation_id(cell).encode()).digest()[:16]
    name = uuid.UUID(bytes=digest, version=4)
    developer = safe_segment(spec.model.family or "unknown")
    return f"data/{safe_segment(spec.suite.id)}/{developer}/{safe_segment(spec.model.id)}/{name}"


def safe_segment(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def aggregate(cell: CellLog, samples_file: str, samples: bytes, url: str | None) -> dict[str, Any]:
    """The cell as Every Eval Ever's aggregate record."""
    record = cell.record
    assert record is not None
    spec = record.cell
    passed, total = sum(r.passed for r in cell.results), len(cell.results)
    decoding = spec.decoding
    source: dict[str, Any] = (
        {"dataset_name": spec.suite.id, "source_type": "url", "url": [url]}
        if url
        else {"dataset_name": spec.suite.id, "source_type": "other"}
    )
    source["additional_details"] = {"suite_sha256": record.suite_sha256 or "", "samples": str(total)}
    pinned = pins(cell)
    return {
        "schema_version": EEE_SCHEMA,
        "evaluation_id": evaluation_id(cell),
        "evaluation_timestamp": cell.run.started_at,
        "retrieved_timestamp": epoch(cell.run.finished_at or cell.run.started_at),
        "source_metadata": {
            "source_name": f"repro bundle {cell.run.run_id}",
            "source_type": "evaluation_run",
            "source_organization_name": "unknown",
            "evaluator_relationship": "third_party",
            "additional_details": pinned,
        },
        "eval_library": {
            "name": "repro",
            "version": __version__,
            "additional_details": {"harness": pinned["harness"]},
        },
        "model_info": {
            "name": spec.model.id,
            "id": spec.model.id,
            "inference_engine": {"name": spec.engine.kind, "version": spec.engine.expected_identity()},
            "additional_details": {
                "deployment_type": "self_deployed",
                "model_availability": "open_weights",
                "gguf_sha256": spec.model.sha256,
                "quant": spec.model.quant,
            },
        },
        "evaluation_results": [
            {
                "evaluation_result_id": f"{evaluation_id(cell)}/passed",
                "evaluation_name": spec.suite.id,
                "source_data": source,
                "metric_config": {
                    "evaluation_description": f"share of the suite's {total} scenarios passed (repro check: VALID)",
                    "metric_id": "repro.passed",
                    "metric_name": "Passed",
                    "metric_kind": "accuracy",
                    "metric_unit": "proportion",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0,
                    "max_score": 1,
                },
                "score_details": {
                    "score": passed / total if total else 0.0,
                    "details": {"passed": str(passed), "total": str(total)},
                },
                "generation_config": {
                    "generation_args": {
                        "temperature": decoding.temperature,
                        "max_tokens": decoding.max_tokens,
                    },
                    "additional_details": {
                        "seed": str(spec.seed),
                        "context": str(decoding.context),
                        "protocol": spec.protocol,
                    },
                },
            }
        ],
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples_file,
            "hash_algorithm": "sha256",
            "checksum": sha256_bytes(samples),
            "total_rows": total,
        },
    }


def instance_lines(cell: CellLog) -> bytes:
    """One Every Eval Ever instance-level line per scenario: its outcome, and its transcript as turns."""
    record = cell.record
    assert record is not None
    spec = record.cell
    lines = []
    for result in cell.results:
        turns = cell.transcripts.get(result.id, [])
        trigger = next((getattr(e, "text", "") for e in turns if getattr(e, "kind", None) == "trigger"), "")
        transcript_sha = sha256_bytes(json.dumps([e.model_dump(mode="json") for e in turns], sort_keys=True).encode())
        messages = transcript_turns(turns)
        line: dict[str, Any] = {
            "schema_version": EEE_SCHEMA,
            "evaluation_id": evaluation_id(cell),
            "model_id": spec.model.id,
            "evaluation_name": spec.suite.id,
            "evaluation_result_id": f"{evaluation_id(cell)}/passed",
            "sample_id": result.id,
            "interaction_type": "agentic",
            "input": {"raw": trigger or "", "reference": []},
            "messages": messages,
            "answer_attribution": [
                {
                    "turn_idx": 0,
                    "source": "repro scenarios.jsonl",
                    "extracted_value": "passed" if result.passed else str(result.failure_type or "failed"),
                    "extraction_method": "repro check (the suite's own scoring, recomputed)",
                    "is_terminal": True,
                }
            ],
            "evaluation": {
                "score": 1.0 if result.passed else 0.0,
                "is_correct": bool(result.passed),
                "num_turns": len(messages),
                "tool_calls_count": result.steps,
            },
            "token_usage": {
                "input_tokens": result.tokens_in,
                "output_tokens": result.tokens_out,
                "total_tokens": result.tokens_in + result.tokens_out,
            },
            "error": result.error,
            "metadata": {"category": result.category, "transcript_sha256": transcript_sha},
        }
        lines.append(json.dumps(line, sort_keys=True))
    return "".join(f"{line}\n" for line in lines).encode()


def transcript_turns(turns: list[Any]) -> list[dict[str, Any]]:
    """Our transcript as Every Eval Ever's turns: the task as the user's, each step as the
    assistant's call and the tool's result, the end as the assistant's last words (the harness's
    first prompt and invalid replies as they are, JSON in the content)."""
    out: list[dict[str, Any]] = []

    def add(role: str, content: str | None, **extra: Any) -> None:
        out.append({"turn_idx": len(out), "role": role, "content": content, **extra})

    for entry in turns:
        data = entry.model_dump(mode="json")
        kind = data.get("kind")
        if kind == "trigger":
            add("user", data.get("text"))
        elif kind == "step":
            call_id = f"step-{data.get('step')}"
            arguments = data.get("args") if isinstance(data.get("args"), dict) else {"args": data.get("args")}
            call = {
                "id": call_id,
                "name": str(data.get("tool")),
                "arguments": {k: str(v) for k, v in arguments.items()},
            }
            add("assistant", data.get("thought"), tool_calls=[call])
            result = data.get("result")
            add(
                "tool",
                result if isinstance(result, str) or result is None else json.dumps(result),
                tool_call_id=[call_id],
            )
        elif kind == "end":
            add("assistant", data.get("detail"))
        else:
            add("system", json.dumps(data, sort_keys=True))
    return out


def hf_entry_yaml(cell: CellLog, dataset_id: str, url: str) -> str:
    """The cell as one `.eval_results/` entry, by huggingface_hub's own EvalResultEntry."""
    try:
        from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml
    except ImportError:
        raise BadInput("repro export hf needs huggingface_hub with EvalResultEntry (2.x)") from None
    record = cell.record
    assert record is not None
    passed, total = sum(r.passed for r in cell.results), len(cell.results)
    found = pins(cell)
    entry = EvalResultEntry(
        dataset_id=dataset_id,
        task_id=record.cell.suite.id,
        value=round(passed / total, 6) if total else 0.0,
        date=(cell.run.finished_at or cell.run.started_at)[:10],
        source_url=url,
        source_name=f"repro bundle {cell.run.run_id}",
        notes=notes_text(found),
    )
    text: str = yaml.dump(eval_result_entries_to_yaml([entry]), Dumper=NotesDumper, sort_keys=False, allow_unicode=True)
    return text


def notes_text(found: dict[str, str]) -> str:
    """The pins as HF notes: one `key: value` a line, in key order; a value that would not read
    back as written (a control character such as a newline, spaces at either end, a leading
    double quote) as a JSON string. `notes_pins` reads them back."""
    return "\n".join(f"{key}: {note_value(found[key])}" for key in sorted(found))


def note_value(value: str) -> str:
    plain = value.isprintable() and value == value.strip() and not value.startswith('"')
    return value if plain else json.dumps(value)


def notes_pins(notes: str) -> dict[str, str]:
    """HF notes back into the pins `notes_text` wrote: each line split at its first ": " (no key
    holds one), a value in double quotes read as a JSON string."""
    found: dict[str, str] = {}
    for line in notes.splitlines():
        key, colon, value = line.partition(": ")
        if not colon:
            raise BadInput(f"notes line {line[:60]!r}: not `key: value`")
        found[key] = json.loads(value) if value.startswith('"') else value
    return found


class NotesDumper(yaml.SafeDumper):
    """yaml.safe_dump's output, with a text of several lines (the notes) as a literal block."""


def block_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


NotesDumper.add_representer(str, block_text)
