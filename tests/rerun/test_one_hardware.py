"""Issue 49: the hardware of a setup is named in one place (SystemDescription.setup_label), so the
rerun's preflight table (and with it the rerun's verdict, which names what that table says
differs) and `results merge` give one pair of hosts the same answer: each of the CPU model, the
core count, the architecture, a GPU's driver and its CUDA version makes the hosts differ, and the
memory, the OS and the Docker engine do not."""

from __future__ import annotations

import pytest

from repro.bundle.layout.merge import setup_differences
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import GpuInfo, RunRecord, SystemDescription
from repro.rerun.preflight import bundle_setup, compare_setups
from tests.fixtures.synthetic import synthetic_system, write_bundle

T4 = GpuInfo(name="Tesla T4", driver="550.54", memory_mib=15360, cuda="12.4")
CHANGES = {
    "CPU model": ({}, {"cpu_model": "Intel Xeon"}, True),
    "core count": ({}, {"cpu_cores": 16}, True),
    "architecture": ({}, {"machine": "aarch64"}, True),
    "a GPU's driver": ({"gpus": [T4]}, {"gpus": [T4.model_copy(update={"driver": "570.86"})]}, True),
    "a GPU's CUDA": ({"gpus": [T4]}, {"gpus": [T4.model_copy(update={"cuda": "12.8"})]}, True),
    "memory": ({}, {"memory_gb": 64}, False),
    "OS and Docker": ({}, {"os": "Ubuntu", "docker_engine": "27"}, False),
}


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> RunRecord:
    return BundleReader(write_bundle(tmp_path_factory.mktemp("one") / "20261205T000000Z-smoke-cpu")).run()


def with_system(record: RunRecord, system: SystemDescription) -> RunRecord:
    return record.model_copy(update={"system": system})


def preflight_says(a: RunRecord, b: RunRecord) -> bool:
    (row,) = [row for row in compare_setups(bundle_setup(a, []), bundle_setup(b, [])) if row.input == "hardware"]
    return row.differs


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_one_pair_of_hosts_gets_one_answer_from_the_preflight_and_from_merge(record, what):
    base, change, differs = CHANGES[what]
    host = synthetic_system().model_copy(update=base)
    a, b = with_system(record, host), with_system(record, host.model_copy(update=change))
    assert preflight_says(a, b) is differs
    assert ("hardware" in setup_differences([a, b])) is differs
    assert (a.system.setup_label != b.system.setup_label) is differs
