"""The Tholos runner path on the host (no container, no model), on the repro project's stand-in for
Tholos-Bench's runner (tests/standins/tholos_runner/, our own code; not Tholos-Bench's runner): the
stand-in run directly and through repro's driver against one scripted server agree request for
request; its raw outputs normalise and its scoring, taken from its pinned archive, re-executes over
the scripted engine's faults; tampered results are caught; the stand-in packs to its pin. And the
real runner's matrix (matrix/tholos.yaml): its pins and refusals, which need no runner code."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from harness.testing.scripted_engine import ScriptedEngine
from repro.check.verdict import CHECK_TOOLS
from repro.core.errors import BadInput
from repro.spec.harnesses import HARNESSES
from repro.spec.loading import load_matrix
from repro.spec.matrix import ExternalSuite
from repro.suites.external import check_rules as external_check
from repro.suites.external.tholos import RESULTS
from tests.external.conftest import collect_cell
from tests.external.test_toolcallbench import RECOMPUTING, evidence
from tests.external.tholos_support import (
    FIDELITY_IDS,
    MATRIX,
    bodies,
    pack_standin,
    results_by_id,
    run_direct,
    run_driver,
    runner_cell,
    runner_suite,
)
from tests.standins import THOLOS_RUNNER, packed_files

FAULTS = [None, "broken_json", "unknown_tool", "endless", "empty"]


def scripted_run(sources: tuple[Path, Path], tmp_path: Path, ids: list[str], fault: str | None = None) -> Path:
    """The driver against an in-thread scripted engine: its output folder."""
    code_root, scenarios = sources
    out = tmp_path / "out"
    out.mkdir()
    with ScriptedEngine(scenarios, fault=fault) as engine:
        run_driver(code_root, scenarios, out, ids, engine.base_url)
    return out


def test_the_stand_in_directly_and_through_the_driver_send_the_same_requests_and_give_the_same_results(
    tholos_sources, tmp_path: Path
) -> None:
    """The stand-in runner run directly (`python -m tholos bench`) and through repro's driver (its
    observers installed) against the same scripted server: the same request bodies byte for byte and
    the same results. What it proves is that the driver changes nothing of what the runner code it
    wraps sends or computes; it was shown for Tholos-Bench's runner itself with the real runner
    (docs/external-suites.md), and here holds for the stand-in."""
    code_root, scenarios = tholos_sources
    (tmp_path / "direct").mkdir()
    (tmp_path / "driver").mkdir()
    with ScriptedEngine(scenarios, record=tmp_path / "direct.jsonl") as engine:
        direct = run_direct(code_root, scenarios, tmp_path / "direct", FIDELITY_IDS, engine.base_url)
    with ScriptedEngine(scenarios, record=tmp_path / "driver.jsonl") as engine:
        run_driver(code_root, scenarios, tmp_path / "driver", FIDELITY_IDS, engine.base_url)
    assert (tmp_path / "direct.jsonl").read_bytes() == (tmp_path / "driver.jsonl").read_bytes()  # byte for byte
    assert results_by_id(tmp_path / "driver" / RESULTS) == direct
    assert {r["category"] for r in direct.values()} >= {"approval", "injection", "web_research"}
    assert all(
        "cache_prompt" not in body and body["temperature"] == 0 and body["max_tokens"] == 512
        for body in bodies(tmp_path / "direct.jsonl")
    )


@pytest.mark.parametrize("fault", FAULTS)
def test_raw_outputs_normalise_and_the_runners_scoring_re_executes(
    tholos_sources, tmp_path: Path, fault: str | None
) -> None:
    """The driver's raw outputs (the stand-in's) kept byte for byte, normalised, and every
    recomputation of `repro check` agreeing, the stand-in's `evaluate` re-executed from its archive."""
    out = scripted_run(tholos_sources, tmp_path, FIDELITY_IDS, fault)
    record = collect_cell(tmp_path / "run", runner_cell(FIDELITY_IDS), [out])
    assert record.status == "done", record.reason
    ev = evidence(tmp_path / "run", record)
    assert [problem for rule in RECOMPUTING for problem in rule(ev)] == []
    assert external_check.rule_task_bounds(ev, CHECK_TOOLS) == []
    assert (ev.cell_dir / "raw.results.jsonl").read_bytes() == (out / RESULTS).read_bytes()  # byte for byte
    results = {r.id: r for r in ev.bundle.results(record.cell.id)}
    assert all(r.passed for r in results.values()) == (fault is None)
    if fault == "endless":
        assert {r.failure_type for r in results.values() if not r.passed} <= {"stuck", "wrong_outcome", "step_limit"}


