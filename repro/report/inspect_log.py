"""Each cell of a bundle as an inspect_ai eval log, built with inspect_ai's own models and written
by its own writer, so `inspect view` shows it and `inspect_ai.log.read_eval_log` reads it back.

This is the only module that imports inspect_ai (the `inspect` extra); `repro export inspect`
loads it when it runs, and says in one line when the extra is missing.

What goes where, and only what the bundle holds (a field it does not have is left out):

- the eval's task is the suite (id, its scenario files' sha256 as the version), its model the
  GGUF (`<engine kind>/<model id>`; quant, size and sha256 in `model_args`), its generation
  config the matrix's decoding, its revision the project commit (origin unknown: left empty),
  its metadata the cell's provenance (engine identity and image, chat template, profile,
  execution, hardware, the bundle manifest's sha256 and signature state, the check verdict and
  its reasons), its status `success` for a VALID cell and `error` otherwise, with the verdict;
- one sample per scenario: the task as input, the conversation as chat messages
  (repro.report.turns: the first prompt, every reply, every tool result; an external suite's own
  messages), the final answer as output, scores `pass` (C or I) and `partial_credit`, and the
  failure layer, type, step, evidence and failed checks as metadata. A sample has no target (the
  bundle holds checks, not a reference answer): it is left empty.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from inspect_ai import __version__ as INSPECT_VERSION
from inspect_ai._util.error import EvalError
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalRevision,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from harness.contracts import FAILURE_LAYER, ScenarioResult, TranscriptEntry, TriggerEntry
from harness.scoring import lab_code
from repro.bundle.records import CellRecord
from repro.report.aggregate import transcript_sha256
from repro.report.export import CellLog
from repro.report.turns import Turn, external_turns, final_answer, transcript_turns
from repro.suites.registry import kind_of

__all__ = ["INSPECT_VERSION", "eval_log", "write_log"]
PASS, FAIL = "C", "I"  # inspect_ai's CORRECT and INCORRECT


def eval_log(cell: CellLog) -> EvalLog:
    """The cell as an EvalLog (not yet written)."""
    samples = [sample(cell, result) for result in cell.results]
    verdict = cell.verdict
    status = "success" if verdict.verdict == "VALID" else "error"
    error = (
        None
        if status == "success"
        else EvalError(message=f"{verdict.verdict}: " + "; ".join(verdict.reasons), traceback="", traceback_ansi="")
    )
    return EvalLog(
        version=2,
        status=status,
        eval=spec(cell, samples),
        plan=EvalPlan(
            name="repro",
            steps=[EvalPlanStep(solver=solver(cell), params={"protocol": protocol(cell)})],
            config=generate_config(cell),
        ),
        results=results(cell) if cell.results else None,
        stats=stats(cell),
        error=error,
        samples=samples,
    )


def write_log(log: EvalLog, path: Path) -> None:
    """Written by inspect_ai's writer to a dot-file beside `path`, then renamed into place: a
    reader never sees half a log."""
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    write_eval_log(log, str(partial), format="eval")
    os.replace(partial, path)


# ---------------------------------------------------------------- the eval


def spec(cell: CellLog, samples: list[EvalSample]) -> EvalSpec:
    run, record = cell.run, cell.record
    suite = cell.spec.suite.id if cell.spec else cell.cell_id
    created = (record.started_at if record else None) or run.started_at
    return EvalSpec(
        eval_id=cell.cell_id,
        run_id=run.run_id,
        created=created,
        task=suite,
        task_id=(record.suite_sha256 or "") if record else "",
        task_version=(record.suite_sha256 or 0) if record else 0,
        task_display_name=f"{suite} ({cell.cell_id})",
        solver=solver(cell),
        tags=["repro", cell.verdict.verdict, run.profile] + ([protocol(cell)] if cell.spec else []),
        dataset=EvalDataset(name=suite, samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model_name(cell),
        model_generate_config=generate_config(cell),
        model_args=model_args(cell),
        config=EvalConfig(),
        revision=EvalRevision(type="git", origin="", commit=run.source.commit, dirty=not run.source.tree_clean)
        if run.source.commit
        else None,
        packages={"repro": run.source.repro_version},
        metadata=provenance(cell),
    )


def model_name(cell: CellLog) -> str:
    """`<engine kind>/<model id>` (inspect_ai names a model by provider and name; a cell whose
    settings do not read is named by its id)."""
    return f"{cell.spec.engine.kind}/{cell.spec.model.id}" if cell.spec else f"unknown/{cell.cell_id}"


def solver(cell: CellLog) -> str:
    """Who played the scenarios: our harness under its protocol, or the external suite's own."""
    if cell.spec is None:
        return "unknown"
    return kind_of(cell.spec.suite).solver(cell.spec.suite, cell.spec.protocol)


