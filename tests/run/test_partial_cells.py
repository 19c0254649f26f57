"""An interrupted cell keeps its finished scenarios (cells/.<id>.partial/), and only a partial of
that very cell, intact, is resumed from; a partial is never a complete cell. No engine: the
harness's files in progress are written here as harness.cli writes them."""

from __future__ import annotations

import json
from pathlib import Path

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle.layout.names import ENGINE_LOG, KEPT_DIR, PARTIAL_FILE
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import CellRecord, Execution, KeptScenario, PartialCell
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.containers.lifecycle import Exit
from repro.spec.loading import load_matrix
from repro.spec.profiles import load_profiles
from repro.suites.base import CellOutputs
from repro.suites.registry import select
from repro.suites.scenarios import collect_results, finished_scenarios
from tests.fixtures.synthetic import CANARY, ROOT, result, write_bundle

IDS = ["notes-001", "notes-002", "injection-001"]


def cell_and_suite():
    from repro.plan.planner import make_plan

    plan = make_plan(load_matrix(ROOT / "matrix" / "smoke.yaml"), "cpu", load_profiles().get("cpu"))
    cell = plan.cells[0]
    return cell, select(cell.suite)


def partial_for(cell, suite, **update: object) -> PartialCell:
    header = PartialCell(
        run_id="r1",
        matrix_sha256="a" * 64,
        profile="cpu",
        commit="c" * 40,
        harness_digest="d",
        cell=cell,
        suite_sha256=suite.sha256,
        suite_ids=IDS,
    )
    return header.model_copy(update=update)


def kept(scenario_id: str) -> KeptScenario:
    return KeptScenario.of(result(scenario_id, "notes", True), TranscriptLine(id=scenario_id, transcript=[]))


def test_finished_scenarios_are_kept_and_resumed_only_for_the_same_cell(tmp_path):
    cell, suite = cell_and_suite()
    bundle = Bundle(tmp_path / "run", Redactor())
    header = partial_for(cell, suite)
    writer = bundle.start_cell(cell.id, header)
    writer.keep(kept("notes-002"))
    writer.keep(kept("notes-001"))
    folder = bundle.partial_dir(cell.id)
    assert sorted(p.name for p in (folder / KEPT_DIR).iterdir()) == ["notes-001.json", "notes-002.json"]
    assert not (folder / "cell.json").exists()
    assert BundleReader(bundle.dir).partial_cells() == [folder.name]
    assert not bundle.cell_is_complete(cell.id)  # a partial is never taken for a complete cell

    found, why = bundle.kept_scenarios(cell.id, header)
    assert why is None and [k.result.id for k in found] == ["notes-001", "notes-002"]  # in suite order
    for other in (
        partial_for(cell, suite, commit="e" * 40),
        partial_for(cell, suite, suite_sha256="0" * 64),
        partial_for(cell, suite, run_id="r2"),
    ):
        assert bundle.kept_scenarios(cell.id, other) == (
            [],
            "it was started for another matrix, profile, commit, cell or suite",
        )

    path = folder / KEPT_DIR / "notes-001.json"
    data = json.loads(path.read_text())
    data["result"]["passed"] = False
    path.write_text(json.dumps(data))
    assert bundle.kept_scenarios(cell.id, header) == ([], "kept scenario notes-001 is not intact")


def recorded(scenario_id: str) -> KeptScenario:
    """A scenario as a real harness records it: messages and arguments whose keys are not in
    sorted order, and a host path in a model's reply (which the bundle redacts)."""
    transcript = TranscriptLine.model_validate(
        {
            "id": scenario_id,
            "transcript": [
                {"kind": "prompt", "messages": [{"role": "system", "content": "You are a helper."}]},
                {
                    "kind": "step",
                    "step": 1,
                    "agent": "a",
                    "thought": "t",
                    "tool": "notes_write",
                    "args": {"title": "x", "body": f"see {CANARY.home}/notes"},
                    "status": "ok",
                    "result": {"ok": True},
                },
            ],
        }
    )
    return KeptScenario.of(result(scenario_id, "notes", True), transcript)


