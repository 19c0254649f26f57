"""The premise of the resumed rule's request binding (repro/check/served.py), held on the
published bundles as they were made: a cell's engine log is its engine's whole log when the cell
ended, so its requests are those after the cell before it on the engine, and they are exactly the
replies its transcripts record (and the latency gate's, on the engine's first cell), on llama.cpp
(launch_slot_ lines) and on Ollama (its HTTP server's POST /api/chat lines)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from repro.bundle.layout.names import ENGINE_LOG
from repro.bundle.layout.reader import BundleReader
from repro.check.served import calls_per_scenario, gate_requests, own_requests_problem, served_during, sibling_logs
from repro.core.files import MAX_LOG_BYTES
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import PUBLISHED


@pytest.mark.parametrize(("name", "engine"), [("smoke-cpu", "llama.cpp"), ("ollama-smoke-cpu", "ollama")])
def test_each_published_cell_served_exactly_what_its_transcripts_asked(tmp_path, name, engine):
    reader = BundleReader(bundle_folder(PUBLISHED / f"{name}-bundle.tar.gz", tmp_path))
    firsts = 0
    for cell_id in reader.cell_ids():
        record = reader.cell(cell_id)
        ev = SimpleNamespace(bundle=reader, cell_id=cell_id, record=record)
        request_line = record.cell.engine.facts.request_line
        assert record.cell.engine.kind == engine and request_line is not None
        log = reader.cell_file(cell_id, ENGINE_LOG, MAX_LOG_BYTES)
        calls = calls_per_scenario(ev)  # type: ignore[arg-type]
        assert calls and all(n > 0 for n in calls.values())
        siblings = sibling_logs(ev)  # type: ignore[arg-type]
        served, after_another = served_during(log, request_line, siblings)
        firsts += not after_another
        assert served == sum(calls.values()) + (0 if after_another else gate_requests(record.gate)), cell_id
        assert own_requests_problem(ev, log, request_line, sum(calls.values()), siblings) is None  # type: ignore[arg-type]
        too_few = own_requests_problem(ev, log, request_line, sum(calls.values()) - 1, siblings)  # type: ignore[arg-type]
        assert too_few is not None and "request(s), not the" in too_few
    assert firsts == len({(reader.cell(c).cell.model.id, reader.cell(c).cell.engine.id) for c in reader.cell_ids()})


LINE = "slot launch_slot_: id  0 | task {n} | processing task, is_child = 0\n"


def log_of(booted: str, requests: int) -> str:
    return booted + "".join(LINE.format(n=n) for n in range(requests))


def test_several_replicas_are_counted_replica_by_replica():
    """A cell run on two replicas keeps both engines' logs joined (`--- replica i of 2 ---`); its
    requests are each replica's after the same replica's log in the cell before it (the gate ran
    on the first replica alone), so the count is exact there too."""
    from repro.engines.logs import joined_logs, split_logs
    from repro.spec.engines import engine_kind_facts

    request_line = engine_kind_facts("llama.cpp").request_line
    assert request_line is not None
    before = [log_of("replica one booted\n", 4), log_of("replica two booted\n", 2)]  # the gate's 1 + 3, then 2
    after = [log_of("replica one booted\n", 9), log_of("replica two booted\n", 7)]  # 5 more on each
    assert split_logs("replica", joined_logs("replica", after)) == after
    own, sibling = joined_logs("replica", after).encode(), joined_logs("replica", before).encode()
    assert served_during(own, request_line, [sibling]) == (10, True)
    assert served_during(sibling, request_line, []) == (6, False)


def test_a_retried_gate_counts_every_measurement():
    """A gate measured again after a slow measurement sent that measurement's requests too: the
    cell records how many (`earlier_requests`), so the first cell's count stays exact."""
    from harness.contracts import GateAttempt
    from repro.spec.findings import GateResult

    attempt = GateAttempt(seconds=1.0, valid_step=True, ok=True)
    gate = GateResult(passed=True, reason="ok", warmup=attempt, attempts=[attempt] * 3)
    assert gate_requests(gate) == 4
    assert gate_requests(gate.model_copy(update={"earlier": ["slow"], "earlier_requests": [4]})) == 8
    assert gate_requests(gate.model_copy(update={"earlier": ["slow"]})) is None  # an older bundle: not recorded