def tampered_problems(tmp_path: Path, sources: tuple[Path, Path], change) -> list[str]:
    """The recomputing rules over a cell whose raw results `change` rewrote (every hash agrees)."""
    from tests.external.test_toolcallbench import rehash

    out = scripted_run(sources, tmp_path, FIDELITY_IDS, "broken_json")
    record = collect_cell(tmp_path / "run", runner_cell(FIDELITY_IDS), [out])
    cell_dir = tmp_path / "run" / "cells" / record.cell.id
    lines = [json.loads(line) for line in (cell_dir / "raw.results.jsonl").read_text().splitlines()]
    (cell_dir / "raw.results.jsonl").write_text("".join(json.dumps(change(line)) + "\n" for line in lines))
    rehash(cell_dir, ["raw.results.jsonl"])
    ev = evidence(tmp_path / "run", record)
    return [problem for rule in (external_check.rule_rechecked, external_check.rule_report) for problem in rule(ev)]


def test_a_result_turned_into_a_pass_is_caught_by_the_runners_own_scoring(tholos_sources, tmp_path: Path) -> None:
    """The runner's own scoring, here the stand-in's from its pinned archive, re-executed on the kept
    database fails what the tampered line says passed; its summary no longer renders the same."""

    def passed(line: dict) -> dict:
        return line | {"passed": True, "failed_assertions": []} if line["id"] == "approval-001" else line

    problems = tampered_problems(tmp_path, tholos_sources, passed)
    assert any("evaluate" in p for p in problems), problems
    assert any("console.txt" in p for p in problems), problems  # the summary no longer renders the same


def test_steps_and_tokens_are_held_to_the_messages_and_requests(tholos_sources, tmp_path: Path) -> None:
    def fewer(line: dict) -> dict:
        return line | {"steps": line["steps"] - 1, "tokens": {"in": 1, "out": 1}} if line["id"] == "ask-001" else line

    problems = " ".join(tampered_problems(tmp_path, tholos_sources, fewer))
    assert "steps is" in problems and "tokens are" in problems, problems


def test_a_message_list_that_no_request_extends_is_caught(tholos_sources, tmp_path: Path) -> None:
    def rewritten(line: dict) -> dict:
        if line["id"] != "memory-001":
            return line
        messages = [dict(m) for m in line["messages"]]
        messages[1]["content"] += " (and ignore the owner)"
        return line | {"messages": messages}

    problems = " ".join(tampered_problems(tmp_path, tholos_sources, rewritten))
    assert "messages are not the run's messages" in problems, problems


def test_the_stand_in_packs_to_its_pin(tmp_path: Path) -> None:
    """Packing tests/standins/tholos_runner/ gives exactly the sha256 tests/external/tholos-standin.yaml
    pins (an edit to the stand-in fails here, naming the new sha256); the adapter knows that archive
    as the project's stand-in, not Tholos-Bench's runner, and no bundle carries it."""
    external = runner_suite().external
    assert external is not None and external.archive is not None
    found = pack_standin(tmp_path)
    assert found == external.sha256
    label = HARNESSES["tholos"].known_archives[external.sha256]
    assert "stand-in" in label and "not Tholos-Bench's runner" in label
    assert external.sha256 not in HARNESSES["tholos"].carried_archives and not external.carried
    with tarfile.open(tmp_path / "tholos-standin-src.tar") as archive:
        names = archive.getnames()
    assert (
        all(name.split("/")[0] == "tholos-runner" for name in names) and "tholos-runner/tholos/bench/runner.py" in names
    )
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    said = "a stand-in written by the repro project for its tests; not tholos-bench's runner"
    unnamed = [
        path.name
        for path in packed_files(THOLOS_RUNNER)
        if path.suffix in (".py", ".md", ".toml") and said not in " ".join(path.read_text().split()).casefold()
    ]
    assert not unnamed, f"every file of the stand-in names it as a stand-in; these do not: {unnamed}"


# ---------------------------------------------------------------- the matrix


def test_the_tholos_matrix_pins_the_runner_archive_and_runs_both_harnesses() -> None:
    loaded = load_matrix(MATRIX)
    ours, runner = loaded.matrix.suites
    assert ours.external is None and runner.external is not None and runner.external.archive is not None
    assert runner.external.pin == "archive:tholos-runner-src.tar.gz"
    assert "stand-in" not in HARNESSES["tholos"].known_archives[runner.external.sha256]  # the real runner's
    assert ours.source == runner.source and ours.per_category == runner.per_category == 1
    dumped = runner.external.model_dump()
    assert "wheel" not in dumped and "git" not in dumped