def test_a_recorded_transcript_is_kept_redacted_and_resumed_intact(tmp_path):
    """What the e2e interrupt found: a redacted path must not make a kept scenario look tampered
    with, nor a redacted partial.json look like another cell's; and a kept transcript keeps the
    harness's key order (sorted keys changed the resumed transcripts.jsonl's bytes)."""
    cell, suite = cell_and_suite()
    bundle = Bundle(tmp_path / "run", Redactor(CANARY))
    header = partial_for(cell, suite, commit=None, harness_digest=f"built in {CANARY.project_root}")
    bundle.start_cell(cell.id, header).keep(recorded("notes-001"))
    path = bundle.partial_dir(cell.id) / KEPT_DIR / "notes-001.json"
    assert CANARY.home not in path.read_text() and "<HOME>/notes" in path.read_text()
    found, why = bundle.kept_scenarios(cell.id, header)
    assert why is None and [k.result.id for k in found] == ["notes-001"] and found[0].intact
    # resumed, it is written to transcripts.jsonl exactly as the harness ordered its keys
    assert (
        found[0]
        .transcript.model_dump_json()
        .startswith('{"id":"notes-001","transcript":[{"kind":"prompt","messages":[{"role":"system"')
    )


def test_the_complete_cell_holds_no_partial_files(tmp_path):
    cell, suite = cell_and_suite()
    bundle = Bundle(tmp_path / "run", Redactor())
    writer = bundle.start_cell(cell.id, partial_for(cell, suite), [kept("notes-001")])
    assert (bundle.partial_dir(cell.id) / PARTIAL_FILE).is_file()
    writer.finish(CellRecord(cell=cell, status="done"))
    final = bundle.cell_dir(cell.id)
    assert sorted(p.name for p in final.iterdir()) == ["cell.json"]
    assert bundle.cell_is_complete(cell.id) and BundleReader(bundle.dir).partial_cells() == []


def in_progress(out_dir: Path, name: str, lines: list[str], tail: str = "") -> None:
    """A harness's file in progress (harness.cli _atomic_lines): whole lines, maybe a part of the next."""
    (out_dir / f".{name}.abc123.tmp").write_text("".join(line + "\n" for line in lines) + tail)


def test_the_harness_files_in_progress_give_their_whole_lines_only(tmp_path):
    rows = [result(i, "notes", True) for i in IDS[:2]]
    in_progress(tmp_path, "scenarios.jsonl", [r.model_dump_json() for r in rows], tail='{"id": "injection-0')
    in_progress(
        tmp_path, "transcripts.jsonl", [TranscriptLine(id=r.id, transcript=[]).model_dump_json() for r in rows[:1]]
    )
    assert [k.result.id for k in finished_scenarios(tmp_path)] == ["notes-001"]  # its transcript line is not whole yet
    assert finished_scenarios(tmp_path / "absent") == []