def protocol(cell: CellLog) -> str:
    return cell.spec.protocol if cell.spec else ""


def generate_config(cell: CellLog) -> GenerateConfig:
    if cell.spec is None:
        return GenerateConfig()
    decoding = cell.spec.decoding
    return GenerateConfig(temperature=decoding.temperature, seed=decoding.seed, max_tokens=decoding.max_tokens)


def model_args(cell: CellLog) -> dict[str, Any]:
    """The GGUF: its pinned sha256 (and the one verified before the run, when it ran), quant,
    family, parameters, size, and the context the engine ran with."""
    if cell.spec is None:
        return {}
    model = cell.spec.model
    verified = {"gguf_sha256_verified": cell.record.model_sha256_verified} if cell.record else {}
    return {
        "gguf_sha256": model.sha256,
        **verified,
        "quant": model.quant,
        "family": model.family,
        "parameters": model.parameters,
        "file_size": model.file_size,
        "context": cell.spec.decoding.context,
    }


def provenance(cell: CellLog) -> dict[str, Any]:
    """The cell's provenance, as the bundle records it."""
    run, record = cell.run, cell.record
    data: dict[str, Any] = {
        "repro": {
            "run_id": run.run_id,
            "cell_id": cell.cell_id,
            "verdict": cell.verdict.verdict,
            "verdict_reasons": cell.verdict.reasons,
            "manifest_sha256": cell.manifest_sha256,
            "signature": cell.signature,
            "matrix": run.matrix.model_dump(mode="json"),
            "profile": run.profile,
            "profile_settings": run.profile_settings.model_dump(mode="json"),
            "hardware": run.system.model_dump(mode="json"),
            "source": run.source.model_dump(mode="json"),
            "shard": run.shard,
            "only": run.only,
        }
    }
    if cell.spec is not None:
        data["repro"] |= {
            "protocol": cell.spec.protocol,
            "suite": {"id": cell.spec.suite.id},
            "repeat": cell.spec.repeat,
        }
    if record is None:
        return data
    spec = record.cell
    template = run.chat_templates.get(spec.model.id)
    reported = record.engine_settings.reported
    data["repro"] |= {
        "engine": {
            "id": spec.engine.id,
            "kind": spec.engine.kind,
            "label": spec.engine.label,
            "identity": record.engine_identity.model_dump(mode="json") if record.engine_identity else None,
            "image": record.engine_image.model_dump(mode="json", include={"reference", "id", "key", "pinned_by"})
            if record.engine_image
            else None,
        },
        "harness_image": record.harness_image.model_dump(mode="json", include={"reference", "id", "key", "pinned_by"})
        if record.harness_image
        else None,
        "chat_template": {
            "source": template.source if template else None,
            "sha256_recorded": template.sha256 if template else None,
            "sha256_served": reported.get("chat_template_sha256"),
            "renders_tools": template.renders_tools if template else None,
            "renders_tool_calls": template.renders_tool_calls if template else None,
            "caps_reported": reported.get("chat_template_caps"),
        },
        "protocol": spec.protocol,
        "suite": {"id": spec.suite.id, "sha256": record.suite_sha256, "version": suite_version(record)},
        "repeat": spec.repeat,
        "execution": record.execution.model_dump(mode="json") if record.execution else None,
        "accelerator": record.accelerator,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }
    return data


def suite_version(record: CellRecord) -> str | None:
    """An external suite's pinned wheel (name==version); ours is versioned by its sha256 alone."""
    return kind_of(record.cell.suite).release(record.cell.suite)


def results(cell: CellLog) -> EvalResults:
    passed = sum(r.passed for r in cell.results)
    total = len(cell.results)
    partial = [r.partial_score for r in cell.results if r.partial_score is not None]
    scores = [
        EvalScore(
            name="pass",
            scorer="pass",
            scored_samples=total,
            metrics={
                "accuracy": EvalMetric(name="accuracy", value=passed / total),
                "passed": EvalMetric(name="passed", value=passed),
            },
        )
    ]
    if partial:
        mean = round(sum(partial) / len(partial), 3)
        scores.append(
            EvalScore(
                name="partial_credit",
                scorer="partial_credit",
                scored_samples=len(partial),
                unscored_samples=total - len(partial),
                metrics={"mean": EvalMetric(name="mean", value=mean)},
            )
        )
    return EvalResults(total_samples=total, completed_samples=total, scores=scores)


