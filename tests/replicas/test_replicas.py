"""Replicas and workers without an engine: how many fit, how scenarios are dealt and put back,
how several harness containers are waited for, and what each worker's output must be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.bundle.records import CellRecord, Execution
from repro.containers import lifecycle as containers
from repro.core.errors import BadInput
from repro.engines.llamacpp import server_args
from repro.plan.replicas import capacity, deal, in_suite_order, replica_count
from repro.spec.profiles import load_profiles

PROFILES = load_profiles()
CPU, CPU_1T, T4 = PROFILES.get("cpu"), PROFILES.get("cpu-1t"), PROFILES.get("gpu-t4")
SMOLLM2_BYTES = 98_362_432


def test_replicas_never_put_more_engine_threads_than_cores_on_the_machine():
    assert replica_count(None, CPU_1T, host_cpus=2, model_bytes=SMOLLM2_BYTES) == 2
    assert replica_count(None, CPU, host_cpus=2, model_bytes=SMOLLM2_BYTES) == 1
    assert replica_count(None, CPU, host_cpus=16, model_bytes=SMOLLM2_BYTES) == 8
    assert replica_count(1, CPU, host_cpus=1, model_bytes=SMOLLM2_BYTES) == 1  # one engine always runs
    with pytest.raises(BadInput, match=r"--replicas 2: 2 thread\(s\) per engine on 2 core\(s\); at most 1 fit"):
        replica_count(2, CPU, host_cpus=2, model_bytes=SMOLLM2_BYTES)


def test_gpu_replicas_are_bounded_by_gpu_memory_too():
    # 16 GB T4, 4 threads per engine: 64 cores leave the GPU memory as the bound.
    fits = capacity(T4, host_cpus=64, model_bytes=5 * 1024**3)
    assert fits == 2  # 6 GiB each in 90% of 16 GiB
    with pytest.raises(BadInput, match="6.0 GiB per replica in 16 GB of GPU memory"):
        replica_count(3, T4, host_cpus=64, model_bytes=5 * 1024**3)


def test_a_profile_without_pinned_threads_gets_one_engine():
    unpinned = CPU.model_copy(update={"threads": None})
    assert replica_count(None, unpinned, host_cpus=8, model_bytes=SMOLLM2_BYTES) == 1
    with pytest.raises(BadInput, match="pins its threads"):
        replica_count(2, unpinned, host_cpus=8, model_bytes=SMOLLM2_BYTES)


def test_scenarios_are_dealt_round_robin_and_put_back_in_suite_order():
    ids = ["a", "b", "c", "d", "e"]
    assert deal(ids, 2) == [["a", "c", "e"], ["b", "d"]]
    assert deal(ids, 1) == [ids]
    assert deal(["a"], 4) == [["a"]]  # no empty share

    class Row:
        def __init__(self, id: str) -> None:
            self.id = id

    back = in_suite_order([Row(i) for shard in deal(ids, 3) for i in shard], ids)
    assert [r.id for r in back] == ids


def test_the_engine_command_line_carries_slots_with_the_full_context_per_slot():
    from repro.spec.matrix import Decoding, ModelSpec

    model = ModelSpec.model_validate(
        {
            "id": "m",
            "family": "f",
            "parameters": "1B",
            "quant": "Q4_0",
            "file_size": 1,
            "sha256": "0" * 64,
            "sources": [{"path": "m.gguf"}],
        }
    )
    serial = server_args(model, CPU, Decoding(context=4096))
    assert (
        serial[serial.index("-np") + 1] == "1"
        and serial[serial.index("-c") + 1] == "4096"
        and serial[serial.index("-t") + 1] == "2"
    )
    two_slots = server_args(model, CPU.model_copy(update={"slots": 2}), Decoding(context=4096))
    assert two_slots[two_slots.index("-np") + 1] == "2" and two_slots[two_slots.index("-c") + 1] == "8192"


def test_execution_says_when_a_mode_is_not_exact():
    serial = Execution.of(CPU, replicas=1)
    assert serial.exact and serial.label() == "2 threads, 1 slot, prompt cache per scenario" and serial.workers == 1
    replicas = Execution.of(CPU_1T, replicas=2)
    assert replicas.exact and replicas.workers == 2
    assert replicas.label() == "1 thread, 1 slot, prompt cache per scenario"
    slots = Execution.of(CPU.model_copy(update={"slots": 2, "cache_prompt": True}), replicas=1)
    assert not slots.exact and slots.workers == 2 and slots.label() == "2 threads, 2 slots, prompt cache on"
    assert json.loads(slots.model_dump_json())["exact"] is False


def test_prompt_cache_reaches_the_harness_command_line_only_when_the_profile_asks():
    from repro.engines.base import client_argv
    from repro.plan.planner import make_plan
    from repro.suites.registry import select
    from repro.suites.scenarios import harness_command
    from tests.fixtures.synthetic import ROOT, smoke_variant

    cell = make_plan(smoke_variant()[1], "cpu", CPU).cells[0]
    suite = select(cell.suite, ROOT)
    client = client_argv("http://127.0.0.1:8080", "m", "openai")
    serial = harness_command(cell, client, suite, CPU)
    assert (
        serial[serial.index("--cache-prompt") :][:2] == ["--cache-prompt", "scenario"]
        and serial[serial.index("--ids") + 1 : serial.index("--max-tokens")] == suite.ids
    )
    off = harness_command(cell, client, suite, CPU.model_copy(update={"cache_prompt": False}))
    assert "--cache-prompt" not in off
    share = harness_command(cell, client, suite, CPU.model_copy(update={"cache_prompt": True}), ids=suite.ids[1::2])
    assert (
        "--cache-prompt" in share and share[share.index("--ids") + 1 : share.index("--max-tokens")] == suite.ids[1::2]
    )


class FakeContainer:
    """A stand-in for a Docker container: exits after `polls` state reads, with `code`."""

    def __init__(self, polls: int, code: int, lines: list[str]) -> None:
        self.polls, self.code, self.lines, self.stopped = polls, code, lines, False

    @property
    def attrs(self) -> dict:
        self.polls -= 1
        return {"State": {"Status": "exited" if self.polls <= 0 else "running", "ExitCode": self.code}}

    def reload(self) -> None:
        pass

    def logs(self, stdout: bool = True, stderr: bool = True, tail: int | None = None) -> bytes:
        return "".join(f"{line}\n" for line in self.lines).encode()

    def stop(self, timeout: int = 3) -> None:
        self.stopped = True


def test_wait_all_waits_for_every_worker_and_feeds_every_line(monkeypatch):
    monkeypatch.setattr(containers, "POLL_S", 0.0)
    workers = [FakeContainer(1, 0, ["a1", "a2"]), FakeContainer(3, 0, ["b1"])]
    seen: list[str] = []
    ended = containers.wait_all(workers, 60, on_line=seen.append)
    assert [e.code for e in ended] == [0, 0] and sorted(seen) == ["a1", "a2", "b1"]


def test_wait_all_stops_the_workers_still_running_at_the_deadline(monkeypatch):
    monkeypatch.setattr(containers, "POLL_S", 0.0)
    workers = [FakeContainer(1, 0, []), FakeContainer(10**9, 0, [])]
    ended = containers.wait_all(workers, 0.01)
    assert ended[0].code == 0 and ended[1].timed_out and workers[1].stopped and not workers[0].stopped


def test_wait_all_runs_the_engine_watch_while_workers_run(monkeypatch):
    monkeypatch.setattr(containers, "POLL_S", 0.0)

    def watch() -> None:
        raise RuntimeError("engine died")

    with pytest.raises(RuntimeError, match="engine died"):
        containers.wait_all([FakeContainer(5, 0, []), FakeContainer(5, 0, [])], 60, watch=watch)


def write_worker(out_dir: Path, ids: list[str]) -> None:
    out_dir.mkdir()
    from tests.fixtures.synthetic import result

    (out_dir / "scenarios.jsonl").write_text(
        "".join(result(i, "notes", i == "b").model_dump_json() + "\n" for i in ids)
    )
    (out_dir / "transcripts.jsonl").write_text("".join(json.dumps({"id": i, "transcript": []}) + "\n" for i in ids))


class Writer:
    def __init__(self) -> None:
        self.files: dict[str, list] = {}

    def write_jsonl(self, name: str, rows: list) -> None:
        self.files[name] = [r.id for r in rows]


@pytest.fixture()
def suite_and_record():
    from repro.plan.planner import make_plan
    from repro.spec.findings import SuiteSelection
    from tests.fixtures.synthetic import smoke_variant

    cell = make_plan(smoke_variant()[1], "cpu", CPU).cells[0]
    suite = SuiteSelection(
        folder=Path("/nonexistent"),
        ids=["a", "b", "c"],
        categories={"a": "notes", "b": "notes", "c": "notes"},
        sha256="0" * 64,
    )
    return suite, CellRecord(cell=cell, status="done")


def test_worker_outputs_are_put_back_in_suite_order(tmp_path, suite_and_record):
    from repro.suites.base import CellOutputs
    from repro.suites.scenarios import collect_results

    suite, record = suite_and_record
    write_worker(tmp_path / "w1", ["a", "c"])
    write_worker(tmp_path / "w2", ["b"])
    writer = Writer()
    done = containers.Exit(code=0, seconds=1.0)
    collected = collect_results(writer, record, suite, CellOutputs([tmp_path / "w1", tmp_path / "w2"], [done, done]))  # type: ignore[arg-type]
    assert (
        collected.status == "done"
        and collected.summary
        and (collected.summary.passed, collected.summary.total) == (1, 3)
    )
    assert writer.files == {"scenarios.jsonl": ["a", "b", "c"], "transcripts.jsonl": ["a", "b", "c"]}


def test_a_worker_that_writes_another_workers_scenario_fails_the_cell(tmp_path, suite_and_record):
    from repro.suites.base import CellOutputs
    from repro.suites.scenarios import collect_results

    suite, record = suite_and_record
    write_worker(tmp_path / "w1", ["a", "b"])  # its share is a and c
    write_worker(tmp_path / "w2", ["b"])
    done = containers.Exit(code=0, seconds=1.0)
    collected = collect_results(Writer(), record, suite, CellOutputs([tmp_path / "w1", tmp_path / "w2"], [done, done]))  # type: ignore[arg-type]
    assert collected.status == "error" and "missing: c" in (collected.reason or "")


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_replica_count_is_one_line_and_exit_2(tmp_path, capsys, value):
    from repro.__main__ import main

    assert main(["matrix", "run", "--profile", "cpu", "--out", str(tmp_path), "--replicas", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"--replicas {value}: expected a count from 1, or auto") and len(err.splitlines()) == 1
