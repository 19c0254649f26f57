"""ToolCallBench as an external suite, without Docker: the matrix pin, the task selection, its raw
outputs kept and normalised, its own checks and report re-executed from them, a tampered raw
result caught, and its scripted backend giving the same outcomes through repro's driver as
through its own CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from repro.bundle.layout.loading import load_cell, read_results, read_transcripts
from repro.bundle.layout.reader import BundleReader
from repro.check.verdict import CHECK_TOOLS
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.spec.loading import load_matrix
from repro.spec.matrix import Suite
from repro.suites.external import check_rules as external_check
from repro.suites.external.raw import RAW_INDEX
from repro.suites.external.toolcallbench import FAILURE_MAP
from repro.suites.registry import select
from tests.external.conftest import ALL_TASKS, MATRIX, collect_cell, run_direct, run_driver, tcb_cell, tcb_suite
from tests.fixtures.transcripts import end_of

RAW_DB = "raw.results__results.sqlite"


def test_a_suite_without_external_dumps_exactly_as_before() -> None:
    suite = Suite(id="s", path="scenarios", per_category=1)
    assert "external" not in suite.model_dump(mode="json")  # so no existing cell id changes
    assert tcb_suite().model_dump(mode="json")["external"]["harness"] == "toolcallbench"


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("sha256: 06ef2077", "sha256: 16ef2077", "is the wheel with sha256 06ef2077"),
        (
            "protocols: [native_tools]",
            "protocols: [native_tools, json_schema]",
            "protocols must be native_tools (found json_schema)",
        ),
        ("wheel: toolcallbench==1.0.1", "wheel: toolcallbench==1.0.0", "reads toolcallbench==1.0.1 only"),
    ],
)
def test_the_matrix_refuses_a_pin_or_protocol_the_adapter_cannot_run(
    tmp_path: Path, old: str, new: str, says: str
) -> None:
    text = MATRIX.read_text()
    assert old in text
    path = tmp_path / "m.yaml"
    path.write_text(text.replace(old, new))
    with pytest.raises(BadInput) as caught:
        load_matrix(path)
    assert any(says in line for line in caught.value.lines), caught.value.lines


def test_the_selection_reads_the_wheels_tasks_in_toolcallbench_order(tcb_wheels) -> None:
    selection = select(tcb_suite())
    assert selection.external == "toolcallbench"
    assert selection.ids == ["chain-01", "edit-01", "failure-01", "read-01", "run-01"]  # its own order: by file name
    assert selection.categories == {
        "chain-01": "chain",
        "edit-01": "edit",
        "failure-01": "failure",
        "read-01": "read",
        "run-01": "run",
    }
    assert select(tcb_suite()).sha256 == selection.sha256
    every = select(tcb_suite().model_copy(update={"ids": None, "per_category": 1}))
    assert every.ids == ["chain-01", "edit-01", "failure-01", "read-01", "run-01"]
    assert len(select(tcb_suite().model_copy(update={"ids": None})).ids) == 20


def test_every_toolcallbench_failure_type_maps_to_one_of_ours(tcb_wheels) -> None:
    from repro.suites.external.toolcallbench_check import load

    root = select(tcb_suite()).folder.parents[2]
    families = load(root)["checks"].FAILURE_TYPES
    assert set(FAILURE_MAP) == {*families, "backend_error"}


def evidence(run_dir: Path, record) -> SimpleNamespace:
    from repro.bundle.redact import Redactor
    from repro.suites.references import suite_root

    bundle = BundleReader(run_dir)
    cell_dir, suite_dir = bundle.cell_dir(record.cell.id), suite_root(bundle, bundle.run(), record.cell.suite.id)
    return SimpleNamespace(
        record=record,
        bundle=bundle,
        cell_dir=cell_dir,
        suite_dir=suite_dir,
        cell_id=record.cell.id,
        plan=None,
        redactor=Redactor(),
    )


RECOMPUTING = (
    external_check.rule_suite,
    external_check.rule_raw,
    external_check.rule_normalised,
    external_check.rule_rechecked,
    external_check.rule_report,
)


@pytest.mark.parametrize(
    "profile",
    ["oracle", "bad_edit", "text_call", "invalid_json", "call_limit", "wrong_tool", "no_call", "unknown_tool"],
)
def test_raw_outputs_normalise_and_toolcallbench_checks_re_execute(
    tmp_path: Path, tcb_python: Path, profile: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run_driver(tcb_python, out, profile, ALL_TASKS)
    record = collect_cell(tmp_path / "run", tcb_cell(ALL_TASKS), [out])
    assert record.status == "done", record.reason
    ev = evidence(tmp_path / "run", record)
    assert [problem for rule in RECOMPUTING for problem in rule(ev)] == []
    assert external_check.rule_task_bounds(ev, CHECK_TOOLS) == []
    cell_files = sorted(p.name for p in ev.cell_dir.iterdir())
    assert RAW_DB in cell_files and RAW_INDEX in cell_files and "raw.results__reports__repro.md" in cell_files
    assert (ev.cell_dir / RAW_DB).read_bytes() == (out / "results" / "results.sqlite").read_bytes()  # byte for byte


def rehash(cell_dir: Path, names: list[str]) -> None:
    """What a forger does after changing files: fix the raw index and cell.json's hashes."""
    index = json.loads((cell_dir / RAW_INDEX).read_text())
    for entry in index["files"]:
        if entry["name"] in names:
            entry["sha256"] = sha256_file(cell_dir / entry["name"])
            entry["bytes"] = (cell_dir / entry["name"]).stat().st_size
    (cell_dir / RAW_INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    record = json.loads((cell_dir / "cell.json").read_text())
    for name in [*names, RAW_INDEX]:
        record["files"][name] = sha256_file(cell_dir / name)
    (cell_dir / "cell.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def flip_to_pass(cell_dir: Path, task: str) -> list[str]:
    """Mark a failed run passed in the database and its log, consistently: a forger's best raw edit."""
    db = cell_dir / RAW_DB
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE runs SET passed = 1, outcome_ok = 1, failure_type = 'ok' WHERE task_id = ?", (task,))
    (log,) = [
        p
        for p in cell_dir.iterdir()
        if p.name.startswith("raw.results__logs__") and p.name.endswith(f"__{task}_1.jsonl")
    ]
    lines = log.read_text().splitlines()
    summary = json.loads(lines[-1])
    summary.update({"passed": True, "failure_type": "ok"})
    log.write_text("\n".join([*lines[:-1], json.dumps(summary)]) + "\n")
    return [db.name, log.name]


def test_a_tampered_raw_result_is_caught(tmp_path: Path, tcb_python: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    tasks = ["edit-01", "read-01"]
    run_driver(tcb_python, out, "bad_edit", tasks)
    record = collect_cell(tmp_path / "run", tcb_cell(tasks), [out])
    ev = evidence(tmp_path / "run", record)
    assert [r.passed for r in read_results(ev.cell_dir)] == [False, True]

    changed = flip_to_pass(ev.cell_dir, "edit-01")  # the raw result says pass, scenarios.jsonl still fail
    rehash(ev.cell_dir, changed)
    ev = evidence(tmp_path / "run", load_cell(ev.cell_dir))
    assert any(
        "scenarios.jsonl differs from the raw outputs at edit-01" in p for p in external_check.rule_normalised(ev)
    )
    assert any("passed re-executes as False, recorded True" in p for p in external_check.rule_rechecked(ev))
    assert any("is not the report its raw outputs render" in p for p in external_check.rule_report(ev))

    from repro.suites.external.toolcallbench import ToolCallBench  # the normalised side rewritten to agree

    raw, index = external_check.raw_evidence(ev)
    normalised = ToolCallBench().normalise(raw, index, record.suite_ids, record.cell.protocol)
    (ev.cell_dir / "scenarios.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in normalised.results))
    (ev.cell_dir / "transcripts.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in normalised.transcripts))
    rehash(ev.cell_dir, ["scenarios.jsonl", "transcripts.jsonl"])
    ev = evidence(tmp_path / "run", load_cell(ev.cell_dir))
    assert external_check.rule_normalised(ev) == []  # consistent with itself now ...
    # ... but not with its checks
    assert any("passed re-executes as False, recorded True" in p for p in external_check.rule_rechecked(ev))


@pytest.mark.parametrize("profile", ["oracle", "bad_edit", "text_call", "call_limit"])
def test_repros_driver_and_toolcallbench_itself_give_the_same_outcomes(
    tmp_path: Path, tcb_python: Path, profile: str
) -> None:
    direct = run_direct(tcb_python, tmp_path, profile, ALL_TASKS)
    out = tmp_path / "out"
    out.mkdir()
    run_driver(tcb_python, out, profile, ALL_TASKS)
    record = collect_cell(tmp_path / "run", tcb_cell(ALL_TASKS), [out])
    assert outcomes(tmp_path / "run" / "cells" / record.cell.id) == direct


def outcomes(cell_dir: Path) -> dict[str, tuple[bool, str]]:
    """Task id -> (passed, ToolCallBench's own failure type) as the cell records them: the result
    says passed, the transcript's end keeps the original family beside our mapped type."""
    ends = {line.id: end_of(line).stop for line in read_transcripts(cell_dir)}
    return {r.id: (r.passed, ends[r.id]) for r in read_results(cell_dir)}


def planned_cell(matrix: str):
    from repro.plan.planner import make_plan
    from repro.spec.loading import load_matrix
    from repro.spec.profiles import load_profiles

    return make_plan(load_matrix(matrix), "cpu", load_profiles().get("cpu")).cells[0]


def test_toolcallbench_takes_its_own_backend_for_the_engines_api() -> None:
    """On llama.cpp its OpenAI-compatible backend at the server's root; on Ollama its own `ollama`
    backend (/api/chat), the one place the names are mapped (repro.spec.harnesses `backends`)."""
    from repro.spec.profiles import load_profiles
    from repro.suites.external.toolcallbench import ToolCallBench

    profile = load_profiles().get("cpu")
    cases = (
        (
            "matrix/toolcallbench-smoke.yaml",
            ["--base-url", "http://127.0.0.1:8080/v1", "--model", "m"],
            "openai-compat",
        ),
        (
            "matrix/toolcallbench-ollama.yaml",
            ["--base-url", "http://127.0.0.1:11434", "--model", "m", "--api", "ollama"],
            "ollama",
        ),
    )
    for matrix, client, backend in cases:
        argv = ToolCallBench().task_argv(planned_cell(matrix), client, ["x"], profile)
        assert argv[argv.index("--backend") + 1] == backend
        assert argv[argv.index("--host") + 1] == client[1].removesuffix("/v1")


def test_a_harness_without_a_backend_for_the_engines_api_refuses_it_in_one_line() -> None:
    """Tholos-Bench's runner talks to an OpenAI-compatible server only."""
    from repro.core.errors import BadInput
    from repro.suites.external.tholos import Tholos

    cell = planned_cell("matrix/toolcallbench-ollama.yaml")
    client = ["--base-url", "http://127.0.0.1:11434", "--model", "m", "--api", "ollama"]
    with pytest.raises(BadInput, match="serves the ollama API"):
        Tholos().openai_server(cell, client, "the runner talks to an OpenAI-compatible server")