def stats(cell: CellLog) -> EvalStats:
    if cell.record is None:
        return EvalStats()
    usage = {model_name(cell): usage_of(cell.results)} if cell.results else {}
    return EvalStats(
        started_at=cell.record.started_at or "", completed_at=cell.record.finished_at or "", model_usage=usage
    )


def usage_of(results: list[ScenarioResult]) -> ModelUsage:
    tokens_in, tokens_out = sum(r.tokens_in for r in results), sum(r.tokens_out for r in results)
    return ModelUsage(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out)


# ---------------------------------------------------------------- one sample per scenario


def sample(cell: CellLog, result: ScenarioResult) -> EvalSample:
    transcript = cell.transcripts.get(result.id)
    external = cell.external_messages.get(result.id)
    turns = external_turns(external) if external else transcript_turns(transcript or [], result.failure_step)
    answer = final_answer(transcript or [])
    task = next((e.text for e in transcript or [] if isinstance(e, TriggerEntry)), None)
    return EvalSample(
        id=result.id,
        epoch=1,
        input=task if task is not None else "",
        target="",
        messages=messages(turns, result.id),
        output=ModelOutput.from_content(model=model_name(cell), content=answer)
        if answer is not None
        else ModelOutput(model=model_name(cell)),
        scores=scores(result, answer),
        metadata=sample_metadata(cell, result, transcript),
        model_usage={model_name(cell): usage_of([result])},
        total_time=result.seconds,
        error=None,
    )


def scores(result: ScenarioResult, answer: str | None) -> dict[str, Score]:
    explanation = result.failure_evidence or result.error
    found = {
        "pass": Score(
            value=PASS if result.passed else FAIL,
            answer=answer,
            explanation=explanation,
            metadata={"failure_type": result.failure_type},
        )
    }
    if result.partial_score is not None:
        found["partial_credit"] = Score(value=result.partial_score)
    return found


def sample_metadata(cell: CellLog, result: ScenarioResult, transcript: list[TranscriptEntry] | None) -> dict[str, Any]:
    failure = result.failure_type
    return {
        "category": result.category,
        "level": result.level,
        "passed": result.passed,
        "status": result.status,
        "failure_layer": FAILURE_LAYER.get(failure) if failure else None,
        "failure_type": failure,
        "lab_code": lab_code(failure),
        "failure_step": result.failure_step,
        "failure_evidence": result.failure_evidence,
        "error": result.error,
        "engine_fault": result.engine_fault,
        "partial_score": result.partial_score,
        "failed_checks": [check.model_dump(mode="json") for check in result.failed_checks],
        "checks_total": result.checks_total,
        "steps": result.steps,
        "invalid_steps": result.invalid_steps,
        "protocol_stats": result.protocol_stats.model_dump(mode="json") if result.protocol_stats else None,
        "transcript_sha256": transcript_sha256(transcript),
        "repeat": cell.spec.repeat if cell.spec else None,
    }


def messages(turns: list[Turn], scenario: str) -> list[ChatMessage]:
    """Turns as inspect_ai messages, each with an id stable across exports."""
    found: list[ChatMessage] = []
    for number, turn in enumerate(turns):
        base: dict[str, Any] = {"id": f"{scenario}-{number}", "content": turn.text}
        meta = {
            key: value
            for key, value in (
                ("step", turn.step),
                ("problem", turn.problem),
                ("reject", turn.reject),
                ("failing", turn.failing or None),
            )
            if value
        }
        meta |= {"truncated": True} if turn.truncated else {}
        base["metadata"] = meta or None
        if turn.role == "system":
            found.append(ChatMessageSystem(**base))
        elif turn.role == "user":
            found.append(ChatMessageUser(**base))
        elif turn.role == "assistant":
            calls = (
                [ToolCall(id=turn.call.id, function=turn.call.tool, arguments=call_arguments(turn.call.args))]
                if turn.call
                else None
            )
            found.append(ChatMessageAssistant(**base, tool_calls=calls, source="generate"))
        else:
            failed = turn.status not in (None, "ok")
            error = ToolCallError(type="unknown", message=f"status {turn.status}") if failed else None
            found.append(ChatMessageTool(**base, tool_call_id=turn.call_id, function=turn.tool, error=error))
    return found


def call_arguments(args: Any) -> dict[str, Any]:
    """inspect_ai holds a call's arguments as an object; anything else (an external suite may
    record any JSON) is kept under "arguments"."""
    return args if isinstance(args, dict) else {"arguments": args}