def test_a_wheel_pin_dumps_as_before_so_no_cell_id_changes() -> None:
    pin = ExternalSuite.model_validate(
        {
            "harness": "toolcallbench",
            "wheel": "toolcallbench==1.0.1",
            "sha256": "0" * 64,
            "requirements": {"path": "x", "sha256": "1" * 64},
        }
    )
    assert list(pin.model_dump()) == ["harness", "wheel", "sha256", "requirements"]


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (("max_tokens: 512", "max_tokens: 384"), "sends temperature 0, max_tokens 512 itself"),
        (("temperature: 0\n", "temperature: 0.7\n"), "sends temperature 0, max_tokens 512 itself"),
        (
            ("sha256: 48e6604a17753b65322ba8e73fc03202a1b3811f176e3691f7deb5243609e466", "sha256: " + "a" * 64),
            "reads the archive",
        ),
        (
            (
                "    external:\n      harness: tholos\n      archive:",
                "    external:\n      harness: tholos\n      wheel: tholos==0.1.2\n      archive:",
            ),
            "exactly one of",
        ),
        (("protocols: [json_schema]", "protocols: [json_schema, native_tools]"), "matrix's protocols must be"),
    ],
)
def test_a_matrix_the_runner_cannot_carry_is_refused_in_one_line(
    tmp_path: Path, edit: tuple[str, str], reason: str
) -> None:
    text = MATRIX.read_text()
    assert edit[0] in text
    path = MATRIX.parent / f".test-{tmp_path.name}.yaml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    try:
        with pytest.raises(BadInput) as refused:
            load_matrix(path)
    finally:
        path.unlink()
    assert any(reason in line for line in refused.value.lines), refused.value.lines


def test_an_archive_is_found_in_a_mirror_by_sha256_whatever_its_name(tmp_path: Path, monkeypatch) -> None:
    from repro.core.files import sha256_file
    from repro.spec.matrix import EngineSource
    from repro.store.sources import MIRROR_ENV, fetch_source
    from repro.suites.sources import pack_folder

    (tmp_path / "files" / "a").mkdir(parents=True)
    (tmp_path / "files" / "a" / "x.json").write_text("{}")
    (tmp_path / "mirror").mkdir()
    sha = pack_folder(tmp_path / "files", tmp_path / "mirror" / "any-name.tar")
    # deterministic
    assert pack_folder(tmp_path / "files", tmp_path / "again.tar") == sha == sha256_file(tmp_path / "again.tar")
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BadInput, match=MIRROR_ENV):
        fetch_source(EngineSource(archive="not-here.tar", sha256=sha))
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    assert sha256_file(fetch_source(EngineSource(archive="not-here.tar", sha256=sha))) == sha


# ---------------------------------------------------------------- the runner's JSON mode (json_object), on the stand-in


def test_the_adapter_passes_the_runners_own_json_mode_flag_for_the_cells_protocol() -> None:
    from repro.spec.profiles import load_profiles
    from repro.suites.external.tholos import Tholos

    client = ["--base-url", "http://127.0.0.1:8080", "--model", "m"]
    for protocol, mode in (("json_schema", "schema"), ("json_object", "object")):
        argv = Tholos().task_argv(runner_cell(["ask-001"], protocol), client, ["ask-001"], load_profiles().get("cpu"))
        assert argv[argv.index("--json-mode") + 1] == mode


def test_the_runners_json_mode_runs_and_checks_as_json_object_and_is_held_to_it(tholos_sources, tmp_path: Path) -> None:
    """The adapter's `--json-mode object` through the driver (the stand-in's JSON mode): its requests
    carry a json_object response format, the cell checks, and check holds it to its protocol's."""
    code_root, scenarios = tholos_sources
    out = tmp_path / "out"
    out.mkdir()
    with ScriptedEngine(scenarios, record=tmp_path / "requests.jsonl") as engine:
        run_driver(code_root, scenarios, out, FIDELITY_IDS, engine.base_url, extra=("--json-mode", "object"))
    sent = bodies(tmp_path / "requests.jsonl")
    assert sent and all(body["response_format"] == {"type": "json_object"} for body in sent)
    record = collect_cell(tmp_path / "run", runner_cell(FIDELITY_IDS, "json_object"), [out])
    assert record.status == "done", record.reason
    ev = evidence(tmp_path / "run", record)
    assert [problem for rule in RECOMPUTING for problem in rule(ev)] == []
    assert {r.protocol_stats.protocol for r in ev.bundle.results(record.cell.id) if r.protocol_stats} == {"json_object"}
    as_schema = evidence(
        tmp_path / "run", record.model_copy(update={"cell": record.cell.model_copy(update={"protocol": "json_schema"})})
    )
    as_schema.cell_id = record.cell.id
    assert any("no json_schema response_format" in p for p in external_check.rule_rechecked(as_schema))


def test_a_matrix_may_run_the_runner_in_both_modes_and_our_harness_is_left_out_of_json_object(tmp_path: Path) -> None:
    from repro.plan.planner import make_plan
    from repro.spec.profiles import load_profiles

    text = MATRIX.read_text()
    path = MATRIX.parent / f".test-{tmp_path.name}.yaml"
    path.write_text(text.replace("protocols: [json_schema]", "protocols: [json_schema, json_object]", 1))
    try:
        plan = make_plan(load_matrix(path), "cpu", load_profiles().get("cpu"))
    finally:
        path.unlink()
    ran = {(c.protocol, c.suite.id) for c in plan.cells}
    assert ran == {("json_schema", "tholos-bench"), ("json_schema", "tholos-runner"), ("json_object", "tholos-runner")}
    (excluded,) = [c for c in plan.excluded if c.protocol == "json_object"]
    assert excluded.suite.id == "tholos-bench"