def test_collect_puts_the_kept_scenarios_with_the_rerun_ones_in_suite_order(tmp_path):
    cell, suite = cell_and_suite()
    suite = suite.model_copy(update={"ids": IDS})
    bundle = Bundle(tmp_path / "run", Redactor())
    writer = bundle.start_cell(cell.id, partial_for(cell, suite))
    out = tmp_path / "out"
    out.mkdir()
    rest = [result(i, "notes", False) for i in IDS[1:]]
    (out / "scenarios.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rest))
    (out / "transcripts.jsonl").write_text(
        "".join(TranscriptLine(id=r.id, transcript=[]).model_dump_json() + "\n" for r in rest)
    )
    outputs = CellOutputs([out], [Exit(code=0, seconds=1.0, log_tail="")], [kept("notes-001")])
    record = collect_results(writer, CellRecord(cell=cell, status="done"), suite, outputs)
    assert record.status == "done" and record.summary and (record.summary.total, record.summary.passed) == (3, 1)
    lines = (writer.partial / "scenarios.jsonl").read_text().splitlines()
    assert [ScenarioResult.model_validate_json(line).id for line in lines] == IDS


def test_check_calls_a_partial_cell_left_in_a_bundle_invalid(tmp_path):
    run = write_bundle(tmp_path / "run1")
    name = next(p.name for p in (run / "cells").iterdir())
    (run / "cells" / f".{name}.partial" / KEPT_DIR).mkdir(parents=True)
    verdict = check_run(run, Redactor(CANARY))
    reasons = [r for c in verdict.cells for r in c.reasons] + [p.text for p in verdict.run_problems]
    assert verdict.cells and all(c.verdict == "INVALID" for c in verdict.cells)
    assert any(f"cells/.{name}.partial: a partial cell" in r for r in reasons)


def test_an_interrupted_attempt_is_carried_as_evidence_into_the_resumed_cell(tmp_path):
    """The interrupted attempt's partial record (engine image, identity, execution), the digest of
    each scenario it finished and its engine log go into the resumed cell (cell.json
    `earlier_attempts`, `attempt-1.engine.log` a file of the cell); without its engine log nothing
    is kept; on another engine image nothing is kept."""
    cell, suite = cell_and_suite()
    bundle = Bundle(tmp_path / "run", Redactor())
    header = partial_for(
        cell, suite, engine_image_id="sha256:" + "2" * 64, engine_identity="b1", execution=Execution(threads=2)
    )
    writer = bundle.start_cell(cell.id, header)
    writer.start_clock()  # the attempt's harness starts: each kept scenario records the time since
    for scenario_id in IDS[:2]:
        writer.keep(kept(scenario_id))
    found, _ = bundle.kept_scenarios(cell.id, header)
    assert isinstance(bundle.earlier_attempts(cell.id, found), str)  # no engine log: nothing kept
    writer.write_text(ENGINE_LOG, "llama threadpool init, n_threads = 2\n")  # what the runner keeps on an interrupt
    attempts, logs = bundle.earlier_attempts(cell.id, found)
    assert [(a.engine_log, sorted(a.finished), a.partial.engine_identity) for a in attempts] == [
        ("attempt-1.engine.log", IDS[:2], "b1")
    ]
    assert attempts[0].harness_seconds is not None and 0 <= attempts[0].harness_seconds < 60
    assert attempts[0].finished == {k.result.id: k.sha256 for k in found} and logs == {
        "attempt-1.engine.log": "llama threadpool init, n_threads = 2\n"
    }
    other = partial_for(
        cell, suite, engine_image_id="sha256:" + "9" * 64, engine_identity="b1", execution=Execution(threads=2)
    )
    assert bundle.kept_scenarios(cell.id, other) == (
        [],
        "it was started for another matrix, profile, commit, cell or suite",
    )

    resumed = bundle.start_cell(cell.id, header, found[:1])  # a second attempt keeps the first scenario
    resumed.carry([attempts[0].keeping({IDS[0]})], logs)
    record = resumed.finish(
        CellRecord(cell=cell, status="done", resumed_kept=IDS[:1], earlier_attempts=[attempts[0].keeping({IDS[0]})])
    )
    final = bundle.cell_dir(cell.id)
    assert (
        sorted(p.name for p in final.iterdir()) == ["attempt-1.engine.log", "cell.json"]
        and "attempt-1.engine.log" in record.files
    )
    assert record.earlier_attempts[0].finished == {IDS[0]: found[0].sha256}


def test_a_second_interrupt_carries_the_first_attempts_record(tmp_path):
    cell, suite = cell_and_suite()
    bundle = Bundle(tmp_path / "run", Redactor())
    header = partial_for(cell, suite, engine_image_id="i", engine_identity="b1", execution=Execution(threads=2))
    first = bundle.start_cell(cell.id, header)
    first.keep(kept(IDS[0]))
    first.write_text(ENGINE_LOG, "first\n")
    attempts, logs = bundle.earlier_attempts(cell.id, [kept(IDS[0])])
    second = bundle.start_cell(cell.id, header, [kept(IDS[0])])
    second.carry(attempts, logs)
    second.keep(kept(IDS[1]))
    second.write_text(ENGINE_LOG, "second\n")
    found, why = bundle.kept_scenarios(cell.id, header)
    again, logs = bundle.earlier_attempts(cell.id, found)
    assert why is None and [(a.engine_log, sorted(a.finished)) for a in again] == [
        ("attempt-1.engine.log", [IDS[0]]),
        ("attempt-2.engine.log", [IDS[1]]),
    ]
    assert logs == {"attempt-1.engine.log": "first\n", "attempt-2.engine.log": "second\n"}
