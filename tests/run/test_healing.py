"""Engine faults as the run reads them from Docker: the watch, the health check, the plain words."""

from __future__ import annotations

import pytest

from repro.containers.sandbox import EngineDied
from repro.run.healing import EngineLost, describe, engine_watch, require_answering


class FakeEngine:
    """What the watch reads of a container: status, State, logs."""

    def __init__(self, status: str, **state) -> None:
        self.status = status
        self.attrs = {"State": {"Status": status, **state}}

    def reload(self) -> None:
        pass

    def logs(self, **kwargs) -> bytes:
        return b"loading model\nout of memory\n"


def test_watch_passes_while_running_and_reads_why_it_died():
    engine_watch(FakeEngine("running"))()
    with pytest.raises(EngineLost) as caught:
        engine_watch(FakeEngine("exited", ExitCode=137, OOMKilled=True))()
    fault = caught.value.fault
    assert (fault.status, fault.exit_code, fault.oom_killed) == ("exited", 137, True)
    assert fault.log_tail.endswith("out of memory")
    assert describe(fault).startswith("engine container exited with status 137 (OOM-killed)")


def test_a_running_engine_that_does_not_answer_is_lost():
    def silent(timeout: float) -> None:
        raise EngineDied("engine never answered on /health")

    require_answering(FakeEngine("running"), lambda timeout: None)
    with pytest.raises(EngineLost) as caught:
        require_answering(FakeEngine("running"), silent)
    assert caught.value.fault.status == "running" and caught.value.fault.exit_code is None
    assert "running but stopped answering" in describe(caught.value.fault)
